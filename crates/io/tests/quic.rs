//! DNS over QUIC at the transport: a query per stream (ID 0), its answer on
//! the same stream, several late messages on one stream (a transfer, an
//! UPDATE's answer), and a query with another ID closes the connection
//! (RFC 9250 §4.2.1).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use lode_io::quic::ALPN_DOQ;
use lode_io::tls::{Credentials, ServerAuth, TlsClient, TlsServer};
use lode_io::{Client, Protocol, QuicConfig, QuicServer, StreamReply};

/// Echoes with the protocol's name; "stream" is answered by three late
/// messages from another thread.
fn handler(q: &[u8], out: &mut [u8], client: &mut Client<'_>) -> StreamReply {
    if q.ends_with(b"stream") {
        let mut later = client.defer();
        std::thread::spawn(move || {
            for m in [&b"\0\0one"[..], b"\0\0two", b"\0\0three"] {
                later.push(m);
            }
        });
        return StreamReply {
            len: 0,
            close: false,
        };
    }
    assert_eq!(client.protocol(), Protocol::Quic);
    assert!(client.is_encrypted());
    out[..q.len()].copy_from_slice(q);
    StreamReply {
        len: q.len(),
        close: false,
    }
}

fn framed(m: &[u8]) -> Vec<u8> {
    let mut v = (m.len() as u16).to_be_bytes().to_vec();
    v.extend_from_slice(m);
    v
}

/// Sends `m` on a new stream and reads every framed message back until the
/// server finishes the stream.
async fn ask(conn: &quinn::Connection, m: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let (mut send, mut recv) = conn.open_bi().await.map_err(|e| e.to_string())?;
    send.write_all(&framed(m))
        .await
        .map_err(|e| e.to_string())?;
    send.finish().map_err(|e| e.to_string())?;
    let all = recv.read_to_end(1 << 20).await.map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut rest = &all[..];
    while rest.len() >= 2 {
        let n = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        out.push(rest[2..2 + n].to_vec());
        rest = &rest[2 + n..];
    }
    Ok(out)
}

#[test]
fn doq_streams_late_messages_and_the_id_rule() {
    let creds = Credentials::ephemeral(&["ns.example".to_string()]).unwrap();
    let tls = TlsServer::new(&creds, &[ALPN_DOQ], false, false).unwrap();
    let addr: SocketAddr = "127.0.0.1:15433".parse().unwrap();
    let config = QuicConfig {
        max_clients: 10,
        max_streams: 10,
        idle_timeout: Duration::from_secs(5),
        io_timeout: Duration::from_secs(1),
        threads: 1,
        tls,
    };
    let server = QuicServer::start(&[addr], &config, handler).unwrap();
    let client = TlsClient::new(
        ServerAuth::Pins(vec![creds.pin().to_string()]),
        &[ALPN_DOQ],
        None,
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(client.config()).unwrap();
        let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
        let conn = endpoint
            .connect(addr, "ns.example")
            .unwrap()
            .await
            .expect("QUIC handshake");
        assert_eq!(ask(&conn, b"\0\0hello").await.unwrap(), vec![b"\0\0hello".to_vec()]);
        // Several queries at once, each on its stream.
        let (a, b) = tokio::join!(ask(&conn, b"\0\0a"), ask(&conn, b"\0\0b"));
        assert_eq!((a.unwrap(), b.unwrap()), (vec![b"\0\0a".to_vec()], vec![b"\0\0b".to_vec()]));
        // Late messages, all on the query's stream.
        let late = ask(&conn, b"\0\0stream").await.unwrap();
        assert_eq!(late, vec![b"\0\0one".to_vec(), b"\0\0two".to_vec(), b"\0\0three".to_vec()]);
        // A query whose ID is not 0: the connection is closed.
        let _ = ask(&conn, b"\x12\x34bad").await;
        let closed = conn.closed().await;
        assert!(
            matches!(&closed, quinn::ConnectionError::ApplicationClosed(c) if c.error_code == quinn::VarInt::from_u32(2)),
            "{closed:?}"
        );
        endpoint.wait_idle().await;
    });
    let stats = server.stats();
    assert_eq!(stats.connections, 1, "{stats:?}");
    assert_eq!(stats.responses, 6, "{stats:?}");
    server.stop();
}
