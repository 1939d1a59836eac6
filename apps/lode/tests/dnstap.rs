//! dnstap query logging, read back by the ecosystem's own
//! readers: a file sink read with `dnstap-read` (BIND) and `kdig -G`
//! (Knot); a Unix-socket sink received by `fstrm_capture` (fstrm); and
//! readers that are absent or never read: every query is still answered,
//! and the drops are counted in the status text.
//!
//! Servers listen on 127.0.0.1, ports 16700–16719.

mod common;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const ZONE: &str = "$ORIGIN dt.test.\n$TTL 300\n@ SOA ns1 host 1 3600 900 604800 300\n@ NS ns1\nns1 A 192.0.2.1\nwww A 192.0.2.2\n* TXT \"wild\"\n";
const TIMEOUT: Duration = Duration::from_secs(2);

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Skips the test (with a message) when `tool` is missing, unless the test
/// command said it installed it (`LODE_REQUIRE_DNSTAP_TOOLS=1`).
fn need(tool: &str, package: &str) -> bool {
    if have(tool) {
        return true;
    }
    assert!(
        std::env::var_os("LODE_REQUIRE_DNSTAP_TOOLS").is_none(),
        "{tool} missing (package {package})"
    );
    eprintln!("SKIP: {tool} not installed (apt-get install {package})");
    false
}

/// A running `lode serve` with its configuration in `dir`.
struct Lode {
    child: Child,
    addr: SocketAddr,
    log: PathBuf,
    control: PathBuf,
}

impl Lode {
    /// Starts `lode serve` on a free port with `extra` configuration lines
    /// and `args`; waits until it answers.
    fn start(dir: &Path, extra: &str, args: &[&str]) -> Lode {
        let zone = dir.join("dt.test.zone");
        std::fs::write(&zone, ZONE).unwrap();
        let control = dir.join("control.sock");
        let conf = dir.join("lode.toml");
        std::fs::write(
            &conf,
            format!(
                "control = \"{}\"\nidentity = \"lode-dt\"\nversion = \"dt 1\"\n{extra}\n[[zone]]\nname = \"dt.test.\"\nfile = \"{}\"\n",
                control.display(),
                zone.display()
            ),
        )
        .unwrap();
        let port = pick_port_in(16700, 16719);
        let log = dir.join("lode.log");
        let child = Command::new(env!("CARGO_BIN_EXE_lode"))
            .arg("serve")
            .arg("--config")
            .arg(&conf)
            .args(["--listen", &format!("127.0.0.1:{port}"), "--workers", "2"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("spawn lode");
        let mut lode = Lode {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            log,
            control,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        let probe = Query::new("dt.test.", 6, 1).to_wire();
        while udp_exchange(lode.addr, &probe, Duration::from_millis(300)).is_none() {
            assert!(
                matches!(lode.child.try_wait(), Ok(None)),
                "lode exited: {}",
                lode.log()
            );
            assert!(Instant::now() < deadline, "lode not ready: {}", lode.log());
        }
        lode
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The `status` control command's text.
    fn status(&self) -> String {
        let r = lode_server::control::request(&self.control, "status", TIMEOUT).unwrap();
        assert!(r.ok);
        r.text
    }

    /// SIGTERM (by PID) and wait: the dnstap stream is closed on the way out.
    fn stop(mut self) {
        let ok = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                assert!(s.success(), "lode exit {s:?}: {}", self.log());
                return;
            }
            assert!(Instant::now() < deadline, "lode did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Lode {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The known queries: five TXT over UDP (`uN`), three A over TCP (`tN`),
/// and one UDP message with QR set, which Lode drops (logged as AUTH_QUERY
/// only).
fn send_known_queries(addr: SocketAddr) {
    for i in 0..5 {
        let q = Query::new(&format!("u{i}.dt.test."), 16, 1).to_wire();
        let r = udp_exchange(addr, &q, TIMEOUT).expect("UDP answer");
        assert_eq!(Message::parse(&r).answer.len(), 1);
    }
    for i in 0..3 {
        let q = Query::new(&format!("t{i}.dt.test."), 1, 1).to_wire();
        tcp_exchange(addr, &q, TIMEOUT).expect("TCP answer");
    }
    let mut q = Query::new("drop.dt.test.", 16, 1).to_wire();
    q[2] |= 0x80;
    assert!(udp_exchange(addr, &q, Duration::from_millis(300)).is_none());
}

/// `dnstap-read FILE` lines about the known names (readiness probes, SOA
/// queries for the apex, are left out), after checking that the probes come
/// in query/response pairs.
fn known_lines(text: &str) -> Vec<String> {
    let probes: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" dt.test/IN/SOA"))
        .collect();
    let aq = probes.iter().filter(|l| l.contains(" AQ ")).count();
    assert_eq!(aq * 2, probes.len(), "{text}");
    text.lines()
        .filter(|l| !l.contains(" dt.test/IN/SOA"))
        .map(str::to_string)
        .collect()
}

/// Checks the messages of [`send_known_queries`] in `dnstap-read` output.
fn check_known(text: &str) {
    let lines = known_lines(text);
    let find = |kind: &str, proto: &str, name: &str| {
        lines
            .iter()
            .filter(|l| {
                l.contains(&format!(" {kind} 127.0.0.1:"))
                    && l.contains(&format!(" {proto} "))
                    && l.ends_with(name)
            })
            .count()
    };
    for i in 0..5 {
        let name = format!("u{i}.dt.test/IN/TXT");
        assert_eq!(find("AQ", "UDP", &name), 1, "{name}:\n{text}");
        assert_eq!(find("AR", "UDP", &name), 1, "{name}:\n{text}");
    }
    for i in 0..3 {
        let name = format!("t{i}.dt.test/IN/A");
        assert_eq!(find("AQ", "TCP", &name), 1, "{name}:\n{text}");
        assert_eq!(find("AR", "TCP", &name), 1, "{name}:\n{text}");
    }
    assert_eq!(find("AQ", "UDP", "drop.dt.test/IN/TXT"), 1, "{text}");
    assert_eq!(find("AR", "UDP", "drop.dt.test/IN/TXT"), 0, "{text}");
    assert_eq!(lines.len(), 5 * 2 + 3 * 2 + 1, "{text}");
}

fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().expect(cmd);
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn file_sink_read_by_dnstap_read_and_kdig() {
    if !need("dnstap-read", "bind9-dnsutils") {
        return;
    }
    let dir = TempDir::new("dnstap-file");
    let tap = dir.0.join("queries.tap");
    let lode = Lode::start(
        &dir.0,
        &format!("[dnstap]\nsink = \"{}\"\n", tap.display()),
        &[],
    );
    assert!(
        lode.log().contains(&format!(
            "dnstap: logging queries and responses to {}, 1 in 1",
            tap.display()
        )),
        "{}",
        lode.log()
    );
    send_known_queries(lode.addr);
    let port = lode.addr.port();
    lode.stop();
    let tap = tap.to_str().unwrap();
    check_known(&run("dnstap-read", &[tap]));

    // The YAML form: every message whole, identity and version the server's.
    let yaml = run("dnstap-read", &["-y", tap]);
    let messages = yaml.matches("type: MESSAGE").count();
    let short = run("dnstap-read", &[tap]).lines().count();
    assert_eq!(messages, short);
    assert_eq!(
        yaml.matches("identity: lode-dt").count(),
        messages,
        "{yaml}"
    );
    assert_eq!(yaml.matches("version: dt 1").count(), messages, "{yaml}");
    assert_eq!(
        yaml.matches("query_address: \"127.0.0.1\"").count(),
        messages
    );
    // The server's side too: the address and port the query came in on.
    assert_eq!(
        yaml.matches("response_address: \"127.0.0.1\"").count(),
        messages,
        "{yaml}"
    );
    assert_eq!(
        yaml.matches(&format!("response_port: {port}")).count(),
        messages,
        "{yaml}"
    );
    assert_eq!(yaml.matches("socket_protocol: TCP").count(), 6);
    assert!(
        yaml.contains("- 'u3.dt.test. 300 IN TXT \"wild\"'"),
        "{yaml}"
    );

    // Knot's reader prints the responses.
    if need("kdig", "knot-dnsutils") {
        let kdig = run("kdig", &["-G", tap]);
        for i in 0..5 {
            assert!(kdig.contains(&format!("u{i}.dt.test.")), "{kdig}");
        }
        for i in 0..3 {
            assert!(kdig.contains(&format!("t{i}.dt.test.")), "{kdig}");
        }
        assert_eq!(kdig.matches("(TCP)").count(), 3, "{kdig}");
    }
}

#[test]
fn unix_socket_sink_read_by_fstrm_capture() {
    if !need("fstrm_capture", "fstrm-bin") || !need("dnstap-read", "bind9-dnsutils") {
        return;
    }
    let dir = TempDir::new("dnstap-unix");
    let sock = dir.0.join("tap.sock");
    let out = dir.0.join("captured.tap");
    let mut capture = Command::new("fstrm_capture")
        .args(["-t", "protobuf:dnstap.Dnstap", "-u"])
        .arg(&sock)
        .arg("-w")
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("fstrm_capture");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sock.exists() {
        assert!(Instant::now() < deadline, "fstrm_capture made no socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The command-line flag, no [dnstap] table.
    let sink = format!("unix:{}", sock.display());
    let lode = Lode::start(&dir.0, "", &["--dnstap", &sink]);
    send_known_queries(lode.addr);
    let status = lode.status();
    lode.stop();
    // fstrm_capture closes its file on SIGTERM.
    let _ = Command::new("kill")
        .args(["-TERM", &capture.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while matches!(capture.try_wait(), Ok(None)) {
        if Instant::now() > deadline {
            let _ = capture.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = capture.wait();
    assert!(status.contains("dnstap logged "), "{status}");
    check_known(&run("dnstap-read", &[out.to_str().unwrap()]));
}

/// The counters of the status line `dnstap logged L dropped-queue-full Q
/// dropped-no-reader N write-errors E`.
fn dnstap_counters(status: &str) -> [u64; 4] {
    let line = status
        .lines()
        .find(|l| l.starts_with("dnstap "))
        .unwrap_or_else(|| panic!("no dnstap line in {status}"));
    let n: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    [n[0], n[1], n[2], n[3]]
}

#[test]
fn absent_reader_drops_are_counted_and_queries_answered() {
    let dir = TempDir::new("dnstap-absent");
    let sock = dir.0.join("nobody.sock");
    let lode = Lode::start(
        &dir.0,
        &format!("[dnstap]\nsink = \"unix:{}\"\n", sock.display()),
        &[],
    );
    for i in 0..50 {
        let q = Query::new(&format!("a{i}.dt.test."), 16, 1).to_wire();
        assert!(udp_exchange(lode.addr, &q, TIMEOUT).is_some(), "query {i}");
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let [logged, _, no_reader, _] = loop {
        let c = dnstap_counters(&lode.status());
        if c[2] >= 100 || Instant::now() > deadline {
            break c;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(logged, 0);
    assert!(no_reader >= 100, "{}", lode.status());
    assert!(
        lode.log().contains("dnstap: no reader at"),
        "{}",
        lode.log()
    );
    lode.stop();
}

/// ACCEPT with the dnstap content type (Frame Streams control frame).
fn accept_frame() -> Vec<u8> {
    let ct = b"protobuf:dnstap.Dnstap";
    let mut body = Vec::new();
    for w in [1u32, 1, ct.len() as u32] {
        body.extend_from_slice(&w.to_be_bytes());
    }
    body.extend_from_slice(ct);
    let mut f = vec![0, 0, 0, 0];
    f.extend_from_slice(&(body.len() as u32).to_be_bytes());
    f.extend_from_slice(&body);
    f
}

#[test]
fn reader_that_never_reads_costs_drops_not_answers() {
    let dir = TempDir::new("dnstap-slow");
    let sock = dir.0.join("slow.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    // Takes the connection, ACCEPTs, then never reads (for 6 s).
    let reader = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut ready = [0u8; 64];
        let _ = s.read(&mut ready);
        s.write_all(&accept_frame()).unwrap();
        std::thread::sleep(Duration::from_secs(6));
    });
    let lode = Lode::start(
        &dir.0,
        &format!("[dnstap]\nsink = \"unix:{}\"\nqueue = 16\n", sock.display()),
        &[],
    );
    let client = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    client.set_read_timeout(Some(TIMEOUT)).unwrap();
    let t0 = Instant::now();
    let mut buf = [0u8; 4096];
    let mut answered = 0;
    // Large TXT answers fill the socket buffer of a reader that never reads.
    for i in 0..3000u32 {
        let mut q = Query::new(&format!("slow-reader-{i:05}.dt.test."), 16, 1);
        q.id = i as u16;
        client.send_to(&q.to_wire(), lode.addr).unwrap();
        if client.recv_from(&mut buf).is_ok() {
            answered += 1;
        }
    }
    assert_eq!(answered, 3000, "queries answered while the reader stalls");
    let elapsed = t0.elapsed();
    let [_, full, _, _] = dnstap_counters(&lode.status());
    assert!(full > 0, "no queue-full drop: {}", lode.status());
    assert!(elapsed < Duration::from_secs(20), "{elapsed:?}");
    lode.stop();
    reader.join().unwrap();
}
