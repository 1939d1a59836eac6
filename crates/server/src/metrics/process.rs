//! Process and host figures read from /proc at scrape time, under the
//! standard `process_*` names of Prometheus client libraries.

use super::{Family, Kind, Value};

pub(crate) fn families(out: &mut Vec<Family>) {
    let gauge = |name, help, v| Family::new(name, help, Kind::Gauge).with(&[], v);
    let ticks = 100.0; // USER_HZ on Linux
    if let Some(stat) = self_stat() {
        // Fields after the command's closing parenthesis, from field 3 (state).
        let f: Vec<&str> = stat.split_whitespace().collect();
        let num = |i: usize| f.get(i - 3).and_then(|v| v.parse::<u64>().ok());
        if let (Some(utime), Some(stime)) = (num(14), num(15)) {
            out.push(
                Family::new(
                    "process_cpu_seconds",
                    "User and system CPU time spent, in seconds.",
                    Kind::Counter,
                )
                .with(&[], Value::Float((utime + stime) as f64 / ticks)),
            );
        }
        if let Some(threads) = num(20) {
            out.push(gauge(
                "process_threads",
                "Threads of the process.",
                Value::Int(threads),
            ));
        }
        if let (Some(start), Some(boot)) = (num(22), boot_time()) {
            out.push(gauge(
                "process_start_time_seconds",
                "Start time of the process since the Unix epoch, in seconds.",
                Value::Float(boot as f64 + start as f64 / ticks),
            ));
        }
        if let Some(vsize) = num(23) {
            out.push(gauge(
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                Value::Int(vsize),
            ));
        }
    }
    if let Some(kib) = resident_kib() {
        out.push(gauge(
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            Value::Int(kib * 1024),
        ));
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        out.push(gauge(
            "process_open_fds",
            "Open file descriptors.",
            Value::Int(fds.count() as u64),
        ));
    }
    if let Some(max) = max_fds() {
        out.push(gauge(
            "process_max_fds",
            "Limit on open file descriptors.",
            Value::Int(max),
        ));
    }
    out.push(
        Family::new(
            "lode_build_info",
            "Always 1; the version in a label.",
            Kind::Gauge,
        )
        .with(&[("version", env!("CARGO_PKG_VERSION"))], Value::Int(1)),
    );
}

fn self_stat() -> Option<String> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = s.rfind(')')?;
    Some(s[after + 1..].to_owned())
}

/// The host's boot time (read once: /proc/stat is long on many CPUs).
fn boot_time() -> Option<u64> {
    static BOOT: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *BOOT.get_or_init(|| {
        let s = std::fs::read_to_string("/proc/stat").ok()?;
        s.lines()
            .find_map(|l| l.strip_prefix("btime "))?
            .trim()
            .parse()
            .ok()
    })
}

fn max_fds() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = s.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// RcvbufErrors of UDP over IPv4 and IPv6 for the whole host.
pub(crate) fn udp_receive_buffer_errors() -> Option<u64> {
    let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
    let mut lines = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let names: Vec<&str> = lines.next()?.split_whitespace().collect();
    let values: Vec<&str> = lines.next()?.split_whitespace().collect();
    let i = names.iter().position(|n| *n == "RcvbufErrors")?;
    let mut total: u64 = values.get(i)?.parse().ok()?;
    if let Ok(s6) = std::fs::read_to_string("/proc/net/snmp6") {
        if let Some(v) = s6
            .lines()
            .find_map(|l| l.strip_prefix("Udp6RcvbufErrors"))
            .and_then(|v| v.trim().parse::<u64>().ok())
        {
            total += v;
        }
    }
    Some(total)
}

/// The process's resident memory in KiB (VmRSS), if known.
pub fn resident_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
