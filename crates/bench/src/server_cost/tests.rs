use super::*;
use crate::durable::{DurableResult, FsyncProbe};
use crate::gen::enumset::EnumSetSpec;

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lode-bench-cost-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch");
    d
}

/// The change files name numbers of the generated zone (relative owners,
/// the zone's own NAPTR text) and new numbers past its last.
#[test]
fn change_files_follow_the_layout() {
    let dir = scratch("changes");
    let spec = EnumSetSpec::new(150, 1);
    let (layout, zones) = enum_set(&spec, &dir.join("set"), false).expect("set");
    let zone_text = std::fs::read_to_string(&zones[0].1).expect("zone");
    memory::write_changes(&layout, 10, &dir).expect("written");
    let read = |n: &str| std::fs::read_to_string(dir.join(n)).expect(n);
    let deletes = read("deletes.zone");
    assert_eq!(deletes.lines().count(), 10);
    // "0.0.0 3600 IN NAPTR …": the generated zone's record, its TTL and class spelled out.
    let first = deletes.lines().next().expect("a line");
    let (owner, rdata) = first.split_once(" 3600 IN NAPTR ").expect("shape");
    assert_eq!(owner, "0.0.0");
    assert!(
        zone_text.contains(&format!("{owner} NAPTR {rdata}")),
        "{first}\n{zone_text}"
    );
    let adds = read("adds.csv");
    assert_eq!(
        adds.lines().next(),
        Some("+12120000150, sip:+12120000150@example.net")
    );
    let new = read("change-new.zone");
    assert!(new.starts_with("0.1.0 3600 IN NAPTR "), "{new}");
    assert!(new.contains("sip:+12120000010x@example.net"), "{new}");
    assert_eq!(read("change-old.zone").lines().count(), 10);
    // Reused: the same layout and files, nothing generated again.
    let (again, files) = enum_set(&spec, &dir.join("set"), true).expect("reused");
    assert_eq!((again.records(), files), (150, zones));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The report's JSON carries the provenance; its figures are numbers.
#[test]
fn reports_carry_provenance_and_numbers() {
    let dir = scratch("report");
    let prov = Provenance::collect(None, &[]);
    let md = write_report(
        &dir,
        "x",
        "# X\n",
        serde_json::json!({"peak_bytes": 5u64, "ratio": 1.5}),
        &prov,
    )
    .expect("written");
    let text = std::fs::read_to_string(md).expect("md");
    assert!(
        text.starts_with("# X\n") && text.contains("## Provenance"),
        "{text}"
    );
    let js: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("x.json")).expect("json"))
            .expect("parses");
    assert!(js["provenance"]["machine"]["cores"].is_u64(), "{js}");
    assert!(crate::provenance::numeric_strings(&js).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn figures_as_printed() {
    let run = cpu::CpuRun {
        server: "lode".into(),
        fsync: FsyncProbe {
            syncs: 3000,
            secs: 1.0,
        },
        updates: DurableResult {
            sent: 10_000,
            acked: 10_000,
            acked_rrs: 10_000,
            secs: 1.0,
            ..DurableResult::default()
        },
        cpu_secs: 0.75,
        signed_after: None,
    };
    assert_eq!(run.us_per_update(), Some(75.0));
    let lines = run.lines();
    assert!(lines.contains(&"lode server CPU: 0.750 s for 10000 updates".to_string()));
    assert!(lines.contains(&"lode server CPU per durable update: 75.0 µs".to_string()));
    assert!(
        lines.contains(&"durable updates/s ÷ fdatasync/s = 10000 ÷ 3000 = 3.33".to_string()),
        "{lines:?}"
    );
    let knot = cpu::CpuRun {
        server: "knot".into(),
        cpu_secs: 1.0,
        updates: DurableResult {
            acked: 400,
            secs: 1.0,
            ..DurableResult::default()
        },
        ..run.clone()
    };
    let both = cpu::CpuResult {
        runs: vec![run, knot],
        ..cpu::CpuResult::default()
    };
    assert_eq!(
        both.comparison().as_deref(),
        Some("Knot's CPU per durable update ÷ Lode's: 33.3 ×; Lode's updates/s ÷ Knot's: 25.0 ×")
    );

    let m = memory::MemoryResult {
        third: 10,
        loaded: 1024 * 100,
        after: 1024 * 110,
        fresh: 1024 * 100,
        peak: 1024 * 300,
        final_records: 140,
        ..memory::MemoryResult::default()
    };
    let text = m.lines(150).join("\n");
    assert!(
        text.starts_with("# Memory after 30 updates of 150 records"),
        "{text}"
    );
    assert!(
        text.contains("| after the updates and compaction | 110 | 804.57 |"),
        "{text}"
    );
    assert!(
        text.contains("After / fresh: 1.100. Updates: 40 record operations"),
        "{text}"
    );

    let a = axfr_in::AxfrInResult {
        serial: 5,
        secs: 1.3,
        peak: 460 << 20,
        resident: 230 << 20,
        ..axfr_in::AxfrInResult::default()
    };
    assert_eq!(
        a.lines(Path::new("/l"))[0],
        "secondary /l: serving serial 5 after 1.3 s; peak 460 MiB, resident 230 MiB, peak / resident 2.00"
    );
}
