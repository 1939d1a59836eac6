//! What the kernel says about processes and the machine: CPU time, memory, CPU
//! steal and other load, UDP receive-buffer errors (all from /proc).

use std::path::Path;

/// Clock ticks per second of /proc times (USER_HZ, 100 on Linux).
pub const TICKS: f64 = 100.0;

/// Machine-wide CPU counters (/proc/stat first line), in ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTimes {
    /// Ticks spent by processes (user, nice, system); interrupts are left out because
    /// loopback traffic of the test itself is processed there.
    pub busy: u64,
    /// Ticks stolen by the hypervisor.
    pub steal: u64,
    /// All ticks (busy, idle, iowait, steal).
    pub total: u64,
}

/// The tick counters of /proc/stat's line for `cpu` (`"cpu"`: the
/// machine, `"cpu0"`: CPU 0), in the kernel's order (user nice system
/// idle iowait irq softirq steal …), as a getter that reads a missing
/// field as 0.
pub fn stat_line(text: &str, cpu: &str) -> Option<impl Fn(usize) -> u64> {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(cpu))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    Some(move |i: usize| v.get(i).copied().unwrap_or(0))
}

/// Parses the `cpu ` line of /proc/stat.
pub fn parse_proc_stat(text: &str) -> Option<CpuTimes> {
    let get = stat_line(text, "cpu")?;
    // user nice system idle iowait irq softirq steal (guest is inside user).
    let busy = get(0) + get(1) + get(2);
    let steal = get(7);
    Some(CpuTimes {
        busy,
        steal,
        total: busy + get(3) + get(4) + get(5) + get(6) + steal,
    })
}

/// Reads /proc/stat.
pub fn cpu_times() -> CpuTimes {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|t| parse_proc_stat(&t))
        .unwrap_or_default()
}

/// Parses `RcvbufErrors` of the `Udp:` lines of /proc/net/snmp.
pub fn parse_rcvbuf_errors(text: &str) -> Option<u64> {
    let mut lines = text.lines().filter(|l| l.starts_with("Udp:"));
    let header = lines.next()?;
    let values = lines.next()?;
    let i = header
        .split_whitespace()
        .position(|f| f == "RcvbufErrors")?;
    values.split_whitespace().nth(i)?.parse().ok()
}

/// UDP receive-buffer errors so far (0 if unreadable).
pub fn rcvbuf_errors() -> u64 {
    std::fs::read_to_string("/proc/net/snmp")
        .ok()
        .and_then(|t| parse_rcvbuf_errors(&t))
        .unwrap_or(0)
}

/// Parses utime + stime (ticks) and the parent PID from /proc/PID/stat text.
pub fn parse_pid_stat(text: &str) -> Option<(u64, u32)> {
    // The command name is in parentheses and may contain spaces: split after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields after the name: state(0) ppid(1) … utime(11) stime(12).
    let ppid = f.get(1)?.parse().ok()?;
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((utime + stime, ppid))
}

/// CPU ticks (utime + stime) of one process, 0 if it is gone.
pub fn pid_cpu(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|t| parse_pid_stat(&t))
        .map_or(0, |(t, _)| t)
}

/// The `cpuN` line of /proc/stat: idle + iowait of CPU `cpu`, in ticks.
///
/// A CPU's busy time is taken as the wall time less this: a tickless kernel
/// measures idle time exactly (from the idle entry and exit), while its busy
/// fields (user, system, softirq, …) count the ticks that landed in them — and
/// a CPU woken for each packet at a low rate is busy in bursts shorter than a
/// tick, which the ticks mostly miss.
pub fn parse_cpu_idle(stat: &str, cpu: usize) -> Option<u64> {
    let get = stat_line(stat, &format!("cpu{cpu}"))?;
    Some(get(3) + get(4))
}

/// CPU `cpu`'s idle time so far, nanoseconds (a tick's resolution).
pub fn cpu_idle_ns(cpu: usize) -> u64 {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|t| parse_cpu_idle(&t, cpu))
        .unwrap_or(0)
        * (1e9 / TICKS) as u64
}

/// Busy nanoseconds of a CPU over `wall_ns` in which its idle time grew by `idle_ns`.
pub fn busy_ns(wall_ns: f64, idle_ns: u64) -> f64 {
    (wall_ns - idle_ns as f64).max(0.0)
}

/// Parses the first field of /proc/PID/task/TID/schedstat: nanoseconds on the CPU.
pub fn parse_schedstat(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// Parses /proc/PID/task/TID/schedstat whole: nanoseconds on the CPU and the
/// times the thread was put on one (its wake-ups, for a thread that sleeps
/// between bursts).
pub fn parse_schedstat_runs(text: &str) -> Option<(u64, u64)> {
    let mut f = text.split_whitespace();
    let ns = f.next()?.parse().ok()?;
    let runs = f.nth(1)?.parse().ok()?;
    Some((ns, runs))
}

/// CPU nanoseconds and times put on a CPU, summed over the threads of `pids`
/// (threads alive now, as [`cpu_ns`]).
pub fn sched_of(pids: &[u32]) -> (u64, u64) {
    pids.iter()
        .flat_map(|&p| thread_schedstats(p))
        .filter_map(|t| parse_schedstat_runs(&t))
        .fold((0, 0), |(ns, runs), (n, r)| (ns + n, runs + r))
}

/// The schedstat text of every thread of `pid` (none where /proc has no such process).
fn thread_schedstats(pid: u32) -> impl Iterator<Item = String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("schedstat")).ok())
}

/// CPU nanoseconds of one process: its threads' schedstat summed (precise, where
/// utime+stime count 10 ms ticks), or its ticks when schedstat is unreadable.
pub fn pid_cpu_ns(pid: u32) -> u64 {
    let threads: Vec<u64> = thread_schedstats(pid)
        .filter_map(|t| parse_schedstat(&t))
        .collect();
    if threads.is_empty() {
        pid_cpu(pid) * (1e9 / TICKS) as u64
    } else {
        threads.iter().sum()
    }
}

/// CPU nanoseconds of a set of processes (threads alive now; a thread that ended is
/// not counted, so measure over periods in which the server starts none).
pub fn cpu_ns(pids: &[u32]) -> u64 {
    pids.iter().map(|&p| pid_cpu_ns(p)).sum()
}

/// `pid` and all its descendants (from the parent PIDs in /proc).
pub fn process_tree(pid: u32) -> Vec<u32> {
    lode_peers::process_tree(pid)
}

/// Reads a `Key:   123 kB` value (in bytes) from /proc status-like text.
pub fn parse_kb(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line[key.len()..]
        .trim_start_matches(':')
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Memory of a set of processes, bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Memory {
    /// Resident set sizes summed (counts shared pages once per process).
    pub rss: u64,
    /// Proportional set sizes summed (shared pages split between sharers).
    pub pss: u64,
    /// Processes counted.
    pub processes: usize,
}

impl Memory {
    /// The figure used per record: RSS for one process, PSS summed for several (NSD forks).
    pub fn resident(&self) -> u64 {
        if self.processes > 1 {
            self.pss
        } else {
            self.rss
        }
    }
}

/// RSS and PSS summed over `pids`.
pub fn memory(pids: &[u32]) -> Memory {
    let mut m = Memory::default();
    for pid in pids {
        let proc_dir = Path::new("/proc").join(pid.to_string());
        let rss = std::fs::read_to_string(proc_dir.join("status"))
            .ok()
            .and_then(|t| parse_kb(&t, "VmRSS"));
        let pss = std::fs::read_to_string(proc_dir.join("smaps_rollup"))
            .ok()
            .and_then(|t| parse_kb(&t, "Pss"));
        if let Some(rss) = rss {
            m.rss += rss;
            m.pss += pss.unwrap_or(rss);
            m.processes += 1;
        }
    }
    m
}

/// Waits until the threads of `pid` and its children use under `share`
/// of a CPU for `quiet` in a row, in half seconds (at most `limit`, or
/// until `stop` says so): whether they did. A server still busy with its
/// own work (a compaction after an update stream, a huge-page collapse)
/// would otherwise count it into the CPU per answer measured next.
pub fn wait_idle(
    pid: u32,
    (share, quiet): (f64, std::time::Duration),
    limit: std::time::Duration,
    stop: &dyn Fn() -> bool,
) -> bool {
    let step = std::time::Duration::from_millis(500);
    let most = (step.as_nanos() as f64 * share) as u64;
    let deadline = std::time::Instant::now() + limit;
    let mut quiet_for = std::time::Duration::ZERO;
    let mut last = cpu_ns(&process_tree(pid));
    while std::time::Instant::now() < deadline && !stop() {
        std::thread::sleep(step);
        let now = cpu_ns(&process_tree(pid));
        quiet_for = if now.saturating_sub(last) < most {
            quiet_for + step
        } else {
            std::time::Duration::ZERO
        };
        if quiet_for >= quiet {
            return true;
        }
        last = now;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_parsers() {
        let stat = "cpu  100 5 50 1000 20 3 2 7 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
        assert_eq!(
            parse_proc_stat(stat),
            Some(CpuTimes {
                busy: 155,
                steal: 7,
                total: 1187
            })
        );
        let snmp = "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\n\
                    Udp: 10 2 3 9 42 0\nUdpLite: InDatagrams\nUdpLite: 0\n";
        assert_eq!(parse_rcvbuf_errors(snmp), Some(42));
        let pid = "1234 (nsd: xfrd (x)) S 1200 1234 1 0 -1 4194560 10 0 0 0 25 17 0 0 20 0 1 0";
        assert_eq!(parse_pid_stat(pid), Some((42, 1200)));
        assert_eq!(
            parse_kb("Name: x\nVmRSS:\t  2048 kB\n", "VmRSS"),
            Some(2 << 20)
        );
        assert_eq!(parse_kb("Pss:  10 kB\n", "Pss"), Some(10240));
        assert_eq!(parse_kb("", "Pss"), None);
        assert_eq!(parse_schedstat("123456789 2000 17\n"), Some(123_456_789));
        assert_eq!(parse_schedstat(""), None);
        assert_eq!(
            parse_schedstat_runs("123456789 2000 17\n"),
            Some((123_456_789, 17))
        );
        assert_eq!(parse_schedstat_runs("1 2"), None);
    }

    #[test]
    fn a_cpus_busy_time_is_the_wall_less_idle() {
        let stat =
            "cpu  10 0 10 100 0 0 0 0 0 0\ncpu0 1 2 3 1000 5 6 7 8 0 0\ncpu1 9 9 9 9 9 9 9 9 0 0\n";
        assert_eq!(parse_cpu_idle(stat, 0), Some(1000 + 5));
        assert_eq!(parse_cpu_idle(stat, 1), Some(9 + 9));
        assert_eq!(parse_cpu_idle("cpu 1 2 3\n", 0), None);
        assert_eq!(busy_ns(1e9, 250_000_000), 750_000_000.0);
        assert_eq!(busy_ns(5e6, 10_000_000), 0.0);
    }

    #[test]
    fn own_process() {
        let me = std::process::id();
        let m = memory(&[me]);
        assert_eq!(m.processes, 1);
        assert!(m.rss > 0 && m.pss > 0);
        assert_eq!(m.resident(), m.rss);
        assert!(process_tree(me).contains(&me));
        assert!(cpu_times().total > 0);
        assert!(cpu_ns(&[me]) > 0);
        let (ns, runs) = sched_of(&[me]);
        assert!(ns > 0 && runs > 0, "{ns} {runs}");
        // Some work, then this thread's precise counter has moved (the
        // process's sum is not monotonic here: other tests' threads end).
        let thread = || {
            std::fs::read_to_string("/proc/thread-self/schedstat")
                .ok()
                .and_then(|t| parse_schedstat(&t))
                .unwrap_or(0)
        };
        // The counter moves at the scheduler's ticks and switches: work
        // and yield until it has (5 s at most).
        let before = thread();
        let started = std::time::Instant::now();
        let mut moved = false;
        while !moved && started.elapsed() < std::time::Duration::from_secs(5) {
            let mut x = 0u64;
            for i in 0..1_000_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            std::thread::yield_now();
            moved = thread() > before;
        }
        assert!(moved, "this thread's CPU time did not move in 5 s");
    }
}
