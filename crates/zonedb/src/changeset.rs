//! Changes to a zone: the unit of the one update path (UPDATE, a reloaded
//! zone file's difference, IXFR in) and of the journal.

use lode_wire::{Record, Rtype};

use crate::{Problem, Zone, ZoneBuilder};

/// One change of a zone from one SOA serial to the next: what IXFR (RFC 1995)
/// calls a difference sequence. Applying it removes `removed` (every record
/// must exist) and adds `added` (none may exist yet); the SOA records are
/// kept apart and are not in either list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changeset {
    /// The apex SOA before the change.
    pub soa_from: Record,
    /// The apex SOA after the change.
    pub soa_to: Record,
    /// Records removed (no SOA).
    pub removed: Vec<Record>,
    /// Records added (no SOA).
    pub added: Vec<Record>,
}

/// The serial of an SOA record's RDATA (0 if the RDATA is too short).
pub fn soa_serial(soa: &Record) -> u32 {
    let r = &soa.rdata;
    if r.len() < 20 {
        return 0;
    }
    let f = &r[r.len() - 20..];
    u32::from_be_bytes([f[0], f[1], f[2], f[3]])
}

/// `soa` with its serial set to `serial` (unchanged if the RDATA is too
/// short to be an SOA's).
pub fn set_soa_serial(soa: &mut Record, serial: u32) {
    let n = soa.rdata.len();
    if n < 20 {
        return;
    }
    let mut rdata = soa.rdata.to_vec();
    rdata[n - 20..n - 16].copy_from_slice(&serial.to_be_bytes());
    soa.rdata = rdata.into();
}

impl Changeset {
    /// The serial the change applies to.
    pub fn serial_from(&self) -> u32 {
        soa_serial(&self.soa_from)
    }
    /// The serial after the change.
    pub fn serial_to(&self) -> u32 {
        soa_serial(&self.soa_to)
    }
    /// True if nothing but the SOA changes.
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.added.is_empty()
    }

    /// Changesets that follow one another as one: from the first one's SOA
    /// to the last one's; a record added then removed (or removed then
    /// added back as it was) is in neither list. None for an empty list.
    pub fn merge(list: Vec<Changeset>) -> Option<Changeset> {
        type Key = ((Box<[u8]>, Rtype, u16, Box<[u8]>), u32);
        let key = |r: &Record| -> Key { (identity(r), r.ttl) };
        /// Records in order, with the place of each by key.
        #[derive(Default)]
        struct Side {
            records: Vec<Option<Record>>,
            at: std::collections::HashMap<Key, usize>,
        }
        impl Side {
            fn push(&mut self, k: Key, r: Record) {
                self.at.insert(k, self.records.len());
                self.records.push(Some(r));
            }
            fn take(&mut self, k: &Key) -> bool {
                match self.at.remove(k) {
                    Some(i) => self.records[i].take().is_some(),
                    None => false,
                }
            }
            fn into_vec(self) -> Vec<Record> {
                self.records.into_iter().flatten().collect()
            }
        }
        let mut iter = list.into_iter();
        let first = iter.next()?;
        let (mut removed, mut added) = (Side::default(), Side::default());
        for r in first.removed {
            removed.push(key(&r), r);
        }
        for r in first.added {
            added.push(key(&r), r);
        }
        let mut soa_to = first.soa_to;
        for cs in iter {
            for r in cs.removed {
                let k = key(&r);
                if !added.take(&k) {
                    removed.push(k, r);
                }
            }
            for r in cs.added {
                let k = key(&r);
                if !removed.take(&k) {
                    added.push(k, r);
                }
            }
            soa_to = cs.soa_to;
        }
        Some(Changeset {
            soa_from: first.soa_from,
            soa_to,
            removed: removed.into_vec(),
            added: added.into_vec(),
        })
    }
}

/// Why a changeset could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApplyError {
    /// The zone's serial is not the changeset's `serial_from`.
    SerialMismatch {
        /// The zone's serial.
        zone: u32,
        /// The changeset's starting serial.
        changeset: u32,
    },
    /// A record to remove is not in the zone.
    MissingRecord(String),
    /// A record to add is already in the zone.
    ExistingRecord(String),
    /// The result is not a valid zone.
    Invalid(Vec<Problem>),
}

impl std::fmt::Display for ApplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApplyError::SerialMismatch { zone, changeset } => write!(
                f,
                "the changeset starts at serial {changeset}, the zone is at {zone}"
            ),
            ApplyError::MissingRecord(r) => write!(f, "record to remove is not in the zone: {r}"),
            ApplyError::ExistingRecord(r) => write!(f, "record to add is already in the zone: {r}"),
            ApplyError::Invalid(p) => {
                write!(f, "the changed zone is not valid:")?;
                for p in p {
                    write!(f, " {p};")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for ApplyError {}

/// A record's identity for set arithmetic: owner (case-insensitive), type,
/// class and RDATA; the TTL is not part of it (RFC 2136 §1.1.1).
fn identity(r: &Record) -> (Box<[u8]>, Rtype, u16, Box<[u8]>) {
    (r.owner.key(), r.rtype, r.class.0, r.rdata.clone())
}

impl Zone {
    /// Every record of the zone, in canonical order of owners (SOA included;
    /// RRSIGs with their original TTLs, see [`crate::RRset::record_ttl`]).
    pub fn records(&self) -> impl Iterator<Item = Record> + '_ {
        self.node_ids().flat_map(move |id| self.node_records(id))
    }

    /// The records of `owner` (none when the name is not in the zone, or
    /// is an empty non-terminal).
    pub fn records_of(&self, owner: lode_wire::NameRef<'_>) -> Vec<Record> {
        self.find(owner)
            .map_or_else(Vec::new, |id| self.node_records(id))
    }

    /// The records of one node.
    fn node_records(&self, id: crate::NodeId) -> Vec<Record> {
        let node = self.node(id);
        let owner = node.owner().to_name();
        let class = self.class();
        node.rrsets()
            .flat_map(|set| {
                set.rdatas()
                    .map(move |rdata| (set.rtype(), set.record_ttl(rdata), rdata))
            })
            .map(move |(rtype, ttl, rdata)| Record {
                owner: owner.clone(),
                class,
                rtype,
                ttl,
                rdata: rdata.into(),
            })
            .collect()
    }

    /// The zone with `changes` applied, built anew from all its records: the
    /// reference every faster way of applying changes is tested against.
    pub fn apply_rebuild(&self, changes: &Changeset) -> Result<Zone, ApplyError> {
        if changes.serial_from() != self.serial() {
            return Err(ApplyError::SerialMismatch {
                zone: self.serial(),
                changeset: changes.serial_from(),
            });
        }
        let mut records: Vec<Record> = self.records().filter(|r| r.rtype != Rtype::SOA).collect();
        let mut present: std::collections::HashSet<_> = records.iter().map(identity).collect();
        let mut removed = std::collections::HashSet::new();
        for r in &changes.removed {
            let id = identity(r);
            if !present.remove(&id) {
                return Err(ApplyError::MissingRecord(format!(
                    "{} {}",
                    r.owner, r.rtype
                )));
            }
            removed.insert(id);
        }
        for r in &changes.added {
            if !present.insert(identity(r)) {
                return Err(ApplyError::ExistingRecord(format!(
                    "{} {}",
                    r.owner, r.rtype
                )));
            }
        }
        // A record removed and added back (a new TTL) is taken from `added`.
        records.retain(|r| {
            let id = identity(r);
            !removed.contains(&id) && present.remove(&id)
        });
        let mut b = ZoneBuilder::new(self.origin().to_name())
            .class(self.class())
            .changed();
        b.add(changes.soa_to.clone(), 0);
        for r in records.into_iter().chain(changes.added.iter().cloned()) {
            b.add(r, 0);
        }
        b.build().map(|(z, _)| z).map_err(ApplyError::Invalid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(owner: &str, ttl: u32, last: u8) -> Record {
        Record {
            owner: owner.parse().unwrap(),
            class: lode_wire::Class::IN,
            rtype: Rtype::A,
            ttl,
            rdata: vec![192, 0, 2, last].into(),
        }
    }

    fn soa(serial: u32) -> Record {
        let mut rdata = b"\x02ns\x00\x04host\x00".to_vec();
        rdata.extend_from_slice(&serial.to_be_bytes());
        rdata.extend_from_slice(&[0; 16]);
        Record {
            owner: "example.".parse().unwrap(),
            class: lode_wire::Class::IN,
            rtype: Rtype::SOA,
            ttl: 300,
            rdata: rdata.into(),
        }
    }

    fn cs(from: u32, removed: Vec<Record>, added: Vec<Record>) -> Changeset {
        Changeset {
            soa_from: soa(from),
            soa_to: soa(from + 1),
            removed,
            added,
        }
    }

    #[test]
    fn merged_changesets_cancel_what_comes_and_goes() {
        let merged = Changeset::merge(vec![
            cs(
                1,
                vec![rec("a.example.", 300, 1)],
                vec![rec("b.example.", 300, 2)],
            ),
            cs(
                2,
                vec![rec("b.example.", 300, 2)],
                vec![rec("a.example.", 300, 1)],
            ),
            // A TTL change stays a removal and an addition.
            cs(
                3,
                vec![rec("c.example.", 300, 3)],
                vec![rec("c.example.", 60, 3)],
            ),
        ])
        .unwrap();
        assert_eq!((merged.serial_from(), merged.serial_to()), (1, 4));
        assert_eq!(merged.removed, vec![rec("c.example.", 300, 3)]);
        assert_eq!(merged.added, vec![rec("c.example.", 60, 3)]);
        assert!(Changeset::merge(Vec::new()).is_none());
    }
}
