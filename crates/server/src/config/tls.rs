//! DNS over TLS (RFC 7858): where to listen and with which certificate,
//! Knot DNS's names (`listen-tls`, `cert-file`, `key-file`).
//!
//! ```toml
//! listen-tls = ["127.0.0.1@853", "[::1]:853"]  # ADDR@PORT, ADDR:PORT or ADDR (853); default none
//! cert-file = "/etc/lode/tls/cert.pem"        # chain, server's certificate first (alias tls-cert)
//! key-file = "/etc/lode/tls/key.pem"          # its private key (alias tls-key)
//! tls-min-version = "1.3"                     # or "1.2"
//! tls-handshake-timeout = 3000                # ms from accept to a finished handshake
//! tls-max-clients = 1000                      # TLS connections at once (idlest closed when full)
//! listen-quic = ["127.0.0.1@853"]             # DNS over QUIC (UDP), same forms; default none
//! quic-max-clients = 10000                    # QUIC connections at once (Knot's default)
//! quic-idle-close-timeout = 4                 # seconds (Knot's default)
//! ```
//!
//! Without `cert-file`, as Knot: a one-time self-signed certificate over a key
//! kept in `kasp-db` as `tls_key.pem` (made on first use, mode 0600), so its
//! pin (logged at start) lasts across restarts; with no `kasp-db` (nor
//! `journal-dir`) the key lives in memory only and its pin changes each start.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{parse_remote_address, ConfigError, ConfigFile};

/// The port of DNS over TLS (RFC 7858) and QUIC (RFC 9250).
pub const DEFAULT_TLS_PORT: u16 = 853;
/// Default time from accept to a finished TLS handshake.
pub const DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS: u64 = 3000;
/// Default QUIC connections at once (Knot's `quic-max-clients`).
pub const DEFAULT_QUIC_MAX_CLIENTS: usize = 10_000;
/// Default idle time before a QUIC connection is closed, seconds (Knot's).
pub const DEFAULT_QUIC_IDLE_SECS: u64 = 4;

/// The key of the one-time certificate, in `kasp-db`.
pub const SELF_SIGNED_KEY_FILE: &str = "tls_key.pem";

/// Where the TLS certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsCertificate {
    /// PEM files.
    Files {
        /// The chain, the server's certificate first.
        cert: PathBuf,
        /// Its private key.
        key: PathBuf,
    },
    /// A one-time self-signed certificate over the key in this file (made
    /// when missing); `None`: a key in memory.
    SelfSigned(Option<PathBuf>),
}

/// The merged TLS settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// DNS over TLS addresses (none: no DoT).
    pub listen: Vec<SocketAddr>,
    /// The certificate of every TLS listener.
    pub certificate: TlsCertificate,
    /// TLS 1.2 accepted besides 1.3.
    pub allow_tls12: bool,
    /// Time from accept to a finished handshake.
    pub handshake_timeout: Duration,
    /// TLS connections at once.
    pub max_clients: usize,
    /// DNS over QUIC addresses (none: no DoQ).
    pub listen_quic: Vec<SocketAddr>,
    /// QUIC connections at once.
    pub quic_max_clients: usize,
    /// Idle time before a QUIC connection is closed.
    pub quic_idle_timeout: Duration,
}

impl TlsSettings {
    /// Whether the server listens for DNS over TLS or QUIC.
    pub fn serves(&self) -> bool {
        !self.listen.is_empty() || !self.listen_quic.is_empty()
    }
}

/// A DoT listen address: "ADDR@PORT", "ADDR:PORT" or "ADDR" (port 853).
fn parse_tls_listen(s: &str) -> Result<SocketAddr, ConfigError> {
    let bare = s.trim().trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, DEFAULT_TLS_PORT));
    }
    parse_remote_address(s.trim()).map_err(|e| ConfigError::Value(format!("listen-tls: {e}")))
}

/// The TLS settings of a configuration file; relative paths from `base`.
pub(super) fn resolve_tls(
    file: &ConfigFile,
    base: &Path,
    kasp_db: Option<&Path>,
    tcp_max_clients: usize,
) -> Result<TlsSettings, ConfigError> {
    let listen = file
        .listen_tls
        .iter()
        .map(|s| parse_tls_listen(s))
        .collect::<Result<Vec<_>, _>>()?;
    let listen_quic = file
        .listen_quic
        .iter()
        .map(|s| {
            parse_tls_listen(s)
                .map_err(|e| ConfigError::Value(e.to_string().replace("listen-tls", "listen-quic")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let certificate = match (&file.cert_file, &file.key_file) {
        (Some(c), Some(k)) => TlsCertificate::Files {
            cert: base.join(c),
            key: base.join(k),
        },
        (Some(_), None) => {
            return Err(ConfigError::Value(
                "cert-file without key-file: give the certificate's private key too".into(),
            ))
        }
        (None, Some(_)) => {
            return Err(ConfigError::Value(
                "key-file without cert-file: give the certificate too (or neither, for a \
                 one-time self-signed certificate)"
                    .into(),
            ))
        }
        (None, None) => TlsCertificate::SelfSigned(kasp_db.map(|d| d.join(SELF_SIGNED_KEY_FILE))),
    };
    let allow_tls12 = match file.tls_min_version.as_deref().map(str::trim) {
        None | Some("1.3") => false,
        Some("1.2") => true,
        Some(v) => {
            return Err(ConfigError::Value(format!(
                "tls-min-version = {v:?}: expected \"1.3\" (the default) or \"1.2\""
            )))
        }
    };
    let max_clients = match file.tls_max_clients {
        Some(0) => {
            return Err(ConfigError::Value(
                "tls-max-clients = 0: must be at least 1".into(),
            ))
        }
        Some(n) => n,
        None => tcp_max_clients,
    };
    Ok(TlsSettings {
        listen,
        certificate,
        allow_tls12,
        handshake_timeout: Duration::from_millis(
            file.tls_handshake_timeout
                .unwrap_or(DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS)
                .max(1),
        ),
        max_clients,
        listen_quic,
        quic_max_clients: match file.quic_max_clients {
            Some(n) if n < 1 => {
                return Err(ConfigError::Value(
                    "quic-max-clients = 0: must be at least 1".into(),
                ))
            }
            Some(n) => n,
            None => DEFAULT_QUIC_MAX_CLIENTS,
        },
        quic_idle_timeout: Duration::from_secs(
            file.quic_idle_close_timeout
                .unwrap_or(DEFAULT_QUIC_IDLE_SECS)
                .max(1),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> ConfigFile {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn addresses_default_to_port_853() {
        let f = file("listen-tls = [\"127.0.0.1\", \"::1\", \"127.0.0.1@8853\", \"[::1]:8853\"]");
        let t = resolve_tls(&f, Path::new("/etc/lode"), None, 1000).unwrap();
        let ports: Vec<u16> = t.listen.iter().map(SocketAddr::port).collect();
        assert_eq!(ports, [853, 853, 8853, 8853]);
        assert_eq!(t.certificate, TlsCertificate::SelfSigned(None));
        assert!(!t.allow_tls12);
        assert_eq!(t.max_clients, 1000);
    }

    #[test]
    fn certificate_files_are_relative_to_the_configuration() {
        let f = file("tls-cert = \"tls/c.pem\"\nkey-file = \"/k.pem\"\ntls-min-version = \"1.2\"");
        let t = resolve_tls(&f, Path::new("/etc/lode"), Some(Path::new("/var/keys")), 9).unwrap();
        assert_eq!(
            t.certificate,
            TlsCertificate::Files {
                cert: "/etc/lode/tls/c.pem".into(),
                key: "/k.pem".into()
            }
        );
        assert!(t.allow_tls12);
        let f = file("");
        let t = resolve_tls(&f, Path::new("/etc/lode"), Some(Path::new("/var/keys")), 9).unwrap();
        assert_eq!(
            t.certificate,
            TlsCertificate::SelfSigned(Some("/var/keys/tls_key.pem".into()))
        );
        for bad in [
            "cert-file = \"c\"",
            "key-file = \"k\"",
            "tls-min-version = \"1.1\"",
        ] {
            assert!(
                resolve_tls(&file(bad), Path::new("/"), None, 9).is_err(),
                "{bad}"
            );
        }
        assert!(resolve_tls(&file("listen-tls = [\"nowhere\"]"), Path::new("/"), None, 9).is_err());
    }
}
