//! Where a measurement comes from: the command line, Lode's commit (or its version),
//! every peer's version, the machine, the kernel and the network sysctls that decide
//! socket buffers — one block for every report (`compare`, `rate --json`, …).
//!
//! ```text
//!  Provenance::collect(lode, peers) ──▶ .sysctls_during = read_sysctls() (after changing them)
//!        │                                   │
//!        └──────────── to_json() / to_markdown() ─▶ report.json "provenance", report.md section
//! ```
//!
//! Versions come from the programs themselves (`knotd -V`, `nsd -v`, …), each run
//! with a time limit; a program that is missing or says nothing is recorded as such.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

/// The sysctls that decide UDP socket buffers and the backlog, under /proc/sys.
pub const SYSCTLS: [&str; 5] = [
    "net/core/rmem_default",
    "net/core/rmem_max",
    "net/core/wmem_default",
    "net/core/wmem_max",
    "net/core/netdev_max_backlog",
];

/// A sysctl's dotted name (`net.core.rmem_default`) from its /proc/sys path.
pub fn dotted(path: &str) -> String {
    path.replace('/', ".")
}

/// Reads [`SYSCTLS`] under `root` (`/proc/sys`): name (dotted) and value, None when
/// unreadable.
pub fn read_sysctls(root: &Path) -> Vec<(String, Option<u64>)> {
    SYSCTLS
        .iter()
        .map(|p| {
            let v = std::fs::read_to_string(root.join(p))
                .ok()
                .and_then(|t| t.trim().parse().ok());
            (dotted(p), v)
        })
        .collect()
}

/// Which Lode was measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LodeBuild {
    /// The binary started (None when the command starts no Lode).
    pub binary: Option<PathBuf>,
    /// What `lode --version` printed (first line).
    pub version: Option<String>,
    /// `git rev-parse HEAD` of the checkout the binary is in (no binary: the working directory's).
    pub commit: Option<String>,
    /// The checkout had changes to tracked files (`git status --porcelain`).
    pub dirty: Option<bool>,
}

/// Everything recorded about a run's origin.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Provenance {
    /// The command line that produced the report.
    pub command: Vec<String>,
    /// lode-bench's own version.
    pub bench_version: String,
    /// Lode.
    pub lode: LodeBuild,
    /// Each peer program (and dnsperf): name and the version it printed (None: missing).
    pub peers: Vec<(String, Option<String>)>,
    /// CPU model (`model name` of /proc/cpuinfo).
    pub cpu_model: Option<String>,
    /// Online CPUs.
    pub cores: usize,
    /// Physical memory, bytes (`MemTotal`).
    pub memory_bytes: Option<u64>,
    /// Kernel release (`uname -r`).
    pub kernel: Option<String>,
    /// Sysctls when the command started.
    pub sysctls_before: Vec<(String, Option<u64>)>,
    /// Sysctls while it measured (after any change it made; empty: not read).
    pub sysctls_during: Vec<(String, Option<u64>)>,
}

/// The first non-empty line of stdout and stderr together of `prog args`, run for at
/// most 10 s; None when it cannot be run or prints nothing.
pub fn first_line(prog: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("timeout")
        .args(["-k", "1", "10"])
        .arg(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    // timeout's own 126/127: the program could not be run (missing).
    if matches!(out.status.code(), Some(126 | 127)) {
        return None;
    }
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    version_line(&text)
}

/// The line of `text` that names a version (else the first non-empty line).
pub fn version_line(text: &str) -> Option<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines
        .iter()
        .find(|l| l.to_ascii_lowercase().contains("version"))
        .or(lines.first())
        .map(|l| (*l).to_owned())
}

/// The version-printing arguments of the programs the benchmarks start.
pub fn version_args(program: &str) -> &'static [&'static str] {
    match Path::new(program).file_name().and_then(|n| n.to_str()) {
        Some("knotd") => &["-V"],
        Some("nsd") | Some("named") => &["-v"],
        // dnsperf has no version option: its usage text ends with "Version 2.10.0".
        Some("dnsperf") => &["-h"],
        // openssl takes a command: "OpenSSL 3.0.17 1 Jul 2025 (Library: …)".
        Some("openssl") => &["version"],
        _ => &["--version"],
    }
}

/// Commit and dirty flag of the git checkout containing `dir`.
fn git_commit(dir: &Path) -> (Option<String>, Option<bool>) {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "HEAD"]).filter(|c| !c.is_empty());
    let dirty = commit
        .as_ref()
        .and_then(|_| git(&["status", "--porcelain", "--untracked-files=no"]))
        .map(|s| !s.is_empty());
    (commit, dirty)
}

/// Parses `model name`, the count of `processor` lines of /proc/cpuinfo.
pub fn parse_cpuinfo(text: &str) -> (Option<String>, usize) {
    let model = text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "model name").then(|| v.trim().to_owned())
    });
    let n = text
        .lines()
        .filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor"))
        .count();
    (model, n)
}

impl Provenance {
    /// Collects everything: `lode` is the Lode binary started (if any), `peers` the
    /// other programs (paths or names on PATH) whose versions are recorded.
    pub fn collect(lode: Option<&Path>, peers: &[&str]) -> Provenance {
        let (cpu_model, listed) = std::fs::read_to_string("/proc/cpuinfo")
            .map(|t| parse_cpuinfo(&t))
            .unwrap_or((None, 0));
        // The machine's, not this process's: a run pinned to one CPU would
        // otherwise report one (available_parallelism follows the affinity).
        let cores = if listed > 0 {
            listed
        } else {
            std::thread::available_parallelism().map_or(0, |n| n.get())
        };
        let memory_bytes = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|t| crate::compare::sys::parse_kb(&t, "MemTotal"));
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()
            .map(|k| k.trim().to_owned());
        Provenance {
            command: std::env::args().collect(),
            bench_version: env!("CARGO_PKG_VERSION").to_owned(),
            lode: LodeBuild::of(lode),
            peers: peers
                .iter()
                .map(|p| {
                    let name = Path::new(p)
                        .file_name()
                        .map_or((*p).to_owned(), |n| n.to_string_lossy().into_owned());
                    (name, first_line(Path::new(p), version_args(p)))
                })
                .collect(),
            cpu_model,
            cores,
            memory_bytes,
            kernel,
            sysctls_before: read_sysctls(Path::new("/proc/sys")),
            sysctls_during: Vec::new(),
        }
    }

    /// The JSON object (numbers as numbers, absent values as null).
    pub fn to_json(&self) -> Value {
        let sysctls = |v: &[(String, Option<u64>)]| -> Value {
            Value::Object(v.iter().map(|(k, x)| (k.clone(), json!(x))).collect())
        };
        json!({
            "command": self.command,
            "lode_bench_version": self.bench_version,
            "lode": {
                "binary": self.lode.binary.as_ref().map(|p| p.display().to_string()),
                "version": self.lode.version,
                "commit": self.lode.commit,
                "dirty": self.lode.dirty,
            },
            "peers": Value::Object(self.peers.iter().map(|(k, v)| (k.clone(), json!(v))).collect()),
            "machine": {
                "cpu_model": self.cpu_model,
                "cores": self.cores,
                "memory_bytes": self.memory_bytes,
            },
            "kernel": self.kernel,
            "sysctls_before": sysctls(&self.sysctls_before),
            "sysctls_during": sysctls(&self.sysctls_during),
        })
    }

    /// The Markdown section (`## Provenance`).
    pub fn to_markdown(&self) -> String {
        let mut m = String::from("## Provenance\n\n");
        let shell: Vec<String> = self.command.iter().map(|a| shell_quote(a)).collect();
        let _ = writeln!(m, "- command: `{}`", shell.join(" "));
        let l = &self.lode;
        let _ = writeln!(
            m,
            "- lode: {}{}{}",
            l.commit
                .as_ref()
                .map_or("no git checkout".into(), |c| format!("commit `{c}`")),
            match l.dirty {
                Some(true) => " (with uncommitted changes)",
                _ => "",
            },
            l.version
                .as_ref()
                .map_or(String::new(), |v| format!(", `{v}`"))
        );
        if let Some(b) = &l.binary {
            let _ = writeln!(m, "- lode binary: `{}`", b.display());
        }
        let _ = writeln!(m, "- lode-bench: {}", self.bench_version);
        for (name, v) in &self.peers {
            let _ = writeln!(
                m,
                "- {name}: {}",
                v.as_deref()
                    .map_or("not found".into(), |v| format!("`{v}`"))
            );
        }
        let _ = writeln!(
            m,
            "- machine: {}, {} CPUs, {} memory",
            self.cpu_model.as_deref().unwrap_or("unknown CPU"),
            self.cores,
            self.memory_bytes.map_or("unknown".into(), |b| format!(
                "{:.1} GiB",
                b as f64 / (1u64 << 30) as f64
            ))
        );
        let _ = writeln!(
            m,
            "- kernel: {}",
            self.kernel.as_deref().unwrap_or("unknown")
        );
        let _ = writeln!(m, "\n| sysctl | before | during |\n|---|---|---|");
        for (k, before) in &self.sysctls_before {
            let during = self
                .sysctls_during
                .iter()
                .find(|(d, _)| d == k)
                .and_then(|(_, v)| *v);
            let show = |v: Option<u64>| v.map_or("-".into(), |v| v.to_string());
            let _ = writeln!(m, "| {k} | {} | {} |", show(*before), show(during));
        }
        m.push('\n');
        m
    }
}

impl LodeBuild {
    /// The build of the binary `lode`: the checkout it is in (None: no Lode in this
    /// command, the working directory's checkout is recorded).
    pub fn of(lode: Option<&Path>) -> LodeBuild {
        let dir = lode
            .and_then(|b| std::fs::canonicalize(b).ok())
            .and_then(|b| b.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("."));
        // A binary outside any checkout (/usr/bin/lode) has no commit: its version says.
        let (commit, dirty) = git_commit(&dir);
        LodeBuild {
            binary: lode.map(Path::to_path_buf),
            version: lode.and_then(|b| first_line(b, &["--version"])),
            commit,
            dirty,
        }
    }
}

/// `arg` quoted for a POSIX shell when it needs it.
fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c));
    if plain {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// Strings of a report's JSON that hold a number, with their paths (`prefix`, CPU
/// lists and the command are text): a report's figures are JSON numbers.
#[cfg(test)]
pub(crate) fn numeric_strings(v: &Value) -> Vec<String> {
    fn walk(v: &Value, path: &str, out: &mut Vec<String>) {
        match v {
            Value::String(s) if s.trim().parse::<f64>().is_ok() => out.push(format!("{path}: {s}")),
            Value::Array(a) => a.iter().for_each(|x| walk(x, path, out)),
            Value::Object(o) => o
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "prefix" | "cpus" | "command"))
                .for_each(|(k, x)| walk(x, &format!("{path}.{k}"), out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, "", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_cpuinfo() {
        let usage = "Usage: dnsperf [-f family]\n  -h print this help\n\nVersion 2.10.0\n";
        assert_eq!(version_line(usage).as_deref(), Some("Version 2.10.0"));
        assert_eq!(
            version_line("\nBIND 9.18.47-1~deb12u1-Debian (Extended Support Version) <id:>\n")
                .as_deref(),
            Some("BIND 9.18.47-1~deb12u1-Debian (Extended Support Version) <id:>")
        );
        assert_eq!(
            version_line("NSD 4.6.1\nWritten by NLnet Labs.\n").as_deref(),
            Some("NSD 4.6.1")
        );
        assert_eq!(version_line(" \n"), None);
        assert_eq!(version_args("/usr/sbin/knotd"), ["-V"]);
        assert_eq!(version_args("named"), ["-v"]);
        assert_eq!(version_args("/usr/sbin/pdns_server"), ["--version"]);
        assert_eq!(version_args("openssl"), ["version"]);
        let info = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n";
        assert_eq!(parse_cpuinfo(info), (Some("AMD EPYC 7B13".into()), 2));
        assert_eq!(shell_quote("--servers"), "--servers");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }

    /// Every figure of the block is a JSON number (or null), never a string.
    #[test]
    fn json_numbers_are_numbers() {
        let dir = std::env::temp_dir().join(format!("lode-bench-prov-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("net/core")).expect("dir");
        std::fs::write(dir.join("net/core/rmem_default"), "212992\n").expect("write");
        std::fs::write(dir.join("net/core/rmem_max"), "4194304\n").expect("write");
        let mut p = Provenance::collect(None, &["/nonexistent/knotd"]);
        p.sysctls_during = read_sysctls(&dir);
        let j = p.to_json();
        assert!(j["machine"]["cores"].is_u64(), "{j}");
        assert!(j["machine"]["memory_bytes"].is_u64(), "{j}");
        assert!(j["sysctls_before"]["net.core.rmem_default"].is_u64(), "{j}");
        assert_eq!(j["sysctls_during"]["net.core.rmem_default"], 212992);
        assert_eq!(j["sysctls_during"]["net.core.rmem_max"], 4194304);
        assert!(j["sysctls_during"]["net.core.wmem_max"].is_null());
        assert!(j["peers"]["knotd"].is_null(), "missing program: null");
        assert!(j["command"].is_array());
        let md = p.to_markdown();
        assert!(md.contains("| net.core.rmem_default |"), "{md}");
        assert!(md.contains("- knotd: not found"), "{md}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
