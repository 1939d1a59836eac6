//! Transports for Lode: they move datagrams and TCP messages and call a
//! handler; nothing here knows DNS.
//!
//! ```text
//!             ┌ worker 0: socket (SO_REUSEPORT) ─ recvmmsg ─▶ handler ×N ─▶ sendmmsg ┐
//!  addr:port ─┼ worker 1: socket (SO_REUSEPORT) ─ …                                  ├─ per-worker counters
//!             └ …                                                                     ┘
//!  addr:port ── TCP listener (tokio) ─▶ one task per connection: frames ─▶ handler ─▶ frames
//!                  └ registry of connections: closes idle ones to make room (tcp.rs)
//!  iface@port ── XDP program ─▶ AF_XDP socket per queue ─▶ worker: frame ─▶ handler ─▶ frame (xdp/)
//! ```
//!
//! A handler is `FnMut(query, out, peer) -> len` (0 = send nothing); each UDP
//! worker and each TCP connection gets its own clone, so a handler can keep
//! per-worker scratch state without locks. UDP buffers and message headers are
//! allocated once per worker: nothing is allocated per datagram. Workers wake
//! up every `poll_interval` to check the stop flag, so `stop` is bounded. On a
//! wildcard address (0.0.0.0, ::) each answer leaves from the address its
//! query was sent to (`IP_PKTINFO` / `IPV6_PKTINFO`), as multi-homed hosts need.
//!
//! This is the only crate of the server allowed `unsafe` (the test-only
//! `lode-testalloc` has its `GlobalAlloc` impl): in `sys.rs` (the
//! `recvmmsg`/`sendmmsg` batches, `setresuid` and friends for `creds`, `setrlimit` for `limits`) and
//! `mem.rs` (glibc's `mallopt` and `malloc_trim`), and `xdp/` (the bpf(2)
//! system call, the AF_XDP socket's rings and UMEM), each block with its reason.
#![allow(unsafe_code)]
#![warn(missing_docs)]

pub mod clock;
pub mod creds;
mod later;
pub mod limits;
pub mod mem;
pub mod net;
pub mod quic;
mod sys;
pub mod tcp;
pub mod tls;
pub mod udp;
mod workers;
pub mod xdp;

use std::fmt;
use std::net::SocketAddr;

pub use later::{Client, Later, Protocol, STREAM_QUEUE_BYTES};
pub use quic::{QuicConfig, QuicCounters, QuicServer, QuicStats};
pub use tcp::{TcpConfig, TcpCounters, TcpLimits, TcpServer, TcpStats};
pub use udp::{UdpConfig, UdpCounters, UdpServer, UdpStats};

/// What a transport calls for each message: `(query, out, client) -> response
/// length`, 0 to send nothing now. `out` is at least the configured response
/// size (65535 bytes for TCP). A handler that answers later (after a journal
/// write, or as a stream) calls [`Client::defer`] and returns 0.
pub trait Handler:
    FnMut(&[u8], &mut [u8], &mut Client<'_>) -> usize + Clone + Send + 'static
{
}

impl<T> Handler for T where
    T: FnMut(&[u8], &mut [u8], &mut Client<'_>) -> usize + Clone + Send + 'static
{
}

/// What a stream transport does with one message's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamReply {
    /// Length of the response written to `out`; 0 sends nothing.
    pub len: usize,
    /// Close the connection after sending the response (messages already
    /// received behind this one are not answered).
    pub close: bool,
}

/// What a stream (TCP) transport calls for each message: like [`Handler`],
/// and it can also ask to close the connection.
pub trait StreamHandler:
    FnMut(&[u8], &mut [u8], &mut Client<'_>) -> StreamReply + Clone + Send + 'static
{
}

impl<T> StreamHandler for T where
    T: FnMut(&[u8], &mut [u8], &mut Client<'_>) -> StreamReply + Clone + Send + 'static
{
}

/// Errors starting a transport.
#[derive(Debug)]
#[non_exhaustive]
pub enum IoError {
    /// A socket could not be created, configured or bound.
    Bind {
        /// The address concerned.
        addr: SocketAddr,
        /// The system's reason.
        source: std::io::Error,
    },
    /// A thread or the event loop could not be started.
    Thread(String),
    /// UDP over AF_XDP could not start on an interface.
    Xdp {
        /// The interface.
        iface: String,
        /// What failed, and why.
        reason: String,
    },
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoError::Bind { addr, source } => write!(f, "cannot listen on {addr}: {source}"),
            IoError::Thread(e) => write!(f, "cannot start a thread: {e}"),
            IoError::Xdp { iface, reason } => write!(f, "cannot serve XDP on {iface}: {reason}"),
        }
    }
}

impl std::error::Error for IoError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            IoError::Bind { source, .. } => Some(source),
            IoError::Thread(_) | IoError::Xdp { .. } => None,
        }
    }
}

/// A multi-threaded tokio runtime for one transport, shut down (waiting at
/// most a second for its tasks) when dropped.
#[derive(Debug)]
pub(crate) struct EventLoop(Option<tokio::runtime::Runtime>);

impl EventLoop {
    /// `threads` event-loop threads named `name`, at scheduling priority
    /// `nice` (0: unchanged).
    pub(crate) fn start(threads: usize, name: &str, nice: i32) -> Result<EventLoop, IoError> {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name(name)
            .on_thread_start(move || {
                if nice > 0 {
                    lower_thread_priority(nice);
                }
            })
            .enable_io()
            .enable_time()
            .build()
            .map(|rt| EventLoop(Some(rt)))
            .map_err(|e| IoError::Thread(e.to_string()))
    }

    /// The runtime (present until shut down).
    pub(crate) fn handle(&self) -> &tokio::runtime::Runtime {
        self.0.as_ref().expect("the event loop runs until dropped")
    }
}

impl Drop for EventLoop {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_timeout(std::time::Duration::from_secs(1));
        }
    }
}

/// Ignores SIGXFSZ, so a file grown past RLIMIT_FSIZE fails its write with
/// EFBIG (which the journal answers with SERVFAIL and rolls back) instead of
/// killing the process.
pub fn ignore_file_size_signal() {
    // SAFETY: setting a signal's disposition to SIG_IGN installs no handler
    // and touches no memory of ours.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Lowers the calling thread's scheduling priority to `nice` (0..=19), so
/// background work (a zone writer, a compaction) yields the CPU to the
/// threads answering queries. Best effort: an error leaves it as it was.
pub fn lower_thread_priority(nice: i32) {
    // SAFETY: gettid has no preconditions; setpriority on our own thread id
    // only changes its scheduling weight.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, nice.clamp(0, 19));
    }
}
