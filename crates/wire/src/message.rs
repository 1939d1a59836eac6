//! DNS messages: the header, the question, EDNS(0) (RFC 6891), and a bounded
//! response writer with Knot-style name compression.
//!
//! ```text
//!  query bytes ──parse_query──▶ Query { header, Question (NameBuf), Option<Edns> }
//!                    └──────▶ ParseError::Drop | ParseError::FormErr (no OPT echoed)
//!
//!  &mut [u8] ──MessageWriter──▶ header · question · RRsets (whole or rolled back) · OPT
//!                 limit (UDP size), mark/rollback, compression against one
//!                 "suffix" reference (the question, then the last name written)
//! ```
//!
//! Nothing here allocates: names are read into [`NameBuf`]s and written
//! straight into the caller's buffer.

use crate::name::{NameBuf, NameRef};
use crate::rdata;
use crate::{Class, Rtype};

/// Length of the fixed header.
pub const HEADER_LEN: usize = 12;

/// Header flag bits (the 16 bits after the ID).
pub mod flags {
    /// Response.
    pub const QR: u16 = 0x8000;
    /// Authoritative answer.
    pub const AA: u16 = 0x0400;
    /// Truncated.
    pub const TC: u16 = 0x0200;
    /// Recursion desired.
    pub const RD: u16 = 0x0100;
    /// Recursion available.
    pub const RA: u16 = 0x0080;
    /// Authentic data.
    pub const AD: u16 = 0x0020;
    /// Checking disabled.
    pub const CD: u16 = 0x0010;
}

/// EDNS option codes used by the server.
pub mod option {
    /// Extended DNS Error (RFC 8914).
    pub const EDE: u16 = 15;
}

/// The EDNS DO bit (RFC 3225) in the OPT flags.
pub const EDNS_DO: u16 = 0x8000;

/// The query ID (0 if the message is shorter than 2 bytes).
pub fn id(msg: &[u8]) -> u16 {
    match msg {
        [a, b, ..] => u16::from_be_bytes([*a, *b]),
        _ => 0,
    }
}

/// The 16 flag bits after the ID (0 if too short).
pub fn header_flags(msg: &[u8]) -> u16 {
    match msg.get(2..4) {
        Some(f) => u16::from_be_bytes([f[0], f[1]]),
        None => 0,
    }
}

/// The OPCODE of a message.
pub fn opcode(msg: &[u8]) -> u8 {
    ((header_flags(msg) >> 11) & 0xF) as u8
}

/// Where the first question's name ends (the offset of its QTYPE), reading
/// it uncompressed as a first question is: None when the name runs past the
/// message or holds a pointer or a bad label type.
pub fn first_qname_end(msg: &[u8]) -> Option<usize> {
    let mut pos = HEADER_LEN;
    loop {
        match *msg.get(pos)? {
            0 => return Some(pos + 1),
            len @ 1..=63 => pos += 1 + usize::from(len),
            _ => return None,
        }
    }
}

/// The EDNS(0) parameters of a message's OPT record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edns {
    /// Requestor's UDP payload size (the OPT CLASS).
    pub udp_size: u16,
    /// Upper 8 bits of the extended RCODE.
    pub ext_rcode: u8,
    /// EDNS version.
    pub version: u8,
    /// The 16 flag bits (DO = 0x8000).
    pub flags: u16,
    /// Where the OPT RDATA (the options) starts in the message.
    pub options_at: u16,
    /// Length of the OPT RDATA.
    pub options_len: u16,
}

impl Edns {
    /// True if the DO bit is set.
    pub fn dnssec_ok(&self) -> bool {
        self.flags & EDNS_DO != 0
    }

    /// The options of the OPT record in `msg` (the message it was parsed
    /// from): `(code, data)` in the order sent. Well-formed by parsing.
    pub fn options<'m>(&self, msg: &'m [u8]) -> Options<'m> {
        let start = usize::from(self.options_at);
        let end = start + usize::from(self.options_len);
        Options {
            rest: msg.get(start..end).unwrap_or(&[]),
        }
    }

    /// The data of option `code` in `msg`, the last one when the query sent
    /// several (Knot DNS keeps the last of each code).
    pub fn option<'m>(&self, msg: &'m [u8], code: u16) -> Option<&'m [u8]> {
        self.options(msg)
            .filter(|&(c, _)| c == code)
            .last()
            .map(|(_, d)| d)
    }
}

/// EDNS option codes Lode reads or writes.
pub mod edns_option {
    /// Name server identifier (RFC 5001).
    pub const NSID: u16 = 3;
    /// The time a secondary's zone has left before it expires (RFC 7314).
    pub const EXPIRE: u16 = 9;
    /// DNS cookie (RFC 7873).
    pub const COOKIE: u16 = 10;
    /// Padding (RFC 7830).
    pub const PADDING: u16 = 12;
    /// Extended DNS error (RFC 8914).
    pub const EDE: u16 = 15;
}

/// The options of an OPT record: `(code, data)` pairs.
#[derive(Debug, Clone)]
pub struct Options<'m> {
    rest: &'m [u8],
}

impl<'m> Iterator for Options<'m> {
    type Item = (u16, &'m [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let code = be16(self.rest, 0)?;
        let len = usize::from(be16(self.rest, 2)?);
        let data = self.rest.get(4..4 + len)?;
        self.rest = &self.rest[4 + len..];
        Some((code, data))
    }
}

/// The question of a query.
#[derive(Debug, Clone, Copy)]
pub struct Question {
    /// QNAME, case preserved.
    pub qname: NameBuf,
    /// QTYPE.
    pub qtype: Rtype,
    /// QCLASS.
    pub qclass: Class,
}

/// The fields of a query's TSIG record (RFC 8945) that an error response
/// echoes.
#[derive(Debug, Clone, Copy)]
pub struct Tsig {
    /// The key name (the record's owner).
    pub key: NameBuf,
    /// The algorithm name.
    pub algorithm: NameBuf,
    /// Time signed (48 bits) and fudge (16 bits), as sent.
    pub time_and_fudge: [u8; 8],
    /// The original ID.
    pub original_id: u16,
}

/// TSIG error: the key is not known (RFC 8945 §5.2).
pub const TSIG_BADKEY: u16 = 17;

/// A parsed query.
#[derive(Debug, Clone, Copy)]
pub struct Query {
    /// The ID.
    pub id: u16,
    /// The 16 flag bits.
    pub flags: u16,
    /// The question (None when QDCOUNT is 0).
    pub question: Option<Question>,
    /// The OPT record, if any.
    pub edns: Option<Edns>,
    /// The TSIG record, if any (the last record of the message).
    pub tsig: Option<Tsig>,
}

impl Query {
    /// The OPCODE.
    pub fn opcode(&self) -> u8 {
        ((self.flags >> 11) & 0xF) as u8
    }
}

/// Why a query cannot be answered normally.
// The FORMERR variant carries the question inline: boxing it would allocate.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum ParseError {
    /// Not answered at all: shorter than a header, a response, more than one
    /// question, or a question that cannot be read (what Knot DNS does).
    Drop,
    /// Answered with FORMERR, echoing the question if it could be read, and
    /// without an OPT record (bad records after the question, bad or repeated
    /// OPT, trailing bytes).
    FormErr {
        /// The ID.
        id: u16,
        /// The 16 flag bits.
        flags: u16,
        /// The question, if there was one.
        question: Option<Question>,
    },
}

fn be16(msg: &[u8], pos: usize) -> Option<u16> {
    msg.get(pos..pos + 2)
        .map(|b| u16::from_be_bytes([b[0], b[1]]))
}

/// Parses a query: header, at most one question, the records of the other
/// sections (skipped, bounds-checked) and the OPT record of the additional
/// section.
#[allow(clippy::result_large_err)] // no allocation on the query path
pub fn parse_query(msg: &[u8]) -> Result<Query, ParseError> {
    if msg.len() < HEADER_LEN || msg[2] & 0x80 != 0 {
        return Err(ParseError::Drop);
    }
    let id = id(msg);
    let flags = header_flags(msg);
    let count = |i: usize| u16::from_be_bytes([msg[4 + 2 * i], msg[5 + 2 * i]]);
    let (qd, an, ns, ar) = (count(0), count(1), count(2), count(3));
    if qd > 1 {
        return Err(ParseError::Drop);
    }
    let mut pos = HEADER_LEN;
    let mut question = None;
    if qd == 1 {
        let mut qname = NameBuf::new();
        pos = qname
            .read_compressed(msg, pos)
            .map_err(|_| ParseError::Drop)?;
        let (Some(t), Some(c)) = (be16(msg, pos), be16(msg, pos + 2)) else {
            return Err(ParseError::Drop);
        };
        pos += 4;
        question = Some(Question {
            qname,
            qtype: Rtype(t),
            qclass: Class(c),
        });
    }
    // Knot DNS answers FORMERR only when something after the header parsed
    // (the question or a whole record); a failure right after the header
    // drops the message.
    let formerr = if qd == 1 {
        ParseError::FormErr {
            id,
            flags,
            question,
        }
    } else {
        ParseError::Drop
    };
    let first_record_error = formerr;
    let mut edns = None;
    let mut tsig = None;
    let mut scratch = NameBuf::new();
    let total = an as usize + ns as usize + ar as usize;
    // More records than the message could hold (11 bytes at least each):
    // refused before any record is read, as Knot does.
    if total > msg.len() / 11 {
        return Err(first_record_error);
    }
    let mut formerr = first_record_error;
    for i in 0..total {
        pos = scratch.read_compressed(msg, pos).map_err(|_| formerr)?;
        let fixed = msg.get(pos..pos + 10).ok_or(formerr)?;
        let rtype = u16::from_be_bytes([fixed[0], fixed[1]]);
        let class = u16::from_be_bytes([fixed[2], fixed[3]]);
        let ttl = [fixed[4], fixed[5], fixed[6], fixed[7]];
        let rdlen = u16::from_be_bytes([fixed[8], fixed[9]]) as usize;
        pos += 10;
        let rdata = msg.get(pos..pos + rdlen).ok_or(formerr)?;
        pos += rdlen;
        // The record itself was read: what is wrong with it now is a FORMERR.
        formerr = ParseError::FormErr {
            id,
            flags,
            question,
        };
        if rtype == Rtype::TSIG.0 {
            if i + 1 != total || i < an as usize + ns as usize {
                return Err(formerr);
            }
            tsig = Some(parse_tsig(scratch, rdata).ok_or(formerr)?);
        }
        if rtype == Rtype::OPT.0 {
            let in_additional = i >= an as usize + ns as usize;
            // RFC 6891 §6.1.2: its owner MUST be the root (NSD answers
            // FORMERR too; Knot DNS takes any owner).
            let root_owner = scratch.as_ref().is_root();
            if !in_additional || edns.is_some() || !root_owner || !options_well_formed(rdata) {
                return Err(formerr);
            }
            edns = Some(Edns {
                udp_size: class,
                ext_rcode: ttl[0],
                version: ttl[1],
                flags: u16::from_be_bytes([ttl[2], ttl[3]]),
                options_at: (pos - rdlen) as u16,
                options_len: rdlen as u16,
            });
        }
    }
    if pos != msg.len() {
        return Err(if total > 0 {
            ParseError::FormErr {
                id,
                flags,
                question,
            }
        } else {
            first_record_error
        });
    }
    Ok(Query {
        id,
        flags,
        question,
        edns,
        tsig,
    })
}

/// Reads the TSIG RDATA fields an error response needs.
fn parse_tsig(key: NameBuf, rdata: &[u8]) -> Option<Tsig> {
    let (alg, rest) = NameRef::split_from(rdata).ok()?;
    let time_and_fudge: [u8; 8] = rest.get(..8)?.try_into().ok()?;
    let mac_len = be16(rest, 8)? as usize;
    let after_mac = 10 + mac_len;
    let original_id = be16(rest, after_mac)?;
    let other_len = be16(rest, after_mac + 4)? as usize;
    if rest.len() != after_mac + 6 + other_len {
        return None;
    }
    let mut algorithm = NameBuf::new();
    algorithm.set(alg);
    Some(Tsig {
        key,
        algorithm,
        time_and_fudge,
        original_id,
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

/// The sections of a message, as indexes of the header counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// The question.
    Question = 0,
    /// The answer section.
    Answer = 1,
    /// The authority section.
    Authority = 2,
    /// The additional section.
    Additional = 3,
}

/// The message would exceed its size limit (nothing of the failed item is left).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

/// A point to roll a writer back to.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    pos: usize,
    counts: [u16; 4],
    suffix: (u16, u8, u8),
}

/// Largest offset a compression pointer can reach.
const PTR_MAX: usize = 0x3FFF;

/// Maximum RDATA names remembered per RRset for later owner pointers
/// (Knot DNS keeps 15).
pub const RDATA_HINTS: usize = 15;

/// Where the names of one written RRset sit in the message, so that later
/// records (glue, RRSIGs) can point at them.
#[derive(Debug, Clone, Copy, Default)]
pub struct RrsetHints {
    /// Offset of the owner of the first record (0: none usable).
    pub owner: u16,
    /// Offset of the start of the first record's owner, even above the pointer range.
    pub owner_at: usize,
    /// Offset of the additional-processing target name in RDATA of record i (0: none).
    pub rdata: [u16; RDATA_HINTS],
}

/// Writes a response into a byte buffer, never past `limit`.
///
/// Name compression follows Knot DNS: each name is compared, label by label
/// from the right, with one reference name (first the QNAME, then the last
/// name written that was longer than a bare pointer); the matching suffix
/// becomes a pointer. Owners may instead be given a "hint": the offset of an
/// identical name already written.
#[derive(Debug)]
pub struct MessageWriter<'a> {
    buf: &'a mut [u8],
    pos: usize,
    limit: usize,
    counts: [u16; 4],
    /// Compression reference: offset, label count (0: none) and, when the
    /// name lies there without a pointer, its length (else 0).
    suffix: (u16, u8, u8),
    /// The QNAME as reference: every RRset starts from it again.
    qname_suffix: (u16, u8, u8),
}

impl<'a> MessageWriter<'a> {
    /// A writer over `buf`, writing at most `limit` bytes. The header is
    /// zeroed; writing starts after it. Fails if the header does not fit.
    pub fn new(buf: &'a mut [u8], limit: usize) -> Result<Self, Full> {
        let limit = limit.min(buf.len()).min(u16::MAX as usize);
        if limit < HEADER_LEN {
            return Err(Full);
        }
        buf[..HEADER_LEN].fill(0);
        Ok(MessageWriter {
            buf,
            pos: HEADER_LEN,
            limit,
            counts: [0; 4],
            suffix: (0, 0, 0),
            qname_suffix: (0, 0, 0),
        })
    }

    /// Sets the ID and the 16 flag bits.
    pub fn set_header(&mut self, id: u16, flags: u16) {
        self.buf[0..2].copy_from_slice(&id.to_be_bytes());
        self.buf[2..4].copy_from_slice(&flags.to_be_bytes());
    }

    /// The 16 flag bits.
    pub fn flags(&self) -> u16 {
        u16::from_be_bytes([self.buf[2], self.buf[3]])
    }

    /// Sets flag bits.
    pub fn set_flags(&mut self, bits: u16) {
        let f = self.flags() | bits;
        self.buf[2..4].copy_from_slice(&f.to_be_bytes());
    }

    /// Clears flag bits.
    pub fn clear_flags(&mut self, bits: u16) {
        let f = self.flags() & !bits;
        self.buf[2..4].copy_from_slice(&f.to_be_bytes());
    }

    /// Sets the low 4 bits of the RCODE.
    pub fn set_rcode(&mut self, rcode: u16) {
        self.buf[3] = (self.buf[3] & 0xF0) | (rcode & 0xF) as u8;
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.pos
    }

    /// True if only the header is written.
    pub fn is_empty(&self) -> bool {
        self.pos == HEADER_LEN
    }

    /// The size limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Changes the size limit (never beyond the buffer).
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit.min(self.buf.len()).min(u16::MAX as usize);
    }

    /// The bytes written so far.
    pub fn written(&self) -> &[u8] {
        &self.buf[..self.pos]
    }

    /// Records currently counted in `section`.
    pub fn count(&self, section: Section) -> u16 {
        self.counts[section as usize]
    }

    /// The offset of the name the next names are compressed against (Knot's
    /// `compr->suffix.pos`: the QNAME, then the last name written that was
    /// longer than a bare pointer), if any.
    pub fn reference(&self) -> Option<u16> {
        (self.suffix.1 != 0).then_some(self.suffix.0)
    }

    /// A point to roll back to.
    pub fn mark(&self) -> Mark {
        Mark {
            pos: self.pos,
            counts: self.counts,
            suffix: self.suffix,
        }
    }

    /// Forgets everything written after `mark`.
    pub fn rollback(&mut self, mark: Mark) {
        self.pos = mark.pos;
        self.counts = mark.counts;
        self.suffix = mark.suffix;
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), Full> {
        let end = self.pos + bytes.len();
        if end > self.limit {
            return Err(Full);
        }
        crate::short::copy(&mut self.buf[self.pos..end], bytes);
        self.pos = end;
        Ok(())
    }

    fn put_u16(&mut self, v: u16) -> Result<(), Full> {
        self.put(&v.to_be_bytes())
    }

    fn put_pointer(&mut self, target: usize) -> Result<(), Full> {
        self.put_u16(0xC000 | target as u16)
    }

    /// Writes the question and makes QNAME the compression reference.
    pub fn put_question(&mut self, q: &Question) -> Result<(), Full> {
        let mark = self.mark();
        let at = self.pos;
        let r = (|| {
            self.put(q.qname.as_ref().as_wire())?;
            self.put_u16(q.qtype.0)?;
            self.put_u16(q.qclass.0)
        })();
        if r.is_err() {
            self.rollback(mark);
            return r;
        }
        self.counts[0] += 1;
        if !q.qname.as_ref().is_root() {
            let qname = q.qname.as_ref();
            self.suffix = (at as u16, qname.label_count() as u8, qname.wire_len() as u8);
            self.qname_suffix = self.suffix;
        }
        Ok(())
    }

    /// The offset of the label after the one at `pos`, following pointers.
    fn next_label(&self, pos: usize) -> usize {
        let len = self.buf.get(pos).copied().unwrap_or(0) as usize;
        self.seek_label(pos + 1 + len)
    }

    /// Follows pointers from `pos` to a literal label (bounded).
    fn seek_label(&self, mut pos: usize) -> usize {
        for _ in 0..128 {
            match self.buf.get(pos..pos + 2) {
                Some([hi, lo]) if hi & 0xC0 == 0xC0 => {
                    let target = (((*hi & 0x3F) as usize) << 8) | *lo as usize;
                    if target >= pos {
                        return pos;
                    }
                    pos = target;
                }
                _ => return pos,
            }
        }
        pos
    }

    fn label_at(&self, pos: usize) -> &[u8] {
        let len = self.buf.get(pos).copied().unwrap_or(0) as usize;
        self.buf.get(pos + 1..pos + 1 + len).unwrap_or(&[])
    }

    /// Lower-cases the literal labels of the name written at `at` (up to
    /// its end or its first pointer, which refers to a name written before).
    fn lower_literal_labels(&mut self, at: usize) {
        let mut p = at;
        while p < self.pos {
            let len = self.buf[p] as usize;
            if len == 0 || len & 0xC0 != 0 {
                return;
            }
            let end = (p + 1 + len).min(self.pos);
            self.buf[p + 1..end].make_ascii_lowercase();
            p = end;
        }
    }

    /// Writes a name without compression.
    pub fn put_name_plain(&mut self, name: NameRef<'_>) -> Result<(), Full> {
        self.put(name.as_wire())
    }

    /// Writes a name compressed against the reference name (Knot's heuristic:
    /// similar names are expected to be grouped together). Returns its offset.
    pub fn put_name(&mut self, name: NameRef<'_>) -> Result<usize, Full> {
        let start = self.pos;
        let wire = name.as_wire();
        if name.is_root() || self.suffix.1 == 0 {
            self.put(wire)?;
            return Ok(start);
        }
        let name_labels = name.label_count();
        let mut spos = self.suffix.0 as usize;
        let mut slabels = self.suffix.1 as usize;
        while slabels > name_labels {
            spos = self.next_label(spos);
            slabels -= 1;
        }
        // The labels the reference has no counterpart for, written at once.
        let mut d = 0usize;
        for _ in slabels..name_labels {
            d += 1 + wire[d] as usize;
        }
        self.put(&wire[..d])?;
        // A reference without pointers whose labels all match: one compare.
        let lit = self.suffix.2 as usize;
        if lit != 0 && slabels == self.suffix.1 as usize && wire.len() - d == lit {
            let tail = &wire[d..];
            if self
                .buf
                .get(spos..spos + lit)
                .is_some_and(|r| r.eq_ignore_ascii_case(tail))
            {
                if spos > PTR_MAX {
                    self.put(tail)?;
                } else {
                    self.put_pointer(spos)?;
                }
                self.written_reference(start, wire.len(), name_labels);
                return Ok(start);
            }
        }
        let mut match_begin = d;
        let mut compr_ptr = spos;
        while wire[d] != 0 {
            let next_d = d + 1 + wire[d] as usize;
            let next_s = self.next_label(spos);
            let same = self
                .label_at(spos)
                .eq_ignore_ascii_case(&wire[d + 1..next_d]);
            if !same {
                self.put(&wire[match_begin..next_d])?;
                match_begin = next_d;
                compr_ptr = next_s;
            }
            d = next_d;
            spos = next_s;
        }
        if match_begin == d || compr_ptr > PTR_MAX {
            self.put(&wire[match_begin..])?;
        } else {
            self.put_pointer(compr_ptr)?;
        }
        self.written_reference(start, wire.len(), name_labels);
        Ok(start)
    }

    /// After a name of `len` bytes and `labels` labels was written at
    /// `start`: it becomes the reference unless it is a bare pointer or
    /// beyond the pointers' reach.
    fn written_reference(&mut self, start: usize, len: usize, labels: usize) {
        let written = self.pos - start;
        if written > 2 && start + written < PTR_MAX {
            let literal = if written == len { len as u8 } else { 0 };
            self.suffix = (start as u16, labels as u8, literal);
        }
    }

    /// Where later names can point to find the name just written at `start`:
    /// the name itself, or the target when it was written as a bare pointer.
    fn hint_for(&self, start: usize) -> usize {
        match self.buf.get(start..self.pos) {
            Some([hi, lo]) if hi & 0xC0 == 0xC0 => (((*hi & 0x3F) as usize) << 8) | *lo as usize,
            _ => start,
        }
    }

    /// Writes one RRset, all records or none. The first owner is a pointer to
    /// `owner_hint` when non-zero, else `owner` compressed; later owners point
    /// at the first. Names in RDATA are compressed for the RFC 3597 §4 types.
    /// As in Knot DNS, compression starts again for each RRset, from the name
    /// at `owner_hint` if given, else from the QNAME.
    #[allow(clippy::too_many_arguments)]
    pub fn put_rrset<'r>(
        &mut self,
        section: Section,
        owner: NameRef<'_>,
        owner_hint: u16,
        rtype: Rtype,
        class: Class,
        ttl: u32,
        rdatas: impl Iterator<Item = &'r [u8]>,
    ) -> Result<RrsetHints, Full> {
        let mark = self.mark();
        self.suffix = if owner_hint != 0 && !owner.is_root() {
            (owner_hint, owner.label_count() as u8, 0)
        } else {
            self.qname_suffix
        };
        let r = self.put_rrset_inner(section, owner, owner_hint, rtype, class, ttl, rdatas);
        if r.is_err() {
            self.rollback(mark);
        }
        r
    }

    #[allow(clippy::too_many_arguments)]
    fn put_rrset_inner<'r>(
        &mut self,
        section: Section,
        owner: NameRef<'_>,
        owner_hint: u16,
        rtype: Rtype,
        class: Class,
        ttl: u32,
        rdatas: impl Iterator<Item = &'r [u8]>,
    ) -> Result<RrsetHints, Full> {
        let mut hints = RrsetHints {
            owner: owner_hint,
            ..RrsetHints::default()
        };
        let layout = rdata::layout(rtype);
        // TYPE, CLASS, TTL and a zero RDLENGTH, the same for every record.
        let mut fixed = [0u8; 10];
        fixed[..2].copy_from_slice(&rtype.0.to_be_bytes());
        fixed[2..4].copy_from_slice(&class.0.to_be_bytes());
        fixed[4..8].copy_from_slice(&ttl.to_be_bytes());
        for (i, rd) in rdatas.enumerate() {
            let at = self.pos;
            if i == 0 {
                hints.owner_at = at;
            }
            if hints.owner != 0 && !owner.is_root() {
                self.put_pointer(hints.owner as usize)?;
            } else {
                self.put_name(owner)?;
                let h = self.hint_for(at);
                if i == 0 && self.pos < PTR_MAX && !owner.is_root() {
                    hints.owner = h as u16;
                }
            }
            self.put(&fixed)?;
            let len_at = self.pos - 2;
            let target = self.put_rdata(layout, rd)?;
            if let Some(t) = target {
                if i < RDATA_HINTS && t < PTR_MAX {
                    hints.rdata[i] = t as u16;
                }
            }
            let rdlen = (self.pos - len_at - 2) as u16;
            self.buf[len_at..len_at + 2].copy_from_slice(&rdlen.to_be_bytes());
            self.counts[section as usize] += 1;
        }
        Ok(hints)
    }

    /// Writes RDATA; returns the offset of its first name (the
    /// additional-processing target for the types that have one). RDATA that
    /// does not match its layout is written verbatim.
    fn put_rdata(&mut self, layout: rdata::Layout, rd: &[u8]) -> Result<Option<usize>, Full> {
        if layout.is_opaque() {
            self.put(rd)?;
            return Ok(None);
        }
        if !layout.compresses() {
            // Nothing to compress: one copy, names lowered where they lie.
            let at = self.pos;
            self.put(rd)?;
            return Ok(self.names_in_place(layout, rd, at));
        }
        let mark = self.mark();
        match self.put_rdata_fields(layout, rd) {
            Ok(Some(r)) => Ok(r),
            Ok(None) => {
                self.rollback(mark);
                self.put(rd)?;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// For `rd` just written verbatim at `at` (a layout without compressed
    /// names): lower-cases the names the layout lowers and returns where the
    /// first hint name lies, as [`MessageWriter::put_rdata_fields`] would
    /// have written them; RDATA that does not match its layout stays as
    /// written, without a hint (as the general path writes it).
    fn names_in_place(&mut self, layout: rdata::Layout, rd: &[u8], at: usize) -> Option<usize> {
        let mut names = [(0usize, false); 4];
        let mut count = 0;
        let mut first = None;
        let mut pos = 0usize;
        for f in layout.fields() {
            match *f {
                rdata::Field::Fixed(n) => pos = pos.checked_add(n).filter(|&e| e <= rd.len())?,
                rdata::Field::Strings(k) => {
                    for _ in 0..k {
                        pos = pos.checked_add(1 + *rd.get(pos)? as usize)?;
                    }
                    if pos > rd.len() {
                        return None;
                    }
                }
                rdata::Field::Name { lower, hint, .. } => {
                    let (name, _) = NameRef::split_from(rd.get(pos..)?).ok()?;
                    if hint && first.is_none() {
                        first = Some(at + pos);
                    }
                    *names.get_mut(count)? = (pos, lower);
                    count += 1;
                    pos += name.wire_len();
                }
            }
        }
        for &(p, lower) in &names[..count] {
            if lower {
                self.lower_literal_labels(at + p);
            }
        }
        first
    }

    /// Ok(None) when the RDATA does not match the layout.
    fn put_rdata_fields(
        &mut self,
        layout: rdata::Layout,
        rd: &[u8],
    ) -> Result<Option<Option<usize>>, Full> {
        let mut pos = 0usize;
        let mut first_name = None;
        for f in layout.fields() {
            match *f {
                rdata::Field::Fixed(n) => {
                    let Some(b) = rd.get(pos..pos + n) else {
                        return Ok(None);
                    };
                    self.put(b)?;
                    pos += n;
                }
                rdata::Field::Strings(count) => {
                    let start = pos;
                    for _ in 0..count {
                        let Some(&len) = rd.get(pos) else {
                            return Ok(None);
                        };
                        pos += 1 + len as usize;
                    }
                    let Some(b) = rd.get(start..pos) else {
                        return Ok(None);
                    };
                    self.put(b)?;
                }
                rdata::Field::Name {
                    compress,
                    lower,
                    hint,
                } => {
                    let Some(Ok((name, rest))) = rd.get(pos..).map(NameRef::split_from) else {
                        return Ok(None);
                    };
                    pos = rd.len() - rest.len();
                    let at = if compress {
                        self.put_name(name)?
                    } else {
                        let at = self.pos;
                        self.put_name_plain(name)?;
                        at
                    };
                    if lower {
                        // Compression compares without case, so lowering
                        // what was written equals writing it lowered.
                        self.lower_literal_labels(at);
                    }
                    if hint && first_name.is_none() {
                        first_name = Some(self.hint_for(at));
                    }
                }
            }
        }
        self.put(&rd[pos..])?;
        Ok(Some(first_name))
    }

    /// Writes the OPT record (owner root) with the given options, bypassing
    /// nothing: call it after restoring any space reserved for it.
    pub fn put_opt(
        &mut self,
        udp_size: u16,
        ext_rcode: u8,
        version: u8,
        flags: u16,
        options: &[u8],
    ) -> Result<(), Full> {
        self.put_opt_parts(udp_size, ext_rcode, version, flags, &[options])
    }

    /// [`MessageWriter::put_opt`] with the options given in parts (each
    /// whole options in wire form), written one after the other.
    pub fn put_opt_parts(
        &mut self,
        udp_size: u16,
        ext_rcode: u8,
        version: u8,
        flags: u16,
        parts: &[&[u8]],
    ) -> Result<(), Full> {
        let mark = self.mark();
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let r = (|| {
            if len > usize::from(u16::MAX) {
                return Err(Full);
            }
            self.put(&[0])?;
            self.put_u16(Rtype::OPT.0)?;
            self.put_u16(udp_size)?;
            self.put(&[ext_rcode, version])?;
            self.put_u16(flags)?;
            self.put_u16(len as u16)?;
            for p in parts {
                self.put(p)?;
            }
            Ok(())
        })();
        match r {
            Ok(()) => {
                self.counts[3] += 1;
                Ok(())
            }
            Err(e) => {
                self.rollback(mark);
                Err(e)
            }
        }
    }

    /// Writes a TSIG record answering `tsig` with `error` and no MAC
    /// (RFC 8945 §5.3.2: the server does not know the key).
    pub fn put_tsig_error(&mut self, tsig: &Tsig, error: u16) -> Result<(), Full> {
        let mark = self.mark();
        let alg = tsig.algorithm.as_ref();
        let rdlen = alg.wire_len() + 8 + 2 + 2 + 2 + 2;
        let r = (|| {
            self.put_name_plain(tsig.key.as_ref())?;
            self.put_u16(Rtype::TSIG.0)?;
            self.put_u16(Class::ANY.0)?;
            self.put(&[0, 0, 0, 0])?;
            self.put_u16(rdlen as u16)?;
            self.put_name_plain(alg)?;
            self.put(&tsig.time_and_fudge)?;
            self.put_u16(0)?;
            self.put_u16(tsig.original_id)?;
            self.put_u16(error)?;
            self.put_u16(0)
        })();
        match r {
            Ok(()) => {
                self.counts[3] += 1;
                Ok(())
            }
            Err(e) => {
                self.rollback(mark);
                Err(e)
            }
        }
    }

    /// Writes the section counts into the header and returns the length.
    pub fn finish(self) -> usize {
        for (i, c) in self.counts.iter().enumerate() {
            self.buf[4 + 2 * i..6 + 2 * i].copy_from_slice(&c.to_be_bytes());
        }
        self.pos
    }
}

/// Size of the TSIG error record answering `tsig`.
pub fn tsig_error_len(tsig: &Tsig) -> usize {
    tsig.key.as_ref().wire_len() + 10 + tsig.algorithm.as_ref().wire_len() + 16
}

/// Size of an OPT record with `options_len` bytes of options.
pub const fn opt_len(options_len: usize) -> usize {
    11 + options_len
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Name;

    fn q(name: &str, t: Rtype) -> Question {
        let n: Name = name.parse().unwrap();
        let mut qname = NameBuf::new();
        qname.set(n.as_ref());
        Question {
            qname,
            qtype: t,
            qclass: Class::IN,
        }
    }

    fn query_bytes(name: &str, extra: &[u8], arcount: u16) -> Vec<u8> {
        let n: Name = name.parse().unwrap();
        let mut v = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0];
        v.extend_from_slice(&arcount.to_be_bytes());
        v.extend_from_slice(n.as_wire());
        v.extend_from_slice(&[0, 1, 0, 1]);
        v.extend_from_slice(extra);
        v
    }

    #[test]
    fn parses_question_and_opt() {
        let opt = [0, 0, 41, 4, 0, 0, 0, 0x80, 0, 0, 6, 0, 15, 0, 2, 0, 20];
        let m = query_bytes("WWW.example.com.", &opt, 1);
        let q = parse_query(&m).unwrap();
        assert_eq!(q.id, 0x1234);
        let qu = q.question.unwrap();
        assert_eq!(qu.qname.as_ref().to_string(), "WWW.example.com.");
        assert_eq!(qu.qtype, Rtype::A);
        let e = q.edns.unwrap();
        assert_eq!(e.udp_size, 1024);
        assert!(e.dnssec_ok());
    }

    #[test]
    fn drops_and_formerrs() {
        assert!(matches!(parse_query(&[0; 11]), Err(ParseError::Drop)));
        let mut m = query_bytes("a.", &[], 0);
        m[2] |= 0x80;
        assert!(matches!(parse_query(&m), Err(ParseError::Drop)));
        let mut m = query_bytes("a.", &[], 0);
        m[5] = 2;
        assert!(matches!(parse_query(&m), Err(ParseError::Drop)));
        let m = query_bytes("a.", &[], 0);
        assert!(matches!(
            parse_query(&m[..m.len() - 1]),
            Err(ParseError::Drop)
        ));
        let m = query_bytes("a.", &[1], 0);
        assert!(matches!(
            parse_query(&m),
            Err(ParseError::FormErr {
                question: Some(_),
                ..
            })
        ));
        // Two OPTs.
        let opt = [0, 0, 41, 4, 0, 0, 0, 0, 0, 0, 0];
        let two: Vec<u8> = opt.iter().chain(opt.iter()).copied().collect();
        assert!(matches!(
            parse_query(&query_bytes("a.", &two, 2)),
            Err(ParseError::FormErr { .. })
        ));
        // Option running past the RDATA.
        let bad = [0, 0, 41, 4, 0, 0, 0, 0, 0, 0, 4, 0, 9, 0, 1];
        assert!(matches!(
            parse_query(&query_bytes("a.", &bad, 1)),
            Err(ParseError::FormErr { .. })
        ));
        // Count says one record, none present.
        assert!(matches!(
            parse_query(&query_bytes("a.", &[], 1)),
            Err(ParseError::FormErr { .. })
        ));
    }

    /// The one-compare path for a reference without pointers writes what
    /// the label-by-label walk writes, for names above, below, beside and
    /// equal to the reference, in any case, and past the pointers' reach.
    #[test]
    fn literal_reference_compresses_as_the_label_walk() {
        let names = [
            "example.com.",
            "EXAMPLE.com.",
            "a.example.com.",
            "b.a.Example.COM.",
            "com.",
            "org.",
            "x.example.org.",
            "example.net.",
            "7.6.5.4.3.2.1.e164.arpa.",
            "8.6.5.4.3.2.1.e164.arpa.",
            "e164.arpa.",
            "a.b.c.d.e.f.g.",
        ];
        let mut st = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..200 {
            let mut fast = vec![0u8; 65535];
            let mut slow = vec![0u8; 65535];
            let mut a = MessageWriter::new(&mut fast, 65535).unwrap();
            let mut b = MessageWriter::new(&mut slow, 65535).unwrap();
            let qn = names[round % names.len()];
            a.put_question(&q(qn, Rtype::AXFR)).unwrap();
            b.put_question(&q(qn, Rtype::AXFR)).unwrap();
            for _ in 0..3000 {
                st ^= st << 13;
                st ^= st >> 7;
                st ^= st << 17;
                let n: Name = names[(st % names.len() as u64) as usize].parse().unwrap();
                if st & 0x300 == 0 {
                    // Back to the QNAME, as each RRset without a hint does.
                    a.suffix = a.qname_suffix;
                    b.suffix = b.qname_suffix;
                }
                b.suffix.2 = 0;
                let (x, y) = (a.put_name(n.as_ref()), b.put_name(n.as_ref()));
                assert_eq!(x, y);
                if x.is_err() {
                    break;
                }
                assert_eq!((a.suffix.0, a.suffix.1), (b.suffix.0, b.suffix.1));
            }
            assert!(a.len() > PTR_MAX, "runs past the pointers' reach");
            assert_eq!(a.written(), b.written(), "round {round}");
        }
    }

    /// RDATA of types whose names are never compressed, written in one
    /// copy and lowered in place, comes out as the field-by-field path
    /// writes it: names lowered, hints, and malformed RDATA verbatim.
    #[test]
    fn uncompressed_rdata_in_place_as_field_by_field() {
        let name = |s: &str| s.parse::<Name>().unwrap().as_wire().to_vec();
        let cat = |parts: &[&[u8]]| parts.concat();
        let samples: Vec<(Rtype, Vec<u8>)> = vec![
            (
                Rtype::SRV,
                cat(&[&[0, 1, 0, 2, 0, 53], &name("Sip.Example.COM.")]),
            ),
            (Rtype::SRV, cat(&[&[0, 1, 0, 2, 0, 53], &name(".")])),
            (Rtype::SRV, vec![0, 1, 0]),
            (
                Rtype::SRV,
                cat(&[&[0, 1, 0, 2, 0, 53], &name("a."), &[7, 7]]),
            ),
            (
                Rtype::NAPTR,
                cat(&[
                    &[0, 10, 0, 100, 1, b'U', 7],
                    b"E2U+sip",
                    &[4],
                    b"!X!Y",
                    &name("Rep.Lace."),
                ]),
            ),
            (
                Rtype::NAPTR,
                cat(&[&[0, 10, 0, 100, 1, b'U', 7], b"E2U+sip", &[0], &name(".")]),
            ),
            (Rtype::NAPTR, cat(&[&[0, 10, 0, 100, 1, b'U', 9], b"E2U"])),
            (
                Rtype::PX,
                cat(&[&[0, 5], &name("MAP822.Example."), &name("MapX400.Example.")]),
            ),
            (Rtype::PX, cat(&[&[0, 5], &name("a.b."), &[3, b'x']])),
            (
                Rtype::RRSIG,
                cat(&[&[0; 18], &name("Signer.Example."), &[1, 2, 3]]),
            ),
            (
                Rtype::SVCB,
                cat(&[&[0, 1], &name("Svc.Example."), &[0, 1, 0, 0]]),
            ),
            (Rtype::MX, cat(&[&[0, 10], &name("Mail.Example.")])),
        ];
        for (rtype, rd) in &samples {
            let layout = rdata::layout(*rtype);
            let mut a_buf = [0u8; 512];
            let mut b_buf = [0u8; 512];
            let mut a = MessageWriter::new(&mut a_buf, 512).unwrap();
            let mut b = MessageWriter::new(&mut b_buf, 512).unwrap();
            a.put_question(&q("Example.", Rtype::A)).unwrap();
            b.put_question(&q("Example.", Rtype::A)).unwrap();
            let ha = a.put_rdata(layout, rd).unwrap();
            let mark = b.mark();
            let hb = match b.put_rdata_fields(layout, rd).unwrap() {
                Some(h) => h,
                None => {
                    b.rollback(mark);
                    b.put(rd).unwrap();
                    None
                }
            };
            assert_eq!(ha, hb, "{rtype} {rd:?}");
            assert_eq!(a.written(), b.written(), "{rtype} {rd:?}");
        }
    }

    #[test]
    fn compression_follows_the_reference_name() {
        let mut buf = [0u8; 512];
        let mut w = MessageWriter::new(&mut buf, 512).unwrap();
        w.put_question(&q("CNAME2.EXAMPLE.COM.", Rtype::A)).unwrap();
        let target: Name = "cname.example.com.".parse().unwrap();
        let owner: Name = "cname2.example.com.".parse().unwrap();
        let hints = w
            .put_rrset(
                Section::Answer,
                owner.as_ref(),
                12,
                Rtype::CNAME,
                Class::IN,
                3600,
                [target.as_wire()].into_iter(),
            )
            .unwrap();
        // The CNAME target's owner points at the target written in RDATA.
        assert_eq!(hints.rdata[0], 0x30);
        let www: Name = "www.example.com.".parse().unwrap();
        w.put_rrset(
            Section::Answer,
            target.as_ref(),
            hints.rdata[0],
            Rtype::CNAME,
            Class::IN,
            3600,
            [www.as_wire()].into_iter(),
        )
        .unwrap();
        let n = w.finish();
        // Bytes Knot DNS 3.2 sends for the same answer.
        let expect = "12340000000100020000000006434e414d4532074558414d504c4503434f4d0000010001\
                      c00c0005000100000e10000805636e616d65c013\
                      c0300005000100000e10000603777777c013";
        let mut hex = String::new();
        for b in &buf[..n] {
            hex.push_str(&format!("{b:02x}"));
        }
        assert_eq!(&hex[8..], &expect[8..]);
    }

    #[test]
    fn rrset_is_all_or_nothing() {
        let mut buf = [0u8; 64];
        let mut w = MessageWriter::new(&mut buf, 64).unwrap();
        w.put_question(&q("a.example.", Rtype::A)).unwrap();
        let before = w.len();
        let r = w.put_rrset(
            Section::Answer,
            "a.example.".parse::<Name>().unwrap().as_ref(),
            12,
            Rtype::A,
            Class::IN,
            1,
            [&[1u8, 2, 3, 4][..], &[1, 2, 3, 5], &[1, 2, 3, 6]].into_iter(),
        );
        assert_eq!(r.unwrap_err(), Full);
        assert_eq!(w.len(), before);
        assert_eq!(w.count(Section::Answer), 0);
    }
}
