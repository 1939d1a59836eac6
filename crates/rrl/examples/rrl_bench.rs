//! Microbenchmark of `Limiter::check`: ns per check on one and two threads.
//!
//! `nice -n 10 cargo run --release -p lode-rrl --example rrl_bench [ms per case]`
//!
//! Cases, each on 1 thread, then on 2 threads at once:
//! - `hash`: the keyed hash alone; its 2-thread figure shows whether both
//!   threads really had a core (on a shared machine they often do not);
//! - `pass`: 65 536 sources per thread in distinct /24s, all under the rate:
//!   the passing path (one CAS), mostly cache misses on the 8 MiB table;
//! - `hot`: 256 sources per thread under the rate: the passing path in cache;
//! - `flood`: one source over the rate (the same on both threads): the
//!   limited path (a read of the cell, a thread-striped counter);
//! - `churn`: random /24s, far more than the 16 384 cells: every check evicts.
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use lode_rrl::{Class, Config, Limiter};

const NAME: &[u8] = b"\x03www\x07example\x03com\x00";

#[derive(Clone, Copy)]
enum Case {
    /// The keyed hash alone (SipHash-1-3 of the key, as `check` does).
    Hash,
    Pass,
    /// 256 sources per thread, all under the rate: the cells stay in cache.
    PassHot,
    Flood,
    Churn,
}

/// Runs checks for `dur`, returns ns per check. The time passed is real
/// milliseconds since `origin`, read once per 4096 checks (as a worker
/// would read a coarse clock once per batch of datagrams).
fn run(l: &Limiter, case: Case, thread: u32, origin: Instant, dur: Duration) -> f64 {
    let start = Instant::now();
    let mut n: u64 = 0;
    let mut x: u32 = 0x9e37_79b9 ^ thread;
    let hasher = RandomState::new();
    while start.elapsed() < dur {
        let now = origin.elapsed().as_millis() as u64;
        for _ in 0..4096 {
            let src = match case {
                Case::Pass => {
                    // Each thread its own 65 536 /24s (10.t.x.0/24 …).
                    x = x.wrapping_add(1);
                    IpAddr::V4(Ipv4Addr::from(thread << 24 | (x & 0xffff) << 8))
                }
                Case::PassHot => {
                    x = x.wrapping_add(1);
                    IpAddr::V4(Ipv4Addr::from(thread << 24 | (x & 0xff) << 8))
                }
                Case::Hash => {
                    x = x.wrapping_add(1);
                    let mut h = hasher.build_hasher();
                    h.write_u8(1);
                    h.write_u8(0);
                    h.write_u128(u128::from(x & 0xffff_ff00));
                    h.write(NAME);
                    n += 1;
                    black_box(h.finish());
                    continue;
                }
                Case::Flood => IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
                Case::Churn => {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    IpAddr::V4(Ipv4Addr::from(x << 8))
                }
            };
            black_box(l.check(black_box(src), Class::Positive, NAME, now));
            n += 1;
        }
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

fn main() {
    let ms: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(300);
    let dur = Duration::from_millis(ms);
    let origin = Instant::now();
    for (name, case, cells, rate) in [
        ("hash", Case::Hash, 8, 1),
        ("pass", Case::Pass, 1 << 20, 1000),
        ("hot", Case::PassHot, 1 << 20, 10_000_000),
        ("flood", Case::Flood, 1 << 20, 20),
        ("churn", Case::Churn, 1 << 14, 20),
    ] {
        let l = Limiter::new(&Config {
            rate,
            table_size: cells,
            ..Config::default()
        })
        .expect("valid config");
        let one = run(&l, case, 0, origin, dur);
        let two: Vec<f64> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..2u32)
                .map(|t| {
                    let l = &l;
                    s.spawn(move || run(l, case, t + 1, origin, dur))
                })
                .collect();
            hs.into_iter().map(|h| h.join().expect("thread")).collect()
        });
        let st = l.stats();
        println!(
            "{name:6} table {:>8} B  1 thread {one:6.1} ns/check  2 threads {:6.1} / {:6.1} ns/check  (limited {})",
            l.memory(),
            two[0],
            two[1],
            st.limited()
        );
    }
}
