//! Twenty thousand small zones that take updates: a hosting
//! company's zone count on one server.
//!
//! `lode serve` gets 20,000 zones of six records each, every one with an ACL
//! that allows TSIG-signed updates and a journal folder. Then:
//!
//! - every zone answers its SOA, within a bounded start-up time;
//! - the server runs a bounded number of threads (the writer pool, not a
//!   thread per zone) and keeps few files open, and writes no journal at
//!   start (zones that never change write nothing);
//! - updates to random zones (four TCP clients) are acknowledged, the server
//!   is killed with SIGKILL, every zone's journal is cut back to its header
//!   (what a power cut may leave: the zones' own journal writes are not
//!   synced, the commit log shared by all zones is), the server is started
//!   again, and every acknowledged record is served — and the thread bound
//!   holds again.

mod common;

use common::*;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

const ZONES: usize = 20_000;
const KEY_NAME: &str = "many-key.";
const KEY_SECRET: &str = "bG9kZS1tYW55LXpvbmVzLWtleS0zMi1ieXRlcyEhISE=";
/// Updates sent per client (to random zones).
const UPDATES_PER_CLIENT: usize = 100;
const CLIENTS: usize = 4;
/// The most threads the server may run: 2 UDP workers, the TCP event
/// loops, the writer pool (2), and a few fixed ones (reloader, NOTIFY,
/// signals...) — far from one per zone.
const MAX_THREADS: usize = 24;
/// The most files it may keep open (sockets, journals of zones in use).
const MAX_FDS: usize = 64;
/// The most files open after a burst of updates to hundreds of zones (the
/// writers close journals beyond 128 open).
const MAX_FDS_UPDATING: usize = MAX_FDS + 128;
/// Start-up with every zone answering, in the debug build on 2 CPUs.
const START_WITHIN: Duration = Duration::from_secs(60);

fn origin(i: usize) -> String {
    format!("z{i}.many.test.")
}

/// Writes the zone files and the configuration; returns the configuration.
fn write_setup(dir: &Path) -> std::path::PathBuf {
    let zones = dir.join("zones");
    std::fs::create_dir_all(&zones).expect("zones folder");
    let mut conf = format!(
        "journal-dir = \"journal\"\ncontrol = \"\"\nbackground-workers = 2\n\
         [[key]]\nid = \"{KEY_NAME}\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{KEY_SECRET}\"\n\
         [[acl]]\nid = \"upd\"\naddress = [\"127.0.0.1\"]\nkey = [\"{KEY_NAME}\"]\naction = [\"update\"]\n"
    );
    for i in 0..ZONES {
        let o = origin(i);
        std::fs::write(
            zones.join(format!("z{i}.zone")),
            format!(
                "$ORIGIN {o}\n$TTL 3600\n@ SOA ns1 host 1 3600 600 86400 300\n@ NS ns1\n@ NS ns2\n\
                 ns1 A 192.0.2.1\nns2 A 192.0.2.2\nwww A 192.0.2.80\n"
            ),
        )
        .expect("zone file");
        conf.push_str(&format!(
            "[[zone]]\nname = \"{o}\"\nfile = \"zones/z{i}.zone\"\nacl = [\"upd\"]\n"
        ));
    }
    let path = dir.join("lode.toml");
    std::fs::write(&path, conf).expect("configuration");
    path
}

/// A field of /proc/PID/status.
fn status_field(pid: u32, field: &str) -> usize {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    text.lines()
        .find_map(|l| {
            l.strip_prefix(field)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The zones (by index) whose SOA is not answered authoritatively (four
/// threads over UDP, each query tried three times).
fn silent_zones(addr: SocketAddr) -> Vec<usize> {
    let handles: Vec<_> = (0..4)
        .map(|k| {
            std::thread::spawn(move || {
                (0..ZONES)
                    .filter(|i| i % 4 == k)
                    .filter(|&i| {
                        let q = Query::new(&origin(i), 6, 1).to_wire();
                        !(0..3).any(|_| {
                            udp_exchange(addr, &q, Duration::from_secs(1)).is_some_and(|a| {
                                let m = Message::parse(&a);
                                m.rcode() == 0 && m.aa && m.answer.len() == 1
                            })
                        })
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    handles
        .into_iter()
        .flat_map(|h| h.join().expect("query thread"))
        .collect()
}

/// One client: signed single-record updates to random zones over one TCP
/// connection; returns the names acknowledged NOERROR.
fn client(addr: SocketAddr, t: usize) -> Vec<String> {
    let alg: lode_tsig::Algorithm = "hmac-sha256".parse().expect("algorithm");
    let key = lode_tsig::Key::from_text(KEY_NAME, alg, KEY_SECRET).expect("key");
    let mut rng = Rng::new(0x5eed + t as u64);
    let mut s = TcpStream::connect(addr).expect("connect");
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let mut acked = Vec::new();
    for i in 0..UPDATES_PER_CLIENT {
        let zone = origin(rng.below(ZONES));
        let name = format!("u{t}-{i}.{zone}");
        let add = RawRr::new(&name, 1, 300, &[198, 51, 100, (i % 250) as u8]);
        let mut msg = update_message((t << 12 | i) as u16, &zone, &[], &[add]);
        lode_tsig::sign_request_vec(&mut msg, &key, unix_now()).expect("sign");
        let answer = tcp_send_recv(&mut s, &msg).expect("update answered");
        let m = Message::parse(&answer);
        assert_eq!(m.rcode(), 0, "update of {zone} answered\n{}", m.to_text());
        acked.push(name);
    }
    acked
}

#[test]
fn twenty_thousand_updatable_zones_start_take_updates_and_survive_kill9() {
    let dir = TempDir::new("many-zones");
    let conf = write_setup(&dir.0);
    let port = pick_port(15900);
    let last = origin(ZONES - 1);
    let started = Instant::now();
    let mut server = start_lode_config(&conf, port, &dir.0.join("lode-0.log"), &[&last])
        .unwrap_or_else(|e| panic!("lode did not start: {e}"));
    let silent = silent_zones(server.addr);
    let took = started.elapsed();
    assert!(
        silent.is_empty(),
        "{} zones do not answer, e.g. {}",
        silent.len(),
        origin(silent[0])
    );
    let pid = server.pid();
    let (threads, fds, rss) = (
        status_field(pid, "Threads:"),
        open_files(pid),
        status_field(pid, "VmRSS:"),
    );
    eprintln!(
        "{ZONES} zones answering {:.1} s after the start; {threads} threads, {fds} open files, {} MiB resident",
        took.as_secs_f64(),
        rss / 1024
    );
    assert!(took < START_WITHIN, "start-up took {took:?}");
    assert!(threads <= MAX_THREADS, "{threads} threads");
    assert!(fds <= MAX_FDS, "{fds} open files");
    let journal = dir.0.join("journal");
    let files = std::fs::read_dir(&journal).map_or(0, |d| d.count());
    assert_eq!(files, 0, "files written in {} at start", journal.display());

    let addr = server.addr;
    let acked: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..CLIENTS)
            .map(|t| s.spawn(move || client(addr, t)))
            .collect();
        hs.into_iter()
            .flat_map(|h| h.join().expect("client"))
            .collect()
    });
    assert_eq!(acked.len(), CLIENTS * UPDATES_PER_CLIENT);
    let (threads, fds) = (status_field(pid, "Threads:"), open_files(pid));
    eprintln!(
        "after {} updates: {threads} threads, {fds} open files",
        acked.len()
    );
    assert!(threads <= MAX_THREADS, "{threads} threads under updates");
    assert!(fds <= MAX_FDS_UPDATING, "{fds} open files under updates");
    server.kill9();
    // A power cut: the journals' own writes were never synced (the commit
    // log was), so a file system may have kept none of them.
    let mut cut = 0;
    for e in std::fs::read_dir(&journal)
        .expect("journal folder")
        .flatten()
    {
        let path = e.path();
        if path.extension().is_some_and(|x| x == "jnl") {
            let data = std::fs::read(&path).expect("journal");
            // magic, version, origin length and origin, file id, checksum
            let header = 13 + data[12] as usize + 8 + 4;
            if data.len() > header {
                let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                f.set_len(header as u64).unwrap();
                cut += 1;
            }
        }
    }
    assert!(cut > 0, "no journal had anything to lose");

    let server = start_lode_config(&conf, port, &dir.0.join("lode-1.log"), &[&last])
        .unwrap_or_else(|e| panic!("lode did not start again: {e}"));
    let missing: Vec<&String> = acked
        .iter()
        .filter(|name| {
            let q = Query::new(name, 1, 1).to_wire();
            !(0..3).any(|_| {
                udp_exchange(server.addr, &q, Duration::from_secs(1)).is_some_and(|a| {
                    let m = Message::parse(&a);
                    m.rcode() == 0 && m.answer.len() == 1
                })
            })
        })
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged updates lost after kill -9, e.g. {}\n{}",
        missing.len(),
        acked.len(),
        missing[0],
        server.log_tail(20)
    );
    assert!(
        server.log().contains("commit log read back"),
        "the commit log was not read back:\n{}",
        server.log_tail(20)
    );
    assert!(
        silent_zones(server.addr).is_empty(),
        "zones silent after the restart"
    );
    let threads = status_field(server.pid(), "Threads:");
    assert!(
        threads <= MAX_THREADS,
        "{threads} threads after the restart"
    );
}
