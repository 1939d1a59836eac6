//! What every answer reads of a zone's apex, found once per version (when
//! it is built, changed, compacted or read from a snapshot) instead of on
//! each query: whether the zone is signed, its NSEC3 hashing, and the two
//! NSEC3 records that every NSEC3 negative answer with the apex as its
//! closest encloser carries — the apex's own (its hash is the same for
//! every query) and the one covering the apex's wildcard.

use lode_wire::nsec3::Nsec3Params;
use lode_wire::{NameRef, Rtype};

use crate::{nsec3_key, NodeId, Zone};

/// A zone's NSEC3 hashing (NSEC3PARAM with algorithm 1), held inline.
#[derive(Debug, Clone, Copy)]
pub struct Nsec3Hashing {
    iterations: u16,
    salt_len: u8,
    salt: [u8; 255],
}

impl Nsec3Hashing {
    /// The parameters, borrowed.
    pub fn params(&self) -> Nsec3Params<'_> {
        Nsec3Params {
            iterations: self.iterations,
            salt: &self.salt[..self.salt_len as usize],
        }
    }
}

/// See the module.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApexFacts {
    /// The apex has an RRSIG covering its SOA: answers may carry DNSSEC.
    pub signed: bool,
    /// The apex has an NSEC3PARAM RRset (proofs are NSEC3 even when its
    /// algorithm is unknown and none can be made).
    pub has_nsec3param: bool,
    /// Its hashing, when its algorithm is SHA-1.
    pub nsec3: Option<Nsec3Hashing>,
    /// The NSEC3 node whose owner is the apex's hash.
    pub nsec3_apex: Option<NodeId>,
    /// The NSEC3 node covering (or matching) the hash of `*.<apex>`.
    pub nsec3_apex_wildcard: Option<NodeId>,
}

impl ApexFacts {
    /// Found in `zone` as it is now.
    pub(crate) fn of(zone: &Zone) -> ApexFacts {
        let signed = zone.apex_rrset(Rtype::RRSIG).is_some_and(|s| {
            s.rdatas()
                .any(|r| lode_wire::rdata::rrsig_type_covered(r) == Some(Rtype::SOA))
        });
        let param = zone.apex_rrset(Rtype::NSEC3PARAM);
        let nsec3 = param
            .and_then(|p| Nsec3Params::parse(p.first()))
            .and_then(|p| {
                let mut salt = [0u8; 255];
                salt.get_mut(..p.salt.len())?.copy_from_slice(p.salt);
                Some(Nsec3Hashing {
                    iterations: p.iterations,
                    salt_len: p.salt.len() as u8,
                    salt,
                })
            });
        let mut facts = ApexFacts {
            signed,
            has_nsec3param: param.is_some(),
            nsec3,
            nsec3_apex: None,
            nsec3_apex_wildcard: None,
        };
        if let Some(h) = &nsec3 {
            let p = h.params();
            let origin = zone.origin();
            facts.nsec3_apex = zone.nsec3_match(&nsec3_key(&p.hash(origin)));
            let o = origin.as_wire();
            let mut wire = [0u8; lode_wire::name::MAX_NAME_LEN];
            if let Some(star) = wire.get_mut(..o.len() + 2) {
                star[0] = 1;
                star[1] = b'*';
                star[2..].copy_from_slice(o);
                if let Ok(star) = NameRef::from_wire(star) {
                    facts.nsec3_apex_wildcard = zone.nsec3_covering(&nsec3_key(&p.hash(star)));
                }
            }
        }
        facts
    }
}
