//! `lode-bench fleet`: a primary and secondaries in network namespaces
//! (crates/bench/src/fleet/), its arguments and their checks.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};

use super::{run_dirs, scratch_dropped, secs, BENCH_KEY};

/// Arguments of `lode-bench fleet`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Namespaces lodefl-p (primary, 10.53.0.1) and lodefl-s1.. (secondaries, 10.53.0.11..) on bridge lodefl0, the prober, update sender and rate tester in the root namespace at 10.53.0.200; servers listen on port 53 in their namespace. Everything is removed at the end, on errors and on Ctrl-C (a run killed with SIGKILL leaves them: the next run removes them first). The zone is `lode-bench gen enum` with one zone of --records numbers, or with --tld N the COM-shaped zone of `lode-bench gen tld` with N delegations, its registry stream (NS changes, additions, deletions) as the updates and its referral queries for ixfr-load. CPUs: propagation pins the primary to 0 and the secondaries to 1; ixfr-load runs everything on 0 but the secondary under test (moved to 1 for its searches); axfr pins the primary to 0 and the secondary to 1."
)]
pub(crate) struct FleetArgs {
    /// The primary: lode or knot.
    #[arg(long, default_value = "lode")]
    primary: String,
    /// The secondaries, one namespace each (lode, knot, nsd, bind; repeats allowed).
    #[arg(long, value_delimiter = ',', default_value = "lode,lode,lode")]
    secondaries: Vec<String>,
    /// propagation, ixfr-load or axfr.
    #[arg(long, default_value = "propagation")]
    experiment: String,
    /// Update rates: updates/s, `full` (as fast as the primary acknowledges, see
    /// --in-flight), with --tld also `low`/`medium` (1 %/3 % of the zone a day)
    /// (default: propagation 10,1000, with --tld medium,100,full; ixfr-load
    /// 0,4,8,10,32,1000, with --tld 0,medium,32,full).
    #[arg(long, value_delimiter = ',')]
    rates: Option<Vec<String>>,
    /// Updates per propagation run.
    #[arg(long, default_value_t = 1000)]
    updates: u64,
    /// ENUM records in the zone (default: axfr 20000000, others 100000).
    #[arg(long)]
    records: Option<u64>,
    /// TLD data instead of ENUM: the `lode-bench gen tld` zone with this many
    /// delegations, its registry stream as the updates.
    #[arg(long, value_name = "DELEGATIONS")]
    tld: Option<u64>,
    /// Rate `full`: updates sent and not yet answered at most (1: the next one
    /// after each reply, as nsupdate does).
    #[arg(long, default_value_t = 1)]
    in_flight: usize,
    /// Results folder (default results/fleet-EXPERIMENT-DATE).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Scratch folder: the zone and the servers' folders (default: a temp dir, removed).
    #[arg(long)]
    work: Option<PathBuf>,
    /// TSIG key `[alg:]name:base64secret` (default: a fixed hmac-sha256 test key).
    #[arg(long)]
    tsig: Option<String>,
    /// ixfr-load: seconds per query-rate step.
    #[arg(long, default_value_t = 10.0)]
    step: f64,
    /// ixfr-load: upper bound of the searches (q/s).
    #[arg(long, default_value_t = 100_000)]
    high: u64,
    /// ixfr-load: resolution of the searches (default high/20).
    #[arg(long)]
    resolution: Option<u64>,
    /// UDP workers per server.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Propagation: seconds a name may take to appear after the last acknowledgement.
    #[arg(long, default_value_t = 30.0)]
    wait: f64,
    /// Propagation: names each prober asks for per round.
    #[arg(long, default_value_t = 8)]
    probe_window: usize,
    /// Propagation: microseconds between a prober's rounds.
    #[arg(long, default_value_t = 1000)]
    probe_interval_us: u64,
    /// Seconds a server may take to load or transfer the zone.
    #[arg(long, default_value_t = 3600.0)]
    load_limit: f64,
}

pub(super) fn run(a: FleetArgs, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    use lode_bench::compare::servers::Kind;
    use lode_bench::fleet::{self, Experiment, FleetConfig};
    let experiment = Experiment::parse(&a.experiment).with_context(|| {
        format!(
            "--experiment {}: propagation, ixfr-load or axfr",
            a.experiment
        )
    })?;
    let kind = |s: &str| {
        Kind::parse(s.trim())
            .filter(|k| matches!(k, Kind::Lode | Kind::Knot | Kind::Nsd | Kind::Bind))
            .with_context(|| format!("{s}: one of lode, knot, nsd, bind"))
    };
    let primary = kind(&a.primary)?;
    let secondaries = a
        .secondaries
        .iter()
        .map(|s| kind(s))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if a.tld == Some(0) {
        bail!("--tld: at least one delegation");
    }
    let defaults: &[&str] = match (experiment, a.tld.is_some()) {
        (Experiment::IxfrLoad, false) => &["0", "4", "8", "10", "32", "1000"],
        (Experiment::IxfrLoad, true) => &["0", "medium", "32", "full"],
        (_, false) => &["10", "1000"],
        (_, true) => &["medium", "100", "full"],
    };
    let words = a
        .rates
        .clone()
        .unwrap_or_else(|| defaults.iter().map(|s| s.to_string()).collect());
    let rates = words
        .iter()
        .map(|w| fleet::registry::parse_rate(w, a.tld))
        .collect::<Result<Vec<f64>, String>>()
        .map_err(|e| anyhow::anyhow!("--rates: {e}"))?;
    if experiment == Experiment::Propagation && rates.iter().any(|r| *r <= 0.0) {
        bail!("--rates: positive rates for propagation (ixfr-load also takes 0, the static rate)");
    }
    if a.tld.is_none()
        && experiment == Experiment::IxfrLoad
        && rates.iter().any(|r| r.is_infinite())
    {
        bail!("--rates full: ixfr-load at full speed needs --tld");
    }
    if a.in_flight == 0 {
        bail!("--in-flight: at least 1");
    }
    let key = lode_tsig::Key::parse_spec(a.tsig.as_deref().unwrap_or(BENCH_KEY))
        .map_err(|e| anyhow::anyhow!("--tsig: {e}"))?;
    let records = a.records.unwrap_or(match experiment {
        Experiment::Axfr => 20_000_000,
        _ => 100_000,
    });
    let (out, work, temp) = run_dirs(
        &format!("fleet-{}", experiment.name()),
        false,
        &a.out,
        &a.work,
    );
    let cfg = FleetConfig {
        primary,
        secondaries,
        experiment,
        rates,
        updates: a.updates,
        records,
        tld: a.tld,
        in_flight: a.in_flight,
        out,
        work: work.clone(),
        lode: lode.path()?,
        key,
        step: secs(a.step, "--step")?,
        high: a.high,
        resolution: a.resolution.unwrap_or(a.high / 20).max(1),
        workers: a.workers,
        wait: secs(a.wait, "--wait")?,
        load_limit: secs(a.load_limit, "--load-limit")?,
        probe_window: a.probe_window,
        probe_interval: Duration::from_micros(a.probe_interval_us),
    };
    scratch_dropped(temp, &work, fleet::run(&cfg))?;
    Ok(ExitCode::SUCCESS)
}
