//! Zone-transfer interop: a PRIMARY and three real SECONDARIES (Knot DNS,
//! NSD, BIND), everything signed with one hmac-sha256 TSIG key.
//!
//! What is checked, for a primary of kind [`PrimaryKind`] (Knot DNS 3.2 as
//! the reference, and Lode):
//! 1. the three secondaries start empty and take the zone by AXFR: each
//!    serves the primary's SOA serial, and its AXFR contents equal the
//!    primary's as a multiset of normalised records;
//! 2. 20 UPDATEs (`knsupdate -y`, one serial each: adds, deletes, an RRset
//!    replaced, a name removed) go to the primary in bursts of 5; after each
//!    burst its NOTIFYs bring every secondary to the burst's serial within
//!    15 s, and after the last one every secondary serves the same contents
//!    as the primary;
//! 3. each secondary received at least one IXFR, so the updates did not
//!    all travel as full AXFRs: read from its log (Knot, BIND; NSD logs no
//!    transfer kind) and, for all three, counted by the tap
//!    (`common/tap.rs`) that sits between it and the primary.
//!
//! A second test checks the harness's failure paths: with a wrong TSIG
//! secret a secondary never gets the zone, and AXFR and UPDATE fail.
//!
//! Time: about 6-8 s for both (they run in parallel) on this 2-core
//! machine: start-up well under a second per server, the initial transfers
//! a few ms, each burst of updates up to ~1 s (the Knot secondary takes
//! about a second to act on a NOTIFY; NSD and BIND a few ms). Ports 16100-16199 on 127.0.0.1. With one of knotd,
//! nsd, named, kdig, knsupdate missing it prints SKIP and passes, unless
//! `LODE_REQUIRE_XFR_PEERS=1` (scripts/test.sh sets it once it could
//! install them) makes that a failure. `LODE_KEEP_TMP=1` keeps the servers'
//! directories (configurations and logs).

mod common;

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::peers::{
    axfr_records, distinct_ports, ixfr_count, missing_programs, normalise_record, nsupdate,
    paced_updates, received_ixfr, soa_serial, wait_serial, Peer, Primary, PrimaryKind,
    SecondaryKind, TsigKey,
};
use common::TempDir;

const ZONE: &str = "example.com.";
/// How long every secondary gets to catch up after a burst of updates.
const CONVERGE: Duration = Duration::from_secs(15);
/// Updates sent back to back before the secondaries must catch up.
const BURST: usize = 5;

/// The starting zone: serial 1, short timers (the NOTIFYs should make them
/// irrelevant, but a missed NOTIFY then costs seconds, not hours).
fn write_zone(path: &Path) {
    let text = "$ORIGIN example.com.\n$TTL 3600\n\
        @ SOA ns1.example.com. hostmaster.example.com. 1 5 2 604800 300\n\
        @ NS ns1.example.com.\n@ NS ns2.example.net.\n\
        ns1 A 192.0.2.53\n\
        www A 192.0.2.1\nwww A 192.0.2.2\nwww AAAA 2001:db8::1\n\
        mail A 192.0.2.25\n@ MX 10 mail.example.com.\n\
        @ TXT \"v=spf1 mx -all\"\n\
        old CNAME www.example.com.\n\
        _sip._udp SRV 10 60 5060 sip.example.com.\n\
        sip A 192.0.2.60\n";
    std::fs::write(path, text).expect("write zone");
}

/// The 20 UPDATEs of step 2, as knsupdate script text (one `send` each).
fn updates() -> Vec<String> {
    let mut v = Vec::new();
    for i in 0..12 {
        v.push(format!(
            "update add host{i}.example.com. 300 A 198.51.100.{}\n",
            i + 1
        ));
    }
    v.push("update add www.example.com. 3600 A 192.0.2.3\n".into());
    v.push("update delete www.example.com. A 192.0.2.1\n".into());
    v.push("update delete old.example.com. CNAME\n".into());
    v.push("update add txt.example.com. 300 TXT \"Mixed Case\" \"two  spaces\"\n".into());
    v.push("update delete host3.example.com.\n".into());
    v.push(
        "update delete mail.example.com. A\nupdate add mail.example.com. 3600 A 192.0.2.26\n"
            .into(),
    );
    v.push("update add deep.sub.example.com. 300 AAAA 2001:db8::42\n".into());
    v.push("update delete host0.example.com. A 198.51.100.1\n".into());
    assert_eq!(v.len(), 20);
    v
}

/// Starts the primary of `kind` on `port` for the zone in `zone_file`,
/// NOTIFYing `notify`.
///
/// The Lode variant is the plug for the lead: `lode serve` with the zone,
/// the key (`[[key]]`), an ACL allowing `update` and `transfer` to it, and
/// the NOTIFY targets, once the server can be a transfer primary. Until then
/// it refuses, and no test calls it.
fn start_primary(
    kind: PrimaryKind,
    zone_file: &Path,
    key: &TsigKey,
    notify: &[SocketAddr],
    port: u16,
) -> Result<Primary, String> {
    match kind {
        PrimaryKind::Knot => Primary::start_knot(ZONE, zone_file, key, notify, port),
        PrimaryKind::Lode => Primary::start_lode(ZONE, zone_file, key, notify, port),
    }
}

/// True when every program is here; otherwise SKIP (or fail when required).
fn programs_present() -> bool {
    let missing = missing_programs(&SecondaryKind::ALL);
    if missing.is_empty() {
        return true;
    }
    let msg = format!("missing: {}", missing.join(", "));
    if std::env::var("LODE_REQUIRE_XFR_PEERS").as_deref() == Ok("1") {
        panic!("{msg} but LODE_REQUIRE_XFR_PEERS=1");
    }
    eprintln!("SKIP xfr_interop: {msg}");
    false
}

/// The secondaries' addresses in `ports` (the primary's, then one per
/// secondary, then their taps'): whom the primary NOTIFYs.
fn notify_targets(ports: &[u16]) -> Vec<SocketAddr> {
    ports[1..=SecondaryKind::ALL.len()]
        .iter()
        .map(|&p| SocketAddr::from(([127, 0, 0, 1], p)))
        .collect()
}

/// Starts a Knot, an NSD and a BIND secondary of `primary` on `ports` (as
/// [`notify_targets`] reads them), each behind its tap.
fn start_secondaries(primary: SocketAddr, key: &TsigKey, ports: &[u16]) -> Vec<Peer> {
    let n = SecondaryKind::ALL.len();
    SecondaryKind::ALL
        .iter()
        .enumerate()
        .map(|(i, &k)| {
            Peer::start_with_tap(k, ZONE, primary, key, ports[1 + i], ports[1 + n + i])
                .unwrap_or_else(|e| panic!("{} secondary: {e}", k.label()))
        })
        .collect()
}

/// Checks that `peer` serves `serial` within `timeout` and the same
/// records as `want`; returns how long the serial took.
fn converged(
    peer: &Peer,
    serial: u32,
    want: &[String],
    key: &TsigKey,
    timeout: Duration,
) -> Result<Duration, String> {
    let took = wait_serial(peer.addr, ZONE, serial, timeout)
        .map_err(|e| format!("{}: {e}\n{}", peer.label(), peer.log_tail(25)))?;
    let got = axfr_records(peer.addr, ZONE, key).map_err(|e| format!("{}: {e}", peer.label()))?;
    if got != want {
        let only_got: Vec<&String> = got.iter().filter(|l| !want.contains(l)).collect();
        let only_want: Vec<&String> = want.iter().filter(|l| !got.contains(l)).collect();
        return Err(format!(
            "{}: AXFR contents differ from the primary's at serial {serial}\n  only on the secondary: {only_got:#?}\n  only on the primary: {only_want:#?}",
            peer.label()
        ));
    }
    Ok(took)
}

/// The whole scenario for a primary of `kind`.
fn primary_to_three_secondaries(kind: PrimaryKind) {
    let begun = Instant::now();
    let key = TsigKey::test_key();
    let dir = TempDir::new("xfr-interop");
    let zone_file = dir.0.join("example.com.zone");
    write_zone(&zone_file);

    // Ports first (the primary must know whom to NOTIFY): the primary's,
    // then each secondary's and its tap's.
    let ports = distinct_ports(1 + 2 * SecondaryKind::ALL.len(), &[]);
    let primary_port = ports[0];
    let notify = notify_targets(&ports);
    let primary = start_primary(kind, &zone_file, &key, &notify, primary_port)
        .unwrap_or_else(|e| panic!("primary: {e}"));
    let serial0 = soa_serial(primary.addr, ZONE).expect("primary serves the zone");

    // 1. Initial AXFR.
    let peers = start_secondaries(primary.addr, &key, &ports);
    let want = axfr_records(primary.addr, ZONE, &key).expect("AXFR from the primary");
    for p in &peers {
        let took = converged(p, serial0, &want, &key, Duration::from_secs(15))
            .unwrap_or_else(|e| panic!("initial transfer: {e}"));
        eprintln!(
            "{}: serial {serial0} after {took:?} ({} records)",
            p.label(),
            want.len()
        );
    }

    // 2. A stream of updates, in bursts of 5: after each burst every
    // secondary must catch up (serial only) before the next, so that each
    // receives several IXFRs, some of them carrying several changesets.
    let updates = updates();
    for (i, u) in updates.iter().enumerate() {
        nsupdate(primary.addr, ZONE, &key, u)
            .unwrap_or_else(|e| panic!("{e}\n{}", primary.log_tail(20)));
        if (i + 1) % BURST == 0 && i + 1 < updates.len() {
            let serial = serial0.wrapping_add(i as u32 + 1);
            for p in &peers {
                wait_serial(p.addr, ZONE, serial, CONVERGE)
                    .unwrap_or_else(|e| panic!("{}: {e}\n{}", p.label(), p.log_tail(25)));
            }
        }
    }
    let last = soa_serial(primary.addr, ZONE).expect("primary serial after the updates");
    assert_eq!(
        last,
        serial0.wrapping_add(updates.len() as u32),
        "one serial per UPDATE on the primary"
    );
    let want = axfr_records(primary.addr, ZONE, &key).expect("AXFR from the primary");
    let mut failures = Vec::new();
    for p in &peers {
        match converged(p, last, &want, &key, CONVERGE) {
            Ok(took) => eprintln!(
                "{}: serial {last} {took:?} after the last update",
                p.label()
            ),
            Err(e) => failures.push(e),
        }
    }

    // 3. Incremental, not full, transfers: the peer's own log (NSD: its
    // tap) and, as a cross-check of the log reading, the tap's count.
    for p in &peers {
        eprintln!(
            "{}: IXFR in its log: {}, through its tap: {} incremental, {} full",
            p.label(),
            ixfr_count(p),
            p.tap.incremental(),
            p.tap.full()
        );
        if !received_ixfr(p) || p.tap.incremental() == 0 {
            failures.push(format!(
                "{}: no IXFR received (log tail):\n{}",
                p.label(),
                p.log_tail(40)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    eprintln!(
        "{:?} primary → knot, nsd, bind: converged, IXFR seen, {:?} in all",
        kind,
        begun.elapsed()
    );
}

#[test]
fn knot_primary_to_knot_nsd_bind_secondaries() {
    if !programs_present() {
        return;
    }
    primary_to_three_secondaries(PrimaryKind::Knot);
}

#[test]
fn lode_primary_to_knot_nsd_bind_secondaries() {
    if !programs_present() {
        return;
    }
    primary_to_three_secondaries(PrimaryKind::Lode);
}

/// NOTIFY that busy secondaries keep up with: a Lode primary
/// changed 50 times a second for 6 s, then as fast as one knsupdate sends
/// (several hundred a second), NOTIFYing NSD, Knot and BIND secondaries.
/// Each must follow by IXFR alone: after the first AXFR, none (counted by
/// its tap), and NSD must not log "update failed, restarting transfer"
/// (NSD 4.6 fails a reload when a transfer lands while it runs, then
/// transfers the whole zone again; unpaced NOTIFYs at 50/s did that over
/// and over on a busy machine). As that race needs a slow reload, NSD's log
/// is also read for its cause: no NOTIFY may reach it before it loaded the
/// serial of the previous one (unpaced, 530 of 800 did here). The zone
/// carries 100,000 extra names so that its reloads take some time.
#[test]
fn lode_primary_notify_paced_for_busy_secondaries() {
    if !programs_present() {
        return;
    }
    let key = TsigKey::test_key();
    let dir = TempDir::new("xfr-paced");
    let zone_file = dir.0.join("example.com.zone");
    write_zone(&zone_file);
    let mut text = std::fs::read_to_string(&zone_file).expect("read zone");
    for i in 0..100_000 {
        let _ = writeln!(text, "n{i} A 198.18.{}.{}", i / 250 % 250, i % 250);
    }
    std::fs::write(&zone_file, text).expect("write zone");
    let ports = distinct_ports(1 + 2 * SecondaryKind::ALL.len(), &[]);
    let notify = notify_targets(&ports);
    // History for every change (Knot's default depth, 20, would answer a
    // secondary that is a second behind AXFR-style, as Knot does).
    let depth = "journal-max-depth = 2000\n";
    let primary = Primary::start_lode_with(ZONE, &zone_file, &key, &notify, ports[0], depth)
        .unwrap_or_else(|e| panic!("primary: {e}"));
    let serial0 = soa_serial(primary.addr, ZONE).expect("primary serves the zone");
    let peers = start_secondaries(primary.addr, &key, &ports);
    for p in &peers {
        wait_serial(p.addr, ZONE, serial0, Duration::from_secs(15))
            .unwrap_or_else(|e| panic!("{}: initial transfer: {e}", p.label()));
    }
    let change = |i: usize| format!("update add r{i}.example.com. 300 A 203.0.113.{}", i % 250);
    let phases = [
        (
            "50/s",
            (0..300).map(change).collect::<Vec<_>>(),
            Duration::from_millis(20),
        ),
        (
            "back to back",
            (300..800).map(change).collect(),
            Duration::ZERO,
        ),
    ];
    let mut serial = serial0;
    for (label, changes, gap) in &phases {
        let took = paced_updates(primary.addr, ZONE, &key, changes, *gap)
            .unwrap_or_else(|e| panic!("{label}: {e}\n{}", primary.log_tail(20)));
        serial = serial.wrapping_add(changes.len() as u32);
        eprintln!(
            "{label}: {} updates in {took:?} ({:.0}/s)",
            changes.len(),
            changes.len() as f64 / took.as_secs_f64()
        );
        for p in &peers {
            let t = wait_serial(p.addr, ZONE, serial, CONVERGE)
                .unwrap_or_else(|e| panic!("{label}: {}: {e}\n{}", p.label(), p.log_tail(25)));
            eprintln!(
                "{label}: {} at serial {serial} {t:?} after the last",
                p.label()
            );
        }
    }
    assert_eq!(
        soa_serial(primary.addr, ZONE),
        Some(serial),
        "one serial per UPDATE"
    );
    let want = axfr_records(primary.addr, ZONE, &key).expect("AXFR from the primary");
    let mut failures = Vec::new();
    for p in &peers {
        let (full, incremental) = (p.tap.full(), p.tap.incremental());
        eprintln!(
            "{}: {full} full and {incremental} incremental transfers",
            p.label()
        );
        if full != 1 {
            failures.push(format!(
                "{}: {full} full transfers (AXFR or IXFR answered in full), the first one only expected",
                p.label()
            ));
        }
        let log = p.log();
        let restarts = log.matches("restarting transfer").count();
        if restarts > 0 {
            failures.push(format!("{}: {restarts} transfers restarted", p.label()));
        }
        if p.kind == SecondaryKind::Nsd {
            let overruns = notify_overruns(&log);
            eprintln!(
                "{}: {} NOTIFYs before the last one was loaded",
                p.label(),
                overruns.len()
            );
            if !overruns.is_empty() {
                failures.push(format!(
                    "{}: {} NOTIFYs came before it had loaded the serial of the previous one, e.g.\n{}",
                    p.label(),
                    overruns.len(),
                    overruns[..overruns.len().min(5)].join("\n")
                ));
            }
        }
        if let Err(e) = converged(p, serial, &want, &key, CONVERGE) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The records of a zone file written by Lode (one record a line, an
/// owner on each, relative to `$ORIGIN`), normalised as [`axfr_records`]
/// gives them: absolute owners, class IN, sorted.
fn zone_file_records(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut origin = String::new();
    let mut lines = Vec::new();
    for line in text.lines() {
        if let Some(o) = line.strip_prefix("$ORIGIN ") {
            origin = o.trim().to_string();
            continue;
        }
        if line.trim().is_empty() || line.starts_with(';') {
            continue;
        }
        let (owner, rest) = line.split_once(' ').unwrap_or((line, ""));
        let owner = match owner {
            "@" => origin.clone(),
            o if o.ends_with('.') => o.to_string(),
            o => format!("{o}.{origin}"),
        };
        let (ttl, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        lines.push(normalise_record(&format!("{owner} {ttl} IN {rest}")));
    }
    lines.sort();
    lines
}

/// The NOTIFYs in an NSD log (verbosity 2) that came before NSD had loaded
/// the serial of the previous NOTIFY ("received update to serial M" with M
/// at least that serial, then or earlier); a repeated serial (a retry) is
/// not counted.
fn notify_overruns(log: &str) -> Vec<String> {
    let number_after = |line: &str, key: &str| -> Option<u32> {
        let rest = &line[line.find(key)? + key.len()..];
        rest.split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    let later = |a: u32, b: u32| a != b && b.wrapping_sub(a) < 1 << 31;
    let mut told: Option<u32> = None;
    let mut loaded: Option<u32> = None;
    let mut overruns = Vec::new();
    for line in log.lines() {
        if line.contains("notify for") {
            let Some(n) = number_after(line, " serial ") else {
                continue;
            };
            if told == Some(n) {
                continue;
            }
            if let Some(t) = told {
                if loaded.is_none_or(|l| later(l, t)) {
                    overruns.push(line.to_string());
                }
            }
            told = Some(n);
        } else if let Some(m) = number_after(line, "received update to serial ") {
            if loaded.is_none_or(|l| later(l, m)) {
                loaded = Some(m);
            }
        }
    }
    overruns
}

/// The harness's own failure paths against a Knot primary: a secondary with
/// the wrong secret never serves the zone, and an AXFR or an UPDATE signed
/// with it fails (so none of them can pass for an empty or unchanged zone).
#[test]
fn wrong_key_is_refused_everywhere() {
    if !programs_present() {
        return;
    }
    let key = TsigKey::test_key();
    let bad = key.with_secret("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
    let dir = TempDir::new("xfr-badkey");
    let zone_file = dir.0.join("example.com.zone");
    write_zone(&zone_file);
    let ports = distinct_ports(3, &[]);
    let notify = [SocketAddr::from(([127, 0, 0, 1], ports[1]))];
    let primary = start_primary(PrimaryKind::Knot, &zone_file, &key, &notify, ports[0])
        .unwrap_or_else(|e| panic!("primary: {e}"));
    let peer = Peer::start_with_tap(
        SecondaryKind::Knot,
        ZONE,
        primary.addr,
        &bad,
        ports[1],
        ports[2],
    )
    .unwrap_or_else(|e| panic!("secondary: {e}"));
    assert!(axfr_records(primary.addr, ZONE, &bad).is_err());
    assert!(nsupdate(
        primary.addr,
        ZONE,
        &bad,
        "update add x.example.com. 60 A 192.0.2.9\n"
    )
    .is_err());
    assert_eq!(
        soa_serial(primary.addr, ZONE),
        Some(1),
        "the bad UPDATE changed nothing"
    );
    let never = wait_serial(peer.addr, ZONE, 1, Duration::from_secs(2));
    assert!(
        never.is_err(),
        "a secondary with the wrong key got the zone"
    );
    assert_eq!(
        peer.tap.incremental() + peer.tap.full(),
        0,
        "no transfer went through"
    );
    assert!(
        axfr_records(primary.addr, ZONE, &key).is_ok(),
        "the right key still works"
    );
}

/// Lode as a secondary: a Knot primary changed with
/// knsupdate → Lode secondary A → Lode secondary B (A's secondary, NOTIFYed
/// by A). Checked: both take the zone by AXFR and follow the updates by IXFR
/// (A's and B's logs, and the taps); after Knot drops its history, A falls
/// back to AXFR (the IXFR answered AXFR-style) and B still follows; a cut
/// connection (the tap closes after one message) leaves A's served version
/// as it was, and A catches up once the tap forwards again; A restarted
/// after `kill -9` serves the same serial at once, without a transfer; a
/// secondary with the wrong key never serves the zone (SERVFAIL); `lode
/// zone-status` shows the transfer state; an UPDATE sent to A is forwarded to
/// Knot (as Knot forwards).
#[test]
fn knot_primary_to_lode_secondary_chain() {
    if !programs_present() {
        return;
    }
    let key = TsigKey::test_key();
    let dir = TempDir::new("xfr-lode-chain");
    let zone_file = dir.0.join("example.com.zone");
    write_zone(&zone_file);
    let ports = distinct_ports(7, &[]);
    let (a_addr, b_addr) = (
        SocketAddr::from(([127, 0, 0, 1], ports[1])),
        SocketAddr::from(([127, 0, 0, 1], ports[3])),
    );
    let primary = start_primary(PrimaryKind::Knot, &zone_file, &key, &[a_addr], ports[0])
        .unwrap_or_else(|e| panic!("primary: {e}"));
    let mut a = Peer::start_lode(ZONE, primary.addr, &key, ports[1], ports[2], &[b_addr])
        .unwrap_or_else(|e| panic!("lode secondary A: {e}"));
    // B also writes its zone file after each transfer (Knot's secondary
    // `file` with zonefile-sync 0).
    let b_file = "file = \"b.zone\"\nzonefile-sync = 0\n";
    let b = Peer::start_lode_with(ZONE, a_addr, &key, ports[3], ports[4], &[], b_file)
        .unwrap_or_else(|e| panic!("lode secondary B: {e}"));
    let serial0 = soa_serial(primary.addr, ZONE).expect("primary serves the zone");
    let want = axfr_records(primary.addr, ZONE, &key).expect("AXFR from the primary");
    for p in [&a, &b] {
        converged(p, serial0, &want, &key, Duration::from_secs(15))
            .unwrap_or_else(|e| panic!("initial transfer: {e}"));
    }

    // Updates in bursts: both follow, by IXFR.
    let updates = updates();
    let mut serial = serial0;
    for (i, u) in updates.iter().take(10).enumerate() {
        nsupdate(primary.addr, ZONE, &key, u).unwrap_or_else(|e| panic!("{e}"));
        serial = serial.wrapping_add(1);
        if (i + 1) % BURST == 0 {
            for p in [&a, &b] {
                wait_serial(p.addr, ZONE, serial, CONVERGE)
                    .unwrap_or_else(|e| panic!("{}: {e}\n{}", p.label(), p.log_tail(30)));
            }
        }
    }
    let want = axfr_records(primary.addr, ZONE, &key).expect("AXFR from the primary");
    for p in [&a, &b] {
        converged(p, serial, &want, &key, CONVERGE).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            received_ixfr(p) && p.tap.incremental() > 0,
            "{}: no IXFR received:\n{}",
            p.label(),
            p.log_tail(30)
        );
    }
    // B's zone file follows: the same records as the primary serves.
    let deadline = Instant::now() + Duration::from_secs(10);
    let written = loop {
        let got = zone_file_records(&b.dir().join("b.zone"));
        if got == want || Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        written,
        want,
        "B's zone file at serial {serial}:\n{}",
        b.log_tail(20)
    );

    // A cut connection: A's served version stays, the failure is logged,
    // and A catches up once the tap forwards again.
    // An update big enough for an IXFR of several messages (Knot ends a
    // message past 16 KiB), so that a cut after the first leaves it unfinished.
    a.tap.cut_after(Some(1));
    let big: String = (0..800)
        .map(|i| format!("update add bulk{i}.example.com. 300 TXT \"bulk record number {i} of a big change\"\n"))
        .collect();
    nsupdate(primary.addr, ZONE, &key, &big).unwrap_or_else(|e| panic!("{e}"));
    let cut_serial = serial.wrapping_add(1);
    let deadline = Instant::now() + Duration::from_secs(10);
    while a.tap.cuts() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(a.tap.cuts() > 0, "the tap cut a transfer");
    assert_eq!(
        soa_serial(a.addr, ZONE),
        Some(serial),
        "A still serves serial {serial}"
    );
    converged(&a, serial, &want, &key, Duration::from_secs(1))
        .unwrap_or_else(|e| panic!("A's contents after a cut transfer: {e}"));
    a.tap.cut_after(None);
    a.lode_control(&["zone-refresh", ZONE])
        .unwrap_or_else(|e| panic!("zone-refresh: {e}"));
    serial = cut_serial;
    let want = axfr_records(primary.addr, ZONE, &key).expect("AXFR from the primary");
    for p in [&a, &b] {
        converged(p, serial, &want, &key, CONVERGE)
            .unwrap_or_else(|e| panic!("after the cut: {e}\n{}", p.log_tail(30)));
    }
    assert!(
        a.log().contains("closed") || a.log().contains("cut"),
        "the cut transfer is logged:\n{}",
        a.log_tail(30)
    );

    // zone-status shows the transfer state.
    let status = a
        .lode_control(&["zone-status", ZONE])
        .unwrap_or_else(|e| panic!("zone-status: {e}"));
    assert!(
        status.contains(&format!("serial {serial}")) && status.contains("secondary of"),
        "zone-status: {status}"
    );

    // An UPDATE sent to the secondary is forwarded to the primary (as
    // Knot does), answered NOERROR, and comes back by IXFR.
    nsupdate(
        a.addr,
        ZONE,
        &key,
        "update add fwd.example.com. 60 A 192.0.2.8\n",
    )
    .unwrap_or_else(|e| panic!("forwarded update: {e}\n{}", a.log_tail(20)));
    serial = serial.wrapping_add(1);
    let want = axfr_records(primary.addr, ZONE, &key).expect("AXFR from the primary");
    assert!(
        want.iter().any(|l| l.starts_with("fwd.example.com.")),
        "the primary has the forwarded record"
    );
    for p in [&a, &b] {
        converged(p, serial, &want, &key, CONVERGE).unwrap_or_else(|e| panic!("{e}"));
    }
    assert!(a.log().contains("forwarded to"), "the forwarding is logged");

    // kill -9, restart: the same serial at once, no transfer.
    let transfers = a.tap.full() + a.tap.incremental();
    a.kill9();
    a.restart().unwrap_or_else(|e| panic!("restart A: {e}"));
    assert_eq!(
        soa_serial(a.addr, ZONE),
        Some(serial),
        "A serves its serial right after the restart:\n{}",
        a.log_tail(30)
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        a.tap.full() + a.tap.incremental(),
        transfers,
        "no transfer after the restart (the state holds the serial)"
    );
    converged(&a, serial, &want, &key, Duration::from_secs(1))
        .unwrap_or_else(|e| panic!("A's contents after the restart: {e}"));

    // Knot's history gone while A is down: A's IXFR is answered
    // AXFR-style, A takes the whole zone; B follows.
    a.kill9();
    nsupdate(primary.addr, ZONE, &key, &updates[11]).unwrap_or_else(|e| panic!("{e}"));
    primary
        .knotc(&["zone-purge", "-f", ZONE, "+journal"])
        .unwrap_or_else(|e| panic!("knotc: {e}"));
    nsupdate(primary.addr, ZONE, &key, &updates[12]).unwrap_or_else(|e| panic!("{e}"));
    serial = serial.wrapping_add(2);
    let full_before = a.tap.full();
    a.restart().unwrap_or_else(|e| panic!("restart A: {e}"));
    let want = axfr_records(primary.addr, ZONE, &key).expect("AXFR from the primary");
    for p in [&a, &b] {
        converged(p, serial, &want, &key, CONVERGE).unwrap_or_else(|e| panic!("{e}"));
    }
    assert!(
        a.tap.full() > full_before,
        "A took the whole zone after Knot's history was dropped:\n{}",
        a.log_tail(20)
    );

    // A power loss just after A took a zone whole: its state, written
    // without a sync (the primary has the zone), cut short. A says so,
    // starts with nothing and transfers the zone again.
    a.kill9();
    let states: Vec<PathBuf> = std::fs::read_dir(a.dir().join("journal"))
        .expect("A's journal folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "state"))
        .collect();
    assert_eq!(states.len(), 1, "A's state: {states:?}");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&states[0])
        .and_then(|f| f.set_len(10))
        .expect("state cut short");
    let full_before = a.tap.full();
    a.restart().unwrap_or_else(|e| panic!("restart A: {e}"));
    converged(&a, serial, &want, &key, CONVERGE).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        a.tap.full() > full_before && a.log().contains("the zone is transferred again"),
        "A took the zone again after its state was cut short:\n{}",
        a.log_tail(20)
    );

    // The wrong key: never served (SERVFAIL), nothing transferred.
    let bad = key.with_secret("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
    let c = Peer::start_lode(ZONE, primary.addr, &bad, ports[5], ports[6], &[])
        .unwrap_or_else(|e| panic!("lode secondary C: {e}"));
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        soa_serial(c.addr, ZONE),
        None,
        "C (wrong key) serves nothing"
    );
    assert_eq!(c.tap.full() + c.tap.incremental(), 0);
    assert!(
        c.log().contains("TSIG") || c.log().contains("NOTAUTH"),
        "C logs why:\n{}",
        c.log_tail(20)
    );
}

/// Catalog zones (RFC 9432) with Lode as the producer: a catalog generated
/// from two member zones, served to a Knot consumer and to a Lode consumer,
/// which then serve both members (transferred from Lode); a third member
/// added to Lode's configuration and `lode reload` reaches both by IXFR of
/// the catalog, and they serve it too; a member removed disappears from
/// both (the Lode consumer purges its files), the others stay.
#[test]
fn lode_catalog_producer_to_knot_and_lode_consumers() {
    if !programs_present() {
        return;
    }
    let key = TsigKey::test_key();
    let dir = TempDir::new("xfr-catalog");
    let ports = distinct_ports(5, &[]);
    let knot_addr = SocketAddr::from(([127, 0, 0, 1], ports[1]));
    let lode_consumer_addr = SocketAddr::from(([127, 0, 0, 1], ports[3]));
    let members = ["m1.example.", "m2.example.", "m3.example."];
    for m in members {
        std::fs::write(
            dir.0.join(format!("{m}zone")),
            format!("$ORIGIN {m}\n$TTL 300\n@ SOA ns hostmaster 1 5 2 604800 300\n@ NS ns\nns A 192.0.2.53\nwww A 192.0.2.1\n"),
        )
        .unwrap();
    }
    let config = |n: usize| {
        let mut c = format!(
            "journal-dir = \"journal\"\ncontrol = \"{}\"\n\n[[key]]\nid = \"{}\"\nalgorithm = \"{}\"\nsecret = \"{}\"\n\n\
             [[acl]]\nid = \"xfr\"\nkey = [\"{}\"]\naction = [\"transfer\"]\n\n\
             [[remote]]\nid = \"knot\"\naddress = [\"{}@{}\"]\nkey = \"{}\"\n\n\
             [[remote]]\nid = \"lode\"\naddress = [\"{}@{}\"]\nkey = \"{}\"\n\n\
             [[zone]]\nname = \"catalog.example.\"\ncatalog-role = \"generate\"\nacl = [\"xfr\"]\nnotify = [\"knot\", \"lode\"]\n\n",
            dir.0.join("ctl.sock").display(),
            key.name, key.algorithm, key.secret, key.name,
            knot_addr.ip(), knot_addr.port(), key.name,
            lode_consumer_addr.ip(), lode_consumer_addr.port(), key.name
        );
        for m in &members[..n] {
            c.push_str(&format!(
                "[[zone]]\nname = \"{m}\"\nfile = \"{m}zone\"\nacl = [\"xfr\"]\nnotify = [\"knot\"]\ncatalog-zone = \"catalog.example.\"\ncatalog-group = \"g-{m}\"\n\n"
            ));
        }
        std::fs::write(dir.0.join("lode.toml"), c).unwrap();
    };
    config(2);
    let lode_log = dir.0.join("lode.log");
    let lode = common::start_lode_config(
        &dir.0.join("lode.toml"),
        ports[0],
        &lode_log,
        // (The catalog answers only those that may transfer it.)
        &["m1.example."],
    )
    .unwrap_or_else(|e| panic!("lode: {e}"));
    let knot =
        Peer::start_knot_catalog_consumer("catalog.example.", lode.addr, &key, ports[1], ports[2])
            .unwrap_or_else(|e| panic!("knot consumer: {e}"));
    let consumer =
        Peer::start_lode_catalog_consumer("catalog.example.", lode.addr, &key, ports[3], ports[4])
            .unwrap_or_else(|e| panic!("lode consumer: {e}"));
    for p in [&knot, &consumer] {
        for m in &members[..2] {
            wait_serial(p.addr, m, 1, Duration::from_secs(20)).unwrap_or_else(|e| {
                panic!("{} serves member {m}: {e}\n{}", p.label(), p.log_tail(30))
            });
        }
        assert_eq!(
            soa_serial(p.addr, members[2]),
            None,
            "m3 is not a member yet"
        );
    }
    // A catalog zone answers queries only over TCP, from those its ACL
    // lets transfer it (here: with the key), with no EDNS EXPIRE (it cannot
    // expire) — the producer and both consumers, Knot's among them; a
    // member tells its EXPIRE.
    let kdig = |addr: SocketAddr, tcp: bool, signed: bool| {
        let mut c = std::process::Command::new("kdig");
        c.arg(format!("@{}", addr.ip())).args([
            "-p",
            &addr.port().to_string(),
            "+ednsopt=9",
            if tcp { "+tcp" } else { "+notcp" },
            "catalog.example.",
            "SOA",
        ]);
        if signed {
            c.args(["-y", &key.y_arg()]);
        }
        let out = c.output().expect("kdig");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for addr in [lode.addr, knot.addr, consumer.addr] {
        for (tcp, signed) in [(false, false), (false, true), (true, false)] {
            let a = kdig(addr, tcp, signed);
            assert!(
                a.contains("status: REFUSED"),
                "{addr} tcp {tcp} signed {signed}: {a}"
            );
            assert!(a.contains("EDE: 20"), "{addr}: {a}");
        }
        let a = kdig(addr, true, true);
        assert!(a.contains("status: NOERROR"), "{addr}: {a}");
        assert!(!a.contains("EXPIRE"), "{addr}: {a}");
    }
    assert!(
        expire_option(consumer.addr, members[0]).is_some(),
        "a member tells it"
    );

    // A third member: reload; the catalog's serial moves, Knot adds m3.
    config(3);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["reload", "--control"])
        .arg(dir.0.join("ctl.sock"))
        .output()
        .expect("lode reload");
    assert!(
        out.status.success(),
        "reload: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for p in [&knot, &consumer] {
        wait_serial(p.addr, members[2], 1, Duration::from_secs(20)).unwrap_or_else(|e| {
            panic!(
                "{} serves the new member: {e}\n{}",
                p.label(),
                p.log_tail(30)
            )
        });
    }
    let contents =
        axfr_records(consumer.addr, members[2], &key).expect("AXFR of m3 from the Lode consumer");
    assert_eq!(
        contents,
        axfr_records(lode.addr, members[2], &key).expect("AXFR of m3 from the producer")
    );
    // (The catalog answers only TCP queries it lets transfer it: its SOA
    // from an AXFR.)
    let cat_serial = axfr_records(lode.addr, "catalog.example.", &key)
        .expect("catalog served")
        .iter()
        .find(|r| r.contains("\tSOA\t") || r.contains(" SOA "))
        .and_then(|r| r.split_whitespace().nth(6)?.parse::<u32>().ok())
        .expect("its SOA serial");
    assert!(
        cat_serial > 1,
        "the catalog's serial moved on ({cat_serial})"
    );

    // A member removed: Knot drops it. (`lode reload --config` finds the
    // control socket in the configuration file.)
    config(1);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["reload", "--config"])
        .arg(dir.0.join("lode.toml"))
        .output()
        .expect("lode reload");
    assert!(
        out.status.success(),
        "reload: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while soa_serial(knot.addr, members[1]).is_some() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        soa_serial(knot.addr, members[1]),
        None,
        "m2 removed from Knot:\n{}",
        knot.log_tail(30)
    );
    assert!(
        soa_serial(knot.addr, members[0]).is_some(),
        "m1 still served"
    );
}

/// The EDNS EXPIRE option of `addr`'s answer to `zone` SOA with EXPIRE
/// asked (None: no answer, or no option in it).
fn expire_option(addr: SocketAddr, zone: &str) -> Option<u32> {
    let mut q = common::Query::new(zone, 6, 1);
    q.edns = Some(common::Edns {
        size: 1232,
        options: vec![(9, Vec::new())],
        ..common::Edns::default()
    });
    let r = common::udp_exchange(addr, &q.to_wire(), Duration::from_millis(500))?;
    let m = common::Message::parse(&r);
    let opt = m.opts.first()?;
    let (_, data) = opt.options.iter().find(|(code, _)| *code == 9)?;
    Some(u32::from_be_bytes(data.as_slice().try_into().ok()?))
}

/// Catalog zones with Knot as the producer (`catalog-role: generate`) and
/// Lode as the consumer: both members Knot lists are served by Lode, with
/// Knot's contents.
#[test]
fn knot_catalog_producer_to_lode_consumer() {
    if !programs_present() {
        return;
    }
    let key = TsigKey::test_key();
    let dir = TempDir::new("xfr-knot-catalog");
    let ports = distinct_ports(3, &[]);
    let consumer_addr = SocketAddr::from(([127, 0, 0, 1], ports[1]));
    let names = ["k1.example.", "k2.example."];
    let text = |m: &str| {
        format!("$ORIGIN {m}\n$TTL 300\n@ SOA ns hostmaster 7 5 2 604800 300\n@ NS ns\nns A 192.0.2.53\nwww A 192.0.2.7\n")
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
    let consumer =
        Peer::start_lode_catalog_consumer("catalog.example.", knot.addr, &key, ports[1], ports[2])
            .unwrap_or_else(|e| panic!("lode consumer: {e}"));
    for m in names {
        wait_serial(consumer.addr, m, 7, Duration::from_secs(20))
            .unwrap_or_else(|e| panic!("lode serves {m}: {e}\n{}", consumer.log_tail(30)));
        assert_eq!(
            axfr_records(consumer.addr, m, &key).expect("AXFR from the consumer"),
            axfr_records(knot.addr, m, &key).expect("AXFR from Knot"),
            "{m}: the consumer serves Knot's contents"
        );
    }
}

/// Expiry: a Lode secondary whose primary goes away answers
/// SERVFAIL once the SOA expire time (4 s here) has passed without a
/// successful refresh, as Knot does, says so in `lode zone-status`, and
/// serves again as soon as the primary is back.
#[test]
fn lode_secondary_expires_and_recovers() {
    if !programs_present() {
        return;
    }
    let key = TsigKey::test_key();
    let dir = TempDir::new("xfr-expire");
    let zone_file = dir.0.join("example.com.zone");
    std::fs::write(
        &zone_file,
        "$ORIGIN example.com.\n$TTL 60\n@ SOA ns1 hostmaster 1 2 2 4 60\n@ NS ns1\nns1 A 192.0.2.53\nwww A 192.0.2.1\n",
    )
    .unwrap();
    let ports = distinct_ports(3, &[]);
    let a_addr = SocketAddr::from(([127, 0, 0, 1], ports[1]));
    let mut primary = Primary::start_knot(ZONE, &zone_file, &key, &[a_addr], ports[0])
        .unwrap_or_else(|e| panic!("primary: {e}"));
    let a = Peer::start_lode(ZONE, primary.addr, &key, ports[1], ports[2], &[])
        .unwrap_or_else(|e| panic!("lode secondary: {e}"));
    wait_serial(a.addr, ZONE, 1, Duration::from_secs(15))
        .unwrap_or_else(|e| panic!("initial transfer: {e}\n{}", a.log_tail(20)));
    // EDNS EXPIRE (RFC 7314): the primary tells its SOA EXPIRE (4 s), the
    // secondary what it has left of it (Knot DNS answers both so).
    let expire_of = |addr: SocketAddr| expire_option(addr, ZONE);
    assert_eq!(expire_of(primary.addr), Some(4), "Knot, the primary");
    let left = expire_of(a.addr);
    assert!(left.is_some_and(|l| l <= 4), "the secondary: {left:?}");
    let rcode = || {
        common::udp_exchange(
            a.addr,
            &common::Query::new(ZONE, 6, 1).to_wire(),
            Duration::from_millis(500),
        )
        .map(|r| common::Message::parse(&r).rcode())
    };
    primary.stop();
    let deadline = Instant::now() + Duration::from_secs(15);
    while rcode() != Some(2) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        rcode(),
        Some(2),
        "SERVFAIL after expiry:\n{}",
        a.log_tail(20)
    );
    let status = a
        .lode_control(&["zone-status", ZONE])
        .unwrap_or_else(|e| panic!("zone-status: {e}"));
    assert!(status.contains("EXPIRED"), "zone-status: {status}");
    let _primary = Primary::start_knot(ZONE, &zone_file, &key, &[a_addr], ports[0])
        .unwrap_or_else(|e| panic!("primary again: {e}"));
    wait_serial(a.addr, ZONE, 1, Duration::from_secs(15))
        .unwrap_or_else(|e| panic!("served again: {e}\n{}", a.log_tail(20)));
}

/// A NOTIFY lost behind a retry: a Lode primary and a Lode secondary; the
/// secondary is stopped, the primary updated (its NOTIFYs go unanswered, at
/// 0, 1, 3, 7 and 15 s), the secondary started again once the last try has
/// gone out (its next SOA refresh is an hour away), and the primary updated
/// once more: the NOTIFY of that newer serial must reach the secondary at
/// once, and it transfers both changes. That NOTIFY used to wait behind the
/// older serial's last try and be given up with it ~16 s later, leaving the
/// secondary stale until its SOA refresh. About 20 s.
#[test]
fn notify_of_a_newer_serial_not_lost_behind_given_up_retries() {
    if !programs_present() {
        return;
    }
    let key = TsigKey::test_key();
    let dir = TempDir::new("xfr-notify-retry");
    let zone_file = dir.0.join("example.com.zone");
    std::fs::write(
        &zone_file,
        "$ORIGIN example.com.\n$TTL 60\n@ SOA ns1 hostmaster 1 3600 600 604800 60\n\
         @ NS ns1\nns1 A 192.0.2.53\nwww A 192.0.2.1\n",
    )
    .unwrap();
    let ports = distinct_ports(3, &[]);
    let secondary_addr = SocketAddr::from(([127, 0, 0, 1], ports[1]));
    let primary = Primary::start_lode(ZONE, &zone_file, &key, &[secondary_addr], ports[0])
        .unwrap_or_else(|e| panic!("primary: {e}"));
    let mut secondary = Peer::start_lode(ZONE, primary.addr, &key, ports[1], ports[2], &[])
        .unwrap_or_else(|e| panic!("lode secondary: {e}"));
    wait_serial(secondary.addr, ZONE, 1, Duration::from_secs(15))
        .unwrap_or_else(|e| panic!("initial transfer: {e}\n{}", secondary.log_tail(20)));

    secondary.stop();
    nsupdate(
        primary.addr,
        ZONE,
        &key,
        "update add a.example.com. 60 A 192.0.2.10",
    )
    .unwrap_or_else(|e| panic!("first update: {e}"));
    let updated = Instant::now();
    // The fifth and last try goes out 15 s after the first.
    std::thread::sleep(Duration::from_millis(15_500).saturating_sub(updated.elapsed()));
    secondary
        .restart()
        .unwrap_or_else(|e| panic!("secondary again: {e}"));

    nsupdate(
        primary.addr,
        ZONE,
        &key,
        "update add b.example.com. 60 A 192.0.2.11",
    )
    .unwrap_or_else(|e| panic!("second update: {e}"));
    // Well before the older serial's tries end (31 s after the first update).
    let limit = Duration::from_secs(28).saturating_sub(updated.elapsed());
    wait_serial(secondary.addr, ZONE, 3, limit.max(Duration::from_secs(3))).unwrap_or_else(|e| {
        panic!(
            "NOTIFY of the newer serial: {e}\nprimary:\n{}\nsecondary:\n{}",
            primary.log_tail(20),
            secondary.log_tail(20)
        )
    });
}

/// A NOTIFY in flight when the primary is killed is sent again when it
/// starts; one every target answered is not. The target is a socket of
/// this test that answers when told to. Found by the fleet simulator
/// (`crates/control/tests/sim.rs`, a primary crash between a NOTIFY's
/// tries): the restarted primary's NOTIFY machine started empty and the
/// secondary stayed stale until its SOA refresh. About 10 s.
#[test]
fn a_notify_in_flight_at_a_kill_is_sent_again_at_start() {
    if !programs_present() {
        return;
    }
    let key = TsigKey::test_key();
    let dir = TempDir::new("xfr-notify-restart");
    let zone_file = dir.0.join("example.com.zone");
    std::fs::write(
        &zone_file,
        "$ORIGIN example.com.\n$TTL 60\n@ SOA ns1 hostmaster 1 3600 600 604800 60\n\
         @ NS ns1\nns1 A 192.0.2.53\n",
    )
    .unwrap();
    let target = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let target_addr = target.local_addr().unwrap();
    let ports = distinct_ports(1, &[target_addr.port()]);
    // The serial of the next NOTIFY to arrive within `wait`, answered
    // NOERROR when `answer`.
    let next_notify = |wait: Duration, answer: bool| -> Option<u32> {
        let until = Instant::now() + wait;
        let mut buf = [0u8; 4096];
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            target
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .unwrap();
            let Ok((n, from)) = target.recv_from(&mut buf) else {
                continue;
            };
            let msg = &buf[..n];
            if n < 12 || (msg[2] >> 3) & 0xF != 4 {
                continue; // not a NOTIFY
            }
            if answer {
                // The header with QR set, no answer section, and the
                // question copied (the TSIG record left off: the primary
                // takes the answer of a known ID from the target).
                let mut reply = msg.to_vec();
                reply[2] |= 0x80;
                reply[6..12].fill(0);
                let q_end = question_end(msg).unwrap_or(12);
                reply.truncate(q_end);
                let _ = target.send_to(&reply, from);
            }
            return soa_serial_in_notify(msg);
        }
        None
    };
    let mut primary = Primary::start_lode(ZONE, &zone_file, &key, &[target_addr], ports[0])
        .unwrap_or_else(|e| panic!("primary: {e}"));
    // First start: nothing delivered yet, so serial 1 is told; answered.
    assert_eq!(next_notify(Duration::from_secs(5), true), Some(1));
    nsupdate(
        primary.addr,
        ZONE,
        &key,
        "update add a.example.com. 60 A 192.0.2.10",
    )
    .unwrap_or_else(|e| panic!("update: {e}"));
    // Serial 2 is told, and not answered: killed with it in flight.
    assert_eq!(next_notify(Duration::from_secs(5), false), Some(2));
    primary
        .kill9_and_restart()
        .unwrap_or_else(|e| panic!("restart: {e}"));
    let again = next_notify(Duration::from_secs(5), true);
    assert_eq!(
        again,
        Some(2),
        "serial 2 told again at start\n{}",
        primary.log_tail(20)
    );
    // Delivered now (the primary keeps it): the next start tells nothing.
    std::thread::sleep(Duration::from_millis(500));
    primary
        .kill9_and_restart()
        .unwrap_or_else(|e| panic!("restart: {e}"));
    let none = next_notify(Duration::from_secs(3), true);
    assert_eq!(
        none,
        None,
        "nothing to tell at start\n{}",
        primary.log_tail(20)
    );
}

/// Where the name at `i` of `msg` ends (labels, then a root or a pointer).
fn skip_name(msg: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let len = *msg.get(i)?;
        if len & 0xC0 == 0xC0 {
            return Some(i + 2);
        }
        i += 1 + len as usize;
        if len == 0 {
            return Some(i);
        }
    }
}

/// The end of the question section of `msg` (one question).
fn question_end(msg: &[u8]) -> Option<usize> {
    Some(skip_name(msg, 12)? + 4)
}

/// The SOA serial a NOTIFY carries in its answer section.
fn soa_serial_in_notify(msg: &[u8]) -> Option<u32> {
    if u16::from_be_bytes([msg[6], msg[7]]) == 0 {
        return None;
    }
    // Owner, type, class, TTL, length; then MNAME and RNAME.
    let rdata = skip_name(msg, question_end(msg)?)? + 10;
    let serial_at = skip_name(msg, skip_name(msg, rdata)?)?;
    Some(u32::from_be_bytes(
        msg.get(serial_at..serial_at + 4)?.try_into().ok()?,
    ))
}
