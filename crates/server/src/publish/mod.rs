//! Publication: the served set of zones and each zone's current version,
//! swapped in without a lock on the readers' side, and the watchers told
//! of each new serial (the NOTIFY thread). Every writer, load and transfer
//! publishes through here; nothing here depends on how a version was made.

use std::sync::{mpsc, Arc, Mutex};

use arc_swap::ArcSwap;
use lode_wire::{Class, Name, Record, Rtype};
use lode_zonedb::{Zone, ZoneBuilder, ZoneSet};

use crate::reclaim::Reclaimer;

pub(crate) mod commit;

/// A change of a watched zone's serial.
#[derive(Debug)]
pub(crate) struct Changed {
    /// The zone's origin (lower case).
    pub(crate) zone: Name,
    /// Its new SOA record.
    pub(crate) soa: Record,
}

/// Publishes zone versions: readers load the set, then a zone's slot,
/// without a lock. A zone's new version is one swap of its slot
/// ([`Publisher::publish`], O(1) whatever the number of zones); zones that
/// come or go replace the set ([`Publisher::update`], O(zones)). Both take
/// `lock`, so that a slot swapped is never one a concurrent set replacement
/// is about to drop.
#[derive(Debug, Default)]
pub(crate) struct Publisher {
    pub(crate) set: Arc<ArcSwap<ZoneSet>>,
    lock: Mutex<()>,
    /// Zones whose serial changes are told to the NOTIFY thread.
    watch: Mutex<Vec<(Watched, mpsc::Sender<Changed>)>>,
    /// Secondaries signed here (their serials are their own): the
    /// primary's serial the served version stands for (None: not known,
    /// the next transfer is whole).
    upstream: Mutex<std::collections::HashMap<Name, Option<u32>>>,
    /// Where replaced versions and sets go, so that no query frees them.
    reclaim: Reclaimer,
}

impl Publisher {
    /// A publisher of `set`.
    pub(crate) fn new(set: Arc<ArcSwap<ZoneSet>>) -> Publisher {
        Publisher {
            set,
            lock: Mutex::new(()),
            watch: Mutex::new(Vec::new()),
            upstream: Mutex::new(std::collections::HashMap::new()),
            reclaim: Reclaimer::default(),
        }
    }
    /// Notes that the served version of `origin`, a secondary signed here,
    /// stands for the primary's serial `serial` (None: not known).
    pub(crate) fn set_upstream(&self, origin: &Name, serial: Option<u32>) {
        self.upstream
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(origin.clone(), serial);
    }
    /// The served version of `origin` is the primary's own again (its
    /// signing here turned off and the zone transferred whole since).
    pub(crate) fn forget_upstream(&self, origin: &Name) {
        self.upstream
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(origin);
    }
    /// The SOA to compare with the primary's and to ask an IXFR from: the
    /// served version's, with the primary's serial when the zone is signed
    /// here. None: nothing served, or a zone signed here whose primary
    /// serial is not known (a whole transfer is needed).
    pub(crate) fn soa_for_primary(&self, origin: &Name) -> Option<lode_wire::Record> {
        let mut soa = self.get(origin)?.soa_record();
        let upstream = self
            .upstream
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(origin)
            .copied();
        match upstream {
            None => Some(soa),
            Some(None) => None,
            Some(Some(serial)) => {
                lode_zonedb::set_soa_serial(&mut soa, serial);
                Some(soa)
            }
        }
    }
    /// Tells `tx` of every published change of a serial of the `zones`
    /// (a list its owner may grow and shrink later).
    pub(crate) fn watch(&self, zones: Watched, tx: mpsc::Sender<Changed>) {
        self.watch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((zones, tx));
    }
    /// Marks the catalog zones of `config` as such in the set (no EDNS
    /// EXPIRE in their answers), and every other zone as not.
    pub(crate) fn mark_catalogs(&self, config: &crate::config::Config) {
        let set = self.set.load();
        for spec in &config.zones {
            let options = config.zone_options(&spec.name);
            if let Some(slot) = set.slot(spec.name.as_ref()) {
                slot.set_catalog(options.catalog || !options.interpret.is_empty());
            }
        }
    }
    /// The published version of the zone at `origin`.
    pub(crate) fn get(&self, origin: &Name) -> Option<Arc<Zone>> {
        self.set.load().get(origin.as_ref())
    }
    /// Publishes a new version of one zone: one swap of its slot (a zone not
    /// yet in the set is added to it), when the served version is `over`
    /// (or nothing is served; None: whatever is); else the served version.
    /// Only the one commit calls it (`commit.rs`).
    fn publish_over(&self, over: Option<&Arc<Zone>>, zone: Arc<Zone>) -> Result<(), Arc<Zone>> {
        let _guard = self
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let (Some(over), Some(now)) = (over, self.set.load().get(zone.origin())) {
            if !Arc::ptr_eq(over, &now) {
                return Err(now);
            }
        }
        self.publish_locked(zone);
        Ok(())
    }

    /// [`Publisher::publish_over`] with the lock held.
    fn publish_locked(&self, zone: Arc<Zone>) {
        let set = self.set.load_full();
        match set.publish(zone.clone()) {
            Ok(old) => {
                if old.serial() != zone.serial() {
                    self.tell(&zone);
                }
                self.reclaim.retire(old);
            }
            Err(zone) => {
                let mut next = (*set).clone();
                next.insert(zone.clone());
                self.set.store(Arc::new(next));
                self.tell(&zone);
                self.reclaim.retire(set);
            }
        }
    }
    /// Changes a copy of the current set and publishes it (zones added,
    /// removed or replaced in new slots).
    pub(crate) fn update(&self, f: impl FnOnce(&mut ZoneSet)) {
        // A writer that panicked while holding the lock left the set whole
        // (it is only replaced by `store`): go on.
        let _guard = self
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = self.set.load_full();
        let mut next = (*before).clone();
        f(&mut next);
        let next = Arc::new(next);
        self.set.store(next.clone());
        let watchers = self
            .watch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (zones, tx) in watchers.iter() {
            let zones = zones
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for name in zones.iter() {
                let Some(now) = next.get(name.as_ref()) else {
                    continue;
                };
                if before.get(name.as_ref()).map(|z| z.serial()) == Some(now.serial()) {
                    continue;
                }
                let _ = tx.send(Changed {
                    zone: name.clone(),
                    soa: now.soa_record(),
                });
            }
        }
        drop(watchers);
        self.reclaim.retire(before);
    }
    /// Tells the watchers of `zone` of its new serial.
    fn tell(&self, zone: &Zone) {
        let watchers = self
            .watch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if watchers.is_empty() {
            return;
        }
        let name = zone.origin().to_name().to_lowercase();
        for (zones, tx) in watchers.iter() {
            let watched = zones
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains(&name);
            if watched {
                let _ = tx.send(Changed {
                    zone: name.clone(),
                    soa: zone.soa_record(),
                });
            }
        }
    }
}

/// The zones a watcher of the publisher follows (lower-cased origins;
/// shared: zones made at run time join it).
pub(crate) type Watched = Arc<Mutex<std::collections::HashSet<Name>>>;

/// A zone with no contents yet: an SOA (serial 0) and an NS, marked expired so
/// that queries get SERVFAIL until the first transfer.
pub(crate) fn placeholder(origin: &Name) -> Zone {
    let mut b = ZoneBuilder::new(origin.clone());
    let mut rdata = Vec::new();
    rdata.extend_from_slice(origin.as_wire());
    rdata.extend_from_slice(origin.as_wire());
    rdata.extend_from_slice(&[0; 20]);
    b.add(
        Record {
            owner: origin.clone(),
            class: Class::IN,
            rtype: Rtype::SOA,
            ttl: 0,
            rdata: rdata.into(),
        },
        0,
    );
    b.add(
        Record {
            owner: origin.clone(),
            class: Class::IN,
            rtype: Rtype::NS,
            ttl: 0,
            // "invalid." (RFC 6761): never an in-zone name needing glue.
            rdata: b"\x07invalid\x00".as_slice().into(),
        },
        0,
    );
    match b.build() {
        Ok((z, _)) => z.with_expired(true),
        // An SOA and an NS at the origin, nothing else: it always builds.
        Err(p) => unreachable!("placeholder zone: {p:?}"),
    }
}

/// True for the version [`placeholder`] made (nothing transferred yet).
pub(crate) fn is_placeholder(zone: &Zone) -> bool {
    zone.is_expired() && zone.serial() == 0 && zone.record_count() == 2
}
