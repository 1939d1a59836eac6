//! A deterministic simulator of a fleet: one primary driven by the real
//! [`NotifyOut`] machine and holding real zones (each update a transaction
//! of the zone-update stage, appended to the zone's real journal on a
//! simulated disk, answered only once the append returned; one zone signed
//! here in some runs), secondaries driven by the real [`Refresher`]
//! (NOTIFY answered and handed to it; its refreshes performed as a
//! transfer from the primary that takes a few ms to load; the SOA asked by
//! the primary answered; its timers kept across a crash and restored, as
//! the server keeps them in a file; some of them take a NOTIFY as Knot DNS,
//! BIND or NSD do: see [`Peer`]), update clients, all in simulated time
//! over a simulated network, from one seed.
//!
//! A run has two phases. In the **chaos** phase the network loses,
//! duplicates, delays and reorders datagrams, secondaries are cut off
//! (partitions) and crash and restart, the primary crashes and restarts —
//! some crashes in the middle of an update's journal write (torn, or
//! written and never synced) — and its disk fails (writes cut short by a
//! full disk, syncs and truncations failing). In the **calm** phase the
//! network delivers everything within a few milliseconds and nothing
//! crashes or fails. After every step the invariants are checked:
//!
//! - an update answered NOERROR is never lost: at every restart of the
//!   primary, its journal replays to a version that holds it;
//! - an update answered SERVFAIL (its journal write undone) never comes
//!   back; the journal replays to exactly the version published before
//!   the crash (or that and the update the crash came in, never answered);
//! - every published version of the signed zone validates;
//! - serials never go back, at a secondary or at the primary's restart;
//! - in the calm phase, every serial published reaches every secondary
//!   within [`NOTIFY_BOUND`] (NOTIFY-driven convergence: the SOA refresh
//!   is an hour, far beyond the run);
//! - no zone expires (its SOA expire is ten minutes; faults end sooner);
//! - at the end every secondary serves the primary's serial — unless the
//!   primary gave up notifying it of that serial (it was unreachable
//!   through every try, RFC 1996's retries): its SOA refresh, beyond the
//!   run, covers that, as with any primary;
//! - the machine tracks at most one NOTIFY and one hold per (zone, target),
//!   and sends no serial to a target more than its tries (no NOTIFY storm).
//!
//! The same seed gives the same run, step for step: the random numbers
//! come from one generator seeded with it (the disk's faults from one
//! seeded from it), the machines' decisions depend only on their inputs,
//! and the simulated clock starts at one instant and moves only by the
//! simulator. A violation reports the seed and the last steps of the run.
//!
//! Found by it, and fixed: a NOTIFY lost behind a given-up retry (seen by
//! 154 of 400 seeds before the fix); a journal whose undo of a failed
//! write failed refused every later update until the server restarted
//! (`lode_journal`: it now heals at the next write); a NOTIFY in flight at
//! a primary crash never sent again (the primary now keeps the serial
//! delivered to every target, [`Report::Delivered`], and notifies at its
//! start the zones whose serial was not, as Knot does); a secondary that
//! crashed with a transfer in flight after answering its NOTIFY stayed
//! stale until its SOA refresh (its kept timers now say a refresh is due
//! from the NOTIFY on); a secondary further than a few ms away never seen
//! to take a serial (each answer to the pacing's SOA questions came after
//! the next was asked, and only the last was matched), so every change was
//! held a second behind the previous one (seen once the simulated
//! secondaries were BIND- and NSD-like, with a test of the propagation
//! times of each kind: Lode's p99 was 75-118 ms, 40 ms now).
//!
//! [`Report::Delivered`]: crate::notify_out::Report::Delivered
//!
//! ```text
//!  seed ─▶ Pcg64 ─▶ fleet shape, fault schedule, update times, delays, losses, disk faults
//!  event queue (time, seq) ─▶ deliver a datagram │ a secondary's timer │ an update │ a fault
//!  primary: update ─▶ Stage txn ─▶ journal append (simulated disk) ─▶ answered ─▶ NotifyOut
//!           crash ─▶ journals dropped, disk cut ─▶ restart: journals replayed, checked
//!  after each step: invariants ─▶ Violation { seed, at, what, trace }
//! ```

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use lode_wire::serial::serial_lt;
use lode_wire::{Name, Record};
use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use crate::notify_out::{Action, NotifyOut};
use crate::refresh::{self, Refresher, Start};

mod disk;
mod network;
mod outcome;
mod peers;
mod primary;
mod scenario;

pub use outcome::{Outcome, Shape, Violation};
pub use peers::{Peer, BIND_PER_TICK, BIND_TICK, NSD_RELOAD};
pub use scenario::{Scenario, Step};

/// How soon, in the calm phase, a serial published must be served by every
/// secondary: a NOTIFY in flight's next retry (≤ 1 s after its first try),
/// a hold behind a secondary catching up (≤ 5 s), the transfer, and the
/// peer's own wait (BIND's limiter: ≤ 0.5 s; NSD's reload: ≤ 1 s).
pub const NOTIFY_BOUND: Duration = Duration::from_secs(10);

/// The zones' SOA refresh: far beyond a run, so that only NOTIFYs (and
/// the transfers they start) bring changes in time.
const REFRESH: Duration = Duration::from_secs(3600);
/// The zones' SOA retry.
const RETRY: Duration = Duration::from_secs(5);
/// The zones' SOA expire: beyond the chaos phase's longest fault.
const EXPIRE: Duration = Duration::from_secs(600);
/// A secondary's wait for a transfer's answer before the refresh fails
/// (the server's SOA query times out after 3 s).
const FETCH_TIMEOUT: Duration = Duration::from_secs(3);
/// Steps of the run kept for a report.
const TRACE: usize = 60;
/// A Knot-like secondary acknowledges a NOTIFY that comes within this long
/// after it took the previous change, and refreshes only [`KNOT_LATE`]
/// later (Knot DNS 3.2, as `lode-bench fleet` and its log showed it).
const KNOT_BUSY: Duration = Duration::from_millis(100);
/// See [`KNOT_BUSY`].
pub const KNOT_LATE: Duration = Duration::from_secs(1);

/// A datagram's contents.
#[derive(Debug, Clone)]
enum Body {
    Notify {
        zone: usize,
        id: u16,
        serial: u32,
    },
    NotifyAnswer {
        id: u16,
    },
    SoaQuery {
        zone: usize,
        id: u16,
    },
    SoaAnswer {
        zone: usize,
        id: u16,
        serial: u32,
    },
    /// A refresh's transfer asked (a secondary to the primary); `token`
    /// names the refresh.
    Fetch {
        zone: usize,
        token: u64,
    },
    /// The transfer's outcome: the primary's serial then.
    Fetched {
        zone: usize,
        serial: u32,
        token: u64,
    },
}

/// Node 0 is the primary; secondary `k` is node `k + 1`.
#[derive(Debug, Clone)]
struct Datagram {
    from: usize,
    to: usize,
    body: Body,
}

#[derive(Debug, Clone)]
enum Event {
    Deliver(Datagram),
    Update {
        zone: usize,
    },
    Crash {
        secondary: usize,
        down: Duration,
    },
    Restart {
        secondary: usize,
    },
    Partition {
        secondary: usize,
        until: Duration,
    },
    /// A secondary's transfer loaded (stale unless `token` is the
    /// refresh in flight).
    Loaded {
        secondary: usize,
        zone: usize,
        serial: u32,
        token: u64,
    },
    FetchTimeout {
        secondary: usize,
        zone: usize,
        token: u64,
    },
    /// The primary crashes, in the middle of an update's journal write
    /// when `during` says how.
    PrimaryCrash {
        down: Duration,
        during: Option<disk::Crash>,
    },
    PrimaryRestart,
    /// A NOTIFY a Knot-like secondary left aside, taken now.
    LateNotify {
        secondary: usize,
        zone: usize,
        serial: u32,
    },
    /// A tick of a BIND-like secondary's refresh rate limiter.
    RateTick {
        secondary: usize,
        epoch: u64,
    },
    /// An NSD-like secondary's reload.
    Reload {
        secondary: usize,
        epoch: u64,
    },
}

/// One zone of a secondary.
#[derive(Debug, Clone, Default)]
struct SecondaryZone {
    /// The serial its clients get.
    served: u32,
    /// The serial it took (NSD: served at its next reload; others: the
    /// served one).
    taken: u32,
    /// BIND: its refresh waits in the rate limiter.
    queued: bool,
    /// BIND: a NOTIFY came during its refresh; another follows.
    need: bool,
    /// The refresh in flight (its token), if one is.
    refreshing: Option<u64>,
    /// Its timers as last kept: (next, expire, last).
    kept: Option<(Instant, Option<Instant>, Option<Instant>)>,
    expired: bool,
    /// When it last took a change (simulated time).
    took_at: Option<Duration>,
}

#[derive(Debug)]
struct Secondary {
    up: bool,
    /// Which server it behaves as with a NOTIFY.
    peer: Peer,
    refresher: Refresher,
    /// BIND's refresh rate limiter.
    limiter: peers::Limiter,
    /// NSD's reloads.
    reloads: peers::Reloads,
    zones: Vec<SecondaryZone>,
    /// Cut off from the primary until then (simulated time from the start).
    cut_until: Duration,
}

/// A running simulation.
struct Sim {
    seed: u64,
    rng: Pcg64,
    shape: Shape,
    start: Instant,
    now: Duration,
    seq: u64,
    queue: BinaryHeap<Reverse<(Duration, u64, usize)>>,
    /// Events by the index in the queue's entries (kept apart so that the
    /// heap orders only by time and sequence).
    events: Vec<Option<Event>>,
    primary: NotifyOut,
    primary_up: bool,
    /// Per zone, the last serial the primary's machine reported delivered
    /// to every target (the server keeps it in a file).
    delivered: Vec<Option<u32>>,
    /// The primary's zones: stage, journal, disk.
    data: primary::Data,
    serials: Vec<u32>,
    names: Vec<Name>,
    secondaries: Vec<Secondary>,
    /// Per (secondary, zone): serials that must be served by a deadline.
    owed: Vec<Vec<VecDeque<(u32, Duration)>>>,
    trace: VecDeque<String>,
    /// Every step printed as it is taken (`LODE_SIM_TRACE`).
    print_trace: bool,
    /// The last refresh token given.
    tokens: u64,
    /// NOTIFYs sent per (zone, secondary, serial): at most the tries of
    /// one serial (no NOTIFY storm).
    notifies: std::collections::HashMap<(usize, usize, u32), u32>,
    /// The first NOTIFY storm seen, for the next check.
    storm: Option<String>,
    /// The first broken invariant of the primary's data, for the next check.
    invalid: Option<String>,
    /// (zone, secondary, serial) the primary gave up notifying.
    gave_up: std::collections::HashSet<(usize, usize, u32)>,
    /// Calm-phase propagation times, by kind of secondary.
    times: [Vec<Duration>; 4],
    out: Outcome,
}

/// Runs the simulation of `seed` to its end or its first violation: its
/// shape, updates and faults drawn from the seed.
pub fn run(seed: u64) -> Outcome {
    let mut rng = Pcg64::seed_from_u64(seed);
    let shape = Shape::draw(&mut rng);
    let mut sim = Sim::new(seed, rng, shape);
    sim.schedule_random();
    sim.run();
    sim.out
}

/// The 99th percentile (nearest rank) of `v`.
/// The `pct` percentile of `v` (nearest rank).
fn percentile(v: &mut [Duration], pct: usize) -> Option<Duration> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let rank = (v.len() * pct).div_ceil(100).max(1);
    Some(v[rank - 1])
}

/// A uniform number in `0..n`.
fn below(rng: &mut Pcg64, n: u64) -> u64 {
    rng.next_u64() % n.max(1)
}

/// True with probability `p`.
fn chance(rng: &mut Pcg64, p: f64) -> bool {
    p > 0.0 && ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
}

fn addr(node: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 1 + node as u8], 53))
}

fn node_of(a: SocketAddr) -> Option<usize> {
    match a.ip() {
        std::net::IpAddr::V4(v4) => Some(usize::from(v4.octets()[3]).checked_sub(1)?),
        std::net::IpAddr::V6(_) => None,
    }
}

/// An SOA record of `zone` with `serial` (only the serial is read).
fn soa(zone: &Name, serial: u32) -> Record {
    let mut rdata = vec![0, 0];
    rdata.extend_from_slice(&serial.to_be_bytes());
    rdata.extend_from_slice(&[0; 16]);
    Record {
        owner: zone.clone(),
        class: lode_wire::Class::IN,
        rtype: lode_wire::Rtype::SOA,
        ttl: 3600,
        rdata: rdata.into(),
    }
}

impl Sim {
    fn new(seed: u64, mut rng: Pcg64, shape: Shape) -> Sim {
        let names: Vec<Name> = (0..shape.zones)
            .map(|z| format!("z{z}.example.").parse().expect("a valid zone name"))
            .collect();
        let start = Instant::now();
        let secondaries = (0..shape.secondaries)
            .map(|k| {
                let mut refresher = Refresher::new();
                for name in &names {
                    refresher.add(name, Start::empty(Some(addr(0)), start));
                }
                Secondary {
                    up: true,
                    peer: shape.peers.get(k).copied().unwrap_or(Peer::Lode),
                    refresher,
                    limiter: peers::Limiter::default(),
                    reloads: peers::Reloads::default(),
                    zones: vec![SecondaryZone::default(); shape.zones],
                    cut_until: Duration::ZERO,
                }
            })
            .collect();
        let first_id = (rng.next_u64() & 0xFFFF) as u16;
        let disk = disk::Disk::new(Pcg64::seed_from_u64(rng.next_u64()), shape.disk_faults);
        let data = primary::Data::new(seed, &names, shape.signed, disk);
        let serials = (0..shape.zones).map(|z| data.serial(z)).collect();
        Sim {
            seed,
            rng,
            start,
            now: Duration::ZERO,
            seq: 0,
            queue: BinaryHeap::new(),
            events: Vec::new(),
            primary: NotifyOut::new(first_id),
            primary_up: true,
            delivered: vec![None; shape.zones],
            data,
            serials,
            names,
            secondaries,
            owed: vec![vec![VecDeque::new(); shape.zones]; shape.secondaries],
            trace: VecDeque::new(),
            print_trace: std::env::var_os("LODE_SIM_TRACE").is_some(),
            tokens: 0,
            notifies: std::collections::HashMap::new(),
            storm: None,
            invalid: None,
            gave_up: std::collections::HashSet::new(),
            times: Default::default(),
            out: Outcome {
                seed,
                ..Outcome::default()
            },
            shape,
        }
    }

    fn at(&mut self, when: Duration, e: Event) {
        self.seq += 1;
        self.events.push(Some(e));
        self.queue
            .push(Reverse((when, self.seq, self.events.len() - 1)));
    }

    fn note(&mut self, line: String) {
        if self.trace.len() == TRACE {
            self.trace.pop_front();
        }
        let line = format!("{:9.3} s  {line}", self.now.as_secs_f64());
        if self.print_trace {
            eprintln!("{line}");
        }
        self.trace.push_back(line);
    }

    /// Updates through both phases (none in the last stretch of the calm
    /// one, so that the last can arrive), the chaos phase's faults.
    fn schedule_random(&mut self) {
        let end = self.shape.chaos + self.shape.calm;
        let last_update = end.saturating_sub(NOTIFY_BOUND + Duration::from_secs(2));
        let mut t = Duration::ZERO;
        let mean = self.shape.update_gap.as_millis() as u64;
        loop {
            t += Duration::from_millis(1 + below(&mut self.rng, 2 * mean));
            if t > last_update {
                break;
            }
            let zone = below(&mut self.rng, self.shape.zones as u64) as usize;
            self.at(t, Event::Update { zone });
        }
        let chaos_ms = self.shape.chaos.as_millis() as u64;
        if self.shape.primary_crashes {
            for _ in 0..1 + below(&mut self.rng, 2) {
                let at = Duration::from_millis(below(&mut self.rng, chaos_ms));
                let down = Duration::from_millis(200 + below(&mut self.rng, 20_000));
                let down = down.min(self.shape.chaos.saturating_sub(at));
                let during = match below(&mut self.rng, 3) {
                    0 => Some(disk::Crash::Torn),
                    1 => Some(disk::Crash::Unsynced),
                    _ => None,
                };
                self.at(at, Event::PrimaryCrash { down, during });
            }
        }
        for k in 0..self.shape.secondaries {
            for _ in 0..below(&mut self.rng, 3) {
                let at = Duration::from_millis(below(&mut self.rng, chaos_ms));
                let down = Duration::from_millis(500 + below(&mut self.rng, 40_000));
                // Back before the calm phase starts.
                let down = down.min(self.shape.chaos.saturating_sub(at));
                self.at(at, Event::Crash { secondary: k, down });
            }
            for _ in 0..below(&mut self.rng, 3) {
                let at = Duration::from_millis(below(&mut self.rng, chaos_ms));
                let until = (at + Duration::from_millis(below(&mut self.rng, 30_000)))
                    .min(self.shape.chaos);
                self.at(
                    at,
                    Event::Partition {
                        secondary: k,
                        until,
                    },
                );
            }
        }
    }

    fn calm(&self) -> bool {
        self.now >= self.shape.chaos
    }

    fn run(&mut self) {
        let end = self.shape.chaos + self.shape.calm;
        self.primary_started();
        loop {
            let next_event = self.queue.peek().map(|Reverse((t, _, _))| *t);
            let next_timeout = self
                .primary
                .poll_timeout()
                .filter(|_| self.primary_up)
                .map(|t| t.saturating_duration_since(self.start));
            // The secondaries' refresh machines (the soonest, lowest index first).
            let secondary_timeout = (0..self.secondaries.len())
                .filter(|&k| self.secondaries[k].up)
                .filter_map(|k| {
                    let t = self.secondaries[k].refresher.poll_timeout()?;
                    Some((t.saturating_duration_since(self.start), k))
                })
                .min();
            let next = [next_event, next_timeout, secondary_timeout.map(|(t, _)| t)]
                .into_iter()
                .flatten()
                .min();
            let Some(next) = next else {
                break;
            };
            if next > end {
                break;
            }
            self.now = self.now.max(next);
            self.out.steps += 1;
            self.data.disk.set_faults(!self.calm());
            let now = self.start + self.now;
            if next_timeout.is_some_and(|t| t <= next) {
                self.primary.handle_timeout(now);
                self.primary_actions();
            } else if let Some((_, k)) = secondary_timeout.filter(|(t, _)| *t <= next) {
                self.secondaries[k].refresher.handle_timeout(now);
                self.secondary_actions(k);
            } else if let Some(Reverse((_, _, i))) = self.queue.pop() {
                if let Some(e) = self.events[i].take() {
                    self.step(e);
                }
            }
            if let Some(what) = self.check() {
                self.violate(what);
                return;
            }
        }
        self.now = end;
        self.out.simulated = end;
        self.out.disk_faults = self.data.disk.injected();
        self.out.validated = self.data.validated;
        for (k, times) in self.times.iter_mut().enumerate() {
            self.out.p50[k] = percentile(times, 50);
            self.out.p99[k] = percentile(times, 99);
        }
        for k in 0..self.shape.secondaries {
            for z in 0..self.shape.zones {
                let served = self.secondaries[k].zones[z].served;
                if served != self.serials[z] && self.gave_up.contains(&(z, k, self.serials[z])) {
                    self.out.left_to_refresh += 1;
                    continue;
                }
                if served != self.serials[z] {
                    let what = format!(
                        "at the end, secondary s{k} serves serial {served} of {}, the primary {}",
                        self.names[z], self.serials[z]
                    );
                    self.violate(what);
                    return;
                }
            }
        }
    }

    fn violate(&mut self, what: String) {
        self.out.simulated = self.now;
        self.out.violation = Some(Violation {
            seed: self.seed,
            at: self.now,
            what,
            trace: self.trace.iter().cloned().collect(),
        });
    }

    /// The invariants that hold after every step; the first broken one.
    fn check(&mut self) -> Option<String> {
        for k in 0..self.shape.secondaries {
            for z in 0..self.shape.zones {
                let served = self.secondaries[k].zones[z].served;
                let owed = &mut self.owed[k][z];
                while let Some((_, deadline)) = owed
                    .front()
                    .copied()
                    .filter(|(s, _)| *s == served || serial_lt(*s, served))
                {
                    owed.pop_front();
                    let took = self.now.saturating_sub(deadline - NOTIFY_BOUND);
                    self.times[self.secondaries[k].peer.index()].push(took);
                }
                if let Some((s, deadline)) = owed.front() {
                    if self.now > *deadline {
                        return Some(format!(
                            "secondary s{k} serves serial {served} of {}, {:.3} s after serial {s} was published (bound {} s)",
                            self.names[z],
                            (self.now - *deadline + NOTIFY_BOUND).as_secs_f64(),
                            NOTIFY_BOUND.as_secs()
                        ));
                    }
                }
            }
        }
        for (k, s) in self.secondaries.iter().enumerate() {
            if let Some(z) = s.zones.iter().position(|z| z.expired) {
                return Some(format!("secondary s{k}: zone {} expired", self.names[z]));
            }
        }
        if let Some(storm) = self.storm.take() {
            return Some(storm);
        }
        if let Some(invalid) = self.invalid.take() {
            return Some(invalid);
        }
        let most = self.shape.zones * self.shape.secondaries;
        let tracked = self.primary.tracked();
        if tracked.0 > most || tracked.1 > most {
            return Some(format!(
                "the NOTIFY machine tracks {} NOTIFYs and {} holds for {most} targets",
                tracked.0, tracked.1
            ));
        }
        None
    }

    fn step(&mut self, e: Event) {
        match e {
            Event::Update { zone } => {
                if !self.primary_up {
                    self.note(format!(
                        "update of {}: the primary is down",
                        self.names[zone]
                    ));
                    return;
                }
                let now_secs = self.now.as_secs();
                let serial = match self.data.update(zone, now_secs) {
                    primary::Updated::Acked(serial) => serial,
                    primary::Updated::Refused(why) => {
                        self.out.refused += 1;
                        if why.starts_with("INVALID") {
                            self.invalid = Some(format!(
                                "{}: a published signed version does not validate: {why}",
                                self.names[zone]
                            ));
                        }
                        self.note(format!("update of {}: SERVFAIL ({why})", self.names[zone]));
                        return;
                    }
                };
                self.out.acked += 1;
                self.serials[zone] = serial;
                self.out.updates += 1;
                self.note(format!("update: {} serial {serial}", self.names[zone]));
                if self.calm() {
                    for k in 0..self.shape.secondaries {
                        self.owed[k][zone].push_back((serial, self.now + NOTIFY_BOUND));
                    }
                }
                self.announce(zone);
            }
            Event::PrimaryCrash { down, during } => {
                if !self.primary_up {
                    return;
                }
                if let Some(how) = during {
                    // An update whose journal write the crash cuts: never
                    // answered.
                    self.data.disk.arm(how);
                    let zone = below(&mut self.rng, self.shape.zones as u64) as usize;
                    let _ = self.data.update(zone, self.now.as_secs());
                    self.note(format!(
                        "primary crashes in an update of {} ({how:?})",
                        self.names[zone]
                    ));
                }
                self.data.crash();
                self.primary_up = false;
                self.out.primary_crashes += 1;
                self.note(format!("primary crashes for {:.1} s", down.as_secs_f64()));
                let back = self.now + down;
                self.at(back, Event::PrimaryRestart);
            }
            Event::LateNotify {
                secondary,
                zone,
                serial,
            } => {
                if !self.secondaries[secondary].up {
                    return;
                }
                let now = self.start + self.now;
                let taken = self.secondaries[secondary].zones[zone].taken;
                let name = self.names[zone].clone();
                self.secondaries[secondary]
                    .refresher
                    .notify(&name, Some(serial), Some(taken), now);
                self.secondary_actions(secondary);
            }
            Event::PrimaryRestart => {
                // (A disk that fails while the journals are read again is
                // a start that fails: not this simulation's subject.)
                self.data.disk.set_faults(false);
                let restarted = self.data.restart();
                self.data.disk.set_faults(!self.calm());
                if let Err(e) = restarted {
                    self.invalid = Some(e);
                    return;
                }
                self.primary_up = true;
                // Its NOTIFY machine starts afresh (nothing of it is kept).
                let id = (self.rng.next_u64() & 0xFFFF) as u16;
                self.primary = NotifyOut::new(id);
                // Its tries count afresh.
                self.notifies.clear();
                for z in 0..self.shape.zones {
                    let serial = self.data.serial(z);
                    if serial_lt(serial, self.serials[z]) {
                        self.invalid = Some(format!(
                            "{}: the primary serves serial {serial} after its restart, {} before",
                            self.names[z], self.serials[z]
                        ));
                        return;
                    }
                    self.serials[z] = serial;
                }
                self.note("primary restarts, journals replayed".into());
                self.primary_started();
            }
            Event::Deliver(d) => self.deliver(d),
            Event::RateTick { secondary, epoch } => self.rate_tick(secondary, epoch),
            Event::Reload { secondary, epoch } => self.nsd_reload(secondary, epoch),
            Event::Crash { secondary, down } => {
                let s = &mut self.secondaries[secondary];
                if !s.up {
                    return;
                }
                s.up = false;
                for z in &mut s.zones {
                    z.refreshing = None;
                }
                self.peer_crashed(secondary);
                self.out.crashes += 1;
                self.note(format!(
                    "s{secondary} crashes for {:.1} s",
                    down.as_secs_f64()
                ));
                let back = self.now + down;
                self.at(back, Event::Restart { secondary });
            }
            Event::Restart { secondary } => self.restart(secondary),
            Event::Partition { secondary, until } => {
                let s = &mut self.secondaries[secondary];
                s.cut_until = s.cut_until.max(until);
                self.out.partitions += 1;
                self.note(format!(
                    "s{secondary} cut off until {:.3} s",
                    until.as_secs_f64()
                ));
            }
            Event::Loaded {
                secondary,
                zone,
                serial,
                token,
            } => {
                let nsd = self.secondaries[secondary].peer == Peer::Nsd;
                let z = &mut self.secondaries[secondary].zones[zone];
                if z.refreshing != Some(token) {
                    return;
                }
                if serial_lt(z.taken, serial) {
                    z.taken = serial;
                }
                if !nsd {
                    z.served = z.taken;
                }
                z.took_at = Some(self.now);
                let taken = z.taken;
                self.note(format!(
                    "s{secondary} {} {} serial {taken}",
                    if nsd { "took" } else { "serves" },
                    self.names[zone]
                ));
                if nsd {
                    self.nsd_took(secondary);
                }
                self.refreshed(
                    secondary,
                    zone,
                    refresh::Outcome::Current {
                        refresh: REFRESH,
                        retry: RETRY,
                        expire: EXPIRE,
                    },
                );
            }
            Event::FetchTimeout {
                secondary,
                zone,
                token,
            } => {
                if self.secondaries[secondary].zones[zone].refreshing == Some(token) {
                    let failed = refresh::Outcome::Failed("no answer".into());
                    self.refreshed(secondary, zone, failed);
                }
            }
        }
    }

    /// Tells the primary's NOTIFY machine of zone `zone`'s serial.
    fn announce(&mut self, zone: usize) {
        let targets: Vec<SocketAddr> = (0..self.shape.secondaries).map(|k| addr(k + 1)).collect();
        let now = self.start + self.now;
        let record = soa(&self.names[zone], self.serials[zone]);
        self.primary
            .published(&self.names[zone], &record, &targets, Duration::ZERO, now);
        self.primary_actions();
    }

    /// What the primary does for its zones when it starts (again): each
    /// zone whose served serial was not delivered to every target before
    /// (as kept from the machine's reports) is notified, as the server
    /// does at its start.
    fn primary_started(&mut self) {
        for z in 0..self.shape.zones {
            if crate::notify_out::must_notify_at_start(self.serials[z], self.delivered[z]) {
                self.announce(z);
            }
        }
    }

    /// Sends the primary machine's actions as datagrams.
    fn primary_actions(&mut self) {
        while let Some(a) = self.primary.poll_action() {
            match a {
                Action::Notify { zone, to, id, soa } => {
                    let (Some(z), Some(to)) = (self.zone_index(&zone), node_of(to)) else {
                        continue;
                    };
                    let serial = lode_zonedb::soa_serial(&soa);
                    let sent = self.notifies.entry((z, to, serial)).or_default();
                    *sent += 1;
                    // Each serial: its tries, and as many again each time
                    // a stalled secondary is told of it again.
                    let most =
                        crate::notify_out::TRIES * (1 + u32::from(crate::notify_out::MAX_NUDGES));
                    if *sent > most && self.storm.is_none() {
                        self.storm = Some(format!(
                            "{sent} NOTIFYs of serial {serial} of {} to s{} (at most {most})",
                            self.names[z],
                            to - 1,
                        ));
                    }
                    self.send(
                        0,
                        to,
                        Body::Notify {
                            zone: z,
                            id,
                            serial,
                        },
                    );
                }
                Action::AskSoa { zone, to, id } => {
                    let (Some(z), Some(to)) = (self.zone_index(&zone), node_of(to)) else {
                        continue;
                    };
                    self.send(0, to, Body::SoaQuery { zone: z, id });
                }
                Action::Report(r) => {
                    if let crate::notify_out::Report::Delivered { zone, serial } = &r {
                        if let Some(z) = self.zone_index(zone) {
                            self.delivered[z] = Some(*serial);
                        }
                    }
                    if let crate::notify_out::Report::GaveUp { target, serial } = &r {
                        let k = node_of(target.1).and_then(|n| n.checked_sub(1));
                        if let (Some(z), Some(k)) = (self.zone_index(&target.0), k) {
                            self.gave_up.insert((z, k, *serial));
                        }
                    }
                    self.note(format!("primary: {r:?}"))
                }
            }
        }
    }

    fn zone_index(&self, zone: &Name) -> Option<usize> {
        self.names.iter().position(|n| n == zone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_replays_exactly() {
        for seed in [1, 2, 3] {
            let (a, b) = (run(seed), run(seed));
            assert_eq!(a.steps, b.steps);
            assert_eq!(a.datagrams, b.datagrams);
            assert_eq!(a.lost, b.lost);
            assert_eq!(
                a.violation.as_ref().map(|v| (v.at, v.trace.clone())),
                b.violation.as_ref().map(|v| (v.at, v.trace.clone()))
            );
        }
    }
}
