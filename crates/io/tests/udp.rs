//! UDP transport: datagrams go through the handler and back, on IPv4 and IPv6.

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use lode_io::{Client, UdpConfig, UdpServer};

/// Answers with the query reversed, and drops queries starting with "drop".
fn reverser(query: &[u8], out: &mut [u8], _client: &mut Client<'_>) -> usize {
    if query.starts_with(b"drop") {
        return 0;
    }
    for (o, q) in out.iter_mut().zip(query.iter().rev()) {
        *o = *q;
    }
    query.len()
}

fn config() -> UdpConfig {
    UdpConfig {
        workers: 2,
        batch: 8,
        poll_interval: Duration::from_millis(50),
        ..UdpConfig::default()
    }
}

fn echo_through(bind: SocketAddr, client_bind: &str, config: &UdpConfig) {
    let server = UdpServer::start(&[bind], config, reverser).expect("bind the test port");
    let addr = server.local_addrs()[0];
    assert_eq!(addr, bind);
    let client = UdpSocket::bind(client_bind).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut answered = 0;
    let mut buf = [0u8; 2048];
    for i in 0..50u32 {
        let msg = format!("query number {i}");
        client.send_to(msg.as_bytes(), addr).unwrap();
        let (n, from) = client.recv_from(&mut buf).expect("an answer within 5 s");
        assert_eq!(from, addr);
        let expected: Vec<u8> = msg.bytes().rev().collect();
        assert_eq!(&buf[..n], &expected[..]);
        answered += 1;
    }
    // A burst: all sent before any is read, all answered.
    for i in 0..20u32 {
        client
            .send_to(format!("burst {i}").as_bytes(), addr)
            .unwrap();
    }
    let mut burst = Vec::new();
    for _ in 0..20 {
        let (n, _) = client.recv_from(&mut buf).expect("burst answer");
        burst.push(String::from_utf8(buf[..n].iter().rev().copied().collect()).unwrap());
    }
    burst.sort();
    let mut expected: Vec<String> = (0..20).map(|i| format!("burst {i}")).collect();
    expected.sort();
    assert_eq!(burst, expected);
    // Dropped queries get no answer and are counted.
    client.send_to(b"drop me", addr).unwrap();
    client
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    assert!(
        client.recv_from(&mut buf).is_err(),
        "a dropped query was answered"
    );
    // Counters are published after each batch: wait for the last one.
    let mut stats = server.stats();
    for _ in 0..50 {
        if stats.dropped == 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        stats = server.stats();
    }
    assert_eq!(stats.queries, answered + 20 + 1);
    assert_eq!(stats.responses, answered + 20);
    assert_eq!(stats.dropped, 1);
    server.stop();
}

#[test]
fn udp_echo_through_ipv4() {
    echo_through("127.0.0.1:15400".parse().unwrap(), "127.0.0.1:0", &config());
}

/// Packet info is on by default only for wildcard addresses (which tests may
/// not bind); forced on here, the answers must still go out from the right address.
#[test]
fn udp_echo_through_with_packet_info() {
    let forced = UdpConfig {
        pktinfo: Some(true),
        ..config()
    };
    echo_through("127.0.0.1:15413".parse().unwrap(), "127.0.0.1:0", &forced);
    if UdpSocket::bind("[::1]:0").is_ok() {
        echo_through("[::1]:15413".parse().unwrap(), "[::1]:0", &forced);
    }
}

#[test]
fn udp_echo_through_ipv6() {
    if UdpSocket::bind("[::1]:0").is_err() {
        eprintln!("no IPv6 loopback here; skipped");
        return;
    }
    echo_through("[::1]:15400".parse().unwrap(), "[::1]:0", &config());
}

#[test]
fn udp_port_in_use_is_an_error() {
    let _taken = UdpSocket::bind("127.0.0.1:15401").unwrap();
    let err = UdpServer::start(&["127.0.0.1:15401".parse().unwrap()], &config(), reverser)
        .expect_err("the port is taken without SO_REUSEPORT");
    assert!(err.to_string().contains("127.0.0.1:15401"), "{err}");
}

#[test]
fn udp_stop_is_prompt_and_frees_the_port() {
    let addr: SocketAddr = "127.0.0.1:15402".parse().unwrap();
    let server = UdpServer::start(&[addr], &config(), reverser).unwrap();
    server.stop();
    // All sockets are closed: a plain bind (no SO_REUSEPORT) now succeeds.
    UdpSocket::bind(addr).expect("port freed after stop");
}

#[test]
fn udp_handler_panic_costs_one_datagram_not_the_worker() {
    let handler = |q: &[u8], out: &mut [u8], client: &mut Client<'_>| {
        assert!(q != b"panic", "the test handler panics on request");
        reverser(q, out, client)
    };
    let config = UdpConfig {
        workers: 1,
        ..config()
    };
    let addr: SocketAddr = "127.0.0.1:15404".parse().unwrap();
    let server = UdpServer::start(&[addr], &config, handler).unwrap();
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut buf = [0u8; 64];
    client.send_to(b"panic", addr).unwrap();
    assert!(
        client.recv_from(&mut buf).is_err(),
        "a panicking handler answered"
    );
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    client.send_to(b"abc", addr).unwrap();
    let (n, _) = client.recv_from(&mut buf).expect("the worker survived");
    assert_eq!(&buf[..n], b"cba");
    server.stop();
}

/// A datagram of any size up to the UDP maximum reaches the handler whole
/// (a query padded to 65,000 bytes is answered, as Knot, NSD and BIND do).
#[test]
fn udp_takes_datagrams_up_to_64_kib() {
    let addr: SocketAddr = "127.0.0.1:15417".parse().unwrap();
    let length = |q: &[u8], out: &mut [u8], _c: &mut Client<'_>| {
        out[..4].copy_from_slice(&(q.len() as u32).to_be_bytes());
        4
    };
    let server = UdpServer::start(&[addr], &config(), length).expect("bind the test port");
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    for size in [12usize, 4096, 4097, 65_000, 65_507] {
        client.send_to(&vec![7u8; size], addr).unwrap();
        let mut buf = [0u8; 16];
        let (n, _) = client.recv_from(&mut buf).expect("an answer within 5 s");
        assert_eq!(n, 4);
        assert_eq!(
            u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize,
            size
        );
    }
    server.stop();
}

/// A worker slower than its traffic: the kernel drops datagrams on its full
/// socket, and the workers report them (SO_MEMINFO) once idle again.
#[test]
fn udp_socket_drops_are_reported() {
    let addr: SocketAddr = "127.0.0.1:16747".parse().unwrap();
    let slow = |q: &[u8], out: &mut [u8], c: &mut Client<'_>| {
        std::thread::sleep(Duration::from_millis(2));
        reverser(q, out, c)
    };
    let cfg = UdpConfig {
        workers: 1,
        recv_buffer: 4096,
        ..config()
    };
    let server = UdpServer::start(&[addr], &cfg, slow).expect("bind the test port");
    assert_eq!(server.stats().socket_drops, 0);
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    for i in 0..3000u32 {
        let _ = client.send_to(format!("flood {i:0>200}").as_bytes(), addr);
    }
    // Idle again after at most 3000 × 2 ms; the next idle wake-up reads the count.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while server.stats().socket_drops == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no socket drops reported: {:?}",
            server.stats()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let s = server.stats();
    assert!(s.queries + s.socket_drops <= 3000, "{s:?}");
    assert!(s.queries < 3000, "{s:?}");
    server.stop();
}
