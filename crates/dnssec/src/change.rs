//! One change of a signed zone, signed: what the zone-update stage calls
//! for every UPDATE, zone-file difference, IXFR in and signature refresh.
//!
//! ```text
//!  current + change (its DNSSEC records dropped) ──apply──▶ next (old chain, stale signatures)
//!  names touched: owners in the change, the apex (SOA), every name below a
//!  cut made or taken away (all their types), for NSEC3 their ancestors too
//!  ──mend the chain──▶ NSEC/NSEC3 records out and in
//!  ──sign──▶ per owner: each RRset touched, each chain record changed, each
//!            signature found due is signed again; signatures of what is no
//!            longer signed (or gone) go
//!  ──▶ next + signing changes = the signed version; change + signing changes = the journaled changeset
//! ```

use std::collections::{BTreeMap, HashMap, HashSet};

use lode_wire::{Name, Record, Rtype};
use lode_zonedb::{Changeset, Zone};

use crate::nsec;
use crate::nsec3::Nsec3;
use crate::rrsig::rrsig_info;
use crate::signer::{is_signer_type, Job, SignError, Signer};

/// Types of the chain records.
fn is_chain(t: Rtype) -> bool {
    matches!(t, Rtype::NSEC | Rtype::NSEC3)
}

impl Signer {
    /// One change of a signed zone, signed: `change` (its DNSSEC records
    /// left out: the signer makes them) applied to `current`, the RRSIGs of
    /// every RRset it touched made again, the NSEC or NSEC3 chain mended
    /// around the names it touched, the SOA signed. Returns the signed
    /// version and the changeset that leads to it from `current` (what is
    /// journaled).
    pub fn sign_change(
        &self,
        current: &Zone,
        change: &Changeset,
        now: u64,
    ) -> Result<(Zone, Changeset), SignError> {
        self.sign_change_at(current, change, &[], false, now)
    }

    /// [`Signer::sign_change`], the names in `also` looked at too (their
    /// signatures that are due, or not by the keys of the moment, made
    /// again); `own_keys`: the change's DNSKEY records are the signer's.
    pub(crate) fn sign_change_at(
        &self,
        current: &Zone,
        change: &Changeset,
        also: &[Name],
        own_keys: bool,
        now: u64,
    ) -> Result<(Zone, Changeset), SignError> {
        let failed = self.key_failures();
        let signed = self.sign_change_unchecked(current, change, also, own_keys, now)?;
        self.keys_did_not_fail(failed)?;
        Ok(signed)
    }

    fn sign_change_unchecked(
        &self,
        current: &Zone,
        change: &Changeset,
        also: &[Name],
        own_keys: bool,
        now: u64,
    ) -> Result<(Zone, Changeset), SignError> {
        let mut change = change.clone();
        let taken = |r: &Record| !is_signer_type(r.rtype) || (own_keys && r.rtype == Rtype::DNSKEY);
        change.removed.retain(taken);
        change.added.retain(taken);
        let next = current.apply(&change)?;
        // What changed, by owner (canonical key) and type.
        let mut touched: BTreeMap<Box<[u8]>, (Name, HashSet<Rtype>)> = BTreeMap::new();
        let mut cuts = Vec::new();
        for r in change.removed.iter().chain(&change.added) {
            let e = touched
                .entry(r.owner.key())
                .or_insert_with(|| (r.owner.clone(), HashSet::new()));
            e.1.insert(r.rtype);
            // NS makes a cut below the apex; DNAME occludes what is below
            // it anywhere, the apex too.
            let apex = r.owner.as_ref() == next.origin();
            if r.rtype == Rtype::DNAME || (r.rtype == Rtype::NS && !apex) {
                cuts.push(r.owner.clone());
            }
        }
        touched
            .entry(next.origin().key())
            .or_insert_with(|| (next.origin().to_name(), HashSet::new()))
            .1
            .insert(Rtype::SOA);
        for owner in also {
            touched
                .entry(owner.key())
                .or_insert_with(|| (owner.clone(), HashSet::new()));
        }
        // A cut made or taken away changes what is signed below it: every
        // name there is looked at again, all its types.
        let mut all_types: HashSet<Box<[u8]>> = HashSet::new();
        for cut in &cuts {
            all_types.insert(cut.key());
            if let Some(id) = next.find(cut.as_ref()) {
                for d in next
                    .node_ids_after(id)
                    .take_while(|&d| next.node(d).owner().is_strictly_below(&cut.as_ref()))
                {
                    let owner = next.node(d).owner().to_name();
                    all_types.insert(owner.key());
                    touched
                        .entry(owner.key())
                        .or_insert_with(|| (owner, HashSet::new()));
                }
            }
        }
        // The chain, mended around the touched names.
        let (mut removed, mut added) = (Vec::new(), Vec::new());
        let names: BTreeMap<Box<[u8]>, Name> = touched
            .iter()
            .map(|(k, (n, _))| (k.clone(), n.clone()))
            .collect();
        match &self.policy().nsec3 {
            None => nsec::mend(&next, &names, &mut removed, &mut added),
            Some(p) => {
                // An ancestor may become (or stop being) an empty non-terminal.
                let mut with_ancestors = names.clone();
                for n in names.values() {
                    let mut a = n.as_ref().parent();
                    while let Some(p) = a.filter(|p| p.ends_with(&next.origin())) {
                        let name = p.to_name();
                        with_ancestors.insert(name.key(), name);
                        a = p.parent();
                    }
                }
                Nsec3::for_change(current, p).mend(
                    &next,
                    &with_ancestors,
                    &mut removed,
                    &mut added,
                );
            }
        }
        // Chain records by owner: what goes, what comes.
        let by_owner = |records: &[Record]| {
            let mut m: HashMap<Box<[u8]>, Vec<Record>> = HashMap::new();
            for r in records {
                m.entry(r.owner.key()).or_default().push(r.clone());
            }
            m
        };
        let (chain_out, chain_in) = (by_owner(&removed), by_owner(&added));
        let mut owners: BTreeMap<Box<[u8]>, Name> = names;
        for r in removed.iter().chain(&added) {
            owners
                .entry(r.owner.key())
                .or_insert_with(|| r.owner.clone());
        }
        // Signatures: per owner, of every touched RRset, of changed chain
        // records, and any found due; those of RRsets no longer signed go.
        let validity = self.validity(now);
        let mut scratch = Vec::new();
        let mut sigs_out = Vec::new();
        let mut sigs_in = Vec::new();
        for (key, owner) in &owners {
            let id = next.find(owner.as_ref());
            let node = id.map(|id| next.node(id));
            let chain_changed = chain_out.contains_key(key) || chain_in.contains_key(key);
            // The RRsets the owner ends with: the chain records as mended.
            let mut sets: Vec<Job> = Vec::new();
            if let Some(node) = &node {
                for set in node.rrsets() {
                    let t = set.rtype();
                    if t == Rtype::RRSIG || (is_chain(t) && chain_changed) {
                        continue;
                    }
                    sets.push(Job {
                        owner: node.owner().to_name(),
                        rtype: t,
                        ttl: set.ttl(),
                        rdatas: set.rdatas().map(Box::from).collect(),
                    });
                }
            }
            for r in chain_in.get(key).into_iter().flatten() {
                sets.push(Job {
                    owner: r.owner.clone(),
                    rtype: r.rtype,
                    ttl: r.ttl,
                    rdatas: vec![r.rdata.clone()],
                });
            }
            // Each with the TTL it is written with (its original TTL).
            let old_sigs = match node.as_ref().and_then(|n| n.rrset(Rtype::RRSIG)) {
                Some(s) => s
                    .rdatas()
                    .map(|r| (s.record_ttl(r), r.to_vec()))
                    .collect::<Vec<_>>(),
                None => Vec::new(),
            };
            let every = all_types.contains(key);
            let types = touched.get(key).map(|t| &t.1);
            let mut keep: HashSet<Rtype> = HashSet::new();
            for set in &sets {
                let t = set.rtype;
                // A new NSEC3 owner is not in `next` yet: signed (the
                // apex's child, never occluded).
                let signed = match id {
                    Some(id) => nsec::is_signed(&next, id, t),
                    None => true,
                };
                if !signed {
                    continue;
                }
                let changed = every
                    || types.is_some_and(|ts| ts.contains(&t))
                    || (is_chain(t) && chain_changed);
                let fresh = self.sigs_fit(old_sigs.iter().map(|(_, r)| &r[..]), t, now);
                if changed || !fresh {
                    self.sign_job(set, next.class(), validity, &mut scratch, &mut sigs_in);
                } else {
                    keep.insert(t);
                }
            }
            let name = node.as_ref().map_or(owner.clone(), |n| n.owner().to_name());
            for (ttl, r) in old_sigs {
                if !rrsig_info(&r).is_some_and(|i| keep.contains(&i.covered)) {
                    sigs_out.push(Record {
                        owner: name.clone(),
                        class: next.class(),
                        rtype: Rtype::RRSIG,
                        ttl,
                        rdata: r.into(),
                    });
                }
            }
        }
        removed.extend(sigs_out);
        added.extend(sigs_in);
        let signing = Changeset {
            soa_from: change.soa_to.clone(),
            soa_to: change.soa_to.clone(),
            removed,
            added,
        };
        let version = next.apply(&signing)?;
        change.removed.extend(signing.removed);
        change.added.extend(signing.added);
        Ok((version, change))
    }
}
