//! The answer engine: `answer()` turns a query packet into a response packet
//! over an immutable [`ZoneSet`]. No sockets, no clocks, no threads, no
//! allocation, no locks: it can be unit-tested, fuzzed and benchmarked alone;
//! transports only move bytes. The behaviour follows Knot DNS 3.2 (checked
//! query by query against a running `knotd`, see the tests).
//!
//! ```text
//!  query bytes
//!     │ parse_query (lode_wire::message)     short / QR / bad question ─▶ drop (0)
//!     ▼                                      bad records / OPT ─────────▶ FORMERR, no OPT
//!  checks (answer.rs): EDNS version ─▶ BADVERS · no question ─▶ FORMERR/NOTIMP
//!     │   class CH/other ─▶ REFUSED/NOTIMP · opcode ─▶ NOTAUTH/NOTIMP/FORMERR
//!     │   qtype 0/AXFR/IXFR ─▶ NOTIMP/NOTAUTH · no zone ─▶ REFUSED+EDE · TSIG ─▶ BADKEY
//!     ▼
//!  ZoneSet::find_zone (DS: the parent's zone first)
//!     ▼
//!  answer section (lookup.rs)        ┌──────── CNAME / DNAME: follow inside the zone ─┐
//!     Zone::lookup(name) ─▶ cut? ─▶ referral │ node ─▶ RRset / NODATA │ missing ─▶ * ─▶ NXDOMAIN
//!     ▼
//!  authority: NS+DS/NSEC (referral) · SOA (negative TTL) + NSEC proofs (dnssec.rs)
//!             or NSEC3 proofs (nsec3.rs, SHA-1 on the query path)
//!     ▼
//!  additional (additional.rs): A/AAAA of NS/MX/SRV/SVCB/HTTPS targets in the zone
//!     ▼
//!  RRSIGs per section (DO bit, signed zone) · OPT (edns) · TC when a section overflowed
//! ```
//!
//! Each section is written whole-RRset by whole-RRset into the caller's buffer
//! by a [`lode_wire::message::MessageWriter`] that never writes past the size
//! limit; an RRset that does not fit is rolled back and sets TC (answer and
//! authority) or is silently left out (additional, except glue a referral needs).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod additional;
mod answer;
mod dnssec;
mod lookup;
mod nsec3;

pub use lode_zonedb::ZoneSet;

/// How the query arrived; decides size limits and truncation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// UDP: responses limited to 512 bytes, or the EDNS buffer size capped by
    /// [`Settings::max_udp_payload`]; TC=1 when an answer does not fit.
    Udp,
    /// TCP (RFC 7766): responses up to 65535 bytes.
    Tcp,
}

/// Server-wide answer settings.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Largest UDP response with EDNS (default 1232, never below 512); also the
    /// payload size advertised in our OPT record, as Knot DNS does.
    pub max_udp_payload: u16,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_udp_payload: 1232,
        }
    }
}

/// What kind of answer a response is: what the policy around `answer()`
/// (rate limiting, metrics, logs) needs without parsing the response again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AnswerKind {
    /// Nothing is sent (the query was itself a response, or unreadable).
    Dropped,
    /// An error response without zone data (FORMERR, REFUSED, NOTIMP, …).
    Error,
    /// Data for the name and type asked (possibly through CNAME/DNAME).
    Positive,
    /// The name exists, the type does not (RFC 2308 NODATA).
    NoData,
    /// The name does not exist.
    NxDomain,
    /// A referral to a delegated zone.
    Referral,
}

/// The outcome of [`answer`].
#[derive(Debug, Clone, Copy)]
pub struct Answered<'z> {
    /// Length of the response written at the start of `out`; 0 = send nothing.
    pub len: usize,
    /// The response's RCODE (the extended one when it needs EDNS).
    pub rcode: u16,
    /// What kind of answer it is.
    pub kind: AnswerKind,
    /// The zone that answered, if one did.
    pub zone: Option<&'z lode_zonedb::Zone>,
}

impl Answered<'_> {
    /// Nothing to send.
    pub const DROP: Answered<'static> = Answered {
        len: 0,
        rcode: 0,
        kind: AnswerKind::Dropped,
        zone: None,
    };
}

/// Answers one query. `out` must be at least 65535 bytes for TCP and at least
/// `settings.max_udp_payload` (and 512) for UDP; a smaller `out` only lowers
/// the size limit. The response length is 0 when the query must be dropped
/// (it is itself a response, shorter than a header, or its question cannot
/// be read — as Knot DNS does).
pub fn answer<'z>(
    zones: &'z ZoneSet,
    query: &[u8],
    out: &mut [u8],
    transport: Transport,
    settings: &Settings,
) -> Answered<'z> {
    answer::respond(zones, query, out, transport, settings)
}
