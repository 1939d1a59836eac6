//! `lode-bench big-sets` (crates/bench/src/server_cost/big.rs): its arguments.

use std::process::ExitCode;

use anyhow::Context;
use lode_bench::server_cost::big;

use super::{scratch_dropped, secs, Folders};

/// Arguments of `lode-bench big-sets`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Target 5: `lode-bench gen enum --records N --zones 100 --queries 1000000` \
(timed; its folder's size is the zone text), served by Lode (lode-bench's --lode; one worker \
pinned to --server-cpu, no journal) on 127.0.0.1:--port: seconds from the start until the last \
name of queries-existing.txt (one of the last zone) answers its NAPTR query NOERROR (asked \
every 50 ms; every zone is loaded then), VmRSS and VmHWM then, resident bytes per record (the \
binary included); then `lode-bench rate` pinned to --tester-cpu searches the zero-loss rate \
(RFC 8219, --step s steps, --repeat searches up to --high q/s at --resolution, the median) for \
existing names and for NXDOMAIN. The set is removed before the next.

Target 6: the --parse-records set (4 zones, prefix 131, Shen & Schulzrinne's 20 M set): `lode \
check --quiet --syntax-only` (parse only) and `lode check --quiet` (parse and build) on all its \
zone files with every CPU, --runs times each: MiB of zone text per second; `lode snapshot` of \
the set (timed, its size); `lode serve --snapshot-dir` started --runs times on --port + 1 and \
timed to the first answer in the last zone, as above; once more from the text on --port + 2.

Every step has a time limit (a server's start --load-limit, a command an hour); servers are \
stopped by PID. Needs ~10 GB of disk under --work and ~4 GB of memory at 100 M records. Prints \
a line as each step ends; writes big-sets.md, big-sets.json (with the provenance) and the rate \
searches' outputs to --out. Another build of Lode: `lode-bench --lode PATH big-sets …`. \
Example: lode-bench big-sets --records 10000000 --parse-records 2000000"
)]
pub(crate) struct BigSetsArgs {
    #[command(flatten)]
    folders: Folders,
    /// ENUM numbers of the large set (target 5), in 100 zones.
    #[arg(long, default_value_t = 100_000_000)]
    records: u64,
    /// ENUM numbers of the parse and snapshot set (target 6), in 4 zones.
    #[arg(long, default_value_t = 20_000_000)]
    parse_records: u64,
    /// Runs of each `lode check` and of the start from snapshots.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Seconds per step of the rate searches.
    #[arg(long, default_value_t = 5.0)]
    step: f64,
    /// Rate searches per query kind (the median is reported).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Upper bound of the rate searches (q/s).
    #[arg(long, default_value_t = 300_000)]
    high: u64,
    /// Resolution of the rate searches (q/s).
    #[arg(long, default_value_t = 4000)]
    resolution: u64,
    /// CPU the server is pinned to.
    #[arg(long, default_value_t = 0)]
    server_cpu: usize,
    /// CPU the rate tester is pinned to.
    #[arg(long, default_value_t = 1)]
    tester_cpu: usize,
    /// Port on 127.0.0.1 of the large set's server (the snapshot starts: the next; the
    /// start from text: the one after).
    #[arg(long, default_value_t = 15990)]
    port: u16,
    /// Seconds a server may take to answer in its last zone.
    #[arg(long, default_value_t = 900.0)]
    load_limit: f64,
}

pub(super) fn run(a: BigSetsArgs, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    let (out, work, temp) = a.folders.dirs("big-sets", false);
    secs(a.step, "--step")?;
    let cfg = big::BigConfig {
        out,
        work: work.clone(),
        lode: lode.path()?,
        bench: std::env::current_exe().context("finding the lode-bench binary")?,
        records: a.records,
        parse_records: a.parse_records,
        runs: a.runs,
        step: a.step,
        repeat: a.repeat,
        high: a.high,
        resolution: a.resolution,
        server_cpu: a.server_cpu,
        tester_cpu: a.tester_cpu,
        port: a.port,
        load_limit: secs(a.load_limit, "--load-limit")?,
    };
    let r = scratch_dropped(temp, &work, big::run(&cfg, &mut |l| println!("{l}")))?;
    out!("report: {}", r.report.display());
    Ok(ExitCode::SUCCESS)
}
