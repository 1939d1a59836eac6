//! The figures of `lode-bench com`: each step's row, the goals, the tables
//! and the JSON (pure: tested without a server).

use serde_json::{json, Value};

use super::*;

/// One step's figures: its row in the step table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepRow {
    /// The step's name.
    pub step: String,
    /// Seconds it took (the time the row's note names).
    pub secs: f64,
    /// The Lode process's VmHWM, bytes (0: none ran).
    pub hwm: u64,
    /// Its VmRSS, bytes.
    pub rss: u64,
    /// Bytes of the scratch folder after it.
    pub disk: u64,
    /// What was measured besides.
    pub note: String,
    /// Why it failed (None: it did not).
    pub failed: Option<String>,
}

impl StepRow {
    pub(super) fn new(step: Step) -> StepRow {
        StepRow {
            step: step.name().into(),
            ..StepRow::default()
        }
    }

    /// Peak over resident (0 when no server ran).
    pub fn ratio(&self) -> f64 {
        div(self.hwm as f64, self.rss as f64)
    }

    /// Its row of the step table.
    pub fn line(&self) -> String {
        let what = match &self.failed {
            Some(e) => format!("FAILED: {e}"),
            None => self.note.clone(),
        };
        let mem = |b: u64| match b {
            0 => "-".to_string(),
            b => format!("{:.0}", mib(b)),
        };
        format!(
            "| {} | {:.1} | {} | {} | {} | {:.0} | {} |",
            self.step,
            self.secs,
            mem(self.hwm),
            mem(self.rss),
            match self.rss {
                0 => "-".into(),
                _ => format!("{:.2}", self.ratio()),
            },
            mib(self.disk),
            what.replace('|', "/").replace('\n', " ")
        )
    }

    /// Its JSON object.
    pub fn json(&self) -> Value {
        json!({
            "step": self.step,
            "secs": self.secs,
            "hwm_bytes": self.hwm,
            "rss_bytes": self.rss,
            "peak_over_resident": self.ratio(),
            "disk_bytes": self.disk,
            "note": self.note,
            "failed": self.failed,
        })
    }
}

/// The header of the step table.
pub const STEP_HEADER: [&str; 2] = [
    "| step | s | VmHWM MiB | VmRSS MiB | peak ÷ resident | disk MiB | figures |",
    "|---|---|---|---|---|---|---|",
];

/// Lode's signing.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SignFigures {
    /// Seconds from the start to the "signed whole" line.
    pub wall_secs: f64,
    /// The signing alone, from that line.
    pub signing_secs: Option<f64>,
    /// Signatures in the zone (AXFR).
    pub signatures: u64,
    /// `openssl speed`'s signatures/s on the same threads.
    pub ceiling: Option<f64>,
}

impl SignFigures {
    /// Signatures per second of the signing alone (the wall time without the line's).
    pub fn rate(&self) -> f64 {
        div(
            self.signatures as f64,
            self.signing_secs.unwrap_or(self.wall_secs),
        )
    }

    /// The rate over the ceiling.
    pub fn share(&self) -> Option<f64> {
        self.ceiling.map(|c| div(self.rate(), c))
    }
}

/// The update stream and the secondary.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdateFigures {
    /// Seconds from the secondary's start until it served the primary's serial.
    pub secondary_secs: f64,
    /// Records/s of the stream (`-r`, from its header).
    pub rate: f64,
    /// The primary's serial before the stream and at its end.
    pub serial_before: u32,
    /// The primary's serial at the end.
    pub serial_after: u32,
    /// The secondary's serial at the end.
    pub secondary_serial: u32,
    /// Seconds after the end until the secondary served the primary's serial (None: not within the wait).
    pub caught_up_secs: Option<f64>,
    /// The secondary's VmHWM and VmRSS at the end, bytes.
    pub secondary_hwm: u64,
    /// Its VmRSS.
    pub secondary_rss: u64,
    /// The last line `lode update` printed.
    pub update_line: String,
}

impl UpdateFigures {
    /// Serials the secondary was behind at the end of the stream.
    pub fn lag(&self) -> u32 {
        self.serial_after.wrapping_sub(self.secondary_serial)
    }
}

/// A goal and how the run did.
#[derive(Debug, Clone, PartialEq)]
pub struct Goal {
    /// What is asked.
    pub goal: &'static str,
    /// What was measured (`-`: not measured).
    pub value: String,
    /// Met (None: not measured).
    pub met: Option<bool>,
}

impl Goal {
    /// Its row of the goal table.
    pub fn line(&self) -> String {
        let verdict = match self.met {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "not measured",
        };
        format!("| {} | {} | {verdict} |", self.goal, self.value)
    }
}

/// The header of the goal table.
pub const GOAL_HEADER: [&str; 2] = ["| goal | measured | |", "|---|---|---|"];

/// What `lode-bench com` measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ComResult {
    /// Each step run, in order.
    pub rows: Vec<StepRow>,
    /// Bytes of the zone text.
    pub zone_bytes: u64,
    /// Seconds of each start from the snapshot.
    pub snapshot_starts: Vec<f64>,
    /// The signing (None: not run or failed).
    pub sign: Option<SignFigures>,
    /// The update stream (None: not run or failed).
    pub update: Option<UpdateFigures>,
    /// dnsperf against the signed primary: referrals, DO=1 referrals.
    pub queries: Vec<(Load, Run)>,
    /// Seconds in all.
    pub wall_secs: f64,
    /// The Markdown report.
    pub report: PathBuf,
}

/// The median of `v` (0 when empty).
pub(super) fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    crate::stats::median(&v).unwrap_or(0.0)
}

/// GiB of `bytes`.
pub(super) fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

impl ComResult {
    /// The row of `step`, if it ran.
    pub fn row(&self, step: Step) -> Option<&StepRow> {
        self.rows.iter().find(|r| r.step == step.name())
    }

    /// The goals against what was measured, `delegations` in the zone.
    pub fn goals(&self, delegations: u64) -> Vec<Goal> {
        let mut v = Vec::new();
        // Resident: the largest of the serving steps, projected to 160 M.
        let top = self
            .rows
            .iter()
            .filter(|r| r.failed.is_none())
            .max_by_key(|r| r.rss);
        let rss = top.map_or(0, |r| r.rss);
        let projected = div(rss as f64, delegations as f64) * COM_DELEGATIONS as f64;
        v.push(Goal {
            goal: "resident ≤ 12 GiB",
            value: match top {
                Some(t) if rss > 0 => format!(
                    "{:.2} GiB at {delegations} delegations ({}; {:.2} GiB at 160 M, linearly, \
                     the fixed part included)",
                    gib(rss),
                    t.step,
                    projected / (1u64 << 30) as f64
                ),
                _ => "-".into(),
            },
            met: (rss > 0).then_some(rss <= GOAL_RESIDENT),
        });
        let snap = median(&self.snapshot_starts);
        v.push(Goal {
            goal: "snapshot start to first answer ≤ 30 s",
            value: match self.snapshot_starts.is_empty() {
                true => "-".into(),
                false => format!("{snap:.2} s (median of {})", self.snapshot_starts.len()),
            },
            met: (!self.snapshot_starts.is_empty()).then_some(snap <= GOAL_SNAPSHOT_SECS),
        });
        let share = self.sign.and_then(|s| s.share());
        v.push(Goal {
            goal: "opt-out signing ≥ 80 % of the crypto ceiling",
            value: match (self.sign, share) {
                (Some(s), Some(x)) => format!(
                    "{:.0} sig/s of {:.0} ({:.0} %)",
                    s.rate(),
                    s.ceiling.unwrap_or(0.0),
                    x * 100.0
                ),
                (Some(s), None) => format!("{:.0} sig/s, no ceiling (openssl)", s.rate()),
                _ => "-".into(),
            },
            met: share.map(|x| x >= GOAL_SIGNING_SHARE),
        });
        let worst = self
            .rows
            .iter()
            .filter(|r| r.rss > 0)
            .max_by(|a, b| a.ratio().total_cmp(&b.ratio()));
        v.push(Goal {
            goal: "no step needs a second copy (peak ÷ resident < 2)",
            value: worst.map_or("-".into(), |r| {
                format!("{:.2} at most ({})", r.ratio(), r.step)
            }),
            met: worst.map(|r| r.ratio() < GOAL_PEAK_RATIO),
        });
        let failed: Vec<&str> = self
            .rows
            .iter()
            .filter(|r| r.failed.is_some())
            .map(|r| r.step.as_str())
            .collect();
        v.push(Goal {
            goal: "every step fits",
            value: match failed.is_empty() {
                true => format!("{} steps", self.rows.len()),
                false => format!("failed: {}", failed.join(", ")),
            },
            met: (!self.rows.is_empty()).then_some(failed.is_empty()),
        });
        v
    }

    /// The step table and the goal table.
    pub fn lines(&self, delegations: u64) -> Vec<String> {
        let mut v: Vec<String> = STEP_HEADER.iter().map(|s| s.to_string()).collect();
        v.extend(self.rows.iter().map(StepRow::line));
        v.push(String::new());
        v.extend(GOAL_HEADER.iter().map(|s| s.to_string()));
        v.extend(self.goals(delegations).iter().map(Goal::line));
        v
    }
}

/// Bytes of scratch disk the chain wants for `delegations`.
pub fn disk_needed(delegations: u64) -> u64 {
    delegations
        .saturating_mul(DISK_PER_DELEGATION)
        .saturating_mul(DISK_COPIES)
        .saturating_add(1 << 30)
}

/// The bytes `df -B1 --output=avail` printed (its last line).
pub fn parse_df_avail(text: &str) -> Option<u64> {
    text.lines().last()?.trim().parse().ok()
}

/// The records/s an update stream's header gives (`… -c 1 -r RATE FILE`).
pub fn parse_update_rate(header: &str) -> Option<f64> {
    header
        .lines()
        .take_while(|l| l.starts_with(';'))
        .find_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let i = w.iter().position(|x| *x == "-r")?;
            w.get(i + 1)?.parse().ok()
        })
}

/// The secondary's row of the step table: its first serve and its memory at the stream's end.
pub fn secondary_row(u: &UpdateFigures) -> StepRow {
    StepRow {
        step: "update: secondary".into(),
        secs: u.secondary_secs,
        hwm: u.secondary_hwm,
        rss: u.secondary_rss,
        note: format!(
            "served the signed zone (AXFR) after {:.1} s; serial {} at the stream's end, lag {}",
            u.secondary_secs,
            u.secondary_serial,
            u.lag()
        ),
        ..StepRow::default()
    }
}

/// com.md: the settings, the two tables, how to read them.
pub(super) fn to_markdown(cfg: &ComConfig, r: &ComResult) -> String {
    let steps: Vec<&str> = cfg.steps.iter().map(|s| s.name()).collect();
    let mut m = format!(
        "# Today's .com on one machine\n\n\
         `lode-bench gen tld --delegations {}` ({:.0} MiB of zone text); steps {}. Serving \
         servers: one UDP worker pinned to CPU {}; signing: Lode's policy (ECDSA P-256, NSEC3 \
         opt-out, {} threads), unpinned; dnsperf on CPU {} at {} q/s for {} s. {:.0} s in all.\n\n",
        cfg.delegations,
        mib(r.zone_bytes),
        steps.join(", "),
        cfg.server_cpu,
        cfg.sign_threads,
        cfg.tester_cpu,
        cfg.rate,
        cfg.duration,
        r.wall_secs
    );
    for line in r.lines(cfg.delegations) {
        m.push_str(&line);
        m.push('\n');
    }
    m.push_str(
        "\nVmHWM and VmRSS: the Lode process of the step (/proc/PID/status) when its figure \
         was taken: load and snapshot at the first answer, sign when the zone is signed whole \
         and served, update and query the signed primary at the step's end (the secondary's \
         in the figures). The signing rate is the signatures counted by AXFR over the seconds \
         of Lode's \"signed whole in S s\" line; the ceiling `openssl speed -multi T -seconds 3 \
         ecdsap256`. µs per answer: the server's threads' CPU (schedstat) over the answers. \
         Disk: the scratch folder's files after the step.\n",
    );
    m
}

/// com.json: settings, every step, the goals; numbers as numbers.
pub(super) fn to_json(cfg: &ComConfig, r: &ComResult) -> Value {
    let goals: Vec<Value> = r
        .goals(cfg.delegations)
        .iter()
        .map(|g| json!({"goal": g.goal, "measured": g.value, "met": g.met}))
        .collect();
    json!({
        "benchmark": "com",
        "settings": {
            "delegations": cfg.delegations,
            "steps": cfg.steps.iter().map(|s| s.name()).collect::<Vec<_>>(),
            "snapshot_runs": cfg.snapshot_runs,
            "server_cpu": cfg.server_cpu,
            "tester_cpu": cfg.tester_cpu,
            "sign_threads": cfg.sign_threads,
            "port": cfg.port,
            "update_secs": cfg.update_secs,
            "update_rate": cfg.update_rate,
            "rate": cfg.rate,
            "duration_secs": cfg.duration,
        },
        "zone_bytes": r.zone_bytes,
        "steps": r.rows.iter().map(StepRow::json).collect::<Vec<_>>(),
        "snapshot_starts_secs": r.snapshot_starts,
        "sign": r.sign.map(|s| json!({
            "wall_secs": s.wall_secs,
            "signing_secs": s.signing_secs,
            "signatures": s.signatures,
            "signatures_per_sec": s.rate(),
            "ceiling_per_sec": s.ceiling,
            "share_of_ceiling": s.share(),
        })),
        "update": r.update.as_ref().map(|u| json!({
            "secondary_first_serve_secs": u.secondary_secs,
            "records_per_sec": u.rate,
            "primary_serial_before": u.serial_before,
            "primary_serial_after": u.serial_after,
            "secondary_serial_at_end": u.secondary_serial,
            "lag_serials": u.lag(),
            "caught_up_secs": u.caught_up_secs,
            "secondary_hwm_bytes": u.secondary_hwm,
            "secondary_rss_bytes": u.secondary_rss,
            "update_line": u.update_line,
        })),
        "queries": r.queries.iter().map(|(l, q)| json!({
            "load": l.name(),
            "process_us": q.process_us,
            "cpu_us": q.cpu_us,
            "answers": q.answers,
            "lost": q.lost,
        })).collect::<Vec<_>>(),
        "goals": goals,
        "wall_secs": r.wall_secs,
    })
}
