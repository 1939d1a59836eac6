//! The key records at the apex: the DNSKEY RRset (the published keys) and
//! the CDS and CDNSKEY RRsets (RFC 7344, RFC 8078) per the policy's
//! `cds-cdnskey-publish`, and the change that brings a zone's to what the
//! keys of the moment call for ([`Signer::rekey`]), signed like any other.
//!
//! CDS and CDNSKEY records the signer did not make (of keys it does not
//! know) are left alone, as Knot leaves them.

use lode_wire::{Class, Name, Record, Rtype};
use lode_zonedb::{Changeset, Zone};

use crate::signer::{CdsPublish, SignError, Signer};
use crate::timing::Usage;
use crate::SigningKey;

/// CDNSKEY and CDS RDATA asking the parent to remove the DS (RFC 8078 §4).
const DELETE_CDNSKEY: [u8; 5] = [0, 0, 3, 0, 0];
const DELETE_CDS: [u8; 5] = [0, 0, 0, 0, 0];

impl Signer {
    /// The KSKs whose CDS and CDNSKEY the apex carries (Knot's
    /// `knot_zone_sign_get_cdnskeys`).
    fn cds_keys(&self) -> Vec<&SigningKey> {
        let policy = self.policy().cds;
        let both: Vec<(&SigningKey, &Usage)> = self.keys_and_usage().collect();
        let mut out: Vec<&SigningKey> = Vec::new();
        if matches!(
            policy,
            CdsPublish::Rollover | CdsPublish::Always | CdsPublish::DoubleDs
        ) {
            out.extend(both.iter().filter(|(_, u)| u.ready).map(|(k, _)| *k));
            let ready_alg = out.first().map(|k| k.algorithm);
            if (policy == CdsPublish::Always && out.is_empty()) || policy == CdsPublish::DoubleDs {
                let active = both.iter().filter(|(k, u)| {
                    u.active_ksk && !u.ready && ready_alg.is_none_or(|a| a == k.algorithm)
                });
                out.extend(active.map(|(k, _)| *k));
            }
        }
        out
    }

    /// True when the signer owns this CDS or CDNSKEY record of the apex:
    /// one it could have made (see [`Signer::own_cds_rdatas`]), or any
    /// with an offline KSK (the signed key response has them all).
    pub(crate) fn owns_cds(&self, rtype: Rtype, rdata: &[u8], own: &[(Rtype, Vec<u8>)]) -> bool {
        matches!(rtype, Rtype::CDS | Rtype::CDNSKEY)
            && (self.offline().is_some() || own.iter().any(|(t, d)| *t == rtype && d[..] == *rdata))
    }

    /// Every CDS and CDNSKEY RDATA this signer could have made (of any of
    /// its keys, both digest types, and the delete records).
    pub(crate) fn own_cds_rdatas(&self) -> Vec<(Rtype, Vec<u8>)> {
        let mut own = vec![
            (Rtype::CDNSKEY, DELETE_CDNSKEY.to_vec()),
            (Rtype::CDS, DELETE_CDS.to_vec()),
        ];
        for k in self.keys() {
            own.push((Rtype::CDNSKEY, k.dnskey_rdata()));
            own.push((Rtype::CDS, k.ds_rdata(2)));
            own.push((Rtype::CDS, k.ds_rdata(4)));
        }
        own
    }

    /// The key records the apex carries now: DNSKEY of each published
    /// key with the DNSKEY TTL, CDS and CDNSKEY per the policy with TTL 0
    /// (as Knot DNS publishes them: a parent's scanner sees a change at
    /// once, RFC 7344 §4 leaves the TTL open).
    pub(crate) fn key_records(&self, zone: &Zone) -> Vec<Record> {
        if let Some(p) = self.offline() {
            // Offline KSK: the signed key response's, as they are.
            return p.key_records().cloned().collect();
        }
        self.key_records_of(
            &zone.origin().to_name(),
            zone.class(),
            self.dnskey_ttl(zone),
        )
    }

    /// The key records of this signer's keys (published keys, CDS and
    /// CDNSKEY per the policy) at `origin`: DNSKEY with TTL `ttl`, CDS and
    /// CDNSKEY with TTL 0.
    pub(crate) fn key_records_of(&self, origin: &Name, class: Class, ttl: u32) -> Vec<Record> {
        let record = |rtype, rdata: Vec<u8>| Record {
            owner: origin.clone(),
            class,
            rtype,
            ttl: if rtype == Rtype::DNSKEY { ttl } else { 0 },
            rdata: rdata.into(),
        };
        let mut out: Vec<Record> = self
            .published()
            .map(|k| record(Rtype::DNSKEY, k.dnskey_rdata()))
            .chain(
                self.foreign()
                    .iter()
                    .map(|f| record(Rtype::DNSKEY, f.clone())),
            )
            .collect();
        if self.policy().cds == CdsPublish::DeleteDnssec {
            out.push(record(Rtype::CDNSKEY, DELETE_CDNSKEY.to_vec()));
            out.push(record(Rtype::CDS, DELETE_CDS.to_vec()));
        }
        for k in self.cds_keys() {
            out.push(record(Rtype::CDNSKEY, k.dnskey_rdata()));
            out.push(record(Rtype::CDS, k.ds_rdata(self.policy().cds_digest)));
        }
        out
    }

    /// The change of the apex's key records from what `zone` has to what
    /// the keys call for: (removed, added); both empty when they agree.
    pub fn key_records_change(&self, zone: &Zone) -> (Vec<Record>, Vec<Record>) {
        let want = self.key_records(zone);
        let own = self.own_cds_rdatas();
        let (mut removed, mut added) = (Vec::new(), Vec::new());
        for rtype in [Rtype::DNSKEY, Rtype::CDNSKEY, Rtype::CDS] {
            let Some(set) = zone.apex_rrset(rtype) else {
                added.extend(want.iter().filter(|r| r.rtype == rtype).cloned());
                continue;
            };
            let have: Vec<Record> = set
                .rdatas()
                .map(|rdata| Record {
                    owner: zone.origin().to_name(),
                    class: zone.class(),
                    rtype,
                    ttl: set.ttl(),
                    rdata: rdata.into(),
                })
                .collect();
            let wanted: Vec<&Record> = want.iter().filter(|r| r.rtype == rtype).collect();
            // A TTL that changed: the whole RRset again.
            let ttl_moved = wanted.first().is_some_and(|w| w.ttl != set.ttl());
            for h in &have {
                let ours = rtype == Rtype::DNSKEY || self.owns_cds(rtype, &h.rdata, &own);
                let kept = wanted.iter().any(|w| w.rdata == h.rdata);
                if (ours && !kept) || (ttl_moved && kept) {
                    removed.push(h.clone());
                }
            }
            for w in wanted {
                if ttl_moved || !have.iter().any(|h| h.rdata == w.rdata) {
                    added.push(w.clone());
                }
            }
        }
        (removed, added)
    }

    /// The zone's key records brought to what the keys call for (a key
    /// event: a key published or removed, a KSK ready or active), as one
    /// change to `soa_to`, signed; None when they agree already.
    pub fn rekey(
        &self,
        zone: &Zone,
        soa_to: Record,
        now: u64,
    ) -> Result<Option<(Zone, Changeset)>, SignError> {
        let (removed, added) = self.key_records_change(zone);
        // Offline KSK: a new period of the signed key response may bring
        // new signatures of the same records.
        let resign = removed.is_empty() && added.is_empty() && !self.offline_sigs_in(zone);
        if removed.is_empty() && added.is_empty() && !resign {
            return Ok(None);
        }
        let change = Changeset {
            soa_from: zone.soa_record(),
            soa_to,
            removed,
            added,
        };
        let apex = [zone.origin().to_name()];
        let also: &[Name] = if resign { &apex } else { &[] };
        self.sign_change_at(zone, &change, also, true, now)
            .map(Some)
    }

    /// False when the apex's signatures of its key records are not those
    /// of the signed key response (offline KSK; always true without).
    fn offline_sigs_in(&self, zone: &Zone) -> bool {
        let Some(sigs) = zone.apex_rrset(Rtype::RRSIG) else {
            return self.offline().is_none();
        };
        [Rtype::DNSKEY, Rtype::CDS, Rtype::CDNSKEY]
            .into_iter()
            .filter(|&t| zone.apex_rrset(t).is_some())
            .all(|t| self.sigs_fit(sigs.rdatas(), t, 0) || !self.is_offline_type(t))
    }
}
