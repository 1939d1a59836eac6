use super::*;

#[test]
fn steps_by_name() {
    assert_eq!(Step::parse("sign"), Ok(Step::Sign));
    assert_eq!(Step::parse(" query"), Ok(Step::Query));
    assert!(Step::parse("signing").is_err_and(|e| e.0.contains("gen, load")));
    for s in Step::ALL {
        assert_eq!(Step::parse(s.name()), Ok(s));
    }
}

#[test]
fn disk_and_headers() {
    assert_eq!(disk_needed(0), 1 << 30);
    assert_eq!(disk_needed(160_000_000), 48_000_000_000 + (1 << 30));
    assert_eq!(
        parse_df_avail("     Avail\n23622320128\n"),
        Some(23_622_320_128)
    );
    assert_eq!(parse_df_avail("Avail\n"), None);
    let head = "; Update stream …\n; Pace \"medium\": 3 % of the zone per day = 0.0694 updates/s = 0.2211 records/s:\n\
                ;   lode update -s SERVER -k KEYFILE -c 1 -r 0.2211 updates-medium.txt\n\
                ; (no -r: as fast as the server takes them)\nzone com.\nupdate add x -r 5\n";
    assert_eq!(parse_update_rate(head), Some(0.2211));
    assert_eq!(parse_update_rate("zone com.\n; -r 3\n"), None);
}

fn row(step: Step, hwm: u64, rss: u64) -> StepRow {
    StepRow {
        hwm,
        rss,
        ..StepRow::new(step)
    }
}

#[test]
fn goals_met_missed_and_unmeasured() {
    let r = ComResult::default();
    let g = r.goals(1000);
    assert_eq!(g.len(), 5);
    assert!(g.iter().all(|g| g.met.is_none()), "{g:?}");
    assert!(g[0].line().ends_with("| - | not measured |"));

    let mut r = ComResult {
        rows: vec![
            row(Step::Gen, 0, 0),
            row(Step::Load, 300 << 20, 200 << 20),
            row(Step::Sign, 500 << 20, 240 << 20),
        ],
        snapshot_starts: vec![3.0, 1.0, 2.0],
        sign: Some(SignFigures {
            wall_secs: 20.0,
            signing_secs: Some(10.0),
            signatures: 90_000,
            ceiling: Some(10_000.0),
        }),
        ..ComResult::default()
    };
    let g = r.goals(1_000_000);
    assert_eq!(g[0].met, Some(true));
    assert!(
        g[0].value
            .contains("0.23 GiB at 1000000 delegations (sign;")
            && g[0].value.contains("37.50 GiB at 160 M, linearly"),
        "{}",
        g[0].value
    );
    assert_eq!(g[1].met, Some(true));
    assert!(g[1].value.starts_with("2.00 s (median of 3)"));
    assert_eq!(g[2].met, Some(true));
    assert!(g[2].value.contains("9000 sig/s of 10000 (90 %)"));
    assert_eq!(g[3].met, Some(false));
    assert!(g[3].value.contains("2.08 at most (sign)"));
    assert_eq!(g[4].met, Some(true));
    assert_eq!(
        g[3].line(),
        format!("| {} | {} | MISSED |", g[3].goal, g[3].value)
    );

    r.rows[2].failed = Some("killed".into());
    r.rows.push(row(Step::Update, 0, 0));
    r.snapshot_starts = vec![31.0];
    r.sign.as_mut().unwrap().ceiling = None;
    let g = r.goals(1_000_000);
    assert_eq!(g[1].met, Some(false));
    assert_eq!(g[2].met, None);
    assert_eq!(g[4].met, Some(false));
    assert_eq!(g[4].value, "failed: sign");
    // The failed step's memory is not the resident figure.
    assert!(g[0].value.starts_with("0.20 GiB"));
}

#[test]
fn rows_tables_and_json() {
    let mut s = row(Step::Load, 3 << 20, 2 << 20);
    s.secs = 1.25;
    s.disk = 10 << 20;
    s.note = "a | b".into();
    assert_eq!(s.line(), "| load | 1.2 | 3 | 2 | 1.50 | 10 | a / b |");
    s.failed = Some("out of\nmemory".into());
    assert!(s.line().ends_with("| FAILED: out of memory |"));
    assert_eq!(
        row(Step::Gen, 0, 0).line(),
        "| gen | 0.0 | - | - | - | 0 |  |"
    );
    let u = UpdateFigures {
        serial_after: 2,
        secondary_serial: u32::MAX,
        ..UpdateFigures::default()
    };
    assert_eq!(u.lag(), 3);
    let sr = secondary_row(&UpdateFigures {
        secondary_secs: 1.5,
        secondary_hwm: 4 << 20,
        secondary_rss: 2 << 20,
        ..u.clone()
    });
    assert_eq!(
        sr.line(),
        "| update: secondary | 1.5 | 4 | 2 | 2.00 | 0 | served the signed zone (AXFR) after \
         1.5 s; serial 4294967295 at the stream's end, lag 3 |"
    );
    let r = ComResult {
        rows: vec![s],
        update: Some(u),
        queries: vec![(Load::Referral, Run::default())],
        ..ComResult::default()
    };
    assert_eq!(r.lines(10).len(), 2 + 1 + 1 + 2 + 5);
    let cfg = ComConfig {
        out: "/nonexistent".into(),
        work: "/nonexistent".into(),
        lode: "/bin/lode".into(),
        bench: "/bin/lode-bench".into(),
        delegations: 10,
        steps: Step::ALL.to_vec(),
        snapshot_runs: 3,
        server_cpu: 0,
        tester_cpu: 1,
        sign_threads: 2,
        port: 15470,
        gen_limit: Duration::from_secs(1),
        load_limit: Duration::from_secs(1),
        sign_limit: Duration::from_secs(1),
        xfr_limit: Duration::from_secs(1),
        update_secs: 60,
        update_rate: None,
        rate: 10_000,
        duration: 10,
    };
    let j = to_json(&cfg, &r);
    assert_eq!(j["update"]["lag_serials"], 3);
    assert_eq!(j["steps"][0]["failed"], "out of\nmemory");
    assert_eq!(j["goals"][4]["met"], false);
    assert!(crate::provenance::numeric_strings(&j).is_empty(), "{j}");
    assert!(to_markdown(&cfg, &r).contains("| goal | measured | |"));
}
