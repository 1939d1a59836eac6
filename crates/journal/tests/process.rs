//! Tests that need a process of their own: a real RLIMIT_FSIZE, and a writer
//! killed with SIGKILL in the middle of its appends.
//!
//! Each test re-runs this test binary as a child (`--exact <test>` with an
//! environment variable naming the role), so the limit or the kill never
//! touches the test runner itself.
#![allow(unsafe_code)] // signal(SIGXFSZ, SIG_IGN) in the child only

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lode_journal::{Journal, Settings};
use lode_wire::{Class, Name, Record, Rtype};
use lode_zonedb::Changeset;

const ROLE: &str = "LODE_JOURNAL_TEST_ROLE";
const PATH: &str = "LODE_JOURNAL_TEST_PATH";

fn origin() -> Name {
    Name::parse("example.com.", None).unwrap()
}

fn soa(serial: u32) -> Record {
    let mut r = Vec::new();
    r.extend_from_slice(b"\x02ns\x07example\x03com\x00\x05admin\x07example\x03com\x00");
    r.extend_from_slice(&serial.to_be_bytes());
    r.extend_from_slice(&[0; 16]);
    Record {
        owner: origin(),
        class: Class::IN,
        rtype: Rtype::SOA,
        ttl: 3600,
        rdata: r.into(),
    }
}

/// A changeset from `from` to `from + 1` adding one record of `size` RDATA bytes.
fn cs(from: u32, size: usize) -> Changeset {
    Changeset {
        soa_from: soa(from),
        soa_to: soa(from + 1),
        removed: vec![],
        added: vec![Record {
            owner: Name::parse(&format!("h{from}.example.com."), None).unwrap(),
            class: Class::IN,
            rtype: Rtype::NULL,
            ttl: 60,
            rdata: vec![(from % 251) as u8; size].into(),
        }],
    }
}

/// `n` changesets continuing from `from`.
fn batch(from: u32, n: u32, size: usize) -> Vec<Changeset> {
    (from..from + n).map(|s| cs(s, size)).collect()
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lode-journal-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// This test binary, run as a child playing `role` on the journal at `path`.
fn child(test: &str, role: &str, path: &Path) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(PATH, path)
        .stdin(Stdio::null());
    c
}

/// The role this process plays, if it is a child.
fn role() -> Option<(String, PathBuf)> {
    Some((std::env::var(ROLE).ok()?, std::env::var(PATH).ok()?.into()))
}

/// Under a real RLIMIT_FSIZE (SIGXFSZ ignored), an append that would pass the
/// limit fails with EFBIG, leaves the file as it was, and the same append
/// succeeds once the limit allows it.
#[test]
fn rlimit_fsize() {
    if let Some((role, path)) = role() {
        assert_eq!(role, "rlimit");
        return rlimit_child(&path);
    }
    let d = tempdir("rlimit");
    let path = d.join("j");
    let out = child("rlimit_fsize", "rlimit", &path).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let acked: u32 = stdout
        .lines()
        .find_map(|l| l.split_once("ACKED ").map(|(_, s)| s))
        .unwrap_or_else(|| panic!("child reports its last serial: {stdout}"))
        .parse()
        .unwrap();
    let (j, rec) = Journal::open(&path, &origin(), Settings::default()).unwrap();
    assert!(rec.torn_tail.is_none() && rec.damage.is_none());
    assert_eq!(j.last_serial(), Some(acked));
    assert_eq!(rec.changesets.len() as u32, acked - 1);
    std::fs::remove_dir_all(&d).unwrap();
}

fn rlimit_child(path: &Path) {
    use nix::sys::resource::{setrlimit, Resource};
    use nix::sys::signal::{signal, SigHandler, Signal};

    let (mut j, _) = Journal::open(path, &origin(), Settings::default()).unwrap();
    // SAFETY: ignoring a signal installs no handler code; nothing else in
    // this process depends on SIGXFSZ.
    unsafe { signal(Signal::SIGXFSZ, SigHandler::SigIgn) }.unwrap();
    let limit = j.usage_bytes() + 50_000;
    setrlimit(Resource::RLIMIT_FSIZE, limit, limit + 1_000_000).unwrap();
    let mut next = 1;
    let mut failures = 0;
    while failures == 0 {
        let b = batch(next, 10, 300);
        let before = j.usage_bytes();
        match j.append(&b) {
            Ok(()) => next += 10,
            Err(e) => {
                let errno = e.io_error().and_then(|e| e.raw_os_error());
                assert_eq!(errno, Some(nix::errno::Errno::EFBIG as i32), "{e}");
                assert!(!j.is_broken());
                assert_eq!(j.usage_bytes(), before);
                assert_eq!(std::fs::metadata(path).unwrap().len(), before);
                assert!(before <= limit);
                failures += 1;
                // Raise the soft limit: the same batch now fits.
                setrlimit(Resource::RLIMIT_FSIZE, limit + 1_000_000, limit + 1_000_000).unwrap();
                j.append(&b).unwrap();
                next += 10;
            }
        }
        assert!(next < 10_000, "the limit never stopped an append");
    }
    println!("ACKED {}", j.last_serial().unwrap());
}

/// A writer appending in a loop is killed with SIGKILL; every append it was
/// told had succeeded is in the journal when it is opened again.
#[test]
fn sigkill_during_appends_loses_nothing_acknowledged() {
    if let Some((role, path)) = role() {
        assert_eq!(role, "writer");
        return writer_child(&path);
    }
    let d = tempdir("sigkill");
    let path = d.join("j");
    let started = Instant::now();
    for round in 0..4 {
        let mut c = child(
            "sigkill_during_appends_loses_nothing_acknowledged",
            "writer",
            &path,
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        let stdout = c.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut acked = Vec::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // The runner's "test … " may stand before the first one.
                if let Some((_, s)) = line.split_once("ACK ") {
                    acked.push(s.parse::<u32>().unwrap());
                }
            }
            acked
        });
        // Kill at a different moment each round; 2 s in all at most.
        std::thread::sleep(Duration::from_millis(150 + 110 * round));
        c.kill().unwrap(); // SIGKILL
        c.wait().unwrap();
        let acked = reader.join().unwrap();
        let (mut j, rec) = Journal::open(&path, &origin(), Settings::default()).unwrap();
        assert!(rec.damage.is_none(), "{:?}", rec.damage);
        if let Some(&last) = acked.last() {
            let have = j.last_serial().expect("acknowledged appends are there");
            assert!(
                lode_journal::serial_lt(last, have) || last == have,
                "acknowledged serial {last}, journal ends at {have}"
            );
        }
        // The whole chain from serial 1 is there, without gaps.
        let all = j.changes_since(1).unwrap().unwrap_or_default();
        for (i, c) in all.iter().enumerate() {
            assert_eq!(c.serial_from(), i as u32 + 1);
        }
        assert!(started.elapsed() < Duration::from_secs(30));
    }
    std::fs::remove_dir_all(&d).unwrap();
}

fn writer_child(path: &Path) {
    use std::io::Write;
    let (mut j, _) = Journal::open(path, &origin(), Settings::default()).unwrap();
    let mut next = j.last_serial().unwrap_or(1);
    let out = std::io::stdout();
    for i in 0u32.. {
        // Small batches, and now and then a big one (a torn write is likelier).
        let (n, size) = if i % 16 == 15 {
            (400, 2_000)
        } else {
            (1 + i % 5, 40)
        };
        j.append(&batch(next, n, size)).unwrap();
        next += n;
        let mut o = out.lock();
        writeln!(o, "ACK {}", next).unwrap();
        o.flush().unwrap();
    }
}
