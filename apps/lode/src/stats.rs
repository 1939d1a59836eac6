//! `lode stats`: the running server's counters through its control socket —
//! the same families its Prometheus endpoint (`metrics-listen`) serves.

use std::process::ExitCode;
use std::time::Duration;

use crate::zonectl::{send, ControlArgs};

/// Arguments of `lode stats`.
///
/// Prints every counter as `name{labels} value` lines, as Prometheus names
/// them (`lode_requests_total{transport="udp",kind="query"} 1234`): requests
/// by transport, kind and question type, responses by RCODE, EDNS/DO/TC,
/// per-zone answers, UDP and TCP transport counters, rate limiting, updates,
/// journal, transfers, NOTIFY, zone serials, records and memory, and process
/// figures. With --json: an array of families
/// (`{"name", "type", "help", "samples": [{"labels", "value"}]}`) for scripts.
#[derive(clap::Args, Debug)]
pub struct StatsArgs {
    /// Print JSON instead of lines.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    control: ControlArgs,
}

/// Runs `lode stats`.
pub fn run(args: StatsArgs) -> anyhow::Result<ExitCode> {
    let command = if args.json { "stats --json" } else { "stats" };
    send(&args.control, command, Duration::from_secs(10))
}
