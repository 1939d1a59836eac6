//! Performing a [`Plan`]: the machine's checks (root, packages, no other
//! `lode-bench`), each run as a child `lode-bench` with its progress in
//! `progress.log`, one time limit for the whole, and `experiment.json` /
//! `experiment.md` with the provenance, the exact commands and how each run
//! ended.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{Experiment, ExperimentError, Plan};
use crate::provenance::Provenance;

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Ended {
    /// The run's name.
    pub name: String,
    /// The command line after `lode-bench`.
    pub argv: Vec<String>,
    /// Its exit code (None: killed by a signal or by the limit).
    pub code: Option<i32>,
    /// Stopped at the time limit.
    pub timed_out: bool,
    /// Seconds it took.
    pub secs: f64,
}

/// Where and how to perform an experiment.
#[derive(Debug, Clone)]
pub struct Performance<'a> {
    /// The experiment file (recorded with its text).
    pub file: &'a Path,
    /// The experiment.
    pub experiment: &'a Experiment,
    /// The variants chosen.
    pub variants: &'a [String],
    /// The plan.
    pub plan: &'a Plan,
    /// The output folder.
    pub out: &'a Path,
    /// The `lode-bench` to run (this executable).
    pub bench: &'a Path,
    /// The `lode` binary the runs start (passed on as `--lode`).
    pub lode: Option<&'a Path>,
}

fn fail<T>(msg: impl Into<String>) -> Result<T, ExperimentError> {
    Err(ExperimentError(msg.into()))
}

/// The default output folder: `results/NAME[-VARIANT…]-YYYY-MM-DD`.
pub fn default_out(file: &Path, variants: &[String], unix_now: u64) -> PathBuf {
    let mut name = file
        .file_stem()
        .map_or("experiment".into(), |s| s.to_string_lossy().into_owned());
    for v in variants {
        name.push('-');
        name.push_str(v);
    }
    let date = &lode_zonefile::utc_text(unix_now)[..10];
    PathBuf::from("results").join(format!("{name}-{date}"))
}

/// Other `lode-bench` processes running now (PID and command line), not
/// counting this one.
pub fn other_benches() -> Vec<(u32, String)> {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter_map(|pid| {
            let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let argv0 = raw.split(|&b| b == 0).next()?;
            let prog = Path::new(std::str::from_utf8(argv0).ok()?).file_name()?;
            (prog == "lode-bench").then(|| {
                let line = raw
                    .split(|&b| b == 0)
                    .map(String::from_utf8_lossy)
                    .collect::<Vec<_>>()
                    .join(" ");
                (pid, line.trim().to_owned())
            })
        })
        .collect()
}

/// Debian packages of `wanted` that are not installed.
pub fn missing_packages(wanted: &[String]) -> Vec<String> {
    wanted
        .iter()
        .filter(|p| {
            let status = Command::new("dpkg-query")
                .args(["-W", "-f=${Status}", p.as_str()])
                .stderr(Stdio::null())
                .output();
            !matches!(status, Ok(o) if String::from_utf8_lossy(&o.stdout).ends_with("installed"))
        })
        .cloned()
        .collect()
}

/// Whether this process runs as root (the owner of /proc/self is its
/// effective user).
fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Checks what the experiment needs, installing missing packages as root.
pub fn prepare(e: &Experiment) -> Result<(), ExperimentError> {
    if e.needs.root && !is_root() {
        return fail("this experiment needs root (namespaces, pinning or sysctls)");
    }
    if e.needs.exclusive {
        let others = other_benches();
        if !others.is_empty() {
            let list: Vec<String> = others.iter().map(|(p, c)| format!("  {p} {c}")).collect();
            return fail(format!(
                "another lode-bench is running (two measurements spoil each other):\n{}",
                list.join("\n")
            ));
        }
    }
    let missing = missing_packages(&e.needs.packages);
    if missing.is_empty() {
        return Ok(());
    }
    if !is_root() {
        return fail(format!(
            "missing packages: {} (apt-get install them, or run as root)",
            missing.join(" ")
        ));
    }
    crate::compare::say(&format!("installing: {}", missing.join(" ")));
    let st = Command::new("timeout")
        .args(["900", "apt-get", "install", "-y", "-q"])
        .args(&missing)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdout(Stdio::null())
        .status()
        .map_err(|e| ExperimentError(format!("apt-get: {e}")))?;
    if !st.success() {
        return fail(format!(
            "apt-get install {} failed ({st})",
            missing.join(" ")
        ));
    }
    Ok(())
}

/// Sends SIGTERM to the child, then SIGKILL after 30 s (as `timeout -k 30`):
/// a comparison stops its servers on SIGTERM.
fn stop(child: &mut std::process::Child) {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let pid = Pid::from_raw(child.id() as i32);
    let _ = kill(pid, Signal::SIGTERM);
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Performs the runs in order, stopping at the first that fails; writes
/// `experiment.json` and `experiment.md` into the output folder after every
/// run (so a stopped experiment still says what ran).
pub fn perform(p: &Performance<'_>) -> Result<Vec<Ended>, ExperimentError> {
    let io = |what: &Path, e: std::io::Error| ExperimentError(format!("{}: {e}", what.display()));
    std::fs::create_dir_all(p.out).map_err(|e| io(p.out, e))?;
    let log_path = p.out.join("progress.log");
    let text = std::fs::read_to_string(p.file).map_err(|e| io(p.file, e))?;
    let peers: Vec<&str> = ["knotd", "nsd", "named", "pdns_server", "dnsperf", "kxdpgun"]
        .into_iter()
        .collect();
    let provenance = Provenance::collect(p.lode, &peers);
    let deadline = Instant::now() + p.plan.limit;
    let mut ended: Vec<Ended> = Vec::new();
    for step in &p.plan.steps {
        std::fs::create_dir_all(&step.out).map_err(|e| io(&step.out, e))?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| io(&log_path, e))?;
        let mut cmd = Command::new(p.bench);
        if let Some(l) = p.lode {
            cmd.arg("--lode").arg(l);
        }
        cmd.args(&step.argv).stderr(log);
        crate::compare::say(&format!(
            "== {}: lode-bench {} (progress: tail -f {})",
            step.name,
            step.argv.join(" "),
            log_path.display()
        ));
        let started = Instant::now();
        let mut child = cmd
            .spawn()
            .map_err(|e| ExperimentError(format!("{}: {e}", p.bench.display())))?;
        let mut timed_out = false;
        let status = loop {
            match child.try_wait() {
                Ok(Some(st)) => break Some(st),
                Ok(None) if Instant::now() >= deadline => {
                    timed_out = true;
                    stop(&mut child);
                    break None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(200)),
                Err(_) => break None,
            }
        };
        ended.push(Ended {
            name: step.name.clone(),
            argv: step.argv.clone(),
            code: status.and_then(|s| s.code()),
            timed_out,
            secs: started.elapsed().as_secs_f64(),
        });
        write_record(p, &text, &provenance, &ended)?;
        if ended.last().is_some_and(|e| e.code != Some(0)) {
            break;
        }
    }
    Ok(ended)
}

/// The record of a performance as JSON.
pub fn record_json(p: &Performance<'_>, text: &str, prov: &Provenance, ended: &[Ended]) -> Value {
    json!({
        "experiment": {
            "file": p.file.display().to_string(),
            "text": text,
            "about": p.experiment.about,
            "produces": p.experiment.produces,
            "variants": p.variants,
            "limit_secs": p.plan.limit.as_secs(),
        },
        "provenance": prov.to_json(),
        "runs": ended.iter().map(|e| json!({
            "name": e.name,
            "command": std::iter::once("lode-bench".to_string()).chain(e.argv.iter().cloned()).collect::<Vec<_>>(),
            "exit_code": e.code,
            "timed_out": e.timed_out,
            "secs": e.secs,
        })).collect::<Vec<_>>(),
        "complete": ended.len() == p.plan.steps.len() && ended.iter().all(|e| e.code == Some(0)),
    })
}

/// The record of a performance for people.
pub fn record_markdown(p: &Performance<'_>, prov: &Provenance, ended: &[Ended]) -> String {
    let mut m = String::new();
    let stem = p
        .file
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let _ = writeln!(
        m,
        "# Experiment `{stem}`\n\n{}\n",
        p.experiment.about.trim()
    );
    let vars = if p.variants.is_empty() {
        String::new()
    } else {
        format!(" --variant {}", p.variants.join(" --variant "))
    };
    let _ = writeln!(
        m,
        "Reproduce: `lode-bench run {}{vars}`\n",
        p.file.display()
    );
    for f in &p.experiment.produces {
        let _ = writeln!(m, "- produces: {f}");
    }
    let _ = writeln!(
        m,
        "\n## Runs\n\n| run | command | ended | seconds | reports |\n|---|---|---|---|---|"
    );
    for (e, step) in ended.iter().zip(&p.plan.steps) {
        let how = match (e.code, e.timed_out) {
            (_, true) => "stopped at the time limit".to_string(),
            (Some(0), _) => "ok".to_string(),
            (Some(c), _) => format!("exit {c}"),
            (None, _) => "killed".to_string(),
        };
        let reports: Vec<String> = std::fs::read_dir(&step.out)
            .map(|d| {
                let mut v: Vec<String> = d
                    .flatten()
                    .filter_map(|f| {
                        let n = f.file_name().to_string_lossy().into_owned();
                        let rel = f.path().strip_prefix(p.out).ok()?.display().to_string();
                        n.ends_with(".md").then(|| format!("[{n}]({rel})"))
                    })
                    .filter(|l| !l.starts_with("[experiment.md]"))
                    .collect();
                v.sort();
                v
            })
            .unwrap_or_default();
        let _ = writeln!(
            m,
            "| {} | `lode-bench {}` | {how} | {:.0} | {} |",
            e.name,
            e.argv.join(" "),
            e.secs,
            reports.join(" ")
        );
    }
    for step in p.plan.steps.iter().skip(ended.len()) {
        let _ = writeln!(
            m,
            "| {} | `lode-bench {}` | not run | | |",
            step.name,
            step.argv.join(" ")
        );
    }
    m.push('\n');
    m.push_str(&prov.to_markdown());
    m
}

fn write_record(
    p: &Performance<'_>,
    text: &str,
    prov: &Provenance,
    ended: &[Ended],
) -> Result<(), ExperimentError> {
    let json = serde_json::to_string_pretty(&record_json(p, text, prov, ended))
        .map_err(|e| ExperimentError(format!("experiment.json: {e}")))?;
    for (name, body) in [
        ("experiment.json", json + "\n"),
        ("experiment.md", record_markdown(p, prov, ended)),
    ] {
        let path = p.out.join(name);
        std::fs::write(&path, body)
            .map_err(|e| ExperimentError(format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_folder_names_the_file_the_variants_and_the_day() {
        let d = default_out(
            Path::new("experiments/queries.toml"),
            &["quick".into()],
            1_796_000_000,
        );
        assert_eq!(d, Path::new("results/queries-quick-2026-11-30"));
    }

    #[test]
    fn a_run_that_was_stopped_says_so_and_numbers_stay_numbers() {
        let e = Experiment::parse(
            "about = \"x\"\nlimit = 5\n[[run]]\nname = \"a\"\ncommand = \"rate\"\n[[run]]\nname = \"b\"\ncommand = \"rate\"",
        )
        .unwrap();
        let plan = e
            .plan(&[], Path::new("/o"), Path::new("/w"), |_, _| false)
            .unwrap();
        let p = Performance {
            file: Path::new("experiments/x.toml"),
            experiment: &e,
            variants: &[],
            plan: &plan,
            out: Path::new("/o"),
            bench: Path::new("/bin/false"),
            lode: None,
        };
        let prov = Provenance::collect(None, &[]);
        let ended = [Ended {
            name: "a".into(),
            argv: vec!["rate".into()],
            code: None,
            timed_out: true,
            secs: 5.0,
        }];
        let j = record_json(&p, "text", &prov, &ended);
        assert_eq!(j["complete"], false);
        assert_eq!(j["runs"][0]["secs"], 5.0);
        assert_eq!(j["experiment"]["limit_secs"], 5);
        let m = record_markdown(&p, &prov, &ended);
        assert!(m.contains("stopped at the time limit"), "{m}");
        assert!(m.contains("| b | `lode-bench rate` | not run"), "{m}");
        assert!(m.contains("lode-bench run experiments/x.toml"), "{m}");
    }
}
