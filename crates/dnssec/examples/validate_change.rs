//! What `dnssec-validation` costs per change of a large signed zone: a
//! zone of N names (ENUM-like, NSEC3 or NSEC) signed whole, then K signed
//! changes of one new name each, every changed version checked the way the
//! zone-update stage checks a change (the names it touched).
//!
//!   cargo run --release -p lode-dnssec --example validate_change -- 500000 20 nsec3
//!
//! Prints the wall time per check.

use std::time::{Duration, Instant};

use lode_dnssec::{Algorithm, Nsec3Policy, Policy, Signer, SigningKey, KSK_FLAGS, ZSK_FLAGS};
use lode_wire::{Class, Name, Record, Rtype};
use lode_zonedb::{Changeset, ZoneBuilder};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let names: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let changes: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(10);
    let nsec3 = args.get(3).is_none_or(|a| a == "nsec3");
    let origin: Name = "6.4.e164.arpa.".parse().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());

    let record = |owner: Name, rtype: Rtype, rdata: Vec<u8>| Record {
        owner,
        class: Class::IN,
        rtype,
        ttl: 3600,
        rdata: rdata.into(),
    };
    let number = |i: usize| -> Name {
        let digits: String = format!("{:08}", i * 7919 % 100_000_000)
            .chars()
            .rev()
            .map(|c| format!("{c}."))
            .collect();
        format!("{digits}6.4.e164.arpa.").parse().unwrap()
    };
    let naptr = |i: usize| {
        let mut r = vec![0, 100, 0, 10, 1, b'u', 7];
        r.extend_from_slice(b"E2U+sip");
        let re = format!("!^.*$!sip:{i}@example.net!");
        r.push(re.len() as u8);
        r.extend_from_slice(re.as_bytes());
        r.push(0);
        r
    };
    let mut b = ZoneBuilder::new(origin.clone());
    let mut soa = "ns.example.".parse::<Name>().unwrap().as_wire().to_vec();
    soa.extend_from_slice("h.example.".parse::<Name>().unwrap().as_wire());
    for v in [1u32, 3600, 600, 86400, 300] {
        soa.extend_from_slice(&v.to_be_bytes());
    }
    b.add(record(origin.clone(), Rtype::SOA, soa), 0);
    let ns: Name = "ns.example.".parse().unwrap();
    b.add(record(origin.clone(), Rtype::NS, ns.as_wire().to_vec()), 0);
    for i in 0..names {
        b.add(record(number(i), Rtype::NAPTR, naptr(i)), 0);
    }
    let zone = b.build().expect("zone").0;

    let policy = Policy {
        nsec3: nsec3.then(Nsec3Policy::default),
        ..Policy::default()
    };
    let keys = vec![
        SigningKey::generate(&origin, Algorithm::EcdsaP256, KSK_FLAGS, now).unwrap(),
        SigningKey::generate(&origin, Algorithm::EcdsaP256, ZSK_FLAGS, now).unwrap(),
    ];
    let signer = Signer::new(&origin, keys, policy).unwrap();
    let started = Instant::now();
    let mut current = signer.sign_zone(&zone, None, now).unwrap();
    println!(
        "{names} names, {}: signed whole in {:.1} s, {} records",
        if nsec3 { "NSEC3" } else { "NSEC" },
        started.elapsed().as_secs_f64(),
        current.record_count()
    );

    let mut local = Duration::ZERO;
    for k in 0..changes {
        let mut soa_to = current.soa_record();
        lode_zonedb::set_soa_serial(&mut soa_to, current.serial() + 1);
        let change = Changeset {
            soa_from: current.soa_record(),
            soa_to,
            removed: Vec::new(),
            added: vec![record(number(names + k), Rtype::NAPTR, naptr(names + k))],
        };
        let (next, signed) = signer.sign_change(&current, &change, now).unwrap();
        let touched: Vec<Name> = signed
            .removed
            .iter()
            .chain(&signed.added)
            .map(|r| r.owner.clone())
            .collect();
        let t = Instant::now();
        lode_dnssec::validate(&next, now, Some(&touched)).expect("the change's check");
        local += t.elapsed();
        current = next;
    }
    let per = |d: Duration| d.as_secs_f64() * 1e3 / changes.max(1) as f64;
    println!(
        "per change ({changes} changes): the change's check {:.3} ms",
        per(local)
    );
}
