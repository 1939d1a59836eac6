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

#[test]
fn whole_signing_rows_and_the_ceiling() {
    let text = "version: 3.0.11\n+F4:0:256:0.000020:0.000060\n\
                                              sign    verify    sign/s verify/s\n \
                256 bits ecdsa (nistp256)   0.0000s   0.0001s  69000.0  23000.0\n";
    assert_eq!(whole::parse_openssl(text), Some(69000.0));
    assert_eq!(whole::parse_openssl("nothing"), None);
    let row = whole::SignerRow {
        signer: "lode (nsec, 2 threads, from start)".into(),
        wall_secs: 17.6,
        signatures: Some(1_000_000),
        peak: 300 << 20,
        signing_secs: Some(16.0),
    };
    assert_eq!(
        row.line(),
        "lode (nsec, 2 threads, from start)      17.6    1000000        56818       300   \
         (signing alone 16.0 s: 62500 sig/s)"
    );
    let uncounted = whole::SignerRow {
        signatures: None,
        ..row
    };
    assert!(
        uncounted
            .line()
            .contains("         -            -       300   (signing alone 16.0 s)"),
        "{}",
        uncounted.line()
    );
}

#[test]
fn answers_queries_and_medians() {
    let dir = scratch("answers");
    let zone = dir.join("signed.zone");
    let mut text = String::from("z. 3600 IN SOA ns. h. 1 2 3 4 5\n");
    for i in 0..10 {
        text.push_str(&format!(
            "{i}.z. 3600 IN NAPTR 100 10 \"u\" \"E2U+sip\" \"!^.*$!x!\" .\n"
        ));
        text.push_str(&format!(
            "{i}.z. 3600 IN RRSIG NAPTR 13 2 3600 1 2 3 z. AA==\n"
        ));
    }
    std::fs::write(&zone, text).expect("zone");
    let [exist, nx] = served::query_files(&zone, &dir.join("q"), 5).expect("queries");
    let exist = std::fs::read_to_string(exist).expect("exist");
    assert_eq!(exist.lines().count(), 5, "{exist}");
    assert!(exist.starts_with("0.z. NAPTR\n2.z. NAPTR\n"), "{exist}");
    let nx = std::fs::read_to_string(nx).expect("nx");
    assert!(nx.starts_with("nx-0.z. NAPTR\n"), "{nx}");
    let _ = std::fs::remove_dir_all(&dir);

    let row = |cpu: f64| served::AnswerRow {
        server: "lode".into(),
        zone: "signed".into(),
        kind: "exist".into(),
        answered: 200_000,
        cpu_secs: cpu,
        sys_secs: cpu / 2.0,
    };
    let m = parts::medians(&[vec![row(3.0)], vec![row(3.74)], vec![row(5.0)]]);
    assert_eq!(m.len(), 1);
    assert_eq!(
        m[0].line(),
        "lode   signed    exist     200000        3.740          18.70           9.35"
    );
}
