//! Admission of UPDATEs on the transports' threads: parse, zone, TSIG, ACL,
//! then a deferred reply and a place in the zone writer's queue.

use std::collections::HashMap;
use std::sync::{mpsc, Arc};

use lode_tsig::{Key, Keys};
use lode_wire::{rcode, Name};
use lode_zonedb::{Zone, ZoneSet};
use lode_zones::update::{self as ddns, UpdateError};

use crate::access::{self, Access};
use crate::acl::{self, Action};
use crate::config::{Config, ZoneOptions};
use crate::loading::flush::{Flushed, Written};
use crate::lograte::LogLimit;

use super::pool::{WriterPool, WriterQueue};
use super::{reply, Job, Work};
use crate::clock::unix_now;

/// What the transports need to admit updates: keys, each zone's ACL, the
/// writers' queues. Built at start.
#[derive(Debug)]
pub(crate) struct Updates {
    /// The TSIG keys; replaced whole by a reload.
    pub(super) keys: arc_swap::ArcSwap<Keys>,
    /// Outgoing transfers running, and their limit.
    pub(super) transfers: Arc<super::TransferSlots>,
    /// Each zone's door; replaced whole when a reload adds zones (read
    /// without a lock by the transports).
    pub(super) zones: arc_swap::ArcSwap<HashMap<Name, ZoneDoor>>,
    /// The zone files the writers wrote (the reloader skips them).
    pub(crate) written: Arc<Written>,
    /// What the writers count together (open journals, zone-file writes).
    pub(super) shared: Arc<super::writer::Shared>,
    /// The secondary zones' refresh scheduler, once started.
    secondaries: std::sync::OnceLock<Arc<dyn Replicas>>,
    /// The threads that run every zone's writer.
    pub(super) pool: super::pool::WriterPool,
    /// The zones frozen by `zone-freeze`.
    pub(crate) frozen: super::frozen::Frozen,
    /// The commit log every zone's journal shares (`lode_journal::wal`):
    /// set once at start, after the last run's is read back.
    commit_log: std::sync::OnceLock<CommitLogState>,
}

/// What admission asks of the secondary zones' scheduler (which lives in
/// `crate::replication::secondary`, above this module, and registers itself at start).
pub(crate) trait Replicas: Send + Sync + std::fmt::Debug {
    /// A NOTIFY for one of its zones admitted (and answered), or handed to
    /// the engine; a refusal logged within `refusals`.
    fn admit_notify(
        &self,
        msg: &[u8],
        keys: &Keys,
        out: &mut [u8],
        peer: access::Peer<'_>,
        refusals: &LogLimit,
    ) -> Admission;
    /// Where updates to the secondary zone `zone` are forwarded.
    fn primary_of(&self, zone: &Name) -> Option<crate::fetch::Source>;
}

/// How the commit log started (see [`Updates::start_commit_log`]).
#[derive(Debug)]
enum CommitLogState {
    Running(Arc<lode_journal::wal::CommitLog>),
    /// Could not be started: journal appends are synced one by one.
    Off,
    /// The last run's could not be read back: no writer starts.
    Unreadable,
}

/// One zone's way in: its ACL and its writer's queue.
#[derive(Debug, Clone)]
pub(super) struct ZoneDoor {
    pub(super) acl: Arc<[acl::Rule]>,
    /// Its ACL allows updates.
    takes_updates: bool,
    /// A secondary zone: its contents come from its primaries.
    secondary: bool,
    pub(super) writer: Option<WriterQueue>,
}

/// A `[[key]]` of the configuration that cannot be used: its id and why.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TsigKeyError {
    /// An algorithm TSIG does not know.
    #[error("key {id}: {source}")]
    Algorithm {
        id: String,
        source: lode_tsig::UnknownAlgorithm,
    },
    /// A secret that is not one, or a key defined twice.
    #[error("key {id}: {source}")]
    Key {
        id: String,
        source: lode_tsig::KeyError,
    },
}

/// Why the updates' admission could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpdatesError {
    /// The writer pool's threads.
    #[error("cannot start the writer threads: {0}")]
    Threads(#[source] std::io::Error),
    /// A TSIG key.
    #[error(transparent)]
    Key(#[from] TsigKeyError),
}

/// The TSIG keys a configuration defines.
pub(crate) fn keys_of(config: &Config) -> Result<Keys, TsigKeyError> {
    let mut keys = Keys::new();
    for k in &config.keys {
        let id = || k.id.to_string();
        let alg = k
            .algorithm
            .parse()
            .map_err(|source| TsigKeyError::Algorithm { id: id(), source })?;
        let bad = |source| TsigKeyError::Key { id: id(), source };
        let key = Key::from_text(&k.id, alg, &k.secret).map_err(bad)?;
        keys.insert(key).map_err(bad)?;
    }
    Ok(keys)
}

/// A zone's door as its configuration makes it (no writer yet).
fn door_of(config: &Config, zone: &Name) -> ZoneDoor {
    let options = config.zone_options(zone);
    let (acl, masters) = (options.acl.clone(), &options.masters);
    let takes_updates = acl.iter().any(|r| r.actions.contains(&Action::Update));
    ZoneDoor {
        acl,
        takes_updates,
        secondary: !masters.is_empty(),
        writer: None,
    }
}

/// Why `lode zone-flush` wrote nothing for a zone.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub(crate) enum FlushError {
    /// No such zone is configured.
    NoZone,
    /// The zone does not take updates: its zone file is its source.
    Static,
    /// A secondary: its contents come from its primaries, it has no zone file.
    Secondary,
    /// The zone takes updates but has no writer (its journal failed at start).
    NoWriter,
    /// The writer could not write the file (its error, shared by the
    /// requests one write answered).
    Failed(Arc<super::WriterError>),
}

impl std::fmt::Display for FlushError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlushError::NoZone => f.write_str("no such zone"),
            FlushError::Static => f.write_str(
                "the zone does not take updates: its zone file is already its source, nothing to write",
            ),
            FlushError::Secondary => f.write_str(
                "a secondary has no zone file to write: its contents come from its primaries \
                 and are kept in journal-dir",
            ),
            FlushError::NoWriter => f.write_str(
                "the zone takes updates but has no writer (its journal failed at start, see the log)",
            ),
            FlushError::Failed(e) => write!(f, "zone file not written: {e}"),
        }
    }
}

/// What the transport does with an UPDATE.
#[derive(Debug)]
pub(crate) enum Admission {
    /// Send this many bytes of `out` now (0: send nothing).
    Answer(usize),
    /// Not a zone of ours (or not readable as an UPDATE): the engine answers
    /// it as it answers any other request.
    Engine,
    /// Queued; the reply follows from the zone's writer.
    Queued,
}

impl Updates {
    /// Keys and ACLs from the configuration; the writer pool started, no
    /// writers on it yet. The server's `events` are counted into, and
    /// refused requests logged within its `refusals` limit.
    pub(crate) fn new(
        config: &Config,
        events: Arc<crate::metrics::Events>,
        refusals: Arc<LogLimit>,
    ) -> Result<Updates, UpdatesError> {
        let threads = config.background_workers.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        let pool = WriterPool::start(threads).map_err(UpdatesError::Threads)?;
        let keys = keys_of(config)?;
        let zones = config
            .zones
            .iter()
            .map(|spec| (spec.name.to_lowercase(), door_of(config, &spec.name)))
            .collect();
        Ok(Updates {
            secondaries: std::sync::OnceLock::new(),
            keys: arc_swap::ArcSwap::from_pointee(keys),
            transfers: Arc::new(super::TransferSlots::new(config.transfers_out)),
            zones: arc_swap::ArcSwap::from_pointee(zones),
            written: Arc::default(),
            shared: Arc::new(super::writer::Shared::new(events, refusals)),
            pool,
            frozen: super::frozen::Frozen::default(),
            commit_log: std::sync::OnceLock::new(),
        })
    }

    /// The server's event counters.
    pub(crate) fn events(&self) -> &Arc<crate::metrics::Events> {
        &self.shared.events
    }

    /// The signing progress of the zones signed here.
    pub(crate) fn signings(&self) -> &super::signing::Signings {
        &self.shared.signings
    }

    /// The fdatasyncs of the server's commit log so far (0 without one).
    pub(crate) fn commit_log_syncs(&self) -> u64 {
        self.commit_log().map_or(0, |log| log.syncs())
    }

    /// How [`access::check`] logs a refusal of `what`: within the
    /// server's limit.
    pub(super) fn logged<'a>(&'a self, what: &'a dyn std::fmt::Display) -> access::Logged<'a> {
        access::Logged {
            what,
            limit: &self.shared.refusals,
        }
    }

    /// The commit log the writers share, if it was started.
    pub(super) fn commit_log(&self) -> Option<Arc<lode_journal::wal::CommitLog>> {
        match self.commit_log.get() {
            Some(CommitLogState::Running(log)) => Some(log.clone()),
            _ => None,
        }
    }

    /// Reads back what the last run's commit log holds into the zones'
    /// journals in `dir` and starts this run's (once; later calls say how
    /// that went). False when it could not be read back: the journals may
    /// miss acknowledged changes, so no writer is to start.
    pub(super) fn start_commit_log(&self, dir: &std::path::Path) -> bool {
        let state = self.commit_log.get_or_init(|| {
            let recovered = match lode_journal::wal::recover(dir) {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(
                        "journal-dir {}: the commit log cannot be read back ({e}); no zone takes changes (restart once it is readable)",
                        dir.display()
                    );
                    return CommitLogState::Unreadable;
                }
            };
            if recovered.applied > 0 || recovered.torn_bytes > 0 {
                tracing::info!(
                    "journal-dir {}: commit log read back: {} records written back into their journals, {} already there or superseded, {} bytes of a cut-off write ignored (never acknowledged)",
                    dir.display(),
                    recovered.applied,
                    recovered.skipped,
                    recovered.torn_bytes
                );
            }
            let busy = Box::new(self.pool.busy_probe());
            match lode_journal::wal::CommitLog::start(dir, recovered, Some(busy)) {
                Ok(log) => {
                    let log = Arc::new(log);
                    let nudged = Arc::downgrade(&log);
                    self.pool.on_idle(move || {
                        if let Some(l) = nudged.upgrade() {
                            l.nudge();
                        }
                    });
                    CommitLogState::Running(log)
                }
                Err(e) => {
                    tracing::warn!(
                        "journal-dir {}: cannot start the commit log ({e}); each zone's journal writes are synced on their own",
                        dir.display()
                    );
                    CommitLogState::Off
                }
            }
        });
        !matches!(state, CommitLogState::Unreadable)
    }

    /// Applies a reloaded configuration's ACLs: zones kept take their new
    /// ACL at once (and keep their writer); zones a reload added get a
    /// door (no writer: they are transferred out and answer, but take no
    /// updates until a restart). Zones made at run time keep theirs.
    pub(crate) fn refresh_doors(&self, config: &Config) {
        self.zones.rcu(|current| {
            let mut next = (**current).clone();
            for spec in &config.zones {
                let fresh = door_of(config, &spec.name);
                match next.get_mut(&spec.name.to_lowercase()) {
                    Some(door) => {
                        door.acl = fresh.acl;
                        door.takes_updates = fresh.takes_updates;
                        door.secondary = fresh.secondary;
                    }
                    None => {
                        next.insert(spec.name.to_lowercase(), fresh);
                    }
                }
            }
            next
        });
    }

    /// Replaces the TSIG keys (a reload): requests from now on are checked
    /// against these.
    pub(crate) fn set_keys(&self, keys: Keys) {
        self.keys.store(Arc::new(keys));
    }

    /// Gives zones made at run time (catalog members) their doors, all in
    /// one new map.
    pub(crate) fn insert_doors(&self, zones: &[(Name, ZoneOptions)]) {
        if zones.is_empty() {
            return;
        }
        self.zones.rcu(|current| {
            let mut next = (**current).clone();
            for (origin, options) in zones {
                next.insert(
                    origin.clone(),
                    ZoneDoor {
                        acl: options.acl.clone(),
                        takes_updates: options.allows(Action::Update),
                        secondary: !options.masters.is_empty(),
                        writer: None,
                    },
                );
            }
            next
        });
    }

    /// Takes zones' doors away (each writer ends with its last queue
    /// sender), all in one new map.
    pub(crate) fn remove_doors(&self, origins: &[Name]) {
        if origins.is_empty() {
            return;
        }
        self.zones.rcu(|current| {
            let mut next = (**current).clone();
            for origin in origins {
                next.remove(origin);
            }
            next
        });
    }

    /// Hands zones' doors their writers' queues (all in one new map).
    pub(super) fn set_writers(&self, writers: Vec<(Name, WriterQueue)>) {
        if writers.is_empty() {
            return;
        }
        self.zones.rcu(|current| {
            let mut next = (**current).clone();
            for (origin, q) in &writers {
                if let Some(d) = next.get_mut(origin) {
                    d.writer = Some(q.clone());
                }
            }
            next
        });
    }

    /// Each zone writer's queue.
    pub(crate) fn writers(&self) -> HashMap<Name, WriterQueue> {
        self.zones
            .load()
            .iter()
            .filter_map(|(n, d)| Some((n.clone(), d.writer.clone()?)))
            .collect()
    }

    /// One zone writer's queue.
    pub(crate) fn writer(&self, origin: &Name) -> Option<WriterQueue> {
        self.zones
            .load()
            .get(&origin.to_lowercase())
            .and_then(|d| d.writer.clone())
    }

    /// Stops the writer pool's threads (once the zones ready now have run).
    pub(crate) fn stop_writers(&self) {
        self.pool.stop();
    }

    /// Hands NOTIFY and forwarded updates to the secondaries' scheduler.
    pub(crate) fn set_secondaries(&self, s: Arc<dyn Replicas>) {
        let _ = self.secondaries.set(s);
    }

    /// Admits a NOTIFY for a secondary zone (anything else: the engine).
    pub(crate) fn admit_notify(
        &self,
        msg: &[u8],
        out: &mut [u8],
        client: &lode_io::Client<'_>,
    ) -> Admission {
        match self.secondaries.get() {
            Some(s) => s.admit_notify(
                msg,
                &self.keys.load(),
                out,
                access::Peer::of(client),
                &self.shared.refusals,
            ),
            None => Admission::Engine,
        }
    }

    /// The TSIG keys in force (a guard: no reference count taken on the
    /// query path, where signed queries read them).
    pub(crate) fn keys(&self) -> arc_swap::Guard<Arc<Keys>> {
        self.keys.load()
    }

    /// Writes a zone's file now, through its writer (after the updates
    /// queued before), and waits.
    pub(crate) fn flush(&self, origin: &Name) -> Result<Flushed, FlushError> {
        let doors = self.zones.load();
        let door = doors
            .get(&origin.to_lowercase())
            .ok_or(FlushError::NoZone)?;
        if door.secondary {
            return Err(FlushError::Secondary);
        }
        if !door.takes_updates {
            return Err(FlushError::Static);
        }
        let writer = door.writer.as_ref().ok_or(FlushError::NoWriter)?;
        let stopped = || FlushError::Failed(Arc::new(super::WriterError::Stopped));
        let (done, result) = mpsc::channel();
        writer.send(Work::Flush { done }).map_err(|_| stopped())?;
        result
            .recv()
            .map_err(|_| stopped())?
            .map_err(FlushError::Failed)
    }

    /// Signs a signed zone whole again now, starts a key rollover or
    /// confirms a KSK's DS (`what`), through its writer (after the updates
    /// queued before), and waits: what was done, or why not.
    pub(crate) fn sign(
        &self,
        origin: &Name,
        what: super::SignWork,
    ) -> Result<String, super::WriterError> {
        self.sign_work(origin, what)?
            .recv()
            .map_err(|_| super::WriterError::Stopped)?
    }

    /// Hands `what` to the zone's writer; its answer comes on the receiver
    /// returned (dropping it does not stop the work).
    pub(crate) fn sign_work(
        &self,
        origin: &Name,
        what: super::SignWork,
    ) -> Result<mpsc::Receiver<Result<String, super::WriterError>>, super::WriterError> {
        let (done, result) = mpsc::channel();
        self.to_writer(origin, Work::Sign { what, done })
            .map_err(|e| match e {
                super::WriterError::NoWriter => super::WriterError::NotSigned,
                e => e,
            })?;
        Ok(result)
    }

    /// Freezes or thaws the zones' writers (`zone-freeze`, `zone-thaw`)
    /// and waits until each has taken it, after the work queued before.
    /// Zones without a writer are passed over.
    pub(crate) fn freeze_writers(&self, origins: &[Name], frozen: bool) {
        let waits: Vec<mpsc::Receiver<()>> = origins
            .iter()
            .filter_map(|origin| {
                let (done, taken) = mpsc::channel();
                self.to_writer(origin, Work::Freeze { frozen, done })
                    .ok()
                    .map(|()| taken)
            })
            .collect();
        for w in waits {
            let _ = w.recv();
        }
    }

    /// Hands `work` to the zone's writer.
    pub(crate) fn to_writer(&self, origin: &Name, work: Work) -> Result<(), super::WriterError> {
        let doors = self.zones.load();
        let door = doors
            .get(&origin.to_lowercase())
            .ok_or(super::WriterError::NoSuchZone)?;
        let writer = door.writer.as_ref().ok_or(super::WriterError::NoWriter)?;
        writer.send(work).map_err(|_| super::WriterError::Stopped)
    }

    /// The zones configured at start, in canonical order, and whether each
    /// takes updates.
    pub(crate) fn zone_names(&self) -> Vec<(Name, bool)> {
        let mut v: Vec<(Name, bool)> = self
            .zones
            .load()
            .iter()
            .map(|(n, d)| (n.clone(), d.takes_updates))
            .collect();
        v.sort();
        v
    }

    /// Applies a zone file read again to a zone that takes updates, through
    /// its writer (journaled as the difference); waits for the outcome.
    pub(crate) fn submit_file(
        &self,
        origin: &Name,
        zone: Arc<Zone>,
        tag: Vec<u8>,
    ) -> Result<String, super::WriterError> {
        let writer = self
            .zones
            .load()
            .get(&origin.to_lowercase())
            .and_then(|d| d.writer.clone())
            .ok_or(super::WriterError::NoWriter)?;
        let (done, result) = mpsc::channel();
        writer
            .send(Work::File { zone, tag, done })
            .map_err(|_| super::WriterError::Stopped)?;
        result.recv().map_err(|_| super::WriterError::Stopped)?
    }

    /// True when the zone's updates have a writer (and a journal).
    pub(crate) fn has_writer(&self, origin: &Name) -> bool {
        self.zones
            .load()
            .get(&origin.to_lowercase())
            .is_some_and(|d| d.writer.is_some())
    }

    /// Whether `client` may query the catalog zone `origin` (Knot's rule:
    /// those its ACL lets transfer it, by address and, for a query signed
    /// with a key of ours, that key).
    pub(crate) fn may_read_catalog(
        &self,
        origin: &Name,
        msg: &[u8],
        client: &lode_io::Client<'_>,
    ) -> bool {
        let doors = self.zones.load();
        let Some(door) = doors.get(&origin.to_lowercase()) else {
            return true;
        };
        let keys = self.keys.load();
        let key = match lode_tsig::verify_request(msg, &keys, unix_now()) {
            lode_tsig::Verified::Signed(s) => Some(s.key.name().clone()),
            _ => None,
        };
        let peer = access::Peer::of(client);
        let who = crate::acl::Requester {
            ip: peer.addr.ip(),
            key: key.as_ref(),
            protocol: peer.protocol,
            pin: peer.pin,
        };
        crate::acl::allows(&door.acl, Action::Transfer, &who)
    }

    /// Admits an UPDATE (see the module note). `out` holds an immediate answer.
    pub(crate) fn admit(
        &self,
        msg: &[u8],
        zones: &ZoneSet,
        out: &mut [u8],
        client: &mut lode_io::Client<'_>,
        udp_size: u16,
    ) -> Admission {
        let req = match ddns::parse_update(msg) {
            Ok(r) => r,
            Err(UpdateError::Drop { .. }) => return Admission::Answer(0),
            Err(e) => {
                tracing::debug!("update from {}: {e}", client.addr());
                return Admission::Answer(ddns::write_error(msg, &e, udp_size, out).unwrap_or(0));
            }
        };
        // A zone we do not serve is the engine's to answer (NOTAUTH); an
        // EDNS version other than 0 was answered above (BADVERS), as Knot
        // answers it before anything else.
        let origin = req.zone.to_lowercase();
        let doors = self.zones.load();
        let now = unix_now();
        let (Some(door), Some(_)) = (doors.get(&origin), zones.get(origin.as_ref())) else {
            if zones.get(origin.as_ref()).is_none() && self.shared.refusals.allow(now) {
                tracing::info!(
                    "update for {} from {}: zone not served here, NOTAUTH",
                    req.zone,
                    client.addr()
                );
            }
            return Admission::Engine;
        };
        let peer = client.addr();
        let query_error = |code: u16, out: &mut [u8]| {
            let e = UpdateError::Query {
                rcode: code,
                reason: String::new(),
            };
            ddns::write_error(msg, &e, udp_size, out).unwrap_or(0)
        };
        // Zone class: CH is Knot's identity class (NOTIMP), others but IN
        // and ANY are REFUSED; unsigned, as Knot answers them.
        match req.zone_class {
            lode_wire::Class::IN | lode_wire::Class::ANY => {}
            lode_wire::Class::CH => return Admission::Answer(query_error(rcode::NOTIMP, out)),
            _ => return Admission::Answer(query_error(rcode::REFUSED, out)),
        }
        let what = format_args!("update for {}", req.zone);
        let keys = self.keys.load();
        let signed = match access::check(
            &keys,
            &door.acl,
            Action::Update,
            msg,
            access::Peer::of(client),
            now,
            self.logged(&what),
        ) {
            Access::Allowed(signed) => signed,
            Access::FormErr => {
                return Admission::Answer(ddns::write_response(msg, rcode::FORMERR, out));
            }
            Access::Refused(failure) => {
                let n = query_error(rcode::NOTAUTH, out);
                return Admission::Answer(access::finish_refusal(out, n, failure.as_ref(), now));
            }
        };
        if self.frozen.contains(&origin) {
            // As Knot: REFUSED, EDE 14 (Not Ready), signed as the request.
            let e = UpdateError::Query {
                rcode: rcode::REFUSED,
                reason: String::new(),
            };
            let n = ddns::write_error_ede(msg, &e, udp_size, 14, out).unwrap_or(0);
            if self.shared.refusals.allow(now) {
                tracing::info!(
                    "update for {} from {peer}: the zone is frozen (lode zone-thaw), REFUSED",
                    req.zone
                );
            }
            return Admission::Answer(match &signed {
                Some(s) => super::sign_reply(out, n, s),
                None => n,
            });
        }
        if door.secondary {
            // As Knot: an update the ACL allows is forwarded to the primary.
            let Some(src) = self.secondaries.get().and_then(|s| s.primary_of(&origin)) else {
                let n = query_error(rcode::NOTAUTH, out);
                return Admission::Answer(match &signed {
                    Some(s) => super::sign_reply(out, n, s),
                    None => n,
                });
            };
            let later = client.defer();
            let msg = msg.to_vec();
            let zone = req.zone.clone();
            let spawned = std::thread::Builder::new()
                .name("lode-forward".into())
                .spawn(move || super::forward::forward(msg, zone, peer, signed, src, later));
            if let Err(e) = spawned {
                tracing::error!("cannot start a thread to forward an update: {e}");
            }
            return Admission::Queued;
        }
        let Some(writer) = &door.writer else {
            tracing::warn!(
                "update for {} from {peer}: the zone has no journal, SERVFAIL",
                req.zone
            );
            return Admission::Answer(reply(msg, rcode::SERVFAIL, signed.as_ref(), out));
        };
        let zone = req.zone.clone();
        let job = Job {
            msg: msg.to_vec(),
            req,
            signed,
            peer,
            reply: client.defer(),
        };
        match writer.try_send(Work::Update(Box::new(job))) {
            Ok(()) => Admission::Queued,
            Err(mpsc::TrySendError::Full(work)) | Err(mpsc::TrySendError::Disconnected(work)) => {
                tracing::warn!("update for {zone} from {peer}: writer busy or stopped, SERVFAIL");
                work.fail(out, super::WriterError::Busy);
                Admission::Queued
            }
        }
    }
}
