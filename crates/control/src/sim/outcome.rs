//! What a run is drawn as ([`Shape`]), what it did ([`Outcome`]) and the
//! first invariant it broke ([`Violation`]).

use std::fmt;
use std::time::Duration;

use rand_pcg::Pcg64;

use super::{below, Peer};

/// The shape and faults of one run, drawn from its seed.
#[derive(Debug, Clone)]
pub struct Shape {
    /// Secondaries (1-4).
    pub secondaries: usize,
    /// Zones (1-3), each NOTIFYing every secondary.
    pub zones: usize,
    /// The fault phase.
    pub chaos: Duration,
    /// The healed phase after it.
    pub calm: Duration,
    /// Chance of a datagram lost in the chaos phase.
    pub loss: f64,
    /// Chance of a datagram delivered twice in the chaos phase.
    pub duplicate: f64,
    /// Mean time between updates (all zones together).
    pub update_gap: Duration,
    /// The primary crashes (and restarts) in the chaos phase.
    pub primary_crashes: bool,
    /// Chance of a disk fault (a write cut short, a sync or truncation
    /// failing) at each journal operation of the chaos phase.
    pub disk_faults: f64,
    /// The first zone is signed here (each version validated).
    pub signed: bool,
    /// Which server each secondary behaves as with a NOTIFY (Lode when
    /// not given).
    pub peers: Vec<Peer>,
}

impl Shape {
    pub(super) fn draw(rng: &mut Pcg64) -> Shape {
        Shape {
            secondaries: 1 + below(rng, 4) as usize,
            zones: 1 + below(rng, 3) as usize,
            chaos: Duration::from_secs(20 + below(rng, 60)),
            calm: Duration::from_secs(30 + below(rng, 30)),
            loss: [0.0, 0.05, 0.2, 0.5][below(rng, 4) as usize],
            duplicate: [0.0, 0.02, 0.1][below(rng, 3) as usize],
            update_gap: Duration::from_millis(50 + below(rng, 3000)),
            primary_crashes: below(rng, 2) == 0,
            disk_faults: [0.0, 0.0, 0.01, 0.1][below(rng, 4) as usize],
            signed: below(rng, 4) == 0,
            peers: (0..4)
                .map(|_| {
                    [Peer::Lode, Peer::Lode, Peer::Knot, Peer::Bind, Peer::Nsd]
                        [below(rng, 5) as usize]
                })
                .collect(),
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The seed it ran from.
    pub seed: u64,
    /// Simulated time covered.
    pub simulated: Duration,
    /// Steps taken.
    pub steps: u64,
    /// Serials published.
    pub updates: u64,
    /// Datagrams sent, lost and duplicated.
    pub datagrams: u64,
    /// Of them, lost.
    pub lost: u64,
    /// Of them, delivered twice.
    pub duplicated: u64,
    /// Secondaries crashed (and restarted).
    pub crashes: u64,
    /// Partitions between the primary and a secondary.
    pub partitions: u64,
    /// Primary crashes (and restarts), with the journals replayed.
    pub primary_crashes: u64,
    /// Disk faults injected (writes, syncs, truncations failed).
    pub disk_faults: u64,
    /// Updates answered NOERROR (on stable storage), and SERVFAIL.
    pub acked: u64,
    /// (SERVFAIL.)
    pub refused: u64,
    /// Signed versions validated.
    pub validated: u64,
    /// Secondaries left at the end to their SOA refresh: the primary gave
    /// up notifying them of the last serial (unreachable through every try).
    pub left_to_refresh: u64,
    /// NOTIFYs a Knot-like secondary left aside (refreshed a second later).
    pub left_aside: u64,
    /// Refreshes a BIND-like secondary's rate limiter held for a tick.
    pub rate_limited: u64,
    /// Transfers an NSD-like secondary served only at a later reload.
    pub reloads_deferred: u64,
    /// The calm phase's propagation times (update published → served) to
    /// each kind of secondary, in the order of [`Peer::ALL`], p50 and p99:
    /// reported, not bounded (a run has few changes in its calm phase, and
    /// secondaries still recovering from the chaos in them; every one is
    /// bounded by [`NOTIFY_BOUND`](super::NOTIFY_BOUND)).
    pub p99: [Option<Duration>; 4],
    /// (p50.)
    pub p50: [Option<Duration>; 4],
    /// The first invariant broken, if one was.
    pub violation: Option<Violation>,
}

/// An invariant broken.
#[derive(Debug, Clone)]
pub struct Violation {
    /// The run's seed: the same seed replays the run exactly.
    pub seed: u64,
    /// Simulated time from the run's start.
    pub at: Duration,
    /// Which invariant, and how.
    pub what: String,
    /// The last steps before it.
    pub trace: Vec<String>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "seed {}: at {:.3} s: {}",
            self.seed,
            self.at.as_secs_f64(),
            self.what
        )?;
        writeln!(f, "last steps:")?;
        for line in &self.trace {
            writeln!(f, "  {line}")?;
        }
        Ok(())
    }
}
