//! The sorted builder against ZoneBuilder on random zones: records
//! shuffled, duplicated, out of the zone, of another class, glue present
//! or not, delegations, DNAMEs and their occluded data, CNAMEs beside
//! other data, wildcards, SOAs missing, doubled or malformed; runs of a
//! few records so that many are written and merged.

use super::*;
use crate::delta_tests::Rng;
use crate::ZoneBuilder;

type Built = Result<(Zone, Vec<Problem>), Vec<Problem>>;

fn name(s: &str) -> Name {
    s.parse().unwrap()
}

fn soa_rdata(serial: u32) -> Vec<u8> {
    let mut soa = name("ns.example.").as_wire().to_vec();
    soa.extend_from_slice(name("h.example.").as_wire());
    for v in [serial, 3600, 600, 86400, 120] {
        soa.extend_from_slice(&v.to_be_bytes());
    }
    soa
}

/// A random zone's records in a random order, tagged by position.
fn records(seed: u64) -> Vec<(Record, u32)> {
    let mut rng = Rng(seed | 1);
    let rec = |owner: Name, rtype: Rtype, ttl: u32, rdata: Vec<u8>| Record {
        owner,
        class: Class::IN,
        rtype,
        ttl,
        rdata: rdata.into(),
    };
    let origin = name("example.");
    let mut out = Vec::new();
    // Half the zones without what fails a zone (but duplicates, other
    // TTLs, records out of the zone).
    let clean = rng.below(2) == 0;
    if clean {
        for ns in ["ns.a.example.", "Ns.c.example."] {
            out.push(rec(name(ns), Rtype::A, 300, vec![192, 0, 2, 1]));
        }
    }
    // The apex: usually one SOA and NS, sometimes none, two or a bad one.
    match rng.below(12) {
        _ if clean => {}
        0 => {}
        1 => out.push(rec(origin.clone(), Rtype::SOA, 300, soa_rdata(2))),
        2 => out.push(rec(origin.clone(), Rtype::SOA, 300, vec![0, 0, 1])),
        _ => {}
    }
    if clean || rng.below(12) != 0 {
        out.push(rec(origin.clone(), Rtype::SOA, 300, soa_rdata(1)));
    }
    if clean || rng.below(12) != 0 {
        let ns = ["ns.other.", "ns.example.", "a.b.example."][rng.below(if clean { 1 } else { 3 })];
        out.push(rec(
            origin.clone(),
            Rtype::NS,
            300,
            name(ns).as_wire().to_vec(),
        ));
    }
    let labels = ["a", "B", "c", "*", "ns", "d-e", "Ns"];
    let labels = if clean { &labels[..3] } else { &labels[..] };
    let count = 20 + rng.below(120);
    for _ in 0..count {
        let depth = 1 + rng.below(3);
        let mut owner: String = (0..depth)
            .map(|_| labels[rng.below(labels.len())].to_string() + ".")
            .collect();
        owner += if rng.below(25) == 0 {
            "elsewhere."
        } else {
            "Example."
        };
        let owner = name(&owner);
        let ttl = [300, 300, 300, 60][rng.below(4)];
        let target = |rng: &mut Rng| {
            let t = [
                "ns.a.example.",
                "ns.c.example.",
                "ns.other.",
                "x.b.example.",
                "a.example.",
            ];
            name(t[rng.below(if clean { 3 } else { t.len() })])
                .as_wire()
                .to_vec()
        };
        let (rtype, rdata) = match rng.below(14) {
            2 | 3 | 7 | 8 | 9 if clean => (Rtype::TXT, vec![1, 7]),
            0 | 1 => (Rtype::NS, target(&mut rng)),
            2 => (Rtype::DNAME, name("t.other.").as_wire().to_vec()),
            3 => (Rtype::CNAME, target(&mut rng)),
            4 => (Rtype::RRSIG, vec![0, 1, rng.below(5) as u8]),
            5 => (Rtype::TXT, vec![1, rng.below(3) as u8]),
            6 => (Rtype::AAAA, vec![0; 16]),
            7 => (Rtype::DS, vec![0, 1, 8, 2, 0, 0]),
            8 if rng.below(4) == 0 => (Rtype::SOA, soa_rdata(3)),
            9 if rng.below(4) == 0 => (Rtype(255), vec![]),
            _ => (Rtype::A, vec![10, 0, 0, rng.below(4) as u8]),
        };
        let mut r = rec(owner, rtype, ttl, rdata);
        if !clean && rng.below(40) == 0 {
            r.class = Class::CH;
        }
        out.push(r.clone());
        if rng.below(10) == 0 {
            // A duplicate, maybe with another TTL.
            r.ttl = [300, 60][rng.below(2)];
            out.push(r);
        }
    }
    for i in (1..out.len()).rev() {
        out.swap(i, rng.below(i + 1));
    }
    out.into_iter()
        .enumerate()
        .map(|(i, r)| (r, i as u32))
        .collect()
}

fn both(records: &[(Record, u32)], budget: usize, strict: bool) -> (Built, Built, usize) {
    let mut s = SortedBuilder::new(name("example.")).run_budget(budget);
    let mut z = ZoneBuilder::new(name("example."));
    if strict {
        s = s.strict();
        z = z.strict();
    }
    for (r, tag) in records {
        s.add(r.clone(), *tag);
        z.add(r.clone(), *tag);
    }
    let runs = s.runs_written();
    (s.build(), z.build(), runs)
}

/// Equal zones and the same problems in the same order.
fn assert_same(a: Built, b: Built) {
    match (a, b) {
        (Ok((za, pa)), Ok((zb, pb))) => {
            crate::ordered::tests::assert_same(&za, &zb);
            assert_eq!(pa, pb);
        }
        (Err(pa), Err(pb)) => assert_eq!(pa, pb),
        (a, b) => panic!("{:?}\nagainst\n{:?}", a.map(|z| z.1), b.map(|z| z.1)),
    }
}

#[test]
fn builds_what_the_zone_builder_builds_from_any_order() {
    let (mut ok, mut failed, mut merged) = (0, 0, 0);
    for seed in 1..400u64 {
        let recs = records(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        for budget in [300, 4000, DEFAULT_RUN_BUDGET] {
            let (a, b, runs) = both(&recs, budget, seed % 3 == 0);
            if budget == 300 {
                assert!(runs > 2, "{runs} runs");
                merged += runs;
                if b.is_ok() {
                    ok += 1;
                } else {
                    failed += 1;
                }
            } else if budget == DEFAULT_RUN_BUDGET {
                assert_eq!(runs, 0);
            }
            assert_same(a, b);
        }
    }
    // Both outcomes are exercised.
    assert!(ok > 50 && failed > 50, "{ok} built, {failed} refused");
    assert!(merged > 1000);
}

#[test]
fn records_in_order_and_with_glue_build_the_same() {
    for seed in 1..100u64 {
        let mut recs = records(seed.wrapping_mul(0x2545_f491_4f6c_dd1d));
        recs.sort_by_key(|r| (r.0.owner.key(), r.0.rtype));
        let (a, b, _) = both(&recs, 300, false);
        assert_same(a, b);
    }
}

#[test]
fn an_empty_zone_fails_as_the_zone_builder_fails() {
    let (a, b, _) = both(&[], 300, false);
    assert_same(a, b);
}

#[test]
fn a_run_that_cannot_be_written_fails_the_build_naming_it() {
    let recs = records(5);
    let dir = std::env::temp_dir().join(format!("lode-sort-missing-{}", std::process::id()));
    let mut s = SortedBuilder::new(name("example."))
        .run_budget(100)
        .run_dir(dir.clone());
    for (r, tag) in recs {
        s.add(r, tag);
    }
    let problems = s.build().unwrap_err();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].message.contains(&*dir.to_string_lossy()),
        "{}",
        problems[0]
    );
}

#[test]
fn run_files_are_gone_from_the_directory() {
    let dir = std::env::temp_dir().join(format!("lode-sort-gone-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut s = SortedBuilder::new(name("example."))
        .run_budget(200)
        .run_dir(dir.clone());
    for (r, tag) in records(9) {
        s.add(r, tag);
    }
    assert!(s.runs_written() > 1);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    drop(s.build());
    std::fs::remove_dir(&dir).unwrap();
}
