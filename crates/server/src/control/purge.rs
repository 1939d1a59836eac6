//! `zone-purge [NAME…]` (as `knotc zone-purge +orphan`): the data Lode keeps
//! for zones no longer configured — journal, state snapshot, zone-file
//! note, saved secondary timers, the serial last delivered to NOTIFY
//! targets, signing keys — removed. Removing a zone from the
//! configuration (or a catalog's member list, whose members are purged at
//! once) stops serving it but keeps its data, so that a zone removed by
//! mistake comes back as it was; a zone added again later under the same
//! name would otherwise start from that old journal and keys.
//!
//! A zone still configured (or served) is refused: to start a secondary
//! afresh, `zone-retransfer`; to drop a primary's journal, take the zone
//! out of the configuration, reload, purge, put it back. Run on the
//! reloader thread, in order with reloads.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use lode_wire::Name;

use super::reload::{ReloadReport, Reloader};
use crate::config::Config;
use crate::replication::secondary::timers::TimerLog;

/// A zone's files in the journal folder, and what each is.
const JOURNAL_FILES: [(&str, &str); 4] = [
    ("jnl", "journal"),
    ("state", "state snapshot"),
    ("flushed", "zone-file note"),
    ("timers", "timers"),
];

impl Reloader {
    /// Purges the data of `asked` (none: of every zone no longer
    /// configured that has some).
    pub(crate) fn purge(&mut self, asked: &[Name]) -> ReloadReport {
        let config = self.loaded.clone().unwrap_or_else(|| self.running.clone());
        let mut report = ReloadReport::default();
        let configured = self.configured(&config);
        let in_use = |z: &Name| configured.contains(z) || self.publisher.get(z).is_some();
        let zones: BTreeSet<Name> = if asked.is_empty() {
            self.orphans(&config)
                .into_iter()
                .filter(|z| !in_use(z))
                .collect()
        } else {
            asked.iter().map(Name::to_lowercase).collect()
        };
        let mut refused = Vec::new();
        for zone in &zones {
            if in_use(zone) {
                refused.push(format!(
                    "zone {zone}: configured here, not purged: take it out of the configuration \
                     and `lode reload` first (a secondary starts afresh with `lode zone-retransfer \
                     {zone}`)"
                ));
                continue;
            }
            let removed = self.purge_zone(&config, zone);
            let what = if removed.is_empty() {
                "nothing to purge".to_string()
            } else {
                tracing::info!("zone {zone}: purged ({})", removed.join(", "));
                format!("purged: {}", removed.join(", "))
            };
            report.done.push((zone.to_string(), what));
        }
        if asked.is_empty() && zones.is_empty() {
            report.done.push((
                "-".into(),
                "no zone that is not configured has data here".into(),
            ));
        }
        if !refused.is_empty() {
            report.refused = Some(refused.join("\n"));
        }
        report
    }

    /// The zones configured, and the catalogs' members.
    fn configured(&self, config: &Config) -> HashSet<Name> {
        let mut names: HashSet<Name> = config.zones.iter().map(|s| s.name.to_lowercase()).collect();
        if let Some(u) = &self.updates {
            names.extend(u.zone_names().into_iter().map(|(n, _)| n));
        }
        names
    }

    /// Every zone some data is kept for: files in the journal folder, key
    /// folders, saved timers and delivered serials.
    fn orphans(&self, config: &Config) -> BTreeSet<Name> {
        let mut found = BTreeSet::new();
        if let Some(dir) = &config.journal_dir {
            for stem in stems(dir, |p| {
                p.is_file()
                    && p.extension()
                        .and_then(|e| e.to_str())
                        .is_some_and(|e| JOURNAL_FILES.iter().any(|(x, _)| *x == e))
            }) {
                found.extend(zone_of(&stem));
            }
        }
        if let Some(kasp) = &config.kasp_db {
            for stem in stems(kasp, Path::is_dir) {
                found.extend(zone_of(&stem));
            }
        }
        if let Some(s) = &self.secondaries {
            found.extend(s.timer_zones());
        }
        if let Some(n) = &self.notifies {
            found.extend(n.delivered_zones());
        }
        found
    }

    /// Removes what is kept for `zone`; what was removed.
    fn purge_zone(&self, config: &Config, zone: &Name) -> Vec<String> {
        let mut removed = Vec::new();
        if let Some(dir) = &config.journal_dir {
            let jnl = crate::update::journal_path(dir, zone);
            for (ext, what) in JOURNAL_FILES {
                match std::fs::remove_file(jnl.with_extension(ext)) {
                    Ok(()) => removed.push(what.to_string()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => removed.push(format!("{what} NOT removed ({e})")),
                }
            }
            let timers = match &self.secondaries {
                Some(s) => s.forget_timers(zone),
                // No secondary now: the file may hold an earlier run's.
                None => {
                    let log = TimerLog::open(dir);
                    let kept = log.value(zone).is_some();
                    log.remove(zone);
                    kept
                }
            };
            if timers {
                removed.push("saved refresh timers".into());
            }
        }
        if self
            .notifies
            .as_ref()
            .is_some_and(|n| n.forget_delivered(zone))
        {
            removed.push("serial delivered to NOTIFY targets".into());
        }
        if let Some(kasp) = &config.kasp_db {
            let keys = crate::update::signing::key_dir(kasp, zone);
            if keys.is_dir() {
                match std::fs::remove_dir_all(&keys) {
                    Ok(()) => removed.push(format!("signing keys ({})", keys.display())),
                    Err(e) => removed.push(format!("signing keys NOT removed ({e})")),
                }
            }
        }
        removed
    }
}

/// The names (without extension) of the entries of `dir` that `keep` takes.
fn stems(dir: &Path, keep: impl Fn(&Path) -> bool) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| keep(p))
        .filter_map(|p| {
            let stem = if p.is_dir() {
                p.file_name()
            } else {
                p.file_stem()
            };
            stem.and_then(|s| s.to_str()).map(str::to_owned)
        })
        .collect()
}

/// The zone a file or folder stem names (`root` for the root zone, as
/// `journal_path` and `key_dir` write them).
fn zone_of(stem: &str) -> Option<Name> {
    if stem == "root" {
        return Some(Name::root());
    }
    format!("{stem}.")
        .parse::<Name>()
        .ok()
        .map(|n| n.to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_name_their_zones() {
        assert_eq!(zone_of("root"), Some(Name::root()));
        assert_eq!(
            zone_of("Example.com"),
            Some("example.com.".parse().unwrap())
        );
        assert_eq!(zone_of("bad..name"), None);
    }
}
