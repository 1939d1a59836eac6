use super::super::tests::{add, signing_stage, zone, BASE};
use super::super::*;
use crate::zonemd::{self, Generate};

/// The changesets a sealed transaction journals replay to its version.
fn replays(sealed: &Sealed) {
    let mut v = sealed.base.clone();
    for cs in sealed.changes() {
        apply(&mut v, cs).expect("the journaled changes apply");
    }
    let records = |z: &Zone| {
        let mut r: Vec<String> = z.records().map(|r| format!("{r:?}")).collect();
        r.sort();
        r
    };
    assert_eq!(records(&v), records(&sealed.version));
}

fn zonemd_of(z: &Zone) -> Vec<zonemd::Fields<'_>> {
    z.apex_rrset(Rtype::ZONEMD)
        .map(|s| s.rdatas().filter_map(zonemd::fields).collect())
        .unwrap_or_default()
}

#[test]
fn a_zone_not_signed_here_gets_its_zonemd_with_the_next_serial_then_with_each_change() {
    let stage = Stage {
        zonemd: Generate::Sha384,
        ..Stage::default()
    };
    let loaded = zone(BASE);
    // A transaction of no change of its own (a mark, the journal replayed
    // at start) makes none: the ZONEMD comes when asked for.
    let marked = stage.run(&loaded, Change::ExpiresAt(Some(5)), 0).unwrap();
    assert!(marked.changes().is_empty() && marked.version.apex_rrset(Rtype::ZONEMD).is_none());
    // The first load: the serial policy's next, as Knot's load does.
    let first = stage.run(&loaded, Change::Digest, 0).unwrap();
    assert_eq!(first.version.serial(), 11);
    assert_eq!(zonemd::verify(&first.version), Ok(()));
    let z = zonemd_of(&first.version);
    assert_eq!(
        (z.len(), z[0].serial, z[0].algorithm),
        (1, 11, zonemd::SHA384)
    );
    assert_eq!(
        first.version.apex_rrset(Rtype::ZONEMD).unwrap().ttl(),
        first.version.soa().ttl()
    );
    replays(&first);
    // Nothing to do a second time.
    assert!(stage
        .run(&first.version, Change::Digest, 0)
        .unwrap()
        .is_unchanged());
    assert!(stage
        .run(&first.version, Change::ExpiresAt(Some(5)), 0)
        .unwrap()
        .changes()
        .is_empty());
    // An update: its serial, a fresh digest in the same changeset.
    let up = add("www.example.", [192, 0, 2, 80], None);
    let next = stage.run(&first.version, Change::Update(&up), 0).unwrap();
    assert_eq!(next.version.serial(), 12);
    assert_eq!(next.changes().len(), 1);
    assert_eq!(zonemd::verify(&next.version), Ok(()));
    replays(&next);
    // A zone file with its own serial: raised by one more (Knot's load);
    // the ZONEMD in the served version is not a difference of the file's.
    let file = zone(&format!("{BASE}ftp A 192.0.2.21\n").replace(" 10 ", " 20 "));
    let reloaded = stage
        .run(&next.version, Change::Difference(&file), 0)
        .unwrap();
    assert_eq!(reloaded.version.serial(), 21);
    assert_eq!(zonemd::verify(&reloaded.version), Ok(()));
    replays(&reloaded);
    // SHA-512 asked instead, then `remove`.
    let sha512 = Stage {
        zonemd: Generate::Sha512,
        ..Stage::default()
    };
    let other = sha512.run(&reloaded.version, Change::Digest, 0).unwrap();
    assert_eq!(zonemd_of(&other.version)[0].algorithm, zonemd::SHA512);
    assert_eq!(zonemd::verify(&other.version), Ok(()));
    let remove = Stage {
        zonemd: Generate::Remove,
        ..Stage::default()
    };
    let removed = remove.run(&other.version, Change::Digest, 0).unwrap();
    assert!(removed.version.apex_rrset(Rtype::ZONEMD).is_none());
    assert_eq!(removed.version.serial(), other.version.serial() + 1);
    replays(&removed);
}

#[test]
fn a_signed_zone_gets_a_signed_zonemd_over_its_signatures() {
    let (mut stage, now) = signing_stage("example.");
    stage.zonemd = Generate::Sha384;
    let file = zone(BASE);
    let signed = stage
        .run(&file, Change::Replace(file.clone()), now)
        .unwrap()
        .version;
    assert_eq!(zonemd::verify(&signed), Ok(()));
    lode_dnssec::validate(&signed, now, None).expect("a valid signed zone, ZONEMD signed");
    let sigs = signed.apex_rrset(Rtype::RRSIG).unwrap();
    assert!(sigs
        .rdatas()
        .any(|r| r.get(..2) == Some(&Rtype::ZONEMD.0.to_be_bytes()[..])));
    // An update: signed, then digested; one changeset.
    let up = add("www.example.", [192, 0, 2, 80], None);
    let next = stage.run(&signed, Change::Update(&up), now).unwrap();
    assert_eq!(next.changes().len(), 1);
    assert_eq!(zonemd::verify(&next.version), Ok(()));
    lode_dnssec::validate(&next.version, now, None).expect("valid after the update");
    replays(&next);
    // A whole transfer in from the primary (a secondary signed here): its
    // difference signed, with our next serial, and a fresh digest.
    let primary = zone(&format!("{BASE}ftp A 192.0.2.21\n").replace(" 10 ", " 30 "));
    let transferred = stage
        .run(&next.version, Change::Transfer(primary), now)
        .unwrap();
    assert_eq!(zonemd::verify(&transferred.version), Ok(()));
    lode_dnssec::validate(&transferred.version, now, None).expect("valid after a transfer");
    replays(&transferred);
    // Signed whole again: a fresh digest too.
    let resigned = stage.run(&next.version, Change::Resign, now).unwrap();
    assert_eq!(zonemd::verify(&resigned.version), Ok(()));
    lode_dnssec::validate(&resigned.version, now, None).expect("valid after re-signing");
    // `remove`: the ZONEMD, its signature and its bit in the chain go.
    stage.zonemd = Generate::Remove;
    let removed = stage.run(&resigned.version, Change::Digest, now).unwrap();
    assert!(removed.version.apex_rrset(Rtype::ZONEMD).is_none());
    lode_dnssec::validate(&removed.version, now, None).expect("valid without ZONEMD");
    replays(&removed);
}

#[test]
fn zonemd_verify_refuses_a_file_or_a_transfer_that_does_not_verify() {
    let stage = Stage {
        zonemd_verify: true,
        ..Stage::default()
    };
    let making = Stage {
        zonemd: Generate::Sha512,
        ..Stage::default()
    };
    let good = making.run(&zone(BASE), Change::Digest, 0).unwrap().version;
    let served = zone(BASE);
    // A whole transfer that verifies is taken; one tampered with is not.
    assert!(stage.run(&served, Change::Replace(good.clone()), 0).is_ok());
    let mut b = lode_zonedb::ZoneBuilder::new(good.origin().to_name());
    for r in good.records() {
        let mut r = r.clone();
        if r.rtype == Rtype::A {
            r.rdata = vec![192, 0, 2, 99].into();
        }
        b.add(r, 0);
    }
    let tampered = Arc::new(b.build().unwrap().0);
    let e = stage
        .run(&served, Change::Replace(tampered.clone()), 0)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "ZONEMD verification failed: the digest (hash algorithm 2) does not match the zone's contents"
    );
    // A zone file read again, and one without a ZONEMD.
    assert!(matches!(
        stage.run(&served, Change::Difference(&tampered), 0),
        Err(StageError::Digest(zonemd::VerifyError::Mismatch { .. }))
    ));
    let file = zone(&BASE.replace(" 10 ", " 11 "));
    assert!(matches!(
        stage.run(&served, Change::Difference(&file), 0),
        Err(StageError::Digest(zonemd::VerifyError::Missing))
    ));
}

#[test]
fn changes_transferred_in_get_a_fresh_zonemd_and_are_verified_when_asked() {
    let current = zone(BASE);
    let file = zone(&format!("{BASE}www A 192.0.2.80\n").replace(" 10 ", " 11 "));
    let (cs, _) = difference(&current, &file, SerialPolicy::default(), 0, false, false).unwrap();
    // An IXFR into a secondary that makes its ZONEMD: the primary's
    // serial, the ZONEMD in the same changeset.
    let making = Stage {
        zonemd: Generate::Sha384,
        ..Stage::default()
    };
    let taken = making
        .run(&current, Change::Changesets(std::slice::from_ref(&cs)), 0)
        .unwrap();
    assert_eq!(taken.version.serial(), 11);
    assert_eq!(taken.changes().len(), 1);
    assert_eq!(zonemd::verify(&taken.version), Ok(()));
    replays(&taken);
    // A secondary that verifies: the primary's version has no ZONEMD.
    let verifying = Stage {
        zonemd_verify: true,
        ..Stage::default()
    };
    let refused = verifying.run(&current, Change::Changesets(std::slice::from_ref(&cs)), 0);
    assert!(matches!(
        refused,
        Err(StageError::Digest(zonemd::VerifyError::Missing))
    ));
    // Its changes carrying the primary's ZONEMD: taken.
    let with_zonemd = taken.changes()[0].clone();
    assert!(verifying
        .run(&current, Change::Changesets(&[with_zonemd]), 0)
        .is_ok());
}

#[test]
fn zonemd_verify_refuses_an_update_whose_result_does_not_verify() {
    // As Knot: the update's result is verified before zonemd-generate
    // makes the next digest, so with both set every change is refused...
    let both = Stage {
        zonemd: Generate::Sha384,
        zonemd_verify: true,
        ..Stage::default()
    };
    let served = both.run(&zone(BASE), Change::Digest, 0).unwrap().version;
    assert_eq!(zonemd::verify(&served), Ok(()));
    let req = add("www.example.", [192, 0, 2, 9], None);
    // (The update moved the serial: no ZONEMD is of the new one.)
    assert!(matches!(
        both.run(&served, Change::Update(&req), 0),
        Err(StageError::Digest(zonemd::VerifyError::Unsupported {
            serial: 12
        }))
    ));
    // ... and without a ZONEMD in the zone, it is missing.
    let verifying = Stage {
        zonemd_verify: true,
        ..Stage::default()
    };
    assert!(matches!(
        verifying.run(&zone(BASE), Change::Update(&req), 0),
        Err(StageError::Digest(zonemd::VerifyError::Missing))
    ));
    // An update that changes nothing leaves the served (verified) version.
    let present = add("www2.example.", [192, 0, 2, 9], Some("nowhere.example."));
    assert!(matches!(
        both.run(&served, Change::Update(&present), 0),
        Err(StageError::Update(_))
    ));
    // Without zonemd-verify the update is taken and gets its ZONEMD.
    let making = Stage {
        zonemd: Generate::Sha384,
        ..Stage::default()
    };
    let taken = making.run(&served, Change::Update(&req), 0).unwrap();
    assert_eq!(zonemd::verify(&taken.version), Ok(()));
}
