//! pdns.conf with the bind back end (PowerDNS Authoritative 4): zones in a
//! named.conf-style list, no guardian, no daemon, no web server. TSIG,
//! UPDATE and signing need PowerDNS' database back ends: not written here.

use std::fmt::Write as _;
use std::path::Path;

use super::{acls_for, put, refuse_actions, refuse_signing, required_file, unsupported};
use crate::process::Launch;
use crate::{Action, Error, Logging, Role, Spec};

pub(super) fn write(spec: &Spec, dir: &Path) -> Result<Launch, Error> {
    refuse_actions(spec, &[Action::Update, Action::Query])?;
    refuse_signing(spec)?;
    if !spec.keys.is_empty() || spec.zones.iter().any(|z| z.key.is_some()) {
        return Err(unsupported(spec, "TSIG with the bind back end"));
    }
    let d = dir.display();
    let mut zones = String::new();
    let mut secondary = false;
    let mut axfr_ips = Vec::new();
    let mut notify = Vec::new();
    for z in &spec.zones {
        let name = super::relative(z);
        match &z.role {
            Role::Primary(_) => {
                let f = required_file(spec.kind, z, dir)?;
                let _ = writeln!(
                    zones,
                    "zone \"{name}\" {{ type master; file \"{}\"; }};",
                    f.display()
                );
            }
            Role::Secondary(primaries) => {
                secondary = true;
                let list: Vec<String> = primaries
                    .iter()
                    .map(|p| format!("{}:{};", p.ip(), p.port()))
                    .collect();
                let _ = writeln!(
                    zones,
                    "zone \"{name}\" {{ type slave; file \"{d}/{name}.zone\"; masters {{ {} }}; }};",
                    list.join(" ")
                );
            }
        }
        for a in acls_for(spec, z, Action::Transfer)? {
            axfr_ips.push(a.address.clone().unwrap_or_else(|| "0.0.0.0/0,::/0".into()));
        }
        notify.extend(z.notify.iter().map(|n| format!("{}:{}", n.ip(), n.port())));
    }
    let zones = put(dir, "bind-zones.conf", &zones)?;
    let addrs: Vec<String> = spec.addresses.iter().map(|a| a.to_string()).collect();
    let mut c = format!(
        "launch=bind\nbind-config={}\nlocal-address={}\nlocal-port={}\nsocket-dir={d}\n\
         guardian=no\ndaemon=no\ndisable-syslog=yes\nreceiver-threads={}\ndistributor-threads=1\n\
         webserver=no\napi=no\nloglevel={}\n",
        zones.display(),
        addrs.join(","),
        spec.port,
        spec.workers(),
        match spec.logging {
            Logging::Verbose => 6,
            Logging::Plain => 4,
        }
    );
    if secondary {
        c.push_str("secondary=yes\n");
    }
    if !notify.is_empty() {
        let _ = write!(c, "primary=yes\nalso-notify={}\n", notify.join(","));
    }
    if !axfr_ips.is_empty() {
        let _ = writeln!(c, "allow-axfr-ips={}", axfr_ips.join(","));
    }
    c.push_str(&spec.server_extra);
    c.push_str(&spec.sections);
    let conf = put(dir, FILE, &c)?;
    Ok(launch(spec, dir, &conf))
}

/// The configuration file's name.
pub(super) const FILE: &str = "pdns.conf";

/// `pdns_server --config-dir=DIR` in the foreground, without its guardian.
/// (Its configuration file must be called `pdns.conf`: the directory is given.)
pub(super) fn launch(_: &Spec, dir: &Path, conf: &Path) -> Launch {
    let conf_dir = conf.parent().unwrap_or(dir);
    Launch {
        args: vec![
            format!("--config-dir={}", conf_dir.display()).into(),
            "--daemon=no".into(),
            "--guardian=no".into(),
        ],
        log: None,
        conf: conf.into(),
    }
}
