//! The CPU cost of Lode's metrics: Lode on the main set in two
//! variants, alternated run by run, server CPU per answer at the fixed rate.
//!
//! ```text
//!  for run in 1..=metrics_runs: for variant in off, on:        (off, on, off, on, …)
//!     start Lode   off: query-counters = false, no endpoint
//!                  on:  counters on, metrics-listen = 127.0.0.1:(base port + 6)
//!     ─▶ every zone answers ─▶ [on: a scraper thread, GET /metrics once per second]
//!     ─▶ warm-up step at the CPU rate (not counted)
//!     ─▶ one step per query kind at the CPU rate: server CPU (every thread) ÷ valid answers
//!     ─▶ scraper stopped ─▶ Lode stopped; a disturbed run is redone (--redo)
//!  summary: medians per variant, on ÷ off, PASS when ≤ 1.02
//! ```

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::servers::{Kind, LodeMetrics};
use super::{say, sys, Bench, CompareError, FixedStep, QueryKind, SetRole};
use crate::query::Expect;
use crate::rate::{RateConfig, Tester};
use crate::stats::median;

/// The issue's bound: CPU per answer with metrics on ≤ 1.02 × with them off.
pub const LIMIT: f64 = 1.02;

/// The metrics endpoint listens on the comparison's base port plus this (the echo
/// and the five servers use the six before it).
pub const PORT_OFFSET: u16 = 6;

/// Seconds between two scrapes.
pub const SCRAPE_EVERY: Duration = Duration::from_secs(1);

/// How Lode runs in the overhead measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// `query-counters = false`, no endpoint: the baseline.
    Off,
    /// Counters on and `metrics-listen`, scraped once per second.
    On,
}

impl Variant {
    /// The two, in run order.
    pub const ALL: [Variant; 2] = [Variant::Off, Variant::On];

    /// Short name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Off => "off",
            Variant::On => "on",
        }
    }

    /// Lode's configuration, the endpoint on `listen`.
    pub fn config(self, listen: SocketAddr) -> LodeMetrics {
        match self {
            Variant::Off => LodeMetrics::off(),
            Variant::On => LodeMetrics::on(listen),
        }
    }
}

/// One run of Lode in one variant.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsRun {
    /// Round (1-based).
    pub run: usize,
    /// The variant.
    pub variant: Variant,
    /// One fixed-rate step per query kind.
    pub fixed: Vec<FixedStep>,
    /// Scrapes answered 200 with a body.
    pub scrapes: u64,
    /// Scrapes that failed (connection, timeout, status).
    pub scrape_failures: u64,
    /// `lode_requests_total` summed over its samples in the last scrape.
    pub counted: Option<u64>,
    /// CPU steal during the run (fraction of all CPU time).
    pub steal: f64,
    /// CPU use by other processes (fraction of the machine).
    pub other_load: f64,
    /// Steal or other load above the comparison's limits.
    pub disturbed: bool,
}

impl MetricsRun {
    /// Server CPU seconds over the fixed steps.
    pub fn cpu_secs(&self) -> f64 {
        self.fixed.iter().map(|f| f.cpu_secs).sum()
    }

    /// Valid answers over the fixed steps.
    pub fn valid(&self) -> u64 {
        self.fixed.iter().map(|f| f.valid).sum()
    }

    /// Server CPU microseconds per valid answer over every fixed step (0 if none).
    pub fn cpu_us_per_answer(&self) -> f64 {
        match self.valid() {
            0 => 0.0,
            n => self.cpu_secs() * 1e6 / n as f64,
        }
    }
}

/// The medians of both variants and their ratio.
#[derive(Debug, Clone, PartialEq)]
pub struct OverheadSummary {
    /// Runs with metrics off.
    pub off_runs: usize,
    /// Runs with metrics on.
    pub on_runs: usize,
    /// Median CPU µs per answer, every query kind, metrics off.
    pub off_us: f64,
    /// The same, metrics on.
    pub on_us: f64,
    /// `on_us / off_us` (None when off is 0).
    pub ratio: Option<f64>,
    /// Median over rounds of each round's on ÷ off (rounds with both).
    pub paired_ratio: Option<f64>,
    /// Per query kind: median µs per answer off, on.
    pub per_query: Vec<(QueryKind, f64, f64)>,
    /// Scrapes answered, over every run.
    pub scrapes: u64,
    /// Scrapes failed, over every run.
    pub scrape_failures: u64,
    /// Runs flagged disturbed.
    pub disturbed: usize,
    /// The smallest request count seen by a run's last scrape (metrics on).
    pub counted_min: Option<u64>,
    /// Every step kept its schedule and every query was answered.
    pub clean: bool,
}

impl OverheadSummary {
    /// True when the ratio is within [`LIMIT`] (None: no ratio).
    pub fn pass(&self) -> Option<bool> {
        self.ratio.map(|r| r <= LIMIT)
    }
}

fn med(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    median(&v).unwrap_or(0.0)
}

/// `a / b` when b is positive.
fn over(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

/// The summary of the runs (None when there are none).
pub fn summarize(runs: &[MetricsRun]) -> Option<OverheadSummary> {
    if runs.is_empty() {
        return None;
    }
    let of = |v: Variant| runs.iter().filter(move |r| r.variant == v);
    let off_us = med(of(Variant::Off)
        .map(MetricsRun::cpu_us_per_answer)
        .collect());
    let on_us = med(of(Variant::On).map(MetricsRun::cpu_us_per_answer).collect());
    let paired: Vec<f64> = of(Variant::On)
        .filter_map(|on| {
            let off = of(Variant::Off).find(|off| off.run == on.run)?;
            over(on.cpu_us_per_answer(), off.cpu_us_per_answer())
        })
        .collect();
    let kind_us = |v: Variant, q: QueryKind| {
        med(of(v)
            .flat_map(|r| r.fixed.iter().filter(|f| f.query == q))
            .map(FixedStep::cpu_us_per_answer)
            .collect())
    };
    let per_query = QueryKind::ALL
        .into_iter()
        .filter(|q| runs.iter().any(|r| r.fixed.iter().any(|f| f.query == *q)))
        .map(|q| (q, kind_us(Variant::Off, q), kind_us(Variant::On, q)))
        .collect();
    Some(OverheadSummary {
        off_runs: of(Variant::Off).count(),
        on_runs: of(Variant::On).count(),
        off_us,
        on_us,
        ratio: over(on_us, off_us),
        paired_ratio: (!paired.is_empty()).then(|| med(paired)),
        per_query,
        scrapes: runs.iter().map(|r| r.scrapes).sum(),
        scrape_failures: runs.iter().map(|r| r.scrape_failures).sum(),
        disturbed: runs.iter().filter(|r| r.disturbed).count(),
        counted_min: of(Variant::On).map(|r| r.counted.unwrap_or(0)).min(),
        clean: runs
            .iter()
            .flat_map(|r| &r.fixed)
            .all(|f| f.tester_ok && f.valid == f.sent),
    })
}

/// One `GET /metrics` over HTTP/1.0 (the server closes after its reply): the body
/// of a 200 reply, within `timeout` for connecting and for each read and write.
pub fn scrape(addr: SocketAddr, timeout: Duration) -> std::io::Result<String> {
    use std::io::{Error, ErrorKind};
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    s.write_all(format!("GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())?;
    let mut reply = Vec::new();
    s.read_to_end(&mut reply)?;
    let text = String::from_utf8_lossy(&reply);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| Error::new(ErrorKind::InvalidData, "no end of the HTTP header"))?;
    let status = head.lines().next().unwrap_or_default();
    match status.split_whitespace().nth(1) {
        Some("200") if status.starts_with("HTTP/1.") => Ok(body.to_owned()),
        _ => Err(Error::new(
            ErrorKind::InvalidData,
            format!("reply {status:?}"),
        )),
    }
}

/// `lode_requests_total` summed over its samples in OpenMetrics text (None if absent).
pub fn requests_total(text: &str) -> Option<u64> {
    let mut sum = None;
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("lode_requests_total") else {
            continue;
        };
        if !(rest.starts_with('{') || rest.starts_with(' ')) {
            continue;
        }
        // The value follows the labels (which may hold spaces inside quotes).
        let after = rest.rfind('}').map_or(rest, |i| &rest[i + 1..]);
        if let Some(v) = after
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
        {
            *sum.get_or_insert(0u64) += v as u64;
        }
    }
    sum
}

/// What a scraper saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScrapeStats {
    /// Scrapes answered 200.
    pub ok: u64,
    /// Scrapes failed.
    pub failed: u64,
    /// `lode_requests_total` of the last good scrape.
    pub counted: Option<u64>,
    /// The last failure, if any.
    pub last_error: Option<String>,
}

/// A thread scraping `GET /metrics` at a fixed period until stopped (also on drop).
#[derive(Debug)]
pub struct Scraper {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<ScrapeStats>>,
}

impl Scraper {
    /// Starts scraping `addr` now and every `every` after.
    pub fn start(addr: SocketAddr, every: Duration) -> std::io::Result<Scraper> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("metrics-scraper".into())
            .spawn(move || {
                let mut stats = ScrapeStats::default();
                let mut next = Instant::now();
                while !flag.load(Ordering::Relaxed) {
                    let now = Instant::now();
                    if now < next {
                        std::thread::sleep((next - now).min(Duration::from_millis(20)));
                        continue;
                    }
                    next += every;
                    match scrape(addr, every.max(Duration::from_millis(200))) {
                        Ok(body) => {
                            stats.ok += 1;
                            stats.counted = requests_total(&body).or(stats.counted);
                        }
                        Err(e) => {
                            stats.failed += 1;
                            stats.last_error = Some(e.to_string());
                        }
                    }
                }
                stats
            })?;
        Ok(Scraper {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops the thread and returns what it saw.
    pub fn stop(mut self) -> ScrapeStats {
        self.halt()
    }

    fn halt(&mut self) -> ScrapeStats {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Scraper {
    fn drop(&mut self) {
        self.halt();
    }
}

impl Bench<'_> {
    /// The overhead measurement: `metrics_runs` rounds of off then on; a disturbed
    /// run is redone at once (up to the comparison's `redo`; the last attempt is kept).
    /// A failed run ends the measurement; the runs so far and notes are returned.
    pub(super) fn metrics_overhead(&self) -> (Vec<MetricsRun>, Vec<String>) {
        let rounds = self.cfg.metrics_runs;
        let mut runs = Vec::new();
        let mut notes = Vec::new();
        let mut redone = 0;
        for run in 1..=rounds {
            for variant in Variant::ALL {
                for attempt in 1..=self.cfg.redo + 1 {
                    say(&format!(
                        "metrics overhead {run}/{rounds}: {} (attempt {attempt})",
                        variant.name()
                    ));
                    match self.metrics_run(run, variant) {
                        Ok(r) if r.disturbed && attempt <= self.cfg.redo => redone += 1,
                        Ok(r) => {
                            runs.push(r);
                            break;
                        }
                        Err(e) => {
                            say(&format!("  metrics {}: {e}", variant.name()));
                            notes.push(format!(
                                "metrics overhead run {run} {}: {e}",
                                variant.name()
                            ));
                            return (runs, notes);
                        }
                    }
                }
            }
        }
        if redone > 0 {
            notes.push(format!(
                "metrics overhead: {redone} disturbed run(s) redone"
            ));
        }
        (runs, notes)
    }

    /// One run of Lode in `variant`.
    fn metrics_run(&self, run: usize, variant: Variant) -> Result<MetricsRun, CompareError> {
        let cfg = self.cfg;
        let set = self.set(SetRole::Main)?;
        let queries = self.main_queries()?;
        let me = std::process::id();
        let (cpu0, tester0) = (sys::cpu_times(), sys::pid_cpu(me));
        let listen = SocketAddr::from(([127, 0, 0, 1], cfg.base_port + PORT_OFFSET));
        let tag = format!("metrics-{}-run{run}", variant.name());
        let mut launch = self.launch(Kind::Lode, set.data.zones(), &tag);
        launch.metrics = variant.config(listen);
        let mut server = launch.start()?;
        for probe in &set.data.all_zones {
            server.wait_ready(probe, Expect::Answer, cfg.load_limit)?;
        }
        let scraper = match variant {
            Variant::Off => None,
            Variant::On => Some(
                Scraper::start(listen, SCRAPE_EVERY)
                    .map_err(|e| CompareError::Tester(format!("scraper thread: {e}")))?,
            ),
        };
        // Warm-up (caches, the counters' first use), not counted.
        let mut rc = RateConfig::new(server.addr);
        rc.threads = cfg.tester_threads;
        rc.ports = cfg.ports;
        rc.duration = cfg.cpu_step.min(Duration::from_secs(2));
        rc.timeout = cfg.timeout;
        let _ = Tester::new(rc, queries[0].clone())?.step(cfg.cpu_rate)?;
        let mut fixed = Vec::new();
        for q in QueryKind::ALL {
            let step =
                self.fixed_step(&server, &queries[q.file_index()], q, q.expect(Kind::Lode))?;
            fixed.push(step);
        }
        let stats = scraper.map(Scraper::stop).unwrap_or_default();
        let cpu_after: u64 = server.pids().iter().map(|&p| sys::pid_cpu(p)).sum();
        server.stop();
        let (cpu1, tester1) = (sys::cpu_times(), sys::pid_cpu(me));
        let total = cpu1.total.saturating_sub(cpu0.total).max(1) as f64;
        let busy = cpu1.busy.saturating_sub(cpu0.busy) as f64;
        let ours = cpu_after as f64 + tester1.saturating_sub(tester0) as f64;
        let steal = cpu1.steal.saturating_sub(cpu0.steal) as f64 / total;
        let other_load = ((busy - ours) / total).max(0.0);
        let r = MetricsRun {
            run,
            variant,
            fixed,
            scrapes: stats.ok,
            scrape_failures: stats.failed,
            counted: stats.counted,
            steal,
            other_load,
            disturbed: steal > cfg.max_steal || other_load > cfg.max_other_load,
        };
        say(&format!(
            "  metrics {}: {:.3} µs/answer{}, steal {:.1}%, other load {:.1}%{}",
            variant.name(),
            r.cpu_us_per_answer(),
            match variant {
                Variant::Off => String::new(),
                Variant::On => format!(
                    ", {} scrapes ({} failed{}), {} requests counted",
                    stats.ok,
                    stats.failed,
                    stats
                        .last_error
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default(),
                    stats.counted.unwrap_or(0)
                ),
            },
            steal * 100.0,
            other_load * 100.0,
            if r.disturbed { ": DISTURBED" } else { "" }
        ));
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn step(query: QueryKind, valid: u64, cpu_secs: f64) -> FixedStep {
        FixedStep {
            query,
            rate: 1000,
            sent: valid,
            valid,
            cpu_secs,
            tester_ok: true,
        }
    }

    /// A run whose three steps answer 1000 queries each at `us` µs per answer.
    pub(crate) fn run(run: usize, variant: Variant, us: f64) -> MetricsRun {
        MetricsRun {
            run,
            variant,
            fixed: QueryKind::ALL
                .into_iter()
                .map(|q| step(q, 1000, us * 1000.0 / 1e6))
                .collect(),
            scrapes: if variant == Variant::On { 5 } else { 0 },
            scrape_failures: 0,
            counted: (variant == Variant::On).then_some(4000),
            steal: 0.0,
            other_load: 0.01,
            disturbed: false,
        }
    }

    #[test]
    fn medians_and_ratio() {
        assert_eq!(summarize(&[]), None);
        let runs = [
            run(1, Variant::Off, 10.0),
            run(1, Variant::On, 10.1),
            run(2, Variant::Off, 12.0),
            run(2, Variant::On, 10.0),
            run(3, Variant::Off, 10.0),
            run(3, Variant::On, 10.3),
        ];
        let s = summarize(&runs).expect("summary");
        assert_eq!((s.off_runs, s.on_runs), (3, 3));
        assert!((s.off_us - 10.0).abs() < 1e-9, "{}", s.off_us);
        assert!((s.on_us - 10.1).abs() < 1e-9, "{}", s.on_us);
        let ratio = s.ratio.expect("ratio");
        assert!((ratio - 1.01).abs() < 1e-9);
        assert_eq!(s.pass(), Some(true));
        // Pairs: 1.01, 0.833…, 1.03 → 1.01.
        assert!((s.paired_ratio.expect("paired") - 1.01).abs() < 1e-9);
        assert_eq!(s.per_query.len(), 3);
        assert!((s.per_query[1].2 - 10.1).abs() < 1e-9);
        assert_eq!(s.scrapes, 15);
        assert_eq!(s.counted_min, Some(4000));
        assert!(s.clean);

        let miss =
            summarize(&[run(1, Variant::Off, 10.0), run(1, Variant::On, 10.5)]).expect("summary");
        assert_eq!(miss.pass(), Some(false));
        let none = summarize(&[run(1, Variant::Off, 0.0)]).expect("summary");
        assert_eq!(
            (none.ratio, none.pass(), none.paired_ratio),
            (None, None, None)
        );
        assert_eq!(none.counted_min, None);
    }

    #[test]
    fn request_totals_from_openmetrics() {
        let text = "# HELP lode_requests Requests received.\n# TYPE lode_requests counter\n\
                    lode_requests_total{transport=\"udp\",kind=\"query\"} 1200\n\
                    lode_requests_total{transport=\"tcp\",kind=\"query\"} 34\n\
                    lode_requests_edns_total{transport=\"udp\"} 99\n\
                    lode_requests_total 6\n# EOF\n";
        assert_eq!(requests_total(text), Some(1240));
        assert_eq!(requests_total("lode_udp_sent_total 5\n"), None);
    }

    /// A fake endpoint: one 200 reply, then a 404; a closed port fails.
    #[test]
    fn scrapes_over_http_1_0() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = std::thread::spawn(move || {
            let mut requests = Vec::new();
            for status in ["200 OK", "404 Not Found"] {
                let (mut s, _) = listener.accept().expect("accept");
                let mut buf = [0u8; 1024];
                let n = s.read(&mut buf).expect("read");
                requests.push(String::from_utf8_lossy(&buf[..n]).into_owned());
                let body = "lode_requests_total{kind=\"query\"} 7\n# EOF\n";
                let _ = write!(
                    s,
                    "HTTP/1.0 {status}\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
            }
            requests
        });
        let body = scrape(addr, Duration::from_secs(2)).expect("200");
        assert_eq!(requests_total(&body), Some(7));
        assert!(scrape(addr, Duration::from_secs(2)).is_err(), "404");
        let requests = server.join().expect("server");
        assert!(
            requests[0].starts_with("GET /metrics HTTP/1.0\r\n"),
            "{requests:?}"
        );
        let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
        let gone = closed.local_addr().expect("addr");
        drop(closed);
        assert!(scrape(gone, Duration::from_millis(300)).is_err());
    }

    /// The scraper scrapes at once and then once per period, and stops when asked.
    #[test]
    fn scraper_thread() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        listener.set_nonblocking(true).expect("nonblocking");
        let server = std::thread::spawn(move || {
            let mut served = 0;
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut s, _)) => {
                        let _ = s.set_nonblocking(false);
                        let mut buf = [0u8; 1024];
                        let _ = s.read(&mut buf);
                        let _ = write!(s, "HTTP/1.0 200 OK\r\n\r\nlode_requests_total 3\n");
                        served += 1;
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            served
        });
        let scraper = Scraper::start(addr, Duration::from_millis(100)).expect("start");
        std::thread::sleep(Duration::from_millis(350));
        let stats = scraper.stop();
        stop.store(true, Ordering::Relaxed);
        let served = server.join().expect("server");
        assert!((3..=5).contains(&stats.ok), "{stats:?}");
        assert_eq!(stats.failed, 0, "{stats:?}");
        assert_eq!(stats.counted, Some(3));
        assert_eq!(served, stats.ok);
    }
}
