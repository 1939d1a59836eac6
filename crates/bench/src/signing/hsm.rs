//! `lode-bench hsm`: signatures per second with the keys in a PKCS #11 token
//! (a fresh SoftHSM2 token) against keys in files, Lode beside Knot's
//! `kzonesign` signing the same zone with the same token.
//!
//! ```text
//!  gen enum (1 zone) ─▶ softhsm2-util --init-token (a token in --work, PIN in a file for Lode)
//!    for keys in files, token:
//!      Lode (policy: 2 signing threads [, keystore]) ─▶ "signed whole in S s" ─▶ AXFR: signatures
//!      kzonesign (same policy, Knot's keystore takes the PIN inline) ─▶ wall s, signatures
//!  ─▶ hsm.md, hsm.json
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use lode_peers::{Pkcs11, Signing};
use serde_json::{json, Value};

use super::{kzonesign, lode_sign, one_zone, LodeSigner, OneZone};
use crate::compare::say;
use crate::provenance::{first_line, Provenance};
use crate::server_cost::{div, fail, fresh_dir, io, write_notes, write_report, CostError};

/// Settings of `lode-bench hsm`.
#[derive(Debug, Clone)]
pub struct HsmConfig {
    /// Report folder.
    pub out: PathBuf,
    /// Scratch folder: the set (kept), the token, the signers' folders.
    pub work: PathBuf,
    /// The lode binary measured.
    pub lode: PathBuf,
    /// NAPTR records of the zone.
    pub records: u64,
    /// Leading digits of its numbers.
    pub prefix: String,
    /// Signing threads of every signer.
    pub threads: usize,
    /// The PKCS #11 module.
    pub module: PathBuf,
    /// Knot's kzonesign too.
    pub knot: bool,
    /// Lode's port on 127.0.0.1.
    pub port: u16,
    /// Longest wait for one signing.
    pub limit: Duration,
}

/// One signer measured.
#[derive(Debug, Clone, PartialEq)]
pub struct HsmRow {
    /// `lode` or `knot kzonesign`.
    pub signer: String,
    /// Keys in a token (else in files).
    pub token: bool,
    /// Seconds: Lode's signing alone, kzonesign's wall time.
    pub secs: f64,
    /// Signatures in the signed zone.
    pub signatures: u64,
}

impl HsmRow {
    /// Signatures per second.
    pub fn rate(&self) -> f64 {
        div(self.signatures as f64, self.secs)
    }

    /// `lode, keys in token` …
    pub fn label(&self) -> String {
        format!(
            "{}, keys in {}",
            self.signer,
            if self.token { "token" } else { "files" }
        )
    }

    /// The script's table row.
    pub fn line(&self) -> String {
        format!(
            "{:<30} {:>10.1} {:>10} {:>12.0}",
            self.label(),
            self.secs,
            self.signatures,
            self.rate()
        )
    }
}

/// The measurement.
#[derive(Debug, Clone, Default)]
pub struct HsmResult {
    /// The zone signed.
    pub zone: String,
    /// SoftHSM2's version line.
    pub softhsm: String,
    /// Each signer, keys in files then in the token.
    pub rows: Vec<HsmRow>,
    /// What failed or was left out.
    pub notes: Vec<String>,
    /// The Markdown report written.
    pub report: PathBuf,
}

impl HsmResult {
    /// The lines printed: the heading, the table, Lode's rate ÷ Knot's per key store.
    pub fn lines(&self, cfg: &HsmConfig) -> Vec<String> {
        let mut v = vec![
            format!(
                "zone {}: {} NAPTR records; {} CPUs; SoftHSM2 {}",
                self.zone,
                cfg.records,
                std::thread::available_parallelism().map_or(1, |n| n.get()),
                self.softhsm
            ),
            format!(
                "{:<30} {:>10} {:>10} {:>12}",
                "signer", "signing s", "signatures", "sig/s"
            ),
        ];
        v.extend(self.rows.iter().map(HsmRow::line));
        for token in [false, true] {
            let find = |s: &str| self.rows.iter().find(|r| r.signer == s && r.token == token);
            if let (Some(l), Some(k)) = (find("lode"), find("knot kzonesign")) {
                v.push(format!(
                    "keys in {}: Lode's signatures/s ÷ Knot's: {:.2} ×",
                    if token { "token" } else { "files" },
                    div(l.rate(), k.rate())
                ));
            }
        }
        v.extend(self.notes.iter().map(|n| format!("note: {n}")));
        v
    }
}

/// The token's label and PINs.
const TOKEN: &str = "bench";
const PIN: &str = "1234";
const SO_PIN: &str = "5678";

/// Runs the measurement; the report in `cfg.out`.
pub fn run(cfg: &HsmConfig) -> Result<HsmResult, CostError> {
    if !cfg.module.is_file() {
        return fail(format!(
            "{}: no PKCS #11 module (Debian package softhsm2)",
            cfg.module.display()
        ));
    }
    let provenance = Provenance::collect(Some(&cfg.lode), &["knotd", "kzonesign", "softhsm2-util"]);
    let zone = one_zone(&cfg.work, cfg.records, &cfg.prefix)?;
    let env = vec![format!("SOFTHSM2_CONF={}", token(&cfg.work)?.display())];
    let mut r = HsmResult {
        zone: zone.apex.clone(),
        softhsm: first_line(Path::new("softhsm2-util"), &["--version"]).unwrap_or_default(),
        ..HsmResult::default()
    };
    for token in [false, true] {
        let store = if token { "token" } else { "files" };
        say(&format!("lode, keys in {store}"));
        let signed = lode_sign(
            &LodeSigner {
                lode: &cfg.lode,
                port: cfg.port,
                dir: cfg.work.join(format!("lode-{store}")),
                signing: signing(cfg, token),
                env: env.clone(),
                count: true,
                limit: cfg.limit,
            },
            &zone,
        )?;
        let Some(secs) = signed.signing_secs else {
            return fail("lode logged no \"signed whole in S s\" line");
        };
        r.rows.push(HsmRow {
            signer: "lode".into(),
            token,
            secs,
            signatures: signed.signatures.unwrap_or(0),
        });
    }
    if cfg.knot {
        knot(cfg, &zone, &env, &mut r);
    }
    let (md, js) = report(cfg, &r);
    r.report = write_report(&cfg.out, "hsm", &md, js, &provenance)?;
    Ok(r)
}

/// Knot's kzonesign with keys in files, then in the token; a failure is a note.
fn knot(cfg: &HsmConfig, zone: &OneZone, env: &[String], r: &mut HsmResult) {
    for token in [false, true] {
        let store = if token { "token" } else { "files" };
        say(&format!("knot kzonesign, keys in {store}"));
        let dir = cfg.work.join(format!("knot-{store}"));
        match kzonesign(&dir, zone, signing(cfg, token), env) {
            Ok(k) => r.rows.push(HsmRow {
                signer: "knot kzonesign".into(),
                token,
                secs: k.wall_secs,
                signatures: k.signatures,
            }),
            Err(e) => r.notes.push(format!("kzonesign ({store}) failed: {e}")),
        }
    }
}

/// The policy: ECDSA P-256, NSEC, `threads` signing threads; keys in the token or in files.
fn signing(cfg: &HsmConfig, token: bool) -> Signing {
    Signing {
        threads: Some(cfg.threads),
        keystore: token.then(|| Pkcs11 {
            token: TOKEN.into(),
            pin: PIN.into(),
            module: cfg.module.clone(),
        }),
        ..Signing::default()
    }
}

/// A fresh SoftHSM2 token [`TOKEN`] in `work/tokens`: its configuration file.
fn token(work: &Path) -> Result<PathBuf, CostError> {
    let tokens = work.join("tokens");
    fresh_dir(&tokens)?;
    let conf = work.join("softhsm2.conf");
    let text = format!(
        "directories.tokendir = {}\nobjectstore.backend = file\nlog.level = ERROR\n",
        tokens.display()
    );
    std::fs::write(&conf, text).map_err(|e| io(&conf, e))?;
    let util = lode_peers::program("softhsm2-util").ok_or_else(|| {
        CostError("softhsm2-util is not installed (Debian package softhsm2)".into())
    })?;
    let out = Command::new(util)
        .args(["--init-token", "--free", "--label", TOKEN, "--pin", PIN])
        .args(["--so-pin", SO_PIN])
        .env("SOFTHSM2_CONF", &conf)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| CostError(format!("softhsm2-util: {e}")))?;
    if !out.status.success() {
        return fail(format!(
            "softhsm2-util --init-token: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(conf)
}

/// The report: settings, the table, the ratios, the notes.
fn report(cfg: &HsmConfig, r: &HsmResult) -> (String, Value) {
    let mut m = format!(
        "# Signing through a PKCS #11 token\n\n{} NAPTR records in {} (prefix {}), ECDSA P-256 \
         keys, NSEC, {} signing threads; each signer once with key files and once with a \
         keystore in a fresh SoftHSM2 token ({}). Lode: `lode serve`, its \"signed whole\" \
         time (the signing alone), the signatures counted by AXFR. Knot: `kzonesign`, its wall \
         time (it also reads and writes the zone), the signatures in the zone it writes.\n\n\
         | signer | keys | seconds | signatures | signatures/s |\n|---|---|---:|---:|---:|\n",
        cfg.records, r.zone, cfg.prefix, cfg.threads, r.softhsm
    );
    for row in &r.rows {
        let _ = writeln!(
            m,
            "| {} | {} | {:.1} | {} | {:.0} |",
            row.signer,
            if row.token { "token" } else { "files" },
            row.secs,
            row.signatures,
            row.rate()
        );
    }
    for l in r.lines(cfg).iter().filter(|l| l.contains(" ÷ ")) {
        let _ = writeln!(m, "\n{l}.");
    }
    write_notes(&mut m, &r.notes);
    let js = json!({
        "settings": {
            "records": cfg.records,
            "prefix": cfg.prefix,
            "signing_threads": cfg.threads,
            "module": cfg.module.display().to_string(),
            "knot": cfg.knot,
        },
        "zone": r.zone,
        "softhsm": r.softhsm,
        "signers": r.rows.iter().map(|x| json!({
            "signer": x.signer,
            "keys": if x.token { "token" } else { "files" },
            "secs": x.secs,
            "signatures": x.signatures,
            "signatures_per_sec": x.rate(),
        })).collect::<Vec<_>>(),
        "notes": r.notes,
    });
    (m, js)
}
