//! A group of updates as one transaction of the zone-update stage and one
//! commit: its changesets written to the journal — synced there, or left
//! to the commit log shared by all zones (the group then waits, parked,
//! and is published and answered when the log's word comes) — then the
//! replies.

use std::time::Instant;

use lode_wire::rcode;
use lode_zones::{Change, Sealed, StageError};

use super::super::pool::WeakQueue;
use super::super::{reply, Work, WriterError};
use super::commit::Sync;
use super::Writer;
use crate::clock::unix_now;
use crate::publish::commit::Committed;

/// A group of updates journaled but not yet durable: what to publish and
/// answer once the commit log has synced it (or to take back if not).
pub(super) struct Pending {
    group: Vec<Work>,
    outcomes: Vec<Result<String, u16>>,
    sealed: Sealed,
    undo: lode_journal::Undo,
    started: Instant,
}

impl Writer {
    /// Processes one group: one transaction over the published version,
    /// every job applied in turn (one refused leaves the others), sealed
    /// (a signed zone's changes signed in one pass), one commit, then the
    /// replies. Returns false when the commit failed (nothing was
    /// published). A group of updates only, with a commit log: the journal
    /// write is not synced here; the group waits for the commit log
    /// (`self.pending`) and is published and answered in
    /// [`Writer::finish_pending`].
    pub(super) fn commit(&mut self, group: Vec<Work>, out: &mut [u8], me: &WeakQueue) -> bool {
        let started = Instant::now();
        let Some(base) = self.publisher.get(&self.origin) else {
            for work in group {
                work.fail(out, WriterError::NotServed);
            }
            return false;
        };
        let mut txn = self.stage.begin(&base, unix_now());
        let mut outcomes: Vec<Result<String, u16>> = Vec::with_capacity(group.len());
        for work in &group {
            let applied = match work {
                Work::Update(job) => txn.apply(Change::Update(&job.req)),
                Work::File { zone, .. } => txn.apply(Change::Difference(zone)),
                Work::Flush { .. }
                | Work::Freeze { .. }
                | Work::Backup { .. }
                | Work::Restore { .. }
                | Work::Sign { .. }
                | Work::Settings(_)
                | Work::History { .. }
                | Work::Incremental { .. }
                | Work::Replace { .. }
                | Work::Mark(_) => Ok(None),
            };
            let outcome = match applied {
                // What a zone file's change did, for its caller (an
                // update's reply says no more than NOERROR).
                Ok(Some(a)) => Ok(match work {
                    Work::File { .. } => {
                        self.log_file_change(&a);
                        format!(
                            "{} records removed, {} added, serial {} → {}",
                            a.removed, a.added, a.from, a.to
                        )
                    }
                    _ => String::new(),
                }),
                Ok(None) => Ok(match work {
                    Work::File { .. } => format!("no change, serial {}", txn.version().serial()),
                    _ => String::new(),
                }),
                Err(StageError::Update(e)) => {
                    let code = e.rcode().unwrap_or(rcode::SERVFAIL);
                    if let Work::Update(job) = work {
                        if self.shared.refusals.allow(crate::clock::unix_now()) {
                            tracing::info!(
                                "zone {}: update from {} refused, {}: {e}",
                                self.origin,
                                job.peer,
                                lode_wire::rcode::name(code)
                            );
                        }
                    }
                    Err(code)
                }
                Err(StageError::Digest(e)) if matches!(work, Work::Update(_)) => {
                    if self.shared.refusals.allow(crate::clock::unix_now()) {
                        tracing::info!(
                            "zone {}: {} refused, SERVFAIL: what it leaves fails zonemd-verify ({e})",
                            self.origin,
                            work.source()
                        );
                    }
                    Err(rcode::SERVFAIL)
                }
                Err(e) => {
                    tracing::error!(
                        "zone {}: {} made a change that does not apply ({e}), SERVFAIL",
                        self.origin,
                        work.source()
                    );
                    Err(rcode::SERVFAIL)
                }
            };
            outcomes.push(outcome);
        }
        let sealed = match txn.seal() {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(
                    "zone {}: the group's changes could not be sealed ({e}): {} requests answered SERVFAIL, serial stays {}",
                    self.origin,
                    group.len(),
                    base.serial()
                );
                self.answer(group, outcomes, false, out);
                return false;
            }
        };
        let only_updates = group.iter().all(|w| matches!(w, Work::Update(_)));
        let sync = match &self.commit_log {
            Some(_) if only_updates => Sync::Deferred,
            _ => Sync::Now { upstream: None },
        };
        let durable = match self.commit_sealed(&sealed, sync, group.len(), started) {
            Ok(Committed::Deferred(d)) => {
                if let Some(log) = &self.commit_log {
                    let me = me.clone();
                    log.submit(
                        d.record,
                        Box::new(move |r| me.committed(r.map_err(WriterError::from))),
                    );
                }
                self.pending = Some(Box::new(Pending {
                    group,
                    outcomes,
                    sealed,
                    undo: d.undo,
                    started,
                }));
                return true;
            }
            Ok(_) => true,
            Err(e) => {
                tracing::error!(
                    "zone {}: {e}: {} requests answered SERVFAIL, serial stays {}",
                    self.origin,
                    group.len(),
                    base.serial()
                );
                false
            }
        };
        self.answer(group, outcomes, durable, out);
        durable
    }

    /// The commit log's word on the pending group: published and answered,
    /// or taken back out of the journal and answered SERVFAIL (on the
    /// commit log's thread: compaction and the rest wait for a step).
    pub(super) fn finish_pending(&mut self, result: Result<(), WriterError>, out: &mut [u8]) {
        let Some(p) = self.pending.take() else {
            return;
        };
        let p = *p;
        let durable = match result {
            Ok(()) => match self.commit_sealed(&p.sealed, Sync::Done, p.group.len(), p.started) {
                Ok(_) => true,
                Err(e) => {
                    // (Its own writer is the zone's only one: not seen.)
                    tracing::error!(
                        "zone {}: a group on stable storage not published ({e}): {} requests answered SERVFAIL",
                        self.origin,
                        p.group.len()
                    );
                    false
                }
            },
            Err(e) => {
                self.journal.undo(p.undo);
                tracing::error!(
                    "zone {}: journal write failed ({e}): {} requests answered SERVFAIL, serial stays {}",
                    self.origin,
                    p.group.len(),
                    p.sealed.base.serial()
                );
                false
            }
        };
        self.answer(p.group, p.outcomes, durable, out);
    }

    /// Answers every job of a group with its outcome (SERVFAIL for all
    /// when the group is not durable).
    fn answer(
        &mut self,
        group: Vec<Work>,
        outcomes: Vec<Result<String, u16>>,
        durable: bool,
        out: &mut [u8],
    ) {
        for (work, outcome) in group.into_iter().zip(outcomes) {
            let outcome = if durable {
                outcome
            } else {
                Err(rcode::SERVFAIL)
            };
            match (work, outcome) {
                (Work::Update(job), outcome) => {
                    let code = outcome.map_or_else(|c| c, |_| rcode::NOERROR);
                    if code == rcode::NOERROR {
                        self.shared.events.updates_applied.bump();
                    } else {
                        self.shared.events.updates_failed.bump();
                    }
                    let n = reply(&job.msg, code, job.signed.as_ref(), out);
                    job.reply.send(&out[..n]);
                }
                (Work::File { done, .. }, outcome) => {
                    let _ = done.send(outcome.map_err(WriterError::NotApplied));
                }
                (Work::Flush { done }, _) => {
                    let _ = done.send(Err(WriterError::NotCommitted("not written").into()));
                }
                (Work::Sign { done, .. }, _) => {
                    let _ = done.send(Err(WriterError::NotCommitted("not signed")));
                }
                (Work::Freeze { done, .. }, _) => {
                    let _ = done.send(());
                }
                (Work::Backup { done, .. } | Work::Restore { done, .. }, _) => {
                    let _ = done.send(Err(WriterError::NotCommitted("not done")));
                }
                (Work::History { .. } | Work::Settings(_) | Work::Mark(_), _) => {}
                (Work::Incremental { done, .. } | Work::Replace { done, .. }, _) => {
                    let _ = done.send(Err(WriterError::NotCommitted("not taken")));
                }
            }
        }
    }
}
