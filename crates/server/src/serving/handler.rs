//! One request, from the transports to an answer: UPDATE, transfers and
//! NOTIFY go to their admission (update/), plain queries to the engine under
//! the server's policy (serving/guard.rs); each request is counted (metrics/) and,
//! with dnstap on, logged (dnstap.rs).
//!
//! ```text
//!  UDP worker / TCP task ─▶ Handler::handle ─┬ dnstap off ─▶ counted ─▶ respond ─▶ admit / engine
//!                                            └ dnstap on ──▶ logged(counted …)
//! ```

use std::sync::Arc;

use arc_swap::ArcSwap;
use lode_engine::{Request, Transport};
use lode_io::Client;
use lode_wire::rcode;
use lode_zonedb::ZoneSet;

use crate::metrics;
use crate::serving::{dnstap, guard};
use crate::update;

/// What every request is answered from; one per server, shared by every
/// UDP worker and TCP connection.
#[derive(Debug)]
pub(crate) struct Handler {
    pub(crate) zones: Arc<ArcSwap<ZoneSet>>,
    pub(crate) updates: Arc<update::Updates>,
    /// The query policy (answer settings, cookies, RRL, dnstap): one
    /// lock-free load per request; a reload swaps it whole.
    pub(crate) guard: Arc<ArcSwap<guard::Guard>>,
    pub(crate) metrics: Arc<metrics::Metrics>,
}

impl Handler {
    /// Answers one request ([`Handler::respond`]), counts it and, with
    /// dnstap on, logs it. Returns the length of an answer in `out` to send
    /// now (0: none, or deferred).
    pub(crate) fn handle(
        &self,
        q: &[u8],
        out: &mut [u8],
        client: &mut Client<'_>,
        transport: Transport,
    ) -> usize {
        let guard = self.guard.load();
        match guard.dnstap() {
            None => self.counted(&guard, q, out, client, transport),
            Some(tap) => dnstap::logged(tap, q, out, client, transport, |out, client| {
                self.counted(&guard, q, out, client, transport)
            }),
        }
    }

    /// [`Handler::respond`], then the request and its outcome counted in
    /// this thread's block of the metrics.
    fn counted(
        &self,
        guard: &guard::Guard,
        q: &[u8],
        out: &mut [u8],
        client: &mut Client<'_>,
        transport: Transport,
    ) -> usize {
        let request = lode_engine::classify(q);
        let Outcome {
            len,
            rcode,
            zone,
            cookie,
            asked,
        } = self.respond(guard, request, q, out, client, transport);
        if request != Request::Query && len >= 4 {
            count_refusal(self.updates.events(), request, out[3] & 0x0F);
        }
        self.metrics.record(&metrics::Observed {
            transport: match transport {
                Transport::Udp => 0,
                _ if client.protocol() == lode_io::Protocol::Quic => 3,
                _ if client.is_encrypted() => 2,
                _ => 1,
            },
            request: match request {
                Request::Query => 0,
                Request::Axfr => 1,
                Request::Ixfr => 2,
                Request::Update => 3,
                Request::Notify => 4,
                _ => 5,
            },
            query: q,
            response: &out[..len],
            rcode,
            zone,
            cookie: cookie.index(),
            asked,
        });
        len
    }

    /// Answers one request: UPDATEs go to their zone's writer (see
    /// `update/`), everything else to the engine. Returns the length to send
    /// now and what the counters need (see [`Outcome`]).
    fn respond(
        &self,
        guard: &guard::Guard,
        request: Request,
        q: &[u8],
        out: &mut [u8],
        client: &mut Client<'_>,
        transport: Transport,
    ) -> Outcome {
        let settings = guard.settings(client.is_encrypted());
        let updates = &self.updates;
        let set = self.zones.load();
        let admission = match request {
            Request::Update => updates.admit(q, &set, out, client, settings.max_udp_payload),
            Request::Axfr | Request::Ixfr => {
                updates.admit_transfer(q, &set, out, client, transport, settings.max_udp_payload)
            }
            Request::Notify => updates.admit_notify(q, out, client),
            _ => update::Admission::Engine,
        };
        match admission {
            update::Admission::Answer(n) => return Outcome::sent(n),
            update::Admission::Queued => return Outcome::sent(0),
            update::Admission::Engine => {}
        }
        // The TSIG keys are loaded only when the engine found a TSIG record.
        let held = std::cell::OnceCell::new();
        let keys = || Some(&***held.get_or_init(|| updates.keys())).filter(|k| !k.is_empty());
        let (mut answered, mut cookie) =
            guard.answer(&set, q, out, transport, settings, client.addr().ip(), &keys);
        // A catalog zone answers only over TCP (or TLS), those its ACL lets
        // transfer it; others are answered as if it were not here (as
        // Knot 3.2: REFUSED, not authoritative).
        if let Some(slot) = answered.zone.filter(|s| s.is_catalog()) {
            if transport == Transport::Udp || !updates.may_read_catalog(slot.origin(), q, client) {
                let none = no_zones();
                (answered, cookie) =
                    guard.answer(none, q, out, transport, settings, client.addr().ip(), &keys);
            }
        }
        let zone = answered
            .zone
            .map_or(0, |z| metrics::worker::zone_key(z.origin().as_wire()));
        let asked = answered.asked.map(metrics::worker::Peek::from);
        Outcome {
            len: answered.len,
            rcode: Some(answered.rcode),
            zone,
            cookie,
            asked,
        }
    }
}

/// A set without zones: a catalog zone's answer to a client that may not
/// read it is this set's (REFUSED, not authoritative).
fn no_zones() -> &'static ZoneSet {
    static NONE: std::sync::OnceLock<ZoneSet> = std::sync::OnceLock::new();
    NONE.get_or_init(ZoneSet::new)
}

/// What [`Handler::respond`] did, for the counters.
#[derive(Debug, Clone, Copy)]
struct Outcome {
    /// The length to send now.
    len: usize,
    /// The RCODE with its extended bits, when the engine answered.
    rcode: Option<u16>,
    /// The answering zone's counter key (0: none).
    zone: u64,
    /// What the cookie check made of the query.
    cookie: guard::CookieSeen,
    /// What the engine read of the query, when it parsed it.
    asked: Option<metrics::worker::Peek>,
}

impl Outcome {
    /// `len` bytes to send, nothing else known.
    fn sent(len: usize) -> Outcome {
        Outcome {
            len,
            rcode: None,
            zone: 0,
            cookie: guard::CookieSeen::Absent,
            asked: None,
        }
    }
}

/// Counts into `e` an UPDATE, transfer or NOTIFY answered at once with
/// `rcode` (updates and transfers that go ahead are answered later, and
/// counted there).
fn count_refusal(e: &metrics::Events, request: Request, rcode: u8) {
    match (request, rcode) {
        (Request::Update, _) => e.updates_refused.bump(),
        (Request::Axfr | Request::Ixfr, r) if r != rcode::NOERROR as u8 => {
            e.transfers_out_refused.bump()
        }
        (Request::Notify, r) if r == rcode::NOERROR as u8 => e.notify_received.bump(),
        (Request::Notify, _) => e.notify_refused.bump(),
        _ => {}
    }
}
