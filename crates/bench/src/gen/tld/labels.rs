//! Second-level labels: a bijection from indexes to distinct LDH labels with
//! the lengths and characters of a large TLD's registrations.

use super::{hash, mix64};

/// Size of the index space labels are drawn from (a Feistel network on 32 bits).
const SPACE: u64 = 1 << 32;

/// Relative weights of second-level label lengths 4..=63 (assumed: a bell
/// peaking at 9–11 characters, 83 % within 6–15, a thin tail to 63).
const LENGTH_WEIGHTS: [(u8, u32); 22] = [
    (4, 20),
    (5, 100),
    (6, 350),
    (7, 650),
    (8, 950),
    (9, 1100),
    (10, 1150),
    (11, 1100),
    (12, 1000),
    (13, 850),
    (14, 700),
    (15, 550),
    (16, 420),
    (17, 320),
    (18, 240),
    (19, 170),
    (20, 120),
    (21, 60),
    (22, 50),
    (23, 40),
    (24, 30),
    (25, 20),
];

/// Weight of each length 26..=30, 31..=40 and 41..=63 (the thin tail).
const TAIL_WEIGHTS: [(u8, u8, u32); 3] = [(26, 30, 10), (31, 40, 2), (41, 63, 1)];

/// Per-mille of labels (of a length that allows them) with trailing digits, one
/// hyphen, or the `xn--` form of an IDN (assumed); the rest are letters only.
const DIGITS_PER_MILLE: u128 = 70;
const HYPHEN_PER_MILLE: u128 = 80;
const IDN_PER_MILLE: u128 = 30;
/// Shortest IDN label (`xn--` and four characters).
const IDN_MIN_LEN: u8 = 8;

/// Characters a label is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelKind {
    /// Letters only (`examplesite`).
    Letters,
    /// Letters then one to three digits (`shop24`).
    Digits,
    /// Letters with one hyphen inside (`best-deals`).
    Hyphen,
    /// An IDN's ASCII form, `xn--` and letters and digits (`xn--bcher4kva`).
    Idn,
}

/// The labels of one length and kind: indexes `start..start + size` of the space.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    start: u64,
    size: u64,
    len: u8,
    kind: LabelKind,
}

/// A bijection from indexes to distinct LDH labels of realistic shapes.
///
/// An index goes through a keyed Feistel permutation of 32 bits (walking the
/// cycle until it lands below the number of labels defined), then picks a
/// bucket of one length and kind by where it falls, and is written in that
/// bucket's characters: the rank within the bucket is recoverable from the
/// label, so two indexes never give the same label.
#[derive(Debug, Clone)]
pub struct LabelSpace {
    keys: [u64; 6],
    buckets: Vec<Bucket>,
    total: u64,
}

impl LabelSpace {
    /// The space keyed by `key`.
    pub fn new(key: u64) -> LabelSpace {
        let mut keys = [0u64; 6];
        for (r, k) in keys.iter_mut().enumerate() {
            *k = hash(key, r as u64, 0x4C41_4245_4C53);
        }
        let mut weights: Vec<(u8, u32)> = LENGTH_WEIGHTS.to_vec();
        for (lo, hi, w) in TAIL_WEIGHTS {
            weights.extend((lo..=hi).map(|l| (l, w)));
        }
        let sum: u128 = weights.iter().map(|&(_, w)| u128::from(w)).sum();
        let mut buckets = Vec::new();
        let mut start = 0u64;
        for (len, w) in weights {
            let share = u128::from(SPACE) * u128::from(w) / sum;
            let idn = if len >= IDN_MIN_LEN { IDN_PER_MILLE } else { 0 };
            let letters = 1000 - DIGITS_PER_MILLE - HYPHEN_PER_MILLE - idn;
            for (kind, per_mille) in [
                (LabelKind::Letters, letters),
                (LabelKind::Digits, DIGITS_PER_MILLE),
                (LabelKind::Hyphen, HYPHEN_PER_MILLE),
                (LabelKind::Idn, idn),
            ] {
                let want = share * per_mille / 1000;
                let size = want.min(capacity(len, kind)) as u64;
                if size > 0 {
                    buckets.push(Bucket {
                        start,
                        size,
                        len,
                        kind,
                    });
                    start += size;
                }
            }
        }
        LabelSpace {
            keys,
            buckets,
            total: start,
        }
    }

    /// Number of distinct labels (indexes below it are valid).
    pub fn len(&self) -> u64 {
        self.total
    }

    /// Always false: the space holds billions of labels.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The keyed permutation of 32 bits.
    #[inline]
    fn permute(&self, x: u32) -> u32 {
        let (mut l, mut r) = ((x >> 16) as u16, x as u16);
        for &k in &self.keys {
            let f = mix64(u64::from(r) ^ k) as u16;
            (l, r) = (r, l ^ f);
        }
        (u32::from(l) << 16) | u32::from(r)
    }

    /// Writes label `i` (`i < len()`) into `out`; returns its length and kind.
    pub fn label(&self, i: u64, out: &mut [u8; 63]) -> (usize, LabelKind) {
        // Cycle walking: a permutation of 0..2^32 restricted to 0..total is a
        // permutation of 0..total (i < total, so the walk returns below total).
        let mut j = self.permute(i as u32);
        while u64::from(j) >= self.total {
            j = self.permute(j);
        }
        let j = u64::from(j);
        let b = self.buckets[self.buckets.partition_point(|b| b.start + b.size <= j)];
        let r = j - b.start;
        let len = usize::from(b.len);
        let mut radix = [0u8; 63];
        let (variant, slots, size) = match b.kind {
            LabelKind::Letters => (0, 1, b.size),
            LabelKind::Digits => {
                let d = (len - 1).min(3) as u64;
                (1 + r % d, d, b.size.div_ceil(d))
            }
            LabelKind::Hyphen => {
                let h = len as u64 - 2;
                (1 + r % h, h, b.size.div_ceil(h))
            }
            LabelKind::Idn => (0, 1, b.size),
        };
        let rank = r / slots;
        match b.kind {
            LabelKind::Letters => radix[..len].fill(26),
            LabelKind::Digits => {
                let d = variant as usize;
                radix[..len - d].fill(26);
                radix[len - d..len].fill(10);
            }
            LabelKind::Hyphen => {
                radix[..len].fill(26);
                radix[variant as usize] = 0;
                out[variant as usize] = b'-';
            }
            LabelKind::Idn => {
                out[..4].copy_from_slice(b"xn--");
                radix[4..len].fill(36);
            }
        }
        fill(
            &radix[..len],
            &mut out[..len],
            rank,
            size,
            hash(self.keys[0], j, 1),
        );
        (len, b.kind)
    }
}

/// Labels of `len` characters of `kind` that [`LabelSpace::label`] can write
/// distinctly (the smallest variant's count times the number of variants).
fn capacity(len: u8, kind: LabelKind) -> u128 {
    let l = u32::from(len);
    let p = |base: u128, e: u32| base.saturating_pow(e);
    match kind {
        LabelKind::Letters => p(26, l),
        LabelKind::Digits => {
            let d = (l - 1).min(3);
            u128::from(d).saturating_mul(p(26, l - d).saturating_mul(p(10, d)))
        }
        LabelKind::Hyphen => u128::from(l - 2).saturating_mul(p(26, l - 1)),
        LabelKind::Idn if len >= IDN_MIN_LEN => p(36, l - 4),
        LabelKind::Idn => 0,
    }
}

/// Writes `rank` (< `size`) into the positions of `out` whose radix is not 0,
/// injectively: the last positions hold `rank + size · x` in mixed radix, where
/// `x` (from `filler`) spreads the values over the whole range so that every
/// position looks random; the positions before them take letters from `filler`.
pub(super) fn fill(radix: &[u8], out: &mut [u8], rank: u64, size: u64, filler: u64) {
    // The tail: as many last positions as hold less than 2^62 values together
    // (always more than the 2^32 ranks of a bucket, or the whole label).
    let mut cap = 1u64;
    let mut t = radix.len();
    while t > 0 {
        let r = u64::from(radix[t - 1]);
        if r != 0 {
            if cap.saturating_mul(r) > 1 << 62 {
                break;
            }
            cap *= r;
        }
        t -= 1;
    }
    let spread = (cap / size.max(1)).max(1);
    let mut v = rank + size * (mix64(filler) % spread);
    for p in (t..radix.len()).rev() {
        let d = match radix[p] {
            0 => continue,
            26 => {
                let d = v % 26;
                v /= 26;
                d
            }
            10 => {
                let d = v % 10;
                v /= 10;
                d
            }
            _ => {
                let d = v % 36;
                v /= 36;
                d
            }
        };
        out[p] = symbol(radix[p], d as u8);
    }
    let mut h = filler;
    let mut left = 0;
    for p in 0..t {
        if radix[p] == 0 {
            continue;
        }
        if left == 0 {
            h = mix64(h.wrapping_add(0x9E37_79B9_7F4A_7C15));
            left = 12;
        }
        out[p] = symbol(radix[p], (h % u64::from(radix[p])) as u8);
        h /= u64::from(radix[p]);
        left -= 1;
    }
}

/// Digit `d` of `radix`: 10 is digits, 26 letters, 36 letters then digits.
#[inline]
fn symbol(radix: u8, d: u8) -> u8 {
    if radix == 10 {
        b'0' + d
    } else if d < 26 {
        b'a' + d
    } else {
        b'0' + d - 26
    }
}
