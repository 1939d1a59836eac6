//! The HMAC algorithms of TSIG (RFC 8945 §6), their names, and the keyed
//! HMAC state the signing and checking code feeds.

use std::fmt;
use std::str::FromStr;

use hmac::{Hmac, Mac};
use lode_wire::NameRef;

/// An HMAC algorithm TSIG can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// HMAC-MD5 (`hmac-md5.sig-alg.reg.int.`, RFC 8945 §6: deprecated but still met).
    HmacMd5,
    /// HMAC-SHA1 (`hmac-sha1.`).
    HmacSha1,
    /// HMAC-SHA224 (`hmac-sha224.`).
    HmacSha224,
    /// HMAC-SHA256 (`hmac-sha256.`, mandatory to implement).
    HmacSha256,
    /// HMAC-SHA384 (`hmac-sha384.`).
    HmacSha384,
    /// HMAC-SHA512 (`hmac-sha512.`).
    HmacSha512,
}

/// Why an algorithm name was not understood.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnknownAlgorithm(pub String);

impl fmt::Display for UnknownAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown TSIG algorithm {:?} (expected one of hmac-md5, hmac-sha1, hmac-sha224, \
             hmac-sha256, hmac-sha384, hmac-sha512)",
            self.0
        )
    }
}

impl std::error::Error for UnknownAlgorithm {}

impl Algorithm {
    /// Every algorithm, weakest first.
    pub const ALL: [Algorithm; 6] = [
        Algorithm::HmacMd5,
        Algorithm::HmacSha1,
        Algorithm::HmacSha224,
        Algorithm::HmacSha256,
        Algorithm::HmacSha384,
        Algorithm::HmacSha512,
    ];

    /// The short name used in Knot and BIND configuration and `-y` specs (`hmac-sha256`).
    pub const fn name(self) -> &'static str {
        match self {
            Algorithm::HmacMd5 => "hmac-md5",
            Algorithm::HmacSha1 => "hmac-sha1",
            Algorithm::HmacSha224 => "hmac-sha224",
            Algorithm::HmacSha256 => "hmac-sha256",
            Algorithm::HmacSha384 => "hmac-sha384",
            Algorithm::HmacSha512 => "hmac-sha512",
        }
    }

    /// The algorithm's domain name in wire form, lower case (what TSIG RDATA carries).
    pub const fn wire_name(self) -> &'static [u8] {
        match self {
            Algorithm::HmacMd5 => b"\x08hmac-md5\x07sig-alg\x03reg\x03int\x00",
            Algorithm::HmacSha1 => b"\x09hmac-sha1\x00",
            Algorithm::HmacSha224 => b"\x0bhmac-sha224\x00",
            Algorithm::HmacSha256 => b"\x0bhmac-sha256\x00",
            Algorithm::HmacSha384 => b"\x0bhmac-sha384\x00",
            Algorithm::HmacSha512 => b"\x0bhmac-sha512\x00",
        }
    }

    /// The algorithm whose domain name this is (case ignored), if known.
    pub fn from_wire(name: NameRef<'_>) -> Option<Algorithm> {
        let w = name.as_wire();
        Algorithm::ALL
            .into_iter()
            .find(|a| a.wire_name().eq_ignore_ascii_case(w))
    }

    /// Length in octets of the full MAC (the digest size).
    pub const fn digest_len(self) -> usize {
        match self {
            Algorithm::HmacMd5 => 16,
            Algorithm::HmacSha1 => 20,
            Algorithm::HmacSha224 => 28,
            Algorithm::HmacSha256 => 32,
            Algorithm::HmacSha384 => 48,
            Algorithm::HmacSha512 => 64,
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Algorithm {
    type Err = UnknownAlgorithm;

    /// Accepts the short names (`hmac-sha256`) and the domain names
    /// (`hmac-md5.sig-alg.reg.int.`, `hmac-sha256.`), in any case, with or
    /// without the final dot.
    fn from_str(s: &str) -> Result<Algorithm, UnknownAlgorithm> {
        let t = s.strip_suffix('.').unwrap_or(s);
        if t.eq_ignore_ascii_case("hmac-md5.sig-alg.reg.int") {
            return Ok(Algorithm::HmacMd5);
        }
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(t))
            .ok_or_else(|| UnknownAlgorithm(s.to_string()))
    }
}

/// A MAC held in a fixed buffer (up to 64 octets, the HMAC-SHA512 size): no allocation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct MacBuf {
    bytes: [u8; MacBuf::CAPACITY],
    len: u8,
}

impl MacBuf {
    /// The largest MAC held (HMAC-SHA512).
    pub const CAPACITY: usize = 64;

    /// An empty MAC (the request MAC of an unsigned exchange).
    pub const fn empty() -> MacBuf {
        MacBuf {
            bytes: [0; MacBuf::CAPACITY],
            len: 0,
        }
    }

    /// A copy of `mac`, or None when it is longer than 64 octets.
    pub fn from_slice(mac: &[u8]) -> Option<MacBuf> {
        let mut m = MacBuf::empty();
        m.bytes.get_mut(..mac.len())?.copy_from_slice(mac);
        m.len = mac.len() as u8;
        Some(m)
    }

    /// The MAC's octets.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Its length in octets.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// True when there is no MAC.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Default for MacBuf {
    fn default() -> Self {
        MacBuf::empty()
    }
}

impl fmt::Debug for MacBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MacBuf(")?;
        for b in self.as_slice() {
            write!(f, "{b:02x}")?;
        }
        f.write_str(")")
    }
}

/// Compares `a` with the first `a.len()` octets of `full` in time that does
/// not depend on where they differ.
pub(crate) fn mac_matches(a: &[u8], full: &[u8]) -> bool {
    match full.get(..a.len()) {
        Some(f) => a.iter().zip(f).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0,
        None => false,
    }
}

/// An HMAC computation keyed once per key and cloned per message (the
/// inner and outer pads are hashed when the key is loaded, not per message).
#[derive(Clone)]
pub(crate) enum Keyed {
    Md5(Hmac<md5::Md5>),
    Sha1(Hmac<sha1::Sha1>),
    Sha224(Hmac<sha2::Sha224>),
    Sha256(Hmac<sha2::Sha256>),
    Sha384(Hmac<sha2::Sha384>),
    Sha512(Hmac<sha2::Sha512>),
}

/// HMAC keyed with `secret`, for digest `$d`.
macro_rules! keyed {
    ($d:ty, $secret:expr) => {
        // HMAC accepts keys of any length (RFC 2104 §2: longer keys are hashed,
        // shorter ones padded); `new_from_slice` only fails for fixed-size-key MACs.
        <Hmac<$d> as hmac::digest::KeyInit>::new_from_slice($secret)
            .expect("HMAC takes keys of any length")
    };
}

impl Keyed {
    /// The HMAC of `algorithm` keyed with `secret`.
    pub(crate) fn new(algorithm: Algorithm, secret: &[u8]) -> Keyed {
        match algorithm {
            Algorithm::HmacMd5 => Keyed::Md5(keyed!(md5::Md5, secret)),
            Algorithm::HmacSha1 => Keyed::Sha1(keyed!(sha1::Sha1, secret)),
            Algorithm::HmacSha224 => Keyed::Sha224(keyed!(sha2::Sha224, secret)),
            Algorithm::HmacSha256 => Keyed::Sha256(keyed!(sha2::Sha256, secret)),
            Algorithm::HmacSha384 => Keyed::Sha384(keyed!(sha2::Sha384, secret)),
            Algorithm::HmacSha512 => Keyed::Sha512(keyed!(sha2::Sha512, secret)),
        }
    }

    /// Feeds `data`.
    pub(crate) fn update(&mut self, data: &[u8]) {
        match self {
            Keyed::Md5(h) => h.update(data),
            Keyed::Sha1(h) => h.update(data),
            Keyed::Sha224(h) => h.update(data),
            Keyed::Sha256(h) => h.update(data),
            Keyed::Sha384(h) => h.update(data),
            Keyed::Sha512(h) => h.update(data),
        }
    }

    /// The full MAC.
    pub(crate) fn finish(self) -> MacBuf {
        let mut m = MacBuf::empty();
        let mut put = |d: &[u8]| {
            m.bytes[..d.len()].copy_from_slice(d);
            m.len = d.len() as u8;
        };
        match self {
            Keyed::Md5(h) => put(&h.finalize().into_bytes()),
            Keyed::Sha1(h) => put(&h.finalize().into_bytes()),
            Keyed::Sha224(h) => put(&h.finalize().into_bytes()),
            Keyed::Sha256(h) => put(&h.finalize().into_bytes()),
            Keyed::Sha384(h) => put(&h.finalize().into_bytes()),
            Keyed::Sha512(h) => put(&h.finalize().into_bytes()),
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    fn mac(alg: Algorithm, key: &[u8], data: &[u8]) -> Vec<u8> {
        let mut k = Keyed::new(alg, key);
        k.update(data);
        k.finish().as_slice().to_vec()
    }

    /// RFC 2202 test case 2 (HMAC-MD5, HMAC-SHA1) and RFC 4231 test case 2
    /// (HMAC-SHA224 … SHA512): key "Jefe", data "what do ya want for nothing?".
    #[test]
    fn rfc_2202_and_4231_case_2() {
        let d = b"what do ya want for nothing?";
        let want = [
            (Algorithm::HmacMd5, "750c783e6ab0b503eaa86e310a5db738"),
            (
                Algorithm::HmacSha1,
                "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79",
            ),
            (
                Algorithm::HmacSha224,
                "a30e01098bc6dbbf45690f3a7e9e6d0f8bbea2a39e6148008fd05e44",
            ),
            (
                Algorithm::HmacSha256,
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                Algorithm::HmacSha384,
                "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e\
                 8e2240ca5e69e2c78b3239ecfab21649",
            ),
            (
                Algorithm::HmacSha512,
                "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554\
                 9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737",
            ),
        ];
        for (alg, h) in want {
            let got = mac(alg, b"Jefe", d);
            assert_eq!(got, hex(h), "{alg}");
            assert_eq!(got.len(), alg.digest_len(), "{alg}");
        }
    }

    /// RFC 4231 test case 6: a 131-octet key (longer than the block) is hashed first.
    #[test]
    fn rfc_4231_case_6_long_key() {
        let got = mac(
            Algorithm::HmacSha256,
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First",
        );
        assert_eq!(
            got,
            hex("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        );
    }

    #[test]
    fn names() {
        for a in Algorithm::ALL {
            assert_eq!(a.name().parse::<Algorithm>(), Ok(a));
            assert_eq!(a.to_string().parse::<Algorithm>(), Ok(a));
            let n = NameRef::from_wire(a.wire_name()).expect("wire name");
            assert_eq!(Algorithm::from_wire(n), Some(a));
            assert_eq!(n.to_string().parse::<Algorithm>(), Ok(a), "{n}");
        }
        assert_eq!(
            "HMAC-MD5.SIG-ALG.REG.INT".parse::<Algorithm>(),
            Ok(Algorithm::HmacMd5)
        );
        assert_eq!("hmac-sha256.".parse(), Ok(Algorithm::HmacSha256));
        assert!("hmac-sha3".parse::<Algorithm>().is_err());
        assert!("gss-tsig".parse::<Algorithm>().is_err());
        let upper = b"\x0bHMAC-SHA512\x00";
        let n = NameRef::from_wire(upper).expect("name");
        assert_eq!(Algorithm::from_wire(n), Some(Algorithm::HmacSha512));
    }

    #[test]
    fn mac_buf() {
        assert!(MacBuf::from_slice(&[0; 65]).is_none());
        let m = MacBuf::from_slice(&[1, 2, 0xab]).expect("fits");
        assert_eq!(m.as_slice(), &[1, 2, 0xab]);
        assert_eq!(format!("{m:?}"), "MacBuf(0102ab)");
        assert!(mac_matches(&[1, 2], &[1, 2, 3]));
        assert!(!mac_matches(&[1, 3], &[1, 2, 3]));
        assert!(!mac_matches(&[1, 2, 3, 4], &[1, 2, 3]));
    }
}
