//! dnstap query logging: AUTH_QUERY / AUTH_RESPONSE messages (protobuf,
//! dnstap.proto) in Frame Streams, to a file or to a reader on a Unix
//! socket — what Knot, NSD and BIND write, readable by `dnstap-read`,
//! `kdig -G` and `fstrm_capture`.
//!
//! ```text
//!  worker thread (UDP worker, TCP event loop)          writer thread ("lode-dnstap")
//!   Dnstap::log(event)                                   for each lane:
//!     1 in `sample` (a counter of the thread)              full ─▶ encode (prost) ─▶ frame ─▶ Output
//!     free.pop() ─ none: dropped-queue-full += n           the buffer ─▶ free
//!     copy query/response into the buffer                nothing queued: flush, sleep 2 ms (10 ms when quiet)
//!     full.push()                                        Output = file (START … STOP)
//!   lane = (full, free): two bounded queues,                     | Unix socket (READY/ACCEPT/START
//!   made once per thread (thread-local, per Dnstap)                … STOP/FINISH; reconnects with
//!                                                                  back-off, drops meanwhile)
//! ```
//!
//! The query path never locks, never allocates once its thread's buffers
//! have grown to the messages' size, and writes no shared memory but the
//! lane's queue (a drop writes the lane's own counter). A slow or absent
//! reader costs drops, never waiting: the writer thread is the only one that
//! blocks on the output. Memory: `queue` buffers per worker thread, each
//! kept at most [`RETAIN`] bytes.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod fstrm;
pub mod proto;

use std::cell::RefCell;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crossbeam_queue::ArrayQueue;
use prost::Message as _;

use fstrm::{FileOutput, Output, UnixOutput};

/// Where the messages go (Knot's `sink` syntax).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sink {
    /// A file, created (truncated) at start.
    File(PathBuf),
    /// A reader listening on a Unix socket (`unix:/path`).
    Unix(PathBuf),
}

impl FromStr for Sink {
    type Err = DnstapError;
    fn from_str(s: &str) -> Result<Sink, DnstapError> {
        let (unix, path) = match s.strip_prefix("unix:") {
            Some(p) => (true, p),
            None => (false, s),
        };
        if path.is_empty() {
            return Err(DnstapError::Sink(format!(
                "{s:?}: expected a file path or unix:/path"
            )));
        }
        let path = PathBuf::from(path);
        Ok(if unix {
            Sink::Unix(path)
        } else {
            Sink::File(path)
        })
    }
}

impl fmt::Display for Sink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sink::File(p) => write!(f, "{}", p.display()),
            Sink::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// What to log and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The output.
    pub sink: Sink,
    /// Write AUTH_QUERY messages.
    pub log_queries: bool,
    /// Write AUTH_RESPONSE messages.
    pub log_responses: bool,
    /// Log one query in `sample` (per worker thread; 1: all).
    pub sample: u32,
    /// Buffers per worker thread (events queued before drops).
    pub queue: usize,
    /// The `identity` field (`None`: absent).
    pub identity: Option<Vec<u8>>,
    /// The `version` field (`None`: absent).
    pub version: Option<Vec<u8>>,
}

/// Default buffers per worker thread.
pub const DEFAULT_QUEUE: usize = 4096;

impl Config {
    /// Queries and responses, all of them, to `sink`, no identity.
    pub fn new(sink: Sink) -> Config {
        Config {
            sink,
            log_queries: true,
            log_responses: true,
            sample: 1,
            queue: DEFAULT_QUEUE,
            identity: None,
            version: None,
        }
    }
}

/// Why logging could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum DnstapError {
    /// The sink is not a usable path.
    Sink(String),
    /// A setting is out of range.
    Value(String),
    /// The file could not be created, or the thread started.
    Io(String),
}

impl fmt::Display for DnstapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DnstapError::Sink(s) => write!(f, "dnstap sink {s}"),
            DnstapError::Value(s) | DnstapError::Io(s) => write!(f, "dnstap: {s}"),
        }
    }
}

impl std::error::Error for DnstapError {}

/// The transport a message came over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// UDP.
    Udp,
    /// TCP.
    Tcp,
    /// DNS over TLS.
    Dot,
    /// DNS over QUIC.
    Doq,
}

/// One query and what was done with it, as the query path hands it over.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    /// The query, verbatim.
    pub query: &'a [u8],
    /// The response sent (`None`: dropped or deferred; only the query is logged).
    pub response: Option<&'a [u8]>,
    /// The client.
    pub peer: SocketAddr,
    /// The server's address, when known.
    pub local: Option<SocketAddr>,
    /// UDP or TCP.
    pub protocol: Protocol,
    /// When the query arrived.
    pub query_time: SystemTime,
    /// When the response was made.
    pub response_time: SystemTime,
}

/// Counters, in dnstap messages (a query and its response are two).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Written to the sink.
    pub logged: u64,
    /// Not queued: the worker's queue was full (the writer is behind).
    pub dropped_queue_full: u64,
    /// Discarded while no reader was connected (Unix socket).
    pub dropped_no_reader: u64,
    /// Lost to a write or encoding error.
    pub write_errors: u64,
}

/// A buffer kept after use is cut back when it grew past this many bytes.
pub const RETAIN: usize = 8 << 10;
/// Bytes reserved in each buffer when a thread's lane is made.
const INITIAL: usize = 512;
/// The writer's sleep when nothing is queued (a queue of 4096 holds 2 ms
/// of 2 million queries a second)…
const IDLE: Duration = Duration::from_millis(2);
/// … and after [`QUIET_ROUNDS`] empty rounds in a row (fewer wake-ups when
/// nothing happens).
const IDLE_QUIET: Duration = Duration::from_millis(10);
/// Empty rounds before the writer sleeps [`IDLE_QUIET`].
const QUIET_ROUNDS: u32 = 50;

/// One queued event: the query and response bytes and their metadata.
#[derive(Debug)]
struct Entry {
    /// The query, then the response.
    bytes: Vec<u8>,
    query_len: usize,
    response: bool,
    peer: SocketAddr,
    local: Option<SocketAddr>,
    protocol: Protocol,
    query_time: Duration,
    response_time: Duration,
}

impl Entry {
    fn new() -> Box<Entry> {
        Box::new(Entry {
            bytes: Vec::with_capacity(INITIAL),
            query_len: 0,
            response: false,
            peer: SocketAddr::from(([0, 0, 0, 0], 0)),
            local: None,
            protocol: Protocol::Udp,
            query_time: Duration::ZERO,
            response_time: Duration::ZERO,
        })
    }

    /// Copies `ev` in (`with_response`: its response too).
    fn fill(&mut self, ev: &Event<'_>, with_response: bool) {
        self.bytes.clear();
        self.bytes.extend_from_slice(ev.query);
        self.query_len = ev.query.len();
        self.response = false;
        if let (true, Some(r)) = (with_response, ev.response) {
            self.bytes.extend_from_slice(r);
            self.response = true;
        }
        self.peer = ev.peer;
        self.local = ev.local;
        self.protocol = ev.protocol;
        let since = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap_or_default();
        self.query_time = since(ev.query_time);
        self.response_time = since(ev.response_time);
    }
}

/// One worker thread's queues: events to the writer, buffers back.
#[derive(Debug)]
struct Lane {
    full: ArrayQueue<Box<Entry>>,
    free: ArrayQueue<Box<Entry>>,
    /// Messages dropped on a full queue (written by the owning thread only).
    dropped: AtomicU64,
}

/// What the query path and the writer thread share.
#[derive(Debug)]
struct Shared {
    /// Tells this logger's lanes from another's in a thread-local.
    id: u64,
    sample: u32,
    queue: usize,
    log_queries: bool,
    log_responses: bool,
    /// Every lane made (locked once per thread, and by the writer when the
    /// generation changed).
    lanes: Mutex<Vec<Arc<Lane>>>,
    generation: AtomicUsize,
    stop: AtomicBool,
    logged: AtomicU64,
    dropped_no_reader: AtomicU64,
    write_errors: AtomicU64,
}

/// Ids of loggers, for the thread-locals.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A thread's lane of one logger, and its sampling counter.
struct Local {
    id: u64,
    tick: u32,
    lane: Arc<Lane>,
}

thread_local! {
    /// This thread's lanes (usually one: one logger per server).
    static LANES: RefCell<Vec<Local>> = const { RefCell::new(Vec::new()) };
}

/// A running dnstap logger: [`Dnstap::log`] from any thread; a writer thread
/// encodes and writes. Closing (or dropping) drains what is queued and ends
/// the stream.
#[derive(Debug)]
pub struct Dnstap {
    shared: Arc<Shared>,
    writer: Mutex<Option<JoinHandle<()>>>,
    sink: Sink,
}

impl Dnstap {
    /// Opens the sink (a file is created now; a socket is connected by the
    /// writer thread, and again whenever its reader comes back) and starts
    /// the writer thread.
    pub fn start(config: &Config) -> Result<Dnstap, DnstapError> {
        if config.sample == 0 {
            return Err(DnstapError::Value("sample = 0: must be at least 1".into()));
        }
        if config.queue == 0 || config.queue > 1 << 20 {
            return Err(DnstapError::Value(format!(
                "queue = {}: between 1 and 1048576",
                config.queue
            )));
        }
        let output: Box<dyn Output> = match &config.sink {
            Sink::File(p) => Box::new(
                FileOutput::create(p)
                    .map_err(|e| DnstapError::Io(format!("cannot create {}: {e}", p.display())))?,
            ),
            Sink::Unix(p) => Box::new(UnixOutput::new(p.clone())),
        };
        let shared = Arc::new(Shared {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            sample: config.sample,
            queue: config.queue,
            log_queries: config.log_queries,
            log_responses: config.log_responses,
            lanes: Mutex::new(Vec::new()),
            generation: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            logged: AtomicU64::new(0),
            dropped_no_reader: AtomicU64::new(0),
            write_errors: AtomicU64::new(0),
        });
        let encoder = Encoder::new(config);
        let s = shared.clone();
        let writer = std::thread::Builder::new()
            .name("lode-dnstap".into())
            .spawn(move || write_loop(&s, output, encoder))
            .map_err(|e| DnstapError::Io(format!("writer thread: {e}")))?;
        Ok(Dnstap {
            shared,
            writer: Mutex::new(Some(writer)),
            sink: config.sink.clone(),
        })
    }

    /// The sink written to.
    pub fn sink(&self) -> &Sink {
        &self.sink
    }

    /// Hands one event to the writer: copies it into a buffer of this
    /// thread's queue, or counts it dropped when the queue is full. No lock,
    /// no allocation once this thread's queue exists.
    pub fn log(&self, ev: &Event<'_>) {
        let sh = &*self.shared;
        let with_response = sh.log_responses && ev.response.is_some();
        let messages = u64::from(sh.log_queries) + u64::from(with_response);
        if messages == 0 {
            return;
        }
        let _ = LANES.try_with(|cell| {
            let Ok(mut locals) = cell.try_borrow_mut() else {
                return;
            };
            let i = match locals.iter().position(|l| l.id == sh.id) {
                Some(i) => i,
                None => {
                    // Lanes of loggers that ended go (only we hold them).
                    locals.retain(|l| Arc::strong_count(&l.lane) > 1);
                    locals.push(Local {
                        id: sh.id,
                        tick: 0,
                        lane: self.register(),
                    });
                    locals.len() - 1
                }
            };
            let local = &mut locals[i];
            local.tick += 1;
            if local.tick < sh.sample {
                return;
            }
            local.tick = 0;
            let lane = &local.lane;
            match lane.free.pop() {
                Some(mut e) => {
                    e.fill(ev, with_response);
                    if lane.full.push(e).is_err() {
                        // Cannot happen (as many buffers as places), counted.
                        lane.dropped.fetch_add(messages, Ordering::Relaxed);
                    }
                }
                None => {
                    lane.dropped.fetch_add(messages, Ordering::Relaxed);
                }
            }
        });
    }

    /// Makes this thread's lane (once per thread).
    fn register(&self) -> Arc<Lane> {
        let q = self.shared.queue;
        let lane = Arc::new(Lane {
            full: ArrayQueue::new(q),
            free: ArrayQueue::new(q),
            dropped: AtomicU64::new(0),
        });
        for _ in 0..q {
            let _ = lane.free.push(Entry::new());
        }
        let mut lanes = self
            .shared
            .lanes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        lanes.push(lane.clone());
        self.shared.generation.fetch_add(1, Ordering::Release);
        lane
    }

    /// The counters (queue drops summed over the worker threads).
    pub fn stats(&self) -> Stats {
        let sh = &*self.shared;
        let dropped_queue_full = sh
            .lanes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
            .map(|l| l.dropped.load(Ordering::Relaxed))
            .sum();
        Stats {
            logged: sh.logged.load(Ordering::Relaxed),
            dropped_queue_full,
            dropped_no_reader: sh.dropped_no_reader.load(Ordering::Relaxed),
            write_errors: sh.write_errors.load(Ordering::Relaxed),
        }
    }

    /// Writes what is queued, ends the stream (STOP; FINISH from a socket
    /// reader) and stops the writer thread. Later events are dropped
    /// (counted as queue-full once the queues fill). Idempotent.
    pub fn close(&self) {
        self.shared.stop.store(true, Ordering::Release);
        let writer = self
            .writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(w) = writer {
            w.thread().unpark();
            let _ = w.join();
        }
    }
}

impl Drop for Dnstap {
    fn drop(&mut self) {
        self.close();
    }
}

/// The writer's reusable message and frame.
struct Encoder {
    tap: proto::Dnstap,
    frame: Vec<u8>,
    log_queries: bool,
}

impl Encoder {
    fn new(config: &Config) -> Encoder {
        Encoder {
            tap: proto::Dnstap {
                identity: config.identity.clone(),
                version: config.version.clone(),
                extra: None,
                r#type: proto::DnstapType::Message as i32,
                message: Some(proto::Message::default()),
            },
            frame: Vec::with_capacity(1024),
            log_queries: config.log_queries,
        }
    }

    /// The frame (length prefix and `Dnstap`) of the query (`response`
    /// false) or response of `e`.
    fn frame(&mut self, e: &Entry, response: bool) -> Option<&[u8]> {
        let m = self.tap.message.get_or_insert_with(Default::default);
        m.socket_protocol = Some(match e.protocol {
            Protocol::Udp => proto::SocketProtocol::Udp as i32,
            Protocol::Tcp => proto::SocketProtocol::Tcp as i32,
            Protocol::Dot => proto::SocketProtocol::Dot as i32,
            Protocol::Doq => proto::SocketProtocol::Doq as i32,
        });
        proto::set_addresses(m, e.peer, e.local);
        let query = e.bytes.get(..e.query_len)?;
        let r = if response {
            Some((e.bytes.get(e.query_len..)?, e.response_time))
        } else {
            None
        };
        proto::set_payload(m, query, e.query_time, r);
        let len = u32::try_from(self.tap.encoded_len()).ok()?;
        self.frame.clear();
        self.frame.extend_from_slice(&len.to_be_bytes());
        self.tap.encode(&mut self.frame).ok()?;
        Some(&self.frame)
    }

    /// The messages of `e`: whether its query and whether its response go out.
    fn messages(&self, e: &Entry) -> [bool; 2] {
        [self.log_queries, e.response]
    }
}

/// The writer thread: drains every lane, writes, recycles the buffers.
fn write_loop(shared: &Shared, mut out: Box<dyn Output>, mut enc: Encoder) {
    let mut lanes: Vec<Arc<Lane>> = Vec::new();
    let mut seen = usize::MAX;
    let mut empty_rounds = 0u32;
    // A socket's reader is looked for now: its absence is logged at start.
    out.available();
    loop {
        let stopping = shared.stop.load(Ordering::Acquire);
        let generation = shared.generation.load(Ordering::Acquire);
        if generation != seen {
            seen = generation;
            lanes = shared
                .lanes
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .clone();
        }
        let mut done = 0usize;
        for lane in &lanes {
            while let Some(mut e) = lane.full.pop() {
                write_entry(shared, out.as_mut(), &mut enc, &e);
                if e.bytes.capacity() > RETAIN {
                    e.bytes = Vec::with_capacity(INITIAL);
                }
                let _ = lane.free.push(e);
                done += 1;
            }
        }
        if done == 0 {
            out.flush();
            if stopping {
                break;
            }
            empty_rounds = empty_rounds.saturating_add(1);
            std::thread::park_timeout(if empty_rounds < QUIET_ROUNDS {
                IDLE
            } else {
                IDLE_QUIET
            });
        } else {
            empty_rounds = 0;
        }
    }
    out.close();
}

/// Writes the messages of one entry, counting each.
fn write_entry(shared: &Shared, out: &mut dyn Output, enc: &mut Encoder, e: &Entry) {
    for (response, wanted) in [false, true].into_iter().zip(enc.messages(e)) {
        if !wanted {
            continue;
        }
        if !out.available() {
            shared.dropped_no_reader.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let counter = match enc.frame(e, response) {
            None => &shared.write_errors,
            Some(frame) => match out.write_frame(frame) {
                Ok(()) => &shared.logged,
                Err(_) => &shared.write_errors,
            },
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sinks_parse_as_knot_writes_them() {
        assert_eq!(
            "unix:/run/tap.sock".parse::<Sink>().unwrap(),
            Sink::Unix("/run/tap.sock".into())
        );
        assert_eq!(
            "/var/log/lode.tap".parse::<Sink>().unwrap(),
            Sink::File("/var/log/lode.tap".into())
        );
        assert!("unix:".parse::<Sink>().is_err());
        assert!("".parse::<Sink>().is_err());
        assert_eq!(Sink::Unix("/a".into()).to_string(), "unix:/a");
    }

    #[test]
    fn bad_settings_are_refused() {
        let mut c = Config::new(Sink::File("/nonexistent/dir/x.tap".into()));
        assert!(matches!(Dnstap::start(&c), Err(DnstapError::Io(_))));
        c.sample = 0;
        assert!(matches!(Dnstap::start(&c), Err(DnstapError::Value(_))));
        c.sample = 1;
        c.queue = 0;
        assert!(matches!(Dnstap::start(&c), Err(DnstapError::Value(_))));
    }
}
