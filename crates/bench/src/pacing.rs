//! Constant-rate pacing: query `i` is due at `start + i / rate`. The sender asks
//! how many are due by now and sends them, so a late wake-up is caught up in one
//! batch instead of lowering the rate.

use std::time::Duration;

/// When each query of a constant-rate stream is due.
#[derive(Debug, Clone, Copy)]
pub struct Pacer {
    /// Queries per second (> 0).
    rate: f64,
    /// Total queries of the stream.
    total: u64,
}

impl Pacer {
    /// A stream of `total` queries at `rate` per second (a rate ≤ 0 is taken as 1).
    pub fn new(rate: f64, total: u64) -> Pacer {
        Pacer {
            rate: if rate > 0.0 { rate } else { 1.0 },
            total,
        }
    }

    /// How many queries are due `elapsed` after the start (query 0 is due at once).
    pub fn due(&self, elapsed: Duration) -> u64 {
        let n = (elapsed.as_secs_f64() * self.rate).floor() as u64 + 1;
        n.min(self.total)
    }

    /// When query `i` is due, after the start.
    pub fn at(&self, i: u64) -> Duration {
        Duration::from_secs_f64(i as f64 / self.rate)
    }

    /// The intended duration of the stream (when its last query is due).
    pub fn span(&self) -> Duration {
        self.at(self.total.saturating_sub(1))
    }

    /// How far behind schedule a stream that sent its last query at `finished` was,
    /// as a fraction of the intended duration (0 if on time or early).
    pub fn lateness(&self, finished: Duration) -> f64 {
        let span = self.span().as_secs_f64();
        let late = finished.as_secs_f64() - span;
        if late <= 0.0 || span <= 0.0 {
            0.0
        } else {
            late / span
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_counts_follow_the_rate() {
        let p = Pacer::new(1000.0, 10_000);
        assert_eq!(p.due(Duration::ZERO), 1);
        assert_eq!(p.due(Duration::from_micros(999)), 1);
        assert_eq!(p.due(Duration::from_millis(1)), 2);
        assert_eq!(p.due(Duration::from_millis(500)), 501);
        assert_eq!(
            p.due(Duration::from_secs(100)),
            10_000,
            "never more than the total"
        );
        assert_eq!(p.at(500), Duration::from_millis(500));
        assert_eq!(p.span(), Duration::from_secs_f64(9.999));
    }

    #[test]
    fn fractional_rates_keep_the_average() {
        let p = Pacer::new(333.3, u64::MAX);
        let due = p.due(Duration::from_secs(30));
        assert_eq!(due, 9_999 + 1);
        // Every query is due no earlier than its slot.
        for i in [1u64, 7, 1000, 9_999] {
            assert!(p.due(p.at(i)) >= i);
            assert!(p.due(p.at(i)) <= i + 1);
        }
    }

    #[test]
    fn lateness() {
        let p = Pacer::new(100.0, 101); // last query due at 1 s
        assert_eq!(p.lateness(Duration::from_millis(900)), 0.0);
        assert_eq!(p.lateness(Duration::from_secs(1)), 0.0);
        assert!((p.lateness(Duration::from_millis(1020)) - 0.02).abs() < 1e-9);
    }
}
