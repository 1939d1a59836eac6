//! A CPU quota for the server under test, so that a tester on one CPU can
//! offer twice a server's zero-loss rate on a 2-core machine: the server's
//! process is moved into a cgroup of its own limited to `percent` % of one
//! CPU (CFS bandwidth, 10 ms period). cgroup v2 (`cpu.max`) or v1
//! (`cpu.cfs_quota_us`), whichever is mounted; removed when dropped.

use std::path::PathBuf;

/// One cgroup with a CPU limit.
#[derive(Debug)]
pub(crate) struct CpuQuota {
    dir: PathBuf,
}

/// CFS period of the quota, microseconds (short: throttling stays far below
/// the tester's reply timeout).
const PERIOD_US: u64 = 10_000;

impl CpuQuota {
    /// Creates the cgroup `name` limited to `percent` % of one CPU.
    pub(crate) fn new(name: &str, percent: u32) -> Result<CpuQuota, String> {
        let quota = PERIOD_US * u64::from(percent) / 100;
        let v2_root = PathBuf::from("/sys/fs/cgroup");
        let (dir, v2) = if v2_root.join("cgroup.controllers").exists() {
            (v2_root.join(name), true)
        } else {
            (v2_root.join("cpu").join(name), false)
        };
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let q = CpuQuota { dir };
        if v2 {
            q.write("cpu.max", &format!("{quota} {PERIOD_US}"))?;
        } else {
            q.write("cpu.cfs_period_us", &PERIOD_US.to_string())?;
            q.write("cpu.cfs_quota_us", &quota.to_string())?;
        }
        Ok(q)
    }

    /// Moves process `pid` (all its threads) and the processes it has
    /// forked (NSD serves from children) into the cgroup.
    pub(crate) fn add(&self, pid: u32) -> Result<(), String> {
        let mut todo = vec![pid];
        while let Some(p) = todo.pop() {
            self.write("cgroup.procs", &p.to_string())?;
            todo.extend(children(p));
        }
        Ok(())
    }

    fn write(&self, file: &str, value: &str) -> Result<(), String> {
        let path = self.dir.join(file);
        std::fs::write(&path, value).map_err(|e| format!("{} = {value}: {e}", path.display()))
    }
}

impl Drop for CpuQuota {
    fn drop(&mut self) {
        // Only an empty cgroup can go: the servers have exited by now.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The child processes of `pid` (from every thread's `children` list).
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|t| t.ok())
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|c| c.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}
