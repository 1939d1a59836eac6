//! Updates side by side: Lode, Knot DNS and BIND 9 on the same ENUM
//! zones with the same TSIG key, interleaved run by run, server on one CPU, tester
//! on another.
//!
//! ```text
//!  gen enum (prefix 1212: suffixes ≥ 500000 free) ─▶ zone files parsed once (UpdatePlan)
//!  for run: for server: start with journal + key in a fresh folder ─▶ fdatasync probe there
//!    ─▶ target 3: zero-loss query rate at 0, 10, 100, 1000, 5000 updates/s (UDP stream)
//!    ─▶ target 1: closed-loop durable updates, N TCP clients, single-RR, TSIG (numbers 500000..)
//!    ─▶ target 2+4: `lode update` bulk load (numbers 800000.., batches) while fixed-rate
//!       query steps measure latency p99.9 (Lode: its log shows the compactions) ─▶ stop
//!  report: updates.md, updates.json (with compare's conditions and provenance)
//! ```
//!
//! The socket buffer sysctls are set for the run and restored as in `compare`
//! ([`super::fairness`]); each server's buffers, CPUs and workers are read once it
//! answers, its sockets' drops before it stops.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::fairness::{self, Fairness};
use super::servers::{Kind, Launch};
use super::{install_missing, make_set, pin_self, say, CompareError, SetSpec};
use crate::durable::{self, DurableConfig, DurableResult, FsyncProbe};
use crate::query::{Expect, QuerySet};
use crate::rate::{RateConfig, StepResult, Tester};
use crate::update::{during_updates, UpdateConfig, UpdatePlan};
use lode_wire::Name;

mod report;
pub use report::{summarize, to_json, to_markdown, write, UpdSummary};

/// First number (suffix in every zone) of the closed-loop updates.
pub const DURABLE_FIRST: u64 = 500_000;
/// First number of the bulk load (the closed-loop updates stop before it).
pub const BULK_FIRST: u64 = 800_000;
/// Digits of the numbers below a zone apex (`lode-bench gen enum --prefix 1212`, 10 zones).
pub const SUFFIX_DIGITS: usize = 6;

/// Settings of an update comparison.
#[derive(Debug, Clone)]
pub struct UpdCompareConfig {
    /// Results folder.
    pub out: PathBuf,
    /// Scratch folder (zones, server folders with their journals: the disk measured).
    pub work: PathBuf,
    /// The lode binary (Lode itself and the `lode update` bulk client).
    pub lode: PathBuf,
    /// Servers (lode, knot, bind), in run order.
    pub servers: Vec<Kind>,
    /// ENUM records of the set (10 zones, prefix 1212).
    pub records: u64,
    /// Rounds.
    pub runs: usize,
    /// The TSIG key of every update.
    pub key: lode_tsig::Key,
    /// Closed-loop clients (target 1).
    pub clients: usize,
    /// Seconds of the closed-loop run (0: none).
    pub durable: Duration,
    /// Seconds of the fdatasync probe.
    pub fsync: Duration,
    /// Update rates of the query-rate searches (0 = static).
    pub update_rates: Vec<f64>,
    /// Seconds per query-rate step.
    pub step: Duration,
    /// Upper bound of the searches (q/s).
    pub high: u64,
    /// Resolution of the searches.
    pub resolution: u64,
    /// Query reply timeout.
    pub timeout: Duration,
    /// New numbers of the bulk load (0: none); a multiple of the zone count.
    pub bulk: u64,
    /// Records per bulk message, messages in flight, connections (`lode update -b -w -c`).
    pub bulk_shape: (usize, usize, usize),
    /// Offered query rate during the bulk load and its static twin (0: no stall steps).
    pub stall_rate: u64,
    /// Longest bulk load.
    pub bulk_limit: Duration,
    /// CPU of the server.
    pub server_cpu: usize,
    /// CPU of the tester.
    pub tester_cpu: usize,
    /// Port of the servers (one at a time).
    pub port: u16,
    /// Longest wait for a server's first answer.
    pub load_limit: Duration,
    /// Install missing packages.
    pub install: bool,
    /// Socket buffers of every server, bytes as the kernel accounts them: the
    /// kernel's defaults for the run, and Lode's and BIND's own options (None: untouched).
    pub socket_buffer: Option<u64>,
}

/// Zones of the update comparison's set.
pub const ZONES: u64 = 10;
/// Number prefix of the set.
pub const PREFIX: &str = "1212";

impl UpdCompareConfig {
    /// Checks the settings.
    pub fn check(&self) -> Result<(), CompareError> {
        let bad = |s: &str| Err(CompareError::Config(s.into()));
        if self.servers.is_empty()
            || self
                .servers
                .iter()
                .any(|k| !matches!(k, Kind::Lode | Kind::Knot | Kind::Bind))
        {
            return bad("update servers: lode, knot, bind");
        }
        if self.records < ZONES || self.records / ZONES > DURABLE_FIRST {
            return bad("records: 10 to 5,000,000 (10 zones, at most 500,000 numbers each)");
        }
        if self.runs == 0 || self.clients == 0 || self.clients > durable::MAX_CLIENTS {
            return bad("runs and clients must be positive");
        }
        if self.update_rates.iter().any(|r| !(0.0..=1e6).contains(r)) {
            return bad("update rates: 0 to 1,000,000 per second");
        }
        if !self.bulk.is_multiple_of(ZONES)
            || self.bulk / ZONES > 10u64.pow(SUFFIX_DIGITS as u32) - BULK_FIRST
        {
            return bad("bulk: a multiple of 10, at most 2,000,000");
        }
        let (b, w, c) = self.bulk_shape;
        if b == 0 || b > 1000 || w == 0 || c == 0 {
            return bad("bulk batch 1..=1000, window and connections ≥ 1");
        }
        if self.high == 0 || self.resolution == 0 {
            return bad("high and resolution must be positive");
        }
        Ok(())
    }
}

/// One zero-loss search under an update stream.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UnderUpdates {
    /// Update rate asked for (per second; 0 = none).
    pub update_rate: f64,
    /// Zero-loss query rate (q/s).
    pub qps: u64,
    /// The upper bound passed.
    pub hit_ceiling: bool,
    /// Updates sent and acknowledged (NOERROR), and their seconds.
    pub updates: (u64, u64, f64),
    /// p99 latency of accepted updates, µs.
    pub update_p99_us: u64,
}

/// The bulk load and the query latency around it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bulk {
    /// Records acknowledged.
    pub records: u64,
    /// Seconds of the whole load (the client's own times, zone after zone).
    pub secs: f64,
    /// The bulk client's exit statuses were all 0.
    pub ok: bool,
    /// Fixed-rate steps before the load: (valid/sent, p99.9 µs).
    pub static_steps: Vec<(u64, u64, u64)>,
    /// Fixed-rate steps during the load: (valid, sent, p99.9 µs).
    pub load_steps: Vec<(u64, u64, u64)>,
    /// Compactions Lode logged during the run (None: not Lode).
    pub compactions: Option<u64>,
}

impl Bulk {
    /// Records per second.
    pub fn rate(&self) -> f64 {
        durable::per_sec(self.records, self.secs)
    }

    /// Highest p99.9 of the static steps and of the steps during the load.
    pub fn p999(&self) -> (u64, u64) {
        let max = |v: &[(u64, u64, u64)]| v.iter().map(|s| s.2).max().unwrap_or(0);
        (max(&self.static_steps), max(&self.load_steps))
    }
}

/// One run of one server.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdRun {
    /// Server name.
    pub server: String,
    /// Round, 1-based.
    pub run: usize,
    /// Seconds to the first answer.
    pub load_secs: f64,
    /// The journal disk's fdatasync rate, measured in the server's folder.
    pub fsync: FsyncProbe,
    /// Target 3.
    pub under_updates: Vec<UnderUpdates>,
    /// Target 1.
    pub durable: Option<DurableResult>,
    /// Targets 2 and 4.
    pub bulk: Option<Bulk>,
    /// Why the run stopped early.
    pub error: Option<String>,
    /// Buffers, CPUs and workers it ran with (observed once it answered; drops at
    /// the end of the run).
    pub conditions: Option<fairness::Conditions>,
}

/// Everything measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdCompareResult {
    /// Settings as text (the report's list).
    pub settings: Vec<(String, String)>,
    /// The same settings as numbers (the JSON's `settings`).
    pub parameters: serde_json::Value,
    /// Every run.
    pub runs: Vec<UpdRun>,
    /// Notes.
    pub notes: Vec<String>,
    /// Wall time, seconds.
    pub wall_secs: f64,
    /// Provenance, socket buffers, each server's first conditions.
    pub fairness: Fairness,
}

/// The bulk input of zone `z`: `count` numbers from [`BULK_FIRST`], enum-csv lines.
pub fn bulk_csv(prefix: &str, z: u64, count: u64) -> String {
    let mut s = String::with_capacity(count as usize * 60);
    for i in 0..count {
        let n = BULK_FIRST + i;
        s.push_str(&format!(
            "+{prefix}{z}{n:0w$},sip:+{prefix}{z}{n:0w$}@bulk.example.net\n",
            w = SUFFIX_DIGITS
        ));
    }
    s
}

/// `… N records in M messages acknowledged, S s, …` from `lode update`'s summary.
pub fn parse_bulk_summary(text: &str) -> Option<(u64, f64)> {
    let line = text.lines().rev().find(|l| l.contains("acknowledged, "))?;
    let rest = line.split("lode update: ").nth(1).unwrap_or(line);
    let records: u64 = rest.split_whitespace().next()?.parse().ok()?;
    let after = line.split("acknowledged, ").nth(1)?;
    let secs: f64 = after.split_whitespace().next()?.parse().ok()?;
    Some((records, secs))
}

/// The settings as numbers, for updates.json (units in the keys).
fn parameters(cfg: &UpdCompareConfig) -> serde_json::Value {
    let (batch, window, connections) = cfg.bulk_shape;
    serde_json::json!({
        "servers": cfg.servers.iter().map(|k| k.name()).collect::<Vec<_>>(),
        "records": cfg.records,
        "zones": ZONES,
        "runs": cfg.runs,
        "key": {"name": cfg.key.name().to_string(), "algorithm": cfg.key.algorithm().to_string()},
        "clients": cfg.clients,
        "durable_secs": cfg.durable.as_secs_f64(),
        "fsync_secs": cfg.fsync.as_secs_f64(),
        "update_rates_per_sec": cfg.update_rates,
        "step_secs": cfg.step.as_secs_f64(),
        "search_high_qps": cfg.high,
        "search_resolution_qps": cfg.resolution,
        "timeout_ms": cfg.timeout.as_millis() as u64,
        "bulk_records": cfg.bulk,
        "bulk_batch": batch,
        "bulk_window": window,
        "bulk_connections": connections,
        "bulk_limit_secs": cfg.bulk_limit.as_secs_f64(),
        "stall_rate_qps": cfg.stall_rate,
        "server_cpu": cfg.server_cpu,
        "tester_cpu": cfg.tester_cpu,
        "socket_buffer_bytes": cfg.socket_buffer,
        "journal_disk": cfg.work.display().to_string(),
    })
}

/// Runs the comparison; the report is rewritten after every round.
pub fn run(cfg: &UpdCompareConfig) -> Result<UpdCompareResult, CompareError> {
    cfg.check()?;
    let wall = Instant::now();
    let mut result = UpdCompareResult {
        settings: vec![
            (
                "set".into(),
                format!("{} ENUM records, 10 zones, prefix {PREFIX}", cfg.records),
            ),
            (
                "key".into(),
                format!("{} {}", cfg.key.name(), cfg.key.algorithm()),
            ),
            (
                "target 1".into(),
                format!(
                    "{} TCP clients, 1 update in flight each, single-RR adds, {:.0} s",
                    cfg.clients,
                    cfg.durable.as_secs_f64()
                ),
            ),
            (
                "target 3".into(),
                format!(
                    "update rates {:?}/s (UDP, adds/deletes/changes), {:.1} s steps, \
                     search to {} q/s by {}",
                    cfg.update_rates,
                    cfg.step.as_secs_f64(),
                    cfg.high,
                    cfg.resolution
                ),
            ),
            (
                "bulk".into(),
                format!(
                    "{} new numbers with `lode update -b {} -w {} -c {}`, zone after zone; \
                     query steps at {} q/s",
                    cfg.bulk, cfg.bulk_shape.0, cfg.bulk_shape.1, cfg.bulk_shape.2, cfg.stall_rate
                ),
            ),
            (
                "pinning".into(),
                format!(
                    "server CPU {}, tester CPU {}",
                    cfg.server_cpu, cfg.tester_cpu
                ),
            ),
            ("journal disk".into(), cfg.work.display().to_string()),
        ],
        parameters: parameters(cfg),
        ..UpdCompareResult::default()
    };
    if cfg.install {
        let installed = install_missing(&cfg.servers)?;
        if !installed.is_empty() {
            result
                .notes
                .push(format!("installed: {}", installed.join(" ")));
        }
    }
    let peers: Vec<&str> = cfg
        .servers
        .iter()
        .filter_map(|k| k.program())
        .map(|p| p.0)
        .collect();
    // Written back when this function returns (also on errors) or on a signal.
    let (fair, _buffers) =
        fairness::start(&cfg.lode, &peers, cfg.socket_buffer, &cfg.servers, None)
            .map_err(CompareError::Config)?;
    result.fairness = fair;
    std::fs::create_dir_all(&cfg.out).map_err(|e| CompareError::io(&cfg.out, e))?;
    let logs = cfg.out.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| CompareError::io(&logs, e))?;
    say(&format!("generating {} records", cfg.records));
    let set = make_set(
        &cfg.work.join("set"),
        SetSpec {
            records: cfg.records,
            zones: ZONES,
            prefix: Some(PREFIX.into()),
            shared_naptr: None,
            queries: Some(1000),
        },
    )?;
    let zones = set.zones();
    let apexes: Vec<Name> = zones
        .iter()
        .map(|(a, _)| Name::parse(a, Some(&Name::root())))
        .collect::<Result<_, _>>()
        .map_err(|e| CompareError::Config(format!("zone name: {e}")))?;
    // The update stream of target 3: enough names for the fastest phase of every rate.
    let top_rate = cfg.update_rates.iter().cloned().fold(0.0, f64::max);
    let steps = 2 + (cfg.high / cfg.resolution).max(1).ilog2() as u64 + 1;
    let phase =
        cfg.step.mul_f64(steps as f64) + (cfg.timeout + Duration::from_millis(100)) * steps as u32;
    let per_phase = (top_rate * phase.as_secs_f64()).ceil() as u64 + 1;
    let total_updates: u64 = cfg
        .update_rates
        .iter()
        .map(|r| (r * phase.as_secs_f64()).ceil() as u64 + 1)
        .sum();
    say(&format!(
        "reading the zones for the update stream ({total_updates} updates, {per_phase} in the fastest phase)"
    ));
    let refs: Vec<(Name, &Path)> = apexes
        .iter()
        .cloned()
        .zip(zones.iter().map(|(_, f)| f.as_path()))
        .collect();
    let plan = UpdatePlan::from_files(&refs, total_updates + 1)
        .map_err(|e| CompareError::Config(e.to_string()))?;
    let queries = Arc::new(plan.queries(
        (cfg.high as f64 * cfg.step.as_secs_f64()).ceil() as usize + 1,
        false,
    ));
    // Bulk inputs, one CSV per zone.
    let per_zone = cfg.bulk / ZONES;
    let bulk_dir = cfg.work.join("bulk");
    if per_zone > 0 {
        std::fs::create_dir_all(&bulk_dir).map_err(|e| CompareError::io(&bulk_dir, e))?;
        for z in 0..ZONES {
            let p = bulk_dir.join(format!("zone{z}.csv"));
            std::fs::write(&p, bulk_csv(PREFIX, z, per_zone))
                .map_err(|e| CompareError::io(&p, e))?;
        }
    }
    pin_self(cfg.tester_cpu)?;
    for run in 1..=cfg.runs {
        for &kind in &cfg.servers {
            say(&format!("run {run}: {kind}"));
            let tag = format!("upd-{kind}-r{run}");
            let dir = cfg.work.join(&tag);
            let _ = std::fs::remove_dir_all(&dir);
            let launch = Launch {
                kind,
                port: cfg.port,
                workers: 1,
                zones: zones.clone(),
                dir: dir.clone(),
                log: logs.join(format!("{tag}.log")),
                cpu: cfg.server_cpu,
                lode: cfg.lode.clone(),
                update_key: Some(cfg.key.clone()),
                guard: super::servers::Guard::default(),
                metrics: super::servers::LodeMetrics::default(),
                socket_buffer: cfg.socket_buffer,
            };
            let mut r = UpdRun {
                server: kind.name().into(),
                run,
                ..UpdRun::default()
            };
            if let Err(e) = one_run(cfg, &launch, &apexes, &plan, &queries, &bulk_dir, &mut r) {
                say(&format!("{kind} run {run}: {e}"));
                r.error = Some(e.to_string());
            }
            if let Some(c) = &r.conditions {
                result.fairness.add(&r.server, c);
            }
            result.runs.push(r);
            let _ = std::fs::remove_dir_all(&dir);
        }
        result.wall_secs = wall.elapsed().as_secs_f64();
        write(&cfg.out, &result)?;
    }
    Ok(result)
}

/// One server, one round: start, fsync probe, target 3, target 1, bulk + stall, stop.
fn one_run(
    cfg: &UpdCompareConfig,
    launch: &Launch,
    apexes: &[Name],
    plan: &UpdatePlan,
    queries: &Arc<QuerySet>,
    bulk_dir: &Path,
    r: &mut UpdRun,
) -> Result<(), CompareError> {
    let mut server = launch.start()?;
    if queries.is_empty() {
        return Err(CompareError::Config("no names to query".into()));
    }
    r.load_secs = server
        .wait_ready(queries, Expect::Answer, cfg.load_limit)?
        .as_secs_f64();
    say(&format!("  ready in {:.1} s", r.load_secs));
    let port = server.addr.port();
    r.conditions = Some(fairness::observe(launch.kind, 1, &server.pids(), port));
    r.fsync = durable::fsync_probe(&launch.dir, cfg.fsync)
        .map_err(|e| CompareError::Tester(e.to_string()))?;
    say(&format!("  fsync probe: {}", r.fsync));
    let mut rc = RateConfig::new(server.addr);
    rc.duration = cfg.step;
    rc.timeout = cfg.timeout;
    rc.expect = Expect::Answer;
    let mut tester = Tester::new(rc, queries.clone())?;
    // Target 3.
    let mut plan = plan.clone();
    let mut cursor = 0u64;
    let steps = 2 + (cfg.high / cfg.resolution).max(1).ilog2() as u64 + 1;
    let phase =
        cfg.step.mul_f64(steps as f64) + (cfg.timeout + Duration::from_millis(100)) * steps as u32;
    for &rate in &cfg.update_rates {
        let mut u = UnderUpdates {
            update_rate: rate,
            ..UnderUpdates::default()
        };
        let search = |t: &mut Tester| t.search(0, cfg.high, cfg.resolution, |_, _| {});
        if rate <= 0.0 {
            let s = search(&mut tester)?;
            u.qps = s.rate;
            u.hit_ceiling = s.hit_ceiling;
        } else {
            let ucfg = UpdateConfig {
                server: server.addr,
                rate,
                count: (rate * phase.as_secs_f64()).ceil() as u64 + 1,
                first: cursor,
                timeout: Duration::from_secs(2),
                key: Some(cfg.key.clone()),
            };
            let (s, up) = during_updates(&ucfg, &mut plan, phase + Duration::from_secs(1), || {
                search(&mut tester)
            });
            let s = s?;
            let up = up.map_err(|e| CompareError::Tester(e.to_string()))?;
            cursor += up.sent;
            u.qps = s.rate;
            u.hit_ceiling = s.hit_ceiling;
            u.updates = (up.sent, up.ok(), up.secs);
            u.update_p99_us = up.latency_us[1];
            if let Some(why) = up.refusal() {
                return Err(CompareError::Server(format!("{}: {why}", launch.kind)));
            }
        }
        say(&format!(
            "  {rate} updates/s: zero-loss {} q/s (updates sent {}, accepted {})",
            u.qps, u.updates.0, u.updates.1
        ));
        r.under_updates.push(u);
    }
    // Target 1.
    if !cfg.durable.is_zero() {
        let dc = DurableConfig {
            server: server.addr,
            zones: apexes.to_vec(),
            clients: cfg.clients,
            batch: 1,
            window: 1,
            duration: cfg.durable,
            timeout: Duration::from_secs(10),
            key: Some(cfg.key.clone()),
            first: DURABLE_FIRST,
            digits: SUFFIX_DIGITS,
            end: Some(BULK_FIRST),
        };
        let d = durable::run(&dc, &AtomicBool::new(false))
            .map_err(|e| CompareError::Tester(e.to_string()))?;
        say(&format!(
            "  durable: {:.0} updates/s ({} acknowledged, {:.1} s, p99 {} µs){}",
            d.updates_per_sec(),
            d.acked,
            d.secs,
            d.latency_us[1],
            d.first_error
                .as_ref()
                .map_or(String::new(), |e| format!("; first error: {e}"))
        ));
        r.durable = Some(d);
    }
    // Targets 2 and 4.
    if cfg.bulk > 0 {
        let log = (launch.kind == Kind::Lode).then_some(launch.log.as_path());
        let b = bulk(cfg, &server.addr, &mut tester, apexes, bulk_dir, log)?;
        say(&format!(
            "  bulk: {} records in {:.1} s ({:.0}/s); p99.9 static {} µs, during {} µs",
            b.records,
            b.secs,
            b.rate(),
            b.p999().0,
            b.p999().1
        ));
        r.bulk = Some(b);
    }
    let drops = fairness::observe(launch.kind, 1, &server.pids(), port).drops;
    if let Some(c) = r.conditions.as_mut() {
        c.drops = drops;
    }
    server.stop();
    Ok(())
}

/// Fixed-rate query steps: `n` before; then `lode update` zone after zone while steps
/// run until it is done (or the limit passes).
fn bulk(
    cfg: &UpdCompareConfig,
    server: &std::net::SocketAddr,
    tester: &mut Tester,
    apexes: &[Name],
    bulk_dir: &Path,
    lode_log: Option<&Path>,
) -> Result<Bulk, CompareError> {
    let mut b = Bulk {
        ok: true,
        ..Bulk::default()
    };
    let step = |t: &mut Tester| -> Result<StepResult, CompareError> { Ok(t.step(cfg.stall_rate)?) };
    if let Some(log) = lode_log {
        // The static steps must be static: let the compactions the earlier
        // phases started (and the one a quiet zone starts after 5 s) finish.
        wait_for_quiet_compactions(log, Duration::from_secs(300));
    }
    if cfg.stall_rate > 0 {
        for _ in 0..3 {
            let s = step(tester)?;
            b.static_steps.push((s.valid, s.sent, s.latency_p999_us));
        }
    }
    let before = lode_log.map(compactions);
    let start = Instant::now();
    let (bb, bw, bc) = cfg.bulk_shape;
    let mut texts = String::new();
    for (z, apex) in apexes.iter().enumerate() {
        let out = bulk_dir.join(format!("zone{z}.out"));
        let file = std::fs::File::create(&out).map_err(|e| CompareError::io(&out, e))?;
        let mut child = Command::new("taskset")
            .arg("-c")
            .arg(cfg.tester_cpu.to_string())
            .arg(&cfg.lode)
            .args(["update", "-q", "-f", "enum-csv", "-s"])
            .arg(server.to_string())
            .arg("-y")
            .arg(cfg.key.to_spec())
            .arg("-z")
            .arg(apex.to_string())
            .args([
                "-b",
                &bb.to_string(),
                "-w",
                &bw.to_string(),
                "-c",
                &bc.to_string(),
            ])
            .arg(bulk_dir.join(format!("zone{z}.csv")))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .map_err(|e| CompareError::Tester(format!("lode update: {e}")))?;
        let status = loop {
            if let Ok(Some(st)) = child.try_wait() {
                break Some(st);
            }
            if start.elapsed() > cfg.bulk_limit {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            if cfg.stall_rate > 0 {
                let s = step(tester)?;
                b.load_steps.push((s.valid, s.sent, s.latency_p999_us));
            } else {
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        b.ok &= status.is_some_and(|s| s.success());
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        if let Some((n, secs)) = parse_bulk_summary(&text) {
            b.records += n;
            b.secs += secs;
        }
        texts.push_str(&text);
        if status.is_none() {
            break;
        }
    }
    // The client's own times (the query steps may outlast a zone's load).
    if b.secs == 0.0 {
        b.secs = start.elapsed().as_secs_f64();
    }
    if !b.ok {
        let _ = writeln!(std::io::stderr(), "  bulk load failed: {}", texts.trim());
    }
    b.compactions = before
        .zip(lode_log)
        .map(|(n, log)| compactions(log).saturating_sub(n));
    Ok(b)
}

/// Waits (at most `limit`) until Lode's log shows no compaction running and
/// none started or finished for 8 s (a zone quiet for 5 s compacts then).
fn wait_for_quiet_compactions(log: &Path, limit: Duration) {
    let start = Instant::now();
    let mut last = (u64::MAX, u64::MAX);
    let mut since = Instant::now();
    while start.elapsed() < limit {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let now = (
            count_compactions(&text),
            text.lines().filter(|l| l.contains(" compacted ")).count() as u64,
        );
        if now != last {
            last = now;
            since = Instant::now();
        } else if now.0 <= now.1 && since.elapsed() >= Duration::from_secs(8) {
            return;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Compactions Lode logged so far (its `compacting … into a new base` lines).
fn compactions(log: &Path) -> u64 {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    count_compactions(&text)
}

/// Lines of a Lode log that start a compaction.
pub fn count_compactions(log: &str) -> u64 {
    log.lines()
        .filter(|l| l.contains("changed names into a new base"))
        .count() as u64
}

#[cfg(test)]
mod tests;
