//! Offline KSK, both ways with Knot 3.2's keymgr: the ZSK
//! side makes its ZSKs ahead and a key signing request (KSR); the KSK
//! side, which alone has the KSK, answers with a signed key response
//! (SKR); the ZSK side imports it and serves the zone, its DNSKEY RRset
//! signed only by the SKR's signatures, through a ZSK rollover made ahead.
//!
//! ```text
//!  Lode (ZSK side): dnssec pregenerate, generate-ksr ─KSR─▶ keymgr sign-ksr (Knot, KSK)
//!                   dnssec import-skr ◀─SKR─┘   serve ──▶ unbound (anchor: Knot's KSK)
//!  Knot (ZSK side): keymgr pregenerate, generate-ksr ─KSR─▶ lode dnssec sign-ksr (Lode, KSK)
//!                   keymgr import-skr ◀─SKR─┘   knotd ──▶ unbound (anchor: Lode's KSK)
//! ```
//!
//! Each time every version served is verified whole (ldns-verify-zone,
//! dnssec-verify, kzonecheck) and a validating unbound is asked every
//! second through the rollover: never SERVFAIL, never bogus. Lode's ZSK
//! side is killed (-9) in the middle of its rollover and goes on.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::dnssec::{ask, start_unbound, tools_present, validated_as, verify_axfr};
use common::*;

const ZONE: &str = "example.";
const TEXT: &str = "$ORIGIN example.\n$TTL 5\n@ SOA ns hm 1 60 10 600 5\n@ NS ns\n\
                    ns A 192.0.2.1\nwww A 192.0.2.2\n* TXT wild\nsub NS ns.sub\n\
                    ns.sub A 192.0.2.4\n";

/// ZSK rollovers every 20 s: a new ZSK published, active 7 s later
/// (propagation 2 s + DNSKEY TTL 5 s), the old one gone 7 s after that.
const ZSK_LIFETIME: u64 = 20;
/// The span the ZSKs are made for.
const SPAN: &str = "+90";

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

fn lode(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lode"));
    c.args(args);
    c
}

fn keymgr(conf: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(knot_tool("keymgr"));
    c.arg("-c").arg(conf).arg(ZONE).args(args);
    c
}

/// A Knot configuration for keymgr (and knotd when `port` is given) with
/// an offline-KSK policy (Knot needs manual with it).
fn knot_conf(dir: &Path, port: Option<u16>) -> std::path::PathBuf {
    let d = dir.display();
    let listen = port.map_or(String::new(), |p| format!("    listen: 127.0.0.1@{p}\n"));
    let text = format!(
        "server:\n    rundir: \"{d}\"\n{listen}\
         database:\n    storage: \"{d}\"\n\
         log:\n  - target: stderr\n    any: info\n\
         acl:\n  - id: xfr\n    address: 127.0.0.0/8\n    action: transfer\n\
         policy:\n  - id: off\n    offline-ksk: on\n    manual: on\n    dnskey-ttl: 5\n\
         \x20   zone-max-ttl: 5\n    zsk-lifetime: {ZSK_LIFETIME}\n    propagation-delay: 2\n\
         \x20   rrsig-lifetime: 7200\n    rrsig-refresh: 600\n\
         template:\n  - id: default\n    storage: \"{d}\"\n    zonefile-sync: -1\n    journal-content: changes\n\
         zone:\n  - domain: {ZONE}\n    file: \"{d}/zone\"\n    dnssec-signing: on\n    dnssec-policy: off\n    acl: xfr\n"
    );
    let path = dir.join("knot.conf");
    std::fs::write(&path, text).unwrap();
    std::fs::write(dir.join("zone"), TEXT).unwrap();
    path
}

/// The ZSKs' DNSKEY lines of a verified AXFR.
fn zsks(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_to_string(dir.join("axfr.txt"))
        .unwrap()
        .lines()
        .filter(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.get(3) == Some(&"DNSKEY") && w.get(4) == Some(&"256")
        })
        .map(|l| l.split_whitespace().skip(4).collect::<Vec<_>>().join(" "))
        .collect();
    out.sort();
    out
}

/// Asks unbound about existing and missing names every second for `secs`
/// seconds (each answer validated), verifying the zone whole every few
/// seconds; `between` runs once, in the middle. The ZSK sets seen.
fn watch(
    dir: &Path,
    addr: impl Fn() -> std::net::SocketAddr,
    unbound: u16,
    secs: u64,
    mut between: impl FnMut(),
) -> Vec<Vec<String>> {
    let start = Instant::now();
    let mut seen: Vec<Vec<String>> = Vec::new();
    let mut done_between = false;
    let mut i = 0u64;
    while start.elapsed() < Duration::from_secs(secs) {
        if !done_between && start.elapsed() > Duration::from_secs(secs / 2) {
            between();
            done_between = true;
        }
        let www = ask(unbound, "www.example.", "A");
        assert!(validated_as(&www, "NOERROR"), "{i} s: www:\n{www}");
        let missing = ask(unbound, &format!("no{i}.sub2.example."), "A");
        assert!(
            validated_as(&missing, "NOERROR") || validated_as(&missing, "NXDOMAIN"),
            "{i} s: a missing name (wildcard or NXDOMAIN):\n{missing}"
        );
        if i.is_multiple_of(4) {
            verify_axfr(dir, addr(), ZONE, None, &format!("{i} s"));
            let z = zsks(dir);
            if seen.last() != Some(&z) {
                seen.push(z);
            }
        }
        i += 1;
        std::thread::sleep(Duration::from_millis(1000));
    }
    seen
}

#[test]
fn lode_signs_with_a_ksk_kept_by_knot() {
    if !tools_present() || !knot_available() {
        return;
    }
    let root = TempDir::new("offline-ksk-lode");
    let zsk = root.0.join("zsk");
    let ksk = root.0.join("ksk");
    std::fs::create_dir_all(&zsk).unwrap();
    std::fs::create_dir_all(&ksk).unwrap();
    std::fs::write(zsk.join("zone"), TEXT).unwrap();
    let ctl = zsk.join("ctl.sock");
    std::fs::write(
        zsk.join("lode.toml"),
        format!(
            "journal-dir = \"journal\"\ncontrol = \"{}\"\n\
             [[acl]]\nid = \"xfr\"\naction = [\"transfer\"]\n\
             [[policy]]\nid = \"off\"\noffline-ksk = true\ndnskey-ttl = 5\nzone-max-ttl = 5\n\
             zsk-lifetime = {ZSK_LIFETIME}\npropagation-delay = 2\nrrsig-lifetime = 7200\nrrsig-refresh = 600\n\
             [[zone]]\nname = \"{ZONE}\"\nfile = \"zone\"\nacl = [\"xfr\"]\ndnssec-signing = true\ndnssec-policy = \"off\"\n",
            ctl.display()
        ),
    )
    .unwrap();
    let conf = zsk.join("lode.toml");
    let c = conf.to_str().unwrap();
    // The ZSK side: ZSKs made ahead, a request.
    let made = run(
        &mut lode(&["dnssec", "pregenerate", ZONE, SPAN, "-c", c]),
        "pregenerate",
    );
    assert!(made.contains("ZSKs with timers"), "{made}");
    let ksr = run(
        &mut lode(&["dnssec", "generate-ksr", ZONE, SPAN, "-c", c]),
        "generate-ksr",
    );
    assert!(ksr.contains(";; KeySigningRequest 1.0 "), "{ksr}");
    std::fs::write(root.0.join("req.ksr"), &ksr).unwrap();
    // The KSK side (Knot): its KSK, active from before the request.
    let kconf = knot_conf(&ksk, None);
    run(
        &mut keymgr(
            &kconf,
            &[
                "generate",
                "algorithm=13",
                "ksk=yes",
                "zsk=no",
                "publish=-1d",
                "ready=-1d",
                "active=-1d",
            ],
        ),
        "keymgr generate",
    );
    let skr = run(
        &mut keymgr(
            &kconf,
            &["sign-ksr", root.0.join("req.ksr").to_str().unwrap()],
        ),
        "keymgr sign-ksr",
    );
    let skr_path = root.0.join("resp.skr");
    std::fs::write(&skr_path, &skr).unwrap();
    let skr_arg = skr_path.to_str().unwrap();
    run(
        &mut lode(&["dnssec", "validate-skr", ZONE, skr_arg, "-c", c]),
        "validate-skr",
    );
    // A response to another request is refused (the ZSKs are not its).
    let other = root.0.join("other");
    run(
        lode(&["dnssec", "generate", ZONE, "--zsk", "--kasp-db"]).arg(&other),
        "another ZSK",
    );
    let refused = lode(&["dnssec", "import-skr", ZONE, skr_arg, "--kasp-db"])
        .arg(&other)
        .output()
        .unwrap();
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && why.contains("lacks ZSK"),
        "an SKR for other ZSKs taken: {why}"
    );
    let imported = run(
        &mut lode(&["dnssec", "import-skr", ZONE, skr_arg, "-c", c]),
        "import-skr",
    );
    assert!(imported.contains("periods imported"), "{imported}");
    // The KSK's DS, for the resolver.
    let ds = run(&mut keymgr(&kconf, &["ds"]), "keymgr ds");
    let ds = ds
        .lines()
        .find(|l| l.split_whitespace().nth(4) == Some("2"))
        .expect("a SHA-256 DS")
        .to_string();
    let port = pick_port_in(17300, 17309);
    let mut server = start_lode_config(&conf, port, &zsk.join("lode.log"), &[ZONE])
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = server.addr;
    verify_axfr(&zsk, addr, ZONE, None, "first signing");
    // The DNSKEY RRset carries the KSK of the SKR and only its signature.
    let axfr = std::fs::read_to_string(zsk.join("axfr.txt")).unwrap();
    assert!(axfr.lines().any(|l| l.contains("DNSKEY\t257")), "{axfr}");
    // The key folder read again by the running server (as knotc zone-keys-load).
    let loaded = run(
        &mut lode(&["zone-keys-load", ZONE, "--control", ctl.to_str().unwrap()]),
        "zone-keys-load",
    );
    assert!(loaded.contains("zone example."), "{loaded}");
    let unbound_dir = root.0.join("unbound");
    std::fs::create_dir_all(&unbound_dir).unwrap();
    let unbound = start_unbound(&unbound_dir, (17310, 17319), &ds, &[(ZONE, port)], |p| {
        validated_as(&ask(p, "www.example.", "A"), "NOERROR")
    });
    let log = zsk.join("lode.log");
    let seen = watch(
        &zsk,
        || addr,
        unbound.port,
        40,
        || {
            // kill -9 in the middle of the rollover; the server goes on.
            server.kill9();
            server =
                start_lode_config(&conf, port, &log, &[ZONE]).unwrap_or_else(|e| panic!("{e}"));
        },
    );
    assert!(
        seen.len() >= 2,
        "the ZSK rolled (made ahead) while served: {seen:?}"
    );
    assert!(
        seen.iter().any(|z| z.len() == 2),
        "the new ZSK published beside the old one: {seen:?}"
    );
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("new ZSK under an offline KSK"),
        "signed whole by the new ZSK:\n{log}"
    );
    drop(server);
}

#[test]
fn knot_signs_with_a_ksk_kept_by_lode() {
    if !tools_present() || !knot_available() {
        return;
    }
    let root = TempDir::new("offline-ksk-knot");
    let zsk = root.0.join("zsk");
    let ksk = root.0.join("ksk");
    std::fs::create_dir_all(&zsk).unwrap();
    std::fs::create_dir_all(&ksk).unwrap();
    let ksk_arg = ksk.to_str().unwrap();
    // The KSK side (Lode): its KSK, made before the request.
    run(
        &mut lode(&["dnssec", "generate", ZONE, "--kasp-db", ksk_arg]),
        "lode dnssec generate",
    );
    // The ZSK side (Knot): ZSKs made ahead, a request.
    let port = pick_port_in(17320, 17329);
    let kconf = knot_conf(&zsk, Some(port));
    run(
        &mut keymgr(&kconf, &["pregenerate", SPAN]),
        "keymgr pregenerate",
    );
    let ksr = run(
        &mut keymgr(&kconf, &["generate-ksr", "+0", SPAN]),
        "keymgr generate-ksr",
    );
    let ksr_path = root.0.join("req.ksr");
    std::fs::write(&ksr_path, &ksr).unwrap();
    let skr = run(
        &mut lode(&[
            "dnssec",
            "sign-ksr",
            ZONE,
            ksr_path.to_str().unwrap(),
            "--kasp-db",
            ksk_arg,
        ]),
        "lode dnssec sign-ksr",
    );
    assert!(skr.contains(";; SignedKeyResponse 1.0 "), "{skr}");
    let skr_path = root.0.join("resp.skr");
    std::fs::write(&skr_path, &skr).unwrap();
    let skr_arg = skr_path.to_str().unwrap();
    run(
        &mut keymgr(&kconf, &["validate-skr", skr_arg]),
        "keymgr validate-skr",
    );
    run(
        &mut keymgr(&kconf, &["import-skr", skr_arg]),
        "keymgr import-skr",
    );
    let ds = run(
        &mut lode(&["dnssec", "ds", ZONE, "--kasp-db", ksk_arg]),
        "lode dnssec ds",
    );
    let ds = ds
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("DS"))
        .expect("the KSK's DS")
        .to_string();
    let server = spawn_knotd(&kconf, port);
    let addr = server.addr;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = Command::new("kdig")
            .args([
                &format!("@{}", addr.ip()),
                "-p",
                &port.to_string(),
                ZONE,
                "DNSKEY",
            ])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&out.stdout).contains("DNSKEY\t257") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Knot did not sign:\n{}",
            server.log_tail(20)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    verify_axfr(&zsk, addr, ZONE, None, "Knot's first signing");
    let unbound_dir = root.0.join("unbound");
    std::fs::create_dir_all(&unbound_dir).unwrap();
    let unbound = start_unbound(&unbound_dir, (17330, 17339), &ds, &[(ZONE, port)], |p| {
        validated_as(&ask(p, "www.example.", "A"), "NOERROR")
    });
    let seen = watch(&zsk, || addr, unbound.port, 32, || {});
    assert!(
        seen.len() >= 2,
        "Knot's ZSK rolled under Lode's SKR: {seen:?}"
    );
    drop(server);
}
