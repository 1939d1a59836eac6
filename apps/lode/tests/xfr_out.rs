//! Lode as a primary, checked with kdig and a NOTIFY listener:
//!
//! - AXFR over TCP with TSIG gives every record of the zone (as a multiset),
//!   in messages of up to 64 KiB (a 150,000-record zone needs many);
//!   unsigned, with a key the ACL does not take, or over UDP: refused as
//!   Knot refuses it (NOTAUTH; NOTIMP over UDP);
//! - after signed UPDATEs, IXFR from the first serial gives the condensed
//!   difference (SOA new, SOA old, removed, SOA new, added, SOA new) and
//!   applying it to the old contents gives the new AXFR; IXFR from the
//!   current serial gives the SOA alone; from a serial older than the
//!   journal, the whole zone;
//! - NOTIFY: a UDP listener configured as a `notify` remote with the key
//!   receives a signed NOTIFY carrying the new serial after an update, and is
//!   sent it again when it does not answer;
//! - `transfers-out = 1`: a second concurrent AXFR is REFUSED while a slow
//!   reader holds the first;
//! - a TSIG-signed query is answered and signed (kdig verifies it);
//! - a zone added by a reload with a notify remote is NOTIFYed and can be
//!   transferred.
//!
//! About 10 s. Needs `kdig` (knot-dnsutils), which the README's test command
//! installs.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const KEY_NAME: &str = "xfr-key.";
const KEY_SECRET: &str = "bG9kZS14ZnItb3V0LXRlc3Qta2V5LTMyLWJ5dGVzISE=";
const OTHER_NAME: &str = "other-key.";
const OTHER_SECRET: &str = "b3RoZXIta2V5LWZvci1sb2RlLXhmci1vdXQtdGVzdHM=";
const ZONE: &str = "xfr.test.";
const BIG: &str = "big.test.";
const BIG_RECORDS: usize = 150_000;

fn kdig_available() -> bool {
    Command::new("kdig").arg("-V").output().is_ok()
}

fn zone_text() -> String {
    let mut s = format!(
        "$ORIGIN {ZONE}\n$TTL 300\n@ SOA ns hostmaster 100 3600 600 86400 300\n@ NS ns\nns A 192.0.2.1\nold A 192.0.2.2\nmail MX 10 ns\n"
    );
    for i in 0..20 {
        s.push_str(&format!("h{i} TXT \"host {i}\"\n"));
    }
    s
}

fn big_text() -> String {
    let mut s = format!(
        "$ORIGIN {BIG}\n$TTL 300\n@ SOA ns hostmaster 7 3600 600 86400 300\n@ NS ns\nns A 192.0.2.1\n"
    );
    for i in 0..BIG_RECORDS {
        s.push_str(&format!(
            "{}.{} NAPTR 100 10 \"u\" \"E2U+sip\" \"!^.*$!sip:{i}@example.net!\" .\n",
            i % 10,
            i / 10
        ));
    }
    s
}

fn write_config(dir: &Path, notify_port: u16) -> std::path::PathBuf {
    std::fs::write(dir.join("xfr.zone"), zone_text()).unwrap();
    std::fs::write(dir.join("big.zone"), big_text()).unwrap();
    let conf = format!(
        r#"journal-dir = "journal"
control = "{ctl}"
transfers-out = 1

[[key]]
id = "{KEY_NAME}"
algorithm = "hmac-sha256"
secret = "{KEY_SECRET}"

[[key]]
id = "{OTHER_NAME}"
algorithm = "hmac-sha256"
secret = "{OTHER_SECRET}"

[[acl]]
id = "secondaries"
address = ["127.0.0.1"]
key = ["{KEY_NAME}"]
action = ["transfer", "update"]

[[remote]]
id = "listener"
address = ["127.0.0.1@{notify_port}"]
key = "{KEY_NAME}"
via = ["127.0.0.3"]

[[zone]]
name = "{ZONE}"
file = "xfr.zone"
acl = ["secondaries"]
notify = ["listener"]
zonefile-sync = -1

[[zone]]
name = "{BIG}"
file = "big.zone"
acl = ["secondaries"]
"#,
        ctl = dir.join("ctl.sock").display()
    );
    let path = dir.join("lode.toml");
    std::fs::write(&path, conf).unwrap();
    path
}

/// kdig's answer lines (`+noall +answer`) and its status line.
fn kdig(server: SocketAddr, args: &[&str]) -> (Vec<String>, String) {
    let out = Command::new("kdig")
        .arg(format!("@{}", server.ip()))
        .arg("-p")
        .arg(server.port().to_string())
        .args(args)
        .arg("+noall")
        .arg("+answer")
        .arg("+comments")
        .arg("+time=5")
        .arg("+retry=0")
        .output()
        .expect("run kdig");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let status = text
        .lines()
        .find(|l| l.contains("status:"))
        .unwrap_or("")
        .to_string()
        + &text
            .lines()
            .filter(|l| l.contains("error") || l.contains("failed"))
            .collect::<Vec<_>>()
            .join(" ");
    let records = text
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .map(|l| {
            l.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        })
        .collect();
    (records, status)
}

fn tsig(name: &str, secret: &str) -> String {
    format!("-y hmac-sha256:{name}:{secret}")
}

fn signed_args<'a>(key: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut v: Vec<&str> = key.split(' ').collect();
    v.extend_from_slice(rest);
    v
}

/// A record line without its TTL (owner class type rdata), for multisets.
fn identity(line: &str) -> String {
    let f: Vec<&str> = line.split(' ').collect();
    if f.len() < 4 {
        return line.to_string();
    }
    let mut v = vec![f[0]];
    v.extend_from_slice(&f[2..]);
    v.join(" ")
}

fn multiset(lines: &[String]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for l in lines {
        *m.entry(l.clone()).or_insert(0) += 1;
    }
    m
}

fn serial_of(soa_line: &str) -> u32 {
    soa_line
        .split(' ')
        .nth(6)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn key() -> lode_tsig::Key {
    lode_tsig::Key::from_text(KEY_NAME, "hmac-sha256".parse().unwrap(), KEY_SECRET).unwrap()
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn update(addr: SocketAddr, delete: &[RawRr], add: &[RawRr]) {
    let mut dels = delete.to_vec();
    for d in &mut dels {
        d.class = 254;
        d.ttl = 0;
    }
    let all: Vec<RawRr> = dels.into_iter().chain(add.iter().cloned()).collect();
    let mut msg = update_message(0x5151, ZONE, &[], &all);
    lode_tsig::sign_request_vec(&mut msg, &key(), unix_now()).unwrap();
    let r = tcp_exchange(addr, &msg, Duration::from_secs(5)).expect("update answered");
    assert_eq!(Message::parse(&r).rcode(), 0, "update answered NOERROR");
}

fn a(label: &str, ip: [u8; 4]) -> RawRr {
    RawRr::new(&format!("{label}.{ZONE}"), 1, 300, &ip)
}

/// Waits for a NOTIFY on `sock`; returns (id, serial in its answer SOA,
/// whether it is TSIG-signed with the key).
fn next_notify(sock: &UdpSocket, deadline: Instant) -> Option<(Vec<u8>, SocketAddr, u32, bool)> {
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        let Ok((n, from)) = sock.recv_from(&mut buf) else {
            continue;
        };
        let msg = buf[..n].to_vec();
        if msg.len() < 12 || (msg[2] >> 3) & 0x0F != 4 {
            continue;
        }
        let m = Message::parse(&msg);
        // The SOA's RDATA as rendered: "mname rname serial refresh …".
        let serial = m
            .answer
            .iter()
            .find(|r| r.rtype == 6)
            .and_then(|r| r.rdata.split_whitespace().nth(2)?.parse().ok())
            .unwrap_or(0);
        let mut keys = lode_tsig::Keys::new();
        keys.insert(key()).unwrap();
        let signed = matches!(
            lode_tsig::verify_request(&msg, &keys, unix_now()),
            lode_tsig::Verified::Signed(_)
        );
        return Some((msg, from, serial, signed));
    }
    None
}

#[test]
fn lode_as_a_primary() {
    if !kdig_available() {
        eprintln!("SKIP: kdig is not installed (apt-get install knot-dnsutils)");
        return;
    }
    let dir = TempDir::new("xfr-out");
    let notify_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    notify_sock
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let notify_port = notify_sock.local_addr().unwrap().port();
    let conf = write_config(&dir.0, notify_port);
    let port = pick_port_in(15520, 15539);
    let server = start_lode_config(&conf, port, &dir.0.join("lode.log"), &[ZONE, BIG])
        .unwrap_or_else(|e| panic!("lode did not start: {e}"));
    let addr = server.addr;
    let good = tsig(KEY_NAME, KEY_SECRET);
    let other = tsig(OTHER_NAME, OTHER_SECRET);

    // AXFR, signed: every record, the SOA first and last.
    let (axfr, status) = kdig(addr, &signed_args(&good, &["AXFR", ZONE]));
    assert!(status.contains("NOERROR") || status.is_empty(), "{status}");
    let expected = 5 + 20;
    assert_eq!(axfr.len(), expected + 1, "AXFR: {axfr:#?}");
    assert!(axfr[0].contains(" soa ") && axfr[axfr.len() - 1].contains(" soa "));
    let zone_records: Vec<String> = {
        let origin: lode_wire::Name = ZONE.parse().unwrap();
        let z = lode_zonefile::parse_file(&dir.0.join("xfr.zone"), &origin, Some(300)).unwrap();
        z.records
            .iter()
            .map(|r| lode_zonefile::format_record(r).to_lowercase())
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    };
    let sent: Vec<String> = axfr[..axfr.len() - 1].iter().map(|l| identity(l)).collect();
    let want: Vec<String> = zone_records.iter().map(|l| identity(l)).collect();
    assert_eq!(multiset(&sent), multiset(&want), "AXFR contents");

    // A signed query is answered signed (kdig checks the reply's MAC).
    let (r, status) = kdig(addr, &signed_args(&good, &["SOA", ZONE]));
    assert!(
        r.len() == 1 && !status.contains("failed") && !status.contains("rror"),
        "signed SOA query: {status} {r:?}"
    );
    let (r, status) = kdig(addr, &signed_args(&other, &["SOA", ZONE]));
    assert!(
        r.len() == 1 && !status.contains("failed") && !status.contains("rror"),
        "any known key signs queries: {status} {r:?}"
    );
    // A known key name with the wrong secret: no answer, but NOTAUTH with
    // an unsigned BADSIG TSIG, as Knot (which kdig cannot verify).
    let bad = tsig(KEY_NAME, OTHER_SECRET);
    let (r, status) = kdig(addr, &signed_args(&bad, &["SOA", ZONE]));
    assert!(
        r.is_empty() && (status.contains("NOTAUTH") || status.contains("failed to verify TSIG")),
        "wrong secret: {status} {r:?}"
    );

    // Refusals: unsigned, a key the ACL does not take, AXFR over UDP.
    let (r, status) = kdig(addr, &["AXFR", ZONE]);
    assert!(
        r.is_empty() && status.contains("NOTAUTH"),
        "unsigned: {status} {r:?}"
    );
    let (r, status) = kdig(addr, &signed_args(&other, &["AXFR", ZONE]));
    assert!(
        r.is_empty() && (status.contains("NOTAUTH") || status.contains("BADKEY")),
        "other key: {status} {r:?}"
    );
    let (_, status) = kdig(addr, &signed_args(&good, &["+notcp", "AXFR", ZONE]));
    assert!(status.contains("NOTIMP"), "AXFR over UDP: {status}");

    // A big zone: all records, in several messages.
    let (big, status) = kdig(addr, &signed_args(&good, &["AXFR", BIG]));
    assert_eq!(big.len(), BIG_RECORDS + 3 + 1, "big AXFR: {status}");

    // Updates, then IXFR from 100: condensed.
    let (soa_before, _) = kdig(addr, &["SOA", ZONE]);
    let first_serial = serial_of(&soa_before[0]);
    assert_eq!(first_serial, 100);
    // NOTIFY of the start (serial 100) may arrive first: drain it.
    while next_notify(&notify_sock, Instant::now() + Duration::from_millis(300)).is_some() {}
    update(addr, &[], &[a("new1", [192, 0, 2, 10])]);
    update(
        addr,
        &[a("old", [192, 0, 2, 2])],
        &[a("new2", [192, 0, 2, 11])],
    );
    update(addr, &[a("new1", [192, 0, 2, 10])], &[]); // added then removed: gone
    let (soa_after, _) = kdig(addr, &["SOA", ZONE]);
    let serial = serial_of(&soa_after[0]);
    assert_eq!(serial, 103);

    let ixfr_arg = format!("IXFR={first_serial}");
    let (ixfr, status) = kdig(addr, &signed_args(&good, &[&ixfr_arg, ZONE]));
    let shape: Vec<String> = ixfr.iter().map(|l| identity(l)).collect();
    assert_eq!(ixfr.len(), 6, "condensed IXFR: {status} {shape:#?}");
    assert_eq!(serial_of(&ixfr[0]), 103);
    assert_eq!(serial_of(&ixfr[1]), 100);
    assert!(
        shape[2].starts_with("old.xfr.test. in a 192.0.2.2"),
        "{shape:#?}"
    );
    assert_eq!(serial_of(&ixfr[3]), 103);
    assert!(
        shape[4].starts_with("new2.xfr.test. in a 192.0.2.11"),
        "{shape:#?}"
    );
    assert_eq!(serial_of(&ixfr[5]), 103);

    // Up to date: the SOA alone.
    let ixfr_now = format!("IXFR={serial}");
    let (r, _) = kdig(addr, &signed_args(&good, &[&ixfr_now, ZONE]));
    assert_eq!(r.len(), 1, "up-to-date IXFR: {r:#?}");
    // A serial the journal does not hold: the whole zone.
    let (r, _) = kdig(addr, &signed_args(&good, &["IXFR=42", ZONE]));
    assert_eq!(
        r.len(),
        expected + 1,
        "IXFR from an unknown serial: AXFR-style {r:#?}"
    );
    // The new AXFR is the old one with the difference applied.
    let (axfr2, _) = kdig(addr, &signed_args(&good, &["AXFR", ZONE]));
    let mut want = multiset(&sent);
    want.remove(&identity(&axfr[0]));
    *want.entry(identity(&axfr2[0])).or_insert(0) += 1;
    want.remove("old.xfr.test. in a 192.0.2.2");
    *want
        .entry("new2.xfr.test. in a 192.0.2.11".into())
        .or_insert(0) += 1;
    let got: Vec<String> = axfr2[..axfr2.len() - 1]
        .iter()
        .map(|l| identity(l))
        .collect();
    assert_eq!(multiset(&got), want, "AXFR after the updates");

    // NOTIFY: signed, with the new serial; not answered, so sent again.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut seen = Vec::new();
    while let Some((_, _, s, signed)) = next_notify(&notify_sock, deadline) {
        assert!(signed, "NOTIFY signed with the remote's key");
        seen.push(s);
        if seen.iter().filter(|&&x| x == serial).count() >= 2 {
            break;
        }
    }
    assert!(
        seen.iter().filter(|&&x| x == serial).count() >= 2,
        "NOTIFY of serial {serial} sent and retried: {seen:?}"
    );
    // Answered: no more retries of it.
    update(addr, &[], &[a("new3", [192, 0, 2, 12])]);
    let (msg, from, s, _) = next_notify(&notify_sock, Instant::now() + Duration::from_secs(5))
        .expect("NOTIFY after the last update");
    assert_eq!(s, serial + 1);
    assert_eq!(
        from.ip(),
        std::net::IpAddr::from([127, 0, 0, 3]),
        "NOTIFY sent from the remote's via address"
    );
    let mut reply = msg.clone();
    reply[2] |= 0x80;
    notify_sock.send_to(&reply[..], from).unwrap();
    assert!(
        next_notify(&notify_sock, Instant::now() + Duration::from_millis(2500)).is_none(),
        "an answered NOTIFY is not sent again"
    );
    // `lode zone-notify` (knotc zone-notify): the same serial told again now.
    let ctl = dir.0.join("ctl.sock");
    let zone_notify = |zone: &str| {
        Command::new(env!("CARGO_BIN_EXE_lode"))
            .args(["zone-notify", zone, "--control"])
            .arg(&ctl)
            .output()
            .expect("run lode zone-notify")
    };
    let out = zone_notify(ZONE);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (msg, from, s, _) = next_notify(&notify_sock, Instant::now() + Duration::from_secs(5))
        .expect("NOTIFY after lode zone-notify");
    assert_eq!(s, serial + 1, "the serial served");
    let mut reply = msg.clone();
    reply[2] |= 0x80;
    notify_sock.send_to(&reply[..], from).unwrap();
    let out = zone_notify("nosuch.test.");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no such zone"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // transfers-out = 1: a second AXFR while a slow reader holds the first.
    // A client with a tiny receive buffer that never reads: the transfer
    // (about 9 MB) stays running, waiting for it.
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    sock.connect(&addr.into()).unwrap();
    let mut slow: std::net::TcpStream = sock.into();
    let mut q = Query::new(BIG, 252, 1).to_wire();
    lode_tsig::sign_request_vec(&mut q, &key(), unix_now()).unwrap();
    let mut framed = (q.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&q);
    std::io::Write::write_all(&mut slow, &framed).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let (_, status) = kdig(addr, &signed_args(&good, &["AXFR", ZONE]));
    assert!(
        status.contains("REFUSED"),
        "second concurrent transfer: {status}"
    );
    drop(slow);
    let log = server.log();
    assert!(
        log.contains("AXFR of xfr.test."),
        "transfers are logged:\n{log}"
    );

    // A zone added by a reload (SIGHUP) with a notify remote: its
    // secondaries are told at once, and it can be transferred.
    std::fs::write(
        dir.0.join("added.zone"),
        "$ORIGIN added.test.\n$TTL 300\n@ SOA ns hostmaster 9 3600 600 86400 300\n@ NS ns\nns A 192.0.2.1\n",
    )
    .unwrap();
    let mut conf_text = std::fs::read_to_string(&conf).unwrap();
    conf_text.push_str(
        "\n[[zone]]\nname = \"added.test.\"\nfile = \"added.zone\"\nacl = [\"secondaries\"]\nnotify = [\"listener\"]\n",
    );
    std::fs::write(&conf, conf_text).unwrap();
    while next_notify(&notify_sock, Instant::now() + Duration::from_millis(200)).is_some() {}
    let hup = Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = None;
    while let Some((msg, _, s, _)) = next_notify(&notify_sock, deadline) {
        let m = Message::parse(&msg);
        if m.question
            .first()
            .is_some_and(|q| q.0.eq_ignore_ascii_case("added.test."))
        {
            got = Some(s);
            break;
        }
    }
    assert_eq!(
        got,
        Some(9),
        "NOTIFY for the zone added by the reload:\n{}",
        server.log_tail(20)
    );
    let (r, _) = kdig(addr, &signed_args(&good, &["AXFR", "added.test."]));
    assert_eq!(r.len(), 4, "AXFR of the added zone: {r:?}");
}

/// Knot's `via`: a secondary's SOA queries and transfers leave from the
/// address its remote names, which is all the primary's ACL allows.
#[test]
fn transfers_leave_from_the_via_address() {
    let dir = TempDir::new("xfr-via");
    std::fs::write(dir.0.join("xfr.zone"), zone_text()).unwrap();
    let primary_port = pick_port_in(15540, 15549);
    let primary_conf = dir.0.join("primary.toml");
    std::fs::write(
        &primary_conf,
        format!(
            "control = \"\"\n\
             [[acl]]\nid = \"only-via\"\naddress = [\"127.0.0.4\"]\naction = [\"transfer\"]\n\
             [[zone]]\nname = \"{ZONE}\"\nfile = \"xfr.zone\"\nacl = [\"only-via\"]\n"
        ),
    )
    .unwrap();
    let primary = start_lode_config(&primary_conf, primary_port, &dir.0.join("p.log"), &[ZONE])
        .unwrap_or_else(|e| panic!("primary: {e}"));
    let serial = Message::parse(
        &udp_exchange(
            primary.addr,
            &Query::new(ZONE, 6, 1).to_wire(),
            Duration::from_secs(1),
        )
        .expect("the primary answers"),
    )
    .answer[0]
        .rdata
        .split_whitespace()
        .nth(2)
        .map(str::to_string)
        .expect("a serial");
    let secondary_port = pick_port_in(15550, 15559);
    let with_via = |run: usize, via: &str| {
        format!(
            "journal-dir = \"journal-{run}\"\ncontrol = \"\"\n\
             [[remote]]\nid = \"primary\"\naddress = [\"127.0.0.1@{primary_port}\"]\n{via}\n\
             [[zone]]\nname = \"{ZONE}\"\nmaster = [\"primary\"]\n"
        )
    };
    let soa_of = |addr: SocketAddr| {
        udp_exchange(
            addr,
            &Query::new(ZONE, 6, 1).to_wire(),
            Duration::from_millis(300),
        )
        .map(|m| Message::parse(&m))
        .filter(|m| m.rcode() == 0 && !m.answer.is_empty())
        .map(|m| {
            m.answer[0]
                .rdata
                .split_whitespace()
                .nth(2)
                .map(str::to_string)
        })
    };
    for (run, (via, takes)) in [("", false), ("via = [\"127.0.0.4\"]", true)]
        .into_iter()
        .enumerate()
    {
        let conf = dir.0.join("secondary.toml");
        std::fs::write(&conf, with_via(run, via)).unwrap();
        let log = dir.0.join("s.log");
        let secondary = start_lode_config(&conf, secondary_port, &log, &[])
            .unwrap_or_else(|e| panic!("secondary: {e}"));
        let deadline = Instant::now() + Duration::from_secs(if takes { 10 } else { 3 });
        let mut got = None;
        while Instant::now() < deadline && got.is_none() {
            got = soa_of(secondary.addr).flatten();
            std::thread::sleep(Duration::from_millis(100));
        }
        if takes {
            assert_eq!(
                got.as_ref(),
                Some(&serial),
                "transferred from 127.0.0.4:\n{}",
                secondary.log_tail(20)
            );
        } else {
            assert_eq!(
                got,
                None,
                "refused without via:\n{}",
                secondary.log_tail(20)
            );
        }
        drop(secondary);
    }
    drop(primary);
}
