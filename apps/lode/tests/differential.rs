//! Differential suite: the same zones served by Knot DNS 3.2 and by Lode, the
//! same queries sent to both, the answers compared field by field.
//!
//! ```text
//! tests/differential/zones/*.zone ─┬─▶ knotd (127.0.0.1:15300-15349) ─┐
//!                                  └─▶ lode serve (15350-15399) ──────┤
//! tests/differential/queries.txt ──▶ UDP and TCP ─▶ both ─▶ independent parser ─▶ compare
//!                                                       tests/differential/accepted.txt ─┘
//! ```
//!
//! Environment: `LODE_DIFF_PEER=knot` compares knotd with a second knotd (to
//! prove the harness: that run must be clean); `LODE_DIFF_FILTER=text` runs
//! only the queries whose line contains `text`; `LODE_REQUIRE_KNOT=1` turns
//! a missing knotd into a failure instead of a skip; `LODE_DIFF_VERBOSE=1`
//! prints Knot's answer to every query.

mod common;

use common::cases::load_cases;
use common::compare::*;
use common::*;
use std::time::Duration;

#[test]
fn knot_and_lode_answer_alike() {
    if !knot_available() {
        return;
    }
    let peer = peer_from_env();
    let zones = zones_in(&repo_root().join("tests/differential/zones"));
    let cases = load_cases();
    let accepted = load_accepted(&repo_root().join("tests/differential/accepted.txt"));
    if std::env::var_os("LODE_DIFF_FILTER").is_none() {
        let orphans: Vec<String> = accepted
            .iter()
            .filter(|a| !cases.iter().any(|c| c.text == a.query))
            .map(|a| {
                format!(
                    "accepted.txt:{}: `{}` is not a line of queries.txt",
                    a.line, a.query
                )
            })
            .collect();
        assert!(orphans.is_empty(), "{}", orphans.join("\n"));
    }
    let knot = start_knot(&zones, pick_port(15300)).unwrap_or_else(|e| panic!("{e}"));
    let mut other = start_peer(peer, &zones, pick_port(15350)).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "differential: {} queries, {} zones, {} against {}",
        cases.len(),
        zones.len(),
        knot.label,
        other.label
    );

    let mut tally = Tally::new(std::env::var_os("LODE_DIFF_VERBOSE").is_some());
    for case in &cases {
        tally.compare(&knot, &other, case, &accepted);
    }
    tally.note_unused(
        &accepted,
        |q| cases.iter().any(|c| c.text == q),
        "accepted.txt",
    );
    let alive = other.alive();
    eprintln!("\ndifferential summary: {}", tally.summary());
    assert!(
        alive,
        "{} died during the run:\n{}",
        other.label,
        other.log_tail(30)
    );
    assert_eq!(
        tally.failures, 0,
        "{} responses differ from Knot (see above)",
        tally.failures
    );
}

/// A response to `www.example.com. A` with one CNAME answer to `host.example.com.`,
/// its RDATA name compressed or not, with the given TTL, AA bit and owner spelling.
fn handmade(compress: bool, ttl: u32, aa: bool, owner_upper: bool) -> Vec<u8> {
    let mut q = Query::new(
        if owner_upper {
            "WWW.example.com."
        } else {
            "www.example.com."
        },
        1,
        1,
    );
    q.flags = 0x8000 | if aa { 0x0400 } else { 0 };
    let mut m = q.to_wire();
    m[7] = 1; // ANCOUNT
    m.extend_from_slice(&[0xc0, 12, 0, 5, 0, 1]);
    m.extend_from_slice(&ttl.to_be_bytes());
    let rdata: Vec<u8> = if compress {
        vec![4, b'h', b'o', b's', b't', 0xc0, 16]
    } else {
        name_to_wire("host.example.com.").expect("valid name")
    };
    m.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
    m.extend_from_slice(&rdata);
    m
}

#[test]
fn comparison_sees_differences_and_ignores_compression() {
    let base = Some(handmade(true, 300, true, false));
    assert_eq!(
        differing(&base, &Some(handmade(false, 300, true, false))),
        Vec::<&str>::new()
    );
    assert_eq!(
        differing(&base, &Some(handmade(true, 301, true, false))),
        vec!["answer"]
    );
    assert_eq!(
        differing(&base, &Some(handmade(true, 300, false, false))),
        vec!["flags"]
    );
    assert_eq!(
        differing(&base, &Some(handmade(true, 300, true, true))),
        vec!["question", "answer"]
    );
    assert_eq!(differing(&base, &None), vec!["response"]);
    let mut id = handmade(true, 300, true, false);
    id[0] ^= 0xff;
    assert_eq!(differing(&base, &Some(id)), Vec::<&str>::new());
    let mut cut = handmade(true, 300, true, false);
    cut.pop();
    assert_eq!(differing(&base, &Some(cut)), vec!["answer", "format"]);
    let text = Message::parse(base.as_deref().unwrap_or_default()).to_text();
    assert!(
        text.contains("www.example.com.\t300\tIN\tCNAME\thost.example.com."),
        "{text}"
    );
}

/// RFC 7766 section 6.2.1: many queries written at once on one TCP
/// connection all get answered (in any order), by Knot and by Lode alike;
/// here only "one answer per ID, same question" is checked — the contents
/// are the other test's business.
#[test]
fn pipelined_tcp_queries_are_all_answered() {
    if !knot_available() {
        return;
    }
    let peer = peer_from_env();
    let zones = zones_in(&repo_root().join("tests/differential/zones"));
    let cases: Vec<Case> = load_cases()
        .into_iter()
        .filter(|c| c.tcp)
        .take(200)
        .collect();
    let knot = start_knot(&zones, pick_port(15300)).unwrap_or_else(|e| panic!("{e}"));
    let mut other = start_peer(peer, &zones, pick_port(15350)).unwrap_or_else(|e| panic!("{e}"));
    let mut failures = Vec::new();
    for server in [&knot, &other] {
        let mut s = std::net::TcpStream::connect(server.addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let mut all = Vec::new();
        let mut want = std::collections::BTreeMap::new();
        for (i, c) in cases.iter().enumerate() {
            let mut q = c.query.clone();
            q.id = i as u16;
            let w = q.to_wire();
            want.insert(q.id, Message::parse(&w).question);
            all.extend_from_slice(&(w.len() as u16).to_be_bytes());
            all.extend_from_slice(&w);
        }
        std::io::Write::write_all(&mut s, &all).expect("write");
        for _ in 0..cases.len() {
            let Some(r) = tcp_read_message(&mut s) else {
                failures.push(format!(
                    "{}: connection ended with {} answers missing",
                    server.label,
                    want.len()
                ));
                break;
            };
            let m = Message::parse(&r);
            match want.remove(&m.id) {
                Some(q) if q == m.question => {}
                Some(_) => failures.push(format!(
                    "{}: ID {} answered for another question",
                    server.label, m.id
                )),
                None => failures.push(format!(
                    "{}: unexpected or repeated ID {}",
                    server.label, m.id
                )),
            }
        }
    }
    assert!(
        other.alive(),
        "{} died:\n{}",
        other.label,
        other.log_tail(30)
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Writes a generated ENUM-like zone of `n` numbers (deterministic), with
/// multi-record RRsets, delegations with glue, wildcards and CNAMEs mixed
/// in; returns the zone and the owner names (without the origin).
fn generate_large_zone(dir: &std::path::Path, origin: &str, n: usize) -> (ZoneSpec, Vec<String>) {
    use std::fmt::Write as _;
    let mut rng = Rng::new(0x1a26_e200);
    let mut text = format!(
        "$ORIGIN {origin}\n$TTL 3600\n@ SOA ns hostmaster 1 3600 900 604800 600\n@ NS ns\nns A 192.0.2.53\n"
    );
    let mut owners = Vec::with_capacity(n);
    let mut seen = std::collections::HashSet::new();
    while owners.len() < n {
        let digits: String = (0..9)
            .map(|_| char::from(b'0' + rng.below(10) as u8))
            .collect();
        let owner = digits
            .chars()
            .rev()
            .map(String::from)
            .collect::<Vec<_>>()
            .join(".");
        if !seen.insert(owner.clone()) {
            continue;
        }
        let i = owners.len();
        match i % 500 {
            0 => {
                let _ = writeln!(
                    text,
                    "{owner} NS ns.{owner}\nns.{owner} A 192.0.2.{}",
                    i % 250 + 1
                );
            }
            1 => {
                let _ = writeln!(
                    text,
                    "*.{owner} NAPTR 10 10 \"u\" \"E2U+sip\" \"!^.*$!sip:wild{i}@example.com!\" ."
                );
            }
            2 => {
                let _ = writeln!(text, "{owner} CNAME {}", owners[i - 2]);
            }
            _ => {
                for k in 0..(1 + i % 3) {
                    let _ = writeln!(
                        text,
                        "{owner} NAPTR {} 10 \"u\" \"E2U+sip\" \"!^.*$!sip:+{digits}-{k}@example.com!\" .",
                        100 + k
                    );
                }
            }
        }
        owners.push(owner);
    }
    let file = dir.join(format!("{origin}zone"));
    std::fs::write(&file, text).expect("write generated zone");
    (
        ZoneSpec {
            origin: origin.to_string(),
            file,
        },
        owners,
    )
}

/// A generated zone of 50,000 numbers: exact names, their neighbours, their
/// empty non-terminal ancestors, names below them, in mixed case — where
/// a compact store's index would go wrong first.
#[test]
fn large_generated_zone_answers_alike() {
    if !knot_available() {
        return;
    }
    let peer = peer_from_env();
    let dir = TempDir::new("large-zone");
    let origin = "e164.test.";
    let (zone, owners) = generate_large_zone(&dir.0, origin, 50_000);
    let zones = vec![zone];
    let knot = start_knot(&zones, pick_port(15300)).unwrap_or_else(|e| panic!("{e}"));
    let mut other = start_peer(peer, &zones, pick_port(15350)).unwrap_or_else(|e| panic!("{e}"));
    let mut rng = Rng::new(0x5eed_0002);
    let mut failures = 0usize;
    let mut shown = 0usize;
    let total = 3000;
    for i in 0..total {
        let owner = &owners[rng.below(owners.len())];
        let mut labels: Vec<String> = owner.split('.').map(String::from).collect();
        match i % 6 {
            0 => {}
            1 => {
                let at = rng.below(labels.len());
                labels[at] = char::from(b'0' + rng.below(10) as u8).to_string();
            }
            2 => {
                let keep = 1 + rng.below(labels.len() - 1);
                labels.drain(..labels.len() - keep);
            }
            3 => labels.insert(0, char::from(b'0' + rng.below(10) as u8).to_string()),
            4 => labels.insert(0, "X".into()),
            _ => {}
        }
        let mut name = format!("{}.{origin}", labels.join("."));
        if i % 7 == 0 {
            name = name.to_uppercase();
        }
        let qtype = [35u16, 35, 35, 1, 255, 2][i % 6];
        let mut q = Query::new(&name, qtype, 1);
        q.id = i as u16;
        if i % 4 == 0 {
            q.edns = Some(Edns {
                size: 1232,
                ..Edns::default()
            });
        }
        let wire = q.to_wire();
        let a = exchange(knot.addr, "udp", &wire);
        let b = exchange(other.addr, "udp", &wire);
        let diff = differing(&a, &b);
        if !diff.is_empty() {
            failures += 1;
            if shown < 20 {
                shown += 1;
                eprintln!(
                    "\n=== MISMATCH large zone `{name} {}` differs in: {}\n{}{}{}",
                    type_to_string(qtype),
                    diff.join(", "),
                    line_diff(&a, &b, &diff),
                    show(&knot.label, &a),
                    show(&other.label, &b)
                );
            }
        }
    }
    eprintln!("large zone: {total} queries, {failures} mismatches");
    assert!(
        other.alive(),
        "{} died:\n{}",
        other.label,
        other.log_tail(30)
    );
    assert_eq!(
        failures, 0,
        "{failures} of {total} answers differ from Knot (see above)"
    );
}

/// The same answers over IPv6 (::1) as over IPv4, from each server: a
/// sample of queries.txt over UDP and TCP. (Whether Lode answers like Knot
/// is the other tests' business; here each must not change with the
/// address family.) Skipped without IPv6 loopback.
#[test]
fn ipv6_answers_like_ipv4() {
    if !knot_available() {
        return;
    }
    if !ipv6_loopback_available() {
        eprintln!("SKIPPED: no IPv6 loopback");
        return;
    }
    let peer = peer_from_env();
    let zones = zones_in(&repo_root().join("tests/differential/zones"));
    let cases: Vec<Case> = load_cases().into_iter().step_by(5).collect();
    let knot = start_knot_on(&zones, pick_port(15300), true).unwrap_or_else(|e| panic!("{e}"));
    let mut other =
        start_peer_on(peer, &zones, pick_port(15350), true).unwrap_or_else(|e| panic!("{e}"));
    let mut failures = Vec::new();
    for server in [&knot, &other] {
        let v4 = server.addr;
        let v6 = std::net::SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, v4.port()));
        for case in &cases {
            let wire = case.query.to_wire();
            for transport in ["udp", "tcp"] {
                let (a, b) = (
                    exchange(v4, transport, &wire),
                    exchange(v6, transport, &wire),
                );
                let diff = differing(&a, &b);
                if !diff.is_empty() {
                    failures.push(format!(
                        "{} [{transport}] `{}`: IPv6 differs from IPv4 in {diff:?}\n{}",
                        server.label,
                        case.text,
                        line_diff(&a, &b, &diff)
                    ));
                }
            }
        }
    }
    for f in &failures {
        eprintln!("{f}");
    }
    eprintln!(
        "ipv6: {} queries per server, {} mismatches",
        cases.len(),
        failures.len()
    );
    assert!(
        other.alive(),
        "{} died:\n{}",
        other.label,
        other.log_tail(30)
    );
    assert!(
        failures.is_empty(),
        "{} IPv6 mismatches (see above)",
        failures.len()
    );
}
