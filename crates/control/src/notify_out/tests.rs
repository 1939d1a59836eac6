use super::*;

fn zone() -> Name {
    "example.com.".parse().unwrap()
}

/// An SOA record of `example.com.` with `serial` (the root as both names:
/// only the serial is read here).
fn soa(serial: u32) -> Record {
    let mut rdata = vec![0, 0];
    rdata.extend_from_slice(&serial.to_be_bytes());
    rdata.extend_from_slice(&[0; 16]);
    Record {
        owner: zone(),
        class: lode_wire::Class::IN,
        rtype: lode_wire::Rtype::SOA,
        ttl: 3600,
        rdata: rdata.into(),
    }
}

fn target() -> SocketAddr {
    "192.0.2.53:53".parse().unwrap()
}

/// The NOTIFYs and SOA questions it asks for now, as (kind, serial or 0, id).
fn sent(n: &mut NotifyOut) -> Vec<(&'static str, u32, u16)> {
    let mut out = Vec::new();
    while let Some(a) = n.poll_action() {
        match a {
            Action::Notify { soa, id, .. } => out.push(("notify", soa_serial(&soa), id)),
            Action::AskSoa { id, .. } => out.push(("ask", 0, id)),
            Action::Report(Report::GaveUp { serial, .. }) => out.push(("gave-up", serial, 0)),
            Action::Report(Report::Held { serial, .. }) => out.push(("held", serial, 0)),
            Action::Report(_) => {}
        }
    }
    out
}

fn notifies(v: &[(&str, u32, u16)]) -> Vec<u32> {
    v.iter().filter(|a| a.0 == "notify").map(|a| a.1).collect()
}

fn told(serial: u32, before: Option<u32>) -> CatchingUp {
    let now = Instant::now();
    CatchingUp {
        serial,
        soa: soa(serial),
        stall: CATCH_UP_LIMIT,
        nudges: 0,
        before: Probe {
            id: None,
            serial: before,
        },
        since: now,
        rtt: Duration::ZERO,
        asked: None,
        next_probe: now,
        blind: false,
        answered: false,
        settled: None,
    }
}

#[test]
fn caught_up_at_the_serial_told_or_newer() {
    let c = told(100, Some(90));
    assert!(c.reached(100));
    assert!(c.reached(105));
    assert!(!c.reached(90), "what it served before");
    assert!(!c.reached(95), "a transfer started before it was told");
    // A serial of its own (a signer's serial policy), either side of ours.
    assert!(c.reached(7));
    assert!(!told(2_000_000_000, Some(1_764_000_000)).reached(1_764_000_050));
    assert!(told(100, Some(1_764_000_000)).reached(1_764_000_050));
    // Across the wrap of serial arithmetic (RFC 1982).
    assert!(told(u32::MAX, Some(u32::MAX - 5)).reached(3));
    assert!(!told(3, Some(u32::MAX - 5)).reached(u32::MAX));
    // Nothing known of before: only ours or newer.
    assert!(!told(100, None).reached(7));
}

#[test]
fn holds_end() {
    let mut c = told(100, None);
    assert_eq!(c.limit(), c.since + CATCH_UP_LIMIT);
    c.blind = true;
    assert_eq!(c.limit(), c.since + BLIND_HOLD);
    assert!(!c.asking());
    let t = c.since + Duration::from_millis(7);
    c.settled = Some(t);
    assert_eq!(c.limit(), t);
}

/// Retries at 1, 2, 4 and 8 s, then given up; nothing is left to do.
#[test]
fn retried_then_given_up() {
    let t0 = Instant::now();
    let mut n = NotifyOut::new(0);
    n.published(&zone(), &soa(1), &[target()], Duration::ZERO, t0);
    assert_eq!(n.poll_timeout(), Some(t0));
    let mut at = Vec::new();
    while let Some(t) = n.poll_timeout() {
        n.handle_timeout(t);
        let s = sent(&mut n);
        if !notifies(&s).is_empty() {
            at.push(t.duration_since(t0).as_secs());
        }
        if s.iter().any(|a| a.0 == "gave-up") {
            assert_eq!(t.duration_since(t0), Duration::from_secs(31));
        }
    }
    assert_eq!(at, [0, 1, 3, 7, 15]);
    assert!(n.pending.is_empty());
}

/// The secondary was down while serial 1 was retried; a newer serial that
/// comes after the last try is sent at once with tries of its own, not
/// given up with the older one (the NOTIFY lost behind a retry).
#[test]
fn newer_serial_not_lost_behind_given_up_retries() {
    let t0 = Instant::now();
    let mut n = NotifyOut::new(0);
    n.published(&zone(), &soa(1), &[target()], Duration::ZERO, t0);
    for s in [0, 1, 3, 7, 15] {
        n.handle_timeout(t0 + Duration::from_secs(s));
    }
    assert_eq!(notifies(&sent(&mut n)), [1, 1, 1, 1, 1]);
    let t = t0 + Duration::from_secs(17);
    n.published(&zone(), &soa(2), &[target()], Duration::ZERO, t);
    assert_eq!(n.poll_timeout(), Some(t), "due at once");
    n.handle_timeout(t);
    let s = sent(&mut n);
    assert_eq!(notifies(&s), [2]);
    assert!(s.iter().any(|a| a.0 == "ask"), "asks what it serves first");
    // Serial 2 has its own five tries.
    let mut tries = 1;
    while let Some(t) = n.poll_timeout() {
        n.handle_timeout(t);
        tries += notifies(&sent(&mut n)).len();
    }
    assert_eq!(tries, TRIES as usize);
}

/// A newer serial that came while the first try awaited its answer is
/// sent at the retry, with tries of its own; one given up with a newer one
/// waiting sends the newer one.
#[test]
fn newer_serial_waits_for_the_first_answer_only() {
    let t0 = Instant::now();
    let mut n = NotifyOut::new(0);
    n.published(&zone(), &soa(1), &[target()], Duration::ZERO, t0);
    n.handle_timeout(t0);
    let t = t0 + Duration::from_millis(10);
    n.published(&zone(), &soa(2), &[target()], Duration::ZERO, t);
    n.handle_timeout(t);
    assert!(notifies(&sent(&mut n)) == [1], "held behind the first try");
    n.handle_timeout(t0 + NEWER_WAITS - Duration::from_millis(1));
    assert!(
        sent(&mut n).is_empty(),
        "the first try's answer may be on its way"
    );
    assert_eq!(n.poll_timeout(), Some(t0 + NEWER_WAITS));
    n.handle_timeout(t0 + NEWER_WAITS);
    assert_eq!(
        notifies(&sent(&mut n)),
        [2],
        "unanswered for NEWER_WAITS: counted lost, the newer serial sent"
    );
    let k = (zone(), target());
    assert_eq!(n.pending[&k].tries, 1, "with tries of its own");
    // Given up with a newer one waiting: the newer one is sent.
    if let Some(p) = n.pending.get_mut(&k) {
        p.tries = TRIES;
        p.newer = Some(soa(3));
        p.due = t0;
    }
    n.handle_timeout(t0 + FIRST_RETRY * 2);
    let s = sent(&mut n);
    assert!(s.iter().any(|a| a == &("gave-up", 2, 0)), "{s:?}");
    assert_eq!(notifies(&s), [3]);
}

/// A target that answered before waits four of its round trips (when that
/// is longer than NEWER_WAITS) before a newer serial replaces an unanswered
/// first try; never longer than the first retry's wait.
#[test]
fn newer_serial_waits_four_round_trips_of_a_far_target() {
    let t0 = Instant::now();
    let mut n = NotifyOut::new(0);
    n.published(&zone(), &soa(1), &[target()], Duration::ZERO, t0);
    n.handle_timeout(t0);
    let id = sent(&mut n)
        .iter()
        .find(|a| a.0 == "notify")
        .map(|a| a.2)
        .expect("sent");
    // Answered after 150 ms: its round trip.
    let t1 = t0 + Duration::from_millis(150);
    n.notify_answered(target(), id, lode_wire::rcode::NOERROR, t1);
    let k = (zone(), target());
    n.catching.remove(&k);
    let _ = sent(&mut n);
    n.published(&zone(), &soa(2), &[target()], Duration::ZERO, t1);
    n.handle_timeout(t1);
    assert_eq!(notifies(&sent(&mut n)), [2]);
    n.published(&zone(), &soa(3), &[target()], Duration::ZERO, t1);
    assert_eq!(n.poll_timeout(), Some(t1 + Duration::from_millis(600)));
    n.handle_timeout(t1 + Duration::from_millis(599));
    assert!(notifies(&sent(&mut n)).is_empty());
    n.handle_timeout(t1 + Duration::from_millis(600));
    assert_eq!(notifies(&sent(&mut n)), [3]);
    // A round trip of 400 ms: four of them exceed the first retry, which bounds it.
    n.rtts.insert(target(), Duration::from_millis(400));
    let t2 = t1 + Duration::from_millis(700);
    n.published(&zone(), &soa(4), &[target()], Duration::ZERO, t2);
    assert_eq!(
        n.poll_timeout(),
        Some(t1 + Duration::from_millis(600) + FIRST_RETRY)
    );
}

/// A secondary that acknowledged serial 1 is asked its SOA until it serves
/// 1; serial 2, published meanwhile, is held and sent once it has served 1
/// for as long again as that took.
#[test]
fn paced_while_catching_up() {
    let t0 = Instant::now();
    let mut n = NotifyOut::new(0);
    n.published(&zone(), &soa(1), &[target()], Duration::ZERO, t0);
    n.handle_timeout(t0);
    let s = sent(&mut n);
    let ask_before = s.iter().find(|a| a.0 == "ask").unwrap().2;
    let notify_id = s.iter().find(|a| a.0 == "notify").unwrap().2;
    n.soa_answered(&zone(), target(), ask_before, Some(0), t0);
    let t1 = t0 + Duration::from_millis(1);
    n.notify_answered(target(), notify_id, 0, t1);
    // Serial 2 waits.
    n.published(&zone(), &soa(2), &[target()], Duration::ZERO, t1);
    assert!(sent(&mut n).iter().any(|a| a.0 == "held"));
    // Asked at 2 ms after the acknowledgement; still at 0.
    let t = n.poll_timeout().unwrap();
    assert_eq!(t, t1 + FIRST_PROBE);
    n.handle_timeout(t);
    let ask = sent(&mut n);
    assert_eq!(ask.len(), 1);
    n.soa_answered(&zone(), target(), ask[0].2, Some(0), t);
    // Then every 4 ms; it serves 1 at t1 + 10 ms.
    let t = n.poll_timeout().unwrap();
    assert_eq!(t, t1 + FIRST_PROBE + PROBE_GAP);
    n.handle_timeout(t);
    let ask = sent(&mut n);
    let served_at = t1 + Duration::from_millis(10);
    n.soa_answered(&zone(), target(), ask[0].2, Some(1), served_at);
    // Settled after as long again (10 ms): serial 2 goes then.
    let t = n.poll_timeout().unwrap();
    assert_eq!(t, served_at + Duration::from_millis(10));
    n.handle_timeout(t - Duration::from_millis(1));
    assert!(notifies(&sent(&mut n)).is_empty(), "not before");
    n.handle_timeout(t);
    assert_eq!(notifies(&sent(&mut n)), [2]);
}

/// A secondary far away (30 ms each way): every answer comes after the
/// next question was asked. Its questions go once per round trip, any of
/// their answers counts, and it is seen to catch up — not taken for one
/// that cannot be asked (newer serials held a second behind each change).
#[test]
fn a_far_secondary_is_seen_catching_up() {
    let ms = Duration::from_millis;
    let t0 = Instant::now();
    let mut n = NotifyOut::new(0);
    n.published(&zone(), &soa(1), &[target()], Duration::ZERO, t0);
    n.handle_timeout(t0);
    let id = sent(&mut n).iter().find(|a| a.0 == "notify").unwrap().2;
    let acked = t0 + ms(60);
    n.notify_answered(target(), id, 0, acked);
    n.published(&zone(), &soa(2), &[target()], Duration::ZERO, acked);
    // It serves serial 1 from 80 ms after its acknowledgement on.
    let serves = |at: Instant| if at >= acked + ms(80) { 1 } else { 0 };
    // Questions in flight: (answer's arrival, id, serial at the question's arrival).
    let mut flight: Vec<(Instant, u16, u32)> = Vec::new();
    let mut asked = Vec::new();
    let mut told = None;
    let mut now = acked;
    while now < t0 + ms(2000) && told.is_none() {
        let next = n
            .poll_timeout()
            .into_iter()
            .chain(flight.iter().map(|f| f.0))
            .min()
            .unwrap();
        now = next;
        if let Some(i) = flight.iter().position(|f| f.0 == now) {
            let (_, id, served) = flight.remove(i);
            n.soa_answered(&zone(), target(), id, Some(served), now);
        } else {
            n.handle_timeout(now);
        }
        for (kind, serial, id) in sent(&mut n) {
            match kind {
                "ask" => {
                    asked.push(now);
                    flight.push((now + ms(60), id, serves(now + ms(30))));
                }
                "notify" => told = Some((now, serial)),
                _ => {}
            }
        }
    }
    let (at, serial) = told.expect("serial 2 sent");
    assert_eq!(serial, 2);
    // Seen at about 80 + 60 ms, settled as long again: well before the
    // blind hold.
    assert!(at < acked + ms(400), "serial 2 held {:?}", at - acked);
    for w in asked.windows(2) {
        assert!(
            w[1] - w[0] >= ms(60),
            "questions closer than the round trip"
        );
    }
}

/// A secondary that never answers an SOA question holds newer serials for
/// at most the blind hold.
#[test]
fn blind_secondary_held_for_a_second_at_most() {
    let t0 = Instant::now();
    let mut n = NotifyOut::new(0);
    n.published(&zone(), &soa(1), &[target()], Duration::ZERO, t0);
    n.handle_timeout(t0);
    let id = sent(&mut n).iter().find(|a| a.0 == "notify").unwrap().2;
    n.notify_answered(target(), id, 0, t0);
    n.published(&zone(), &soa(2), &[target()], Duration::ZERO, t0);
    let mut last = t0;
    while let Some(t) = n.poll_timeout() {
        n.handle_timeout(t);
        last = t;
        if !notifies(&sent(&mut n)).is_empty() {
            break;
        }
    }
    assert_eq!(last, t0 + BLIND_HOLD);
}

/// An answer with another ID, or from another address, changes nothing;
/// an error RCODE ends the NOTIFY without pacing.
#[test]
fn answers_are_matched() {
    let t0 = Instant::now();
    let mut n = NotifyOut::new(0);
    n.published(&zone(), &soa(1), &[target()], Duration::ZERO, t0);
    n.handle_timeout(t0);
    let id = sent(&mut n).iter().find(|a| a.0 == "notify").unwrap().2;
    n.notify_answered(target(), id.wrapping_add(7), 0, t0);
    n.notify_answered("192.0.2.54:53".parse().unwrap(), id, 0, t0);
    assert!(n.awaiting_answers());
    n.notify_answered(target(), id, lode_wire::rcode::REFUSED, t0);
    let reports: Vec<Action> = std::iter::from_fn(|| n.poll_action()).collect();
    assert!(matches!(
        reports.as_slice(),
        [Action::Report(Report::Refused { serial: 1, .. })]
    ));
    assert!(!n.awaiting_answers());
    assert_eq!(n.poll_timeout(), None);
}

/// Drives `n` until it sends a NOTIFY, answering every SOA question with
/// `served`; returns when and which serial (None: none before `until`).
fn next_notify(n: &mut NotifyOut, served: u32, until: Instant) -> Option<(Instant, u32, u16)> {
    while let Some(t) = n.poll_timeout().filter(|&t| t <= until) {
        n.handle_timeout(t);
        for (kind, serial, id) in sent(n) {
            match kind {
                "ask" => n.soa_answered(&zone(), target(), id, Some(served), t),
                "notify" => return Some((t, serial, id)),
                _ => {}
            }
        }
    }
    None
}

/// A secondary that acknowledged a NOTIFY and does not take it within four
/// times as long as it took to take the last one (100 ms at least) is told
/// again — the same serial when nothing newer waits, twice at most — or
/// the newer serial that waits is sent then (not after 5 s).
#[test]
fn a_stalled_secondary_is_told_again() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let mut n = NotifyOut::new(0);
    // Serial 1 taken 40 ms after its acknowledgement: its pace.
    n.published(&zone(), &soa(1), &[target()], Duration::ZERO, t0);
    let (t, _, id) = next_notify(&mut n, 0, t0 + ms(1)).unwrap();
    n.notify_answered(target(), id, 0, t);
    let taken = t + ms(40);
    while let Some(t) = n.poll_timeout().filter(|&t| t < taken) {
        n.handle_timeout(t);
        for (kind, _, id) in sent(&mut n) {
            if kind == "ask" {
                n.soa_answered(&zone(), target(), id, Some(0), t);
            }
        }
    }
    n.handle_timeout(taken);
    for (kind, _, id) in sent(&mut n) {
        if kind == "ask" {
            n.soa_answered(&zone(), target(), id, Some(1), taken);
        }
    }
    // Serial 2, acknowledged, never taken: told again 160 ms after.
    let t2 = taken + ms(200);
    n.published(&zone(), &soa(2), &[target()], Duration::ZERO, t2);
    let (t, serial, id) = next_notify(&mut n, 1, t2 + ms(1)).unwrap();
    assert_eq!((t, serial), (t2, 2));
    n.notify_answered(target(), id, 0, t2);
    let (again, serial, id) = next_notify(&mut n, 1, t2 + ms(1000)).unwrap();
    assert_eq!(serial, 2);
    // (Its pace: 40 ms, as the probes every 4 ms saw it.)
    let stall = again - t2;
    assert!(stall >= ms(160) && stall <= ms(180), "{stall:?}");
    n.notify_answered(target(), id, 0, again);
    let (third, serial, id) = next_notify(&mut n, 1, again + ms(1000)).unwrap();
    assert_eq!((third, serial), (again + stall, 2));
    n.notify_answered(target(), id, 0, third);
    // Twice at most: then it waits for the SOA refresh.
    assert_eq!(next_notify(&mut n, 1, third + ms(10_000)), None);

    // A newer serial waiting behind a stalled one goes at the stall, not
    // after CATCH_UP_LIMIT.
    let t3 = third + ms(20_000);
    n.published(&zone(), &soa(3), &[target()], Duration::ZERO, t3);
    let (t, serial, id) = next_notify(&mut n, 1, t3 + ms(1)).unwrap();
    assert_eq!((t, serial), (t3, 3));
    n.notify_answered(target(), id, 0, t3);
    n.published(&zone(), &soa(4), &[target()], Duration::ZERO, t3 + ms(10));
    let (t, serial, _) = next_notify(&mut n, 1, t3 + ms(1000)).unwrap();
    assert_eq!((t, serial), (t3 + stall, 4));
}
