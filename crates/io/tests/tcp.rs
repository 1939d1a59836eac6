//! TCP transport (RFC 7766): framing, pipelining, idle timeout, connection limit
//! (abuse: tests/tcp_guard.rs).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use lode_io::{Client, StreamReply, TcpConfig, TcpServer};

/// Answers "big" with 65535 bytes, drops "drop", answers "bye" and closes,
/// otherwise echoes upper-cased.
fn shouter(query: &[u8], out: &mut [u8], _client: &mut Client<'_>) -> StreamReply {
    let len = match query {
        b"drop" => 0,
        b"big" => {
            for (i, o) in out[..65535].iter_mut().enumerate() {
                *o = (i % 251) as u8;
            }
            65535
        }
        _ => {
            for (o, q) in out.iter_mut().zip(query) {
                *o = q.to_ascii_uppercase();
            }
            query.len()
        }
    };
    StreamReply {
        len,
        close: query == b"bye",
    }
}

fn start(port: u16, idle_ms: u64, max_clients: usize) -> (TcpServer, SocketAddr) {
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let config = TcpConfig {
        idle_timeout: Duration::from_millis(idle_ms),
        max_clients,
        threads: 2,
        ..TcpConfig::default()
    };
    let server = TcpServer::start(&[addr], &config, shouter).expect("bind the test port");
    (server, addr)
}

fn frame(msg: &[u8]) -> Vec<u8> {
    let mut v = (msg.len() as u16).to_be_bytes().to_vec();
    v.extend_from_slice(msg);
    v
}

fn read_frame(s: &mut TcpStream) -> Vec<u8> {
    let mut len = [0u8; 2];
    s.read_exact(&mut len).expect("a length prefix");
    let mut msg = vec![0u8; u16::from_be_bytes(len) as usize];
    s.read_exact(&mut msg).expect("the message");
    msg
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// True when the server closes the connection (EOF or reset) before `secs`.
fn closed_by_server(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 16];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted
        ),
    }
}

#[test]
fn tcp_pipelined_queries_in_one_write_are_answered_in_order() {
    let (server, addr) = start(15405, 5000, 10);
    let mut s = connect(addr);
    let mut all = Vec::new();
    for i in 0..10 {
        all.extend(frame(format!("query {i}").as_bytes()));
    }
    all.extend(frame(b"drop"));
    all.extend(frame(b"last"));
    s.write_all(&all).unwrap();
    for i in 0..10 {
        assert_eq!(read_frame(&mut s), format!("QUERY {i}").into_bytes());
    }
    assert_eq!(read_frame(&mut s), b"LAST");
    let stats = server.stats();
    assert_eq!((stats.queries, stats.responses, stats.dropped), (12, 11, 1));
    server.stop();
}

#[test]
fn tcp_handler_can_close_after_its_response() {
    let (server, addr) = start(15430, 5000, 10);
    let mut s = connect(addr);
    let mut all = frame(b"first");
    all.extend(frame(b"bye"));
    all.extend(frame(b"never answered"));
    s.write_all(&all).unwrap();
    assert_eq!(read_frame(&mut s), b"FIRST");
    assert_eq!(read_frame(&mut s), b"BYE");
    assert!(closed_by_server(&mut s));
    server.stop();
}

#[test]
fn tcp_split_writes_are_reassembled() {
    let (server, addr) = start(15406, 5000, 10);
    let mut s = connect(addr);
    let msg = frame(b"split across writes");
    for chunk in msg.chunks(3) {
        s.write_all(chunk).unwrap();
        s.flush().unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    // The second query: its length prefix alone, then the rest.
    let msg2 = frame(b"second");
    s.write_all(&msg2[..1]).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    s.write_all(&msg2[1..]).unwrap();
    assert_eq!(read_frame(&mut s), b"SPLIT ACROSS WRITES");
    assert_eq!(read_frame(&mut s), b"SECOND");
    server.stop();
}

#[test]
fn tcp_largest_response_is_sent_whole() {
    let (server, addr) = start(15407, 5000, 10);
    let mut s = connect(addr);
    s.write_all(&frame(b"big")).unwrap();
    s.write_all(&frame(b"after")).unwrap();
    let big = read_frame(&mut s);
    assert_eq!(big.len(), 65535);
    assert!(big.iter().enumerate().all(|(i, b)| *b == (i % 251) as u8));
    assert_eq!(read_frame(&mut s), b"AFTER");
    server.stop();
}

#[test]
fn tcp_short_message_waits_for_idle_timeout_then_closes() {
    let (server, addr) = start(15408, 300, 10);
    let mut s = connect(addr);
    // Announce 100 bytes, send 10: the server must not answer, and must close.
    let mut partial = 100u16.to_be_bytes().to_vec();
    partial.extend_from_slice(b"0123456789");
    s.write_all(&partial).unwrap();
    assert!(closed_by_server(&mut s), "a truncated message was answered");
    // An idle connection (nothing sent) is closed too, and the server still serves.
    let mut idle = connect(addr);
    assert!(closed_by_server(&mut idle));
    let mut fresh = connect(addr);
    fresh.write_all(&frame(b"still alive")).unwrap();
    assert_eq!(read_frame(&mut fresh), b"STILL ALIVE");
    server.stop();
}

#[test]
fn tcp_trickled_bytes_do_not_extend_the_idle_deadline() {
    let (server, addr) = start(15409, 400, 10);
    let mut s = connect(addr);
    s.write_all(&200u16.to_be_bytes()).unwrap();
    // One byte every 100 ms: 40 bytes would take 4 s, ten times the timeout.
    let writer = {
        let mut w = s.try_clone().unwrap();
        std::thread::spawn(move || {
            for _ in 0..40 {
                if w.write_all(b"x").is_err() {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            false
        })
    };
    assert!(closed_by_server(&mut s));
    let _ = writer.join();
    server.stop();
}

#[test]
fn tcp_connection_limit_closes_the_idlest_for_a_new_client() {
    let (server, addr) = start(15410, 5000, 2);
    let mut a = connect(addr);
    let mut b = connect(addr);
    // Both are being served; `a` is the idlest.
    a.write_all(&frame(b"a")).unwrap();
    assert_eq!(read_frame(&mut a), b"A");
    std::thread::sleep(Duration::from_millis(20));
    b.write_all(&frame(b"b")).unwrap();
    assert_eq!(read_frame(&mut b), b"B");
    let mut c = connect(addr);
    c.write_all(&frame(b"c")).unwrap();
    assert_eq!(read_frame(&mut c), b"C", "the new client was not served");
    assert!(closed_by_server(&mut a), "the idlest client was kept");
    b.write_all(&frame(b"b2")).unwrap();
    assert_eq!(read_frame(&mut b), b"B2");
    // One source here, whose limit is max_clients: its own idlest goes.
    let stats = server.stats();
    let closed = stats.closed_idle_for_new + stats.closed_idle_same_source;
    assert_eq!((closed, stats.refused, stats.open), (1, 0, 2));
    server.stop();
}

#[test]
fn tcp_stop_closes_connections() {
    let (server, addr) = start(15411, 60_000, 10);
    let mut s = connect(addr);
    s.write_all(&frame(b"hello")).unwrap();
    assert_eq!(read_frame(&mut s), b"HELLO");
    server.stop();
    assert!(closed_by_server(&mut s));
    assert!(
        TcpStream::connect(addr).is_err(),
        "listener still open after stop"
    );
}
