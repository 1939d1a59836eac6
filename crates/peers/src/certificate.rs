//! The certificate every TLS listener of a comparison shares: self-signed,
//! ECDSA P-256, for `ns.example`, valid two days (`openssl req -x509`);
//! clients authenticate nothing or pin its key.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::{program, Error};

/// Writes a new certificate to `cert` and its private key to `key` (PEM).
pub fn self_signed_certificate(cert: &Path, key: &Path) -> Result<(), Error> {
    let openssl = program("openssl").ok_or_else(|| Error::NotInstalled {
        program: "openssl".into(),
        package: "openssl".into(),
    })?;
    let made = Command::new(openssl)
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .args(["ec_paramgen_curve:P-256", "-nodes", "-days", "2"])
        .args(["-subj", "/CN=ns.example", "-keyout"])
        .arg(key)
        .arg("-out")
        .arg(cert)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::Io(format!("openssl: {e}")))?;
    if made.status.success() {
        Ok(())
    } else {
        Err(Error::Io(format!(
            "openssl req: {}",
            String::from_utf8_lossy(&made.stderr)
        )))
    }
}
