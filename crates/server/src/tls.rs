//! The server's TLS credentials: read (or made) at start from the
//! configuration's `cert-file`/`key-file` (config/tls.rs) and replaced by a
//! reload, which new handshakes take at once while established connections
//! go on with theirs.

use lode_io::tls::{Credentials, ServerAuth, TlsClient, TlsServer, ALPN_DOT};

use crate::config::{TlsCertificate, TlsSettings};

/// Why the server's TLS side could not be made (the reasons in lode-io's
/// words, which name the files concerned).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum TlsError {
    /// The certificate and key files, or the key file of a self-signed
    /// certificate, could not be read, made or used.
    #[error("{0}")]
    Credentials(String),
    /// No key could be made for a self-signed certificate held in memory.
    #[error("a self-signed certificate over a key in memory: {0}")]
    Ephemeral(String),
    /// The TLS server of a listener could not be made from the credentials.
    #[error("{listener}: {reason}")]
    Server {
        /// "DNS over TLS" or "DNS over QUIC".
        listener: &'static str,
        reason: String,
    },
}

/// Reads or makes the credentials the settings name.
pub(crate) fn credentials(settings: &TlsSettings) -> Result<Credentials, TlsError> {
    match &settings.certificate {
        TlsCertificate::Files { cert, key } => {
            Credentials::from_pem_files(cert, key).map_err(TlsError::Credentials)
        }
        TlsCertificate::SelfSigned(key_file) => {
            let names = vec![crate::config::host_name().unwrap_or_else(|| "localhost".into())];
            match key_file {
                Some(f) => Credentials::self_signed(f, &names).map_err(TlsError::Credentials),
                None => {
                    tracing::warn!(
                        "tls: no cert-file and no kasp-db (nor journal-dir) to keep a key in: \
                         a key in memory, whose pin changes at each start"
                    );
                    Credentials::ephemeral(&names).map_err(TlsError::Ephemeral)
                }
            }
        }
    }
}

/// The TLS server side of one kind of listener (ALPN `dot` or `doq`; QUIC
/// is TLS 1.3 only); clients are asked for a certificate when an ACL takes
/// them by pin.
pub(crate) fn server(
    settings: &TlsSettings,
    creds: &Credentials,
    alpn: &[u8],
    client_certificates: bool,
) -> Result<TlsServer, TlsError> {
    let quic = alpn == lode_io::quic::ALPN_DOQ;
    let tls12 = settings.allow_tls12 && !quic;
    TlsServer::new(creds, &[alpn], tls12, client_certificates).map_err(|reason| TlsError::Server {
        listener: if quic {
            "DNS over QUIC"
        } else {
            "DNS over TLS"
        },
        reason,
    })
}

/// The certificate presented to primaries that ask for one (mutual TLS):
/// the server's own, set once at start.
static CLIENT_CREDENTIALS: std::sync::OnceLock<Credentials> = std::sync::OnceLock::new();

/// Sets the certificate [`client`] presents (first call wins).
pub(crate) fn set_client_credentials(creds: Credentials) {
    let _ = CLIENT_CREDENTIALS.set(creds);
}

/// Logs where the credentials came from and their pin (Knot logs the pin too:
/// what a client or secondary configures to authenticate this server).
pub(crate) fn log_credentials(creds: &Credentials) {
    tracing::info!(
        "tls: certificate from {}, public key pin {}",
        creds.origin(),
        creds.pin()
    );
}

/// The TLS client toward remotes of these settings (ALPN `dot`, as RFC 9103
/// asks of zone transfers), presenting the server's certificate when asked:
/// one per distinct pin set, shared by every zone that names such a remote
/// (10^5 secondary zones make one, not 10^5).
pub(crate) fn client(remote: &crate::config::RemoteTls) -> Option<TlsClient> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static CLIENTS: OnceLock<Mutex<HashMap<crate::config::RemoteTls, TlsClient>>> = OnceLock::new();
    let mut clients = CLIENTS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(c) = clients.get(remote) {
        return Some(c.clone());
    }
    let auth = if !remote.pins.is_empty() {
        ServerAuth::Pins(remote.pins.clone())
    } else if !remote.hostnames.is_empty() {
        ServerAuth::Names {
            ca_files: remote.ca_files.clone(),
            names: remote.hostnames.clone(),
        }
    } else {
        ServerAuth::Opportunistic
    };
    match TlsClient::new(auth, &[ALPN_DOT], CLIENT_CREDENTIALS.get()) {
        Ok(c) => {
            clients.insert(remote.clone(), c.clone());
            Some(c)
        }
        Err(e) => {
            tracing::error!("tls: no client for transfers: {e}");
            None
        }
    }
}
