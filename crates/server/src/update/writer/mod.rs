//! The zone writers: zone files taken in and written out, transfers in,
//! and the steps the pool runs; a group of updates through the stage to the
//! journal (or the commit log) is in `group.rs`, compaction and journal
//! flushes in `compaction.rs`, their start (state snapshot + journal
//! replay) in `start.rs`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use lode_journal::wal;
use lode_journal::Journal;
use lode_wire::Name;
use lode_zonedb::Zone;
use lode_zones::{Applied, Change, Stage};

use crate::config::ZonefileSync;
use crate::loading::flush::{Flushed, Written};
use crate::loading::snapshot::Durability;
use crate::lograte::LogLimit;
use crate::metrics::Events;

use super::background::{Background, FileDone, FileJob};
use super::pool::WeakQueue;
use super::signing::Signings;
use super::{SignWork, Work, WriterError};
use crate::clock::unix_now;
use crate::publish::Publisher;
use compaction::Compaction;
/// Wait after a failed key event, signature batch, compaction or zone-file
/// write before trying again.
use lode_control::upkeep::RETRY_AFTER;
use lode_control::upkeep::{self, Upkeep, IDLE_COMPACTION};
use lode_dnssec::Trigger;

mod backup;
mod commit;
mod commit_log;
mod compaction;
mod group;
mod keys;
mod resign;
mod start;
mod upstream;

use commit_log::CommitLog;
#[cfg(test)]
pub(crate) use start::start_writer;
pub(crate) use start::{parent_sources, start_writers, start_writers_for};
use upstream::parse_upstream_tag;

/// Zones with fewer names than this (base and delta) are compacted on the
/// writer's own thread.
const SMALL_ZONE_NODES: usize = 20_000;
/// Journal files the writers keep open between commits, all zones together;
/// beyond it, a zone's journal is closed after each commit (a burst of
/// updates to thousands of zones must not run out of file descriptors).
const MAX_OPEN_JOURNALS: usize = 128;
/// Zone files written in the background at once, all zones together.
const MAX_FILE_WRITES: usize = 4;

/// What the writers of one server count together (owned by its `Updates`,
/// not the process: two servers in one process, as the tests run them,
/// count apart).
#[derive(Debug)]
pub(crate) struct Shared {
    /// Journal files open now (see [`MAX_OPEN_JOURNALS`]).
    open_journals: std::sync::atomic::AtomicUsize,
    /// Zone-file writes running now (see [`MAX_FILE_WRITES`]).
    file_writes: std::sync::atomic::AtomicUsize,
    /// Threads asking or telling parents now (see `ds_push::ParentSlot`).
    parent_threads: Arc<std::sync::atomic::AtomicUsize>,
    /// The server's event counters (updates applied, journal commits,
    /// signatures made).
    pub(crate) events: Arc<Events>,
    /// The server's limit of the lines about refused requests.
    pub(crate) refusals: Arc<LogLimit>,
    /// The signing progress of the zones signed here.
    pub(crate) signings: Arc<Signings>,
}

impl Shared {
    /// Nothing open or running yet; counting into `events`, logging
    /// refusals within `refusals`.
    pub(crate) fn new(events: Arc<Events>, refusals: Arc<LogLimit>) -> Shared {
        Shared {
            open_journals: Default::default(),
            file_writes: Default::default(),
            parent_threads: Arc::default(),
            events,
            refusals,
            signings: Arc::default(),
        }
    }
}

/// One zone's writer: groups, journals, publishes, answers.
struct Writer {
    origin: Name,
    journal: Journal,
    publisher: Arc<Publisher>,
    /// The zone-update stage every change passes (with the serial policy).
    stage: Stage,
    /// A compaction running in the background, and the changesets
    /// committed since the version it compacts (applied again to its result).
    compaction: Option<Box<Compaction>>,
    /// The zone file version the state includes (see `config::stamp::source_tag`).
    file_tag: Vec<u8>,
    /// When the zone file is written, compactions start, the heap is
    /// trimmed (the decisions; the writer performs them).
    upkeep: Upkeep,
    /// The journal's size bound when the operator set one
    /// (journal-max-usage; see [`worth_flushing`]).
    max_usage: Option<u64>,
    /// Commits since the last log line (one line a second at most).
    log: CommitLog,
    /// The zone file (None for a built-in zone: never written).
    zone_file: Option<Arc<std::path::Path>>,
    /// When the zone file is written after a change.
    sync: ZonefileSync,
    /// Shared with the reloader: the files written.
    written: Arc<Written>,
    /// No state written yet: it is, before the first change is journaled.
    state_pending: bool,
    /// The journal's file is open and counted in `shared.open_journals`.
    holds_file: bool,
    /// Counted with the other writers.
    shared: Arc<Shared>,
    /// A zone-file write running in the background.
    file_write: Option<Background<FileDone>>,
    /// Where the search for due signatures is in its round of the zone.
    resign_round: lode_dnssec::Round,
    /// A zone signed here: its keys' policy and folder, and when their
    /// next event is due (see keys.rs).
    keys: Option<Box<keys::KeyRoll>>,
    /// A secondary signed here: its versions are numbered here, and the
    /// primary's serial the served one stands for is kept (journal marks,
    /// the state's tag, the publisher for the refresh).
    signs_transfers: bool,
    /// A secondary not signed here: a whole version transferred in can be
    /// fetched again, so its state is written without waiting for the disk
    /// (see [`Durability::Cached`]; a catalog's 10^5 members each waited for two
    /// syncs, the consumer's pace). Its journal's changes still are synced.
    refetchable: bool,
    /// The commit log shared by every zone (None: each journal append is
    /// synced on its own).
    commit_log: Option<Arc<wal::CommitLog>>,
    /// A group written to the journal, waiting for the commit log.
    pending: Option<Box<group::Pending>>,
    /// Work that came while a group was pending, in order.
    waiting: Vec<Work>,
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.release_file();
    }
}

impl Writer {
    /// When the writer wants a tick without work: a compaction running,
    /// the zone file due, a heap trim, or a zone gone quiet with changes
    /// not folded in.
    fn next_wake(&self) -> Option<Instant> {
        let now = Instant::now();
        let zone = self.zone_now().unwrap_or_default();
        let mut wake = self.upkeep.next_wake(&zone, now);
        let mut at = |t: Instant| wake = Some(wake.map_or(t, |w: Instant| w.min(t)));
        if let Some(t) = self.log.due_at() {
            at(t);
        }
        if let Some(t) = self.keys.as_ref().and_then(|k| k.parent.next_wake(now)) {
            at(t);
        }
        wake
    }
}

impl super::pool::Step for Writer {
    fn step(&mut self, group: Vec<Work>, out: &mut [u8], me: &WeakQueue) -> Option<Instant> {
        // While a group waits for the commit log, nothing else is done
        // (the journal is not to change under it) and new work waits, in
        // order, for the step `committed` asks for.
        let mut group = group;
        if self.pending.is_some() {
            self.waiting.append(&mut group);
            return None;
        }
        if !self.waiting.is_empty() {
            let mut all = std::mem::take(&mut self.waiting);
            all.append(&mut group);
            group = all;
        }
        self.finish_compaction();
        if self.log.due_at().is_some_and(|t| Instant::now() >= t) {
            self.log.write(&self.origin);
        }
        if self.keys.is_some() && self.upkeep.key_event_due(Instant::now()) {
            if let Err(e) = self.key_event(Trigger::Timers) {
                tracing::error!("zone {}: DNSSEC, key event: {e}", self.origin);
            }
        }
        if self.upkeep.resign_due(Instant::now()) {
            self.refresh_signatures();
        }
        self.check_submission(me);
        self.check_ds_push();
        if self.upkeep.trim_due(Instant::now()) {
            // The versions a compaction replaced are gone by now (their
            // last readers have left): their memory goes back.
            self.upkeep.trimmed();
            lode_io::mem::trim_heap();
        }
        if group.is_empty() {
            self.maybe_flush();
            if self.upkeep.idle_due(Instant::now()) {
                self.upkeep.idle_handled();
                self.maybe_compact_now(true);
                // A quiet zone keeps no file open.
                self.release_file();
            }
            return self.next_wake();
        }
        let wake = self.take(group, out, me);
        self.count_file();
        wake
    }

    fn committed(
        &mut self,
        result: Result<(), WriterError>,
        queued: Vec<Work>,
        out: &mut [u8],
        me: &WeakQueue,
    ) -> Option<Instant> {
        self.waiting.extend(queued);
        self.finish_pending(result, out);
        if self.waiting.is_empty() {
            // Compaction, the zone file and the rest at the next step.
            return self.next_wake().or(Some(Instant::now() + IDLE_COMPACTION));
        }
        // Updates that waited go to the commit log's next write at once,
        // from here (no pool thread woken for them), unless other work
        // waits or upkeep is due: then a step takes them.
        let updates_only = self.waiting.iter().all(|w| matches!(w, Work::Update(_)));
        if updates_only && self.upkeep_waits() {
            let group = std::mem::take(&mut self.waiting);
            self.upkeep.changed(Instant::now());
            self.commit(group, out, me);
            self.count_file();
            if self.pending.is_some() {
                return None;
            }
        }
        Some(Instant::now())
    }

    fn parked(&self) -> bool {
        self.pending.is_some()
    }
}

impl Writer {
    /// Where the zone's state snapshot goes (beside its journal, as
    /// `update::state_path` names it; derived, not kept: 10^5 writers).
    fn state_path(&self) -> PathBuf {
        self.journal.path().with_extension("state")
    }

    /// True when no upkeep is due that a step would do before the next
    /// group (a compaction to start or finish, the zone file, a log line,
    /// signatures): cheap checks only.
    fn upkeep_waits(&self) -> bool {
        let worth = self.publisher.get(&self.origin).is_some_and(|z| {
            upkeep::worth_compacting(z.delta_len(), z.node_count()) || self.flush_worth(&z)
        });
        // A signed zone's group is signed: not on the commit log's thread.
        self.stage.signer.is_none()
            && self.compaction.is_none()
            && self.file_write.is_none()
            && !worth
            && self.next_wake().is_none_or(|t| t > Instant::now())
    }

    /// Closes the journal's file until it is next needed.
    fn release_file(&mut self) {
        self.journal.release();
        if self.holds_file {
            self.holds_file = false;
            self.shared
                .open_journals
                .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Counts the journal's file if the step opened it, and closes it at
    /// once when too many are open.
    fn count_file(&mut self) {
        use std::sync::atomic::Ordering::Relaxed;
        if self.journal.is_open() && !self.holds_file {
            self.holds_file = true;
            self.shared.open_journals.fetch_add(1, Relaxed);
        }
        if self.holds_file && self.shared.open_journals.load(Relaxed) > MAX_OPEN_JOURNALS {
            self.release_file();
        }
    }

    /// A step with work: transfers, updates, files, flushes.
    fn take(&mut self, group: Vec<Work>, out: &mut [u8], me: &WeakQueue) -> Option<Instant> {
        // A mark or a transfer out changes no records: the zone stays quiet
        // (a catalog's 10^5 members are marked at every refresh).
        if group.iter().any(|w| {
            !matches!(
                w,
                Work::Mark(_) | Work::History { .. } | Work::Freeze { .. }
            )
        }) {
            self.upkeep.changed(Instant::now());
        }
        // History for transfers out is given before the group's changes
        // (the transfer then sends what was published when it asked);
        // flush requests are answered after them.
        let (history, group): (Vec<Work>, Vec<Work>) = group
            .into_iter()
            .partition(|w| matches!(w, Work::History { .. }));
        self.answer_history(history);
        // Transfers in, one at a time, before the group's updates.
        let (transfers, group): (Vec<Work>, Vec<Work>) = group.into_iter().partition(|w| {
            matches!(
                w,
                Work::Incremental { .. }
                    | Work::Replace { .. }
                    | Work::Backup { .. }
                    | Work::Restore { .. }
                    | Work::Sign { .. }
                    | Work::Settings(_)
                    | Work::Mark(_)
            )
        });
        for t in transfers {
            self.take_transfer(t);
        }
        if group.is_empty() {
            self.maybe_compact();
            return self.next_wake();
        }
        // zone-flush and zone-freeze are answered after the group.
        let (flushes, group): (Vec<Work>, Vec<Work>) = group
            .into_iter()
            .partition(|w| matches!(w, Work::Flush { .. } | Work::Freeze { .. }));
        if group.is_empty() {
            self.answer_flushes(flushes);
            self.maybe_compact();
            return self.next_wake();
        }
        let file = group.iter().find_map(|w| match w {
            Work::File { tag, .. } => Some(tag.clone()),
            _ => None,
        });
        // Compaction and the zone file are looked at before the group
        // too: a group may stay pending to the end of the step.
        if self.commit_log.is_some() {
            self.maybe_flush();
            self.maybe_compact();
        }
        let durable = self.commit(group, out, me);
        if self.pending.is_some() {
            // zone-flush requests are answered once the group is published.
            self.waiting.extend(flushes);
            return None;
        }
        let file = file.filter(|_| durable);
        // A zone file taken in: the state records it at once, so a
        // restart does not apply it again.
        if let Some(tag) = file {
            self.file_tag = tag;
            // The journal keeps the change: it is IXFR history.
            if let Err(e) = self.write_state_now(true) {
                tracing::error!(
                    "zone {}: cannot write its state after the zone file ({e})",
                    self.origin
                );
            }
        }
        self.answer_flushes(flushes);
        self.maybe_flush();
        self.maybe_compact();
        self.next_wake()
    }
}

impl Writer {
    /// The published version.
    fn current(&self) -> Option<Arc<Zone>> {
        self.publisher.get(&self.origin)
    }

    /// The zone as its upkeep sees it (None: not served).
    fn zone_now(&self) -> Option<upkeep::Zone> {
        let z = self.current()?;
        Some(upkeep::Zone {
            serial: z.serial(),
            expired: z.is_expired(),
            file_interval: self
                .zone_file
                .as_ref()
                .and_then(|_| self.sync.interval(z.record_count())),
            delta: z.delta_len(),
            nodes: z.node_count(),
            // (Filled in where a compaction is decided: cheap checks here.)
            flush_worth: false,
            flush_worth_half: false,
        })
    }

    /// When the zone file is next to be written by `zonefile-sync` (see
    /// `Upkeep::file_due`; writing it takes at most half the writer's
    /// time, and not before other zones' writes leave room).
    fn flush_due(&self) -> Option<Instant> {
        self.upkeep.file_due(&self.zone_now()?)
    }

    /// Starts writing the zone file when `zonefile-sync` says it is time
    /// (one write in flight at a time).
    fn maybe_flush(&mut self) {
        self.finish_file_write();
        if self.file_write.is_none() && self.flush_due().is_some_and(|due| due <= Instant::now()) {
            self.start_file_write();
        }
    }

    /// Takes a transfer in: IXFR changesets through the journal, or a
    /// whole new version (AXFR) that starts the history afresh.
    fn take_transfer(&mut self, work: Work) {
        match work {
            Work::Incremental { changes, done } => {
                let _ = done.send(self.apply_incremental(&changes));
            }
            Work::Replace { zone, done } => {
                let _ = done.send(self.take_whole(zone));
            }
            Work::Backup { file, keys, done } => {
                let _ = done.send(self.backup(&file, &keys));
            }
            Work::Restore { zone, keys, done } => {
                let _ = done.send(self.restore(zone, keys.as_deref()));
            }
            Work::Mark(mark) => {
                let change = match mark {
                    super::Mark::Expired(e) => Change::Expired(e),
                    super::Mark::ExpiresAt(at) => Change::ExpiresAt(at),
                };
                if let Err(e) = self.run_stage(change, None) {
                    tracing::error!("zone {}: not marked ({mark:?}): {e}", self.origin);
                }
            }
            Work::Settings(s) => {
                let s = *s;
                tracing::info!(
                    "zone {}: from the reload: serial-policy {:?}, zonefile-sync {}, dnssec-validation {}, zonemd-generate {}, zonemd-verify {}",
                    self.origin,
                    s.serial_policy,
                    s.zonefile_sync,
                    s.validation,
                    s.zonemd,
                    s.zonemd_verify
                );
                self.stage.policy = s.serial_policy;
                self.sync = s.zonefile_sync;
                self.stage.validate = s.validation;
                self.stage.zonemd_verify = s.zonemd_verify;
                if self.stage.zonemd != s.zonemd {
                    self.stage.zonemd = s.zonemd;
                    self.digest();
                }
            }
            Work::Sign { what, done } => {
                let _ = done.send(match what {
                    SignWork::Whole => {
                        // The key folder read again first (keys made or
                        // imported by hand, other signers' keys: Knot's
                        // `zone-sign` after keymgr), then every signature.
                        if let Err(e) = self.key_event(Trigger::Timers) {
                            tracing::warn!("zone {}: DNSSEC, keys: {e}", self.origin);
                        }
                        self.sign_whole("zone-sign")
                    }
                    SignWork::Keys => self.key_event(Trigger::Timers),
                    SignWork::Roll(role) => self.key_event(Trigger::Roll(role)),
                    SignWork::Submitted(ds_ttl) => self.key_event(Trigger::Submitted { ds_ttl }),
                    SignWork::Policy(p) => {
                        let (signing, parents) = *p;
                        let done = self.new_policy(signing, parents);
                        match &done {
                            Ok(t) => {
                                tracing::info!("zone {}: DNSSEC, new policy: {t}", self.origin)
                            }
                            Err(e) => {
                                tracing::error!("zone {}: DNSSEC, new policy: {e}", self.origin)
                            }
                        }
                        done
                    }
                    SignWork::Stop => {
                        let done = self.stop_signing();
                        match &done {
                            Ok(t) => tracing::info!("zone {}: DNSSEC, {t}", self.origin),
                            Err(e) => tracing::warn!(
                                "zone {}: DNSSEC, signing not turned off: {e}",
                                self.origin
                            ),
                        }
                        done
                    }
                    SignWork::Start(s) => {
                        let (signing, parents, kasp_db) = *s;
                        let done = self.start_signing(signing, parents, kasp_db);
                        match &done {
                            Ok(t) => tracing::info!(
                                "zone {}: DNSSEC, signing turned on by the reload: {t}",
                                self.origin
                            ),
                            Err(e) => tracing::error!(
                                "zone {}: DNSSEC, signing not turned on: {e}",
                                self.origin
                            ),
                        }
                        done
                    }
                });
            }
            _ => {}
        }
    }

    /// A change that is no one's request (IXFR in, signatures due, a key
    /// event, a whole version, a mark) as a transaction of its own through
    /// the one commit; the serial it leads to. `upstream`: the primary's
    /// serial it brings a zone signed here to (marked on the journaled
    /// changeset).
    fn run_stage(&mut self, change: Change<'_>, upstream: Option<u32>) -> Result<u32, WriterError> {
        let started = Instant::now();
        let base = self.current().ok_or(WriterError::NotServed)?;
        let sealed = self.stage.run(&base, change, unix_now())?;
        let changes = sealed.changes().len();
        self.commit_sealed(&sealed, commit::Sync::Now { upstream }, changes, started)?;
        self.maybe_flush();
        self.maybe_compact();
        Ok(sealed.version.serial())
    }

    /// The ZONEMD brought to what `zonemd-generate` asks (at start, after
    /// a reload changed it): a new version when it is not.
    pub(super) fn digest(&mut self) {
        if self.stage.zonemd == lode_zones::zonemd::Generate::None
            || self
                .current()
                .is_none_or(|z| crate::publish::is_placeholder(&z))
        {
            return;
        }
        let before = self.current().map(|z| z.serial());
        let started = Instant::now();
        match self.run_stage(Change::Digest, None) {
            Ok(serial) if Some(serial) != before => tracing::info!(
                "zone {}: ZONEMD ({}) made in {:.3} s, serial {} → {serial}",
                self.origin,
                self.stage.zonemd,
                started.elapsed().as_secs_f64(),
                before.unwrap_or(0)
            ),
            Ok(_) => {}
            Err(e) => tracing::error!("zone {}: ZONEMD not made: {e}", self.origin),
        }
    }

    /// A whole new version (signed whole first where the zone is signed
    /// here and it is not yet): the history cleared, the state written.
    /// `upstream`: the primary's serial it stands for (a zone signed here).
    fn replace(&mut self, zone: Arc<Zone>, upstream: Option<u32>) -> Result<u32, WriterError> {
        self.run_stage(Change::Replace(zone), upstream)
    }

    /// Gives each transfer out the published version and the journal's
    /// changes since the serial it asked for.
    fn answer_history(&mut self, requests: Vec<Work>) {
        for work in requests {
            let Work::History { since, done } = work else {
                continue;
            };
            let Some(zone) = self.current() else {
                continue;
            };
            let changes = match self.journal.changes_since(since) {
                // The journal's history must end at the published serial.
                Ok(Some(c)) if c.last().is_none_or(|l| l.serial_to() == zone.serial()) => Some(c),
                Ok(_) => None,
                Err(e) => {
                    tracing::warn!(
                        "zone {}: journal not readable for IXFR ({e}); sending the whole zone",
                        self.origin
                    );
                    None
                }
            };
            let _ = done.send(super::History { zone, changes });
        }
    }

    /// Writes the zone file for the `zone-flush` requests (once for all)
    /// and answers them; freezes or thaws for `zone-freeze`/`zone-thaw`.
    fn answer_flushes(&mut self, flushes: Vec<Work>) {
        let mut written: Option<Result<Flushed, Arc<WriterError>>> = None;
        for work in flushes {
            match work {
                Work::Flush { done } => {
                    let result = written.get_or_insert_with(|| self.flush().map_err(Arc::new));
                    let _ = done.send(result.clone());
                }
                Work::Freeze { frozen, done } => {
                    self.upkeep.set_frozen(frozen);
                    let _ = done.send(());
                }
                _ => {}
            }
        }
    }

    /// Writes the published version to the zone file now (`zone-flush`),
    /// after a background write in flight, and waits.
    fn flush(&mut self) -> Result<Flushed, WriterError> {
        if let Some(w) = self.file_write.take() {
            let done = w.wait().unwrap_or_else(FileDone::lost);
            // Whatever it gave, the file is written again now.
            let _ = self.file_written(done);
        }
        let job = self.file_job()?;
        let done = job.run();
        self.file_written(done)
    }

    /// What writing the published version to the zone file takes.
    fn file_job(&self) -> Result<FileJob, WriterError> {
        Ok(FileJob {
            path: self
                .zone_file
                .as_deref()
                .map(std::path::Path::to_path_buf)
                .ok_or(WriterError::BuiltIn)?,
            zone: self.current().ok_or(WriterError::NotServed)?,
            flushed: self.journal.path().with_extension("flushed"),
            file_tag: self.file_tag.clone(),
            written: self.written.clone(),
            origin: self.origin.clone(),
        })
    }

    /// Starts writing the zone file in the background (`zonefile-sync`):
    /// commits, publications and transfers go on meanwhile.
    fn start_file_write(&mut self) {
        let job = match self.file_job() {
            Ok(j) => j,
            Err(e) => {
                tracing::error!("zone {}: cannot write its zone file ({e})", self.origin);
                self.upkeep.file_not_started(false, Instant::now());
                return;
            }
        };
        // A thread per write, but few at once across zones: updates to
        // thousands of zones must not make thousands of threads.
        use std::sync::atomic::Ordering::AcqRel;
        let shared = self.shared.clone();
        if shared.file_writes.fetch_add(1, AcqRel) >= MAX_FILE_WRITES {
            shared.file_writes.fetch_sub(1, AcqRel);
            self.upkeep.file_not_started(true, Instant::now());
            return;
        }
        let name = format!("lode-zf-{}", self.origin.to_string().trim_end_matches('.'));
        let counted = shared.clone();
        let spawned = Background::spawn(name, move || {
            let done = job.run();
            counted.file_writes.fetch_sub(1, AcqRel);
            done
        });
        match spawned {
            Ok(w) => {
                self.file_write = Some(w);
                self.upkeep.file_started();
            }
            Err(e) => {
                shared.file_writes.fetch_sub(1, AcqRel);
                tracing::warn!(
                    "zone {}: cannot start writing its zone file: {e}",
                    self.origin
                );
                self.upkeep.file_not_started(false, Instant::now());
            }
        }
    }

    /// Takes the outcome of a background zone-file write, if it is done.
    fn finish_file_write(&mut self) {
        let Some(w) = &self.file_write else {
            return;
        };
        let Some(done) = w.poll() else {
            return;
        };
        let done = done.unwrap_or_else(FileDone::lost);
        self.file_write = None;
        if let Err(e) = self.file_written(done) {
            // (Not before RETRY_AFTER, whatever the interval.)
            tracing::error!(
                "zone {}: cannot write its zone file ({e}); trying again in {} s",
                self.origin,
                RETRY_AFTER.as_secs()
            );
        }
    }

    /// Notes a zone-file write: its serial, the new file's tag, how long it
    /// took (`zonefile-sync` waits at least as long before the next one).
    fn file_written(&mut self, done: FileDone) -> Result<Flushed, WriterError> {
        let serial = done.result.as_ref().ok().map(|f| f.serial);
        self.upkeep.file_done(Instant::now(), done.took, serial);
        let flushed = done.result?;
        if let Some(tag) = done.tag {
            self.file_tag = tag;
        }
        Ok(flushed)
    }

    /// Applies the zone file's difference from the published version (at
    /// start, before serving), journaled like an update.
    fn apply_file(&mut self, file: &Zone, now: u64) -> Result<(), WriterError> {
        let started = Instant::now();
        let current = self.current().ok_or(WriterError::NotServed)?;
        let mut txn = self.stage.begin(&current, now);
        let applied = txn.apply(Change::Difference(file))?;
        let sealed = txn.seal()?;
        if let Some(a) = applied {
            self.log_file_change(&a);
        }
        self.commit_sealed(&sealed, commit::Sync::Now { upstream: None }, 1, started)?;
        Ok(())
    }

    /// Logs a zone file taken in as a change.
    fn log_file_change(&self, a: &Applied) {
        if let Some(file) = a.serial_raised {
            tracing::warn!(
                "zone {}: the zone file's serial {file} is not newer than the served {}; the change gets serial {}",
                self.origin,
                a.from,
                a.to
            );
        }
        tracing::info!(
            "zone {}: zone file applied as a change: {} records removed, {} added, serial {} → {}",
            self.origin,
            a.removed,
            a.added,
            a.from,
            a.to
        );
    }

    /// Writes the published version as the zone's state (compacting it
    /// first, on this thread) and drops the journal history it covers.
    fn write_state_now(&mut self, keep_history: bool) -> Result<(), WriterError> {
        self.write_state(keep_history, Durability::Synced)
    }

    /// [`Writer::write_state_now`], the state synced or not.
    fn write_state(&mut self, keep_history: bool, sync: Durability) -> Result<(), WriterError> {
        let current = self
            .publisher
            .get(&self.origin)
            .ok_or(WriterError::NotServed)?;
        let compacted = current.compact()?;
        let state = self.state_path();
        crate::loading::snapshot::write_state(&state, &compacted, &self.file_tag, sync)
            .map_err(WriterError::file(&state))?;
        self.state_pending = false;
        if self.journal.last_serial().is_some() && !keep_history {
            self.journal.flushed_through(compacted.serial())?;
        }
        if compacted.delta_len() == 0 && current.delta_len() > 0 && self.compaction.is_none() {
            self.relaid(&current, compacted)?;
        }
        Ok(())
    }

    /// Publishes `compacted`, the same records as `current` laid out anew,
    /// through the one commit.
    fn relaid(&mut self, current: &Arc<Zone>, compacted: Zone) -> Result<(), WriterError> {
        let sealed = self
            .stage
            .run(current, Change::Relaid(Arc::new(compacted)), unix_now())?;
        self.commit_sealed(&sealed, commit::Sync::Done, 0, Instant::now())?;
        Ok(())
    }
}
