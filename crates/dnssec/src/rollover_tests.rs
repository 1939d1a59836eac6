//! Whole rollovers in memory: the planner's key events, the signer of each
//! moment, the key records changed ([`Signer::rekey`]) and the signatures
//! replaced in batches ([`Signer::due`], [`Signer::refresh`]) as the writer
//! does them — the zone checked whole after every step.

use std::sync::Arc;

use lode_wire::{Name, Rtype};
use lode_zonedb::{set_soa_serial, Zone};

use crate::rollover::{plan, KeyPolicy, Trigger, Ttls};
use crate::tests::{verify_at, zone, ZONE};
use crate::{Algorithm, KeyState, Policy, Role, Signer, SigningKey, KSK_FLAGS, ZSK_FLAGS};

const T0: u64 = 1_764_000_000;
const STEP: u64 = 10;

struct Sim {
    origin: Name,
    keys: Vec<SigningKey>,
    zone: Arc<Zone>,
    keys_policy: KeyPolicy,
    policy: Policy,
    now: u64,
    log: Vec<String>,
    /// Most key tags published at once.
    most_published: usize,
}

impl Sim {
    fn new(keys_policy: KeyPolicy, policy: Policy) -> Sim {
        let origin: Name = "example.".parse().unwrap();
        let mut sim = Sim {
            origin,
            keys: Vec::new(),
            zone: Arc::new(zone(ZONE)),
            keys_policy,
            policy,
            now: T0,
            log: Vec::new(),
            most_published: 0,
        };
        sim.step(Trigger::Timers, true);
        sim
    }

    fn signer(&self) -> Signer {
        let keys = self.keys.iter().map(|k| k.try_clone().unwrap()).collect();
        Signer::at(&self.origin, keys, self.policy.clone(), self.now).unwrap()
    }

    fn next_soa(&self) -> lode_wire::Record {
        let mut soa = self.zone.soa_record();
        set_soa_serial(&mut soa, self.zone.serial().wrapping_add(1));
        soa
    }

    /// One writer wake: key events, the key records, the signatures; why
    /// the trigger was refused, if it was.
    fn step(&mut self, trigger: Trigger, first: bool) -> Option<String> {
        let now = self.now;
        let (origin, alg) = (self.origin.clone(), self.keys_policy.algorithm);
        let ttls = Ttls {
            dnskey: 300,
            max: 300,
        };
        let mut gen = |role: Role| {
            let flags = if role.is_ksk() { KSK_FLAGS } else { ZSK_FLAGS };
            SigningKey::generate(&origin, alg, flags, now)
        };
        let p = plan(
            &mut self.keys,
            &self.keys_policy,
            ttls,
            now,
            trigger,
            &mut gen,
        )
        .unwrap();
        self.log.extend(p.log);
        let refused = p.refused;
        let signer = self.signer();
        if first {
            self.zone = Arc::new(signer.sign_zone(&self.zone, None, now).unwrap());
        } else if let Some((z, _)) = signer.rekey(&self.zone, self.next_soa(), now).unwrap() {
            self.zone = Arc::new(z);
        }
        // Signatures of other keys replaced, a batch at a time.
        let mut batches = 0;
        let mut round = crate::Round::default();
        loop {
            let due = signer.due(&self.zone, &mut round, now, 4);
            if due.owners.is_empty() {
                break;
            }
            let soa = self.next_soa();
            self.zone = Arc::new(signer.refresh(&self.zone, &due.owners, soa, now).unwrap().0);
            batches += 1;
            assert!(batches < 100, "refresh does not end");
        }
        for k in &mut self.keys {
            let state = k.timing.state(now);
            if k.timing.settled.is_none()
                && matches!(state, KeyState::PreActive | KeyState::Retired)
            {
                k.timing.settled = Some(now);
            }
        }
        verify_at(&self.zone, &signer, now + 1)
            .unwrap_or_else(|e| panic!("at +{} s: {e}\nlog: {:#?}", now - T0, self.log));
        let published = self
            .zone
            .apex_rrset(Rtype::DNSKEY)
            .map_or(0, |s| s.rdatas().count());
        self.most_published = self.most_published.max(published);
        refused
    }

    fn run(&mut self, seconds: u64) {
        let end = self.now + seconds;
        while self.now < end {
            self.now += STEP;
            self.step(Trigger::Timers, false);
        }
    }

    fn states(&self) -> Vec<(Role, KeyState)> {
        self.keys
            .iter()
            .map(|k| (k.role, k.timing.state(self.now)))
            .collect()
    }

    fn cds_count(&self) -> usize {
        self.zone
            .apex_rrset(Rtype::CDS)
            .map_or(0, |s| s.rdatas().count())
    }
}

fn quick() -> KeyPolicy {
    KeyPolicy {
        propagation_delay: 20,
        zsk_lifetime: 0,
        ..KeyPolicy::default()
    }
}

#[test]
fn first_keys_wait_for_the_ds_with_cds_published() {
    let mut sim = Sim::new(quick(), Policy::default());
    assert_eq!(
        sim.states(),
        vec![(Role::Ksk, KeyState::Ready), (Role::Zsk, KeyState::Active)]
    );
    assert_eq!(sim.cds_count(), 1, "CDS of the KSK waiting for its DS");
    sim.now += STEP;
    sim.step(Trigger::Submitted { ds_ttl: 0 }, false);
    assert_eq!(sim.states()[0], (Role::Ksk, KeyState::Active));
    assert_eq!(sim.cds_count(), 0, "rollover: no CDS once the DS is there");
    assert!(
        sim.step(Trigger::Submitted { ds_ttl: 0 }, false).is_some(),
        "no KSK is ready: refused"
    );
    assert!(
        sim.step(Trigger::Submitted { ds_ttl: 0 }, false).is_some(),
        "none ready"
    );
}

#[test]
fn a_zsk_rolls_by_its_lifetime_and_the_old_one_goes() {
    let mut sim = Sim::new(
        KeyPolicy {
            zsk_lifetime: 1000,
            ..quick()
        },
        Policy::default(),
    );
    sim.step(Trigger::Submitted { ds_ttl: 0 }, false);
    sim.run(990);
    assert_eq!(sim.keys.len(), 2, "no rollover before the lifetime");
    sim.run(20);
    assert_eq!(sim.keys.len(), 3, "new ZSK at the lifetime: {:?}", sim.log);
    assert_eq!(sim.states()[2], (Role::Zsk, KeyState::Published));
    // propagation + DNSKEY TTL later the new one signs, then the old one
    // leaves after the zone is re-signed + propagation + max TTL.
    sim.run(330);
    assert_eq!(
        sim.states()[2],
        (Role::Zsk, KeyState::Active),
        "{:?}",
        sim.log
    );
    assert_eq!(sim.states()[1], (Role::Zsk, KeyState::Retired));
    sim.run(330);
    assert_eq!(sim.keys.len(), 2, "old ZSK deleted: {:?}", sim.log);
    assert_eq!(sim.most_published, 3);
    let log = sim.log.join("\n");
    assert!(
        log.contains("ZSK rollover started") && log.contains("deleted"),
        "{log}"
    );
}

#[test]
fn a_ksk_rollover_waits_for_the_ds_and_signs_the_keys_twice() {
    let mut sim = Sim::new(quick(), Policy::default());
    sim.step(Trigger::Submitted { ds_ttl: 0 }, false);
    sim.now += STEP;
    sim.step(Trigger::Roll(Role::Ksk), false);
    assert_eq!(sim.keys.len(), 3);
    let refused = sim.step(Trigger::Roll(Role::Zsk), false);
    assert!(refused.is_some_and(|r| r.contains("under way")));
    assert_eq!(sim.keys.len(), 3, "no second rollover at once");
    sim.run(400);
    assert_eq!(sim.states()[2], (Role::Ksk, KeyState::Ready));
    assert_eq!(sim.cds_count(), 1);
    sim.run(1000);
    assert_eq!(
        sim.states()[2],
        (Role::Ksk, KeyState::Ready),
        "waits for the DS"
    );
    // Both KSKs sign the DNSKEY RRset while the new one waits.
    let signer = sim.signer();
    assert_eq!(signer.signers_of(Rtype::DNSKEY).count(), 2);
    sim.step(Trigger::Submitted { ds_ttl: 100 }, false);
    assert_eq!(sim.states()[2], (Role::Ksk, KeyState::Active));
    assert_eq!(sim.states()[0], (Role::Ksk, KeyState::RetireActive));
    sim.run(200);
    assert_eq!(sim.keys.len(), 2, "{:?}", sim.log);
    assert_eq!(sim.cds_count(), 0);
}

#[test]
fn a_csk_rollover_and_an_algorithm_rollover_run_to_the_end() {
    let mut sim = Sim::new(
        KeyPolicy {
            single_type: true,
            ..quick()
        },
        Policy::default(),
    );
    assert_eq!(sim.states(), vec![(Role::Csk, KeyState::Ready)]);
    sim.step(Trigger::Submitted { ds_ttl: 0 }, false);
    sim.now += STEP;
    sim.step(Trigger::Roll(Role::Zsk), false);
    assert_eq!(sim.keys.len(), 2, "a ZSK rollover of a CSK rolls the CSK");
    sim.run(400);
    sim.step(Trigger::Submitted { ds_ttl: 50 }, false);
    sim.run(800);
    assert_eq!(
        sim.states(),
        vec![(Role::Csk, KeyState::Active)],
        "{:?}",
        sim.log
    );

    // Algorithm 13 → 15, KSK + ZSK.
    let mut sim = Sim::new(quick(), Policy::default());
    sim.step(Trigger::Submitted { ds_ttl: 0 }, false);
    sim.keys_policy.algorithm = Algorithm::Ed25519;
    sim.run(20);
    assert_eq!(sim.keys.len(), 4, "{:?}", sim.log);
    sim.run(1000);
    let ready = sim
        .keys
        .iter()
        .any(|k| k.algorithm == Algorithm::Ed25519 && k.timing.state(sim.now) == KeyState::Ready);
    assert!(ready, "{:?} {:?}", sim.states(), sim.log);
    sim.step(Trigger::Submitted { ds_ttl: 30 }, false);
    sim.run(1000);
    assert!(
        sim.keys.iter().all(|k| k.algorithm == Algorithm::Ed25519),
        "{:?} {:?}",
        sim.states(),
        sim.log
    );
    assert_eq!(sim.keys.len(), 2);
}

#[test]
fn a_ready_ksk_becomes_active_after_the_submission_timeout() {
    let mut sim = Sim::new(
        KeyPolicy {
            submission_timeout: 100,
            ..quick()
        },
        Policy::default(),
    );
    // The first KSK: ready, then active by itself 100 s later.
    assert_eq!(sim.states()[0], (Role::Ksk, KeyState::Ready));
    sim.run(90);
    assert_eq!(sim.states()[0], (Role::Ksk, KeyState::Ready));
    sim.run(20);
    assert_eq!(
        sim.states()[0],
        (Role::Ksk, KeyState::Active),
        "{:?}",
        sim.log
    );
    assert_eq!(sim.cds_count(), 0);
}
