//! updates.md and updates.json: medians per server, one table per target, every run.

use std::path::Path;

use serde_json::{json, Value};

use super::{Bulk, UpdCompareResult, UpdRun};
use crate::compare::CompareError;
use crate::durable::{self, DurableResult};
use crate::stats::median;

/// Medians of one server over the runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdSummary {
    /// Server.
    pub server: String,
    /// fdatasync/s.
    pub fsync: f64,
    /// Durable single-RR updates/s (acknowledged).
    pub durable: Option<f64>,
    /// p99 latency of the durable updates, µs.
    pub durable_p99_us: Option<f64>,
    /// Zero-loss q/s per update rate.
    pub qps: Vec<(f64, f64)>,
    /// Bulk records/s.
    pub bulk: Option<f64>,
    /// p99.9 static and during the bulk load, µs.
    pub p999: Option<(f64, f64)>,
    /// Compactions logged (Lode).
    pub compactions: Option<u64>,
}

fn med(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    median(&v)
}

/// Medians per server, in the order servers first appear.
pub fn summarize(r: &UpdCompareResult) -> Vec<UpdSummary> {
    crate::compare::report::first_appearances(r.runs.iter().map(|run| run.server.as_str()))
        .into_iter()
        .map(|name| {
            let runs: Vec<&UpdRun> = r.runs.iter().filter(|x| x.server == name).collect();
            let mut rates: Vec<f64> = Vec::new();
            for u in runs.iter().flat_map(|x| &x.under_updates) {
                if !rates.contains(&u.update_rate) {
                    rates.push(u.update_rate);
                }
            }
            let qps = rates
                .iter()
                .filter_map(|&rate| {
                    let v: Vec<f64> = runs
                        .iter()
                        .flat_map(|x| &x.under_updates)
                        .filter(|u| u.update_rate == rate)
                        .map(|u| u.qps as f64)
                        .collect();
                    med(v).map(|m| (rate, m))
                })
                .collect();
            let durables: Vec<&DurableResult> =
                runs.iter().filter_map(|x| x.durable.as_ref()).collect();
            let bulks: Vec<&Bulk> = runs.iter().filter_map(|x| x.bulk.as_ref()).collect();
            UpdSummary {
                server: name.to_owned(),
                fsync: med(runs.iter().map(|x| x.fsync.per_sec()).collect()).unwrap_or(0.0),
                durable: med(durables.iter().map(|d| d.updates_per_sec()).collect()),
                durable_p99_us: med(durables.iter().map(|d| d.latency_us[1] as f64).collect()),
                qps,
                bulk: med(bulks.iter().map(|b| b.rate()).collect()),
                p999: med(bulks.iter().map(|b| b.p999().0 as f64).collect())
                    .zip(med(bulks.iter().map(|b| b.p999().1 as f64).collect())),
                compactions: bulks.iter().filter_map(|b| b.compactions).max(),
            }
        })
        .collect()
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.0}"))
}

fn fmt_ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => durable::ratio(a, b).map_or("–".into(), |r| format!("{r:.2}×")),
        _ => "–".into(),
    }
}

/// The report in Markdown: one table per target, absolute figures and ratios.
pub fn to_markdown(r: &UpdCompareResult) -> String {
    let s = summarize(r);
    let get = |n: &str| s.iter().find(|x| x.server == n);
    let lode = get("lode");
    let mut m = String::from("# Updates: Lode, Knot DNS, BIND 9\n\n");
    m.push_str(&format!(
        "{} run(s), {:.0} s. Medians over the runs.\n\n",
        r.runs.iter().map(|x| x.run).max().unwrap_or(0),
        r.wall_secs
    ));
    for (k, v) in &r.settings {
        m.push_str(&format!("- {k}: {v}\n"));
    }
    m.push_str(
        "\n## Target 1: durable single-RR TSIG updates, closed loop\n\n\
         | server | fdatasync/s | updates/s | p99 µs | ÷ fdatasync | Lode ÷ this |\n\
         |---|---:|---:|---:|---:|---:|\n",
    );
    for x in &s {
        m.push_str(&format!(
            "| {} | {:.0} | {} | {} | {} | {} |\n",
            x.server,
            x.fsync,
            fmt_opt(x.durable),
            fmt_opt(x.durable_p99_us),
            fmt_ratio(x.durable, Some(x.fsync)),
            fmt_ratio(lode.and_then(|l| l.durable), x.durable),
        ));
    }
    m.push_str(
        "\nTargets: Lode ≥ 15 × fdatasync/s and ≥ 3 × the better of Knot and BIND.\n\n\
         ## Target 3: zero-loss query rate under updates (q/s)\n\n",
    );
    let mut rates: Vec<f64> = Vec::new();
    for x in &s {
        for (r, _) in &x.qps {
            if !rates.contains(r) {
                rates.push(*r);
            }
        }
    }
    rates.sort_by(f64::total_cmp);
    m.push_str("| server |");
    for r in &rates {
        m.push_str(&format!(" {r} upd/s |"));
    }
    m.push_str(" worst ÷ static |\n|---|");
    for _ in &rates {
        m.push_str("---:|");
    }
    m.push_str("---:|\n");
    for x in &s {
        m.push_str(&format!("| {} |", x.server));
        let q = |r: f64| x.qps.iter().find(|(u, _)| *u == r).map(|(_, v)| *v);
        for &r in &rates {
            m.push_str(&format!(" {} |", fmt_opt(q(r))));
        }
        let worst = x
            .qps
            .iter()
            .filter(|(u, _)| *u > 0.0)
            .map(|(_, v)| *v)
            .min_by(f64::total_cmp);
        m.push_str(&format!(" {} |\n", fmt_ratio(worst, q(0.0))));
    }
    if let Some(l) = lode {
        m.push_str("\nLode ÷ other per update rate:\n\n| vs |");
        for r in &rates {
            m.push_str(&format!(" {r} |"));
        }
        m.push_str("\n|---|");
        for _ in &rates {
            m.push_str("---:|");
        }
        m.push('\n');
        for x in s.iter().filter(|x| x.server != "lode") {
            m.push_str(&format!("| {} |", x.server));
            for &r in &rates {
                let q = |y: &UpdSummary| y.qps.iter().find(|(u, _)| *u == r).map(|(_, v)| *v);
                m.push_str(&format!(" {} |", fmt_ratio(q(l), q(x))));
            }
            m.push('\n');
        }
    }
    m.push_str(
        "\nTarget: Lode ≥ 95 % of its static rate up to 5,000 updates/s.\n\n\
         ## Targets 2 and 4: bulk load with `lode update`, query latency during it\n\n\
         | server | records/s | Lode ÷ this | p99.9 static µs | p99.9 during load µs | ratio | compactions |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for x in &s {
        let (a, b) = x.p999.unzip();
        m.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            x.server,
            fmt_opt(x.bulk),
            fmt_ratio(lode.and_then(|l| l.bulk), x.bulk),
            fmt_opt(a),
            fmt_opt(b),
            fmt_ratio(b, a),
            x.compactions.map_or("–".into(), |c| c.to_string()),
        ));
    }
    m.push_str(
        "\nTargets: ≥ 100,000 records/s acknowledged and durable; p99.9 during a compaction \
         ≤ 2 × static.\n",
    );
    let errors: Vec<String> = r
        .runs
        .iter()
        .filter_map(|x| {
            x.error
                .as_ref()
                .map(|e| format!("- {} run {}: {e}", x.server, x.run))
        })
        .chain(r.notes.iter().map(|n| format!("- {n}")))
        .collect();
    m.push('\n');
    m.push_str(&r.fairness.markdown());
    if !errors.is_empty() {
        m.push_str("## Notes\n\n");
        m.push_str(&errors.join("\n"));
        m.push('\n');
    }
    m
}

/// The report as JSON: settings, every run, the summary; the provenance, socket
/// buffers and conditions ([`crate::compare::fairness::Fairness::json`]).
pub fn to_json(r: &UpdCompareResult) -> Value {
    let runs: Vec<Value> = r
        .runs
        .iter()
        .map(|x| {
            json!({
                "server": x.server,
                "run": x.run,
                "load_secs": x.load_secs,
                "fsync": {"syncs": x.fsync.syncs, "secs": x.fsync.secs, "per_sec": x.fsync.per_sec()},
                "under_updates": x.under_updates.iter().map(|u| json!({
                    "update_rate": u.update_rate, "qps": u.qps, "hit_ceiling": u.hit_ceiling,
                    "updates_sent": u.updates.0, "updates_ok": u.updates.1,
                    "update_secs": u.updates.2, "update_p99_us": u.update_p99_us,
                })).collect::<Vec<_>>(),
                "durable": x.durable.as_ref().map(|d| json!({
                    "clients": d.clients, "batch": d.batch, "sent": d.sent, "acked": d.acked,
                    "acked_rrs": d.acked_rrs, "bad_tsig": d.bad_tsig, "unanswered": d.unanswered,
                    "conn_errors": d.conn_errors, "secs": d.secs, "rcodes": d.rcodes.to_vec(),
                    "updates_per_sec": d.updates_per_sec(),
                    "latency_us": {"p50": d.latency_us[0], "p99": d.latency_us[1],
                                   "p999": d.latency_us[2], "max": d.latency_us[3]},
                    "first_error": d.first_error,
                })),
                "bulk": x.bulk.as_ref().map(|b| json!({
                    "records": b.records, "secs": b.secs, "records_per_sec": b.rate(), "ok": b.ok,
                    "static_steps": b.static_steps, "load_steps": b.load_steps,
                    "compactions": b.compactions,
                })),
                "error": x.error,
                "conditions": x.conditions.as_ref().map(crate::compare::fairness::json),
            })
        })
        .collect();
    let summary: Vec<Value> = summarize(r)
        .iter()
        .map(|s| {
            json!({
                "server": s.server, "fsync_per_sec": s.fsync, "durable_updates_per_sec": s.durable,
                "durable_p99_us": s.durable_p99_us,
                "durable_over_fsync": s.durable.and_then(|d| durable::ratio(d, s.fsync)),
                "qps_under_updates": s.qps.iter().map(|(u, q)| json!([u, q])).collect::<Vec<_>>(),
                "bulk_records_per_sec": s.bulk,
                "p999_static_us": s.p999.map(|p| p.0), "p999_bulk_us": s.p999.map(|p| p.1),
                "compactions": s.compactions,
            })
        })
        .collect();
    let mut doc = json!({
        "settings": r.parameters,
        "settings_text": r.settings.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
        "wall_secs": r.wall_secs,
        "runs": runs,
        "summary": summary,
        "notes": r.notes,
    });
    if let Value::Object(o) = &mut doc {
        o.extend(r.fairness.json());
    }
    doc
}

/// Writes updates.md and updates.json into `dir`.
pub fn write(dir: &Path, r: &UpdCompareResult) -> Result<(), CompareError> {
    std::fs::create_dir_all(dir).map_err(|e| CompareError::io(dir, e))?;
    let md = dir.join("updates.md");
    std::fs::write(&md, to_markdown(r)).map_err(|e| CompareError::io(&md, e))?;
    let js = dir.join("updates.json");
    let text = serde_json::to_string_pretty(&to_json(r)).unwrap_or_default();
    std::fs::write(&js, text).map_err(|e| CompareError::io(&js, e))
}
