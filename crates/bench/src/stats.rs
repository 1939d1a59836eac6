//! Summaries of repeated measurements as RFC 8219 asks: median, 1st and 99th
//! percentile, and dispersion = (p99 − p1) / median (seed 001, equation 1).

/// The nearest-rank percentile `p` (0 < p ≤ 100) of sorted samples: the value at
/// rank ⌈p·n/100⌉. With fewer than 100 samples, p1 is the minimum and p99 the
/// maximum, as in seed 001. `None` if there are no samples.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// The median: the middle value, or the mean of the two middle values.
pub fn median(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// Median, percentiles and dispersion of a series of results.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// The median.
    pub median: f64,
    /// 1st percentile.
    pub p1: f64,
    /// 99th percentile.
    pub p99: f64,
    /// (p99 − p1) / median, as a fraction (0.016 = 1.6 %); 0 if the median is 0.
    pub dispersion: f64,
}

impl Summary {
    /// Summarises samples (any order); `None` if there are none.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|v| !v.is_nan()).collect();
        sorted.sort_by(f64::total_cmp);
        let median = median(&sorted)?;
        let p1 = percentile(&sorted, 1.0)?;
        let p99 = percentile(&sorted, 99.0)?;
        let dispersion = if median > 0.0 {
            (p99 - p1) / median
        } else {
            0.0
        };
        Some(Summary {
            n: sorted.len(),
            median,
            p1,
            p99,
            dispersion,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_nearest_rank() {
        let v: Vec<f64> = (1..=200).map(f64::from).collect();
        assert_eq!(percentile(&v, 1.0), Some(2.0));
        assert_eq!(percentile(&v, 99.0), Some(198.0));
        assert_eq!(percentile(&v, 50.0), Some(100.0));
        assert_eq!(percentile(&v, 100.0), Some(200.0));
        assert_eq!(percentile(&v, 0.1), Some(1.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn twenty_results_like_the_paper() {
        // 20 results: p1 is the minimum, p99 the maximum (seed 001 §IV).
        let mut v: Vec<f64> = (0..20).map(|i| 19_000.0 + f64::from(i) * 40.0).collect();
        v.reverse();
        let s = Summary::of(&v).expect("samples");
        assert_eq!(s.n, 20);
        assert_eq!(s.p1, 19_000.0);
        assert_eq!(s.p99, 19_760.0);
        assert_eq!(s.median, (19_360.0 + 19_400.0) / 2.0);
        assert!((s.dispersion - 760.0 / 19_380.0).abs() < 1e-12);
    }

    #[test]
    fn small_series() {
        let s = Summary::of(&[5.0, 1.0, 3.0]).expect("samples");
        assert_eq!((s.median, s.p1, s.p99), (3.0, 1.0, 5.0));
        assert!((s.dispersion - 4.0 / 3.0).abs() < 1e-12);
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[0.0, 0.0]).map(|s| s.dispersion), Some(0.0));
    }
}
