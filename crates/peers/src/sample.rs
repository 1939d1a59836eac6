//! Resource use of a running server, read from `/proc/PID`.

use std::time::Duration;

/// One reading of a process's resources.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// User plus system CPU time so far.
    pub cpu: Duration,
    /// Resident set size in bytes.
    pub rss: u64,
    /// Proportional set size in bytes (`smaps_rollup`; None where the
    /// kernel has none or it is not readable).
    pub pss: Option<u64>,
    /// Threads.
    pub threads: u32,
    /// Open file descriptors.
    pub fds: u32,
}

impl Sample {
    /// Reads `/proc/pid` of any process (e.g. one a server forked, of
    /// [`crate::Server::pids`]); None when it is gone.
    pub fn of(pid: u32) -> Option<Sample> {
        read(pid)
    }
}

/// The clock ticks of `/proc/PID/stat` (USER_HZ, 100 on Linux' ABI).
const TICKS_PER_SECOND: u64 = 100;

/// Reads `/proc/pid`; None when the process is gone.
pub(crate) fn read(pid: u32) -> Option<Sample> {
    let dir = format!("/proc/{pid}");
    let stat = std::fs::read_to_string(format!("{dir}/stat")).ok()?;
    let status = std::fs::read_to_string(format!("{dir}/status")).ok()?;
    let pss = std::fs::read_to_string(format!("{dir}/smaps_rollup"))
        .ok()
        .and_then(|t| kib_field(&t, "Pss:"));
    let fds = std::fs::read_dir(format!("{dir}/fd")).map_or(0, |d| d.count() as u32);
    Some(Sample {
        cpu: cpu_time(&stat)?,
        rss: kib_field(&status, "VmRSS:").unwrap_or(0),
        pss,
        threads: kib_field(&status, "Threads:").unwrap_or(0) as u32,
        fds,
    })
}

/// The parent PID of a `/proc/PID/stat` line (field 4).
pub(crate) fn parent(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// utime + stime of a `/proc/PID/stat` line (fields 14 and 15, counted
/// after the command name, which may hold spaces and parentheses).
fn cpu_time(stat: &str) -> Option<Duration> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state).
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis(
        (utime + stime) * 1000 / TICKS_PER_SECOND,
    ))
}

/// The number after `name` on its line; `kB` values in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let mut words = line[name.len()..].split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    Some(if words.next() == Some("kB") {
        n * 1024
    } else {
        n
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_and_status() {
        let stat = "42 (kn ot) S 1 42 42 0 -1 4194560 1 0 0 0 250 50 0 0 20 0 3 0 1 2 3";
        assert_eq!(cpu_time(stat), Some(Duration::from_secs(3)));
        assert_eq!(parent(stat), Some(1));
        let status = "Name:\tknotd\nVmRSS:\t  2048 kB\nThreads:\t3\n";
        assert_eq!(kib_field(status, "VmRSS:"), Some(2048 * 1024));
        assert_eq!(kib_field(status, "Threads:"), Some(3));
        assert_eq!(kib_field(status, "Pss:"), None);
    }

    #[test]
    fn reads_this_process() {
        let s = read(std::process::id()).expect("our own /proc");
        assert!(s.rss > 0 && s.threads >= 1 && s.fds >= 1, "{s:?}");
    }
}
