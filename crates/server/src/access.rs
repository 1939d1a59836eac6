//! Who may do what to a zone: the request's TSIG and the zone's ACL, checked
//! the way Knot DNS 3.2 checks them for updates, transfers and NOTIFY.

use std::net::SocketAddr;

use lode_tsig::{Failure, Key, Keys, MacBuf, TsigError, Verified};
use lode_wire::Name;

use crate::acl::{self, Action, Rule};
use crate::lograte::LogLimit;

/// Where a request came from: the address, the protocol and, over TLS, the
/// pin of the certificate it presented.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer<'a> {
    pub(crate) addr: SocketAddr,
    pub(crate) protocol: lode_io::Protocol,
    pub(crate) pin: Option<&'a str>,
}

impl<'a> Peer<'a> {
    /// The sender of a message a transport handed over.
    pub(crate) fn of(client: &lode_io::Client<'a>) -> Peer<'a> {
        Peer {
            addr: client.addr(),
            protocol: client.protocol(),
            pin: client.certificate_pin(),
        }
    }
}

impl std::fmt::Display for Peer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.addr.fmt(f)
    }
}

/// How [`check`] logs a refusal: what the request is (e.g. "AXFR of
/// example.com.") and the server's limit of such lines.
#[derive(Clone, Copy)]
pub(crate) struct Logged<'a> {
    pub(crate) what: &'a dyn std::fmt::Display,
    pub(crate) limit: &'a LogLimit,
}

/// The outcome of [`check`].
#[derive(Debug)]
pub(crate) enum Access<'k> {
    /// Allowed; the key that signed the request and its MAC, to sign the
    /// response with.
    Allowed(Option<(Key, MacBuf)>),
    /// The TSIG record cannot be read: FORMERR.
    FormErr,
    /// Refused (NOTAUTH), with the TSIG error record to append, if any.
    Refused(Option<Failure<'k>>),
}

/// Checks a request against a zone's ACL for `action`. As Knot: the ACL is
/// checked with the key the request names, before its MAC; a key the ACL
/// does not take is BADKEY whatever the MAC; a MAC that fails after the ACL
/// took the key is that failure (BADSIG, BADTIME, …). Refusals are logged
/// as `log` says.
pub(crate) fn check<'k>(
    keys: &'k Keys,
    rules: &[Rule],
    action: Action,
    msg: &[u8],
    peer: Peer<'_>,
    now: u64,
    log: Logged<'_>,
) -> Access<'k> {
    let Logged { what, limit } = log;
    let mut signed_time = now;
    let (signed, failure) = match lode_tsig::verify_request(msg, keys, now) {
        Verified::Unsigned => (None, None),
        Verified::Signed(s) => {
            signed_time = s.time;
            (Some((s.key.clone(), s.request_mac)), None)
        }
        Verified::FormErr => return Access::FormErr,
        Verified::Failed(f) => {
            signed_time = f.time_signed;
            (None, Some(f))
        }
    };
    let claimed: Option<Name> = match (&signed, &failure) {
        (Some((k, _)), _) => Some(k.name().clone()),
        (None, Some(f)) => Some(f.key_name.as_ref().to_name().to_lowercase()),
        (None, None) => None,
    };
    let Peer {
        addr: peer,
        protocol,
        pin,
    } = peer;
    let who = acl::Requester {
        ip: peer.ip(),
        key: claimed.as_ref(),
        protocol,
        pin,
    };
    if !acl::allows(rules, action, &who) {
        if limit.allow(now) {
            match (&failure, &claimed) {
                // A key this server does not know: no ACL could take it.
                (Some(f), Some(k)) if f.error == TsigError::BadKey => tracing::info!(
                    "{what} from {peer} over {protocol}: unknown key {k} (no key of that name and algorithm here), NOTAUTH (BADKEY)"
                ),
                _ => tracing::info!(
                    "{what} from {peer} over {protocol}{}: denied by the zone's acl, NOTAUTH",
                    claimed
                        .as_ref()
                        .map_or(String::new(), |k| format!(" key {k}"))
                ),
            }
        }
        // A request naming a key the ACL does not accept: BADKEY,
        // unsigned, echoing the request's key and algorithm names.
        return Access::Refused(match (signed, failure) {
            (Some((key, _)), _) => {
                let mut key_name = lode_wire::NameBuf::new();
                key_name.set(key.name().as_ref());
                let mut algorithm = lode_wire::NameBuf::new();
                if let Ok(a) = lode_wire::NameRef::from_wire(key.algorithm().wire_name()) {
                    algorithm.set(a);
                }
                Some(Failure {
                    error: TsigError::BadKey,
                    key_name,
                    algorithm,
                    time_signed: signed_time,
                    key: None,
                    request_mac: MacBuf::default(),
                })
            }
            (None, Some(f)) => Some(Failure {
                error: TsigError::BadKey,
                key: None,
                request_mac: MacBuf::default(),
                ..f
            }),
            (None, None) => None,
        });
    }
    if let Some(f) = failure {
        if limit.allow(now) {
            tracing::info!(
                "{what} from {peer}: TSIG {} with key {}, NOTAUTH",
                f.error,
                f.key_name.as_ref()
            );
        }
        return Access::Refused(Some(f));
    }
    Access::Allowed(signed)
}

/// Appends the TSIG error record of a refusal to the NOTAUTH response in
/// `out[..n]`; returns the new length.
pub(crate) fn finish_refusal(
    out: &mut [u8],
    n: usize,
    failure: Option<&Failure<'_>>,
    now: u64,
) -> usize {
    match failure {
        Some(f) => lode_tsig::append_error(out, n, f, now).unwrap_or(n),
        None => n,
    }
}
