//! `lode-bench update-cpu`, `update-memory` and `axfr-in`: what a server
//! spends on one job (crates/bench/src/server_cost/), their arguments.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use lode_bench::compare::servers::Kind;
use lode_bench::server_cost::{axfr_in, cpu, memory};

use super::{parse_servers, scratch_dropped, secs, Folders, BENCH_KEY};

/// The lode a command measures: `--lode-bin`, else lode-bench's `--lode`
/// (else the one next to lode-bench).
fn measured(given: &Option<PathBuf>, lode: &crate::LodeBinary) -> anyhow::Result<PathBuf> {
    match given {
        Some(p) if p.is_file() => {
            std::path::absolute(p).with_context(|| format!("--lode-bin {}", p.display()))
        }
        Some(p) => bail!("--lode-bin {}: no such file", p.display()),
        None => lode.path(),
    }
}

/// Prints the figure lines, then where the report went.
pub(super) fn print(lines: &[String], report: &Path) -> anyhow::Result<()> {
    for l in lines {
        out!("{l}");
    }
    out!("report: {}", report.display());
    Ok(())
}

/// Arguments of `lode-bench update-cpu`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Each server is started in turn on 127.0.0.1:--port in a fresh \
folder under --work that holds its journal (the disk the fdatasync probe measures, for 3 s \
before the clients start), pinned to --server-cpu with one worker (Knot: one UDP and one TCP \
worker), and stopped by PID. The clients run on --tester-cpu, each its own TCP connection, \
adding one new NAPTR per TSIG-signed UPDATE (owners 500000.. in 6 digits below each zone) \
and waiting for its reply: an acknowledged update is durable. Server CPU is utime + stime \
from /proc/PID/stat (10 ms ticks) just before and after the clients' run. The set \
(`lode-bench gen enum`) stays in --work for the next run. Prints per server the clients' \
summary, durable updates/s ÷ fdatasync/s, the server's CPU seconds and µs per durable \
update; update-cpu.md and update-cpu.json in --out. With --signed each server signs the \
zones with its default policy (ECDSA P-256, NSEC; Knot with two background workers, its \
zones loaded whole; BIND's dnssec-policy default, signing the dynamic zones in place) and \
every update before it answers; the clients start once the last NAPTR of every zone is \
answered with its RRSIG (DO=1, asked every 2 s, at most --sign-limit from the start), and \
the time that took is printed. \
Example: lode-bench update-cpu --clients 16 --duration 20; signed by three servers: \
lode-bench update-cpu --signed --servers lode,bind,knot"
)]
pub(crate) struct UpdateCpuArgs {
    #[command(flatten)]
    folders: Folders,
    /// Servers, in run order: lode, knot, bind (one not installed is skipped).
    #[arg(long, value_delimiter = ',', default_value = "lode,knot")]
    servers: Vec<String>,
    /// ENUM numbers of the set (Shen & Schulzrinne's 500k set).
    #[arg(long, default_value_t = 500_000)]
    records: u64,
    /// Zones they are split into.
    #[arg(long, default_value_t = 10)]
    zones: u64,
    /// Leading digits of the numbers.
    #[arg(long, default_value = "16461")]
    prefix: String,
    /// Closed-loop clients (TCP connections, one update in flight each).
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Seconds the clients send.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// TSIG key `[alg:]name:base64secret` of every update (default: a fixed hmac-sha256 test key).
    #[arg(long)]
    tsig: Option<String>,
    /// Lode's zonefile-sync: -1 leaves the zone files as they are (as Knot is run here);
    /// 0 or more writes them back (then Lode gets copies of the set's files).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    zonefile_sync: i64,
    /// Lode's background-workers (default: Lode's own).
    #[arg(long, value_name = "N")]
    background_workers: Option<usize>,
    /// Zones signed by each server (dnssec-signing, its default policy): each update is
    /// signed too.
    #[arg(long)]
    signed: bool,
    /// With --signed: seconds a server may take to sign the zones (from its start).
    #[arg(long, default_value_t = 1800.0)]
    sign_limit: f64,
    /// `perf record -F 999` of Lode during the updates into --out/perf.data.
    #[arg(long)]
    perf: bool,
    /// perf's call-graph mode: fp, or dwarf for call graphs through Rust frames.
    #[arg(long, default_value = "fp", requires = "perf")]
    perf_call_graph: String,
    /// CPU the server is pinned to.
    #[arg(long, default_value_t = 0)]
    server_cpu: usize,
    /// CPU the clients are pinned to.
    #[arg(long, default_value_t = 1)]
    tester_cpu: usize,
    /// Port of the server on 127.0.0.1.
    #[arg(long, default_value_t = 15353)]
    port: u16,
    /// Seconds to wait for a server's zones to answer.
    #[arg(long, default_value_t = 300.0)]
    load_limit: f64,
}

pub(super) fn update_cpu(a: UpdateCpuArgs, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    let servers = parse_servers(&a.servers, false)?;
    if servers.is_empty()
        || servers
            .iter()
            .any(|k| !matches!(k, Kind::Lode | Kind::Knot | Kind::Bind))
    {
        bail!("--servers: lode, knot, bind");
    }
    let key =
        lode_tsig::Key::parse_spec(a.tsig.as_deref().unwrap_or(BENCH_KEY)).context("--tsig")?;
    let (out, work, temp) = a.folders.dirs("update-cpu", false);
    let cfg = cpu::CpuConfig {
        out,
        work: work.clone(),
        lode: lode.path()?,
        servers,
        records: a.records,
        zones: a.zones,
        prefix: a.prefix,
        clients: a.clients,
        duration: secs(a.duration, "--duration")?,
        key,
        zonefile_sync: a.zonefile_sync,
        background_workers: a.background_workers,
        signed: a.signed,
        sign_limit: secs(a.sign_limit, "--sign-limit")?,
        perf: a.perf.then_some(a.perf_call_graph),
        server_cpu: a.server_cpu,
        tester_cpu: a.tester_cpu,
        port: a.port,
        fsync: std::time::Duration::from_secs(3),
        load_limit: secs(a.load_limit, "--load-limit")?,
    };
    let r = scratch_dropped(temp, &work, cpu::run(&cfg))?;
    let mut lines: Vec<String> = r.runs.iter().flat_map(cpu::CpuRun::lines).collect();
    lines.extend(r.comparison());
    lines.extend(r.notes.iter().map(|n| format!("note: {n}")));
    print(&lines, &r.report)?;
    Ok(
        if r.runs
            .iter()
            .all(|x| x.updates.acked > 0 && x.updates.acked == x.updates.sent)
        {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        },
    )
}

/// Arguments of `lode-bench update-memory`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "One zone of --records numbers (`lode-bench gen enum --zones 1`) is \
served by `lode serve` (the machine's worker count) with updates allowed for a fresh random \
key from 127.0.0.1, its journal in --work, zonefile-sync -1. `lode update` then sends, \
--batch records per message, --window in flight on each of --connections connections: \
records/15 new numbers (adds), records/15 deletions and records/15 changes (the old NAPTR \
out, then a new one in) — a third each of records/5 changes. Then the zone goes quiet \
(8 s), every compaction started ends (at most 180 s), the server's VmRSS and VmHWM are \
read (VmHWM reset once the zone was loaded: the peak of the updates and compactions), the \
zone is written out (`lode zone-flush`) and a second server loads that file fresh for the \
comparison. Prints the table of resident KiB and bytes per record, after ÷ fresh, the \
updates' time and the compactions; update-memory.md, update-memory.json and the server's \
serve.log in --out. Every step has a time limit; servers are stopped by PID."
)]
pub(crate) struct UpdateMemoryArgs {
    #[command(flatten)]
    folders: Folders,
    /// Numbers in the zone; records/5 of them are changed.
    #[arg(long, default_value_t = 5_000_000)]
    records: u64,
    /// Records per UPDATE message (`lode update -b`).
    #[arg(long, default_value_t = 500)]
    batch: usize,
    /// Messages in flight per connection (`lode update -w`).
    #[arg(long, default_value_t = 16)]
    window: usize,
    /// Update connections (`lode update -c`).
    #[arg(long, default_value_t = 2)]
    connections: usize,
    /// Port of the server on 127.0.0.1.
    #[arg(long, default_value_t = 15395)]
    port: u16,
    /// Seconds to wait for the zone to load.
    #[arg(long, default_value_t = 600.0)]
    load_limit: f64,
    /// Seconds each of the four `lode update` runs may take.
    #[arg(long, default_value_t = 900.0)]
    step_limit: f64,
}

pub(super) fn update_memory(
    a: UpdateMemoryArgs,
    lode: &crate::LodeBinary,
) -> anyhow::Result<ExitCode> {
    if a.batch == 0 || a.window == 0 || a.connections == 0 {
        bail!("--batch, --window and --connections must be positive");
    }
    let (out, work, temp) = a.folders.dirs("update-memory", false);
    let cfg = memory::MemoryConfig {
        out,
        work: work.clone(),
        lode: lode.path()?,
        records: a.records,
        port: a.port,
        shape: (a.batch, a.window, a.connections),
        step_limit: secs(a.step_limit, "--step-limit")?,
        load_limit: secs(a.load_limit, "--load-limit")?,
    };
    std::fs::create_dir_all(&cfg.out).with_context(|| cfg.out.display().to_string())?;
    std::fs::create_dir_all(&work).with_context(|| work.display().to_string())?;
    let r = scratch_dropped(temp, &work, memory::run(&cfg))?;
    print(&r.lines(a.records), &r.report)?;
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `lode-bench axfr-in`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "A Lode primary (lode-bench's --lode, one worker) serves one ENUM \
zone of --records NAPTR records (`lode-bench gen enum --zones 1 --prefix P`, kept in --work \
for the next run) on 127.0.0.1:--port with transfers allowed; once it serves the zone, a \
Lode secondary (--lode-bin, one worker, a journal) starts on the next port and transfers \
the zone at start. Its SOA serial is polled every 0.1 s until it is the primary's. Prints \
the time from the secondary's start until then, its peak (VmHWM) and resident (VmRSS) \
memory then and their ratio, and its log line of the transfer; axfr-in.md and \
axfr-in.json in --out. Example (another build against this one): lode-bench axfr-in \
--records 5000000 --prefix 1646 --lode-bin /tmp/lode-old --cpus 1"
)]
pub(crate) struct AxfrInArgs {
    #[command(flatten)]
    folders: Folders,
    /// NAPTR records of the zone.
    #[arg(long, default_value_t = 20_000_000)]
    records: u64,
    /// Leading digits (E.164 prefix) of the generated numbers.
    #[arg(long, default_value = "164")]
    prefix: String,
    /// The secondary's lode, the one measured (another build to compare; default:
    /// lode-bench's --lode, which also runs the primary).
    #[arg(long, value_name = "PATH")]
    lode_bin: Option<PathBuf>,
    /// CPUs both servers are pinned to (default: not pinned).
    #[arg(long, value_delimiter = ',')]
    cpus: Vec<usize>,
    /// The primary's port on 127.0.0.1; the secondary listens on the next.
    #[arg(long, default_value_t = 15395)]
    port: u16,
    /// Seconds to wait for the primary to serve the zone.
    #[arg(long, default_value_t = 1800.0)]
    load_limit: f64,
    /// Seconds to wait for the secondary to serve the primary's serial.
    #[arg(long, default_value_t = 3600.0)]
    transfer_limit: f64,
}

pub(super) fn axfr_in(a: AxfrInArgs, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    let (out, work, temp) = a.folders.dirs("axfr-in", false);
    let cfg = axfr_in::AxfrInConfig {
        out,
        work: work.clone(),
        lode: lode.path()?,
        secondary: measured(&a.lode_bin, lode)?,
        records: a.records,
        prefix: a.prefix,
        port: a.port,
        cpus: a.cpus,
        load_limit: secs(a.load_limit, "--load-limit")?,
        transfer_limit: secs(a.transfer_limit, "--transfer-limit")?,
    };
    let r = scratch_dropped(temp, &work, axfr_in::run(&cfg))?;
    print(&r.lines(&cfg.secondary), &r.report)?;
    Ok(ExitCode::SUCCESS)
}
