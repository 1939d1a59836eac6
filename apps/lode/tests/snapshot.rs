//! `lode snapshot` and `lode serve --snapshot-dir`: a server started from
//! snapshots answers byte for byte like one started from the zone files.
//!
//! The zones and queries are the differential suite's: every plain query of
//! `tests/differential/queries.txt` (class IN, no header or EDNS options) goes
//! over UDP to both servers, and the two responses must be identical.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;
use lode_peers::{Content, Kind, Ready, Zone};

fn snapshot_args(zones: &[ZoneSpec]) -> Vec<String> {
    zones
        .iter()
        .flat_map(|z| {
            [
                "--zone".to_string(),
                format!("{}={}", z.origin, z.file.display()),
            ]
        })
        .collect()
}

/// Starts `lode serve --snapshot-dir` (the zones given with `--zone`) and
/// waits until every zone answers and it logged "serving"; its log then.
fn start_from_snapshots(zones: &[ZoneSpec], snaps: &Path, dir: &TempDir) -> (Server, String) {
    let mut spec = server_spec(Kind::Lode, pick_port(15380));
    spec.label = Some("lode-snap".into());
    spec.dir = Some(dir.0.clone());
    spec.config = Some(String::new());
    spec.args = vec![
        "--control".into(),
        dir.0.join("lode.sock").display().to_string(),
    ];
    spec.args.push("--snapshot-dir".into());
    spec.args.push(snaps.display().to_string());
    spec.args.extend(snapshot_args(zones));
    // Answering: every zone replies (as the text server is started).
    spec.zones = zones
        .iter()
        .map(|z| Zone::primary(&z.origin, Content::Storage))
        .collect();
    spec.ready = Ready::Answering;
    let server = Server::start(spec).unwrap_or_else(|e| panic!("{e}"));
    server.wait_log("serving ", "lode serve --snapshot-dir did not start");
    let log = server.log();
    (server, log)
}

#[test]
fn server_from_snapshots_answers_like_server_from_text() {
    let root = repo_root();
    let zones = zones_in(&root.join("tests/differential/zones"));
    assert!(zones.len() >= 5, "the differential zones are there");
    let dir = TempDir::new("snapshot");
    let snaps = dir.0.join("snaps");

    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .arg("snapshot")
        .args(snapshot_args(&zones))
        .arg("--out")
        .arg(&snaps)
        .output()
        .expect("run lode snapshot");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "lode snapshot failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for z in &zones {
        let file = snaps.join(format!("{}snap", z.origin.to_lowercase()));
        assert!(
            file.exists(),
            "{} missing; output:\n{stdout}",
            file.display()
        );
    }

    let text_server = start_lode(&zones, pick_port(15380)).unwrap_or_else(|e| panic!("{e}"));
    let (snap_server, log) = start_from_snapshots(&zones, &snaps, &dir);
    let from_snapshot = log.matches("read from snapshot").count();
    assert_eq!(
        from_snapshot,
        zones.len(),
        "every zone from its snapshot:\n{log}"
    );

    let queries = std::fs::read_to_string(root.join("tests/differential/queries.txt")).unwrap();
    let mut compared = 0;
    for line in queries.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let fields: Vec<&str> = line.split_whitespace().collect();
        // Plain queries only: QNAME QTYPE.
        let [qname, qtype] = fields[..] else {
            continue;
        };
        let Some(qtype) = type_from_str(qtype) else {
            continue;
        };
        let q = Query::new(qname, qtype, 1).to_wire();
        let a = udp_exchange(text_server.addr, &q, Duration::from_secs(2));
        let b = udp_exchange(snap_server.addr, &q, Duration::from_secs(2));
        assert!(
            a.is_some(),
            "{line}: no answer from the server started from text"
        );
        assert_eq!(a, b, "{line}: the answers differ");
        compared += 1;
    }
    assert!(compared > 300, "only {compared} queries compared");

    // A damaged snapshot is not served: the zone is read from its text again.
    drop(snap_server);
    let victim = snaps.join(format!("{}snap", zones[0].origin.to_lowercase()));
    let mut bytes = std::fs::read(&victim).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    std::fs::write(&victim, &bytes).unwrap();
    let (snap_server, log) = start_from_snapshots(&zones, &snaps, &dir);
    assert!(log.contains("snapshot not used"), "damage reported:\n{log}");
    assert_eq!(log.matches("read from snapshot").count(), zones.len() - 1);
    let q = Query::new(&zones[0].origin, 6, 1).to_wire();
    assert_eq!(
        udp_exchange(text_server.addr, &q, Duration::from_secs(2)),
        udp_exchange(snap_server.addr, &q, Duration::from_secs(2)),
        "the zone read from text again answers as before"
    );
}
