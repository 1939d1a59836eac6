use super::data::stream_need;
use super::*;

#[test]
fn experiments_and_run_time() {
    for e in [
        Experiment::Propagation,
        Experiment::IxfrLoad,
        Experiment::Axfr,
    ] {
        assert_eq!(Experiment::parse(e.name()), Some(e));
    }
    assert_eq!(Experiment::parse("nope"), None);
    let cfg = FleetConfig {
        primary: Kind::Lode,
        secondaries: vec![Kind::Lode, Kind::Knot, Kind::Bind],
        experiment: Experiment::Propagation,
        rates: vec![10.0, 1000.0],
        updates: 1000,
        records: 0,
        tld: None,
        in_flight: 1,
        out: PathBuf::new(),
        work: PathBuf::new(),
        lode: PathBuf::new(),
        key: lode_tsig::Key::parse_spec("hmac-sha256:k.:c2VjcmV0").expect("key"),
        step: Duration::from_secs(10),
        high: 100_000,
        resolution: 5_000,
        workers: 1,
        wait: Duration::from_secs(30),
        load_limit: Duration::from_secs(60),
        probe_window: 8,
        probe_interval: Duration::from_millis(1),
    };
    // 99.9 s + 1 s of updates, 5 s slack each, 10 s set-up.
    assert_eq!(expected_secs(&cfg).round(), 121.0);
    // 100000/5000 = 20: five halvings plus the two bounds.
    assert_eq!(search_steps(&cfg), 7);
    // TLD data: the stream is sized by what the runs may send.
    let tld = FleetConfig {
        tld: Some(20_000),
        rates: vec![1.0, f64::INFINITY],
        updates: 100,
        ..cfg.clone()
    };
    assert_eq!(stream_need(&tld), 200.0);
    // 99 s at 1/s, none at full speed, 5 s slack each; set-up 10.4 s.
    assert_eq!(expected_secs(&tld).round(), 119.0);
    let tix = FleetConfig {
        experiment: Experiment::IxfrLoad,
        rates: vec![0.0, 10.0, f64::INFINITY],
        ..tld
    };
    assert_eq!(search_secs(&tix), 7.0 * 11.5 + 5.0);
    assert_eq!(
        stream_need(&tix),
        3.0 * (1711.0 + registry::FULL_SPEED_GUESS * 2.0 * 85.5)
    );
    let ix = FleetConfig {
        experiment: Experiment::IxfrLoad,
        rates: vec![0.0, 4.0],
        ..cfg
    };
    assert_eq!(expected_secs(&ix).round(), 10.0 + 2.0 * 3.0 * 7.0 * 10.0);
}
