//! A node's data as one byte string (a "blob"), and views over it.
//!
//! ```text
//! blob   = flags:u8 [shadow:varint] [owner:wire name] rrset*
//! rrset  = type:u16 ttl:u32 count:varint bytes:varint (len:u16 rdata)*count
//! ```
//!
//! `flags` holds the [`NodeFlags`] bits plus two layout bits: a shadow
//! distance follows (node id minus the shadowing ancestor's id), and the
//! owner name follows (only when it differs from the lower-case name the key
//! spells). RRsets run to the end of the blob, sorted by type. Integers are
//! big-endian; varints are LEB128.
//!
//! Blobs are compared and deduplicated as bytes, so two names with identical
//! RRsets share one stored blob, and a blob close to its block's first blob
//! is stored as a difference (see `store.rs`). Decoding never panics: a
//! malformed blob reads as fewer RRsets.

use lode_wire::{NameRef, Rtype};

use crate::NodeFlags;

/// Flag bit: a shadow distance follows.
const HAS_SHADOW: u8 = 0x20;
/// Flag bit: the owner name follows.
const HAS_OWNER: u8 = 0x40;
/// The bits that are [`NodeFlags`].
const NODE_FLAGS: u8 = 0x0F;

/// Appends `v` as a LEB128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Bytes `put_varint` writes for `v`.
pub(crate) fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Reads a varint at `*pos`, advancing it; `None` if truncated or too long.
#[inline]
pub(crate) fn get_varint(data: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = *data.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7F) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// One RRset to encode (its RDATAs owned, or borrowed from a builder's
/// arena).
pub(crate) struct RRsetIn<'a, R: AsRef<[u8]> = Box<[u8]>> {
    pub rtype: Rtype,
    pub ttl: u32,
    pub rdatas: &'a [R],
}

/// Encodes a node's blob into `out` (cleared first).
pub(crate) fn encode(
    out: &mut Vec<u8>,
    flags: NodeFlags,
    shadow_distance: u32,
    owner: Option<NameRef<'_>>,
    rrsets: &[RRsetIn<'_, impl AsRef<[u8]>>],
) {
    encode_head(out, flags, shadow_distance, owner);
    for set in rrsets {
        put_rrset(
            out,
            set.rtype,
            set.ttl,
            set.rdatas.iter().map(|r| r.as_ref()),
        );
    }
}

/// Appends one RRset (`rdatas` in canonical order, without duplicates).
pub(crate) fn put_rrset<'r>(
    out: &mut Vec<u8>,
    rtype: Rtype,
    ttl: u32,
    rdatas: impl Iterator<Item = &'r [u8]> + Clone,
) {
    out.extend_from_slice(&rtype.0.to_be_bytes());
    out.extend_from_slice(&ttl.to_be_bytes());
    let (count, bytes) = rdatas
        .clone()
        .fold((0u64, 0u64), |(n, b), r| (n + 1, b + 2 + r.len() as u64));
    put_varint(out, count);
    put_varint(out, bytes);
    for r in rdatas {
        // RDATA is at most 65535 octets (it was read from a u16 or checked by the parser).
        out.extend_from_slice(&(r.len() as u16).to_be_bytes());
        out.extend_from_slice(r);
    }
}

/// Appends one RRset as `set` is stored: what [`put_rrset`] would write
/// for its RDATAs.
pub(crate) fn put_stored_rrset(out: &mut Vec<u8>, set: &RRset<'_>) {
    out.extend_from_slice(&set.rtype.0.to_be_bytes());
    out.extend_from_slice(&set.ttl.to_be_bytes());
    put_varint(out, u64::from(set.count));
    put_varint(out, set.data.len() as u64);
    out.extend_from_slice(set.data);
}

/// Writes a blob's head (flags, shadow, owner) into `out` (cleared first).
pub(crate) fn encode_head(
    out: &mut Vec<u8>,
    flags: NodeFlags,
    shadow_distance: u32,
    owner: Option<NameRef<'_>>,
) {
    out.clear();
    let mut f = flags.0 & NODE_FLAGS;
    if shadow_distance != 0 {
        f |= HAS_SHADOW;
    }
    if owner.is_some() {
        f |= HAS_OWNER;
    }
    out.push(f);
    if shadow_distance != 0 {
        put_varint(out, u64::from(shadow_distance));
    }
    if let Some(o) = owner {
        out.extend_from_slice(o.as_wire());
    }
}

/// Encodes a blob from a new head and RRsets already encoded (the `rrsets`
/// part of another blob's [`Head`]).
pub(crate) fn encode_raw(
    out: &mut Vec<u8>,
    flags: NodeFlags,
    shadow_distance: u32,
    owner: Option<NameRef<'_>>,
    rrsets: &[u8],
) {
    encode_head(out, flags, shadow_distance, owner);
    out.extend_from_slice(rrsets);
}

/// The parsed head of a blob.
#[derive(Clone, Copy)]
pub(crate) struct Head<'a> {
    pub flags: NodeFlags,
    pub owner: Option<NameRef<'a>>,
    /// The RRsets part.
    pub rrsets: &'a [u8],
}

/// Flags and shadow distance from the first bytes of a blob.
#[inline]
pub(crate) fn flags_and_shadow(prefix: &[u8]) -> Option<(NodeFlags, u32)> {
    let f = *prefix.first()?;
    let mut shadow = 0;
    if f & HAS_SHADOW != 0 {
        let mut pos = 1;
        shadow = u32::try_from(get_varint(prefix, &mut pos)?).ok()?;
    }
    Some((NodeFlags(f & NODE_FLAGS), shadow))
}

/// Where the next-hashed-owner field of the node's NSEC3 record starts in
/// `blob`, when the node has exactly one NSEC3 record and its hash is 20
/// octets (SHA-1). Only what precedes the field is read, so a blob the
/// store keeps without that field (see `store.rs`) gives the same answer.
pub(crate) fn nsec3_next_at(blob: &[u8]) -> Option<usize> {
    let f = *blob.first()?;
    let mut pos = 1;
    if f & HAS_SHADOW != 0 {
        get_varint(blob, &mut pos)?;
    }
    if f & HAS_OWNER != 0 {
        let (name, _) = NameRef::split_from(blob.get(pos..)?).ok()?;
        pos += name.wire_len();
    }
    loop {
        let t = blob.get(pos..pos.checked_add(2)?)?;
        let rtype = u16::from_be_bytes([t[0], t[1]]);
        pos += 6;
        let count = get_varint(blob, &mut pos)?;
        let bytes = usize::try_from(get_varint(blob, &mut pos)?).ok()?;
        if rtype == Rtype::NSEC3.0 {
            // len:u16 algorithm flags iterations:u16 salt_len salt hash_len hash
            let salt = usize::from(*blob.get(pos.checked_add(6)?)?);
            let at = pos + 7 + salt;
            return (count == 1 && *blob.get(at)? == 20).then_some(at + 1);
        }
        if rtype > Rtype::NSEC3.0 {
            return None;
        }
        pos = pos.checked_add(bytes)?;
    }
}

/// Parses the head of a blob; `None` if malformed.
#[inline]
pub(crate) fn head(blob: &[u8]) -> Option<Head<'_>> {
    let f = *blob.first()?;
    let mut pos = 1;
    if f & HAS_SHADOW != 0 {
        // The shadow is read by `flags_and_shadow`; here it is skipped.
        u32::try_from(get_varint(blob, &mut pos)?).ok()?;
    }
    let mut owner = None;
    if f & HAS_OWNER != 0 {
        let (name, _) = NameRef::split_from(blob.get(pos..)?).ok()?;
        pos += name.wire_len();
        owner = Some(name);
    }
    Some(Head {
        flags: NodeFlags(f & NODE_FLAGS),
        owner,
        rrsets: blob.get(pos..)?,
    })
}

/// One RRset of a node: a view into its blob.
#[derive(Debug, Clone, Copy)]
pub struct RRset<'a> {
    rtype: Rtype,
    ttl: u32,
    count: u32,
    /// `(len:u16 rdata)*count`
    data: &'a [u8],
}

impl<'a> RRset<'a> {
    /// An RRset without records.
    pub const EMPTY: RRset<'static> = RRset {
        rtype: Rtype(0),
        ttl: 0,
        count: 0,
        data: &[],
    };
    /// The type.
    pub fn rtype(&self) -> Rtype {
        self.rtype
    }
    /// The TTL.
    pub fn ttl(&self) -> u32 {
        self.ttl
    }
    /// The TTL a record of this set is written with in a transfer, a zone
    /// file or an answer to a query for the RRSIG type: an RRSIG's own
    /// original TTL (its signed RRset's, which the node's one RRSIG TTL
    /// may not be), the set's TTL for other types. As Knot writes them.
    pub fn record_ttl(&self, rdata: &[u8]) -> u32 {
        if self.rtype == Rtype::RRSIG {
            lode_wire::rdata::rrsig_original_ttl(rdata).unwrap_or(self.ttl)
        } else {
            self.ttl
        }
    }
    /// Number of records.
    pub fn len(&self) -> usize {
        self.count as usize
    }
    /// True if there are no records (never for a stored RRset).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// The RDATAs in wire form, canonical order.
    pub fn rdatas(&self) -> Rdatas<'a> {
        Rdatas {
            data: self.data,
            left: self.count,
        }
    }
    /// The first RDATA (SOA, CNAME and DNAME sets have exactly one); empty if none.
    pub fn first(&self) -> &'a [u8] {
        self.rdatas().next().unwrap_or(&[])
    }
}

/// The RDATAs of an RRset.
#[derive(Debug, Clone)]
pub struct Rdatas<'a> {
    data: &'a [u8],
    left: u32,
}

impl<'a> Iterator for Rdatas<'a> {
    type Item = &'a [u8];
    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        let len = match self.data {
            [a, b, ..] => usize::from(u16::from_be_bytes([*a, *b])),
            _ => {
                self.left = 0;
                return None;
            }
        };
        let Some(r) = self.data.get(2..2 + len) else {
            self.left = 0;
            return None;
        };
        self.data = &self.data[2 + len..];
        self.left -= 1;
        Some(r)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

impl ExactSizeIterator for Rdatas<'_> {}

/// The RRsets of a node, in type order.
#[derive(Debug, Clone)]
pub struct RRsets<'a> {
    data: &'a [u8],
}

impl<'a> RRsets<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        RRsets { data }
    }
}

impl<'a> Iterator for RRsets<'a> {
    type Item = RRset<'a>;
    #[inline]
    fn next(&mut self) -> Option<RRset<'a>> {
        let d = self.data;
        let fixed = d.get(..6)?;
        let rtype = Rtype(u16::from_be_bytes([fixed[0], fixed[1]]));
        let ttl = u32::from_be_bytes([fixed[2], fixed[3], fixed[4], fixed[5]]);
        let mut pos = 6;
        let parsed = get_varint(d, &mut pos).and_then(|count| {
            let bytes = get_varint(d, &mut pos)?;
            let end = pos.checked_add(usize::try_from(bytes).ok()?)?;
            Some((u32::try_from(count).ok()?, d.get(pos..end)?, end))
        });
        let Some((count, data, end)) = parsed else {
            self.data = &[];
            return None;
        };
        self.data = &d[end..];
        Some(RRset {
            rtype,
            ttl,
            count,
            data,
        })
    }
}

/// Checks that a blob decodes completely and consistently (snapshot loading).
pub(crate) fn is_valid(blob: &[u8]) -> bool {
    let Some(h) = head(blob) else {
        return false;
    };
    let mut sets = RRsets::new(h.rrsets);
    let mut consumed = 0usize;
    let mut last: Option<u16> = None;
    for set in sets.by_ref() {
        if last.is_some_and(|t| t >= set.rtype.0) {
            return false;
        }
        last = Some(set.rtype.0);
        let mut n = 0usize;
        let mut bytes = 0usize;
        for r in set.rdatas() {
            n += 1;
            bytes += 2 + r.len();
        }
        if n != set.len() || bytes != set.data.len() {
            return false;
        }
        consumed +=
            6 + varint_len(set.count as u64) + varint_len(set.data.len() as u64) + set.data.len();
    }
    consumed == h.rrsets.len()
}
