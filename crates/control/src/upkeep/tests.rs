use super::*;

fn zone(serial: u32, interval: Option<u64>) -> Zone {
    Zone {
        serial,
        file_interval: interval.map(Duration::from_secs),
        nodes: 100_000,
        ..Zone::default()
    }
}

/// The zone file: written an interval after the last write, not while the
/// file holds the published serial, never sooner than the last write took,
/// later after a failure, a moment later when the writes across zones
/// are all taken, and not while one runs.
#[test]
fn the_zone_file_is_written_by_its_interval_and_backs_off() {
    let t0 = Instant::now();
    let s = Duration::from_secs;
    let mut u = Upkeep::new(10, t0);
    assert_eq!(u.file_due(&zone(10, Some(60))), None, "the file holds it");
    assert_eq!(
        u.file_due(&zone(11, None)),
        None,
        "not written after changes"
    );
    let expired = Zone {
        expired: true,
        ..zone(11, Some(60))
    };
    assert_eq!(u.file_due(&expired), None, "an expired zone keeps its file");
    let z = zone(11, Some(60));
    assert_eq!(u.file_due(&z), Some(t0 + s(60)));
    assert!(!u.file_now(&z, t0 + s(59)) && u.file_now(&z, t0 + s(60)));
    // All writes taken: a moment later.
    u.file_not_started(true, t0 + s(60));
    assert_eq!(u.file_due(&z), Some(t0 + s(60) + FILE_WAIT));
    u.file_started();
    assert_eq!(u.file_due(&z), None, "one write at a time");
    assert_eq!(u.next_wake(&z, t0 + s(60)), Some(t0 + s(60) + POLL));
    // It took 90 s: the next waits as long, not the interval.
    u.file_done(t0 + s(150), s(90), Some(11));
    assert_eq!(u.file_due(&z), None);
    let z = zone(12, Some(60));
    assert_eq!(u.file_due(&z), Some(t0 + s(240)));
    // A failure: 30 s later whatever the interval (zonefile-sync = 0).
    let z0 = zone(12, Some(0));
    u.file_started();
    u.file_done(t0 + s(300), Duration::ZERO, None);
    assert_eq!(u.file_due(&z0), Some(t0 + s(300) + RETRY_AFTER));
    u.file_not_started(false, t0 + s(400));
    assert_eq!(u.file_due(&z0), Some(t0 + s(400) + RETRY_AFTER));
}

/// Compaction: a delta worth it, a journal worth flushing (and half way
/// when compacting anyway), a small zone's any delta once quiet; one at a time; none
/// within the retry time of a failure; a heap trim after a large one.
#[test]
fn compactions_start_when_worth_it_or_quiet_and_back_off() {
    let t0 = Instant::now();
    let s = Duration::from_secs;
    let mut u = Upkeep::new(1, t0);
    let small_delta = Zone {
        delta: 10,
        ..zone(1, None)
    };
    assert_eq!(u.compaction(&small_delta, false, t0), None);
    assert_eq!(u.next_wake(&small_delta, t0), None, "nothing to wait for");
    u.changed(t0);
    assert_eq!(u.next_wake(&small_delta, t0), Some(t0 + IDLE_COMPACTION));
    assert!(!u.idle_due(t0 + s(4)) && u.idle_due(t0 + s(5)));
    assert_eq!(
        u.compaction(&small_delta, true, t0 + s(5)),
        Some(Compact { flush: false })
    );
    let big = Zone {
        delta: 30_000,
        ..zone(1, None)
    };
    assert_eq!(
        u.compaction(&big, false, t0),
        Some(Compact { flush: false })
    );
    let half = Zone {
        flush_worth_half: true,
        ..big
    };
    assert_eq!(
        u.compaction(&half, false, t0),
        Some(Compact { flush: true })
    );
    let journal = Zone {
        flush_worth: true,
        ..zone(1, None)
    };
    assert_eq!(
        u.compaction(&journal, false, t0),
        Some(Compact { flush: true })
    );
    u.compaction_started();
    assert_eq!(u.compaction(&big, false, t0), None, "one at a time");
    assert_eq!(u.next_wake(&big, t0), Some(t0 + POLL), "its end polled");
    u.compaction_done(false, false, t0 + s(1));
    assert_eq!(
        u.compaction(&big, false, t0 + s(30)),
        None,
        "after a failure"
    );
    assert!(u.compaction(&big, false, t0 + s(31)).is_some());
    u.compaction_started();
    u.compaction_done(true, true, t0 + s(40));
    assert!(!u.trim_due(t0 + s(40)) && u.trim_due(t0 + s(41)));
    u.trimmed();
    assert!(!u.trim_due(t0 + s(50)));
    u.flush_failed(t0 + s(50));
    assert_eq!(u.compaction(&journal, false, t0 + s(60)), None);
}

/// Once quiet, a small zone is compacted whatever its delta; a large one
/// only when its delta is a share of it (a whole copy for a few changed
/// names would cost a core for minutes at 160 M delegations).
#[test]
fn a_large_quiet_zone_keeps_a_small_delta() {
    let t0 = Instant::now();
    let u = Upkeep::new(1, t0);
    let quiet = |delta, nodes| {
        let z = Zone {
            delta,
            nodes,
            ..zone(1, None)
        };
        u.compaction(&z, true, t0).is_some()
    };
    assert!(!quiet(0, 1000), "nothing to fold");
    assert!(quiet(1, 1000) && quiet(1, IDLE_ANY_DELTA));
    let large = 168_000_000;
    assert!(!quiet(7_498, large), "a burst of registry changes");
    // (A 32 M-name zone's 64th is under the bound on entries.)
    let mid = 32_000_000;
    assert!(!quiet(mid / IDLE_SHARE - 1, mid));
    assert!(quiet(mid / IDLE_SHARE, mid));
    assert!(!quiet(1, IDLE_ANY_DELTA + 1));
    // Not quiet: as before.
    let z = Zone {
        delta: 1 << 20,
        nodes: large,
        ..zone(1, None)
    };
    assert!(
        u.compaction(&z, false, t0).is_some(),
        "the bound on entries"
    );
}

#[test]
fn the_policies_as_measured() {
    let set = Some(100 << 20);
    assert!(!worth_flushing(false, 1 << 30, set, 1000));
    assert!(!worth_flushing(true, 10_000, set, 1 << 30));
    assert!(worth_flushing(true, 1 << 30, None, 1 << 30));
    assert!(worth_flushing(true, 100 << 20, set, 1 << 40));
    assert!(!worth_flushing(true, 100 << 20, None, 1 << 30));
    assert!(!worth_compacting(4095, 0));
    assert!(worth_compacting(4096, 16_384));
    assert!(!worth_compacting(4096, 16_388 * 4));
    assert!(worth_compacting(1 << 20, 1 << 30));
}

/// A signed zone's timers: a batch a second while signatures are due, at
/// the time the schedule gives otherwise; the key event when it falls due;
/// both in the writer's next wake.
#[test]
fn signatures_and_key_events_fall_due_when_the_schedule_says() {
    let t0 = Instant::now();
    let s = Duration::from_secs;
    let mut u = Upkeep::new(1, t0);
    let z = zone(1, None);
    assert_eq!(resign_time(None, 1000, t0), None);
    assert_eq!(resign_time(Some(900), 1000, t0), Some(t0 + RESIGN_EVERY));
    assert_eq!(resign_time(Some(1000), 1000, t0), Some(t0 + RESIGN_EVERY));
    assert_eq!(resign_time(Some(1600), 1000, t0), Some(t0 + s(600)));
    assert_eq!(instant_of(900, 1000, t0), t0);
    u.schedule_resign(resign_time(Some(1600), 1000, t0));
    u.schedule_key_event(Some(t0 + s(60)));
    assert_eq!(u.next_wake(&z, t0), Some(t0 + s(60)));
    assert!(u.key_event_due(t0 + s(60)) && !u.resign_due(t0 + s(60)));
    u.schedule_key_event(None);
    assert_eq!(u.next_wake(&z, t0), Some(t0 + s(600)));
    assert!(u.resign_due(t0 + s(600)));
    u.schedule_resign(None);
    assert_eq!(u.next_wake(&z, t0), None);
}

/// A frozen zone: no zone-file write, re-signing or key event, nor a wake
/// for them; thawed, those overdue are due at once. Compactions go on.
#[test]
fn a_frozen_zone_postpones_its_writes_and_signing_until_thawed() {
    let t0 = Instant::now();
    let s = Duration::from_secs;
    let mut u = Upkeep::new(10, t0);
    let z = Zone {
        delta: 1 << 20,
        ..zone(11, Some(60))
    };
    u.schedule_resign(Some(t0 + s(5)));
    u.schedule_key_event(Some(t0 + s(7)));
    u.set_frozen(true);
    assert!(u.frozen());
    let later = t0 + s(3600);
    assert_eq!(u.file_due(&z), None);
    assert!(!u.file_now(&z, later) && !u.resign_due(later) && !u.key_event_due(later));
    assert_eq!(u.next_wake(&z, later), None, "nothing to wake for");
    assert!(
        u.compaction(&z, false, later).is_some(),
        "compactions go on"
    );
    u.set_frozen(false);
    assert!(u.file_now(&z, later) && u.resign_due(later) && u.key_event_due(later));
    assert_eq!(u.next_wake(&z, later), Some(t0 + s(5)));
}
