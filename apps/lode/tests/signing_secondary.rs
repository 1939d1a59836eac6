//! Lode as the signer between a hidden primary and the public secondaries:
//! Knot DNS serves the unsigned zone and takes the updates;
//! Lode transfers it in, signs it and numbers its versions itself; a Knot
//! secondary with `dnssec-validation: on` takes Lode's signed versions.
//!
//! ```text
//!  knsupdate ─▶ Knot (hidden primary, unsigned) ─IXFR─▶ Lode (signs) ─IXFR─▶ Knot (validates)
//! ```
//!
//! Every version Lode publishes is verified whole (`ldns-verify-zone`,
//! `dnssec-verify`, `kzonecheck`): after the first transfer, after each
//! of a sequence of updates at the primary (each one signed changeset by
//! IXFR), after a restart and after `kill -9` (the next change still comes
//! by IXFR: the primary's serial is kept with the journal), and after a
//! forced whole transfer (taken as its difference: the validating
//! secondary still gets IXFR).

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::dnssec::{tools_present, verify_axfr};
use common::peers::{
    distinct_ports, ixfr_count, missing_programs, nsupdate, soa_serial, wait_serial, Peer, Primary,
    SecondaryKind, TsigKey,
};
use common::{Rng, TempDir};

/// The signing tests' zone (a delegation with glue and DS, an ENT, a
/// wildcard, a DNAME).
const ZONE_TEXT: &str = include_str!("../../../tests/dnssec/example.zone");
const ZONE: &str = "example.";
/// How long the signer and its secondary get to follow a change.
const FOLLOW: Duration = Duration::from_secs(20);

/// Waits until `addr` serves a serial past `after`; returns it.
fn next_serial(addr: SocketAddr, after: u32, who: &str, log: impl Fn() -> String) -> u32 {
    let deadline = Instant::now() + FOLLOW;
    loop {
        if let Some(s) = soa_serial(addr, ZONE) {
            if lode_wire_serial_gt(s, after) {
                return s;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{who} did not move past serial {after}:\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `a` is after `b` in serial arithmetic (RFC 1982).
fn lode_wire_serial_gt(a: u32, b: u32) -> bool {
    a != b && a.wrapping_sub(b) < 1 << 31
}

#[test]
fn lode_signs_between_a_hidden_primary_and_a_validating_secondary() {
    if !tools_present() {
        return;
    }
    let missing = missing_programs(&[SecondaryKind::Knot]);
    if !missing.is_empty() {
        assert!(
            std::env::var_os("LODE_REQUIRE_XFR_PEERS").is_none(),
            "missing: {missing:?}"
        );
        eprintln!("SKIP: missing {missing:?}");
        return;
    }
    let key = TsigKey::test_key();
    let y = key.y_arg();
    let dir = TempDir::new("signing-secondary");
    let zone_file = dir.0.join("example.zone");
    std::fs::write(&zone_file, ZONE_TEXT).unwrap();
    let ports = distinct_ports(4, &[]);
    let addr = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
    let (signer_addr, public_addr) = (addr(ports[1]), addr(ports[3]));

    let primary = Primary::start_knot(ZONE, &zone_file, &key, &[signer_addr], ports[0])
        .unwrap_or_else(|e| panic!("hidden primary: {e}"));
    let signing = "dnssec-signing = true\ndnssec-policy = \"signer\"\n\
                   [[policy]]\nid = \"signer\"\nnsec3 = true\nnsec3-salt-length = 8\n";
    let mut signer = Peer::start_lode_with(
        ZONE,
        primary.addr,
        &key,
        ports[1],
        ports[2],
        &[public_addr],
        signing,
    )
    .unwrap_or_else(|e| panic!("signer: {e}"));
    let public = Peer::start_knot_with(
        ZONE,
        signer_addr,
        &key,
        ports[3],
        "    dnssec-validation: on\n",
    )
    .unwrap_or_else(|e| panic!("validating secondary: {e}"));

    // The first transfer: signed whole; a first version keeps the
    // primary's serial (as Knot).
    let upstream0 = soa_serial(primary.addr, ZONE).expect("the primary serves the zone");
    wait_serial(signer_addr, ZONE, upstream0, FOLLOW)
        .unwrap_or_else(|e| panic!("{e}\n{}", signer.log_tail(30)));
    let mut serial = verify_axfr(&dir.0, signer_addr, ZONE, Some(&y), "first transfer");
    assert_eq!(serial, upstream0);
    wait_serial(public_addr, ZONE, serial, FOLLOW)
        .unwrap_or_else(|e| panic!("{e}\n{}", public.log_tail(30)));

    // Updates at the primary, each verified at the signer; the validating
    // secondary follows every one.
    let names = ["new", "x.new", "b.c", "c", "in.sub", "z", "*.w", "deep.e.f"];
    let mut rng = Rng::new(1802);
    let mut upstream = upstream0;
    let mut change = |step: usize, upstream: &mut u32, serial: &mut u32, signer: &Peer| {
        let name = format!("{}.{ZONE}", names[rng.below(names.len())]);
        let lines = match rng.below(6) {
            0 => format!("update add {name} 300 NS ns.example."),
            1 => format!("update delete {name}"),
            2 => format!("update add {name} 300 TXT \"t{step}\""),
            _ => format!("update add {name} 300 A 192.0.2.{}", rng.below(200)),
        };
        // A change the primary refuses or that changes nothing moves no serial.
        if nsupdate(primary.addr, ZONE, &key, &lines).is_err()
            || soa_serial(primary.addr, ZONE) == Some(*upstream)
        {
            return;
        }
        *upstream = soa_serial(primary.addr, ZONE).unwrap();
        let s = next_serial(signer_addr, *serial, "the signer", || signer.log_tail(30));
        let verified = verify_axfr(
            &dir.0,
            signer_addr,
            ZONE,
            Some(&y),
            &format!("step {step}: {lines}"),
        );
        assert!(lode_wire_serial_gt(verified, *serial));
        *serial = verified.max(s);
        wait_serial(public_addr, ZONE, *serial, FOLLOW)
            .unwrap_or_else(|e| panic!("step {step}: {e}\n{}", public.log_tail(30)));
    };
    for step in 0..12 {
        change(step, &mut upstream, &mut serial, &signer);
    }
    assert!(upstream > upstream0 + 5, "the primary took the updates");
    let log = signer.log();
    assert!(
        log.lines().any(|l| l.contains(": IXFR from ")),
        "the signer took the changes by IXFR:\n{log}"
    );
    assert!(
        ixfr_count(&public) > 5,
        "the validating secondary took signed IXFRs:\n{}",
        public.log_tail(40)
    );
    // Our serials are our own: the primary's and ours only meet by chance.
    let served = soa_serial(signer_addr, ZONE).unwrap();
    assert_eq!(served, serial);

    // A restart and a kill -9: the primary's serial is kept, the next
    // change still comes by IXFR (no whole transfer, nothing signed whole).
    for (round, hard) in [(0, false), (1, true)] {
        if hard {
            signer.kill9();
        }
        signer
            .restart()
            .unwrap_or_else(|e| panic!("signer restart {round}: {e}"));
        wait_serial(signer_addr, ZONE, serial, FOLLOW)
            .unwrap_or_else(|e| panic!("{e}\n{}", signer.log_tail(30)));
        let before = upstream;
        let mut step = 100 + round * 10;
        while upstream == before {
            change(step, &mut upstream, &mut serial, &signer);
            step += 1;
        }
        // (A restarted server's log starts afresh.)
        let after = signer.log();
        assert!(
            after.lines().any(|l| l.contains(": IXFR from ")),
            "restart {round} (kill -9: {hard}): the next change by IXFR:\n{after}"
        );
        assert!(
            !after.contains("(whole zone)") && !after.contains("signed whole"),
            "restart {round} (kill -9: {hard}): no whole transfer, nothing signed whole:\n{after}"
        );
    }

    // A whole transfer asked for: taken as its difference, one signed
    // change (the next serial), and the secondary still gets an IXFR.
    let ixfrs = ixfr_count(&public);
    signer
        .lode_control(&["zone-retransfer", ZONE])
        .unwrap_or_else(|e| panic!("zone-retransfer: {e}"));
    let s = next_serial(signer_addr, serial, "the signer (retransfer)", || {
        signer.log_tail(30)
    });
    serial = verify_axfr(
        &dir.0,
        signer_addr,
        ZONE,
        Some(&y),
        "after a whole transfer",
    );
    assert!(serial >= s);
    wait_serial(public_addr, ZONE, serial, FOLLOW)
        .unwrap_or_else(|e| panic!("{e}\n{}", public.log_tail(30)));
    assert!(
        ixfr_count(&public) > ixfrs,
        "the whole transfer reached the secondary as an IXFR:\n{}",
        public.log_tail(30)
    );
    assert!(
        !public.log().contains("failed"),
        "the validating secondary found nothing wrong:\n{}",
        public.log()
    );
}

/// A hosting company's catalog, signed here: the members of a catalog Knot
/// generates become secondaries of Knot that Lode signs, by the catalog
/// template's `dnssec-signing` (each verified whole).
#[test]
fn catalog_members_are_signed_by_their_template() {
    if !tools_present() || !missing_programs(&[SecondaryKind::Knot]).is_empty() {
        assert!(std::env::var_os("LODE_REQUIRE_XFR_PEERS").is_none());
        return;
    }
    let key = TsigKey::test_key();
    let dir = TempDir::new("signing-catalog");
    let ports = distinct_ports(3, &[]);
    let consumer_addr = SocketAddr::from(([127, 0, 0, 1], ports[1]));
    let names = ["m1.example.", "m2.example."];
    let text = |m: &str| {
        format!(
            "$ORIGIN {m}\n$TTL 300\n@ SOA ns hostmaster 7 5 2 604800 300\n@ NS ns\n\
             ns A 192.0.2.53\nwww A 192.0.2.7\nsub NS ns.sub\nns.sub A 192.0.2.8\n"
        )
    };
    let knot = Primary::start_knot_catalog_of(
        &dir.0,
        "catalog.example.",
        &names,
        text,
        &key,
        consumer_addr,
        ports[0],
    )
    .unwrap_or_else(|e| panic!("knot producer: {e}"));
    let consumer = Peer::start_lode_catalog_consumer_with(
        "catalog.example.",
        knot.addr,
        &key,
        ports[1],
        ports[2],
        "dnssec-signing = true\n",
    )
    .unwrap_or_else(|e| panic!("lode consumer: {e}"));
    let y = key.y_arg();
    for m in names {
        // A member's first version keeps the primary's serial.
        wait_serial(consumer.addr, m, 7, FOLLOW)
            .unwrap_or_else(|e| panic!("lode serves {m}: {e}\n{}", consumer.log_tail(30)));
        let serial = verify_axfr(&dir.0, consumer.addr, m, Some(&y), &format!("member {m}"));
        assert_eq!(serial, 7);
        let text = std::fs::read_to_string(dir.0.join("axfr.txt")).unwrap();
        assert!(text.contains("DNSKEY") && text.contains("RRSIG"), "{text}");
    }
}

/// A secondary's signing turned on and off by `lode reload` (Knot's
/// `knotc reload`): on, the version served is signed whole and stands for
/// the primary's serial, so the next change at the primary still comes by
/// IXFR and is signed; off, the primary's zone is transferred whole again
/// and served as the primary has it (its serial, no DNSSEC records) — also
/// when the secondary is started unsigned after being signed.
#[test]
fn a_secondarys_signing_turned_on_and_off_by_reload() {
    if !tools_present() || !missing_programs(&[SecondaryKind::Knot]).is_empty() {
        assert!(std::env::var_os("LODE_REQUIRE_XFR_PEERS").is_none());
        return;
    }
    let key = TsigKey::test_key();
    let y = key.y_arg();
    let dir = TempDir::new("signing-secondary-reload");
    let zone_file = dir.0.join("example.zone");
    std::fs::write(&zone_file, ZONE_TEXT).unwrap();
    let ports = distinct_ports(3, &[]);
    let signer_addr = SocketAddr::from(([127, 0, 0, 1], ports[1]));
    let primary = Primary::start_knot(ZONE, &zone_file, &key, &[signer_addr], ports[0])
        .unwrap_or_else(|e| panic!("hidden primary: {e}"));
    let mut signer = Peer::start_lode_with(ZONE, primary.addr, &key, ports[1], ports[2], &[], "")
        .unwrap_or_else(|e| panic!("secondary: {e}"));
    let upstream0 = soa_serial(primary.addr, ZONE).expect("the primary serves the zone");
    wait_serial(signer_addr, ZONE, upstream0, FOLLOW)
        .unwrap_or_else(|e| panic!("{e}\n{}", signer.log_tail(30)));
    let conf_path = signer.dir().join("lode.toml");
    let unsigned_conf = std::fs::read_to_string(&conf_path).unwrap();
    let signed_conf = format!("{unsigned_conf}dnssec-signing = true\n");
    let reload = |signer: &Peer, conf: &str, want: &str| {
        std::fs::write(&conf_path, conf).unwrap();
        let text = signer
            .lode_control(&["reload"])
            .unwrap_or_else(|e| panic!("reload: {e}\n{}", signer.log_tail(30)));
        assert!(
            text.contains(want) && !text.contains("take effect at restart"),
            "{text}"
        );
    };
    let ixfrs = |p: &Peer| {
        p.log()
            .lines()
            .filter(|l| l.contains(": IXFR from "))
            .count()
    };
    let wait = |signer: &Peer, signed: bool, serial: Option<u32>| {
        wait_transfer(&dir.0, signer_addr, &y, signed, serial, || {
            signer.log_tail(30)
        })
    };

    // On: signed whole at once, then a change at the primary comes by
    // IXFR and is signed.
    reload(&signer, &signed_conf, "signing turned on");
    wait(&signer, true, None);
    let first = verify_axfr(&dir.0, signer_addr, ZONE, Some(&y), "signed by the reload");
    nsupdate(
        primary.addr,
        ZONE,
        &key,
        "update add on.example. 300 A 192.0.2.77",
    )
    .unwrap();
    let upstream1 = soa_serial(primary.addr, ZONE).unwrap();
    assert_ne!(upstream1, upstream0);
    let s = next_serial(signer_addr, first, "the signer", || signer.log_tail(30));
    let second = verify_axfr(&dir.0, signer_addr, ZONE, Some(&y), "a change after");
    assert!(second >= s);
    assert!(ixfrs(&signer) > 0, "by IXFR:\n{}", signer.log_tail(30));

    // Off: the primary's zone again, whole, with its serial; its next
    // change comes as it is, by IXFR.
    reload(&signer, &unsigned_conf, "signing turned off");
    let text = wait(&signer, false, Some(upstream1));
    assert!(text.contains("on.example."), "{text}");
    let before = ixfrs(&signer);
    nsupdate(
        primary.addr,
        ZONE,
        &key,
        "update add off.example. 300 A 192.0.2.78",
    )
    .unwrap();
    let upstream2 = soa_serial(primary.addr, ZONE).unwrap();
    wait(&signer, false, Some(upstream2));
    assert!(ixfrs(&signer) > before, "by IXFR:\n{}", signer.log_tail(30));

    // On again, then killed and started unsigned: the primary's zone
    // whole, at the start.
    reload(&signer, &signed_conf, "signing turned on");
    wait(&signer, true, None);
    verify_axfr(
        &dir.0,
        signer_addr,
        ZONE,
        Some(&y),
        "signed again by a reload",
    );
    std::fs::write(&conf_path, &unsigned_conf).unwrap();
    signer.kill9();
    signer.restart().unwrap_or_else(|e| panic!("restart: {e}"));
    wait(&signer, false, Some(upstream2));
}

/// Waits until the zone `addr` transfers is signed (or unsigned, `signed`)
/// and, when `serial` is given, at that serial; returns the transfer's text
/// (also left in `dir`/axfr.txt).
fn wait_transfer(
    dir: &std::path::Path,
    addr: SocketAddr,
    y: &str,
    signed: bool,
    serial: Option<u32>,
    log: impl Fn() -> String,
) -> String {
    let deadline = Instant::now() + FOLLOW;
    loop {
        let out = std::process::Command::new("kdig")
            .arg(format!("@{}", addr.ip()))
            .args([
                "-p",
                &addr.port().to_string(),
                "-y",
                y,
                ZONE,
                "AXFR",
                "+nocomments",
            ])
            .output()
            .expect("kdig");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        std::fs::write(dir.join("axfr.txt"), &text).unwrap();
        let got: Option<u32> = text
            .lines()
            .find(|l| l.split_whitespace().nth(3) == Some("SOA"))
            .and_then(|l| l.split_whitespace().nth(6)?.parse().ok());
        let is_signed = text.contains("\tDNSKEY\t") || text.contains("\tRRSIG\t");
        if got.is_some() && is_signed == signed && serial.is_none_or(|s| got == Some(s)) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "the transfer is not {} at serial {serial:?} (it is at {got:?}):\n{}",
            if signed { "signed" } else { "unsigned" },
            log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
