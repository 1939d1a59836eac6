//! UDP: one worker thread per socket, several sockets per address bound with
//! `SO_REUSEPORT` (the kernel spreads flows over them), batched system calls.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

use crate::sys::MsgBatch;
use crate::workers::Workers;
use crate::{Client, Handler, IoError};

/// Settings of the UDP transport.
#[derive(Debug, Clone)]
pub struct UdpConfig {
    /// Worker threads (each with its own socket) per listen address.
    pub workers: usize,
    /// Receive buffer to ask the kernel for, in bytes (absorbs bursts; the
    /// kernel doubles a request); 0: none asked, `net.core.rmem_default` applies.
    pub recv_buffer: usize,
    /// Datagrams per `recvmmsg`/`sendmmsg` call.
    pub batch: usize,
    /// Largest query accepted; longer datagrams are dropped. The default
    /// takes any datagram (65,535 bytes: a query padded to 64 KiB is
    /// answered, as Knot, NSD and BIND answer it); the kernel copies only
    /// what arrived, so the large slots cost address space, not time.
    pub max_query: usize,
    /// Size of each response buffer handed to the handler.
    pub max_response: usize,
    /// How long a worker waits for a datagram before checking the stop flag.
    pub poll_interval: Duration,
    /// Answer from the address each query was sent to (`IP_PKTINFO` /
    /// `IPV6_PKTINFO`); `None`: only on wildcard addresses, where it matters.
    pub pktinfo: Option<bool>,
}

impl Default for UdpConfig {
    fn default() -> Self {
        UdpConfig {
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            recv_buffer: 4 << 20,
            batch: 32,
            max_query: 65535,
            max_response: 4096,
            poll_interval: Duration::from_millis(200),
            pktinfo: None,
        }
    }
}

/// Counters of one worker, alone in its cache line; written only by that worker.
#[derive(Debug, Default)]
#[repr(align(64))]
struct WorkerCounters {
    queries: AtomicU64,
    responses: AtomicU64,
    dropped: AtomicU64,
    /// The kernel's drops on the worker's socket, read now and then.
    socket_drops: AtomicU64,
}

/// Totals over all UDP workers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UdpStats {
    /// Datagrams received.
    pub queries: u64,
    /// Datagrams sent.
    pub responses: u64,
    /// Datagrams received and not answered (handler returned 0, truncated or
    /// unparsable source, send failure).
    pub dropped: u64,
    /// Datagrams the kernel dropped on the sockets before Lode read them
    /// (receive buffer full), as each worker last read it: about once a
    /// second when busy, and when idle.
    pub socket_drops: u64,
}

/// A shared, read-only view of the workers' counters.
#[derive(Debug, Clone)]
pub struct UdpCounters(Arc<[WorkerCounters]>);

impl UdpCounters {
    /// Sums the per-worker counters.
    pub fn read(&self) -> UdpStats {
        let mut s = UdpStats::default();
        for c in self.0.iter() {
            s.queries += c.queries.load(Ordering::Relaxed);
            s.responses += c.responses.load(Ordering::Relaxed);
            s.dropped += c.dropped.load(Ordering::Relaxed);
            s.socket_drops += c.socket_drops.load(Ordering::Relaxed);
        }
        s
    }
}

/// A running UDP transport; stops (and joins its threads) on `stop` or drop.
#[derive(Debug)]
pub struct UdpServer {
    workers: Workers,
    counters: Arc<[WorkerCounters]>,
    local_addrs: Vec<SocketAddr>,
}

impl UdpServer {
    /// Binds `config.workers` sockets to each address and starts one worker
    /// per socket, each with its own clone of `handler`. A port of 0 is
    /// resolved once, so all workers of an address share the same port.
    pub fn start<H: Handler>(
        addrs: &[SocketAddr],
        config: &UdpConfig,
        handler: H,
    ) -> Result<UdpServer, IoError> {
        let workers = config.workers.max(1);
        let mut sockets = Vec::new();
        let mut local_addrs = Vec::new();
        for &addr in addrs {
            let first = bind(addr, config)?;
            let local = first
                .local_addr()
                .ok()
                .and_then(|a| a.as_socket())
                .unwrap_or(addr);
            let granted = first.recv_buffer_size().unwrap_or(0);
            tracing::info!(
                "udp {local}: {workers} workers, receive buffer asked {} KiB, granted {} KiB",
                config.recv_buffer >> 10,
                granted >> 10
            );
            sockets.push(first);
            for _ in 1..workers {
                sockets.push(bind(local, config)?);
            }
            local_addrs.push(local);
        }
        let counters: Arc<[WorkerCounters]> = (0..sockets.len())
            .map(|_| WorkerCounters::default())
            .collect();
        // Dropped on an error: the workers already started stop.
        let mut threads = Workers::new("UDP");
        for (i, socket) in sockets.into_iter().enumerate() {
            let worker = Worker {
                socket,
                handler: handler.clone(),
                stop: threads.flag(),
                counters: counters.clone(),
                index: i,
                config: config.clone(),
            };
            threads.spawn(format!("lode-udp-{i}"), move || worker.run())?;
        }
        Ok(UdpServer {
            workers: threads,
            counters,
            local_addrs,
        })
    }

    /// The bound addresses (with ports resolved), one per listen address.
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// Sums the per-worker counters.
    pub fn stats(&self) -> UdpStats {
        self.counters().read()
    }

    /// A handle on the counters that outlives borrows of the server (for status reports).
    pub fn counters(&self) -> UdpCounters {
        UdpCounters(self.counters.clone())
    }

    /// Stops the workers and waits for them (at most about one poll interval).
    pub fn stop(mut self) {
        self.workers.stop();
    }
}

fn bind(addr: SocketAddr, config: &UdpConfig) -> Result<Socket, IoError> {
    let err = |e: io::Error| IoError::Bind { addr, source: e };
    let socket =
        Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP)).map_err(err)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true).map_err(err)?;
    }
    socket.set_reuse_port(true).map_err(err)?;
    if config.recv_buffer > 0
        && !crate::sys::force_recv_buffer(socket.as_raw_fd(), config.recv_buffer)
    {
        // Not privileged: the kernel caps the request at net.core.rmem_max.
        if let Err(e) = socket.set_recv_buffer_size(config.recv_buffer) {
            tracing::warn!("udp {addr}: cannot set the receive buffer: {e}");
        }
    }
    socket
        .set_read_timeout(Some(config.poll_interval.max(Duration::from_millis(1))))
        .map_err(err)?;
    if config.pktinfo.unwrap_or(addr.ip().is_unspecified()) {
        crate::sys::enable_pktinfo(socket.as_raw_fd(), addr.is_ipv6()).map_err(err)?;
    }
    socket.bind(&addr.into()).map_err(err)?;
    Ok(socket)
}

struct Worker<H> {
    socket: Socket,
    handler: H,
    stop: Arc<AtomicBool>,
    counters: Arc<[WorkerCounters]>,
    index: usize,
    config: UdpConfig,
}

impl<H: Handler> Worker<H> {
    fn run(mut self) {
        let fd = self.socket.as_raw_fd();
        let batch = self.config.batch.max(1);
        let addr = self.socket.local_addr().ok().and_then(|a| a.as_socket());
        let pktinfo = self
            .config
            .pktinfo
            .unwrap_or_else(|| addr.is_some_and(|a| a.ip().is_unspecified()));
        // Deferred replies leave through a duplicate of the worker's socket
        // (from the kernel's choice of source address on a wildcard bind).
        let late = match self.socket.try_clone() {
            Ok(s) => Arc::new(std::net::UdpSocket::from(s)),
            Err(e) => {
                tracing::error!(
                    "udp worker {}: cannot duplicate the socket: {e}",
                    self.index
                );
                return;
            }
        };
        let mut rx = MsgBatch::new(batch, self.config.max_query.max(12), pktinfo);
        let mut tx = MsgBatch::new(batch, self.config.max_response.max(512), pktinfo);
        let (mut queries, mut responses, mut dropped) = (0u64, 0u64, 0u64);
        let mut batches = 0u32;
        while !self.stop.load(Ordering::Relaxed) {
            let got = match rx.recv(fd) {
                Ok(n) => n,
                Err(e) => {
                    self.read_socket_drops(fd);
                    match e.kind() {
                        io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted => {}
                        _ => {
                            tracing::warn!("udp worker {}: receive failed: {e}", self.index);
                            // Do not spin on a persistent error.
                            std::thread::sleep(Duration::from_millis(10));
                        }
                    }
                    continue;
                }
            };
            let mut ready = 0;
            for i in 0..got {
                queries += 1;
                let (query, truncated) = rx.received(i);
                let Some(peer) = rx.peer(i).filter(|_| !truncated) else {
                    dropped += 1;
                    continue;
                };
                let out = tx.slot_mut(ready);
                let cap = out.len();
                // A panicking handler costs one datagram, not the worker (whose
                // socket would keep receiving its share of the traffic).
                let handler = &mut self.handler;
                let local = match addr {
                    Some(a) if a.ip().is_unspecified() => {
                        rx.local_ip(i).map(|ip| SocketAddr::new(ip, a.port()))
                    }
                    a => a,
                };
                let mut client = Client::udp(peer, local, &late);
                let n = match panic::catch_unwind(AssertUnwindSafe(|| {
                    handler(query, out, &mut client)
                })) {
                    Ok(n) => n.min(cap),
                    Err(_) => {
                        tracing::error!(
                            "udp worker {}: the handler panicked on a query from {peer}",
                            self.index
                        );
                        0
                    }
                };
                if n == 0 {
                    if !client.is_deferred() {
                        dropped += 1;
                    }
                    continue;
                }
                tx.commit(ready, n, &rx, i);
                ready += 1;
            }
            let mut sent = 0;
            while sent < ready {
                match tx.send(fd, sent, ready) {
                    Ok(n) => {
                        sent += n;
                        responses += n as u64;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        tracing::debug!("udp worker {}: send failed: {e}", self.index);
                        sent += 1;
                        dropped += 1;
                    }
                }
            }
            let c = &self.counters[self.index];
            c.queries.store(queries, Ordering::Relaxed);
            c.responses.store(responses, Ordering::Relaxed);
            c.dropped.store(dropped, Ordering::Relaxed);
            // One system call in DROPS_EVERY batches (and on every idle wake-up).
            batches = batches.wrapping_add(1);
            if batches.is_multiple_of(DROPS_EVERY) {
                self.read_socket_drops(fd);
            }
        }
    }

    /// Stores the kernel's drop count of the worker's socket.
    fn read_socket_drops(&self, fd: std::os::fd::RawFd) {
        if let Ok(n) = crate::sys::socket_drops(fd) {
            self.counters[self.index]
                .socket_drops
                .store(u64::from(n), Ordering::Relaxed);
        }
    }
}

/// Batches between two reads of the socket's drop count.
const DROPS_EVERY: u32 = 4096;
