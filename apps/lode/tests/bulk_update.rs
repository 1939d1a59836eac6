//! `lode update` end to end: bulk ENUM provisioning from CSV with pipelining,
//! an nsupdate script, a failure in the middle and `--resume-after`, all
//! against `lode serve`; and one run against a real knotd.
//!
//! Ports 15460-15469 on 127.0.0.1.

mod common;

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{Query, Server, TempDir};
use lode_peers::{Acl, Action, Content, Key, Kind, Spec, Zone};

/// The test key (hmac-sha256).
const KEY_NAME: &str = "k.";
const SECRET: &str = "p0+PO4jzPMt2D56bmnAUsLQ8TQCRKJOQD6Ju5Dg/6Dw=";
const NAPTR: u16 = 35;
const A: u16 = 1;

fn spec() -> String {
    format!("hmac-sha256:{KEY_NAME}:{SECRET}")
}

/// A small zone file for `apex`.
fn write_zone(path: &Path, apex: &str) {
    let text = format!(
        "$ORIGIN {apex}\n$TTL 3600\n@ SOA ns.example.com. root.example.com. 1 10800 1800 604800 1800\n\
         @ NS ns1.example.net.\n"
    );
    std::fs::write(path, text).expect("write zone");
}

/// A `kind` server in `dir` on `port` allowing updates signed with the
/// test key from 127.0.0.1 to `zones` (apex, file; read in place).
fn update_spec(kind: Kind, dir: &Path, port: u16, zones: &[(&str, &Path)]) -> Spec {
    let mut s = common::server_spec(kind, port)
        .key(Key::new(KEY_NAME, "hmac-sha256", SECRET))
        .acl(
            Acl::new("up", &[Action::Update])
                .from("127.0.0.1")
                .key(KEY_NAME),
        );
    s.dir = Some(dir.into());
    for (apex, file) in zones {
        s = s.zone(Zone::primary(apex, Content::File(file.to_path_buf())).acls(&["up"]));
    }
    s
}

/// Starts `lode serve` with updates allowed for `zones` (apex, file) with
/// the test key; waits until every zone answers.
fn start_lode(dir: &Path, port: u16, zones: &[(&str, &Path)]) -> Server {
    Server::start(update_spec(Kind::Lode, dir, port, zones)).unwrap_or_else(|e| panic!("{e}"))
}

fn ask(addr: SocketAddr, name: &str, qtype: u16) -> Option<common::Message> {
    let q = Query::new(name, qtype, 1).to_wire();
    common::udp_exchange(addr, &q, Duration::from_secs(2)).map(|m| common::Message::parse(&m))
}

/// Runs `lode update` with `args`.
fn lode_update(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .arg("update")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run lode update");
    eprintln!(
        "lode update {}:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The E.164 number of row `i` and its ENUM name.
fn number(i: u64) -> (String, String) {
    let digits = format!("3120{:07}", i);
    let name: String = digits
        .chars()
        .rev()
        .map(|c| format!("{c}."))
        .collect::<String>()
        + "e164.arpa.";
    (format!("+{digits}"), name)
}

#[test]
fn enum_csv_pipelined_nsupdate_and_resume() {
    let dir = TempDir::new("bulk-update");
    let zone = dir.0.join("e164.arpa.zone");
    write_zone(&zone, "e164.arpa.");
    let ex = dir.0.join("example.com.zone");
    write_zone(&ex, "example.com.");
    let mut server = start_lode(
        &dir.0,
        15460,
        &[("e164.arpa.", &zone), ("example.com.", &ex)],
    );
    let server_arg = server.addr.to_string();

    // 1. 20,000 ENUM numbers from CSV, 500 per message, 8 in flight on 2 connections.
    let n = 20_000u64;
    let mut csv = String::from("number,uri\n");
    for i in 0..n {
        let (num, _) = number(i);
        let _ = writeln!(csv, "{num},sip:{num}@example.net");
    }
    let csv_path = dir.0.join("numbers.csv");
    std::fs::write(&csv_path, &csv).expect("write csv");
    let t = Instant::now();
    let out = lode_update(&[
        "-s",
        &server_arg,
        "-y",
        &spec(),
        "--batch",
        "500",
        "--window",
        "8",
        "--connections",
        "2",
        csv_path.to_str().unwrap_or_default(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("20000 records in 40 messages"),
        "{}",
        stderr(&out)
    );
    eprintln!("20,000 NAPTR provisioned in {:?}", t.elapsed());
    for i in (0..n).step_by(997).chain([n - 1]) {
        let (num, name) = number(i);
        let r = ask(server.addr, &name, NAPTR).expect("reply");
        assert_eq!(r.rcode(), 0, "{name}");
        assert_eq!(r.answer.len(), 1, "{name}: {:?}", r.answer);
        assert_eq!(
            r.answer[0].rdata,
            format!("100 10 \"u\" \"E2U+sip\" \"!^.*$!sip:{num}@example.net!\" ."),
        );
    }

    // 2. An nsupdate script with its own server and key lines.
    let port = server.addr.port();
    let script = format!(
        "server 127.0.0.1 {port}\nkey hmac-sha256:{KEY_NAME} {SECRET}\nzone example.com\nttl 300\n\
         prereq nxdomain www.example.com\nupdate add www.example.com A 192.0.2.1\n\
         update add www.example.com 60 TXT \"hello world\"\nsend\n\
         update delete www.example.com TXT\nupdate add mail.example.com A 192.0.2.2\nsend\n"
    );
    let script_path = dir.0.join("changes.nsupdate");
    std::fs::write(&script_path, script).expect("write script");
    let out = lode_update(&[script_path.to_str().unwrap_or_default()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = ask(server.addr, "www.example.com.", A).expect("reply");
    assert_eq!(r.answer.len(), 1);
    assert_eq!(r.answer[0].ttl, 300);
    assert!(ask(server.addr, "www.example.com.", 16)
        .expect("reply")
        .answer
        .is_empty());
    assert_eq!(
        ask(server.addr, "mail.example.com.", A)
            .expect("reply")
            .answer
            .len(),
        1
    );

    // 3. A failure in the middle: message 3 of 5 has a prerequisite that fails.
    let mut script = String::from("zone example.com\nttl 300\n");
    for m in 0..5 {
        if m == 2 {
            script.push_str("prereq yxdomain gate.example.com\n");
        }
        for k in 0..3 {
            let _ = writeln!(script, "add h{m}-{k}.example.com A 192.0.2.{}", 10 + m);
        }
        script.push_str("send\n");
    }
    // Lines: 1 zone, 2 ttl, 3-6 message 0 (send on 6), 7-10 message 1, 11-15 message 2.
    let script_path = dir.0.join("gated.nsupdate");
    std::fs::write(&script_path, &script).expect("write script");
    let args = [
        "-s",
        &server_arg,
        "-y",
        &spec(),
        "--window",
        "1",
        script_path.to_str().unwrap_or_default(),
    ];
    let out = lode_update(&args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("lines 11-15"), "{err}");
    assert!(err.contains("NXDOMAIN"), "{err}");
    assert!(err.contains("last acknowledged input line: 10"), "{err}");
    assert!(err.contains("--resume-after 10"), "{err}");
    assert_eq!(
        ask(server.addr, "h1-2.example.com.", A)
            .expect("r")
            .answer
            .len(),
        1
    );
    assert!(ask(server.addr, "h2-0.example.com.", A)
        .expect("r")
        .answer
        .is_empty());
    // Open the gate and resume.
    let gate = dir.0.join("gate.nsupdate");
    std::fs::write(
        &gate,
        "zone example.com\nadd gate.example.com 60 A 192.0.2.99\nsend\n",
    )
    .expect("write gate");
    let out = lode_update(&[
        "-s",
        &server_arg,
        "-y",
        &spec(),
        gate.to_str().unwrap_or_default(),
    ]);
    assert!(out.status.success());
    let mut resumed: Vec<&str> = args.to_vec();
    resumed.extend(["--resume-after", "10"]);
    let out = lode_update(&resumed);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("9 records in 3 messages"),
        "{}",
        stderr(&out)
    );
    for m in 0..5 {
        let r = ask(server.addr, &format!("h{m}-2.example.com."), A).expect("r");
        assert_eq!(r.answer.len(), 1, "h{m}-2");
    }
    // 3. A zone the server does not serve: said so by the client (an
    // unsigned NOTAUTH) and logged by the server.
    let fragment = dir.0.join("fragment.zone");
    std::fs::write(&fragment, "x 60 A 192.0.2.7\n").expect("write fragment");
    let out = lode_update(&[
        "-s",
        &server_arg,
        "-y",
        &spec(),
        "--zone",
        "example.org",
        "--add",
        fragment.to_str().unwrap_or_default(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the zone is not served there"),
        "{}",
        stderr(&out)
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while !server.log().contains("update for example.org.") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        server
            .log()
            .contains("update for example.org. from 127.0.0.1"),
        "{}",
        server.log_tail(10)
    );
    assert!(server.alive(), "{}", server.log_tail(20));
}

/// A pace slower than the server's TCP idle timeout: the server closes the
/// idle connection between messages, and `lode update` connects again for
/// the next one instead of stopping.
#[test]
fn a_slow_pace_outlives_the_idle_timeout() {
    let dir = TempDir::new("bulk-update-idle");
    let ex = dir.0.join("example.com.zone");
    write_zone(&ex, "example.com.");
    let mut s = update_spec(Kind::Lode, &dir.0, 15462, &[("example.com.", &ex)]);
    s.server_extra = "tcp-idle-timeout = 1\n".into();
    let server = Server::start(s).unwrap_or_else(|e| panic!("{e}"));
    let server_arg = server.addr.to_string();
    let mut script = String::from("zone example.com\n");
    for m in 0..3 {
        let _ = writeln!(script, "add slow{m}.example.com 60 A 192.0.2.{m}");
        script.push_str("send\n");
    }
    let path = dir.0.join("slow.nsupdate");
    std::fs::write(&path, &script).expect("write");
    // One record a message at 0.5 records/s: 2 s apart, past the 1 s idle timeout.
    let out = lode_update(&[
        "-s",
        &server_arg,
        "-y",
        &spec(),
        "-r",
        "0.5",
        path.to_str().unwrap_or_default(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    for m in 0..3 {
        let name = format!("slow{m}.example.com.");
        assert_eq!(
            ask(server.addr, &name, A).expect("reply").answer.len(),
            1,
            "{name}"
        );
    }
}

#[test]
fn pipelined_failure_reports_exact_prefix() {
    let dir = TempDir::new("bulk-update-fail");
    let ex = dir.0.join("example.com.zone");
    write_zone(&ex, "example.com.");
    let server = start_lode(&dir.0, 15461, &[("example.com.", &ex)]);
    let server_arg = server.addr.to_string();
    // 40 messages of 2 records, 10 in flight; message 17 (lines 35-37) has a failing prereq.
    let mut script = String::from("zone example.com\n");
    for m in 0..40 {
        if m == 17 {
            script.push_str("prereq yxrrset nothere.example.com A\n");
        }
        let _ = writeln!(script, "add p{m}.example.com 60 A 192.0.2.1");
        let _ = writeln!(script, "add p{m}.example.com 60 A 192.0.2.2");
        script.push_str("send\n");
    }
    let path = dir.0.join("p.nsupdate");
    std::fs::write(&path, &script).expect("write");
    let args = [
        "-s",
        &server_arg,
        "-y",
        &spec(),
        "--window",
        "10",
        path.to_str().unwrap_or_default(),
    ];
    let out = lode_update(&args);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    // Message m (< 17) ends on line 1 + 3(m+1); message 16 ends on line 52.
    assert!(err.contains("NXRRSET"), "{err}");
    assert!(err.contains("last acknowledged input line: 52"), "{err}");
    assert!(err.contains("--skip 17"), "{err}");
    let mut resumed: Vec<&str> = args.to_vec();
    resumed.extend(["--skip", "18"]);
    let out = lode_update(&resumed);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        ask(server.addr, "p39.example.com.", A)
            .expect("r")
            .answer
            .len(),
        2
    );
    assert!(ask(server.addr, "p17.example.com.", A)
        .expect("r")
        .answer
        .is_empty());
}

#[test]
fn against_knotd() {
    if !common::knot_available() {
        return;
    }
    let dir = TempDir::new("bulk-update-knot");
    let zone = dir.0.join("e164.arpa.zone");
    write_zone(&zone, "e164.arpa.");
    let knot = update_spec(Kind::Knot, &dir.0, 15465, &[("e164.arpa.", &zone)]);
    let server = Server::start(knot).unwrap_or_else(|e| panic!("{e}"));
    let n = 3000u64;
    let mut csv = String::new();
    for i in 0..n {
        let (num, _) = number(i);
        let _ = writeln!(csv, "{num}, sip:{num}@example.net, 50, 20, E2U+sip");
    }
    let path = dir.0.join("numbers.csv");
    std::fs::write(&path, &csv).expect("write csv");
    let server_arg = server.addr.to_string();
    let key_file = dir.0.join("k.key");
    std::fs::write(&key_file, format!("{}\n", spec())).expect("key file");
    let out = lode_update(&[
        "-s",
        &server_arg,
        "-k",
        key_file.to_str().unwrap_or_default(),
        "--batch",
        "500",
        "--window",
        "4",
        path.to_str().unwrap_or_default(),
    ]);
    assert!(
        out.status.success(),
        "{}\n{}",
        stderr(&out),
        server.log_tail(20)
    );
    assert!(stderr(&out).contains("3000 records in 6 messages"));
    for i in (0..n).step_by(311) {
        let (num, name) = number(i);
        let r = ask(server.addr, &name, NAPTR).expect("reply");
        assert_eq!(r.answer.len(), 1, "{name}");
        assert_eq!(
            r.answer[0].rdata,
            format!("50 20 \"u\" \"E2U+sip\" \"!^.*$!sip:{num}@example.net!\" .")
        );
    }
    // A bad key is reported as such.
    let bad = format!("hmac-sha256:{KEY_NAME}:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
    let out = lode_update(&[
        "-s",
        &server_arg,
        "-y",
        &bad,
        path.to_str().unwrap_or_default(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("NOTAUTH"), "{}", stderr(&out));
    assert!(stderr(&out).contains("last acknowledged input line: 0"));
}

/// `lode enum --csv`: NAPTR zone lines that `lode check` takes as part of
/// a zone, or an nsupdate script of --batch numbers a message.
#[test]
fn enum_csv_to_zone_lines_and_an_nsupdate_script() {
    let dir = TempDir::new("enum-csv");
    let csv = dir.0.join("numbers.csv");
    std::fs::write(
        &csv,
        "number,uri\n+1-212-939-1234,sip:alice@example.net\n+12129391235,sip:bob@example.net,50,5,E2U+sip\n+12129391236,sip:carol@example.net\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_lode"))
            .arg("enum")
            .args(args)
            .output()
            .expect("run lode enum")
    };
    let out = run(&["--csv", csv.to_str().unwrap_or_default()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(lines.lines().count(), 3, "{lines}");
    assert!(lines.contains(
        "5.3.2.1.9.3.9.2.1.2.1.e164.arpa. 3600 IN NAPTR 50 5 \"u\" \"E2U+sip\" \"!^.*$!sip:bob@example.net!\" ."
    ), "{lines}");
    let zone = dir.0.join("1.e164.arpa.zone");
    let mut text = String::new();
    write_zone_text(&mut text, "1.e164.arpa.");
    text.push_str(&lines);
    std::fs::write(&zone, text).unwrap();
    let check = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["check", zone.to_str().unwrap_or_default()])
        .output()
        .expect("run lode check");
    assert!(check.status.success(), "{}", stderr(&check));

    let out = run(&[
        "--csv",
        csv.to_str().unwrap_or_default(),
        "--nsupdate",
        "--zone",
        "1.e164.arpa",
        "--batch",
        "2",
    ]);
    let script = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(script.matches("zone 1.e164.arpa.\n").count(), 2, "{script}");
    assert_eq!(script.matches("\nsend\n").count(), 2, "{script}");
    assert_eq!(script.matches("update add ").count(), 3, "{script}");
    // A bad line: its number, and exit status 2.
    let bad = dir.0.join("bad.csv");
    std::fs::write(
        &bad,
        "+12129391234,sip:a@example.net\nnot a number,sip:b@example.net\n",
    )
    .unwrap();
    let out = run(&["--csv", bad.to_str().unwrap_or_default()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("line 2"), "{}", stderr(&out));
}

/// An apex (SOA, NS) for `origin` as zone-file text.
fn write_zone_text(text: &mut String, origin: &str) {
    let _ = write!(
        text,
        "$ORIGIN {origin}\n$TTL 3600\n@ SOA ns.example.com. root.example.com. 1 10800 1800 604800 1800\n@ NS ns1.example.net.\n"
    );
}
