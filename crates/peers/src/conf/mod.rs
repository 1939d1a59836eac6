//! The configuration writers, one per implementation: each turns a [`Spec`]
//! into its files in the server's directory and the command line.

mod bind;
mod knot;
mod lode;
mod nsd;
mod pdns;

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use crate::process::Launch;
use crate::{Acl, Action, Content, Error, Kind, Role, Signing, Spec, Zone};

/// How a configured server is started: its spec, directory, configuration file.
type LaunchFn = fn(&Spec, &Path, &Path) -> Launch;

/// Writes `spec`'s files into `dir` (or its own whole configuration,
/// [`Spec::config`]; or nothing for [`Spec::config_file`]); how to start it.
pub(crate) fn write(spec: &Spec, dir: &Path) -> Result<Launch, Error> {
    refuse_options(spec)?;
    let (file, launch): (&str, LaunchFn) = match spec.kind {
        // Nothing to write: its command line is Spec::args.
        Kind::Program => {
            return Ok(Launch {
                args: Vec::new(),
                log: None,
                conf: dir.into(),
            })
        }
        Kind::Knot => (knot::FILE, knot::launch),
        Kind::Nsd => (nsd::FILE, nsd::launch),
        Kind::Bind => (bind::FILE, bind::launch),
        Kind::PowerDns => (pdns::FILE, pdns::launch),
        Kind::Lode => (lode::FILE, lode::launch),
    };
    if let Some(path) = &spec.config_file {
        let path =
            std::path::absolute(path).map_err(|e| Error::Io(format!("{}: {e}", path.display())))?;
        return Ok(launch(spec, dir, &path));
    }
    if let Some(text) = &spec.config {
        return Ok(launch(spec, dir, &put(dir, file, text)?));
    }
    for z in &spec.zones {
        for id in &z.acls {
            let acl = spec.find_acl(id)?;
            if let Some(k) = acl.keys.iter().find(|k| spec.find_key(k).is_none()) {
                return Err(Error::Config(format!("ACL {id:?} names unknown key {k:?}")));
            }
        }
        if let Some(k) = z.key.as_deref().filter(|k| spec.find_key(k).is_none()) {
            return Err(Error::Config(format!(
                "zone {} names unknown key {k:?}",
                z.name
            )));
        }
    }
    if let Some(z) = spec.zones.iter().find(|z| z.catalog.is_some()) {
        if !matches!(spec.kind, Kind::Knot | Kind::Lode) {
            return Err(unsupported(spec, &format!("catalog role of {}", z.name)));
        }
    }
    match spec.kind {
        Kind::Knot => knot::write(spec, dir),
        Kind::Nsd => nsd::write(spec, dir),
        Kind::Bind => bind::write(spec, dir),
        Kind::PowerDns => pdns::write(spec, dir),
        Kind::Lode => lode::write(spec, dir),
        Kind::Program => unreachable!("returned above"),
    }
}

/// Fails when the spec sets an option its implementation's writer has no
/// line for.
fn refuse_options(spec: &Spec) -> Result<(), Error> {
    let knot = spec.kind == Kind::Knot;
    let guard = matches!(spec.kind, Kind::Knot | Kind::Lode);
    let buffer = matches!(spec.kind, Kind::Nsd | Kind::Bind | Kind::Lode);
    for (set, allowed, what) in [
        (spec.tcp_workers.is_some(), knot, "a TCP worker count"),
        (
            spec.background_workers.is_some(),
            knot,
            "a background worker count",
        ),
        (spec.socket_buffer.is_some(), buffer, "a socket buffer size"),
        (spec.rrl_rate.is_some(), guard, "response-rate limiting"),
        (spec.cookie_secret.is_some(), guard, "DNS cookies"),
        (spec.tls.is_some(), buffer, "TLS listeners"),
        (
            spec.tls.as_ref().is_some_and(|t| t.quic_port.is_some()),
            spec.kind == Kind::Lode,
            "QUIC listeners",
        ),
        (
            spec.zones.iter().any(|z| z.primaries_tls),
            spec.kind == Kind::Bind,
            "transfers over TLS",
        ),
    ] {
        if set && !allowed {
            return Err(unsupported(spec, what));
        }
    }
    Ok(())
}

/// Lower-case hex digits of `bytes` (a cookie secret).
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `text` to `dir/name`; the path.
fn put(dir: &Path, name: &str, text: &str) -> Result<PathBuf, Error> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|e| Error::Io(format!("write {}: {e}", path.display())))?;
    Ok(path)
}

/// The zone file a primary zone is loaded from (written or copied into
/// `dir` as `<zone>zone` first where the content says so); None for
/// [`Content::Storage`] and secondaries.
fn zone_file(zone: &Zone, dir: &Path) -> Result<Option<PathBuf>, Error> {
    let Role::Primary(content) = &zone.role else {
        return Ok(None);
    };
    let local = format!("{}zone", zone.name);
    match content {
        Content::File(p) => Ok(Some(
            std::path::absolute(p).map_err(|e| Error::Io(format!("{}: {e}", p.display())))?,
        )),
        Content::Copy(p) => {
            let to = dir.join(&local);
            std::fs::copy(p, &to).map_err(|e| Error::Io(format!("copy {}: {e}", p.display())))?;
            Ok(Some(to))
        }
        Content::Text(t) => put(dir, &local, t).map(Some),
        Content::Storage => Ok(None),
    }
}

/// A primary zone's file, or the error of an implementation that needs one.
fn required_file(kind: Kind, zone: &Zone, dir: &Path) -> Result<PathBuf, Error> {
    zone_file(zone, dir)?.ok_or_else(|| Error::Unsupported {
        kind,
        what: format!("zone {} without a file", zone.name),
    })
}

/// The zone's ACLs that allow `action`.
fn acls_for<'s>(spec: &'s Spec, zone: &Zone, action: Action) -> Result<Vec<&'s Acl>, Error> {
    let mut v = Vec::new();
    for id in &zone.acls {
        let acl = spec.find_acl(id)?;
        if acl.actions.contains(&action) {
            v.push(acl);
        }
    }
    Ok(v)
}

/// Fails when a zone's ACLs allow an action the implementation lacks.
fn refuse_actions(spec: &Spec, refused: &[Action]) -> Result<(), Error> {
    for z in &spec.zones {
        for a in refused {
            if !acls_for(spec, z, *a)?.is_empty() {
                return Err(unsupported(spec, &format!("ACL action {}", a.name())));
            }
        }
    }
    Ok(())
}

fn unsupported(spec: &Spec, what: &str) -> Error {
    Error::Unsupported {
        kind: spec.kind,
        what: what.into(),
    }
}

/// Fails when any zone is signed (for implementations the harness does not sign with).
fn refuse_signing(spec: &Spec) -> Result<(), Error> {
    match spec.zones.iter().find(|z| z.signing.is_some()) {
        Some(z) => Err(unsupported(spec, &format!("signing of {}", z.name))),
        None => Ok(()),
    }
}

/// One policy per distinct signing, named after its first zone (many zones
/// signed alike share one): each such (first zone's index, signing), and
/// for each zone the index its policy is named after.
type Policies<'s> = (Vec<(usize, &'s Signing)>, Vec<Option<usize>>);

fn policies(spec: &Spec) -> Policies<'_> {
    let mut signed: Vec<(usize, &Signing)> = Vec::new();
    let of_zone = spec
        .zones
        .iter()
        .enumerate()
        .map(|(i, z)| {
            let s = z.signing.as_ref()?;
            Some(match signed.iter().find(|(_, x)| *x == s) {
                Some((first, _)) => *first,
                None => {
                    signed.push((i, s));
                    i
                }
            })
        })
        .collect();
    (signed, of_zone)
}

/// The zone's name without the final dot (NSD, BIND and PowerDNS style).
fn relative(zone: &Zone) -> &str {
    match zone.name.trim_end_matches('.') {
        "" => ".",
        n => n,
    }
}

/// `ip@port`, as Knot, NSD and Lode write a remote.
fn at(a: &SocketAddr) -> String {
    format!("{}@{}", a.ip(), a.port())
}

/// The listening sockets.
fn listen(spec: &Spec) -> Vec<SocketAddr> {
    spec.addresses
        .iter()
        .map(|a| SocketAddr::new(*a, spec.port))
        .collect()
}

/// True when one of the addresses is IPv6.
fn has_v6(spec: &Spec) -> bool {
    spec.addresses.iter().any(IpAddr::is_ipv6)
}

#[cfg(test)]
mod tests;
