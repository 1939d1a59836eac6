//! One fast, non-cryptographic hash over 8-byte words, for the three places
//! that need one: blob fingerprints (deduplication), the snapshot checksum
//! and the zone table's hasher. Keys are never chosen by clients (origins,
//! node data), so flooding resistance buys nothing here.

const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// A streaming multiply-rotate hash; bytes may come in pieces of any size.
#[derive(Debug, Clone)]
pub(crate) struct WordMix {
    h: u64,
    tail: [u8; 8],
    n: usize,
    len: u64,
}

impl Default for WordMix {
    fn default() -> Self {
        WordMix {
            h: 0x243F_6A88_85A3_08D3,
            tail: [0; 8],
            n: 0,
            len: 0,
        }
    }
}

impl WordMix {
    fn word(&mut self, w: u64) {
        self.h = (self.h ^ w).wrapping_mul(K).rotate_left(29);
    }

    /// Adds one 8-byte word (as `update` with its little-endian bytes would).
    #[inline]
    pub(crate) fn update_word(&mut self, w: u64) {
        if self.n == 0 {
            self.len += 8;
            self.word(w);
        } else {
            self.update(&w.to_le_bytes());
        }
    }

    /// Adds bytes.
    pub(crate) fn update(&mut self, mut b: &[u8]) {
        self.len += b.len() as u64;
        while self.n != 0 && !b.is_empty() {
            self.tail[self.n] = b[0];
            self.n = (self.n + 1) % 8;
            b = &b[1..];
            if self.n == 0 {
                self.word(u64::from_le_bytes(self.tail));
            }
        }
        let mut chunks = b.chunks_exact(8);
        for c in chunks.by_ref() {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.word(u64::from_le_bytes(w));
        }
        for &x in chunks.remainder() {
            self.tail[self.n] = x;
            self.n += 1;
        }
    }

    /// The hash of everything added (the length counts: "a" and "a\0" differ).
    pub(crate) fn finish(&self) -> u64 {
        let mut last = [0u8; 8];
        last[..self.n].copy_from_slice(&self.tail[..self.n]);
        let mut m = self.clone();
        m.word(u64::from_le_bytes(last));
        m.word(self.len);
        m.h ^ (m.h >> 32)
    }
}

/// The hash of one byte string.
pub(crate) fn hash(b: &[u8]) -> u64 {
    let mut m = WordMix::default();
    m.update(b);
    m.finish()
}

/// [`WordMix`] as a `std::hash::Hasher`.
#[derive(Debug, Default, Clone)]
pub(crate) struct MixHasher(WordMix);

impl std::hash::Hasher for MixHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    // Slices hash their length first: one word, without the byte path.
    fn write_usize(&mut self, i: usize) {
        self.0.update_word(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0.finish()
    }
}

/// Builds [`MixHasher`]s.
pub(crate) type BuildMixHasher = std::hash::BuildHasherDefault<MixHasher>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_hash_like_the_whole() {
        let data: Vec<u8> = (0..100u8).collect();
        let whole = hash(&data);
        for cut in [0, 1, 7, 8, 9, 50, 99, 100] {
            let mut m = WordMix::default();
            m.update(&data[..cut]);
            m.update(&data[cut..]);
            assert_eq!(m.finish(), whole, "cut at {cut}");
        }
        assert_ne!(hash(b"a"), hash(b"a\0"));
        assert_ne!(hash(b""), hash(b"\0"));
        assert_ne!(hash(&data[..99]), whole);
        let mut a = WordMix::default();
        a.update(&[1, 2, 3]);
        a.update_word(42);
        let mut b = WordMix::default();
        b.update(&[1, 2, 3]);
        b.update(&42u64.to_le_bytes());
        assert_eq!(a.finish(), b.finish());
        let mut c = WordMix::default();
        c.update_word(42);
        assert_eq!(c.finish(), hash(&42u64.to_le_bytes()));
    }
}
