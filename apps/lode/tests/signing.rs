//! Lode signs a zone: every version it publishes is checked whole
//! by two independent verifiers, and answers validate at a real resolver.
//!
//! A zone with a delegation (glue, DS), an unsigned delegation, an empty
//! non-terminal, a wildcard and a DNAME is served with `dnssec-signing`:
//!
//! - after the first load (keys made, the zone signed whole), after each of
//!   a sequence of random updates (knsupdate: adds, deletes, new cuts, cuts
//!   taken away, ENTs, wildcards), after the zone file is edited and
//!   reloaded, after a restart (nothing signed again) and after `kill -9`,
//!   the zone taken by AXFR passes `ldns-verify-zone`, BIND's
//!   `dnssec-verify` and Knot's `kzonecheck --dnssec on`;
//! - unbound, with the zone's DS as its trust anchor, answers existing names,
//!   NXDOMAIN and NODATA with AD (validated) before and after updates.
//!
//! The tools come from `ldnsutils`, `bind9-utils`, `knot-dnssecutils` and `unbound`, which the
//! test command installs (`LODE_REQUIRE_DNSSEC_TOOLS=1`).

mod common;

use common::dnssec::{ask as ask_port, tools_present, validated_as, verify_axfr, Unbound};
use common::*;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const KEY: &str = "hmac-sha256:sign-key.:c2lnbmluZy10ZXN0LWtleS0zMi1ieXRlcy0tLS0tLQ==";

/// The test zone (also the signer fuzz target's and the Knot comparison's).
const ZONE: &str = include_str!("../../../tests/dnssec/example.zone");

/// The zone by AXFR into `dir/axfr.txt`, checked by the three verifiers; its serial.
fn verify(dir: &Path, port: u16, when: &str) -> u32 {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    verify_axfr(dir, addr, "example.", None, when)
}

/// Sends one update (knsupdate lines between `zone` and `send`); true if it
/// was taken.
fn update(port: u16, lines: &str) -> bool {
    common::dnssec::knsupdate(port, KEY, "example.", lines).is_ok()
}

/// The configuration, `policy` added to the `[[policy]]` table.
fn config_with(dir: &Path, policy: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("example.zone"), ZONE).unwrap();
    let secret = KEY.rsplit(':').next().unwrap();
    let control = dir.join("lode.sock").display().to_string();
    let conf = format!(
        "journal-dir = \"journal\"\ncontrol = \"{control}\"\n\
         [[key]]\nid = \"sign-key.\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{secret}\"\n\
         [[acl]]\nid = \"upd\"\nkey = [\"sign-key.\"]\naction = [\"update\"]\n\
         [[acl]]\nid = \"xfr\"\naction = [\"transfer\"]\n\
         [[policy]]\nid = \"fast\"\nsigning-threads = 2\n{policy}\
         [[zone]]\nname = \"example.\"\nfile = \"example.zone\"\nacl = [\"upd\", \"xfr\"]\n\
         dnssec-signing = true\ndnssec-policy = \"fast\"\n"
    );
    let path = dir.join("lode.toml");
    std::fs::write(&path, conf).unwrap();
    path
}

/// `lode COMMAND example.` against the server's control socket in `dir`:
/// whether it succeeded, and what it printed.
fn control(dir: &Path, command: &str) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args([command, "example.", "--control"])
        .arg(dir.join("lode.sock"))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

/// The DS of the zone's KSK, as `lode` logged it.
fn ds_from_log(log: &str) -> String {
    log.lines()
        .find_map(|l| l.split("DS for the parent: ").nth(1))
        .expect("the KSK's DS in the log")
        .trim()
        .to_string()
}

fn start_unbound(dir: &Path, lode_port: u16, ds: &str) -> Unbound {
    common::dnssec::start_unbound(
        dir,
        (16850, 16869),
        ds,
        &[("example.", lode_port)],
        |port| ask_port(port, "ns.example.", "A").contains("status"),
    )
}

fn ask(u: &Unbound, name: &str, rtype: &str) -> String {
    ask_port(u.port, name, rtype)
}

/// The resolver validates: AD and the expected status. (An NXDOMAIN from
/// an opt-out zone is proven by an opt-out NSEC3: insecure, no AD — RFC
/// 5155 §9.2; see [`covered`].)
fn validated(u: &Unbound, name: &str, rtype: &str, status: &str) {
    let text = ask(u, name, rtype);
    assert!(
        validated_as(&text, status),
        "{name} {rtype}: expected {status} with AD\n{text}"
    );
}

/// An answer proven by a covering NSEC3 (NXDOMAIN, wildcard): validated
/// (AD), or for an opt-out zone at least not bogus (the status, not SERVFAIL).
fn covered(u: &Unbound, name: &str, rtype: &str, status: &str, opt_out: bool) {
    if !opt_out {
        return validated(u, name, rtype, status);
    }
    let text = ask(u, name, rtype);
    assert!(
        text.contains(&format!("status: {status}")),
        "{name}: {status} expected\n{text}"
    );
}

#[test]
fn a_signed_zone_verifies_after_every_change_restart_and_kill9_and_validates() {
    scenario("nsec", "");
}

#[test]
fn an_nsec3_zone_verifies_after_every_change_restart_and_kill9_and_validates() {
    scenario("nsec3", "nsec3 = true\nnsec3-salt-length = 8\n");
}

#[test]
fn an_nsec3_opt_out_zone_verifies_after_every_change_restart_and_kill9_and_validates() {
    scenario("optout", "nsec3 = true\nnsec3-opt-out = true\n");
}

#[test]
fn an_rsa_zone_with_keys_made_here_verifies_after_every_change_restart_and_kill9_and_validates() {
    scenario("rsa", "algorithm = \"rsasha256\"\nksk-size = 3072\n");
}

/// The whole life of a signed zone under `policy` (lines of `[[policy]]`).
fn scenario(tag: &str, policy: &str) {
    if !tools_present() {
        return;
    }
    let dir = TempDir::new(&format!("signing-{tag}"));
    let conf = config_with(&dir.0, policy);
    let port = pick_port_in(16820, 16849);
    let server = start_lode_config(&conf, port, &dir.0.join("lode-0.log"), &["example."])
        .unwrap_or_else(|e| panic!("lode did not start: {e}"));
    let log = server.log();
    assert!(log.contains("signed whole"), "{log}");
    let first = verify(&dir.0, port, "first load");
    let axfr = std::fs::read_to_string(dir.0.join("axfr.txt")).unwrap();
    let chain = if policy.contains("nsec3") {
        "NSEC3PARAM"
    } else {
        "\tNSEC\t"
    };
    assert!(axfr.contains(chain), "{chain} expected\n{axfr}");
    assert_eq!(
        first, 2,
        "a first load signs with the next serial (as Knot with its journal)"
    );
    let key_dir = dir.0.join("journal/keys/example");
    for entry in std::fs::read_dir(&key_dir).unwrap() {
        use std::os::unix::fs::PermissionsExt as _;
        let path = entry.unwrap().path();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        if path.extension().is_some_and(|x| x == "key") {
            // As BIND's: the public key, to publish.
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(
                text.contains(" IN DNSKEY ") && !text.contains("pkcs8"),
                "{text}"
            );
        } else {
            assert_eq!(mode & 0o077, 0, "{}: private", path.display());
        }
    }

    let ds = ds_from_log(&log);
    let unbound = start_unbound(&dir.0, port, &ds);
    validated(&unbound, "www.example.", "A", "NOERROR");
    let opt_out = policy.contains("opt-out");
    covered(&unbound, "nothing.b.c.example.", "A", "NXDOMAIN", opt_out); // below an ENT
    covered(&unbound, "anything.example.", "TXT", "NOERROR", opt_out); // the wildcard
    validated(&unbound, "www.example.", "TXT", "NOERROR"); // NODATA
    validated(&unbound, "sub.example.", "DS", "NOERROR");

    // A random sequence of updates, each verified whole.
    let names = [
        "new", "x.new", "y.x.new", "b.c", "c", "in.sub", "z", "q.z", "w", "*.w", "deep.e.f",
    ];
    let mut rng = Rng::new(18);
    let mut taken = 0;
    let mut last = first;
    for step in 0..40 {
        let name = format!("{}.example.", names[rng.below(names.len())]);
        let lines = match rng.below(7) {
            0 => format!("update add {name} 300 NS ns.example."),
            1 => format!("update delete {name} NS"),
            2 => format!("update delete {name}"),
            3 => format!("update add {name} 300 TXT \"t{}\"", rng.below(3)),
            4 => format!("update delete {name} A"),
            _ => format!("update add {name} 300 A 192.0.2.{}", rng.below(3)),
        };
        if update(port, &lines) {
            taken += 1;
        }
        let serial = verify(&dir.0, port, &format!("step {step}: {lines}"));
        assert!(serial >= last, "step {step}: serial went back");
        last = serial;
    }
    assert!(taken >= 30, "{taken} of 40 updates taken");
    assert!(last > first + 10, "serial {first} → {last}");
    // A name added now is validated as the resolver asks for it.
    assert!(update(port, "update add fresh.example. 300 A 192.0.2.44"));
    validated(&unbound, "fresh.example.", "A", "NOERROR");
    covered(&unbound, "nope.fresh.example.", "A", "NXDOMAIN", opt_out);

    // The zone file edited (a record added, the serial as it was): the
    // difference is signed; nothing else changes. The server's own write
    // of the file after the last update is waited for first (zone-flush),
    // else it could land after the edit and undo it.
    let (flushed, out) = control(&dir.0, "zone-flush");
    assert!(flushed, "zone-flush: {out}");
    let file = dir.0.join("example.zone");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("from-file.example. 300 IN A 192.0.2.123\n");
    std::fs::write(&file, text).unwrap();
    drop(server);
    let mut server = start_lode_config(&conf, port, &dir.0.join("lode-1.log"), &["example."])
        .unwrap_or_else(|e| panic!("lode did not start again: {e}"));
    let log1 = server.log();
    assert!(
        !log1.contains("signed whole"),
        "a restart signs nothing again\n{log1}"
    );
    let after_file = verify(&dir.0, port, "zone file edited");
    assert!(after_file > last);
    let axfr = std::fs::read_to_string(dir.0.join("axfr.txt")).unwrap();
    assert!(axfr.contains("from-file.example."), "{axfr}");
    validated(&unbound, "from-file.example.", "A", "NOERROR");

    // The operator's unsigned file back, one name more, and a reload
    // (SIGHUP): the difference leaves the signer's records alone — the
    // zone is the file's names, signed, with a serial past the served one.
    std::fs::write(
        &file,
        format!("{ZONE}from-reload.example. 300 IN A 192.0.2.124\n"),
    )
    .unwrap();
    let hup = Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let serial = verify(&dir.0, port, "reloaded");
        let axfr = std::fs::read_to_string(dir.0.join("axfr.txt")).unwrap();
        if axfr.contains("from-reload.example.") {
            assert!(serial > after_file, "serial {after_file} → {serial}");
            assert!(
                !axfr.contains("fresh.example."),
                "the file is the truth\n{axfr}"
            );
            assert!(axfr.contains("RRSIG\tDNSKEY"), "{axfr}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the reload was not taken\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    validated(&unbound, "from-reload.example.", "A", "NOERROR");

    // `lode zone-sign`: every signature made anew, the next serial.
    let before = verify(&dir.0, port, "before zone-sign");
    std::thread::sleep(Duration::from_millis(1100)); // new validity times
    let (ok, said) = control(&dir.0, "zone-sign");
    assert!(ok && said.contains("signed whole"), "{said}");
    let old_sigs = expirations(&std::fs::read_to_string(dir.0.join("axfr.txt")).unwrap());
    let resigned = verify(&dir.0, port, "after zone-sign");
    assert!(resigned > before, "serial {before} → {resigned}");
    let new_sigs = expirations(&std::fs::read_to_string(dir.0.join("axfr.txt")).unwrap());
    let newest_old = old_sigs.iter().max().unwrap();
    assert!(new_sigs.iter().all(|e| e > newest_old), "{said}");
    validated(&unbound, "www.example.", "A", "NOERROR");
    let (_, status) = control(&dir.0, "zone-status");
    let chain_name = if policy.contains("nsec3") {
        "NSEC3"
    } else {
        "NSEC"
    };
    assert!(
        status.contains(&format!("dnssec: signed, {chain_name}"))
            && status.contains("KSK")
            && status.contains("SOA signature expires in"),
        "{status}"
    );

    // Acknowledged updates survive kill -9, signed.
    for i in 0..5 {
        assert!(update(
            port,
            &format!("update add k{i}.example. 300 A 192.0.2.{i}")
        ));
    }
    server.kill9();
    let _server = start_lode_config(&conf, port, &dir.0.join("lode-2.log"), &["example."])
        .unwrap_or_else(|e| panic!("lode did not start after kill -9: {e}"));
    verify(&dir.0, port, "after kill -9");
    let axfr = std::fs::read_to_string(dir.0.join("axfr.txt")).unwrap();
    for i in 0..5 {
        assert!(
            axfr.contains(&format!("k{i}.example.")),
            "k{i} lost\n{axfr}"
        );
    }
    validated(&unbound, "k4.example.", "A", "NOERROR");
}

/// Unix seconds of a time written YYYYMMDDHHmmSS (RFC 4034 §3.2, UTC).
fn unix_time(t: u64) -> u64 {
    let (date, time) = (t / 1_000_000, t % 1_000_000);
    let (y, m, d) = (date / 10_000, date / 100 % 100, date % 100);
    // Days from 1970-01-01 of a civil date (March-based years).
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let days = 365 * y + y / 4 - y / 100 + y / 400 + (153 * m + 2) / 5 + d - 1 - 719_468;
    days * 86_400 + time / 10_000 * 3_600 + time / 100 % 100 * 60 + time % 100
}

/// The signature expirations in an AXFR text, and the serial.
fn expirations(text: &str) -> Vec<u64> {
    text.lines()
        .filter(|l| l.split_whitespace().nth(3) == Some("RRSIG"))
        .filter_map(|l| l.split_whitespace().nth(8)?.parse().ok())
        .collect()
}

#[test]
fn signatures_are_made_again_before_they_expire() {
    if !tools_present() {
        return;
    }
    // Signatures valid 20 s, made again 15 s before they expire: due 5 s
    // after they were made.
    let dir = TempDir::new("resign");
    let conf = config_with(&dir.0, "rrsig-lifetime = 20\nrrsig-refresh = 15\n");
    let port = pick_port_in(16820, 16849);
    let _server = start_lode_config(&conf, port, &dir.0.join("lode.log"), &["example."])
        .unwrap_or_else(|e| panic!("lode did not start: {e}"));
    let first = verify(&dir.0, port, "first load");
    let signed_at = expirations(&std::fs::read_to_string(dir.0.join("axfr.txt")).unwrap());
    assert!(!signed_at.is_empty());
    // Past the first signatures' expiry: every signature was made again,
    // through the journal (the serial moved), and the zone verifies (the
    // verifiers check validity against the clock).
    std::thread::sleep(Duration::from_secs(22));
    let later = verify(&dir.0, port, "22 s later");
    assert!(later > first, "serial {first} → {later}");
    let again = expirations(&std::fs::read_to_string(dir.0.join("axfr.txt")).unwrap());
    let oldest_then = signed_at.iter().max().unwrap();
    assert!(
        again.iter().all(|e| e > oldest_then),
        "signatures not made again: {again:?} vs {signed_at:?}"
    );
    // The schedule as zone-status and the metrics show it: signatures made,
    // the next refresh ahead, the earliest expiry at or before the
    // earliest one served (a pass may have read older ones).
    let (_, status) = control(&dir.0, "zone-status");
    // The next pass is ahead, or due a moment ago on a loaded machine
    // (the pool runs it late, never skips it).
    let next = status
        .split("signatures made since start; next made again ")
        .nth(1)
        .unwrap_or_else(|| panic!("no signing schedule: {status}"));
    let overdue = next
        .split(" s ago")
        .next()
        .and_then(|n| n.parse::<u64>().ok());
    assert!(
        next.starts_with("in ") || overdue.is_some_and(|n| n <= 5),
        "{status}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["stats", "--control"])
        .arg(dir.0.join("lode.sock"))
        .output()
        .unwrap();
    let stats = String::from_utf8_lossy(&out.stdout).to_string();
    let metric = |name: &str| -> u64 {
        let line = stats
            .lines()
            .find(|l| l.starts_with(&format!("{name}{{zone=\"example.\"}}")))
            .unwrap_or_else(|| panic!("no {name}\n{stats}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let made = metric("lode_zone_dnssec_signatures_total");
    assert!(made as usize >= signed_at.len() * 2, "{made} made\n{stats}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let next = metric("lode_zone_dnssec_next_refresh_timestamp_seconds");
    assert!(
        next + 2 >= now && next <= now + 20,
        "next {next}, now {now}"
    );
    let earliest = metric("lode_zone_dnssec_earliest_expiry_timestamp_seconds");
    let served = unix_time(*again.iter().min().unwrap());
    assert!(
        earliest <= served && earliest + 40 >= served,
        "earliest {earliest}, served {served}"
    );
}

/// The NSEC3PARAM salt of the zone in `dir/axfr.txt`.
fn salt_in_axfr(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("axfr.txt")).unwrap();
    text.lines()
        .find(|l| l.split_whitespace().nth(3) == Some("NSEC3PARAM"))
        .and_then(|l| l.split_whitespace().nth(7).map(str::to_string))
        .unwrap_or_else(|| panic!("no NSEC3PARAM:\n{text}"))
}

/// `nsec3-salt-lifetime` (Knot's): a salt is replaced by a new random one
/// when it is that old, the chain made anew in one version, every version
/// verified whole and validated by unbound (cache on) while salts change;
/// the salt's age survives a `kill -9` (no new salt at a restart before
/// its time, one at once after it).
#[test]
fn the_nsec3_salt_is_replaced_after_its_lifetime() {
    if !tools_present() {
        return;
    }
    let dir = TempDir::new("resalt");
    let conf = config_with(
        &dir.0,
        "nsec3 = true\nnsec3-salt-length = 8\nnsec3-salt-lifetime = 6\n",
    );
    let port = pick_port_in(16820, 16849);
    let mut server = start_lode_config(&conf, port, &dir.0.join("lode.log"), &["example."])
        .unwrap_or_else(|e| panic!("lode did not start: {e}"));
    verify(&dir.0, port, "first load");
    let first = salt_in_axfr(&dir.0);
    let unbound = start_unbound(&dir.0, port, &ds_from_log(&server.log()));
    let asked = |u: &Unbound| {
        validated(u, "www.example.", "A", "NOERROR");
        validated(u, "nothing.b.c.example.", "A", "NXDOMAIN"); // below an ENT
        validated(u, "anything.example.", "TXT", "NOERROR"); // the wildcard
        validated(u, "www.example.", "TXT", "NOERROR"); // NODATA
    };
    asked(&unbound);
    // Two lifetimes: at least one new salt; each change validated.
    let mut salts = vec![first.clone()];
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while salts.len() < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "salts {salts:?}:\n{}",
            server.log_tail(20)
        );
        std::thread::sleep(Duration::from_millis(500));
        verify(&dir.0, port, "salt replaced");
        let now = salt_in_axfr(&dir.0);
        if now != *salts.last().unwrap() {
            salts.push(now);
        }
        asked(&unbound);
    }
    let log = server.log();
    assert!(log.contains("NSEC3 salt replaced"), "{log}");
    assert!(log.contains("(new NSEC3 salt)"), "{log}");
    // kill -9 and started again at once: the same salt (not yet due)…
    server.kill9();
    let mut server = start_lode_config(&conf, port, &dir.0.join("lode.log"), &["example."])
        .unwrap_or_else(|e| panic!("lode did not start again: {e}"));
    verify(&dir.0, port, "after kill -9");
    let after = salt_in_axfr(&dir.0);
    assert!(
        after == *salts.last().unwrap() || !salts.contains(&after),
        "an old salt back: {after} in {salts:?}"
    );
    // …and down longer than a lifetime: a new one at the start.
    server.kill9();
    std::thread::sleep(Duration::from_secs(7));
    let server = start_lode_config(&conf, port, &dir.0.join("lode.log"), &["example."])
        .unwrap_or_else(|e| panic!("lode did not start again: {e}"));
    verify(&dir.0, port, "after a long stop");
    let fresh = salt_in_axfr(&dir.0);
    assert!(
        !salts.contains(&fresh) && fresh != after,
        "{fresh}: {salts:?}"
    );
    drop(server);
}
