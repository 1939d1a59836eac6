//! TLS for the stream transport: DNS over TLS (RFC 7858) and the TLS of zone
//! transfers (RFC 9103), on rustls with its `ring` provider.
//!
//! ```text
//!  cert-file + key-file (PEM) ─┐
//!  or a one-time certificate   ├─▶ Credentials ─▶ TlsServer: rustls ServerConfig (ALPN, versions,
//!  for a kept key (Knot's)    ─┘   (and its pin)    resumption tickets) + a certificate resolver
//!                                                   whose key a reload replaces: new handshakes
//!                                                   take the new one, sessions already open go on
//! ```
//!
//! A certificate's pin is the Base64 of the SHA-256 of its subject public key
//! info (RFC 7858 §4.2, Knot's `cert-key`): it stays the same when a
//! certificate is renewed for the same key.

use std::fmt;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::{Arc, RwLock};

use base64::Engine as _;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use sha2::Digest as _;

/// ALPN of DNS over TLS (RFC 7858; RFC 9103 uses it for zone transfers too).
pub const ALPN_DOT: &[u8] = b"dot";

/// The crypto of every TLS session: rustls's ring provider.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A certificate chain and its private key, ready to serve.
#[derive(Clone)]
pub struct Credentials {
    key: Arc<CertifiedKey>,
    pin: String,
    /// Where they came from, for logs.
    origin: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("pin", &self.pin)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Reads a certificate chain (PEM, the server's certificate first) and
    /// its private key (PEM: PKCS#8, SEC1 or PKCS#1), and checks that they
    /// belong together.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Credentials, String> {
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
            .map_err(|e| format!("{}: {e}", cert.display()))?
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{}: {e}", cert.display()))?;
        if chain.is_empty() {
            return Err(format!("{}: no certificate in it", cert.display()));
        }
        let der = PrivateKeyDer::from_pem_file(key).map_err(|e| match e {
            rustls::pki_types::pem::Error::NoItemsFound => {
                format!("{}: no private key in it", key.display())
            }
            e => format!("{}: {e}", key.display()),
        })?;
        Credentials::assemble(
            chain,
            der,
            format!("{} and {}", cert.display(), key.display()),
        )
        .map_err(|e| format!("{} / {}: {e}", cert.display(), key.display()))
    }

    /// A one-time self-signed certificate for `names` over the key kept in
    /// `key_file` (made there, mode 0600, when it does not exist: ECDSA
    /// P-256), as Knot DNS does without `cert-file`. Clients authenticate
    /// such a server by its pin, which lasts as long as the key file.
    pub fn self_signed(key_file: &Path, names: &[String]) -> Result<Credentials, String> {
        let err = |e: &dyn fmt::Display| format!("{}: {e}", key_file.display());
        let pair = match std::fs::read_to_string(key_file) {
            Ok(text) => rcgen::KeyPair::from_pem(&text).map_err(|e| err(&e))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let pair = rcgen::KeyPair::generate().map_err(|e| err(&e))?;
                write_new_key(key_file, pair.serialize_pem().as_bytes()).map_err(|e| err(&e))?;
                pair
            }
            Err(e) => return Err(err(&e)),
        };
        Credentials::for_key_pair(&pair, names, key_file.display().to_string())
    }

    /// A self-signed certificate over a new key held in memory only (tests,
    /// and a server with nowhere to keep a key).
    pub fn ephemeral(names: &[String]) -> Result<Credentials, String> {
        let pair = rcgen::KeyPair::generate().map_err(|e| e.to_string())?;
        Credentials::for_key_pair(&pair, names, "a key in memory".into())
    }

    fn for_key_pair(
        pair: &rcgen::KeyPair,
        names: &[String],
        origin: String,
    ) -> Result<Credentials, String> {
        let params = rcgen::CertificateParams::new(names.to_vec()).map_err(|e| e.to_string())?;
        let cert = params.self_signed(pair).map_err(|e| e.to_string())?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pair.serialize_der()));
        Credentials::assemble(
            vec![cert.der().clone()],
            key,
            format!("a one-time certificate for {origin}"),
        )
    }

    fn assemble(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
        origin: String,
    ) -> Result<Credentials, String> {
        let provider = provider();
        let signing = provider
            .key_provider
            .load_private_key(key)
            .map_err(|e| format!("unusable private key: {e}"))?;
        let spki = signing
            .public_key()
            .ok_or("the private key's public half cannot be derived")?;
        let pin = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(&spki));
        let key = CertifiedKey::new(chain, signing);
        key.keys_match()
            .map_err(|e| format!("the certificate is not the private key's: {e}"))?;
        Ok(Credentials {
            key: Arc::new(key),
            pin,
            origin,
        })
    }

    /// The pin of the certificate's public key: Base64 of the SHA-256 of
    /// its subject public key info (Knot's `cert-key`).
    pub fn pin(&self) -> &str {
        &self.pin
    }

    /// Where the certificate and key came from.
    pub fn origin(&self) -> &str {
        &self.origin
    }
}

/// Writes a new private key file, readable by its owner only, and syncs it.
fn write_new_key(path: &Path, pem: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(pem)?;
    f.sync_all()
}

/// Hands every new handshake the credentials in force.
#[derive(Debug)]
struct Resolver(RwLock<Arc<CertifiedKey>>);

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.0
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        )
    }
}

/// The server side of TLS for one kind of listener (one ALPN): the rustls
/// configuration and the certificate a reload can replace.
#[derive(Debug, Clone)]
pub struct TlsServer {
    config: Arc<rustls::ServerConfig>,
    resolver: Arc<Resolver>,
}

impl TlsServer {
    /// TLS 1.3 (and 1.2 when `allow_tls12`), ALPN `alpn`, session
    /// resumption by tickets (stateless: keys rotated every 6 hours, nothing
    /// kept per client) and by a cache of 4,096 sessions. With
    /// `client_certificates`, clients are asked for a certificate (not
    /// required: what one proves is left to the ACLs' pins, see
    /// [`crate::Client::certificate_pin`]).
    pub fn new(
        credentials: &Credentials,
        alpn: &[&[u8]],
        allow_tls12: bool,
        client_certificates: bool,
    ) -> Result<TlsServer, String> {
        let versions: &[&rustls::SupportedProtocolVersion] = if allow_tls12 {
            &[&rustls::version::TLS13, &rustls::version::TLS12]
        } else {
            &[&rustls::version::TLS13]
        };
        let resolver = Arc::new(Resolver(RwLock::new(credentials.key.clone())));
        let provider = provider();
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions)
            .map_err(|e| e.to_string())?;
        let builder = if client_certificates {
            builder.with_client_cert_verifier(Arc::new(AnyClientCertificate { provider }))
        } else {
            builder.with_no_client_auth()
        };
        let mut config = builder.with_cert_resolver(resolver.clone());
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        config.ticketer = rustls::crypto::ring::Ticketer::new().map_err(|e| e.to_string())?;
        config.session_storage = rustls::server::ServerSessionMemoryCache::new(4096);
        Ok(TlsServer {
            config: Arc::new(config),
            resolver,
        })
    }

    /// Serves `credentials` to every handshake from now on; sessions
    /// already established keep theirs.
    pub fn replace(&self, credentials: &Credentials) {
        *self
            .resolver
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = credentials.key.clone();
    }

    /// The rustls configuration (for a QUIC endpoint sharing the credentials).
    pub fn config(&self) -> Arc<rustls::ServerConfig> {
        self.config.clone()
    }

    pub(crate) fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.config.clone())
    }
}

/// How a TLS client authenticates the server it connects to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerAuth {
    /// The certificate's public key must have one of these pins (Knot's
    /// `cert-key`; RFC 7858 §4.2's SPKI pin set).
    Pins(Vec<String>),
    /// Any certificate: encryption without authentication (RFC 9103's
    /// opportunistic TLS; Knot's `tls: on` with neither pin nor host name).
    Opportunistic,
    /// A certificate chaining to one of these CAs (PEM files) for one of
    /// these names (Knot's `ca-file` and `cert-hostname`).
    Names {
        /// The CA certificates' files.
        ca_files: Vec<std::path::PathBuf>,
        /// The names, one of which the certificate must have.
        names: Vec<String>,
    },
}

/// True when `s` reads as a pin: the Base64 of 32 bytes.
pub fn is_pin(s: &str) -> bool {
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .is_ok_and(|d| d.len() == 32)
}

/// The pin of a certificate's public key (see [`Credentials::pin`]).
pub fn certificate_pin(cert: &CertificateDer<'_>) -> Result<String, String> {
    let ee = webpki::EndEntityCert::try_from(cert).map_err(|e| e.to_string())?;
    let spki = ee.subject_public_key_info();
    Ok(base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(spki.as_ref())))
}

/// Checks a server's certificate by pin (or not at all), and the
/// handshake's signatures always.
#[derive(Debug)]
struct PinVerifier {
    auth: ServerAuth,
    provider: Arc<CryptoProvider>,
    /// With [`ServerAuth::Names`]: the chain check, and the names.
    webpki: Option<(
        Arc<rustls::client::WebPkiServerVerifier>,
        Vec<rustls::pki_types::ServerName<'static>>,
    )>,
}

impl rustls::client::danger::ServerCertVerifier for PinVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        if let Some((webpki, names)) = &self.webpki {
            let mut last = None;
            for name in names {
                match webpki.verify_server_cert(
                    end_entity,
                    _intermediates,
                    name,
                    _ocsp_response,
                    _now,
                ) {
                    Ok(v) => return Ok(v),
                    Err(e) => last = Some(e),
                }
            }
            return Err(last.unwrap_or(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName,
            )));
        }
        let ok = match &self.auth {
            ServerAuth::Opportunistic | ServerAuth::Names { .. } => true,
            ServerAuth::Pins(pins) => {
                let pin = certificate_pin(end_entity).map_err(|_| {
                    rustls::Error::InvalidCertificate(rustls::CertificateError::BadEncoding)
                })?;
                pins.contains(&pin)
            }
        };
        if ok {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        signatures(&self.provider).tls12(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        signatures(&self.provider).tls13(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        signatures(&self.provider).schemes()
    }
}

/// The handshake signature checks both verifiers make with the provider's
/// algorithms (what a certificate proves is theirs to decide).
struct Signatures<'a>(&'a rustls::crypto::WebPkiSupportedAlgorithms);

fn signatures(provider: &CryptoProvider) -> Signatures<'_> {
    Signatures(&provider.signature_verification_algorithms)
}

type SignatureCheck = Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error>;

impl Signatures<'_> {
    fn tls12(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> SignatureCheck {
        rustls::crypto::verify_tls12_signature(message, cert, dss, self.0)
    }

    fn tls13(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> SignatureCheck {
        rustls::crypto::verify_tls13_signature(message, cert, dss, self.0)
    }

    fn schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// Asks clients for a certificate and takes any whose handshake signature
/// holds: the ACL decides what its key may do (by pin).
#[derive(Debug)]
struct AnyClientCertificate {
    provider: Arc<CryptoProvider>,
}

impl rustls::server::danger::ClientCertVerifier for AnyClientCertificate {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::server::danger::ClientCertVerified, rustls::Error> {
        Ok(rustls::server::danger::ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        signatures(&self.provider).tls12(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        signatures(&self.provider).tls13(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        signatures(&self.provider).schemes()
    }
}

/// A blocking TLS stream to a server (zone transfers in, tests).
pub type ClientStream = rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>;

/// The client side of TLS toward one kind of server: how it is
/// authenticated, which ALPN is offered, and the client certificate
/// presented (mutual TLS), if any.
#[derive(Debug, Clone)]
pub struct TlsClient {
    config: Arc<rustls::ClientConfig>,
}

impl TlsClient {
    /// TLS 1.3 or 1.2, ALPN `alpn`, the server checked per `auth`, and
    /// `client` presented when the server asks for a certificate.
    pub fn new(
        auth: ServerAuth,
        alpn: &[&[u8]],
        client: Option<&Credentials>,
    ) -> Result<TlsClient, String> {
        let provider = provider();
        let webpki = match &auth {
            ServerAuth::Names { ca_files, names } => {
                let mut roots = rustls::RootCertStore::empty();
                for f in ca_files {
                    for cert in CertificateDer::pem_file_iter(f)
                        .map_err(|e| format!("{}: {e}", f.display()))?
                    {
                        let cert = cert.map_err(|e| format!("{}: {e}", f.display()))?;
                        roots
                            .add(cert)
                            .map_err(|e| format!("{}: {e}", f.display()))?;
                    }
                }
                if roots.is_empty() {
                    return Err("no CA certificate in ca-file".into());
                }
                let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider.clone(),
                )
                .build()
                .map_err(|e| e.to_string())?;
                let names = names
                    .iter()
                    .map(|n| {
                        rustls::pki_types::ServerName::try_from(n.clone())
                            .map_err(|e| format!("cert-hostname {n:?}: {e}"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Some((verifier, names))
            }
            _ => None,
        };
        let verifier = Arc::new(PinVerifier {
            auth,
            provider: provider.clone(),
            webpki,
        });
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let mut config = match client {
            None => builder.with_no_client_auth(),
            Some(c) => builder.with_client_cert_resolver(Arc::new(
                rustls::sign::SingleCertAndKey::from(c.key.clone()),
            )),
        };
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(TlsClient {
            config: Arc::new(config),
        })
    }

    /// Completes a handshake over `stream` (its timeouts apply) with the
    /// server named `name` (an address is fine: it is not checked against
    /// the certificate when pins authenticate).
    pub fn connect(
        &self,
        mut stream: std::net::TcpStream,
        name: &str,
    ) -> std::io::Result<ClientStream> {
        let server_name = rustls::pki_types::ServerName::try_from(name.to_owned())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let mut conn = rustls::ClientConnection::new(self.config.clone(), server_name)
            .map_err(std::io::Error::other)?;
        while conn.is_handshaking() {
            conn.complete_io(&mut stream)?;
        }
        Ok(rustls::StreamOwned::new(conn, stream))
    }

    /// The same client without session resumption: every connection makes
    /// a full handshake (what `lode-bench handshakes` measures).
    pub fn without_resumption(&self) -> TlsClient {
        let mut config = (*self.config).clone();
        config.resumption = rustls::client::Resumption::disabled();
        TlsClient {
            config: Arc::new(config),
        }
    }

    /// The rustls configuration (for a QUIC client sharing it).
    pub fn config(&self) -> Arc<rustls::ClientConfig> {
        self.config.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_key_keeps_its_pin_and_a_new_one_differs() {
        let dir = std::env::temp_dir().join(format!("lode-tls-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let key = dir.join("tls_key.pem");
        let names = vec!["ns.example".to_string()];
        let a = Credentials::self_signed(&key, &names).unwrap();
        let b = Credentials::self_signed(&key, &names).unwrap();
        assert_eq!(a.pin(), b.pin());
        assert_eq!(a.pin().len(), 44, "{}", a.pin());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let c = Credentials::ephemeral(&names).unwrap();
        assert_ne!(a.pin(), c.pin());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn pem_files_are_read_and_a_foreign_key_refused() {
        let dir = std::env::temp_dir().join(format!("lode-tls-pem-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let pair = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["ns.example".into()])
            .unwrap()
            .self_signed(&pair)
            .unwrap();
        std::fs::write(dir.join("cert.pem"), cert.pem()).unwrap();
        std::fs::write(dir.join("key.pem"), pair.serialize_pem()).unwrap();
        let other = rcgen::KeyPair::generate().unwrap();
        std::fs::write(dir.join("other.pem"), other.serialize_pem()).unwrap();
        let ok = Credentials::from_pem_files(&dir.join("cert.pem"), &dir.join("key.pem")).unwrap();
        let spki = sha2::Sha256::digest(pair.public_key_der());
        assert_eq!(
            ok.pin(),
            base64::engine::general_purpose::STANDARD.encode(spki)
        );
        let bad = Credentials::from_pem_files(&dir.join("cert.pem"), &dir.join("other.pem"));
        assert!(bad.unwrap_err().contains("not the private key's"));
        let none = Credentials::from_pem_files(&dir.join("key.pem"), &dir.join("key.pem"));
        assert!(none.unwrap_err().contains("no certificate"), "");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
