//! A zone signed before any server starts: Knot's offline signer
//! (`kzonesign`) on the configuration the Knot writer makes for the zone's
//! [`Signing`](crate::Signing), so that every server can serve the same
//! signed file as it is (Lode, Knot, NSD, BIND load a pre-signed zone like
//! any other).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{program, Error, Kind, Role, Spec, Zone};

/// The Knot description `kzonesign` reads for `zone` (a signed primary) in `dir`.
pub(crate) fn spec(zone: &Zone, dir: &Path) -> Result<Spec, Error> {
    if zone.signing.is_none() || !matches!(zone.role, Role::Primary(_)) {
        return Err(Error::Config(format!(
            "presign: {} must be a primary with a signing",
            zone.name
        )));
    }
    // kzonesign listens nowhere; Knot only wants a valid port in the file.
    let mut s = Spec::new(Kind::Knot, 53).zone(zone.clone().journal(false));
    s.dir = Some(dir.to_path_buf());
    Ok(s)
}

/// Signs `zone` (a primary with [`Zone::signed`]) with `kzonesign` as Knot
/// would under that signing (keys made on the spot in `dir`'s KASP
/// database); the signed file, `dir/signed/<zone>zone`.
pub fn presign(zone: &Zone, dir: &Path) -> Result<PathBuf, Error> {
    let signer = program("kzonesign").ok_or_else(|| Error::NotInstalled {
        program: "kzonesign".into(),
        package: "knot-dnssecutils".into(),
    })?;
    let conf = spec(zone, dir)?.write_config()?;
    let out = dir.join("signed");
    std::fs::create_dir_all(&out)
        .map_err(|e| Error::Io(format!("mkdir {}: {e}", out.display())))?;
    let run = Command::new(signer)
        .arg("-c")
        .arg(&conf)
        .arg("-o")
        .arg(&out)
        .arg(&zone.name)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::Io(format!("kzonesign: {e}")))?;
    if !run.status.success() {
        return Err(Error::Io(format!(
            "kzonesign {}: {}: {}{}",
            zone.name,
            run.status,
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        )));
    }
    Ok(out.join(format!("{}zone", zone.name)))
}
