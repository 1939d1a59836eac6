//! Base + delta against a zone built anew: after every random change, every
//! lookup of the merged view gives what a fresh build of the same records
//! gives (then again after compaction).

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

fn soa(serial: u32) -> Record {
    let mut r = name("ns.example.").as_wire().to_vec();
    r.extend_from_slice(name("host.example.").as_wire());
    for v in [serial, 3600, 600, 86400, 300] {
        r.extend_from_slice(&v.to_be_bytes());
    }
    rec("example.", Rtype::SOA, 3600, r)
}

/// A xorshift generator for the random tests.
pub(crate) struct Rng(pub(crate) u64);
impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// A number below `n`.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[(self.next() % v.len() as u64) as usize]
    }
}

const OWNERS: &[&str] = &[
    "example.",
    "a.example.",
    "b.a.example.",
    "c.b.a.example.",
    "x.y.z.example.",
    "z.example.",
    "*.example.",
    "*.z.example.",
    "w.*.example.",
    "sub.example.",
    "ns.sub.example.",
    "deep.ns.sub.example.",
    "d.example.",
    "q.d.example.",
    "m.example.",
    "n.m.example.",
    "ns.example.",
    // Hashed owners (NSEC3, `nsec3.rs`); the last two tie on the index's
    // 12-digit prefix.
    "0123456789abcdefghijklmnopqrstuv.example.",
    "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv.example.",
    "aaaaaaaaaaaa00000000000000000000.example.",
    "aaaaaaaaaaaa0000000000000000000v.example.",
];

/// Keys the NSEC3 index is asked about (hashed owners' and between them).
const NSEC3_PROBES: &[&str] = &[
    "00000000000000000000000000000000",
    "0123456789abcdefghijklmnopqrstuv",
    "0123456789abcdefghijklmnopqrstv0",
    "5555555555555555555555555555555u",
    "aaaaaaaaaaaa00000000000000000000",
    "aaaaaaaaaaaa0000000000000000000g",
    "aaaaaaaaaaaa0000000000000000000v",
    "aaaaaaaaaaaa1000000000000000000v",
    "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvu",
    "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv",
];

/// An NSEC3 record's RDATA (SHA-1, no salt, A in the bitmap); half of
/// them name one of the hashed owners as the next one (the store leaves
/// such a next hash out when it is the next entry's key).
fn nsec3_rdata(rng: &mut Rng) -> Vec<u8> {
    let mut r = vec![1, 0, 0, 0, 0, 20];
    let hashed: Vec<&str> = OWNERS.iter().filter(|o| o.len() == 41).copied().collect();
    if rng.next().is_multiple_of(2) {
        let key = format!("{}\0", &rng.pick(&hashed)[..32]);
        r.extend_from_slice(&crate::nsec3::key_hash(key.as_bytes()).unwrap());
    } else {
        r.extend((0..20).map(|_| rng.next() as u8));
    }
    r.extend_from_slice(&[0, 1, 0x40]);
    r
}

/// A random record for an owner: A, TXT, MX, NS (making cuts) or DNAME;
/// mostly NSEC3 at a hashed owner.
fn random_record(rng: &mut Rng, owner: &str) -> Record {
    if owner.len() == 41 && !rng.next().is_multiple_of(4) {
        return rec(owner, Rtype::NSEC3, 300, nsec3_rdata(rng));
    }
    match rng.next() % 10 {
        0..=3 => rec(
            owner,
            Rtype::A,
            300 + (rng.next() % 2) as u32,
            vec![192, 0, 2, (rng.next() % 4) as u8],
        ),
        4 | 5 => rec(
            owner,
            Rtype::TXT,
            60,
            vec![1, b'a' + (rng.next() % 3) as u8],
        ),
        6 => {
            let mut r = vec![0, 10];
            r.extend_from_slice(name("mail.example.").as_wire());
            rec(owner, Rtype::MX, 60, r)
        }
        7 | 8 if owner != "example." => {
            let t = *rng.pick(&["ns.sub.example.", "ns.other.test.", "ns.example."]);
            rec(owner, Rtype::NS, 3600, name(t).as_wire().to_vec())
        }
        _ if owner != "example." => rec(
            owner,
            Rtype::DNAME,
            60,
            name("target.test.").as_wire().to_vec(),
        ),
        _ => rec(owner, Rtype::TXT, 60, vec![1, b'z']),
    }
}

fn start() -> Zone {
    let mut b = ZoneBuilder::new(name("example.")).changed();
    b.add(soa(1), 0);
    b.add(
        rec(
            "example.",
            Rtype::NS,
            3600,
            name("ns.example.").as_wire().to_vec(),
        ),
        0,
    );
    b.add(rec("ns.example.", Rtype::A, 3600, vec![192, 0, 2, 53]), 0);
    b.add(rec("a.example.", Rtype::A, 300, vec![192, 0, 2, 1]), 0);
    b.add(rec("x.y.z.example.", Rtype::TXT, 60, vec![1, b'a']), 0);
    b.add(
        rec(
            "sub.example.",
            Rtype::NS,
            3600,
            name("ns.sub.example.").as_wire().to_vec(),
        ),
        0,
    );
    b.add(
        rec("ns.sub.example.", Rtype::A, 3600, vec![192, 0, 2, 54]),
        0,
    );
    b.add(rec("*.example.", Rtype::TXT, 60, vec![1, b'w']), 0);
    b.build().unwrap().0
}

/// A random valid changeset against `zone`.
fn random_change(rng: &mut Rng, zone: &Zone) -> Changeset {
    let serial = zone.serial();
    let mut removed = Vec::new();
    let mut added: Vec<Record> = Vec::new();
    let existing: Vec<Record> = zone
        .records()
        .filter(|r| r.rtype != Rtype::SOA && !(r.rtype == Rtype::NS && r.owner == name("example.")))
        .collect();
    for _ in 0..(1 + rng.next() % 6) {
        if rng.next() & 1 == 0 && !existing.is_empty() {
            let r = rng.pick(&existing).clone();
            if !removed.contains(&r) {
                removed.push(r);
            }
        } else {
            let owner = rng_owner(rng);
            let r = random_record(rng, owner);
            let present = existing
                .iter()
                .any(|e| e.owner == r.owner && e.rtype == r.rtype && e.rdata == r.rdata);
            let dup = added
                .iter()
                .any(|e| e.owner == r.owner && e.rtype == r.rtype && e.rdata == r.rdata);
            if !present && !dup {
                added.push(r);
            }
        }
    }
    Changeset {
        soa_from: soa(serial),
        soa_to: soa(serial + 1),
        removed,
        added,
    }
}

fn rng_owner(rng: &mut Rng) -> &'static str {
    OWNERS[(rng.next() % OWNERS.len() as u64) as usize]
}

/// Every fact a reader can ask, spelled by owner names.
fn facts(z: &Zone) -> Vec<String> {
    crate::tests::cursor_agrees(z);
    let mut out = Vec::new();
    let show = |id: NodeId| z.node(id).owner().to_string().to_ascii_lowercase();
    for id in z.node_ids() {
        let n = z.node(id);
        let (flags, shadow) = z.info(id);
        assert_eq!(n.is_shadowed(), shadow.is_some(), "{}", show(id));
        let sets: Vec<String> = n
            .rrsets()
            .map(|s| {
                format!(
                    "{} {} {:?}",
                    s.rtype(),
                    s.ttl(),
                    s.rdatas().collect::<Vec<_>>()
                )
            })
            .collect();
        out.push(format!(
            "node {} flags {:?} shadow {:?} wild {:?} sets {:?}",
            show(id),
            flags,
            shadow.map(show),
            z.wildcard_child(id).map(show),
            sets
        ));
    }
    let mut probes: Vec<String> = OWNERS.iter().map(|s| s.to_string()).collect();
    for o in OWNERS {
        probes.push(format!("new.{o}"));
        probes.push(format!("a0.{o}"));
        probes.push(format!("zz.q.{o}"));
    }
    probes.push("0.example.".into());
    probes.push("zzzz.example.".into());
    for p in &probes {
        let n = name(p);
        let l = match z.lookup(n.as_ref()) {
            Lookup::Found(id) => format!("found {}", show(id)),
            Lookup::NotFound {
                closest_encloser,
                predecessor,
            } => format!(
                "missing ce {} pred {}",
                show(closest_encloser),
                show(predecessor)
            ),
        };
        out.push(format!("{p}: {l} find {:?}", z.find(n.as_ref()).map(show)));
    }
    // The NSEC3 index against a walk of every node.
    let hashed = crate::nsec3::walked_owners(z);
    for p in NSEC3_PROBES {
        let mut key = [0u8; 33];
        key[..32].copy_from_slice(p.as_bytes());
        let (exact, cover) = crate::nsec3::walk_nsec3(&hashed, &key);
        assert_eq!(z.nsec3_covering(&key), cover, "cover {p}");
        assert_eq!(z.nsec3_match(&key), exact, "match {p}");
        out.push(format!(
            "nsec3 {p}: cover {:?} match {:?}",
            cover.map(show),
            exact.map(show)
        ));
    }
    let last = z.last_id();
    out.push(format!("last {}", show(last)));
    let txt = z
        .rfind_from(last, |n| n.rrset(Rtype::TXT).is_some())
        .map(show);
    out.push(format!("last txt {txt:?}"));
    out.push(format!(
        "serial {} neg {} records {} rrsets {} nodes {} soa {:?} apex ns {:?}",
        z.serial(),
        z.negative_ttl(),
        z.record_count(),
        z.rrset_count(),
        z.node_count(),
        z.soa().first(),
        z.apex_rrset(Rtype::NS).map(|s| s.len())
    ));
    out
}

#[test]
fn base_plus_delta_reads_like_a_fresh_build() {
    let (mut applied, mut refused) = (0, 0);
    for seed in 1..=12u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut merged = start();
        let mut rebuilt = start();
        // The same changes made in place, one version throughout.
        let mut in_place = start();
        for step in 0..120 {
            let cs = random_change(&mut rng, &merged);
            let a = merged.apply(&cs);
            let b = rebuilt.apply_rebuild(&cs);
            match (&a, in_place.apply_mut(&cs)) {
                (Ok(_), Ok(())) => {}
                (Err(_), Err(_)) => assert_eq!(
                    facts(&in_place),
                    facts(&merged),
                    "seed {seed} step {step}: a refused change left the version as it was"
                ),
                (a, c) => panic!(
                    "seed {seed} step {step}: apply {:?}, in place {c:?}",
                    a.as_ref().err()
                ),
            }
            match (a, b) {
                (Ok(a), Ok(b)) => {
                    let (fa, fb) = (facts(&a), facts(&b));
                    if fa != fb {
                        for (x, y) in fa.iter().zip(&fb) {
                            if x != y {
                                panic!(
                                    "seed {seed} step {step}: {cs:?}\n delta:   {x}\n rebuilt: {y}"
                                );
                            }
                        }
                        panic!(
                            "seed {seed} step {step}: {} vs {} facts",
                            fa.len(),
                            fb.len()
                        );
                    }
                    merged = a;
                    rebuilt = b;
                    applied += 1;
                }
                (Err(_), Err(_)) => refused += 1,
                (a, b) => panic!(
                    "seed {seed} step {step}: {cs:?}\n delta {:?}\n rebuilt {:?}",
                    a.err(),
                    b.err()
                ),
            }
        }
        assert!(merged.delta_len() > 0);
        assert_eq!(facts(&in_place), facts(&merged), "seed {seed}: in place");
        // The delta's size kept as it changed is the one a walk finds.
        let (kept, walked) = merged.delta.blob_bytes_kept_and_walked();
        assert_eq!(kept, walked, "seed {seed}");
        let compacted = merged.compact().unwrap();
        assert_eq!(compacted.delta_len(), 0);
        assert_eq!(
            facts(&compacted),
            facts(&rebuilt),
            "seed {seed}: after compaction"
        );
        // The streamed store is the one a fresh build makes, byte for byte.
        let slow = merged.compact_rebuild().unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        compacted.write_snapshot(b"t", &mut a).unwrap();
        slow.write_snapshot(b"t", &mut b).unwrap();
        assert!(
            a == b,
            "seed {seed}: streamed compaction differs from a fresh build"
        );
        // Older versions are untouched by newer ones.
        let again = compacted.apply(&random_change(&mut rng, &compacted));
        if let Ok(again) = again {
            assert_eq!(facts(&compacted), facts(&rebuilt));
            assert_ne!(again.serial(), compacted.serial());
        }
    }
    // Most random changes are valid; the few refused ones (a change that
    // leaves the apex without NS cannot happen; an invalid one is refused
    // by both) must not be what the test mostly sees.
    assert!(
        applied > 10 * refused,
        "{applied} applied, {refused} refused"
    );
}
