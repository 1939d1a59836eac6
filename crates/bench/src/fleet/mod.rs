//! `lode-bench fleet`: a primary and N secondaries, each in its own network
//! namespace on one bridge, measured.
//!
//! ```text
//!                     root ns 10.53.0.200: update sender, probers, rate tester
//!                                  │ bridge lodefl0
//!       ┌──────────────────────────┼─────────────────────────────┐
//!   lodefl-p 10.53.0.1       lodefl-s1 10.53.0.11   …     lodefl-sN 10.53.0.(10+N)
//!   primary (lode|knot) ──NOTIFY, IXFR/AXFR (TSIG)──▶ secondaries (lode|knot|nsd|bind)
//! ```
//!
//! Experiments:
//! - `propagation` — paced signed UPDATEs, each adding one name; the time from the
//!   primary's NOERROR to each secondary's first answer with the record;
//! - `ixfr-load` — the BIND study's §6.3.3: each secondary's zero-loss query rate
//!   (RFC 8219 binary search, short steps) while the primary takes R updates/s;
//! - `axfr` — a large ENUM zone transferred to each secondary in turn: records/s,
//!   the primary's and the secondary's peak memory.
//!
//! With `tld` (`--tld N`) the zone is `lode-bench gen tld`'s COM-shaped zone of N
//! delegations, the updates its registry stream (NS changes, additions, deletions;
//! [`registry`]), shown on a secondary by the referral or NXDOMAIN they bring,
//! and ixfr-load's queries its referral queries.
//!
//! Everything made (namespaces, veths, bridge, servers) is removed by guards, also
//! on errors and on SIGINT/SIGTERM (blocked and waited for by a thread that sets
//! a flag every loop checks).

pub mod net;
pub mod probe;
pub mod propagation;
pub mod registry;
pub mod servers;

mod data;
mod feed;
#[cfg(test)]
mod tests;

use data::{enum_zone, tld_zone, FleetZone, TldData};
use feed::Feed;

use std::fmt;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lode_wire::Name;
use serde_json::{json, Value};

use crate::compare::servers::Kind;
use crate::gen::enumset::{self, EnumSetSpec};
use crate::gen::tld::{self, TldSpec, PACES};
use crate::query::Expect;
use crate::rate::{RateConfig, StepResult, Tester};
use crate::search::binary_search;
use crate::update::{during_updates, UpdateConfig, UpdatePlan};
use net::{Net, Plan};
use servers::{Node, Role};

pub(crate) use crate::compare::say;

/// Set by the signal thread on SIGINT, SIGTERM or SIGHUP.
static STOP: AtomicBool = AtomicBool::new(false);

/// Why a fleet run failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum FleetError {
    /// A file operation failed.
    Io {
        /// What it concerned.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Making the namespaces or the bridge failed.
    Net(String),
    /// A server could not be started or did not answer.
    Server(String),
    /// Bad settings.
    Config(String),
    /// The rate tester or the update stream failed.
    Tester(String),
    /// Stopped by a signal.
    Interrupted,
}

impl FleetError {
    /// An I/O error about `path`.
    pub fn io(path: &Path, source: std::io::Error) -> FleetError {
        FleetError::Io {
            path: path.to_owned(),
            source,
        }
    }

    /// A socket error of the prober or the sender.
    pub fn socket(e: std::io::Error) -> FleetError {
        FleetError::io(Path::new("socket"), e)
    }
}

impl fmt::Display for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FleetError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            FleetError::Net(e)
            | FleetError::Server(e)
            | FleetError::Config(e)
            | FleetError::Tester(e) => f.write_str(e),
            FleetError::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for FleetError {}

/// Which measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Experiment {
    /// Update acknowledged → answered by every secondary.
    Propagation,
    /// Secondaries' zero-loss query rate under IXFR from a primary taking updates.
    IxfrLoad,
    /// A large zone's AXFR: records/s and peak memory.
    Axfr,
}

impl Experiment {
    /// Parses `propagation`, `ixfr-load` or `axfr`.
    pub fn parse(s: &str) -> Option<Experiment> {
        match s {
            "propagation" => Some(Experiment::Propagation),
            "ixfr-load" => Some(Experiment::IxfrLoad),
            "axfr" => Some(Experiment::Axfr),
            _ => None,
        }
    }

    /// Its name on the command line and in file names.
    pub fn name(self) -> &'static str {
        match self {
            Experiment::Propagation => "propagation",
            Experiment::IxfrLoad => "ixfr-load",
            Experiment::Axfr => "axfr",
        }
    }
}

/// Settings of a fleet run.
#[derive(Debug, Clone)]
pub struct FleetConfig {
    /// The primary's server (lode or knot).
    pub primary: Kind,
    /// The secondaries' servers, in address order.
    pub secondaries: Vec<Kind>,
    /// What to measure.
    pub experiment: Experiment,
    /// Update rates (propagation: each a run; ixfr-load: each a step, 0 = static).
    pub rates: Vec<f64>,
    /// Updates per propagation run.
    pub updates: u64,
    /// Records of the generated ENUM zone (one zone).
    pub records: u64,
    /// TLD data instead: delegations of the `lode-bench gen tld` zone, whose
    /// registry stream the primary takes.
    pub tld: Option<u64>,
    /// Full-speed updates (rate infinite): updates waiting for a reply at most.
    pub in_flight: usize,
    /// Results folder (Markdown and JSON).
    pub out: PathBuf,
    /// Scratch folder (zone, servers' folders).
    pub work: PathBuf,
    /// The lode binary.
    pub lode: PathBuf,
    /// TSIG key of updates, transfers and NOTIFYs.
    pub key: lode_tsig::Key,
    /// ixfr-load: seconds per rate step.
    pub step: Duration,
    /// ixfr-load: upper bound of the search (q/s).
    pub high: u64,
    /// ixfr-load: resolution of the search (q/s).
    pub resolution: u64,
    /// UDP workers per server.
    pub workers: usize,
    /// Propagation: how long a name may take to appear after the last acknowledgement.
    pub wait: Duration,
    /// How long a server may take to load or transfer its zone.
    pub load_limit: Duration,
    /// Propagation: prober window and interval.
    pub probe_window: usize,
    /// Propagation: time between a prober's rounds.
    pub probe_interval: Duration,
}

/// Sets [`STOP`] on SIGINT, SIGTERM or SIGHUP (see [`crate::interrupt`]).
/// Call before starting any thread.
fn catch_signals() -> Result<(), FleetError> {
    crate::interrupt::catch(
        &STOP,
        "fleet-signals",
        "stopping; removing servers and namespaces",
    )
    .map_err(FleetError::Config)
}

/// Fails with [`FleetError::Interrupted`] once a signal came.
fn check_stop() -> Result<(), FleetError> {
    if STOP.load(Ordering::Relaxed) {
        Err(FleetError::Interrupted)
    } else {
        Ok(())
    }
}

/// A rough run time of `cfg`, seconds, for the banner.
pub fn expected_secs(cfg: &FleetConfig) -> f64 {
    let n = cfg.secondaries.len() as f64;
    // A TLD zone has about 2.3 records per delegation, and is generated with its files.
    let setup = match cfg.tld {
        Some(d) => 10.0 + d as f64 / 50_000.0,
        None => 10.0 + cfg.records as f64 / 200_000.0,
    };
    match cfg.experiment {
        Experiment::Propagation => {
            setup
                + cfg
                    .rates
                    .iter()
                    .filter(|r| **r > 0.0)
                    // The last update is due (n - 1) / rate after the first.
                    .map(|r| cfg.updates.saturating_sub(1) as f64 / r + 5.0)
                    .sum::<f64>()
        }
        Experiment::IxfrLoad => {
            setup + cfg.rates.len() as f64 * n * search_steps(cfg) as f64 * cfg.step.as_secs_f64()
        }
        // Lode loads and sends ~0.5-1 M records/s here; the secondaries are slower.
        Experiment::Axfr => setup + n * (5.0 + cfg.records as f64 / 100_000.0),
    }
}

/// Seconds one ixfr-load search is expected to take (a step, and 1.5 s between steps).
fn search_secs(cfg: &FleetConfig) -> f64 {
    search_steps(cfg) as f64 * (cfg.step.as_secs_f64() + 1.5) + 5.0
}

/// Steps of one binary search (the upper bound, then halving to the resolution).
fn search_steps(cfg: &FleetConfig) -> u64 {
    let ratio = (cfg.high / cfg.resolution.max(1)).max(1);
    2 + u64::from(64 - ratio.leading_zeros())
}

/// Runs the experiment; prints the Markdown table, writes `fleet-EXP.md` and
/// `fleet-EXP.json` into `out`, and returns the JSON.
pub fn run(cfg: &FleetConfig) -> Result<Value, FleetError> {
    catch_signals()?;
    if cfg.secondaries.is_empty() {
        return Err(FleetError::Config("no secondaries".into()));
    }
    if !matches!(cfg.primary, Kind::Lode | Kind::Knot) {
        return Err(FleetError::Config(format!(
            "{}: the primary is lode or knot",
            cfg.primary
        )));
    }
    let mut kinds = cfg.secondaries.clone();
    kinds.push(cfg.primary);
    crate::compare::install_missing(&kinds).map_err(|e| FleetError::Server(e.to_string()))?;
    std::fs::create_dir_all(&cfg.out).map_err(|e| FleetError::io(&cfg.out, e))?;
    std::fs::create_dir_all(&cfg.work).map_err(|e| FleetError::io(&cfg.work, e))?;
    say(&format!(
        "fleet {}: primary {}, secondaries {}; expected run time about {:.0} s",
        cfg.experiment.name(),
        cfg.primary,
        cfg.secondaries
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(","),
        expected_secs(cfg)
    ));
    if cfg.tld.is_none()
        && cfg.experiment == Experiment::IxfrLoad
        && cfg.rates.iter().any(|r| r.is_infinite())
    {
        return Err(FleetError::Config(
            "ixfr-load at full speed needs --tld (the ENUM stream is paced)".into(),
        ));
    }
    // The zone: one ENUM zone of `records` numbers, or the TLD zone and its stream.
    let zone = match cfg.tld {
        Some(d) => tld_zone(cfg, d)?,
        None => enum_zone(cfg)?,
    };
    let (apex, file) = (zone.apex.as_str(), zone.file.as_path());
    check_stop()?;
    let net = Net::create(Plan::new(cfg.secondaries.len())?)?;
    let result = match cfg.experiment {
        Experiment::Propagation => propagation_exp(cfg, &net, &zone),
        Experiment::IxfrLoad => ixfr_load_exp(cfg, &net, &zone),
        Experiment::Axfr => axfr_exp(cfg, &net, apex, file),
    };
    drop(net);
    let (table, body) = result?;
    let when = lode_io::clock::unix_now();
    let doc = json!({
        "experiment": cfg.experiment.name(),
        "primary": cfg.primary.name(),
        "secondaries": cfg.secondaries.iter().map(|k| k.name()).collect::<Vec<_>>(),
        "records": cfg.records,
        "tld_delegations": cfg.tld,
        "in_flight": cfg.in_flight,
        "workers": cfg.workers,
        "unix_time": when,
        "machine_cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "results": body,
    });
    let base = cfg.out.join(format!("fleet-{}", cfg.experiment.name()));
    let md = base.with_extension("md");
    std::fs::write(&md, &table).map_err(|e| FleetError::io(&md, e))?;
    let js = base.with_extension("json");
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    std::fs::write(&js, text).map_err(|e| FleetError::io(&js, e))?;
    let _ = write!(std::io::stdout().lock(), "{table}");
    say(&format!("wrote {} and {}", md.display(), js.display()));
    Ok(doc)
}

/// The primary's role: on `cpu`, NOTIFYing every secondary of the plan.
fn primary_role(cfg: &FleetConfig, net: &Net, apex: &str, file: &Path, cpu: usize) -> Role {
    Role {
        kind: cfg.primary,
        host: net.plan.primary.clone(),
        port: 53,
        workers: cfg.workers,
        cpu,
        dir: cfg.work.join(format!("primary-{}", cfg.primary)),
        zone: apex.to_string(),
        zone_file: Some(file.to_path_buf()),
        peers: net
            .plan
            .secondaries
            .iter()
            .map(|h| SocketAddr::from((h.addr, 53)))
            .collect(),
        key: cfg.key.clone(),
        lode: cfg.lode.clone(),
    }
}

/// Secondary `i`'s role, on `cpu`.
fn secondary_role(cfg: &FleetConfig, net: &Net, apex: &str, i: usize, cpu: usize) -> Role {
    let host = net.plan.secondaries[i].clone();
    let kind = cfg.secondaries[i];
    Role {
        kind,
        dir: cfg.work.join(format!("secondary{}-{kind}", i + 1)),
        host,
        port: 53,
        workers: cfg.workers,
        cpu,
        zone: apex.to_string(),
        zone_file: None,
        peers: vec![SocketAddr::from((net.plan.primary.addr, 53))],
        key: cfg.key.clone(),
        lode: cfg.lode.clone(),
    }
}

/// Starts the primary and waits until it serves the zone; returns it and its serial.
fn start_primary(cfg: &FleetConfig, role: &Role) -> Result<(Node, u32), FleetError> {
    let mut p = role.start()?;
    p.wait_listening(&role.zone, cfg.load_limit)?;
    let serial = wait_serial(&mut p, &role.zone, None, cfg.load_limit)?;
    say(&format!(
        "{} serves serial {serial} after {:.1} s",
        p.label,
        p.started.elapsed().as_secs_f64()
    ));
    Ok((p, serial))
}

/// Waits until `node` serves `zone` with `serial` (any serial if None); returns it.
fn wait_serial(
    node: &mut Node,
    zone: &str,
    serial: Option<u32>,
    limit: Duration,
) -> Result<u32, FleetError> {
    let t = Instant::now();
    let mut last = None;
    loop {
        check_stop()?;
        if !node.alive() {
            return Err(FleetError::Server(format!(
                "{} exited; see {}",
                node.label,
                node.dir.display()
            )));
        }
        let s = node.serial(zone);
        last = s.or(last);
        match (s, serial) {
            (Some(s), None) => return Ok(s),
            (Some(s), Some(want)) if s == want => return Ok(s),
            _ => {}
        }
        if t.elapsed() > limit {
            return Err(FleetError::Server(format!(
                "{} did not serve serial {} within {limit:?} (last seen {last:?}); see {}",
                node.label,
                serial.map_or("any".into(), |s| s.to_string()),
                node.dir.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts every secondary (on `cpu(i)`) and waits until each serves `serial`.
fn start_secondaries(
    cfg: &FleetConfig,
    net: &Net,
    apex: &str,
    serial: u32,
    cpu: impl Fn(usize) -> usize,
) -> Result<Vec<Node>, FleetError> {
    let mut nodes = Vec::new();
    for i in 0..cfg.secondaries.len() {
        let role = secondary_role(cfg, net, apex, i, cpu(i));
        let mut n = role.start()?;
        n.wait_listening(apex, Duration::from_secs(60))?;
        nodes.push(n);
    }
    for n in &mut nodes {
        wait_serial(n, apex, Some(serial), cfg.load_limit)?;
        say(&format!(
            "{} serves serial {serial} after {:.1} s",
            n.label,
            n.started.elapsed().as_secs_f64()
        ));
    }
    Ok(nodes)
}

/// Starts `fz`'s primary on CPU 0 and every secondary on CPU `cpu`, and waits
/// until each serves the primary's serial; the primary and the secondaries.
fn start_fleet(
    cfg: &FleetConfig,
    net: &Net,
    fz: &FleetZone,
    cpu: usize,
) -> Result<(Node, Vec<Node>), FleetError> {
    let (apex, file) = (fz.apex.as_str(), fz.file.as_path());
    let (primary, serial) = start_primary(cfg, &primary_role(cfg, net, apex, file, 0))?;
    let secs = start_secondaries(cfg, net, apex, serial, |_| cpu)?;
    Ok((primary, secs))
}

/// `x` with one decimal, or `-`.
fn f1(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.1}"))
}

/// Propagation at each rate; the primary on CPU 0, the secondaries on CPU 1.
fn propagation_exp(
    cfg: &FleetConfig,
    net: &Net,
    fz: &FleetZone,
) -> Result<(String, Value), FleetError> {
    let apex = fz.apex.as_str();
    let (primary, secs) = start_fleet(cfg, net, fz, 1)?;
    let zone = Name::parse(apex, Some(&Name::root()))
        .map_err(|e| FleetError::Config(format!("{apex}: {e}")))?;
    let what = match &fz.tld {
        Some(t) => format!(
            "The registry stream of `lode-bench gen tld` ({} delegations; NS changes, additions, \
             deletions in turn, each run taking the next updates); a secondary has an update when \
             its referral for the delegation names the new NS (NXDOMAIN for a deletion). \
             `full`: the next update as soon as fewer than {} wait for the primary's reply. ",
            t.delegations, cfg.in_flight
        ),
        None => String::new(),
    };
    let mut md = format!(
        "## Propagation: primary {} → {} (update acknowledged → answered, ms)\n\n{what}\
         Primary pinned to CPU 0, secondaries to CPU 1, sender and probers unpinned; probers ask \
         for the oldest {} unseen updates every {} µs.\n\n\
         | rate/s | secondary | updates seen | missing | p50 | p99 | max | full transfers |\n|---:|---|---:|---:|---:|---:|---:|---:|\n",
        cfg.primary,
        cfg.secondaries.iter().map(|k| k.name()).collect::<Vec<_>>().join(", "),
        cfg.probe_window,
        cfg.probe_interval.as_micros()
    );
    let mut runs = Vec::new();
    let mut cursor = registry::Cursor::new(fz.tld.as_ref().map_or(0, |t| t.stream.len()));
    for (r, &rate) in cfg.rates.iter().enumerate() {
        check_stop()?;
        let label = registry::rate_label(rate, cfg.tld);
        let txt;
        let updates: &[registry::StreamUpdate] = match &fz.tld {
            Some(t) => &t.stream[cursor.take(cfg.updates)],
            None => {
                txt = propagation::txt_updates(&zone, &format!("r{r}"), cfg.updates)?;
                &txt
            }
        };
        if updates.is_empty() {
            say(&format!(
                "propagation at {label}: the stream is used up; run skipped"
            ));
            continue;
        }
        let pc = propagation::PropagationConfig {
            primary: primary.addr,
            secondaries: secs
                .iter()
                .map(|n| {
                    (
                        format!("{} {}", n.kind, servers::short(ip4(n.addr))),
                        n.addr,
                    )
                })
                .collect(),
            zone: zone.clone(),
            rate,
            in_flight: cfg.in_flight,
            key: cfg.key.clone(),
            window: cfg.probe_window,
            interval: cfg.probe_interval,
            wait: cfg.wait,
            timeout: Duration::from_secs(2),
        };
        say(&format!(
            "propagation: {} updates, rate {label} ({:.0} s)",
            updates.len(),
            (updates.len() - 1) as f64 / rate
        ));
        let full_before: Vec<usize> = secs
            .iter()
            .map(|n| full_transfers(&primary, ip4(n.addr)))
            .collect();
        let res = propagation::run(&pc, updates, &STOP)?;
        check_stop()?;
        // What the primary logged of the run (the secondaries are caught up).
        let full: Vec<usize> = secs
            .iter()
            .zip(&full_before)
            .map(|(n, b)| full_transfers(&primary, ip4(n.addr)).saturating_sub(*b))
            .collect();
        let [u50, u99, _] = res.update_ms.map_or([None; 3], |m| m.map(Some));
        say(&format!(
            "  sent {}, acknowledged {}, update latency p50 {} ms p99 {} ms",
            res.sent,
            res.acked,
            f1(u50),
            f1(u99)
        ));
        let mut per = Vec::new();
        for (i, l) in res.secondaries.iter().enumerate() {
            let [a, b, c] = l.ms.map_or([None; 3], |m| m.map(Some));
            let full = full.get(i).copied();
            md.push_str(&format!(
                "| {label} | {} | {} | {} | {} | {} | {} | {} |\n",
                l.label,
                l.seen,
                l.missing,
                f1(a),
                f1(b),
                f1(c),
                full.map_or("".into(), |n| n.to_string())
            ));
            per.push(
                json!({"secondary": l.label, "seen": l.seen, "missing": l.missing,
                "p50_ms": a, "p99_ms": b, "max_ms": c, "full_transfers": full}),
            );
        }
        runs.push(json!({"rate": rate, "rate_label": label, "sent": res.sent,
            "acked": res.acked, "update_ms": res.update_ms, "secs": res.secs,
            "send_secs": res.send_secs, "secondaries": per}));
    }
    md.push_str(
        "\n`all`: per update, the slowest secondary. Goal: p99 ≤ 50 ms with Lode everywhere. \
         `full transfers`: AXFRs and IXFRs answered with the whole zone that the primary logged to \
         that secondary during the run (a secondary that falls back to AXFR; goal: 0).\n",
    );
    if fz.tld.is_some() {
        md.push_str("TLD goal: p99 ≤ 1 s to every secondary kind at every pace.\n");
    }
    drop(secs);
    drop(primary);
    Ok((md, json!(runs)))
}

/// Full transfers (AXFR, or IXFR answered with the whole zone) to `to` in
/// the primary's log so far: Lode's "AXFR of …" / "IXFR (whole zone) of …",
/// Knot's "AXFR, outgoing … started" (also after its IXFR "fallback to AXFR").
fn full_transfers(primary: &Node, to: std::net::Ipv4Addr) -> usize {
    let (file, marks): (&str, &[&str]) = match primary.kind {
        Kind::Lode => ("stdio.log", &["AXFR of ", "IXFR (whole zone) of "]),
        Kind::Knot => ("knot.log", &["AXFR, outgoing"]),
        _ => return 0,
    };
    let text = std::fs::read_to_string(primary.dir.join(file)).unwrap_or_default();
    let (lode_peer, knot_peer) = (format!(" {to}:"), format!(" {to}@"));
    let counted = |l: &&str| {
        let knot_start = primary.kind != Kind::Knot || l.contains("started");
        let peer = l.contains(&lode_peer) || l.contains(&knot_peer);
        peer && marks.iter().any(|m| l.contains(m)) && knot_start
    };
    text.lines().filter(counted).count()
}

/// The IPv4 address of a fleet socket address.
fn ip4(a: SocketAddr) -> std::net::Ipv4Addr {
    match a.ip() {
        std::net::IpAddr::V4(v) => v,
        std::net::IpAddr::V6(_) => std::net::Ipv4Addr::UNSPECIFIED,
    }
}

/// ixfr-load: the searches start once the primary and every secondary use
/// under this share of a CPU for [`QUIET_FOR`] in a row (at most
/// [`QUIET_LIMIT`]).
const QUIET_SHARE: f64 = 0.05;
/// See [`QUIET_SHARE`].
const QUIET_FOR: Duration = Duration::from_secs(3);
/// See [`QUIET_SHARE`].
const QUIET_LIMIT: Duration = Duration::from_secs(300);

/// ixfr-load: every server on CPU 0 but the secondary under test, moved to CPU 1
/// for its searches; the tester and the update stream on CPU 0.
fn ixfr_load_exp(
    cfg: &FleetConfig,
    net: &Net,
    fz: &FleetZone,
) -> Result<(String, Value), FleetError> {
    let (apex, file) = (fz.apex.as_str(), fz.file.as_path());
    let (primary, mut secs) = start_fleet(cfg, net, fz, 0)?;
    // What the servers do on their own once loaded (Lode: huge pages over
    // a large zone) is not the searches' to bear: the first static search
    // would count it against the secondary.
    for n in std::iter::once(&primary).chain(secs.iter()) {
        let quiet =
            crate::compare::sys::wait_idle(n.pid(), (QUIET_SHARE, QUIET_FOR), QUIET_LIMIT, &|| {
                check_stop().is_err()
            });
        check_stop()?;
        if !quiet {
            say(&format!(
                "{} still busy after {} s: searching anyway",
                n.label,
                QUIET_LIMIT.as_secs()
            ));
        }
    }
    crate::compare::pin_self(0).map_err(|e| FleetError::Config(e.to_string()))?;
    let zone = Name::parse(apex, Some(&Name::root()))
        .map_err(|e| FleetError::Config(format!("{apex}: {e}")))?;
    let search_secs = search_secs(cfg);
    // The updates: ENUM changes of an UpdatePlan, or the TLD's registry stream.
    let (mut feed, queries, expect, what) = match &fz.tld {
        None => {
            // Updates of every search, twice the estimate: one plan for the whole run.
            let total: f64 = cfg
                .rates
                .iter()
                .map(|r| r * 2.0 * search_secs * secs.len() as f64)
                .sum();
            let plan = UpdatePlan::from_files(&[(zone.clone(), file)], total.ceil() as u64 + 10)
                .map_err(|e| {
                    FleetError::Config(format!("update plan ({total:.0} updates): {e}"))
                })?;
            let queries = plan.queries(1_000_000, false);
            let feed = Feed::Plan { plan, first: 0 };
            (
                feed,
                queries,
                Expect::Answer,
                "queries for names no update touches".to_string(),
            )
        }
        Some(t) => {
            let queries = registry::referral_queries(&t.referrals, &zone, &t.stream, 1_000_000)?;
            let feed = Feed::Registry {
                data: t,
                cursor: registry::Cursor::new(t.stream.len()),
            };
            let what = format!(
                "the registry stream of `lode-bench gen tld` ({} delegations; NS changes, \
                 additions, deletions; `full`: the next update once fewer than {} wait for a \
                 reply), referral queries of its queries-referral.txt (none below a delegation \
                 the stream deletes; NOERROR is valid)",
                t.delegations, cfg.in_flight
            );
            (feed, queries, Expect::NoError, what)
        }
    };
    let queries = Arc::new(queries);
    let cells: Vec<f64> = cfg
        .rates
        .iter()
        .flat_map(|&r| std::iter::repeat_n(r, secs.len()))
        .collect();
    let mut md = format!(
        "## IXFR load (BIND study §6.3.3): zero-loss query rate of a secondary while primary {} takes updates\n\n\
         Each cell: one RFC 8219 binary search of {:.0} s steps up to {} q/s (resolution {}), \
         {what}; the secondary under test on CPU 1, everything else \
         (primary, other secondaries, tester, update sender) on CPU 0; the searches start once every \
         server is quiet (under 5 % of a CPU for 3 s). A 2-core machine: short steps, \
         one search per cell — indicative, not RFC 8219's 60 s × repeated.\n\n\
         | updates/s | secondary | zero-loss q/s | % of static | updates ok/sent | serial lag after |\n\
         |---:|---|---:|---:|---:|---:|\n",
        cfg.primary,
        cfg.step.as_secs_f64(),
        cfg.high,
        cfg.resolution
    );
    let mut statics: Vec<Option<u64>> = vec![None; secs.len()];
    let mut rows = Vec::new();
    let mut cell = 0usize;
    for &rate in &cfg.rates {
        let label = registry::rate_label(rate, cfg.tld);
        for (i, sec) in secs.iter_mut().enumerate() {
            check_stop()?;
            let k = cell;
            cell += 1;
            sec.pin(1)?;
            let mut rc = RateConfig::new(sec.addr);
            rc.duration = cfg.step;
            rc.ports = 1000;
            rc.expect = expect;
            let mut tester =
                Tester::new(rc, queries.clone()).map_err(|e| FleetError::Tester(e.to_string()))?;
            let who = format!("{} {}", sec.kind, servers::short(ip4(sec.addr)));
            say(&format!("ixfr-load: {who} at {label} updates/s"));
            let search = |t: &mut Tester| {
                binary_search(0, cfg.high, cfg.resolution, |q| {
                    check_stop()?;
                    let r: StepResult = t.step(q).map_err(|e| FleetError::Tester(e.to_string()))?;
                    let ok = r.passed(t.config().loss, t.config().max_behind);
                    say(&format!(
                        "  {q} q/s: {} ({} of {} answered)",
                        if ok { "pass" } else { "fail" },
                        r.valid,
                        r.sent
                    ));
                    Ok::<_, FleetError>((ok, r))
                })
            };
            let t0 = Instant::now();
            let (found, upd) = if rate > 0.0 {
                let (found, upd) =
                    feed.during(cfg, &primary, &zone, &cells, k, search_secs, || {
                        search(&mut tester)
                    })?;
                (found?, Some(upd))
            } else {
                (search(&mut tester)?, None)
            };
            let searched = t0.elapsed().as_secs_f64();
            sec.pin(0)?;
            // How far behind the primary it was when the updates stopped.
            let lag = match (primary.serial(apex), sec.serial(apex)) {
                (Some(p), Some(s)) => Some(i64::from(p.wrapping_sub(s) as i32)),
                _ => None,
            };
            if rate == 0.0 {
                statics[i] = Some(found.rate);
            }
            let pct = statics[i]
                .filter(|s| *s > 0)
                .map(|s| 100.0 * found.rate as f64 / s as f64);
            let (ok, sent) = upd.as_ref().map_or((0, 0), |u| (u.ok, u.sent));
            // A stream that ended well before the search did: say when.
            let ended = upd
                .as_ref()
                .filter(|u| u.used_up && u.secs + 1.0 < searched)
                .map(|u| u.secs);
            md.push_str(&format!(
                "| {label} | {who} | {}{} | {} | {ok}/{sent}{} | {} |\n",
                found.rate,
                if found.hit_ceiling { " (ceiling)" } else { "" },
                f1(pct),
                ended.map_or(String::new(), |e| format!(
                    " (stream ended at {e:.0} s of {searched:.0})"
                )),
                lag.map_or("-".into(), |l| l.to_string())
            ));
            rows.push(
                json!({"updates_per_sec": rate, "rate_label": label, "secondary": who,
                "qps": found.rate, "hit_ceiling": found.hit_ceiling, "pct_of_static": pct,
                "updates_ok": ok, "updates_sent": sent, "serial_lag_after": lag,
                "search_secs": searched, "stream_secs": upd.as_ref().map(|u| u.secs),
                "stream_used_up": upd.as_ref().map(|u| u.used_up),
                "steps": found.trials.iter().map(|t| json!({"rate": t.rate, "passed": t.passed,
                    "sent": t.detail.sent, "valid": t.detail.valid})).collect::<Vec<_>>()}),
            );
            // Let it catch up before the next cell.
            if let Some(p) = primary.serial(apex) {
                let _ = wait_serial(sec, apex, Some(p), Duration::from_secs(30));
            }
        }
    }
    md.push_str(
        "\nGoal: ≥ 95 % of the static rate at every step (BIND lost 12 % at 32/s in the study).\n",
    );
    if fz.tld.is_some() {
        md.push_str(
            "TLD goal: ≥ 95 % of the static rate under the medium stream (3 % of the zone a day).\n",
        );
    }
    drop(secs);
    drop(primary);
    Ok((md, json!(rows)))
}

/// Runs `work` while a thread samples `node`'s RSS every 20 ms; returns the peak
/// (at least `before`; 0 if the sampler panicked) and what `work` returned.
fn peak_rss_during<T>(node: &Node, before: u64, work: impl FnOnce() -> T) -> (u64, T) {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut peak = before;
            while !done.load(Ordering::Relaxed) {
                peak = peak.max(node.rss());
                std::thread::sleep(Duration::from_millis(20));
            }
            peak
        });
        let r = work();
        done.store(true, Ordering::Relaxed);
        (sampler.join().unwrap_or(0), r)
    })
}

/// axfr: the primary on CPU 0; each secondary in turn on CPU 1, started empty;
/// the time until it serves the primary's serial; memory sampled every 20 ms.
fn axfr_exp(
    cfg: &FleetConfig,
    net: &Net,
    apex: &str,
    file: &Path,
) -> Result<(String, Value), FleetError> {
    let (primary, serial) = start_primary(cfg, &primary_role(cfg, net, apex, file, 0))?;
    let mut md = format!(
        "## AXFR of {} records from {}\n\nPrimary on CPU 0, the secondary on CPU 1, one at a time, \
         started empty; time = from its start to serving the primary's serial. First row: \
         `lode-bench`'s own TCP client on CPU 1 that only counts the records (the primary's \
         send rate without a secondary's work). Memory: the \
         primary's RSS before and its peak during the transfer (sampled every 20 ms), the \
         secondary's VmHWM.\n\n\
         | secondary | seconds | records/s | primary RSS before MiB | primary peak MiB | secondary peak MiB |\n\
         |---|---:|---:|---:|---:|---:|\n",
        cfg.records, cfg.primary
    );
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let mut rows = Vec::new();
    // The primary's send rate alone: a client that only counts the records, on CPU 1.
    {
        check_stop()?;
        crate::compare::pin_self(1).map_err(|e| FleetError::Config(e.to_string()))?;
        let before = primary.rss();
        let (peak_p, drained) = peak_rss_during(&primary, before, || {
            probe::axfr_drain(primary.addr, apex, &cfg.key, cfg.load_limit)
        });
        let d = drained?;
        let rps = d.records as f64 / d.secs;
        say(&format!(
            "axfr: drain client: {} records, {} messages, {:.2} s, {rps:.0} records/s",
            d.records, d.messages, d.secs
        ));
        md.push_str(&format!(
            "| (client that drains) | {:.2} | {rps:.0} | {:.0} | {:.0} | - |\n",
            d.secs,
            mib(before),
            mib(peak_p)
        ));
        rows.push(
            json!({"secondary": "drain", "secs": d.secs, "records": d.records,
            "messages": d.messages, "bytes": d.bytes, "records_per_sec": rps,
            "primary_rss_before": before, "primary_peak_rss": peak_p}),
        );
    }
    for i in 0..cfg.secondaries.len() {
        check_stop()?;
        let before = primary.rss();
        let role = secondary_role(cfg, net, apex, i, 1);
        let mut sec = role.start()?;
        let t0 = sec.started;
        let (peak_p, res) = peak_rss_during(&primary, before, || {
            wait_serial(&mut sec, apex, Some(serial), cfg.load_limit)
        });
        res?;
        let secs_taken = t0.elapsed().as_secs_f64();
        let rps = cfg.records as f64 / secs_taken;
        let hwm = sec.hwm();
        let label = format!("{} {}", sec.kind, servers::short(ip4(sec.addr)));
        say(&format!(
            "axfr: {label}: {secs_taken:.2} s, {rps:.0} records/s"
        ));
        md.push_str(&format!(
            "| {label} | {secs_taken:.2} | {rps:.0} | {:.0} | {:.0} | {:.0} |\n",
            mib(before),
            mib(peak_p),
            mib(hwm)
        ));
        rows.push(
            json!({"secondary": label, "secs": secs_taken, "records_per_sec": rps,
            "primary_rss_before": before, "primary_peak_rss": peak_p, "secondary_hwm": hwm}),
        );
        drop(sec);
    }
    md.push_str(&format!(
        "\nPrimary VmHWM over its life (load included): {:.0} MiB. Goal: Lode's AXFR out ≥ 2 × Knot's records/s with flat memory on the primary.\n",
        mib(primary.hwm())
    ));
    drop(primary);
    Ok((md, json!(rows)))
}
