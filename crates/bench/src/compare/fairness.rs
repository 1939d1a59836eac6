//! The same conditions for every server, and proof of it: one socket buffer size
//! for the run (the kernel's defaults through [`crate::sockbuf`], and each server's
//! own option where it has one), then, once each server answers, what it really
//! got — its UDP sockets' buffers (`ss -uamnp`: `rb`, `tb`, drops `d`), the CPUs its
//! threads may run on, its worker setting, threads and processes. Whatever still
//! differs between servers is listed in the report ("Differences not removed").
//!
//! ```text
//!  set_up(size) ─▶ SysctlGuard (restored at the end, on errors, on SIGINT/SIGTERM)
//!  server ready ─▶ observe(pids, port) ─▶ Conditions ─▶ RunResult.conditions
//!  report ─▶ table per server + differences()
//! ```

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use super::servers::Kind;
use super::RunResult;
use crate::sockbuf::{self, SysctlGuard};

/// What one server ran with, as observed after it answered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conditions {
    /// Workers asked (`--server-workers`).
    pub workers: usize,
    /// The option that carried it (`udp-workers`, `server-count`, …).
    pub workers_option: String,
    /// UDP sockets on the server's port.
    pub udp_sockets: usize,
    /// Receive buffers of those sockets (distinct values, bytes, as the kernel accounts).
    pub rcvbuf: Vec<u64>,
    /// Send buffers of those sockets (distinct values, bytes).
    pub sndbuf: Vec<u64>,
    /// Datagrams dropped by those sockets so far (`skmem` `d`).
    pub drops: u64,
    /// CPUs its threads may run on (distinct `Cpus_allowed_list` values).
    pub cpus: Vec<String>,
    /// Threads, all processes together.
    pub threads: usize,
    /// Processes.
    pub processes: usize,
}

/// One UDP socket in `ss -uamnp` output: owner PIDs, local port, rb, tb, drops.
#[derive(Debug, Clone, PartialEq)]
pub struct SsSocket {
    /// PIDs in its `users:` list.
    pub pids: Vec<u32>,
    /// Local port.
    pub port: u16,
    /// Receive buffer (`rb`).
    pub rb: u64,
    /// Send buffer (`tb`).
    pub tb: u64,
    /// Drops (`d`).
    pub drops: u64,
}

/// Parses `ss -uamnpH` output (a socket line, its `skmem:(…)` on the same or the
/// next, indented, line).
pub fn parse_ss(text: &str) -> Vec<SsSocket> {
    let mut records: Vec<String> = Vec::new();
    for line in text.lines() {
        match records.last_mut() {
            Some(r) if line.starts_with([' ', '\t']) => {
                r.push(' ');
                r.push_str(line.trim());
            }
            _ if !line.trim().is_empty() => records.push(line.trim().to_owned()),
            _ => {}
        }
    }
    records
        .iter()
        .filter_map(|r| {
            let fields: Vec<&str> = r.split_whitespace().collect();
            let port = fields.get(3)?.rsplit(':').next()?.parse().ok()?;
            let pids = r
                .split("pid=")
                .skip(1)
                .filter_map(|s| s.split([',', ')']).next()?.parse().ok())
                .collect();
            let skmem = &r[r.find("skmem:(")? + 7..];
            let skmem = &skmem[..skmem.find(')')?];
            let get = |key: &str| -> u64 {
                skmem
                    .split(',')
                    .find_map(|f| {
                        let v = f.strip_prefix(key)?;
                        v.chars()
                            .all(|c| c.is_ascii_digit())
                            .then(|| v.parse().ok())?
                    })
                    .unwrap_or(0)
            };
            Some(SsSocket {
                pids,
                port,
                rb: get("rb"),
                tb: get("tb"),
                drops: get("d"),
            })
        })
        .collect()
}

/// Distinct values, sorted.
fn distinct<T: Ord + Clone>(v: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = v.into_iter().collect();
    v.sort();
    v.dedup();
    v
}

/// Observes the server `pids` listening on UDP `port`.
pub fn observe(kind: Kind, workers: usize, pids: &[u32], port: u16) -> Conditions {
    let ss = Command::new("ss")
        .args(["-uamnpH", &format!("sport = :{port}")])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let socks: Vec<SsSocket> = parse_ss(&ss)
        .into_iter()
        .filter(|s| s.port == port && s.pids.iter().any(|p| pids.contains(p)))
        .collect();
    let mut cpus = Vec::new();
    let mut threads = 0;
    for pid in pids {
        let tasks = Path::new("/proc").join(pid.to_string()).join("task");
        for t in std::fs::read_dir(&tasks).into_iter().flatten().flatten() {
            threads += 1;
            if let Ok(s) = std::fs::read_to_string(t.path().join("status")) {
                if let Some(l) = s.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")) {
                    cpus.push(l.trim().to_owned());
                }
            }
        }
    }
    Conditions {
        workers,
        workers_option: kind.workers_option().into(),
        udp_sockets: socks.len(),
        rcvbuf: distinct(socks.iter().map(|s| s.rb)),
        sndbuf: distinct(socks.iter().map(|s| s.tb)),
        drops: socks.iter().map(|s| s.drops).sum(),
        cpus: distinct(cpus),
        threads,
        processes: pids.len(),
    }
}

/// Sets the kernel's socket buffer defaults to `size` for the run. Returns the
/// guard (None when nothing was changed) and a note for the report.
pub fn set_up(size: Option<u64>) -> (Option<SysctlGuard>, String) {
    let Some(size) = size else {
        return (
            None,
            "socket buffers: the kernel's defaults left as they were (--socket-buffer 0); \
             each server asks what it asks"
                .into(),
        );
    };
    let root = Path::new("/proc/sys");
    let plan = sockbuf::plan(size, &crate::provenance::read_sysctls(root));
    match SysctlGuard::apply(root, &plan) {
        Ok(g) => (
            Some(g),
            format!(
                "socket buffers: net.core.rmem_default and wmem_default set to {size} for the \
                 run (maxima raised to it if lower), restored at the end; Lode, BIND and the \
                 echo asked for {} (the kernel doubles a request)",
                size / 2
            ),
        ),
        Err(e) => (
            None,
            format!(
                "socket buffers NOT equalized: cannot write /proc/sys ({e}; root needed): \
                 servers that ask for no size keep the kernel's defaults"
            ),
        ),
    }
}

/// On SIGINT, SIGTERM or SIGHUP: the sysctls written back, then the process ends
/// (its servers with it: they are started with a parent-death signal). Call before
/// starting any thread.
pub fn restore_on_signal(guard: &SysctlGuard) -> Result<(), String> {
    let saved = guard.saved();
    crate::interrupt::on_signal("compare-signals", move |sig| {
        for e in sockbuf::restore(&saved) {
            super::say(&format!("restoring a sysctl: {e}"));
        }
        super::say(&format!("{sig}: socket buffer sysctls restored; stopping"));
        std::process::exit(130);
    })
}

/// Conditions of each server: the first run of each entry that has them.
fn per_server(runs: &[RunResult]) -> Vec<(&str, &Conditions)> {
    let mut v: Vec<(&str, &Conditions)> = Vec::new();
    for r in runs {
        if let Some(c) = &r.conditions {
            if !v.iter().any(|(n, _)| *n == r.server) {
                v.push((&r.server, c));
            }
        }
    }
    v
}

/// The value most servers share (ties: the first seen).
fn common<T: PartialEq + Clone>(values: &[T]) -> Option<T> {
    values
        .iter()
        .max_by_key(|v| values.iter().filter(|w| w == v).count())
        .cloned()
}

/// The differences between servers that the run did not remove, one line each.
pub fn differences(runs: &[RunResult]) -> Vec<String> {
    let list = per_server(runs);
    let mut out = Vec::new();
    let mut check = |what: &str, key: &dyn Fn(&Conditions) -> String| {
        let values: Vec<String> = list.iter().map(|(_, c)| key(c)).collect();
        let Some(usual) = common(&values) else {
            return;
        };
        for ((name, _), v) in list.iter().zip(&values) {
            if *v != usual {
                out.push(format!("{name}: {what} {v}, the others {usual}"));
            }
        }
    };
    let bytes = |v: &[u64]| {
        v.iter()
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
            .join("/")
    };
    check("receive buffer", &|c| bytes(&c.rcvbuf));
    check("send buffer", &|c| bytes(&c.sndbuf));
    check("CPUs", &|c| c.cpus.join(" "));
    check("workers", &|c| c.workers.to_string());
    out
}

/// The report's section: a table per server and the differences not removed.
pub fn markdown(runs: &[RunResult], setup: &str) -> String {
    let mut m = String::from("## Conditions\n\n");
    let _ = writeln!(m, "{setup}.\n");
    let list = per_server(runs);
    if list.is_empty() {
        let _ = writeln!(m, "Not observed.\n");
        return m;
    }
    let _ = writeln!(
        m,
        "Observed once each server answered (first run): its UDP sockets on its port \
         (`ss -uamnp`), buffers as the kernel accounts them, the CPUs its threads may use.\n"
    );
    let _ = writeln!(
        m,
        "| server | workers (option) | UDP sockets | receive buffer | send buffer | CPUs | threads | processes |"
    );
    let _ = writeln!(m, "|---|---|---|---|---|---|---|---|");
    let show = |v: &[u64]| {
        if v.is_empty() {
            "-".into()
        } else {
            v.iter()
                .map(|b| format!("{:.2} MiB", *b as f64 / (1u64 << 20) as f64))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    for (name, c) in &list {
        let _ = writeln!(
            m,
            "| {name} | {} ({}) | {} | {} | {} | {} | {} | {} |",
            c.workers,
            c.workers_option,
            c.udp_sockets,
            show(&c.rcvbuf),
            show(&c.sndbuf),
            c.cpus.join(" "),
            c.threads,
            c.processes
        );
    }
    let diff = differences(runs);
    let _ = writeln!(m, "\n### Differences not removed\n");
    if diff.is_empty() {
        let _ = writeln!(m, "None seen.\n");
    }
    for d in diff {
        let _ = writeln!(m, "- {d}");
    }
    m.push('\n');
    m
}

/// The JSON of one run's conditions.
pub fn json(c: &Conditions) -> Value {
    json!({
        "workers": c.workers,
        "workers_option": c.workers_option,
        "udp_sockets": c.udp_sockets,
        "rcvbuf_bytes": c.rcvbuf,
        "sndbuf_bytes": c.sndbuf,
        "socket_drops": c.drops,
        "cpus": c.cpus,
        "threads": c.threads,
        "processes": c.processes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ss_output() {
        let text = "UNCONN 0      0      127.0.0.1:15802 0.0.0.0:* users:((\"knotd\",pid=41,fd=20))\n\
                    \t skmem:(r0,rb212992,t0,tb212992,f0,w0,o0,bl0,d3517)\n\
                    UNCONN 0 0 127.0.0.1:15801 0.0.0.0:* users:((\"lode\",pid=40,fd=7),(\"lode\",pid=40,fd=8)) \
                    skmem:(r0,rb8388608,t0,tb4194304,f0,w0,o0,bl0,d0)\n";
        let s = parse_ss(text);
        assert_eq!(s.len(), 2);
        assert_eq!(
            s[0],
            SsSocket {
                pids: vec![41],
                port: 15802,
                rb: 212992,
                tb: 212992,
                drops: 3517
            }
        );
        assert_eq!(
            (s[1].pids.clone(), s[1].port, s[1].rb),
            (vec![40, 40], 15801, 8388608)
        );
        assert!(parse_ss("").is_empty());
    }

    #[test]
    fn differences_are_named() {
        let run = |server: &str, rb: u64, cpus: &str| RunResult {
            server: server.into(),
            conditions: Some(Conditions {
                workers: 1,
                rcvbuf: vec![rb],
                sndbuf: vec![4 << 20],
                cpus: vec![cpus.into()],
                ..Conditions::default()
            }),
            ..RunResult::default()
        };
        let runs = [
            run("lode", 4 << 20, "0"),
            run("knot", 4 << 20, "0"),
            run("nsd", 2 << 20, "0"),
            run("lode", 1, "1"),
        ];
        assert_eq!(
            differences(&runs),
            ["nsd: receive buffer 2097152, the others 4194304"]
        );
        let md = markdown(&runs, "socket buffers: test");
        assert!(
            md.contains("| nsd | 1 () | 0 | 2.00 MiB | 4.00 MiB | 0 |"),
            "{md}"
        );
        assert!(md.contains("### Differences not removed"), "{md}");
        let j = json(runs[0].conditions.as_ref().expect("conditions"));
        assert_eq!(j["rcvbuf_bytes"][0], 4 << 20);
    }
}
