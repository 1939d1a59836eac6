//! The ZONEMD step of a sealed transaction (`zonemd-generate`), as Knot
//! makes it (`zone_update_add_digest`, `knot_zone_sign_apex_rr`):
//!
//! ```text
//!  nothing changed (marks, a journal replayed) ─▶ done; Change::Digest: done if the apex is as asked
//!  nothing changed, or a zone file's own serial (a zone not signed here) ─▶ the serial policy's next
//!  signed here, no ZONEMD yet ─▶ a placeholder signed in (the chain lists ZONEMD, RFC 8976 §3.1)
//!  the digest of the version as it now is (signatures made) ─▶ the apex ZONEMD replaced,
//!  signed alone where the zone is signed here ─▶ folded into the transaction's last changeset
//! ```
//!
//! `remove` takes the apex ZONEMD (and its signatures) out the same way.
//! The ZONEMD's serial is the SOA's, its TTL the SOA's.

use std::sync::Arc;

use lode_wire::Record;
use lode_zonedb::{Changeset, Zone};

use super::{apply, StageError, Txn};
use crate::zonemd::{self, Generate};

impl Txn<'_> {
    /// The ZONEMD step (see the module note).
    pub(super) fn digest(&mut self) -> Result<(), StageError> {
        let generate = self.stage.zonemd;
        if generate == Generate::None || self.settled.is_expired() {
            return Ok(());
        }
        // No change of this transaction's own (none, a mark, the journal's
        // made by this step already): nothing, unless the step is asked for
        // (Change::Digest), and then only when the ZONEMD is not as asked.
        let settled_only = !self.replaced && self.changes.len() == self.trusted;
        if settled_only {
            // (The check is a whole digest: only when asked, never for a mark.)
            let fine = || {
                zonemd::in_place(&self.settled, generate)
                    && (generate == Generate::Remove || zonemd::verify(&self.settled).is_ok())
            };
            if !self.asked || fine() {
                return Ok(());
            }
        }
        if settled_only || (self.from_file && self.stage.signer.is_none()) {
            self.next_serial()?;
        }
        match generate.algorithm() {
            Some(alg) => self.put(alg),
            None => self.remove(),
        }
    }

    /// A changeset of its own to the serial policy's next serial.
    fn next_serial(&mut self) -> Result<(), StageError> {
        let cs = Changeset {
            soa_from: self.settled.soa_record(),
            soa_to: self.next_soa(),
            removed: Vec::new(),
            added: Vec::new(),
        };
        let (next, cs) = self.changed(cs)?;
        self.settled = next;
        self.working = self.settled.clone();
        if !self.replaced {
            self.changes.push(cs);
        }
        Ok(())
    }

    /// The apex ZONEMD made for `alg` and put in place of the old one.
    fn put(&mut self, alg: u8) -> Result<(), StageError> {
        let signer = self.stage.signer.clone();
        let len = zonemd::digest_len(alg).unwrap_or(0);
        if let Some(signer) = &signer {
            if self.settled.apex_rrset(lode_wire::Rtype::ZONEMD).is_none() {
                let placeholder =
                    self.apex_record(zonemd::rdata(self.settled.serial(), alg, &vec![0; len]));
                let cs = self.same_serial(Vec::new(), vec![placeholder]);
                let (next, signed) = signer
                    .sign_change(&self.settled, &cs, self.now)
                    .map_err(StageError::Sign)?;
                self.fold(Arc::new(next), signed);
            }
        }
        let Some(record) = zonemd::record(&self.settled, alg) else {
            return Ok(());
        };
        let old = zonemd::apex_records(&self.settled);
        let kept = old
            .iter()
            .filter(|r| r.rtype == lode_wire::Rtype::ZONEMD)
            .eq(std::iter::once(&record));
        let signed_already = old.len() > 1;
        if kept && (signer.is_none() || signed_already) {
            return Ok(());
        }
        let mut added = vec![record.clone()];
        if let Some(signer) = &signer {
            added.extend(
                signer
                    .sign_records(&[record], self.now)
                    .map_err(StageError::Sign)?,
            );
        }
        let cs = self.same_serial(old, added);
        let mut next = self.settled.clone();
        apply(&mut next, &cs)?;
        self.fold(next, cs);
        Ok(())
    }

    /// The apex ZONEMD and its signatures taken out (`remove`).
    fn remove(&mut self) -> Result<(), StageError> {
        let old = zonemd::apex_records(&self.settled);
        if old.is_empty() {
            return Ok(());
        }
        // A signed zone: the signer takes the signatures out and mends the chain.
        let (next, cs) = self.changed(self.same_serial(old, Vec::new()))?;
        self.fold(next, cs);
        Ok(())
    }

    /// `cs` applied to the settled version, signed where the zone is
    /// signed here: the version it leads to and the changeset as made.
    fn changed(&self, cs: Changeset) -> Result<(Arc<Zone>, Changeset), StageError> {
        match &self.stage.signer {
            Some(signer) => {
                let (next, signed) = signer
                    .sign_change(&self.settled, &cs, self.now)
                    .map_err(StageError::Sign)?;
                Ok((Arc::new(next), signed))
            }
            None => {
                let mut next = self.settled.clone();
                apply(&mut next, &cs)?;
                Ok((next, cs))
            }
        }
    }

    /// An apex ZONEMD record with `rdata` (the SOA's TTL).
    fn apex_record(&self, rdata: Box<[u8]>) -> Record {
        Record {
            owner: self.settled.origin().to_name(),
            class: self.settled.class(),
            rtype: lode_wire::Rtype::ZONEMD,
            ttl: self.settled.soa().ttl(),
            rdata,
        }
    }

    /// A changeset that keeps the serial.
    fn same_serial(&self, removed: Vec<Record>, added: Vec<Record>) -> Changeset {
        let soa = self.settled.soa_record();
        Changeset {
            soa_from: soa.clone(),
            soa_to: soa,
            removed,
            added,
        }
    }

    /// The version is `next`, `cs` (which keeps the serial) folded into
    /// the transaction's last changeset (a whole new version: no history).
    fn fold(&mut self, next: Arc<Zone>, cs: Changeset) {
        self.settled = next;
        self.working = self.settled.clone();
        if self.replaced {
            return;
        }
        let merged = match self.changes.pop() {
            Some(last) => Changeset::merge(vec![last, cs]),
            None => Some(cs),
        };
        self.changes.extend(merged);
    }
}

#[cfg(test)]
mod tests;
