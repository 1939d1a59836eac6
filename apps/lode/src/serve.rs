//! `lode serve` (not written yet).

use std::process::ExitCode;

/// Arguments of `lode serve`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {}

/// Runs the command.
pub fn run(_args: ServeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
