//! One resource record with its RDATA in wire form (names uncompressed), and
//! reading records from messages as Knot DNS's packet parser does.

use std::borrow::Cow;
use std::fmt;

use crate::{Class, Name, NameBuf, NameRef, Rtype};

/// A resource record as read from a zone file, an UPDATE or a transfer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The owner name, case preserved.
    pub owner: Name,
    /// The class (almost always IN).
    pub class: Class,
    /// The type.
    pub rtype: Rtype,
    /// Time to live in seconds.
    pub ttl: u32,
    /// RDATA in uncompressed wire form.
    pub rdata: Box<[u8]>,
}

impl Record {
    /// Appends the record as an uncompressed message holds it: owner, type,
    /// class, TTL, RDLENGTH, RDATA (RDATA longer than 65,535 bytes is the
    /// caller's to refuse first).
    pub fn put_uncompressed(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.owner.as_wire());
        out.extend_from_slice(&self.rtype.0.to_be_bytes());
        out.extend_from_slice(&self.class.0.to_be_bytes());
        out.extend_from_slice(&self.ttl.to_be_bytes());
        out.extend_from_slice(&(self.rdata.len() as u16).to_be_bytes());
        out.extend_from_slice(&self.rdata);
    }

    /// The record borrowed.
    pub fn as_record_ref(&self) -> RecordRef<'_> {
        RecordRef {
            owner: self.owner.as_ref(),
            class: self.class,
            rtype: self.rtype,
            ttl: self.ttl,
            rdata: &self.rdata,
        }
    }
}

/// A resource record borrowed from where it is held (a batch of records
/// read from a zone file, a [`Record`]): nothing allocated to hand it on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// The owner name, case preserved.
    pub owner: NameRef<'a>,
    /// The class.
    pub class: Class,
    /// The type.
    pub rtype: Rtype,
    /// Time to live in seconds.
    pub ttl: u32,
    /// RDATA in uncompressed wire form.
    pub rdata: &'a [u8],
}

impl RecordRef<'_> {
    /// The record owned.
    pub fn to_record(&self) -> Record {
        Record {
            owner: self.owner.to_name(),
            class: self.class,
            rtype: self.rtype,
            ttl: self.ttl,
            rdata: self.rdata.into(),
        }
    }
}

use crate::rdata::{descriptor, Block};

/// Types whose RDATA names Knot lower-cases (RFC 4034 §6.2, less NSEC).
pub fn lowercased(rtype: Rtype) -> bool {
    descriptor(rtype).lower
}

/// `rdata` (uncompressed) with the names Knot lower-cases lower-cased: the
/// form in which Knot stores and compares RDATA.
pub fn canonical_rdata(rtype: Rtype, rdata: &[u8]) -> Cow<'_, [u8]> {
    // Lower-casing changes only upper-case ASCII bytes: none, nothing to do.
    if !lowercased(rtype) || !rdata.iter().any(u8::is_ascii_uppercase) {
        return Cow::Borrowed(rdata);
    }
    let mut out = rdata.to_vec();
    let mut at = 0;
    for block in descriptor(rtype).blocks {
        let Some(rest) = rdata.get(at..) else {
            break;
        };
        match *block {
            Block::Fixed(n) => at += n,
            Block::Name => match NameRef::split_from(rest) {
                Ok((name, _)) => {
                    let len = name.wire_len();
                    out[at..at + len].make_ascii_lowercase();
                    at += len;
                }
                Err(_) => break,
            },
            Block::NaptrHeader => match naptr_header_len(rest) {
                Some(n) => at += n,
                None => break,
            },
            Block::Remainder => break,
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

/// Why a record could not be read from a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordError {
    /// The message ends inside the record.
    Truncated,
    /// A name cannot be read.
    BadName,
    /// The RDATA does not fit its type's layout.
    BadRdata,
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecordError::Truncated => "record truncated",
            RecordError::BadName => "malformed name",
            RecordError::BadRdata => "malformed RDATA",
        })
    }
}

impl std::error::Error for RecordError {}

/// Reads one record at `pos` of `msg` as Knot DNS's packet parser does (RDATA
/// names decompressed, layout checked, canonical form: owner lower-cased,
/// RDATA names lower-cased for the RFC 4034 §6.2 types); returns it and the
/// offset after it.
pub fn read_record(msg: &[u8], pos: usize) -> Result<(Record, usize), RecordError> {
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
    let d = descriptor(rtype);
    let (blocks, known) = (d.blocks, d.known);
    let mut rdata = Vec::with_capacity(rdlen + 16);
    if rdlen == 0 {
        // Empty RDATA: the deletions and prerequisites of classes NONE and
        // ANY, APL, and types Knot does not know.
        if class == Class::IN && rtype != Rtype::APL && known {
            return Err(RecordError::BadRdata);
        }
    } else {
        let lower = d.lower;
        let mut at = start;
        for block in blocks {
            match *block {
                Block::Fixed(n) => {
                    let b = msg.get(at..at + n).filter(|_| at + n <= end);
                    rdata.extend_from_slice(b.ok_or(RecordError::BadRdata)?);
                    at += n;
                }
                Block::Name => {
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
                Block::NaptrHeader => {
                    let n = naptr_header_len(&msg[at..end]).ok_or(RecordError::BadRdata)?;
                    rdata.extend_from_slice(&msg[at..at + n]);
                    at += n;
                }
                Block::Remainder => {
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
