use super::*;

fn name(s: &str) -> Name {
    s.parse().unwrap()
}

fn primary(n: u8) -> Option<SocketAddr> {
    Some(SocketAddr::from(([192, 0, 2, n], 53)))
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn current(refresh: u64, retry: u64, expire: u64) -> Outcome {
    Outcome::Current {
        refresh: secs(refresh),
        retry: secs(retry),
        expire: secs(expire),
    }
}

/// The refreshes it starts now, by zone name.
fn started(r: &mut Refresher) -> Vec<String> {
    let mut v = Vec::new();
    while let Some(a) = r.poll_action() {
        if let Action::Refresh { zone, .. } = a {
            v.push(zone.to_string());
        }
    }
    v
}

fn actions(r: &mut Refresher) -> Vec<Action> {
    std::iter::from_fn(|| r.poll_action()).collect()
}

#[test]
fn only_the_same_serial_is_nothing_to_do() {
    assert_eq!(notify_asks(7, 7), NotifyAsks::Nothing);
    assert_eq!(notify_asks(8, 7), NotifyAsks::Refresh);
    // Past the wrap (RFC 1982): 1 follows 4294967295.
    assert_eq!(notify_asks(1, u32::MAX), NotifyAsks::Refresh);
    assert_eq!(notify_asks(6, 7), NotifyAsks::Older);
    assert_eq!(notify_asks(u32::MAX, 1), NotifyAsks::Older);
    assert_eq!(notify_asks(0x8000_0007, 7), NotifyAsks::Older);
}

/// Refresh at the SOA refresh after a success, at the retry after a
/// failure; expiry at the SOA expire after the last success.
#[test]
fn timers_follow_the_soa() {
    let t0 = Instant::now();
    let z = name("example.com.");
    let mut r = Refresher::new();
    r.add(&z, Start::empty(primary(1), t0));
    assert_eq!(r.poll_timeout(), Some(t0));
    r.handle_timeout(t0);
    assert_eq!(started(&mut r), ["example.com."]);
    assert_eq!(r.poll_timeout(), None, "refreshing, no expiry yet");
    r.done(&z, current(100, 10, 1000), t0);
    assert!(actions(&mut r).contains(&Action::Timers {
        zone: z.clone(),
        next: t0 + secs(100),
        expire: Some(t0 + secs(1000)),
        last: Some(t0),
    }));
    assert_eq!(r.poll_timeout(), Some(t0 + secs(100)));
    r.handle_timeout(t0 + secs(100));
    assert_eq!(started(&mut r).len(), 1);
    // Failures from then on: every 10 s, until the expiry.
    let mut t = t0 + secs(100);
    let mut expired_at = None;
    for _ in 0..200 {
        r.done(&z, Outcome::Failed("no answer".into()), t);
        let next = r.poll_timeout().unwrap();
        r.handle_timeout(next);
        for a in actions(&mut r) {
            if a == (Action::Expire { zone: z.clone() }) {
                expired_at = Some(next);
            }
        }
        if expired_at.is_some() {
            break;
        }
        t = next;
    }
    assert_eq!(expired_at, Some(t0 + secs(1000)));
}

/// A NOTIFY of the serial served does nothing; of a newer one, refreshes
/// now; one that comes during a refresh makes another follow at once.
#[test]
fn notify_refreshes_now_or_after() {
    let t0 = Instant::now();
    let z = name("example.com.");
    let mut r = Refresher::new();
    r.add(
        &z,
        Start {
            next: t0 + secs(3600),
            axfr: false,
            ..Start::empty(primary(1), t0)
        },
    );
    r.notify(&z, Some(5), Some(5), t0);
    assert!(matches!(
        actions(&mut r).as_slice(),
        [Action::Report(Report::NotifyServed { serial: 5, .. })]
    ));
    assert_eq!(r.poll_timeout(), Some(t0 + secs(3600)));
    r.notify(&z, Some(6), Some(5), t0);
    r.handle_timeout(t0);
    assert_eq!(started(&mut r).len(), 1);
    let t1 = t0 + secs(1);
    r.notify(&z, Some(7), Some(5), t1);
    // Kept as due now at once: a restart before the refresh running ends
    // refreshes again (the NOTIFY is not sent again).
    assert!(actions(&mut r)
        .iter()
        .any(|a| matches!(a, Action::Timers { next, .. } if *next == t1)));
    r.handle_timeout(t1);
    assert!(
        started(&mut r).is_empty(),
        "one refresh of a zone at a time"
    );
    let t2 = t0 + secs(2);
    r.done(&z, current(3600, 600, 86400), t2);
    assert_eq!(r.poll_timeout(), Some(t2), "the one asked meanwhile");
    r.handle_timeout(t2);
    assert_eq!(started(&mut r).len(), 1);
    // An older serial is reported, and the primaries asked.
    r.done(&z, current(3600, 600, 86400), t2);
    actions(&mut r);
    r.notify(&z, Some(3), Some(5), t2);
    let a = actions(&mut r);
    assert!(matches!(
        a.as_slice(),
        [
            Action::Report(Report::NotifyOlder { .. }),
            Action::Timers { next, .. }
        ] if *next == t2
    ));
    r.handle_timeout(t2);
    assert_eq!(started(&mut r).len(), 1);
}

/// At most MAX_PER_PRIMARY refreshes against one primary, MAX_REFRESHES
/// in all; the others start as those end.
#[test]
fn refreshes_are_bounded() {
    let t0 = Instant::now();
    let mut r = Refresher::new();
    for i in 0..100 {
        let p = if i < 50 {
            primary(1)
        } else {
            primary(2 + (i % 10) as u8)
        };
        r.add(&name(&format!("z{i}.example.")), Start::empty(p, t0));
    }
    r.handle_timeout(t0);
    let first = started(&mut r);
    assert_eq!(first.len(), MAX_REFRESHES);
    let of_one = first
        .iter()
        .filter(|z| z[1..z.len() - 9].parse::<u32>().unwrap() < 50)
        .count();
    assert_eq!(of_one, MAX_PER_PRIMARY);
    assert_eq!(r.running(), MAX_REFRESHES);
    assert_eq!(
        r.poll_timeout(),
        None,
        "no room: waits for a refresh to end"
    );
    let mut all = first.clone();
    let mut t = t0;
    while all.len() < 100 {
        t += secs(1);
        let running: Vec<String> = all.iter().rev().take(r.running()).cloned().collect();
        for z in running {
            r.done(&name(&z), current(3600, 600, 86400), t);
        }
        actions(&mut r);
        r.handle_timeout(t);
        let more = started(&mut r);
        assert!(!more.is_empty());
        all.extend(more);
    }
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 100, "each zone once");
}

/// A zone removed while refreshing frees its slot; its outcome is ignored.
#[test]
fn removed_while_refreshing() {
    let t0 = Instant::now();
    let z = name("example.com.");
    let mut r = Refresher::new();
    r.add(
        &z,
        Start {
            expire: Some(t0 + secs(10)),
            ..Start::empty(primary(1), t0)
        },
    );
    r.handle_timeout(t0);
    assert_eq!(started(&mut r).len(), 1);
    r.remove(&z);
    assert_eq!(r.running(), 0);
    r.done(&z, current(1, 1, 1), t0);
    assert!(actions(&mut r).is_empty());
    // Its expiry is stale: nothing happens then.
    r.handle_timeout(t0 + secs(10));
    assert!(actions(&mut r).is_empty());
}

/// An expired zone keeps its expiry (a restart past it starts it expired)
/// and is expired once; a success serves it again and sets a new expiry.
#[test]
fn expired_once_until_refreshed() {
    let t0 = Instant::now();
    let z = name("example.com.");
    let mut r = Refresher::new();
    r.add(&z, Start::empty(primary(1), t0));
    r.handle_timeout(t0);
    r.done(&z, current(100, 10, 30), t0);
    actions(&mut r);
    let mut expiries = 0;
    let mut t = t0;
    while t < t0 + secs(60) {
        let next = r.poll_timeout().unwrap();
        r.handle_timeout(next);
        for a in actions(&mut r) {
            match a {
                Action::Expire { .. } => expiries += 1,
                Action::Refresh { .. } => r.done(&z, Outcome::Failed("down".into()), next),
                _ => {}
            }
        }
        for a in actions(&mut r) {
            if let Action::Timers { expire, .. } = a {
                assert_eq!(expire, Some(t0 + secs(30)), "kept past the expiry");
            }
        }
        t = next;
    }
    assert_eq!(expiries, 1);
    r.refresh(&z, false, t);
    r.handle_timeout(t);
    assert_eq!(started(&mut r).len(), 1);
    r.done(&z, current(100, 10, 30), t);
    let a = actions(&mut r);
    assert!(a.contains(&Action::Refreshed { zone: z.clone() }));
    assert!(a
        .iter()
        .any(|a| matches!(a, Action::Timers { expire: Some(e), .. } if *e == t + secs(30))));
}

/// 1,000 zones refreshed successfully again and again keep the expiry
/// heap bounded (stale entries do not pile up until the first expiry).
#[test]
fn expiries_stay_bounded() {
    let t0 = Instant::now();
    let mut r = Refresher::new();
    let zones: Vec<Name> = (0..1000).map(|i| name(&format!("z{i}.example."))).collect();
    for z in &zones {
        r.add(z, Start::empty(None, t0));
    }
    let mut t = t0;
    for _ in 0..20 {
        // Every zone refreshed this round (32 at a time).
        loop {
            r.handle_timeout(t);
            let started: Vec<Name> = actions(&mut r)
                .into_iter()
                .filter_map(|a| match a {
                    Action::Refresh { zone, .. } => Some(zone),
                    _ => None,
                })
                .collect();
            if started.is_empty() {
                break;
            }
            for zone in started {
                r.done(&zone, current(60, 10, 86400), t);
            }
        }
        t += secs(60);
    }
    assert!(
        r.expiries_held() <= 2 * 1000 + 1024,
        "{}",
        r.expiries_held()
    );
    // Still expire, each once, at its last success's expiry.
    r.handle_timeout(t + secs(86400));
    let expired = actions(&mut r)
        .iter()
        .filter(|a| matches!(a, Action::Expire { .. }))
        .count();
    assert_eq!(expired, 1000);
}

/// A frozen secondary: its timer and a NOTIFY start nothing (and leave no
/// wake-up behind), a command's refresh runs; thawed, the refresh that
/// fell due starts at once. It still expires. A reload's `add` keeps it
/// frozen.
#[test]
fn a_frozen_zone_is_refreshed_only_on_command_until_thawed() {
    let t0 = Instant::now();
    let z = name("example.com.");
    let mut r = Refresher::new();
    r.add(&z, Start::empty(primary(1), t0));
    r.handle_timeout(t0);
    assert_eq!(started(&mut r), ["example.com."]);
    r.done(&z, current(60, 10, 600), t0);
    actions(&mut r);
    assert!(r.set_frozen(&z, true));
    assert!(!r.set_frozen(&name("other."), true), "not a secondary");
    r.handle_timeout(t0 + secs(61));
    assert!(started(&mut r).is_empty(), "the timer waits");
    r.notify(&z, Some(9), Some(1), t0 + secs(62));
    r.handle_timeout(t0 + secs(62));
    assert!(started(&mut r).is_empty(), "a NOTIFY waits");
    assert_eq!(r.poll_timeout(), Some(t0 + secs(600)), "only the expiry");
    r.add(
        &z,
        Start {
            primary: primary(1),
            next: t0 + secs(63),
            expire: Some(t0 + secs(600)),
            last: Some(t0),
            axfr: false,
            retry: secs(10),
        },
    );
    r.handle_timeout(t0 + secs(63));
    assert!(started(&mut r).is_empty(), "still frozen after a reload");
    r.refresh(&z, false, t0 + secs(64));
    r.handle_timeout(t0 + secs(64));
    assert_eq!(
        started(&mut r),
        ["example.com."],
        "a command's refresh runs"
    );
    r.done(&z, Outcome::Failed("down".into()), t0 + secs(65));
    actions(&mut r);
    r.handle_timeout(t0 + secs(80));
    assert!(started(&mut r).is_empty(), "its retry waits");
    r.handle_timeout(t0 + secs(700));
    assert!(
        actions(&mut r).contains(&Action::Expire { zone: z.clone() }),
        "it still expires"
    );
    assert!(r.set_frozen(&z, false));
    assert_eq!(r.poll_timeout(), Some(t0 + secs(75)));
    r.handle_timeout(t0 + secs(701));
    assert_eq!(started(&mut r), ["example.com."], "thawed: due at once");
}

/// The transfer chosen: none when the primary serves ours or an older
/// serial, an IXFR from ours when it serves a newer one or refuses the SOA
/// query, an AXFR when asked or when we serve nothing; an IXFR that fails
/// falls back to an AXFR, an AXFR that fails to the next primary.
#[test]
fn the_transfer_follows_the_serials() {
    assert_eq!(first_step(false, Some(7), Some(7)), Step::UpToDate);
    assert_eq!(first_step(false, Some(7), Some(6)), Step::PrimaryOlder);
    assert_eq!(
        first_step(false, Some(7), Some(0x8000_0007)),
        Step::PrimaryOlder,
        "half the serial space away: not newer"
    );
    assert_eq!(
        first_step(false, Some(u32::MAX), Some(1)),
        Step::Transfer { axfr: false }
    );
    assert_eq!(
        first_step(false, Some(7), None),
        Step::Transfer { axfr: false }
    );
    assert_eq!(
        first_step(false, None, Some(7)),
        Step::Transfer { axfr: true }
    );
    assert_eq!(
        first_step(true, Some(7), Some(7)),
        Step::Transfer { axfr: true }
    );
    assert_eq!(
        after_failed_transfer(false),
        Some(Step::Transfer { axfr: true })
    );
    assert_eq!(after_failed_transfer(true), None);
}
