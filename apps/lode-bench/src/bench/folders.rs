//! The report and scratch folders of a benchmark.

use std::path::PathBuf;

/// A command's result once its scratch folder is removed (when the command
/// made it itself: `temp`).
pub(super) fn scratch_dropped<T, E>(
    temp: bool,
    work: &std::path::Path,
    result: Result<T, E>,
) -> anyhow::Result<T>
where
    anyhow::Error: From<E>,
{
    if temp {
        let _ = std::fs::remove_dir_all(work);
    }
    Ok(result?)
}

/// The report and scratch folders of a benchmark (`--out`, `--work`).
#[derive(clap::Args, Debug)]
pub(crate) struct Folders {
    /// Results folder (default results/COMMAND-[quick-]DATE).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Scratch folder: data sets and the servers' folders (default: a folder under
    /// /var/tmp, removed at the end).
    #[arg(long)]
    work: Option<PathBuf>,
}

impl Folders {
    /// The report folder, the scratch folder (default under /var/tmp: large sets
    /// and a million zone files do not belong in a memory-backed /tmp; made
    /// absolute) and whether it is ours (removed at the end).
    pub(super) fn dirs(&self, kind: &str, quick: bool) -> (PathBuf, PathBuf, bool) {
        let ours = PathBuf::from(format!("/var/tmp/lode-{kind}-{}", std::process::id()));
        let work = Some(self.work.clone().unwrap_or(ours));
        let (out, work_dir, _) = run_dirs(kind, quick, &self.out, &work);
        (out, work_dir, self.work.is_none())
    }
}

/// A comparison's report folder (given, else `results/KIND-[quick-]DATE`),
/// its scratch folder (given, else a temporary one; made absolute) and whether the scratch
/// folder is temporary (removed at the end).
pub(super) fn run_dirs(
    kind: &str,
    quick: bool,
    out: &Option<PathBuf>,
    work: &Option<PathBuf>,
) -> (PathBuf, PathBuf, bool) {
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "undated".into());
    let quick = if quick { "quick-" } else { "" };
    let out = out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(format!("{kind}-{quick}{date}")));
    let temp = work.is_none();
    let work = work.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("lode-{kind}-{}", std::process::id()))
    });
    // Servers run in their own folders: a relative --work would not name their files.
    let work = std::path::absolute(&work).unwrap_or(work);
    (out, work, temp)
}
