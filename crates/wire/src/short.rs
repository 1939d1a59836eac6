//! Copies and compares of a few bytes without a call into the C library.
//!
//! A `copy_from_slice` of a length known only at run time is a call to
//! `memmove`; writing a message is mostly such copies of 1 to 40 bytes (a
//! label, a record header, a character string), where the call and its
//! dispatch cost more than the copy. Short lengths are moved here as one or
//! two fixed-size words (fixed-size copies compile to plain loads and stores),
//! overlapping when the length is not a word's.

/// Copies `src` into the start of `dst` (`dst` at least as long).
#[inline(always)]
pub fn copy(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    let dst = &mut dst[..n];
    match n {
        0 => {}
        1..=3 => {
            dst[0] = src[0];
            dst[n / 2] = src[n / 2];
            dst[n - 1] = src[n - 1];
        }
        4..=7 => {
            dst[..4].copy_from_slice(&src[..4]);
            dst[n - 4..].copy_from_slice(&src[n - 4..]);
        }
        8..=16 => {
            dst[..8].copy_from_slice(&src[..8]);
            dst[n - 8..].copy_from_slice(&src[n - 8..]);
        }
        17..=32 => {
            dst[..16].copy_from_slice(&src[..16]);
            dst[n - 16..].copy_from_slice(&src[n - 16..]);
        }
        _ => dst.copy_from_slice(src),
    }
}

/// The length of the common prefix of `a` and `b`, eight bytes a step.
#[inline]
pub fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().unwrap_or([0; 8]));
        let y = u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        if x != y {
            return i + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    #[test]
    fn common_prefix_of_every_split() {
        let a: Vec<u8> = (0..40).collect();
        for n in 0..=40 {
            for at in 0..=n {
                let mut b = a[..n].to_vec();
                if at < n {
                    b[at] ^= 0x80;
                }
                assert_eq!(
                    super::common_prefix(&a, &b),
                    at,
                    "length {n}, differing at {at}"
                );
                assert_eq!(super::common_prefix(&b, &a), at);
            }
        }
    }

    #[test]
    fn every_short_length_copies_exactly() {
        let src: Vec<u8> = (1..=80).collect();
        for n in 0..=80 {
            let mut dst = [0xEEu8; 90];
            super::copy(&mut dst, &src[..n]);
            assert_eq!(&dst[..n], &src[..n], "length {n}");
            assert!(dst[n..].iter().all(|&b| b == 0xEE), "past length {n}");
        }
    }
}
