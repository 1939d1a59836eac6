//! The compact node index: front-coded keys in blocks, blobs deduplicated or
//! stored as differences.
//!
//! ```text
//!  heads: [u128; blocks]   first 16 bytes of each block's first key, zero padded
//!  offs:  [u64; blocks]    where each block starts in `data`
//!  data:  block*           block = at:[u16; n] entry{n}   (n = BLOCK, fewer in the last)
//!         at[i]            offset of entry i from the end of `at`
//!         entry 0          klen:varint key  value
//!         entry i > 0      p:varint slen:varint suffix  value
//!                          key = key0[..p] ++ suffix
//!                          or, a hashed owner's key (one label of 32 base32hex
//!                          digits): (HASHED + p):varint hash:[u8; 20]  value
//!                          key = key0[..p] ++ base32hex(hash)[p..] ++ 0
//!         value            REF:    varint (offset << 2)        → blob in `raw`
//!                          DIFF:   varint (p << 2 | 1) s:varint m:varint middle
//!                                  blob = base[..p] ++ middle ++ base[len-s..]
//!                          INLINE: varint (len << 2 | 2) blob  (entry 0 only)
//!                          base = entry 0's blob
//!  raw:   (len:varint blob)*  shared blobs (identical node data, stored once)
//!                          and blobs too large or too different to diff
//!  blob as stored           a node's blob (`blob.rs`), except for a hashed owner
//!                          whose NSEC3 names the next entry's key as the next
//!                          hashed owner: then its flags carry NEXT_ELIDED and the
//!                          20 octets of that field are left out (the next key
//!                          spells them), added back whenever the blob is read
//!  top:   every 64th head (derived, not stored): the first levels of the
//!         binary search stay in cache
//! ```
//!
//! Keys are relative to the zone's origin key (the apex's is empty) and each
//! is front-coded against its block's first key, so any entry decodes in
//! constant time (node ids are `block * BLOCK + position`). A lookup binary
//! searches `heads` (a dense array, one compare per probe; ties on the first
//! 16 bytes fall back to whole first keys), then binary searches the block:
//! with `m` the common prefix of the sought key and the block's first key,
//! an entry sharing `p < m` bytes with the first key sorts after the sought
//! key, `p > m` before it, and only `p == m` compares its suffix.
//!
//! Zero padding keeps the order: after a key's final 0 comes either nothing
//! or the first byte of another label, which is never 0 (a 0 inside a label
//! is escaped), so a padded key sorts exactly as the key.

use lode_wire::name::MAX_KEY_LEN;

use crate::blob::get_varint;

mod build;
pub(crate) use build::{fingerprint, StoreBuilder};

/// Entries per block (a power of two).
pub(crate) const BLOCK: usize = 32;
/// Largest blob stored as a difference (decoded into a buffer of this size).
pub(crate) const INLINE: usize = 384;
/// Largest first blob kept inside its block (larger ones go to `raw`, so a
/// block stays well under the 64 KiB its u16 offsets can reach).
const INLINE_BASE: usize = 1024;

/// A flag bit of a stored blob's first byte (never set in a blob outside
/// the store): the blob is a hashed owner's whose NSEC3 next-hash field,
/// the next entry's key, is left out.
const NEXT_ELIDED: u8 = 0x80;
/// Octets of an NSEC3 hash (SHA-1).
const HASH: usize = 20;

/// Added to an entry's shared prefix length when its key is a hashed
/// owner's stored as its hash (prefix lengths are at most `MAX_KEY_LEN`).
const HASHED: u64 = 1024;
/// Length of a hashed owner's key: 32 base32hex digits and the label end.
pub(crate) const HASHED_KEY: usize = 33;

/// The part of an entry's key after what it shares with its block's first
/// key: as stored, or spelled from a hashed owner's hash.
#[derive(Clone, Copy)]
pub(crate) enum Suffix<'a> {
    Bytes(&'a [u8]),
    /// The key's hash and the length of the prefix it shares.
    Hash(&'a [u8], u8),
}

impl<'a> Suffix<'a> {
    /// Its length.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Suffix::Bytes(b) => b.len(),
            Suffix::Hash(_, p) => HASHED_KEY - usize::from(*p),
        }
    }
    /// Its bytes, spelled into `buf` when it is a hash.
    #[inline]
    pub fn bytes<'b>(&self, buf: &'b mut [u8; HASHED_KEY]) -> &'b [u8]
    where
        'a: 'b,
    {
        match *self {
            Suffix::Bytes(b) => b,
            Suffix::Hash(h, p) => {
                let mut hash = [0u8; HASH];
                hash.copy_from_slice(h);
                buf[..HASHED_KEY - 1].copy_from_slice(&lode_wire::nsec3::base32hex(&hash));
                buf[HASHED_KEY - 1] = 0;
                &buf[usize::from(p)..]
            }
        }
    }
}

/// An entry's key as stored: a prefix of its block's first key and a suffix.
#[derive(Clone, Copy)]
pub(crate) struct EntryKey<'a> {
    pub prefix: &'a [u8],
    pub suffix: Suffix<'a>,
}

impl Default for EntryKey<'_> {
    fn default() -> Self {
        EntryKey::whole(&[])
    }
}

impl<'a> EntryKey<'a> {
    /// A key held whole.
    pub fn whole(key: &'a [u8]) -> Self {
        EntryKey {
            prefix: key,
            suffix: Suffix::Bytes(&[]),
        }
    }
    pub fn len(&self) -> usize {
        self.prefix.len() + self.suffix.len()
    }
    /// Copies the whole key into `out`; `None` if it does not fit.
    pub fn write(&self, out: &mut [u8]) -> Option<usize> {
        let n = self.len();
        let mut buf = [0u8; HASHED_KEY];
        out.get_mut(..self.prefix.len())?
            .copy_from_slice(self.prefix);
        out.get_mut(self.prefix.len()..n)?
            .copy_from_slice(self.suffix.bytes(&mut buf));
        Some(n)
    }
}

/// A node's blob: borrowed from the store or rebuilt from a difference.
// A stack value on the query path: boxing the buffer would allocate.
#[allow(clippy::large_enum_variant)]
pub(crate) enum BlobRef<'a> {
    Stored(&'a [u8]),
    Inline([u8; INLINE], u16),
}

impl BlobRef<'_> {
    pub fn bytes(&self) -> &[u8] {
        match self {
            BlobRef::Stored(b) => b,
            BlobRef::Inline(buf, len) => &buf[..*len as usize],
        }
    }
}

/// A block as a walk through its entries keeps it: decoded once.
#[derive(Clone, Copy)]
pub(crate) struct BlockAt<'a> {
    index: usize,
    block: Block<'a>,
    /// The block's base blob (entry 0's).
    base: &'a [u8],
}

/// A blob as [`Store::entry_into`] found it: in the store, or rebuilt into
/// the caller's buffer (its length).
#[derive(Clone, Copy)]
pub(crate) enum Blob<'a> {
    Stored(&'a [u8]),
    Built(usize),
}

/// A blob stored as a difference from its block's base: `base[..p] ++
/// middle ++ base[q..q + k] ++ more ++ base[len - s..]` with `q = p +
/// middle.len()` (`k` 0 and `more` empty for a one-part difference).
#[derive(Clone, Copy)]
struct Diff<'a> {
    p: usize,
    s: usize,
    middle: &'a [u8],
    k: usize,
    more: &'a [u8],
}

impl Diff<'_> {
    /// Its length, if its base parts lie within `base` and it fits `INLINE`.
    #[inline]
    fn len(&self, base: &[u8]) -> Option<usize> {
        let q = self.p.checked_add(self.middle.len())?;
        let len = q
            .checked_add(self.k)?
            .checked_add(self.more.len())?
            .checked_add(self.s)?;
        // Checked: the values come from a snapshot file too.
        let fits = self.p.checked_add(self.s)? <= base.len()
            && (self.k == 0 || q.checked_add(self.k)? <= base.len());
        (fits && len <= INLINE).then_some(len)
    }

    /// Byte `i` of the blob (`i` below its length).
    fn at(&self, base: &[u8], i: usize) -> u8 {
        let (p, m, k, n) = (self.p, self.middle.len(), self.k, self.more.len());
        if i < p {
            base[i]
        } else if i < p + m {
            self.middle[i - p]
        } else if i < p + m + k {
            base[i]
        } else if i < p + m + k + n {
            self.more[i - p - m - k]
        } else {
            base[base.len() - self.s + (i - p - m - k - n)]
        }
    }
}

/// Rebuilds a blob stored as a difference into `out`; its length, or None
/// if it cannot be.
#[inline]
fn rebuild(base: &[u8], d: Diff<'_>, out: &mut [u8; INLINE]) -> Option<usize> {
    let len = d.len(base)?;
    use lode_wire::short::copy;
    let q = d.p + d.middle.len();
    copy(out, &base[..d.p]);
    copy(&mut out[d.p..], d.middle);
    if d.k > 0 || !d.more.is_empty() {
        copy(&mut out[q..], &base[q..q + d.k]);
        copy(&mut out[q + d.k..], d.more);
    }
    copy(&mut out[len - d.s..], &base[base.len() - d.s..]);
    Some(len)
}

/// Where a search ended.
pub(crate) enum Search {
    Found(u32),
    /// Not present: the predecessor's id and the length of the longest run of
    /// whole labels the sought key shares with it.
    Missing {
        pred: u32,
        common: usize,
    },
}

/// The index of one zone version.
#[derive(Debug, Default)]
pub(crate) struct Store {
    /// Every `TOP_EVERY`th head (see [`Store::index_top`]).
    pub top: Vec<u128>,
    pub heads: Vec<u128>,
    pub offs: Vec<u64>,
    pub data: Vec<u8>,
    pub raw: Vec<u8>,
    pub len: u32,
    /// The NSEC3 index (`nsec3.rs`; derived, not stored).
    pub nsec3: Option<Box<crate::nsec3::Nsec3Index>>,
}

fn head_of(key: &[u8]) -> u128 {
    let mut b = [0u8; 16];
    let n = key.len().min(16);
    b[..n].copy_from_slice(&key[..n]);
    u128::from_be_bytes(b)
}

/// A cache line (x86-64, arm64).
const LINE: usize = 64;
/// Most lines [`touch`] reads: a block of 32 entries is ~1 KiB.
const MAX_TOUCH: usize = 32;

/// Reads one byte of every cache line of `bytes` (at most `MAX_TOUCH` of
/// them), so that the lines are fetched at once rather than one after the
/// other as a binary search over them comes to each: on a zone far larger
/// than the caches, each probe of a lookup is otherwise a memory latency of
/// its own. The loads are independent of each other and of what follows, so
/// the processor has them all in flight together (a prefetch in safe code).
#[inline]
fn touch(bytes: &[u8]) {
    let mut x = 0u8;
    for b in bytes.iter().step_by(LINE).take(MAX_TOUCH) {
        x ^= *b;
    }
    std::hint::black_box(x);
}

/// [`touch`] for an array of integers (heads, offsets).
#[inline]
fn touch_words<T: Copy + Into<u128>>(words: &[T]) {
    let per_line = (LINE / std::mem::size_of::<T>()).max(1);
    let mut x = 0u128;
    for w in words.iter().step_by(per_line).take(MAX_TOUCH) {
        x ^= (*w).into();
    }
    std::hint::black_box(x);
}

fn lcp(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Reads a stored blob at `off` in `raw`.
fn stored(raw: &[u8], off: u64) -> Option<&[u8]> {
    let mut pos = usize::try_from(off).ok()?;
    let len = usize::try_from(get_varint(raw, &mut pos)?).ok()?;
    raw.get(pos..pos.checked_add(len)?)
}

/// A parsed entry value.
#[derive(Clone, Copy)]
enum Value<'a> {
    Ref(u64),
    Diff(Diff<'a>),
    Inline(&'a [u8]),
}

#[inline]
fn read_value<'a>(data: &'a [u8], pos: &mut usize) -> Option<Value<'a>> {
    let x = get_varint(data, pos)?;
    match x & 3 {
        0 => Some(Value::Ref(x >> 2)),
        2 => {
            let len = usize::try_from(x >> 2).ok()?;
            let blob = data.get(*pos..pos.checked_add(len)?)?;
            *pos += len;
            Some(Value::Inline(blob))
        }
        tag => {
            let bytes = |pos: &mut usize| -> Option<&'a [u8]> {
                let n = usize::try_from(get_varint(data, pos)?).ok()?;
                let b = data.get(*pos..pos.checked_add(n)?)?;
                *pos += n;
                Some(b)
            };
            let p = usize::try_from(x >> 2).ok()?;
            let s = usize::try_from(get_varint(data, pos)?).ok()?;
            let middle = bytes(pos)?;
            let (k, more) = match tag {
                1 => (0, &[][..]),
                _ => (usize::try_from(get_varint(data, pos)?).ok()?, bytes(pos)?),
            };
            Some(Value::Diff(Diff {
                p,
                s,
                middle,
                k,
                more,
            }))
        }
    }
}

/// Heads per entry of `Store::top`.
const TOP_EVERY: usize = 64;

/// A block's parts.
#[derive(Clone, Copy)]
struct Block<'a> {
    /// Entry offsets, two bytes each.
    at: &'a [u8],
    /// The entries.
    body: &'a [u8],
    key0: &'a [u8],
    /// Offset of entry 0's value in `body`.
    value0: usize,
}

impl<'a> Block<'a> {
    /// Start of entry `i` in `body`.
    #[inline]
    fn start(&self, i: usize) -> Option<usize> {
        let b = self.at.get(2 * i..2 * i + 2)?;
        Some(usize::from(u16::from_le_bytes([b[0], b[1]])))
    }
    /// Entry `at`'s key and where its value starts in `body` (entry 0's
    /// value is the block's base blob).
    #[inline]
    fn entry_key(&self, at: usize) -> Option<(EntryKey<'a>, usize)> {
        if at == 0 {
            return Some((EntryKey::whole(self.key0), self.value0));
        }
        let (p, suffix, pos) = self.key(at)?;
        let k = EntryKey {
            prefix: &self.key0[..p],
            suffix,
        };
        Some((k, pos))
    }
    /// Key parts of entry `i > 0` and the offset of its value.
    #[inline]
    fn key(&self, i: usize) -> Option<(usize, Suffix<'a>, usize)> {
        let mut pos = self.start(i)?;
        let (p, suffix) = read_suffix(self.body, &mut pos)?;
        if p > self.key0.len() {
            return None;
        }
        Some((p, suffix, pos))
    }
}

impl Store {
    /// Number of entries in block `b`.
    fn block_len(&self, b: usize) -> usize {
        (self.len as usize - b * BLOCK).min(BLOCK)
    }

    #[inline]
    fn block(&self, b: usize) -> Option<Block<'_>> {
        let start = usize::try_from(*self.offs.get(b)?).ok()?;
        let n = self.block_len(b);
        let at = self.data.get(start..start + 2 * n)?;
        let body = self.data.get(start + 2 * n..)?;
        let mut pos = 0;
        let len = usize::try_from(get_varint(body, &mut pos)?).ok()?;
        let key0 = body.get(pos..pos.checked_add(len)?)?;
        Some(Block {
            at,
            body,
            key0,
            value0: pos + len,
        })
    }

    /// [`touch`]es block `b` whole (its offsets, keys and values).
    #[inline]
    fn touch_block(&self, b: usize) {
        let (Some(&start), end) = (self.offs.get(b), self.offs.get(b + 1)) else {
            return;
        };
        let start = usize::try_from(start).unwrap_or(usize::MAX);
        let end = end.map_or(self.data.len(), |&e| {
            usize::try_from(e).unwrap_or(usize::MAX)
        });
        touch(self.data.get(start..end).unwrap_or(&[]));
    }

    /// The first key of block `b`.
    fn base_key(&self, b: usize) -> &[u8] {
        self.block(b).map_or(&[], |bl| bl.key0)
    }

    /// Derives `top` from `heads` (after building or reading).
    pub fn index_top(&mut self) {
        self.top = self.heads.iter().step_by(TOP_EVERY).copied().collect();
        self.top.shrink_to_fit();
    }

    /// The block whose first key is the greatest one <= `key`.
    #[inline]
    fn block_for(&self, key: &[u8]) -> usize {
        let h = head_of(key);
        // The first head >= h lies after top[t - 1] and at or before top[t].
        let t = self.top.partition_point(|&x| x < h);
        let start = t.saturating_sub(1) * TOP_EVERY;
        let end = (t * TOP_EVERY).min(self.heads.len());
        let range = start..end.max(start);
        // The block is in `range` (64 heads, 16 lines) and so is its offset
        // (8 lines): fetch them together, then search.
        touch_words(&self.heads[range.clone()]);
        touch_words(self.offs.get(range.clone()).unwrap_or(&[]));
        let lo = start + self.heads[range].partition_point(|&x| x < h);
        // Blocks starting with these same 16 bytes: usually none or one;
        // find their end by galloping, then compare whole first keys.
        let mut ties = 0;
        let mut step = 1;
        while self.heads.get(lo + ties) == Some(&h) {
            ties += 1;
            if self.heads.get(lo + ties + step - 1) == Some(&h) {
                ties += step;
                step *= 2;
            }
        }
        if ties == 0 {
            return lo.saturating_sub(1);
        }
        let (mut a, mut z) = (lo, lo + ties);
        while a < z {
            let mid = a + (z - a) / 2;
            if self.base_key(mid) <= key {
                a = mid + 1;
            } else {
                z = mid;
            }
        }
        a.saturating_sub(1)
    }

    /// Looks `key` (relative to the origin) up.
    #[inline]
    pub fn search(&self, key: &[u8]) -> Search {
        let b = self.block_for(key);
        // The block's lines are fetched together before its binary search.
        self.touch_block(b);
        let Some(bl) = self.block(b) else {
            return Search::Missing { pred: 0, common: 0 };
        };
        let first = (b * BLOCK) as u32;
        let m = lcp(bl.key0, key);
        if m == bl.key0.len() && m == key.len() {
            return Search::Found(first);
        }
        // Entries 1..n: find the first one above `key` (block_for chose the
        // block so that its first key is below `key`).
        let n = self.block_len(b);
        let (mut lo, mut hi) = (1, n);
        // Common prefix of `key` and the predecessor found so far.
        let mut pred_common = m;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let Some((p, suffix, _)) = bl.key(mid) else {
                return Search::Missing {
                    pred: first,
                    common: 0,
                };
            };
            let below = if p > m {
                true
            } else if p < m {
                false
            } else {
                let mut buf = [0u8; HASHED_KEY];
                let suffix = suffix.bytes(&mut buf);
                let c = m + lcp(suffix, &key[m..]);
                let klen = p + suffix.len();
                if c == klen && c == key.len() {
                    return Search::Found(first + mid as u32);
                }
                c < key.len() && (c == klen || suffix[c - p] < key[c])
            };
            if below {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let pred = lo - 1;
        if pred > 0 {
            if let Some((p, suffix, _)) = bl.key(pred) {
                let mut buf = [0u8; HASHED_KEY];
                pred_common = if p <= m {
                    p + lcp(suffix.bytes(&mut buf), &key[p..])
                } else {
                    m
                };
            }
        }
        missing(first + pred as u32, key, pred_common)
    }

    /// The key, value and block base blob of entry `id`.
    #[inline]
    fn parts(&self, id: u32) -> Option<(EntryKey<'_>, Value<'_>, &[u8])> {
        self.parts_in(id, &mut None)
    }

    /// [`Store::parts`] through a block decoded before (`at`, kept for the
    /// next entry: a walk decodes each block's head once).
    #[inline]
    fn parts_in<'s>(
        &'s self,
        id: u32,
        at: &mut Option<BlockAt<'s>>,
    ) -> Option<(EntryKey<'s>, Value<'s>, &'s [u8])> {
        if id >= self.len {
            return None;
        }
        let b = id as usize / BLOCK;
        let i = id as usize % BLOCK;
        let cur = match at {
            Some(c) if c.index == b => *c,
            _ => {
                let block = self.block(b)?;
                let mut pos = block.value0;
                let base = match read_value(block.body, &mut pos)? {
                    Value::Ref(off) => stored(&self.raw, off)?,
                    Value::Inline(blob) => blob,
                    Value::Diff(_) => return None,
                };
                let c = BlockAt {
                    index: b,
                    block,
                    base,
                };
                *at = Some(c);
                c
            }
        };
        let (k, mut pos) = cur.block.entry_key(i)?;
        if i == 0 {
            return Some((k, Value::Inline(cur.base), cur.base));
        }
        Some((k, read_value(cur.block.body, &mut pos)?, cur.base))
    }

    /// The key of entry `id`.
    #[inline]
    pub fn entry_key(&self, id: u32) -> Option<EntryKey<'_>> {
        if id >= self.len {
            return None;
        }
        let bl = self.block(id as usize / BLOCK)?;
        bl.entry_key(id as usize % BLOCK).map(|(k, _)| k)
    }

    /// The key and blob of entry `id`.
    #[inline]
    pub fn entry(&self, id: u32) -> Option<(EntryKey<'_>, BlobRef<'_>)> {
        let (key, value, base) = self.parts(id)?;
        let blob = match value {
            Value::Ref(off) => BlobRef::Stored(stored(&self.raw, off)?),
            Value::Inline(blob) => BlobRef::Stored(blob),
            Value::Diff(d) => {
                let mut buf = [0u8; INLINE];
                let mut len = rebuild(base, d, &mut buf)?;
                if elided(&buf[..len]) {
                    len = self.restore(id, &mut buf, len, None)?;
                }
                BlobRef::Inline(buf, len as u16)
            }
        };
        match blob {
            BlobRef::Stored(b) if elided(b) => {
                let mut buf = [0u8; INLINE];
                buf.get_mut(..b.len())?.copy_from_slice(b);
                let len = self.restore(id, &mut buf, b.len(), None)?;
                Some((key, BlobRef::Inline(buf, len as u16)))
            }
            blob => Some((key, blob)),
        }
    }

    /// Makes entry `id`'s stored blob `buf[..n]`, which lacks its NSEC3's
    /// next hash, whole in place; its length. The hash is the next entry's
    /// key (read through `at`, the block a walk holds, when that is the
    /// next entry's block).
    #[inline(never)]
    fn restore(
        &self,
        id: u32,
        buf: &mut [u8; INLINE],
        n: usize,
        at: Option<&BlockAt<'_>>,
    ) -> Option<usize> {
        let next = id.checked_add(1)?;
        let key = match at {
            Some(c) if c.index == next as usize / BLOCK => {
                c.block.entry_key(next as usize % BLOCK)?.0
            }
            _ => self.entry_key(next)?,
        };
        let hash = match key.suffix {
            // Stored as its hash (the usual case): nothing to spell.
            Suffix::Hash(h, _) => {
                let mut hash = [0u8; HASH];
                hash.copy_from_slice(h);
                hash
            }
            Suffix::Bytes(_) => {
                let mut k = [0u8; MAX_KEY_LEN];
                let len = key.write(&mut k)?;
                crate::nsec3::key_hash(&k[..len])?
            }
        };
        let pos = crate::blob::nsec3_next_at(&buf[..n])?.min(n);
        if n + HASH > INLINE {
            return None;
        }
        buf.copy_within(pos..n, pos + HASH);
        buf[pos..pos + HASH].copy_from_slice(&hash);
        buf[0] &= !NEXT_ELIDED;
        Some(n + HASH)
    }

    /// [`Store::entry`] for a caller that keeps a buffer: a blob stored as a
    /// difference is rebuilt into `buf` (`Blob::Built`), not into a value
    /// returned on the stack.
    #[inline]
    pub fn entry_into<'s>(
        &'s self,
        id: u32,
        at: &mut Option<BlockAt<'s>>,
        buf: &mut [u8; INLINE],
    ) -> Option<(EntryKey<'s>, Blob<'s>)> {
        let (key, value, base) = self.parts_in(id, at)?;
        let blob = match value {
            Value::Ref(off) => Blob::Stored(stored(&self.raw, off)?),
            Value::Inline(blob) => Blob::Stored(blob),
            Value::Diff(d) => Blob::Built(rebuild(base, d, buf)?),
        };
        let blob = match blob {
            Blob::Stored(b) if elided(b) => {
                buf.get_mut(..b.len())?.copy_from_slice(b);
                Blob::Built(self.restore(id, buf, b.len(), at.as_ref())?)
            }
            Blob::Built(n) if elided(&buf[..n]) => {
                Blob::Built(self.restore(id, buf, n, at.as_ref())?)
            }
            b => b,
        };
        Some((key, blob))
    }

    /// The first (up to) 8 bytes of entry `id`'s blob, without rebuilding it.
    #[inline]
    pub fn blob_prefix(&self, id: u32) -> Option<([u8; 8], usize)> {
        let (_, value, base) = self.parts(id)?;
        let mut out = [0u8; 8];
        let whole = match value {
            Value::Ref(off) => stored(&self.raw, off)?,
            Value::Inline(blob) => blob,
            Value::Diff(d) => {
                let n = d.len(base)?.min(8);
                for (i, o) in out[..n].iter_mut().enumerate() {
                    *o = d.at(base, i);
                }
                out[0] &= !NEXT_ELIDED;
                return Some((out, n));
            }
        };
        let n = whole.len().min(8);
        out[..n].copy_from_slice(&whole[..n]);
        // The NSEC3 next hash a stored blob may lack comes later.
        out[0] &= !NEXT_ELIDED;
        Some((out, n))
    }

    /// Bytes held (capacity), for reports.
    pub fn heap_bytes(&self) -> usize {
        (self.heads.capacity() + self.top.capacity()) * 16
            + self.offs.capacity() * 8
            + self.data.capacity()
            + self.raw.capacity()
            + self.nsec3.as_ref().map_or(0, |x| x.heap_bytes())
    }

    /// Checks the whole structure: every entry decodes, keys ascend, heads
    /// match. Used on data read from a snapshot.
    /// Returns the NSEC3 index's entries found on the way (prefixes, ids).
    pub fn validate(
        &self,
        blob_ok: impl Fn(&[u8]) -> bool,
    ) -> Result<(Vec<u64>, Vec<u32>), String> {
        let blocks = (self.len as usize).div_ceil(BLOCK);
        if self.heads.len() != blocks || self.offs.len() != blocks {
            return Err(format!(
                "{} entries need {blocks} blocks, found {} heads and {} offsets",
                self.len,
                self.heads.len(),
                self.offs.len()
            ));
        }
        let mut prev = [0u8; MAX_KEY_LEN];
        let mut prev_len = 0;
        let mut cur = [0u8; MAX_KEY_LEN];
        let (mut nsec3, mut nsec3_ids) = (Vec::new(), Vec::new());
        for id in 0..self.len {
            if id as usize & (BLOCK - 1) == 0 {
                let b = id as usize / BLOCK;
                if head_of(self.base_key(b)) != self.heads[b] {
                    return Err(format!("block {b}: head does not match its first key"));
                }
            }
            let (key, blob) = self
                .entry(id)
                .ok_or_else(|| format!("entry {id} does not decode"))?;
            if !blob_ok(blob.bytes()) {
                return Err(format!("entry {id}: malformed node data"));
            }
            let len = key
                .write(&mut cur)
                .ok_or_else(|| format!("entry {id}: key too long"))?;
            if id > 0 && prev[..prev_len] >= cur[..len] {
                return Err(format!("entry {id}: keys out of order"));
            }
            if id == 0 && len != 0 {
                return Err("the first entry is not the apex".into());
            }
            if let Some(p) = crate::nsec3::nsec3_entry(&cur[..len], blob.bytes()) {
                nsec3.push(p);
                nsec3_ids.push(id);
            }
            prev[..len].copy_from_slice(&cur[..len]);
            prev_len = len;
        }
        Ok((nsec3, nsec3_ids))
    }
}

/// True for a stored blob that lacks its NSEC3's next hash.
#[inline]
fn elided(blob: &[u8]) -> bool {
    blob.first().is_some_and(|f| f & NEXT_ELIDED != 0)
}

fn missing(pred: u32, key: &[u8], m: usize) -> Search {
    // Whole labels in common: up to and including the last 0 within key[..m].
    let common = key[..m].iter().rposition(|&b| b == 0).map_or(0, |i| i + 1);
    Search::Missing { pred, common }
}

#[inline]
fn read_suffix<'a>(data: &'a [u8], pos: &mut usize) -> Option<(usize, Suffix<'a>)> {
    let x = get_varint(data, pos)?;
    if x >= HASHED {
        let p = u8::try_from(x - HASHED).ok()?;
        let h = data.get(*pos..pos.checked_add(HASH)?)?;
        *pos += HASH;
        return (usize::from(p) < HASHED_KEY).then_some((usize::from(p), Suffix::Hash(h, p)));
    }
    let p = usize::try_from(x).ok()?;
    let l = usize::try_from(get_varint(data, pos)?).ok()?;
    let s = data.get(*pos..pos.checked_add(l)?)?;
    *pos += l;
    Some((p, Suffix::Bytes(s)))
}
