//! The zone-update stage: every change to a zone passes here, whatever its
//! source (as Knot's `zone-update`).
//!
//! ```text
//!  Stage::begin(&published, now) ─▶ Txn ─ apply(Change)* ─ seal() ─▶ Sealed
//!                                        (one refused       (next version, its base,
//!                                         leaves the rest)   and what to journal)
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
//!  Change::Digest               the ZONEMD brought to what zonemd-generate asks
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
//! Sealing always runs the same steps in the same order: the pending
//! changes signed as one where the zone is signed here (with the chain
//! mended and the SOA signed), then the validation step where it is
//! configured, then the ZONEMD step where `zonemd-generate` is set (see
//! `digest.rs`: the digest of the version as signed, the ZONEMD then
//! signed alone). `zonemd-verify` checks what comes from outside (a zone
//! file, a transfer in) as it is applied. No I/O and no clock: `now` is passed in. What is around it —
//! queueing, the one commit (state, journal, publication, NOTIFY, replies)
//! — is the caller's. The changesets sealed are exactly what the version
//! differs by from the base, in order: journaled, they replay to the same
//! version.

use std::fmt;
use std::sync::Arc;

use lode_dnssec::{is_signer_type, Signer};
use lode_wire::{Record, Rtype};
use lode_zonedb::{set_soa_serial, ApplyError, Changeset, Zone};

use crate::update::{self, SerialPolicy, UpdateError, UpdateRequest};
use crate::zonemd::{self, Generate, VerifyError};

mod digest;

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
    /// The same records laid out anew (a compaction's result, with the
    /// changes made meanwhile): published without a serial or history
    /// of its own. Refused when its serial is not the version's.
    Relaid(Arc<Zone>),
    /// The version marked expired (a secondary past its expire timer, or
    /// not expired again): queries get SERVFAIL while it is.
    Expired(bool),
    /// When a secondary's version expires without a refresh (Unix
    /// seconds), for the EDNS EXPIRE option.
    ExpiresAt(Option<u64>),
    /// Nothing but the ZONEMD step (a first load, `zonemd-generate` set
    /// by a reload): the apex's ZONEMD checked whole and made again, with
    /// the next serial, when it is not what the setting asks.
    Digest,
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
            Change::Relaid(_) => "a compaction",
            Change::Expired(_) => "the expire timer",
            Change::ExpiresAt(_) => "the expire time",
            Change::Digest => "the zone digest",
        }
    }
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
    /// The zone as given (a zone file, a transfer in) fails its ZONEMD
    /// check (`zonemd-verify`).
    Digest(VerifyError),
    /// A version laid out anew is not the one it was made from (another
    /// serial): changes came after it.
    Stale {
        /// The relaid version's serial.
        relaid: u32,
        /// The transaction's.
        current: u32,
    },
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
            StageError::Digest(e) => write!(f, "ZONEMD verification failed: {e}"),
            StageError::Stale { relaid, current } => write!(
                f,
                "a version laid out anew at serial {relaid} while the zone is at {current}"
            ),
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
    /// Knot's `dnssec-validation`: each new version of a zone signed
    /// elsewhere is checked (`lode_dnssec::validate`) before it is
    /// returned — whole after a replacement, the names a change touched
    /// (and the chain whole) after a change; a version that fails is refused.
    pub validate: bool,
    /// Knot's `zonemd-generate`: what the apex ZONEMD of every new version is.
    pub zonemd: Generate,
    /// Knot's `zonemd-verify`: a zone file read, a zone transferred in
    /// (whole, or a zone not signed here after its changes) must carry a
    /// ZONEMD that verifies; one that does not is refused.
    pub zonemd_verify: bool,
}

impl Stage {
    /// The stage of an unsigned zone with this serial policy.
    pub fn new(policy: SerialPolicy) -> Stage {
        Stage {
            policy,
            ..Stage::default()
        }
    }

    /// The stage of a zone signed by `signer`.
    pub fn signed(policy: SerialPolicy, signer: Arc<Signer>) -> Stage {
        Stage {
            policy,
            signer: Some(signer),
            ..Stage::default()
        }
    }

    /// The same stage for a zone no longer signed here (a reload turned
    /// signing off): its DNSSEC records are then records like any other.
    pub fn without_signing(&self) -> Stage {
        Stage {
            signer: None,
            ..self.clone()
        }
    }

    /// Begins a transaction over `version` (the published one), at `now`.
    pub fn begin(&self, version: &Arc<Zone>, now: u64) -> Txn<'_> {
        Txn {
            stage: self,
            now,
            base: version.clone(),
            settled: version.clone(),
            working: version.clone(),
            pending: Vec::new(),
            changes: Vec::new(),
            replaced: false,
            trusted: 0,
            from_file: false,
            asked: false,
        }
    }

    /// One change in a transaction of its own: `begin`, `apply`, `seal`.
    pub fn run(
        &self,
        current: &Arc<Zone>,
        change: Change<'_>,
        now: u64,
    ) -> Result<Sealed, StageError> {
        let mut txn = self.begin(current, now);
        txn.apply(change)?;
        txn.seal()
    }

    /// A whole new version of the zone as it is served: signed whole when
    /// the zone is signed here and `zone` is not signed by its keys (with
    /// signatures not yet due); `zone` as it is otherwise. When it is
    /// signed here and its serial is not past the served version's
    /// (`current`), it gets the serial policy's next: secondaries that
    /// hold the unsigned version at that serial must see a newer one.
    fn prepare(&self, zone: Arc<Zone>, current: &Zone, now: u64) -> Result<Arc<Zone>, StageError> {
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

    /// `zone` as given from outside checked by its ZONEMD where
    /// `zonemd-verify` is set.
    fn verified(&self, zone: &Zone) -> Result<(), StageError> {
        if !self.zonemd_verify || zone.is_expired() {
            return Ok(());
        }
        zonemd::verify(zone).map_err(StageError::Digest)
    }

    /// `cs` (the primary's SOAs) from the served serial to the serial
    /// policy's next: a zone signed here numbers its versions itself.
    fn own_serials(&self, current: &Zone, mut cs: Changeset, now: u64) -> Changeset {
        cs.soa_from = current.soa_record();
        set_soa_serial(&mut cs.soa_to, self.policy.next(current.serial(), now));
        cs
    }
}

/// What one change did in a transaction (none: nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    /// Records it removed (before signing).
    pub removed: u64,
    /// Records it added (before signing; a whole new version: all).
    pub added: u64,
    /// The serial before it.
    pub from: u32,
    /// The serial after it.
    pub to: u32,
    /// A zone file whose serial was not newer than the served one: the
    /// file's serial (the change got the serial policy's next).
    pub serial_raised: Option<u32>,
    /// A whole new version: the history before it no longer applies.
    pub replaced: bool,
}

/// One transaction over a published version ([`Stage::begin`]): changes
/// applied in order ([`Txn::apply`]; one refused leaves the others), then
/// sealed ([`Txn::seal`]) — the same steps whatever the changes were.
///
/// A zone signed here: the changes of UPDATEs, zone-file differences and
/// transfers in are applied unsigned and signed together, as one
/// changeset (the SOA and every NSEC touched twice signed once, as Knot
/// signs a batch), when the transaction is sealed or when a change that
/// needs the signed version comes (re-signing, a key event, the journal).
#[derive(Debug)]
pub struct Txn<'s> {
    stage: &'s Stage,
    now: u64,
    /// The version the transaction began from.
    base: Arc<Zone>,
    /// `base` and the settled changes (signed where the zone is signed).
    settled: Arc<Zone>,
    /// `settled` and the pending changes: what the next change sees (a
    /// zone not signed here: ahead of `settled` until `settle`).
    working: Arc<Zone>,
    /// Changes since `settled`, not yet signed (a zone signed here only).
    pending: Vec<Changeset>,
    /// The settled changesets, oldest first (to journal).
    changes: Vec<Changeset>,
    /// A whole new version came: the history starts afresh.
    replaced: bool,
    /// The first changes are the journal's, validated when they were
    /// made: the validation step leaves them out.
    trusted: usize,
    /// A zone file's change with the file's own serial (Knot then raises
    /// it when it makes the ZONEMD of a zone not signed here).
    from_file: bool,
    /// [`Change::Digest`] came: the ZONEMD is checked whole.
    asked: bool,
}

impl Txn<'_> {
    /// The version the next change sees (unsigned changes applied).
    pub fn version(&self) -> &Arc<Zone> {
        &self.working
    }

    /// True when nothing has changed yet.
    pub fn is_empty(&self) -> bool {
        !self.replaced && self.changes.is_empty() && self.pending.is_empty()
    }

    /// Applies one change to the version the previous ones led to. On
    /// error the transaction is as it was before this change.
    pub fn apply(&mut self, change: Change<'_>) -> Result<Option<Applied>, StageError> {
        let stage = self.stage;
        let now = self.now;
        let signed = stage.signer.is_some();
        let from = self.working.serial();
        let mut verify_after = false;
        let (made, serial_raised) = match change {
            Change::Replace(zone) => return self.replace(zone).map(Some),
            Change::Transfer(zone) if !signed => return self.replace(zone).map(Some),
            Change::Digest => {
                self.settle()?;
                self.asked = true;
                return Ok(None);
            }
            Change::Resign | Change::Refresh(_) | Change::Rekey if !signed => return Ok(None),
            Change::Resign => {
                if self.working.is_expired() {
                    return Err(StageError::NoContents);
                }
                self.settle()?;
                let signer = stage.signer.as_ref().expect("signed");
                let next = stage.policy.next(self.settled.serial(), now);
                let zone = signer
                    .sign_zone(&self.settled, Some(next), now)
                    .map_err(StageError::Sign)?;
                return self.whole(Arc::new(zone), from).map(Some);
            }
            Change::Refresh(owners) => {
                if self.working.is_expired() || owners.is_empty() {
                    return Ok(None);
                }
                self.settle()?;
                let signer = stage.signer.as_ref().expect("signed");
                let (next, cs) = signer
                    .refresh(&self.settled, owners, self.next_soa(), now)
                    .map_err(StageError::Sign)?;
                return Ok(Some(self.settle_signed(Arc::new(next), cs)));
            }
            Change::Rekey => {
                if self.working.is_expired() {
                    return Ok(None);
                }
                self.settle()?;
                let signer = stage.signer.as_ref().expect("signed");
                let rekeyed = signer
                    .rekey(&self.settled, self.next_soa(), now)
                    .map_err(StageError::Sign)?;
                return Ok(rekeyed.map(|(next, cs)| self.settle_signed(Arc::new(next), cs)));
            }
            Change::Relaid(zone) => {
                self.settle()?;
                if zone.serial() != self.settled.serial()
                    || zone.record_count() != self.settled.record_count()
                {
                    return Err(StageError::Stale {
                        relaid: zone.serial(),
                        current: self.settled.serial(),
                    });
                }
                let marked = zone
                    .with_expired(self.settled.is_expired())
                    .with_expire_at(self.settled.expire_at());
                self.mark(marked);
                return Ok(None);
            }
            Change::Expired(expired) => {
                return self
                    .remark(|z| (z.is_expired() != expired).then(|| z.with_expired(expired)))
            }
            Change::ExpiresAt(at) => {
                return self.remark(|z| (z.expire_at() != at).then(|| z.with_expire_at(at)))
            }
            Change::Journal(list) => {
                // Made by this stage: signed already, applied as it is.
                self.settle()?;
                let mut next = self.settled.clone();
                for cs in list {
                    apply(&mut next, cs)?;
                }
                let applied = counted(list, from, next.serial(), None);
                let all_trusted = self.trusted == self.changes.len();
                self.changes.extend_from_slice(list);
                if all_trusted {
                    self.trusted = self.changes.len();
                }
                self.settled = next.clone();
                self.working = next;
                return Ok(applied);
            }
            Change::Update(req) => {
                let cs = update::process(&self.working, req, stage.policy, now)
                    .map_err(StageError::Update)?;
                // As Knot: with zonemd-verify, what an update leaves must
                // carry a ZONEMD that verifies, checked before signing and
                // before zonemd-generate makes the next one.
                verify_after = stage.zonemd_verify && cs.is_some();
                (cs.into_iter().collect::<Vec<_>>(), None)
            }
            Change::Difference(target) => {
                stage.verified(target)?;
                let ours = stage.zonemd != Generate::None;
                match difference(&self.working, target, stage.policy, now, signed, ours) {
                    Some((cs, raised)) => {
                        self.from_file |= raised.is_none();
                        (vec![cs], raised)
                    }
                    None => (Vec::new(), None),
                }
            }
            Change::Changesets(list) => {
                if self.working.is_expired() {
                    return Err(StageError::NoContents);
                }
                if signed {
                    // The primary's changes as one, in our serials.
                    match Changeset::merge(list.to_vec()) {
                        Some(cs) => (vec![stage.own_serials(&self.working, cs, now)], None),
                        None => (Vec::new(), None),
                    }
                } else {
                    verify_after = stage.zonemd_verify;
                    (list.to_vec(), None)
                }
            }
            Change::Transfer(target) => {
                stage.verified(&target)?;
                let ours = stage.zonemd != Generate::None;
                let cs = match difference(&self.working, &target, stage.policy, now, true, ours) {
                    Some((cs, _)) => cs,
                    // Nothing but the primary's serial moved: still a new
                    // version here, so that the serial it stands for is kept.
                    None => Changeset {
                        soa_from: self.working.soa_record(),
                        soa_to: target.soa_record(),
                        removed: Vec::new(),
                        added: Vec::new(),
                    },
                };
                (vec![stage.own_serials(&self.working, cs, now)], None)
            }
        };
        if made.is_empty() {
            return Ok(None);
        }
        // One changeset is applied whole or not at all; more may fail
        // half-way (or the version they lead to fail its ZONEMD check):
        // the version before is kept for that.
        let before = (made.len() > 1 || verify_after).then(|| self.working.clone());
        for cs in &made {
            if let Err(e) = apply(&mut self.working, cs) {
                if let Some(before) = before {
                    self.working = before;
                }
                return Err(e);
            }
        }
        if verify_after {
            if let Err(e) = stage.verified(&self.working) {
                if let Some(before) = before {
                    self.working = before;
                }
                return Err(e);
            }
        }
        let applied = counted(&made, from, self.working.serial(), serial_raised);
        if signed {
            self.pending.extend(made);
        } else {
            // Settled as they are; `settled` catches up at `settle` (a
            // second reference to the working version now would make the
            // next change copy every part of the delta it touches again).
            self.changes.extend(made);
        }
        Ok(applied)
    }

    /// Seals the transaction: the pending changes signed where the zone
    /// is signed here, then the validation step where it is configured
    /// (`dnssec-validation`: the whole version after a replacement, the
    /// names touched and the chain after changes), then the ZONEMD step
    /// (`zonemd-generate`). Always these steps, in this order, whatever the
    /// changes were.
    pub fn seal(mut self) -> Result<Sealed, StageError> {
        self.settle()?;
        let stage = self.stage;
        if self.replaced {
            stage.check(&self.settled, None, self.now)?;
        } else if self.changes.len() > self.trusted && stage.validate && stage.signer.is_none() {
            let touched: Vec<lode_wire::Name> = self.changes[self.trusted..]
                .iter()
                .flat_map(|cs| cs.removed.iter().chain(&cs.added))
                .map(|r| r.owner.clone())
                .collect();
            stage.check(&self.settled, Some(&touched), self.now)?;
        }
        self.digest()?;
        let history = if self.replaced {
            History::Restarts
        } else if self.changes.is_empty() {
            History::Unchanged
        } else {
            History::Continues(self.changes)
        };
        Ok(Sealed {
            base: self.base,
            version: self.settled,
            history,
        })
    }

    /// The settled version marked by `f` (None: already so).
    fn remark(
        &mut self,
        f: impl FnOnce(&Zone) -> Option<Zone>,
    ) -> Result<Option<Applied>, StageError> {
        self.settle()?;
        if let Some(marked) = f(&self.settled) {
            self.mark(marked);
        }
        Ok(None)
    }

    /// The settled version replaced by `zone`, the same records (laid out
    /// anew, or marked): no changeset, no serial of its own.
    fn mark(&mut self, zone: Zone) {
        self.settled = Arc::new(zone);
        self.working = self.settled.clone();
    }

    /// The SOA of the next version by the serial policy.
    fn next_soa(&self) -> Record {
        let mut soa = self.settled.soa_record();
        set_soa_serial(
            &mut soa,
            self.stage.policy.next(self.settled.serial(), self.now),
        );
        soa
    }

    /// Signs the pending changes as one (a zone signed here); a zone not
    /// signed here: the settled version is the working one.
    fn settle(&mut self) -> Result<(), StageError> {
        let Some(signer) = &self.stage.signer else {
            if !Arc::ptr_eq(&self.settled, &self.working) {
                self.settled = self.working.clone();
            }
            return Ok(());
        };
        let Some(merged) = Changeset::merge(std::mem::take(&mut self.pending)) else {
            self.working = self.settled.clone();
            return Ok(());
        };
        match signer.sign_change(&self.settled, &merged, self.now) {
            Ok((next, signed)) => {
                self.settled = Arc::new(next);
                self.working = self.settled.clone();
                self.changes.push(signed);
                Ok(())
            }
            Err(e) => {
                self.working = self.settled.clone();
                Err(match e {
                    lode_dnssec::SignError::Apply(error) => StageError::Apply {
                        from: merged.serial_from(),
                        to: merged.serial_to(),
                        error,
                    },
                    e => StageError::Sign(e),
                })
            }
        }
    }

    /// A changeset the signer made from the settled version.
    fn settle_signed(&mut self, next: Arc<Zone>, cs: Changeset) -> Applied {
        let applied = Applied {
            removed: cs.removed.len() as u64,
            added: cs.added.len() as u64,
            from: cs.serial_from(),
            to: cs.serial_to(),
            serial_raised: None,
            replaced: false,
        };
        self.settled = next;
        self.working = self.settled.clone();
        self.changes.push(cs);
        applied
    }

    /// A whole new version (AXFR in): checked by its ZONEMD where
    /// `zonemd-verify` is set, signed whole here when it is not yet.
    fn replace(&mut self, zone: Arc<Zone>) -> Result<Applied, StageError> {
        self.stage.verified(&zone)?;
        let from = self.working.serial();
        let zone = self.stage.prepare(zone, &self.working, self.now)?;
        self.whole(zone, from)
    }

    /// The transaction's version is `zone` now, its history restarts.
    fn whole(&mut self, zone: Arc<Zone>, from: u32) -> Result<Applied, StageError> {
        let applied = Applied {
            removed: 0,
            added: zone.record_count(),
            from,
            to: zone.serial(),
            serial_raised: None,
            replaced: true,
        };
        self.pending.clear();
        self.changes.clear();
        self.trusted = 0;
        self.settled = zone;
        self.working = self.settled.clone();
        self.replaced = true;
        Ok(applied)
    }
}

/// What `changes` did, as an [`Applied`] (none when they are empty).
fn counted(
    changes: &[Changeset],
    from: u32,
    to: u32,
    serial_raised: Option<u32>,
) -> Option<Applied> {
    if changes.is_empty() {
        return None;
    }
    let (removed, added) = changes.iter().fold((0, 0), |(r, a), cs| {
        (r + cs.removed.len() as u64, a + cs.added.len() as u64)
    });
    Some(Applied {
        removed,
        added,
        from,
        to,
        serial_raised,
        replaced: false,
    })
}

/// How a sealed transaction leaves the zone's history.
#[derive(Debug)]
pub enum History {
    /// No records changed (the serial is kept; the version may be the
    /// same records laid out anew, or marked: see [`Sealed::is_unchanged`]).
    Unchanged,
    /// The history continues with these changesets (oldest first; each
    /// starts at the serial the previous one ended at): to journal.
    Continues(Vec<Changeset>),
    /// A whole new version: the history before it no longer applies.
    Restarts,
}

/// A sealed transaction: the version to publish and what the commit
/// journals first. The changesets are exactly what the version differs by
/// from the base, in order: journaled, they replay to the same version.
#[derive(Debug)]
pub struct Sealed {
    /// The version the transaction began from.
    pub base: Arc<Zone>,
    /// The next version.
    pub version: Arc<Zone>,
    /// How it continues the base's history.
    pub history: History,
}

impl Sealed {
    /// True when nothing changed: no records, no layout, no mark (there
    /// is nothing to publish).
    pub fn is_unchanged(&self) -> bool {
        matches!(self.history, History::Unchanged) && Arc::ptr_eq(&self.base, &self.version)
    }

    /// The changesets to journal (none after a replacement).
    pub fn changes(&self) -> &[Changeset] {
        match &self.history {
            History::Continues(c) => c,
            _ => &[],
        }
    }
}

/// The changeset that turns `current` into `target` (a zone file read
/// again): every record not in both, the target's SOA — with a serial past
/// the current one by the serial policy when the file's is not newer, as
/// secondaries only follow a serial that grows (then the file's serial is
/// returned too). None when nothing differs. `signed`: the zone is signed
/// here, so its DNSSEC records (the signer's) are left out on both sides.
/// `zonemd`: the zone's ZONEMD is made here (`zonemd-generate`), so ZONEMD
/// records are left out on both sides too (Knot's `ignore_zonemd`).
pub fn difference(
    current: &Zone,
    target: &Zone,
    policy: SerialPolicy,
    now: u64,
    signed: bool,
    zonemd: bool,
) -> Option<(Changeset, Option<u32>)> {
    type Id = (Box<[u8]>, u16, Box<[u8]>, u32);
    let ours = |r: &Record| {
        (signed && is_signer_type(r.rtype))
            || (zonemd
                && (r.rtype == Rtype::ZONEMD
                    || (r.rtype == Rtype::RRSIG
                        && r.rdata.get(..2) == Some(&Rtype::ZONEMD.0.to_be_bytes()[..]))))
    };
    let index = |z: &Zone| -> Vec<(Id, Record)> {
        let mut v: Vec<(Id, Record)> = z
            .records()
            .filter(|r| r.rtype != Rtype::SOA && !ours(r))
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
mod tests;
