//! Side by side (issue 3 §6): Knot DNS, NSD, BIND 9, PowerDNS and Lode on the same
//! generated ENUM zones, the same tests, interleaved run by run.
//!
//! ```text
//!  install missing packages ─▶ gen enum (full set + tiny set) ─▶ pin tester to CPU 1
//!  ceiling: echo (CPU 0) ◀─ rate search (ours) and dnsperf's zero-loss search
//!  tiny zone: start each server, memory, stop          (baseline memory)
//!  for run in 1..=runs: for server in A B C …:         (interleaved)
//!     start on CPU 0 ─▶ load time (first valid answer in the last zone) ─▶ memory
//!     ─▶ zero-loss rate existing / non-existing ─▶ client ramp ─▶ server CPU ─▶ stop
//!     /proc/stat steal + other load, RcvbufErrors; a disturbed run is redone once
//!  report: report.md, report.json, *.png, logs/
//! ```
//!
//! Every server is stopped by PID by a guard (also on errors); every wait is bounded.

pub mod report;
pub mod servers;
pub mod sys;

use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clients::{run_step, ClientStep, ClientsConfig};
use crate::gen::enumset::{generate, EnumSetSpec, EnumSetSummary};
use crate::query::{Expect, QuerySet};
use crate::rate::{RateConfig, Tester};
use crate::search::binary_search;
use lode_wire::{Name, Rtype};
use servers::{Kind, Launch};
use sys::Memory;

/// Why a comparison failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum CompareError {
    /// A file or socket operation failed.
    Io {
        /// What it concerned.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A server could not be installed, started, or did not answer.
    Server(String),
    /// Bad settings.
    Config(String),
    /// The tester failed.
    Tester(String),
}

impl CompareError {
    /// An I/O error about `path`.
    pub fn io(path: &Path, source: std::io::Error) -> CompareError {
        CompareError::Io {
            path: path.to_owned(),
            source,
        }
    }
}

impl fmt::Display for CompareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompareError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            CompareError::Server(e) | CompareError::Config(e) | CompareError::Tester(e) => {
                f.write_str(e)
            }
        }
    }
}

impl std::error::Error for CompareError {}

impl From<crate::rate::RateError> for CompareError {
    fn from(e: crate::rate::RateError) -> Self {
        CompareError::Tester(e.to_string())
    }
}

/// Settings of a comparison.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// Results folder (report, plots, logs).
    pub out: PathBuf,
    /// Scratch folder (zones, server directories).
    pub work: PathBuf,
    /// The lode binary.
    pub lode: PathBuf,
    /// Servers compared, in run order.
    pub servers: Vec<Kind>,
    /// ENUM records of the data set.
    pub records: u64,
    /// Zones of the data set.
    pub zones: u64,
    /// Leading digits of the numbers (`16461`: seed 000's 500k set).
    pub prefix: Option<String>,
    /// Rounds over all servers.
    pub runs: usize,
    /// Seconds per rate step.
    pub step: Duration,
    /// Upper bound of the rate searches.
    pub high: u64,
    /// Resolution of the rate searches.
    pub resolution: u64,
    /// Reply timeout.
    pub timeout: Duration,
    /// Client counts of the closed-loop ramp.
    pub clients: Vec<usize>,
    /// Seconds per client step.
    pub client_step: Duration,
    /// Worker threads/processes of each server.
    pub server_workers: usize,
    /// Sender/receiver pairs of the tester.
    pub tester_threads: usize,
    /// Source ports per tester thread.
    pub ports: usize,
    /// CPU of the server under test.
    pub server_cpu: usize,
    /// CPU of the tester.
    pub tester_cpu: usize,
    /// First port (echo); servers use the next ones.
    pub base_port: u16,
    /// Longest wait for a server's first answer.
    pub load_limit: Duration,
    /// A run is disturbed when other load exceeds this fraction of the machine.
    pub max_other_load: f64,
    /// A run is disturbed when steal exceeds this fraction.
    pub max_steal: f64,
    /// Redos of a disturbed run (then it is kept, flagged).
    pub redo: usize,
    /// Install missing packages with apt-get.
    pub install: bool,
}

/// A zero-loss rate search.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RateOutcome {
    /// Highest rate that passed (q/s).
    pub rate: u64,
    /// The upper bound passed (the limit may be higher).
    pub hit_ceiling: bool,
    /// The tester was the limit: the lowest failed step was behind schedule or the
    /// tester's CPU was near 100 %.
    pub tester_limited: bool,
    /// Highest tester CPU use seen in a step (1.0 = one core).
    pub tester_cpu: f64,
    /// Steps: rate, passed, sent, valid, tester CPU.
    pub steps: Vec<(u64, bool, u64, u64, f64)>,
}

impl RateOutcome {
    /// Valid answers over all steps.
    pub fn answers(&self) -> u64 {
        self.steps.iter().map(|s| s.3).sum()
    }
}

/// One run of one server.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunResult {
    /// Server name.
    pub server: String,
    /// Round (1-based).
    pub run: usize,
    /// Attempt within the round (1 = first).
    pub attempt: usize,
    /// Seconds from start to the first valid answer for a name in the last zone.
    pub load_secs: f64,
    /// Memory after loading.
    pub memory: Memory,
    /// Zero-loss rate for existing names.
    pub existing: RateOutcome,
    /// Zero-loss rate for non-existing names (NXDOMAIN).
    pub nxdomain: RateOutcome,
    /// Client ramp.
    pub clients: Vec<ClientStep>,
    /// Server CPU seconds (all its processes, load included).
    pub server_cpu_secs: f64,
    /// Server CPU seconds during the query tests only.
    pub test_cpu_secs: f64,
    /// Valid answers during the query tests.
    pub answers: u64,
    /// CPU steal during the run (fraction of all CPU time).
    pub steal: f64,
    /// CPU use by other processes (fraction of the machine).
    pub other_load: f64,
    /// UDP receive-buffer errors during the run (the whole machine).
    pub rcvbuf_errors: u64,
    /// Disturbed (steal or other load above the limits).
    pub disturbed: bool,
}

impl RunResult {
    /// Server CPU microseconds per valid answer during the tests.
    pub fn cpu_us_per_answer(&self) -> f64 {
        if self.answers == 0 {
            0.0
        } else {
            self.test_cpu_secs * 1e6 / self.answers as f64
        }
    }
}

/// dnsperf against the echo, for the tester's ceiling.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DnsperfOutcome {
    /// Highest `-Q` rate with no query lost.
    pub zero_loss_rate: u64,
    /// Throughput without a rate limit (q/s).
    pub max_qps: f64,
}

/// Everything measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompareResult {
    /// Settings, as text pairs.
    pub settings: Vec<(String, String)>,
    /// Records in the data set.
    pub records: u64,
    /// Records in the tiny set (memory baseline).
    pub tiny_records: u64,
    /// Our tester against the echo.
    pub echo: Option<RateOutcome>,
    /// dnsperf against the echo.
    pub dnsperf: Option<DnsperfOutcome>,
    /// Memory of each server with the tiny zone.
    pub tiny_memory: Vec<(String, Memory)>,
    /// Every run, in order.
    pub runs: Vec<RunResult>,
    /// Messages (skipped servers, failures).
    pub notes: Vec<String>,
    /// Wall time of the whole comparison, seconds.
    pub wall_secs: f64,
}

/// Prints progress to stderr.
fn say(msg: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{msg}");
}

/// Pins the calling thread (and the threads it starts later) to `cpu`.
fn pin_self(cpu: usize) -> Result<(), CompareError> {
    use nix::sched::{sched_setaffinity, CpuSet};
    use nix::unistd::Pid;
    let mut set = CpuSet::new();
    set.set(cpu)
        .map_err(|e| CompareError::Config(format!("CPU {cpu}: {e}")))?;
    sched_setaffinity(Pid::from_raw(0), &set)
        .map_err(|e| CompareError::Config(format!("pinning the tester to CPU {cpu}: {e}")))
}

/// Installs the Debian packages of servers (and tools) that are missing.
pub fn install_missing(kinds: &[Kind]) -> Result<Vec<String>, CompareError> {
    let mut pkgs: Vec<&str> = Vec::new();
    for k in kinds {
        if let Some((prog, pkg)) = k.program() {
            if !Path::new(prog).exists() {
                pkgs.extend(pkg.split(' '));
            }
        }
    }
    if !Path::new("/usr/bin/dnsperf").exists() {
        pkgs.push("dnsperf");
    }
    if !Path::new(report::FONT).exists() {
        pkgs.push("fonts-dejavu-core");
    }
    if !Path::new("/usr/bin/taskset").exists() {
        pkgs.push("util-linux");
    }
    if pkgs.is_empty() {
        return Ok(Vec::new());
    }
    say(&format!("installing: {}", pkgs.join(" ")));
    let status = Command::new("timeout")
        .args(["900", "apt-get", "install", "-y", "-q"])
        .args(&pkgs)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| CompareError::Server(format!("apt-get: {e}")))?;
    if !status.success() {
        return Err(CompareError::Server(format!(
            "apt-get install {} failed ({status})",
            pkgs.join(" ")
        )));
    }
    Ok(pkgs.into_iter().map(String::from).collect())
}

/// A query set with one query for `name` (type NAPTR).
fn probe_for(name: &str) -> Result<QuerySet, CompareError> {
    let name = Name::parse(name, Some(&Name::root()))
        .map_err(|e| CompareError::Config(format!("probe name {name}: {e}")))?;
    let mut q = QuerySet::default();
    q.push(&name, Rtype::NAPTR, false);
    Ok(q)
}

/// The name of the first number of the last zone of a set.
fn last_zone_name(set: &EnumSetSummary) -> String {
    let mut out = Vec::new();
    set.layout.name(set.layout.zones() - 1, 0, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The data: zones, queries and the probes.
struct DataSet {
    set: EnumSetSummary,
    /// A query for the first number of the last zone (load time).
    probe: QuerySet,
    /// One such query per zone (every zone loaded before memory is measured).
    all_zones: Vec<QuerySet>,
}

impl DataSet {
    fn zones(&self) -> Vec<(String, PathBuf)> {
        self.set.zone_files.clone()
    }
}

/// Generates an ENUM set into `dir`.
fn make_set(
    dir: &Path,
    records: u64,
    zones: u64,
    prefix: Option<String>,
) -> Result<DataSet, CompareError> {
    let mut spec = EnumSetSpec::new(records, zones);
    spec.prefix = prefix;
    let set = generate(&spec, dir).map_err(|e| CompareError::Config(format!("gen enum: {e}")))?;
    let probe = probe_for(&last_zone_name(&set))?;
    let mut all_zones = Vec::new();
    for z in 0..set.layout.zones() {
        let mut name = Vec::new();
        set.layout.name(z, 0, &mut name);
        all_zones.push(probe_for(&String::from_utf8_lossy(&name))?);
    }
    Ok(DataSet {
        set,
        probe,
        all_zones,
    })
}

/// The comparison: state shared by all runs.
struct Bench<'a> {
    cfg: &'a CompareConfig,
    existing: Arc<QuerySet>,
    nxdomain: Arc<QuerySet>,
    logs: PathBuf,
}

impl Bench<'_> {
    fn launch(&self, kind: Kind, zones: Vec<(String, PathBuf)>, tag: &str) -> Launch {
        let index = match kind {
            Kind::Echo => 0,
            k => 1 + Kind::SERVERS.iter().position(|s| *s == k).unwrap_or(0) as u16,
        };
        Launch {
            kind,
            port: self.cfg.base_port + index,
            workers: self.cfg.server_workers,
            zones,
            dir: self.cfg.work.join(format!("{kind}-{tag}")),
            log: self.logs.join(format!("{kind}-{tag}.log")),
            cpu: self.cfg.server_cpu,
            lode: self.cfg.lode.clone(),
        }
    }

    /// One zero-loss search, watching the tester's own CPU.
    fn rate_search(
        &self,
        server: std::net::SocketAddr,
        queries: &Arc<QuerySet>,
        expect: Expect,
        high: u64,
    ) -> Result<RateOutcome, CompareError> {
        let mut rc = RateConfig::new(server);
        rc.threads = self.cfg.tester_threads;
        rc.ports = self.cfg.ports;
        rc.duration = self.cfg.step;
        rc.timeout = self.cfg.timeout;
        rc.expect = expect;
        let max_behind = rc.max_behind;
        let mut tester = Tester::new(rc, queries.clone())?;
        let me = std::process::id();
        let mut last = sys::pid_cpu(me);
        let mut steps = Vec::new();
        let step_secs = self.cfg.step.as_secs_f64().max(1e-3);
        let res = tester.search(0, high, self.cfg.resolution, |r, ok| {
            // CPU over the sending period (the draining after it is small and counted too).
            let now = sys::pid_cpu(me);
            let cpu = now.saturating_sub(last) as f64 / sys::TICKS / step_secs;
            last = now;
            let limited = !r.tester_ok(max_behind);
            say(&format!(
                "    {:>8} q/s: sent {} valid {} {} (tester CPU {:.0}%{})",
                r.rate,
                r.sent,
                r.valid,
                if ok { "PASS" } else { "FAIL" },
                cpu * 100.0,
                if limited { ", behind schedule" } else { "" }
            ));
            steps.push((
                r.rate,
                ok,
                r.sent,
                r.valid,
                if limited { cpu.max(1.0) } else { cpu },
            ));
        })?;
        let lowest_fail = steps.iter().filter(|s| !s.1).min_by_key(|s| s.0).copied();
        let tester_limited = res.hit_ceiling
            || lowest_fail.is_some_and(|s| s.4 >= 0.9 * self.cfg.tester_threads as f64);
        Ok(RateOutcome {
            rate: res.rate,
            hit_ceiling: res.hit_ceiling,
            tester_limited,
            tester_cpu: steps.iter().map(|s| s.4).fold(0.0, f64::max),
            steps,
        })
    }

    /// One run of one server.
    fn run_server(
        &self,
        data: &DataSet,
        kind: Kind,
        run: usize,
        attempt: usize,
    ) -> Result<RunResult, CompareError> {
        let cfg = self.cfg;
        let me = std::process::id();
        let (cpu0, rcv0, tester0) = (sys::cpu_times(), sys::rcvbuf_errors(), sys::pid_cpu(me));
        let mut server = self
            .launch(kind, data.zones(), &format!("run{run}-{attempt}"))
            .start()?;
        let load = server.wait_ready(&data.probe, Expect::Answer, cfg.load_limit)?;
        say(&format!(
            "  {kind}: first answer after {:.2} s",
            load.as_secs_f64()
        ));
        // Zones may load in parallel: every zone answers before memory is measured.
        for probe in &data.all_zones {
            server.wait_ready(probe, Expect::Answer, cfg.load_limit)?;
        }
        std::thread::sleep(Duration::from_millis(500));
        let pids = server.pids();
        let memory = sys::memory(&pids);
        let cpu_before: u64 = pids.iter().map(|&p| sys::pid_cpu(p)).sum();
        let existing = self.rate_search(server.addr, &self.existing, Expect::Answer, cfg.high)?;
        say(&format!(
            "  {kind}: zero-loss existing {} q/s",
            existing.rate
        ));
        let nxdomain = self.rate_search(server.addr, &self.nxdomain, Expect::NxDomain, cfg.high)?;
        say(&format!(
            "  {kind}: zero-loss non-existing {} q/s",
            nxdomain.rate
        ));
        let ccfg = ClientsConfig {
            server: server.addr,
            step_duration: cfg.client_step,
            timeout: cfg.timeout,
            expect: Expect::Answer,
        };
        let mut clients = Vec::new();
        let mut cursor = 0u64;
        for &n in &cfg.clients {
            let s = run_step(&ccfg, &self.existing, n, cursor)?;
            cursor = cursor.wrapping_add(s.answered + s.timeouts + s.wrong);
            say(&format!(
                "  {kind}: {n} client(s): {:.0} q/s, p50 {:.0} µs, p99 {:.0} µs",
                s.qps, s.latency_us[0], s.latency_us[2]
            ));
            clients.push(s);
        }
        let pids = server.pids();
        let cpu_after: u64 = pids.iter().map(|&p| sys::pid_cpu(p)).sum();
        server.stop();
        let (cpu1, rcv1, tester1) = (sys::cpu_times(), sys::rcvbuf_errors(), sys::pid_cpu(me));
        let total = cpu1.total.saturating_sub(cpu0.total).max(1) as f64;
        let busy = cpu1.busy.saturating_sub(cpu0.busy) as f64;
        let ours = cpu_after as f64 + tester1.saturating_sub(tester0) as f64;
        let steal = cpu1.steal.saturating_sub(cpu0.steal) as f64 / total;
        let other_load = ((busy - ours) / total).max(0.0);
        let answers = existing.answers()
            + nxdomain.answers()
            + clients.iter().map(|c| c.answered).sum::<u64>();
        Ok(RunResult {
            server: kind.name().into(),
            run,
            attempt,
            load_secs: load.as_secs_f64(),
            memory,
            existing,
            nxdomain,
            clients,
            server_cpu_secs: cpu_after as f64 / sys::TICKS,
            test_cpu_secs: cpu_after.saturating_sub(cpu_before) as f64 / sys::TICKS,
            answers,
            steal,
            other_load,
            rcvbuf_errors: rcv1.saturating_sub(rcv0),
            disturbed: steal > cfg.max_steal || other_load > cfg.max_other_load,
        })
    }

    /// Memory of `kind` serving the tiny set.
    fn tiny_memory(&self, tiny: &DataSet, kind: Kind) -> Result<Memory, CompareError> {
        let mut server = self.launch(kind, tiny.zones(), "tiny").start()?;
        for probe in &tiny.all_zones {
            server.wait_ready(probe, Expect::Answer, Duration::from_secs(60))?;
        }
        std::thread::sleep(Duration::from_millis(500));
        let m = sys::memory(&server.pids());
        server.stop();
        Ok(m)
    }

    /// The tester's ceiling: our search and dnsperf's against the echo.
    fn ceiling(
        &self,
        queries_file: &Path,
    ) -> Result<(RateOutcome, Option<DnsperfOutcome>), CompareError> {
        let mut echo = self.launch(Kind::Echo, Vec::new(), "ceiling").start()?;
        echo.wait_ready(
            &self.existing_probe(),
            Expect::NoError,
            Duration::from_secs(10),
        )?;
        // The echo is faster than any server: search up to twice as high.
        let ours = self.rate_search(
            echo.addr,
            &self.existing,
            Expect::NoError,
            2 * self.cfg.high,
        )?;
        say(&format!("  echo: our zero-loss rate {} q/s", ours.rate));
        let dp = if Path::new("/usr/bin/dnsperf").exists() {
            let d = self.dnsperf(echo.addr.port(), queries_file)?;
            say(&format!(
                "  echo: dnsperf zero-loss rate {} q/s, unlimited {:.0} q/s",
                d.zero_loss_rate, d.max_qps
            ));
            Some(d)
        } else {
            None
        };
        echo.stop();
        Ok((ours, dp))
    }

    fn existing_probe(&self) -> QuerySet {
        let mut q = QuerySet::default();
        if let Ok(name) =
            Name::from_wire(&self.existing.question(0)[..self.existing.question(0).len() - 4])
        {
            q.push(&name, Rtype::NAPTR, false);
        }
        q
    }

    /// dnsperf (pinned to the tester's CPU): a zero-loss binary search with `-Q`, and
    /// one unlimited run.
    fn dnsperf(&self, port: u16, queries: &Path) -> Result<DnsperfOutcome, CompareError> {
        let secs = self.cfg.step.as_secs().max(1);
        let run = |limit: Option<u64>| -> Result<(u64, u64, f64), CompareError> {
            let mut c = Command::new("timeout");
            c.args(["-k", "2", &(secs + 15).to_string(), "taskset", "-c"])
                .arg(self.cfg.tester_cpu.to_string())
                .args(["dnsperf", "-s", "127.0.0.1", "-p", &port.to_string(), "-d"])
                .arg(queries)
                .args(["-l", &secs.to_string(), "-c", "1", "-T", "1", "-t", "1"]);
            if let Some(q) = limit {
                c.args(["-Q", &q.to_string()]);
            }
            let out = c
                .output()
                .map_err(|e| CompareError::Tester(format!("dnsperf: {e}")))?;
            let text = String::from_utf8_lossy(&out.stdout);
            parse_dnsperf(&text).ok_or_else(|| {
                CompareError::Tester(format!(
                    "dnsperf output not understood: {}",
                    text.lines().take(3).collect::<Vec<_>>().join(" / ")
                ))
            })
        };
        let (_, _, max_qps) = run(None)?;
        let res = binary_search(0, self.cfg.high, self.cfg.resolution, |rate| {
            let (sent, lost, _) = run(Some(rate))?;
            let ok = lost == 0 && sent as f64 >= 0.98 * (rate * secs) as f64;
            say(&format!(
                "    dnsperf -Q {rate}: sent {sent} lost {lost} {}",
                if ok { "PASS" } else { "FAIL" }
            ));
            Ok::<_, CompareError>((ok, ()))
        })?;
        Ok(DnsperfOutcome {
            zero_loss_rate: res.rate,
            max_qps,
        })
    }
}

/// Parses dnsperf's `Queries sent:`, `Queries lost:` and `Queries per second:`.
pub fn parse_dnsperf(text: &str) -> Option<(u64, u64, f64)> {
    let field = |key: &str| -> Option<&str> {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
    };
    let sent = field("Queries sent:")?.parse().ok()?;
    let lost = field("Queries lost:")?.parse().ok()?;
    let qps = field("Queries per second:")?.parse().ok()?;
    Some((sent, lost, qps))
}

/// Runs the whole comparison and writes the report; returns what was measured.
pub fn run(cfg: &CompareConfig) -> Result<CompareResult, CompareError> {
    let wall = Instant::now();
    if cfg.servers.is_empty() || cfg.runs == 0 || cfg.clients.is_empty() {
        return Err(CompareError::Config(
            "need servers, runs ≥ 1 and client counts".into(),
        ));
    }
    if cfg.server_cpu == cfg.tester_cpu {
        return Err(CompareError::Config(
            "server and tester need different CPUs".into(),
        ));
    }
    let logs = cfg.out.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| CompareError::io(&logs, e))?;
    std::fs::create_dir_all(&cfg.work).map_err(|e| CompareError::io(&cfg.work, e))?;
    let mut result = CompareResult {
        records: cfg.records,
        settings: settings(cfg),
        ..CompareResult::default()
    };
    if cfg.install {
        let installed = install_missing(&cfg.servers)?;
        if !installed.is_empty() {
            result
                .notes
                .push(format!("installed: {}", installed.join(" ")));
        }
    }
    let mut servers = Vec::new();
    for &k in &cfg.servers {
        match k.program() {
            Some((prog, pkg)) if !Path::new(prog).exists() => {
                result
                    .notes
                    .push(format!("{k}: {prog} missing (package {pkg}): skipped"));
            }
            _ => servers.push(k),
        }
    }
    pin_self(cfg.tester_cpu)?;
    say(&format!(
        "generating {} records in {} zones",
        cfg.records, cfg.zones
    ));
    let data = make_set(
        &cfg.work.join("data"),
        cfg.records,
        cfg.zones,
        cfg.prefix.clone(),
    )?;
    let tiny_records = 10;
    let tiny = make_set(&cfg.work.join("tiny"), tiny_records, 1, None)?;
    result.tiny_records = tiny_records;
    let needed = (cfg.high as f64 * cfg.step.as_secs_f64()).ceil() as usize + 1;
    let load = |i: usize| -> Result<Arc<QuerySet>, CompareError> {
        let path = &data.set.query_files[i];
        QuerySet::read_file(path, needed, false)
            .map(Arc::new)
            .map_err(|e| CompareError::Config(format!("{}: {e}", path.display())))
    };
    let bench = Bench {
        cfg,
        existing: load(0)?,
        nxdomain: load(1)?,
        logs,
    };

    say("ceiling: the tester against the echo");
    let (echo, dnsperf) = bench.ceiling(&data.set.query_files[0])?;
    result.echo = Some(echo);
    result.dnsperf = dnsperf;

    for &k in &servers {
        say(&format!("{k}: memory with the tiny zone"));
        match bench.tiny_memory(&tiny, k) {
            Ok(m) => result.tiny_memory.push((k.name().into(), m)),
            Err(e) => result.notes.push(format!("{k}: tiny-zone memory: {e}")),
        }
    }
    let mut failed: Vec<Kind> = Vec::new();
    for run in 1..=cfg.runs {
        for &k in &servers {
            if failed.contains(&k) {
                continue;
            }
            for attempt in 1..=cfg.redo + 1 {
                say(&format!("run {run}/{}: {k} (attempt {attempt})", cfg.runs));
                match bench.run_server(&data, k, run, attempt) {
                    Ok(r) => {
                        let disturbed = r.disturbed;
                        say(&format!(
                            "  {k}: steal {:.1}%, other load {:.1}%, RcvbufErrors {}{}",
                            r.steal * 100.0,
                            r.other_load * 100.0,
                            r.rcvbuf_errors,
                            if disturbed { ": DISTURBED" } else { "" }
                        ));
                        result.runs.push(r);
                        if !disturbed {
                            break;
                        }
                    }
                    Err(e) => {
                        say(&format!("  {k}: {e}"));
                        result.notes.push(format!("{k} run {run}: {e}"));
                        failed.push(k);
                        break;
                    }
                }
            }
        }
    }
    result.wall_secs = wall.elapsed().as_secs_f64();
    report::write(&cfg.out, &result)?;
    Ok(result)
}

/// The settings recorded in the report.
fn settings(cfg: &CompareConfig) -> Vec<(String, String)> {
    let mut s = vec![
        ("records".into(), cfg.records.to_string()),
        ("zones".into(), cfg.zones.to_string()),
        ("prefix".into(), cfg.prefix.clone().unwrap_or_default()),
        ("runs".into(), cfg.runs.to_string()),
        ("step_secs".into(), format!("{}", cfg.step.as_secs_f64())),
        (
            "search".into(),
            format!("0..{} q/s, resolution {}", cfg.high, cfg.resolution),
        ),
        ("timeout_ms".into(), cfg.timeout.as_millis().to_string()),
        ("clients".into(), format!("{:?}", cfg.clients)),
        (
            "client_step_secs".into(),
            format!("{}", cfg.client_step.as_secs_f64()),
        ),
        ("server_workers".into(), cfg.server_workers.to_string()),
        ("tester_threads".into(), cfg.tester_threads.to_string()),
        ("ports_per_thread".into(), cfg.ports.to_string()),
        ("server_cpu".into(), cfg.server_cpu.to_string()),
        ("tester_cpu".into(), cfg.tester_cpu.to_string()),
        ("max_other_load".into(), format!("{}", cfg.max_other_load)),
        ("max_steal".into(), format!("{}", cfg.max_steal)),
    ];
    // Servers that do not ask for larger buffers keep rmem_default (208 KiB on Debian).
    for knob in ["rmem_default", "rmem_max"] {
        if let Ok(v) = std::fs::read_to_string(format!("/proc/sys/net/core/{knob}")) {
            s.push((format!("net.core.{knob}"), v.trim().to_owned()));
        }
    }
    if let Ok(k) = std::fs::read_to_string("/proc/sys/kernel/osrelease") {
        s.push(("kernel".into(), k.trim().to_owned()));
    }
    if let Ok(c) = std::fs::read_to_string("/proc/cpuinfo") {
        if let Some(m) = c.lines().find_map(|l| l.strip_prefix("model name")) {
            s.push((
                "cpu".into(),
                m.trim_start_matches([' ', '\t', ':']).to_owned(),
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dnsperf_output() {
        let text = "Statistics:\n\n  Queries sent:         50000\n  Queries completed:    49990 (99.98%)\n  \
                    Queries lost:         10 (0.02%)\n\n  Response codes:       NOERROR 49990 (100.00%)\n  \
                    Average packet size:  request 40, response 40\n  Run time (s):         1.000\n  \
                    Queries per second:   49987.2\n";
        assert_eq!(parse_dnsperf(text), Some((50000, 10, 49987.2)));
        assert_eq!(parse_dnsperf("garbage"), None);
    }

    #[test]
    fn kinds() {
        for k in Kind::SERVERS {
            assert_eq!(Kind::parse(k.name()), Some(k));
        }
        assert_eq!(Kind::parse("PowerDNS"), Some(Kind::Pdns));
        assert_eq!(Kind::parse("unbound"), None);
    }
}
