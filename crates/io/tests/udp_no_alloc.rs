//! The UDP worker loop allocates nothing per datagram: a counting global
//! allocator sees no allocation while hundreds of queries are answered.
//! (Own test binary: other tests' threads would allocate meanwhile.)
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lode_io::{Client, UdpConfig, UdpServer};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call unchanged to the system allocator; the counter
// is an atomic, so the allocator stays thread-safe and never allocates itself.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn echo(query: &[u8], out: &mut [u8], _client: &mut Client<'_>) -> usize {
    out[..query.len()].copy_from_slice(query);
    query.len()
}

#[test]
fn udp_workers_do_not_allocate_per_datagram() {
    let addr: SocketAddr = "127.0.0.1:15403".parse().unwrap();
    let config = UdpConfig {
        workers: 2,
        batch: 16,
        poll_interval: Duration::from_millis(50),
        ..UdpConfig::default()
    };
    let server = UdpServer::start(&[addr], &config, echo).unwrap();
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut buf = [0u8; 512];
    let query = [7u8; 64];
    // Warm up: thread start-up and first-use allocations happen here.
    for _ in 0..20 {
        client.send_to(&query, addr).unwrap();
        client.recv_from(&mut buf).unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let mut answered = 0;
    for _ in 0..500 {
        client.send_to(&query, addr).unwrap();
        let (n, _) = client.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], &query[..]);
        answered += 1;
    }
    let after = ALLOCATIONS.load(Ordering::Relaxed);
    assert_eq!(answered, 500);
    assert_eq!(
        after - before,
        0,
        "allocations while answering 500 datagrams"
    );
    server.stop();
}
