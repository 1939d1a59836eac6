//! Wire-format building blocks of Lode: names and their canonical keys, record
//! types, messages (header, question, EDNS) and RDATA layouts.
//!
//! ```text
//!   presentation text ──Name::parse──▶ Name ──write_key──▶ canonical key (index order)
//!   packet bytes ──NameBuf::read_compressed──▶ NameBuf (no allocation)
//! ```
//!
//! Everything here is plain data and pure functions: no I/O, no clocks.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod e164;
pub mod message;
pub mod name;
pub mod nsec3;
pub mod rdata;
pub mod record;
pub mod request;
pub mod serial;
pub mod short;
pub mod types;

pub use name::{KeyBuf, Name, NameBuf, NameError, NameRef};
pub use record::{Record, RecordRef};
pub use types::{opcode, rcode, Class, Rtype};
