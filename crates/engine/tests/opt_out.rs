//! NXDOMAIN below an empty non-terminal that an opt-out NSEC3 chain left
//! without an NSEC3 (it lies above nothing but an insecure delegation; RFC
//! 5155 §7.1 lets a signer leave it out and Knot 3.2 does): the proof is
//! made from the closest provable encloser, the nearest ancestor with an
//! NSEC3 (RFC 5155 §7.2.1), not from the empty non-terminal.

use std::collections::BTreeSet;
use std::sync::Arc;

use lode_engine::{answer, Settings, Transport, ZoneSet};
use lode_wire::{Name, NameBuf, Record, Rtype};
use lode_zonedb::{Zone, ZoneBuilder};

const ZONE: &str = "
$ORIGIN example.
$TTL 300
@        SOA  ns hostmaster 1 7200 3600 1209600 60
@        NS   ns
ns       A    192.0.2.1
r        A    192.0.2.2
; The engine takes a zone with a signed SOA for signed (as Knot).
@        RRSIG SOA 13 1 300 20300101000000 20200101000000 12345 example. AAAA
";

/// Below the empty non-terminal `a.r.example.`: an insecure delegation.
const DELEGATION: &str = "d.a.r.example. 300 NS ns.elsewhere.";

fn build(records: Vec<Record>) -> Zone {
    let mut b = ZoneBuilder::new("example.".parse().unwrap());
    for (i, r) in records.into_iter().enumerate() {
        b.add(r, i as u32);
    }
    b.build().unwrap().0
}

fn parse(text: &str) -> Vec<Record> {
    let origin: Name = "example.".parse().unwrap();
    lode_zonefile::parse_str(text, "test", &origin)
        .unwrap()
        .records
}

#[test]
fn nxdomain_below_an_opted_out_empty_non_terminal() {
    let policy = lode_dnssec::Nsec3Policy {
        opt_out: true,
        ..Default::default()
    };
    // The chain as Knot makes it: that of the zone without the delegation
    // (which, opted out, adds nothing but the empty non-terminal).
    let bare = build(parse(ZONE));
    let nsec3 = lode_dnssec::Nsec3::for_zone(&bare, &policy);
    let chain = nsec3.chain(&bare);
    let mut records = parse(ZONE);
    records.extend(parse(&format!("$ORIGIN example.\n{DELEGATION}\n")));
    records.push(nsec3.param_record(&bare));
    records.extend(chain.iter().cloned());
    let zone = build(records);
    let mut set = ZoneSet::new();
    set.insert(Arc::new(zone));

    let hashed = |name: &str| -> String {
        let n: Name = name.parse().unwrap();
        let h = nsec3.hash(n.as_ref());
        let owner: NameBuf =
            lode_wire::nsec3::hashed_owner(&h, "example.".parse::<Name>().unwrap().as_ref())
                .unwrap();
        owner.as_ref().to_string().to_ascii_lowercase()
    };
    // The chain's owners in hash order; the one covering a hash is the last
    // at or before it (wrapping around).
    let owners: Vec<String> = chain
        .iter()
        .map(|r| r.owner.as_ref().to_string().to_ascii_lowercase())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let covering = |name: &str| -> String {
        let h = hashed(name);
        owners
            .iter()
            .rev()
            .find(|o| **o < h)
            .unwrap_or_else(|| owners.last().unwrap())
            .clone()
    };
    assert!(!owners.contains(&hashed("a.r.example.")), "{owners:?}");
    assert!(owners.contains(&hashed("r.example.")));

    let expected: BTreeSet<String> = [
        hashed("r.example."),
        covering("a.r.example."),
        covering("*.r.example."),
    ]
    .into_iter()
    .collect();
    let got = nsec3_owners(&set, "x.a.r.example.");
    assert_eq!(got, expected);
}

/// The owners of the NSEC3 records in the authority section of the
/// NXDOMAIN answer to `name` A with DO.
fn nsec3_owners(zones: &ZoneSet, name: &str) -> BTreeSet<String> {
    let n: Name = name.parse().unwrap();
    let mut q = vec![0xAB, 0xCD, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1];
    q.extend_from_slice(n.as_wire());
    q.extend_from_slice(&[0, 1, 0, 1]);
    q.extend_from_slice(&[0, 0, 41, 0x04, 0xD0, 0, 0, 0x80, 0, 0, 0]);
    let mut out = vec![0u8; 65535];
    let len = answer(zones, &q, &mut out, Transport::Udp, &Settings::default()).len;
    let m = &out[..len];
    assert_eq!(m[3] & 0x0F, 3, "NXDOMAIN");
    let count = |i: usize| u16::from_be_bytes([m[4 + 2 * i], m[5 + 2 * i]]) as usize;
    let mut pos = 12;
    let mut owner = NameBuf::new();
    pos = owner.read_compressed(m, pos).unwrap() + 4;
    let mut found = BTreeSet::new();
    for i in 0..count(1) + count(2) {
        pos = owner.read_compressed(m, pos).unwrap();
        let t = Rtype(u16::from_be_bytes([m[pos], m[pos + 1]]));
        let len = u16::from_be_bytes([m[pos + 8], m[pos + 9]]) as usize;
        pos += 10 + len;
        if i >= count(1) && t == Rtype::NSEC3 {
            found.insert(owner.as_ref().to_string().to_ascii_lowercase());
        }
    }
    found
}
