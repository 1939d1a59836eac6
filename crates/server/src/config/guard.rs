//! The server's face to the world: its identity (CH TXT names, NSID),
//! response padding — with Knot DNS's defaults.
//!
//! ```toml
//! identity = "ns1.example."     # CH TXT id.server / hostname.bind; "" = REFUSED; default: host name
//! version = "Lode 0.1.0"        # CH TXT version.server / version.bind; "" = REFUSED; default: this
//! nsid = "ns1"                  # RFC 5001 NSID, text or 0x-prefixed hex; "" = none; default: host name
//! edns-padding = true           # pad TCP answers to padded queries (RFC 7830); default: true
//! ```

use std::sync::Arc;

use super::ConfigError;

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
        Some(hex) => {
            if hex.len() % 2 != 0 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(ConfigError::Value(format!(
                    "nsid = {s:?}: after 0x, an even number of hex digits"
                )));
            }
            (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or(0))
                .collect()
        }
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
}
