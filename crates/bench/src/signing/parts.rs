//! `lode-bench signing`: the parts of the signing benchmark that are not
//! `update-cpu` (durable signed updates are `update-cpu --signed`): a zone
//! signed whole by Lode and its peers, the memory of an NSEC3-signed zone
//! served pre-signed, and the server CPU per DO=1 answer on it.
//!
//! ```text
//!  gen enum (1 zone; kept in --work)
//!    ├ whole:   openssl speed ─▶ Lode nsec, nsec3 ─▶ kzonesign nsec, nsec3 ─▶ dnssec-signzone ─▶ ldns-signzone
//!    ├ memory:  Lode signs with NSEC3 ─▶ AXFR ─▶ signed.zone ─▶ Lode, Knot: VmRSS signed − empty
//!    └ answers: signed.zone (made if need be) ─▶ Lode, Knot, NSD × signed, unsigned × exist, nx:
//!               dnsperf -D at a fixed rate, server utime + stime ÷ answers; medians over rounds
//!  ─▶ signing.md, signing.json
//! ```

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use lode_peers::Kind;
use serde_json::{json, Value};

use super::one_zone;
use super::served::{self, AnswerRow, AnswersConfig, MemoryRow, ServedConfig};
use super::whole::{self, Whole, WholeConfig};
use crate::compare::say;
use crate::provenance::Provenance;
use crate::server_cost::{write_report, CostError};
use crate::stats::median;

/// A part of the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The zone signed whole by each signer.
    Whole,
    /// Memory of the NSEC3-signed zone served pre-signed.
    Memory,
    /// Server CPU per DO=1 answer.
    Answers,
}

/// Settings of `lode-bench signing`.
#[derive(Debug, Clone)]
pub struct SigningConfig {
    /// Report folder.
    pub out: PathBuf,
    /// Scratch folder: the set and the signed zone (kept), the servers' folders.
    pub work: PathBuf,
    /// The lode binary measured.
    pub lode: PathBuf,
    /// Parts, in run order.
    pub parts: Vec<Part>,
    /// NAPTR records of the zone.
    pub records: u64,
    /// Leading digits of its numbers.
    pub prefix: String,
    /// Whole: signing threads.
    pub threads: usize,
    /// Whole: the chains (false NSEC, true NSEC3).
    pub chains: Vec<bool>,
    /// Whole: Lode signs.
    pub lode_signs: bool,
    /// Whole: Lode's signatures counted by AXFR.
    pub count: bool,
    /// Whole: Knot and the crypto ceiling.
    pub peers: bool,
    /// Whole: BIND and ldns.
    pub slow: bool,
    /// Answers: servers, rate, seconds, names, CPUs.
    pub answers: AnswersConfig,
    /// Answers: rounds (medians reported).
    pub rounds: usize,
    /// Port of the server (one at a time) on 127.0.0.1.
    pub port: u16,
    /// Longest wait for a signing or a load.
    pub limit: Duration,
}

/// What was measured.
#[derive(Debug, Clone, Default)]
pub struct SigningResult {
    /// The zone.
    pub zone: String,
    /// The whole-zone signing.
    pub whole: Option<Whole>,
    /// Records of the NSEC3-signed zone (memory, answers).
    pub signed_records: Option<u64>,
    /// Resident memory per server.
    pub memory: Vec<(Kind, MemoryRow)>,
    /// Every answers row of every round.
    pub answers: Vec<Vec<AnswerRow>>,
    /// Every line printed.
    pub lines: Vec<String>,
    /// The Markdown report written.
    pub report: PathBuf,
}

/// Runs the parts; the report in `cfg.out`.
pub fn run(cfg: &SigningConfig) -> Result<SigningResult, CostError> {
    let peers = [
        "knotd",
        "kzonesign",
        "dnssec-signzone",
        "ldns-signzone",
        "nsd",
        "dnsperf",
    ];
    let provenance = Provenance::collect(Some(&cfg.lode), &peers);
    let zone = one_zone(&cfg.work, cfg.records, &cfg.prefix)?;
    let mut r = SigningResult {
        zone: zone.apex.clone(),
        ..SigningResult::default()
    };
    let served = ServedConfig {
        lode: &cfg.lode,
        work: &cfg.work,
        port: cfg.port,
        limit: cfg.limit,
    };
    for part in &cfg.parts {
        match part {
            Part::Whole => {
                let w = whole::run(
                    &WholeConfig {
                        run: served.clone(),
                        threads: cfg.threads,
                        chains: &cfg.chains,
                        lode_signs: cfg.lode_signs,
                        count: cfg.count,
                        peers: cfg.peers,
                        slow: cfg.slow,
                    },
                    &zone,
                )?;
                r.lines
                    .push(format!("zone {}: {} records", zone.apex, cfg.records));
                if let Some(c) = w.ceiling {
                    r.lines.push(format!(
                        "crypto ceiling: {c:.0} signatures/s (openssl, {} processes)",
                        cfg.threads
                    ));
                }
                r.lines.push(whole::heading());
                r.lines.extend(w.rows.iter().map(whole::SignerRow::line));
                r.lines
                    .push(format!("({} names in the zone file)", w.names));
                r.whole = Some(w);
            }
            Part::Memory => {
                let (signed, n) = served::signed_zone(&served, &zone)?;
                r.signed_records = Some(n);
                r.memory = served::memory(&served, &zone, &signed)?;
                r.lines.push(format!("signed zone: {n} records"));
                r.lines.push(format!(
                    "{:<6} {:>12} {:>12} {:>14}",
                    "server", "RSS KiB", "empty KiB", "bytes/record"
                ));
                for (kind, m) in &r.memory {
                    r.lines.push(format!(
                        "{:<6} {:>12} {:>12} {:>14.1}",
                        kind.name(),
                        m.signed / 1024,
                        m.empty / 1024,
                        m.per_record(n)
                    ));
                }
            }
            Part::Answers => {
                let (signed, n) = served::signed_zone(&served, &zone)?;
                r.signed_records = Some(n);
                let queries =
                    served::query_files(&signed, &cfg.work.join("queries"), cfg.answers.names)?;
                for round in 1..=cfg.rounds.max(1) {
                    say(&format!("answers, round {round} of {}", cfg.rounds.max(1)));
                    r.answers.push(served::answers(
                        &served,
                        &cfg.answers,
                        &zone,
                        &signed,
                        &queries,
                    )?);
                }
                r.lines.push(served::answers_heading());
                r.lines
                    .extend(medians(&r.answers).iter().map(AnswerRow::line));
                if r.answers.len() > 1 {
                    r.lines
                        .push(format!("(medians of {} rounds)", r.answers.len()));
                }
            }
        }
    }
    let (md, js) = report(cfg, &r);
    r.report = write_report(&cfg.out, "signing", &md, js, &provenance)?;
    Ok(r)
}

/// Each row's median over the rounds (CPU and answers taken each at its median).
pub fn medians(rounds: &[Vec<AnswerRow>]) -> Vec<AnswerRow> {
    let Some(first) = rounds.first() else {
        return Vec::new();
    };
    let med = |f: &dyn Fn(&AnswerRow) -> f64, i: usize| {
        let mut v: Vec<f64> = rounds.iter().filter_map(|r| r.get(i)).map(f).collect();
        v.sort_by(f64::total_cmp);
        median(&v).unwrap_or(0.0)
    };
    first
        .iter()
        .enumerate()
        .map(|(i, row)| AnswerRow {
            answered: med(&|r| r.answered as f64, i) as u64,
            cpu_secs: med(&|r| r.cpu_secs, i),
            sys_secs: med(&|r| r.sys_secs, i),
            ..row.clone()
        })
        .collect()
}

/// The report: what each part did, its table, the figures as JSON.
fn report(cfg: &SigningConfig, r: &SigningResult) -> (String, Value) {
    let mut m = format!(
        "# Signing\n\n{} NAPTR records in {} (prefix {}), ECDSA P-256.\n\n```\n{}\n```\n",
        cfg.records,
        r.zone,
        cfg.prefix,
        r.lines.join("\n")
    );
    if r.whole.is_some() {
        let _ = write!(
            m,
            "\nWhole: Lode (`lode serve`, one worker, {t} signing threads) from its start to its \
             \"signed whole\" line, signatures counted by AXFR, peak VmHWM; Knot's kzonesign \
             ({t} signing threads), BIND's dnssec-signzone -n {t} and ldns-signzone: wall time \
             and peak resident memory (`/usr/bin/time`), signatures in the zone written.\n",
            t = cfg.threads
        );
    }
    if !r.memory.is_empty() {
        m.push_str(
            "\nMemory: the zone signed by Lode with NSEC3 and taken by AXFR, loaded pre-signed \
             by Lode and Knot (one worker, no journal): resident memory a second after it \
             answers, less that of an empty zone, per record.\n",
        );
    }
    if !r.answers.is_empty() {
        let a = &cfg.answers;
        let _ = write!(
            m,
            "\nAnswers: dnsperf -D (DO=1) at {} q/s for {} s, 4 clients, on CPU {}; each server \
             pinned to CPU {} with one worker, serving the NSEC3-signed zone pre-signed, then the \
             unsigned zone; {} existing names (NAPTR owners spread over the zone) and the same \
             with `nx-` before them (NXDOMAIN, with the NSEC3 proof when signed). Server CPU: \
             utime + stime over its processes (NSD's summed); medians of {} rounds.\n",
            a.rate,
            a.secs,
            a.tester_cpu,
            a.server_cpu,
            a.names,
            r.answers.len()
        );
    }
    let js = json!({
        "settings": {
            "records": cfg.records,
            "prefix": cfg.prefix,
            "threads": cfg.threads,
            "rate": cfg.answers.rate,
            "answer_secs": cfg.answers.secs,
            "rounds": cfg.rounds,
        },
        "zone": r.zone,
        "whole": r.whole.as_ref().map(|w| json!({
            "crypto_ceiling_signatures_per_sec": w.ceiling,
            "names_in_zone_file": w.names,
            "signers": w.rows.iter().map(whole::SignerRow::json).collect::<Vec<_>>(),
        })),
        "signed_records": r.signed_records,
        "memory": r.memory.iter().map(|(k, x)| json!({
            "server": k.name(),
            "resident_bytes": x.signed,
            "empty_bytes": x.empty,
            "bytes_per_record": x.per_record(r.signed_records.unwrap_or(0)),
        })).collect::<Vec<_>>(),
        "answers": medians(&r.answers).iter().map(AnswerRow::json).collect::<Vec<_>>(),
        "answer_rounds": r.answers.iter().map(|x| x.iter().map(AnswerRow::json).collect::<Vec<_>>()).collect::<Vec<_>>(),
    });
    (m, js)
}
