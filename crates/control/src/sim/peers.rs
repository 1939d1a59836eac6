//! How the simulated secondaries of other servers take a NOTIFY, as their
//! sources and the fleet benchmark's logs show them (a Lode secondary hands
//! it to the real [`Refresher`](crate::refresh::Refresher) at once):
//!
//! - **Knot DNS 3.2**: a NOTIFY that comes within [`KNOT_BUSY`] after the
//!   zone took a change is answered and taken only [`KNOT_LATE`] later.
//! - **BIND 9.18**: a NOTIFY whose serial is not newer than the zone's is
//!   ignored ("zone is up to date"); one that comes while the zone is
//!   refreshing (its refresh queued or running) is noted and a refresh
//!   follows the running one (`DNS_ZONEFLG_NEEDREFRESH`); otherwise the
//!   refresh's SOA query waits in the server's refresh rate limiter
//!   (`serial-query-rate` 20: a tick every [`BIND_TICK`] releasing up to
//!   [`BIND_PER_TICK`]; a query that finds the limiter idle goes at once
//!   and starts the ticks, which stop at the first tick with nothing to
//!   release — `lib/dns/zone.c` `dns_zone_notifyreceive`,
//!   `queue_soa_query`, `setrl`; `lib/isc/ratelimiter.c`).
//! - **NSD 4**: transfers at once (xfrd), but a transfer is served only
//!   at the next reload of the server process, and reloads come at most
//!   one per [`NSD_RELOAD`] (`xfrd-reload-timeout`, default 1 s); the SOA
//!   the primary asks is the served one. A crash loses no transfer (NSD
//!   keeps them on disk and reads them at its start).
//!
//! [`KNOT_BUSY`]: super::KNOT_BUSY
//! [`KNOT_LATE`]: super::KNOT_LATE

use std::collections::VecDeque;
use std::time::Duration;

use lode_wire::serial::serial_lt;

use super::{Event, Sim};

/// BIND's refresh rate limiter's tick at `serial-query-rate` 20.
pub const BIND_TICK: Duration = Duration::from_millis(500);
/// SOA queries BIND's limiter releases per tick (`serial-query-rate` > 10).
pub const BIND_PER_TICK: usize = 10;
/// NSD's `xfrd-reload-timeout` (its default): reloads at most this often.
pub const NSD_RELOAD: Duration = Duration::from_secs(1);

/// Which server a simulated secondary behaves as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Peer {
    /// Lode: its own refresh machine, as the server runs it.
    Lode,
    /// Knot DNS 3.2.
    Knot,
    /// BIND 9.18.
    Bind,
    /// NSD 4.
    Nsd,
}

impl Peer {
    /// Every kind, in the order of [`Outcome::p99`](super::Outcome::p99).
    pub const ALL: [Peer; 4] = [Peer::Lode, Peer::Knot, Peer::Bind, Peer::Nsd];

    /// The index in [`Peer::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// BIND's refresh rate limiter (one per server, shared by its zones).
#[derive(Debug, Default)]
pub(super) struct Limiter {
    /// Ticking (BIND's "ratelimited" state): a query now waits for a tick.
    ticking: bool,
    /// Zones whose SOA query waits for a tick, in order.
    pending: VecDeque<usize>,
    /// Told apart from the ticks of before a crash.
    epoch: u64,
}

/// What an NSD-like secondary keeps of its reloads.
#[derive(Debug, Default)]
pub(super) struct Reloads {
    /// The last reload (simulated time).
    last: Option<Duration>,
    /// A reload is scheduled.
    scheduled: bool,
    /// Told apart from the reloads scheduled before a crash.
    epoch: u64,
}

impl Sim {
    /// A BIND-like secondary `k` got a NOTIFY of `zone`'s `serial` (answered).
    pub(super) fn bind_notify(&mut self, k: usize, zone: usize, serial: u32) {
        let z = &mut self.secondaries[k].zones[zone];
        if !serial_lt(z.taken, serial) {
            return; // "zone is up to date"
        }
        if z.refreshing.is_some() || z.queued {
            z.need = true; // "refresh in progress, refresh check queued"
            return;
        }
        z.queued = true;
        self.bind_enqueue(k, zone);
    }

    /// A BIND-like secondary's refresh of `zone` ended: the one a NOTIFY
    /// asked meanwhile is queued now.
    pub(super) fn bind_refreshed(&mut self, k: usize, zone: usize) {
        let z = &mut self.secondaries[k].zones[zone];
        if z.need && !z.queued {
            z.need = false;
            z.queued = true;
            self.bind_enqueue(k, zone);
        }
    }

    /// `zone`'s SOA query into the limiter: at once if it is idle.
    fn bind_enqueue(&mut self, k: usize, zone: usize) {
        let l = &mut self.secondaries[k].limiter;
        if l.ticking {
            l.pending.push_back(zone);
            self.out.rate_limited += 1;
            return;
        }
        l.ticking = true;
        let epoch = l.epoch;
        let t = self.now + BIND_TICK;
        self.at(
            t,
            Event::RateTick {
                secondary: k,
                epoch,
            },
        );
        self.bind_release(k, zone);
    }

    /// A tick of BIND's limiter.
    pub(super) fn rate_tick(&mut self, k: usize, epoch: u64) {
        if !self.secondaries[k].up || self.secondaries[k].limiter.epoch != epoch {
            return;
        }
        for _ in 0..BIND_PER_TICK {
            match self.secondaries[k].limiter.pending.pop_front() {
                Some(zone) => self.bind_release(k, zone),
                None => {
                    self.secondaries[k].limiter.ticking = false;
                    return;
                }
            }
        }
        let t = self.now + BIND_TICK;
        self.at(
            t,
            Event::RateTick {
                secondary: k,
                epoch,
            },
        );
    }

    /// The SOA query of `zone` goes: the refresh starts.
    fn bind_release(&mut self, k: usize, zone: usize) {
        let now = self.start + self.now;
        let s = &mut self.secondaries[k];
        s.zones[zone].queued = false;
        let taken = s.zones[zone].taken;
        s.refresher
            .notify(&self.names[zone], None, Some(taken), now);
        self.secondary_actions(k);
    }

    /// An NSD-like secondary took a transfer: served at the next reload.
    pub(super) fn nsd_took(&mut self, k: usize) {
        let r = &self.secondaries[k].reloads;
        let earliest = r.last.map_or(self.now, |t| t + NSD_RELOAD);
        if earliest <= self.now {
            self.nsd_reload(k, r.epoch);
        } else if !r.scheduled {
            let epoch = r.epoch;
            self.secondaries[k].reloads.scheduled = true;
            self.out.reloads_deferred += 1;
            self.at(
                earliest,
                Event::Reload {
                    secondary: k,
                    epoch,
                },
            );
        }
    }

    /// An NSD-like secondary reloads: every zone serves what it took.
    pub(super) fn nsd_reload(&mut self, k: usize, epoch: u64) {
        let s = &mut self.secondaries[k];
        if !s.up || s.reloads.epoch != epoch {
            return;
        }
        s.reloads.last = Some(self.now);
        s.reloads.scheduled = false;
        for z in &mut s.zones {
            z.served = z.taken;
        }
        self.note(format!("s{k} reloads"));
    }

    /// A secondary crashed: what its peer kind keeps in memory is gone;
    /// NSD reads its transfers again at its start.
    pub(super) fn peer_crashed(&mut self, k: usize) {
        let s = &mut self.secondaries[k];
        let (limiter, reloads) = (s.limiter.epoch + 1, s.reloads.epoch + 1);
        s.limiter = Limiter {
            epoch: limiter,
            ..Limiter::default()
        };
        s.reloads = Reloads {
            epoch: reloads,
            ..Reloads::default()
        };
        for z in &mut s.zones {
            z.served = z.taken;
            z.queued = false;
            z.need = false;
        }
    }
}
