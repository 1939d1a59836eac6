//! Against a real knotd primary (skipped when knotd is missing) and
//! fake TCP/UDP servers on threads. Ports 16200-16239 on 127.0.0.1.

use std::fmt::Write as _;
use std::io::Write as _;
use std::net::TcpListener;
use std::process::{Command, Stdio};

use lode_peers::{program, Acl, Action, Content, Kind, Server, Spec, Zone as PeerZone};
use lode_tsig::Algorithm;

use super::*;

const KEY_NAME: &str = "xfr-key";
const SECRET: &str = "8+5gjWLaa1vXm1Z8Ah8HPj7mK6pTgfj0n6YJ7Ja4wGU=";
const WRONG_SECRET: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
const ZONE: &str = "fetch.test.";

fn key(secret: &str) -> Key {
    Key::from_text(KEY_NAME, Algorithm::HmacSha256, secret).expect("test key")
}

fn zone() -> Name {
    Name::parse(ZONE, None).expect("zone name")
}

fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// The zone the primary starts with: enough records for several AXFR messages.
fn zone_text() -> String {
    let mut z = format!(
        "$ORIGIN {ZONE}\n$TTL 300\n@ SOA ns1 hostmaster 1 3600 600 86400 300\n@ NS ns1\n\
         ns1 A 192.0.2.1\nwww A 192.0.2.2\n@ MX 10 www\ntxt TXT \"hello world\"\n"
    );
    for i in 0..4000 {
        let _ = writeln!(z, "h{i} A 198.51.{}.{}", i / 250, i % 250);
    }
    z
}

/// A knotd primary of [`ZONE`] started by the harness; the key may
/// transfer and update; stopped by PID on drop.
struct Knot(Server);

impl Knot {
    /// None when knotd is not installed.
    fn start(port: u16) -> Option<Knot> {
        if program("knotd").is_none() {
            eprintln!("knotd missing (package knot): test skipped");
            return None;
        }
        let xfr_update = Acl::new("xfr-update", &[Action::Transfer, Action::Update]);
        let spec = Spec::new(Kind::Knot, port)
            .key(lode_peers::Key::new(KEY_NAME, "hmac-sha256", SECRET))
            .acl(xfr_update.from("127.0.0.1").key(KEY_NAME))
            .zone(
                PeerZone::primary(ZONE, Content::Text(zone_text()))
                    .acls(&["xfr-update"])
                    .extra("    zonefile-load: whole\n    semantic-checks: on\n    serial-policy: increment\n"),
            );
        Some(Knot(Server::start(&spec).unwrap_or_else(|e| panic!("{e}"))))
    }

    fn source(&self, secret: Option<&str>) -> Source {
        Source {
            addr: self.0.addr(),
            key: secret.map(key).map(std::sync::Arc::new),
            tls: None,
            via: None,
        }
    }

    fn knotc(&self, args: &[&str]) {
        if let Err(e) = self.0.knotc(args) {
            panic!("{e}");
        }
    }

    /// Runs knsupdate `commands` (one `send` per UPDATE) with the key.
    fn update(&self, commands: &str) {
        let script = format!(
            "server {} {}\nkey hmac-sha256:{KEY_NAME} {SECRET}\nzone {ZONE}\norigin {ZONE}\nttl 300\n{commands}\nquit\n",
            self.0.addr().ip(),
            self.0.addr().port()
        );
        let mut child = Command::new(program("knsupdate").expect("knsupdate"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("knsupdate");
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(script.as_bytes()).expect("knsupdate stdin");
        }
        let out = child.wait_with_output().expect("knsupdate");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && !text.contains("ERROR"),
            "knsupdate: {text}"
        );
    }

    /// The zone's records as `kdig AXFR` gives them, the SOA once.
    fn kdig_axfr(&self) -> Vec<Record> {
        let out = Command::new(program("kdig").expect("kdig"))
            .arg(format!("@{}", self.0.addr().ip()))
            .arg("-p")
            .arg(self.0.addr().port().to_string())
            .arg("-y")
            .arg(format!("hmac-sha256:{KEY_NAME}:{SECRET}"))
            .arg(ZONE)
            .arg("AXFR")
            .arg("+noall")
            .arg("+answer")
            .output()
            .expect("kdig");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut records = lode_zonefile::parse_str(&text, "kdig", &zone())
            .expect("kdig output parses")
            .records;
        let last_soa = records
            .iter()
            .rposition(|r| r.rtype == Rtype::SOA)
            .expect("an SOA");
        records.remove(last_soa);
        records
    }
}

/// Records in a canonical order, to compare as multisets.
fn sorted(mut records: Vec<Record>) -> Vec<Record> {
    records.sort_by(|a, b| {
        (a.owner.key(), a.rtype.0, a.class.0, a.ttl, &a.rdata).cmp(&(
            b.owner.key(),
            b.rtype.0,
            b.class.0,
            b.ttl,
            &b.rdata,
        ))
    });
    records
}

fn limits() -> Limits {
    Limits {
        total: Duration::from_secs(30),
        idle: Duration::from_secs(10),
        records: 1_000_000,
    }
}

#[test]
fn soa_and_axfr_from_knot() {
    let Some(knot) = Knot::start(16200) else {
        return;
    };
    let t = Duration::from_secs(5);
    let plain = query_soa(&knot.source(None), &zone(), t).expect("unsigned SOA");
    let signed = query_soa(&knot.source(Some(SECRET)), &zone(), t).expect("signed SOA");
    assert_eq!(plain, signed);
    assert_eq!(soa_serial(&signed), 1);

    let mut got = Vec::new();
    let done = transfer(
        &knot.source(Some(SECRET)),
        &zone(),
        None,
        &limits(),
        &mut |r| got.push(r),
    )
    .expect("AXFR");
    match done {
        Transfer::Full { soa, records } => {
            assert_eq!(soa, signed);
            assert!(records.is_empty(), "records went to the sink");
        }
        other => panic!("AXFR gave {other:?}"),
    }
    assert_eq!(got.len(), 4006);
    assert_eq!(sorted(got), sorted(knot.kdig_axfr()));

    // The record limit.
    let small = Limits {
        records: 100,
        ..limits()
    };
    let e = transfer(
        &knot.source(Some(SECRET)),
        &zone(),
        None,
        &small,
        &mut |_| {},
    )
    .expect_err("over the limit");
    assert!(
        matches!(
            e.cause,
            Cause::Xfr {
                error: XfrError::TooManyRecords(100),
                ..
            }
        ),
        "{e}"
    );

    // A wrong key: the server's TSIG error (or NOTAUTH).
    let wrong = knot.source(Some(WRONG_SECRET));
    let e = query_soa(&wrong, &zone(), t).expect_err("wrong key SOA");
    assert!(
        matches!(e.cause, Cause::Tsig(_) | Cause::Rcode(rcode::NOTAUTH)),
        "{e}"
    );
    let e = transfer(&wrong, &zone(), None, &limits(), &mut |_| {}).expect_err("wrong key");
    assert!(
        matches!(e.cause, Cause::Tsig(_) | Cause::Rcode(rcode::NOTAUTH)),
        "{e}"
    );
    assert!(
        e.to_string().starts_with("AXFR from 127.0.0.1@16200: "),
        "{e}"
    );

    // Unsigned AXFR: the ACL wants the key.
    let e = transfer(&knot.source(None), &zone(), None, &limits(), &mut |_| {})
        .expect_err("unsigned AXFR");
    assert!(matches!(e.cause, Cause::Rcode(_)), "{e}");

    // UPDATE forwarding: the reply comes back as it is (unsigned: refused).
    let id = 0x1234u16;
    let mut upd = Vec::new();
    upd.extend_from_slice(&id.to_be_bytes());
    upd.extend_from_slice(&(u16::from(opcode::UPDATE) << 11).to_be_bytes());
    upd.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
    upd.extend_from_slice(zone().as_wire());
    upd.extend_from_slice(&[0, 6, 0, 1]);
    let reply = exchange_tcp(&knot.source(None), &upd, t).expect("UPDATE reply");
    assert_eq!(message::id(&reply), id);
    assert_eq!(lode_wire::message::opcode(&reply), opcode::UPDATE);
    assert_ne!(message::header_flags(&reply) & flags::QR, 0);
}

#[test]
fn ixfr_from_knot() {
    let Some(knot) = Knot::start(16201) else {
        return;
    };
    let src = knot.source(Some(SECRET));
    let t = Duration::from_secs(5);
    let first = query_soa(&src, &zone(), t).expect("SOA");
    for i in 1..=3 {
        knot.update(&format!(
            "update add new{i} 300 A 203.0.113.{i}\nupdate delete h{i} A\nsend\n"
        ));
    }
    let now = query_soa(&src, &zone(), t).expect("SOA");
    assert_eq!(soa_serial(&now), 4);

    let mut sunk = 0;
    let got = transfer(&src, &zone(), Some(&first), &limits(), &mut |_| sunk += 1).expect("IXFR");
    let Transfer::Incremental(changes) = got else {
        panic!("IXFR gave {got:?}");
    };
    assert_eq!(sunk, 0);
    assert_eq!(changes.len(), 3);
    for (i, c) in changes.iter().enumerate() {
        let i = i as u32 + 1;
        assert_eq!((c.serial_from(), c.serial_to()), (i, i + 1));
        let added: Vec<_> = c.added.iter().map(|r| r.owner.to_string()).collect();
        assert_eq!(added, [format!("new{i}.{ZONE}")]);
        let removed: Vec<_> = c.removed.iter().map(|r| r.owner.to_string()).collect();
        assert_eq!(removed, [format!("h{i}.{ZONE}")]);
    }

    let got = transfer(&src, &zone(), Some(&now), &limits(), &mut |_| {}).expect("IXFR");
    assert_eq!(got, Transfer::UpToDate(now.clone()));

    // Without a journal, Knot answers IXFR with the whole zone.
    knot.knotc(&["zone-purge", "-f", ZONE, "+journal"]);
    let mut records = Vec::new();
    let got = transfer(&src, &zone(), Some(&first), &limits(), &mut |r| {
        records.push(r)
    })
    .expect("AXFR-style IXFR");
    assert!(
        matches!(&got, Transfer::Full { soa, records } if *soa == now && records.is_empty()),
        "{got:?}"
    );
    assert_eq!(sorted(records), sorted(knot.kdig_axfr()));
}

/// A response message: header `id` `hflags`, question `zone` `qtype`,
/// `answers` (names uncompressed).
fn message(id: u16, hflags: u16, qtype: Rtype, answers: &[Record]) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&hflags.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    m.extend_from_slice(&(answers.len() as u16).to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 0]);
    m.extend_from_slice(zone().as_wire());
    m.extend_from_slice(&qtype.0.to_be_bytes());
    m.extend_from_slice(&Class::IN.0.to_be_bytes());
    for r in answers {
        r.put_uncompressed(&mut m);
    }
    m
}

fn record(text: &str) -> Record {
    let z = lode_zonefile::parse_str(text, "test", &zone()).expect("record");
    z.records.into_iter().next().expect("one record")
}

fn soa() -> Record {
    record("@ 300 SOA ns1 hostmaster 7 3600 600 86400 300")
}

/// Reads one length-prefixed request; its ID.
fn read_request(s: &mut TcpStream) -> u16 {
    let mut len = [0u8; 2];
    s.read_exact(&mut len).expect("request length");
    let mut req = vec![0u8; usize::from(u16::from_be_bytes(len))];
    s.read_exact(&mut req).expect("request");
    message::id(&req)
}

fn write_framed(s: &mut TcpStream, msg: &[u8]) {
    let mut framed = (msg.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(msg);
    // The client may have hung up already (it stops at the first bad message).
    let _ = s.write_all(&framed);
}

#[test]
fn closed_mid_transfer_is_cut() {
    let listener = TcpListener::bind(local(16230)).expect("bind");
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        let id = read_request(&mut s);
        let answers = [soa(), record("www 300 A 192.0.2.2")];
        let qr_aa = flags::QR | flags::AA;
        write_framed(&mut s, &message(id, qr_aa, Rtype::AXFR, &answers));
    });
    let src = Source {
        addr: local(16230),
        key: None,
        tls: None,
        via: None,
    };
    let e = transfer(&src, &zone(), None, &limits(), &mut |_| {}).expect_err("cut");
    server.join().expect("server thread");
    assert_eq!(
        e.cause,
        Cause::Cut {
            messages: 1,
            records: 2
        }
    );
    assert_eq!(
        e.to_string(),
        "AXFR from 127.0.0.1@16230: connection closed after 1 message (2 records)"
    );
}

/// How the fake signed AXFR server spoils its stream.
#[derive(Clone, Copy)]
enum Spoil {
    /// Message 2's MAC does not match its bytes.
    Tamper,
    /// The last message is not signed.
    UnsignedEnd,
}

/// A server on `port` answering one AXFR in three messages, signed
/// with the test key, spoiled as `spoil` says.
fn signed_axfr_server(port: u16, spoil: Spoil) -> std::thread::JoinHandle<()> {
    let listener = TcpListener::bind(local(port)).expect("bind");
    std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        let mut len = [0u8; 2];
        s.read_exact(&mut len).expect("request length");
        let mut req = vec![0u8; usize::from(u16::from_be_bytes(len))];
        s.read_exact(&mut req).expect("request");
        let mut keys = lode_tsig::Keys::new();
        keys.insert(key(SECRET)).expect("key");
        let lode_tsig::Verified::Signed(signed) =
            lode_tsig::verify_request(&req, &keys, unix_now())
        else {
            panic!("the request is not signed with the key");
        };
        let id = message::id(&req);
        let qr_aa = flags::QR | flags::AA;
        let bodies = [
            vec![soa(), record("a 300 A 192.0.2.1")],
            vec![record("b 300 A 192.0.2.2")],
            vec![soa()],
        ];
        let mut prior = signed.request_mac;
        for (i, body) in bodies.iter().enumerate() {
            let mut m = message(id, qr_aa, Rtype::AXFR, body);
            let n = m.len();
            m.resize(n + 200, 0);
            let k = key(SECRET);
            let now = unix_now();
            let a = match (i, spoil) {
                (2, Spoil::UnsignedEnd) => {
                    m.truncate(n);
                    write_framed(&mut s, &m);
                    continue;
                }
                (0, _) => lode_tsig::sign_response(&mut m, n, &k, prior.as_slice(), now, 0),
                _ => lode_tsig::sign_next(&mut m, n, &k, prior.as_slice(), now),
            }
            .expect("sign");
            m.truncate(a.len);
            prior = a.mac;
            if i == 1 && matches!(spoil, Spoil::Tamper) {
                // The A record's last address octet.
                m[n - 1] ^= 1;
            }
            write_framed(&mut s, &m);
        }
    })
}

#[test]
fn every_message_is_verified() {
    let src = |port| Source {
        addr: local(port),
        key: Some(std::sync::Arc::new(key(SECRET))),
        tls: None,
        via: None,
    };
    let server = signed_axfr_server(16234, Spoil::Tamper);
    let e = transfer(&src(16234), &zone(), None, &limits(), &mut |_| {}).expect_err("tamper");
    server.join().expect("server thread");
    assert_eq!(
        e.to_string(),
        "AXFR from 127.0.0.1@16234: TSIG BADSIG in message 2"
    );
    let server = signed_axfr_server(16235, Spoil::UnsignedEnd);
    let mut got = 0;
    let e = transfer(&src(16235), &zone(), None, &limits(), &mut |_| got += 1)
        .expect_err("unsigned end");
    server.join().expect("server thread");
    assert!(matches!(e.cause, Cause::Tsig(_)), "{e}");
    assert_eq!(got, 3);
}

#[test]
fn silent_server_times_out() {
    let listener = TcpListener::bind(local(16231)).expect("bind");
    let server = std::thread::spawn(move || {
        // Accepts twice and never answers; holds each socket a while.
        let (a, _) = listener.accept().expect("accept");
        let (b, _) = listener.accept().expect("accept");
        std::thread::sleep(Duration::from_secs(3));
        drop((a, b));
    });
    let src = Source {
        addr: local(16231),
        key: None,
        tls: None,
        via: None,
    };
    // The idle timeout first.
    let idle = Limits {
        total: Duration::from_secs(5),
        idle: Duration::from_millis(500),
        records: 10,
    };
    let start = Instant::now();
    let e = transfer(&src, &zone(), None, &idle, &mut |_| {}).expect_err("idle");
    assert!(start.elapsed() < Duration::from_millis(1500), "{e}");
    assert_eq!(
        e.cause,
        Cause::Timeout {
            what: "no data",
            limit: Duration::from_millis(500)
        }
    );
    // Then the total one.
    let total = Limits {
        total: Duration::from_millis(700),
        idle: Duration::from_secs(10),
        records: 10,
    };
    let start = Instant::now();
    let e = transfer(&src, &zone(), Some(&soa()), &total, &mut |_| {}).expect_err("total");
    assert!(start.elapsed() < Duration::from_millis(1700), "{e}");
    assert_eq!(
        e.to_string(),
        "IXFR from 127.0.0.1@16231: not finished within 700 ms"
    );
    server.join().expect("server thread");
}

#[test]
fn truncated_soa_answer_is_asked_again_over_tcp() {
    let udp = UdpSocket::bind(local(16232)).expect("bind UDP");
    let tcp = TcpListener::bind(local(16232)).expect("bind TCP");
    let server = std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        let (n, from) = udp.recv_from(&mut buf).expect("UDP query");
        let id = message::id(&buf[..n]);
        let tc = flags::QR | flags::AA | flags::TC;
        udp.send_to(&message(id, tc, Rtype::SOA, &[]), from)
            .expect("send");
        let (mut s, _) = tcp.accept().expect("accept");
        let id = read_request(&mut s);
        let qr_aa = flags::QR | flags::AA;
        write_framed(&mut s, &message(id, qr_aa, Rtype::SOA, &[soa()]));
    });
    let src = Source {
        addr: local(16232),
        key: None,
        tls: None,
        via: None,
    };
    let got = query_soa(&src, &zone(), Duration::from_secs(5)).expect("SOA over TCP");
    server.join().expect("server thread");
    assert_eq!(got, soa());
}

#[test]
fn soa_answer_checks() {
    let udp = UdpSocket::bind(local(16233)).expect("bind UDP");
    let server = std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        // Not authoritative, then NXDOMAIN, then a stray ID before a good answer.
        for hflags in [
            flags::QR,
            flags::QR | flags::AA | rcode::NXDOMAIN,
            flags::QR | flags::AA,
        ] {
            let (n, from) = udp.recv_from(&mut buf).expect("UDP query");
            let id = message::id(&buf[..n]);
            if hflags == flags::QR | flags::AA {
                let stray = message(id ^ 1, hflags, Rtype::SOA, &[]);
                udp.send_to(&stray, from).expect("send");
            }
            udp.send_to(&message(id, hflags, Rtype::SOA, &[soa()]), from)
                .expect("send");
        }
    });
    let src = Source {
        addr: local(16233),
        key: None,
        tls: None,
        via: None,
    };
    let t = Duration::from_secs(5);
    let e = query_soa(&src, &zone(), t).expect_err("no AA");
    assert!(matches!(e.cause, Cause::Malformed(_)), "{e}");
    let e = query_soa(&src, &zone(), t).expect_err("NXDOMAIN");
    assert_eq!(e.cause, Cause::Rcode(rcode::NXDOMAIN));
    assert_eq!(
        e.to_string(),
        "SOA query to 127.0.0.1@16233: answered NXDOMAIN"
    );
    assert_eq!(query_soa(&src, &zone(), t).expect("SOA"), soa());
    server.join().expect("server thread");
}

#[test]
fn numbers_for_operators() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(4211), "4,211");
    assert_eq!(thousands(20_000_000), "20,000,000");
    assert_eq!(seconds(Duration::from_secs(10)), "10 s");
    assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
    assert_eq!(Limits::default().idle, Duration::from_secs(10));
    let e = FetchError {
        op: Op::Ixfr,
        peer: "192.0.2.1:53".parse().expect("address"),
        cause: Cause::Tsig("BADSIG in message 3".into()),
    };
    assert_eq!(
        e.to_string(),
        "IXFR from 192.0.2.1@53: TSIG BADSIG in message 3"
    );
    let e = Cause::Cut {
        messages: 12,
        records: 4211,
    };
    assert_eq!(
        e.to_string(),
        "connection closed after 12 messages (4,211 records)"
    );
    let _ = Cause::Io(String::new()).to_string();
}
