//! A signed zone's signatures made again before they expire: a batch of
//! names every [`EVERY`] while signatures are due, through the zone-update
//! stage and the journal like any change (schedule: `lode_dnssec::refresh`).
//! The search for due names reads a bounded number of names each time (a
//! round of a large zone is spread over seconds), so the writer thread the
//! zone shares with others is never held by a read of the whole zone.

use std::time::{Duration, Instant};

use lode_zones::Change;

use super::Writer;
use crate::clock::unix_now;
use crate::update::WriterError;

/// The pause between two batches while signatures are due.
const EVERY: Duration = Duration::from_secs(1);

impl Writer {
    /// Signs the zone whole again, with the next serial (`lode zone-sign`,
    /// as `knotc zone-sign`): every signature made anew, the history
    /// before it dropped (IXFR from older serials becomes AXFR).
    pub(super) fn sign_whole(&mut self, why: &str) -> Result<String, WriterError> {
        let Some(progress) = self.stage.signer.as_ref().map(|s| s.progress()) else {
            return Err(WriterError::NotSigned);
        };
        let current = self.current().ok_or(WriterError::NotServed)?;
        let started = Instant::now();
        // The zone's own count: signings of other zones meanwhile are not
        // this one's.
        let made = progress.made();
        let serial = self.run_stage(Change::Resign, None)?;
        self.resign_round.restart();
        let text = format!(
            "signed whole: {} signatures in {:.1} s, serial {} → {serial}",
            progress.made().saturating_sub(made),
            started.elapsed().as_secs_f64(),
            current.serial()
        );
        tracing::info!("zone {}: DNSSEC, {text} ({why})", self.origin);
        Ok(text)
    }

    /// Makes the next batch of due signatures again, and sets when the
    /// next falls due.
    pub(super) fn refresh_signatures(&mut self) {
        self.upkeep.schedule_resign(None);
        let Some(signer) = self.stage.signer.clone() else {
            return;
        };
        let Some(zone) = self.current() else {
            return;
        };
        let now = unix_now();
        let mut batch = signer.batch(&zone, EVERY.as_secs());
        if self.keys.as_ref().is_some_and(|k| k.rekeying) {
            // After a key event: the zone's signatures replaced within
            // about RESIGN_SPREAD, at a bounded pace (see keys.rs).
            use super::keys::{RESIGN_MAX, RESIGN_MIN, RESIGN_SPREAD};
            let spread = (RESIGN_SPREAD.as_secs() / EVERY.as_secs()) as usize;
            let pace = zone
                .node_count()
                .div_ceil(spread)
                .clamp(RESIGN_MIN, RESIGN_MAX);
            batch = batch.max(pace);
        }
        // Kept to read the batch again when it cannot be signed now.
        let round = self.resign_round.clone();
        let due = signer.due(&zone, &mut self.resign_round, now, batch);
        if !due.owners.is_empty() {
            let from = zone.serial();
            match self.run_stage(Change::Refresh(&due.owners), None) {
                Ok(serial) => {
                    tracing::debug!(
                        "zone {}: DNSSEC, signatures of {} names made again, serial {from} → {serial}",
                        self.origin,
                        due.owners.len()
                    );
                }
                Err(e) => {
                    tracing::error!(
                        "zone {}: DNSSEC, signatures due not made again: {e}; trying again in {} s",
                        self.origin,
                        super::RETRY_AFTER.as_secs()
                    );
                    self.upkeep
                        .schedule_resign(Some(Instant::now() + super::RETRY_AFTER));
                    self.resign_round = round;
                    return;
                }
            }
        }
        if due.round_over {
            // Every signature is by the keys of the moment now.
            self.keys_settled();
        }
        signer.progress().set_schedule(&due);
        self.upkeep
            .schedule_resign(lode_control::upkeep::resign_time(
                due.next,
                now,
                Instant::now(),
            ));
        if let Some(t) = due.next.filter(|&t| t > now) {
            tracing::debug!(
                "zone {}: DNSSEC, next signatures due in {} s",
                self.origin,
                t - now
            );
        }
    }
}
