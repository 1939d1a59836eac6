//! Runs written step by step (regression tests), with the fleet, network
//! and invariants of a seed's run.

use std::time::Duration;

use rand_core::SeedableRng;
use rand_pcg::Pcg64;

use super::{Event, Outcome, Peer, Shape, Sim};

/// A step of a [`Scenario`].
#[derive(Debug, Clone, Copy)]
pub enum Step {
    /// A new serial of zone `zone` is published.
    Update {
        /// Its index (zones are `z0.example.`, `z1.example.`, …).
        zone: usize,
    },
    /// Secondary `secondary` crashes and restarts `down` later.
    Crash {
        /// Its index.
        secondary: usize,
        /// How long it is down.
        down: Duration,
    },
    /// The primary crashes and restarts `down` later (its journals
    /// replayed, its NOTIFY machine started afresh).
    PrimaryCrash {
        /// How long it is down.
        down: Duration,
    },
    /// The network between the primary and `secondary` is cut until
    /// `until` (from the run's start).
    Partition {
        /// Its index.
        secondary: usize,
        /// When it heals.
        until: Duration,
    },
}

/// A run written step by step (a regression test's), with the same
/// network, secondaries and invariants as a seed's.
#[derive(Debug, Clone)]
pub struct Scenario {
    shape: Shape,
    steps: Vec<(Duration, Step)>,
}

impl Scenario {
    /// A fleet of `secondaries` and `zones`, a chaos phase of `chaos` (in
    /// which only the steps given are faults: no loss, no duplication)
    /// and a calm one of `calm`.
    pub fn new(secondaries: usize, zones: usize, chaos: Duration, calm: Duration) -> Scenario {
        Scenario {
            shape: Shape {
                secondaries,
                zones,
                chaos,
                calm,
                loss: 0.0,
                duplicate: 0.0,
                update_gap: Duration::ZERO,
                primary_crashes: false,
                disk_faults: 0.0,
                signed: false,
                peers: Vec::new(),
            },
            steps: Vec::new(),
        }
    }

    /// Secondary `k` behaves as `peers[k]` (Lode when not given).
    pub fn peers(mut self, peers: &[Peer]) -> Scenario {
        self.shape.peers = peers.to_vec();
        self
    }

    /// Adds `step` at `at` from the run's start.
    pub fn at(mut self, at: Duration, step: Step) -> Scenario {
        self.steps.push((at, step));
        self
    }

    /// Runs it; `seed` draws the network's delays.
    pub fn run(self, seed: u64) -> Outcome {
        let rng = Pcg64::seed_from_u64(seed);
        let mut sim = Sim::new(seed, rng, self.shape);
        for (at, step) in self.steps {
            let e = match step {
                Step::Update { zone } => Event::Update { zone },
                Step::Crash { secondary, down } => Event::Crash { secondary, down },
                Step::Partition { secondary, until } => Event::Partition { secondary, until },
                Step::PrimaryCrash { down } => Event::PrimaryCrash { down, during: None },
            };
            sim.at(at, e);
        }
        sim.run();
        sim.out
    }
}
