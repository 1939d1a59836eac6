//! The tester's ceiling: our zero-loss search and dnsperf's against `lode-bench echo`
//! (a server measured near these figures was measured at the tester's limit).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::servers::Kind;
use super::{say, Bench, CompareError, DnsperfOutcome, RateOutcome, SetRole};
use crate::query::Expect;
use crate::search::binary_search;

impl Bench<'_> {
    /// The tester's ceiling: our search (unless the echo runs in the rounds) and
    /// dnsperf's (if asked) against the echo.
    pub(super) fn ceiling(
        &self,
        ours: bool,
        queries_file: &Path,
    ) -> Result<(Option<RateOutcome>, Option<DnsperfOutcome>), CompareError> {
        let dnsperf = self.cfg.dnsperf && Path::new("/usr/bin/dnsperf").exists();
        if !ours && !dnsperf {
            return Ok((None, None));
        }
        let mut echo = self.launch(Kind::Echo, Vec::new(), "ceiling").start()?;
        let probe = &self.set(SetRole::Main)?.data.probe;
        echo.wait_ready(probe, Expect::NoError, Duration::from_secs(10))?;
        let ours = if ours {
            // The echo is faster than any server: search up to twice as high.
            let r = self.rate_search(
                echo.addr,
                &self.main_queries()?[0],
                Expect::NoError,
                2 * self.cfg.high,
            )?;
            say(&format!("  echo: our zero-loss rate {} q/s", r.rate));
            Some(r)
        } else {
            None
        };
        let dp = if dnsperf {
            let d = self.dnsperf(echo.addr.port(), queries_file)?;
            say(&format!(
                "  echo: dnsperf zero-loss rate {} q/s, unlimited {:.0} q/s",
                d.zero_loss_rate, d.max_qps
            ));
            Some(d)
        } else {
            None
        };
        echo.stop();
        Ok((ours, dp))
    }

    /// dnsperf (pinned to the tester's CPU): a zero-loss binary search with `-Q`, and
    /// one unlimited run.
    pub(super) fn dnsperf(
        &self,
        port: u16,
        queries: &Path,
    ) -> Result<DnsperfOutcome, CompareError> {
        let secs = self.cfg.step.as_secs().max(1);
        let run = |limit: Option<u64>| -> Result<(u64, u64, f64), CompareError> {
            let mut c = Command::new("timeout");
            c.args(["-k", "2", &(secs + 15).to_string(), "taskset", "-c"])
                .arg(self.cfg.tester_cpu.to_string())
                .args(["dnsperf", "-s", "127.0.0.1", "-p", &port.to_string(), "-d"])
                .arg(queries)
                .args(["-l", &secs.to_string(), "-c", "1", "-T", "1", "-t", "1"]);
            if let Some(q) = limit {
                c.args(["-Q", &q.to_string()]);
            }
            let out = c
                .output()
                .map_err(|e| CompareError::Tester(format!("dnsperf: {e}")))?;
            let text = String::from_utf8_lossy(&out.stdout);
            parse_dnsperf(&text).ok_or_else(|| {
                CompareError::Tester(format!(
                    "dnsperf output not understood: {}",
                    text.lines().take(3).collect::<Vec<_>>().join(" / ")
                ))
            })
        };
        let (_, _, max_qps) = run(None)?;
        let res = binary_search(0, self.cfg.high, self.cfg.resolution, |rate| {
            let (sent, lost, _) = run(Some(rate))?;
            let ok = lost == 0 && sent as f64 >= 0.98 * (rate * secs) as f64;
            say(&format!(
                "    dnsperf -Q {rate}: sent {sent} lost {lost} {}",
                if ok { "PASS" } else { "FAIL" }
            ));
            Ok::<_, CompareError>((ok, ()))
        })?;
        Ok(DnsperfOutcome {
            zero_loss_rate: res.rate,
            max_qps,
        })
    }
}

/// Parses dnsperf's `Queries sent:`, `Queries lost:` and `Queries per second:`.
pub fn parse_dnsperf(text: &str) -> Option<(u64, u64, f64)> {
    let field = |key: &str| -> Option<&str> {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
    };
    let sent = field("Queries sent:")?.parse().ok()?;
    let lost = field("Queries lost:")?.parse().ok()?;
    let qps = field("Queries per second:")?.parse().ok()?;
    Some((sent, lost, qps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dnsperf_output() {
        let text = "Statistics:\n\n  Queries sent:         50000\n  Queries completed:    49990 (99.98%)\n  \
                    Queries lost:         10 (0.02%)\n\n  Response codes:       NOERROR 49990 (100.00%)\n  \
                    Average packet size:  request 40, response 40\n  Run time (s):         1.000\n  \
                    Queries per second:   49987.2\n";
        assert_eq!(parse_dnsperf(text), Some((50000, 10, 49987.2)));
        assert_eq!(parse_dnsperf("garbage"), None);
    }
}
