//! Under attack: Lode, Knot DNS and NSD side by side in one run, on the
//! same generated ENUM zones, the server pinned to one CPU and the tester to the other.
//!
//! ```text
//!  gen enum ─▶ good names (existing) + zone apexes
//!  for server in lode, knot, nsd: start (compare's launcher, pinned) ─▶ every zone answers
//!    table 1 (overload): for mix in good, 1:4, 1:24 random NXDOMAIN names:
//!        zero-loss search ─▶ R0 ─▶ fixed steps at 1.5 × R0 and 2 × R0 (overload, never judged)
//!        ─▶ answered q/s ÷ R0, wrong RCODEs (per query: NOERROR+answer / NXDOMAIN)
//!    table 3 (TCP abuse): zero-loss search, good names, without ─▶ with idle connections,
//!        slow senders and pipelined floods running (tcp.rs) ─▶ ratio ─▶ stop
//!  table 2 (RRL + cookies, Lode and Knot): rounds × {off, RRL, RRL + cookies}: start with
//!    that configuration ─▶ fixed-rate steps with queries carrying a valid server cookie
//!    ─▶ server CPU (schedstat) ÷ valid answers ─▶ stop
//!  report: attack.md (three tables, targets met or not), attack.json, logs/
//! ```
//!
//! Every server is stopped by PID by compare's guard (also on errors); SIGINT,
//! SIGTERM and SIGHUP stop the run between steps, the abuse at once (a second one
//! at once). The socket buffers, provenance and each server's observed conditions
//! are compare's ([`crate::compare::fairness`]).

pub mod mix;
mod quota;
pub mod report;
pub mod tcp;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use lode_wire::Name;

use crate::compare::fairness::{self, Conditions, Fairness};
use crate::compare::servers::{Guard, Kind, Launch, Running};
use crate::compare::{
    available_servers, make_set, pin_self, say, seed_layout, sys, DataSet, SetSpec,
};
use crate::query::{Expect, QuerySet};
use crate::rate::{RateConfig, StepResult, Tester};
use crate::search::binary_search;
use mix::Mix;
use tcp::{Abuse, AbuseConfig, AbuseStats};

/// Set by the signal thread on SIGINT, SIGTERM or SIGHUP.
static STOP: AtomicBool = AtomicBool::new(false);

/// Why the attack benchmark failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum AttackError {
    /// A server, the tester or a file failed.
    Compare(crate::compare::CompareError),
    /// Bad settings.
    Config(String),
    /// Stopped by a signal.
    Interrupted,
}

impl fmt::Display for AttackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttackError::Compare(e) => write!(f, "{e}"),
            AttackError::Config(e) => f.write_str(e),
            AttackError::Interrupted => f.write_str("stopped by a signal"),
        }
    }
}

impl std::error::Error for AttackError {}

impl From<crate::compare::CompareError> for AttackError {
    fn from(e: crate::compare::CompareError) -> Self {
        AttackError::Compare(e)
    }
}

impl From<crate::rate::RateError> for AttackError {
    fn from(e: crate::rate::RateError) -> Self {
        AttackError::Compare(e.into())
    }
}

/// Settings of the attack benchmark.
#[derive(Debug, Clone)]
pub struct AttackConfig {
    /// Results folder (attack.md, attack.json, logs/).
    pub out: PathBuf,
    /// Scratch folder (zones, server folders).
    pub work: PathBuf,
    /// The lode binary.
    pub lode: PathBuf,
    /// The command line, quoted in the report.
    pub command: String,
    /// Servers of tables 1 and 3 (lode, knot, nsd), in run order.
    pub servers: Vec<Kind>,
    /// Tables to run (1, 2, 3).
    pub tables: Vec<u8>,
    /// ENUM records of the set.
    pub records: u64,
    /// Seconds per rate step.
    pub step: Duration,
    /// Upper bound of the zero-loss searches (q/s).
    pub high: u64,
    /// Resolution of the searches.
    pub resolution: u64,
    /// Fraction of queries a zero-loss step may lose.
    pub loss: f64,
    /// Reply timeout.
    pub timeout: Duration,
    /// Overload factors of table 1 (× R0).
    pub overloads: Vec<f64>,
    /// Mixes of table 1.
    pub mixes: Vec<Mix>,
    /// Offered rate of table 2 (0: half the lowest good-names R0 of table 1, else 20000).
    pub cpu_rate: u64,
    /// Seconds per table-2 step.
    pub cpu_step: Duration,
    /// Table-2 steps per configuration and round.
    pub cpu_steps: usize,
    /// Table-2 rounds.
    pub runs: usize,
    /// RRL rate of table 2 (answers/s per bucket; high, so nothing is limited).
    pub rrl_rate: u32,
    /// Idle connections, slow senders, floods of table 3.
    pub abuse: (usize, usize, usize),
    /// Connection attempts per second of the abuse.
    pub connect_rate: u32,
    /// Also search with the idle connections reopened when closed (churn).
    pub churn: bool,
    /// CPU of the server under test.
    pub server_cpu: usize,
    /// Limit the server under test to this % of its CPU (a cgroup), so the
    /// tester can offer twice its zero-loss rate; None: no limit.
    pub cpu_quota: Option<u32>,
    /// CPU of the tester (and the abuse).
    pub tester_cpu: usize,
    /// First port on 127.0.0.1 (Lode; Knot and NSD the next ones).
    pub base_port: u16,
    /// Source ports of the UDP tester.
    pub ports: usize,
    /// Longest wait for a server's first answer.
    pub load_limit: Duration,
    /// Install missing packages.
    pub install: bool,
    /// Socket buffers of every server, bytes as the kernel accounts them: the
    /// kernel's defaults for the run, and Lode's own option (None: untouched).
    pub socket_buffer: Option<u64>,
}

impl AttackConfig {
    /// Checks the settings.
    pub fn check(&self) -> Result<(), AttackError> {
        let bad = |s: &str| Err(AttackError::Config(s.into()));
        if self.servers.is_empty()
            || self
                .servers
                .iter()
                .any(|k| !matches!(k, Kind::Lode | Kind::Knot | Kind::Nsd))
        {
            return bad("servers: lode, knot, nsd");
        }
        if self.tables.is_empty() || self.tables.iter().any(|t| !(1..=3).contains(t)) {
            return bad("tables: 1, 2, 3");
        }
        if self.server_cpu == self.tester_cpu {
            return bad("server and tester need different CPUs");
        }
        if self.high == 0 || self.resolution == 0 || self.records < 10 {
            return bad("high, resolution positive; at least 10 records");
        }
        if self.overloads.iter().any(|f| !(1.0..=10.0).contains(f)) {
            return bad("overload factors between 1 and 10");
        }
        if self.runs == 0 || self.cpu_steps == 0 {
            return bad("runs and cpu steps at least 1");
        }
        if self.abuse.0 + self.abuse.1 + self.abuse.2 > 15_000 || self.connect_rate == 0 {
            return bad("at most 15,000 abuse connections; a positive connect rate");
        }
        // Send times are u32 microseconds in the tester; the abuse's limit is derived.
        if self.step > Duration::from_secs(600) || self.cpu_step > Duration::from_secs(600) {
            return bad("steps of at most 600 s");
        }
        Ok(())
    }

    fn wants(&self, table: u8) -> bool {
        self.tables.contains(&table)
    }

    /// Steps of one binary search over `[0, high]` at `resolution`.
    fn search_steps(high: u64, resolution: u64) -> u64 {
        let ratio = (high / resolution.max(1)).max(1);
        2 + u64::from(64 - ratio.leading_zeros())
    }

    /// A rough run time, seconds, for the banner.
    pub fn expected_secs(&self) -> f64 {
        let step = self.step.as_secs_f64() + self.timeout.as_secs_f64() + 0.1;
        let n = self.servers.len() as f64;
        let search = Self::search_steps(self.high, self.resolution) as f64;
        let mut t = 10.0 + self.records as f64 / 100_000.0;
        if self.wants(1) {
            t += n * self.mixes.len() as f64 * (search + self.overloads.len() as f64) * step;
        }
        if self.wants(3) {
            let searches = if self.churn { 3.0 } else { 2.0 };
            t += n * searches * (Self::search_steps(32, 1) as f64 * step + 3.0);
        }
        if self.wants(2) {
            let kinds = self
                .servers
                .iter()
                .filter(|k| matches!(k, Kind::Lode | Kind::Knot))
                .count() as f64;
            let cpu = self.cpu_step.as_secs_f64() + self.timeout.as_secs_f64();
            // Start and stop, a warm-up step, the measured steps.
            t += self.runs as f64 * kinds * 3.0 * (3.0 + (1 + self.cpu_steps) as f64 * cpu);
        }
        t
    }
}

/// Table 2's three configurations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardMode {
    /// Neither RRL nor cookies.
    Off,
    /// RRL on (a rate nothing reaches).
    Rrl,
    /// RRL and cookies on; queries carry a valid server cookie.
    RrlCookies,
}

impl GuardMode {
    /// The three, in run order.
    pub const ALL: [GuardMode; 3] = [GuardMode::Off, GuardMode::Rrl, GuardMode::RrlCookies];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            GuardMode::Off => "off",
            GuardMode::Rrl => "RRL",
            GuardMode::RrlCookies => "RRL + cookies",
        }
    }

    /// The server configuration.
    pub fn guard(self, rrl_rate: u32, secret: [u8; 16]) -> Guard {
        match self {
            GuardMode::Off => Guard::default(),
            GuardMode::Rrl => Guard {
                rrl_rate: Some(rrl_rate),
                cookie_secret: None,
            },
            GuardMode::RrlCookies => Guard {
                rrl_rate: Some(rrl_rate),
                cookie_secret: Some(secret),
            },
        }
    }
}

/// One row of table 1: a server, a mix, its R0 and the overload steps.
#[derive(Debug, Clone, PartialEq)]
pub struct OverloadRow {
    /// Server.
    pub server: Kind,
    /// The mix.
    pub mix: Mix,
    /// Zero-loss rate (q/s).
    pub r0: u64,
    /// The search's upper bound passed.
    pub hit_ceiling: bool,
    /// The search's steps.
    pub search: Vec<StepResult>,
    /// Overload steps: factor and what was measured.
    pub overload: Vec<(f64, StepResult)>,
}

/// One step of table 2.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuStep {
    /// Server.
    pub server: Kind,
    /// Configuration.
    pub mode: GuardMode,
    /// Round, 1-based.
    pub run: usize,
    /// What the tester measured.
    pub step: StepResult,
    /// Server CPU seconds over the step.
    pub cpu_secs: f64,
    /// A probe's reply carried our cookie (None: not probed).
    pub cookie_echoed: Option<bool>,
}

impl CpuStep {
    /// Server CPU microseconds per valid answer (0 if none).
    pub fn cpu_us_per_answer(&self) -> f64 {
        if self.step.valid == 0 {
            0.0
        } else {
            self.cpu_secs * 1e6 / self.step.valid as f64
        }
    }
}

/// One row of table 3.
#[derive(Debug, Clone, PartialEq)]
pub struct TcpRow {
    /// Server.
    pub server: Kind,
    /// Search bounds used (q/s): upper bound, resolution.
    pub bounds: (u64, u64),
    /// Zero-loss rate without the abuse.
    pub without: u64,
    /// Zero-loss rate with the abuse running.
    pub with: u64,
    /// The searches' steps: without, with.
    pub steps: (Vec<StepResult>, Vec<StepResult>),
    /// What the abuse did.
    pub abuse: AbuseStats,
    /// The same with idle connections reopened (churn): rate, steps, abuse.
    pub churn: Option<(u64, Vec<StepResult>, AbuseStats)>,
}

/// Everything measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttackResult {
    /// The command line.
    pub command: String,
    /// Settings, as text pairs (the report's list).
    pub settings: Vec<(String, String)>,
    /// The same settings as numbers (the JSON's `settings`).
    pub parameters: serde_json::Value,
    /// Table 1.
    pub overload: Vec<OverloadRow>,
    /// Table 2.
    pub cpu: Vec<CpuStep>,
    /// Table 2's offered rate.
    pub cpu_rate: u64,
    /// Table 3.
    pub tcp: Vec<TcpRow>,
    /// Notes (skipped servers, failures).
    pub notes: Vec<String>,
    /// Wall time, seconds.
    pub wall_secs: f64,
    /// Provenance, socket buffers, each server's conditions.
    pub fairness: Fairness,
}

/// Fails with [`AttackError::Interrupted`] once a signal came.
fn check_stop() -> Result<(), AttackError> {
    if STOP.load(Ordering::Relaxed) {
        Err(AttackError::Interrupted)
    } else {
        Ok(())
    }
}

/// Unix seconds now (cookie timestamps are 32-bit).
fn unix_now() -> u32 {
    lode_io::clock::unix_now() as u32
}

/// A seed for the random names: time and PID.
fn seed() -> u64 {
    let t = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ (u64::from(std::process::id()) << 40)
}

/// The state shared by the tables.
struct Bench<'a> {
    cfg: &'a AttackConfig,
    data: DataSet,
    good: Vec<Name>,
    apexes: Vec<Name>,
    logs: PathBuf,
    seed: u64,
    quota: Option<quota::CpuQuota>,
}

impl Bench<'_> {
    fn launch(&self, kind: Kind, tag: &str, guard: Guard) -> Launch {
        let index = match kind {
            Kind::Lode => 0,
            Kind::Knot => 1,
            _ => 2,
        };
        Launch {
            kind,
            port: self.cfg.base_port + index,
            workers: 1,
            zones: self.data.zones(),
            dir: self.cfg.work.join(format!("{kind}-{tag}")),
            log: self.logs.join(format!("{kind}-{tag}.log")),
            cpu: self.cfg.server_cpu,
            lode: self.cfg.lode.clone(),
            update_key: None,
            guard,
            metrics: crate::compare::servers::LodeMetrics::default(),
            socket_buffer: self.cfg.socket_buffer,
        }
    }

    /// What `server` runs with (one worker), as observed now.
    fn observe(server: &Running) -> Conditions {
        fairness::observe(server.kind, 1, &server.pids(), server.addr.port())
    }

    /// Starts `kind` (in the CPU quota's cgroup, if any) and waits until
    /// every zone answers.
    fn start(&self, kind: Kind, tag: &str, guard: Guard) -> Result<Running, AttackError> {
        let mut server = self.launch(kind, tag, guard).start()?;
        if let Some(q) = &self.quota {
            q.add(server.pid()).map_err(AttackError::Config)?;
        }
        let t = server.wait_ready(&self.data.probe, Expect::Answer, self.cfg.load_limit)?;
        for probe in &self.data.all_zones {
            server.wait_ready(probe, Expect::Answer, self.cfg.load_limit)?;
        }
        say(&format!(
            "  {kind}: answering after {:.2} s",
            t.as_secs_f64()
        ));
        Ok(server)
    }

    fn tester(
        &self,
        server: &Running,
        queries: Arc<QuerySet>,
        duration: Duration,
    ) -> Result<Tester, AttackError> {
        let mut rc = RateConfig::new(server.addr);
        rc.ports = self.cfg.ports;
        rc.duration = duration;
        rc.timeout = self.cfg.timeout;
        rc.loss = self.cfg.loss;
        rc.expect = Expect::Answer;
        Ok(Tester::new(rc, queries)?)
    }

    /// The queries of `mix`, enough for a step at `rate`.
    fn mix_set(&self, mix: Mix, rate: u64, salt: u64) -> Result<Arc<QuerySet>, AttackError> {
        let count = (rate as f64 * self.cfg.step.as_secs_f64()).ceil() as usize + 1;
        let set = mix::build(
            mix,
            &self.good,
            &self.apexes,
            count,
            self.seed.wrapping_add(salt << 40),
        )
        .map_err(AttackError::Config)?;
        Ok(Arc::new(set))
    }

    /// A zero-loss search (the RFC 8219 binary search of `lode-bench rate`), every
    /// step logged; a signal stops it before the next step.
    fn search(
        &self,
        tester: &mut Tester,
        high: u64,
        resolution: u64,
    ) -> Result<(u64, bool, Vec<StepResult>), AttackError> {
        let (loss, behind) = (tester.config().loss, tester.config().max_behind);
        let res = binary_search(0, high, resolution, |rate| {
            check_stop()?;
            let r = tester.step(rate)?;
            let ok = r.passed(loss, behind);
            say(&step_line(&r, if ok { "PASS" } else { "FAIL" }, behind));
            Ok::<_, AttackError>((ok, r))
        })?;
        let steps = res.trials.iter().map(|t| t.detail).collect();
        Ok((res.rate, res.hit_ceiling, steps))
    }

    /// Table 1 for one running server.
    fn overload(&self, server: &Running, salt: &mut u64) -> Result<Vec<OverloadRow>, AttackError> {
        let cfg = self.cfg;
        let mut rows = Vec::new();
        for &mix in &cfg.mixes {
            check_stop()?;
            say(&format!(
                "  {}: {} — zero-loss search",
                server.kind,
                mix.name()
            ));
            *salt += 1;
            // Enough distinct names for the search's steps; the overload steps above
            // `high` repeat names of the set.
            let queries = self.mix_set(mix, cfg.high.max(1), *salt)?;
            let mut tester = self.tester(server, queries, cfg.step)?;
            let (r0, hit_ceiling, search) = self.search(&mut tester, cfg.high, cfg.resolution)?;
            say(&format!("  {}: {}: R0 {r0} q/s", server.kind, mix.name()));
            let mut overload = Vec::new();
            if r0 > 0 {
                let behind = tester.config().max_behind;
                for &f in &cfg.overloads {
                    check_stop()?;
                    let rate = (r0 as f64 * f).round() as u64;
                    let s = tester.step(rate)?;
                    say(&step_line(&s, &format!("{f} × R0"), behind));
                    overload.push((f, s));
                }
            }
            rows.push(OverloadRow {
                server: server.kind,
                mix,
                r0,
                hit_ceiling,
                search,
                overload,
            });
        }
        Ok(rows)
    }

    /// Table 3 for one running server; `r0` is its good-names R0 from table 1, if run.
    fn tcp_abuse(&self, server: &Running, r0: Option<u64>) -> Result<TcpRow, AttackError> {
        let cfg = self.cfg;
        let (high, resolution) = match r0 {
            Some(r) if r > 0 => ((r as f64 * 1.25).ceil() as u64, (r / 32).max(1)),
            _ => (cfg.high, cfg.resolution),
        };
        let queries = self.mix_set(Mix::STANDARD[0], high, 0)?;
        let mut tester = self.tester(server, queries.clone(), cfg.step)?;
        say(&format!(
            "  {}: TCP abuse table, search 0..{high} by {resolution}: without",
            server.kind
        ));
        let (without, _, steps_without) = self.search(&mut tester, high, resolution)?;
        check_stop()?;
        let (with, steps_with, stats) =
            self.under_abuse(server, &mut tester, &queries, (high, resolution), false)?;
        let churn = if cfg.churn {
            check_stop()?;
            Some(self.under_abuse(server, &mut tester, &queries, (high, resolution), true)?)
        } else {
            None
        };
        Ok(TcpRow {
            server: server.kind,
            bounds: (high, resolution),
            without,
            with,
            steps: (steps_without, steps_with),
            abuse: stats,
            churn,
        })
    }

    /// A zero-loss search with the TCP abuse running (idle connections reopened
    /// when `reopen_idle`): the rate, the steps, what the abuse did.
    fn under_abuse(
        &self,
        server: &Running,
        tester: &mut Tester,
        queries: &QuerySet,
        (high, resolution): (u64, u64),
        reopen_idle: bool,
    ) -> Result<(u64, Vec<StepResult>, AbuseStats), AttackError> {
        let cfg = self.cfg;
        let (idle, slow, floods) = cfg.abuse;
        let firsts: Vec<&[u8]> = (0..64.min(queries.len())).map(|i| queries.get(i)).collect();
        let steps = AttackConfig::search_steps(high, resolution) as f64;
        let per_step = cfg.step + cfg.timeout + Duration::from_millis(200);
        let limit = per_step.mul_f64(steps * 1.5) + Duration::from_secs(30);
        let abuse = Abuse::start(AbuseConfig {
            server: server.addr,
            idle,
            slow,
            floods,
            connect_rate: cfg.connect_rate,
            reopen_idle,
            limit,
            flood_bytes: tcp::tcp_stream_of(&firsts),
            slow_message: tcp::tcp_stream_of(&firsts[..1]),
        })
        .map_err(|e| AttackError::Config(format!("TCP abuse: {e}")))?;
        // The idle connections are attempted at the connect rate before the search.
        let warm = Duration::from_secs_f64(
            ((idle + slow + floods) as f64 / f64::from(cfg.connect_rate)).min(10.0) + 1.0,
        );
        std::thread::sleep(warm);
        let what = if reopen_idle {
            "with the abuse, idle connections reopened (churn)"
        } else {
            "with the abuse"
        };
        say(&format!("  {}: {what}", server.kind));
        let searched = self.search(tester, high, resolution);
        let stats = abuse
            .stop()
            .map_err(|e| AttackError::Config(format!("TCP abuse: {e}")))?;
        let (rate, _, steps) = searched?;
        say(&format!(
            "  {}: UDP R0 {rate} q/s {what}; abuse: {} attempts, {} established, \
             {} closed by the server, peak open idle/slow/flood {:?}",
            server.kind, stats.attempts, stats.established, stats.closed_by_server, stats.peak_open
        ));
        Ok((rate, steps, stats))
    }

    /// Table 2: rounds × servers × configurations.
    fn cpu(
        &self,
        kinds: &[Kind],
        rate: u64,
        fair: &mut Fairness,
    ) -> Result<Vec<CpuStep>, AttackError> {
        let cfg = self.cfg;
        let secret = lode_cookie::random_secret()
            .map_err(|e| AttackError::Config(format!("cookie secret: {e}")))?;
        let mut client = [0u8; 8];
        client.copy_from_slice(
            &lode_cookie::random_secret()
                .map_err(|e| AttackError::Config(format!("client cookie: {e}")))?[..8],
        );
        let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
        // Valid for an hour: the table takes minutes.
        let option = mix::cookie_option(&secret, &client, ip, unix_now());
        let count = (rate as f64 * cfg.cpu_step.as_secs_f64()).ceil() as usize + 1;
        let queries = Arc::new(mix::with_option(&self.good, count, &option));
        let mut out = Vec::new();
        for run in 1..=cfg.runs {
            for &kind in kinds {
                for mode in GuardMode::ALL {
                    check_stop()?;
                    say(&format!(
                        "  round {run}/{}: {kind}, {}, {rate} q/s",
                        cfg.runs,
                        mode.name()
                    ));
                    let guard = mode.guard(cfg.rrl_rate, secret);
                    let tag = format!("cpu-{}-r{run}", mode.name().replace([' ', '+'], ""));
                    let mut server = self.start(kind, &tag, guard)?;
                    fair.add(kind.name(), &Self::observe(&server));
                    let echoed = probe_cookie(&server, queries.get(0), &client);
                    let expected = mode == GuardMode::RrlCookies;
                    if echoed != Some(expected) {
                        say(&format!(
                            "  {kind} {}: cookie in the reply {echoed:?}, expected {expected}",
                            mode.name()
                        ));
                    }
                    let mut tester = self.tester(&server, queries.clone(), cfg.cpu_step)?;
                    // Warm-up (caches, the RRL table's pages), not counted.
                    let _ = tester.step(rate)?;
                    for _ in 0..cfg.cpu_steps {
                        let pids = server.pids();
                        let before = sys::cpu_ns(&pids);
                        let s = tester.step(rate)?;
                        let after = sys::cpu_ns(&pids);
                        let c = CpuStep {
                            server: kind,
                            mode,
                            run,
                            step: s,
                            cpu_secs: after.saturating_sub(before) as f64 / 1e9,
                            cookie_echoed: echoed,
                        };
                        say(&format!(
                            "    {} of {} answered, server CPU {:.3} s, {:.2} µs/answer",
                            s.valid,
                            s.sent,
                            c.cpu_secs,
                            c.cpu_us_per_answer()
                        ));
                        out.push(c);
                    }
                    server.stop();
                }
            }
        }
        Ok(out)
    }
}

/// Sends `query` once (three tries) and says whether the reply carries our cookie.
fn probe_cookie(server: &Running, query: &[u8], client: &[u8; 8]) -> Option<bool> {
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").ok()?;
    sock.set_read_timeout(Some(Duration::from_millis(300)))
        .ok()?;
    let mut buf = [0u8; 4096];
    for id in [0x4b01u16, 0x4b02, 0x4b03] {
        let mut q = query.to_vec();
        q.get_mut(..2)?.copy_from_slice(&id.to_be_bytes());
        sock.send_to(&q, server.addr).ok()?;
        if let Ok((n, _)) = sock.recv_from(&mut buf) {
            if n >= 12 && buf[..2] == id.to_be_bytes() {
                return Some(mix::has_cookie(&buf[..n], client));
            }
        }
    }
    None
}

/// One step as a progress line.
fn step_line(r: &StepResult, verdict: &str, max_behind: f64) -> String {
    format!(
        "    {:>8} q/s: sent {} valid {} late {} wrong {} unanswered {} — offered {:.0}, \
         answered {:.0} q/s {verdict}{}",
        r.rate,
        r.sent,
        r.valid,
        r.late,
        r.wrong,
        r.unanswered(),
        r.achieved_rate,
        r.answered_qps(),
        if r.tester_ok(max_behind) {
            ""
        } else {
            " (tester behind schedule)"
        }
    )
}

/// Good names: the first `limit` lines of the existing-names query file.
fn read_names(path: &Path, limit: usize) -> Result<Vec<Name>, AttackError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| AttackError::Compare(crate::compare::CompareError::io(path, e)))?;
    let mut names = Vec::new();
    for line in text.lines().take(limit) {
        let Some(n) = line.split_whitespace().next() else {
            continue;
        };
        let name = Name::parse(n, Some(&Name::root()))
            .map_err(|e| AttackError::Config(format!("{}: {n}: {e}", path.display())))?;
        names.push(name);
    }
    if names.is_empty() {
        return Err(AttackError::Config(format!("{}: no names", path.display())));
    }
    Ok(names)
}

/// The settings recorded in the report.
fn settings(cfg: &AttackConfig, zones: u64) -> Vec<(String, String)> {
    let (i, s, f) = cfg.abuse;
    vec![
        (
            "set".into(),
            format!("{} ENUM records in {zones} zones (`lode-bench gen enum`)", cfg.records),
        ),
        (
            "pinning".into(),
            format!(
                "server on CPU {}, one worker{}; tester (and the TCP abuse) on CPU {}",
                cfg.server_cpu,
                match cfg.cpu_quota {
                    Some(p) => format!(
                        ", limited to {p} % of that CPU (a cgroup, CFS quota per 10 ms) so that the tester can offer 2 × its zero-loss rate"
                    ),
                    None => String::new(),
                },
                cfg.tester_cpu
            ),
        ),
        (
            "steps".into(),
            format!(
                "{:.1} s, reply timeout {} ms, {} source ports, no EDNS (table 2: EDNS with COOKIE)",
                cfg.step.as_secs_f64(),
                cfg.timeout.as_millis(),
                cfg.ports
            ),
        ),
        (
            "zero-loss search".into(),
            format!(
                "RFC 8219 binary search 0..{} q/s by {}; a step passes when at most {} % of its \
                 queries lack a valid reply within the timeout and the tester kept its schedule",
                cfg.high,
                cfg.resolution,
                cfg.loss * 100.0
            ),
        ),
        (
            "table 2".into(),
            format!(
                "{} round(s), {} step(s) of {:.1} s per configuration after a warm-up step; \
                 RRL rate-limit {} (nothing limited)",
                cfg.runs,
                cfg.cpu_steps,
                cfg.cpu_step.as_secs_f64(),
                cfg.rrl_rate
            ),
        ),
        (
            "table 3 abuse".into(),
            format!(
                "{i} idle connections attempted once, {s} slow senders (length prefix, then \
                 1 byte/s), {f} pipelined floods (never read); {} connects/s at most; slow \
                 senders and floods the server closes are reopened{}",
                cfg.connect_rate,
                if cfg.churn {
                    "; a third search reopens the idle ones too (churn)"
                } else {
                    ""
                }
            ),
        ),
    ]
}

/// The settings as numbers, for attack.json (units in the keys).
fn parameters(cfg: &AttackConfig, zones: u64) -> serde_json::Value {
    let (idle, slow, floods) = cfg.abuse;
    serde_json::json!({
        "servers": cfg.servers.iter().map(|k| k.name()).collect::<Vec<_>>(),
        "tables": cfg.tables,
        "records": cfg.records,
        "zones": zones,
        "server_cpu": cfg.server_cpu,
        "tester_cpu": cfg.tester_cpu,
        "cpu_quota_percent": cfg.cpu_quota,
        "step_secs": cfg.step.as_secs_f64(),
        "timeout_ms": cfg.timeout.as_millis() as u64,
        "source_ports": cfg.ports,
        "search_high_qps": cfg.high,
        "search_resolution_qps": cfg.resolution,
        "loss_allowed": cfg.loss,
        "overload_factors": cfg.overloads,
        "mixes_random_per_good": cfg.mixes.iter().map(|m| m.random_per_good).collect::<Vec<_>>(),
        "cpu_rate_qps": cfg.cpu_rate,
        "cpu_step_secs": cfg.cpu_step.as_secs_f64(),
        "cpu_steps": cfg.cpu_steps,
        "runs": cfg.runs,
        "rrl_rate": cfg.rrl_rate,
        "abuse_idle": idle,
        "abuse_slow": slow,
        "abuse_floods": floods,
        "connect_rate": cfg.connect_rate,
        "churn": cfg.churn,
        "socket_buffer_bytes": cfg.socket_buffer,
    })
}

/// Runs the benchmark and writes the report; returns what was measured.
pub fn run(cfg: &AttackConfig) -> Result<AttackResult, AttackError> {
    cfg.check()?;
    let wall = Instant::now();
    let (zones, prefix) = seed_layout(cfg.records);
    let mut result = AttackResult {
        command: cfg.command.clone(),
        settings: settings(cfg, zones),
        parameters: parameters(cfg, zones),
        ..AttackResult::default()
    };
    let servers = available_servers(&cfg.servers, &cfg.servers, cfg.install, &mut result.notes)?;
    let peers: Vec<&str> = servers
        .iter()
        .filter_map(|k| k.program())
        .map(|p| p.0)
        .collect();
    // Restored when this function returns (also on errors); a first signal stops
    // the run after its step, a second at once.
    let stop = (
        &STOP,
        "stopping after this step; servers are stopped (again: at once)",
    );
    let (fair, _buffers) =
        fairness::start(&cfg.lode, &peers, cfg.socket_buffer, &servers, Some(stop))
            .map_err(AttackError::Config)?;
    result.fairness = fair;
    let logs = cfg.out.join("logs");
    std::fs::create_dir_all(&logs)
        .map_err(|e| AttackError::Compare(crate::compare::CompareError::io(&logs, e)))?;
    // Room for the tester's sockets and the abuse's.
    let (i, s, f) = cfg.abuse;
    crate::rate::raise_nofile((cfg.ports + i + s + f + 512) as u64)?;
    pin_self(cfg.tester_cpu)?;
    say(&format!(
        "generating {} records in {zones} zones; about {:.0} s in all",
        cfg.records,
        cfg.expected_secs()
    ));
    let data = make_set(
        &cfg.work.join("data"),
        SetSpec {
            records: cfg.records,
            zones,
            prefix,
            shared_naptr: None,
            queries: None,
        },
    )?;
    let good = read_names(&data.set.query_files[0], cfg.records as usize)?;
    let apexes = data
        .zones()
        .iter()
        .map(|(a, _)| Name::parse(a, Some(&Name::root())))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| AttackError::Config(format!("zone name: {e}")))?;
    let quota = match cfg.cpu_quota {
        Some(p) => Some(
            quota::CpuQuota::new(&format!("lode-attack-{}", std::process::id()), p)
                .map_err(|e| AttackError::Config(format!("--cpu-quota: {e}")))?,
        ),
        None => None,
    };
    let bench = Bench {
        cfg,
        data,
        good,
        apexes,
        logs,
        seed: seed(),
        quota,
    };
    let mut salt = 0u64;
    let outcome = (|| -> Result<(), AttackError> {
        if cfg.wants(1) || cfg.wants(3) {
            for &kind in &servers {
                check_stop()?;
                say(&format!("{kind}: tables 1 and 3"));
                let server = match bench.start(kind, "attack", Guard::default()) {
                    Ok(s) => s,
                    Err(e) => {
                        result.notes.push(format!("{kind}: {e}"));
                        continue;
                    }
                };
                result.fairness.add(kind.name(), &Bench::observe(&server));
                if cfg.wants(1) {
                    let rows = bench.overload(&server, &mut salt)?;
                    result.overload.extend(rows);
                }
                if cfg.wants(3) {
                    let r0 = result
                        .overload
                        .iter()
                        .find(|r| r.server == kind && r.mix.random_per_good == 0)
                        .map(|r| r.r0);
                    result.tcp.push(bench.tcp_abuse(&server, r0)?);
                }
                let drops = Bench::observe(&server).drops;
                result.fairness.set_drops(kind.name(), drops);
                drop(server);
                result.wall_secs = wall.elapsed().as_secs_f64();
                report::write(&cfg.out, &result)?;
            }
        }
        if cfg.wants(2) {
            let kinds: Vec<Kind> = servers
                .iter()
                .copied()
                .filter(|k| matches!(k, Kind::Lode | Kind::Knot))
                .collect();
            let rate = if cfg.cpu_rate > 0 {
                cfg.cpu_rate
            } else {
                result
                    .overload
                    .iter()
                    .filter(|r| r.mix.random_per_good == 0 && kinds.contains(&r.server))
                    .map(|r| r.r0 / 2)
                    .filter(|&r| r > 0)
                    .min()
                    .unwrap_or(20_000)
            };
            result.cpu_rate = rate;
            say(&format!("table 2: CPU per answer at {rate} q/s"));
            result.cpu = bench.cpu(&kinds, rate, &mut result.fairness)?;
        }
        Ok(())
    })();
    if let Err(e) = &outcome {
        result.notes.push(format!("stopped early: {e}"));
    }
    result.wall_secs = wall.elapsed().as_secs_f64();
    report::write(&cfg.out, &result)?;
    outcome.map(|()| result)
}
