//! NSEC3 hashing (RFC 5155 §5): the parameters of an NSEC3PARAM, the
//! iterated SHA-1 of a name and the hashed owner name — shared by the answer
//! engine (proofs, on the query path: no allocation) and the signer.

use crate::{NameBuf, NameRef};

/// The hash parameters of the zone's NSEC3PARAM (algorithm 1, SHA-1).
#[derive(Debug, Clone, Copy)]
pub struct Nsec3Params<'z> {
    /// Extra iterations.
    pub iterations: u16,
    /// The salt.
    pub salt: &'z [u8],
}

impl<'z> Nsec3Params<'z> {
    /// Reads NSEC3PARAM RDATA; None for an unknown algorithm or bad RDATA.
    pub fn parse(rdata: &'z [u8]) -> Option<Self> {
        let (&alg, rest) = rdata.split_first()?;
        if alg != 1 || rest.len() < 4 {
            return None;
        }
        let iterations = u16::from_be_bytes([rest[1], rest[2]]);
        let salt_len = rest[3] as usize;
        let salt = rest.get(4..4 + salt_len)?;
        Some(Nsec3Params { iterations, salt })
    }

    /// The NSEC3 hash of `name` (RFC 5155 §5), lower-cased first.
    pub fn hash(&self, name: NameRef<'_>) -> [u8; 20] {
        let low = crate::name::NameBuf::lowered(name);
        let mut h = sha1(&[low.as_ref().as_wire(), self.salt]);
        for _ in 0..self.iterations {
            h = sha1(&[&h, self.salt]);
        }
        h
    }
}

/// SHA-1 (FIPS 180-4) of the concatenation of `parts`: RustCrypto's, which
/// uses the CPU's SHA instructions where it has them (three hashes per
/// NSEC3 NXDOMAIN answer); nothing is allocated.
fn sha1(parts: &[&[u8]]) -> [u8; 20] {
    use sha1::Digest as _;
    let mut h = sha1::Sha1::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// The base32hex digits (RFC 4648 §7, lower case) of a SHA-1 hash.
pub fn base32hex(hash: &[u8; 20]) -> [u8; 32] {
    const ALPHABET: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";
    let mut out = [0u8; 32];
    // Five octets are eight digits: each group as one integer (a hashed
    // owner's key is spelled on the query path).
    for (five, eight) in hash.chunks_exact(5).zip(out.chunks_exact_mut(8)) {
        let v = u64::from_be_bytes([0, 0, 0, five[0], five[1], five[2], five[3], five[4]]);
        for (i, o) in eight.iter_mut().enumerate() {
            *o = ALPHABET[((v >> (35 - 5 * i)) & 31) as usize];
        }
    }
    out
}

/// `<base32hex(hash)>.<origin>`, if it fits.
pub fn hashed_owner(hash: &[u8; 20], origin: NameRef<'_>) -> Option<NameBuf> {
    let o = origin.as_wire();
    if 33 + o.len() > crate::name::MAX_NAME_LEN {
        return None;
    }
    let mut wire = [0u8; crate::name::MAX_NAME_LEN];
    wire[0] = 32;
    wire[1..33].copy_from_slice(&base32hex(hash));
    wire[33..33 + o.len()].copy_from_slice(o);
    let r = NameRef::from_wire(&wire[..33 + o.len()]).ok()?;
    let mut buf = NameBuf::new();
    buf.set(r);
    Some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn sha1_known_answers() {
        assert_eq!(
            hex(&sha1(&[b""])),
            "da39a3ee5e6b4b0d3255bfef95601890afd80709"
        );
        assert_eq!(
            hex(&sha1(&[b"ab", b"c"])),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            hex(&sha1(&[
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            ])),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
    }

    #[test]
    fn rfc5155_appendix_a_hashes() {
        // RFC 5155 Appendix A: salt aabbccdd, 12 iterations.
        let salt = [0xaa, 0xbb, 0xcc, 0xdd];
        let p = Nsec3Params {
            iterations: 12,
            salt: &salt,
        };
        let origin: crate::Name = "example.".parse().unwrap();
        let check = |name: &str, expect: &str| {
            let n: crate::Name = name.parse().unwrap();
            let owner = hashed_owner(&p.hash(n.as_ref()), origin.as_ref()).unwrap();
            assert_eq!(owner.as_ref().to_string(), format!("{expect}.example."));
        };
        check("example.", "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom");
        check("a.example.", "35mthgpgcu1qg68fab165klnsnk3dpvl");
        check("ns1.example.", "2t7b4g4vsa5smi47k61mv5bv1a22bojr");
        check("*.w.example.", "r53bq7cc2uvmubfu5ocmm6pers9tk9en");
    }
}
