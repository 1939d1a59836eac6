//! A group of updates through the zone-update stage to the journal: one
//! zone version for the group, its changesets written to the journal —
//! synced there, or left to the commit log shared by all zones (the group
//! then waits, parked, and is published and answered when the log's word
//! comes) — then the replies.

use std::sync::Arc;
use std::time::Instant;

use lode_wire::rcode;
use lode_zonedb::{Changeset, Zone};
use lode_zones::{Change, StageError, Step};

use super::super::pool::WeakQueue;
use super::super::{reply, Work};
use super::Writer;
use crate::clock::unix_now;

/// A group of updates journaled but not yet durable: what to publish and
/// answer once the commit log has synced it (or to take back if not).
pub(super) struct Pending {
    group: Vec<Work>,
    outcomes: Vec<Result<String, u16>>,
    version: Arc<Zone>,
    changes: Vec<Changeset>,
    undo: lode_journal::Undo,
    started: Instant,
    base_serial: u32,
}

impl Writer {
    /// Processes one group: every job against the version before it, one
    /// journal write for all the changes, one publication, then the replies.
    /// Returns false when the journal write failed (nothing was published).
    /// A group of updates only, with a commit log: the journal write is not
    /// synced here; the group waits for the commit log (`self.pending`) and
    /// is published and answered in [`Writer::finish_pending`].
    pub(super) fn commit(&mut self, group: Vec<Work>, out: &mut [u8], me: &WeakQueue) -> bool {
        let started = Instant::now();
        let Some(base) = self.publisher.get(&self.origin) else {
            for work in group {
                work.fail(out, "the zone is not served");
            }
            return false;
        };
        let now = unix_now();
        let mut version = base.clone();
        let mut changes: Vec<Changeset> = Vec::new();
        let mut outcomes: Vec<Result<String, u16>> = Vec::with_capacity(group.len());
        // One working version for the group, advanced by each change where
        // it stands (`Stage::run_mut`). A signed zone: each change staged
        // unsigned, the group signed in one pass after (`Stage::sign_group`).
        let stage = self.stage.unsigned();
        for work in &group {
            let from = version.serial();
            let staged = match work {
                Work::Update(job) => stage.run_mut(&mut version, Change::Update(&job.req), now),
                Work::File { zone, .. } => {
                    stage.run_mut(&mut version, Change::Difference(zone), now)
                }
                Work::Flush { .. }
                | Work::Sign { .. }
                | Work::Settings(_)
                | Work::History { .. }
                | Work::Incremental { .. }
                | Work::Replace { .. } => Ok(Step::Unchanged),
            };
            let outcome = match staged {
                Ok(Step::Changed {
                    changes: made,
                    serial_raised,
                }) => {
                    // What a zone file's change did, for its caller (an
                    // update's reply says no more than NOERROR).
                    let what = match work {
                        Work::File { .. } => {
                            let (removed, added) = made.iter().fold((0, 0), |(r, a), cs| {
                                (r + cs.removed.len(), a + cs.added.len())
                            });
                            for cs in &made {
                                self.log_file_change(cs, serial_raised);
                            }
                            format!(
                                "{removed} records removed, {added} added, serial {from} → {}",
                                version.serial()
                            )
                        }
                        _ => String::new(),
                    };
                    changes.extend(made);
                    Ok(what)
                }
                // (An update or a file's difference never replaces the zone.)
                Ok(_) => Ok(match work {
                    Work::File { .. } => format!("no change, serial {}", version.serial()),
                    _ => String::new(),
                }),
                Err(StageError::Update(e)) => {
                    let code = e.rcode().unwrap_or(rcode::SERVFAIL);
                    if let Work::Update(job) = work {
                        if crate::lograte::REFUSALS.allow(crate::clock::unix_now()) {
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
        let mut durable = true;
        if self.stage.signer.is_some() && !changes.is_empty() {
            match self
                .stage
                .sign_group(&base, std::mem::take(&mut changes), now)
            {
                Ok((signed, cs)) => {
                    version = signed;
                    changes = cs;
                }
                Err(e) => {
                    durable = false;
                    tracing::error!(
                        "zone {}: the group's changes could not be signed ({e}): {} updates answered SERVFAIL",
                        self.origin,
                        group.len()
                    );
                }
            }
        }
        // The zone's first change: its state goes first (the base the
        // journal continues, and the zone file version it took in).
        if durable && self.state_pending && !changes.is_empty() {
            if let Err(e) = self.write_state_now(true) {
                durable = false;
                tracing::error!(
                    "zone {}: cannot write its state ({e}): {} updates answered SERVFAIL",
                    self.origin,
                    group.len()
                );
            }
        }
        let only_updates = group.iter().all(|w| matches!(w, Work::Update(_)));
        if durable && !changes.is_empty() {
            let appended = match &self.commit_log {
                Some(log) if only_updates => match self.journal.append_deferred(&changes, None) {
                    Ok(Some(d)) => {
                        let me = me.clone();
                        log.submit(d.record, Box::new(move |r| me.committed(r)));
                        self.pending = Some(Box::new(Pending {
                            group,
                            outcomes,
                            version,
                            changes,
                            undo: d.undo,
                            started,
                            base_serial: base.serial(),
                        }));
                        return true;
                    }
                    Ok(None) => Ok(()),
                    Err(e) => Err(e),
                },
                _ => self.journal.append(&changes),
            };
            if let Err(e) = appended {
                durable = false;
                tracing::error!(
                    "zone {}: journal write failed ({e}): {} updates answered SERVFAIL, serial stays {}",
                    self.origin,
                    group.len(),
                    base.serial()
                );
            } else {
                self.publish_group(&version, &changes, group.len(), started);
            }
        }
        self.answer(group, outcomes, durable, out);
        durable
    }

    /// The commit log's word on the pending group: published and answered,
    /// or taken back out of the journal and answered SERVFAIL (on the
    /// commit log's thread: compaction and the rest wait for a step).
    pub(super) fn finish_pending(&mut self, result: Result<(), String>, out: &mut [u8]) {
        let Some(p) = self.pending.take() else {
            return;
        };
        let durable = match result {
            Ok(()) => {
                self.publish_group(&p.version, &p.changes, p.group.len(), p.started);
                true
            }
            Err(e) => {
                self.journal.undo(p.undo);
                tracing::error!(
                    "zone {}: journal write failed ({e}): {} updates answered SERVFAIL, serial stays {}",
                    self.origin,
                    p.group.len(),
                    p.base_serial
                );
                false
            }
        };
        self.answer(p.group, p.outcomes, durable, out);
    }

    /// Publishes a group's version once its changes are durable, and counts
    /// and logs the commit.
    fn publish_group(
        &mut self,
        version: &Arc<Zone>,
        changes: &[Changeset],
        jobs: usize,
        started: Instant,
    ) {
        crate::metrics::EVENTS.journal_commits.bump();
        self.publisher.publish(version.clone());
        if let Some(c) = &mut self.compaction {
            c.since.extend(changes.iter().cloned());
        }
        self.log
            .add(jobs, changes.len(), started.elapsed(), version.serial());
        // A group is logged when it commits, unless a line was written
        // less than a second ago: then it is counted, and the writer's next
        // tick writes the summary (the last updates before a quiet period
        // are logged too).
        if self.log.due() {
            self.log.write(&self.origin);
        }
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
                        crate::metrics::EVENTS.updates_applied.bump();
                    } else {
                        crate::metrics::EVENTS.updates_failed.bump();
                    }
                    let n = reply(&job.msg, code, job.signed.as_ref(), out);
                    job.reply.send(&out[..n]);
                }
                (Work::File { done, .. }, outcome) => {
                    let _ = done.send(
                        outcome.map_err(|c| format!("not applied ({})", lode_wire::rcode::name(c))),
                    );
                }
                (Work::Flush { done }, _) => {
                    let _ = done.send(Err("not written".into()));
                }
                (Work::Sign { done, .. }, _) => {
                    let _ = done.send(Err("not signed".into()));
                }
                (Work::History { .. } | Work::Settings(_), _) => {}
                (Work::Incremental { done, .. } | Work::Replace { done, .. }, _) => {
                    let _ = done.send(Err("not taken".into()));
                }
            }
        }
    }
}
