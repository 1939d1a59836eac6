//! `lode reload` (not written yet).

use std::process::ExitCode;

/// Arguments of `lode reload`.
#[derive(clap::Args, Debug)]
pub struct ReloadArgs {}

/// Runs the command.
pub fn run(_args: ReloadArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
