//! The report's section on the metrics overhead: CPU per
//! answer with Lode's metrics off and on, and the verdict against 1.02.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::super::metrics::{self, MetricsRun};
use super::super::CompareResult;
use super::{fixed_json, ratio3};

/// The metrics overhead as JSON, when it was measured.
pub fn metrics_json(r: &CompareResult) -> Option<Value> {
    let s = metrics::summarize(&r.metrics)?;
    Some(json!({
        "limit": metrics::LIMIT,
        "rate": r.cpu_rate,
        "step_secs": r.cpu_step_secs,
        "off_us_per_answer": s.off_us,
        "on_us_per_answer": s.on_us,
        "ratio": s.ratio,
        "paired_ratio": s.paired_ratio,
        "pass": s.pass(),
        "off_runs": s.off_runs,
        "on_runs": s.on_runs,
        "disturbed": s.disturbed,
        "clean": s.clean,
        "scrapes": s.scrapes,
        "scrape_failures": s.scrape_failures,
        "counted_min": s.counted_min,
        "per_query": s.per_query.iter().map(|(q, off, on)| json!({
            "query": q.name(), "off_us_per_answer": off, "on_us_per_answer": on,
            "ratio": (*off > 0.0).then(|| on / off),
        })).collect::<Vec<_>>(),
        "runs": r.metrics.iter().map(|x: &MetricsRun| json!({
            "run": x.run,
            "metrics": x.variant.name(),
            "cpu_secs": x.cpu_secs(),
            "valid": x.valid(),
            "cpu_us_per_answer": x.cpu_us_per_answer(),
            "scrapes": x.scrapes,
            "scrape_failures": x.scrape_failures,
            "counted_requests": x.counted,
            "steal": x.steal,
            "other_load": x.other_load,
            "disturbed": x.disturbed,
            "fixed": x.fixed.iter().map(fixed_json).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    }))
}

/// The metrics overhead section of report.md, when it was measured.
pub fn metrics_markdown(r: &CompareResult) -> Option<String> {
    let s = metrics::summarize(&r.metrics)?;
    let mut m = String::new();
    let _ = writeln!(
        m,
        "## Metrics overhead
"
    );
    let _ = writeln!(
        m,
        "Lode alone on the main set, {} run(s) with metrics off and {} with them on, alternated \
         (off, on, off, on …). *Off*: `query-counters = false`, no endpoint. *On*: counters and \
         `metrics-listen`, the tester scraping `GET /metrics` every {} s throughout ({} scrapes, \
         {} failed). Server CPU (all its threads) ÷ valid answers over one {} s step per query \
         kind at {} q/s after a warm-up step; medians over runs.\n",
        s.off_runs,
        s.on_runs,
        metrics::SCRAPE_EVERY.as_secs_f64(),
        s.scrapes,
        s.scrape_failures,
        r.cpu_step_secs,
        r.cpu_rate
    );
    let _ = writeln!(m, "| query | off µs/answer | on µs/answer | on ÷ off |");
    let _ = writeln!(m, "|---|---|---|---|");
    for (q, off, on) in &s.per_query {
        let _ = writeln!(
            m,
            "| {} | {off:.3} | {on:.3} | {} |",
            q.name(),
            ratio3(Some(*on), Some(*off))
        );
    }
    let _ = writeln!(
        m,
        "| **all** | {:.3} | {:.3} | **{}** |\n",
        s.off_us,
        s.on_us,
        ratio3(Some(s.on_us), Some(s.off_us))
    );
    let verdict = match (s.pass(), s.ratio) {
        (Some(true), Some(x)) => format!("**PASS**: on ÷ off = {x:.3} ≤ {}", metrics::LIMIT),
        (Some(false), Some(x)) => format!("**MISS**: on ÷ off = {x:.3} > {}", metrics::LIMIT),
        _ => "**not measured**: no answers with metrics off".into(),
    };
    let _ = write!(m, "{verdict}");
    if let Some(p) = s.paired_ratio {
        let _ = write!(m, " (median of the rounds' own ratios {p:.3})");
    }
    let _ = writeln!(m, ".");
    if s.disturbed > 0 {
        let _ = writeln!(
            m,
            "{} run(s) disturbed (steal or other load above the limits): rerun on a quieter machine.",
            s.disturbed
        );
    }
    if !s.clean {
        let _ = writeln!(
            m,
            "Some query went unanswered or the tester fell behind: the rate may be too high."
        );
    }
    if s.counted_min == Some(0) || (s.on_runs > 0 && s.scrapes == 0) {
        let _ = writeln!(
            m,
            "A run with metrics on counted no requests in its last scrape: the measurement is void."
        );
    }
    m.push('\n');
    Some(m)
}

#[cfg(test)]
mod tests {
    use super::super::tests::synthetic;
    use super::super::{to_json, to_markdown};
    use super::*;
    use crate::compare::{FixedStep, QueryKind};

    /// The metrics overhead section and JSON appear only when measured.
    #[test]
    fn metrics_overhead_section() {
        use crate::compare::metrics::{MetricsRun, Variant};
        let mut r = synthetic();
        assert!(metrics_markdown(&r).is_none());
        assert!(to_json(&r).get("metrics_overhead").is_none());
        assert!(!to_markdown(&r, &[]).contains("Metrics overhead"));
        let fixed = |us: f64| -> Vec<FixedStep> {
            QueryKind::ALL
                .into_iter()
                .map(|query| FixedStep {
                    query,
                    rate: 20_000,
                    sent: 100_000,
                    valid: 100_000,
                    cpu_secs: us * 0.1,
                    tester_ok: true,
                })
                .collect()
        };
        let run = |run: usize, variant: Variant, us: f64| MetricsRun {
            run,
            variant,
            fixed: fixed(us),
            scrapes: if variant == Variant::On { 20 } else { 0 },
            scrape_failures: 0,
            counted: (variant == Variant::On).then_some(300_000),
            steal: 0.0,
            other_load: 0.02,
            disturbed: false,
        };
        r.metrics = vec![
            run(1, Variant::Off, 5.0),
            run(1, Variant::On, 5.05),
            run(2, Variant::Off, 5.2),
            run(2, Variant::On, 5.1),
        ];
        let md = to_markdown(&r, &[]);
        assert!(md.contains("## Metrics overhead"), "{md}");
        assert!(md.contains("| existing | 5.100 | 5.075 | 0.995 |"), "{md}");
        assert!(
            md.contains("| **all** | 5.100 | 5.075 | **0.995** |"),
            "{md}"
        );
        assert!(md.contains("**PASS**: on ÷ off = 0.995 ≤ 1.02"), "{md}");
        assert!(md.contains("(40 scrapes, 0 failed)"), "{md}");
        assert!(md.find("Metrics overhead") < md.find("## The tester's ceiling"));
        let j = to_json(&r);
        let m = &j["metrics_overhead"];
        assert_eq!(m["pass"], true);
        assert_eq!(m["limit"], 1.02);
        assert_eq!(m["runs"].as_array().map(Vec::len), Some(4));
        assert_eq!(m["runs"][1]["metrics"], "on");
        assert_eq!(m["runs"][1]["counted_requests"], 300_000);
        assert_eq!(m["per_query"][2]["query"], "outside");
        let ratio = m["ratio"].as_f64().expect("ratio");
        assert!((ratio - 5.075 / 5.1).abs() < 1e-9, "{ratio}");

        r.metrics[1] = run(1, Variant::On, 6.0);
        r.metrics[3] = run(2, Variant::On, 6.0);
        r.metrics[3].counted = Some(0);
        let md = metrics_markdown(&r).expect("section");
        assert!(md.contains("**MISS**: on ÷ off = 1.176 > 1.02"), "{md}");
        assert!(md.contains("counted no requests"), "{md}");
        assert_eq!(to_json(&r)["metrics_overhead"]["pass"], false);
    }
}
