//! The bucket table: cache lines of eight 64-bit GCRA cells, one atomic word
//! per bucket, updated with a compare-and-swap.
//!
//! A cell is `tag (16 bits) | TAT (48 bits)`: the tag is 16 bits of the key's
//! hash not used to choose the line (0 = empty cell), the TAT the bucket's
//! "theoretical arrival time" (GCRA, ITU-T I.371) in units of 2⁻²⁰ ms, modulo
//! 2⁴⁸ (74 hours). An answer at `now` passes when `TAT − now ≤ τ` and moves
//! the TAT to `max(TAT, now) + T`, with `T = 1 s / rate` and
//! `τ = (burst − 1)·T`. A limited answer writes nothing.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Fractional bits of the time unit (2⁻²⁰ ms ≈ 0.95 ns).
pub(crate) const FRAC_BITS: u32 = 20;
/// Bits of a TAT.
const TIME_BITS: u32 = 48;
/// Mask of a TAT.
const TIME_MASK: u64 = (1 << TIME_BITS) - 1;
/// Cells per line (one 64-byte cache line).
pub(crate) const WAYS: usize = 8;
/// Compare-and-swap attempts before a check gives up and lets the answer
/// pass (only under heavy contention on one line).
const TRIES: usize = 4;

/// One cache line of cells.
#[repr(align(64))]
#[derive(Debug, Default)]
pub(crate) struct Line([AtomicU64; WAYS]);

/// The fixed bucket table and its GCRA parameters.
#[derive(Debug)]
pub(crate) struct Table {
    lines: Box<[Line]>,
    /// Emission interval T, in time units.
    interval: u64,
    /// Burst tolerance τ, in time units.
    tolerance: u64,
    /// A TAT further ahead of `now` than this is stale (it wrapped), not
    /// limited: τ + T plus one second of clock skew between workers.
    horizon: u64,
}

/// The largest `(burst + 1) · T` a table accepts, so that the horizon stays
/// far below half the time space.
pub(crate) const MAX_SPAN: u64 = 1 << (TIME_BITS - 2);

impl Table {
    /// A table of at least `cells` cells (rounded up to whole lines), for
    /// `rate` answers per second with bursts of `burst` (both ≥ 1, and
    /// `(burst + 1)·T ≤ MAX_SPAN`, checked by `Config`).
    pub(crate) fn new(cells: usize, rate: u32, burst: u32) -> Table {
        let nlines = cells.div_ceil(WAYS).max(1);
        let lines: Box<[Line]> = (0..nlines).map(|_| Line::default()).collect();
        let interval = interval_of(rate);
        let tolerance = interval * u64::from(burst.saturating_sub(1));
        let horizon = tolerance + interval + (1000 << FRAC_BITS);
        Table {
            lines,
            interval,
            tolerance,
            horizon,
        }
    }

    /// Bytes of the cell table.
    pub(crate) fn memory(&self) -> usize {
        std::mem::size_of_val(&*self.lines)
    }

    /// Number of lines.
    pub(crate) fn lines(&self) -> usize {
        self.lines.len()
    }

    /// How far (time units) the cell's TAT is ahead of `now`; 0 for an empty
    /// cell, a TAT in the past or a stale (wrapped) one.
    #[inline]
    fn ahead(&self, cell: u64, now: u64) -> u64 {
        if cell == 0 {
            return 0;
        }
        let d = (cell & TIME_MASK).wrapping_sub(now) & TIME_MASK;
        if d > self.horizon {
            0
        } else {
            d
        }
    }

    /// Takes one answer from the bucket of `hash` at `now_ms`: true when it
    /// passes, false when the bucket is over its rate.
    #[inline]
    pub(crate) fn take(&self, hash: u64, now_ms: u64) -> bool {
        let nlines = self.lines.len() as u64;
        // Lemire's multiply-shift: the high bits choose the line.
        let line = &self.lines[((u128::from(hash) * u128::from(nlines)) >> 64) as usize].0;
        let tag = match hash & 0xffff {
            0 => 1,
            t => t,
        } << TIME_BITS;
        let now = now_ms.wrapping_shl(FRAC_BITS) & TIME_MASK;

        for _ in 0..TRIES {
            let mut victim = 0;
            let mut victim_ahead = u64::MAX;
            let mut found = None;
            for (i, c) in line.iter().enumerate() {
                let w = c.load(Relaxed);
                if w & !TIME_MASK == tag {
                    found = Some((i, w));
                    break;
                }
                let a = self.ahead(w, now);
                if a < victim_ahead {
                    victim = i;
                    victim_ahead = a;
                }
            }
            let (i, old, ahead) = match found {
                Some((i, w)) => (i, w, self.ahead(w, now)),
                // A new bucket replaces the idlest cell (a flooding bucket,
                // far ahead, is the last to go); it starts full.
                None => (victim, line[victim].load(Relaxed), 0),
            };
            if found.is_some() && ahead > self.tolerance {
                return false;
            }
            let tat = (now + ahead + self.interval) & TIME_MASK;
            if line[i]
                .compare_exchange_weak(old, tag | tat, Relaxed, Relaxed)
                .is_ok()
            {
                return true;
            }
        }
        // Fail open: a check that loses every race sends its answer.
        true
    }
}

/// The emission interval of `rate` answers per second, in time units.
pub(crate) fn interval_of(rate: u32) -> u64 {
    ((1000u64 << FRAC_BITS) / u64::from(rate.max(1))).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_rate() {
        let t = Table::new(64, 10, 3);
        // A fresh bucket passes `burst` answers at once, then one per 100 ms.
        assert!(t.take(7 << 20 | 5, 1000));
        assert!(t.take(7 << 20 | 5, 1000));
        assert!(t.take(7 << 20 | 5, 1000));
        assert!(!t.take(7 << 20 | 5, 1000));
        assert!(!t.take(7 << 20 | 5, 1099));
        assert!(t.take(7 << 20 | 5, 1100));
        assert!(!t.take(7 << 20 | 5, 1100));
        // Another key in the same line is separate.
        assert!(t.take(7 << 20 | 6, 1100));
    }

    #[test]
    fn stale_cells_are_idle() {
        let t = Table::new(8, 1, 1);
        assert!(t.take(9, 0));
        assert!(!t.take(9, 999));
        assert!(t.take(9, 1000));
        assert!(!t.take(9, 1000));
        // Half the time space later (37 hours) the TAT looks far ahead: it
        // must be taken for stale, not limited.
        let wrap = 1u64 << (TIME_BITS - FRAC_BITS);
        assert!(t.take(9, 1000 + wrap / 2));
        assert!(!t.take(9, 1000 + wrap / 2));
        // Whole wraps later a TAT just ahead of `now` is read as live: the
        // known blind spot (odds horizon / 74 h for a cell idle that long).
        assert!(!t.take(9, 1500 + wrap / 2 + 3 * wrap));
    }

    #[test]
    fn new_key_evicts_the_idlest_cell() {
        let t = Table::new(8, 1, 1);
        // Fill the one line: key 1 is limited (ahead), keys 2..=8 idle.
        for k in 1..=8u64 {
            assert!(t.take(k, 0));
        }
        for k in 2..=8u64 {
            assert!(t.take(k, 5000));
        }
        assert!(!t.take(1, 500));
        // A ninth key at 6000 ms: keys 2..=8 are idle by then, key 1 is
        // still ahead (its TAT is 1000, past too) — all idle; the first
        // idle cell goes. Key 1 must stay limited if it is ahead.
        assert!(t.take(1, 6000));
        assert!(!t.take(1, 6000));
        assert!(t.take(9, 6000));
        assert!(!t.take(1, 6500), "the flooding bucket survived eviction");
    }
}
