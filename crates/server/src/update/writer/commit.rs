//! A zone writer's one commit: every transaction this zone's writer seals
//! (an UPDATE group, a zone file, IXFR or AXFR in, re-signing, a key event,
//! a compaction, an expiry mark) leaves through [`Writer::commit_sealed`]:
//!
//! ```text
//!  Sealed ─▶ state (before the zone's first change: the base the journal continues)
//!         ─▶ publish::commit: journal (synced, or deferred to the commit log) ─▶ publish ─▶ NOTIFY
//!         ─▶ the writer's books: changes made during a compaction, the commit log line,
//!            the primary's serial (a secondary signed here), the state after a whole version
//! ```
//!
//! The replies to the requests a group answers come after it (`group.rs`).

use std::time::Instant;

use lode_zones::{History, Sealed};

use super::Writer;
use crate::loading::snapshot::Durability;
use crate::publish::commit::{commit, CommitError, Committed, Journaling};

/// How a transaction's changes reach stable storage.
#[derive(Debug, Clone, Copy)]
pub(super) enum Sync {
    /// Appended and synced now; the last changeset marked with the
    /// primary's serial it stands for (a secondary signed here).
    Now {
        /// The primary's serial.
        upstream: Option<u32>,
    },
    /// Appended, the sync left to the commit log shared by all zones.
    Deferred,
    /// On stable storage already (the commit log's word came).
    Done,
}

impl Writer {
    /// Commits `sealed` (see the module's note). `jobs`: the requests it
    /// answers (for the log); `started`: when their work began.
    pub(super) fn commit_sealed(
        &mut self,
        sealed: &Sealed,
        sync: Sync,
        jobs: usize,
        started: Instant,
    ) -> Result<Committed, CommitError> {
        if sealed.is_unchanged() {
            return Ok(Committed::Unchanged);
        }
        let upstream = match sync {
            Sync::Now { upstream } => upstream,
            Sync::Deferred | Sync::Done => None,
        };
        let journaling = match (&sealed.history, sync) {
            (History::Continues(_), Sync::Done) => Journaling::Durable,
            (History::Continues(_), _) => {
                // The zone's first change: its state goes first (the base
                // the journal continues, and the zone file version it took).
                if self.state_pending {
                    self.write_state_now(true).map_err(CommitError::state)?;
                }
                match sync {
                    Sync::Deferred => Journaling::Deferred {
                        journal: &mut self.journal,
                    },
                    _ => Journaling::Append {
                        journal: &mut self.journal,
                        upstream,
                    },
                }
            }
            (History::Restarts, _) => {
                // A compaction of the old version is of no use any more.
                self.compaction = None;
                self.upkeep.compaction_dropped();
                Journaling::Restart {
                    journal: &mut self.journal,
                }
            }
            (History::Unchanged, _) => Journaling::None,
        };
        let committed = commit(&self.publisher, sealed, journaling)?;
        if !matches!(committed, Committed::Published) {
            return Ok(committed);
        }
        let version = &sealed.version;
        if let Some(u) = upstream {
            self.set_upstream(u);
        }
        match &sealed.history {
            History::Continues(changes) => {
                self.shared.events.journal_commits.bump();
                if let Some(c) = &mut self.compaction {
                    c.since.extend(changes.iter().cloned());
                }
                self.upkeep.changed(Instant::now());
                self.log
                    .add(jobs, changes.len(), started.elapsed(), version.serial());
                // A group is logged when it commits, unless a line was
                // written less than a second ago: then it is counted, and
                // the writer's next tick writes the summary.
                if self.log.due() {
                    self.log.write(&self.origin);
                }
            }
            History::Restarts => {
                let sync = if self.refetchable {
                    Durability::Cached
                } else {
                    Durability::Synced
                };
                self.write_state(false, sync).map_err(CommitError::state)?;
                self.upkeep.replaced();
            }
            History::Unchanged => {}
        }
        Ok(committed)
    }
}
