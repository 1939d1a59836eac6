//! knot.conf (Knot DNS 3.x): state, control socket and log in the server's
//! directory; remotes and ACLs from the zones; a policy per distinct signing.

use std::fmt::Write as _;
use std::path::Path;

use super::{at, hex, listen, policies, put, zone_file};
use crate::process::Launch;
use crate::{Catalog, Error, Logging, Role, Spec};

pub(super) fn write(spec: &Spec, dir: &Path) -> Result<Launch, Error> {
    let d = dir.display();
    let w = spec.workers();
    let tcp = spec.tcp_workers.unwrap_or(w).max(1);
    let background = spec.background_workers.unwrap_or(1).max(1);
    let addrs: Vec<String> = listen(spec).iter().map(at).collect();
    let listen = match addrs.as_slice() {
        [one] => one.clone(),
        many => format!("[ {} ]", many.join(", ")),
    };
    let mut c = format!(
        "server:\n    rundir: \"{d}\"\n    pidfile: \"{d}/knot.pid\"\n    listen: {listen}\n    \
         udp-workers: {w}\n    tcp-workers: {tcp}\n    background-workers: {background}\n{}\
         database:\n    storage: \"{d}\"\n\
         control:\n    listen: \"{d}/knot.sock\"\n\
         log:\n  - target: {}\n    any: info\n",
        spec.server_extra,
        match spec.logging {
            Logging::Verbose => format!("\"{d}/knot.log\""),
            Logging::Plain => "stderr".into(),
        }
    );
    if !spec.keys.is_empty() {
        c.push_str("key:\n");
        for k in &spec.keys {
            let _ = write!(
                c,
                "  - id: {}\n    algorithm: {}\n    secret: {}\n",
                k.name, k.algorithm, k.secret
            );
        }
    }
    // One remote per primary and NOTIFY target of each zone.
    let mut remotes = String::new();
    let mut zone_remotes = Vec::new();
    for (zi, z) in spec.zones.iter().enumerate() {
        let primaries = match &z.role {
            Role::Secondary(p) => p.as_slice(),
            Role::Primary(_) => &[],
        };
        let mut ids = (Vec::new(), Vec::new());
        for (i, (a, notify)) in primaries
            .iter()
            .map(|a| (a, false))
            .chain(z.notify.iter().map(|a| (a, true)))
            .enumerate()
        {
            let id = format!("z{zi}-remote{i}");
            let _ = write!(remotes, "  - id: {id}\n    address: {}\n", at(a));
            if let Some(k) = &z.key {
                let _ = writeln!(remotes, "    key: {k}");
            }
            if notify { &mut ids.1 } else { &mut ids.0 }.push(id);
        }
        zone_remotes.push(ids);
    }
    if !remotes.is_empty() {
        c.push_str("remote:\n");
        c.push_str(&remotes);
    }
    if !spec.acls.is_empty() {
        c.push_str("acl:\n");
        for a in &spec.acls {
            let _ = writeln!(c, "  - id: {}", a.id);
            if let Some(addr) = &a.address {
                let _ = writeln!(c, "    address: {addr}");
            }
            if !a.keys.is_empty() {
                let _ = writeln!(c, "    key: [ {} ]", a.keys.join(", "));
            }
            let actions: Vec<&str> = a.actions.iter().map(|x| x.name()).collect();
            let _ = writeln!(c, "    action: [ {} ]", actions.join(", "));
        }
    }
    let (signed, policy) = policies(spec);
    if signed.iter().any(|(_, s)| s.keystore.is_some()) {
        c.push_str("keystore:\n");
        for (zi, s) in &signed {
            if let Some(k) = &s.keystore {
                let _ = write!(
                    c,
                    "  - id: z{zi}-keystore\n    backend: pkcs11\n    \
                     config: \"pkcs11:token={};pin-value={} {}\"\n",
                    k.token,
                    k.pin,
                    k.module.display()
                );
            }
        }
    }
    if !signed.is_empty() {
        c.push_str("policy:\n");
        for (zi, s) in &signed {
            let _ = write!(
                c,
                "  - id: z{zi}-policy\n    algorithm: {}\n    manual: {}\n    nsec3: {}\n",
                s.algorithm,
                on(s.manual),
                on(s.nsec3)
            );
            if s.nsec3 {
                let _ = write!(
                    c,
                    "    nsec3-iterations: 0\n    nsec3-salt-length: 0\n    nsec3-opt-out: {}\n",
                    on(s.opt_out)
                );
            }
            if let Some(n) = s.threads {
                let _ = writeln!(c, "    signing-threads: {n}");
            }
            if let Some(r) = &s.rollover {
                let _ = write!(
                    c,
                    "    propagation-delay: {}\n    dnskey-ttl: {}\n    zsk-lifetime: {}\n",
                    r.propagation_delay, r.dnskey_ttl, r.zsk_lifetime
                );
            }
            if s.keystore.is_some() {
                let _ = writeln!(c, "    keystore: z{zi}-keystore");
            }
        }
    }
    // Response-rate limiting and cookies: global modules of every zone.
    let mut modules = Vec::new();
    if let Some(s) = spec.cookie_secret {
        let _ = write!(
            c,
            "mod-cookies:\n  - id: peers\n    secret: 0x{}\n",
            hex(&s)
        );
        modules.push("mod-cookies/peers");
    }
    if let Some(r) = spec.rrl_rate {
        let _ = write!(c, "mod-rrl:\n  - id: peers\n    rate-limit: {r}\n");
        modules.push("mod-rrl/peers");
    }
    c.push_str(&spec.sections);
    let _ = write!(
        c,
        "template:\n  - id: default\n    storage: \"{d}\"\n    zonefile-sync: -1\n{}",
        spec.template_extra
    );
    if !modules.is_empty() {
        let _ = writeln!(c, "    global-module: [ {} ]", modules.join(", "));
    }
    // The members of an interpreted catalog: the catalog zone's settings.
    for (zi, (z, (primaries, _))) in spec.zones.iter().zip(&zone_remotes).enumerate() {
        if z.catalog == Some(Catalog::Interpret) {
            let _ = write!(
                c,
                "  - id: z{zi}-members\n    storage: \"{d}\"\n    zonefile-sync: -1\n    \
                 zonefile-load: none\n    master: [ {} ]\n    journal-content: {}\n",
                primaries.join(", "),
                journal(z.journal)
            );
            if !z.acls.is_empty() {
                let _ = writeln!(c, "    acl: [ {} ]", z.acls.join(", "));
            }
        }
    }
    if !spec.zones.is_empty() {
        c.push_str("zone:\n");
    }
    for (zi, (z, (primaries, notify))) in spec.zones.iter().zip(&zone_remotes).enumerate() {
        let _ = writeln!(c, "  - domain: \"{}\"", z.name);
        match zone_file(z, dir)? {
            Some(f) => {
                let _ = writeln!(c, "    file: \"{}\"", f.display());
            }
            None if !primaries.is_empty() => {
                let _ = writeln!(c, "    file: \"{d}/{}zone\"", z.name);
                c.push_str("    zonefile-load: none\n");
            }
            None => {}
        }
        if !primaries.is_empty() {
            let _ = writeln!(c, "    master: [ {} ]", primaries.join(", "));
        }
        if !notify.is_empty() {
            let _ = writeln!(c, "    notify: [ {} ]", notify.join(", "));
        }
        if !z.acls.is_empty() {
            let _ = writeln!(c, "    acl: [ {} ]", z.acls.join(", "));
        }
        let _ = writeln!(c, "    journal-content: {}", journal(z.journal));
        match &z.catalog {
            Some(Catalog::Generate) => c.push_str("    catalog-role: generate\n"),
            Some(Catalog::Member(of)) => {
                let _ = write!(c, "    catalog-role: member\n    catalog-zone: \"{of}\"\n");
            }
            Some(Catalog::Interpret) => {
                let _ = write!(
                    c,
                    "    catalog-role: interpret\n    catalog-template: z{zi}-members\n"
                );
            }
            None => {}
        }
        if let Some(p) = policy[zi] {
            let _ = write!(
                c,
                "    dnssec-signing: on\n    dnssec-policy: z{p}-policy\n"
            );
        }
        c.push_str(&z.extra);
    }
    let conf = put(dir, FILE, &c)?;
    Ok(launch(spec, dir, &conf))
}

/// The configuration file's name.
pub(super) const FILE: &str = "knot.conf";

/// `knotd -c knot.conf`.
pub(super) fn launch(spec: &Spec, dir: &Path, conf: &Path) -> Launch {
    Launch {
        args: vec!["-c".into(), conf.into()],
        log: (spec.logging == Logging::Verbose).then(|| dir.join("knot.log")),
        conf: conf.into(),
    }
}

/// Knot's `journal-content` for a zone with (`true`) or without a journal.
fn journal(on: bool) -> &'static str {
    if on {
        "changes"
    } else {
        "none"
    }
}

fn on(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}
