//! RRSIG records (RFC 4034 §3): the canonical form of an RRset and the
//! signature over it.

use lode_wire::record::canonical_rdata;
use lode_wire::{Class, Name, NameRef, Rtype};

use crate::key::SigningKey;

/// The validity of signatures made now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    /// Signature inception (Unix seconds, RFC 1982 arithmetic on the wire).
    pub inception: u32,
    /// Signature expiration.
    pub expiration: u32,
}

/// One RRset to sign: owner, type, class, TTL and its RDATAs.
#[derive(Debug, Clone, Copy)]
pub struct RRsetRef<'a> {
    /// Owner name.
    pub owner: NameRef<'a>,
    /// Type.
    pub rtype: Rtype,
    /// Class.
    pub class: Class,
    /// TTL (the RRSIG's original TTL).
    pub ttl: u32,
}

/// The labels field: the owner's labels less a leading `*` (RFC 4034 §3.1.3).
fn labels(owner: NameRef<'_>) -> u8 {
    let n = owner.label_count();
    (if owner.is_wildcard() { n - 1 } else { n }) as u8
}

/// The RRSIG RDATA less its signature (RFC 4034 §3.1.8.1).
fn rdata_head(set: &RRsetRef<'_>, key: &SigningKey, signer: NameRef<'_>, v: Validity) -> Vec<u8> {
    let mut r = Vec::with_capacity(18 + signer.wire_len() + 64);
    r.extend_from_slice(&set.rtype.0.to_be_bytes());
    r.push(key.algorithm.number());
    r.push(labels(set.owner));
    r.extend_from_slice(&set.ttl.to_be_bytes());
    r.extend_from_slice(&v.expiration.to_be_bytes());
    r.extend_from_slice(&v.inception.to_be_bytes());
    r.extend_from_slice(&key.tag().to_be_bytes());
    let lower = signer.to_name().to_lowercase();
    r.extend_from_slice(lower.as_wire());
    r
}

/// The RDATA of the RRSIG over an RRset whose RDATAs are `rdatas` (any
/// order, duplicates ignored), signed by `key` as of the zone `signer`.
pub fn sign_rdata<'a>(
    set: &RRsetRef<'_>,
    rdatas: impl IntoIterator<Item = &'a [u8]>,
    key: &SigningKey,
    signer: NameRef<'_>,
    validity: Validity,
    scratch: &mut Vec<u8>,
) -> Vec<u8> {
    let mut rdata = rdata_head(set, key, signer, validity);
    signed_data(set, rdatas, &rdata, scratch);
    rdata.extend_from_slice(&key.sign(scratch));
    rdata
}

/// The data an RRSIG signs (RFC 4034 §3.1.8.1) into `out`: its RDATA less
/// the signature (`head`), then each RR in canonical form, sorted by
/// canonical RDATA (RFC 4034 §6.3), duplicates once.
pub fn signed_data<'a>(
    set: &RRsetRef<'_>,
    rdatas: impl IntoIterator<Item = &'a [u8]>,
    head: &[u8],
    out: &mut Vec<u8>,
) {
    out.clear();
    out.extend_from_slice(head);
    let mut canon: Vec<std::borrow::Cow<'a, [u8]>> = rdatas
        .into_iter()
        .map(|r| canonical_rdata(set.rtype, r))
        .collect();
    canon.sort();
    canon.dedup();
    let owner = canonical_owner(set.owner);
    for r in &canon {
        out.extend_from_slice(owner.as_wire());
        out.extend_from_slice(&set.rtype.0.to_be_bytes());
        out.extend_from_slice(&set.class.0.to_be_bytes());
        out.extend_from_slice(&set.ttl.to_be_bytes());
        out.extend_from_slice(&(r.len() as u16).to_be_bytes());
        out.extend_from_slice(r);
    }
}

/// The owner as signed: lower-case, and a wildcard's as the wildcard itself
/// (the validator rebuilds it from the labels field).
fn canonical_owner(owner: NameRef<'_>) -> Name {
    owner.to_name().to_lowercase()
}

/// The facts of an RRSIG's RDATA a signer needs to keep or replace it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RrsigInfo {
    /// Type covered.
    pub covered: Rtype,
    /// Algorithm number.
    pub algorithm: u8,
    /// Signature expiration.
    pub expiration: u32,
    /// Signature inception.
    pub inception: u32,
    /// The signing key's tag.
    pub key_tag: u16,
}

/// Reads the fixed fields of RRSIG RDATA.
pub fn rrsig_info(rdata: &[u8]) -> Option<RrsigInfo> {
    let f = rdata.get(..18)?;
    Some(RrsigInfo {
        covered: Rtype(u16::from_be_bytes([f[0], f[1]])),
        algorithm: f[2],
        expiration: u32::from_be_bytes([f[8], f[9], f[10], f[11]]),
        inception: u32::from_be_bytes([f[12], f[13], f[14], f[15]]),
        key_tag: u16::from_be_bytes([f[16], f[17]]),
    })
}
