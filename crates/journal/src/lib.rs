//! A zone's journal: the append-only file of the changesets applied to it
//! since its last snapshot, written before an UPDATE is answered.
//!
//! ```text
//!  file  = header record*
//!  header: "LODEJRNL" | version u32le (=2) | origin len u8 | origin (wire)
//!          | file id u64le (version 2; new at each rewrite) | crc32 u32le
//!  record: len u32le | pcrc u32le | hcrc u32le | payload (len bytes)
//!          pcrc = crc32(payload)   hcrc = crc32(len ‖ pcrc)
//!  payload = one Changeset:
//!          soa_from RR | soa_to RR | n_removed u32be | RR* | n_added u32be | RR*
//!  RR      = owner (uncompressed wire name) | type u16be | class u16be
//!            | ttl u32be | rdlength u16be | rdata (bytes as they are)
//!  trailer (optional) = "U" | upstream serial u32be
//! ```
//!
//! A version 1 file (no id, written by earlier builds) is read as it is and
//! rewritten with an id before its first [`Journal::append_deferred`].
//! Appends are synced here ([`Journal::append`]), or left to the commit log
//! shared by all zones ([`wal`]: one fdatasync for many zones' groups).
//!
//! The trailer marks a changeset of a zone signed here from a primary's
//! unsigned versions: the primary's serial it brought the zone to (this
//! zone's own serials differ). The newest mark is found again at replay
//! ([`Recovery::upstream_serial`]), so the next IXFR asks from it.
//!
//! One record holds one changeset, not one batch: a group commit is still one
//! write and one fdatasync (all frames are built in one buffer first), while
//! replay, [`Journal::flushed_through`] and [`Journal::changes_since`] work on
//! changeset boundaries, and a damaged record costs one changeset, not a batch.
//! A batch torn by a crash may leave its first changesets whole; they were
//! never acknowledged, and keeping them is no worse than a crash between the
//! fdatasync and the answer.
//!
//! The header checksum `hcrc` makes a record's length trustworthy on its own:
//! a record that fails is a *torn tail* if no good record starts anywhere
//! after it (the crash cut it; it is truncated away), and *damage* if one does
//! (the good prefix is rewritten to a new file, the damaged file is kept as
//! `<name>.damaged.<unix-time>`, and replay stops there). The same holds for a
//! break in the chain of serials (each `serial_from` must be the previous
//! `serial_to`). Every rewrite (repair, flush, [`Journal::clear`], creation)
//! goes through `<name>.tmp.<pid>` + fsync + rename + fsync of the folder;
//! a temporary file left by a crash is removed when the journal is opened.
//!
//! ```text
//!  append(batch) ─ check serials ─ encode all frames into one buffer
//!      └─ pwrite at end ─ fdatasync ─▶ Ok            (index grows)
//!           └─ error ─ ftruncate(old len) + fsync ─▶ Err  (journal usable)
//!                 └─ error ─▶ Err, journal broken until the cut is made
//!                             (tried again before the next write)
//!  needs_flush() ─ over max usage or depth ─▶ server snapshots at S
//!      └─ flushed_through(S) ─ temp file (header + kept tail) ─ fsync
//!           ─ rename ─ fsync folder
//! ```
//!
//! Appends are never refused for being over the bounds: the bounds only ask
//! for a flush. The defaults are Knot DNS 3.2's `journal-max-usage` (100 MiB)
//! and `journal-max-depth` (20).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod file;
mod format;
pub mod wal;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use lode_wire::Name;
use lode_zonedb::Changeset;

use file::ReplaceError;
pub use file::{Backing, Wrap};
use format::{EncodeError, Frame, HeaderError};
/// Serial number order (RFC 1982), for the journal's users.
pub use lode_wire::serial::serial_lt;

/// The journal's bounds (like Knot's `journal-max-usage` and `journal-max-depth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Size of the file in bytes above which a flush is asked for.
    pub max_usage: u64,
    /// Number of changesets above which a flush is asked for.
    pub max_depth: usize,
}

impl Default for Settings {
    /// Knot DNS 3.2's defaults: 100 MiB and 20 changesets.
    fn default() -> Self {
        Settings {
            max_usage: 100 * 1024 * 1024,
            max_depth: 20,
        }
    }
}

/// Why a journal operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum JournalError {
    /// A system call on the journal or its folder failed.
    Io {
        /// The file concerned.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The system's error.
        source: io::Error,
    },
    /// The file does not start with the journal magic.
    NotAJournal {
        /// The file.
        path: PathBuf,
    },
    /// The file is a journal of a version this build does not read.
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// Its version.
        version: u32,
    },
    /// The file header is cut short or fails its checksum.
    BadHeader {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: &'static str,
    },
    /// The file is the journal of another zone.
    WrongOrigin {
        /// The file.
        path: PathBuf,
        /// The zone asked for.
        expected: Name,
        /// The zone in the file.
        found: Name,
    },
    /// An earlier failed append could not be rolled back; reopen the journal.
    Broken {
        /// The file.
        path: PathBuf,
    },
    /// A changeset does not start at the serial the previous one ended at.
    Discontinuous {
        /// The serial expected.
        expected: u32,
        /// The changeset's `serial_from`.
        found: u32,
    },
    /// A changeset's `serial_to` is not greater than its `serial_from` (RFC 1982).
    SerialNotAdvancing {
        /// `serial_from`.
        from: u32,
        /// `serial_to`.
        to: u32,
    },
    /// A changeset cannot be stored (RDATA over 65,535 bytes, or over 4 GiB in all).
    TooLarge {
        /// What is too large.
        what: &'static str,
    },
    /// `flushed_through` was given a serial the history does not reach.
    SerialNotInHistory {
        /// The serial given.
        serial: u32,
    },
    /// A stored record failed its checksum or could not be read back.
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Byte offset of the record.
        offset: u64,
    },
}

impl JournalError {
    /// The system error under this one, if it is an I/O failure.
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            JournalError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl fmt::Display for JournalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JournalError::Io { path, op, source } => {
                write!(f, "journal {}: {op}: {source}", path.display())
            }
            JournalError::NotAJournal { path } => {
                write!(f, "{} is not a Lode journal", path.display())
            }
            JournalError::UnsupportedVersion { path, version } => write!(
                f,
                "journal {} has format version {version}, this build reads {}",
                path.display(),
                format::VERSION
            ),
            JournalError::BadHeader { path, reason } => {
                write!(f, "journal {}: bad header: {reason}", path.display())
            }
            JournalError::WrongOrigin {
                path,
                expected,
                found,
            } => write!(
                f,
                "journal {} belongs to zone {found}, not {expected}",
                path.display()
            ),
            JournalError::Broken { path } => write!(
                f,
                "journal {}: a failed write could not be undone yet (tried again at the next write)",
                path.display()
            ),
            JournalError::Discontinuous { expected, found } => write!(
                f,
                "changeset starts at serial {found}, the journal is at {expected}"
            ),
            JournalError::SerialNotAdvancing { from, to } => {
                write!(f, "changeset goes from serial {from} to {to}, not forward")
            }
            JournalError::TooLarge { what } => write!(f, "changeset too large: {what}"),
            JournalError::SerialNotInHistory { serial } => {
                write!(f, "serial {serial} is not in the journal's history")
            }
            JournalError::Corrupt { path, offset } => write!(
                f,
                "journal {}: record at byte {offset} no longer reads back",
                path.display()
            ),
        }
    }
}

impl std::error::Error for JournalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JournalError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// What [`Journal::open`] found and did.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Recovery {
    /// The changesets to replay, oldest first.
    pub changesets: Vec<Changeset>,
    /// The file did not exist: it is created (with its folder) at the
    /// first append, so that a zone that never changes writes nothing.
    pub created: bool,
    /// A record cut off by a crash was removed from the end.
    pub torn_tail: Option<TornTail>,
    /// Damage stopped the replay; the good prefix was kept.
    pub damage: Option<Damage>,
    /// The primary's serial marked on the newest replayed changeset that
    /// has one (see [`Journal::append_marked`]).
    pub upstream_serial: Option<u32>,
}

/// A record cut off by a crash, removed from the end of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// Where the cut record began (the file's new length).
    pub offset: u64,
    /// How many bytes were removed.
    pub bytes: u64,
}

/// A damaged record with good data after it, or a break in the serials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The journal file.
    pub file: PathBuf,
    /// Byte offset of the first record not kept.
    pub offset: u64,
    /// What is wrong there.
    pub reason: DamageReason,
    /// Where the damaged file was kept.
    pub kept_as: PathBuf,
    /// Bytes of the damaged file from `offset` on, no longer in the journal.
    pub dropped_bytes: u64,
}

/// What is wrong with a damaged record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DamageReason {
    /// The record's header checksum does not match (or the header is cut short).
    Header,
    /// The record's length runs past the end of the file.
    Length,
    /// The record's payload checksum does not match.
    Checksum,
    /// The checksums match but the payload is not a changeset.
    Undecodable(&'static str),
    /// The changeset does not start where the previous one ended.
    ContinuityBreak {
        /// The previous changeset's `serial_to`.
        expected: u32,
        /// This changeset's `serial_from`.
        found: u32,
    },
    /// The changeset does not move the serial forward.
    SerialNotAdvancing {
        /// `serial_from`.
        from: u32,
        /// `serial_to`.
        to: u32,
    },
}

impl fmt::Display for DamageReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DamageReason::Header => f.write_str("bad record header checksum"),
            DamageReason::Length => f.write_str("record length runs past the end of the file"),
            DamageReason::Checksum => f.write_str("bad record checksum"),
            DamageReason::Undecodable(why) => write!(f, "undecodable changeset: {why}"),
            DamageReason::ContinuityBreak { expected, found } => write!(
                f,
                "changeset starts at serial {found}, the previous one ended at {expected}"
            ),
            DamageReason::SerialNotAdvancing { from, to } => {
                write!(f, "changeset goes from serial {from} to {to}, not forward")
            }
        }
    }
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "journal {} damaged at byte {}: {}; kept the {} bytes before it, the damaged file is {}",
            self.file.display(),
            self.offset,
            self.reason,
            self.offset,
            self.kept_as.display()
        )
    }
}

/// Where one changeset is in the file.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Offset of its frame.
    offset: u64,
    /// Its serial before.
    from: u32,
    /// Its serial after.
    to: u32,
}

/// A batch written by [`Journal::append_deferred`], not yet durable: the
/// commit-log record that makes it so, and how to take it back without it.
#[derive(Debug)]
pub struct Deferred {
    /// What the commit log is to make durable.
    pub record: wal::Record,
    /// For [`Journal::undo`].
    pub undo: Undo,
}

/// Where a journal was before a deferred batch (see [`Journal::undo`]).
#[derive(Debug, Clone, Copy)]
pub struct Undo {
    depth: usize,
    len: u64,
}

/// A new file id: never 0, and never the same twice for one file in
/// practice (time in nanoseconds, the process and a counter, mixed).
fn new_id() -> u64 {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut x =
        nanos ^ (u64::from(std::process::id()) << 40) ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    // splitmix64's finaliser: nearby inputs give far-apart ids.
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    x.max(1)
}

/// Buffers larger than this are given back after an append.
const KEEP_BUFFER: usize = 8 << 20;

/// One zone's open journal.
pub struct Journal {
    path: PathBuf,
    origin: Name,
    settings: Settings,
    file: Box<dyn Backing>,
    wrap: Wrap,
    /// Length of the header.
    header_len: u64,
    /// The file's incarnation, from its header (0: a version 1 file).
    id: u64,
    /// Length of the file: every byte before it is good, and synced — or,
    /// after [`Journal::append_deferred`], in a commit-log record (`wal.rs`).
    len: u64,
    index: Vec<Entry>,
    /// Frames of the append under way, reused.
    buf: Vec<u8>,
    broken: bool,
    /// The file is on disk (else it is created at the first append).
    exists: bool,
    /// `file` is open (else it is opened again when needed).
    open: bool,
}

impl fmt::Debug for Journal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Journal")
            .field("path", &self.path)
            .field("origin", &self.origin)
            .field("len", &self.len)
            .field("depth", &self.index.len())
            .field("first_serial", &self.first_serial())
            .field("last_serial", &self.last_serial())
            .field("broken", &self.broken)
            .finish()
    }
}

/// Builds an [`JournalError::Io`] for `path`.
fn io_err<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(io::Error) -> JournalError + 'a {
    move |source| JournalError::Io {
        path: path.to_owned(),
        op,
        source,
    }
}

/// Where replay stopped early, and why.
enum Stop {
    Torn,
    Damage(DamageReason),
}

/// Whether the file `name` in a journal folder is a temporary file
/// (`<name>.tmp.<pid>`) that a crash of an earlier process left: never
/// renamed into place, it holds nothing acknowledged. The server removes
/// them in the one listing of the folder it makes at start (a pass per
/// journal's opening over a folder of 10^5 zones' files was quadratic).
pub fn is_stale_temp(name: &std::ffi::OsStr) -> bool {
    file::is_stale_temp(name)
}

impl Journal {
    /// Opens the journal of zone `origin` at `path` (created, with its folder,
    /// if missing) and returns it with the changesets to replay. A torn tail is
    /// cut off; damage keeps the good prefix (see the crate's notes).
    pub fn open(
        path: impl AsRef<Path>,
        origin: &Name,
        settings: Settings,
    ) -> Result<(Journal, Recovery), JournalError> {
        Self::open_with(path.as_ref(), origin, settings, file::plain())
    }

    /// The journal at `path` known not to exist yet (its folder was listed):
    /// what [`Journal::open`] gives then, without asking the file system.
    pub fn absent(
        path: impl AsRef<Path>,
        origin: &Name,
        settings: Settings,
    ) -> (Journal, Recovery) {
        Journal::closed(path.as_ref(), origin, settings, file::plain()).missing()
    }

    /// This journal, whose file does not exist (created when first written).
    fn missing(mut self) -> (Journal, Recovery) {
        self.exists = false;
        let rec = Recovery {
            created: true,
            ..Recovery::default()
        };
        (self, rec)
    }

    /// A journal value for `path` with nothing read yet.
    fn closed(path: &Path, origin: &Name, settings: Settings, wrap: Wrap) -> Journal {
        Journal {
            path: path.to_owned(),
            origin: origin.clone(),
            settings,
            file: Box::new(NoFile),
            wrap,
            header_len: 0,
            id: 0,
            len: 0,
            index: Vec::new(),
            buf: Vec::new(),
            broken: false,
            exists: true,
            open: false,
        }
    }

    /// [`Journal::open`] with the file wrapped by `wrap`: the fleet
    /// simulator and tests put a disk that fails (writes, syncs, a full
    /// disk) between the journal and its file.
    pub fn open_on(
        path: impl AsRef<Path>,
        origin: &Name,
        settings: Settings,
        wrap: Wrap,
    ) -> Result<(Journal, Recovery), JournalError> {
        Self::open_with(path.as_ref(), origin, settings, wrap)
    }

    /// [`Journal::open`] with the file wrapped by `wrap` (tests inject faults).
    fn open_with(
        path: &Path,
        origin: &Name,
        settings: Settings,
        wrap: Wrap,
    ) -> Result<(Journal, Recovery), JournalError> {
        let mut j = Journal::closed(path, origin, settings, wrap);
        let data = match std::fs::read(path) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(j.missing()),
            Err(e) => return Err(io_err(path, "read")(e)),
        };
        let header = format::decode_header(&data).map_err(|e| match e {
            HeaderError::Magic => JournalError::NotAJournal {
                path: path.to_owned(),
            },
            HeaderError::Version(version) => JournalError::UnsupportedVersion {
                path: path.to_owned(),
                version,
            },
            HeaderError::Short => JournalError::BadHeader {
                path: path.to_owned(),
                reason: "file ends inside the header",
            },
            HeaderError::Checksum => JournalError::BadHeader {
                path: path.to_owned(),
                reason: "header checksum mismatch",
            },
            HeaderError::Origin => JournalError::BadHeader {
                path: path.to_owned(),
                reason: "origin is not a valid name",
            },
        })?;
        if header.origin != *origin {
            return Err(JournalError::WrongOrigin {
                path: path.to_owned(),
                expected: origin.clone(),
                found: header.origin,
            });
        }
        let header_len = header.len;
        j.header_len = header_len as u64;
        j.id = header.id;

        let mut rec = Recovery::default();
        let mut p = header_len;
        let mut prev_to: Option<u32> = None;
        let stop = loop {
            if p == data.len() {
                break None;
            }
            let reason = match format::check_frame(&data[p..]) {
                Frame::Whole(payload, total) => match format::decode_changeset_marked(payload) {
                    Err(why) => break Some(Stop::Damage(DamageReason::Undecodable(why))),
                    Ok((cs, upstream)) => {
                        let (from, to) = (cs.serial_from(), cs.serial_to());
                        if let Some(expected) = prev_to.filter(|&e| e != from) {
                            break Some(Stop::Damage(DamageReason::ContinuityBreak {
                                expected,
                                found: from,
                            }));
                        }
                        if !serial_lt(from, to) {
                            break Some(Stop::Damage(DamageReason::SerialNotAdvancing {
                                from,
                                to,
                            }));
                        }
                        j.index.push(Entry {
                            offset: p as u64,
                            from,
                            to,
                        });
                        rec.changesets.push(cs);
                        rec.upstream_serial = upstream.or(rec.upstream_serial);
                        prev_to = Some(to);
                        p += total;
                        continue;
                    }
                },
                Frame::ShortHeader | Frame::BadHeader => DamageReason::Header,
                Frame::PastEnd => DamageReason::Length,
                Frame::BadPayload => DamageReason::Checksum,
            };
            break Some(match format::find_frame(&data, p + 1) {
                Some(_) => Stop::Damage(reason),
                None => Stop::Torn,
            });
        };
        j.len = p as u64;
        j.open = true;
        match stop {
            None => j.file = (j.wrap)(file::open_rw(path).map_err(io_err(path, "open"))?),
            Some(Stop::Torn) => {
                let f = (j.wrap)(file::open_rw(path).map_err(io_err(path, "open"))?);
                f.set_len(j.len)
                    .map_err(io_err(path, "truncate torn tail"))?;
                f.sync_all()
                    .map_err(io_err(path, "sync after truncation"))?;
                j.file = f;
                rec.torn_tail = Some(TornTail {
                    offset: j.len,
                    bytes: (data.len() - p) as u64,
                });
            }
            Some(Stop::Damage(reason)) => {
                let kept_as = file::keep_aside(path).map_err(io_err(path, "keep damaged file"))?;
                let f = file::replace(path, &[&data[..p]]).map_err(|e| match e {
                    ReplaceError::Before(e) | ReplaceError::After(_, e) => {
                        io_err(path, "rewrite good prefix")(e)
                    }
                })?;
                j.file = (j.wrap)(f);
                rec.damage = Some(Damage {
                    file: path.to_owned(),
                    offset: p as u64,
                    reason,
                    kept_as,
                    dropped_bytes: (data.len() - p) as u64,
                });
            }
        }
        Ok((j, rec))
    }

    /// Creates a journal holding only its header (and the folder if missing).
    fn create(&mut self) -> Result<(), JournalError> {
        let path = self.path.clone();
        let dir = file::parent(&path);
        file::create_dirs(dir).map_err(io_err(dir, "create folder"))?;
        let mut header = Vec::new();
        let id = new_id();
        format::encode_header(&self.origin, id, &mut header);
        let f = file::replace(&path, &[&header]).map_err(|e| match e {
            ReplaceError::Before(e) | ReplaceError::After(_, e) => io_err(&path, "create")(e),
        })?;
        self.file = (self.wrap)(f);
        self.id = id;
        self.header_len = header.len() as u64;
        self.len = self.header_len;
        self.exists = true;
        self.open = true;
        Ok(())
    }

    /// Makes `file` usable: opened again after [`Journal::release`], or
    /// created at the first append.
    fn ready(&mut self) -> Result<(), JournalError> {
        if !self.exists {
            return self.create();
        }
        if !self.open {
            let f = file::open_rw(&self.path).map_err(io_err(&self.path, "open"))?;
            self.file = (self.wrap)(f);
            self.open = true;
        }
        Ok(())
    }

    /// True while the file is open (see [`Journal::release`]).
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Closes the file until it is next needed (a quiet zone keeps no file
    /// descriptor open).
    pub fn release(&mut self) {
        if self.open {
            self.file = Box::new(NoFile);
            self.open = false;
        }
    }

    /// Appends `batch` (oldest first) with one write and one fdatasync; returns
    /// only once it is on stable storage. On failure nothing of the batch is
    /// kept and the journal stays usable, unless the rollback itself failed:
    /// then every later append fails until the journal is reopened.
    pub fn append(&mut self, batch: &[Changeset]) -> Result<(), JournalError> {
        self.append_marked(batch, None)
    }

    /// [`Journal::append`], the last changeset marked with `upstream`: the
    /// primary's serial it brought the zone to, for a zone signed here
    /// whose serials are its own (found again by [`Journal::open`]).
    pub fn append_marked(
        &mut self,
        batch: &[Changeset],
        upstream: Option<u32>,
    ) -> Result<(), JournalError> {
        let Some(old_depth) = self.encode_batch(batch, upstream)? else {
            return Ok(());
        };
        let written = self
            .file
            .write_all_at(&self.buf, self.len)
            .map_err(io_err(&self.path, "write"))
            .and_then(|()| {
                self.file
                    .sync_data()
                    .map_err(io_err(&self.path, "fdatasync"))
            });
        let added = self.buf.len() as u64;
        if self.buf.capacity() > KEEP_BUFFER {
            self.buf = Vec::new();
        }
        match written {
            Ok(()) => {
                self.len += added;
                Ok(())
            }
            Err(e) => {
                self.roll_back(old_depth, self.len);
                Err(e)
            }
        }
    }

    /// [`Journal::append_marked`] without the fdatasync: the frames are
    /// written to the file, and what is returned is what the commit log
    /// ([`wal::CommitLog`]) must make durable before the batch counts as
    /// stored — then nothing more is to be done; if the commit log fails,
    /// [`Journal::undo`] takes the batch back. Until one of the two, no
    /// other change is to be made to the journal. A version 1 file is first
    /// rewritten with a file id (synced), which the commit log's records name.
    pub fn append_deferred(
        &mut self,
        batch: &[Changeset],
        upstream: Option<u32>,
    ) -> Result<Option<Deferred>, JournalError> {
        if self.exists && self.id == 0 && !self.broken {
            self.keep_from(0)?;
        }
        let Some(old_depth) = self.encode_batch(batch, upstream)? else {
            return Ok(None);
        };
        let offset = self.len;
        let frames = std::mem::take(&mut self.buf);
        match self.file.write_all_at(&frames, offset) {
            Ok(()) => {
                self.len += frames.len() as u64;
                Ok(Some(Deferred {
                    record: wal::Record {
                        path: self.path.clone(),
                        id: self.id,
                        offset,
                        frames,
                    },
                    undo: Undo {
                        depth: old_depth,
                        len: offset,
                    },
                }))
            }
            Err(e) => {
                self.roll_back(old_depth, offset);
                Err(io_err(&self.path, "write")(e))
            }
        }
    }

    /// Takes back a batch of [`Journal::append_deferred`] whose commit-log
    /// record could not be made durable.
    pub fn undo(&mut self, undo: Undo) {
        self.roll_back(undo.depth, undo.len);
    }

    /// Cuts the index back to `depth` and the file back to `len` (synced,
    /// so that no frame of a batch answered as failed comes back after a
    /// crash); if that fails, the journal is broken until reopened.
    fn roll_back(&mut self, depth: usize, len: u64) {
        self.index.truncate(depth);
        self.len = len;
        let rolled_back = self
            .file
            .set_len(self.len)
            .and_then(|()| self.file.sync_all());
        if rolled_back.is_err() {
            self.broken = true;
        }
    }

    /// Tries again what left the journal broken — the file cut back to its
    /// good length and synced (a roll-back that failed), the folder synced
    /// (a rewrite whose rename may not have been durable) — before the next
    /// write: a disk that failed for a while (full, or an I/O error) takes
    /// changes again once it works, with no restart.
    fn heal(&mut self) -> Result<(), JournalError> {
        if !self.broken {
            return Ok(());
        }
        let healed = self.ready().is_ok()
            && self
                .file
                .set_len(self.len)
                .and_then(|()| self.file.sync_all())
                .and_then(|()| file::sync_dir(file::parent(&self.path)))
                .is_ok();
        if !healed {
            return Err(JournalError::Broken {
                path: self.path.clone(),
            });
        }
        self.broken = false;
        Ok(())
    }

    /// Checks that `batch` continues the journal, encodes its frames into
    /// `buf` and adds them to the index (the file opened or created first).
    /// Returns the index's depth before, or None for an empty batch.
    fn encode_batch(
        &mut self,
        batch: &[Changeset],
        upstream: Option<u32>,
    ) -> Result<Option<usize>, JournalError> {
        self.heal()?;
        let mut expect = self.last_serial();
        for cs in batch {
            let (from, to) = (cs.serial_from(), cs.serial_to());
            if let Some(expected) = expect.filter(|&e| e != from) {
                return Err(JournalError::Discontinuous {
                    expected,
                    found: from,
                });
            }
            if !serial_lt(from, to) {
                return Err(JournalError::SerialNotAdvancing { from, to });
            }
            expect = Some(to);
        }
        if batch.is_empty() {
            return Ok(None);
        }
        self.ready()?;
        let old_depth = self.index.len();
        self.buf.clear();
        for (i, cs) in batch.iter().enumerate() {
            let offset = self.len + self.buf.len() as u64;
            let mark = upstream.filter(|_| i + 1 == batch.len());
            if let Err(e) = format::encode_frame_marked(cs, mark, &mut self.buf) {
                self.index.truncate(old_depth);
                return Err(JournalError::TooLarge {
                    what: match e {
                        EncodeError::RdataTooLong => "RDATA over 65,535 bytes",
                        EncodeError::TooLarge => "changeset over 4 GiB",
                    },
                });
            }
            self.index.push(Entry {
                offset,
                from: cs.serial_from(),
                to: cs.serial_to(),
            });
        }
        Ok(Some(old_depth))
    }

    /// True when the journal is over its size or depth bound: the server should
    /// snapshot the zone and call [`Journal::flushed_through`].
    pub fn needs_flush(&self) -> bool {
        self.usage_bytes() > self.settings.max_usage || self.depth() > self.settings.max_depth
    }

    /// Drops the history up to serial `serial` (a snapshot of the zone at that
    /// serial is on disk): the changesets from `serial` on are rewritten to a
    /// new file that atomically replaces the old one.
    pub fn flushed_through(&mut self, serial: u32) -> Result<(), JournalError> {
        self.heal()?;
        if self.index.first().is_none_or(|e| e.from == serial) {
            return Ok(());
        }
        let Some(last_dropped) = self.index.iter().rposition(|e| e.to == serial) else {
            return Err(JournalError::SerialNotInHistory { serial });
        };
        self.keep_from(last_dropped + 1)
    }

    /// Drops the whole history (for a zone whose serials start afresh, e.g.
    /// reloaded from a zone file): the file is replaced by one holding only
    /// its header.
    pub fn clear(&mut self) -> Result<(), JournalError> {
        self.heal()?;
        self.keep_from(self.index.len())
    }

    /// Replaces the file with one holding the changesets from `first` on.
    fn keep_from(&mut self, first: usize) -> Result<(), JournalError> {
        if !self.exists {
            return Ok(());
        }
        self.ready()?;
        let start = self.index.get(first).map_or(self.len, |e| e.offset);
        let mut header = Vec::new();
        let id = new_id();
        format::encode_header(&self.origin, id, &mut header);
        let mut tail = vec![0; (self.len - start) as usize];
        self.file
            .read_exact_at(&mut tail, start)
            .map_err(io_err(&self.path, "read kept history"))?;
        let (f, err) = match file::replace(&self.path, &[&header, &tail]) {
            Ok(f) => (f, None),
            Err(ReplaceError::Before(e)) => {
                return Err(io_err(&self.path, "rewrite journal")(e));
            }
            // The new file is in place but may not survive a crash: use it,
            // but acknowledge nothing more until the journal is reopened.
            Err(ReplaceError::After(f, e)) => {
                self.broken = true;
                (f, Some(io_err(&self.path, "sync folder after rewrite")(e)))
            }
        };
        self.file = (self.wrap)(f);
        self.id = id;
        // The kept records move from `start` to just after the new header
        // (which may be longer than the old one: a version 1 file's).
        self.index.drain(..first);
        for e in &mut self.index {
            e.offset = e.offset - start + header.len() as u64;
        }
        self.header_len = header.len() as u64;
        self.len = self.header_len + tail.len() as u64;
        err.map_or(Ok(()), Err)
    }

    /// The changesets from serial `serial` to the last one, oldest first:
    /// empty if `serial` is the last serial, `None` if the history does not
    /// reach back to it.
    pub fn changes_since(&mut self, serial: u32) -> Result<Option<Vec<Changeset>>, JournalError> {
        if self.last_serial() == Some(serial) {
            return Ok(Some(Vec::new()));
        }
        let Some(first) = self.index.iter().rposition(|e| e.from == serial) else {
            return Ok(None);
        };
        self.ready()?;
        let start = self.index[first].offset;
        let mut data = vec![0; (self.len - start) as usize];
        self.file
            .read_exact_at(&mut data, start)
            .map_err(io_err(&self.path, "read"))?;
        let mut out = Vec::with_capacity(self.index.len() - first);
        for e in &self.index[first..] {
            let at = (e.offset - start) as usize;
            let corrupt = || JournalError::Corrupt {
                path: self.path.clone(),
                offset: e.offset,
            };
            let Frame::Whole(payload, _) = format::check_frame(&data[at..]) else {
                return Err(corrupt());
            };
            out.push(format::decode_changeset(payload).map_err(|_| corrupt())?);
        }
        Ok(Some(out))
    }

    /// The serial the oldest changeset starts at.
    pub fn first_serial(&self) -> Option<u32> {
        self.index.first().map(|e| e.from)
    }

    /// The serial the newest changeset ends at.
    pub fn last_serial(&self) -> Option<u32> {
        self.index.last().map(|e| e.to)
    }

    /// Size of the journal file in bytes (header included).
    pub fn usage_bytes(&self) -> u64 {
        self.len
    }

    /// Number of changesets in the journal.
    pub fn depth(&self) -> usize {
        self.index.len()
    }

    /// True once a failed append could not be rolled back (see [`Journal::append`]).
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// The journal file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The backing of a journal being opened, before its file is.
#[derive(Debug)]
struct NoFile;

impl Backing for NoFile {
    fn write_all_at(&self, _: &[u8], _: u64) -> io::Result<()> {
        Err(io::ErrorKind::NotConnected.into())
    }
    fn read_exact_at(&self, _: &mut [u8], _: u64) -> io::Result<()> {
        Err(io::ErrorKind::NotConnected.into())
    }
    fn sync_data(&self) -> io::Result<()> {
        Err(io::ErrorKind::NotConnected.into())
    }
    fn sync_all(&self) -> io::Result<()> {
        Err(io::ErrorKind::NotConnected.into())
    }
    fn set_len(&self, _: u64) -> io::Result<()> {
        Err(io::ErrorKind::NotConnected.into())
    }
}

// The server moves journals between threads.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<Journal>();
};

#[cfg(test)]
mod tests;
