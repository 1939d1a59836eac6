//! `lode-bench man --out DIR` (hidden): writes the measuring tools' manual pages,
//! generated from the command-line definitions (apps/lode/src/manpages.rs, shared
//! with `lode man`): `lode-bench.1` lists every command, and `lode-bench-rate.1`,
//! `lode-bench-gen-enum.1`, … give each one's options in full. The server's
//! package does not ship them.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::CommandFactory;

use crate::manpages::{self, Manual};

/// Arguments of `lode-bench man`.
#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// Folder to write the pages to (created if needed).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// Runs the command.
pub fn run(args: ManArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = crate::Cli::command().disable_help_subcommand(true);
    cmd.build();
    let manual = Manual {
        // User commands, as dnsperf(1).
        section: "1",
        title: "Lode DNS server",
        skip: &[],
        files: &[],
        see_also: "lode(8), dnsperf(1), knotd(8), nsd(8)",
    };
    for path in manpages::write(&cmd, &args.out, &manual)? {
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
