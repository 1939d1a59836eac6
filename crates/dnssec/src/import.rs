//! Keys made elsewhere: BIND's key pairs (`K<zone>+<alg>+<tag>.key` and
//! `.private`, as `dnssec-keygen` writes them, and as Knot's `keymgr
//! import-bind` reads them) and PKCS #8 PEM files.

use base64::Engine as _;
use lode_wire::Name;

use crate::key::{Algorithm, KeyError, SigningKey};

/// A BIND key pair: `public` is the text of the `.key` file (its DNSKEY
/// record), `private` that of the `.private` file.
pub fn from_bind(
    zone: &Name,
    public: &str,
    private: &str,
    now: u64,
) -> Result<SigningKey, KeyError> {
    let bad = |why: String| KeyError::BadKey(why);
    // The DNSKEY line: owner [ttl] [class] DNSKEY flags 3 alg base64…
    let line = public
        .lines()
        .map(|l| l.split(';').next().unwrap_or("").trim())
        .find(|l| {
            l.split_whitespace()
                .any(|w| w.eq_ignore_ascii_case("DNSKEY"))
        })
        .ok_or_else(|| bad("no DNSKEY record in the .key file".into()))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| w.eq_ignore_ascii_case("DNSKEY"))
        .unwrap_or(0);
    let flags: u16 = words
        .get(at + 1)
        .and_then(|w| w.parse().ok())
        .ok_or_else(|| bad("DNSKEY flags".into()))?;
    let alg_number: u8 = words
        .get(at + 3)
        .and_then(|w| w.parse().ok())
        .ok_or_else(|| bad("DNSKEY algorithm".into()))?;
    let algorithm = Algorithm::from_number(alg_number)
        .ok_or_else(|| bad(format!("algorithm {alg_number} is not one Lode signs with")))?;
    let b64 = base64::engine::general_purpose::STANDARD;
    let public_key = b64
        .decode(words[at + 4..].concat())
        .map_err(|e| bad(format!("DNSKEY public key: {e}")))?;
    // The .private fields.
    let field = |name: &str| -> Result<Vec<u8>, KeyError> {
        let v = private
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .ok_or_else(|| bad(format!("no {name} in the .private file")))?;
        b64.decode(v.trim())
            .map_err(|e| bad(format!("{name}: {e}")))
    };
    let pkcs8 = match algorithm {
        Algorithm::Ed25519 => ed25519_pkcs8(&field("PrivateKey")?),
        Algorithm::EcdsaP256 | Algorithm::EcdsaP384 => {
            ecdsa_pkcs8(algorithm, &field("PrivateKey")?, &public_key)
        }
        Algorithm::RsaSha256 => {
            let parts: Vec<Vec<u8>> = [
                "Modulus",
                "PublicExponent",
                "PrivateExponent",
                "Prime1",
                "Prime2",
                "Exponent1",
                "Exponent2",
                "Coefficient",
            ]
            .iter()
            .map(|f| field(f))
            .collect::<Result<_, _>>()?;
            rsa_pkcs8(&parts)
        }
    };
    let key = SigningKey::from_pkcs8(zone, algorithm, flags, now, pkcs8)?;
    if key.dnskey_rdata()[4..] != public_key[..] {
        return Err(bad(
            "the .private key does not belong to the .key file's public key".into(),
        ));
    }
    Ok(key)
}

/// A PKCS #8 private key in PEM (`-----BEGIN PRIVATE KEY-----`).
pub fn from_pem(
    zone: &Name,
    algorithm: Algorithm,
    flags: u16,
    pem: &str,
    now: u64,
) -> Result<SigningKey, KeyError> {
    if pem.contains("BEGIN EC PRIVATE KEY") || pem.contains("BEGIN RSA PRIVATE KEY") {
        return Err(KeyError::BadKey(
            "not PKCS #8: convert it with `openssl pkcs8 -topk8 -nocrypt -in KEY.pem`".into(),
        ));
    }
    let body: String = pem
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN PRIVATE KEY-----"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    if body.is_empty() {
        return Err(KeyError::BadKey("no `BEGIN PRIVATE KEY` block".into()));
    }
    let der = base64::engine::general_purpose::STANDARD
        .decode(body.trim())
        .map_err(|e| KeyError::BadKey(format!("PEM: {e}")))?;
    SigningKey::from_pkcs8(zone, algorithm, flags, now, der)
}

/// DER: a tag, its length, the contents.
fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let n = content.len();
    if n < 0x80 {
        out.push(n as u8);
    } else if n < 0x100 {
        out.extend([0x81, n as u8]);
    } else {
        out.extend([0x82, (n >> 8) as u8, n as u8]);
    }
    out.extend_from_slice(content);
    out
}

/// A DER INTEGER of an unsigned big-endian number.
fn der_uint(bytes: &[u8]) -> Vec<u8> {
    let start = bytes
        .iter()
        .position(|&b| b != 0)
        .unwrap_or(bytes.len().saturating_sub(1));
    let mut v = Vec::with_capacity(bytes.len() + 1);
    if bytes.get(start).is_some_and(|&b| b & 0x80 != 0) {
        v.push(0);
    }
    v.extend_from_slice(&bytes[start.min(bytes.len())..]);
    if v.is_empty() {
        v.push(0);
    }
    der(0x02, &v)
}

fn seq(parts: &[Vec<u8>]) -> Vec<u8> {
    der(0x30, &parts.concat())
}

const OID_ED25519: &[u8] = &[0x2b, 0x65, 0x70];
const OID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const OID_P384: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];
const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];

fn ed25519_pkcs8(seed: &[u8]) -> Vec<u8> {
    seq(&[
        der_uint(&[0]),
        seq(&[der(0x06, OID_ED25519)]),
        der(0x04, &der(0x04, seed)),
    ])
}

fn ecdsa_pkcs8(algorithm: Algorithm, d: &[u8], public: &[u8]) -> Vec<u8> {
    let (curve, size) = if algorithm == Algorithm::EcdsaP384 {
        (OID_P384, 48usize)
    } else {
        (OID_P256, 32)
    };
    // RFC 5915: the scalar in the curve's size. BIND writes it as an integer
    // (OpenSSL's BN_bn2bin): one key in 256 has a shorter one, which ring
    // refuses ("InvalidComponent") unless the leading zeros are put back.
    let mut scalar = vec![0u8; size.saturating_sub(d.len())];
    scalar.extend_from_slice(d);
    let mut point = vec![0x00, 0x04];
    point.extend_from_slice(public);
    let ec_private = seq(&[
        der_uint(&[1]),
        der(0x04, &scalar),
        der(0xa1, &der(0x03, &point)),
    ]);
    seq(&[
        der_uint(&[0]),
        seq(&[der(0x06, OID_EC_PUBLIC_KEY), der(0x06, curve)]),
        der(0x04, &ec_private),
    ])
}

fn rsa_pkcs8(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut fields = vec![der_uint(&[0])];
    fields.extend(parts.iter().map(|p| der_uint(p)));
    let rsa_private = seq(&fields);
    seq(&[
        der_uint(&[0]),
        seq(&[der(0x06, OID_RSA), der(0x05, &[])]),
        der(0x04, &rsa_private),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KSK_FLAGS;
    use ring::signature::EcdsaKeyPair;

    /// A BIND key pair whose private scalar BIND wrote without its leading
    /// zero byte (one key in 256) imports, and is the same key.
    #[test]
    fn a_bind_ecdsa_key_with_a_short_scalar_imports() {
        let zone: Name = "example.".parse().unwrap();
        let rng = ring::rand::SystemRandom::new();
        let alg = &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        // The scalar sits after "02 01 01 04 20" in ring's PKCS #8.
        let marker = [0x02, 0x01, 0x01, 0x04, 0x20];
        let (pkcs8, d) = (0..20_000)
            .find_map(|_| {
                let p = EcdsaKeyPair::generate_pkcs8(alg, &rng)
                    .ok()?
                    .as_ref()
                    .to_vec();
                let at = p.windows(5).position(|w| w == marker)? + 5;
                let d = p.get(at..at + 32)?.to_vec();
                (d[0] == 0).then_some((p, d))
            })
            .expect("a scalar with a leading zero in 20,000 keys");
        let key = SigningKey::from_pkcs8(&zone, Algorithm::EcdsaP256, KSK_FLAGS, 0, pkcs8).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD;
        let rdata = key.dnskey_rdata();
        let public = format!("example. IN DNSKEY 257 3 13 {}\n", b64.encode(&rdata[4..]));
        let private = format!(
            "Private-key-format: v1.3\nAlgorithm: 13 (ECDSAP256SHA256)\nPrivateKey: {}\n",
            b64.encode(&d[1..])
        );
        let imported = from_bind(&zone, &public, &private, 0).unwrap();
        assert_eq!(imported.tag(), key.tag());
        // And the padding is exactly the leading zero put back.
        let short = ecdsa_pkcs8(Algorithm::EcdsaP256, &d[1..], &rdata[4..]);
        assert_eq!(short, ecdsa_pkcs8(Algorithm::EcdsaP256, &d, &rdata[4..]));
    }
}
