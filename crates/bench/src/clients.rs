//! Closed-loop clients (enumperf, Shen & Schulzrinne §3.3): each client sends one query,
//! waits for its reply (or the timeout) and sends the next. Clients are added step
//! by step; each step reports throughput and latency percentiles, which shows
//! where the server saturates and how latency grows on the way.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::query::{check_reply, message_id, Expect, QuerySet, Verdict, HEADER_LEN};
use crate::rate::RateError;
use crate::stats::percentile;

/// Settings of a client ramp.
#[derive(Debug, Clone)]
pub struct ClientsConfig {
    /// The server under test.
    pub server: SocketAddr,
    /// Length of each step.
    pub step_duration: Duration,
    /// How long a client waits for a reply before sending its next query.
    pub timeout: Duration,
    /// Which replies are valid.
    pub expect: Expect,
}

/// What one step with a fixed number of clients measured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ClientStep {
    /// Clients in this step.
    pub clients: usize,
    /// Valid replies.
    pub answered: u64,
    /// Queries that got no reply within the timeout.
    pub timeouts: u64,
    /// Replies that were not valid (wrong RCODE, no answer, …).
    pub wrong: u64,
    /// Valid replies per second.
    pub qps: f64,
    /// Latency percentiles of valid replies, microseconds: 50th, 90th, 99th, maximum.
    pub latency_us: [f64; 4],
}

/// Runs one step with `clients` closed-loop clients; queries start at `cursor`.
pub fn run_step(
    cfg: &ClientsConfig,
    queries: &Arc<QuerySet>,
    clients: usize,
    cursor: u64,
) -> Result<ClientStep, RateError> {
    if queries.is_empty() || clients == 0 {
        return Err(RateError::Config(
            "need queries and at least one client".into(),
        ));
    }
    let bind: SocketAddr = if cfg.server.is_ipv4() {
        SocketAddr::from(([0, 0, 0, 0], 0))
    } else {
        SocketAddr::from(([0u16; 8], 0))
    };
    let mut sockets = Vec::with_capacity(clients);
    for _ in 0..clients {
        let s = UdpSocket::bind(bind)?;
        s.connect(cfg.server)?;
        s.set_read_timeout(Some(cfg.timeout.max(Duration::from_millis(1))))?;
        sockets.push(s);
    }
    let start = Instant::now();
    let deadline = start + cfg.step_duration;
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = sockets
            .iter()
            .enumerate()
            .map(|(c, sock)| {
                let first = cursor.wrapping_add(c as u64);
                s.spawn(move || client_loop(cfg, sock, queries, first, clients as u64, deadline))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| RateError::Thread("client panicked".into()))
            })
            .collect::<Result<Vec<_>, _>>()
    })?;
    let secs = start.elapsed().as_secs_f64();
    let mut step = ClientStep {
        clients,
        ..ClientStep::default()
    };
    let mut latencies: Vec<f64> = Vec::new();
    for r in results {
        let r = r?;
        step.answered += r.answered;
        step.timeouts += r.timeouts;
        step.wrong += r.wrong;
        latencies.extend(r.latencies_us.iter().map(|&v| f64::from(v)));
    }
    step.qps = step.answered as f64 / secs.max(1e-9);
    step.latency_us = latency_summary(&mut latencies);
    Ok(step)
}

/// 50th, 90th, 99th percentile and maximum (zeros if empty); sorts `v`.
pub fn latency_summary(v: &mut [f64]) -> [f64; 4] {
    v.sort_by(f64::total_cmp);
    let p = |x| percentile(v, x).unwrap_or(0.0);
    [p(50.0), p(90.0), p(99.0), p(100.0)]
}

/// What one client saw.
#[derive(Debug, Default)]
struct ClientReport {
    answered: u64,
    timeouts: u64,
    wrong: u64,
    latencies_us: Vec<u32>,
}

/// One client: query, wait for the matching reply or the timeout, repeat until `deadline`.
fn client_loop(
    cfg: &ClientsConfig,
    sock: &UdpSocket,
    queries: &QuerySet,
    first: u64,
    stride: u64,
    deadline: Instant,
) -> Result<ClientReport, RateError> {
    let mut report = ClientReport {
        latencies_us: Vec::with_capacity(1 << 16),
        ..ClientReport::default()
    };
    let mut msg = Vec::with_capacity(512);
    let mut buf = vec![0u8; 65535];
    let qcount = queries.len() as u64;
    let mut i = 0u64;
    while Instant::now() < deadline {
        let qi = (first.wrapping_add(i * stride) % qcount) as usize;
        let id = (i as u16) ^ 0x5A5A;
        i += 1;
        msg.clear();
        msg.extend_from_slice(queries.get(qi));
        msg[..2].copy_from_slice(&id.to_be_bytes());
        let sent = Instant::now();
        match sock.send(&msg) {
            Ok(_) => {}
            // A refused port (ICMP) or a full buffer: count it as unanswered and go on.
            Err(_) => {
                report.timeouts += 1;
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
        }
        let until = sent + cfg.timeout;
        loop {
            let n = match sock.recv(&mut buf) {
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    report.timeouts += 1;
                    break;
                }
                Err(_) => {
                    report.timeouts += 1;
                    break;
                }
            };
            let reply = &buf[..n];
            // A late reply to an earlier query: skip it and keep waiting.
            if reply.len() < HEADER_LEN || message_id(reply) != id {
                if Instant::now() >= until {
                    report.timeouts += 1;
                    break;
                }
                continue;
            }
            match check_reply(reply, queries.question(qi), cfg.expect) {
                Verdict::Valid => {
                    report.answered += 1;
                    let us = sent.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
                    report.latencies_us.push(us);
                }
                _ => report.wrong += 1,
            }
            break;
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_percentiles() {
        let mut v: Vec<f64> = (1..=1000).rev().map(f64::from).collect();
        assert_eq!(latency_summary(&mut v), [500.0, 900.0, 990.0, 1000.0]);
        assert_eq!(latency_summary(&mut []), [0.0; 4]);
    }

    #[test]
    fn clients_against_echo() {
        let echo = crate::echo::start(&["127.0.0.1:0".parse().expect("addr")], 1).expect("echo");
        let queries =
            Arc::new(QuerySet::parse_list("a.test A\nb.test A\n", 10, false).expect("queries"));
        let mut cfg = ClientsConfig {
            server: echo.local_addrs()[0],
            step_duration: Duration::from_millis(200),
            timeout: Duration::from_millis(250),
            expect: Expect::NoError,
        };
        let step = run_step(&cfg, &queries, 2, 0).expect("step");
        assert_eq!(step.clients, 2);
        assert!(step.answered > 0 && step.qps > 0.0, "{step:?}");
        assert_eq!(step.wrong, 0);
        assert!(step.latency_us[0] <= step.latency_us[3]);
        cfg.expect = Expect::NxDomain;
        let step = run_step(&cfg, &queries, 1, 0).expect("step");
        assert_eq!(step.answered, 0);
        assert!(step.wrong > 0);
        echo.stop();
    }
}
