//! `lode-bench com`: today's .com on one machine — a TLD zone of N
//! delegations (160 M by default) generated, loaded, started from a snapshot,
//! signed by Lode with NSEC3 opt-out, updated at the medium rate while a Lode
//! secondary follows it, and queried; each step timed, with the Lode
//! processes' VmHWM and VmRSS and the scratch disk used, against the goals.
//!
//! ```text
//!  gen   lode-bench gen tld --delegations N (disk checked first) ─▶ com.zone, updates-medium.txt
//!  load  lode serve (1 UDP worker, pinned) ─▶ first referral answered ─▶ VmRSS, VmHWM
//!  snap  lode snapshot ─▶ lode serve --snapshot-dir (× runs) ─▶ first answer
//!  sign  lode serve, policy nsec3 + nsec3-opt-out ─▶ "signed whole" ─▶ AXFR: signatures
//!        ÷ signing seconds against `openssl speed -multi T ecdsap256`
//!  upd   Lode secondary (AXFR, then NOTIFY + IXFR) ─▶ serving the serial;
//!        lode update -c 1 -r (the stream's header) for S s ─▶ serials at the end
//!  query the signed primary pinned: dnsperf referrals, DO=1 referrals ─▶ µs of its threads per answer
//!  ─▶ com.md, com.json, the goals met or missed
//! ```
//!
//! A step that fails (a server killed for memory, a time limit) is written
//! into the report with the memory last seen; the steps after it that need
//! its server are skipped.

use std::cell::Cell;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use lode_peers::{Acl, Action, Key, Server, Signing};
use lode_wire::Rtype;

use super::tld::{self, Load, Run, TldConfig};
use super::{div, fail, fresh_dir, io, lode_spec, mib, status_bytes, write_report, CostError};
use crate::compare::say;
use crate::compare::servers::Kind;
use crate::fleet::probe::soa_serial_from;
use crate::provenance::Provenance;
use crate::signing::{self, OneZone};
use crate::xdp::load::run_bounded;
use crate::zones::probe;

mod figures;
#[cfg(test)]
mod tests;

pub use figures::*;

/// The zone.
pub const APEX: &str = "com.";
/// Lines of each query file.
pub const QUERIES: u64 = 300_000;
/// Zone text per delegation the disk check assumes, bytes (the generator
/// writes about 99; the text, the signed zone's journal and the snapshot with
/// the query files are counted as one such copy each).
pub const DISK_PER_DELEGATION: u64 = 100;
/// Copies of the zone text the disk check wants room for.
pub const DISK_COPIES: u64 = 3;
/// Goal: resident memory of the signed, served zone.
pub const GOAL_RESIDENT: u64 = 12 << 30;
/// Goal: seconds from the start from a snapshot to the first answer.
pub const GOAL_SNAPSHOT_SECS: f64 = 30.0;
/// Goal: signing rate over the crypto ceiling.
pub const GOAL_SIGNING_SHARE: f64 = 0.8;
/// Goal: peak over resident of every step below this (a second full copy would be 2).
pub const GOAL_PEAK_RATIO: f64 = 2.0;
/// The delegations of today's .com, for the projections.
pub const COM_DELEGATIONS: u64 = 160_000_000;

/// A step of the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    /// `lode-bench gen tld`.
    Gen,
    /// `lode serve` from the zone text.
    Load,
    /// `lode snapshot`, then starts from it.
    Snapshot,
    /// Lode signing the zone (NSEC3 opt-out).
    Sign,
    /// The update stream with a secondary.
    Update,
    /// dnsperf against the signed primary.
    Query,
}

impl Step {
    /// Every step, in order.
    pub const ALL: [Step; 6] = [
        Step::Gen,
        Step::Load,
        Step::Snapshot,
        Step::Sign,
        Step::Update,
        Step::Query,
    ];

    /// Its name (`--steps`, the report).
    pub fn name(self) -> &'static str {
        match self {
            Step::Gen => "gen",
            Step::Load => "load",
            Step::Snapshot => "snapshot",
            Step::Sign => "sign",
            Step::Update => "update",
            Step::Query => "query",
        }
    }

    /// The step called `name`.
    pub fn parse(name: &str) -> Result<Step, CostError> {
        Step::ALL
            .into_iter()
            .find(|s| s.name() == name.trim())
            .ok_or_else(|| {
                let all: Vec<&str> = Step::ALL.iter().map(|s| s.name()).collect();
                CostError(format!("step {name:?}: one of {}", all.join(", ")))
            })
    }
}

/// Settings of `lode-bench com`.
#[derive(Debug, Clone)]
pub struct ComConfig {
    /// Report folder.
    pub out: PathBuf,
    /// Scratch folder: the data set, the snapshot, the servers' folders.
    pub work: PathBuf,
    /// The lode binary.
    pub lode: PathBuf,
    /// The lode-bench binary (its `gen tld`).
    pub bench: PathBuf,
    /// Delegations in the zone.
    pub delegations: u64,
    /// Steps run (the generated set is reused from `work` without `gen`).
    pub steps: Vec<Step>,
    /// Starts from the snapshot.
    pub snapshot_runs: usize,
    /// CPU the serving server is pinned to.
    pub server_cpu: usize,
    /// CPU dnsperf is pinned to.
    pub tester_cpu: usize,
    /// Signing threads (and openssl's processes for the ceiling).
    pub sign_threads: usize,
    /// First port on 127.0.0.1: the loads; the signed primary the next, its secondary the one after.
    pub port: u16,
    /// Longest generation.
    pub gen_limit: Duration,
    /// Longest wait for a first answer (load, snapshot; `lode snapshot` too).
    pub load_limit: Duration,
    /// Longest wait for the signing.
    pub sign_limit: Duration,
    /// Longest wait for the secondary's first transfer.
    pub xfr_limit: Duration,
    /// Seconds of the update stream.
    pub update_secs: u64,
    /// Records/s of the update stream instead of its header's (None: the header's).
    pub update_rate: Option<f64>,
    /// Queries per second of dnsperf.
    pub rate: u64,
    /// Seconds of each dnsperf run.
    pub duration: u64,
}

/// MemAvailable of /proc/meminfo, bytes (0: unreadable).
fn mem_available() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| crate::compare::sys::parse_kb(&t, "MemAvailable"))
        .unwrap_or(0)
}

/// Bytes of files under `dir`, recursively.
fn tree_bytes(dir: &Path) -> u64 {
    let Ok(d) = std::fs::read_dir(dir) else {
        return 0;
    };
    d.flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => tree_bytes(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}

/// Refuses when `work`'s file system cannot hold the chain's files.
fn check_disk(work: &Path, delegations: u64) -> Result<(), CostError> {
    let out = Command::new("df")
        .args(["-B1", "--output=avail"])
        .arg(work)
        .output()
        .map_err(|e| CostError(format!("df: {e}")))?;
    let Some(avail) = parse_df_avail(&String::from_utf8_lossy(&out.stdout)) else {
        return fail(format!("df {}: not understood", work.display()));
    };
    let need = disk_needed(delegations);
    if avail < need {
        return fail(format!(
            "not enough disk under {}: {:.1} GiB free, {:.1} GiB wanted for {delegations} \
             delegations (zone text, snapshot, signing journal: {DISK_COPIES} × \
             {DISK_PER_DELEGATION} bytes per delegation, + 1 GiB); give --work on a larger disk",
            work.display(),
            gib(avail),
            gib(need)
        ));
    }
    Ok(())
}

/// A server's memory, sampled while it is waited for: its last VmHWM.
struct Watch {
    pid: u32,
    hwm: Cell<u64>,
}

impl Watch {
    fn new(pid: u32) -> Watch {
        Watch {
            pid,
            hwm: Cell::new(0),
        }
    }

    fn sample(&self) {
        let h = status_bytes(self.pid, "VmHWM");
        if h > 0 {
            self.hwm.set(h);
        }
    }

    /// `e` with the memory last seen.
    fn failed(&self, e: impl std::fmt::Display) -> CostError {
        CostError(format!(
            "{e} (the server's VmHWM last seen {:.0} MiB, MemAvailable now {:.0} MiB)",
            mib(self.hwm.get()),
            mib(mem_available())
        ))
    }
}

/// The settings of `lode-bench tld` its pieces want.
fn tld_config(cfg: &ComConfig, port: u16) -> TldConfig {
    TldConfig {
        out: cfg.out.clone(),
        work: cfg.work.clone(),
        lode: cfg.lode.clone(),
        servers: vec![Kind::Lode],
        delegations: cfg.delegations,
        rate: cfg.rate,
        duration: cfg.duration,
        rounds: 1,
        server_cpu: cfg.server_cpu,
        tester_cpu: cfg.tester_cpu,
        port,
        load_limit: cfg.load_limit,
        reuse: false,
    }
}

/// Lode on `zone` as `lode-bench tld` starts it (one UDP worker, pinned),
/// `args` added; its first referral's time, VmHWM and VmRSS; stopped.
fn first_answer(
    cfg: &ComConfig,
    zone: &Path,
    args: &[String],
    probe_name: &lode_wire::Name,
) -> Result<(f64, u64, u64), CostError> {
    let tc = tld_config(cfg, cfg.port);
    let mut spec = tld::spec(&tc, Kind::Lode, zone)?;
    spec.args.extend(args.iter().cloned());
    let mut server = Server::start(&spec).map_err(|e| CostError(e.to_string()))?;
    let addr = server.addr();
    let watch = Watch::new(server.pid());
    let took = server.wait_until(&probe_name.to_string(), cfg.load_limit, || {
        watch.sample();
        let ok = probe::ask(addr, probe_name, Rtype::A, false, Duration::from_secs(1))
            .is_some_and(|a| a.rcode == 0);
        if !ok {
            std::thread::sleep(Duration::from_millis(50));
        }
        ok
    });
    let took = took.map_err(|e| watch.failed(e))?;
    let pid = server.pid();
    let figures = (
        took.as_secs_f64(),
        status_bytes(pid, "VmHWM"),
        status_bytes(pid, "VmRSS"),
    );
    server.stop();
    Ok(figures)
}

/// The signed primary and what its step measured.
struct Primary {
    server: Server,
    key_file: PathBuf,
}

/// Lode signing the zone (NSEC3 opt-out), transfers and keyed updates
/// allowed, NOTIFY to the secondary's port; kept running.
fn sign(
    cfg: &ComConfig,
    gen: &Path,
    zone: &Path,
    row: &mut StepRow,
) -> Result<(Primary, SignFigures), CostError> {
    let one = OneZone {
        apex: APEX.into(),
        file: zone.to_path_buf(),
        dir: gen.to_path_buf(),
    };
    let policy = Signing {
        nsec3: true,
        opt_out: true,
        threads: Some(cfg.sign_threads),
        ..Signing::default()
    };
    let port = cfg.port.wrapping_add(1);
    let mut spec = signing::lode_sign_spec(
        &cfg.lode,
        port,
        &cfg.work.join("primary"),
        &one,
        policy,
        &[],
        cfg.sign_limit,
    )?;
    let key = super::memory::random_key()?;
    let key_name = key.name().to_string();
    let key_file = cfg.work.join("update.key");
    std::fs::write(&key_file, format!("{}\n", key.to_spec())).map_err(|e| io(&key_file, e))?;
    spec.workers = Some(1);
    spec = spec
        .key(Key::new(
            &key_name,
            key.algorithm().name(),
            &key.secret_base64(),
        ))
        .acl(
            Acl::new("up", &[Action::Update])
                .from("127.0.0.1")
                .key(&key_name),
        );
    let secondary = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), cfg.port.wrapping_add(2));
    if let Some(z) = spec.zones.first_mut() {
        z.acls.push("up".into());
        z.notify = vec![secondary];
        z.extra.push_str("notify-delay = 0\n");
    }
    let log = spec.stdio.clone().unwrap_or_default();
    say("sign: lode serve, NSEC3 opt-out");
    let mut server = Server::start(&spec).map_err(|e| CostError(format!("lode: {e}")))?;
    let watch = Watch::new(server.pid());
    let wall = server
        .wait_until("its \"signed whole\" line", cfg.sign_limit, || {
            watch.sample();
            std::thread::sleep(Duration::from_millis(100));
            std::fs::read_to_string(&log).is_ok_and(|t| t.contains("signed whole"))
        })
        .map_err(|e| watch.failed(e))?;
    signing::wait_served(&mut server, APEX, cfg.sign_limit).map_err(|e| watch.failed(e))?;
    let pid = server.pid();
    row.hwm = status_bytes(pid, "VmHWM");
    row.rss = status_bytes(pid, "VmRSS");
    say(&format!(
        "sign: signed whole after {:.1} s; counting signatures (AXFR)",
        wall.as_secs_f64()
    ));
    let t = signing::axfr(server.addr(), APEX, cfg.sign_limit, None)?;
    say(&format!(
        "sign: crypto ceiling (openssl speed -multi {})",
        cfg.sign_threads
    ));
    let figures = SignFigures {
        wall_secs: wall.as_secs_f64(),
        signing_secs: signing::signed_whole_secs(&server.log()),
        signatures: t.signatures,
        ceiling: signing::whole::ceiling(cfg.sign_threads),
    };
    row.secs = figures.wall_secs;
    row.note = format!(
        "{} records, {} signatures; signing alone {:.1} s: {:.0} sig/s{}",
        t.records,
        t.signatures,
        figures.signing_secs.unwrap_or(f64::NAN),
        figures.rate(),
        figures.ceiling.map_or(String::new(), |c| format!(
            " of {c:.0} (openssl, {} threads)",
            cfg.sign_threads
        ))
    );
    Ok((Primary { server, key_file }, figures))
}

/// The secondary taking the signed zone, then the update stream at its pace for `update_secs`.
fn update(
    cfg: &ComConfig,
    primary: &mut Primary,
    stream: &Path,
    row: &mut StepRow,
) -> Result<UpdateFigures, CostError> {
    let header: String = std::fs::read_to_string(stream)
        .map_err(|e| io(stream, e))?
        .lines()
        .take(20)
        .collect::<Vec<_>>()
        .join("\n");
    let Some(own) = parse_update_rate(&header) else {
        return fail(format!("{}: no -r in its header", stream.display()));
    };
    let rate = cfg.update_rate.unwrap_or(own);
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let paddr = primary.server.addr();
    let Some(serial) = soa_serial_from(loopback, paddr, APEX) else {
        return fail("the primary does not answer its SOA");
    };
    let sport = cfg.port.wrapping_add(2);
    let mut s = lode_spec(&cfg.lode, sport, &cfg.work.join("secondary"), cfg.xfr_limit)?;
    s.ready = lode_peers::Ready::Started;
    s.workers = Some(1);
    s.server_extra = "zonefile-sync = -1\n".into();
    s = s.zone(lode_peers::Zone::secondary(APEX, &[paddr]));
    say("update: the secondary takes the zone");
    let mut secondary = Server::start(&s).map_err(|e| CostError(format!("secondary: {e}")))?;
    let saddr = SocketAddr::new(loopback, sport);
    let watch = Watch::new(secondary.pid());
    let took = secondary
        .wait_until(&format!("serial {serial}"), cfg.xfr_limit, || {
            watch.sample();
            std::thread::sleep(Duration::from_millis(100));
            soa_serial_from(loopback, saddr, APEX) == Some(serial)
        })
        .map_err(|e| watch.failed(format!("the secondary: {e}")))?;
    let mut f = UpdateFigures {
        secondary_secs: took.as_secs_f64(),
        rate,
        serial_before: serial,
        ..UpdateFigures::default()
    };
    say(&format!(
        "update: secondary serving serial {serial} after {:.1} s; lode update -c 1 -r {rate} for {} s",
        f.secondary_secs, cfg.update_secs
    ));
    let log = cfg.work.join("update.log");
    let argv: Vec<String> = vec![
        "timeout".into(),
        cfg.update_secs.to_string(),
        cfg.lode.display().to_string(),
        "update".into(),
        "-q".into(),
        "-s".into(),
        paddr.to_string(),
        "-k".into(),
        primary.key_file.display().to_string(),
        "-c".into(),
        "1".into(),
        "-r".into(),
        rate.to_string(),
        stream.display().to_string(),
    ];
    let t0 = Instant::now();
    let text = match run_bounded(&argv, &log, Duration::from_secs(cfg.update_secs + 60)) {
        Ok(t) => t,
        // Cut at the time limit: what was meant.
        Err(_) if t0.elapsed().as_secs() + 1 >= cfg.update_secs => {
            std::fs::read_to_string(&log).unwrap_or_default()
        }
        Err(e) => return fail(format!("lode update: {e}")),
    };
    row.secs = t0.elapsed().as_secs_f64();
    f.update_line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(none: cut at the time limit)")
        .chars()
        .take(200)
        .collect();
    f.serial_after = soa_serial_from(loopback, paddr, APEX).unwrap_or(0);
    f.secondary_serial = soa_serial_from(loopback, saddr, APEX).unwrap_or(0);
    let t1 = Instant::now();
    while t1.elapsed() < Duration::from_secs(30) {
        if soa_serial_from(loopback, saddr, APEX) == Some(f.serial_after) {
            f.caught_up_secs = Some(t1.elapsed().as_secs_f64());
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let spid = secondary.pid();
    f.secondary_hwm = status_bytes(spid, "VmHWM");
    f.secondary_rss = status_bytes(spid, "VmRSS");
    let ppid = primary.server.pid();
    row.hwm = status_bytes(ppid, "VmHWM");
    row.rss = status_bytes(ppid, "VmRSS");
    secondary.stop();
    row.note = format!(
        "secondary served serial {} after {:.1} s (VmHWM {:.0} / VmRSS {:.0} MiB); \
         -r {rate} (the stream's own {own}): primary serial {} → {}, secondary {} at the end (lag {}), {}; lode update: {}",
        f.serial_before,
        f.secondary_secs,
        mib(f.secondary_hwm),
        mib(f.secondary_rss),
        f.serial_before,
        f.serial_after,
        f.secondary_serial,
        f.lag(),
        f.caught_up_secs
            .map_or("not caught up within 30 s".into(), |s| format!(
                "caught up {s:.1} s later"
            )),
        f.update_line
    );
    Ok(f)
}

/// dnsperf referrals and DO=1 referrals against the signed primary, pinned to the server CPU.
fn query(
    cfg: &ComConfig,
    primary: &Primary,
    gen: &Path,
    row: &mut StepRow,
) -> Result<Vec<(Load, Run)>, CostError> {
    let pid = primary.server.pid().to_string();
    let cpu = cfg.server_cpu.to_string();
    let _ = Command::new("taskset")
        .args(["-a", "-c", "-p", &cpu, &pid])
        .stdout(std::process::Stdio::null())
        .status();
    // What the server still does on its own (a compaction after an update
    // stream: minutes at 160 M, when the delta grew to a 64th of the zone
    // or 2^20 names) is not the answers' cost: quiet for twice as long as
    // a zone waits before a quiet zone's compaction starts (5 s:
    // `IDLE_COMPACTION` in lode-control's upkeep). Quiet is under
    // 5 % of a CPU: a signed 160 M zone's writers keep about 1 % for
    // their rounds over the signatures due.
    let waited = Instant::now();
    let idle = crate::compare::sys::wait_idle(
        primary.server.pid(),
        (0.05, Duration::from_secs(10)),
        cfg.load_limit,
        &|| false,
    );
    let quiet = format!(
        "{} after {:.1} s",
        if idle { "quiet" } else { "still busy" },
        waited.elapsed().as_secs_f64()
    );
    say(&format!("query: the primary {quiet}"));
    let tc = tld_config(cfg, primary.server.addr().port());
    let logs = cfg.out.join("dnsperf");
    fresh_dir(&logs)?;
    let queries = gen.join("queries-referral.txt");
    let mut v = Vec::new();
    let t0 = Instant::now();
    for load in [Load::Referral, Load::ReferralDo] {
        let log = logs.join(format!("{}.txt", load.name()));
        let run = tld::measure(&tc, &primary.server, load, &queries, &log)?;
        say(&format!(
            "query: {}: {:.2} µs process, {} answers, {} lost",
            load.name(),
            run.process_us,
            run.answers,
            run.lost
        ));
        v.push((load, run));
    }
    row.secs = t0.elapsed().as_secs_f64();
    let p = primary.server.pid();
    row.hwm = status_bytes(p, "VmHWM");
    row.rss = status_bytes(p, "VmRSS");
    let runs = v
        .iter()
        .map(|(l, r)| {
            format!(
                "{}: {:.2} µs (CPU {:.2}), {} lost",
                l.name(),
                r.process_us,
                r.cpu_us,
                r.lost
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    row.note = format!("{runs}; measured once the server was {quiet}");
    Ok(v)
}

/// Runs the chain; the report in `cfg.out`.
pub fn run(cfg: &ComConfig) -> Result<ComResult, CostError> {
    if cfg.delegations == 0 || cfg.snapshot_runs == 0 || cfg.rate == 0 || cfg.duration == 0 {
        return fail("delegations, snapshot runs, rate and duration: at least one each");
    }
    let started = Instant::now();
    let has = |s: Step| cfg.steps.contains(&s);
    let dnsperf =
        lode_peers::program("dnsperf").map_or("dnsperf".into(), |p| p.display().to_string());
    let provenance = Provenance::collect(Some(&cfg.lode), &[dnsperf.as_str(), "openssl"]);
    std::fs::create_dir_all(&cfg.out).map_err(|e| io(&cfg.out, e))?;
    std::fs::create_dir_all(&cfg.work).map_err(|e| io(&cfg.work, e))?;
    let gen = cfg.work.join("gen");
    let zone = gen.join(format!("{APEX}zone"));
    let mut r = ComResult::default();
    if has(Step::Gen) {
        check_disk(&cfg.work, cfg.delegations)?;
        let mut row = StepRow::new(Step::Gen);
        let _ = std::fs::remove_dir_all(&gen);
        let argv: Vec<String> = vec![
            cfg.bench.display().to_string(),
            "gen".into(),
            "tld".into(),
            "--out".into(),
            gen.display().to_string(),
            "--delegations".into(),
            cfg.delegations.to_string(),
            "--queries".into(),
            QUERIES.to_string(),
        ];
        say(&format!(
            "gen: {} delegations into {}",
            cfg.delegations,
            gen.display()
        ));
        let t0 = Instant::now();
        run_bounded(&argv, &cfg.work.join("gen.log"), cfg.gen_limit)
            .map_err(|e| CostError(format!("gen tld: {e}")))?;
        row.secs = t0.elapsed().as_secs_f64();
        row.disk = tree_bytes(&cfg.work);
        r.zone_bytes = std::fs::metadata(&zone).map_or(0, |m| m.len());
        row.note = format!(
            "zone text {:.0} MiB, {:.1} bytes per delegation",
            mib(r.zone_bytes),
            div(r.zone_bytes as f64, cfg.delegations as f64)
        );
        say(&format!("gen: {:.1} s, {}", row.secs, row.note));
        r.rows.push(row);
    }
    if !zone.is_file() {
        return fail(format!(
            "{}: no zone (run the gen step, or give the --work of a run that did)",
            zone.display()
        ));
    }
    r.zone_bytes = std::fs::metadata(&zone).map_or(0, |m| m.len());
    let probe_name = tld::first_name(&gen.join("queries-referral.txt"))?;
    let per_delegation = |b: u64| div(b as f64, cfg.delegations as f64);

    if has(Step::Load) {
        let mut row = StepRow::new(Step::Load);
        say("load: lode serve from the zone text");
        match first_answer(cfg, &zone, &[], &probe_name) {
            Ok((secs, hwm, rss)) => {
                row.secs = secs;
                row.hwm = hwm;
                row.rss = rss;
                row.note = format!(
                    "first referral after {secs:.2} s; {:.0} resident bytes per delegation",
                    per_delegation(rss)
                );
            }
            Err(e) => row.failed = Some(e.0),
        }
        row.disk = tree_bytes(&cfg.work);
        say(&format!("load: {}", row.line()));
        r.rows.push(row);
    }

    if has(Step::Snapshot) {
        let mut row = StepRow::new(Step::Snapshot);
        let snaps = cfg.work.join("snapshot");
        let _ = std::fs::remove_dir_all(&snaps);
        let argv: Vec<String> = vec![
            cfg.lode.display().to_string(),
            "snapshot".into(),
            "-z".into(),
            format!("{APEX}={}", zone.display()),
            "--out".into(),
            snaps.display().to_string(),
        ];
        say("snapshot: lode snapshot");
        let t0 = Instant::now();
        let written = run_bounded(&argv, &cfg.work.join("snapshot.log"), cfg.load_limit);
        let write_secs = t0.elapsed().as_secs_f64();
        match written {
            Err(e) => row.failed = Some(format!("lode snapshot: {e}")),
            Ok(_) => {
                let args = vec!["--snapshot-dir".to_string(), snaps.display().to_string()];
                for _ in 0..cfg.snapshot_runs {
                    match first_answer(cfg, &zone, &args, &probe_name) {
                        Ok((secs, hwm, rss)) => {
                            r.snapshot_starts.push(secs);
                            row.hwm = hwm;
                            row.rss = rss;
                        }
                        Err(e) => {
                            row.failed = Some(e.0);
                            break;
                        }
                    }
                }
                row.secs = median(&r.snapshot_starts);
                let starts: Vec<String> = r
                    .snapshot_starts
                    .iter()
                    .map(|s| format!("{s:.2}"))
                    .collect();
                row.note = format!(
                    "snapshot written in {write_secs:.1} s ({:.0} MiB); first answers {} s",
                    mib(tree_bytes(&snaps)),
                    starts.join(", ")
                );
            }
        }
        row.disk = tree_bytes(&cfg.work);
        say(&format!("snapshot: {}", row.line()));
        r.rows.push(row);
    }

    let mut primary = None;
    if has(Step::Sign) {
        let mut row = StepRow::new(Step::Sign);
        match sign(cfg, &gen, &zone, &mut row) {
            Ok((p, f)) => {
                r.sign = Some(f);
                primary = Some(p);
            }
            Err(e) => row.failed = Some(e.0),
        }
        row.disk = tree_bytes(&cfg.work);
        say(&format!("sign: {}", row.line()));
        r.rows.push(row);
    }
    for step in [Step::Update, Step::Query] {
        if !has(step) {
            continue;
        }
        let mut row = StepRow::new(step);
        match primary.as_mut() {
            None => row.failed = Some("needs the signed primary of the sign step".into()),
            Some(p) => {
                let res = match step {
                    Step::Update => {
                        update(cfg, p, &gen.join("updates-medium.txt"), &mut row).map(|f| {
                            r.update = Some(f);
                        })
                    }
                    _ => query(cfg, p, &gen, &mut row).map(|q| r.queries = q),
                };
                if let Err(e) = res {
                    row.failed = Some(e.0);
                }
            }
        }
        row.disk = tree_bytes(&cfg.work);
        say(&format!("{}: {}", step.name(), row.line()));
        r.rows.push(row);
        if let (Step::Update, Some(u)) = (step, &r.update) {
            r.rows.push(secondary_row(u));
        }
    }
    if let Some(mut p) = primary {
        p.server.stop();
    }
    r.wall_secs = started.elapsed().as_secs_f64();
    let md = to_markdown(cfg, &r);
    r.report = write_report(&cfg.out, "com", &md, to_json(cfg, &r), &provenance)?;
    Ok(r)
}
