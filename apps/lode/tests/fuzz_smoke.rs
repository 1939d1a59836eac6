//! The fuzz target's body (fuzz/fuzz_targets/answer_body.rs) run as an
//! ordinary test over a deterministic corpus, for machines without nightly
//! Rust and cargo-fuzz: 100,000 packets — valid queries built from
//! tests/differential/queries.txt, then mutated (bit flips, random octets,
//! cuts, insertions, compression pointers, counts, header bits) with a
//! fixed-seed PRNG, plus pure random bytes. `LODE_FUZZ_SMOKE_N` changes the count.
//! Likewise the zone-file target's body (fuzz/fuzz_targets/zonefile_body.rs)
//! over 20,000 mutations of the scenario zone files' lines, and the UPDATE
//! target's body (fuzz/fuzz_targets/update_body.rs) over 20,000 mutations
//! of valid UPDATE messages, and the signer target's body
//! (fuzz/fuzz_targets/signer_body.rs) over 300 random change sequences.

mod common;

#[path = "../../../fuzz/fuzz_targets/answer_body.rs"]
mod answer_body;

#[path = "../../../fuzz/fuzz_targets/zonefile_body.rs"]
mod zonefile_body;

#[path = "../../../fuzz/fuzz_targets/update_body.rs"]
mod update_body;

#[path = "../../../fuzz/fuzz_targets/signer_body.rs"]
mod signer_body;

use common::*;
use std::path::Path;

/// Valid queries: every (qname, qtype) of queries.txt, with and without EDNS/DO.
fn seeds() -> Vec<Vec<u8>> {
    let text = std::fs::read_to_string(repo_root().join("tests/differential/queries.txt"))
        .expect("read queries.txt");
    let mut v = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let mut w = line.split_whitespace();
        let (Some(name), Some(t)) = (w.next(), w.next()) else {
            continue;
        };
        let Some(qtype) = type_from_str(t) else {
            continue;
        };
        let mut q = Query::new(name, qtype, 1);
        v.push(q.to_wire());
        q.edns = Some(Edns {
            size: 4096,
            flags: 0x8000,
            ..Edns::default()
        });
        v.push(q.to_wire());
    }
    v
}

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut p = seed.to_vec();
    for _ in 0..=rng.below(3) {
        if p.is_empty() {
            break;
        }
        match rng.below(9) {
            0 => {
                let at = rng.below(p.len());
                p[at] ^= 1 << rng.below(8);
            }
            1 => {
                let at = rng.below(p.len());
                p[at] = rng.byte();
            }
            2 => {
                let cut = rng.below(p.len() + 1);
                p.truncate(cut);
            }
            3 => {
                let at = rng.below(p.len() + 1);
                let extra: Vec<u8> = (0..=rng.below(16)).map(|_| rng.byte()).collect();
                p.splice(at..at, extra);
            }
            4 if p.len() >= 12 => {
                let at = 4 + 2 * rng.below(4);
                p[at] = 0;
                p[at + 1] = rng.below(5) as u8;
            }
            5 if p.len() > 13 => {
                let at = 12 + rng.below(p.len() - 13);
                p[at] = 0xc0;
                p[at + 1] = rng.byte();
            }
            6 if p.len() >= 4 => {
                p[2] = rng.byte() & 0x7f;
                p[3] = rng.byte();
            }
            7 => {
                let at = rng.below(p.len());
                p[at] = [0x00, 0x3f, 0x40, 0x80, 0xff, 0x29][rng.below(6)];
            }
            _ => {
                // Splice a piece of the packet onto itself (repeats names and records).
                let a = rng.below(p.len());
                let b = a + rng.below(p.len() - a);
                let piece = p[a..b].to_vec();
                let at = rng.below(p.len() + 1);
                p.splice(at..at, piece);
            }
        }
    }
    p
}

#[test]
fn answer_survives_a_deterministic_corpus() {
    let zones = answer_body::zone_set(&repo_root().join("tests/differential/zones"));
    assert!(
        zones.len() >= 5,
        "only {} scenario zones loaded",
        zones.len()
    );
    let n: usize = std::env::var("LODE_FUZZ_SMOKE_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let seeds = seeds();
    assert!(seeds.len() > 100);
    // LODE_FUZZ_SEEDS=DIR writes the valid queries there, one file each: a
    // seed corpus for `cargo +nightly fuzz run answer DIR`.
    if let Ok(dir) = std::env::var("LODE_FUZZ_SEEDS") {
        std::fs::create_dir_all(&dir).expect("create the seed folder");
        for (i, q) in seeds.iter().enumerate() {
            std::fs::write(Path::new(&dir).join(format!("seed-{i:04}")), q).expect("write a seed");
        }
    }
    let mut rng = Rng::new(0xf022_5eed);
    let mut scratch = answer_body::Scratch::new();
    let guard = answer_body::guard();
    let mut failures = Vec::new();
    let mut dropped = 0usize;
    let mut by_rcode = std::collections::BTreeMap::new();
    for i in 0..n {
        let packet = if i < seeds.len() {
            seeds[i].clone()
        } else if i % 16 == 0 {
            (0..rng.below(300)).map(|_| rng.byte()).collect()
        } else {
            let s = &seeds[rng.below(seeds.len())];
            mutate(&mut rng, s)
        };
        if let Err(e) = answer_body::check_guarded(&zones, &guard, &packet, &mut scratch) {
            failures.push(format!("#{i} (cookies, RRL): {e}: {}", hex(&packet)));
        }
        match answer_body::check(&zones, &packet, &mut scratch) {
            Ok(Some(rcode)) => *by_rcode.entry(rcode).or_insert(0usize) += 1,
            Ok(None) => dropped += 1,
            Err(e) => {
                failures.push(format!("#{i}: {e}: {}", hex(&packet)));
                if failures.len() >= 20 {
                    break;
                }
            }
        }
    }
    eprintln!("fuzz smoke: {n} packets, {dropped} dropped, answered (UDP) by rcode: {by_rcode:?}");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Mutates zone text: line-level (drop, duplicate, swap lines) and
/// byte-level (flip, insert zone-file metacharacters, cut).
fn mutate_text(rng: &mut Rng, lines: &[&str]) -> Vec<u8> {
    let v: Vec<String> = (0..1 + rng.below(30))
        .map(|_| lines[rng.below(lines.len())].to_string())
        .collect();
    let mut text = v.join("\n").into_bytes();
    for _ in 0..rng.below(6) {
        if text.is_empty() {
            break;
        }
        let at = rng.below(text.len());
        match rng.below(5) {
            0 => text[at] ^= 1 << rng.below(8),
            1 => text.insert(at, b"();\"\\$@.* \t\n0123456789"[rng.below(21)]),
            2 => text.truncate(at),
            3 => text[at] = rng.byte(),
            _ => {
                let dup = text[at..].to_vec();
                text.extend_from_slice(&dup);
            }
        }
    }
    text
}

#[test]
fn zone_reader_survives_a_deterministic_corpus() {
    let mut lines = Vec::new();
    let texts: Vec<String> = zones_in(&repo_root().join("tests/differential/zones"))
        .iter()
        .map(|z| std::fs::read_to_string(&z.file).expect("read zone"))
        .collect();
    for t in &texts {
        lines.extend(t.lines());
    }
    lines.extend([
        "$ORIGIN sub.example.com.",
        "$TTL 60",
        "$INCLUDE /nonexistent",
        "$GENERATE 1-10 h$ A 192.0.2.$",
        "$GENERATE 1-100000000 h$ A 192.0.2.1",
        "@ IN SOA ns hostmaster 1 2 3 4 5",
        "x TYPE65000 \\# 3 010203",
        "( unbalanced",
    ]);
    let n: usize = std::env::var("LODE_FUZZ_SMOKE_N")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .map_or(20_000, |n| n / 5);
    let mut rng = Rng::new(0x20be_f11e);
    let mut read = 0usize;
    for _ in 0..n {
        let text = mutate_text(&mut rng, &lines);
        read += zonefile_body::check(&text);
    }
    eprintln!("zone reader smoke: {n} texts, {read} records read");
}

/// Valid UPDATEs for the zone of update_body.rs: additions, deletions of
/// each class, prerequisites of each kind, SOA, CNAME, DNAME, NS and
/// delegation cases, with OPT and with a TSIG-looking record.
fn update_seeds() -> Vec<Vec<u8>> {
    let z = "example.com.";
    let w = |s: &str| name_to_wire(s).expect("name");
    let rr = |owner: &str, t: u16, rd: &[u8]| RawRr::new(owner, t, 300, rd);
    let cls = |owner: &str, t: u16, class: u16, rd: &[u8]| RawRr {
        class,
        ttl: 0,
        ..RawRr::new(owner, t, 0, rd)
    };
    let soa = |serial: u32| {
        let mut rd = w("ns.example.com.");
        rd.extend_from_slice(&w("hostmaster.example.com."));
        for v in [serial, 3600, 600, 86400, 300] {
            rd.extend_from_slice(&v.to_be_bytes());
        }
        rd
    };
    let mx = |pref: u16, host: &str| [&pref.to_be_bytes()[..], &w(host)].concat();
    let updates: Vec<(Vec<RawRr>, Vec<RawRr>)> = vec![
        (vec![], vec![rr("new.example.com.", 1, &[192, 0, 2, 9])]),
        (vec![], vec![rr("www.example.com.", 1, &[192, 0, 2, 82])]),
        (vec![], vec![rr("www.example.com.", 16, &txt_rdata("t"))]),
        (vec![], vec![rr("alias.example.com.", 1, &[192, 0, 2, 1])]),
        (
            vec![],
            vec![rr("alias.example.com.", 5, &w("mail.example.com."))],
        ),
        (
            vec![],
            vec![rr("www.example.com.", 5, &w("mail.example.com."))],
        ),
        (vec![], vec![rr("x.dn.example.com.", 1, &[192, 0, 2, 1])]),
        (vec![], vec![rr("dn.example.com.", 39, &w("example.org."))]),
        (vec![], vec![rr("sub.example.com.", 39, &w("example.org."))]),
        (vec![], vec![rr("x.sub.example.com.", 1, &[192, 0, 2, 1])]),
        (vec![], vec![rr("example.com.", 6, &soa(2024010199))]),
        (vec![], vec![rr("example.com.", 6, &soa(1))]),
        (vec![], vec![rr("www.example.com.", 6, &soa(5))]),
        (
            vec![],
            vec![rr("example.com.", 15, &mx(20, "www.example.com."))],
        ),
        (vec![], vec![rr("example.com.", 51, &[1, 0, 0, 0, 0])]),
        (
            vec![],
            vec![rr("new.example.com.", 50, &[1, 0, 0, 0, 0, 0])],
        ),
        (
            vec![],
            vec![rr("wild.example.com.", 2, &w("ns.other.net."))],
        ),
        (vec![], vec![cls("www.example.com.", 1, 255, &[])]),
        (vec![], vec![cls("www.example.com.", 255, 255, &[])]),
        (vec![], vec![cls("example.com.", 255, 255, &[])]),
        (vec![], vec![cls("example.com.", 2, 255, &[])]),
        (vec![], vec![cls("example.com.", 6, 255, &[])]),
        (
            vec![],
            vec![cls("example.com.", 2, 254, &w("ns.example.com."))],
        ),
        (
            vec![],
            vec![cls("www.example.com.", 1, 254, &[192, 0, 2, 80])],
        ),
        (
            vec![],
            vec![cls("sub.example.com.", 2, 254, &w("ns.sub.example.com."))],
        ),
        (vec![], vec![cls("ns.sub.example.com.", 255, 255, &[])]),
        (
            vec![cls("www.example.com.", 255, 255, &[])],
            vec![rr("p1.example.com.", 1, &[1, 2, 3, 4])],
        ),
        (
            vec![cls("nx.example.com.", 255, 254, &[])],
            vec![rr("p2.example.com.", 1, &[1, 2, 3, 4])],
        ),
        (
            vec![cls("www.example.com.", 1, 255, &[])],
            vec![rr("p3.example.com.", 1, &[1, 2, 3, 4])],
        ),
        (
            vec![cls("www.example.com.", 28, 254, &[])],
            vec![rr("p4.example.com.", 1, &[1, 2, 3, 4])],
        ),
        (
            vec![
                RawRr {
                    ttl: 0,
                    ..rr("www.example.com.", 1, &[192, 0, 2, 80])
                },
                RawRr {
                    ttl: 0,
                    ..rr("www.example.com.", 1, &[192, 0, 2, 81])
                },
            ],
            vec![rr("p5.example.com.", 1, &[1, 2, 3, 4])],
        ),
        (
            vec![],
            vec![
                rr("a.example.com.", 1, &[1, 1, 1, 1]),
                rr("a.example.com.", 1, &[1, 1, 1, 2]),
                cls("a.example.com.", 1, 254, &[1, 1, 1, 1]),
                rr("b.example.com.", 28, &[0; 16]),
            ],
        ),
        (
            vec![],
            vec![RawRr {
                ttl: 60,
                ..rr("www.example.com.", 1, &[192, 0, 2, 80])
            }],
        ),
        (
            vec![],
            vec![rr(
                "srv._tcp.example.com.",
                33,
                &[&[0, 1, 0, 1, 1, 187][..], &w("mail.example.com.")].concat(),
            )],
        ),
        (vec![], vec![rr("other.net.", 1, &[1, 2, 3, 4])]),
    ];
    let mut v = Vec::new();
    for (i, (pre, upd)) in updates.iter().enumerate() {
        let m = update_message(i as u16, z, pre, upd);
        v.push(m.clone());
        // With an OPT record.
        let mut o = m.clone();
        o[11] = 1;
        o.extend_from_slice(&[0, 0, 41, 4, 0xd0, 0, 0, 0x80, 0, 0, 0]);
        v.push(o);
        // With a TSIG-looking record.
        let mut t = m;
        t[11] = 1;
        t.extend_from_slice(&w("key."));
        t.extend_from_slice(&[0, 250, 0, 255, 0, 0, 0, 0, 0, 26]);
        t.extend_from_slice(&w("hmac-sha256."));
        t.extend_from_slice(&[0, 0, 0x65, 0x53, 0xf1, 0, 1, 44, 0, 0, 0, 1, 0, 0, 0, 0]);
        v.push(t);
    }
    v
}

#[test]
fn update_survives_a_deterministic_corpus() {
    let zone = update_body::zone();
    let n: usize = std::env::var("LODE_FUZZ_SMOKE_N")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .map_or(20_000, |n| n / 5);
    let seeds = update_seeds();
    let mut rng = Rng::new(0x0bda_7e00);
    let mut out = vec![0u8; 65535];
    let mut failures = Vec::new();
    let mut by_rcode = std::collections::BTreeMap::new();
    for i in 0..n {
        let packet = if i < seeds.len() {
            seeds[i].clone()
        } else if i % 32 == 0 {
            (0..rng.below(200)).map(|_| rng.byte()).collect()
        } else {
            let seed = &seeds[rng.below(seeds.len())];
            let mut p = mutate(&mut rng, seed);
            if p.len() >= 3 && rng.below(4) > 0 {
                // Mostly keep the UPDATE opcode and QR clear, to get past the header.
                p[2] = (p[2] & 0x07) | 0x28;
            }
            p
        };
        match update_body::check(&zone, &packet, &mut out) {
            Ok(rc) => *by_rcode.entry(rc).or_insert(0usize) += 1,
            Err(e) => {
                failures.push(format!("#{i}: {e}: {}", hex(&packet)));
                if failures.len() >= 20 {
                    break;
                }
            }
        }
    }
    eprintln!("update smoke: {n} messages, by rcode (None: dropped): {by_rcode:?}");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_signer_survives_a_deterministic_corpus() {
    let signed = signer_body::signed();
    let n: usize = std::env::var("LODE_FUZZ_SMOKE_N")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .map_or(300, |n| (n / 300).max(1));
    let mut rng = Rng::new(0x5167_0018);
    for i in 0..n {
        // One byte picks the chain, then 10 to 40 changes of 3 bytes.
        let len = 1 + 3 * (10 + rng.below(31));
        let data: Vec<u8> = (0..len).map(|_| rng.byte()).collect();
        if let Err(e) = signer_body::check(&signed, &data) {
            panic!("input {i} ({data:?}): {e}");
        }
    }
}
