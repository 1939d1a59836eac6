//! `lode serve` as a daemon: the systemd readiness protocol, tested without
//! systemd (the test holds the `$NOTIFY_SOCKET`), JSON logs, and the switch
//! to an unprivileged user after binding (as root only).
//!
//! Ports 16660-16669.

mod common;

use std::io::Read;
use std::net::SocketAddr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{udp_exchange, wait_exit, Query, TempDir};

const ZONE: &str =
    "$ORIGIN d.test.\n$TTL 300\n@ SOA ns1 hm 7 3600 600 86400 300\n@ NS ns1\nns1 A 192.0.2.53\n";

/// True when `d.test. SOA` answers NOERROR with one answer record.
fn answers(addr: SocketAddr) -> bool {
    let q = Query::new("d.test.", 6, 1).to_wire();
    udp_exchange(addr, &q, Duration::from_millis(300))
        .is_some_and(|a| a.len() > 12 && a[3] & 0x0F == 0 && a[6..8] == [0, 1])
}

/// The next notification (None after `timeout`).
fn next_state(sock: &UnixDatagram, timeout: Duration) -> Option<String> {
    sock.set_read_timeout(Some(timeout)).ok()?;
    let mut buf = [0u8; 4096];
    let n = sock.recv(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf[..n]).into_owned())
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(child.id().to_string())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill -{sig} {}", child.id());
}

fn stderr_of(mut child: Child) -> String {
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut s);
    }
    s
}

#[test]
fn ready_is_sent_once_the_zone_answers_then_reloading_and_stopping() {
    let dir = TempDir::new("notify");
    let zone = dir.0.join("d.zone");
    std::fs::write(&zone, ZONE).unwrap();
    let notify_path = dir.0.join("notify.sock");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    let port = 16660;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut child = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args([
            "serve",
            "--workers",
            "1",
            "--control",
            "",
            "--log-format",
            "json",
        ])
        .arg("--listen")
        .arg(addr.to_string())
        .arg("--zone")
        .arg(format!("d.test.={}", zone.display()))
        .env("NOTIFY_SOCKET", &notify_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // The first message is READY=1, and by then the zone answers.
    let first = next_state(&notify, Duration::from_secs(60)).expect("a notification");
    let ready_answers = answers(addr);
    assert!(first.lines().any(|l| l == "READY=1"), "{first:?}");
    assert!(
        first.contains("STATUS=serving 1 zone on 127.0.0.1:16660"),
        "{first:?}"
    );
    assert!(
        first.contains(&format!("MAINPID={}", child.id())),
        "{first:?}"
    );
    assert!(ready_answers, "READY=1 came before the zone answered");

    // A reload: RELOADING=1, then READY=1 again.
    signal(&child, "HUP");
    let reloading = next_state(&notify, Duration::from_secs(30)).expect("RELOADING");
    assert!(
        reloading.lines().any(|l| l == "RELOADING=1"),
        "{reloading:?}"
    );
    let again = next_state(&notify, Duration::from_secs(60)).expect("READY after reload");
    assert!(again.lines().any(|l| l == "READY=1"), "{again:?}");

    signal(&child, "TERM");
    let stopping = next_state(&notify, Duration::from_secs(30)).expect("STOPPING");
    assert!(stopping.lines().any(|l| l == "STOPPING=1"), "{stopping:?}");
    let status = wait_exit(&mut child, Duration::from_secs(30)).expect("lode stops");
    assert!(status.success(), "{status:?}");

    // --log-format json: one object per line, the zone load with its fields.
    let log = stderr_of(child);
    let loaded = log
        .lines()
        .find(|l| l.contains("\"zone loaded"))
        .unwrap_or_else(|| panic!("no zone-load line in:\n{log}"));
    for field in [
        "\"zone\":\"d.test.\"",
        "\"serial\":7",
        "\"records\":3",
        "\"duration_ms\":",
    ] {
        assert!(loaded.contains(field), "{field} not in {loaded}");
    }
    for line in log.lines() {
        assert!(
            line.starts_with('{') && line.ends_with('}'),
            "not JSON: {line}"
        );
    }
}

#[test]
fn a_config_without_zones_serves_nothing() {
    let dir = TempDir::new("nozone");
    let conf = dir.0.join("lode.toml");
    std::fs::write(&conf, "listen = [\"127.0.0.1:16661\"]\ncontrol = \"\"\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["serve", "--workers", "1", "--config"])
        .arg(&conf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], 16661));
    // The demo's example.com is not served: REFUSED, once the server is up.
    let q = Query::new("example.com.", 6, 1).to_wire();
    let deadline = Instant::now() + Duration::from_secs(30);
    let answer = loop {
        if let Some(a) = udp_exchange(addr, &q, Duration::from_millis(300)) {
            break a;
        }
        assert!(Instant::now() < deadline, "no answer from lode");
    };
    assert_eq!(answer[3] & 0x0F, 5, "example.com. should be REFUSED");
    signal(&child, "TERM");
    wait_exit(&mut child, Duration::from_secs(30)).expect("lode stops");
    let log = stderr_of(child);
    assert!(log.contains("serving nothing"), "{log}");
}

/// The effective uid, from /proc (the owner of /proc/self).
fn euid() -> u32 {
    std::fs::metadata("/proc/self").map_or(u32::MAX, |m| m.uid())
}

/// (real, effective, saved, fs) uids of a process.
fn uids_of(pid: u32) -> Vec<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .map(|v| {
            v.split_whitespace()
                .filter_map(|n| n.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn started_as_root_with_user_it_binds_then_runs_as_that_user() {
    if euid() != 0 {
        eprintln!("SKIP: the switch to another user needs root (run as root to test it)");
        return;
    }
    let nobody = lode_uid("nobody");
    let dir = TempDir::new("user");
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    let zone = dir.0.join("d.zone");
    std::fs::write(&zone, ZONE).unwrap();
    let state = dir.0.join("state");
    std::fs::create_dir(&state).unwrap();
    std::os::unix::fs::chown(&state, Some(nobody), Some(nobody)).unwrap();
    let control = dir.0.join("lode.sock");
    let port = 16662;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut child = serve_as(&zone, &state.join("snapshots"), &control, port, "nobody");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !answers(addr) {
        if let Ok(Some(s)) = child.try_wait() {
            panic!("lode exited ({s}):\n{}", stderr_of(child));
        }
        assert!(Instant::now() < deadline, "lode does not answer");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(uids_of(child.id()), vec![nobody; 4], "/proc/PID/status Uid");
    // The snapshot was written as nobody, the control socket given to it.
    let snap_owner = std::fs::read_dir(state.join("snapshots"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.metadata().unwrap().uid())
        .collect::<Vec<_>>();
    assert_eq!(snap_owner, vec![nobody], "snapshot files and their owners");
    let meta = std::fs::metadata(&control).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o777), (nobody, 0o660));
    // The control socket answers (root may connect to nobody's socket).
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["zone-status", "--control"])
        .arg(&control)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("d.test."),
        "{out:?}"
    );
    signal(&child, "TERM");
    wait_exit(&mut child, Duration::from_secs(30)).expect("lode stops");

    // A state folder the user cannot write: a clear error, no start.
    let locked = dir.0.join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut child = serve_as(&zone, &locked, &control, port + 1, "nobody");
    let status = wait_exit(&mut child, Duration::from_secs(30)).expect("lode exits");
    assert!(!status.success());
    let log = stderr_of(child);
    assert!(
        log.contains("snapshot-dir") && log.contains("not writable by user nobody"),
        "{log}"
    );
}

fn serve_as(zone: &Path, snapshots: &Path, control: &Path, port: u16, user: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["serve", "--workers", "1", "--user", user])
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--zone")
        .arg(format!("d.test.={}", zone.display()))
        .arg("--snapshot-dir")
        .arg(snapshots)
        .arg("--control")
        .arg(control)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A user's uid from /etc/passwd.
fn lode_uid(name: &str) -> u32 {
    std::fs::read_to_string("/etc/passwd")
        .unwrap()
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.first() == Some(&name)).then(|| f[2].parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no user {name}"))
}
