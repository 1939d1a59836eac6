//! The comparison report: per-server medians over runs, ratios Lode/Knot and
//! Lode/NSD, written as `report.md`, `report.json` and PNG plots.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{json, Value};

mod metrics_section;
mod plots;
use super::{CompareError, CompareResult, QueryKind, RateOutcome, RunResult};
use crate::stats::median;
pub use metrics_section::{metrics_json, metrics_markdown};

/// The TTF used for plot text (Debian `fonts-dejavu-core`).
pub const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// Medians of one server over its runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerSummary {
    /// Server name.
    pub server: String,
    /// Runs kept.
    pub runs: usize,
    /// Of which disturbed.
    pub disturbed: usize,
    /// Zero-loss rate, existing names (median q/s).
    pub existing: f64,
    /// Zero-loss rate, non-existing names (median q/s).
    pub nxdomain: f64,
    /// True if any search was limited by the tester, not the server.
    pub tester_limited: bool,
    /// Load time (median s).
    pub load_secs: f64,
    /// Resident memory with the full set (median bytes).
    pub memory: f64,
    /// Resident memory with the tiny set (bytes).
    pub tiny_memory: f64,
    /// (memory − tiny memory) / records.
    pub bytes_per_record: f64,
    /// Server CPU µs per answer (median).
    pub cpu_us_per_answer: f64,
    /// Per client count: clients, median q/s, median p50 µs, median p99 µs.
    pub clients: Vec<(usize, f64, f64, f64)>,
    /// UDP receive-buffer errors summed over the runs.
    pub rcvbuf_errors: u64,
    /// The server's short name (`server` is the entry's label).
    pub software: String,
    /// The data set's role (`main`, `large`, `memory`, `shared`).
    pub set: String,
    /// Records of the data set.
    pub records: u64,
    /// Bytes of zone text loaded.
    pub zone_bytes: u64,
    /// Per query kind measured at the fixed rate: median CPU µs per answer, lowest
    /// fraction answered, whether every step kept its schedule.
    pub fixed: Vec<(QueryKind, f64, f64, bool)>,
    /// RCODE answered to a name outside every zone (first run that saw one).
    pub outside_rcode: Option<u16>,
    /// Lode's own log: its whole load (median s).
    pub logged_load_secs: Option<f64>,
    /// Lowest and highest run (with two or more runs): zero-loss existing,
    /// non-existing, load time, bytes per record.
    pub ranges: Option<[(f64, f64); 4]>,
}

impl ServerSummary {
    /// True when only memory and load time were measured.
    pub fn memory_only(&self) -> bool {
        self.set == "memory" || self.set == "shared"
    }

    /// CPU µs per answer at the fixed rate for `q`, if measured.
    pub fn fixed_us(&self, q: QueryKind) -> Option<f64> {
        self.fixed.iter().find(|f| f.0 == q).map(|f| f.1)
    }
}

fn med(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    median(&v).unwrap_or(0.0)
}

/// Each name once, in the order it first appears (servers across runs).
pub(crate) fn first_appearances<'a>(all: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut names: Vec<&str> = Vec::new();
    for n in all {
        if !names.contains(&n) {
            names.push(n);
        }
    }
    names
}

/// Summaries per server, in the order servers first appear in the runs.
pub fn summarize(r: &CompareResult) -> Vec<ServerSummary> {
    first_appearances(r.runs.iter().map(|run| run.server.as_str()))
        .into_iter()
        .map(|name| {
            // A redone run replaces the disturbed one; a kept disturbed run still counts.
            let runs: Vec<&RunResult> = r
                .runs
                .iter()
                .filter(|x| x.server == name)
                .filter(|x| {
                    !r.runs
                        .iter()
                        .any(|y| y.server == name && y.run == x.run && y.attempt > x.attempt)
                })
                .collect();
            let f = |g: &dyn Fn(&RunResult) -> f64| med(runs.iter().map(|x| g(x)).collect());
            let span = |g: &dyn Fn(&RunResult) -> f64| {
                runs.iter()
                    .map(|x| g(x))
                    .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)))
            };
            let first = runs.first();
            let software = first
                .map(|x| x.software.as_str())
                .filter(|s| !s.is_empty())
                .unwrap_or(name)
                .to_owned();
            let records = first.map_or(0, |x| x.records);
            let records = if records == 0 && software != "echo" {
                r.records
            } else {
                records
            };
            let tiny = r
                .tiny_memory
                .iter()
                .find(|(n, _)| *n == software)
                .map_or(0.0, |(_, m)| m.resident() as f64);
            let fixed = QueryKind::ALL
                .into_iter()
                .filter_map(|q| {
                    let steps: Vec<_> = runs
                        .iter()
                        .flat_map(|x| x.fixed.iter().filter(|f| f.query == q))
                        .collect();
                    if steps.is_empty() {
                        return None;
                    }
                    Some((
                        q,
                        med(steps.iter().map(|f| f.cpu_us_per_answer()).collect()),
                        steps.iter().map(|f| f.answered()).fold(1.0, f64::min),
                        steps.iter().all(|f| f.tester_ok),
                    ))
                })
                .collect();
            let logged: Vec<f64> = runs.iter().filter_map(|x| x.logged_load_secs).collect();
            let memory = f(&|x| x.memory.resident() as f64);
            let per_record = |m: f64| {
                if records > 0 && m > 0.0 {
                    (m - tiny).max(0.0) / records as f64
                } else {
                    0.0
                }
            };
            let mem_span = span(&|x| x.memory.resident() as f64);
            let ranges = (runs.len() > 1).then(|| {
                [
                    span(&|x| x.existing.rate as f64),
                    span(&|x| x.nxdomain.rate as f64),
                    span(&|x| x.load_secs),
                    (per_record(mem_span.0), per_record(mem_span.1)),
                ]
            });
            let mut counts: Vec<usize> = runs
                .iter()
                .flat_map(|x| x.clients.iter().map(|c| c.clients))
                .collect();
            counts.sort_unstable();
            counts.dedup();
            let clients = counts
                .into_iter()
                .map(|n| {
                    let steps: Vec<_> = runs
                        .iter()
                        .flat_map(|x| x.clients.iter().filter(|c| c.clients == n))
                        .collect();
                    (
                        n,
                        med(steps.iter().map(|c| c.qps).collect()),
                        med(steps.iter().map(|c| c.latency_us[0]).collect()),
                        med(steps.iter().map(|c| c.latency_us[2]).collect()),
                    )
                })
                .collect();
            ServerSummary {
                server: name.to_owned(),
                runs: runs.len(),
                disturbed: runs.iter().filter(|x| x.disturbed).count(),
                existing: f(&|x| x.existing.rate as f64),
                nxdomain: f(&|x| x.nxdomain.rate as f64),
                tester_limited: runs
                    .iter()
                    .any(|x| x.existing.tester_limited || x.nxdomain.tester_limited),
                load_secs: f(&|x| x.load_secs),
                memory,
                tiny_memory: tiny,
                bytes_per_record: per_record(memory),
                cpu_us_per_answer: f(&|x| x.cpu_us_per_answer()),
                clients,
                rcvbuf_errors: runs.iter().map(|x| x.rcvbuf_errors).sum(),
                software,
                set: first
                    .map(|x| x.set.clone())
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| "main".into()),
                records,
                zone_bytes: first.map_or(0, |x| x.zone_bytes),
                fixed,
                outside_rcode: runs.iter().find_map(|x| x.outside_rcode),
                logged_load_secs: (!logged.is_empty()).then(|| med(logged)),
                ranges,
            }
        })
        .collect()
}

/// `a / b` as text (`-` when either is missing or b is 0).
fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "-".into(),
    }
}

/// The metrics compared in the ratio table: name, value, whether higher is better.
type Metric = (&'static str, fn(&ServerSummary) -> f64, bool);

const METRICS: [Metric; 6] = [
    ("zero-loss rate, existing (q/s)", |s| s.existing, true),
    ("zero-loss rate, non-existing (q/s)", |s| s.nxdomain, true),
    (
        "best closed-loop throughput (q/s)",
        |s| s.clients.iter().map(|c| c.1).fold(0.0, f64::max),
        true,
    ),
    ("memory per record (bytes)", |s| s.bytes_per_record, false),
    ("load time (s)", |s| s.load_secs, false),
    ("server CPU per answer (µs)", |s| s.cpu_us_per_answer, false),
];

fn rate_json(r: &RateOutcome) -> Value {
    json!({
        "rate": r.rate,
        "hit_ceiling": r.hit_ceiling,
        "tester_limited": r.tester_limited,
        "tester_cpu_max": r.tester_cpu,
        "steps": r.steps.iter().map(|s| json!({
            "rate": s.0, "passed": s.1, "sent": s.2, "valid": s.3, "tester_cpu": s.4
        })).collect::<Vec<_>>(),
    })
}

/// The JSON document of a result.
pub fn to_json(r: &CompareResult) -> Value {
    let summaries = summarize(r);
    let get = |n: &str| summaries.iter().find(|s| s.server == n);
    let ratios: Vec<Value> = METRICS
        .iter()
        .map(|(name, f, higher)| {
            let v = |n: &str| get(n).map(f);
            json!({
                "metric": name,
                "higher_is_better": higher,
                "lode_over_knot": v("lode").zip(v("knot")).filter(|(_, b)| *b > 0.0).map(|(a, b)| a / b),
                "lode_over_nsd": v("lode").zip(v("nsd")).filter(|(_, b)| *b > 0.0).map(|(a, b)| a / b),
            })
        })
        .collect();
    let mut doc = json!({
        "settings": r.settings.iter().map(|(k, v)| (k.clone(), v.clone())).collect::<serde_json::Map<_, _>>(),
        "provenance": r.provenance.as_ref().map(|p| p.to_json()),
        "socket_buffers": r.buffer_setup,
        "differences_not_removed": super::fairness::differences(&r.runs),
        "records": r.records,
        "tiny_records": r.tiny_records,
        "wall_secs": r.wall_secs,
        "ceiling": {
            "tester_vs_echo": r.echo.as_ref().map(rate_json),
            "dnsperf_vs_echo": r.dnsperf.as_ref().map(|d| json!({
                "zero_loss_rate": d.zero_loss_rate, "max_qps": d.max_qps
            })),
        },
        "tiny_memory": r.tiny_memory.iter().map(|(n, m)| json!({
            "server": n, "rss": m.rss, "pss": m.pss, "processes": m.processes
        })).collect::<Vec<_>>(),
        "summary": summaries.iter().map(|s| json!({
            "server": s.server,
            "runs": s.runs,
            "disturbed": s.disturbed,
            "zero_loss_existing": s.existing,
            "zero_loss_nxdomain": s.nxdomain,
            "tester_limited": s.tester_limited,
            "load_secs": s.load_secs,
            "memory_bytes": s.memory,
            "tiny_memory_bytes": s.tiny_memory,
            "bytes_per_record": s.bytes_per_record,
            "cpu_us_per_answer": s.cpu_us_per_answer,
            "rcvbuf_errors": s.rcvbuf_errors,
            "software": s.software,
            "set": s.set,
            "records": s.records,
            "zone_bytes": s.zone_bytes,
            "fixed_rate_cpu": s.fixed.iter().map(|f| json!({
                "query": f.0.name(), "cpu_us_per_answer": f.1,
                "lowest_answered": f.2, "tester_ok": f.3,
            })).collect::<Vec<_>>(),
            "outside_rcode": s.outside_rcode,
            "logged_load_secs": s.logged_load_secs,
            "ranges": s.ranges.map(|r| json!({
                "zero_loss_existing": [r[0].0, r[0].1],
                "zero_loss_nxdomain": [r[1].0, r[1].1],
                "load_secs": [r[2].0, r[2].1],
                "bytes_per_record": [r[3].0, r[3].1],
            })),
            "clients": s.clients.iter().map(|c| json!({
                "clients": c.0, "qps": c.1, "p50_us": c.2, "p99_us": c.3
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "ratios": ratios,
        "targets": super::targets::json(&summaries),
        "cpu_steps": {"rate": r.cpu_rate, "secs": r.cpu_step_secs},
        "runs": r.runs.iter().map(|x| json!({
            "server": x.server,
            "run": x.run,
            "attempt": x.attempt,
            "load_secs": x.load_secs,
            "memory": {"rss": x.memory.rss, "pss": x.memory.pss, "processes": x.memory.processes},
            "existing": rate_json(&x.existing),
            "nxdomain": rate_json(&x.nxdomain),
            "clients": x.clients.iter().map(|c| json!({
                "clients": c.clients, "qps": c.qps, "answered": c.answered,
                "timeouts": c.timeouts, "wrong": c.wrong,
                "p50_us": c.latency_us[0], "p90_us": c.latency_us[1],
                "p99_us": c.latency_us[2], "max_us": c.latency_us[3],
            })).collect::<Vec<_>>(),
            "server_cpu_secs": x.server_cpu_secs,
            "test_cpu_secs": x.test_cpu_secs,
            "answers": x.answers,
            "cpu_us_per_answer": x.cpu_us_per_answer(),
            "steal": x.steal,
            "other_load": x.other_load,
            "rcvbuf_errors": x.rcvbuf_errors,
            "disturbed": x.disturbed,
            "software": x.software,
            "set": x.set,
            "records": x.records,
            "zone_bytes": x.zone_bytes,
            "fixed": x.fixed.iter().map(fixed_json).collect::<Vec<_>>(),
            "outside_rcode": x.outside_rcode,
            "logged_load_secs": x.logged_load_secs,
            "conditions": x.conditions.as_ref().map(super::fairness::json),
        })).collect::<Vec<_>>(),
        "notes": r.notes,
    });
    if let (Some(m), Some(obj)) = (metrics_json(r), doc.as_object_mut()) {
        obj.insert("metrics_overhead".into(), m);
    }
    doc
}

fn fixed_json(f: &super::FixedStep) -> Value {
    json!({
        "query": f.query.name(), "rate": f.rate, "sent": f.sent, "valid": f.valid,
        "cpu_secs": f.cpu_secs, "cpu_us_per_answer": f.cpu_us_per_answer(),
        "tester_ok": f.tester_ok,
    })
}

/// `a / b` with three decimals (`-` when either is missing or b is 0).
fn ratio3(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.3}", a / b),
        _ => "-".into(),
    }
}

fn mib(b: f64) -> String {
    format!("{:.1}", b / (1024.0 * 1024.0))
}

/// The closed-loop table: one column per client count.
fn clients_table(m: &mut String, s: &[ServerSummary], counts: &[usize]) {
    let _ = writeln!(
        m,
        "\n## Closed-loop clients (median q/s, p50 / p99 latency µs)\n"
    );
    let _ = write!(m, "| server |");
    for c in counts {
        let _ = write!(m, " {c} client(s) |");
    }
    let _ = write!(m, "\n|---|");
    for _ in counts {
        let _ = write!(m, "---|");
    }
    let _ = writeln!(m);
    for x in s.iter().filter(|x| !x.clients.is_empty()) {
        let _ = write!(m, "| {} |", x.server);
        for c in counts {
            match x.clients.iter().find(|y| y.0 == *c) {
                Some(y) => {
                    let _ = write!(m, " {:.0} ({:.0} / {:.0}) |", y.1, y.2, y.3);
                }
                None => {
                    let _ = write!(m, " - |");
                }
            }
        }
        let _ = writeln!(m);
    }
}

/// The Markdown report.
pub fn to_markdown(r: &CompareResult, plots: &[&str]) -> String {
    let s = summarize(r);
    let mut m = String::new();
    let get = |n: &str| s.iter().find(|x| x.server == n);
    let _ = writeln!(
        m,
        "# Lode beside Knot DNS, NSD, BIND 9 and PowerDNS — {} ENUM records\n",
        r.records
    );
    let _ = writeln!(
        m,
        "Written by `lode-bench compare`. Medians over runs; servers ran interleaved (A B C … A B C …), \
         the server pinned to one CPU and the tester to another. A zero-loss rate is the highest \
         rate at which every query got a valid reply (QR, ID, question, expected RCODE) within the \
         timeout (RFC 8219 §9 binary search, short steps). Memory per record is (resident memory \
         with the set − with a {}-record zone) / records; resident = RSS, or PSS summed over the \
         processes for a server that forks (NSD), read 0.5 s after every zone answered. Load time: start → first valid answer for a name \
         in the last zone. CPU per answer: utime+stime of the server's processes during the query \
         tests ÷ valid answers. Whole comparison: {:.0} s.\n",
        r.tiny_records, r.wall_secs
    );
    if let Some(section) = metrics_markdown(r) {
        m.push_str(&section);
    }
    let _ = writeln!(m, "## The tester's ceiling\n");
    match &r.echo {
        Some(e) => {
            let _ = writeln!(
                m,
                "Against `lode-bench echo` (returns every query with QR set, on the server's CPU): \
                 our tester's zero-loss rate **{} q/s**{}{}.",
                e.rate,
                if e.hit_ceiling { " (the search's upper bound passed)" } else { "" },
                if e.tester_limited { ", limited by the tester itself" } else { "" }
            );
        }
        None if s.iter().any(|x| x.software == "echo") => {
            let _ = writeln!(
                m,
                "The echo runs in the rounds like a server: see its rows below (its searches \
                 go up to twice the servers' upper bound)."
            );
        }
        None => {
            let _ = writeln!(m, "Not measured.");
        }
    }
    if let Some(d) = &r.dnsperf {
        let _ = writeln!(
            m,
            "dnsperf (1 thread, pinned likewise) against the same echo: zero-loss rate (`-Q` \
             search) **{} q/s**, unlimited throughput {:.0} q/s.",
            d.zero_loss_rate, d.max_qps
        );
    }
    let _ = writeln!(
        m,
        "\nA server whose rate is near these figures was measured at the tester's limit, not its own.\n"
    );
    m.push_str(&super::targets::markdown(r, &s));
    let _ = writeln!(m, "## Results\n");
    let _ = writeln!(
        m,
        "| server | runs (disturbed) | zero-loss existing q/s | zero-loss non-existing q/s | load s | memory MiB | tiny MiB | bytes/record | CPU µs/answer | RcvbufErrors |"
    );
    let _ = writeln!(m, "|---|---|---|---|---|---|---|---|---|---|");
    for x in &s {
        let queried = |v: String| if x.memory_only() { "-".into() } else { v };
        let server = |v: String| if x.software == "echo" { "-".into() } else { v };
        let _ = writeln!(
            m,
            "| {}{} | {} ({}) | {} | {} | {} | {} | {} | {} | {} | {} |",
            x.server,
            if x.tester_limited { " †" } else { "" },
            x.runs,
            x.disturbed,
            queried(format!("{:.0}", x.existing)),
            queried(format!("{:.0}", x.nxdomain)),
            server(format!("{:.2}", x.load_secs)),
            server(mib(x.memory)),
            server(mib(x.tiny_memory)),
            server(format!("{:.1}", x.bytes_per_record)),
            queried(format!("{:.2}", x.cpu_us_per_answer)),
            x.rcvbuf_errors
        );
    }
    let _ = writeln!(
        m,
        "\nRcvbufErrors: the machine's UDP receive-buffer overflows during a server's runs \
         (`/proc/net/snmp`), the overload steps of the searches included — expected above the \
         zero-loss rate, mostly in the server's socket."
    );
    if s.iter().any(|x| x.tester_limited) {
        let _ = writeln!(
            m,
            "\n† some search was limited by the tester (its CPU near 100 % or behind schedule at the first failing step)."
        );
    }
    let _ = writeln!(m, "\n## Ratios\n");
    let _ = writeln!(m, "| metric | Lode/Knot | Lode/NSD |");
    let _ = writeln!(m, "|---|---|---|");
    for (name, f, higher) in METRICS {
        let v = |n: &str| get(n).map(f);
        let _ = writeln!(
            m,
            "| {name} ({} is better) | {} | {} |",
            if higher { "higher" } else { "lower" },
            ratio(v("lode"), v("knot")),
            ratio(v("lode"), v("nsd"))
        );
    }
    let mut counts: Vec<usize> = s
        .iter()
        .flat_map(|x| x.clients.iter().map(|c| c.0))
        .collect();
    counts.sort_unstable();
    counts.dedup();
    if !counts.is_empty() {
        clients_table(&mut m, &s, &counts);
    }
    let _ = writeln!(m, "\n## Runs\n");
    let _ = writeln!(m, "| run | server | attempt | existing | non-existing | load s | steal % | other load % | RcvbufErrors | disturbed |");
    let _ = writeln!(m, "|---|---|---|---|---|---|---|---|---|---|");
    for x in &r.runs {
        let _ = writeln!(
            m,
            "| {} | {} | {} | {}{} | {}{} | {:.2} | {:.1} | {:.1} | {} | {} |",
            x.run,
            x.server,
            x.attempt,
            x.existing.rate,
            if x.existing.tester_limited {
                " †"
            } else {
                ""
            },
            x.nxdomain.rate,
            if x.nxdomain.tester_limited {
                " †"
            } else {
                ""
            },
            x.load_secs,
            x.steal * 100.0,
            x.other_load * 100.0,
            x.rcvbuf_errors,
            if x.disturbed { "yes" } else { "no" }
        );
    }
    let _ = writeln!(m, "\n## Plots\n");
    if plots.is_empty() {
        let _ = writeln!(m, "None drawn (see the notes).\n");
    } else {
        let _ = writeln!(
            m,
            "Medians; with several runs a whisker spans the lowest to the highest run; † \
             a search limited by the tester.\n"
        );
    }
    for p in plots {
        let _ = writeln!(m, "![{p}]({p})\n");
    }
    m.push_str(&super::fairness::markdown(&r.runs, &r.buffer_setup));
    if let Some(p) = &r.provenance {
        m.push_str(&p.to_markdown());
    }
    let _ = writeln!(m, "## Settings\n");
    for (k, v) in &r.settings {
        let _ = writeln!(m, "- {k}: {}", super::settings::show(v));
    }
    if !r.notes.is_empty() {
        let _ = writeln!(m, "\n## Notes\n");
        for n in &r.notes {
            let _ = writeln!(m, "- {n}");
        }
    }
    m
}

/// Writes report.json, report.md and the plots into `dir`.
pub fn write(dir: &Path, r: &CompareResult) -> Result<(), CompareError> {
    std::fs::create_dir_all(dir).map_err(|e| CompareError::io(dir, e))?;
    let mut notes = Vec::new();
    let plots = match plots::plot_all(dir, r) {
        Ok(p) => p,
        Err(e) => {
            notes.push(format!("plots not drawn: {e}"));
            Vec::new()
        }
    };
    let mut r = r.clone();
    r.notes.extend(notes);
    let json = serde_json::to_string_pretty(&to_json(&r))
        .map_err(|e| CompareError::Config(format!("JSON: {e}")))?;
    let p = dir.join("report.json");
    std::fs::write(&p, json + "\n").map_err(|e| CompareError::io(&p, e))?;
    let p = dir.join("report.md");
    std::fs::write(&p, to_markdown(&r, &plots)).map_err(|e| CompareError::io(&p, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::ClientStep;
    use crate::compare::sys::Memory;
    use crate::compare::{DnsperfOutcome, FixedStep};

    fn run(server: &str, run: usize, attempt: usize, existing: u64, mem: u64) -> RunResult {
        RunResult {
            server: server.into(),
            run,
            attempt,
            load_secs: 2.0 * run as f64,
            memory: Memory {
                rss: mem,
                pss: mem / 2,
                processes: if server == "nsd" { 3 } else { 1 },
            },
            existing: RateOutcome {
                rate: existing,
                steps: vec![(existing, true, existing, existing, 0.5)],
                ..RateOutcome::default()
            },
            nxdomain: RateOutcome {
                rate: existing / 2,
                ..RateOutcome::default()
            },
            clients: vec![ClientStep {
                clients: 2,
                answered: 100,
                qps: existing as f64 / 4.0,
                latency_us: [100.0, 150.0, 200.0, 300.0],
                ..ClientStep::default()
            }],
            test_cpu_secs: 1.0,
            answers: 1_000_000,
            disturbed: attempt == 1 && run == 2,
            fixed: vec![FixedStep {
                query: QueryKind::NxDomain,
                rate: 50_000,
                sent: 250_000,
                valid: 250_000 - run as u64,
                cpu_secs: 1.0 + run as f64,
                tester_ok: true,
            }],
            ..RunResult::default()
        }
    }

    pub(super) fn synthetic() -> CompareResult {
        CompareResult {
            settings: vec![("records".into(), json!(1000))],
            records: 1000,
            tiny_records: 10,
            echo: Some(RateOutcome {
                rate: 300_000,
                ..RateOutcome::default()
            }),
            dnsperf: Some(DnsperfOutcome {
                zero_loss_rate: 150_000,
                max_qps: 170_000.0,
            }),
            tiny_memory: vec![
                (
                    "lode".into(),
                    Memory {
                        rss: 1_000_000,
                        pss: 900_000,
                        processes: 1,
                    },
                ),
                (
                    "knot".into(),
                    Memory {
                        rss: 2_000_000,
                        pss: 1_500_000,
                        processes: 1,
                    },
                ),
                (
                    "nsd".into(),
                    Memory {
                        rss: 3_000_000,
                        pss: 1_000_000,
                        processes: 3,
                    },
                ),
            ],
            runs: vec![
                run("lode", 1, 1, 100_000, 11_000_000),
                run("knot", 1, 1, 50_000, 22_000_000),
                run("nsd", 1, 1, 40_000, 20_000_000),
                run("lode", 2, 1, 10, 11_000_000),
                run("lode", 2, 2, 120_000, 13_000_000),
                run("knot", 2, 1, 5, 22_000_000),
                run("knot", 2, 2, 60_000, 22_000_000),
                run("nsd", 2, 1, 40_000, 20_000_000),
                run("nsd", 2, 2, 50_000, 20_000_000),
            ],
            notes: vec!["bind: skipped".into()],
            wall_secs: 12.0,
            cpu_rate: 50_000,
            cpu_step_secs: 5.0,
            metrics: Vec::new(),
            provenance: Some(crate::provenance::Provenance::collect(None, &[])),
            buffer_setup: "socket buffers: as in the test".into(),
        }
    }

    /// No figure of report.json is a string; the provenance, settings and
    /// conditions are there as numbers.
    #[test]
    fn json_numbers_are_numbers() {
        let mut r = synthetic();
        r.settings = crate::compare::settings::settings(&crate::compare::tests::config());
        r.runs[0].conditions = Some(crate::compare::fairness::Conditions {
            workers: 1,
            rcvbuf: vec![4 << 20],
            cpus: vec!["0".into()],
            ..Default::default()
        });
        let j = to_json(&r);
        let found = crate::provenance::numeric_strings(&j);
        assert!(found.is_empty(), "numbers as strings: {found:?}");
        assert_eq!(j["settings"]["records"], 500_000);
        assert_eq!(j["settings"]["clients"], json!([]));
        assert!(j["provenance"]["machine"]["cores"].is_u64());
        assert_eq!(j["runs"][0]["conditions"]["rcvbuf_bytes"][0], 4 << 20);
        assert!(j["summary"][0]["ranges"]["zero_loss_existing"][0].is_f64());
    }

    #[test]
    fn summaries_take_medians_of_kept_runs() {
        let s = summarize(&synthetic());
        assert_eq!(s.len(), 3);
        let lode = &s[0];
        assert_eq!(lode.server, "lode");
        assert_eq!(lode.runs, 2, "the disturbed attempt was redone");
        assert_eq!(lode.existing, 110_000.0);
        assert_eq!(lode.memory, 12_000_000.0);
        assert_eq!(lode.bytes_per_record, (12_000_000.0 - 1_000_000.0) / 1000.0);
        assert_eq!(lode.cpu_us_per_answer, 1.0);
        assert_eq!(lode.clients, vec![(2, 27_500.0, 100.0, 200.0)]);
        // Runs 1 and 2 (attempt 2): 2 s and 3 s of CPU over ~250k answers.
        let nx = lode.fixed_us(QueryKind::NxDomain).expect("measured");
        assert!((nx - 2.5e6 / 249_998.5).abs() < 1e-3, "{nx}");
        assert_eq!(lode.fixed_us(QueryKind::Existing), None);
        assert_eq!(lode.fixed[0].2, 249_998.0 / 250_000.0, "lowest answered");
        let nsd = &s[2];
        assert_eq!(nsd.memory, 10_000_000.0, "PSS for a forking server");
        assert_eq!(nsd.tiny_memory, 1_000_000.0);
        assert_eq!(nsd.existing, 45_000.0);
    }

    #[test]
    fn json_and_markdown() {
        let r = synthetic();
        let j = to_json(&r);
        assert_eq!(j["records"], 1000);
        assert_eq!(j["summary"][0]["server"], "lode");
        assert_eq!(j["summary"][1]["zero_loss_existing"], 55_000.0);
        assert_eq!(j["runs"].as_array().map(Vec::len), Some(9));
        assert_eq!(j["runs"][3]["disturbed"], true);
        let ratio = j["ratios"][0]["lode_over_knot"].as_f64().expect("ratio");
        assert!((ratio - 110_000.0 / 55_000.0).abs() < 1e-9);
        assert_eq!(j["ceiling"]["dnsperf_vs_echo"]["zero_loss_rate"], 150_000);
        assert_eq!(j["notes"][0], "bind: skipped");

        let md = to_markdown(&r, &["rate.png"]);
        assert!(md.contains("| lode | 2 (0) | 110000 | 55000 |"), "{md}");
        assert!(
            md.contains("| zero-loss rate, existing (q/s) (higher is better) | 2.00 | 2.44 |"),
            "{md}"
        );
        assert!(md.contains("our tester's zero-loss rate **300000 q/s**"));
        assert!(md.contains("**150000 q/s**"));
        assert!(md.contains("![rate.png](rate.png)"));
        assert!(
            md.contains("## Provenance") && md.contains("## Conditions"),
            "{md}"
        );
        assert!(md.contains("- records: 1000"), "{md}");
        assert!(to_markdown(&r, &[]).contains("## Plots\n\nNone drawn"));
        assert!(md.contains("| 2 | knot | 1 | 5 |"));
    }

    #[test]
    fn writes_the_folder() {
        let dir = std::env::temp_dir().join(format!("lode-bench-report-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write(&dir, &synthetic()).expect("write");
        let json: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("report.json")).expect("json file"),
        )
        .expect("valid JSON");
        assert_eq!(json["summary"].as_array().map(Vec::len), Some(3));
        assert!(std::fs::read_to_string(dir.join("report.md"))
            .expect("md")
            .starts_with("# Lode beside"));
        if Path::new(FONT).exists() {
            for p in ["rate.png", "clients.png", "memory.png", "loadtime.png"] {
                let bytes = std::fs::read(dir.join(p)).expect("png");
                assert!(bytes.starts_with(b"\x89PNG"), "{p}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
