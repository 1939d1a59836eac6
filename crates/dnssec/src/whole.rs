//! Signing a zone whole, streamed: the zone without its DNSSEC records (the
//! keys' records in) is built once, then walked in canonical order in
//! batches; each batch's names are signed on the policy's threads while the
//! previous batch's are written into the signed zone. What is held beside
//! the two zones is a batch and, for NSEC3, the hashes (24 bytes a name).

use std::sync::atomic::{AtomicUsize, Ordering};

use lode_wire::name::{KeyBuf, MAX_KEY_LEN};
use lode_wire::nsec3::hashed_owner;
use lode_wire::{Name, NameBuf, NameRef, Record, Rtype};
use lode_zonedb::{ApplyError, Changeset, NodeId, OrderedBuilder, Zone};

use crate::nsec;
use crate::nsec3::Nsec3;
use crate::rrsig::{RRsetRef, Validity};
use crate::signer::{is_signer_type, SignError, Signer, PROGRESS_STEP};

/// Names signed per thread between two writes into the signed zone.
const BATCH_PER_THREAD: usize = 2048;
/// Names a signing thread takes from the batch at a time.
const PART: usize = 64;

/// [`Signer::bare`] makes the zone bare by a change (not a copy) while
/// at most one name in this many (plus a few) outside the apex holds the
/// signer's records: the change's names sit in the new version's delta.
const BARE_CHANGE_SHARE: usize = 64;
const BARE_CHANGE_FEW: usize = 64;

/// One name of the signed zone.
#[derive(Debug, Clone, Copy)]
enum Item {
    /// A name of the unsigned zone.
    Node(NodeId),
    /// The owner of the NSEC3 of the hash at this index.
    Hash(usize),
    /// A name of the unsigned zone that is also a chain owner: of the
    /// NSEC3 of the hash at this index, or the NSEC owner at this index.
    Both(NodeId, usize),
}

/// What a signing thread made for one name.
#[derive(Default)]
struct Made {
    /// Its NSEC or NSEC3 RDATA.
    chain: Option<Vec<u8>>,
    /// Its signatures' RDATAs.
    sigs: Vec<Vec<u8>>,
    /// The TTL of its RRSIG RRset (the chain record's, or the last signed RRset's).
    sig_ttl: u32,
}

/// The chain a zone is signed with.
enum Chain {
    /// The NSEC owners, in canonical order.
    Nsec(Vec<NodeId>),
    /// The NSEC3 parameters and hashes, in hash order.
    Nsec3(Nsec3, Vec<([u8; 20], NodeId)>),
}

impl Signer {
    /// The zone signed whole: what the zone-update stage publishes for a
    /// new zone (a first load, AXFR in) or when the keys or the due
    /// signatures call for it. Signatures, NSEC and DNSKEY records in
    /// `zone` are replaced by the signer's; `serial`: a new SOA serial.
    pub fn sign_zone(&self, zone: &Zone, serial: Option<u32>, now: u64) -> Result<Zone, SignError> {
        let failed = self.key_failures();
        let signed = self.sign_zone_unchecked(zone, serial, now)?;
        self.keys_did_not_fail(failed)?;
        Ok(signed)
    }

    fn sign_zone_unchecked(
        &self,
        zone: &Zone,
        serial: Option<u32>,
        now: u64,
    ) -> Result<Zone, SignError> {
        let nsec3 = self
            .policy()
            .nsec3
            .as_ref()
            .map(|p| Nsec3::for_zone(zone, p));
        let bare = self.bare(zone, serial, nsec3.as_ref())?;
        let chain = match nsec3 {
            Some(n) => {
                let threads = self.policy().signing_threads.clamp(1, 64);
                let hashes = n.hashes(&bare, threads);
                Chain::Nsec3(n, hashes)
            }
            None => Chain::Nsec(
                bare.node_ids()
                    .filter(|&id| nsec::has_nsec(&bare, id))
                    .collect(),
            ),
        };
        let chain_len = match &chain {
            Chain::Nsec(owners) => owners.len(),
            Chain::Nsec3(_, hashes) => hashes.len(),
        };
        self.progress.start((bare.node_count() + chain_len) as u64);
        let out = self.sign_streamed(&bare, &chain, now);
        self.progress.stop();
        out
    }

    /// `zone` without the records the signer makes, with the SOA serial
    /// `serial`, the keys' records and the NSEC3PARAM in. When few names
    /// outside the apex hold such records (a zone loaded or transferred
    /// unsigned), it is `zone`'s next version, sharing its base: no second
    /// copy of the zone is made. Otherwise (a zone signed already) a copy
    /// without them is built.
    pub(crate) fn bare(
        &self,
        zone: &Zone,
        serial: Option<u32>,
        nsec3: Option<&Nsec3>,
    ) -> Result<Zone, SignError> {
        let own = self.own_cds_rdatas();
        let ours =
            |rtype: Rtype, rdata: &[u8]| is_signer_type(rtype) || self.owns_cds(rtype, rdata, &own);
        let most = zone.node_count() / BARE_CHANGE_SHARE + BARE_CHANGE_FEW;
        if let Some(changes) = self.bare_change(zone, serial, nsec3, &ours, most) {
            // A change the zone refuses (a key record twice, say) is
            // left to the copy, which reports it as the builder does.
            if let Ok(bare) = zone.apply(&changes) {
                return Ok(bare);
            }
        }
        self.bare_copy(zone, serial, nsec3, &ours)
    }

    /// The change that makes `zone` bare, or None when more than `most`
    /// names outside the apex hold the signer's records.
    pub(crate) fn bare_change(
        &self,
        zone: &Zone,
        serial: Option<u32>,
        nsec3: Option<&Nsec3>,
        ours: &impl Fn(Rtype, &[u8]) -> bool,
        most: usize,
    ) -> Option<Changeset> {
        let (origin, class) = (zone.origin().to_name(), zone.class());
        let mut removed: Vec<Record> = Vec::new();
        let mut names = 0usize;
        for id in zone.node_ids() {
            let node = zone.node(id);
            let before = removed.len();
            for set in node.rrsets() {
                if set.rtype() == Rtype::SOA {
                    continue;
                }
                for rdata in set.rdatas().filter(|r| ours(set.rtype(), r)) {
                    removed.push(Record {
                        owner: node.owner().to_name(),
                        class,
                        rtype: set.rtype(),
                        ttl: set.ttl(),
                        rdata: rdata.into(),
                    });
                }
            }
            if id != zone.apex_id() && removed.len() > before {
                names += 1;
                if names > most {
                    return None;
                }
            }
        }
        let soa = zone.soa();
        let soa_from = Record {
            owner: origin.clone(),
            class,
            rtype: Rtype::SOA,
            ttl: soa.ttl(),
            rdata: soa.rdatas().next()?.into(),
        };
        let mut soa_to = soa_from.clone();
        if let Some(serial) = serial {
            lode_zonedb::set_soa_serial(&mut soa_to, serial);
        }
        let mut added = self.key_records(zone);
        added.extend(nsec3.map(|n| n.param_record(zone)));
        Some(Changeset {
            soa_from,
            soa_to,
            removed,
            added,
        })
    }

    /// [`Signer::bare`] by a copy of the zone.
    pub(crate) fn bare_copy(
        &self,
        zone: &Zone,
        serial: Option<u32>,
        nsec3: Option<&Nsec3>,
        ours: &impl Fn(Rtype, &[u8]) -> bool,
    ) -> Result<Zone, SignError> {
        let mut b = OrderedBuilder::new(zone.origin().to_name(), zone.class());
        let mut ids = zone.node_ids();
        // The apex: its records, then the keys' and the NSEC3PARAM (the
        // last TTL written wins, as in a zone file).
        let apex_id = ids.next().unwrap_or(zone.apex_id());
        let apex = zone.node(apex_id);
        let mut records: Vec<Record> = Vec::new();
        for set in apex.rrsets() {
            for rdata in set.rdatas().filter(|r| !ours(set.rtype(), r)) {
                let mut record = Record {
                    owner: zone.origin().to_name(),
                    class: zone.class(),
                    rtype: set.rtype(),
                    ttl: set.ttl(),
                    rdata: rdata.into(),
                };
                if let (Some(serial), Rtype::SOA) = (serial, set.rtype()) {
                    lode_zonedb::set_soa_serial(&mut record, serial);
                }
                records.push(record);
            }
        }
        records.extend(self.key_records(zone));
        records.extend(nsec3.map(|n| n.param_record(zone)));
        records.sort_by_key(|r| r.rtype);
        b.node(apex.owner());
        for group in records.chunk_by(|a, b| a.rtype == b.rtype) {
            let ttl = group.last().map_or(0, |r| r.ttl);
            b.rrset(group[0].rtype, ttl, group.iter().map(|r| &*r.rdata))
                .map_err(invalid)?;
        }
        for id in ids {
            let node = zone.node(id);
            b.node(node.owner());
            for set in node.rrsets() {
                let kept: Vec<&[u8]> = set.rdatas().filter(|r| !ours(set.rtype(), r)).collect();
                if kept.len() == set.len() {
                    b.rrset_stored(set).map_err(invalid)?;
                } else if !kept.is_empty() {
                    b.rrset(set.rtype(), set.ttl(), kept.iter().copied())
                        .map_err(invalid)?;
                }
            }
        }
        b.finish().map_err(invalid)
    }

    /// Signs `bare` with its `chain` into a new zone, batch by batch.
    fn sign_streamed(&self, bare: &Zone, chain: &Chain, now: u64) -> Result<Zone, SignError> {
        let validity = self.validity(now);
        let threads = self.policy().signing_threads.clamp(1, 64);
        let mut b = OrderedBuilder::new(bare.origin().to_name(), bare.class());
        let mut ids = bare.node_ids().peekable();
        let mut next_chain = 0usize;
        let mut done: Option<(Vec<Item>, Vec<Made>)> = None;
        loop {
            let batch = self.next_batch(
                bare,
                chain,
                &mut ids,
                &mut next_chain,
                threads * BATCH_PER_THREAD,
            );
            if batch.is_empty() && done.is_none() {
                break;
            }
            // The batch is shared out in small parts as threads come free
            // (names cost from nothing to several signatures); this thread
            // writes the previous batch first, then signs too: `threads`
            // are busy throughout, none waits on an unlucky share.
            let next = AtomicUsize::new(0);
            let sign_parts = || {
                let mut parts = Vec::new();
                loop {
                    let at = next.fetch_add(PART, Ordering::Relaxed);
                    let Some(items) = batch.get(at..(at + PART).min(batch.len())) else {
                        break;
                    };
                    if items.is_empty() {
                        break;
                    }
                    parts.push((at, self.sign_items(bare, chain, items, validity)));
                }
                parts
            };
            let (made, written) = std::thread::scope(|s| {
                let helpers: Vec<_> = (1..threads).map(|_| s.spawn(sign_parts)).collect();
                let written = match done.take() {
                    Some((items, made)) => self.write(&mut b, bare, chain, &items, made),
                    None => Ok(()),
                };
                let mut parts = sign_parts();
                for h in helpers {
                    parts.extend(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
                }
                parts.sort_unstable_by_key(|p| p.0);
                let made: Vec<Made> = parts.into_iter().flat_map(|p| p.1).collect();
                (made, written)
            });
            written?;
            if !batch.is_empty() {
                done = Some((batch, made));
            }
        }
        b.finish().map_err(invalid)
    }

    /// The next names to sign, at most `max`: the unsigned zone's nodes and
    /// the NSEC3 owners merged in canonical order.
    fn next_batch(
        &self,
        bare: &Zone,
        chain: &Chain,
        ids: &mut std::iter::Peekable<impl Iterator<Item = NodeId>>,
        next_chain: &mut usize,
        max: usize,
    ) -> Vec<Item> {
        let mut batch = Vec::with_capacity(max);
        let hashes: &[([u8; 20], NodeId)] = match chain {
            Chain::Nsec3(_, h) => h,
            Chain::Nsec(owners) => {
                // The owners come in the names' order (node ids need not:
                // a version's changed names have theirs apart).
                while batch.len() < max {
                    let Some(id) = ids.next() else { break };
                    let j = *next_chain;
                    batch.push(match owners.get(j) == Some(&id) {
                        true => {
                            *next_chain += 1;
                            Item::Both(id, j)
                        }
                        false => Item::Node(id),
                    });
                }
                return batch;
            }
        };
        // Keys below the origin: a node's is read as it is stored.
        let mut node_key = [0u8; MAX_KEY_LEN];
        let mut hash_key = KeyBuf::new();
        let origin_len = {
            let mut k = KeyBuf::new();
            bare.origin().write_key(&mut k);
            k.as_slice().len()
        };
        // The hash whose owner's key is in `hash_key` (many names come
        // between two hashes), and whether it has an owner.
        let (mut keyed, mut has_owner) = (None, false);
        while batch.len() < max {
            let j = *next_chain;
            if j < hashes.len() && keyed != Some(j) {
                has_owner = hashed_owner(&hashes[j].0, bare.origin())
                    .map(|o| o.as_ref().write_key(&mut hash_key))
                    .is_some();
                keyed = Some(j);
            }
            let hash = j < hashes.len() && has_owner;
            let item = match (ids.peek().copied(), hash) {
                (None, false) => break,
                (Some(id), false) => Item::Node(id),
                (None, true) => Item::Hash(j),
                (Some(id), true) => {
                    let n = bare.node(id).relative_key(&mut node_key);
                    let hash_rel = hash_key.as_slice().get(origin_len..).unwrap_or(&[]);
                    match node_key[..n].cmp(hash_rel) {
                        std::cmp::Ordering::Less => Item::Node(id),
                        std::cmp::Ordering::Greater => Item::Hash(j),
                        std::cmp::Ordering::Equal => Item::Both(id, j),
                    }
                }
            };
            match item {
                Item::Node(_) => {
                    ids.next();
                }
                Item::Hash(_) => *next_chain += 1,
                Item::Both(..) => {
                    ids.next();
                    *next_chain += 1;
                }
            }
            batch.push(item);
        }
        batch
    }

    /// Signs names (one thread's share of a batch).
    fn sign_items(
        &self,
        bare: &Zone,
        chain: &Chain,
        items: &[Item],
        validity: Validity,
    ) -> Vec<Made> {
        let class = bare.class();
        let mut scratch = Vec::new();
        let mut counted = 0u64;
        let mut count = |n: u64| {
            counted += n;
            if counted >= PROGRESS_STEP {
                self.progress.add(counted);
                counted = 0;
            }
        };
        let out = items
            .iter()
            .map(|&item| {
                let mut made = Made::default();
                let (node, hash) = match item {
                    Item::Node(id) => (Some(id), None),
                    Item::Hash(j) => (None, Some(j)),
                    Item::Both(id, j) => (Some(id), Some(j)),
                };
                if node.is_some() {
                    count(1);
                }
                // The node read once: its shadow too.
                let read = node.map(|id| (id, bare.node(id)));
                if let Some((id, n)) = read.filter(|(_, n)| !n.is_shadowed()) {
                    // The node read once for all its RRsets.
                    let cut = id != bare.apex_id() && n.is_delegation();
                    for set in n.rrsets() {
                        if !nsec::is_signed_at(cut, set.rtype()) {
                            continue;
                        }
                        let rdatas: Vec<&[u8]> = set.rdatas().collect();
                        let target = RRsetRef {
                            owner: n.owner(),
                            rtype: set.rtype(),
                            class,
                            ttl: set.ttl(),
                        };
                        self.sign_rdatas(&target, &rdatas, validity, &mut scratch, &mut made.sigs);
                        made.sig_ttl = set.ttl();
                    }
                    if let (Some(at), Chain::Nsec(owners)) = (hash, chain) {
                        let next = owners.get(at + 1).copied().unwrap_or(bare.apex_id());
                        made.chain = Some(nsec::nsec_rdata(bare, id, next));
                        count(1);
                        let target = chain_target(bare, n.owner(), Rtype::NSEC);
                        self.sign_chain(&target, &mut made, validity, &mut scratch);
                    }
                }
                if let (Some(j), Chain::Nsec3(params, hashes)) = (hash, chain) {
                    count(1);
                    let (h, id) = &hashes[j];
                    let next = &hashes[(j + 1) % hashes.len()].0;
                    made.chain = Some(params.rdata(next, &params.bitmap(bare, *id)));
                    let owner = hashed_owner(h, bare.origin()).unwrap_or_else(|| {
                        let mut o = NameBuf::new();
                        o.set(bare.origin());
                        o
                    });
                    let target = chain_target(bare, owner.as_ref(), Rtype::NSEC3);
                    self.sign_chain(&target, &mut made, validity, &mut scratch);
                }
                made
            })
            .collect();
        self.progress.add(counted);
        out
    }

    /// Signs the chain record in `made`.
    fn sign_chain(
        &self,
        target: &RRsetRef<'_>,
        made: &mut Made,
        validity: Validity,
        scratch: &mut Vec<u8>,
    ) {
        let rdata = made.chain.as_deref().unwrap_or(&[]);
        self.sign_rdatas(target, &[rdata], validity, scratch, &mut made.sigs);
        made.sig_ttl = target.ttl;
    }

    /// Writes signed names into the signed zone.
    fn write(
        &self,
        b: &mut OrderedBuilder,
        bare: &Zone,
        chain: &Chain,
        items: &[Item],
        made: Vec<Made>,
    ) -> Result<(), SignError> {
        let chain_type = match chain {
            Chain::Nsec(_) => Rtype::NSEC,
            Chain::Nsec3(..) => Rtype::NSEC3,
        };
        let negative_ttl = bare.negative_ttl();
        for (&item, made) in items.iter().zip(made) {
            let hashed: Name;
            let node = match item {
                Item::Node(id) | Item::Both(id, _) => Some(bare.node(id)),
                Item::Hash(_) => None,
            };
            match (&node, item, chain) {
                (Some(n), ..) => b.node(n.owner()),
                (None, Item::Hash(j), Chain::Nsec3(_, hashes)) => {
                    hashed = hashed_owner(&hashes[j].0, bare.origin())
                        .map_or_else(|| bare.origin().to_name(), |o| o.as_ref().to_name());
                    b.node(hashed.as_ref());
                }
                (None, ..) => continue,
            }
            // Its RRsets, and the chain's and the signatures' in type order.
            let mut extra = [
                (Rtype::RRSIG, made.sig_ttl, made.sigs.as_slice()),
                (chain_type, negative_ttl, made.chain.as_slice()),
            ];
            extra.sort_by_key(|e| e.0);
            let mut extra = extra.into_iter().filter(|e| !e.2.is_empty()).peekable();
            let sets = node.iter().flat_map(|n| n.rrsets());
            for set in sets {
                while let Some((t, ttl, rdatas)) = extra.next_if(|e| e.0 < set.rtype()) {
                    b.rrset(t, ttl, rdatas.iter().map(|r| &r[..]))
                        .map_err(invalid)?;
                }
                b.rrset_stored(set).map_err(invalid)?;
            }
            for (t, ttl, rdatas) in extra {
                b.rrset(t, ttl, rdatas.iter().map(|r| &r[..]))
                    .map_err(invalid)?;
            }
        }
        Ok(())
    }
}

/// The chain record at `owner` (NSEC or NSEC3, the negative TTL), to sign.
fn chain_target<'a>(zone: &Zone, owner: NameRef<'a>, rtype: Rtype) -> RRsetRef<'a> {
    RRsetRef {
        owner,
        rtype,
        class: zone.class(),
        ttl: zone.negative_ttl(),
    }
}

fn invalid(p: lode_zonedb::Problem) -> SignError {
    SignError::Apply(ApplyError::Invalid(vec![p]))
}
