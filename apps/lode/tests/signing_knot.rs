//! Lode and Knot DNS sign the same zone with the same keys:
//! the same records covered, the same NSEC or NSEC3 chain, the same DNSKEY
//! RRset, and DO=1 answers (queries for the RRSIG type included) and the
//! whole zone by AXFR identical in everything but signature bytes and
//! validity times: each RRSIG with its original TTL, as Knot writes it.
//! Then ten UPDATEs to both (names added and removed, ENTs, a delegation
//! with glue, a wildcard, a TTL change), compared again after each.
//!
//! Two keys made by BIND's `dnssec-keygen` are imported into both servers
//! (`lode dnssec import-bind`, Knot's `keymgr import-bind`); Knot signs with
//! a manual policy (keys as they are), Lode with the same algorithm. The
//! NSEC3 case uses a salt-less chain (a random salt could not be the same).
//! `LODE_REQUIRE_KNOT=1` and `LODE_REQUIRE_DNSSEC_TOOLS=1` turn missing
//! tools into failures.

mod common;

use common::*;
use lode_peers::{Acl, Action, Content, Kind, Signing, Zone};
use std::path::Path;
use std::process::{Command, Stdio};

/// The signing tests' zone, and a name with an MX (its target in the RDATA).
const ZONE_FILE: &str = include_str!("../../../tests/dnssec/example.zone");

fn zone_text() -> String {
    format!("{ZONE_FILE}mail MX 10 www\n")
}

/// Queries answered by both (name, type).
const QUERIES: &[(&str, &str)] = &[
    ("example.", "SOA"),
    ("example.", "DNSKEY"),
    ("example.", "NS"),
    ("www.example.", "A"),
    ("www.example.", "TXT"),
    ("nothing.example.", "A"),
    ("anything.example.", "TXT"),
    ("x.a.b.c.example.", "A"),
    ("b.c.example.", "A"),
    ("sub.example.", "NS"),
    ("host.sub.example.", "A"),
    ("sub.example.", "DS"),
    ("unsigned.example.", "DS"),
    ("in.unsigned.example.", "A"),
    ("x.d.example.", "A"),
    ("mail.example.", "MX"),
    ("zzz.example.", "AAAA"),
    ("www.example.", "RRSIG"),
    ("example.", "RRSIG"),
    ("nothing.example.", "RRSIG"),
    ("example.", "NSEC3PARAM"),
    ("example.", "ANY"),
    ("www.example.", "ANY"),
    ("example.", "CDS"),
    ("example.", "CDNSKEY"),
    ("www.example.", "NSEC"),
    ("zzz.example.", "NSEC"),
    ("c.example.", "A"),
    ("b.c.example.", "TXT"),
    ("anything.example.", "A"),
    ("x.anything.example.", "TXT"),
    ("*.example.", "TXT"),
    ("host.sub.example.", "DS"),
    ("sub.example.", "A"),
    ("sub.example.", "RRSIG"),
    ("unsigned.example.", "NS"),
    ("d.example.", "DNAME"),
    ("d.example.", "A"),
    ("EXAMPLE.", "SOA"),
    ("ns.example.", "RRSIG"),
    ("ns.example.", "NSEC3"),
];

fn have(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn tools_present() -> bool {
    let dnssec = have("dnssec-keygen");
    let knot = knot_available() && have("keymgr") && have("kdig");
    if !dnssec {
        assert!(
            std::env::var_os("LODE_REQUIRE_DNSSEC_TOOLS").is_none(),
            "dnssec-keygen (bind9-utils) is required"
        );
    }
    if !knot {
        assert!(
            std::env::var_os("LODE_REQUIRE_KNOT").is_none(),
            "knotd and keymgr are required"
        );
    }
    if !(dnssec && knot) {
        eprintln!("SKIP: needs knot, knot-dnsutils and bind9-utils");
    }
    dnssec && knot
}

/// Makes a KSK and a ZSK with dnssec-keygen in `dir`; their file stems.
fn bind_keys(dir: &Path) -> Vec<String> {
    ["-fKSK", ""]
        .iter()
        .map(|flag| {
            let mut cmd = Command::new("dnssec-keygen");
            cmd.current_dir(dir).args(["-q", "-a", "ECDSAP256SHA256"]);
            if !flag.is_empty() {
                cmd.arg(flag);
            }
            let out = cmd.arg("example.").output().expect("dnssec-keygen");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        })
        .collect()
}

/// The denial of existence both sign with.
#[derive(Clone, Copy, PartialEq)]
enum Chain {
    Nsec,
    Nsec3,
    Nsec3OptOut,
}

fn start_knot_signer(dir: &Path, port: u16, keys: &[String], chain: Chain) -> Server {
    let zone = dir.join("example.zone");
    std::fs::write(&zone, zone_text()).unwrap();
    let signing = Signing {
        nsec3: chain != Chain::Nsec,
        opt_out: chain == Chain::Nsec3OptOut,
        manual: true,
        ..Signing::default()
    };
    let mut spec = server_spec(Kind::Knot, port)
        .acl(Acl::new("xfr", &[Action::Transfer, Action::Update]).from("127.0.0.0/8"))
        .zone(
            Zone::primary("example.", Content::File(zone))
                .acls(&["xfr"])
                .signed(signing)
                .extra("    zonefile-load: whole\n"),
        );
    spec.server_extra = "    udp-max-payload: 1232\n".into();
    spec.dir = Some(dir.into());
    // The keys are in its KASP database before it starts.
    let conf = spec.write_config().unwrap_or_else(|e| panic!("{e}"));
    for k in keys {
        let out = Command::new(knot_tool("keymgr"))
            .arg("-c")
            .arg(&conf)
            .args(["example.", "import-bind"])
            .arg(dir.join("bind").join(format!("{k}.private")))
            .output()
            .expect("keymgr");
        assert!(
            out.status.success(),
            "keymgr import-bind: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let server = Server::start(spec).unwrap_or_else(|e| panic!("{e}"));
    wait_signed(&server, port);
    server
}

/// Waits until the server answers the zone's DNSKEY (signed).
fn wait_signed(server: &Server, port: u16) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        if dig(port, "example.", "DNSKEY").contains("DNSKEY\t257") {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!(
        "{} did not serve a signed zone:\n{}",
        server.label,
        server.log_tail(30)
    );
}

fn dig(port: u16, name: &str, rtype: &str) -> String {
    let out = Command::new("kdig")
        .args(["@127.0.0.1", "-p", &port.to_string(), name, rtype])
        .args(["+dnssec", "+norecurse", "+noquestion", "+nostats"])
        .args(["+timeout=2", "+retry=1"])
        .output()
        .expect("kdig");
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// A record line with what differs between two signers of the same keys
/// taken out: the RRSIG's validity times and signature bytes.
fn normalized(line: &str) -> String {
    let w: Vec<&str> = line.split_whitespace().collect();
    if w.get(3) == Some(&"RRSIG") && w.len() >= 12 {
        // owner ttl class RRSIG covered alg labels ttl exp inc tag signer sig
        return format!(
            "{} {} {} RRSIG {} {} {} {} {} {}",
            w[0], w[1], w[2], w[4], w[5], w[6], w[7], w[10], w[11]
        );
    }
    w.join(" ")
}

/// An answer, normalized: its status, flags and counts, EDNS line, section
/// headers and records in order (not the message ID).
fn answer(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            if let Some(h) = l.strip_prefix(";; ->>HEADER<<- ") {
                return Some(h.split("; id:").next().unwrap_or(h).to_string());
            }
            let kept = [";; Flags:", ";; Version:", ";; "]
                .iter()
                .any(|p| l.starts_with(p) && (p.len() > 3 || l.ends_with("SECTION:")));
            if kept {
                return Some(l.to_string());
            }
            (!l.starts_with(';') && !l.trim().is_empty()).then(|| normalized(l))
        })
        .collect()
}

/// The records of a transfer, normalized, in order.
fn records(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .map(normalized)
        .collect()
}

fn compare(chain: Chain) {
    if !tools_present() {
        return;
    }
    let tag = match chain {
        Chain::Nsec => "knot-nsec",
        Chain::Nsec3 => "knot-nsec3",
        Chain::Nsec3OptOut => "knot-optout",
    };
    let dir = TempDir::new(&format!("signing-{tag}"));
    let bind = dir.0.join("bind");
    std::fs::create_dir_all(&bind).unwrap();
    let keys = bind_keys(&bind);
    let ds = ds_of(&bind, &keys[0]);
    // Lode: the keys imported, a policy that matches.
    let lode_dir = dir.0.join("lode");
    std::fs::create_dir_all(&lode_dir).unwrap();
    for k in &keys {
        let out = Command::new(env!("CARGO_BIN_EXE_lode"))
            .args(["dnssec", "import-bind", "example."])
            .arg(bind.join(format!("{k}.private")))
            .arg("--kasp-db")
            .arg(lode_dir.join("keys"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::fs::write(lode_dir.join("example.zone"), zone_text()).unwrap();
    let policy = match chain {
        Chain::Nsec => "",
        Chain::Nsec3 => "nsec3 = true\n",
        Chain::Nsec3OptOut => "nsec3 = true\nnsec3-opt-out = true\n",
    };
    std::fs::write(
        lode_dir.join("lode.toml"),
        format!(
            "journal-dir = \"journal\"\nkasp-db = \"keys\"\ncontrol = \"\"\nzonefile-sync = -1\n\
             [[acl]]\nid = \"xfr\"\naction = [\"transfer\", \"update\"]\n\
             [[policy]]\nid = \"same\"\n{policy}\
             [[zone]]\nname = \"example.\"\nfile = \"example.zone\"\nacl = [\"xfr\"]\n\
             dnssec-signing = true\ndnssec-policy = \"same\"\n"
        ),
    )
    .unwrap();
    let lode_port = pick_port_in(16870, 16884);
    let _lode = start_lode_config(
        &lode_dir.join("lode.toml"),
        lode_port,
        &lode_dir.join("lode.log"),
        &["example."],
    )
    .unwrap_or_else(|e| panic!("lode: {e}"));
    let knot_dir = dir.0.join("knot");
    std::fs::create_dir_all(&knot_dir).unwrap();
    std::fs::rename(&bind, knot_dir.join("bind")).unwrap();
    let knot_port = pick_port_in(16885, 16899);
    let _knot = start_knot_signer(&knot_dir, knot_port, &keys, chain);

    let found = differences(lode_port, knot_port, QUERIES);
    assert!(
        found.is_empty(),
        "{} of {} answers differ:\n{}",
        found.len(),
        QUERIES.len() + 1,
        found.join("\n\n")
    );

    // The same updates to both, each signed as it is applied: the same
    // zone after each (names added and removed, ENTs, a delegation with
    // glue, a wildcard, a TTL change).
    for (i, lines) in UPDATES.iter().enumerate() {
        for (server, port) in [("lode", lode_port), ("knot", knot_port)] {
            update(port, lines).unwrap_or_else(|e| panic!("update {i} to {server}: {e}"));
        }
        let queries: Vec<(&str, &str)> = QUERIES.iter().chain(AFTER_UPDATES).copied().collect();
        let found = differences(lode_port, knot_port, &queries);
        assert!(
            found.is_empty(),
            "after update {i} ({lines}): {} of {} answers differ:\n{}",
            found.len(),
            queries.len() + 1,
            found.join("\n\n")
        );
    }
    // Then random ones (LODE_SIGNING_SEED to repeat a run).
    let seed = std::env::var("LODE_SIGNING_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    // A validating resolver asks Lode the random updates' names.
    let unbound = common::dnssec::start_unbound(
        &dir.0,
        (16940, 16959),
        &ds,
        &[("example.", lode_port)],
        |port| common::dnssec::ask(port, "ns.example.", "A").contains("status"),
    );
    let lode = Checked {
        port: lode_port,
        dir: &dir.0,
        unbound: unbound.port,
    };
    random_updates(&lode, knot_port, 60, 10, seed, chain != Chain::Nsec3OptOut);
}

/// Lode as the random updates check it: compared with Knot, and each
/// version verified whole and asked through a validating resolver.
struct Checked<'a> {
    port: u16,
    dir: &'a Path,
    unbound: u16,
}

impl Checked<'_> {
    /// The zone verified by three validators, and `queries` answered by
    /// unbound without SERVFAIL (a bogus answer); those Lode answers with
    /// a referral are left out (their servers do not exist).
    fn verify(&self, queries: &[(&str, &str)], when: &str) {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], self.port));
        common::dnssec::verify_axfr(self.dir, addr, "example.", None, when);
        for (name, rtype) in queries {
            let direct = dig(self.port, name, rtype);
            if !direct.lines().any(|l| l.starts_with(";; Flags: qr aa")) {
                continue;
            }
            let a = common::dnssec::ask(self.unbound, name, rtype);
            assert!(
                a.contains("status: NOERROR") || a.contains("status: NXDOMAIN"),
                "{when}: {name} {rtype} through unbound:\n{a}\nLode's answer:\n{direct}\nunbound's log:\n{}",
                std::fs::read_to_string(self.dir.join("unbound.log")).unwrap_or_default()
            );
        }
    }
}

/// The DS of the key `stem` in `dir` (`dnssec-dsfromkey`, SHA-256).
fn ds_of(dir: &Path, stem: &str) -> String {
    let out = Command::new("dnssec-dsfromkey")
        .args(["-2"])
        .arg(dir.join(format!("{stem}.key")))
        .output()
        .expect("dnssec-dsfromkey");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `count` random UPDATEs (seeded) to both servers, compared every
/// `every` (unless `compare` is false) and Lode's zone verified then:
/// names drawn from a few labels at depths 1 to 3 (so they meet: ENTs made
/// and removed, data under delegations, wildcards over names).
///
/// With opt-out the chains differ on purpose where an empty non-terminal
/// lies above nothing but insecure delegations: Lode keeps its NSEC3,
/// Knot leaves it out and then answers the names below it with a bare
/// NXDOMAIN (see `lode_dnssec::Nsec3::is_hashed`); there the resolver and
/// the validators judge Lode alone.
fn random_updates(
    lode: &Checked<'_>,
    knot: u16,
    count: usize,
    every: usize,
    seed: u64,
    compare: bool,
) {
    let mut x = seed | 1;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let name = |next: &mut dyn FnMut(u64) -> u64| {
        let depth = 1 + next(3);
        let labels: Vec<&str> = (0..depth)
            .map(|_| ["a", "b", "c", "d", "e"][next(5) as usize])
            .collect();
        format!("{}.r.example.", labels.join("."))
    };
    let mut names: Vec<String> = Vec::new();
    for i in 0..count {
        let n = name(&mut next);
        let addr = format!("192.0.2.{}", next(250) + 1);
        let lines = match next(8) {
            0 | 1 => format!("update add {n} 300 A {addr}"),
            2 => format!("update add {n} 300 TXT \"{i}\""),
            3 => format!("update delete {n}"),
            4 => format!("update delete {n} A"),
            5 => format!("update add {n} 300 NS ns.{n}\nupdate add ns.{n} 300 A {addr}"),
            6 => format!("update add *.{n} 300 TXT \"wild {i}\""),
            _ => format!("update delete {n} NS"),
        };
        names.push(n);
        for (server, port) in [("lode", lode.port), ("knot", knot)] {
            update(port, &lines).unwrap_or_else(|e| panic!("random update {i} to {server}: {e}"));
        }
        if (i + 1) % every == 0 || i + 1 == count {
            let queries: Vec<(String, &str)> = names
                .iter()
                .flat_map(|n| [(n.clone(), "A"), (format!("x.{n}"), "TXT")])
                .collect();
            let queries: Vec<(&str, &str)> =
                queries.iter().map(|(n, t)| (n.as_str(), *t)).collect();
            let found = if compare {
                differences(lode.port, knot, &queries)
            } else {
                Vec::new()
            };
            assert!(
                found.is_empty(),
                "after random update {i} (seed {seed}, {lines}): {} of {} answers differ:\n{}",
                found.len(),
                queries.len() + 1,
                found.join("\n\n")
            );
            lode.verify(&queries, &format!("after random update {i} (seed {seed})"));
            names.clear();
        }
    }
}

/// The updates sent to both signers, one UPDATE message each.
const UPDATES: &[&str] = &[
    "update add new.example. 300 A 192.0.2.7\nupdate add new.example. 300 TXT \"t\"",
    "update add deep.x.y.example. 300 A 192.0.2.8",
    "update delete www.example. AAAA",
    "update add sub2.example. 300 NS ns.sub2.example.\nupdate add ns.sub2.example. 300 A 192.0.2.9",
    "update add *.w.example. 300 TXT \"wild two\"",
    "update delete a.b.c.example.",
    "update add www.example. 600 A 192.0.2.81",
    "update delete ns.sub.example. A\nupdate add ns.sub.example. 300 A 192.0.2.54",
    "update delete new.example. TXT\nupdate add zz.example. 300 MX 5 new.example.",
    "update delete deep.x.y.example.\nupdate delete sub2.example. NS",
];

/// Queries asked too once the updates began.
const AFTER_UPDATES: &[(&str, &str)] = &[
    ("new.example.", "A"),
    ("new.example.", "TXT"),
    ("deep.x.y.example.", "A"),
    ("x.y.example.", "A"),
    ("y.example.", "TXT"),
    ("www.example.", "AAAA"),
    ("sub2.example.", "A"),
    ("ns.sub2.example.", "A"),
    ("q.w.example.", "TXT"),
    ("w.example.", "TXT"),
    ("a.b.c.example.", "TXT"),
    ("zz.example.", "MX"),
];

/// One UPDATE by `knsupdate` (no TSIG: both servers let 127.0.0.1 update).
fn update(port: u16, lines: &str) -> Result<(), String> {
    common::dnssec::knsupdate_as(port, None, "example.", lines)
}

/// The answers to `queries` and the AXFR of both servers, each pair that
/// differs in anything but signature bytes and times.
fn differences(lode: u16, knot: u16, queries: &[(&str, &str)]) -> Vec<String> {
    let mut differences = Vec::new();
    for (name, rtype) in queries {
        let (l, k) = (dig(lode, name, rtype), dig(knot, name, rtype));
        let (lr, kr) = (answer(&l), answer(&k));
        assert!(
            lr.iter().any(|l| l.starts_with("opcode: QUERY; status:")),
            "{name} {rtype}: no answer from lode:\n{l}"
        );
        if lr != kr {
            differences.push(format!(
                "{name} {rtype}\n--- lode\n{}\n--- knot\n{}",
                lr.join("\n"),
                kr.join("\n")
            ));
        }
    }
    // The whole zone by AXFR: the same records, each RRSIG with the TTL
    // Knot gives it (its original TTL), in any order.
    let (mut l, mut k) = (
        records(&dig(lode, "example.", "AXFR")),
        records(&dig(knot, "example.", "AXFR")),
    );
    l.sort();
    k.sort();
    if l != k {
        let only = |a: &[String], b: &[String]| {
            a.iter()
                .filter(|r| !b.contains(r))
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        };
        differences.push(format!(
            "AXFR\n--- only lode\n{}\n--- only knot\n{}",
            only(&l, &k),
            only(&k, &l)
        ));
    }
    differences
}

#[test]
fn lode_and_knot_sign_the_same_zone_with_the_same_keys_alike_nsec() {
    compare(Chain::Nsec);
}

#[test]
fn lode_and_knot_sign_the_same_zone_with_the_same_keys_alike_nsec3() {
    compare(Chain::Nsec3);
}

#[test]
fn lode_and_knot_sign_the_same_zone_with_the_same_keys_alike_nsec3_opt_out() {
    compare(Chain::Nsec3OptOut);
}
