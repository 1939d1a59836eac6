//! Signing keys: generated, written to and read from key files, turned into
//! DNSKEY and DS RDATA, and signing.
//!
//! A key file is text, one `name: value` per line (`#` starts a comment):
//!
//! ```text
//! # Lode DNSSEC key
//! zone: example.
//! algorithm: 13
//! flags: 257                 # 257 KSK (or CSK), 256 ZSK
//! tag: 12345
//! created: 1764140000        # Unix seconds
//! role: ksk                  # ksk, zsk or csk (single-type signing)
//! publish: 1764140000        # the key's timers (crate::timing), Unix seconds;
//! ready: 1764147200          #   those not set never come
//! pkcs8: MIGHAgEAMBMGByqGSM49…  # the private key, PKCS #8 DER in Base64
//! ```
//!
//! A file without timers is from before them: the key is published and
//! signs since `created`. Without `role`, flags 256 is a ZSK, and 257 a KSK
//! when its zone has a ZSK, else a CSK.
//!
//! Files are written whole (a temporary file, fsync, rename) with mode 0600.

use std::fmt;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use lode_wire::{Name, NameRef};

use crate::timing::{Role, Timing};
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _};

/// A DNSSEC signing algorithm (RFC 8624 numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// 8: RSA/SHA-256 (imported keys only).
    RsaSha256,
    /// 13: ECDSA P-256 with SHA-256 (the default).
    EcdsaP256,
    /// 14: ECDSA P-384 with SHA-384.
    EcdsaP384,
    /// 15: Ed25519.
    Ed25519,
}

impl Algorithm {
    /// The algorithm's number.
    pub fn number(self) -> u8 {
        match self {
            Algorithm::RsaSha256 => 8,
            Algorithm::EcdsaP256 => 13,
            Algorithm::EcdsaP384 => 14,
            Algorithm::Ed25519 => 15,
        }
    }
    /// The algorithm of a number.
    pub fn from_number(n: u8) -> Option<Algorithm> {
        Some(match n {
            8 => Algorithm::RsaSha256,
            13 => Algorithm::EcdsaP256,
            14 => Algorithm::EcdsaP384,
            15 => Algorithm::Ed25519,
            _ => return None,
        })
    }
    /// Parses a number or Knot's name (`ecdsap256sha256`, `ed25519`, …).
    pub fn parse(text: &str) -> Option<Algorithm> {
        if let Ok(n) = text.parse::<u8>() {
            return Algorithm::from_number(n);
        }
        Some(match text.to_ascii_lowercase().as_str() {
            "rsasha256" => Algorithm::RsaSha256,
            "ecdsap256sha256" => Algorithm::EcdsaP256,
            "ecdsap384sha384" => Algorithm::EcdsaP384,
            "ed25519" => Algorithm::Ed25519,
            _ => return None,
        })
    }
    /// Knot's name of the algorithm.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::RsaSha256 => "rsasha256",
            Algorithm::EcdsaP256 => "ecdsap256sha256",
            Algorithm::EcdsaP384 => "ecdsap384sha384",
            Algorithm::Ed25519 => "ed25519",
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// DNSKEY flags of a key signing key (Zone Key + Secure Entry Point).
pub const KSK_FLAGS: u16 = 257;
/// DNSKEY flags of a zone signing key.
pub const ZSK_FLAGS: u16 = 256;

/// Why a key could not be made, read or written.
#[derive(Debug)]
#[non_exhaustive]
pub enum KeyError {
    /// A key size (bits) the algorithm does not take.
    BadSize(Algorithm, u32),
    /// The private key is not a key of its algorithm.
    BadKey(String),
    /// A key file is not in the key file format (file, line, reason).
    Format(PathBuf, usize, String),
    /// Reading or writing a file.
    Io(PathBuf, std::io::Error),
}

impl Algorithm {
    /// The size of a new key of this algorithm: `bits` when the algorithm
    /// takes it (RSA: 2048 to 4096, default 2048, Knot's), else the curve's
    /// (a size other than that is refused).
    pub fn key_bits(self, bits: Option<u32>) -> Result<u32, KeyError> {
        let natural = match self {
            Algorithm::EcdsaP256 | Algorithm::Ed25519 => 256,
            Algorithm::EcdsaP384 => 384,
            Algorithm::RsaSha256 => 2048,
        };
        let bits = bits.unwrap_or(natural);
        let fits = match self {
            Algorithm::RsaSha256 => (2048..=4096).contains(&bits),
            _ => bits == natural,
        };
        if fits {
            Ok(bits)
        } else {
            Err(KeyError::BadSize(self, bits))
        }
    }
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::BadSize(a, bits) => write!(
                f,
                "{bits}-bit keys of algorithm {a}: {}",
                if *a == Algorithm::RsaSha256 {
                    "RSA keys are 2048 to 4096 bits"
                } else {
                    "the curve fixes the size (leave ksk-size/zsk-size out)"
                }
            ),
            KeyError::BadKey(why) => write!(f, "not a usable private key: {why}"),
            KeyError::Format(p, line, why) => write!(f, "{}:{line}: {why}", p.display()),
            KeyError::Io(p, e) => write!(f, "{}: {e}", p.display()),
        }
    }
}

impl std::error::Error for KeyError {}

enum Pair {
    Ecdsa(EcdsaKeyPair),
    Ed25519(Ed25519KeyPair),
    Rsa(signature::RsaKeyPair),
    /// ECDSA with RFC 6979 nonces (reproducible-signing).
    P256(p256::ecdsa::SigningKey),
    /// ECDSA P-384 with RFC 6979 nonces.
    P384(p384::ecdsa::SigningKey),
    /// A key in a PKCS #11 token, signing there (see `hsm.rs`).
    Token(crate::hsm::TokenKey),
}

/// One key: its DNSKEY facts and its private half.
pub struct SigningKey {
    /// The zone it belongs to.
    pub zone: Name,
    /// Its algorithm.
    pub algorithm: Algorithm,
    /// DNSKEY flags ([`KSK_FLAGS`] or [`ZSK_FLAGS`]).
    pub flags: u16,
    /// When it was made (Unix seconds).
    pub created: u64,
    /// What it signs.
    pub role: Role,
    /// Its events (publish, active, …).
    pub timing: Timing,
    /// The public key as DNSKEY carries it.
    public: Vec<u8>,
    /// The key tag (RFC 4034 Appendix B).
    tag: u16,
    pkcs8: Vec<u8>,
    pair: Pair,
    rng: SystemRandom,
    /// Its file named the role (else it was guessed from the flags).
    role_given: bool,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("zone", &self.zone)
            .field("algorithm", &self.algorithm)
            .field("flags", &self.flags)
            .field("tag", &self.tag)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A new key of `algorithm` for `zone`.
    pub fn generate(
        zone: &Name,
        algorithm: Algorithm,
        flags: u16,
        now: u64,
    ) -> Result<SigningKey, KeyError> {
        SigningKey::generate_sized(zone, algorithm, flags, None, now)
    }

    /// [`SigningKey::generate`] with a size in bits (Knot's `ksk-size`,
    /// `zsk-size`): RSA 2048 (the default) to 4096; the curve fixes it for
    /// the others (a size other than the curve's is refused).
    pub fn generate_sized(
        zone: &Name,
        algorithm: Algorithm,
        flags: u16,
        bits: Option<u32>,
        now: u64,
    ) -> Result<SigningKey, KeyError> {
        let bits = algorithm.key_bits(bits)?;
        let rng = SystemRandom::new();
        let pkcs8 = match algorithm {
            Algorithm::EcdsaP256 | Algorithm::EcdsaP384 => {
                EcdsaKeyPair::generate_pkcs8(ecdsa_alg(algorithm), &rng)
                    .map_err(|e| KeyError::BadKey(e.to_string()))?
                    .as_ref()
                    .to_vec()
            }
            Algorithm::Ed25519 => Ed25519KeyPair::generate_pkcs8(&rng)
                .map_err(|e| KeyError::BadKey(e.to_string()))?
                .as_ref()
                .to_vec(),
            Algorithm::RsaSha256 => {
                use rsa::pkcs8::EncodePrivateKey as _;
                let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, bits as usize)
                    .map_err(|e| KeyError::BadKey(e.to_string()))?;
                key.to_pkcs8_der()
                    .map_err(|e| KeyError::BadKey(e.to_string()))?
                    .as_bytes()
                    .to_vec()
            }
        };
        SigningKey::from_pkcs8(zone, algorithm, flags, now, pkcs8)
    }

    /// A new key of `algorithm` made in `token` (its private key never
    /// leaves it; the key file names the token and the key's id).
    pub fn generate_in(
        token: &std::sync::Arc<crate::hsm::Token>,
        zone: &Name,
        algorithm: Algorithm,
        flags: u16,
        bits: Option<u32>,
        now: u64,
    ) -> Result<SigningKey, KeyError> {
        let bits = algorithm.key_bits(bits)?;
        let label = format!("lode {}", zone.to_lowercase());
        let (key, public) = token.generate(algorithm, bits, &label)?;
        Ok(SigningKey::from_token(
            zone, algorithm, flags, now, key, public,
        ))
    }

    /// The key `id` in `token`.
    pub fn in_token(
        token: &std::sync::Arc<crate::hsm::Token>,
        zone: &Name,
        algorithm: Algorithm,
        flags: u16,
        created: u64,
        id: &[u8],
    ) -> Result<SigningKey, KeyError> {
        let (key, public) = token.find(algorithm, id)?;
        Ok(SigningKey::from_token(
            zone, algorithm, flags, created, key, public,
        ))
    }

    fn from_token(
        zone: &Name,
        algorithm: Algorithm,
        flags: u16,
        created: u64,
        key: crate::hsm::TokenKey,
        public: Vec<u8>,
    ) -> SigningKey {
        SigningKey::assemble(
            zone,
            algorithm,
            flags,
            created,
            public,
            Vec::new(),
            Pair::Token(key),
        )
    }

    /// A key of its parts, its role from its flags, published and signing
    /// since `created` (the caller sets what it knows better).
    fn assemble(
        zone: &Name,
        algorithm: Algorithm,
        flags: u16,
        created: u64,
        public: Vec<u8>,
        pkcs8: Vec<u8>,
        pair: Pair,
    ) -> SigningKey {
        let mut k = SigningKey {
            zone: zone.to_lowercase(),
            algorithm,
            flags,
            created,
            role: if flags & 1 == 1 { Role::Ksk } else { Role::Zsk },
            timing: Timing::since(created),
            public,
            tag: 0,
            pkcs8,
            pair,
            rng: SystemRandom::new(),
            role_given: false,
        };
        k.tag = key_tag(&k.dnskey_rdata());
        k
    }

    /// The key's token, when it is in one.
    pub fn token_key(&self) -> Option<&crate::hsm::TokenKey> {
        match &self.pair {
            Pair::Token(t) => Some(t),
            _ => None,
        }
    }

    /// Signatures this key's store failed to make so far (a token that
    /// went away; always 0 for a key in a file): a signer that sees the
    /// count move refuses what it signed.
    pub fn failures(&self) -> u64 {
        self.token_key().map_or(0, |t| t.token.failures())
    }

    /// A key from its PKCS #8 private key.
    pub fn from_pkcs8(
        zone: &Name,
        algorithm: Algorithm,
        flags: u16,
        created: u64,
        pkcs8: Vec<u8>,
    ) -> Result<SigningKey, KeyError> {
        let rng = SystemRandom::new();
        let bad = |e: &dyn fmt::Display| KeyError::BadKey(e.to_string());
        let (pair, public) = match algorithm {
            Algorithm::EcdsaP256 | Algorithm::EcdsaP384 => {
                let p = EcdsaKeyPair::from_pkcs8(ecdsa_alg(algorithm), &pkcs8, &rng)
                    .map_err(|e| bad(&e))?;
                // The uncompressed point less its 0x04 (RFC 6605 §4).
                let public = p.public_key().as_ref()[1..].to_vec();
                (Pair::Ecdsa(p), public)
            }
            Algorithm::Ed25519 => {
                let p = Ed25519KeyPair::from_pkcs8_maybe_unchecked(&pkcs8).map_err(|e| bad(&e))?;
                let public = p.public_key().as_ref().to_vec();
                (Pair::Ed25519(p), public)
            }
            Algorithm::RsaSha256 => {
                let p = signature::RsaKeyPair::from_pkcs8(&pkcs8).map_err(|e| bad(&e))?;
                let public = rsa_public(p.public_key().as_ref())
                    .ok_or_else(|| KeyError::BadKey("RSA public key not in PKCS #1 form".into()))?;
                (Pair::Rsa(p), public)
            }
        };
        Ok(SigningKey::assemble(
            zone, algorithm, flags, created, public, pkcs8, pair,
        ))
    }

    /// The key signing with deterministic nonces (RFC 6979), so that the
    /// same data signed twice gives the same signature (Knot's
    /// `reproducible-signing`). Ed25519 and RSA signatures are so already.
    pub fn reproducible(mut self) -> Result<SigningKey, KeyError> {
        use p256::pkcs8::DecodePrivateKey as _;
        let bad = |e: &dyn fmt::Display| KeyError::BadKey(e.to_string());
        self.pair = match (&self.pair, self.algorithm) {
            (Pair::Ecdsa(_), Algorithm::EcdsaP256) => Pair::P256(
                p256::ecdsa::SigningKey::from_pkcs8_der(&self.pkcs8).map_err(|e| bad(&e))?,
            ),
            (Pair::Ecdsa(_), Algorithm::EcdsaP384) => Pair::P384(
                p384::ecdsa::SigningKey::from_pkcs8_der(&self.pkcs8).map_err(|e| bad(&e))?,
            ),
            _ => return Ok(self),
        };
        Ok(self)
    }

    /// Another copy of the key (its private key loaded again).
    pub fn try_clone(&self) -> Result<SigningKey, KeyError> {
        let mut k = match &self.pair {
            Pair::Token(t) => SigningKey::from_token(
                &self.zone,
                self.algorithm,
                self.flags,
                self.created,
                t.clone(),
                self.public.clone(),
            ),
            _ => SigningKey::from_pkcs8(
                &self.zone,
                self.algorithm,
                self.flags,
                self.created,
                self.pkcs8.clone(),
            )?,
        };
        k.role = self.role;
        k.timing = self.timing;
        k.role_given = self.role_given;
        Ok(k)
    }

    /// The key tag.
    pub fn tag(&self) -> u16 {
        self.tag
    }
    /// True for a key signing key (the SEP bit).
    pub fn is_ksk(&self) -> bool {
        self.flags & 1 == 1
    }
    /// The DNSKEY RDATA: flags, protocol 3, algorithm, public key.
    pub fn dnskey_rdata(&self) -> Vec<u8> {
        let mut r = Vec::with_capacity(4 + self.public.len());
        r.extend_from_slice(&self.flags.to_be_bytes());
        r.push(3);
        r.push(self.algorithm.number());
        r.extend_from_slice(&self.public);
        r
    }
    /// The DS RDATA of this key with digest type 2 (SHA-256) or 4 (SHA-384).
    pub fn ds_rdata(&self, digest_type: u8) -> Vec<u8> {
        let owner = self.zone.to_lowercase();
        let mut data = owner.as_wire().to_vec();
        data.extend_from_slice(&self.dnskey_rdata());
        let alg = if digest_type == 4 {
            &ring::digest::SHA384
        } else {
            &ring::digest::SHA256
        };
        let digest = ring::digest::digest(alg, &data);
        let mut r = Vec::with_capacity(4 + digest.as_ref().len());
        r.extend_from_slice(&self.tag.to_be_bytes());
        r.push(self.algorithm.number());
        r.push(if digest_type == 4 { 4 } else { 2 });
        r.extend_from_slice(digest.as_ref());
        r
    }
    /// The DNSKEY RDATA in presentation form (`257 3 13 BASE64`).
    pub fn dnskey_text(&self) -> String {
        format!(
            "{} 3 {} {}",
            self.flags,
            self.algorithm.number(),
            base64::engine::general_purpose::STANDARD.encode(&self.public)
        )
    }
    /// The DS RDATA (digest type 2) in presentation form (`TAG 13 2 HEX`).
    pub fn ds_text(&self) -> String {
        let rdata = self.ds_rdata(2);
        let hex: String = rdata[4..].iter().map(|b| format!("{b:02X}")).collect();
        format!("{} {} {} {hex}", self.tag, rdata[2], rdata[3])
    }
    /// Signs `data` (an RRSIG's signed data) as the RRSIG's signature field.
    pub fn sign(&self, data: &[u8]) -> Vec<u8> {
        match &self.pair {
            Pair::Ecdsa(p) => p
                .sign(&self.rng, data)
                .map(|s| s.as_ref().to_vec())
                .unwrap_or_default(),
            Pair::Ed25519(p) => p.sign(data).as_ref().to_vec(),
            Pair::Rsa(p) => {
                let mut sig = vec![0; p.public().modulus_len()];
                match p.sign(&signature::RSA_PKCS1_SHA256, &self.rng, data, &mut sig) {
                    Ok(()) => sig,
                    Err(_) => Vec::new(),
                }
            }
            Pair::P256(k) => {
                use p256::ecdsa::signature::Signer as _;
                let sig: p256::ecdsa::Signature = k.sign(data);
                sig.to_bytes().to_vec()
            }
            Pair::P384(k) => {
                use p384::ecdsa::signature::Signer as _;
                let sig: p384::ecdsa::Signature = k.sign(data);
                sig.to_bytes().to_vec()
            }
            // A failure is counted by the token (see `failures`).
            Pair::Token(k) => k.sign(self.algorithm, data).unwrap_or_default(),
        }
    }

    /// The key files' name without extension, as BIND's
    /// (`K<zone>+<algorithm>+<tag>`).
    pub fn stem(&self) -> String {
        format!(
            "K{}+{:03}+{:05}",
            self.zone.to_string().trim_end_matches('.'),
            self.algorithm.number(),
            self.tag
        )
    }

    /// The private key file's name in a zone's key folder
    /// (`<stem>.private`, mode 0600: the key itself, its role and timing).
    pub fn file_name(&self) -> String {
        format!("{}.private", self.stem())
    }

    /// The public key file's name beside it (`<stem>.key`, as BIND's: the
    /// DNSKEY record, to publish or hand to another signer).
    pub fn public_file_name(&self) -> String {
        format!("{}.key", self.stem())
    }

    /// The public key file's text: comments and the DNSKEY record, as
    /// `dnssec-keygen` writes a `.key` file.
    pub fn public_file_text(&self) -> String {
        format!(
            "; This is a {} key, keyid {}, for {}\n; Created: {} (Unix seconds) by Lode\n{} IN DNSKEY {}\n",
            if self.is_ksk() { "key-signing" } else { "zone-signing" },
            self.tag,
            self.zone,
            self.created,
            self.zone,
            self.dnskey_text()
        )
    }

    /// The key file's text.
    pub fn to_file_text(&self) -> String {
        use std::fmt::Write as _;
        let mut text = format!(
            "# Lode DNSSEC key\nzone: {}\nalgorithm: {}\nflags: {}\ntag: {}\ncreated: {}\nrole: {}\n",
            self.zone,
            self.algorithm.number(),
            self.flags,
            self.tag,
            self.created,
            self.role.name().to_ascii_lowercase(),
        );
        for (name, at) in self.timing.fields() {
            if let Some(at) = at {
                let _ = writeln!(text, "{name}: {at}");
            }
        }
        match &self.pair {
            Pair::Token(t) => {
                let _ = writeln!(
                    text,
                    "pkcs11: {} {}",
                    crate::hsm::label_text(t.token.label()),
                    crate::hsm::hex(&t.id)
                );
            }
            _ => {
                let _ = writeln!(
                    text,
                    "pkcs8: {}",
                    base64::engine::general_purpose::STANDARD.encode(&self.pkcs8)
                );
            }
        }
        text
    }

    /// The key in `role` (the DNSKEY flags follow: 257 for a KSK or CSK).
    pub fn with_role(mut self, role: Role) -> SigningKey {
        self.role = role;
        let flags = if role.is_ksk() { KSK_FLAGS } else { ZSK_FLAGS };
        if flags != self.flags {
            self.flags = flags;
            self.tag = key_tag(&self.dnskey_rdata());
        }
        self
    }

    /// Writes the private key file into `dir` (made if missing), whole,
    /// mode 0600, then the public one (mode 0644); the private file's path.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, KeyError> {
        let path = write_private(dir, &self.file_name(), &self.to_file_text())?;
        write_file(
            dir,
            &self.public_file_name(),
            &self.public_file_text(),
            0o644,
        )?;
        Ok(path)
    }

    /// Removes the key's files from `dir` (the private one first: a crash
    /// in between leaves a public key alone, which is not read as a key).
    pub fn remove_files(&self, dir: &Path) -> Result<(), KeyError> {
        for name in [self.file_name(), self.public_file_name()] {
            let path = dir.join(name);
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(KeyError::Io(path, e)),
            }
        }
        Ok(())
    }

    /// Reads a key file.
    pub fn read(path: &Path) -> Result<SigningKey, KeyError> {
        let text = std::fs::read_to_string(path).map_err(|e| KeyError::Io(path.into(), e))?;
        let fail = |line: usize, why: String| KeyError::Format(path.into(), line, why);
        let (mut zone, mut alg, mut flags, mut created, mut pkcs8) = (None, None, None, 0, None);
        let mut in_token: Option<(String, Vec<u8>)> = None;
        let (mut role, mut timing, mut timed) = (None, Timing::default(), false);
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let Some((k, v)) = line.split_once(':') else {
                return Err(fail(i + 1, format!("{line:?}: expected `name: value`")));
            };
            let v = v.trim();
            match k.trim() {
                "zone" => {
                    zone = Some(
                        Name::parse(v, None).map_err(|e| fail(i + 1, format!("zone {v}: {e}")))?,
                    )
                }
                "algorithm" => {
                    alg = Some(
                        Algorithm::parse(v)
                            .ok_or_else(|| fail(i + 1, format!("unknown algorithm {v}")))?,
                    )
                }
                "flags" => {
                    flags = Some(
                        v.parse::<u16>()
                            .map_err(|e| fail(i + 1, format!("flags: {e}")))?,
                    )
                }
                "created" => {
                    created = v
                        .parse::<u64>()
                        .map_err(|e| fail(i + 1, format!("created: {e}")))?
                }
                "tag" => {}
                "role" => {
                    role = Some(
                        Role::parse(v).ok_or_else(|| fail(i + 1, format!("unknown role {v:?}")))?,
                    )
                }
                "pkcs11" => {
                    let mut w = v.split_whitespace();
                    let parsed = (w.next(), w.next(), w.next());
                    let (Some(label), Some(id), None) = parsed else {
                        return Err(fail(
                            i + 1,
                            "pkcs11: expected the token's label and the key's id (hex)".into(),
                        ));
                    };
                    let label = crate::hsm::parse_label(label)
                        .ok_or_else(|| fail(i + 1, format!("pkcs11: token label {label:?}")))?;
                    let id = crate::hsm::unhex(id)
                        .ok_or_else(|| fail(i + 1, format!("pkcs11: key id {id:?} is not hex")))?;
                    in_token = Some((label, id));
                }
                "pkcs8" => {
                    pkcs8 = Some(
                        base64::engine::general_purpose::STANDARD
                            .decode(v)
                            .map_err(|e| fail(i + 1, format!("pkcs8: {e}")))?,
                    )
                }
                other => match timing.field_mut(other) {
                    Some(field) => {
                        *field = Some(
                            v.parse::<u64>()
                                .map_err(|e| fail(i + 1, format!("{other}: {e}")))?,
                        );
                        timed = true;
                    }
                    None => return Err(fail(i + 1, format!("unknown field {other:?}"))),
                },
            }
        }
        let missing = |what: &str| fail(0, format!("no {what} line"));
        let zone = zone.ok_or_else(|| missing("zone"))?;
        let alg = alg.ok_or_else(|| missing("algorithm"))?;
        let flags = flags.ok_or_else(|| missing("flags"))?;
        let mut key = match in_token {
            Some((label, id)) => {
                let token = crate::hsm::token(&label).ok_or_else(|| {
                    fail(
                        0,
                        format!("the key is in PKCS #11 token {label:?}, which no keystore of the configuration opens"),
                    )
                })?;
                SigningKey::in_token(&token, &zone, alg, flags, created, &id)
            }
            None => SigningKey::from_pkcs8(&zone, alg, flags, created, pkcs8.ok_or_else(|| missing("pkcs8"))?),
        }
        .map_err(|e| fail(0, e.to_string()))?;
        if let Some(role) = role {
            if role.is_ksk() != key.is_ksk() {
                return Err(fail(0, format!("role {role} with flags {}", key.flags)));
            }
            key.role = role;
        }
        if timed {
            key.timing = timing;
        }
        key.role_given = role.is_some();
        Ok(key)
    }

    /// Every key of `zone` in `dir` (none if the folder is missing): its
    /// `.private` files. A folder of an older version, whose `.key` files
    /// held the private keys, is read too, and its files split as they
    /// are now (when the folder can be written).
    pub fn read_all(dir: &Path, zone: NameRef<'_>) -> Result<Vec<SigningKey>, KeyError> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(KeyError::Io(dir.into(), e)),
        };
        let mut keys = Vec::new();
        let mut old = Vec::new();
        for entry in entries {
            let path = entry.map_err(|e| KeyError::Io(dir.into(), e))?.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if !name.starts_with('K') {
                continue;
            }
            if name.ends_with(".private") {
                let key = SigningKey::read(&path)?;
                if key.zone.as_ref() == zone {
                    keys.push(key);
                }
            } else if name.ends_with(".key") && !path.with_extension("private").exists() {
                // A public key alone is not a key to sign with; a private
                // one is an older version's file.
                if is_old_key_file(&path) {
                    old.push(path);
                }
            }
        }
        for path in old {
            let key = SigningKey::read(&path)?;
            if key.zone.as_ref() == zone {
                // Best effort: read-only folders (a listing by another
                // user) keep the old file, read as it is.
                let _ = key.write(dir);
                keys.push(key);
            }
        }
        // Files from before roles: a lone key signing key is a CSK.
        if !keys.iter().any(|k| k.role.is_zsk()) {
            for k in keys.iter_mut().filter(|k| !k.role_given) {
                k.role = Role::Csk;
            }
        }
        keys.sort_by_key(|k| (std::cmp::Reverse(k.flags), k.created, k.tag));
        Ok(keys)
    }
}

/// True when the `.key` file at `path` is an older version's private key
/// file (its first line says so), not a public key.
fn is_old_key_file(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.starts_with("# Lode DNSSEC key"))
}

/// Writes `text` as the file `name` in `dir` (made if missing): whole (a
/// temporary file, fsync, rename, the folder synced), mode 0600 — key
/// files and what the key folder keeps beside them.
pub fn write_private(dir: &Path, name: &str, text: &str) -> Result<PathBuf, KeyError> {
    write_file(dir, name, text, 0o600)
}

/// [`write_private`] with another mode.
fn write_file(dir: &Path, name: &str, text: &str, mode: u32) -> Result<PathBuf, KeyError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e| KeyError::Io(p, e)
    };
    let new_dir = !dir.is_dir();
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .map_err(io(&tmp))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    // The file's name in its folder, and a new folder's in its parent: a
    // key is on disk before anything signed with it is.
    let parent = dir.parent().filter(|_| new_dir).map(|p| {
        if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        }
    });
    for d in std::iter::once(dir).chain(parent) {
        if let Ok(f) = std::fs::File::open(d) {
            let _ = f.sync_all();
        }
    }
    Ok(path)
}

fn ecdsa_alg(a: Algorithm) -> &'static signature::EcdsaSigningAlgorithm {
    if a == Algorithm::EcdsaP384 {
        &signature::ECDSA_P384_SHA384_FIXED_SIGNING
    } else {
        &signature::ECDSA_P256_SHA256_FIXED_SIGNING
    }
}

/// The RFC 3110 public key (exponent length, exponent, modulus) of a
/// PKCS #1 `RSAPublicKey` DER.
fn rsa_public(der: &[u8]) -> Option<Vec<u8>> {
    fn item(d: &[u8]) -> Option<(u8, &[u8], &[u8])> {
        let tag = *d.first()?;
        let (len, at) = match *d.get(1)? {
            n if n < 0x80 => (n as usize, 2),
            0x81 => (*d.get(2)? as usize, 3),
            0x82 => (u16::from_be_bytes([*d.get(2)?, *d.get(3)?]) as usize, 4),
            _ => return None,
        };
        let body = d.get(at..at + len)?;
        Some((tag, body, &d[at + len..]))
    }
    let (0x30, seq, _) = item(der)? else {
        return None;
    };
    let (0x02, n, rest) = item(seq)? else {
        return None;
    };
    let (0x02, e, _) = item(rest)? else {
        return None;
    };
    let strip = |x: &[u8]| -> Vec<u8> {
        let i = x.iter().position(|&b| b != 0).unwrap_or(x.len());
        x[i..].to_vec()
    };
    Some(rsa_dnskey(&strip(n), &strip(e)))
}

/// The RFC 3110 public key of an RSA modulus and exponent (big-endian,
/// without leading zeros).
pub(crate) fn rsa_dnskey(n: &[u8], e: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    if e.len() < 256 {
        out.push(e.len() as u8);
    } else {
        out.push(0);
        out.extend_from_slice(&(e.len() as u16).to_be_bytes());
    }
    out.extend_from_slice(e);
    out.extend_from_slice(n);
    out
}

/// DNSKEY RDATA from its presentation form (`FLAGS 3 ALGORITHM BASE64…`,
/// the key possibly split in words).
pub fn dnskey_from_text(text: &str) -> Result<Vec<u8>, String> {
    let mut w = text.split_whitespace();
    let mut number = |what: &str| -> Result<u16, String> {
        w.next()
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| format!("expected {what}"))
    };
    let flags = number("the DNSKEY flags (256 or 257)")?;
    let protocol = number("the protocol (3)")?;
    let algorithm = number("the algorithm number")?;
    let key: String = w.collect();
    let key = base64::engine::general_purpose::STANDARD
        .decode(key)
        .map_err(|e| format!("the public key is not Base64: {e}"))?;
    if protocol != 3 || flags & 0x0100 == 0 || key.is_empty() || algorithm > 255 {
        return Err(
            "not a zone key (flags with the zone key bit, protocol 3, a public key)".into(),
        );
    }
    let mut r = flags.to_be_bytes().to_vec();
    r.push(3);
    r.push(algorithm as u8);
    r.extend_from_slice(&key);
    Ok(r)
}

/// The DNSKEY RDATA in presentation form (`257 3 13 BASE64`).
pub fn dnskey_to_text(rdata: &[u8]) -> String {
    if rdata.len() < 4 {
        return String::new();
    }
    format!(
        "{} {} {} {}",
        u16::from_be_bytes([rdata[0], rdata[1]]),
        rdata[2],
        rdata[3],
        base64::engine::general_purpose::STANDARD.encode(&rdata[4..])
    )
}

/// The key tag of DNSKEY RDATA (RFC 4034 Appendix B).
pub fn key_tag(rdata: &[u8]) -> u16 {
    let mut ac: u32 = 0;
    for (i, &b) in rdata.iter().enumerate() {
        ac += if i & 1 == 1 {
            u32::from(b)
        } else {
            u32::from(b) << 8
        };
    }
    ac += (ac >> 16) & 0xffff;
    (ac & 0xffff) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_survives_its_file() {
        let zone: Name = "Example.".parse().unwrap();
        let dir = std::env::temp_dir().join(format!("lode-key-{}", std::process::id()));
        for alg in [
            Algorithm::EcdsaP256,
            Algorithm::EcdsaP384,
            Algorithm::Ed25519,
        ] {
            let k = SigningKey::generate(&zone, alg, KSK_FLAGS, 7).unwrap();
            let path = k.write(&dir).unwrap();
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let back = SigningKey::read(&path).unwrap();
            assert_eq!(back.dnskey_rdata(), k.dnskey_rdata());
            assert_eq!(back.tag(), k.tag());
            assert_eq!(back.zone.to_string(), "example.");
            assert!(back.is_ksk());
        }
        let all = SigningKey::read_all(&dir, "example.".parse::<Name>().unwrap().as_ref()).unwrap();
        assert_eq!(all.len(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The private key in `.private` (0600), the public one in `.key`
    /// (0644, BIND's form); an older folder's private `.key` files are read
    /// and split; a public key alone is no key to sign with.
    #[test]
    fn keys_are_split_as_bind_splits_them_and_old_folders_are_read() {
        use std::os::unix::fs::PermissionsExt as _;
        let zone: Name = "example.".parse().unwrap();
        let dir = std::env::temp_dir().join(format!("lode-key-split-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let new = SigningKey::generate(&zone, Algorithm::EcdsaP256, KSK_FLAGS, 7).unwrap();
        let private = new.write(&dir).unwrap();
        assert!(private.to_str().unwrap().ends_with(".private"));
        let public = dir.join(new.public_file_name());
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&private), mode(&public)), (0o600, 0o644));
        let text = std::fs::read_to_string(&public).unwrap();
        assert!(!text.contains("pkcs8"), "{text}");
        let record = text.lines().find(|l| !l.starts_with(';')).unwrap();
        let rdata = record.split_once("DNSKEY").unwrap().1;
        assert_eq!(dnskey_from_text(rdata).unwrap(), new.dnskey_rdata());
        // An older version's file: the private key under `.key`.
        let old = SigningKey::generate(&zone, Algorithm::EcdsaP256, ZSK_FLAGS, 8).unwrap();
        let old_path = dir.join(old.public_file_name());
        std::fs::write(&old_path, old.to_file_text()).unwrap();
        // Another signer's public key, alone.
        let other = SigningKey::generate(&zone, Algorithm::EcdsaP256, ZSK_FLAGS, 9).unwrap();
        std::fs::write(dir.join(other.public_file_name()), other.public_file_text()).unwrap();
        let all = SigningKey::read_all(&dir, zone.as_ref()).unwrap();
        let tags: Vec<u16> = all.iter().map(|k| k.tag()).collect();
        assert_eq!(tags, [new.tag(), old.tag()]);
        assert!(dir.join(old.file_name()).exists(), "split");
        assert!(!std::fs::read_to_string(&old_path)
            .unwrap()
            .contains("pkcs8"));
        assert_eq!(SigningKey::read_all(&dir, zone.as_ref()).unwrap().len(), 2);
        old.remove_files(&dir).unwrap();
        assert!(!old_path.exists() && !dir.join(old.file_name()).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dnskey_text_round_trips() {
        let zone: Name = "example.".parse().unwrap();
        let k = SigningKey::generate(&zone, Algorithm::EcdsaP256, ZSK_FLAGS, 7).unwrap();
        let text = dnskey_to_text(&k.dnskey_rdata());
        assert_eq!(text, k.dnskey_text());
        assert_eq!(dnskey_from_text(&text).unwrap(), k.dnskey_rdata());
        assert!(dnskey_from_text("256 3 13").is_err());
        assert!(dnskey_from_text("0 3 13 AAAA").is_err(), "not a zone key");
        assert!(dnskey_from_text("256 3 13 !!").is_err());
    }

    #[test]
    fn the_key_tag_of_rfc_4034s_example() {
        // RFC 4034 §5.4: DNSKEY 256 3 5 AQOeiiR0GOMYkDshWoSKz9Xz… tag 60485
        // is RSA/SHA-1; the algorithm is irrelevant to the sum, checked here
        // with a tiny hand computation instead.
        assert_eq!(key_tag(&[1, 0, 3, 13]), (0x0100 + 0x030d) as u16);
        assert_eq!(key_tag(&[0xff, 0xff, 0xff, 0xff]), 0xffff);
    }
}
