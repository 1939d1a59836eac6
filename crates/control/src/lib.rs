//! Lode's control plane as state machines: each decision the server makes
//! about time and peers (when to NOTIFY whom, when to retry, when to give
//! up, which zones to notify at start) is taken here from the machine's
//! state, an event and `now`, and returned as actions for the runtime
//! (`lode-server`) to perform. No machine opens a socket, touches a file,
//! starts a thread or reads a clock, so the same machines run in memory
//! under tests and under a simulator that drives a whole fleet from a seed
//! ([`sim`]), as quinn-proto's connection is driven by quinn's runtime.
//!
//! ```text
//!   events (a zone published, an answer, …) ──┐
//!   now ───────────────────────────────────────┼──▶ machine ──▶ actions (send a NOTIFY, ask an SOA,
//!   timeouts (poll_timeout → handle_timeout) ──┘                         report something to log)
//!                     ▲                                                   │
//!                     └──── runtime: sockets, clock, logs, metrics ◀──────┘
//! ```
//!
//! Machines: [`notify_out`] (NOTIFY to secondaries, RFC 1996: retries,
//! pacing of busy secondaries), [`refresh`] (a secondary's zones: SOA
//! refresh, retry and expiry, NOTIFY in, bounds on transfers at once),
//! [`upkeep`] (a zone writer's file writes, compactions, re-signing and key
//! event times), [`parent`] (a signed zone's DS checks and pushes to its
//! parent), [`catalog`] (a catalog consumer's members).
//! The simulator [`sim`] runs a primary (with real zones: the zone-update
//! stage's transactions, real journals on a simulated disk that fails and
//! tears writes) and secondaries over a network that loses, delays,
//! duplicates and partitions, crashes them, and checks invariants after
//! every step (nothing acknowledged lost, serials never back, signed
//! versions valid, convergence after healing, no NOTIFY storm).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod catalog;
pub mod notify_out;
pub mod parent;
pub mod refresh;
pub mod sim;
pub mod upkeep;

pub use notify_out::NotifyOut;
pub use refresh::Refresher;
