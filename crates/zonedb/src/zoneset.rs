//! The set of zones a server answers for.
//!
//! ```text
//!  ZoneSet (immutable once published; replaced whole only when zones come or go)
//!    origin ─▶ Arc<ZoneSlot> ─▶ ArcSwap<Zone>   (one zone's current version)
//! ```
//!
//! A new version of a zone is published by one atomic swap of that zone's
//! slot ([`ZoneSlot::publish`]), in O(1) whatever the number of zones: sets
//! cloned before share the slot and see it too. Adding or removing a zone
//! builds a new set ([`ZoneSet::insert`] on a clone, O(zones)); a set cloned
//! before keeps the slot it had. Readers load a slot's version without a lock
//! and without allocating.

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use lode_wire::{Name, NameBuf, NameRef};

use crate::Zone;

/// The most labels a name can have (255 octets, one-octet labels).
const MAX_LABELS: usize = 128;

/// One zone's place in a [`ZoneSet`]: its origin and its current version.
#[derive(Debug)]
pub struct ZoneSlot {
    origin: Name,
    current: ArcSwap<Zone>,
    /// A catalog zone (RFC 9432): it cannot expire, and its answers carry
    /// no EDNS EXPIRE (as Knot DNS's). Set by the server from its
    /// configuration; kept across versions.
    catalog: std::sync::atomic::AtomicBool,
}

/// A loaded zone version, held for as long as a reader needs it.
pub type ZoneGuard = arc_swap::Guard<Arc<Zone>>;

impl ZoneSlot {
    /// A slot holding `zone`.
    pub fn new(zone: Arc<Zone>) -> ZoneSlot {
        ZoneSlot {
            origin: zone.origin().to_name(),
            current: ArcSwap::new(zone),
            catalog: std::sync::atomic::AtomicBool::new(false),
        }
    }
    /// Whether the zone is a catalog zone (see the field).
    pub fn is_catalog(&self) -> bool {
        self.catalog.load(std::sync::atomic::Ordering::Relaxed)
    }
    /// Marks the zone a catalog zone (or not).
    pub fn set_catalog(&self, catalog: bool) {
        self.catalog
            .store(catalog, std::sync::atomic::Ordering::Relaxed);
    }
    /// The zone's origin (as it was first loaded; the case of later versions
    /// may differ).
    pub fn origin(&self) -> &Name {
        &self.origin
    }
    /// The current version, for a reader (no lock, no allocation).
    pub fn load(&self) -> ZoneGuard {
        self.current.load()
    }
    /// The current version, to keep.
    pub fn load_full(&self) -> Arc<Zone> {
        self.current.load_full()
    }
    /// Publishes `zone` as the current version; returns the one it replaced.
    /// The caller serialises publications of one zone (its writer).
    pub fn publish(&self, zone: Arc<Zone>) -> Arc<Zone> {
        self.current.swap(zone)
    }
}

/// Zones by origin; finds the most specific zone for a name.
#[derive(Debug, Clone)]
pub struct ZoneSet {
    /// Keyed by the lower-cased wire form of the origin.
    /// Hashed with [`crate::mix`]: origins are configured, not chosen by
    /// clients, and every query hashes a few suffixes of its name.
    zones: HashMap<Box<[u8]>, Arc<ZoneSlot>, crate::mix::BuildMixHasher>,
    /// How many origins have each number of labels (bounds the suffix walk
    /// in O(1) per insert or removal).
    label_counts: Box<[u32; MAX_LABELS + 1]>,
    /// Fewest and most labels among the origins.
    min_labels: usize,
    max_labels: usize,
}

impl Default for ZoneSet {
    fn default() -> Self {
        ZoneSet {
            zones: HashMap::default(),
            label_counts: Box::new([0; MAX_LABELS + 1]),
            min_labels: 0,
            max_labels: 0,
        }
    }
}

impl ZoneSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the zone at its origin in a new slot, or replaces the slot
    /// there: sets cloned before keep the slot they had.
    pub fn insert(&mut self, zone: Arc<Zone>) {
        let key: Box<[u8]> = zone.origin().as_wire().to_ascii_lowercase().into();
        let labels = zone.origin().label_count().min(MAX_LABELS);
        if self
            .zones
            .insert(key, Arc::new(ZoneSlot::new(zone)))
            .is_none()
        {
            self.label_counts[labels] += 1;
            self.rebound();
        }
    }

    /// Publishes `zone` in the slot at its origin (seen by every set that
    /// shares the slot); returns the version it replaced, or gives `zone`
    /// back when no zone is at that origin.
    pub fn publish(&self, zone: Arc<Zone>) -> Result<Arc<Zone>, Arc<Zone>> {
        match self.slot(zone.origin()) {
            Some(slot) => Ok(slot.publish(zone)),
            None => Err(zone),
        }
    }

    /// Removes the zone at `origin`.
    pub fn remove(&mut self, origin: &Name) -> Option<Arc<Zone>> {
        let key = origin.as_wire().to_ascii_lowercase();
        let slot = self.zones.remove(&key[..])?;
        self.label_counts[slot.origin.as_ref().label_count().min(MAX_LABELS)] -= 1;
        self.rebound();
        Some(slot.load_full())
    }

    fn rebound(&mut self) {
        let mut used = self
            .label_counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, _)| i);
        self.min_labels = used.next().unwrap_or(0);
        self.max_labels = used.next_back().unwrap_or(self.min_labels);
    }

    /// The slot of the zone at exactly this origin.
    pub fn slot(&self, origin: NameRef<'_>) -> Option<&Arc<ZoneSlot>> {
        self.zones.get(NameBuf::lowered(origin).as_ref().as_wire())
    }

    /// The current version of the zone at exactly this origin.
    pub fn get(&self, origin: NameRef<'_>) -> Option<Arc<Zone>> {
        self.slot(origin).map(|s| s.load_full())
    }

    /// The most specific zone containing `name` (no allocation).
    pub fn find_zone(&self, name: NameRef<'_>) -> Option<&ZoneSlot> {
        if self.zones.is_empty() {
            return None;
        }
        let wire = name.as_wire();
        // Skip labels until at most max_labels remain.
        let mut pos = 0;
        let mut remaining = name.label_count();
        while remaining > self.max_labels {
            pos += 1 + wire[pos] as usize;
            remaining -= 1;
        }
        // Lower-case only what can be an origin (of a one-zone TLD server,
        // the TLD: not the whole name); length octets stay as they are.
        let tail = &wire[pos..];
        let mut buf = [0u8; lode_wire::name::MAX_NAME_LEN];
        let lower = &mut buf[..tail.len()];
        lower.copy_from_slice(tail);
        lower.make_ascii_lowercase();
        let mut at = 0;
        loop {
            if let Some(z) = self.zones.get(&lower[at..]) {
                return Some(&**z);
            }
            if remaining == 0 || remaining <= self.min_labels {
                return None;
            }
            at += 1 + lower[at] as usize;
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

    /// The current version of every zone (no particular order).
    pub fn iter(&self) -> impl Iterator<Item = Arc<Zone>> + '_ {
        self.zones.values().map(|s| s.load_full())
    }

    /// Every zone's slot (no particular order).
    pub fn slots(&self) -> impl Iterator<Item = &Arc<ZoneSlot>> {
        self.zones.values()
    }
}
