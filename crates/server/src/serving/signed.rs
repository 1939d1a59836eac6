//! TSIG-signed queries (a secondary's SOA query, a signed `dig -y`), checked
//! in the engine's policy hook: a good signature lets the engine answer the
//! query as if unsigned, leaving room for the TSIG record appended here; a
//! signature that fails is answered NOTAUTH with the TSIG error, as Knot
//! does. Without keys configured the engine answers signed queries itself
//! (NOTAUTH, BADKEY). The query is answered once either way; unsigned
//! queries never pay for the TSIG search (the hook looks only when the
//! engine's parse found a TSIG record).

use lode_engine::{AnswerKind, Answered, Settings};
use lode_tsig::{Keys, Verified};
use lode_wire::rcode;
use lode_zones::update::{self as ddns, UpdateError};

/// A query's TSIG as the policy hook found it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checked<'k> {
    verified: Verified<'k>,
    /// When it was checked (seconds since 1970): the response is signed
    /// with the same time.
    now: u64,
}

impl<'k> Checked<'k> {
    /// Checks the TSIG of `q` with `keys`.
    pub(crate) fn new(q: &[u8], keys: &'k Keys) -> Checked<'k> {
        let now = crate::clock::unix_now();
        Checked {
            verified: lode_tsig::verify_request(q, keys, now),
            now,
        }
    }

    /// The room the engine leaves for the TSIG record when the signature is
    /// good (`Extra::signed_room`).
    pub(crate) fn room(&self) -> Option<usize> {
        match &self.verified {
            Verified::Signed(s) => Some(lode_tsig::max_tsig_len(s.key)),
            _ => None,
        }
    }

    /// The response to send once the engine answered: signed when the
    /// engine says so, the TSIG error answer when the check failed for a
    /// zone of ours, else the engine's answer as is. Its length in `out`.
    /// A failure is logged within the server's `refusals` limit.
    pub(crate) fn finish(
        &self,
        answered: &Answered<'_>,
        q: &[u8],
        out: &mut [u8],
        settings: &Settings,
        refusals: &crate::lograte::LogLimit,
    ) -> usize {
        let n = answered.len;
        match &self.verified {
            Verified::Signed(s) if answered.sign => {
                lode_tsig::sign_response(out, n, s.key, s.request_mac.as_slice(), self.now, 0)
                    .map_or(n, |a| a.len)
            }
            Verified::Failed(f) if answered.kind == AnswerKind::Signed => {
                if refusals.allow(self.now) {
                    tracing::info!(
                        "signed query: TSIG {} with key {}, NOTAUTH",
                        f.error,
                        f.key_name.as_ref()
                    );
                }
                let e = UpdateError::Query {
                    rcode: rcode::NOTAUTH,
                    reason: String::new(),
                };
                let n = ddns::write_error(q, &e, settings.max_udp_payload, out).unwrap_or(0);
                crate::access::finish_refusal(out, n, Some(f), self.now)
            }
            _ => n,
        }
    }
}
