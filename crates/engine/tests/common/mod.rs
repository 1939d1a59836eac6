//! The zones of `tests/data/` (the ones the golden responses were captured
//! from), loaded once per test binary.

use std::path::Path;
use std::sync::Arc;

use lode_engine::ZoneSet;
use lode_wire::Name;
use lode_zonedb::ZoneBuilder;

/// Parses and builds every zone of `tests/data/`; panics naming the zone on any error.
pub fn load_zones() -> ZoneSet {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut set = ZoneSet::new();
    for origin in [
        "example.com.",
        "example.net.",
        "child.example.com.",
        "signed.test.",
        "signed3.example.",
    ] {
        let name: Name = origin.parse().unwrap();
        let file = dir.join(format!("{origin}zone"));
        let text = std::fs::read_to_string(&file).unwrap();
        let parsed = lode_zonefile::parse_str(&text, &file.display().to_string(), &name)
            .unwrap_or_else(|e| panic!("{origin}: {e:?}"));
        let mut b = ZoneBuilder::new(name);
        for (i, r) in parsed.records.into_iter().enumerate() {
            b.add(r, i as u32);
        }
        let (zone, _warnings) = b.build().unwrap_or_else(|e| panic!("{origin}: {e:?}"));
        set.insert(Arc::new(zone));
    }
    set
}

/// The queries of `tests/data/golden.txt` with their transport.
#[allow(dead_code)] // not every test binary uses it
pub fn golden_queries() -> Vec<(lode_engine::Transport, Vec<u8>)> {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden.txt");
    let text = std::fs::read_to_string(golden).unwrap();
    let mut queries = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let mut w = line.split_whitespace();
        let t = if w.next() == Some("tcp") {
            lode_engine::Transport::Tcp
        } else {
            lode_engine::Transport::Udp
        };
        let h = w.next().unwrap();
        let q: Vec<u8> = (0..h.len() / 2)
            .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        queries.push((t, q));
    }
    queries
}

/// Each zone of `set` changed twice (names, empty non-terminals, a
/// wildcard and a delegation added; existing records removed), once through
/// the delta (`Zone::apply`) and once rebuilt (`Zone::apply_rebuild`).
#[allow(dead_code)] // not every test binary uses it
pub fn changed_zones(set: &ZoneSet) -> (ZoneSet, ZoneSet) {
    use lode_wire::{Class, Record, Rtype};
    use lode_zonedb::Changeset;
    let mut delta = ZoneSet::new();
    let mut rebuilt = ZoneSet::new();
    for zone in set.iter() {
        let origin = zone.origin().to_name();
        let at = |label: &str| -> Name { format!("{label}.{origin}").parse().unwrap() };
        let rec = |owner: Name, rtype: Rtype, rdata: Vec<u8>| Record {
            owner,
            class: Class::IN,
            rtype,
            ttl: 300,
            rdata: rdata.into(),
        };
        let soa_at = |serial: u32| {
            let mut soa = zone
                .records()
                .find(|r| r.rtype == Rtype::SOA)
                .expect("a zone has an SOA");
            let n = soa.rdata.len();
            let mut rdata = soa.rdata.to_vec();
            rdata[n - 20..n - 16].copy_from_slice(&serial.to_be_bytes());
            soa.rdata = rdata.into();
            soa
        };
        let s = zone.serial();
        let first = Changeset {
            soa_from: soa_at(s),
            soa_to: soa_at(s + 1),
            removed: Vec::new(),
            added: vec![
                rec(at("new1"), Rtype::A, vec![192, 0, 2, 99]),
                rec(at("a.b.deep"), Rtype::TXT, vec![3, b'e', b'n', b't']),
                rec(at("*.wild"), Rtype::TXT, vec![1, b'w']),
                rec(at("cut"), Rtype::NS, at("ns.cut").as_wire().to_vec()),
                rec(at("ns.cut"), Rtype::A, vec![192, 0, 2, 98]),
            ],
        };
        let removable: Vec<Record> = zone
            .records()
            .filter(|r| {
                r.owner != origin
                    && !matches!(
                        r.rtype,
                        Rtype::SOA | Rtype::RRSIG | Rtype::NSEC | Rtype::NSEC3
                    )
            })
            .step_by(5)
            .take(4)
            .collect();
        let second = Changeset {
            soa_from: soa_at(s + 1),
            soa_to: soa_at(s + 2),
            removed: removable,
            added: vec![rec(at("new2.b.deep"), Rtype::A, vec![192, 0, 2, 97])],
        };
        let d = zone
            .apply(&first)
            .and_then(|z| z.apply(&second))
            .unwrap_or_else(|e| panic!("{origin}: {e}"));
        let r = zone
            .apply_rebuild(&first)
            .and_then(|z| z.apply_rebuild(&second))
            .unwrap_or_else(|e| panic!("{origin}: {e}"));
        assert!(d.delta_len() > 0);
        delta.insert(Arc::new(d));
        rebuilt.insert(Arc::new(r));
    }
    (delta, rebuilt)
}
