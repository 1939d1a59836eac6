//! The refresh scheduler of the secondary zones: one thread that starts
//! each zone's refresh when it is due (SOA timers, NOTIFY, commands), at
//! most [`MAX_REFRESHES`] at once and [`MAX_PER_PRIMARY`] from one primary,
//! takes their outcomes, keeps the timers and marks zones past their expiry.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::SocketAddr;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use lode_wire::Name;

use super::notify_asks::{notify_asks, NotifyAsks};
use super::timers::{TimerLog, Timers};
use super::{set_expired, soa_timers, Event, Outcome, Refresh, Status, ZoneState, RETRY_MIN};
use crate::clock::unix_now;
use crate::publish::Publisher;

/// Refreshes (SOA query and transfer) running at once, all zones together:
/// a catalog of 10^4 members due together must not start 10^4 threads.
const MAX_REFRESHES: usize = 32;

/// Refreshes running at once from one primary (a zone's first): below the
/// 10 transfers out at once that BIND (`transfers-out`) and Lode allow by
/// default, past which they answer REFUSED — a catalog's members, all due
/// together at start, would otherwise be refused and retried.
const MAX_PER_PRIMARY: usize = 8;

/// The primary a zone's refresh counts against: its first.
fn primary_of(z: &ZoneState) -> Option<SocketAddr> {
    z.sources.first().map(|s| s.addr)
}

pub(super) struct Scheduler {
    pub(super) zones: HashMap<Name, ZoneState>,
    /// Refreshes running now (at most [`MAX_REFRESHES`]).
    pub(super) refreshing: usize,
    /// Of them, by primary (at most [`MAX_PER_PRIMARY`] each).
    pub(super) per_primary: HashMap<SocketAddr, usize>,
    /// The zones not refreshing, by primary, soonest due first: (when,
    /// zone). An entry is stale when the zone is gone, refreshing, due at
    /// another time or has another primary now; stale entries are dropped
    /// as they come up. A pass takes what is due without looking over every
    /// zone (10^5 catalog members).
    pub(super) queues: HashMap<Option<SocketAddr>, BinaryHeap<Reverse<(Instant, Name)>>>,
    pub(super) tx: mpsc::Sender<Event>,
    pub(super) publisher: Arc<Publisher>,
    pub(super) status: Arc<Mutex<HashMap<Name, Status>>>,
    /// Where the timers are saved.
    pub(super) timers: Arc<TimerLog>,
}

impl Scheduler {
    pub(super) fn run(mut self, rx: mpsc::Receiver<Event>) {
        let mut expiry_checked = Instant::now();
        loop {
            for zone in self.due(Instant::now()) {
                self.begin(&zone);
            }
            if expiry_checked.elapsed() >= Duration::from_secs(1) {
                self.check_expiry();
                expiry_checked = Instant::now();
            }
            // Until the soonest zone is due whose refresh could start then
            // (a primary or the whole at its limit: until a refresh ends,
            // which is an event).
            let full = self.refreshing >= MAX_REFRESHES;
            let wait = self
                .queues
                .iter()
                .filter(|(p, _)| !full && self.primary_has_room(**p))
                .filter_map(|(_, q)| q.peek())
                .map(|Reverse((at, _))| at.saturating_duration_since(Instant::now()))
                .min()
                .unwrap_or(Duration::from_secs(1))
                .min(Duration::from_secs(1));
            match rx.recv_timeout(wait) {
                Ok(e) => {
                    self.event(e);
                    // What else came meanwhile, before the next pass.
                    while let Ok(e) = rx.try_recv() {
                        self.event(e);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    fn event(&mut self, e: Event) {
        match e {
            Event::Notify { zone, serial } => {
                let Some(z) = self.zones.get_mut(&zone) else {
                    return;
                };
                let served = self.publisher.soa_for_primary(&zone);
                let served = served.map(|soa| lode_zonedb::soa_serial(&soa));
                if let (Some(s), Some(ours), false) = (serial, served, z.axfr_next) {
                    match notify_asks(s, ours) {
                        NotifyAsks::Nothing => {
                            tracing::debug!(
                                "zone {zone}: NOTIFY of serial {s}, serving {ours}: nothing to do"
                            );
                            return;
                        }
                        NotifyAsks::Refresh => {}
                        NotifyAsks::Older => tracing::warn!(
                            "zone {zone}: NOTIFY of serial {s}, older than the served {ours}: asking the primaries (has their serial gone backwards?)"
                        ),
                    }
                }
                if z.running {
                    z.again = Some(z.again.unwrap_or(false));
                } else {
                    z.next = Instant::now();
                    self.queue(&zone);
                }
            }
            Event::Refresh { zone, axfr } => {
                let Some(z) = self.zones.get_mut(&zone) else {
                    return;
                };
                if z.running {
                    z.again = Some(z.again.unwrap_or(false) || axfr);
                } else {
                    z.axfr_next |= axfr;
                    z.next = Instant::now();
                    self.queue(&zone);
                }
            }
            Event::Done {
                zone,
                outcome,
                primary,
            } => {
                if let Some(a) = primary {
                    if let Some(n) = self.per_primary.get_mut(&a) {
                        *n -= 1;
                        if *n == 0 {
                            self.per_primary.remove(&a);
                        }
                    }
                }
                self.finished(&zone, outcome)
            }
            Event::Add(state) => {
                let zone = state.origin.clone();
                self.zones.insert(zone.clone(), *state);
                self.queue(&zone);
            }
            Event::Remove(zone) => {
                if self.zones.remove(&zone).is_some() {
                    self.timers.remove(&zone);
                }
            }
            Event::Sources { zone, sources } => {
                if let Some(z) = self.zones.get_mut(&zone) {
                    z.sources = sources;
                }
                // Queued again under its (new) first primary.
                self.queue(&zone);
            }
        }
    }

    /// Puts the zone in its primary's queue at its next refresh (when it is
    /// not refreshing).
    pub(super) fn queue(&mut self, zone: &Name) {
        if let Some(z) = self.zones.get(zone).filter(|z| !z.running) {
            self.queues
                .entry(primary_of(z))
                .or_default()
                .push(Reverse((z.next, z.origin.clone())));
        }
    }

    /// The zones to refresh now: due at `now`, the longest overdue of each
    /// primary first, as many as there is room for (all together and per
    /// primary); stale queue entries dropped on the way.
    fn due(&mut self, now: Instant) -> Vec<Name> {
        let mut room = MAX_REFRESHES.saturating_sub(self.refreshing);
        let mut due = Vec::new();
        let Scheduler {
            queues,
            zones,
            per_primary,
            ..
        } = self;
        for (primary, queue) in queues.iter_mut() {
            let running = primary.and_then(|a| per_primary.get(&a).copied());
            let mut left = match primary {
                Some(_) => MAX_PER_PRIMARY.saturating_sub(running.unwrap_or(0)),
                None => usize::MAX,
            };
            while room > 0 && left > 0 {
                match queue.peek() {
                    Some(Reverse((at, _))) if *at <= now => {}
                    _ => break,
                }
                let Some(Reverse((at, zone))) = queue.pop() else {
                    break;
                };
                let current = zones
                    .get(&zone)
                    .is_some_and(|z| !z.running && z.next == at && primary_of(z) == *primary);
                if current && !due.contains(&zone) {
                    due.push(zone);
                    room -= 1;
                    left -= 1;
                }
            }
        }
        due
    }

    /// True when the zone's primary has room for one more refresh.
    fn has_room(&self, z: &ZoneState) -> bool {
        self.primary_has_room(primary_of(z))
    }

    /// True when `primary` has room for one more refresh.
    fn primary_has_room(&self, primary: Option<SocketAddr>) -> bool {
        primary.is_none_or(|a| {
            self.per_primary
                .get(&a)
                .is_none_or(|&n| n < MAX_PER_PRIMARY)
        })
    }

    fn begin(&mut self, zone: &Name) {
        let Some(z) = self.zones.get(zone) else {
            return;
        };
        // (Picked with room for it: this is only a guard.)
        if !self.has_room(z) {
            self.queue(zone);
            return;
        }
        let primary = primary_of(z);
        if let Some(a) = primary {
            *self.per_primary.entry(a).or_insert(0) += 1;
        }
        let Some(z) = self.zones.get_mut(zone) else {
            return;
        };
        z.running = true;
        self.refreshing += 1;
        let job = Refresh {
            origin: z.origin.clone(),
            sources: z.sources.clone(),
            writer: z.writer.clone(),
            publisher: self.publisher.clone(),
            axfr: std::mem::take(&mut z.axfr_next),
        };
        let tx = self.tx.clone();
        let origin = zone.clone();
        let spawned = std::thread::Builder::new()
            .name("lode-xfr-in".into())
            .spawn(move || {
                let outcome = job.run();
                let _ = tx.send(Event::Done {
                    zone: origin,
                    outcome,
                    primary,
                });
            });
        if let Err(e) = spawned {
            tracing::error!("zone {zone}: cannot start a refresh thread: {e}");
            self.refreshing -= 1;
            if let Some(n) = primary.and_then(|a| self.per_primary.get_mut(&a)) {
                *n -= 1;
            }
            let Some(z) = self.zones.get_mut(zone) else {
                return;
            };
            z.running = false;
            z.next = Instant::now() + Duration::from_secs(u64::from(RETRY_MIN));
            self.queue(zone);
        }
    }

    fn finished(&mut self, zone: &Name, outcome: Outcome) {
        self.refreshing = self.refreshing.saturating_sub(1);
        let Some(z) = self.zones.get_mut(zone) else {
            return;
        };
        z.running = false;
        let now = unix_now();
        let mut status = self
            .status
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let st = status.entry(zone.clone()).or_default();
        match outcome {
            Outcome::Current { soa, transfer } => {
                let (refresh, retry, expire) = soa_timers(&soa, &z.bounds);
                z.retry = retry;
                z.next = Instant::now() + Duration::from_secs(u64::from(refresh));
                z.expire_at = Some(now + u64::from(expire));
                set_expired(&self.publisher, zone, false);
                st.last_refresh = Some(now);
                st.next_refresh = Some(now + u64::from(refresh));
                st.expires = z.expire_at;
                st.expired = false;
                st.last_error = None;
                if transfer.is_some() {
                    st.last_transfer = transfer;
                }
                self.timers.set(
                    zone,
                    Timers {
                        next: Some(now + u64::from(refresh)),
                        expire: z.expire_at,
                        last: Some(now),
                        serial: self.publisher.get(zone).map(|v| v.serial()),
                    },
                );
            }
            Outcome::Failed(why) => {
                tracing::warn!(
                    "zone {zone}: refresh failed ({why}); next try in {} s",
                    z.retry
                );
                z.next = Instant::now() + Duration::from_secs(u64::from(z.retry));
                st.next_refresh = Some(now + u64::from(z.retry));
                st.last_error = Some(why);
                self.timers.set(
                    zone,
                    Timers {
                        next: Some(now + u64::from(z.retry)),
                        expire: z.expire_at,
                        last: st.last_refresh,
                        serial: self.publisher.get(zone).map(|v| v.serial()),
                    },
                );
            }
        }
        if let Some(axfr) = z.again.take() {
            z.axfr_next |= axfr;
            z.next = Instant::now();
        }
        drop(status);
        self.queue(zone);
    }

    /// Zones whose expiry passed without a successful refresh: SERVFAIL.
    fn check_expiry(&mut self) {
        let now = unix_now();
        for z in self.zones.values_mut() {
            if z.expire_at.is_some_and(|e| e <= now) {
                tracing::error!(
                    "zone {}: expired (no primary answered within the SOA expire time); SERVFAIL until one does",
                    z.origin
                );
                z.expire_at = None;
                set_expired(&self.publisher, &z.origin, true);
                let mut status = self
                    .status
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some(st) = status.get_mut(&z.origin) {
                    st.expired = true;
                    st.expires = None;
                }
            }
        }
    }
}
