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
//! The chain is checked whole every time (no cryptography: hashing and
//! comparing); the signatures whole, or only those of the names a change
//! touched (`only`). O(zone); Knot does the same work.

use lode_wire::nsec3::{hashed_owner, Nsec3Params};
use lode_wire::{Name, NameRef, Rtype};
use lode_zonedb::{NodeId, Zone};
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

/// Checks `zone` (signed elsewhere) at time `now`: the chain whole, the
/// signatures of every name, or only of `only` (the names a change touched;
/// the apex's are always checked). The first problem found is the error.
pub fn validate(zone: &Zone, now: u64, only: Option<&[Name]>) -> Result<(), String> {
    let keys: Vec<Dnskey> = zone
        .apex_rrset(Rtype::DNSKEY)
        .ok_or("no DNSKEY at the apex")?
        .rdatas()
        .filter(|r| r.len() > 4 && r[2] == 3)
        .map(|r| Dnskey {
            tag: key_tag(r),
            algorithm: r[3],
            sep: r[1] & 1 == 1,
            public: r[4..].to_vec(),
        })
        .collect();
    if keys.is_empty() {
        return Err("no usable DNSKEY at the apex".into());
    }
    match Nsec3::of_zone(zone) {
        Some(n) => nsec3_chain(zone, &n)?,
        None => nsec_chain(zone)?,
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
