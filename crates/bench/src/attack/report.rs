//! attack.md and attack.json: three tables, each with its target and whether the
//! numbers meet it (computed here, from the numbers in the table).

use std::fmt;
use std::path::Path;

use serde_json::{json, Value};

use super::tcp::AbuseStats;
use super::{AttackError, AttackResult, CpuStep, GuardMode, OverloadRow, TcpRow};
use crate::compare::servers::Kind;
use crate::compare::CompareError;
use crate::rate::StepResult;
use crate::stats::median;

/// Table 1's target: answered at 2 × R0 ≥ this × R0.
pub const OVERLOAD_TARGET: f64 = 0.95;
/// Table 1's overload factor the target is checked at.
pub const OVERLOAD_FACTOR: f64 = 2.0;
/// Table 2's target: CPU per answer with RRL (and cookies) ≤ this × off.
pub const CPU_TARGET: f64 = 1.05;
/// Table 3's target: UDP zero-loss rate with the abuse ≥ this × without.
pub const TCP_TARGET: f64 = 0.95;
/// An overload step counts as offered at its factor when the tester sent at
/// least this fraction of the asked rate.
pub const OFFERED_ENOUGH: f64 = 0.95;

/// Whether a target is met.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Met.
    Met,
    /// Missed.
    Missed,
    /// Not measured, or not at the load the target names (why).
    Unmeasured(String),
}

impl Verdict {
    /// Met only if every verdict is; else the first not met (missed before unmeasured).
    pub fn all(v: &[Verdict]) -> Verdict {
        if v.is_empty() {
            return Verdict::Unmeasured("no data".into());
        }
        if v.contains(&Verdict::Missed) {
            return Verdict::Missed;
        }
        v.iter()
            .find(|x| **x != Verdict::Met)
            .cloned()
            .unwrap_or(Verdict::Met)
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Met => f.write_str("**met**"),
            Verdict::Missed => f.write_str("**missed**"),
            Verdict::Unmeasured(why) => write!(f, "**not measured** ({why})"),
        }
    }
}

/// `a / b`, None when `b` is 0.
pub fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

/// Table 1's verdict for one overload step of a row with zero-loss rate `r0`: the
/// answered rate ≥ [`OVERLOAD_TARGET`] × R0, provided the tester offered at least
/// [`OFFERED_ENOUGH`] of the rate asked (`factor` × R0).
pub fn overload_verdict(r0: u64, factor: f64, s: &StepResult) -> Verdict {
    if r0 == 0 {
        return Verdict::Unmeasured("R0 is 0".into());
    }
    let asked = r0 as f64 * factor;
    if s.achieved_rate < OFFERED_ENOUGH * asked {
        return Verdict::Unmeasured(format!(
            "the tester offered only {:.2} × R0",
            s.achieved_rate / r0 as f64
        ));
    }
    if s.answered_qps() >= OVERLOAD_TARGET * r0 as f64 {
        Verdict::Met
    } else {
        Verdict::Missed
    }
}

/// Medians of table 2 for one server: µs per answer per mode, in [`GuardMode::ALL`] order.
pub fn cpu_medians(steps: &[CpuStep], server: Kind) -> [Option<f64>; 3] {
    GuardMode::ALL.map(|m| {
        let mut v: Vec<f64> = steps
            .iter()
            .filter(|s| s.server == server && s.mode == m && s.step.valid > 0)
            .map(|s| s.cpu_us_per_answer())
            .collect();
        v.sort_by(f64::total_cmp);
        median(&v)
    })
}

/// Table 2's verdict for one server: both ratios to `off` ≤ [`CPU_TARGET`], and
/// the configuration really on (the cookie probe) and nothing limited (every
/// query answered).
pub fn cpu_verdict(steps: &[CpuStep], server: Kind) -> Verdict {
    let [off, rrl, both] = cpu_medians(steps, server);
    let mine: Vec<&CpuStep> = steps.iter().filter(|s| s.server == server).collect();
    if mine.is_empty() {
        return Verdict::Unmeasured("no steps".into());
    }
    let wrong_cookie = mine
        .iter()
        .any(|s| s.cookie_echoed != Some(s.mode == GuardMode::RrlCookies));
    if wrong_cookie {
        return Verdict::Unmeasured("the cookie probe did not match the configuration".into());
    }
    let lossy = mine.iter().any(|s| s.step.valid < s.step.sent);
    let (Some(off), Some(rrl), Some(both)) = (off, rrl, both) else {
        return Verdict::Unmeasured("a configuration has no answers".into());
    };
    let worst = (rrl / off).max(both / off);
    if worst <= CPU_TARGET {
        if lossy {
            Verdict::Unmeasured("queries were lost at the offered rate".into())
        } else {
            Verdict::Met
        }
    } else {
        Verdict::Missed
    }
}

/// Table 3's verdict for one row.
pub fn tcp_verdict(row: &TcpRow) -> Verdict {
    match ratio(row.with as f64, row.without as f64) {
        None => Verdict::Unmeasured("zero-loss rate without the abuse is 0".into()),
        Some(r) if r >= TCP_TARGET => Verdict::Met,
        Some(_) => Verdict::Missed,
    }
}

fn fmt_ratio(r: Option<f64>) -> String {
    r.map_or("–".into(), |r| format!("{r:.3}"))
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".into(), |v| format!("{v:.digits$}"))
}

/// The servers of `rows`, in order of appearance.
fn servers_of(kinds: impl Iterator<Item = Kind>) -> Vec<Kind> {
    let mut out = Vec::new();
    for k in kinds {
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// Table 1 in Markdown.
fn overload_md(rows: &[OverloadRow], m: &mut String) {
    m.push_str(
        "## 1. Overload, no collapse\n\n\
         Per server and query mix: R0, the zero-loss rate (binary search); then one step at \
         each overload factor × R0. *offered*: the rate the tester actually sent; *answered*: \
         valid replies within the timeout per second (offered × valid ÷ sent); *wrong*: replies \
         whose RCODE was not the one the query's kind calls for (NOERROR with an answer for a \
         good name, NXDOMAIN for a random one) — the answers' correctness under overload; \
         *unanswered*: queries with no reply at all.\n\n",
    );
    let factors: Vec<f64> = {
        let mut f: Vec<f64> = Vec::new();
        for r in rows {
            for (x, _) in &r.overload {
                if !f.contains(x) {
                    f.push(*x);
                }
            }
        }
        f
    };
    m.push_str("| server | mix | R0 q/s |");
    for f in &factors {
        m.push_str(&format!(
            " {f}×R0 offered | answered q/s | ÷ R0 | wrong | unanswered |"
        ));
    }
    m.push_str("\n|---|---|---:|");
    for _ in &factors {
        m.push_str("---:|---:|---:|---:|---:|");
    }
    m.push('\n');
    for r in rows {
        m.push_str(&format!(
            "| {} | {} | {}{} |",
            r.server,
            r.mix.name(),
            r.r0,
            if r.hit_ceiling { " (ceiling)" } else { "" }
        ));
        for f in &factors {
            match r.overload.iter().find(|(x, _)| x == f) {
                Some((_, s)) => m.push_str(&format!(
                    " {:.0} | {:.0} | {} | {} | {} |",
                    s.achieved_rate,
                    s.answered_qps(),
                    fmt_ratio(ratio(s.answered_qps(), r.r0 as f64)),
                    s.wrong,
                    s.unanswered()
                )),
                None => m.push_str(" – | – | – | – | – |"),
            }
        }
        m.push('\n');
    }
    let lode: Vec<&OverloadRow> = rows.iter().filter(|r| r.server == Kind::Lode).collect();
    let verdicts: Vec<Verdict> = lode
        .iter()
        .map(|r| {
            r.overload
                .iter()
                .find(|(f, _)| *f == OVERLOAD_FACTOR)
                .map_or(
                    Verdict::Unmeasured(format!("no {OVERLOAD_FACTOR} × R0 step")),
                    |(f, s)| overload_verdict(r.r0, *f, s),
                )
        })
        .collect();
    let detail: Vec<String> = lode
        .iter()
        .zip(&verdicts)
        .map(|(r, v)| format!("{}: {v}", r.mix.name()))
        .collect();
    m.push_str(&format!(
        "\n**Target**: Lode's answered rate at {OVERLOAD_FACTOR} × R0 ≥ {OVERLOAD_TARGET} × R0 \
         in every mix. **Met?** {} ({}).\n",
        Verdict::all(&verdicts),
        if detail.is_empty() {
            "Lode not run".to_string()
        } else {
            detail.join("; ")
        }
    ));
    let (wrong, replies) = lode
        .iter()
        .flat_map(|r| &r.overload)
        .fold((0, 0), |(w, n), (_, s)| {
            (w + s.wrong, n + s.valid + s.late + s.wrong)
        });
    let correct = if lode.is_empty() {
        Verdict::Unmeasured("Lode not run".into())
    } else if wrong == 0 {
        Verdict::Met
    } else {
        Verdict::Missed
    };
    m.push_str(&format!(
        "**Correct answers under overload** (no wrong RCODE in Lode's overload steps): \
         {correct} — {wrong} wrong of {replies} replies.\n\n"
    ));
}

/// Table 2 in Markdown.
fn cpu_md(r: &AttackResult, m: &mut String) {
    m.push_str(&format!(
        "## 2. CPU per answer with RRL and cookies\n\n\
         Each server restarted per configuration, interleaved over the rounds; at {} q/s \
         (below every server's R0) good names whose queries all carry an EDNS COOKIE option \
         with a valid RFC 9018 server cookie (made with the secret the server is given, for \
         127.0.0.1), in every configuration, so only the server's work differs. Server CPU = \
         its threads' on-CPU time (schedstat) over a step ÷ valid answers; medians over the \
         steps. *cookie echoed*: a probe's reply carried our cookie (cookies on) or not. RRL's \
         rate is high enough that nothing is limited: the check runs on every answer (with \
         cookies on a valid cookie exempts the query from RRL, as in Knot).\n\n\
         | server | off µs/answer | RRL µs/answer | RRL ÷ off | RRL + cookies µs/answer | \
         RRL + cookies ÷ off | answered | cookie echoed (off / RRL / both) |\n\
         |---|---:|---:|---:|---:|---:|---:|---|\n",
        r.cpu_rate
    ));
    let servers = servers_of(r.cpu.iter().map(|s| s.server));
    for &k in &servers {
        let [off, rrl, both] = cpu_medians(&r.cpu, k);
        let mine: Vec<&CpuStep> = r.cpu.iter().filter(|s| s.server == k).collect();
        let (valid, sent) = mine
            .iter()
            .fold((0, 0), |(v, n), s| (v + s.step.valid, n + s.step.sent));
        let echoed = GuardMode::ALL.map(|mode| {
            mine.iter()
                .find(|s| s.mode == mode)
                .map_or("–".to_string(), |s| match s.cookie_echoed {
                    Some(true) => "yes".into(),
                    Some(false) => "no".into(),
                    None => "?".into(),
                })
        });
        let div = |a: Option<f64>| match (a, off) {
            (Some(a), Some(o)) => ratio(a, o),
            _ => None,
        };
        m.push_str(&format!(
            "| {k} | {} | {} | {} | {} | {} | {} | {} |\n",
            fmt_opt(off, 2),
            fmt_opt(rrl, 2),
            fmt_ratio(div(rrl)),
            fmt_opt(both, 2),
            fmt_ratio(div(both)),
            fmt_opt(ratio(valid as f64 * 100.0, sent as f64), 2) + " %",
            echoed.join(" / ")
        ));
    }
    let lode = if servers.contains(&Kind::Lode) {
        cpu_verdict(&r.cpu, Kind::Lode)
    } else {
        Verdict::Unmeasured("Lode not run".into())
    };
    let others: Vec<String> = servers
        .iter()
        .filter(|k| **k != Kind::Lode)
        .map(|&k| format!("{k}: {}", cpu_verdict(&r.cpu, k)))
        .collect();
    m.push_str(&format!(
        "\n**Target**: Lode's CPU per answer with RRL, and with RRL + cookies, ≤ {CPU_TARGET} × \
         with both off. **Met?** {lode}.{}\n\n",
        if others.is_empty() {
            String::new()
        } else {
            format!(" For comparison, the same bound for {}.", others.join("; "))
        }
    ));
}

/// Table 3 in Markdown.
fn tcp_md(rows: &[TcpRow], m: &mut String) {
    m.push_str(
        "## 3. UDP under a TCP abuse mix\n\n\
         Per server: the zero-loss UDP rate (good names; search 0..1.25 × its table-1 R0 by \
         R0/32), without, then with the abuse running from the tester's CPU for the whole \
         search: idle connections, each attempted once (a pending one stays pending), slow \
         senders (a length prefix, then one byte a second), pipelined floods (queries back to \
         back, replies never read); slow senders and floods the server closes are reopened \
         within the connect rate. *churn*: a third search with the idle connections reopened \
         too whenever the server closes them (for information; the target uses the second). \
         The server's own TCP limits apply (Lode: tcp-max-clients 1000 by default; NSD: \
         tcp-count 10 as configured by compare; Knot: its defaults).\n\n\
         | server | R0 without | R0 with | with ÷ without | connects tried | established | \
         closed by server | open at most (idle/slow/flood) | flood MB sent | R0 with churn | \
         churn ÷ without | churn connects tried |\n\
         |---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let a = &r.abuse;
        let (churn, churn_ratio, churn_tried) = match &r.churn {
            Some((rate, _, stats)) => (
                rate.to_string(),
                fmt_ratio(ratio(*rate as f64, r.without as f64)),
                stats.attempts.to_string(),
            ),
            None => ("–".into(), "–".into(), "–".into()),
        };
        m.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {}/{}/{} | {:.1} | {churn} | {churn_ratio} | \
             {churn_tried} |\n",
            r.server,
            r.without,
            r.with,
            fmt_ratio(ratio(r.with as f64, r.without as f64)),
            a.attempts,
            a.established,
            a.closed_by_server,
            a.peak_open[0],
            a.peak_open[1],
            a.peak_open[2],
            a.flood_bytes as f64 / 1e6
        ));
    }
    let lode = rows
        .iter()
        .find(|r| r.server == Kind::Lode)
        .map_or(Verdict::Unmeasured("Lode not run".into()), tcp_verdict);
    m.push_str(&format!(
        "\n**Target**: Lode's UDP zero-loss rate under the TCP abuse ≥ {TCP_TARGET} × without. \
         **Met?** {lode}.\n\n"
    ));
}

/// The report in Markdown.
pub fn to_markdown(r: &AttackResult) -> String {
    let mut m = String::from("# Under attack: Lode, Knot DNS, NSD\n\n");
    m.push_str(&format!(
        "Written by `lode-bench attack` in {:.0} s:\n\n```sh\n{}\n```\n\n",
        r.wall_secs, r.command
    ));
    for (k, v) in &r.settings {
        m.push_str(&format!("- {k}: {v}\n"));
    }
    m.push('\n');
    if !r.overload.is_empty() {
        overload_md(&r.overload, &mut m);
    }
    if !r.cpu.is_empty() {
        cpu_md(r, &mut m);
    }
    if !r.tcp.is_empty() {
        tcp_md(&r.tcp, &mut m);
    }
    m.push_str(&r.fairness.markdown());
    if !r.notes.is_empty() {
        m.push_str("## Notes\n\n");
        for n in &r.notes {
            m.push_str(&format!("- {n}\n"));
        }
    }
    m
}

/// One step as JSON.
pub fn step_json(s: &StepResult) -> Value {
    json!({
        "rate": s.rate, "sent": s.sent, "valid": s.valid, "late": s.late, "wrong": s.wrong,
        "unanswered": s.unanswered(), "unmatched": s.unmatched, "send_errors": s.send_errors,
        "offered_qps": s.achieved_rate, "answered_qps": s.answered_qps(), "behind": s.behind,
        "latency_us": {"p50": s.latency_us[0], "p99": s.latency_us[1], "max": s.latency_us[2]},
    })
}

/// What the abuse did, as JSON.
fn abuse_json(a: &AbuseStats) -> Value {
    json!({
        "attempts": a.attempts, "established": a.established, "failed": a.failed,
        "timed_out": a.timed_out, "closed_by_server": a.closed_by_server,
        "peak_open": a.peak_open, "open_at_end": a.open_at_end, "slow_bytes": a.slow_bytes,
        "flood_bytes": a.flood_bytes, "secs": a.secs,
    })
}

/// The report as JSON: settings, every step, the verdicts; the provenance, socket
/// buffers and conditions ([`crate::compare::fairness::Fairness::json`]).
pub fn to_json(r: &AttackResult) -> Value {
    let steps = |v: &[StepResult]| v.iter().map(step_json).collect::<Vec<_>>();
    let verdict = |v: Verdict| v.to_string().replace("**", "");
    let mut doc = json!({
        "command": r.command,
        "settings": r.parameters,
        "settings_text": r.settings.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
        "wall_secs": r.wall_secs,
        "overload": r.overload.iter().map(|row| json!({
            "server": row.server.name(), "mix": row.mix.name(),
            "random_per_good": row.mix.random_per_good, "r0": row.r0,
            "hit_ceiling": row.hit_ceiling, "search": steps(&row.search),
            "overload": row.overload.iter().map(|(f, s)| json!({
                "factor": f, "step": step_json(s),
                "answered_over_r0": ratio(s.answered_qps(), row.r0 as f64),
                "verdict": verdict(overload_verdict(row.r0, *f, s)),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "cpu_rate": r.cpu_rate,
        "cpu": r.cpu.iter().map(|c| json!({
            "server": c.server.name(), "mode": c.mode.name(), "run": c.run,
            "step": step_json(&c.step), "cpu_secs": c.cpu_secs,
            "cpu_us_per_answer": c.cpu_us_per_answer(), "cookie_echoed": c.cookie_echoed,
        })).collect::<Vec<_>>(),
        "cpu_summary": servers_of(r.cpu.iter().map(|s| s.server)).iter().map(|&k| {
            let [off, rrl, both] = cpu_medians(&r.cpu, k);
            json!({"server": k.name(), "off_us": off, "rrl_us": rrl, "rrl_cookies_us": both,
                   "verdict": verdict(cpu_verdict(&r.cpu, k))})
        }).collect::<Vec<_>>(),
        "tcp": r.tcp.iter().map(|t| json!({
            "server": t.server.name(), "high": t.bounds.0, "resolution": t.bounds.1,
            "without": t.without, "with": t.with,
            "ratio": ratio(t.with as f64, t.without as f64),
            "verdict": verdict(tcp_verdict(t)),
            "steps_without": steps(&t.steps.0), "steps_with": steps(&t.steps.1),
            "abuse": abuse_json(&t.abuse),
            "churn": t.churn.as_ref().map(|(rate, st, a)| json!({
                "with": rate, "ratio": ratio(*rate as f64, t.without as f64),
                "steps": steps(st), "abuse": abuse_json(a),
            })),
        })).collect::<Vec<_>>(),
        "notes": r.notes,
    });
    if let Value::Object(o) = &mut doc {
        o.extend(r.fairness.json());
    }
    doc
}

/// Writes attack.md and attack.json into `dir`.
pub fn write(dir: &Path, r: &AttackResult) -> Result<(), AttackError> {
    let io = |p: &Path, e| AttackError::Compare(CompareError::io(p, e));
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let md = dir.join("attack.md");
    std::fs::write(&md, to_markdown(r)).map_err(|e| io(&md, e))?;
    let js = dir.join("attack.json");
    let text = serde_json::to_string_pretty(&to_json(r)).unwrap_or_default();
    std::fs::write(&js, text).map_err(|e| io(&js, e))
}

#[cfg(test)]
mod tests;
