//! `lode snapshot`: write binary snapshots of zones, for fast starts.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use lode_server::config::{Config, Options, ZoneSource};
use lode_server::zones;

/// Arguments of `lode snapshot`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Loads the zones like `lode serve` (from --config and/or --zone), then \
writes each zone's compact store to DIR/<zone>snap (e.g. DIR/e164.arpa.snap). \
`lode serve --snapshot-dir DIR` (or `snapshot-dir` in the configuration) then starts those zones \
from their snapshots instead of parsing the text, as long as the zone file's path, size and \
modification time are those the snapshot recorded; a stale or damaged snapshot is ignored and the \
zone file read (and the snapshot rewritten). Zones with $INCLUDE are not snapshotted.

Example:
  lode snapshot -z e164.arpa.=e164.arpa.zone --out /var/lib/lode
  lode serve -z e164.arpa.=e164.arpa.zone --snapshot-dir /var/lib/lode"
)]
pub struct SnapshotArgs {
    /// Configuration file (TOML), for its [[zone]] list.
    #[arg(long, short = 'c', value_name = "FILE")]
    config: Option<PathBuf>,
    /// Zone NAME from FILE (repeatable; adds to the file's zones).
    #[arg(long, short = 'z', value_name = "NAME=FILE")]
    zone: Vec<String>,
    /// Folder to write the snapshots to (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// Runs the command.
pub fn run(args: SnapshotArgs) -> anyhow::Result<ExitCode> {
    let options = Options {
        config: args.config,
        zones: crate::serve::parse_zone_args(&args.zone)?,
        snapshot_dir: Some(args.out.clone()),
        ..Options::default()
    };
    let config = Config::resolve(&options)?;
    if config.demo || config.zones.is_empty() {
        anyhow::bail!("no zone given: use --zone NAME=FILE or --config FILE");
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let start = Instant::now();
    let specs: Vec<&lode_server::ZoneSpec> = config.zones.iter().map(|s| &**s).collect();
    let results = zones::load_all(&specs, Some(&args.out));
    let mut failed = 0;
    for (spec, r) in specs.iter().zip(results) {
        let snap = lode_server::snapshot::path_for(&args.out, &spec.name);
        match r {
            Ok(loaded) if loaded.files.len() == 1 && snap.exists() => {
                let size = std::fs::metadata(&snap).map_or(0, |m| m.len());
                println!(
                    "{}: {} records → {} ({:.1} MB)",
                    spec.name,
                    loaded.zone.record_count(),
                    snap.display(),
                    size as f64 / 1e6
                );
            }
            Ok(_) => {
                failed += 1;
                let why = match &spec.source {
                    ZoneSource::File(_) => "it uses $INCLUDE, or the snapshot could not be written",
                    ZoneSource::Embedded { .. } => "built-in zone",
                    ZoneSource::Transfer => "a secondary: its state lives in journal-dir",
                    ZoneSource::Catalog(_) => "a generated catalog zone",
                };
                eprintln!("{}: no snapshot written: {why}", spec.name);
            }
            Err(errors) => {
                failed += 1;
                for e in errors {
                    eprintln!("{e}");
                }
                eprintln!("{}: not loaded, no snapshot written", spec.name);
            }
        }
    }
    println!(
        "{} zone(s), {} snapshot(s) in {:.2} s",
        specs.len(),
        specs.len() - failed,
        start.elapsed().as_secs_f64()
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
