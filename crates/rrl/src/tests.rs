//! Behaviour tests with simulated time (no wall clock, no sleeping).

use super::*;
use std::net::{Ipv4Addr, Ipv6Addr};

const ZONE: &[u8] = b"\x07example\x03com\x00";
const WWW: &[u8] = b"\x03www\x07example\x03com\x00";

fn limiter(rate: u32, slip: u32) -> Limiter {
    Limiter::new(&Config {
        rate,
        slip,
        table_size: 1 << 16,
        ..Config::default()
    })
    .expect("valid config")
}

fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(a, b, c, d))
}

/// A small deterministic PRNG (xorshift64*) for spoofed addresses.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Verdict counts of a flood.
#[derive(Default, Debug)]
struct Tally {
    send: u64,
    slip: u64,
    drop: u64,
    would: u64,
}

impl Tally {
    fn add(&mut self, v: Verdict) {
        match v {
            Verdict::Send => self.send += 1,
            Verdict::Slip => self.slip += 1,
            Verdict::Drop => self.drop += 1,
            Verdict::WouldLimit => self.would += 1,
        }
    }
}

/// Floods `qps` answers per second for `secs` seconds from `src(i)`,
/// starting at `t0` ms.
fn flood(
    l: &Limiter,
    qps: u64,
    secs: u64,
    t0: u64,
    mut src: impl FnMut(u64) -> IpAddr,
    class: Class,
    name: &[u8],
) -> Tally {
    let mut t = Tally::default();
    let n = qps * secs;
    for i in 0..n {
        let now = t0 + i * 1000 / qps;
        t.add(l.check(src(i), class, name, now));
    }
    t
}

fn within(value: u64, target: u64, percent: u64) -> bool {
    value * 100 >= target * (100 - percent) && value * 100 <= target * (100 + percent)
}

#[test]
fn steady_flood_gets_the_rate() {
    let rate = 20;
    let l = limiter(rate, 2);
    let t = flood(
        &l,
        5 * u64::from(rate),
        10,
        1_000_000,
        |_| v4(192, 0, 2, 1),
        Class::Positive,
        WWW,
    );
    // 10 s at the rate, plus the default burst (rate / 2): over 9.99 s,
    // 1 + ⌊(9990 ms + τ) / T⌋ = 1 + ⌊(9990 + 450) / 50⌋ = 209.
    assert!(within(t.send, 10 * u64::from(rate), 10), "{t:?}");
    assert_eq!(t.send, 209, "{t:?}");
    let limited = t.slip + t.drop;
    assert_eq!(t.send + limited, 1000);
    // slip 2: every second limited answer slips.
    assert!(t.slip.abs_diff(limited / 2) <= 1, "{t:?}");
    let s = l.stats();
    assert_eq!(
        (s.slipped, s.dropped, s.limited()),
        (t.slip, t.drop, limited)
    );
}

#[test]
fn each_second_of_a_steady_flood_gets_the_rate() {
    for rate in [1u32, 7, 50, 1000, 30_000] {
        let l = limiter(rate, 0);
        let qps = 5 * u64::from(rate);
        // Warm up one second, then count per 1 s window.
        let _ = flood(&l, qps, 1, 0, |_| v4(10, 0, 0, 1), Class::NoData, WWW);
        for s in 1..6 {
            let t = flood(
                &l,
                qps,
                1,
                s * 1000,
                |_| v4(10, 0, 0, 1),
                Class::NoData,
                WWW,
            );
            assert!(
                t.send.abs_diff(u64::from(rate)) <= 1,
                "rate {rate}, second {s}: {t:?}"
            );
            assert_eq!(t.slip, 0, "slip 0 drops all");
        }
    }
}

#[test]
fn slip_one_slips_all_and_slip_three_one_in_three() {
    let l = limiter(10, 1);
    let t = flood(&l, 100, 5, 0, |_| v4(192, 0, 2, 1), Class::Positive, WWW);
    assert_eq!(t.drop, 0);
    assert!(t.slip > 400, "{t:?}");

    let l = limiter(10, 3);
    let t = flood(&l, 100, 5, 0, |_| v4(192, 0, 2, 1), Class::Positive, WWW);
    let limited = t.slip + t.drop;
    assert!(t.slip.abs_diff(limited / 3) <= 1, "{t:?}");
}

#[test]
fn other_prefixes_keep_full_service_during_a_flood() {
    let rate = 10;
    let l = limiter(rate, 1);
    let mut victim = Tally::default();
    for i in 0..10_000u64 {
        let now = i; // 1000 q/s from the attacker's /24
        let _ = l.check(v4(192, 0, 2, (i % 200) as u8), Class::Positive, WWW, now);
        if i % 200 == 0 {
            // 5 q/s from a neighbour /24 and from IPv6, same name and class.
            victim.add(l.check(v4(192, 0, 3, 1), Class::Positive, WWW, now));
            let six = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));
            victim.add(l.check(six, Class::Positive, WWW, now));
        }
    }
    assert_eq!(victim.send, 100, "{victim:?}");
    assert!(l.stats().limited() > 9000);
}

#[test]
fn a_spoofed_flood_within_one_v4_prefix_is_one_bucket() {
    let rate = 20;
    let l = limiter(rate, 0);
    let mut rng = Rng(0x1234_5678);
    let t = flood(
        &l,
        400,
        10,
        0,
        |_| v4(203, 0, 113, rng.next() as u8),
        Class::Positive,
        WWW,
    );
    assert!(within(t.send, 10 * u64::from(rate), 10), "{t:?}");
}

#[test]
fn a_spoofed_flood_within_one_v6_prefix_is_one_bucket() {
    let rate = 20;
    let l = limiter(rate, 0);
    let mut rng = Rng(99);
    let t = flood(
        &l,
        400,
        10,
        0,
        |_| {
            // 2001:db8:0:ab00::/56, random low 72 bits: 4000 distinct sources.
            let low = u128::from(rng.next()) << 8 | u128::from(rng.next() as u8);
            let hi = 0x2001_0db8_0000_ab00u128 << 64;
            IpAddr::V6(Ipv6Addr::from(hi | low))
        },
        Class::Positive,
        WWW,
    );
    assert!(within(t.send, 10 * u64::from(rate), 10), "{t:?}");
}

#[test]
fn different_v4_prefixes_are_limited_separately() {
    let rate = 10;
    let l = limiter(rate, 0);
    // 2000 /24s, each sending 2 answers per second for 10 s (under the
    // rate): no one is limited.
    let nets = 2000u64;
    let t = flood(
        &l,
        2 * nets,
        10,
        0,
        |i| {
            let n = i % nets;
            v4(100, (n >> 8) as u8, n as u8, (i / nets) as u8)
        },
        Class::Positive,
        WWW,
    );
    assert_eq!(t.send, 2 * nets * 10, "{t:?}");

    // 500 /24s each flooding at 5× the rate: each gets ~its own rate.
    let l = limiter(rate, 0);
    let nets = 500u64;
    let mut per_net = vec![0u64; nets as usize];
    for i in 0..5 * u64::from(rate) * nets * 10 {
        let n = i % nets;
        let now = i * 1000 / (5 * u64::from(rate) * nets);
        if l.check(
            v4(100, 64 + (n >> 8) as u8, n as u8, 1),
            Class::Positive,
            WWW,
            now,
        ) == Verdict::Send
        {
            per_net[n as usize] += 1;
        }
    }
    for (n, &sent) in per_net.iter().enumerate() {
        assert!(within(sent, 10 * u64::from(rate), 10), "net {n}: {sent}");
    }
}

#[test]
fn classes_and_names_are_separate_buckets() {
    let l = limiter(5, 0);
    let src = v4(192, 0, 2, 1);
    for now in 0..100 {
        let _ = l.check(src, Class::NxDomain, ZONE, now);
    }
    assert_eq!(l.check(src, Class::NxDomain, ZONE, 100), Verdict::Drop);
    assert_eq!(l.check(src, Class::Positive, ZONE, 100), Verdict::Send);
    assert_eq!(l.check(src, Class::Wildcard, ZONE, 100), Verdict::Send);
    assert_eq!(l.check(src, Class::NxDomain, WWW, 100), Verdict::Send);
}

#[test]
fn random_subdomain_flood_keyed_by_zone_is_one_bucket() {
    // The caller passes the zone apex for NXDOMAIN whatever the qname.
    let rate = 10;
    let l = limiter(rate, 0);
    let t = flood(&l, 1000, 10, 0, |_| v4(192, 0, 2, 1), Class::NxDomain, ZONE);
    assert!(within(t.send, 10 * u64::from(rate), 10), "{t:?}");
}

#[test]
fn exempt_prefixes_are_never_limited() {
    let l = Limiter::new(&Config {
        rate: 1,
        table_size: 64,
        exempt: vec![
            (v4(192, 0, 2, 0), 24),
            ("2001:db8::".parse().expect("address"), 32),
        ],
        ..Config::default()
    })
    .expect("valid config");
    let six: IpAddr = "2001:db8:1:2::3".parse().expect("address");
    let mapped: IpAddr = "::ffff:192.0.2.9".parse().expect("address");
    for now in 0..1000 {
        assert_eq!(
            l.check(v4(192, 0, 2, 200), Class::Positive, WWW, now),
            Verdict::Send
        );
        assert_eq!(l.check(six, Class::Error, ZONE, now), Verdict::Send);
        assert_eq!(l.check(mapped, Class::Error, ZONE, now), Verdict::Send);
    }
    assert_eq!(
        l.check(v4(192, 0, 3, 1), Class::Positive, WWW, 0),
        Verdict::Send
    );
    assert_eq!(
        l.check(v4(192, 0, 3, 1), Class::Positive, WWW, 0),
        Verdict::Slip
    );
    assert_eq!(l.stats().limited(), 1);
}

#[test]
fn log_only_says_would_limit() {
    let l = Limiter::new(&Config {
        rate: 10,
        log_only: true,
        table_size: 64,
        ..Config::default()
    })
    .expect("valid config");
    let t = flood(&l, 100, 10, 0, |_| v4(192, 0, 2, 1), Class::Positive, WWW);
    assert_eq!(t.slip + t.drop, 0);
    assert!(within(t.send, 100, 10), "{t:?}");
    assert_eq!(t.send + t.would, 1000);
    let s = l.stats();
    assert_eq!((s.would_limit, s.slipped, s.dropped), (t.would, 0, 0));
}

#[test]
fn rate_zero_is_off() {
    let l = limiter(0, 1);
    assert!(!l.enabled());
    assert_eq!(l.memory(), 0);
    for now in 0..1000 {
        assert_eq!(
            l.check(v4(192, 0, 2, 1), Class::Positive, WWW, now / 100),
            Verdict::Send
        );
    }
}

#[test]
fn prefix_lengths_are_settable() {
    let l = Limiter::new(&Config {
        rate: 1,
        ipv4_prefix: 32,
        ipv6_prefix: 64,
        table_size: 1024,
        ..Config::default()
    })
    .expect("valid config");
    // /32: neighbours are separate.
    assert_eq!(
        l.check(v4(192, 0, 2, 1), Class::Positive, WWW, 0),
        Verdict::Send
    );
    assert_eq!(
        l.check(v4(192, 0, 2, 2), Class::Positive, WWW, 0),
        Verdict::Send
    );
    assert_eq!(
        l.check(v4(192, 0, 2, 1), Class::Positive, WWW, 0),
        Verdict::Slip
    );
    // /64: same /64 shares, next /64 does not.
    let a: IpAddr = "2001:db8:0:1::1".parse().expect("address");
    let b: IpAddr = "2001:db8:0:1:ffff::2".parse().expect("address");
    let c: IpAddr = "2001:db8:0:2::1".parse().expect("address");
    assert_eq!(l.check(a, Class::Positive, WWW, 0), Verdict::Send);
    assert_eq!(l.check(b, Class::Positive, WWW, 0), Verdict::Slip);
    assert_eq!(l.check(c, Class::Positive, WWW, 0), Verdict::Send);
    assert_eq!(l.prefix_of(b).to_string(), "2001:db8:0:1::/64");
    assert_eq!(l.prefix_of(v4(192, 0, 2, 9)).to_string(), "192.0.2.9/32");
}

#[test]
fn default_v6_prefix_is_56() {
    let l = limiter(1, 1);
    let a: IpAddr = "2001:db8:0:ab01::1".parse().expect("address");
    let b: IpAddr = "2001:db8:0:abff::2".parse().expect("address");
    let c: IpAddr = "2001:db8:0:ac00::1".parse().expect("address");
    assert_eq!(l.check(a, Class::Positive, WWW, 0), Verdict::Send);
    assert_eq!(l.check(b, Class::Positive, WWW, 0), Verdict::Slip);
    assert_eq!(l.check(c, Class::Positive, WWW, 0), Verdict::Send);
    assert_eq!(l.prefix_of(b).to_string(), "2001:db8:0:ab00::/56");
}

#[test]
fn log_due_once_per_prefix_per_interval() {
    let l = Limiter::new(&Config {
        rate: 1,
        log_interval_ms: 5000,
        table_size: 64,
        ..Config::default()
    })
    .expect("valid config");
    let p = l.log_due(v4(192, 0, 2, 7), 1000).expect("first report");
    assert_eq!(p.to_string(), "192.0.2.0/24");
    assert_eq!(l.log_due(v4(192, 0, 2, 8), 1001), None);
    assert_eq!(l.log_due(v4(192, 0, 2, 7), 5999), None);
    assert!(l.log_due(v4(192, 0, 2, 7), 6000).is_some());
    assert_eq!(l.log_due(v4(192, 0, 2, 7), 6000), None);
}

#[test]
fn config_errors() {
    let bad = |c: Config| Limiter::new(&c).err();
    let base = Config {
        rate: 10,
        ..Config::default()
    };
    assert_eq!(
        bad(Config {
            slip: 101,
            ..base.clone()
        }),
        Some(ConfigError::Slip(101))
    );
    assert_eq!(
        bad(Config {
            ipv4_prefix: 33,
            ..base.clone()
        }),
        Some(ConfigError::Ipv4Prefix(33))
    );
    assert_eq!(
        bad(Config {
            ipv6_prefix: 129,
            ..base.clone()
        }),
        Some(ConfigError::Ipv6Prefix(129))
    );
    assert_eq!(
        bad(Config {
            table_size: 0,
            ..base.clone()
        }),
        Some(ConfigError::TableSize)
    );
    assert_eq!(
        bad(Config {
            rate: MAX_RATE + 1,
            ..base.clone()
        }),
        Some(ConfigError::Rate(MAX_RATE + 1))
    );
    assert_eq!(
        bad(Config {
            rate: 1,
            burst: u32::MAX,
            ..base.clone()
        }),
        Some(ConfigError::Burst(u32::MAX))
    );
    assert_eq!(
        bad(Config {
            exempt: vec![(v4(10, 0, 0, 0), 40)],
            ..base.clone()
        }),
        Some(ConfigError::Ipv4Prefix(40))
    );
    let l = Limiter::new(&base).expect("valid config");
    // Knot's default size, rounded up to lines of 8 cells of 8 bytes.
    assert_eq!(l.cells(), 393_248);
    assert_eq!(l.memory(), 393_248 * 8);
}

#[test]
fn classify_in_knots_order() {
    use Class::*;
    let c = Class::classify;
    assert_eq!(c(3, 1, true, false, 0, 2000), NxDomain);
    assert_eq!(c(5, 1, false, false, 0, 10), Error);
    assert_eq!(c(2, 255, false, false, 0, 10), Error);
    assert_eq!(c(0, 255, true, false, 1, 2000), Wildcard);
    assert_eq!(c(0, 255, false, false, 3, 2000), Any);
    assert_eq!(c(0, 48, false, false, 3, 2000), Dnssec);
    assert_eq!(c(0, 43, false, true, 0, 100), Dnssec);
    assert_eq!(c(0, 1, false, false, 3, 1024), Large);
    assert_eq!(c(0, 1, false, false, 3, 1023), Positive);
    assert_eq!(c(0, 1, false, false, 0, 100), NoData);
    assert_eq!(c(0, 1, false, true, 0, 100), Referral);
    assert!(NxDomain.keys_zone() && Error.keys_zone() && Wildcard.keys_zone());
    assert!(!Positive.keys_zone() && !NoData.keys_zone() && !Referral.keys_zone());
    assert!(!Large.keys_zone() && !Any.keys_zone() && !Dnssec.keys_zone());
}

#[test]
fn two_threads_on_one_bucket_share_its_rate() {
    // Two workers get the same flood (SO_REUSEPORT spreads one source's
    // datagrams): their sum is limited as one bucket. Simulated time moves
    // in 10 ms steps; a barrier keeps the workers within one step.
    let rate = 50u64;
    let l = limiter(rate as u32, 0);
    let barrier = std::sync::Barrier::new(2);
    let sends: u64 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2u8)
            .map(|w| {
                let (l, barrier) = (&l, &barrier);
                s.spawn(move || {
                    let mut sent = 0;
                    for step in 0..1000u64 {
                        for _ in 0..3 {
                            // 2 workers × 3 per 10 ms = 600 q/s = 12× the rate.
                            let v = l.check(v4(192, 0, 2, w), Class::Positive, WWW, step * 10);
                            sent += u64::from(v == Verdict::Send);
                        }
                        barrier.wait();
                    }
                    sent
                })
            })
            .collect();
        workers.into_iter().map(|h| h.join().expect("worker")).sum()
    });
    // 1 + ⌊(9990 ms + τ) / T⌋ = 1 + ⌊(9990 + 480) / 20⌋ = 524 when no
    // check fails open after losing 4 CAS races in a row (each such loss
    // adds one pass).
    assert!(within(sends, 10 * rate, 10), "{sends}");
    assert!((524..=528).contains(&sends), "{sends}");
}
