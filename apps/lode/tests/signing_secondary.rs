//! Lode as the signer between a hidden primary and the public secondaries
//! (issue 18): Knot DNS serves the unsigned zone and takes the updates;
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
