//! The body shared by the fuzz target (fuzz/fuzz_targets/signer.rs) and the
//! deterministic smoke test (apps/lode/tests/fuzz_smoke.rs): arbitrary bytes
//! read as a sequence of changes (name, type, data, add or remove) to a small
//! signed zone, each one signed by the signer (NSEC, NSEC3 or NSEC3 opt-out,
//! chosen by the first byte), checking what must hold for any input:
//!
//! - no panic;
//! - every version the signer makes verifies whole (`lode_dnssec::check`:
//!   each signature with the public keys, no stray signature, the chain
//!   exactly the one the names call for);
//! - the changeset it returns replays onto the version before to the same
//!   version (what the journal and IXFR out carry).
//!
//! A change the zone refuses (a CNAME beside data, data below a DNAME…) is
//! refused before signing, and the next change goes on from the same version.
#![allow(dead_code)]

use lode_dnssec::{Algorithm, Nsec3Policy, Policy, Signer, SigningKey, KSK_FLAGS, ZSK_FLAGS};
use lode_wire::{Class, Name, Record, Rtype};
use lode_zonedb::{Changeset, Zone, ZoneBuilder};

/// The zone every input starts from.
pub const ZONE_TEXT: &str = include_str!("../../tests/dnssec/example.zone");

/// The time the signatures are made and checked at.
pub const NOW: u64 = 1_764_000_000;

/// Labels the owner names of changes are made of (up to two, "" none:
/// the apex), among the zone's own names and cuts.
const LABELS: &[&str] = &[
    "", "www", "b", "c", "new", "sub", "ns", "*", "d", "unsigned", "x",
];

/// The three signers (NSEC, NSEC3 with salt, NSEC3 opt-out with a CSK) and
/// the zone each signed whole.
pub fn signed() -> Vec<(Signer, Zone)> {
    let origin: Name = "example.".parse().expect("origin");
    let parsed = lode_zonefile::parse_str(ZONE_TEXT, "signer_body", &origin).expect("zone text");
    let mut b = ZoneBuilder::new(origin.clone());
    for r in parsed.records {
        b.add(r, 0);
    }
    let zone = b.build().expect("zone").0;
    let nsec3 = |salt_length, opt_out| {
        Some(Nsec3Policy {
            iterations: 0,
            salt_length,
            opt_out,
            ..Nsec3Policy::default()
        })
    };
    [
        (None, false),
        (nsec3(4, false), false),
        (nsec3(0, true), true),
    ]
    .into_iter()
    .map(|(chain, csk)| {
        let key = |flags| SigningKey::generate(&origin, Algorithm::Ed25519, flags, 0).expect("key");
        let mut keys = vec![key(KSK_FLAGS)];
        if !csk {
            keys.push(key(ZSK_FLAGS));
        }
        let policy = Policy {
            nsec3: chain,
            signing_threads: 1,
            ..Policy::default()
        };
        let signer = Signer::new(&origin, keys, policy).expect("signer");
        let z = signer.sign_zone(&zone, None, NOW).expect("signed");
        (signer, z)
    })
    .collect()
}

/// Runs the changes `data` spells against the signed zones; Err with what broke.
pub fn check(signed: &[(Signer, Zone)], data: &[u8]) -> Result<(), String> {
    let Some((&which, mut rest)) = data.split_first() else {
        return Ok(());
    };
    let (signer, start) = &signed[usize::from(which) % signed.len()];
    let origin: Name = "example.".parse().expect("origin");
    let mut current = start.clone();
    while let [n, t, v, more @ ..] = rest {
        rest = more;
        let n = usize::from(*n);
        let mut owner = origin.clone();
        for label in [
            LABELS[n % LABELS.len()],
            LABELS[n / LABELS.len() % LABELS.len()],
        ] {
            if !label.is_empty() {
                owner = owner.prepend(label.as_bytes()).map_err(|e| e.to_string())?;
            }
        }
        let (rtype, rdata): (Rtype, Vec<u8>) = match t % 8 {
            0 => (Rtype::NS, b"\x02ns\x07example\x00".to_vec()),
            1 => (Rtype::DNAME, b"\x07example\x03org\x00".to_vec()),
            2 => (Rtype::DS, vec![0x30, 0x39, 13, 2, v % 4, 2, 3, 4]),
            3 => (Rtype::CNAME, b"\x03www\x07example\x00".to_vec()),
            4 | 5 => (Rtype::TXT, vec![1, b'a' + v % 3]),
            _ => (Rtype::A, vec![192, 0, 2, v % 4]),
        };
        let exists = current
            .find(owner.as_ref())
            .and_then(|id| {
                current
                    .node(id)
                    .rrset(rtype)
                    .map(|s| s.rdatas().any(|r| *r == *rdata))
            })
            .unwrap_or(false);
        let record = Record {
            owner,
            class: Class::IN,
            rtype,
            ttl: 300,
            rdata: rdata.into(),
        };
        let mut soa_to = current.soa_record();
        let len = soa_to.rdata.len();
        let mut soa = soa_to.rdata.to_vec();
        soa[len - 20..len - 16].copy_from_slice(&(current.serial() + 1).to_be_bytes());
        soa_to.rdata = soa.into();
        let cs = Changeset {
            soa_from: current.soa_record(),
            soa_to,
            removed: if exists { vec![record.clone()] } else { vec![] },
            added: if exists { vec![] } else { vec![record] },
        };
        let (next, journaled) = match signer.sign_change(&current, &cs, NOW) {
            Ok(x) => x,
            Err(lode_dnssec::SignError::Apply(_)) => continue,
            Err(e) => return Err(format!("signing: {e}")),
        };
        lode_dnssec::check::verify(&next, signer, NOW).map_err(|e| {
            format!(
                "after {} {} {}: {e}",
                if exists { "-" } else { "+" },
                cs.removed
                    .first()
                    .or(cs.added.first())
                    .map_or(String::new(), |r| r.owner.to_string()),
                rtype
            )
        })?;
        let replayed = current
            .apply(&journaled)
            .map_err(|e| format!("replay: {e}"))?;
        if replayed.records().ne(next.records()) {
            return Err("the journaled changeset does not replay to the version".into());
        }
        current = next;
    }
    Ok(())
}
