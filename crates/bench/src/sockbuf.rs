//! One socket buffer size for every server of a run: the kernel's defaults
//! (`net.core.rmem_default`, `wmem_default`) set to it, its maxima raised to it
//! if lower, through /proc/sys — and the previous values written back when the
//! guard is dropped (end, error), or by [`restore`] from a signal handler (Ctrl-C).
//!
//! ```text
//!  SysctlGuard::apply(/proc/sys, plan(size)) ── old values kept ──▶ run ──▶ drop: written back
//!                                                     └── restore(&saved) on SIGINT/SIGTERM
//! ```
//!
//! A server that asks for no size gets `rmem_default` as it is; one that asks
//! (`SO_RCVBUF`) gets twice what it asked: the kernel doubles a request, not the
//! default. Sizes here are what the kernel accounts (`ss -m` `rb`/`tb`).
//!
//! Two runs on one machine must not both change them: the second would keep the
//! first's values as "previous" and write them back after the first restored the
//! real ones, leaving the machine changed. A guard holds an exclusive lock
//! ([`lock_path`]) for as long as it lives; a second `apply` fails, naming the
//! process that holds it.

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// The default size: 4 MiB.
pub const DEFAULT: u64 = 4 << 20;

/// The writes that give every socket `size` bytes of receive and send buffer:
/// the defaults set to it, the maxima raised to it when `current` (name under
/// /proc/sys, value) shows them lower.
pub fn plan(size: u64, current: &[(String, Option<u64>)]) -> Vec<(&'static str, u64)> {
    let now = |p: &str| {
        current
            .iter()
            .find(|(k, _)| k == p || *k == crate::provenance::dotted(p))
            .and_then(|(_, v)| *v)
    };
    let mut v = vec![
        ("net/core/rmem_default", size),
        ("net/core/wmem_default", size),
    ];
    for max in ["net/core/rmem_max", "net/core/wmem_max"] {
        if now(max).is_none_or(|m| m < size) {
            v.push((max, size));
        }
    }
    v
}

/// Values to write back: file and its previous text.
pub type Saved = Arc<Mutex<Vec<(PathBuf, String)>>>;

/// Sysctls changed for a run; written back on drop.
#[derive(Debug)]
pub struct SysctlGuard {
    saved: Saved,
    /// Held locked until the values are written back (dropped after them).
    _lock: File,
}

/// The lock that one run at a time holds while it has sysctls under `root`
/// changed: `/run/lock/lode-bench-sysctl.lock` for the real `/proc/sys`, a file
/// in `root` otherwise (tests).
pub fn lock_path(root: &Path) -> PathBuf {
    if root == Path::new("/proc/sys") {
        PathBuf::from("/run/lock/lode-bench-sysctl.lock")
    } else {
        root.join("lode-bench-sysctl.lock")
    }
}

/// Why sysctls were not changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SysctlError {
    /// Another run holds the lock: changing them now would spoil both runs.
    Busy(String),
    /// A file could not be read or written (not root, read-only /proc/sys).
    Io(String),
}

impl std::fmt::Display for SysctlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SysctlError::Busy(s) | SysctlError::Io(s) => f.write_str(s),
        }
    }
}

/// Takes the lock of `root`'s sysctls, writing this process's ID in it; fails
/// when another guard (in any process) holds it.
fn lock(root: &Path) -> Result<File, SysctlError> {
    let io = |e: std::io::Error| SysctlError::Io(format!("{}: {e}", lock_path(root).display()));
    let path = lock_path(root);
    let mut f = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io)?;
    match f.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = f.read_to_string(&mut holder);
            return Err(SysctlError::Busy(format!(
                "another run (process {}) has the socket-buffer sysctls changed and will \
                 write them back when it ends; run one measurement at a time (lock {})",
                holder.trim(),
                path.display()
            )));
        }
        Err(TryLockError::Error(e)) => return Err(io(e)),
    }
    let pid = std::process::id().to_string();
    f.set_len(0)
        .and_then(|()| f.rewind())
        .and_then(|()| f.write_all(pid.as_bytes()))
        .map_err(io)?;
    Ok(f)
}

impl SysctlGuard {
    /// Writes each `(path under root, value)`, keeping the previous values. On a
    /// failure (not root, read-only /proc/sys, another run holding the lock)
    /// what was written is restored and the error returned.
    pub fn apply(root: &Path, writes: &[(&str, u64)]) -> Result<SysctlGuard, SysctlError> {
        let guard = SysctlGuard {
            saved: Arc::new(Mutex::new(Vec::new())),
            _lock: lock(root)?,
        };
        for (path, value) in writes {
            let file = root.join(path);
            let io = |e: std::io::Error| SysctlError::Io(format!("{}: {e}", file.display()));
            let old = std::fs::read_to_string(&file).map_err(io)?;
            std::fs::write(&file, format!("{value}\n")).map_err(io)?;
            guard
                .saved
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((file, old));
        }
        Ok(guard)
    }

    /// The values to write back, for a signal handler ([`restore`]).
    pub fn saved(&self) -> Saved {
        self.saved.clone()
    }
}

/// Writes the saved values back (latest change first), once: later calls find
/// nothing left. Returns the errors.
pub fn restore(saved: &Saved) -> Vec<String> {
    let list = std::mem::take(&mut *saved.lock().unwrap_or_else(PoisonError::into_inner));
    list.into_iter()
        .rev()
        .filter_map(|(file, old)| {
            std::fs::write(&file, &old)
                .err()
                .map(|e| format!("{}: {e}", file.display()))
        })
        .collect()
}

impl Drop for SysctlGuard {
    fn drop(&mut self) {
        for e in restore(&self.saved) {
            crate::compare::say(&format!("restoring a sysctl: {e}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_proc(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("lode-bench-sysctl-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("net/core")).expect("dir");
        for (f, v) in [
            ("rmem_default", "212992\n"),
            ("wmem_default", "212992\n"),
            ("rmem_max", "8388608\n"),
            ("wmem_max", "212992\n"),
        ] {
            std::fs::write(dir.join("net/core").join(f), v).expect("write");
        }
        dir
    }

    fn read(dir: &Path, f: &str) -> String {
        std::fs::read_to_string(dir.join("net/core").join(f)).expect("read")
    }

    #[test]
    fn plan_raises_maxima_only_when_lower() {
        let dir = fake_proc("plan");
        let now = crate::provenance::read_sysctls(&dir);
        let p = plan(DEFAULT, &now);
        assert_eq!(
            p,
            [
                ("net/core/rmem_default", DEFAULT),
                ("net/core/wmem_default", DEFAULT),
                ("net/core/wmem_max", DEFAULT),
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The guard writes the new values and puts the old ones back on drop; a
    /// restore from a signal handler first leaves the drop nothing to do.
    #[test]
    fn guard_restores_on_drop_and_once() {
        let dir = fake_proc("guard");
        let now = crate::provenance::read_sysctls(&dir);
        {
            let _g = SysctlGuard::apply(&dir, &plan(1 << 20, &now)).expect("apply");
            assert_eq!(read(&dir, "rmem_default"), "1048576\n");
            assert_eq!(read(&dir, "wmem_max"), "1048576\n");
            assert_eq!(read(&dir, "rmem_max"), "8388608\n", "not lowered");
        }
        assert_eq!(read(&dir, "rmem_default"), "212992\n");
        assert_eq!(read(&dir, "wmem_default"), "212992\n");
        assert_eq!(read(&dir, "wmem_max"), "212992\n");

        let g = SysctlGuard::apply(&dir, &[("net/core/rmem_default", 5)]).expect("apply");
        let saved = g.saved();
        assert!(restore(&saved).is_empty());
        assert_eq!(read(&dir, "rmem_default"), "212992\n");
        std::fs::write(dir.join("net/core/rmem_default"), "7\n").expect("write");
        drop(g);
        assert_eq!(read(&dir, "rmem_default"), "7\n", "restored once only");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// While one guard lives, a second (as another run would take) fails and
    /// names the holder; once the first is dropped, the lock is free again.
    #[test]
    fn one_guard_at_a_time() {
        let dir = fake_proc("lock");
        let g = SysctlGuard::apply(&dir, &[("net/core/rmem_default", 5)]).expect("first");
        let e = SysctlGuard::apply(&dir, &[("net/core/rmem_default", 6)]).expect_err("second");
        assert!(matches!(e, SysctlError::Busy(_)), "{e}");
        let e = e.to_string();
        assert!(e.contains(&std::process::id().to_string()), "{e}");
        assert_eq!(
            read(&dir, "rmem_default"),
            "5\n",
            "the second changed nothing"
        );
        drop(g);
        assert_eq!(read(&dir, "rmem_default"), "212992\n");
        let g = SysctlGuard::apply(&dir, &[("net/core/rmem_default", 7)]).expect("free again");
        drop(g);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A sysctl that cannot be read fails the whole change, and what was
    /// written before it is put back.
    #[test]
    fn a_failure_undoes_what_was_written() {
        let dir = fake_proc("fail");
        let e = SysctlGuard::apply(
            &dir,
            &[("net/core/rmem_default", 99), ("net/core/missing", 1)],
        )
        .expect_err("missing file")
        .to_string();
        assert!(e.contains("missing"), "{e}");
        assert_eq!(read(&dir, "rmem_default"), "212992\n");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
