//! The queries of the attack tables: good names mixed with random non-existing
//! names (a SIDN-style spamrun), and good names carrying a valid DNS cookie.
//!
//! ```text
//!  mix 1:k   query i: i % (k+1) == 0 ─▶ good name (cycled)           expect NOERROR + answer
//!                     otherwise      ─▶ <12 random chars>.<apex>      expect NXDOMAIN
//!                                       (apexes in turn; label j = base32(permute60(seed + j)))
//!  cookies   every query: OPT { COOKIE: client (8) | server (16, RFC 9018) }
//! ```
//!
//! The random labels are unique by construction: a bijection of 60-bit numbers
//! (odd multipliers and xor-shifts, all invertible modulo 2^60) written as 12
//! base-32 characters, so no two queries of a set ask for the same random name.

use std::net::IpAddr;

use lode_wire::{Name, Rtype};

use crate::query::{Expect, QuerySet};

/// Characters of a random label (RFC 4648 base 32, lower case).
const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
/// Characters of a random label.
pub const LABEL_LEN: usize = 12;
/// The 60 bits a label encodes.
const MASK: u64 = (1 << 60) - 1;

/// A query mix: each good name followed by `random_per_good` random names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mix {
    /// Random non-existing names per good name (0: good names only).
    pub random_per_good: u32,
}

impl Mix {
    /// The three mixes measured by default: good only, 1:4 (SIDN's spamrun), 1:24.
    pub const STANDARD: [Mix; 3] = [
        Mix { random_per_good: 0 },
        Mix { random_per_good: 4 },
        Mix {
            random_per_good: 24,
        },
    ];

    /// Its name in reports: `good`, `good + 4× random`.
    pub fn name(self) -> String {
        match self.random_per_good {
            0 => "good".into(),
            k => format!("good + {k}× random"),
        }
    }

    /// True if query `i` of the mix asks for a random name.
    pub fn is_random(self, i: u64) -> bool {
        !i.is_multiple_of(u64::from(self.random_per_good) + 1)
    }

    /// Fraction of random names.
    pub fn random_share(self) -> f64 {
        let k = f64::from(self.random_per_good);
        k / (k + 1.0)
    }
}

/// A bijection of `[0, 2^60)`: every step is invertible modulo 2^60.
pub fn permute60(x: u64) -> u64 {
    let mut x = x & MASK;
    x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15) & MASK;
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9) & MASK;
    x ^= x >> 32;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB) & MASK;
    x ^= x >> 29;
    x
}

/// Random label number `j` of the stream starting at `seed`: 12 base-32 characters,
/// different for different `j` (below 2^60).
pub fn random_label(seed: u64, j: u64) -> [u8; LABEL_LEN] {
    let v = permute60(seed.wrapping_add(j));
    let mut out = [0u8; LABEL_LEN];
    for (k, c) in out.iter_mut().enumerate() {
        *c = ALPHABET[((v >> (5 * k)) & 31) as usize];
    }
    out
}

/// `count` queries of `mix`, type NAPTR, no EDNS: good names from `good` in turn,
/// random names under `apexes` in turn (random labels from `seed` on), each query
/// with its own expectation.
pub fn build(
    mix: Mix,
    good: &[Name],
    apexes: &[Name],
    count: usize,
    seed: u64,
) -> Result<QuerySet, String> {
    if good.is_empty() || (mix.random_per_good > 0 && apexes.is_empty()) {
        return Err("a mix needs good names and zone apexes".into());
    }
    let mut set = QuerySet::default();
    let (mut g, mut r) = (0usize, 0u64);
    let mut wire = Vec::with_capacity(256);
    for i in 0..count as u64 {
        if mix.is_random(i) {
            let apex = &apexes[(r % apexes.len() as u64) as usize];
            wire.clear();
            wire.push(LABEL_LEN as u8);
            wire.extend_from_slice(&random_label(seed, r));
            wire.extend_from_slice(apex.as_wire());
            r += 1;
            let name =
                Name::from_wire(&wire).map_err(|e| format!("random name under {apex}: {e}"))?;
            set.push_with(&name, Rtype::NAPTR, None, Some(Expect::NxDomain));
        } else {
            set.push_with(&good[g], Rtype::NAPTR, None, Some(Expect::Answer));
            g = (g + 1) % good.len();
        }
    }
    Ok(set)
}

/// The EDNS COOKIE option (code 10, RFC 7873) with a client cookie and an RFC 9018
/// server cookie made with `secret` for `client_ip` at `now` (unix seconds; valid
/// for an hour from then).
pub fn cookie_option(secret: &[u8; 16], client: &[u8; 8], client_ip: IpAddr, now: u32) -> [u8; 28] {
    let server = lode_cookie::server_cookie(secret, client, client_ip, now);
    let mut opt = [0u8; 28];
    opt[..2].copy_from_slice(&lode_cookie::OPTION_CODE.to_be_bytes());
    opt[2..4].copy_from_slice(&24u16.to_be_bytes());
    opt[4..12].copy_from_slice(client);
    opt[12..].copy_from_slice(&server);
    opt
}

/// `count` queries for `good` names in turn, type NAPTR, each with an OPT record
/// holding `option` (EDNS options in wire form); valid replies carry an answer.
pub fn with_option(good: &[Name], count: usize, option: &[u8]) -> QuerySet {
    let mut set = QuerySet::default();
    for i in 0..count {
        if let Some(name) = good.get(i % good.len().max(1)) {
            set.push_with(name, Rtype::NAPTR, Some(option), None);
        }
    }
    set
}

/// True if `reply` carries a COOKIE option beginning with `client` (the server
/// echoed or answered our cookie: cookies are on).
pub fn has_cookie(reply: &[u8], client: &[u8; 8]) -> bool {
    let mut pattern = [0u8; 12];
    pattern[..2].copy_from_slice(&lode_cookie::OPTION_CODE.to_be_bytes());
    pattern[2..4].copy_from_slice(&24u16.to_be_bytes());
    pattern[4..].copy_from_slice(client);
    reply.len() > 12 && reply[12..].windows(12).any(|w| w == pattern)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn labels_are_unique_and_plain() {
        let mut seen = HashSet::new();
        for j in 0..200_000u64 {
            let l = random_label(0xDEAD_BEEF, j);
            assert!(l.iter().all(|c| ALPHABET.contains(c)));
            assert!(seen.insert(l), "label {j} repeats");
        }
        assert_eq!(random_label(7, 3), random_label(7, 3), "deterministic");
        assert_ne!(random_label(7, 3), random_label(8, 3));
        // The permutation is a bijection: no collisions on a dense range either.
        let mut v: Vec<u64> = (0..1 << 16).map(permute60).collect();
        v.sort_unstable();
        v.dedup();
        assert_eq!(v.len(), 1 << 16);
        assert!(permute60(u64::MAX) <= MASK);
    }

    #[test]
    fn mixes_interleave() {
        let m = Mix { random_per_good: 4 };
        let kinds: Vec<bool> = (0..10).map(|i| m.is_random(i)).collect();
        assert_eq!(
            kinds,
            [false, true, true, true, true, false, true, true, true, true]
        );
        assert!(!Mix::STANDARD[0].is_random(7));
        assert!((Mix::STANDARD[2].random_share() - 24.0 / 25.0).abs() < 1e-12);
        assert_eq!(Mix::STANDARD[0].name(), "good");
        assert_eq!(Mix::STANDARD[1].name(), "good + 4× random");
    }

    #[test]
    fn built_sets() {
        let good: Vec<Name> = ["1.2.3.4.e164.arpa.", "5.2.3.4.e164.arpa."]
            .iter()
            .map(|s| s.parse().expect("name"))
            .collect();
        let apexes: Vec<Name> = ["3.4.e164.arpa.", "9.4.e164.arpa."]
            .iter()
            .map(|s| s.parse().expect("name"))
            .collect();
        let set = build(Mix { random_per_good: 4 }, &good, &apexes, 1000, 1).expect("set");
        assert_eq!(set.len(), 1000);
        let randoms: Vec<usize> = (0..1000).filter(|&i| i % 5 != 0).collect();
        assert_eq!(randoms.len(), 800);
        let mut questions = HashSet::new();
        for &i in &randoms {
            assert_eq!(set.expect(i), Some(Expect::NxDomain));
            let q = set.question(i);
            assert_eq!(q[0], 12);
            assert!(questions.insert(q.to_vec()), "random names are unique");
        }
        // Random names alternate between the apexes; good names cycle.
        assert!(set
            .question(1)
            .ends_with(b"\x013\x014\x04e164\x04arpa\x00\x00\x23\x00\x01"));
        assert!(set
            .question(2)
            .ends_with(b"\x019\x014\x04e164\x04arpa\x00\x00\x23\x00\x01"));
        assert_eq!(set.expect(0), Some(Expect::Answer));
        assert_eq!(set.question(0), set.question(10));
        assert_ne!(set.question(0), set.question(5));
        let only = build(Mix::STANDARD[0], &good, &[], 10, 1).expect("good only");
        assert!((0..10).all(|i| only.expect(i) == Some(Expect::Answer)));
        assert!(build(Mix { random_per_good: 1 }, &good, &[], 10, 1).is_err());
        assert!(build(Mix::STANDARD[0], &[], &apexes, 10, 1).is_err());
    }

    #[test]
    fn cookie_queries() {
        let secret = [7u8; 16];
        let client = [1, 2, 3, 4, 5, 6, 7, 8];
        let ip: IpAddr = "127.0.0.1".parse().expect("ip");
        let opt = cookie_option(&secret, &client, ip, 1_700_000_000);
        assert_eq!(&opt[..4], &[0, 10, 0, 24]);
        assert_eq!(&opt[4..12], &client);
        assert_eq!(opt[12], 1, "RFC 9018 version 1");
        assert_eq!(&opt[16..20], &1_700_000_000u32.to_be_bytes());
        // The server accepts it (the same check Lode runs).
        let parsed = lode_cookie::parse(&opt[4..]);
        let check = lode_cookie::check(
            &lode_cookie::Secrets::new(secret),
            &parsed,
            ip,
            1_700_000_100,
        );
        assert!(check.is_valid(), "{check:?}");
        let good: Vec<Name> = vec!["1.e164.arpa.".parse().expect("name")];
        let set = with_option(&good, 3, &opt);
        assert_eq!(set.len(), 3);
        assert!(set.get(0).ends_with(&opt));
        assert!(has_cookie(set.get(0), &client));
        assert!(!has_cookie(set.get(0), &[0; 8]));
        assert!(!has_cookie(&[0; 11], &client));
    }
}
