//! The ENUM zone and the query sets shared by `benches/answer.rs` and
//! `examples/answer_loop.rs`, so the criterion times and the callgrind counts
//! measure the same thing.
//!
//! The zone is what `lode-bench gen enum --records 100000 --zones 1` writes: apex
//! `0.2.1.2.1.e164.arpa.`, SOA, two NS with addresses, and one NAPTR per
//! number `+12120` · six digits, suffixes `000000` … `099999`. The free
//! suffixes `100000` … `999999` give names inside the zone that do not exist
//! (NXDOMAIN); changing the first digit of a number gives a name outside
//! every zone (REFUSED).

use std::sync::Arc;

use lode_wire::{Name, Record, Rtype};
use lode_zonedb::{ZoneBuilder, ZoneSet};

/// NAPTR records in the zone (one per number), and distinct names per query set.
pub const RECORDS: u32 = 100_000;

/// Leading digits of every number (country code first); the zone is their ENUM name.
const PREFIX: &str = "12120";

/// Digits after the prefix.
const SUFFIX_DIGITS: usize = 6;

/// Multiplier that scatters the query order over the zone (coprime with `RECORDS`).
const SCATTER: u64 = 48_271;

/// Which names a query set asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Names that own a NAPTR RRset: NOERROR, one answer.
    Existing,
    /// Names inside the zone that do not exist: NXDOMAIN with the SOA.
    Nxdomain,
    /// Names outside every zone: REFUSED.
    Outside,
}

impl Kind {
    /// All kinds, in report order.
    pub const ALL: [Kind; 3] = [Kind::Existing, Kind::Nxdomain, Kind::Outside];

    /// The kind named `text` (`existing`, `nxdomain` or `outside`).
    pub fn parse(text: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.label() == text)
    }

    /// The kind's name on the command line and in benchmark ids.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Existing => "existing",
            Kind::Nxdomain => "nxdomain",
            Kind::Outside => "outside",
        }
    }

    /// The RCODE every response of this kind must carry.
    pub fn expected_rcode(self) -> u8 {
        match self {
            Kind::Existing => 0,
            Kind::Nxdomain => 3,
            Kind::Outside => 5,
        }
    }

    /// The digits of the `i`-th number of this kind (`i < RECORDS`), prefix included.
    fn number(self, i: u32) -> String {
        let s = u64::from(i);
        let (first, suffix) = match self {
            Kind::Existing => ('1', s),
            // Free suffixes: 100000 + 9·s stays below 10^6 for s < 100000.
            Kind::Nxdomain => ('1', u64::from(RECORDS) + 9 * s),
            Kind::Outside => ('2', s),
        };
        format!("{first}{}{suffix:0w$}", &PREFIX[1..], w = SUFFIX_DIGITS)
    }
}

/// The ENUM name of `digits` (reversed, dot-separated) below `e164.arpa.`.
fn enum_name(digits: &str) -> String {
    let mut out = String::with_capacity(2 * digits.len() + 10);
    for d in digits.chars().rev() {
        out.push(d);
        out.push('.');
    }
    out.push_str("e164.arpa.");
    out
}

/// The zone's apex.
pub fn apex() -> Name {
    // A constant, valid name.
    enum_name(PREFIX).parse().unwrap()
}

/// The zone text, in the format of `lode-bench gen enum`.
pub fn zone_text() -> String {
    let apex = enum_name(PREFIX);
    let mut text = format!(
        "$ORIGIN {apex}\n$TTL 3600\n\
         @ SOA ns.enum.example.com. root.enum.example.com. 5 10800 1800 604800 1800\n\
         @ NS ns1\n@ NS ns2\nns1 A 11.1.1.1\nns2 A 11.1.1.2\n"
    );
    for s in 0..RECORDS {
        let suffix = format!("{s:0w$}", w = SUFFIX_DIGITS);
        let owner = enum_name(&suffix);
        let owner = owner.trim_end_matches(".e164.arpa.");
        text.push_str(&format!(
            "{owner} NAPTR 100 10 \"u\" \"E2U+sip\" \"!^.*$!sip:+{PREFIX}{suffix}@example.net!\" .\n"
        ));
    }
    text
}

/// Parses and builds the zone into a set of one; panics on any error (fixed input).
pub fn load_zones() -> ZoneSet {
    let mut set = ZoneSet::new();
    set.insert(Arc::new(unsigned_zone()));
    set
}

/// Parses and builds the zone; panics on any error (fixed input).
fn unsigned_zone() -> lode_zonedb::Zone {
    let apex = apex();
    let parsed = lode_zonefile::parse_str(&zone_text(), "enum bench zone", &apex)
        .unwrap_or_else(|e| panic!("enum bench zone: {e:?}"));
    let mut b = ZoneBuilder::new(apex);
    for (i, r) in parsed.records.into_iter().enumerate() {
        b.add(r, i as u32);
    }
    let (zone, _warnings) = b
        .build()
        .unwrap_or_else(|e| panic!("enum bench zone: {e:?}"));
    zone
}

/// The zone as a signer leaves it, for DO=1 answers: an NSEC3 chain (no
/// salt, no extra iterations, as RFC 9276 asks), the NSEC3PARAM, and one
/// RRSIG of algorithm 13's size on every RRset. The signature bytes are
/// dummies: `answer()` never checks them, and real ones would make the
/// setup too slow under callgrind.
pub fn load_signed_zones() -> ZoneSet {
    let zone = unsigned_zone();
    let nsec3 = lode_dnssec::Nsec3::for_zone(&zone, &lode_dnssec::Nsec3Policy::default());
    let mut records: Vec<Record> = Vec::new();
    for id in zone.node_ids() {
        let node = zone.node(id);
        let owner = node.owner().to_name();
        for set in node.rrsets() {
            for rdata in set.rdatas() {
                records.push(Record {
                    owner: owner.clone(),
                    class: zone.class(),
                    rtype: set.rtype(),
                    ttl: set.ttl(),
                    rdata: rdata.into(),
                });
            }
        }
    }
    records.push(nsec3.param_record(&zone));
    records.extend(nsec3.chain(&zone));
    let sigs: Vec<Record> = records
        .chunk_by(|a, b| a.owner == b.owner && a.rtype == b.rtype)
        .map(|set| dummy_rrsig(&zone, &set[0]))
        .collect();
    records.extend(sigs);
    let mut b = ZoneBuilder::new(zone.origin().to_name());
    for (i, r) in records.into_iter().enumerate() {
        b.add(r, i as u32);
    }
    let (signed, _warnings) = b.build().unwrap_or_else(|e| panic!("signed zone: {e:?}"));
    let mut set = ZoneSet::new();
    set.insert(Arc::new(signed));
    set
}

/// An RRSIG over the RRset of `r` with algorithm 13's sizes (64 bytes of
/// signature) and dummy signature bytes.
fn dummy_rrsig(zone: &lode_zonedb::Zone, r: &Record) -> Record {
    let mut rdata = Vec::with_capacity(100);
    rdata.extend_from_slice(&r.rtype.0.to_be_bytes());
    rdata.push(13);
    rdata.push(r.owner.as_ref().label_count() as u8);
    rdata.extend_from_slice(&r.ttl.to_be_bytes());
    rdata.extend_from_slice(&2_000_000_000u32.to_be_bytes());
    rdata.extend_from_slice(&1_700_000_000u32.to_be_bytes());
    rdata.extend_from_slice(&12345u16.to_be_bytes());
    rdata.extend_from_slice(zone.origin().as_wire());
    rdata.extend((0..64u8).map(|i| i.wrapping_mul(37)));
    Record {
        owner: r.owner.clone(),
        class: r.class,
        rtype: Rtype::RRSIG,
        ttl: r.ttl,
        rdata: rdata.into(),
    }
}

/// `RECORDS` distinct NAPTR queries of `kind` as wire bytes, in scattered
/// order; with an OPT record (4096 bytes, version 0, no DO) if `edns`.
pub fn queries(kind: Kind, edns: bool) -> Vec<Vec<u8>> {
    queries_with(kind, edns.then_some(false))
}

/// As [`queries`], with an OPT record whose DO bit is set (for the signed zone).
pub fn dnssec_queries(kind: Kind) -> Vec<Vec<u8>> {
    queries_with(kind, Some(true))
}

/// Queries with an OPT record (DO bit as given) or without (`None`).
fn queries_with(kind: Kind, opt: Option<bool>) -> Vec<Vec<u8>> {
    let edns = opt.is_some();
    let flags = if opt == Some(true) { 0x80 } else { 0 };
    (0..u64::from(RECORDS))
        .map(|i| {
            let k = (i * SCATTER % u64::from(RECORDS)) as u32;
            let name: Name = enum_name(&kind.number(k)).parse().unwrap(); // digits and dots only
            let mut q = vec![0x12, 0x34, 0x00, 0x00, 0, 1, 0, 0, 0, 0, 0, u8::from(edns)];
            q.extend_from_slice(name.as_wire());
            q.extend_from_slice(&Rtype::NAPTR.0.to_be_bytes());
            q.extend_from_slice(&[0, 1]); // class IN
            if edns {
                q.extend_from_slice(&[0, 0, 41, 0x10, 0x00, 0, 0, flags, 0, 0, 0]);
            }
            q
        })
        .collect()
}

/// The RCODE of a response (header bits only).
pub fn rcode(response: &[u8]) -> Option<u8> {
    response.get(3).map(|b| b & 0x0f)
}
