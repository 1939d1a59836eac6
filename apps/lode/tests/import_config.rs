//! `lode import-config`: every knot.conf of `tests/import_config/` (those
//! the test suite writes for knotd, and richer hand-written ones) converts
//! into a lode.toml that `lode check --config` accepts, with the values
//! carried over and what Lode has not named by line; and a zone served by
//! knotd from a fixture is answered alike by lode from the conversion.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{knot_available, pick_port_in, udp_exchange, Message, Query, TempDir};

/// The folder of the fixtures.
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import_config")
}

/// Every fixture's name.
fn fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures())
        .expect("the fixtures folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".conf"))
        .collect();
    names.sort();
    names
}

/// A fixture converted in a scratch folder.
struct Converted {
    dir: TempDir,
    /// The knot.conf as written (placeholders filled).
    knot: String,
    /// The lode.toml written.
    toml: String,
    stderr: String,
    code: i32,
}

impl Converted {
    fn out(&self) -> PathBuf {
        self.dir.0.join("lode.toml")
    }

    /// The line of the knot.conf holding `needle` (1-based).
    fn line_of(&self, needle: &str) -> usize {
        self.knot
            .lines()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle:?} is not in the fixture"))
            + 1
    }

    /// The `[[…]]` table of `header` whose `key` is `value`, as text.
    fn table(&self, header: &str, key: &str, value: &str) -> String {
        let want = format!("{key} = \"{value}\"");
        self.toml
            .split("\n\n")
            .find(|t| t.lines().any(|l| l == header) && t.lines().any(|l| l == want))
            .unwrap_or_else(|| panic!("no {header} with {want} in\n{}", self.toml))
            .to_owned()
    }
}

/// Writes the fixture `name` (placeholders filled) into a scratch folder
/// and converts it there.
fn convert(name: &str, port: u16) -> Converted {
    let text = std::fs::read_to_string(fixtures().join(name)).expect("read the fixture");
    convert_text(name, &text, port)
}

fn convert_text(tag: &str, text: &str, port: u16) -> Converted {
    let dir = TempDir::new(&format!("import-{}", tag.trim_end_matches(".conf")));
    let knot = text
        .replace("@DIR@", &dir.0.display().to_string())
        .replace("@PORT@", &port.to_string())
        .replace("@PEER@", &(port + 1).to_string());
    std::fs::write(dir.0.join("knot.conf"), &knot).expect("write knot.conf");
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["import-config", "knot.conf", "--out", "lode.toml"])
        .current_dir(&dir.0)
        .output()
        .expect("run lode import-config");
    let toml = std::fs::read_to_string(dir.0.join("lode.toml")).unwrap_or_default();
    Converted {
        dir,
        knot,
        toml,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

/// A small valid zone file for `origin`.
fn zone_text(origin: &str) -> String {
    format!(
        "$ORIGIN {origin}\n$TTL 3600\n@ SOA ns1 hostmaster 2024010101 3600 600 86400 300\n@ NS ns1\n\
         ns1 A 192.0.2.1\nwww A 192.0.2.80\n2.1.2.1 NAPTR 100 10 \"u\" \"E2U+sip\" \"!^.*$!sip:info@example.net!\" .\n"
    )
}

/// Writes a zone file for every `[[zone]]` of `toml` that names one.
fn write_zone_files(toml: &str) {
    let mut name = None;
    for line in toml.lines() {
        if line == "[[zone]]" {
            name = None;
        } else if let Some(n) = line.strip_prefix("name = \"") {
            name = Some(n.trim_end_matches('"').to_owned());
        } else if let (Some(f), Some(n)) = (line.strip_prefix("file = \""), &name) {
            let path = Path::new(f.trim_end_matches('"'));
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("the zone file's folder");
            }
            std::fs::write(path, zone_text(n)).expect("write a zone file");
        }
    }
}

/// `lode check --config` of the conversion: (success, output).
fn check(c: &Converted) -> (bool, String) {
    write_zone_files(&c.toml);
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["check", "--config"])
        .arg(c.out())
        .output()
        .expect("run lode check");
    let text = [out.stdout, out.stderr].concat();
    (
        out.status.success(),
        String::from_utf8_lossy(&text).into_owned(),
    )
}

#[test]
fn every_fixture_converts_into_a_configuration_lode_check_accepts() {
    let names = fixture_names();
    assert!(names.len() >= 12, "{names:?}");
    for name in names {
        let c = convert(&name, 53000);
        assert!(
            c.code == 0 || c.code == 1,
            "{name}: exit {}:\n{}",
            c.code,
            c.stderr
        );
        assert!(
            c.toml.starts_with("# Converted from knot.conf"),
            "{name}:\n{}",
            c.toml
        );
        let (ok, out) = check(&c);
        assert!(
            ok,
            "{name}: lode check --config refused:\n{out}\n{}",
            c.toml
        );
    }
}

#[test]
fn the_values_are_carried_over() {
    let c = convert("harness.conf", 53000);
    let d = c.dir.0.display().to_string();
    for want in [
        "listen = [\"127.0.0.1:53000\"]".to_owned(),
        "identity = \"diff-identity\"".to_owned(),
        format!("control = \"{d}/knot.sock\""),
        format!("journal-dir = \"{d}/journal\""),
        "workers = 1".to_owned(),
        "log-level = \"info\"".to_owned(),
    ] {
        assert!(c.toml.contains(&want), "{want} not in\n{}", c.toml);
    }
    let zone = c.table("[[zone]]", "name", "1.e164.arpa.");
    assert!(
        zone.contains(&format!("file = \"{d}/1.e164.arpa.zone\"")),
        "{zone}"
    );
    assert!(zone.contains("zonefile-sync = -1"), "{zone}");

    let c = convert("secondary.conf", 53000);
    let key = c.table("[[key]]", "id", "xfr-key");
    assert!(
        key.contains("secret = \"bG9kZS14ZnItdGVzdC1rZXktMzItYnl0ZXMtbG9uZyE=\""),
        "{key}"
    );
    let remote = c.table("[[remote]]", "id", "primary");
    assert!(
        remote.contains("address = [\"127.0.0.1@53001\"]"),
        "{remote}"
    );
    let zone = c.table("[[zone]]", "name", "example.com.");
    assert!(zone.contains("master = [\"primary\"]"), "{zone}");
    assert!(
        zone.contains("acl = [\"notify-in\", \"xfr-out\"]"),
        "{zone}"
    );
    let acl = c.table("[[acl]]", "id", "xfr-out");
    assert!(
        acl.contains("action = [\"transfer\"]") && acl.contains("key = [\"xfr-key\"]"),
        "{acl}"
    );

    let c = convert("primary.conf", 53000);
    let zone = c.table("[[zone]]", "name", "example.com.");
    assert!(
        zone.contains("notify = [\"secondary0\", \"secondary1\"]"),
        "{zone}"
    );
    assert!(zone.contains("serial-policy = \"increment\""), "{zone}");
    let acl = c.table("[[acl]]", "id", "xfr-update");
    assert!(acl.contains("action = [\"transfer\", \"update\"]"), "{acl}");

    let c = convert("cookies.conf", 53000);
    assert!(
        c.toml
            .contains("[cookies]\nsecret = \"000102030405060708090a0b0c0d0e0f\""),
        "{}",
        c.toml
    );

    let c = convert("catalog-producer.conf", 53000);
    let cat = c.table("[[zone]]", "name", "catalog.example.");
    assert!(
        cat.contains("catalog-role = \"generate\"") && !cat.contains("file ="),
        "{cat}"
    );
    let member = c.table("[[zone]]", "name", "a.example.");
    assert!(
        member.contains("catalog-zone = \"catalog.example.\""),
        "{member}"
    );
}

#[test]
fn a_rich_configuration_keeps_its_meaning() {
    let c = convert("rich.conf", 53000);
    let d = c.dir.0.display().to_string();
    // Templates written into the zones, their storage and formatters expanded.
    let com = c.table("[[zone]]", "name", "example.com.");
    assert!(
        com.contains(&format!("file = \"{d}/zones/example.com.zone\"")),
        "{com}"
    );
    assert!(com.contains("notify = [\"ns2\", \"ns3\"]"), "{com}");
    assert!(
        com.contains("zonefile-sync = 3600") && com.contains("serial-policy = \"unixtime\""),
        "{com}"
    );
    // Knot's automatic ACL: transfers to the NOTIFY targets (not ns3: its own is off), first.
    assert!(
        com.contains(
            "acl = [\"automatic-transfer-ns2\", \"transfer-out\", \"no-updates-from-lab\"]"
        ),
        "{com}"
    );
    let net = c.table("[[zone]]", "name", "example.net.");
    assert!(
        net.contains(&format!("file = \"{d}/zones/signed/example/example.net\"")),
        "{net}"
    );
    assert!(
        net.contains("dnssec-signing = true") && net.contains("dnssec-policy = \"nsec3\""),
        "{net}"
    );
    // The update-type rule gave up its update action: with nothing left it is gone.
    assert!(
        net.contains("acl = [\"automatic-transfer-ns2\", \"transfer-out\"]"),
        "{net}"
    );
    let org = c.table("[[zone]]", "name", "example.org.");
    assert!(
        org.contains("dnssec-policy = \"default-configured\""),
        "{org}"
    );
    let sec = c.table("[[zone]]", "name", "secondary.example.");
    assert!(
        sec.contains(&format!("file = \"{d}/zones/s/secondary.example.zone\"")),
        "{sec}"
    );
    assert!(sec.contains("refresh-max-interval = 86400"), "{sec}");
    // ACLs: a range as prefixes, a remote group split by key, a deny without actions.
    let t = c.table("[[acl]]", "id", "transfer-out");
    assert!(
        t.contains("address = [\"198.51.100.0/24\", \"10.0.0.1/32\", \"10.0.0.2/31\", \"10.0.0.4/31\", \"10.0.0.6/32\"]"),
        "{t}"
    );
    let f1 = c.table("[[acl]]", "id", "from-secondaries-1");
    assert!(
        f1.contains("address = [\"198.51.100.2\"]") && f1.contains("key = [\"transfer.key.\"]"),
        "{f1}"
    );
    let f2 = c.table("[[acl]]", "id", "from-secondaries-2");
    assert!(
        f2.contains("address = [\"198.51.100.3\"]") && f2.contains("key = [\"update.key.\"]"),
        "{f2}"
    );
    let deny = c.table("[[acl]]", "id", "no-updates-from-lab");
    assert!(
        deny.contains("action = [\"notify\", \"transfer\", \"update\"]")
            && deny.contains("deny = true"),
        "{deny}"
    );
    // Remotes: several addresses, via without its port.
    let hp = c.table("[[remote]]", "id", "hidden-primary");
    assert!(
        hp.contains("address = [\"192.0.2.1@53\", \"2001:db8::1@53\"]"),
        "{hp}"
    );
    assert!(
        hp.contains("via = [\"192.0.2.10\", \"2001:db8::10\"]"),
        "{hp}"
    );
    // Policies: Knot's NSEC3 salt default, the submission, the renamed default.
    let p = c.table("[[policy]]", "id", "nsec3");
    for want in [
        "nsec3 = true",
        "nsec3-salt-length = 8",
        "ksk-lifetime = 31536000",
        "ksk-submission = \"parent-ds\"",
    ] {
        assert!(p.contains(want), "{want} not in {p}");
    }
    let s = c.table("[[submission]]", "id", "parent-ds");
    assert!(
        s.contains("parent = [\"parent\"]")
            && s.contains("check-interval = 600")
            && s.contains("timeout = 172800"),
        "{s}"
    );
    // The catalog's members' template; the global RRL module.
    let m = c.table("[[template]]", "id", "members");
    assert!(m.contains("master = [\"hidden-primary\"]"), "{m}");
    assert!(
        m.contains("acl = [\"from-secondaries-1\", \"from-secondaries-2\"]"),
        "{m}"
    );
    assert!(
        c.toml
            .contains("[rrl]\nrate-limit = 200\nslip = 2\nexempt = [\"192.0.2.0/24\"]"),
        "{}",
        c.toml
    );
    assert!(c.toml.contains("max-udp-payload = 1232"), "{}", c.toml);
}

#[test]
fn what_lode_has_not_is_named_with_its_line_on_stderr_and_in_the_file() {
    let c = convert("rich.conf", 53000);
    assert_eq!(c.code, 1, "{}", c.stderr);
    let expect = [
        (
            "tcp-fastopen",
            "server.tcp-fastopen: on: Lode does not use TCP Fast Open",
        ),
        ("update-type", "acl[dyn].update-type"),
        ("nsec3-salt-lifetime", "policy[default].nsec3-salt-lifetime"),
        ("id: reverse", "mod-synthrecord[reverse]"),
        ("journal-db-max-size", "database.journal-db-max-size"),
        (
            "module: mod-synthrecord",
            "zone[2.0.192.in-addr.arpa].module",
        ),
        ("2001:db8::10@5300", "remote[hidden-primary].via"),
    ];
    for (needle, item) in expect {
        let line = format!("not imported: knot.conf:{}: {item}", c.line_of(needle));
        assert!(
            c.stderr.lines().any(|l| l.starts_with(&line)),
            "{line} not on stderr:\n{}",
            c.stderr
        );
        assert!(
            c.toml.lines().any(|l| l.starts_with(&format!("# {line}"))),
            "{line} not in the file:\n{}",
            c.toml
        );
    }
    // Notes (keys of signed zones) go to stderr too, but do not fail.
    assert!(
        c.stderr.contains(&format!(
            "note: knot.conf:{}: zone[Example.NET].dnssec-signing",
            c.line_of("dnssec-signing: on")
        )),
        "{}",
        c.stderr
    );

    let c = convert("tsig-query.conf", 53000);
    let line = format!(
        "not imported: knot.conf:{}: acl[signed].action: query",
        c.line_of("action: query")
    );
    assert!(c.stderr.contains(&line), "{}", c.stderr);
}

#[test]
fn a_configuration_lode_has_everything_of_exits_0_and_a_broken_one_2() {
    let c = convert_text(
        "clean",
        "server:\n    listen: 127.0.0.1@@PORT@\n    identity: ns1\ndatabase:\n    storage: \"@DIR@\"\n\
         zone:\n  - domain: example.com\n    file: example.com.zone\n",
        53000,
    );
    assert_eq!(c.code, 0, "{}", c.stderr);
    assert!(
        c.stderr.lines().all(|l| l.starts_with("note:")),
        "{}",
        c.stderr
    );
    let zone = c.table("[[zone]]", "name", "example.com.");
    assert!(
        zone.contains("file = \"/var/lib/knot/example.com.zone\""),
        "{zone}"
    );

    let c = convert_text(
        "broken",
        "server:\n    listen: 127.0.0.1@53\nzone:\n  - domain: a\n\tfile: b\n",
        53000,
    );
    assert_eq!(c.code, 2, "{}", c.stderr);
    assert!(c.stderr.contains("knot.conf:5: "), "{}", c.stderr);
    assert!(!c.out().exists());
}

#[test]
fn xdp_listen_is_imported_by_interface() {
    let c = convert_text(
        "xdp",
        "server:\n    listen: 127.0.0.1@@PORT@\nxdp:\n    listen: [ eth0@5353, eth1, 192.0.2.1@53 ]\n    route-check: on\n    busypoll-budget: 64\n    busypoll-timeout: 50\n",
        53000,
    );
    assert_eq!(c.code, 1, "{}", c.stderr);
    assert!(
        c.toml
            .lines()
            .any(|l| l == r#"listen-xdp = ["eth0@5353", "eth1@53"]"#),
        "{}",
        c.toml
    );
    assert!(
        c.toml.lines().any(|l| l == "xdp-route-check = true"),
        "{}",
        c.toml
    );
    let line = format!(
        "not imported: knot.conf:{}: xdp.listen: 192.0.2.1@53",
        c.line_of("eth0@5353")
    );
    assert!(
        c.stderr.contains(&line),
        "{line} not on stderr:\n{}",
        c.stderr
    );
    for line in ["xdp-busypoll-budget = 64", "xdp-busypoll-timeout = 50"] {
        assert!(c.toml.lines().any(|l| l == line), "{line}:\n{}", c.toml);
    }
    assert!(!c.stderr.contains("route-check"), "{}", c.stderr);
    assert!(!c.stderr.contains("busypoll"), "{}", c.stderr);
}

/// The answer to one query: rcode, AA and the sections, sorted.
fn answer(addr: SocketAddr, name: &str, qtype: u16, qclass: u16) -> String {
    try_answer(addr, name, qtype, qclass)
        .unwrap_or_else(|| panic!("no answer from {addr} to {name} {qtype}"))
}

/// [`answer`], None when nothing answers.
fn try_answer(addr: SocketAddr, name: &str, qtype: u16, qclass: u16) -> Option<String> {
    let q = Query::new(name, qtype, qclass);
    let r = udp_exchange(addr, &q.to_wire(), Duration::from_secs(1))?;
    let m = Message::parse(&r);
    let mut answer: Vec<String> = m.answer.iter().map(|r| r.line()).collect();
    let mut authority: Vec<String> = m.authority.iter().map(|r| r.line()).collect();
    answer.sort();
    authority.sort();
    Some(format!(
        "rcode {} aa {}\n{}\n--\n{}",
        m.rcode(),
        m.aa,
        answer.join("\n"),
        authority.join("\n")
    ))
}

/// The queries both servers answer.
const QUERIES: [(&str, u16, u16); 7] = [
    ("example.com.", 6, 1),
    ("example.com.", 2, 1),
    ("www.example.com.", 1, 1),
    ("nowhere.example.com.", 1, 1),
    ("2.1.2.1.1.e164.arpa.", 35, 1),
    ("id.server.", 16, 3),
    ("version.bind.", 16, 3),
];

#[test]
fn lode_on_the_converted_configuration_answers_as_knotd_did() {
    if !knot_available() {
        return;
    }
    let port = pick_port_in(17400, 17409);
    let c = convert("harness.conf", port);
    write_zone_files(&c.toml);
    let conf = c.dir.0.join("knot.conf");
    let knot = common::spawn_knotd(&conf, port);
    let addr = knot.addr;
    let deadline = Instant::now() + Duration::from_secs(10);
    let served = || {
        try_answer(addr, "1.e164.arpa.", 6, 1)
            .is_some_and(|a| a.starts_with("rcode 0 aa true\n1.e164.arpa."))
    };
    while !served() {
        assert!(
            Instant::now() < deadline,
            "knotd did not serve:\n{}",
            knot.log_tail(20)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let from_knot: Vec<String> = QUERIES
        .iter()
        .map(|(n, t, c)| answer(addr, n, *t, *c))
        .collect();
    drop(knot);
    // The same port: nothing of the conversion is changed.
    let lode = common::start_lode_config(
        &c.out(),
        port,
        &c.dir.0.join("lode.log"),
        &["example.com.", "1.e164.arpa."],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    for (k, (n, t, cl)) in from_knot.iter().zip(QUERIES) {
        let l = answer(lode.addr, n, t, cl);
        assert_eq!(&l, k, "{n} type {t} class {cl}: lode and knotd differ");
    }
    assert!(from_knot[0].contains("2024010101"), "{}", from_knot[0]);
}
