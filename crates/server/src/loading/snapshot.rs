//! Zone snapshots on disk: a loaded zone's compact store written as it is
//! (see `lode_zonedb::Zone::write_snapshot`), read back at start instead of
//! parsing the zone file again when the file has not changed since.
//!
//! A snapshot records the zone file's identity (path, size, modification
//! time in nanoseconds); a snapshot whose identity differs from the file's
//! is stale and ignored. Zones with `$INCLUDE`d files are not snapshotted
//! (a change in an included file would go unnoticed). Files are written to a
//! temporary name and renamed, so a crash never leaves half a snapshot under
//! the real name.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use lode_wire::Name;
use lode_zonedb::Zone;

use crate::config::stamp::source_tag;

/// The snapshot file for zone `origin` in `dir`: `<origin>snap`, lower case
/// (`root.snap` for the root zone).
pub fn path_for(dir: &Path, origin: &Name) -> PathBuf {
    let text = origin.to_lowercase().to_string();
    let base = if text == "." {
        "root.".to_string()
    } else {
        text
    };
    // Names may hold '/' (escaped in presentation form as itself): replace it.
    dir.join(format!("{}snap", base.replace('/', "_")))
}

/// Why a snapshot was not used.
#[derive(Debug)]
pub enum Unused {
    /// There is none, or it belongs to another version of the file.
    Absent,
    /// It exists but cannot be read or is damaged.
    Bad(String),
}

/// Reads the snapshot of `origin` from `snap` if it matches `zone_file` now.
pub fn read_fresh(snap: &Path, zone_file: &Path, origin: &Name) -> Result<Zone, Unused> {
    let Ok(file) = File::open(snap) else {
        return Err(Unused::Absent);
    };
    let tag = source_tag(zone_file).ok_or(Unused::Absent)?;
    let size = file.metadata().map_or(0, |m| m.len());
    let (zone, stored) = Zone::read_snapshot(&mut BufReader::with_capacity(1 << 20, file), size)
        .map_err(|e| Unused::Bad(format!("{}: {e}", snap.display())))?;
    if stored != tag {
        return Err(Unused::Absent);
    }
    if zone.origin() != origin.as_ref() {
        return Err(Unused::Bad(format!(
            "{}: holds zone {}, not {origin}",
            snap.display(),
            zone.origin()
        )));
    }
    Ok(zone)
}

/// Writes the snapshot of `zone`, built from `zone_file`, to `snap`.
pub fn write(snap: &Path, zone: &Zone, zone_file: &Path) -> std::io::Result<()> {
    let tag = source_tag(zone_file).ok_or_else(|| {
        std::io::Error::other(format!(
            "{}: cannot stat the zone file",
            zone_file.display()
        ))
    })?;
    write_tagged(snap, zone, &tag, Durability::Synced)
}

/// The tag of a zone's state snapshot (see [`write_state`]).
const STATE_TAG: &[u8] = b"lode zone state";

/// Writes a zone's state — its contents at one serial, whatever its file
/// says — to `snap`: what a journal flush keeps before dropping the history
/// the state covers. With [`Durability::Synced`] the file is synced before
/// it is renamed into place, and the folder after.
/// `file_tag` names the zone file version whose contents the state includes
/// (see [`source_tag`]): a file that differs from it was edited since.
pub fn write_state(
    snap: &Path,
    zone: &Zone,
    file_tag: &[u8],
    sync: Durability,
) -> std::io::Result<()> {
    let mut tag = STATE_TAG.to_vec();
    tag.extend_from_slice(file_tag);
    write_tagged(snap, zone, &tag, sync)?;
    if let (Some(dir), Durability::Synced) = (snap.parent(), sync) {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Whether a state written waits for the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// The file and its folder synced before the call returns: the state
    /// survives a power loss (what a journal's history is dropped against).
    Synced,
    /// Written and renamed in place, left to the kernel's writeback: it
    /// survives the process (`kill -9`), maybe not a power loss — for a
    /// version that can be fetched again (a secondary's transfer).
    Cached,
}

/// Why a zone's state snapshot was not read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The file could not be opened or read.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The snapshot.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// Its contents are not a snapshot lode-zonedb reads.
    #[error("{}: {source}", .path.display())]
    Snapshot {
        /// The snapshot.
        path: PathBuf,
        /// Why.
        source: lode_zonedb::SnapshotError,
    },
    /// A snapshot, but not a zone's state.
    #[error("{}: not a zone state snapshot", .0.display())]
    NotState(PathBuf),
    /// Another zone's state.
    #[error("{}: not the state of zone {origin}", .path.display())]
    OtherZone {
        /// The snapshot.
        path: PathBuf,
        /// The zone it was read for.
        origin: Name,
    },
}

/// Reads a state snapshot written by [`write_state`], with its file tag:
/// `Ok(None)` when there is none.
pub fn read_state(snap: &Path, origin: &Name) -> Result<Option<(Zone, Vec<u8>)>, StateError> {
    let io = |source| StateError::Io {
        path: snap.to_path_buf(),
        source,
    };
    let file = match File::open(snap) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    let size = file.metadata().map_err(io)?.len();
    let (zone, tag) = Zone::read_snapshot(&mut BufReader::new(file), size).map_err(|source| {
        StateError::Snapshot {
            path: snap.to_path_buf(),
            source,
        }
    })?;
    let Some(file_tag) = tag.strip_prefix(STATE_TAG) else {
        return Err(StateError::NotState(snap.to_path_buf()));
    };
    if zone.origin().to_name().to_lowercase() != origin.to_lowercase() {
        return Err(StateError::OtherZone {
            path: snap.to_path_buf(),
            origin: origin.clone(),
        });
    }
    Ok(Some((zone, file_tag.to_vec())))
}

fn write_tagged(snap: &Path, zone: &Zone, tag: &[u8], sync: Durability) -> std::io::Result<()> {
    if let Some(dir) = snap.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = snap.with_extension(format!("tmp.{}", std::process::id()));
    let result = (|| {
        // (A small zone's state is small: no 1 MiB buffer for it.)
        let size = zone.heap_bytes().saturating_add(4096).min(1 << 20);
        let mut w = BufWriter::with_capacity(size, File::create(&tmp)?);
        zone.write_snapshot(tag, &mut w)?;
        w.flush()?;
        if sync == Durability::Synced {
            w.get_ref().sync_all()?;
        }
        std::fs::rename(&tmp, snap)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_read_and_staleness() {
        let dir = std::env::temp_dir().join(format!("lode-snap-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let zone_file = dir.join("example.zone");
        std::fs::write(
            &zone_file,
            "$ORIGIN example.\n@ 3600 SOA ns hm 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\nwww A 192.0.2.2\n",
        )
        .unwrap();
        let origin: Name = "example.".parse().unwrap();
        let spec = crate::config::ZoneSpec {
            name: origin.clone(),
            source: crate::config::ZoneSource::File(zone_file.as_path().into()),
        };
        let loaded = crate::loading::zones::load(&spec).unwrap();
        let snap = path_for(&dir, &origin);
        assert_eq!(snap.file_name().unwrap(), "example.snap");
        assert!(matches!(
            read_fresh(&snap, &zone_file, &origin),
            Err(Unused::Absent)
        ));
        write(&snap, &loaded.zone, &zone_file).unwrap();
        let z = read_fresh(&snap, &zone_file, &origin).unwrap();
        assert_eq!(z.record_count(), 4);
        assert!(z
            .find("www.example.".parse::<Name>().unwrap().as_ref())
            .is_some());
        // Another zone's name: refused.
        let other: Name = "example.net.".parse().unwrap();
        assert!(matches!(
            read_fresh(&snap, &zone_file, &other),
            Err(Unused::Bad(_))
        ));
        // The file changes: the snapshot is stale.
        std::fs::write(&zone_file, "; changed\n").unwrap();
        assert!(matches!(
            read_fresh(&snap, &zone_file, &origin),
            Err(Unused::Absent)
        ));
        // Damage is reported, not served.
        write(&snap, &loaded.zone, &zone_file).unwrap();
        let mut bytes = std::fs::read(&snap).unwrap();
        let n = bytes.len();
        bytes[n / 2] ^= 0x10;
        std::fs::write(&snap, &bytes).unwrap();
        assert!(matches!(
            read_fresh(&snap, &zone_file, &origin),
            Err(Unused::Bad(_))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn loading_uses_and_refreshes_snapshots() {
        let dir = std::env::temp_dir().join(format!("lode-snap-load-{}", std::process::id()));
        let snaps = dir.join("snaps");
        std::fs::create_dir_all(&dir).unwrap();
        let zone_file = dir.join("example.zone");
        let text = "$ORIGIN example.\n@ 3600 SOA ns hm 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n";
        std::fs::write(&zone_file, text).unwrap();
        let origin: Name = "example.".parse().unwrap();
        let spec = crate::config::ZoneSpec {
            name: origin.clone(),
            source: crate::config::ZoneSource::File(zone_file.as_path().into()),
        };
        let load = || crate::loading::zones::load_with(&spec, None, Some(&snaps)).unwrap();
        let first = load();
        assert!(!first.from_snapshot);
        assert!(
            path_for(&snaps, &origin).exists(),
            "written after a text load"
        );
        let second = load();
        assert!(second.from_snapshot);
        assert_eq!(second.zone.record_count(), first.zone.record_count());
        // A changed file is read again (a new size), and snapshotted again.
        std::fs::write(&zone_file, format!("{text}www A 192.0.2.9\n")).unwrap();
        let third = load();
        assert!(!third.from_snapshot);
        let www: Name = "www.example.".parse().unwrap();
        assert!(third.zone.find(www.as_ref()).is_some());
        let fourth = load();
        assert!(fourth.from_snapshot);
        assert!(fourth.zone.find(www.as_ref()).is_some());
        // A damaged snapshot is not served: the text is read instead.
        let snap = path_for(&snaps, &origin);
        let mut bytes = std::fs::read(&snap).unwrap();
        let n = bytes.len();
        bytes[n - 3] ^= 0xFF;
        std::fs::write(&snap, &bytes).unwrap();
        let fifth = load();
        assert!(!fifth.from_snapshot);
        assert!(fifth.zone.find(www.as_ref()).is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
