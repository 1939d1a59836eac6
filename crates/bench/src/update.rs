//! Query load under updates (ISC's large-zone study, §6.3): an RFC 2136 UPDATE stream derived
//! from zone files — adds of names that do not exist, deletes of names that do,
//! changes of existing RRsets, one third each — sent at a constant rate while
//! the rate tester runs, optionally TSIG-signed (RFC 8945, by `lode-tsig`).
//!
//! ```text
//!  zone files ──▶ UpdatePlan: untouched names (queried) │ names to delete/change │ free names to add
//!                   │
//!  update sender ── UPDATE i (op i mod 3) ──▶ server ──▶ receiver: match ID, RCODE, latency
//! ```
//!
//! The names an update deletes or changes are never queried, so queries for
//! the untouched names must still be answered with records.

use std::collections::HashSet;
use std::fmt;
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use lode_wire::request::Reply;
use lode_wire::{opcode, Class, Name, Record, Rtype};

use crate::pacing::Pacer;
use crate::query::QuerySet;
use crate::stats::Histogram;

/// TTL of added records.
const ADD_TTL: u32 = 3600;

/// Why an update stream could not be prepared or run.
#[derive(Debug)]
#[non_exhaustive]
pub enum UpdateError {
    /// A zone file could not be read.
    Zone(String),
    /// Bad settings (key, rate, too few names).
    Config(String),
    /// A socket error.
    Io(std::io::Error),
}

impl fmt::Display for UpdateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpdateError::Zone(e) | UpdateError::Config(e) => f.write_str(e),
            UpdateError::Io(e) => write!(f, "update socket: {e}"),
        }
    }
}

impl std::error::Error for UpdateError {}

impl From<std::io::Error> for UpdateError {
    fn from(e: std::io::Error) -> Self {
        UpdateError::Io(e)
    }
}

/// One change of a zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpdateOp {
    /// Add a record at a name that does not exist.
    Add {
        /// The new owner.
        owner: Name,
        /// The record's type.
        rtype: Rtype,
        /// Its RDATA (wire form).
        rdata: Vec<u8>,
    },
    /// Delete every RRset of an existing name.
    Delete {
        /// The name.
        owner: Name,
    },
    /// Replace one RRset of an existing name by one new record of the same type.
    Change {
        /// The name.
        owner: Name,
        /// The RRset's type.
        rtype: Rtype,
        /// The new RDATA.
        rdata: Vec<u8>,
    },
}

/// An existing name, its zone, and the type of its first RRset.
#[derive(Debug, Clone)]
struct Owner {
    zone: usize,
    name: Name,
    rtype: Rtype,
    rdata: Vec<u8>,
}

/// The stream derived from a set of zones: which names it touches and which stay.
#[derive(Debug, Clone)]
pub struct UpdatePlan {
    zones: Vec<Name>,
    /// Names deletes and changes take, in order (deletes even, changes odd positions).
    touched: Vec<Owner>,
    /// Names no update touches (the query load asks for these).
    untouched: Vec<Owner>,
    /// Every existing owner (lower-case keys), to find free names.
    existing: HashSet<Name>,
    /// Free names handed out so far, in order.
    added: Vec<(usize, Name)>,
}

impl UpdatePlan {
    /// Reads zones (`apex`, file) and reserves names for `updates` updates.
    pub fn from_files(zones: &[(Name, &Path)], updates: u64) -> Result<UpdatePlan, UpdateError> {
        let mut parsed = Vec::new();
        for (apex, file) in zones {
            let z = lode_zonefile::parse_file(file, apex, None).map_err(|errs| {
                let first = errs.first().map(|e| e.to_string()).unwrap_or_default();
                UpdateError::Zone(format!(
                    "{}: {} error(s), first: {first}",
                    file.display(),
                    errs.len()
                ))
            })?;
            parsed.push((apex.clone(), z.records));
        }
        UpdatePlan::from_records(parsed, updates)
    }

    /// Builds a plan from zones' records: owners below the apex that hold no NS, DS or
    /// SOA and are not the target of an NS are candidates; `updates` determines how
    /// many are reserved for deletes and changes (2 of every 3 updates).
    pub fn from_records(
        zones: Vec<(Name, Vec<Record>)>,
        updates: u64,
    ) -> Result<UpdatePlan, UpdateError> {
        let mut existing = HashSet::new();
        let mut candidates: Vec<Owner> = Vec::new();
        let mut apexes = Vec::new();
        for (z, (apex, records)) in zones.into_iter().enumerate() {
            let mut excluded = HashSet::new();
            for r in &records {
                existing.insert(r.owner.to_lowercase());
                if matches!(r.rtype, Rtype::NS | Rtype::DS | Rtype::SOA) {
                    excluded.insert(r.owner.to_lowercase());
                }
                if r.rtype == Rtype::NS {
                    if let Ok(target) = Name::from_wire(&r.rdata) {
                        excluded.insert(target.to_lowercase());
                    }
                }
            }
            let mut seen = HashSet::new();
            for r in records {
                let key = r.owner.to_lowercase();
                if key == apex.to_lowercase()
                    || excluded.contains(&key)
                    || !seen.insert(key)
                    || !r.owner.as_ref().is_strictly_below(&apex.as_ref())
                {
                    continue;
                }
                candidates.push(Owner {
                    zone: z,
                    name: r.owner,
                    rtype: r.rtype,
                    rdata: r.rdata.into_vec(),
                });
            }
            apexes.push(apex);
        }
        // Interleave zones deterministically: a fixed permutation of the candidates.
        let n = candidates.len() as u64;
        let reserve = (updates.div_ceil(3) * 2) as usize;
        if n == 0 || reserve >= candidates.len() {
            return Err(UpdateError::Config(format!(
                "{} names to delete or change but the zones have only {n} candidate names \
                 (need some left to query); lower the update count",
                reserve
            )));
        }
        let scatter = crate::gen::Scatter::new(n, 7);
        let mut order: Vec<Owner> = Vec::with_capacity(candidates.len());
        for i in 0..n {
            order.push(candidates[scatter.map(i) as usize].clone());
        }
        let untouched = order.split_off(reserve);
        Ok(UpdatePlan {
            zones: apexes,
            touched: order,
            untouched,
            existing,
            added: Vec::new(),
        })
    }

    /// The zone apexes.
    pub fn zones(&self) -> &[Name] {
        &self.zones
    }

    /// Names no update touches.
    pub fn untouched_len(&self) -> usize {
        self.untouched.len()
    }

    /// Queries (name, type of its first RRset) for at most `limit` untouched names.
    pub fn queries(&self, limit: usize, edns: bool) -> QuerySet {
        let mut set = QuerySet::default();
        for o in self.untouched.iter().take(limit) {
            set.push(&o.name, o.rtype, edns);
        }
        set
    }

    /// Update `i` of the stream: its zone's index and the operation (`i mod 3`: 0 add,
    /// 1 delete, 2 change). Must be called with i = 0, 1, 2, … in order.
    pub fn op(&mut self, i: u64) -> Option<(usize, UpdateOp)> {
        let k = (i / 3) as usize;
        match i % 3 {
            0 => {
                let (zone, owner) = self.free_name(k)?;
                let rdata = new_rdata(Rtype::NAPTR, &[], i);
                Some((
                    zone,
                    UpdateOp::Add {
                        owner,
                        rtype: Rtype::NAPTR,
                        rdata,
                    },
                ))
            }
            1 => {
                let o = self.touched.get(2 * k)?;
                Some((
                    o.zone,
                    UpdateOp::Delete {
                        owner: o.name.clone(),
                    },
                ))
            }
            _ => {
                let o = self.touched.get(2 * k + 1)?;
                Some((
                    o.zone,
                    UpdateOp::Change {
                        owner: o.name.clone(),
                        rtype: o.rtype,
                        rdata: new_rdata(o.rtype, &o.rdata, i),
                    },
                ))
            }
        }
    }

    /// The `k`-th free name: an untouched owner with one digit label changed so that
    /// no such name exists (ENUM-like), or else a new label below it.
    fn free_name(&mut self, k: usize) -> Option<(usize, Name)> {
        if let Some(&(z, ref n)) = self.added.get(k) {
            return Some((z, n.clone()));
        }
        while self.added.len() <= k {
            let j = self.added.len();
            let base = self.untouched.get(j % self.untouched.len())?.clone();
            let name = self
                .sibling(&base.name, &self.zones[base.zone])
                .or_else(|| {
                    let label = format!("u{j}");
                    base.name.prepend(label.as_bytes()).ok()
                })?;
            self.existing.insert(name.to_lowercase());
            self.added.push((base.zone, name));
        }
        self.added.get(k).map(|(z, n)| (*z, n.clone()))
    }

    /// A name that does not exist, made by replacing one single-digit label of
    /// `name` (below `apex`) by another digit, leaf first.
    fn sibling(&self, name: &Name, apex: &Name) -> Option<Name> {
        let labels: Vec<Vec<u8>> = name.as_ref().labels().map(|l| l.to_vec()).collect();
        let depth = name
            .as_ref()
            .label_count()
            .checked_sub(apex.as_ref().label_count())?;
        for p in 0..depth {
            if labels[p].len() != 1 || !labels[p][0].is_ascii_digit() {
                continue;
            }
            for d in b'0'..=b'9' {
                if d == labels[p][0] {
                    continue;
                }
                let mut wire = Vec::with_capacity(name.as_wire().len());
                for (q, l) in labels.iter().enumerate() {
                    let l: &[u8] = if q == p { std::slice::from_ref(&d) } else { l };
                    wire.push(l.len() as u8);
                    wire.extend_from_slice(l);
                }
                wire.push(0);
                let Ok(candidate) = Name::from_wire(&wire) else {
                    continue;
                };
                if !self.existing.contains(&candidate.to_lowercase()) {
                    return Some(candidate);
                }
            }
        }
        None
    }
}

/// New RDATA for update `i`: a NAPTR with a numbered SIP URI, an A or AAAA with
/// another address, a TXT; other types keep their RDATA (a change of TTL only).
fn new_rdata(rtype: Rtype, old: &[u8], i: u64) -> Vec<u8> {
    match rtype {
        Rtype::NAPTR => {
            let regexp = format!("!^.*$!sip:update{i}@example.net!");
            let mut r = vec![0, 100, 0, 10, 1, b'u'];
            let service = b"E2U+sip";
            r.push(service.len() as u8);
            r.extend_from_slice(service);
            r.push(regexp.len() as u8);
            r.extend_from_slice(regexp.as_bytes());
            r.push(0); // replacement: the root
            r
        }
        Rtype::A => (0x0A00_0000u32 | (i as u32 & 0x00FF_FFFF))
            .to_be_bytes()
            .to_vec(),
        Rtype::AAAA => {
            let mut r = vec![0x20, 0x01, 0x0d, 0xb8];
            r.extend_from_slice(&[0; 4]);
            r.extend_from_slice(&i.to_be_bytes());
            r
        }
        Rtype::TXT => {
            let t = format!("update {i}");
            let mut r = vec![t.len() as u8];
            r.extend_from_slice(t.as_bytes());
            r
        }
        _ => old.to_vec(),
    }
}

/// Builds the UPDATE message of `op` for zone `zone` with `id` (no TSIG).
pub fn update_message(id: u16, zone: &Name, op: &UpdateOp) -> Vec<u8> {
    let rr = |owner: &Name, rtype: Rtype, class: Class, ttl: u32, rdata: &[u8]| Record {
        owner: owner.clone(),
        class,
        rtype,
        ttl,
        rdata: rdata.into(),
    };
    let updates = match op {
        UpdateOp::Add {
            owner,
            rtype,
            rdata,
        } => vec![rr(owner, *rtype, Class::IN, ADD_TTL, rdata)],
        UpdateOp::Delete { owner } => vec![rr(owner, Rtype::ANY, Class::ANY, 0, &[])],
        UpdateOp::Change {
            owner,
            rtype,
            rdata,
        } => vec![
            rr(owner, *rtype, Class::ANY, 0, &[]),
            rr(owner, *rtype, Class::IN, ADD_TTL, rdata),
        ],
    };
    lode_wire::request::update(id, zone, &[], &updates)
}

/// Settings of an update stream.
#[derive(Debug, Clone)]
pub struct UpdateConfig {
    /// The server.
    pub server: SocketAddr,
    /// Updates per second.
    pub rate: f64,
    /// Most updates sent.
    pub count: u64,
    /// Index in the plan of the first update (earlier ones were sent before).
    pub first: u64,
    /// How long to wait for each reply.
    pub timeout: Duration,
    /// Optional TSIG key (any algorithm of RFC 8945).
    pub key: Option<lode_tsig::Key>,
}

/// What an update stream measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdateResult {
    /// Updates sent.
    pub sent: u64,
    /// Replies per RCODE (index = RCODE 0..15).
    pub rcodes: [u64; 16],
    /// Updates without a reply within the timeout.
    pub timeouts: u64,
    /// Replies that matched no update or were malformed.
    pub unmatched: u64,
    /// Latency of NOERROR replies, microseconds: 50th, 99th percentile and maximum.
    pub latency_us: [u64; 3],
    /// Seconds from the first send to the last reply or timeout.
    pub secs: f64,
    /// True if the stream stopped early because the server refused updates.
    pub refused_early: bool,
}

impl UpdateResult {
    /// Updates answered NOERROR.
    pub fn ok(&self) -> u64 {
        self.rcodes[0]
    }

    /// A one-line reason when the server did not accept updates (NOTIMP, REFUSED, …).
    pub fn refusal(&self) -> Option<String> {
        if self.ok() > 0 {
            return None;
        }
        let (rcode, n) = self
            .rcodes
            .iter()
            .enumerate()
            .skip(1)
            .max_by_key(|(_, n)| **n)
            .map(|(r, n)| (r, *n))?;
        if n == 0 {
            return if self.sent > 0 && self.timeouts == self.sent {
                Some(format!("no reply to any of {} updates", self.sent))
            } else {
                None
            };
        }
        Some(format!(
            "the server answered {n} update(s) with {} and accepted none",
            lode_wire::rcode::name(rcode as u16)
        ))
    }
}

/// Sends the stream of `plan` at the configured rate until `count` updates are sent,
/// `stop` is set or `max_time` passes, then waits for the replies (bounded by the
/// timeout). Stops early when the first 10 replies all refuse (NOTIMP, REFUSED,
/// NOTAUTH, …) or the first 10 updates time out.
pub fn run_stream(
    cfg: &UpdateConfig,
    plan: &mut UpdatePlan,
    stop: &AtomicBool,
    max_time: Duration,
) -> Result<UpdateResult, UpdateError> {
    if cfg.rate.is_nan() || cfg.rate <= 0.0 || cfg.count == 0 {
        return Err(UpdateError::Config(
            "need a positive update rate and count".into(),
        ));
    }
    // Eight bytes of bookkeeping per update: keep it bounded.
    if cfg.count > 100_000_000 {
        return Err(UpdateError::Config(format!(
            "{} updates in one stream: at most 100 million",
            cfg.count
        )));
    }
    let bind: SocketAddr = if cfg.server.is_ipv4() {
        SocketAddr::from(([0, 0, 0, 0], 0))
    } else {
        SocketAddr::from(([0u16; 8], 0))
    };
    let sock = UdpSocket::bind(bind)?;
    sock.connect(cfg.server)?;
    sock.set_read_timeout(Some(Duration::from_millis(20)))?;
    let n = cfg.count;
    // Send time (µs after start + 1) per update; 0 = not sent or already answered.
    let sent_at: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
    let sent = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let early = AtomicBool::new(false);
    let result = Mutex::new(UpdateResult::default());
    let start = Instant::now();
    let pacer = Pacer::new(cfg.rate, n);
    let timeout_us = cfg.timeout.as_micros() as u64;
    let zones = plan.zones().to_vec();
    let send_result = std::thread::scope(|s| {
        let receiver = s.spawn(|| {
            let mut buf = [0u8; 4096];
            let mut r = UpdateResult::default();
            let mut hist = Histogram::default();
            let mut replies = 0u64;
            loop {
                let now_us = start.elapsed().as_micros() as u64;
                if done.load(Ordering::Acquire) {
                    let last = sent.load(Ordering::Acquire);
                    let pending = (0..last).any(|i| {
                        let at = sent_at[i as usize].load(Ordering::Relaxed);
                        at != 0 && now_us < at - 1 + timeout_us
                    });
                    if !pending {
                        break;
                    }
                }
                let len = match sock.recv(&mut buf) {
                    Ok(len) => len,
                    Err(_) => {
                        if replies == 0 && sent.load(Ordering::Acquire) >= 10 {
                            // The first ten updates all unanswered after the timeout: stop.
                            let first = sent_at[9].load(Ordering::Relaxed);
                            if first != 0 && now_us > first - 1 + timeout_us {
                                early.store(true, Ordering::Release);
                            }
                        }
                        continue;
                    }
                };
                let reply = match Reply::of(&buf[..len]) {
                    Some(h) if h.opcode == opcode::UPDATE => h,
                    _ => {
                        r.unmatched += 1;
                        continue;
                    }
                };
                let id = u64::from(reply.id);
                // ID = update number mod 65536: the newest sent update with that ID.
                let last = sent.load(Ordering::Acquire);
                let mut hit = None;
                if last > id {
                    let mut q = last - 1 - ((last - 1 - id) % 65536);
                    loop {
                        let at = sent_at[q as usize].load(Ordering::Relaxed);
                        if at != 0 {
                            hit = Some((q, at));
                            break;
                        }
                        match q.checked_sub(65536) {
                            Some(p) => q = p,
                            None => break,
                        }
                    }
                }
                let Some((q, at)) = hit else {
                    r.unmatched += 1;
                    continue;
                };
                sent_at[q as usize].store(0, Ordering::Relaxed);
                replies += 1;
                let rcode = reply.rcode;
                let latency = now_us.saturating_sub(at - 1);
                if latency > timeout_us {
                    r.timeouts += 1;
                    continue;
                }
                r.rcodes[rcode as usize] += 1;
                if rcode == 0 {
                    hist.record(latency);
                } else if replies >= 10 && r.rcodes[0] == 0 {
                    early.store(true, Ordering::Release);
                }
            }
            // Updates never answered.
            let last = sent.load(Ordering::Acquire);
            r.timeouts += (0..last)
                .filter(|&i| sent_at[i as usize].load(Ordering::Relaxed) != 0)
                .count() as u64;
            r.latency_us = [50.0, 99.0, 100.0].map(|p| hist.percentile(p).unwrap_or(0));
            r
        });
        let mut i = 0u64;
        let mut err = None;
        while i < n {
            if stop.load(Ordering::Relaxed)
                || early.load(Ordering::Acquire)
                || start.elapsed() >= max_time
            {
                break;
            }
            let due = pacer.due(start.elapsed());
            if i >= due {
                let wait = pacer.at(i).saturating_sub(start.elapsed());
                std::thread::sleep(wait.min(Duration::from_millis(5)));
                continue;
            }
            let Some((z, op)) = plan.op(cfg.first + i) else {
                break;
            };
            let mut msg = update_message(i as u16, &zones[z], &op);
            if let Some(key) = &cfg.key {
                let now = lode_io::clock::unix_now();
                // Fails only when ARCOUNT is full, which an UPDATE built above never is.
                if lode_tsig::sign_request_vec(&mut msg, key, now).is_err() {
                    err = Some(std::io::Error::other("TSIG signing failed"));
                    break;
                }
            }
            sent_at[i as usize].store(start.elapsed().as_micros() as u64 + 1, Ordering::Relaxed);
            sent.store(i + 1, Ordering::Release);
            if let Err(e) = sock.send(&msg) {
                if e.kind() != std::io::ErrorKind::ConnectionRefused {
                    err = Some(e);
                    break;
                }
            }
            i += 1;
        }
        done.store(true, Ordering::Release);
        let r = receiver.join();
        match r {
            Ok(r) => {
                if let Ok(mut g) = result.lock() {
                    *g = r;
                }
            }
            Err(_) => return Err(UpdateError::Config("update receiver panicked".into())),
        }
        match err {
            Some(e) => Err(UpdateError::Io(e)),
            None => Ok(i),
        }
    });
    let sent_n = send_result?;
    let mut r = result
        .into_inner()
        .map_err(|_| UpdateError::Config("poisoned".into()))?;
    r.sent = sent_n;
    r.secs = start.elapsed().as_secs_f64();
    r.refused_early = early.load(Ordering::Acquire);
    Ok(r)
}

/// Runs `load` while an update stream runs in the background (stopped when `load`
/// returns, and in any case after `max_time`); returns both outcomes.
pub fn during_updates<T: Send>(
    cfg: &UpdateConfig,
    plan: &mut UpdatePlan,
    max_time: Duration,
    load: impl FnOnce() -> T + Send,
) -> (T, Result<UpdateResult, UpdateError>) {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let stream = s.spawn(|| run_stream(cfg, plan, &stop, max_time));
        let out = load();
        stop.store(true, Ordering::Relaxed);
        let r = stream
            .join()
            .unwrap_or_else(|_| Err(UpdateError::Config("update sender panicked".into())));
        (out, r)
    })
}

#[cfg(test)]
mod tests;
