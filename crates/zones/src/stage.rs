//! The zone-update stage: every change to a zone passes here, whatever its
//! source (as Knot's `zone-update`).
//!
//! ```text
//!  published version + Change + now ──Stage::run──▶ Staged (next version + what to journal)
//!
//!  Change::Update(request)      RFC 2136: prerequisites, updates ─┐
//!  Change::Difference(zone)     a zone file read again: its diff ─┤─▶ changeset
//!  Change::Changesets(list)     IXFR in ──────────────────────────┤   (serials as given;
//!  Change::Transfer(zone)       AXFR in, the zone signed here: ───┘    signed here: ours)
//!        └─▶ apply ─▶ sign (a signed zone: the touched RRsets, NSEC, SOA) ─▶ next version
//!  Change::Journal(list)        the journal at start: signed already, applied as it is
//!  Change::Replace(zone)        AXFR in, a first load: a whole new version (signed
//!                               whole when the zone is signed and it is not yet)
//!  Change::Resign               the zone signed whole again (keys changed, signatures due)
//!  Change::Refresh(names)       the due signatures of a batch of names made again
//! ```
//!
//! A signed zone's changes lose their own DNSSEC records (RRSIG, NSEC,
//! NSEC3, NSEC3PARAM, DNSKEY: the signer makes them), and a zone file read
//! again is compared without them.
//!
//! A secondary signed here (Knot's signing of a transferred zone) numbers
//! its versions itself: the primary's changesets (IXFR in) become one
//! changeset from the served serial to the serial policy's next, and a
//! whole transfer (AXFR in) of a zone that has contents becomes its
//! difference from the served version the same way, so that the zone's
//! own secondaries keep taking IXFR. Which primary serial the served
//! version stands for is the caller's to keep (the journal marks it).
//!
//! No I/O and no clock: `now` is passed in. What is around it — queueing,
//! group commit, the journal, publication, NOTIFY — is the caller's. The
//! changesets returned are exactly what the version returned differs by
//! from the one given, in order: journaled, they replay to the same version.

use std::fmt;
use std::sync::Arc;

use lode_dnssec::{is_signer_type, Signer};
use lode_wire::{Record, Rtype};
use lode_zonedb::{set_soa_serial, ApplyError, Changeset, Zone};

use crate::update::{self, SerialPolicy, UpdateError, UpdateRequest};

/// One change to a zone, as it reaches the stage.
#[derive(Debug)]
#[non_exhaustive]
pub enum Change<'a> {
    /// A dynamic update (RFC 2136).
    Update(&'a UpdateRequest),
    /// The zone as its file now reads: the difference from the served
    /// version is the change (Knot's `zonefile-load: difference`).
    Difference(&'a Zone),
    /// Changesets made elsewhere (IXFR in), applied in order with the
    /// serials they carry.
    Changesets(&'a [Changeset]),
    /// The journal at start: changesets this stage made (signed already).
    Journal(&'a [Changeset]),
    /// The zone signed whole again, with the next serial.
    Resign,
    /// The due signatures of these names made again, with the next serial
    /// (see `lode_dnssec::refresh`).
    Refresh(&'a [lode_wire::Name]),
    /// The apex's key records (DNSKEY, CDS, CDNSKEY) brought to what the
    /// signer's keys call for after a key event, with the next serial.
    Rekey,
    /// A whole new version (AXFR in): the history starts afresh.
    Replace(Arc<Zone>),
    /// A whole zone transferred in from the primary of a zone signed here
    /// that has contents: its difference from the served version, signed,
    /// with the next serial (a zone not signed here: as `Replace`).
    Transfer(Arc<Zone>),
}

impl Change<'_> {
    /// What the change is, for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Change::Update(_) => "an update",
            Change::Difference(_) => "the zone file read again",
            Change::Changesets(_) => "incoming changes",
            Change::Journal(_) => "the journal",
            Change::Resign => "signing the zone again",
            Change::Refresh(_) => "signatures made again before they expire",
            Change::Rekey => "a key event",
            Change::Replace(_) => "a whole new version",
            Change::Transfer(_) => "a whole transfer",
        }
    }
}

/// What the stage made of a change.
#[derive(Debug)]
#[non_exhaustive]
pub enum Staged {
    /// Nothing changes (the serial is kept).
    Unchanged,
    /// The next version, and the changesets that lead to it (to journal).
    Changed {
        /// The version to publish once the changesets are journaled.
        version: Arc<Zone>,
        /// Oldest first; each starts at the serial the previous one ended at.
        changes: Vec<Changeset>,
        /// The zone file's serial was not newer than the served one, so the
        /// change got the serial policy's next (the file's serial, for logs).
        serial_raised: Option<u32>,
    },
    /// A whole new version; the history before it no longer applies.
    Replaced {
        /// The version to publish once the history is cleared.
        version: Arc<Zone>,
    },
}

/// What [`Stage::run_mut`] made of a change (the version is the one it
/// was given, advanced).
#[derive(Debug)]
#[non_exhaustive]
pub enum Step {
    /// Nothing changes.
    Unchanged,
    /// The version advanced by these changesets (to journal).
    Changed {
        /// Oldest first.
        changes: Vec<Changeset>,
        /// As in [`Staged::Changed`].
        serial_raised: Option<u32>,
    },
    /// A whole new version; the history before it no longer applies.
    Replaced,
}

/// `cs` applied to `version` where it stands (a version shared with others
/// is copied first: only the parts it changes); as it was on error.
fn apply(version: &mut Arc<Zone>, cs: &Changeset) -> Result<(), StageError> {
    Arc::make_mut(version)
        .apply_mut(cs)
        .map_err(|error| StageError::Apply {
            from: cs.serial_from(),
            to: cs.serial_to(),
            error,
        })
}

/// Why a change was not taken.
#[derive(Debug)]
#[non_exhaustive]
pub enum StageError {
    /// The update is refused (its RCODE is the reply's).
    Update(UpdateError),
    /// A changeset does not apply to the version it follows.
    Apply {
        /// The changeset's serials.
        from: u32,
        /// (to)
        to: u32,
        /// Why.
        error: ApplyError,
    },
    /// The zone has no contents to change (a secondary not yet transferred,
    /// or expired).
    NoContents,
    /// The zone could not be signed.
    Sign(lode_dnssec::SignError),
    /// The version the change leads to fails DNSSEC validation
    /// (`dnssec-validation`).
    Invalid(String),
}

impl fmt::Display for StageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StageError::Update(e) => write!(f, "{e}"),
            StageError::Apply { from, to, error } => {
                write!(f, "changeset {from} → {to} does not apply: {error}")
            }
            StageError::NoContents => f.write_str("the zone has no contents to apply changes to"),
            StageError::Sign(e) => write!(f, "signing: {e}"),
            StageError::Invalid(e) => write!(f, "DNSSEC validation failed: {e}"),
        }
    }
}

impl std::error::Error for StageError {}

/// The stage's settings for one zone.
#[derive(Debug, Clone, Default)]
pub struct Stage {
    /// How a serial moves when the change itself does not set it.
    pub policy: SerialPolicy,
    /// The zone's signer, when it is signed here.
    pub signer: Option<Arc<Signer>>,
    /// The zone is signed here, though this stage does not sign (see
    /// [`Stage::unsigned`]): zone-file differences leave DNSSEC records out.
    signed_zone: bool,
    /// Knot's `dnssec-validation`: each new version of a zone signed
    /// elsewhere is checked (`lode_dnssec::validate`) before it is
    /// returned — whole after a replacement, the names a change touched
    /// (and the chain whole) after a change; a version that fails is refused.
    pub validate: bool,
}

impl Stage {
    /// The stage of an unsigned zone with this serial policy.
    pub fn new(policy: SerialPolicy) -> Stage {
        Stage {
            policy,
            signer: None,
            signed_zone: false,
            validate: false,
        }
    }

    /// The stage of a zone signed by `signer`.
    pub fn signed(policy: SerialPolicy, signer: Arc<Signer>) -> Stage {
        Stage {
            policy,
            signer: Some(signer),
            signed_zone: true,
            validate: false,
        }
    }

    /// The same stage without its signer: the changes of a group are
    /// staged with it one by one, then signed together ([`Stage::sign_group`]).
    pub fn unsigned(&self) -> Stage {
        Stage {
            policy: self.policy,
            signer: None,
            signed_zone: self.signed_zone,
            validate: self.validate,
        }
    }

    /// The same stage for a zone no longer signed here (a reload turned
    /// signing off): its DNSSEC records are then records like any other.
    pub fn without_signing(&self) -> Stage {
        Stage {
            policy: self.policy,
            signer: None,
            signed_zone: false,
            validate: self.validate,
        }
    }

    /// The changes of one group (each staged unsigned, in order, from
    /// `current`) as one changeset, signed in one pass: the SOA and every
    /// NSEC touched twice in the group signed once (Knot signs a batch of
    /// updates as one). Returns the version and the changeset to journal;
    /// for a zone not signed here, the changes as they are.
    pub fn sign_group(
        &self,
        current: &Arc<Zone>,
        changes: Vec<Changeset>,
        now: u64,
    ) -> Result<(Arc<Zone>, Vec<Changeset>), StageError> {
        let Some(signer) = &self.signer else {
            let mut version = current.clone();
            for cs in &changes {
                apply(&mut version, cs)?;
            }
            return Ok((version, changes));
        };
        let Some(merged) = Changeset::merge(changes) else {
            return Ok((current.clone(), Vec::new()));
        };
        match signer.sign_change(current, &merged, now) {
            Ok((version, signed)) => Ok((Arc::new(version), vec![signed])),
            Err(lode_dnssec::SignError::Apply(error)) => Err(StageError::Apply {
                from: merged.serial_from(),
                to: merged.serial_to(),
                error,
            }),
            Err(e) => Err(StageError::Sign(e)),
        }
    }

    /// A whole new version of the zone as it is served: signed whole when
    /// the zone is signed here and `zone` is not signed by its keys (with
    /// signatures not yet due); `zone` as it is otherwise. When it is
    /// signed here and its serial is not past the served version's
    /// (`current`), it gets the serial policy's next: secondaries that
    /// hold the unsigned version at that serial must see a newer one.
    pub fn prepare(
        &self,
        zone: Arc<Zone>,
        current: &Zone,
        now: u64,
    ) -> Result<Arc<Zone>, StageError> {
        match &self.signer {
            Some(s) if !zone.is_expired() && !s.is_current(&zone, now) => {
                let newer = current.is_expired()
                    || lode_wire::serial::serial_lt(current.serial(), zone.serial());
                let serial = (!newer).then(|| self.policy.next(current.serial(), now));
                s.sign_zone(&zone, serial, now)
                    .map(Arc::new)
                    .map_err(StageError::Sign)
            }
            _ => Ok(zone),
        }
    }

    /// Runs `change` against `current`, the version it follows.
    pub fn run(
        &self,
        current: &Arc<Zone>,
        change: Change<'_>,
        now: u64,
    ) -> Result<Staged, StageError> {
        let mut version = current.clone();
        Ok(match self.run_mut(&mut version, change, now)? {
            Step::Unchanged => Staged::Unchanged,
            Step::Changed {
                changes,
                serial_raised,
            } => Staged::Changed {
                version,
                changes,
                serial_raised,
            },
            Step::Replaced => Staged::Replaced { version },
        })
    }

    /// [`Stage::run`] on a working version, advanced where it is: a group's
    /// changes, staged one after another on the one version, copy each
    /// part of the delta they touch once (see `Zone::apply_mut`), where
    /// versions made one from another would copy it each time. On error
    /// `version` is as it was.
    pub fn run_mut(
        &self,
        version: &mut Arc<Zone>,
        change: Change<'_>,
        now: u64,
    ) -> Result<Step, StageError> {
        let current: &Arc<Zone> = version;
        let (changes, serial_raised) = match change {
            Change::Replace(zone) => {
                let zone = self.prepare(zone, current, now)?;
                self.check(&zone, None, now)?;
                *version = zone;
                return Ok(Step::Replaced);
            }
            Change::Resign => {
                let Some(signer) = &self.signer else {
                    return Ok(Step::Unchanged);
                };
                if current.is_expired() {
                    return Err(StageError::NoContents);
                }
                let next = self.policy.next(current.serial(), now);
                let signed = signer
                    .sign_zone(current, Some(next), now)
                    .map_err(StageError::Sign)?;
                *version = Arc::new(signed);
                return Ok(Step::Replaced);
            }
            Change::Refresh(owners) => {
                let Some(signer) = &self.signer else {
                    return Ok(Step::Unchanged);
                };
                if current.is_expired() || owners.is_empty() {
                    return Ok(Step::Unchanged);
                }
                let mut soa_to = current.soa_record();
                set_soa_serial(&mut soa_to, self.policy.next(current.serial(), now));
                let (next, cs) = signer
                    .refresh(current, owners, soa_to, now)
                    .map_err(StageError::Sign)?;
                *version = Arc::new(next);
                return Ok(Step::Changed {
                    changes: vec![cs],
                    serial_raised: None,
                });
            }
            Change::Rekey => {
                let Some(signer) = &self.signer else {
                    return Ok(Step::Unchanged);
                };
                if current.is_expired() {
                    return Ok(Step::Unchanged);
                }
                let mut soa_to = current.soa_record();
                set_soa_serial(&mut soa_to, self.policy.next(current.serial(), now));
                let rekeyed = signer
                    .rekey(current, soa_to, now)
                    .map_err(StageError::Sign)?;
                return Ok(match rekeyed {
                    Some((next, cs)) => {
                        *version = Arc::new(next);
                        Step::Changed {
                            changes: vec![cs],
                            serial_raised: None,
                        }
                    }
                    None => Step::Unchanged,
                });
            }
            Change::Journal(list) => {
                let mut next = current.clone();
                for cs in list {
                    apply(&mut next, cs)?;
                }
                *version = next;
                return Ok(Step::Changed {
                    changes: list.to_vec(),
                    serial_raised: None,
                });
            }
            Change::Update(req) => {
                let cs =
                    update::process(current, req, self.policy, now).map_err(StageError::Update)?;
                (cs.into_iter().collect::<Vec<_>>(), None)
            }
            Change::Difference(target) => {
                // A signed zone's group stage has no signer but leaves the
                // signer's records out too (the group is signed after).
                let signed = self.signer.is_some() || self.signed_zone;
                match difference(current, target, self.policy, now, signed) {
                    Some((cs, raised)) => (vec![cs], raised),
                    None => (Vec::new(), None),
                }
            }
            Change::Changesets(list) => {
                if current.is_expired() {
                    return Err(StageError::NoContents);
                }
                match &self.signer {
                    // The primary's changes as one, in our serials.
                    Some(_) => match Changeset::merge(list.to_vec()) {
                        Some(cs) => (vec![self.own_serials(current, cs, now)], None),
                        None => (Vec::new(), None),
                    },
                    None => (list.to_vec(), None),
                }
            }
            Change::Transfer(target) => {
                if self.signer.is_none() {
                    return self.run_mut(version, Change::Replace(target), now);
                }
                let cs = match difference(current, &target, self.policy, now, true) {
                    Some((cs, _)) => cs,
                    // Nothing but the primary's serial moved: still a new
                    // version here, so that the serial it stands for is kept.
                    None => Changeset {
                        soa_from: current.soa_record(),
                        soa_to: target.soa_record(),
                        removed: Vec::new(),
                        added: Vec::new(),
                    },
                };
                (vec![self.own_serials(current, cs, now)], None)
            }
        };
        if changes.is_empty() {
            return Ok(Step::Unchanged);
        }
        // One changeset is applied whole or not at all; more, or a check
        // after, may fail half-way: the version before is kept for that.
        let validate = self.validate && self.signer.is_none();
        let before = (validate || changes.len() > 1).then(|| version.clone());
        let made = self.sign_all(version, changes, validate, now);
        if made.is_err() {
            if let Some(before) = before {
                *version = before;
            }
        }
        Ok(Step::Changed {
            changes: made?,
            serial_raised,
        })
    }

    /// The signing step of each changeset in turn (see [`Stage::sign`]),
    /// then the validation step when `validate`.
    fn sign_all(
        &self,
        version: &mut Arc<Zone>,
        changes: Vec<Changeset>,
        validate: bool,
        now: u64,
    ) -> Result<Vec<Changeset>, StageError> {
        let mut signed = Vec::with_capacity(changes.len());
        for cs in changes {
            signed.push(self.sign(version, cs, now)?);
        }
        if validate {
            let touched: Vec<lode_wire::Name> = signed
                .iter()
                .flat_map(|cs| cs.removed.iter().chain(&cs.added))
                .map(|r| r.owner.clone())
                .collect();
            self.check(version, Some(&touched), now)?;
        }
        Ok(signed)
    }

    /// The validation step (`dnssec-validation`, a zone not signed here):
    /// `version` whole, or the names in `only` and the chain.
    fn check(
        &self,
        version: &Zone,
        only: Option<&[lode_wire::Name]>,
        now: u64,
    ) -> Result<(), StageError> {
        if !self.validate || self.signer.is_some() || version.is_expired() {
            return Ok(());
        }
        lode_dnssec::validate(version, now, only).map_err(StageError::Invalid)
    }

    /// `cs` (the primary's SOAs) from the served serial to the serial
    /// policy's next: a zone signed here numbers its versions itself.
    fn own_serials(&self, current: &Zone, mut cs: Changeset, now: u64) -> Changeset {
        cs.soa_from = current.soa_record();
        set_soa_serial(&mut cs.soa_to, self.policy.next(current.serial(), now));
        cs
    }

    /// The signing step: one changeset applied, and signed when the zone
    /// is signed here; the version it leads to and the changeset as it is
    /// journaled and served.
    fn sign(
        &self,
        version: &mut Arc<Zone>,
        cs: Changeset,
        now: u64,
    ) -> Result<Changeset, StageError> {
        match &self.signer {
            None => {
                apply(version, &cs)?;
                Ok(cs)
            }
            Some(s) => match s.sign_change(version, &cs, now) {
                Ok((next, signed)) => {
                    *version = Arc::new(next);
                    Ok(signed)
                }
                Err(lode_dnssec::SignError::Apply(error)) => Err(StageError::Apply {
                    from: cs.serial_from(),
                    to: cs.serial_to(),
                    error,
                }),
                Err(e) => Err(StageError::Sign(e)),
            },
        }
    }
}

/// The changeset that turns `current` into `target` (a zone file read
/// again): every record not in both, the target's SOA — with a serial past
/// the current one by the serial policy when the file's is not newer, as
/// secondaries only follow a serial that grows (then the file's serial is
/// returned too). None when nothing differs. `signed`: the zone is signed
/// here, so its DNSSEC records (the signer's) are left out on both sides.
pub fn difference(
    current: &Zone,
    target: &Zone,
    policy: SerialPolicy,
    now: u64,
    signed: bool,
) -> Option<(Changeset, Option<u32>)> {
    type Id = (Box<[u8]>, u16, Box<[u8]>, u32);
    let index = |z: &Zone| -> Vec<(Id, Record)> {
        let mut v: Vec<(Id, Record)> = z
            .records()
            .filter(|r| r.rtype != Rtype::SOA && !(signed && is_signer_type(r.rtype)))
            .map(|r| ((r.owner.key(), r.rtype.0, r.rdata.clone(), r.ttl), r))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    let (old, new) = (index(current), index(target));
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        match (old.get(i), new.get(j)) {
            (Some(a), Some(b)) if a.0 == b.0 => {
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) if a.0 < b.0 => {
                removed.push(a.1.clone());
                i += 1;
            }
            (Some(_), Some(b)) | (None, Some(b)) => {
                added.push(b.1.clone());
                j += 1;
            }
            (Some(a), None) => {
                removed.push(a.1.clone());
                i += 1;
            }
            (None, None) => break,
        }
    }
    let soa_of = |z: &Zone| z.records().find(|r| r.rtype == Rtype::SOA);
    let (soa_from, mut soa_to) = (soa_of(current)?, soa_of(target)?);
    let newer = lode_wire::serial::serial_lt(current.serial(), target.serial());
    if removed.is_empty() && added.is_empty() && (soa_from == soa_to || !newer) {
        return None;
    }
    let mut raised = None;
    if !newer {
        set_soa_serial(&mut soa_to, policy.next(current.serial(), now));
        raised = Some(target.serial());
    }
    Some((
        Changeset {
            soa_from,
            soa_to,
            removed,
            added,
        },
        raised,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lode_zonedb::ZoneBuilder;

    fn zone(text: &str) -> Arc<Zone> {
        let origin: lode_wire::Name = "example.".parse().unwrap();
        let parsed = lode_zonefile::parse_str(text, "test", &origin).expect("zone text");
        let mut b = ZoneBuilder::new(origin);
        for r in parsed.records {
            b.add(r, 0);
        }
        Arc::new(b.build().expect("zone").0)
    }

    const BASE: &str = "$TTL 300\n@ SOA ns host 10 3600 600 86400 300\n@ NS ns\nns A 192.0.2.1\n";

    #[test]
    fn a_file_difference_is_a_changeset_that_replays_to_the_file() {
        let current = zone(BASE);
        let file = zone(&format!("{BASE}www A 192.0.2.80\n").replace(" 10 ", " 11 "));
        let Staged::Changed {
            version,
            changes,
            serial_raised,
        } = Stage::default()
            .run(&current, Change::Difference(&file), 0)
            .unwrap()
        else {
            panic!("a change");
        };
        assert_eq!(serial_raised, None);
        assert_eq!(changes.len(), 1);
        assert_eq!((changes[0].serial_from(), changes[0].serial_to()), (10, 11));
        assert_eq!(changes[0].added.len(), 1);
        // Replayed (as the journal would be at start), the same version.
        let Staged::Changed { version: again, .. } = Stage::default()
            .run(&current, Change::Changesets(&changes), 0)
            .unwrap()
        else {
            panic!("a change");
        };
        let a: Vec<_> = version.records().collect();
        let b: Vec<_> = again.records().collect();
        assert_eq!(a, b);
        // The same file again: nothing to do.
        assert!(matches!(
            Stage::default().run(&version, Change::Difference(&file), 0),
            Ok(Staged::Unchanged)
        ));
    }

    #[test]
    fn a_working_version_advances_in_place_and_stays_on_a_refusal() {
        let published = zone(BASE);
        let mut working = published.clone();
        let stage = Stage::default();
        let mut journal = Vec::new();
        for (serial, name) in [(11, "a"), (12, "b")] {
            let file = zone(
                &format!("{BASE}{name} A 192.0.2.9\n").replace(" 10 ", &format!(" {serial} ")),
            );
            let Ok(Step::Changed { changes, .. }) =
                stage.run_mut(&mut working, Change::Difference(&file), 0)
            else {
                panic!("a change");
            };
            journal.extend(changes);
        }
        assert_eq!(working.serial(), 12);
        // The published version was not touched by the working one.
        assert_eq!(published.serial(), 10);
        assert_eq!(published.records().count(), 3);
        // A change that does not apply (a changeset from serial 10 again)
        // leaves the working version as it was.
        let before: Vec<_> = working.records().collect();
        let stale = journal[..1].to_vec();
        assert!(stage
            .run_mut(&mut working, Change::Changesets(&stale), 0)
            .is_err());
        assert_eq!(working.records().collect::<Vec<_>>(), before);
        // Two changesets, the second not applying: none of them stays.
        let mut two = journal.clone();
        two[1].soa_from = two[0].soa_from.clone();
        let mut from_published = published.clone();
        assert!(stage
            .run_mut(&mut from_published, Change::Changesets(&two), 0)
            .is_err());
        assert_eq!(from_published.serial(), 10);
        // The journal replays to the working version.
        let Ok(Staged::Changed { version, .. }) =
            stage.run(&published, Change::Changesets(&journal), 0)
        else {
            panic!("replayed");
        };
        assert_eq!(version.records().collect::<Vec<_>>(), before);
    }

    /// A signed zone's file edited and read again while updates are
    /// grouped: the group's stage (`Stage::unsigned`) leaves the signer's
    /// records out of the difference as the signing stage does, and the
    /// group is signed after.
    #[test]
    fn a_signed_zones_file_difference_in_a_group_leaves_the_signers_records() {
        use lode_dnssec::{Algorithm, Policy, SigningKey, KSK_FLAGS, ZSK_FLAGS};
        let origin: lode_wire::Name = "example.".parse().unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let keys = [KSK_FLAGS, ZSK_FLAGS]
            .map(|f| SigningKey::generate(&origin, Algorithm::EcdsaP256, f, now).unwrap());
        let signer = Signer::new(&origin, Vec::from(keys), Policy::default()).unwrap();
        let stage = Stage::signed(SerialPolicy::default(), Arc::new(signer));
        let file = zone(BASE);
        let signed = stage.prepare(file.clone(), &file, now).unwrap();
        assert!(signed.records().any(|r| is_signer_type(r.rtype)));
        // The operator's file, one name more.
        let edited = zone(&format!("{BASE}www A 192.0.2.80\n").replace(" 10 ", " 11 "));
        let mut working = signed.clone();
        let Ok(Step::Changed { changes, .. }) =
            stage
                .unsigned()
                .run_mut(&mut working, Change::Difference(&edited), now)
        else {
            panic!("a change");
        };
        let removed: Vec<_> = changes.iter().flat_map(|c| &c.removed).collect();
        let added: Vec<_> = changes.iter().flat_map(|c| &c.added).collect();
        assert!(removed.is_empty(), "{removed:?}");
        assert_eq!(added.len(), 1, "{added:?}");
        let (version, _) = stage.sign_group(&signed, changes, now).unwrap();
        let www = |r: &Record| r.owner.to_string() == "www.example.";
        assert!(version
            .records()
            .any(|r| www(&r) && r.rtype == Rtype::RRSIG));
        assert!(version.records().any(|r| r.rtype == Rtype::DNSKEY));
    }

    #[test]
    fn a_file_whose_serial_is_not_newer_gets_the_policys_next() {
        let current = zone(BASE);
        let file = zone(&format!("{BASE}www A 192.0.2.80\n"));
        let Ok(Staged::Changed {
            changes,
            serial_raised,
            ..
        }) = Stage::default().run(&current, Change::Difference(&file), 0)
        else {
            panic!("a change");
        };
        assert_eq!(serial_raised, Some(10));
        assert_eq!(changes[0].serial_to(), 11);
    }

    #[test]
    fn changesets_that_do_not_follow_are_refused_whole() {
        let current = zone(BASE);
        let file = zone(&format!("{BASE}www A 192.0.2.80\n").replace(" 10 ", " 11 "));
        let Some((cs, _)) = difference(&current, &file, SerialPolicy::default(), 0, false) else {
            panic!("a difference");
        };
        let Staged::Changed { version, .. } = Stage::default()
            .run(&current, Change::Changesets(std::slice::from_ref(&cs)), 0)
            .unwrap()
        else {
            panic!("a change");
        };
        // The same changeset again does not follow serial 11.
        let err = Stage::default()
            .run(&version, Change::Changesets(&[cs]), 0)
            .unwrap_err();
        assert!(
            matches!(
                err,
                StageError::Apply {
                    from: 10,
                    to: 11,
                    ..
                }
            ),
            "{err}"
        );
    }
}
