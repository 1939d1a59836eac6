//! The client's side: signing a request (RFC 8945 §4.3), checking the
//! response (§5.3) and the later messages of a stream (§5.3.1, with up to
//! 99 unsigned messages between signed ones).

use std::fmt;

use crate::algorithm::{mac_matches, Algorithm, Keyed, MacBuf};
use crate::key::Key;
use crate::record::{self, SignError, Vars};
use crate::server::{sign_full, time_ok, Appended};

/// Appends to the request `buf[..len]` a TSIG record signed with `key` at
/// `time` (seconds since 1970), fudge 300; increments ARCOUNT. Keep the
/// returned MAC to check the response with.
pub fn sign_request(
    buf: &mut [u8],
    len: usize,
    key: &Key,
    time: u64,
) -> Result<Appended, SignError> {
    sign_full(buf, len, key, &[], time, 0, &[])
}

/// [`sign_request`] for a message built in a `Vec`; returns the request MAC.
pub fn sign_request_vec(msg: &mut Vec<u8>, key: &Key, time: u64) -> Result<MacBuf, SignError> {
    let len = msg.len();
    msg.resize(len + max_tsig_len(key), 0);
    match sign_request(msg, len, key, time) {
        Ok(a) => {
            msg.truncate(a.len);
            Ok(a.mac)
        }
        Err(e) => {
            msg.truncate(len);
            Err(e)
        }
    }
}

/// The size of the largest TSIG record `key` writes (BADTIME's, with other data).
pub fn max_tsig_len(key: &Key) -> usize {
    key.name().as_wire().len()
        + 10
        + key.algorithm().wire_name().len()
        + 16
        + key.algorithm().digest_len()
        + 6
}

/// Why a response was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum VerifyError {
    /// The message cannot be walked, or its TSIG record is misplaced or unreadable.
    Malformed,
    /// The first message of the response is not signed.
    Unsigned,
    /// Signed with another key name or algorithm.
    WrongKey,
    /// The MAC does not verify (or its length is not one RFC 8945 §5.2.2.1 allows).
    BadSig,
    /// Time signed outside our clock ± fudge, or earlier than the previous message's.
    BadTime,
    /// The server answered with a TSIG error (BADKEY, BADSIG: unsigned;
    /// BADTIME, BADTRUNC: signed, and the signature checked).
    Rejected {
        /// The TSIG error code.
        error: u16,
        /// The server's clock from a BADTIME answer's other data.
        server_time: Option<u64>,
    },
    /// More than 99 unsigned messages in a row (RFC 8945 §5.3.1), or a stream
    /// that ended on unsigned messages.
    TooManyUnsigned,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerifyError::Malformed => f.write_str("malformed message or TSIG record"),
            VerifyError::Unsigned => f.write_str("the response is not signed"),
            VerifyError::WrongKey => f.write_str("the response is signed with another key"),
            VerifyError::BadSig => f.write_str("the response's MAC does not verify"),
            VerifyError::BadTime => f.write_str("the response's time is outside the fudge"),
            VerifyError::Rejected { error, server_time } => {
                write!(
                    f,
                    "the server answered TSIG error {}",
                    crate::error_name(*error)
                )?;
                if let Some(t) = server_time {
                    write!(f, " (server time {t})")?;
                }
                Ok(())
            }
            VerifyError::TooManyUnsigned => f.write_str("too many unsigned messages in the stream"),
        }
    }
}

impl std::error::Error for VerifyError {}

/// A verified TSIG of a response.
#[derive(Debug, Clone, Copy)]
pub struct ResponseTsig {
    /// Time signed.
    pub time_signed: u64,
    /// The MAC (the prior MAC of the next message).
    pub mac: MacBuf,
}

/// Checks the single-message response `resp` to a request signed with `key`
/// whose MAC was `request_mac`, at `now`.
pub fn verify_response(
    resp: &[u8],
    key: &Key,
    request_mac: &[u8],
    now: u64,
) -> Result<ResponseTsig, VerifyError> {
    let mut v = ResponseVerifier::new(key, request_mac);
    match v.verify(resp, now)? {
        Some(t) => Ok(t),
        None => Err(VerifyError::Unsigned),
    }
}

/// Checks the messages of a response stream (AXFR, IXFR) one after another.
#[derive(Debug, Clone)]
pub struct ResponseVerifier<'k> {
    key: &'k Key,
    /// The MAC the next signed message's digest starts with.
    prior: MacBuf,
    /// Messages checked so far.
    messages: u64,
    /// The digest of the unsigned messages since the last signed one.
    pending: Option<PendingDigest>,
    /// Time signed of the last signed message.
    last_time: u64,
}

/// A digest in progress over unsigned messages.
#[derive(Clone)]
struct PendingDigest {
    hmac: Keyed,
    count: u32,
}

impl fmt::Debug for PendingDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PendingDigest({} messages)", self.count)
    }
}

/// Most unsigned messages allowed between signed ones (RFC 8945 §5.3.1).
const MAX_UNSIGNED: u32 = 99;

impl<'k> ResponseVerifier<'k> {
    /// A verifier for the responses to a request signed with `key` and `request_mac`.
    pub fn new(key: &'k Key, request_mac: &[u8]) -> ResponseVerifier<'k> {
        ResponseVerifier {
            key,
            prior: MacBuf::from_slice(request_mac).unwrap_or_default(),
            messages: 0,
            pending: None,
            last_time: 0,
        }
    }

    /// Checks the next message: `Some` when it was signed and verifies (with
    /// the unsigned messages before it), `None` for an unsigned message after
    /// the first, accepted for now.
    pub fn verify(&mut self, msg: &[u8], now: u64) -> Result<Option<ResponseTsig>, VerifyError> {
        let first = self.messages == 0;
        let tsig = record::find(msg).map_err(|_| VerifyError::Malformed)?;
        let Some(tsig) = tsig else {
            if first {
                return Err(VerifyError::Unsigned);
            }
            let pending = self.pending.get_or_insert_with(|| {
                let mut hmac = self.key.hmac();
                record::update_prior(&mut hmac, self.prior.as_slice());
                PendingDigest { hmac, count: 0 }
            });
            pending.count += 1;
            if pending.count > MAX_UNSIGNED {
                return Err(VerifyError::TooManyUnsigned);
            }
            pending.hmac.update(msg);
            self.messages += 1;
            return Ok(None);
        };
        let algorithm = Algorithm::from_wire(tsig.algorithm.as_ref());
        if algorithm != Some(self.key.algorithm())
            || tsig.key_name.as_ref() != self.key.name().as_ref()
        {
            return Err(VerifyError::WrongKey);
        }
        let server_time = (tsig.other.len() == 6).then(|| {
            tsig.other
                .iter()
                .fold(0u64, |a, &b| (a << 8) | u64::from(b))
        });
        if tsig.mac.is_empty() && tsig.error != 0 {
            return Err(VerifyError::Rejected {
                error: tsig.error,
                server_time,
            });
        }
        let digest_len = self.key.algorithm().digest_len();
        let mac_len = tsig.mac.len();
        if mac_len > digest_len || mac_len < digest_len.div_ceil(2).max(10) {
            return Err(VerifyError::BadSig);
        }
        let (mut h, full) = match self.pending.take() {
            Some(p) => (p.hmac, false),
            None => {
                let mut h = self.key.hmac();
                record::update_prior(&mut h, self.prior.as_slice());
                (h, first)
            }
        };
        record::update_message(
            &mut h,
            &msg[..tsig.start],
            tsig.original_id,
            record::arcount_without_tsig(msg),
        );
        if full {
            record::update_vars(
                &mut h,
                &Vars {
                    key_name: tsig.key_name.as_ref(),
                    class: tsig.class,
                    ttl: tsig.ttl,
                    algorithm: tsig.algorithm.as_ref(),
                    time_signed: tsig.time_signed,
                    fudge: tsig.fudge,
                    error: tsig.error,
                    other: tsig.other,
                },
            );
        } else {
            record::update_timers(&mut h, tsig.time_signed, tsig.fudge);
        }
        if !mac_matches(tsig.mac, h.finish().as_slice()) {
            return Err(VerifyError::BadSig);
        }
        if tsig.error != 0 {
            return Err(VerifyError::Rejected {
                error: tsig.error,
                server_time,
            });
        }
        if !time_ok(tsig.time_signed, tsig.fudge, now) || tsig.time_signed < self.last_time {
            return Err(VerifyError::BadTime);
        }
        let mac = MacBuf::from_slice(tsig.mac).unwrap_or_default();
        self.prior = mac;
        self.last_time = tsig.time_signed;
        self.messages += 1;
        Ok(Some(ResponseTsig {
            time_signed: tsig.time_signed,
            mac,
        }))
    }

    /// Ends the stream: an error if its last messages were not signed.
    pub fn finish(&self) -> Result<(), VerifyError> {
        match (&self.pending, self.messages) {
            (_, 0) => Err(VerifyError::Unsigned),
            (Some(_), _) => Err(VerifyError::TooManyUnsigned),
            (None, _) => Ok(()),
        }
    }
}
