//! `lode-bench hsm`
//! (crates/bench/src/signing):
//! their arguments.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use lode_bench::signing::hsm;

use super::server_cost::print;
use super::zones::Folders;
use super::{drop_scratch, secs};

/// A command's result once its scratch folder is removed (when it is ours).
fn scratch_dropped<T>(
    temp: bool,
    work: &std::path::Path,
    result: Result<T, lode_bench::server_cost::CostError>,
) -> anyhow::Result<T> {
    drop_scratch(temp, work);
    Ok(result?)
}

/// Arguments of `lode-bench hsm`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "One ENUM zone of --records NAPTR records (`lode-bench gen enum --zones 1 \
--prefix P`, kept in --work) is signed whole with NSEC by ECDSA P-256 keys with --threads \
signing threads, by each signer once with key files and once with the keys made in a fresh \
SoftHSM2 token (label bench, in --work; --module is the PKCS #11 module). Lode: `lode serve` \
on 127.0.0.1:--port (one worker), the seconds of its \"signed whole in S s\" log line (the \
signing alone) and the signatures counted by AXFR; its keystore reads the PIN from a file. \
Knot: `kzonesign` on the configuration lode-peers writes, its wall time (it also reads and \
writes the zone) and the signatures in the zone it writes; its keystore takes the PIN in its \
configuration. Prints the table (signer, seconds, signatures, signatures/s) and Lode's \
signatures/s ÷ Knot's per key store; hsm.md and hsm.json in --out. Needs softhsm2, knot and \
knot-dnssecutils. Another build of Lode: `lode-bench --lode PATH hsm …`. Example: \
lode-bench hsm --records 100000"
)]
pub(crate) struct HsmArgs {
    #[command(flatten)]
    folders: Folders,
    /// NAPTR records of the zone.
    #[arg(long, default_value_t = 20_000)]
    records: u64,
    /// Leading digits (E.164 prefix) of the generated numbers.
    #[arg(long, default_value = "16461")]
    prefix: String,
    /// Signing threads of every signer (the policy's signing-threads).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// The PKCS #11 module of the token.
    #[arg(long, default_value = "/usr/lib/softhsm/libsofthsm2.so")]
    module: PathBuf,
    /// Lode alone: no kzonesign.
    #[arg(long)]
    no_knot: bool,
    /// Lode's port on 127.0.0.1.
    #[arg(long, default_value_t = 15394)]
    port: u16,
    /// Seconds one signing may take.
    #[arg(long, default_value_t = 3600.0)]
    limit: f64,
}

pub(super) fn run_hsm(a: HsmArgs, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    if a.threads == 0 {
        bail!("--threads must be positive");
    }
    let (out, work, temp) = a.folders.dirs("hsm");
    let cfg = hsm::HsmConfig {
        out,
        work: work.clone(),
        lode: lode.path()?,
        records: a.records,
        prefix: a.prefix,
        threads: a.threads,
        module: a.module,
        knot: !a.no_knot,
        port: a.port,
        limit: secs(a.limit, "--limit")?,
    };
    let r = scratch_dropped(temp, &work, hsm::run(&cfg))?;
    print(&r.lines(&cfg), &r.report)?;
    Ok(match r.notes.is_empty() {
        true => ExitCode::SUCCESS,
        false => ExitCode::from(1),
    })
}
