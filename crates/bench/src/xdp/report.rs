//! The XDP benchmark's report: medians per server, the ratios of Lode over
//! XDP to Knot over XDP, to the echo and to Lode's own socket path, each
//! goal met or missed; Markdown and JSON (numbers as numbers), with the
//! provenance block of every report.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{json, Value};

use super::load::{Outcome, Tool};
use super::{per_answer_us, ramp, ServerResult, Split, XdpConfig, KINDS};
use crate::compare::fairness::Fairness;

/// A number for a table (`–` when absent).
pub fn num(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(x) if x.abs() >= 100.0 => format!("{x:.0}"),
        Some(x) if x.abs() >= 10.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.2}"),
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    crate::stats::median(&v)
}

impl ServerResult {
    /// Median CPU 0 µs per answer of `tool` on `kind`.
    pub fn cpu0_us(&self, tool: Tool, kind: &str) -> Option<f64> {
        median(
            self.cpu
                .iter()
                .filter(|c| c.tool == tool && c.kind == kind)
                .filter_map(|c| c.cpu0_us())
                .collect(),
        )
    }

    /// Median server-task µs per answer of `tool` on `kind`.
    pub fn tasks_us(&self, tool: Tool, kind: &str) -> Option<f64> {
        median(
            self.cpu
                .iter()
                .filter(|c| c.tool == tool && c.kind == kind)
                .filter_map(|c| c.tasks_us())
                .collect(),
        )
    }

    /// Median share answered of the CPU runs of `tool` on `kind`.
    pub fn answered(&self, tool: Tool, kind: &str) -> Option<f64> {
        median(
            self.cpu
                .iter()
                .filter(|c| c.tool == tool && c.kind == kind && c.outcome.sent > 0)
                .map(|c| c.outcome.answers as f64 / c.outcome.sent as f64)
                .collect(),
        )
    }

    /// Answers/s at saturation: the median over the rounds of each peak
    /// search's most answers/s.
    pub fn peak(&self) -> Option<f64> {
        median(self.peak.iter().filter_map(|s| ramp::peak(s)).collect())
    }

    /// The offered rate of each round's peak, median.
    pub fn peak_offered(&self) -> Option<f64> {
        median(
            self.peak
                .iter()
                .filter_map(|steps| {
                    let best = ramp::peak(steps)?;
                    let s = steps.iter().find(|s| s.outcome.answers_per_sec() == best)?;
                    Some(s.offered as f64)
                })
                .collect(),
        )
    }

    /// The capacity's bounds from the peak searches (medians over the
    /// rounds): the highest rate all answered (0 if none) and the lowest
    /// above it that was not (0 if none).
    pub fn capacity_bounds(&self) -> (f64, f64) {
        let (mut lo, mut hi) = (Vec::new(), Vec::new());
        for steps in &self.peak {
            let (l, h) = ramp::capacity_bounds(steps);
            lo.push(l.unwrap_or(0) as f64);
            hi.extend(h.map(|h| h as f64));
        }
        (median(lo).unwrap_or(0.0), median(hi).unwrap_or(0.0))
    }

    /// Median answers/s under the flood.
    pub fn flood(&self) -> Option<f64> {
        median(self.flood.iter().map(|o| o.answers_per_sec()).collect())
    }

    /// The profile's rows: the CPU runs with kxdpgun, then each rate of the
    /// peak searches (existing names) — a label, how many runs, their medians.
    pub fn profile(&self) -> Vec<(String, usize, Profile)> {
        let mut rows = Vec::new();
        for (kind, _) in KINDS {
            let runs: Vec<(Outcome, Split)> = self
                .cpu
                .iter()
                .filter(|c| c.tool == Tool::Kxdpgun && c.kind == kind)
                .map(|c| (c.outcome, c.split))
                .collect();
            if !runs.is_empty() {
                rows.push((format!("CPU runs, {kind}"), runs.len(), Profile::of(&runs)));
            }
        }
        let mut offered: Vec<u64> = self.rates.iter().map(|r| r.offered).collect();
        offered.sort_unstable();
        offered.dedup();
        for rate in offered {
            let runs: Vec<(Outcome, Split)> = self
                .rates
                .iter()
                .filter(|r| r.offered == rate)
                .map(|r| (r.outcome, r.split))
                .collect();
            rows.push((format!("{rate} q/s"), runs.len(), Profile::of(&runs)));
        }
        rows
    }

    /// Answers/s at `factor` × capacity, over the capacity.
    pub fn overload_share(&self, factor: f64) -> Option<f64> {
        let cap = self.capacity?;
        let o = self.overload.iter().find(|o| o.factor == factor)?;
        Some(o.outcome.answers_per_sec() / cap)
    }
}

/// Medians of profiled runs: answers/s; per answer, µs, CPU 0, the server's
/// threads, its end's NAPI thread and the rest of CPU 0 (interrupts and
/// softirq outside the NAPI thread, the idle loop's exits, the scheduler);
/// answers per wake-up of the server's threads.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Profile {
    /// Answers per second.
    pub answers_per_sec: Option<f64>,
    /// CPU 0's busy time per answer.
    pub cpu0_us: Option<f64>,
    /// The server's threads' time per answer.
    pub server_us: Option<f64>,
    /// The NAPI thread's time per answer.
    pub napi_us: Option<f64>,
    /// CPU 0's busy time in neither, per answer.
    pub rest_us: Option<f64>,
    /// Answers per wake-up of the server's threads.
    pub per_wakeup: Option<f64>,
}

impl Profile {
    fn of(runs: &[(Outcome, Split)]) -> Profile {
        let col = |f: &dyn Fn(&Outcome, &Split) -> Option<f64>| {
            median(runs.iter().filter_map(|(o, s)| f(o, s)).collect())
        };
        Profile {
            answers_per_sec: col(&|o, _| Some(o.answers_per_sec())),
            cpu0_us: col(&|o, s| per_answer_us(o, s.cpu0_ns)),
            server_us: col(&|o, s| per_answer_us(o, s.server_ns)),
            napi_us: col(&|o, s| per_answer_us(o, s.napi_ns)),
            rest_us: col(&|o, s| per_answer_us(o, s.cpu0_ns - s.tasks_ns())),
            per_wakeup: col(&|o, s| {
                (s.server_runs > 0.0).then(|| o.answers as f64 / s.server_runs)
            }),
        }
    }
}

/// One goal: a ratio and its bound.
#[derive(Debug, Clone, PartialEq)]
pub struct Goal {
    /// What is compared.
    pub what: String,
    /// The measured ratio (None: a side is missing).
    pub value: Option<f64>,
    /// The bound.
    pub bound: f64,
    /// `≤` (true) or `≥` (false).
    pub at_most: bool,
}

impl Goal {
    /// Met, missed, or not measured.
    pub fn verdict(&self) -> &'static str {
        match self.value {
            None => "not measured",
            Some(v) if (self.at_most && v <= self.bound) || (!self.at_most && v >= self.bound) => {
                "met"
            }
            Some(_) => "missed",
        }
    }
}

/// Everything the report is made of.
#[derive(Debug)]
pub struct Report<'a> {
    /// The configuration.
    pub cfg: &'a XdpConfig,
    /// Per server.
    pub results: &'a [ServerResult],
    /// Provenance and socket buffer set-up.
    pub fairness: &'a Fairness,
    /// Wall time of the measurements.
    pub elapsed: Duration,
    /// Whether a signal cut the run short.
    pub interrupted: bool,
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

impl Report<'_> {
    fn get(&self, name: &str) -> Option<&ServerResult> {
        self.results.iter().find(|r| r.server == name)
    }

    fn tools(&self) -> Vec<Tool> {
        let mut t = vec![Tool::Kxdpgun];
        if self.cfg.dnsperf {
            t.push(Tool::Dnsperf);
        }
        t
    }

    /// The goals, each with its measured ratio.
    pub fn goals(&self) -> Vec<Goal> {
        let lode = self.get("lode-xdp");
        let mut g = Vec::new();
        // CPU 0's busy time, as the goals are stated; the server's own tasks
        // beside it (the same cost, without other work that ran on CPU 0).
        type Metric = fn(&ServerResult, Tool, &str) -> Option<f64>;
        let metrics: [(&str, Metric); 2] = [
            ("CPU 0", ServerResult::cpu0_us),
            ("server tasks", ServerResult::tasks_us),
        ];
        for (metric, f) in metrics {
            for tool in self.tools() {
                for (kind, _) in KINDS {
                    let of = |name: &str| self.get(name).and_then(|r| f(r, tool, kind));
                    let l = lode.and_then(|r| f(r, tool, kind));
                    for (other, bound) in [("knot-xdp", 0.8), ("echo-xdp", 1.3)] {
                        g.push(Goal {
                            what: format!(
                                "{metric} per answer, {kind}, {}: lode-xdp ÷ {other}",
                                tool.name()
                            ),
                            value: ratio(l, of(other)),
                            bound,
                            at_most: true,
                        });
                    }
                }
            }
        }
        let sat = |name: &str| self.get(name).and_then(ServerResult::peak);
        g.push(Goal {
            what: "answers/s at saturation: lode-xdp ÷ knot-xdp".into(),
            value: ratio(sat("lode-xdp"), sat("knot-xdp")),
            bound: 1.25,
            at_most: false,
        });
        g.push(Goal {
            what: "answers/s at saturation: lode-xdp ÷ lode-udp".into(),
            value: ratio(sat("lode-xdp"), sat("lode-udp")),
            bound: 3.0,
            at_most: false,
        });
        if self.cfg.overload {
            for f in [2.0, 5.0] {
                g.push(Goal {
                    what: format!("lode-xdp answers/s offered {f}× capacity ÷ capacity"),
                    value: lode.and_then(|r| r.overload_share(f)),
                    bound: 0.95,
                    at_most: false,
                });
            }
        }
        g
    }

    /// report.md.
    pub fn markdown(&self) -> String {
        let c = self.cfg;
        let mut m = String::from("# DNS over XDP: Lode, Knot DNS, NSD and the XDP echo\n\n");
        let _ = writeln!(
            m,
            "{} ENUM records in {} zones; veth pair between two network namespaces; server on \
             CPU {} (one worker, nice {}; its end's NAPI thread there, nice {}), loaders on CPU {}; \
             {} round(s); CPU runs at {} q/s for {} s; peak search, flood (kxdpgun at {} q/s) \
             and overload runs of {} s; {:.0} s in all{}.\n",
            c.records,
            c.zones,
            c.server_cpu,
            c.server_nice,
            c.napi_nice,
            c.client_cpu,
            c.rounds,
            c.cpu_rate,
            c.cpu_secs,
            c.flood_rate,
            c.step_secs,
            self.elapsed.as_secs_f64(),
            if self.interrupted {
                " — interrupted, partial"
            } else {
                ""
            }
        );
        m.push_str(
            "CPU 0 per answer: CPU 0's busy time — the wall time less the idle and iowait \
             of /proc/stat's cpu0, which a tickless kernel measures exactly (its busy fields \
             count ticks, which miss the short bursts of a CPU woken per packet) — sampled \
             every 100 ms, over the intervals in which the server's tasks ran (≥ 2 %), less \
             CPU 0's busy time while the server idled (two seconds once its start's work \
             was done), ÷ \
             answers: it counts whatever else ran on CPU 0, so it needs an otherwise idle \
             machine (see the background column). Server tasks: the server's threads and its end's NAPI \
             thread (schedstat), ÷ answers — unaffected by other work on CPU 0. Medians over \
             the rounds.\n\n",
        );
        m.push_str("## Per server\n\n| server | loader | kind | answered | CPU 0 µs/answer | server tasks µs/answer |\n|---|---|---|---:|---:|---:|\n");
        for r in self.results {
            for tool in self.tools() {
                for (kind, _) in KINDS {
                    let _ = writeln!(
                        m,
                        "| {} | {} | {kind} | {} | {} | {} |",
                        r.server,
                        tool.name(),
                        r.answered(tool, kind)
                            .map_or("–".into(), |a| format!("{:.1} %", a * 100.0)),
                        num(r.cpu0_us(tool, kind)),
                        num(r.tasks_us(tool, kind))
                    );
                }
            }
        }
        m.push_str(
            "\n## Saturation (kxdpgun, existing names)\n\nPeak: the most answers/s at any offered \
             rate (rates doubled from the CPU runs' while the answers/s grow by 5 %, then \
             raised by 15 % from the doubled rate below the best until the answers/s stop \
             growing). Flood: kxdpgun as fast as it sends; flood ÷ \
             peak below 1 is a server answering less when offered more.\n\n\
             | server | peak answers/s | offered at peak q/s | flood answers/s | flood sent/s | flood ÷ peak | background CPU 0 ms/s |",
        );
        if c.overload {
            m.push_str(" capacity q/s | 2× answered ÷ capacity | 5× answered ÷ capacity |");
        }
        m.push_str("\n|---|---:|---:|---:|---:|---:|---:|");
        if c.overload {
            m.push_str("---:|---:|---:|");
        }
        m.push('\n');
        for r in self.results {
            let sent = median(r.flood.iter().map(|o| o.sent_per_sec()).collect());
            let bg = median(r.background.clone()).map(|b| b / 1e6);
            let _ = write!(
                m,
                "| {} | {} | {} | {} | {} | {} | {} |",
                r.server,
                num(r.peak()),
                num(r.peak_offered()),
                num(r.flood()),
                num(sent),
                num(ratio(r.flood(), r.peak())),
                num(bg)
            );
            if c.overload {
                let _ = write!(
                    m,
                    " {} | {} | {} |",
                    num(r.capacity),
                    num(r.overload_share(2.0)),
                    num(r.overload_share(5.0))
                );
            }
            m.push('\n');
        }
        m.push_str("\n## Goals\n\n| goal | measured | bound | verdict |\n|---|---:|---:|---|\n");
        for g in self.goals() {
            let _ = writeln!(
                m,
                "| {} | {} | {} {} | {} |",
                g.what,
                num(g.value),
                if g.at_most { "≤" } else { "≥" },
                g.bound,
                g.verdict()
            );
        }
        m.push_str(
            "\n## Where CPU 0 goes: a profile by thread\n\nPer answer, µs: CPU 0's busy time (as \
             above), the server's own threads, its end's NAPI thread (receiving, the XDP \
             program, the redirect into the socket's ring — the echo's whole work), and the \
             rest of CPU 0 (interrupts and softirq outside the NAPI thread, the idle loop's \
             exits, the scheduler: what a packet costs before any thread runs); answers per \
             wake-up of the server's threads (its batch size). Schedstat per thread, not \
             perf's sampling. kxdpgun: the CPU runs, then every rate of the peak searches \
             (existing names; medians over the rounds that offered it).\n\n\
             | server | run | runs | answers/s | CPU 0 | server threads | NAPI thread | rest | answers per wake-up |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for r in self.results {
            for (label, n, p) in r.profile() {
                let _ = writeln!(
                    m,
                    "| {} | {label} | {n} | {} | {} | {} | {} | {} | {} |",
                    r.server,
                    num(p.answers_per_sec),
                    num(p.cpu0_us),
                    num(p.server_us),
                    num(p.napi_us),
                    num(p.rest_us),
                    num(p.per_wakeup)
                );
            }
        }
        let errors: Vec<String> = self
            .results
            .iter()
            .flat_map(|r| r.errors.iter().map(move |e| format!("- {}: {e}", r.server)))
            .collect();
        if !errors.is_empty() {
            m.push_str("\n## Errors\n\n");
            for e in errors {
                m.push_str(&e.replace('\n', " "));
                m.push('\n');
            }
        }
        let _ = writeln!(m, "\n## Conditions\n\n- {}", self.fairness.setup);
        if let Some(p) = &self.fairness.provenance {
            m.push('\n');
            m.push_str(&p.to_markdown());
        }
        m
    }

    /// report.json.
    pub fn json(&self) -> Value {
        let c = self.cfg;
        let servers: serde_json::Map<String, Value> = self
            .results
            .iter()
            .map(|r| {
                let mut cpu = serde_json::Map::new();
                for tool in self.tools() {
                    for (kind, _) in KINDS {
                        cpu.insert(
                            format!("{}_{kind}", tool.name()),
                            json!({
                                "answered": r.answered(tool, kind),
                                "cpu0_us_per_answer": r.cpu0_us(tool, kind),
                                "server_tasks_us_per_answer": r.tasks_us(tool, kind),
                            }),
                        );
                    }
                }
                let runs: Vec<Value> = r
                    .cpu
                    .iter()
                    .map(|x| {
                        json!({"loader": x.tool.name(), "kind": x.kind, "sent": x.outcome.sent,
                        "answers": x.outcome.answers, "secs": x.outcome.secs,
                        "cpu0_ns": x.split.cpu0_ns, "cpu0_raw_ns": x.split.cpu0_raw_ns,
                        "server_tasks_ns": x.split.tasks_ns(), "server_threads_ns": x.split.server_ns,
                        "napi_ns": x.split.napi_ns, "server_wakeups": x.split.server_runs})
                    })
                    .collect();
                let v = json!({
                    "cpu": cpu,
                    "cpu_runs": runs,
                    "background_cpu0_ns_per_s": r.background,
                    "peak_answers_per_s": r.peak(),
                    "peak_offered_qps": r.peak_offered(),
                    "peak_searches": r.peak.iter().map(|steps| steps.iter().map(|s| json!({"offered": s.offered, "sent": s.outcome.sent, "answers": s.outcome.answers, "secs": s.outcome.secs})).collect::<Vec<_>>()).collect::<Vec<_>>(),
                    "rate_runs": r.rates.iter().map(|x| json!({"offered": x.offered, "sent": x.outcome.sent,
                        "answers": x.outcome.answers, "secs": x.outcome.secs, "cpu0_ns": x.split.cpu0_ns,
                        "server_threads_ns": x.split.server_ns, "napi_ns": x.split.napi_ns,
                        "server_wakeups": x.split.server_runs})).collect::<Vec<_>>(),
                    "flood_answers_per_s": r.flood(),
                    "flood_runs": r.flood.iter().map(|o| json!({"sent": o.sent, "answers": o.answers, "secs": o.secs})).collect::<Vec<_>>(),
                    "capacity_qps": r.capacity,
                    "overload": r.overload.iter().map(|o| json!({"factor": o.factor, "sent_per_s": o.outcome.sent_per_sec(), "answers_per_s": o.outcome.answers_per_sec(), "share_of_capacity": r.overload_share(o.factor)})).collect::<Vec<_>>(),
                    "errors": r.errors,
                });
                (r.server.clone(), v)
            })
            .collect();
        let goals: Vec<Value> = self
            .goals()
            .iter()
            .map(|g| {
                json!({"goal": g.what, "value": g.value, "bound": g.bound,
                "at_most": g.at_most, "verdict": g.verdict()})
            })
            .collect();
        let mut j = json!({
            "benchmark": "xdp",
            "records": c.records,
            "zones": c.zones,
            "rounds": c.rounds,
            "cpu_rate_qps": c.cpu_rate,
            "cpu_secs": c.cpu_secs,
            "flood_rate_qps": c.flood_rate,
            "step_secs": c.step_secs,
            "server_cpu": c.server_cpu,
            "client_cpu": c.client_cpu,
            "napi_nice": c.napi_nice,
            "server_nice": c.server_nice,
            "elapsed_secs": self.elapsed.as_secs_f64(),
            "interrupted": self.interrupted,
            "servers": servers,
            "goals": goals,
        });
        if let Value::Object(o) = &mut j {
            o.extend(self.fairness.json());
        }
        j
    }
}

#[cfg(test)]
mod tests {
    use super::super::load::Outcome;
    use super::super::{CpuRun, OverloadRun, RateRun, Server, Split, Step};
    use super::*;

    fn cfg() -> XdpConfig {
        XdpConfig {
            servers: Server::ALL.to_vec(),
            records: 1000,
            zones: 2,
            out: "/o".into(),
            work: "/w".into(),
            lode: "/l".into(),
            bench: "/b".into(),
            rounds: 1,
            cpu_rate: 1000,
            cpu_secs: 1,
            flood_rate: 10_000,
            step_secs: 1,
            dnsperf: false,
            overload: true,
            search_steps: 2,
            socket_buffer: None,
            load_limit: Duration::from_secs(1),
            server_cpu: 0,
            client_cpu: 1,
            napi_nice: 0,
            server_nice: 0,
        }
    }

    fn result(name: &str, us: f64, sat: u64) -> ServerResult {
        let run = |kind| CpuRun {
            tool: Tool::Kxdpgun,
            kind,
            outcome: Outcome {
                sent: 1000,
                answers: 1000,
                secs: 1.0,
            },
            split: Split {
                cpu0_ns: us * 1e6,
                cpu0_raw_ns: us * 1e6,
                server_ns: us * 1e6 * 0.75,
                napi_ns: us * 1e6 * 0.25,
                server_runs: 250.0,
            },
        };
        ServerResult {
            server: name.into(),
            cpu: vec![run("existing"), run("nxdomain")],
            peak: vec![vec![
                Step {
                    offered: sat,
                    outcome: Outcome {
                        sent: sat,
                        answers: sat,
                        secs: 1.0,
                    },
                },
                Step {
                    offered: sat * 2,
                    outcome: Outcome {
                        sent: sat * 2,
                        answers: sat / 2,
                        secs: 1.0,
                    },
                },
            ]],
            flood: vec![Outcome {
                sent: sat * 4,
                answers: sat / 4,
                secs: 1.0,
            }],
            capacity: Some(sat as f64),
            overload: vec![
                OverloadRun {
                    factor: 2.0,
                    outcome: Outcome {
                        sent: sat * 2,
                        answers: sat,
                        secs: 1.0,
                    },
                },
                OverloadRun {
                    factor: 5.0,
                    outcome: Outcome {
                        sent: sat * 5,
                        answers: sat / 2,
                        secs: 1.0,
                    },
                },
            ],
            rates: vec![RateRun {
                offered: sat,
                outcome: Outcome {
                    sent: sat,
                    answers: sat,
                    secs: 1.0,
                },
                split: Split {
                    cpu0_ns: sat as f64 * 1000.0,
                    cpu0_raw_ns: sat as f64 * 1000.0,
                    server_ns: sat as f64 * 500.0,
                    napi_ns: sat as f64 * 200.0,
                    server_runs: sat as f64 / 8.0,
                },
            }],
            ..Default::default()
        }
    }

    #[test]
    fn goals_take_the_right_ratios() {
        let cfg = cfg();
        let results = vec![
            result("lode-xdp", 1.0, 400),
            result("knot-xdp", 2.0, 300),
            result("lode-udp", 4.0, 100),
            result("echo-xdp", 0.5, 1000),
        ];
        let fairness = Fairness::default();
        let r = Report {
            cfg: &cfg,
            results: &results,
            fairness: &fairness,
            elapsed: Duration::from_secs(3),
            interrupted: false,
        };
        let g = r.goals();
        let find = |s: &str| g.iter().find(|g| g.what.contains(s)).unwrap();
        let knot = find("CPU 0 per answer, existing, kxdpgun: lode-xdp ÷ knot-xdp");
        assert_eq!((knot.value, knot.verdict()), (Some(0.5), "met"));
        let echo = find("CPU 0 per answer, existing, kxdpgun: lode-xdp ÷ echo-xdp");
        let tasks = find("server tasks per answer, existing, kxdpgun: lode-xdp ÷ echo-xdp");
        assert_eq!(tasks.value, Some(2.0));
        assert_eq!((echo.value, echo.verdict()), (Some(2.0), "missed"));
        let sat = find("saturation: lode-xdp ÷ knot-xdp");
        assert!((sat.value.unwrap() - 4.0 / 3.0).abs() < 1e-9);
        assert_eq!(sat.verdict(), "met");
        assert_eq!(find("÷ lode-udp").value, Some(4.0));
        assert_eq!(find("2× capacity").verdict(), "met");
        assert_eq!(find("5× capacity").value, Some(0.5));
        // NSD was not run: its rows show, with no numbers.
        let md = r.markdown();
        assert!(md.contains("| lode-xdp | kxdpgun | existing | 100.0 % | 1.00 | 1.00 |"));
        // The peak, not the flood, is the saturation; the flood's share beside it.
        assert!(
            md.contains("| knot-xdp | 300 | 300 | 75.0 | 1200 | 0.25 |"),
            "{md}"
        );
        assert_eq!(results[1].capacity_bounds(), (300.0, 600.0));
        // The profile: 1 µs of CPU 0 per answer at the CPU rate, three
        // quarters in the server's threads, 4 answers per wake-up; at 300 q/s
        // 1 µs, 0.5 + 0.2 in threads, 0.3 left, 8 per wake-up.
        assert!(
            md.contains(
                "| lode-xdp | CPU runs, existing | 1 | 1000 | 1.00 | 0.75 | 0.25 | 0.00 | 4.00 |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| knot-xdp | 300 q/s | 1 | 300 | 1.00 | 0.50 | 0.20 | 0.30 | 8.00 |"),
            "{md}"
        );
        let j = r.json();
        assert_eq!(
            j["servers"]["knot-xdp"]["cpu"]["kxdpgun_existing"]["cpu0_us_per_answer"],
            json!(2.0)
        );
        assert_eq!(j["goals"][0]["verdict"], json!("met"));
    }
}
