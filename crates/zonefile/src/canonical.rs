//! Absolute paths of zone files with symbolic links resolved, each directory
//! resolved once.
//!
//! `std::fs::canonicalize` (glibc's `realpath`) asks the kernel about every
//! component of the path: five `readlink` calls for
//! `/var/tmp/zones/z0.zone`. A server with 10^6 zone files in one folder
//! paid that twice per zone at every start (the snapshot's source tag and the
//! reader's `$INCLUDE` loop check): ~10^7 system calls. Here the folder is
//! resolved once and the file checked with one `lstat`.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

fn dirs() -> &'static Mutex<HashMap<PathBuf, PathBuf>> {
    static DIRS: OnceLock<Mutex<HashMap<PathBuf, PathBuf>>> = OnceLock::new();
    DIRS.get_or_init(Default::default)
}

/// What `std::fs::canonicalize(path)` gives, with the folder of an absolute
/// path resolved once per process (until [`forget_folders`]); a file that is
/// itself a symbolic link, and a relative path, are resolved whole.
pub fn canonical(path: &Path) -> io::Result<PathBuf> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return std::fs::canonicalize(path);
    };
    if !dir.is_absolute() || std::fs::symlink_metadata(path)?.file_type().is_symlink() {
        return std::fs::canonicalize(path);
    }
    let known = dirs().lock().ok().and_then(|m| m.get(dir).cloned());
    let resolved = match known {
        Some(d) => d,
        None => {
            let d = std::fs::canonicalize(dir)?;
            if let Ok(mut m) = dirs().lock() {
                m.insert(dir.to_path_buf(), d.clone());
            }
            d
        }
    };
    Ok(resolved.join(name))
}

/// Forgets the folders resolved so far (a reload: an operator may have
/// moved a folder or a link since).
pub fn forget_folders() {
    if let Ok(mut m) = dirs().lock() {
        m.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_canonicalize_through_linked_folders_and_files() {
        let base = std::env::temp_dir().join(format!("lode-canonical-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let real = base.join("real");
        std::fs::create_dir_all(&real).unwrap();
        std::fs::write(real.join("a.zone"), "x").unwrap();
        std::fs::write(real.join("b.zone"), "y").unwrap();
        std::os::unix::fs::symlink(&real, base.join("link")).unwrap();
        std::os::unix::fs::symlink(real.join("b.zone"), real.join("c.zone")).unwrap();
        for p in [
            real.join("a.zone"),
            base.join("link/a.zone"),
            base.join("link/./a.zone"),
            base.join("link/../real/a.zone"),
            base.join("link/c.zone"),
            real.join("c.zone"),
        ] {
            assert_eq!(
                canonical(&p).unwrap(),
                std::fs::canonicalize(&p).unwrap(),
                "{p:?}"
            );
            // Again, from the folder resolved before.
            assert_eq!(
                canonical(&p).unwrap(),
                std::fs::canonicalize(&p).unwrap(),
                "{p:?}"
            );
        }
        assert!(canonical(&base.join("link/missing.zone")).is_err());
        // A folder moved after it was resolved: seen again once forgotten.
        std::fs::remove_file(base.join("link")).unwrap();
        let other = base.join("other");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("a.zone"), "z").unwrap();
        std::os::unix::fs::symlink(&other, base.join("link")).unwrap();
        forget_folders();
        assert_eq!(
            canonical(&base.join("link/a.zone")).unwrap(),
            std::fs::canonicalize(other.join("a.zone")).unwrap()
        );
        let _ = std::fs::remove_dir_all(&base);
    }
}
