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
mod forward;
mod pool;
#[cfg(test)]
mod transfer_tests;
mod writer;
mod xfrout;

pub(crate) use admit::{keys_of, Admission, FlushError, Updates};
pub(crate) use pool::WriterQueue;
#[cfg(test)]
pub(crate) use writer::start_writer;
pub(crate) use writer::{start_writers, start_writers_for, submission_sources};
pub(crate) use xfrout::TransferSlots;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use lode_io::Later;
use lode_tsig::Key;
use lode_wire::{rcode, Name};
use lode_zonedb::{Zone, ZoneSet};
use lode_zones::update::{self as ddns};

use crate::flush::Flushed;

/// Seconds since 1970 (TSIG times, serial policies).
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Publishes zone versions: readers load the set, then a zone's slot,
/// without a lock. A zone's new version is one swap of its slot
/// ([`Publisher::publish`], O(1) whatever the number of zones); zones that
/// come or go replace the set ([`Publisher::update`], O(zones)). Both take
/// `lock`, so that a slot swapped is never one a concurrent set replacement
/// is about to drop.
#[derive(Debug, Default)]
pub(crate) struct Publisher {
    pub(crate) set: Arc<ArcSwap<ZoneSet>>,
    lock: Mutex<()>,
    /// Zones whose serial changes are told to the NOTIFY thread.
    watch: Mutex<Vec<(Watched, mpsc::Sender<crate::notify::Changed>)>>,
    /// Secondaries signed here (their serials are their own): the
    /// primary's serial the served version stands for (None: not known,
    /// the next transfer is whole).
    upstream: Mutex<std::collections::HashMap<Name, Option<u32>>>,
}

impl Publisher {
    /// A publisher of `set`.
    pub(crate) fn new(set: Arc<ArcSwap<ZoneSet>>) -> Publisher {
        Publisher {
            set,
            lock: Mutex::new(()),
            watch: Mutex::new(Vec::new()),
            upstream: Mutex::new(std::collections::HashMap::new()),
        }
    }
    /// Notes that the served version of `origin`, a secondary signed here,
    /// stands for the primary's serial `serial` (None: not known).
    pub(crate) fn set_upstream(&self, origin: &Name, serial: Option<u32>) {
        self.upstream
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(origin.clone(), serial);
    }
    /// The SOA to compare with the primary's and to ask an IXFR from: the
    /// served version's, with the primary's serial when the zone is signed
    /// here. None: nothing served, or a zone signed here whose primary
    /// serial is not known (a whole transfer is needed).
    pub(crate) fn soa_for_primary(&self, origin: &Name) -> Option<lode_wire::Record> {
        let mut soa = self.get(origin)?.soa_record();
        let upstream = self
            .upstream
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(origin)
            .copied();
        match upstream {
            None => Some(soa),
            Some(None) => None,
            Some(Some(serial)) => {
                lode_zonedb::set_soa_serial(&mut soa, serial);
                Some(soa)
            }
        }
    }
    /// Tells `tx` of every published change of a serial of the `zones`
    /// (a list its owner may grow and shrink later).
    pub(crate) fn watch(&self, zones: Watched, tx: mpsc::Sender<crate::notify::Changed>) {
        self.watch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((zones, tx));
    }
    /// The published version of the zone at `origin`.
    pub(crate) fn get(&self, origin: &Name) -> Option<Arc<Zone>> {
        self.set.load().get(origin.as_ref())
    }
    /// Publishes a new version of one zone: one swap of its slot (a zone not
    /// yet in the set is added to it).
    pub(crate) fn publish(&self, zone: Arc<Zone>) {
        let _guard = self
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let set = self.set.load();
        match set.publish(zone.clone()) {
            Ok(old) => {
                if old.serial() != zone.serial() {
                    self.tell(&zone);
                }
            }
            Err(zone) => {
                let mut next = (**set).clone();
                next.insert(zone.clone());
                self.set.store(Arc::new(next));
                self.tell(&zone);
            }
        }
    }
    /// Changes a copy of the current set and publishes it (zones added,
    /// removed or replaced in new slots).
    pub(crate) fn update(&self, f: impl FnOnce(&mut ZoneSet)) {
        // A writer that panicked while holding the lock left the set whole
        // (it is only replaced by `store`): go on.
        let _guard = self
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = self.set.load_full();
        let mut next = (*before).clone();
        f(&mut next);
        let next = Arc::new(next);
        self.set.store(next.clone());
        let watchers = self
            .watch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (zones, tx) in watchers.iter() {
            let zones = zones
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for name in zones.iter() {
                let Some(now) = next.get(name.as_ref()) else {
                    continue;
                };
                if before.get(name.as_ref()).map(|z| z.serial()) == Some(now.serial()) {
                    continue;
                }
                let _ = tx.send(crate::notify::Changed {
                    zone: name.clone(),
                    soa: now.soa_record(),
                });
            }
        }
    }
    /// Tells the watchers of `zone` of its new serial.
    fn tell(&self, zone: &Zone) {
        let watchers = self
            .watch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if watchers.is_empty() {
            return;
        }
        let name = zone.origin().to_name().to_lowercase();
        for (zones, tx) in watchers.iter() {
            let watched = zones
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains(&name);
            if watched {
                let _ = tx.send(crate::notify::Changed {
                    zone: name.clone(),
                    soa: zone.soa_record(),
                });
            }
        }
    }
}

/// The zones a watcher of the publisher follows (lower-cased origins;
/// shared: zones made at run time join it).
pub(crate) type Watched = Arc<Mutex<std::collections::HashSet<Name>>>;

/// What a zone's writer does: an UPDATE, the zone file read again (as the
/// difference from the served version), or writing the zone file now.
#[derive(Debug)]
pub(crate) enum Work {
    Update(Box<Job>),
    File {
        zone: Arc<Zone>,
        /// The file version (`snapshot::source_tag`).
        tag: Vec<u8>,
        done: mpsc::Sender<Result<String, String>>,
    },
    Flush {
        done: mpsc::Sender<Result<Flushed, String>>,
    },
    /// A signed zone signed whole again (`lode zone-sign`), a key rollover
    /// started, a KSK's DS confirmed: answered with what was done.
    Sign {
        what: SignWork,
        done: mpsc::Sender<Result<String, String>>,
    },
    /// A reload changed the zone's writer settings: taken from now on.
    Settings(Box<ZoneSettings>),
    /// Changesets transferred in (IXFR): applied in order, journaled,
    /// published; answered with the new serial or why they do not apply.
    Incremental {
        changes: Vec<lode_zonedb::Changeset>,
        done: mpsc::Sender<Result<u32, String>>,
    },
    /// A whole new version transferred in (AXFR): the history is dropped,
    /// the state written, the version published.
    Replace {
        zone: Arc<Zone>,
        done: mpsc::Sender<Result<u32, String>>,
    },
    /// The published version and the journal's changes since a serial (for
    /// IXFR out), taken together so that they agree.
    History {
        since: u32,
        done: mpsc::Sender<History>,
    },
}

/// What a `Work::Sign` asks of a signed zone.
#[derive(Debug, Clone)]
pub(crate) enum SignWork {
    /// `zone-sign`: every signature made again now.
    Whole,
    /// `zone-key-rollover`: a rollover of this kind started now.
    Roll(lode_dnssec::Role),
    /// `zone-ksk-submitted`: the ready KSK's DS is at the parent (its TTL).
    Submitted(u64),
    /// A reload changed the zone's signing policy: the new one, and the
    /// parent's servers its `ksk-submission` asks.
    Policy(Box<(crate::config::Signing, Vec<crate::fetch::Source>)>),
}

impl SignWork {
    /// The command's name.
    pub(crate) fn command(&self) -> &'static str {
        match self {
            SignWork::Whole => "zone-sign",
            SignWork::Roll(_) => "zone-key-rollover",
            SignWork::Submitted(_) => "zone-ksk-submitted",
            SignWork::Policy(_) => "reload",
        }
    }
}

/// The settings a zone's writer takes from its configuration, which a
/// reload may change (`serial-policy`, `zonefile-sync`,
/// `dnssec-validation`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ZoneSettings {
    pub(crate) serial_policy: lode_zones::SerialPolicy,
    pub(crate) zonefile_sync: crate::config::ZonefileSync,
    pub(crate) validation: bool,
}

impl ZoneSettings {
    /// The settings `options` give.
    pub(crate) fn of(options: &crate::config::ZoneOptions) -> ZoneSettings {
        ZoneSettings {
            serial_policy: options.serial_policy.parse().unwrap_or_default(),
            zonefile_sync: options.zonefile_sync,
            validation: options.validation,
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
        }
    }
    /// Answers the work with a failure.
    fn fail(self, out: &mut [u8], why: &str) {
        match self {
            Work::Update(job) => {
                let n = reply(&job.msg, rcode::SERVFAIL, job.signed.as_ref(), out);
                job.reply.send(&out[..n]);
            }
            Work::File { done, .. } => {
                let _ = done.send(Err(why.to_string()));
            }
            Work::Flush { done } => {
                let _ = done.send(Err(why.to_string()));
            }
            Work::Sign { done, .. } => {
                let _ = done.send(Err(why.to_string()));
            }
            // The transfer falls back to what it can do without history.
            Work::History { .. } | Work::Settings(_) => {}
            Work::Incremental { done, .. } | Work::Replace { done, .. } => {
                let _ = done.send(Err(why.to_string()));
            }
        }
    }
}

/// A dynamic update admitted for a zone, waiting for its writer.
#[derive(Debug)]
pub(crate) struct Job {
    msg: Vec<u8>,
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
/// `flush.rs`).
pub(crate) fn flushed_path(dir: &Path, origin: &Name) -> PathBuf {
    journal_path(dir, origin).with_extension("flushed")
}
