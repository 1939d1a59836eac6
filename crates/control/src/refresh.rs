//! Refresh of secondary zones (RFC 1034 §4.3.5, RFC 1996 §4) as a state
//! machine: each zone is refreshed (its primaries' SOA asked, then an IXFR
//! or AXFR when they serve a newer serial) when its SOA refresh timer runs
//! out, after a failure when its retry timer does, and at once on a NOTIFY
//! that announces a serial it does not serve (or on a command). A zone
//! whose refreshes all fail until its SOA expire time runs out expires:
//! the runtime answers SERVFAIL for it until one succeeds.
//!
//! Refreshes run at most [`MAX_REFRESHES`] at once, all zones together (a
//! catalog's 10^4 members due together must not start 10^4 transfers), and
//! [`MAX_PER_PRIMARY`] against one primary (a zone's first): below the 10
//! transfers out at once that BIND (`transfers-out`) and Lode allow by
//! default, past which they answer REFUSED. A zone is refreshed by one
//! refresh at a time; what is asked meanwhile (a NOTIFY, a command) makes
//! another follow at once.
//!
//! ```text
//!  add(zone, primary, next, expire) ──▶ queued under its primary at `next`
//!  notify(zone, announced, served) / refresh(zone, axfr) ──▶ due now (or again after the one running)
//!  handle_timeout(now): expired zones ─▶ Action::Expire; due zones with room ─▶ Action::Refresh
//!  done(zone, Current { refresh, retry, expire }) ─▶ next = now + refresh, expiry = now + expire
//!  done(zone, Failed) ─▶ next = now + retry                       ─▶ Action::Timers (to keep)
//! ```
//!
//! A frozen zone (`lode zone-freeze`, as `knotc zone-freeze`) is not
//! refreshed by its timers or a NOTIFY until it is thawed, when a refresh
//! that fell due meanwhile starts at once; a command's refresh
//! (`zone-refresh`, `zone-retransfer`) still runs, and the zone still
//! expires.
//!
//! The runtime performs the refresh itself (queries, transfers, the writer)
//! and reports its outcome with [`Refresher::done`]; it keeps the timers
//! [`Action::Timers`] gives so that a restart goes on from them.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use lode_wire::serial::{serial_cmp, SerialOrder};
use lode_wire::Name;

/// Refreshes running at once, all zones together.
pub const MAX_REFRESHES: usize = 32;
/// Refreshes running at once against one primary (a zone's first).
pub const MAX_PER_PRIMARY: usize = 8;
/// The first retry after a failure, before the SOA's retry is known.
pub const RETRY_MIN: Duration = Duration::from_secs(2);

/// What the runtime does for the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Refresh `zone` now: ask its primaries' SOA, transfer what is newer
    /// (a whole AXFR when `axfr`); report the outcome with
    /// [`Refresher::done`].
    Refresh {
        /// The zone.
        zone: Name,
        /// A whole transfer asked for (`lode zone-retransfer`).
        axfr: bool,
    },
    /// The zone's timers changed: keep them for a restart, show them.
    Timers {
        /// The zone.
        zone: Name,
        /// Its next refresh.
        next: Instant,
        /// When it expires (or expired) without a successful refresh
        /// (None: not before a first one). Kept, a restart past it starts
        /// the zone expired.
        expire: Option<Instant>,
        /// Its last successful refresh.
        last: Option<Instant>,
    },
    /// The zone expired: answer SERVFAIL for it until a refresh succeeds.
    Expire {
        /// The zone.
        zone: Name,
    },
    /// A refresh succeeded: the zone is served (again, when it had expired).
    Refreshed {
        /// The zone.
        zone: Name,
    },
    /// Something for the log.
    Report(Report),
}

/// What happened, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// A NOTIFY announced the serial served: nothing to do.
    NotifyServed {
        /// The zone.
        zone: Name,
        /// The serial announced and served.
        serial: u32,
    },
    /// A NOTIFY announced a serial older than the one served: the
    /// primaries are asked (has their serial gone backwards?).
    NotifyOlder {
        /// The zone.
        zone: Name,
        /// The serial announced.
        announced: u32,
        /// The serial served.
        served: u32,
    },
    /// A refresh failed; the next try is `retry` later.
    Failed {
        /// The zone.
        zone: Name,
        /// Why (the runtime's words).
        why: String,
        /// Until the next try.
        retry: Duration,
    },
}

/// How a refresh ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The zone serves the primary's serial (it was current, or a transfer
    /// brought it); the SOA's refresh, retry and expire (within the
    /// configured bounds).
    Current {
        /// SOA refresh.
        refresh: Duration,
        /// SOA retry.
        retry: Duration,
        /// SOA expire.
        expire: Duration,
    },
    /// Every primary failed; the last reason.
    Failed(String),
}

/// A secondary zone as it starts: its timers as kept (or none).
#[derive(Debug, Clone)]
pub struct Start {
    /// The primary its refreshes count against (its first).
    pub primary: Option<SocketAddr>,
    /// Its first refresh: now when it serves nothing or its timers were
    /// lost.
    pub next: Instant,
    /// When it expires unless refreshed (None: not before a first refresh).
    pub expire: Option<Instant>,
    /// Its last successful refresh, if known.
    pub last: Option<Instant>,
    /// Its first refresh is a whole transfer (it serves nothing yet).
    pub axfr: bool,
    /// Its retry after a failure, until an SOA gives one.
    pub retry: Duration,
}

impl Start {
    /// A zone that serves nothing yet: refreshed at `now` by AXFR.
    pub fn empty(primary: Option<SocketAddr>, now: Instant) -> Start {
        Start {
            primary,
            next: now,
            expire: None,
            last: None,
            axfr: true,
            retry: RETRY_MIN,
        }
    }
}

/// One secondary zone's refresh state.
#[derive(Debug)]
struct Zone {
    /// The primary its refreshes count against (its first).
    primary: Option<SocketAddr>,
    next: Instant,
    expire_at: Option<Instant>,
    /// Past `expire_at` without a successful refresh.
    expired: bool,
    last: Option<Instant>,
    running: bool,
    /// A refresh was asked for while one ran: another follows (an AXFR when
    /// true).
    again: Option<bool>,
    axfr_next: bool,
    retry: Duration,
    /// Frozen: refreshed only when a command asks.
    frozen: bool,
    /// A command asked for the next refresh (it runs even when frozen).
    forced: bool,
}

/// The refreshes of every secondary zone.
#[derive(Debug, Default)]
pub struct Refresher {
    zones: HashMap<Name, Zone>,
    /// Refreshes running now (at most [`MAX_REFRESHES`]).
    refreshing: usize,
    /// Of them, by primary (at most [`MAX_PER_PRIMARY`] each).
    per_primary: HashMap<SocketAddr, usize>,
    /// The zones not refreshing, by primary, soonest due first: (when,
    /// zone). An entry is stale when the zone is gone, refreshing, due at
    /// another time or has another primary now; stale entries are dropped
    /// as they come up, so that a pass takes what is due without looking
    /// over every zone (10^5 catalog members).
    queues: HashMap<Option<SocketAddr>, BinaryHeap<Reverse<(Instant, Name)>>>,
    /// Zones by expiry (stale entries dropped as they come up).
    expiries: BinaryHeap<Reverse<(Instant, Name)>>,
    actions: VecDeque<Action>,
}

/// What a NOTIFY (or a primary's SOA) with serial `theirs` asks of a
/// secondary serving `ours` (RFC 1996 §3.7, RFC 1982).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotifyAsks {
    /// The same serial: nothing to do (an answer equal to the local data).
    Nothing,
    /// A newer serial: refresh.
    Refresh,
    /// An older one (or exactly half the serial space away: neither is
    /// newer): the primaries are asked, their serial may have gone
    /// backwards.
    Older,
}

/// See [`NotifyAsks`].
pub fn notify_asks(theirs: u32, ours: u32) -> NotifyAsks {
    match serial_cmp(theirs, ours) {
        SerialOrder::Equal => NotifyAsks::Nothing,
        SerialOrder::Greater => NotifyAsks::Refresh,
        _ => NotifyAsks::Older,
    }
}

/// What a refresh from one primary does first, from what it knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The primary serves our serial: up to date.
    UpToDate,
    /// The primary serves an older serial than ours (or one half the
    /// serial space away): ours is kept (RFC 1982: a secondary follows
    /// only a newer serial) and the refresh counts as current.
    PrimaryOlder,
    /// Transfer: an IXFR from our serial, or the whole zone (AXFR).
    Transfer {
        /// A whole transfer.
        axfr: bool,
    },
}

/// The first step of a refresh from one primary: `axfr` asked for (a
/// command, or the zone's first transfer), our serial `ours` (None: we
/// serve nothing, or do not know the primary's numbering of it) and the
/// primary's `theirs` (None: it refused the SOA query — Knot does for the
/// catalogs it generates — so an IXFR from ours asks, and tells "up to
/// date" by itself).
pub fn first_step(axfr: bool, ours: Option<u32>, theirs: Option<u32>) -> Step {
    let Some(ours) = ours.filter(|_| !axfr) else {
        return Step::Transfer { axfr: true };
    };
    match theirs.map(|t| notify_asks(t, ours)) {
        Some(NotifyAsks::Nothing) => Step::UpToDate,
        Some(NotifyAsks::Older) => Step::PrimaryOlder,
        Some(NotifyAsks::Refresh) | None => Step::Transfer { axfr: false },
    }
}

/// After a transfer from a primary failed: an IXFR that could not be
/// taken is followed by a whole transfer from the same primary; an AXFR
/// that failed is the end of that primary (None: the next one is asked).
pub fn after_failed_transfer(axfr: bool) -> Option<Step> {
    (!axfr).then_some(Step::Transfer { axfr: true })
}

impl Refresher {
    /// A machine with no zones.
    pub fn new() -> Refresher {
        Refresher::default()
    }

    /// The next action to perform, in the order they were decided.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The secondary zones it refreshes.
    pub fn len(&self) -> usize {
        self.zones.len()
    }

    /// Whether it refreshes no zone.
    pub fn is_empty(&self) -> bool {
        self.zones.is_empty()
    }

    /// Refreshes running now.
    pub fn running(&self) -> usize {
        self.refreshing
    }

    /// Adds (or replaces) a secondary zone, as it starts.
    pub fn add(&mut self, zone: &Name, start: Start) {
        let zone = zone.to_lowercase();
        let mut frozen = false;
        if let Some(old) = self.zones.remove(&zone) {
            if old.running {
                self.finish_running(old.primary);
            }
            frozen = old.frozen;
        }
        self.zones.insert(
            zone.clone(),
            Zone {
                primary: start.primary,
                next: start.next,
                expire_at: start.expire,
                expired: false,
                last: start.last,
                running: false,
                again: None,
                axfr_next: start.axfr,
                retry: start.retry,
                frozen,
                forced: false,
            },
        );
        if let Some(e) = start.expire {
            self.push_expiry(e, &zone);
        }
        self.queue(&zone);
    }

    /// Adds `zone`'s expiry at `at`. Each success pushes one and the one
    /// before goes stale (it is dropped only when it comes up, days later):
    /// when stale entries outnumber the zones, the heap is made anew from
    /// the zones' own expiries (10^5 zones refreshed hourly would otherwise
    /// pile up 10^5 entries an hour until the first SOA expire).
    fn push_expiry(&mut self, at: Instant, zone: &Name) {
        self.expiries.push(Reverse((at, zone.clone())));
        if self.expiries.len() > 2 * self.zones.len() + 1024 {
            self.expiries = self
                .zones
                .iter()
                .filter(|(_, z)| !z.expired)
                .filter_map(|(n, z)| Some(Reverse((z.expire_at?, n.clone()))))
                .collect();
        }
    }

    /// Expiry entries held (live and stale), for bounds checks.
    pub fn expiries_held(&self) -> usize {
        self.expiries.len()
    }

    /// Stops refreshing `zone` (a refresh running goes on; its outcome is
    /// then ignored).
    pub fn remove(&mut self, zone: &Name) {
        if let Some(z) = self.zones.remove(zone) {
            if z.running {
                self.finish_running(z.primary);
            }
        }
    }

    /// The zone's primaries changed; `primary` is its first now.
    pub fn set_primary(&mut self, zone: &Name, primary: Option<SocketAddr>) {
        let Some(z) = self.zones.get_mut(zone) else {
            return;
        };
        if z.running {
            // Counted against the old one until it ends.
            let old = std::mem::replace(&mut z.primary, primary);
            if let Some(a) = old {
                release(&mut self.per_primary, a);
            }
            if let Some(a) = primary {
                *self.per_primary.entry(a).or_insert(0) += 1;
            }
        } else {
            z.primary = primary;
        }
        self.queue(zone);
    }

    /// A NOTIFY for `zone` was accepted, announcing `announced` (when it
    /// carried an SOA) while the zone serves `served`.
    pub fn notify(
        &mut self,
        zone: &Name,
        announced: Option<u32>,
        served: Option<u32>,
        now: Instant,
    ) {
        let Some(z) = self.zones.get_mut(zone) else {
            return;
        };
        if let (Some(a), Some(s), false) = (announced, served, z.axfr_next) {
            let report = match notify_asks(a, s) {
                NotifyAsks::Nothing => {
                    self.actions.push_back(Action::Report(Report::NotifyServed {
                        zone: zone.clone(),
                        serial: s,
                    }));
                    return;
                }
                NotifyAsks::Refresh => None,
                NotifyAsks::Older => Some(Report::NotifyOlder {
                    zone: zone.clone(),
                    announced: a,
                    served: s,
                }),
            };
            if let Some(r) = report {
                self.actions.push_back(Action::Report(r));
            }
        }
        self.now_or_after(zone, false, now);
    }

    /// A refresh of `zone` is asked for (`lode zone-refresh`; a whole
    /// transfer when `axfr`: `lode zone-retransfer`): it runs even when
    /// the zone is frozen.
    pub fn refresh(&mut self, zone: &Name, axfr: bool, now: Instant) {
        if let Some(z) = self.zones.get_mut(zone) {
            z.forced = true;
        }
        self.now_or_after(zone, axfr, now);
    }

    /// Freezes `zone` (`true`) or thaws it: see the module note. False
    /// when it is not a secondary here.
    pub fn set_frozen(&mut self, zone: &Name, frozen: bool) -> bool {
        let Some(z) = self.zones.get_mut(zone) else {
            return false;
        };
        let thawed = z.frozen && !frozen;
        z.frozen = frozen;
        if thawed {
            // Its queue entry was dropped if it fell due while frozen.
            self.queue(zone);
        }
        true
    }

    /// Due now, or right after the refresh running. The timers kept say
    /// so at once: a secondary that stops before the refresh is done (a
    /// crash with the transfer in flight) refreshes when it starts again,
    /// rather than at its SOA refresh (the NOTIFY that asked for it was
    /// answered, and is not sent again).
    fn now_or_after(&mut self, zone: &Name, axfr: bool, now: Instant) {
        let Some(z) = self.zones.get_mut(zone) else {
            return;
        };
        if z.running {
            z.again = Some(z.again.unwrap_or(false) || axfr);
        } else {
            z.axfr_next |= axfr;
            z.next = now;
        }
        self.actions.push_back(Action::Timers {
            zone: zone.clone(),
            next: now,
            expire: z.expire_at,
            last: z.last,
        });
        if !z.running {
            self.queue(zone);
        }
    }

    /// Puts the zone in its primary's queue at its next refresh (when it is
    /// not refreshing).
    fn queue(&mut self, zone: &Name) {
        if let Some(z) = self.zones.get(zone).filter(|z| !z.running) {
            self.queues
                .entry(z.primary)
                .or_default()
                .push(Reverse((z.next, zone.clone())));
        }
    }

    fn primary_has_room(&self, primary: Option<SocketAddr>) -> bool {
        primary.is_none_or(|a| {
            self.per_primary
                .get(&a)
                .is_none_or(|&n| n < MAX_PER_PRIMARY)
        })
    }

    /// When [`Refresher::handle_timeout`] is next due: the soonest zone due
    /// whose refresh could start then (none while every refresh slot, or
    /// its primary's, is taken: a refresh ending is an event), or the
    /// soonest expiry.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let full = self.refreshing >= MAX_REFRESHES;
        let due = self
            .queues
            .iter()
            .filter(|(p, _)| !full && self.primary_has_room(**p))
            .filter_map(|(_, q)| q.peek())
            .map(|Reverse((at, _))| *at);
        let expiry = self.expiries.peek().map(|Reverse((at, _))| *at);
        due.chain(expiry).min()
    }

    /// Expires the zones past their expiry and starts the refreshes due
    /// at `now`: the longest overdue of each primary first, as many as
    /// there is room for; stale queue entries dropped on the way.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(Reverse((at, zone))) = self.expiries.peek().cloned() {
            if at > now {
                break;
            }
            self.expiries.pop();
            let Some(z) = self.zones.get_mut(&zone) else {
                continue;
            };
            if z.expired || z.expire_at != Some(at) {
                continue;
            }
            z.expired = true;
            self.actions.push_back(Action::Expire { zone });
        }
        let mut room = MAX_REFRESHES.saturating_sub(self.refreshing);
        let mut due: Vec<Name> = Vec::new();
        let mut primaries: Vec<Option<SocketAddr>> = self.queues.keys().copied().collect();
        primaries.sort();
        for primary in primaries {
            let running = primary.and_then(|a| self.per_primary.get(&a).copied());
            let mut left = match primary {
                Some(_) => MAX_PER_PRIMARY.saturating_sub(running.unwrap_or(0)),
                None => usize::MAX,
            };
            let Some(queue) = self.queues.get_mut(&primary) else {
                continue;
            };
            while room > 0 && left > 0 {
                match queue.peek() {
                    Some(Reverse((at, _))) if *at <= now => {}
                    _ => break,
                }
                let Some(Reverse((at, zone))) = queue.pop() else {
                    break;
                };
                // A frozen zone's entry is dropped; thawing queues it again.
                let current = self.zones.get(&zone).is_some_and(|z| {
                    !z.running && z.next == at && z.primary == primary && (!z.frozen || z.forced)
                });
                if current && !due.contains(&zone) {
                    due.push(zone);
                    room -= 1;
                    left -= 1;
                }
            }
            if queue.is_empty() {
                self.queues.remove(&primary);
            }
        }
        for zone in due {
            let Some(z) = self.zones.get_mut(&zone) else {
                continue;
            };
            z.running = true;
            z.forced = false;
            let axfr = std::mem::take(&mut z.axfr_next);
            if let Some(a) = z.primary {
                *self.per_primary.entry(a).or_insert(0) += 1;
            }
            self.refreshing += 1;
            self.actions.push_back(Action::Refresh { zone, axfr });
        }
    }

    fn finish_running(&mut self, primary: Option<SocketAddr>) {
        self.refreshing = self.refreshing.saturating_sub(1);
        if let Some(a) = primary {
            release(&mut self.per_primary, a);
        }
    }

    /// The refresh of `zone` started by [`Action::Refresh`] ended.
    pub fn done(&mut self, zone: &Name, outcome: Outcome, now: Instant) {
        let Some(z) = self.zones.get_mut(zone) else {
            return;
        };
        if !z.running {
            return;
        }
        z.running = false;
        let primary = z.primary;
        let mut new_expiry = None;
        match outcome {
            Outcome::Current {
                refresh,
                retry,
                expire,
            } => {
                z.retry = retry;
                z.next = now + refresh;
                z.expire_at = Some(now + expire);
                z.expired = false;
                z.last = Some(now);
                new_expiry = Some(now + expire);
                self.actions
                    .push_back(Action::Refreshed { zone: zone.clone() });
            }
            Outcome::Failed(why) => {
                z.next = now + z.retry;
                self.actions.push_back(Action::Report(Report::Failed {
                    zone: zone.clone(),
                    why,
                    retry: z.retry,
                }));
            }
        }
        if let Some(axfr) = z.again.take() {
            z.axfr_next |= axfr;
            z.next = now;
        }
        // Kept as they stand: a refresh asked for meanwhile (a NOTIFY) is
        // due now, after a restart too.
        self.actions.push_back(Action::Timers {
            zone: zone.clone(),
            next: z.next,
            expire: z.expire_at,
            last: z.last,
        });
        self.finish_running(primary);
        if let Some(at) = new_expiry {
            self.push_expiry(at, zone);
        }
        self.queue(zone);
    }
}

fn release(per_primary: &mut HashMap<SocketAddr, usize>, a: SocketAddr) {
    if let Some(n) = per_primary.get_mut(&a) {
        *n -= 1;
        if *n == 0 {
            per_primary.remove(&a);
        }
    }
}

#[cfg(test)]
mod tests;
