//! Writing a zone that takes updates back to its zone file (Knot's
//! `zonefile-sync` and `knotc zone-flush`).
//!
//! ```text
//!  zone writer (update/writer), after a change when zonefile-sync says so,
//!  or on `lode zone-flush`:
//!    published version ──write_zone──▶ <dir>/.<file>.lode-tmp.<pid>  (fsync)
//!    its tag (as it will be) ──▶ <journal-dir>/<zone>.flushed  (start: not "edited")
//!    its stamp ──▶ Written (shared with the reloader: not "changed")
//!    ──rename──▶ <file>  (fsync the folder)
//! ```
//!
//! The file holds the records of one version, SOA first, then in canonical
//! order, owners relative to `$ORIGIN`, one record per line. The state
//! snapshot keeps the tag of the file it took in; the `.flushed` note names
//! the files the writer wrote itself, so a start does not take such a file
//! for an operator's edit and apply it as a difference (which, for a file
//! older than the journal, would undo the changes after it).
//!
//! The note and the stamps are recorded before the rename and keep the
//! previous file too: whether a crash or a reload comes before or after the
//! rename, the file in place is known as the writer's.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use lode_wire::{Name, Rtype};
use lode_zonedb::Zone;

use crate::config::stamp::FileStamp;

/// What a flush wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flushed {
    /// The zone file.
    pub path: PathBuf,
    /// Records written.
    pub records: u64,
    /// The SOA serial of the version written.
    pub serial: u32,
}

/// The stamps of the zone files the writers wrote (the last two), by zone:
/// the reloader does not read such a file again.
#[derive(Debug, Default)]
pub(crate) struct Written(Mutex<HashMap<Name, [Option<FileStamp>; 2]>>);

impl Written {
    /// Notes that the writer of `origin` is putting a file with `stamp` in place.
    pub(crate) fn add(&self, origin: &Name, stamp: FileStamp) {
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let last = map.entry(origin.to_lowercase()).or_default();
        *last = [last[1], Some(stamp)];
    }

    /// True when the zone file of `origin` is one its writer wrote.
    pub(crate) fn is_current(&self, origin: &Name, file: &Path) -> bool {
        let Some(now) = FileStamp::of(file) else {
            return false;
        };
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&origin.to_lowercase())
            .is_some_and(|last| last.contains(&Some(now)))
    }
}

/// Writes `zone` as the zone file `path`: to a temporary file in the same
/// folder (with the old file's permissions), synced; then `before_rename`
/// gets the stamp and tag (`config::stamp::source_tag`) the file will have under
/// `path`; then it is renamed over `path` and the folder synced.
pub(crate) fn write_zone_file(
    path: &Path,
    zone: &Zone,
    before_rename: impl FnOnce(FileStamp, Vec<u8>) -> std::io::Result<()>,
) -> std::io::Result<Flushed> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "zone".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.lode-tmp.{}", std::process::id()));
    let origin = zone.origin().to_name();
    let result = (|| {
        let file = File::create(&tmp)?;
        if let Ok(meta) = std::fs::metadata(path) {
            file.set_permissions(meta.permissions())?;
        }
        let mut w = BufWriter::with_capacity(1 << 20, file);
        writeln!(
            w,
            ";; Zone dump (Lode {}), serial {}",
            env!("CARGO_PKG_VERSION"),
            zone.serial()
        )?;
        // The SOA is at the apex, the first name: found at once.
        let soa = zone.records().find(|r| r.rtype == Rtype::SOA);
        let rest = zone.records().filter(|r| r.rtype != Rtype::SOA);
        let records = lode_zonefile::write_zone(&mut w, &origin, soa.into_iter().chain(rest))?;
        writeln!(w, ";; Written {records} records")?;
        w.flush()?;
        w.get_ref().sync_all()?;
        drop(w);
        let stamp = FileStamp::of(&tmp)
            .ok_or_else(|| std::io::Error::other("cannot stat the file just written"))?;
        let abs = std::fs::canonicalize(&dir)?.join(&name);
        let tag = crate::config::stamp::tag_of(&abs, stamp)
            .ok_or_else(|| std::io::Error::other("modification time before 1970"))?;
        before_rename(stamp, tag)?;
        std::fs::rename(&tmp, path)?;
        File::open(&dir)?.sync_all()?;
        Ok(Flushed {
            path: path.to_path_buf(),
            records,
            serial: zone.serial(),
        })
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The first line of a `.flushed` note.
const FLUSHED_MAGIC: &[u8] = b"lode zone file written\n";

/// Records `tags` (`config::stamp::source_tag` of the files written, newest
/// last) in the note `path`, synced: each as a 4-byte length and the tag.
pub(crate) fn write_flushed_tags(path: &Path, tags: &[Vec<u8>]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map_or_else(|| "flushed".into(), |n| n.to_string_lossy().into_owned());
    // Not `with_extension`: the state snapshot's temporary file would have
    // the same name.
    let tmp = path.with_file_name(format!("{name}.tmp.{}", std::process::id()));
    let result = (|| {
        let mut bytes = FLUSHED_MAGIC.to_vec();
        for t in tags {
            bytes.extend_from_slice(&(t.len() as u32).to_le_bytes());
            bytes.extend_from_slice(t);
        }
        let mut f = File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The tags in the note `path` (none when it is absent or unreadable).
pub(crate) fn read_flushed_tags(path: &Path) -> Vec<Vec<u8>> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let Some(mut rest) = bytes.strip_prefix(FLUSHED_MAGIC) else {
        return Vec::new();
    };
    let mut tags = Vec::new();
    while let Some((len, tail)) = rest.split_first_chunk::<4>() {
        let len = u32::from_le_bytes(*len) as usize;
        let Some(tag) = tail.get(..len) else {
            break;
        };
        tags.push(tag.to_vec());
        rest = &tail[len..];
    }
    tags
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_file_loads_back_and_tags_round_trip() {
        let dir = std::env::temp_dir().join(format!("lode-flush-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("example.zone");
        std::fs::write(
            &path,
            "$ORIGIN example.\n$TTL 300\n@ SOA ns hm 7 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n*.w TXT \"x y\"\n",
        )
        .unwrap();
        let origin: Name = "example.".parse().unwrap();
        let spec = crate::config::ZoneSpec {
            name: origin.clone(),
            source: crate::config::ZoneSource::File(path.as_path().into()),
        };
        let loaded = crate::loading::zones::load(&spec).unwrap();
        let mut seen = None;
        let f = write_zone_file(&path, &loaded.zone, |stamp, tag| {
            seen = Some((stamp, tag));
            Ok(())
        })
        .unwrap();
        // The stamp and tag given before the rename are the file's after it.
        let (stamp, tag) = seen.unwrap();
        assert_eq!(FileStamp::of(&path), Some(stamp));
        assert_eq!(crate::config::stamp::source_tag(&path), Some(tag));
        assert_eq!((f.records, f.serial), (4, 7));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with(";; Zone dump (Lode ")
                && text.contains("\n$ORIGIN example.\n@ 300 SOA "),
            "{text}"
        );
        let again = crate::loading::zones::load(&spec).unwrap();
        let a: Vec<_> = loaded.zone.records().collect();
        let b: Vec<_> = again.zone.records().collect();
        assert_eq!(a, b);
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        let note = dir.join("example.flushed");
        assert!(read_flushed_tags(&note).is_empty());
        let tags = vec![b"old".to_vec(), b"tag\0bytes".to_vec()];
        write_flushed_tags(&note, &tags).unwrap();
        assert_eq!(read_flushed_tags(&note), tags);
        std::fs::remove_file(&note).unwrap();
        let w = Written::default();
        assert!(!w.is_current(&origin, &path));
        w.add(&origin, stamp);
        assert!(w.is_current(&"EXAMPLE.".parse().unwrap(), &path));
        // The previous file is still known after one more; not after two.
        let other = FileStamp { size: 1, ..stamp };
        w.add(&origin, other);
        assert!(w.is_current(&origin, &path));
        w.add(&origin, other);
        assert!(!w.is_current(&origin, &path));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
