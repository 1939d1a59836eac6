//! The simulated primary's zones, real ones: each update an UPDATE message
//! parsed and run as a transaction of the zone-update stage
//! (`lode_zones::Stage`, signed here for a signed zone), appended to the
//! zone's real journal (`lode_journal`) on the simulated disk, and answered
//! NOERROR only once the append returned — the server's order: answered
//! after stable storage. A crash drops the journals; a restart opens them
//! again and replays them onto the zone's first version, as the server
//! starts.
//!
//! What is checked at each restart (the simulator's "nothing acknowledged
//! is lost" invariants):
//! - every update answered NOERROR is in the version the journal replays to;
//! - no update refused (its journal append undone) comes back;
//! - the version replayed is the version published before the crash, or
//!   that with the update the crash came in (never answered);
//! - a signed zone's every published version validates
//!   (`lode_dnssec::validate`), checked after each commit.

use std::path::PathBuf;
use std::sync::Arc;

use lode_journal::{Journal, Settings};
use lode_wire::{Class, Name, Record, Rtype};
use lode_zonedb::{Zone, ZoneBuilder};
use lode_zones::{Change, Stage};

use super::disk::Disk;

/// Unix time of the simulation's start (signatures are made and checked
/// against it and the simulated time after it).
pub(super) const EPOCH: u64 = 1_790_000_000;

/// One update's fate, as its client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// NOERROR: on stable storage.
    Acked,
    /// SERVFAIL with the journal whole again: it must not come back.
    Refused,
    /// No answer (the crash came in it), or SERVFAIL with the journal
    /// broken: it may be there after a restart, or not.
    Unknown,
}

/// One zone of the primary.
struct PZone {
    name: Name,
    stage: Stage,
    /// Its first version (what the zone file holds; the journal continues it).
    first: Arc<Zone>,
    journal: Option<Journal>,
    served: Arc<Zone>,
    /// Every update sent, by its number: the name it adds and its fate.
    updates: Vec<(Name, Fate)>,
}

/// The primary's zones.
pub(super) struct Data {
    dir: PathBuf,
    zones: Vec<PZone>,
    pub(super) disk: Disk,
    /// Versions validated (signed zones).
    pub(super) validated: u64,
}

/// What an update did.
pub(super) enum Updated {
    /// Answered NOERROR: the serial published.
    Acked(u32),
    /// Answered SERVFAIL (why).
    Refused(String),
}

impl Drop for Data {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The zone `name` as its file holds it: serial 1, an NS and its address.
fn first_version(name: &Name) -> Zone {
    let rec = |owner: &Name, rtype: Rtype, rdata: Vec<u8>| Record {
        owner: owner.clone(),
        class: Class::IN,
        rtype,
        ttl: 300,
        rdata: rdata.into(),
    };
    let ns: Name = format!("ns.{name}").parse().expect("a name");
    let mut soa = Vec::new();
    soa.extend_from_slice(ns.as_wire());
    soa.extend_from_slice(ns.as_wire());
    for v in [1u32, 3600, 5, 600, 60] {
        soa.extend_from_slice(&v.to_be_bytes());
    }
    let mut b = ZoneBuilder::new(name.clone());
    b.add(rec(name, Rtype::SOA, soa), 0);
    b.add(rec(name, Rtype::NS, ns.as_wire().to_vec()), 0);
    b.add(rec(&ns, Rtype::A, vec![192, 0, 2, 1]), 0);
    b.build().expect("the first version builds").0
}

impl Data {
    /// The zones `names` (the first signed here when `signed`), their
    /// journals in a folder of their own for this run.
    pub(super) fn new(seed: u64, names: &[Name], signed: bool, disk: Disk) -> Data {
        // Runs side by side (tests on threads) each in a folder of its own.
        static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("lode-sim-{}-{seed}-{run}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let zones = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let stage = if signed && i == 0 {
                    signing_stage(name)
                } else {
                    Stage::default()
                };
                let file = Arc::new(first_version(name));
                // A signed zone is signed whole before it serves, as the
                // server's start signs it.
                let first = stage
                    .run(&file, Change::Replace(file.clone()), EPOCH)
                    .expect("the first version signs")
                    .version;
                PZone {
                    name: name.clone(),
                    stage,
                    served: first.clone(),
                    first,
                    journal: None,
                    updates: Vec::new(),
                }
            })
            .collect();
        let mut data = Data {
            dir,
            zones,
            disk,
            validated: 0,
        };
        for z in 0..data.zones.len() {
            data.open(z).expect("a journal opens at the start");
        }
        data
    }

    /// The served serial of zone `z`.
    pub(super) fn serial(&self, z: usize) -> u32 {
        self.zones[z].served.serial()
    }

    fn journal_path(&self, z: usize) -> PathBuf {
        self.dir.join(format!("z{z}.jnl"))
    }

    /// Opens zone `z`'s journal and replays it onto its first version.
    fn open(&mut self, z: usize) -> Result<Arc<Zone>, String> {
        let path = self.journal_path(z);
        let zone = &self.zones[z];
        let (journal, recovery) =
            Journal::open_on(&path, &zone.name, Settings::default(), self.disk.wrap())
                .map_err(|e| format!("{}: journal does not open: {e}", zone.name))?;
        if let Some(d) = &recovery.damage {
            return Err(format!("{}: journal damaged: {d:?}", zone.name));
        }
        let replayed = zone
            .stage
            .run(&zone.first, Change::Journal(&recovery.changesets), EPOCH)
            .map_err(|e| format!("{}: journal does not replay: {e}", zone.name))?
            .version;
        let zone = &mut self.zones[z];
        zone.journal = Some(journal);
        zone.served = replayed.clone();
        Ok(replayed)
    }

    /// An update of zone `z` at `now` (seconds since the start): adds a
    /// name of its own, answered once it is journaled.
    pub(super) fn update(&mut self, z: usize, now: u64) -> Updated {
        let zone = &mut self.zones[z];
        let n = zone.updates.len();
        let owner: Name = format!("u{n}.{}", zone.name).parse().expect("a name");
        zone.updates.push((owner.clone(), Fate::Unknown));
        let rec = Record {
            owner: owner.clone(),
            class: Class::IN,
            rtype: Rtype::A,
            ttl: 300,
            rdata: vec![198, 51, (n >> 8) as u8, n as u8].into(),
        };
        let msg = lode_zones::encode_update(n as u16, &zone.name, &[], &[rec]);
        let req = match lode_zones::parse_update(&msg) {
            Ok(r) => r,
            Err(e) => return Updated::Refused(format!("not parsed: {e}")),
        };
        let sealed = {
            let mut txn = zone.stage.begin(&zone.served, EPOCH + now);
            if let Err(e) = txn.apply(Change::Update(&req)) {
                zone.updates[n].1 = Fate::Refused;
                return Updated::Refused(e.to_string());
            }
            match txn.seal() {
                Ok(s) => s,
                Err(e) => {
                    zone.updates[n].1 = Fate::Refused;
                    return Updated::Refused(e.to_string());
                }
            }
        };
        let Some(journal) = zone.journal.as_mut() else {
            return Updated::Refused("the primary is down".into());
        };
        match journal.append(sealed.changes()) {
            Ok(()) => {
                zone.updates[n].1 = Fate::Acked;
                zone.served = sealed.version;
                if zone.stage.signer.is_some() {
                    let touched = [zone.name.clone(), owner];
                    let v = lode_dnssec::validate(&zone.served, EPOCH + now, Some(&touched));
                    if let Err(e) = v {
                        return Updated::Refused(format!("INVALID: {e}"));
                    }
                    self.validated += 1;
                }
                Updated::Acked(self.zones[z].served.serial())
            }
            Err(e) => {
                // Undone, unless the undo failed too (the journal broken):
                // then its frames may be on the file.
                if !journal.is_broken() {
                    zone.updates[n].1 = Fate::Refused;
                }
                Updated::Refused(format!("journal: {e}"))
            }
        }
    }

    /// The crash: the journals closed where they stand, the disk's
    /// unsynced write kept, cut or lost.
    pub(super) fn crash(&mut self) {
        for z in &mut self.zones {
            z.journal = None;
        }
        self.disk.crash();
    }

    /// The restart: every journal opened and replayed; the invariants
    /// checked (the first broken one returned).
    pub(super) fn restart(&mut self) -> Result<(), String> {
        for z in 0..self.zones.len() {
            let before = self.zones[z].served.clone();
            let after = self.open(z)?;
            let zone = &self.zones[z];
            let has = |owner: &Name| after.find(owner.as_ref()).is_some();
            for (owner, fate) in &zone.updates {
                match fate {
                    Fate::Acked if !has(owner) => {
                        return Err(format!(
                            "{}: the update adding {owner}, answered NOERROR, is lost at the restart",
                            zone.name
                        ))
                    }
                    Fate::Refused if has(owner) => {
                        return Err(format!(
                            "{}: the update adding {owner}, answered SERVFAIL, is there after the restart",
                            zone.name
                        ))
                    }
                    _ => {}
                }
            }
            let records = |v: &Zone| -> Vec<Record> {
                let mut r: Vec<Record> = v
                    .records()
                    .filter(|r| {
                        zone.stage.signer.is_none() || !lode_dnssec::is_signer_type(r.rtype)
                    })
                    .collect();
                r.sort_by(|a, b| {
                    (a.owner.key(), a.rtype.0, &a.rdata).cmp(&(b.owner.key(), b.rtype.0, &b.rdata))
                });
                r
            };
            let (was, is) = (records(&before), records(&after));
            let unknown: Vec<&Name> = zone
                .updates
                .iter()
                .filter(|(_, f)| *f == Fate::Unknown)
                .map(|(o, _)| o)
                .collect();
            let extra_ok = is
                .iter()
                .filter(|r| !was.contains(r))
                .all(|r| r.rtype == Rtype::SOA || unknown.contains(&&r.owner));
            let none_missing = was.iter().all(|r| r.rtype == Rtype::SOA || is.contains(r));
            if !extra_ok
                || !none_missing
                || lode_wire::serial::serial_lt(after.serial(), before.serial())
            {
                return Err(format!(
                    "{}: the journal replays to serial {} ({} records), not the published serial {} ({} records)",
                    zone.name,
                    after.serial(),
                    is.len(),
                    before.serial(),
                    was.len()
                ));
            }
        }
        Ok(())
    }
}

/// A stage that signs `name` with two fresh ECDSA P-256 keys.
fn signing_stage(name: &Name) -> Stage {
    use lode_dnssec::{Algorithm, Policy, Signer, SigningKey, KSK_FLAGS, ZSK_FLAGS};
    let keys = [KSK_FLAGS, ZSK_FLAGS]
        .map(|f| SigningKey::generate(name, Algorithm::EcdsaP256, f, EPOCH - 3600).expect("a key"));
    let signer = Signer::new(name, Vec::from(keys), Policy::default()).expect("a signer");
    Stage::signed(lode_zones::SerialPolicy::default(), Arc::new(signer))
}
