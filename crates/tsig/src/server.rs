//! The server's side: checking a request's TSIG (RFC 8945 §5.2, in Knot DNS
//! 3.2's order and with its answers), signing responses (§5.3), the error
//! responses (§5.3.2) and the later messages of a stream (§5.3.1).

use lode_wire::{NameBuf, NameRef};

use crate::algorithm::{mac_matches, Algorithm, MacBuf};
use crate::key::{Key, Keys, Truncation};
use crate::record::{self, Rr, SignError, Vars};
use crate::{TsigError, FUDGE};

/// The outcome of checking a request's TSIG.
#[derive(Debug, Clone, Copy)]
// The error case carries two names inline: boxing them would allocate.
#[allow(clippy::large_enum_variant)]
pub enum Verified<'k> {
    /// No TSIG record: answer normally, unsigned.
    Unsigned,
    /// Signed by a known key, MAC and time good: answer, then [`sign_response`].
    Signed(Signed<'k>),
    /// Answer NOTAUTH with a TSIG error: see [`append_error`].
    Failed(Failure<'k>),
    /// The TSIG record is misplaced (not last, not in the additional section),
    /// repeated, or its RDATA unreadable, or the message cannot be walked; or,
    /// with [`Truncation::Allow`], its MAC is longer than the digest or
    /// shorter than RFC 8945 §5.2.2.1 allows: answer FORMERR, unsigned.
    FormErr,
}

/// A request signed by a known key.
#[derive(Debug, Clone, Copy)]
pub struct Signed<'k> {
    /// The key.
    pub key: &'k Key,
    /// The request's MAC, which the response's MAC covers.
    pub request_mac: MacBuf,
    /// The request's time signed.
    pub time: u64,
    /// Where the TSIG record starts: the request without it is
    /// `msg[..tsig_start]` (with ARCOUNT one less).
    pub tsig_start: usize,
}

/// A request whose TSIG failed, and what the error response needs.
#[derive(Debug, Clone, Copy)]
pub struct Failure<'k> {
    /// The TSIG error.
    pub error: TsigError,
    /// The request's key name, as sent.
    pub key_name: NameBuf,
    /// The request's algorithm name, as sent.
    pub algorithm: NameBuf,
    /// The request's time signed.
    pub time_signed: u64,
    /// The key, when known and the MAC was good (BADTIME, BADTRUNC: the error
    /// response is signed with it); None for BADKEY and BADSIG.
    pub key: Option<&'k Key>,
    /// The request's MAC (when `key` is set).
    pub request_mac: MacBuf,
}

/// A TSIG record appended to a message.
#[derive(Debug, Clone, Copy)]
pub struct Appended {
    /// The message's new length.
    pub len: usize,
    /// The MAC written (the prior MAC of the stream's next message, or the
    /// request MAC the client checks the response with).
    pub mac: MacBuf,
}

/// Checks the TSIG of the request `msg` against `keys` at `now` (seconds
/// since 1970). No allocation.
///
/// The checks, in Knot DNS 3.2's order (RFC 8945 §5.2): the record's place
/// and form (FORMERR); the algorithm and the key name (BADKEY: unknown
/// algorithm, unknown name, or a known name with another algorithm); the MAC
/// (BADSIG; its length: see [`Truncation`]); the time (BADTIME: outside
/// time signed ± fudge, and, as Knot, also when time signed or fudge is 0);
/// with [`Truncation::Allow`], the local truncation policy (BADTRUNC).
pub fn verify_request<'k>(msg: &[u8], keys: &'k Keys, now: u64) -> Verified<'k> {
    let tsig = match record::find(msg) {
        Ok(Some(t)) => t,
        Ok(None) => return Verified::Unsigned,
        Err(_) => return Verified::FormErr,
    };
    let mut failure = Failure {
        error: TsigError::BadKey,
        key_name: tsig.key_name,
        algorithm: tsig.algorithm,
        time_signed: tsig.time_signed,
        key: None,
        request_mac: MacBuf::empty(),
    };
    let Some(algorithm) = Algorithm::from_wire(tsig.algorithm.as_ref()) else {
        return Verified::Failed(failure);
    };
    let key = match keys.find(tsig.key_name.as_ref()) {
        Some(k) if k.algorithm() == algorithm => k,
        _ => return Verified::Failed(failure),
    };
    let digest_len = algorithm.digest_len();
    let mac_len = tsig.mac.len();
    let too_short = match keys.truncation() {
        Truncation::Reject => {
            if mac_len != digest_len {
                failure.error = TsigError::BadSig;
                return Verified::Failed(failure);
            }
            false
        }
        Truncation::Allow { min_len } => {
            if mac_len > digest_len || mac_len < digest_len.div_ceil(2).max(10) {
                return Verified::FormErr;
            }
            mac_len < usize::from(min_len)
        }
    };
    let mut h = key.hmac();
    let body = &msg[..tsig.start];
    record::update_message(
        &mut h,
        body,
        tsig.original_id,
        record::arcount_without_tsig(msg),
    );
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
    if !mac_matches(tsig.mac, h.finish().as_slice()) {
        failure.error = TsigError::BadSig;
        return Verified::Failed(failure);
    }
    // The MAC is good: the error responses from here on are signed.
    let request_mac = MacBuf::from_slice(tsig.mac).unwrap_or_default();
    failure.key = Some(key);
    failure.request_mac = request_mac;
    if !time_ok(tsig.time_signed, tsig.fudge, now) {
        failure.error = TsigError::BadTime;
        return Verified::Failed(failure);
    }
    if too_short {
        failure.error = TsigError::BadTrunc;
        return Verified::Failed(failure);
    }
    Verified::Signed(Signed {
        key,
        request_mac,
        time: tsig.time_signed,
        tsig_start: tsig.start,
    })
}

/// Knot DNS 3.2's time check: time signed and fudge not 0, and `now` within
/// time signed ± fudge.
pub(crate) fn time_ok(time_signed: u64, fudge: u16, now: u64) -> bool {
    time_signed != 0 && fudge != 0 && now.abs_diff(time_signed) <= u64::from(fudge)
}

/// Appends to the response `buf[..len]` a TSIG record signed with `key`
/// (RFC 8945 §5.3: the digest covers the request MAC, the response, then the
/// TSIG variables), time signed `time`, fudge 300, TSIG error `error` (0
/// normally), original ID the response's ID; increments ARCOUNT. For the
/// first (or only) message of a response.
pub fn sign_response(
    buf: &mut [u8],
    len: usize,
    key: &Key,
    request_mac: &[u8],
    time: u64,
    error: u16,
) -> Result<Appended, SignError> {
    sign_full(buf, len, key, request_mac, time, error, &[])
}

/// Signs the first message of a response or a request (full TSIG variables).
pub(crate) fn sign_full(
    buf: &mut [u8],
    len: usize,
    key: &Key,
    prior: &[u8],
    time: u64,
    error: u16,
    other: &[u8],
) -> Result<Appended, SignError> {
    record::check_message(buf, len)?;
    let algorithm = alg_name(key);
    let mut h = key.hmac();
    record::update_prior(&mut h, prior);
    h.update(&buf[..len]);
    record::update_vars(
        &mut h,
        &Vars {
            key_name: key.name().as_ref(),
            class: lode_wire::Class::ANY.0,
            ttl: 0,
            algorithm,
            time_signed: time,
            fudge: FUDGE,
            error,
            other,
        },
    );
    let mac = h.finish();
    let new_len = record::append(
        buf,
        len,
        &Rr {
            key_name: key.name().as_ref(),
            algorithm,
            time_signed: time,
            fudge: FUDGE,
            mac: mac.as_slice(),
            original_id: record::message_id(buf),
            error,
            other,
        },
    )?;
    Ok(Appended { len: new_len, mac })
}

/// Appends to the 2nd, 3rd … message of a stream (AXFR, IXFR over TCP) in
/// `buf[..len]` a TSIG record whose MAC covers the prior message's MAC, this
/// message and the timers only (RFC 8945 §5.3.1); increments ARCOUNT.
pub fn sign_next(
    buf: &mut [u8],
    len: usize,
    key: &Key,
    prior_mac: &[u8],
    time: u64,
) -> Result<Appended, SignError> {
    record::check_message(buf, len)?;
    let mut h = key.hmac();
    h.update(&(prior_mac.len() as u16).to_be_bytes());
    h.update(prior_mac);
    h.update(&buf[..len]);
    record::update_timers(&mut h, time, FUDGE);
    let mac = h.finish();
    let new_len = record::append(
        buf,
        len,
        &Rr {
            key_name: key.name().as_ref(),
            algorithm: alg_name(key),
            time_signed: time,
            fudge: FUDGE,
            mac: mac.as_slice(),
            original_id: record::message_id(buf),
            error: 0,
            other: &[],
        },
    )?;
    Ok(Appended { len: new_len, mac })
}

/// Finishes the error response to a request whose TSIG failed: sets RCODE
/// NOTAUTH in the header of `buf[..len]` (header, question, OPT: what Knot
/// DNS 3.2 sends with it is up to the caller) and appends the TSIG record
/// Knot DNS 3.2 writes (RFC 8945 §5.3.2):
///
/// * BADKEY, BADSIG: unsigned — the request's key name (lower-cased) and
///   algorithm name (as sent) and time signed, fudge 300, no MAC, error, no other data;
/// * BADTIME: signed with the key over the request MAC — the request's time
///   signed, error 18, other data the server's time `now` (48 bits);
/// * BADTRUNC: signed, time signed `now`, error 22.
///
/// The original ID is the response's ID. Returns the new length.
pub fn append_error(
    buf: &mut [u8],
    len: usize,
    failure: &Failure<'_>,
    now: u64,
) -> Result<usize, SignError> {
    record::check_message(buf, len)?;
    buf[3] = (buf[3] & 0xF0) | (lode_wire::rcode::NOTAUTH as u8);
    let mac = failure.request_mac;
    match (failure.error, failure.key) {
        (TsigError::BadTime, Some(key)) => {
            let server_time = record::time48(now);
            let code = TsigError::BadTime.code();
            sign_full(
                buf,
                len,
                key,
                mac.as_slice(),
                failure.time_signed,
                code,
                &server_time,
            )
            .map(|a| a.len)
        }
        (TsigError::BadTrunc, Some(key)) => {
            let code = TsigError::BadTrunc.code();
            sign_full(buf, len, key, mac.as_slice(), now, code, &[]).map(|a| a.len)
        }
        _ => {
            // Knot DNS lower-cases the owner when it parses the request (not
            // the algorithm name): the key name is echoed in lower case.
            let lower = lode_wire::name::NameBuf::lowered(failure.key_name.as_ref());
            let key_name = lower.as_ref();
            record::append(
                buf,
                len,
                &Rr {
                    key_name,
                    algorithm: failure.algorithm.as_ref(),
                    time_signed: failure.time_signed,
                    fudge: FUDGE,
                    mac: &[],
                    original_id: record::message_id(buf),
                    error: failure.error.code(),
                    other: &[],
                },
            )
        }
    }
}

/// The algorithm name a key signs with.
fn alg_name(key: &Key) -> NameRef<'static> {
    // The table in `Algorithm::wire_name` holds valid names only.
    NameRef::from_wire(key.algorithm().wire_name()).unwrap_or(NameRef::root())
}
