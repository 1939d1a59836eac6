//! The zone's message digest (ZONEMD, RFC 8976), simple scheme, SHA-384
//! and SHA-512: made as Knot's `zonemd-generate` makes it, checked as its
//! `zonemd-verify` checks it.
//!
//! ```text
//!  every node in canonical order (the zone's cursor, as AXFR out walks it)
//!    └─ every RRset in type order, every RR in canonical RDATA order, once
//!         (less the apex ZONEMD RRset and the apex RRSIGs over ZONEMD)
//!         owner (lower case) | type | class | TTL | RDLENGTH | RDATA (RFC 4034 §6.2)
//!         ─▶ written into a 64 KiB buffer ─▶ hashed a buffer at a time
//!  digest ─▶ ZONEMD RDATA: SOA serial | scheme 1 | hash algorithm | digest
//! ```
//!
//! RRSIGs are written with their original TTL (as Lode and Knot send them:
//! one signature RRset per node keeps one TTL, each signature its own). The
//! digest is one ordered hash over the whole zone: it cannot be split into
//! parts hashed apart, nor updated for a change (the simple scheme); its
//! cost is one pass over the zone's stored form per version.

use std::fmt;

use lode_wire::record::canonical_rdata;
use lode_wire::{Name, Record, Rtype};
use lode_zonedb::Zone;

/// The simple scheme (RFC 8976 §2.2.2).
pub const SCHEME_SIMPLE: u8 = 1;
/// Hash algorithm SHA-384.
pub const SHA384: u8 = 1;
/// Hash algorithm SHA-512.
pub const SHA512: u8 = 2;

/// Knot's `zonemd-generate`: what every new version gets at its apex.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Generate {
    /// Nothing is done (a ZONEMD in the zone is left as it is).
    #[default]
    None,
    /// A ZONEMD with a SHA-384 digest (`zonemd-sha384`).
    Sha384,
    /// A ZONEMD with a SHA-512 digest (`zonemd-sha512`).
    Sha512,
    /// Any ZONEMD at the apex taken out (`remove`).
    Remove,
}

impl Generate {
    /// The hash algorithm number it puts in the ZONEMD (none for `None` and `Remove`).
    pub fn algorithm(self) -> Option<u8> {
        match self {
            Generate::Sha384 => Some(SHA384),
            Generate::Sha512 => Some(SHA512),
            Generate::None | Generate::Remove => None,
        }
    }
}

impl std::str::FromStr for Generate {
    type Err = String;
    fn from_str(s: &str) -> Result<Generate, String> {
        match s {
            "none" => Ok(Generate::None),
            "zonemd-sha384" => Ok(Generate::Sha384),
            "zonemd-sha512" => Ok(Generate::Sha512),
            "remove" => Ok(Generate::Remove),
            _ => Err(format!(
                "{s:?}: must be none, zonemd-sha384, zonemd-sha512 or remove"
            )),
        }
    }
}

impl fmt::Display for Generate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Generate::None => "none",
            Generate::Sha384 => "zonemd-sha384",
            Generate::Sha512 => "zonemd-sha512",
            Generate::Remove => "remove",
        })
    }
}

fn hash_of(algorithm: u8) -> Option<&'static ring::digest::Algorithm> {
    match algorithm {
        SHA384 => Some(&ring::digest::SHA384),
        SHA512 => Some(&ring::digest::SHA512),
        _ => None,
    }
}

/// The digest's length for a hash algorithm (None: not one supported).
pub fn digest_len(algorithm: u8) -> Option<usize> {
    hash_of(algorithm).map(|a| a.output_len())
}

/// How much canonical form is gathered before it is hashed.
const CHUNK: usize = 64 * 1024;
/// Zones of this many names and more have their canonical form made on a
/// thread of its own while the calling thread hashes it (a thread costs
/// more than it brings below).
const PIPELINE_FROM: usize = 100_000;
/// Canonical form handed from that thread at a time, and batches made
/// ahead at most.
const BATCH: usize = 1 << 20;
const AHEAD: usize = 4;

/// The simple-scheme digest of `zone` with hash `algorithm` (RFC 8976
/// §3.3); None for an algorithm not supported. A large zone's canonical
/// form is made on another thread as it is hashed (the walk and the form
/// took half of a 5 M-delegation zone's 2.1 s digest, the hash the rest).
pub fn digest(zone: &Zone, algorithm: u8) -> Option<Vec<u8>> {
    digest_in(zone, algorithm, (PIPELINE_FROM, BATCH))
}

/// [`digest`], the canonical form made on a thread of its own from
/// `pipeline_from` names on and handed over `batch` bytes at a time.
fn digest_in(
    zone: &Zone,
    algorithm: u8,
    (pipeline_from, batch): (usize, usize),
) -> Option<Vec<u8>> {
    let mut ctx = ring::digest::Context::new(hash_of(algorithm)?);
    let piped = zone.node_count() >= pipeline_from && {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(AHEAD);
        // Hashed batches go back to be filled again.
        let (back, emptied) = std::sync::mpsc::channel::<Vec<u8>>();
        std::thread::scope(|s| {
            let making = std::thread::Builder::new()
                .name("lode-zonemd".into())
                .spawn_scoped(s, move || {
                    canonical_form(zone, batch, &mut |buf| {
                        let next = emptied.try_recv().unwrap_or_default();
                        // The receiver is gone only if hashing panicked.
                        let _ = tx.send(std::mem::replace(buf, next));
                    })
                });
            let Ok(making) = making else {
                return false;
            };
            for mut batch in rx {
                ctx.update(&batch);
                batch.clear();
                let _ = back.send(batch);
            }
            making
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
            true
        })
    };
    if !piped {
        canonical_form(zone, CHUNK, &mut |buf| {
            ctx.update(buf);
            buf.clear();
        });
    }
    Some(ctx.finish().as_ref().to_vec())
}

/// Makes `zone`'s canonical form as the simple scheme digests it (the
/// apex's ZONEMD and its signatures left out), handing it to `emit` about
/// `chunk` bytes at a time and once at the end; `emit` takes the bytes
/// (clearing the buffer or swapping in another).
fn canonical_form(zone: &Zone, chunk: usize, emit: &mut dyn FnMut(&mut Vec<u8>)) {
    let class = zone.class().0.to_be_bytes();
    let mut buf: Vec<u8> = Vec::with_capacity(chunk + 4096);
    let mut owner: Vec<u8> = Vec::with_capacity(255);
    let mut cursor = zone.cursor();
    let apex = zone.apex_id();
    while let Some(id) = cursor.advance(|_| true) {
        let at_apex = id == apex;
        owner.clear();
        owner.extend_from_slice(cursor.owner().as_wire());
        owner.make_ascii_lowercase();
        for set in cursor.rrsets() {
            let rtype = set.rtype();
            if at_apex && rtype == Rtype::ZONEMD {
                continue;
            }
            let taken =
                |r: &&[u8]| !(at_apex && rtype == Rtype::RRSIG && covers(r) == Some(Rtype::ZONEMD));
            let mut put = |ttl: u32, r: &[u8]| {
                buf.extend_from_slice(&owner);
                buf.extend_from_slice(&rtype.0.to_be_bytes());
                buf.extend_from_slice(&class);
                buf.extend_from_slice(&ttl.to_be_bytes());
                buf.extend_from_slice(&(r.len() as u16).to_be_bytes());
                buf.extend_from_slice(r);
            };
            // Stored in canonical order, once each, unless a name in the
            // RDATA is lower-cased for it (then sorted here).
            let mut prev: Option<&[u8]> = None;
            let stored_order = set.rdatas().filter(taken).all(|r| {
                let ok = matches!(canonical_rdata(rtype, r), std::borrow::Cow::Borrowed(_))
                    && prev.is_none_or(|p| p < r);
                prev = Some(r);
                ok
            });
            if stored_order {
                for r in set.rdatas().filter(taken) {
                    put(set.record_ttl(r), r);
                }
            } else {
                let mut sorted: Vec<(u32, std::borrow::Cow<'_, [u8]>)> = set
                    .rdatas()
                    .filter(taken)
                    .map(|r| (set.record_ttl(r), canonical_rdata(rtype, r)))
                    .collect();
                sorted.sort_by(|a, b| a.1.cmp(&b.1));
                sorted.dedup_by(|a, b| a.1 == b.1);
                for (ttl, r) in &sorted {
                    put(*ttl, r);
                }
            }
            if buf.len() >= chunk {
                emit(&mut buf);
                buf.reserve(chunk + 4096);
            }
        }
    }
    if !buf.is_empty() {
        emit(&mut buf);
    }
}

/// The type an RRSIG's RDATA covers.
fn covers(rdata: &[u8]) -> Option<Rtype> {
    Some(Rtype(u16::from_be_bytes([*rdata.first()?, *rdata.get(1)?])))
}

/// The fields of a ZONEMD RDATA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fields<'a> {
    /// The SOA serial it was made for.
    pub serial: u32,
    /// The scheme.
    pub scheme: u8,
    /// The hash algorithm.
    pub algorithm: u8,
    /// The digest.
    pub digest: &'a [u8],
}

/// Reads a ZONEMD RDATA (None: shorter than its fixed fields).
pub fn fields(rdata: &[u8]) -> Option<Fields<'_>> {
    let head = rdata.get(..6)?;
    Some(Fields {
        serial: u32::from_be_bytes([head[0], head[1], head[2], head[3]]),
        scheme: head[4],
        algorithm: head[5],
        digest: &rdata[6..],
    })
}

/// The ZONEMD RDATA for `serial`, the simple scheme, `algorithm`, `digest`.
pub fn rdata(serial: u32, algorithm: u8, digest: &[u8]) -> Box<[u8]> {
    let mut r = Vec::with_capacity(6 + digest.len());
    r.extend_from_slice(&serial.to_be_bytes());
    r.push(SCHEME_SIMPLE);
    r.push(algorithm);
    r.extend_from_slice(digest);
    r.into()
}

/// The apex ZONEMD record of `zone` with hash `algorithm` as it should be
/// (the SOA's serial and TTL, as Knot makes it); None for an algorithm
/// not supported.
pub fn record(zone: &Zone, algorithm: u8) -> Option<Record> {
    let d = digest(zone, algorithm)?;
    Some(Record {
        owner: zone.origin().to_name(),
        class: zone.class(),
        rtype: Rtype::ZONEMD,
        ttl: zone.soa().ttl(),
        rdata: rdata(zone.serial(), algorithm, &d),
    })
}

/// The apex's ZONEMD records and the apex RRSIGs over them (what a new
/// ZONEMD replaces).
pub fn apex_records(zone: &Zone) -> Vec<Record> {
    let origin: Name = zone.origin().to_name();
    let mut out = Vec::new();
    let mut push = |rtype: Rtype, ttl: u32, rdata: &[u8]| {
        out.push(Record {
            owner: origin.clone(),
            class: zone.class(),
            rtype,
            ttl,
            rdata: rdata.into(),
        })
    };
    if let Some(set) = zone.apex_rrset(Rtype::ZONEMD) {
        for r in set.rdatas() {
            push(Rtype::ZONEMD, set.ttl(), r);
        }
    }
    if let Some(set) = zone.apex_rrset(Rtype::RRSIG) {
        for r in set.rdatas().filter(|r| covers(r) == Some(Rtype::ZONEMD)) {
            push(Rtype::RRSIG, set.record_ttl(r), r);
        }
    }
    out
}

/// True when the apex holds what `generate` asks for, from the records
/// alone (the digest is not made again): one ZONEMD of the simple scheme
/// with that algorithm and the SOA's serial, or none for `Remove`.
pub fn in_place(zone: &Zone, generate: Generate) -> bool {
    let set = zone.apex_rrset(Rtype::ZONEMD);
    let Some(alg) = generate.algorithm() else {
        return generate == Generate::None || set.is_none();
    };
    let Some(set) = set.filter(|s| s.len() == 1) else {
        return false;
    };
    fields(set.first()).is_some_and(|f| {
        f.serial == zone.serial()
            && f.scheme == SCHEME_SIMPLE
            && f.algorithm == alg
            && Some(f.digest.len()) == digest_len(alg)
    })
}

/// Why a zone's ZONEMD does not verify.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VerifyError {
    /// The apex has no ZONEMD.
    Missing,
    /// Two ZONEMD records with the same scheme and hash algorithm.
    Duplicate {
        /// The scheme.
        scheme: u8,
        /// The hash algorithm.
        algorithm: u8,
    },
    /// None of the zone's ZONEMD records is of a scheme and hash algorithm
    /// supported here with the SOA's serial.
    Unsupported {
        /// The SOA serial.
        serial: u32,
    },
    /// The digest is not the zone's.
    Mismatch {
        /// The hash algorithm.
        algorithm: u8,
    },
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerifyError::Missing => f.write_str("no ZONEMD at the zone apex"),
            VerifyError::Duplicate { scheme, algorithm } => write!(
                f,
                "more than one ZONEMD with scheme {scheme} and hash algorithm {algorithm}"
            ),
            VerifyError::Unsupported { serial } => write!(
                f,
                "no ZONEMD of the simple scheme with SHA-384 or SHA-512 for the SOA serial {serial}"
            ),
            VerifyError::Mismatch { algorithm } => write!(
                f,
                "the digest (hash algorithm {algorithm}) does not match the zone's contents"
            ),
        }
    }
}

impl std::error::Error for VerifyError {}

/// Knot's `zonemd-verify` (RFC 8976 §4): the apex has a ZONEMD, no two of
/// the same scheme and hash algorithm, and one of the simple scheme with a
/// supported algorithm and the SOA's serial whose digest is the zone's.
pub fn verify(zone: &Zone) -> Result<(), VerifyError> {
    let set = zone.apex_rrset(Rtype::ZONEMD).ok_or(VerifyError::Missing)?;
    let all: Vec<Fields<'_>> = set.rdatas().filter_map(fields).collect();
    for (i, a) in all.iter().enumerate() {
        if all[..i]
            .iter()
            .any(|b| (b.scheme, b.algorithm) == (a.scheme, a.algorithm))
        {
            return Err(VerifyError::Duplicate {
                scheme: a.scheme,
                algorithm: a.algorithm,
            });
        }
    }
    let serial = zone.serial();
    let supported: Vec<&Fields<'_>> = all
        .iter()
        .filter(|f| {
            f.scheme == SCHEME_SIMPLE
                && f.serial == serial
                && digest_len(f.algorithm).is_some_and(|n| n == f.digest.len())
        })
        .collect();
    let Some(last) = supported.last() else {
        return Err(VerifyError::Unsupported { serial });
    };
    if supported
        .iter()
        .any(|f| digest(zone, f.algorithm).is_some_and(|d| d == f.digest))
    {
        return Ok(());
    }
    Err(VerifyError::Mismatch {
        algorithm: last.algorithm,
    })
}

#[cfg(test)]
mod tests;
