//! `Dnstap::log` allocates nothing once the thread's queue exists: a
//! counting global allocator watches logged, sampled-out and dropped
//! (queue full) events on the query path's thread.
#![allow(unsafe_code)] // a GlobalAlloc impl is unsafe by definition; test only

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use lode_dnstap::{Config, Dnstap, Event, Protocol, Sink};

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

fn watched(f: impl FnOnce()) -> usize {
    ALLOCATIONS.store(0, Ordering::SeqCst);
    WATCHING.with(|w| w.set(true));
    f();
    WATCHING.with(|w| w.set(false));
    ALLOCATIONS.swap(0, Ordering::SeqCst)
}

#[test]
fn logging_does_not_allocate() {
    assert!(
        watched(|| drop(std::hint::black_box(vec![1u8; 16]))) >= 1,
        "counter is blind"
    );
    let dir = std::env::temp_dir().join(format!("lode-dnstap-noalloc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut c = Config::new(Sink::File(dir.join("out.tap")));
    c.queue = 8;
    c.sample = 2;
    let tap = Dnstap::start(&c).unwrap();
    static QUERY: [u8; 40] = [0x12; 40];
    static RESPONSE: [u8; 300] = [0x34; 300];
    let ev = |r: Option<&'static [u8]>| Event {
        query: &QUERY,
        response: r,
        peer: SocketAddr::from(([192, 0, 2, 1], 53000)),
        local: None,
        protocol: Protocol::Udp,
        query_time: SystemTime::now(),
        response_time: SystemTime::now(),
    };
    // The first call makes this thread's lane (allocates, once).
    tap.log(&ev(Some(&RESPONSE)));
    for round in 0..50 {
        let n = watched(|| {
            for _ in 0..200 {
                tap.log(&ev(Some(&RESPONSE)));
                tap.log(&ev(None));
            }
        });
        assert_eq!(n, 0, "round {round}: {n} allocations on the query path");
        std::thread::sleep(Duration::from_millis(3));
    }
    tap.close();
    let s = tap.stats();
    // Queue of 8 and 400 events a round: most were dropped, and counted.
    assert!(s.dropped_queue_full > 0, "{s:?}");
    assert!(s.logged > 0, "{s:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
