//! The set of zones a server answers for.

use std::collections::HashMap;
use std::sync::Arc;

use lode_wire::{Name, NameBuf, NameRef};

use crate::Zone;

/// Zones by origin; finds the most specific zone for a name.
#[derive(Debug, Default, Clone)]
pub struct ZoneSet {
    /// Keyed by the lower-cased wire form of the origin.
    /// Hashed with [`crate::mix`]: origins are configured, not chosen by
    /// clients, and every query hashes a few suffixes of its name.
    zones: HashMap<Box<[u8]>, Arc<Zone>, crate::mix::BuildMixHasher>,
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

fn lowercase(buf: &NameBuf) -> ([u8; 255], usize) {
    let w = buf.as_ref().as_wire();
    let mut out = [0u8; 255];
    for (o, b) in out.iter_mut().zip(w) {
        *o = b.to_ascii_lowercase();
    }
    (out, w.len())
}
