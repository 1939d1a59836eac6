//! A zone's backup and restore (`lode zone-backup`, `lode zone-restore`,
//! as knotc's), done by its writer so that the version and the key folder
//! agree: no key event or change comes between them.

use std::path::Path;
use std::sync::Arc;

use lode_dnssec::Trigger;
use lode_zonedb::Zone;

use super::Writer;
use crate::update::WriterError;

impl Writer {
    /// Writes the served version as the zone file `file` and, for a zone
    /// signed here, copies its key folder into `keys`; what was written.
    pub(super) fn backup(&self, file: &Path, keys: &Path) -> Result<String, WriterError> {
        let zone = self.current().ok_or(WriterError::NotServed)?;
        if zone.is_expired() {
            return Err(WriterError::NothingToBackUp);
        }
        let written = crate::loading::flush::write_zone_file(file, &zone, |_, _| Ok(()))
            .map_err(WriterError::file(file))?;
        let copied = match &self.keys {
            Some(k) => {
                let from = crate::update::signing::key_dir(&k.kasp_db, &self.origin);
                copy_files(&from, keys)?
            }
            None => 0,
        };
        Ok(format!(
            "serial {}, {} records{}",
            written.serial,
            written.records,
            if copied > 0 {
                format!(", {copied} key files")
            } else {
                String::new()
            }
        ))
    }

    /// Makes `zone` the served version (a whole new version: the journal's
    /// history restarts), the key folder first made the copy in `keys` and
    /// read again when the zone is signed here; what was done.
    pub(super) fn restore(
        &mut self,
        zone: Arc<Zone>,
        keys: Option<&Path>,
    ) -> Result<String, WriterError> {
        if self.signs_transfers {
            return Err(WriterError::SignedSecondary);
        }
        let before = self.current().map(|z| z.serial());
        let mut note = String::new();
        if let (Some(from), Some(k)) = (keys, &self.keys) {
            let to = crate::update::signing::key_dir(&k.kasp_db, &self.origin);
            let n = mirror_files(from, &to)?;
            self.key_event(Trigger::Timers)?;
            note = format!(", {n} key files");
        }
        let serial = self.replace(zone, None)?;
        let back = before.filter(|&b| {
            lode_wire::serial::serial_cmp(serial, b) != lode_wire::serial::SerialOrder::Greater
                && serial != b
        });
        Ok(format!(
            "restored, serial {serial}{note}{}",
            match back {
                Some(b) => format!(
                    " (the serial went back from {b}: secondaries keep {b} until the serial \
                     passes it; raise it with an update)"
                ),
                None => String::new(),
            }
        ))
    }
}

/// Copies the files of `from` (not its temporary ones, nor folders) into
/// `to`, made if missing; how many.
fn copy_files(from: &Path, to: &Path) -> Result<usize, WriterError> {
    std::fs::create_dir_all(to).map_err(WriterError::file(to))?;
    let entries = match std::fs::read_dir(from) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(WriterError::file(from)(e)),
    };
    let mut n = 0;
    for entry in entries {
        let path = entry.map_err(WriterError::file(from))?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.starts_with('.') || !path.is_file() {
            continue;
        }
        // Whole or not at all: a copy beside it, renamed over.
        let tmp = to.join(format!(".{name}.lode-tmp"));
        std::fs::copy(&path, &tmp).map_err(WriterError::file(&path))?;
        std::fs::File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(WriterError::file(&tmp))?;
        std::fs::rename(&tmp, to.join(name)).map_err(WriterError::file(to))?;
        n += 1;
    }
    std::fs::File::open(to)
        .and_then(|f| f.sync_all())
        .map_err(WriterError::file(to))?;
    Ok(n)
}

/// Makes the files of `to` those of `from`: copied over, and those `from`
/// has not removed (after the copy: a crash leaves more keys, not fewer).
fn mirror_files(from: &Path, to: &Path) -> Result<usize, WriterError> {
    let n = copy_files(from, to)?;
    let entries = std::fs::read_dir(to).map_err(WriterError::file(to))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name() else {
            continue;
        };
        if path.is_file() && !from.join(name).exists() {
            std::fs::remove_file(&path).map_err(WriterError::file(&path))?;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_folders_copied_and_mirrored() {
        let base = std::env::temp_dir().join(format!("lode-backup-files-{}", std::process::id()));
        let (a, b) = (base.join("a"), base.join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::write(a.join("K1.private"), "one").unwrap();
        std::fs::write(a.join(".K2.private.tmp"), "temporary").unwrap();
        assert_eq!(copy_files(&a, &b).unwrap(), 1);
        assert_eq!(
            std::fs::read_to_string(b.join("K1.private")).unwrap(),
            "one"
        );
        assert!(!b.join(".K2.private.tmp").exists());
        std::fs::write(b.join("K3.private"), "newer").unwrap();
        std::fs::write(a.join("K1.private"), "one again").unwrap();
        assert_eq!(mirror_files(&a, &b).unwrap(), 1);
        assert!(!b.join("K3.private").exists(), "not in the backup");
        assert_eq!(
            std::fs::read_to_string(b.join("K1.private")).unwrap(),
            "one again"
        );
        assert_eq!(copy_files(&base.join("none"), &b).unwrap(), 0);
        std::fs::remove_dir_all(&base).unwrap();
    }
}
