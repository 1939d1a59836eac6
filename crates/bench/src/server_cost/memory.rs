//! `lode-bench update-memory`: Lode's memory after a million changes to a
//! 5 M-record zone and the compactions they trigger, against a fresh load of
//! the same final contents; and its peak while the changes ran.
//!
//! ```text
//!  gen enum (1 zone, N numbers) ─▶ lode serve (updates allowed, journal, zonefile-sync -1)
//!    VmRSS loaded; VmHWM reset (clear_refs 5)
//!  lode update (500 records per message, 16 in flight, 2 connections), N/15 each:
//!    adds (new numbers) · deletions · changes (old NAPTR out, then the new one in)
//!  the zone goes quiet; every compaction started has ended ─▶ VmRSS, VmHWM
//!  lode zone-flush ─▶ stop ─▶ a second lode loads the file written ─▶ its VmRSS
//!  ─▶ update-memory.md, update-memory.json, serve.log
//! ```

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lode_peers::{Acl, Action, Content, Key, Server, Zone};
use serde_json::json;

use super::{div, enum_set, fail, io, lode_spec, status_bytes, write_report, CostError};
use crate::compare::say;
use crate::gen::enumset::{EnumLayout, EnumSetSpec};
use crate::provenance::Provenance;

/// Settings of `lode-bench update-memory`.
#[derive(Debug, Clone)]
pub struct MemoryConfig {
    /// Report folder (the report and the server's log).
    pub out: PathBuf,
    /// Scratch folder: the set, the update files, the servers' folders.
    pub work: PathBuf,
    /// The lode binary: the server, `lode update` and `lode zone-flush`.
    pub lode: PathBuf,
    /// Numbers of the zone; a fifth of them are changed.
    pub records: u64,
    /// Port of the server on 127.0.0.1.
    pub port: u16,
    /// Records per UPDATE message, messages in flight, connections (`lode update -b -w -c`).
    pub shape: (usize, usize, usize),
    /// Longest `lode update` run (each of the four).
    pub step_limit: Duration,
    /// Longest wait for the zone to load.
    pub load_limit: Duration,
}

/// What was measured, bytes unless named otherwise.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryResult {
    /// Records each of the three kinds of change touched (adds, deletions, changes).
    pub third: u64,
    /// Resident once loaded, before the updates.
    pub loaded: u64,
    /// Resident after the updates and compactions.
    pub after: u64,
    /// Peak resident (VmHWM) during the updates and compactions.
    pub peak: u64,
    /// Resident of a fresh load of the final contents.
    pub fresh: u64,
    /// Seconds the four `lode update` runs took.
    pub update_secs: f64,
    /// Compactions the server logged.
    pub compactions: u64,
    /// NAPTR records in the file written at the end.
    pub final_records: u64,
    /// The Markdown report written.
    pub report: PathBuf,
}

impl MemoryResult {
    /// After ÷ fresh.
    pub fn ratio(&self) -> f64 {
        div(self.after as f64, self.fresh as f64)
    }

    /// The figures as the script printed them: the table and the summary.
    pub fn lines(&self, records: u64) -> Vec<String> {
        let per = |b: u64, n: u64| div(b as f64, n as f64);
        let kib = |b: u64| b / 1024;
        vec![
            format!(
                "# Memory after {} updates of {records} records",
                3 * self.third
            ),
            String::new(),
            "| | resident KiB | bytes per record |".into(),
            "|---|---:|---:|".into(),
            format!(
                "| loaded, before the updates ({records} records) | {} | {:.2} |",
                kib(self.loaded),
                per(self.loaded, records)
            ),
            format!(
                "| after the updates and compaction | {} | {:.2} |",
                kib(self.after),
                per(self.after, self.final_records)
            ),
            format!(
                "| fresh load of the same contents | {} | {:.2} |",
                kib(self.fresh),
                per(self.fresh, self.final_records)
            ),
            format!(
                "| peak (VmHWM) during the updates and compactions | {} | |",
                kib(self.peak)
            ),
            String::new(),
            format!(
                "After / fresh: {:.3}. Updates: {} record operations in {:.1} s; {} compactions. \
                 Final records (NAPTR): {}.",
                self.ratio(),
                4 * self.third,
                self.update_secs,
                self.compactions,
                self.final_records
            ),
        ]
    }
}

/// The key's name in the server's configuration and in `lode update`'s key file.
const KEY_NAME: &str = "k.";

/// Runs the measurement; the report in `cfg.out`.
pub fn run(cfg: &MemoryConfig) -> Result<MemoryResult, CostError> {
    if cfg.records < 15 {
        return fail("records: at least 15 (a fifteenth of them is each kind of change)");
    }
    let provenance = Provenance::collect(Some(&cfg.lode), &[]);
    let mut spec = EnumSetSpec::new(cfg.records, 1);
    spec.queries = Some(1000);
    let (layout, zones) = enum_set(&spec, &cfg.work.join("set"), false)?;
    let (zone, file) = zones[0].clone();
    let third = cfg.records / 15;
    write_changes(&layout, third, &cfg.work)?;
    let key = random_key()?;
    let key_file = cfg.work.join("key");
    std::fs::write(&key_file, format!("{}\n", key.to_spec())).map_err(|e| io(&key_file, e))?;

    let mut r = MemoryResult {
        third,
        ..MemoryResult::default()
    };
    say(&format!("loading {zone} ({} records)", cfg.records));
    let dir = cfg.work.join("server");
    let mut server = start_lode(cfg, &dir, &zone, &file, Some(&key))?;
    let pid = server.pid();
    r.loaded = status_bytes(pid, "VmRSS");
    // The peak from here on (the load's own peak is measured by the query comparison).
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5")
        .map_err(|e| CostError(format!("resetting the peak of {pid}: {e}")))?;

    let started = Instant::now();
    let steps: [(&str, &[&str], &str); 4] = [
        ("adds", &["--enum-apex", "e164.arpa"], "adds.csv"),
        ("deletions", &["--delete"], "deletes.zone"),
        ("changes (old out)", &["--delete"], "change-old.zone"),
        ("changes (new in)", &["--add"], "change-new.zone"),
    ];
    for (what, args, input) in steps {
        say(&format!("{third} {what}"));
        update(cfg, &server, &zone, &key_file, args, &cfg.work.join(input))?;
    }
    r.update_secs = started.elapsed().as_secs_f64();
    wait_compactions(&mut server)?;
    r.after = status_bytes(pid, "VmRSS");
    r.peak = status_bytes(pid, "VmHWM");
    flush(cfg, &server, &zone)?;
    server.stop();
    let log = server.log();
    r.compactions = log.matches("compacted ").count() as u64;
    let _ = std::fs::write(cfg.out.join("serve.log"), &log);
    r.final_records = std::fs::read_to_string(&file)
        .map_err(|e| io(&file, e))?
        .lines()
        .filter(|l| l.contains("NAPTR"))
        .count() as u64;

    say("fresh load of the final contents");
    let mut fresh = start_lode(cfg, &cfg.work.join("fresh"), &zone, &file, None)?;
    r.fresh = status_bytes(fresh.pid(), "VmRSS");
    fresh.stop();

    let lines = r.lines(cfg.records);
    let md = lines.join("\n") + "\n";
    let js = json!({
        "settings": {
            "records": cfg.records,
            "changes_each": third,
            "batch": cfg.shape.0,
            "window": cfg.shape.1,
            "connections": cfg.shape.2,
        },
        "loaded_bytes": r.loaded,
        "after_bytes": r.after,
        "fresh_bytes": r.fresh,
        "peak_bytes": r.peak,
        "after_per_fresh": r.ratio(),
        "loaded_bytes_per_record": div(r.loaded as f64, cfg.records as f64),
        "after_bytes_per_record": div(r.after as f64, r.final_records as f64),
        "fresh_bytes_per_record": div(r.fresh as f64, r.final_records as f64),
        "record_operations": 4 * third,
        "update_secs": r.update_secs,
        "compactions": r.compactions,
        "final_records": r.final_records,
    });
    r.report = write_report(&cfg.out, "update-memory", &md, js, &provenance)?;
    Ok(r)
}

/// Lode serving `zone` from `file` with the machine's worker count (as `lode
/// serve` without --workers); with `key`, updates signed with it from
/// 127.0.0.1 allowed, a journal, zone files not written back.
fn start_lode(
    cfg: &MemoryConfig,
    dir: &Path,
    zone: &str,
    file: &Path,
    key: Option<&lode_tsig::Key>,
) -> Result<Server, CostError> {
    let mut spec = lode_spec(&cfg.lode, cfg.port, dir, cfg.load_limit)?;
    spec.workers = std::thread::available_parallelism().ok().map(|n| n.get());
    let mut z = Zone::primary(zone, Content::File(file.to_path_buf())).journal(key.is_some());
    if let Some(k) = key {
        let name = k.name().to_string();
        spec = spec
            .key(Key::new(&name, k.algorithm().name(), &k.secret_base64()))
            .acl(
                Acl::new("up", &[Action::Update])
                    .from("127.0.0.1")
                    .key(&name),
            );
        spec.server_extra = "zonefile-sync = -1\n".into();
        z = z.acls(&["up"]);
    }
    Server::start(&spec.zone(z)).map_err(|e| CostError(format!("lode: {e}")))
}

/// A fresh random hmac-sha256 key named [`KEY_NAME`].
pub(crate) fn random_key() -> Result<lode_tsig::Key, CostError> {
    let mut secret = [0u8; 32];
    let mut f =
        std::fs::File::open("/dev/urandom").map_err(|e| io(Path::new("/dev/urandom"), e))?;
    std::io::Read::read_exact(&mut f, &mut secret).map_err(|e| io(Path::new("/dev/urandom"), e))?;
    let name = lode_wire::Name::parse(KEY_NAME, None).map_err(|e| CostError(e.to_string()))?;
    lode_tsig::Key::new(&name, lode_tsig::Algorithm::HmacSha256, &secret)
        .map_err(|e| CostError(e.to_string()))
}

/// The four input files in `dir`: `adds.csv` (numbers `records ..` + third,
/// new), `deletes.zone` (the NAPTRs of numbers `0 ..` third),
/// `change-old.zone` and `change-new.zone` (those of numbers third ..
/// 2 × third as generated, and with another URI). Owners are relative to the zone.
pub fn write_changes(layout: &EnumLayout, third: u64, dir: &Path) -> Result<(), CostError> {
    let digits = layout.suffix_digits();
    let number = |i: u64| {
        let mut d = [0u8; lode_wire::e164::MAX_DIGITS];
        let n = layout.number(0, i, &mut d);
        String::from_utf8_lossy(&d[..n]).into_owned()
    };
    let uri = |i: u64, tag: &str| format!("sip:+{}{tag}@example.net", number(i));
    let record = |i: u64, tag: &str| {
        let suffix = format!("{i:0digits$}");
        let owner: Vec<String> = suffix.chars().rev().map(String::from).collect();
        format!(
            "{} 3600 IN NAPTR 100 10 \"u\" \"E2U+sip\" \"!^.*$!{}!\" .\n",
            owner.join("."),
            uri(i, tag)
        )
    };
    let n = layout.records();
    write_lines(&dir.join("adds.csv"), n..n + third, |i| {
        format!("+{}, {}\n", number(i), uri(i, ""))
    })?;
    write_lines(&dir.join("deletes.zone"), 0..third, |i| record(i, ""))?;
    let changed = third..2 * third;
    write_lines(&dir.join("change-old.zone"), changed.clone(), |i| {
        record(i, "")
    })?;
    write_lines(&dir.join("change-new.zone"), changed, |i| record(i, "x"))
}

/// Writes `line(i)` for each `i` of `range` into a new file at `path`.
fn write_lines(
    path: &Path,
    range: std::ops::Range<u64>,
    line: impl Fn(u64) -> String,
) -> Result<(), CostError> {
    let f = std::fs::File::create(path).map_err(|e| io(path, e))?;
    let mut w = std::io::BufWriter::new(f);
    for i in range {
        w.write_all(line(i).as_bytes()).map_err(|e| io(path, e))?;
    }
    w.flush().map_err(|e| io(path, e))
}

/// `timeout LIMIT lode update -q -s SERVER -k KEYFILE -z ZONE -b -w -c ARGS
/// INPUT` ([`MemoryConfig::step_limit`]); its output appended to `work/update.log`.
fn update(
    cfg: &MemoryConfig,
    server: &Server,
    zone: &str,
    key_file: &Path,
    args: &[&str],
    input: &Path,
) -> Result<(), CostError> {
    let (b, w, c) = cfg.shape;
    let log_path = cfg.work.join("update.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| io(&log_path, e))?;
    let log2 = log.try_clone().map_err(|e| io(&log_path, e))?;
    let status = Command::new("timeout")
        .arg(format!("{}", cfg.step_limit.as_secs_f64()))
        .arg(&cfg.lode)
        .args(["update", "-q", "-s", &server.addr().to_string(), "-k"])
        .arg(key_file)
        .args(["-z", zone, "-b", &b.to_string(), "-w", &w.to_string()])
        .args(["-c", &c.to_string()])
        .args(args)
        .arg(input)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .status()
        .map_err(|e| CostError(format!("lode update: {e}")))?;
    if status.success() {
        return Ok(());
    }
    fail(format!(
        "lode update {} {}: {} (see {})",
        args.join(" "),
        input.display(),
        match status.code() {
            Some(124) => "stopped at the time limit".into(),
            _ => status.to_string(),
        },
        log_path.display()
    ))
}

/// The zone goes quiet: after 5 s without updates the writer folds what is
/// left of the delta into a new base. Waits past that, then until every
/// compaction started has ended (a compaction can start right after another
/// ends, so the log's last line alone does not say), at most 180 s.
fn wait_compactions(server: &mut Server) -> Result<(), CostError> {
    std::thread::sleep(Duration::from_secs(8));
    let deadline = Instant::now() + Duration::from_secs(180);
    while Instant::now() < deadline {
        let log = server.log();
        let started = log.matches("compacting ").count();
        let ended = log.matches("compacted ").count()
            + log.matches("compaction failed").count()
            + log.matches("does not apply to its result").count();
        if started <= ended {
            break;
        }
        if !server.alive() {
            return fail("lode exited during the compactions; see its serve.log");
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    std::thread::sleep(Duration::from_secs(1));
    Ok(())
}

/// `lode zone-flush --control SOCKET ZONE`: the zone written to its file (a
/// first attempt may meet the writer busy; the second must succeed).
fn flush(cfg: &MemoryConfig, server: &Server, zone: &str) -> Result<(), CostError> {
    let socket = server.dir().join("ctl.sock");
    let mut last = String::new();
    for _ in 0..2 {
        let out = Command::new(&cfg.lode)
            .args(["zone-flush", "--timeout", "600", "--control"])
            .arg(&socket)
            .arg(zone)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| CostError(format!("lode zone-flush: {e}")))?;
        if out.status.success() {
            return Ok(());
        }
        last = String::from_utf8_lossy(&out.stderr).into_owned();
    }
    let mut msg = String::from("lode zone-flush failed");
    let _ = write!(msg, ": {}", last.trim());
    fail(msg)
}
