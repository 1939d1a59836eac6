//! NOTIFY out (RFC 1996), the runtime: when a zone's published serial
//! changes, each of its `notify` remotes gets a NOTIFY (the new SOA in the
//! answer section, as Knot sends it; TSIG-signed when the remote has a key).
//! What is sent when, retried, given up or held back for a busy secondary
//! is decided by the machine [`lode_control::NotifyOut`] (see its notes);
//! this thread, one for all zones, feeds it the serials the publisher
//! announces and the answers its sockets read, and performs what it asks:
//! NOTIFYs built and signed, SOA questions, log lines and counters.
//!
//! ```text
//!  Publisher (a swap changed a watched zone's serial) ──▶ channel ──▶ notify thread
//!     published(zone, soa, targets) ─▶ NotifyOut ─▶ Notify / AskSoa / Report
//!     answers read from the sockets ─▶ notify_answered / soa_answered
//!     sleeps until poll_timeout (2 ms at most while answers are awaited)
//! ```

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use lode_control::notify_out::{must_notify_at_start, Action, NotifyOut, Report, Target};
use lode_tsig::{Key, Keys};
use lode_wire::Name;

use crate::config::{Config, ZoneOptions};
use crate::metrics::Events;
use crate::publish::{Changed, Publisher};
use crate::replication::secondary::timers::LineLog;

/// The file of the journal folder that keeps, per zone, the last serial
/// delivered to every NOTIFY target.
const DELIVERED: &str = "notified-serials";

/// How long the thread sleeps at most while answers are awaited (they are
/// read between waits).
const ANSWER_POLL: Duration = Duration::from_millis(2);

/// One zone's NOTIFY targets.
#[derive(Debug, Clone)]
struct Targets {
    /// Address, key, remote id, local address to send from (`via`).
    remotes: Vec<(SocketAddr, Option<Key>, String, Option<SocketAddr>)>,
    delay: Duration,
}

/// The NOTIFY targets of each zone, shared with the NOTIFY thread: zones
/// added later (a reload, a catalog member) join it.
#[derive(Debug, Clone)]
pub(crate) struct Notifies {
    targets: Arc<Mutex<HashMap<Name, Targets>>>,
    watched: crate::publish::Watched,
    /// The NOTIFY thread's channel (as the publisher's).
    tx: mpsc::Sender<Changed>,
    /// The serials delivered to every target, as the thread keeps them.
    delivered: Option<Arc<LineLog<u32>>>,
}

impl Notifies {
    /// The zones a delivered serial is kept for.
    pub(crate) fn delivered_zones(&self) -> Vec<Name> {
        self.delivered
            .as_ref()
            .map(|d| d.names())
            .unwrap_or_default()
    }

    /// Forgets the serial delivered for `zone` (`lode zone-purge`): true
    /// when one was kept.
    pub(crate) fn forget_delivered(&self, zone: &Name) -> bool {
        let Some(d) = &self.delivered else {
            return false;
        };
        let kept = d.value(zone).is_some();
        d.remove(zone);
        kept
    }

    /// NOTIFYs `zone`'s targets of `soa` now, as after a change
    /// (`lode zone-notify`, as `knotc zone-notify`): how many targets.
    pub(crate) fn notify_now(
        &self,
        zone: &Name,
        soa: lode_wire::Record,
    ) -> Result<usize, NotifyError> {
        let zone = zone.to_lowercase();
        let n = self
            .targets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&zone)
            .map_or(0, |t| t.remotes.len());
        if n == 0 {
            return Err(NotifyError::NoTargets(zone));
        }
        self.tx
            .send(Changed { zone, soa })
            .map_err(|_| NotifyError::Stopped)?;
        Ok(n)
    }

    /// True when `zone` (lower case) has NOTIFY targets.
    fn has_targets(&self, zone: &Name) -> bool {
        self.targets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(zone)
    }

    /// Sets (or, with no remotes, removes) the NOTIFY targets of `zone`.
    pub(crate) fn set(&self, zone: &Name, options: &ZoneOptions, keys: &Keys) {
        let zone = zone.to_lowercase();
        let mut names = self
            .watched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut targets = self
            .targets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        names.remove(&zone);
        targets.remove(&zone);
        if let Some(t) = targets_of(options, keys) {
            names.insert(zone.clone());
            targets.insert(zone, t);
        }
    }
}

/// Why `lode zone-notify` sent nothing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NotifyError {
    /// The zone has no `notify` remotes.
    #[error("zone {0} has no notify targets (notify = [...])")]
    NoTargets(Name),
    /// The NOTIFY thread is gone.
    #[error("the NOTIFY thread stopped")]
    Stopped,
}

/// A zone's targets from its options (None: it notifies nobody).
fn targets_of(options: &ZoneOptions, keys: &Keys) -> Option<Targets> {
    if options.notify.is_empty() {
        return None;
    }
    let mut remotes = Vec::new();
    for r in &options.notify {
        let key = r.key.as_ref().and_then(|k| keys.find(k.as_ref()).cloned());
        for a in &r.addresses {
            remotes.push((*a, key.clone(), r.id.clone(), r.via_for(*a)));
        }
    }
    Some(Targets {
        remotes,
        delay: options.notify_delay,
    })
}

/// Starts the NOTIFY thread with the configured zones' targets; the
/// publisher tells it of every serial change of a zone that has targets.
/// What is sent is counted into the server's `events`.
pub(crate) fn start(
    config: &Config,
    keys: &Keys,
    publisher: &Publisher,
    events: Arc<Events>,
) -> Option<Notifies> {
    let (tx, rx) = mpsc::channel();
    let delivered = config.journal_dir.as_ref().map(|dir| {
        Arc::new(LineLog::open_file(
            dir.join(DELIVERED),
            "serials delivered to NOTIFY targets not saved; after a restart their zones are notified again",
        ))
    });
    let notifies = Notifies {
        targets: Arc::default(),
        watched: Arc::default(),
        tx: tx.clone(),
        delivered: delivered.clone(),
    };
    for spec in &config.zones {
        notifies.set(&spec.name, &config.zone_options(&spec.name), keys);
    }
    let targets = notifies.targets.clone();
    let kept = delivered.clone();
    let spawned = std::thread::Builder::new()
        .name("lode-notify".into())
        .spawn(move || Notifier::new(targets, kept, events).run(rx));
    if let Err(e) = spawned {
        tracing::error!("cannot start the NOTIFY thread ({e}): secondaries are not notified");
        return None;
    }
    publisher.watch(notifies.watched.clone(), tx.clone());
    // A zone whose serial was not delivered to every target before the
    // last stop (NOTIFYs in flight at a crash, a target that never
    // answered) is notified now, as Knot does with its last notified
    // serial; one whose targets all had it is not.
    let mut again = 0usize;
    for spec in &config.zones {
        let zone = spec.name.to_lowercase();
        let Some(served) = publisher.get(&zone) else {
            continue;
        };
        if served.is_expired() || !notifies.has_targets(&zone) {
            continue;
        }
        let kept = delivered.as_ref().and_then(|d| d.value(&zone));
        if must_notify_at_start(served.serial(), kept) {
            again += 1;
            let _ = tx.send(Changed {
                zone,
                soa: served.soa_record(),
            });
        }
    }
    if again > 0 {
        tracing::info!(
            "NOTIFY at start: {again} zones whose serial their targets were not all told of"
        );
    }
    Some(notifies)
}

/// The NOTIFY thread: the machine and what performing its actions needs.
struct Notifier {
    core: NotifyOut,
    targets: Arc<Mutex<HashMap<Name, Targets>>>,
    /// The key and remote id of each target, as configured when a serial
    /// was last published to it.
    meta: HashMap<Target, (Option<Key>, String)>,
    /// Sockets by local address: the unspecified ones of each family,
    /// and one per `via` address used.
    sockets: HashMap<SocketAddr, UdpSocket>,
    /// The `via` of each target that has one.
    vias: HashMap<SocketAddr, SocketAddr>,
    /// Where the serials delivered to every target are kept (no journal
    /// folder: nowhere, and every zone is notified at each start).
    delivered: Option<Arc<LineLog<u32>>>,
    /// The server's counters (NOTIFY out).
    events: Arc<Events>,
}

impl Notifier {
    fn new(
        targets: Arc<Mutex<HashMap<Name, Targets>>>,
        delivered: Option<Arc<LineLog<u32>>>,
        events: Arc<Events>,
    ) -> Notifier {
        let mut sockets = HashMap::new();
        for any in [any_v4(), any_v6()] {
            if let Ok(s) = bind(any) {
                sockets.insert(any, s);
            }
        }
        Notifier {
            core: NotifyOut::new(rand_id()),
            targets,
            meta: HashMap::new(),
            sockets,
            vias: HashMap::new(),
            delivered,
            events,
        }
    }

    fn run(mut self, rx: mpsc::Receiver<Changed>) {
        let mut buf = vec![0u8; 4096];
        loop {
            let Ok(event) = crate::clock::recv_within(&rx, self.next_wake(Instant::now())) else {
                return;
            };
            let mut next = event;
            while let Some(e) = next {
                self.changed(e, Instant::now());
                next = rx.try_recv().ok();
            }
            self.read_answers(&mut buf);
            self.core.handle_timeout(Instant::now());
            self.perform(&mut buf);
        }
    }

    /// How long to sleep: until the machine's next timeout, at most
    /// [`ANSWER_POLL`] while answers are awaited; None when nothing is
    /// going on.
    fn next_wake(&self, now: Instant) -> Option<Duration> {
        let mut wait = self
            .core
            .poll_timeout()
            .map(|t| t.saturating_duration_since(now));
        if self.core.awaiting_answers() {
            wait = Some(wait.map_or(ANSWER_POLL, |w| w.min(ANSWER_POLL)));
        }
        wait
    }

    /// Hands a zone's new serial to the machine with its targets now.
    fn changed(&mut self, e: Changed, now: Instant) {
        let targets = self
            .targets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(t) = targets.get(&e.zone).cloned() else {
            return;
        };
        drop(targets);
        let mut addrs = Vec::with_capacity(t.remotes.len());
        for (addr, key, remote, via) in &t.remotes {
            match via {
                Some(v) => self.vias.insert(*addr, *v),
                None => self.vias.remove(addr),
            };
            self.meta
                .insert((e.zone.clone(), *addr), (key.clone(), remote.clone()));
            addrs.push(*addr);
        }
        self.core.published(&e.zone, &e.soa, &addrs, t.delay, now);
    }

    /// Performs what the machine asks for.
    fn perform(&mut self, buf: &mut [u8]) {
        while let Some(action) = self.core.poll_action() {
            match action {
                Action::Notify { zone, to, id, soa } => {
                    let n = lode_xfr::notify(buf, id, zone.as_ref(), Some(&soa), None);
                    let key = self.meta.get(&(zone.clone(), to)).and_then(|m| m.0.clone());
                    let n = match &key {
                        Some(key) => {
                            match lode_tsig::sign_request(buf, n, key, crate::clock::unix_now()) {
                                Ok(a) => a.len,
                                Err(e) => {
                                    tracing::error!(
                                        "zone {zone}: NOTIFY to {to} not signed ({e:?})"
                                    );
                                    self.core.abandon(&(zone, to));
                                    continue;
                                }
                            }
                        }
                        None => n,
                    };
                    let sent = self.socket(to).map(|s| s.send_to(&buf[..n], to).is_ok());
                    if sent != Some(true) {
                        tracing::debug!("zone {zone}: NOTIFY to {to} could not be sent");
                    }
                }
                Action::AskSoa { zone, to, id } => {
                    let n = lode_xfr::soa_query(buf, id, zone.as_ref(), None);
                    if let Some(s) = self.socket(to) {
                        let _ = s.send_to(&buf[..n], to);
                    }
                }
                Action::Report(r) => self.report(r),
            }
        }
    }

    /// The remote id a target was configured with, for the log.
    fn remote(&self, target: &Target) -> &str {
        self.meta.get(target).map_or("", |m| m.1.as_str())
    }

    /// Logs and counts what the machine reports.
    fn report(&self, r: Report) {
        let events = &self.events;
        match r {
            Report::Answered {
                target,
                serial,
                took,
            } => {
                events.notify_sent.bump();
                tracing::debug!(
                    "zone {}: NOTIFY of serial {serial} to {} ({}) answered in {:.1} ms",
                    target.0,
                    target.1,
                    self.remote(&target),
                    took.as_secs_f64() * 1000.0
                );
            }
            Report::Refused {
                target,
                serial,
                rcode,
            } => {
                events.notify_failed.bump();
                tracing::warn!(
                    "zone {}: NOTIFY of serial {serial} to {} ({}): answered {}",
                    target.0,
                    target.1,
                    self.remote(&target),
                    lode_wire::rcode::name(rcode)
                );
            }
            Report::GaveUp { target, serial } => {
                events.notify_failed.bump();
                tracing::warn!(
                    "zone {}: NOTIFY of serial {serial} to {} ({}): no answer after {} tries, given up",
                    target.0,
                    target.1,
                    self.remote(&target),
                    lode_control::notify_out::TRIES
                );
            }
            Report::ToldAgain {
                target,
                serial,
                after,
            } => tracing::debug!(
                "zone {}: {} ({}) acknowledged serial {serial} and has not taken it after {:.1} ms: told again",
                target.0,
                target.1,
                self.remote(&target),
                after.as_secs_f64() * 1000.0
            ),
            Report::Delivered { zone, serial } => {
                tracing::debug!("zone {zone}: serial {serial} delivered to every NOTIFY target");
                if let Some(d) = &self.delivered {
                    d.set(&zone, serial);
                }
            }
            Report::Held {
                target,
                serial,
                until,
            } => {
                events.notify_held.bump();
                tracing::debug!(
                    "zone {}: NOTIFY of serial {serial} to {} ({}) held until it serves serial {until}",
                    target.0,
                    target.1,
                    self.remote(&target)
                );
            }
            Report::CaughtUp {
                target,
                served,
                told,
                took,
            } => tracing::debug!(
                "zone {}: {} serves serial {served} ({:.1} ms after its NOTIFY of {told} was answered)",
                target.0,
                target.1,
                took.as_secs_f64() * 1000.0
            ),
            Report::NotSeenServing {
                target,
                serial,
                after,
            } => tracing::debug!(
                "zone {}: {} not seen serving serial {serial} after {:.1} s: notified anyway",
                target.0,
                target.1,
                after.as_secs_f64()
            ),
        }
    }

    /// The socket to send to `addr` from: its target's `via` (bound the
    /// first time), else the unspecified address of its family.
    fn socket(&mut self, addr: SocketAddr) -> Option<&UdpSocket> {
        let local = match self.vias.get(&addr) {
            Some(v) => *v,
            None if addr.is_ipv4() => any_v4(),
            None => any_v6(),
        };
        match self.sockets.entry(local) {
            std::collections::hash_map::Entry::Occupied(o) => Some(o.into_mut()),
            std::collections::hash_map::Entry::Vacant(v) => match bind(local) {
                Ok(s) => Some(v.insert(s)),
                Err(e) => {
                    tracing::warn!("NOTIFY to {addr}: cannot send from {local} (via): {e}");
                    None
                }
            },
        }
    }

    fn read_answers(&mut self, buf: &mut [u8]) {
        let locals: Vec<SocketAddr> = self.sockets.keys().copied().collect();
        for local in locals {
            while let Some(Ok((n, from))) = self.sockets.get(&local).map(|s| s.recv_from(buf)) {
                self.answered(&buf[..n], from, Instant::now());
            }
        }
    }

    /// An answer read: to a NOTIFY, or to an SOA question.
    fn answered(&mut self, msg: &[u8], from: SocketAddr, now: Instant) {
        if msg.len() < 12 || msg[2] & 0x80 == 0 {
            return;
        }
        let id = u16::from_be_bytes([msg[0], msg[1]]);
        let from = match from {
            SocketAddr::V6(v6) => v6
                .ip()
                .to_ipv4_mapped()
                .map_or(from, |ip| SocketAddr::new(ip.into(), v6.port())),
            v4 => v4,
        };
        if (msg[2] >> 3) & 0xF == lode_wire::opcode::QUERY {
            // The question names the zone; its checks are made against it.
            let mut qname = lode_wire::NameBuf::new();
            if msg[4..6] != [0, 1] || qname.read_compressed(msg, 12).is_err() {
                return;
            }
            let zone = qname.as_ref().to_name().to_lowercase();
            let served = crate::fetch::served_serial(msg, id, &zone);
            self.core.soa_answered(&zone, from, id, served, now);
            return;
        }
        self.core
            .notify_answered(from, id, u16::from(msg[3] & 0x0F), now);
    }
}

/// A non-blocking UDP socket bound to `local`.
fn bind(local: SocketAddr) -> std::io::Result<UdpSocket> {
    let s = UdpSocket::bind(local)?;
    s.set_nonblocking(true)?;
    Ok(s)
}

fn any_v4() -> SocketAddr {
    SocketAddr::from(([0, 0, 0, 0], 0))
}

fn any_v6() -> SocketAddr {
    SocketAddr::from(([0u16; 8], 0))
}

/// A message ID start that differs between runs.
fn rand_id() -> u16 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    (t ^ std::process::id()) as u16
}
