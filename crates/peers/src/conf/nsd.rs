//! nsd.conf (NSD 4): no privilege drop, no chroot, no database file, every
//! state file in the server's directory; `nsd -d` in the foreground.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;

use super::{
    acls_for, at, has_v6, listen, put, refuse_actions, refuse_signing, relative, required_file,
};
use crate::process::Launch;
use crate::{Acl, Action, Error, Logging, Role, Spec};

/// NSD's access lines `name: ADDRESS KEY|NOKEY` for `acls` (an ACL without
/// an address allows every address).
fn access(c: &mut String, name: &str, acls: &[&Acl]) {
    for a in acls {
        let addrs: Vec<&str> = match &a.address {
            Some(x) => vec![x.as_str()],
            None => vec!["0.0.0.0/0", "::0/0"],
        };
        let keys: Vec<&str> = if a.keys.is_empty() {
            vec!["NOKEY"]
        } else {
            a.keys.iter().map(String::as_str).collect()
        };
        for addr in &addrs {
            for k in &keys {
                let _ = writeln!(c, "    {name}: {addr} {k}");
            }
        }
    }
}

pub(super) fn write(spec: &Spec, dir: &Path) -> Result<Launch, Error> {
    refuse_actions(spec, &[Action::Update, Action::Query])?;
    refuse_signing(spec)?;
    let d = dir.display();
    // verbosity 2 logs every transfer and NOTIFY; Debian's NSD limits
    // responses per second by default (rrl-ratelimit 0: off).
    let mut c = String::from("server:\n");
    for a in listen(spec) {
        let _ = writeln!(c, "    ip-address: {}", at(&a));
    }
    let _ = write!(
        c,
        "    port: {}\n    do-ip6: {}\n    server-count: {}\n    username: \"\"\n    chroot: \"\"\n    \
         zonesdir: \"{d}\"\n    database: \"\"\n    zonelistfile: \"{d}/zone.list\"\n    \
         xfrdfile: \"{d}/xfrd.state\"\n    xfrdir: \"{d}\"\n    pidfile: \"{d}/nsd.pid\"\n    \
         hide-version: yes\n    xfrd-reload-timeout: 0\n    rrl-ratelimit: 0\n",
        spec.port,
        if has_v6(spec) { "yes" } else { "no" },
        spec.workers()
    );
    // Without a logfile (and with -d) NSD logs to stderr.
    match spec.logging {
        Logging::Verbose => {
            let _ = write!(c, "    logfile: \"{d}/nsd.log\"\n    verbosity: 2\n");
        }
        Logging::Plain => c.push_str("    verbosity: 1\n"),
    }
    if let Some(b) = spec.socket_buffer {
        let _ = write!(c, "    so-rcvbuf: {b}\n    so-sndbuf: {b}\n");
    }
    // NSD serves TLS on the addresses whose port is tls-port.
    if let Some(t) = &spec.tls {
        for a in &spec.addresses {
            let _ = writeln!(c, "    ip-address: {}", at(&SocketAddr::new(*a, t.port)));
        }
        let _ = write!(
            c,
            "    tls-port: {}\n    tls-service-key: \"{}\"\n    tls-service-pem: \"{}\"\n",
            t.port,
            t.key.display(),
            t.cert.display()
        );
    }
    c.push_str(&spec.server_extra);
    c.push_str("remote-control:\n    control-enable: no\n");
    for k in &spec.keys {
        let _ = write!(
            c,
            "key:\n    name: \"{}\"\n    algorithm: {}\n    secret: \"{}\"\n",
            k.name, k.algorithm, k.secret
        );
    }
    c.push_str(&spec.sections);
    for z in &spec.zones {
        let key = z.key.as_deref().unwrap_or("NOKEY");
        let _ = writeln!(c, "zone:\n    name: \"{}\"", relative(z));
        match &z.role {
            Role::Primary(_) => {
                let f = required_file(spec.kind, z, dir)?;
                let _ = writeln!(c, "    zonefile: \"{}\"", f.display());
            }
            Role::Secondary(primaries) => {
                let _ = writeln!(c, "    zonefile: \"{}zone\"", z.name);
                for p in primaries {
                    let _ = writeln!(c, "    request-xfr: {} {key}", at(p));
                }
            }
        }
        access(&mut c, "allow-notify", &acls_for(spec, z, Action::Notify)?);
        access(&mut c, "provide-xfr", &acls_for(spec, z, Action::Transfer)?);
        for n in &z.notify {
            let _ = writeln!(c, "    notify: {} {key}", at(n));
        }
        c.push_str(&z.extra);
    }
    let conf = put(dir, FILE, &c)?;
    Ok(launch(spec, dir, &conf))
}

/// The configuration file's name.
pub(super) const FILE: &str = "nsd.conf";

/// `nsd -d -c nsd.conf` (in the foreground).
pub(super) fn launch(spec: &Spec, dir: &Path, conf: &Path) -> Launch {
    Launch {
        args: vec!["-d".into(), "-c".into(), conf.into()],
        log: (spec.logging == Logging::Verbose).then(|| dir.join("nsd.log")),
        conf: conf.into(),
    }
}
