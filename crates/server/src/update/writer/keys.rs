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

use super::super::unix_now;
use super::Writer;
use crate::config::Signing;

/// After a key event that changed which keys sign, the zone's signatures
/// are replaced within about this long (batches every second)…
pub(super) const RESIGN_SPREAD: Duration = Duration::from_secs(600);
/// …at least this many names a batch (a small zone is done in seconds)…
pub(super) const RESIGN_MIN: usize = 1000;
/// …and at most this many: ~5,000 signatures a second, about a quarter of
/// a core of this machine's batches (18,000 signatures per CPU-second
/// measured, results/issue19-2026-11-27), so that a zone of millions of
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
    /// When the next key event is due.
    pub(super) at: Option<Instant>,
    /// Signatures by keys that no longer sign may be in the zone: they are
    /// replaced in larger batches, and a pass that finds none settles the
    /// keys waiting for it.
    pub(super) rekeying: bool,
    /// The next key action as last logged.
    pub(super) announced: Option<(u64, String)>,
}

/// The instant of a Unix time (now when it is past).
pub(super) fn instant_of(t: u64, now: u64) -> Instant {
    Instant::now() + Duration::from_secs(t.saturating_sub(now))
}

impl Writer {
    /// Runs the zone's key events due now (and `trigger`'s), puts the
    /// signer of the moment in the stage and brings the apex's key records
    /// to it (one journaled change); what was done.
    pub(super) fn key_event(&mut self, trigger: Trigger) -> Result<String, String> {
        let Some(roll) = self.keys.as_ref() else {
            return Err("the zone is not signed here (no dnssec-signing)".into());
        };
        let current = self.current().ok_or("the zone is not served")?;
        let now = unix_now();
        let ttls = crate::signing::ttls(&roll.signing, &current);
        let old = self.stage.signer.clone();
        let events = crate::signing::key_events(
            &roll.kasp_db,
            &self.origin,
            &roll.signing,
            ttls,
            now,
            trigger,
            old.as_ref().map(|s| s.progress()),
        );
        let (events, log) = match events {
            Ok(e) => e,
            Err(e) => {
                if let Some(roll) = self.keys.as_mut() {
                    roll.at = Some(Instant::now() + super::RETRY_AFTER);
                }
                return Err(format!(
                    "{e}; tried again in {} s",
                    super::RETRY_AFTER.as_secs()
                ));
            }
        };
        let refused = events.refused.clone();
        let same_signers = old.as_ref().is_some_and(|o| o.signs_like(&events.signer));
        self.stage.signer = Some(Arc::new(events.signer));
        if let Some(roll) = self.keys.as_mut() {
            roll.at = events.next.map(|t| instant_of(t, now));
            if !same_signers {
                roll.rekeying = true;
            }
            crate::signing::announce(&self.origin, events.action, &mut roll.announced, false);
        }
        let from = current.serial();
        // A secondary with nothing transferred yet has no key records to
        // change: its first transfer is signed whole with these keys.
        let serial = if crate::secondary::is_placeholder(&current) {
            from
        } else {
            self.run_stage(Change::Rekey, None)?
        };
        if !same_signers {
            // The signatures of keys that stopped signing (and those of
            // keys that started) made from now on, a batch a second.
            self.resign_after = None;
            self.resign_at = Some(Instant::now());
        }
        if let Some(why) = refused {
            tracing::warn!("zone {}: DNSSEC, {why}", self.origin);
            return Err(why);
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
        let dir = crate::signing::key_dir(&roll.kasp_db, &self.origin);
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
            roll.at = Some(Instant::now());
        }
    }
}
