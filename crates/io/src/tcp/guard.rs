//! The registry of open TCP connections and the rules that close them to
//! make room: the idlest for a new client when full (the idlest of its own
//! source when that source is at its limit), every idle one past the short
//! timeout under pressure. Also the rate-limited log of those closings.
//!
//! The registry is a slab behind a mutex taken on accept, on close and by
//! the sweeper, never per message. A connection publishes its state in one
//! atomic word: the time (ms since the server started) of its last complete
//! message, and two flags. It sets `BUSY` while it handles what it read,
//! writes, or owes deferred replies; the registry marks `EVICTED` only on a
//! word without `BUSY` (compare-and-swap), so a connection is never closed
//! with a reply owed, and a connection that finds `EVICTED` when it wakes up
//! stops without answering.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::{Counters, TcpConfig};

/// The connection handles, writes, or owes a deferred reply.
const BUSY: u64 = 1;
/// The registry closed the connection; it stops when it sees this.
const EVICTED: u64 = 2;
/// Bits of the state word below the time.
const FLAG_BITS: u32 = 2;

/// Lines about closed connections logged per [`LOG_WINDOW`]; the rest are
/// counted and summarised in one line.
const LOG_LINES: u32 = 5;
/// Period of the log budget.
const LOG_WINDOW: Duration = Duration::from_secs(1);

/// One open connection as the registry sees it.
#[derive(Debug)]
pub(super) struct Conn {
    pub(super) peer: SocketAddr,
    source: IpAddr,
    slot: usize,
    /// `(last complete message, ms) << FLAG_BITS | flags`.
    state: AtomicU64,
    /// Woken when the registry closed the connection.
    pub(super) cancel: Notify,
}

impl Conn {
    /// Marks the connection busy (it read something or owes replies);
    /// false when it was closed meanwhile and must stop.
    pub(super) fn begin_work(&self) -> bool {
        self.state.fetch_or(BUSY, Ordering::Relaxed) & EVICTED == 0
    }

    /// Marks the connection idle since `last_ms` (its last complete
    /// message). Called only while busy, so no eviction is lost.
    pub(super) fn end_work(&self, last_ms: u64) {
        self.state.store(last_ms << FLAG_BITS, Ordering::Relaxed);
    }

    /// Closes an idle connection: its last activity (ms), or `None` when it
    /// is busy or already closed.
    fn try_evict(&self) -> Option<u64> {
        let v = self.state.load(Ordering::Relaxed);
        if v & (BUSY | EVICTED) != 0 {
            return None;
        }
        self.state
            .compare_exchange(v, v | EVICTED, Ordering::Relaxed, Ordering::Relaxed)
            .ok()
            .map(|_| v >> FLAG_BITS)
    }
}

/// Why a connection was closed or refused (for counters and the log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reason {
    /// Closed, the idlest, so a new client could be accepted.
    IdleForNew,
    /// Closed, the idlest of its source, for a new client from the same
    /// source at its limit.
    IdleSameSource,
    /// Closed, idle past the short timeout while the server was crowded.
    IdlePressure,
    /// Refused, its source has its limit open and none idle.
    PerSource,
    /// Refused, the server is full and no connection is idle.
    Full,
    /// Closed, a message took longer than the I/O timeout to arrive.
    ReadTimeout,
    /// Closed, a reply could not be written within the I/O timeout.
    WriteTimeout,
}

const REASONS: usize = 7;

impl Reason {
    fn index(self) -> usize {
        self as usize
    }
    fn summary(index: usize) -> &'static str {
        [
            "closed idle for a new client",
            "closed idle for a new client from the same source",
            "closed idle under pressure",
            "refused over the per-source limit",
            "refused when full",
            "closed on a slow query",
            "closed on unread replies",
        ][index]
    }
}

/// A log budget of [`LOG_LINES`] per [`LOG_WINDOW`] for closed connections;
/// the rest are summarised once the window is over.
#[derive(Debug)]
struct CloseLog {
    window: Mutex<Window>,
}

#[derive(Debug)]
struct Window {
    start: Instant,
    lines: u32,
    more: [u64; REASONS],
}

impl CloseLog {
    fn new() -> Self {
        CloseLog {
            window: Mutex::new(Window {
                start: Instant::now(),
                lines: 0,
                more: [0; REASONS],
            }),
        }
    }

    /// True when a line about `reason` may be logged now; otherwise counts it.
    fn allow(&self, reason: Reason) -> bool {
        let mut w = lock(&self.window);
        Self::roll(&mut w);
        if w.lines < LOG_LINES {
            w.lines += 1;
            true
        } else {
            w.more[reason.index()] += 1;
            false
        }
    }

    /// Whether lines were held back that a later [`CloseLog::flush`] summarises.
    fn holds_lines(&self) -> bool {
        lock(&self.window).more.iter().any(|&n| n > 0)
    }

    /// Summarises what the last window did not log, once it is over.
    fn flush(&self) {
        Self::roll(&mut lock(&self.window));
    }

    fn roll(w: &mut Window) {
        let age = w.start.elapsed();
        if age < LOG_WINDOW {
            return;
        }
        let total: u64 = w.more.iter().sum();
        if total > 0 {
            let parts: Vec<String> = w
                .more
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(i, n)| format!("{n} {}", Reason::summary(i)))
                .collect();
            tracing::warn!(
                "tcp: … {total} more connections closed or refused in the last {:.1}s ({})",
                age.as_secs_f64(),
                parts.join(", ")
            );
        }
        *w = Window {
            start: Instant::now(),
            lines: 0,
            more: [0; REASONS],
        };
    }
}

/// Open connections: slots, free slots, and counts per source.
#[derive(Debug, Default)]
struct Slab {
    slots: Vec<Option<Arc<Conn>>>,
    free: Vec<usize>,
    open: usize,
    per_source: HashMap<IpAddr, usize>,
    /// Eviction candidates (reused, so a full server allocates nothing).
    scratch: Vec<(u64, usize)>,
}

/// What the registry decided for a new connection.
#[derive(Debug)]
pub(super) enum Admission {
    /// Accepted (connections closed to make room were logged).
    Open(Arc<Conn>),
    /// Refused: the source holds this many connections.
    PerSource(usize),
    /// Refused: full and nothing idle.
    Full,
}

/// The connections of one server, shared by its listeners.
#[derive(Debug)]
pub(super) struct Registry {
    slab: Mutex<Slab>,
    counters: Arc<Counters>,
    log: CloseLog,
    epoch: Instant,
    /// The limits, which a reload may change ([`Registry::set_limits`]):
    /// new connections are admitted and set up under the limits of the
    /// moment.
    bounds: Bounds,
    /// Wakes the parked sweeper: crowding began, or a log line was held back.
    sweep_wanted: Notify,
}

/// [`Registry`]'s limits, each read on its own (a reload changing them
/// while a connection is admitted may mix old and new for that one).
#[derive(Debug, Default)]
struct Bounds {
    max_clients: AtomicUsize,
    per_source: AtomicUsize,
    /// Open connections above which the short idle timeout applies.
    pressure_open: AtomicUsize,
    pressure_idle_ms: AtomicU64,
    /// Connections closed at once when full, to amortise the scan.
    evict_batch: AtomicUsize,
    io_timeout_ms: AtomicU64,
    idle_timeout_ms: AtomicU64,
    handshake_timeout_ms: AtomicU64,
}

impl Bounds {
    fn set(&self, config: &TcpConfig) {
        let max_clients = config.max_clients.max(1);
        let ms = |d: Duration| d.as_millis() as u64;
        let o = Ordering::Relaxed;
        self.max_clients.store(max_clients, o);
        self.per_source.store(config.per_source_limit(), o);
        self.pressure_open.store(max_clients * 3 / 4, o);
        self.pressure_idle_ms
            .store(ms(config.pressure_idle_timeout), o);
        self.evict_batch.store((max_clients / 1024).max(1), o);
        self.io_timeout_ms.store(ms(config.io_timeout), o);
        self.idle_timeout_ms.store(ms(config.idle_timeout), o);
        self.handshake_timeout_ms
            .store(ms(config.handshake_timeout), o);
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding these locks leaves consistent data (plain
    // counts and slots), so a poisoned lock is used as it is.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The key of the per-source limit: the IPv4 address, or the /64 of an
/// IPv6 address (what one host usually holds); IPv4-mapped addresses count
/// as IPv4.
fn source_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

impl Registry {
    pub(super) fn new(config: &TcpConfig, counters: Arc<Counters>) -> Self {
        let bounds = Bounds::default();
        bounds.set(config);
        Registry {
            slab: Mutex::new(Slab::default()),
            counters,
            log: CloseLog::new(),
            epoch: Instant::now(),
            bounds,
            sweep_wanted: Notify::new(),
        }
    }

    /// Whether the sweeper has nothing to do: not crowded, no log line held
    /// back. It then parks until [`Registry::sweep_wanted`] wakes it, so an
    /// idle server does not wake ten times a second.
    pub(super) fn nothing_to_sweep(&self) -> bool {
        self.counters.open.load(Ordering::Relaxed)
            <= self.bounds.pressure_open.load(Ordering::Relaxed)
            && !self.log.holds_lines()
    }

    /// Waits until the sweeper may have something to do (a wake-up sent
    /// before the wait is kept: none is lost between a check and the wait).
    pub(super) async fn sweep_wanted(&self) {
        self.sweep_wanted.notified().await;
    }

    /// Takes `config`'s limits for what comes next (a reload): connections
    /// admitted from now on, the crowding checks, the I/O, idle and
    /// handshake timeouts of new connections. Open connections are not
    /// closed when the limit falls below their number; the idlest go as
    /// new ones come.
    pub(super) fn set_limits(&self, config: &TcpConfig) {
        self.bounds.set(config);
        // Lower limits may make the open connections a crowd.
        self.sweep_wanted.notify_one();
    }

    fn max_clients(&self) -> usize {
        self.bounds.max_clients.load(Ordering::Relaxed)
    }

    fn per_source(&self) -> usize {
        self.bounds.per_source.load(Ordering::Relaxed)
    }

    fn io_timeout(&self) -> Duration {
        Duration::from_millis(self.bounds.io_timeout_ms.load(Ordering::Relaxed))
    }

    /// The idle timeout, the I/O timeout (`None`: none) and the TLS
    /// handshake timeout for a connection accepted now.
    pub(super) fn timeouts(&self) -> (Duration, Option<Duration>, Duration) {
        let o = Ordering::Relaxed;
        let io = self.io_timeout();
        (
            Duration::from_millis(self.bounds.idle_timeout_ms.load(o)),
            (!io.is_zero()).then_some(io),
            Duration::from_millis(self.bounds.handshake_timeout_ms.load(o)),
        )
    }

    /// The server's counters.
    pub(super) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Milliseconds from the server's start to `t`.
    pub(super) fn ms(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.epoch).as_millis() as u64
    }

    /// Registers a new connection from `peer`, closing the idlest ones
    /// when full.
    pub(super) fn admit(&self, peer: SocketAddr) -> Admission {
        let source = source_key(peer.ip());
        let now = self.ms(Instant::now());
        let mut evicted = Vec::new();
        let mut evicted_same_source = Vec::new();
        let admission = {
            let mut slab = lock(&self.slab);
            let count = |slab: &Slab| slab.per_source.get(&source).copied().unwrap_or(0);
            let (max_clients, per_source) = (self.max_clients(), self.per_source());
            if count(&slab) >= per_source {
                self.evict_idlest(&mut slab, Some(source), 1, now, &mut evicted_same_source);
            }
            if slab.open >= max_clients {
                let batch = self.bounds.evict_batch.load(Ordering::Relaxed);
                self.evict_idlest(&mut slab, None, batch, now, &mut evicted);
            }
            if count(&slab) >= per_source {
                Admission::PerSource(count(&slab))
            } else if slab.open >= max_clients {
                Admission::Full
            } else {
                let slot = slab.free.pop().unwrap_or(slab.slots.len());
                let conn = Arc::new(Conn {
                    peer,
                    source,
                    slot,
                    state: AtomicU64::new(now << FLAG_BITS),
                    cancel: Notify::new(),
                });
                if slot == slab.slots.len() {
                    slab.slots.push(Some(conn.clone()));
                } else {
                    slab.slots[slot] = Some(conn.clone());
                }
                slab.open += 1;
                *slab.per_source.entry(source).or_insert(0) += 1;
                self.publish_open(&slab);
                Admission::Open(conn)
            }
        };
        for (peer, idle) in evicted_same_source {
            self.closed(Reason::IdleSameSource, peer, idle);
        }
        for (peer, idle) in evicted {
            self.closed(Reason::IdleForNew, peer, idle);
        }
        match admission {
            Admission::PerSource(n) => self.closed(Reason::PerSource, peer, n as u64),
            Admission::Full => self.closed(Reason::Full, peer, 0),
            Admission::Open(_) => {
                self.counters.connections.fetch_add(1, Ordering::Relaxed);
            }
        }
        admission
    }

    /// Forgets a connection that ended (unless the registry closed it).
    pub(super) fn release(&self, conn: &Arc<Conn>) {
        let mut slab = lock(&self.slab);
        let ours = matches!(&slab.slots.get(conn.slot), Some(Some(c)) if Arc::ptr_eq(c, conn));
        if ours {
            Self::remove(&mut slab, conn.slot);
            self.publish_open(&slab);
        }
    }

    /// Closes the `k` idlest connections that are not busy (of `only` that
    /// source, if given).
    fn evict_idlest(
        &self,
        slab: &mut Slab,
        only: Option<IpAddr>,
        k: usize,
        now: u64,
        out: &mut Vec<(SocketAddr, u64)>,
    ) {
        let mut candidates = std::mem::take(&mut slab.scratch);
        candidates.clear();
        for (i, c) in slab.slots.iter().enumerate() {
            if let Some(c) = c {
                let v = c.state.load(Ordering::Relaxed);
                if v & (BUSY | EVICTED) == 0 && only.is_none_or(|s| s == c.source) {
                    candidates.push((v >> FLAG_BITS, i));
                }
            }
        }
        let k = k.min(candidates.len());
        if k > 0 && k < candidates.len() {
            candidates.select_nth_unstable(k - 1);
        }
        for &(_, i) in &candidates[..k] {
            self.evict(slab, i, now, out);
        }
        slab.scratch = candidates;
        self.publish_open(slab);
    }

    /// Closes every connection idle for the short timeout, when more than
    /// 3/4 of the slots are taken. Run by the sweeper.
    pub(super) fn sweep(&self) {
        self.log.flush();
        let pressure_open = self.bounds.pressure_open.load(Ordering::Relaxed);
        if self.counters.open.load(Ordering::Relaxed) <= pressure_open {
            return;
        }
        let now = self.ms(Instant::now());
        let pressure_idle_ms = self.bounds.pressure_idle_ms.load(Ordering::Relaxed);
        let mut evicted = Vec::new();
        {
            let mut slab = lock(&self.slab);
            for i in 0..slab.slots.len() {
                let idle_since = match &slab.slots[i] {
                    Some(c) => c.state.load(Ordering::Relaxed),
                    None => continue,
                };
                if idle_since & (BUSY | EVICTED) == 0
                    && now.saturating_sub(idle_since >> FLAG_BITS) >= pressure_idle_ms
                {
                    self.evict(&mut slab, i, now, &mut evicted);
                }
            }
            self.publish_open(&slab);
        }
        for (peer, idle) in evicted {
            self.closed(Reason::IdlePressure, peer, idle);
        }
    }

    fn evict(&self, slab: &mut Slab, i: usize, now: u64, out: &mut Vec<(SocketAddr, u64)>) {
        let Some(conn) = slab.slots[i].clone() else {
            return;
        };
        if let Some(last) = conn.try_evict() {
            Self::remove(slab, i);
            conn.cancel.notify_one();
            out.push((conn.peer, now.saturating_sub(last)));
        }
    }

    fn remove(slab: &mut Slab, i: usize) {
        if let Some(conn) = slab.slots[i].take() {
            slab.free.push(i);
            slab.open -= 1;
            if let Some(n) = slab.per_source.get_mut(&conn.source) {
                *n -= 1;
                if *n == 0 {
                    slab.per_source.remove(&conn.source);
                }
            }
        }
    }

    fn publish_open(&self, slab: &Slab) {
        self.counters.open.store(slab.open, Ordering::Relaxed);
        if slab.open > self.bounds.pressure_open.load(Ordering::Relaxed) {
            self.sweep_wanted.notify_one();
        }
    }

    /// Counts and logs (within the budget) a connection closed or refused;
    /// `detail` is the idle time in ms, or the source's count.
    pub(super) fn closed(&self, reason: Reason, peer: SocketAddr, detail: u64) {
        let c = &self.counters;
        let counter: &AtomicU64 = match reason {
            Reason::IdleForNew => &c.closed_idle_for_new,
            Reason::IdleSameSource => &c.closed_idle_same_source,
            Reason::IdlePressure => &c.closed_idle_pressure,
            Reason::PerSource => &c.refused_per_source,
            Reason::Full => &c.refused,
            Reason::ReadTimeout => &c.io_timeout,
            Reason::WriteTimeout => &c.write_timeout,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if !self.log.allow(reason) {
            // Held back: the sweeper summarises it once the window is over.
            self.sweep_wanted.notify_one();
            return;
        }
        let max = self.max_clients();
        match reason {
            Reason::IdleForNew => tracing::info!(
                "tcp {peer}: closed after {detail} ms idle to accept a new client ({max} open)"
            ),
            Reason::IdleSameSource => tracing::info!(
                "tcp {peer}: closed after {detail} ms idle to accept a new client from the same \
                 source ({} open from it)",
                self.per_source()
            ),
            Reason::IdlePressure => tracing::info!(
                "tcp {peer}: closed after {detail} ms idle, over 3/4 of {max} connections open"
            ),
            Reason::PerSource => tracing::warn!(
                "tcp {peer}: refused, {detail} connections from this source open, none idle \
                 (limit {})",
                self.per_source()
            ),
            Reason::Full => {
                tracing::warn!("tcp {peer}: refused, {max} connections open and none idle")
            }
            Reason::ReadTimeout => tracing::info!(
                "tcp {peer}: closed, a message took longer than {:?} to arrive",
                self.io_timeout()
            ),
            Reason::WriteTimeout => tracing::info!(
                "tcp {peer}: closed, its replies went unread for {:?}",
                self.io_timeout()
            ),
        }
    }
}

/// Keeps the count of open connections right however a connection task
/// ends (returned, panicked, or dropped at shutdown).
#[derive(Debug)]
pub(super) struct Registered {
    pub(super) registry: Arc<Registry>,
    pub(super) conn: Arc<Conn>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.registry.release(&self.conn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_sources_are_grouped_by_64_and_mapped_v4_is_v4() {
        let a: IpAddr = "2001:db8:1:2:3:4:5:6".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::1".parse().unwrap();
        assert_eq!(source_key(a), source_key(b));
        let m: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
        assert_eq!(source_key(m), "192.0.2.1".parse::<IpAddr>().unwrap());
    }

    /// The sweeper parks while there are neither crowds nor held-back log
    /// lines, and either wakes it; a wake-up sent before it waits is kept.
    #[test]
    fn the_sweeper_parks_until_crowding_or_held_lines() {
        let config = TcpConfig {
            max_clients: 4,
            ..TcpConfig::default()
        };
        let r = Registry::new(&config, Arc::new(Counters::default()));
        assert!(r.nothing_to_sweep(), "a new server has nothing to sweep");
        let peer = |i: u8| SocketAddr::from(([192, 0, 2, i], 53));
        for i in 0..3 {
            assert!(matches!(r.admit(peer(i)), Admission::Open(_)));
        }
        assert!(r.nothing_to_sweep(), "3 of 4 open is not a crowd");
        assert!(matches!(r.admit(peer(3)), Admission::Open(_)));
        assert!(!r.nothing_to_sweep(), "4 of 4 open is");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let woken = |r: &Registry| {
            rt.block_on(async {
                tokio::time::timeout(Duration::from_millis(50), r.sweep_wanted())
                    .await
                    .is_ok()
            })
        };
        assert!(woken(&r), "the crowd's wake-up was kept");

        let quiet = Registry::new(&TcpConfig::default(), Arc::new(Counters::default()));
        assert!(!woken(&quiet), "nothing woke it");
        for _ in 0..=LOG_LINES {
            quiet.closed(Reason::ReadTimeout, peer(9), 0);
        }
        assert!(!quiet.nothing_to_sweep(), "a line is held back");
        assert!(woken(&quiet), "holding it woke the sweeper");
    }

    #[test]
    fn the_log_allows_a_few_lines_a_window_and_counts_the_rest() {
        let log = CloseLog::new();
        let allowed = (0..50).filter(|_| log.allow(Reason::IdleForNew)).count();
        assert_eq!(allowed, LOG_LINES as usize);
        let w = lock(&log.window);
        assert_eq!(
            w.more[Reason::IdleForNew.index()],
            50 - u64::from(LOG_LINES)
        );
    }

    #[test]
    fn a_busy_connection_is_never_evicted() {
        let c = Conn {
            peer: "127.0.0.1:1".parse().unwrap(),
            source: "127.0.0.1".parse().unwrap(),
            slot: 0,
            state: AtomicU64::new(5 << FLAG_BITS),
            cancel: Notify::new(),
        };
        assert!(c.begin_work());
        assert_eq!(c.try_evict(), None);
        c.end_work(7);
        assert_eq!(c.try_evict(), Some(7));
        assert!(!c.begin_work(), "an evicted connection must stop");
    }
}
