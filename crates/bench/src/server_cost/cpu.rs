//! `lode-bench update-cpu`: the server CPU one durable update costs. Each
//! server (Lode, then Knot DNS) serves the same ENUM set (500k numbers in 10
//! zones) taking TSIG-signed updates, pinned to one CPU, its journal in a
//! fresh folder; closed-loop clients on another CPU add single NAPTRs over
//! TCP for a while ([`crate::durable`]). The server's utime + stime before
//! and after give its CPU seconds; divided by the updates acknowledged, the
//! CPU per durable update. The journal disk's fdatasync rate is measured in
//! the same folder first, for updates/s ÷ fdatasync/s.
//!
//! ```text
//!  gen enum (kept in --work) ─▶ for server: Spec (compare-updates' Launch) ─▶ start, zones answer
//!    ─▶ fsync probe in its folder ─▶ CPU₀ ─▶ [perf record] clients × duration ─▶ CPU₁ ─▶ stop
//!  ─▶ update-cpu.md, update-cpu.json
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use lode_peers::{Content, Ready, Server, Signing};
use serde_json::{json, Value};

use super::{div, enum_set, fail, fresh_dir, write_notes, write_report, CostError};
use crate::compare::servers::{Kind, Launch};
use crate::compare::updates::{DURABLE_FIRST, SUFFIX_DIGITS};
use crate::compare::{pin_self, say};
use crate::durable::{self, DurableConfig, DurableResult, FsyncProbe};
use crate::gen::enumset::EnumSetSpec;
use crate::provenance::Provenance;

/// Settings of `lode-bench update-cpu`.
#[derive(Debug, Clone)]
pub struct CpuConfig {
    /// Report folder.
    pub out: PathBuf,
    /// Scratch folder: the set (kept for the next run) and the servers' folders.
    pub work: PathBuf,
    /// The lode binary measured.
    pub lode: PathBuf,
    /// Servers in run order (Lode, Knot DNS).
    pub servers: Vec<Kind>,
    /// ENUM numbers of the set.
    pub records: u64,
    /// Zones they are split into.
    pub zones: u64,
    /// Leading digits of the numbers.
    pub prefix: String,
    /// Closed-loop clients, each its own TCP connection.
    pub clients: usize,
    /// How long they send.
    pub duration: Duration,
    /// The key every update is signed with.
    pub key: lode_tsig::Key,
    /// Lode's `zonefile-sync` (-1: zone files not written back, as Knot here).
    pub zonefile_sync: i64,
    /// Lode's `background-workers` (None: its default).
    pub background_workers: Option<usize>,
    /// Zones signed by each server with its default policy (ECDSA P-256,
    /// NSEC; Knot with two background workers, its zones loaded whole): each
    /// update is signed too. The clients start once the last NAPTR of every
    /// zone is answered with its signature.
    pub signed: bool,
    /// Longest wait for a server's signing of the zones.
    pub sign_limit: Duration,
    /// `perf record` of Lode during the updates with this call-graph mode
    /// (`fp`, `dwarf`) into `out/perf.data`.
    pub perf: Option<String>,
    /// CPU of the server.
    pub server_cpu: usize,
    /// CPU of the clients.
    pub tester_cpu: usize,
    /// Port of the server (one at a time) on 127.0.0.1.
    pub port: u16,
    /// Seconds of the fdatasync probe.
    pub fsync: Duration,
    /// Longest wait for a server's zones to answer.
    pub load_limit: Duration,
}

/// One server measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuRun {
    /// Server name.
    pub server: String,
    /// The journal disk's fdatasync rate, in the server's folder.
    pub fsync: FsyncProbe,
    /// What the clients saw.
    pub updates: DurableResult,
    /// Server CPU seconds (utime + stime) over the clients' run.
    pub cpu_secs: f64,
    /// With signed zones: seconds from the start until they were signed, and
    /// the zones whose last name was still unsigned then (the wait's bound passed).
    pub signed_after: Option<(f64, usize)>,
}

impl CpuRun {
    /// Server CPU per acknowledged update, µs (None: none acknowledged).
    pub fn us_per_update(&self) -> Option<f64> {
        (self.updates.acked > 0).then(|| self.cpu_secs * 1e6 / self.updates.acked as f64)
    }

    /// What the script printed for the server: the clients' summary, the
    /// fdatasync ratio, the CPU seconds and the CPU per durable update.
    pub fn lines(&self) -> Vec<String> {
        let mut v = vec![format!("== {}", self.server)];
        if let Some((secs, unsigned)) = self.signed_after {
            v.push(format!(
                "{} signed the zones in {secs:.1} s ({unsigned} last names unsigned)",
                self.server
            ));
        }
        v.push(format!("fsync probe: {}", self.fsync));
        v.extend(self.updates.summary());
        v.push(self.updates.fsync_line(&self.fsync));
        v.push(format!(
            "{} server CPU: {:.3} s for {} updates",
            self.server, self.cpu_secs, self.updates.acked
        ));
        if let Some(us) = self.us_per_update() {
            v.push(format!(
                "{} server CPU per durable update: {us:.1} µs",
                self.server
            ));
        }
        v
    }

    fn json(&self) -> Value {
        let u = &self.updates;
        json!({
            "server": self.server,
            "updates_acknowledged": u.acked,
            "updates_sent": u.sent,
            "unanswered": u.unanswered,
            "connection_errors": u.conn_errors,
            "secs": u.secs,
            "updates_per_sec": u.updates_per_sec(),
            "latency_us": { "p50": u.latency_us[0], "p99": u.latency_us[1], "p999": u.latency_us[2], "max": u.latency_us[3] },
            "server_cpu_secs": self.cpu_secs,
            "server_cpu_us_per_update": self.us_per_update(),
            "fdatasync_per_sec": self.fsync.per_sec(),
            "updates_per_fdatasync": durable::ratio(u.updates_per_sec(), self.fsync.per_sec()),
            "first_error": u.first_error,
            "signed_after_secs": self.signed_after.map(|x| x.0),
            "last_names_unsigned": self.signed_after.map(|x| x.1),
        })
    }
}

/// The measurement: every server's run, and the notes (servers skipped).
#[derive(Debug, Clone, Default)]
pub struct CpuResult {
    /// Each server, in run order.
    pub runs: Vec<CpuRun>,
    /// What was skipped, and why.
    pub notes: Vec<String>,
    /// The Markdown report written.
    pub report: PathBuf,
}

impl CpuResult {
    /// Lode's figures against Knot's, when both ran: Knot's CPU per update
    /// ÷ Lode's and Lode's rate ÷ Knot's.
    pub fn comparison(&self) -> Option<String> {
        let find = |k: Kind| self.runs.iter().find(|r| r.server == k.name());
        let (l, k) = (find(Kind::Lode)?, find(Kind::Knot)?);
        Some(format!(
            "Knot's CPU per durable update ÷ Lode's: {:.1} ×; Lode's updates/s ÷ Knot's: {:.1} ×",
            div(k.us_per_update()?, l.us_per_update()?),
            div(l.updates.updates_per_sec(), k.updates.updates_per_sec())
        ))
    }
}

/// Runs the measurement and writes `update-cpu.md` and `update-cpu.json` into `cfg.out`.
pub fn run(cfg: &CpuConfig) -> Result<CpuResult, CostError> {
    if cfg.clients == 0 || cfg.clients > durable::MAX_CLIENTS {
        return fail(format!("clients: 1 to {}", durable::MAX_CLIENTS));
    }
    let mut result = CpuResult::default();
    let mut servers = cfg.servers.clone();
    servers.retain(|k| match k.program() {
        Some((program, package)) if lode_peers::program(program).is_none() => {
            result.notes.push(format!(
                "{k} not run: {program} is not installed (Debian package {package})"
            ));
            false
        }
        _ => true,
    });
    let provenance = Provenance::collect(Some(&cfg.lode), &["knotd", "named"]);
    let mut spec = EnumSetSpec::new(cfg.records, cfg.zones);
    spec.prefix = Some(cfg.prefix.clone());
    let set_dir = cfg
        .work
        .join(format!("set-{}-{}-{}", cfg.records, cfg.zones, cfg.prefix));
    let (layout, zones) = enum_set(&spec, &set_dir, true)?;
    // The last NAPTR of each zone: signed last.
    let last: Vec<String> = (0..layout.zones())
        .map(|z| {
            let mut name = Vec::new();
            layout.name(z, layout.zone_records(z).saturating_sub(1), &mut name);
            String::from_utf8_lossy(&name).into_owned()
        })
        .collect();
    pin_self(cfg.tester_cpu).map_err(|e| CostError(e.to_string()))?;
    for &kind in &servers {
        say(&format!(
            "== {kind}: {} clients for {:?}",
            cfg.clients, cfg.duration
        ));
        let run = measure(cfg, kind, &zones, &last)?;
        result.runs.push(run);
    }
    let (md, js) = report(cfg, &result);
    result.report = write_report(&cfg.out, "update-cpu", &md, js, &provenance)?;
    Ok(result)
}

/// The server's description: compare-updates' (key, update ACL, journal,
/// one worker, Knot's one TCP worker), ready once its zones answer.
fn spec_for(
    cfg: &CpuConfig,
    kind: Kind,
    dir: &Path,
    zones: &[(String, PathBuf)],
) -> Result<lode_peers::Spec, CostError> {
    fresh_dir(dir)?;
    let launch = Launch {
        kind,
        port: cfg.port,
        workers: 1,
        zones: zones.to_vec(),
        dir: dir.to_path_buf(),
        log: dir.join("serve.log"),
        cpu: cfg.server_cpu,
        lode: cfg.lode.clone(),
        update_key: Some(cfg.key.clone()),
        guard: Default::default(),
        metrics: Default::default(),
        socket_buffer: None,
    };
    let mut spec = launch.spec().map_err(|e| CostError(e.to_string()))?;
    spec.ready = Ready::Zones;
    spec.ready_timeout = cfg.load_limit;
    if kind == Kind::Lode {
        let mut extra = format!("zonefile-sync = {}\n", cfg.zonefile_sync);
        if let Some(n) = cfg.background_workers {
            let _ = writeln!(extra, "background-workers = {n}");
        }
        spec.server_extra = spec.server_extra.replace("zonefile-sync = -1\n", &extra);
        for z in &mut spec.zones {
            // A zone file written back is Lode's own copy: the set stays as generated.
            if let (true, lode_peers::Role::Primary(Content::File(f))) =
                (cfg.zonefile_sync >= 0, &z.role)
            {
                z.role = lode_peers::Role::Primary(Content::Copy(f.clone()));
            }
        }
    }
    if cfg.signed {
        for z in &mut spec.zones {
            z.signing = Some(Signing::default());
            if kind == Kind::Knot {
                z.extra.push_str("    zonefile-load: whole\n");
            }
        }
        if kind == Kind::Knot {
            spec.background_workers = Some(2);
        }
    }
    Ok(spec)
}

/// One server: started, probed, loaded, stopped.
fn measure(
    cfg: &CpuConfig,
    kind: Kind,
    zones: &[(String, PathBuf)],
    last: &[String],
) -> Result<CpuRun, CostError> {
    let dir = cfg.work.join(kind.name());
    let spec = spec_for(cfg, kind, &dir, zones)?;
    let mut server =
        Server::start(&spec).map_err(|e| CostError(format!("{kind}: cannot start: {e}")))?;
    let signed_after = match cfg.signed {
        true => Some(wait_signed(&mut server, last, cfg.sign_limit)),
        false => None,
    };
    let fsync = durable::fsync_probe(&dir, cfg.fsync).map_err(|e| CostError(e.to_string()))?;
    say(&format!("{kind}: fsync probe: {fsync}"));
    let names = zones
        .iter()
        .map(|(apex, _)| {
            lode_wire::Name::parse(apex, Some(&lode_wire::Name::root()))
                .map_err(|e| CostError(format!("zone {apex}: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let dcfg = DurableConfig {
        server: server.addr(),
        zones: names,
        clients: cfg.clients,
        batch: 1,
        window: 1,
        duration: cfg.duration,
        timeout: Duration::from_secs(2),
        key: Some(cfg.key.clone()),
        first: DURABLE_FIRST,
        digits: SUFFIX_DIGITS,
        end: None,
    };
    dcfg.check().map_err(|e| CostError(e.to_string()))?;
    let cpu_now = |s: &mut Server| s.sample().map(|x| x.cpu.as_secs_f64());
    let Some(before) = cpu_now(&mut server) else {
        return fail(format!("{kind} exited; see {}", dir.display()));
    };
    let perf = match (&cfg.perf, kind) {
        (Some(mode), Kind::Lode) => Some(perf_record(cfg, mode, server.pid())?),
        _ => None,
    };
    let updates = durable::run(&dcfg, &AtomicBool::new(false));
    let after = cpu_now(&mut server);
    if let Some(mut p) = perf {
        let _ = p.wait();
    }
    server.stop();
    let updates = updates.map_err(|e| CostError(e.to_string()))?;
    let Some(after) = after else {
        return fail(format!(
            "{kind} exited during the updates; see {}",
            dir.display()
        ));
    };
    Ok(CpuRun {
        server: kind.name().into(),
        fsync,
        updates,
        cpu_secs: after - before,
        signed_after,
    })
}

/// Waits until each of `last` is answered with its signature (DO=1), every
/// 2 s, at most `limit` from the server's start (a server may sign new
/// zones in steps, answering meanwhile): the seconds since its start and
/// the names still unsigned.
fn wait_signed(server: &mut Server, last: &[String], limit: Duration) -> (f64, usize) {
    let addr = server.addr();
    let mut left: Vec<&String> = last.iter().collect();
    while server.started().elapsed() < limit && server.alive() {
        left.retain(|n| !crate::signing::signed_answer(addr, n, lode_wire::Rtype::NAPTR));
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    (server.started().elapsed().as_secs_f64(), left.len())
}

/// `perf record -F 999 --call-graph MODE -p PID -o OUT/perf.data -- sleep DURATION`.
fn perf_record(cfg: &CpuConfig, mode: &str, pid: u32) -> Result<Child, CostError> {
    std::fs::create_dir_all(&cfg.out).map_err(|e| super::io(&cfg.out, e))?;
    let data = cfg.out.join("perf.data");
    say(&format!("perf record of Lode into {}", data.display()));
    Command::new("perf")
        .args(["record", "-F", "999", "--call-graph", mode, "-p"])
        .arg(pid.to_string())
        .arg("-o")
        .arg(&data)
        .args(["--", "sleep"])
        .arg(format!("{}", cfg.duration.as_secs_f64()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| CostError(format!("perf: {e} (Debian package linux-perf)")))
}

/// The report: settings, a table of the servers, the comparison, the notes.
fn report(cfg: &CpuConfig, r: &CpuResult) -> (String, Value) {
    let mut m = format!(
        "# CPU per durable update\n\n{} ENUM numbers in {} zones (prefix {}), TSIG {} updates \
         of one NAPTR each over TCP from {} closed-loop clients on CPU {} for {:.0} s; the server \
         on CPU {} with one worker, its journal in a fresh folder; Lode's zonefile-sync {}{}.\n\n\
         | server | updates/s | server CPU s | µs per update | fdatasync/s | updates per fdatasync | latency p50 / p99 µs |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
        cfg.records,
        cfg.zones,
        cfg.prefix,
        cfg.key.algorithm().name(),
        cfg.clients,
        cfg.tester_cpu,
        cfg.duration.as_secs_f64(),
        cfg.server_cpu,
        cfg.zonefile_sync,
        if cfg.signed {
            ", zones signed by each server (its default policy)"
        } else {
            ""
        }
    );
    for run in &r.runs {
        let u = &run.updates;
        let _ = writeln!(
            m,
            "| {} | {:.0} | {:.3} | {} | {:.0} | {} | {} / {} |",
            run.server,
            u.updates_per_sec(),
            run.cpu_secs,
            run.us_per_update()
                .map_or("-".into(), |x| format!("{x:.1}")),
            run.fsync.per_sec(),
            durable::ratio(u.updates_per_sec(), run.fsync.per_sec())
                .map_or("-".into(), |x| format!("{x:.2}")),
            u.latency_us[0],
            u.latency_us[1]
        );
    }
    if let Some(c) = r.comparison() {
        let _ = writeln!(m, "\n{c}.");
    }
    write_notes(&mut m, &r.notes);
    let js = json!({
        "settings": {
            "records": cfg.records,
            "zones": cfg.zones,
            "prefix": cfg.prefix,
            "clients": cfg.clients,
            "duration_secs": cfg.duration.as_secs_f64(),
            "zonefile_sync": cfg.zonefile_sync,
            "background_workers": cfg.background_workers,
            "signed": cfg.signed,
            "server_cpu": cfg.server_cpu,
            "tester_cpu": cfg.tester_cpu,
            "tsig_algorithm": cfg.key.algorithm().name(),
        },
        "servers": r.runs.iter().map(CpuRun::json).collect::<Vec<_>>(),
        "notes": r.notes,
    });
    (m, js)
}
