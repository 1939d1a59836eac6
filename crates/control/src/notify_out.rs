//! NOTIFY out (RFC 1996) as a state machine: when a zone's published serial
//! changes, each of its targets is sent a NOTIFY carrying the new SOA,
//! retried until it answers. A newer serial replaces a NOTIFY not yet sent,
//! is sent next when one awaits the answer to its first try — for
//! [`NEWER_WAITS`] at most (four of the target's round trips if longer):
//! then the first try counts as lost, as when the target was not listening
//! yet at a fleet's start — and is sent at once when one was retried (the
//! target did not answer for a second or more): each serial gets its own
//! tries, and none is given up with an older one. One NOTIFY is in flight
//! per (zone, target).
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
//! 4 ms (every 25 ms after the first 100 ms; never more often than the
//! NOTIFY's round trip, and an answer to any of these questions counts),
//! until it does. An idle
//! secondary is told at once; a busy one about once per transfer it
//! completes. Bounds: 5 s without reaching S (its transfer failed: tell it
//! anyway), 1 s when its SOA cannot be asked (refused, not authoritative,
//! or no answer at all for 100 ms). A secondary that acknowledged and shows
//! no sign of taking the serial within four times as long as it took to
//! take the last one (100 ms at least) is told again: the newer serial that
//! waits, or the same one (twice at most) — Knot DNS 3.2, told of a change
//! just after it took the previous one, answers and refreshes only about a
//! second later.
//!
//! ```text
//!  published(zone, soa, targets) ──▶ pending per (zone, target): due time, tries, message id
//!     Notify when due (after notify-delay) and not held, with AskSoa (what it serves before);
//!     resend after 1, 2, 4, 8 s, give up after 5 tries; a newer serial restarts the tries
//!     (at once when the older one was retried, after 250 ms when its first try is unanswered)
//!  notify_answered(NOERROR) ──▶ catching up (zone, target): serial S, what it served before
//!     a newer serial is held while catching up; AskSoa at 2 ms, then every 4 (later 25) ms
//!  soa_answered: serves S, newer, or a serial of its own after T ──▶ settled at 2T: the held
//!     serial is sent
//! ```
//!
//! **Delivered.** When every target of a zone's newest serial has answered
//! its NOTIFY (NOERROR), the machine reports [`Report::Delivered`]: the
//! runtime keeps that serial (as Knot keeps its last notified serial), and
//! a zone whose served serial was not delivered when the process stopped —
//! a crash with NOTIFYs in flight, a target that never answered — is
//! notified again when it starts ([`must_notify_at_start`]).
//!
//! The runtime owns the sockets, the keys (it signs what [`Action::Notify`]
//! asks it to send) and the clock: it calls [`NotifyOut::handle_timeout`]
//! at [`NotifyOut::poll_timeout`], feeds the answers it reads, and performs
//! the actions it takes with [`NotifyOut::poll_action`].

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use lode_wire::serial::serial_lt;
use lode_wire::{Name, Record};
use lode_zonedb::soa_serial;

/// Sends on the first try, then after 1, 2, 4 and 8 seconds.
pub const TRIES: u32 = 5;
/// The first retry's wait; each next one waits twice as long.
pub const FIRST_RETRY: Duration = Duration::from_secs(1);
/// How long a newer serial waits behind a first try that has not been
/// answered (or four round trips of the target, when it answered before and
/// that is longer; the first retry's wait at most). Sooner, a NOTIFY per
/// change would go to a secondary whose answer is only on its way; later, a
/// first try lost — the secondary was not listening yet, as a fleet starts
/// — would hold every newer change for the whole [`FIRST_RETRY`].
pub const NEWER_WAITS: Duration = Duration::from_millis(250);
/// The first SOA question to a secondary catching up, after its
/// acknowledgement; then one every [`PROBE_GAP`] for [`CLOSE_WATCH`]
/// (how long it took is how long the next serial waits after: measured to
/// a few ms), then every [`LATE_PROBE_GAP`].
pub const FIRST_PROBE: Duration = Duration::from_millis(2);
/// See [`FIRST_PROBE`].
pub const PROBE_GAP: Duration = Duration::from_millis(4);
/// See [`FIRST_PROBE`].
pub const CLOSE_WATCH: Duration = Duration::from_millis(100);
/// See [`FIRST_PROBE`].
pub const LATE_PROBE_GAP: Duration = Duration::from_millis(25);
/// How long a secondary may take to serve what it was told of before the
/// next change is sent to it anyway.
pub const CATCH_UP_LIMIT: Duration = Duration::from_secs(5);
/// A secondary that acknowledged a NOTIFY and shows no sign of taking it
/// for [`STALL_FACTOR`] × as long as it took to take the last one (at least
/// [`MIN_STALL`], at most [`CATCH_UP_LIMIT`]) is told again: the newer
/// serial that waits is sent, or the same one once more (Knot DNS 3.2,
/// told of a change while it finishes taking the previous one, may answer
/// the NOTIFY and refresh only a second later).
pub const STALL_FACTOR: u32 = 4;
/// See [`STALL_FACTOR`].
pub const MIN_STALL: Duration = Duration::from_millis(100);
/// The times a serial is told again that way.
pub const MAX_NUDGES: u8 = 2;
/// How long newer serials wait when the secondary's SOA cannot be asked
/// (Knot DNS 3.2 NOTIFYs about once a second while a zone changes).
pub const BLIND_HOLD: Duration = Duration::from_secs(1);
/// SOA questions asked at most per round; when more were due, the next
/// round waits [`ROUND_GAP`] (≤ 32,000 questions a second).
pub const PROBES_PER_ROUND: usize = 64;
/// See [`PROBES_PER_ROUND`].
pub const ROUND_GAP: Duration = Duration::from_millis(2);

/// A NOTIFY target of a zone: (zone origin, lower case; address).
pub type Target = (Name, SocketAddr);

/// What the runtime does for the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send a NOTIFY of `soa` for `zone` to `to` with message ID `id`
    /// (TSIG-signed when the target has a key). Its answer comes back as
    /// [`NotifyOut::notify_answered`].
    Notify {
        /// The zone.
        zone: Name,
        /// The target's address.
        to: SocketAddr,
        /// The message ID.
        id: u16,
        /// The SOA record to carry in the answer section.
        soa: Record,
    },
    /// Ask `to` for the SOA of `zone` over UDP (unsigned) with message ID
    /// `id`. Its answer comes back as [`NotifyOut::soa_answered`].
    AskSoa {
        /// The zone.
        zone: Name,
        /// The target's address.
        to: SocketAddr,
        /// The message ID.
        id: u16,
    },
    /// Something the operator may want to read in the log, or count.
    Report(Report),
}

/// What happened, for the log and the metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// The NOTIFY of `serial` was answered NOERROR, `took` after it was sent.
    Answered {
        /// Zone and target.
        target: Target,
        /// The serial it carried.
        serial: u32,
        /// From its (last) sending to the answer.
        took: Duration,
    },
    /// The NOTIFY of `serial` was answered with an error RCODE.
    Refused {
        /// Zone and target.
        target: Target,
        /// The serial it carried.
        serial: u32,
        /// The RCODE.
        rcode: u16,
    },
    /// No answer to the NOTIFY of `serial` after [`TRIES`] tries.
    GaveUp {
        /// Zone and target.
        target: Target,
        /// The serial it carried.
        serial: u32,
    },
    /// The NOTIFY of `serial` waits until the target serves `until`.
    Held {
        /// Zone and target.
        target: Target,
        /// The serial that waits.
        serial: u32,
        /// The serial it was told of last.
        until: u32,
    },
    /// The target serves `served`, `took` after it acknowledged `told`.
    CaughtUp {
        /// Zone and target.
        target: Target,
        /// What it serves.
        served: u32,
        /// What it was told of.
        told: u32,
        /// From its acknowledgement.
        took: Duration,
    },
    /// Every target of `zone` published with `serial` (its newest)
    /// answered its NOTIFY NOERROR.
    Delivered {
        /// The zone.
        zone: Name,
        /// The serial.
        serial: u32,
    },
    /// The target acknowledged `serial` and showed no sign of taking it
    /// for `after`: told of it again.
    ToldAgain {
        /// Zone and target.
        target: Target,
        /// The serial.
        serial: u32,
        /// Since it acknowledged.
        after: Duration,
    },
    /// The target was not seen serving `serial` within the limit: a
    /// newer serial is sent anyway.
    NotSeenServing {
        /// Zone and target.
        target: Target,
        /// What it was told of.
        serial: u32,
        /// Since it acknowledged.
        after: Duration,
    },
}

/// One NOTIFY on its way to one target.
#[derive(Debug)]
struct Pending {
    /// The SOA sent (or to send).
    soa: Record,
    /// A newer SOA that came while `soa` awaited the answer to its first
    /// try: sent next.
    newer: Option<Record>,
    id: u16,
    tries: u32,
    due: Instant,
    sent_at: Option<Instant>,
    /// The SOA question sent with it: what the secondary served before.
    before: Probe,
    /// Times this serial was told again to a secondary that stalled.
    nudges: u8,
}

impl Pending {
    fn new(soa: Record, due: Instant) -> Pending {
        Pending {
            soa,
            newer: None,
            id: 0,
            tries: 0,
            due,
            sent_at: None,
            before: Probe::default(),
            nudges: 0,
        }
    }
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
    /// The SOA it was told of (told again if it stalls).
    soa: Record,
    /// How long it may show no sign of taking it (see [`STALL_FACTOR`]).
    stall: Duration,
    /// Times this serial was told again already.
    nudges: u8,
    /// What it served when it was told (a secondary that signs, or has a
    /// serial policy of its own, serves a serial other than the primary's).
    before: Probe,
    /// When it acknowledged.
    since: Instant,
    /// How long the NOTIFY's answer took: questions go no more often (a
    /// secondary far away answers each after the next was asked).
    rtt: Duration,
    /// The first and last message IDs of the questions about its
    /// progress: an answer to any of them counts.
    asked: Option<(u16, u16)>,
    next_probe: Instant,
    /// Its SOA cannot be asked (an unusable answer, or none to any
    /// question for [`CLOSE_WATCH`]): newer serials wait [`BLIND_HOLD`].
    blind: bool,
    /// It answered one of the questions.
    answered: bool,
    /// It serves what it was told of; newer serials wait until then.
    settled: Option<Instant>,
}

impl CatchingUp {
    /// Whether serving `served` means it took what it was told of: that
    /// serial or a newer one, or one unrelated to ours (neither what it
    /// served before nor between that and ours: a serial of its own).
    fn reached(&self, served: u32) -> bool {
        if served == self.serial || serial_lt(self.serial, served) {
            return true;
        }
        self.before.serial.is_some_and(|b| {
            let on_the_way = serial_lt(b, served) && serial_lt(served, self.serial);
            b != served && !on_the_way
        })
    }

    /// Whether `id` is one of the questions about its progress.
    fn asked(&self, id: u16) -> bool {
        self.asked
            .is_some_and(|(first, last)| id.wrapping_sub(first) <= last.wrapping_sub(first))
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
        self.since + if self.blind { BLIND_HOLD } else { self.stall }
    }
}

/// The NOTIFYs of every zone to every target.
#[derive(Debug)]
pub struct NotifyOut {
    pending: HashMap<Target, Pending>,
    catching: HashMap<Target, CatchingUp>,
    /// No SOA questions before then (the last round was capped).
    next_round: Option<Instant>,
    next_id: u16,
    actions: VecDeque<Action>,
    /// Per zone: its newest serial published and the targets that have
    /// not answered it yet (`failed`: one refused it or was given up).
    delivery: HashMap<Name, Delivery>,
    /// Per secondary (its address, whatever the zone: one entry a server,
    /// not one per zone and server — 10^5 zones to one secondary keep one):
    /// how long it takes to take a change (the last, or more while an
    /// older, slower one fades: ¾ of it each time).
    paces: HashMap<SocketAddr, Duration>,
    /// Per secondary: the round trip of its last NOTIFY answered.
    rtts: HashMap<SocketAddr, Duration>,
}

/// A zone's newest serial on its way to its targets.
#[derive(Debug)]
struct Delivery {
    serial: u32,
    waiting: std::collections::HashSet<SocketAddr>,
    failed: bool,
}

/// Whether a zone serving `served` is to be notified when the process
/// starts: its last serial delivered to every target (kept by the runtime
/// from [`Report::Delivered`]) is another, or none was kept.
pub fn must_notify_at_start(served: u32, delivered: Option<u32>) -> bool {
    delivered != Some(served)
}

impl NotifyOut {
    /// A machine with nothing to send; message IDs start after `first_id`
    /// (the runtime passes a value that differs between runs).
    pub fn new(first_id: u16) -> NotifyOut {
        NotifyOut {
            pending: HashMap::new(),
            catching: HashMap::new(),
            next_round: None,
            next_id: first_id,
            actions: VecDeque::new(),
            delivery: HashMap::new(),
            paces: HashMap::new(),
            rtts: HashMap::new(),
        }
    }

    /// The next action to perform, in the order they were decided.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When [`NotifyOut::handle_timeout`] is next due (a NOTIFY or an SOA
    /// question to send, a hold ending); None when nothing waits.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let sends = self
            .pending
            .iter()
            .filter(|(k, _)| !self.catching.contains_key(*k))
            .map(|(_, p)| p.due);
        let holds = self.catching.values().map(|c| {
            if c.asking() {
                let round = self
                    .next_round
                    .map_or(c.next_probe, |r| c.next_probe.max(r));
                round.min(c.limit())
            } else {
                c.limit()
            }
        });
        sends.chain(holds).min()
    }

    /// Whether answers are awaited (the runtime reads its sockets while so).
    pub fn awaiting_answers(&self) -> bool {
        self.pending.values().any(|p| p.sent_at.is_some())
            || self
                .catching
                .values()
                .any(|c| c.asking() && c.asked.is_some())
    }

    /// The NOTIFYs pending and the secondaries held as catching up (for
    /// checks of bounds: at most one of each per target).
    pub fn tracked(&self) -> (usize, usize) {
        (self.pending.len(), self.catching.len())
    }

    /// `zone` now serves `soa`: each of `targets` is to be told, after
    /// `delay` (notify-delay).
    pub fn published(
        &mut self,
        zone: &Name,
        soa: &Record,
        targets: &[SocketAddr],
        delay: Duration,
        now: Instant,
    ) {
        let due = now + delay;
        let serial = soa_serial(soa);
        if targets.is_empty() {
            self.delivery.remove(zone);
        } else {
            self.delivery.insert(
                zone.clone(),
                Delivery {
                    serial,
                    waiting: targets.iter().copied().collect(),
                    failed: false,
                },
            );
        }
        for to in targets {
            let k = (zone.clone(), *to);
            match self.pending.get_mut(&k) {
                // Not sent yet (waiting out notify-delay or held): it sends the newest.
                Some(p) if p.sent_at.is_none() => p.soa = soa.clone(),
                // Its first try awaits the answer: the newer serial goes
                // next, once this one is answered (the pacing) or counted
                // lost (NEWER_WAITS, or four round trips: then retried).
                Some(p) if p.tries <= 1 => {
                    p.newer = Some(soa.clone());
                    if let Some(sent) = p.sent_at {
                        let rtt = self.rtts.get(to).copied().unwrap_or_default();
                        p.due = p.due.min(sent + NEWER_WAITS.max(rtt * 4));
                    }
                }
                // Retried already (no answer for a second or more, e.g. the
                // secondary was down): the newer serial replaces it, sent
                // now with tries of its own. Waiting out the backoff, or the
                // older serial's last tries, would leave a secondary that
                // came back stale until its SOA refresh.
                Some(p) => *p = Pending::new(soa.clone(), due),
                None => {
                    self.pending
                        .insert(k.clone(), Pending::new(soa.clone(), due));
                }
            }
            if let Some(c) = self.catching.get(&k) {
                self.actions.push_back(Action::Report(Report::Held {
                    serial: soa_serial(soa),
                    until: c.serial,
                    target: k,
                }));
            }
        }
    }

    /// Sends what is due at `now`: NOTIFYs and their retries, SOA
    /// questions to secondaries catching up; ends holds past their limit.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.release(now);
        self.send_due(now);
        self.probe_due(now);
    }

    /// Stops notifying `target` (the runtime could not send to it, e.g. a
    /// NOTIFY it could not sign).
    pub fn abandon(&mut self, target: &Target) {
        if let Some(p) = self.pending.remove(target) {
            self.settle(target, soa_serial(&p.soa), false);
        }
        self.catching.remove(target);
    }

    /// `target` is done with `serial` (answered NOERROR when `ok`): the
    /// zone's newest serial is delivered once every target answered it.
    fn settle(&mut self, target: &Target, serial: u32, ok: bool) {
        let (zone, addr) = target;
        let Some(d) = self.delivery.get_mut(zone) else {
            return;
        };
        if d.serial != serial || !d.waiting.remove(addr) {
            return;
        }
        d.failed |= !ok;
        if !d.waiting.is_empty() {
            return;
        }
        if let Some(d) = self.delivery.remove(zone) {
            if !d.failed {
                self.actions.push_back(Action::Report(Report::Delivered {
                    zone: zone.clone(),
                    serial: d.serial,
                }));
            }
        }
    }

    fn next_id(&mut self) -> u16 {
        self.next_id = self.next_id.wrapping_add(1);
        self.next_id
    }

    /// Ends the holds of secondaries past their limit (a held serial is
    /// then sent).
    fn release(&mut self, now: Instant) {
        let mut ended: Vec<Target> = self
            .catching
            .iter()
            .filter(|(_, c)| now >= c.limit())
            .map(|(k, _)| k.clone())
            .collect();
        ended.sort();
        for k in ended {
            let Some(c) = self.catching.remove(&k) else {
                continue;
            };
            if !c.asking() {
                continue;
            }
            if self.pending.contains_key(&k) {
                self.actions
                    .push_back(Action::Report(Report::NotSeenServing {
                        target: k,
                        serial: c.serial,
                        after: now.saturating_duration_since(c.since),
                    }));
            } else if c.nudges < MAX_NUDGES {
                // Nothing newer to send: the same serial once more.
                self.actions.push_back(Action::Report(Report::ToldAgain {
                    target: k.clone(),
                    serial: c.serial,
                    after: now.saturating_duration_since(c.since),
                }));
                let mut again = Pending::new(c.soa, now);
                again.nudges = c.nudges + 1;
                self.pending.insert(k, again);
            }
        }
    }

    fn send_due(&mut self, now: Instant) {
        let mut due: Vec<Target> = self
            .pending
            .iter()
            .filter(|(k, p)| p.due <= now && !self.catching.contains_key(*k))
            .map(|(k, _)| k.clone())
            .collect();
        // Deterministic order (a hash map's is not): by due time, then key.
        due.sort_by(|a, b| {
            let (pa, pb) = (&self.pending[a], &self.pending[b]);
            (pa.due, &a.0, a.1).cmp(&(pb.due, &b.0, b.1))
        });
        for k in due {
            let given_up = self
                .pending
                .get(&k)
                .filter(|p| p.tries >= TRIES)
                .map(|p| soa_serial(&p.soa));
            if let Some(serial) = given_up {
                self.actions.push_back(Action::Report(Report::GaveUp {
                    target: k.clone(),
                    serial,
                }));
                self.settle(&k, serial, false);
            }
            let Some(p) = self.pending.get_mut(&k) else {
                continue;
            };
            if given_up.is_some() {
                // A newer serial is never given up with an older one.
                match p.newer.take() {
                    Some(newer) => *p = Pending::new(newer, now),
                    None => {
                        self.pending.remove(&k);
                        continue;
                    }
                }
            }
            // A newer serial takes the older one's place with tries of its own.
            if let Some(newer) = p.newer.take() {
                *p = Pending::new(newer, now);
            }
            let first = p.tries == 0;
            let soa = p.soa.clone();
            if first {
                let id = self.next_id();
                self.actions.push_back(Action::AskSoa {
                    zone: k.0.clone(),
                    to: k.1,
                    id,
                });
                if let Some(p) = self.pending.get_mut(&k) {
                    p.before = Probe {
                        id: Some(id),
                        serial: None,
                    };
                }
            }
            let id = self.next_id();
            self.actions.push_back(Action::Notify {
                zone: k.0.clone(),
                to: k.1,
                id,
                soa,
            });
            if let Some(p) = self.pending.get_mut(&k) {
                p.id = id;
                p.tries += 1;
                p.sent_at = Some(now);
                p.due = now + FIRST_RETRY * (1 << (p.tries - 1));
            }
        }
    }

    /// Asks the secondaries catching up whether they serve what they were
    /// told of yet (also when no newer serial waits: how long they took is
    /// how long the next one waits after they did).
    fn probe_due(&mut self, now: Instant) {
        if self.next_round.is_some_and(|r| now < r) {
            return;
        }
        let mut due: Vec<(Instant, Target)> = self
            .catching
            .iter()
            .filter(|(_, c)| c.asking() && c.next_probe <= now)
            .map(|(k, c)| (c.next_probe, k.clone()))
            .collect();
        // The longest waiting first, and a bounded number a round: a change
        // of 10^5 zones must not become millions of questions a second (the
        // pacing then slows down instead: later answers, longer settles).
        // Selected in linear time, then ordered (keys are unique: the same
        // round whatever the map's order).
        if due.len() > PROBES_PER_ROUND {
            due.select_nth_unstable(PROBES_PER_ROUND);
            due.truncate(PROBES_PER_ROUND);
            self.next_round = Some(now + ROUND_GAP);
        }
        due.sort_unstable();
        for (_, k) in due {
            let Some(c) = self.catching.get(&k) else {
                continue;
            };
            // No answer to any question for a while: it cannot be asked.
            let waited = now.saturating_duration_since(c.since);
            if !c.answered && waited >= CLOSE_WATCH.max(c.rtt * STALL_FACTOR) {
                if let Some(c) = self.catching.get_mut(&k) {
                    c.blind = true;
                }
                continue;
            }
            let id = self.next_id();
            self.actions.push_back(Action::AskSoa {
                zone: k.0.clone(),
                to: k.1,
                id,
            });
            if let Some(c) = self.catching.get_mut(&k) {
                c.asked = Some((c.asked.map_or(id, |(first, _)| first), id));
                let close = waited < CLOSE_WATCH;
                let gap = if close { PROBE_GAP } else { LATE_PROBE_GAP };
                c.next_probe = now + gap.max(c.rtt);
            }
        }
    }

    /// The answer to a NOTIFY: message `id` from `from`, with `rcode`.
    /// Answers that match no NOTIFY in flight are ignored.
    pub fn notify_answered(&mut self, from: SocketAddr, id: u16, rcode: u16, now: Instant) {
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
        let serial = soa_serial(&p.soa);
        let rtt = p
            .sent_at
            .map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
        self.rtts.insert(k.1, rtt);
        if rcode == lode_wire::rcode::NOERROR {
            self.actions.push_back(Action::Report(Report::Answered {
                target: k.clone(),
                serial,
                took: rtt,
            }));
            let stall = self.paces.get(&k.1).map_or(CATCH_UP_LIMIT, |pace| {
                (*pace * STALL_FACTOR).clamp(MIN_STALL, CATCH_UP_LIMIT)
            });
            self.catching.insert(
                k.clone(),
                CatchingUp {
                    serial,
                    soa: p.soa.clone(),
                    stall,
                    nudges: p.nudges,
                    before: p.before,
                    since: now,
                    rtt,
                    asked: None,
                    next_probe: now + FIRST_PROBE,
                    blind: false,
                    answered: false,
                    settled: None,
                },
            );
            self.settle(&k, serial, true);
        } else {
            self.actions.push_back(Action::Report(Report::Refused {
                target: k.clone(),
                serial,
                rcode,
            }));
            self.settle(&k, serial, false);
        }
        if let Some(newer) = p.newer {
            self.pending.insert(k, Pending::new(newer, now));
        }
    }

    /// The answer to an SOA question about `zone`: message `id` from
    /// `from`; `served` is the serial it answered (None: refused, not
    /// authoritative, no SOA). Answers that match no question are ignored.
    pub fn soa_answered(
        &mut self,
        zone: &Name,
        from: SocketAddr,
        id: u16,
        served: Option<u32>,
        now: Instant,
    ) {
        let k = (zone.clone(), from);
        if let Some(p) = self.pending.get_mut(&k).filter(|p| p.before.id == Some(id)) {
            p.before.id = None;
            p.before.serial = served;
            return;
        }
        let Some(c) = self
            .catching
            .get_mut(&k)
            .filter(|c| c.before.id == Some(id) || c.asked(id))
        else {
            return;
        };
        c.answered = true;
        if c.before.id == Some(id) {
            c.before = Probe {
                id: None,
                serial: served,
            };
            return;
        }
        if c.settled.is_some() {
            return; // an answer to an earlier question: already caught up
        }
        let Some(served) = served else {
            // Refused, not authoritative, no SOA: it cannot be asked.
            c.blind = true;
            return;
        };
        if !c.reached(served) {
            return;
        }
        let took = now.saturating_duration_since(c.since);
        c.settled = Some(now + took);
        let told = c.serial;
        let pace = self.paces.entry(k.1).or_insert(took);
        *pace = took.max(*pace * 3 / 4);
        self.actions.push_back(Action::Report(Report::CaughtUp {
            target: k.clone(),
            served,
            told,
            took,
        }));
        // What waited may be what it took: nothing to tell it then.
        if self
            .pending
            .get(&k)
            .is_some_and(|p| p.sent_at.is_none() && soa_serial(&p.soa) == served)
        {
            self.pending.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests;
