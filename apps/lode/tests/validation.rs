//! `dnssec-validation` (Knot's): zones signed elsewhere are
//! checked before a version of them is served.
//!
//! - Zone files signed by BIND's `dnssec-signzone` (RSA/SHA-256, NSEC3 with
//!   a salt) and by `ldns-signzone` (ECDSA P-256, NSEC) load; one with a
//!   record changed after signing is not served, and the log names the
//!   RRset; fixed and reloaded, it is. A good zone edited badly and
//!   reloaded keeps its previous version.
//! - A validating Lode secondary of a Lode primary serving a pre-signed
//!   zone: takes the zone, takes a re-signed version, and refuses
//!   (keeping its version) the change an unsigned UPDATE made at the
//!   primary — by IXFR and by the AXFR it falls back to.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::dnssec::tools_present;
use common::peers::{distinct_ports, nsupdate, soa_serial, wait_serial, Peer, Primary, TsigKey};
use common::{start_lode_config, udp_exchange, Message, Query, TempDir};

/// The signing tests' zone (a delegation with glue and DS, an ENT, a
/// wildcard, a DNAME), for any origin.
fn zone_text(origin: &str, serial: u32, extra: &str) -> String {
    include_str!("../../../tests/dnssec/example.zone")
        .replace("$ORIGIN example.", &format!("$ORIGIN {origin}"))
        .replace(" 1 3600 600", &format!(" {serial} 3600 600"))
        + extra
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `text` signed by BIND (RSA/SHA-256 KSK and ZSK made in `keys` once,
/// NSEC3 with a salt) into `out`.
fn sign_bind(keys: &Path, origin: &str, text: &str, out: &Path) {
    std::fs::create_dir_all(keys).unwrap();
    let has_keys = std::fs::read_dir(keys)
        .unwrap()
        .any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".key"));
    if !has_keys {
        for ksk in [true, false] {
            let mut c = Command::new("dnssec-keygen");
            c.arg("-K")
                .arg(keys)
                .args(["-q", "-a", "RSASHA256", "-b", "2048"]);
            if ksk {
                c.args(["-f", "KSK"]);
            }
            run(c.arg(origin));
        }
    }
    let input = out.with_extension("unsigned");
    std::fs::write(&input, text).unwrap();
    run(Command::new("dnssec-signzone")
        .args(["-q", "-S", "-K"])
        .arg(keys)
        // (its dsset- file there too, not in the test's working folder)
        .arg("-d")
        .arg(keys)
        .args(["-3", "a1b2c3d4", "-o", origin, "-f"])
        .arg(out)
        .arg(&input));
}

/// `text` signed by ldns (ECDSA P-256 KSK and ZSK made in `keys` once,
/// NSEC) into `out`.
fn sign_ldns(keys: &Path, origin: &str, text: &str, out: &Path) {
    std::fs::create_dir_all(keys).unwrap();
    let base = |ksk: bool| -> String {
        let mut c = Command::new("ldns-keygen");
        c.current_dir(keys).args(["-a", "ECDSAP256SHA256"]);
        if ksk {
            c.arg("-k");
        }
        run(c.arg(origin))
    };
    let names = keys.join("names");
    let pair = match std::fs::read_to_string(&names) {
        Ok(p) => p,
        Err(_) => {
            let p = format!("{}\n{}", base(true), base(false));
            std::fs::write(&names, &p).unwrap();
            p
        }
    };
    let input = out.with_extension("unsigned");
    std::fs::write(&input, text).unwrap();
    let mut c = Command::new("ldns-signzone");
    c.current_dir(keys).arg("-f").arg(out).arg(&input);
    run(c.args(pair.lines()));
}

/// The answer's RCODE and whether it is authoritative with an answer.
fn answers(addr: SocketAddr, name: &str, rtype: u16) -> Option<Message> {
    let r = udp_exchange(
        addr,
        &Query::new(name, rtype, 1).to_wire(),
        Duration::from_millis(500),
    )?;
    Some(Message::parse(&r))
}

fn serves(addr: SocketAddr, origin: &str) -> bool {
    answers(addr, origin, 6).is_some_and(|m| m.rcode() == 0 && m.aa && !m.answer.is_empty())
}

fn wait_for(what: &str, log: impl Fn() -> String, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ok() {
        assert!(Instant::now() < deadline, "{what}\n{}", log());
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn zones_signed_elsewhere_are_served_only_when_they_validate() {
    if !tools_present() {
        return;
    }
    let dir = TempDir::new("validation-files");
    let d = &dir.0;
    let rsa_keys = d.join("keys-rsa");
    let rsa = d.join("rsa.zone");
    sign_bind(
        &rsa_keys,
        "rsa.example.",
        &zone_text("rsa.example.", 1, ""),
        &rsa,
    );
    let ec = d.join("ec.zone");
    sign_ldns(
        &d.join("keys-ec"),
        "ec.example.",
        &zone_text("ec.example.", 1, ""),
        &ec,
    );
    // Signed, then a record changed: its signature no longer fits.
    let bad = d.join("bad.zone");
    let bad_keys = d.join("keys-bad");
    sign_bind(
        &bad_keys,
        "bad.example.",
        &zone_text("bad.example.", 1, ""),
        &bad,
    );
    let good_bad = std::fs::read_to_string(&bad).unwrap();
    assert!(good_bad.contains("192.0.2.80"));
    std::fs::write(&bad, good_bad.replace("192.0.2.80", "192.0.2.81")).unwrap();

    let conf = d.join("lode.toml");
    let zones: String = ["rsa", "ec", "bad"]
        .iter()
        .map(|z| {
            format!("[[zone]]\nname = \"{z}.example.\"\nfile = \"{z}.zone\"\ndnssec-validation = true\n")
        })
        .collect();
    std::fs::write(&conf, zones).unwrap();
    let port = common::pick_port_in(16850, 16869);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let server = start_lode_config(
        &conf,
        port,
        &d.join("lode.log"),
        &["rsa.example.", "ec.example."],
    )
    .unwrap_or_else(|e| panic!("lode: {e}"));
    assert!(
        !serves(addr, "bad.example."),
        "a zone that fails is not served"
    );
    let log = server.log();
    assert!(
        log.contains("DNSSEC validation failed") && log.contains("www.bad.example. A"),
        "the log names what failed:\n{log}"
    );

    // Fixed and reloaded: served.
    std::fs::write(&bad, &good_bad).unwrap();
    let hup = |pid: u32| {
        assert!(Command::new("kill")
            .args(["-HUP", &pid.to_string()])
            .status()
            .unwrap()
            .success())
    };
    hup(server.pid());
    wait_for(
        "bad.example. served once fixed",
        || server.log(),
        || serves(addr, "bad.example."),
    );

    // A good zone edited badly (a new record, unsigned, a new serial):
    // the reload fails, the previous version stays.
    let good_rsa = std::fs::read_to_string(&rsa).unwrap();
    std::fs::write(
        &rsa,
        good_rsa.replacen(" 1 3600 600", " 2 3600 600", 1)
            + "added.rsa.example. 300 IN A 192.0.2.99\n",
    )
    .unwrap();
    hup(server.pid());
    wait_for(
        "the bad reload is logged",
        || server.log(),
        || server.log().contains("rsa.example.: reload failed"),
    );
    assert_eq!(
        soa_serial(addr, "rsa.example."),
        Some(1),
        "the previous version stays"
    );
    // (The wildcard answers the name, with no A.)
    let a = answers(addr, "added.rsa.example.", 1).unwrap();
    assert!(a.answer.is_empty(), "the unsigned record is not served");
}

#[test]
fn a_validating_secondary_takes_signed_versions_and_refuses_a_bogus_one() {
    if !tools_present() {
        return;
    }
    let key = TsigKey::test_key();
    let dir = TempDir::new("validation-xfr");
    let d = &dir.0;
    let keys = d.join("keys");
    let signed = d.join("signed.zone");
    sign_ldns(&keys, "example.", &zone_text("example.", 1, ""), &signed);
    let ports = distinct_ports(3, &[]);
    let secondary_addr = SocketAddr::from(([127, 0, 0, 1], ports[1]));
    let primary = Primary::start_lode("example.", &signed, &key, &[secondary_addr], ports[0])
        .unwrap_or_else(|e| panic!("primary: {e}"));
    let secondary = Peer::start_lode_with(
        "example.",
        primary.addr,
        &key,
        ports[1],
        ports[2],
        &[],
        "dnssec-validation = true\n",
    )
    .unwrap_or_else(|e| panic!("secondary: {e}"));
    wait_serial(secondary_addr, "example.", 1, Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("{e}\n{}", secondary.log_tail(30)));

    // Re-signed with a name more, serial 2, the primary reloads it: the
    // secondary takes the difference by IXFR, validated.
    let next: PathBuf = d.join("signed-2.zone");
    sign_ldns(
        &keys,
        "example.",
        &zone_text("example.", 2, "added 300 IN A 192.0.2.77\n"),
        &next,
    );
    std::fs::copy(&next, primary.dir().join("primary.zone")).unwrap();
    assert!(Command::new("kill")
        .args(["-HUP", &primary.pid().to_string()])
        .status()
        .unwrap()
        .success());
    wait_serial(secondary_addr, "example.", 2, Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("{e}\n{}\n{}", secondary.log_tail(30), primary.log_tail(30)));
    // An unsigned UPDATE at the primary (it does not sign): the new
    // version is bogus, and the secondary keeps serial 2.
    nsupdate(
        primary.addr,
        "example.",
        &key,
        "update add bogus.example. 300 A 192.0.2.66\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(soa_serial(primary.addr, "example."), Some(3));
    wait_for(
        "the bogus version is refused",
        || secondary.log(),
        || secondary.log().contains("DNSSEC validation failed"),
    );
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(soa_serial(secondary_addr, "example."), Some(2));
    // (The wildcard answers the name, with no A.)
    let m = answers(secondary_addr, "bogus.example.", 1).unwrap();
    assert!(m.answer.is_empty(), "the bogus record is not served");
}
