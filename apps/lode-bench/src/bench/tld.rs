//! `lode-bench tld` (crates/bench/src/server_cost/tld.rs): its arguments.

use std::process::ExitCode;

use lode_bench::server_cost::tld;

use super::{parse_servers, scratch_dropped, secs, Folders};

/// Arguments of `lode-bench tld`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "The zone is `lode-bench gen tld --tld com --delegations N` (COM-shaped \
delegations, glue, DS); its first 300,000 referral and NXDOMAIN queries are what dnsperf \
sends. Knot's kzonesign signs a copy (ECDSA P-256, NSEC3 opt-out, no salt, 0 iterations, keys \
made on the spot) and every server serves that file as it is. In each round each server runs \
alone on 127.0.0.1:--port with one UDP worker pinned to --server-cpu (Knot: one TCP and one \
background worker; no journal), stopped by PID after its runs: on the unsigned zone dnsperf \
sends referral queries (DO=0), on the signed zone referral queries, then NXDOMAIN queries, \
with DO=1 (`dnsperf -D`), each at --rate q/s for --duration s from --tester-cpu. The rate is \
below every server's capacity: this is CPU per answer, not a saturation search.

Measured: the CPU time of the server's threads (/proc/PID/task/*/schedstat, exact; NSD's \
forked servers included) over the answers dnsperf got, and the server CPU's busy time (the \
wall time less its idle and iowait time in /proc/stat: softirq, the kernel's receive path, \
included; ticks would miss bursts shorter than one) over the same answers, exact only on an \
otherwise idle machine; medians over the rounds, queries lost summed. At each start: seconds \
until the first referral query is answered NOERROR (asked every 0.1 s), then VmRSS and VmHWM \
summed over its processes (the last round's are printed); the runs start once the server is \
quiet (its processes under 5 % of a CPU for 3 s in a row, at most 600 s): what it does on its \
own after its first answer is not counted per answer. Prints both tables; writes tld.md, \
tld.json (with the provenance) and dnsperf's outputs (dnsperf/) to --out. Needs dnsperf, \
knotd, kzonesign (knot-dnssecutils), nsd and named (for those run). Another build of Lode: `lode-bench --lode PATH \
tld …`. Example: lode-bench tld --delegations 100000 --rounds 1"
)]
pub(crate) struct TldArgs {
    #[command(flatten)]
    folders: Folders,
    /// Delegations in the zone.
    #[arg(long, default_value_t = 1_000_000)]
    delegations: u64,
    /// Queries per second dnsperf sends (below every server's capacity).
    #[arg(long, default_value_t = 20_000)]
    rate: u64,
    /// Seconds of each dnsperf run.
    #[arg(long, default_value_t = 10)]
    duration: u64,
    /// Rounds over the servers (the figures are their medians).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Servers, in the order of each round: lode, knot, nsd, bind.
    #[arg(long, value_delimiter = ',', default_value = "lode,knot,nsd")]
    servers: Vec<String>,
    /// CPU the server is pinned to.
    #[arg(long, default_value_t = 0)]
    server_cpu: usize,
    /// CPU dnsperf is pinned to.
    #[arg(long, default_value_t = 1)]
    tester_cpu: usize,
    /// Port of the server on 127.0.0.1.
    #[arg(long, default_value_t = 15453)]
    port: u16,
    /// Seconds a server may take to answer its first query.
    #[arg(long, default_value_t = 3600.0)]
    load_limit: f64,
    /// Take the data set and its signed copy that a run with the same --delegations and
    /// --work left there (gen/, sign/, tld-set.json): no generation and no signing;
    /// kzonesign's time is that run's.
    #[arg(long, requires = "work")]
    reuse: bool,
}

pub(super) fn run(a: TldArgs, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    let (out, work, temp) = a.folders.dirs("tld", false);
    let cfg = tld::TldConfig {
        out,
        work: work.clone(),
        lode: lode.path()?,
        servers: parse_servers(&a.servers, false)?,
        delegations: a.delegations,
        rate: a.rate,
        duration: a.duration,
        rounds: a.rounds,
        server_cpu: a.server_cpu,
        tester_cpu: a.tester_cpu,
        port: a.port,
        load_limit: secs(a.load_limit, "--load-limit")?,
        reuse: a.reuse,
    };
    let r = scratch_dropped(temp, &work, tld::run(&cfg))?;
    super::server_cost::print(&r.lines(cfg.server_cpu), &r.report)?;
    Ok(ExitCode::SUCCESS)
}
