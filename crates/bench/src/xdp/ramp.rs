//! The peak search: offered rates raised step by step until the answers/s
//! stop growing, so "answers/s at saturation" is the most a server answers
//! at any offered rate — not what it answers under a flood, where some
//! servers collapse (the flood is measured apart, as overload).
//!
//! ```text
//!  coarse: start, 2×, 4×, … while each step lifts the best answers/s by ≥ 5 %
//!  fine:   from the coarse rate below the best one, × 1.15, × 1.15², … up to the next
//!          coarse rate, until two fine steps in a row (the last past the best coarse
//!          rate) add < 1 % to the best
//!  always: over when the loader sends < 90 % of what it was asked, or at MAX_STEPS
//! ```
//!
//! The coarse steps also bound the capacity (the highest rate with ≥ 99 %
//! answered) for the bisection of the overload runs. The decisions are a
//! pure function of the steps so far ([`next_offer`]), tested against model
//! servers below.

use super::load::Outcome;

/// One offered rate and what came of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// Offered queries per second.
    pub offered: u64,
    /// What the loader reported.
    pub outcome: Outcome,
}

/// Share answered that counts as "all" (the capacity's criterion).
pub const ANSWERED: f64 = 0.99;
/// Growth of the fine steps.
pub const FINE: f64 = 1.15;
/// At most this many steps per search.
pub const MAX_STEPS: usize = 16;

impl Step {
    /// Whether ≥ 99 % of what was sent was answered.
    pub fn all_answered(&self) -> bool {
        self.outcome.answers as f64 >= ANSWERED * self.outcome.sent as f64
    }
}

/// The rate to offer next, or None when the search is over.
pub fn next_offer(steps: &[Step], start: u64) -> Option<u64> {
    let Some(last) = steps.last() else {
        return Some(start.max(1));
    };
    if steps.len() >= MAX_STEPS {
        return None;
    }
    // The loader could not send what was asked: nothing above can be seen.
    if last.outcome.sent_per_sec() < 0.9 * last.offered as f64 {
        return None;
    }
    let answers = |s: &Step| s.outcome.answers_per_sec();
    // The coarse phase ends at the first step that did not grow the best by 5 %.
    let Some(end) =
        (1..steps.len()).find(|&i| answers(&steps[i]) < 1.05 * peak(&steps[..i]).unwrap_or(0.0))
    else {
        return Some(last.offered.saturating_mul(2));
    };
    let coarse = &steps[..=end];
    let best = (0..coarse.len()).reduce(|a, b| {
        if answers(&coarse[b]) > answers(&coarse[a]) {
            b
        } else {
            a
        }
    })?;
    let fine = &steps[end + 1..];
    // Over once two fine steps in a row, the last past the best coarse
    // rate, lifted the best by under 1 %.
    if let [.., x, y] = fine {
        let before = peak(&steps[..steps.len() - 2]).unwrap_or(0.0);
        let flat = answers(x) < 1.01 * before && answers(y) < 1.01 * before;
        if flat && y.offered > coarse[best].offered {
            return None;
        }
    }
    // From the coarse rate below the best (the peak may lie on either side
    // of it), up to the next coarse rate tried above it; rates within 5 % of
    // one tried already are skipped.
    let below = if best > 0 {
        coarse[best - 1].offered
    } else {
        coarse[best].offered / 2
    };
    let mut next = fine.iter().map(|s| s.offered).max().unwrap_or(below);
    loop {
        next = ((next as f64 * FINE) as u64).max(next + 1);
        let near = |r: u64| (next as f64 - r as f64).abs() < 0.05 * r as f64;
        if !steps.iter().any(|s| near(s.offered)) {
            break;
        }
    }
    let ceiling = coarse
        .iter()
        .map(|s| s.offered)
        .filter(|&r| r > coarse[best].offered)
        .min();
    match ceiling {
        Some(c) if next as f64 >= 0.95 * c as f64 => None,
        _ => Some(next),
    }
}

/// The most answers/s of a search.
pub fn peak(steps: &[Step]) -> Option<f64> {
    steps
        .iter()
        .map(|s| s.outcome.answers_per_sec())
        .reduce(f64::max)
}

/// The highest offered rate that was all answered (the capacity's lower
/// bound), and the lowest above it that was not (its upper bound).
pub fn capacity_bounds(steps: &[Step]) -> (Option<u64>, Option<u64>) {
    let lo = steps
        .iter()
        .filter(|s| s.all_answered())
        .map(|s| s.offered)
        .max();
    let hi = steps
        .iter()
        .filter(|s| !s.all_answered() && lo.is_none_or(|lo| s.offered > lo))
        .map(|s| s.offered)
        .min();
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search against `server` (offered → (sent/s, answers/s)).
    fn search(start: u64, server: impl Fn(u64) -> (u64, u64)) -> Vec<Step> {
        let mut steps = Vec::new();
        while let Some(r) = next_offer(&steps, start) {
            let (sent, answers) = server(r);
            steps.push(Step {
                offered: r,
                outcome: Outcome {
                    sent,
                    answers,
                    secs: 1.0,
                },
            });
            assert!(steps.len() <= MAX_STEPS, "the search ends");
        }
        steps
    }

    #[test]
    fn a_server_that_holds_its_capacity_is_found_at_it() {
        // Answers min(offered, 300k); the loader sends up to 2M.
        let steps = search(20_000, |r| (r.min(2_000_000), r.min(300_000)));
        let p = peak(&steps).unwrap();
        assert!((300_000.0 * 0.99..=300_000.0).contains(&p), "{p} {steps:?}");
        let (lo, hi) = capacity_bounds(&steps);
        let (lo, hi) = (lo.unwrap(), hi.unwrap());
        assert!(lo <= 300_000 && hi > 300_000 / 99 * 100, "{lo} {hi}");
        assert!(hi as f64 <= lo as f64 * 2.0 + 1.0);
        assert!(steps.len() <= 12, "{} steps", steps.len());
    }

    #[test]
    fn a_server_that_collapses_under_a_flood_keeps_its_peak() {
        // 300k answered up to 400k offered, then fewer and fewer.
        let steps = search(20_000, |r| {
            let a = if r <= 400_000 {
                r.min(300_000)
            } else {
                300_000 * 400_000 / r
            };
            (r.min(2_000_000), a)
        });
        let p = peak(&steps).unwrap();
        assert!(p >= 290_000.0, "{p} {steps:?}");
        // It stops soon after the peak, not at the loader's ceiling.
        assert!(steps.last().unwrap().offered < 1_000_000, "{steps:?}");
    }

    #[test]
    fn the_loaders_ceiling_ends_the_search() {
        // Everything answered, but the loader sends at most 150k/s.
        let steps = search(20_000, |r| (r.min(150_000), r.min(150_000)));
        assert!(steps.last().unwrap().offered >= 150_000);
        assert_eq!(peak(&steps), Some(150_000.0));
        let (lo, hi) = capacity_bounds(&steps);
        assert!(lo.is_some() && hi.is_none());
    }

    #[test]
    fn a_server_that_loses_from_the_start_has_no_capacity_but_a_peak() {
        // Half of every rate answered, up to the loader's 2M/s.
        let steps = search(20_000, |r| (r.min(2_000_000), r.min(2_000_000) / 2));
        assert_eq!(capacity_bounds(&steps).0, None);
        assert_eq!(peak(&steps), Some(1_000_000.0));
    }

    #[test]
    fn a_peak_between_two_coarse_rates_is_climbed_to() {
        // Answers grow up to 250k offered (all answered), then fall steeply:
        // 160k and 320k offered both answer 160k; the peak is between.
        let steps = search(20_000, |r| {
            let a = if r <= 250_000 {
                r
            } else {
                (250_000.0 * (250_000.0 / r as f64).powi(3)) as u64
            };
            (r, a)
        });
        let p = peak(&steps).unwrap();
        assert!(p >= 200_000.0, "{p} {steps:?}");
        let (lo, hi) = capacity_bounds(&steps);
        assert!(
            lo.unwrap() >= 200_000 && hi.unwrap() <= 320_000,
            "{steps:?}"
        );
    }
}
