//! `lode-bench rollover`: a ZSK rollover of a large signed zone, Lode and
//! Knot DNS side by side — how long until every signature is by the new
//! key, the server CPU it took, and query latency at a fixed rate during
//! the rollover against a step before it.
//!
//! ```text
//!  gen enum (1 zone; kept in --work) ─▶ for server: Spec (pinned, 1 worker, 2 signing threads,
//!    propagation-delay 1, dnskey-ttl 1, zsk-lifetime 0) ─▶ signed at start ─▶ zone-ksk-submitted
//!    ─▶ 5 s ─▶ static step (rate tester) ─▶ CPU₀, zone-key-rollover … zsk ─▶ during step
//!    ─▶ every signature by the new ZSK (log) ─▶ CPU₁, wall ─▶ stop
//!  ─▶ rollover.md, rollover.json
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lode_peers::{Content, Kind, Logging, Ready, Rollover, Server, Signing, Spec, Zone};
use serde_json::{json, Value};

use super::{one_zone, OneZone};
use crate::compare::{pin_self, say};
use crate::gen::enumset::QUERY_FILES;
use crate::provenance::Provenance;
use crate::query::{Expect, QuerySet};
use crate::rate::{RateConfig, StepResult, Tester};
use crate::server_cost::{div, fail, fresh_dir, lode_spec, write_notes, write_report, CostError};

/// Settings of `lode-bench rollover`.
#[derive(Debug, Clone)]
pub struct RolloverConfig {
    /// Report folder.
    pub out: PathBuf,
    /// Scratch folder: the set (kept for the next run) and the servers' folders.
    pub work: PathBuf,
    /// The lode binary measured.
    pub lode: PathBuf,
    /// Servers in run order (Lode, Knot DNS).
    pub servers: Vec<Kind>,
    /// NAPTR records of the zone.
    pub records: u64,
    /// Leading digits of its numbers.
    pub prefix: String,
    /// Queries per second of each step.
    pub rate: u64,
    /// Length of each step.
    pub step: Duration,
    /// Knot's `journal-max-usage` (a whole re-signing is one changeset).
    pub knot_journal: String,
    /// Knot's `journal-db-max-size`.
    pub knot_journal_db: String,
    /// CPU of the server.
    pub server_cpu: usize,
    /// CPU of the rate tester.
    pub tester_cpu: usize,
    /// Port of the server (one at a time) on 127.0.0.1.
    pub port: u16,
    /// Longest wait for the first signing.
    pub sign_limit: Duration,
    /// Longest wait from the rollover until every signature is by the new key.
    pub resign_limit: Duration,
}

/// One fixed-rate step's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Latency {
    /// Percent of the queries sent answered validly within the timeout.
    pub answered_pct: f64,
    /// Latency percentiles, µs: 50th, 99th, 99.9th.
    pub p50: u64,
    /// 99th percentile, µs.
    pub p99: u64,
    /// 99.9th percentile, µs.
    pub p999: u64,
}

impl Latency {
    /// From a rate tester step.
    pub fn of(s: &StepResult) -> Latency {
        Latency {
            answered_pct: div(s.valid as f64 * 100.0, s.sent as f64),
            p50: s.latency_us[0],
            p99: s.latency_us[1],
            p999: s.latency_p999_us,
        }
    }

    /// `answered N % p50 A p99 B p99.9 C µs`.
    pub fn line(&self) -> String {
        format!(
            "answered {:.1} % p50 {} p99 {} p99.9 {} µs",
            self.answered_pct, self.p50, self.p99, self.p999
        )
    }

    fn json(&self) -> Value {
        json!({
            "answered_percent": self.answered_pct,
            "p50_us": self.p50,
            "p99_us": self.p99,
            "p999_us": self.p999,
        })
    }
}

/// One server's rollover.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RolloverRun {
    /// Server name.
    pub server: String,
    /// The step before the rollover.
    pub static_step: Latency,
    /// The step starting with the rollover.
    pub during: Latency,
    /// Seconds from `zone-key-rollover` until every signature is by the new ZSK.
    pub wall_secs: f64,
    /// Server CPU seconds over that time (the step's queries included).
    pub cpu_secs: f64,
}

impl RolloverRun {
    /// The script's lines for the server, and p99.9 during ÷ static.
    pub fn lines(&self, step: Duration) -> Vec<String> {
        vec![
            self.server.clone(),
            format!("  static: {}", self.static_step.line()),
            format!("  during: {}", self.during.line()),
            format!(
                "  rollover to every signature by the new ZSK: {:.1} s wall, {:.1} server CPU s \
                 (the {}-second query step included)",
                self.wall_secs,
                self.cpu_secs,
                step.as_secs_f64()
            ),
            format!(
                "  p99.9 during ÷ static: {:.2}",
                div(self.during.p999 as f64, self.static_step.p999 as f64)
            ),
        ]
    }
}

/// The measurement.
#[derive(Debug, Clone, Default)]
pub struct RolloverResult {
    /// The zone.
    pub zone: String,
    /// Each server, in run order.
    pub runs: Vec<RolloverRun>,
    /// Servers left out, and why.
    pub notes: Vec<String>,
    /// The Markdown report written.
    pub report: PathBuf,
}

impl RolloverResult {
    /// Every line printed.
    pub fn lines(&self, cfg: &RolloverConfig) -> Vec<String> {
        let mut v = vec![heading(cfg, &self.zone)];
        for r in &self.runs {
            v.extend(r.lines(cfg.step));
        }
        if let [l, k] = &self.runs[..] {
            v.push(format!(
                "{}'s rollover CPU ÷ {}'s: {:.2} ×",
                l.server,
                k.server,
                div(l.cpu_secs, k.cpu_secs)
            ));
        }
        v.extend(self.notes.iter().map(|n| format!("note: {n}")));
        v
    }
}

fn heading(cfg: &RolloverConfig, zone: &str) -> String {
    format!(
        "zone {zone}, {} records, {} q/s, steps of {} s",
        cfg.records,
        cfg.rate,
        cfg.step.as_secs_f64()
    )
}

/// The policy of both servers: the new ZSK takes over 2 s after it is published.
fn signing() -> Signing {
    Signing {
        threads: Some(2),
        rollover: Some(Rollover {
            propagation_delay: 1,
            dnskey_ttl: 1,
            zsk_lifetime: 0,
        }),
        ..Signing::default()
    }
}

/// Runs the measurement; the report in `cfg.out`.
pub fn run(cfg: &RolloverConfig) -> Result<RolloverResult, CostError> {
    let provenance = Provenance::collect(Some(&cfg.lode), &["knotd"]);
    let zone = one_zone(&cfg.work, cfg.records, &cfg.prefix)?;
    let mut r = RolloverResult {
        zone: zone.apex.clone(),
        ..RolloverResult::default()
    };
    let mut servers = cfg.servers.clone();
    if servers.contains(&Kind::Knot) && lode_peers::program("knotd").is_none() {
        servers.retain(|k| *k != Kind::Knot);
        r.notes
            .push("Knot not run: knotd is not installed (Debian package knot)".into());
    }
    let needed = (cfg.rate as f64 * cfg.step.as_secs_f64()).ceil() as usize + 1;
    let queries = QuerySet::read_file(&zone.dir.join(QUERY_FILES[0]), needed, false)
        .map_err(|e| CostError(format!("queries: {e}")))?;
    let mut rc = RateConfig::new(([127, 0, 0, 1], cfg.port).into());
    rc.duration = cfg.step;
    rc.timeout = Duration::from_millis(1000);
    rc.expect = Expect::Answer;
    pin_self(cfg.tester_cpu).map_err(|e| CostError(e.to_string()))?;
    let mut tester = Tester::new(rc, Arc::new(queries)).map_err(|e| CostError(e.to_string()))?;
    say(&heading(cfg, &zone.apex));
    for &kind in &servers {
        r.runs.push(measure(cfg, kind, &zone, &mut tester)?);
    }
    let (md, js) = report(cfg, &r);
    r.report = write_report(&cfg.out, "rollover", &md, js, &provenance)?;
    Ok(r)
}

/// One server: signed at start, the KSK submitted, a static step, the
/// rollover with a step during it, until every signature is by the new ZSK.
fn measure(
    cfg: &RolloverConfig,
    kind: Kind,
    zone: &OneZone,
    tester: &mut Tester,
) -> Result<RolloverRun, CostError> {
    let dir = cfg.work.join(kind.name());
    let (spec, done) = match kind {
        Kind::Lode => (lode(cfg, zone, &dir)?, Done::Lode),
        _ => (knot(cfg, zone, &dir)?, Done::Knot),
    };
    say(&format!("{kind}: signing {} at start", zone.apex));
    let err = |e: lode_peers::Error| CostError(format!("{kind}: {e}"));
    let mut server = Server::start(&spec).map_err(err)?;
    let (signed, listening) = done.started();
    server.wait_log(signed, cfg.sign_limit).map_err(CostError)?;
    server
        .wait_log(listening, Duration::from_secs(60))
        .map_err(CostError)?;
    control(
        &cfg.lode,
        &server,
        kind,
        &["zone-ksk-submitted", &zone.apex],
    )?;
    std::thread::sleep(Duration::from_secs(5));
    say(&format!("{kind}: static step"));
    let static_step = step(tester, cfg.rate)?;
    let before = done.count(&server.log());
    let cpu = |s: &mut Server| s.sample().map(|x| x.cpu.as_secs_f64());
    let start = Instant::now();
    let Some(cpu0) = cpu(&mut server) else {
        return fail(format!("{kind} exited; see {}", dir.display()));
    };
    control(
        &cfg.lode,
        &server,
        kind,
        &["zone-key-rollover", &zone.apex, "zsk"],
    )?;
    say(&format!("{kind}: rollover; the step during it"));
    let during = step(tester, cfg.rate)?;
    let deadline = Instant::now() + cfg.resign_limit;
    while done.count(&server.log()) < before + done.events() {
        if Instant::now() > deadline || !server.alive() {
            return fail(format!(
                "{kind}: the signatures were not all by the new ZSK within {:?}; see {}",
                cfg.resign_limit,
                dir.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let wall_secs = start.elapsed().as_secs_f64();
    let Some(cpu1) = cpu(&mut server) else {
        return fail(format!("{kind} exited; see {}", dir.display()));
    };
    server.stop();
    Ok(RolloverRun {
        server: kind.name().into(),
        static_step,
        during,
        wall_secs,
        cpu_secs: cpu1 - cpu0,
    })
}

/// How a server's log tells that it is signed and that the rollover is done.
#[derive(Debug, Clone, Copy)]
enum Done {
    /// "every signature is by the keys of the moment", once.
    Lode,
    /// "DNSSEC, successfully signed" twice: Knot signs the zone whole when
    /// the new ZSK is published and again when it takes over (2 s later).
    Knot,
}

impl Done {
    /// The lines of the first signing and of the control socket's readiness.
    fn started(self) -> (&'static str, &'static str) {
        match self {
            Done::Lode => ("signed whole", "serving 1 zone"),
            Done::Knot => ("DNSSEC, successfully signed", "control, binding"),
        }
    }

    fn line(self) -> &'static str {
        match self {
            Done::Lode => "every signature is by the keys of the moment",
            Done::Knot => "DNSSEC, successfully signed",
        }
    }

    fn events(self) -> usize {
        match self {
            Done::Lode => 1,
            Done::Knot => 2,
        }
    }

    fn count(self, log: &str) -> usize {
        log.matches(self.line()).count()
    }
}

/// A fixed-rate step: what was answered and its latency.
fn step(tester: &mut Tester, rate: u64) -> Result<Latency, CostError> {
    let s = tester
        .step(rate)
        .map_err(|e| CostError(format!("rate tester: {e}")))?;
    Ok(Latency::of(&s))
}

/// Lode pinned with one worker, the zone from the set, its control socket in its folder.
fn lode(cfg: &RolloverConfig, zone: &OneZone, dir: &Path) -> Result<Spec, CostError> {
    let mut spec = lode_spec(&cfg.lode, cfg.port, dir, cfg.sign_limit)?;
    spec.cpus = vec![cfg.server_cpu];
    spec.server_extra = "zonefile-sync = -1\n".into();
    Ok(spec.zone(Zone::primary(&zone.apex, Content::File(zone.file.clone())).signed(signing())))
}

/// Knot pinned with one UDP and one TCP worker and two background workers,
/// its own copy of the zone, loaded whole, a journal of changes.
fn knot(cfg: &RolloverConfig, zone: &OneZone, dir: &Path) -> Result<Spec, CostError> {
    fresh_dir(dir)?;
    let mut spec = Spec::new(Kind::Knot, cfg.port).stop_with_parent();
    spec.dir = Some(dir.to_path_buf());
    spec.logging = Logging::Verbose;
    spec.cpus = vec![cfg.server_cpu];
    spec.workers = Some(1);
    spec.tcp_workers = Some(1);
    spec.background_workers = Some(2);
    spec.template_extra = format!(
        "    zonefile-load: whole\n    journal-max-usage: {}\n",
        cfg.knot_journal
    );
    spec.sections = format!(
        "database:\n    journal-db-max-size: {}\n",
        cfg.knot_journal_db
    );
    spec.ready = Ready::Zones;
    spec.ready_timeout = cfg.sign_limit;
    spec.stop_grace = Duration::from_secs(10);
    Ok(spec.zone(Zone::primary(&zone.apex, Content::Copy(zone.file.clone())).signed(signing())))
}

/// `lode ARGS --control SOCKET` or `knotc -s SOCKET ARGS`.
fn control(lode: &Path, server: &Server, kind: Kind, args: &[&str]) -> Result<(), CostError> {
    if kind == Kind::Knot {
        return server.knotc(args).map(|_| ()).map_err(CostError);
    }
    let out = Command::new(lode)
        .args(args)
        .arg("--control")
        .arg(server.dir().join("ctl.sock"))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| CostError(format!("lode {}: {e}", args[0])))?;
    if !out.status.success() {
        return fail(format!(
            "lode {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// The report: settings, a table of the servers, the notes.
fn report(cfg: &RolloverConfig, r: &RolloverResult) -> (String, Value) {
    let mut m = format!(
        "# ZSK rollover of a large zone\n\n{} NAPTR records in {} (prefix {}), ECDSA P-256, \
         NSEC. Each server on CPU {} (Lode one worker; Knot one UDP and one TCP worker, two \
         background workers), 2 signing threads, propagation-delay 1, dnskey-ttl 1: signed at \
         start, its KSK submitted, then `zone-key-rollover … zsk`; the new ZSK takes over 2 s \
         later and the zone is signed again. Queries for existing names at {} q/s from CPU {} \
         in steps of {} s (timeout 1 s): one before the rollover (static), one starting with \
         it (during). Wall and server CPU (utime + stime) from the rollover until every \
         signature is by the new ZSK (Lode: its log line \"every signature is by the keys of \
         the moment\"; Knot: the second \"successfully signed\" after it), the step during \
         included.\n\n\
         | server | static p50 / p99 / p99.9 µs | during p50 / p99 / p99.9 µs | p99.9 during ÷ static | answered static / during % | rollover s | server CPU s |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
        cfg.records,
        r.zone,
        cfg.prefix,
        cfg.server_cpu,
        cfg.rate,
        cfg.tester_cpu,
        cfg.step.as_secs_f64()
    );
    for x in &r.runs {
        let (s, d) = (&x.static_step, &x.during);
        let _ = writeln!(
            m,
            "| {} | {} / {} / {} | {} / {} / {} | {:.2} | {:.1} / {:.1} | {:.1} | {:.1} |",
            x.server,
            s.p50,
            s.p99,
            s.p999,
            d.p50,
            d.p99,
            d.p999,
            div(d.p999 as f64, s.p999 as f64),
            s.answered_pct,
            d.answered_pct,
            x.wall_secs,
            x.cpu_secs
        );
    }
    write_notes(&mut m, &r.notes);
    let js = json!({
        "settings": {
            "records": cfg.records,
            "prefix": cfg.prefix,
            "rate": cfg.rate,
            "step_secs": cfg.step.as_secs_f64(),
            "knot_journal": cfg.knot_journal,
            "knot_journal_db": cfg.knot_journal_db,
            "server_cpu": cfg.server_cpu,
            "tester_cpu": cfg.tester_cpu,
        },
        "zone": r.zone,
        "servers": r.runs.iter().map(|x| json!({
            "server": x.server,
            "static": x.static_step.json(),
            "during": x.during.json(),
            "p999_during_per_static": div(x.during.p999 as f64, x.static_step.p999 as f64),
            "rollover_secs": x.wall_secs,
            "server_cpu_secs": x.cpu_secs,
        })).collect::<Vec<_>>(),
        "notes": r.notes,
    });
    (m, js)
}
