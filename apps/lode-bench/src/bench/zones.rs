//! `lode-bench many-zones` and `lode-bench reload-zones` (crates/bench/src/zones):
//! their arguments.

use std::process::ExitCode;

use lode_bench::zones::{many, reload};

use super::{scratch_dropped, secs, Folders};

/// Arguments of `lode-bench many-zones`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Each zone (z0.many.test. …, 6 records) takes TSIG-signed updates. The \
servers run one after the other on 127.0.0.1:--port, each in a fresh folder under --work, with \
their own default worker counts, and are stopped by PID. Timed: from the server's start until \
the last zone configured answers its SOA over UDP (servers answer only once every zone is \
loaded); then 200 zones spread over the set must answer too (with --signed: with the SOA's \
RRSIG, ECDSA P-256), not timed. Then resident memory (NSD: PSS summed over its processes), \
threads, open files, and durable updates/s: 16 closed-loop TCP clients, 10 s, single new \
records to 1,000 zones spread over the set (`lode-bench update --clients 16`).

--catalog: a Lode producer on --port + 1 (not measured) serves the zones as members of \
catalog.many.test. (RFC 9432); Lode and Knot start as consumers with only the catalog zone \
configured, its members secondaries of the producer, timed until the last member and 200 \
spread over the set answer (they arrive one transfer at a time); no updates.

Prints a Markdown table; writes many-zones.md and many-zones.json (with the provenance) to \
--out. Another build of Lode: `lode-bench --lode PATH many-zones …`. Example: lode-bench \
many-zones --zones 100000 --nsd"
)]
pub(crate) struct ManyZonesArgs {
    #[command(flatten)]
    folders: Folders,
    /// Zones (catalog members with --catalog).
    #[arg(long, default_value_t = 20_000)]
    zones: u64,
    /// Seconds a server may take until every zone answers.
    #[arg(long, default_value_t = 600.0)]
    limit: f64,
    /// The zones as members of a catalog; Lode and Knot as its consumers.
    #[arg(long, conflicts_with = "signed")]
    catalog: bool,
    /// Every zone signed by the server (Knot's default policy: ECDSA P-256 keys
    /// made at first load, NSEC); each update is signed too. NSD is not run.
    #[arg(long)]
    signed: bool,
    /// Lode alone: no Knot DNS.
    #[arg(long)]
    no_knot: bool,
    /// NSD too (serving the zone files; no updates, no signing).
    #[arg(long)]
    nsd: bool,
    /// Port of the server measured on 127.0.0.1 (the catalog's producer: the next).
    #[arg(long, default_value_t = 15421)]
    port: u16,
}

pub(super) fn run_many(a: ManyZonesArgs, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    let (out, work, temp) = a.folders.dirs("many-zones", false);
    let cfg = many::ManyConfig {
        out: out.clone(),
        work: work.clone(),
        lode: lode.path()?,
        zones: a.zones,
        catalog: a.catalog,
        signed: a.signed,
        knot: !a.no_knot,
        nsd: a.nsd,
        limit: secs(a.limit, "--limit")?,
        port: a.port,
    };
    let r = scratch_dropped(temp, &work, many::run(&cfg, &mut |l| println!("{l}")))?;
    out!("report: {}", out.join("many-zones.md").display());
    Ok(match r.rows.iter().all(|x| x.failure.is_none()) {
        true => ExitCode::SUCCESS,
        false => ExitCode::from(1),
    })
}

/// Arguments of `lode-bench reload-zones`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Lode starts on 127.0.0.1:--port with z0.test.; its configuration \
(written by lode-peers) is replaced by one with --zones more (z1.test. …, 4 records each, \
TSIG updates allowed) and `lode reload` is timed (wall time of the command); the last zone takes one TSIG-signed update (an A record), which is asked back; the \
configuration with one zone returns and the next `lode reload` is timed; the last zone's SOA \
status is printed (REFUSED: gone). After each step: resident memory, threads and open files; --settle seconds \
after the removal, once more. Prints each line; writes reload-zones.md and reload-zones.json \
(with the provenance) to --out. Another build of Lode: `lode-bench --lode PATH reload-zones …`."
)]
pub(crate) struct ReloadZonesArgs {
    #[command(flatten)]
    folders: Folders,
    /// Zones added by the reload.
    #[arg(long, default_value_t = 20_000)]
    zones: u64,
    /// Each added zone signed by Lode (keys made at the reload).
    #[arg(long)]
    signed: bool,
    /// Rounds of adding, updating and removing (does memory come back each time?).
    #[arg(long, default_value_t = 1)]
    cycles: u32,
    /// Seconds after the removal before the last reading of memory.
    #[arg(long, default_value_t = 10.0)]
    settle: f64,
    /// Port of the server on 127.0.0.1.
    #[arg(long, default_value_t = 15395)]
    port: u16,
}

pub(super) fn run_reload(a: ReloadZonesArgs, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    let (out, work, temp) = a.folders.dirs("reload-zones", false);
    let settle = match a.settle {
        0.0 => std::time::Duration::ZERO,
        s => secs(s, "--settle")?,
    };
    let cfg = reload::ReloadConfig {
        out: out.clone(),
        work: work.clone(),
        lode: lode.path()?,
        zones: a.zones,
        signed: a.signed,
        cycles: a.cycles,
        settle,
        port: a.port,
    };
    scratch_dropped(temp, &work, reload::run(&cfg, &mut |l| println!("{l}")))?;
    out!("report: {}", out.join("reload-zones.md").display());
    Ok(ExitCode::SUCCESS)
}
