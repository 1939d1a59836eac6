//! `lode-bench xdp`: DNS over XDP side by side — Lode and Knot DNS over
//! AF_XDP, the same two over UDP sockets, NSD, and the in-kernel XDP echo
//! (the path's floor) — on a veth pair between two network namespaces of
//! the run. The server has CPU 0 (one worker, its end's NAPI thread there
//! too), the loaders CPU 1.
//!
//! ```text
//!  gen enum ─▶ zones, query files (existing, NXDOMAIN)
//!  per round, per server: start in lodexdp-PID-s on CPU 0 ─▶ answered from the client side?
//!     ├ once its threads are idle (the start's work done), two idle seconds: CPU 0's background
//!     ├ CPU per answer at --cpu-rate: kxdpgun and dnsperf × existing and NXDOMAIN
//!     │     (CPU 0 busy: the wall time less /proc/stat's idle and iowait, sampled every 100 ms,
//!     │      over the intervals the server worked, less the background;
//!     │      and, apart, the server's own threads, their wake-ups, and its end's NAPI
//!     │      thread: the profile by thread)
//!     ├ peak: kxdpgun at rising rates until the answers/s stop growing (ramp.rs),
//!     │      each rate profiled as the CPU runs
//!     └ flood: kxdpgun at --flood-rate (as fast as it sends), answers/s
//!  --overload: capacity (highest rate with ≥ 99 % answered: bisection between the
//!     peak search's bounds), then 2× and 5× it
//!  ─▶ report.md, report.json: medians, ratios, goals met or missed, provenance
//! ```
//!
//! Everything the run makes (namespaces, the pair, server processes, the
//! echo's holder) is removed or stopped by PID at the end, on errors and on
//! Ctrl-C (after the current measurement).

pub mod load;
pub mod net;
pub mod ramp;
pub mod report;
pub mod servers;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::compare::servers::Kind as CompareKind;
use crate::compare::sys;
use crate::gen::enumset::{self, EnumSetSpec};
use load::{Load, Outcome, Tool};
use net::Pair;
use ramp::Step;

/// The servers the benchmark knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Server {
    /// Lode, `listen-xdp` on the server's end.
    LodeXdp,
    /// Knot DNS, `xdp: listen` on it.
    KnotXdp,
    /// Lode over UDP sockets.
    LodeUdp,
    /// Knot DNS over UDP sockets.
    KnotUdp,
    /// NSD over UDP sockets.
    Nsd,
    /// The in-kernel XDP echo.
    EchoXdp,
}

impl Server {
    /// All, in the default order.
    pub const ALL: [Server; 6] = [
        Server::LodeXdp,
        Server::KnotXdp,
        Server::LodeUdp,
        Server::KnotUdp,
        Server::Nsd,
        Server::EchoXdp,
    ];

    /// Its name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Server::LodeXdp => "lode-xdp",
            Server::KnotXdp => "knot-xdp",
            Server::LodeUdp => "lode-udp",
            Server::KnotUdp => "knot-udp",
            Server::Nsd => "nsd",
            Server::EchoXdp => "echo-xdp",
        }
    }

    /// The server named `s`.
    pub fn parse(s: &str) -> Option<Server> {
        Server::ALL.into_iter().find(|k| k.name() == s.trim())
    }
}

/// The query kinds measured.
pub const KINDS: [(&str, usize); 2] = [("existing", 0), ("nxdomain", 1)];

/// What to run.
#[derive(Debug, Clone)]
pub struct XdpConfig {
    /// Servers, in run order.
    pub servers: Vec<Server>,
    /// ENUM records of the data set.
    pub records: u64,
    /// Zones they are split into.
    pub zones: u64,
    /// Results folder.
    pub out: PathBuf,
    /// Scratch folder: the data set and the servers' folders.
    pub work: PathBuf,
    /// The lode binary.
    pub lode: PathBuf,
    /// The lode-bench binary (holds the echo in the server namespace).
    pub bench: PathBuf,
    /// Rounds (medians over them).
    pub rounds: usize,
    /// Offered rate of the CPU-per-answer runs (below every server's capacity).
    pub cpu_rate: u64,
    /// Seconds of each CPU-per-answer run.
    pub cpu_secs: u64,
    /// Offered rate of the flood runs (more than kxdpgun sends).
    pub flood_rate: u64,
    /// Seconds of each step of the peak search, of the floods and of the
    /// overload runs.
    pub step_secs: u64,
    /// Also measure with dnsperf.
    pub dnsperf: bool,
    /// Capacity search and 2×, 5× overload.
    pub overload: bool,
    /// Bisection steps of the capacity search.
    pub search_steps: usize,
    /// Socket buffer size for the run (the kernel's defaults; NSD's option).
    pub socket_buffer: Option<u64>,
    /// How long a server may take to load the zones.
    pub load_limit: Duration,
    /// CPU of the server.
    pub server_cpu: usize,
    /// CPU of the loaders.
    pub client_cpu: usize,
    /// Nice value of the server end's NAPI thread (0: the kernel's).
    pub napi_nice: i32,
    /// Nice value of the servers' processes (0: as started).
    pub server_nice: i32,
}

static STOP: AtomicBool = AtomicBool::new(false);

/// Whether Ctrl-C (or SIGTERM, SIGHUP) asked the run to stop.
pub fn stopping() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// A line of progress on stderr.
pub fn say(msg: &str) {
    eprintln!("[xdp] {msg}");
}

/// Where one loader run's CPU time went: a profile by thread, which holds
/// where perf's sampling does not (in this VM it loses samples).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Split {
    /// CPU 0 busy nanoseconds over the loader's life, background subtracted.
    pub cpu0_ns: f64,
    /// The same, as read.
    pub cpu0_raw_ns: f64,
    /// The server's own threads, nanoseconds (schedstat).
    pub server_ns: f64,
    /// Its end's NAPI thread, nanoseconds: receiving, the XDP program, the
    /// redirect into the socket's ring (or the echo's whole work).
    pub napi_ns: f64,
    /// Times the server's threads were put on a CPU: their wake-ups.
    pub server_runs: f64,
}

impl Split {
    /// The server's threads and its end's NAPI thread, nanoseconds.
    pub fn tasks_ns(&self) -> f64 {
        self.server_ns + self.napi_ns
    }
}

/// One CPU-per-answer run.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuRun {
    /// The loader.
    pub tool: Tool,
    /// `existing` or `nxdomain`.
    pub kind: &'static str,
    /// What it reported.
    pub outcome: Outcome,
    /// Where the CPU went.
    pub split: Split,
}

impl CpuRun {
    /// CPU 0 busy time per answer, microseconds.
    pub fn cpu0_us(&self) -> Option<f64> {
        per_answer_us(&self.outcome, self.split.cpu0_ns)
    }
    /// The server's tasks' time per answer, microseconds.
    pub fn tasks_us(&self) -> Option<f64> {
        per_answer_us(&self.outcome, self.split.tasks_ns())
    }
}

/// `ns` per answer of `o`, in microseconds (None with no answer).
pub fn per_answer_us(o: &Outcome, ns: f64) -> Option<f64> {
    (o.answers > 0).then(|| ns / o.answers as f64 / 1e3)
}

/// One step of a peak search with its profile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateRun {
    /// Offered queries per second.
    pub offered: u64,
    /// What kxdpgun reported.
    pub outcome: Outcome,
    /// Where the CPU went.
    pub split: Split,
}

/// One overload run.
#[derive(Debug, Clone, PartialEq)]
pub struct OverloadRun {
    /// Times the capacity offered.
    pub factor: f64,
    /// What kxdpgun reported.
    pub outcome: Outcome,
}

/// Everything measured of one server.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerResult {
    /// Its name.
    pub server: String,
    /// CPU 0's background busy time, ns per second, per round.
    pub background: Vec<f64>,
    /// CPU-per-answer runs of every round.
    pub cpu: Vec<CpuRun>,
    /// Each round's peak search.
    pub peak: Vec<Vec<Step>>,
    /// Every step of every peak search, profiled.
    pub rates: Vec<RateRun>,
    /// Flood runs (kxdpgun as fast as it sends).
    pub flood: Vec<Outcome>,
    /// Highest rate with ≥ 99 % answered (with --overload).
    pub capacity: Option<f64>,
    /// Overload runs.
    pub overload: Vec<OverloadRun>,
    /// What went wrong, if something did.
    pub errors: Vec<String>,
}

/// The run's data set.
struct DataSet {
    zones: Vec<(String, PathBuf)>,
    queries: [PathBuf; 2],
    probe: String,
}

fn make_data(cfg: &XdpConfig) -> Result<DataSet, String> {
    let dir = cfg.work.join("enum");
    let mut spec = EnumSetSpec::new(cfg.records, cfg.zones);
    spec.queries = Some(cfg.records.clamp(1, 1_000_000));
    say(&format!(
        "data set: {} records in {} zones",
        cfg.records, cfg.zones
    ));
    let set = enumset::generate(&spec, &dir).map_err(|e| e.to_string())?;
    let probe = std::fs::read_to_string(&set.query_files[0])
        .map_err(|e| e.to_string())?
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().next())
        .ok_or("an empty query file")?
        .to_owned();
    Ok(DataSet {
        zones: set.zone_files.clone(),
        queries: [set.query_files[0].clone(), set.query_files[1].clone()],
        probe,
    })
}

/// The benchmark's state while it runs.
struct Bench<'a> {
    cfg: &'a XdpConfig,
    pair: Pair,
    data: DataSet,
    runs: usize,
}

impl Bench<'_> {
    /// Runs `load` from the client namespace, CPU sampled meanwhile: what it
    /// reported and the [`Window`] in which the server worked.
    fn measure(&mut self, load: &Load, server_pid: u32) -> Result<(Outcome, Window), String> {
        if stopping() {
            return Err("interrupted".into());
        }
        self.pair.pin_napi(self.napi())?;
        // The server starts no thread while it serves: its tasks, listed once.
        let pids = sys::process_tree(server_pid);
        let napi = Pair::napi_threads(&self.pair.names.server_if);
        let argv = Pair::exec_in(&self.pair.names.client_ns, &load.argv());
        self.runs += 1;
        let log = self.cfg.work.join(format!("load-{}.log", self.runs));
        let limit = Duration::from_secs(load.secs + 30);
        let done = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (done, names, at) = (done.clone(), self.pair.names.clone(), self.napi());
            std::thread::spawn(move || sample((&pids, &napi), &done, &names, at))
        };
        let text = load::run_bounded(&argv, &log, limit);
        done.store(true, Ordering::SeqCst);
        let samples = sampler.join().map_err(|_| "the CPU sampler panicked")?;
        let text = text?;
        let outcome = load
            .parse(&text)
            .ok_or_else(|| format!("cannot read {}'s output:\n{text}", load.tool.name()))?;
        Ok((outcome, Window::of(&samples)))
    }

    fn napi(&self) -> net::NapiPlacement {
        net::NapiPlacement {
            server_cpu: self.cfg.server_cpu,
            client_cpu: self.cfg.client_cpu,
            server_nice: self.cfg.napi_nice,
        }
    }

    fn load(&self, tool: Tool, kind: usize, rate: u64, secs: u64) -> Load {
        Load {
            tool,
            queries: self.data.queries[kind].clone(),
            rate: rate.max(1),
            secs: secs.max(1),
            cpu: self.cfg.client_cpu,
        }
    }

    /// Starts `server` for round `round`.
    fn start(&self, server: Server, round: usize) -> Result<servers::Running, String> {
        let dir = self.cfg.work.join(format!("{}-{round}", server.name()));
        let start = servers::Start {
            pair: &self.pair,
            zones: &self.data.zones,
            lode: &self.cfg.lode,
            bench: &self.cfg.bench,
            dir,
            cpu: self.cfg.server_cpu,
            nice: self.cfg.server_nice,
            probe: self.data.probe.clone(),
            load_limit: self.cfg.load_limit,
        };
        if self.pair.clear_xdp(true, true) {
            say("removed XDP programs a previous server or kxdpgun left on the pair");
        }
        say(&format!("round {}: starting {}", round + 1, server.name()));
        servers::start(server, &start)
    }

    /// One round of `server`: background, CPU per answer, peak search, flood.
    fn round(&mut self, server: Server, round: usize, r: &mut ServerResult) -> Result<(), String> {
        let mut running = self.start(server, round)?;
        let pid = running.pid();
        // A server answers before it has finished its start (other zones
        // loading, a first compaction): that work is not the answers'.
        if !sys::wait_idle(
            pid,
            (0.01, Duration::from_secs(1)),
            self.cfg.load_limit,
            &stopping,
        ) {
            say(&format!(
                "{}: still busy {:?} after its first answer; measuring anyway",
                server.name(),
                self.cfg.load_limit
            ));
        }
        let (i0, t) = (sys::cpu_idle_ns(0), Instant::now());
        std::thread::sleep(Duration::from_secs(2));
        let wall = t.elapsed().as_secs_f64();
        let idle = sys::cpu_idle_ns(0).saturating_sub(i0);
        let bg = sys::busy_ns(wall * 1e9, idle) / wall;
        r.background.push(bg);
        // dnsperf first, while the echo's client end holds its pass-through program.
        let mut tools = vec![Tool::Kxdpgun];
        if self.cfg.dnsperf {
            tools.insert(0, Tool::Dnsperf);
        }
        for tool in tools {
            // kxdpgun attaches its own program to the client's end (and leaves
            // it: removed before dnsperf, whose answers would go through it).
            if tool == Tool::Dnsperf {
                self.pair.clear_xdp(false, true);
            }
            running.client_pass(tool == Tool::Dnsperf)?;
            for (kind, file) in KINDS {
                let load = self.load(tool, file, self.cfg.cpu_rate, self.cfg.cpu_secs);
                let (outcome, w) = self.measure(&load, pid)?;
                let run = CpuRun {
                    tool,
                    kind,
                    outcome,
                    split: w.split(bg),
                };
                say(&format!(
                    "{} {} {kind}: {} of {} answered, CPU 0 {} µs/answer, server tasks {} µs/answer",
                    server.name(),
                    tool.name(),
                    outcome.answers,
                    outcome.sent,
                    report::num(run.cpu0_us()),
                    report::num(run.tasks_us())
                ));
                r.cpu.push(run);
            }
        }
        running.client_pass(false)?;
        let secs = self.cfg.step_secs;
        let mut steps = Vec::new();
        while let Some(rate) = ramp::next_offer(&steps, self.cfg.cpu_rate) {
            let (outcome, w) = self.measure(&self.load(Tool::Kxdpgun, 0, rate, secs), pid)?;
            let split = w.split(bg);
            say(&format!(
                "{} offered {rate}: {:.0} answers/s ({:.0} sent/s), CPU 0 {} µs/answer",
                server.name(),
                outcome.answers_per_sec(),
                outcome.sent_per_sec(),
                report::num(per_answer_us(&outcome, split.cpu0_ns))
            ));
            r.rates.push(RateRun {
                offered: rate,
                outcome,
                split,
            });
            steps.push(Step {
                offered: rate,
                outcome,
            });
        }
        say(&format!(
            "{} peak: {} answers/s",
            server.name(),
            report::num(ramp::peak(&steps))
        ));
        r.peak.push(steps);
        let load = self.load(Tool::Kxdpgun, 0, self.cfg.flood_rate, secs);
        let (o, _) = self.measure(&load, pid)?;
        say(&format!(
            "{} flood: {:.0} answers/s ({:.0} sent/s)",
            server.name(),
            o.answers_per_sec(),
            o.sent_per_sec()
        ));
        r.flood.push(o);
        drop(running);
        Ok(())
    }

    /// Capacity by bisection, then 2× and 5× it.
    fn overload(&mut self, server: Server, r: &mut ServerResult) -> Result<(), String> {
        let mut running = self.start(server, self.cfg.rounds)?;
        running.client_pass(false)?;
        let pid = running.pid();
        let secs = self.cfg.step_secs;
        let ok = |o: &Outcome| o.answers as f64 >= ramp::ANSWERED * o.sent as f64;
        // Between the peak searches' bounds (medians over the rounds): the
        // highest rate all answered and the next one tried, not.
        let (mut lo, mut hi) = r.capacity_bounds();
        if hi <= lo {
            hi = lo * ramp::FINE;
        }
        for _ in 0..self.cfg.search_steps {
            let mid = (lo + hi) / 2.0;
            let (o, _) = self.measure(&self.load(Tool::Kxdpgun, 0, mid as u64, secs), pid)?;
            if ok(&o) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        if lo <= 0.0 {
            return Err("no rate with 99 % answered: no capacity".into());
        }
        r.capacity = Some(lo);
        say(&format!("{} capacity: {lo:.0} q/s", server.name()));
        for factor in [2.0, 5.0] {
            let rate = (lo * factor) as u64;
            let (o, _) = self.measure(&self.load(Tool::Kxdpgun, 0, rate, secs), pid)?;
            say(&format!(
                "{} at {factor}× capacity: {:.0} answers/s ({:.0} sent/s)",
                server.name(),
                o.answers_per_sec(),
                o.sent_per_sec()
            ));
            r.overload.push(OverloadRun { factor, outcome: o });
        }
        drop(running);
        Ok(())
    }
}

/// One CPU sample.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at: Instant,
    /// CPU 0's idle ns.
    idle0: u64,
    /// The server's threads: ns and times put on a CPU.
    server: (u64, u64),
    /// Its end's NAPI threads' ns.
    napi: u64,
}

/// Samples every 100 ms until `done`, from a thread on the client's CPU (not
/// to count itself on the server's); pins the NAPI threads again once the
/// loader had time to attach its program (which may make them anew).
fn sample(
    (server, napi): (&[u32], &[u32]),
    done: &AtomicBool,
    names: &net::Names,
    at: net::NapiPlacement,
) -> Vec<Sample> {
    let mut cpus = nix::sched::CpuSet::new();
    if cpus.set(at.client_cpu).is_ok() {
        let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &cpus);
    }
    let read = || Sample {
        at: Instant::now(),
        idle0: sys::cpu_idle_ns(0),
        server: sys::sched_of(server),
        napi: sys::cpu_ns(napi),
    };
    let mut v = vec![read()];
    let mut pinned = false;
    while !done.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
        if !pinned && v[0].at.elapsed() > Duration::from_millis(300) {
            let _ = net::pin_napi(names, at);
            pinned = true;
        }
        v.push(read());
    }
    v.push(read());
    v
}

/// The part of a loader's run in which the server worked: the sampling
/// intervals in which its tasks ran at least 2 % of the time (the loader's
/// start and end, and idle gaps, left out: CPU 0's background there is not
/// the server's).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Window {
    /// Seconds of those intervals.
    pub secs: f64,
    /// CPU 0's busy ns in them.
    pub cpu0_ns: f64,
    /// The server's threads' ns over the whole run.
    pub server_ns: f64,
    /// Its end's NAPI threads' ns over the whole run.
    pub napi_ns: f64,
    /// Times the server's threads were put on a CPU over the whole run.
    pub server_runs: f64,
}

impl Window {
    fn of(samples: &[Sample]) -> Window {
        let mut w = Window::default();
        for p in samples.windows(2) {
            let (a, b) = (p[0], p[1]);
            let dt = b.at.duration_since(a.at).as_secs_f64();
            let server = b.server.0.saturating_sub(a.server.0) as f64;
            let napi = b.napi.saturating_sub(a.napi) as f64;
            w.server_ns += server;
            w.napi_ns += napi;
            w.server_runs += b.server.1.saturating_sub(a.server.1) as f64;
            if server + napi >= 0.02 * dt * 1e9 {
                w.secs += dt;
                w.cpu0_ns += sys::busy_ns(dt * 1e9, b.idle0.saturating_sub(a.idle0));
            }
        }
        w
    }

    /// The run's [`Split`], CPU 0's background of `bg` ns per second taken off.
    fn split(&self, bg: f64) -> Split {
        Split {
            cpu0_ns: (self.cpu0_ns - bg * self.secs).max(0.0),
            cpu0_raw_ns: self.cpu0_ns,
            server_ns: self.server_ns,
            napi_ns: self.napi_ns,
            server_runs: self.server_runs,
        }
    }
}

/// Runs the benchmark and writes report.md and report.json into `cfg.out`.
pub fn run(cfg: &XdpConfig) -> Result<(), String> {
    let peers = ["knotd", "nsd", "dnsperf", "kxdpgun", "kdig"];
    // The kernel's defaults are set for every server; none is asked for a size
    // of its own here (Lode's and Knot's descriptions take none, NSD 4.6 has
    // no so-rcvbuf), which Knot's kind says to the note.
    let kinds = [CompareKind::Knot];
    let (fairness, guard) = crate::compare::fairness::start(
        &cfg.lode,
        &peers,
        cfg.socket_buffer,
        &kinds,
        Some((&STOP, "stopping after this measurement")),
    )?;
    for p in ["kxdpgun", "kdig", "ethtool", "taskset"]
        .into_iter()
        .chain(cfg.dnsperf.then_some("dnsperf"))
    {
        if lode_peers::program(p).is_none() {
            return Err(format!(
                "{p} is not installed (knot-dnsutils, dnsperf, ethtool)"
            ));
        }
    }
    std::fs::create_dir_all(&cfg.out).map_err(|e| format!("{}: {e}", cfg.out.display()))?;
    std::fs::create_dir_all(&cfg.work).map_err(|e| format!("{}: {e}", cfg.work.display()))?;
    let data = make_data(cfg)?;
    let pair = Pair::create()?;
    say(&format!(
        "namespaces {} and {}, veth {} ═ {}",
        pair.names.server_ns, pair.names.client_ns, pair.names.server_if, pair.names.client_if
    ));
    let mut bench = Bench {
        cfg,
        pair,
        data,
        runs: 0,
    };
    let started = Instant::now();
    let mut results: Vec<ServerResult> = cfg
        .servers
        .iter()
        .map(|s| ServerResult {
            server: s.name().into(),
            ..Default::default()
        })
        .collect();
    'rounds: for round in 0..cfg.rounds {
        for (i, &server) in cfg.servers.iter().enumerate() {
            if stopping() {
                break 'rounds;
            }
            if let Err(e) = bench.round(server, round, &mut results[i]) {
                say(&format!("{}: {e}", server.name()));
                results[i].errors.push(e);
            }
        }
    }
    if cfg.overload {
        for (i, &server) in cfg.servers.iter().enumerate() {
            if stopping() || results[i].peak.is_empty() {
                continue;
            }
            if let Err(e) = bench.overload(server, &mut results[i]) {
                say(&format!("{} overload: {e}", server.name()));
                results[i].errors.push(format!("overload: {e}"));
            }
        }
    }
    drop(bench);
    drop(guard);
    let report = report::Report {
        cfg,
        results: &results,
        fairness: &fairness,
        elapsed: started.elapsed(),
        interrupted: stopping(),
    };
    write(&cfg.out.join("report.md"), &report.markdown())?;
    write(
        &cfg.out.join("report.json"),
        &serde_json::to_string_pretty(&report.json()).map_err(|e| e.to_string())?,
    )?;
    say(&format!("report: {}", cfg.out.join("report.md").display()));
    if stopping() {
        return Err("interrupted: the report holds what was measured".into());
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_is_where_the_server_worked() {
        let t = Instant::now();
        let at = |ms: u64| t + Duration::from_millis(ms);
        // Loader start (idle server, busy CPU 0), two working intervals
        // (CPU 0 idle 70 ms of each 100), an idle end.
        // The server's threads do three quarters of the work, in 10 runs
        // per working interval; its NAPI thread the rest.
        let s = |ms, idle0, tasks: u64, runs| Sample {
            at: at(ms),
            idle0,
            server: (tasks / 4 * 3, runs),
            napi: tasks / 4,
        };
        let samples = [
            s(0, 0, 0, 0),
            s(100, 50_000_000, 100_000, 1),
            s(200, 120_000_000, 20_100_000, 11),
            s(300, 190_000_000, 40_100_000, 21),
            s(400, 290_000_000, 40_200_000, 22),
        ];
        let w = Window::of(&samples);
        assert!((w.secs - 0.2).abs() < 1e-6, "{w:?}");
        assert!((w.cpu0_ns - 60_000_000.0).abs() < 1e3, "{w:?}");
        assert_eq!(w.server_ns, 30_150_000.0);
        assert_eq!(w.napi_ns, 10_050_000.0);
        assert_eq!(w.server_runs, 22.0);
        // 5 ms/s of background over the 0.2 s worked.
        let split = w.split(5_000_000.0);
        assert!((split.cpu0_ns - 59_000_000.0).abs() < 1e3, "{split:?}");
        assert_eq!(split.cpu0_raw_ns, w.cpu0_ns);
        assert_eq!(split.tasks_ns(), 40_200_000.0);
    }
}
