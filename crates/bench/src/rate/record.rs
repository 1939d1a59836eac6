//! `lode-bench rate --json FILE`: the steps, searches and result of a run as data,
//! with the provenance block (command, commit, versions, machine, sysctls).
//!
//! ```text
//!  each step ─▶ Record::step() ─┐
//!  each search ─▶ Record::search() ─▶ Record::to_json(summary) ─▶ FILE
//! ```

use serde_json::{json, Value};

use super::StepResult;
use crate::provenance::Provenance;
use crate::stats::Summary;

/// What a rate run measured, step by step.
#[derive(Debug, Clone, Default)]
pub struct Record {
    /// The settings (numbers as numbers).
    pub settings: Value,
    /// Every step, in order.
    pub steps: Vec<Value>,
    /// Every search's result.
    pub searches: Vec<Value>,
    /// Where it comes from.
    pub provenance: Option<Provenance>,
}

impl Record {
    /// A step of search `search` (None: a `--rate` step); `passed` as judged,
    /// `tester_ok`: the tester kept its schedule (else the step is tester-limited).
    pub fn step(&mut self, search: Option<usize>, r: &StepResult, passed: bool, tester_ok: bool) {
        self.steps.push(json!({
            "search": search,
            "rate": r.rate,
            "passed": passed,
            "tester_limited": !tester_ok,
            "sent": r.sent,
            "valid": r.valid,
            "late": r.late,
            "wrong": r.wrong,
            "unmatched": r.unmatched,
            "unanswered": r.unanswered(),
            "send_errors": r.send_errors,
            "send_secs": r.send_secs,
            "achieved_rate": r.achieved_rate,
            "answered_qps": r.answered_qps(),
            "behind": r.behind,
            "latency_p50_us": r.latency_us[0],
            "latency_p99_us": r.latency_us[1],
            "latency_p999_us": r.latency_p999_us,
            "latency_max_us": r.latency_us[2],
        }));
    }

    /// One search's result: its rate, whether the upper bound passed, whether a
    /// failed step was tester-limited.
    pub fn search(&mut self, rate: u64, hit_ceiling: bool, tester_limited: bool) {
        self.searches.push(json!({
            "rate": rate,
            "hit_ceiling": hit_ceiling,
            "tester_limited": tester_limited,
        }));
    }

    /// The document.
    pub fn to_json(&self, summary: Option<&Summary>) -> Value {
        json!({
            "provenance": self.provenance.as_ref().map(Provenance::to_json),
            "settings": self.settings,
            "steps": self.steps,
            "searches": self.searches,
            "result": summary.map(|s| json!({
                "searches": s.n,
                "median": s.median,
                "p1": s.p1,
                "p99": s.p99,
                "dispersion": s.dispersion,
            })),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every figure is a JSON number; a tester-limited step says so.
    #[test]
    fn steps_and_result_as_numbers() {
        let mut rec = Record {
            settings: json!({"high": 1000, "loss": 0.0}),
            ..Record::default()
        };
        let r = StepResult {
            rate: 1000,
            sent: 1000,
            valid: 990,
            behind: 0.05,
            latency_us: [10, 20, 30],
            ..StepResult::default()
        };
        rec.step(Some(1), &r, false, false);
        rec.search(500, false, true);
        let s = Summary::of(&[500.0, 520.0]).expect("summary");
        let j = rec.to_json(Some(&s));
        let step = &j["steps"][0];
        assert_eq!(step["rate"], 1000);
        assert_eq!(step["unanswered"], 10);
        assert_eq!(step["tester_limited"], true);
        assert!(step["behind"].is_f64());
        assert_eq!(j["searches"][0]["tester_limited"], true);
        assert_eq!(j["result"]["searches"], 2);
        assert!(j["result"]["median"].is_f64());
        assert!(j["provenance"].is_null());
    }
}
