//! lode.toml, and `lode serve --config lode.toml --listen … --workers N`:
//! journal and control socket in the server's directory.

use std::fmt::Write as _;
use std::path::Path;

use super::{at, hex, listen, policies, put, zone_file};
use crate::process::Launch;
use crate::{Catalog, Error, Role, Signing, Spec};

/// `s` as a TOML basic string.
fn q(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A TOML array of strings.
fn list<S: AsRef<str>>(items: &[S]) -> String {
    let v: Vec<String> = items.iter().map(|s| q(s.as_ref())).collect();
    format!("[{}]", v.join(", "))
}

pub(super) fn write(spec: &Spec, dir: &Path) -> Result<Launch, Error> {
    // Top-level keys first: after a table header they would be the table's.
    let mut c = String::new();
    if spec.zones.iter().any(|z| z.journal) {
        c.push_str("journal-dir = \"journal\"\n");
    }
    let _ = writeln!(
        c,
        "control = {}",
        q(&dir.join("ctl.sock").display().to_string())
    );
    if let Some(b) = spec.socket_buffer {
        let _ = writeln!(c, "udp-receive-buffer = {b}");
    }
    if let Some(t) = &spec.tls {
        let on = |port: u16| -> Vec<String> {
            spec.addresses
                .iter()
                .map(|a| at(&std::net::SocketAddr::new(*a, port)))
                .collect()
        };
        let _ = writeln!(c, "listen-tls = {}", list(&on(t.port)));
        if let Some(p) = t.quic_port {
            let _ = writeln!(c, "listen-quic = {}", list(&on(p)));
        }
        let _ = writeln!(c, "cert-file = {}", q(&t.cert.display().to_string()));
        let _ = writeln!(c, "key-file = {}", q(&t.key.display().to_string()));
    }
    c.push_str(&spec.server_extra);
    c.push('\n');
    if let Some(r) = spec.rrl_rate {
        let _ = write!(c, "[rrl]\nrate-limit = {r}\n\n");
    }
    if let Some(s) = spec.cookie_secret {
        let _ = write!(c, "[cookies]\nsecret = \"{}\"\n\n", hex(&s));
    }
    for k in &spec.keys {
        let _ = write!(
            c,
            "[[key]]\nid = {}\nalgorithm = {}\nsecret = {}\n\n",
            q(&k.name),
            q(&k.algorithm),
            q(&k.secret)
        );
    }
    for a in &spec.acls {
        let _ = writeln!(c, "[[acl]]\nid = {}", q(&a.id));
        if let Some(addr) = &a.address {
            let _ = writeln!(c, "address = {}", list(&[addr]));
        }
        if !a.keys.is_empty() {
            let _ = writeln!(c, "key = {}", list(&a.keys));
        }
        let actions: Vec<&str> = a.actions.iter().map(|x| x.name()).collect();
        let _ = writeln!(c, "action = {}\n", list(&actions));
    }
    let (signed, policy) = policies(spec);
    for (zi, s) in signed.iter().filter(|(_, s)| **s != Signing::default()) {
        write_policy(&mut c, dir, *zi, s)?;
    }
    let mut zones = String::new();
    for (zi, z) in spec.zones.iter().enumerate() {
        let mut remote = |role: &str, addrs: &[std::net::SocketAddr]| -> Vec<String> {
            addrs
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    let id = format!("z{zi}-{role}{i}");
                    let _ = write!(
                        c,
                        "[[remote]]\nid = {}\naddress = {}\n",
                        q(&id),
                        list(&[at(a)])
                    );
                    if let Some(k) = &z.key {
                        let _ = writeln!(c, "key = {}", q(k));
                    }
                    c.push('\n');
                    id
                })
                .collect()
        };
        let primaries = match &z.role {
            Role::Secondary(p) => remote("primary", p),
            Role::Primary(_) => Vec::new(),
        };
        let notify = remote("notify", &z.notify);
        let _ = writeln!(zones, "[[zone]]\nname = {}", q(&z.name));
        if let Some(f) = zone_file(z, dir)? {
            let _ = writeln!(zones, "file = {}", q(&f.display().to_string()));
        }
        if !primaries.is_empty() {
            let _ = writeln!(zones, "master = {}", list(&primaries));
        }
        if !notify.is_empty() {
            let _ = writeln!(zones, "notify = {}", list(&notify));
        }
        if !z.acls.is_empty() {
            let _ = writeln!(zones, "acl = {}", list(&z.acls));
        }
        if let Some(s) = &z.signing {
            zones.push_str("dnssec-signing = true\n");
            if let (Some(p), false) = (policy[zi], *s == Signing::default()) {
                let _ = writeln!(zones, "dnssec-policy = \"z{p}-policy\"");
            }
        }
        match &z.catalog {
            Some(Catalog::Generate) => zones.push_str("catalog-role = \"generate\"\n"),
            Some(Catalog::Member(of)) => {
                let _ = writeln!(zones, "catalog-zone = {}", q(of));
            }
            // The members: the catalog zone's primaries and ACLs, by a template.
            Some(Catalog::Interpret) => {
                let id = format!("z{zi}-members");
                let _ = write!(
                    zones,
                    "catalog-role = \"interpret\"\ncatalog-template = {}\n",
                    list(&[&id])
                );
                let _ = write!(
                    c,
                    "[[template]]\nid = {}\nmaster = {}\nacl = {}\n\n",
                    q(&id),
                    list(&primaries),
                    list(&z.acls)
                );
            }
            None => {}
        }
        zones.push_str(&z.extra);
        zones.push('\n');
    }
    c.push_str(&spec.sections);
    c.push_str(&zones);
    let conf = put(dir, FILE, &c)?;
    Ok(launch(spec, dir, &conf))
}

/// The `[[policy]]` `z{zi}-policy` of `s` (and its `[[keystore]]`, whose
/// PIN goes into a file of `dir`): only what differs from Lode's defaults.
fn write_policy(c: &mut String, dir: &Path, zi: usize, s: &Signing) -> Result<(), Error> {
    if let Some(k) = &s.keystore {
        let pin = put(dir, &format!("z{zi}-keystore.pin"), &format!("{}\n", k.pin))?;
        let config = format!(
            "pkcs11:token={};pin-source={} {}",
            k.token,
            pin.display(),
            k.module.display()
        );
        let _ = write!(
            c,
            "[[keystore]]\nid = \"z{zi}-keystore\"\nbackend = \"pkcs11\"\nconfig = {}\n\n",
            q(&config)
        );
    }
    let _ = write!(
        c,
        "[[policy]]\nid = \"z{zi}-policy\"\nalgorithm = {}\n",
        q(&s.algorithm)
    );
    for (set, key) in [
        (s.nsec3, "nsec3"),
        (s.opt_out, "nsec3-opt-out"),
        (s.manual, "manual"),
    ] {
        if set {
            let _ = writeln!(c, "{key} = true");
        }
    }
    if let Some(n) = s.threads {
        let _ = writeln!(c, "signing-threads = {n}");
    }
    if let Some(r) = &s.rollover {
        let _ = write!(
            c,
            "propagation-delay = {}\ndnskey-ttl = {}\nzsk-lifetime = {}\n",
            r.propagation_delay, r.dnskey_ttl, r.zsk_lifetime
        );
    }
    if s.keystore.is_some() {
        let _ = writeln!(c, "keystore = \"z{zi}-keystore\"");
    }
    c.push('\n');
    Ok(())
}

/// The configuration file's name.
pub(super) const FILE: &str = "lode.toml";

/// `lode serve --config lode.toml --listen … --workers N`.
pub(super) fn launch(spec: &Spec, _: &Path, conf: &Path) -> Launch {
    let mut args = vec!["serve".into(), "--config".into(), conf.into()];
    for a in listen(spec) {
        args.push("--listen".into());
        args.push(a.to_string().into());
    }
    args.push("--workers".into());
    args.push(spec.workers().to_string().into());
    Launch {
        args,
        log: None,
        conf: conf.into(),
    }
}
