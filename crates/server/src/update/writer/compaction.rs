//! Compaction and journal flushes of one writer: when a delta is worth
//! folding into a new base, when the journal is worth a state snapshot,
//! and the background compaction that does both.

use std::time::Instant;

use lode_zonedb::{Changeset, Zone};

use lode_control::upkeep::worth_flushing;

use super::{Writer, SMALL_ZONE_NODES};
use crate::loading::snapshot::Durability;
use crate::update::background::Background;

/// A background compaction of one version.
pub(super) struct Compaction {
    result: Background<Compacted>,
    pub(super) since: Vec<Changeset>,
    started: Instant,
    entries: usize,
}

/// What a background compaction gives back: the new version, and whether
/// its state snapshot was written (when it was asked to flush the journal).
pub(super) struct Compacted {
    zone: Result<Zone, lode_zonedb::ApplyError>,
    state: Option<std::io::Result<()>>,
}

impl Writer {
    /// Whether the journal is to be flushed now (see [`worth_flushing`]).
    pub(super) fn flush_worth(&self, zone: &Zone) -> bool {
        self.flush_worth_by(zone, 1)
    }

    /// Whether the journal would be worth flushing were it `factor` times
    /// as large.
    pub(super) fn flush_worth_by(&self, zone: &Zone, factor: u64) -> bool {
        let usage = self.journal.usage_bytes().saturating_mul(factor);
        self.journal.needs_flush() && worth_flushing(true, usage, self.max_usage, zone.heap_bytes())
    }

    /// Starts compacting the published version when its delta is large, or
    /// when the journal is over its bounds (then the compacted state is
    /// written and the journal history it covers dropped).
    pub(super) fn maybe_compact(&mut self) {
        self.maybe_compact_now(false);
    }

    /// [`Writer::maybe_compact`]; with `idle`, the zone is quiet: a smaller
    /// delta is worth it (the upkeep machine decides: `Upkeep::compaction`).
    pub(super) fn maybe_compact_now(&mut self, idle: bool) {
        if self.compaction.is_some() {
            return;
        }
        let Some(zone) = self.publisher.get(&self.origin) else {
            return;
        };
        let Some(mut now) = self.zone_now() else {
            return;
        };
        now.flush_worth = self.flush_worth(&zone);
        now.flush_worth_half = self.flush_worth_by(&zone, 2);
        let Some(decided) = self.upkeep.compaction(&now, idle, Instant::now()) else {
            return;
        };
        let flush = decided.flush;
        let entries = zone.delta_len();
        let name = format!("lode-cmp-{}", self.origin.to_string().trim_end_matches('.'));
        let state = flush.then(|| (self.state_path(), self.file_tag.clone()));
        // A small zone is compacted at once, on the writer's thread (a
        // thread of its own would cost more than the work).
        let small = zone.node_count().saturating_add(entries) < SMALL_ZONE_NODES;
        let work = move || {
            let compacted = zone.compact();
            // The version compacted goes before the result is handed over,
            // so the writer's heap trim after publishing finds it freed.
            drop(zone);
            let zone = compacted;
            let state = match (&zone, state) {
                (Ok(z), Some((path, tag))) => Some(crate::loading::snapshot::write_state(
                    &path,
                    z,
                    &tag,
                    Durability::Synced,
                )),
                _ => None,
            };
            Compacted { zone, state }
        };
        let spawned = if small {
            Ok(Background::done(work()))
        } else {
            Background::spawn(name, work)
        };
        match spawned {
            Ok(result) => {
                if !small {
                    tracing::info!(
                        "zone {}: compacting {entries} changed names into a new base",
                        self.origin
                    );
                }
                self.compaction = Some(Box::new(Compaction {
                    result,
                    since: Vec::new(),
                    started: Instant::now(),
                    entries,
                }));
                self.upkeep.compaction_started();
                if small {
                    self.finish_compaction();
                }
            }
            Err(e) => tracing::warn!("zone {}: cannot start a compaction: {e}", self.origin),
        }
    }

    /// Publishes a finished compaction, with the changes committed meanwhile
    /// applied to it.
    pub(super) fn finish_compaction(&mut self) {
        let Some(c) = &self.compaction else {
            return;
        };
        let Some(result) = c.result.poll() else {
            return;
        };
        let result = result.unwrap_or(Compacted {
            zone: Err(lode_zonedb::ApplyError::Invalid(Vec::new())),
            state: None,
        });
        let Some(c) = self.compaction.take() else {
            return;
        };
        if let (Ok(z), Some(written)) = (&result.zone, &result.state) {
            match written {
                Ok(()) => match self.journal.flushed_through(z.serial()) {
                    Ok(()) => tracing::info!(
                        "zone {}: state at serial {} written to {}, journal history up to it dropped ({} changesets kept)",
                        self.origin,
                        z.serial(),
                        self.state_path().display(),
                        self.journal.depth()
                    ),
                    Err(e) => {
                        self.upkeep.flush_failed(Instant::now());
                        tracing::warn!(
                            "zone {}: journal flush failed ({e}); it keeps its history",
                            self.origin
                        )
                    }
                },
                Err(e) => {
                    self.upkeep.flush_failed(Instant::now());
                    tracing::warn!(
                        "zone {}: cannot write the state snapshot {} ({e}); the journal keeps its history",
                        self.origin,
                        self.state_path().display()
                    )
                }
            }
        }
        let mut zone = match result.zone {
            Ok(z) => z,
            Err(e) => {
                self.upkeep.compaction_done(false, false, Instant::now());
                tracing::error!(
                    "zone {}: compaction failed ({e}); the delta stays",
                    self.origin
                );
                return;
            }
        };
        for cs in &c.since {
            match zone.apply(cs) {
                Ok(z) => zone = z,
                Err(e) => {
                    self.upkeep.compaction_done(false, false, Instant::now());
                    tracing::error!(
                        "zone {}: a change made during compaction does not apply to its result ({e}); the delta stays",
                        self.origin
                    );
                    return;
                }
            }
        }
        let small = zone.node_count() < SMALL_ZONE_NODES;
        if !small {
            crate::huge_pages::collapse_later(&zone);
        }
        let serial = zone.serial();
        let Some(current) = self.current() else {
            self.upkeep.compaction_done(false, false, Instant::now());
            return;
        };
        if let Err(e) = self.relaid(&current, zone) {
            self.upkeep.compaction_done(false, false, Instant::now());
            tracing::error!(
                "zone {}: a compaction's result not published ({e}); the delta stays",
                self.origin
            );
            return;
        }
        // A large one: the old base and delta go on the reclaiming thread
        // a moment later, and the heap is trimmed after.
        self.upkeep.compaction_done(true, !small, Instant::now());
        if small {
            // Small: nothing worth a heap trim or a log line.
            return;
        }
        // The old base and delta go on the reclaiming thread a moment
        // later (no query frees them), which trims the heap after; what the
        // compaction's own work left goes back now, and what is left a
        // second later too.
        lode_io::mem::trim_heap();
        tracing::info!(
            "zone {}: compacted {} changed names in {:.2} s ({} changes made meanwhile), serial {}",
            self.origin,
            c.entries,
            c.started.elapsed().as_secs_f64(),
            c.since.len(),
            serial
        );
    }
}
