//! Under attack: response-rate limiting against one flooding
//! source and a spoofed-source reflection flood, DNS cookies (the same
//! answers as Knot with mod-cookies and the same secret, and a valid cookie
//! exempt from RRL), TCP clients still served while one source holds every
//! connection, and queries of up to 64 KiB over UDP and TCP.
//!
//! Every load is bounded in count and time; servers listen on 127.0.0.1,
//! clients send from other 127.0.0.0/8 addresses to be other sources.

mod common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use common::*;

const ZONE: &str = "$ORIGIN guard.test.\n$TTL 300\n@ SOA ns1 host 1 3600 900 604800 300\n@ NS ns1\nns1 A 192.0.2.1\nwww A 192.0.2.2\n* TXT \"wild\"\n";
/// 16 bytes of cookie secret shared by Knot and Lode.
const SECRET: &str = "000102030405060708090a0b0c0d0e0f";

fn zone(dir: &Path) -> ZoneSpec {
    let file = dir.join("guard.test.zone");
    std::fs::write(&file, ZONE).unwrap();
    ZoneSpec {
        origin: "guard.test.".into(),
        file,
    }
}

/// Starts Lode on a port of 16500–16549 with `extra` configuration lines.
fn lode(dir: &TempDir, extra: &str) -> Server {
    let z = zone(&dir.0);
    let conf = dir.0.join("lode.toml");
    std::fs::write(
        &conf,
        format!(
            "control = \"\"\nnsid = \"{NSID}\"\n{extra}\n[[zone]]\nname = \"guard.test.\"\nfile = \"{}\"\n",
            z.file.display()
        ),
    )
    .unwrap();
    let port = pick_port_in(16500, 16549);
    start_lode_config(&conf, port, &dir.0.join("lode.log"), &["guard.test."])
        .unwrap_or_else(|e| panic!("{e}"))
}

/// An EDNS option: code, data.
type EdnsOption = (u16, Vec<u8>);

fn query(name: &str, qtype: u16, id: u16, options: Vec<EdnsOption>) -> Vec<u8> {
    let mut q = Query::new(name, qtype, 1);
    q.id = id;
    q.edns = Some(Edns {
        size: 1232,
        options,
        ..Edns::default()
    });
    q.to_wire()
}

/// What came back for a flood: full answers, slipped (TC) ones, nothing.
#[derive(Debug, Default)]
struct Tally {
    sent: usize,
    full: usize,
    slipped: usize,
    elapsed: Duration,
}

/// Sends `count` queries (`make(i)`) from `source` at `rate` per second and
/// reads the answers meanwhile and for 300 ms after.
fn flood(
    to: SocketAddr,
    source: Ipv4Addr,
    count: usize,
    rate: u32,
    make: impl Fn(usize) -> Vec<u8>,
) -> Tally {
    let sock = UdpSocket::bind((source, 0)).unwrap();
    sock.set_nonblocking(true).unwrap();
    let mut t = Tally::default();
    let mut buf = vec![0u8; 4096];
    let start = Instant::now();
    let mut read = |t: &mut Tally| {
        while let Ok(n) = sock.recv(&mut buf) {
            if n >= 12 {
                if buf[2] & 0x02 != 0 {
                    t.slipped += 1;
                } else {
                    t.full += 1;
                }
            }
        }
    };
    for i in 0..count {
        let due = start + Duration::from_secs_f64(i as f64 / f64::from(rate));
        while Instant::now() < due {
            read(&mut t);
            std::thread::sleep(Duration::from_micros(200));
        }
        if sock.send_to(&make(i), to).is_ok() {
            t.sent += 1;
        }
    }
    t.elapsed = start.elapsed();
    let end = Instant::now() + Duration::from_millis(300);
    while Instant::now() < end {
        read(&mut t);
        std::thread::sleep(Duration::from_millis(5));
    }
    t
}

fn log_of(dir: &TempDir) -> String {
    std::fs::read_to_string(dir.0.join("lode.log")).unwrap_or_default()
}

#[test]
fn one_flooding_source_gets_the_limit_and_others_full_service() {
    let dir = TempDir::new("guard-rrl");
    let rate = 50u32;
    let server = lode(&dir, "[rrl]\nrate-limit = 50\nslip = 2\n");
    let to = server.addr;
    // A quiet client beside the flood: 20 queries/s from another /24.
    let quiet = std::thread::spawn(move || {
        flood(to, Ipv4Addr::new(127, 0, 9, 1), 60, 20, |i| {
            query("www.guard.test.", 1, i as u16, vec![])
        })
    });
    // The flood: 800 queries/s for 3 s of the same answer from one address.
    let t = flood(to, Ipv4Addr::new(127, 0, 0, 2), 2400, 800, |i| {
        query("www.guard.test.", 1, i as u16, vec![])
    });
    let q = quiet.join().unwrap();
    let secs = t.elapsed.as_secs_f64();
    let expected = f64::from(rate) * secs + f64::from(rate / 2);
    let full = t.full as f64;
    assert!(
        (full - expected).abs() <= expected * 0.10,
        "full answers {full} for {secs:.2} s, expected {expected:.0} ± 10 % ({t:?})"
    );
    let limited = (t.sent - t.full) as f64;
    let slipped = t.slipped as f64;
    assert!(
        (slipped - limited / 2.0).abs() <= limited * 0.05 + 2.0,
        "slip 2: {slipped} of {limited} limited answers sent truncated ({t:?})"
    );
    assert_eq!(q.full, q.sent, "the quiet client lost answers: {q:?}");
    // A random-subdomain flood (NXDOMAIN keyed on the zone): one bucket.
    let t = flood(to, Ipv4Addr::new(127, 0, 0, 3), 800, 800, |i| {
        query(&format!("n{i}.nothing.guard.test."), 1, i as u16, vec![])
    });
    let expected = f64::from(rate) * t.elapsed.as_secs_f64() + f64::from(rate / 2);
    assert!(
        (t.full as f64) <= expected * 1.10,
        "random names are one bucket: {t:?}"
    );
    let log = log_of(&dir);
    assert!(
        log.contains("rrl: answers to 127.0.0.0/24 limited"),
        "limiting is logged:\n{log}"
    );
    drop(server);
}

#[test]
fn spoofed_sources_are_limited_per_prefix() {
    let dir = TempDir::new("guard-refl");
    let server = lode(&dir, "[rrl]\nrate-limit = 20\nslip = 0\n");
    let to = server.addr;
    // 250 sources in one /24, 4 queries each within about half a second: one bucket.
    let mut same = 0usize;
    let mut spread = 0usize;
    let mut socks = Vec::new();
    for h in 1..=250u8 {
        let a = UdpSocket::bind((Ipv4Addr::new(127, 0, 20, h), 0)).unwrap();
        let b = UdpSocket::bind((Ipv4Addr::new(127, 21, h, 1), 0)).unwrap();
        for s in [&a, &b] {
            s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        }
        socks.push((a, b));
    }
    let start = Instant::now();
    for round in 0..4u16 {
        for (a, b) in &socks {
            let q = query("www.guard.test.", 1, round, vec![]);
            a.send_to(&q, to).unwrap();
            b.send_to(&q, to).unwrap();
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let mut buf = [0u8; 1500];
    for (a, b) in &socks {
        while a.recv(&mut buf).is_ok() {
            same += 1;
        }
        while b.recv(&mut buf).is_ok() {
            spread += 1;
        }
    }
    let bound = (20.0 * (elapsed + 0.1) + 10.0) * 1.1;
    assert!(
        (same as f64) <= bound,
        "1000 queries from one /24 in {elapsed:.2} s: {same} answered, at most {bound:.0}"
    );
    assert_eq!(spread, 1000, "250 /24s at 4 queries each are never limited");
    drop(server);
}

/// A server cookie for `client` from `server`: the option of its BADCOOKIE answer.
fn fresh_cookie(server: SocketAddr, from: Ipv4Addr, client: &[u8; 8]) -> Vec<u8> {
    let sock = UdpSocket::bind((from, 0)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let q = query("www.guard.test.", 1, 1, vec![(10, client.to_vec())]);
    sock.send_to(&q, server).unwrap();
    let mut buf = [0u8; 1500];
    let n = sock.recv(&mut buf).expect("an answer to a client cookie");
    let m = Message::parse(&buf[..n]);
    assert_eq!(
        m.rcode(),
        23,
        "BADCOOKIE to a client cookie over UDP (Knot)"
    );
    m.opts[0]
        .options
        .iter()
        .find(|o| o.0 == 10)
        .expect("a COOKIE option")
        .1
        .clone()
}

#[test]
fn a_valid_cookie_is_exempt_from_rate_limiting() {
    let dir = TempDir::new("guard-cookie-rrl");
    let server = lode(
        &dir,
        &format!("[cookies]\nsecret = \"{SECRET}\"\n[rrl]\nrate-limit = 20\nslip = 0\n"),
    );
    let from = Ipv4Addr::new(127, 0, 30, 1);
    let cookie = fresh_cookie(server.addr, from, b"clientck");
    assert_eq!(cookie.len(), 24);
    let t = flood(server.addr, from, 600, 600, |i| {
        query("www.guard.test.", 1, i as u16, vec![(10, cookie.clone())])
    });
    assert_eq!(t.full, t.sent, "valid cookie, never limited: {t:?}");
    // The same flood without the cookie is limited.
    let t = flood(server.addr, from, 600, 600, |i| {
        query("www.guard.test.", 1, i as u16, vec![])
    });
    assert!(t.full < 100, "without a cookie: {t:?}");
    drop(server);
}

#[test]
fn cookies_answer_as_knot_with_mod_cookies() {
    if !knot_available() {
        panic!("knotd is needed (the README's test command installs it)");
    }
    let dir = TempDir::new("guard-cookie-knot");
    let z = zone(&dir.0);
    let lode = lode(&dir, &format!("[cookies]\nsecret = \"{SECRET}\"\n"));
    let kport = pick_port_in(16500, 16549);
    let mut spec = knot_spec(std::slice::from_ref(&z), kport, false);
    spec.sections = format!("mod-cookies:\n  - id: default\n    secret: 0x{SECRET}\n");
    spec.template_extra
        .push_str("    global-module: mod-cookies/default\n");
    let knot = Server::start(spec).unwrap_or_else(|e| panic!("{e}"));
    let client = b"12345678".to_vec();
    let valid = fresh_cookie(lode.addr, Ipv4Addr::LOCALHOST, b"12345678");
    let mut bogus = client.clone();
    bogus.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, 9, 9, 9, 9, 9, 9, 9, 9]);
    let cases: Vec<(&str, Vec<EdnsOption>)> = vec![
        ("no cookie", vec![]),
        ("client cookie", vec![(10, client.clone())]),
        ("valid server cookie", vec![(10, valid.clone())]),
        ("wrong server cookie", vec![(10, bogus)]),
        (
            "short server cookie",
            vec![(10, [&client[..], &[1u8; 8]].concat())],
        ),
        ("7 bytes", vec![(10, vec![1; 7])]),
        ("9 bytes", vec![(10, vec![1; 9])]),
        ("41 bytes", vec![(10, vec![1; 41])]),
        ("empty", vec![(10, vec![])]),
        (
            "two, the last valid",
            vec![(10, client.clone()), (10, valid.clone())],
        ),
        ("NSID and cookie", vec![(3, vec![]), (10, client.clone())]),
    ];
    for (what, options) in cases {
        for tcp in [false, true] {
            let q = query("www.guard.test.", 1, 7, options.clone());
            // A second may tick between the two answers (the timestamp):
            // compare again then.
            let mut last = String::new();
            let same = (0..3).any(|_| {
                let ask = |s: &Server| {
                    let a = if tcp {
                        tcp_exchange(s.addr, &q, Duration::from_secs(2))
                    } else {
                        udp_exchange(s.addr, &q, Duration::from_secs(2))
                    };
                    a.map(|m| format!("{:?}", normalised(&m)))
                };
                let (k, l) = (ask(&knot), ask(&lode));
                last = format!("knot {k:?}\nlode {l:?}");
                k == l
            });
            assert!(
                same,
                "{what} over {}:\n{last}",
                if tcp { "TCP" } else { "UDP" }
            );
        }
    }
}

/// A response parsed, without its ID and size (compression may differ).
fn normalised(m: &[u8]) -> Message {
    let mut m = Message::parse(m);
    m.id = 0;
    m.size = 0;
    m
}

#[test]
fn tcp_clients_are_served_while_one_source_holds_every_connection() {
    let dir = TempDir::new("guard-tcp");
    let server = lode(
        &dir,
        "tcp-max-clients = 50\ntcp-max-clients-per-source = 50\n",
    );
    let hog = IpAddr::V4(Ipv4Addr::new(127, 0, 40, 1));
    let mut held = Vec::new();
    for _ in 0..50 {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        s.bind(&SocketAddr::new(hog, 0).into()).unwrap();
        s.connect(&server.addr.into()).unwrap();
        held.push(TcpStream::from(s));
    }
    std::thread::sleep(Duration::from_millis(100));
    let q = query("www.guard.test.", 1, 3, vec![]);
    let mut slowest = Duration::ZERO;
    for _ in 0..20 {
        let t = Instant::now();
        let a =
            tcp_exchange(server.addr, &q, Duration::from_secs(2)).expect("a new client answered");
        slowest = slowest.max(t.elapsed());
        assert_eq!(Message::parse(&a).answer.len(), 1);
    }
    assert!(slowest < Duration::from_millis(500), "slowest {slowest:?}");
    drop(held);
    let log = log_of(&dir);
    assert!(
        log.contains("closed"),
        "closing idle connections is logged:\n{log}"
    );
    drop(server);
}

#[test]
fn queries_up_to_64_kib_are_answered() {
    let dir = TempDir::new("guard-big");
    let server = lode(&dir, "");
    for pad in [4000usize, 65_000] {
        let q = query("www.guard.test.", 1, 5, vec![(12, vec![0; pad])]);
        let a = udp_exchange(server.addr, &q, Duration::from_secs(2))
            .unwrap_or_else(|| panic!("no UDP answer to a {}-byte query", q.len()));
        assert_eq!(Message::parse(&a).answer.len(), 1);
        if q.len() <= 65_535 {
            let a = tcp_exchange(server.addr, &q, Duration::from_secs(2))
                .unwrap_or_else(|| panic!("no TCP answer to a {}-byte query", q.len()));
            assert_eq!(Message::parse(&a).answer.len(), 1);
        }
    }
    drop(server);
}
