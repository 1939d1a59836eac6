//! Building a zone from records in any order in bounded memory: an
//! external sort. Records are checked one by one as they come (the
//! per-record checks of [`ZoneBuilder::build`]), then kept in a run of at
//! most half a budget of bytes; a full run is sorted by canonical key and
//! type and written to a temporary file on a thread of its own (`lode-sort`)
//! while the next run fills (two runs: the budget); at the build, the runs
//! are merged and
//! go in canonical order through the zone checks into an
//! [`crate::OrderedBuilder`] ([`crate::sorted_feed`]). The zone and its
//! problems (text, order, tags) are those [`ZoneBuilder::build`] gives for
//! the same records.
//!
//! ```text
//!  add ──checks──▶ run (≤ budget/2) ──full: sort, write beside──▶ run file 1 … n ─┐
//!                   └─────────── the last run, sorted in memory ───────────────┴─▶ merge ──▶ Feed ──▶ Zone
//! ```
//!
//! A run's record: `key_len:u8 key owner_len:u8 owner type:u16 ttl:u32
//! tag:u32 rdata_len:u16 rdata` (big-endian), the owner left out (length
//! 0) when it is the name the key spells, lower-cased: the common case. A
//! run file is unlinked as soon as it is made: it goes with its handle on
//! every way out, errors and panics included.
//!
//! The merge keeps ZoneBuilder's order: key, then type, then the order
//! records were added (each run is sorted stably and runs are added in
//! order; ties between runs go to the earlier run).

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use lode_wire::name::KeyBuf;
use lode_wire::{Class, Name, NameRef, Record, RecordRef, Rtype};

use crate::build::{screen, Problem, Screened, Severity};
use crate::sorted_feed::{Feed, Rec};
use crate::Zone;

/// A run's default budget: 64 MiB of records (about 1.4 M records of a
/// TLD). Small beside the zone served when a zone needs runs at all (a
/// 10 M-delegation TLD's store is 280 MB, COM's several GB); larger runs
/// did not load faster (a 10 M-delegation TLD: 142 s and a 660 MB peak
/// with runs of 256 MiB, 79 s and 464 MB with 64 MiB: the sort of a run
/// reads its keys all over it, and a smaller run stays nearer the caches).
/// Runs are half of it (one fills while the other is sorted and written):
/// COM's 390 M records make about 540 runs, each read through a 64 KiB
/// buffer at the merge (35 MB, 540 open files).
pub const DEFAULT_RUN_BUDGET: usize = 64 << 20;

/// Bytes kept per record in a run besides the record: its index entry.
const INDEX_BYTES: usize = std::mem::size_of::<Entry>();

/// The largest run budget: a record's offset in a run is a `u32`.
const MAX_BUDGET: usize = u32::MAX as usize - (1 << 20);

/// A record of the run being filled: where it starts, and the first 8
/// octets of its key after the origin's (zero-padded), so that sorting
/// mostly compares these and seldom reads the records, which lie all over
/// the run (ordering by `prefix` never contradicts ordering by key: a key
/// ending within them pads with zeros, which sort first as its end does).
#[derive(Debug, Clone, Copy)]
struct Entry {
    prefix: u64,
    at: u32,
}

/// Builds a zone as [`ZoneBuilder::build`](crate::ZoneBuilder::build) does
/// from records in any order, holding at most a run's budget of them.
#[derive(Debug)]
pub struct SortedBuilder {
    origin: Name,
    class: Class,
    strict: bool,
    budget: usize,
    dir: PathBuf,
    /// The records of the run being filled, and where each starts.
    run: Vec<u8>,
    index: Vec<Entry>,
    /// The origin's key length: every key kept starts with it.
    skip: usize,
    /// The runs written.
    files: Vec<RunFile>,
    /// The run being sorted and written on a thread of its own: its file,
    /// and its buffers back to be filled again.
    spilling: Option<std::thread::JoinHandle<Spilled>>,
    /// Emptied buffers of a run written, for the next one.
    spare: (Vec<u8>, Vec<Entry>),
    /// The per-record checks' problems, in the order records came.
    early: Vec<Problem>,
    /// The first two SOA records' tags.
    soa_tags: Vec<u32>,
    /// A run that could not be written: the build fails with it.
    failed: Option<Problem>,
    /// The last record's key and type, while records come in order.
    last: Option<(KeyBuf, u16)>,
    ordered: bool,
}

#[derive(Debug)]
struct RunFile {
    file: File,
    path: PathBuf,
}

/// What a spilling thread hands back: the run file (or why it could not
/// be written), and the run's emptied buffers.
type Spilled = (Result<RunFile, Problem>, Vec<u8>, Vec<Entry>);

impl SortedBuilder {
    /// A builder for the zone at `origin`, class IN, runs of
    /// [`DEFAULT_RUN_BUDGET`] written in [`std::env::temp_dir`].
    pub fn new(origin: Name) -> SortedBuilder {
        SortedBuilder {
            skip: origin.key().len(),
            origin,
            class: Class::IN,
            strict: false,
            budget: DEFAULT_RUN_BUDGET,
            dir: std::env::temp_dir(),
            run: Vec::new(),
            index: Vec::new(),
            files: Vec::new(),
            spilling: None,
            spare: (Vec::new(), Vec::new()),
            early: Vec::new(),
            soa_tags: Vec::new(),
            failed: None,
            last: None,
            ordered: true,
        }
    }

    /// Sets the zone's class (default IN).
    pub fn class(mut self, class: Class) -> Self {
        self.class = class;
        self
    }

    /// The checkers' extra checks too (as [`crate::ZoneBuilder::strict`]).
    pub fn strict(mut self) -> Self {
        self.strict = true;
        self
    }

    /// Bytes of records held before a run is written (at least one record
    /// is).
    pub fn run_budget(mut self, bytes: usize) -> Self {
        self.budget = bytes.min(MAX_BUDGET);
        self
    }

    /// Where run files go (default [`std::env::temp_dir`]).
    pub fn run_dir(mut self, dir: PathBuf) -> Self {
        self.dir = dir;
        self
    }

    /// How many runs were written so far (waiting for the one being
    /// written).
    pub fn runs_written(&mut self) -> usize {
        self.spilled();
        self.files.len()
    }

    /// Adds a record; `tag` is echoed in problems about it.
    pub fn add(&mut self, record: Record, tag: u32) {
        self.add_ref(record.as_record_ref(), tag);
    }

    /// Adds a record borrowed (it is copied into the run); `tag` is echoed
    /// in problems about it.
    pub fn add_ref(&mut self, record: RecordRef<'_>, tag: u32) {
        if self.failed.is_some() {
            return;
        }
        let keep = screen(
            Screened {
                owner: record.owner,
                rtype: record.rtype,
                class: record.class,
                rdata: record.rdata,
                tag,
            },
            &self.origin,
            self.class,
            false,
            self.strict,
            &mut self.early,
        );
        if !keep {
            return;
        }
        if record.rtype == Rtype::SOA && self.soa_tags.len() < 2 {
            self.soa_tags.push(tag);
        }
        let mut key = KeyBuf::new();
        record.owner.write_key(&mut key);
        if self.ordered {
            let here = (key.as_slice(), record.rtype.0);
            match &mut self.last {
                Some((k, t)) if (k.as_slice(), *t) > here => self.ordered = false,
                Some((k, t)) => {
                    k.set(key.as_slice());
                    *t = record.rtype.0;
                }
                None => self.last = Some((key, record.rtype.0)),
            }
        }
        // Owners outside the zone were screened out: the key starts with
        // the origin's.
        let mut prefix = [0u8; 8];
        let rest = key.as_slice().get(self.skip..).unwrap_or(&[]);
        let n = rest.len().min(8);
        prefix[..n].copy_from_slice(&rest[..n]);
        self.index.push(Entry {
            prefix: u64::from_be_bytes(prefix),
            at: self.run.len() as u32,
        });
        write_rec(&mut self.run, &record, key.as_slice(), tag);
        // Half the budget: the run filled here and the one sorted and
        // written beside stay within it.
        if self.run.len() + self.index.len() * INDEX_BYTES >= self.budget / 2 {
            self.spill();
        }
    }

    /// Has the run sorted and written to a new run file on a thread of its
    /// own while the next one fills (in the buffers of the one before,
    /// which it waits for first); here when no thread can be made.
    fn spill(&mut self) {
        self.spilled();
        if self.failed.is_some() {
            return;
        }
        let path = self.dir.join(format!(
            "lode-sort-{}-{}-{}.run",
            std::process::id(),
            self.files.len(),
            RUN_FILES.fetch_add(1, Ordering::Relaxed)
        ));
        let run = std::mem::replace(&mut self.run, std::mem::take(&mut self.spare.0));
        let index = std::mem::replace(&mut self.index, std::mem::take(&mut self.spare.1));
        let ordered = self.ordered;
        let job = move |(mut run, mut index, path): (Vec<u8>, Vec<Entry>, PathBuf)| {
            let file = sort_and_write(&run, &mut index, ordered, path);
            run.clear();
            index.clear();
            (file, run, index)
        };
        // The run goes to the thread once it runs: without one, it is
        // written here.
        let (give, given) = std::sync::mpsc::channel();
        let spawned =
            std::thread::Builder::new()
                .name("lode-sort".into())
                .spawn(move || match given.recv() {
                    Ok(work) => job(work),
                    Err(_) => (Err(no_run()), Vec::new(), Vec::new()),
                });
        match spawned {
            Ok(handle) => {
                let _ = give.send((run, index, path));
                self.spilling = Some(handle);
            }
            Err(_) => {
                let done = job((run, index, path));
                self.keep(done);
            }
        }
    }

    /// Waits for the run being written, if any.
    fn spilled(&mut self) {
        if let Some(handle) = self.spilling.take() {
            let done = handle
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
            self.keep(done);
        }
    }

    /// A run written: its file is kept (or the build fails with why not),
    /// its buffers filled again.
    fn keep(&mut self, (file, run, index): Spilled) {
        match file {
            Ok(f) => self.files.push(f),
            Err(p) => {
                self.failed = Some(p);
                self.files.clear();
            }
        }
        self.spare = (run, index);
        if self.failed.is_some() {
            self.run = Vec::new();
            self.index = Vec::new();
            self.spare = (Vec::new(), Vec::new());
        }
    }

    /// Checks the records and builds the zone: on success the zone and its
    /// warnings, on failure every problem found (as
    /// [`ZoneBuilder::build`](crate::ZoneBuilder::build)).
    pub fn build(self) -> Result<(Zone, Vec<Problem>), Vec<Problem>> {
        self.build_counting(&mut |_| {})
    }

    /// As [`SortedBuilder::build`], telling `merged` how many more records
    /// were merged into the zone every [`MERGE_STEP`] records and at the end
    /// (for a progress display: the merge is most of a large zone's build).
    pub fn build_counting(
        mut self,
        merged: &mut dyn FnMut(u64),
    ) -> Result<(Zone, Vec<Problem>), Vec<Problem>> {
        self.spilled();
        if let Some(p) = self.failed.take() {
            return Err(vec![p]);
        }
        sort_run(&self.run, &mut self.index, self.ordered);
        let mut feed = Feed::new(self.origin.clone(), self.class);
        let mut cursors: Vec<Cursor> = Vec::with_capacity(self.files.len() + 1);
        for f in std::mem::take(&mut self.files) {
            cursors.push(Cursor::File {
                r: BufReader::with_capacity(64 << 10, f.file),
                path: f.path,
                cur: Vec::new(),
            });
        }
        cursors.push(Cursor::Memory {
            run: std::mem::take(&mut self.run),
            index: std::mem::take(&mut self.index),
            pos: 0,
            cur: 0..0,
        });
        let mut since = 0u64;
        let mut push = |rec: &[u8]| {
            feed.push(view(rec));
            since += 1;
            if since == MERGE_STEP {
                merged(since);
                since = 0;
            }
        };
        // With runs on disk, the merge goes on a thread of its own, the
        // records handed here as they are in the runs, a batch at a time:
        // merging (reading the runs) and building go side by side.
        let merged_all = match cursors.len() > 1 {
            true => merge_beside(cursors, &mut push),
            false => merge(cursors, &mut push),
        };
        merged_all.map_err(|p| vec![p])?;
        merged(since);
        feed.finish(self.early, &self.soa_tags)
    }
}

/// Bytes of merged records handed over at a time by [`merge_beside`]
/// (a few records in tests, so that they cross many batches).
const MERGED_BATCH: usize = if cfg!(test) { 256 } else { 1 << 20 };
/// Batches merged ahead at most.
const MERGED_AHEAD: usize = 4;

/// [`merge`] on a thread of its own, `f` called here with each record
/// (inline if the thread cannot be made).
fn merge_beside(cursors: Vec<Cursor>, f: &mut dyn FnMut(&[u8])) -> Result<(), Problem> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(MERGED_AHEAD);
    // Emptied batches go back to be filled again.
    let (back, emptied) = std::sync::mpsc::channel::<Vec<u8>>();
    let mut cursors = Some(cursors);
    let piped = std::thread::scope(|s| {
        let todo = &mut cursors;
        let merging = std::thread::Builder::new()
            .name("lode-merge".into())
            .spawn_scoped(s, move || {
                let mut batch = Vec::with_capacity(MERGED_BATCH + 1024);
                let merged = merge(todo.take().unwrap_or_default(), |rec| {
                    batch.extend_from_slice(rec);
                    if batch.len() >= MERGED_BATCH {
                        let next = emptied.try_recv().unwrap_or_default();
                        // The receiver is gone only if `f` panicked.
                        let _ = tx.send(std::mem::replace(&mut batch, next));
                    }
                });
                if !batch.is_empty() {
                    let _ = tx.send(batch);
                }
                merged
            })
            .ok()?;
        for mut batch in rx {
            let mut at = 0;
            while at < batch.len() {
                let n = rec_len(&batch[at..]);
                f(&batch[at..at + n]);
                at += n;
            }
            batch.clear();
            let _ = back.send(batch);
        }
        Some(
            merging
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e)),
        )
    });
    match piped {
        Some(merged) => merged,
        None => merge(cursors.take().unwrap_or_default(), f),
    }
}

/// Records merged between two reports of [`SortedBuilder::build_counting`].
pub const MERGE_STEP: u64 = 1 << 16;

/// Run files made by this process, for unique names.
static RUN_FILES: AtomicU64 = AtomicU64::new(0);

/// A sorted run's thread that was given no run (cannot happen: it is sent
/// as soon as the thread is made).
fn no_run() -> Problem {
    Problem {
        tag: None,
        severity: Severity::Error,
        message: "a sorted run was not handed to its thread".into(),
    }
}

/// Sorts a run and writes it to a new run file at `path`, unlinked at once
/// (the handle keeps it until dropped).
fn sort_and_write(
    run: &[u8],
    index: &mut [Entry],
    ordered: bool,
    path: PathBuf,
) -> Result<RunFile, Problem> {
    sort_run(run, index, ordered);
    let fail = |what: &str, e: std::io::Error| Problem {
        tag: None,
        severity: Severity::Error,
        message: format!("{what} the sorted run {}: {e}", path.display()),
    };
    let file = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| fail("creating", e))?;
    std::fs::remove_file(&path).map_err(|e| fail("unlinking", e))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    for e in index.iter() {
        let at = e.at as usize;
        let len = rec_len(&run[at..]);
        w.write_all(&run[at..at + len])
            .map_err(|e| fail("writing", e))?;
    }
    let mut file = w
        .into_inner()
        .map_err(|e| fail("writing", e.into_error()))?;
    file.flush().map_err(|e| fail("writing", e))?;
    file.seek(SeekFrom::Start(0))
        .map_err(|e| fail("reading", e))?;
    Ok(RunFile { file, path })
}

/// Sorts a run's index by key and type, stably (records of an RRset stay
/// in the order added); nothing to do for records in order.
fn sort_run(run: &[u8], index: &mut [Entry], ordered: bool) {
    if ordered {
        return;
    }
    // Ties on key and type go by offset, the order added: stable.
    index.sort_unstable_by(|a, b| {
        a.prefix.cmp(&b.prefix).then_with(|| {
            let (ka, ta) = key_and_type(&run[a.at as usize..]);
            let (kb, tb) = key_and_type(&run[b.at as usize..]);
            (ka, ta, a.at).cmp(&(kb, tb, b.at))
        })
    });
}

/// Appends `record` (its key `key`) to a run.
fn write_rec(out: &mut Vec<u8>, record: &RecordRef<'_>, key: &[u8], tag: u32) {
    let owner = record.owner.as_wire();
    out.push(key.len() as u8);
    out.extend_from_slice(key);
    if record.owner.is_lowercase() {
        out.push(0);
    } else {
        out.push(owner.len() as u8);
        out.extend_from_slice(owner);
    }
    out.extend_from_slice(&record.rtype.0.to_be_bytes());
    out.extend_from_slice(&record.ttl.to_be_bytes());
    out.extend_from_slice(&tag.to_be_bytes());
    out.extend_from_slice(&(record.rdata.len() as u16).to_be_bytes());
    out.extend_from_slice(record.rdata);
}

/// Offsets in a run record of the part after the key and owner: type (2),
/// TTL (4), tag (4), RDATA length (2).
const FIXED: usize = 12;

/// Where a record's fixed part starts.
fn fixed_at(rec: &[u8]) -> usize {
    let k = 1 + usize::from(rec[0]);
    k + 1 + usize::from(rec[k])
}

fn key_and_type(rec: &[u8]) -> (&[u8], u16) {
    let f = fixed_at(rec);
    (
        &rec[1..1 + usize::from(rec[0])],
        u16::from_be_bytes([rec[f], rec[f + 1]]),
    )
}

/// The length of the record at the start of `rec`.
fn rec_len(rec: &[u8]) -> usize {
    let f = fixed_at(rec);
    f + FIXED + usize::from(u16::from_be_bytes([rec[f + 10], rec[f + 11]]))
}

/// A record of a run.
fn view(rec: &[u8]) -> Rec<'_> {
    let klen = usize::from(rec[0]);
    let key = &rec[1..1 + klen];
    let olen = usize::from(rec[1 + klen]);
    let f = fixed_at(rec);
    let owner =
        (olen != 0).then(|| NameRef::from_wire(&rec[2 + klen..f]).unwrap_or(NameRef::root()));
    let n =
        |i: usize| u32::from_be_bytes([rec[f + i], rec[f + i + 1], rec[f + i + 2], rec[f + i + 3]]);
    Rec {
        key,
        owner,
        rtype: Rtype(u16::from_be_bytes([rec[f], rec[f + 1]])),
        ttl: n(2),
        tag: n(6),
        rdata: &rec[f + FIXED..],
    }
}

/// One sorted run being merged, its current record in `cur`.
enum Cursor {
    File {
        r: BufReader<File>,
        path: PathBuf,
        cur: Vec<u8>,
    },
    /// The last run, read where it lies: `cur` is its current record's
    /// range in `run`.
    Memory {
        run: Vec<u8>,
        index: Vec<Entry>,
        pos: usize,
        cur: std::ops::Range<usize>,
    },
}

impl Cursor {
    fn cur(&self) -> &[u8] {
        match self {
            Cursor::File { cur, .. } => cur,
            Cursor::Memory { run, cur, .. } => &run[cur.clone()],
        }
    }

    /// Moves to the next record: false at the end.
    fn advance(&mut self) -> Result<bool, Problem> {
        match self {
            Cursor::Memory {
                run,
                index,
                pos,
                cur,
            } => {
                let Some(e) = index.get(*pos) else {
                    return Ok(false);
                };
                *pos += 1;
                let at = e.at as usize;
                *cur = at..at + rec_len(&run[at..]);
                Ok(true)
            }
            Cursor::File { r, path, cur } => read_rec(r, cur).map_err(|e| Problem {
                tag: None,
                severity: Severity::Error,
                message: format!("reading the sorted run {}: {e}", path.display()),
            }),
        }
    }

    fn less(&self, other: &Cursor) -> bool {
        key_and_type(self.cur()) < key_and_type(other.cur())
    }
}

/// Reads a record into `cur`: false at the end of the run.
fn read_rec(r: &mut impl Read, cur: &mut Vec<u8>) -> std::io::Result<bool> {
    cur.clear();
    let mut b = [0u8; 1];
    if r.read(&mut b)? == 0 {
        return Ok(false);
    }
    let mut take = |cur: &mut Vec<u8>, n: usize| -> std::io::Result<()> {
        let at = cur.len();
        cur.resize(at + n, 0);
        r.read_exact(&mut cur[at..])
    };
    cur.push(b[0]);
    take(cur, usize::from(b[0]) + 1)?;
    take(cur, usize::from(cur[cur.len() - 1]) + FIXED)?;
    let n = cur.len();
    take(
        cur,
        usize::from(u16::from_be_bytes([cur[n - 2], cur[n - 1]])),
    )?;
    Ok(true)
}

/// Merges the runs (earlier runs first among equal keys and types) into
/// `f`, each record as it is in its run.
fn merge(cursors: Vec<Cursor>, mut f: impl FnMut(&[u8])) -> Result<(), Problem> {
    // A binary heap of runs by (current record, run number).
    let mut heap: Vec<(Cursor, usize)> = Vec::with_capacity(cursors.len());
    for (i, mut c) in cursors.into_iter().enumerate() {
        if c.advance()? {
            heap.push((c, i));
        }
    }
    let less =
        |a: &(Cursor, usize), b: &(Cursor, usize)| a.0.less(&b.0) || (!b.0.less(&a.0) && a.1 < b.1);
    let sift_down = |heap: &mut Vec<(Cursor, usize)>, mut i: usize| loop {
        let (l, r) = (2 * i + 1, 2 * i + 2);
        let mut m = i;
        if l < heap.len() && less(&heap[l], &heap[m]) {
            m = l;
        }
        if r < heap.len() && less(&heap[r], &heap[m]) {
            m = r;
        }
        if m == i {
            break;
        }
        heap.swap(i, m);
        i = m;
    };
    for i in (0..heap.len() / 2).rev() {
        sift_down(&mut heap, i);
    }
    while let Some(top) = heap.first_mut() {
        f(top.0.cur());
        if !top.0.advance()? {
            heap.swap_remove(0);
        }
        sift_down(&mut heap, 0);
    }
    Ok(())
}

#[cfg(test)]
#[path = "sorted_tests.rs"]
mod tests;
