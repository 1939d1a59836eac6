//! `lode-bench man --out DIR` (hidden): writes the measuring tools' manual pages,
//! generated from the command-line definitions (apps/lode/src/manpages.rs, shared
//! with `lode man`): `lode-bench.1` lists every command, and `lode-bench-rate.1`,
//! `lode-bench-gen-enum.1`, … give each one's options in full. The server's
//! package does not ship them.

use std::process::ExitCode;

use clap::CommandFactory;

use crate::manpages::{self, ManArgs, Manual};

/// Runs the command.
pub fn run(args: ManArgs) -> anyhow::Result<ExitCode> {
    let manual = Manual {
        // User commands, as dnsperf(1).
        section: "1",
        title: "Lode DNS server",
        skip: &[],
        skip_page: "",
        files: &[],
        see_also: "lode(8), dnsperf(1), knotd(8), nsd(8)",
        page_see_also: "lode-bench(1), lode(8)",
    };
    manpages::run(crate::Cli::command(), &manual, args)
}
