//! Serial number arithmetic (RFC 1982) for SOA serials: the one in
//! `lode_wire::serial`, re-exported for the journal's users.

pub use lode_wire::serial::serial_lt;
