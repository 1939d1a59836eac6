//! `Dnstap::log` allocates nothing once the thread's queue exists: a
//! counting global allocator watches logged, sampled-out and dropped
//! (queue full) events on the query path's thread.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use lode_dnstap::{Config, Dnstap, Event, Protocol, Sink};

#[global_allocator]
static GLOBAL: lode_testalloc::Counting = lode_testalloc::Counting;

#[test]
fn logging_does_not_allocate() {
    lode_testalloc::assert_installed();
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
        let ((), n) = lode_testalloc::count(|| {
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
