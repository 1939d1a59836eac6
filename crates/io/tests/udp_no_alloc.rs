//! The UDP worker loop allocates nothing per datagram: a counting global
//! allocator sees no allocation while hundreds of queries are answered.
//! (Own test binary: other tests' threads would allocate meanwhile.)

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use lode_io::{Client, UdpConfig, UdpServer};

#[global_allocator]
static GLOBAL: lode_testalloc::Counting = lode_testalloc::Counting;

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
    lode_testalloc::assert_installed();
    // Every thread is counted: the work happens on the server's workers.
    let (answered, allocs) = lode_testalloc::count_all(|| {
        let mut answered = 0;
        for _ in 0..500 {
            client.send_to(&query, addr).unwrap();
            let (n, _) = client.recv_from(&mut buf).unwrap();
            assert_eq!(&buf[..n], &query[..]);
            answered += 1;
        }
        answered
    });
    assert_eq!(answered, 500);
    assert_eq!(allocs, 0, "allocations while answering 500 datagrams");
    server.stop();
}
