use super::*;

#[test]
fn step_verdicts() {
    let r = StepResult {
        rate: 1000,
        sent: 10_000,
        valid: 9_999,
        ..StepResult::default()
    };
    assert!(!r.passed(0.0, 0.01), "one lost query fails zero loss");
    assert!(r.passed(0.0001, 0.01), "0.01 % allows one in 10 000");
    let late = StepResult {
        behind: 0.02,
        valid: 10_000,
        ..r
    };
    assert!(
        !late.passed(0.0, 0.01),
        "a sender 2 % behind makes the step invalid"
    );
    assert!(!late.tester_ok(0.01));
    let errs = StepResult {
        send_errors: 1,
        valid: 10_000,
        ..r
    };
    assert!(!errs.passed(0.0, 0.01));
    assert!(!StepResult::default().passed(0.0, 0.01));
}

#[test]
fn answered_and_lost() {
    let r = StepResult {
        rate: 2000,
        sent: 1000,
        valid: 600,
        late: 50,
        wrong: 25,
        achieved_rate: 1900.0,
        ..StepResult::default()
    };
    assert_eq!(r.unanswered(), 325);
    assert_eq!(r.lost(), 400);
    assert!((r.answered_qps() - 1140.0).abs() < 1e-9);
    assert_eq!(StepResult::default().answered_qps(), 0.0);
}

#[test]
fn shares_add_up() {
    for (total, threads) in [(10u64, 3u64), (1, 4), (1_000_001, 2)] {
        let sum: u64 = (0..threads).map(|t| share(total, threads, t)).sum();
        assert_eq!(sum, total);
    }
}

#[test]
fn replies_match_by_socket_id_and_question() {
    let set = QuerySet::parse_list("a.test A\nb.test A\nc.test A\n", 10, false).expect("queries");
    let track = Track::new(70_000);
    // Queries 0..70000 cycle through the 3 names; query q went out on socket q % 5.
    for q in 0..70_000u64 {
        track.sent_at[q as usize].store(100 + 1, Ordering::Relaxed);
        track.socket[q as usize].store((q % 5) as u16, Ordering::Relaxed);
    }
    track.sent.store(70_000, Ordering::Release);
    let question_of = |q: u64| set.question((q % 3) as usize);
    let reply_for = |q: u64| {
        let mut r = set.get((q % 3) as usize).to_vec();
        r[..2].copy_from_slice(&(q as u16).to_be_bytes());
        r[2] |= 0x80;
        r
    };
    // Queries 4 and 65_540 share ID 4; they went out on sockets 4 and 0.
    assert_eq!(
        find_query(&track, 0, &reply_for(65_540), 200, 1000, &question_of),
        Some(65_540)
    );
    assert_eq!(
        find_query(&track, 4, &reply_for(4), 200, 1000, &question_of),
        Some(4)
    );
    // Wrong socket or wrong question: no match.
    assert_eq!(
        find_query(&track, 1, &reply_for(4), 200, 1000, &question_of),
        None
    );
    let mut r = reply_for(7);
    r[..2].copy_from_slice(&8u16.to_be_bytes());
    assert_eq!(find_query(&track, 3, &r, 200, 1000, &question_of), None);
    assert_eq!(
        find_query(&track, 0, &[0u8; 5], 200, 1000, &question_of),
        None
    );
}

#[test]
fn step_against_echo() {
    // Small and short: 500 queries at 2000 q/s against the echo responder.
    let echo = crate::echo::start(&["127.0.0.1:0".parse().expect("addr")], 1).expect("echo");
    let queries =
        QuerySet::parse_list("a.test A\nb.test A\nc.test NAPTR\n", 10, false).expect("queries");
    let mut cfg = RateConfig::new(echo.local_addrs()[0]);
    cfg.ports = 8;
    cfg.duration = Duration::from_millis(250);
    cfg.expect = Expect::NoError;
    cfg.max_behind = 1.0; // a loaded CI machine must not fail this test
    let mut tester = Tester::new(cfg, Arc::new(queries)).expect("tester");
    let r = tester.step(2000).expect("step");
    assert_eq!(r.sent, 500);
    assert!(r.valid > 0, "{r:?}");
    assert_eq!(r.wrong, 0);
    assert!(r.valid + r.late <= r.sent);
    assert!(r.latency_us[0] <= r.latency_us[1] && r.latency_us[1] <= r.latency_us[2]);
    assert!(
        r.latency_us[2] > 0,
        "a loopback reply takes at least a microsecond"
    );
    // Answer expected, none in an echo: every reply is wrong.
    tester.config.expect = Expect::Answer;
    let r = tester.step(1000).expect("step");
    assert_eq!(r.valid, 0);
    assert!(r.wrong > 0);
    echo.stop();
}
