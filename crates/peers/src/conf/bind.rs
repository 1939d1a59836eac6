//! named.conf (BIND 9.18): no rndc control channel (`controls { };` keeps
//! it off the shared port 953), no recursion, a debug log in the server's
//! directory; `named -f` in the foreground.

use std::fmt::Write as _;
use std::path::Path;

use super::{acls_for, has_v6, put, relative, required_file, unsupported};
use crate::process::Launch;
use crate::{Acl, Action, Error, Logging, Role, Signing, Spec, Zone};

/// BIND's address match list for `acls`: a keyed ACL matches its keys (the
/// address of a keyed ACL is not written: the key is the stronger rule),
/// an unkeyed one its address (any when None). Empty ACLs: `none`.
fn match_list(acls: &[&Acl]) -> String {
    let mut items = Vec::new();
    for a in acls {
        if a.keys.is_empty() {
            items.push(a.address.clone().unwrap_or_else(|| "any".into()));
        } else {
            items.extend(a.keys.iter().map(|k| format!("key \"{k}\"")));
        }
    }
    if items.is_empty() {
        items.push("none".into());
    }
    let mut s = String::from("{ ");
    for i in items {
        let _ = write!(s, "{i}; ");
    }
    s.push('}');
    s
}

/// The `tls` statement of the TLS listeners.
const TLS: &str = "peers-tls";
/// The `tls` statement of transfers over TLS from the primaries.
const OPPORTUNISTIC: &str = "opportunistic";

/// `addr port P [key "K"] [tls T];` items of a primaries or also-notify list
/// (`tls`: the zone's transfers over TLS).
fn servers(zone: &Zone, addrs: &[std::net::SocketAddr], tls: bool) -> String {
    let mut s = String::from("{ ");
    for a in addrs {
        let _ = write!(s, "{} port {}", a.ip(), a.port());
        if let Some(k) = &zone.key {
            let _ = write!(s, " key \"{k}\"");
        }
        if tls {
            let _ = write!(s, " tls {OPPORTUNISTIC}");
        }
        s.push_str("; ");
    }
    s.push('}');
    s
}

pub(super) fn write(spec: &Spec, dir: &Path) -> Result<Launch, Error> {
    // Its default policy only (ECDSA P-256, NSEC, keys made at the first load).
    if spec
        .zones
        .iter()
        .any(|z| z.signing.as_ref().is_some_and(|s| *s != Signing::default()))
    {
        return Err(unsupported(spec, "a signing other than the default"));
    }
    let d = dir.display();
    let port = spec.port;
    let v4: Vec<String> = spec
        .addresses
        .iter()
        .filter(|a| a.is_ipv4())
        .map(|a| format!("{a}; "))
        .collect();
    let v6: Vec<String> = spec
        .addresses
        .iter()
        .filter(|a| a.is_ipv6())
        .map(|a| format!("{a}; "))
        .collect();
    let v6 = if v6.is_empty() {
        "none; ".to_string()
    } else {
        v6.concat()
    };
    // The min-* options let a zone's short SOA timers count.
    let mut c = format!(
        "options {{\n  directory \"{d}\";\n  pid-file \"{d}/named.pid\";\n  \
         session-keyfile \"{d}/session.key\";\n  managed-keys-directory \"{d}\";\n  \
         listen-on port {port} {{ {}}};\n  listen-on-v6 port {port} {{ {v6}}};\n  \
         recursion no;\n  notify no;\n  dnssec-validation no;\n  version none;\n  \
         min-refresh-time 1;\n  min-retry-time 1;\n",
        v4.concat()
    );
    if let Some(b) = spec.socket_buffer {
        let _ = write!(c, "  udp-receive-buffer {b};\n  udp-send-buffer {b};\n");
    }
    if let Some(t) = &spec.tls {
        let _ = writeln!(
            c,
            "  listen-on port {} tls {TLS} {{ {}}};",
            t.port,
            v4.concat()
        );
        if v6 != "none; " {
            let _ = writeln!(c, "  listen-on-v6 port {} tls {TLS} {{ {v6}}};", t.port);
        }
    }
    c.push_str(&spec.server_extra);
    c.push_str("};\ncontrols { };\n");
    if let Some(t) = &spec.tls {
        let _ = writeln!(
            c,
            "tls {TLS} {{ key-file \"{}\"; cert-file \"{}\"; }};",
            t.key.display(),
            t.cert.display()
        );
    }
    // Transfers over TLS that authenticate nothing: a tls clause without a CA.
    if spec.zones.iter().any(|z| z.primaries_tls) {
        let _ = writeln!(c, "tls {OPPORTUNISTIC} {{ }};");
    }
    for k in &spec.keys {
        let _ = write!(
            c,
            "key \"{}\" {{\n  algorithm {};\n  secret \"{}\";\n}};\n",
            k.name, k.algorithm, k.secret
        );
    }
    match spec.logging {
        Logging::Verbose => {
            let _ = write!(
                c,
                "logging {{\n  channel to_file {{ file \"{d}/named.log\"; severity debug 3; \
                 print-time yes; print-category yes; print-severity yes; }};\n  \
                 category default {{ to_file; }};\n  category xfer-in {{ to_file; }};\n  \
                 category notify {{ to_file; }};\n}};\n"
            );
        }
        // `named -g` logs to stderr at info. BIND logs every record an UPDATE
        // adds (Knot and Lode a line per commit): not that cost in a measurement.
        Logging::Plain => c.push_str("logging { category update { null; }; };\n"),
    }
    c.push_str(&spec.sections);
    for (i, z) in spec.zones.iter().enumerate() {
        let _ = writeln!(c, "zone \"{}\" {{", relative(z));
        match &z.role {
            Role::Primary(_) => {
                let f = required_file(spec.kind, z, dir)?;
                let _ = write!(c, "  type primary;\n  file \"{}\";\n", f.display());
                let _ = writeln!(c, "  journal \"{d}/zone{i}.jnl\";");
            }
            Role::Secondary(primaries) => {
                let _ = write!(c, "  type secondary;\n  file \"zone{i}.db\";\n");
                let _ = writeln!(c, "  primaries {};", servers(z, primaries, z.primaries_tls));
            }
        }
        for (name, action) in [
            ("allow-notify", Action::Notify),
            ("allow-transfer", Action::Transfer),
            ("allow-update", Action::Update),
            ("allow-query", Action::Query),
        ] {
            let acls = acls_for(spec, z, action)?;
            if !acls.is_empty() || action == Action::Transfer {
                let _ = writeln!(c, "  {name} {};", match_list(&acls));
            }
        }
        if !z.notify.is_empty() {
            let _ = write!(
                c,
                "  notify explicit;\n  also-notify {};\n",
                servers(z, &z.notify, false)
            );
        }
        if z.signing.is_some() {
            // A zone that takes updates is signed in place; another inline.
            let inline = acls_for(spec, z, Action::Update)?.is_empty();
            let _ = writeln!(
                c,
                "  dnssec-policy default;{}",
                if inline { " inline-signing yes;" } else { "" }
            );
        }
        c.push_str(&z.extra);
        c.push_str("};\n");
    }
    let conf = put(dir, FILE, &c)?;
    Ok(launch(spec, dir, &conf))
}

/// The configuration file's name.
pub(super) const FILE: &str = "named.conf";

/// `named -f` on [`FILE`]: foreground with the configured logging at debug
/// level 3 ([`Logging::Verbose`]), or `named -g`: foreground, logging to
/// stderr ([`Logging::Plain`]); -4 without IPv6; -n: worker threads. As
/// root no -u is needed (named then stays root).
pub(super) fn launch(spec: &Spec, dir: &Path, conf: &Path) -> Launch {
    let verbose = spec.logging == Logging::Verbose;
    let mut args: Vec<std::ffi::OsString> = vec![if verbose { "-f" } else { "-g" }.into()];
    if !has_v6(spec) {
        args.push("-4".into());
    }
    args.extend(["-n".into(), spec.workers().to_string().into()]);
    if verbose {
        args.extend(["-d".into(), "3".into()]);
    }
    args.extend(["-c".into(), conf.into()]);
    Launch {
        args,
        log: verbose.then(|| dir.join("named.log")),
        conf: conf.into(),
    }
}
