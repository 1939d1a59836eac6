//! `lode-bench attack`: the benchmarks under attack (crates/bench/src/attack/),
//! its arguments and their checks.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;

use super::{parse_fraction, parse_servers, scratch_dropped, secs, Folders};

/// Arguments of `lode-bench attack`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Tables: 1 overload (per server and mix: zero-loss rate R0, then fixed steps at 1.5 and 2 × R0, answered q/s and wrong RCODEs), 2 CPU per answer with RRL and cookies off / RRL / RRL + cookies (Lode and Knot, each restarted per configuration), 3 UDP zero-loss rate without and with a TCP abuse mix. Servers listen on 127.0.0.1 from --base-port (lode, knot, nsd), one worker each, pinned to --server-cpu; the tester and the abuse run on --tester-cpu. Installs knot, nsd and dnsperf with apt-get unless --no-install. --quick: 100000 records, 1 s steps, coarse searches, one round (~4-5 min with three servers). --smoke: 20000 records, 0.5 s steps, 2000 idle connections (~2.5 min; checks the harness only, its coarse searches make the ratios meaningless). Defaults: ~20-25 min."
)]
pub(crate) struct AttackArgs {
    #[command(flatten)]
    folders: Folders,
    /// A short run (about 4-5 minutes).
    #[arg(long)]
    quick: bool,
    /// A tiny run that only checks the harness (about 2.5 minutes).
    #[arg(long, conflicts_with = "quick")]
    smoke: bool,
    /// Servers (lode, knot, nsd), in run order.
    #[arg(long, value_delimiter = ',', default_value = "lode,knot,nsd")]
    servers: Vec<String>,
    /// Tables to run.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    tables: Vec<u8>,
    /// ENUM records (default 500000; --quick 100000; --smoke 20000).
    #[arg(long)]
    records: Option<u64>,
    /// Seconds per rate step (default 5; --quick 1; --smoke 0.5).
    #[arg(long)]
    step: Option<f64>,
    /// Upper bound of the zero-loss searches (q/s).
    #[arg(long, default_value_t = 300_000)]
    high: u64,
    /// Resolution of the searches (default high/64; --quick high/16; --smoke high/8).
    #[arg(long)]
    resolution: Option<u64>,
    /// Queries a zero-loss step may lose (`0`, `0.01%`).
    #[arg(long, default_value = "0")]
    loss: String,
    /// Milliseconds after which a reply no longer counts.
    #[arg(long, default_value_t = 250)]
    timeout: u64,
    /// Overload factors of table 1 (× R0).
    #[arg(long, value_delimiter = ',', default_value = "1.5,2")]
    overloads: Vec<f64>,
    /// Random non-existing names per good name, one mix each (table 1).
    #[arg(long, value_delimiter = ',', default_value = "0,4,24")]
    mixes: Vec<u32>,
    /// Offered rate of table 2 (default: half the lowest good-names R0 of Lode and
    /// Knot in table 1, else 20000).
    #[arg(long)]
    cpu_rate: Option<u64>,
    /// Seconds per table-2 step (default 5; --quick 1; --smoke 0.5).
    #[arg(long)]
    cpu_step: Option<f64>,
    /// Table-2 steps per configuration and round (default 2; --quick/--smoke 1).
    #[arg(long)]
    cpu_steps: Option<usize>,
    /// Table-2 rounds (default 3; --quick/--smoke 1).
    #[arg(long)]
    runs: Option<usize>,
    /// Table 2's RRL rate-limit (answers/s per bucket: nothing is limited).
    #[arg(long, default_value_t = 10_000_000)]
    rrl_rate: u32,
    /// Table 3: idle connections (default 10000; --smoke 2000).
    #[arg(long)]
    idle: Option<usize>,
    /// Table 3: slow senders.
    #[arg(long, default_value_t = 50)]
    slow: usize,
    /// Table 3: pipelined floods.
    #[arg(long, default_value_t = 20)]
    floods: usize,
    /// Table 3: connection attempts per second (first ones and reopenings).
    #[arg(long, default_value_t = 5000)]
    connect_rate: u32,
    /// Table 3: no third search with the idle connections reopened (churn).
    #[arg(long)]
    no_churn: bool,
    /// CPU the server under test is pinned to.
    #[arg(long, default_value_t = 0)]
    server_cpu: usize,
    /// Limit the server under test to this percentage of its CPU (a cgroup),
    /// so that one tester CPU can offer twice its zero-loss rate (table 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(5..=100))]
    cpu_quota: Option<u32>,
    /// CPU the tester (and the abuse) is pinned to.
    #[arg(long, default_value_t = 1)]
    tester_cpu: usize,
    /// First port on 127.0.0.1: lode; knot and nsd the next two.
    #[arg(long, default_value_t = 15900)]
    base_port: u16,
    /// Source ports of the UDP tester.
    #[arg(long, default_value_t = 1000)]
    ports: usize,
    /// Seconds to wait for a server's first answer.
    #[arg(long, default_value_t = 300.0)]
    load_limit: f64,
    /// Do not install missing packages.
    #[arg(long)]
    no_install: bool,
    #[command(flatten)]
    buffers: super::buffers::SocketBufferArg,
}

/// The command line as typed (arguments with spaces quoted).
fn command_line() -> String {
    std::env::args()
        .map(|a| {
            if a.contains(' ') || a.is_empty() {
                format!("'{a}'")
            } else {
                a
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub(super) fn run(a: AttackArgs, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    use lode_bench::attack::{self, mix::Mix, AttackConfig};
    let (q, s) = (a.quick, a.smoke);
    let pick = |full: f64, quick: f64, smoke: f64| {
        if s {
            smoke
        } else if q {
            quick
        } else {
            full
        }
    };
    let servers = parse_servers(&a.servers, false)?;
    if servers.is_empty() {
        bail!("--servers: name at least one of lode, knot, nsd");
    }
    if a.high == 0 {
        bail!("--high must be positive");
    }
    let step = secs(a.step.unwrap_or(pick(5.0, 1.0, 0.5)), "--step")?;
    let divisor = pick(64.0, 16.0, 8.0) as u64;
    let (out, work, temp) = a.folders.dirs(if s { "attack-smoke" } else { "attack" }, q);
    let cfg = AttackConfig {
        out: out.clone(),
        work: work.clone(),
        lode: lode.path()?,
        command: command_line(),
        servers,
        tables: a.tables.clone(),
        records: a
            .records
            .unwrap_or(pick(500_000.0, 100_000.0, 20_000.0) as u64),
        step,
        high: a.high,
        resolution: a.resolution.unwrap_or(a.high / divisor).max(1),
        loss: parse_fraction(&a.loss)?,
        timeout: Duration::from_millis(a.timeout.max(1)),
        overloads: a.overloads.clone(),
        mixes: a
            .mixes
            .iter()
            .map(|&k| Mix { random_per_good: k })
            .collect(),
        cpu_rate: a.cpu_rate.unwrap_or(0),
        cpu_step: secs(a.cpu_step.unwrap_or(pick(5.0, 1.0, 0.5)), "--cpu-step")?,
        cpu_steps: a.cpu_steps.unwrap_or(if q || s { 1 } else { 2 }),
        runs: a.runs.unwrap_or(if q || s { 1 } else { 3 }),
        rrl_rate: a.rrl_rate,
        abuse: (
            a.idle.unwrap_or(if s { 2000 } else { 10_000 }),
            a.slow,
            a.floods,
        ),
        connect_rate: a.connect_rate,
        churn: !a.no_churn,
        server_cpu: a.server_cpu,
        cpu_quota: a.cpu_quota,
        tester_cpu: a.tester_cpu,
        base_port: a.base_port,
        ports: a.ports,
        load_limit: secs(a.load_limit, "--load-limit")?,
        install: !a.no_install,
        socket_buffer: a.buffers.size(),
    };
    cfg.check()?;
    let result = scratch_dropped(temp, &work, attack::run(&cfg))?;
    out!(
        "report: {} ({:.0} s)",
        out.join("attack.md").display(),
        result.wall_secs
    );
    for n in &result.notes {
        out!("note: {n}");
    }
    Ok(ExitCode::SUCCESS)
}
