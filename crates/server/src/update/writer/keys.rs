//! A signed zone's key events on its writer: the planner run when the next
//! one is due (or a command asks: `zone-key-rollover`,
//! `zone-ksk-submitted`), the key files written, the signer of the moment
//! put in the stage, the apex's key records changed through the stage and
//! the journal like any change, and the signatures of keys that stopped
//! signing replaced a batch a second (resign.rs) — whole in about
//! [`RESIGN_SPREAD`], between [`RESIGN_MIN`] and [`RESIGN_MAX`] names a
//! batch, not in one burst.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lode_dnssec::{KeyState, SigningKey, Trigger};
use lode_zones::Change;

use super::Writer;
use crate::clock::unix_now;
use crate::config::Signing;
use crate::update::WriterError;

/// After a key event that changed which keys sign, the zone's signatures
/// are replaced within about this long (batches every second)…
pub(super) const RESIGN_SPREAD: Duration = Duration::from_secs(600);
/// …at least this many names a batch (a small zone is done in seconds)…
pub(super) const RESIGN_MIN: usize = 1000;
/// …and at most this many: ~5,000 signatures a second, about a quarter of
/// a core of this machine's batches (18,000 signatures per CPU-second
/// measured, benchmarks/HISTORY.md, "Signing", 2026-11-27), so that a zone of millions of
/// names takes longer rather than a core from the queries (5 M names:
/// ~33 minutes).
pub(super) const RESIGN_MAX: usize = 2500;

/// A signed zone's keys as its writer keeps them.
#[derive(Debug)]
pub(crate) struct KeyRoll {
    /// The key folders' root (`kasp-db`).
    pub(super) kasp_db: PathBuf,
    /// The zone's policy.
    pub(super) signing: Signing,
    /// Signatures by keys that no longer sign may be in the zone: they are
    /// replaced in larger batches, and a pass that finds none settles the
    /// keys waiting for it.
    pub(super) rekeying: bool,
    /// The next key action as last logged.
    pub(super) announced: Option<(u64, String)>,
    /// The parent's servers: asked for a ready KSK's DS (`ksk-submission`),
    /// sent the DS set (`ds-push`).
    pub(super) parents: crate::update::ds_push::Parents,
    /// When the parent is asked for the ready KSK's DS and sent the DS set
    /// (decided in `lode_control::parent`).
    pub(super) parent: lode_control::parent::Parent,
    /// A push running: whether it was taken.
    pub(super) pushing: Option<std::thread::JoinHandle<bool>>,
    /// A KSK waiting for its DS: its DS RDATA (digest types 2 and 4).
    pub(super) waiting: Option<Vec<Vec<u8>>>,
    /// A round of DS queries running.
    pub(super) checking: Option<std::thread::JoinHandle<()>>,
}

/// How long one DS query may take.
const DS_TIMEOUT: Duration = Duration::from_secs(5);

/// The parents' servers `parents` asked for `zone`'s DS: Some(the largest
/// DS TTL) when every one serves one of `want` (a KSK's DS RDATA), None
/// when one does not (or does not answer), with the reason logged.
pub(super) fn parents_serve(
    zone: &lode_wire::Name,
    parents: &[crate::fetch::Source],
    want: &[Vec<u8>],
) -> Option<u64> {
    let mut ttl = 0u64;
    for p in parents {
        match crate::fetch::query_ds(p, zone, DS_TIMEOUT) {
            Ok(records) => {
                if !records
                    .iter()
                    .any(|r| want.iter().any(|w| w[..] == r.rdata[..]))
                {
                    tracing::info!(
                        "zone {zone}: DNSSEC, KSK submission, the parent's server {} does not serve the DS yet",
                        p.addr
                    );
                    return None;
                }
                ttl = ttl.max(records.iter().map(|r| u64::from(r.ttl)).max().unwrap_or(0));
            }
            Err(e) => {
                tracing::warn!("zone {zone}: DNSSEC, KSK submission check: {e}");
                return None;
            }
        }
    }
    Some(ttl)
}

/// The instant of a Unix time (now when it is past).
pub(super) fn instant_of(t: u64, now: u64) -> Instant {
    lode_control::upkeep::instant_of(t, now, Instant::now())
}

impl Writer {
    /// `ksk-submission`: while a KSK waits for its DS, every check-interval
    /// a thread asks the parent's servers; when each serves it, the writer
    /// is told as by `zone-ksk-submitted`, the old KSK going after the
    /// largest DS TTL + parent-delay.
    pub(super) fn check_submission(&mut self, me: &super::super::pool::WeakQueue) {
        let Some(roll) = self.keys.as_mut() else {
            return;
        };
        let Some(submission) = roll.signing.submission.as_ref() else {
            return;
        };
        if roll.checking.as_ref().is_some_and(|t| t.is_finished()) {
            roll.checking = None;
            roll.parent.check_ended();
        }
        let now = Instant::now();
        if !roll.parent.check_due(now) {
            return;
        }
        let Some(want) = roll.waiting.clone() else {
            return;
        };
        let Some(slot) = crate::update::ds_push::ParentSlot::take(&self.shared.parent_threads)
        else {
            roll.parent.check_busy(now); // others' turn first
            return;
        };
        roll.parent
            .check_started(now, Duration::from_secs(submission.check_interval));
        let (parents, delay) = (roll.parents.asked.clone(), submission.parent_delay);
        let (zone, me) = (self.origin.clone(), me.clone());
        let spawned = std::thread::Builder::new()
            .name("lode-ds-check".into())
            .spawn(move || {
                let _slot = slot;
                if let Some(ttl) = parents_serve(&zone, &parents, &want) {
                    tracing::info!(
                        "zone {zone}: DNSSEC, KSK submission, every parent's server serves the DS"
                    );
                    let (done, _) = std::sync::mpsc::channel();
                    me.send(super::super::Work::Sign {
                        what: super::super::SignWork::Submitted(ttl + delay),
                        done,
                    });
                }
            });
        match spawned {
            Ok(t) => roll.checking = Some(t),
            Err(e) => {
                roll.parent.check_ended();
                tracing::warn!("zone {}: DNSSEC, DS check not started: {e}", self.origin)
            }
        }
    }

    /// `ds-push`: when a push is due, a thread sends the apex's CDS as the
    /// DS set to the parent's primaries; one not taken is due again after
    /// `lode_control::parent::RETRY`.
    pub(super) fn check_ds_push(&mut self) {
        let zone = self.current();
        let Some(roll) = self.keys.as_mut() else {
            return;
        };
        let now = Instant::now();
        if let Some(t) = roll.pushing.take() {
            if !t.is_finished() {
                roll.pushing = Some(t);
                return;
            }
            roll.parent.push_ended(t.join().unwrap_or(false), now);
        }
        if !roll.parent.push_due(now) {
            return;
        }
        let Some(slot) = crate::update::ds_push::ParentSlot::take(&self.shared.parent_threads)
        else {
            roll.parent.push_busy(now); // others' turn first
            return;
        };
        let pushed = roll.parents.pushed.clone();
        let cds = zone
            .as_deref()
            .map(crate::update::ds_push::cds_of)
            .unwrap_or_default();
        if cds.is_empty() {
            // A ready KSK's CDS not served yet (a whole signing still
            // running): asked again in a moment. Else, as Knot: no CDS,
            // nothing to push.
            roll.parent.push_not_ready(now, roll.waiting.is_some());
            return;
        }
        let Some(zone) = zone else {
            return;
        };
        roll.parent.push_started();
        let ttl = zone
            .apex_rrset(lode_wire::Rtype::DNSKEY)
            .map_or(zone.soa().ttl(), |s| s.ttl());
        let origin = self.origin.clone();
        let spawned = std::thread::Builder::new()
            .name("lode-ds-push".into())
            .spawn(move || {
                let _slot = slot;
                crate::update::ds_push::push(&origin, &pushed, &cds, ttl)
            });
        let Some(roll) = self.keys.as_mut() else {
            return;
        };
        match spawned {
            Ok(t) => roll.pushing = Some(t),
            Err(e) => {
                tracing::warn!("zone {}: DNSSEC, DS push not started: {e}", self.origin);
                roll.parent.push_ended(false, Instant::now());
            }
        }
    }

    /// Runs the zone's key events due now (and `trigger`'s), puts the
    /// signer of the moment in the stage and brings the apex's key records
    /// to it (one journaled change); what was done.
    pub(super) fn key_event(&mut self, trigger: Trigger) -> Result<String, WriterError> {
        self.plan_keys(trigger, false)
    }

    /// [`Writer::key_event`]; with `chain_check`, a signer whose chain
    /// differs from the zone's signs it whole instead of changing its key
    /// records alone.
    fn plan_keys(&mut self, trigger: Trigger, chain_check: bool) -> Result<String, WriterError> {
        let Some(roll) = self.keys.as_ref() else {
            return Err(WriterError::NotSigned);
        };
        let current = self.current().ok_or(WriterError::NotServed)?;
        let now = unix_now();
        let ttls = crate::update::signing::ttls(&roll.signing, &current);
        let old = self.stage.signer.clone();
        let events = crate::update::signing::key_events(
            &roll.kasp_db,
            &self.origin,
            &roll.signing,
            ttls,
            now,
            trigger,
            crate::update::signing::Counters {
                zone: old.as_ref().map(|s| s.progress()),
                server: self.shared.events.signatures.clone(),
            },
        );
        let (events, log) = match events {
            Ok(e) => e,
            Err(e) => {
                self.upkeep
                    .schedule_key_event(Some(Instant::now() + super::RETRY_AFTER));
                return Err(WriterError::Keys {
                    why: e,
                    retry: super::RETRY_AFTER,
                });
            }
        };
        let refused = events.refused.clone();
        let resalted = events.resalted;
        let offline = events.signer.offline().is_some();
        let cds_before = crate::update::ds_push::cds_of(&current);
        let same_signers = old.as_ref().is_some_and(|o| o.signs_like(&events.signer));
        self.stage.signer = Some(Arc::new(events.signer));
        if let Some(roll) = self.keys.as_mut() {
            self.upkeep
                .schedule_key_event(events.next.map(|t| instant_of(t, now)));
            if !same_signers {
                roll.rekeying = true;
            }
            crate::update::signing::announce(
                &self.origin,
                events.action,
                &mut roll.announced,
                false,
            );
            let was = roll.waiting.take();
            if !roll.parents.pushed.is_empty()
                && events.waiting_ds.is_some()
                && events.waiting_ds != was
            {
                // A KSK became ready: its DS goes to the parent once its
                // CDS has been out for a propagation delay.
                let delay = Duration::from_secs(roll.signing.keys.propagation_delay);
                roll.parent.push_after(Instant::now(), delay);
            }
            let check = roll.signing.submission.is_some() && events.waiting_ds.is_some();
            roll.parent.waiting_for_ds(check, Instant::now());
            roll.waiting = events.waiting_ds;
        }
        let from = current.serial();
        // A secondary with nothing transferred yet has no key records to
        // change: its first transfer is signed whole with these keys.
        let whole = (chain_check || resalted)
            && self
                .stage
                .signer
                .as_ref()
                .is_some_and(|s| !s.is_current(&current, now));
        // Offline KSK: a new ZSK signs the zone whole at once (Knot's), as
        // the timers made ahead count on (the old ZSK goes a propagation
        // delay and the largest TTL after).
        let new_zsk = offline
            && old.as_ref().is_some_and(|o| {
                self.stage
                    .signer
                    .as_ref()
                    .is_some_and(|s| !s.signs_zone_like(o))
            });
        let serial = if crate::publish::is_placeholder(&current) {
            from
        } else if whole || new_zsk {
            self.sign_whole(if resalted {
                "new NSEC3 salt"
            } else if new_zsk {
                "new ZSK under an offline KSK"
            } else if old.is_none() {
                "signing turned on"
            } else {
                "policy changed"
            })?;
            self.current().map_or(from, |z| z.serial())
        } else {
            self.run_stage(Change::Rekey, None)?
        };
        if let (Some(z), Some(roll)) = (self.current(), self.keys.as_mut()) {
            if !roll.parents.pushed.is_empty() && crate::update::ds_push::cds_of(&z) != cds_before {
                // Knot's timing: the new CDS has been out for a propagation delay.
                let delay = Duration::from_secs(roll.signing.keys.propagation_delay);
                roll.parent.push_after(Instant::now(), delay);
            }
        }
        if !same_signers {
            // The signatures of keys that stopped signing (and those of
            // keys that started) made from now on, a batch a second.
            self.resign_round.restart();
            self.upkeep.schedule_resign(Some(Instant::now()));
        }
        if let Some(why) = refused {
            tracing::warn!("zone {}: DNSSEC, {why}", self.origin);
            return Err(WriterError::KeysRefused(why));
        }
        let mut text = if log.is_empty() {
            "no key event due".to_string()
        } else {
            log.join("; ")
        };
        if serial != from {
            text.push_str(&format!(", key records changed, serial {from} → {serial}"));
        }
        Ok(text)
    }

    /// A reload's new policy for the zone (its algorithm, lifetimes, chain,
    /// CDS, submission): the planner runs with it at once — an algorithm
    /// changed starts an algorithm rollover, new lifetimes move the next
    /// events — and a chain of another kind or parameters (NSEC ↔ NSEC3,
    /// iterations, salt length, opt-out) is made whole in one new version,
    /// as at a start, so that no version mixes the two.
    pub(super) fn new_policy(
        &mut self,
        signing: Signing,
        parents: crate::update::ds_push::Parents,
    ) -> Result<String, WriterError> {
        let Some(roll) = self.keys.as_mut() else {
            return Err(WriterError::NotSigned);
        };
        roll.signing = signing;
        roll.parents = parents;
        roll.waiting = None;
        roll.parent.waiting_for_ds(false, Instant::now());
        self.plan_keys(Trigger::Timers, true)
    }

    /// A reload turned signing on for this zone (served unsigned until
    /// now): its keys made or read as at a start, the zone signed whole in
    /// one new version (the history before it dropped, as `zone-sign`),
    /// re-signing and key events planned from then on. A secondary's
    /// version then stands for the primary's serial it had (Knot's signing
    /// of a transferred zone: versions numbered here, IXFR in signed).
    pub(super) fn start_signing(
        &mut self,
        signing: Signing,
        parents: crate::update::ds_push::Parents,
        kasp_db: PathBuf,
    ) -> Result<String, WriterError> {
        if self.keys.is_some() {
            return self.new_policy(signing, parents);
        }
        let secondary = self.refetchable;
        if secondary {
            let zone = self.current().ok_or(WriterError::NotServed)?;
            if crate::publish::is_placeholder(&zone) {
                // Nothing transferred yet: the first transfer is signed whole.
                self.publisher.set_upstream(&self.origin, None);
            } else {
                self.set_upstream(zone.serial());
            }
            self.refetchable = false;
            self.signs_transfers = true;
        }
        self.keys = Some(Box::new(KeyRoll {
            kasp_db,
            signing,
            rekeying: true,
            announced: None,
            parents,
            parent: lode_control::parent::Parent::new(),
            pushing: None,
            waiting: None,
            checking: None,
        }));
        let done = self.plan_keys(Trigger::Timers, true);
        match &self.stage.signer {
            Some(signer) => self.shared.signings.watch(&self.origin, signer),
            // Keys that could not be made: served unsigned as before.
            None => {
                self.keys = None;
                if secondary {
                    self.unsign_transfers();
                }
            }
        }
        done
    }

    /// A reload turned signing off for this zone: its keys and signer put
    /// away, nothing signed from now on. Its DNSSEC records are kept as
    /// they are (Knot's; a zone going insecure has its DS removed at the
    /// parent first, then its records go with a zone file without them). A
    /// secondary signed here serves its primary's zone again: the next
    /// refresh transfers it whole.
    pub(super) fn stop_signing(&mut self) -> Result<String, WriterError> {
        if self.keys.is_none() && self.stage.signer.is_none() {
            return Err(WriterError::SigningNotOn);
        }
        // A DS check or push under way finishes on its own; its result is
        // no longer read.
        self.keys = None;
        self.stage = self.stage.without_signing();
        self.upkeep.schedule_resign(None);
        self.upkeep.schedule_key_event(None);
        self.resign_round = lode_dnssec::Round::default();
        self.shared.signings.unwatch(&self.origin);
        if self.signs_transfers {
            self.unsign_transfers();
            return Ok(
                "signing turned off: the primary's zone is transferred whole at the next refresh"
                    .into(),
            );
        }
        Ok("signing turned off: the zone's DNSSEC records are kept as they are, changes from now on are not signed".into())
    }

    /// A secondary no longer signed here: a whole transfer replaces the
    /// version numbered here (see `take_whole`).
    fn unsign_transfers(&mut self) {
        self.signs_transfers = false;
        self.refetchable = true;
        self.file_tag.clear();
        self.publisher.set_upstream(&self.origin, None);
    }

    /// After a pass of the signature refresh that found every signature
    /// by the keys of the moment: keys that waited for it (a pre-active
    /// key to be published, a retired ZSK to be removed) are settled, and
    /// their next event planned.
    pub(super) fn keys_settled(&mut self) {
        let Some(roll) = self.keys.as_mut() else {
            return;
        };
        if !roll.rekeying {
            return;
        }
        roll.rekeying = false;
        let dir = crate::update::signing::key_dir(&roll.kasp_db, &self.origin);
        let now = unix_now();
        let keys = match SigningKey::read_all(&dir, self.origin.as_ref()) {
            Ok(k) => k,
            Err(e) => {
                tracing::error!("zone {}: DNSSEC, keys not read: {e}", self.origin);
                return;
            }
        };
        let mut settled = false;
        for mut k in keys {
            let waiting = matches!(k.timing.state(now), KeyState::PreActive | KeyState::Retired);
            if waiting && k.timing.settled.is_none() {
                k.timing.settled = Some(now);
                if let Err(e) = k.write(&dir) {
                    tracing::error!("zone {}: DNSSEC, key file not written: {e}", self.origin);
                    return;
                }
                tracing::info!(
                    "zone {}: DNSSEC, {} tag {}: every signature is by the keys of the moment",
                    self.origin,
                    k.role,
                    k.tag()
                );
                settled = true;
            }
        }
        if settled {
            self.upkeep.schedule_key_event(Some(Instant::now()));
        }
    }
}
