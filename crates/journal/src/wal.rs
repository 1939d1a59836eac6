//! The commit log: one file that every zone's journal shares for
//! durability, so that one write and one fdatasync make the changes of
//! many zones durable at once (group commit across zones).
//!
//! ```text
//!  zone writer                                  commit-log thread (one per server)
//!  ───────────                                  ──────────────────────────────────
//!  Journal::append_deferred: frames pwritten    take every record queued (a group)
//!    to the zone's own file, not synced          one write + one fdatasync of the
//!  submit(record: path, file id, offset,        segment, then each record's `done`
//!         the frames) ───────────────────────▶  (the writer publishes and answers)
//!  (failure: Journal::undo)                     segment over SEGMENT_BYTES: a new one,
//!                                               none for IDLE_CLOSE: closed; the old
//!                                               one goes once every journal it names
//!                                               is fdatasync'ed (checkpoint)
//! ```
//!
//! A zone's journal file stays what it was (its own history, read by
//! replay and IXFR, bounded and flushed as before); the commit log only
//! holds, for a while, the bytes written to those files but not yet synced.
//! [`recover`] at start writes every record whose file still has the same
//! id (the id changes at each rewrite of the file — flush, clear,
//! repair — which syncs everything it keeps) back at its offset, syncs
//! those files, and the journals are then opened as usual.
//!
//! ```text
//!  segment = header record*        (lode-commit-log.<sequence, 16 hex>.wal)
//!  header:  "LODECLOG" | version u32le (=1) | sequence u64le | crc32 u32le
//!  record:  the journal's frame (len | pcrc | hcrc | payload), payload =
//!           file id u64le | offset u64le | path length u16le | path | frames
//! ```
//!
//! A segment read at recovery stops at its first bad frame: what follows
//! was never acknowledged (a write is acknowledged only after its
//! fdatasync, and a failed one is cut back off).

use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, PoisonError};

use crate::file;
use crate::format::{self, Frame};

/// A segment is closed and a new one begun past this size.
pub const SEGMENT_BYTES: u64 = 64 << 20;
const MAGIC: [u8; 8] = *b"LODECLOG";
const VERSION: u32 = 1;
const HEADER_LEN: usize = 8 + 4 + 8 + 4;
const PREFIX: &str = "lode-commit-log.";
const SUFFIX: &str = ".wal";

/// Bytes written to a zone's journal file that the commit log makes durable.
#[derive(Debug, Clone)]
pub struct Record {
    /// The journal file.
    pub path: PathBuf,
    /// Its id when they were written (see the module note).
    pub id: u64,
    /// Where in it.
    pub offset: u64,
    /// The bytes.
    pub frames: Vec<u8>,
}

/// What is called once a record is durable (Ok) or could not be made so.
pub type Done = Box<dyn FnOnce(Result<(), WalError>) + Send>;

/// Why the commit log could not make a group of records durable (every
/// record of the group gets the same error).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum WalError {
    /// No segment could be begun in the folder (disk full, permissions).
    NoSegment {
        /// The journal folder.
        dir: PathBuf,
        /// The system's error.
        source: Arc<io::Error>,
    },
    /// A record is over a frame's 4 GiB.
    TooLarge {
        /// The journal file the record is for.
        path: PathBuf,
    },
    /// The write or the fdatasync of the segment failed (what it wrote
    /// is cut back off).
    Io {
        /// The segment.
        segment: PathBuf,
        /// What was being done: `write` or `fdatasync`.
        op: &'static str,
        /// The system's error.
        source: Arc<io::Error>,
    },
}

impl std::fmt::Display for WalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WalError::NoSegment { dir, source } => write!(
                f,
                "commit log: no segment could be begun in {} ({source})",
                dir.display()
            ),
            WalError::TooLarge { path } => write!(
                f,
                "commit log: a record of {} is over 4 GiB",
                path.display()
            ),
            WalError::Io {
                segment,
                op,
                source,
            } => write!(f, "commit log {}: {op}: {source}", segment.display()),
        }
    }
}

impl std::error::Error for WalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WalError::NoSegment { source, .. } | WalError::Io { source, .. } => Some(&**source),
            WalError::TooLarge { .. } => None,
        }
    }
}

/// Tells the commit log that more records are about to come (the zone
/// writers are busy): it then waits for them, at most [`MAX_GATHER`],
/// before its write (one fdatasync for more groups; a server whose CPU
/// is busy would otherwise sync many small groups).
pub type MoreComing = Box<dyn Fn() -> bool + Send>;

/// A segment that got no record for this long is closed and checkpointed.
pub const IDLE_CLOSE: std::time::Duration = std::time::Duration::from_secs(10);

/// The longest the commit log waits for records that are about to come.
pub const MAX_GATHER: std::time::Duration = std::time::Duration::from_micros(500);

/// What [`recover`] did.
#[derive(Debug, Default)]
pub struct Recovered {
    /// Records written back into their journal files.
    pub applied: usize,
    /// Records whose file was rewritten or removed since (nothing to do).
    pub skipped: usize,
    /// Segments read (removed once a new one is begun).
    pub segments: Vec<PathBuf>,
    /// Bytes at the end of a segment that were not a whole record (a write
    /// cut by the crash, never acknowledged).
    pub torn_bytes: u64,
    /// The next segment's sequence number.
    next: u64,
}

/// The commit log of a journal folder (see the module note).
#[derive(Debug)]
pub struct CommitLog {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    /// The thread waits for records about to come (see [`MoreComing`]).
    gathering: AtomicBool,
    /// fdatasyncs that succeeded (see [`CommitLog::syncs`]).
    syncs: AtomicU64,
}

#[derive(Default)]
struct Queue {
    records: Vec<(Record, Done)>,
    stopping: bool,
    /// The thread waits for records (else it writes or gathers).
    sleeping: bool,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("records", &self.records.len())
            .field("stopping", &self.stopping)
            .finish()
    }
}

fn segment_name(seq: u64) -> String {
    format!("{PREFIX}{seq:016x}{SUFFIX}")
}

/// The segments in `dir`, oldest first.
fn segments(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut found = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(found),
        Err(e) => return Err(e),
    };
    for e in entries {
        let e = e?;
        let name = e.file_name();
        let Some(seq) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|n| n.strip_suffix(SUFFIX))
            .and_then(|n| u64::from_str_radix(n, 16).ok())
        else {
            continue;
        };
        found.push((seq, e.path()));
    }
    found.sort();
    Ok(found)
}

fn encode_header(seq: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER_LEN);
    h.extend_from_slice(&MAGIC);
    h.extend_from_slice(&VERSION.to_le_bytes());
    h.extend_from_slice(&seq.to_le_bytes());
    let c = crc32fast::hash(&h);
    h.extend_from_slice(&c.to_le_bytes());
    h
}

fn header_ok(data: &[u8]) -> bool {
    data.len() >= HEADER_LEN
        && data[..8] == MAGIC
        && data[8..12] == VERSION.to_le_bytes()
        && crc32fast::hash(&data[..20]).to_le_bytes() == data[20..24]
}

fn encode_record(r: &Record, out: &mut Vec<u8>) -> Result<(), WalError> {
    let path = r.path.as_os_str().as_bytes();
    // Paths longer than 65,535 bytes cannot be opened anyway (PATH_MAX).
    let plen = path.len().min(u16::MAX as usize);
    let mut payload = Vec::with_capacity(18 + plen + r.frames.len());
    payload.extend_from_slice(&r.id.to_le_bytes());
    payload.extend_from_slice(&r.offset.to_le_bytes());
    payload.extend_from_slice(&(plen as u16).to_le_bytes());
    payload.extend_from_slice(&path[..plen]);
    payload.extend_from_slice(&r.frames);
    format::encode_raw_frame(&payload, out).map_err(|_| WalError::TooLarge {
        path: r.path.clone(),
    })
}

fn decode_record(p: &[u8]) -> Option<Record> {
    let id = u64::from_le_bytes(p.get(..8)?.try_into().ok()?);
    let offset = u64::from_le_bytes(p.get(8..16)?.try_into().ok()?);
    let plen = u16::from_le_bytes(p.get(16..18)?.try_into().ok()?) as usize;
    let path = p.get(18..18 + plen)?;
    Some(Record {
        path: PathBuf::from(std::ffi::OsStr::from_bytes(path)),
        id,
        offset,
        frames: p[18 + plen..].to_vec(),
    })
}

/// The id in the header of the journal file `f`, if it has one.
fn file_id(f: &File) -> Option<u64> {
    let mut head = vec![0u8; 8 + 4 + 1 + 255 + 8 + 4];
    let mut n = 0;
    while n < head.len() {
        match f.read_at(&mut head[n..], n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    format::decode_header(&head[..n]).ok().map(|h| h.id)
}

/// Writes back into the zones' journal files what the commit log in `dir`
/// holds for them (see the module note), and syncs those files. To be
/// called before any journal of the folder is opened.
pub fn recover(dir: &Path) -> io::Result<Recovered> {
    let mut rec = Recovered::default();
    let found = segments(dir)?;
    rec.next = found.last().map_or(1, |(s, _)| s + 1);
    // Each journal's id, read once; files are opened per record and closed
    // again (a segment may name 10^5 journals: more than a process may
    // keep open), and synced one by one at the end.
    let mut ids: std::collections::HashMap<PathBuf, Option<u64>> = std::collections::HashMap::new();
    let mut written: Vec<PathBuf> = Vec::new();
    for (_, seg) in &found {
        rec.segments.push(seg.clone());
        let data = std::fs::read(seg)?;
        if !header_ok(&data) {
            rec.torn_bytes += data.len() as u64;
            continue;
        }
        let mut p = HEADER_LEN;
        while p < data.len() {
            let Frame::Whole(payload, total) = format::check_frame(&data[p..]) else {
                break;
            };
            p += total;
            let Some(r) = decode_record(payload) else {
                break;
            };
            let id = *ids.entry(r.path.clone()).or_insert_with(|| {
                let f = File::open(&r.path).ok()?;
                file_id(&f)
            });
            if id != Some(r.id) {
                rec.skipped += 1;
                continue;
            }
            file::open_rw(&r.path)?.write_all_at(&r.frames, r.offset)?;
            if written.last() != Some(&r.path) {
                written.push(r.path);
            }
            rec.applied += 1;
        }
        rec.torn_bytes += (data.len() - p) as u64;
    }
    written.sort();
    written.dedup();
    for path in &written {
        File::open(path)?.sync_data()?;
    }
    Ok(rec)
}

impl CommitLog {
    /// Removes the segments [`recover`] read and starts the commit-log
    /// thread; the first segment is begun by the first record (a server
    /// whose zones never change writes nothing).
    /// `more_coming`: see [`MoreComing`].
    pub fn start(
        dir: &Path,
        recovered: Recovered,
        more_coming: Option<MoreComing>,
    ) -> io::Result<CommitLog> {
        Self::start_with(dir, recovered, (SEGMENT_BYTES, IDLE_CLOSE), more_coming)
    }

    /// [`CommitLog::start`] with segments of `segment_bytes`, closed after
    /// `idle_close` without records (tests make both small).
    fn start_with(
        dir: &Path,
        recovered: Recovered,
        (segment_bytes, idle_close): (u64, std::time::Duration),
        more_coming: Option<MoreComing>,
    ) -> io::Result<CommitLog> {
        let seq = recovered.next.max(1);
        for old in &recovered.segments {
            std::fs::remove_file(old)?;
        }
        if !recovered.segments.is_empty() {
            file::sync_dir(dir)?;
        }
        let shared = Arc::new(Shared::default());
        let (checkpoints, rx) = mpsc::channel::<(PathBuf, HashSet<PathBuf>)>();
        std::thread::Builder::new()
            .name("lode-checkpoint".into())
            .spawn(move || {
                for (segment, journals) in rx {
                    checkpoint(&segment, &journals);
                }
            })?;
        let worker = Committer {
            shared: shared.clone(),
            dir: dir.to_owned(),
            seg: None,
            next_seq: seq,
            dirty: HashSet::new(),
            checkpoints,
            buf: Vec::new(),
            segment_bytes,
            idle_close,
            more_coming,
        };
        std::thread::Builder::new()
            .name("lode-commit-log".into())
            .spawn(move || worker.run())?;
        Ok(CommitLog { shared })
    }

    /// Queues `record`; `done` is called on the commit-log thread once it
    /// is durable or has failed.
    pub fn submit(&self, record: Record, done: Done) {
        let mut q = self
            .shared
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        q.records.push((record, done));
        let sleeping = q.sleeping;
        drop(q);
        if sleeping {
            self.shared.wake.notify_one();
        }
    }
}

impl CommitLog {
    /// The fdatasyncs of this commit log that succeeded so far (each made
    /// the groups of any number of zones durable; for the server's metrics).
    pub fn syncs(&self) -> u64 {
        self.shared.syncs.load(Ordering::Relaxed)
    }

    /// Tells a commit log waiting for records about to come that it may
    /// have to wait no more (the writers went idle): cheap when it is not.
    pub fn nudge(&self) {
        if self.shared.gathering.load(Ordering::Acquire) {
            self.shared.wake.notify_one();
        }
    }
}

impl Drop for CommitLog {
    fn drop(&mut self) {
        self.shared
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .stopping = true;
        self.shared.wake.notify_one();
    }
}

/// The open segment.
struct Segment {
    path: PathBuf,
    file: File,
    len: u64,
}

impl Segment {
    fn create(dir: &Path, seq: u64) -> io::Result<Segment> {
        file::create_dirs(dir)?;
        let path = dir.join(segment_name(seq));
        let header = encode_header(seq);
        let file = file::replace(&path, &[&header]).map_err(|e| match e {
            file::ReplaceError::Before(e) | file::ReplaceError::After(_, e) => e,
        })?;
        Ok(Segment {
            path,
            file,
            len: header.len() as u64,
        })
    }
}

struct Committer {
    shared: Arc<Shared>,
    dir: PathBuf,
    /// None before the first group, and after a write that could not be
    /// cut back off: the next group begins a new segment first.
    seg: Option<Segment>,
    next_seq: u64,
    /// The journal files the open segment has records of.
    dirty: HashSet<PathBuf>,
    checkpoints: mpsc::Sender<(PathBuf, HashSet<PathBuf>)>,
    buf: Vec<u8>,
    segment_bytes: u64,
    idle_close: std::time::Duration,
    more_coming: Option<MoreComing>,
}

impl Committer {
    fn run(mut self) {
        loop {
            let group = {
                let mut q = self
                    .shared
                    .queue
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                let mut idle = false;
                while q.records.is_empty() && !q.stopping {
                    // Set under the queue's lock: a record queued after it
                    // wakes the thread; one queued while it writes or
                    // gathers does not need to.
                    q.sleeping = true;
                    if self.seg.is_some() {
                        let (g, waited) = self
                            .shared
                            .wake
                            .wait_timeout(q, self.idle_close)
                            .unwrap_or_else(PoisonError::into_inner);
                        q = g;
                        idle = waited.timed_out() && q.records.is_empty();
                    } else {
                        q = self
                            .shared
                            .wake
                            .wait(q)
                            .unwrap_or_else(PoisonError::into_inner);
                    }
                    q.sleeping = false;
                    if idle {
                        break;
                    }
                }
                if idle {
                    drop(q);
                    // Quiet: the segment is closed and checkpointed, so a
                    // server at rest has nothing to read back at start.
                    self.close();
                    continue;
                }
                if q.records.is_empty() {
                    return;
                }
                if let Some(more) = &self.more_coming {
                    // Woken by the writers going idle (`CommitLog::nudge`),
                    // not by each record nor by a clock.
                    let until = std::time::Instant::now() + MAX_GATHER;
                    self.shared.gathering.store(true, Ordering::Release);
                    loop {
                        let now = std::time::Instant::now();
                        if now >= until || q.stopping || !more() {
                            break;
                        }
                        q = self
                            .shared
                            .wake
                            .wait_timeout(q, until - now)
                            .unwrap_or_else(PoisonError::into_inner)
                            .0;
                    }
                    self.shared.gathering.store(false, Ordering::Release);
                }
                std::mem::take(&mut q.records)
            };
            let result = self.write(&group);
            for (_, done) in group {
                done(result.clone());
            }
            if self
                .seg
                .as_ref()
                .is_some_and(|s| s.len > self.segment_bytes)
            {
                self.rotate();
            }
        }
    }

    /// One write and one fdatasync for the whole group.
    fn write(&mut self, group: &[(Record, Done)]) -> Result<(), WalError> {
        self.buf.clear();
        for (r, _) in group {
            encode_record(r, &mut self.buf)?;
        }
        let mut seg = match self.seg.take() {
            Some(seg) => seg,
            None => self.begin().map_err(|e| WalError::NoSegment {
                dir: self.dir.clone(),
                source: Arc::new(e),
            })?,
        };
        let failed = |op: &'static str| {
            let segment = seg.path.clone();
            move |e| WalError::Io {
                segment,
                op,
                source: Arc::new(e),
            }
        };
        let written = seg
            .file
            .write_all_at(&self.buf, seg.len)
            .map_err(failed("write"))
            .and_then(|()| seg.file.sync_data().map_err(failed("fdatasync")));
        let added = self.buf.len() as u64;
        if self.buf.capacity() > 8 << 20 {
            self.buf = Vec::new();
        }
        match written {
            Ok(()) => {
                self.shared.syncs.fetch_add(1, Ordering::Relaxed);
                seg.len += added;
                self.seg = Some(seg);
                for (r, _) in group {
                    if !self.dirty.contains(&r.path) {
                        self.dirty.insert(r.path.clone());
                    }
                }
                Ok(())
            }
            Err(e) => {
                let cut = seg.file.set_len(seg.len).and_then(|()| seg.file.sync_all());
                // Cut back off, the segment goes on; else whatever is at its
                // end stays unread at recovery only if nothing good follows:
                // the next group begins a new segment.
                if cut.is_ok() {
                    self.seg = Some(seg);
                }
                Err(e)
            }
        }
    }

    /// Closes the open segment (checkpointed in the background) without
    /// beginning another: the next group does.
    fn close(&mut self) {
        if let Some(old) = self.seg.take() {
            let journals = std::mem::take(&mut self.dirty);
            let _ = self.checkpoints.send((old.path, journals));
        }
    }

    /// A new segment, with the next sequence number (tried once: a failed
    /// one's number is not used again).
    fn begin(&mut self) -> io::Result<Segment> {
        let created = Segment::create(&self.dir, self.next_seq);
        self.next_seq += 1;
        created
    }

    /// Begins a new segment; the old one is checkpointed in the background.
    /// Disk full or the like: the open segment goes on; the next group
    /// tries again.
    fn rotate(&mut self) {
        if let Ok(new) = self.begin() {
            if let Some(old) = self.seg.replace(new) {
                let journals = std::mem::take(&mut self.dirty);
                let _ = self.checkpoints.send((old.path, journals));
            }
        }
    }
}

/// Syncs every journal file a closed segment has records of, then removes
/// the segment (kept when a file cannot be synced: recovery uses it).
fn checkpoint(segment: &Path, journals: &HashSet<PathBuf>) {
    for j in journals {
        match File::open(j) {
            Ok(f) => {
                if f.sync_data().is_err() {
                    return;
                }
            }
            // Removed since (its zone went): nothing to keep.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(_) => return,
        }
    }
    if std::fs::remove_file(segment).is_ok() {
        let _ = file::sync_dir(file::parent(segment));
    }
}

#[cfg(test)]
mod tests;
