use super::*;
use lode_zonedb::ZoneBuilder;

pub(super) fn zone(text: &str) -> Arc<Zone> {
    let origin: lode_wire::Name = "example.".parse().unwrap();
    let parsed = lode_zonefile::parse_str(text, "test", &origin).expect("zone text");
    let mut b = ZoneBuilder::new(origin);
    for r in parsed.records {
        b.add(r, 0);
    }
    Arc::new(b.build().expect("zone").0)
}

pub(super) const BASE: &str =
    "$TTL 300\n@ SOA ns host 10 3600 600 86400 300\n@ NS ns\nns A 192.0.2.1\n";

/// An UPDATE of example. adding `owner A addr` (or, with `exists`,
/// requiring that `owner` exists first).
pub(super) fn add(owner: &str, addr: [u8; 4], exists: Option<&str>) -> UpdateRequest {
    let name = |s: &str| -> lode_wire::Name { s.parse().unwrap() };
    let rec = Record {
        owner: name(owner),
        class: lode_wire::Class::IN,
        rtype: Rtype::A,
        ttl: 300,
        rdata: addr.as_slice().into(),
    };
    let pre: Vec<Record> = exists
        .map(|o| Record {
            owner: name(o),
            class: lode_wire::Class::ANY,
            rtype: Rtype::ANY,
            ttl: 0,
            rdata: Default::default(),
        })
        .into_iter()
        .collect();
    let msg = update::encode_update(1, &name("example."), &pre, &[rec]);
    update::parse_update(&msg).expect("an update")
}

pub(super) fn signing_stage(origin: &str) -> (Stage, u64) {
    use lode_dnssec::{Algorithm, Policy, SigningKey, KSK_FLAGS, ZSK_FLAGS};
    let origin: lode_wire::Name = origin.parse().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let keys = [KSK_FLAGS, ZSK_FLAGS]
        .map(|f| SigningKey::generate(&origin, Algorithm::EcdsaP256, f, now).unwrap());
    let signer = Signer::new(&origin, Vec::from(keys), Policy::default()).unwrap();
    (
        Stage::signed(SerialPolicy::default(), Arc::new(signer)),
        now,
    )
}

#[test]
fn a_file_difference_is_a_changeset_that_replays_to_the_file() {
    let current = zone(BASE);
    let file = zone(&format!("{BASE}www A 192.0.2.80\n").replace(" 10 ", " 11 "));
    let stage = Stage::default();
    let mut txn = stage.begin(&current, 0);
    let applied = txn.apply(Change::Difference(&file)).unwrap().unwrap();
    assert_eq!(applied.serial_raised, None);
    assert_eq!((applied.from, applied.to, applied.added), (10, 11, 1));
    let sealed = txn.seal().unwrap();
    let changes = sealed.changes().to_vec();
    assert_eq!(changes.len(), 1);
    assert_eq!((changes[0].serial_from(), changes[0].serial_to()), (10, 11));
    assert!(Arc::ptr_eq(&sealed.base, &current));
    // Replayed (as the journal would be at start), the same version.
    let again = Stage::default()
        .run(&current, Change::Changesets(&changes), 0)
        .unwrap();
    let a: Vec<_> = sealed.version.records().collect();
    let b: Vec<_> = again.version.records().collect();
    assert_eq!(a, b);
    // The same file again: nothing to do.
    let same = Stage::default()
        .run(&sealed.version, Change::Difference(&file), 0)
        .unwrap();
    assert!(same.is_unchanged());
    assert_eq!(same.version.serial(), 11);
}

#[test]
fn a_transaction_advances_in_place_and_stays_on_a_refusal() {
    let published = zone(BASE);
    let stage = Stage::default();
    let mut txn = stage.begin(&published, 0);
    for (serial, name) in [(11, "a"), (12, "b")] {
        let file =
            zone(&format!("{BASE}{name} A 192.0.2.9\n").replace(" 10 ", &format!(" {serial} ")));
        assert!(txn.apply(Change::Difference(&file)).unwrap().is_some());
    }
    assert_eq!(txn.version().serial(), 12);
    // The published version was not touched by the transaction.
    assert_eq!(published.serial(), 10);
    assert_eq!(published.records().count(), 3);
    // A change that does not apply (an update whose prerequisite
    // fails) leaves the transaction as it was; the next one goes on.
    let before: Vec<_> = txn.version().records().collect();
    assert!(matches!(
        txn.apply(Change::Update(&add(
            "c.example.",
            [192, 0, 2, 3],
            Some("nx.example.")
        ))),
        Err(StageError::Update(_))
    ));
    assert_eq!(txn.version().records().collect::<Vec<_>>(), before);
    txn.apply(Change::Update(&add("c.example.", [192, 0, 2, 3], None)))
        .unwrap();
    let sealed = txn.seal().unwrap();
    assert_eq!(sealed.version.serial(), 13);
    let journal = sealed.changes().to_vec();
    assert_eq!(journal.len(), 3);
    // Changesets that do not follow are refused whole: two, the
    // second not applying, and none of them stays.
    let mut two = journal[..2].to_vec();
    two[1].soa_from = two[0].soa_from.clone();
    let mut txn = stage.begin(&published, 0);
    assert!(txn.apply(Change::Changesets(&two)).is_err());
    assert_eq!(txn.version().serial(), 10);
    assert!(txn.seal().unwrap().is_unchanged());
    // The journal replays to the sealed version.
    let replayed = stage.run(&published, Change::Journal(&journal), 0).unwrap();
    assert_eq!(
        replayed.version.records().collect::<Vec<_>>(),
        sealed.version.records().collect::<Vec<_>>()
    );
}

/// A signed zone: its file edited and updates in one transaction are
/// signed as one changeset when sealed, the signer's records left out
/// of the file's difference; a key event after them signs them first.
#[test]
fn a_signed_zones_transaction_is_signed_once_when_sealed() {
    let (stage, now) = signing_stage("example.");
    let file = zone(BASE);
    let signed = stage
        .run(&file, Change::Replace(file.clone()), now)
        .unwrap();
    assert!(matches!(signed.history, History::Restarts));
    let signed = signed.version;
    assert!(signed.records().any(|r| is_signer_type(r.rtype)));
    assert_eq!(signed.serial(), 11, "signed over the file's serial");
    // The operator's file, one name more, and an update.
    let edited = zone(&format!("{BASE}www A 192.0.2.80\n").replace(" 10 ", " 12 "));
    let mut txn = stage.begin(&signed, now);
    let applied = txn.apply(Change::Difference(&edited)).unwrap().unwrap();
    assert_eq!((applied.removed, applied.added), (0, 1));
    txn.apply(Change::Update(&add("mail.example.", [192, 0, 2, 25], None)))
        .unwrap();
    // Unsigned so far: what the next change sees.
    assert!(!txn
        .version()
        .records()
        .any(|r| r.owner.to_string() == "mail.example." && r.rtype == Rtype::RRSIG));
    let sealed = txn.seal().unwrap();
    assert_eq!(sealed.changes().len(), 1, "one signed changeset");
    for owner in ["www.example.", "mail.example."] {
        assert!(
            sealed
                .version
                .records()
                .any(|r| r.owner.to_string() == owner && r.rtype == Rtype::RRSIG),
            "{owner} signed"
        );
    }
    assert!(sealed.version.records().any(|r| r.rtype == Rtype::DNSKEY));
    // Pending changes, then re-signing: the changes are signed first,
    // then the whole zone again; the history restarts.
    let mut txn = stage.begin(&sealed.version, now);
    txn.apply(Change::Update(&add("ftp.example.", [192, 0, 2, 21], None)))
        .unwrap();
    let applied = txn.apply(Change::Resign).unwrap().unwrap();
    assert!(applied.replaced);
    let whole = txn.seal().unwrap();
    assert!(matches!(whole.history, History::Restarts));
    assert!(whole
        .version
        .records()
        .any(|r| r.owner.to_string() == "ftp.example." && r.rtype == Rtype::RRSIG));
}

/// A zone not signed here with `dnssec-validation`: a sealed version
/// that fails validation is refused, whatever the change.
#[test]
fn validation_is_a_step_of_every_seal() {
    let (signing, now) = signing_stage("example.");
    let file = zone(BASE);
    let signed = signing
        .run(&file, Change::Replace(file.clone()), now)
        .unwrap()
        .version;
    let validating = Stage {
        validate: true,
        ..Stage::default()
    };
    // Signed elsewhere and whole: it validates.
    assert!(validating
        .run(&file, Change::Replace(signed.clone()), now)
        .is_ok());
    // An unsigned name added to it does not, by update or by file.
    let err = validating
        .run(
            &signed,
            Change::Update(&add("www.example.", [192, 0, 2, 80], None)),
            now,
        )
        .unwrap_err();
    assert!(matches!(err, StageError::Invalid(_)), "{err}");
    // Nor a whole version with its signatures stripped.
    let stripped = zone(BASE);
    let mut txn = validating.begin(&signed, now);
    txn.apply(Change::Replace(stripped)).unwrap();
    assert!(matches!(txn.seal(), Err(StageError::Invalid(_))));
}

#[test]
fn a_file_whose_serial_is_not_newer_gets_the_policys_next() {
    let current = zone(BASE);
    let file = zone(&format!("{BASE}www A 192.0.2.80\n"));
    let stage = Stage::default();
    let mut txn = stage.begin(&current, 0);
    let applied = txn.apply(Change::Difference(&file)).unwrap().unwrap();
    assert_eq!(applied.serial_raised, Some(10));
    assert_eq!(txn.seal().unwrap().changes()[0].serial_to(), 11);
}

#[test]
fn changesets_that_do_not_follow_are_refused_whole() {
    let current = zone(BASE);
    let file = zone(&format!("{BASE}www A 192.0.2.80\n").replace(" 10 ", " 11 "));
    let Some((cs, _)) = difference(&current, &file, SerialPolicy::default(), 0, false, false)
    else {
        panic!("a difference");
    };
    let version = Stage::default()
        .run(&current, Change::Changesets(std::slice::from_ref(&cs)), 0)
        .unwrap()
        .version;
    // The same changeset again does not follow serial 11.
    let err = Stage::default()
        .run(&version, Change::Changesets(&[cs]), 0)
        .unwrap_err();
    assert!(
        matches!(
            err,
            StageError::Apply {
                from: 10,
                to: 11,
                ..
            }
        ),
        "{err}"
    );
}
