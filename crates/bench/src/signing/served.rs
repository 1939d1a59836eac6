//! `lode-bench signing --part memory` and `--part answers`: an NSEC3-signed
//! zone (signed by Lode, taken by AXFR) served pre-signed — the resident
//! memory of Lode and Knot above an empty server, bytes per record; and the
//! server CPU per answer with DO=1 (dnsperf -D at a fixed rate, existing
//! names and NXDOMAIN, signed and unsigned) of Lode, Knot and NSD.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use lode_peers::{Content, Kind, Logging, Ready, Server, Signing, Spec, Zone};
use serde_json::{json, Value};

use super::{axfr, lines_of, lode_sign_spec, wait_served, OneZone};
use crate::compare::ceiling::parse_dnsperf;
use crate::compare::say;
use crate::server_cost::{div, fail, fresh_dir, io, lode_spec, status_bytes, CostError};

/// Where the servers run and how long they may take.
#[derive(Debug, Clone)]
pub struct ServedConfig<'a> {
    /// The lode binary.
    pub lode: &'a Path,
    /// Scratch folder: the servers' folders.
    pub work: &'a Path,
    /// The port of the server (one at a time) on 127.0.0.1.
    pub port: u16,
    /// Longest wait for a signing or a load.
    pub limit: Duration,
}

/// The NSEC3-signed zone's text beside the set's zone file (`signed.zone`),
/// made by Lode (its NSEC3 policy, the zone taken by AXFR) unless there
/// already: its path and records.
pub fn signed_zone(cfg: &ServedConfig, zone: &OneZone) -> Result<(PathBuf, u64), CostError> {
    let path = zone.dir.join("signed.zone");
    if path.is_file() {
        let n = lines_of(&path, |_| ())?;
        return Ok((path, n));
    }
    say("signing the zone with NSEC3 (Lode) and taking it by AXFR");
    let signing = Signing {
        nsec3: true,
        ..Signing::default()
    };
    let spec = lode_sign_spec(
        cfg.lode,
        cfg.port,
        &cfg.work.join("sign"),
        zone,
        signing,
        &[],
        cfg.limit,
    )?;
    let mut server = Server::start(&spec).map_err(|e| CostError(format!("lode: {e}")))?;
    server
        .wait_log("signed whole", cfg.limit)
        .map_err(CostError)?;
    wait_served(&mut server, &zone.apex, cfg.limit)?;
    let addr = server.addr();
    let part = path.with_extension("part");
    let f = std::fs::File::create(&part).map_err(|e| io(&part, e))?;
    let mut w = std::io::BufWriter::new(f);
    let t = axfr(
        addr,
        &zone.apex,
        cfg.limit,
        Some(&mut w as &mut dyn std::io::Write),
    )?;
    w.flush().map_err(|e| io(&part, e))?;
    drop(w);
    server.stop();
    std::fs::rename(&part, &path).map_err(|e| io(&path, e))?;
    Ok((path, t.records))
}

/// A server of `kind` serving `file` pre-signed (or unsigned) on one worker,
/// pinned to `cpu` if given, no journal; ready once the zone answers.
fn serving(
    cfg: &ServedConfig,
    kind: Kind,
    dir: &Path,
    apex: &str,
    file: &Path,
    cpu: Option<usize>,
) -> Result<Server, CostError> {
    let mut spec = match kind {
        Kind::Lode => lode_spec(cfg.lode, cfg.port, dir, cfg.limit)?,
        _ => {
            fresh_dir(dir)?;
            let mut s = Spec::new(kind, cfg.port).stop_with_parent();
            s.dir = Some(dir.to_path_buf());
            s.ready_timeout = cfg.limit;
            s
        }
    };
    if kind == Kind::Knot {
        spec.tcp_workers = Some(1);
        spec.background_workers = Some(1);
    }
    spec.cpus = cpu.into_iter().collect();
    spec.ready = Ready::Zones;
    spec.logging = Logging::Plain;
    let spec = spec.zone(Zone::primary(apex, Content::File(file.to_path_buf())).journal(false));
    Server::start(&spec).map_err(|e| CostError(format!("{kind}: {e}")))
}

/// Resident memory of a server: loaded, and empty.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MemoryRow {
    /// Resident with the signed zone, bytes.
    pub signed: u64,
    /// Resident with an empty zone, bytes.
    pub empty: u64,
}

impl MemoryRow {
    /// (signed − empty) ÷ records.
    pub fn per_record(&self, records: u64) -> f64 {
        div(
            self.signed.saturating_sub(self.empty) as f64,
            records as f64,
        )
    }
}

/// The memory part: Lode's and Knot's resident memory with the signed zone and
/// with an empty one (one SOA, NS and A), a second after the zone answers.
pub fn memory(
    cfg: &ServedConfig,
    zone: &OneZone,
    signed: &Path,
) -> Result<Vec<(Kind, MemoryRow)>, CostError> {
    let empty = cfg.work.join("empty.zone");
    let text = format!(
        "$ORIGIN {}\n@ 3600 SOA ns host 1 3600 600 86400 300\n@ 3600 NS ns\nns 3600 A 192.0.2.1\n",
        zone.apex
    );
    std::fs::write(&empty, text).map_err(|e| io(&empty, e))?;
    let mut rows = Vec::new();
    for kind in [Kind::Lode, Kind::Knot] {
        let mut row = MemoryRow::default();
        for (what, file) in [("signed", signed), ("empty", empty.as_path())] {
            say(&format!("{kind}: {what} zone"));
            let dir = cfg.work.join(format!("memory-{kind}-{what}"));
            let mut server = serving(cfg, kind, &dir, &zone.apex, file, None)?;
            std::thread::sleep(Duration::from_secs(1));
            let rss = status_bytes(server.pid(), "VmRSS");
            server.stop();
            match what {
                "signed" => row.signed = rss,
                _ => row.empty = rss,
            }
        }
        rows.push((kind, row));
    }
    Ok(rows)
}

/// One dnsperf run against one server.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerRow {
    /// The server.
    pub server: String,
    /// `signed` or `unsigned`.
    pub zone: String,
    /// `exist` or `nx`.
    pub kind: String,
    /// Queries answered (dnsperf's completed).
    pub answered: u64,
    /// Server CPU seconds (utime + stime over its processes).
    pub cpu_secs: f64,
    /// Of it in the kernel (stime).
    pub sys_secs: f64,
}

impl AnswerRow {
    /// µs of server CPU per answer.
    pub fn us_per_answer(&self) -> f64 {
        div(self.cpu_secs * 1e6, self.answered as f64)
    }

    /// µs of it in the kernel.
    pub fn sys_us_per_answer(&self) -> f64 {
        div(self.sys_secs * 1e6, self.answered as f64)
    }

    /// The script's row.
    pub fn line(&self) -> String {
        format!(
            "{:<6} {:<9} {:<6} {:>9} {:>12.3} {:>14.2} {:>14.2}",
            self.server,
            self.zone,
            self.kind,
            self.answered,
            self.cpu_secs,
            self.us_per_answer(),
            self.sys_us_per_answer()
        )
    }

    /// The JSON object.
    pub fn json(&self) -> Value {
        json!({
            "server": self.server,
            "zone": self.zone,
            "kind": self.kind,
            "answered": self.answered,
            "cpu_secs": self.cpu_secs,
            "kernel_secs": self.sys_secs,
            "us_per_answer": self.us_per_answer(),
            "kernel_us_per_answer": self.sys_us_per_answer(),
        })
    }
}

/// The answers table's heading.
pub fn answers_heading() -> String {
    format!(
        "{:<6} {:<9} {:<6} {:>9} {:>12} {:>14} {:>14}",
        "server", "zone", "kind", "answered", "cpu s", "µs per answer", "of it in kernel"
    )
}

/// Settings of the answers part.
#[derive(Debug, Clone)]
pub struct AnswersConfig {
    /// Servers, in run order.
    pub servers: Vec<Kind>,
    /// dnsperf's -Q.
    pub rate: u64,
    /// dnsperf's -l, seconds.
    pub secs: u64,
    /// Names asked (a sample of the zone's NAPTR owners).
    pub names: usize,
    /// CPU of the server.
    pub server_cpu: usize,
    /// CPU of dnsperf.
    pub tester_cpu: usize,
}

/// The query files: `exist` (NAPTR owners of the signed zone, a spread
/// sample of `n`) and `nx` (the same with `nx-` before them).
pub fn query_files(signed: &Path, dir: &Path, n: usize) -> Result<[PathBuf; 2], CostError> {
    let mut owners: Vec<String> = Vec::new();
    lines_of(signed, |l| {
        let mut f = l.split_whitespace();
        if let (Some(owner), Some("NAPTR")) = (f.next(), f.nth(2)) {
            owners.push(owner.to_string());
        }
    })?;
    owners.sort_unstable();
    owners.dedup();
    if owners.is_empty() {
        return fail(format!("{}: no NAPTR records", signed.display()));
    }
    let step = owners.len().div_ceil(n.max(1));
    let sample: Vec<&String> = owners.iter().step_by(step.max(1)).collect();
    fresh_dir(dir)?;
    let files = [dir.join("exist.txt"), dir.join("nx.txt")];
    for (file, prefix) in files.iter().zip(["", "nx-"]) {
        let body: String = sample
            .iter()
            .map(|o| format!("{prefix}{o} NAPTR\n"))
            .collect();
        std::fs::write(file, body).map_err(|e| io(file, e))?;
    }
    Ok(files)
}

/// utime and stime (ticks) of `pid` and its descendants (NSD's processes).
fn cpu_ticks(pid: u32) -> (u64, u64) {
    lode_peers::process_tree(pid)
        .into_iter()
        .filter_map(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            let f: Vec<u64> = stat[stat.rfind(')')? + 1..]
                .split_whitespace()
                .skip(11)
                .take(2)
                .filter_map(|x| x.parse().ok())
                .collect();
            Some((*f.first()?, *f.get(1)?))
        })
        .fold((0, 0), |(u, s), (a, b)| (u + a, s + b))
}

/// The answers part, one round: each server, on the signed then the
/// unsigned zone, dnsperf -D with existing names then NXDOMAIN.
pub fn answers(
    cfg: &ServedConfig,
    a: &AnswersConfig,
    zone: &OneZone,
    signed: &Path,
    queries: &[PathBuf; 2],
) -> Result<Vec<AnswerRow>, CostError> {
    let tick = crate::compare::sys::TICKS;
    let mut rows = Vec::new();
    for &kind in &a.servers {
        for (label, file) in [("signed", signed), ("unsigned", zone.file.as_path())] {
            let dir = cfg.work.join(format!("answers-{kind}-{label}"));
            let mut server = serving(cfg, kind, &dir, &zone.apex, file, Some(a.server_cpu))?;
            for (what, q) in ["exist", "nx"].iter().zip(queries) {
                let (u0, s0) = cpu_ticks(server.pid());
                let answered = dnsperf(cfg.port, a, q, &dir.join(format!("dnsperf-{what}.txt")))?;
                let (u1, s1) = cpu_ticks(server.pid());
                let row = AnswerRow {
                    server: kind.name().into(),
                    zone: label.into(),
                    kind: (*what).into(),
                    answered,
                    cpu_secs: (u1 + s1).saturating_sub(u0 + s0) as f64 / tick,
                    sys_secs: s1.saturating_sub(s0) as f64 / tick,
                };
                say(&row.line());
                rows.push(row);
            }
            server.stop();
        }
    }
    Ok(rows)
}

/// `taskset -c CPU dnsperf -s 127.0.0.1 -p PORT -d FILE -D -l SECS -Q RATE -c 4`:
/// the queries completed; its output in `log`.
fn dnsperf(port: u16, a: &AnswersConfig, queries: &Path, log: &Path) -> Result<u64, CostError> {
    let out = Command::new("taskset")
        .args([
            "-c",
            &a.tester_cpu.to_string(),
            "dnsperf",
            "-s",
            "127.0.0.1",
        ])
        .args(["-p", &port.to_string(), "-d"])
        .arg(queries)
        .args([
            "-D",
            "-l",
            &a.secs.to_string(),
            "-Q",
            &a.rate.to_string(),
            "-c",
            "4",
        ])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| CostError(format!("dnsperf: {e} (Debian package dnsperf)")))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let _ = std::fs::write(log, &text);
    match parse_dnsperf(&text) {
        Some((sent, lost, _)) => Ok(sent.saturating_sub(lost)),
        None => fail(format!(
            "dnsperf output not understood; see {}",
            log.display()
        )),
    }
}
