//! `Limiter::check`, `log_due` and `stats` allocate nothing: a counting
//! global allocator watches passing, limited, slipped, evicting, exempt and
//! log-only checks.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use lode_rrl::{Class, Config, Limiter, Verdict};

#[global_allocator]
static GLOBAL: lode_testalloc::Counting = lode_testalloc::Counting;

const NAME: &[u8] = b"\x03www\x07example\x03com\x00";

#[test]
fn checks_do_not_allocate() {
    lode_testalloc::assert_installed();

    for log_only in [false, true] {
        let l = Limiter::new(&Config {
            rate: 5,
            slip: 2,
            table_size: 256,
            log_only,
            exempt: vec![(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 0)), 8)],
            ..Config::default()
        })
        .expect("valid config");
        let mut verdicts = [0usize; 4];
        let (stats, allocs) = lode_testalloc::count(|| {
            for i in 0..20_000u32 {
                let now = u64::from(i / 10);
                let src = match i % 4 {
                    0 => IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
                    1 => IpAddr::V4(Ipv4Addr::from(i << 8)),
                    2 => IpAddr::V6(Ipv6Addr::from(u128::from(i) << 80)),
                    _ => IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3)),
                };
                let v = l.check(src, Class::Positive, NAME, now);
                verdicts[v as usize] += 1;
                if v != Verdict::Send {
                    let _ = std::hint::black_box(l.log_due(src, now));
                }
            }
            l.stats()
        });
        assert_eq!(allocs, 0, "log_only {log_only}");
        // The flooding source was limited, and the counters saw it.
        assert!(stats.limited() > 4000, "{stats:?} {verdicts:?}");
    }
}
