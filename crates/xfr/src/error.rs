//! What can be wrong with a transfer response or a NOTIFY.

use std::fmt;

use lode_wire::{rcode, Class, Name, Rtype};

/// Why a transfer response (or a NOTIFY) was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum XfrError {
    /// The bytes are not a well-formed message (what is wrong, where).
    Malformed(String),
    /// The message is not a response (QR clear), or a response where a request was expected.
    NotResponse,
    /// The ID is not the request's.
    WrongId {
        /// The ID received.
        got: u16,
        /// The request's ID.
        expected: u16,
    },
    /// The OPCODE is not the expected one.
    WrongOpcode(u8),
    /// The server answered with an error RCODE (extended RCODE included).
    Rcode(u16),
    /// The TC bit is set (an IXFR over UDP that did not fit: retry over TCP).
    Truncated,
    /// The question is not the request's.
    WrongQuestion(String),
    /// A record's owner is outside the zone.
    OutOfZone(Name),
    /// A record's class is not the zone's.
    WrongClass {
        /// The record's owner.
        owner: Name,
        /// The record's class.
        class: Class,
    },
    /// More records than the reader's limit.
    TooManyRecords(u64),
    /// The records do not form an AXFR or IXFR answer.
    Sequence(String),
    /// An IXFR difference does not start where the previous one ended
    /// (index from 1).
    Chain {
        /// Which difference.
        index: usize,
        /// Its starting serial.
        from: u32,
        /// The serial it should start at.
        expected: u32,
    },
    /// A message came after the transfer was complete.
    AfterEnd,
}

impl fmt::Display for XfrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            XfrError::Malformed(what) => write!(f, "malformed message: {what}"),
            XfrError::NotResponse => f.write_str("not a response (QR flag clear)"),
            XfrError::WrongId { got, expected } => {
                write!(
                    f,
                    "response ID {got} does not match the request's {expected}"
                )
            }
            XfrError::WrongOpcode(op) => write!(f, "unexpected OPCODE {op}"),
            XfrError::Rcode(code) => write!(f, "server responded with {}", rcode::name(*code)),
            XfrError::Truncated => f.write_str("response truncated (TC flag): retry over TCP"),
            XfrError::WrongQuestion(what) => write!(f, "question does not match: {what}"),
            XfrError::OutOfZone(owner) => write!(f, "record owner {owner} is outside the zone"),
            XfrError::WrongClass { owner, class } => {
                write!(f, "record {owner} has class {class}, not the zone's")
            }
            XfrError::TooManyRecords(limit) => {
                write!(f, "transfer exceeds the limit of {limit} records")
            }
            XfrError::Sequence(what) => f.write_str(what),
            XfrError::Chain {
                index,
                from,
                expected,
            } => write!(
                f,
                "IXFR: difference {index} starts at serial {from}, expected {expected}"
            ),
            XfrError::AfterEnd => f.write_str("message after the end of the transfer"),
        }
    }
}

impl std::error::Error for XfrError {}

/// Describes a question for [`XfrError::WrongQuestion`].
pub(crate) fn question_text(name: &Name, rtype: Rtype, class: Class) -> String {
    format!("{name} {class} {rtype}")
}
