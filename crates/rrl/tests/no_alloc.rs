//! `Limiter::check`, `log_due` and `stats` allocate nothing: a counting
//! global allocator watches passing, limited, slipped, evicting, exempt and
//! log-only checks.
#![allow(unsafe_code)] // a GlobalAlloc impl is unsafe by definition; test only

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicUsize, Ordering};

use lode_rrl::{Class, Config, Limiter, Verdict};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static WATCHING: Cell<bool> = const { Cell::new(false) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if WATCHING.with(|w| w.get()) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if WATCHING.with(|w| w.get()) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const NAME: &[u8] = b"\x03www\x07example\x03com\x00";

#[test]
fn checks_do_not_allocate() {
    WATCHING.with(|w| w.set(true));
    let probe = std::hint::black_box(vec![1u8; 16]);
    WATCHING.with(|w| w.set(false));
    assert!(
        ALLOCATIONS.swap(0, Ordering::SeqCst) >= 1,
        "counter is blind"
    );
    drop(probe);

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
        WATCHING.with(|w| w.set(true));
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
        let stats = l.stats();
        WATCHING.with(|w| w.set(false));
        assert_eq!(ALLOCATIONS.load(Ordering::SeqCst), 0, "log_only {log_only}");
        // The flooding source was limited, and the counters saw it.
        assert!(stats.limited() > 4000, "{stats:?} {verdicts:?}");
    }
}
