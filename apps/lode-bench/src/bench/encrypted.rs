//! `lode-bench handshakes` and `lode-bench doq`: DNS over TLS and QUIC from
//! the client's side (crates/bench/src/encrypted.rs), with the server's CPU
//! time per handshake or answer when its PID is given.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use lode_bench::encrypted::{Secure, Tally};
use lode_bench::query::QuerySet;

use super::secs;

/// Arguments of `lode-bench handshakes`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Each worker opens a new connection, makes a full handshake (session resumption off: what a first contact costs the server), sends one query, checks its answer and closes (TCP: by RST, so the client's ports do not pile up in TIME_WAIT). The server is not authenticated. Pin the server and this client to different CPUs; with --pid the server's CPU time is read from /proc (10 ms ticks) and the CPU per handshake printed, the figure a shared machine moves least. Example: lode-bench handshakes --server 127.0.0.1:853 --queries /tmp/set/queries-existing.txt --duration 10 --pid $(pgrep -x lode)"
)]
pub(crate) struct HandshakesArgs {
    /// The server, ADDR:PORT (its DoT or DoQ port).
    #[arg(long)]
    server: SocketAddr,
    /// DNS over QUIC instead of TLS.
    #[arg(long)]
    quic: bool,
    /// A query file (`name TYPE` per line; dnsperf's format).
    #[arg(long)]
    queries: PathBuf,
    /// Connections made at once.
    #[arg(long, default_value_t = 16)]
    workers: usize,
    /// Seconds to run.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// The server's PID, to count its CPU time.
    #[arg(long)]
    pid: Option<u32>,
}

/// Arguments of `lode-bench doq`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "CONNECTIONS DoQ connections are opened first, then each keeps INFLIGHT streams going: a stream per query (ID 0, RFC 9250 §4.2), the answer checked against its question. Example: lode-bench doq --server 127.0.0.1:853 --queries /tmp/set/queries-existing.txt --connections 20 --inflight 8 --pid $(pgrep -x lode)"
)]
pub(crate) struct DoqArgs {
    /// The server's DoQ address, ADDR:PORT.
    #[arg(long)]
    server: SocketAddr,
    /// A query file (`name TYPE` per line; dnsperf's format).
    #[arg(long)]
    queries: PathBuf,
    /// Connections.
    #[arg(long, default_value_t = 20)]
    connections: usize,
    /// Streams in flight per connection.
    #[arg(long, default_value_t = 8)]
    inflight: usize,
    /// Seconds to run.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// The server's PID, to count its CPU time (and with --idle its memory).
    #[arg(long)]
    pid: Option<u32>,
    /// Memory per idle connection instead: CONNECTIONS connections, each after
    /// one query held idle (QUIC keep-alives only); with --pid the server's
    /// resident memory before and with them open.
    #[arg(long)]
    idle: bool,
}

/// A process's resident memory, KiB (0 when it cannot be read).
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The server's CPU seconds since `before` (ticks), when a PID was given.
fn cpu_since(pid: Option<u32>, before: Option<u64>) -> Option<f64> {
    let (p, b) = (pid?, before?);
    let ticks = lode_bench::compare::sys::pid_cpu(p).saturating_sub(b);
    Some(ticks as f64 / lode_bench::compare::sys::TICKS)
}

/// The query file, read whole (EDNS on, as resolvers send).
fn queries(path: &Path) -> anyhow::Result<QuerySet> {
    QuerySet::read_file(path, usize::MAX, true)
        .with_context(|| format!("--queries {}", path.display()))
}

/// One summary line: counts, rates and CPU per `per` (handshake or answer).
fn line(what: &str, t: &Tally, per: u64, cpu: Option<f64>) -> String {
    let mut s = format!(
        "{what}: {} handshakes, {} answers, {} failures in {:.2} s: {:.0} handshakes/s, {:.0} answers/s",
        t.handshakes,
        t.answers,
        t.failures,
        t.secs,
        t.handshakes as f64 / t.secs,
        t.answers as f64 / t.secs
    );
    if let Some(c) = cpu.filter(|_| per > 0) {
        s.push_str(&format!(
            ", server CPU {c:.2} s, {:.1} µs each",
            c * 1e6 / per as f64
        ));
    }
    s
}

pub(crate) fn handshakes(a: HandshakesArgs) -> anyhow::Result<ExitCode> {
    let set = queries(&a.queries)?;
    let how = if a.quic { Secure::Quic } else { Secure::Tls };
    let cpu0 = a.pid.map(lode_bench::compare::sys::pid_cpu);
    let t = lode_bench::encrypted::handshakes(
        a.server,
        how,
        &set,
        a.workers,
        secs(a.duration, "--duration")?,
    )
    .map_err(anyhow::Error::msg)?;
    let cpu = cpu_since(a.pid, cpu0);
    let what = if a.quic { "DoQ" } else { "DoT" };
    out!("{}", line(what, &t, t.handshakes, cpu));
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn doq(a: DoqArgs) -> anyhow::Result<ExitCode> {
    let set = queries(&a.queries)?;
    if a.idle {
        let before = a.pid.map_or(0, rss_kib);
        let mut peak = 0;
        let held = lode_bench::encrypted::doq_hold(a.server, &set, a.connections, |_| {
            peak = a.pid.map_or(0, rss_kib);
        })
        .map_err(anyhow::Error::msg)?;
        let mut text = format!("DoQ: {held} idle connections held");
        if a.pid.is_some() && held > 0 {
            text.push_str(&format!(
                ": server RSS {before} -> {peak} KiB, {} bytes each",
                peak.saturating_sub(before) * 1024 / held as u64
            ));
        }
        out!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let cpu0 = a.pid.map(lode_bench::compare::sys::pid_cpu);
    let t = lode_bench::encrypted::doq_rate(
        a.server,
        &set,
        a.connections,
        a.inflight,
        secs(a.duration, "--duration")?,
    )
    .map_err(anyhow::Error::msg)?;
    let cpu = cpu_since(a.pid, cpu0);
    out!("{}", line("DoQ", &t, t.answers, cpu));
    Ok(ExitCode::SUCCESS)
}
