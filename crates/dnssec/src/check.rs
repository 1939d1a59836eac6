//! A signed zone checked whole, independently of how it was signed: every
//! signature that is due verified with the public keys, no signature where
//! none belongs, and the NSEC or NSEC3 chain exactly the one the zone's
//! names call for. Used by the tests and the fuzz target (a version the
//! signer made must always pass); O(zone), not for the serving path.
//! Signatures of RSA keys are not verified (their presence is).

use lode_wire::{NameRef, Rtype};
use lode_zonedb::Zone;
use ring::signature::{
    UnparsedPublicKey, ECDSA_P256_SHA256_FIXED, ECDSA_P384_SHA384_FIXED, ED25519,
};

use crate::nsec3::Nsec3;
use crate::rrsig::{rrsig_info, signed_data, RRsetRef};
use crate::{nsec, Algorithm, Signer};

/// (owner's canonical key, RDATA)
type KeyedRdata = (Box<[u8]>, Box<[u8]>);

/// Checks `zone` as signed by `signer`, signatures valid at `at`.
pub fn verify(zone: &Zone, signer: &Signer, at: u64) -> Result<(), String> {
    let dnskeys: Vec<Vec<u8>> = zone
        .apex_rrset(Rtype::DNSKEY)
        .ok_or("no DNSKEY")?
        .rdatas()
        .map(|r| r.to_vec())
        .collect();
    for k in signer.published() {
        if !dnskeys.contains(&k.dnskey_rdata()) {
            return Err(format!("DNSKEY of key {} missing", k.tag()));
        }
    }
    // NSEC3: the records exactly those of the chain made from scratch.
    let nsec3 = Nsec3::of_zone(zone);
    if let Some(n) = &nsec3 {
        let mut want: Vec<KeyedRdata> = n
            .chain(zone)
            .into_iter()
            .map(|r| (r.owner.key(), r.rdata))
            .collect();
        let mut have: Vec<KeyedRdata> = zone
            .records()
            .filter(|r| r.rtype == Rtype::NSEC3)
            .map(|r| (r.owner.key(), r.rdata))
            .collect();
        want.sort();
        have.sort();
        if want != have {
            let extra: Vec<_> = have.iter().filter(|h| !want.contains(h)).collect();
            let missing: Vec<_> = want.iter().filter(|w| !have.contains(w)).collect();
            return Err(format!(
                "NSEC3 chain: {} records, {} expected; extra {extra:?}, missing {missing:?}",
                have.len(),
                want.len(),
            ));
        }
    }
    let owners: Vec<_> = zone
        .node_ids()
        .filter(|&id| nsec3.is_none() && nsec::has_nsec(zone, id))
        .collect();
    let mut data = Vec::new();
    for id in zone.node_ids() {
        let node = zone.node(id);
        let owner = node.owner().to_name();
        let sigs: Vec<Vec<u8>> = node
            .rrset(Rtype::RRSIG)
            .map(|s| s.rdatas().map(|r| r.to_vec()).collect())
            .unwrap_or_default();
        // NSEC: present exactly where due, pointing at the next owner.
        let want_nsec = owners.iter().position(|&o| o == id).map(|i| {
            let next = owners.get(i + 1).copied().unwrap_or(zone.apex_id());
            nsec::nsec_record(zone, id, next).rdata
        });
        let have_nsec: Option<Vec<Box<[u8]>>> = node
            .rrset(Rtype::NSEC)
            .map(|s| s.rdatas().map(Box::from).collect());
        match (&want_nsec, &have_nsec) {
            (None, None) => {}
            (Some(w), Some(h)) if h.len() == 1 && h[0] == *w => {}
            _ => {
                return Err(format!(
                    "{owner}: NSEC {have_nsec:?}, expected {want_nsec:?}"
                ))
            }
        }
        for set in node.rrsets() {
            let t = set.rtype();
            if t == Rtype::RRSIG {
                continue;
            }
            let covering: Vec<&Vec<u8>> = sigs
                .iter()
                .filter(|s| rrsig_info(s).is_some_and(|i| i.covered == t))
                .collect();
            if !nsec::is_signed(zone, id, t) {
                if !covering.is_empty() {
                    return Err(format!("{owner} {t}: signed but should not be"));
                }
                continue;
            }
            for k in signer.signers_of(t) {
                let sig = covering
                    .iter()
                    .find(|s| rrsig_info(s).is_some_and(|i| i.key_tag == k.tag()))
                    .ok_or_else(|| format!("{owner} {t}: no signature by key {}", k.tag()))?;
                let info = rrsig_info(sig).unwrap();
                if !(info.inception as u64 <= at && at < info.expiration as u64) {
                    return Err(format!("{owner} {t}: signature not valid now"));
                }
                let (_, rest) = NameRef::split_from(&sig[18..]).map_err(|e| e.to_string())?;
                let head = &sig[..sig.len() - rest.len()];
                let rrset = RRsetRef {
                    owner: node.owner(),
                    rtype: t,
                    class: zone.class(),
                    ttl: set.ttl(),
                };
                signed_data(&rrset, set.rdatas(), head, &mut data);
                let mut public = k.dnskey_rdata()[4..].to_vec();
                let verified = match k.algorithm {
                    Algorithm::EcdsaP256 => {
                        public.insert(0, 4);
                        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &public)
                            .verify(&data, rest)
                    }
                    Algorithm::EcdsaP384 => {
                        public.insert(0, 4);
                        UnparsedPublicKey::new(&ECDSA_P384_SHA384_FIXED, &public)
                            .verify(&data, rest)
                    }
                    Algorithm::Ed25519 => {
                        UnparsedPublicKey::new(&ED25519, &public).verify(&data, rest)
                    }
                    _ => Ok(()),
                };
                verified.map_err(|_| format!("{owner} {t}: bad signature by {}", k.tag()))?;
            }
            if covering.len() != signer.signers_of(t).count() {
                return Err(format!("{owner} {t}: {} signatures", covering.len()));
            }
        }
        for s in &sigs {
            let c = rrsig_info(s).unwrap().covered;
            if node.rrset(c).is_none() {
                return Err(format!("{owner}: signature of {c}, which it has not"));
            }
        }
    }
    Ok(())
}
