//! Propagation: how long after the primary acknowledges an UPDATE every secondary
//! answers it.
//!
//! ```text
//!  sender ── UPDATE i (TSIG) ──▶ primary ──NOTIFY/IXFR──▶ secondaries
//!  receiver ◀── NOERROR: ack[i] = t ──┘                      │
//!  prober per secondary: the witness queries of the oldest `window`
//!  acked-but-unseen updates ─────────────────────────────────┘
//!        first reply that shows update i: seen[i] = t; latency = seen[i] − ack[i]
//! ```
//!
//! An update is a message and its witness ([`registry::Witness`]): the ENUM
//! runs add `f<tag>-i.<zone> TXT` (shown by an answer), the TLD runs send the
//! registry stream (shown by the new NS target in a referral, or NXDOMAIN).
//! The sender keeps a constant rate, or at full speed (rate infinite) keeps
//! `in_flight` updates waiting for their replies ([`SendPolicy`]).
//!
//! A prober asks again every `interval` (1 ms) and at once when a whole window
//! was answered (a transfer usually brings many names at a time). Latencies are
//! therefore within about one interval plus a round trip of the truth.

use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lode_wire::{Name, Rtype};

use super::registry::{self, RegistryOp, StreamUpdate, Want, Witness};
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
    /// Updates per second; infinite: full speed (see `in_flight`).
    pub rate: f64,
    /// Full speed: updates sent and not yet answered at most.
    pub in_flight: usize,
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
    /// Seconds from the start to the last update sent.
    pub send_secs: f64,
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

/// When the sender may send its next update (pure: counts and times in, a
/// decision out).
#[derive(Debug, Clone, Copy)]
pub enum SendPolicy {
    /// Update `i` is due at `i / rate` after the start.
    Paced(Pacer),
    /// Full speed: as soon as fewer than this many updates wait for a reply.
    Closed(u64),
}

impl SendPolicy {
    /// The policy of `rate` (infinite: full speed with `in_flight` outstanding)
    /// for `total` updates.
    pub fn new(rate: f64, total: u64, in_flight: usize) -> SendPolicy {
        if rate.is_infinite() {
            SendPolicy::Closed(in_flight.max(1) as u64)
        } else {
            SendPolicy::Paced(Pacer::new(rate, total))
        }
    }

    /// Whether update `i` may go `elapsed` after the start, when `done` of the
    /// updates sent so far were answered or given up.
    pub fn may_send(&self, i: u64, elapsed: Duration, done: u64) -> bool {
        match self {
            SendPolicy::Paced(p) => i < p.due(elapsed),
            SendPolicy::Closed(w) => i.saturating_sub(done) < *w,
        }
    }

    /// How long to sleep before asking again when update `i` may not go yet.
    pub fn pause(&self, i: u64, elapsed: Duration) -> Duration {
        match self {
            SendPolicy::Paced(p) => p
                .at(i)
                .saturating_sub(elapsed)
                .min(Duration::from_millis(2)),
            SendPolicy::Closed(_) => Duration::from_micros(50),
        }
    }
}

/// The ENUM runs' updates: `n` additions of `f<tag>-<i>.<zone> TXT`, each shown
/// by an answer to its TXT query.
pub fn txt_updates(zone: &Name, tag: &str, n: u64) -> Result<Vec<StreamUpdate>, FleetError> {
    (0..n)
        .map(|i| {
            let owner = Name::parse(&format!("f{tag}-{i}"), Some(zone))
                .map_err(|e| FleetError::Config(format!("name f{tag}-{i}: {e}")))?;
            let t = format!("fleet {i}");
            let mut rdata = vec![t.len() as u8];
            rdata.extend_from_slice(t.as_bytes());
            let op = UpdateOp::Add {
                owner: owner.clone(),
                rtype: Rtype::TXT,
                rdata,
            };
            Ok(StreamUpdate {
                op: RegistryOp::Addition,
                message: update_message(0, zone, &op),
                witness: Witness {
                    name: owner,
                    rtype: Rtype::TXT,
                    want: Want::Answer,
                },
                deletes: None,
            })
        })
        .collect()
}

/// Runs one propagation measurement of `updates` (sent in order); `stop` ends
/// it early (Ctrl-C, or the end of the load it runs beside). With no
/// secondaries it is only a paced update stream whose replies are counted.
pub fn run(
    cfg: &PropagationConfig,
    updates: &[StreamUpdate],
    stop: &AtomicBool,
) -> Result<PropagationResult, FleetError> {
    if cfg.rate.is_nan() || cfg.rate <= 0.0 || updates.is_empty() {
        return Err(FleetError::Config(
            "need a positive rate and at least one update".into(),
        ));
    }
    let n = updates.len();
    let sock = UdpSocket::bind((super::net::PROBER, 0)).map_err(FleetError::socket)?;
    sock.connect(cfg.primary).map_err(FleetError::socket)?;
    sock.set_read_timeout(Some(Duration::from_millis(10)))
        .map_err(FleetError::socket)?;
    let sent_at: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
    let acked: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
    let sent = AtomicU64::new(0);
    // Updates answered or given up (the full-speed sender's window).
    let done = AtomicU64::new(0);
    let sending = AtomicBool::new(true);
    let acks_final = AtomicBool::new(false);
    let start = Instant::now();
    let timeout_us = cfg.timeout.as_micros() as u64;
    let scoped = std::thread::scope(|s| -> Result<(u64, f64, Vec<Vec<u64>>), FleetError> {
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
                            done.fetch_add(1, Ordering::Release);
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
                    done.fetch_add(1, Ordering::Release);
                }
            }
            acks_final.store(true, Ordering::Release);
        });
        let probers: Vec<_> = cfg
            .secondaries
            .iter()
            .map(|(_, addr)| {
                let addr = *addr;
                let (acked, sent, acks_final) = (&acked, &sent, &acks_final);
                s.spawn(move || prober(cfg, addr, updates, acked, sent, acks_final, start, stop))
            })
            .collect();
        // The sender, on this thread.
        let policy = SendPolicy::new(cfg.rate, n as u64, cfg.in_flight);
        let mut i = 0u64;
        let mut err = None;
        while i < n as u64 && !stop.load(Ordering::Relaxed) {
            let elapsed = start.elapsed();
            if !policy.may_send(i, elapsed, done.load(Ordering::Acquire)) {
                std::thread::sleep(policy.pause(i, elapsed));
                continue;
            }
            let mut msg = updates[i as usize].message.clone();
            msg[..2].copy_from_slice(&(i as u16).to_be_bytes());
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
        let send_secs = start.elapsed().as_secs_f64();
        sending.store(false, Ordering::Release);
        let _ = receiver.join();
        let seen: Vec<Vec<u64>> = probers
            .into_iter()
            .map(|p| p.join().unwrap_or_default())
            .collect();
        match err {
            Some(e) => Err(e),
            None => Ok((i, send_secs, seen)),
        }
    });
    let (sent_n, send_secs, seen) = scoped?;
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
        send_secs,
    })
}

/// One secondary's prober: returns `seen` (µs + 1 after the start, 0 = never).
#[allow(clippy::too_many_arguments)]
fn prober(
    cfg: &PropagationConfig,
    addr: SocketAddr,
    updates: &[StreamUpdate],
    acked: &[AtomicU64],
    sent: &AtomicU64,
    acks_final: &AtomicBool,
    start: Instant,
    stop: &AtomicBool,
) -> Vec<u64> {
    let n = updates.len();
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
    let queries: Vec<Vec<u8>> = updates
        .iter()
        .enumerate()
        .map(|(i, u)| request::query(i as u16, &u.witness.name, u.witness.rtype))
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
            let Some(Reply { id, .. }) = Reply::of(&buf[..len]) else {
                continue;
            };
            let Some(&i) = batch.iter().find(|&&i| i as u16 == id) else {
                continue;
            };
            answered += 1;
            if seen[i] == 0 && registry::shows(&buf[..len], &updates[i].witness) {
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
    fn the_sender_paces_or_keeps_a_window() {
        let ms = Duration::from_millis;
        let paced = SendPolicy::new(100.0, 1000, 4);
        assert!(paced.may_send(0, Duration::ZERO, 0));
        assert!(!paced.may_send(1, ms(9), 1));
        assert!(
            paced.may_send(1, ms(11), 0),
            "the schedule, not the replies"
        );
        assert_eq!(paced.pause(1, ms(9)), ms(1));
        assert_eq!(paced.pause(50, ms(0)), ms(2), "never more than 2 ms");
        let full = SendPolicy::new(f64::INFINITY, 1000, 2);
        assert!(full.may_send(0, Duration::ZERO, 0));
        assert!(full.may_send(1, Duration::ZERO, 0));
        assert!(!full.may_send(2, Duration::ZERO, 0), "two in flight");
        assert!(full.may_send(2, Duration::ZERO, 1));
        assert!(SendPolicy::new(f64::INFINITY, 10, 0).may_send(0, Duration::ZERO, 0));
        assert!(!SendPolicy::new(f64::INFINITY, 10, 0).may_send(1, Duration::ZERO, 0));
    }

    #[test]
    fn txt_updates_are_shown_by_an_answer() {
        let zone = Name::parse("e164.arpa.", Some(&Name::root())).expect("zone");
        let u = txt_updates(&zone, "r0", 3).expect("updates");
        assert_eq!(u.len(), 3);
        assert_eq!(u[2].witness.name.to_string(), "fr0-2.e164.arpa.");
        assert_eq!(u[2].witness.want, Want::Answer);
        assert_eq!(&u[2].message[..2], &[0, 0]);
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
