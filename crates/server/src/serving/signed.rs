//! TSIG-signed queries (a secondary's SOA query, a signed `dig -y`): the
//! signature is checked with the configured keys, the query is answered
//! without its TSIG record by the engine, and the answer is signed. A
//! signature that fails is answered NOTAUTH with the TSIG error, as Knot
//! does. Without keys configured the engine answers signed queries itself
//! (NOTAUTH, BADKEY). Called only when the engine says it saw a TSIG
//! (`AnswerKind::Signed`), so unsigned queries never pay for the TSIG search.

use lode_engine::{Settings, Transport};
use lode_tsig::{Keys, Verified};
use lode_wire::rcode;
use lode_zonedb::ZoneSet;
use lode_zones::update::{self as ddns, UpdateError};

/// The outcome of [`answer`].
pub(crate) enum Signed {
    /// Not signed (or no keys): the engine answers as usual.
    Unsigned,
    /// Answered: this many bytes of `out`.
    Answer(usize),
}

/// Answers `q` if it carries a TSIG record that the configured keys can check.
pub(crate) fn answer(
    zones: &ZoneSet,
    keys: &Keys,
    q: &[u8],
    out: &mut [u8],
    transport: Transport,
    settings: &Settings,
) -> Signed {
    // Cheap checks first: no keys, or no additional record, no TSIG.
    if keys.is_empty() || q.len() < 12 || (q[10] == 0 && q[11] == 0) {
        return Signed::Unsigned;
    }
    let now = crate::clock::unix_now();
    match lode_tsig::verify_request(q, keys, now) {
        Verified::Unsigned | Verified::FormErr => Signed::Unsigned,
        Verified::Failed(f) => {
            if crate::lograte::REFUSALS.allow(now) {
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
            Signed::Answer(crate::access::finish_refusal(out, n, Some(&f), now))
        }
        Verified::Signed(s) => {
            // The query without its TSIG record, ARCOUNT one less, in this
            // thread's scratch (no allocation per query).
            UNSIGNED.with(|buf| {
                let mut unsigned = buf.borrow_mut();
                unsigned.clear();
                unsigned.extend_from_slice(&q[..s.tsig_start]);
                let arcount = u16::from_be_bytes([unsigned[10], unsigned[11]]).saturating_sub(1);
                unsigned[10..12].copy_from_slice(&arcount.to_be_bytes());
                answer_unsigned(zones, &s, &unsigned, out, transport, settings, now)
            })
        }
    }
}

thread_local! {
    /// A signed query without its TSIG record (grown once to the largest seen).
    static UNSIGNED: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(Vec::with_capacity(512));
}

/// Answers the query `unsigned` (its TSIG removed, checked as `s`) and signs
/// the answer.
fn answer_unsigned(
    zones: &ZoneSet,
    s: &lode_tsig::Signed<'_>,
    unsigned: &[u8],
    out: &mut [u8],
    transport: Transport,
    settings: &Settings,
    now: u64,
) -> Signed {
    // Room for the TSIG within what the client takes.
    let room = lode_tsig::max_tsig_len(s.key);
    let limit = match transport {
        Transport::Tcp => out.len(),
        Transport::Udp => lode_wire::message::parse_query(unsigned)
            .ok()
            .and_then(|m| m.edns)
            .map_or(512, |e| {
                usize::from(e.udp_size.clamp(512, settings.max_udp_payload.max(512)))
            })
            .min(out.len()),
    };
    let end = limit.saturating_sub(room).max(12);
    let n = lode_engine::answer(zones, unsigned, &mut out[..end], transport, settings).len;
    if n == 0 {
        return Signed::Answer(0);
    }
    Signed::Answer(
        lode_tsig::sign_response(out, n, s.key, s.request_mac.as_slice(), now, 0)
            .map_or(n, |a| a.len),
    )
}
