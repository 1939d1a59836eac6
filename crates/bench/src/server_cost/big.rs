//! `lode-bench big-sets`: the large-set figures the query comparison does not
//! take. Target 5: 100 M ENUM records in one machine — Lode's start until a
//! name of the last zone answers, its memory, zero-loss rates. Target 6: the
//! zone-text parse rate on every core (`lode check`) and Lode's start of the
//! 20 M set from snapshots (`lode snapshot`, `lode serve --snapshot-dir`).
//!
//! ```text
//!  gen enum N in 100 zones ─▶ lode serve (1 worker, server CPU) ─▶ first answer in the last
//!    zone, VmRSS, VmHWM ─▶ lode-bench rate (tester CPU): existing, NXDOMAIN ─▶ set removed
//!  gen enum 20 M in 4 zones (prefix 131) ─▶ lode check --syntax-only, lode check (× runs)
//!    ─▶ lode snapshot ─▶ lode serve --snapshot-dir (× runs) ─▶ lode serve from text
//!  ─▶ big-sets.md, big-sets.json
//! ```

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lode_peers::{Content, Ready, Server, Zone};
use lode_wire::Rtype;
use serde_json::{json, Value};

use super::{div, enum_set, fail, io, lode_spec, mib, status_bytes, write_report, CostError};
use crate::gen::enumset::EnumSetSpec;
use crate::provenance::Provenance;
use crate::xdp::load::run_bounded;
use crate::zones::probe;

/// Zones of the large set.
pub const BIG_ZONES: u64 = 100;
/// Zones of the parse and snapshot set.
pub const PARSE_ZONES: u64 = 4;
/// Leading digits of the parse and snapshot set (Shen & Schulzrinne's 20 M set).
pub const PARSE_PREFIX: &str = "131";
/// Query lines per kind of the large set.
const BIG_QUERIES: u64 = 1_000_000;

/// Settings of `lode-bench big-sets`.
#[derive(Debug, Clone)]
pub struct BigConfig {
    /// Report folder.
    pub out: PathBuf,
    /// Scratch folder: the sets, the snapshots, the servers' folders.
    pub work: PathBuf,
    /// The lode binary measured (server, `lode check`, `lode snapshot`).
    pub lode: PathBuf,
    /// The lode-bench binary whose `rate` searches the zero-loss rates.
    pub bench: PathBuf,
    /// Numbers of the large set.
    pub records: u64,
    /// Numbers of the parse and snapshot set.
    pub parse_records: u64,
    /// Runs of each `lode check` and of the start from snapshots.
    pub runs: usize,
    /// Seconds per rate step.
    pub step: f64,
    /// Rate searches per query kind (the median is reported).
    pub repeat: usize,
    /// Upper bound of the rate searches, q/s.
    pub high: u64,
    /// Resolution of the rate searches, q/s.
    pub resolution: u64,
    /// CPU the server is pinned to.
    pub server_cpu: usize,
    /// CPU the rate tester is pinned to.
    pub tester_cpu: usize,
    /// Port of the large set's server on 127.0.0.1; the snapshot starts use
    /// the next, the start from text the one after.
    pub port: u16,
    /// Longest wait for a server's first answer in the last zone.
    pub load_limit: Duration,
}

/// A server's start: seconds to the first answer in the last zone, memory then.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Start {
    /// Seconds from the start.
    pub secs: f64,
    /// VmRSS, bytes.
    pub rss: u64,
    /// VmHWM, bytes.
    pub hwm: u64,
}

/// What `big-sets` measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BigResult {
    /// Seconds `gen enum` took for the large set.
    pub gen_secs: f64,
    /// Bytes of its folder (zone text, query files).
    pub text_bytes: u64,
    /// Lode's start on it.
    pub load: Start,
    /// Median zero-loss rate, existing names, q/s.
    pub existing: Option<u64>,
    /// Median zero-loss rate, NXDOMAIN, q/s.
    pub nxdomain: Option<u64>,
    /// Bytes of zone text of the parse set.
    pub parse_bytes: u64,
    /// Seconds of each `lode check --syntax-only`.
    pub parse_secs: Vec<f64>,
    /// Seconds of each `lode check`.
    pub build_secs: Vec<f64>,
    /// Seconds `lode snapshot` took.
    pub snapshot_secs: f64,
    /// Bytes of the snapshots.
    pub snapshot_bytes: u64,
    /// Each start from the snapshots.
    pub snapshot_starts: Vec<Start>,
    /// The start from text.
    pub text_start: Start,
    /// The Markdown report.
    pub report: PathBuf,
}

/// MiB/s of `bytes` in `secs`.
fn rate_mib(bytes: u64, secs: f64) -> f64 {
    div(mib(bytes), secs)
}

/// `R MiB/s (S s)` of each run.
fn rates(bytes: u64, secs: &[f64]) -> String {
    let v: Vec<String> = secs
        .iter()
        .map(|&s| format!("{:.0} MiB/s ({s:.2} s)", rate_mib(bytes, s)))
        .collect();
    v.join(" ")
}

impl BigResult {
    /// The starts from the snapshots: `S s S s …`.
    pub fn starts(&self) -> String {
        let v: Vec<String> = self
            .snapshot_starts
            .iter()
            .map(|s| format!("{:.2} s", s.secs))
            .collect();
        v.join(" ")
    }

    /// The lines printed as each step ends (as the shell benchmark printed them).
    pub fn lines(&self, cfg: &BigConfig) -> Vec<String> {
        let q = |r: Option<u64>| r.map_or("–".into(), |r| r.to_string());
        vec![
            format!(
                "generated in {:.2} s ({:.0} MiB)",
                self.gen_secs,
                mib(self.text_bytes)
            ),
            format!(
                "{}: first answer after {:.2} s, VmRSS {} KiB, VmHWM {} KiB",
                cfg.records,
                self.load.secs,
                self.load.rss / 1024,
                self.load.hwm / 1024
            ),
            format!(
                "{}: zero-loss existing {} q/s, nxdomain {} q/s",
                cfg.records,
                q(self.existing),
                q(self.nxdomain)
            ),
            format!(
                "{} parse only: {}; parse+build: {}",
                cfg.parse_records,
                rates(self.parse_bytes, &self.parse_secs),
                rates(self.parse_bytes, &self.build_secs)
            ),
            format!(
                "{} snapshot written in {:.2} s ({:.0} MiB); starts {}; from text {:.2} s",
                cfg.parse_records,
                self.snapshot_secs,
                mib(self.snapshot_bytes),
                self.starts(),
                self.text_start.secs
            ),
        ]
    }
}

/// Runs the benchmark; `say` gets each line as its step ends.
pub fn run(cfg: &BigConfig, out: &mut dyn FnMut(&str)) -> Result<BigResult, CostError> {
    if cfg.records < BIG_ZONES || cfg.parse_records < PARSE_ZONES || cfg.runs == 0 {
        return fail("records: at least one per zone; runs: at least 1");
    }
    let provenance = Provenance::collect(Some(&cfg.lode), &[]);
    std::fs::create_dir_all(&cfg.out).map_err(|e| io(&cfg.out, e))?;
    let mut r = BigResult::default();

    // Target 5: the large set.
    let mut spec = EnumSetSpec::new(cfg.records, BIG_ZONES);
    spec.queries = Some(BIG_QUERIES);
    let big = cfg.work.join("enum-big");
    let t0 = Instant::now();
    let (_, zones) = enum_set(&spec, &big, false)?;
    r.gen_secs = t0.elapsed().as_secs_f64();
    r.text_bytes = dir_bytes(&big);
    let lines = |r: &BigResult, n: usize| r.lines(cfg)[n].clone();
    out(&lines(&r, 0));
    let existing = big.join("queries-existing.txt");
    let server = serve(cfg, &zones, &existing, cfg.port, &[])?;
    r.load = server.1;
    out(&lines(&r, 1));
    r.existing = zero_loss(cfg, &server.0, &existing, "noerror")?;
    r.nxdomain = zero_loss(
        cfg,
        &server.0,
        &big.join("queries-nxdomain.txt"),
        "nxdomain",
    )?;
    drop(server);
    out(&lines(&r, 2));
    let _ = std::fs::remove_dir_all(&big);

    // Target 6: parse rate and snapshots on the parse set.
    let mut spec = EnumSetSpec::new(cfg.parse_records, PARSE_ZONES);
    spec.prefix = Some(PARSE_PREFIX.into());
    let set = cfg.work.join("enum-parse");
    let (_, zones) = enum_set(&spec, &set, false)?;
    r.parse_bytes = zones.iter().map(|(_, f)| file_bytes(f)).sum();
    let files: Vec<String> = zones.iter().map(|(_, f)| f.display().to_string()).collect();
    for _ in 0..cfg.runs {
        for (syntax_only, secs) in [(true, &mut r.parse_secs), (false, &mut r.build_secs)] {
            let mut args = vec!["check", "--quiet"];
            if syntax_only {
                args.push("--syntax-only");
            }
            args.extend(files.iter().map(String::as_str));
            secs.push(lode(cfg, &args, "check")?);
        }
    }
    out(&lines(&r, 3));
    let snaps = cfg.work.join("snapshots");
    let _ = std::fs::remove_dir_all(&snaps);
    let mut args = vec!["snapshot".to_string()];
    for (apex, f) in &zones {
        args.extend(["-z".into(), format!("{apex}={}", f.display())]);
    }
    args.extend(["--out".into(), snaps.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    r.snapshot_secs = lode(cfg, &args, "snapshot")?;
    r.snapshot_bytes = dir_bytes(&snaps);
    let existing = set.join("queries-existing.txt");
    let snap_dir = snaps.display().to_string();
    for _ in 0..cfg.runs {
        let (_, start) = serve(
            cfg,
            &zones,
            &existing,
            cfg.port + 1,
            &["--snapshot-dir", snap_dir.as_str()],
        )?;
        r.snapshot_starts.push(start);
    }
    r.text_start = serve(cfg, &zones, &existing, cfg.port + 2, &[])?.1;
    out(&lines(&r, 4));
    let md = to_markdown(cfg, &r);
    r.report = write_report(&cfg.out, "big-sets", &md, to_json(cfg, &r), &provenance)?;
    Ok(r)
}

/// Bytes of the files in `dir` (their apparent sizes).
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| file_bytes(&e.path())).sum())
        .unwrap_or(0)
}

fn file_bytes(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// `lode ARGS` with its output in `work/NAME.log`, at most an hour: its seconds.
fn lode(cfg: &BigConfig, args: &[&str], name: &str) -> Result<f64, CostError> {
    let mut argv = vec![cfg.lode.display().to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let log = cfg.work.join(format!("{name}.log"));
    let t0 = Instant::now();
    run_bounded(&argv, &log, Duration::from_secs(3600)).map_err(CostError)?;
    Ok(t0.elapsed().as_secs_f64())
}

/// The last name of a query file (`name TYPE` lines): one of the last zone.
fn last_name(queries: &Path) -> Result<lode_wire::Name, CostError> {
    let text = std::fs::read_to_string(queries).map_err(|e| io(queries, e))?;
    let Some(name) = text
        .lines()
        .last()
        .and_then(|l| l.split_whitespace().next())
    else {
        return fail(format!("{}: empty", queries.display()));
    };
    probe::name(name).map_err(|e| CostError(e.to_string()))
}

/// Lode serving `zones` on `port` with one worker pinned to the server CPU
/// (and `args`); its start: seconds until the last name of `queries`
/// answers NOERROR (asked every 50 ms), then its memory.
fn serve(
    cfg: &BigConfig,
    zones: &[(String, PathBuf)],
    queries: &Path,
    port: u16,
    args: &[&str],
) -> Result<(Server, Start), CostError> {
    let name = last_name(queries)?;
    let dir = cfg.work.join(format!("serve-{port}"));
    let mut spec = lode_spec(&cfg.lode, port, &dir, cfg.load_limit)?;
    spec.ready = Ready::Started;
    spec.workers = Some(1);
    spec.cpus = vec![cfg.server_cpu];
    spec.args = args.iter().map(|a| a.to_string()).collect();
    spec.zones = zones
        .iter()
        .map(|(apex, f)| Zone::primary(apex, Content::File(f.clone())).journal(false))
        .collect();
    let mut server = Server::start(&spec).map_err(|e| CostError(e.to_string()))?;
    let addr = server.addr();
    let took = server
        .wait_until(&name.to_string(), cfg.load_limit, || {
            let ok = probe::ask(addr, &name, Rtype::NAPTR, false, Duration::from_secs(1))
                .is_some_and(|a| a.rcode == 0);
            if !ok {
                std::thread::sleep(Duration::from_millis(50));
            }
            ok
        })
        .map_err(|e| CostError(e.to_string()))?;
    let pid = server.pid();
    let start = Start {
        secs: took.as_secs_f64(),
        rss: status_bytes(pid, "VmRSS"),
        hwm: status_bytes(pid, "VmHWM"),
    };
    Ok((server, start))
}

/// `lode-bench rate` on the tester CPU against `server`: the median of the
/// zero-loss searches (None when it printed none); its output in the report folder.
fn zero_loss(
    cfg: &BigConfig,
    server: &Server,
    queries: &Path,
    expect: &str,
) -> Result<Option<u64>, CostError> {
    let argv = rate_argv(cfg, &server.addr().to_string(), queries, expect);
    let log = cfg.out.join(format!("rate-{expect}.txt"));
    let text = run_bounded(&argv, &log, Duration::from_secs(3600)).map_err(CostError)?;
    Ok(parse_median(&text))
}

/// The command line of a zero-loss search.
pub fn rate_argv(cfg: &BigConfig, server: &str, queries: &Path, expect: &str) -> Vec<String> {
    let mut v: Vec<String> = ["taskset", "-c", &cfg.tester_cpu.to_string()]
        .map(String::from)
        .to_vec();
    v.push(cfg.bench.display().to_string());
    v.extend(
        [
            "rate",
            "--server",
            server,
            "--queries",
            &queries.display().to_string(),
            "--expect",
            expect,
            "--duration",
            &cfg.step.to_string(),
            "--repeat",
            &cfg.repeat.to_string(),
            "--high",
            &cfg.high.to_string(),
            "--resolution",
            &cfg.resolution.to_string(),
        ]
        .map(String::from),
    );
    v
}

/// The median of `lode-bench rate`'s last line (`RFC 8219 result over N
/// searches: median R q/s, …`).
pub fn parse_median(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("RFC 8219 result"))?;
    let rest = &line[line.find("median ")? + "median ".len()..];
    rest.split_whitespace().next()?.parse().ok()
}

/// big-sets.md: the two tables of the shell benchmark.
fn to_markdown(cfg: &BigConfig, r: &BigResult) -> String {
    let q = |v: Option<u64>| v.map_or("–".into(), |v| v.to_string());
    let last = r.snapshot_starts.last().copied().unwrap_or_default();
    format!(
        "# Large sets: {records} records, parse rate, snapshot start\n\n\
         ## Target 5: {records} ENUM records\n\n\
         | step | command | result |\n|---|---|---|\n\
         | generate | `lode-bench gen enum --records {records} --zones {BIG_ZONES} --queries {BIG_QUERIES} --out DIR` | {gen:.2} s, {text:.0} MiB written (zone and query files) |\n\
         | load and serve | `taskset -c {scpu} lode serve --workers 1 -z ZONE=FILE ×{BIG_ZONES}` | first answer in the last zone after **{load:.2} s**; resident {rss:.1} MiB after the load (peak {hwm:.1} MiB); **{per:.1} bytes/record** including the binary |\n\
         | zero-loss rate, existing | `taskset -c {tcpu} lode-bench rate --queries DIR/queries-existing.txt --expect noerror --duration {step} --repeat {repeat}` | median **{ex} q/s** |\n\
         | zero-loss rate, NXDOMAIN | same with `queries-nxdomain.txt --expect nxdomain` | median **{nx} q/s** |\n\n\
         ## Target 6: start and reload, {parse} set ({pmib:.0} MiB of zone text in {PARSE_ZONES} files)\n\n\
         | step | command | result |\n|---|---|---|\n\
         | parse only, all cores | `lode check --quiet --syntax-only DIR/*.zone` | {po} |\n\
         | parse and build, all cores | `lode check --quiet DIR/*.zone` | {pb} |\n\
         | start from text | `taskset -c {scpu} lode serve --workers 1 -z …` → first answer in the last zone | {ts:.2} s (one CPU) |\n\
         | write snapshots | `lode snapshot -z … --out SNAP` | {snap:.2} s (load + write), {smib:.0} MiB |\n\
         | start from snapshots | `taskset -c {scpu} lode serve --workers 1 --snapshot-dir SNAP -z …` → first answer in the last zone | **{starts}**; resident {srss:.1} MiB |\n\n\
         The server's start is pinned to one CPU like the query tests (the loader threads share it); \
         `lode check` uses every CPU.\n",
        records = cfg.records,
        gen = r.gen_secs,
        text = mib(r.text_bytes),
        scpu = cfg.server_cpu,
        tcpu = cfg.tester_cpu,
        load = r.load.secs,
        rss = mib(r.load.rss),
        hwm = mib(r.load.hwm),
        per = div(r.load.rss as f64, cfg.records as f64),
        step = cfg.step,
        repeat = cfg.repeat,
        ex = q(r.existing),
        nx = q(r.nxdomain),
        parse = cfg.parse_records,
        pmib = mib(r.parse_bytes),
        po = rates(r.parse_bytes, &r.parse_secs),
        pb = rates(r.parse_bytes, &r.build_secs),
        ts = r.text_start.secs,
        snap = r.snapshot_secs,
        smib = mib(r.snapshot_bytes),
        starts = r.starts(),
        srss = mib(last.rss),
    )
}

/// big-sets.json: settings and every figure, numbers as numbers.
fn to_json(cfg: &BigConfig, r: &BigResult) -> Value {
    let start = |s: &Start| json!({"secs": s.secs, "rss_bytes": s.rss, "hwm_bytes": s.hwm});
    let mibs =
        |secs: &[f64]| -> Vec<f64> { secs.iter().map(|&s| rate_mib(r.parse_bytes, s)).collect() };
    json!({
        "benchmark": "big-sets",
        "settings": {
            "records": cfg.records,
            "zones": BIG_ZONES,
            "queries": BIG_QUERIES,
            "parse_set": {
                "records": cfg.parse_records,
                "zones": PARSE_ZONES,
                "prefix": PARSE_PREFIX,
            },
            "runs": cfg.runs,
            "step_secs": cfg.step,
            "repeat": cfg.repeat,
            "high": cfg.high,
            "resolution": cfg.resolution,
            "server_cpu": cfg.server_cpu,
            "tester_cpu": cfg.tester_cpu,
            "port": cfg.port,
        },
        "target5": {
            "gen_secs": r.gen_secs,
            "text_bytes": r.text_bytes,
            "load": start(&r.load),
            "bytes_per_record": div(r.load.rss as f64, cfg.records as f64),
            "zero_loss_existing_qps": r.existing,
            "zero_loss_nxdomain_qps": r.nxdomain,
        },
        "target6": {
            "text_bytes": r.parse_bytes,
            "parse_only_secs": r.parse_secs,
            "parse_only_mib_per_sec": mibs(&r.parse_secs),
            "parse_build_secs": r.build_secs,
            "parse_build_mib_per_sec": mibs(&r.build_secs),
            "snapshot_secs": r.snapshot_secs,
            "snapshot_bytes": r.snapshot_bytes,
            "snapshot_starts": r.snapshot_starts.iter().map(start).collect::<Vec<_>>(),
            "text_start": start(&r.text_start),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> BigConfig {
        BigConfig {
            out: "/nonexistent".into(),
            work: "/w".into(),
            lode: "/bin/lode".into(),
            bench: "/bin/lode-bench".into(),
            records: 100_000_000,
            parse_records: 20_000_000,
            runs: 3,
            step: 5.0,
            repeat: 3,
            high: 300_000,
            resolution: 4000,
            server_cpu: 0,
            tester_cpu: 1,
            port: 15990,
            load_limit: Duration::from_secs(900),
        }
    }

    #[test]
    fn rate_search_line_and_result() {
        let argv = rate_argv(&cfg(), "127.0.0.1:15990", Path::new("/q.txt"), "noerror");
        assert_eq!(
            argv.join(" "),
            "taskset -c 1 /bin/lode-bench rate --server 127.0.0.1:15990 --queries /q.txt \
             --expect noerror --duration 5 --repeat 3 --high 300000 --resolution 4000"
        );
        let text = "result 3: 148000 q/s\nRFC 8219 result over 3 searches: median 145000 q/s, \
                    1st percentile 140000, 99th percentile 150000, dispersion 6.90%\n";
        assert_eq!(parse_median(text), Some(145_000));
        assert_eq!(parse_median("nothing"), None);
    }

    #[test]
    fn report_and_json() {
        let s = |secs: f64| Start {
            secs,
            rss: 2243 << 20,
            hwm: 2500 << 20,
        };
        let r = BigResult {
            gen_secs: 60.0,
            text_bytes: 5000 << 20,
            load: s(120.0),
            existing: Some(145_000),
            nxdomain: None,
            parse_bytes: 900 << 20,
            parse_secs: vec![2.0, 2.25],
            build_secs: vec![4.5],
            snapshot_secs: 30.0,
            snapshot_bytes: 400 << 20,
            snapshot_starts: vec![s(2.0), s(2.4)],
            text_start: s(40.0),
            report: PathBuf::new(),
        };
        let c = cfg();
        let lines = r.lines(&c);
        assert_eq!(
            lines[3],
            "20000000 parse only: 450 MiB/s (2.00 s) 400 MiB/s (2.25 s); parse+build: 200 MiB/s (4.50 s)"
        );
        assert!(lines[2].ends_with("nxdomain – q/s"), "{}", lines[2]);
        let md = to_markdown(&c, &r);
        assert!(md.contains("**23.5 bytes/record**"), "{md}");
        assert!(md.contains("**2.00 s 2.40 s**"), "{md}");
        let j = to_json(&c, &r);
        assert_eq!(j["target5"]["zero_loss_existing_qps"], 145_000);
        assert!(j["target5"]["zero_loss_nxdomain_qps"].is_null());
        assert_eq!(j["target6"]["parse_only_mib_per_sec"][0], 450.0);
        assert!(crate::provenance::numeric_strings(&j).is_empty(), "{j}");
    }
}
