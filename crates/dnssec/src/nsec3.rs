//! The NSEC3 chain (RFC 5155): which names are hashed, the NSEC3 records at
//! the hashed owners (children of the apex), the NSEC3PARAM, whole and
//! mended around the names a change touched.

use std::collections::{BTreeMap, BTreeSet};

use lode_wire::nsec3::{hashed_owner, Nsec3Params};
use lode_wire::{Name, NameRef, Record, Rtype};
use lode_zonedb::{Lookup, NodeId, Zone};

use crate::nsec;

/// Names [`Nsec3::hashes`] hands each thread at a time.
const HASH_PART: usize = 16384;

/// NSEC3 settings of a policy (Knot's names: nsec3-iterations,
/// nsec3-salt-length, nsec3-opt-out).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Nsec3Policy {
    /// Extra hash iterations (RFC 9276: 0).
    pub iterations: u16,
    /// Salt length in bytes (RFC 9276: 0).
    pub salt_length: u8,
    /// Insecure delegations get no NSEC3 (RFC 5155 §6).
    pub opt_out: bool,
    /// Seconds a salt is used before a new one replaces it, the chain made
    /// anew (Knot's nsec3-salt-lifetime; 0: kept until the policy changes).
    pub salt_lifetime: u64,
    /// The salt a whole signing uses (the signer of the moment's, chosen
    /// when the salt is replaced); None: the zone's when it fits, else a
    /// new random one.
    pub salt: Option<Vec<u8>>,
}

/// The hash parameters a zone is signed with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nsec3 {
    /// Extra iterations.
    pub iterations: u16,
    /// The salt.
    pub salt: Vec<u8>,
    /// Opt-out flag of the NSEC3 records.
    pub opt_out: bool,
}

/// `len` random bytes: a new salt.
pub fn random_salt(len: u8) -> Vec<u8> {
    let mut salt = vec![0u8; usize::from(len)];
    if !salt.is_empty() {
        use ring::rand::SecureRandom as _;
        let _ = ring::rand::SystemRandom::new().fill(&mut salt);
    }
    salt
}

impl Nsec3 {
    /// The parameters for a zone under `policy`: those of the zone's
    /// NSEC3PARAM when they fit the policy (the salt is kept: a new salt
    /// is a new chain), a new random salt otherwise.
    pub fn for_zone(zone: &Zone, policy: &Nsec3Policy) -> Nsec3 {
        if let Some(p) = Nsec3::of_zone(zone) {
            if p.iterations == policy.iterations
                && p.salt.len() == usize::from(policy.salt_length)
                && policy.salt.as_ref().is_none_or(|s| *s == p.salt)
            {
                return Nsec3 {
                    opt_out: policy.opt_out,
                    ..p
                };
            }
        }
        let salt = match &policy.salt {
            Some(s) => s.clone(),
            None => random_salt(policy.salt_length),
        };
        Nsec3 {
            iterations: policy.iterations,
            salt,
            opt_out: policy.opt_out,
        }
    }

    /// The parameters a change of the zone mends its chain with: the
    /// zone's own when they fit the policy's iterations and salt length
    /// (a salt chosen for the next whole signing is not used by a change,
    /// which must extend the chain the zone has), as [`Nsec3::for_zone`]
    /// otherwise.
    pub fn for_change(zone: &Zone, policy: &Nsec3Policy) -> Nsec3 {
        let any_salt = Nsec3Policy {
            salt: None,
            ..policy.clone()
        };
        Nsec3::for_zone(zone, &any_salt)
    }

    /// The parameters of the zone's NSEC3PARAM and the opt-out flag of its
    /// apex's NSEC3 (None when it has no NSEC3PARAM of algorithm 1).
    pub fn of_zone(zone: &Zone) -> Option<Nsec3> {
        let set = zone.apex_rrset(Rtype::NSEC3PARAM)?;
        let p = Nsec3Params::parse(set.first())?;
        let mut n = Nsec3 {
            iterations: p.iterations,
            salt: p.salt.to_vec(),
            opt_out: false,
        };
        let apex = n.owner(zone, zone.origin());
        n.opt_out = apex
            .and_then(|o| zone.find(o.as_ref()))
            .and_then(|id| {
                zone.node(id)
                    .rrset(Rtype::NSEC3)
                    .map(|s| s.first().get(1) == Some(&1))
            })
            .unwrap_or(false);
        Some(n)
    }

    fn params(&self) -> Nsec3Params<'_> {
        Nsec3Params {
            iterations: self.iterations,
            salt: &self.salt,
        }
    }

    /// The hash of a name.
    pub fn hash(&self, name: NameRef<'_>) -> [u8; 20] {
        self.params().hash(name)
    }

    /// The hashed owner of a name.
    pub fn owner(&self, zone: &Zone, name: NameRef<'_>) -> Option<Name> {
        hashed_owner(&self.hash(name), zone.origin()).map(|b| b.as_ref().to_name())
    }

    /// The NSEC3PARAM record, with the NSEC3 records' TTL (the SOA's
    /// negative TTL, as Knot 3.2 writes it; BIND writes 0).
    pub fn param_record(&self, zone: &Zone) -> Record {
        let mut rdata = vec![1, 0];
        rdata.extend_from_slice(&self.iterations.to_be_bytes());
        rdata.push(self.salt.len() as u8);
        rdata.extend_from_slice(&self.salt);
        Record {
            owner: zone.origin().to_name(),
            class: zone.class(),
            rtype: Rtype::NSEC3PARAM,
            ttl: zone.negative_ttl(),
            rdata: rdata.into(),
        }
    }

    /// True when the name of `id` gets an NSEC3: it owns data or is an
    /// empty non-terminal above names that do (a name left with nothing but
    /// stale signatures does not count), is not occluded, not an NSEC3
    /// owner itself, and (opt-out) not an insecure delegation.
    ///
    /// An empty non-terminal above nothing but insecure delegations keeps
    /// its NSEC3 with opt-out too (RFC 5155 §7.1 lets a signer leave it
    /// out; Knot 3.2 does): without it a name below it cannot be proved
    /// absent (Knot answers such names with a bare NXDOMAIN, and no proof
    /// is valid when a wildcard sits at the closest provable encloser).
    pub fn is_hashed(&self, zone: &Zone, id: NodeId) -> bool {
        if zone.shadow(id).is_some() {
            return false;
        }
        let node = zone.node(id);
        if node.rrset(Rtype::NSEC3).is_some() {
            return false;
        }
        if !owns_data(&node) {
            let owner = node.owner();
            let above_data = zone
                .node_ids_after(id)
                .take_while(|&d| zone.node(d).owner().is_strictly_below(&owner))
                .any(|d| owns_data(&zone.node(d)));
            if !above_data {
                return false;
            }
        }
        if self.opt_out
            && id != zone.apex_id()
            && node.is_delegation()
            && node.rrset(Rtype::DS).is_none()
        {
            return false;
        }
        true
    }

    /// The type bitmap of a hashed name: its types (at a delegation NS and
    /// DS), and RRSIG when one of them is signed; empty for an empty
    /// non-terminal.
    pub fn bitmap(&self, zone: &Zone, id: NodeId) -> Vec<u8> {
        let node = zone.node(id);
        let deleg = id != zone.apex_id() && node.is_delegation();
        let mut types: Vec<u16> = node
            .rrsets()
            .map(|s| s.rtype())
            .filter(|t| !matches!(*t, Rtype::RRSIG | Rtype::NSEC))
            .filter(|t| !deleg || matches!(*t, Rtype::NS | Rtype::DS))
            .map(|t| t.0)
            .collect();
        let signed = types.iter().any(|&t| nsec::is_signed(zone, id, Rtype(t)));
        if signed {
            types.push(Rtype::RRSIG.0);
        }
        nsec::encode_bitmap(&mut types)
    }

    /// The NSEC3 record of a hash with this bitmap and next hash; TTL as NSEC's.
    pub fn record(
        &self,
        zone: &Zone,
        hash: &[u8; 20],
        next: &[u8; 20],
        bitmap: &[u8],
    ) -> Option<Record> {
        let owner = hashed_owner(hash, zone.origin())?.as_ref().to_name();
        Some(Record {
            owner,
            class: zone.class(),
            rtype: Rtype::NSEC3,
            ttl: zone.negative_ttl(),
            rdata: self.rdata(next, bitmap).into(),
        })
    }

    /// The RDATA of an NSEC3 with this next hash and bitmap.
    pub fn rdata(&self, next: &[u8; 20], bitmap: &[u8]) -> Vec<u8> {
        let mut rdata = vec![1, u8::from(self.opt_out)];
        rdata.extend_from_slice(&self.iterations.to_be_bytes());
        rdata.push(self.salt.len() as u8);
        rdata.extend_from_slice(&self.salt);
        rdata.push(20);
        rdata.extend_from_slice(next);
        rdata.extend_from_slice(bitmap);
        rdata
    }

    /// The hashes of a zone's hashed names in hash order (one per hash),
    /// each with its name's node; hashed on `threads` threads.
    pub fn hashes(&self, zone: &Zone, threads: usize) -> Vec<([u8; 20], NodeId)> {
        let hash_some = |ids: &[NodeId]| -> Vec<([u8; 20], NodeId)> {
            ids.iter()
                .filter(|&&id| self.is_hashed(zone, id))
                .map(|&id| (self.hash(zone.node(id).owner()), id))
                .collect()
        };
        // The names a part at a time: a list of every node id would cost
        // 4 bytes a name beside the hashes (most names are not hashed in
        // an opt-out zone).
        let threads = threads.max(1);
        let mut ids = zone.node_ids();
        let mut part: Vec<NodeId> = Vec::with_capacity(threads * HASH_PART);
        let mut hashes: Vec<([u8; 20], NodeId)> = Vec::new();
        loop {
            part.clear();
            part.extend(ids.by_ref().take(threads * HASH_PART));
            if part.is_empty() {
                break;
            }
            let chunk = part.len().div_ceil(threads);
            std::thread::scope(|s| {
                let handles: Vec<_> = part
                    .chunks(chunk)
                    .map(|c| s.spawn(move || hash_some(c)))
                    .collect();
                for h in handles {
                    hashes.extend(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
                }
            });
        }
        hashes.sort_unstable_by_key(|a| a.0);
        hashes.dedup_by(|a, b| a.0 == b.0);
        hashes
    }

    /// The whole chain of a zone (its names as they are, NSEC3PARAM in).
    pub fn chain(&self, zone: &Zone) -> Vec<Record> {
        let hashes = self.hashes(zone, 1);
        let n = hashes.len();
        (0..n)
            .filter_map(|i| {
                let (h, id) = &hashes[i];
                let next = &hashes[(i + 1) % n].0;
                self.record(zone, h, next, &self.bitmap(zone, *id))
            })
            .collect()
    }

    /// Mends the chain of `zone` (a version with the change applied and
    /// the old chain still in) for the names in `names` (the names the
    /// change touched, with their ancestors): NSEC3 records to remove and
    /// to add, pushed onto `removed` and `added`.
    pub fn mend(
        &self,
        zone: &Zone,
        names: &BTreeMap<Box<[u8]>, Name>,
        removed: &mut Vec<Record>,
        added: &mut Vec<Record>,
    ) {
        // What each touched name's NSEC3 is to be (None: none).
        let mut want: BTreeMap<[u8; 20], Vec<u8>> = BTreeMap::new();
        let mut gone: BTreeSet<[u8; 20]> = BTreeSet::new();
        for name in names.values() {
            let h = self.hash(name.as_ref());
            match zone.find(name.as_ref()) {
                Some(id) if self.is_hashed(zone, id) => {
                    want.insert(h, self.bitmap(zone, id));
                }
                _ => {
                    if self.existing(zone, &h).is_some() {
                        gone.insert(h);
                    }
                }
            }
        }
        // The chain's order after the change: the existing NSEC3 owners
        // less those gone, with the wanted ones in.
        let next_of = |h: &[u8; 20]| -> Option<[u8; 20]> {
            let after_want = want
                .range((std::ops::Bound::Excluded(*h), std::ops::Bound::Unbounded))
                .map(|(k, _)| *k)
                .next();
            let after_old = self.existing_after(zone, h, &gone);
            let first_want = want.keys().next().copied();
            let first_old = self.existing_after(zone, &[0u8; 20], &gone);
            let beyond = [after_want, after_old.filter(|o| o > h)]
                .into_iter()
                .flatten()
                .min();
            beyond.or_else(|| [first_want, first_old].into_iter().flatten().min())
        };
        let prev_of = |h: &[u8; 20]| -> Option<[u8; 20]> {
            let before_want = want.range(..*h).map(|(k, _)| *k).next_back();
            let before_old = self.existing_before(zone, h, &gone).filter(|o| o < h);
            let last_want = want.keys().next_back().copied();
            let last_old = self.existing_before(zone, &[0xff; 20], &gone);
            [before_want, before_old]
                .into_iter()
                .flatten()
                .max()
                .or_else(|| [last_want, last_old].into_iter().flatten().max())
        };
        // Records to write: each wanted one, and the predecessors of every
        // hash that comes or goes (their next hash changes).
        let mut write: BTreeSet<[u8; 20]> = want.keys().copied().collect();
        for h in want.keys().chain(gone.iter()) {
            if let Some(p) = prev_of(h) {
                write.insert(p);
            }
        }
        for h in &gone {
            removed.extend(self.existing(zone, h).unwrap_or_default());
        }
        for h in &write {
            if gone.contains(h) {
                continue;
            }
            let old = self.existing(zone, h).unwrap_or_default();
            let bitmap = match want.get(h) {
                Some(b) => b.clone(),
                None => match old.first() {
                    // An untouched predecessor keeps its bitmap.
                    Some(r) => bitmap_of(&r.rdata).to_vec(),
                    None => continue,
                },
            };
            let Some(next) = next_of(h) else { continue };
            let Some(new) = self.record(zone, h, &next, &bitmap) else {
                continue;
            };
            if old.len() == 1 && old[0].rdata == new.rdata && old[0].ttl == new.ttl {
                continue;
            }
            removed.extend(old);
            added.push(new);
        }
    }

    /// The NSEC3 records now at the owner of hash `h`.
    fn existing(&self, zone: &Zone, h: &[u8; 20]) -> Option<Vec<Record>> {
        let owner = hashed_owner(h, zone.origin())?;
        let id = zone.find(owner.as_ref())?;
        let records = nsec::records_of(zone, id, Rtype::NSEC3);
        (!records.is_empty()).then_some(records)
    }

    /// The hash of the first existing NSEC3 owner after `h` (not in `gone`), wrapping.
    fn existing_after(
        &self,
        zone: &Zone,
        h: &[u8; 20],
        gone: &BTreeSet<[u8; 20]>,
    ) -> Option<[u8; 20]> {
        let owner = hashed_owner(h, zone.origin())?;
        let at = match zone.lookup(owner.as_ref()) {
            Lookup::Found(id)
            | Lookup::NotFound {
                predecessor: id, ..
            } => id,
        };
        first_kept(zone, at, h, gone, |z, n| z.nsec3_after(n), |_, n| n)
    }

    /// The hash of the last existing NSEC3 owner before `h` (not in `gone`), wrapping.
    fn existing_before(
        &self,
        zone: &Zone,
        h: &[u8; 20],
        gone: &BTreeSet<[u8; 20]>,
    ) -> Option<[u8; 20]> {
        let owner = hashed_owner(h, zone.origin())?;
        let at = match zone.lookup(owner.as_ref()) {
            Lookup::Found(id) => zone.node_before(id)?,
            Lookup::NotFound { predecessor, .. } => predecessor,
        };
        first_kept(
            zone,
            at,
            h,
            gone,
            |z, n| z.nsec3_at_or_before(n),
            |z, n| z.node_before(n).unwrap_or(z.last_id()),
        )
    }
}

/// Walks the NSEC3 owners from `at` (`step` finds the next one, `on` where
/// to go on from it) to the first whose hash is neither `h` nor in `gone`;
/// None when the walk comes round to where it began.
fn first_kept(
    zone: &Zone,
    mut at: NodeId,
    h: &[u8; 20],
    gone: &BTreeSet<[u8; 20]>,
    step: impl Fn(&Zone, NodeId) -> Option<NodeId>,
    on: impl Fn(&Zone, NodeId) -> NodeId,
) -> Option<[u8; 20]> {
    let mut seen: Option<[u8; 20]> = None;
    loop {
        let n = step(zone, at)?;
        let hash = owner_hash(zone.node(n).owner())?;
        if seen == Some(hash) {
            return None; // around the whole chain
        }
        seen.get_or_insert(hash);
        if !gone.contains(&hash) && &hash != h {
            return Some(hash);
        }
        at = on(zone, n);
    }
}

/// True when the node holds more than DNSSEC records (signatures, chain).
fn owns_data(node: &lode_zonedb::Node<'_>) -> bool {
    node.rrsets()
        .any(|s| !matches!(s.rtype(), Rtype::RRSIG | Rtype::NSEC | Rtype::NSEC3))
}

/// The type bitmap field of NSEC3 RDATA.
fn bitmap_of(rdata: &[u8]) -> &[u8] {
    let salt = rdata.get(4).copied().unwrap_or(0) as usize;
    let at = 5 + salt;
    let hash = rdata.get(at).copied().unwrap_or(0) as usize;
    rdata.get(at + 1 + hash..).unwrap_or(&[])
}

/// The hash an NSEC3 owner's first label spells (base32hex, RFC 4648 §7).
pub fn owner_hash(owner: NameRef<'_>) -> Option<[u8; 20]> {
    let label = owner.labels().next()?;
    if label.len() != 32 {
        return None;
    }
    let mut out = [0u8; 20];
    let mut acc: u64 = 0;
    let mut bits = 0;
    let mut i = 0;
    for &c in label {
        let v = match c.to_ascii_lowercase() {
            b'0'..=b'9' => c - b'0',
            c @ b'a'..=b'v' => c - b'a' + 10,
            _ => return None,
        };
        acc = (acc << 5) | u64::from(v);
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out[i] = (acc >> bits) as u8;
            i += 1;
        }
    }
    Some(out)
}
