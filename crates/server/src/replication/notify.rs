//! NOTIFY out (RFC 1996): when a zone's published serial changes, each of
//! its `notify` remotes gets a NOTIFY (the new SOA in the answer section, as
//! Knot sends it; TSIG-signed when the remote has a key), retried until it
//! answers. One thread for all zones; a newer serial replaces a NOTIFY not
//! yet sent, is sent next when one awaits the answer to its first try, and
//! is sent at once when one was retried (the remote did not answer for a
//! second or more): each serial gets its own tries, and none is given up
//! with an older one.
//!
//! **Pacing.** A secondary that is told of a change transfers it and then
//! loads it; told of the next one before it serves the first, some fall
//! over (NSD 4.6 fails the reload whose transfer landed meanwhile and
//! starts again with a full AXFR: "soa serial N update failed, restarting
//! transfer"). So after a secondary acknowledged the NOTIFY of serial S,
//! newer serials wait until it serves S (or a serial of its own: neither
//! what it served when told nor one between that and S), and then as long
//! again as that took (it may still be busy loading: NSD's transfer daemon
//! hears of the reload some 20-30 ms after the new serial is served). Its
//! SOA is asked over UDP, 2 ms after the acknowledgement and then every
//! 4 ms (every 25 ms after the first 100 ms), until it does. An idle
//! secondary is told at once; a busy one about once per transfer it
//! completes. Bounds: 5 s without reaching S (its transfer failed: tell it
//! anyway), 1 s when its SOA cannot be asked (refused, not authoritative,
//! or no answer at all for 100 ms).
//!
//! ```text
//!  Publisher (a swap changed a watched zone's serial) ──▶ channel ──▶ notify thread
//!     pending per (zone, remote address): due time, tries, message id
//!     send when due (after notify-delay) and not held, with an SOA question (what it serves
//!     before); resend after 1, 2, 4, 8 s, give up after 5 tries; a newer serial
//!     restarts the tries (at once when the older one was retried);
//!     an answer with the message's id ends it (its RCODE logged when not NOERROR)
//!     NOERROR ──▶ catching up (zone, address): serial S, what it served before
//!         a newer serial is held while catching up; SOA asked at 2 ms, then every 4 (later 25) ms
//!         serves S, newer, or a serial of its own after T ──▶ settled at 2T: the held serial is sent
//! ```

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use lode_tsig::{Key, Keys};
use lode_wire::{Name, Record};

use crate::config::{Config, ZoneOptions};
use crate::publish::{Changed, Publisher};

/// Sends on the first try, then after 1, 2, 4 and 8 seconds.
const TRIES: u32 = 5;
const FIRST_RETRY: Duration = Duration::from_secs(1);
/// The first SOA question to a secondary catching up, after its
/// acknowledgement; then one every [`PROBE_GAP`] for [`CLOSE_WATCH`]
/// (how long it took is how long the next serial waits after: measured to
/// a few ms), then every [`LATE_PROBE_GAP`].
const FIRST_PROBE: Duration = Duration::from_millis(2);
const PROBE_GAP: Duration = Duration::from_millis(4);
const CLOSE_WATCH: Duration = Duration::from_millis(100);
const LATE_PROBE_GAP: Duration = Duration::from_millis(25);
/// How long a secondary may take to serve what it was told of before the
/// next change is sent to it anyway.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(5);
/// How long newer serials wait when the secondary's SOA cannot be asked
/// (Knot DNS 3.2 NOTIFYs about once a second while a zone changes).
const BLIND_HOLD: Duration = Duration::from_secs(1);
/// SOA questions sent at most per round; when more were due, the next
/// round waits [`ANSWER_POLL`] (≤ 32,000 questions a second).
const PROBES_PER_ROUND: usize = 64;
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

/// One NOTIFY on its way to one address.
#[derive(Debug)]
struct Pending {
    /// The SOA sent (or to send).
    soa: Record,
    /// A newer SOA that came while `soa` awaited its answer: sent next.
    newer: Option<Record>,
    key: Option<Key>,
    remote: String,
    id: u16,
    tries: u32,
    due: Instant,
    sent_at: Option<Instant>,
    /// The SOA question sent with it: what the secondary served before.
    before: Probe,
}

/// An SOA question to a secondary and what it answered.
#[derive(Debug, Clone, Copy, Default)]
struct Probe {
    /// The message ID of the question awaiting its answer.
    id: Option<u16>,
    /// The serial it answered.
    serial: Option<u32>,
}

/// A secondary that acknowledged the NOTIFY of `serial` and is expected to
/// transfer and serve it; newer serials wait (see the module's pacing).
#[derive(Debug)]
struct CatchingUp {
    serial: u32,
    /// What it served when it was told (a secondary that signs, or has a
    /// serial policy of its own, serves a serial other than the primary's).
    before: Probe,
    /// When it acknowledged.
    since: Instant,
    /// The question about its progress.
    now: Probe,
    next_probe: Instant,
    /// Its SOA cannot be asked (an unusable answer, or none to any
    /// question for [`CLOSE_WATCH`]): newer serials wait [`BLIND_HOLD`].
    blind: bool,
    /// It answered one of the questions.
    answered: bool,
    /// It serves what it was told of; newer serials wait until then (it
    /// may still be busy: NSD's transfer daemon learns of its reload
    /// ~20-30 ms after the new serial is served, and a transfer landing
    /// meanwhile fails the same way).
    settled: Option<Instant>,
}

impl CatchingUp {
    /// Whether serving `served` means it took what it was told of: that
    /// serial or a newer one, or one unrelated to ours (neither what it
    /// served before nor between that and ours: a serial of its own).
    fn reached(&self, served: u32) -> bool {
        use lode_wire::serial::serial_lt;
        if served == self.serial || serial_lt(self.serial, served) {
            return true;
        }
        self.before.serial.is_some_and(|b| {
            let on_the_way = serial_lt(b, served) && serial_lt(served, self.serial);
            b != served && !on_the_way
        })
    }

    /// Whether its SOA is still to be asked.
    fn asking(&self) -> bool {
        !self.blind && self.settled.is_none()
    }

    /// When newer serials are sent even if it has not caught up (or, once
    /// it has, when it has had as long again to settle).
    fn limit(&self) -> Instant {
        if let Some(t) = self.settled {
            return t;
        }
        self.since
            + if self.blind {
                BLIND_HOLD
            } else {
                CATCH_UP_LIMIT
            }
    }
}

/// The NOTIFY targets of each zone, shared with the NOTIFY thread: zones
/// added later (a reload, a catalog member) join it.
#[derive(Debug, Clone)]
pub(crate) struct Notifies {
    targets: Arc<Mutex<HashMap<Name, Targets>>>,
    watched: crate::publish::Watched,
}

impl Notifies {
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
pub(crate) fn start(config: &Config, keys: &Keys, publisher: &Publisher) -> Option<Notifies> {
    let notifies = Notifies {
        targets: Arc::default(),
        watched: Arc::default(),
    };
    for spec in &config.zones {
        notifies.set(&spec.name, &config.zone_options(&spec.name), keys);
    }
    let (tx, rx) = mpsc::channel();
    let targets = notifies.targets.clone();
    let spawned = std::thread::Builder::new()
        .name("lode-notify".into())
        .spawn(move || Notifier::new(targets).run(rx));
    if let Err(e) = spawned {
        tracing::error!("cannot start the NOTIFY thread ({e}): secondaries are not notified");
        return None;
    }
    publisher.watch(notifies.watched.clone(), tx);
    Some(notifies)
}

struct Notifier {
    targets: Arc<Mutex<HashMap<Name, Targets>>>,
    pending: HashMap<(Name, SocketAddr), Pending>,
    catching: HashMap<(Name, SocketAddr), CatchingUp>,
    /// Sockets by local address: the unspecified ones of each family,
    /// and one per `via` address used.
    sockets: HashMap<SocketAddr, UdpSocket>,
    /// The `via` of each target that has one.
    vias: HashMap<SocketAddr, SocketAddr>,
    /// No SOA questions before then (the last round was capped).
    next_round: Instant,
    next_id: u16,
}

impl Notifier {
    fn new(targets: Arc<Mutex<HashMap<Name, Targets>>>) -> Notifier {
        let mut sockets = HashMap::new();
        for any in [any_v4(), any_v6()] {
            if let Ok(s) = bind(any) {
                sockets.insert(any, s);
            }
        }
        Notifier {
            targets,
            pending: HashMap::new(),
            catching: HashMap::new(),
            sockets,
            vias: HashMap::new(),
            next_round: Instant::now(),
            next_id: rand_id(),
        }
    }

    fn run(mut self, rx: mpsc::Receiver<Changed>) {
        let mut buf = vec![0u8; 4096];
        loop {
            let event = match self.next_wake() {
                Some(w) => match rx.recv_timeout(w) {
                    Ok(e) => Some(e),
                    Err(mpsc::RecvTimeoutError::Timeout) => None,
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                },
                None => match rx.recv() {
                    Ok(e) => Some(e),
                    Err(_) => return,
                },
            };
            let mut next = event;
            while let Some(e) = next {
                self.changed(e);
                next = rx.try_recv().ok();
            }
            self.read_answers(&mut buf);
            self.release(Instant::now());
            self.send_due(&mut buf);
            self.probe_due(&mut buf);
        }
    }

    /// How long to sleep: until the next NOTIFY or SOA question is due or
    /// a hold ends, at most [`ANSWER_POLL`] while answers are awaited; None
    /// when nothing is going on.
    fn next_wake(&self) -> Option<Duration> {
        let now = Instant::now();
        let awaiting = self.pending.values().any(|p| p.sent_at.is_some())
            || self.catching.values().any(|c| c.now.id.is_some());
        let sends = self
            .pending
            .iter()
            .filter(|(k, _)| !self.catching.contains_key(*k))
            .map(|(_, p)| p.due);
        let holds = self.catching.values().map(|c| {
            if c.asking() {
                c.next_probe.max(self.next_round).min(c.limit())
            } else {
                c.limit()
            }
        });
        let next = sends.chain(holds).min();
        let mut wait = next.map(|d| d.saturating_duration_since(now));
        if awaiting {
            wait = Some(wait.map_or(ANSWER_POLL, |w| w.min(ANSWER_POLL)));
        }
        wait
    }

    /// Queues a NOTIFY of the new serial to each of the zone's targets.
    fn changed(&mut self, e: Changed) {
        let targets = self
            .targets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(t) = targets.get(&e.zone).cloned() else {
            return;
        };
        drop(targets);
        let now = Instant::now();
        let due = now + t.delay;
        for (addr, key, remote, via) in &t.remotes {
            match via {
                Some(v) => self.vias.insert(*addr, *v),
                None => self.vias.remove(addr),
            };
            let k = (e.zone.clone(), *addr);
            match self.pending.get_mut(&k) {
                // Not sent yet (waiting out notify-delay or held): it sends the newest.
                Some(p) if p.sent_at.is_none() => p.soa = e.soa.clone(),
                // Its first try awaits the answer: the newer serial goes
                // next, once this one is answered (the pacing) or retried.
                Some(p) if p.tries <= 1 => p.newer = Some(e.soa.clone()),
                // Retried already (no answer for a second or more, e.g. the
                // secondary was down): the newer serial replaces it, sent
                // now with tries of its own. Waiting out the backoff, or the
                // older serial's last tries, would leave a secondary that
                // came back stale until its SOA refresh.
                Some(p) => *p = Pending::new(e.soa.clone(), key, remote, due),
                None => {
                    self.pending
                        .insert(k.clone(), Pending::new(e.soa.clone(), key, remote, due));
                }
            }
            if let Some(c) = self.catching.get_mut(&k) {
                crate::metrics::EVENTS.notify_held.bump();
                tracing::debug!(
                    "zone {}: NOTIFY of serial {} to {} ({}) held until it serves serial {}",
                    k.0,
                    lode_zonedb::soa_serial(&e.soa),
                    k.1,
                    remote,
                    c.serial
                );
            }
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

    fn next_id(&mut self) -> u16 {
        self.next_id = self.next_id.wrapping_add(1);
        self.next_id
    }

    /// Asks `addr` for the SOA of `zone` (unsigned, over UDP); returns the
    /// message ID, or None when it could not be sent.
    fn ask_soa(&mut self, zone: &Name, addr: SocketAddr, buf: &mut [u8]) -> Option<u16> {
        let id = self.next_id();
        let n = lode_xfr::soa_query(buf, id, zone.as_ref(), None);
        let sent = self.socket(addr)?.send_to(&buf[..n], addr).is_ok();
        sent.then_some(id)
    }

    /// Ends the holds of secondaries past their limit (a held serial is
    /// then sent).
    fn release(&mut self, now: Instant) {
        let pending = &self.pending;
        self.catching.retain(|k, c| {
            if now < c.limit() {
                return true;
            }
            if c.asking() && pending.contains_key(k) {
                tracing::debug!(
                    "zone {}: {} not seen serving serial {} after {:.1} s: notified anyway",
                    k.0,
                    k.1,
                    c.serial,
                    c.since.elapsed().as_secs_f64()
                );
            }
            false
        });
    }

    fn send_due(&mut self, buf: &mut [u8]) {
        let now = Instant::now();
        let due: Vec<(Name, SocketAddr)> = self
            .pending
            .iter()
            .filter(|(k, p)| p.due <= now && !self.catching.contains_key(*k))
            .map(|(k, _)| k.clone())
            .collect();
        for k in due {
            let Some(p) = self.pending.get_mut(&k) else {
                continue;
            };
            if p.tries >= TRIES {
                crate::metrics::EVENTS.notify_failed.bump();
                tracing::warn!(
                    "zone {}: NOTIFY of serial {} to {} ({}): no answer after {TRIES} tries, given up",
                    k.0,
                    lode_zonedb::soa_serial(&p.soa),
                    k.1,
                    p.remote
                );
                // A newer serial is never given up with an older one.
                match p.newer.take() {
                    Some(newer) => *p = Pending::new(newer, &p.key, &p.remote, now),
                    None => {
                        self.pending.remove(&k);
                        continue;
                    }
                }
            }
            // A newer serial takes the older one's place with tries of its own.
            if let Some(newer) = p.newer.take() {
                *p = Pending::new(newer, &p.key, &p.remote, now);
            }
            let before = if p.tries == 0 {
                self.ask_soa(&k.0, k.1, buf)
            } else {
                None
            };
            let id = self.next_id();
            let Some(p) = self.pending.get_mut(&k) else {
                continue;
            };
            if before.is_some() {
                p.before = Probe {
                    id: before,
                    serial: None,
                };
            }
            let n = lode_xfr::notify(buf, id, k.0.as_ref(), Some(&p.soa), None);
            let n = match &p.key {
                Some(key) => {
                    let len = n;
                    match lode_tsig::sign_request(buf, len, key, crate::clock::unix_now()) {
                        Ok(a) => a.len,
                        Err(e) => {
                            tracing::error!("zone {}: NOTIFY to {} not signed ({e:?})", k.0, k.1);
                            self.pending.remove(&k);
                            continue;
                        }
                    }
                }
                None => n,
            };
            let sent = self.socket(k.1).map(|s| s.send_to(&buf[..n], k.1).is_ok());
            let Some(p) = self.pending.get_mut(&k) else {
                continue;
            };
            if sent != Some(true) {
                tracing::debug!("zone {}: NOTIFY to {} could not be sent", k.0, k.1);
            }
            p.id = id;
            p.tries += 1;
            p.sent_at = Some(now);
            p.due = now + FIRST_RETRY * (1 << (p.tries - 1));
        }
    }

    /// Asks the secondaries catching up whether they serve what they were
    /// told of yet (also when no newer serial waits: how long they took is
    /// how long the next one waits after they did).
    fn probe_due(&mut self, buf: &mut [u8]) {
        let now = Instant::now();
        if now < self.next_round {
            return;
        }
        let mut due: Vec<(Instant, (Name, SocketAddr))> = self
            .catching
            .iter()
            .filter(|(_, c)| c.asking() && c.next_probe <= now)
            .map(|(k, c)| (c.next_probe, k.clone()))
            .collect();
        // The longest waiting first, and a bounded number a round: a change
        // of 10^5 zones must not become millions of questions a second (the
        // pacing then slows down instead: later answers, longer settles).
        if due.len() > PROBES_PER_ROUND {
            due.select_nth_unstable_by_key(PROBES_PER_ROUND, |(t, _)| *t);
            due.truncate(PROBES_PER_ROUND);
            self.next_round = now + ANSWER_POLL;
        }
        for (_, k) in due {
            let id = self.ask_soa(&k.0, k.1, buf);
            let Some(c) = self.catching.get_mut(&k) else {
                continue;
            };
            // No answer to any question for a while: it cannot be asked.
            if !c.answered && now.saturating_duration_since(c.since) >= CLOSE_WATCH {
                c.blind = true;
                continue;
            }
            c.now.id = id;
            let close = now.saturating_duration_since(c.since) < CLOSE_WATCH;
            c.next_probe = now + if close { PROBE_GAP } else { LATE_PROBE_GAP };
        }
    }

    fn read_answers(&mut self, buf: &mut [u8]) {
        let locals: Vec<SocketAddr> = self.sockets.keys().copied().collect();
        for local in locals {
            while let Some(Ok((n, from))) = self.sockets.get(&local).map(|s| s.recv_from(buf)) {
                self.answered(&buf[..n], from);
            }
        }
    }

    fn answered(&mut self, msg: &[u8], from: SocketAddr) {
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
            self.soa_answered(msg, id, from);
            return;
        }
        let Some(k) = self
            .pending
            .iter()
            .find(|((_, addr), p)| *addr == from && p.id == id && p.sent_at.is_some())
            .map(|(k, _)| k.clone())
        else {
            return;
        };
        let Some(p) = self.pending.remove(&k) else {
            return;
        };
        let code = u16::from(msg[3] & 0x0F);
        let serial = lode_zonedb::soa_serial(&p.soa);
        if code == lode_wire::rcode::NOERROR {
            crate::metrics::EVENTS.notify_sent.bump();
            tracing::debug!(
                "zone {}: NOTIFY of serial {serial} to {} ({}) answered in {:.1} ms",
                k.0,
                k.1,
                p.remote,
                p.sent_at
                    .map_or(0.0, |t| t.elapsed().as_secs_f64() * 1000.0)
            );
            let now = Instant::now();
            self.catching.insert(
                k.clone(),
                CatchingUp {
                    serial,
                    before: p.before,
                    since: now,
                    now: Probe::default(),
                    next_probe: now + FIRST_PROBE,
                    blind: false,
                    answered: false,
                    settled: None,
                },
            );
        } else {
            crate::metrics::EVENTS.notify_failed.bump();
            tracing::warn!(
                "zone {}: NOTIFY of serial {serial} to {} ({}): answered {}",
                k.0,
                k.1,
                p.remote,
                lode_wire::rcode::name(code)
            );
        }
        if let Some(newer) = p.newer {
            let next = Pending::new(newer, &p.key, &p.remote, Instant::now());
            self.pending.insert(k, next);
        }
    }

    /// An answer to one of the SOA questions: what the secondary served
    /// before it was told, or whether it caught up.
    fn soa_answered(&mut self, msg: &[u8], id: u16, from: SocketAddr) {
        let asked = |k: &(Name, SocketAddr), probe: &Probe| k.1 == from && probe.id == Some(id);
        if let Some((k, p)) = self.pending.iter_mut().find(|(k, p)| asked(k, &p.before)) {
            p.before.id = None;
            p.before.serial = crate::fetch::served_serial(msg, id, &k.0);
            return;
        }
        let Some((k, c)) = self
            .catching
            .iter_mut()
            .find(|(k, c)| asked(k, &c.before) || asked(k, &c.now))
        else {
            return;
        };
        let served = crate::fetch::served_serial(msg, id, &k.0);
        c.answered = true;
        if c.before.id == Some(id) {
            c.before = Probe {
                id: None,
                serial: served,
            };
            return;
        }
        c.now.id = None;
        let Some(served) = served else {
            // Refused, not authoritative, no SOA: it cannot be asked.
            c.blind = true;
            return;
        };
        if c.reached(served) {
            let took = c.since.elapsed();
            tracing::debug!(
                "zone {}: {} serves serial {served} ({:.1} ms after its NOTIFY of {} was answered)",
                k.0,
                k.1,
                took.as_secs_f64() * 1000.0,
                c.serial
            );
            c.settled = Some(Instant::now() + took);
            // What waited may be what it took: nothing to tell it then.
            let k = k.clone();
            if self
                .pending
                .get(&k)
                .is_some_and(|p| p.sent_at.is_none() && lode_zonedb::soa_serial(&p.soa) == served)
            {
                self.pending.remove(&k);
            }
        }
    }
}

impl Pending {
    fn new(soa: Record, key: &Option<Key>, remote: &str, due: Instant) -> Pending {
        Pending {
            soa,
            newer: None,
            key: key.clone(),
            remote: remote.to_owned(),
            id: 0,
            tries: 0,
            due,
            sent_at: None,
            before: Probe::default(),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn told(serial: u32, before: Option<u32>) -> CatchingUp {
        let now = Instant::now();
        CatchingUp {
            serial,
            before: Probe {
                id: None,
                serial: before,
            },
            since: now,
            now: Probe::default(),
            next_probe: now,
            blind: false,
            answered: false,
            settled: None,
        }
    }

    #[test]
    fn caught_up_at_the_serial_told_or_newer() {
        let c = told(100, Some(90));
        assert!(c.reached(100));
        assert!(c.reached(105));
        assert!(!c.reached(90), "what it served before");
        assert!(!c.reached(95), "a transfer started before it was told");
        // A serial of its own (a signer's serial policy), either side of ours.
        assert!(c.reached(7));
        assert!(!told(2_000_000_000, Some(1_764_000_000)).reached(1_764_000_050));
        assert!(told(100, Some(1_764_000_000)).reached(1_764_000_050));
        // Across the wrap of serial arithmetic (RFC 1982).
        assert!(told(u32::MAX, Some(u32::MAX - 5)).reached(3));
        assert!(!told(3, Some(u32::MAX - 5)).reached(u32::MAX));
        // Nothing known of before: only ours or newer.
        assert!(!told(100, None).reached(7));
    }

    /// An SOA record of `example.com.` with `serial` (the root as both
    /// names: only the serial is read here).
    fn soa(serial: u32) -> Record {
        let mut rdata = vec![0, 0];
        rdata.extend_from_slice(&serial.to_be_bytes());
        rdata.extend_from_slice(&[0; 16]);
        Record {
            owner: "example.com.".parse().unwrap(),
            class: lode_wire::Class::IN,
            rtype: lode_wire::Rtype::SOA,
            ttl: 3600,
            rdata: rdata.into(),
        }
    }

    /// A notifier with one target that never answers (a port nobody
    /// listens on), and the key of its pending NOTIFY.
    fn silent_target() -> (Notifier, (Name, SocketAddr)) {
        let addr = UdpSocket::bind("127.0.0.1:0")
            .and_then(|s| s.local_addr())
            .unwrap();
        let zone: Name = "example.com.".parse().unwrap();
        let targets = Targets {
            remotes: vec![(addr, None, "secondary".into(), None)],
            delay: Duration::ZERO,
        };
        let map = HashMap::from([(zone.clone(), targets)]);
        (Notifier::new(Arc::new(Mutex::new(map))), (zone, addr))
    }

    fn change(n: &mut Notifier, zone: &Name, serial: u32) {
        n.changed(Changed {
            zone: zone.clone(),
            soa: soa(serial),
        });
    }

    /// Sends what is due, as if the retry timer had fired.
    fn retry(n: &mut Notifier, k: &(Name, SocketAddr), buf: &mut [u8]) {
        if let Some(p) = n.pending.get_mut(k) {
            p.due = Instant::now();
        }
        n.send_due(buf);
    }

    fn sent(n: &Notifier, k: &(Name, SocketAddr)) -> Option<(u32, u32)> {
        n.pending
            .get(k)
            .map(|p| (lode_zonedb::soa_serial(&p.soa), p.tries))
    }

    /// The secondary was down while serial 1 was retried; a newer serial
    /// that comes after the last try must be sent, not given up with it.
    #[test]
    fn newer_serial_not_lost_behind_given_up_retries() {
        let (mut n, k) = silent_target();
        let mut buf = vec![0u8; 4096];
        change(&mut n, &k.0, 1);
        n.send_due(&mut buf);
        for _ in 1..TRIES {
            retry(&mut n, &k, &mut buf);
        }
        assert_eq!(sent(&n, &k), Some((1, TRIES)), "five tries of serial 1");
        change(&mut n, &k.0, 2);
        n.send_due(&mut buf);
        assert_eq!(sent(&n, &k), Some((2, 1)), "serial 2 sent at once");
        for _ in 1..TRIES {
            retry(&mut n, &k, &mut buf);
        }
        assert_eq!(
            sent(&n, &k),
            Some((2, TRIES)),
            "serial 2 has tries of its own"
        );
        retry(&mut n, &k, &mut buf);
        assert_eq!(sent(&n, &k), None, "given up after its own tries");
    }

    /// A newer serial that came while the first try awaited its answer is
    /// sent at the retry, with tries of its own; one that came before the
    /// last try is given up with nothing.
    #[test]
    fn newer_serial_waits_for_the_first_answer_only() {
        let (mut n, k) = silent_target();
        let mut buf = vec![0u8; 4096];
        change(&mut n, &k.0, 1);
        n.send_due(&mut buf);
        change(&mut n, &k.0, 2);
        n.send_due(&mut buf);
        assert_eq!(sent(&n, &k), Some((1, 1)), "held behind the first try");
        retry(&mut n, &k, &mut buf);
        assert_eq!(sent(&n, &k), Some((2, 1)), "sent at the retry");
        // Given up with a newer one waiting: the newer one is sent.
        if let Some(p) = n.pending.get_mut(&k) {
            p.tries = TRIES;
            p.newer = Some(soa(3));
        }
        retry(&mut n, &k, &mut buf);
        assert_eq!(sent(&n, &k), Some((3, 1)));
    }

    #[test]
    fn holds_end() {
        let mut c = told(100, None);
        assert_eq!(c.limit(), c.since + CATCH_UP_LIMIT);
        c.blind = true;
        assert_eq!(c.limit(), c.since + BLIND_HOLD);
        assert!(!c.asking());
        let t = c.since + Duration::from_millis(7);
        c.settled = Some(t);
        assert_eq!(c.limit(), t);
    }
}
