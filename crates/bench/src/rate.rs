//! The RFC 8219 §9 tester (Lencse §II.B): open-loop queries at a constant rate
//! for a fixed duration, every query different, from many source ports; a reply
//! counts only if valid and back within the timeout; a binary search finds the
//! highest rate at which (almost) every query is answered.
//!
//! ```text
//!  sender t ── paced batches (sendmmsg), one socket of its pool per batch ──▶ server
//!     │ records (send time, socket) per query; ID = query number mod 65536
//!  receiver t ◀── epoll over the same pool, recvmmsg ── replies
//!     matches by socket, ID and question; checks QR, RCODE, answer; counts valid ≤ timeout
//! ```
//!
//! A step is invalid (counted as failed and flagged) when a sender finished more
//! than `max_behind` (1 %) later than its schedule: then the tester, not the
//! server, set the rate.

use std::fmt;
use std::io::{IoSlice, IoSliceMut};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};
use nix::sys::socket::{
    recvmmsg, sendmmsg, setsockopt, sockopt, MsgFlags, MultiHeaders, SockaddrStorage,
};

use crate::pacing::Pacer;
use crate::query::{check_reply, message_id, Expect, QuerySet, Verdict, HEADER_LEN};
use crate::search::{binary_search, SearchResult};
use crate::stats::Histogram;

/// Most queries per `sendmmsg` and replies per `recvmmsg`.
pub const MAX_BATCH: usize = 64;
/// Largest reply read (larger ones are truncated and fail the question check only if it is cut).
const MAX_REPLY: usize = 4096;

/// Settings of the tester.
#[derive(Debug, Clone)]
pub struct RateConfig {
    /// The server under test.
    pub server: SocketAddr,
    /// Sender/receiver thread pairs.
    pub threads: usize,
    /// Client sockets (source ports) per thread.
    pub ports: usize,
    /// Length of each step (RFC 8219: at least 60 s).
    pub duration: Duration,
    /// A reply later than this does not count (RFC 8219 self-test: 250 ms).
    pub timeout: Duration,
    /// Which replies are valid.
    pub expect: Expect,
    /// Fraction of queries allowed to go unanswered (0 = RFC 8219; 0.0001 = 0.01 %).
    pub loss: f64,
    /// Queries per `sendmmsg`.
    pub batch: usize,
    /// A step whose senders finish later than this fraction of the duration is invalid.
    pub max_behind: f64,
    /// Receive and send buffer asked for each socket.
    pub socket_buffer: usize,
}

impl RateConfig {
    /// RFC 8219 defaults for `server`: 60 s steps, 250 ms timeout, zero loss, 4000 ports.
    pub fn new(server: SocketAddr) -> RateConfig {
        RateConfig {
            server,
            threads: 1,
            ports: 4000,
            duration: Duration::from_secs(60),
            timeout: Duration::from_millis(250),
            expect: Expect::Answer,
            loss: 0.0,
            batch: 16,
            max_behind: 0.01,
            socket_buffer: 4 << 20,
        }
    }
}

/// Why the tester could not run.
#[derive(Debug)]
#[non_exhaustive]
pub enum RateError {
    /// A socket or epoll set could not be created or configured.
    Socket(std::io::Error),
    /// A thread could not be started, or panicked.
    Thread(String),
    /// Settings that cannot work (no queries, zero rate, …).
    Config(String),
}

impl fmt::Display for RateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RateError::Socket(e) => write!(f, "client socket: {e}"),
            RateError::Thread(e) => write!(f, "tester thread: {e}"),
            RateError::Config(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for RateError {}

impl From<nix::Error> for RateError {
    fn from(e: nix::Error) -> Self {
        RateError::Socket(e.into())
    }
}

impl From<std::io::Error> for RateError {
    fn from(e: std::io::Error) -> Self {
        RateError::Socket(e)
    }
}

/// What one step at a fixed rate measured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepResult {
    /// The rate asked for (queries per second).
    pub rate: u64,
    /// Queries sent.
    pub sent: u64,
    /// Valid replies within the timeout (each query counted once).
    pub valid: u64,
    /// Valid replies after the timeout.
    pub late: u64,
    /// Replies with a wrong RCODE, no answer, or malformed (against the query's
    /// own expectation in a mixed set).
    pub wrong: u64,
    /// Replies that matched no query (port, ID and question), or duplicates.
    pub unmatched: u64,
    /// Queries the kernel refused to send.
    pub send_errors: u64,
    /// Seconds the senders took (the slowest one).
    pub send_secs: f64,
    /// Queries sent per second actually achieved.
    pub achieved_rate: f64,
    /// How far the slowest sender finished behind schedule (fraction of the duration).
    pub behind: f64,
    /// Latency of valid replies (late ones included), microseconds: 50th, 99th
    /// percentile and maximum (within 1/64).
    pub latency_us: [u64; 3],
    /// Latency of valid replies at the 99.9th percentile, microseconds (the stall
    /// measurement of queries under updates).
    pub latency_p999_us: u64,
}

impl StepResult {
    /// True if the tester kept its schedule and sent everything.
    pub fn tester_ok(&self, max_behind: f64) -> bool {
        self.behind <= max_behind && self.send_errors == 0
    }

    /// Queries that got no reply at all (neither valid, late nor wrong).
    pub fn unanswered(&self) -> u64 {
        self.sent
            .saturating_sub(self.valid + self.late + self.wrong)
    }

    /// Queries not answered validly in time (unanswered, late or wrong).
    pub fn lost(&self) -> u64 {
        self.sent.saturating_sub(self.valid)
    }

    /// Valid replies within the timeout per second of the offered stream: the
    /// achieved sending rate × the fraction answered validly.
    pub fn answered_qps(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            self.achieved_rate * self.valid as f64 / self.sent as f64
        }
    }

    /// True if enough queries were answered validly in time, and the step is valid.
    pub fn passed(&self, loss: f64, max_behind: f64) -> bool {
        let allowed = (self.sent as f64 * loss).floor() as u64;
        self.tester_ok(max_behind) && self.sent > 0 && self.valid + allowed >= self.sent
    }
}

/// One thread's sockets and their epoll set.
#[derive(Debug)]
struct Pool {
    sockets: Vec<UdpSocket>,
    epoll: Epoll,
}

/// Per-query bookkeeping of one thread during one step.
#[derive(Debug)]
struct Track {
    /// Microseconds after the step start + 1 at which query j was sent; 0 if not yet.
    sent_at: Vec<AtomicU32>,
    /// The socket (index in the pool) query j went out on.
    socket: Vec<AtomicU16>,
    /// Whether query j already has its valid reply.
    answered: Vec<AtomicBool>,
    /// Queries of this thread sent so far (published after their entries).
    sent: AtomicU64,
    /// Set when the sender is done.
    done: AtomicBool,
    /// Microseconds after the start at which the sender finished.
    end_us: AtomicU64,
}

impl Track {
    fn new(n: usize) -> Track {
        Track {
            sent_at: (0..n).map(|_| AtomicU32::new(0)).collect(),
            socket: (0..n).map(|_| AtomicU16::new(0)).collect(),
            answered: (0..n).map(|_| AtomicBool::new(false)).collect(),
            sent: AtomicU64::new(0),
            done: AtomicBool::new(false),
            end_us: AtomicU64::new(0),
        }
    }
}

/// Counters of one receiver.
#[derive(Debug, Default, Clone)]
struct RecvCounts {
    valid: u64,
    late: u64,
    wrong: u64,
    unmatched: u64,
    latency: Histogram,
}

/// What one sender reports.
#[derive(Debug, Default, Clone, Copy)]
struct SendReport {
    sent: u64,
    errors: u64,
    finished: Duration,
    behind: f64,
}

/// The tester: client sockets opened once, a query list, and a cursor into it so
/// that consecutive steps keep sending queries not sent before.
#[derive(Debug)]
pub struct Tester {
    config: RateConfig,
    queries: Arc<QuerySet>,
    pools: Vec<Pool>,
    cursor: u64,
}

impl Tester {
    /// Opens `threads × ports` sockets connected to the server (raising the open-file
    /// limit if needed).
    pub fn new(config: RateConfig, queries: Arc<QuerySet>) -> Result<Tester, RateError> {
        if queries.is_empty() {
            return Err(RateError::Config("no queries".into()));
        }
        if config.threads == 0 || config.ports == 0 || config.ports > usize::from(u16::MAX) {
            return Err(RateError::Config(
                "need at least one thread and 1 to 65535 ports per thread".into(),
            ));
        }
        let needed = (config.threads * config.ports + 256) as u64;
        raise_nofile(needed)?;
        let bind: SocketAddr = if config.server.is_ipv4() {
            "0.0.0.0:0"
                .parse()
                .map_err(|_| RateError::Config("addr".into()))?
        } else {
            "[::]:0"
                .parse()
                .map_err(|_| RateError::Config("addr".into()))?
        };
        let mut pools = Vec::with_capacity(config.threads);
        for _ in 0..config.threads {
            let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
            let mut sockets = Vec::with_capacity(config.ports);
            for i in 0..config.ports {
                let s = UdpSocket::bind(bind)?;
                s.connect(config.server)?;
                s.set_nonblocking(true)?;
                // Buffer sizes are a request; the kernel caps them at rmem_max / wmem_max.
                let _ = setsockopt(&s, sockopt::RcvBuf, &config.socket_buffer);
                let _ = setsockopt(&s, sockopt::SndBuf, &config.socket_buffer);
                epoll.add(&s, EpollEvent::new(EpollFlags::EPOLLIN, i as u64))?;
                sockets.push(s);
            }
            pools.push(Pool { sockets, epoll });
        }
        Ok(Tester {
            config,
            queries,
            pools,
            cursor: 0,
        })
    }

    /// The settings.
    pub fn config(&self) -> &RateConfig {
        &self.config
    }

    /// Runs one step at `rate` queries per second for the configured duration.
    pub fn step(&mut self, rate: u64) -> Result<StepResult, RateError> {
        if rate == 0 {
            return Err(RateError::Config("rate 0".into()));
        }
        // Send times are kept as u32 microseconds (71 minutes).
        if self.config.duration + self.config.timeout > Duration::from_secs(3600) {
            return Err(RateError::Config("steps are limited to one hour".into()));
        }
        let cfg = &self.config;
        let threads = cfg.threads as u64;
        let total = ((rate as f64) * cfg.duration.as_secs_f64())
            .round()
            .max(1.0) as u64;
        let cursor = self.cursor;
        self.cursor = self.cursor.wrapping_add(total);
        let tracks: Vec<Track> = (0..threads)
            .map(|t| Track::new(share(total, threads, t) as usize))
            .collect();
        // Threads start together, a little after they are spawned.
        let start = Instant::now() + Duration::from_millis(20);
        let queries = &*self.queries;
        let outcome = std::thread::scope(|s| {
            let mut senders = Vec::new();
            let mut receivers = Vec::new();
            for (t, (pool, track)) in self.pools.iter().zip(&tracks).enumerate() {
                let n = share(total, threads, t as u64);
                let thread_rate = rate as f64 * n as f64 / total as f64;
                let pacer = Pacer::new(thread_rate, n);
                let first = cursor.wrapping_add(t as u64);
                senders.push(s.spawn(move || {
                    send_loop(cfg, pool, track, queries, pacer, first, threads, start)
                }));
                receivers.push(
                    s.spawn(move || recv_loop(cfg, pool, track, queries, first, threads, start)),
                );
            }
            let mut out = (Vec::new(), Vec::new());
            for h in senders {
                out.0.push(
                    h.join()
                        .map_err(|_| RateError::Thread("sender panicked".into()))?,
                );
            }
            for h in receivers {
                out.1.push(
                    h.join()
                        .map_err(|_| RateError::Thread("receiver panicked".into()))?,
                );
            }
            Ok::<_, RateError>(out)
        })?;
        let (sends, recvs) = outcome;
        let mut r = StepResult {
            rate,
            ..StepResult::default()
        };
        for s in &sends {
            let s = s
                .as_ref()
                .map_err(|e| RateError::Socket(std::io::Error::other(e.to_string())))?;
            r.sent += s.sent;
            r.send_errors += s.errors;
            r.send_secs = r.send_secs.max(s.finished.as_secs_f64());
            r.behind = r.behind.max(s.behind);
        }
        let mut latency = Histogram::default();
        for c in &recvs {
            r.valid += c.valid;
            r.late += c.late;
            r.wrong += c.wrong;
            r.unmatched += c.unmatched;
            latency.merge(&c.latency);
        }
        r.latency_us = [50.0, 99.0, 100.0].map(|p| latency.percentile(p).unwrap_or(0));
        r.latency_p999_us = latency.percentile(99.9).unwrap_or(0);
        r.achieved_rate = if r.send_secs > 0.0 {
            r.sent.saturating_sub(1) as f64 / r.send_secs
        } else {
            r.sent as f64
        };
        Ok(r)
    }

    /// One binary search between `low` and `high` (queries per second), stopping at
    /// `resolution`; `report` sees every step as it ends.
    pub fn search(
        &mut self,
        low: u64,
        high: u64,
        resolution: u64,
        mut report: impl FnMut(&StepResult, bool),
    ) -> Result<SearchResult<StepResult>, RateError> {
        let (loss, behind) = (self.config.loss, self.config.max_behind);
        binary_search(low, high, resolution, |rate| {
            let r = self.step(rate)?;
            let ok = r.passed(loss, behind);
            report(&r, ok);
            Ok((ok, r))
        })
    }
}

/// Thread `t`'s share of `total` queries among `threads`.
fn share(total: u64, threads: u64, t: u64) -> u64 {
    total / threads + u64::from(t < total % threads)
}

/// Raises the soft open-file limit to at least `needed` (up to the hard limit).
pub(crate) fn raise_nofile(needed: u64) -> Result<(), RateError> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft >= needed {
        return Ok(());
    }
    if hard < needed {
        return Err(RateError::Config(format!(
            "{needed} sockets needed but the open-file limit is {hard}; use fewer --ports or threads"
        )));
    }
    setrlimit(Resource::RLIMIT_NOFILE, needed, hard)?;
    Ok(())
}

/// Paces this thread's queries and sends them in batches, one socket per batch.
#[allow(clippy::too_many_arguments)]
fn send_loop(
    cfg: &RateConfig,
    pool: &Pool,
    track: &Track,
    queries: &QuerySet,
    pacer: Pacer,
    first: u64,
    stride: u64,
    start: Instant,
) -> Result<SendReport, nix::Error> {
    let n = track.sent_at.len() as u64;
    let batch = cfg.batch.clamp(1, MAX_BATCH);
    let mut headers = MultiHeaders::<SockaddrStorage>::preallocate(batch, None);
    let addrs: [Option<SockaddrStorage>; MAX_BATCH] = [None; MAX_BATCH];
    let qcount = queries.len() as u64;
    let mut report = SendReport::default();
    let mut next_socket = 0usize;
    sleep_until(start);
    let mut j = 0u64;
    while j < n {
        let elapsed = start.elapsed();
        let due = pacer.due(elapsed);
        if due <= j {
            // Sleep until a whole batch is due (bursts of at most `batch` queries, the
            // rate exact on average) rather than spinning: on a shared machine a
            // spinning tester takes the CPU from the server it measures.
            let last = (j + batch as u64 - 1).min(n - 1);
            let wait = pacer.at(last).saturating_sub(elapsed);
            if wait > Duration::from_micros(60) {
                std::thread::sleep(wait - Duration::from_micros(50));
            } else {
                std::thread::yield_now();
            }
            continue;
        }
        let k = (due - j).min(batch as u64) as usize;
        let sock_index = next_socket;
        next_socket = (next_socket + 1) % pool.sockets.len();
        let sock = &pool.sockets[sock_index];
        let now_us = elapsed.as_micros().min(u128::from(u32::MAX - 1)) as u32 + 1;
        let mut ids = [[0u8; 2]; MAX_BATCH];
        for (m, id) in ids.iter_mut().enumerate().take(k) {
            let q = j + m as u64;
            *id = (q as u16).to_be_bytes();
            track.sent_at[q as usize].store(now_us, Ordering::Relaxed);
            track.socket[q as usize].store(sock_index as u16, Ordering::Relaxed);
        }
        // Publish the entries before the queries can be answered.
        track.sent.store(j + k as u64, Ordering::Release);
        let mut iovs: [[IoSlice<'_>; 2]; MAX_BATCH] =
            std::array::from_fn(|_| [IoSlice::new(&[]), IoSlice::new(&[])]);
        for m in 0..k {
            let qi = first.wrapping_add((j + m as u64) * stride) % qcount;
            let wire = queries.get(qi as usize);
            iovs[m] = [IoSlice::new(&ids[m]), IoSlice::new(&wire[2..])];
        }
        let mut done = 0usize;
        // One retry for a partial batch; what still fails is counted as a send error.
        for _ in 0..2 {
            match sendmmsg(
                sock.as_raw_fd(),
                &mut headers,
                iovs[done..k].iter(),
                &addrs[..k - done],
                [],
                MsgFlags::empty(),
            ) {
                Ok(res) => done += res.count(),
                Err(nix::Error::EAGAIN) | Err(nix::Error::ENOBUFS) => {}
                Err(nix::Error::ECONNREFUSED) => {}
                Err(e) => return Err(e),
            }
            if done == k {
                break;
            }
        }
        report.errors += (k - done) as u64;
        j += k as u64;
    }
    report.sent = n;
    report.finished = start.elapsed();
    report.behind = pacer.lateness(report.finished);
    track
        .end_us
        .store(report.finished.as_micros() as u64, Ordering::Relaxed);
    track.done.store(true, Ordering::Release);
    Ok(report)
}

/// Receives replies on this thread's sockets until the sender is done and the
/// timeout has passed, matching each to its query.
fn recv_loop(
    cfg: &RateConfig,
    pool: &Pool,
    track: &Track,
    queries: &QuerySet,
    first: u64,
    stride: u64,
    start: Instant,
) -> RecvCounts {
    let mut counts = RecvCounts::default();
    let batch = cfg.batch.clamp(1, MAX_BATCH);
    let mut headers = MultiHeaders::<SockaddrStorage>::preallocate(batch, None);
    let mut buf = vec![0u8; batch * MAX_REPLY];
    let mut events = [EpollEvent::empty(); 256];
    let timeout_us = cfg.timeout.as_micros() as u64;
    let qcount = queries.len() as u64;
    let grace_us = timeout_us + 20_000;
    loop {
        if track.done.load(Ordering::Acquire) {
            let end = track.end_us.load(Ordering::Relaxed);
            if start.elapsed().as_micros() as u64 > end + grace_us {
                break;
            }
        }
        let ready = match pool.epoll.wait(&mut events, 5u16) {
            Ok(n) => n,
            Err(nix::Error::EINTR) => continue,
            Err(_) => break,
        };
        for ev in &events[..ready] {
            let s = ev.data() as usize;
            let fd = pool.sockets[s].as_raw_fd();
            loop {
                let mut lens = [0usize; MAX_BATCH];
                let got = {
                    let mut chunks = buf.chunks_mut(MAX_REPLY);
                    let mut iovs: [[IoSliceMut<'_>; 1]; MAX_BATCH] = std::array::from_fn(|_| {
                        [IoSliceMut::new(chunks.next().unwrap_or_default())]
                    });
                    match recvmmsg(
                        fd,
                        &mut headers,
                        iovs[..batch].iter_mut(),
                        MsgFlags::MSG_DONTWAIT,
                        None,
                    ) {
                        Ok(res) => {
                            let mut c = 0;
                            for (slot, msg) in lens.iter_mut().zip(res) {
                                *slot = msg.bytes;
                                c += 1;
                            }
                            c
                        }
                        Err(_) => 0,
                    }
                };
                if got == 0 {
                    break;
                }
                let now_us = start.elapsed().as_micros() as u64;
                for (m, len) in lens.iter().enumerate().take(got) {
                    let data = &buf[m * MAX_REPLY..m * MAX_REPLY + (*len).min(MAX_REPLY)];
                    let index_of = |q: u64| (first.wrapping_add(q * stride) % qcount) as usize;
                    let question_of = |q: u64| queries.question(index_of(q));
                    match find_query(track, s as u16, data, now_us, grace_us, &question_of) {
                        Some(q) => {
                            let sent_us =
                                u64::from(track.sent_at[q as usize].load(Ordering::Relaxed)) - 1;
                            let expect = queries.expect(index_of(q)).unwrap_or(cfg.expect);
                            match check_reply(data, question_of(q), expect) {
                                Verdict::Valid => {
                                    let latency = now_us.saturating_sub(sent_us);
                                    if track.answered[q as usize].swap(true, Ordering::Relaxed) {
                                        counts.unmatched += 1;
                                    } else if latency <= timeout_us {
                                        counts.valid += 1;
                                        counts.latency.record(latency);
                                    } else {
                                        counts.late += 1;
                                        counts.latency.record(latency);
                                    }
                                }
                                _ => counts.wrong += 1,
                            }
                        }
                        None => counts.unmatched += 1,
                    }
                }
                if got < batch {
                    break;
                }
            }
        }
    }
    counts
}

/// The query a reply answers: the newest sent query with the reply's ID (mod 65536)
/// that went out on socket `s` with the same question, not older than `window_us`.
fn find_query<'q>(
    track: &Track,
    s: u16,
    reply: &[u8],
    now_us: u64,
    window_us: u64,
    question_of: &impl Fn(u64) -> &'q [u8],
) -> Option<u64> {
    let sent = track.sent.load(Ordering::Acquire);
    let id = u64::from(message_id(reply));
    if sent == 0 || reply.len() < HEADER_LEN {
        return None;
    }
    let top = sent - 1;
    if top < id {
        return None;
    }
    let mut q = top - ((top - id) % 65536);
    loop {
        let at = u64::from(track.sent_at[q as usize].load(Ordering::Relaxed));
        if at == 0 || now_us.saturating_sub(at - 1) > window_us + 1_000_000 {
            return None;
        }
        if track.socket[q as usize].load(Ordering::Relaxed) == s {
            let question = question_of(q);
            if reply.get(HEADER_LEN..HEADER_LEN + question.len()) == Some(question) {
                return Some(q);
            }
        }
        q = q.checked_sub(65536)?;
    }
}

/// Sleeps until `t` (returns at once if it has passed).
fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

pub mod record;

#[cfg(test)]
mod tests;
