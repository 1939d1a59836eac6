//! Signing a zone: whole (a first load, a new key set, signatures due) and
//! one changeset at a time (what the zone-update stage calls for every
//! change of a signed zone).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use lode_wire::{Name, Record, Rtype};
use lode_zonedb::{ApplyError, Changeset, NodeId, Zone, ZoneBuilder};

use crate::key::SigningKey;
use crate::nsec;
use crate::rrsig::{rrsig_info, sign_rrset, RRsetRef, Validity};

/// Signatures start this long before they are made (clocks of validators
/// running behind; Knot's 90 minutes).
pub const INCEPTION_OFFSET: u64 = 90 * 60;

/// How a zone is signed (Knot's `policy` section, the part this signer uses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// DNSKEY TTL; None: the SOA's TTL (Knot's default).
    pub dnskey_ttl: Option<u32>,
    /// Signature validity, seconds (Knot's default 14 days).
    pub rrsig_lifetime: u32,
    /// A signature is made again this long before it expires (Knot's 7 days).
    pub rrsig_refresh: u32,
    /// Threads for whole-zone signing.
    pub signing_threads: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            dnskey_ttl: None,
            rrsig_lifetime: 14 * 86400,
            rrsig_refresh: 7 * 86400,
            signing_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// Why a zone could not be signed.
#[derive(Debug)]
#[non_exhaustive]
pub enum SignError {
    /// The signer has no key to sign with.
    NoKeys,
    /// The signed changes do not apply (a bug, or a change that did not
    /// apply in the first place).
    Apply(ApplyError),
}

impl std::fmt::Display for SignError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SignError::NoKeys => f.write_str("no signing keys"),
            SignError::Apply(e) => write!(f, "signed changes do not apply: {e}"),
        }
    }
}

impl std::error::Error for SignError {}

impl From<ApplyError> for SignError {
    fn from(e: ApplyError) -> Self {
        SignError::Apply(e)
    }
}

/// Types the signer owns: taken out of what comes in, made by it.
pub fn is_signer_type(t: Rtype) -> bool {
    matches!(
        t,
        Rtype::RRSIG | Rtype::NSEC | Rtype::NSEC3 | Rtype::NSEC3PARAM | Rtype::DNSKEY
    )
}

/// One RRset to sign, owned.
#[derive(Debug)]
struct Job {
    owner: Name,
    rtype: Rtype,
    ttl: u32,
    rdatas: Vec<Box<[u8]>>,
}

/// A zone's signer: its keys and policy.
#[derive(Debug)]
pub struct Signer {
    origin: Name,
    keys: Vec<Arc<SigningKey>>,
    policy: Policy,
}

impl Signer {
    /// The signer of `origin` with these keys (at least one).
    pub fn new(origin: &Name, keys: Vec<SigningKey>, policy: Policy) -> Result<Signer, SignError> {
        if keys.is_empty() {
            return Err(SignError::NoKeys);
        }
        Ok(Signer {
            origin: origin.to_lowercase(),
            keys: keys.into_iter().map(Arc::new).collect(),
            policy,
        })
    }

    /// The keys.
    pub fn keys(&self) -> &[Arc<SigningKey>] {
        &self.keys
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The keys that sign `rtype`: the DNSKEY (and CDS/CDNSKEY) RRset by
    /// the KSKs, the rest by the ZSKs (by the KSKs when there is none: a CSK).
    fn keys_for(&self, rtype: Rtype) -> impl Iterator<Item = &SigningKey> {
        let by_ksk = matches!(rtype, Rtype::DNSKEY | Rtype::CDS | Rtype::CDNSKEY);
        let any_zsk = self.keys.iter().any(|k| !k.is_ksk());
        self.keys
            .iter()
            .map(|k| &**k)
            .filter(move |k| k.is_ksk() == by_ksk || !any_zsk)
    }

    fn validity(&self, now: u64) -> Validity {
        Validity {
            inception: now.saturating_sub(INCEPTION_OFFSET) as u32,
            expiration: (now + u64::from(self.policy.rrsig_lifetime)) as u32,
        }
    }

    /// The DNSKEY records the zone publishes.
    fn dnskeys(&self, zone: &Zone) -> Vec<Record> {
        let ttl = self.policy.dnskey_ttl.unwrap_or(zone.soa().ttl());
        self.keys
            .iter()
            .map(|k| Record {
                owner: zone.origin().to_name(),
                class: zone.class(),
                rtype: Rtype::DNSKEY,
                ttl,
                rdata: k.dnskey_rdata().into(),
            })
            .collect()
    }

    /// True when `zone` is signed by this signer as of `now`: its DNSKEY
    /// RRset is this signer's, its SOA is signed, and no signature expires
    /// within a quarter of the refresh window (those due sooner are made
    /// again in batches; see `refresh.rs`). A zone that is not gets signed
    /// whole.
    pub fn is_current(&self, zone: &Zone, now: u64) -> bool {
        let mut want: Vec<Vec<u8>> = self.keys.iter().map(|k| k.dnskey_rdata()).collect();
        want.sort();
        let mut have: Vec<Vec<u8>> = zone
            .apex_rrset(Rtype::DNSKEY)
            .map(|s| s.rdatas().map(|r| r.to_vec()).collect())
            .unwrap_or_default();
        have.sort();
        if want != have {
            return false;
        }
        let node = zone.node(zone.apex_id());
        let signed = node.rrset(Rtype::RRSIG).is_some_and(|s| {
            s.rdatas()
                .filter_map(rrsig_info)
                .any(|i| i.covered == Rtype::SOA)
        });
        let margin = now + u64::from(self.policy.rrsig_refresh) / 4;
        signed
            && self
                .earliest_expiry(zone)
                .is_none_or(|e| u64::from(e) > margin)
    }

    /// True when a signature expiring at `expiration` is to be made again.
    pub(crate) fn is_due(&self, expiration: u32, now: u64) -> bool {
        u64::from(expiration) < now + u64::from(self.policy.rrsig_refresh)
    }

    /// The earliest expiration of the zone's signatures (a scan).
    pub fn earliest_expiry(&self, zone: &Zone) -> Option<u32> {
        zone.node_ids()
            .filter_map(|id| {
                let node = zone.node(id);
                let sigs = node.rrset(Rtype::RRSIG)?;
                sigs.rdatas()
                    .filter_map(rrsig_info)
                    .map(|i| i.expiration)
                    .min()
            })
            .min()
    }

    /// The zone signed whole: what the zone-update stage publishes for a
    /// new zone (a first load, AXFR in) or when the keys or the due
    /// signatures call for it. Signatures, NSEC and DNSKEY records in
    /// `zone` are replaced by the signer's; `serial`: a new SOA serial.
    pub fn sign_zone(&self, zone: &Zone, serial: Option<u32>, now: u64) -> Result<Zone, SignError> {
        // The zone without DNSSEC records, and the keys' DNSKEYs.
        let mut b = ZoneBuilder::new(zone.origin().to_name())
            .class(zone.class())
            .changed();
        for mut r in zone.records().filter(|r| !is_signer_type(r.rtype)) {
            if let (Some(serial), Rtype::SOA) = (serial, r.rtype) {
                let mut rdata = r.rdata.to_vec();
                let n = rdata.len();
                if n >= 20 {
                    rdata[n - 20..n - 16].copy_from_slice(&serial.to_be_bytes());
                }
                r.rdata = rdata.into();
            }
            b.add(r, 0);
        }
        for r in self.dnskeys(zone) {
            b.add(r, 0);
        }
        let bare = b
            .build()
            .map_err(|p| SignError::Apply(ApplyError::Invalid(p)))?
            .0;
        // The NSEC chain, and every RRset to sign.
        let owners: Vec<NodeId> = bare
            .node_ids()
            .filter(|&id| nsec::has_nsec(&bare, id))
            .collect();
        let mut nsecs = Vec::with_capacity(owners.len());
        for (i, &id) in owners.iter().enumerate() {
            let next = owners.get(i + 1).copied().unwrap_or(bare.apex_id());
            nsecs.push(nsec::nsec_record(&bare, id, next));
        }
        let mut jobs: Vec<Job> = Vec::new();
        for id in bare.node_ids() {
            if bare.shadow(id).is_some() {
                continue;
            }
            let node = bare.node(id);
            for set in node.rrsets() {
                if nsec::is_signed(&bare, id, set.rtype()) {
                    jobs.push(Job {
                        owner: node.owner().to_name(),
                        rtype: set.rtype(),
                        ttl: set.ttl(),
                        rdatas: set.rdatas().map(Box::from).collect(),
                    });
                }
            }
        }
        for r in &nsecs {
            jobs.push(Job {
                owner: r.owner.clone(),
                rtype: Rtype::NSEC,
                ttl: r.ttl,
                rdatas: vec![r.rdata.clone()],
            });
        }
        let sigs = self.sign_jobs(&jobs, zone.class(), now);
        drop(jobs);
        let mut b = ZoneBuilder::new(zone.origin().to_name())
            .class(zone.class())
            .changed();
        for r in bare.records().chain(nsecs).chain(sigs) {
            b.add(r, 0);
        }
        Ok(b.build()
            .map_err(|p| SignError::Apply(ApplyError::Invalid(p)))?
            .0)
    }

    /// Signs RRsets on the policy's threads.
    fn sign_jobs(&self, jobs: &[Job], class: lode_wire::Class, now: u64) -> Vec<Record> {
        let validity = self.validity(now);
        let threads = self.policy.signing_threads.clamp(1, 64);
        let chunk = jobs.len().div_ceil(threads).max(1);
        std::thread::scope(|s| {
            let handles: Vec<_> = jobs
                .chunks(chunk)
                .map(|part| {
                    s.spawn(move || {
                        let mut scratch = Vec::new();
                        let mut out = Vec::with_capacity(part.len());
                        for job in part {
                            self.sign_job(job, class, validity, &mut scratch, &mut out);
                        }
                        out
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        })
    }

    /// The signatures of one RRset, by each key of its role, into `out`.
    fn sign_job(
        &self,
        job: &Job,
        class: lode_wire::Class,
        validity: Validity,
        scratch: &mut Vec<u8>,
        out: &mut Vec<Record>,
    ) {
        let set = RRsetRef {
            owner: job.owner.as_ref(),
            rtype: job.rtype,
            class,
            ttl: job.ttl,
        };
        for key in self.keys_for(job.rtype) {
            out.push(sign_rrset(
                &set,
                job.rdatas.iter().map(|r| &**r),
                key,
                self.origin.as_ref(),
                validity,
                scratch,
            ));
        }
    }

    /// One change of a signed zone, signed: `change` (its DNSSEC records
    /// left out: the signer makes them) applied to `current`, the RRSIGs of
    /// every RRset it touched made again, the NSEC chain mended around the
    /// names it touched, the SOA signed. Returns the signed version and the
    /// changeset that leads to it from `current` (what is journaled).
    pub fn sign_change(
        &self,
        current: &Zone,
        change: &Changeset,
        now: u64,
    ) -> Result<(Zone, Changeset), SignError> {
        self.sign_change_at(current, change, &[], now)
    }

    /// [`Signer::sign_change`], the names in `also` looked at too (their
    /// signatures that are due made again).
    pub(crate) fn sign_change_at(
        &self,
        current: &Zone,
        change: &Changeset,
        also: &[Name],
        now: u64,
    ) -> Result<(Zone, Changeset), SignError> {
        let mut change = change.clone();
        change.removed.retain(|r| !is_signer_type(r.rtype));
        change.added.retain(|r| !is_signer_type(r.rtype));
        let next = current.apply(&change)?;
        // What changed, by owner (canonical key) and type.
        let mut touched: BTreeMap<Box<[u8]>, (Name, HashSet<Rtype>)> = BTreeMap::new();
        let mut cuts = Vec::new();
        for r in change.removed.iter().chain(&change.added) {
            let e = touched
                .entry(r.owner.key())
                .or_insert_with(|| (r.owner.clone(), HashSet::new()));
            e.1.insert(r.rtype);
            if matches!(r.rtype, Rtype::NS | Rtype::DNAME) && r.owner.as_ref() != next.origin() {
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
        // NSEC records to mend: at each touched name and at the NSEC owner
        // before it (whose next name may change).
        let mut nsec_at: BTreeMap<Box<[u8]>, Name> = BTreeMap::new();
        for (key, (owner, _)) in &touched {
            nsec_at.insert(key.clone(), owner.clone());
            let before = match next.find(owner.as_ref()) {
                Some(id) => nsec::prev_owner(&next, id),
                None => match next.lookup(owner.as_ref()) {
                    lode_zonedb::Lookup::NotFound { predecessor, .. } => next
                        .rfind_from(predecessor, |n| nsec::has_nsec(&next, n.id()))
                        .unwrap_or(next.apex_id()),
                    lode_zonedb::Lookup::Found(id) => id,
                },
            };
            let p = next.node(before).owner().to_name();
            nsec_at.insert(p.key(), p);
        }
        let (mut removed, mut added) = (Vec::new(), Vec::new());
        let mut nsec_changed: HashSet<Box<[u8]>> = HashSet::new();
        for (key, owner) in &nsec_at {
            let id = next.find(owner.as_ref());
            let old = id.and_then(|id| {
                let node = next.node(id);
                let set = node.rrset(Rtype::NSEC)?;
                let ttl = set.ttl();
                Some(
                    set.rdatas()
                        .map(|r| Record {
                            owner: node.owner().to_name(),
                            class: next.class(),
                            rtype: Rtype::NSEC,
                            ttl,
                            rdata: r.into(),
                        })
                        .collect::<Vec<_>>(),
                )
            });
            let new = id
                .filter(|&id| nsec::has_nsec(&next, id))
                .map(|id| nsec::nsec_record(&next, id, nsec::next_owner(&next, id)));
            let old = old.unwrap_or_default();
            let same = match &new {
                Some(n) => old.len() == 1 && old[0].rdata == n.rdata && old[0].ttl == n.ttl,
                None => old.is_empty(),
            };
            if !same {
                removed.extend(old);
                added.extend(new);
                nsec_changed.insert(key.clone());
            }
        }
        // Signatures: of every touched RRset, of changed NSECs, and any
        // found due; those of RRsets no longer signed go.
        let validity = self.validity(now);
        let mut scratch = Vec::new();
        let mut keys: Vec<&Box<[u8]>> = touched.keys().chain(nsec_changed.iter()).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            let owner = match touched.get(key) {
                Some((o, _)) => o.clone(),
                None => nsec_at[key].clone(),
            };
            let Some(id) = next.find(owner.as_ref()) else {
                continue; // the name is gone, and its signatures with it
            };
            let node = next.node(id);
            let every = all_types.contains(key);
            let types = touched.get(key).map(|t| &t.1);
            let (sig_ttl_owner, old_sigs) = match node.rrset(Rtype::RRSIG) {
                Some(s) => (s.ttl(), s.rdatas().map(|r| r.to_vec()).collect::<Vec<_>>()),
                None => (0, Vec::new()),
            };
            // Types whose RRset is (re)signed; the signatures kept are the
            // rest's, if still due later than the refresh.
            let new_nsec = added
                .iter()
                .find(|r| r.rtype == Rtype::NSEC && r.owner.key() == *key)
                .cloned();
            let nsec_gone = nsec_changed.contains(key) && new_nsec.is_none();
            let mut resign: Vec<Job> = Vec::new();
            let mut keep_types: HashSet<Rtype> = HashSet::new();
            for set in node.rrsets() {
                let t = set.rtype();
                if t == Rtype::RRSIG
                    || !nsec::is_signed(&next, id, t)
                    || (t == Rtype::NSEC && nsec_gone)
                {
                    continue;
                }
                let changed = every
                    || types.is_some_and(|ts| ts.contains(&t))
                    || (t == Rtype::NSEC && nsec_changed.contains(key));
                let fresh = old_sigs
                    .iter()
                    .filter_map(|r| rrsig_info(r))
                    .any(|i| i.covered == t && !self.is_due(i.expiration, now));
                if changed || !fresh {
                    if t == Rtype::NSEC {
                        if let Some(n) = &new_nsec {
                            resign.push(job(&node, t, n.ttl, vec![n.rdata.clone()]));
                            continue;
                        }
                    }
                    resign.push(job(
                        &node,
                        t,
                        set.ttl(),
                        set.rdatas().map(Box::from).collect(),
                    ));
                } else {
                    keep_types.insert(t);
                }
            }
            if let Some(n) = &new_nsec {
                if node.rrset(Rtype::NSEC).is_none() {
                    resign.push(job(&node, Rtype::NSEC, n.ttl, vec![n.rdata.clone()]));
                }
            }
            for r in &old_sigs {
                let covered = rrsig_info(r).map(|i| i.covered);
                let keep = covered.is_some_and(|c| keep_types.contains(&c))
                    && !(nsec_gone && covered == Some(Rtype::NSEC));
                if !keep {
                    removed.push(Record {
                        owner: node.owner().to_name(),
                        class: next.class(),
                        rtype: Rtype::RRSIG,
                        ttl: sig_ttl_owner,
                        rdata: r.clone().into(),
                    });
                }
            }
            for j in &resign {
                self.sign_job(j, next.class(), validity, &mut scratch, &mut added);
            }
        }
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

fn job(node: &lode_zonedb::Node<'_>, rtype: Rtype, ttl: u32, rdatas: Vec<Box<[u8]>>) -> Job {
    Job {
        owner: node.owner().to_name(),
        rtype,
        ttl,
        rdatas,
    }
}
