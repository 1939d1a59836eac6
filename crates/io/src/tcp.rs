//! TCP per RFC 7766: 2-byte length-prefixed messages, several per connection,
//! pipelined (each answered as soon as it is read, responses in order), and
//! guarded against clients that hold connections without using them.
//!
//! ```text
//!  accept ─▶ registry: source at its limit? close its idlest connection
//!                      full? close the idlest connection(s)
//!                      (only ones owing no reply; none? refuse the new one)
//!         ─▶ connection task
//!     loop: answer complete frames (until 16 KiB of replies) ─▶ write them
//!           (past the I/O timeout stalled and closable as idle), again while frames remain
//!           wait: more bytes, a deferred reply, or the registry's cancel, until
//!             the idle deadline (reset only by a complete frame) or, with part
//!             of a message read, its I/O deadline
//!  sweeper (every 100 ms): over 3/4 full? close connections idle for the
//!           short timeout; summarise the log lines held back
//! ```
//!
//! Timeouts, after Knot DNS (`tcp-idle-timeout`, `tcp-io-timeout`) and NSD:
//! - [`TcpConfig::idle_timeout`] (10 s): no complete message for so long
//!   closes the connection; partial data never extends it.
//! - [`TcpConfig::io_timeout`] (500 ms): once the first byte of a message has
//!   arrived the whole message must arrive within it (Knot: "time to receive
//!   or send one message, measured since data is available"): a slow sender
//!   loses its slot within it. Replies the client does not read stall the
//!   connection instead — nothing more is read from it, so a pipelining
//!   flooder's own writes block — for up to the idle timeout per 64 KiB;
//!   past the I/O timeout a stalled connection of plain replies counts as
//!   idle (closed for a new client, under pressure, or for its source's
//!   limit). Closing it at the I/O timeout, as before, let a flooder
//!   reconnect with empty buffers and push again (the attack benchmark's abuse mix).
//!   Deferred replies and streams (transfers) may wait for the reader up to
//!   the idle timeout without counting as idle, as a secondary pausing in a
//!   transfer must not lose it.
//! - [`TcpConfig::pressure_idle_timeout`] (1 s): while more than 3/4 of
//!   `max_clients` are open, connections idle this long are closed. NSD gives
//!   new connections 200 ms once half full; Knot has no such mode and, when
//!   full, leaves new clients in the kernel's queue until its 2-second sweep
//!   closes connections past the idle timeout.
//! - When full, the idlest connection (longest since its last complete
//!   message) is closed for the new one, never one owing a deferred reply or
//!   writing one; only if none can be closed is the new client refused.
//! - [`TcpConfig::max_clients_per_source`] (default `max(max_clients / 10,
//!   128)`): a new connection from an IPv4 address or IPv6 /64 holding that
//!   many closes that source's own idlest connection, or is refused when all
//!   of them owe replies. One source thus never holds more than its share,
//!   and a client behind the same address (NAT) still gets in. Knot and NSD
//!   have no such limit (BIND only `tcp-clients`); dnsdist
//!   (`maxTCPConnectionsPerClient`) and Unbound (`tcp-connection-limit`)
//!   refuse the new connection instead.
//!
//! Memory, per connection: idle, about 8 KiB (measured 7.3 KiB: the 4 KiB
//! read buffer, the task with its timers, its reply channel, its registry
//! entry). The read buffer grows to one whole message at most (65,537 bytes)
//! and nothing more is read while replies wait to be written; replies are
//! written every 16 KiB, so at most 16 KiB + 65,537 bytes wait (a batch goes
//! over by one reply at most). So a connection holds at most ~150 KiB, and
//! all of them `max_clients` × 150 KiB (~147 MiB at the default 1,000; 8 MiB
//! when they are idle), plus one 64 KiB response scratch per event-loop
//! thread. Kernel socket buffers are not counted.
//! Deferred replies come on top: a stream (zone transfer) queues at most
//! [`crate::STREAM_QUEUE_BYTES`] + one message per connection; deferred
//! single replies (UPDATE) are bounded by the handler, not here.

use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{timeout, timeout_at, Instant};

use crate::later::{Late, LateQueue};
use crate::{Client, IoError, StreamHandler};

mod guard;

use guard::{Admission, Conn, Reason, Registered, Registry};

/// Largest DNS message over TCP.
pub const MAX_MESSAGE: usize = 65535;

/// Replies gathered before they are written (the reading of further
/// queries waits for the write).
const OUT_BATCH: usize = 16 * 1024;
/// Most bytes written under one I/O deadline: a largest message and its prefix.
const WRITE_CHUNK: usize = MAX_MESSAGE + 2;
/// Read buffer of a connection whose messages are small.
const SMALL_BUFFER: usize = 4096;
/// How often the sweeper looks for crowding and flushes the log summary.
const SWEEP_INTERVAL: Duration = Duration::from_millis(100);

/// Default time for a TLS handshake to complete.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(3);

/// Settings of the TCP transport.
#[derive(Debug, Clone)]
pub struct TcpConfig {
    /// A connection with no complete query for this long is closed.
    pub idle_timeout: Duration,
    /// While more than 3/4 of `max_clients` are open, a connection with no
    /// complete query for this long is closed.
    pub pressure_idle_timeout: Duration,
    /// A message must arrive whole this long after its first byte, and each
    /// 64 KiB of replies be written within it; zero: no limit but the idle
    /// timeout.
    pub io_timeout: Duration,
    /// Connections open at once; when full, the idlest is closed for a new
    /// one, or the new one refused when none is idle.
    pub max_clients: usize,
    /// Connections open at once from one IPv4 address or IPv6 /64 (beyond
    /// it a new one closes the source's idlest); `None`: `max(max_clients /
    /// 10, 128)`.
    pub max_clients_per_source: Option<usize>,
    /// Event-loop threads.
    pub threads: usize,
    /// Scheduling priority (nice, 0..=19) of the event-loop threads: above 0,
    /// a TCP flood that keeps them busy leaves the CPU to the UDP workers
    /// (which answer most queries), and TCP gets what UDP leaves.
    pub nice: i32,
    /// Listen backlog.
    pub backlog: i32,
    /// TLS on every connection (DNS over TLS, RFC 7858): the handshake
    /// first, then the same framing, limits and handler as plain TCP.
    pub tls: Option<crate::tls::TlsServer>,
    /// Time for a TLS handshake to complete from the connection's accept;
    /// a connection still in its handshake counts as idle for eviction.
    pub handshake_timeout: Duration,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            idle_timeout: Duration::from_secs(10),
            pressure_idle_timeout: Duration::from_secs(1),
            io_timeout: Duration::from_millis(500),
            max_clients: 1000,
            max_clients_per_source: None,
            threads: 1,
            nice: 0,
            backlog: 1024,
            tls: None,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
        }
    }
}

impl TcpConfig {
    /// "tcp: idle timeout …, at most N clients, M per source" (for the logs).
    fn limits_text(&self) -> String {
        format!(
            "{}: idle timeout {:?} ({:?} when crowded), I/O timeout {:?}, at most {} clients, \
             {} per source",
            if self.tls.is_some() { "tls" } else { "tcp" },
            self.idle_timeout,
            self.pressure_idle_timeout,
            self.io_timeout,
            self.max_clients,
            self.per_source_limit()
        )
    }

    /// The per-source limit in force: the one set, or `max(max_clients / 10,
    /// 128)`, never above `max_clients` nor below 1.
    pub fn per_source_limit(&self) -> usize {
        let max = self.max_clients.max(1);
        self.max_clients_per_source
            .unwrap_or((max / 10).max(128))
            .clamp(1, max)
    }
}

/// Totals of the TCP transport.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpStats {
    /// Connections accepted and served.
    pub connections: u64,
    /// Connections closed at once: full, and no connection idle to close.
    pub refused: u64,
    /// Connections closed at once: their source was at its limit and none
    /// of its connections idle.
    pub refused_per_source: u64,
    /// Idle connections closed to accept a new one when full.
    pub closed_idle_for_new: u64,
    /// Idle connections closed to accept a new one from the same source,
    /// at its limit.
    pub closed_idle_same_source: u64,
    /// Connections closed after the short idle timeout, over 3/4 full.
    pub closed_idle_pressure: u64,
    /// Connections closed after the idle timeout.
    pub idle_timeout: u64,
    /// Connections closed because a message did not arrive whole within
    /// the I/O timeout.
    pub io_timeout: u64,
    /// Connections closed because their replies were not read within the
    /// idle timeout (stalled: nothing more is read from them meanwhile).
    pub write_timeout: u64,
    /// Times a connection's replies waited for the reader past the I/O
    /// timeout (the connection stalled, and could be closed as idle).
    pub write_stalled: u64,
    /// TLS handshakes that failed (bad client hello, no common version or
    /// ALPN, reset).
    pub handshake_failed: u64,
    /// TLS handshakes not complete within the handshake timeout.
    pub handshake_timeout: u64,
    /// Connections open now.
    pub open: u64,
    /// Messages received.
    pub queries: u64,
    /// Messages sent.
    pub responses: u64,
    /// Messages not answered (handler returned 0).
    pub dropped: u64,
}

#[derive(Debug, Default)]
struct Counters {
    connections: AtomicU64,
    refused: AtomicU64,
    refused_per_source: AtomicU64,
    closed_idle_for_new: AtomicU64,
    closed_idle_same_source: AtomicU64,
    closed_idle_pressure: AtomicU64,
    idle_timeout: AtomicU64,
    io_timeout: AtomicU64,
    write_timeout: AtomicU64,
    write_stalled: AtomicU64,
    handshake_failed: AtomicU64,
    handshake_timeout: AtomicU64,
    open: AtomicUsize,
    /// Messages, counted per event-loop thread.
    messages: Shards,
}

/// Message counters split in cache-line shards, one per event-loop thread
/// (threads take shards in turn on their first use), so that threads
/// answering at once never write the same line; a read sums them.
#[derive(Debug, Default)]
struct Shards([Shard; SHARDS]);

/// One thread's message counters.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard {
    queries: AtomicU64,
    responses: AtomicU64,
    dropped: AtomicU64,
}

/// More shards than the event-loop threads Lode starts.
const SHARDS: usize = 16;

static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static SHARD: usize = NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS;
}

impl Shards {
    /// This thread's shard.
    fn here(&self) -> &Shard {
        &self.0[SHARD.with(|s| *s)]
    }

    fn sum(&self, f: impl Fn(&Shard) -> &AtomicU64) -> u64 {
        self.0.iter().map(|s| f(s).load(Ordering::Relaxed)).sum()
    }
}

/// A shared, read-only view of the TCP counters.
#[derive(Debug, Clone)]
pub struct TcpCounters(Arc<Counters>);

impl TcpCounters {
    /// Current totals.
    pub fn read(&self) -> TcpStats {
        let c = &self.0;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TcpStats {
            connections: get(&c.connections),
            refused: get(&c.refused),
            refused_per_source: get(&c.refused_per_source),
            closed_idle_for_new: get(&c.closed_idle_for_new),
            closed_idle_same_source: get(&c.closed_idle_same_source),
            closed_idle_pressure: get(&c.closed_idle_pressure),
            idle_timeout: get(&c.idle_timeout),
            io_timeout: get(&c.io_timeout),
            write_timeout: get(&c.write_timeout),
            write_stalled: get(&c.write_stalled),
            handshake_failed: get(&c.handshake_failed),
            handshake_timeout: get(&c.handshake_timeout),
            open: c.open.load(Ordering::Relaxed) as u64,
            queries: c.messages.sum(|s| &s.queries),
            responses: c.messages.sum(|s| &s.responses),
            dropped: c.messages.sum(|s| &s.dropped),
        }
    }
}

/// A running TCP transport on its own event loop; stops on `stop` or drop.
#[derive(Debug)]
pub struct TcpServer {
    runtime: crate::EventLoop,
    counters: Arc<Counters>,
    local_addrs: Vec<SocketAddr>,
    registry: Arc<Registry>,
}

/// A handle that changes a running [`TcpServer`]'s limits (a reload).
#[derive(Debug, Clone)]
pub struct TcpLimits(Arc<Registry>);

impl TcpLimits {
    /// Takes `config`'s idle, I/O and handshake timeouts and client limits
    /// for what comes next: connections accepted from now on get the new
    /// timeouts; open ones keep theirs and are closed, idlest first, only
    /// as new ones need room.
    pub fn set(&self, config: &TcpConfig) {
        self.0.set_limits(config);
        tracing::info!("{} (from now on)", config.limits_text());
    }
}

impl TcpServer {
    /// Binds every address and serves connections with clones of `handler`
    /// (one clone per connection).
    pub fn start<H: StreamHandler>(
        addrs: &[SocketAddr],
        config: &TcpConfig,
        handler: H,
    ) -> Result<TcpServer, IoError> {
        let nice = config.nice;
        let event_loop = crate::EventLoop::start(config.threads, "lode-tcp", nice)?;
        let runtime = event_loop.handle();
        let counters = Arc::new(Counters::default());
        let registry = Arc::new(Registry::new(config, counters.clone()));
        let mut local_addrs = Vec::new();
        for &addr in addrs {
            let std_listener = bind(addr, config.backlog)?;
            let local = std_listener.local_addr().unwrap_or(addr);
            let listener = {
                let _guard = runtime.enter();
                TcpListener::from_std(std_listener)
                    .map_err(|e| IoError::Bind { addr, source: e })?
            };
            tracing::info!("{local}: {}", config.limits_text());
            runtime.spawn(accept_loop(
                listener,
                config.clone(),
                handler.clone(),
                registry.clone(),
            ));
            local_addrs.push(local);
        }
        runtime.spawn(sweeper(registry.clone()));
        Ok(TcpServer {
            runtime: event_loop,
            counters,
            local_addrs,
            registry,
        })
    }

    /// The bound addresses (with ports resolved).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// A handle that changes the limits while serving.
    pub fn limits(&self) -> TcpLimits {
        TcpLimits(self.registry.clone())
    }

    /// Current totals.
    pub fn stats(&self) -> TcpStats {
        self.counters().read()
    }

    /// A handle on the counters that outlives borrows of the server (for status reports).
    pub fn counters(&self) -> TcpCounters {
        TcpCounters(self.counters.clone())
    }

    /// Closes the listeners and every connection.
    pub fn stop(self) {
        drop(self.runtime);
    }
}

fn bind(addr: SocketAddr, backlog: i32) -> Result<std::net::TcpListener, IoError> {
    let err = |e: io::Error| IoError::Bind { addr, source: e };
    let socket =
        Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP)).map_err(err)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true).map_err(err)?;
    }
    socket.set_reuse_address(true).map_err(err)?;
    socket.bind(&addr.into()).map_err(err)?;
    socket.listen(backlog).map_err(err)?;
    socket.set_nonblocking(true).map_err(err)?;
    Ok(socket.into())
}

async fn accept_loop<H: StreamHandler>(
    listener: TcpListener,
    config: TcpConfig,
    handler: H,
    registry: Arc<Registry>,
) {
    let tls = config.tls.as_ref().map(crate::tls::TlsServer::acceptor);
    // A connection's local address is the listener's, but on a wildcard
    // bind (asked of the connection then: one getsockname per connection).
    let bound = listener.local_addr().ok();
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                // A refused connection is dropped here: closed at once.
                let Admission::Open(conn) = registry.admit(peer) else {
                    continue;
                };
                let (idle, io, handshake) = registry.timeouts();
                let limits = Limits { idle, io };
                let handler = handler.clone();
                let registered = Registered {
                    registry: registry.clone(),
                    conn,
                };
                let tls = tls.clone();
                tokio::spawn(async move {
                    let r = &registered;
                    let local = match bound {
                        Some(b) if b.ip().is_unspecified() => stream.local_addr().ok(),
                        b => b,
                    };
                    // Small answers dominate; send each batch at once.
                    let _ = stream.set_nodelay(true);
                    let end = match tls {
                        None => {
                            serve_connection(stream, peer, local, handler, limits, r, None).await
                        }
                        Some(acceptor) => match tls_handshake(acceptor, stream, handshake, r).await
                        {
                            Ok(s) => {
                                // The client's certificate, when it gave one: its pin.
                                let pin = s
                                    .get_ref()
                                    .1
                                    .peer_certificates()
                                    .and_then(|c| c.first())
                                    .and_then(|c| crate::tls::certificate_pin(c).ok());
                                let tls = Some(pin);
                                serve_connection(s, peer, local, handler, limits, r, tls).await
                            }
                            Err(e) => Err(e),
                        },
                    };
                    let counters = r.registry.counters();
                    match end {
                        Ok(()) | Err(ConnEnd::Evicted) => {}
                        Err(ConnEnd::Idle) => {
                            counters.idle_timeout.fetch_add(1, Ordering::Relaxed);
                            tracing::debug!("tcp {peer}: idle timeout, closed");
                        }
                        Err(ConnEnd::ReadTimeout) => {
                            r.registry.closed(Reason::ReadTimeout, peer, 0)
                        }
                        Err(ConnEnd::WriteTimeout) => {
                            r.registry.closed(Reason::WriteTimeout, peer, 0)
                        }
                        Err(ConnEnd::Io(e)) => tracing::debug!("tcp {peer}: {e}"),
                        Err(ConnEnd::Handshake(e)) => {
                            counters.handshake_failed.fetch_add(1, Ordering::Relaxed);
                            tracing::debug!("tls {peer}: handshake failed: {e}");
                        }
                        Err(ConnEnd::HandshakeTimeout) => {
                            counters.handshake_timeout.fetch_add(1, Ordering::Relaxed);
                            tracing::debug!("tls {peer}: handshake not complete in {handshake:?}");
                        }
                    }
                });
            }
            Err(e) => {
                // Out of descriptors and the like: log, pause, go on.
                tracing::warn!("tcp accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Closes idle connections while crowded and summarises held-back log lines,
/// every [`SWEEP_INTERVAL`] while there is either; parked otherwise.
async fn sweeper(registry: Arc<Registry>) {
    let mut tick = tokio::time::interval(SWEEP_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        if registry.nothing_to_sweep() {
            registry.sweep_wanted().await;
            tick.reset();
        }
        tick.tick().await;
        registry.sweep();
    }
}

thread_local! {
    /// Response scratch of one event-loop thread (a handler call never yields).
    static SCRATCH: RefCell<Vec<u8>> = RefCell::new(vec![0; MAX_MESSAGE]);
}

/// The timeouts a connection applies itself.
#[derive(Debug, Clone, Copy)]
struct Limits {
    idle: Duration,
    /// `None`: partial messages and writes wait as long as the idle timeout.
    io: Option<Duration>,
}

/// Why a connection ended early.
#[derive(Debug)]
enum ConnEnd {
    /// No complete message within the idle timeout.
    Idle,
    /// A message not whole within the I/O timeout.
    ReadTimeout,
    /// Replies not written within the I/O timeout.
    WriteTimeout,
    /// Closed by the registry (counted and logged there).
    Evicted,
    /// The TLS handshake failed.
    Handshake(io::Error),
    /// The TLS handshake did not complete in time.
    HandshakeTimeout,
    Io(io::Error),
}

/// The server side of a TLS handshake, within `limit`; the registry may
/// close the connection meanwhile (it counts as idle since its accept).
async fn tls_handshake(
    acceptor: tokio_rustls::TlsAcceptor,
    stream: TcpStream,
    limit: Duration,
    registered: &Registered,
) -> Result<tokio_rustls::server::TlsStream<TcpStream>, ConnEnd> {
    tokio::select! {
        _ = registered.conn.cancel.notified() => Err(ConnEnd::Evicted),
        done = timeout(limit, acceptor.accept(stream)) => match done {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(ConnEnd::Handshake(e)),
            Err(_) => Err(ConnEnd::HandshakeTimeout),
        },
    }
}

/// True when `buf` holds a whole message.
fn has_frame(buf: &[u8]) -> bool {
    buf.len() >= 2 && buf.len() >= 2 + u16::from_be_bytes([buf[0], buf[1]]) as usize
}

/// Writes `data`, each [`WRITE_CHUNK`] within `limit` (flushed: TLS holds
/// what the socket did not take).
async fn write_out<S: AsyncWrite + Unpin>(
    stream: &mut S,
    data: &[u8],
    limit: Duration,
) -> Result<(), ConnEnd> {
    for chunk in data.chunks(WRITE_CHUNK) {
        let write = async {
            stream.write_all(chunk).await?;
            stream.flush().await
        };
        match timeout(limit, write).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(ConnEnd::Io(e)),
            Err(_) => return Err(ConnEnd::WriteTimeout),
        }
    }
    Ok(())
}

async fn serve_connection<S: AsyncRead + AsyncWrite + Unpin, H: StreamHandler>(
    mut stream: S,
    peer: SocketAddr,
    local: Option<SocketAddr>,
    mut handler: H,
    limits: Limits,
    registered: &Registered,
    tls: Option<Option<String>>,
) -> Result<(), ConnEnd> {
    let registry: &Registry = &registered.registry;
    let conn: &Conn = &registered.conn;
    let counters = registry.counters();
    let write_limit = limits.io.unwrap_or(limits.idle);
    let mut buf: Vec<u8> = vec![0; SMALL_BUFFER];
    let (mut start, mut end) = (0usize, 0usize);
    let mut pending: Vec<u8> = Vec::new();
    let mut deadline = Instant::now() + limits.idle;
    // Time of the last complete message (ms since the server started), and
    // when the first byte of the incomplete message in `buf` arrived.
    let mut last_ms = registry.ms(std::time::Instant::now());
    let mut partial_since: Option<Instant> = None;
    // The last read began a new message (the buffer was empty), or a
    // message was completed since: the bytes left are a new message.
    let mut new_message = false;
    // Replies sent after the handler returned (deferred UPDATE answers,
    // streams), and how many deferred replies are still to come: the
    // connection stays open for them, even after the client's end of file.
    let (late_tx, mut late_rx) = tokio::sync::mpsc::unbounded_channel::<Late>();
    let late_tx = LateQueue {
        tx: late_tx,
        queued: Arc::default(),
    };
    // Bytes of late messages in `pending`, released once written.
    let mut late_bytes = 0usize;
    let mut outstanding = 0usize;
    let mut eof = false;
    loop {
        // Answer the complete messages in the buffer, writing the replies
        // every OUT_BATCH bytes: nothing more is read until they are out.
        let mut close = false;
        loop {
            let (mut queries, mut responses, mut dropped) = (0u64, 0u64, 0u64);
            while !close && pending.len() < OUT_BATCH && has_frame(&buf[start..end]) {
                let len = u16::from_be_bytes([buf[start], buf[start + 1]]) as usize;
                let query = &buf[start + 2..start + 2 + len];
                queries += 1;
                SCRATCH.with(|s| {
                    let mut out = s.borrow_mut();
                    let mut client =
                        Client::tcp(peer, local, &late_tx, tls.as_ref().map(Option::as_deref));
                    let reply = handler(query, &mut out[..], &mut client);
                    close = reply.close;
                    let n = reply.len.min(MAX_MESSAGE);
                    if client.is_deferred() {
                        outstanding += 1;
                    }
                    if n == 0 {
                        if !client.is_deferred() {
                            dropped += 1;
                        }
                    } else {
                        pending.extend_from_slice(&(n as u16).to_be_bytes());
                        pending.extend_from_slice(&out[..n]);
                        responses += 1;
                    }
                });
                start += 2 + len;
            }
            if queries > 0 {
                let now = std::time::Instant::now();
                deadline = Instant::from_std(now) + limits.idle;
                last_ms = registry.ms(now);
                new_message = true;
                let shard = counters.messages.here();
                shard.queries.fetch_add(queries, Ordering::Relaxed);
                shard.responses.fetch_add(responses, Ordering::Relaxed);
                shard.dropped.fetch_add(dropped, Ordering::Relaxed);
            }
            if !pending.is_empty() {
                // Replies the client does not read stall the connection
                // (nothing more is read from it) for up to the idle timeout
                // per 64 KiB; past the I/O timeout a stalled connection of
                // plain replies may be closed for a new client or under
                // pressure, as an idle one. Closing it at once instead made a
                // flooder reconnect with empty buffers and push again.
                {
                    let plain = outstanding == 0 && late_bytes == 0;
                    let write = write_out(&mut stream, &pending, limits.idle);
                    tokio::pin!(write);
                    let first = if plain {
                        timeout(write_limit, &mut write).await.ok()
                    } else {
                        Some(write.as_mut().await)
                    };
                    match first {
                        Some(done) => done?,
                        None => {
                            counters.write_stalled.fetch_add(1, Ordering::Relaxed);
                            conn.end_work(last_ms);
                            tokio::select! {
                                _ = conn.cancel.notified() => return Err(ConnEnd::Evicted),
                                done = &mut write => done?,
                            }
                            if !conn.begin_work() {
                                return Err(ConnEnd::Evicted);
                            }
                        }
                    }
                }
                pending.clear();
                if late_bytes > 0 {
                    late_tx.queued.fetch_sub(late_bytes, Ordering::AcqRel);
                    late_bytes = 0;
                }
                if pending.capacity() > WRITE_CHUNK + OUT_BATCH {
                    pending.shrink_to(OUT_BATCH);
                }
            }
            if close || !has_frame(&buf[start..end]) {
                break;
            }
        }
        if close || (eof && outstanding == 0) {
            return Ok(());
        }
        // Keep the unread tail at the front and room for a whole message
        // (the buffer holds at most one, incomplete).
        if start > 0 {
            buf.copy_within(start..end, 0);
            end -= start;
            start = 0;
        }
        let need = if end >= 2 {
            2 + u16::from_be_bytes([buf[0], buf[1]]) as usize
        } else {
            2
        };
        if buf.len() < need {
            buf.resize(need.max(SMALL_BUFFER), 0);
        } else if buf.len() > SMALL_BUFFER && end <= SMALL_BUFFER && need <= SMALL_BUFFER {
            buf.truncate(SMALL_BUFFER);
            buf.shrink_to_fit();
        }
        if end == 0 {
            partial_since = None;
        } else if new_message || partial_since.is_none() {
            partial_since = Some(Instant::now());
        }
        new_message = false;
        // Idle now, unless deferred replies are owed: the registry may
        // close the connection from here on.
        if outstanding == 0 {
            conn.end_work(last_ms);
        }
        // While deferred replies are outstanding the idle timer waits.
        let idle_until = if outstanding > 0 {
            Instant::now() + LATE_REPLY_WAIT
        } else {
            deadline
        };
        let (wait_until, slow) = match partial_since.zip(limits.io) {
            Some((since, io)) if since + io < idle_until => (since + io, true),
            _ => (idle_until, false),
        };
        let timed_out = || {
            if slow {
                ConnEnd::ReadTimeout
            } else {
                ConnEnd::Idle
            }
        };
        tokio::select! {
            _ = conn.cancel.notified() => return Err(ConnEnd::Evicted),
            read = timeout_at(wait_until, stream.read(&mut buf[end..])), if !eof => {
                match read {
                    Ok(Ok(0)) => eof = true,
                    Ok(Ok(n)) => {
                        new_message = end == 0;
                        end += n;
                    }
                    Ok(Err(e)) => return Err(ConnEnd::Io(e)),
                    Err(_) => return Err(timed_out()),
                }
            }
            late = late_rx.recv() => {
                // late_tx lives here, so the channel never reports closed.
                let mut next = late;
                while let Some(l) = next {
                    match l {
                        Late::Framed(m) => {
                            late_bytes += m.len().saturating_sub(2);
                            if pending.is_empty() {
                                // Written from the buffer it came in.
                                pending = m;
                            } else {
                                pending.extend_from_slice(&m);
                            }
                            counters.messages.here().responses.fetch_add(1, Ordering::Relaxed);
                        }
                        Late::Done => outstanding = outstanding.saturating_sub(1),
                    }
                    // A stream's messages go out a batch at a time: the
                    // buffer stays below the size glibc maps and unmaps
                    // (and below the shrink above), not ~1 MiB per round.
                    if pending.len() >= OUT_BATCH {
                        break;
                    }
                    next = late_rx.try_recv().ok();
                }
                if outstanding == 0 {
                    let now = std::time::Instant::now();
                    deadline = Instant::from_std(now) + limits.idle;
                    last_ms = registry.ms(now);
                }
            }
            _ = tokio::time::sleep_until(wait_until), if eof => return Err(timed_out()),
        }
        // Busy until the next wait; stop if the registry closed us meanwhile.
        if !conn.begin_work() {
            return Err(ConnEnd::Evicted);
        }
    }
}

/// How long a connection waits for a deferred reply before giving up.
const LATE_REPLY_WAIT: Duration = Duration::from_secs(60);
