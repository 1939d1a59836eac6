//! Sending the messages: pipelined on TCP connections, TSIG on every request
//! and every reply, and the bookkeeping that makes "last acknowledged" exact.
//!
//! ```text
//!  next index (shared) ─▶ sender of connection c: wait for room in its window,
//!                          pace, sign, remember (ID → index, request MAC), write
//!                          receiver of connection c: read a reply, match the ID,
//!  Tracker ◀── outcome ──── verify TSIG, RCODE → acknowledged or failed
//!    prefix: messages 0..p all acknowledged → last acknowledged line
//! ```
//!
//! The first failure stops new sends; replies to messages already in flight
//! are still collected (they may have been applied), then the run ends.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use lode_tsig::{Key, MacBuf};

use super::input::Message;

/// The fate of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// NOERROR (and a good TSIG).
    Acked,
    /// Anything else, with the reason.
    Failed(String),
}

/// Outcomes per message and the acknowledged prefix.
#[derive(Debug, Default)]
pub struct Tracker {
    outcomes: Vec<Option<Outcome>>,
    /// Messages `0..prefix` are all acknowledged.
    prefix: usize,
}

impl Tracker {
    /// A tracker of `n` messages.
    pub fn new(n: usize) -> Tracker {
        Tracker {
            outcomes: vec![None; n],
            prefix: 0,
        }
    }

    /// Records message `i`'s outcome (the first one counts).
    pub fn record(&mut self, i: usize, outcome: Outcome) {
        if let Some(slot) = self.outcomes.get_mut(i) {
            if slot.is_none() {
                *slot = Some(outcome);
            }
        }
        while matches!(self.outcomes.get(self.prefix), Some(Some(Outcome::Acked))) {
            self.prefix += 1;
        }
    }

    /// How many messages from the first are all acknowledged.
    pub fn prefix(&self) -> usize {
        self.prefix
    }

    /// The first failed message, with its reason.
    pub fn first_failure(&self) -> Option<(usize, &str)> {
        self.outcomes.iter().enumerate().find_map(|(i, o)| match o {
            Some(Outcome::Failed(r)) => Some((i, r.as_str())),
            _ => None,
        })
    }

    /// Messages after the prefix that were acknowledged anyway.
    pub fn acked_beyond_prefix(&self) -> usize {
        self.outcomes[self.prefix.min(self.outcomes.len())..]
            .iter()
            .filter(|o| matches!(o, Some(Outcome::Acked)))
            .count()
    }
}

/// How to send.
#[derive(Debug, Clone)]
pub struct SendConfig {
    /// The server.
    pub server: SocketAddr,
    /// TSIG key (None: unsigned).
    pub key: Option<Key>,
    /// TCP connections.
    pub connections: usize,
    /// Messages in flight per connection.
    pub window: usize,
    /// Records per second (None: as fast as the server acknowledges).
    pub rate: Option<f64>,
    /// How long to wait for a reply.
    pub timeout: Duration,
}

/// Counters the progress display reads.
#[derive(Debug, Default)]
pub struct Progress {
    /// Records acknowledged.
    pub records: AtomicU64,
    /// Messages acknowledged.
    pub messages: AtomicU64,
}

/// A message in flight on one connection.
struct Pending {
    index: usize,
    mac: MacBuf,
    sent: Instant,
}

/// One connection's in-flight table.
#[derive(Default)]
struct Flight {
    pending: HashMap<u16, Pending>,
    /// The sender has sent its last message.
    sender_done: bool,
    /// The connection is unusable.
    dead: bool,
    /// The server closed the connection while nothing was in flight (an idle
    /// timeout, RFC 7766 §6.2.3): the sender opens another for what is next.
    closed_idle: bool,
}

/// State shared by all connections.
struct Shared<'a> {
    messages: &'a [Message],
    /// Records before message i (for pacing).
    before: Vec<u64>,
    next: AtomicUsize,
    stop: AtomicBool,
    tracker: Mutex<Tracker>,
    progress: &'a Progress,
    start: Instant,
}

impl Shared<'_> {
    fn outcome(&self, i: usize, o: Outcome) {
        if o == Outcome::Acked {
            self.progress
                .records
                .fetch_add(self.messages[i].updates.len() as u64, Ordering::Relaxed);
            self.progress.messages.fetch_add(1, Ordering::Relaxed);
        } else {
            self.stop.store(true, Ordering::Release);
        }
        if let Ok(mut t) = self.tracker.lock() {
            t.record(i, o);
        }
    }
}

use lode_io::clock::unix_now;

/// Sends every message; returns the tracker when all are answered or the
/// run stopped at a failure.
pub fn run(
    cfg: &SendConfig,
    messages: &[Message],
    progress: &Progress,
) -> std::io::Result<Tracker> {
    let mut before = Vec::with_capacity(messages.len());
    let mut sum = 0u64;
    for m in messages {
        before.push(sum);
        sum += m.updates.len() as u64;
    }
    let shared = Shared {
        messages,
        before,
        next: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        tracker: Mutex::new(Tracker::new(messages.len())),
        progress,
        start: Instant::now(),
    };
    let mut streams = Vec::new();
    for _ in 0..cfg.connections.max(1) {
        let s = TcpStream::connect_timeout(&cfg.server, cfg.timeout)?;
        s.set_nodelay(true)?;
        streams.push(s);
    }
    std::thread::scope(|scope| {
        for s in streams {
            let shared = &shared;
            scope.spawn(move || connection(cfg, shared, s));
        }
    });
    shared
        .tracker
        .into_inner()
        .map_err(|_| std::io::Error::other("tracker poisoned"))
}

/// Runs one connection: a sender (this thread) and a receiver; another
/// connection each time the server closes one while it is idle (a slow pace
/// leaves it idle longer than the server's idle timeout, 10 s in Lode and Knot).
fn connection(cfg: &SendConfig, shared: &Shared<'_>, mut stream: TcpStream) {
    let mut first = None;
    loop {
        let flight = (Mutex::new(Flight::default()), Condvar::new());
        let reader = match stream.try_clone() {
            Ok(r) => r,
            Err(_) => return,
        };
        let next = std::thread::scope(|scope| {
            scope.spawn(|| receive(cfg, shared, reader, &flight));
            let next = send(cfg, shared, &stream, &flight, first);
            // Wait for the replies to what was sent, then let the receiver end.
            let (lock, cv) = &flight;
            if let Ok(mut f) = lock.lock() {
                f.sender_done = true;
                cv.notify_all();
            }
            next
        });
        let _ = stream.shutdown(Shutdown::Both);
        let Some(i) = next else { return };
        match TcpStream::connect_timeout(&cfg.server, cfg.timeout).and_then(|s| {
            s.set_nodelay(true)?;
            Ok(s)
        }) {
            Ok(s) => {
                stream = s;
                first = Some(i);
            }
            Err(e) => {
                shared.outcome(
                    i,
                    Outcome::Failed(format!(
                        "connecting again after the server closed an idle connection: {e}"
                    )),
                );
                return;
            }
        }
    }
}

/// The sending half of a connection, starting with message `first` when
/// given. Returns the message to send on a new connection when the server
/// closed this one while it was idle.
fn send(
    cfg: &SendConfig,
    shared: &Shared<'_>,
    mut stream: &TcpStream,
    flight: &(Mutex<Flight>, Condvar),
    mut first: Option<usize>,
) -> Option<usize> {
    let (lock, cv) = flight;
    let mut buf = Vec::with_capacity(65_536);
    loop {
        // Room in the window?
        {
            let Ok(mut f) = lock.lock() else { return None };
            while f.pending.len() >= cfg.window && !f.dead && !shared.stop.load(Ordering::Acquire) {
                f = match cv.wait_timeout(f, Duration::from_millis(100)) {
                    Ok((g, _)) => g,
                    Err(_) => return None,
                };
            }
            if f.dead || shared.stop.load(Ordering::Acquire) {
                return None;
            }
        }
        let i = first
            .take()
            .unwrap_or_else(|| shared.next.fetch_add(1, Ordering::AcqRel));
        let m = shared.messages.get(i)?;
        if let Some(rate) = cfg.rate {
            let due = shared.start + Duration::from_secs_f64(shared.before[i] as f64 / rate);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
        let id = i as u16;
        let mut msg = m.encode(id);
        let mac = match &cfg.key {
            Some(key) => match lode_tsig::sign_request_vec(&mut msg, key, unix_now()) {
                Ok(mac) => mac,
                Err(e) => {
                    shared.outcome(i, Outcome::Failed(format!("TSIG signing failed: {e}")));
                    return None;
                }
            },
            None => MacBuf::default(),
        };
        buf.clear();
        buf.extend_from_slice(&(msg.len() as u16).to_be_bytes());
        buf.extend_from_slice(&msg);
        {
            // Checked and registered under one lock: the receiver either saw
            // the close first (a new connection takes the message) or finds
            // it in flight and fails it.
            let Ok(mut f) = lock.lock() else { return None };
            if f.closed_idle {
                return Some(i);
            }
            f.pending.insert(
                id,
                Pending {
                    index: i,
                    mac,
                    sent: Instant::now(),
                },
            );
        }
        if let Err(e) = stream.write_all(&buf) {
            shared.outcome(
                i,
                Outcome::Failed(format!("connection lost while sending: {e}")),
            );
            if let Ok(mut f) = lock.lock() {
                f.pending.remove(&id);
                f.dead = true;
                cv.notify_all();
            }
            return None;
        }
    }
}

/// The receiving half of a connection: until the sender is done and nothing
/// is in flight, or the connection fails.
fn receive(
    cfg: &SendConfig,
    shared: &Shared<'_>,
    mut stream: TcpStream,
    flight: &(Mutex<Flight>, Condvar),
) {
    let (lock, cv) = flight;
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    let mut buf: Vec<u8> = Vec::with_capacity(65_536 + 2);
    let mut chunk = vec![0u8; 65_536];
    // Fails every message in flight on this connection.
    let fail_all = |why: &str| {
        if let Ok(mut f) = lock.lock() {
            f.dead = true;
            for (_, p) in f.pending.drain() {
                shared.outcome(p.index, Outcome::Failed(why.to_owned()));
            }
            cv.notify_all();
        }
    };
    loop {
        // A whole reply in the buffer?
        if buf.len() >= 2 {
            let len = usize::from(u16::from_be_bytes([buf[0], buf[1]]));
            if buf.len() >= 2 + len {
                let reply: Vec<u8> = buf.drain(..2 + len).skip(2).collect();
                if let Err(why) = handle_reply(cfg, shared, &reply, lock) {
                    fail_all(&why);
                    return;
                }
                cv.notify_all();
                continue;
            }
        }
        {
            let Ok(f) = lock.lock() else { return };
            if f.pending.is_empty() && (f.sender_done || f.dead) {
                return;
            }
            if let Some(old) = f.pending.values().map(|p| p.sent).min() {
                if old.elapsed() > cfg.timeout {
                    drop(f);
                    fail_all(&format!("no reply within {:?}", cfg.timeout));
                    return;
                }
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) => {
                let Ok(mut f) = lock.lock() else { return };
                if f.pending.is_empty() && !f.sender_done {
                    // Closed while idle: the sender connects again.
                    f.closed_idle = true;
                    cv.notify_all();
                    return;
                }
                drop(f);
                fail_all("the server closed the connection");
                return;
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => {
                fail_all(&format!("connection lost: {e}"));
                return;
            }
        }
    }
}

/// Matches a reply to its request and records the outcome; an error means
/// the connection cannot be trusted any more.
fn handle_reply(
    cfg: &SendConfig,
    shared: &Shared<'_>,
    reply: &[u8],
    lock: &Mutex<Flight>,
) -> Result<(), String> {
    if reply.len() < 12 {
        return Err(format!("a reply of {} octets (too short)", reply.len()));
    }
    let id = u16::from_be_bytes([reply[0], reply[1]]);
    let pending = lock
        .lock()
        .map_err(|_| "poisoned".to_owned())?
        .pending
        .remove(&id);
    let Some(p) = pending else {
        return Err(format!(
            "a reply with ID {id}, which no request in flight has"
        ));
    };
    if reply[2] & 0x80 == 0 || (reply[2] >> 3) & 0x0F != lode_wire::opcode::UPDATE {
        shared.outcome(
            p.index,
            Outcome::Failed("the reply is not an UPDATE response".into()),
        );
        return Ok(());
    }
    let rcode = u16::from(reply[3] & 0x0F);
    if let Some(key) = &cfg.key {
        if let Err(e) = lode_tsig::verify_response(reply, key, p.mac.as_slice(), unix_now()) {
            // An unsigned NOTAUTH: the server did not look at the key, as
            // for a zone it does not serve (RFC 2136 §3.1.1).
            if rcode == lode_wire::rcode::NOTAUTH && e == lode_tsig::VerifyError::Unsigned {
                shared.outcome(
                    p.index,
                    Outcome::Failed(
                        "NOTAUTH, unsigned: the zone is not served there (check --zone)".into(),
                    ),
                );
                return Ok(());
            }
            let rc = lode_wire::rcode::name(rcode);
            shared.outcome(p.index, Outcome::Failed(format!("{rc}, TSIG: {e}")));
            return Ok(());
        }
    }
    if rcode == 0 {
        shared.outcome(p.index, Outcome::Acked);
    } else {
        shared.outcome(
            p.index,
            Outcome::Failed(lode_wire::rcode::name(rcode).into_owned()),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_is_exact_with_replies_out_of_order() {
        let mut t = Tracker::new(5);
        t.record(2, Outcome::Acked);
        t.record(1, Outcome::Acked);
        assert_eq!(t.prefix(), 0);
        t.record(0, Outcome::Acked);
        assert_eq!(t.prefix(), 3);
        t.record(4, Outcome::Acked);
        t.record(3, Outcome::Failed("NXRRSET".into()));
        assert_eq!(t.prefix(), 3);
        assert_eq!(t.first_failure(), Some((3, "NXRRSET")));
        assert_eq!(t.acked_beyond_prefix(), 1);
    }
}
