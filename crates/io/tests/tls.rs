//! DNS over TLS at the transport: a handshake, then the framing of TCP; the
//! server authenticated by pin; a certificate replaced while a connection
//! stays open; the I/O timeouts also over TLS; a stalled handshake closed.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use lode_io::tls::{Credentials, ServerAuth, TlsClient, TlsServer, ALPN_DOT};
use lode_io::{Client, StreamReply, TcpConfig, TcpServer};

fn echo(q: &[u8], out: &mut [u8], client: &mut Client<'_>) -> StreamReply {
    let tag: &[u8] = if client.is_encrypted() {
        b"tls:"
    } else {
        b"tcp:"
    };
    out[..4].copy_from_slice(tag);
    out[4..4 + q.len()].copy_from_slice(q);
    StreamReply {
        len: 4 + q.len(),
        close: false,
    }
}

fn frame(m: &[u8]) -> Vec<u8> {
    let mut v = (m.len() as u16).to_be_bytes().to_vec();
    v.extend_from_slice(m);
    v
}

fn ask(s: &mut impl ReadWrite, m: &[u8]) -> Vec<u8> {
    s.write_all(&frame(m)).unwrap();
    s.flush().unwrap();
    let mut len = [0u8; 2];
    s.read_exact(&mut len).unwrap();
    let mut out = vec![0; u16::from_be_bytes(len) as usize];
    s.read_exact(&mut out).unwrap();
    out
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

fn connect(addr: SocketAddr, client: &TlsClient) -> std::io::Result<lode_io::tls::ClientStream> {
    let tcp = TcpStream::connect(addr)?;
    tcp.set_read_timeout(Some(Duration::from_secs(5)))?;
    client.connect(tcp, "ns.example")
}

#[test]
fn dot_answers_pins_and_rotates() {
    let names = vec!["ns.example".to_string()];
    let first = Credentials::ephemeral(&names).unwrap();
    let second = Credentials::ephemeral(&names).unwrap();
    let tls = TlsServer::new(&first, &[ALPN_DOT], false, false).unwrap();
    let addr: SocketAddr = "127.0.0.1:15431".parse().unwrap();
    let config = TcpConfig {
        threads: 1,
        tls: Some(tls.clone()),
        ..TcpConfig::default()
    };
    let server = TcpServer::start(&[addr], &config, echo).unwrap();

    let pinned = |c: &Credentials| {
        TlsClient::new(
            ServerAuth::Pins(vec![c.pin().to_string()]),
            &[ALPN_DOT],
            None,
        )
        .unwrap()
    };
    let mut kept = connect(addr, &pinned(&first)).unwrap();
    assert_eq!(kept.conn.alpn_protocol(), Some(ALPN_DOT));
    assert_eq!(ask(&mut kept, b"one"), b"tls:one");
    assert_eq!(ask(&mut kept, b"two"), b"tls:two");
    // A wrong pin: no connection.
    assert!(connect(addr, &pinned(&second)).is_err());

    // Rotation: new handshakes get the new certificate, the open
    // connection goes on.
    tls.replace(&second);
    assert!(connect(addr, &pinned(&first)).is_err());
    let mut fresh = connect(addr, &pinned(&second)).unwrap();
    assert_eq!(ask(&mut fresh, b"new"), b"tls:new");
    assert_eq!(ask(&mut kept, b"three"), b"tls:three");

    // Plain TCP to the TLS port: a failed handshake, counted.
    let mut plain = TcpStream::connect(addr).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    plain.write_all(&frame(b"plain")).unwrap();
    let mut rest = Vec::new();
    let _ = plain.read_to_end(&mut rest);
    assert!(!rest.windows(5).any(|w| w == b"plain"), "answered in clear");
    std::thread::sleep(Duration::from_millis(100));
    let stats = server.stats();
    assert!(stats.handshake_failed >= 3, "{stats:?}");
    assert_eq!(stats.queries, 4, "{stats:?}");
    server.stop();
}

#[test]
fn a_stalled_handshake_is_closed() {
    let creds = Credentials::ephemeral(&["ns.example".to_string()]).unwrap();
    let addr: SocketAddr = "127.0.0.1:15432".parse().unwrap();
    let config = TcpConfig {
        threads: 1,
        tls: Some(TlsServer::new(&creds, &[ALPN_DOT], false, false).unwrap()),
        handshake_timeout: Duration::from_millis(200),
        ..TcpConfig::default()
    };
    let server = TcpServer::start(&[addr], &config, echo).unwrap();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // Half a ClientHello's record header, then nothing.
    s.write_all(&[0x16, 0x03]).unwrap();
    let start = std::time::Instant::now();
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "closed without an answer");
    assert!(start.elapsed() < Duration::from_secs(3));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(server.stats().handshake_timeout, 1);
    server.stop();
}
