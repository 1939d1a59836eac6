//! Each zone's last load, as `lode zone-status` shows it: where the zone
//! comes from, when it was last loaded and how long that took, and the
//! errors of a later load that failed while the older version is served.
//!
//! The reloader writes it (start, `reload`, `zone-reload`); the control
//! socket reads it. One small lock, taken once per zone loaded and once per
//! `zone-status`: never on the query path.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use lode_wire::Name;

use crate::clock::format_duration;
use crate::clock::unix_now;
use crate::config::{ZoneSource, ZoneSpec};
use crate::loading::zones::LoadedZone;

/// Errors kept per failed load (the first ones; the log has them all).
pub(crate) const KEPT_ERRORS: usize = 5;

/// Where a zone's served contents come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LoadSource {
    /// Read from its zone file.
    File(std::sync::Arc<Path>),
    /// Read from the binary snapshot of its (unchanged) zone file.
    Snapshot {
        /// The snapshot read.
        snapshot: PathBuf,
        /// The zone file it stands for.
        file: std::sync::Arc<Path>,
    },
    /// Transferred from its primaries (a configured secondary).
    Transfer,
    /// A catalog zone generated from this many member zones.
    Catalog(usize),
    /// Built into the binary (the demo).
    BuiltIn(&'static str),
}

impl fmt::Display for LoadSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadSource::File(p) => write!(f, "file {}", p.display()),
            LoadSource::Snapshot { snapshot, file } => write!(
                f,
                "snapshot {} of file {}",
                snapshot.display(),
                file.display()
            ),
            LoadSource::Transfer => f.write_str("transfer"),
            LoadSource::Catalog(n) => write!(f, "catalog generated from {n} member zones"),
            LoadSource::BuiltIn(label) => write!(f, "built in ({label})"),
        }
    }
}

/// A load that worked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LastLoad {
    /// When it ended (seconds since the Unix epoch).
    pub(crate) at: u64,
    /// How long reading and building took.
    pub(crate) took: Duration,
}

/// A load that failed after the last that worked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LastFailure {
    /// When it ended (seconds since the Unix epoch).
    pub(crate) at: u64,
    /// The first [`KEPT_ERRORS`] errors, `file:line: reason`.
    pub(crate) errors: Vec<String>,
    /// How many errors there were in all.
    pub(crate) count: usize,
    /// True when the previous version is still served.
    pub(crate) kept_old: bool,
}

/// What is known of one zone's loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoadRecord {
    /// Where the served version comes from (or would, when none loaded).
    pub(crate) source: LoadSource,
    /// The last load that worked.
    pub(crate) loaded: Option<LastLoad>,
    /// The last load, when it failed.
    pub(crate) failure: Option<Box<LastFailure>>,
}

impl LoadRecord {
    /// The `zone-status` lines after the first, each starting with two spaces.
    pub(crate) fn to_lines(&self, now: u64) -> String {
        let mut s = String::new();
        if let Some(l) = &self.loaded {
            s.push_str(&format!(
                "\n  last load {} ago, took {}",
                ago(now.saturating_sub(l.at)),
                format_duration(l.took)
            ));
        }
        if let Some(f) = &self.failure {
            let outcome = if f.kept_old {
                "the previous version is still served"
            } else {
                "not served"
            };
            s.push_str(&format!(
                "\n  last load FAILED {} ago ({}), {outcome}:",
                ago(now.saturating_sub(f.at)),
                count_errors(f.count)
            ));
            for e in &f.errors {
                s.push_str(&format!("\n    {e}"));
            }
            if f.count > f.errors.len() {
                s.push_str(&format!("\n    … and {} more", f.count - f.errors.len()));
            }
        }
        s
    }
}

/// Each zone's [`LoadRecord`], by origin (lower case).
#[derive(Debug, Default)]
pub(crate) struct ZoneLoads(Mutex<HashMap<Name, LoadRecord>>);

impl ZoneLoads {
    fn with<R>(&self, f: impl FnOnce(&mut HashMap<Name, LoadRecord>) -> R) -> R {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut map)
    }

    /// Records a load that worked.
    pub(crate) fn loaded(&self, spec: &ZoneSpec, l: &LoadedZone, snapshot_dir: Option<&Path>) {
        let source = match (&spec.source, snapshot_dir, l.from_snapshot) {
            (ZoneSource::File(file), Some(dir), true) => LoadSource::Snapshot {
                snapshot: crate::loading::snapshot::path_for(dir, &spec.name),
                file: file.clone(),
            },
            (s, _, _) => source_of(s),
        };
        let record = LoadRecord {
            source,
            loaded: Some(LastLoad {
                at: unix_now(),
                took: l.elapsed,
            }),
            failure: None,
        };
        self.with(|m| m.insert(spec.name.to_lowercase(), record));
    }

    /// Records a load that failed (the last that worked stays recorded).
    pub(crate) fn failed(&self, spec: &ZoneSpec, errors: &[String], kept_old: bool) {
        let failure = LastFailure {
            at: unix_now(),
            errors: errors.iter().take(KEPT_ERRORS).cloned().collect(),
            count: errors.len(),
            kept_old,
        };
        self.with(|m| {
            let r = m
                .entry(spec.name.to_lowercase())
                .or_insert_with(|| LoadRecord {
                    source: source_of(&spec.source),
                    loaded: None,
                    failure: None,
                });
            if !kept_old {
                r.loaded = None;
            }
            r.failure = Some(Box::new(failure));
        });
    }

    /// Records a configured secondary (its contents come by transfer).
    pub(crate) fn transfer(&self, name: &Name) {
        self.with(|m| {
            m.entry(name.to_lowercase()).or_insert(LoadRecord {
                source: LoadSource::Transfer,
                loaded: None,
                failure: None,
            });
        });
    }

    /// Forgets a zone no longer configured.
    pub(crate) fn remove(&self, name: &Name) {
        self.with(|m| m.remove(&name.to_lowercase()));
    }

    /// A zone's record, if it was configured.
    pub(crate) fn get(&self, name: &Name) -> Option<LoadRecord> {
        self.with(|m| m.get(&name.to_lowercase()).cloned())
    }
}

fn source_of(source: &ZoneSource) -> LoadSource {
    match source {
        ZoneSource::File(p) => LoadSource::File(p.clone()),
        ZoneSource::Transfer => LoadSource::Transfer,
        ZoneSource::Catalog(m) => LoadSource::Catalog(m.len()),
        ZoneSource::Embedded { label, .. } => LoadSource::BuiltIn(label),
    }
}

/// A duration in seconds, as people say it: "42 s", "3 min 5 s", "3 h 2 min", "4 d 3 h".
pub(crate) fn ago(secs: u64) -> String {
    match secs {
        0..=59 => format!("{secs} s"),
        60..=3599 => format!("{} min {} s", secs / 60, secs % 60),
        3600..=86_399 => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
        _ => format!("{} d {} h", secs / 86_400, secs % 86_400 / 3600),
    }
}

/// "1 error", "N errors".
pub(crate) fn count_errors(n: usize) -> String {
    if n == 1 {
        "1 error".into()
    } else {
        format!("{n} errors")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(ago(0), "0 s");
        assert_eq!(ago(185), "3 min 5 s");
        assert_eq!(ago(3 * 3600 + 125), "3 h 2 min");
        assert_eq!(ago(4 * 86_400 + 3 * 3600 + 7), "4 d 3 h");
    }

    #[test]
    fn a_failure_after_a_load_keeps_both() {
        let loads = ZoneLoads::default();
        let spec = ZoneSpec {
            name: "Example.test.".parse().unwrap(),
            source: ZoneSource::File(Path::new("/z/example.test.zone").into()),
        };
        let errors: Vec<String> = (1..=7).map(|i| format!("z:{i}: bad")).collect();
        loads.failed(&spec, &errors, false);
        let name: Name = "example.TEST.".parse().unwrap();
        let r = loads.get(&name).unwrap();
        assert_eq!(
            r.source,
            LoadSource::File(Path::new("/z/example.test.zone").into())
        );
        let f = r.failure.as_ref().unwrap();
        assert_eq!((f.errors.len(), f.count, f.kept_old), (5, 7, false));
        let text = r.to_lines(f.at);
        assert!(
            text.contains("FAILED 0 s ago (7 errors), not served:"),
            "{text}"
        );
        assert!(
            text.contains("\n    z:1: bad") && text.contains("… and 2 more"),
            "{text}"
        );
    }
}
