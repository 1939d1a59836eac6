//! Compaction and journal flushes of one writer: when a delta is worth
//! folding into a new base, when the journal is worth a state snapshot,
//! and the background compaction that does both.

use std::time::Instant;

use lode_zonedb::{Changeset, Zone};

use super::{Writer, RETRY_AFTER, SMALL_ZONE_NODES};
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

/// Whether the journal is to be flushed now: it is over one of its bounds,
/// and holding at least the zone's size — a flush compacts and writes the
/// whole zone, so a bound reached by changes smaller than the zone waits
/// until the history is worth a state snapshot (the writing stays at most
/// 2 × the changes; at a quarter of the zone's size, 17 % of the server's
/// CPU went to these flushes under single-record updates to 50,000-name
/// zones). The depth bound is thus soft, and so is the size bound unless
/// the operator set one (`max_usage`: then reaching it flushes): with
/// Knot's 100 MiB default, re-signing a 5 M-record zone flushed, and so
/// rebuilt the whole zone, 28 times — half the CPU of the re-signing.
pub(super) fn worth_flushing(
    over_bounds: bool,
    usage: u64,
    max_usage: Option<u64>,
    zone_bytes: usize,
) -> bool {
    over_bounds && (max_usage.is_some_and(|m| usage >= m) || usage >= zone_bytes as u64)
}

/// Whether a delta of `entries` over a base of `nodes` names is worth
/// folding into a new base: lookups slow down slowly with the delta (two
/// binary searches), memory grows with it, and a compaction copies the
/// whole zone — at a quarter of its size, each change pays for copying at
/// most four names (at a sixteenth, 22 % of the server's CPU went to
/// compactions under single-record updates to 50,000-name zones,
/// `PERF=1 bash scripts/bench-update-cpu.sh`). A zone gone quiet is
/// compacted whatever its delta (`IDLE_COMPACTION`).
pub(super) fn worth_compacting(entries: usize, nodes: usize) -> bool {
    entries >= 4096 && (entries >= nodes / 4 || entries >= 1 << 20)
}

impl Writer {
    /// Whether the journal is to be flushed now (see [`worth_flushing`]).
    pub(super) fn flush_worth(&self, zone: &Zone) -> bool {
        self.flush_worth_by(zone, 1)
    }

    /// Whether the journal would be worth flushing were it `factor` times
    /// as large.
    fn flush_worth_by(&self, zone: &Zone, factor: u64) -> bool {
        let usage = self.journal.usage_bytes().saturating_mul(factor);
        self.journal.needs_flush() && worth_flushing(true, usage, self.max_usage, zone.heap_bytes())
    }

    /// Starts compacting the published version when its delta is large, or
    /// when the journal is over its bounds (then the compacted state is
    /// written and the journal history it covers dropped).
    pub(super) fn maybe_compact(&mut self) {
        self.maybe_compact_now(false);
    }

    /// [`Writer::maybe_compact`]; with `idle`, any non-empty delta is worth it.
    pub(super) fn maybe_compact_now(&mut self, idle: bool) {
        if self.compaction.is_some() || Instant::now() < self.retry_at {
            return;
        }
        let Some(zone) = self.publisher.get(&self.origin) else {
            return;
        };
        let entries = zone.delta_len();
        let compact = worth_compacting(entries, zone.node_count()) || (idle && entries > 0);
        // A compaction started for the delta also writes the state when the
        // journal is half way to being worth it: the flush would otherwise
        // come right after, a second whole compaction (every other one when
        // re-signing a 5 M-record zone).
        let flush = self.flush_worth(&zone) || (compact && self.flush_worth_by(&zone, 2));
        if !(flush || compact) {
            return;
        }
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
                        self.retry_at = Instant::now() + RETRY_AFTER;
                        tracing::warn!(
                            "zone {}: journal flush failed ({e}); it keeps its history",
                            self.origin
                        )
                    }
                },
                Err(e) => {
                    self.retry_at = Instant::now() + RETRY_AFTER;
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
                self.retry_at = Instant::now() + RETRY_AFTER;
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
            for (addr, len) in zone.memory_regions() {
                lode_io::mem::prefer_huge_pages(addr, len);
            }
        }
        let serial = zone.serial();
        let Some(current) = self.current() else {
            return;
        };
        if let Err(e) = self.relaid(&current, zone) {
            tracing::error!(
                "zone {}: a compaction's result not published ({e}); the delta stays",
                self.origin
            );
            return;
        }
        if small {
            // Small: nothing worth a heap trim or a log line.
            return;
        }
        // The old base and delta go on the reclaiming thread a moment
        // later (no query frees them), which trims the heap after; what the
        // compaction's own work left goes back now, and what is left a
        // second later too.
        lode_io::mem::trim_heap();
        self.trim_at = Some(Instant::now() + std::time::Duration::from_secs(1));
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

#[cfg(test)]
mod flush_tests {
    use super::worth_flushing;

    #[test]
    fn a_flush_waits_until_the_history_is_worth_a_snapshot() {
        let set = Some(100 << 20);
        // Not over a bound: never.
        assert!(!worth_flushing(false, 1 << 30, set, 1000));
        assert!(!worth_flushing(false, 1 << 30, None, 1000));
        // Over the depth bound with little history for a big zone: later.
        assert!(!worth_flushing(true, 10_000, set, 1 << 30));
        assert!(!worth_flushing(true, 10_000, None, 1 << 30));
        // The zone's size, or a size bound the operator set: now.
        assert!(!worth_flushing(true, 1 << 28, Some(100 << 30), 1 << 30));
        assert!(worth_flushing(true, 1 << 30, Some(100 << 30), 1 << 30));
        assert!(worth_flushing(true, 1 << 30, None, 1 << 30));
        assert!(worth_flushing(true, 100 << 20, set, 1 << 40));
        // Knot's default size bound, not set: a zone larger than it waits
        // for its own size (the journal was over 100 MiB: over the bound).
        assert!(!worth_flushing(true, 100 << 20, None, 1 << 30));
        // A zone smaller than the default: as before.
        assert!(worth_flushing(true, 100 << 20, None, 50 << 20));
    }
}
