//! Requests of the secondary side (SOA, AXFR, IXFR) and NOTIFY, as Knot DNS
//! 3.2 writes them, and reading a NOTIFY on the server side.

use lode_wire::message::{flags, MessageWriter, Question, Section};
use lode_wire::record::read_record;
use lode_wire::{opcode, Class, Name, NameBuf, NameRef, Record, Rtype};
use lode_zonedb::soa_serial;

use crate::error::XfrError;
use crate::reader::parse;

/// The OPT record of a request. Knot's query.c `query_put_edns` adds one to
/// every SOA, AXFR, IXFR and NOTIFY request unless the remote is configured
/// `no-edns`: its UDP payload size, version 0, no DO, and for the refresh
/// requests (SOA, AXFR, IXFR) an empty EDNS EXPIRE option (RFC 7314).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryEdns {
    /// The UDP payload size advertised (Knot: `udp-max-payload`, 1232).
    pub udp_size: u16,
    /// Ask for the EDNS EXPIRE option (Knot does in refresh requests).
    pub expire: bool,
}

/// EDNS option EXPIRE (RFC 7314).
const OPTION_EXPIRE: u16 = 9;

/// Writes a request: header (ID, OPCODE, flags), question `zone` `class`
/// `qtype`, an SOA in `section` with its owner pointing at the question
/// (Knot's `KNOT_COMPR_HINT_QNAME`), the OPT.
#[allow(clippy::too_many_arguments)]
fn request(
    buf: &mut [u8],
    id: u16,
    op: u8,
    header: u16,
    zone: NameRef<'_>,
    qtype: Rtype,
    soa: Option<(Section, &Record)>,
    edns: Option<QueryEdns>,
) -> usize {
    let limit = buf.len();
    let Ok(mut w) = MessageWriter::new(buf, limit) else {
        return 0;
    };
    w.set_header(id, header | (u16::from(op) << 11));
    let mut qname = NameBuf::new();
    qname.set(zone);
    let q = Question {
        qname,
        qtype,
        qclass: Class::IN,
    };
    if w.put_question(&q).is_err() {
        return 0;
    }
    if let Some((section, soa)) = soa {
        let hint = if zone.is_root() { 0 } else { 12 };
        let r = w.put_rrset(
            section,
            zone,
            hint,
            Rtype::SOA,
            soa.class,
            soa.ttl,
            std::iter::once(&*soa.rdata),
        );
        if r.is_err() {
            return 0;
        }
    }
    if let Some(e) = edns {
        let expire = [0, OPTION_EXPIRE as u8, 0, 0];
        let options: &[u8] = if e.expire { &expire } else { &[] };
        if w.put_opt(e.udp_size, 0, 0, 0, options).is_err() {
            return 0;
        }
    }
    w.finish()
}

/// Writes the SOA query of a refresh (Knot's refresh.c `soa_query_produce`:
/// no flags, question `zone` IN SOA); returns the length (0 if `buf` is too
/// small; 512 bytes always suffice).
pub fn soa_query(buf: &mut [u8], id: u16, zone: NameRef<'_>, edns: Option<QueryEdns>) -> usize {
    request(buf, id, opcode::QUERY, 0, zone, Rtype::SOA, None, edns)
}

/// Writes a plain query: question `name` IN `rtype`, RD clear (a DS query
/// to a parent's servers); the length (0 if `buf` is too small).
pub fn query(
    buf: &mut [u8],
    id: u16,
    name: NameRef<'_>,
    rtype: Rtype,
    edns: Option<QueryEdns>,
) -> usize {
    request(buf, id, opcode::QUERY, 0, name, rtype, None, edns)
}

/// Writes an AXFR request (refresh.c `transfer_produce`): question `zone`
/// IN AXFR; the length (0 if `buf` is too small).
pub fn axfr_query(buf: &mut [u8], id: u16, zone: NameRef<'_>, edns: Option<QueryEdns>) -> usize {
    request(buf, id, opcode::QUERY, 0, zone, Rtype::AXFR, None, edns)
}

/// Writes an IXFR request (refresh.c `transfer_produce`, RFC 1995 §3):
/// question `zone` IN IXFR and our SOA `current` in the authority section;
/// the length (0 if `buf` is too small; 1024 bytes always suffice).
pub fn ixfr_query(
    buf: &mut [u8],
    id: u16,
    zone: NameRef<'_>,
    current: &Record,
    edns: Option<QueryEdns>,
) -> usize {
    let soa = Some((Section::Authority, current));
    request(buf, id, opcode::QUERY, 0, zone, Rtype::IXFR, soa, edns)
}

/// Writes a NOTIFY (RFC 1996) as Knot's notify.c `notify_produce` does:
/// OPCODE NOTIFY, AA, question `zone` IN SOA, and the new SOA, when given,
/// in the answer section; the length (0 if `buf` is too small).
pub fn notify(
    buf: &mut [u8],
    id: u16,
    zone: NameRef<'_>,
    soa: Option<&Record>,
    edns: Option<QueryEdns>,
) -> usize {
    let soa = soa.map(|s| (Section::Answer, s));
    request(
        buf,
        id,
        opcode::NOTIFY,
        flags::AA,
        zone,
        Rtype::SOA,
        soa,
        edns,
    )
}

/// A NOTIFY received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notify {
    /// The message ID (the response echoes it).
    pub id: u16,
    /// The zone notified (the question's name).
    pub zone: Name,
    /// The serial of the SOA in the answer section, if the first answer
    /// record is an SOA (Knot's notify.c `notify_process_query`: any other
    /// record there is accepted and ignored).
    pub serial: Option<u32>,
}

/// Reads a NOTIFY request: not a response, OPCODE NOTIFY, one question of
/// type SOA (Knot answers FORMERR otherwise), the serial hint if present.
pub fn parse_notify(msg: &[u8]) -> Result<Notify, XfrError> {
    let m = parse(msg)?;
    if m.flags & flags::QR != 0 {
        return Err(XfrError::NotResponse);
    }
    let op = ((m.flags >> 11) & 0xF) as u8;
    if op != opcode::NOTIFY {
        return Err(XfrError::WrongOpcode(op));
    }
    let Some((zone, qtype, _)) = m.question else {
        return Err(XfrError::WrongQuestion("no question".into()));
    };
    if qtype != Rtype::SOA {
        return Err(XfrError::WrongQuestion(format!(
            "type {qtype}, a NOTIFY asks for SOA"
        )));
    }
    let serial = if m.answers > 0 {
        let (r, _) = read_record(msg, m.answer_at)
            .map_err(|e| XfrError::Malformed(format!("answer record 1: {e}")))?;
        (r.rtype == Rtype::SOA).then(|| soa_serial(&r))
    } else {
        None
    };
    Ok(Notify {
        id: m.id,
        zone,
        serial,
    })
}
