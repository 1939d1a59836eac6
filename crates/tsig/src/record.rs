//! Finding the TSIG record of a message, reading its RDATA, feeding the
//! RFC 8945 §4.3 digest input to an HMAC, and appending a TSIG record.

use lode_wire::message::HEADER_LEN;
use lode_wire::{Class, NameBuf, NameRef, Rtype};

use crate::algorithm::Keyed;

/// The TSIG record of a message, read in place.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TsigRr<'m> {
    /// Offset of the record's first octet: the message without TSIG is `msg[..start]`.
    pub start: usize,
    /// Owner (the key name), decompressed, case as sent.
    pub key_name: NameBuf,
    /// Class as sent (ANY).
    pub class: u16,
    /// TTL as sent (0).
    pub ttl: u32,
    /// Algorithm name, case as sent.
    pub algorithm: NameBuf,
    /// Time signed (48 bits).
    pub time_signed: u64,
    /// Fudge.
    pub fudge: u16,
    /// The MAC.
    pub mac: &'m [u8],
    /// Original ID.
    pub original_id: u16,
    /// TSIG error.
    pub error: u16,
    /// Other data.
    pub other: &'m [u8],
}

/// The message cannot be walked or its TSIG record is misplaced, repeated or
/// unreadable: FORMERR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Malformed;

fn u16_at(msg: &[u8], pos: usize) -> Result<u16, Malformed> {
    let b = msg.get(pos..pos + 2).ok_or(Malformed)?;
    Ok(u16::from_be_bytes([b[0], b[1]]))
}

fn u32_at(msg: &[u8], pos: usize) -> Result<u32, Malformed> {
    let b = msg.get(pos..pos + 4).ok_or(Malformed)?;
    Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// The offset just past the (possibly compressed) name at `pos`.
fn skip_name(msg: &[u8], mut pos: usize) -> Result<usize, Malformed> {
    loop {
        let b = *msg.get(pos).ok_or(Malformed)?;
        match b & 0xC0 {
            0x00 if b == 0 => return Ok(pos + 1),
            0x00 => pos += 1 + usize::from(b),
            0xC0 => {
                return if pos + 2 <= msg.len() {
                    Ok(pos + 2)
                } else {
                    Err(Malformed)
                }
            }
            _ => return Err(Malformed),
        }
    }
}

/// Walks `msg` and returns its TSIG record, if it has one. As Knot DNS: a
/// TSIG outside the additional section, not last, or twice, or RDATA that
/// does not hold exactly the TSIG fields, or bytes after the last record, is
/// malformed.
pub(crate) fn find(msg: &[u8]) -> Result<Option<TsigRr<'_>>, Malformed> {
    if msg.len() < HEADER_LEN {
        return Err(Malformed);
    }
    let count = |i: usize| usize::from(u16::from_be_bytes([msg[4 + 2 * i], msg[5 + 2 * i]]));
    let (qd, an, ns, ar) = (count(0), count(1), count(2), count(3));
    // No TSIG can be there: spare the walk (the server's parser checks the rest).
    if ar == 0 {
        return Ok(None);
    }
    let mut pos = HEADER_LEN;
    for _ in 0..qd {
        pos = skip_name(msg, pos)? + 4;
    }
    let total = an + ns + ar;
    let mut found = None;
    for i in 0..total {
        let start = pos;
        pos = skip_name(msg, pos)?;
        let rtype = u16_at(msg, pos)?;
        let rdlen = usize::from(u16_at(msg, pos + 8)?);
        let rdata_at = pos + 10;
        let end = rdata_at + rdlen;
        if end > msg.len() {
            return Err(Malformed);
        }
        if rtype == Rtype::TSIG.0 {
            if i + 1 != total || i < an + ns {
                return Err(Malformed);
            }
            found = Some(read(msg, start, pos, rdata_at, end)?);
        }
        pos = end;
    }
    if pos != msg.len() {
        return Err(Malformed);
    }
    Ok(found)
}

/// Reads the TSIG record at `start` (fixed fields at `fixed`, RDATA `rdata..end`).
fn read(
    msg: &[u8],
    start: usize,
    fixed: usize,
    rdata: usize,
    end: usize,
) -> Result<TsigRr<'_>, Malformed> {
    let mut key_name = NameBuf::new();
    key_name
        .read_compressed(msg, start)
        .map_err(|_| Malformed)?;
    let class = u16_at(msg, fixed + 2)?;
    let ttl = u32_at(msg, fixed + 4)?;
    let rd = &msg[..end];
    let mut algorithm = NameBuf::new();
    let mut p = algorithm
        .read_compressed(rd, rdata)
        .map_err(|_| Malformed)?;
    let t = rd.get(p..p + 6).ok_or(Malformed)?;
    let time_signed = t.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    let fudge = u16_at(rd, p + 6)?;
    let mac_len = usize::from(u16_at(rd, p + 8)?);
    p += 10;
    let mac = rd.get(p..p + mac_len).ok_or(Malformed)?;
    p += mac_len;
    let original_id = u16_at(rd, p)?;
    let error = u16_at(rd, p + 2)?;
    let other_len = usize::from(u16_at(rd, p + 4)?);
    p += 6;
    let other = rd.get(p..p + other_len).ok_or(Malformed)?;
    if p + other_len != end {
        return Err(Malformed);
    }
    Ok(TsigRr {
        start,
        key_name,
        class,
        ttl,
        algorithm,
        time_signed,
        fudge,
        mac,
        original_id,
        error,
        other,
    })
}

/// Feeds a name in canonical form (lower case) without allocating.
fn update_lower(h: &mut Keyed, name: NameRef<'_>) {
    h.update(lode_wire::name::NameBuf::lowered(name).as_ref().as_wire());
}

/// Feeds a prior MAC (the request MAC, or the previous message's) with its
/// length; nothing when it is empty, as Knot DNS does.
pub(crate) fn update_prior(h: &mut Keyed, prior: &[u8]) {
    if !prior.is_empty() {
        h.update(&(prior.len() as u16).to_be_bytes());
        h.update(prior);
    }
}

/// Feeds a message without its TSIG record: `body` is the message up to
/// the TSIG record, its header taking `id` and `arcount` instead.
pub(crate) fn update_message(h: &mut Keyed, body: &[u8], id: u16, arcount: u16) {
    let mut header = [0u8; HEADER_LEN];
    header.copy_from_slice(&body[..HEADER_LEN]);
    header[..2].copy_from_slice(&id.to_be_bytes());
    header[10..12].copy_from_slice(&arcount.to_be_bytes());
    h.update(&header);
    h.update(&body[HEADER_LEN..]);
}

/// The TSIG variables (RFC 8945 §4.3.3) of a record.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Vars<'a> {
    pub key_name: NameRef<'a>,
    pub class: u16,
    pub ttl: u32,
    pub algorithm: NameRef<'a>,
    pub time_signed: u64,
    pub fudge: u16,
    pub error: u16,
    pub other: &'a [u8],
}

/// Feeds the TSIG variables: names lower-cased, all fields (§4.3.3).
pub(crate) fn update_vars(h: &mut Keyed, v: &Vars<'_>) {
    update_lower(h, v.key_name);
    h.update(&v.class.to_be_bytes());
    h.update(&v.ttl.to_be_bytes());
    update_lower(h, v.algorithm);
    update_timers(h, v.time_signed, v.fudge);
    h.update(&v.error.to_be_bytes());
    h.update(&(v.other.len() as u16).to_be_bytes());
    h.update(v.other);
}

/// Feeds the TSIG timers only (§5.3.1, messages after the first of a stream).
pub(crate) fn update_timers(h: &mut Keyed, time_signed: u64, fudge: u16) {
    h.update(&time_signed.to_be_bytes()[2..]);
    h.update(&fudge.to_be_bytes());
}

/// Why a TSIG record could not be appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SignError {
    /// `len` is shorter than a header or longer than the buffer.
    NotAMessage,
    /// The buffer cannot hold the TSIG record.
    NoSpace,
    /// ARCOUNT is already 65535.
    TooManyRecords,
}

impl std::fmt::Display for SignError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SignError::NotAMessage => "not a DNS message",
            SignError::NoSpace => "no room for the TSIG record",
            SignError::TooManyRecords => "ARCOUNT is full",
        })
    }
}

impl std::error::Error for SignError {}

/// Checks that `buf[..len]` is a message a record can be added to.
pub(crate) fn check_message(buf: &[u8], len: usize) -> Result<u16, SignError> {
    if len < HEADER_LEN || len > buf.len() {
        return Err(SignError::NotAMessage);
    }
    let ar = u16::from_be_bytes([buf[10], buf[11]]);
    if ar == u16::MAX {
        return Err(SignError::TooManyRecords);
    }
    Ok(ar)
}

/// The fields of a TSIG record to write.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rr<'a> {
    pub key_name: NameRef<'a>,
    pub algorithm: NameRef<'a>,
    pub time_signed: u64,
    pub fudge: u16,
    pub mac: &'a [u8],
    pub original_id: u16,
    pub error: u16,
    pub other: &'a [u8],
}

/// Appends the TSIG record `rr` (class ANY, TTL 0, names uncompressed) to the
/// message `buf[..len]`, increments ARCOUNT and returns the new length.
pub(crate) fn append(buf: &mut [u8], len: usize, rr: &Rr<'_>) -> Result<usize, SignError> {
    let ar = check_message(buf, len)?;
    let kn = rr.key_name.as_wire();
    let alg = rr.algorithm.as_wire();
    let rdlen = alg.len() + 16 + rr.mac.len() + rr.other.len();
    let total = kn.len() + 10 + rdlen;
    let out = buf.get_mut(len..len + total).ok_or(SignError::NoSpace)?;
    let mut w = Writer { out, pos: 0 };
    w.put(kn);
    w.put(&Rtype::TSIG.0.to_be_bytes());
    w.put(&Class::ANY.0.to_be_bytes());
    w.put(&0u32.to_be_bytes());
    w.put(&(rdlen as u16).to_be_bytes());
    w.put(alg);
    w.put(&rr.time_signed.to_be_bytes()[2..]);
    w.put(&rr.fudge.to_be_bytes());
    w.put(&(rr.mac.len() as u16).to_be_bytes());
    w.put(rr.mac);
    w.put(&rr.original_id.to_be_bytes());
    w.put(&rr.error.to_be_bytes());
    w.put(&(rr.other.len() as u16).to_be_bytes());
    w.put(rr.other);
    buf[10..12].copy_from_slice(&(ar + 1).to_be_bytes());
    Ok(len + total)
}

/// A cursor over a slice already checked to be long enough.
struct Writer<'a> {
    out: &'a mut [u8],
    pos: usize,
}

impl Writer<'_> {
    fn put(&mut self, b: &[u8]) {
        self.out[self.pos..self.pos + b.len()].copy_from_slice(b);
        self.pos += b.len();
    }
}

/// The message ID of `buf` (at least a header long).
pub(crate) fn message_id(buf: &[u8]) -> u16 {
    u16::from_be_bytes([buf[0], buf[1]])
}

/// A time as the 48-bit field carries it.
pub(crate) fn time48(t: u64) -> [u8; 6] {
    let b = t.to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

/// The ARCOUNT a message had before its TSIG record was added.
pub(crate) fn arcount_without_tsig(msg: &[u8]) -> u16 {
    u16::from_be_bytes([msg[10], msg[11]]).wrapping_sub(1)
}
