//! Side by side (issues 3 §6 and 4): Knot DNS, NSD, BIND 9, PowerDNS, Lode and the
//! echo responder on the same generated ENUM zones, the same tests, interleaved run by run.
//!
//! ```text
//!  install missing packages ─▶ gen enum: main set (+ large set for flatness, memory set,
//!  shared-NAPTR set, tiny set) ─▶ pin tester to CPU 1
//!  ceiling: dnsperf against the echo (and our search, if the echo is not in the rounds)
//!  tiny zone: start each server, memory, stop          (baseline memory)
//!  for run in 1..=runs: for entry in A B C …:          (interleaved; an entry = server + set)
//!     start on CPU 0 ─▶ load time (first valid answer in the last zone) ─▶ memory
//!     ─▶ [memory-only entries stop here]
//!     ─▶ fixed rate per query kind (existing, NXDOMAIN, outside): server CPU per answer
//!     ─▶ zero-loss rate existing / non-existing ─▶ client ramp ─▶ server CPU ─▶ stop
//!     /proc/stat steal + other load, RcvbufErrors; a disturbed run is redone once
//!  [--metrics-overhead: rounds of Lode with metrics off, on, off, on … (metrics.rs)]
//!  report: report.md (a table per target), report.json, *.png, logs/
//! ```
//!
//! Every server is stopped by PID by a guard (also on errors); every wait is bounded.

pub(crate) mod ceiling;
pub mod fairness;
pub mod metrics;
pub mod report;
pub mod servers;
mod settings;
pub mod sys;
pub mod targets;
pub mod updates;

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
    /// The lode-bench binary, whose `echo` is the machine's ceiling.
    pub bench: PathBuf,
    /// Servers compared, in run order.
    pub servers: Vec<Kind>,
    /// ENUM records of the data set.
    pub records: u64,
    /// Zones of the data set.
    pub zones: u64,
    /// Leading digits of the numbers (`16461`: Shen & Schulzrinne's 500k set).
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
    /// Offered rate of the fixed-rate CPU steps (q/s; 0: no such steps).
    pub cpu_rate: u64,
    /// Length of each fixed-rate CPU step.
    pub cpu_step: Duration,
    /// Records of the large set (is the rate flat with size?), if any.
    pub flat_records: Option<u64>,
    /// Servers run on the large set (rates, CPU and memory; no client ramp).
    pub flat_servers: Vec<Kind>,
    /// Records of the memory set (bytes per record at 5 M), if any.
    pub memory_records: Option<u64>,
    /// Servers whose memory and load time are measured on the memory set.
    pub memory_servers: Vec<Kind>,
    /// Distinct NAPTR RRsets of the shared-NAPTR variant (Lode's memory only), if any.
    pub shared_naptr: Option<u64>,
    /// Run dnsperf's zero-loss search against the echo (the tester's ceiling).
    pub dnsperf: bool,
    /// Rounds of the metrics overhead measurement after the others (Lode with its
    /// metrics off, then on; 0: none).
    pub metrics_runs: usize,
    /// Socket buffers of every server, bytes as the kernel accounts them: the
    /// kernel's defaults for the run, and each server's own option (None: untouched).
    pub socket_buffer: Option<u64>,
}

/// Zones and number prefix of Shen & Schulzrinne's sets: 500k (10 zones, 16461…), 5 M (10 zones,
/// 1212…) and 20 M (4 zones, 131…); other sizes: 10 zones, generator's prefix.
pub fn seed_layout(records: u64) -> (u64, Option<String>) {
    match records {
        500_000 => (10, Some("16461".into())),
        20_000_000 => (4, Some("131".into())),
        _ => (10, None),
    }
}

/// `20000000` as `20M`, `500000` as `500k`; other counts as they are.
pub fn short_count(n: u64) -> String {
    if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 && n.is_multiple_of(1000) {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

/// Which data set an entry of the rounds serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetRole {
    /// The main set: every test.
    Main,
    /// The large set (flatness): rates, CPU, memory; no client ramp.
    Large,
    /// The memory set: load time and memory only.
    Memory,
    /// The shared-NAPTR variant of the memory set: load time and memory only.
    Shared,
}

impl SetRole {
    /// Short name used in the JSON report.
    pub fn name(self) -> &'static str {
        match self {
            SetRole::Main => "main",
            SetRole::Large => "large",
            SetRole::Memory => "memory",
            SetRole::Shared => "shared",
        }
    }

    /// True when only load time and memory are measured.
    pub fn memory_only(self) -> bool {
        matches!(self, SetRole::Memory | SetRole::Shared)
    }
}

/// One server on one data set, run once per round.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The server.
    pub kind: Kind,
    /// The data set.
    pub role: SetRole,
    /// Its name in the report: the server's name on the main set, else with the set's size.
    pub label: String,
    /// Records of its set.
    pub records: u64,
}

/// The entries of a round, in run order: main set, large set, memory set, shared set.
pub fn entries(cfg: &CompareConfig, servers: &[Kind]) -> Vec<Entry> {
    let mut v: Vec<Entry> = servers
        .iter()
        .map(|&kind| Entry {
            kind,
            role: SetRole::Main,
            label: kind.name().into(),
            records: cfg.records,
        })
        .collect();
    if let Some(n) = cfg.flat_records {
        for &kind in &cfg.flat_servers {
            v.push(Entry {
                kind,
                role: SetRole::Large,
                label: format!("{kind} {}", short_count(n)),
                records: n,
            });
        }
    }
    let mem = cfg.memory_records.unwrap_or(cfg.records);
    if cfg.memory_records.is_some() {
        for &kind in cfg.memory_servers.iter().filter(|k| **k != Kind::Echo) {
            v.push(Entry {
                kind,
                role: SetRole::Memory,
                label: format!("{kind} {}", short_count(mem)),
                records: mem,
            });
        }
    }
    // The memory set may have the large set's size: keep labels distinct.
    let large: Vec<String> = v
        .iter()
        .filter(|e| e.role == SetRole::Large)
        .map(|e| e.label.clone())
        .collect();
    for e in v.iter_mut().filter(|e| e.role == SetRole::Memory) {
        if large.contains(&e.label) {
            e.label.push_str(" (memory)");
        }
    }
    if let Some(k) = cfg.shared_naptr {
        v.push(Entry {
            kind: Kind::Lode,
            role: SetRole::Shared,
            label: format!("lode {} shared-NAPTR {k}", short_count(mem)),
            records: mem,
        });
    }
    v
}

/// The queries of a test: names that exist, names inside a zone that do not
/// (NXDOMAIN), names outside every zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryKind {
    /// Existing names (NOERROR with the NAPTR).
    Existing,
    /// Non-existing names inside a zone (NXDOMAIN).
    NxDomain,
    /// Names outside every zone (REFUSED from Knot DNS and Lode).
    Outside,
}

impl QueryKind {
    /// The three, in report order.
    pub const ALL: [QueryKind; 3] = [QueryKind::Existing, QueryKind::NxDomain, QueryKind::Outside];

    /// Short name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            QueryKind::Existing => "existing",
            QueryKind::NxDomain => "nxdomain",
            QueryKind::Outside => "outside",
        }
    }

    /// Index of its query file (`gen::enumset::QUERY_FILES`).
    pub fn file_index(self) -> usize {
        match self {
            QueryKind::Existing => 0,
            QueryKind::NxDomain => 1,
            QueryKind::Outside => 2,
        }
    }

    /// The reply `kind` must give (the echo returns every query with NOERROR).
    pub fn expect(self, kind: Kind) -> Expect {
        match (kind, self) {
            (Kind::Echo, _) => Expect::NoError,
            (_, QueryKind::Existing) => Expect::Answer,
            (_, QueryKind::NxDomain) => Expect::NxDomain,
            (_, QueryKind::Outside) => Expect::Refused,
        }
    }
}

/// One step at a fixed offered rate, with the server's CPU time over it.
#[derive(Debug, Clone, PartialEq)]
pub struct FixedStep {
    /// The queries sent.
    pub query: QueryKind,
    /// Offered rate (q/s).
    pub rate: u64,
    /// Queries sent.
    pub sent: u64,
    /// Valid replies within the timeout.
    pub valid: u64,
    /// Server CPU seconds (all its processes and threads) over the step.
    pub cpu_secs: f64,
    /// The tester kept its schedule.
    pub tester_ok: bool,
}

impl FixedStep {
    /// Server CPU microseconds per valid answer (0 if none).
    pub fn cpu_us_per_answer(&self) -> f64 {
        if self.valid == 0 {
            0.0
        } else {
            self.cpu_secs * 1e6 / self.valid as f64
        }
    }

    /// Fraction of the queries answered validly.
    pub fn answered(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            self.valid as f64 / self.sent as f64
        }
    }
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
    /// The server's short name (`server` is the entry's label).
    pub software: String,
    /// The data set's role (`main`, `large`, `memory`, `shared`).
    pub set: String,
    /// Records of the data set.
    pub records: u64,
    /// Bytes of zone text loaded.
    pub zone_bytes: u64,
    /// Fixed-rate CPU steps, one per query kind.
    pub fixed: Vec<FixedStep>,
    /// RCODE answered to a name outside every zone.
    pub outside_rcode: Option<u16>,
    /// Lode's own log: its whole load ([`parse_lode_load`]), seconds.
    pub logged_load_secs: Option<f64>,
    /// Buffers, CPUs and workers it ran with (observed once it answered; drops at
    /// the end of the run).
    pub conditions: Option<fairness::Conditions>,
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
    /// Settings: name and value (numbers as numbers).
    pub settings: Vec<(String, serde_json::Value)>,
    /// Where the figures come from (command, commit, versions, machine, sysctls).
    pub provenance: Option<crate::provenance::Provenance>,
    /// How socket buffers were made equal (or why not).
    pub buffer_setup: String,
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
    /// Offered rate of the fixed-rate CPU steps (0: none).
    pub cpu_rate: u64,
    /// Seconds per fixed-rate CPU step.
    pub cpu_step_secs: f64,
    /// The metrics overhead runs, in order (empty when not measured).
    pub metrics: Vec<metrics::MetricsRun>,
}

/// Prints progress to stderr.
pub(crate) fn say(msg: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{msg}");
}

/// Pins the calling thread (and the threads it starts later) to `cpu`.
pub(crate) fn pin_self(cpu: usize) -> Result<(), CompareError> {
    use nix::sched::{sched_setaffinity, CpuSet};
    use nix::unistd::Pid;
    let mut set = CpuSet::new();
    set.set(cpu)
        .map_err(|e| CompareError::Config(format!("CPU {cpu}: {e}")))?;
    sched_setaffinity(Pid::from_raw(0), &set)
        .map_err(|e| CompareError::Config(format!("pinning the tester to CPU {cpu}: {e}")))
}

/// The servers of `servers` that can run: when `install`, the missing
/// packages of `wanted` are installed first; a server whose program is
/// still missing is skipped. `notes` gets a line for each.
pub(crate) fn available_servers(
    servers: &[Kind],
    wanted: &[Kind],
    install: bool,
    notes: &mut Vec<String>,
) -> Result<Vec<Kind>, CompareError> {
    if install {
        let installed = install_missing(wanted)?;
        if !installed.is_empty() {
            notes.push(format!("installed: {}", installed.join(" ")));
        }
    }
    let mut available = Vec::new();
    for &k in servers {
        match k.program() {
            Some((prog, pkg)) if !Path::new(prog).exists() => {
                notes.push(format!("{k}: {prog} missing (package {pkg}): skipped"));
            }
            _ => available.push(k),
        }
    }
    Ok(available)
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
pub(crate) struct DataSet {
    pub(crate) set: EnumSetSummary,
    /// A query for the first number of the last zone (load time).
    pub(crate) probe: QuerySet,
    /// One such query per zone (every zone loaded before memory is measured).
    pub(crate) all_zones: Vec<QuerySet>,
    /// Bytes of zone text.
    pub(crate) zone_bytes: u64,
}

impl DataSet {
    pub(crate) fn zones(&self) -> Vec<(String, PathBuf)> {
        self.set.zone_files.clone()
    }
}

/// What to generate.
pub(crate) struct SetSpec {
    pub(crate) records: u64,
    pub(crate) zones: u64,
    pub(crate) prefix: Option<String>,
    pub(crate) shared_naptr: Option<u64>,
    /// Lines per query file (None: one per number).
    pub(crate) queries: Option<u64>,
}

/// Generates an ENUM set into `dir`.
pub(crate) fn make_set(dir: &Path, s: SetSpec) -> Result<DataSet, CompareError> {
    let mut spec = EnumSetSpec::new(s.records, s.zones);
    spec.prefix = s.prefix;
    spec.shared_naptr = s.shared_naptr;
    spec.queries = s.queries;
    let set = generate(&spec, dir).map_err(|e| CompareError::Config(format!("gen enum: {e}")))?;
    let probe = probe_for(&last_zone_name(&set))?;
    let mut all_zones = Vec::new();
    for z in 0..set.layout.zones() {
        let mut name = Vec::new();
        set.layout.name(z, 0, &mut name);
        all_zones.push(probe_for(&String::from_utf8_lossy(&name))?);
    }
    let zone_bytes = set
        .zone_files
        .iter()
        .map(|(_, f)| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum();
    Ok(DataSet {
        set,
        probe,
        all_zones,
        zone_bytes,
    })
}

/// A data set and, for sets queried, its three query lists (existing, NXDOMAIN, outside).
struct LoadedSet {
    data: DataSet,
    queries: Option<[Arc<QuerySet>; 3]>,
}

/// The time in `… loaded in 13.10 s …` / `… loaded in 812.345 ms …`, seconds.
fn loaded_in(line: &str) -> Option<f64> {
    let rest = &line[line.find("loaded in ")? + "loaded in ".len()..];
    let mut f = rest.split_whitespace();
    let v: f64 = f.next()?.parse().ok()?;
    match f.next()? {
        "s" => Some(v),
        "ms" => Some(v / 1e3),
        "µs" | "us" => Some(v / 1e6),
        _ => None,
    }
}

/// Lode's own figure for loading its zones, from its log: the whole-load line
/// (`N zone(s) read and built: … loaded in S s …`), else the per-zone times summed
/// (one loading thread when pinned to one CPU); None if the log has neither.
pub fn parse_lode_load(log: &str) -> Option<f64> {
    let whole = log
        .lines()
        .rev()
        .filter(|l| l.contains("read and built"))
        .find_map(loaded_in);
    whole.or_else(|| {
        let zones: Vec<f64> = log.lines().filter_map(loaded_in).collect();
        (!zones.is_empty()).then(|| zones.iter().sum())
    })
}

/// The comparison: state shared by all runs.
struct Bench<'a> {
    cfg: &'a CompareConfig,
    sets: Vec<(SetRole, LoadedSet)>,
    logs: PathBuf,
}

impl Bench<'_> {
    fn set(&self, role: SetRole) -> Result<&LoadedSet, CompareError> {
        self.sets
            .iter()
            .find(|(r, _)| *r == role)
            .map(|(_, s)| s)
            .ok_or_else(|| CompareError::Config(format!("no {} set", role.name())))
    }

    fn main_queries(&self) -> Result<&[Arc<QuerySet>; 3], CompareError> {
        self.set(SetRole::Main)?
            .queries
            .as_ref()
            .ok_or_else(|| CompareError::Config("main set without queries".into()))
    }

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
            lode: match kind {
                Kind::Echo => self.cfg.bench.clone(),
                _ => self.cfg.lode.clone(),
            },
            update_key: None,
            guard: servers::Guard::default(),
            metrics: servers::LodeMetrics::default(),
            socket_buffer: self.cfg.socket_buffer,
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

    /// One step at the fixed CPU rate with `queries`, the server's CPU time around it.
    fn fixed_step(
        &self,
        server: &servers::Running,
        queries: &Arc<QuerySet>,
        query: QueryKind,
        expect: Expect,
    ) -> Result<FixedStep, CompareError> {
        let mut rc = RateConfig::new(server.addr);
        rc.threads = self.cfg.tester_threads;
        rc.ports = self.cfg.ports;
        rc.duration = self.cfg.cpu_step;
        rc.timeout = self.cfg.timeout;
        rc.expect = expect;
        let max_behind = rc.max_behind;
        let mut tester = Tester::new(rc, queries.clone())?;
        let pids = server.pids();
        let before = sys::cpu_ns(&pids);
        let r = tester.step(self.cfg.cpu_rate)?;
        // The step returns after the replies' timeout: every answer's work is done.
        let after = sys::cpu_ns(&pids);
        let step = FixedStep {
            query,
            rate: self.cfg.cpu_rate,
            sent: r.sent,
            valid: r.valid,
            cpu_secs: after.saturating_sub(before) as f64 / 1e9,
            tester_ok: r.tester_ok(max_behind),
        };
        say(&format!(
            "    {} at {} q/s: {} of {} answered, server CPU {:.3} s, {:.2} µs/answer{}",
            query.name(),
            step.rate,
            step.valid,
            step.sent,
            step.cpu_secs,
            step.cpu_us_per_answer(),
            if step.tester_ok {
                ""
            } else {
                " (tester behind schedule)"
            }
        ));
        Ok(step)
    }

    /// One run of one entry.
    fn run_server(
        &self,
        entry: &Entry,
        run: usize,
        attempt: usize,
    ) -> Result<RunResult, CompareError> {
        let cfg = self.cfg;
        let kind = entry.kind;
        let set = self.set(entry.role)?;
        let data = &set.data;
        let me = std::process::id();
        let (cpu0, rcv0, tester0) = (sys::cpu_times(), sys::rcvbuf_errors(), sys::pid_cpu(me));
        let echo = kind == Kind::Echo;
        let zones = if echo { Vec::new() } else { data.zones() };
        let tag = match entry.role {
            SetRole::Main => format!("run{run}-{attempt}"),
            role => format!("{}-run{run}-{attempt}", role.name()),
        };
        let mut server = self.launch(kind, zones, &tag).start()?;
        let ready = QueryKind::Existing.expect(kind);
        let load = server.wait_ready(&data.probe, ready, cfg.load_limit)?;
        say(&format!(
            "  {}: first answer after {:.2} s",
            entry.label,
            load.as_secs_f64()
        ));
        // Zones may load in parallel: every zone answers before memory is measured.
        for probe in &data.all_zones {
            server.wait_ready(probe, ready, cfg.load_limit)?;
        }
        std::thread::sleep(Duration::from_millis(500));
        let pids = server.pids();
        let memory = if echo {
            Memory::default()
        } else {
            sys::memory(&pids)
        };
        let logged_load_secs = if kind == Kind::Lode {
            std::fs::read_to_string(&server.log)
                .ok()
                .and_then(|t| parse_lode_load(&t))
        } else {
            None
        };
        let mut result = RunResult {
            server: entry.label.clone(),
            software: kind.name().into(),
            set: entry.role.name().into(),
            records: if echo { 0 } else { entry.records },
            zone_bytes: if echo { 0 } else { data.zone_bytes },
            run,
            attempt,
            load_secs: load.as_secs_f64(),
            memory,
            logged_load_secs,
            ..RunResult::default()
        };
        if memory.rss > 0 {
            say(&format!(
                "  {}: resident {:.1} MiB",
                entry.label,
                memory.resident() as f64 / (1024.0 * 1024.0)
            ));
        }
        let port = server.addr.port();
        let mut conditions = fairness::observe(kind, cfg.server_workers, &pids, port);
        let cpu_before: u64 = pids.iter().map(|&p| sys::pid_cpu(p)).sum();
        if let Some(queries) = set.queries.as_ref().filter(|_| !entry.role.memory_only()) {
            let outside = &queries[QueryKind::Outside.file_index()];
            result.outside_rcode = server.rcode_of(outside.get(0));
            if cfg.cpu_rate > 0 {
                for q in QueryKind::ALL {
                    let mut expect = q.expect(kind);
                    // A server that answers names outside its zones otherwise than
                    // REFUSED: any reply counts (its RCODE is in the report).
                    if q == QueryKind::Outside
                        && !echo
                        && result.outside_rcode != Some(lode_wire::rcode::REFUSED)
                    {
                        expect = Expect::Any;
                    }
                    let step = self.fixed_step(&server, &queries[q.file_index()], q, expect)?;
                    result.fixed.push(step);
                }
            }
            // The echo is faster than any server: search up to twice as high.
            let high = if echo { 2 * cfg.high } else { cfg.high };
            result.existing = self.rate_search(
                server.addr,
                &queries[0],
                QueryKind::Existing.expect(kind),
                high,
            )?;
            say(&format!(
                "  {}: zero-loss existing {} q/s",
                entry.label, result.existing.rate
            ));
            result.nxdomain = self.rate_search(
                server.addr,
                &queries[1],
                QueryKind::NxDomain.expect(kind),
                high,
            )?;
            say(&format!(
                "  {}: zero-loss non-existing {} q/s",
                entry.label, result.nxdomain.rate
            ));
            if entry.role == SetRole::Main {
                let ccfg = ClientsConfig {
                    server: server.addr,
                    step_duration: cfg.client_step,
                    timeout: cfg.timeout,
                    expect: QueryKind::Existing.expect(kind),
                };
                let mut cursor = 0u64;
                for &n in &cfg.clients {
                    let s = run_step(&ccfg, &queries[0], n, cursor)?;
                    cursor = cursor.wrapping_add(s.answered + s.timeouts + s.wrong);
                    say(&format!(
                        "  {}: {n} client(s): {:.0} q/s, p50 {:.0} µs, p99 {:.0} µs",
                        entry.label, s.qps, s.latency_us[0], s.latency_us[2]
                    ));
                    result.clients.push(s);
                }
            }
        }
        let pids = server.pids();
        let cpu_after: u64 = pids.iter().map(|&p| sys::pid_cpu(p)).sum();
        conditions.drops = fairness::observe(kind, cfg.server_workers, &pids, port).drops;
        result.conditions = Some(conditions);
        server.stop();
        let (cpu1, rcv1, tester1) = (sys::cpu_times(), sys::rcvbuf_errors(), sys::pid_cpu(me));
        let total = cpu1.total.saturating_sub(cpu0.total).max(1) as f64;
        let busy = cpu1.busy.saturating_sub(cpu0.busy) as f64;
        let ours = cpu_after as f64 + tester1.saturating_sub(tester0) as f64;
        result.steal = cpu1.steal.saturating_sub(cpu0.steal) as f64 / total;
        result.other_load = ((busy - ours) / total).max(0.0);
        result.answers = result.existing.answers()
            + result.nxdomain.answers()
            + result.clients.iter().map(|c| c.answered).sum::<u64>()
            + result.fixed.iter().map(|f| f.valid).sum::<u64>();
        result.server_cpu_secs = cpu_after as f64 / sys::TICKS;
        result.test_cpu_secs = cpu_after.saturating_sub(cpu_before) as f64 / sys::TICKS;
        result.rcvbuf_errors = rcv1.saturating_sub(rcv0);
        result.disturbed = result.steal > cfg.max_steal || result.other_load > cfg.max_other_load;
        Ok(result)
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
}

pub use ceiling::parse_dnsperf;

/// Runs the whole comparison and writes the report; returns what was measured.
pub fn run(cfg: &CompareConfig) -> Result<CompareResult, CompareError> {
    let wall = Instant::now();
    if cfg.servers.is_empty() || cfg.runs == 0 {
        return Err(CompareError::Config("need servers and runs ≥ 1".into()));
    }
    if cfg.metrics_runs > 0 && cfg.cpu_rate == 0 {
        return Err(CompareError::Config(
            "the metrics overhead is measured at the CPU rate: it must not be 0".into(),
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
        settings: settings::settings(cfg),
        cpu_rate: cfg.cpu_rate,
        cpu_step_secs: cfg.cpu_step.as_secs_f64(),
        ..CompareResult::default()
    };
    let mut wanted: Vec<Kind> = cfg.servers.clone();
    for k in cfg.flat_servers.iter().chain(&cfg.memory_servers) {
        if !wanted.contains(k) {
            wanted.push(*k);
        }
    }
    let servers = available_servers(&cfg.servers, &wanted, cfg.install, &mut result.notes)?;
    let mut peers: Vec<&str> = wanted
        .iter()
        .filter_map(|k| k.program())
        .map(|p| p.0)
        .collect();
    peers.push("/usr/bin/dnsperf");
    // Written back when this function returns (also on errors) or on a signal.
    let (fair, _buffers) = fairness::start(&cfg.lode, &peers, cfg.socket_buffer, &servers, None)
        .map_err(CompareError::Config)?;
    result.provenance = fair.provenance;
    result.buffer_setup = fair.setup;
    let mut plan = entries(cfg, &servers);
    plan.retain(|e| match e.kind.program() {
        Some((prog, pkg)) if !Path::new(prog).exists() => {
            let note = format!("{}: {prog} missing (package {pkg}): skipped", e.label);
            if e.role != SetRole::Main {
                result.notes.push(note);
            }
            false
        }
        _ => true,
    });
    pin_self(cfg.tester_cpu)?;

    // Queries needed per step; the lists repeat if shorter.
    let top = cfg.cpu_rate.max(if servers.contains(&Kind::Echo) {
        2 * cfg.high
    } else {
        cfg.high
    });
    let needed = (top as f64 * cfg.step.max(cfg.cpu_step).as_secs_f64()).ceil() as usize + 1;
    let queried = |data: DataSet| -> Result<LoadedSet, CompareError> {
        let mut lists = Vec::new();
        for path in &data.set.query_files {
            let q = QuerySet::read_file(path, needed, false)
                .map_err(|e| CompareError::Config(format!("{}: {e}", path.display())))?;
            lists.push(Arc::new(q));
        }
        let queries: [Arc<QuerySet>; 3] = lists
            .try_into()
            .map_err(|_| CompareError::Config("expected three query files".into()))?;
        Ok(LoadedSet {
            data,
            queries: Some(queries),
        })
    };
    let mut sets = Vec::new();
    say(&format!(
        "generating {} records in {} zones",
        cfg.records, cfg.zones
    ));
    let main = make_set(
        &cfg.work.join("data"),
        SetSpec {
            records: cfg.records,
            zones: cfg.zones,
            prefix: cfg.prefix.clone(),
            shared_naptr: None,
            queries: None,
        },
    )?;
    let main_queries_file = main.set.query_files[0].clone();
    sets.push((SetRole::Main, queried(main)?));
    if plan.iter().any(|e| e.role == SetRole::Large) {
        let n = cfg.flat_records.unwrap_or(cfg.records);
        let (zones, prefix) = seed_layout(n);
        say(&format!(
            "generating the large set: {n} records in {zones} zones"
        ));
        let data = make_set(
            &cfg.work.join("large"),
            SetSpec {
                records: n,
                zones,
                prefix,
                shared_naptr: None,
                queries: Some(n.min(needed as u64)),
            },
        )?;
        sets.push((SetRole::Large, queried(data)?));
    }
    let mem = cfg.memory_records.unwrap_or(cfg.records);
    let (mem_zones, mem_prefix) = if cfg.memory_records.is_some() {
        seed_layout(mem)
    } else {
        (cfg.zones, cfg.prefix.clone())
    };
    for (role, shared) in [(SetRole::Memory, None), (SetRole::Shared, cfg.shared_naptr)] {
        if !plan.iter().any(|e| e.role == role) {
            continue;
        }
        say(&format!(
            "generating the {} set: {mem} records in {mem_zones} zones",
            role.name()
        ));
        let data = make_set(
            &cfg.work.join(role.name()),
            SetSpec {
                records: mem,
                zones: mem_zones,
                prefix: mem_prefix.clone(),
                shared_naptr: shared,
                queries: Some(10),
            },
        )?;
        sets.push((
            role,
            LoadedSet {
                data,
                queries: None,
            },
        ));
    }
    let tiny_records = 10;
    let tiny = make_set(
        &cfg.work.join("tiny"),
        SetSpec {
            records: tiny_records,
            zones: 1,
            prefix: None,
            shared_naptr: None,
            queries: Some(10),
        },
    )?;
    result.tiny_records = tiny_records;
    let bench = Bench { cfg, sets, logs };

    let echo_in_rounds = plan.iter().any(|e| e.kind == Kind::Echo);
    say("ceiling: the tester against the echo");
    let (echo, dnsperf) = bench.ceiling(!echo_in_rounds, &main_queries_file)?;
    result.echo = echo;
    result.dnsperf = dnsperf;

    let mut kinds: Vec<Kind> = Vec::new();
    for e in &plan {
        if e.kind != Kind::Echo && !kinds.contains(&e.kind) {
            kinds.push(e.kind);
        }
    }
    for &k in &kinds {
        say(&format!("{k}: memory with the tiny zone"));
        match bench.tiny_memory(&tiny, k) {
            Ok(m) => result.tiny_memory.push((k.name().into(), m)),
            Err(e) => result.notes.push(format!("{k}: tiny-zone memory: {e}")),
        }
    }
    let mut failed: Vec<String> = Vec::new();
    for run in 1..=cfg.runs {
        for entry in &plan {
            if failed.contains(&entry.label) {
                continue;
            }
            for attempt in 1..=cfg.redo + 1 {
                say(&format!(
                    "run {run}/{}: {} (attempt {attempt})",
                    cfg.runs, entry.label
                ));
                match bench.run_server(entry, run, attempt) {
                    Ok(r) => {
                        let disturbed = r.disturbed;
                        say(&format!(
                            "  {}: steal {:.1}%, other load {:.1}%, RcvbufErrors {}{}",
                            entry.label,
                            r.steal * 100.0,
                            r.other_load * 100.0,
                            r.rcvbuf_errors,
                            if disturbed { ": DISTURBED" } else { "" }
                        ));
                        result.runs.push(r);
                        // Memory and load time are not disturbed by other load enough
                        // to redo a memory-only run.
                        if !disturbed || entry.role.memory_only() {
                            break;
                        }
                    }
                    Err(e) => {
                        say(&format!("  {}: {e}", entry.label));
                        result.notes.push(format!("{} run {run}: {e}", entry.label));
                        failed.push(entry.label.clone());
                        break;
                    }
                }
            }
        }
        // The report so far: a comparison stopped later keeps its finished rounds.
        if run < cfg.runs {
            result.wall_secs = wall.elapsed().as_secs_f64();
            let mut partial = result.clone();
            partial
                .notes
                .push(format!("partial report: {run} of {} rounds", cfg.runs));
            report::write(&cfg.out, &partial)?;
        }
    }
    if cfg.metrics_runs > 0 {
        let (runs, notes) = bench.metrics_overhead();
        result.metrics = runs;
        result.notes.extend(notes);
    }
    result.wall_secs = wall.elapsed().as_secs_f64();
    report::write(&cfg.out, &result)?;
    Ok(result)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn lode_load_times_from_its_log() {
        let zones = "2026-11-22T11:27:33Z  INFO zone 0.1.3.1.e164.arpa.: 5000005 records, 5555558 \
                     names, serial 5, loaded in 13.10 s from /tmp/z\n\
                     2026-11-22T11:27:33Z  INFO zone a.: 3 records, loaded in 812.5 ms from /tmp/a\n\
                     2026-11-22T11:27:33Z  INFO resident memory: 7973.5 MiB\n\
                     x loaded in soon\n";
        let sum = parse_lode_load(zones).expect("per-zone lines");
        assert!((sum - 13.9125).abs() < 1e-9, "{sum}");
        let whole = format!(
            "{zones}2026-11-22T11:27:33Z  INFO 2 zone(s) read and built: 405.0 MB of text, \
             5000008 records loaded in 12.50 s (32 MB/s) on 1 thread(s)\n"
        );
        assert_eq!(parse_lode_load(&whole), Some(12.5));
        assert_eq!(parse_lode_load("INFO serving 0 zones\n"), None);
        assert_eq!(loaded_in("loaded in 2 minutes"), None);
    }

    #[test]
    fn counts_and_seed_layouts() {
        assert_eq!(short_count(20_000_000), "20M");
        assert_eq!(short_count(500_000), "500k");
        assert_eq!(short_count(1_500_000), "1500k");
        assert_eq!(short_count(1234), "1234");
        assert_eq!(seed_layout(500_000), (10, Some("16461".into())));
        assert_eq!(seed_layout(20_000_000), (4, Some("131".into())));
        assert_eq!(seed_layout(5_000_000), (10, None));
    }

    pub(super) fn config() -> CompareConfig {
        CompareConfig {
            out: PathBuf::from("/nonexistent/out"),
            work: PathBuf::from("/nonexistent/work"),
            lode: PathBuf::from("/nonexistent/lode"),
            bench: PathBuf::from("/nonexistent/lode-bench"),
            servers: vec![Kind::Echo, Kind::Lode, Kind::Knot],
            records: 500_000,
            zones: 10,
            prefix: None,
            runs: 1,
            step: Duration::from_secs(1),
            high: 1000,
            resolution: 100,
            timeout: Duration::from_millis(250),
            clients: Vec::new(),
            client_step: Duration::from_secs(1),
            server_workers: 1,
            tester_threads: 1,
            ports: 10,
            server_cpu: 0,
            tester_cpu: 1,
            base_port: 15890,
            load_limit: Duration::from_secs(10),
            max_other_load: 0.2,
            max_steal: 0.05,
            redo: 0,
            install: false,
            cpu_rate: 1000,
            cpu_step: Duration::from_secs(1),
            flat_records: None,
            flat_servers: vec![Kind::Lode],
            memory_records: None,
            memory_servers: vec![Kind::Lode, Kind::Knot, Kind::Echo],
            shared_naptr: None,
            dnsperf: false,
            metrics_runs: 0,
            socket_buffer: None,
        }
    }

    #[test]
    fn entries_of_a_round() {
        let mut cfg = config();
        let labels = |cfg: &CompareConfig| -> Vec<String> {
            entries(cfg, &cfg.servers)
                .into_iter()
                .map(|e| e.label)
                .collect()
        };
        assert_eq!(labels(&cfg), ["echo", "lode", "knot"]);
        cfg.flat_records = Some(20_000_000);
        cfg.memory_records = Some(5_000_000);
        cfg.shared_naptr = Some(100);
        let e = entries(&cfg, &cfg.servers);
        let got: Vec<(String, SetRole, u64)> = e
            .iter()
            .map(|e| (e.label.clone(), e.role, e.records))
            .collect();
        assert_eq!(
            got,
            [
                ("echo".into(), SetRole::Main, 500_000),
                ("lode".into(), SetRole::Main, 500_000),
                ("knot".into(), SetRole::Main, 500_000),
                ("lode 20M".into(), SetRole::Large, 20_000_000),
                ("lode 5M".into(), SetRole::Memory, 5_000_000),
                ("knot 5M".into(), SetRole::Memory, 5_000_000),
                (
                    "lode 5M shared-NAPTR 100".into(),
                    SetRole::Shared,
                    5_000_000
                ),
            ]
        );
        cfg.flat_records = Some(5_000_000);
        assert!(labels(&cfg).contains(&"lode 5M (memory)".to_owned()));
        assert!(labels(&cfg).contains(&"lode 5M".to_owned()));
        // Without a memory set, the shared variant has the main set's size.
        cfg.memory_records = None;
        cfg.flat_records = None;
        assert!(labels(&cfg).contains(&"lode 500k shared-NAPTR 100".to_owned()));
        assert!(!labels(&cfg).iter().any(|l| l == "lode 5M"));
    }

    #[test]
    fn expectations_per_query_kind() {
        assert_eq!(QueryKind::Existing.expect(Kind::Knot), Expect::Answer);
        assert_eq!(QueryKind::NxDomain.expect(Kind::Lode), Expect::NxDomain);
        assert_eq!(QueryKind::Outside.expect(Kind::Nsd), Expect::Refused);
        for q in QueryKind::ALL {
            assert_eq!(q.expect(Kind::Echo), Expect::NoError);
        }
        let f = FixedStep {
            query: QueryKind::Existing,
            rate: 1000,
            sent: 1000,
            valid: 500,
            cpu_secs: 0.002,
            tester_ok: true,
        };
        assert!((f.cpu_us_per_answer() - 4.0).abs() < 1e-9);
        assert!((f.answered() - 0.5).abs() < 1e-9);
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
