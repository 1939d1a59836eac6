//! `zone-backup` and `zone-restore` (as knotc's), on the reloader thread:
//!
//! ```text
//!  DIR/lode-backup.txt            the zones backed up, one a line, and what was written
//!  DIR/zones/<zone>.zone          each zone's served version, as a zone file
//!  DIR/keys/<zone>/               a zone signed here: its key folder (.private, .key, …)
//! ```
//!
//! A zone with a writer (it takes updates, is signed here or is a
//! secondary) is written by its writer, so that its version and its keys
//! agree; others from their published version. A restore serves the
//! backup's version as a whole new version (the journal's history restarts:
//! secondaries take an AXFR) after putting its key folder back, or — a
//! zone read from its file alone — writes the file back and reads it. A
//! secondary is not restored: its primaries have its records.

use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};

use lode_wire::Name;

use super::reload::{ReloadReport, Reloader, ZoneFailure};
use crate::config::{ZoneSource, ZoneSpec};
use crate::update::{Work, WriterError};

/// The list of a backup folder's zones.
const MANIFEST: &str = "lode-backup.txt";

/// Why a zone was not backed up or restored (a line of the command's
/// report).
#[derive(Debug, thiserror::Error)]
enum BackupError {
    /// The zone is not served here.
    #[error("no such zone is served")]
    NotServed,
    /// `zone-restore` of a zone the backup folder does not list.
    #[error("not in this backup")]
    NotInBackup,
    /// `zone-restore` of a secondary.
    #[error("a secondary: its primaries have its records (`lode zone-retransfer {0}`)")]
    Secondary(Name),
    /// The backup's zone file does not load (its errors).
    #[error("{}", .0.join("; "))]
    Load(Vec<String>),
    /// A zone with neither writer nor zone file of its own.
    #[error("not read from a zone file here: nothing to restore it to")]
    NoZoneFile,
    /// A file of the backup or of the zone read or written.
    #[error("{}: {source}", .path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The zone file written back from the backup and not read (the
    /// reload's errors are in the report).
    #[error("{} written back, but not read", .0.display())]
    NotRead(PathBuf),
    /// The zone's writer did not do it.
    #[error(transparent)]
    Writer(#[from] WriterError),
}

impl BackupError {
    /// A file's I/O error, with the file.
    fn file(path: &Path) -> impl FnOnce(std::io::Error) -> BackupError + '_ {
        move |source| BackupError::File {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Where a zone's file and key folder are in a backup folder.
fn places(dir: &Path, zone: &Name) -> (PathBuf, PathBuf) {
    let jnl = crate::update::journal_path(Path::new(""), zone);
    let stem = jnl.file_stem().map(|s| s.to_owned()).unwrap_or_default();
    (
        dir.join("zones").join(&stem).with_extension("zone"),
        dir.join("keys").join(stem),
    )
}

impl Reloader {
    /// Backs up `asked` (none: every zone served) into the new folder `dir`.
    pub(crate) fn backup(&mut self, dir: &Path, asked: &[Name]) -> ReloadReport {
        let mut report = ReloadReport::default();
        let refuse = |why: String| ReloadReport {
            refused: Some(why),
            ..ReloadReport::default()
        };
        if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
            return refuse(format!(
                "{}: not empty: back up into a new folder",
                dir.display()
            ));
        }
        if let Err(e) = std::fs::create_dir_all(dir.join("zones")) {
            return refuse(format!("{}: {e}", dir.display()));
        }
        let zones: Vec<Name> = if asked.is_empty() {
            self.zone_names()
        } else {
            asked.to_vec()
        };
        let mut manifest = format!(
            "# Lode {} backup, {} (Unix seconds); restore with `lode zone-restore --dir {}`\n",
            env!("CARGO_PKG_VERSION"),
            crate::clock::unix_now(),
            dir.display()
        );
        for zone in &zones {
            let (file, keys) = places(dir, zone);
            let done = match self.publisher.get(zone) {
                None => Err(BackupError::NotServed),
                Some(_) if self.has_writer(zone) => self
                    .ask_writer(zone, |done| Work::Backup {
                        file: file.clone(),
                        keys: keys.clone(),
                        done,
                    })
                    .map_err(BackupError::from),
                Some(version) => {
                    crate::loading::flush::write_zone_file(&file, &version, |_, _| Ok(()))
                        .map(|w| format!("serial {}, {} records", w.serial, w.records))
                        .map_err(BackupError::file(&file))
                }
            };
            match done {
                Ok(what) => {
                    manifest.push_str(&format!("{zone} # {what}\n"));
                    report
                        .done
                        .push((zone.to_string(), format!("backed up: {what}")));
                }
                Err(e) => report.failed.push(failure(zone, e)),
            }
        }
        if let Err(e) = write_new(&dir.join(MANIFEST), &manifest) {
            report.refused = Some(format!("{}: {e}", dir.join(MANIFEST).display()));
        }
        report
    }

    /// Restores `asked` (none: every zone of the backup) from `dir`.
    pub(crate) fn restore(&mut self, dir: &Path, asked: &[Name]) -> ReloadReport {
        let mut report = ReloadReport::default();
        let listed = match std::fs::read_to_string(dir.join(MANIFEST)) {
            Ok(text) => text
                .lines()
                .filter_map(|l| l.split('#').next())
                .filter_map(|l| l.trim().parse::<Name>().ok())
                .collect::<Vec<Name>>(),
            Err(e) => {
                report.refused = Some(format!(
                    "{}: {e}: not a Lode backup folder (`lode zone-backup` writes one)",
                    dir.join(MANIFEST).display()
                ));
                return report;
            }
        };
        let zones = if asked.is_empty() {
            listed.clone()
        } else {
            asked.to_vec()
        };
        for zone in &zones {
            if !listed.contains(zone) {
                report.failed.push(failure(zone, BackupError::NotInBackup));
                continue;
            }
            match self.restore_zone(dir, zone, &mut report) {
                Ok(what) => report.done.push((zone.to_string(), what)),
                Err(e) => report.failed.push(failure(zone, e)),
            }
        }
        report
    }

    fn restore_zone(
        &mut self,
        dir: &Path,
        zone: &Name,
        report: &mut ReloadReport,
    ) -> Result<String, BackupError> {
        if self.publisher.get(zone).is_none() {
            return Err(BackupError::NotServed);
        }
        if self.secondaries.as_ref().is_some_and(|s| s.has(zone)) {
            return Err(BackupError::Secondary(zone.clone()));
        }
        let (file, keys) = places(dir, zone);
        if self.has_writer(zone) {
            let spec = ZoneSpec {
                name: zone.clone(),
                source: ZoneSource::File(Arc::from(file.as_path())),
            };
            let loaded = crate::loading::zones::load(&spec).map_err(BackupError::Load)?;
            let keys = keys.is_dir().then_some(keys);
            return Ok(self.ask_writer(zone, |done| Work::Restore {
                zone: loaded.zone,
                keys,
                done,
            })?);
        }
        // Read from its file alone: the file written back, then read.
        let config = self.loaded.clone().unwrap_or_else(|| self.running.clone());
        let Some(ZoneSource::File(path)) = config
            .zones
            .iter()
            .find(|s| s.name == *zone)
            .map(|s| s.source.clone())
        else {
            return Err(BackupError::NoZoneFile);
        };
        let text = std::fs::read_to_string(&file).map_err(BackupError::file(&file))?;
        write_over(&path, &text).map_err(BackupError::file(&path))?;
        let read = self.reload_zone(zone);
        let ok = read.is_ok();
        report.failed.extend(read.failed);
        if !ok {
            return Err(BackupError::NotRead(path.to_path_buf()));
        }
        Ok(format!(
            "restored: {} written back from the backup and read",
            path.display()
        ))
    }

    /// Every zone served with a door (configured, or a catalog's member).
    fn zone_names(&self) -> Vec<Name> {
        let mut names: Vec<Name> = match &self.updates {
            Some(u) => u.zone_names().into_iter().map(|(n, _)| n).collect(),
            None => self.served.iter().map(|s| s.spec.name.clone()).collect(),
        };
        names.retain(|n| self.publisher.get(n).is_some());
        names
    }

    fn has_writer(&self, zone: &Name) -> bool {
        self.updates.as_ref().is_some_and(|u| u.has_writer(zone))
    }

    /// Hands the work `make` builds to the zone's writer and waits (a
    /// zone `has_writer` found one for).
    fn ask_writer(
        &self,
        zone: &Name,
        make: impl FnOnce(mpsc::Sender<Result<String, WriterError>>) -> Work,
    ) -> Result<String, WriterError> {
        let u = self.updates.as_ref().ok_or(WriterError::NoWriter)?;
        let (done, answer) = mpsc::channel();
        u.to_writer(zone, make(done))?;
        answer.recv().map_err(|_| WriterError::Stopped)?
    }
}

fn failure(zone: &Name, why: BackupError) -> ZoneFailure {
    ZoneFailure {
        zone: zone.to_string(),
        kept_old: true,
        errors: vec![why.to_string()],
    }
}

/// Writes `text` as the new file `path` (refused if it exists).
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

/// Writes `text` over the file `path`, whole (a temporary file beside it,
/// synced, renamed over).
fn write_over(path: &Path, text: &str) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map_or_else(|| "zone".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.lode-restore"));
    std::fs::write(&tmp, text)?;
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, path)
}
