//! `answer()` never panics and never writes past its limit, whatever the
//! input: mutated copies of the golden queries and random packets (bounded
//! count, fixed seed), over UDP and TCP, with small and large buffers.

use std::path::Path;

mod common;
use common::load_zones;

use lode_engine::{answer, Settings, Transport};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn mutated_and_random_queries_never_panic() {
    let zones = load_zones();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden.txt"),
    )
    .unwrap();
    let seeds: Vec<Vec<u8>> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let h = l.split_whitespace().nth(1).unwrap();
            (0..h.len() / 2)
                .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap())
                .collect()
        })
        .collect();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut big = vec![0u8; 65535];
    let mut answered = 0usize;
    for round in 0..40_000 {
        let mut q = if round % 10 == 0 {
            let len = rng.below(300);
            (0..len).map(|_| rng.next() as u8).collect()
        } else {
            seeds[rng.below(seeds.len())].clone()
        };
        for _ in 0..1 + rng.below(4) {
            if q.is_empty() {
                break;
            }
            let i = rng.below(q.len());
            match rng.below(4) {
                0 => q[i] = rng.next() as u8,
                1 => q[i] ^= 1 << rng.below(8),
                2 => q.truncate(i),
                _ => q.insert(i, rng.next() as u8),
            }
        }
        let transport = if round % 2 == 0 {
            Transport::Udp
        } else {
            Transport::Tcp
        };
        let size = [12, 100, 512, 1232, 65535][rng.below(5)];
        let settings = Settings {
            max_udp_payload: [0, 512, 1232, 4096][rng.below(4)],
            nsid: (round % 3 == 0).then(|| b"ns-test".as_slice().into()),
            padding: round % 5 != 0,
            ..Settings::default()
        };
        let n = answer(&zones, &q, &mut big[..size], transport, &settings).len;
        assert!(n <= size);
        if n > 0 {
            answered += 1;
            assert!(n >= 12);
            assert_eq!(big[2] & 0x80, 0x80, "a response has QR set");
            assert_eq!(big[..2], q[..2], "the ID is echoed");
        }
    }
    assert!(answered > 10_000, "only {answered} answered");
}
