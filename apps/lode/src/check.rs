//! `lode check` (not written yet).

use std::process::ExitCode;

/// Arguments of `lode check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {}

/// Runs the command.
pub fn run(_args: CheckArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
