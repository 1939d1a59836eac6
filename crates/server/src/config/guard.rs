//! The server's face to the world: its identity (CH TXT names, NSID),
//! response padding — with Knot DNS's defaults.
//!
//! ```toml
//! identity = "ns1.example."     # CH TXT id.server / hostname.bind; "" = REFUSED; default: host name
//! version = "Lode 0.1.0"        # CH TXT version.server / version.bind; "" = REFUSED; default: this
//! nsid = "ns1"                  # RFC 5001 NSID, text or 0x-prefixed hex; "" = none; default: host name
//! edns-padding = true           # pad TCP answers to padded queries (RFC 7830); default: true
//!
//! [cookies]                     # DNS cookies (RFC 7873, RFC 9018); absent: off, as Knot
//! secret = "0123456789abcdef0123456789abcdef"  # 16 bytes hex; default: random, rotated
//! secret-lifetime = 93600       # seconds between rotations of a random secret (Knot: 26 h)
//! badcookie-slip = 1            # of UDP queries with a bad cookie, 1 in N gets BADCOOKIE
//!
//! [rrl]                         # response-rate limiting of UDP answers; absent: off, as Knot
//! rate-limit = 20               # answers per second per (source prefix, answer class, name)
//! slip = 1                      # every Nth limited answer sent truncated (TC); 0 = drop all
//! ipv4-prefix = 24              # sources grouped by prefix
//! ipv6-prefix = 56
//! table-size = 393241           # buckets (Knot's default; 8 bytes each)
//! burst = 10                    # answers a quiet bucket sends at once; default rate/2
//! exempt = ["192.0.2.0/24"]     # never limited (Knot's `whitelist`)
//! log-only = false              # only log what would be limited
//! ```

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;

/// The `[cookies]` table as written.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CookiesEntry {
    /// The server secret, 32 hex digits (default: random, rotated).
    pub secret: Option<String>,
    /// Seconds between rotations of a random secret.
    pub secret_lifetime: Option<u64>,
    /// One in N UDP queries with a bad or missing server cookie gets BADCOOKIE.
    pub badcookie_slip: Option<u32>,
}

/// DNS cookie settings, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CookieSettings {
    /// A fixed secret (never rotated), or None: random, rotated.
    pub secret: Option<[u8; 16]>,
    /// Time between rotations of a random secret.
    pub secret_lifetime: Duration,
    /// Knot's badcookie-slip.
    pub badcookie_slip: u32,
}

impl CookiesEntry {
    /// Checks and resolves the table.
    pub fn resolve(&self) -> Result<CookieSettings, ConfigError> {
        let bad = |why: String| ConfigError::Value(format!("[cookies] {why}"));
        let secret = match &self.secret {
            None => None,
            Some(hex) => {
                let bytes = parse_hex(hex)
                    .filter(|b| b.len() == 16)
                    .ok_or_else(|| bad(format!("secret = {hex:?}: 32 hex digits (16 bytes)")))?;
                let mut s = [0u8; 16];
                s.copy_from_slice(&bytes);
                Some(s)
            }
        };
        let lifetime = self
            .secret_lifetime
            .unwrap_or(u64::from(lode_cookie::KNOT_SECRET_LIFETIME));
        if lifetime == 0 || lifetime > u64::from(lode_cookie::MAX_SECRET_LIFETIME) {
            return Err(bad(format!(
                "secret-lifetime = {lifetime}: between 1 s and 36 days (RFC 7873 §7.1)"
            )));
        }
        Ok(CookieSettings {
            secret,
            secret_lifetime: Duration::from_secs(lifetime),
            badcookie_slip: self
                .badcookie_slip
                .unwrap_or(lode_cookie::KNOT_BADCOOKIE_SLIP),
        })
    }
}

/// The `[rrl]` table as written (Knot's mod-rrl names where they exist).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RrlEntry {
    /// Answers per second per bucket.
    pub rate_limit: u32,
    /// Every Nth limited answer is slipped (TC).
    pub slip: Option<u32>,
    /// IPv4 prefix length of a source.
    pub ipv4_prefix: Option<u8>,
    /// IPv6 prefix length of a source.
    pub ipv6_prefix: Option<u8>,
    /// Buckets.
    pub table_size: Option<usize>,
    /// Answers a quiet bucket sends at once.
    pub burst: Option<u32>,
    /// Sources never limited (ADDR or ADDR/LEN).
    #[serde(default, alias = "whitelist")]
    pub exempt: Vec<String>,
    /// Only log.
    #[serde(default)]
    pub log_only: bool,
}

impl RrlEntry {
    /// Checks and resolves the table into the limiter's settings.
    pub fn resolve(&self) -> Result<lode_rrl::Config, ConfigError> {
        let mut exempt = Vec::new();
        for e in &self.exempt {
            let range: crate::acl::Prefix = e
                .parse()
                .map_err(|why| ConfigError::Value(format!("[rrl] exempt: {why}")))?;
            exempt.push(range.parts());
        }
        let d = lode_rrl::Config::default();
        let config = lode_rrl::Config {
            rate: self.rate_limit,
            burst: self.burst.unwrap_or(d.burst),
            slip: self.slip.unwrap_or(d.slip),
            ipv4_prefix: self.ipv4_prefix.unwrap_or(d.ipv4_prefix),
            ipv6_prefix: self.ipv6_prefix.unwrap_or(d.ipv6_prefix),
            table_size: self.table_size.unwrap_or(d.table_size),
            exempt,
            log_only: self.log_only,
            ..d
        };
        // The limiter checks ranges; its message names the key.
        lode_rrl::Limiter::new(&config).map_err(|e| ConfigError::Value(format!("[rrl] {e}")))?;
        Ok(config)
    }
}

/// Bytes from hex digits (even count), or None.
fn parse_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or(0))
            .collect(),
    )
}

/// What the server says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// CH TXT `id.server.`/`hostname.bind.` (`None`: REFUSED).
    pub identity: Option<Arc<str>>,
    /// CH TXT `version.server.`/`version.bind.` (`None`: REFUSED).
    pub version: Option<Arc<str>>,
    /// NSID option data (`None`: no NSID).
    pub nsid: Option<Arc<[u8]>>,
    /// Pad TCP answers to padded queries.
    pub padding: bool,
}

/// This server's version text, Knot's `version` default for Lode.
pub fn default_version() -> String {
    format!("Lode {}", env!("CARGO_PKG_VERSION"))
}

/// The host name (Knot's default identity and NSID), from the kernel.
pub fn host_name() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_string())
}

impl Identity {
    /// Resolves the file's `identity`, `version`, `nsid` and `edns-padding`
    /// (absent: Knot's defaults; empty: off).
    pub fn resolve(
        identity: Option<&str>,
        version: Option<&str>,
        nsid: Option<&str>,
        padding: Option<bool>,
    ) -> Result<Identity, ConfigError> {
        let text = |set: Option<&str>, default: fn() -> Option<String>| -> Option<Arc<str>> {
            match set {
                Some("") => None,
                Some(s) => Some(s.into()),
                None => default().map(Into::into),
            }
        };
        let nsid = match nsid {
            Some("") => None,
            Some(s) => Some(parse_nsid(s)?),
            None => host_name().map(|h| h.into_bytes().into()),
        };
        Ok(Identity {
            identity: text(identity, host_name),
            version: text(version, || Some(default_version())),
            nsid,
            padding: padding.unwrap_or(true),
        })
    }
}

/// NSID as Knot reads it: text, or hex after `0x`.
fn parse_nsid(s: &str) -> Result<Arc<[u8]>, ConfigError> {
    let bytes = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => parse_hex(hex).ok_or_else(|| {
            ConfigError::Value(format!(
                "nsid = {s:?}: after 0x, an even number of hex digits"
            ))
        })?,
        None => s.as_bytes().to_vec(),
    };
    if bytes.len() > 1024 {
        return Err(ConfigError::Value(format!(
            "nsid: {} bytes, at most 1024",
            bytes.len()
        )));
    }
    Ok(bytes.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_empty_text_and_hex() {
        let d = Identity::resolve(None, None, None, None).unwrap();
        assert_eq!(d.version.as_deref(), Some(default_version().as_str()));
        assert_eq!(d.identity.as_deref(), host_name().as_deref());
        assert!(d.padding);
        let off = Identity::resolve(Some(""), Some(""), Some(""), Some(false)).unwrap();
        assert_eq!(off.identity, None);
        assert_eq!(off.version, None);
        assert_eq!(off.nsid, None);
        assert!(!off.padding);
        let set = Identity::resolve(Some("a"), Some("b"), Some("0x0aff"), None).unwrap();
        assert_eq!(set.identity.as_deref(), Some("a"));
        assert_eq!(set.nsid.as_deref(), Some(&[0x0a, 0xff][..]));
        assert_eq!(
            Identity::resolve(None, None, Some("ns-1"), None)
                .unwrap()
                .nsid
                .as_deref(),
            Some(&b"ns-1"[..])
        );
        assert!(Identity::resolve(None, None, Some("0xabc"), None).is_err());
        assert!(Identity::resolve(None, None, Some("0xzz"), None).is_err());
    }

    #[test]
    fn rrl_table() {
        let t: RrlEntry =
            toml::from_str("rate-limit = 20\nslip = 2\nwhitelist = [\"10.0.0.0/8\", \"::1\"]")
                .unwrap();
        let c = t.resolve().unwrap();
        assert_eq!((c.rate, c.slip, c.ipv4_prefix), (20, 2, 24));
        assert_eq!(c.exempt.len(), 2);
        let bad: RrlEntry = toml::from_str("rate-limit = 20\nipv4-prefix = 33").unwrap();
        assert!(bad.resolve().is_err());
        let bad: RrlEntry = toml::from_str("rate-limit = 20\nexempt = [\"nowhere\"]").unwrap();
        assert!(bad.resolve().is_err());
    }

    #[test]
    fn cookies_table() {
        let d = CookiesEntry::default().resolve().unwrap();
        assert_eq!(d.secret, None);
        assert_eq!(d.secret_lifetime, Duration::from_secs(26 * 3600));
        assert_eq!(d.badcookie_slip, 1);
        let fixed = CookiesEntry {
            secret: Some("000102030405060708090a0b0c0d0e0f".into()),
            ..Default::default()
        };
        assert_eq!(fixed.resolve().unwrap().secret.unwrap()[15], 15);
        for bad in [
            CookiesEntry {
                secret: Some("0001".into()),
                ..Default::default()
            },
            CookiesEntry {
                secret_lifetime: Some(0),
                ..Default::default()
            },
        ] {
            assert!(bad.resolve().is_err());
        }
    }
}
