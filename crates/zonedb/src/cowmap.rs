//! A sorted map from byte keys to values, shared between zone versions and
//! copied on write in chunks: the delta of a zone version.
//!
//! ```text
//!  CowMap ── Arc<[Arc<Chunk>]> ── Chunk: keys [Arc<[u8]>] sorted, values
//!            (sorted by each chunk's first key; no chunk is empty)
//! ```
//!
//! A version is a clone (one reference count); a change copies the chunk
//! list (pointers only) and the one chunk it touches, so versions share
//! every other chunk. Reading — exact, predecessor, successor, by position —
//! is two binary searches and never allocates, which the query path needs.
//! Positions ([`Pos`]) are valid in the version they came from only.

use std::sync::Arc;

/// Most entries per chunk; a fuller chunk is split in two.
const CHUNK: usize = 128;

/// Where an entry is: chunk index and index inside the chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pos {
    pub chunk: u32,
    pub at: u32,
}

#[derive(Debug, Clone)]
struct Chunk<V> {
    keys: Vec<Arc<[u8]>>,
    /// The first 16 bytes of each key, zero padded, big-endian: most
    /// comparisons end here without following the key's pointer (zero
    /// padding keeps the order of canonical keys, see `store.rs`).
    pfx: Vec<u128>,
    vals: Vec<V>,
}

/// The first 16 bytes of a key as a number that sorts like the key.
#[inline]
fn prefix(k: &[u8]) -> u128 {
    let mut b = [0u8; 16];
    let n = k.len().min(16);
    b[..n].copy_from_slice(&k[..n]);
    u128::from_be_bytes(b)
}

/// Compares a stored key (with its prefix) with a sought one.
#[inline]
fn cmp(pa: u128, a: &[u8], pb: u128, b: &[u8]) -> std::cmp::Ordering {
    match pa.cmp(&pb) {
        std::cmp::Ordering::Equal if a.len() > 16 || b.len() > 16 => a.cmp(b),
        // Equal prefixes of keys of at most 16 bytes: equal up to padding,
        // and a shorter key sorts first.
        std::cmp::Ordering::Equal => a.len().cmp(&b.len()),
        o => o,
    }
}

impl<V> Chunk<V> {
    /// Binary search for `key` (with its prefix `pk`).
    fn find(&self, key: &[u8], pk: u128) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.keys.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match cmp(self.pfx[mid], &self.keys[mid], pk, key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }
}

/// The map (see the module note).
#[derive(Debug, Clone)]
pub(crate) struct CowMap<V> {
    chunks: Arc<Vec<Arc<Chunk<V>>>>,
    len: usize,
    /// The keys' bytes, kept as entries come and go (`heap_bytes` is asked
    /// after every group of updates: no walk).
    key_bytes: usize,
}

impl<V> Default for CowMap<V> {
    fn default() -> Self {
        CowMap {
            chunks: Arc::new(Vec::new()),
            len: 0,
            key_bytes: 0,
        }
    }
}

impl<V: Clone> CowMap<V> {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The chunk that would hold `key`: the last whose first key is ≤ it
    /// (0 when `key` sorts before everything).
    fn chunk_for(&self, key: &[u8], pk: u128) -> usize {
        let c = &self.chunks;
        // The first chunk whose first key is > key, minus one.
        let i = c.partition_point(|ch| cmp(ch.pfx[0], &ch.keys[0], pk, key).is_le());
        i.saturating_sub(1)
    }

    /// Where `key` is, or where it would be inserted (Err).
    fn search(&self, key: &[u8]) -> Result<Pos, Pos> {
        if self.chunks.is_empty() {
            return Err(Pos { chunk: 0, at: 0 });
        }
        let pk = prefix(key);
        let ci = self.chunk_for(key, pk);
        let at = |i: usize| Pos {
            chunk: ci as u32,
            at: i as u32,
        };
        match self.chunks[ci].find(key, pk) {
            Ok(i) => Ok(at(i)),
            Err(i) => Err(at(i)),
        }
    }

    /// The entry of exactly `key`.
    pub fn get(&self, key: &[u8]) -> Option<(Pos, &V)> {
        let p = self.search(key).ok()?;
        Some((p, self.at(p)?.1))
    }

    /// The key and value at `pos`.
    pub fn at(&self, pos: Pos) -> Option<(&[u8], &V)> {
        let ch = self.chunks.get(pos.chunk as usize)?;
        let i = pos.at as usize;
        Some((ch.keys.get(i)?, ch.vals.get(i)?))
    }

    /// The entry before `pos`.
    pub fn prev(&self, pos: Pos) -> Option<Pos> {
        if pos.at > 0 {
            return Some(Pos {
                chunk: pos.chunk,
                at: pos.at - 1,
            });
        }
        let c = pos.chunk.checked_sub(1)?;
        let n = self.chunks.get(c as usize)?.keys.len();
        Some(Pos {
            chunk: c,
            at: n as u32 - 1,
        })
    }

    /// The entry after `pos`.
    pub fn next(&self, pos: Pos) -> Option<Pos> {
        let ch = self.chunks.get(pos.chunk as usize)?;
        if (pos.at as usize) + 1 < ch.keys.len() {
            return Some(Pos {
                chunk: pos.chunk,
                at: pos.at + 1,
            });
        }
        let c = pos.chunk + 1;
        self.chunks.get(c as usize).map(|_| Pos { chunk: c, at: 0 })
    }

    /// The last entry whose key is < `key`.
    pub fn before(&self, key: &[u8]) -> Option<Pos> {
        match self.search(key) {
            Ok(p) => self.prev(p),
            Err(p) if p.at > 0 => Some(Pos {
                chunk: p.chunk,
                at: p.at - 1,
            }),
            // Before the chunk's first key: only possible in chunk 0.
            Err(p) => self.prev(p),
        }
    }

    /// The first entry whose key is ≥ `key`.
    pub fn at_or_after(&self, key: &[u8]) -> Option<Pos> {
        match self.search(key) {
            Ok(p) => Some(p),
            Err(p) => {
                let ch = self.chunks.get(p.chunk as usize)?;
                if (p.at as usize) < ch.keys.len() {
                    Some(p)
                } else {
                    let c = p.chunk + 1;
                    self.chunks.get(c as usize).map(|_| Pos { chunk: c, at: 0 })
                }
            }
        }
    }

    /// The first entry whose key is > `key`.
    pub fn after(&self, key: &[u8]) -> Option<Pos> {
        match self.search(key) {
            Ok(p) => self.next(p),
            Err(_) => self.at_or_after(key),
        }
    }

    /// The first entry.
    pub fn first(&self) -> Option<Pos> {
        (!self.chunks.is_empty()).then_some(Pos { chunk: 0, at: 0 })
    }

    /// The last entry.
    pub fn last(&self) -> Option<Pos> {
        let c = self.chunks.len().checked_sub(1)?;
        Some(Pos {
            chunk: c as u32,
            at: self.chunks[c].keys.len() as u32 - 1,
        })
    }

    /// Sets `key` to `val`; returns the value it replaced.
    pub fn insert(&mut self, key: Arc<[u8]>, val: V) -> Option<V> {
        let pk = prefix(&key);
        let chunks = Arc::make_mut(&mut self.chunks);
        if chunks.is_empty() {
            self.key_bytes = key.len();
            chunks.push(Arc::new(Chunk {
                keys: vec![key],
                pfx: vec![pk],
                vals: vec![val],
            }));
            self.len = 1;
            return None;
        }
        let ci = {
            let i = chunks.partition_point(|ch| cmp(ch.pfx[0], &ch.keys[0], pk, &key).is_le());
            i.saturating_sub(1)
        };
        let ch = Arc::make_mut(&mut chunks[ci]);
        match ch.find(&key, pk) {
            Ok(i) => Some(std::mem::replace(&mut ch.vals[i], val)),
            Err(i) => {
                self.key_bytes += key.len();
                ch.keys.insert(i, key);
                ch.pfx.insert(i, pk);
                ch.vals.insert(i, val);
                self.len += 1;
                if ch.keys.len() > CHUNK {
                    let half = ch.keys.len() / 2;
                    let right = Chunk {
                        keys: ch.keys.split_off(half),
                        pfx: ch.pfx.split_off(half),
                        vals: ch.vals.split_off(half),
                    };
                    chunks.insert(ci + 1, Arc::new(right));
                }
                None
            }
        }
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        let p = self.search(key).ok()?;
        let chunks = Arc::make_mut(&mut self.chunks);
        let ci = p.chunk as usize;
        let ch = Arc::make_mut(&mut chunks[ci]);
        let key = ch.keys.remove(p.at as usize);
        self.key_bytes -= key.len();
        ch.pfx.remove(p.at as usize);
        let v = ch.vals.remove(p.at as usize);
        if ch.keys.is_empty() {
            chunks.remove(ci);
        }
        self.len -= 1;
        Some(v)
    }

    /// Every entry in order (for tests: callers use positions).
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &V)> + '_ {
        self.chunks
            .iter()
            .flat_map(|c| c.keys.iter().map(|k| &**k).zip(c.vals.iter()))
    }

    /// Bytes of memory held by the keys and the chunk tables (not what the
    /// values point to), shared chunks counted in full; no walk.
    pub fn heap_bytes(&self) -> usize {
        self.chunks.len() * 8 + self.key_bytes + self.len * (16 + 16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn key(n: u32) -> Arc<[u8]> {
        format!("{n:05}").into_bytes().into()
    }

    #[test]
    fn agrees_with_btreemap_and_versions_stay_apart() {
        let mut m: CowMap<u32> = CowMap::default();
        let mut b: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
        let mut seed = 7u64;
        let mut rnd = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut versions = Vec::new();
        for step in 0..20_000u32 {
            let k = (rnd() % 3000) as u32 * 2; // even keys only; odd ones probe gaps
            if rnd() % 3 == 0 {
                assert_eq!(m.remove(&key(k)), b.remove(&*key(k)));
            } else {
                assert_eq!(m.insert(key(k), step), b.insert(key(k).to_vec(), step));
            }
            if step % 5000 == 0 {
                versions.push((m.clone(), b.clone()));
            }
        }
        versions.push((m.clone(), b.clone()));
        for (m, b) in &versions {
            assert_eq!(m.len(), b.len());
            assert_eq!(m.key_bytes, b.keys().map(|k| k.len()).sum::<usize>());
            let all: Vec<(Vec<u8>, u32)> = m.iter().map(|(k, v)| (k.to_vec(), *v)).collect();
            let want: Vec<(Vec<u8>, u32)> = b.iter().map(|(k, v)| (k.clone(), *v)).collect();
            assert_eq!(all, want);
            for probe in 0..6002u32 {
                let k = key(probe);
                assert_eq!(m.get(&k).map(|(_, v)| *v), b.get(&*k).copied());
                let before = m.before(&k).and_then(|p| m.at(p)).map(|(k, _)| k.to_vec());
                assert_eq!(
                    before,
                    b.range(..k.to_vec()).next_back().map(|(k, _)| k.clone())
                );
                let after = m.after(&k).and_then(|p| m.at(p)).map(|(k, _)| k.to_vec());
                let want_after = b
                    .range((
                        std::ops::Bound::Excluded(k.to_vec()),
                        std::ops::Bound::Unbounded,
                    ))
                    .next()
                    .map(|(k, _)| k.clone());
                assert_eq!(after, want_after);
                let aoa = m
                    .at_or_after(&k)
                    .and_then(|p| m.at(p))
                    .map(|(k, _)| k.to_vec());
                assert_eq!(aoa, b.range(k.to_vec()..).next().map(|(k, _)| k.clone()));
            }
            // Walking by positions visits everything in order, both ways.
            let mut fwd = Vec::new();
            let mut p = m.first();
            while let Some(q) = p {
                fwd.push(m.at(q).unwrap().0.to_vec());
                p = m.next(q);
            }
            let mut bwd = Vec::new();
            let mut p = m.last();
            while let Some(q) = p {
                bwd.push(m.at(q).unwrap().0.to_vec());
                p = m.prev(q);
            }
            bwd.reverse();
            assert_eq!(fwd, bwd);
            assert_eq!(fwd.len(), b.len());
        }
    }
}
