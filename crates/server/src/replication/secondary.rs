//! Secondary zones (`master = [...]`): refresh on the SOA timers, at once
//! on an accepted NOTIFY; IXFR in with a fall back to AXFR; expiry; timers
//! that survive a restart. Transferred contents go through the zone's
//! writer like any change (IXFR: journaled changesets, so this server can
//! serve IXFR to its own secondaries; AXFR: a new base built here, in the
//! background, published in one swap). A transfer that fails in any way
//! leaves the served version as it was and is logged with the primary and
//! the reason.
//!
//! ```text
//!  NOTIFY in (transport thread) ─┐
//!  control: refresh/retransfer ──┼─▶ scheduler thread: per zone next refresh, expiry, running?
//!  timers ───────────────────────┘        │ due: one refresh thread per zone at a time
//!                                          ▼
//!   refresh: SOA query (UDP, TCP if truncated) to each primary address in turn
//!            newer serial ─▶ IXFR (AXFR with nothing served, or when IXFR fails)
//!            ─▶ writer: Work::Incremental / Work::Replace ─▶ journal, state, publish
//!   outcome ─▶ scheduler: next refresh (SOA refresh, or retry), expiry, timers (secondary-timers)
//! ```

mod scheduler;
pub(crate) mod timers;
use lode_control::refresh::{self, Start, Step};
use scheduler::Scheduler;
use timers::TimerLog;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex};

use arc_swap::ArcSwap;
use std::time::{Duration, Instant};

use lode_tsig::{Key, Keys};
use lode_wire::{rcode, Name, Record};
use lode_zonedb::StreamBuilder;
use lode_zones::update::{self as ddns};

use crate::access::{self, Access};
use crate::acl::{Action, Rule};
use crate::clock::unix_now;
use crate::config::{Config, TimerBounds};
use crate::fetch::{self, Source};
use crate::publish::{is_placeholder, Publisher};
use crate::update::{Admission, Work, WriterError};

/// Records of a whole transfer from which the heap is trimmed once it is
/// taken (see `transfer`).
const TRIM_AFTER_RECORDS: u64 = 100_000;

/// How long a SOA query waits for its answer.
const SOA_TIMEOUT: Duration = Duration::from_secs(3);
/// The most a transfer may take before it is abandoned.
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(3600);

/// Refresh, retry and expire of an SOA record, within `bounds`.
fn soa_timers(soa: &Record, bounds: &TimerBounds) -> (u32, u32, u32) {
    let r = &soa.rdata;
    if r.len() < 20 {
        return bounds.apply(0, 0, u32::MAX);
    }
    let f = &r[r.len() - 16..];
    let at = |i: usize| u32::from_be_bytes([f[i], f[i + 1], f[i + 2], f[i + 3]]);
    bounds.apply(at(0), at(4), at(8))
}

/// What a zone's transfer state is, for `lode zone-status`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Status {
    pub(crate) primaries: String,
    pub(crate) last_refresh: Option<u64>,
    pub(crate) next_refresh: Option<u64>,
    pub(crate) expires: Option<u64>,
    pub(crate) expired: bool,
    pub(crate) last_error: Option<String>,
    pub(crate) last_transfer: Option<String>,
}

/// Requests to the scheduler.
enum Event {
    /// A NOTIFY was accepted (with the serial it announced, if any).
    Notify { zone: Name, serial: Option<u32> },
    /// `lode zone-refresh` (AXFR when `axfr`: `lode zone-retransfer`).
    Refresh { zone: Name, axfr: bool },
    /// A refresh thread finished.
    Done { zone: Name, outcome: Outcome },
    /// A new secondary zone (a catalog member), as it starts.
    Add(Box<(ZoneState, Start)>),
    /// A zone no longer a secondary here.
    Remove(Name),
    /// A reload changed a zone's primaries (addresses, keys, TLS).
    Sources { zone: Name, sources: Arc<[Source]> },
    /// `zone-freeze` (true) or `zone-thaw`: refreshes by the timers and
    /// NOTIFY postponed or resumed.
    Freeze { zones: Vec<Name>, frozen: bool },
}

/// Why a refresh did not bring a secondary zone up to date.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum RefreshError {
    /// A refresh asked for a zone that is not a secondary here.
    #[error("{0} is not a secondary zone here")]
    NotSecondary(Name),
    /// A refresh asked of a server with no secondary zones.
    #[error("no secondary zones")]
    NoSecondaries,
    /// The zone has no primary to ask.
    #[error("no primary configured")]
    NoPrimary,
    /// The SOA query or the transfer failed (the primary's address and
    /// the cause).
    #[error(transparent)]
    Fetch(#[from] fetch::FetchError),
    /// A whole zone transferred in that does not make a zone.
    #[error(
        "{kind} from {peer}: the zone received does not build ({count} problems: {})",
        .first.join("; ")
    )]
    DoesNotBuild {
        /// "AXFR", or "IXFR" answered with the whole zone.
        kind: &'static str,
        peer: std::net::SocketAddr,
        /// How many problems.
        count: usize,
        /// The first few.
        first: Vec<String>,
    },
    /// The zone's writer did not take the transfer.
    #[error(transparent)]
    Writer(#[from] WriterError),
    /// The zone's writer refused what `peer` sent (a ZONEMD that does
    /// not verify, changes that do not apply).
    #[error("{kind} from {peer}: {source}")]
    Refused {
        /// "AXFR" or "IXFR".
        kind: &'static str,
        peer: std::net::SocketAddr,
        source: Box<WriterError>,
    },
    /// An answer without what it must hold (an IXFR without changes).
    #[error("{0}")]
    Incomplete(&'static str),
}

/// How a refresh ended.
#[derive(Debug)]
enum Outcome {
    /// The primary's SOA (serial now served, up to date or transferred).
    Current {
        soa: Record,
        transfer: Option<String>,
    },
    /// Every primary failed; the last reason.
    Failed(RefreshError),
}

/// The secondary zones of the server.
#[derive(Debug)]
pub(crate) struct Secondaries {
    tx: Mutex<mpsc::Sender<Event>>,
    /// Per zone: the ACL for NOTIFY (the zone's rules, then its primaries).
    notify_acl: ArcSwap<HashMap<Name, Arc<[Rule]>>>,
    status: Arc<Mutex<HashMap<Name, Status>>>,
    /// Per zone: its primaries' addresses and keys.
    primaries: ArcSwap<HashMap<Name, Arc<[Source]>>>,
    /// Where the zones' journals and states are.
    dir: PathBuf,
    /// Every secondary zone's timers.
    timers: Arc<TimerLog>,
}

impl Secondaries {
    /// Whether `zone` is a secondary here.
    pub(crate) fn has(&self, zone: &Name) -> bool {
        self.notify_acl.load().contains_key(zone)
    }

    /// Starts refreshing zones made at run time (catalog members), their
    /// ACLs and primaries put in place in one new map each.
    pub(crate) fn add_many(
        &self,
        zones: Vec<(Name, crate::config::ZoneOptions, crate::update::WriterQueue)>,
        keys: &Keys,
        publisher: &Publisher,
    ) {
        if zones.is_empty() {
            return;
        }
        let mut shared = Shared::new(keys);
        let prepared: Vec<(Name, Prepared)> = zones
            .into_iter()
            .map(|(origin, options, writer)| {
                let p = prepare(
                    &origin,
                    &options,
                    &mut shared,
                    writer,
                    &self.dir,
                    &self.timers,
                    publisher,
                );
                (origin, p)
            })
            .collect();
        self.notify_acl.rcu(|m| {
            let mut m = (**m).clone();
            for (origin, p) in &prepared {
                m.insert(origin.clone(), p.rules.clone());
            }
            m
        });
        self.primaries.rcu(|m| {
            let mut m = (**m).clone();
            for (origin, p) in &prepared {
                m.insert(origin.clone(), p.sources.clone());
            }
            m
        });
        for (origin, p) in prepared {
            self.status
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(origin, p.status);
            self.send(Event::Add(Box::new((p.state, p.start))));
        }
    }

    /// Applies a reload to the secondary zones already here: their NOTIFY
    /// ACLs and primaries (addresses, keys, TLS) as `options_of` gives them
    /// now, with `keys`; the next refresh asks the new primaries.
    pub(crate) fn reconfigure(
        &self,
        options_of: impl Fn(&Name) -> Option<crate::config::ZoneOptions>,
        keys: &Keys,
    ) {
        let zones: Vec<Name> = self.notify_acl.load().keys().cloned().collect();
        let mut shared = Shared::new(keys);
        let fresh: Vec<(Name, Sources, Rules)> = zones
            .into_iter()
            .filter_map(|z| {
                let options = options_of(&z)?;
                let (sources, rules) = shared.of(&options);
                Some((z, sources, rules))
            })
            .collect();
        if fresh.is_empty() {
            return;
        }
        self.notify_acl.rcu(|m| {
            let mut m = (**m).clone();
            for (origin, _, rules) in &fresh {
                m.insert(origin.clone(), rules.clone());
            }
            m
        });
        self.primaries.rcu(|m| {
            let mut m = (**m).clone();
            for (origin, sources, _) in &fresh {
                m.insert(origin.clone(), sources.clone());
            }
            m
        });
        for (zone, sources, _) in fresh {
            self.send(Event::Sources { zone, sources });
        }
    }

    /// Stops refreshing zones (members gone from their catalog), in one
    /// new map each.
    pub(crate) fn remove_many(&self, origins: &[Name]) {
        if origins.is_empty() {
            return;
        }
        self.notify_acl.rcu(|m| {
            let mut m = (**m).clone();
            for o in origins {
                m.remove(o);
            }
            m
        });
        self.primaries.rcu(|m| {
            let mut m = (**m).clone();
            for o in origins {
                m.remove(o);
            }
            m
        });
        for origin in origins {
            self.status
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(origin);
            self.send(Event::Remove(origin.clone()));
        }
    }

    /// The transfer state of each secondary zone.
    pub(crate) fn status(&self) -> HashMap<Name, Status> {
        self.status
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Asks for a refresh now (`axfr`: a whole new transfer).
    pub(crate) fn refresh(&self, zone: &Name, axfr: bool) -> Result<(), RefreshError> {
        let zone = zone.to_lowercase();
        if !self.has(&zone) {
            return Err(RefreshError::NotSecondary(zone));
        }
        self.send(Event::Refresh { zone, axfr });
        Ok(())
    }

    /// The zones timers are kept for (secondaries and zones that were).
    pub(crate) fn timer_zones(&self) -> Vec<Name> {
        self.timers.names()
    }

    /// Forgets `zone`'s kept timers (`lode zone-purge`): true when there
    /// were some.
    pub(crate) fn forget_timers(&self, zone: &Name) -> bool {
        let kept = self.timers.value(zone).is_some();
        self.timers.remove(zone);
        kept
    }

    /// Freezes or thaws the secondaries among `zones` (see
    /// `lode_control::refresh`).
    pub(crate) fn freeze(&self, zones: &[Name], frozen: bool) {
        let zones: Vec<Name> = zones.iter().filter(|z| self.has(z)).cloned().collect();
        if !zones.is_empty() {
            self.send(Event::Freeze { zones, frozen });
        }
    }

    fn send(&self, e: Event) {
        let tx = self
            .tx
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = tx.send(e);
    }
}

/// One secondary zone as the scheduler's runtime keeps it (its timers
/// are the refresh machine's).
struct ZoneState {
    origin: Name,
    sources: Arc<[Source]>,
    writer: crate::update::WriterQueue,
    /// Bounds on its SOA timers.
    bounds: TimerBounds,
}

/// A zone's primaries, as refreshes ask them (shared: cloned per refresh).
type Sources = Arc<[Source]>;
/// A zone's NOTIFY ACL.
type Rules = Arc<[Rule]>;

/// One secondary zone made ready for the scheduler.
struct Prepared {
    state: ZoneState,
    /// Its timers as the refresh machine starts with them.
    start: Start,
    rules: Arc<[Rule]>,
    sources: Arc<[Source]>,
    status: Status,
}

/// A secondary zone's primaries to ask (address, key, TLS) and its NOTIFY
/// ACL (its own rules, then its primaries).
fn sources_and_rules(options: &crate::config::ZoneOptions, keys: &Keys) -> (Sources, Rules) {
    let key_of = |k: &Option<Name>| -> Option<Arc<Key>> {
        k.as_ref()
            .and_then(|n| keys.find_shared(n.as_ref()).cloned())
    };
    let mut sources = Vec::new();
    let mut rules = options.acl.to_vec();
    for m in &options.masters {
        // A remote asked over TLS whose client cannot be made is not asked
        // at all (never in clear instead); the reason is logged.
        let tls = m.tls.as_ref().map(crate::tls::client);
        if matches!(tls, Some(None)) {
            continue;
        }
        for a in &m.addresses {
            sources.push(Source {
                addr: *a,
                key: key_of(&m.key),
                tls: tls.clone().flatten(),
                via: m.via_for(*a),
            });
        }
        // A zone's primaries may NOTIFY it (BIND's and NSD's default).
        rules.push(Rule {
            id: format!("master {}", m.id),
            addresses: m
                .addresses
                .iter()
                .filter_map(|a| a.ip().to_string().parse().ok())
                .collect(),
            keys: m.key.iter().cloned().collect(),
            actions: vec![Action::Notify],
            protocols: Vec::new(),
            cert_keys: Vec::new(),
            deny: false,
        });
    }
    (sources.into(), rules.into())
}

/// [`sources_and_rules`] made once for zones configured alike and shared:
/// a catalog's members from one template have the same primaries and ACL
/// (10^5 members held 10^5 copies of each, ~400 bytes a member).
struct Shared<'a> {
    keys: &'a Keys,
    last: Option<Made>,
}

/// What [`Shared`] made last, and from which options.
struct Made {
    masters: Vec<crate::config::Remote>,
    acl: Arc<[Rule]>,
    sources: Sources,
    rules: Rules,
}

impl<'a> Shared<'a> {
    fn new(keys: &'a Keys) -> Shared<'a> {
        Shared { keys, last: None }
    }

    fn of(&mut self, options: &crate::config::ZoneOptions) -> (Sources, Rules) {
        if let Some(m) = &self.last {
            if m.masters == options.masters && Arc::ptr_eq(&m.acl, &options.acl) {
                return (m.sources.clone(), m.rules.clone());
            }
        }
        let (sources, rules) = sources_and_rules(options, self.keys);
        self.last = Some(Made {
            masters: options.masters.clone(),
            acl: options.acl.clone(),
            sources: sources.clone(),
            rules: rules.clone(),
        });
        (sources, rules)
    }
}

/// Makes a secondary zone's scheduler state: its primaries' addresses and
/// keys, its NOTIFY ACL (its own rules, then its primaries), its timers as
/// saved (an expiry passed while down marks it expired now).
fn prepare(
    origin: &Name,
    options: &crate::config::ZoneOptions,
    shared: &mut Shared<'_>,
    writer: crate::update::WriterQueue,
    dir: &std::path::Path,
    timers: &TimerLog,
    publisher: &Publisher,
) -> Prepared {
    let now_unix = unix_now();
    let (sources, rules) = shared.of(options);
    let old = crate::update::journal_path(dir, origin).with_extension("timers");
    let saved = timers.get(origin, &old);
    let (saved_next, saved_expire, saved_last) = (saved.next, saved.expire, saved.last);
    let served = publisher.get(origin);
    let has_data = served.as_ref().is_some_and(|z| !is_placeholder(z));
    let mut next = Instant::now();
    // The timers are for the serial they name: a state that holds another
    // (written since without a sync and lost) is refreshed at once.
    let same_serial = match (saved.serial, &served) {
        (Some(s), Some(z)) => s == z.serial(),
        _ => true,
    };
    if has_data {
        if let Some(t) = saved_next.filter(|&t| t > now_unix && same_serial) {
            next += Duration::from_secs(t - now_unix);
        }
        set_expire_at(publisher, &writer, origin, saved_expire);
        if saved_expire.is_some_and(|e| e <= now_unix) {
            tracing::warn!(
                "zone {origin}: expired while the server was down; SERVFAIL until a primary answers"
            );
            set_expired(publisher, &writer, origin, true);
        }
    }
    let status = Status {
        primaries: sources
            .iter()
            .map(|s| s.addr.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        expires: saved_expire.filter(|_| has_data),
        // What the zone's timers say after a restart (zone-status shows them).
        next_refresh: saved_next.filter(|_| has_data).map(|t| t.max(now_unix)),
        last_refresh: saved_last.filter(|_| has_data),
        ..Status::default()
    };
    let now = Instant::now();
    let at = |unix: u64| {
        now.checked_sub(Duration::from_secs(now_unix.saturating_sub(unix)))
            .map_or(now, |t| {
                t + Duration::from_secs(unix.saturating_sub(now_unix))
            })
    };
    Prepared {
        state: ZoneState {
            origin: origin.clone(),
            sources: sources.clone(),
            writer,
            bounds: options.timers,
        },
        start: Start {
            primary: sources.first().map(|s| s.addr),
            next,
            expire: saved_expire.filter(|_| has_data).map(at),
            last: saved_last.filter(|_| has_data).map(at),
            axfr: !has_data,
            retry: Duration::from_secs(u64::from(options.timers.retry.0)),
        },
        rules,
        sources,
        status,
    }
}

impl crate::update::Replicas for Secondaries {
    /// Where updates to `zone` are forwarded: its first primary.
    fn primary_of(&self, zone: &Name) -> Option<Source> {
        self.primaries
            .load()
            .get(zone)
            .and_then(|p| p.first().cloned())
    }

    /// Admits a NOTIFY: for a secondary zone of ours, from an address and
    /// key its ACL (or its primaries) allow, answered NOERROR and signed as
    /// it was; the zone is then refreshed. Anything else goes to the engine.
    fn admit_notify(
        &self,
        msg: &[u8],
        keys: &Keys,
        out: &mut [u8],
        peer: access::Peer<'_>,
        refusals: &crate::lograte::LogLimit,
    ) -> Admission {
        let Ok(n) = lode_xfr::parse_notify(msg) else {
            return Admission::Engine;
        };
        let zone = n.zone.to_lowercase();
        let acls = self.notify_acl.load();
        let Some(rules) = acls.get(&zone) else {
            return Admission::Engine;
        };
        let now = unix_now();
        let what = format_args!("NOTIFY for {zone}");
        let log = access::Logged {
            what: &what,
            limit: refusals,
        };
        let signed = match access::check(keys, rules, Action::Notify, msg, peer, now, log) {
            Access::Allowed(s) => s,
            Access::FormErr => {
                return Admission::Answer(ddns::write_response(msg, rcode::FORMERR, out));
            }
            Access::Refused(failure) => {
                let len = ddns::write_response(msg, rcode::NOTAUTH, out);
                return Admission::Answer(access::finish_refusal(out, len, failure.as_ref(), now));
            }
        };
        tracing::info!(
            "zone {zone}: NOTIFY from {peer}{}",
            n.serial.map_or(String::new(), |s| format!(", serial {s}"))
        );
        self.send(Event::Notify {
            zone,
            serial: n.serial,
        });
        let mut len = ddns::write_response(msg, rcode::NOERROR, out);
        if len >= 4 {
            out[2] |= 0x04; // AA
        }
        if let Some((key, mac)) = &signed {
            len = lode_tsig::sign_response(out, len, key, mac.as_slice(), now, 0)
                .map_or(len, |a| a.len);
        }
        Admission::Answer(len)
    }
}

/// Starts the scheduler for the secondary zones (None without journal-dir);
/// zones can be added and removed later (catalog members). Transfers in
/// are counted into the server's `events`.
pub(crate) fn start(
    config: &Config,
    keys: &Keys,
    writers: &HashMap<Name, crate::update::WriterQueue>,
    publisher: &Arc<Publisher>,
    events: Arc<crate::metrics::Events>,
) -> Option<Secondaries> {
    let dir = config.journal_dir.as_ref()?;
    let timers = Arc::new(TimerLog::open(dir));
    let mut shared = Shared::new(keys);
    let mut zones: Vec<(ZoneState, Start)> = Vec::new();
    let mut notify_acl = HashMap::new();
    let mut status = HashMap::new();
    let mut primaries = HashMap::new();
    for spec in &config.zones {
        let options = config.zone_options(&spec.name);
        if options.masters.is_empty() {
            continue;
        }
        let origin = spec.name.to_lowercase();
        let Some(writer) = writers.get(&origin) else {
            tracing::error!("zone {origin}: no writer (journal failed at start): not refreshed");
            continue;
        };
        let p = prepare(
            &origin,
            &options,
            &mut shared,
            writer.clone(),
            dir,
            &timers,
            publisher,
        );
        status.insert(origin.clone(), p.status);
        notify_acl.insert(origin.clone(), p.rules);
        primaries.insert(origin.clone(), p.sources);
        zones.push((p.state, p.start));
    }
    let (tx, rx) = mpsc::channel();
    let status = Arc::new(Mutex::new(status));
    let mut scheduler = Scheduler::new(
        tx.clone(),
        publisher.clone(),
        status.clone(),
        timers.clone(),
        events,
    );
    for (state, start) in zones {
        scheduler.add(state, start);
    }
    if let Err(e) = std::thread::Builder::new()
        .name("lode-refresh".into())
        .spawn(move || scheduler.run(rx))
    {
        tracing::error!("cannot start the refresh thread ({e}): secondary zones are not refreshed");
        return None;
    }
    Some(Secondaries {
        tx: Mutex::new(tx),
        notify_acl: ArcSwap::from_pointee(notify_acl),
        status,
        primaries: ArcSwap::from_pointee(primaries),
        dir: dir.clone(),
        timers,
    })
}

/// Sets when the served version of `origin` expires (Unix seconds), for
/// the EDNS EXPIRE option of its answers: a mark its writer commits in
/// order with the zone's changes.
fn set_expire_at(
    publisher: &Publisher,
    writer: &crate::update::WriterQueue,
    origin: &Name,
    at: Option<u64>,
) {
    if publisher.get(origin).is_some_and(|z| z.expire_at() != at) {
        let _ = writer.send(crate::update::Work::Mark(crate::update::Mark::ExpiresAt(
            at,
        )));
    }
}

/// Marks the served version of `origin` expired (or not), as
/// [`set_expire_at`].
fn set_expired(
    publisher: &Publisher,
    writer: &crate::update::WriterQueue,
    origin: &Name,
    expired: bool,
) {
    if publisher
        .get(origin)
        .is_some_and(|z| z.is_expired() != expired)
    {
        let _ = writer.send(crate::update::Work::Mark(crate::update::Mark::Expired(
            expired,
        )));
    }
}

/// One refresh of one zone, on its own thread.
struct Refresh {
    origin: Name,
    sources: Arc<[Source]>,
    writer: crate::update::WriterQueue,
    publisher: Arc<Publisher>,
    axfr: bool,
    /// The server's counters (transfers in).
    events: Arc<crate::metrics::Events>,
}

impl Refresh {
    fn run(self) -> Outcome {
        let mut last = RefreshError::NoPrimary;
        for src in self.sources.iter() {
            match self.from(src) {
                Ok(o) => return o,
                Err(e) => {
                    tracing::warn!("zone {}: {e}", self.origin);
                    last = e;
                }
            }
        }
        self.events.transfers_in_failed.bump();
        Outcome::Failed(last)
    }

    /// Refreshes from one primary address.
    fn from(&self, src: &Source) -> Result<Outcome, RefreshError> {
        let origin = &self.origin;
        // A primary that refuses plain queries for the zone (Knot does for
        // the catalogs it generates) is asked by transfer directly: an IXFR
        // from our serial says "up to date" by itself.
        let soa = match fetch::query_soa(src, origin, SOA_TIMEOUT) {
            Ok(soa) => Some(soa),
            Err(e) if e.cause == fetch::Cause::Rcode(rcode::REFUSED) => {
                tracing::debug!("zone {origin}: {e}; asking by transfer");
                None
            }
            Err(e) => return Err(e.into()),
        };
        // Ours in the primary's numbering (a zone signed here numbers its
        // versions itself; not knowing the primary's, it transfers whole).
        let served = self
            .publisher
            .get(origin)
            .filter(|z| !is_placeholder(z))
            .and_then(|_| self.publisher.soa_for_primary(origin));
        let ours = served.as_ref().map(lode_zonedb::soa_serial);
        let theirs = soa.as_ref().map(lode_zonedb::soa_serial);
        let mut axfr = match refresh::first_step(self.axfr, ours, theirs) {
            Step::Transfer { axfr } => axfr,
            step => {
                let (theirs, ours) = (theirs.unwrap_or(0), ours.unwrap_or(0));
                if step == Step::PrimaryOlder {
                    tracing::warn!(
                        "zone {origin}: the primary {} serves serial {theirs}, older than ours ({ours}): its serial went backwards; ours is kept (RFC 1982: a secondary follows only a newer serial)",
                        src.addr
                    );
                } else {
                    tracing::debug!(
                        "zone {origin}: serial {theirs} at {} is the one served: up to date",
                        src.addr
                    );
                }
                // (Both serials known: the SOA was answered.)
                return Ok(Outcome::Current {
                    soa: soa.ok_or(RefreshError::Incomplete("no SOA"))?,
                    transfer: None,
                });
            }
        };
        loop {
            let current = if axfr { None } else { served.clone() };
            match self.transfer(src, current.as_ref()) {
                Ok(o) => return Ok(o),
                Err(e) => match refresh::after_failed_transfer(axfr) {
                    // An IXFR that cannot be applied here: a whole transfer.
                    Some(Step::Transfer { axfr: whole }) => {
                        tracing::warn!("zone {origin}: IXFR from {}: {e}; trying AXFR", src.addr);
                        axfr = whole;
                    }
                    _ => return Err(e),
                },
            }
        }
    }

    /// One transfer (IXFR from `current`, else AXFR) taken into the zone.
    fn transfer(&self, src: &Source, current: Option<&Record>) -> Result<Outcome, RefreshError> {
        let origin = &self.origin;
        let kind = if current.is_some() { "IXFR" } else { "AXFR" };
        let started = Instant::now();
        // A whole zone in canonical order (as Lode sends it) is encoded as it
        // comes, not held as records until the end (see StreamBuilder).
        let mut builder = Some(StreamBuilder::new(origin.clone()));
        let mut streamed = 0u64;
        let limits = fetch::Limits {
            total: TRANSFER_TIMEOUT,
            ..fetch::Limits::default()
        };
        let result = fetch::transfer(src, origin, current, &limits, &mut |r: Record| {
            streamed += 1;
            if let Some(b) = builder.as_mut() {
                b.add(r, 0);
            }
        })?;
        let submit = |work: Work, done: mpsc::Receiver<Result<u32, WriterError>>| {
            self.writer.send(work).map_err(|_| WriterError::Stopped)?;
            done.recv().map_err(|_| WriterError::Stopped)?
        };
        match result {
            lode_xfr::Transfer::UpToDate(soa) => Ok(Outcome::Current {
                soa,
                transfer: None,
            }),
            lode_xfr::Transfer::Incremental(changes) => {
                let n = changes.len();
                let records: usize = changes
                    .iter()
                    .map(|c| c.removed.len() + c.added.len())
                    .sum();
                let soa = changes.last().map(|c| c.soa_to.clone());
                let (done, rx) = mpsc::channel();
                let serial = submit(Work::Incremental { changes, done }, rx).map_err(|source| {
                    RefreshError::Refused {
                        kind: "IXFR",
                        peer: src.addr,
                        source: Box::new(source),
                    }
                })?;
                let what = format!(
                    "IXFR from {}: {n} changesets, {records} records, serial {serial}, {:.3} s",
                    src.addr,
                    started.elapsed().as_secs_f64()
                );
                self.events.transfers_in.bump();
                tracing::info!(
                    zone = %origin,
                    serial,
                    peer = %src.addr,
                    records,
                    changesets = n,
                    duration_ms = crate::clock::millis(started.elapsed()),
                    "zone {origin}: {what}"
                );
                let soa = soa.ok_or(RefreshError::Incomplete("an IXFR without changes"))?;
                Ok(Outcome::Current {
                    soa,
                    transfer: Some(what),
                })
            }
            lode_xfr::Transfer::Full { soa, records } => {
                let mut b = builder
                    .take()
                    .ok_or(RefreshError::Incomplete("no builder"))?;
                let total = streamed + records.len() as u64;
                for r in records {
                    b.add(r, 0);
                }
                let zone = match b.build() {
                    Ok((z, _warnings)) => z,
                    Err(problems) => {
                        return Err(RefreshError::DoesNotBuild {
                            kind,
                            peer: src.addr,
                            count: problems.len(),
                            first: problems.iter().take(3).map(|p| p.message.clone()).collect(),
                        });
                    }
                };
                let (done, rx) = mpsc::channel();
                let serial = submit(
                    Work::Replace {
                        zone: Arc::new(zone),
                        done,
                    },
                    rx,
                )
                .map_err(|source| RefreshError::Refused {
                    kind,
                    peer: src.addr,
                    source: Box::new(source),
                })?;
                // What a large transfer held while it was built (all of it
                // when it came out of canonical order: an NSEC3 chain sent
                // after the other names, as Lode and Knot send it) is freed
                // now; the allocator keeps it unless asked (a signed 500k-
                // delegation zone: 157 MB resident, 31 MB after this). Small
                // zones are not worth a walk of the heap each: 10^5 catalog
                // members would pay it 10^5 times at start.
                if total >= TRIM_AFTER_RECORDS {
                    lode_io::mem::trim_heap();
                }
                let took = started.elapsed().as_secs_f64();
                let what = format!(
                    "{kind} (whole zone) from {}: {total} records, serial {serial}, {took:.3} s ({:.0} records/s)",
                    src.addr,
                    total as f64 / took.max(1e-6)
                );
                self.events.transfers_in.bump();
                tracing::info!(
                    zone = %origin,
                    serial,
                    peer = %src.addr,
                    records = total,
                    duration_ms = crate::clock::millis(started.elapsed()),
                    "zone {origin}: {what}"
                );
                Ok(Outcome::Current {
                    soa,
                    transfer: Some(what),
                })
            }
        }
    }
}
