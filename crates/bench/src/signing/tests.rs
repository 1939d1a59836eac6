use std::time::Duration;

use super::*;

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lode-bench-sign-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch");
    d
}

#[test]
fn lode_signing_line() {
    let log = "2026-11-29T10:00:00Z INFO zone 1.6.4.6.1.e164.arpa.: DNSSEC, signed whole in 17.6 s, serial 5 → 6\n";
    assert_eq!(signed_whole_secs(log), Some(17.6));
    assert_eq!(signed_whole_secs("serving 1 zone"), None);
}

/// The type field with or without a TTL counts; a bitmap naming RRSIG does not.
#[test]
fn signatures_in_zone_text() {
    let dir = scratch("count");
    let text = "a. 3600 IN RRSIG NAPTR 13 3 3600 1 2 3 a. AA==\n\
                a. IN RRSIG NSEC 13 3 3600 1 2 3 a. AA==\n\
                a. 3600 IN NSEC b. NAPTR RRSIG NSEC\n\
                ; RRSIG in a comment\n";
    std::fs::write(dir.join("z1"), text).expect("z1");
    std::fs::write(dir.join("z2"), "b. 60 RRSIG SOA 13 1 60 1 2 3 b. AA==\n").expect("z2");
    assert_eq!(signatures_in(&dir.join("z1")).expect("file"), 2);
    assert_eq!(signatures_in(&dir).expect("folder"), 3);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hsm_row_as_printed() {
    let row = hsm::HsmRow {
        signer: "lode".into(),
        token: true,
        secs: 2.5,
        signatures: 40_001,
    };
    assert_eq!(
        row.line(),
        "lode, keys in token                   2.5      40001        16000"
    );
}

#[test]
fn rollover_lines_as_printed() {
    let l = rollover::Latency {
        answered_pct: 100.0,
        p50: 40,
        p99: 90,
        p999: 300,
    };
    let run = rollover::RolloverRun {
        server: "lode".into(),
        static_step: l,
        during: rollover::Latency { p999: 189, ..l },
        wall_secs: 448.14,
        cpu_secs: 60.06,
    };
    let lines = run.lines(Duration::from_secs(30));
    assert_eq!(
        lines[1],
        "  static: answered 100.0 % p50 40 p99 90 p99.9 300 µs"
    );
    assert_eq!(
        lines[3],
        "  rollover to every signature by the new ZSK: 448.1 s wall, 60.1 server CPU s \
         (the 30-second query step included)"
    );
    assert_eq!(lines[4], "  p99.9 during ÷ static: 0.63");
}
