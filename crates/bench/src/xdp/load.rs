//! The loaders, run in the client namespace on CPU 1 with a time limit:
//! `kxdpgun` (Knot's AF_XDP query generator) and `dnsperf` (kernel UDP
//! sockets); what they print, parsed; CPU 0's busy time read around them.
//!
//! ```text
//!  /proc/stat cpu0, server tasks ─┐                                 ┌─ /proc/stat cpu0, server tasks
//!                                 └─ kxdpgun -t S -Q R | dnsperf -l S -Q R ─┘   ⇒ busy ns ÷ answers
//! ```

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// The two loaders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// kxdpgun: AF_XDP from the client's end of the pair.
    Kxdpgun,
    /// dnsperf: UDP sockets of the client namespace's kernel.
    Dnsperf,
}

impl Tool {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Kxdpgun => "kxdpgun",
            Tool::Dnsperf => "dnsperf",
        }
    }
}

/// What a loader reported.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Outcome {
    /// Queries sent.
    pub sent: u64,
    /// Answers received.
    pub answers: u64,
    /// Seconds of sending.
    pub secs: f64,
}

impl Outcome {
    /// Answers per second of sending.
    pub fn answers_per_sec(&self) -> f64 {
        self.answers as f64 / self.secs.max(1e-9)
    }
    /// Queries sent per second.
    pub fn sent_per_sec(&self) -> f64 {
        self.sent as f64 / self.secs.max(1e-9)
    }
}

/// The first number after `key` on a line starting (after blanks) with it.
fn number_after(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.trim_start().strip_prefix(key)?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// Parses kxdpgun's summary (`total queries: N (… pps)`, `total replies: N …`).
pub fn parse_kxdpgun(text: &str, secs: f64) -> Option<Outcome> {
    Some(Outcome {
        sent: number_after(text, "total queries:")?,
        answers: number_after(text, "total replies:").unwrap_or(0),
        secs,
    })
}

/// Parses dnsperf's statistics (`Queries sent:`, `Queries completed:`,
/// `Run time (s):`).
pub fn parse_dnsperf(text: &str) -> Option<Outcome> {
    let run_time = text.lines().find_map(|l| {
        l.trim_start()
            .strip_prefix("Run time (s):")?
            .trim()
            .parse::<f64>()
            .ok()
    })?;
    Some(Outcome {
        sent: number_after(text, "Queries sent:")?,
        answers: number_after(text, "Queries completed:")?,
        secs: run_time,
    })
}

/// Runs `argv` with its output in `log`, killed (by its PID) after `limit`;
/// what it wrote.
pub fn run_bounded(argv: &[String], log: &Path, limit: Duration) -> Result<String, String> {
    let file = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = file
        .try_clone()
        .map_err(|e| format!("{}: {e}", log.display()))?;
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("{}: {e}", argv[0]))?;
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if Instant::now() > deadline {
            let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
            std::thread::sleep(Duration::from_millis(500));
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "{} did not end within {limit:?}: stopped",
                argv.join(" ")
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(log).unwrap_or_default();
    if !status.success() {
        let tail: Vec<&str> = text.lines().rev().take(5).collect();
        return Err(format!(
            "{}: {status}: {}",
            argv[0],
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ));
    }
    Ok(text)
}

/// One loader run: the command line (to run in the client namespace) and
/// how to read its output.
#[derive(Debug, Clone)]
pub struct Load {
    /// Which loader.
    pub tool: Tool,
    /// Query file (`NAME TYPE` lines).
    pub queries: std::path::PathBuf,
    /// Offered queries per second.
    pub rate: u64,
    /// Seconds of sending.
    pub secs: u64,
    /// The CPU it runs on.
    pub cpu: usize,
}

impl Load {
    /// The command line (without the namespace).
    pub fn argv(&self) -> Vec<String> {
        let server = super::net::SERVER.to_string();
        let mut v: Vec<String> = vec!["taskset".into(), "-c".into(), self.cpu.to_string()];
        match self.tool {
            Tool::Kxdpgun => v.extend(
                [
                    "kxdpgun",
                    "-t",
                    &self.secs.to_string(),
                    "-Q",
                    &self.rate.to_string(),
                    "-F",
                    &self.cpu.to_string(),
                    "-i",
                    &self.queries.display().to_string(),
                    &server,
                ]
                .map(String::from),
            ),
            Tool::Dnsperf => v.extend(
                [
                    "dnsperf",
                    "-s",
                    &server,
                    "-d",
                    &self.queries.display().to_string(),
                    "-l",
                    &self.secs.to_string(),
                    "-Q",
                    &self.rate.to_string(),
                    "-c",
                    "16",
                    "-q",
                    "10000",
                    "-t",
                    "2",
                ]
                .map(String::from),
            ),
        }
        v
    }

    /// Reads the loader's output.
    pub fn parse(&self, text: &str) -> Option<Outcome> {
        match self.tool {
            Tool::Kxdpgun => parse_kxdpgun(text, self.secs as f64),
            Tool::Dnsperf => parse_dnsperf(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kxdpgun_summary() {
        let t = "using interface xbc1, XDP threads 1, UDP, native mode\n\
                 thread#00: sent 40014, received 38194, lost 426\n\
                 total queries:     40014 (20007 pps)\n\
                 total replies:     38194 (19097 pps) (95%)\n\
                 average DNS reply size: 52 B\nduration: 2 s\n";
        let o = parse_kxdpgun(t, 2.0).unwrap();
        assert_eq!((o.sent, o.answers), (40014, 38194));
        assert_eq!(o.answers_per_sec(), 19097.0);
        assert!(parse_kxdpgun("failed to initialize", 2.0).is_none());
        // No replies at all: kxdpgun leaves the line out.
        let o = parse_kxdpgun("total queries:     100 (50 pps)\n", 2.0).unwrap();
        assert_eq!(o.answers, 0);
    }

    #[test]
    fn dnsperf_statistics() {
        let t = "Statistics:\n\n  Queries sent:         60000\n  Queries completed:    59990 (99.98%)\n  \
                 Queries lost:         10 (0.02%)\n\n  Run time (s):         2.000123\n  \
                 Queries per second:   29993.1\n";
        let o = parse_dnsperf(t).unwrap();
        assert_eq!((o.sent, o.answers), (60000, 59990));
        assert!((o.secs - 2.000123).abs() < 1e-9);
        assert!(parse_dnsperf("Error: could not open").is_none());
    }

    #[test]
    fn command_lines() {
        let l = Load {
            tool: Tool::Kxdpgun,
            queries: "/w/q.txt".into(),
            rate: 1000,
            secs: 3,
            cpu: 1,
        };
        assert_eq!(
            l.argv().join(" "),
            "taskset -c 1 kxdpgun -t 3 -Q 1000 -F 1 -i /w/q.txt 10.53.0.1"
        );
        let d = Load {
            tool: Tool::Dnsperf,
            ..l
        };
        assert!(d
            .argv()
            .join(" ")
            .starts_with("taskset -c 1 dnsperf -s 10.53.0.1 -d /w/q.txt -l 3 -Q 1000"));
    }
}
