//! `dnssec-validation` (Knot DNS 3.2's): a zone signed elsewhere checked
//! before a new version of it is served — at load, after AXFR and IXFR in,
//! after a zone file read again, after an UPDATE.
//!
//! The checks are Knot's:
//! - every RRset that is to be signed (RFC 4035 §2: authoritative, at a
//!   delegation only DS and NSEC) has a signature, valid at `now`, by one of
//!   the apex's DNSKEYs that verifies (algorithms 8, 13, 14, 15);
//! - the DNSKEY RRset has one by a key with the SEP flag (when there is one);
//! - NSEC: each name that owns data has its NSEC with the right type bitmap,
//!   linked to the next such name (wrapping to the apex);
//! - NSEC3 (the zone has an NSEC3PARAM): each name that is to be hashed
//!   (opt-out: insecure delegations need not) has its NSEC3 with the
//!   right bitmap; the NSEC3 records of the zone's parameters are linked in
//!   hash order. NSEC3 records of other parameters are ignored.
//!
//! A whole version (load, reload, AXFR) is checked whole: the chain (no
//! cryptography: hashing and comparing) and every signature, on every
//! core — O(zone), as Knot does. A change (`only`: the names it touched)
//! is checked where it can have changed something: the signatures of the
//! touched names and the apex, the chain at those names, their ancestors
//! (NSEC3) and the records before them — O(change).

use lode_wire::nsec3::{hashed_owner, Nsec3Params};
use lode_wire::{Name, NameRef, Rtype};
use std::collections::BTreeSet;

use lode_zonedb::{nsec3_key, Lookup, NodeId, Zone};
use ring::signature::{
    RsaPublicKeyComponents, UnparsedPublicKey, ECDSA_P256_SHA256_FIXED, ECDSA_P384_SHA384_FIXED,
    ED25519, RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY,
};

use crate::key::key_tag;
use crate::nsec::{self, nsec_record};
use crate::nsec3::Nsec3;
use crate::rrsig::{rrsig_info, signed_data, RRsetRef};

/// A DNSKEY of the zone's apex.
struct Dnskey {
    tag: u16,
    algorithm: u8,
    sep: bool,
    public: Vec<u8>,
}

/// The zone keys (protocol 3) of DNSKEY RDATAs.
fn dnskeys<'a>(rdatas: impl Iterator<Item = &'a [u8]>) -> Vec<Dnskey> {
    rdatas
        .filter(|r| r.len() > 4 && r[2] == 3)
        .map(|r| Dnskey {
            tag: key_tag(r),
            algorithm: r[3],
            sep: r[1] & 1 == 1,
            public: r[4..].to_vec(),
        })
        .collect()
}

/// Checks `zone` (signed elsewhere) at time `now`: the chain whole, the
/// signatures of every name, or only of `only` (the names a change touched;
/// the apex's are always checked). The first problem found is the error.
pub fn validate(zone: &Zone, now: u64, only: Option<&[Name]>) -> Result<(), String> {
    let keys = dnskeys(
        zone.apex_rrset(Rtype::DNSKEY)
            .ok_or("no DNSKEY at the apex")?
            .rdatas(),
    );
    if keys.is_empty() {
        return Err("no usable DNSKEY at the apex".into());
    }
    match (Nsec3::of_zone(zone), only) {
        (Some(n), Some(names)) => {
            if !nsec3_chain_at(zone, &n, names)? {
                nsec3_chain(zone, &n)?
            }
        }
        (Some(n), None) => nsec3_chain(zone, &n)?,
        (None, Some(names)) => nsec_chain_at(zone, names)?,
        (None, None) => nsec_chain(zone)?,
    }
    let ids: Vec<NodeId> = match only {
        None => zone.node_ids().collect(),
        Some(names) => std::iter::once(zone.apex_id())
            .chain(names.iter().filter_map(|n| zone.find(n.as_ref())))
            .collect(),
    };
    // The signatures on every core (a whole zone is millions of them).
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(ids.len().div_ceil(1024))
        .max(1);
    let chunk = ids.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = ids
            .chunks(chunk)
            .map(|part| {
                let keys = &keys;
                s.spawn(move || {
                    let mut data = Vec::new();
                    part.iter()
                        .try_for_each(|&id| signatures(zone, id, keys, now, &mut data))
                })
            })
            .collect();
        // The first problem in zone order.
        handles.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or_else(|_| Err("validation thread panicked".into()))
        })
    })
}

/// Every RRset of the node that is to be signed has a signature that
/// verifies; the DNSKEY RRset one by a SEP key.
fn signatures(
    zone: &Zone,
    id: NodeId,
    keys: &[Dnskey],
    now: u64,
    data: &mut Vec<u8>,
) -> Result<(), String> {
    let node = zone.node(id);
    let owner = node.owner();
    let sigs: Vec<&[u8]> = node
        .rrset(Rtype::RRSIG)
        .map(|s| s.rdatas().collect())
        .unwrap_or_default();
    let any_sep = keys.iter().any(|k| k.sep);
    for set in node.rrsets() {
        let t = set.rtype();
        if !nsec::is_signed(zone, id, t) {
            continue;
        }
        let by_sep = t == Rtype::DNSKEY && any_sep;
        let good = sigs.iter().any(|sig| {
            let Some(info) = rrsig_info(sig).filter(|i| i.covered == t) else {
                return false;
            };
            let current = u64::from(info.inception) <= now && now < u64::from(info.expiration);
            let key = keys.iter().find(|k| {
                k.tag == info.key_tag && k.algorithm == info.algorithm && (k.sep || !by_sep)
            });
            let Some(key) = key.filter(|_| current) else {
                return false;
            };
            let Ok((_, signature)) = NameRef::split_from(&sig[18..]) else {
                return false;
            };
            let head = &sig[..sig.len() - signature.len()];
            let rrset = RRsetRef {
                owner,
                rtype: t,
                class: zone.class(),
                // The original TTL the signature covers.
                ttl: u32::from_be_bytes([sig[4], sig[5], sig[6], sig[7]]),
            };
            signed_data(&rrset, set.rdatas(), head, data);
            verify(key, data, signature)
        });
        if !good {
            let by = if by_sep {
                " by a key with the SEP flag"
            } else {
                ""
            };
            return Err(format!(
                "{owner} {t}: no valid signature{by} (of {} RRSIGs at the name)",
                sigs.len()
            ));
        }
    }
    Ok(())
}

/// The RRSIG among `sigs` that verifies the RRset `set` (its RDATAs
/// `rdatas`) at `at` with one of the DNSKEYs `keys` having the SEP flag
/// (any key when `sep` is false): its key tag.
pub(crate) fn verified_by(
    set: &RRsetRef<'_>,
    rdatas: &[&[u8]],
    sigs: &[&[u8]],
    keys: &[&[u8]],
    sep: bool,
    at: u64,
) -> Option<u16> {
    let keys: Vec<Dnskey> = dnskeys(keys.iter().copied())
        .into_iter()
        .filter(|k| k.sep || !sep)
        .collect();
    let mut data = Vec::new();
    sigs.iter().find_map(|sig| {
        let info = rrsig_info(sig).filter(|i| i.covered == set.rtype)?;
        let current = u64::from(info.inception) <= at && at < u64::from(info.expiration);
        let key = keys
            .iter()
            .find(|k| k.tag == info.key_tag && k.algorithm == info.algorithm)
            .filter(|_| current)?;
        let (_, signature) = NameRef::split_from(sig.get(18..)?).ok()?;
        let head = &sig[..sig.len() - signature.len()];
        let covered = RRsetRef {
            ttl: u32::from_be_bytes([sig[4], sig[5], sig[6], sig[7]]),
            ..*set
        };
        signed_data(&covered, rdatas.iter().copied(), head, &mut data);
        verify(key, &data, signature).then_some(info.key_tag)
    })
}

/// True when `signature` of `data` verifies with `key`.
fn verify(key: &Dnskey, data: &[u8], signature: &[u8]) -> bool {
    let mut point = vec![4];
    point.extend_from_slice(&key.public);
    match key.algorithm {
        13 => UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
            .verify(data, signature)
            .is_ok(),
        14 => UnparsedPublicKey::new(&ECDSA_P384_SHA384_FIXED, &point)
            .verify(data, signature)
            .is_ok(),
        15 => UnparsedPublicKey::new(&ED25519, &key.public)
            .verify(data, signature)
            .is_ok(),
        8 => {
            // RFC 3110: exponent length (one byte, or zero and two), exponent, modulus.
            let p = &key.public;
            let (len, at) = match p.first() {
                Some(0) if p.len() > 3 => (usize::from(u16::from_be_bytes([p[1], p[2]])), 3),
                Some(&l) => (usize::from(l), 1),
                None => return false,
            };
            let Some((e, n)) = p
                .get(at..)
                .filter(|r| r.len() > len)
                .map(|r| r.split_at(len))
            else {
                return false;
            };
            RsaPublicKeyComponents { n, e }
                .verify(
                    &RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY,
                    data,
                    signature,
                )
                .is_ok()
        }
        _ => false,
    }
}

/// The NSEC chain: each name owning data has the NSEC the zone calls for
/// (the next name compared without case).
fn nsec_chain(zone: &Zone) -> Result<(), String> {
    let owners: Vec<NodeId> = zone
        .node_ids()
        .filter(|&id| nsec::has_nsec(zone, id))
        .collect();
    for (i, &id) in owners.iter().enumerate() {
        let next = owners.get(i + 1).copied().unwrap_or(zone.apex_id());
        nsec_is(zone, id, next)?;
    }
    Ok(())
}

/// The NSEC chain where a change touched `names`: the NSEC of each of them
/// that owns data and of the NSEC owner before each (whose next name may
/// have changed). Bitmaps change only at touched names and links only
/// before them, so with the previous version valid this is the whole
/// chain's check.
fn nsec_chain_at(zone: &Zone, names: &[Name]) -> Result<(), String> {
    let mut owners: BTreeSet<NodeId> = BTreeSet::new();
    owners.insert(zone.apex_id());
    for name in names {
        match zone.lookup(name.as_ref()) {
            Lookup::Found(id) => {
                if nsec::has_nsec(zone, id) {
                    owners.insert(id);
                }
                owners.insert(nsec::prev_owner(zone, id));
            }
            Lookup::NotFound { predecessor, .. } => {
                let before = zone
                    .rfind_from(predecessor, |n| nsec::has_nsec(zone, n.id()))
                    .unwrap_or(zone.apex_id());
                owners.insert(before);
            }
        }
    }
    for id in owners {
        nsec_is(zone, id, nsec::next_owner(zone, id))?;
    }
    Ok(())
}

/// The NSEC at `id` is the one the chain wants (to `next`, with its types;
/// the next name compared without case).
fn nsec_is(zone: &Zone, id: NodeId, next: NodeId) -> Result<(), String> {
    let want = nsec_record(zone, id, next).rdata;
    let node = zone.node(id);
    let have = node
        .rrset(Rtype::NSEC)
        .map(|s| next_name_lowered(s.first()));
    if have.as_deref() != Some(&next_name_lowered(&want)[..]) {
        return Err(format!(
            "{}: {} (the NSEC chain wants one to {} with its types)",
            node.owner(),
            if have.is_some() {
                "a wrong NSEC"
            } else {
                "no NSEC"
            },
            zone.node(next).owner()
        ));
    }
    Ok(())
}

/// NSEC RDATA with its next name in lower case (the bitmap as it is).
fn next_name_lowered(rdata: &[u8]) -> Vec<u8> {
    let mut v = rdata.to_vec();
    if let Ok((_, rest)) = NameRef::split_from(rdata) {
        let name_len = rdata.len() - rest.len();
        v[..name_len].make_ascii_lowercase();
    }
    v
}

/// The NSEC3 chain of the zone's NSEC3PARAM: each hashed name has its
/// NSEC3 with the right bitmap, and the records are linked in hash order.
fn nsec3_chain(zone: &Zone, n: &Nsec3) -> Result<(), String> {
    let ours = |rdata: &[u8]| {
        Nsec3Params::parse(rdata).is_some_and(|p| p.iterations == n.iterations && p.salt == n.salt)
    };
    // (owner, rdata) of the NSEC3 records of these parameters, hash order
    // (base32hex keeps the order of the hashes).
    let mut records: Vec<(Name, Vec<u8>)> = zone
        .records()
        .filter(|r| r.rtype == Rtype::NSEC3 && ours(&r.rdata))
        .map(|r| (r.owner.to_lowercase(), r.rdata.to_vec()))
        .collect();
    records.sort_by(|a, b| a.0.as_ref().canonical_cmp(&b.0.as_ref()));
    let hash_end = 6 + n.salt.len() + 20;
    for id in zone.node_ids().filter(|&id| n.is_hashed(zone, id)) {
        let node = zone.node(id);
        let name = node.owner();
        let owner = hashed_owner(&n.hash(name), zone.origin()).map(|b| b.as_ref().to_name());
        let found = records
            .binary_search_by(|r| {
                let o = owner.as_ref().map(|o| o.as_ref());
                o.map_or(std::cmp::Ordering::Less, |o| r.0.as_ref().canonical_cmp(&o))
            })
            .ok()
            .map(|i| &records[i].1);
        let want = n.bitmap(zone, id);
        match found {
            Some(rdata) if rdata.get(hash_end..) == Some(&want[..]) => {}
            Some(_) => return Err(format!("{name}: its NSEC3 has the wrong type bitmap")),
            None => return Err(format!("{name}: no NSEC3")),
        }
    }
    for (i, (owner, rdata)) in records.iter().enumerate() {
        let next = &records[(i + 1) % records.len()].0;
        let hash: Option<[u8; 20]> = rdata
            .get(hash_end - 20..hash_end)
            .and_then(|h| h.try_into().ok());
        let linked = rdata.get(hash_end - 21) == Some(&20)
            && hash
                .and_then(|h| hashed_owner(&h, zone.origin()))
                .is_some_and(|o| o.as_ref() == next.as_ref());
        if !linked {
            return Err(format!(
                "{owner}: NSEC3 not linked to the next one in hash order ({next})"
            ));
        }
    }
    Ok(())
}

/// The NSEC3 chain of the zone's NSEC3PARAM where a change touched
/// `names`: the NSEC3 of each touched name and of its ancestors (empty
/// non-terminals come and go with a name) has the right bitmap, and the
/// NSEC3 records at or before each of their hashes, and the one before
/// that, link to the next in hash order. Ok(false) when it cannot tell
/// here (records of other parameters met, or no NSEC3 at all): the caller
/// checks the chain whole.
fn nsec3_chain_at(zone: &Zone, n: &Nsec3, names: &[Name]) -> Result<bool, String> {
    let hash_end = 6 + n.salt.len() + 20;
    let origin = zone.origin();
    let mut hashes: BTreeSet<[u8; 20]> = BTreeSet::new();
    for name in names {
        if name.as_ref().parent().is_some_and(|p| p == origin) {
            // An NSEC3 owner the change touched.
            hashes.extend(crate::nsec3::owner_hash(name.as_ref()));
        }
        let mut at = Some(name.as_ref());
        while let Some(a) = at.filter(|a| a.ends_with(&origin)) {
            let h = n.hash(a);
            if hashes.insert(h) {
                if let Some(id) = zone.find(a).filter(|&id| n.is_hashed(zone, id)) {
                    let Some(rdata) = nsec3_rdata(zone, n, &h) else {
                        return Err(format!("{a}: no NSEC3"));
                    };
                    if rdata.get(hash_end..) != Some(&n.bitmap(zone, id)[..]) {
                        return Err(format!("{a}: its NSEC3 has the wrong type bitmap"));
                    }
                }
            }
            at = a.parent().filter(|_| a != origin);
        }
    }
    for h in &hashes {
        let Some(at) = zone.nsec3_covering(&nsec3_key(h)) else {
            return Ok(false);
        };
        let before = zone
            .node_before(at)
            .and_then(|b| zone.nsec3_at_or_before(b))
            .or_else(|| zone.nsec3_at_or_before(zone.last_id()));
        for id in std::iter::once(at).chain(before) {
            if !nsec3_linked(zone, n, id)? {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// The RDATA of the NSEC3 of hash `h` of the parameters `n`, if there is one.
fn nsec3_rdata(zone: &Zone, n: &Nsec3, h: &[u8; 20]) -> Option<Vec<u8>> {
    let owner = hashed_owner(h, zone.origin())?;
    let node = zone.node(zone.find(owner.as_ref())?);
    let set = node.rrset(Rtype::NSEC3)?;
    set.rdatas().find(|r| is_of(n, r)).map(<[u8]>::to_vec)
}

/// True when NSEC3 RDATA is of the parameters `n`.
fn is_of(n: &Nsec3, rdata: &[u8]) -> bool {
    Nsec3Params::parse(rdata).is_some_and(|p| p.iterations == n.iterations && p.salt == n.salt)
}

/// Ok(true) when the NSEC3 at `id` links to the next NSEC3 owner in hash
/// order (wrapping around); Ok(false) when records of other parameters are
/// there (not decided here); Err when the link is wrong.
fn nsec3_linked(zone: &Zone, n: &Nsec3, id: NodeId) -> Result<bool, String> {
    let node = zone.node(id);
    let Some(set) = node.rrset(Rtype::NSEC3) else {
        return Ok(false);
    };
    if set.len() != 1 || !is_of(n, set.first()) {
        return Ok(false);
    }
    let next = zone.nsec3_after(id).unwrap_or(id);
    let next_node = zone.node(next);
    if next_node
        .rrset(Rtype::NSEC3)
        .is_some_and(|s| s.rdatas().any(|r| !is_of(n, r)))
    {
        return Ok(false);
    }
    let hash_end = 6 + n.salt.len() + 20;
    let rdata = set.first();
    let linked = rdata.get(hash_end - 21) == Some(&20)
        && rdata
            .get(hash_end - 20..hash_end)
            .and_then(|h| <[u8; 20]>::try_from(h).ok())
            .and_then(|h| hashed_owner(&h, zone.origin()))
            .is_some_and(|o| o.as_ref().canonical_cmp(&next_node.owner()).is_eq());
    if !linked {
        return Err(format!(
            "{}: NSEC3 not linked to the next one in hash order ({})",
            node.owner(),
            next_node.owner()
        ));
    }
    Ok(true)
}
