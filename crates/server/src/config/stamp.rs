//! What identifies a version of a zone file without reading it: its stamp
//! (modification time and size) and the tag a state snapshot records.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

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

/// The identity of a zone file: absolute path, size and modification time.
pub fn source_tag(zone_file: &Path) -> Option<Vec<u8>> {
    let stamp = FileStamp::of(zone_file)?;
    let abs = lode_zonefile::canonical(zone_file).ok()?;
    tag_of(&abs, stamp)
}

/// The tag [`source_tag`] gives a file at the absolute path `abs` with `stamp`.
pub(crate) fn tag_of(abs: &Path, stamp: FileStamp) -> Option<Vec<u8>> {
    let mtime = stamp.modified.duration_since(UNIX_EPOCH).ok()?;
    let mut tag = abs.to_string_lossy().into_owned().into_bytes();
    tag.push(0);
    tag.extend_from_slice(&stamp.size.to_le_bytes());
    tag.extend_from_slice(&mtime.as_nanos().to_le_bytes());
    Some(tag)
}
