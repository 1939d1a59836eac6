//! The set of zones a server answers for.

use std::collections::HashMap;
use std::sync::Arc;

use lode_wire::{Name, NameBuf, NameRef};

use crate::Zone;

/// Zones by origin; finds the most specific zone for a name.
#[derive(Debug, Default, Clone)]
pub struct ZoneSet {
    /// Keyed by the lower-cased wire form of the origin.
    zones: HashMap<Box<[u8]>, Arc<Zone>, BuildWordHasher>,
    /// Fewest and most labels among the origins (bounds the suffix walk).
    min_labels: usize,
    max_labels: usize,
}

impl ZoneSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces the zone at its origin.
    pub fn insert(&mut self, zone: Arc<Zone>) {
        let key: Box<[u8]> = zone.origin().as_wire().to_ascii_lowercase().into();
        self.zones.insert(key, zone);
        self.recount();
    }

    /// Removes the zone at `origin`.
    pub fn remove(&mut self, origin: &Name) -> Option<Arc<Zone>> {
        let key = origin.as_wire().to_ascii_lowercase();
        let z = self.zones.remove(&key[..]);
        self.recount();
        z
    }

    fn recount(&mut self) {
        let counts = self.zones.values().map(|z| z.origin().label_count());
        self.min_labels = counts.clone().min().unwrap_or(0);
        self.max_labels = counts.max().unwrap_or(0);
    }

    /// The zone at exactly this origin.
    pub fn get(&self, origin: NameRef<'_>) -> Option<&Arc<Zone>> {
        let mut buf = NameBuf::new();
        buf.set(origin);
        let lower = lowercase(&buf);
        self.zones.get(&lower.0[..lower.1])
    }

    /// The most specific zone containing `name` (no allocation).
    pub fn find_zone(&self, name: NameRef<'_>) -> Option<&Zone> {
        if self.zones.is_empty() {
            return None;
        }
        let mut buf = NameBuf::new();
        buf.set(name);
        let (lower, len) = lowercase(&buf);
        let lower = &lower[..len];
        let labels = name.label_count();
        // Skip labels until at most max_labels remain.
        let mut pos = 0;
        let mut remaining = labels;
        while remaining > self.max_labels {
            pos += 1 + lower[pos] as usize;
            remaining -= 1;
        }
        loop {
            if let Some(z) = self.zones.get(&lower[pos..]) {
                return Some(z);
            }
            if remaining == 0 || remaining <= self.min_labels {
                return None;
            }
            pos += 1 + lower[pos] as usize;
            remaining -= 1;
        }
    }

    /// Number of zones.
    pub fn len(&self) -> usize {
        self.zones.len()
    }

    /// True when no zone is loaded.
    pub fn is_empty(&self) -> bool {
        self.zones.is_empty()
    }

    /// All zones (no particular order).
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Zone>> {
        self.zones.values()
    }
}

/// A fast hasher for the zone table: the keys are configured origins, not
/// chosen by clients, so flooding resistance (SipHash) buys nothing on the
/// query path, where every query hashes up to a few suffixes of its name.
#[derive(Debug, Default, Clone, Copy)]
struct BuildWordHasher;

impl std::hash::BuildHasher for BuildWordHasher {
    type Hasher = WordHasher;
    fn build_hasher(&self) -> WordHasher {
        WordHasher(0x243F_6A88_85A3_08D3)
    }
}

/// Multiply-rotate over 8-byte words.
struct WordHasher(u64);

impl std::hash::Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in chunks.by_ref() {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.0 = (self.0 ^ u64::from_le_bytes(w))
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .rotate_left(29);
        }
        let mut w = [0u8; 8];
        let rest = chunks.remainder();
        w[..rest.len()].copy_from_slice(rest);
        self.0 = (self.0 ^ u64::from_le_bytes(w) ^ ((rest.len() as u64) << 56))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29);
    }
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 31)
    }
}

fn lowercase(buf: &NameBuf) -> ([u8; 255], usize) {
    let w = buf.as_ref().as_wire();
    let mut out = [0u8; 255];
    for (o, b) in out.iter_mut().zip(w) {
        *o = b.to_ascii_lowercase();
    }
    (out, w.len())
}
