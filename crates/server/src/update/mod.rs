//! Dynamic updates (RFC 2136): admission on the transport's thread, then one
//! writer per zone that validates, journals, applies and publishes in groups.
//! The writers run on a pool of a few threads shared by all zones
//! (`pool.rs`): one step of one zone's writer at a time, in order.
//!
//! ```text
//!  UDP worker / TCP task                      zone writer (a step on the writer pool)
//!  ─────────────────────                      ───────────────────────────────────────
//!  parse (FORMERR / drop)                     take every queued job (a group)
//!  zone served? (else the engine answers)     for each, in order: process against
//!  TSIG (NOTAUTH + BADKEY/BADSIG/BADTIME)       the version the previous one made
//!  ACL: address and key (REFUSED)               → changeset, or its own error
//!  defer the reply, queue the job ──────────▶ journal: one write, one fdatasync
//!                                             publish the last version (one swap)
//!                     replies (signed) ◀───── answer every job of the group
//! ```
//!
//! A failing update does not fail the others of its group (each is
//! processed alone against the state before it); a journal write that fails
//! answers the group SERVFAIL and publishes nothing, so nothing that was
//! acknowledged is lost and nothing unacknowledged is served. Queries never
//! wait: they read the published set without a lock.

mod admit;
mod background;
pub(crate) mod ds_push;
mod error;
mod forward;
pub(crate) mod frozen;
mod pool;
pub(crate) mod signing;
#[cfg(test)]
mod transfer_tests;
mod writer;
mod xfrout;

pub(crate) use admit::{keys_of, Admission, FlushError, Replicas, Updates};
pub use admit::{TsigKeyError, UpdatesError};
pub(crate) use error::WriterError;
pub(crate) use pool::WriterQueue;
#[cfg(test)]
pub(crate) use writer::start_writer;
pub(crate) use writer::{parent_sources, start_writers, start_writers_for};
pub(crate) use xfrout::TransferSlots;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};

use lode_io::Later;
use lode_tsig::Key;
use lode_wire::{rcode, Name};
use lode_zonedb::Zone;
use lode_zones::update::{self as ddns};

use crate::clock::unix_now;
use crate::loading::flush::Flushed;

/// What a zone's writer does: an UPDATE, the zone file read again (as the
/// difference from the served version), or writing the zone file now.
#[derive(Debug)]
pub(crate) enum Work {
    Update(Box<Job>),
    File {
        zone: Arc<Zone>,
        /// The file version (`config::stamp::source_tag`).
        tag: Vec<u8>,
        done: mpsc::Sender<Result<String, WriterError>>,
    },
    /// `zone-flush`: the zone file written now (one write answers every
    /// request of a group: the error is shared).
    Flush {
        done: mpsc::Sender<Result<Flushed, Arc<WriterError>>>,
    },
    /// A signed zone signed whole again (`lode zone-sign`), a key rollover
    /// started, a KSK's DS confirmed: answered with what was done.
    Sign {
        what: SignWork,
        done: mpsc::Sender<Result<String, WriterError>>,
    },
    /// A reload changed the zone's writer settings: taken from now on.
    Settings(Box<ZoneSettings>),
    /// Changesets transferred in (IXFR): applied in order, journaled,
    /// published; answered with the new serial or why they do not apply.
    Incremental {
        changes: Vec<lode_zonedb::Changeset>,
        done: mpsc::Sender<Result<u32, WriterError>>,
    },
    /// A whole new version transferred in (AXFR): the history is dropped,
    /// the state written, the version published.
    Replace {
        zone: Arc<Zone>,
        done: mpsc::Sender<Result<u32, WriterError>>,
    },
    /// The published version and the journal's changes since a serial (for
    /// IXFR out), taken together so that they agree.
    History {
        since: u32,
        done: mpsc::Sender<History>,
    },
    /// A mark on the served version (a secondary's expiry), committed in
    /// order with the zone's changes.
    Mark(Mark),
    /// `zone-backup`: the served version written as the zone file `file`,
    /// the key folder (a zone signed here) copied into `keys`.
    Backup {
        file: PathBuf,
        keys: PathBuf,
        done: mpsc::Sender<Result<String, WriterError>>,
    },
    /// `zone-restore`: the key folder made the copy in `keys` (a zone
    /// signed here) and read again, then `zone` served as a whole new
    /// version.
    Restore {
        zone: Arc<Zone>,
        keys: Option<PathBuf>,
        done: mpsc::Sender<Result<String, WriterError>>,
    },
    /// `zone-freeze` (true) or `zone-thaw`: the zone-file writes,
    /// re-signing and key events postponed or resumed, answered once the
    /// work queued before it is done.
    Freeze {
        frozen: bool,
        done: mpsc::Sender<()>,
    },
}

/// A mark on a secondary's served version (see `Work::Mark`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    /// Expired (SERVFAIL) or not.
    Expired(bool),
    /// When it expires without a refresh (Unix seconds), for EDNS EXPIRE.
    ExpiresAt(Option<u64>),
}

/// What a `Work::Sign` asks of a signed zone.
#[derive(Debug, Clone)]
pub(crate) enum SignWork {
    /// `zone-sign`: every signature made again now.
    Whole,
    /// `zone-keys-load`: the key folder read again (keys, other signers'
    /// keys, signed key responses) and the key events due run.
    Keys,
    /// `zone-key-rollover`: a rollover of this kind started now.
    Roll(lode_dnssec::Role),
    /// `zone-ksk-submitted`: the ready KSK's DS is at the parent (its TTL).
    Submitted(u64),
    /// A reload changed the zone's signing policy: the new one, and the
    /// parent's servers its `ksk-submission` asks.
    Policy(Box<(crate::config::Signing, crate::update::ds_push::Parents)>),
    /// A reload turned signing on for a primary zone served unsigned: its
    /// policy, the parent's servers and the key folders' root (`kasp-db`).
    Start(
        Box<(
            crate::config::Signing,
            crate::update::ds_push::Parents,
            std::path::PathBuf,
        )>,
    ),
    /// A reload turned signing off for a zone signed here: its records are
    /// kept as they are (Knot's), nothing is signed from now on.
    Stop,
}

impl SignWork {
    /// The command's name.
    pub(crate) fn command(&self) -> &'static str {
        match self {
            SignWork::Whole => "zone-sign",
            SignWork::Keys => "zone-keys-load",
            SignWork::Roll(_) => "zone-key-rollover",
            SignWork::Submitted(_) => "zone-ksk-submitted",
            SignWork::Policy(_) | SignWork::Start(_) | SignWork::Stop => "reload",
        }
    }
}

/// The settings a zone's writer takes from its configuration, which a
/// reload may change (`serial-policy`, `zonefile-sync`,
/// `dnssec-validation`, `zonemd-generate`, `zonemd-verify`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ZoneSettings {
    pub(crate) serial_policy: lode_zones::SerialPolicy,
    pub(crate) zonefile_sync: crate::config::ZonefileSync,
    pub(crate) validation: bool,
    pub(crate) zonemd: lode_zones::zonemd::Generate,
    pub(crate) zonemd_verify: bool,
}

impl ZoneSettings {
    /// The settings `options` give.
    pub(crate) fn of(options: &crate::config::ZoneOptions) -> ZoneSettings {
        ZoneSettings {
            serial_policy: options.serial_policy.parse().unwrap_or_default(),
            zonefile_sync: options.zonefile_sync,
            validation: options.validation,
            zonemd: options.zonemd_generate,
            zonemd_verify: options.zonemd_verify,
        }
    }
}

/// A zone version and the changesets that lead to it from an older serial
/// (`None`: the journal does not reach back that far).
#[derive(Debug)]
pub(crate) struct History {
    pub(crate) zone: Arc<Zone>,
    pub(crate) changes: Option<Vec<lode_zonedb::Changeset>>,
}

impl Work {
    /// Where the work came from, for logs.
    fn source(&self) -> String {
        match self {
            Work::Update(j) => format!("update from {}", j.peer),
            Work::File { .. } => "the zone file read again".into(),
            Work::Flush { .. } => "zone-flush".into(),
            Work::Sign { what, .. } => what.command().into(),
            Work::Settings(_) => "reload".into(),
            Work::History { .. } => "an outgoing IXFR".into(),
            Work::Incremental { .. } => "an incoming IXFR".into(),
            Work::Replace { .. } => "an incoming AXFR".into(),
            Work::Mark(_) => "the refresh timers".into(),
            Work::Backup { .. } => "zone-backup".into(),
            Work::Restore { .. } => "zone-restore".into(),
            Work::Freeze { frozen: true, .. } => "zone-freeze".into(),
            Work::Freeze { frozen: false, .. } => "zone-thaw".into(),
        }
    }
    /// Answers the work with a failure (an update: SERVFAIL).
    fn fail(self, out: &mut [u8], why: WriterError) {
        match self {
            Work::Update(job) => {
                let n = reply(&job.msg, rcode::SERVFAIL, job.signed.as_ref(), out);
                job.reply.send(&out[..n]);
            }
            Work::File { done, .. } | Work::Sign { done, .. } => {
                let _ = done.send(Err(why));
            }
            Work::Flush { done } => {
                let _ = done.send(Err(Arc::new(why)));
            }
            // The transfer falls back to what it can do without history.
            Work::History { .. } | Work::Settings(_) | Work::Mark(_) => {}
            Work::Incremental { done, .. } | Work::Replace { done, .. } => {
                let _ = done.send(Err(why));
            }
            Work::Freeze { done, .. } => {
                let _ = done.send(());
            }
            Work::Backup { done, .. } | Work::Restore { done, .. } => {
                let _ = done.send(Err(why));
            }
        }
    }
}

/// A dynamic update admitted for a zone, waiting for its writer.
#[derive(Debug)]
pub(crate) struct Job {
    msg: Vec<u8>,
    /// The request as admission parsed it (the writer does not parse it again).
    req: lode_zones::UpdateRequest,
    /// The key that signed it and the request MAC, to sign the reply.
    signed: Option<(Key, lode_tsig::MacBuf)>,
    peer: SocketAddr,
    reply: Later,
}

/// Writes the reply to an UPDATE with `rcode`, signed when the request was.
fn reply(
    msg: &[u8],
    code: u16,
    signed: Option<&(Key, lode_tsig::MacBuf)>,
    out: &mut [u8],
) -> usize {
    let n = ddns::write_response(msg, code, out);
    match signed {
        Some((key, mac)) => lode_tsig::sign_response(out, n, key, mac.as_slice(), unix_now(), 0)
            .map_or(n, |a| a.len),
        None => n,
    }
}

/// Signs the one-message reply in `out[..n]` for a signed request.
pub(crate) fn sign_reply(out: &mut [u8], n: usize, signed: &(Key, lode_tsig::MacBuf)) -> usize {
    lode_tsig::sign_response(out, n, &signed.0, signed.1.as_slice(), unix_now(), 0)
        .map_or(n, |a| a.len)
}

/// The journal file of a zone in `dir`.
pub(crate) fn journal_path(dir: &Path, origin: &Name) -> PathBuf {
    let text = origin.to_lowercase().to_string();
    let stem = text.trim_end_matches('.');
    dir.join(format!(
        "{}.jnl",
        if stem.is_empty() { "root" } else { stem }
    ))
}

/// The state snapshot of a zone in `dir` (written when its journal is
/// flushed: the zone at one serial, the history before it dropped).
pub(crate) fn state_path(dir: &Path, origin: &Name) -> PathBuf {
    journal_path(dir, origin).with_extension("state")
}

/// The note naming the zone file version the writer last wrote (see
/// `loading/flush.rs`).
pub(crate) fn flushed_path(dir: &Path, origin: &Name) -> PathBuf {
    journal_path(dir, origin).with_extension("flushed")
}
