//! A zone writer's upkeep as a state machine: when its zone file is
//! written (`zonefile-sync`), when its delta is folded into a new base and
//! its journal flushed into a state snapshot (compaction), when the heap's
//! free memory goes back after a large compaction, and — for a zone signed
//! here — when its next due signatures are made again and when its next
//! key event is run (their times come from `lode_dnssec`'s schedule; a
//! failure tries again [`RETRY_AFTER`] later). The writer (the
//! runtime, `lode-server`) tells it what it did and what the zone is like
//! ([`Zone`]); it answers what is due and when the writer is to wake next.
//! No clock is read here: `now` is passed in.
//!
//! ```text
//!  changed(now) ─ an update or transfer taken            ┐
//!  file_started / file_busy / file_done(took, serial)    ├─▶ Upkeep ─▶ file_due(zone), compaction(zone, now),
//!  compaction_started / compaction_done(ok, large)       ┘             trim_due(now), next_wake(zone, now)
//! ```
//!
//! The rules, each measured where it was set (the notes of `lode-server`'s
//! writer and the benchmark scripts):
//! - the zone file is written `interval` after the last write (none while
//!   the published serial is the file's, or the zone has expired), and
//!   never sooner than the last write took (writing takes at most half the
//!   writer's time under a stream of updates); a failed write waits
//!   [`RETRY_AFTER`]; a write refused for the writes already running across
//!   zones waits [`FILE_WAIT`];
//! - a delta worth it ([`worth_compacting`]) or a journal worth flushing
//!   ([`worth_flushing`]) starts a compaction, one at a time, none within
//!   [`RETRY_AFTER`] of a failed one; a zone quiet for [`IDLE_COMPACTION`]
//!   is compacted whatever its delta when it is small, and a large one when
//!   its delta is a share of it worth a whole copy ([`worth_compacting_idle`]);
//! - the heap is trimmed a second after a large compaction is published;
//! - a frozen zone (`lode zone-freeze`, as `knotc zone-freeze`) has its
//!   zone-file writes, re-signing and key events postponed until it is
//!   thawed, when those overdue run at once; what an operator asks for
//!   (`zone-flush`, `zone-sign`) still runs, and so do compactions, which
//!   change no record.

use std::time::{Duration, Instant};

/// How long a zone must go without changes before its delta is folded
/// into a new base when [`worth_compacting_idle`] (memory as a fresh load
/// once a bulk load is done).
pub const IDLE_COMPACTION: Duration = Duration::from_secs(5);
/// Zones of at most this many names are compacted once quiet whatever
/// their delta: about a second of one core (a compaction takes about 1 µs
/// a name: 168 M names took 157 s, `lode-bench com`).
pub const IDLE_ANY_DELTA: usize = 1 << 20;
/// A larger zone is compacted once quiet when its delta holds at least
/// this share of its names (1 / IDLE_SHARE).
pub const IDLE_SHARE: usize = 64;
/// Wait after a failed compaction, journal flush or zone-file write.
pub const RETRY_AFTER: Duration = Duration::from_secs(30);
/// Wait when the zone-file writes across zones are all taken.
pub const FILE_WAIT: Duration = Duration::from_millis(20);
/// While a compaction or a zone-file write runs, its end is looked for
/// this often.
pub const POLL: Duration = Duration::from_millis(50);
/// The heap is trimmed this long after a large compaction is published
/// (the versions it replaced are gone by then).
pub const TRIM_AFTER: Duration = Duration::from_secs(1);

/// Whether a delta of `entries` over a base of `nodes` names is worth
/// folding into a new base: lookups slow down slowly with the delta (two
/// binary searches), memory grows with it, and a compaction copies the
/// whole zone — at a quarter of its size, each change pays for copying at
/// most four names (at a sixteenth, 22 % of the server's CPU went to
/// compactions under single-record updates to 50,000-name zones,
/// `lode-bench update-cpu --perf`). A zone gone quiet is
/// compacted sooner ([`worth_compacting_idle`]).
pub fn worth_compacting(entries: usize, nodes: usize) -> bool {
    entries >= 4096 && (entries >= nodes / 4 || entries >= 1 << 20)
}

/// Whether a quiet zone's delta of `entries` over a base of `nodes` names
/// is to be folded into a new base: any delta of a zone of at most
/// [`IDLE_ANY_DELTA`] names; a larger zone's when it holds a
/// [`IDLE_SHARE`]th of its names. A compaction copies the whole zone and
/// holds two copies while it runs: at 160 M delegations (168 M names) the
/// 7,498 names changed by a burst of registry updates, then 5 s of quiet,
/// cost 157 s of a core and a second copy of the zone in memory, and would
/// again after every burst; the delta's cost meanwhile is one more binary
/// search per lookup and about 180 bytes a name.
pub fn worth_compacting_idle(entries: usize, nodes: usize) -> bool {
    entries > 0 && (nodes <= IDLE_ANY_DELTA || entries >= nodes / IDLE_SHARE)
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
pub fn worth_flushing(
    over_bounds: bool,
    usage: u64,
    max_usage: Option<u64>,
    zone_bytes: usize,
) -> bool {
    over_bounds && (max_usage.is_some_and(|m| usage >= m) || usage >= zone_bytes as u64)
}

/// What the zone is like now, as the writer sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Zone {
    /// The published serial.
    pub serial: u32,
    /// The published version is expired (or nothing was transferred yet).
    pub expired: bool,
    /// How long after a write the zone file is written again
    /// (`zonefile-sync` for the zone's size); None: not after changes, or
    /// the zone has no file.
    pub file_interval: Option<Duration>,
    /// Names in the delta.
    pub delta: usize,
    /// Names in the zone.
    pub nodes: usize,
    /// The journal is worth flushing now ([`worth_flushing`]).
    pub flush_worth: bool,
    /// It would be at twice its size.
    pub flush_worth_half: bool,
}

/// A compaction to start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compact {
    /// It writes the state snapshot too, and the journal history it
    /// covers is dropped.
    pub flush: bool,
}

/// One zone writer's upkeep.
#[derive(Debug, Clone)]
pub struct Upkeep {
    /// The serial the zone file holds (as read or written).
    written_serial: u32,
    /// When the zone file was last written (or tried), or the writer
    /// started; pushed out by a failure.
    last_flush: Instant,
    /// How long that write took.
    last_took: Duration,
    /// A zone-file write runs.
    writing: bool,
    /// No zone-file write before this (writes across zones all taken).
    file_wait: Option<Instant>,
    /// A compaction runs.
    compacting: bool,
    /// No compaction before this (after a failed one).
    retry_at: Option<Instant>,
    /// When the last change was taken (None: compacted since, or none).
    idle_since: Option<Instant>,
    /// When to give the heap's free memory back.
    trim_at: Option<Instant>,
    /// When the next batch of due signatures is made again.
    resign_at: Option<Instant>,
    /// When the next key event is run.
    key_event_at: Option<Instant>,
    /// Frozen: no zone-file write, re-signing or key event until thawed.
    frozen: bool,
}

/// The pause between two batches of signatures while they are due.
pub const RESIGN_EVERY: Duration = Duration::from_secs(1);

/// When the next batch of signatures is made, from when the schedule says
/// the next falls due (`next`, Unix seconds; None: none), at `now` (Unix
/// seconds and the clock's instant): a batch a [`RESIGN_EVERY`] while
/// they are due.
pub fn resign_time(next: Option<u64>, now_unix: u64, now: Instant) -> Option<Instant> {
    next.map(|t| {
        if t <= now_unix {
            now + RESIGN_EVERY
        } else {
            now + Duration::from_secs(t - now_unix)
        }
    })
}

/// The instant of Unix time `t`, at `now` (Unix seconds and the clock's
/// instant): now when it is past.
pub fn instant_of(t: u64, now_unix: u64, now: Instant) -> Instant {
    now + Duration::from_secs(t.saturating_sub(now_unix))
}

impl Upkeep {
    /// A writer started at `now` whose zone file holds `written_serial`.
    pub fn new(written_serial: u32, now: Instant) -> Upkeep {
        Upkeep {
            written_serial,
            last_flush: now,
            last_took: Duration::ZERO,
            writing: false,
            file_wait: None,
            compacting: false,
            retry_at: None,
            idle_since: None,
            trim_at: None,
            resign_at: None,
            key_event_at: None,
            frozen: false,
        }
    }

    /// Frozen (`true`) or thawed: see the module note.
    pub fn set_frozen(&mut self, frozen: bool) {
        self.frozen = frozen;
    }

    /// Whether the zone is frozen.
    pub fn frozen(&self) -> bool {
        self.frozen
    }

    /// The next batch of due signatures at `at` (None: none due).
    pub fn schedule_resign(&mut self, at: Option<Instant>) {
        self.resign_at = at;
    }

    /// The next key event at `at` (None: none, or the zone not signed here).
    pub fn schedule_key_event(&mut self, at: Option<Instant>) {
        self.key_event_at = at;
    }

    /// True when due signatures are to be made again at `now`.
    pub fn resign_due(&self, now: Instant) -> bool {
        !self.frozen && self.resign_at.is_some_and(|t| now >= t)
    }

    /// True when the key event is to be run at `now`.
    pub fn key_event_due(&self, now: Instant) -> bool {
        !self.frozen && self.key_event_at.is_some_and(|t| now >= t)
    }

    /// When the zone file is next to be written: None when it holds the
    /// published version, is not to be written, or a write runs.
    pub fn file_due(&self, zone: &Zone) -> Option<Instant> {
        if self.frozen || self.writing || zone.serial == self.written_serial || zone.expired {
            return None;
        }
        let interval = zone.file_interval?;
        let due = self.last_flush + interval.max(self.last_took);
        Some(self.file_wait.map_or(due, |w| w.max(due)))
    }

    /// Whether a zone-file write is to start at `now`.
    pub fn file_now(&self, zone: &Zone, now: Instant) -> bool {
        self.file_due(zone).is_some_and(|due| due <= now)
    }

    /// The compaction to start at `now`, if one is due; `idle`: the
    /// writer found the zone quiet ([`Upkeep::idle_due`]).
    pub fn compaction(&self, zone: &Zone, idle: bool, now: Instant) -> Option<Compact> {
        if self.compacting || self.retry_at.is_some_and(|t| now < t) {
            return None;
        }
        let compact = worth_compacting(zone.delta, zone.nodes)
            || (idle && worth_compacting_idle(zone.delta, zone.nodes));
        // A compaction started for the delta also writes the state when the
        // journal is half way to being worth it: the flush would otherwise
        // come right after, a second whole compaction.
        let flush = zone.flush_worth || (compact && zone.flush_worth_half);
        (flush || compact).then_some(Compact { flush })
    }

    /// True when the zone has been quiet long enough at `now` for the
    /// quiet zone's compaction ([`worth_compacting_idle`]; and, the writer
    /// does it then, to close its journal's file).
    pub fn idle_due(&self, now: Instant) -> bool {
        self.idle_since
            .is_some_and(|t| now.saturating_duration_since(t) >= IDLE_COMPACTION)
    }

    /// True when the heap is to be trimmed at `now`.
    pub fn trim_due(&self, now: Instant) -> bool {
        self.trim_at.is_some_and(|t| now >= t)
    }

    /// True while a compaction or a zone-file write runs.
    pub fn busy(&self) -> bool {
        self.compacting || self.writing
    }

    /// When the writer is next to wake for its upkeep (None: nothing due).
    pub fn next_wake(&self, zone: &Zone, now: Instant) -> Option<Instant> {
        let polls = self.busy().then_some(now + POLL);
        let idle = self
            .idle_since
            .filter(|_| !self.compacting)
            .map(|t| t + IDLE_COMPACTION);
        let signing = [self.resign_at, self.key_event_at].map(|t| t.filter(|_| !self.frozen));
        [
            polls,
            self.file_due(zone),
            self.trim_at,
            idle,
            signing[0],
            signing[1],
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// A change was taken at `now` (an update, a transfer, a file).
    pub fn changed(&mut self, now: Instant) {
        self.idle_since = Some(now);
    }

    /// A whole version was published: nothing in the delta to wait for.
    pub fn replaced(&mut self) {
        self.idle_since = None;
    }

    /// The quiet zone's compaction was looked at (started or not needed).
    pub fn idle_handled(&mut self) {
        self.idle_since = None;
    }

    /// A zone-file write started.
    pub fn file_started(&mut self) {
        self.writing = true;
        self.file_wait = None;
    }

    /// A zone-file write could not start: the writes across zones are
    /// all taken (`busy`), or it failed to start.
    pub fn file_not_started(&mut self, busy: bool, now: Instant) {
        if busy {
            self.file_wait = Some(now + FILE_WAIT);
        } else {
            self.last_flush = now + RETRY_AFTER;
        }
    }

    /// A zone-file write ended at `now`, after `took`: the serial written,
    /// or None when it failed (tried again [`RETRY_AFTER`] later).
    pub fn file_done(&mut self, now: Instant, took: Duration, serial: Option<u32>) {
        self.writing = false;
        self.last_took = took;
        match serial {
            Some(s) => {
                self.written_serial = s;
                self.last_flush = now;
            }
            None => self.last_flush = now + RETRY_AFTER,
        }
    }

    /// A compaction started.
    pub fn compaction_started(&mut self) {
        self.compacting = true;
    }

    /// A compaction ended at `now`: published (`ok`; `large`: a heap
    /// trim follows) or failed (none again within [`RETRY_AFTER`]).
    pub fn compaction_done(&mut self, ok: bool, large: bool, now: Instant) {
        self.compacting = false;
        if !ok {
            self.retry_at = Some(now + RETRY_AFTER);
        } else if large {
            self.trim_at = Some(now + TRIM_AFTER);
        }
    }

    /// A compaction is of no use any more (a whole version came).
    pub fn compaction_dropped(&mut self) {
        self.compacting = false;
    }

    /// The journal flush that came with a compaction failed at `now`.
    pub fn flush_failed(&mut self, now: Instant) {
        self.retry_at = Some(now + RETRY_AFTER);
    }

    /// The heap was trimmed.
    pub fn trimmed(&mut self) {
        self.trim_at = None;
    }
}

#[cfg(test)]
mod tests;
