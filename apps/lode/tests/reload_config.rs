//! A configuration that reloads whole: a TSIG key rotated (same name, new
//! secret) and ACLs changed take effect at once for UPDATE and AXFR on
//! `lode reload`; a configuration with a bad key is refused whole and the
//! running keys stay. The query policy — identity, NSID, cookies, rate
//! limiting, dnstap — changes by reload too, while queries go on.
//!
//! ```text
//!  lode serve (16990-16999) ◀── knsupdate -y / kdig -y AXFR, before and after `lode reload`
//! ```

mod common;

use common::peers::{nsupdate, TsigKey};
use common::*;
use std::path::Path;
use std::process::Command;

const ZONE: &str = "reload.example.";
const OLD: &str = "8+5gjWLaa1vXm1Z8Ah8HPj7mK6pTgfj0n6YJ7Ja4wGU=";
const NEW: &str = "kv2Xz6Ykz0hxbYp3xv1m3FJ0m3Cq1c1QG3mJxC2y5oA=";

fn config(dir: &Path, port: u16, secret: &str, transfer: bool) -> String {
    let actions = if transfer {
        "[\"update\", \"transfer\"]"
    } else {
        "[\"update\"]"
    };
    format!(
        "listen = [\"127.0.0.1:{port}\"]\njournal-dir = \"journal\"\ncontrol = \"{}\"\n\
         [[key]]\nid = \"rot\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{secret}\"\n\
         [[acl]]\nid = \"ops\"\nkey = [\"rot\"]\naction = {actions}\n\
         [[zone]]\nname = \"{ZONE}\"\nfile = \"zone\"\nacl = [\"ops\"]\n",
        dir.join("ctl.sock").display()
    )
}

fn reload(dir: &Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .arg("reload")
        .arg("--control")
        .arg(dir.join("ctl.sock"))
        .output()
        .expect("lode reload");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// `lode serve` with `conf` (written to `dir`/lode.toml) on `port`, and
/// the key its ACL names (`OLD`'s).
fn started(dir: &Path, port: u16, conf: &str) -> (Server, TsigKey) {
    std::fs::write(dir.join("lode.toml"), conf).unwrap();
    let server = start_lode_config(&dir.join("lode.toml"), port, &dir.join("lode.log"), &[ZONE])
        .unwrap_or_else(|e| panic!("{e}"));
    let key = TsigKey {
        name: "rot".into(),
        algorithm: "hmac-sha256".into(),
        secret: OLD.into(),
    };
    (server, key)
}

/// The rcode kdig reports for an AXFR signed with `key` ("NOERROR" when the
/// zone came), from its status line or its error.
fn axfr(addr: std::net::SocketAddr, key: &TsigKey) -> String {
    let out = Command::new("kdig")
        .arg(format!("@{}", addr.ip()))
        .arg("-p")
        .arg(addr.port().to_string())
        .arg("-y")
        .arg(key.y_arg())
        .args([ZONE, "AXFR"])
        .output()
        .expect("kdig");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let soas = text.lines().filter(|l| l.contains("\tSOA\t")).count();
    if soas == 2 && !text.contains(";; ERROR") {
        "NOERROR".into()
    } else {
        text
    }
}

/// A folder `tag` with the zone's file in it, and a port; None when kdig
/// is missing (and may be).
fn setup(tag: &str) -> Option<(TempDir, u16)> {
    if Command::new("kdig").arg("-V").output().is_err() {
        assert!(
            std::env::var_os("LODE_REQUIRE_KNOT").is_none(),
            "kdig missing"
        );
        return None;
    }
    let dir = TempDir::new(tag);
    std::fs::write(
        dir.0.join("zone"),
        format!("$ORIGIN {ZONE}\n$TTL 300\n@ SOA ns hm 1 60 10 600 60\n@ NS ns\nns A 192.0.2.1\n"),
    )
    .unwrap();
    Some((dir, pick_port_in(16990, 16999)))
}

#[test]
fn keys_and_acls_change_by_reload() {
    let Some((dir, port)) = setup("reload-config") else {
        return;
    };
    let d = &dir.0;
    std::fs::write(d.join("lode.toml"), config(d, port, OLD, true)).unwrap();
    let server = start_lode_config(&d.join("lode.toml"), port, &d.join("lode.log"), &[ZONE])
        .unwrap_or_else(|e| panic!("{e}"));
    let old = TsigKey {
        name: "rot".into(),
        algorithm: "hmac-sha256".into(),
        secret: OLD.into(),
    };
    let new = old.with_secret(NEW);
    nsupdate(server.addr, ZONE, &old, "update add a 300 A 192.0.2.10\n").unwrap();
    assert!(nsupdate(server.addr, ZONE, &new, "update add b 300 A 192.0.2.11\n").is_err());
    assert_eq!(axfr(server.addr, &old), "NOERROR");

    // Rotation: the new secret, and transfers no longer allowed.
    std::fs::write(d.join("lode.toml"), config(d, port, NEW, false)).unwrap();
    let (ok, text) = reload(d);
    assert!(ok, "{text}\n{}", server.log_tail(20));
    nsupdate(server.addr, ZONE, &new, "update add c 300 A 192.0.2.12\n")
        .unwrap_or_else(|e| panic!("{e}\n{}", server.log_tail(20)));
    assert!(nsupdate(server.addr, ZONE, &old, "update add d 300 A 192.0.2.13\n").is_err());
    assert_ne!(axfr(server.addr, &new), "NOERROR", "transfer still allowed");

    // A key that cannot be used: the reload is refused, the running keys stay.
    std::fs::write(d.join("lode.toml"), config(d, port, "not base64!", true)).unwrap();
    let (ok, text) = reload(d);
    assert!(!ok, "a bad key was taken:\n{text}");
    nsupdate(server.addr, ZONE, &new, "update add e 300 A 192.0.2.14\n")
        .unwrap_or_else(|e| panic!("{e}\n{}", server.log_tail(20)));
    assert_ne!(axfr(server.addr, &new), "NOERROR");

    // Transfers allowed again by a good configuration; a setting that needs a
    // restart is named in the report.
    let conf = config(d, port, NEW, true).replacen(
        "journal-dir",
        "max-udp-payload = 1400\njournal-dir",
        1,
    );
    std::fs::write(d.join("lode.toml"), conf).unwrap();
    let (ok, text) = reload(d);
    assert!(ok, "{text}");
    assert!(
        text.contains("take effect at restart (not now): max-udp-payload"),
        "{text}"
    );
    assert_eq!(axfr(server.addr, &new), "NOERROR");

    // The zone's serial policy changed by reload: the next update's serial
    // is the time (Knot's `unixtime`), not the old one plus one.
    let before = query_serial(server.addr, ZONE).expect("serial");
    assert!(before < 1000, "serial {before}");
    let conf = format!(
        "{}serial-policy = \"unixtime\"\n",
        config(d, port, NEW, true)
    );
    std::fs::write(d.join("lode.toml"), conf).unwrap();
    let (ok, text) = reload(d);
    assert!(ok, "{text}");
    nsupdate(server.addr, ZONE, &new, "update add f 300 A 192.0.2.15\n")
        .unwrap_or_else(|e| panic!("{e}\n{}", server.log_tail(20)));
    let after = query_serial(server.addr, ZONE).expect("serial");
    assert!(
        after > 1_700_000_000,
        "serial {before} → {after} with unixtime"
    );
}

/// kdig's output for `args` asked of `addr` over UDP.
fn kdig(addr: std::net::SocketAddr, args: &[&str]) -> String {
    let out = Command::new("kdig")
        .arg(format!("@{}", addr.ip()))
        .arg("-p")
        .arg(addr.port().to_string())
        .args(args)
        .output()
        .expect("kdig");
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// True when kdig printed a COOKIE option with a server cookie (more than
/// the 8-byte client cookie: 16 hex digits).
fn server_cookie(kdig: &str) -> bool {
    kdig.lines()
        .filter_map(|l| l.strip_prefix(";; COOKIE: "))
        .any(|c| c.trim().len() > 16)
}

/// Of `count` queries sent at once from one socket, how many got a full
/// (not truncated) answer within a short wait.
fn burst(addr: std::net::SocketAddr, count: u16) -> usize {
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(std::time::Duration::from_millis(300)))
        .unwrap();
    for id in 0..count {
        let mut q = Query::new(&format!("ns.{ZONE}"), 1, 1);
        q.id = id;
        sock.send_to(&q.to_wire(), addr).unwrap();
    }
    let mut full = 0;
    let mut buf = [0u8; 1500];
    while let Ok(n) = sock.recv(&mut buf) {
        if n >= 12 && buf[2] & 0x02 == 0 {
            full += 1;
        }
    }
    full
}

#[test]
fn the_query_policy_changes_by_reload() {
    let Some((dir, port)) = setup("reload-policy") else {
        return;
    };
    let d = &dir.0;
    let base = format!(
        "listen = [\"127.0.0.1:{port}\"]\ncontrol = \"{}\"\n",
        d.join("ctl.sock").display()
    );
    let zone = format!("[[zone]]\nname = \"{ZONE}\"\nfile = \"zone\"\n");
    std::fs::write(
        d.join("lode.toml"),
        format!("{base}identity = \"before\"\n{zone}"),
    )
    .unwrap();
    let server = start_lode_config(&d.join("lode.toml"), port, &d.join("lode.log"), &[ZONE])
        .unwrap_or_else(|e| panic!("{e}"));
    let a = server.addr;
    assert!(kdig(a, &["CH", "TXT", "id.server", "+short"]).contains("\"before\""));
    assert!(!kdig(a, &["+nsid", &format!("ns.{ZONE}")]).contains("reloaded"));
    assert!(!server_cookie(&kdig(
        a,
        &["+cookie", &format!("ns.{ZONE}")]
    )));
    assert_eq!(burst(a, 100), 100, "answers limited before [rrl] is on");

    // Identity, NSID, cookies, RRL and dnstap on by one reload.
    let tap = d.join("tap.fstrm");
    std::fs::write(
        d.join("lode.toml"),
        format!(
            "{base}identity = \"after\"\nnsid = \"reloaded\"\n\
             log-level = \"debug\"\ntcp-idle-timeout = 1\n{zone}\
             [cookies]\nsecret = \"000102030405060708090a0b0c0d0e0f\"\n\
             [rrl]\nrate-limit = 5\nslip = 0\n\
             [dnstap]\nsink = \"{}\"\n",
            tap.display()
        ),
    )
    .unwrap();
    let (ok, text) = reload(d);
    assert!(ok, "{text}\n{}", server.log_tail(20));
    assert!(!text.contains("take effect at restart"), "{text}");
    assert!(kdig(a, &["CH", "TXT", "id.server", "+short"]).contains("\"after\""));
    let nsid = kdig(a, &["+nsid", &format!("ns.{ZONE}")]);
    assert!(nsid.contains("reloaded"), "{nsid}");
    let cookie = kdig(a, &["+cookie", &format!("ns.{ZONE}")]);
    assert!(server_cookie(&cookie), "{cookie}");
    let limited = burst(a, 100);
    assert!(limited < 50, "{limited} of 100 answered with rate-limit 5");
    let log = std::fs::read_to_string(d.join("lode.log")).unwrap_or_default();
    assert!(
        log.contains(
            "reload: applied identity/version/nsid/edns-padding, [cookies], [rrl], [dnstap]"
        ),
        "{}",
        server.log_tail(20)
    );
    // The TCP idle timeout (1 s now, 10 s before) for a new connection, and
    // the log level: its closing is logged at debug level.
    let mut idle = std::net::TcpStream::connect(a).unwrap();
    idle.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let started = std::time::Instant::now();
    let mut byte = [0u8; 1];
    let closed = std::io::Read::read(&mut idle, &mut byte);
    let took = started.elapsed();
    assert!(
        took.as_secs() < 4 && !matches!(closed, Ok(n) if n > 0),
        "{closed:?} after {took:?}"
    );
    server.wait_log(
        "idle timeout, closed",
        "the idle close logged at debug level",
    );

    // Off again: the dnstap stream ends (the file holds what was logged),
    // and answers are no longer limited.
    std::fs::write(d.join("lode.toml"), format!("{base}{zone}")).unwrap();
    let (ok, text) = reload(d);
    assert!(ok, "{text}");
    assert_eq!(burst(a, 100), 100, "answers limited after [rrl] is off");
    let logged = std::fs::metadata(&tap).map_or(0, |m| m.len());
    assert!(logged > 200, "dnstap file of {logged} bytes");
    if let Ok(out) = Command::new("dnstap-read").arg(&tap).output() {
        let text = String::from_utf8_lossy(&out.stdout);
        let queries = text.lines().filter(|l| l.contains(" AQ ")).count();
        assert!(
            queries >= 100,
            "{queries} queries in the dnstap file:\n{text}"
        );
    }
}

/// `dnssec-signing` turned on by `lode reload` for a zone served unsigned
/// from its file (Knot's `knotc reload`): keys made, the zone signed whole
/// at once and verified by three validators, the next update signed, and
/// after a restart (kill -9) the zone served signed as it was (not signed
/// again).
#[test]
fn signing_turned_on_by_reload() {
    if !common::dnssec::tools_present() {
        return;
    }
    let Some((dir, port)) = setup("reload-sign") else {
        return;
    };
    let d = &dir.0;
    let unsigned = config(d, port, OLD, true);
    let (mut server, key) = started(d, port, &unsigned);
    nsupdate(server.addr, ZONE, &key, "update add a 300 A 192.0.2.10\n").unwrap();
    assert!(!kdig(server.addr, &["+dnssec", ZONE, "DNSKEY"]).contains("DNSKEY\t257"));

    let signed = unsigned.replace(
        "acl = [\"ops\"]\n",
        "acl = [\"ops\"]\ndnssec-signing = true\n",
    );
    assert_ne!(signed, unsigned);
    std::fs::write(d.join("lode.toml"), &signed).unwrap();
    let (ok, text) = reload(d);
    assert!(ok, "{text}\n{}", server.log_tail(20));
    assert!(text.contains("signing turned on"), "{text}");
    assert!(!text.contains("take effect at restart"), "{text}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !kdig(server.addr, &["+dnssec", ZONE, "DNSKEY"]).contains("DNSKEY\t257") {
        assert!(
            std::time::Instant::now() < deadline,
            "not signed after the reload:\n{}",
            server.log_tail(30)
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let tsig = key.y_arg();
    let first =
        common::dnssec::verify_axfr(d, server.addr, ZONE, Some(&tsig), "signed by the reload");
    nsupdate(server.addr, ZONE, &key, "update add b 300 A 192.0.2.11\n").unwrap();
    let second = common::dnssec::verify_axfr(d, server.addr, ZONE, Some(&tsig), "an update after");
    assert!(second > first, "serial {first} → {second}");
    let b = kdig(server.addr, &["+dnssec", &format!("b.{ZONE}"), "A"]);
    assert!(b.contains("RRSIG\tA"), "the update is signed:\n{b}");

    // Killed and started again with the signed configuration: served as it
    // was, signed.
    server.kill9();
    let mut server = start_lode_config(&d.join("lode.toml"), port, &d.join("lode.log"), &[ZONE])
        .unwrap_or_else(|e| panic!("{e}"));
    let again = common::dnssec::verify_axfr(d, server.addr, ZONE, Some(&tsig), "after restart");
    assert_eq!(
        again,
        second,
        "signed again at restart:\n{}",
        server.log_tail(20)
    );

    // Signing turned off by a reload (Knot's): the DNSSEC records stay as
    // they are, an update after it is not signed, nothing is signed again.
    std::fs::write(d.join("lode.toml"), &unsigned).unwrap();
    let (ok, text) = reload(d);
    assert!(ok, "{text}\n{}", server.log_tail(20));
    assert!(text.contains("signing turned off"), "{text}");
    assert!(!text.contains("take effect at restart"), "{text}");
    nsupdate(server.addr, ZONE, &key, "update add c 300 A 192.0.2.12\n").unwrap();
    let c = kdig(server.addr, &["+dnssec", &format!("c.{ZONE}"), "A"]);
    assert!(c.contains("192.0.2.12"), "{c}");
    assert!(
        !c.contains("RRSIG"),
        "an update after signing is off is not signed:\n{c}"
    );
    let b = kdig(server.addr, &["+dnssec", &format!("b.{ZONE}"), "A"]);
    assert!(
        b.contains("RRSIG\tA"),
        "the records signed before are kept:\n{b}"
    );
    assert!(kdig(server.addr, &["+dnssec", ZONE, "DNSKEY"]).contains("DNSKEY\t257"));
    let soa = |addr| {
        kdig(addr, &["+short", ZONE, "SOA"])
            .split_whitespace()
            .nth(2)
            .and_then(|s| s.parse::<u32>().ok())
            .expect("an SOA serial")
    };
    let off = soa(server.addr);
    // A second reload with the same configuration changes nothing more.
    let (ok, text) = reload(d);
    assert!(ok && !text.contains("signing turned"), "{text}");
    // Started again unsigned: served as it was, nothing signed.
    server.kill9();
    let server = start_lode_config(&d.join("lode.toml"), port, &d.join("lode.log"), &[ZONE])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(soa(server.addr), off, "{}", server.log_tail(20));
    let c = kdig(server.addr, &["+dnssec", &format!("c.{ZONE}"), "A"]);
    assert!(c.contains("192.0.2.12") && !c.contains("RRSIG"), "{c}");
}

/// Zones added by `lode reload` (Knot's): one that takes updates takes them
/// at once (journaled: a `kill -9` loses none), a signed one is signed
/// before its first update is answered, and a secondary is transferred
/// from its primary (a second Lode) without a restart.
#[test]
fn zones_added_by_reload_take_updates_signing_and_transfers() {
    let Some((dir, port)) = setup("reload-add") else {
        return;
    };
    let d = &dir.0;
    let base = config(d, port, OLD, true);
    let (mut server, key) = started(d, port, &base);
    // The secondary's primary: a second Lode serving sec.example.
    let p = TempDir::new("reload-add-primary");
    let zone_text = |z: &str| {
        format!("$ORIGIN {z}\n$TTL 300\n@ SOA ns hm 7 60 10 600 60\n@ NS ns\nns A 192.0.2.1\n")
    };
    std::fs::write(p.0.join("zone"), zone_text("sec.example.")).unwrap();
    let p_port = pick_port_in(16990, 16999);
    std::fs::write(
        p.0.join("lode.toml"),
        config(&p.0, p_port, OLD, true).replace(ZONE, "sec.example."),
    )
    .unwrap();
    let primary = start_lode_config(
        &p.0.join("lode.toml"),
        p_port,
        &p.0.join("lode.log"),
        &["sec.example."],
    )
    .unwrap_or_else(|e| panic!("primary: {e}"));
    for z in ["added.example.", "signed.example."] {
        std::fs::write(d.join(z), zone_text(z)).unwrap();
    }
    let signing = common::dnssec::tools_present();
    let added =
        format!(
        "{base}[[zone]]\nname = \"added.example.\"\nfile = \"added.example.\"\nacl = [\"ops\"]\n\
         [[zone]]\nname = \"signed.example.\"\nfile = \"signed.example.\"\nacl = [\"ops\"]\n{}\
         [[remote]]\nid = \"p\"\naddress = [\"127.0.0.1@{p_port}\"]\nkey = \"rot\"\n\
         [[zone]]\nname = \"sec.example.\"\nmaster = [\"p\"]\nacl = [\"ops\"]\n",
        if signing { "dnssec-signing = true\n" } else { "" }
    );
    std::fs::write(d.join("lode.toml"), &added).unwrap();
    let (ok, text) = reload(d);
    assert!(ok, "{text}\n{}", server.log_tail(20));
    assert!(!text.contains("restart"), "{text}");

    nsupdate(
        server.addr,
        "added.example.",
        &key,
        "update add a 300 A 192.0.2.10\n",
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", server.log_tail(20)));
    nsupdate(
        server.addr,
        "signed.example.",
        &key,
        "update add b 300 A 192.0.2.11\n",
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", server.log_tail(20)));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while query_serial(server.addr, "sec.example.") != Some(7) {
        assert!(
            std::time::Instant::now() < deadline,
            "the secondary added is not transferred:\n{}",
            server.log_tail(20)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let check = |server: &Server, when: &str| {
        let a = kdig(server.addr, &["a.added.example.", "A"]);
        assert!(a.contains("192.0.2.10"), "{when}:\n{a}");
        let b = kdig(server.addr, &["+dnssec", "b.signed.example.", "A"]);
        assert!(b.contains("192.0.2.11"), "{when}:\n{b}");
        if signing {
            assert!(b.contains("RRSIG\tA"), "{when}: the update is signed:\n{b}");
            let tsig = key.y_arg();
            common::dnssec::verify_axfr(d, server.addr, "signed.example.", Some(&tsig), when)
        } else {
            0
        }
    };
    let serial = check(&server, "after the reload");
    // A restart after kill -9 serves the same: journaled, nothing signed again.
    server.kill9();
    let server = start_lode_config(
        &d.join("lode.toml"),
        port,
        &d.join("lode.log"),
        &[ZONE, "added.example.", "signed.example."],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(check(&server, "after kill -9"), serial);

    // Removed by a reload: no longer answered, no update taken, the
    // secondary no longer refreshed; added again, served from its journal.
    std::fs::write(d.join("lode.toml"), &base).unwrap();
    let (ok, text) = reload(d);
    assert!(ok && text.contains("added.example.: removed"), "{text}");
    for z in ["added.example.", "signed.example.", "sec.example."] {
        let r = kdig(server.addr, &[z, "SOA"]);
        assert!(r.contains("REFUSED"), "{z} still served:\n{r}");
    }
    assert!(nsupdate(
        server.addr,
        "added.example.",
        &key,
        "update add c 300 A 192.0.2.12\n"
    )
    .is_err());
    std::fs::write(d.join("lode.toml"), &added).unwrap();
    let (ok, text) = reload(d);
    assert!(ok, "{text}");
    assert_eq!(check(&server, "added again"), serial);
    drop(primary);
}
