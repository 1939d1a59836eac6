//! What a server spends on a job, one job per command: CPU per durable update
//! (`lode-bench update-cpu`, Lode beside Knot DNS), memory after a million
//! changes against a fresh load (`update-memory`), a secondary's peak memory
//! while it takes a zone by AXFR (`axfr-in`), CPU per referral and
//! NXDOMAIN of a TLD-shaped zone beside Knot and NSD (`tld`), the start and
//! memory of 100 M records and the start from snapshots (`big-sets`). Each starts its servers through
//! lode-peers, reads their CPU and memory from `/proc`, prints its figures and
//! writes a report (`NAME.md`, `NAME.json`) with the provenance.
//!
//! ```text
//!  gen enum ─▶ zone files ─▶ lode-peers Spec ─▶ Server (pinned, stopped by PID)
//!     load (updates, an AXFR) ─▶ /proc/PID: utime+stime, VmRSS, VmHWM ─▶ report
//! ```

pub mod axfr_in;
pub mod big;
pub mod com;
pub mod cpu;
pub mod memory;
pub mod tld;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use lode_peers::{Logging, Ready, Spec};
use serde_json::Value;

use crate::gen::enumset::{generate, EnumLayout, EnumSetSpec};
use crate::provenance::Provenance;

/// Why a measurement could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostError(pub String);

impl fmt::Display for CostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CostError {}

/// `Err(CostError(msg))`.
pub(crate) fn fail<T>(msg: impl Into<String>) -> Result<T, CostError> {
    Err(CostError(msg.into()))
}

/// An I/O error on `path`.
pub(crate) fn io(path: &Path, e: std::io::Error) -> CostError {
    CostError(format!("{}: {e}", path.display()))
}

/// A Lode server on 127.0.0.1:`port` in `dir` (made afresh), started from
/// `lode`, logging into `dir/serve.log`, stopped with this process, ready
/// once its zones answer (at most `ready`).
pub(crate) fn lode_spec(
    lode: &Path,
    port: u16,
    dir: &Path,
    ready: Duration,
) -> Result<Spec, CostError> {
    fresh_dir(dir)?;
    let mut spec = Spec::new(lode_peers::Kind::Lode, port).stop_with_parent();
    spec.program = Some(lode.to_path_buf());
    spec.dir = Some(dir.to_path_buf());
    spec.stdio = Some(dir.join("serve.log"));
    spec.logging = Logging::Plain;
    spec.ready = Ready::Zones;
    spec.ready_timeout = ready;
    spec.stop_grace = Duration::from_secs(10);
    Ok(spec)
}

/// Removes `dir` and makes it again, empty.
pub(crate) fn fresh_dir(dir: &Path) -> Result<(), CostError> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))
}

/// The ENUM set of `spec` in `dir`: its layout and zone files (apex, path),
/// generated unless `reuse` and `dir` already holds it (its `lode.toml` is
/// written last; name the folder after the spec).
pub(crate) fn enum_set(
    spec: &EnumSetSpec,
    dir: &Path,
    reuse: bool,
) -> Result<(EnumLayout, Vec<(String, PathBuf)>), CostError> {
    let gen_err = |e: crate::gen::GenError| CostError(format!("gen enum: {e}"));
    if !(reuse && dir.join("lode.toml").is_file()) {
        crate::compare::say(&format!(
            "generating {} numbers in {} zone(s) into {}",
            spec.records,
            spec.zones,
            dir.display()
        ));
        let _ = std::fs::remove_dir_all(dir);
        let set = generate(spec, dir).map_err(gen_err)?;
        return Ok((set.layout, set.zone_files));
    }
    let layout = EnumLayout::new(spec).map_err(gen_err)?;
    let dir = dir.canonicalize().map_err(|e| io(dir, e))?;
    let files = (0..layout.zones())
        .map(|z| {
            let apex = layout.zone_apex(z);
            let file = dir.join(format!("{apex}zone"));
            (apex, file)
        })
        .collect();
    Ok((layout, files))
}

/// A field of `/proc/PID/status` in bytes (`VmRSS`, `VmHWM`); 0 when unreadable.
pub fn status_bytes(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|t| crate::compare::sys::parse_kb(&t, field))
        .unwrap_or(0)
}

/// Writes `NAME.md` (the text, then the provenance) and `NAME.json` (the
/// document with `provenance` added) into `out`; the Markdown file's path.
pub(crate) fn write_report(
    out: &Path,
    name: &str,
    markdown: &str,
    mut json: Value,
    provenance: &Provenance,
) -> Result<PathBuf, CostError> {
    std::fs::create_dir_all(out).map_err(|e| io(out, e))?;
    if let Value::Object(o) = &mut json {
        o.insert("provenance".into(), provenance.to_json());
    }
    let md_path = out.join(format!("{name}.md"));
    let text = format!("{markdown}\n{}", provenance.to_markdown());
    std::fs::write(&md_path, text).map_err(|e| io(&md_path, e))?;
    let json_path = out.join(format!("{name}.json"));
    let body = serde_json::to_string_pretty(&json).map_err(|e| CostError(e.to_string()))? + "\n";
    std::fs::write(&json_path, body).map_err(|e| io(&json_path, e))?;
    Ok(md_path)
}

/// Appends each note to a report's Markdown, a paragraph each: `Note: NOTE.`
pub(crate) fn write_notes(markdown: &mut String, notes: &[String]) {
    use std::fmt::Write as _;
    for n in notes {
        let _ = writeln!(markdown, "\nNote: {n}.");
    }
}

/// `a / b`, 0 when `b` is 0.
pub(crate) fn div(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// MiB of `bytes`.
pub(crate) fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

#[cfg(test)]
mod tests;
