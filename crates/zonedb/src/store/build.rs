//! Building a store: entries pushed in key order are laid out in blocks
//! (keys front-coded, blobs shared or stored as differences from their
//! block's first), in the format `store.rs` describes and reads.

use std::collections::HashMap;

use super::*;
use crate::blob::{put_varint, varint_len};

impl Diff<'_> {
    /// Bytes it takes in a block.
    fn cost(&self) -> usize {
        let (m, n) = (self.middle.len(), self.more.len());
        let head = varint_len((self.p as u64) << 2) + varint_len(self.s as u64);
        let two = match (self.k, n) {
            (0, 0) => 0,
            (k, n) => varint_len(k as u64) + varint_len(n as u64) + n,
        };
        head + varint_len(m as u64) + m + two
    }

    /// Appends it as a block entry's value.
    fn write(&self, out: &mut Vec<u8>) {
        let two = self.k > 0 || !self.more.is_empty();
        put_varint(out, (self.p as u64) << 2 | if two { 3 } else { 1 });
        put_varint(out, self.s as u64);
        put_varint(out, self.middle.len() as u64);
        out.extend_from_slice(self.middle);
        if two {
            put_varint(out, self.k as u64);
            put_varint(out, self.more.len() as u64);
            out.extend_from_slice(self.more);
        }
    }
}

/// The cheapest difference of `blob` from `base` (both at most `INLINE`):
/// their common prefix and suffix, and between them the longest run of
/// bytes equal at the same offsets when leaving it out saves bytes.
fn difference<'b>(base: &[u8], blob: &'b [u8]) -> Diff<'b> {
    let p = lcp(base, blob);
    let s = base[p..]
        .iter()
        .rev()
        .zip(blob[p..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let end = blob.len() - s;
    let one = Diff {
        p,
        s,
        middle: &blob[p..end],
        k: 0,
        more: &[],
    };
    // The longest aligned run within both middles.
    let stop = end.min(base.len() - s);
    let (mut best, mut at, mut run) = ((0, 0), p, 0);
    for i in p..stop {
        if base[i] == blob[i] {
            run += 1;
            if run > best.1 {
                best = (at, run);
            }
        } else {
            at = i + 1;
            run = 0;
        }
    }
    let (q, k) = best;
    if k == 0 {
        return one;
    }
    let two = Diff {
        p,
        s,
        middle: &blob[p..q],
        k,
        more: &blob[q + k..end],
    };
    if two.cost() < one.cost() {
        two
    } else {
        one
    }
}

/// Builds a [`Store`] from keys in ascending order and their blobs.
pub(crate) struct StoreBuilder {
    store: Store,
    /// Fingerprints of blobs seen more than once → their offset in `raw` once stored.
    shared: FingerprintMap<Option<u64>>,
    /// Learning the repeated blobs as they come ([`StoreBuilder::learning`]):
    /// the fingerprints of recent blobs, one per slot.
    recent: Option<Box<[u64]>>,
    /// The current block's first key and first blob.
    key0: Vec<u8>,
    base: Vec<u8>,
    /// The current block: entry offsets and entries.
    at: Vec<u8>,
    body: Vec<u8>,
    /// The NSEC3 index's entries, collected as entries are pushed.
    nsec3: Vec<u64>,
    nsec3_ids: Vec<u32>,
    /// A hashed owner waiting for the next entry's key (its NSEC3's next
    /// hash is left out when that key spells it): key and blob, when
    /// `waiting`.
    pending: (Vec<u8>, Vec<u8>),
    waiting: bool,
}

/// A map keyed by fingerprints, which are already well mixed: no rehashing.
pub(crate) type FingerprintMap<V> =
    HashMap<u64, V, std::hash::BuildHasherDefault<FingerprintHasher>>;

/// Passes a fingerprint through as its own hash.
#[derive(Default)]
pub(crate) struct FingerprintHasher(u64);

impl std::hash::Hasher for FingerprintHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed (write_u64); fold anything else.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Fingerprints a learning [`StoreBuilder`] remembers (a power of two):
/// 256 KiB, which stays in the core's cache (with 2^21 and 2^18 slots, a
/// cache miss per entry took 26 % and 15 % of a secondary's CPU taking an
/// AXFR). A value repeated at least once in ~30,000 names is shared.
const RECENT_SLOTS: usize = 1 << 15;

/// A fingerprint of a blob (for deduplication; equal fingerprints are
/// confirmed by comparing bytes).
pub(crate) fn fingerprint(b: &[u8]) -> u64 {
    crate::mix::hash(b)
}

impl StoreBuilder {
    /// `repeated`: fingerprints of the blobs that occur more than once.
    pub fn new(repeated: impl IntoIterator<Item = u64>) -> Self {
        StoreBuilder {
            store: Store::default(),
            shared: repeated.into_iter().map(|f| (f, None)).collect(),
            recent: None,
            key0: Vec::new(),
            base: Vec::new(),
            at: Vec::new(),
            body: Vec::new(),
            nsec3: Vec::new(),
            nsec3_ids: Vec::new(),
            pending: (Vec::new(), Vec::new()),
            waiting: false,
        }
    }

    /// A builder that learns which blobs repeat as they are pushed, for
    /// entries that come one by one and are not kept (a zone built as its
    /// nodes come): a blob is shared from its second occurrence on when the
    /// first is still among the recent ones (one fingerprint per slot, as
    /// many slots as entries up to [`RECENT_SLOTS`]). Sharing is thus a little less thorough than
    /// with every blob known in advance (the first occurrence keeps its own
    /// copy, repeats far apart may not be caught); a compaction lays the
    /// store out again with all of them known.
    pub fn learning() -> Self {
        StoreBuilder {
            recent: Some(vec![0u64; 1 << 12].into_boxed_slice()),
            ..StoreBuilder::new(std::iter::empty())
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
        if let Some(recent) = self.recent.as_mut() {
            // As many slots as entries so far, up to RECENT_SLOTS.
            if recent.len() < RECENT_SLOTS && self.store.len as usize > recent.len() {
                let mut more = vec![0u64; recent.len() * 4].into_boxed_slice();
                let mask = more.len() - 1;
                for &f in recent.iter().filter(|&&f| f != 0) {
                    more[(f as usize) & mask] = f;
                }
                *recent = more;
            }
            if let std::collections::hash_map::Entry::Vacant(e) = self.shared.entry(fp) {
                // Seen among the recent blobs: shared from now on.
                let mask = recent.len() - 1;
                let slot = &mut recent[(fp as usize) & mask];
                if *slot != fp || fp == 0 {
                    *slot = fp;
                    return None;
                }
                e.insert(None);
            }
        }
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

    /// Writes the current block to `data`.
    fn flush_block(&mut self) {
        self.store.data.extend_from_slice(&self.at);
        self.store.data.extend_from_slice(&self.body);
        self.at.clear();
        self.body.clear();
    }

    /// Appends the next entry; keys must ascend.
    pub fn push(&mut self, key: &[u8], blob: &[u8]) {
        self.put_pending(Some(key));
        // A hashed owner waits for the next key (one entry's look-ahead).
        let hashed = crate::nsec3::nsec3_entry(key, blob).is_some();
        if hashed
            && blob.len() <= INLINE
            && !elided(blob)
            && crate::blob::nsec3_next_at(blob).is_some_and(|at| at + HASH <= blob.len())
        {
            let (k, b) = &mut self.pending;
            k.clear();
            k.extend_from_slice(key);
            b.clear();
            b.extend_from_slice(blob);
            self.waiting = true;
            return;
        }
        self.put(key, blob);
    }

    /// Writes the waiting hashed owner, without its NSEC3's next hash when
    /// `next` (the key of the entry after it) spells that hash.
    fn put_pending(&mut self, next: Option<&[u8]>) {
        if !std::mem::take(&mut self.waiting) {
            return;
        }
        let (key, mut blob) = std::mem::take(&mut self.pending);
        let at = crate::blob::nsec3_next_at(&blob).unwrap_or(blob.len());
        let spelled = next.and_then(crate::nsec3::key_hash);
        if spelled.is_some_and(|h| blob.get(at..at + HASH) == Some(&h[..])) {
            blob.drain(at..at + HASH);
            blob[0] |= NEXT_ELIDED;
        }
        self.put(&key, &blob);
        // The buffers serve the next hashed owner.
        self.pending = (key, blob);
    }

    /// Writes the next entry.
    fn put(&mut self, key: &[u8], blob: &[u8]) {
        if let Some(p) = crate::nsec3::nsec3_entry(key, blob) {
            self.nsec3.push(p);
            self.nsec3_ids.push(self.store.len);
        }
        let at = self.store.len as usize % BLOCK;
        if at == 0 {
            self.flush_block();
            self.store.heads.push(head_of(key));
            self.store.offs.push(self.store.data.len() as u64);
            self.at.extend_from_slice(&0u16.to_le_bytes());
            put_varint(&mut self.body, key.len() as u64);
            self.body.extend_from_slice(key);
            match self.shared_off(blob) {
                Some(off) => put_varint(&mut self.body, off << 2),
                None if blob.len() > INLINE_BASE => {
                    let off = self.put_raw(blob);
                    put_varint(&mut self.body, off << 2);
                }
                None => {
                    // The block's own first blob sits in the block: one
                    // cache miss less on every lookup in the block.
                    put_varint(&mut self.body, (blob.len() as u64) << 2 | 2);
                    self.body.extend_from_slice(blob);
                }
            }
            self.base.clear();
            self.base.extend_from_slice(blob);
            self.key0.clear();
            self.key0.extend_from_slice(key);
        } else {
            // A block holds at most BLOCK entries of at most ~1 KiB (key up to
            // 510 octets, a difference up to INLINE): offsets fit in u16.
            self.at
                .extend_from_slice(&(self.body.len() as u16).to_le_bytes());
            let p = lcp(&self.key0, key);
            let plain = varint_len(p as u64) + varint_len((key.len() - p) as u64) + key.len() - p;
            match crate::nsec3::key_hash(key) {
                // A hashed owner's key as its hash, when that is smaller.
                Some(hash) if varint_len(HASHED + p as u64) + HASH < plain => {
                    put_varint(&mut self.body, HASHED + p as u64);
                    self.body.extend_from_slice(&hash);
                }
                _ => {
                    put_varint(&mut self.body, p as u64);
                    put_varint(&mut self.body, (key.len() - p) as u64);
                    self.body.extend_from_slice(&key[p..]);
                }
            }
            // The smaller of a reference to a shared blob and a difference to the base.
            let shared = self.shared_off(blob);
            let diff = (blob.len() <= INLINE).then(|| difference(&self.base, blob));
            match (shared, diff) {
                (Some(off), Some(d)) if varint_len(off << 2) <= d.cost() => {
                    put_varint(&mut self.body, off << 2)
                }
                (Some(off), None) => put_varint(&mut self.body, off << 2),
                (_, Some(d)) => d.write(&mut self.body),
                (None, None) => {
                    let off = self.put_raw(blob);
                    put_varint(&mut self.body, off << 2);
                }
            }
        }
        self.store.len += 1;
    }

    /// The finished store, its buffers trimmed to size.
    pub fn finish(mut self) -> Store {
        self.put_pending(None);
        self.flush_block();
        let s = &mut self.store;
        s.heads.shrink_to_fit();
        s.offs.shrink_to_fit();
        s.data.shrink_to_fit();
        s.raw.shrink_to_fit();
        s.index_top();
        let (prefixes, ids) = (
            std::mem::take(&mut self.nsec3),
            std::mem::take(&mut self.nsec3_ids),
        );
        self.store.nsec3 = crate::nsec3::Nsec3Index::new(prefixes, ids);
        self.store
    }
}
