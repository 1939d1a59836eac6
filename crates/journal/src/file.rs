//! The journal's file operations behind a small trait (so tests can make
//! them fail), and the atomic replacement of a file.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The operations the journal does on its open file (see
/// [`crate::Journal::open_on`]).
pub trait Backing: Send + Sync + std::fmt::Debug {
    /// Writes all of `buf` at `offset` (pwrite).
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Reads exactly `buf.len()` bytes at `offset` (pread).
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// fdatasync.
    fn sync_data(&self) -> io::Result<()>;
    /// fsync.
    fn sync_all(&self) -> io::Result<()>;
    /// ftruncate.
    fn set_len(&self, len: u64) -> io::Result<()>;
}

impl Backing for File {
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        FileExt::write_all_at(self, buf, offset)
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        FileExt::read_exact_at(self, buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        File::sync_data(self)
    }
    fn sync_all(&self) -> io::Result<()> {
        File::sync_all(self)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        File::set_len(self, len)
    }
}

/// Turns an opened file into the journal's [`Backing`] (tests wrap it).
pub type Wrap = Arc<dyn Fn(File) -> Box<dyn Backing> + Send + Sync>;

/// The plain wrapping: the file itself.
pub(crate) fn plain() -> Wrap {
    Arc::new(|f| Box::new(f))
}

/// The folder a file is in (`.` for a bare file name).
pub(crate) fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// fsync of a folder, so a rename or a new entry in it is durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Creates `dir` and any missing folders above it, and syncs each folder that
/// got a new entry, so the new folders survive a crash.
pub(crate) fn create_dirs(dir: &Path) -> io::Result<()> {
    let mut created = Vec::new();
    let mut d = dir;
    while !d.exists() {
        created.push(d);
        d = parent(d);
    }
    std::fs::create_dir_all(dir)?;
    sync_dir(d)?;
    for c in created.iter().skip(1) {
        sync_dir(c)?;
    }
    Ok(())
}

/// Opens an existing journal file for reading and writing.
pub(crate) fn open_rw(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).open(path)
}

/// How [`replace`] failed.
#[derive(Debug)]
pub(crate) enum ReplaceError {
    /// Before the rename: the old file is untouched.
    Before(io::Error),
    /// After the rename: the new file is in place but the folder could not be
    /// synced, so a crash may still bring the old one back. Its handle is given.
    After(File, io::Error),
}

/// Writes `parts` to a temporary file beside `path`, syncs it, renames it over
/// `path` and syncs the folder. Returns the new file's handle (opened for
/// reading and writing).
pub(crate) fn replace(path: &Path, parts: &[&[u8]]) -> Result<File, ReplaceError> {
    let tmp = temp_name(path);
    let written = (|| {
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        for p in parts {
            f.write_all(p)?;
        }
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        Ok(f)
    })();
    let f = match written {
        Ok(f) => f,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(ReplaceError::Before(e));
        }
    };
    match sync_dir(parent(path)) {
        Ok(()) => Ok(f),
        Err(e) => Err(ReplaceError::After(f, e)),
    }
}

/// `<name>.tmp.<pid>` beside `path`.
fn temp_name(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp.{}", std::process::id()));
    path.with_file_name(name)
}

/// Whether a file named `name` is a `<name>.tmp.<pid>` file that a process
/// other than this one left (a crash in [`replace`] or in a snapshot's
/// write); this process's own are writes under way.
pub(crate) fn is_stale_temp(name: &std::ffi::OsStr) -> bool {
    let Some(pid) = name
        .to_str()
        .and_then(|n| n.rsplit_once(".tmp."))
        .map(|(_, p)| p)
    else {
        return false;
    };
    !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && pid != std::process::id().to_string()
}

/// Keeps the file at `path` aside as `<name>.damaged.<unix-time>` (a hard link,
/// or a synced copy where links are not possible), without removing it.
pub(crate) fn keep_aside(path: &Path) -> io::Result<PathBuf> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let base = path.file_name().unwrap_or_default().to_string_lossy();
    let mut n = 0u32;
    let aside = loop {
        let name = match n {
            0 => format!("{base}.damaged.{secs}"),
            _ => format!("{base}.damaged.{secs}.{n}"),
        };
        let candidate = path.with_file_name(name);
        if !candidate.exists() {
            break candidate;
        }
        n += 1;
    };
    if std::fs::hard_link(path, &aside).is_err() {
        std::fs::copy(path, &aside)?;
        File::open(&aside)?.sync_all()?;
    }
    sync_dir(parent(path))?;
    Ok(aside)
}
