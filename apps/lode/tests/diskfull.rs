//! A full disk under the journal (issue §7).
//!
//! The journal folder is a 64 KiB tmpfs mounted for the test (root only:
//! without the right to mount the test is skipped, loudly), a filler file
//! placed in it. Updates, each adding a TXT record of about 200 octets, are
//! sent until they get SERVFAIL (the journal write fails with ENOSPC). Then:
//!
//! - queries are answered correctly throughout (checked after each update);
//! - every update answered NOERROR is served, every SERVFAIL-ed one is not,
//!   and the serial moved by exactly the number of NOERRORs;
//! - the same holds after a restart on the full disk (the journal replays);
//! - once the filler is removed, updates succeed again.

mod common;

use common::*;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const ZONE: &str = "full.test.";
const SERIAL0: u32 = 50;
/// Consecutive SERVFAILs after which the disk counts as full.
const FULL_AFTER: usize = 5;

/// A tmpfs mounted at a folder; unmounted when dropped (also on a failed
/// assertion), lazily, so that a server still running cannot keep it.
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(dir: &Path, size: &str) -> Result<Mount, String> {
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if out.status.success() {
            Ok(Mount(dir.to_path_buf()))
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }
}

/// A 64 KiB tmpfs at `dir`, or None (said) when it cannot be mounted and
/// LODE_REQUIRE_MOUNT is not 1.
fn tmpfs_or_skip(dir: &Path, what: &str) -> Option<Mount> {
    match Mount::tmpfs(dir, "64k") {
        Ok(m) => Some(m),
        Err(e) => {
            if std::env::var("LODE_REQUIRE_MOUNT").as_deref() == Ok("1") {
                panic!("cannot mount a tmpfs: {e}");
            }
            eprintln!("SKIPPED: cannot mount a tmpfs for {what} ({e}); run as root");
            None
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn write_config(dir: &Path, journal: &Path) -> PathBuf {
    let zone = format!(
        "$ORIGIN {ZONE}\n$TTL 300\n@ SOA ns hostmaster {SERIAL0} 3600 600 86400 300\n@ NS ns\nns A 192.0.2.1\nstill A 192.0.2.2\n"
    );
    std::fs::write(dir.join("full.test.zone"), zone).expect("write zone");
    let conf = format!(
        r#"journal-dir = "{}"
control = ""

[[acl]]
id = "local"
address = ["127.0.0.1"]
action = ["update"]

[[zone]]
name = "{ZONE}"
file = "full.test.zone"
acl = ["local"]
"#,
        journal.display()
    );
    let path = dir.join("lode.toml");
    std::fs::write(&path, conf).expect("write config");
    path
}

/// Sends the update adding the TXT record of `name`; returns the rcode.
fn add(s: &mut TcpStream, id: u16, name: &str) -> Option<u16> {
    let text = format!("{name} {}", "x".repeat(200));
    let msg = update_message(
        id,
        ZONE,
        &[],
        &[RawRr::new(name, 16, 300, &txt_rdata(&text))],
    );
    tcp_send_recv(s, &msg).map(|a| Message::parse(&a).rcode())
}

/// Whether `name` has its TXT record (true) or does not exist (false).
fn served(addr: SocketAddr, name: &str) -> Result<bool, String> {
    let a = udp_exchange(
        addr,
        &Query::new(name, 16, 1).to_wire(),
        Duration::from_secs(2),
    )
    .ok_or(format!("{name}: no answer"))?;
    let m = Message::parse(&a);
    match m.rcode() {
        0 if m.answer.len() == 1 && m.answer[0].rdata.starts_with(&format!("\"{name} ")) => {
            Ok(true)
        }
        3 => Ok(false),
        _ => Err(format!("{name}: unexpected answer\n{}", m.to_text())),
    }
}

/// A normal query, answered as the zone file says.
fn normal_query_ok(addr: SocketAddr) -> Result<(), String> {
    let a = udp_exchange(
        addr,
        &Query::new(&format!("still.{ZONE}"), 1, 1).to_wire(),
        Duration::from_secs(2),
    )
    .ok_or("still: no answer")?;
    let m = Message::parse(&a);
    if m.rcode() == 0 && m.aa && m.answer.len() == 1 && m.answer[0].rdata == "192.0.2.2" {
        Ok(())
    } else {
        Err(format!("still A answered wrongly:\n{}", m.to_text()))
    }
}

/// Every acknowledged name served, every failed one not, and the serial
/// moved by exactly the acknowledged count.
fn check_state(addr: SocketAddr, acked: &[String], failed: &[String], label: &str) {
    for n in acked {
        assert_eq!(served(addr, n), Ok(true), "{label}: acknowledged {n}");
    }
    for n in failed {
        assert_eq!(served(addr, n), Ok(false), "{label}: SERVFAIL-ed {n}");
    }
    assert_eq!(
        query_serial(addr, ZONE),
        Some(SERIAL0 + acked.len() as u32),
        "{label}: serial"
    );
    normal_query_ok(addr).unwrap_or_else(|e| panic!("{label}: {e}"));
}

#[test]
fn a_full_journal_disk_fails_updates_cleanly() {
    let dir = TempDir::new("diskfull");
    let journal = dir.0.join("journal");
    std::fs::create_dir_all(&journal).expect("journal folder");
    let Some(_mount) = tmpfs_or_skip(&journal, "the journal") else {
        return;
    };
    let filler = journal.join("filler");
    std::fs::write(&filler, vec![0u8; 16 * 1024]).expect("filler");
    let conf = write_config(&dir.0, &journal);
    let port = pick_port_in(15480, 15484);
    let mut server = start_lode_config(&conf, port, &dir.0.join("lode-0.log"), &[ZONE])
        .unwrap_or_else(|e| panic!("{e}"));
    let mut s = TcpStream::connect(server.addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");

    let (mut acked, mut failed) = (Vec::new(), Vec::new());
    let mut in_a_row = 0;
    for i in 0..2000u16 {
        let name = format!("f{i}.{ZONE}");
        match add(&mut s, i, &name) {
            // An update may succeed again after a SERVFAIL when the
            // writer's background work freed room meanwhile (a journal
            // flushed into its state, a commit-log segment removed): what
            // matters is that each answer tells the truth (`check_state`).
            Some(0) => {
                in_a_row = 0;
                acked.push(name);
            }
            Some(2) => {
                in_a_row += 1;
                failed.push(name);
            }
            other => panic!("{name}: answered {other:?}:\n{}", server.log_tail(10)),
        }
        normal_query_ok(server.addr).unwrap_or_else(|e| panic!("after update {i}: {e}"));
        if in_a_row >= FULL_AFTER {
            break;
        }
    }
    eprintln!(
        "{} updates acknowledged before the disk filled, {} SERVFAIL",
        acked.len(),
        failed.len()
    );
    assert!(acked.len() >= 20, "only {} updates fit", acked.len());
    assert!(in_a_row >= FULL_AFTER, "the disk never filled");
    assert!(
        server.log().contains("journal write failed"),
        "no journal failure logged:\n{}",
        server.log_tail(10)
    );
    check_state(server.addr, &acked, &failed, "full disk");

    // Restart on the full disk: the journal replays.
    server.kill9();
    server = start_lode_config(&conf, port, &dir.0.join("lode-1.log"), &[ZONE])
        .unwrap_or_else(|e| panic!("restart on a full disk: {e}"));
    check_state(server.addr, &acked, &failed, "restarted on a full disk");
    // The zone's state snapshot plus the journal after it hold every
    // acknowledged change (a full journal is flushed into the state).
    assert!(
        server.log().contains("changesets replayed") || server.log().contains("state at serial"),
        "neither state nor replay logged:\n{}",
        server.log_tail(10)
    );

    // Space again: updates succeed.
    std::fs::remove_file(&filler).expect("remove filler");
    let mut s = TcpStream::connect(server.addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    for i in 0..5u16 {
        let name = format!("again{i}.{ZONE}");
        assert_eq!(add(&mut s, i, &name), Some(0), "{name} after freeing space");
        acked.push(name);
    }
    check_state(server.addr, &acked, &failed, "after freeing space");
    server.kill9();
}

/// A full disk under the sorted runs of a zone file being read: `lode
/// check` fails naming the run file and the reason, and leaves nothing
/// behind (the runs are unlinked as made).
#[test]
fn a_full_disk_for_sorted_runs_fails_the_load_naming_the_file() {
    let dir = TempDir::new("diskfull-runs");
    let runs = dir.0.join("runs");
    std::fs::create_dir_all(&runs).expect("runs folder");
    let Some(_mount) = tmpfs_or_skip(&runs, "the runs") else {
        return;
    };
    // About 300 KB of runs, in a random order.
    let mut zone = format!("$ORIGIN {ZONE}\n$TTL 300\n@ SOA ns hostmaster 1 3600 600 86400 300\n@ NS ns\nns A 192.0.2.1\n");
    for i in 0..10_000u32 {
        zone += &format!("h{} A 192.0.2.2\n", i.wrapping_mul(2_654_435_761) % 100_000);
    }
    let file = dir.0.join("full.test.zone");
    std::fs::write(&file, zone).expect("write zone");
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["check", "--origin", ZONE])
        .arg(&file)
        .env("TMPDIR", &runs)
        .env("LODE_ZONE_RUNS", "16k")
        .output()
        .expect("run lode check");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains(&format!("the sorted run {}/lode-sort-", runs.display()))
            && text.contains("No space left on device"),
        "{text}"
    );
    let left: Vec<_> = std::fs::read_dir(&runs).expect("runs").collect();
    assert!(left.is_empty(), "{left:?}");
    // With room, the same file is read.
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["check", "--origin", ZONE])
        .arg(&file)
        .env("LODE_ZONE_RUNS", "16k")
        .output()
        .expect("run lode check");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
