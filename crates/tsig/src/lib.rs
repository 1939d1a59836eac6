//! TSIG (RFC 8945): transaction signatures with shared HMAC keys, for the
//! server (check requests, sign responses), the bench tools and the
//! `lode update` client (sign requests, check responses).
//!
//! ```text
//!  server                                         client
//!  request ─▶ verify_request(msg, keys, now)      sign_request(buf, len, key, now) ─▶ request MAC
//!     ├─ Unsigned ─▶ answer as usual                 │
//!     ├─ FormErr  ─▶ FORMERR, no TSIG                ▼
//!     ├─ Failed   ─▶ append_error: NOTAUTH +      verify_response(resp, key, request MAC, now)
//!     │     BADKEY/BADSIG (unsigned),             ResponseVerifier (AXFR/IXFR streams)
//!     │     BADTIME/BADTRUNC (signed)
//!     └─ Signed   ─▶ answer, sign_response(…, request MAC) ─▶ MAC
//!                    next messages: sign_next(…, prior MAC)
//! ```
//!
//! Everything works on caller-owned buffers (`&[u8]` in, `buf[..len]`
//! extended in place, lengths out), keeps MACs in a fixed [`MacBuf`] and
//! names in `NameBuf`s: no allocation per message, no I/O, no clock (the
//! caller passes `now`, seconds since 1970). The HMAC of a key is keyed once
//! when the key is made and cloned per message.
//!
//! Behaviour follows Knot DNS 3.2 where the RFC leaves room: fudge 300 in
//! everything we write, the original ID of a written TSIG is the message's
//! ID, time signed or fudge 0 is BADTIME, and MACs shorter than the digest
//! are BADSIG unless [`Truncation::Allow`] selects RFC 8945 §5.2.2.1.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod algorithm;
mod client;
mod key;
mod record;
mod server;

pub use algorithm::{Algorithm, MacBuf, UnknownAlgorithm};
pub use client::{
    max_tsig_len, sign_request, sign_request_vec, verify_response, ResponseTsig, ResponseVerifier,
    VerifyError,
};
pub use key::{decode_secret, Key, KeyError, Keys, Truncation};
pub use record::SignError;
pub use server::{
    append_error, sign_next, sign_response, verify_request, Appended, Failure, Signed, Verified,
};

/// The fudge (seconds of clock skew allowed) in every TSIG record we write, as Knot DNS.
pub const FUDGE: u16 = 300;

/// A TSIG error a server answers with (RFC 8945 §5.2, in RCODE NOTAUTH).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TsigError {
    /// 16: the MAC does not verify.
    BadSig,
    /// 17: unknown key name or algorithm.
    BadKey,
    /// 18: time signed outside the fudge.
    BadTime,
    /// 22: MAC truncated below the local policy.
    BadTrunc,
}

impl TsigError {
    /// The code in the TSIG record's error field.
    pub const fn code(self) -> u16 {
        match self {
            TsigError::BadSig => 16,
            TsigError::BadKey => 17,
            TsigError::BadTime => 18,
            TsigError::BadTrunc => 22,
        }
    }

    /// The error of this code, if it is one of these.
    pub const fn from_code(code: u16) -> Option<TsigError> {
        match code {
            16 => Some(TsigError::BadSig),
            17 => Some(TsigError::BadKey),
            18 => Some(TsigError::BadTime),
            22 => Some(TsigError::BadTrunc),
            _ => None,
        }
    }
}

impl std::fmt::Display for TsigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(error_name(self.code()))
    }
}

/// The mnemonic of a TSIG error field value (`BADSIG`, …; `NOERROR` for 0).
pub fn error_name(code: u16) -> &'static str {
    match code {
        0 => "NOERROR",
        16 => "BADSIG",
        17 => "BADKEY",
        18 => "BADTIME",
        19 => "BADMODE",
        20 => "BADNAME",
        21 => "BADALG",
        22 => "BADTRUNC",
        _ => "unknown",
    }
}

/// Removes the TSIG record that ends `msg`, if it has one (ARCOUNT one
/// less): for a message passed on to another server, which signs it anew
/// (UPDATE forwarding). False when there is none, or it cannot be read.
pub fn strip_tsig(msg: &mut Vec<u8>) -> bool {
    match record::find(msg) {
        Ok(Some(t)) => {
            let arcount = record::arcount_without_tsig(msg);
            let start = t.start;
            msg.truncate(start);
            msg[10..12].copy_from_slice(&arcount.to_be_bytes());
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests;
