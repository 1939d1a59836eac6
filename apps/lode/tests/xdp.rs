//! UDP over AF_XDP (`listen-xdp`): Lode on one end of a veth pair in a
//! network namespace of its own, queries from another namespace; every UDP
//! query of the differential suite (and malformed ones, and truncated
//! answers) sent to the XDP port and to a socket port of the same server
//! must be answered alike, over IPv4 and IPv6; frames with a bad UDP
//! checksum are dropped and counted; response-rate limiting holds a flood
//! over XDP as over sockets; `kill -9` leaves no XDP program on the
//! interface (the BPF link goes with the process). Start-up fails clearly
//! on an interface that does not exist, unless `xdp-fallback` is set.
//!
//! ```text
//!  client ns ── veth ──▶ server ns: lode serve
//!     udp :5300 ─────────────────▶ socket ─┐
//!     udp :5301 ─▶ XDP program ──▶ AF_XDP ─┴▶ the same handler ─▶ answers compared byte for byte
//! ```
//!
//! Needs root and network namespaces; without them the tests that need them
//! skip, saying why (as the tests needing knotd do without it), unless
//! `LODE_REQUIRE_XDP=1`.

mod common;

use common::cases::load_cases;
use common::netns::*;
use common::*;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// The socket port and the XDP port of the server under test.
const SOCKET_PORT: u16 = 5300;
const XDP_PORT: u16 = 5301;

/// The client side of [`VethPair::exchange`]: nothing when run as a test.
#[test]
fn netns_client() {
    serve_client_job();
}

/// The pair, or `None` after saying why the test skips.
fn veth_pair(test: &str) -> Option<VethPair> {
    let why = if is_root() {
        match VethPair::new() {
            Ok(p) => return Some(p),
            Err(e) => format!("cannot make network namespaces: {e}"),
        }
    } else {
        "not root (XDP and network namespaces need it)".to_string()
    };
    assert!(
        std::env::var_os("LODE_REQUIRE_XDP").is_none(),
        "{test}: {why}"
    );
    eprintln!("SKIP {test}: {why}");
    None
}

/// Whether this process runs as root (read from /proc: no `unsafe` here).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// `lode serve` in the server namespace: sockets on both ports, XDP on the
/// second, the differential zones.
fn start_in_namespace(pair: &VethPair, dir: &TempDir, zones: &[ZoneSpec], extra: &str) -> Server {
    let mut spec = server_spec(lode_peers::Kind::Lode, SOCKET_PORT);
    spec.label = Some("lode (xdp)".into());
    spec.addresses = vec![SERVER_V4.into(), SERVER_V6.into()];
    spec.dir = Some(dir.0.clone());
    spec.config = Some(format!(
        "identity = \"{IDENTITY}\"\nversion = \"{VERSION}\"\nnsid = \"{NSID}\"\n\
         listen-xdp = [\"{}@{XDP_PORT}\"]\n{extra}",
        pair.server_if
    ));
    spec.args = vec![
        "--control".into(),
        dir.0.join("lode.sock").display().to_string(),
    ];
    for a in [
        SocketAddr::new(SERVER_V4.into(), XDP_PORT),
        SocketAddr::new(SERVER_V6.into(), XDP_PORT),
    ] {
        spec.args.extend(["--listen".into(), a.to_string()]);
    }
    for z in zones {
        spec.args.push("--zone".into());
        spec.args.push(format!("{}={}", z.origin, z.file.display()));
    }
    // Its sockets are in the namespace: no probe from here reaches them.
    spec.exec_under = ["ip", "netns", "exec", &pair.server_ns]
        .map(String::from)
        .to_vec();
    spec.ready = lode_peers::Ready::Started;
    let mut server = Server::start(spec).unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !server.log().contains("serving ") {
        assert!(
            server.alive() && Instant::now() < deadline,
            "lode did not start:\n{}",
            server.log_tail(30)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// `lode status` of the server: its `xdp` line's counters by name.
fn xdp_counters(dir: &TempDir) -> Vec<(String, u64)> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lode"))
        .arg("status")
        .arg("--control")
        .arg(dir.0.join("lode.sock"))
        .output()
        .expect("lode status");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.starts_with("xdp "))
        .unwrap_or_else(|| panic!("no xdp line in the status:\n{text}"));
    let w: Vec<&str> = line.split_whitespace().skip(1).collect();
    w.chunks(2)
        .map(|p| (p[0].to_string(), p[1].parse().expect("a count")))
        .collect()
}

fn counter(c: &[(String, u64)], name: &str) -> u64 {
    c.iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no {name} in {c:?}"))
}

/// A zone whose `big.xdp.test. TXT` answer (about 4 KB) is truncated at
/// 1232 bytes.
fn big_zone(dir: &TempDir) -> ZoneSpec {
    let file = dir.0.join("xdp.test.zone");
    let mut text = String::from(
        "$ORIGIN xdp.test.\n$TTL 3600\n@ SOA ns hostmaster 1 7200 3600 1209600 300\n@ NS ns\nns A 192.0.2.1\n",
    );
    for i in 0..40 {
        text.push_str(&format!("big TXT \"{i:02} {}\"\n", "x".repeat(90)));
    }
    std::fs::write(&file, text).expect("write the zone");
    ZoneSpec {
        origin: "xdp.test.".into(),
        file,
    }
}

/// Whether `ip link show` lists an XDP program on the interface.
fn has_xdp(link: &str) -> bool {
    link.contains("prog/xdp")
        || link
            .split_whitespace()
            .any(|w| matches!(w, "xdp" | "xdpgeneric" | "xdpdrv" | "xdpoffload"))
}

/// A UDP header (checksum deliberately wrong) and payload.
fn bad_checksum_segment(port: u16, payload: &[u8]) -> Vec<u8> {
    let mut s = Vec::new();
    s.extend_from_slice(&40000u16.to_be_bytes());
    s.extend_from_slice(&port.to_be_bytes());
    s.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    s.extend_from_slice(&0x1234u16.to_be_bytes());
    s.extend_from_slice(payload);
    s
}

/// Malformed queries: each answered (FORMERR) or dropped, alike on both paths.
fn malformed() -> Vec<(&'static str, Vec<u8>)> {
    let soa = Query::new("example.com.", 6, 1).to_wire();
    let mut two_questions = soa.clone();
    two_questions[5] = 2;
    let mut cut = soa.clone();
    cut.truncate(soa.len() - 3);
    let mut trailing = soa.clone();
    trailing.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    let mut bad_label = soa.clone();
    bad_label[12] = 63;
    let mut pointer_loop = soa[..12].to_vec();
    pointer_loop.extend_from_slice(&[0xc0, 12, 0, 6, 0, 1]);
    vec![
        ("header only", soa[..12].to_vec()),
        ("two questions", two_questions),
        ("question cut short", cut),
        ("trailing bytes", trailing),
        ("label past the end", bad_label),
        ("pointer loop", pointer_loop),
        ("shorter than a header", vec![0x12, 0x34, 0, 0, 0]),
        ("no question", {
            let mut h = soa[..12].to_vec();
            h[5] = 0;
            h
        }),
    ]
}

#[test]
fn xdp_answers_as_the_socket_path_and_detaches_on_kill() {
    let Some(pair) = veth_pair("xdp_answers_as_the_socket_path_and_detaches_on_kill") else {
        return;
    };
    let dir = TempDir::new("xdp");
    let mut zones = zones_in(&repo_root().join("tests/differential/zones"));
    zones.push(big_zone(&dir));
    let mut server = start_in_namespace(&pair, &dir, &zones, "");
    assert!(
        server.log().contains("UDP over XDP on"),
        "no XDP in the log:\n{}",
        server.log_tail(20)
    );
    let link = pair.server_link();
    assert!(has_xdp(&link), "no XDP program on the interface:\n{link}");

    // What to send: every UDP case (IPv4; every third over IPv6 too), a
    // truncated answer, malformed queries; each to both ports.
    let mut named: Vec<(String, Vec<u8>)> = Vec::new();
    let cases: Vec<_> = load_cases().into_iter().filter(|c| c.udp).collect();
    for (i, c) in cases.iter().enumerate() {
        named.push((format!("v4 {}", c.text), c.query.to_wire()));
        if i % 3 == 0 {
            named.push((format!("v6 {}", c.text), c.query.to_wire()));
        }
    }
    let mut big = Query::new("big.xdp.test.", 16, 1);
    named.push(("v4 truncated at 512".into(), big.to_wire()));
    named.push(("v6 truncated at 512".into(), big.to_wire()));
    big.edns = Some(Edns {
        size: 4096,
        ..Edns::default()
    });
    named.push(("v4 truncated at 1232".into(), big.to_wire()));
    named.push(("v6 truncated at 1232".into(), big.to_wire()));
    for (what, bytes) in malformed() {
        named.push((format!("v4 malformed: {what}"), bytes.clone()));
        named.push((format!("v6 malformed: {what}"), bytes));
    }
    let mut jobs = Vec::new();
    for (name, bytes) in &named {
        let ip: std::net::IpAddr = if name.starts_with("v4") {
            SERVER_V4.into()
        } else {
            SERVER_V6.into()
        };
        for port in [SOCKET_PORT, XDP_PORT] {
            jobs.push(("udp", SocketAddr::new(ip, port), bytes.clone()));
        }
    }
    // Frames with a bad UDP checksum: dropped by the XDP worker, counted.
    let bad = bad_checksum_segment(XDP_PORT, &Query::new("example.com.", 6, 1).to_wire());
    jobs.push((
        "raw",
        SocketAddr::new(SERVER_V4.into(), XDP_PORT),
        bad.clone(),
    ));
    jobs.push(("raw", SocketAddr::new(SERVER_V6.into(), XDP_PORT), bad));
    let before = xdp_counters(&dir);
    let answers = pair.exchange(&jobs, Duration::from_millis(300));

    let mut differ = Vec::new();
    let (mut answered, mut via_xdp) = (0, 0u64);
    for (k, (name, query)) in named.iter().enumerate() {
        let (socket, xdp) = (&answers[2 * k], &answers[2 * k + 1]);
        if socket != xdp {
            differ.push(format!(
                "{name}: socket {} bytes, XDP {} bytes{}",
                socket.as_ref().map_or(0, Vec::len),
                xdp.as_ref().map_or(0, Vec::len),
                match (socket, xdp) {
                    (Some(a), Some(b)) => format!(
                        "\n--- socket\n{}\n--- xdp\n{}",
                        Message::parse(a).to_text(),
                        Message::parse(b).to_text()
                    ),
                    _ => String::new(),
                }
            ));
        }
        answered += usize::from(xdp.is_some());
        // Queries (QR clear, opcode QUERY) of a DNS header's length or more
        // are the XDP program's; the rest go on to the socket.
        if query.len() >= 12 && query[2] & 0xF8 == 0 {
            via_xdp += 1;
        }
        if name.contains("truncated") {
            let a = xdp.as_ref().unwrap_or_else(|| panic!("{name}: no answer"));
            let limit = if name.ends_with("512") { 512 } else { 1232 };
            assert!(a.len() <= limit, "{name}: {} bytes", a.len());
            assert!(
                a[2] & 0x02 != 0,
                "{name}: TC not set:\n{}",
                Message::parse(a).to_text()
            );
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} answers over XDP differ from the socket path's:\n{}\n\nlog:\n{}",
        differ.len(),
        named.len(),
        differ.join("\n"),
        server.log_tail(20)
    );
    assert!(answered > cases.len(), "only {answered} answers over XDP");
    let after = xdp_counters(&dir);
    let delta = |n: &str| counter(&after, n) - counter(&before, n);
    assert_eq!(delta("queries"), via_xdp, "queries over XDP: {after:?}");
    assert!(delta("responses") > 0, "{after:?}");
    assert_eq!(delta("bad-frames"), 2, "bad checksums: {after:?}");
    // The same counters for Prometheus (and the queries by transport: UDP).
    let stats = std::process::Command::new(env!("CARGO_BIN_EXE_lode"))
        .arg("stats")
        .arg("--control")
        .arg(dir.0.join("lode.sock"))
        .output()
        .expect("lode stats");
    let stats = String::from_utf8_lossy(&stats.stdout);
    let received = format!("lode_xdp_received_total {}", counter(&after, "queries"));
    assert!(stats.contains(&received), "no {received:?} in:\n{stats}");

    // kill -9: the BPF link's last descriptor closes with the process, and
    // the kernel detaches the program.
    server.kill9();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let link = pair.server_link();
        if !has_xdp(&link) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "an XDP program is still attached 5 s after kill -9:\n{link}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `lode serve` with `listen-xdp = [XDP]` and `extra` in its configuration
/// (as user nobody with `unprivileged`); its exit status (None: still
/// running after 10 s, then killed) and log.
/// A flood of one question from one source: response-rate limiting holds
/// it to its rate over XDP as over the socket path — a few full answers,
/// every second limited answer sent truncated (slip 2), the rest dropped.
#[test]
fn rrl_limits_a_flood_over_xdp_as_over_sockets() {
    let Some(pair) = veth_pair("rrl_limits_a_flood_over_xdp_as_over_sockets") else {
        return;
    };
    let dir = TempDir::new("xdp-rrl");
    let zones = vec![big_zone(&dir)];
    let mut server = start_in_namespace(
        &pair,
        &dir,
        &zones,
        "[rrl]\nrate-limit = 5\nslip = 2\nburst = 5\n",
    );
    const FLOOD: usize = 60;
    // ns.xdp.test. A: an answer that fits, so TC means "limited".
    let query = Query::new("ns.xdp.test.", 1, 1).to_wire();
    for port in [XDP_PORT, SOCKET_PORT] {
        let to = SocketAddr::new(SERVER_V4.into(), port);
        let jobs: Vec<_> = (0..FLOOD).map(|_| ("udp", to, query.clone())).collect();
        let started = Instant::now();
        let answers = pair.exchange(&jobs, Duration::from_millis(40));
        let secs = started.elapsed().as_secs_f64();
        let (mut full, mut truncated, mut dropped) = (0usize, 0usize, 0usize);
        for a in &answers {
            match a {
                None => dropped += 1,
                Some(m) if m.len() > 2 && m[2] & 0x02 != 0 => truncated += 1,
                Some(_) => full += 1,
            }
        }
        let what = format!(
            "port {port}: {full} full, {truncated} truncated, {dropped} dropped of {FLOOD} in {secs:.1} s\n{}",
            server.log_tail(10)
        );
        // The burst, then 5 a second (the flood takes a few seconds: the
        // dropped ones wait out their 40 ms).
        let allowed = 5 + (secs * 5.0).ceil() as usize + 2;
        assert!(full >= 1 && full <= allowed, "{what}");
        assert!(truncated >= 10 && dropped >= 10, "{what}");
        assert!(
            truncated.abs_diff(dropped) <= FLOOD / 4,
            "slip 2: about as many sent truncated as dropped; {what}"
        );
    }
    assert!(server.alive(), "{}", server.log_tail(20));
}

fn serve_with_xdp(
    xdp: &str,
    extra: &str,
    unprivileged: bool,
) -> (Option<std::process::ExitStatus>, String) {
    serve_with_xdp_as(None, xdp, extra, unprivileged)
}

/// [`serve_with_xdp`] in network namespace `ns` (None: this one).
fn serve_with_xdp_as(
    ns: Option<&str>,
    xdp: &str,
    extra: &str,
    unprivileged: bool,
) -> (Option<std::process::ExitStatus>, String) {
    let dir = TempDir::new("xdp-start");
    let conf = dir.0.join("lode.toml");
    std::fs::write(&conf, format!("listen-xdp = [\"{xdp}\"]\n{extra}")).unwrap();
    let log = dir.0.join("lode.log");
    let port = pick_port(15550);
    // `env` runs in this namespace, `ip netns exec NS` in another.
    let mut cmd = match ns {
        Some(ns) => {
            let mut c = std::process::Command::new("ip");
            c.args(["netns", "exec", ns]);
            c
        }
        None => std::process::Command::new("env"),
    };
    if unprivileged {
        cmd.args([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ]);
    }
    cmd.arg(env!("CARGO_BIN_EXE_lode"));
    let child = cmd
        .arg("serve")
        .arg("--config")
        .arg(&conf)
        .args(["--listen", &format!("127.0.0.1:{port}"), "--workers", "1"])
        .arg("--control")
        .arg(dir.0.join("lode.sock"))
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(dir.0.join("stderr")).unwrap())
        .spawn()
        .expect("spawn lode");
    let mut child = child;
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut status = None;
    while Instant::now() < deadline {
        if let Ok(Some(s)) = child.try_wait() {
            status = Some(s);
            break;
        }
        if std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("serving ")
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let text = std::fs::read_to_string(&log).unwrap_or_default()
        + &std::fs::read_to_string(dir.0.join("stderr")).unwrap_or_default();
    (status, text)
}

#[test]
fn xdp_start_fails_clearly_unless_fallback() {
    let (status, log) = serve_with_xdp("lode-nosuch0@5301", "", false);
    let status = status.unwrap_or_else(|| panic!("lode started without its XDP interface:\n{log}"));
    assert!(!status.success(), "{log}");
    assert!(
        log.contains("cannot serve XDP on lode-nosuch0") && log.contains("no such interface"),
        "not said why:\n{log}"
    );
    let (status, log) = serve_with_xdp("lode-nosuch0@5301", "xdp-fallback = true\n", false);
    assert!(
        status.is_none(),
        "lode did not start with xdp-fallback:\n{log}"
    );
    assert!(
        log.contains("no such interface") && log.contains("xdp-fallback"),
        "{log}"
    );
    // Without privilege (as nobody; only root can switch to it).
    if !is_root() {
        eprintln!("SKIP the unprivileged start: not root");
        return;
    }
    let (status, log) = serve_with_xdp("lo@5301", "", true);
    let status = status.unwrap_or_else(|| panic!("lode started XDP unprivileged:\n{log}"));
    assert!(!status.success(), "{log}");
    assert!(
        log.contains("cannot serve XDP on lo") && log.contains("Operation not permitted"),
        "not said why:\n{log}"
    );
}

/// What tells the test binary, run again in a namespace, to hold an XDP
/// program: `IFACE@PORT DIR` the echo, `IFACE DIR` the pass-through program
/// (it writes DIR/attached or DIR/error and holds the program until DIR/stop
/// appears, 60 s at most).
const ECHO_JOB: &str = "LODE_XDP_ECHO_JOB";

/// The holder of the echo or the pass-through program: nothing when run as a test.
#[test]
fn netns_echo_holder() {
    let Some(job) = std::env::var_os(ECHO_JOB) else {
        return;
    };
    let job = job.to_string_lossy().into_owned();
    let (at, dir) = job.split_once(' ').expect("IFACE[@PORT] DIR");
    let dir = std::path::Path::new(dir);
    let attached = match at.split_once('@') {
        Some((iface, port)) => lode_io::xdp::Echo::attach(iface, port.parse().expect("a port"))
            .map(|e| Box::new(e) as Box<dyn std::fmt::Debug>),
        None => lode_io::xdp::XdpPass::attach(at).map(|p| Box::new(p) as Box<dyn std::fmt::Debug>),
    };
    match attached {
        Ok(program) => {
            std::fs::write(dir.join("attached"), format!("{program:?}")).expect("write attached");
            let deadline = Instant::now() + Duration::from_secs(60);
            while !dir.join("stop").exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Err(e) => std::fs::write(dir.join("error"), e.to_string()).expect("write error"),
    }
}

/// Runs [`netns_echo_holder`] in `ns` for `job` (`IFACE[@PORT]`) and waits
/// until it holds its program; DIR/stop ends it.
fn hold_in(pair: &VethPair, ns: &str, job: &str, dir: &TempDir) -> std::process::Child {
    let exe = std::env::current_exe().expect("this test binary");
    let mut holder = pair
        .command(ns, &exe)
        .args(["--exact", "netns_echo_holder", "--nocapture"])
        .arg("--test-threads=1")
        .env(ECHO_JOB, format!("{job} {}", dir.0.display()))
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start a holder");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !dir.0.join("attached").exists() {
        if let Ok(e) = std::fs::read_to_string(dir.0.join("error")) {
            let _ = holder.wait();
            panic!("{job}: no program attached: {e}");
        }
        assert!(Instant::now() < deadline, "{job}: the holder said nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
    holder
}

/// The in-kernel XDP echo (`lode_io::xdp::Echo`, the floor the XDP benchmark
/// compares with) on the server's end of the pair, the pass-through program
/// on the client's (a veth end takes XDP_TX'd frames only with a program of
/// its own): a query to the echo's port comes back byte for byte with QR
/// set, over IPv4 (no UDP checksum) and IPv6 (the checksum updated: the
/// client's kernel checks it); kdig takes the echo as an answer; other ports
/// are not answered; the program goes with its process.
#[test]
fn the_xdp_echo_turns_queries_around() {
    const PORT: u16 = 5353;
    let Some(pair) = veth_pair("the_xdp_echo_turns_queries_around") else {
        return;
    };
    let (echo_dir, pass_dir) = (TempDir::new("xdp-echo"), TempDir::new("xdp-pass"));
    let mut echo = hold_in(
        &pair,
        &pair.server_ns,
        &format!("{}@{PORT}", pair.server_if),
        &echo_dir,
    );
    let mut pass = hold_in(&pair, &pair.client_ns, &pair.client_if, &pass_dir);
    assert!(has_xdp(&pair.server_link()), "{}", pair.server_link());

    let mut q = Query::new("echo.example.", 1, 1);
    q.id = 0xBEEF;
    let q = q.to_wire();
    let mut expect = q.clone();
    expect[2] |= 0x80;
    let v4 = SocketAddr::new(SERVER_V4.into(), PORT);
    let v6 = SocketAddr::new(SERVER_V6.into(), PORT);
    let other = SocketAddr::new(SERVER_V4.into(), PORT + 1);
    let answers = pair.exchange(
        &[
            ("udp", v4, q.clone()),
            ("udp", v6, q.clone()),
            ("udp", other, q.clone()),
        ],
        Duration::from_millis(700),
    );
    assert_eq!(answers[0].as_deref(), Some(&expect[..]), "IPv4");
    assert_eq!(answers[1].as_deref(), Some(&expect[..]), "IPv6");
    assert_eq!(answers[2], None, "another port");

    // kdig, where installed, takes the echo as an answer to its query.
    if let Some(kdig) = lode_peers::program("kdig") {
        let out = pair
            .command(&pair.client_ns, &kdig)
            .args(["@10.53.0.1", "-p", &PORT.to_string(), "echo.example", "A"])
            .args(["+retry=0", "+timeout=2", "+noedns"])
            .output()
            .expect("kdig");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("status: NOERROR") && text.contains("Flags: qr"),
            "kdig through the echo:\n{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    } else {
        eprintln!("kdig is not installed: the echo checked with the test's own client only");
    }

    for (holder, dir) in [(&mut echo, &echo_dir), (&mut pass, &pass_dir)] {
        std::fs::write(dir.0.join("stop"), "").expect("write stop");
        let status = holder.wait().expect("the holder ends");
        assert!(status.success(), "the holder: {status}");
    }
    assert!(!has_xdp(&pair.server_link()), "{}", pair.server_link());
}

/// The server namespace's count of UDP datagrams its kernel took in
/// (`Udp: InDatagrams` of /proc/net/snmp, IPv4, plus `Udp6InDatagrams`).
fn udp_in(pair: &VethPair) -> u64 {
    let read = |file: &str| {
        let out = pair
            .command(&pair.server_ns, std::path::Path::new("cat"))
            .arg(file)
            .output()
            .expect("cat in the namespace");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let snmp = read("/proc/net/snmp");
    let udp: Vec<&str> = snmp.lines().filter(|l| l.starts_with("Udp: ")).collect();
    let at = udp[0].split_whitespace().position(|w| w == "InDatagrams");
    let v4: u64 = at
        .and_then(|i| udp[1].split_whitespace().nth(i)?.parse().ok())
        .expect("Udp InDatagrams");
    let v6: u64 = read("/proc/net/snmp6")
        .lines()
        .find_map(|l| l.strip_prefix("Udp6InDatagrams")?.trim().parse().ok())
        .unwrap_or(0);
    v4 + v6
}

/// `xdp-route-check`: without forwarding on the loopback interface the
/// server does not start and says what to set; with it, queries whose
/// answer goes back by the interface they came in on are answered over
/// XDP (over IPv4 and IPv6); with a route sending the client's address out
/// of another interface they go to the kernel's stack (the socket path);
/// with a blackhole route they are dropped in the program.
#[test]
fn xdp_route_check_follows_the_routing_table() {
    let Some(pair) = veth_pair("xdp_route_check_follows_the_routing_table") else {
        return;
    };
    let dir = TempDir::new("xdp-route");
    let zones = vec![big_zone(&dir)];
    let extra = "xdp-route-check = true\n";
    let (status, log) = serve_with_xdp_as(
        Some(&pair.server_ns),
        &format!("{}@{XDP_PORT}", pair.server_if),
        extra,
        false,
    );
    let status = status.unwrap_or_else(|| panic!("started without forwarding on lo:\n{log}"));
    assert!(!status.success(), "{log}");
    assert!(
        log.contains("xdp-route-check needs forwarding on the loopback interface")
            && log.contains("net.ipv4.conf.lo.forwarding=1"),
        "not said why:\n{log}"
    );
    let sysctl = pair
        .command(&pair.server_ns, std::path::Path::new("sysctl"))
        .args([
            "-qw",
            "net.ipv4.conf.lo.forwarding=1",
            "net.ipv6.conf.lo.forwarding=1",
        ])
        .status()
        .expect("sysctl");
    assert!(sysctl.success());
    let mut server = start_in_namespace(&pair, &dir, &zones, extra);
    assert!(
        server.log().contains("route check"),
        "{}",
        server.log_tail(20)
    );
    let query = Query::new("ns.xdp.test.", 1, 1).to_wire();
    let to = |ip: std::net::IpAddr, port| ("udp", SocketAddr::new(ip, port), query.clone());
    let (v4, v6) = (SERVER_V4.into(), SERVER_V6.into());
    // Through the socket first: the server's kernel learns the client's MAC
    // addresses (an unresolved next hop is the stack's to resolve).
    let warm = pair.exchange(
        &[to(v4, SOCKET_PORT), to(v6, SOCKET_PORT)],
        Duration::from_millis(500),
    );
    assert!(
        warm.iter().all(Option::is_some),
        "no answer on the socket port"
    );
    let xdp_queries = || counter(&xdp_counters(&dir), "queries");
    let (q0, u0) = (xdp_queries(), udp_in(&pair));
    let answers = pair.exchange(
        &[to(v4, XDP_PORT), to(v6, XDP_PORT)],
        Duration::from_millis(500),
    );
    assert!(
        answers.iter().all(Option::is_some),
        "not answered over XDP: {answers:?}\n{}",
        server.log_tail(20)
    );
    assert_eq!(xdp_queries() - q0, 2, "both over XDP");
    assert_eq!(udp_in(&pair), u0, "none through the kernel's stack");

    // The way back through another interface (a second veth pair inside the
    // namespace, the client's addresses routed to it with their neighbour
    // entries known: the lookup succeeds with that interface's MAC): the
    // kernel's stack takes them.
    let id = std::process::id() % 100_000;
    let (other, peer) = (format!("lro{id}"), format!("lrp{id}"));
    let ip = |args: &[&str]| {
        pair.ip(&pair.server_ns, args)
            .unwrap_or_else(|e| panic!("{e}"))
    };
    ip(&["link", "add", &other, "type", "veth", "peer", "name", &peer]);
    ip(&["link", "set", &other, "up"]);
    ip(&["link", "set", &peer, "up"]);
    let client = [
        ("-4", CLIENT_V4.to_string(), 32),
        ("-6", CLIENT_V6.to_string(), 128),
    ];
    for (family, addr, len) in &client {
        ip(&[
            family,
            "route",
            "add",
            &format!("{addr}/{len}"),
            "dev",
            &other,
        ]);
        ip(&[
            family,
            "neigh",
            "replace",
            addr,
            "lladdr",
            "02:00:5e:00:53:02",
            "dev",
            &other,
            "nud",
            "permanent",
        ]);
    }
    let (q0, u0) = (xdp_queries(), udp_in(&pair));
    pair.exchange(
        &[to(v4, XDP_PORT), to(v6, XDP_PORT)],
        Duration::from_millis(300),
    );
    assert_eq!(xdp_queries(), q0, "the route leaves by {other}: not XDP's");
    assert_eq!(udp_in(&pair) - u0, 2, "the kernel's stack took both");

    // A blackhole: dropped by the program, seen by neither.
    for (family, addr, len) in &client {
        ip(&[
            family,
            "route",
            "del",
            &format!("{addr}/{len}"),
            "dev",
            &other,
        ]);
    }
    ip(&["route", "add", "blackhole", &format!("{CLIENT_V4}/32")]);
    ip(&[
        "-6",
        "route",
        "add",
        "blackhole",
        &format!("{CLIENT_V6}/128"),
    ]);
    let (q0, u0) = (xdp_queries(), udp_in(&pair));
    let answers = pair.exchange(
        &[to(v4, XDP_PORT), to(v6, XDP_PORT)],
        Duration::from_millis(300),
    );
    assert!(answers.iter().all(Option::is_none), "{answers:?}");
    assert_eq!(xdp_queries(), q0, "dropped before the socket");
    assert_eq!(udp_in(&pair), u0, "dropped before the stack");
    assert!(server.alive(), "{}", server.log_tail(20));
}

/// `xdp-busypoll-budget` (Knot's `xdp.busypoll-budget`): the sockets busy
/// poll and the start says so; the interface's `napi_defer_hard_irqs` and
/// `gro_flush_timeout` at 0 are named in a warning; with both set, the kernel
/// leaves receiving to the worker's polls, and queries over IPv4 and IPv6
/// are still answered over XDP.
#[test]
fn xdp_busy_polling_answers_and_names_the_device_settings() {
    let Some(pair) = veth_pair("xdp_busy_polling_answers_and_names_the_device_settings") else {
        return;
    };
    let dir = TempDir::new("xdp-busy");
    let zones = vec![big_zone(&dir)];
    let server = start_in_namespace(&pair, &dir, &zones, "xdp-busypoll-budget = 64\n");
    let log = server.log();
    assert!(
        log.contains("busy polling (budget 64, 20 µs)"),
        "{}",
        server.log_tail(20)
    );
    assert!(
        log.contains(&format!(
            "{} has napi_defer_hard_irqs 0 and gro_flush_timeout 0",
            pair.server_if
        )),
        "no warning about the device:\n{}",
        server.log_tail(20)
    );
    let settings = format!(
        "echo 2 > /sys/class/net/{0}/napi_defer_hard_irqs && \
         echo 200000 > /sys/class/net/{0}/gro_flush_timeout",
        pair.server_if
    );
    sh_in_server_ns(&pair, &settings);
    let query = Query::new("ns.xdp.test.", 1, 1).to_wire();
    let to = |ip: std::net::IpAddr| ("udp", SocketAddr::new(ip, XDP_PORT), query.clone());
    let (v4, v6) = (SERVER_V4.into(), SERVER_V6.into());
    let xdp_queries = || counter(&xdp_counters(&dir), "queries");
    let q0 = xdp_queries();
    // Each query reaches the worker through its own busy poll, or through
    // the kernel's deferred receive (after gro_flush_timeout) while it sleeps.
    for round in 0..5 {
        let answers = pair.exchange(&[to(v4), to(v6)], Duration::from_millis(500));
        assert!(
            answers.iter().all(Option::is_some),
            "round {round}: not answered over XDP while busy polling: {answers:?}\n{}",
            server.log_tail(20)
        );
    }
    // 200 more, back to back.
    let more: Vec<_> = (0..100).flat_map(|_| [to(v4), to(v6)]).collect();
    let answers = pair.exchange(&more, Duration::from_millis(1000));
    let answered = answers.iter().filter(|a| a.is_some()).count();
    assert_eq!(answered, more.len(), "{}", server.log_tail(20));
    assert_eq!(xdp_queries() - q0, 10 + more.len() as u64, "all over XDP");
}

/// Runs `script` with sh in the server's namespace; it must succeed.
fn sh_in_server_ns(pair: &VethPair, script: &str) {
    let status = pair
        .command(&pair.server_ns, std::path::Path::new("sh"))
        .args(["-c", script])
        .status()
        .expect("sh");
    assert!(status.success(), "{script}");
}

/// A server end that receives in a kernel thread (threaded NAPI, as the
/// benchmark sets it up) is pointed out at the start: under a flood that
/// thread takes its CPU from the worker unless it runs after it or elsewhere.
#[test]
fn xdp_start_points_out_a_threaded_receive() {
    let Some(pair) = veth_pair("xdp_start_points_out_a_threaded_receive") else {
        return;
    };
    // veth has NAPI instances (and so threads) with GRO on.
    let threaded = format!(
        "ethtool -K {0} gro on && echo 1 > /sys/class/net/{0}/threaded",
        pair.server_if
    );
    sh_in_server_ns(&pair, &threaded);
    let dir = TempDir::new("xdp-threaded");
    let zones = vec![big_zone(&dir)];
    let server = start_in_namespace(&pair, &dir, &zones, "");
    let hint = format!(
        "{} receives in kernel threads (threaded NAPI, named napi/{}-N)",
        pair.server_if, pair.server_if
    );
    assert!(server.log().contains(&hint), "{}", server.log_tail(20));
    // And it answers through them.
    let query = Query::new("ns.xdp.test.", 1, 1).to_wire();
    let answers = pair.exchange(
        &[("udp", SocketAddr::new(SERVER_V4.into(), XDP_PORT), query)],
        Duration::from_millis(1000),
    );
    assert!(answers[0].is_some(), "{}", server.log_tail(20));
    assert_eq!(counter(&xdp_counters(&dir), "queries"), 1, "over XDP");
}
