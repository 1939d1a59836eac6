//! The log lines of a zone's commits: a group is logged when it commits,
//! unless a line was written less than a second ago; then it is counted,
//! and the writer's next tick (or next commit after the second) writes the
//! sum, so the last updates before a quiet period are logged too.

use std::time::{Duration, Instant};

use lode_wire::Name;

/// Commits counted between two log lines.
#[derive(Debug, Default)]
pub(super) struct CommitLog {
    /// When the last line was written (none yet: the next commit is logged).
    last: Option<Instant>,
    /// The serial after the last commit counted.
    serial: u32,
    groups: usize,
    updates: usize,
    changed: usize,
    busy: Duration,
}

impl CommitLog {
    /// Counts a group of `updates` requests, `changed` of which changed the
    /// zone, that took `took` and left the zone at `serial`.
    pub(super) fn add(&mut self, updates: usize, changed: usize, took: Duration, serial: u32) {
        self.groups += 1;
        self.updates += updates;
        self.changed += changed;
        self.busy += took;
        self.serial = serial;
    }

    /// True when a second has passed since the last line.
    pub(super) fn due(&self) -> bool {
        self.last
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
    }

    /// When the counted commits are to be logged (none counted: never).
    pub(super) fn due_at(&self) -> Option<Instant> {
        (self.groups > 0).then(|| {
            self.last
                .map_or_else(Instant::now, |t| t + Duration::from_secs(1))
        })
    }

    /// Logs the commits counted since the last line (one group as itself,
    /// several as their sum) and starts counting afresh.
    pub(super) fn write(&mut self, origin: &Name) {
        let l = std::mem::replace(
            self,
            CommitLog {
                last: Some(Instant::now()),
                serial: self.serial,
                ..CommitLog::default()
            },
        );
        if l.groups == 0 {
            return;
        }
        let serial = l.serial;
        let ms = l.busy.as_secs_f64() * 1000.0 / l.groups as f64;
        if l.groups == 1 {
            tracing::info!(
                zone = %origin,
                serial,
                updates = l.updates,
                changed = l.changed,
                "zone {origin}: {} update{} committed ({} changed the zone), serial now {serial}, {ms:.1} ms",
                l.updates,
                if l.updates == 1 { "" } else { "s" },
                l.changed,
            );
        } else {
            tracing::info!(
                zone = %origin,
                serial,
                updates = l.updates,
                groups = l.groups,
                changed = l.changed,
                "zone {origin}: {} updates in {} groups ({} changed the zone), serial now {serial}, \
                 {ms:.1} ms per group on average",
                l.updates,
                l.groups,
                l.changed,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_counted_then_due_a_second_after_the_last_line() {
        let mut log = CommitLog::default();
        assert!(log.due(), "the first commit is logged at once");
        assert_eq!(log.due_at(), None, "nothing counted: no tick wanted");
        let origin: Name = "example.".parse().unwrap();
        log.add(1, 1, Duration::from_millis(2), 7);
        log.write(&origin);
        assert!(!log.due());
        assert_eq!(log.due_at(), None);
        log.add(3, 2, Duration::from_millis(3), 9);
        let at = log.due_at().expect("a summary is due");
        assert!(at > Instant::now() && at <= Instant::now() + Duration::from_secs(1));
        log.write(&origin);
        assert_eq!(log.due_at(), None);
        assert_eq!(log.serial, 9);
    }
}
