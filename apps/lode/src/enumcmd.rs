//! `lode enum` (not written yet).

use std::process::ExitCode;

/// Arguments of `lode enum`.
#[derive(clap::Args, Debug)]
pub struct EnumArgs {}

/// Runs the command.
pub fn run(_args: EnumArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
