//! `lode-bench handshakes` and `lode-bench doq`: DNS over TLS and QUIC from
//! the client's side (crates/bench/src/encrypted/), with the server's CPU
//! time per handshake or answer when its PID is given; `lode-bench
//! encrypted`: Lode, NSD and BIND side by side over them (encrypted/peers.rs).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use lode_bench::encrypted::Secure;
use lode_bench::query::QuerySet;

use super::{secs, Folders};

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
    out!("{}", t.line(what, t.handshakes, cpu));
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
        let rss = a.pid.map(|_| (before, peak));
        out!("{}", lode_bench::encrypted::idle_line("DoQ", held, rss));
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
    out!("{}", t.line("DoQ", t.answers, cpu));
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `lode-bench encrypted`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "One ENUM zone of --records numbers (`lode-bench gen enum --zones 1`) and \
one self-signed P-256 certificate (openssl) are served by Lode, NSD and BIND 9 in turn, each \
alone on 127.0.0.1 (plain --port, TLS --port + 1; Lode's DoQ --port + 2) with one worker \
pinned to --server-cpu, 10,000 TCP clients allowed, stopped by PID. This command pins itself \
and every client to --tester-cpu.

Per server: DoT and plain-TCP answers/s over --clients persistent connections (`dnsperf -m \
dot|tcp -c CLIENTS -q 500 -l DURATION` on the queries for existing names) and their ratio; new \
DoT handshakes/s with one query each (`lode-bench handshakes`: 16 workers, full handshakes, \
no resumption) and the server's CPU per handshake (utime + stime of its processes, NSD's \
forked ones included). Lode also: DoQ handshakes/s (`handshakes --quic`); DoQ answers/s over \
--clients connections with 8 streams each (`lode-bench doq`); memory per idle DoQ connection \
(--idle connections held by keep-alives after one query each, VmRSS before and with them); \
the zone's AXFR over plain TCP and over TLS (TSIG-signed, 3 rounds, medians of records/s and \
of records per server CPU-second); a BIND secondary (on --tester-cpu, port --port + 3) taking \
the zone from Lode over TLS, timed from its start until it answers the zone's SOA (at most \
600 s); memory per idle DoT connection (--idle full handshakes, no query, held while VmRSS is \
read) and the handshakes/s of opening them from one client; 200 `kdig +quic` runs (a \
handshake and a query each), timed. A failed Lode-only step is a note, not the end.

Prints each figure as it is measured; writes encrypted.md, encrypted.json (with the \
provenance) and dnsperf's outputs to --out. Needs dnsperf, nsd, named, kdig, openssl. \
Another build of Lode: `lode-bench --lode PATH encrypted …`. Example: lode-bench encrypted \
--records 5000000 --duration 20"
)]
pub(crate) struct EncryptedArgs {
    #[command(flatten)]
    folders: Folders,
    /// Servers, in run order: lode, nsd, bind.
    #[arg(long, value_delimiter = ',', default_value = "lode,nsd,bind")]
    servers: Vec<String>,
    /// ENUM numbers in the zone.
    #[arg(long, default_value_t = 500_000)]
    records: u64,
    /// Seconds of each dnsperf, handshake and DoQ run.
    #[arg(long, default_value_t = 10)]
    duration: u64,
    /// dnsperf's persistent connections, and the DoQ rate's connections.
    #[arg(long, default_value_t = 20)]
    clients: usize,
    /// Idle DoT and DoQ connections held for the memory per connection.
    #[arg(long, default_value_t = 2000)]
    idle: usize,
    /// TSIG key `[alg:]name:base64secret` of the transfers (default: a fixed
    /// hmac-sha256 test key).
    #[arg(long)]
    tsig: Option<String>,
    /// CPU the server is pinned to.
    #[arg(long, default_value_t = 0)]
    server_cpu: usize,
    /// CPU this command, its clients and the BIND secondary are pinned to.
    #[arg(long, default_value_t = 1)]
    tester_cpu: usize,
    /// Plain port on 127.0.0.1 (TLS: the next, QUIC: the one after, the BIND
    /// secondary: the third).
    #[arg(long, default_value_t = 17100)]
    port: u16,
    /// Seconds a server may take to serve the zone.
    #[arg(long, default_value_t = 300.0)]
    load_limit: f64,
}

pub(crate) fn encrypted(a: EncryptedArgs, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    use lode_bench::encrypted::peers;
    let key = lode_tsig::Key::parse_spec(a.tsig.as_deref().unwrap_or(super::BENCH_KEY))
        .context("--tsig")?;
    let (out, work, temp) = a.folders.dirs("encrypted", false);
    let cfg = peers::EncryptedConfig {
        out,
        work: work.clone(),
        lode: lode.path()?,
        servers: super::parse_servers(&a.servers, false)?,
        records: a.records,
        duration: a.duration,
        clients: a.clients,
        idle: a.idle,
        key,
        server_cpu: a.server_cpu,
        tester_cpu: a.tester_cpu,
        port: a.port,
        load_limit: secs(a.load_limit, "--load-limit")?,
    };
    let r = super::scratch_dropped(temp, &work, peers::run(&cfg, &mut |l| println!("{l}")))?;
    out!("report: {}", r.report.display());
    Ok(ExitCode::SUCCESS)
}
