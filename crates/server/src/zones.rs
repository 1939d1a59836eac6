//! Loading one zone: text → records → checked, immutable [`Zone`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use lode_zonedb::{Severity, Zone, ZoneBuilder};
use lode_zonefile::ParsedZone;

use crate::config::{ZoneSource, ZoneSpec};

/// TTL of records that have none and come before any `$TTL` (Knot's `default-ttl`).
pub const DEFAULT_TTL: u32 = 3600;

/// What identifies a version of a zone file without reading it: its
/// modification time and size (the reload skips unchanged files).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    /// Modification time.
    pub modified: SystemTime,
    /// Size in bytes.
    pub size: u64,
}

impl FileStamp {
    /// The stamp of the file at `path` now.
    pub fn of(path: &Path) -> Option<FileStamp> {
        let m = std::fs::metadata(path).ok()?;
        Some(FileStamp {
            modified: m.modified().ok()?,
            size: m.len(),
        })
    }
}

/// A zone built from its source.
#[derive(Debug)]
pub struct LoadedZone {
    /// The zone.
    pub zone: Arc<Zone>,
    /// The files read (the zone file first, then its `$INCLUDE`s that hold
    /// records) with their stamps; the zone file's is taken before reading
    /// it. Empty for a built-in zone.
    pub files: Vec<(PathBuf, Option<FileStamp>)>,
    /// Warnings, each `file:line: warning: reason`.
    pub warnings: Vec<String>,
    /// Time spent reading and building.
    pub elapsed: Duration,
}

/// Reads, checks and builds the zone; on failure returns every problem as
/// `file:line: reason` (or `file: reason` when no record is concerned).
pub fn load(spec: &ZoneSpec) -> Result<LoadedZone, Vec<String>> {
    let start = Instant::now();
    let (parsed, mut files, label) = match &spec.source {
        ZoneSource::File(path) => {
            let stamp = FileStamp::of(path);
            let parsed = lode_zonefile::parse_file(path, &spec.name, Some(DEFAULT_TTL));
            (
                parsed,
                vec![(path.clone(), stamp)],
                path.display().to_string(),
            )
        }
        ZoneSource::Embedded { label, text } => (
            lode_zonefile::parse_bytes(text.as_bytes(), label, &spec.name, Some(DEFAULT_TTL)),
            Vec::new(),
            label.to_string(),
        ),
    };
    // Problem tags are indexes into `positions`, so errors name file:line.
    let ParsedZone { records, positions } =
        parsed.map_err(|errors| errors.iter().map(|e| e.to_string()).collect::<Vec<_>>())?;
    if !files.is_empty() {
        // Included files, in order of first appearance (consecutive records
        // share one `Arc<Path>`, so this is one pointer compare per record).
        let mut last: Option<&Arc<Path>> = None;
        for p in &positions {
            if last.is_some_and(|l| Arc::ptr_eq(l, &p.file)) {
                continue;
            }
            last = Some(&p.file);
            if !files.iter().any(|(f, _)| f.as_path() == &*p.file) {
                files.push((p.file.to_path_buf(), FileStamp::of(&p.file)));
            }
        }
    }
    let mut builder = ZoneBuilder::new(spec.name.clone());
    for (i, record) in records.into_iter().enumerate() {
        builder.add(record, i as u32);
    }
    let at = |tag: Option<u32>| -> String {
        match tag.and_then(|t| positions.get(t as usize)) {
            Some(p) => p.to_string(),
            None => label.clone(),
        }
    };
    let describe = |p: &lode_zonedb::Problem| match p.severity {
        Severity::Error => format!("{}: {}", at(p.tag), p.message),
        Severity::Warning => format!("{}: warning: {}", at(p.tag), p.message),
    };
    match builder.build() {
        Ok((zone, warnings)) => Ok(LoadedZone {
            zone: Arc::new(zone),
            files,
            warnings: warnings.iter().map(describe).collect(),
            elapsed: start.elapsed(),
        }),
        Err(problems) => Err(problems.iter().map(describe).collect()),
    }
}
