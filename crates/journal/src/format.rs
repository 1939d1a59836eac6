//! The bytes of a journal file: the header, record frames and the changeset
//! inside a frame. Pure functions over byte slices; no I/O here.

use lode_wire::{Class, Name, NameRef, Record, Rtype};
use lode_zonedb::Changeset;

/// The first eight bytes of every journal file.
pub(crate) const MAGIC: [u8; 8] = *b"LODEJRNL";
/// The format version this code writes (it reads 1 too: no file id).
pub(crate) const VERSION: u32 = 2;
/// Bytes in front of each record's payload: length, payload CRC, header CRC.
pub(crate) const FRAME_HEADER: usize = 12;
/// The smallest encoded record: root owner (1) + type, class, TTL, RDLENGTH (10).
const MIN_RECORD: usize = 11;

/// CRC-32 of `data`.
fn crc(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

/// CRC-32 of a frame header's first eight bytes (length and payload CRC).
fn header_crc(len: u32, pcrc: u32) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&len.to_le_bytes());
    h.update(&pcrc.to_le_bytes());
    h.finalize()
}

/// Appends the file header for a journal of `origin` to `out`; `id` names
/// this file's incarnation (a new one at each rewrite, see `wal.rs`).
pub(crate) fn encode_header(origin: &Name, id: u64, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    let wire = origin.as_wire();
    // A wire-form name is at most 255 bytes, so its length fits a byte.
    out.push(wire.len() as u8);
    out.extend_from_slice(wire);
    out.extend_from_slice(&id.to_le_bytes());
    let c = crc(&out[start..]);
    out.extend_from_slice(&c.to_le_bytes());
}

/// Why a file header could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeaderError {
    /// The first bytes are not [`MAGIC`].
    Magic,
    /// A version this code does not know.
    Version(u32),
    /// The file ends inside the header.
    Short,
    /// The header's checksum does not match.
    Checksum,
    /// The origin in the header is not a valid name.
    Origin,
}

/// What a file header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    /// The zone.
    pub origin: Name,
    /// The file's incarnation (0: a version 1 file, which has none).
    pub id: u64,
    /// The header's length in bytes.
    pub len: usize,
}

/// Reads the file header.
pub(crate) fn decode_header(data: &[u8]) -> Result<Header, HeaderError> {
    if data.len() < MAGIC.len() || data[..MAGIC.len()] != MAGIC {
        return Err(if MAGIC.starts_with(data) {
            HeaderError::Short
        } else {
            HeaderError::Magic
        });
    }
    let version = u32::from_le_bytes(le4(data, 8).ok_or(HeaderError::Short)?);
    if version != VERSION && version != 1 {
        return Err(HeaderError::Version(version));
    }
    let olen = *data.get(12).ok_or(HeaderError::Short)? as usize;
    let name_end = 13 + olen;
    let end = if version == 1 { name_end } else { name_end + 8 };
    let stored = le4(data, end).ok_or(HeaderError::Short)?;
    if crc(&data[..end]) != u32::from_le_bytes(stored) {
        return Err(HeaderError::Checksum);
    }
    let origin = Name::from_wire(&data[13..name_end]).map_err(|_| HeaderError::Origin)?;
    let id = match data.get(name_end..end) {
        Some(b) if b.len() == 8 => {
            u64::from_le_bytes(b.try_into().map_err(|_| HeaderError::Short)?)
        }
        _ => 0,
    };
    Ok(Header {
        origin,
        id,
        len: end + 4,
    })
}

/// Four bytes at `at`, if the slice has them.
fn le4(data: &[u8], at: usize) -> Option<[u8; 4]> {
    data.get(at..at + 4)?.try_into().ok()
}

/// Why a changeset could not be encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EncodeError {
    /// A record's RDATA is longer than 65,535 bytes.
    RdataTooLong,
    /// The encoded changeset is longer than 4 GiB − 1, or has more records than that.
    TooLarge,
}

/// The first byte of a payload's trailer: the primary's serial follows.
const UPSTREAM: u8 = b'U';

/// Appends one frame holding `cs` to `out`; on error `out` is as it was.
#[cfg(test)]
pub(crate) fn encode_frame(cs: &Changeset, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    encode_frame_marked(cs, None, out)
}

/// [`encode_frame`] with the primary's serial the changeset brought the
/// zone to (a zone signed here, see [`crate::Journal::append_marked`]).
pub(crate) fn encode_frame_marked(
    cs: &Changeset,
    upstream: Option<u32>,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    let start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER]);
    if let Err(e) = encode_changeset(cs, out) {
        out.truncate(start);
        return Err(e);
    }
    if let Some(u) = upstream {
        out.push(UPSTREAM);
        out.extend_from_slice(&u.to_be_bytes());
    }
    close_frame(out, start)
}

/// Fills in the header of the frame begun at `start` (its payload is the
/// rest of `out`); on error the frame is taken off again.
fn close_frame(out: &mut Vec<u8>, start: usize) -> Result<(), EncodeError> {
    let Ok(len) = u32::try_from(out.len() - start - FRAME_HEADER) else {
        out.truncate(start);
        return Err(EncodeError::TooLarge);
    };
    let pcrc = crc(&out[start + FRAME_HEADER..]);
    let hcrc = header_crc(len, pcrc);
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&pcrc.to_le_bytes());
    out[start + 8..start + 12].copy_from_slice(&hcrc.to_le_bytes());
    Ok(())
}

/// Appends one frame holding `payload` as it is (the commit log's records).
pub(crate) fn encode_raw_frame(payload: &[u8], out: &mut Vec<u8>) -> Result<(), EncodeError> {
    let start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER]);
    out.extend_from_slice(payload);
    close_frame(out, start)
}

/// Appends the payload of a frame: both SOAs, then the removed and added records.
fn encode_changeset(cs: &Changeset, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    encode_record(&cs.soa_from, out)?;
    encode_record(&cs.soa_to, out)?;
    for list in [&cs.removed, &cs.added] {
        let n = u32::try_from(list.len()).map_err(|_| EncodeError::TooLarge)?;
        out.extend_from_slice(&n.to_be_bytes());
        for r in list {
            encode_record(r, out)?;
        }
    }
    Ok(())
}

/// Appends a record as in an uncompressed DNS message: owner, type, class,
/// TTL, RDLENGTH, RDATA.
fn encode_record(r: &Record, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    u16::try_from(r.rdata.len()).map_err(|_| EncodeError::RdataTooLong)?;
    r.put_uncompressed(out);
    Ok(())
}

/// What the bytes at some offset hold, read as a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Frame<'a> {
    /// A whole frame with good checksums: its payload and its total length.
    Whole(&'a [u8], usize),
    /// Fewer bytes than a frame header.
    ShortHeader,
    /// The header's own checksum does not match.
    BadHeader,
    /// A good header whose payload runs past the end of the data.
    PastEnd,
    /// A good header, a whole payload, a payload checksum that does not match.
    BadPayload,
}

/// Reads the frame at the start of `data`.
pub(crate) fn check_frame(data: &[u8]) -> Frame<'_> {
    let (Some(l), Some(p), Some(h)) = (le4(data, 0), le4(data, 4), le4(data, 8)) else {
        return Frame::ShortHeader;
    };
    let (len, pcrc) = (u32::from_le_bytes(l), u32::from_le_bytes(p));
    if header_crc(len, pcrc) != u32::from_le_bytes(h) {
        return Frame::BadHeader;
    }
    let total = FRAME_HEADER + len as usize;
    let Some(payload) = data.get(FRAME_HEADER..total) else {
        return Frame::PastEnd;
    };
    if crc(payload) != pcrc {
        return Frame::BadPayload;
    }
    Frame::Whole(payload, total)
}

/// The first offset at or after `from` where a whole, good frame starts.
///
/// Only used after a bad frame, to tell a torn tail (nothing good after it)
/// from damage in the middle. A candidate costs a comparison, at most one CRC
/// of eight bytes, and a CRC of its payload only if its header checksum
/// matches (chance 2⁻³² for garbage), so the scan is linear in the bytes left.
pub(crate) fn find_frame(data: &[u8], from: usize) -> Option<usize> {
    (from..data.len().saturating_sub(FRAME_HEADER - 1)).find(|&q| {
        // A length running past the end rules a candidate out before any CRC.
        let fits = le4(data, q)
            .is_some_and(|l| u32::from_le_bytes(l) as usize <= data.len() - q - FRAME_HEADER);
        fits && matches!(check_frame(&data[q..]), Frame::Whole(..))
    })
}

/// Reads a changeset from a frame's payload (all of it must be used).
pub(crate) fn decode_changeset(data: &[u8]) -> Result<Changeset, &'static str> {
    decode_changeset_marked(data).map(|(cs, _)| cs)
}

/// [`decode_changeset`] and the primary's serial in the trailer, if any.
pub(crate) fn decode_changeset_marked(
    mut data: &[u8],
) -> Result<(Changeset, Option<u32>), &'static str> {
    let soa_from = decode_record(&mut data)?;
    let soa_to = decode_record(&mut data)?;
    let removed = decode_list(&mut data)?;
    let added = decode_list(&mut data)?;
    let upstream = match data {
        [] => None,
        [UPSTREAM, a, b, c, d] => Some(u32::from_be_bytes([*a, *b, *c, *d])),
        _ => return Err("bytes after the last record"),
    };
    let cs = Changeset {
        soa_from,
        soa_to,
        removed,
        added,
    };
    Ok((cs, upstream))
}

/// Reads a record count and that many records.
fn decode_list(data: &mut &[u8]) -> Result<Vec<Record>, &'static str> {
    let n = u32::from_be_bytes(take(data, 4)?.try_into().map_err(|_| "short count")?) as usize;
    if n > data.len() / MIN_RECORD {
        return Err("record count larger than the payload can hold");
    }
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(decode_record(data)?);
    }
    Ok(v)
}

/// Reads one record written by [`encode_record`].
fn decode_record(data: &mut &[u8]) -> Result<Record, &'static str> {
    let (owner, rest) = NameRef::split_from(data).map_err(|_| "bad owner name")?;
    let owner = Name::from_wire(owner.as_wire()).map_err(|_| "bad owner name")?;
    *data = rest;
    let f = take(data, 10)?;
    let rtype = Rtype(u16::from_be_bytes([f[0], f[1]]));
    let class = Class(u16::from_be_bytes([f[2], f[3]]));
    let ttl = u32::from_be_bytes([f[4], f[5], f[6], f[7]]);
    let rdlen = u16::from_be_bytes([f[8], f[9]]) as usize;
    let rdata = take(data, rdlen)?.into();
    Ok(Record {
        owner,
        class,
        rtype,
        ttl,
        rdata,
    })
}

/// Splits `n` bytes off the front of `data`.
fn take<'a>(data: &mut &'a [u8], n: usize) -> Result<&'a [u8], &'static str> {
    if data.len() < n {
        return Err("record runs past the payload");
    }
    let (head, rest) = data.split_at(n);
    *data = rest;
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(owner: &str, rtype: Rtype, rdata: &[u8]) -> Record {
        Record {
            owner: Name::parse(owner, None).unwrap(),
            class: Class::IN,
            rtype,
            ttl: 3600,
            rdata: rdata.into(),
        }
    }

    #[test]
    fn header_round_trip_and_errors() {
        let origin = Name::parse("example.com.", None).unwrap();
        let mut h = Vec::new();
        encode_header(&origin, 0x1122_3344_5566_7788, &mut h);
        let hd = decode_header(&h).unwrap();
        let n = hd.len;
        assert_eq!(hd.origin, origin);
        assert_eq!(hd.id, 0x1122_3344_5566_7788);
        assert_eq!(n, h.len());
        // Version 1 (no file id) is still read.
        let mut v1 = Vec::new();
        v1.extend_from_slice(&MAGIC);
        v1.extend_from_slice(&1u32.to_le_bytes());
        v1.push(origin.as_wire().len() as u8);
        v1.extend_from_slice(origin.as_wire());
        let c = crc(&v1);
        v1.extend_from_slice(&c.to_le_bytes());
        let old = decode_header(&v1).unwrap();
        assert_eq!((old.origin, old.id, old.len), (origin.clone(), 0, v1.len()));
        assert_eq!(decode_header(&h[..5]), Err(HeaderError::Short));
        assert_eq!(decode_header(&h[..n - 1]), Err(HeaderError::Short));
        assert_eq!(decode_header(b"GARBAGE!xx"), Err(HeaderError::Magic));
        let mut v = h.clone();
        v[8] = 9;
        assert_eq!(decode_header(&v), Err(HeaderError::Version(9)));
        let mut c = h.clone();
        c[14] ^= 1;
        assert_eq!(decode_header(&c), Err(HeaderError::Checksum));
    }

    #[test]
    fn frame_round_trip_and_checks() {
        let soa = |s: u32| {
            let mut r = vec![0u8, 0];
            r.extend_from_slice(&s.to_be_bytes());
            r.extend_from_slice(&[0; 16]);
            rec("example.com.", Rtype::SOA, &r)
        };
        let cs = Changeset {
            soa_from: soa(1),
            soa_to: soa(2),
            removed: vec![rec("a.example.com.", Rtype::A, &[1, 2, 3, 4])],
            added: vec![rec("b.example.com.", Rtype::TXT, b"\x02hi")],
        };
        let mut buf = vec![7u8; 3];
        encode_frame(&cs, &mut buf).unwrap();
        let Frame::Whole(p, total) = check_frame(&buf[3..]) else {
            panic!("not whole")
        };
        assert_eq!(total, buf.len() - 3);
        assert_eq!(decode_changeset(p).unwrap(), cs);
        assert_eq!(check_frame(&buf[3..buf.len() - 1]), Frame::PastEnd);
        assert_eq!(check_frame(&buf[3..10]), Frame::ShortHeader);
        let mut bad = buf.clone();
        bad[5] ^= 0x10;
        assert_eq!(check_frame(&bad[3..]), Frame::BadHeader);
        let mut bad = buf.clone();
        let last = bad.len() - 1;
        bad[last] ^= 0x10;
        assert_eq!(check_frame(&bad[3..]), Frame::BadPayload);
        assert_eq!(find_frame(&buf, 0), Some(3));
        assert_eq!(find_frame(&buf, 4), None);

        let big = Changeset {
            added: vec![rec("x.example.com.", Rtype::NULL, &vec![0; 70_000])],
            ..cs
        };
        let before = buf.clone();
        assert_eq!(encode_frame(&big, &mut buf), Err(EncodeError::RdataTooLong));
        assert_eq!(buf, before);
    }

    #[test]
    fn decode_rejects_garbage_without_panicking() {
        for n in 0..64u8 {
            let data: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37) ^ n).collect();
            let _ = decode_changeset(&data);
        }
        // A huge record count in a small payload is refused before allocating.
        let mut d = Vec::new();
        for _ in 0..2 {
            d.extend_from_slice(&[0, 0, 6, 0, 1, 0, 0, 0, 0, 0, 0]);
        }
        d.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode_changeset(&d).is_err());
    }
}
