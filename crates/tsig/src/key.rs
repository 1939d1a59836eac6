//! TSIG keys: a name, an algorithm and a secret; the `-y` spec of kdig and
//! nsupdate; the key ring a server looks keys up in.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use lode_wire::{Name, NameError, NameRef};

use crate::algorithm::{Algorithm, Keyed, UnknownAlgorithm};

/// Why a key could not be made or added.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyError {
    /// The `-y` spec is not `[alg:]name:base64secret`.
    BadSpec,
    /// The algorithm is not one TSIG defines.
    Algorithm(UnknownAlgorithm),
    /// The key name is not a domain name.
    Name(NameError),
    /// The secret is not base64.
    Base64,
    /// The secret is empty.
    EmptySecret,
    /// A key ring already holds a key of this name.
    Duplicate(Name),
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::BadSpec => f.write_str("expected [algorithm:]name:base64-secret"),
            KeyError::Algorithm(e) => e.fmt(f),
            KeyError::Name(e) => write!(f, "bad key name: {e}"),
            KeyError::Base64 => f.write_str("the secret is not valid base64"),
            KeyError::EmptySecret => f.write_str("the secret is empty"),
            KeyError::Duplicate(n) => write!(f, "key {n} defined twice"),
        }
    }
}

impl std::error::Error for KeyError {}

/// A TSIG key. The name is held lower-cased (its canonical form, what the
/// MAC covers); `Debug` never shows the secret.
#[derive(Clone)]
pub struct Key {
    name: Name,
    algorithm: Algorithm,
    secret: Box<[u8]>,
    keyed: Keyed,
}

impl Key {
    /// A key from its parts; the name is lower-cased. The secret must not be empty.
    pub fn new(name: &Name, algorithm: Algorithm, secret: &[u8]) -> Result<Key, KeyError> {
        if secret.is_empty() {
            return Err(KeyError::EmptySecret);
        }
        Ok(Key {
            name: name.to_lowercase(),
            algorithm,
            secret: secret.into(),
            keyed: Keyed::new(algorithm, secret),
        })
    }

    /// A key from a name in text (`upd.key` or `upd.key.`, always absolute),
    /// an algorithm and a base64 secret.
    pub fn from_text(name: &str, algorithm: Algorithm, base64: &str) -> Result<Key, KeyError> {
        let name = Name::parse(name, Some(&Name::root())).map_err(KeyError::Name)?;
        Key::new(&name, algorithm, &decode_secret(base64)?)
    }

    /// Parses the `kdig -y`, `knsupdate -y` and `nsupdate -y` spec
    /// `[alg:]name:base64secret`; without an algorithm, hmac-sha256 (the
    /// Knot tools' default; BIND's nsupdate used to default to hmac-md5).
    pub fn parse_spec(spec: &str) -> Result<Key, KeyError> {
        let parts: Vec<&str> = spec.split(':').collect();
        let (alg, name, secret) = match parts.as_slice() {
            [alg, name, secret] => (alg.parse().map_err(KeyError::Algorithm)?, *name, *secret),
            [name, secret] => (Algorithm::HmacSha256, *name, *secret),
            _ => return Err(KeyError::BadSpec),
        };
        if name.is_empty() {
            return Err(KeyError::BadSpec);
        }
        Key::from_text(name, alg, secret)
    }

    /// The key name, lower case.
    pub fn name(&self) -> &Name {
        &self.name
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The secret (handle with care: never log it).
    pub fn secret(&self) -> &[u8] {
        &self.secret
    }

    /// The secret in base64, as key files and `-y` specs write it.
    pub fn secret_base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.secret)
    }

    /// The `-y` spec of this key: `alg:name:base64secret`.
    pub fn to_spec(&self) -> String {
        format!("{}:{}:{}", self.algorithm, self.name, self.secret_base64())
    }

    /// A fresh HMAC computation keyed with this key.
    pub(crate) fn hmac(&self) -> Keyed {
        self.keyed.clone()
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("name", &self.name)
            .field("algorithm", &self.algorithm)
            .field(
                "secret",
                &format_args!("<{} octets hidden>", self.secret.len()),
            )
            .finish()
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.name == other.name && self.algorithm == other.algorithm && self.secret == other.secret
    }
}

impl Eq for Key {}

impl FromStr for Key {
    type Err = KeyError;

    /// Same as [`Key::parse_spec`].
    fn from_str(s: &str) -> Result<Key, KeyError> {
        Key::parse_spec(s)
    }
}

/// Decodes a base64 secret (standard alphabet, padded; blanks between groups allowed,
/// as BIND key files split long secrets).
pub fn decode_secret(text: &str) -> Result<Vec<u8>, KeyError> {
    let compact: String = text.split_ascii_whitespace().collect();
    let secret = base64::engine::general_purpose::STANDARD
        .decode(compact)
        .map_err(|_| KeyError::Base64)?;
    if secret.is_empty() {
        return Err(KeyError::EmptySecret);
    }
    Ok(secret)
}

/// What a server does with a request whose MAC is shorter than the digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Truncation {
    /// Knot DNS 3.2: any MAC of another length than the digest is BADSIG.
    #[default]
    Reject,
    /// RFC 8945 §5.2.2.1 and §5.2.4: a MAC longer than the digest or shorter
    /// than max(10, digest/2) octets is FORMERR; a truncated MAC is compared
    /// on its own length, and if it is shorter than `min_len` the answer is
    /// BADTRUNC (signed) once the MAC and the time have been checked.
    Allow {
        /// The local policy's shortest acceptable MAC, in octets.
        min_len: u16,
    },
}

/// The keys a server knows, found by name (case ignored).
///
/// A plain list: key rings hold a handful of keys, and a linear scan of them
/// costs less than hashing a name.
///
/// Each key is held once and shared (`find_shared`): a key's HMAC state is
/// some hundreds of bytes, and 10^5 catalog members name the same one.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    keys: Vec<std::sync::Arc<Key>>,
    truncation: Truncation,
}

impl Keys {
    /// An empty key ring that rejects truncated MACs (as Knot DNS 3.2).
    pub fn new() -> Keys {
        Keys::default()
    }

    /// Adds a key; its name must not be in the ring already.
    pub fn insert(&mut self, key: Key) -> Result<(), KeyError> {
        if self.find(key.name.as_ref()).is_some() {
            return Err(KeyError::Duplicate(key.name));
        }
        self.keys.push(std::sync::Arc::new(key));
        Ok(())
    }

    /// The key of this name (case ignored).
    pub fn find(&self, name: NameRef<'_>) -> Option<&Key> {
        self.find_shared(name).map(|k| &**k)
    }

    /// [`Keys::find`], the key shared rather than copied.
    pub fn find_shared(&self, name: NameRef<'_>) -> Option<&std::sync::Arc<Key>> {
        self.keys.iter().find(|k| k.name.as_ref() == name)
    }

    /// The keys, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = &Key> + '_ {
        self.keys.iter().map(|k| &**k)
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when there are no keys.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The truncated-MAC policy.
    pub fn truncation(&self) -> Truncation {
        self.truncation
    }

    /// Sets the truncated-MAC policy.
    pub fn set_truncation(&mut self, truncation: Truncation) {
        self.truncation = truncation;
    }
}

impl FromIterator<Key> for Result<Keys, KeyError> {
    fn from_iter<I: IntoIterator<Item = Key>>(iter: I) -> Self {
        let mut keys = Keys::new();
        for k in iter {
            keys.insert(k)?;
        }
        Ok(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec() {
        let k = Key::parse_spec("hmac-sha512:Upd.Key:c2VjcmV0").expect("key");
        assert_eq!(k.name().to_string(), "upd.key.");
        assert_eq!(k.algorithm(), Algorithm::HmacSha512);
        assert_eq!(k.secret(), b"secret");
        assert_eq!(k.to_spec(), "hmac-sha512:upd.key.:c2VjcmV0");
        assert_eq!(k.to_spec().parse::<Key>(), Ok(k));
        let k = Key::parse_spec("upd.key.:c2VjcmV0").expect("key");
        assert_eq!(k.algorithm(), Algorithm::HmacSha256);
        let k = Key::parse_spec("hmac-md5.sig-alg.reg.int:k:c2VjcmV0").expect("md5");
        assert_eq!(k.algorithm(), Algorithm::HmacMd5);
        assert_eq!(
            Key::parse_spec("hmac-sha3:k:c2VjcmV0").map(|_| ()),
            Err(KeyError::Algorithm(UnknownAlgorithm("hmac-sha3".into())))
        );
        assert_eq!(Key::parse_spec("k:***"), Err(KeyError::Base64));
        assert_eq!(Key::parse_spec("k:"), Err(KeyError::EmptySecret));
        assert_eq!(Key::parse_spec("nokey"), Err(KeyError::BadSpec));
        assert_eq!(Key::parse_spec(":c2VjcmV0"), Err(KeyError::BadSpec));
        assert_eq!(Key::parse_spec("a:b:c:d"), Err(KeyError::BadSpec));
        assert!(matches!(
            Key::parse_spec("a..b:c2VjcmV0"),
            Err(KeyError::Name(_))
        ));
        assert_eq!(decode_secret("c2Vj cmV0").as_deref(), Ok(&b"secret"[..]));
    }

    #[test]
    fn debug_hides_the_secret() {
        let k = Key::parse_spec("k:c2VjcmV0").expect("key");
        let d = format!("{k:?}");
        assert!(!d.contains("c2VjcmV0") && !d.contains("secret\""), "{d}");
        assert!(!d.contains("115, 101"), "{d}");
        assert!(d.contains("hidden"), "{d}");
    }

    #[test]
    fn ring() {
        let mut keys = Keys::new();
        keys.insert(Key::parse_spec("a.example:c2VjcmV0").expect("a"))
            .expect("insert");
        keys.insert(Key::parse_spec("hmac-sha1:b.example:c2VjcmV0").expect("b"))
            .expect("insert");
        assert!(matches!(
            keys.insert(Key::parse_spec("A.Example:c2VjcmV0").expect("a")),
            Err(KeyError::Duplicate(_))
        ));
        let upper: Name = "B.EXAMPLE.".parse().expect("name");
        let k = keys.find(upper.as_ref()).expect("found");
        assert_eq!(k.algorithm(), Algorithm::HmacSha1);
        let none: Name = "c.example.".parse().expect("name");
        assert!(keys.find(none.as_ref()).is_none());
        assert_eq!(keys.len(), 2);
        assert_eq!(keys.truncation(), Truncation::Reject);
    }
}
