//! Propagation: how long after the primary acknowledges an UPDATE every secondary
//! answers it.
//!
//! ```text
//!  sender ── UPDATE i (add f<tag>-i.<zone> TXT, TSIG) ──▶ primary ──NOTIFY/IXFR──▶ secondaries
//!  receiver ◀── NOERROR: ack[i] = t ──┘                                            │
//!  prober per secondary: the oldest `window` acked-but-unseen names, TXT queries ──┘
//!        first NOERROR with an answer: seen[i] = t; latency = seen[i] − ack[i]
//! ```
//!
//! A prober asks again every `interval` (1 ms) and at once when a whole window
//! was answered (a transfer usually brings many names at a time). Latencies are
//! therefore within about one interval plus a round trip of the truth.

use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lode_wire::{Name, Rtype};

use super::FleetError;
use crate::pacing::Pacer;
use crate::stats::percentile;
use crate::update::{update_message, UpdateOp};
use lode_wire::request::{self, Reply};

/// An acknowledgement slot's value for an update that failed (non-NOERROR or no reply).
const FAILED: u64 = u64::MAX;

/// Settings of one propagation run.
#[derive(Debug, Clone)]
pub struct PropagationConfig {
    /// The primary.
    pub primary: SocketAddr,
    /// The secondaries: a label and an address.
    pub secondaries: Vec<(String, SocketAddr)>,
    /// The zone.
    pub zone: Name,
    /// Updates per second.
    pub rate: f64,
    /// Updates sent.
    pub updates: u64,
    /// A label unique to this run, in every added name (`f<tag>-<i>`).
    pub tag: String,
    /// The TSIG key of the updates.
    pub key: lode_tsig::Key,
    /// Names a prober asks for at a time.
    pub window: usize,
    /// Time between a prober's rounds.
    pub interval: Duration,
    /// How long after the last acknowledgement a name may still appear.
    pub wait: Duration,
    /// How long to wait for an UPDATE's reply.
    pub timeout: Duration,
}

/// Latency percentiles of one secondary (or of all of them).
#[derive(Debug, Clone, PartialEq)]
pub struct Latencies {
    /// Which secondary (`all` for every one).
    pub label: String,
    /// Updates seen.
    pub seen: u64,
    /// Acknowledged updates never seen within the wait.
    pub missing: u64,
    /// Milliseconds: median, 99th percentile, maximum (None without samples).
    pub ms: Option<[f64; 3]>,
}

impl Latencies {
    /// The summary of `samples` (microseconds).
    pub fn of(label: &str, samples: &[u64], missing: u64) -> Latencies {
        let mut v: Vec<f64> = samples.iter().map(|&us| us as f64 / 1000.0).collect();
        v.sort_by(f64::total_cmp);
        let ms = match (percentile(&v, 50.0), percentile(&v, 99.0), v.last()) {
            (Some(a), Some(b), Some(&c)) => Some([a, b, c]),
            _ => None,
        };
        Latencies {
            label: label.to_string(),
            seen: samples.len() as u64,
            missing,
            ms,
        }
    }
}

/// What one propagation run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct PropagationResult {
    /// The rate asked for.
    pub rate: f64,
    /// Updates sent.
    pub sent: u64,
    /// Updates answered NOERROR.
    pub acked: u64,
    /// Update latency at the primary (send to NOERROR), ms: p50, p99, max.
    pub update_ms: Option<[f64; 3]>,
    /// Per secondary, then `all` (the slowest secondary of each update).
    pub secondaries: Vec<Latencies>,
    /// Seconds the run took.
    pub secs: f64,
}

/// Per update, the latency until every secondary answered (the slowest one), in µs;
/// and how many acknowledged updates some secondary never answered.
/// `seen[s][i]` and `acked[i]` are µs + 1 after the start (0: never; `acked` may be
/// [`FAILED`]).
pub fn all_latencies(acked: &[u64], seen: &[Vec<u64>]) -> (Vec<u64>, u64) {
    let mut lat = Vec::new();
    let mut missing = 0;
    for (i, &a) in acked.iter().enumerate() {
        if a == 0 || a == FAILED {
            continue;
        }
        let worst = seen
            .iter()
            .map(|s| s.get(i).copied().unwrap_or(0))
            .try_fold(0u64, |w, t| {
                if t == 0 {
                    None
                } else {
                    Some(w.max(t.saturating_sub(a)))
                }
            });
        match worst {
            Some(w) => lat.push(w),
            None => missing += 1,
        }
    }
    (lat, missing)
}

/// One secondary's latencies from its `seen` slots.
fn one_latencies(acked: &[u64], seen: &[u64]) -> (Vec<u64>, u64) {
    all_latencies(acked, std::slice::from_ref(&seen.to_vec()))
}

/// µs since `start`, plus one (so that 0 means "not yet").
fn stamp(start: Instant) -> u64 {
    start.elapsed().as_micros() as u64 + 1
}

/// Runs one propagation measurement; `stop` ends it early (Ctrl-C).
pub fn run(cfg: &PropagationConfig, stop: &AtomicBool) -> Result<PropagationResult, FleetError> {
    if cfg.rate.is_nan() || cfg.rate <= 0.0 || cfg.updates == 0 {
        return Err(FleetError::Config(
            "need a positive rate and update count".into(),
        ));
    }
    let n = cfg.updates as usize;
    // Every name and query prepared before the clock starts.
    let names: Vec<Name> = (0..n)
        .map(|i| {
            Name::parse(&format!("f{}-{i}", cfg.tag), Some(&cfg.zone))
                .map_err(|e| FleetError::Config(format!("name f{}-{i}: {e}", cfg.tag)))
        })
        .collect::<Result<_, _>>()?;
    let sock = UdpSocket::bind((super::net::PROBER, 0)).map_err(FleetError::socket)?;
    sock.connect(cfg.primary).map_err(FleetError::socket)?;
    sock.set_read_timeout(Some(Duration::from_millis(10)))
        .map_err(FleetError::socket)?;
    let sent_at: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
    let acked: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
    let sent = AtomicU64::new(0);
    let sending = AtomicBool::new(true);
    let acks_final = AtomicBool::new(false);
    let start = Instant::now();
    let timeout_us = cfg.timeout.as_micros() as u64;
    let (sent_n, seen) = std::thread::scope(|s| -> Result<(u64, Vec<Vec<u64>>), FleetError> {
        // The receiver: NOERROR stamps ack[i]; anything else, or nothing in time, FAILED.
        let receiver = s.spawn(|| {
            let mut buf = [0u8; 4096];
            // Updates before `lo` are all answered or failed.
            let mut lo = 0usize;
            loop {
                let last = sent.load(Ordering::Acquire) as usize;
                let now = stamp(start);
                let mut open = false;
                while lo < last && acked[lo].load(Ordering::Relaxed) != 0 {
                    lo += 1;
                }
                for (i, at) in sent_at.iter().enumerate().take(last).skip(lo) {
                    let a = at.load(Ordering::Relaxed);
                    if a != 0 && acked[i].load(Ordering::Relaxed) == 0 {
                        if now > a + timeout_us {
                            acked[i].store(FAILED, Ordering::Release);
                        } else {
                            open = true;
                        }
                    }
                }
                if !open && !sending.load(Ordering::Acquire) {
                    break;
                }
                let Ok(len) = sock.recv(&mut buf) else {
                    continue;
                };
                let Some(Reply { id, rcode, .. }) = Reply::of(&buf[..len]) else {
                    continue;
                };
                // The newest unanswered update with this ID (IDs are i mod 65536).
                let last = sent.load(Ordering::Acquire) as usize;
                let mut i = id as usize;
                let mut hit = None;
                while i < last {
                    if acked[i].load(Ordering::Relaxed) == 0 {
                        hit = Some(i);
                    }
                    i += 65536;
                }
                if let Some(i) = hit {
                    let v = if rcode == 0 { stamp(start) } else { FAILED };
                    acked[i].store(v, Ordering::Release);
                }
            }
            acks_final.store(true, Ordering::Release);
        });
        let probers: Vec<_> = cfg
            .secondaries
            .iter()
            .map(|(_, addr)| {
                let addr = *addr;
                let (names, acked, sent, acks_final) = (&names, &acked, &sent, &acks_final);
                s.spawn(move || prober(cfg, addr, names, acked, sent, acks_final, start, stop))
            })
            .collect();
        // The sender, on this thread.
        let pacer = Pacer::new(cfg.rate, cfg.updates);
        let mut i = 0u64;
        let mut err = None;
        while i < cfg.updates && !stop.load(Ordering::Relaxed) {
            if i >= pacer.due(start.elapsed()) {
                let wait = pacer.at(i).saturating_sub(start.elapsed());
                std::thread::sleep(wait.min(Duration::from_millis(2)));
                continue;
            }
            let op = UpdateOp::Add {
                owner: names[i as usize].clone(),
                rtype: Rtype::TXT,
                rdata: {
                    let t = format!("fleet {i}");
                    let mut r = vec![t.len() as u8];
                    r.extend_from_slice(t.as_bytes());
                    r
                },
            };
            let mut msg = update_message(i as u16, &cfg.zone, &op);
            let now = lode_io::clock::unix_now();
            if lode_tsig::sign_request_vec(&mut msg, &cfg.key, now).is_err() {
                err = Some(FleetError::Config("TSIG signing failed".into()));
                break;
            }
            sent_at[i as usize].store(stamp(start), Ordering::Relaxed);
            sent.store(i + 1, Ordering::Release);
            if let Err(e) = sock.send(&msg) {
                err = Some(FleetError::socket(e));
                break;
            }
            i += 1;
        }
        sending.store(false, Ordering::Release);
        let _ = receiver.join();
        let seen: Vec<Vec<u64>> = probers
            .into_iter()
            .map(|p| p.join().unwrap_or_default())
            .collect();
        match err {
            Some(e) => Err(e),
            None => Ok((i, seen)),
        }
    })?;
    let acked: Vec<u64> = acked.iter().map(|a| a.load(Ordering::Acquire)).collect();
    let sent_at: Vec<u64> = sent_at.iter().map(|a| a.load(Ordering::Acquire)).collect();
    let upd: Vec<u64> = acked
        .iter()
        .zip(&sent_at)
        .filter(|(a, _)| **a != 0 && **a != FAILED)
        .map(|(a, s)| a.saturating_sub(*s))
        .collect();
    let mut secondaries: Vec<Latencies> = cfg
        .secondaries
        .iter()
        .zip(&seen)
        .map(|((label, _), s)| {
            let (lat, missing) = one_latencies(&acked, s);
            Latencies::of(label, &lat, missing)
        })
        .collect();
    let (lat, missing) = all_latencies(&acked, &seen);
    secondaries.push(Latencies::of("all", &lat, missing));
    Ok(PropagationResult {
        rate: cfg.rate,
        sent: sent_n,
        acked: upd.len() as u64,
        update_ms: Latencies::of("", &upd, 0).ms,
        secondaries,
        secs: start.elapsed().as_secs_f64(),
    })
}

/// One secondary's prober: returns `seen` (µs + 1 after the start, 0 = never).
#[allow(clippy::too_many_arguments)]
fn prober(
    cfg: &PropagationConfig,
    addr: SocketAddr,
    names: &[Name],
    acked: &[AtomicU64],
    sent: &AtomicU64,
    acks_final: &AtomicBool,
    start: Instant,
    stop: &AtomicBool,
) -> Vec<u64> {
    let n = names.len();
    let mut seen = vec![0u64; n];
    let Ok(sock) = UdpSocket::bind((super::net::PROBER, 0)) else {
        return seen;
    };
    if sock.connect(addr).is_err()
        || sock
            .set_read_timeout(Some(Duration::from_micros(500)))
            .is_err()
    {
        return seen;
    }
    let queries: Vec<Vec<u8>> = names
        .iter()
        .enumerate()
        .map(|(i, nm)| request::query(i as u16, nm, Rtype::TXT))
        .collect();
    let mut added = vec![false; n];
    let mut next_scan = 0usize;
    let mut pending: VecDeque<usize> = VecDeque::new();
    let mut buf = [0u8; 4096];
    let mut last_ack_us = 0u64;
    let window = cfg.window.max(1);
    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let round = Instant::now();
        let done_acking = acks_final.load(Ordering::Acquire);
        let last = sent.load(Ordering::Acquire) as usize;
        let mut j = next_scan;
        while j < last {
            let a = acked[j].load(Ordering::Acquire);
            if a != 0 && !added[j] {
                added[j] = true;
                if a != FAILED {
                    pending.push_back(j);
                    last_ack_us = last_ack_us.max(a);
                }
            }
            if added[j] && j == next_scan {
                next_scan += 1;
            }
            j += 1;
        }
        if pending.is_empty() {
            if done_acking && next_scan >= last {
                break;
            }
            std::thread::sleep(cfg.interval);
            continue;
        }
        if done_acking && start.elapsed() > Duration::from_micros(last_ack_us) + cfg.wait {
            break;
        }
        let batch: Vec<usize> = pending.iter().take(window).copied().collect();
        for &i in &batch {
            let _ = sock.send(&queries[i]);
        }
        let mut answered = 0usize;
        let mut positive = 0usize;
        let until = round + Duration::from_millis(2);
        while answered < batch.len() && Instant::now() < until {
            let Ok(len) = sock.recv(&mut buf) else {
                continue;
            };
            let Some(Reply {
                id, rcode, ancount, ..
            }) = Reply::of(&buf[..len])
            else {
                continue;
            };
            let Some(&i) = batch.iter().find(|&&i| i as u16 == id) else {
                continue;
            };
            answered += 1;
            if rcode == 0 && ancount > 0 && seen[i] == 0 {
                seen[i] = stamp(start);
                positive += 1;
            }
        }
        if positive > 0 {
            pending.retain(|&i| seen[i] == 0);
        }
        if positive < batch.len() {
            let rest = cfg.interval.saturating_sub(round.elapsed());
            if !rest.is_zero() {
                std::thread::sleep(rest);
            }
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_per_secondary_and_all() {
        // Four updates: acked at 100, 200, never (failed), 400 µs (+1 encoding).
        let acked = [101, 201, FAILED, 401];
        let s1 = vec![1101, 1201, 0, 0];
        let s2 = vec![3101, 701, 0, 5401];
        let (l1, m1) = one_latencies(&acked, &s1);
        assert_eq!((l1, m1), (vec![1000, 1000], 1));
        let (l2, m2) = one_latencies(&acked, &s2);
        assert_eq!((l2, m2), (vec![3000, 500, 5000], 0));
        let (all, missing) = all_latencies(&acked, &[s1, s2]);
        assert_eq!(
            all,
            vec![3000, 1000],
            "the slowest secondary of each update"
        );
        assert_eq!(missing, 1, "update 3 never reached s1");
    }

    #[test]
    fn summary_percentiles() {
        let samples: Vec<u64> = (1..=1000).map(|i| i * 1000).collect();
        let l = Latencies::of("x", &samples, 2);
        assert_eq!(l.seen, 1000);
        assert_eq!(l.missing, 2);
        assert_eq!(l.ms, Some([500.0, 990.0, 1000.0]));
        assert_eq!(Latencies::of("y", &[], 0).ms, None);
        // Few samples: p99 is the maximum (nearest rank).
        assert_eq!(
            Latencies::of("z", &[2000, 1000, 3000], 0).ms,
            Some([2.0, 3.0, 3.0])
        );
    }
}
