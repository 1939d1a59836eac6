//! `ds-push` (Knot's option): a Lode signing `example.test.`
//! sends its DS set to the parent's primary by TSIG-signed UPDATE whenever
//! its CDS changes, and with `ksk-submission` asking the parent for the DS,
//! nobody carries a DS by hand: the first KSK becomes active, and in a KSK
//! rollover the parent's DS is replaced by the new KSK's and the old KSK
//! leaves. Once with a Lode parent, once with a Knot 3.2 parent.

mod common;

use common::dnssec::{CHILD_ZONE, PARENT_ZONE};
use common::*;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const KEY_NAME: &str = "push-key.";
const SECRET: &str = "ZHMtcHVzaC10ZXN0LWtleS0zMi1ieXRlcy0tLS0tLS0=";

/// The records of `name` `rtype` at 127.0.0.1:`port`, as `kdig +short`
/// prints them, sorted.
fn short(port: u16, name: &str, rtype: &str) -> Vec<String> {
    let out = Command::new("kdig")
        .args(["@127.0.0.1", "-p", &port.to_string(), name, rtype, "+short"])
        .args(["+timeout=2", "+retry=1"])
        .output()
        .expect("kdig");
    let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            l.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_uppercase()
        })
        .filter(|l| !l.is_empty())
        .collect();
    v.sort();
    v
}

/// Waits up to `secs` for `done`, failing with `what` and the child's log.
fn wait_for(secs: u64, what: &str, child: &Server, mut done: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!(
        "{what} not within {secs} s; child log:\n{}",
        child.log_tail(60)
    );
}

/// The child: signs `example.test.` and pushes its DS to the parent at
/// 127.0.0.1:`parent_port`, asking it every second whether it serves it.
fn start_child(dir: &Path, port: u16, parent_port: u16) -> Server {
    let side = dir.join("child");
    std::fs::create_dir_all(&side).unwrap();
    std::fs::write(side.join("zone.db"), CHILD_ZONE).unwrap();
    let conf = format!(
        "journal-dir = \"journal\"\ncontrol = \"{control}\"\n\
         [[key]]\nid = \"{KEY_NAME}\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{SECRET}\"\n\
         [[remote]]\nid = \"parent\"\naddress = [\"127.0.0.1@{parent_port}\"]\nkey = \"{KEY_NAME}\"\n\
         [[submission]]\nid = \"parent\"\nparent = [\"parent\"]\ncheck-interval = 1\n\
         [[policy]]\nid = \"quick\"\npropagation-delay = 1\ndnskey-ttl = 3\nzsk-lifetime = 0\n\
         ksk-submission = \"parent\"\nds-push = [\"parent\"]\n\
         [[zone]]\nname = \"example.test.\"\nfile = \"zone.db\"\n\
         dnssec-signing = true\ndnssec-policy = \"quick\"\n",
        control = side.join("lode.sock").display()
    );
    std::fs::write(side.join("lode.toml"), conf).unwrap();
    start_lode_config(
        &side.join("lode.toml"),
        port,
        &dir.join("child.log"),
        &["example.test."],
    )
    .unwrap_or_else(|e| panic!("child: {e}"))
}

/// The DS the child logged for its `nth` KSK waiting for one (from 0),
/// as `kdig +short` prints it.
fn announced_ds(child: &Server, nth: usize) -> Option<String> {
    let log = child.log();
    let line = log
        .lines()
        .filter(|l| l.contains("DS for the parent: example.test. DS "))
        .nth(nth)?;
    let ds = line.split("DS for the parent: example.test. DS ").nth(1)?;
    Some(
        ds.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_uppercase(),
    )
}

/// The child's DNSKEYs of flags 257 (its KSKs).
fn ksks(port: u16) -> usize {
    short(port, "example.test.", "DNSKEY")
        .iter()
        .filter(|k| k.starts_with("257 "))
        .count()
}

/// The whole cycle against a parent already serving `test.` (updates with
/// the key allowed) at 127.0.0.1:`parent_port`.
fn push_cycle(dir: &Path, parent_port: u16, child_port: u16) {
    let child = start_child(dir, child_port, parent_port);
    // The first KSK: its CDS pushed after the propagation delay, found at
    // the parent, the KSK active (the CDS withdrawn: `rollover`).
    let mut first = Vec::new();
    wait_for(30, "the first DS at the parent", &child, || {
        first = short(parent_port, "example.test.", "DS");
        announced_ds(&child, 0).is_some_and(|ds| first == [ds])
    });
    wait_for(30, "the first KSK active", &child, || {
        child.log().contains("every parent's server serves the DS")
            && short(child_port, "example.test.", "CDS").is_empty()
    });
    assert!(
        child.log().contains(&format!(
            "DS push to 127.0.0.1:{parent_port} (zone test.): success, 1 DS"
        )),
        "{}",
        child.log_tail(40)
    );
    // A KSK rollover: the new KSK's DS replaces the old one at the parent,
    // and the old KSK goes.
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["zone-key-rollover", "example.test.", "ksk", "--control"])
        .arg(dir.join("child/lode.sock"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut second = Vec::new();
    wait_for(60, "the new KSK's DS at the parent", &child, || {
        second = short(parent_port, "example.test.", "DS");
        announced_ds(&child, 1).is_some_and(|ds| second == [ds])
    });
    assert_ne!(first, second);
    wait_for(90, "the old KSK removed", &child, || {
        child
            .log()
            .matches("every parent's server serves the DS")
            .count()
            >= 2
            && ksks(child_port) == 1
    });
    let ds = short(parent_port, "example.test.", "DS");
    assert_eq!(ds, second);
    // The parent's DS is the remaining KSK's.
    let tag = ds[0].split(' ').next().unwrap().to_string();
    let dnskey = Command::new("kdig")
        .args([
            "@127.0.0.1",
            "-p",
            &child_port.to_string(),
            "example.test.",
            "DNSKEY",
        ])
        .args(["+timeout=2", "+retry=1", "+multiline"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&dnskey.stdout);
    assert!(
        text.contains(&format!("; KSK, ECDSAP256SHA256 (256b), id = {tag}")),
        "DS {ds:?} for none of the DNSKEYs:\n{text}"
    );
}

#[test]
fn ds_pushed_to_a_lode_parent() {
    let dir = TempDir::new("ds-push-lode");
    let parent_port = pick_port_in(17130, 17133);
    let child_port = pick_port_in(17134, 17136);
    let side = dir.0.join("parent");
    std::fs::create_dir_all(&side).unwrap();
    std::fs::write(side.join("zone.db"), PARENT_ZONE).unwrap();
    let conf = format!(
        "journal-dir = \"journal\"\ncontrol = \"\"\n\
         [[key]]\nid = \"{KEY_NAME}\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{SECRET}\"\n\
         [[acl]]\nid = \"upd\"\nkey = [\"{KEY_NAME}\"]\naction = [\"update\"]\n\
         [[zone]]\nname = \"test.\"\nfile = \"zone.db\"\nacl = [\"upd\"]\n"
    );
    std::fs::write(side.join("lode.toml"), conf).unwrap();
    let _parent = start_lode_config(
        &side.join("lode.toml"),
        parent_port,
        &dir.0.join("parent.log"),
        &["test."],
    )
    .unwrap_or_else(|e| panic!("parent: {e}"));
    push_cycle(&dir.0, parent_port, child_port);
}

#[test]
fn ds_pushed_to_a_knot_parent() {
    if !knot_available() {
        return;
    }
    let dir = TempDir::new("ds-push-knot");
    let parent_port = pick_port_in(17137, 17138);
    let child_port = pick_port_in(17139, 17139);
    let file = dir.0.join("test.zone");
    std::fs::write(&file, PARENT_ZONE).unwrap();
    let zones = vec![ZoneSpec {
        origin: "test.".into(),
        file,
    }];
    let _knot = start_knot_with(
        &zones,
        parent_port,
        &format!(
            "key:\n  - id: {KEY_NAME}\n    algorithm: hmac-sha256\n    secret: {SECRET}\n\
             acl:\n  - id: upd\n    key: {KEY_NAME}\n    action: update\n"
        ),
        "    acl: upd\n",
    )
    .unwrap_or_else(|e| panic!("Knot parent: {e}"));
    push_cycle(&dir.0, parent_port, child_port);
}
