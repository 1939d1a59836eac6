//! The server-wide sections: `server`, `control`, `database`, `log`,
//! `xdp`, `statistics` and the query modules (`mod-rrl`, `mod-cookies`,
//! `mod-dnstap` as Lode's `[rrl]`, `[cookies]`, `[dnstap]`).

use std::net::IpAddr;

use super::convert::{absolute, Conv, Import, Kind};
use super::emit::{Table, Value};
use super::knotconf::{Block, KnotConf};

/// `server` items with a Lode key of the same meaning: (Knot, Lode, conversion).
const SERVER_KEYS: [(&str, &str, Conv); 13] = [
    ("identity", "identity", Conv::Str),
    ("version", "version", Conv::Str),
    ("nsid", "nsid", Conv::Str),
    ("user", "user", Conv::Str),
    ("udp-workers", "workers", Conv::Int),
    ("background-workers", "background-workers", Conv::Int),
    ("tcp-idle-timeout", "tcp-idle-timeout", Conv::Time),
    ("tcp-io-timeout", "tcp-io-timeout", Conv::Int),
    ("tcp-max-clients", "tcp-max-clients", Conv::Int),
    ("quic-max-clients", "quic-max-clients", Conv::Int),
    (
        "quic-idle-close-timeout",
        "quic-idle-close-timeout",
        Conv::Time,
    ),
    ("udp-max-payload", "max-udp-payload", Conv::Size),
    ("tls-handshake-timeout", "tls-handshake-timeout", Conv::Int),
];

/// `server` items whose Knot value is what Lode does anyway: (key, value, what Lode does).
const SERVER_SAME: [(&str, &str, &str); 4] = [
    (
        "answer-rotation",
        "off",
        "records are answered in a fixed order",
    ),
    ("automatic-acl", "off", "see the zones' ACLs"),
    ("async-start", "off", "a zone answers once loaded"),
    (
        "tcp-reuseport",
        "on",
        "every UDP worker has its own SO_REUSEPORT socket",
    ),
];

/// Converts the server-wide sections into the top-level keys and the
/// `[rrl]`, `[cookies]`, `[dnstap]` tables.
pub fn convert(im: &mut Import) {
    let mut top = std::mem::take(&mut im.doc.top);
    let conf = im.conf;
    let server = conf.blocks("server").collect::<Vec<_>>();
    for block in &server {
        server_block(im, block, &mut top);
    }
    if !server.iter().any(|b| b.has("listen")) {
        let at = server
            .first()
            .map_or_else(|| first_pos(conf), |b| b.at.clone());
        im.tell(
            Kind::Note,
            &at,
            "server.listen",
            "not set: knotd answers on no address; Lode's default is 127.0.0.1:5300 and [::1]:5300",
        );
    }
    control(im, &server, &mut top);
    database(im, &mut top);
    log(im, &mut top);
    xdp(im, &mut top);
    im.skip_section(
        "statistics",
        "Lode counts always: its Prometheus endpoint (metrics-listen) or `lode stats`",
    );
    im.doc.top = top;
    modules(im);
}

/// `xdp: listen` as `listen-xdp` (interfaces; Knot's address form is not
/// imported), `route-check` as `xdp-route-check` and `busypoll-budget`,
/// `busypoll-timeout` as `xdp-busypoll-*`. The section's other
/// items (TCP and QUIC over XDP, …) are reported with the leftovers.
fn xdp(im: &mut Import, top: &mut Table) {
    let conf = im.conf;
    let mut out = Vec::new();
    for block in conf.blocks("xdp") {
        for spec in [
            ("route-check", "xdp-route-check", Conv::Bool),
            ("busypoll-budget", "xdp-busypoll-budget", Conv::Int),
            ("busypoll-timeout", "xdp-busypoll-timeout", Conv::Int),
        ] {
            im.copy(block, "xdp", top, spec);
        }
        let Some((at, values)) = block.values("listen") else {
            continue;
        };
        for v in values {
            let (iface, port) = v.split_once('@').unwrap_or((v.as_str(), "53"));
            match port.parse::<u16>() {
                Ok(port) if iface.parse::<IpAddr>().is_err() => out.push(format!("{iface}@{port}")),
                _ => im.tell(
                    Kind::NotImported,
                    &at,
                    "xdp.listen",
                    format!(
                        "{v}: Lode's listen-xdp names an interface (IFACE@PORT), not an address"
                    ),
                ),
            }
        }
    }
    if !out.is_empty() {
        top.list("listen-xdp", out);
    }
}

/// The position of the file's first section (for notes about what is absent).
fn first_pos(conf: &KnotConf) -> super::knotconf::Pos {
    conf.sections
        .first()
        .map(|s| s.at.clone())
        .unwrap_or_else(|| super::knotconf::Pos {
            file: std::sync::Arc::from(std::path::Path::new("knot.conf")),
            line: 1,
        })
}

/// One `server:` block.
fn server_block(im: &mut Import, block: &Block, top: &mut Table) {
    for spec in SERVER_KEYS {
        im.copy(block, "server", top, spec);
    }
    for (key, value, why) in SERVER_SAME {
        if block
            .peek(key)
            .is_some_and(|v| v == value || v == bool_twin(value))
        {
            im.tell_key(block, "server", key, Kind::Same, why);
        }
    }
    listen(im, block, top, "listen", "listen", 53);
    listen(im, block, top, "listen-tls", "listen-tls", 853);
    listen(im, block, top, "listen-quic", "listen-quic", 853);
    for (key, lode) in [("cert-file", "cert-file"), ("key-file", "key-file")] {
        if let Some((_, path)) = block.one(key) {
            let p = absolute(&im.conf_dir, &path);
            top.str(lode, p.display().to_string());
        }
    }
    udp_payload_by_family(im, block, top);
    let limits = [
        ("tcp-idle-timeout", "tcp-idle-timeout", 1..=3600),
        ("udp-max-payload", "max-udp-payload", 512..=4096),
    ];
    for (key, lode, range) in limits {
        out_of_range(im, block, top, (key, lode), range);
    }
}

/// `on` for `off`'s twin spellings: Knot takes on/off and true/false.
fn bool_twin(v: &str) -> &str {
    match v {
        "on" => "true",
        "off" => "false",
        other => other,
    }
}

/// A value Lode refuses (outside `range`) is left out and reported.
fn out_of_range(
    im: &mut Import,
    block: &Block,
    top: &mut Table,
    (key, lode): (&str, &str),
    range: std::ops::RangeInclusive<i64>,
) {
    let Some(Value::Int(n)) = top.get(lode).cloned() else {
        return;
    };
    if range.contains(&n) {
        return;
    }
    top.entries.retain(|(k, _)| k != lode);
    if let Some((at, _)) = block.one(key) {
        let why = format!("{n}: Lode takes {} to {}", range.start(), range.end());
        im.tell(Kind::NotImported, &at, &format!("server.{key}"), why);
    }
}

/// `udp-max-payload-ipv4`/`-ipv6`: Lode has one size for both; equal ones map.
fn udp_payload_by_family(im: &mut Import, block: &Block, top: &mut Table) {
    let v4 = block.one("udp-max-payload-ipv4");
    let v6 = block.one("udp-max-payload-ipv6");
    match (v4, v6) {
        (Some((_, a)), Some((_, b)))
            if a == b && !top.entries.iter().any(|(k, _)| k == "max-udp-payload") =>
        {
            if let Ok(v) = Conv::Size.apply(&[a]) {
                top.set("max-udp-payload", v);
            }
        }
        (a, b) => {
            for (at, v) in [a, b].into_iter().flatten() {
                im.tell(
                    Kind::NotImported,
                    &at,
                    "server.udp-max-payload-ipv4/-ipv6",
                    format!("{v}: Lode has one max-udp-payload for both families"),
                );
            }
        }
    }
}

/// `listen`-like items: `ADDR[@PORT]` as Lode's `ADDR:PORT` (`[V6]:PORT`).
fn listen(im: &mut Import, block: &Block, top: &mut Table, key: &str, lode: &str, port: u16) {
    let Some((at, values)) = block.values(key) else {
        return;
    };
    let mut out = Vec::new();
    for v in values {
        match listen_address(&v, port) {
            Some(a) => out.push(a),
            None => im.tell(
                Kind::NotImported,
                &at,
                &format!("server.{key}"),
                format!("{v}: Lode listens on addresses, not on a Unix socket or a name"),
            ),
        }
    }
    if !out.is_empty() {
        top.list(lode, out);
    }
}

/// `ADDR[@PORT]` as `ADDR:PORT` (None: not an address).
pub fn listen_address(text: &str, default_port: u16) -> Option<String> {
    let (addr, port) = match text.split_once('@') {
        Some((a, p)) => (a, p.parse::<u16>().ok()?),
        None => (text, default_port),
    };
    Some(std::net::SocketAddr::new(addr.parse::<IpAddr>().ok()?, port).to_string())
}

/// `control: listen` (relative to `rundir`) as `control`.
fn control(im: &mut Import, server: &[&Block], top: &mut Table) {
    let conf = im.conf;
    let rundir = server.iter().rev().find_map(|b| b.one("rundir"));
    let rundir_path = rundir.as_ref().map(|(_, d)| absolute(&im.start_dir, d));
    let mut listen = None;
    for block in conf.blocks("control") {
        if let Some(l) = block.one("listen") {
            listen = Some(l);
        }
        if let Some((at, t)) = block.one("timeout") {
            im.tell(
                Kind::NotImported,
                &at,
                "control.timeout",
                format!("{t}: Lode's control commands have their own timeouts"),
            );
        }
    }
    let socket = match (listen, &rundir_path) {
        (Some((_, l)), Some(dir)) => Some(absolute(dir, &l)),
        (Some((_, l)), None) => Some(absolute(std::path::Path::new("/run/knot"), &l)),
        (None, Some(dir)) => Some(dir.join("knot.sock")),
        (None, None) => None,
    };
    if let Some(s) = socket {
        top.str("control", s.display().to_string());
    }
    for block in server {
        if let Some((at, p)) = block.one("pidfile") {
            im.tell(
                Kind::NotImported,
                &at,
                "server.pidfile",
                format!("{p}: Lode writes no PID file (`lode status` shows it)"),
            );
        }
    }
}

/// `database`: `journal-db` as `journal-dir`, `kasp-db`; the rest reported.
fn database(im: &mut Import, top: &mut Table) {
    let storage = im.storage();
    let conf = im.conf;
    let mut journal = storage.join("journal");
    let mut kasp = storage.join("keys");
    for block in conf.blocks("database") {
        block.one("storage");
        if let Some((_, j)) = block.one("journal-db") {
            journal = absolute(&storage, &j);
        }
        if let Some((_, k)) = block.one("kasp-db") {
            kasp = absolute(&storage, &k);
        }
        if block.peek("journal-db-mode").is_some_and(|m| m == "robust") {
            im.tell_key(
                block,
                "database",
                "journal-db-mode",
                Kind::Same,
                "every change is on disk before it is answered",
            );
        }
        im.tell_key(
            block,
            "database",
            "journal-db-max-size",
            Kind::NotImported,
            "Lode bounds each zone's journal (journal-max-usage), not their sum",
        );
        for key in [
            "timer-db",
            "catalog-db",
            "timer-db-max-size",
            "catalog-db-max-size",
            "kasp-db-max-size",
        ] {
            im.tell_key(
                block,
                "database",
                key,
                Kind::NotImported,
                "Lode keeps timers and catalogs in journal-dir, without a size bound",
            );
        }
    }
    top.str("journal-dir", journal.display().to_string());
    top.str("kasp-db", kasp.display().to_string());
    let at = conf
        .blocks("database")
        .next()
        .map(|b| b.at.clone())
        .unwrap_or_else(|| first_pos(conf));
    im.tell(
        Kind::Note,
        &at,
        "database",
        format!(
            "journal-dir = {}: Lode keeps its own journals there (it does not read Knot's: \
             zones start from their files, secondaries transfer anew)",
            journal.display()
        ),
    );
}

/// `log`: the most detailed severity of its targets as `log-level`; targets
/// other than stderr, stdout and syslog (files) are reported.
fn log(im: &mut Import, top: &mut Table) {
    let conf = im.conf;
    let mut level: Option<usize> = None;
    for block in conf.blocks("log") {
        let target = block.id().to_owned();
        block.one("target");
        if !matches!(target.as_str(), "stderr" | "stdout" | "syslog") {
            im.tell(
                Kind::NotImported,
                &block.at,
                &format!("log[{target}]"),
                "Lode logs to stderr (the systemd journal under systemd): redirect it to a file",
            );
        }
        for key in ["any", "server", "zone", "control", "quic"] {
            if let Some((at, sev)) = block.one(key) {
                match severity(&sev) {
                    Some(n) => level = Some(level.map_or(n, |l| l.max(n))),
                    None => im.tell(
                        Kind::NotImported,
                        &at,
                        &format!("log[{target}].{key}"),
                        format!("{sev}: not a severity"),
                    ),
                }
            }
        }
    }
    if let Some(l) = level {
        top.str("log-level", LEVELS[l]);
    }
}

/// Lode's log levels, least detailed first.
const LEVELS: [&str; 4] = ["error", "warn", "info", "debug"];

/// Knot's severity as an index into [`LEVELS`].
fn severity(text: &str) -> Option<usize> {
    Some(match text {
        "critical" | "error" => 0,
        "warning" => 1,
        "notice" | "info" => 2,
        "debug" => 3,
        _ => return None,
    })
}

/// The query modules: those the `default` template names in
/// `global-module` become Lode's tables; per-zone ones are reported.
fn modules(im: &mut Import) {
    let conf = im.conf;
    let global: Vec<(super::knotconf::Pos, String)> = conf
        .block("template", "default")
        .and_then(|t| t.values("global-module"))
        .map(|(at, v)| v.into_iter().map(|m| (at.clone(), m)).collect())
        .unwrap_or_default();
    let mut used = Vec::new();
    for (at, reference) in &global {
        let (name, id) = reference.split_once('/').unwrap_or((reference, "default"));
        let Some(block) = conf.block(name, id).or_else(|| conf.blocks(name).next()) else {
            im.tell(
                Kind::NotImported,
                at,
                "template[default].global-module",
                format!("{reference}: no such module section"),
            );
            continue;
        };
        used.push((name.to_owned(), block.id().to_owned()));
        let table = match name {
            "mod-rrl" => rrl(im, block),
            "mod-cookies" => cookies(im, block),
            "mod-dnstap" => dnstap(im, block),
            _ => {
                im.tell(
                    Kind::NotImported,
                    at,
                    "template[default].global-module",
                    format!("{reference}: Lode has no such module"),
                );
                None
            }
        };
        if let Some(t) = table {
            im.doc.tables.push(t);
        }
    }
    let sections: Vec<String> = conf
        .sections
        .iter()
        .filter(|s| s.name.starts_with("mod-"))
        .map(|s| s.name.clone())
        .collect();
    for name in sections {
        for block in conf.blocks(&name) {
            if used.iter().any(|(n, id)| *n == name && id == block.id()) {
                continue;
            }
            let owner = super::convert::owner(&name, block);
            for i in &block.items {
                i.mark();
            }
            let why = match name.as_str() {
                "mod-rrl" | "mod-cookies" | "mod-dnstap" => "not a global module of the default template: Lode's modules apply to every zone, or to none",
                "mod-stats" => "Lode counts always: its Prometheus endpoint (metrics-listen) or `lode stats`",
                _ => "Lode has no such module",
            };
            im.tell(Kind::NotImported, &block.at, &owner, why);
        }
    }
}

/// A module's block as the Lode table `header`, its items per `specs`.
fn module_table(
    im: &mut Import,
    block: &Block,
    (section, header): (&str, &'static str),
    specs: &[(&str, &str, Conv)],
) -> Table {
    let mut t = Table::new(header);
    let owner = super::convert::owner(section, block);
    block.one("id");
    for spec in specs {
        im.copy(block, &owner, &mut t, *spec);
    }
    t
}

/// `mod-rrl` as `[rrl]` (None without a rate: Knot refuses that too).
fn rrl(im: &mut Import, block: &Block) -> Option<Table> {
    let specs = [
        ("rate-limit", "rate-limit", Conv::Int),
        ("slip", "slip", Conv::Int),
        ("table-size", "table-size", Conv::Int),
        ("whitelist", "exempt", Conv::List),
    ];
    let t = module_table(im, block, ("mod-rrl", "[rrl]"), &specs);
    t.get("rate-limit").is_some().then_some(t)
}

/// `mod-cookies` as `[cookies]` (its secret as hex without Knot's `0x`).
fn cookies(im: &mut Import, block: &Block) -> Option<Table> {
    let specs = [
        ("secret-lifetime", "secret-lifetime", Conv::Time),
        ("badcookie-slip", "badcookie-slip", Conv::Int),
    ];
    let mut t = module_table(im, block, ("mod-cookies", "[cookies]"), &specs);
    if let Some((_, s)) = block.one("secret") {
        let hex = match s.strip_prefix("0x") {
            Some(h) => h.to_owned(),
            None => s.bytes().map(|b| format!("{b:02x}")).collect(),
        };
        t.str("secret", hex);
    }
    Some(t)
}

/// `mod-dnstap` as `[dnstap]` (None without a sink).
fn dnstap(im: &mut Import, block: &Block) -> Option<Table> {
    let specs = [
        ("sink", "sink", Conv::Str),
        ("identity", "identity", Conv::Str),
        ("version", "version", Conv::Str),
        ("log-queries", "log-queries", Conv::Bool),
        ("log-responses", "log-responses", Conv::Bool),
    ];
    let t = module_table(im, block, ("mod-dnstap", "[dnstap]"), &specs);
    if block
        .peek("responses-with-queries")
        .is_some_and(|v| v == "off" || v == "false")
    {
        let owner = super::convert::owner("mod-dnstap", block);
        let why = "responses are logged without their query";
        im.tell_key(block, &owner, "responses-with-queries", Kind::Same, why);
    }
    t.get("sink").is_some().then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses() {
        assert_eq!(
            listen_address("0.0.0.0@53", 53).as_deref(),
            Some("0.0.0.0:53")
        );
        assert_eq!(
            listen_address("::1@5300", 53).as_deref(),
            Some("[::1]:5300")
        );
        assert_eq!(listen_address("::", 853).as_deref(), Some("[::]:853"));
        assert_eq!(listen_address("/run/knot.sock", 53), None);
    }
}
