//! Keys in a PKCS #11 token (an HSM; SoftHSM2 in the tests): made in the
//! token, never leaving it, signing there.
//!
//! ```text
//!  keystore config "pkcs11:token=LABEL;pin-source=FILE /path/to/module.so"
//!        │ open (once per token: the module loaded and initialised once,
//!        ▼        one session logged in for as long as the process runs)
//!  Token ── generate(algorithm) ─▶ key pair in the token (CKA_TOKEN, private
//!    │                              key sensitive, not extractable), a random
//!    │                              CKA_ID; its public key read back
//!    ├── find(id) ─▶ the private key's handle, the public key
//!    └── sign(handle, data) ─▶ on a session of the pool (one per signing
//!                              thread at the most; a session is used by one
//!                              thread at a time)
//! ```
//!
//! A key file of a token's key names the token and the key's CKA_ID
//! (`pkcs11: LABEL HEXID`) instead of holding the private key: the file
//! says which key, the token holds it. The PIN is read from a file
//! (`pin-source=/path`, RFC 7512) or an environment variable
//! (`pin-source=env:NAME`), never written in the configuration
//! (`pin-value` is refused).
//!
//! Mechanisms: ECDSA (`CKM_ECDSA` over the SHA-256 or SHA-384 digest made
//! here: its output is the r‖s of RFC 6605), Ed25519 (`CKM_EDDSA`), RSA
//! (`CKM_SHA256_RSA_PKCS`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::mechanism::eddsa::{EddsaParams, EddsaSignatureScheme};
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, AttributeType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
use cryptoki::slot::Slot;
use cryptoki::types::AuthPin;

use crate::key::{Algorithm, KeyError};

/// How a keystore reaches its token (Knot's `keystore` `config` for the
/// `pkcs11` backend: a PKCS #11 URI and the module's path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenConfig {
    /// The token's label (`token=`).
    pub label: String,
    /// Where the PIN is read from.
    pub pin: PinSource,
    /// The PKCS #11 module (a shared library).
    pub module: PathBuf,
}

/// Where a token's PIN comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinSource {
    /// A file whose first line is the PIN.
    File(PathBuf),
    /// An environment variable.
    Env(String),
}

impl TokenConfig {
    /// Parses `pkcs11:token=LABEL;pin-source=FILE|env:NAME MODULE`.
    pub fn parse(text: &str) -> Result<TokenConfig, String> {
        let mut words = text.split_whitespace();
        let (Some(uri), Some(module), None) = (words.next(), words.next(), words.next()) else {
            return Err(format!(
                "{text:?}: expected \"pkcs11:token=LABEL;pin-source=FILE /path/to/module.so\""
            ));
        };
        let attrs = uri
            .strip_prefix("pkcs11:")
            .ok_or_else(|| format!("{uri:?} is not a PKCS #11 URI (pkcs11:…)"))?;
        let (mut label, mut pin) = (None, None);
        for attr in attrs.split(';').filter(|a| !a.is_empty()) {
            let (k, v) = attr
                .split_once('=')
                .ok_or_else(|| format!("{attr:?}: expected name=value"))?;
            let v = percent_decode(v)?;
            match k {
                "token" => label = Some(v),
                "pin-source" => {
                    pin = Some(match v.strip_prefix("env:") {
                        Some(var) => PinSource::Env(var.to_string()),
                        None => {
                            PinSource::File(PathBuf::from(v.strip_prefix("file:").unwrap_or(&v)))
                        }
                    })
                }
                "pin-value" => {
                    return Err("pin-value puts the PIN in the configuration in clear: use \
                                pin-source=/path/to/file or pin-source=env:VARIABLE"
                        .into())
                }
                other => {
                    return Err(format!(
                        "{other:?}: not a PKCS #11 URI attribute Lode reads (token, pin-source)"
                    ))
                }
            }
        }
        Ok(TokenConfig {
            label: label.ok_or("the URI names no token (token=LABEL)")?,
            pin: pin.ok_or("the URI has no pin-source (a file, or env:VARIABLE)")?,
            module: PathBuf::from(module),
        })
    }

    fn read_pin(&self) -> Result<String, String> {
        match &self.pin {
            PinSource::File(p) => std::fs::read_to_string(p)
                .map(|t| t.lines().next().unwrap_or("").to_string())
                .map_err(|e| format!("PIN file {}: {e}", p.display())),
            PinSource::Env(var) => std::env::var(var)
                .map_err(|_| format!("environment variable {var} (the PIN) is not set")),
        }
    }
}

fn percent_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("{s:?}: bad %-escape"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{s:?}: not UTF-8"))
}

/// An open token: its module, slot, a logged-in session kept for the
/// process's life (the login state belongs to the application, lost when
/// its last session closes), and a pool of sessions to sign on.
pub struct Token {
    label: String,
    ctx: Pkcs11,
    slot: Slot,
    _login: Mutex<Session>,
    pool: Mutex<Vec<Session>>,
    /// Signatures the token failed to make, and the last failure.
    failures: std::sync::atomic::AtomicU64,
    last_failure: Mutex<String>,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token").field("label", &self.label).finish()
    }
}

/// The modules loaded (a module is initialised once per process) and the
/// tokens open, by label.
struct Registry {
    modules: Vec<(PathBuf, Pkcs11)>,
    tokens: Vec<Arc<Token>>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    modules: Vec::new(),
    tokens: Vec::new(),
});

fn pkcs_err(what: &str) -> impl Fn(cryptoki::error::Error) -> KeyError + '_ {
    move |e| KeyError::BadKey(format!("PKCS #11, {what}: {e}"))
}

/// Opens the token `config` names (or returns it, already open), logged in.
pub fn open(config: &TokenConfig) -> Result<Arc<Token>, KeyError> {
    let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(t) = reg.tokens.iter().find(|t| t.label == config.label) {
        return Ok(t.clone());
    }
    let ctx = match reg.modules.iter().find(|(p, _)| *p == config.module) {
        Some((_, c)) => c.clone(),
        None => {
            let ctx = Pkcs11::new(&config.module).map_err(|e| {
                KeyError::BadKey(format!("PKCS #11 module {}: {e}", config.module.display()))
            })?;
            ctx.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK))
                .map_err(pkcs_err("initialise"))?;
            reg.modules.push((config.module.clone(), ctx.clone()));
            ctx
        }
    };
    let slots = ctx
        .get_slots_with_initialized_token()
        .map_err(pkcs_err("slots"))?;
    let slot = slots
        .into_iter()
        .find(|s| {
            ctx.get_token_info(*s)
                .is_ok_and(|i| i.label().trim_end() == config.label)
        })
        .ok_or_else(|| {
            KeyError::BadKey(format!(
                "PKCS #11 module {}: no initialised token labelled {:?}",
                config.module.display(),
                config.label
            ))
        })?;
    let login = ctx.open_rw_session(slot).map_err(pkcs_err("session"))?;
    let pin = AuthPin::new(config.read_pin().map_err(KeyError::BadKey)?.into());
    match login.login(UserType::User, Some(&pin)) {
        Ok(()) => {}
        Err(cryptoki::error::Error::Pkcs11(cryptoki::error::RvError::UserAlreadyLoggedIn, _)) => {}
        Err(e) => return Err(pkcs_err("login")(e)),
    }
    let token = Arc::new(Token {
        label: config.label.clone(),
        ctx,
        slot,
        _login: Mutex::new(login),
        pool: Mutex::new(Vec::new()),
        failures: std::sync::atomic::AtomicU64::new(0),
        last_failure: Mutex::new(String::new()),
    });
    reg.tokens.push(token.clone());
    Ok(token)
}

/// The open token labelled `label`, if a keystore opened it.
pub fn token(label: &str) -> Option<Arc<Token>> {
    let reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    reg.tokens.iter().find(|t| t.label == label).cloned()
}

/// DER of the named curve (CKA_EC_PARAMS).
fn ec_params(alg: Algorithm) -> Option<&'static [u8]> {
    match alg {
        // 1.2.840.10045.3.1.7 (prime256v1)
        Algorithm::EcdsaP256 => Some(&[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]),
        // 1.3.132.0.34 (secp384r1)
        Algorithm::EcdsaP384 => Some(&[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22]),
        // 1.3.101.112 (id-Ed25519)
        Algorithm::Ed25519 => Some(&[0x06, 0x03, 0x2b, 0x65, 0x70]),
        Algorithm::RsaSha256 => None,
    }
}

/// A key in a token: its private key's handle and CKA_ID.
#[derive(Debug, Clone)]
pub struct TokenKey {
    /// The token.
    pub token: Arc<Token>,
    /// CKA_ID of both halves.
    pub id: Vec<u8>,
    handle: ObjectHandle,
}

impl Token {
    /// The token's label.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Signatures the token failed to make so far.
    pub fn failures(&self) -> u64 {
        self.failures.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The last failure's text.
    pub fn last_failure(&self) -> String {
        self.last_failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn with_session<T>(
        &self,
        f: impl FnOnce(&Session) -> Result<T, cryptoki::error::Error>,
    ) -> Result<T, KeyError> {
        let taken = self.pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let session = match taken {
            Some(s) => s,
            None => self
                .ctx
                .open_ro_session(self.slot)
                .map_err(pkcs_err("session"))?,
        };
        let out = f(&session).map_err(pkcs_err("operation"));
        self.pool
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(session);
        out
    }

    /// Makes a key pair of `algorithm` (`bits` for RSA) in the token;
    /// returns it and its public key as DNSKEY carries it.
    pub fn generate(
        self: &Arc<Self>,
        algorithm: Algorithm,
        bits: u32,
        label: &str,
    ) -> Result<(TokenKey, Vec<u8>), KeyError> {
        let mut id = vec![0u8; 16];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut id)
            .map_err(|_| KeyError::BadKey("no random bytes for a key id".into()))?;
        let common = |private: bool| {
            let mut v = vec![
                Attribute::Token(true),
                Attribute::Id(id.clone()),
                Attribute::Label(label.as_bytes().to_vec()),
            ];
            if private {
                v.extend([
                    Attribute::Private(true),
                    Attribute::Sensitive(true),
                    Attribute::Extractable(false),
                    Attribute::Sign(true),
                ]);
            } else {
                v.push(Attribute::Verify(true));
            }
            v
        };
        let mut public_t = common(false);
        let mechanism = match algorithm {
            Algorithm::RsaSha256 => {
                public_t.push(Attribute::ModulusBits((bits as u64).into()));
                public_t.push(Attribute::PublicExponent(vec![0x01, 0x00, 0x01]));
                Mechanism::RsaPkcsKeyPairGen
            }
            Algorithm::Ed25519 => {
                public_t.push(Attribute::EcParams(
                    ec_params(algorithm).unwrap_or_default().to_vec(),
                ));
                Mechanism::EccEdwardsKeyPairGen
            }
            _ => {
                public_t.push(Attribute::EcParams(
                    ec_params(algorithm).unwrap_or_default().to_vec(),
                ));
                Mechanism::EccKeyPairGen
            }
        };
        let private_t = common(true);
        let session = self
            .ctx
            .open_rw_session(self.slot)
            .map_err(pkcs_err("session"))?;
        let (_, handle) = session
            .generate_key_pair(&mechanism, &public_t, &private_t)
            .map_err(pkcs_err("key generation"))?;
        drop(session);
        let key = TokenKey {
            token: self.clone(),
            id,
            handle,
        };
        let public = key.public(algorithm)?;
        Ok((key, public))
    }

    /// The key whose CKA_ID is `id`, and its public key as DNSKEY carries it.
    pub fn find(
        self: &Arc<Self>,
        algorithm: Algorithm,
        id: &[u8],
    ) -> Result<(TokenKey, Vec<u8>), KeyError> {
        let template = [
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::Id(id.to_vec()),
        ];
        let found = self.with_session(|s| s.find_objects(&template))?;
        let handle = *found.first().ok_or_else(|| {
            KeyError::BadKey(format!(
                "PKCS #11 token {:?} holds no private key with id {}",
                self.label,
                hex(id)
            ))
        })?;
        let key = TokenKey {
            token: self.clone(),
            id: id.to_vec(),
            handle,
        };
        let public = key.public(algorithm)?;
        Ok((key, public))
    }
}

impl TokenKey {
    /// The public half's DNSKEY form, read from the token.
    fn public(&self, algorithm: Algorithm) -> Result<Vec<u8>, KeyError> {
        let template = [
            Attribute::Class(ObjectClass::PUBLIC_KEY),
            Attribute::Id(self.id.clone()),
        ];
        let t = &self.token;
        let attrs = t.with_session(|s| {
            let found = s.find_objects(&template)?;
            let Some(&public) = found.first() else {
                return Ok(Vec::new());
            };
            let want: &[AttributeType] = if algorithm == Algorithm::RsaSha256 {
                &[AttributeType::Modulus, AttributeType::PublicExponent]
            } else {
                &[AttributeType::EcPoint]
            };
            s.get_attributes(public, want)
        })?;
        let missing = || {
            KeyError::BadKey(format!(
                "PKCS #11 token {:?}: no public key with id {}",
                t.label,
                hex(&self.id)
            ))
        };
        match algorithm {
            Algorithm::RsaSha256 => {
                let (mut n, mut e) = (None, None);
                for a in attrs {
                    match a {
                        Attribute::Modulus(m) => n = Some(m),
                        Attribute::PublicExponent(x) => e = Some(x),
                        _ => {}
                    }
                }
                let (n, e) = (n.ok_or_else(missing)?, e.ok_or_else(missing)?);
                Ok(crate::key::rsa_dnskey(&n, &e))
            }
            _ => {
                let point = attrs
                    .into_iter()
                    .find_map(|a| match a {
                        Attribute::EcPoint(p) => Some(p),
                        _ => None,
                    })
                    .ok_or_else(missing)?;
                let size = match algorithm {
                    Algorithm::EcdsaP256 => 64,
                    Algorithm::EcdsaP384 => 96,
                    _ => 32,
                };
                // DER OCTET STRING around the point (some tokens give it
                // bare); ECDSA's is 0x04 ‖ x ‖ y, DNSKEY holds x ‖ y.
                if point.len() < size {
                    return Err(KeyError::BadKey(format!(
                        "PKCS #11: a public point of {} bytes",
                        point.len()
                    )));
                }
                Ok(point[point.len() - size..].to_vec())
            }
        }
    }

    /// Signs `data` in the token (the RRSIG's signature field).
    pub fn sign(&self, algorithm: Algorithm, data: &[u8]) -> Result<Vec<u8>, KeyError> {
        let digest;
        let (mechanism, input) = match algorithm {
            Algorithm::EcdsaP256 => {
                digest = ring::digest::digest(&ring::digest::SHA256, data);
                (Mechanism::Ecdsa, digest.as_ref())
            }
            Algorithm::EcdsaP384 => {
                digest = ring::digest::digest(&ring::digest::SHA384, data);
                (Mechanism::Ecdsa, digest.as_ref())
            }
            Algorithm::Ed25519 => (
                Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Pure)),
                data,
            ),
            Algorithm::RsaSha256 => (Mechanism::Sha256RsaPkcs, data),
        };
        let signed = self
            .token
            .with_session(|s| s.sign(&mechanism, self.handle, input));
        if let Err(e) = &signed {
            *self
                .token
                .last_failure
                .lock()
                .unwrap_or_else(|e| e.into_inner()) =
                format!("token {:?}, key {}: {e}", self.token.label, hex(&self.id));
            self.token
                .failures
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        signed
    }

    /// Removes both halves from the token (a key deleted by its policy).
    pub fn destroy(&self) -> Result<(), KeyError> {
        let template = [Attribute::Id(self.id.clone())];
        let t = &self.token;
        let session = t.ctx.open_rw_session(t.slot).map_err(pkcs_err("session"))?;
        let found = session.find_objects(&template).map_err(pkcs_err("find"))?;
        for o in found {
            session.destroy_object(o).map_err(pkcs_err("destroy"))?;
        }
        Ok(())
    }
}

/// A token label as a key file writes it: bytes other than letters,
/// digits and `-._~` %-escaped (RFC 7512's form), so a label with spaces
/// stays one word.
pub fn label_text(label: &str) -> String {
    label
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The label of [`label_text`]'s form.
pub(crate) fn parse_label(text: &str) -> Option<String> {
    percent_decode(text).ok()
}

/// Lower-case hex.
pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The bytes of lower- or upper-case hex.
pub(crate) fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_configs_parse_and_refuse_a_pin_in_clear() {
        let c = TokenConfig::parse(
            "pkcs11:token=lode%20keys;pin-source=/etc/lode/pin /usr/lib/softhsm/libsofthsm2.so",
        )
        .unwrap();
        assert_eq!(c.label, "lode keys");
        assert_eq!(c.pin, PinSource::File("/etc/lode/pin".into()));
        assert_eq!(c.module, PathBuf::from("/usr/lib/softhsm/libsofthsm2.so"));
        let c = TokenConfig::parse("pkcs11:token=t;pin-source=env:LODE_PIN /m.so").unwrap();
        assert_eq!(c.pin, PinSource::Env("LODE_PIN".into()));
        let e = TokenConfig::parse("pkcs11:token=t;pin-value=1234 /m.so").unwrap_err();
        assert!(e.contains("in clear"), "{e}");
        assert!(
            TokenConfig::parse("pkcs11:token=t /m.so").is_err(),
            "no PIN source"
        );
        assert!(
            TokenConfig::parse("pkcs11:pin-source=/p /m.so").is_err(),
            "no token"
        );
        assert!(
            TokenConfig::parse("pkcs11:token=t;pin-source=/p").is_err(),
            "no module"
        );
        assert_eq!(unhex(&hex(&[0, 0xab, 0x10])), Some(vec![0, 0xab, 0x10]));
        assert_eq!(label_text("lode keys%"), "lode%20keys%25");
        assert_eq!(parse_label("lode%20keys%25").as_deref(), Some("lode keys%"));
    }
}
