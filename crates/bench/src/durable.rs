//! Durable update rate: closed-loop TSIG-signed UPDATE
//! clients over TCP, and the fdatasync rate of the journal's disk to compare with.
//!
//! ```text
//!  client c (own TCP connection) ── W UPDATEs in flight (B new NAPTRs each, TSIG) ──▶ server
//!        ▲                                                                               │
//!        └── reply: ID, RCODE NOERROR and the reply's TSIG verified = acknowledged ◀─────┘
//!  fsync probe: write 4 KiB + fdatasync in a loop in the journal's folder → syncs/s
//! ```
//!
//! Owners are ENUM-shaped: message `m` adds `batch` NAPTRs in zone `m mod Z` at
//! consecutive numbers from `first + (m / Z) × batch`, written with `digits`
//! digits, reversed, one label per digit (with `lode-bench gen enum --prefix 1212` and
//! up to 500,000 numbers per zone, suffixes from 500000 are free). With
//! one update in flight per client (`window` 1) a client is a closed loop: the
//! next update leaves when the previous one is acknowledged, i.e. durable.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lode_wire::{Name, Rtype};

use crate::stats::Histogram;
use crate::update::{update_message, UpdateError, UpdateOp};

/// Most concurrent clients (each a thread and a TCP connection).
pub const MAX_CLIENTS: usize = 4096;
/// Most records per UPDATE message (a message must stay below 64 KiB).
pub const MAX_BATCH: usize = 500;

/// Settings of a closed-loop durable-update run.
#[derive(Debug, Clone)]
pub struct DurableConfig {
    /// The server (TCP).
    pub server: SocketAddr,
    /// Zones updated, round robin.
    pub zones: Vec<Name>,
    /// Concurrent clients, each its own TCP connection.
    pub clients: usize,
    /// Records (new NAPTRs) per UPDATE message.
    pub batch: usize,
    /// Messages in flight per connection (1: closed loop).
    pub window: usize,
    /// How long clients send.
    pub duration: Duration,
    /// How long to wait for a reply.
    pub timeout: Duration,
    /// The TSIG key every update is signed with (the reply's TSIG is verified).
    pub key: Option<lode_tsig::Key>,
    /// The first number written (suffix within each zone).
    pub first: u64,
    /// Digits of the numbers below each zone apex.
    pub digits: usize,
    /// Numbers stop before this one (None: at 10^digits).
    pub end: Option<u64>,
}

impl DurableConfig {
    /// Checks the settings (counts, sizes, that the names do not run out too soon).
    pub fn check(&self) -> Result<(), UpdateError> {
        let bad = |s: String| Err(UpdateError::Config(s));
        if self.zones.is_empty() {
            return bad("name at least one zone".into());
        }
        if self.clients == 0 || self.clients > MAX_CLIENTS {
            return bad(format!("clients: 1 to {MAX_CLIENTS}, not {}", self.clients));
        }
        if self.batch == 0 || self.batch > MAX_BATCH {
            return bad(format!(
                "records per message: 1 to {MAX_BATCH}, not {}",
                self.batch
            ));
        }
        if self.window == 0 || self.window > 64 {
            return bad(format!(
                "messages in flight per client: 1 to 64, not {}",
                self.window
            ));
        }
        if self.duration.is_zero() || self.timeout.is_zero() {
            return bad("duration and timeout must be positive".into());
        }
        if self.digits == 0 || self.digits > 15 {
            return bad(format!("digits: 1 to 15, not {}", self.digits));
        }
        if self.first >= 10u64.pow(self.digits as u32) {
            return bad(format!(
                "first number {} has more than {} digits",
                self.first, self.digits
            ));
        }
        Ok(())
    }

    /// The first number not written: `end`, at most 10^digits.
    pub fn top(&self) -> u64 {
        let top = 10u64.saturating_pow(self.digits as u32);
        self.end.map_or(top, |e| e.min(top))
    }

    /// Records this run can write before the numbers run out.
    pub fn capacity(&self) -> u64 {
        self.top()
            .saturating_sub(self.first)
            .saturating_mul(self.zones.len() as u64)
    }
}

/// The owner of number `n` below `apex`: its `digits` digits reversed, one label
/// each (ENUM). None when `n` does not fit the digits.
pub fn owner_of(apex: &Name, digits: usize, n: u64) -> Option<Name> {
    if digits == 0 || digits > 15 || n >= 10u64.pow(digits as u32) {
        return None;
    }
    let text = format!("{n:0digits$}");
    let mut wire = Vec::with_capacity(2 * digits + apex.as_wire().len());
    for d in text.bytes().rev() {
        wire.push(1);
        wire.push(d);
    }
    wire.extend_from_slice(apex.as_wire());
    Name::from_wire(&wire).ok()
}

/// A NAPTR RDATA with a numbered SIP URI (as `lode-bench gen` writes them).
fn naptr(n: u64) -> Vec<u8> {
    let regexp = format!("!^.*$!sip:new{n}@example.net!");
    let service = b"E2U+sip";
    let mut r = vec![0, 100, 0, 10, 1, b'u', service.len() as u8];
    r.extend_from_slice(service);
    r.push(regexp.len() as u8);
    r.extend_from_slice(regexp.as_bytes());
    r.push(0);
    r
}

/// Zone index and first number of message `m`: zone `m mod Z`, numbers
/// `first + (m / Z) × batch ..` (each zone's numbers are consecutive).
pub fn message_span(zones: usize, batch: usize, first: u64, m: u64) -> (usize, u64) {
    let nz = zones.max(1) as u64;
    ((m % nz) as usize, first + (m / nz) * batch as u64)
}

/// The UPDATE message `m` of the run (ID `id`, no TSIG): `batch` new NAPTRs in one
/// zone. None when the numbers ran out.
pub fn batch_message(cfg: &DurableConfig, id: u16, m: u64) -> Option<Vec<u8>> {
    let (z, base) = message_span(cfg.zones.len(), cfg.batch, cfg.first, m);
    if base.checked_add(cfg.batch as u64)? > cfg.top() {
        return None;
    }
    let apex = cfg.zones.get(z)?;
    let mut msg = update_message(
        id,
        apex,
        &UpdateOp::Add {
            owner: owner_of(apex, cfg.digits, base)?,
            rtype: Rtype::NAPTR,
            rdata: naptr(base),
        },
    );
    // Further records: appended to the update section (UPCOUNT at bytes 8..10).
    for n in base + 1..base + cfg.batch as u64 {
        let owner = owner_of(apex, cfg.digits, n)?;
        let rdata = naptr(n);
        msg.extend_from_slice(owner.as_wire());
        msg.extend_from_slice(&Rtype::NAPTR.0.to_be_bytes());
        msg.extend_from_slice(&1u16.to_be_bytes());
        msg.extend_from_slice(&3600u32.to_be_bytes());
        msg.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        msg.extend_from_slice(&rdata);
    }
    msg[8..10].copy_from_slice(&(cfg.batch as u16).to_be_bytes());
    Some(msg)
}

/// What a durable-update run measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DurableResult {
    /// Clients.
    pub clients: usize,
    /// Records per message.
    pub batch: usize,
    /// Messages sent.
    pub sent: u64,
    /// Messages acknowledged: NOERROR with a valid TSIG (or unsigned runs: NOERROR).
    pub acked: u64,
    /// Records in acknowledged messages.
    pub acked_rrs: u64,
    /// Replies per RCODE (index = RCODE 0..15).
    pub rcodes: [u64; 16],
    /// Replies whose TSIG did not verify.
    pub bad_tsig: u64,
    /// Messages without a reply (timeout or lost connection).
    pub unanswered: u64,
    /// Connection errors (connect, write, read, closed by the server).
    pub conn_errors: u64,
    /// Seconds from the first send to the last reply.
    pub secs: f64,
    /// Latency of acknowledged messages, µs: 50th, 99th, 99.9th percentile and maximum.
    pub latency_us: [u64; 4],
    /// The first error seen, for the report.
    pub first_error: Option<String>,
}

impl DurableResult {
    /// Acknowledged messages per second.
    pub fn updates_per_sec(&self) -> f64 {
        per_sec(self.acked, self.secs)
    }

    /// Acknowledged records per second.
    pub fn rrs_per_sec(&self) -> f64 {
        per_sec(self.acked_rrs, self.secs)
    }

    /// The client's summary: the counts (sent, acknowledged, replies by
    /// RCODE, failures), then the rate and the latency of acknowledged updates.
    pub fn summary(&self) -> [String; 2] {
        [
            format!(
                "sent {}  acknowledged {} ({} records)  replies {}  bad TSIG {}  unanswered {}  \
                 connection errors {}",
                self.sent,
                self.acked,
                self.acked_rrs,
                rcode_counts(&self.rcodes),
                self.bad_tsig,
                self.unanswered,
                self.conn_errors
            ),
            format!(
                "durable updates: {:.0}/s ({:.0} records/s) in {:.2} s; latency p50 {} µs, \
                 p99 {} µs, p99.9 {} µs, max {} µs",
                self.updates_per_sec(),
                self.rrs_per_sec(),
                self.secs,
                self.latency_us[0],
                self.latency_us[1],
                self.latency_us[2],
                self.latency_us[3]
            ),
        ]
    }

    /// `durable updates/s ÷ fdatasync/s = …`: how many updates one disk sync
    /// carried on average (a server that syncs each update alone stays ≤ 1).
    pub fn fsync_line(&self, probe: &FsyncProbe) -> String {
        match ratio(self.updates_per_sec(), probe.per_sec()) {
            Some(x) => format!(
                "durable updates/s ÷ fdatasync/s = {:.0} ÷ {:.0} = {x:.2}",
                self.updates_per_sec(),
                probe.per_sec()
            ),
            None => "no fdatasync rate measured".into(),
        }
    }

    /// Adds one client's counts.
    fn merge(&mut self, o: &ClientCounts) {
        self.sent += o.sent;
        self.acked += o.acked;
        self.acked_rrs += o.acked_rrs;
        for (a, b) in self.rcodes.iter_mut().zip(o.rcodes.iter()) {
            *a += b;
        }
        self.bad_tsig += o.bad_tsig;
        self.unanswered += o.unanswered;
        self.conn_errors += o.conn_errors;
        if self.first_error.is_none() {
            self.first_error.clone_from(&o.error);
        }
    }
}

/// Replies counted by RCODE (index = RCODE) as `NOERROR 5, REFUSED 2`; `none`.
pub fn rcode_counts(rcodes: &[u64; 16]) -> String {
    let named: Vec<String> = rcodes
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(c, n)| format!("{} {n}", lode_wire::rcode::name(c as u16)))
        .collect();
    if named.is_empty() {
        "none".into()
    } else {
        named.join(", ")
    }
}

/// `n / secs`, 0 when no time passed.
pub fn per_sec(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

/// `a / b`, None when `b` is not positive.
pub fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0 && a.is_finite()).then(|| a / b)
}

/// One client's counts.
#[derive(Debug, Default)]
struct ClientCounts {
    sent: u64,
    acked: u64,
    acked_rrs: u64,
    rcodes: [u64; 16],
    bad_tsig: u64,
    unanswered: u64,
    conn_errors: u64,
    error: Option<String>,
    latency: Histogram,
    /// Microseconds after the start of the last reply.
    last_us: u64,
}

/// A message in flight: ID, request MAC, send time.
struct InFlight {
    id: u16,
    mac: Option<lode_tsig::MacBuf>,
    at: Instant,
}

use lode_io::clock::unix_now;

/// Runs `cfg.clients` closed-loop clients for `cfg.duration` (then waits for the
/// replies in flight, bounded by the timeout). Record numbers are handed out from
/// one counter, so no two messages add the same name.
pub fn run(cfg: &DurableConfig, stop: &AtomicBool) -> Result<DurableResult, UpdateError> {
    cfg.check()?;
    let next = AtomicU64::new(0);
    let start = Instant::now();
    let deadline = start + cfg.duration;
    let counts: Vec<ClientCounts> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..cfg.clients)
            .map(|c| {
                let next = &next;
                s.spawn(move || client(cfg, c, next, start, deadline, stop))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| ClientCounts {
                    error: Some("client thread panicked".into()),
                    ..ClientCounts::default()
                })
            })
            .collect()
    });
    let mut r = DurableResult {
        clients: cfg.clients,
        batch: cfg.batch,
        ..DurableResult::default()
    };
    let mut hist = Histogram::default();
    let mut last_us = 0;
    for c in &counts {
        r.merge(c);
        hist.merge(&c.latency);
        last_us = last_us.max(c.last_us);
    }
    r.secs = if last_us > 0 {
        last_us as f64 / 1e6
    } else {
        start.elapsed().as_secs_f64()
    };
    r.latency_us = [50.0, 99.0, 99.9, 100.0].map(|p| hist.percentile(p).unwrap_or(0));
    Ok(r)
}

/// One client: a TCP connection with `window` messages in flight until the deadline.
fn client(
    cfg: &DurableConfig,
    c: usize,
    next: &AtomicU64,
    start: Instant,
    deadline: Instant,
    stop: &AtomicBool,
) -> ClientCounts {
    let mut n = ClientCounts::default();
    let fail = |n: &mut ClientCounts, what: String| {
        n.conn_errors += 1;
        if n.error.is_none() {
            n.error = Some(what);
        }
    };
    let mut sock = match TcpStream::connect_timeout(&cfg.server, cfg.timeout) {
        Ok(s) => s,
        Err(e) => {
            fail(&mut n, format!("connect {}: {e}", cfg.server));
            return n;
        }
    };
    let _ = sock.set_nodelay(true);
    let _ = sock.set_read_timeout(Some(cfg.timeout));
    let batch = cfg.batch as u64;
    let mut inflight: Vec<InFlight> = Vec::with_capacity(cfg.window);
    let mut id = (c as u16).wrapping_mul(4099);
    let mut buf = vec![0u8; 65535];
    loop {
        // Fill the window while sending is allowed.
        while inflight.len() < cfg.window
            && Instant::now() < deadline
            && !stop.load(Ordering::Relaxed)
        {
            let m = next.fetch_add(1, Ordering::Relaxed);
            let Some(mut msg) = batch_message(cfg, id, m) else {
                fail(
                    &mut n,
                    "the numbers ran out (raise --first or --digits)".into(),
                );
                n.unanswered += inflight.len() as u64;
                return n;
            };
            let mac = match &cfg.key {
                Some(key) => match lode_tsig::sign_request_vec(&mut msg, key, unix_now()) {
                    Ok(mac) => Some(mac),
                    Err(e) => {
                        fail(&mut n, format!("TSIG signing: {e}"));
                        n.unanswered += inflight.len() as u64;
                        return n;
                    }
                },
                None => None,
            };
            let mut framed = Vec::with_capacity(msg.len() + 2);
            framed.extend_from_slice(&(msg.len() as u16).to_be_bytes());
            framed.extend_from_slice(&msg);
            if let Err(e) = sock.write_all(&framed) {
                fail(&mut n, format!("write: {e}"));
                n.unanswered += inflight.len() as u64 + 1;
                return n;
            }
            n.sent += 1;
            inflight.push(InFlight {
                id,
                mac,
                at: Instant::now(),
            });
            id = id.wrapping_add(1);
        }
        if inflight.is_empty() {
            return n;
        }
        // One reply.
        let mut len = [0u8; 2];
        if let Err(e) = sock.read_exact(&mut len) {
            fail(&mut n, format!("read: {e}"));
            n.unanswered += inflight.len() as u64;
            return n;
        }
        let l = usize::from(u16::from_be_bytes(len));
        if let Err(e) = sock.read_exact(&mut buf[..l]) {
            fail(&mut n, format!("read: {e}"));
            n.unanswered += inflight.len() as u64;
            return n;
        }
        let msg = &buf[..l];
        let Some(reply) = lode_wire::request::Reply::of(msg) else {
            fail(&mut n, format!("a {l}-byte message that is no reply"));
            n.unanswered += inflight.len() as u64;
            return n;
        };
        let Some(pos) = inflight.iter().position(|f| f.id == reply.id) else {
            continue;
        };
        let f = inflight.swap_remove(pos);
        let rcode = usize::from(reply.rcode);
        n.rcodes[rcode] += 1;
        let tsig_ok = match (&cfg.key, &f.mac) {
            (Some(key), Some(mac)) => {
                lode_tsig::verify_response(msg, key, mac.as_slice(), unix_now()).is_ok()
            }
            _ => true,
        };
        if !tsig_ok {
            n.bad_tsig += 1;
        }
        if rcode == 0 && tsig_ok {
            n.acked += 1;
            n.acked_rrs += batch;
            n.latency.record(f.at.elapsed().as_micros() as u64);
            n.last_us = start.elapsed().as_micros() as u64;
        } else if n.error.is_none() {
            n.error = Some(format!(
                "reply {}{}",
                lode_wire::rcode::name(rcode as u16),
                if tsig_ok { "" } else { " with a bad TSIG" }
            ));
        }
    }
}

/// What the fdatasync probe measured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FsyncProbe {
    /// Writes of 4 KiB, each followed by fdatasync.
    pub syncs: u64,
    /// Seconds they took.
    pub secs: f64,
}

impl FsyncProbe {
    /// fdatasync calls per second.
    pub fn per_sec(&self) -> f64 {
        per_sec(self.syncs, self.secs)
    }

    /// Mean time of one write + fdatasync, microseconds.
    pub fn mean_us(&self) -> f64 {
        if self.syncs == 0 {
            0.0
        } else {
            self.secs * 1e6 / self.syncs as f64
        }
    }
}

/// Bytes per probe write.
pub const PROBE_WRITE: usize = 4096;
/// The probe file wraps to its start after this many bytes (journals append, then recycle).
const PROBE_WRAP: u64 = 64 << 20;

/// Appends 4 KiB and calls fdatasync in a loop for `duration` in a file in `dir`
/// (removed afterwards): the disk's durable-write rate, the ceiling of a server
/// that syncs once per update.
pub fn fsync_probe(dir: &Path, duration: Duration) -> Result<FsyncProbe, UpdateError> {
    let path = dir.join(format!(".lode-fsync-probe-{}", std::process::id()));
    let result = probe_file(&path, duration);
    let _ = std::fs::remove_file(&path);
    result.map_err(UpdateError::Io)
}

fn probe_file(path: &Path, duration: Duration) -> std::io::Result<FsyncProbe> {
    let mut f: File = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(path)?;
    let block = [0x5au8; PROBE_WRITE];
    let start = Instant::now();
    let mut syncs = 0u64;
    let mut at = 0u64;
    while start.elapsed() < duration {
        if at >= PROBE_WRAP {
            f.seek(SeekFrom::Start(0))?;
            at = 0;
        }
        f.write_all(&block)?;
        f.sync_data()?;
        at += PROBE_WRITE as u64;
        syncs += 1;
    }
    Ok(FsyncProbe {
        syncs,
        secs: start.elapsed().as_secs_f64(),
    })
}

impl fmt::Display for FsyncProbe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} fdatasync(4 KiB) in {:.2} s: {:.0}/s ({:.0} µs each)",
            self.syncs,
            self.secs,
            self.per_sec(),
            self.mean_us()
        )
    }
}

#[cfg(test)]
mod tests;
