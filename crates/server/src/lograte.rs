//! Log lines about refused requests, rate-limited: a flood of bad requests
//! must not become a flood of log lines (nor cost the transports a write
//! each). At most [`PER_SECOND`] lines a second; the rest are counted and
//! the count is logged when the next second's first line is. A server
//! has one limit for the lines about refused requests (UPDATE, transfers,
//! NOTIFY, signed queries), made with its query policy (`Guard`) and
//! shared with the admission of updates and their writers.

use std::sync::atomic::{AtomicU64, Ordering};

/// Lines a second.
pub(crate) const PER_SECOND: u64 = 20;

/// One rate limit: the current second and the lines logged in it, and how
/// many were held back (the default: nothing logged yet).
#[derive(Debug, Default)]
pub(crate) struct LogLimit {
    /// Unix second << 20 | lines logged in it.
    state: AtomicU64,
    held_back: AtomicU64,
}

impl LogLimit {
    /// True when a line may be logged now (at `now`, Unix seconds). The first
    /// line of a second also reports the lines held back before it.
    pub(crate) fn allow(&self, now: u64) -> bool {
        loop {
            let cur = self.state.load(Ordering::Relaxed);
            let (second, count) = (cur >> 20, cur & 0xF_FFFF);
            if second != now {
                let next = (now << 20) | 1;
                if self
                    .state
                    .compare_exchange(cur, next, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
                {
                    continue;
                }
                let held = self.held_back.swap(0, Ordering::Relaxed);
                if held > 0 {
                    tracing::info!("{held} more refused requests were not logged (at most {PER_SECOND} lines a second)");
                }
                return true;
            }
            if count >= PER_SECOND {
                self.held_back.fetch_add(1, Ordering::Relaxed);
                return false;
            }
            if self
                .state
                .compare_exchange(cur, cur + 1, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_the_limit_a_second_then_again() {
        let l = LogLimit::default();
        let allowed = (0..100).filter(|_| l.allow(1000)).count() as u64;
        assert_eq!(allowed, PER_SECOND);
        assert_eq!(l.held_back.load(Ordering::Relaxed), 100 - PER_SECOND);
        assert!(l.allow(1001), "a new second");
        assert_eq!(l.held_back.load(Ordering::Relaxed), 0, "reported and reset");
    }
}
