//! The server's TLS credentials: read (or made) at start from the
//! configuration's `cert-file`/`key-file` (config/tls.rs) and replaced by a
//! reload, which new handshakes take at once while established connections
//! go on with theirs.

use lode_io::tls::{Credentials, TlsServer, ALPN_DOT};

use crate::config::{TlsCertificate, TlsSettings};

/// Reads or makes the credentials the settings name.
pub(crate) fn credentials(settings: &TlsSettings) -> Result<Credentials, String> {
    match &settings.certificate {
        TlsCertificate::Files { cert, key } => Credentials::from_pem_files(cert, key),
        TlsCertificate::SelfSigned(key_file) => {
            let names = vec![crate::config::host_name().unwrap_or_else(|| "localhost".into())];
            match key_file {
                Some(f) => Credentials::self_signed(f, &names),
                None => {
                    tracing::warn!(
                        "tls: no cert-file and no kasp-db (nor journal-dir) to keep a key in: \
                         a key in memory, whose pin changes at each start"
                    );
                    Credentials::ephemeral(&names)
                }
            }
        }
    }
}

/// The DNS-over-TLS server side for these settings (ALPN `dot`), with its
/// credentials logged by pin.
pub(crate) fn dot_server(settings: &TlsSettings) -> Result<TlsServer, String> {
    let creds = credentials(settings)?;
    log_credentials(&creds);
    TlsServer::new(&creds, &[ALPN_DOT], settings.allow_tls12)
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
