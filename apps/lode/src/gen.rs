//! `lode gen` (not written yet).

use std::process::ExitCode;

/// Arguments of `lode gen`.
#[derive(clap::Args, Debug)]
pub struct GenArgs {}

/// Runs the command.
pub fn run(_args: GenArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
