//! `lode-bench com` (crates/bench/src/server_cost/com.rs): its arguments.

use std::process::ExitCode;

use anyhow::Context;
use lode_bench::server_cost::com;

use super::{scratch_dropped, secs, Folders};

/// Arguments of `lode-bench com`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Today's .com on one machine, step by step (--steps: a subset; without gen the \
set already in --work is used):

  gen       `lode-bench gen tld --delegations N --queries 300000` into --work/gen (the disk is \
checked first: 3 × 100 bytes per delegation + 1 GiB, or the run stops with what it lacks);
  load      `lode serve` on the zone text, one UDP worker pinned to --server-cpu (as `lode-bench \
tld`): seconds to the first referral answered NOERROR (asked every 50 ms), VmHWM, VmRSS, \
resident bytes per delegation;
  snapshot  `lode snapshot`, then `lode serve --snapshot-dir` --snapshot-runs times: seconds to \
the first referral, resident;
  sign      `lode serve` signing the zone (policy: ECDSA P-256, nsec3, nsec3-opt-out, \
--sign-threads signing threads, unpinned): seconds to its \"signed whole\" line, signatures \
counted by AXFR over the line's seconds against `openssl speed -multi T ecdsap256`, VmHWM, \
VmRSS; the server stays up as the primary (keyed updates, transfers, NOTIFY);
  update    a Lode secondary on --port + 2 takes the zone (AXFR): seconds until it serves the \
primary's serial; then `lode update -c 1 -r R updates-medium.txt` (R from the stream's header: \
3 % of the zone per day) for --update-secs s (--update-rate: another pace); the serials of both at the end (the lag), the \
seconds until the secondary caught up (30 s at most), both servers' memory;
  query     the primary pinned to --server-cpu (taskset -a -p), once its threads have used under 5 % of a CPU for 10 s \
(the compaction that follows an update stream done; waited --load-limit at most): dnsperf from --tester-cpu at \
--rate q/s for --duration s, referrals then DO=1 referrals: µs of the server's threads' CPU \
(schedstat) per answer.

A step that fails (a server killed for lack of memory, a time limit) is reported with the \
memory last seen, and the steps that need its server are skipped; the exit status is 1 then. \
Prints the step table and the goals (resident ≤ 12 GiB, snapshot start ≤ 30 s, signing ≥ 80 % \
of the crypto ceiling, peak ÷ resident < 2 in every step) met or missed; writes com.md, \
com.json (with the provenance) and dnsperf's outputs to --out. Needs dnsperf, openssl, \
taskset, timeout. Another build of Lode: `lode-bench --lode PATH com …`. Example: lode-bench \
com --delegations 200000 --update-secs 60"
)]
pub(crate) struct ComArgs {
    #[command(flatten)]
    folders: Folders,
    /// Delegations in the zone.
    #[arg(long, default_value_t = 160_000_000)]
    delegations: u64,
    /// Steps run: gen, load, snapshot, sign, update, query.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "gen,load,snapshot,sign,update,query"
    )]
    steps: Vec<String>,
    /// Starts from the snapshot (the median is the figure).
    #[arg(long, default_value_t = 3)]
    snapshot_runs: usize,
    /// CPU the serving server is pinned to.
    #[arg(long, default_value_t = 0)]
    server_cpu: usize,
    /// CPU dnsperf is pinned to.
    #[arg(long, default_value_t = 1)]
    tester_cpu: usize,
    /// Signing threads (and openssl's processes for the ceiling; default: every CPU).
    #[arg(long)]
    sign_threads: Option<usize>,
    /// First port on 127.0.0.1 (the signed primary: the next; its secondary: the one after).
    #[arg(long, default_value_t = 15470)]
    port: u16,
    /// Seconds the generation may take.
    #[arg(long, default_value_t = 7200.0)]
    gen_limit: f64,
    /// Seconds a start may take to its first answer (and `lode snapshot` to write).
    #[arg(long, default_value_t = 3600.0)]
    load_limit: f64,
    /// Seconds the signing may take (start included; the AXFR count too).
    #[arg(long, default_value_t = 14400.0)]
    sign_limit: f64,
    /// Seconds the secondary may take to serve the zone first.
    #[arg(long, default_value_t = 3600.0)]
    xfr_limit: f64,
    /// Seconds of the update stream.
    #[arg(long, default_value_t = 600)]
    update_secs: u64,
    /// Records/s of the update stream instead of its header's pace (`lode update` keeps one
    /// TCP connection: a pace slower than one message per server idle timeout, 10 s, ends it).
    #[arg(long)]
    update_rate: Option<f64>,
    /// Queries per second dnsperf sends.
    #[arg(long, default_value_t = 20_000)]
    rate: u64,
    /// Seconds of each dnsperf run.
    #[arg(long, default_value_t = 10)]
    duration: u64,
}

pub(super) fn run(a: ComArgs, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    let (out, work, temp) = a.folders.dirs("com", false);
    let mut steps = a
        .steps
        .iter()
        .map(|s| com::Step::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    steps.sort();
    steps.dedup();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cfg = com::ComConfig {
        out,
        work: work.clone(),
        lode: lode.path()?,
        bench: std::env::current_exe().context("finding the lode-bench binary")?,
        delegations: a.delegations,
        steps,
        snapshot_runs: a.snapshot_runs,
        server_cpu: a.server_cpu,
        tester_cpu: a.tester_cpu,
        sign_threads: a.sign_threads.unwrap_or(cpus).max(1),
        port: a.port,
        gen_limit: secs(a.gen_limit, "--gen-limit")?,
        load_limit: secs(a.load_limit, "--load-limit")?,
        sign_limit: secs(a.sign_limit, "--sign-limit")?,
        xfr_limit: secs(a.xfr_limit, "--xfr-limit")?,
        update_secs: a.update_secs.max(1),
        update_rate: a.update_rate.filter(|r| *r > 0.0),
        rate: a.rate,
        duration: a.duration,
    };
    let r = scratch_dropped(temp, &work, com::run(&cfg))?;
    super::server_cost::print(&r.lines(cfg.delegations), &r.report)?;
    let failed: Vec<&com::StepRow> = r.rows.iter().filter(|s| s.failed.is_some()).collect();
    for s in &failed {
        out!(
            "step {} failed: {}",
            s.step,
            s.failed.as_deref().unwrap_or("")
        );
    }
    Ok(match failed.is_empty() {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    })
}
