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
    /// Every record of the zone, in canonical order of owners (SOA included).
    pub fn records(&self) -> impl Iterator<Item = Record> + '_ {
        self.node_ids().flat_map(move |id| {
            let node = self.node(id);
            let owner = node.owner().to_name();
            let class = self.class();
            node.rrsets()
                .flat_map(|set| {
                    let (rtype, ttl) = (set.rtype(), set.ttl());
                    set.rdatas().map(move |rdata| (rtype, ttl, rdata))
                })
                .map(move |(rtype, ttl, rdata)| Record {
                    owner: owner.clone(),
                    class,
                    rtype,
                    ttl,
                    rdata: rdata.into(),
                })
                .collect::<Vec<_>>()
        })
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
