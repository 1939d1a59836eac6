//! The zones frozen by `lode zone-freeze` (as `knotc zone-freeze`): they
//! answer queries and transfers out as before, but take no UPDATE
//! (REFUSED, EDE 14 "Not Ready", as Knot), write no zone file, make no
//! signature or key event, are not refreshed by their timers or a NOTIFY,
//! and are not read again by a `lode reload`, until `lode zone-thaw`; what
//! an operator asks for by name (`zone-reload`, `zone-flush`, `zone-sign`,
//! `zone-refresh`) still runs. A restart thaws every zone (Knot keeps no
//! freeze across one either).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use lode_wire::Name;

/// The frozen zones: read without a lock by UPDATE admission.
#[derive(Debug, Default)]
pub(crate) struct Frozen {
    zones: ArcSwap<HashSet<Name>>,
    /// Frozen zones a `lode reload` found changed and left: read when
    /// thawed.
    missed_reloads: Mutex<HashSet<Name>>,
}

impl Frozen {
    /// Whether `zone` is frozen.
    pub(crate) fn contains(&self, zone: &Name) -> bool {
        let zones = self.zones.load();
        !zones.is_empty() && zones.contains(zone)
    }

    /// Freezes or thaws `zones` (in one new set: 10^5 zones at once);
    /// those that were not so already.
    pub(crate) fn set(&self, zones: &[Name], frozen: bool) -> Vec<Name> {
        let changed: Vec<Name> = zones
            .iter()
            .map(Name::to_lowercase)
            .filter(|z| self.contains(z) != frozen)
            .collect();
        if changed.is_empty() {
            return changed;
        }
        self.zones.rcu(|old| {
            let mut new: HashSet<Name> = (**old).clone();
            for zone in &changed {
                if frozen {
                    new.insert(zone.clone());
                } else {
                    new.remove(zone);
                }
            }
            Arc::new(new)
        });
        changed
    }

    /// A reload found `zone`'s file changed while it is frozen: true (the
    /// file is left for the thaw) or false (not frozen: read it).
    pub(crate) fn leave_reload(&self, zone: &Name) -> bool {
        if !self.contains(zone) {
            return false;
        }
        self.missed().insert(zone.to_lowercase());
        true
    }

    /// Whether a reload left `zone`'s file while it was frozen (and
    /// forgets it).
    pub(crate) fn take_missed_reload(&self, zone: &Name) -> bool {
        self.missed().remove(zone)
    }

    fn missed(&self) -> std::sync::MutexGuard<'_, HashSet<Name>> {
        self.missed_reloads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freeze_thaw_and_the_reloads_left_meanwhile() {
        let f = Frozen::default();
        let a: Name = "Example.COM.".parse().unwrap();
        let b: Name = "example.net.".parse().unwrap();
        assert!(!f.contains(&a.to_lowercase()));
        assert_eq!(
            f.set(std::slice::from_ref(&a), true),
            vec![a.to_lowercase()]
        );
        assert!(
            f.set(std::slice::from_ref(&a), true).is_empty(),
            "already frozen"
        );
        assert!(f.contains(&a.to_lowercase()));
        assert!(!f.leave_reload(&b), "not frozen: read it");
        assert!(f.leave_reload(&a.to_lowercase()));
        assert!(!f.contains(&b));
        assert_eq!(
            f.set(&[a.clone(), b.clone()], false),
            vec![a.to_lowercase()]
        );
        assert!(!f.contains(&a.to_lowercase()));
        assert!(f.take_missed_reload(&a.to_lowercase()));
        assert!(!f.take_missed_reload(&a.to_lowercase()), "taken once");
    }
}
