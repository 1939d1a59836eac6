use super::*;
use lode_wire::Record;

fn name(s: &str) -> Name {
    s.parse().unwrap()
}

fn rec(owner: &str, rtype: Rtype, ttl: u32, rdata: Vec<u8>) -> Record {
    Record {
        owner: name(owner),
        class: Class::IN,
        rtype,
        ttl,
        rdata: rdata.into(),
    }
}

fn soa(minimum: u32) -> Vec<u8> {
    let mut r = name("ns.example.").as_wire().to_vec();
    r.extend_from_slice(name("host.example.").as_wire());
    for v in [1u32, 3600, 600, 86400, minimum] {
        r.extend_from_slice(&v.to_be_bytes());
    }
    r
}

fn ns(target: &str) -> Vec<u8> {
    name(target).as_wire().to_vec()
}

fn base() -> ZoneBuilder {
    let mut b = ZoneBuilder::new(name("example."));
    b.add(rec("example.", Rtype::SOA, 7200, soa(300)), 0);
    b.add(rec("example.", Rtype::NS, 3600, ns("ns.example.")), 1);
    b.add(rec("ns.example.", Rtype::A, 3600, vec![192, 0, 2, 1]), 2);
    b
}

#[test]
fn empty_nonterminals_and_lookup() {
    let mut b = base();
    b.add(rec("a.b.c.example.", Rtype::A, 60, vec![1, 2, 3, 4]), 3);
    b.add(rec("x.c.example.", Rtype::A, 60, vec![1, 2, 3, 4]), 4);
    let (z, warnings) = b.build().unwrap();
    assert!(warnings.is_empty());
    assert_eq!(z.negative_ttl(), 300);
    assert_eq!(z.serial(), 1);
    // apex, c (ENT), b.c (ENT), a.b.c, x.c, ns
    assert_eq!(z.node_count(), 6);
    let c = z.find(name("C.example.").as_ref()).unwrap();
    assert!(z.node(c).is_empty_nonterminal());
    assert!(z.find(name("b.c.example.").as_ref()).is_some());
    match z.lookup(name("q.b.c.example.").as_ref()) {
        Lookup::NotFound {
            closest_encloser, ..
        } => assert_eq!(
            z.node(closest_encloser).owner(),
            name("b.c.example.").as_ref()
        ),
        other => panic!("{other:?}"),
    }
    match z.lookup(name("zzz.example.").as_ref()) {
        Lookup::NotFound {
            closest_encloser,
            predecessor,
        } => {
            assert_eq!(closest_encloser, z.apex_id());
            assert_eq!(z.node(predecessor).owner(), name("ns.example.").as_ref());
        }
        other => panic!("{other:?}"),
    }
    match z.lookup(name("d.a.b.c.example.").as_ref()) {
        Lookup::NotFound {
            closest_encloser, ..
        } => assert_eq!(
            z.node(closest_encloser).owner(),
            name("a.b.c.example.").as_ref()
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn cuts_dnames_and_wildcards() {
    let mut b = base();
    b.add(rec("sub.example.", Rtype::NS, 60, ns("ns.sub.example.")), 3);
    b.add(rec("ns.sub.example.", Rtype::A, 60, vec![1, 2, 3, 4]), 4);
    b.add(rec("d.example.", Rtype::DNAME, 60, ns("other.")), 5);
    b.add(rec("*.w.example.", Rtype::A, 60, vec![1, 2, 3, 4]), 7);
    let (z, _) = b.build().unwrap();
    let sub = z.find(name("sub.example.").as_ref()).unwrap();
    assert!(z.node(sub).is_delegation());
    assert_eq!(z.shadow(sub), None);
    let glue = z.find(name("ns.sub.example.").as_ref()).unwrap();
    assert_eq!(z.shadow(glue), Some(sub));
    let d = z.find(name("d.example.").as_ref()).unwrap();
    assert!(z.node(d).flags().contains(NodeFlags::DNAME));
    let w = z.find(name("w.example.").as_ref()).unwrap();
    let star = z.wildcard_child(w).unwrap();
    assert_eq!(z.node(star).owner().to_string(), "*.w.example.");
    assert_eq!(z.wildcard_child(z.apex_id()), None);
}

#[test]
fn checks_report_errors() {
    let mut b = ZoneBuilder::new(name("example."));
    b.add(rec("example.", Rtype::NS, 3600, ns("ns.example.")), 0);
    b.add(rec("other.", Rtype::A, 3600, vec![1, 2, 3, 4]), 1);
    b.add(rec("c.example.", Rtype::CNAME, 3600, ns("x.")), 2);
    b.add(rec("c.example.", Rtype::A, 3600, vec![1, 2, 3, 4]), 3);
    b.add(rec("t.example.", Rtype::A, 60, vec![1, 2, 3, 4]), 4);
    b.add(rec("t.example.", Rtype::A, 120, vec![1, 2, 3, 5]), 5);
    let problems = b.build().unwrap_err();
    let text: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    let has = |s: &str| text.iter().any(|t| t.contains(s));
    assert!(has("no SOA"), "{text:?}");
    assert!(
        has("warning: other. A: owner is outside the zone example., ignored"),
        "{text:?}"
    );
    assert!(has("CNAME beside other data"), "{text:?}");
    assert!(has("missing glue"), "{text:?}");
    assert!(has("warning: t.example. A: TTL 120"), "{text:?}");
    let outside = problems
        .iter()
        .find(|p| p.message.contains("outside"))
        .unwrap();
    assert_eq!(outside.tag, Some(1));
}

#[test]
fn data_below_dname_is_refused() {
    let mut b = base();
    b.add(rec("d.example.", Rtype::DNAME, 60, ns("other.")), 3);
    b.add(rec("x.d.example.", Rtype::A, 60, vec![1, 2, 3, 4]), 4);
    let problems = b.build().unwrap_err();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].tag, Some(4));
    assert!(problems[0]
        .message
        .contains("below the DNAME at d.example."));
}

#[test]
fn last_ttl_wins_and_duplicates_go() {
    let mut b = base();
    b.add(rec("t.example.", Rtype::A, 300, vec![1, 2, 3, 9]), 3);
    b.add(rec("t.example.", Rtype::A, 100, vec![1, 2, 3, 4]), 4);
    b.add(rec("t.example.", Rtype::A, 100, vec![1, 2, 3, 4]), 5);
    let (z, warnings) = b.build().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].tag, Some(4));
    let t = z.node(z.find(name("t.example.").as_ref()).unwrap());
    let a = t.rrset(Rtype::A).unwrap();
    assert_eq!(a.ttl(), 100);
    let rdatas: Vec<&[u8]> = a.rdatas().collect();
    assert_eq!(rdatas, vec![&[1u8, 2, 3, 4][..], &[1, 2, 3, 9][..]]);
}

#[test]
fn second_soa_is_named() {
    let mut b = base();
    b.add(rec("example.", Rtype::SOA, 7200, soa(60)), 7);
    let problems = b.build().unwrap_err();
    let p = problems
        .iter()
        .find(|p| p.message.contains("more than one SOA"))
        .unwrap();
    assert_eq!(p.tag, Some(7));
}

#[test]
fn zoneset_most_specific() {
    let (parent, _) = base().build().unwrap();
    let mut b = ZoneBuilder::new(name("sub.example."));
    b.add(rec("sub.example.", Rtype::SOA, 60, soa(60)), 0);
    b.add(rec("sub.example.", Rtype::NS, 60, ns("ns.other.")), 1);
    let (child, _) = b.build().unwrap();
    let mut set = ZoneSet::new();
    set.insert(Arc::new(parent));
    set.insert(Arc::new(child));
    let find = |s: &str| {
        set.find_zone(name(s).as_ref())
            .map(|z| z.origin().to_string())
    };
    assert_eq!(find("a.SUB.example."), Some("sub.example.".into()));
    assert_eq!(find("sub.example."), Some("sub.example.".into()));
    assert_eq!(find("x.example."), Some("example.".into()));
    assert_eq!(find("example."), Some("example.".into()));
    assert_eq!(find("com."), None);
    assert_eq!(find("."), None);
}

#[test]
fn zoneset_publish_is_shared_insert_is_not() {
    let (parent, _) = base().build().unwrap();
    let mut set = ZoneSet::new();
    set.insert(Arc::new(parent));
    let before = set.clone();
    let current = |s: &ZoneSet| s.get(name("example.").as_ref()).unwrap();
    let first = current(&set);
    // A new version published in the slot: every set sharing it sees it.
    let next = Arc::new(base().build().unwrap().0);
    let old = set.publish(next.clone()).expect("zone is in the set");
    assert!(Arc::ptr_eq(&old, &first));
    assert!(Arc::ptr_eq(&current(&set), &next));
    assert!(Arc::ptr_eq(&current(&before), &next));
    // A zone not in the set is given back.
    let mut b = ZoneBuilder::new(name("other."));
    b.add(rec("other.", Rtype::SOA, 60, soa(60)), 0);
    b.add(rec("other.", Rtype::NS, 60, ns("ns.example.")), 1);
    let (other, _) = b.build().unwrap();
    let other = set.publish(Arc::new(other)).expect_err("not in the set");
    // Inserted into a copy: the set copied from does not see it.
    let mut grown = set.clone();
    grown.insert(other);
    assert!(grown.find_zone(name("x.other.").as_ref()).is_some());
    assert!(set.find_zone(name("x.other.").as_ref()).is_none());
    // Removing the deepest origin narrows the suffix walk again.
    let mut b = ZoneBuilder::new(name("a.b.c.example."));
    b.add(rec("a.b.c.example.", Rtype::SOA, 60, soa(60)), 0);
    b.add(rec("a.b.c.example.", Rtype::NS, 60, ns("ns.example.")), 1);
    grown.insert(Arc::new(b.build().unwrap().0));
    assert!(grown.find_zone(name("x.a.b.c.example.").as_ref()).is_some());
    grown.remove(&name("a.b.c.example."));
    assert_eq!(
        grown
            .find_zone(name("x.a.b.c.example.").as_ref())
            .map(|z| z.origin().to_string()),
        Some("example.".into())
    );
    assert_eq!(grown.len(), 2);
}

use std::sync::Arc;

/// A deterministic pseudo-random sequence (xorshift), for generated names.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// A zone of `n` generated names spanning many blocks: ENUM-like digit
/// names (near-identical data, stored as differences), names sharing long
/// prefixes (ties on the 16-byte block heads), mixed-case owners and
/// repeated RRsets (shared blobs). Returns the zone and its owner names.
fn big_zone(n: usize) -> (Zone, Vec<Name>) {
    let mut b = base();
    let mut names = Vec::new();
    let mut st = 0x1234_5678_9abc_def0u64;
    for i in 0..n {
        let r = xorshift(&mut st);
        let owner = match i % 4 {
            0 => {
                let digits: String = format!("{:06}", r % 1_000_000)
                    .chars()
                    .rev()
                    .map(|c| format!("{c}."))
                    .collect();
                format!("{digits}e164.example.")
            }
            1 => format!(
                "host-{}.a-very-long-shared-label-for-ties.example.",
                r % 5000
            ),
            2 => format!("Mixed{}.Case.example.", r % 300),
            _ => format!("x{}.y{}.example.", r % 7, r % 11),
        };
        let owner = name(&owner);
        let rdata = if i % 3 == 0 {
            vec![10, 0, 0, (i % 5) as u8] // repeated: shared blobs
        } else {
            format!("!^.*$!sip:+{}@example.net!", r % 1_000_000).into_bytes()
        };
        let rtype = if i % 3 == 0 { Rtype::A } else { Rtype::TXT };
        let rdata = if rtype == Rtype::TXT {
            let mut t = vec![rdata.len() as u8];
            t.extend_from_slice(&rdata);
            t
        } else {
            rdata
        };
        b.add(rec(&owner.to_string(), rtype, 300, rdata), i as u32 + 10);
        // Most names signed: their RRSIGs are stored compact.
        if i % 4 != 3 {
            let sig = rrsig(rtype, owner.as_ref().label_count() as u8, (i % 3) as u32, r);
            b.add(
                rec(&owner.to_string(), Rtype::RRSIG, 300, sig),
                i as u32 + 10,
            );
        }
        names.push(owner);
    }
    let (z, _) = b.build().unwrap();
    (z, names)
}

/// An RRSIG RDATA covering `covered` by `example.` (one of a few signing
/// times by `epoch`), its signature bytes from `seed`.
fn rrsig(covered: Rtype, labels: u8, epoch: u32, seed: u64) -> Vec<u8> {
    let mut r = covered.0.to_be_bytes().to_vec();
    r.extend_from_slice(&[13, labels]);
    r.extend_from_slice(&300u32.to_be_bytes());
    r.extend_from_slice(&(1_800_000_000 + epoch * 3600).to_be_bytes());
    r.extend_from_slice(&(1_799_000_000 + epoch * 3600).to_be_bytes());
    r.extend_from_slice(&0xbeefu16.to_be_bytes());
    r.extend_from_slice(name("example.").as_wire());
    let mut st = seed | 1;
    r.extend((0..64).map(|_| xorshift(&mut st) as u8));
    r
}

#[test]
fn compact_store_agrees_with_a_sorted_list() {
    let (z, names) = big_zone(6000);
    // The model: every node's key, in order (owners and their ancestors).
    let mut keys: Vec<Box<[u8]>> = Vec::new();
    for id in z.node_ids() {
        keys.push(z.node(id).owner().key());
    }
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "keys ascend");
    assert!(keys.len() > 32 * 50, "spans many blocks: {}", keys.len());
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(z.find_key(k), Some(NodeId(i as u32)));
    }
    for owner in &names {
        let id = z.find(owner.as_ref()).expect("every owner is found");
        // Case as written, including mixed-case owners.
        assert_eq!(z.node(id).owner().as_wire(), owner.as_wire());
        assert!(!z.node(id).is_empty_nonterminal());
    }
    // Missing names: predecessor and closest encloser as the sorted list says.
    let mut st = 99u64;
    for _ in 0..3000 {
        let r = xorshift(&mut st);
        let probe = match r % 3 {
            0 => format!("{}.{}.e164.example.", r % 10, (r >> 8) % 1000),
            1 => format!(
                "host-{}x.a-very-long-shared-label-for-ties.example.",
                r % 6000
            ),
            _ => format!("q{}.x{}.y{}.example.", r % 3, r % 9, r % 13),
        };
        let probe = name(&probe);
        let key = probe.key();
        match z.lookup(probe.as_ref()) {
            Lookup::Found(id) => assert_eq!(&keys[id.0 as usize], &key),
            Lookup::NotFound {
                closest_encloser,
                predecessor,
            } => {
                let pos = keys.partition_point(|k| k < &key);
                assert!(keys.get(pos) != Some(&key));
                assert_eq!(predecessor.0 as usize, pos - 1, "{probe}");
                let ce = (0..probe.as_ref().label_count())
                    .rev()
                    .filter_map(|n| probe.as_ref().suffix(n))
                    .find(|a| keys.binary_search(&a.key()).is_ok())
                    .unwrap();
                assert_eq!(z.node(closest_encloser).owner(), ce, "{probe}");
            }
        }
    }
}

/// The NAPTR of number `i` of an ENUM-like set.
fn enum_naptr(i: u32) -> Vec<u8> {
    let text = format!("!^.*$!sip:+1646{i:05}@example.net!");
    let mut rd = vec![0, 100, 0, 10, 1, b'u', 7];
    rd.extend_from_slice(b"E2U+sip");
    rd.push(text.len() as u8);
    rd.extend_from_slice(text.as_bytes());
    rd.push(0);
    rd
}

#[test]
fn compact_store_is_compact() {
    // ENUM-like data: near-identical RDATA per number.
    let mut b = base();
    for i in 0..20_000u32 {
        let digits: String = format!("{i:05}")
            .chars()
            .rev()
            .map(|c| format!("{c}."))
            .collect();
        let owner = format!("{digits}example.");
        b.add(rec(&owner, Rtype::NAPTR, 3600, enum_naptr(i)), i);
    }
    let (z, _) = b.build().unwrap();
    let per_record = z.heap_bytes() as f64 / z.record_count() as f64;
    // Plain storage takes several hundred bytes a record; the compact store
    // must stay far below (the target is 32 B resident).
    assert!(per_record < 24.0, "{per_record:.1} bytes per record");
    let id = z.find(name("4.3.2.1.0.example.").as_ref()).unwrap();
    let node = z.node(id);
    let naptr = node.rrset(Rtype::NAPTR).unwrap();
    assert!(naptr.first().ends_with(b"+164601234@example.net!\0"));
}

#[test]
fn signatures_are_stored_compact() {
    // 4,000 NAPTRs with one RRSIG each, all by one key at one time.
    let mut b = base();
    let mut sigs = Vec::new();
    for i in 0..4_000u32 {
        let owner = format!("n{i}.example.");
        b.add(rec(&owner, Rtype::NAPTR, 3600, enum_naptr(i)), i);
        let sig = rrsig(Rtype::NAPTR, 2, 0, u64::from(i) + 1);
        b.add(rec(&owner, Rtype::RRSIG, 3600, sig.clone()), i);
        sigs.push((owner, sig));
    }
    let (z, _) = b.build().unwrap();
    let check = |z: &Zone| {
        for (owner, sig) in &sigs {
            let id = z.find(name(owner).as_ref()).unwrap();
            let node = z.node(id);
            let set = node.rrset(Rtype::RRSIG).unwrap();
            assert_eq!(set.first(), &sig[..], "{owner}");
        }
    };
    check(&z);
    // With one-part differences only, 128.8 bytes a name here (the NAPTR's
    // tail, the RRSIG's fields and its signer stored again in every name,
    // between the differing digits and signature); two-part: 82.4.
    let per_name = z.heap_bytes() as f64 / sigs.len() as f64;
    assert!(per_name < 90.0, "{per_name:.1} bytes a signed name");
    let mut file = Vec::new();
    z.write_snapshot(b"t", &mut file).unwrap();
    let (y, _) = Zone::read_snapshot(&mut &file[..], file.len() as u64).unwrap();
    check(&y);
    cursor_agrees(&y);
}

/// A zone of `n` NAPTR names (NAPTR + RRSIG) and an NSEC3 chain of as many
/// signed hashed owners among them, each naming the next in hash order
/// (`broken`: each names a hash one bit off instead); its NSEC3 RDATAs.
fn nsec3_chain(n: usize, broken: bool) -> (Zone, Vec<(Name, Vec<u8>)>) {
    let mut b = base();
    let mut st = 0x0dd_ba11u64;
    let mut hashes: Vec<[u8; 20]> = (0..n)
        .map(|_| {
            let mut h = [0u8; 20];
            h.iter_mut().for_each(|x| *x = xorshift(&mut st) as u8);
            h
        })
        .collect();
    hashes.sort();
    let mut chain = Vec::new();
    for (i, h) in hashes.iter().enumerate() {
        let owner = format!("n{i}.example.");
        b.add(rec(&owner, Rtype::NAPTR, 3600, enum_naptr(i as u32)), 1);
        let sig = rrsig(Rtype::NAPTR, 2, 0, i as u64 + 1);
        b.add(rec(&owner, Rtype::RRSIG, 3600, sig), 1);
        let hashed = format!(
            "{}.example.",
            std::str::from_utf8(&lode_wire::nsec3::base32hex(h)).unwrap()
        );
        let mut next = hashes[(i + 1) % n];
        if broken {
            next[19] ^= 1;
        }
        // SHA-1, opt-out, 5 iterations, salt ab cd, NAPTR RRSIG.
        let mut rd = vec![1, 1, 0, 5, 2, 0xab, 0xcd, 20];
        rd.extend_from_slice(&next);
        rd.extend_from_slice(&[0, 6, 0, 0, 0, 0, 0x22, 0x02]);
        b.add(rec(&hashed, Rtype::NSEC3, 300, rd.clone()), 1);
        let sig = rrsig(Rtype::NSEC3, 2, 0, i as u64 + 7);
        b.add(rec(&hashed, Rtype::RRSIG, 300, sig), 1);
        chain.push((name(&hashed), rd));
    }
    (b.build().unwrap().0, chain)
}

#[test]
fn nsec3_next_hashes_are_not_stored_twice() {
    let (z, chain) = nsec3_chain(3000, false);
    let check = |z: &Zone| {
        for (owner, rd) in &chain {
            let id = z.find(owner.as_ref()).unwrap();
            let node = z.node(id);
            assert_eq!(
                node.rrset(Rtype::NSEC3).unwrap().first(),
                &rd[..],
                "{owner}"
            );
            assert_eq!(node.rrset(Rtype::RRSIG).unwrap().len(), 1);
            assert!(node.flags().contains(crate::NodeFlags::NSEC3_ONLY));
        }
        cursor_agrees(z);
    };
    check(&z);
    // The same chain with every next hash one bit off: nothing to leave
    // out. Each hashed owner's next hash (20 octets) is then stored.
    let (broken, _) = nsec3_chain(3000, true);
    let saved = broken.heap_bytes() as f64 - z.heap_bytes() as f64;
    assert!(
        saved / chain.len() as f64 > 18.0,
        "{:.1} bytes a hashed owner saved",
        saved / chain.len() as f64
    );
    // Hashed owners' keys are stored as their hashes (20 octets, not 30 or
    // so of base32hex): 191.9 bytes a name and its hashed owner here, 203.6
    // with the keys spelled out.
    let per_name = z.heap_bytes() as f64 / chain.len() as f64;
    assert!(
        per_name < 198.0,
        "{per_name:.1} bytes a name and its hashed owner"
    );
    let mut file = Vec::new();
    z.write_snapshot(b"t", &mut file).unwrap();
    let (y, _) = Zone::read_snapshot(&mut &file[..], file.len() as u64).unwrap();
    check(&y);
    // The records as they go out (AXFR, zone files) are the ones put in.
    let mut a: Vec<Record> = z.records().collect();
    let mut b: Vec<Record> = broken.records().collect();
    a.retain(|r| r.rtype == Rtype::NSEC3);
    b.retain(|r| r.rtype == Rtype::NSEC3);
    assert_eq!(a.len(), chain.len());
    for (x, (o, rd)) in a.iter().zip(&chain) {
        assert_eq!((&x.owner, &x.rdata[..]), (o, &rd[..]));
    }
    assert_ne!(a, b);
}

#[test]
fn snapshot_of_version_3_still_reads() {
    // Version 3 is version 4 without two-part differences: a state
    // snapshot written before may hold the only copy of a zone's changes.
    let mut b = base();
    b.add(rec("www.example.", Rtype::A, 300, vec![192, 0, 2, 1]), 1);
    let (z, _) = b.build().unwrap();
    let mut file = Vec::new();
    z.write_snapshot(b"t", &mut file).unwrap();
    let mut old = file[..file.len() - 8].to_vec();
    old[8..12].copy_from_slice(&3u32.to_le_bytes());
    let mut sum = crate::mix::WordMix::default();
    sum.update(&old);
    old.extend_from_slice(&sum.finish().to_le_bytes());
    let (y, _) = Zone::read_snapshot(&mut &old[..], old.len() as u64).unwrap();
    let id = y.find(name("www.example.").as_ref()).unwrap();
    assert_eq!(y.node(id).rrset(Rtype::A).unwrap().first(), &[192, 0, 2, 1]);
    // Any other version is refused.
    old[8..12].copy_from_slice(&2u32.to_le_bytes());
    assert!(Zone::read_snapshot(&mut &old[..], old.len() as u64).is_err());
}

#[test]
fn snapshot_round_trip_and_damage() {
    let (z, names) = big_zone(2000);
    let mut file = Vec::new();
    z.write_snapshot(b"source-tag", &mut file).unwrap();
    let (y, tag) = Zone::read_snapshot(&mut &file[..], file.len() as u64).unwrap();
    assert_eq!(tag, b"source-tag");
    assert_eq!(y.origin(), z.origin());
    assert_eq!(
        (
            y.serial(),
            y.negative_ttl(),
            y.record_count(),
            y.node_count()
        ),
        (
            z.serial(),
            z.negative_ttl(),
            z.record_count(),
            z.node_count()
        )
    );
    for owner in &names {
        let a = z.find(owner.as_ref()).unwrap();
        let b = y.find(owner.as_ref()).unwrap();
        assert_eq!(a, b);
        let (na, nb) = (z.node(a), y.node(b));
        assert_eq!(na.owner().as_wire(), nb.owner().as_wire());
        let sa: Vec<Vec<u8>> = na
            .rrsets()
            .flat_map(|s| s.rdatas())
            .map(<[u8]>::to_vec)
            .collect();
        let sb: Vec<Vec<u8>> = nb
            .rrsets()
            .flat_map(|s| s.rdatas())
            .map(<[u8]>::to_vec)
            .collect();
        assert_eq!(sa, sb);
    }
    // Every single-byte change and every truncation is refused, never a panic.
    let mut st = 7u64;
    for _ in 0..300 {
        let mut bad = file.clone();
        let at = (xorshift(&mut st) as usize) % bad.len();
        bad[at] ^= 1 << (xorshift(&mut st) % 8);
        assert!(
            Zone::read_snapshot(&mut &bad[..], bad.len() as u64).is_err(),
            "flip at {at}"
        );
        let cut = (xorshift(&mut st) as usize) % file.len();
        assert!(
            Zone::read_snapshot(&mut &file[..cut], cut as u64).is_err(),
            "cut at {cut}"
        );
    }
}

#[test]
fn apply_rebuild_adds_and_removes() {
    let (zone, _) = base().build().unwrap();
    let mut soa2 = soa(300);
    let n = soa2.len();
    soa2[n - 20..n - 16].copy_from_slice(&2u32.to_be_bytes());
    let cs = Changeset {
        soa_from: rec("example.", Rtype::SOA, 7200, soa(300)),
        soa_to: rec("example.", Rtype::SOA, 7200, soa2),
        removed: vec![rec("ns.example.", Rtype::A, 3600, vec![192, 0, 2, 1])],
        added: vec![
            rec("ns.example.", Rtype::A, 3600, vec![192, 0, 2, 2]),
            rec("a.b.example.", Rtype::TXT, 60, vec![1, b'x']),
        ],
    };
    let z2 = zone.apply_rebuild(&cs).unwrap();
    assert_eq!(z2.serial(), 2);
    assert_eq!(z2.record_count(), 4);
    assert!(
        z2.find(name("b.example.").as_ref()).is_some(),
        "empty non-terminal"
    );
    // Removing what is not there, or applying to the wrong serial, fails.
    assert!(matches!(
        z2.apply_rebuild(&cs),
        Err(ApplyError::SerialMismatch { .. })
    ));
    let mut again = cs.clone();
    again.soa_from = cs.soa_to.clone();
    assert!(matches!(
        z2.apply_rebuild(&again),
        Err(ApplyError::MissingRecord(_))
    ));
}

#[test]
fn changes_skip_zone_file_semantic_checks() {
    // Removing the in-zone name server's address is an error in a zone file
    // (missing glue) but an update may do it, as Knot DNS lets it.
    let (zone, _) = base().build().unwrap();
    let mut soa2 = soa(300);
    let n = soa2.len();
    soa2[n - 20..n - 16].copy_from_slice(&2u32.to_be_bytes());
    let cs = Changeset {
        soa_from: rec("example.", Rtype::SOA, 7200, soa(300)),
        soa_to: rec("example.", Rtype::SOA, 7200, soa2),
        removed: vec![rec("ns.example.", Rtype::A, 3600, vec![192, 0, 2, 1])],
        added: vec![rec("m.example.", Rtype(253), 60, vec![1])],
    };
    let z2 = zone.apply_rebuild(&cs).unwrap();
    assert!(z2.find(name("ns.example.").as_ref()).is_none());
    assert!(
        z2.find(name("m.example.").as_ref()).is_some(),
        "MAILA is data"
    );
    let mut b = base();
    b.add(rec("m.example.", Rtype(253), 60, vec![1]), 9);
    assert!(b.build().is_err(), "a zone file still refuses it");
}

/// The cursor's walk visits every node in order and reads each as
/// [`Zone::node`] does: owner (byte for byte), flags and RRsets; and a
/// filtered walk skips exactly the nodes its filter refuses.
pub(crate) fn cursor_agrees(z: &Zone) {
    let ids: Vec<NodeId> = z.node_ids().collect();
    let mut c = z.cursor();
    for &id in &ids {
        assert_eq!(c.advance(|_| true), Some(id));
        let n = z.node(id);
        assert_eq!(c.owner().as_wire(), n.owner().as_wire(), "owner of {id:?}");
        assert_eq!(c.flags(), n.flags());
        let sets = |r: RRsets<'_>| {
            r.map(|s| (s.rtype(), s.ttl(), s.rdatas().map(<[u8]>::to_vec).collect()))
                .collect::<Vec<(Rtype, u32, Vec<Vec<u8>>)>>()
        };
        assert_eq!(sets(c.rrsets()), sets(n.rrsets()), "RRsets of {id:?}");
    }
    assert_eq!(c.advance(|_| true), None);
    assert_eq!(c.id(), None);
    // Again, every other node only: owners spelled across gaps.
    c.restart();
    let mut flip = false;
    let mut seen = Vec::new();
    while let Some(id) = c.advance(|_| {
        flip = !flip;
        flip
    }) {
        assert_eq!(c.owner().as_wire(), z.node(id).owner().as_wire());
        seen.push(id);
    }
    let every_other: Vec<NodeId> = ids.iter().copied().step_by(2).collect();
    assert_eq!(seen, every_other);
}

#[test]
fn cursor_walks_like_node_lookups() {
    let (z, _) = big_zone(6000);
    cursor_agrees(&z);
    // Escaped octets (0 and 1 are escaped in keys), dots and case inside
    // labels, the longest labels and names.
    let mut b = base();
    let long = "a".repeat(63);
    let deep = format!("{long}.{long}.{long}.b.example.");
    for owner in [
        "\\000.example.",
        "\\001x.example.",
        "a\\000b.\\001.example.",
        "plain.\\000.example.",
        "x.plain.\\000.example.",
        "dot\\.in.label.example.",
        "UPPER.lower.example.",
        "lower.lower.example.",
        deep.as_str(),
        "c.b.example.",
    ] {
        b.add(rec(owner, Rtype::A, 300, vec![192, 0, 2, 1]), 1);
    }
    let (z, _) = b.build().unwrap();
    cursor_agrees(&z);
}

/// Glue is needed where Knot DNS's checks want it: for a name server
/// below the delegation itself, not for one below a sibling's delegation
/// (its own servers answer for it) nor one a wildcard with an address
/// answers for.
#[test]
fn glue_only_where_the_delegation_needs_it() {
    let glue_errors = |extra: &[(&str, Rtype, Vec<u8>)]| {
        let mut b = base();
        for (i, (owner, rtype, rdata)) in extra.iter().enumerate() {
            b.add(rec(owner, *rtype, 300, rdata.clone()), 10 + i as u32);
        }
        match b.build() {
            Ok(_) => 0,
            Err(p) => p
                .iter()
                .filter(|p| p.message.contains("missing glue"))
                .count(),
        }
    };
    let a = |last: u8| vec![192, 0, 2, last];
    // Below its own delegation, no address: missing.
    assert_eq!(
        glue_errors(&[("a.example.", Rtype::NS, ns("ns.a.example."))]),
        1
    );
    // Below a sibling's delegation: its servers answer for it.
    let sibling = [
        ("a.example.", Rtype::NS, ns("ns.b.example.")),
        ("b.example.", Rtype::NS, ns("ns.example.net.")),
    ];
    assert_eq!(glue_errors(&sibling), 0);
    // The apex's name server below a delegation.
    let apex = [
        ("example.", Rtype::NS, ns("ns.b.example.")),
        ("b.example.", Rtype::NS, ns("ns.example.net.")),
    ];
    assert_eq!(glue_errors(&apex), 0);
    // The sibling's cut itself has no address: missing (as Knot finds).
    let cut = [
        ("a.example.", Rtype::NS, ns("b.example.")),
        ("b.example.", Rtype::NS, ns("ns.example.net.")),
    ];
    assert_eq!(glue_errors(&cut), 1);
    // A wildcard with an address answers for it; one without does not.
    let wild = [
        ("a.example.", Rtype::NS, ns("ns.w.example.")),
        ("*.w.example.", Rtype::A, a(9)),
    ];
    assert_eq!(glue_errors(&wild), 0);
    let wild_txt = [
        ("a.example.", Rtype::NS, ns("ns.w.example.")),
        ("*.w.example.", Rtype::TXT, vec![1, b'x']),
    ];
    assert_eq!(glue_errors(&wild_txt), 1);
}

/// `strict` adds the checkers' checks; a loading server lets these pass.
#[test]
fn strict_checks_what_checkers_find() {
    let ds = |digest_type: u8, len: usize| {
        let mut r = vec![0x30, 0x39, 13, digest_type];
        r.resize(4 + len, 0xAB);
        r
    };
    let errors = |strict: bool, extra: &[(&str, Rtype, Vec<u8>)]| {
        let mut b = base();
        b.add(
            rec("sub.example.", Rtype::NS, 300, ns("ns.example.net.")),
            3,
        );
        for (i, (owner, rtype, rdata)) in extra.iter().enumerate() {
            b.add(rec(owner, *rtype, 300, rdata.clone()), 10 + i as u32);
        }
        let b = if strict { b.strict() } else { b };
        match b.build() {
            Ok(_) => Vec::new(),
            Err(p) => p.into_iter().map(|p| p.message).collect::<Vec<_>>(),
        }
    };
    for (digest_type, good, bad) in [(1u8, 20, 32), (2, 32, 2), (4, 48, 32)] {
        let ok = [("sub.example.", Rtype::DS, ds(digest_type, good))];
        assert!(errors(true, &ok).is_empty(), "type {digest_type}");
        let wrong = [("sub.example.", Rtype::DS, ds(digest_type, bad))];
        let e = errors(true, &wrong);
        assert!(
            e.len() == 1 && e[0].contains(&format!("digest of {bad} octets")),
            "{e:?}"
        );
        assert!(errors(false, &wrong).is_empty(), "served as Knot serves it");
    }
    // An unknown digest type is not judged.
    assert!(errors(true, &[("sub.example.", Rtype::DS, ds(99, 3))]).is_empty());
    let apex = [("example.", Rtype::DS, ds(2, 32))];
    assert!(errors(true, &apex)[0].contains("at the zone apex"));
    assert!(errors(false, &apex).is_empty());
    let wildcard = [("*.example.", Rtype::NS, ns("ns.example.net."))];
    assert!(errors(true, &wildcard)[0].contains("wildcard"));
    assert!(errors(false, &wildcard).is_empty());
}
