use super::*;

fn sample() -> UpdCompareResult {
    let run = |server: &str, run: usize, fsync: u64, acked: u64, qps: [u64; 2], bulk: u64| UpdRun {
        server: server.into(),
        run,
        fsync: FsyncProbe {
            syncs: fsync,
            secs: 1.0,
        },
        under_updates: vec![
            UnderUpdates {
                update_rate: 0.0,
                qps: qps[0],
                ..UnderUpdates::default()
            },
            UnderUpdates {
                update_rate: 5000.0,
                qps: qps[1],
                ..UnderUpdates::default()
            },
        ],
        durable: Some(DurableResult {
            acked,
            acked_rrs: acked,
            secs: 1.0,
            latency_us: [100, 2000, 3000, 4000],
            ..DurableResult::default()
        }),
        bulk: Some(Bulk {
            records: bulk,
            secs: 1.0,
            ok: true,
            static_steps: vec![(10, 10, 500)],
            load_steps: vec![(10, 10, 800), (10, 10, 900)],
            compactions: (server == "lode").then_some(2),
        }),
        ..UpdRun::default()
    };
    UpdCompareResult {
        settings: vec![("set".into(), "test".into())],
        parameters: serde_json::json!({"records": 100_000, "update_rates_per_sec": [0.0, 10.0]}),
        runs: vec![
            run("lode", 1, 3000, 45_000, [100_000, 96_000], 120_000),
            run("knot", 1, 3000, 10_000, [80_000, 60_000], 40_000),
            run("bind", 1, 3000, 2_000, [50_000, 20_000], 10_000),
            run("lode", 2, 3200, 47_000, [102_000, 98_000], 130_000),
            run("knot", 2, 2800, 12_000, [82_000, 62_000], 42_000),
            run("bind", 2, 3000, 2_200, [52_000, 22_000], 12_000),
        ],
        notes: vec!["a note".into()],
        wall_secs: 10.0,
        fairness: crate::compare::fairness::sample(),
    }
}

#[test]
fn summaries_are_medians_per_server() {
    let s = summarize(&sample());
    assert_eq!(
        s.iter().map(|x| x.server.as_str()).collect::<Vec<_>>(),
        ["lode", "knot", "bind"]
    );
    let lode = &s[0];
    assert_eq!(lode.fsync, 3100.0);
    assert_eq!(lode.durable, Some(46_000.0));
    assert_eq!(lode.qps, vec![(0.0, 101_000.0), (5000.0, 97_000.0)]);
    assert_eq!(lode.bulk, Some(125_000.0));
    assert_eq!(lode.p999, Some((500.0, 900.0)));
    assert_eq!(lode.compactions, Some(2));
    assert_eq!(s[1].compactions, None);
}

#[test]
fn markdown_has_ratios() {
    let md = to_markdown(&sample());
    // Lode ÷ fdatasync: 46000 / 3100 = 14.84; Lode ÷ Knot durable: 46000 / 11000 = 4.18.
    assert!(
        md.contains("| lode | 3100 | 46000 | 2000 | 14.84× | 1.00× |"),
        "{md}"
    );
    assert!(
        md.contains("| knot | 2900 | 11000 | 2000 | 3.79× | 4.18× |"),
        "{md}"
    );
    // Worst under updates ÷ static: 97000 / 101000.
    assert!(md.contains("| lode | 101000 | 97000 | 0.96× |"), "{md}");
    // Lode ÷ BIND at 5000 updates/s: 97000 / 21000 = 4.62.
    assert!(md.contains("| bind | 1.98× | 4.62× |"), "{md}");
    assert!(
        md.contains("| lode | 125000 | 1.00× | 500 | 900 | 1.80× | 2 |"),
        "{md}"
    );
    assert!(md.contains("- a note"));
    let js = to_json(&sample());
    assert_eq!(js["summary"][0]["durable_updates_per_sec"], 46_000.0);
    assert_eq!(js["runs"].as_array().map(Vec::len), Some(6));
}

#[test]
fn bulk_inputs_and_outputs() {
    let csv = bulk_csv("1212", 3, 2);
    assert_eq!(
        csv,
        "+12123800000,sip:+12123800000@bulk.example.net\n\
         +12123800001,sip:+12123800001@bulk.example.net\n"
    );
    let text = "lode update: 60 s: 10/20 records acknowledged (50.0%), 1 records/s, ETA 1 s\n\
                lode update: 100000 records in 200 messages acknowledged, 0.84 s, 119048 records/s (127.0.0.1:15700)\n";
    assert_eq!(parse_bulk_summary(text), Some((100_000, 0.84)));
    assert_eq!(parse_bulk_summary("nothing"), None);
    let log = "x\nINFO zone 0.e164.arpa.: compacting 40000 changed names into a new base\ny\n";
    assert_eq!(count_compactions(log), 1);
}

#[test]
fn settings_are_checked() {
    let key = lode_tsig::Key::parse_spec("k.:c2VjcmV0").expect("key");
    let ok = UpdCompareConfig {
        out: PathBuf::from("/tmp/x"),
        work: PathBuf::from("/tmp/y"),
        lode: PathBuf::from("lode"),
        servers: vec![Kind::Lode, Kind::Knot, Kind::Bind],
        records: 100_000,
        runs: 1,
        key,
        clients: 64,
        durable: Duration::from_secs(1),
        fsync: Duration::from_secs(1),
        update_rates: vec![0.0, 10.0],
        step: Duration::from_secs(1),
        high: 1000,
        resolution: 10,
        timeout: Duration::from_millis(250),
        bulk: 1_000_000,
        bulk_shape: (500, 16, 1),
        stall_rate: 100,
        bulk_limit: Duration::from_secs(10),
        server_cpu: 0,
        tester_cpu: 1,
        port: 15700,
        load_limit: Duration::from_secs(10),
        install: false,
        socket_buffer: Some(4 << 20),
    };
    assert!(ok.check().is_ok());
    let bad = |f: &dyn Fn(&mut UpdCompareConfig)| {
        let mut c = ok.clone();
        f(&mut c);
        c.check().is_err()
    };
    assert!(bad(&|c| c.servers = vec![Kind::Nsd]));
    assert!(bad(&|c| c.records = 6_000_000));
    assert!(bad(&|c| c.bulk = 1_000_001));
    assert!(bad(&|c| c.bulk = 3_000_000));
    assert!(bad(&|c| c.update_rates = vec![-1.0]));
    assert!(bad(&|c| c.clients = 0));
    assert!(bad(&|c| c.bulk_shape = (0, 1, 1)));
}

/// updates.json carries the provenance, the socket buffers asked and each server's
/// measured ones (per run too), every figure a number; updates.md the same sections.
#[test]
fn report_has_provenance_and_conditions() {
    let mut r = sample();
    r.runs[0].conditions = r.fairness.servers.first().map(|(_, c)| c.clone());
    let js = to_json(&r);
    let found = crate::provenance::numeric_strings(&js);
    assert!(found.is_empty(), "numbers as strings: {found:?}");
    assert!(js["provenance"]["machine"]["cores"].is_u64(), "{js}");
    assert_eq!(js["settings"]["records"], 100_000);
    assert_eq!(js["settings_text"][0][1], "test");
    assert_eq!(js["socket_buffer_bytes"], 4 << 20);
    assert_eq!(js["socket_buffers"], "socket buffers: test");
    assert_eq!(js["conditions"]["nsd"]["rcvbuf_bytes"][0], 2 << 20);
    assert_eq!(js["runs"][0]["conditions"]["rcvbuf_bytes"][0], 4 << 20);
    assert!(js["runs"][1]["conditions"].is_null());
    assert_eq!(
        js["differences_not_removed"].as_array().map(Vec::len),
        Some(1)
    );
    let md = to_markdown(&r);
    let (targets, conditions, provenance, notes) = (
        md.find("## Targets 2 and 4").expect("targets"),
        md.find("## Conditions").expect("conditions"),
        md.find("## Provenance").expect("provenance"),
        md.find("## Notes").expect("notes"),
    );
    assert!(
        targets < conditions && conditions < provenance && provenance < notes,
        "{md}"
    );
    assert!(md.contains("static.\n\n## Conditions"), "{md}");
}
