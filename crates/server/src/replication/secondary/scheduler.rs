//! The refresh scheduler of the secondary zones, the runtime of
//! [`lode_control::Refresher`] (which decides when each zone is refreshed,
//! how many at once, retries and expiry: see its notes): one thread that
//! feeds it NOTIFYs, commands and refresh outcomes, and performs what it
//! asks: a refresh thread per zone refreshing, the timers kept in
//! `secondary-timers`, expiry marked on the served version, the status
//! `lode zone-status` shows.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use lode_control::refresh::{Action, Outcome as Refreshed, Refresher, Report, Start};
use lode_wire::Name;

use super::timers::{TimerLog, Timers};
use super::{set_expire_at, set_expired, soa_timers, Event, Outcome, Refresh, Status, ZoneState};
use crate::clock::unix_now;
use crate::publish::Publisher;

pub(super) struct Scheduler {
    core: Refresher,
    zones: HashMap<Name, ZoneState>,
    tx: mpsc::Sender<Event>,
    publisher: Arc<Publisher>,
    status: Arc<Mutex<HashMap<Name, Status>>>,
    /// Where the timers are saved.
    timers: Arc<TimerLog>,
    /// The server's counters (transfers in).
    events: Arc<crate::metrics::Events>,
}

/// The primary a zone's refreshes count against: its first.
fn primary_of(z: &ZoneState) -> Option<SocketAddr> {
    z.sources.first().map(|s| s.addr)
}

/// `t` in Unix seconds (the timers file and the status speak them).
fn unix(t: Instant) -> u64 {
    let now = Instant::now();
    match t.checked_duration_since(now) {
        Some(ahead) => unix_now() + ahead.as_secs(),
        None => unix_now().saturating_sub(now.duration_since(t).as_secs()),
    }
}

impl Scheduler {
    pub(super) fn new(
        tx: mpsc::Sender<Event>,
        publisher: Arc<Publisher>,
        status: Arc<Mutex<HashMap<Name, Status>>>,
        timers: Arc<TimerLog>,
        events: Arc<crate::metrics::Events>,
    ) -> Scheduler {
        Scheduler {
            core: Refresher::new(),
            zones: HashMap::new(),
            tx,
            publisher,
            status,
            timers,
            events,
        }
    }

    /// Adds a secondary zone, refreshed from `start`'s timers.
    pub(super) fn add(&mut self, state: ZoneState, start: Start) {
        let zone = state.origin.clone();
        self.zones.insert(zone.clone(), state);
        self.core.add(&zone, start);
    }

    pub(super) fn run(mut self, rx: mpsc::Receiver<Event>) {
        loop {
            self.core.handle_timeout(Instant::now());
            self.perform();
            let wait = self
                .core
                .poll_timeout()
                .map(|t| t.saturating_duration_since(Instant::now()));
            let Ok(event) = crate::clock::recv_within(&rx, wait) else {
                return;
            };
            if let Some(e) = event {
                self.event(e);
                // What else came meanwhile, before the next pass.
                while let Ok(e) = rx.try_recv() {
                    self.event(e);
                }
            }
        }
    }

    fn event(&mut self, e: Event) {
        let now = Instant::now();
        match e {
            Event::Notify { zone, serial } => {
                let served = self.publisher.soa_for_primary(&zone);
                let served = served.map(|soa| lode_zonedb::soa_serial(&soa));
                self.core.notify(&zone, serial, served, now);
            }
            Event::Refresh { zone, axfr } => self.core.refresh(&zone, axfr, now),
            Event::Done { zone, outcome } => {
                let Some(z) = self.zones.get(&zone) else {
                    return;
                };
                let outcome = match outcome {
                    Outcome::Current { soa, transfer } => {
                        if transfer.is_some() {
                            self.with_status(&zone, |st| st.last_transfer = transfer);
                        }
                        let (refresh, retry, expire) = soa_timers(&soa, &z.bounds);
                        let secs = |s: u32| Duration::from_secs(u64::from(s));
                        Refreshed::Current {
                            refresh: secs(refresh),
                            retry: secs(retry),
                            expire: secs(expire),
                        }
                    }
                    Outcome::Failed(why) => Refreshed::Failed(why.to_string()),
                };
                self.core.done(&zone, outcome, now);
            }
            Event::Add(added) => {
                let (state, start) = *added;
                self.add(state, start);
            }
            Event::Remove(zone) => {
                if self.zones.remove(&zone).is_some() {
                    self.core.remove(&zone);
                    self.timers.remove(&zone);
                }
            }
            Event::Freeze { zones, frozen } => {
                for zone in zones {
                    self.core.set_frozen(&zone, frozen);
                }
            }
            Event::Sources { zone, sources } => {
                if let Some(z) = self.zones.get_mut(&zone) {
                    z.sources = sources;
                    let primary = primary_of(z);
                    self.core.set_primary(&zone, primary);
                }
            }
        }
        self.perform();
    }

    fn with_status(&self, zone: &Name, f: impl FnOnce(&mut Status)) {
        let mut status = self
            .status
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(status.entry(zone.clone()).or_default());
    }

    /// Performs what the machine asks for.
    fn perform(&mut self) {
        while let Some(action) = self.core.poll_action() {
            match action {
                Action::Refresh { zone, axfr } => self.begin(&zone, axfr),
                Action::Timers {
                    zone,
                    next,
                    expire,
                    last,
                } => {
                    let (next, expire, last) = (unix(next), expire.map(unix), last.map(unix));
                    self.with_status(&zone, |st| {
                        st.next_refresh = Some(next);
                        st.expires = expire.filter(|_| !st.expired);
                        st.last_refresh = last;
                    });
                    if let Some(z) = self.zones.get(&zone) {
                        set_expire_at(&self.publisher, &z.writer, &zone, expire);
                    }
                    let serial = self.publisher.get(&zone).map(|v| v.serial());
                    self.timers.set(
                        &zone,
                        Timers {
                            next: Some(next),
                            expire,
                            last,
                            serial,
                        },
                    );
                }
                Action::Expire { zone } => {
                    tracing::error!(
                        "zone {zone}: expired (no primary answered within the SOA expire time); SERVFAIL until one does"
                    );
                    if let Some(z) = self.zones.get(&zone) {
                        set_expired(&self.publisher, &z.writer, &zone, true);
                    }
                    self.with_status(&zone, |st| {
                        st.expired = true;
                        st.expires = None;
                    });
                }
                Action::Refreshed { zone } => {
                    if let Some(z) = self.zones.get(&zone) {
                        set_expired(&self.publisher, &z.writer, &zone, false);
                    }
                    self.with_status(&zone, |st| {
                        st.expired = false;
                        st.last_error = None;
                    });
                }
                Action::Report(r) => self.report(r),
            }
        }
    }

    fn report(&self, r: Report) {
        match r {
            Report::NotifyServed { zone, serial } => {
                tracing::debug!(
                    "zone {zone}: NOTIFY of serial {serial}, serving {serial}: nothing to do"
                );
            }
            Report::NotifyOlder {
                zone,
                announced,
                served,
            } => tracing::warn!(
                "zone {zone}: NOTIFY of serial {announced}, older than the served {served}: asking the primaries (has their serial gone backwards?)"
            ),
            Report::Failed { zone, why, retry } => {
                tracing::warn!(
                    "zone {zone}: refresh failed ({why}); next try in {} s",
                    retry.as_secs()
                );
                self.with_status(&zone, |st| st.last_error = Some(why));
            }
        }
    }

    /// Starts a refresh thread for `zone`; its outcome comes back as
    /// [`Event::Done`].
    fn begin(&mut self, zone: &Name, axfr: bool) {
        let Some(z) = self.zones.get(zone) else {
            return;
        };
        let job = Refresh {
            origin: z.origin.clone(),
            sources: z.sources.clone(),
            writer: z.writer.clone(),
            publisher: self.publisher.clone(),
            axfr,
            events: self.events.clone(),
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
                });
            });
        if let Err(e) = spawned {
            let why = format!("cannot start a refresh thread: {e}");
            tracing::error!("zone {zone}: {why}");
            self.core.done(zone, Refreshed::Failed(why), Instant::now());
        }
    }
}
