//! lode-bench: the measuring instruments of Lode — data-set generators and load testers.
//!
//! ```text
//!   gen ──▶ zone files + query files ──▶ server under test (Lode, Knot DNS, NSD)
//!                                              ▲        │
//!   rate (RFC 8219 open loop) ── queries ──────┘        │ replies, matched by port, ID, question
//!   clients (enumperf closed loop) ◀────────────────────┘
//!   echo: a responder that only flips QR — the ceiling of the machine's stack
//! ```
//!
//! The generators write text with fixed templates updated in place (no allocation per
//! record). The testers precompute every query in wire form before the clock starts,
//! so the measured path only stamps an ID and sends.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod attack;
pub mod clients;
pub mod compare;
pub mod durable;
pub mod echo;
pub mod encrypted;
pub mod experiment;
pub mod fleet;
pub mod gen;
mod interrupt;
pub mod pacing;
pub mod provenance;
pub mod query;
pub mod rate;
pub mod search;
pub mod server_cost;
pub mod signing;
pub mod sockbuf;
pub mod stats;
pub mod update;
pub mod xdp;
pub mod zones;
