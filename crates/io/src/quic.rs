//! DNS over QUIC (RFC 9250) on quinn: one bidirectional stream per query,
//! its message framed as over TCP (2-byte length), the answer on the same
//! stream; zone transfers and deferred answers (UPDATE) as several messages
//! on their stream.
//!
//! ```text
//!  UDP socket ─▶ quinn endpoint ─▶ incoming: over max_clients? refuse
//!                                            over half of it and address not validated? Retry
//!                                 ─▶ connection task ─▶ stream task per query (at most
//!                                    max_streams open per connection):
//!                                    read length + message (ID must be 0) ─▶ handler ─▶
//!                                    answer (+ late messages) ─▶ finish the stream
//! ```
//!
//! Limits, after Knot DNS (`quic-max-clients`, `quic-idle-close-timeout`):
//! connections at once (a new one past the limit is refused), streams open
//! per connection (flow control: the client cannot open more), the idle
//! timeout of a connection, and a message must arrive whole within the I/O
//! timeout once its stream is open. While more than half of the connections
//! are in use, a client must prove its address first (a Retry token), so a
//! flood of spoofed Initial packets costs one packet each.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use quinn::crypto::rustls::QuicServerConfig;
use tokio::time::timeout;

use crate::later::{Late, LateQueue};
use crate::{Client, IoError, StreamHandler};

/// ALPN of DNS over QUIC (RFC 9250).
pub const ALPN_DOQ: &[u8] = b"doq";

/// Largest DNS message.
const MAX_MESSAGE: usize = 65535;

/// DOQ_PROTOCOL_ERROR (RFC 9250 §4.3): a query with a non-zero ID.
const DOQ_PROTOCOL_ERROR: u32 = 0x2;

/// Settings of the QUIC transport.
#[derive(Debug, Clone)]
pub struct QuicConfig {
    /// Connections at once (Knot's `quic-max-clients`).
    pub max_clients: usize,
    /// Streams (queries) open at once per connection.
    pub max_streams: u32,
    /// A connection idle this long is closed (Knot's
    /// `quic-idle-close-timeout`).
    pub idle_timeout: Duration,
    /// Time for a query to arrive whole once its stream is open.
    pub io_timeout: Duration,
    /// Event-loop threads.
    pub threads: usize,
    /// The TLS side (ALPN `doq`, TLS 1.3).
    pub tls: crate::tls::TlsServer,
}

/// Totals of the QUIC transport.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QuicStats {
    /// Connections established.
    pub connections: u64,
    /// Connections open now.
    pub open: u64,
    /// New connections refused: `max_clients` open.
    pub refused: u64,
    /// Retry packets sent (address validation while crowded).
    pub retries: u64,
    /// Handshakes that failed or connections closed with an error.
    pub failed: u64,
    /// Messages received.
    pub queries: u64,
    /// Messages sent.
    pub responses: u64,
    /// Messages not answered (dropped, or not whole in time).
    pub dropped: u64,
}

#[derive(Debug, Default)]
struct Counters {
    connections: AtomicU64,
    open: AtomicUsize,
    refused: AtomicU64,
    retries: AtomicU64,
    failed: AtomicU64,
    queries: AtomicU64,
    responses: AtomicU64,
    dropped: AtomicU64,
}

/// A shared, read-only view of the QUIC counters.
#[derive(Debug, Clone)]
pub struct QuicCounters(Arc<Counters>);

impl QuicCounters {
    /// Current totals.
    pub fn read(&self) -> QuicStats {
        let c = &self.0;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        QuicStats {
            connections: get(&c.connections),
            open: c.open.load(Ordering::Relaxed) as u64,
            refused: get(&c.refused),
            retries: get(&c.retries),
            failed: get(&c.failed),
            queries: get(&c.queries),
            responses: get(&c.responses),
            dropped: get(&c.dropped),
        }
    }
}

/// A running QUIC transport on its own event loop; stops on `stop` or drop.
#[derive(Debug)]
pub struct QuicServer {
    runtime: crate::EventLoop,
    counters: Arc<Counters>,
    local_addrs: Vec<SocketAddr>,
}

impl QuicServer {
    /// Binds every address (UDP) and serves DNS over QUIC with clones of
    /// `handler`.
    pub fn start<H: StreamHandler>(
        addrs: &[SocketAddr],
        config: &QuicConfig,
        handler: H,
    ) -> Result<QuicServer, IoError> {
        let event_loop = crate::EventLoop::start(config.threads, "lode-quic", 0)?;
        let runtime = event_loop.handle();
        let server_config = server_config(config).map_err(IoError::Thread)?;
        let counters = Arc::new(Counters::default());
        let mut local_addrs = Vec::new();
        for &addr in addrs {
            let endpoint = {
                let _guard = runtime.enter();
                quinn::Endpoint::server(server_config.clone(), addr)
                    .map_err(|e| IoError::Bind { addr, source: e })?
            };
            let local = endpoint.local_addr().unwrap_or(addr);
            tracing::info!(
                "quic {local}: idle timeout {:?}, at most {} clients, {} streams each",
                config.idle_timeout,
                config.max_clients,
                config.max_streams
            );
            runtime.spawn(accept_loop(
                endpoint,
                config.clone(),
                handler.clone(),
                counters.clone(),
            ));
            local_addrs.push(local);
        }
        Ok(QuicServer {
            runtime: event_loop,
            counters,
            local_addrs,
        })
    }

    /// The bound addresses (with ports resolved).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// A handle on the counters.
    pub fn counters(&self) -> QuicCounters {
        QuicCounters(self.counters.clone())
    }

    /// Current totals.
    pub fn stats(&self) -> QuicStats {
        self.counters().read()
    }

    /// Closes the endpoints and every connection.
    pub fn stop(self) {
        drop(self.runtime);
    }
}

/// quinn's server configuration: the TLS side, the limits per connection.
fn server_config(config: &QuicConfig) -> Result<quinn::ServerConfig, String> {
    let crypto = QuicServerConfig::try_from(config.tls.config())
        .map_err(|e| format!("QUIC needs TLS 1.3: {e}"))?;
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(quinn::VarInt::from_u32(config.max_streams.max(1)))
        .max_concurrent_uni_streams(quinn::VarInt::from_u32(0))
        .max_idle_timeout(Some(
            quinn::IdleTimeout::try_from(config.idle_timeout).map_err(|e| e.to_string())?,
        ));
    server.transport_config(Arc::new(transport));
    Ok(server)
}

async fn accept_loop<H: StreamHandler>(
    endpoint: quinn::Endpoint,
    config: QuicConfig,
    handler: H,
    counters: Arc<Counters>,
) {
    let local = endpoint.local_addr().ok();
    while let Some(incoming) = endpoint.accept().await {
        let open = counters.open.load(Ordering::Relaxed);
        if open >= config.max_clients {
            counters.refused.fetch_add(1, Ordering::Relaxed);
            incoming.refuse();
            continue;
        }
        if open * 2 >= config.max_clients && !incoming.remote_address_validated() {
            counters.retries.fetch_add(1, Ordering::Relaxed);
            let _ = incoming.retry();
            continue;
        }
        let Ok(connecting) = incoming.accept() else {
            counters.failed.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        let handler = handler.clone();
        let counters = counters.clone();
        let io = config.io_timeout;
        counters.open.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            match connecting.await {
                Ok(conn) => {
                    counters.connections.fetch_add(1, Ordering::Relaxed);
                    serve_connection(conn, local, handler, io, &counters).await;
                }
                Err(e) => {
                    counters.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!("quic: handshake failed: {e}");
                }
            }
            counters.open.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

async fn serve_connection<H: StreamHandler>(
    conn: quinn::Connection,
    local: Option<SocketAddr>,
    handler: H,
    io: Duration,
    counters: &Arc<Counters>,
) {
    let peer = conn.remote_address();
    loop {
        let (send, recv) = match conn.accept_bi().await {
            Ok(s) => s,
            Err(quinn::ConnectionError::ApplicationClosed(_))
            | Err(quinn::ConnectionError::TimedOut)
            | Err(quinn::ConnectionError::LocallyClosed) => return,
            Err(e) => {
                tracing::debug!("quic {peer}: {e}");
                return;
            }
        };
        let handler = handler.clone();
        let counters = counters.clone();
        let conn = conn.clone();
        tokio::spawn(async move {
            serve_stream(send, recv, &conn, peer, local, handler, io, &counters).await;
        });
    }
}

thread_local! {
    /// Response scratch of one event-loop thread (a handler call never yields).
    static SCRATCH: RefCell<Vec<u8>> = RefCell::new(vec![0; MAX_MESSAGE]);
}

/// One query on its stream: read it, answer it (and what comes later), finish.
#[allow(clippy::too_many_arguments)]
async fn serve_stream<H: StreamHandler>(
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
    conn: &quinn::Connection,
    peer: SocketAddr,
    local: Option<SocketAddr>,
    mut handler: H,
    io: Duration,
    counters: &Counters,
) {
    let read = async {
        let mut len = [0u8; 2];
        recv.read_exact(&mut len).await.ok()?;
        let mut query = vec![0u8; usize::from(u16::from_be_bytes(len))];
        recv.read_exact(&mut query).await.ok()?;
        Some(query)
    };
    let Ok(Some(query)) = timeout(io, read).await else {
        counters.dropped.fetch_add(1, Ordering::Relaxed);
        let _ = send.reset(quinn::VarInt::from_u32(DOQ_PROTOCOL_ERROR));
        return;
    };
    counters.queries.fetch_add(1, Ordering::Relaxed);
    // RFC 9250 §4.2.1: the ID of a query over QUIC is 0; anything else
    // is a protocol error that closes the connection.
    if query.len() >= 2 && (query[0] != 0 || query[1] != 0) {
        counters.dropped.fetch_add(1, Ordering::Relaxed);
        conn.close(
            quinn::VarInt::from_u32(DOQ_PROTOCOL_ERROR),
            b"query ID not 0",
        );
        return;
    }
    let (late_tx, mut late_rx) = tokio::sync::mpsc::unbounded_channel::<Late>();
    let queue = LateQueue {
        tx: late_tx,
        queued: Arc::default(),
    };
    let (answer, deferred) = SCRATCH.with(|s| {
        let mut out = s.borrow_mut();
        let mut client = Client::quic(peer, local, &queue);
        let reply = handler(&query, &mut out[..], &mut client);
        let n = reply.len.min(MAX_MESSAGE);
        let mut framed = Vec::with_capacity(n + 2);
        if n > 0 {
            framed.extend_from_slice(&(n as u16).to_be_bytes());
            framed.extend_from_slice(&out[..n]);
        }
        (framed, client.is_deferred())
    });
    if !answer.is_empty() {
        if send.write_all(&answer).await.is_err() {
            return;
        }
        counters.responses.fetch_add(1, Ordering::Relaxed);
    } else if !deferred {
        counters.dropped.fetch_add(1, Ordering::Relaxed);
        let _ = send.reset(quinn::VarInt::from_u32(0));
        return;
    }
    if deferred {
        // Late messages (an UPDATE's answer, a transfer's messages) on
        // this stream until the handler's side says it is done.
        while let Some(late) = late_rx.recv().await {
            match late {
                Late::Framed(framed) => {
                    queue
                        .queued
                        .fetch_sub(framed.len().saturating_sub(2), Ordering::AcqRel);
                    if send.write_all(&framed).await.is_err() {
                        return;
                    }
                    counters.responses.fetch_add(1, Ordering::Relaxed);
                }
                Late::Done => break,
            }
        }
    }
    let _ = send.finish();
    // Wait until the peer has the data (or gave up), so that dropping the
    // stream does not cut the answer short.
    let _ = timeout(io.max(Duration::from_secs(1)), send.stopped()).await;
}
