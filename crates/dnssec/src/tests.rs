//! The signer against its own verifier: every signature checked with the
//! public keys, the NSEC chain rebuilt from scratch and compared, after
//! whole-zone signing and after each change of a long random sequence.

use std::sync::Arc;

use lode_wire::{Name, Record, Rtype};
use lode_zonedb::{Changeset, Zone, ZoneBuilder};

use crate::rrsig::rrsig_info;
use crate::{
    Algorithm, Nsec3, Nsec3Policy, Policy, Round, Signer, SigningKey, KSK_FLAGS, ZSK_FLAGS,
};

pub(crate) const ZONE: &str = "$TTL 300
@ SOA ns host 1 3600 600 86400 60
@ NS ns
ns A 192.0.2.1
www A 192.0.2.80
www AAAA 2001:db8::80
a.b.c TXT \"ent above\"
* TXT wild
sub NS ns.sub
sub DS 12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF
ns.sub A 192.0.2.53
deep.ns.sub A 192.0.2.54
unsigned NS ns.elsewhere.
d DNAME example.net.
";

pub(crate) fn zone(text: &str) -> Zone {
    let origin: Name = "example.".parse().unwrap();
    let parsed = lode_zonefile::parse_str(text, "test", &origin).expect("zone text");
    let mut b = ZoneBuilder::new(origin);
    for r in parsed.records {
        b.add(r, 0);
    }
    b.build().expect("zone").0
}

fn signer(alg: Algorithm, csk: bool) -> Signer {
    signer_with(alg, csk, Policy::default())
}

fn nsec3_policy(salt_length: u8, opt_out: bool) -> Policy {
    Policy {
        nsec3: Some(Nsec3Policy {
            iterations: 0,
            salt_length,
            opt_out,
            ..Nsec3Policy::default()
        }),
        ..Policy::default()
    }
}

fn signer_with(alg: Algorithm, csk: bool, policy: Policy) -> Signer {
    let origin: Name = "example.".parse().unwrap();
    let mut keys = vec![SigningKey::generate(&origin, alg, KSK_FLAGS, 0).unwrap()];
    if !csk {
        keys.push(SigningKey::generate(&origin, alg, ZSK_FLAGS, 0).unwrap());
    }
    Signer::new(&origin, keys, policy).unwrap()
}

const NOW: u64 = 1_764_000_000;

/// The zone checked whole at NOW (see `check::verify`).
fn verify(zone: &Zone, signer: &Signer) -> Result<(), String> {
    verify_at(zone, signer, NOW)
}

/// The zone checked whole at `at` by the signer's verifier, and by the
/// validator of zones signed elsewhere (`dnssec-validation`): both must
/// take every version the signer makes.
pub(crate) fn verify_at(zone: &Zone, signer: &Signer, at: u64) -> Result<(), String> {
    crate::check::verify(zone, signer, at)?;
    crate::validate(zone, at, None).map_err(|e| format!("validate: {e}"))
}

#[test]
fn a_zone_signed_whole_verifies() {
    let z = zone(ZONE);
    for (alg, csk) in [(Algorithm::EcdsaP256, false), (Algorithm::Ed25519, true)] {
        let s = signer(alg, csk);
        let signed = s.sign_zone(&z, None, NOW).unwrap();
        verify(&signed, &s).unwrap();
        assert!(s.is_current(&signed, NOW));
        assert!(!s.is_current(&z, NOW));
        // Glue, names below a DNAME and the unsigned delegation's NS are
        // not signed; the DS at `sub` is.
        let ns_sub = signed
            .find("ns.sub.example.".parse::<Name>().unwrap().as_ref())
            .unwrap();
        assert!(signed.node(ns_sub).rrset(Rtype::RRSIG).is_none());
        let sub = signed
            .find("sub.example.".parse::<Name>().unwrap().as_ref())
            .unwrap();
        let covered: Vec<_> = signed
            .node(sub)
            .rrset(Rtype::RRSIG)
            .unwrap()
            .rdatas()
            .map(|r| rrsig_info(r).unwrap().covered)
            .collect();
        assert!(covered.contains(&Rtype::DS) && !covered.contains(&Rtype::NS));
        // Signing again a signed zone gives the same names and types.
        let again = s.sign_zone(&signed, None, NOW).unwrap();
        assert_eq!(again.record_count(), signed.record_count());
    }
}

#[test]
fn signers_count_into_the_count_they_are_given() {
    let count = Arc::new(crate::SignatureCount::default());
    let a = signer(Algorithm::Ed25519, true).counting_into(count.clone());
    let b = signer(Algorithm::Ed25519, true).counting_into(count.clone());
    let alone = signer(Algorithm::Ed25519, true);
    let signed = a.sign_zone(&zone(ZONE), None, NOW).unwrap();
    let made = signed.records().filter(|r| r.rtype == Rtype::RRSIG).count() as u64;
    assert!(made > 0);
    assert_eq!((count.get(), a.progress().made()), (made, made));
    b.sign_zone(&zone(ZONE), None, NOW).unwrap();
    alone.sign_zone(&zone(ZONE), None, NOW).unwrap();
    assert_eq!(
        count.get(),
        2 * made,
        "a signer not given it does not count"
    );
    assert_eq!(alone.progress().made(), made);
}

/// A small deterministic generator (no crate needed for a test's dice).
struct Dice(u64);

impl Dice {
    fn next(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

pub(crate) fn soa(zone: &Zone, serial: u32) -> Record {
    let mut r = zone.soa_record();
    let n = r.rdata.len();
    let mut rdata = r.rdata.to_vec();
    rdata[n - 20..n - 16].copy_from_slice(&serial.to_be_bytes());
    r.rdata = rdata.into();
    r
}

#[test]
fn every_change_of_a_random_sequence_leaves_the_zone_verified() {
    random_sequence(&signer(Algorithm::EcdsaP256, false));
}

#[test]
fn every_change_of_a_random_sequence_leaves_an_nsec3_zone_verified() {
    random_sequence(&signer_with(
        Algorithm::EcdsaP256,
        false,
        nsec3_policy(8, false),
    ));
}

#[test]
fn every_change_of_a_random_sequence_leaves_an_nsec3_opt_out_zone_verified() {
    random_sequence(&signer_with(
        Algorithm::Ed25519,
        true,
        nsec3_policy(0, true),
    ));
}

#[test]
fn nsec3_zones_signed_whole_verify() {
    let z = zone(ZONE);
    for opt_out in [false, true] {
        let s = signer_with(Algorithm::EcdsaP256, false, nsec3_policy(4, opt_out));
        let signed = s.sign_zone(&z, None, NOW).unwrap();
        verify(&signed, &s).unwrap();
        assert!(s.is_current(&signed, NOW));
        let n = Nsec3::of_zone(&signed).unwrap();
        assert_eq!(n.salt.len(), 4);
        assert_eq!(n.opt_out, opt_out);
        let nsec3s = signed.records().filter(|r| r.rtype == Rtype::NSEC3).count();
        // Names: apex, ns, www, a.b.c, b.c, c (ENTs), *, sub, ns.sub is
        // glue, unsigned (insecure: out with opt-out), d.
        assert_eq!(nsec3s, if opt_out { 9 } else { 10 });
        assert_eq!(
            signed.records().filter(|r| r.rtype == Rtype::NSEC).count(),
            0
        );
        // Signed again, the salt stays (a new salt is a new chain).
        let again = s.sign_zone(&signed, None, NOW).unwrap();
        assert_eq!(Nsec3::of_zone(&again).unwrap().salt, n.salt);
        // An NSEC signer does not take it as current.
        assert!(!signer(Algorithm::EcdsaP256, false).is_current(&signed, NOW));
    }
}

fn random_sequence(s: &Signer) {
    let mut current = Arc::new(s.sign_zone(&zone(ZONE), None, NOW).unwrap());
    verify(&current, s).unwrap();
    let origin: Name = "example.".parse().unwrap();
    let names = [
        "www",
        "a.b.c",
        "b.c",
        "c",
        "new",
        "x.new",
        "y.x.new",
        "sub",
        "in.sub",
        "ns.sub",
        "*",
        "q.*",
        "d",
        "x.d",
        "z",
        "zz.z",
        "unsigned",
        "e.unsigned",
    ];
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15);
    let mut applied = 0;
    let mut removals = 0;
    for step in 0..600 {
        let name: Name = Name::parse(names[dice.next(names.len())], Some(&origin)).unwrap();
        let kind = dice.next(10);
        let (rtype, rdata): (Rtype, Vec<u8>) = match kind {
            0 => (
                Rtype::NS,
                "ns.example.".parse::<Name>().unwrap().as_wire().to_vec(),
            ),
            1 => (
                Rtype::DNAME,
                "example.org.".parse::<Name>().unwrap().as_wire().to_vec(),
            ),
            2 => (Rtype::DS, vec![0x30, 0x39, 13, 2, 1, 2, 3, 4]),
            3 | 4 => (Rtype::TXT, vec![3, b'a' + dice.next(2) as u8, b'b', b'c']),
            _ => (Rtype::A, vec![192, 0, 2, dice.next(2) as u8]),
        };
        let node = current.find(name.as_ref()).map(|id| current.node(id));
        let exists = node
            .as_ref()
            .and_then(|n| n.rrset(rtype))
            .is_some_and(|set| set.rdatas().any(|r| *r == *rdata));
        let record = Record {
            owner: name.clone(),
            class: current.class(),
            rtype,
            ttl: 300,
            rdata: rdata.into(),
        };
        let serial = current.serial() + 1;
        let cs = Changeset {
            soa_from: current.soa_record(),
            soa_to: soa(&current, serial),
            removed: if exists { vec![record.clone()] } else { vec![] },
            added: if exists { vec![] } else { vec![record] },
        };
        let (next, signed) = match s.sign_change(&current, &cs, NOW) {
            Ok(x) => x,
            // A change the zone refuses (CNAME-like conflicts, DNAME with
            // data below…) is refused before any signing.
            Err(crate::SignError::Apply(_)) => continue,
            Err(e) => panic!("step {step}: {e}"),
        };
        if let Err(e) = verify(&next, s) {
            panic!(
                "step {step}: {} {rtype} {}: {e}",
                if exists { "-" } else { "+" },
                name
            );
        }
        // What a validating secondary checks of such a change: the names
        // it touched (and the chain around them) pass.
        let touched: Vec<Name> = signed
            .removed
            .iter()
            .chain(&signed.added)
            .map(|r| r.owner.clone())
            .collect();
        if let Err(e) = crate::validate(&next, NOW, Some(&touched)) {
            panic!("step {step}: the change's check: {e}");
        }
        // The journaled changeset replays to the same version.
        let replayed = current.apply(&signed).unwrap();
        let a: Vec<_> = replayed.records().collect();
        let b: Vec<_> = next.records().collect();
        assert_eq!(a, b, "step {step}");
        current = Arc::new(next);
        applied += 1;
        removals += usize::from(exists);
    }
    // Most changes apply (the rest are refused as the zone builder refuses them).
    assert!(applied > 400, "{applied} of 600 applied");
    assert!(removals > 100, "{removals} removals");
}

pub(crate) fn change(current: &Zone, removed: Vec<Record>, added: Vec<Record>) -> Changeset {
    Changeset {
        soa_from: current.soa_record(),
        soa_to: soa(current, current.serial() + 1),
        removed,
        added,
    }
}

pub(crate) fn txt(owner: &str, text: &str) -> Record {
    let mut rdata = vec![text.len() as u8];
    rdata.extend_from_slice(text.as_bytes());
    Record {
        owner: owner.parse().unwrap(),
        class: lode_wire::Class::IN,
        rtype: Rtype::TXT,
        ttl: 300,
        rdata: rdata.into(),
    }
}

#[test]
fn a_name_added_then_taken_away_leaves_no_signature_behind() {
    let s = signer(Algorithm::EcdsaP256, false);
    let z0 = s.sign_zone(&zone(ZONE), None, NOW).unwrap();
    let r = txt("x.y.z.example.", "hello");
    let (z1, _) = s
        .sign_change(&z0, &change(&z0, vec![], vec![r.clone()]), NOW)
        .unwrap();
    verify(&z1, &s).unwrap();
    let (z2, cs) = s
        .sign_change(&z1, &change(&z1, vec![r], vec![]), NOW)
        .unwrap();
    verify(&z2, &s).unwrap();
    assert!(z2
        .find("x.y.z.example.".parse::<Name>().unwrap().as_ref())
        .is_none());
    // The change carries the name's NSEC and signatures away, and mends the
    // NSEC before it.
    assert!(cs.removed.iter().any(|r| r.rtype == Rtype::NSEC));
    assert!(cs.added.iter().any(|r| r.rtype == Rtype::NSEC));
    assert_eq!(z2.record_count(), z0.record_count());
}

#[test]
fn due_signatures_are_made_again_in_batches_that_cover_the_zone() {
    let s = signer(Algorithm::EcdsaP256, false);
    let mut z = s.sign_zone(&zone(ZONE), None, NOW).unwrap();
    let policy = s.policy().clone();
    // Not due yet: nothing, and the time they fall due.
    let due = s.due(&z, &mut Round::default(), NOW, 3);
    assert!(due.owners.is_empty());
    let falls_due = NOW + u64::from(policy.rrsig_lifetime - policy.rrsig_refresh);
    assert_eq!(due.next, Some(falls_due + s.jitter()));
    // All due: batches of 3 names from where the last ended, each verified
    // (at a time every signature, old or new, is valid), until none is due.
    let later = falls_due + 10;
    let mut round = Round::default();
    let mut batches = 0;
    loop {
        let due = s.due(&z, &mut round, later, 3);
        if due.owners.is_empty() {
            assert!(due.round_over);
            assert!(due.next.unwrap() > later);
            break;
        }
        assert!(due.owners.len() <= 3);
        let serial = z.serial() + 1;
        let (next, cs) = s.refresh(&z, &due.owners, soa(&z, serial), later).unwrap();
        assert_eq!(cs.serial_to(), serial);
        verify_at(&next, &s, later).unwrap();
        z = next;
        batches += 1;
        assert!(batches < 50, "the batches never end");
    }
    assert!(batches >= 3, "{batches} batches");
    // Every signature now outlives the first ones' expiry.
    verify_at(&z, &s, NOW + u64::from(policy.rrsig_lifetime) + 5).unwrap();
}

#[test]
fn a_round_is_read_a_bounded_number_of_names_at_a_time() {
    // A zone read 5 names a call: nothing due, the round takes
    // ceil(names / 5) calls, each but the last says "go on now", and the
    // last finds what one reading of the whole zone finds.
    let s = signer(Algorithm::EcdsaP256, false);
    let mut z = s.sign_zone(&zone(ZONE), None, NOW).unwrap();
    let policy = s.policy().clone();
    let names = z.node_count();
    assert!(names > 10, "{names} names");
    let mut round = Round::reading(5);
    for call in 1..=names.div_ceil(5) {
        let due = s.due(&z, &mut round, NOW, 1);
        assert!(due.owners.is_empty());
        if call < names.div_ceil(5) {
            assert_eq!(
                (due.next, due.round_over),
                (Some(NOW), false),
                "call {call}"
            );
        } else {
            assert!(due.round_over, "call {call}");
            let whole = s.due(&z, &mut Round::default(), NOW, 1);
            assert_eq!(due.earliest_expiry, whole.earliest_expiry);
            assert_eq!(due.next, whole.next);
        }
    }
    // All due: batches of 2 names, 5 read a call, until a round finds none.
    let later = NOW + u64::from(policy.rrsig_lifetime - policy.rrsig_refresh) + 10;
    let mut calls = 0;
    loop {
        let due = s.due(&z, &mut round, later, 2);
        calls += 1;
        assert!(calls < 200, "the round never ends");
        if due.owners.is_empty() && due.round_over {
            assert!(due.next.unwrap() > later);
            break;
        }
        if !due.owners.is_empty() {
            let serial = z.serial() + 1;
            z = s
                .refresh(&z, &due.owners, soa(&z, serial), later)
                .unwrap()
                .0;
        }
    }
    verify_at(&z, &s, NOW + u64::from(policy.rrsig_lifetime) + 5).unwrap();
}

#[test]
fn zones_signed_together_are_signed_again_spread() {
    // 200 zones signed at one time: each waits its own delay, within a
    // quarter of the refresh window, past the time its signatures fall due.
    let policy = Policy::default();
    let span = u64::from(policy.rrsig_refresh) / 4;
    let mut delays: Vec<u64> = (0..200)
        .map(|i| {
            let origin: Name = format!("zone{i}.example.").parse().unwrap();
            let key = SigningKey::generate(&origin, Algorithm::Ed25519, KSK_FLAGS, 0).unwrap();
            Signer::new(&origin, vec![key], policy.clone())
                .unwrap()
                .jitter()
        })
        .collect();
    assert!(delays.iter().all(|&d| d <= span));
    delays.sort_unstable();
    delays.dedup();
    assert!(delays.len() > 190, "{} distinct delays", delays.len());
    // Half of them in each half of the span, give or take.
    let low = delays.iter().filter(|&&d| d < span / 2).count();
    assert!((60..=140).contains(&low), "{low} in the first half");
}

#[test]
fn a_batch_that_takes_every_due_signature_still_has_a_next_time() {
    // A small zone: all its signatures fall due at once and fit one batch.
    // The next time is when the signatures made by that batch fall due
    // (there was none, and the zone's signatures ran out after the first
    // refresh).
    let s = signer(Algorithm::EcdsaP256, false);
    let z = s.sign_zone(&zone(ZONE), None, NOW).unwrap();
    let policy = s.policy().clone();
    let later = NOW + u64::from(policy.rrsig_lifetime);
    let due = s.due(&z, &mut Round::default(), later, 1000);
    assert!(!due.owners.is_empty());
    let renewed = later + u64::from(policy.rrsig_lifetime);
    assert_eq!(due.earliest_expiry, Some(renewed));
    assert_eq!(
        due.next,
        Some(renewed - u64::from(policy.rrsig_refresh) + s.jitter())
    );
    // Nothing due: the earliest expiry is that of the zone's signatures.
    let due = s.due(&z, &mut Round::default(), NOW, 1000);
    assert!(due.owners.is_empty());
    assert_eq!(
        due.earliest_expiry,
        s.earliest_expiry(&z).map(u64::from),
        "{due:?}"
    );
}

#[test]
fn a_group_of_changes_merged_and_signed_in_one_pass_verifies() {
    for s in [
        signer(Algorithm::EcdsaP256, false),
        signer_with(Algorithm::EcdsaP256, false, nsec3_policy(0, false)),
    ] {
        let mut current = s.sign_zone(&zone(ZONE), None, NOW).unwrap();
        let mut dice = Dice(42);
        for round in 0..20 {
            // Five changes, each made on the version before (unsigned), as a
            // writer stages a group; then one signing pass over their merge.
            let mut version = current.clone();
            let mut group = Vec::new();
            for i in 0..5 {
                let name = format!("n{}.g{}.example.", dice.next(4), dice.next(2));
                let r = txt(&name, if i % 2 == 0 { "x" } else { "y" });
                let exists = version
                    .find(r.owner.as_ref())
                    .and_then(|id| {
                        version
                            .node(id)
                            .rrset(Rtype::TXT)
                            .map(|s| s.rdatas().any(|d| *d == *r.rdata))
                    })
                    .unwrap_or(false);
                let cs = if exists {
                    change(&version, vec![r], vec![])
                } else {
                    change(&version, vec![], vec![r])
                };
                version = version.apply(&cs).unwrap();
                group.push(cs);
            }
            let merged = Changeset::merge(group).unwrap();
            let (next, signed) = s.sign_change(&current, &merged, NOW).unwrap();
            verify(&next, &s).unwrap_or_else(|e| panic!("round {round}: {e}"));
            assert_eq!(next.serial(), current.serial() + 5);
            let replayed: Vec<_> = current.apply(&signed).unwrap().records().collect();
            assert_eq!(replayed, next.records().collect::<Vec<_>>());
            current = next;
        }
    }
}

/// A version with a delta (names added since its base, their node ids
/// not in canonical order) signed whole, NSEC and NSEC3: every name in
/// the chain.
#[test]
fn a_version_with_names_added_since_its_base_is_signed_whole() {
    let base = zone(ZONE);
    let mut soa = base.soa_record();
    lode_zonedb::set_soa_serial(&mut soa, 2);
    let added = [
        "aaa.example.",
        "mmm.example.",
        "zzz.example.",
        "b.a.b.c.example.",
    ]
    .iter()
    .map(|o| Record {
        owner: o.parse().unwrap(),
        class: lode_wire::Class::IN,
        rtype: Rtype::A,
        ttl: 300,
        rdata: vec![192, 0, 2, 7].into(),
    })
    .collect();
    let changed = base
        .apply(&Changeset {
            soa_from: base.soa_record(),
            soa_to: soa,
            removed: vec![],
            added,
        })
        .unwrap();
    assert!(changed.delta_len() > 0);
    for s in [
        signer(Algorithm::EcdsaP256, false),
        signer_with(Algorithm::EcdsaP256, false, nsec3_policy(0, false)),
    ] {
        let signed = s.sign_zone(&changed, None, NOW).unwrap();
        verify(&signed, &s).unwrap();
    }
}

#[test]
fn the_bare_zone_made_by_a_change_is_the_one_a_copy_makes() {
    let s = signer_with(Algorithm::EcdsaP256, false, nsec3_policy(4, true));
    let own = s.own_cds_rdatas();
    let ours = |t: Rtype, r: &[u8]| crate::signer::is_signer_type(t) || s.owns_cds(t, r, &own);
    let unsigned = zone(ZONE);
    let signed = s.sign_zone(&unsigned, None, NOW).unwrap();
    // A few names signed elsewhere: the zone is made bare by a change.
    let stray = zone(&format!(
        "{ZONE}www RRSIG A 13 2 300 20300101000000 20200101000000 1 example. AAAA\n\
         www NSEC ns.example. A AAAA RRSIG NSEC\n"
    ));
    for (z, by_change) in [(&unsigned, true), (&stray, true), (&signed, false)] {
        let nsec3 = s.policy().nsec3.as_ref().map(|p| Nsec3::for_zone(z, p));
        let change = s.bare_change(z, Some(7), nsec3.as_ref(), &ours, 1);
        assert_eq!(change.is_some(), by_change, "{}", z.record_count());
        let bare = s.bare(z, Some(7), nsec3.as_ref()).unwrap();
        let copy = s.bare_copy(z, Some(7), nsec3.as_ref(), &ours).unwrap();
        let records = |z: &Zone| -> Vec<Record> { z.records().collect() };
        assert_eq!(records(&bare), records(&copy));
        assert_eq!(bare.serial(), 7);
        assert!(bare.apex_rrset(Rtype::DNSKEY).is_some());
        assert!(bare.apex_rrset(Rtype::NSEC3PARAM).is_some());
        // By a change (these zones are small enough for it, signed or
        // not), the bare zone is the zone's next version, its base shared.
        assert!(bare.delta_len() > 0);
    }
}

#[test]
fn reproducible_signing_gives_the_same_signatures_twice() {
    let origin: Name = "example.".parse().unwrap();
    let ksk = SigningKey::generate(&origin, Algorithm::EcdsaP256, KSK_FLAGS, 0).unwrap();
    let pkcs8_text = ksk.to_file_text();
    let dir = std::env::temp_dir().join(format!("lode-repro-{}", std::process::id()));
    let path = ksk.write(&dir).unwrap();
    let again = || SigningKey::read(&path).unwrap();
    let policy = Policy {
        reproducible_signing: true,
        ..Policy::default()
    };
    let a = Signer::new(&origin, vec![again()], policy.clone()).unwrap();
    let b = Signer::new(&origin, vec![again()], policy).unwrap();
    let za = a.sign_zone(&zone(ZONE), None, NOW).unwrap();
    let zb = b.sign_zone(&zone(ZONE), None, NOW).unwrap();
    verify(&za, &a).unwrap();
    let sigs =
        |z: &Zone| -> Vec<Record> { z.records().filter(|r| r.rtype == Rtype::RRSIG).collect() };
    assert_eq!(sigs(&za), sigs(&zb));
    // Without it, ECDSA signatures differ from one signing to the next.
    let c = Signer::new(&origin, vec![again()], Policy::default()).unwrap();
    let zc = c.sign_zone(&zone(ZONE), None, NOW).unwrap();
    verify(&zc, &c).unwrap();
    assert_ne!(sigs(&za), sigs(&zc));
    assert!(pkcs8_text.contains("pkcs8:"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn whole_signing_counts_its_progress_to_the_end() {
    let z = zone(ZONE);
    let s = signer_with(
        Algorithm::EcdsaP256,
        false,
        Policy {
            signing_threads: 3,
            ..nsec3_policy(0, false)
        },
    );
    let p = s.progress();
    assert_eq!(p.get(), None);
    let signed = s.sign_zone(&z, None, NOW).unwrap();
    assert_eq!(p.get(), None, "not running once done");
    let (done, total) = p.counts();
    let chain = signed.records().filter(|r| r.rtype == Rtype::NSEC3).count() as u64;
    assert!(total > chain, "names and chain records: {total}");
    assert_eq!(done, total);
}

#[test]
fn a_zone_signed_with_generated_rsa_keys_validates() {
    let z = zone(ZONE);
    let s = signer(Algorithm::RsaSha256, false);
    assert!(s.keys().iter().all(|k| k.algorithm == Algorithm::RsaSha256));
    let signed = s.sign_zone(&z, None, NOW).unwrap();
    // (check::verify sees RSA signatures present; validate verifies them.)
    verify(&signed, &s).unwrap();
    let origin: Name = "example.".parse().unwrap();
    for bits in [1024, 8192] {
        let e = SigningKey::generate_sized(&origin, Algorithm::RsaSha256, ZSK_FLAGS, Some(bits), 0);
        assert!(e.is_err(), "{bits} bits refused");
    }
    let e = SigningKey::generate_sized(&origin, Algorithm::EcdsaP256, ZSK_FLAGS, Some(384), 0);
    assert!(e.is_err(), "a P-256 key is 256 bits");
}

#[test]
fn the_validator_finds_what_is_wrong_with_a_signed_zone() {
    let z = zone(ZONE);
    let www: Name = "www.example.".parse().unwrap();
    for policy in [
        Policy::default(),
        nsec3_policy(8, false),
        nsec3_policy(0, true),
    ] {
        let s = signer_with(Algorithm::EcdsaP256, false, policy);
        let signed = s.sign_zone(&z, None, NOW).unwrap();
        crate::validate(&signed, NOW, None).unwrap();
        crate::validate(&signed, NOW, Some(std::slice::from_ref(&www))).unwrap();
        // Signatures past their expiration, or not yet valid.
        assert!(crate::validate(&signed, NOW + 30 * 86400, None).is_err());
        assert!(crate::validate(&signed, NOW - 86400, None).is_err());
        // A record changed without signing: its RRset's signature fails
        // (found by the whole check and by the check of the name).
        let mut a = txt("www.example.", "x");
        a.rtype = Rtype::A;
        a.rdata = vec![192, 0, 2, 81].into();
        let mut b = a.clone();
        b.rdata = vec![192, 0, 2, 80].into();
        // (the SOA kept as it is, signed)
        let same_soa = |removed, added| Changeset {
            soa_from: signed.soa_record(),
            soa_to: signed.soa_record(),
            removed,
            added,
        };
        let tampered = signed.apply(&same_soa(vec![b], vec![a])).unwrap();
        let e = crate::validate(&tampered, NOW, None).unwrap_err();
        assert!(e.contains("www.example. A"), "{e}");
        assert!(crate::validate(&tampered, NOW, Some(std::slice::from_ref(&www))).is_err());
        // A chain record taken away.
        let chain = if s.policy().nsec3.is_some() {
            Rtype::NSEC3
        } else {
            Rtype::NSEC
        };
        let gone = signed
            .records()
            .find(|r| r.rtype == chain && r.owner.as_ref() != signed.origin())
            .unwrap();
        let owner = gone.owner.clone();
        let broken = signed.apply(&same_soa(vec![gone], vec![])).unwrap();
        let e = crate::validate(&broken, NOW, None).unwrap_err();
        assert!(e.contains("NSEC"), "{e}");
        let e = crate::validate(&broken, NOW, Some(std::slice::from_ref(&owner))).unwrap_err();
        assert!(e.contains("NSEC"), "{e}");
        // A name added without its chain record or signature.
        let new: Name = "new.example.".parse().unwrap();
        let added = signed
            .apply(&same_soa(vec![], vec![txt("new.example.", "n")]))
            .unwrap();
        let e = crate::validate(&added, NOW, None).unwrap_err();
        assert!(e.contains("new.example.") || e.contains("NSEC"), "{e}");
        assert!(crate::validate(&added, NOW, Some(std::slice::from_ref(&new))).is_err());
        // A name taken away with its chain record and signatures, the
        // chain not mended: the record before it still points at it.
        let id = signed.find(www.as_ref()).unwrap();
        let mut taken: Vec<Record> = crate::nsec::records_of(&signed, id, Rtype::A);
        taken.extend(crate::nsec::records_of(&signed, id, Rtype::AAAA));
        taken.extend(crate::nsec::records_of(&signed, id, Rtype::RRSIG));
        taken.extend(crate::nsec::records_of(&signed, id, Rtype::NSEC));
        let mut touched = vec![www.clone()];
        if let Some(n) = crate::Nsec3::of_zone(&signed) {
            let h = n.owner(&signed, www.as_ref()).unwrap();
            let hid = signed.find(h.as_ref()).unwrap();
            taken.extend(crate::nsec::records_of(&signed, hid, Rtype::NSEC3));
            taken.extend(crate::nsec::records_of(&signed, hid, Rtype::RRSIG));
            touched.push(h);
        }
        let unmended = signed.apply(&same_soa(taken, vec![])).unwrap();
        assert!(crate::validate(&unmended, NOW, None).is_err());
        let e = crate::validate(&unmended, NOW, Some(&touched)).unwrap_err();
        assert!(e.contains("NSEC"), "{e}");
        // A name added, signed, with its own chain record, but the chain
        // record before it not mended (it still points past the new name).
        let new_name: Name = "m.example.".parse().unwrap();
        let add = change(&signed, vec![], vec![txt("m.example.", "m")]);
        let (_, cs) = s.sign_change(&signed, &add, NOW).unwrap();
        let hashed =
            crate::Nsec3::of_zone(&signed).and_then(|n| n.owner(&signed, new_name.as_ref()));
        let origin: Name = signed.origin().to_name();
        let own = |r: &Record| {
            r.owner == new_name || Some(&r.owner) == hashed.as_ref() || r.owner == origin
        };
        let partial = Changeset {
            removed: cs.removed.iter().filter(|r| own(r)).cloned().collect(),
            added: cs.added.iter().filter(|r| own(r)).cloned().collect(),
            ..cs.clone()
        };
        assert!(partial.removed.len() + partial.added.len() < cs.removed.len() + cs.added.len());
        let unmended = signed.apply(&partial).unwrap();
        let touched: Vec<Name> = partial
            .removed
            .iter()
            .chain(&partial.added)
            .map(|r| r.owner.clone())
            .collect();
        assert!(crate::validate(&unmended, NOW, None).is_err());
        let e = crate::validate(&unmended, NOW, Some(&touched)).unwrap_err();
        assert!(e.contains("NSEC"), "{e}");
    }
}

/// A salt chosen for the next whole signing (nsec3-salt-lifetime) is that
/// signing's alone: the zone signed with it has the new chain, while a
/// change to a zone that still has the old salt mends the old chain — no
/// version mixes two salts.
#[test]
fn a_chosen_salt_is_for_whole_signing_and_changes_keep_the_zones() {
    let old_policy = nsec3_policy(8, false);
    let signer = signer_with(Algorithm::EcdsaP256, false, old_policy.clone());
    let signed = signer.sign_zone(&zone(ZONE), None, NOW).unwrap();
    verify(&signed, &signer).unwrap();
    let old = Nsec3::of_zone(&signed).unwrap().salt;
    let new = vec![0xab; 8];
    let mut chosen = old_policy;
    chosen.nsec3.as_mut().unwrap().salt = Some(new.clone());
    let origin: Name = "example.".parse().unwrap();
    let keys = signer
        .keys()
        .iter()
        .map(|k| k.try_clone().unwrap())
        .collect();
    let resalting = Signer::new(&origin, keys, chosen).unwrap();
    assert!(signer.is_current(&signed, NOW));
    assert!(
        !resalting.is_current(&signed, NOW),
        "a new salt is a new chain"
    );
    let p = resalting.policy().nsec3.as_ref().unwrap();
    assert_eq!(Nsec3::for_zone(&signed, p).salt, new);
    assert_eq!(Nsec3::for_change(&signed, p).salt, old);
    // A change before the whole signing: the old chain, mended.
    let cs = change(&signed, vec![], vec![txt("fresh.example.", "x")]);
    let (changed, _) = resalting.sign_change(&signed, &cs, NOW).unwrap();
    assert_eq!(Nsec3::of_zone(&changed).unwrap().salt, old);
    verify(&changed, &signer).unwrap();
    // The whole signing: the new chain only.
    let resalted = resalting.sign_zone(&changed, None, NOW).unwrap();
    assert_eq!(Nsec3::of_zone(&resalted).unwrap().salt, new);
    verify(&resalted, &resalting).unwrap();
    assert!(resalting.is_current(&resalted, NOW));
}
