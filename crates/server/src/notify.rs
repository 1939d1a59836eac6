//! NOTIFY out (RFC 1996): when a zone's published serial changes, each of
//! its `notify` remotes gets a NOTIFY (the new SOA in the answer section, as
//! Knot sends it; TSIG-signed when the remote has a key), retried until it
//! answers. One thread for all zones; a newer serial replaces a NOTIFY not
//! yet answered for the same zone and remote.
//!
//! ```text
//!  Publisher (a swap changed a watched zone's serial) ──▶ channel ──▶ notify thread
//!     pending per (zone, remote address): due time, tries, message id
//!     send when due (after notify-delay), resend after 1, 2, 4, 8 s, give up after 5 tries;
//!     an answer with the message's id ends it (its RCODE logged when not NOERROR)
//! ```

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use lode_tsig::{Key, Keys};
use lode_wire::{Name, Record};

use crate::config::{Config, ZoneOptions};
use crate::update::Publisher;

/// Sends on the first try, then after 1, 2, 4 and 8 seconds.
const TRIES: u32 = 5;
const FIRST_RETRY: Duration = Duration::from_secs(1);

/// A change of a watched zone's serial.
#[derive(Debug)]
pub(crate) struct Changed {
    /// The zone's origin (lower case).
    pub(crate) zone: Name,
    /// Its new SOA record.
    pub(crate) soa: Record,
}

/// One zone's NOTIFY targets.
#[derive(Debug, Clone)]
struct Targets {
    remotes: Vec<(SocketAddr, Option<Key>, String)>,
    delay: Duration,
}

/// One NOTIFY on its way to one address.
#[derive(Debug)]
struct Pending {
    soa: Record,
    key: Option<Key>,
    remote: String,
    id: u16,
    tries: u32,
    due: Instant,
    sent_at: Option<Instant>,
}

/// The NOTIFY targets of each zone, shared with the NOTIFY thread: zones
/// added later (a reload, a catalog member) join it.
#[derive(Debug, Clone)]
pub(crate) struct Notifies {
    targets: Arc<Mutex<HashMap<Name, Targets>>>,
    watched: crate::update::Watched,
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
            remotes.push((*a, key.clone(), r.id.clone()));
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
    v4: Option<UdpSocket>,
    v6: Option<UdpSocket>,
    next_id: u16,
}

impl Notifier {
    fn new(targets: Arc<Mutex<HashMap<Name, Targets>>>) -> Notifier {
        let bind = |a: &str| {
            let s = UdpSocket::bind(a).ok()?;
            s.set_nonblocking(true).ok()?;
            Some(s)
        };
        Notifier {
            targets,
            pending: HashMap::new(),
            v4: bind("0.0.0.0:0"),
            v6: bind("[::]:0"),
            next_id: rand_id(),
        }
    }

    fn run(mut self, rx: mpsc::Receiver<Changed>) {
        let mut buf = vec![0u8; 4096];
        loop {
            // Sleep until the next NOTIFY is due, for at most 20 ms while
            // answers are awaited (they are read between waits).
            let now = Instant::now();
            let waiting = self.pending.values().any(|p| p.sent_at.is_some());
            let next_due = self.pending.values().map(|p| p.due).min();
            let mut wait = next_due.map(|d| d.saturating_duration_since(now));
            if waiting {
                let cap = Duration::from_millis(20);
                wait = Some(wait.map_or(cap, |w| w.min(cap)));
            }
            let event = match wait {
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
            self.send_due(&mut buf);
        }
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
        let due = Instant::now() + t.delay;
        for (addr, key, remote) in &t.remotes {
            match self.pending.get_mut(&(e.zone.clone(), *addr)) {
                // Not sent yet (waiting out notify-delay): it sends the newest.
                Some(p) if p.sent_at.is_none() => p.soa = e.soa.clone(),
                // Sent and not answered yet: the newer serial starts again.
                Some(p) => {
                    p.soa = e.soa.clone();
                    p.tries = 0;
                    p.sent_at = None;
                    p.due = due;
                }
                None => {
                    self.pending.insert(
                        (e.zone.clone(), *addr),
                        Pending {
                            soa: e.soa.clone(),
                            key: key.clone(),
                            remote: remote.clone(),
                            id: 0,
                            tries: 0,
                            due,
                            sent_at: None,
                        },
                    );
                }
            }
        }
    }

    fn socket(&self, addr: SocketAddr) -> Option<&UdpSocket> {
        if addr.is_ipv4() {
            self.v4.as_ref()
        } else {
            self.v6.as_ref()
        }
    }

    fn send_due(&mut self, buf: &mut [u8]) {
        let now = Instant::now();
        let due: Vec<(Name, SocketAddr)> = self
            .pending
            .iter()
            .filter(|(_, p)| p.due <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for k in due {
            let Some(p) = self.pending.get(&k) else {
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
                self.pending.remove(&k);
                continue;
            }
            self.next_id = self.next_id.wrapping_add(1);
            let id = self.next_id;
            let n = lode_xfr::notify(buf, id, k.0.as_ref(), Some(&p.soa), None);
            let n = match &p.key {
                Some(key) => {
                    let len = n;
                    match lode_tsig::sign_request(buf, len, key, crate::update::unix_now()) {
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

    fn read_answers(&mut self, buf: &mut [u8]) {
        for v6 in [false, true] {
            loop {
                let sock = if v6 {
                    self.v6.as_ref()
                } else {
                    self.v4.as_ref()
                };
                let Some(sock) = sock else { break };
                let Ok((n, from)) = sock.recv_from(buf) else {
                    break;
                };
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
    }
}

/// A message ID start that differs between runs.
fn rand_id() -> u16 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    (t ^ std::process::id()) as u16
}
