//! Offline KSK: ZSKs made ahead, a request, a response signed by a KSK
//! that the ZSK side never has, and the zone signed with the response's
//! key records through a ZSK rollover, each version validated.

use lode_wire::{Name, Rtype};

use crate::offline::{self, Kind, Period};
use crate::rollover::{pregenerate, KeyPolicy, Ttls};
use crate::tests::{change, soa, txt, zone, ZONE};
use crate::timing::{Role, Timing};
use crate::{Algorithm, Policy, Signer, SigningKey, KSK_FLAGS, ZSK_FLAGS};

const FROM: u64 = 1_764_000_000;
const LIFETIME: u64 = 3_000;

fn origin() -> Name {
    "example.".parse().unwrap()
}

/// The ZSK side's keys: ZSKs rolled every LIFETIME seconds over 10,000 s.
fn zsks() -> Vec<SigningKey> {
    let p = KeyPolicy {
        zsk_lifetime: LIFETIME,
        propagation_delay: 60,
        offline_ksk: true,
        manual: true,
        ..KeyPolicy::default()
    };
    let ttls = Ttls {
        dnskey: 300,
        max: 300,
    };
    let mut keys = Vec::new();
    let mut gen = |role: Role| {
        let flags = if role.is_ksk() { KSK_FLAGS } else { ZSK_FLAGS };
        SigningKey::generate(&origin(), Algorithm::EcdsaP256, flags, 0)
    };
    let plan = pregenerate(&mut keys, &p, ttls, FROM, FROM + 10_000, &mut gen).unwrap();
    assert_eq!(plan.changed.len(), keys.len(), "every key written");
    keys
}

fn ksk() -> SigningKey {
    let mut k = SigningKey::generate(&origin(), Algorithm::EcdsaP256, KSK_FLAGS, 0).unwrap();
    k.timing = Timing::since(FROM - 86_400);
    k
}

fn policy() -> Policy {
    Policy {
        rrsig_lifetime: 2_000,
        rrsig_refresh: 500,
        ..Policy::default()
    }
}

fn published(keys: &[SigningKey], t: u64) -> Vec<Vec<u8>> {
    offline::published_zsks(keys, t)
}

fn clones(keys: &[SigningKey]) -> Vec<SigningKey> {
    keys.iter().map(|k| k.try_clone().unwrap()).collect()
}

#[test]
fn pregenerated_zsks_roll_with_overlap_and_a_request_follows_them() {
    let keys = zsks();
    assert!(keys.iter().all(|k| k.role == Role::Zsk), "no KSK made");
    assert_eq!(keys.len(), 4, "one ZSK and three rollovers in 10,000 s");
    // Each new ZSK is published before it signs and the old one stays
    // until the zone is signed by the new one and caches have it.
    for w in keys[..3].windows(2) {
        let (old, new) = (&w[0].timing, &w[1].timing);
        assert!(new.publish.unwrap() < new.active.unwrap());
        assert_eq!(old.retire, new.active);
        assert!(old.remove.unwrap() > old.retire.unwrap());
    }
    assert!(
        keys[3].timing.active.is_none(),
        "the last one published, active after the span"
    );
    let req = offline::request(&keys, &origin(), 300, FROM, FROM + 10_000);
    assert_eq!(req.first().unwrap().at, FROM);
    assert_eq!(req.last().unwrap().at, FROM + 10_000, "a period at the end");
    for p in &req {
        let mut want = published(&keys, p.at);
        let mut have: Vec<Vec<u8>> = p.rdatas(Rtype::DNSKEY).map(<[u8]>::to_vec).collect();
        want.sort();
        have.sort();
        assert_eq!(have, want, "the ZSKs published at {}", p.at);
    }
    assert!(
        req.iter().any(|p| p.rdatas(Rtype::DNSKEY).count() == 2),
        "a period with both ZSKs of a rollover"
    );
    // Its text reads back the same.
    let text = offline::write(&req, Kind::Request, FROM);
    assert_eq!(
        offline::parse(&text, "ksr", &origin(), Kind::Request).unwrap(),
        req
    );
}

#[test]
fn a_response_verifies_and_signs_the_zone_through_a_zsk_rollover() {
    let keys = zsks();
    let req = offline::request(&keys, &origin(), 300, FROM, FROM + 10_000);
    let resp = offline::sign_request(&req, &[ksk()], &policy(), &origin()).unwrap();
    assert!(
        resp.len() > req.len(),
        "periods between requested ones, before signatures are due"
    );
    for w in resp.windows(2) {
        let expiry = u64::from(w[0].expiry().unwrap());
        assert!(
            w[1].at <= expiry - u64::from(policy().rrsig_refresh),
            "the next period comes before signatures are due"
        );
    }
    let text = offline::write(&resp, Kind::Response, FROM);
    let read = offline::parse(&text, "skr", &origin(), Kind::Response).unwrap();
    assert_eq!(read, resp);
    for p in &read {
        offline::verify(p, &origin(), &published(&keys, p.at)).unwrap();
    }
    // The zone, signed at each period by the ZSK side, validates; a change
    // and each key event (a new period) too.
    let mut current: Option<lode_zonedb::Zone> = None;
    let mut signer_was: Option<Signer> = None;
    for t in (FROM..FROM + 10_000).step_by(500) {
        let (period, _) = offline::current(&read, t).unwrap();
        let s = Signer::at_offline(
            &origin(),
            clones(&keys),
            Policy::default(),
            t,
            period.clone(),
        )
        .unwrap();
        let z = match current.take() {
            None => s.sign_zone(&zone(ZONE), None, t).unwrap(),
            Some(z) if signer_was.as_ref().is_some_and(|o| !o.signs_zone_like(&s)) => {
                // A new ZSK active: signed whole, as the server does.
                s.sign_zone(&z, Some(z.serial() + 1), t).unwrap()
            }
            Some(z) => match s.rekey(&z, soa(&z, z.serial() + 1), t).unwrap() {
                Some((z, _)) => z,
                None => z,
            },
        };
        crate::validate(&z, t, None).unwrap_or_else(|e| panic!("at {t}: {e}"));
        let sigs: Vec<Vec<u8>> = z
            .apex_rrset(Rtype::RRSIG)
            .unwrap()
            .rdatas()
            .filter(|r| crate::rrsig::rrsig_info(r).unwrap().covered == Rtype::DNSKEY)
            .map(<[u8]>::to_vec)
            .collect();
        let want: Vec<Vec<u8>> = period
            .sigs_covering(Rtype::DNSKEY)
            .map(<[u8]>::to_vec)
            .collect();
        assert_eq!(sigs, want, "at {t}: the response's DNSKEY signatures");
        let c = change(&z, vec![], vec![txt(&format!("n{t}.example."), "x")]);
        let (z, _) = s.sign_change(&z, &c, t).unwrap();
        crate::validate(&z, t, None).unwrap_or_else(|e| panic!("change at {t}: {e}"));
        current = Some(z);
        signer_was = Some(s);
    }
}

#[test]
fn a_response_that_does_not_fit_is_refused() {
    let keys = zsks();
    let req = offline::request(&keys, &origin(), 300, FROM, FROM + 10_000);
    let resp = offline::sign_request(&req, &[ksk()], &policy(), &origin()).unwrap();
    let p = &resp[0];
    // Another side's ZSKs.
    let other = SigningKey::generate(&origin(), Algorithm::EcdsaP256, ZSK_FLAGS, 0).unwrap();
    let err = offline::verify(p, &origin(), &[other.dnskey_rdata()]).unwrap_err();
    assert!(err.contains("lacks ZSK"), "{err}");
    // A signature that does not verify.
    let mut bad: Period = p.clone();
    for r in bad.records.iter_mut().filter(|r| r.rtype == Rtype::RRSIG) {
        let mut d = r.rdata.to_vec();
        let n = d.len();
        d[n - 1] ^= 1;
        r.rdata = d.into();
    }
    let err = offline::verify(&bad, &origin(), &[]).unwrap_err();
    assert!(err.contains("no signature of the DNSKEY RRset"), "{err}");
    // Text cut short, a record of another name, none at all.
    let text = offline::write(&resp, Kind::Response, FROM);
    let cut = &text[..text.rfind(";; SignedKeyResponse").unwrap()];
    let err = offline::parse(cut, "skr", &origin(), Kind::Response).unwrap_err();
    assert!(err.contains("cut short"), "{err}");
    let err = offline::parse(
        &text,
        "skr",
        &"example.org.".parse().unwrap(),
        Kind::Response,
    )
    .unwrap_err();
    assert!(err.contains("not the zone's apex"), "{err}");
    let err = offline::parse(&text, "skr", &origin(), Kind::Request).unwrap_err();
    assert!(err.contains("no KeySigningRequest"), "{err}");
    // A signer under an offline KSK without a KSK of its own signs with the
    // response only; with a period lacking signatures it has no key signer.
    let mut unsigned = p.clone();
    unsigned.records.retain(|r| r.rtype != Rtype::RRSIG);
    assert!(Signer::at_offline(&origin(), clones(&keys), policy(), FROM, unsigned).is_err());
}

#[test]
fn the_period_in_force_and_an_import_replacing_the_later_ones() {
    let p = |at| Period {
        at,
        records: Vec::new(),
    };
    let periods = vec![p(10), p(20), p(30)];
    assert!(offline::current(&periods, 9).is_none());
    assert_eq!(
        offline::current(&periods, 10).map(|(p, n)| (p.at, n)),
        Some((10, Some(20)))
    );
    assert_eq!(
        offline::current(&periods, 29).map(|(p, n)| (p.at, n)),
        Some((20, Some(30)))
    );
    assert_eq!(
        offline::current(&periods, 99).map(|(p, n)| (p.at, n)),
        Some((30, None))
    );
    let merged = offline::merge(periods, vec![p(25), p(40)]);
    let ats: Vec<u64> = merged.iter().map(|p| p.at).collect();
    assert_eq!(ats, vec![10, 20, 25, 40]);
}

#[test]
fn a_zone_signed_by_an_old_zsk_is_not_current_under_an_offline_ksk() {
    // A ZSK that became active while the server was down: the zone is
    // signed whole at the start, not a batch at a time (the old ZSK's
    // removal, made ahead, does not wait).
    let keys = zsks();
    let req = offline::request(&keys, &origin(), 300, FROM, FROM + 10_000);
    let resp = offline::sign_request(&req, &[ksk()], &policy(), &origin()).unwrap();
    let at = |t: u64| {
        let (period, _) = offline::current(&resp, t).unwrap();
        Signer::at_offline(
            &origin(),
            clones(&keys),
            Policy::default(),
            t,
            period.clone(),
        )
        .unwrap()
    };
    let (before, after) = (FROM + 100, FROM + 3_400);
    let zone = at(before).sign_zone(&zone(ZONE), None, before).unwrap();
    assert!(at(before).is_current(&zone, before));
    assert!(
        !at(after).is_current(&zone, after),
        "signed by the ZSK of before"
    );
    let again = at(after)
        .sign_zone(&zone, Some(zone.serial() + 1), after)
        .unwrap();
    assert!(at(after).is_current(&again, after));
}
