//! The same conditions for every server, and proof of it: one socket buffer size
//! for the run (the kernel's defaults through [`crate::sockbuf`], and each server's
//! own option where it has one), then, once each server answers, what it really
//! got — its UDP sockets' buffers (`ss -uamnp`: `rb`, `tb`, drops `d`), the CPUs its
//! threads may run on, its worker setting, threads and processes. Whatever still
//! differs between servers is listed in the report ("Differences not removed").
//!
//! `compare`, `compare-updates` and `attack` all go through here:
//!
//! ```text
//!  start(lode, peers, size, servers) ─▶ Provenance (sysctls before, during)
//!        ├─ set_up(size) ─▶ SysctlGuard (restored at the end, on errors, on SIGINT/SIGTERM)
//!        └─ Fairness { setup note, servers: [] }
//!  server ready ─▶ observe(pids, port) ─▶ Conditions ─▶ Fairness::add / RunResult.conditions
//!  report ─▶ table per server + differences() + provenance (markdown(), json())
//! ```

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{json, Map, Value};

use super::servers::Kind;
use super::RunResult;
use crate::provenance::Provenance;
use crate::sockbuf::{self, SysctlError, SysctlGuard};

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

/// Sets the kernel's socket buffer defaults to `size` for the run, for `servers`
/// (those with an option of their own are asked half of it). Returns the guard
/// (None when nothing was changed) and a note for the report; fails when another
/// run has them changed (see [`sockbuf`]).
pub fn set_up(
    size: Option<u64>,
    servers: &[Kind],
) -> Result<(Option<SysctlGuard>, String), String> {
    let Some(size) = size else {
        return Ok((
            None,
            "socket buffers: the kernel's defaults left as they were (--socket-buffer 0); \
             each server asks what it asks"
                .into(),
        ));
    };
    let root = Path::new("/proc/sys");
    let plan = sockbuf::plan(size, &crate::provenance::read_sysctls(root));
    let askers: Vec<&str> = servers
        .iter()
        .filter(|k| k.buffer_option().is_some())
        .map(|k| k.name())
        .collect();
    let asked = if askers.is_empty() {
        "no server here has an option of its own".to_owned()
    } else {
        format!(
            "{} asked for {} (the kernel doubles a request)",
            askers.join(", "),
            size / 2
        )
    };
    match SysctlGuard::apply(root, &plan) {
        Ok(g) => Ok((
            Some(g),
            format!(
                "socket buffers: net.core.rmem_default and wmem_default set to {size} for the \
                 run (maxima raised to it if lower), restored at the end; {asked}"
            ),
        )),
        Err(e @ SysctlError::Busy(_)) => Err(e.to_string()),
        Err(e @ SysctlError::Io(_)) => Ok((
            None,
            format!(
                "socket buffers NOT equalized: cannot write /proc/sys ({e}; root needed): \
                 servers that ask for no size keep the kernel's defaults"
            ),
        )),
    }
}

/// A flag a benchmark checks between steps, and what to say when a signal sets it.
pub type StopFlag = (&'static AtomicBool, &'static str);

/// Catches SIGINT, SIGTERM and SIGHUP. With `stop`, the first signal sets the flag
/// (the run ends after its step, and dropping the guard restores the sysctls); a
/// later one, or the first without `stop`, writes the sysctls back at once and ends
/// the process (its servers with it: they are started with a parent-death signal).
/// Without a guard or a flag, nothing is caught. Call before starting any thread.
pub fn restore_on_signal(
    guard: Option<&SysctlGuard>,
    stop: Option<StopFlag>,
) -> Result<(), String> {
    if guard.is_none() && stop.is_none() {
        return Ok(());
    }
    let saved = guard.map(SysctlGuard::saved);
    crate::interrupt::on_signal("bench-signals", move |sig| {
        if let Some((flag, what)) = stop {
            if !flag.swap(true, Ordering::SeqCst) {
                super::say(&format!("{sig}: {what}"));
                return;
            }
        }
        if let Some(saved) = &saved {
            for e in sockbuf::restore(saved) {
                super::say(&format!("restoring a sysctl: {e}"));
            }
            super::say(&format!("{sig}: socket buffer sysctls restored; stopping"));
        }
        std::process::exit(130);
    })
}

/// What a report says of its run's conditions: where the figures come from, the
/// socket buffer size asked and how it was set, what each server ran with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fairness {
    /// Command, commit, versions, machine, sysctls before and during.
    pub provenance: Option<Provenance>,
    /// `--socket-buffer` (None: 0, the kernel left alone).
    pub socket_buffer: Option<u64>,
    /// How socket buffers were made equal (or why not).
    pub setup: String,
    /// Each server's first observed conditions, in the order observed.
    pub servers: Vec<(String, Conditions)>,
}

impl Fairness {
    /// Keeps `c` as `server`'s conditions unless it has some already.
    pub fn add(&mut self, server: &str, c: &Conditions) {
        if !self.servers.iter().any(|(n, _)| n == server) {
            self.servers.push((server.to_owned(), c.clone()));
        }
    }

    /// Sets the drops of `server`'s kept conditions (read at the end of that run).
    pub fn set_drops(&mut self, server: &str, drops: u64) {
        if let Some((_, c)) = self.servers.iter_mut().find(|(n, _)| n == server) {
            c.drops = drops;
        }
    }

    fn list(&self) -> Vec<(&str, &Conditions)> {
        self.servers.iter().map(|(n, c)| (n.as_str(), c)).collect()
    }

    /// The report's *Conditions* and *Provenance* sections.
    pub fn markdown(&self) -> String {
        let mut m = markdown_of(&self.list(), &self.setup);
        if let Some(p) = &self.provenance {
            m.push_str(&p.to_markdown());
        }
        m
    }

    /// Its fields of a report's JSON: `provenance`, `socket_buffer_bytes`,
    /// `socket_buffers` (the note), `conditions` (by server), `differences_not_removed`.
    pub fn json(&self) -> Map<String, Value> {
        let mut j = Map::new();
        j.insert(
            "provenance".into(),
            self.provenance
                .as_ref()
                .map_or(Value::Null, Provenance::to_json),
        );
        j.insert("socket_buffer_bytes".into(), json!(self.socket_buffer));
        j.insert("socket_buffers".into(), json!(self.setup));
        j.insert(
            "conditions".into(),
            Value::Object(
                self.servers
                    .iter()
                    .map(|(n, c)| (n.clone(), json(c)))
                    .collect(),
            ),
        );
        j.insert(
            "differences_not_removed".into(),
            json!(differences_of(&self.list())),
        );
        j
    }
}

/// The start of a run that starts servers: the provenance (`lode` and the `peers`'
/// versions, sysctls before), the socket buffer sysctls set to `size` for `servers`
/// (the guard restores them), the signals caught ([`restore_on_signal`]), the
/// sysctls read again (during). Call before starting any thread.
pub fn start(
    lode: &Path,
    peers: &[&str],
    size: Option<u64>,
    servers: &[Kind],
    stop: Option<StopFlag>,
) -> Result<(Fairness, Option<SysctlGuard>), String> {
    let mut provenance = Provenance::collect(Some(lode), peers);
    let (guard, setup) = set_up(size, servers)?;
    restore_on_signal(guard.as_ref(), stop)?;
    provenance.sysctls_during = crate::provenance::read_sysctls(Path::new("/proc/sys"));
    super::say(&setup);
    let fairness = Fairness {
        provenance: Some(provenance),
        socket_buffer: size,
        setup,
        servers: Vec::new(),
    };
    Ok((fairness, guard))
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
    differences_of(&per_server(runs))
}

/// The differences between the servers of `list` (name, conditions), one line each.
pub fn differences_of(list: &[(&str, &Conditions)]) -> Vec<String> {
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
    markdown_of(&per_server(runs), setup)
}

/// The section for the servers of `list` (name, conditions).
pub fn markdown_of(list: &[(&str, &Conditions)], setup: &str) -> String {
    let mut m = String::from("## Conditions\n\n");
    let _ = writeln!(m, "{setup}.\n");
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
    for (name, c) in list {
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
    let diff = differences_of(list);
    let _ = writeln!(m, "\n### Differences not removed\n");
    if diff.is_empty() {
        let _ = writeln!(m, "None seen.");
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

/// A block for tests: three servers, NSD with a smaller receive buffer.
#[cfg(test)]
pub(crate) fn sample() -> Fairness {
    let c = |rb: u64| Conditions {
        workers: 1,
        workers_option: "--workers".into(),
        udp_sockets: 1,
        rcvbuf: vec![rb],
        sndbuf: vec![4 << 20],
        cpus: vec!["0".into()],
        threads: 3,
        processes: 1,
        ..Conditions::default()
    };
    let mut f = Fairness {
        provenance: Some(Provenance::collect(None, &[])),
        socket_buffer: Some(4 << 20),
        setup: "socket buffers: test".into(),
        servers: Vec::new(),
    };
    for (name, rb) in [("lode", 4 << 20), ("knot", 4 << 20), ("nsd", 2 << 20)] {
        f.add(name, &c(rb));
    }
    f
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

    /// The block attack and compare-updates write: numbers as numbers, the first
    /// conditions of each server kept, their differences named.
    #[test]
    fn fairness_block() {
        let mut f = sample();
        f.add("lode", &Conditions::default());
        f.set_drops("nsd", 7);
        let j = Value::Object(f.json());
        assert!(crate::provenance::numeric_strings(&j).is_empty(), "{j}");
        assert_eq!(j["socket_buffer_bytes"], 4 << 20);
        assert_eq!(j["conditions"]["lode"]["rcvbuf_bytes"][0], 4 << 20);
        assert_eq!(j["conditions"]["nsd"]["rcvbuf_bytes"][0], 2 << 20);
        assert_eq!(j["conditions"]["nsd"]["socket_drops"], 7);
        assert!(j["provenance"]["machine"]["cores"].is_u64(), "{j}");
        assert_eq!(
            j["differences_not_removed"],
            json!(["nsd: receive buffer 2097152, the others 4194304"])
        );
        let md = f.markdown();
        assert!(
            md.contains("| lode | 1 (--workers) | 1 | 4.00 MiB |"),
            "{md}"
        );
        assert!(md.contains("## Provenance"), "{md}");
        assert!(Fairness::default().json()["provenance"].is_null());
        assert!(Fairness::default().markdown().contains("Not observed."));
        let (guard, note) = set_up(None, &[Kind::Lode]).expect("nothing to change");
        assert!(
            guard.is_none() && note.contains("--socket-buffer 0"),
            "{note}"
        );
    }
}
