//! The logger end to end: events from several threads to a file and to a
//! Unix-socket reader (the handshake played by the test), a reader that
//! comes late, and one that never reads (drops counted, `log` never waits).

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use lode_dnstap::fstrm::{control_frame, read_control, Control, CONTENT_TYPE};
use lode_dnstap::proto::{self, MessageType};
use lode_dnstap::{Config, Dnstap, Event, Protocol, Sink};
use prost::Message as _;

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lode-dnstap-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn event<'a>(query: &'a [u8], response: Option<&'a [u8]>, port: u16) -> Event<'a> {
    Event {
        query,
        response,
        peer: SocketAddr::from(([127, 0, 0, 9], port)),
        local: None,
        protocol: if port.is_multiple_of(2) {
            Protocol::Udp
        } else {
            Protocol::Tcp
        },
        query_time: SystemTime::now(),
        response_time: SystemTime::now(),
    }
}

/// The data frames after START, up to STOP, decoded.
fn decode_stream(mut bytes: &[u8]) -> (Vec<proto::Dnstap>, bool) {
    let start = read_control(&mut bytes).unwrap();
    assert_eq!(start.kind, Control::Start);
    assert_eq!(start.content_types, vec![CONTENT_TYPE.to_vec()]);
    let mut out = Vec::new();
    loop {
        if bytes.len() < 4 {
            return (out, false);
        }
        let len = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
        if len == 0 {
            let stop = read_control(&mut bytes).unwrap();
            assert_eq!(stop.kind, Control::Stop);
            assert!(bytes.is_empty());
            return (out, true);
        }
        out.push(proto::Dnstap::decode(&bytes[4..4 + len]).unwrap());
        bytes = &bytes[4 + len..];
    }
}

#[test]
fn file_holds_every_event_of_every_thread() {
    let dir = scratch("file");
    let path = dir.join("out.tap");
    let mut c = Config::new(Sink::File(path.clone()));
    c.identity = Some(b"ns-test".to_vec());
    c.version = Some(b"Lode test".to_vec());
    let tap = Dnstap::start(&c).unwrap();
    std::thread::scope(|s| {
        for t in 0..3u16 {
            let tap = &tap;
            s.spawn(move || {
                for i in 0..100u16 {
                    let q = [t as u8, i as u8, 1, 2, 3];
                    // Every tenth query dropped (no response).
                    let r = [t as u8, i as u8, 0x80];
                    let resp = (i % 10 != 0).then_some(&r[..]);
                    tap.log(&event(&q, resp, 1000 + t));
                    if i % 50 == 0 {
                        // Let the writer drain (queue is 4096: no drop anyway).
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            });
        }
    });
    tap.close();
    let stats = tap.stats();
    assert_eq!(stats.logged, 3 * (100 + 90));
    assert_eq!(stats.dropped_queue_full, 0);
    let (msgs, stopped) = decode_stream(&std::fs::read(&path).unwrap());
    assert!(stopped);
    assert_eq!(msgs.len(), 570);
    let queries = msgs
        .iter()
        .filter(|m| m.message.as_ref().unwrap().r#type == MessageType::AuthQuery as i32)
        .count();
    assert_eq!(queries, 300);
    for m in &msgs {
        assert_eq!(m.identity.as_deref(), Some(&b"ns-test"[..]));
        assert_eq!(m.version.as_deref(), Some(&b"Lode test"[..]));
        let msg = m.message.as_ref().unwrap();
        assert_eq!(msg.query_address.as_deref(), Some(&[127, 0, 0, 9][..]));
        let t = msg.query_port.unwrap() - 1000;
        let want = if t.is_multiple_of(2) { 1 } else { 2 };
        assert_eq!(msg.socket_protocol, Some(want));
        if msg.r#type == MessageType::AuthResponse as i32 {
            let r = msg.response_message.as_ref().unwrap();
            assert_eq!((r.len(), r[0] as u32, r[2]), (3, t, 0x80));
            assert!(msg.response_time_sec.is_some());
        } else {
            assert_eq!(msg.query_message.as_ref().unwrap().len(), 5);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sampling_and_message_kinds() {
    let dir = scratch("sample");
    let path = dir.join("out.tap");
    let mut c = Config::new(Sink::File(path.clone()));
    c.sample = 4;
    c.log_queries = false;
    let tap = Dnstap::start(&c).unwrap();
    for i in 0..40u8 {
        tap.log(&event(&[i], Some(&[i, 1]), 2000));
    }
    // Without a response and without queries, nothing is logged or counted.
    tap.log(&event(&[1], None, 2000));
    drop(tap);
    let (msgs, _) = decode_stream(&std::fs::read(&path).unwrap());
    assert_eq!(msgs.len(), 10);
    assert!(msgs
        .iter()
        .all(|m| m.message.as_ref().unwrap().r#type == MessageType::AuthResponse as i32));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reader as fstrm_capture is: ACCEPT the READY, read START, frames up to
/// STOP, answer FINISH. Returns the data frames.
fn serve_reader(listener: &UnixListener) -> Vec<Vec<u8>> {
    let (mut s, _) = listener.accept().unwrap();
    let ready = read_control(&mut s).unwrap();
    assert_eq!(ready.kind, Control::Ready);
    assert!(ready.content_types.iter().any(|t| t == CONTENT_TYPE));
    s.write_all(&control_frame(Control::Accept)).unwrap();
    assert_eq!(read_control(&mut s).unwrap().kind, Control::Start);
    let mut frames = Vec::new();
    loop {
        let mut len = [0u8; 4];
        s.read_exact(&mut len).unwrap();
        let len = u32::from_be_bytes(len) as usize;
        if len == 0 {
            let mut l = [0u8; 4];
            s.read_exact(&mut l).unwrap();
            let mut body = vec![0u8; u32::from_be_bytes(l) as usize];
            s.read_exact(&mut body).unwrap();
            assert_eq!(
                lode_dnstap::fstrm::parse_control(&body).unwrap().kind,
                Control::Stop
            );
            s.write_all(&control_frame(Control::Finish)).unwrap();
            return frames;
        }
        let mut f = vec![0u8; len];
        s.read_exact(&mut f).unwrap();
        frames.push(f);
    }
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn unix_socket_reader_late_then_present() {
    let dir = scratch("unix");
    let sock = dir.join("tap.sock");
    let tap = Dnstap::start(&Config::new(Sink::Unix(sock.clone()))).unwrap();
    // No reader yet: dropped, counted, never blocking.
    for i in 0..5u8 {
        tap.log(&event(&[i], Some(&[i]), 3000));
    }
    wait_until("no-reader drops", || tap.stats().dropped_no_reader == 10);
    let listener = UnixListener::bind(&sock).unwrap();
    let reader = std::thread::spawn(move || serve_reader(&listener));
    // Reconnect comes after the back-off (at most 2 s by then).
    let end = Instant::now() + Duration::from_secs(10);
    while tap.stats().logged == 0 && Instant::now() < end {
        tap.log(&event(b"probe", None, 3000));
        std::thread::sleep(Duration::from_millis(20));
    }
    for i in 0..20u8 {
        tap.log(&event(&[i, i], Some(&[i]), 3001));
    }
    let before = tap.stats();
    drop(tap);
    let frames = reader.join().unwrap();
    let logged_probe = before.logged;
    assert!(logged_probe >= 1);
    let decoded: Vec<proto::Dnstap> = frames
        .iter()
        .map(|f| proto::Dnstap::decode(&f[..]).unwrap())
        .collect();
    let tcp = decoded
        .iter()
        .filter(|d| d.message.as_ref().unwrap().socket_protocol == Some(2))
        .count();
    assert_eq!(tcp, 40);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_reader_that_never_reads_costs_drops_not_waits() {
    let dir = scratch("slow");
    let sock = dir.join("tap.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    let mut c = Config::new(Sink::Unix(sock.clone()));
    c.queue = 64;
    let tap = Dnstap::start(&c).unwrap();
    // Accepts, then never reads a byte.
    let hold = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        read_control(&mut s).unwrap();
        s.write_all(&control_frame(Control::Accept)).unwrap();
        std::thread::sleep(Duration::from_secs(4));
        drop(s);
    });
    let big = vec![0xabu8; 4000];
    // For about a second, so that the writer has more to write than any
    // socket buffer holds (4 MiB when a benchmark raised the machine's
    // defaults): it must block, then fail, whatever the buffer. Only the
    // time inside log() is counted.
    let mut spent = Duration::ZERO;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(1) {
        let t = Instant::now();
        for _ in 0..100 {
            tap.log(&event(&big, Some(&big), 4000));
        }
        spent += t.elapsed();
        std::thread::sleep(Duration::from_millis(1));
    }
    let s = tap.stats();
    assert!(s.dropped_queue_full > 0, "{s:?}");
    assert!(spent < Duration::from_secs(2), "log() waited: {spent:?}");
    hold.join().unwrap();
    // The reader went away: the writer notices (timeout or EPIPE), counts,
    // and close() does not hang.
    let t1 = Instant::now();
    tap.close();
    assert!(t1.elapsed() < Duration::from_secs(10));
    let s = tap.stats();
    assert!(s.write_errors + s.dropped_no_reader > 0, "{s:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
