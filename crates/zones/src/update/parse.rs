//! Reading an UPDATE message as Knot DNS 3.2's packet parser does: every
//! record's RDATA is checked against its type's layout, names in RDATA are
//! decompressed, and records are put in canonical form (owner lower-cased;
//! RDATA names lower-cased for the RFC 4034 §6.2 types).

use std::borrow::Cow;

use lode_wire::message::HEADER_LEN;
use lode_wire::{rcode, Class, Name, NameBuf, NameRef, Record, Rtype};

use super::{UpdateError, UpdateRequest};

/// One block of an RDATA layout, as Knot's descriptors describe it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    /// Bytes of a fixed length.
    Fixed(usize),
    /// A domain name (decompressed).
    Name,
    /// NAPTR order, preference and three character strings.
    NaptrHeader,
    /// Whatever is left.
    Remainder,
}

use Block::{Fixed, Name as N, NaptrHeader, Remainder};

/// The layout of a type's RDATA and whether Knot knows the type at all
/// (an unknown type may have empty RDATA in class IN).
fn layout(rtype: Rtype) -> (&'static [Block], bool) {
    const REM: &[Block] = &[Remainder];
    let blocks: &'static [Block] = match rtype.0 {
        1 => &[Fixed(4)],                            // A
        2 | 5 | 12 | 3 | 4 | 7 | 8 | 9 | 39 => &[N], // NS CNAME PTR MD MF MB MG MR DNAME
        6 => &[N, N, Fixed(20)],                     // SOA
        14 | 17 => &[N, N],                          // MINFO RP
        15 | 18 | 21 | 36 | 107 => &[Fixed(2), N],   // MX AFSDB RT KX LP
        24 | 46 => &[Fixed(18), N, Remainder],       // SIG RRSIG
        28 | 29 => &[Fixed(16)],                     // AAAA LOC
        33 => &[Fixed(6), N],                        // SRV
        35 => &[NaptrHeader, N],                     // NAPTR
        26 => &[Fixed(2), N, N],                     // PX
        30 | 47 | 249 | 250 => &[N, Remainder],      // NXT NSEC TKEY TSIG
        104 | 106 => &[Fixed(10)],                   // NID L64
        105 | 108 => &[Fixed(6)],                    // L32 EUI48
        109 => &[Fixed(8)],                          // EUI64
        10 | 13 | 16 | 25 | 37 | 41 | 42 | 43 | 44 | 45 | 48 | 49 | 50 | 51 | 52 | 53 | 59 | 60
        | 61 | 62 | 63 | 64 | 65 | 99 | 251 | 252 | 255 | 256 | 257 => REM,
        _ => return (REM, false),
    };
    (blocks, true)
}

/// Types whose RDATA names Knot lower-cases (RFC 4034 §6.2, less NSEC).
pub(crate) fn lowercased(rtype: Rtype) -> bool {
    matches!(
        rtype.0,
        2 | 3
            | 4
            | 5
            | 6
            | 7
            | 8
            | 9
            | 12
            | 14
            | 15
            | 17
            | 18
            | 21
            | 24
            | 26
            | 30
            | 35
            | 36
            | 33
            | 39
            | 46
    )
}

/// `rdata` (uncompressed) with the names Knot lower-cases lower-cased: the
/// form in which Knot stores and compares RDATA.
pub(crate) fn canonical_rdata(rtype: Rtype, rdata: &[u8]) -> Cow<'_, [u8]> {
    if !lowercased(rtype) {
        return Cow::Borrowed(rdata);
    }
    let mut out = rdata.to_vec();
    let mut at = 0;
    for block in layout(rtype).0 {
        let Some(rest) = rdata.get(at..) else {
            break;
        };
        match *block {
            Fixed(n) => at += n,
            N => match NameRef::split_from(rest) {
                Ok((name, _)) => {
                    let len = name.wire_len();
                    out[at..at + len].make_ascii_lowercase();
                    at += len;
                }
                Err(_) => break,
            },
            NaptrHeader => match naptr_header_len(rest) {
                Some(n) => at += n,
                None => break,
            },
            Remainder => break,
        }
    }
    Cow::Owned(out)
}

/// Length of a NAPTR header (order, preference, flags, services, regexp)
/// at the start of `data`, if whole.
fn naptr_header_len(data: &[u8]) -> Option<usize> {
    let mut pos = 4;
    for _ in 0..3 {
        let len = *data.get(pos)? as usize;
        pos += 1 + len;
    }
    (pos <= data.len()).then_some(pos)
}

/// Why a record could not be read (all answered with FORMERR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordError {
    /// The message ends inside the record.
    Truncated,
    /// A name cannot be read.
    BadName,
    /// The RDATA does not fit its type's layout.
    BadRdata,
}

/// Reads one record at `pos` of `msg` as Knot does (RDATA names decompressed,
/// layout checked, canonical form); returns it and the offset after it.
pub fn read_record(msg: &[u8], pos: usize) -> Result<(Record, usize), &'static str> {
    read_record_inner(msg, pos).map_err(|e| match e {
        RecordError::Truncated => "record truncated",
        RecordError::BadName => "malformed name",
        RecordError::BadRdata => "malformed RDATA",
    })
}

fn be16(msg: &[u8], pos: usize) -> Option<u16> {
    msg.get(pos..pos + 2)
        .map(|b| u16::from_be_bytes([b[0], b[1]]))
}

pub(crate) fn read_record_inner(msg: &[u8], pos: usize) -> Result<(Record, usize), RecordError> {
    let mut owner = NameBuf::new();
    let pos = owner
        .read_compressed(msg, pos)
        .map_err(|_| RecordError::BadName)?;
    let fixed = msg.get(pos..pos + 10).ok_or(RecordError::Truncated)?;
    let rtype = Rtype(u16::from_be_bytes([fixed[0], fixed[1]]));
    let class = Class(u16::from_be_bytes([fixed[2], fixed[3]]));
    let ttl = u32::from_be_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]);
    let rdlen = u16::from_be_bytes([fixed[8], fixed[9]]) as usize;
    let start = pos + 10;
    let end = start + rdlen;
    if end > msg.len() {
        return Err(RecordError::Truncated);
    }
    let (blocks, known) = layout(rtype);
    let mut rdata = Vec::with_capacity(rdlen + 16);
    if rdlen == 0 {
        // Empty RDATA: the deletions and prerequisites of classes NONE and
        // ANY, APL, and types Knot does not know.
        if class == Class::IN && rtype != Rtype::APL && known {
            return Err(RecordError::BadRdata);
        }
    } else {
        let lower = lowercased(rtype);
        let mut at = start;
        for block in blocks {
            match *block {
                Fixed(n) => {
                    let b = msg.get(at..at + n).filter(|_| at + n <= end);
                    rdata.extend_from_slice(b.ok_or(RecordError::BadRdata)?);
                    at += n;
                }
                N => {
                    let mut name = NameBuf::new();
                    // The name as written (with its pointer) must lie inside
                    // the RDATA; what a pointer reaches may lie anywhere before.
                    let next = name
                        .read_compressed(&msg[..end], at)
                        .map_err(|_| RecordError::BadRdata)?;
                    let wire = name.as_ref().as_wire();
                    if lower {
                        rdata.extend(wire.iter().map(|b| b.to_ascii_lowercase()));
                    } else {
                        rdata.extend_from_slice(wire);
                    }
                    at = next;
                }
                NaptrHeader => {
                    let n = naptr_header_len(&msg[at..end]).ok_or(RecordError::BadRdata)?;
                    rdata.extend_from_slice(&msg[at..at + n]);
                    at += n;
                }
                Remainder => {
                    rdata.extend_from_slice(&msg[at..end]);
                    at = end;
                }
            }
        }
        if at != end {
            return Err(RecordError::BadRdata);
        }
    }
    let owner = Name::from_wire(&owner.as_ref().as_wire().to_ascii_lowercase())
        .map_err(|_| RecordError::BadName)?;
    Ok((
        Record {
            owner,
            class,
            rtype,
            ttl,
            rdata: rdata.into(),
        },
        end,
    ))
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
        let (rec, next) = read_record_inner(msg, pos).map_err(|e| RecordsError {
            reason: format!(
                "record {}: {}",
                i + 1,
                match e {
                    RecordError::Truncated => "record truncated",
                    RecordError::BadName => "malformed name",
                    RecordError::BadRdata => "malformed RDATA",
                }
            ),
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
