//! The secondary's network client: the SOA query of a refresh, AXFR/IXFR
//! over TCP, and UPDATE forwarding to a primary. Blocking, one request per
//! call; the message formats and checks live in lode-xfr and lode-tsig, this
//! module adds sockets, clocks, timeouts and the errors an operator reads.
//!
//! ```text
//!  query_soa ── UDP: soa_query (+OPT, TSIG) ──▶ one answer (ID, TSIG, RCODE, question, AA, SOA)
//!                 └─ TC set ─▶ the same over TCP (new ID, new signature)
//!  transfer ── TCP: axfr_query | ixfr_query(current) ──▶ msg, msg, …
//!                 each msg: ResponseVerifier::verify ─▶ XfrReader::feed_with(msg, sink)
//!                 Done ─▶ ResponseVerifier::finish ─▶ Transfer
//!  exchange_tcp ── TCP: the caller's bytes ──▶ one reply (ID and QR checked)
//! ```
//!
//! Time: every call has a deadline for the whole exchange; a transfer also
//! has an idle timeout bounding each wait for bytes (whichever ends first
//! applies). Nothing is retried here but the TCP fallback of a truncated SOA
//! answer: the refresh timers of the caller decide when to try again.
//!
//! As Knot DNS 3.2's refresh (`src/knot/events/handlers/refresh.c`): the
//! requests carry an OPT with the UDP payload size 1232 and an empty EDNS
//! EXPIRE option; the SOA answer must hold the zone's SOA in its answer
//! section. Lode also requires AA in the SOA answer (Knot does not).

use std::fmt;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lode_tsig::{Key, MacBuf, ResponseVerifier, VerifyError};
use lode_wire::message::{self, flags, HEADER_LEN};
use lode_wire::record::read_record;
use lode_wire::{opcode, rcode, Class, Name, NameBuf, Record, Rtype};
use lode_xfr::{Progress, QueryEdns, Transfer, XfrError, XfrReader};
use lode_zonedb::soa_serial;

use crate::clock::unix_now;

/// The OPT of every request (Knot's `udp-max-payload` default, EDNS EXPIRE asked).
const EDNS: QueryEdns = QueryEdns {
    udp_size: 1232,
    expire: true,
};

/// The largest DNS message (TCP length prefix, UDP datagram).
const MAX_MESSAGE: usize = 65_535;

/// A primary to ask: one address and its TSIG key.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    /// Address and port.
    pub(crate) addr: SocketAddr,
    /// The key requests are signed with and answers checked against.
    pub(crate) key: Option<std::sync::Arc<Key>>,
    /// TLS (RFC 9103) for everything asked of it: SOA queries and transfers.
    pub(crate) tls: Option<lode_io::tls::TlsClient>,
    /// The local address requests leave from (Knot's `via`; None: any).
    pub(crate) via: Option<SocketAddr>,
}

/// The bounds of one transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// The whole transfer, from connecting to the last message.
    pub(crate) total: Duration,
    /// The longest wait for the next bytes (connect, send, each read).
    pub(crate) idle: Duration,
    /// The most answer records (all messages together).
    pub(crate) records: u64,
}

impl Default for Limits {
    /// One hour in all, 10 s idle, no record limit (Knot has none either).
    fn default() -> Limits {
        Limits {
            total: Duration::from_secs(3600),
            idle: Duration::from_secs(10),
            records: u64::MAX,
        }
    }
}

/// What was asked of the primary (the first words of an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// The SOA query of a refresh.
    Soa,
    /// A query of a parent's DS (a KSK's submission check).
    Ds,
    /// A full transfer.
    Axfr,
    /// An incremental transfer (answered incrementally or AXFR-style).
    Ixfr,
    /// A forwarded UPDATE.
    Update,
    /// A zone's DS set sent to its parent by UPDATE (`ds-push`).
    DsPush,
}

/// Why a request to a primary failed: what was asked, of whom, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FetchError {
    /// The request.
    pub(crate) op: Op,
    /// The primary's address.
    pub(crate) peer: SocketAddr,
    /// What went wrong.
    pub(crate) cause: Cause,
}

/// What went wrong in a request to a primary.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum Cause {
    /// A socket error (connect refused, reset, …): what failed and the OS's words.
    Io(String),
    /// Time ran out: what had not happened, and the limit.
    Timeout {
        /// What was awaited, e.g. "no data".
        what: &'static str,
        /// The limit that ran out.
        limit: Duration,
    },
    /// The answer's TSIG failed (or the server's TSIG error), and in which message.
    Tsig(String),
    /// The server answered with this RCODE (extended RCODE included).
    Rcode(u16),
    /// The answer is not a usable DNS message for the request.
    Malformed(String),
    /// A transfer message was rejected by the reader (message number from 1).
    Xfr {
        /// Which message.
        message: u64,
        /// Why.
        error: XfrError,
    },
    /// The connection was closed before the answer was complete.
    Cut {
        /// Complete messages received.
        messages: u64,
        /// Answer records in them.
        records: u64,
    },
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Soa => "SOA query to",
            Op::Ds => "DS query to",
            Op::Axfr => "AXFR from",
            Op::Ixfr => "IXFR from",
            Op::Update => "UPDATE forwarded to",
            Op::DsPush => "DS push (UPDATE) to",
        })
    }
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}@{}: {}",
            self.op,
            self.peer.ip(),
            self.peer.port(),
            self.cause
        )
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Io(e) => f.write_str(e),
            Cause::Timeout { what, limit } => {
                write!(f, "{what} within {}", seconds(*limit))
            }
            Cause::Tsig(e) => write!(f, "TSIG {e}"),
            Cause::Rcode(code) => write!(f, "answered {}", rcode::name(*code)),
            Cause::Malformed(e) => write!(f, "malformed answer: {e}"),
            Cause::Xfr { message, error } => write!(f, "{error} (message {message})"),
            Cause::Cut { messages, records } => write!(
                f,
                "connection closed after {} message{} ({} record{})",
                thousands(*messages),
                if *messages == 1 { "" } else { "s" },
                thousands(*records),
                if *records == 1 { "" } else { "s" },
            ),
        }
    }
}

impl std::error::Error for FetchError {}

/// `12 s`, `1.5 s`, `250 ms`.
fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{} s", d.as_secs())
    } else if d.as_secs() == 0 {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// `4211` as `4,211`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A message ID that differs per request and per run (not a secret: the
/// TSIG, or TCP, is what protects a transfer).
fn next_id() -> u16 {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let c = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let x = nanos ^ c.wrapping_mul(0x9E37_79B9) ^ std::process::id().rotate_left(16);
    (x ^ (x >> 16)) as u16
}

/// A request ready to send: bytes, ID, and the MAC of its TSIG.
struct Request {
    msg: Vec<u8>,
    id: u16,
    mac: Option<MacBuf>,
}

/// Writes a request with `write(buf, id)` and signs it with `key`.
fn request(
    key: Option<&Key>,
    write: impl FnOnce(&mut [u8], u16) -> usize,
) -> Result<Request, Cause> {
    let id = next_id();
    let mut msg = vec![0u8; 2048];
    let n = write(&mut msg, id);
    if n == 0 {
        return Err(Cause::Malformed(
            "the request does not fit a message".into(),
        ));
    }
    msg.truncate(n);
    let mac = match key {
        Some(k) => Some(
            lode_tsig::sign_request_vec(&mut msg, k, unix_now())
                .map_err(|e| Cause::Tsig(format!("request not signed: {e}")))?,
        ),
        None => None,
    };
    Ok(Request { msg, id, mac })
}

/// Asks `src` for the SOA of `zone` over UDP, retrying over TCP when the
/// answer is truncated; checks the ID, the TSIG when a key is set, OPCODE,
/// RCODE, the question and AA; returns the zone's SOA record. `timeout`
/// bounds the whole exchange (both transports).
pub(crate) fn query_soa(
    src: &Source,
    zone: &Name,
    timeout: Duration,
) -> Result<Record, FetchError> {
    let records = query_rrset(src, Op::Soa, zone, Rtype::SOA, timeout)?;
    records.into_iter().next().ok_or_else(|| FetchError {
        op: Op::Soa,
        peer: src.addr,
        cause: Cause::Malformed(format!("no SOA of {zone} in the answer")),
    })
}

/// Asks `src` for the DS RRset of `zone` (a parent's servers, for a KSK's
/// submission), as [`query_soa`] asks for the SOA: the records (none when
/// the parent has no DS for it).
pub(crate) fn query_ds(
    src: &Source,
    zone: &Name,
    timeout: Duration,
) -> Result<Vec<Record>, FetchError> {
    query_rrset(src, Op::Ds, zone, Rtype::DS, timeout)
}

/// One query for `name` `rtype` to `src` (UDP, then TCP when truncated;
/// TLS alone for a TLS remote), the answer checked; the records of that
/// name and type in the answer.
fn query_rrset(
    src: &Source,
    op: Op,
    name: &Name,
    rtype: Rtype,
    timeout: Duration,
) -> Result<Vec<Record>, FetchError> {
    let fail = |cause| FetchError {
        op,
        peer: src.addr,
        cause,
    };
    let deadline = Instant::now() + timeout;
    let write = |buf: &mut [u8], id| lode_xfr::query(buf, id, name.as_ref(), rtype, Some(EDNS));
    // Over TLS, not UDP: nothing asked of a TLS remote goes in clear.
    if src.tls.is_none() {
        let req = request(src.key.as_deref(), write).map_err(fail)?;
        let answer = udp_exchange(src, &req, deadline, timeout).map_err(fail)?;
        match check_answer(&answer, &req, src.key.as_deref(), name, rtype) {
            Err(SoaError::Truncated) => {}
            Err(SoaError::Fail(c)) => return Err(fail(c)),
            Ok(records) => return Ok(records),
        }
    }
    let req = request(src.key.as_deref(), write).map_err(fail)?;
    let mut conn = Conn::connect(src, deadline, timeout, timeout).map_err(fail)?;
    conn.send(&req.msg).map_err(fail)?;
    let mut buf = vec![0u8; MAX_MESSAGE];
    let Some(n) = conn.recv(&mut buf).map_err(fail)? else {
        return Err(fail(Cause::Cut {
            messages: 0,
            records: 0,
        }));
    };
    match check_answer(&buf[..n], &req, src.key.as_deref(), name, rtype) {
        Ok(records) => Ok(records),
        Err(SoaError::Truncated) => Err(fail(Cause::Malformed(
            "truncated (TC flag) over TCP".into(),
        ))),
        Err(SoaError::Fail(c)) => Err(fail(c)),
    }
}

/// The serial of `zone` in `answer`, an unsigned SOA query's answer with
/// message ID `id`, when it passes [`query_soa`]'s checks (the NOTIFY pacing's
/// probe of a secondary: has it taken the serial it was told of yet?).
pub(crate) fn served_serial(answer: &[u8], id: u16, zone: &Name) -> Option<u32> {
    let req = Request {
        msg: Vec::new(),
        id,
        mac: None,
    };
    check_soa(answer, &req, None, zone)
        .ok()
        .map(|soa| soa_serial(&soa))
}

/// Sends `req` over UDP and returns the first datagram from `addr` that
/// answers it (same ID, QR set); others are ignored.
fn udp_exchange(
    src: &Source,
    req: &Request,
    deadline: Instant,
    timeout: Duration,
) -> Result<Vec<u8>, Cause> {
    let addr = src.addr;
    let local: SocketAddr = src.via.unwrap_or(if addr.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        ([0u16; 8], 0).into()
    });
    let io = |what: &str, e: std::io::Error| Cause::Io(format!("{what}: {e}"));
    let sock = UdpSocket::bind(local).map_err(|e| io("UDP socket", e))?;
    sock.connect(addr).map_err(|e| io("UDP connect", e))?;
    sock.send(&req.msg).map_err(|e| io("UDP send", e))?;
    let mut buf = vec![0u8; MAX_MESSAGE];
    let no_answer = Cause::Timeout {
        what: "no answer",
        limit: timeout,
    };
    loop {
        let wait = remaining(deadline).ok_or_else(|| no_answer.clone())?;
        sock.set_read_timeout(Some(wait))
            .map_err(|e| io("UDP socket", e))?;
        match sock.recv(&mut buf) {
            Ok(n) => {
                let m = &buf[..n];
                if n >= HEADER_LEN
                    && message::id(m) == req.id
                    && message::header_flags(m) & flags::QR != 0
                {
                    return Ok(m.to_vec());
                }
            }
            Err(e) if is_timeout(&e) => return Err(no_answer),
            // An ICMP "port unreachable" from an earlier datagram, or a signal.
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(io("UDP receive", e)),
        }
    }
}

/// Why an SOA answer was not taken.
enum SoaError {
    /// TC set: ask again over TCP.
    Truncated,
    /// Rejected.
    Fail(Cause),
}

/// Checks the answer to the SOA query `req` and takes the zone's SOA out.
fn check_soa(
    answer: &[u8],
    req: &Request,
    key: Option<&Key>,
    zone: &Name,
) -> Result<Record, SoaError> {
    check_answer(answer, req, key, zone, Rtype::SOA)?
        .into_iter()
        .next()
        .ok_or_else(|| SoaError::Fail(Cause::Malformed(format!("no SOA of {zone} in the answer"))))
}

/// The records of `name` `rtype` in `answer`, once it passes the checks
/// of a query's answer (ID, QR, TC, TSIG, OPCODE, RCODE, question, AA).
fn check_answer(
    answer: &[u8],
    req: &Request,
    key: Option<&Key>,
    name: &Name,
    rtype: Rtype,
) -> Result<Vec<Record>, SoaError> {
    let fail = |c| SoaError::Fail(c);
    if answer.len() < HEADER_LEN {
        return Err(fail(Cause::Malformed("shorter than a header".into())));
    }
    let hflags = message::header_flags(answer);
    if message::id(answer) != req.id {
        return Err(fail(Cause::Malformed(format!(
            "ID {} does not match the request's {}",
            message::id(answer),
            req.id
        ))));
    }
    if hflags & flags::QR == 0 {
        return Err(fail(Cause::Malformed("not a response (QR clear)".into())));
    }
    if hflags & flags::TC != 0 {
        return Err(SoaError::Truncated);
    }
    if let (Some(k), Some(mac)) = (key, &req.mac) {
        let header_rcode = hflags & 0xF;
        match lode_tsig::verify_response(answer, k, mac.as_slice(), unix_now()) {
            Ok(_) => {}
            Err(VerifyError::Unsigned) if header_rcode != 0 => {
                return Err(fail(Cause::Rcode(header_rcode)))
            }
            Err(e) => return Err(fail(Cause::Tsig(tsig_text(e)))),
        }
    }
    let m = parse(answer).map_err(fail)?;
    let op = ((hflags >> 11) & 0xF) as u8;
    if op != opcode::QUERY {
        return Err(fail(Cause::Malformed(format!("OPCODE {op}, not QUERY"))));
    }
    if m.rcode != rcode::NOERROR {
        return Err(fail(Cause::Rcode(m.rcode)));
    }
    match &m.question {
        Some((q, t, c)) if q == name && *t == rtype && *c == Class::IN => {}
        Some((q, t, c)) => {
            return Err(fail(Cause::Malformed(format!(
                "question {q} {c} {t}, asked {name} IN {rtype}"
            ))))
        }
        None => return Err(fail(Cause::Malformed("no question".into()))),
    }
    if hflags & flags::AA == 0 {
        return Err(fail(Cause::Malformed(
            "not authoritative (AA flag clear)".into(),
        )));
    }
    Ok(m.answers
        .into_iter()
        .filter(|r| r.rtype == rtype && r.owner == *name && r.class == Class::IN)
        .collect())
}

/// The parts of an SOA answer read.
struct Parsed {
    /// The RCODE with the OPT's extended bits.
    rcode: u16,
    question: Option<(Name, Rtype, Class)>,
    answers: Vec<Record>,
}

/// Reads the question and every record of `msg` (the answer section kept).
fn parse(msg: &[u8]) -> Result<Parsed, Cause> {
    let bad = |what: String| Cause::Malformed(what);
    let count = |i: usize| u16::from_be_bytes([msg[4 + 2 * i], msg[5 + 2 * i]]);
    let (qd, an, ns, ar) = (count(0), count(1), count(2), count(3));
    if qd > 1 {
        return Err(bad(format!("{qd} questions")));
    }
    let mut pos = HEADER_LEN;
    let mut question = None;
    if qd == 1 {
        let mut name = NameBuf::new();
        pos = name
            .read_compressed(msg, pos)
            .map_err(|_| bad("question name unreadable".into()))?;
        let tc = msg
            .get(pos..pos + 4)
            .ok_or_else(|| bad("question truncated".into()))?;
        question = Some((
            name.as_ref().to_name(),
            Rtype(u16::from_be_bytes([tc[0], tc[1]])),
            Class(u16::from_be_bytes([tc[2], tc[3]])),
        ));
        pos += 4;
    }
    let mut rcode = message::header_flags(msg) & 0xF;
    let mut answers = Vec::new();
    let total = usize::from(an) + usize::from(ns) + usize::from(ar);
    for i in 0..total {
        let (r, next) = read_record(msg, pos).map_err(|e| bad(format!("record {}: {e}", i + 1)))?;
        pos = next;
        if i < usize::from(an) {
            answers.push(r);
        } else if r.rtype == Rtype::OPT && i >= usize::from(an) + usize::from(ns) {
            rcode |= ((r.ttl >> 24) as u16) << 4;
        }
    }
    if pos != msg.len() {
        return Err(bad("bytes after the last record".into()));
    }
    Ok(Parsed {
        rcode,
        question,
        answers,
    })
}

/// A TSIG failure in words (after "TSIG ").
fn tsig_text(e: VerifyError) -> String {
    match e {
        VerifyError::Malformed => "record malformed".into(),
        VerifyError::Unsigned => "missing (the answer is not signed)".into(),
        VerifyError::WrongKey => "of another key".into(),
        VerifyError::BadSig => "BADSIG".into(),
        VerifyError::BadTime => "BADTIME".into(),
        VerifyError::Rejected { error, .. } => {
            format!("error {} from the server", lode_tsig::error_name(error))
        }
        VerifyError::TooManyUnsigned => "missing: more than 99 unsigned messages".into(),
        _ => e.to_string(),
    }
}

/// Transfers `zone` from `src` over TCP: IXFR from `current` (our SOA)
/// when given, else AXFR. Every message's TSIG is checked when `src` has a
/// key (unsigned messages between signed ones allowed, RFC 8945 §5.3.1, the
/// last one signed); the messages go through an [`XfrReader`] limited to
/// `limits.records`; the records of a whole zone (AXFR, or an AXFR-style
/// answer to IXFR) go to `sink` as they arrive, so [`Transfer::Full`] comes
/// back without records. Differences are returned whole.
pub(crate) fn transfer(
    src: &Source,
    zone: &Name,
    current: Option<&Record>,
    limits: &Limits,
    sink: &mut dyn FnMut(Record),
) -> Result<Transfer, FetchError> {
    let op = if current.is_some() {
        Op::Ixfr
    } else {
        Op::Axfr
    };
    let fail = |cause| FetchError {
        op,
        peer: src.addr,
        cause,
    };
    let deadline = Instant::now() + limits.total;
    let req = request(src.key.as_deref(), |buf, id| match current {
        Some(soa) => lode_xfr::ixfr_query(buf, id, zone.as_ref(), soa, Some(EDNS)),
        None => lode_xfr::axfr_query(buf, id, zone.as_ref(), Some(EDNS)),
    })
    .map_err(fail)?;
    let mut reader = match current {
        Some(soa) => XfrReader::ixfr(zone.clone(), req.id, soa_serial(soa)),
        None => XfrReader::axfr(zone.clone(), req.id),
    }
    .with_limit(limits.records);
    let mut verifier = match (&src.key, &req.mac) {
        (Some(k), Some(mac)) => Some(ResponseVerifier::new(k, mac.as_slice())),
        _ => None,
    };
    let mut conn = Conn::connect(src, deadline, limits.idle, limits.total).map_err(fail)?;
    conn.send(&req.msg).map_err(fail)?;
    let mut buf = vec![0u8; MAX_MESSAGE];
    let mut messages = 0u64;
    loop {
        let Some(n) = conn.recv(&mut buf).map_err(fail)? else {
            return Err(fail(Cause::Cut {
                messages,
                records: reader.records_read(),
            }));
        };
        messages += 1;
        let msg = &buf[..n];
        if let Some(v) = verifier.as_mut() {
            match v.verify(msg, unix_now()) {
                Ok(_) => {}
                Err(VerifyError::Unsigned) if messages == 1 && rcode_of(msg) != 0 => {
                    return Err(fail(Cause::Rcode(rcode_of(msg))));
                }
                Err(e) => {
                    return Err(fail(Cause::Tsig(format!(
                        "{} in message {messages}",
                        tsig_text(e)
                    ))))
                }
            }
        }
        match reader.feed_with(msg, sink) {
            Ok(Progress::More) => {}
            Ok(Progress::Done(t)) => {
                if let Some(v) = &verifier {
                    v.finish().map_err(|_| {
                        fail(Cause::Tsig(format!(
                            "missing in the last message ({messages})"
                        )))
                    })?;
                }
                return Ok(t);
            }
            Err(XfrError::Rcode(code)) => return Err(fail(Cause::Rcode(code))),
            Err(error) => {
                return Err(fail(Cause::Xfr {
                    message: messages,
                    error,
                }))
            }
        }
    }
}

/// The header's RCODE (0 for a message shorter than a header).
fn rcode_of(msg: &[u8]) -> u16 {
    if msg.len() < HEADER_LEN {
        0
    } else {
        message::header_flags(msg) & 0xF
    }
}

/// Sends `msg` (an UPDATE, as received) to `src` over TCP and returns the
/// reply, whose ID must be the message's and QR set; `timeout` bounds the
/// whole exchange. The caller signs or strips TSIG as needed: `src.key` is
/// not used here.
pub(crate) fn exchange_tcp(
    src: &Source,
    msg: &[u8],
    timeout: Duration,
) -> Result<Vec<u8>, FetchError> {
    let fail = |cause| FetchError {
        op: Op::Update,
        peer: src.addr,
        cause,
    };
    if msg.len() < HEADER_LEN || msg.len() > MAX_MESSAGE {
        return Err(fail(Cause::Malformed(format!(
            "the message to send is {} bytes long",
            msg.len()
        ))));
    }
    let deadline = Instant::now() + timeout;
    let mut conn = Conn::connect(src, deadline, timeout, timeout).map_err(fail)?;
    conn.send(msg).map_err(fail)?;
    let mut buf = vec![0u8; MAX_MESSAGE];
    let Some(n) = conn.recv(&mut buf).map_err(fail)? else {
        return Err(fail(Cause::Cut {
            messages: 0,
            records: 0,
        }));
    };
    let reply = &buf[..n];
    if n < HEADER_LEN {
        return Err(fail(Cause::Malformed("shorter than a header".into())));
    }
    if message::id(reply) != message::id(msg) {
        return Err(fail(Cause::Malformed(format!(
            "ID {} does not match the request's {}",
            message::id(reply),
            message::id(msg)
        ))));
    }
    if message::header_flags(reply) & flags::QR == 0 {
        return Err(fail(Cause::Malformed("not a response (QR clear)".into())));
    }
    buf.truncate(n);
    Ok(buf)
}

/// Sends the UPDATE `write` makes (into a buffer, with the message ID) to
/// `src` over TCP, TSIG-signed with its key, and checks the reply: its
/// TSIG, OPCODE UPDATE and RCODE NOERROR (a zone's DS set pushed to its
/// parent). `timeout` bounds the exchange.
pub(crate) fn send_update(
    src: &Source,
    write: impl FnOnce(&mut [u8], u16) -> usize,
    timeout: Duration,
) -> Result<(), FetchError> {
    let fail = |cause| FetchError {
        op: Op::DsPush,
        peer: src.addr,
        cause,
    };
    let req = request(src.key.as_deref(), write).map_err(fail)?;
    let reply = exchange_tcp(src, &req.msg, timeout).map_err(|e| fail(e.cause))?;
    let code = rcode_of(&reply);
    if let (Some(k), Some(mac)) = (src.key.as_deref(), &req.mac) {
        match lode_tsig::verify_response(&reply, k, mac.as_slice(), unix_now()) {
            Ok(_) => {}
            Err(VerifyError::Unsigned) if code != 0 => return Err(fail(Cause::Rcode(code))),
            Err(e) => return Err(fail(Cause::Tsig(tsig_text(e)))),
        }
    }
    let op = ((message::header_flags(&reply) >> 11) & 0xF) as u8;
    if op != opcode::UPDATE {
        return Err(fail(Cause::Malformed(format!("OPCODE {op}, not UPDATE"))));
    }
    if code != rcode::NOERROR {
        return Err(fail(Cause::Rcode(code)));
    }
    Ok(())
}

/// The time left until `deadline`, if any.
fn remaining(deadline: Instant) -> Option<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
}

/// A read or write timeout as the OS reports it.
fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// A TCP connection, in clear or under TLS.
enum Stream {
    Plain(TcpStream),
    Tls(Box<lode_io::tls::ClientStream>),
}

impl Stream {
    /// The socket underneath (for its timeouts).
    fn socket(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(t) => &t.sock,
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(t) => t.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(t) => t.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(t) => t.flush(),
        }
    }
}

/// A TCP (or TLS) connection with a deadline for everything and an idle
/// bound per wait.
struct Conn {
    stream: Stream,
    deadline: Instant,
    idle: Duration,
    total: Duration,
}

impl Conn {
    /// Connects to `src` (and completes its TLS handshake when it takes
    /// TLS) within the idle bound and the deadline.
    fn connect(
        src: &Source,
        deadline: Instant,
        idle: Duration,
        total: Duration,
    ) -> Result<Conn, Cause> {
        let (wait, cause) = Self::wait(deadline, idle, total, "no connection")?;
        let connected = match src.via {
            None => TcpStream::connect_timeout(&src.addr, wait),
            Some(via) => lode_io::net::connect_from(via, src.addr, wait),
        };
        let stream = connected.map_err(|e| {
            if is_timeout(&e) {
                cause
            } else {
                Cause::Io(format!("connect: {e}"))
            }
        })?;
        let _ = stream.set_nodelay(true);
        let stream = match &src.tls {
            None => Stream::Plain(stream),
            Some(client) => {
                let (wait, cause) = Self::wait(deadline, idle, total, "no TLS handshake")?;
                let timeouts = stream
                    .set_read_timeout(Some(wait))
                    .and_then(|()| stream.set_write_timeout(Some(wait)));
                timeouts.map_err(|e| Cause::Io(format!("socket: {e}")))?;
                let name = src.addr.ip().to_string();
                match client.connect(stream, &name) {
                    Ok(t) => Stream::Tls(Box::new(t)),
                    Err(e) if is_timeout(&e) => return Err(cause),
                    Err(e) => return Err(Cause::Io(format!("TLS handshake: {e}"))),
                }
            }
        };
        Ok(Conn {
            stream,
            deadline,
            idle,
            total,
        })
    }

    /// How long the next wait may last, and the timeout to report if it
    /// runs out (the idle one, or the whole exchange's).
    fn wait(
        deadline: Instant,
        idle: Duration,
        total: Duration,
        what: &'static str,
    ) -> Result<(Duration, Cause), Cause> {
        let overall = Cause::Timeout {
            what: "not finished",
            limit: total,
        };
        let left = remaining(deadline).ok_or_else(|| overall.clone())?;
        if idle < left {
            Ok((idle, Cause::Timeout { what, limit: idle }))
        } else {
            Ok((left, overall))
        }
    }

    /// Sends one message with its length prefix.
    fn send(&mut self, msg: &[u8]) -> Result<(), Cause> {
        let len = u16::try_from(msg.len())
            .map_err(|_| Cause::Malformed("request longer than 65535 bytes".into()))?;
        let mut framed = Vec::with_capacity(msg.len() + 2);
        framed.extend_from_slice(&len.to_be_bytes());
        framed.extend_from_slice(msg);
        let mut sent = 0;
        while sent < framed.len() {
            let (wait, cause) = Self::wait(self.deadline, self.idle, self.total, "not sent")?;
            self.stream
                .socket()
                .set_write_timeout(Some(wait))
                .map_err(|e| Cause::Io(format!("socket: {e}")))?;
            match self.stream.write(&framed[sent..]) {
                Ok(0) => return Err(Cause::Io("send: connection closed".into())),
                Ok(n) => sent += n,
                Err(e) if is_timeout(&e) => return Err(cause),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(Cause::Io(format!("send: {e}"))),
            }
        }
        Ok(())
    }

    /// Reads one message into `buf` (65535 bytes); its length, or None when
    /// the connection closed before it was complete.
    fn recv(&mut self, buf: &mut [u8]) -> Result<Option<usize>, Cause> {
        let mut prefix = [0u8; 2];
        if !self.fill(&mut prefix)? {
            return Ok(None);
        }
        let len = usize::from(u16::from_be_bytes(prefix));
        if len < HEADER_LEN {
            return Err(Cause::Malformed(format!("a message of {len} bytes")));
        }
        let Some(body) = buf.get_mut(..len) else {
            return Err(Cause::Malformed("message larger than the buffer".into()));
        };
        if !self.fill(body)? {
            return Ok(None);
        }
        Ok(Some(len))
    }

    /// Fills `buf`; false when the connection closed first.
    fn fill(&mut self, buf: &mut [u8]) -> Result<bool, Cause> {
        let mut got = 0;
        while got < buf.len() {
            let (wait, cause) = Self::wait(self.deadline, self.idle, self.total, "no data")?;
            self.stream
                .socket()
                .set_read_timeout(Some(wait))
                .map_err(|e| Cause::Io(format!("socket: {e}")))?;
            match self.stream.read(&mut buf[got..]) {
                Ok(0) => return Ok(false),
                Ok(n) => got += n,
                Err(e) if is_timeout(&e) => return Err(cause),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return Ok(false),
                Err(e) => return Err(Cause::Io(format!("receive: {e}"))),
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
#[path = "fetch_tests.rs"]
mod tests;
