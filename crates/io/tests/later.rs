//! Deferred replies: a handler answers after it returned, from another
//! thread, over UDP and over TCP (where the connection waits for the reply
//! even after the client's end of file, and the idle timer waits too).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

use lode_io::{Client, StreamReply, TcpConfig, TcpServer, UdpConfig, UdpServer};

/// "later:N" is answered "DONE:N" after 300 ms from another thread, "stream"
/// by three messages, anything else at once with itself.
fn answer(query: &[u8], out: &mut [u8], client: &mut Client<'_>) -> usize {
    if query.starts_with(b"later:") || query == b"stream" {
        let mut later = client.defer();
        let q = query.to_vec();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            if q == b"stream" {
                for m in [&b"one"[..], b"two"] {
                    assert!(later.push(m));
                }
                later.send(b"three");
            } else {
                let mut r = b"DONE:".to_vec();
                r.extend_from_slice(&q[6..]);
                later.send(&r);
            }
        });
        return 0;
    }
    out[..query.len()].copy_from_slice(query);
    query.len()
}

fn read_frame(s: &mut TcpStream) -> Vec<u8> {
    let mut len = [0u8; 2];
    s.read_exact(&mut len).expect("a length prefix");
    let mut msg = vec![0u8; u16::from_be_bytes(len) as usize];
    s.read_exact(&mut msg).expect("the message");
    msg
}

fn frame(msg: &[u8]) -> Vec<u8> {
    let mut v = (msg.len() as u16).to_be_bytes().to_vec();
    v.extend_from_slice(msg);
    v
}

#[test]
fn udp_reply_after_the_handler_returned() {
    let addr: SocketAddr = "127.0.0.1:15414".parse().unwrap();
    let config = UdpConfig {
        workers: 1,
        poll_interval: Duration::from_millis(50),
        ..UdpConfig::default()
    };
    let server = UdpServer::start(&[addr], &config, answer).unwrap();
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.send_to(b"later:1", addr).unwrap();
    c.send_to(b"now", addr).unwrap();
    let mut buf = [0u8; 64];
    let (n, from) = c.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"now", "the immediate answer does not wait");
    assert_eq!(from, addr);
    let (n, from) = c.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"DONE:1");
    assert_eq!(from, addr, "the late reply leaves from the listening port");
    assert_eq!(server.stats().dropped, 0, "a deferred query is not a drop");
    server.stop();
}

fn tcp_handler(q: &[u8], out: &mut [u8], c: &mut Client<'_>) -> StreamReply {
    StreamReply {
        len: answer(q, out, c),
        close: false,
    }
}

#[test]
fn tcp_reply_after_the_handler_returned_and_after_eof() {
    let addr: SocketAddr = "127.0.0.1:15415".parse().unwrap();
    let config = TcpConfig {
        // Shorter than the deferral: the idle timer must wait for the reply.
        idle_timeout: Duration::from_millis(100),
        threads: 1,
        ..TcpConfig::default()
    };
    let server = TcpServer::start(&[addr], &config, tcp_handler).unwrap();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut both = frame(b"later:7");
    both.extend(frame(b"now"));
    s.write_all(&both).unwrap();
    assert_eq!(read_frame(&mut s), b"now");
    assert_eq!(read_frame(&mut s), b"DONE:7");
    // A stream of messages, then end of file from the client before the
    // replies: they still arrive, then the server closes.
    s.write_all(&frame(b"stream")).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    for want in [&b"one"[..], b"two", b"three"] {
        assert_eq!(read_frame(&mut s), want);
    }
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "closed after the last deferred reply");
    server.stop();
}

/// "big" starts a stream of BIG_COUNT messages of 60,000 bytes (each filled
/// with its number) and records how many were pushed.
const BIG_COUNT: usize = 1500;
static PUSHED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn big_stream(q: &[u8], out: &mut [u8], c: &mut Client<'_>) -> StreamReply {
    if q != b"big" {
        return tcp_handler(q, out, c);
    }
    let mut later = c.defer();
    std::thread::spawn(move || {
        for i in 0..BIG_COUNT {
            if !later.push(&[(i % 251) as u8; 60_000]) {
                return;
            }
            PUSHED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    StreamReply {
        len: 0,
        close: false,
    }
}

#[test]
fn a_stream_waits_for_a_slow_reader_and_loses_nothing() {
    use std::sync::atomic::Ordering::SeqCst;
    let addr: SocketAddr = "127.0.0.1:15416".parse().unwrap();
    let config = TcpConfig {
        threads: 1,
        ..TcpConfig::default()
    };
    let server = TcpServer::start(&[addr], &config, big_stream).unwrap();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&frame(b"big")).unwrap();
    // The client reads nothing for a while: the producer must stop at the
    // queue bound plus what the sockets' buffers hold, not run through all
    // 90 MB.
    std::thread::sleep(Duration::from_millis(1500));
    let early = PUSHED.load(SeqCst);
    let bound = (lode_io::STREAM_QUEUE_BYTES + (16 << 20)) / 60_000;
    assert!(
        early < bound,
        "{early} messages pushed to a client that reads nothing (bound {bound})"
    );
    for i in 0..BIG_COUNT {
        let m = read_frame(&mut s);
        assert_eq!(m.len(), 60_000);
        assert!(
            m.iter().all(|&b| b == (i % 251) as u8),
            "message {i} in order"
        );
    }
    // The producer counts a push once it returns, after its message may
    // already have been read here.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while PUSHED.load(SeqCst) < BIG_COUNT && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(PUSHED.load(SeqCst), BIG_COUNT);
    server.stop();
}
