//! Malformed input: raw packets that no well-behaved client sends, sent to
//! `lode serve` and to knotd alike.
//!
//! For every packet Lode must either do what Knot does (same rcode, or drop
//! when Knot drops) or drop it; answering where Knot drops, or with another
//! rcode, is a failure. Every answer must parse, echo the ID and set QR.
//! After each group a normal query must still be answered correctly, and at
//! the end the process must still be alive (no panic, no abort).
//!
//! `LODE_DIFF_PEER=knot` runs the same checks with a second knotd in Lode's
//! place (proves the harness).

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

/// What a server did with one packet.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    /// No answer within the wait.
    Dropped,
    /// An answer with this rcode (extended included).
    Answered(u16),
}

/// Sends every packet from its own UDP socket at once, then collects answers
/// until `wait` has passed (bounded: one wait per batch of packets).
fn udp_batch(addr: SocketAddr, packets: &[Vec<u8>], wait: Duration) -> Vec<Option<Vec<u8>>> {
    let mut out = Vec::with_capacity(packets.len());
    for chunk in packets.chunks(200) {
        let socks: Vec<UdpSocket> = chunk
            .iter()
            .map(|p| {
                let s = UdpSocket::bind("127.0.0.1:0").expect("bind client socket");
                s.set_nonblocking(true).expect("nonblocking");
                // A send error (e.g. an empty datagram refused) just means no answer.
                let _ = s.send_to(p, addr);
                s
            })
            .collect();
        let mut got: Vec<Option<Vec<u8>>> = vec![None; chunk.len()];
        let deadline = Instant::now() + wait;
        let mut buf = vec![0u8; 65535];
        while Instant::now() < deadline {
            let mut pending = false;
            for (i, s) in socks.iter().enumerate() {
                if got[i].is_none() {
                    match s.recv_from(&mut buf) {
                        Ok((n, from)) if from == addr => got[i] = Some(buf[..n].to_vec()),
                        _ => pending = true,
                    }
                }
            }
            if !pending {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        out.extend(got);
    }
    out
}

/// One answer (or None) per packet sent.
type Answers = Vec<Option<Vec<u8>>>;

/// Each packet to both servers in batches; where the two outcomes differ,
/// the packet is sent again alone to both with a long wait, so that a slow
/// answer on a busy machine is not taken for a drop.
fn udp_both(
    knot: &Server,
    lode: &Server,
    packets: &[Vec<u8>],
    wait: Duration,
) -> (Answers, Answers) {
    let mut ra = udp_batch(knot.addr, packets, wait);
    let mut rb = udp_batch(lode.addr, packets, wait);
    for (i, p) in packets.iter().enumerate() {
        if outcome(&ra[i]) != outcome(&rb[i]) {
            let slow = Duration::from_secs(1);
            if ra[i].is_none() {
                ra[i] = udp_batch(knot.addr, std::slice::from_ref(p), slow).remove(0);
            }
            if rb[i].is_none() {
                rb[i] = udp_batch(lode.addr, std::slice::from_ref(p), slow).remove(0);
            }
        }
    }
    (ra, rb)
}

/// One packet over a fresh TCP connection: the answer, or None on EOF/reset/timeout.
fn tcp_raw(addr: SocketAddr, framed: &[u8], wait: Duration) -> Option<Vec<u8>> {
    let mut s = TcpStream::connect_timeout(&addr, wait).ok()?;
    s.set_read_timeout(Some(wait)).ok()?;
    s.write_all(framed).ok()?;
    let _ = s.shutdown(std::net::Shutdown::Write);
    tcp_read_message(&mut s)
}

fn outcome(r: &Option<Vec<u8>>) -> Outcome {
    match r {
        None => Outcome::Dropped,
        Some(b) => Outcome::Answered(Message::parse(b).rcode()),
    }
}

fn show(o: &Outcome) -> String {
    match o {
        Outcome::Dropped => "dropped".into(),
        Outcome::Answered(r) => rcode_to_string(*r),
    }
}

fn valid_query(name: &str, qtype: u16, edns: bool) -> Vec<u8> {
    let mut q = Query::new(name, qtype, 1);
    q.id = 0xbeef;
    if edns {
        q.edns = Some(Edns {
            size: 1232,
            ..Edns::default()
        });
    }
    q.to_wire()
}

fn set_counts(m: &mut [u8], counts: [u16; 4]) {
    for (i, c) in counts.iter().enumerate() {
        m[4 + 2 * i..6 + 2 * i].copy_from_slice(&c.to_be_bytes());
    }
}

/// A 12-octet header with ID 0xbeef, the given flags word and counts.
fn header(flags: u16, counts: [u16; 4]) -> Vec<u8> {
    let mut m = vec![0xbe, 0xef];
    m.extend_from_slice(&flags.to_be_bytes());
    for c in counts {
        m.extend_from_slice(&c.to_be_bytes());
    }
    m
}

/// An OPT RR (root owner unless `owner` is given).
fn opt_rr(owner: &[u8], size: u16, rdata: &[u8], rdlen: u16) -> Vec<u8> {
    let mut m = owner.to_vec();
    m.extend_from_slice(&41u16.to_be_bytes());
    m.extend_from_slice(&size.to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 0]);
    m.extend_from_slice(&rdlen.to_be_bytes());
    m.extend_from_slice(rdata);
    m
}

/// Named packets: (case name, packet).
type Cases = Vec<(String, Vec<u8>)>;

/// The hand-made groups: (group name, cases).
fn groups() -> Vec<(&'static str, Cases)> {
    let good = valid_query("www.example.com.", 1, false);
    let good_edns = valid_query("www.example.com.", 1, true);
    let mut g = Vec::new();

    g.push((
        "truncated header",
        (0..12)
            .map(|n| (format!("{n} octets"), good[..n].to_vec()))
            .collect(),
    ));
    g.push((
        "truncated question",
        (12..good.len())
            .map(|n| (format!("{n} octets"), good[..n].to_vec()))
            .collect(),
    ));

    let mut names = Vec::new();
    let qd = header(0, [1, 0, 0, 0]);
    let with_q = |name: &[u8]| {
        let mut m = qd.clone();
        m.extend_from_slice(name);
        m.extend_from_slice(&[0, 1, 0, 1]);
        m
    };
    names.push(("pointer to itself".to_string(), with_q(&[0xc0, 12])));
    names.push((
        "label then pointer to itself".to_string(),
        with_q(&[1, b'a', 0xc0, 12]),
    ));
    names.push((
        "pointer loop of two".to_string(),
        with_q(&[1, b'a', 0xc0, 16, 0xc0, 12]),
    ));
    names.push((
        "forward pointer".to_string(),
        with_q(&[0xc0, 20, 0, 1, 0, 1, 0, 0, 3, b'c', b'o', b'm', 0]),
    ));
    names.push(("pointer past the end".to_string(), with_q(&[0xc0, 0xff])));
    names.push(("pointer into the header".to_string(), with_q(&[0xc0, 2])));
    names.push(("label type 0x40".to_string(), with_q(&[0x41, b'a', 0])));
    names.push(("label type 0x80".to_string(), with_q(&[0x81, b'a', 0])));
    names.push((
        "label type 0x40 (EDNS0 bitstring)".to_string(),
        with_q(&[0x41, 0x01, 0xff, 0]),
    ));
    let mut long = Vec::new();
    for _ in 0..5 {
        long.push(63);
        long.extend_from_slice(&[b'a'; 63]);
    }
    long.push(0);
    names.push(("name of 321 octets".to_string(), with_q(&long)));
    let mut just = Vec::new();
    for _ in 0..3 {
        just.push(63);
        just.extend_from_slice(&[b'a'; 63]);
    }
    just.push(61);
    just.extend_from_slice(&[b'a'; 61]);
    just.push(0);
    names.push(("name of 255 octets".to_string(), with_q(&just)));
    let mut over = Vec::new();
    for _ in 0..3 {
        over.push(63);
        over.extend_from_slice(&[b'a'; 63]);
    }
    over.push(62);
    over.extend_from_slice(&[b'a'; 62]);
    over.push(0);
    names.push(("name of 256 octets".to_string(), with_q(&over)));
    names.push((
        "label length past the end".to_string(),
        with_q(&[40, b'a', b'b']),
    ));
    names.push(("no root label".to_string(), {
        let mut m = qd.clone();
        m.extend_from_slice(&[3, b'c', b'o', b'm']);
        m
    }));
    names.push((
        "zero octets in a label".to_string(),
        with_q(&[
            3, 0, 0, 0, 7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 3, b'c', b'o', b'm', 0,
        ]),
    ));
    g.push(("bad names", names));

    let mut counts = Vec::new();
    counts.push(("QDCOUNT 0".to_string(), header(0, [0, 0, 0, 0])));
    counts.push(("QDCOUNT 0 with OPT".to_string(), {
        let mut m = header(0, [0, 0, 0, 1]);
        m.extend_from_slice(&opt_rr(&[0], 1232, &[], 0));
        m
    }));
    counts.push(("QDCOUNT 2, two questions".to_string(), {
        let mut m = good.clone();
        set_counts(&mut m, [2, 0, 0, 0]);
        m.extend_from_slice(&good[12..]);
        m
    }));
    counts.push(("QDCOUNT 2, one question".to_string(), {
        let mut m = good.clone();
        set_counts(&mut m, [2, 0, 0, 0]);
        m
    }));
    counts.push(("ANCOUNT 1, no record".to_string(), {
        let mut m = good.clone();
        set_counts(&mut m, [1, 1, 0, 0]);
        m
    }));
    counts.push(("ANCOUNT 1 with a record".to_string(), {
        let mut m = good.clone();
        set_counts(&mut m, [1, 1, 0, 0]);
        m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1]);
        m
    }));
    counts.push(("NSCOUNT 1 with a record".to_string(), {
        let mut m = good.clone();
        set_counts(&mut m, [1, 0, 1, 0]);
        m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1]);
        m
    }));
    counts.push(("ARCOUNT 1, no record".to_string(), {
        let mut m = good.clone();
        set_counts(&mut m, [1, 0, 0, 1]);
        m
    }));
    counts.push(("all counts 65535".to_string(), {
        let mut m = good.clone();
        set_counts(&mut m, [65535; 4]);
        m
    }));
    g.push(("bad counts", counts));

    let mut ops = Vec::new();
    for op in 0..16u16 {
        let mut m = good.clone();
        m[2] = (m[2] & 0x87) | ((op as u8) << 3);
        ops.push((format!("opcode {op}"), m));
    }
    let mut qr = good.clone();
    qr[2] |= 0x80;
    ops.push(("QR set".to_string(), qr));
    let mut qr_edns = good_edns.clone();
    qr_edns[2] |= 0x80;
    ops.push(("QR set with OPT".to_string(), qr_edns));
    let mut rcode = good.clone();
    rcode[3] |= 0x03;
    ops.push(("rcode 3 in a query".to_string(), rcode));
    g.push(("opcodes and header bits", ops));

    let mut opts = Vec::new();
    let q_with = |count: u16, extra: &[u8]| {
        let mut m = good.clone();
        set_counts(&mut m, [1, 0, 0, count]);
        m.extend_from_slice(extra);
        m
    };
    let root_opt = opt_rr(&[0], 1232, &[], 0);
    opts.push((
        "two OPT".to_string(),
        q_with(2, &[root_opt.clone(), root_opt.clone()].concat()),
    ));
    opts.push((
        "OPT with owner com.".to_string(),
        q_with(1, &opt_rr(&[3, b'c', b'o', b'm', 0], 1232, &[], 0)),
    ));
    opts.push((
        "OPT rdlen beyond the packet".to_string(),
        q_with(1, &opt_rr(&[0], 1232, &[], 40)),
    ));
    opts.push((
        "OPT option length beyond rdlen".to_string(),
        q_with(1, &opt_rr(&[0], 1232, &[0, 10, 0, 20, 1, 2], 6)),
    ));
    opts.push((
        "OPT option header cut".to_string(),
        q_with(1, &opt_rr(&[0], 1232, &[0, 10, 0], 3)),
    ));
    opts.push((
        "OPT cut in its fixed part".to_string(),
        q_with(1, &root_opt[..7]),
    ));
    opts.push(("OPT in the answer section".to_string(), {
        let mut m = good.clone();
        set_counts(&mut m, [1, 1, 0, 0]);
        m.extend_from_slice(&root_opt);
        m
    }));
    opts.push((
        "OPT then an A record".to_string(),
        q_with(
            2,
            &[
                root_opt.clone(),
                vec![0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1],
            ]
            .concat(),
        ),
    ));
    opts.push((
        "OPT with compressed root owner".to_string(),
        q_with(1, &{
            let mut o = vec![0xc0, 28];
            o.extend_from_slice(&root_opt[1..]);
            o
        }),
    ));
    opts.push((
        "OPT version 1".to_string(),
        q_with(1, &{
            let mut o = root_opt.clone();
            o[6] = 1;
            o
        }),
    ));
    opts.push((
        "OPT extended rcode set".to_string(),
        q_with(1, &{
            let mut o = root_opt.clone();
            o[5] = 1;
            o
        }),
    ));
    opts.push((
        "OPT payload 0".to_string(),
        q_with(1, &opt_rr(&[0], 0, &[], 0)),
    ));
    opts.push((
        "cookie option too short".to_string(),
        q_with(1, &opt_rr(&[0], 1232, &[0, 10, 0, 3, 1, 2, 3], 7)),
    ));
    opts.push((
        "ECS option malformed".to_string(),
        q_with(1, &opt_rr(&[0], 1232, &[0, 8, 0, 2, 0, 1], 6)),
    ));
    opts.push((
        "TSIG-looking record without key".to_string(),
        q_with(1, &[0, 0, 250, 0, 255, 0, 0, 0, 0, 0, 0]),
    ));
    g.push(("bad OPT records", opts));

    let mut trail = Vec::new();
    trail.push((
        "one trailing zero".to_string(),
        [good.clone(), vec![0]].concat(),
    ));
    trail.push((
        "100 trailing octets".to_string(),
        [good.clone(), vec![0xab; 100]].concat(),
    ));
    trail.push((
        "trailing after OPT".to_string(),
        [good_edns.clone(), vec![1, 2, 3]].concat(),
    ));
    trail.push(("valid query padded to 512".to_string(), {
        let mut m = good.clone();
        m.resize(512, 0);
        m
    }));
    g.push(("trailing garbage", trail));
    g
}

/// A deterministic corpus: mutations of valid queries and random bytes.
fn corpus(n: usize) -> Vec<Vec<u8>> {
    let seeds = [
        valid_query("www.example.com.", 1, false),
        valid_query("www.example.com.", 1, true),
        valid_query("nosuch.example.com.", 15, true),
        valid_query("4.3.2.1.9.3.9.2.1.2.1.e164.arpa.", 35, true),
        valid_query("a.dn.example.com.", 28, false),
        valid_query("x.child.example.com.", 1, true),
        valid_query("signed.example.", 48, true),
    ];
    let mut rng = Rng::new(0x10de_5eed);
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        let mut p = seeds[i % seeds.len()].clone();
        match rng.below(8) {
            0 => {
                let len = rng.below(80);
                p = (0..len).map(|_| rng.byte()).collect();
                if p.len() >= 3 {
                    p[2] &= 0x7f; // keep QR clear so that more reach the parser
                }
            }
            1 => {
                let cut = rng.below(p.len() + 1);
                p.truncate(cut);
            }
            2 => {
                for _ in 0..=rng.below(4) {
                    let at = rng.below(p.len());
                    p[at] ^= 1 << rng.below(8);
                }
            }
            3 => {
                for _ in 0..=rng.below(4) {
                    let at = rng.below(p.len());
                    p[at] = rng.byte();
                }
            }
            4 => {
                let at = 4 + 2 * rng.below(4);
                p[at] = 0;
                p[at + 1] = rng.below(4) as u8;
            }
            5 => {
                let at = 12 + rng.below(p.len() - 12);
                let b = [0xc0, 0x40, 0x80, 0x3f, 0x00][rng.below(5)];
                p[at] = b;
            }
            6 => {
                let at = rng.below(p.len() + 1);
                let extra: Vec<u8> = (0..rng.below(20)).map(|_| rng.byte()).collect();
                p.splice(at..at, extra);
            }
            _ => {
                p[2] = rng.byte() & 0x7f;
                p[3] = rng.byte();
            }
        }
        v.push(p);
    }
    v
}

/// Checks that the server under test still answers a normal query like Knot.
fn still_serving(knot: &Server, lode: &Server, after: &str, failures: &mut Vec<String>) {
    let q = valid_query("www.example.com.", 1, true);
    let a = udp_exchange(knot.addr, &q, Duration::from_secs(2));
    let b = udp_exchange(lode.addr, &q, Duration::from_secs(2));
    let same = match (&a, &b) {
        (Some(a), Some(b)) => {
            let (ma, mb) = (Message::parse(a), Message::parse(b));
            ma.aspects() == mb.aspects() && mb.rcode() == 0 && !mb.answer.is_empty()
        }
        _ => false,
    };
    if !same {
        failures.push(format!(
            "after {after}: a normal query is no longer answered like Knot ({b:?})"
        ));
    }
}

/// Compares one packet's fate; returns a failure line, or None.
fn judge(
    case: &str,
    packet: &[u8],
    a: &Option<Vec<u8>>,
    b: &Option<Vec<u8>>,
    tally: &mut std::collections::BTreeMap<String, usize>,
    lode_drops: &mut usize,
) -> Option<String> {
    let (oa, ob) = (outcome(a), outcome(b));
    *tally.entry(show(&oa)).or_default() += 1;
    if let Some(resp) = b {
        let m = Message::parse(resp);
        if let Some(e) = &m.error {
            return Some(format!(
                "{case}: unparsable answer ({e}) to {}",
                hex(packet)
            ));
        }
        if !m.qr || packet.len() < 2 || resp[..2] != packet[..2] {
            return Some(format!(
                "{case}: answer without QR or with another ID to {}",
                hex(packet)
            ));
        }
    }
    if oa == ob {
        return None;
    }
    if ob == Outcome::Dropped {
        *lode_drops += 1;
        return None;
    }
    Some(format!(
        "{case}: Knot {} but Lode {} — packet {}",
        show(&oa),
        show(&ob),
        hex(packet)
    ))
}

#[test]
fn malformed_packets_are_answered_like_knot_or_dropped() {
    if !knot_available() {
        return;
    }
    let peer = peer_from_env();
    let zones = zones_in(&repo_root().join("tests/differential/zones"));
    let knot = start_knot(&zones, pick_port(15300)).unwrap_or_else(|e| panic!("{e}"));
    let mut lode = start_peer(peer, &zones, pick_port(15350)).unwrap_or_else(|e| panic!("{e}"));
    let wait = Duration::from_millis(400);
    let mut failures = Vec::new();
    let mut lode_drops = 0usize;
    let mut tally = std::collections::BTreeMap::new();
    let mut total = 0usize;

    for (group, cases) in groups() {
        let packets: Vec<Vec<u8>> = cases.iter().map(|(_, p)| p.clone()).collect();
        let (ra, rb) = udp_both(&knot, &lode, &packets, wait);
        for (((name, p), a), b) in cases.iter().zip(&ra).zip(&rb) {
            total += 1;
            if let Some(f) = judge(
                &format!("[udp] {group}: {name}"),
                p,
                a,
                b,
                &mut tally,
                &mut lode_drops,
            ) {
                failures.push(f);
            }
        }
        // The same over TCP, one connection per packet (empty ones skipped:
        // a zero length prefix is its own case below).
        for (name, p) in cases.iter().filter(|(_, p)| !p.is_empty()) {
            let mut framed = (p.len() as u16).to_be_bytes().to_vec();
            framed.extend_from_slice(p);
            let a = tcp_raw(knot.addr, &framed, Duration::from_secs(3));
            let b = tcp_raw(lode.addr, &framed, Duration::from_secs(3));
            total += 1;
            if let Some(f) = judge(
                &format!("[tcp] {group}: {name}"),
                p,
                &a,
                &b,
                &mut tally,
                &mut lode_drops,
            ) {
                failures.push(f);
            }
        }
        still_serving(&knot, &lode, group, &mut failures);
    }

    let packets = corpus(2000);
    let (ra, rb) = udp_both(&knot, &lode, &packets, wait);
    for (i, ((p, a), b)) in packets.iter().zip(&ra).zip(&rb).enumerate() {
        total += 1;
        if let Some(f) = judge(
            &format!("[udp] corpus #{i}"),
            p,
            a,
            b,
            &mut tally,
            &mut lode_drops,
        ) {
            failures.push(f);
        }
    }
    // Every seventh packet of the corpus over TCP too.
    for (i, p) in packets
        .iter()
        .enumerate()
        .step_by(7)
        .filter(|(_, p)| !p.is_empty())
    {
        let mut framed = (p.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(p);
        let a = tcp_raw(knot.addr, &framed, Duration::from_secs(3));
        let b = tcp_raw(lode.addr, &framed, Duration::from_secs(3));
        total += 1;
        if let Some(f) = judge(
            &format!("[tcp] corpus #{i}"),
            p,
            &a,
            &b,
            &mut tally,
            &mut lode_drops,
        ) {
            failures.push(f);
        }
    }
    still_serving(&knot, &lode, "the random corpus", &mut failures);

    eprintln!(
        "malformed: {total} packets (Knot: {tally:?}), {} failures, {lode_drops} dropped by Lode but answered by Knot",
        failures.len()
    );
    for f in failures.iter().take(60) {
        eprintln!("  {f}");
    }
    assert!(lode.alive(), "{} died:\n{}", lode.label, lode.log_tail(30));
    assert!(
        failures.is_empty(),
        "{} malformed-input failures (see above)",
        failures.len()
    );
}

#[test]
fn tcp_length_prefix_longer_than_data_does_not_hang() {
    if !knot_available() {
        return;
    }
    let peer = peer_from_env();
    let zones = zones_in(&repo_root().join("tests/differential/zones"));
    let mut lode = start_peer(peer, &zones, pick_port(15350)).unwrap_or_else(|e| panic!("{e}"));
    let q = valid_query("www.example.com.", 1, false);

    // Announce 100 octets, send fewer, keep the connection open.
    let mut stalled = TcpStream::connect(lode.addr).expect("connect");
    let mut framed = 100u16.to_be_bytes().to_vec();
    framed.extend_from_slice(&q);
    stalled.write_all(&framed).expect("write");
    // A zero length prefix on another connection.
    let mut zero = TcpStream::connect(lode.addr).expect("connect");
    zero.write_all(&[0, 0]).expect("write");

    // Meanwhile the server answers others, over TCP and UDP.
    let r = tcp_exchange(lode.addr, &q, Duration::from_secs(3));
    assert!(
        r.is_some(),
        "TCP query unanswered while a connection is stalled"
    );
    let r = udp_exchange(lode.addr, &q, Duration::from_secs(3));
    assert!(
        r.is_some(),
        "UDP query unanswered while a connection is stalled"
    );

    // The stalled connections end (idle timeout, or closed at once): bounded wait.
    for (what, s) in [("short frame", &mut stalled), ("zero length", &mut zero)] {
        s.set_read_timeout(Some(Duration::from_secs(40)))
            .expect("timeout");
        let start = Instant::now();
        let mut buf = [0u8; 512];
        let res = s.read(&mut buf);
        let closed = matches!(res, Ok(0))
            || matches!(&res, Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset);
        assert!(
            closed || matches!(res, Ok(n) if n > 0),
            "{what}: connection still open after {:?} ({res:?})",
            start.elapsed()
        );
        eprintln!(
            "{what}: connection ended after {:?} ({res:?})",
            start.elapsed()
        );
    }
    assert!(lode.alive(), "{} died:\n{}", lode.label, lode.log_tail(30));
}

/// Reads length-prefixed answers until EOF or a 3 s silence; returns their rcodes.
fn tcp_rcodes(s: &mut TcpStream) -> Vec<u16> {
    let mut v = Vec::new();
    let _ = s.set_read_timeout(Some(Duration::from_secs(3)));
    while let Some(m) = tcp_read_message(s) {
        v.push(Message::parse(&m).rcode());
        if v.len() > 10 {
            break;
        }
    }
    v
}

/// A broken message followed by a good one on the same TCP connection: does
/// the server go on after the broken one? Lode must do what Knot does (same
/// answers, in order) or stop earlier; it must never answer more than Knot.
#[test]
fn tcp_stream_continues_or_stops_like_knot_after_a_bad_message() {
    if !knot_available() {
        return;
    }
    let peer = peer_from_env();
    let zones = zones_in(&repo_root().join("tests/differential/zones"));
    let knot = start_knot(&zones, pick_port(15300)).unwrap_or_else(|e| panic!("{e}"));
    let mut lode = start_peer(peer, &zones, pick_port(15350)).unwrap_or_else(|e| panic!("{e}"));
    let good = valid_query("www.example.com.", 1, false);
    let mut failures = Vec::new();
    for (group, cases) in groups() {
        for (name, bad) in cases.iter().filter(|(_, p)| p.len() >= 2) {
            let mut framed = Vec::new();
            for m in [bad, &good] {
                framed.extend_from_slice(&(m.len() as u16).to_be_bytes());
                framed.extend_from_slice(m);
            }
            let mut got = Vec::new();
            for server in [&knot, &lode] {
                let mut s = TcpStream::connect(server.addr).expect("connect");
                s.write_all(&framed).expect("write");
                let _ = s.shutdown(std::net::Shutdown::Write);
                got.push(tcp_rcodes(&mut s));
            }
            let (a, b) = (&got[0], &got[1]);
            if a != b && !(b.len() < a.len() && a.starts_with(b)) {
                failures.push(format!("{group}: {name}: Knot answered {a:?}, Lode {b:?}"));
            }
        }
    }
    for f in &failures {
        eprintln!("  {f}");
    }
    assert!(lode.alive(), "{} died:\n{}", lode.label, lode.log_tail(30));
    assert!(
        failures.is_empty(),
        "{} TCP stream differences (see above)",
        failures.len()
    );
}
