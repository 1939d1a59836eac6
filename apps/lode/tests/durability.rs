//! Durability of acknowledged UPDATEs across `kill -9` (issue §7).
//!
//! `lode serve` takes TSIG-signed updates for a small zone, its journal in a
//! temporary folder. Sixteen client threads, one TCP connection each, send
//! single-record updates (each adds a TXT record at a name of its own) as
//! fast as they are answered and note every NOERROR. After 5 s (or a bounded
//! number of acknowledgements) the server is killed with SIGKILL while
//! updates are in flight, then started again on the same configuration.
//! Then:
//!
//! - the server starts and answers, and its log says how many changesets it
//!   replayed — all of them (the journal is never flushed here);
//! - every acknowledged record is served;
//! - nothing is torn: the records served among all those sent (acknowledged
//!   or in flight) are exactly as many as the serial moved (each update adds
//!   one record and increments the serial by one), so the SOA serial is at
//!   least the initial one plus the acknowledged count.
//!
//! This is done twice in one test (kill, restart, more updates, kill, restart).
//! The judging uses only this suite's own DNS parser; lode_tsig only signs.

mod common;

use common::*;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ZONE: &str = "dur.test.";
const SERIAL0: u32 = 1000;
const KEY_NAME: &str = "dur-key.";
const KEY_SECRET: &str = "bG9kZS1kdXJhYmlsaXR5LXRlc3Qta2V5LTMyYnl0ZXM=";
const CLIENTS: usize = 16;
/// Acknowledged updates per round after which the kill comes early.
const MAX_ACKED: usize = 100_000;
/// How long the clients run before the kill, per round (the second round
/// is shorter, to keep the test short).
const RUN_FOR: [Duration; 2] = [Duration::from_secs(5), Duration::from_secs(2)];

/// Writes the zone file and the configuration; returns the configuration's path.
fn write_config(dir: &Path) -> PathBuf {
    let zone = format!(
        "$ORIGIN {ZONE}\n$TTL 300\n@ SOA ns hostmaster {SERIAL0} 3600 600 86400 300\n@ NS ns\nns A 192.0.2.1\nstill A 192.0.2.2\n"
    );
    std::fs::write(dir.join("dur.test.zone"), zone).expect("write zone");
    let conf = format!(
        r#"journal-dir = "journal"
control = ""
log-level = "info"

[[key]]
id = "{KEY_NAME}"
algorithm = "hmac-sha256"
secret = "{KEY_SECRET}"

[[acl]]
id = "signed"
address = ["127.0.0.1"]
key = ["{KEY_NAME}"]
action = ["update"]

[[zone]]
name = "{ZONE}"
file = "dur.test.zone"
acl = ["signed"]
"#
    );
    let path = dir.join("lode.toml");
    std::fs::write(&path, conf).expect("write config");
    path
}

fn key() -> lode_tsig::Key {
    let alg: lode_tsig::Algorithm = "hmac-sha256".parse().expect("algorithm");
    lode_tsig::Key::from_text(KEY_NAME, alg, KEY_SECRET).expect("key")
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What the clients of one round saw.
#[derive(Debug, Default)]
struct Seen {
    /// Names whose update was answered NOERROR (with a TSIG record).
    acked: Vec<String>,
    /// Names whose update was sent but not answered (in flight at the kill).
    in_flight: Vec<String>,
    /// Answers other than NOERROR: (name, rcode).
    refused: Vec<(String, u16)>,
}

/// The TXT text of the record added at `name`.
fn text_of(name: &str) -> String {
    format!("v={name}")
}

/// One client: updates over one TCP connection until the connection breaks.
fn client(addr: SocketAddr, round: usize, t: usize, acked_total: &AtomicUsize, seen: &Mutex<Seen>) {
    let key = key();
    let Ok(mut s) = TcpStream::connect(addr) else {
        return;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = s.set_nodelay(true);
    for i in 0.. {
        let name = format!("r{round}-t{t}-{i}.{ZONE}");
        let add = RawRr::new(&name, 16, 300, &txt_rdata(&text_of(&name)));
        let mut msg = update_message((i as u16) ^ (t as u16) << 12, ZONE, &[], &[add]);
        lode_tsig::sign_request_vec(&mut msg, &key, unix_now()).expect("sign");
        let answer = tcp_send_recv(&mut s, &msg);
        let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
        match answer {
            None => {
                seen.in_flight.push(name);
                return;
            }
            Some(a) => {
                let m = Message::parse(&a);
                if m.rcode() == 0
                    && m.error.is_none()
                    && m.additional.iter().any(|r| r.rtype == 250)
                {
                    seen.acked.push(name);
                    acked_total.fetch_add(1, Ordering::Relaxed);
                } else {
                    seen.refused.push((name, m.rcode()));
                }
            }
        }
    }
}

/// Runs the clients against `server` for [`RUN_FOR`]`[round - 1]` (or [`MAX_ACKED`]
/// acknowledgements), then SIGKILLs the server with the clients still sending.
fn round_then_kill(server: &mut Server, round: usize) -> Seen {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let acked = Arc::new(AtomicUsize::new(0));
    let addr = server.addr;
    let threads: Vec<_> = (0..CLIENTS)
        .map(|t| {
            let (seen, acked) = (seen.clone(), acked.clone());
            std::thread::spawn(move || client(addr, round, t, &acked, &seen))
        })
        .collect();
    let start = Instant::now();
    while start.elapsed() < RUN_FOR[round - 1] && acked.load(Ordering::Relaxed) < MAX_ACKED {
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = acked.load(Ordering::Relaxed);
    eprintln!(
        "round {round}: {before} updates acknowledged in {:?}; SIGKILL to pid {}",
        start.elapsed(),
        server.pid()
    );
    server.kill9();
    for t in threads {
        t.join().expect("client thread");
    }
    Arc::try_unwrap(seen)
        .map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
        .unwrap_or_default()
}

/// Queries the TXT of every name (four threads over UDP); true where served
/// with exactly the expected text, false where NXDOMAIN. Anything else is a failure.
fn served(addr: SocketAddr, names: &[String]) -> Result<Vec<bool>, String> {
    let chunks: Vec<Vec<(usize, String)>> = (0..4)
        .map(|k| {
            names
                .iter()
                .enumerate()
                .filter(|(i, _)| i % 4 == k)
                .map(|(i, n)| (i, n.clone()))
                .collect()
        })
        .collect();
    let handles: Vec<_> = chunks
        .into_iter()
        .map(|chunk| {
            std::thread::spawn(move || {
                let mut out = Vec::new();
                for (i, name) in chunk {
                    let q = Query::new(&name, 16, 1).to_wire();
                    let mut answer = None;
                    for _ in 0..3 {
                        answer = udp_exchange(addr, &q, Duration::from_secs(1));
                        if answer.is_some() {
                            break;
                        }
                    }
                    let r = match answer {
                        None => Err(format!("{name}: no answer")),
                        Some(a) => {
                            let m = Message::parse(&a);
                            let want = format!("\"{}\"", text_of(&name));
                            match m.rcode() {
                                0 if m.answer.len() == 1
                                    && m.answer[0].rtype == 16
                                    && m.answer[0].rdata == want =>
                                {
                                    Ok(true)
                                }
                                3 if m.answer.is_empty() => Ok(false),
                                _ => Err(format!("{name}: unexpected answer\n{}", m.to_text())),
                            }
                        }
                    };
                    out.push((i, r));
                }
                out
            })
        })
        .collect();
    let mut v = vec![false; names.len()];
    for h in handles {
        for (i, r) in h.join().expect("query thread") {
            v[i] = r?;
        }
    }
    Ok(v)
}

/// The number in the log line "N changesets replayed" (0 when absent).
fn replayed(log: &str) -> usize {
    log.lines()
        .rev()
        .find_map(|l| {
            let before = l.split(" changesets replayed").next()?;
            if before.len() == l.len() {
                return None;
            }
            before.split_whitespace().last()?.parse().ok()
        })
        .unwrap_or(0)
}

/// The serial in the last log line "state at serial N", if any.
fn state_serial(log: &str) -> Option<u32> {
    log.lines().rev().find_map(|l| {
        let after = l.split("state at serial ").nth(1)?;
        after.split_whitespace().next()?.parse().ok()
    })
}

/// Checks the restarted server against everything sent so far.
fn verify(server: &Server, acked: &[String], in_flight: &[String], label: &str) {
    let serial = query_serial(server.addr, ZONE).expect("SOA answered after the restart");
    let moved = serial.wrapping_sub(SERIAL0) as usize;
    let log = server.log();
    // Start = the zone's state snapshot (when its journal was flushed) + the
    // journal after it.
    let state = state_serial(&log).map_or(0, |s| s.wrapping_sub(SERIAL0) as usize);
    let n = state + replayed(&log);
    eprintln!(
        "{label}: serial {serial} (+{moved}), {n} changesets replayed, {} acknowledged, {} in flight at kills",
        acked.len(),
        in_flight.len()
    );
    assert!(
        moved >= acked.len(),
        "{label}: serial {serial} moved by {moved}, fewer than the {} acknowledged updates",
        acked.len()
    );
    assert_eq!(
        n,
        moved,
        "{label}: the state and the log's replayed changesets make {n} changes, the serial moved by {moved}:\n{}",
        server.log_tail(20)
    );
    let got = served(server.addr, acked).unwrap_or_else(|e| panic!("{label}: {e}"));
    let lost: Vec<&String> = acked
        .iter()
        .zip(&got)
        .filter(|(_, ok)| !**ok)
        .map(|(n, _)| n)
        .collect();
    assert!(
        lost.is_empty(),
        "{label}: {} acknowledged updates lost, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
    let extra = served(server.addr, in_flight)
        .unwrap_or_else(|e| panic!("{label}: {e}"))
        .iter()
        .filter(|b| **b)
        .count();
    assert_eq!(
        acked.len() + extra,
        moved,
        "{label}: {} acknowledged + {extra} in-flight records served, but the serial moved by {moved} (torn state?)",
        acked.len()
    );
}

#[test]
fn acknowledged_updates_survive_kill_9_twice() {
    let dir = TempDir::new("durability");
    let conf = write_config(&dir.0);
    let port = pick_port_in(15470, 15479);
    let origins = [ZONE];
    let mut acked = Vec::new();
    let mut in_flight = Vec::new();
    let mut server = start_lode_config(&conf, port, &dir.0.join("lode-0.log"), &origins)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(query_serial(server.addr, ZONE), Some(SERIAL0));
    for round in 1..=2 {
        let seen = round_then_kill(&mut server, round);
        assert!(
            seen.refused.is_empty(),
            "round {round}: updates not acknowledged: {:?}",
            &seen.refused[..seen.refused.len().min(5)]
        );
        assert!(
            seen.acked.len() >= 100,
            "round {round}: only {} updates acknowledged",
            seen.acked.len()
        );
        acked.extend(seen.acked);
        in_flight.extend(seen.in_flight);
        let log = dir.0.join(format!("lode-{round}.log"));
        let restart = Instant::now();
        server = start_lode_config(&conf, port, &log, &origins).unwrap_or_else(|e| {
            panic!("restart after kill {round}: {e}");
        });
        eprintln!("restart {round}: serving after {:?}", restart.elapsed());
        assert!(
            !server.log().contains("damaged"),
            "round {round}: journal damaged:\n{}",
            server.log_tail(20)
        );
        let t = Instant::now();
        verify(&server, &acked, &in_flight, &format!("after kill {round}"));
        eprintln!("verified in {:?}", t.elapsed());
        // The server still takes updates after the replay.
        let name = format!("after-{round}.{ZONE}");
        let mut msg = update_message(
            7,
            ZONE,
            &[],
            &[RawRr::new(&name, 16, 300, &txt_rdata(&text_of(&name)))],
        );
        lode_tsig::sign_request_vec(&mut msg, &key(), unix_now()).expect("sign");
        let r = tcp_exchange(server.addr, &msg, Duration::from_secs(5)).expect("answer");
        assert_eq!(
            Message::parse(&r).rcode(),
            0,
            "update after restart {round}"
        );
        acked.push(name);
    }
    server.kill9();
}
