//! The compact node index: front-coded keys in blocks, blobs deduplicated or
//! stored as differences.
//!
//! ```text
//!  heads: [u128; blocks]   first 16 bytes of each block's first key, zero padded
//!  offs:  [u64; blocks]    where each block starts in `data`
//!  data:  block*           block = entry{1..=BLOCK}
//!         entry 0          klen:varint key  value
//!         entry i > 0      shared:varint slen:varint suffix  value
//!         value            REF:  varint (offset << 1)          → blob in `raw`
//!                          DIFF: varint (p << 1 | 1) s:varint m:varint middle
//!                                blob = base[..p] ++ middle ++ base[len-s..]
//!  raw:   (len:varint blob)*  stored blobs: every block's first blob, shared
//!                          blobs (identical node data, stored once) and
//!                          blobs too large or too different to diff
//! ```
//!
//! Keys are relative to the zone's origin key (the apex's is empty) and each
//! is front-coded against the previous key of its block. A lookup binary
//! searches `heads` (a dense array, one compare per probe; ties on the first
//! 16 bytes fall back to full keys), then scans one block keeping the common
//! prefix with the sought key, so most entries are skipped on one byte
//! compare. Node ids are `block * BLOCK + position`.
//!
//! Zero padding keeps the order: after a key's final 0 comes either nothing
//! or the first byte of another label, which is never 0 (a 0 inside a label
//! is escaped), so a padded key sorts exactly as the key.

use std::collections::HashMap;

use lode_wire::name::MAX_KEY_LEN;

use crate::blob::{get_varint, put_varint, varint_len};

/// Entries per block (a power of two).
pub(crate) const BLOCK: usize = 32;
/// Largest blob stored as a difference (decoded into a buffer of this size).
pub(crate) const INLINE: usize = 384;

/// A key being rebuilt while walking a block.
pub(crate) struct KeyCursor {
    pub buf: [u8; MAX_KEY_LEN],
    pub len: usize,
}

impl KeyCursor {
    pub fn new() -> Self {
        KeyCursor {
            buf: [0; MAX_KEY_LEN],
            len: 0,
        }
    }
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[..self.len]
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
    pub heads: Vec<u128>,
    pub offs: Vec<u64>,
    pub data: Vec<u8>,
    pub raw: Vec<u8>,
    pub len: u32,
}

fn head_of(key: &[u8]) -> u128 {
    let mut b = [0u8; 16];
    let n = key.len().min(16);
    b[..n].copy_from_slice(&key[..n]);
    u128::from_be_bytes(b)
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
    Diff {
        p: usize,
        s: usize,
        middle: &'a [u8],
    },
}

fn read_value<'a>(data: &'a [u8], pos: &mut usize) -> Option<Value<'a>> {
    let x = get_varint(data, pos)?;
    if x & 1 == 0 {
        return Some(Value::Ref(x >> 1));
    }
    let p = usize::try_from(x >> 1).ok()?;
    let s = usize::try_from(get_varint(data, pos)?).ok()?;
    let m = usize::try_from(get_varint(data, pos)?).ok()?;
    let middle = data.get(*pos..pos.checked_add(m)?)?;
    *pos += m;
    Some(Value::Diff { p, s, middle })
}

impl Store {
    /// Number of entries in block `b`.
    fn block_len(&self, b: usize) -> usize {
        (self.len as usize - b * BLOCK).min(BLOCK)
    }

    fn block_start(&self, b: usize) -> Option<usize> {
        usize::try_from(*self.offs.get(b)?).ok()
    }

    /// The first key of block `b`.
    fn base_key(&self, b: usize) -> &[u8] {
        let Some(mut pos) = self.block_start(b) else {
            return &[];
        };
        let len = get_varint(&self.data, &mut pos).unwrap_or(0) as usize;
        self.data.get(pos..pos + len).unwrap_or(&[])
    }

    /// The block whose first key is the greatest one <= `key`.
    #[inline]
    fn block_for(&self, key: &[u8]) -> usize {
        let h = head_of(key);
        let lo = self.heads.partition_point(|&x| x < h);
        let ties = self.heads[lo..].partition_point(|&x| x == h);
        if ties == 0 {
            return lo.saturating_sub(1);
        }
        // Several blocks start with these 16 bytes: compare whole first keys.
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
        let mut cur = KeyCursor::new();
        let n = self.block_len(b);
        let Some(mut pos) = self.block_start(b) else {
            return Search::Missing { pred: 0, common: 0 };
        };
        let data = &self.data[..];
        let first = b as u32 * BLOCK as u32;
        // Entry 0.
        if read_key0(data, &mut pos, &mut cur).is_none() || read_value(data, &mut pos).is_none() {
            return Search::Missing { pred: 0, common: 0 };
        }
        let mut m = lcp(cur.as_slice(), key);
        if m == cur.len && m == key.len() {
            return Search::Found(first);
        }
        // cur < key here (block_for chose the block so).
        let mut i = 1;
        while i < n {
            let Some((p, suffix)) = read_suffix(data, &mut pos) else {
                break;
            };
            if p > cur.len || p + suffix.len() > MAX_KEY_LEN {
                break;
            }
            cur.buf[p..p + suffix.len()].copy_from_slice(suffix);
            cur.len = p + suffix.len();
            if p < m {
                // This key differs from the previous one where the previous
                // one agreed with `key`, upwards: it sorts after `key`.
                return missing(first + i as u32 - 1, key, m);
            }
            if p == m {
                let m2 = m + lcp(suffix, &key[m..]);
                if m2 == cur.len && m2 == key.len() {
                    return Search::Found(first + i as u32);
                }
                let greater = if m2 == key.len() {
                    true
                } else if m2 == cur.len {
                    false
                } else {
                    cur.buf[m2] > key[m2]
                };
                if greater {
                    return missing(first + i as u32 - 1, key, m);
                }
                m = m2;
            }
            // p > m: shares the previous key's smaller byte at m.
            if read_value(data, &mut pos).is_none() {
                break;
            }
            i += 1;
        }
        missing(first + i as u32 - 1, key, m)
    }

    /// The key and blob of entry `id`.
    #[inline]
    pub fn entry(&self, id: u32, cur: &mut KeyCursor) -> Option<BlobRef<'_>> {
        let b = id as usize / BLOCK;
        let at = id as usize % BLOCK;
        if id >= self.len {
            return None;
        }
        let data = &self.data[..];
        let mut pos = self.block_start(b)?;
        read_key0(data, &mut pos, cur)?;
        let Value::Ref(base_off) = read_value(data, &mut pos)? else {
            return None;
        };
        let mut value = Value::Ref(base_off);
        for _ in 0..at {
            let (p, suffix) = read_suffix(data, &mut pos)?;
            if p > cur.len || p + suffix.len() > MAX_KEY_LEN {
                return None;
            }
            cur.buf[p..p + suffix.len()].copy_from_slice(suffix);
            cur.len = p + suffix.len();
            value = read_value(data, &mut pos)?;
        }
        match value {
            Value::Ref(off) => stored(&self.raw, off).map(BlobRef::Stored),
            Value::Diff { p, s, middle } => {
                let base = stored(&self.raw, base_off)?;
                let len = p.checked_add(s)?.checked_add(middle.len())?;
                if p + s > base.len() || len > INLINE {
                    return None;
                }
                let mut buf = [0u8; INLINE];
                buf[..p].copy_from_slice(&base[..p]);
                buf[p..p + middle.len()].copy_from_slice(middle);
                buf[p + middle.len()..len].copy_from_slice(&base[base.len() - s..]);
                Some(BlobRef::Inline(buf, len as u16))
            }
        }
    }

    /// Bytes held (capacity), for reports.
    pub fn heap_bytes(&self) -> usize {
        self.heads.capacity() * 16
            + self.offs.capacity() * 8
            + self.data.capacity()
            + self.raw.capacity()
    }

    /// Checks the whole structure: every entry decodes, keys ascend, heads
    /// match. Used on data read from a snapshot.
    pub fn validate(&self, blob_ok: impl Fn(&[u8]) -> bool) -> Result<(), String> {
        let blocks = (self.len as usize).div_ceil(BLOCK);
        if self.heads.len() != blocks || self.offs.len() != blocks {
            return Err(format!(
                "{} entries need {blocks} blocks, found {} heads and {} offsets",
                self.len,
                self.heads.len(),
                self.offs.len()
            ));
        }
        let mut prev = KeyCursor::new();
        let mut cur = KeyCursor::new();
        for id in 0..self.len {
            if id as usize & (BLOCK - 1) == 0 {
                let b = id as usize / BLOCK;
                if head_of(self.base_key(b)) != self.heads[b] {
                    return Err(format!("block {b}: head does not match its first key"));
                }
            }
            let blob = self
                .entry(id, &mut cur)
                .ok_or_else(|| format!("entry {id} does not decode"))?;
            if !blob_ok(blob.bytes()) {
                return Err(format!("entry {id}: malformed node data"));
            }
            if id > 0 && prev.as_slice() >= cur.as_slice() {
                return Err(format!("entry {id}: keys out of order"));
            }
            if id == 0 && cur.len != 0 {
                return Err("the first entry is not the apex".into());
            }
            prev.buf[..cur.len].copy_from_slice(cur.as_slice());
            prev.len = cur.len;
        }
        Ok(())
    }
}

fn missing(pred: u32, key: &[u8], m: usize) -> Search {
    // Whole labels in common: up to and including the last 0 within key[..m].
    let common = key[..m].iter().rposition(|&b| b == 0).map_or(0, |i| i + 1);
    Search::Missing { pred, common }
}

fn read_key0(data: &[u8], pos: &mut usize, cur: &mut KeyCursor) -> Option<()> {
    let len = usize::try_from(get_varint(data, pos)?).ok()?;
    let k = data.get(*pos..pos.checked_add(len)?)?;
    if len > MAX_KEY_LEN {
        return None;
    }
    cur.buf[..len].copy_from_slice(k);
    cur.len = len;
    *pos += len;
    Some(())
}

#[inline]
fn read_suffix<'a>(data: &'a [u8], pos: &mut usize) -> Option<(usize, &'a [u8])> {
    let p = usize::try_from(get_varint(data, pos)?).ok()?;
    let l = usize::try_from(get_varint(data, pos)?).ok()?;
    let s = data.get(*pos..pos.checked_add(l)?)?;
    *pos += l;
    Some((p, s))
}

/// Builds a [`Store`] from keys in ascending order and their blobs.
pub(crate) struct StoreBuilder {
    store: Store,
    /// Fingerprints of blobs seen more than once → their offset in `raw` once stored.
    shared: HashMap<u64, Option<u64>>,
    prev_key: Vec<u8>,
    base_off: u64,
    base: Vec<u8>,
}

/// A fast non-cryptographic fingerprint of a blob (for deduplication; equal
/// fingerprints are confirmed by comparing bytes).
pub(crate) fn fingerprint(b: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (b.len() as u64).wrapping_mul(K);
    let mut chunks = b.chunks_exact(8);
    for c in chunks.by_ref() {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(K).rotate_left(29);
    }
    let mut w = [0u8; 8];
    let rest = chunks.remainder();
    w[..rest.len()].copy_from_slice(rest);
    h = (h ^ u64::from_le_bytes(w)).wrapping_mul(K);
    h ^ (h >> 32)
}

impl StoreBuilder {
    /// `repeated`: fingerprints of the blobs that occur more than once.
    pub fn new(repeated: impl IntoIterator<Item = u64>) -> Self {
        StoreBuilder {
            store: Store::default(),
            shared: repeated.into_iter().map(|f| (f, None)).collect(),
            prev_key: Vec::new(),
            base_off: 0,
            base: Vec::new(),
        }
    }

    fn put_raw(&mut self, blob: &[u8]) -> u64 {
        let off = self.store.raw.len() as u64;
        put_varint(&mut self.store.raw, blob.len() as u64);
        self.store.raw.extend_from_slice(blob);
        off
    }

    /// The offset of a shared blob, storing it on first use; `None` if the blob is not shared.
    fn shared_off(&mut self, blob: &[u8]) -> Option<u64> {
        let fp = fingerprint(blob);
        match self.shared.get(&fp)? {
            Some(off) => {
                // Confirm: a fingerprint collision falls back to unshared.
                (stored(&self.store.raw, *off) == Some(blob)).then_some(*off)
            }
            None => {
                let off = self.put_raw(blob);
                self.shared.insert(fp, Some(off));
                Some(off)
            }
        }
    }

    /// Appends the next entry; keys must ascend.
    pub fn push(&mut self, key: &[u8], blob: &[u8]) {
        let at = self.store.len as usize % BLOCK;
        if at == 0 {
            self.store.heads.push(head_of(key));
            self.store.offs.push(self.store.data.len() as u64);
            put_varint(&mut self.store.data, key.len() as u64);
            self.store.data.extend_from_slice(key);
            let off = match self.shared_off(blob) {
                Some(off) => off,
                None => self.put_raw(blob),
            };
            put_varint(&mut self.store.data, off << 1);
            self.base_off = off;
            self.base.clear();
            self.base.extend_from_slice(blob);
        } else {
            let p = lcp(&self.prev_key, key);
            let data = &mut self.store.data;
            put_varint(data, p as u64);
            put_varint(data, (key.len() - p) as u64);
            data.extend_from_slice(&key[p..]);
            // The smaller of a reference to a shared blob and a difference to the base.
            let shared = self.shared_off(blob);
            let diff = (blob.len() <= INLINE).then(|| {
                let p = lcp(&self.base, blob);
                let s = self.base[p..]
                    .iter()
                    .rev()
                    .zip(blob[p..].iter().rev())
                    .take_while(|(a, b)| a == b)
                    .count();
                let m = blob.len() - p - s;
                let cost = varint_len((p as u64) << 1 | 1)
                    + varint_len(s as u64)
                    + varint_len(m as u64)
                    + m;
                (p, s, cost)
            });
            let data = &mut self.store.data;
            match (shared, diff) {
                (Some(off), Some((_, _, cost))) if varint_len(off << 1) <= cost => {
                    put_varint(data, off << 1)
                }
                (Some(off), None) => put_varint(data, off << 1),
                (_, Some((p, s, _))) => {
                    let m = blob.len() - p - s;
                    put_varint(data, (p as u64) << 1 | 1);
                    put_varint(data, s as u64);
                    put_varint(data, m as u64);
                    data.extend_from_slice(&blob[p..p + m]);
                }
                (None, None) => {
                    let off = self.put_raw(blob);
                    put_varint(&mut self.store.data, off << 1);
                }
            }
        }
        self.prev_key.clear();
        self.prev_key.extend_from_slice(key);
        self.store.len += 1;
    }

    /// The finished store, its buffers trimmed to size.
    pub fn finish(mut self) -> Store {
        let s = &mut self.store;
        s.heads.shrink_to_fit();
        s.offs.shrink_to_fit();
        s.data.shrink_to_fit();
        s.raw.shrink_to_fit();
        self.store
    }
}
