//! `lode bench` (not written yet).

use std::process::ExitCode;

/// Arguments of `lode bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {}

/// Runs the command.
pub fn run(_args: BenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
