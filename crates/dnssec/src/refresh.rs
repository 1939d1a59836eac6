//! Signatures made again before they expire, a few names at a time.
//!
//! A signature is due `rrsig-refresh` before it expires. The writer asks
//! [`Signer::due`] for the next names with due signatures from where its last
//! batch ended (in canonical order, wrapping around), at most a batch of
//! them, and gets back when the next signature falls due; the batch goes
//! through the zone-update stage ([`Signer::refresh`]) as one change with the
//! next serial, journaled and served like any other. A zone signed whole at
//! once (all its signatures due together) is so signed again in batches
//! spread over half the refresh window, not in one burst, and after that
//! its signatures stay spread. Zones signed together are spread too: each
//! waits a delay of its own (up to a quarter of the refresh window) past
//! the time its signatures fall due.

use lode_wire::{Name, Record, Rtype};
use lode_zonedb::{Changeset, Zone};

use crate::rrsig::rrsig_info;
use crate::signer::{SignError, Signer};

/// What [`Signer::due`] found.
#[derive(Debug, Default)]
pub struct Due {
    /// Names with signatures due, in canonical order (at most the batch).
    pub owners: Vec<Name>,
    /// When the earliest signature not in `owners` falls due (Unix
    /// seconds); now when the batch was full or the round is not over
    /// (more may be due).
    pub next: Option<u64>,
    /// The earliest expiry of any signature once those of `owners` are
    /// made again (Unix seconds), when this call ended a round (none
    /// otherwise).
    pub earliest_expiry: Option<u64>,
    /// This call ended a round: every name was read since it began, and
    /// every due signature found was made again or is in `owners`.
    pub round_over: bool,
}

/// Where the search for due signatures is in its round of the zone: each
/// call to [`Signer::due`] reads a bounded number of names on from where
/// the last one stopped, so a large zone's round is spread over calls
/// instead of reading the whole zone at once.
#[derive(Debug, Default, Clone)]
pub struct Round {
    /// The last name read (the next call goes on after it).
    after: Option<Name>,
    /// Names read since the round began.
    read: usize,
    /// The earliest expiry of the signatures read this round and not due,
    /// and of those made again.
    earliest: Option<u32>,
    /// Names one call reads at least (0: [`READ_PER_CALL`]).
    per_call: usize,
}

impl Round {
    /// A round from the zone's start (after the zone was signed whole).
    pub fn restart(&mut self) {
        *self = Round {
            per_call: self.per_call,
            ..Round::default()
        };
    }

    /// A round whose calls read `per_call` names at least (tests).
    #[cfg(test)]
    pub(crate) fn reading(per_call: usize) -> Round {
        Round {
            per_call,
            ..Round::default()
        }
    }
}

/// Names read by one call at least (more when the batch is larger).
pub const READ_PER_CALL: usize = 100_000;

impl Signer {
    /// Up to `limit` names with signatures due at `now`, read on from
    /// where `round` stopped (wrapping around), at most
    /// max([`READ_PER_CALL`], 4 × `limit`) names in this call.
    pub fn due(&self, zone: &Zone, round: &mut Round, now: u64, limit: usize) -> Due {
        let per_call = match round.per_call {
            0 => READ_PER_CALL,
            n => n,
        };
        let budget = per_call.max(limit.saturating_mul(4));
        let names = zone.node_count().max(1);
        let start = round.after.as_ref().map(|n| match zone.lookup(n.as_ref()) {
            lode_zonedb::Lookup::Found(id) => id,
            lode_zonedb::Lookup::NotFound { predecessor, .. } => predecessor,
        });
        let ids: Box<dyn Iterator<Item = lode_zonedb::NodeId>> = match start {
            Some(id) => Box::new(
                zone.node_ids_after(id)
                    .chain(zone.node_ids().take_while(move |&i| i != id))
                    .chain(std::iter::once(id)),
            ),
            None => Box::new(zone.node_ids()),
        };
        let mut out = Due::default();
        let mut last = None;
        for id in ids.take(budget) {
            if round.read >= names {
                break;
            }
            let node = zone.node(id);
            let due = match node.rrset(Rtype::RRSIG) {
                Some(sigs) => self.sigs_due(sigs, now, &mut round.earliest),
                None => false,
            };
            if due {
                if out.owners.len() == limit {
                    // Read again by the next call, which begins here.
                    out.next = Some(now);
                    break;
                }
                out.owners.push(node.owner().to_name());
            }
            round.read += 1;
            last = Some(id);
        }
        // The batch's signatures, made again, expire with the new
        // validity: without them a zone whose every signature fell due in
        // one batch had no next time, and its signatures ran out.
        if !out.owners.is_empty() {
            let renewed = self.validity(now).expiration;
            round.earliest = Some(round.earliest.map_or(renewed, |e| e.min(renewed)));
        }
        if let Some(id) = last {
            round.after = Some(zone.node(id).owner().to_name());
        }
        if out.next.is_some() || round.read < names {
            out.next = Some(now);
            return out;
        }
        let earliest = round.earliest;
        round.read = 0;
        round.earliest = None;
        let refresh = u64::from(self.policy().rrsig_refresh);
        out.next =
            earliest.map(|e| (u64::from(e).saturating_sub(refresh) + self.jitter()).max(now));
        out.earliest_expiry = earliest.map(u64::from);
        out.round_over = true;
        out
    }

    /// This zone's delay of its re-signing past the time signatures fall
    /// due: up to a quarter of `rrsig-refresh`, fixed per zone name. Zones
    /// signed together (10^5 of them loaded at start) so fall due together
    /// but are signed again spread over that quarter, and stay spread.
    pub(crate) fn jitter(&self) -> u64 {
        let span = u64::from(self.policy().rrsig_refresh) / 4;
        // FNV-1a of the origin (lower case): stable across restarts.
        let hash = self
            .origin
            .as_wire()
            .iter()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        hash % (span + 1)
    }

    /// True when signatures of a node's RRSIG RRset are due at `now` (or
    /// by keys not of the moment, or missing for a key); the expiry of
    /// those not due lowers `earliest`.
    fn sigs_due(&self, sigs: lode_zonedb::RRset<'_>, now: u64, earliest: &mut Option<u32>) -> bool {
        let mut due = false;
        // Signatures per type covered, to be one by each key of the
        // moment (after a key event, those of other keys are replaced).
        let mut counts: [(Rtype, usize); 16] = [(Rtype(0), 0); 16];
        let mut types = 0;
        for info in sigs.rdatas().filter_map(rrsig_info) {
            if self.is_offline_type(info.covered) {
                // Made elsewhere: replaced by the next period of the signed
                // key response (a key event), never here.
            } else if self.is_due(info.expiration, now) {
                due = true;
            } else {
                *earliest = Some(earliest.map_or(info.expiration, |e| e.min(info.expiration)));
            }
            let want = self.signer_tags(info.covered);
            if !want.contains(&(info.key_tag, info.algorithm)) {
                due = true;
            }
            match counts[..types].iter().position(|(t, _)| *t == info.covered) {
                Some(i) => counts[i].1 += 1,
                None if types < counts.len() => {
                    counts[types] = (info.covered, 1);
                    types += 1;
                }
                None => due = true,
            }
        }
        due || counts[..types]
            .iter()
            .any(|&(t, n)| n != self.signer_tags(t).len())
    }

    /// The signatures of `owners` that are due made again, as one change
    /// to `soa_to` (the next serial), signed like any other.
    pub fn refresh(
        &self,
        zone: &Zone,
        owners: &[Name],
        soa_to: Record,
        now: u64,
    ) -> Result<(Zone, Changeset), SignError> {
        let change = Changeset {
            soa_from: zone.soa_record(),
            soa_to,
            removed: Vec::new(),
            added: Vec::new(),
        };
        self.sign_change_at(zone, &change, owners, false, now)
    }

    /// How many names a batch holds so that a zone whose signatures all
    /// fall due at once is signed again within half the refresh window,
    /// one batch every `every` seconds (at least 100 names a batch).
    pub fn batch(&self, zone: &Zone, every: u64) -> usize {
        let half = (u64::from(self.policy().rrsig_refresh) / 2).max(1);
        let names = zone.node_count() as u64;
        (names * every).div_ceil(half).max(100) as usize
    }
}
