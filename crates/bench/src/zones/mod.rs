//! Many small zones: `lode-bench many-zones` (time until thousands to
//! millions of zones all answer, memory, durable updates, beside Knot DNS
//! and NSD; catalog members) and `lode-bench reload-zones` (zones added and
//! removed by `lode reload`). Servers are started through lode-peers.
//!
//! ```text
//!  zone files (6 records each) ─▶ lode-peers Spec per server ─▶ Server::start
//!     ├ many:   last zone answers? (the time) ─▶ 200 spread over the set answer?
//!     │         ─▶ memory, threads, files ─▶ durable updates (16 clients)
//!     └ reload: 1 zone ─▶ reload adding N ─▶ an update ─▶ reload removing them
//!  ─▶ NAME.md, NAME.json (numbers as numbers) with the provenance
//! ```

pub mod many;
pub mod probe;
pub mod reload;

use std::fmt;
use std::path::Path;

use lode_peers::{Sample, Server};
use serde_json::{json, Value};

use crate::provenance::Provenance;

/// Why a zone benchmark stopped.
#[derive(Debug)]
pub struct ZonesError(pub String);

impl fmt::Display for ZonesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ZonesError {}

impl From<lode_peers::Error> for ZonesError {
    fn from(e: lode_peers::Error) -> ZonesError {
        ZonesError(e.to_string())
    }
}

/// `what`: the error of a failed file operation.
fn io(what: impl fmt::Display) -> impl FnOnce(std::io::Error) -> ZonesError {
    move |e| ZonesError(format!("{what}: {e}"))
}

/// Memory, threads and open files of a server, summed over its processes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct State {
    /// Bytes: the resident set of one process, PSS summed over several (NSD's).
    pub memory: u64,
    /// Processes counted.
    pub processes: usize,
    /// Threads.
    pub threads: u32,
    /// Open file descriptors.
    pub fds: u32,
}

impl State {
    /// Reads every process of `server` from /proc.
    pub fn of(server: &Server) -> State {
        let samples: Vec<Sample> = server.pids().into_iter().filter_map(Sample::of).collect();
        let several = samples.len() > 1;
        State {
            memory: samples
                .iter()
                .map(|s| match (several, s.pss) {
                    (true, Some(p)) => p,
                    _ => s.rss,
                })
                .sum(),
            processes: samples.len(),
            threads: samples.iter().map(|s| s.threads).sum(),
            fds: samples.iter().map(|s| s.fds).sum(),
        }
    }

    /// A reading of `mib` MiB in one process (tests).
    #[cfg(test)]
    pub(crate) fn test(mib: u64, threads: u32, fds: u32) -> State {
        State {
            memory: mib << 20,
            processes: 1,
            threads,
            fds,
        }
    }

    /// Memory in MiB (rounded down, as the shell benchmarks printed it).
    pub fn mib(&self) -> u64 {
        self.memory >> 20
    }

    /// `resident N MiB, T threads, F open files`.
    pub fn line(&self) -> String {
        format!(
            "resident {} MiB, {} threads, {} open files",
            self.mib(),
            self.threads,
            self.fds
        )
    }

    /// The JSON object (bytes, counts).
    pub fn to_json(&self) -> Value {
        json!({
            "memory_bytes": self.memory,
            "processes": self.processes,
            "threads": self.threads,
            "open_files": self.fds,
        })
    }
}

/// Writes `dir/NAME.zone`'s text for zone `i` of a set as `text(i)` says, for
/// `range`; the folder is made afresh.
fn write_zone_files(
    dir: &Path,
    range: std::ops::Range<u64>,
    text: impl Fn(u64) -> (String, String),
) -> Result<(), ZonesError> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(io(dir.display()))?;
    for i in range {
        let (file, body) = text(i);
        let path = dir.join(file);
        std::fs::write(&path, body).map_err(io(path.display()))?;
    }
    Ok(())
}

/// Writes `out/NAME.md` (with the provenance section) and `out/NAME.json`
/// (`body` plus `"provenance"`).
fn write_report(
    out: &Path,
    name: &str,
    markdown: &str,
    mut body: Value,
    provenance: &Provenance,
) -> Result<(), ZonesError> {
    std::fs::create_dir_all(out).map_err(io(out.display()))?;
    let md = format!("{markdown}\n{}", provenance.to_markdown());
    let path = out.join(format!("{name}.md"));
    std::fs::write(&path, md).map_err(io(path.display()))?;
    body["provenance"] = provenance.to_json();
    let path = out.join(format!("{name}.json"));
    let text = serde_json::to_string_pretty(&body).unwrap_or_default();
    std::fs::write(&path, text + "\n").map_err(io(path.display()))
}

/// Online CPUs: Lode's and Knot's default worker counts follow them.
fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The short name of the Lode measured: its commit's first 7 digits, else its version.
fn lode_label(p: &Provenance) -> String {
    match (&p.lode.commit, &p.lode.version) {
        (Some(c), _) => format!("Lode {}", &c[..c.len().min(7)]),
        (None, Some(v)) => v.clone(),
        (None, None) => "Lode".into(),
    }
}
