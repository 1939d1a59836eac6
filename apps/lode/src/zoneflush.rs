//! `lode zone-flush`: asks a running server to write zones that take updates
//! to their zone files now (Knot's `knotc zone-flush`).

use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `lode zone-flush`.
///
/// The zone's writer writes the version it serves (after the updates queued
/// before the request) to the zone file: a temporary file in the same
/// folder, synced, renamed over the file. This prints, for each zone, the
/// records, serial and path written. Unlike `knotc zone-flush`, it writes
/// even when the zone's `zonefile-sync` is -1. A zone that does not take
/// updates has nothing to write (its zone file is its source).
/// Exit status: 0 when every file was written, 1 when one was not (or the
/// zone is unknown or static), 2 when the server could not be reached.
#[derive(clap::Args, Debug)]
pub struct ZoneFlushArgs {
    /// The zone; without it, every zone that takes updates.
    #[arg(value_name = "NAME")]
    zone: Option<String>,
    #[command(flatten)]
    control: crate::zonectl::ControlArgs,
    /// Seconds to wait for the files to be written.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    timeout: u64,
}

/// Runs the command.
pub fn run(args: ZoneFlushArgs) -> anyhow::Result<ExitCode> {
    let command = match &args.zone {
        Some(z) => format!("zone-flush {}", z.trim()),
        None => "zone-flush".to_string(),
    };
    crate::zonectl::send(&args.control, &command, Duration::from_secs(args.timeout))
}
