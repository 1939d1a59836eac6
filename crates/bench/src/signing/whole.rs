//! `lode-bench signing --part whole`: one ENUM zone signed whole, NSEC and
//! NSEC3, by Lode (from its start to its "signed whole" line), Knot's
//! `kzonesign`, BIND's `dnssec-signzone -n 2` and `ldns-signzone` (NSEC
//! only for the last two): wall time, signatures/s and peak memory of each,
//! beside the machine's crypto ceiling (`openssl speed -multi 2 ecdsap256`).

use std::path::Path;
use std::process::{Command, Stdio};

use lode_peers::Signing;
use serde_json::{json, Value};

use super::served::ServedConfig;
use super::{kzonesign, lode_sign, timed, LodeSigner, OneZone};
use crate::compare::say;
use crate::server_cost::{div, fail, fresh_dir, io, mib, CostError};

/// One signer's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct SignerRow {
    /// Who signed how, e.g. `lode (nsec3, 2 threads, from start)`.
    pub signer: String,
    /// Wall seconds (Lode: from its start to the "signed whole" line).
    pub wall_secs: f64,
    /// Signatures made (None: not counted).
    pub signatures: Option<u64>,
    /// Peak resident memory, bytes.
    pub peak: u64,
    /// Lode: the seconds of the signing alone, from its log.
    pub signing_secs: Option<f64>,
}

impl SignerRow {
    /// The script's table row.
    pub fn line(&self) -> String {
        let rate = |secs: f64| self.signatures.map(|n| div(n as f64, secs));
        let mut l = format!(
            "{:<34} {:>9.1} {:>10} {:>12} {:>9.0}",
            self.signer,
            self.wall_secs,
            self.signatures.map_or("-".into(), |n| n.to_string()),
            rate(self.wall_secs).map_or("-".into(), |r| format!("{r:.0}")),
            mib(self.peak)
        );
        if let Some(s) = self.signing_secs {
            l.push_str(&format!("   (signing alone {s:.1} s"));
            if let Some(r) = rate(s) {
                l.push_str(&format!(": {r:.0} sig/s"));
            }
            l.push(')');
        }
        l
    }

    /// The JSON object.
    pub fn json(&self) -> Value {
        json!({
            "signer": self.signer,
            "wall_secs": self.wall_secs,
            "signatures": self.signatures,
            "signatures_per_sec": self.signatures.map(|n| div(n as f64, self.wall_secs)),
            "peak_bytes": self.peak,
            "signing_secs": self.signing_secs,
        })
    }
}

/// The table's heading.
pub fn heading() -> String {
    format!(
        "{:<34} {:>9} {:>10} {:>12} {:>9}",
        "signer", "wall s", "signatures", "sig/s", "peak MiB"
    )
}

/// Settings of the whole-zone signing.
#[derive(Debug, Clone)]
pub struct WholeConfig<'a> {
    /// The lode binary, the scratch folder of the signers, Lode's port on
    /// 127.0.0.1 and the longest wait for its signing.
    pub run: ServedConfig<'a>,
    /// Signing threads (Lode, Knot, BIND's -n; openssl's processes).
    pub threads: usize,
    /// The chains: NSEC (false), NSEC3 (true).
    pub chains: &'a [bool],
    /// Lode signs (else the peers alone).
    pub lode_signs: bool,
    /// Lode's signatures counted by AXFR.
    pub count: bool,
    /// Knot, and the crypto ceiling.
    pub peers: bool,
    /// BIND and ldns too (slow on large zones).
    pub slow: bool,
}

/// What the whole-zone signing measured.
#[derive(Debug, Clone, Default)]
pub struct Whole {
    /// `openssl speed`'s ECDSA P-256 signatures/s with `threads` processes.
    pub ceiling: Option<f64>,
    /// Each signer.
    pub rows: Vec<SignerRow>,
    /// Names in the zone file (lines that are not comments or directives).
    pub names: u64,
}

fn chain(nsec3: bool) -> &'static str {
    if nsec3 {
        "nsec3"
    } else {
        "nsec"
    }
}

/// Signs `zone` with every signer asked for, one after the other.
pub fn run(cfg: &WholeConfig, zone: &OneZone) -> Result<Whole, CostError> {
    let mut w = Whole::default();
    super::lines_of(&zone.file, |line| {
        if !matches!(line.trim_start().chars().next(), Some(';' | '$')) {
            w.names += 1;
        }
    })?;
    if cfg.peers {
        w.ceiling = ceiling(cfg.threads);
    }
    let signing = |nsec3: bool| Signing {
        nsec3,
        threads: Some(cfg.threads),
        ..Signing::default()
    };
    for &nsec3 in cfg.chains.iter().filter(|_| cfg.lode_signs) {
        let label = format!(
            "lode ({}, {} threads, from start)",
            chain(nsec3),
            cfg.threads
        );
        say(&label);
        let s = lode_sign(
            &LodeSigner {
                lode: cfg.run.lode,
                port: cfg.run.port,
                dir: cfg.run.work.join(format!("lode-{}", chain(nsec3))),
                signing: signing(nsec3),
                env: Vec::new(),
                count: cfg.count,
                limit: cfg.run.limit,
            },
            zone,
        )?;
        w.rows.push(SignerRow {
            signer: label,
            wall_secs: s.wall_secs,
            signatures: s.signatures,
            peak: s.peak,
            signing_secs: s.signing_secs,
        });
    }
    if !cfg.peers {
        return Ok(w);
    }
    for &nsec3 in cfg.chains {
        let label = format!("knot kzonesign ({}, {} threads)", chain(nsec3), cfg.threads);
        say(&label);
        let dir = cfg.run.work.join(format!("knot-{}", chain(nsec3)));
        let k = kzonesign(&dir, zone, signing(nsec3), &[])?;
        w.rows.push(SignerRow {
            signer: label,
            wall_secs: k.wall_secs,
            signatures: Some(k.signatures),
            peak: k.peak,
            signing_secs: None,
        });
    }
    if cfg.slow {
        w.rows.push(bind(cfg, zone)?);
        w.rows.push(ldns(cfg, zone)?);
    }
    Ok(w)
}

/// `openssl speed -multi N -seconds 3 ecdsap256`: its signatures/s (the
/// second-last field of the last "256 bits ecdsa" line).
pub fn ceiling(threads: usize) -> Option<f64> {
    let out = Command::new("openssl")
        .args([
            "speed",
            "-multi",
            &threads.to_string(),
            "-seconds",
            "3",
            "ecdsap256",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    parse_openssl(&String::from_utf8_lossy(&out.stdout))
}

/// The signatures/s of `openssl speed` output.
pub fn parse_openssl(text: &str) -> Option<f64> {
    let line = text.lines().rev().find(|l| l.contains("256 bits ecdsa"))?;
    let f: Vec<&str> = line.split_whitespace().collect();
    f.get(f.len().checked_sub(2)?)?.parse().ok()
}

/// Runs `program args` in `dir`; fails with its output when it does.
fn run_in(dir: &Path, program: &str, args: &[&str]) -> Result<String, CostError> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| CostError(format!("{program}: {e}")))?;
    if !out.status.success() {
        return fail(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A copy of the zone file in `dir` (made afresh): the signers write beside it.
fn copy_zone(dir: &Path, zone: &OneZone) -> Result<std::path::PathBuf, CostError> {
    fresh_dir(dir)?;
    let copy = dir.join("zone");
    std::fs::copy(&zone.file, &copy).map_err(|e| io(&zone.file, e))?;
    Ok(copy)
}

/// BIND 9's `dnssec-signzone -n THREADS`, NSEC, a KSK and a ZSK made by `dnssec-keygen`.
fn bind(cfg: &WholeConfig, zone: &OneZone) -> Result<SignerRow, CostError> {
    let label = format!("bind dnssec-signzone (nsec, -n {})", cfg.threads);
    say(&label);
    let dir = cfg.run.work.join("bind");
    let copy = copy_zone(&dir, zone)?;
    let alg = ["-q", "-a", "ECDSAP256SHA256"];
    run_in(
        &dir,
        "dnssec-keygen",
        &[&alg[..], &["-f", "KSK", zone.apex.as_str()]].concat(),
    )?;
    run_in(
        &dir,
        "dnssec-keygen",
        &[&alg[..], &[zone.apex.as_str()]].concat(),
    )?;
    let signed = dir.join("zone.signed");
    let mut cmd = Command::new("dnssec-signzone");
    cmd.args(["-O", "full", "-n", &cfg.threads.to_string(), "-S", "-K"])
        .arg(&dir)
        .arg("-d")
        .arg(&dir)
        .args(["-o", &zone.apex, "-f"])
        .arg(&signed)
        .arg(&copy);
    signed_by(label, cmd, &dir.join("dnssec-signzone.log"), &signed)
}

/// `ldns-signzone` (one thread), NSEC, its keys made by `ldns-keygen`.
fn ldns(cfg: &WholeConfig, zone: &OneZone) -> Result<SignerRow, CostError> {
    let label = "ldns-signzone (nsec, 1 thread)".to_string();
    say(&label);
    let dir = cfg.run.work.join("ldns");
    let copy = copy_zone(&dir, zone)?;
    let alg = ["-a", "ECDSAP256SHA256"];
    let ksk = run_in(
        &dir,
        "ldns-keygen",
        &[&alg[..], &["-k", zone.apex.as_str()]].concat(),
    )?;
    let zsk = run_in(
        &dir,
        "ldns-keygen",
        &[&alg[..], &[zone.apex.as_str()]].concat(),
    )?;
    let signed = dir.join("zone.signed");
    let mut cmd = Command::new("ldns-signzone");
    cmd.arg("-f")
        .arg(&signed)
        .arg(&copy)
        .arg(dir.join(ksk))
        .arg(dir.join(zsk));
    signed_by(label, cmd, &dir.join("ldns-signzone.log"), &signed)
}

/// Runs the signer `cmd` ([`timed`], its output in `log`): its row, the
/// signatures counted in the zone it wrote to `signed`.
fn signed_by(
    label: String,
    cmd: Command,
    log: &Path,
    signed: &Path,
) -> Result<SignerRow, CostError> {
    let (wall_secs, peak) = timed(cmd, log)?;
    Ok(SignerRow {
        signer: label,
        wall_secs,
        signatures: Some(super::signatures_in(signed)?),
        peak,
        signing_secs: None,
    })
}
