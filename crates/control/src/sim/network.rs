//! The simulated network (delays, loss, duplication, partitions) and the
//! secondaries' side of the fleet: their refresh machines restarted after a
//! crash, their actions performed, the datagrams they receive.

use std::time::Duration;

use super::{
    addr, below, chance, refresh, Body, Datagram, Event, Peer, Refresher, Sim, Start, EXPIRE,
    FETCH_TIMEOUT, KNOT_BUSY, KNOT_LATE, REFRESH, RETRY,
};

impl Sim {
    /// A secondary starts again: a new refresh machine, its zones' timers
    /// as it kept them (a zone it never got is refreshed at once).
    pub(super) fn restart(&mut self, k: usize) {
        let now = self.start + self.now;
        let s = &mut self.secondaries[k];
        s.up = true;
        s.refresher = Refresher::new();
        for (z, name) in s.zones.iter().zip(&self.names) {
            let start = match z.kept {
                Some((next, expire, last)) => Start {
                    primary: Some(addr(0)),
                    next: next.max(now),
                    expire,
                    last,
                    axfr: false,
                    retry: RETRY,
                },
                None => Start::empty(Some(addr(0)), now),
            };
            s.refresher.add(name, start);
        }
        self.note(format!("s{k} restarts"));
    }

    /// A secondary's refresh of `zone` ended with `outcome`.
    pub(super) fn refreshed(&mut self, k: usize, zone: usize, outcome: refresh::Outcome) {
        let now = self.start + self.now;
        let s = &mut self.secondaries[k];
        s.zones[zone].refreshing = None;
        s.refresher.done(&self.names[zone], outcome, now);
        self.secondary_actions(k);
        if self.secondaries[k].peer == Peer::Bind {
            self.bind_refreshed(k, zone);
        }
    }

    /// Performs a secondary's refresh machine's actions.
    pub(super) fn secondary_actions(&mut self, k: usize) {
        while let Some(a) = self.secondaries[k].refresher.poll_action() {
            let Some(z) = (match &a {
                refresh::Action::Refresh { zone, .. }
                | refresh::Action::Timers { zone, .. }
                | refresh::Action::Expire { zone }
                | refresh::Action::Refreshed { zone } => self.zone_index(zone),
                refresh::Action::Report(_) => None,
            }) else {
                self.note(format!("s{k}: {a:?}"));
                continue;
            };
            match a {
                refresh::Action::Refresh { .. } => {
                    self.tokens += 1;
                    let token = self.tokens;
                    self.secondaries[k].zones[z].refreshing = Some(token);
                    self.send(k + 1, 0, Body::Fetch { zone: z, token });
                    let t = self.now + FETCH_TIMEOUT;
                    self.at(
                        t,
                        Event::FetchTimeout {
                            secondary: k,
                            zone: z,
                            token,
                        },
                    );
                }
                refresh::Action::Timers {
                    next, expire, last, ..
                } => self.secondaries[k].zones[z].kept = Some((next, expire, last)),
                refresh::Action::Expire { .. } => {
                    self.secondaries[k].zones[z].expired = true;
                    self.note(format!("s{k}: {} expired", self.names[z]));
                }
                refresh::Action::Refreshed { .. } => {
                    self.secondaries[k].zones[z].expired = false;
                }
                refresh::Action::Report(_) => {}
            }
        }
    }

    /// Whether the network between the primary and secondary `k` is cut.
    pub(super) fn cut(&self, k: usize) -> bool {
        self.now < self.secondaries[k].cut_until
    }

    pub(super) fn send(&mut self, from: usize, to: usize, body: Body) {
        self.out.datagrams += 1;
        let secondary = from.max(to) - 1;
        let chaos = !self.calm();
        let what = format!("{from}→{to} {body:?}");
        if self.cut(secondary) || (chaos && chance(&mut self.rng, self.shape.loss)) {
            self.out.lost += 1;
            self.note(format!("{what} lost"));
            return;
        }
        let copies = if chaos && chance(&mut self.rng, self.shape.duplicate) {
            self.out.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            // 0.1-5 ms; in the chaos phase one in ten takes up to 3 s
            // (reordered behind later ones).
            let mut delay = Duration::from_micros(100 + below(&mut self.rng, 4_900));
            if chaos && below(&mut self.rng, 10) == 0 {
                delay += Duration::from_millis(below(&mut self.rng, 3_000));
            }
            let when = self.now + delay;
            let d = Datagram {
                from,
                to,
                body: body.clone(),
            };
            self.at(when, Event::Deliver(d));
        }
        self.note(what);
    }

    pub(super) fn deliver(&mut self, d: Datagram) {
        let now = self.start + self.now;
        if d.to == 0 {
            if !self.primary_up {
                return;
            }
            let from = addr(d.from);
            match d.body {
                Body::NotifyAnswer { id } => {
                    self.primary
                        .notify_answered(from, id, lode_wire::rcode::NOERROR, now);
                    self.primary_actions();
                }
                Body::SoaAnswer { zone, id, serial } => {
                    let name = self.names[zone].clone();
                    self.primary
                        .soa_answered(&name, from, id, Some(serial), now);
                    self.primary_actions();
                }
                Body::Fetch { zone, token } => {
                    let serial = self.serials[zone];
                    self.send(
                        0,
                        d.from,
                        Body::Fetched {
                            zone,
                            serial,
                            token,
                        },
                    );
                }
                _ => {}
            }
            return;
        }
        let k = d.to - 1;
        if !self.secondaries[k].up {
            return;
        }
        match d.body {
            Body::Notify { zone, id, serial } => {
                self.send(d.to, 0, Body::NotifyAnswer { id });
                let z = &self.secondaries[k].zones[zone];
                let busy = z
                    .took_at
                    .is_some_and(|t| self.now.saturating_sub(t) < KNOT_BUSY);
                if self.secondaries[k].peer == Peer::Bind {
                    self.bind_notify(k, zone, serial);
                    return;
                }
                if self.secondaries[k].peer == Peer::Knot && busy {
                    // Acknowledged, and left aside for a second.
                    self.out.left_aside += 1;
                    self.note(format!("s{k} leaves the NOTIFY of {serial} aside"));
                    let late = self.now + KNOT_LATE;
                    self.at(
                        late,
                        Event::LateNotify {
                            secondary: k,
                            zone,
                            serial,
                        },
                    );
                    return;
                }
                let taken = self.secondaries[k].zones[zone].taken;
                let name = self.names[zone].clone();
                self.secondaries[k]
                    .refresher
                    .notify(&name, Some(serial), Some(taken), now);
                self.secondary_actions(k);
            }
            Body::SoaQuery { zone, id } => {
                let serial = self.secondaries[k].zones[zone].served;
                self.send(d.to, 0, Body::SoaAnswer { zone, id, serial });
            }
            Body::Fetched {
                zone,
                serial,
                token,
            } => {
                let z = &self.secondaries[k].zones[zone];
                if z.refreshing != Some(token) {
                    return; // a duplicate, or the answer to a refresh given up
                }
                // The server's own choice: nothing to take unless newer.
                let step = refresh::first_step(false, Some(z.taken), Some(serial));
                if !matches!(step, refresh::Step::Transfer { .. }) {
                    let current = refresh::Outcome::Current {
                        refresh: REFRESH,
                        retry: RETRY,
                        expire: EXPIRE,
                    };
                    self.refreshed(k, zone, current);
                    return;
                }
                // Loading takes 1-30 ms.
                let when = self.now + Duration::from_millis(1 + below(&mut self.rng, 30));
                self.at(
                    when,
                    Event::Loaded {
                        secondary: k,
                        zone,
                        serial,
                        token,
                    },
                );
            }
            _ => {}
        }
    }
}
