//! `lode-bench tld`: a TLD-shaped zone (`lode-bench gen tld`) served by
//! Lode, Knot DNS, NSD and BIND 9 in turn: server CPU per answer for referrals (the
//! unsigned zone, DO=0), DO=1 referrals and DO=1 NXDOMAIN (the zone signed
//! by Knot's kzonesign with NSEC3 opt-out, served pre-signed by all),
//! resident and peak memory, and the time from the start to the first answer.
//!
//! ```text
//!  gen tld (N delegations; 300k referral and NXDOMAIN queries)
//!    └─ kzonesign (ECDSA P-256, NSEC3 opt-out, no salt, 0 iterations) ─▶ signed file
//!  rounds × servers, each alone, one UDP worker pinned to the server CPU:
//!    start (lode-peers) ─▶ first referral answered: the time ─▶ VmRSS, VmHWM of its processes
//!    dnsperf -Q RATE -l S [-D] on the tester CPU ─▶ (the server's threads' schedstat,
//!      the server CPU's wall time less its idle time) ÷ answers
//!  ─▶ medians over the rounds ─▶ tld.md, tld.json
//! ```
//!
//! The rate is below every server's capacity: CPU per answer, not a
//! saturation search. The server CPU's busy time is exact only on an
//! otherwise idle machine.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lode_peers::{self as peers, Content, Logging, Ready, Server, Signing, Spec, Zone};
use lode_wire::Rtype;
use serde_json::{json, Value};

use super::{div, fail, fresh_dir, io, mib, status_bytes, write_report, CostError};
use crate::compare::say;
use crate::compare::servers::Kind;
use crate::compare::sys::{busy_ns, cpu_idle_ns, cpu_ns};
use crate::gen::tld::{generate, TldSpec};
use crate::provenance::Provenance;
use crate::xdp::load::{parse_dnsperf, run_bounded};
use crate::zones::probe;

/// The zone generated.
pub const TLD: &str = "com";
/// Lines of each query file dnsperf reads.
pub const QUERIES: u64 = 300_000;
/// Updates of the generated streams (not sent; they set where the
/// non-existing names of the NXDOMAIN queries start).
const UPDATES: u64 = 100;

/// Settings of `lode-bench tld`.
#[derive(Debug, Clone)]
pub struct TldConfig {
    /// Report folder (the report, dnsperf's outputs).
    pub out: PathBuf,
    /// Scratch folder: the data set, its signed copy, the servers' folders.
    pub work: PathBuf,
    /// The lode binary measured.
    pub lode: PathBuf,
    /// Servers, in the order of each round (Lode, Knot, NSD).
    pub servers: Vec<Kind>,
    /// Delegations in the zone.
    pub delegations: u64,
    /// Queries per second dnsperf sends.
    pub rate: u64,
    /// Seconds of each dnsperf run.
    pub duration: u64,
    /// Rounds over the servers.
    pub rounds: usize,
    /// CPU the server is pinned to.
    pub server_cpu: usize,
    /// CPU dnsperf is pinned to.
    pub tester_cpu: usize,
    /// Port of the server on 127.0.0.1.
    pub port: u16,
    /// Longest wait for a server's first answer.
    pub load_limit: Duration,
    /// Take the data set and its signed copy a run with the same
    /// delegations left in `work` (no generation, no signing).
    pub reuse: bool,
}

/// After its first answer, a server is measured once its processes used
/// under this share of a CPU for [`QUIET_FOR`] in a row (Lode collapses a
/// large zone's buffers into huge pages after its first answer: 1.3 s of
/// CPU at 20 M delegations, 6 µs per answer of a 10 s run if counted).
pub const QUIET_SHARE: f64 = 0.05;
/// See [`QUIET_SHARE`].
pub const QUIET_FOR: Duration = Duration::from_secs(3);
/// The longest wait for it (then the runs go on, the report says so).
pub const QUIET_LIMIT: Duration = Duration::from_secs(600);

/// The three loads, each on its own query file and zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// Referrals from the unsigned zone, DO=0.
    Referral,
    /// Referrals from the signed zone, DO=1 (DS or the opt-out NSEC3 proof).
    ReferralDo,
    /// NXDOMAIN from the signed zone, DO=1 (the NSEC3 proof).
    NxdomainDo,
}

impl Load {
    /// Every load, in the table's order.
    pub const ALL: [Load; 3] = [Load::Referral, Load::ReferralDo, Load::NxdomainDo];

    /// Its name in the JSON and the log files.
    pub fn name(self) -> &'static str {
        match self {
            Load::Referral => "referral",
            Load::ReferralDo => "referral_do",
            Load::NxdomainDo => "nxdomain_do",
        }
    }

    /// Whether dnsperf sets DO (`-D`), on the signed zone.
    pub fn dnssec(self) -> bool {
        self != Load::Referral
    }

    /// The query file of `lode-bench gen tld` it reads.
    fn queries(self) -> &'static str {
        match self {
            Load::NxdomainDo => "queries-nxdomain.txt",
            _ => "queries-referral.txt",
        }
    }
}

/// One dnsperf run against one server.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Run {
    /// Microseconds of the server's threads' CPU (schedstat) per answer.
    pub process_us: f64,
    /// Microseconds of the server CPU's busy time (the wall time less its
    /// idle time: softirq and interrupts included) per answer.
    pub cpu_us: f64,
    /// Answers dnsperf got.
    pub answers: u64,
    /// Queries it lost.
    pub lost: u64,
}

/// A server's start: its first answer and its memory then (summed over its processes).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Start {
    /// Seconds from the start to the first referral answered.
    pub first_answer_secs: f64,
    /// VmRSS, bytes.
    pub rss: u64,
    /// VmHWM, bytes.
    pub hwm: u64,
    /// Seconds from the first answer until the server was quiet
    /// ([`QUIET_SHARE`]), or until [`QUIET_LIMIT`].
    pub quiet_secs: f64,
    /// It was quiet within the limit.
    pub quiet: bool,
}

/// One server's figures over the rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerRuns {
    /// Which server.
    pub kind: Kind,
    /// Runs of each load of [`Load::ALL`], one per round.
    pub runs: [Vec<Run>; 3],
    /// Its starts on the unsigned zone, one per round.
    pub unsigned: Vec<Start>,
    /// Its starts on the signed zone, one per round.
    pub signed: Vec<Start>,
}

impl ServerRuns {
    /// The server's name.
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// Medians over the rounds of `load`: (process µs, CPU µs).
    pub fn medians(&self, load: Load) -> (f64, f64) {
        let runs = &self.runs[load as usize];
        let median = |f: fn(&Run) -> f64| {
            let mut v: Vec<f64> = runs.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            crate::stats::median(&v).unwrap_or(0.0)
        };
        (median(|r| r.process_us), median(|r| r.cpu_us))
    }

    /// Queries lost in every run.
    pub fn lost(&self) -> u64 {
        self.runs.iter().flatten().map(|r| r.lost).sum()
    }

    /// The row of the CPU table.
    pub fn cpu_row(&self) -> String {
        let mut row = format!("| {}", self.name());
        for load in Load::ALL {
            let (p, c) = self.medians(load);
            row.push_str(&format!(" | {p:.2} / {c:.2}"));
        }
        format!("{row} | {} |", self.lost())
    }

    /// The row of the start table (the last round's).
    pub fn start_row(&self) -> String {
        let cell = |s: Option<&Start>| {
            let s = s.copied().unwrap_or_default();
            format!(
                "{:.2} s, {} / {}, {:.1} s{}",
                s.first_answer_secs,
                s.rss >> 20,
                s.hwm >> 20,
                s.quiet_secs,
                if s.quiet { "" } else { " (busy)" }
            )
        };
        format!(
            "| {} | {} | {} |",
            self.name(),
            cell(self.unsigned.last()),
            cell(self.signed.last())
        )
    }
}

/// What `lode-bench tld` measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TldResult {
    /// Lines of the unsigned zone file.
    pub zone_lines: u64,
    /// Records of the unsigned zone.
    pub records: u64,
    /// Seconds kzonesign took.
    pub sign_secs: f64,
    /// One entry per server, in run order.
    pub servers: Vec<ServerRuns>,
    /// Seconds in all.
    pub wall_secs: f64,
    /// The Markdown report.
    pub report: PathBuf,
}

/// The header of the CPU table.
pub const CPU_HEADER: [&str; 2] = [
    "| server | referral µs (process / CPU 0) | DO=1 referral µs | DO=1 NXDOMAIN µs | lost |",
    "|---|---|---|---|---|",
];
/// The header of the start table.
pub const START_HEADER: [&str; 2] = [
    "| server | unsigned: first answer s, VmRSS / VmHWM MiB, then quiet after | signed: the same |",
    "|---|---|---|",
];

impl TldResult {
    /// The figures as the shell benchmark printed them: the two tables
    /// (the server pinned to CPU `server_cpu`).
    pub fn lines(&self, server_cpu: usize) -> Vec<String> {
        let cpu = format!("CPU {server_cpu}");
        let mut v: Vec<String> = CPU_HEADER
            .iter()
            .map(|s| s.replace("CPU 0", &cpu))
            .collect();
        v.extend(self.servers.iter().map(ServerRuns::cpu_row));
        v.push(String::new());
        v.extend(START_HEADER.iter().map(|s| s.to_string()));
        v.extend(self.servers.iter().map(ServerRuns::start_row));
        v
    }
}

/// What a run leaves in its work folder about its data set, for a later
/// run with `reuse`.
const DATA_SET: &str = "tld-set.json";

/// The data set of a run: generated, then signed by kzonesign.
#[derive(Debug, Clone, Copy, PartialEq)]
struct DataSet {
    delegations: u64,
    records: u64,
    sign_secs: f64,
}

impl DataSet {
    fn to_json(self) -> Value {
        json!({"delegations": self.delegations, "records": self.records,
            "sign_secs": self.sign_secs})
    }

    fn from_json(v: &Value) -> Option<DataSet> {
        Some(DataSet {
            delegations: v["delegations"].as_u64()?,
            records: v["records"].as_u64()?,
            sign_secs: v["sign_secs"].as_f64()?,
        })
    }
}

/// The data set, unsigned and signed zone files an earlier run left in
/// `cfg.work` for the same delegations.
fn reused(cfg: &TldConfig) -> Result<(DataSet, PathBuf, PathBuf), CostError> {
    let path = cfg.work.join(DATA_SET);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        CostError(format!(
            "--reuse: {}: {e} (a run with --work {} that generated and signed its set leaves it)",
            path.display(),
            cfg.work.display()
        ))
    })?;
    let set = serde_json::from_str::<Value>(&text)
        .ok()
        .as_ref()
        .and_then(DataSet::from_json)
        .ok_or_else(|| CostError(format!("--reuse: {}: not understood", path.display())))?;
    if set.delegations != cfg.delegations {
        return fail(format!(
            "--reuse: the set in {} has {} delegations, not {}",
            cfg.work.display(),
            set.delegations,
            cfg.delegations
        ));
    }
    let unsigned = cfg.work.join("gen").join(format!("{TLD}.zone"));
    let signed = cfg.work.join("sign/signed").join(format!("{TLD}.zone"));
    for f in [&unsigned, &signed] {
        if !f.is_file() {
            return fail(format!("--reuse: {} is missing", f.display()));
        }
    }
    Ok((set, unsigned, signed))
}

/// Runs the benchmark; the report in `cfg.out`.
pub fn run(cfg: &TldConfig) -> Result<TldResult, CostError> {
    if cfg.servers.is_empty() || cfg.rounds == 0 || cfg.rate == 0 || cfg.duration == 0 {
        return fail("servers, rounds, rate and duration: at least one each");
    }
    if let Some(k) = cfg
        .servers
        .iter()
        .find(|k| !matches!(k, Kind::Lode | Kind::Knot | Kind::Nsd | Kind::Bind))
    {
        return fail(format!("servers: lode, knot, nsd, bind (not {})", k.name()));
    }
    let started = Instant::now();
    let mut programs: Vec<String> = ["kzonesign", "dnsperf"].map(String::from).to_vec();
    for k in cfg.servers.iter().filter(|k| **k != Kind::Lode) {
        if let Some(p) = peer(*k).map(peers::Kind::program) {
            programs.push(p.into());
        }
    }
    let programs: Vec<String> = programs
        .into_iter()
        .map(|p| peers::program(&p).map_or(p, |f| f.display().to_string()))
        .collect();
    let names: Vec<&str> = programs.iter().map(String::as_str).collect();
    let provenance = Provenance::collect(Some(&cfg.lode), &names);
    std::fs::create_dir_all(&cfg.out).map_err(|e| io(&cfg.out, e))?;

    say(&format!(
        "lode-bench gen tld: {} delegations{}",
        cfg.delegations,
        if cfg.reuse {
            " (the set of an earlier run)"
        } else {
            ""
        }
    ));
    let mut spec = TldSpec::new(TLD, cfg.delegations);
    spec.queries = QUERIES;
    spec.updates = UPDATES;
    spec.command = format!(
        "lode-bench tld --delegations {} (queries {QUERIES}, updates {UPDATES})",
        cfg.delegations
    );
    let gen_dir = cfg.work.join("gen");
    let (set, unsigned, signed) = match cfg.reuse {
        true => reused(cfg)?,
        false => {
            let _ = std::fs::remove_dir_all(&gen_dir);
            let set = generate(&spec, &gen_dir).map_err(|e| CostError(format!("gen tld: {e}")))?;
            let unsigned = set.zone_file.clone();
            let sign_dir = cfg.work.join("sign");
            fresh_dir(&sign_dir)?;
            let t0 = Instant::now();
            let signed = peers::presign(
                &Zone::primary(TLD, Content::File(unsigned.clone())).signed(Signing {
                    nsec3: true,
                    opt_out: true,
                    ..Signing::default()
                }),
                &sign_dir,
            )
            .map_err(|e| CostError(e.to_string()))?;
            let set = DataSet {
                delegations: cfg.delegations,
                records: set.zone.records,
                sign_secs: t0.elapsed().as_secs_f64(),
            };
            let kept = serde_json::to_string(&set.to_json()).unwrap_or_default();
            let path = cfg.work.join(DATA_SET);
            std::fs::write(&path, kept).map_err(|e| io(&path, e))?;
            (set, unsigned, signed)
        }
    };
    let mut r = TldResult {
        zone_lines: count_lines(&unsigned)?,
        records: set.records,
        sign_secs: set.sign_secs,
        ..TldResult::default()
    };
    say(&format!(
        "kzonesign (NSEC3 opt-out): {:.2} s{}",
        r.sign_secs,
        if cfg.reuse { " (the run reused)" } else { "" }
    ));

    let probe_name = first_name(&gen_dir.join(Load::Referral.queries()))?;
    r.servers = cfg
        .servers
        .iter()
        .map(|&kind| ServerRuns {
            kind,
            runs: Default::default(),
            unsigned: Vec::new(),
            signed: Vec::new(),
        })
        .collect();
    let logs = cfg.out.join("dnsperf");
    fresh_dir(&logs)?;
    for round in 1..=cfg.rounds {
        for s in r.servers.iter_mut() {
            let kind = s.kind;
            for (zone, loads) in [
                (&unsigned, &[Load::Referral][..]),
                (&signed, &[Load::ReferralDo, Load::NxdomainDo][..]),
            ] {
                let what = if loads[0].dnssec() {
                    "signed"
                } else {
                    "unsigned"
                };
                say(&format!("== round {round}: {}, {what} zone", kind.name()));
                let (mut server, mut start) = start_server(cfg, kind, zone, &probe_name)?;
                let waited = Instant::now();
                start.quiet = crate::compare::sys::wait_idle(
                    server.pid(),
                    (QUIET_SHARE, QUIET_FOR),
                    QUIET_LIMIT,
                    &|| false,
                );
                start.quiet_secs = waited.elapsed().as_secs_f64();
                say(&format!(
                    "   first answer {:.2} s, {} {:.1} s later",
                    start.first_answer_secs,
                    if start.quiet { "quiet" } else { "still busy" },
                    start.quiet_secs
                ));
                match loads[0].dnssec() {
                    true => s.signed.push(start),
                    false => s.unsigned.push(start),
                }
                for &load in loads {
                    let log = logs.join(format!("{}-{}-{round}.txt", kind.name(), load.name()));
                    let queries = gen_dir.join(load.queries());
                    let run = measure(cfg, &server, load, &queries, &log)?;
                    say(&format!(
                        "   {}: {:.2} µs process, {:.2} µs CPU {}, {} answers, {} lost",
                        load.name(),
                        run.process_us,
                        run.cpu_us,
                        cfg.server_cpu,
                        run.answers,
                        run.lost
                    ));
                    s.runs[load as usize].push(run);
                }
                server.stop();
            }
        }
    }
    r.wall_secs = started.elapsed().as_secs_f64();
    let md = to_markdown(cfg, &r);
    r.report = write_report(&cfg.out, "tld", &md, to_json(cfg, &r), &provenance)?;
    Ok(r)
}

/// The lode-peers implementation of a server of the comparison.
fn peer(kind: Kind) -> Option<peers::Kind> {
    match kind {
        Kind::Lode => Some(peers::Kind::Lode),
        Kind::Knot => Some(peers::Kind::Knot),
        Kind::Nsd => Some(peers::Kind::Nsd),
        Kind::Bind => Some(peers::Kind::Bind),
        _ => None,
    }
}

/// The description of `kind` serving `zone` on the port: one UDP worker
/// (Knot: one TCP and one background worker too), pinned to the server
/// CPU, no journal, returned as soon as started (the first answer is timed here).
pub fn spec(cfg: &TldConfig, kind: Kind, zone: &Path) -> Result<Spec, CostError> {
    let Some(pk) = peer(kind) else {
        return fail(format!("{} is not run here", kind.name()));
    };
    let dir = cfg.work.join(format!("run-{}", kind.name()));
    fresh_dir(&dir)?;
    let mut s = Spec::new(pk, cfg.port).stop_with_parent();
    s.dir = Some(dir);
    s.label = Some(kind.name().into());
    s.logging = Logging::Plain;
    s.ready = Ready::Started;
    s.cpus = vec![cfg.server_cpu];
    s.workers = Some(1);
    s.stop_grace = Duration::from_secs(30);
    match kind {
        Kind::Lode => {
            s.program = Some(cfg.lode.clone());
            s.args = ["--log-level", "warn"].map(String::from).to_vec();
        }
        Kind::Knot => {
            s.tcp_workers = Some(1);
            s.background_workers = Some(1);
        }
        _ => {}
    }
    Ok(s.zone(Zone::primary(TLD, Content::File(zone.to_path_buf())).journal(false)))
}

/// Starts `kind` on `zone`; waits until it answers the first referral query
/// (NOERROR, asked every 0.1 s); its start.
fn start_server(
    cfg: &TldConfig,
    kind: Kind,
    zone: &Path,
    probe_name: &lode_wire::Name,
) -> Result<(Server, Start), CostError> {
    let mut server =
        Server::start(&spec(cfg, kind, zone)?).map_err(|e| CostError(e.to_string()))?;
    let addr = server.addr();
    let took = server
        .wait_until(&probe_name.to_string(), cfg.load_limit, || {
            let ok = probe::ask(addr, probe_name, Rtype::A, false, Duration::from_secs(1))
                .is_some_and(|a| a.rcode == 0);
            if !ok {
                std::thread::sleep(Duration::from_millis(100));
            }
            ok
        })
        .map_err(|e| CostError(e.to_string()))?;
    let pids = server.pids();
    let sum = |field: &str| pids.iter().map(|&p| status_bytes(p, field)).sum::<u64>();
    let start = Start {
        first_answer_secs: took.as_secs_f64(),
        rss: sum("VmRSS"),
        hwm: sum("VmHWM"),
        ..Start::default()
    };
    Ok((server, start))
}

/// CPU nanoseconds of the server's threads (NSD forks its servers): their
/// schedstat, exact where utime + stime count the ticks that landed in them.
fn server_ns(server: &Server) -> u64 {
    cpu_ns(&server.pids())
}

/// dnsperf's command line for `load` on `queries`.
pub fn dnsperf_argv(cfg: &TldConfig, load: Load, queries: &Path) -> Vec<String> {
    let mut v: Vec<String> = [
        "taskset",
        "-c",
        &cfg.tester_cpu.to_string(),
        "dnsperf",
        "-s",
        "127.0.0.1",
        "-p",
        &cfg.port.to_string(),
        "-d",
        &queries.display().to_string(),
        "-l",
        &cfg.duration.to_string(),
        "-Q",
        &cfg.rate.to_string(),
        "-t",
        "1",
    ]
    .map(String::from)
    .to_vec();
    if load.dnssec() {
        v.push("-D".into());
    }
    v
}

/// One dnsperf run of `load` against `server`: its CPU and the server CPU's busy time per answer.
pub(crate) fn measure(
    cfg: &TldConfig,
    server: &Server,
    load: Load,
    queries: &Path,
    log: &Path,
) -> Result<Run, CostError> {
    let read = || {
        (
            server_ns(server),
            cpu_idle_ns(cfg.server_cpu),
            Instant::now(),
        )
    };
    let (t0, i0, w0) = read();
    let argv = dnsperf_argv(cfg, load, queries);
    let text =
        run_bounded(&argv, log, Duration::from_secs(cfg.duration + 60)).map_err(CostError)?;
    let (t1, i1, w1) = read();
    let Some(o) = parse_dnsperf(&text) else {
        return fail(format!(
            "dnsperf output not understood: see {}",
            log.display()
        ));
    };
    if o.answers == 0 {
        return fail(format!(
            "{}: no answers (see {})",
            load.name(),
            log.display()
        ));
    }
    let per = |ns: f64| div(ns / 1e3, o.answers as f64);
    let busy = busy_ns((w1 - w0).as_secs_f64() * 1e9, i1.saturating_sub(i0));
    Ok(Run {
        process_us: per(t1.saturating_sub(t0) as f64),
        cpu_us: per(busy),
        answers: o.answers,
        lost: o.sent.saturating_sub(o.answers),
    })
}

/// The name of the first line of a query file (`name TYPE`).
pub(crate) fn first_name(path: &Path) -> Result<lode_wire::Name, CostError> {
    let text = std::fs::read_to_string(path).map_err(|e| io(path, e))?;
    let Some(name) = text
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().next())
    else {
        return fail(format!("{}: empty", path.display()));
    };
    probe::name(name).map_err(|e| CostError(e.to_string()))
}

/// Lines of a file (`wc -l`).
pub(crate) fn count_lines(path: &Path) -> Result<u64, CostError> {
    let mut f = std::fs::File::open(path).map_err(|e| io(path, e))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        let k = f.read(&mut buf).map_err(|e| io(path, e))?;
        if k == 0 {
            return Ok(n);
        }
        n += buf[..k].iter().filter(|&&b| b == b'\n').count() as u64;
    }
}

/// tld.md: the settings, the two tables, how to read them.
fn to_markdown(cfg: &TldConfig, r: &TldResult) -> String {
    let mut m = format!(
        "# A TLD-shaped zone served by Lode, Knot DNS and NSD\n\n\
         `lode-bench gen tld --delegations {}` ({} lines unsigned, {} records), signed by \
         kzonesign (ECDSA P-256, NSEC3 opt-out, no salt, 0 iterations) in {:.2} s. One UDP \
         worker on CPU {}, dnsperf on CPU {} at {} q/s for {} s ({QUERIES} queries per file), \
         {} rounds, medians; {:.0} s in all.\n\n",
        cfg.delegations,
        r.zone_lines,
        r.records,
        r.sign_secs,
        cfg.server_cpu,
        cfg.tester_cpu,
        cfg.rate,
        cfg.duration,
        cfg.rounds,
        r.wall_secs
    );
    for line in r.lines(cfg.server_cpu) {
        m.push_str(&line);
        m.push('\n');
    }
    m.push_str(&format!(
        "\nProcess: the server's threads' CPU time (/proc/PID/task/*/schedstat, exact) over \
         the answers dnsperf got; CPU: the server CPU's busy time (the wall time less its \
         idle and iowait time in /proc/stat: softirq, the kernel's receive path, included) \
         over the same answers, exact only on an otherwise idle machine. Each server is \
         measured once quiet after its first answer: its processes under {:.0} % of a CPU for \
         {} s in a row (at most {} s; \"busy\" when it was not), so that what a server does on \
         its own after it answers (Lode: huge pages over a large zone) is not counted per \
         answer. NSD's memory is its processes' sum (parent and server child share pages: RSS \
         counts them twice). First answer, memory and the wait are the last round's.\n",
        QUIET_SHARE * 100.0,
        QUIET_FOR.as_secs(),
        QUIET_LIMIT.as_secs()
    ));
    m
}

/// tld.json: settings, the zone, per server every run and the medians; numbers as numbers.
fn to_json(cfg: &TldConfig, r: &TldResult) -> Value {
    let start = |s: &Start| {
        json!({
            "first_answer_secs": s.first_answer_secs,
            "rss_bytes": s.rss,
            "hwm_bytes": s.hwm,
            "rss_mib": mib(s.rss),
            "hwm_mib": mib(s.hwm),
            "quiet_after_secs": s.quiet_secs,
            "quiet": s.quiet,
        })
    };
    let servers: Vec<Value> = r
        .servers
        .iter()
        .map(|s| {
            let mut v = json!({
                "server": s.name(),
                "lost": s.lost(),
                "unsigned_starts": s.unsigned.iter().map(start).collect::<Vec<_>>(),
                "signed_starts": s.signed.iter().map(start).collect::<Vec<_>>(),
            });
            for load in Load::ALL {
                let (p, c) = s.medians(load);
                let runs: Vec<Value> = s.runs[load as usize]
                    .iter()
                    .map(|x| {
                        json!({
                            "process_us": x.process_us,
                            "cpu_us": x.cpu_us,
                            "answers": x.answers,
                            "lost": x.lost,
                        })
                    })
                    .collect();
                v[load.name()] = json!({
                    "process_us_median": p,
                    "cpu_us_median": c,
                    "runs": runs,
                });
            }
            v
        })
        .collect();
    json!({
        "benchmark": "tld",
        "settings": {
            "tld": TLD,
            "delegations": cfg.delegations,
            "rate": cfg.rate,
            "duration_secs": cfg.duration,
            "rounds": cfg.rounds,
            "queries_per_file": QUERIES,
            "server_cpu": cfg.server_cpu,
            "tester_cpu": cfg.tester_cpu,
            "port": cfg.port,
            "servers": cfg.servers.iter().map(|k| k.name()).collect::<Vec<_>>(),
        },
        "zone": {
            "lines": r.zone_lines,
            "records": r.records,
            "sign_secs": r.sign_secs,
            "signing": "kzonesign, ECDSA P-256, NSEC3 opt-out, no salt, 0 iterations",
        },
        "servers": servers,
        "wall_secs": r.wall_secs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> TldConfig {
        TldConfig {
            out: "/nonexistent".into(),
            work: std::env::temp_dir().join(format!("lode-bench-tld-{}", std::process::id())),
            lode: "/bin/lode".into(),
            servers: vec![Kind::Lode, Kind::Knot, Kind::Nsd],
            delegations: 1000,
            rate: 20_000,
            duration: 10,
            rounds: 3,
            server_cpu: 0,
            tester_cpu: 1,
            port: 15453,
            load_limit: Duration::from_secs(3600),
            reuse: false,
        }
    }

    #[test]
    fn dnsperf_lines() {
        let c = cfg();
        let q = Path::new("/w/q.txt");
        assert_eq!(
            dnsperf_argv(&c, Load::Referral, q).join(" "),
            "taskset -c 1 dnsperf -s 127.0.0.1 -p 15453 -d /w/q.txt -l 10 -Q 20000 -t 1"
        );
        assert!(dnsperf_argv(&c, Load::NxdomainDo, q).ends_with(&["-D".to_string()]));
    }

    #[test]
    fn specs_per_server() {
        let c = cfg();
        let knot = spec(&c, Kind::Knot, Path::new("/z/com.zone")).expect("knot");
        assert_eq!(
            (knot.workers, knot.tcp_workers, knot.background_workers),
            (Some(1), Some(1), Some(1))
        );
        assert_eq!(knot.cpus, vec![0]);
        assert!(!knot.zones[0].journal && knot.zones[0].name == "com.");
        let lode = spec(&c, Kind::Lode, Path::new("/z/com.zone")).expect("lode");
        assert_eq!(lode.program.as_deref(), Some(Path::new("/bin/lode")));
        let bind = spec(&c, Kind::Bind, Path::new("/z/com.zone")).expect("bind");
        assert_eq!((bind.workers, bind.cpus.clone()), (Some(1), vec![0]));
        assert!(spec(&c, Kind::Pdns, Path::new("/z")).is_err());
        let _ = std::fs::remove_dir_all(&c.work);
    }

    #[test]
    fn medians_tables_and_json() {
        let run = |p: f64, c: f64, lost: u64| Run {
            process_us: p,
            cpu_us: c,
            answers: 200_000,
            lost,
        };
        let start = Start {
            first_answer_secs: 1.234,
            rss: 300 << 20,
            hwm: 310 << 20,
            quiet_secs: 2.5,
            quiet: true,
        };
        let busy = Start {
            quiet_secs: 600.04,
            quiet: false,
            ..start
        };
        let s = ServerRuns {
            kind: Kind::Nsd,
            runs: [
                vec![run(3.0, 9.0, 0), run(1.0, 7.0, 1), run(2.0, 8.0, 0)],
                vec![run(4.0, 10.0, 0), run(6.0, 12.0, 0)],
                vec![run(5.0, 11.0, 2)],
            ],
            unsigned: vec![start],
            signed: vec![Start::default(), busy],
        };
        assert_eq!(s.medians(Load::Referral), (2.0, 8.0));
        assert_eq!(s.medians(Load::ReferralDo), (5.0, 11.0));
        assert_eq!(
            s.cpu_row(),
            "| nsd | 2.00 / 8.00 | 5.00 / 11.00 | 5.00 / 11.00 | 3 |"
        );
        assert_eq!(
            s.start_row(),
            "| nsd | 1.23 s, 300 / 310, 2.5 s | 1.23 s, 300 / 310, 600.0 s (busy) |"
        );
        let r = TldResult {
            zone_lines: 5000,
            records: 4990,
            sign_secs: 1.5,
            servers: vec![s],
            wall_secs: 60.0,
            report: PathBuf::new(),
        };
        assert_eq!(r.lines(0).len(), 2 + 1 + 1 + 2 + 1);
        assert!(r.lines(3)[0].contains("(process / CPU 3)"));
        let j = to_json(&cfg(), &r);
        assert_eq!(j["servers"][0]["referral"]["process_us_median"], 2.0);
        assert_eq!(j["servers"][0]["nxdomain_do"]["runs"][0]["lost"], 2);
        assert_eq!(
            j["servers"][0]["signed_starts"][1]["rss_bytes"],
            300u64 << 20
        );
        assert!(crate::provenance::numeric_strings(&j).is_empty(), "{j}");
        assert_eq!(j["servers"][0]["signed_starts"][1]["quiet"], false);
        assert_eq!(
            j["servers"][0]["unsigned_starts"][0]["quiet_after_secs"],
            2.5
        );
        assert!(to_markdown(&cfg(), &r).contains("| nsd | 2.00 / 8.00 |"));
    }

    /// `reuse` takes what a run left for the same delegations, and says
    /// what is missing or different.
    #[test]
    fn a_data_set_reused() {
        let mut c = cfg();
        c.work = std::env::temp_dir().join(format!("lode-bench-tld-reuse-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&c.work);
        let err = |c: &TldConfig| reused(c).err().map(|e| e.0).unwrap_or_default();
        assert!(err(&c).contains("tld-set.json"), "{}", err(&c));
        std::fs::create_dir_all(c.work.join("gen")).unwrap();
        std::fs::create_dir_all(c.work.join("sign/signed")).unwrap();
        let set = DataSet {
            delegations: 1000,
            records: 3000,
            sign_secs: 1.5,
        };
        std::fs::write(c.work.join(DATA_SET), set.to_json().to_string()).unwrap();
        assert!(err(&c).contains("gen/com.zone is missing"), "{}", err(&c));
        std::fs::write(c.work.join("gen/com.zone"), "").unwrap();
        std::fs::write(c.work.join("sign/signed/com.zone"), "").unwrap();
        let (got, unsigned, signed) = reused(&c).expect("reused");
        assert_eq!(got, set);
        assert!(unsigned.ends_with("gen/com.zone") && signed.ends_with("signed/com.zone"));
        c.delegations = 2000;
        assert!(
            err(&c).contains("has 1000 delegations, not 2000"),
            "{}",
            err(&c)
        );
        let _ = std::fs::remove_dir_all(&c.work);
    }
}
