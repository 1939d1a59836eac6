//! `lode-bench compare-updates`: updates side by side (crates/bench/src/compare/updates.rs),
//! its arguments.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;

use super::{parse_servers, print_report, scratch_dropped, secs, Folders, BENCH_KEY};

/// Arguments of `lode-bench compare-updates`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Servers are started one at a time on 127.0.0.1:--port, pinned to --server-cpu, each in a fresh folder under --work holding its journal (the disk the fsync probe measures); the tester runs on --tester-cpu. The set is `lode-bench gen enum` with 10 zones and prefix 1212; target 1 adds numbers from 500000, the bulk load from 800000 in every zone. --quick: 100000 records, 1 run, 5 s closed loop, 1 s steps, 100000 bulk numbers."
)]
pub(crate) struct CompareUpdatesArgs {
    #[command(flatten)]
    folders: Folders,
    /// A small comparison (~2 min per server).
    #[arg(long)]
    quick: bool,
    /// Servers, in run order (lode, knot, bind).
    #[arg(long, value_delimiter = ',', default_value = "lode,knot,bind")]
    servers: Vec<String>,
    /// ENUM records in 10 zones (default 5000000; --quick 100000).
    #[arg(long)]
    records: Option<u64>,
    /// Rounds (default 3; --quick 1).
    #[arg(long)]
    runs: Option<usize>,
    /// TSIG key `[alg:]name:base64secret` (default: a fixed hmac-sha256 test key).
    #[arg(long)]
    tsig: Option<String>,
    /// Closed-loop clients of target 1.
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Seconds of the closed-loop run (default 20; --quick 5; 0: none).
    #[arg(long)]
    durable_secs: Option<f64>,
    /// Seconds of the fdatasync probe.
    #[arg(long, default_value_t = 3.0)]
    fsync_secs: f64,
    /// Update rates of target 3 (0: static).
    #[arg(long, value_delimiter = ',', default_value = "0,10,100,1000,5000")]
    update_rates: Vec<f64>,
    /// Seconds per query-rate step (default 2; --quick 1).
    #[arg(long)]
    step: Option<f64>,
    /// Upper bound of the searches (q/s).
    #[arg(long, default_value_t = 200_000)]
    high: u64,
    /// Resolution of the searches (default high/50; --quick high/16).
    #[arg(long)]
    resolution: Option<u64>,
    /// Milliseconds after which a query reply no longer counts.
    #[arg(long, default_value_t = 250)]
    timeout: u64,
    /// New numbers of the bulk load (default 1000000; --quick 100000; 0: none).
    #[arg(long)]
    bulk: Option<u64>,
    /// Records per bulk message (`lode update -b`).
    #[arg(long, default_value_t = 500)]
    bulk_batch: usize,
    /// Messages in flight per bulk connection (`lode update -w`).
    #[arg(long, default_value_t = 16)]
    bulk_window: usize,
    /// Bulk connections (`lode update -c`).
    #[arg(long, default_value_t = 1)]
    bulk_connections: usize,
    /// Longest bulk load, seconds.
    #[arg(long, default_value_t = 600.0)]
    bulk_limit: f64,
    /// Query rate of the latency steps before and during the bulk load (0: none).
    #[arg(long, default_value_t = 20_000)]
    stall_rate: u64,
    /// CPU the server under test is pinned to.
    #[arg(long, default_value_t = 0)]
    server_cpu: usize,
    /// CPU the tester is pinned to.
    #[arg(long, default_value_t = 1)]
    tester_cpu: usize,
    /// Port of the server under test on 127.0.0.1.
    #[arg(long, default_value_t = 15700)]
    port: u16,
    /// Seconds to wait for a server's first answer.
    #[arg(long, default_value_t = 600.0)]
    load_limit: f64,
    /// Do not install missing packages.
    #[arg(long)]
    no_install: bool,
    #[command(flatten)]
    buffers: super::buffers::SocketBufferArg,
}

pub(super) fn run(a: CompareUpdatesArgs, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    use lode_bench::compare::updates::{self, UpdCompareConfig};
    let q = a.quick;
    let servers = parse_servers(&a.servers, false)?;
    let key =
        lode_tsig::Key::parse_spec(a.tsig.as_deref().unwrap_or(BENCH_KEY)).context("--tsig")?;
    let durable = a.durable_secs.unwrap_or(if q { 5.0 } else { 20.0 });
    let durable = if durable == 0.0 {
        Duration::ZERO
    } else {
        secs(durable, "--durable-secs")?
    };
    let (out, work, temp) = a.folders.dirs("updates", q);
    let cfg = UpdCompareConfig {
        out: out.clone(),
        work: work.clone(),
        lode: lode.path()?,
        servers,
        records: a.records.unwrap_or(if q { 100_000 } else { 5_000_000 }),
        runs: a.runs.unwrap_or(if q { 1 } else { 3 }),
        key,
        clients: a.clients,
        durable,
        fsync: secs(a.fsync_secs, "--fsync-secs")?,
        update_rates: a.update_rates.clone(),
        step: secs(a.step.unwrap_or(if q { 1.0 } else { 2.0 }), "--step")?,
        high: a.high,
        resolution: a
            .resolution
            .unwrap_or(a.high / if q { 16 } else { 50 })
            .max(1),
        timeout: Duration::from_millis(a.timeout.max(1)),
        bulk: a.bulk.unwrap_or(if q { 100_000 } else { 1_000_000 }),
        bulk_shape: (a.bulk_batch, a.bulk_window, a.bulk_connections),
        stall_rate: a.stall_rate,
        bulk_limit: secs(a.bulk_limit, "--bulk-limit")?,
        server_cpu: a.server_cpu,
        tester_cpu: a.tester_cpu,
        port: a.port,
        load_limit: secs(a.load_limit, "--load-limit")?,
        install: !a.no_install,
        socket_buffer: a.buffers.size(),
    };
    let result = scratch_dropped(temp, &work, updates::run(&cfg))?;
    print_report(
        &out.join("updates.md"),
        result.runs.len(),
        result.wall_secs,
        &result.notes,
    )?;
    Ok(ExitCode::SUCCESS)
}
