//! TCP per RFC 7766: 2-byte length-prefixed messages, several per connection,
//! pipelined (each answered as soon as it is read, responses in order), an
//! idle timeout and a limit on concurrent connections.
//!
//! ```text
//!  accept ──(limit reached? close at once)──▶ connection task
//!     loop: answer every complete frame in the buffer ─▶ write the responses
//!           read more, until the idle deadline (reset only by a complete frame)
//! ```
//!
//! A client that announces a length and sends less (or trickles bytes) is
//! closed when the idle deadline passes: partial data never extends it.

use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{timeout_at, Instant};

use crate::later::{Late, LateQueue};
use crate::{Client, IoError, StreamHandler};

/// Largest DNS message over TCP.
pub const MAX_MESSAGE: usize = 65535;

/// Settings of the TCP transport.
#[derive(Debug, Clone)]
pub struct TcpConfig {
    /// A connection with no complete query for this long is closed.
    pub idle_timeout: Duration,
    /// Connections open at once; new ones beyond this are closed at once.
    pub max_clients: usize,
    /// Event-loop threads.
    pub threads: usize,
    /// Listen backlog.
    pub backlog: i32,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            idle_timeout: Duration::from_secs(10),
            max_clients: 1000,
            threads: 1,
            backlog: 1024,
        }
    }
}

/// Totals of the TCP transport.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpStats {
    /// Connections accepted and served.
    pub connections: u64,
    /// Connections closed at once because the limit was reached.
    pub refused: u64,
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
    open: AtomicUsize,
    queries: AtomicU64,
    responses: AtomicU64,
    dropped: AtomicU64,
}

/// A shared, read-only view of the TCP counters.
#[derive(Debug, Clone)]
pub struct TcpCounters(Arc<Counters>);

impl TcpCounters {
    /// Current totals.
    pub fn read(&self) -> TcpStats {
        let c = &self.0;
        TcpStats {
            connections: c.connections.load(Ordering::Relaxed),
            refused: c.refused.load(Ordering::Relaxed),
            open: c.open.load(Ordering::Relaxed) as u64,
            queries: c.queries.load(Ordering::Relaxed),
            responses: c.responses.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
        }
    }
}

/// A running TCP transport on its own event loop; stops on `stop` or drop.
#[derive(Debug)]
pub struct TcpServer {
    runtime: Option<tokio::runtime::Runtime>,
    counters: Arc<Counters>,
    local_addrs: Vec<SocketAddr>,
}

impl TcpServer {
    /// Binds every address and serves connections with clones of `handler`
    /// (one clone per connection).
    pub fn start<H: StreamHandler>(
        addrs: &[SocketAddr],
        config: &TcpConfig,
        handler: H,
    ) -> Result<TcpServer, IoError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.threads.max(1))
            .thread_name("lode-tcp")
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| IoError::Thread(e.to_string()))?;
        let counters = Arc::new(Counters::default());
        let mut local_addrs = Vec::new();
        for &addr in addrs {
            let std_listener = bind(addr, config.backlog)?;
            let local = std_listener.local_addr().unwrap_or(addr);
            let listener = {
                let _guard = runtime.enter();
                TcpListener::from_std(std_listener)
                    .map_err(|e| IoError::Bind { addr, source: e })?
            };
            tracing::info!(
                "tcp {local}: idle timeout {:?}, at most {} clients",
                config.idle_timeout,
                config.max_clients
            );
            runtime.spawn(accept_loop(
                listener,
                config.clone(),
                handler.clone(),
                counters.clone(),
            ));
            local_addrs.push(local);
        }
        Ok(TcpServer {
            runtime: Some(runtime),
            counters,
            local_addrs,
        })
    }

    /// The bound addresses (with ports resolved).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
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
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

impl Drop for TcpServer {
    fn drop(&mut self) {
        self.shutdown();
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

/// Decrements the open-connection count when a connection ends.
struct OpenGuard(Arc<Counters>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn accept_loop<H: StreamHandler>(
    listener: TcpListener,
    config: TcpConfig,
    handler: H,
    counters: Arc<Counters>,
) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                if counters.open.load(Ordering::Relaxed) >= config.max_clients {
                    counters.refused.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!("tcp: refusing {peer}: {} clients open", config.max_clients);
                    drop(stream);
                    continue;
                }
                counters.open.fetch_add(1, Ordering::Relaxed);
                counters.connections.fetch_add(1, Ordering::Relaxed);
                let guard = OpenGuard(counters.clone());
                let handler = handler.clone();
                let idle = config.idle_timeout;
                tokio::spawn(async move {
                    let _guard = guard;
                    if let Err(e) = serve_connection(stream, peer, handler, idle, &_guard.0).await {
                        tracing::debug!("tcp {peer}: {e}");
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

thread_local! {
    /// Response scratch of one event-loop thread (a handler call never yields).
    static SCRATCH: RefCell<Vec<u8>> = RefCell::new(vec![0; MAX_MESSAGE]);
}

/// Why a connection ended early.
#[derive(Debug)]
enum ConnEnd {
    Idle,
    Io(io::Error),
}

impl std::fmt::Display for ConnEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnEnd::Idle => f.write_str("idle timeout, closed"),
            ConnEnd::Io(e) => write!(f, "{e}"),
        }
    }
}

async fn serve_connection<H: StreamHandler>(
    mut stream: TcpStream,
    peer: SocketAddr,
    mut handler: H,
    idle: Duration,
    counters: &Counters,
) -> Result<(), ConnEnd> {
    // Small answers dominate; send each batch at once.
    let _ = stream.set_nodelay(true);
    let mut buf: Vec<u8> = vec![0; 4096];
    let (mut start, mut end) = (0usize, 0usize);
    let mut pending: Vec<u8> = Vec::new();
    let mut deadline = Instant::now() + idle;
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
        // Answer every complete message in the buffer.
        let (mut queries, mut responses, mut dropped) = (0u64, 0u64, 0u64);
        let mut close = false;
        while !close && end - start >= 2 {
            let len = u16::from_be_bytes([buf[start], buf[start + 1]]) as usize;
            if end - start < 2 + len {
                break;
            }
            let query = &buf[start + 2..start + 2 + len];
            queries += 1;
            SCRATCH.with(|s| {
                let mut out = s.borrow_mut();
                let mut client = Client::tcp(peer, &late_tx);
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
            deadline = Instant::now() + idle;
            counters.queries.fetch_add(queries, Ordering::Relaxed);
            counters.responses.fetch_add(responses, Ordering::Relaxed);
            counters.dropped.fetch_add(dropped, Ordering::Relaxed);
        }
        if !pending.is_empty() {
            let write_deadline = Instant::now() + idle;
            match timeout_at(write_deadline, stream.write_all(&pending)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(ConnEnd::Io(e)),
                Err(_) => return Err(ConnEnd::Idle),
            }
            pending.clear();
            if late_bytes > 0 {
                late_tx.queued.fetch_sub(late_bytes, Ordering::AcqRel);
                late_bytes = 0;
            }
            if pending.capacity() > 4 * MAX_MESSAGE {
                pending.shrink_to(MAX_MESSAGE);
            }
        }
        if close || (eof && outstanding == 0) {
            return Ok(());
        }
        // Keep the unread tail at the front and room for a whole message.
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
            buf.resize(need.max(4096), 0);
        } else if buf.len() > 4096 && end <= 4096 && need <= 4096 {
            buf.truncate(4096);
            buf.shrink_to_fit();
        }
        if end == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        // While deferred replies are outstanding the idle timer waits.
        let wait_until = if outstanding > 0 {
            Instant::now() + LATE_REPLY_WAIT
        } else {
            deadline
        };
        tokio::select! {
            read = timeout_at(wait_until, stream.read(&mut buf[end..])), if !eof => {
                match read {
                    Ok(Ok(0)) => eof = true,
                    Ok(Ok(n)) => end += n,
                    Ok(Err(e)) => return Err(ConnEnd::Io(e)),
                    Err(_) => return Err(ConnEnd::Idle),
                }
            }
            late = late_rx.recv() => {
                // late_tx lives here, so the channel never reports closed.
                let mut next = late;
                while let Some(l) = next {
                    match l {
                        Late::Message(m) => {
                            pending.extend_from_slice(&(m.len() as u16).to_be_bytes());
                            pending.extend_from_slice(&m);
                            late_bytes += m.len();
                            counters.responses.fetch_add(1, Ordering::Relaxed);
                        }
                        Late::Done => outstanding = outstanding.saturating_sub(1),
                    }
                    next = late_rx.try_recv().ok();
                }
                if outstanding == 0 {
                    deadline = Instant::now() + idle;
                }
            }
            _ = tokio::time::sleep_until(wait_until), if eof => return Err(ConnEnd::Idle),
        }
    }
}

/// How long a connection waits for a deferred reply before giving up.
const LATE_REPLY_WAIT: Duration = Duration::from_secs(60);
