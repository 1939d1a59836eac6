//! `lode-bench rate`: the RFC 8219 rate search (or single steps) against one
//! server, printed step by step; `--json FILE` keeps the same as data, with the
//! provenance block.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use lode_bench::provenance::Provenance;
use lode_bench::rate::record::Record;
use lode_bench::rate::{RateConfig, StepResult, Tester};
use lode_bench::stats::Summary;
use serde_json::json;

use super::{human_duration, parse_fraction, secs, QuerySource};

/// Arguments of `lode-bench rate`.
#[derive(clap::Args, Debug)]
pub(crate) struct RateArgs {
    /// The server under test.
    #[arg(long)]
    server: SocketAddr,
    #[command(flatten)]
    source: QuerySource,
    /// Seconds per step (RFC 8219: at least 60).
    #[arg(long, default_value_t = 60.0)]
    duration: f64,
    /// Milliseconds after which a reply no longer counts.
    #[arg(long, default_value_t = 250)]
    timeout: u64,
    /// Queries allowed to go unanswered: `0` (RFC 8219), `0.01%`, `0.001` (fraction).
    #[arg(long, default_value = "0")]
    loss: String,
    /// Repetitions of the binary search (RFC 8219: at least 20).
    #[arg(long, default_value_t = 20)]
    repeat: usize,
    /// Lower bound of the search (queries per second; 0 = none).
    #[arg(long, default_value_t = 0)]
    low: u64,
    /// Upper bound of the search (queries per second).
    #[arg(long, default_value_t = 200_000)]
    high: u64,
    /// Stop the search when the interval is this narrow (default: high / 1000).
    #[arg(long)]
    resolution: Option<u64>,
    /// Run single steps at this rate instead of searching.
    #[arg(long)]
    rate: Option<u64>,
    /// With --rate: an overload step (a rate above the server's zero-loss rate). Loss
    /// and the tester falling behind do not fail it; it reports what was answered
    /// (valid replies within the timeout, per second) and what was lost.
    #[arg(long, requires = "rate")]
    overload: bool,
    /// Sender/receiver thread pairs.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Source ports (sockets) per thread.
    #[arg(long, default_value_t = 4000)]
    ports: usize,
    /// Queries per sendmmsg.
    #[arg(long, default_value_t = 16)]
    batch: usize,
    /// A step whose senders fall further behind than this is invalid (`1%`).
    #[arg(long, default_value = "1%")]
    max_behind: String,
    /// Also write every step, each search's result and the summary as JSON to FILE,
    /// with the provenance (command line, Lode's commit, machine, kernel, sysctls).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

pub(super) fn print_step(r: &StepResult, ok: bool, tester_ok: bool) -> anyhow::Result<()> {
    out!(
        "  rate {:>9}  sent {:>10}  valid {:>10}  lost {:>8}  late {:>6}  wrong {:>6}  \
         unmatched {:>6}  achieved {:>10.0} q/s  answered {:>10.0} q/s  behind {:>5.2}%  \
         latency p50 {} p99 {} p99.9 {} max {} µs  {}{}",
        r.rate,
        r.sent,
        r.valid,
        r.lost(),
        r.late,
        r.wrong,
        r.unmatched,
        r.achieved_rate,
        r.answered_qps(),
        r.behind * 100.0,
        r.latency_us[0],
        r.latency_us[1],
        r.latency_p999_us,
        r.latency_us[2],
        if ok { "PASS" } else { "FAIL" },
        if tester_ok {
            ""
        } else {
            "  (INVALID: tester behind schedule or send errors)"
        }
    );
    Ok(())
}

/// One overload step: what was offered, answered and lost, never judged.
fn print_overload(r: &StepResult, max_behind: f64) -> anyhow::Result<()> {
    let pct = |n: u64| {
        if r.sent == 0 {
            0.0
        } else {
            n as f64 * 100.0 / r.sent as f64
        }
    };
    out!(
        "  overload {:>9} q/s  offered {:>10.0} q/s  answered {:>10.0} q/s ({:.1} % of sent)  \
         sent {:>10}  valid {:>10}  lost {:>9} ({:.1} %: unanswered {}, late {}, wrong {})  \
         latency p50 {} p99 {} p99.9 {} µs{}",
        r.rate,
        r.achieved_rate,
        r.answered_qps(),
        pct(r.valid),
        r.sent,
        r.valid,
        r.lost(),
        pct(r.lost()),
        r.unanswered(),
        r.late,
        r.wrong,
        r.latency_us[0],
        r.latency_us[1],
        r.latency_p999_us,
        if r.tester_ok(max_behind) {
            String::new()
        } else {
            format!(
                "  (tester {:.1} % behind or send errors {}: offered less than asked)",
                r.behind * 100.0,
                r.send_errors
            )
        }
    );
    Ok(())
}

pub(super) fn run(a: RateArgs) -> anyhow::Result<ExitCode> {
    let duration = secs(a.duration, "--duration")?;
    let top = a.rate.unwrap_or(a.high).max(1);
    let needed = (top as f64 * duration.as_secs_f64()).ceil() as usize + 1;
    let queries = a.source.load(needed)?;
    if queries.len() < needed {
        out!(
            "note: {} distinct queries for up to {needed} per step: queries repeat \
             (RFC 8219 wants all different; generate a larger set)",
            queries.len()
        );
    }
    let mut cfg = RateConfig::new(a.server);
    cfg.threads = a.threads;
    cfg.ports = a.ports;
    cfg.duration = duration;
    cfg.timeout = Duration::from_millis(a.timeout);
    cfg.expect = a.source.expect()?;
    cfg.loss = parse_fraction(&a.loss)?;
    cfg.batch = a.batch;
    cfg.max_behind = parse_fraction(&a.max_behind)?;
    let (loss, max_behind) = (cfg.loss, cfg.max_behind);
    out!(
        "server {}  {} queries  step {:.1} s  timeout {} ms  loss {}%  {} thread(s) × {} ports",
        a.server,
        queries.len(),
        duration.as_secs_f64(),
        a.timeout,
        loss * 100.0,
        cfg.threads,
        cfg.ports
    );
    let mut rec = Record {
        settings: json!({
            "server": a.server.to_string(),
            "queries": a.source.queries.as_ref().map(|p| p.display().to_string()),
            "dns64perf": a.source.dns64perf,
            "expect": a.source.expect,
            "edns": a.source.edns,
            "distinct_queries": queries.len(),
            "duration_secs": duration.as_secs_f64(),
            "timeout_ms": a.timeout,
            "loss": loss,
            "repeat": a.repeat,
            "low": a.low,
            "high": a.high,
            "resolution": a.resolution,
            "rate": a.rate,
            "overload": a.overload,
            "threads": cfg.threads,
            "ports": cfg.ports,
            "batch": cfg.batch,
            "max_behind": max_behind,
        }),
        provenance: a
            .json
            .as_ref()
            .map(|_| Provenance::collect(None, &["/usr/bin/dnsperf"])),
        ..Record::default()
    };
    let mut tester = Tester::new(cfg, Arc::new(queries))?;
    let nothing = |server: std::net::SocketAddr| {
        anyhow::anyhow!(
            "nothing answered at {server}: no reply (valid, late or wrong) to any query — \
             is a DNS server listening there?"
        )
    };
    if let Some(r) = a.rate {
        let mut all_ok = true;
        let mut replies = 0;
        for _ in 0..a.repeat.max(1) {
            let s = tester.step(r)?;
            let ok = s.passed(loss, max_behind);
            all_ok &= ok;
            rec.step(None, &s, ok, s.tester_ok(max_behind));
            replies += s.valid + s.late + s.wrong;
            if a.overload {
                print_overload(&s, max_behind)?;
            } else {
                print_step(&s, ok, s.tester_ok(max_behind))?;
            }
        }
        if replies == 0 {
            return Err(nothing(a.server));
        }
        write_json(&a.json, &rec, None)?;
        if a.overload {
            return Ok(ExitCode::SUCCESS);
        }
        return Ok(if all_ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let resolution = a.resolution.unwrap_or((a.high / 1000).max(1));
    let steps = lode_bench::search::max_trials(a.low, a.high, resolution);
    let per_step = duration.as_secs_f64() + a.timeout as f64 / 1000.0;
    let total = steps as f64 * per_step * a.repeat.max(1) as f64;
    out!(
        "expected run time: at most {} ({} searches × up to {steps} steps of {:.1} s); \
         --repeat, --duration and --resolution shorten it",
        human_duration(total),
        a.repeat.max(1),
        per_step
    );
    let mut results = Vec::new();
    for rep in 1..=a.repeat.max(1) {
        out!("search {rep}/{}: [{}, {}]", a.repeat.max(1), a.low, a.high);
        let mut replies = 0;
        let res = tester.search(a.low, a.high, resolution, |r, ok| {
            replies += r.valid + r.late + r.wrong;
            rec.step(Some(rep), r, ok, r.tester_ok(max_behind));
            // Output errors (a closed pipe) must not stop a measurement half-way.
            let _ = print_step(r, ok, r.tester_ok(max_behind));
        })?;
        if replies == 0 {
            return Err(nothing(a.server));
        }
        let limited = res
            .trials
            .iter()
            .any(|t| !t.passed && !t.detail.tester_ok(max_behind));
        out!(
            "result {rep}: {} q/s{}{}",
            res.rate,
            if res.hit_ceiling {
                "  (the upper bound passed: raise --high)"
            } else {
                ""
            },
            if limited {
                "  (some steps were tester-limited)"
            } else {
                ""
            }
        );
        rec.search(res.rate, res.hit_ceiling, limited);
        results.push(res.rate as f64);
    }
    let summary = Summary::of(&results);
    write_json(&a.json, &rec, summary.as_ref())?;
    if let Some(s) = summary {
        out!(
            "RFC 8219 result over {} searches: median {:.0} q/s, 1st percentile {:.0}, \
             99th percentile {:.0}, dispersion {:.2}%",
            s.n,
            s.median,
            s.p1,
            s.p99,
            s.dispersion * 100.0
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the record to `path`, if given (the sysctls read again: during the run).
fn write_json(
    path: &Option<PathBuf>,
    rec: &Record,
    summary: Option<&Summary>,
) -> anyhow::Result<()> {
    let Some(path) = path else {
        return Ok(());
    };
    let mut rec = rec.clone();
    if let Some(p) = rec.provenance.as_mut() {
        p.sysctls_during = lode_bench::provenance::read_sysctls(std::path::Path::new("/proc/sys"));
    }
    let text = serde_json::to_string_pretty(&rec.to_json(summary))?;
    std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    out!("results: {}", path.display());
    Ok(())
}
