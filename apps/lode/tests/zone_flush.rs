//! `zonefile-sync` and `lode zone-flush`: zones that take
//! updates write their zone files, and the written files are not taken for
//! edits by a reload or a restart.
//!
//! One `lode serve`, global `zonefile-sync = -1`, four zones:
//! - `sync.test.`  with `zonefile-sync = 0`: its file follows each change;
//! - `never.test.` (the global -1): its file does not change until
//!   `lode zone-flush never.test.` writes it;
//! - `later.test.` with `zonefile-sync = 2`: written about 2 s after the start;
//! - `static.test.`, no updates: `zone-flush` says its file is its source.
//!
//! Updates are TSIG-signed UPDATEs over TCP. Every written file must parse
//! back to the records the updates made; `lode reload` must find the written
//! files unchanged, and a restart must not take them for edits.

mod common;

use common::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const KEY_NAME: &str = "flush-key.";
const KEY_SECRET: &str = "bG9kZS16b25lLWZsdXNoLXRlc3Qta2V5LTMyYnl0ZXM=";
const ZONES: [&str; 4] = ["sync.test.", "never.test.", "later.test.", "static.test."];

fn zone_text(origin: &str) -> String {
    format!(
        "$ORIGIN {origin}\n$TTL 300\n@ SOA ns hostmaster 100 3600 600 86400 300\n@ NS ns\nns A 192.0.2.1\nold A 192.0.2.2\n"
    )
}

fn file_of(dir: &Path, origin: &str) -> PathBuf {
    dir.join(format!("{origin}zone"))
}

fn write_config(dir: &Path) -> PathBuf {
    for z in ZONES {
        std::fs::write(file_of(dir, z), zone_text(z)).expect("write zone");
    }
    let conf = format!(
        r#"journal-dir = "journal"
control = "{}"
log-level = "info"
zonefile-sync = -1

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
name = "sync.test."
file = "sync.test.zone"
acl = ["signed"]
zonefile-sync = 0

[[zone]]
name = "never.test."
file = "never.test.zone"
acl = ["signed"]

[[zone]]
name = "later.test."
file = "later.test.zone"
acl = ["signed"]
zonefile-sync = 2

[[zone]]
name = "static.test."
file = "static.test.zone"
"#,
        dir.join("ctl.sock").display()
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

/// Sends a signed UPDATE of `zone` (deletions as class NONE records) and
/// checks it is answered NOERROR.
fn update(server: &Server, zone: &str, delete: &[RawRr], add: &[RawRr]) {
    let mut dels: Vec<RawRr> = delete.to_vec();
    for d in &mut dels {
        d.class = 254;
        d.ttl = 0;
    }
    let all: Vec<RawRr> = dels.into_iter().chain(add.iter().cloned()).collect();
    let mut msg = update_message(0x4242, zone, &[], &all);
    lode_tsig::sign_request_vec(&mut msg, &key(), unix_now()).expect("sign");
    let r = tcp_exchange(server.addr, &msg, Duration::from_secs(5)).expect("update answered");
    assert_eq!(Message::parse(&r).rcode(), 0, "update of {zone}");
}

fn txt(owner: &str, text: &str) -> RawRr {
    RawRr::new(owner, 16, 300, &txt_rdata(text))
}

/// Runs `lode zone-flush ARGS` against the server's control socket.
fn zone_flush(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lode"))
        .arg("zone-flush")
        .arg("--control")
        .arg(dir.join("ctl.sock"))
        .args(args)
        .output()
        .expect("run lode zone-flush")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The records of a zone file as (owner, type, ttl, rdata) lines.
fn records_of(path: &Path, origin: &str) -> BTreeSet<String> {
    let origin: lode_wire::Name = origin.parse().expect("origin");
    let z = lode_zonefile::parse_file(path, &origin, Some(3600))
        .unwrap_or_else(|e| panic!("{}: {:?}", path.display(), e));
    z.records
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {}",
                r.owner.to_lowercase(),
                r.ttl,
                r.rtype,
                lode_zonefile::format_rdata(r.rtype, &r.rdata)
            )
        })
        .collect()
}

/// What the zone must hold: its first file without `deleted` lines, with
/// `added` lines and the SOA at `serial`.
fn expected(origin: &str, serial: u32, deleted: &[&str], added: &[String]) -> BTreeSet<String> {
    let dir = TempDir::new("flush-expected");
    let p = dir.0.join("z");
    std::fs::write(&p, zone_text(origin)).expect("write");
    let mut want: BTreeSet<String> = records_of(&p, origin)
        .into_iter()
        .map(|l| {
            if l.contains(" SOA ") {
                l.replace(" 100 3600 ", &format!(" {serial} 3600 "))
            } else {
                l
            }
        })
        .filter(|l| !deleted.contains(&l.as_str()))
        .collect();
    want.extend(added.iter().cloned());
    want
}

fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn zonefile_sync_and_zone_flush() {
    let dir = TempDir::new("zone-flush");
    let conf = write_config(&dir.0);
    let port = pick_port_in(15750, 15769);
    let mut server = start_lode_config(&conf, port, &dir.0.join("lode-0.log"), &ZONES)
        .unwrap_or_else(|e| panic!("{e}"));
    let started = Instant::now();
    let original = |z: &str| zone_text(z).into_bytes();

    // sync.test. (zonefile-sync = 0): the file follows each change.
    let sync = file_of(&dir.0, "sync.test.");
    let mut sync_added = Vec::new();
    for i in 1..=3u32 {
        let owner = format!("n{i}.sync.test.");
        update(&server, "sync.test.", &[], &[txt(&owner, &format!("v{i}"))]);
        sync_added.push(format!("{owner} 300 TXT \"v{i}\""));
        let want = expected("sync.test.", 100 + i, &[], &sync_added);
        wait_for(
            &format!("sync.test. file after update {i}"),
            Duration::from_secs(5),
            || records_of(&sync, "sync.test.") == want,
        );
    }
    let sync_text = text(&std::fs::read(&sync).expect("read"));
    assert!(
        sync_text
            .contains("\n$ORIGIN sync.test.\n@ 300 SOA ns.sync.test. hostmaster.sync.test. 103 ")
            && sync_text.contains("\nn2 300 TXT \"v2\"\n"),
        "{sync_text}"
    );

    // never.test. (zonefile-sync = -1 from the global value): untouched.
    let never = file_of(&dir.0, "never.test.");
    update(
        &server,
        "never.test.",
        &[RawRr::new("old.never.test.", 1, 300, &[192, 0, 2, 2])],
        &[txt("new.never.test.", "added")],
    );
    update(
        &server,
        "never.test.",
        &[],
        &[txt("two.never.test.", "second")],
    );
    // later.test. (zonefile-sync = 2): not at once.
    let later = file_of(&dir.0, "later.test.");
    update(
        &server,
        "later.test.",
        &[],
        &[txt("l.later.test.", "later")],
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        std::fs::read(&never).expect("read"),
        original("never.test.")
    );
    if started.elapsed() < Duration::from_millis(1500) {
        assert_eq!(
            std::fs::read(&later).expect("read"),
            original("later.test.")
        );
    }
    let want_later = expected(
        "later.test.",
        101,
        &[],
        &["l.later.test. 300 TXT \"later\"".into()],
    );
    wait_for("later.test. file", Duration::from_secs(6), || {
        records_of(&later, "later.test.") == want_later
    });

    // zone-flush NAME writes never.test. now, and says what it wrote.
    let out = zone_flush(&dir.0, &["never.test."]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains("zone never.test.: 5 records, serial 102, written to ")
            && said.contains("never.test.zone"),
        "{said}"
    );
    let want_never = expected(
        "never.test.",
        102,
        &["old.never.test. 300 A 192.0.2.2"],
        &[
            "new.never.test. 300 TXT \"added\"".into(),
            "two.never.test. 300 TXT \"second\"".into(),
        ],
    );
    assert_eq!(records_of(&never, "never.test."), want_never);
    assert_eq!(query_serial(server.addr, "never.test."), Some(102));

    // zone-flush (every zone), then the errors.
    let out = zone_flush(&dir.0, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    for line in [
        "zone sync.test.: 7 records, serial 103, written to ",
        "zone never.test.: 5 records, serial 102, written to ",
        "zone later.test.: 5 records, serial 101, written to ",
        "zone static.test.: does not take updates, its zone file is its source",
    ] {
        assert!(said.contains(line), "{line:?} not in\n{said}");
    }
    let out = zone_flush(&dir.0, &["static.test."]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("its zone file is already its source"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read(file_of(&dir.0, "static.test.")).expect("read"),
        original("static.test.")
    );
    let out = zone_flush(&dir.0, &["nope.test."]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no such zone"),
        "{}",
        text(&out.stderr)
    );

    // A reload finds the written files unchanged.
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .arg("reload")
        .arg("--control")
        .arg(dir.0.join("ctl.sock"))
        .output()
        .expect("run lode reload");
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    for z in ZONES {
        assert!(said.contains(&format!("zone {z}: unchanged")), "{said}");
    }

    // A restart takes the written files as the state's, not as edits.
    server.kill9();
    let server = start_lode_config(&conf, port, &dir.0.join("lode-1.log"), &ZONES)
        .unwrap_or_else(|e| panic!("restart: {e}"));
    let log = server.log();
    assert!(
        !log.contains("the zone file changed") && !log.contains("zone file applied"),
        "{log}"
    );
    assert_eq!(query_serial(server.addr, "sync.test."), Some(103));
    assert_eq!(query_serial(server.addr, "never.test."), Some(102));
    assert_eq!(query_serial(server.addr, "later.test."), Some(101));
    // Updates go on, and the file still follows them.
    update(&server, "sync.test.", &[], &[txt("n4.sync.test.", "v4")]);
    sync_added.push("n4.sync.test. 300 TXT \"v4\"".into());
    let want = expected("sync.test.", 104, &[], &sync_added);
    wait_for(
        "sync.test. file after the restart",
        Duration::from_secs(5),
        || records_of(&sync, "sync.test.") == want,
    );
    // An operator's edit is still an edit: applied at the next start.
    drop(server);
    let mut edited = text(&std::fs::read(&never).expect("read"));
    edited = edited.replace(" 102 3600 ", " 200 3600 ");
    edited.push_str("edit 300 TXT \"by hand\"\n");
    std::fs::write(&never, edited).expect("edit");
    let server = start_lode_config(&conf, port, &dir.0.join("lode-2.log"), &ZONES)
        .unwrap_or_else(|e| panic!("restart after the edit: {e}"));
    let log = server.log();
    assert!(
        log.contains("zone never.test.: the zone file changed"),
        "{log}"
    );
    assert!(
        !log.contains("zone sync.test.: the zone file changed"),
        "{log}"
    );
    assert_eq!(query_serial(server.addr, "never.test."), Some(200));
}
