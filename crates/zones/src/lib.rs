//! Changes to served zones: the zone-update stage every change passes
//! ([`stage`]: updates, zone-file differences, transfers in, the journal at
//! start), and dynamic updates (RFC 2136) processed the way Knot DNS 3.2
//! processes them ([`update`]).
//!
//! ```text
//!  UPDATE bytes ──parse_update──▶ UpdateRequest { zone, prerequisites, updates }
//!                    └──────────▶ UpdateError (drop, or an RCODE and a reason)
//!
//!  &Zone (current version) + UpdateRequest + SerialPolicy + now
//!        ──process──▶ Ok(None)                  nothing changes (serial kept)
//!                   ▶ Ok(Some(Changeset))       SOA from/to, records removed/added
//!                   ▶ Err(UpdateError)          an RCODE for the reply
//!
//!  request bytes + RCODE ──write_response──▶ reply (header + zone section)
//! ```
//!
//! Everything here is pure: no I/O, no clock (`now` is passed in). The
//! caller checks TSIG and the ACL, finds the zone, journals and applies the
//! changeset, and processes the requests of one batch one after the other,
//! each against the version the previous one produced.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod stage;
pub mod update;
pub mod zonemd;

pub use stage::{difference, Applied, Change, History, Sealed, Stage, StageError, Txn};
pub use update::{
    encode_update, parse_update, process, read_record, serial_cmp, write_error, write_response,
    SerialOrder, SerialPolicy, UnknownSerialPolicy, UpdateError, UpdateRequest,
};
