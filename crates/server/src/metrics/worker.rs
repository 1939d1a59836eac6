//! Per-thread query counters: each thread that answers (a UDP worker, a TCP
//! event-loop thread) owns one block, registered once with its server's
//! [`Metrics`](super::Metrics) on its first query. Only the owner writes it
//! (a plain load and store, no locked instruction, no shared cache line);
//! a scrape sums every block with relaxed loads.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Transports, as indexes: UDP, TCP.
pub const TRANSPORTS: [&str; 4] = ["udp", "tcp", "tls", "quic"];

/// Request kinds counted: a standard query, AXFR, IXFR, UPDATE, NOTIFY, other.
pub const REQUESTS: [&str; 6] = ["query", "axfr", "ixfr", "update", "notify", "other"];

/// Query types with their own series; the rest count as "other".
pub const QTYPES: [(u16, &str); 19] = [
    (1, "A"),
    (2, "NS"),
    (5, "CNAME"),
    (6, "SOA"),
    (12, "PTR"),
    (15, "MX"),
    (16, "TXT"),
    (28, "AAAA"),
    (33, "SRV"),
    (35, "NAPTR"),
    (43, "DS"),
    (48, "DNSKEY"),
    (64, "SVCB"),
    (65, "HTTPS"),
    (257, "CAA"),
    (255, "ANY"),
    (252, "AXFR"),
    (251, "IXFR"),
    (99, "SPF"),
];
const QTYPE_OTHER: usize = QTYPES.len();

/// RCODE names (RFC 6895 §2.3) for 0..=23; others count as "other".
pub const RCODES: [&str; 24] = [
    "NOERROR",
    "FORMERR",
    "SERVFAIL",
    "NXDOMAIN",
    "NOTIMP",
    "REFUSED",
    "YXDOMAIN",
    "YXRRSET",
    "NXRRSET",
    "NOTAUTH",
    "NOTZONE",
    "DSOTYPENI",
    "RCODE12",
    "RCODE13",
    "RCODE14",
    "RCODE15",
    "BADVERS",
    "BADKEY",
    "BADTIME",
    "BADMODE",
    "BADNAME",
    "BADALG",
    "BADTRUNC",
    "BADCOOKIE",
];
const RCODE_OTHER: usize = RCODES.len();

/// Per-zone answer classes: NOERROR, NXDOMAIN, SERVFAIL (an expired or
/// not yet transferred secondary), anything else.
pub const ZONE_RCODES: [&str; 4] = ["NOERROR", "NXDOMAIN", "SERVFAIL", "other"];

/// Zones counted per thread; answers for zones beyond (a catalog of
/// thousands) count in the totals only, and in [`Worker::zone_overflow`].
pub const ZONE_SLOTS: usize = 256;

/// A counter written by one thread only.
#[derive(Debug, Default)]
pub struct Cell(AtomicU64);

impl Cell {
    /// Adds one: a load and a store, as only the owning thread writes.
    #[inline]
    pub fn bump(&self) {
        self.0.store(
            self.0.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
    }
    /// The count now.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// One zone's answers on one thread.
#[derive(Debug, Default)]
pub struct ZoneCell {
    /// The zone's key ([`zone_key`]), 0 when free; written once by the owner.
    pub key: AtomicU64,
    /// Answers by [`ZONE_RCODES`].
    pub rcodes: [Cell; 4],
}

/// One thread's counters.
#[derive(Debug)]
#[repr(align(128))]
pub struct Worker {
    /// The [`Metrics`](super::Metrics) it belongs to.
    pub(crate) owner: u64,
    /// Requests by transport and [`REQUESTS`] kind.
    pub requests: [[Cell; REQUESTS.len()]; TRANSPORTS.len()],
    /// Requests by transport and [`QTYPES`] (the last: other).
    pub qtypes: [[Cell; QTYPES.len() + 1]; TRANSPORTS.len()],
    /// Responses by transport and [`RCODES`] (the last: other).
    pub rcodes: [[Cell; RCODES.len() + 1]; TRANSPORTS.len()],
    /// Requests with an OPT record, by transport.
    pub edns: [Cell; TRANSPORTS.len()],
    /// Requests with the DO bit, by transport.
    pub dnssec_ok: [Cell; TRANSPORTS.len()],
    /// Responses with TC set, by transport.
    pub truncated: [Cell; TRANSPORTS.len()],
    /// Requests not answered (dropped as malformed, rate-limited, or answered later: UPDATE, transfers).
    pub unanswered: [Cell; TRANSPORTS.len()],
    /// Answers per zone.
    pub zones: [ZoneCell; ZONE_SLOTS],
    /// Answers for a zone that found no free slot.
    pub zone_overflow: Cell,
    /// Queries by what the cookie check made of them (`CookieSeen` order).
    pub cookies: [Cell; 6],
}

impl Worker {
    pub(crate) fn new(owner: u64) -> Worker {
        Worker {
            owner,
            requests: Default::default(),
            qtypes: Default::default(),
            rcodes: Default::default(),
            edns: Default::default(),
            dnssec_ok: Default::default(),
            truncated: Default::default(),
            unanswered: Default::default(),
            zones: std::array::from_fn(|_| ZoneCell::default()),
            zone_overflow: Cell::default(),
            cookies: Default::default(),
        }
    }

    /// Counts one request and its outcome.
    #[inline]
    pub fn record(&self, r: &Observed) {
        let t = r.transport;
        self.requests[t][r.request].bump();
        let peek = r.asked.unwrap_or_else(|| peek(r.query));
        if r.cookie != 0 {
            if let Some(c) = self.cookies.get(r.cookie) {
                c.bump();
            }
        }
        self.qtypes[t][qtype_index(peek.qtype)].bump();
        if peek.edns {
            self.edns[t].bump();
            if peek.dnssec_ok {
                self.dnssec_ok[t].bump();
            }
        }
        if r.response.len() < 4 {
            self.unanswered[t].bump();
            return;
        }
        let rcode = match r.rcode {
            Some(c) => usize::from(c),
            None => usize::from(r.response[3] & 0x0F),
        };
        self.rcodes[t][rcode.min(RCODE_OTHER)].bump();
        if r.response[2] & 0x02 != 0 {
            self.truncated[t].bump();
        }
        if r.zone != 0 {
            let class = match rcode {
                0 => 0,
                3 => 1,
                2 => 2,
                _ => 3,
            };
            match self.zone_slot(r.zone) {
                Some(z) => z.rcodes[class].bump(),
                None => self.zone_overflow.bump(),
            }
        }
    }

    /// The slot of zone `key`, taking a free one (linear probing, at most
    /// 16 steps).
    #[inline]
    fn zone_slot(&self, key: u64) -> Option<&ZoneCell> {
        let start = (key as usize) % ZONE_SLOTS;
        for i in 0..16 {
            let z = &self.zones[(start + i) % ZONE_SLOTS];
            match z.key.load(Ordering::Relaxed) {
                k if k == key => return Some(z),
                0 => {
                    z.key.store(key, Ordering::Release);
                    return Some(z);
                }
                _ => {}
            }
        }
        None
    }
}

/// What one request was and what it got.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    /// 0: UDP, 1: TCP.
    pub transport: usize,
    /// The index in [`REQUESTS`].
    pub request: usize,
    /// The request as received.
    pub query: &'a [u8],
    /// The response sent now (empty: none).
    pub response: &'a [u8],
    /// The response's RCODE with its extended bits, when known.
    pub rcode: Option<u16>,
    /// [`zone_key`] of the zone that answered, 0 for none.
    pub zone: u64,
    /// What the cookie check made of it (`CookieSeen::index`; 0: no COOKIE option).
    pub cookie: usize,
    /// What the engine read of the query (type, EDNS, DO) when it parsed
    /// it; `None`: [`peek`] reads it from `query`.
    pub asked: Option<Peek>,
}

/// The key of a zone's counters: a hash of its origin's wire form (never 0).
#[inline]
pub fn zone_key(origin_wire: &[u8]) -> u64 {
    // FNV-1a over a few dozen bytes at most: cheap and good enough for 256 slots.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in origin_wire {
        h = (h ^ u64::from(b.to_ascii_lowercase())).wrapping_mul(0x0100_0000_01b3);
    }
    h | 1
}

/// The index of `qtype` in [`QTYPES`] (or the "other" index).
#[inline]
pub fn qtype_index(qtype: u16) -> usize {
    QTYPES
        .iter()
        .position(|&(t, _)| t == qtype)
        .unwrap_or(QTYPE_OTHER)
}

/// What the counters read from a request without parsing it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Peek {
    /// The first question's type (0: none readable).
    pub qtype: u16,
    /// An OPT record follows the question (as the first additional record
    /// of a message with no answer or authority records: every stub and
    /// resolver query).
    pub edns: bool,
    /// Its DO bit.
    pub dnssec_ok: bool,
}

impl From<lode_engine::Asked> for Peek {
    fn from(a: lode_engine::Asked) -> Peek {
        Peek {
            qtype: a.qtype,
            edns: a.edns,
            dnssec_ok: a.dnssec_ok,
        }
    }
}

/// Reads the question type and the OPT's presence and DO bit.
#[inline]
pub fn peek(q: &[u8]) -> Peek {
    let mut p = Peek::default();
    if q.len() < 12 || u16::from_be_bytes([q[4], q[5]]) == 0 {
        return p;
    }
    let mut i = 12;
    loop {
        let Some(&len) = q.get(i) else { return p };
        if len == 0 {
            i += 1;
            break;
        }
        if len & 0xC0 != 0 {
            return p;
        }
        i += 1 + usize::from(len);
    }
    let Some(t) = q.get(i..i + 4) else { return p };
    p.qtype = u16::from_be_bytes([t[0], t[1]]);
    let counts = &q[6..12];
    let (an, ns, ar) = (
        u16::from_be_bytes([counts[0], counts[1]]),
        u16::from_be_bytes([counts[2], counts[3]]),
        u16::from_be_bytes([counts[4], counts[5]]),
    );
    if ar >= 1 && an == 0 && ns == 0 {
        // root name, type 41, class, TTL: extended RCODE, version, flags.
        if let Some(opt) = q.get(i + 4..i + 4 + 11) {
            if opt[0] == 0 && opt[1] == 0 && opt[2] == 41 {
                p.edns = true;
                p.dnssec_ok = opt[7] & 0x80 != 0;
            }
        }
    }
    p
}

thread_local! {
    static LOCAL: RefCell<Option<Arc<Worker>>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's counters of `metrics`, registering them on
/// the thread's first request (the only time this allocates or locks).
#[inline]
pub(crate) fn with_local(metrics: &super::Metrics, f: impl FnOnce(&Worker)) {
    LOCAL.with(|local| {
        let mut local = local.borrow_mut();
        match &*local {
            Some(w) if w.owner == metrics.id() => f(w),
            _ => {
                let w = metrics.register();
                f(&w);
                *local = Some(w);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(qtype: u16, opt: Option<u16>) -> Vec<u8> {
        let mut q = vec![
            0x12,
            0x34,
            0x01,
            0x00,
            0,
            1,
            0,
            0,
            0,
            0,
            0,
            u8::from(opt.is_some()),
        ];
        q.extend_from_slice(b"\x07example\x03com\x00");
        q.extend_from_slice(&qtype.to_be_bytes());
        q.extend_from_slice(&[0, 1]);
        if let Some(flags) = opt {
            q.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0]);
            q.extend_from_slice(&flags.to_be_bytes());
            q.extend_from_slice(&[0, 0]);
        }
        q
    }

    #[test]
    fn peek_reads_qtype_edns_and_do() {
        assert_eq!(
            peek(&query(35, None)),
            Peek {
                qtype: 35,
                edns: false,
                dnssec_ok: false
            }
        );
        assert_eq!(
            peek(&query(1, Some(0x8000))),
            Peek {
                qtype: 1,
                edns: true,
                dnssec_ok: true
            }
        );
        assert!(!peek(&query(28, Some(0))).dnssec_ok);
        assert!(peek(&query(28, Some(0))).edns);
        // Truncated and malformed input reads as nothing, never panics.
        let q = query(1, Some(0x8000));
        for n in 0..q.len() {
            let _ = peek(&q[..n]);
        }
        assert_eq!(peek(&[0; 12]), Peek::default());
        let mut pointer = query(1, None);
        pointer[12] = 0xC0;
        assert_eq!(peek(&pointer).qtype, 0);
    }

    #[test]
    fn record_counts_by_transport_rcode_and_zone() {
        let w = Worker::new(7);
        let q = query(1, Some(0x8000));
        let mut nx = q.clone();
        nx[2] |= 0x80;
        nx[3] = 3;
        let zone = zone_key(b"\x07example\x03com\x00");
        w.record(&Observed {
            transport: 0,
            request: 0,
            query: &q,
            response: &nx,
            rcode: None,
            zone,
            cookie: 0,
            asked: None,
        });
        w.record(&Observed {
            transport: 1,
            request: 0,
            query: &q,
            response: &nx,
            rcode: Some(23),
            zone: 0,
            cookie: 0,
            asked: None,
        });
        w.record(&Observed {
            transport: 0,
            request: 3,
            query: &q,
            response: &[],
            rcode: None,
            zone: 0,
            cookie: 0,
            asked: None,
        });
        assert_eq!(w.requests[0][0].get(), 1);
        assert_eq!(w.requests[0][3].get(), 1);
        assert_eq!(w.requests[1][0].get(), 1);
        assert_eq!(w.qtypes[0][0].get(), 2);
        assert_eq!(w.edns[0].get(), 2);
        assert_eq!(w.dnssec_ok[1].get(), 1);
        assert_eq!(w.rcodes[0][3].get(), 1);
        assert_eq!(w.rcodes[1][23].get(), 1);
        assert_eq!(w.unanswered[0].get(), 1);
        let slot = w.zone_slot(zone).unwrap();
        assert_eq!(slot.rcodes[1].get(), 1);
        // Case does not make another zone.
        assert_eq!(zone_key(b"\x07EXAMPLE\x03com\x00"), zone);
    }

    #[test]
    fn zones_past_the_table_overflow() {
        let w = Worker::new(1);
        let q = query(1, None);
        let resp = q.clone();
        let zones = ZONE_SLOTS as u64 + 10;
        for i in 1..=zones {
            w.record(&Observed {
                transport: 0,
                request: 0,
                query: &q,
                response: &resp,
                rcode: Some(0),
                zone: i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
                cookie: 0,
                asked: None,
            });
        }
        let counted: u64 = w.zones.iter().map(|z| z.rcodes[0].get()).sum();
        assert_eq!(counted + w.zone_overflow.get(), zones);
        assert!(w.zone_overflow.get() >= 10);
    }
}
