//! Summaries of repeated measurements as RFC 8219 asks: median, 1st and 99th
//! percentile, and dispersion = (p99 − p1) / median (Lencse, equation 1).

/// The nearest-rank percentile `p` (0 < p ≤ 100) of sorted samples: the value at
/// rank ⌈p·n/100⌉. With fewer than 100 samples, p1 is the minimum and p99 the
/// maximum, as in Lencse's study. `None` if there are no samples.
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

/// Sub-buckets per power of two in [`Histogram`] (relative error below 1/64).
const SUB: u64 = 64;
/// Buckets needed for values up to 2^32.
const BUCKETS: usize = (SUB + (32 - 6) * SUB) as usize;

/// A log-linear histogram of latencies in microseconds (exact below 64, then 64
/// buckets per power of two): fixed size, nothing allocated per value.
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Box<[u64]>,
    total: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            total: 0,
        }
    }
}

impl Histogram {
    /// Bucket of a value (values of 2^32 and more go to the last bucket).
    fn bucket(v: u64) -> usize {
        let v = v.min(u64::from(u32::MAX));
        if v < SUB {
            return v as usize;
        }
        let exp = 63 - u64::from(v.leading_zeros());
        let sub = (v >> (exp - 6)) & (SUB - 1);
        (SUB + (exp - 6) * SUB + sub) as usize
    }

    /// Smallest value of a bucket.
    fn floor(b: usize) -> u64 {
        let b = b as u64;
        if b < SUB {
            return b;
        }
        let exp = (b - SUB) / SUB + 6;
        (SUB + (b - SUB) % SUB) << (exp - 6)
    }

    /// Counts one value.
    pub fn record(&mut self, v: u64) {
        self.counts[Self::bucket(v)] += 1;
        self.total += 1;
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.total += other.total;
    }

    /// Number of values counted.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The nearest-rank percentile `p` (lower edge of its bucket); `None` if empty.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        if self.total == 0 {
            return None;
        }
        let rank = ((p / 100.0) * self.total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(Self::floor(b));
            }
        }
        Some(Self::floor(BUCKETS - 1))
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
        // 20 results: p1 is the minimum, p99 the maximum (Lencse §IV).
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

    #[test]
    fn histogram_percentiles() {
        let mut h = Histogram::default();
        assert_eq!(h.percentile(50.0), None);
        for v in 1..=10_000u64 {
            h.record(v);
        }
        assert_eq!(h.count(), 10_000);
        for (p, exact) in [(50.0, 5_000.0), (99.0, 9_900.0), (100.0, 10_000.0)] {
            let got = h.percentile(p).expect("values") as f64;
            assert!(
                got <= exact && got >= exact * (1.0 - 1.0 / 64.0),
                "p{p}: {got}"
            );
        }
        let mut small = Histogram::default();
        for v in [3u64, 1, 2, 60] {
            small.record(v);
        }
        assert_eq!(small.percentile(50.0), Some(2), "exact below 64");
        assert_eq!(small.percentile(100.0), Some(60));
        small.merge(&h);
        assert_eq!(small.count(), 10_004);
        let mut big = Histogram::default();
        big.record(u64::MAX);
        assert!(big.percentile(50.0).expect("one value") >= 1 << 31);
        // Bucket edges are monotonic and each value falls in the bucket whose floor is ≤ it.
        for v in [64u64, 65, 127, 128, 1000, 123_456, 250_000] {
            let b = Histogram::bucket(v);
            assert!(
                Histogram::floor(b) <= v && Histogram::floor(b + 1) > v,
                "{v}"
            );
        }
    }
}
