//! Reading an UPDATE message as Knot DNS 3.2's packet parser does: every
//! record's RDATA is checked against its type's layout, names in RDATA are
//! decompressed, and records are put in canonical form (owner lower-cased;
//! RDATA names lower-cased for the RFC 4034 §6.2 types).

use lode_wire::message::HEADER_LEN;
pub(crate) use lode_wire::record::canonical_rdata;
pub use lode_wire::record::read_record;
use lode_wire::record::RecordError;
use lode_wire::{rcode, Class, Name, Record, Rtype};

use super::{UpdateError, UpdateRequest};

fn be16(msg: &[u8], pos: usize) -> Option<u16> {
    msg.get(pos..pos + 2)
        .map(|b| u16::from_be_bytes([b[0], b[1]]))
}

/// Reads the zone section (QNAME without compression) at the header's end:
/// the zone name, type and class, and the offset after them.
pub(crate) fn read_zone_section(msg: &[u8]) -> Option<(Name, Rtype, Class, usize)> {
    let mut pos = HEADER_LEN;
    loop {
        let len = *msg.get(pos)? as usize;
        if len & 0xC0 != 0 {
            return None;
        }
        pos += 1 + len;
        if len == 0 {
            break;
        }
    }
    let name = Name::from_wire(msg.get(HEADER_LEN..pos)?).ok()?;
    let rtype = Rtype(be16(msg, pos)?);
    let class = Class(be16(msg, pos + 2)?);
    Some((name, rtype, class, pos + 4))
}

/// Parses an UPDATE (see [`super::parse_update`]).
pub(crate) fn parse(msg: &[u8]) -> Result<UpdateRequest, UpdateError> {
    if msg.len() < HEADER_LEN {
        return Err(UpdateError::drop("shorter than a header"));
    }
    let id = u16::from_be_bytes([msg[0], msg[1]]);
    let flags = u16::from_be_bytes([msg[2], msg[3]]);
    if flags & 0x8000 != 0 {
        return Err(UpdateError::drop("a response"));
    }
    if (flags >> 11) & 0xF != lode_wire::opcode::UPDATE as u16 {
        return Err(UpdateError::drop("not an UPDATE"));
    }
    let count = |i: usize| u16::from_be_bytes([msg[4 + 2 * i], msg[5 + 2 * i]]) as usize;
    let (zo, pr, up, ad) = (count(0), count(1), count(2), count(3));
    if zo > 1 {
        return Err(UpdateError::drop("more than one zone"));
    }
    if zo == 0 {
        // Knot reads the rest of the message first: bad records make it a
        // malformed message (no OPT in the answer), good ones a failed query.
        // When Knot's parser failed before it got past the header (the
        // first record's owner or fixed fields, too many records for the
        // size, bytes after nothing), Knot ignores the message.
        return Err(match records(msg, HEADER_LEN, pr, up, ad) {
            Ok(r) if r.opt_version.is_some_and(|v| v != 0) => bad_version(),
            Ok(_) => UpdateError::query(rcode::FORMERR, "no zone section"),
            Err(e) if e.nothing_parsed => {
                UpdateError::drop(format!("no zone section; {}", e.reason))
            }
            Err(e) => UpdateError::Malformed {
                reason: format!("no zone section; {}", e.reason),
            },
        });
    }
    let Some((zone, ztype, zclass, pos)) = read_zone_section(msg) else {
        return Err(UpdateError::drop("the zone section cannot be read"));
    };
    let parsed =
        records(msg, pos, pr, up, ad).map_err(|e| UpdateError::Malformed { reason: e.reason })?;
    // Knot's order once the message parses: EDNS version, then the class
    // (CH: NOTIMP, as for any request but a query; other than IN and ANY:
    // REFUSED), then the UPDATE's own checks.
    if parsed.opt_version.is_some_and(|v| v != 0) {
        return Err(bad_version());
    }
    if zclass == Class::CH {
        return Err(UpdateError::query(rcode::NOTIMP, "an UPDATE in class CH"));
    }
    if zclass != Class::IN && zclass != Class::ANY {
        return Err(UpdateError::query(
            rcode::REFUSED,
            format!("the zone section's class is {zclass}"),
        ));
    }
    if ztype != Rtype::SOA {
        return Err(UpdateError::query(
            rcode::FORMERR,
            format!("the zone section's type is {ztype}, not SOA"),
        ));
    }
    let Records {
        records: mut recs,
        opt_version,
        has_tsig,
    } = parsed;
    let updates = recs.split_off(pr);
    Ok(UpdateRequest {
        id,
        flags,
        zone,
        zone_class: zclass,
        prerequisites: recs,
        updates,
        has_opt: opt_version.is_some(),
        has_tsig,
    })
}

/// BADVERS: the request's OPT has a version other than 0 (answered with an OPT).
fn bad_version() -> UpdateError {
    UpdateError::query(rcode::BADVERS, "EDNS version other than 0")
}

/// The prerequisite and update records, and what the additional section held.
struct Records {
    records: Vec<Record>,
    /// The OPT record's EDNS version, if there was one.
    opt_version: Option<u8>,
    has_tsig: bool,
}

/// Why the records could not be read.
struct RecordsError {
    reason: String,
    /// Knot's parser would not have got past the header (its `parsed`
    /// offset stays at 12): with no zone section, Knot ignores the message.
    nothing_parsed: bool,
}

/// Reads the prerequisite, update and additional sections: the records of the
/// first two, and whether an OPT and a TSIG record were there.
fn records(
    msg: &[u8],
    mut pos: usize,
    pr: usize,
    up: usize,
    ad: usize,
) -> Result<Records, RecordsError> {
    let at_header = pos == HEADER_LEN;
    let total = pr + up + ad;
    if total > msg.len() / 11 {
        return Err(RecordsError {
            reason: "more records than the message can hold".into(),
            nothing_parsed: at_header,
        });
    }
    let mut out = Vec::with_capacity(pr + up);
    let (mut opt, mut tsig) = (None, false);
    for i in 0..total {
        let (rec, next) = read_record(msg, pos).map_err(|e| RecordsError {
            reason: format!("record {}: {e}", i + 1),
            // Knot fails in the owner or the fixed fields before it moves on.
            nothing_parsed: at_header && i == 0 && !matches!(e, RecordError::BadRdata),
        })?;
        pos = next;
        let additional = i >= pr + up;
        let fail = |reason: &str| RecordsError {
            reason: reason.into(),
            nothing_parsed: false,
        };
        if rec.rtype == Rtype::TSIG {
            if !additional || tsig || i + 1 != total {
                return Err(fail("TSIG not the last record of the additional section"));
            }
            tsig = true;
        }
        if rec.rtype == Rtype::OPT {
            if !additional || opt.is_some() || !options_well_formed(&rec.rdata) {
                return Err(fail("misplaced, repeated or malformed OPT"));
            }
            opt = Some((rec.ttl >> 16) as u8);
        }
        if !additional {
            out.push(rec);
        }
    }
    if pos != msg.len() {
        // Knot cuts a last TSIG off before it looks for trailing bytes.
        return Err(RecordsError {
            reason: "trailing bytes".into(),
            nothing_parsed: at_header && (total == 0 || (total == 1 && tsig)),
        });
    }
    Ok(Records {
        records: out,
        opt_version: opt,
        has_tsig: tsig,
    })
}

/// True if the OPT RDATA is a sequence of whole options.
fn options_well_formed(mut rdata: &[u8]) -> bool {
    while !rdata.is_empty() {
        let Some(len) = be16(rdata, 2) else {
            return false;
        };
        let end = 4 + len as usize;
        if rdata.len() < end {
            return false;
        }
        rdata = &rdata[end..];
    }
    true
}
