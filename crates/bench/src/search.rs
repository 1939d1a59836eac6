//! The binary search of RFC 8219 §9 (after RFC 2544): the highest rate at which a
//! trial passes, between a rate known to pass (or 0) and one assumed to fail.

/// One trial of a search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trial<T> {
    /// The rate tried.
    pub rate: u64,
    /// Whether it passed.
    pub passed: bool,
    /// What the trial measured.
    pub detail: T,
}

/// The result of one binary search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult<T> {
    /// The highest rate that passed (0 if none did).
    pub rate: u64,
    /// True if the upper bound itself passed (the real limit may be higher).
    pub hit_ceiling: bool,
    /// Every trial, in order.
    pub trials: Vec<Trial<T>>,
}

/// Searches `[low, high]` for the highest passing rate. `low` is assumed to pass
/// without a trial when it is 0; `high` is tried first. The search stops when the
/// interval is at most `resolution` wide (≥ 1). `trial(rate)` returns whether the
/// rate passed and what it measured; an error stops the search.
pub fn binary_search<T, E>(
    low: u64,
    high: u64,
    resolution: u64,
    mut trial: impl FnMut(u64) -> Result<(bool, T), E>,
) -> Result<SearchResult<T>, E> {
    let resolution = resolution.max(1);
    let mut trials = Vec::new();
    let (mut pass, mut fail) = (low, high.max(low));
    // Tries a rate and keeps the trial; whether it passed.
    let mut try_rate = |rate: u64| -> Result<bool, E> {
        let (passed, detail) = trial(rate)?;
        trials.push(Trial {
            rate,
            passed,
            detail,
        });
        Ok(passed)
    };
    if try_rate(fail)? {
        return Ok(SearchResult {
            rate: fail,
            hit_ceiling: true,
            trials,
        });
    }
    if pass > 0 && !try_rate(pass)? {
        fail = pass;
        pass = 0;
    }
    while fail - pass > resolution {
        let mid = pass + (fail - pass) / 2;
        if try_rate(mid)? {
            pass = mid;
        } else {
            fail = mid;
        }
    }
    Ok(SearchResult {
        rate: pass,
        hit_ceiling: false,
        trials,
    })
}

/// The most trials [`binary_search`] runs over `[low, high]` to
/// `resolution`: the upper bound, the lower one (when above 0), then one
/// per halving of the interval.
pub fn max_trials(low: u64, high: u64, resolution: u64) -> u64 {
    let resolution = resolution.max(1);
    let mut width = high.saturating_sub(low);
    let mut n = 1 + u64::from(low > 0);
    // After a failed lower bound the search restarts from 0 up to it.
    if low > 0 {
        width = width.max(low);
    }
    while width > resolution {
        width -= width / 2;
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_trials_bounds_every_search() {
        for (low, high, res) in [
            (0u64, 100_000u64, 10u64),
            (500, 200_000, 200),
            (0, 10, 10),
            (7, 7, 1),
        ] {
            let bound = max_trials(low, high, res);
            for limit in [0u64, 1, 5, 499, 501, 1_234, 99_999, 150_000, 250_000] {
                let r = search(limit, low, high, res);
                assert!(
                    r.trials.len() as u64 <= bound,
                    "[{low}, {high}] by {res}, limit {limit}: {} trials > {bound}",
                    r.trials.len()
                );
            }
        }
        assert_eq!(max_trials(0, 100_000, 100_000), 1);
    }

    fn search(limit: u64, low: u64, high: u64, res: u64) -> SearchResult<()> {
        let r: Result<_, ()> = binary_search(low, high, res, |rate| Ok((rate <= limit, ())));
        r.expect("no error")
    }

    #[test]
    fn finds_the_limit_within_resolution() {
        for limit in [1u64, 999, 12_345, 49_999, 77_777] {
            let r = search(limit, 0, 100_000, 10);
            assert!(
                r.rate <= limit,
                "{limit}: {} passes only if ≤ limit",
                r.rate
            );
            assert!(limit - r.rate <= 10, "{limit}: {} too far", r.rate);
            assert!(!r.hit_ceiling);
            assert!(
                r.trials.len() <= 2 + 14,
                "{limit}: {} trials",
                r.trials.len()
            );
            assert!(r.trials.iter().all(|t| t.passed == (t.rate <= limit)));
        }
        let r = search(12_345, 0, 100_000, 1);
        assert_eq!(r.rate, 12_345);
    }

    #[test]
    fn ceiling_and_floor() {
        let r = search(200_000, 0, 100_000, 10);
        assert!(r.hit_ceiling);
        assert_eq!((r.rate, r.trials.len()), (100_000, 1));
        let r = search(0, 0, 100_000, 10);
        assert!(r.rate <= 10);
        // A lower bound that fails is not trusted.
        let r = search(500, 1000, 100_000, 1);
        assert_eq!(r.rate, 500);
    }

    #[test]
    fn errors_stop_the_search() {
        let mut calls = 0;
        let r: Result<SearchResult<()>, &str> = binary_search(0, 1000, 1, |rate| {
            calls += 1;
            if rate < 1000 {
                Err("broken")
            } else {
                Ok((false, ()))
            }
        });
        assert_eq!(r, Err("broken"));
        assert_eq!(calls, 2);
    }
}
