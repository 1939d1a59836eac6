//! The TCP abuse of table 3, run from the tester's side on one thread while the
//! UDP tester measures: idle connections, slow senders, pipelined floods.
//!
//! ```text
//!  closed queue (floods, slow, idle) ── connect budget (N/s) ──▶ non-blocking connect
//!        ▲                                                           │ EPOLLOUT + SO_ERROR 0
//!        │ RST (SO_LINGER 0)                                         ▼
//!        └── EOF / RST / error / connect > 3 s ◀── open: idle  — sends nothing
//!                                                        slow  — length prefix, then 1 byte/s
//!                                                        flood — queries back to back, never reads
//! ```
//!
//! Slow senders and floods the server closes are opened again within the connect
//! budget, so the pressure lasts; idle connections are attempted once (a pending
//! one stays pending), or reopened too with `reopen_idle` (churn). Bounded: a fixed number of sockets, a connect rate, a
//! time limit after which the thread stops by itself; every socket is closed
//! with a reset (no TIME_WAIT left on either side) when it stops.

use std::collections::VecDeque;
use std::io::{self, Read as _};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};
use nix::sys::socket::{
    connect, getsockopt, send, setsockopt, socket, sockopt, AddressFamily, MsgFlags, SockFlag,
    SockType, SockaddrStorage,
};

/// What a connection does once open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Sends nothing, holds a slot.
    Idle,
    /// Sends a message's length prefix, then one byte per second.
    Slow,
    /// Sends queries back to back and never reads a reply.
    Flood,
}

impl Role {
    fn index(self) -> usize {
        match self {
            Role::Idle => 0,
            Role::Slow => 1,
            Role::Flood => 2,
        }
    }
}

/// Settings of the abuse.
#[derive(Debug, Clone)]
pub struct AbuseConfig {
    /// The server (TCP).
    pub server: SocketAddr,
    /// Idle connections held.
    pub idle: usize,
    /// Slow senders.
    pub slow: usize,
    /// Pipelined floods.
    pub floods: usize,
    /// Connection attempts per second, first ones and reopenings together.
    pub connect_rate: u32,
    /// Reopen idle connections the server closed or refused (churn); else each idle
    /// connection is attempted once (slow senders and floods are always reopened).
    pub reopen_idle: bool,
    /// The thread stops by itself after this long.
    pub limit: Duration,
    /// Length-prefixed queries a flood sends round and round.
    pub flood_bytes: Vec<u8>,
    /// One length-prefixed query a slow sender sends byte by byte.
    pub slow_message: Vec<u8>,
}

impl AbuseConfig {
    /// Sockets the abuse may hold at once.
    pub fn sockets(&self) -> usize {
        self.idle + self.slow + self.floods
    }
}

/// What the abuse did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AbuseStats {
    /// Connection attempts.
    pub attempts: u64,
    /// Connections established.
    pub established: u64,
    /// Attempts refused or failed (socket, connect or SO_ERROR).
    pub failed: u64,
    /// Attempts still pending after 3 s, given up to be retried (the server's backlog
    /// was full; idle connections attempted once are left pending instead).
    pub timed_out: u64,
    /// Open connections the server closed (EOF, reset, error).
    pub closed_by_server: u64,
    /// Most connections open at once: idle, slow, flood.
    pub peak_open: [u64; 3],
    /// Connections open when the abuse stopped: idle, slow, flood.
    pub open_at_end: [u64; 3],
    /// Bytes the slow senders sent.
    pub slow_bytes: u64,
    /// Bytes the floods sent.
    pub flood_bytes: u64,
    /// Seconds it ran.
    pub secs: f64,
}

/// The abuse, running on its own thread until [`Abuse::stop`] or its limit.
#[derive(Debug)]
pub struct Abuse {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<io::Result<AbuseStats>>>,
}

impl Abuse {
    /// Starts the thread (it inherits the caller's CPU affinity and signal mask).
    pub fn start(cfg: AbuseConfig) -> io::Result<Abuse> {
        if cfg.flood_bytes.is_empty() || cfg.slow_message.is_empty() || cfg.connect_rate == 0 {
            return Err(io::Error::other(
                "abuse needs flood and slow messages and a connect rate",
            ));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("tcp-abuse".into())
            .spawn(move || run(&cfg, &flag))?;
        Ok(Abuse {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops the abuse (every socket reset) and returns what it did.
    pub fn stop(mut self) -> io::Result<AbuseStats> {
        self.finish()
    }

    fn finish(&mut self) -> io::Result<AbuseStats> {
        self.stop.store(true, Ordering::SeqCst);
        match self.handle.take() {
            Some(h) => h
                .join()
                .map_err(|_| io::Error::other("abuse thread panicked"))?,
            None => Ok(AbuseStats::default()),
        }
    }
}

impl Drop for Abuse {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// State of one connection slot.
#[derive(Debug)]
enum State {
    /// Not open; waiting in the closed queue.
    Closed,
    /// Connect in progress since then.
    Connecting(Instant),
    /// Open; bytes of the role's message sent so far.
    Open(usize),
}

#[derive(Debug)]
struct Slot {
    role: Role,
    stream: Option<TcpStream>,
    state: State,
}

/// The connections and their counters.
struct Abuser<'a> {
    cfg: &'a AbuseConfig,
    epoll: Epoll,
    slots: Vec<Slot>,
    closed: VecDeque<usize>,
    open: [u64; 3],
    stats: AbuseStats,
    addr: SockaddrStorage,
}

fn run(cfg: &AbuseConfig, stop: &AtomicBool) -> io::Result<AbuseStats> {
    let start = Instant::now();
    let mut a = Abuser {
        cfg,
        epoll: Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?,
        slots: Vec::with_capacity(cfg.sockets()),
        closed: VecDeque::with_capacity(cfg.sockets()),
        open: [0; 3],
        stats: AbuseStats::default(),
        addr: SockaddrStorage::from(cfg.server),
    };
    // Floods and slow senders first: they are few and must not wait behind 10,000 idle.
    for (role, n) in [
        (Role::Flood, cfg.floods),
        (Role::Slow, cfg.slow),
        (Role::Idle, cfg.idle),
    ] {
        for _ in 0..n {
            a.closed.push_back(a.slots.len());
            a.slots.push(Slot {
                role,
                stream: None,
                state: State::Closed,
            });
        }
    }
    let rate = f64::from(cfg.connect_rate);
    let mut budget = 0.0f64;
    let mut last = Instant::now();
    let mut next_second = start + Duration::from_secs(1);
    let mut events = vec![EpollEvent::empty(); 1024];
    while !stop.load(Ordering::Relaxed) && start.elapsed() < cfg.limit {
        let now = Instant::now();
        // At most 10 ms worth of connects at once.
        budget = (budget + (now - last).as_secs_f64() * rate).min(rate / 100.0 + 1.0);
        last = now;
        while budget >= 1.0 {
            let Some(i) = a.closed.pop_front() else {
                break;
            };
            budget -= 1.0;
            a.open_slot(i);
        }
        let n = match a.epoll.wait(&mut events, 10u16) {
            Ok(n) => n,
            Err(nix::Error::EINTR) => 0,
            Err(e) => return Err(e.into()),
        };
        for ev in &events[..n] {
            a.event(ev.data() as usize, ev.events());
        }
        if Instant::now() >= next_second {
            next_second += Duration::from_secs(1);
            a.each_second();
        }
    }
    a.stats.open_at_end = a.open;
    for i in 0..a.slots.len() {
        a.close(i);
    }
    a.stats.secs = start.elapsed().as_secs_f64();
    Ok(a.stats)
}

impl Abuser<'_> {
    /// Starts a non-blocking connect for slot `i`.
    fn open_slot(&mut self, i: usize) {
        self.stats.attempts += 1;
        let fd = match socket(
            AddressFamily::Inet,
            SockType::Stream,
            SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
            None,
        ) {
            Ok(fd) => fd,
            Err(_) => {
                self.failed(i);
                return;
            }
        };
        match connect(fd.as_raw_fd(), &self.addr) {
            Ok(()) | Err(nix::Error::EINPROGRESS) => {}
            Err(_) => {
                self.failed(i);
                return;
            }
        }
        let stream = TcpStream::from(fd);
        let interest = EpollFlags::EPOLLOUT | EpollFlags::EPOLLRDHUP;
        if self
            .epoll
            .add(&stream, EpollEvent::new(interest, i as u64))
            .is_err()
        {
            reset(&stream);
            self.failed(i);
            return;
        }
        let slot = &mut self.slots[i];
        slot.stream = Some(stream);
        slot.state = State::Connecting(Instant::now());
    }

    fn failed(&mut self, i: usize) {
        self.stats.failed += 1;
        self.requeue(i);
    }

    /// Queues slot `i` for reopening, unless it is an idle one attempted once.
    fn requeue(&mut self, i: usize) {
        if self.cfg.reopen_idle || self.slots[i].role != Role::Idle {
            self.closed.push_back(i);
        }
    }

    /// Handles readiness `ev` of slot `i`.
    fn event(&mut self, i: usize, ev: EpollFlags) {
        let broken = ev.intersects(EpollFlags::EPOLLERR | EpollFlags::EPOLLHUP);
        match self.slots[i].state {
            State::Closed => {}
            State::Connecting(_) => {
                let ok = !broken
                    && self.slots[i]
                        .stream
                        .as_ref()
                        .is_some_and(|s| matches!(getsockopt(s, sockopt::SocketError), Ok(0)));
                if ok {
                    self.connected(i);
                } else {
                    self.stats.failed += 1;
                    self.close(i);
                }
            }
            State::Open(_) => {
                if broken {
                    self.server_closed(i);
                    return;
                }
                let role = self.slots[i].role;
                if role == Role::Flood {
                    if ev.contains(EpollFlags::EPOLLRDHUP) {
                        self.server_closed(i);
                    } else if ev.contains(EpollFlags::EPOLLOUT) {
                        self.flood(i);
                    }
                } else if ev.intersects(EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP) {
                    self.drain(i);
                }
            }
        }
    }

    /// Slot `i`'s connect completed.
    fn connected(&mut self, i: usize) {
        self.stats.established += 1;
        let role = self.slots[i].role;
        self.slots[i].state = State::Open(0);
        let k = role.index();
        self.open[k] += 1;
        self.stats.peak_open[k] = self.stats.peak_open[k].max(self.open[k]);
        let interest = match role {
            Role::Flood => EpollFlags::EPOLLOUT | EpollFlags::EPOLLRDHUP,
            _ => EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP,
        };
        if let Some(s) = &self.slots[i].stream {
            let mut ev = EpollEvent::new(interest, i as u64);
            if self.epoll.modify(s, &mut ev).is_err() {
                self.server_closed(i);
                return;
            }
        }
        match role {
            Role::Idle => {}
            // The length prefix at once; then a byte a second.
            Role::Slow => self.slow_bytes(i, 2),
            Role::Flood => self.flood(i),
        }
    }

    /// Sends up to `n` more bytes of the slow message on slot `i`.
    fn slow_bytes(&mut self, i: usize, n: usize) {
        let msg = &self.cfg.slow_message;
        let State::Open(sent) = self.slots[i].state else {
            return;
        };
        let Some(s) = &self.slots[i].stream else {
            return;
        };
        let mut done = 0;
        while done < n {
            let at = (sent + done) % msg.len();
            let end = (at + (n - done)).min(msg.len());
            match send(s.as_raw_fd(), &msg[at..end], MsgFlags::MSG_NOSIGNAL) {
                Ok(k) if k > 0 => done += k,
                Ok(_) | Err(nix::Error::EAGAIN) => break,
                Err(_) => {
                    self.server_closed(i);
                    return;
                }
            }
        }
        self.stats.slow_bytes += done as u64;
        self.slots[i].state = State::Open(sent + done);
    }

    /// Writes queries on flood slot `i` until the socket is full.
    fn flood(&mut self, i: usize) {
        let buf = &self.cfg.flood_bytes;
        let State::Open(mut sent) = self.slots[i].state else {
            return;
        };
        let Some(s) = &self.slots[i].stream else {
            return;
        };
        // Bounded per call so one flood cannot starve the loop.
        for _ in 0..64 {
            let at = sent % buf.len();
            match send(s.as_raw_fd(), &buf[at..], MsgFlags::MSG_NOSIGNAL) {
                Ok(k) if k > 0 => {
                    sent += k;
                    self.stats.flood_bytes += k as u64;
                }
                Ok(_) | Err(nix::Error::EAGAIN) => break,
                Err(_) => {
                    self.slots[i].state = State::Open(sent);
                    self.server_closed(i);
                    return;
                }
            }
        }
        self.slots[i].state = State::Open(sent);
    }

    /// Reads and drops what slot `i` received; EOF or an error closes it.
    fn drain(&mut self, i: usize) {
        let mut buf = [0u8; 4096];
        loop {
            let Some(mut s) = self.slots[i].stream.as_ref() else {
                return;
            };
            match s.read(&mut buf) {
                Ok(0) => {
                    self.server_closed(i);
                    return;
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.server_closed(i);
                    return;
                }
            }
        }
    }

    /// Once a second: slow senders send a byte; connects pending > 3 s are given up.
    fn each_second(&mut self) {
        for i in 0..self.slots.len() {
            match self.slots[i].state {
                State::Open(_) if self.slots[i].role == Role::Slow => self.slow_bytes(i, 1),
                // An idle connection attempted once stays pending (the kernel retries
                // the SYN) until the server accepts it.
                State::Connecting(t)
                    if t.elapsed() > Duration::from_secs(3)
                        && (self.cfg.reopen_idle || self.slots[i].role != Role::Idle) =>
                {
                    self.stats.timed_out += 1;
                    self.close(i);
                }
                _ => {}
            }
        }
    }

    fn server_closed(&mut self, i: usize) {
        if matches!(self.slots[i].state, State::Open(_)) {
            self.stats.closed_by_server += 1;
        }
        self.close(i);
    }

    /// Resets slot `i`'s connection (if any) and queues it for reopening.
    fn close(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        if let State::Open(_) = slot.state {
            self.open[slot.role.index()] -= 1;
        }
        if let Some(s) = slot.stream.take() {
            let _ = self.epoll.delete(&s);
            reset(&s);
        }
        if !matches!(slot.state, State::Closed) {
            slot.state = State::Closed;
            self.requeue(i);
        }
    }
}

/// Makes the close of `s` a reset: neither side keeps a TIME_WAIT entry.
fn reset(s: &TcpStream) {
    let linger = nix::libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    let _ = setsockopt(s, sockopt::Linger, &linger);
}

/// Length-prefixed copies of `queries` (wire form, IDs set from 1), back to back.
pub fn tcp_stream_of(queries: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut id = 0u16;
    for q in queries {
        if q.len() < 12 || q.len() > usize::from(u16::MAX) {
            continue;
        }
        id = id.wrapping_add(1);
        out.extend_from_slice(&(q.len() as u16).to_be_bytes());
        let start = out.len();
        out.extend_from_slice(q);
        out[start..start + 2].copy_from_slice(&id.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn stream_framing() {
        let q = [0u8; 20];
        let s = tcp_stream_of(&[&q, &q[..5], &q]);
        assert_eq!(s.len(), 2 * 22, "a short message is skipped");
        assert_eq!(&s[..4], &[0, 20, 0, 1]);
        assert_eq!(&s[22..26], &[0, 20, 0, 2]);
    }

    /// Against a listener that accepts and holds everything, then closes some: the
    /// abuse opens its connections, sends the slow bytes and the flood until the
    /// socket is full, reopens what the server closed, and stops at its limit.
    #[test]
    fn abuse_opens_floods_and_reopens() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
        let server = listener.local_addr().expect("addr");
        listener.set_nonblocking(true).expect("nonblocking");
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let acceptor = std::thread::spawn(move || {
            let mut held = Vec::new();
            let mut closed = 0;
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((s, _)) => {
                        held.push(s);
                        // Close every 4th connection at once: it must be reopened.
                        if held.len() % 4 == 0 && closed < 3 {
                            held.pop();
                            closed += 1;
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
            held.len()
        });
        let q = [0u8; 30];
        let cfg = AbuseConfig {
            server,
            idle: 20,
            slow: 3,
            floods: 2,
            connect_rate: 5000,
            reopen_idle: true,
            limit: Duration::from_millis(1500),
            flood_bytes: tcp_stream_of(&[&q[..]; 8]),
            slow_message: tcp_stream_of(&[&q]),
        };
        let t = Instant::now();
        let abuse = Abuse::start(cfg).expect("start");
        std::thread::sleep(Duration::from_millis(1300));
        let stats = abuse.stop().expect("stats");
        done.store(true, Ordering::Relaxed);
        let held = acceptor.join().expect("acceptor");
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(stats.established >= 25, "{stats:?}");
        assert!(stats.closed_by_server >= 1, "{stats:?}");
        assert!(stats.attempts > 25, "closed ones reopened: {stats:?}");
        assert_eq!(stats.open_at_end[1], 3, "{stats:?}");
        assert_eq!(stats.peak_open[2], 2, "{stats:?}");
        // 2 prefix bytes at once, one more after a second.
        assert!(stats.slow_bytes >= 9, "{stats:?}");
        assert!(
            stats.flood_bytes > 64 * 1024,
            "floods fill the socket: {stats:?}"
        );
        assert!(held >= 22, "{held}");
    }

    /// With nobody listening every attempt fails, within the connect budget.
    #[test]
    fn refused_attempts_are_bounded() {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port");
        let q = [0u8; 30];
        let cfg = AbuseConfig {
            server: port,
            idle: 50,
            slow: 0,
            floods: 0,
            connect_rate: 1000,
            reopen_idle: true,
            limit: Duration::from_millis(500),
            flood_bytes: tcp_stream_of(&[&q]),
            slow_message: tcp_stream_of(&[&q]),
        };
        let stats = Abuse::start(cfg).expect("start").stop().expect("stats");
        assert_eq!(stats.established, 0);
        assert!(stats.attempts <= 520, "{stats:?}");
        assert!(
            stats.failed + stats.timed_out >= stats.attempts.saturating_sub(60),
            "{stats:?}"
        );
    }
}
