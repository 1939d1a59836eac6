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
mod chaos;
mod dnssec;
mod edns;
mod lookup;
mod nsec3;

use std::sync::Arc;

pub use lode_wire::message::Query;
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Largest UDP response with EDNS (default 1232, never below 512); also the
    /// payload size advertised in our OPT record, as Knot DNS does.
    pub max_udp_payload: u16,
    /// The NSID (RFC 5001) put in answers to queries that ask for it; `None`
    /// (the default here) or empty: none.
    pub nsid: Option<Arc<[u8]>>,
    /// The TXT answer to CH `id.server.` and `hostname.bind.` (RFC 4892);
    /// `None` or empty: REFUSED.
    pub identity: Option<Arc<str>>,
    /// The TXT answer to CH `version.server.` and `version.bind.`; `None` or
    /// empty: REFUSED.
    pub version: Option<Arc<str>>,
    /// Pad answers over TCP to queries that carry a Padding option to a
    /// multiple of 468 octets (RFC 7830 §3, the block size of RFC 8467 §4.1).
    pub padding: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_udp_payload: 1232,
            nsid: None,
            identity: None,
            version: None,
            padding: false,
        }
    }
}

/// What the server adds to one answer from its own state (cookies, rate
/// limiting), which the engine cannot know.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extra<'a> {
    /// Whole options (wire form) appended to the OPT record of a response
    /// that has one, after the NSID: e.g. the COOKIE option.
    pub options: &'a [u8],
    /// Answer with this error instead of looking the name up (e.g. BADCOOKIE,
    /// 23): header, question and OPT, the extended bits in the OPT.
    pub error: Option<u16>,
    /// Send nothing (e.g. a BADCOOKIE slip).
    pub drop: bool,
    /// `Some(room)`: the server checked the query's TSIG record and found it
    /// good, and signs the answer itself: the query is answered as if it were
    /// unsigned, leaving `room` bytes for the TSIG record, and
    /// [`Answered::sign`] says when to sign. `None`: a TSIG for a zone of
    /// ours is answered NOTAUTH (BADKEY), [`AnswerKind::Signed`].
    pub signed_room: Option<usize>,
    /// The time (Unix seconds) when the query asked for the EDNS EXPIRE
    /// option (RFC 7314): a secondary's zone tells how long it has left
    /// from then. 0 otherwise (the server reads the clock only then).
    pub now: u64,
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
    /// NOTAUTH (BADKEY) to a query for a zone of ours that carries a TSIG
    /// record the policy did not find good ([`Extra::signed_room`]): the
    /// engine checks no keys; a server whose check failed writes its own
    /// error answer (BADSIG, BADTIME …) instead.
    Signed,
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
    pub zone: Option<&'z lode_zonedb::ZoneSlot>,
    /// The answer was synthesised from a wildcard (RFC 4592).
    pub wildcard: bool,
    /// What the query asked, when it could be parsed: the policies around
    /// `answer()` (counters, rate limiting) read it here instead of reading
    /// the query again.
    pub asked: Option<Asked>,
    /// Answered under a TSIG the policy checked ([`Extra::signed_room`]):
    /// the server appends its TSIG record to the response.
    pub sign: bool,
}

/// What a parsed query asked (see [`Answered::asked`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Asked {
    /// The question's type (0: no question).
    pub qtype: u16,
    /// The QNAME's length in wire form (0: no question); a response's
    /// question starts right after its header, so the name it echoes is
    /// `response[12..12 + qname_len]`.
    pub qname_len: u8,
    /// The query has an OPT record.
    pub edns: bool,
    /// Its DO bit.
    pub dnssec_ok: bool,
}

impl Answered<'_> {
    /// Nothing to send.
    pub const DROP: Answered<'static> = Answered {
        len: 0,
        rcode: 0,
        kind: AnswerKind::Dropped,
        zone: None,
        wildcard: false,
        asked: None,
        sign: false,
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
    answer::respond(zones, query, out, transport, settings, |_| Extra::default())
}

/// [`answer`] with a policy: once the query is parsed (and found to be a
/// query worth answering), `policy` looks at it and says what the server
/// adds to this one answer (see [`Extra`]).
pub fn answer_with<'z, 'e>(
    zones: &'z ZoneSet,
    query: &[u8],
    out: &mut [u8],
    transport: Transport,
    settings: &'e Settings,
    policy: impl FnOnce(&Query) -> Extra<'e>,
) -> Answered<'z> {
    answer::respond(zones, query, out, transport, settings, policy)
}

/// The "slipped" answer of response-rate limiting: header (AA and TC set,
/// RCODE `rcode` as the full answer had it), question and OPT (with
/// `extra`'s options), no records, so a real client retries over TCP (Knot
/// DNS's RRL slip). 0 when the query cannot be read.
pub fn slip(
    query: &[u8],
    out: &mut [u8],
    rcode: u16,
    settings: &Settings,
    extra: &Extra<'_>,
) -> usize {
    answer::slip(query, out, rcode, settings, extra)
}

/// What a request asks for, read from its header and question type before
/// anything else: queries go to [`answer`], the rest to their own paths
/// (the zone writer for UPDATE, transfers as streams, NOTIFY to a
/// secondary's refresh).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Request {
    /// A standard query (OPCODE 0) other than a zone transfer.
    Query,
    /// A full zone transfer (RFC 5936).
    Axfr,
    /// An incremental zone transfer (RFC 1995).
    Ixfr,
    /// A dynamic update (RFC 2136).
    Update,
    /// A change notification (RFC 1996).
    Notify,
    /// Anything else, including what cannot be read: [`answer`] gives the
    /// error response (or drops it).
    Other,
}

/// Classifies a request by its OPCODE and first question's type (see
/// [`Request`]); reads the header and skips one name, nothing more.
pub fn classify(msg: &[u8]) -> Request {
    use lode_wire::message::{flags, HEADER_LEN};
    if msg.len() < HEADER_LEN || lode_wire::message::header_flags(msg) & flags::QR != 0 {
        return Request::Other;
    }
    match lode_wire::message::opcode(msg) {
        lode_wire::opcode::UPDATE => return Request::Update,
        lode_wire::opcode::NOTIFY => return Request::Notify,
        lode_wire::opcode::QUERY => {}
        _ => return Request::Other,
    }
    if u16::from_be_bytes([msg[4], msg[5]]) == 0 {
        return Request::Other;
    }
    let Some(pos) = lode_wire::message::first_qname_end(msg) else {
        return Request::Other;
    };
    match msg.get(pos..pos + 2) {
        Some(&[hi, lo]) => match lode_wire::Rtype(u16::from_be_bytes([hi, lo])) {
            lode_wire::Rtype::AXFR => Request::Axfr,
            lode_wire::Rtype::IXFR => Request::Ixfr,
            _ => Request::Query,
        },
        _ => Request::Other,
    }
}

#[cfg(test)]
mod classify_tests {
    use super::*;

    fn msg(opcode: u8, qr: bool, qtype: u16) -> Vec<u8> {
        let mut m = vec![
            0x12,
            0x34,
            (opcode << 3) | if qr { 0x80 } else { 0 },
            0,
            0,
            1,
            0,
            0,
            0,
            0,
            0,
            0,
        ];
        m.extend_from_slice(b"\x07example\x00");
        m.extend_from_slice(&qtype.to_be_bytes());
        m.extend_from_slice(&1u16.to_be_bytes());
        m
    }

    #[test]
    fn requests_by_opcode_and_type() {
        assert_eq!(classify(&msg(0, false, 1)), Request::Query);
        assert_eq!(classify(&msg(0, false, 252)), Request::Axfr);
        assert_eq!(classify(&msg(0, false, 251)), Request::Ixfr);
        assert_eq!(classify(&msg(5, false, 6)), Request::Update);
        assert_eq!(classify(&msg(4, false, 6)), Request::Notify);
        assert_eq!(classify(&msg(2, false, 1)), Request::Other);
        assert_eq!(classify(&msg(0, true, 1)), Request::Other, "a response");
        assert_eq!(
            classify(&msg(0, false, 1)[..14]),
            Request::Other,
            "cut name"
        );
        assert_eq!(classify(&[0; 5]), Request::Other);
    }
}
