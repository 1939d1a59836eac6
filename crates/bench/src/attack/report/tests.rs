use super::*;
use crate::attack::mix::Mix;

fn step(rate: u64, sent: u64, valid: u64, achieved: f64) -> StepResult {
    StepResult {
        rate,
        sent,
        valid,
        achieved_rate: achieved,
        ..StepResult::default()
    }
}

#[test]
fn overload_verdicts() {
    // R0 100k; 2 × R0 offered in full; 96k answered.
    let s = step(200_000, 200_000, 96_000, 200_000.0);
    assert!((s.answered_qps() - 96_000.0).abs() < 1e-6);
    assert_eq!(overload_verdict(100_000, 2.0, &s), Verdict::Met);
    let s = step(200_000, 200_000, 90_000, 200_000.0);
    assert_eq!(overload_verdict(100_000, 2.0, &s), Verdict::Missed);
    // The tester could only send 150k: not the load the target names.
    let s = step(200_000, 150_000, 100_000, 150_000.0);
    match overload_verdict(100_000, 2.0, &s) {
        Verdict::Unmeasured(why) => assert!(why.contains("1.50 × R0"), "{why}"),
        v => panic!("{v:?}"),
    }
    assert!(matches!(
        overload_verdict(0, 2.0, &s),
        Verdict::Unmeasured(_)
    ));
    assert_eq!(
        Verdict::all(&[
            Verdict::Met,
            Verdict::Unmeasured("x".into()),
            Verdict::Missed
        ]),
        Verdict::Missed
    );
    assert_eq!(
        Verdict::all(&[Verdict::Met, Verdict::Unmeasured("x".into())]),
        Verdict::Unmeasured("x".into())
    );
    assert_eq!(Verdict::all(&[Verdict::Met, Verdict::Met]), Verdict::Met);
    assert!(matches!(Verdict::all(&[]), Verdict::Unmeasured(_)));
}

fn cpu(mode: GuardMode, us: f64, echoed: bool) -> CpuStep {
    CpuStep {
        server: Kind::Lode,
        mode,
        run: 1,
        step: step(10_000, 10_000, 10_000, 10_000.0),
        cpu_secs: us * 10_000.0 / 1e6,
        cookie_echoed: Some(echoed),
    }
}

#[test]
fn cpu_verdicts() {
    let mut steps = vec![
        cpu(GuardMode::Off, 5.0, false),
        cpu(GuardMode::Off, 5.2, false),
        cpu(GuardMode::Off, 4.8, false),
        cpu(GuardMode::Rrl, 5.2, false),
        cpu(GuardMode::RrlCookies, 5.24, true),
    ];
    let m = cpu_medians(&steps, Kind::Lode);
    assert!((m[0].unwrap_or(0.0) - 5.0).abs() < 1e-9);
    assert_eq!(cpu_verdict(&steps, Kind::Lode), Verdict::Met);
    assert!(matches!(
        cpu_verdict(&steps, Kind::Knot),
        Verdict::Unmeasured(_)
    ));
    steps.push(cpu(GuardMode::RrlCookies, 5.4, true));
    steps.push(cpu(GuardMode::RrlCookies, 5.5, true));
    assert_eq!(
        cpu_verdict(&steps, Kind::Lode),
        Verdict::Missed,
        "median 5.4 > 5.25"
    );
    // Cookies not really on: not measured.
    let steps = vec![
        cpu(GuardMode::Off, 5.0, false),
        cpu(GuardMode::Rrl, 5.0, false),
        cpu(GuardMode::RrlCookies, 5.0, false),
    ];
    assert!(matches!(
        cpu_verdict(&steps, Kind::Lode),
        Verdict::Unmeasured(_)
    ));
    // Losses at the offered rate: not a clean measurement.
    let mut lossy = vec![
        cpu(GuardMode::Off, 5.0, false),
        cpu(GuardMode::Rrl, 5.0, false),
        cpu(GuardMode::RrlCookies, 5.0, true),
    ];
    lossy[1].step.valid = 9_000;
    lossy[1].cpu_secs = 5.0 * 9_000.0 / 1e6;
    assert!(matches!(
        cpu_verdict(&lossy, Kind::Lode),
        Verdict::Unmeasured(_)
    ));
}

fn tcp_row(without: u64, with: u64) -> TcpRow {
    TcpRow {
        server: Kind::Lode,
        bounds: (1000, 10),
        without,
        with,
        steps: (Vec::new(), Vec::new()),
        abuse: AbuseStats::default(),
        churn: Some((without / 2, Vec::new(), AbuseStats::default())),
    }
}

#[test]
fn tcp_verdicts() {
    assert_eq!(tcp_verdict(&tcp_row(100_000, 95_000)), Verdict::Met);
    assert_eq!(tcp_verdict(&tcp_row(100_000, 94_000)), Verdict::Missed);
    assert!(matches!(
        tcp_verdict(&tcp_row(0, 0)),
        Verdict::Unmeasured(_)
    ));
}

fn sample() -> AttackResult {
    AttackResult {
        command: "lode-bench attack --quick".into(),
        settings: vec![("set".into(), "100 records".into())],
        parameters: json!({"records": 100, "step_secs": 0.5}),
        overload: vec![
            OverloadRow {
                server: Kind::Lode,
                mix: Mix::STANDARD[1],
                r0: 100_000,
                hit_ceiling: false,
                search: vec![step(100_000, 100_000, 100_000, 100_000.0)],
                overload: vec![
                    (1.5, step(150_000, 150_000, 99_000, 150_000.0)),
                    (2.0, step(200_000, 200_000, 97_000, 200_000.0)),
                ],
            },
            OverloadRow {
                server: Kind::Knot,
                mix: Mix::STANDARD[1],
                r0: 50_000,
                hit_ceiling: false,
                search: Vec::new(),
                overload: vec![(2.0, step(100_000, 100_000, 30_000, 100_000.0))],
            },
        ],
        cpu: vec![
            cpu(GuardMode::Off, 5.0, false),
            cpu(GuardMode::Rrl, 5.1, false),
            cpu(GuardMode::RrlCookies, 5.2, true),
        ],
        cpu_rate: 10_000,
        tcp: vec![tcp_row(100_000, 96_000)],
        notes: vec!["a note".into()],
        wall_secs: 12.0,
        fairness: crate::compare::fairness::sample(),
    }
}

#[test]
fn report_has_three_tables_and_their_verdicts() {
    let r = sample();
    let md = to_markdown(&r);
    assert!(md.contains("lode-bench attack --quick"));
    assert!(md.contains("## 1. Overload"));
    assert!(md.contains("## 2. CPU per answer"));
    assert!(md.contains("## 3. UDP under a TCP abuse mix"));
    assert_eq!(md.matches("**Met?** **met**").count(), 3, "{md}");
    assert!(md.contains("| lode | good + 4× random | 100000 |"), "{md}");
    assert!(
        md.contains("| 200000 | 97000 | 0.970 | 0 | 103000 |"),
        "{md}"
    );
    assert!(
        md.contains("| knot | good + 4× random | 50000 | – | – |"),
        "{md}"
    );
    assert!(md.contains("0 wrong of"), "{md}");
    assert!(md.contains("- a note"));
    let js = to_json(&r);
    assert_eq!(js["overload"][0]["overload"][1]["verdict"], "met");
    assert_eq!(js["tcp"][0]["ratio"], 0.96);
    assert_eq!(js["tcp"][0]["churn"]["ratio"], 0.5);
    assert!(md.contains("| 50000 | 0.500 | 0 |"), "{md}");
    assert_eq!(js["cpu_summary"][0]["verdict"], "met");
}

/// attack.json carries the provenance, the socket buffers asked and each server's
/// measured ones, every figure a number; attack.md the same sections.
#[test]
fn report_has_provenance_and_conditions() {
    let r = sample();
    let js = to_json(&r);
    let found = crate::provenance::numeric_strings(&js);
    assert!(found.is_empty(), "numbers as strings: {found:?}");
    assert!(js["provenance"]["machine"]["cores"].is_u64(), "{js}");
    assert_eq!(js["settings"]["records"], 100);
    assert_eq!(js["settings_text"][0], json!(["set", "100 records"]));
    assert!(js["provenance"]["sysctls_before"].is_object(), "{js}");
    assert_eq!(js["socket_buffer_bytes"], 4 << 20);
    assert_eq!(js["socket_buffers"], "socket buffers: test");
    assert_eq!(js["conditions"]["lode"]["rcvbuf_bytes"][0], 4 << 20);
    assert_eq!(
        js["differences_not_removed"].as_array().map(Vec::len),
        Some(1)
    );
    let md = to_markdown(&r);
    let (conditions, provenance, notes) = (
        md.find("## Conditions").expect("conditions"),
        md.find("## Provenance").expect("provenance"),
        md.find("## Notes").expect("notes"),
    );
    assert!(conditions < provenance && provenance < notes, "{md}");
    assert!(md.contains("### Differences not removed"), "{md}");
}
