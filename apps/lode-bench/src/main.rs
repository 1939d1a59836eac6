//! `lode-bench`: Lode's measuring tools, apart from the server binary
//! `lode`: the data-set generators (`lode-bench gen …`) and the
//! instruments (`lode-bench rate`, `compare`, `attack`, …), which the server
//! does not link. `lode bench ARGS` and `lode gen ARGS` hand over to this
//! binary (`lode-bench ARGS`, `lode-bench gen ARGS`).
//!
//! The instruments are top-level commands (`lode-bench rate`, not `lode-bench
//! bench rate`); `gen` keeps its name and its subcommands. The comparisons start
//! the server: the `lode` next to this binary, else on PATH, or `--lode PATH`.
#![forbid(unsafe_code)]

mod bench;
mod gen;
mod man;
#[path = "../../lode/src/manpages.rs"]
mod manpages;
mod run;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};

/// lode-bench: the measuring tools of the Lode DNS server — data sets, the RFC 8219
/// rate tester, closed-loop clients, the echo ceiling and side-by-side comparisons
/// of Lode, Knot DNS, NSD, BIND 9 and PowerDNS.
///
/// Start with a data set, a server on it and a rate search against that server:
///
///   lode-bench gen enum --records 100000 --out /tmp/set
///
///   lode serve --config /tmp/set/lode.toml &
///
///   lode-bench rate --server 127.0.0.1:5300 --queries /tmp/set/queries-existing.txt
#[derive(Parser, Debug)]
#[command(
    name = "lode-bench",
    version,
    about,
    long_about,
    propagate_version = true
)]
pub(crate) struct Cli {
    /// The lode binary that `compare`, `compare-updates`, `fleet` and `attack` start
    /// (default: the `lode` next to lode-bench, else on PATH, else /usr/sbin/lode).
    #[arg(long, value_name = "PATH")]
    lode: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Generate benchmark data sets (ENUM zones, dns64perf namespace, a TLD) and query files.
    Gen(gen::GenArgs),
    #[command(flatten)]
    Bench(bench::BenchWhat),
    /// Perform experiment files (experiments/*.toml): the runs they name, checked first,
    /// with the provenance and the exact commands recorded beside the reports.
    Run(run::RunArgs),
    /// Write the manual pages (lode-bench.1, lode-bench-rate.1, …) to a folder (for packaging).
    #[command(hide = true)]
    Man(manpages::ManArgs),
}

/// The server binary the comparisons start, found only when one needs it.
#[derive(Debug)]
pub(crate) struct LodeBinary {
    given: Option<PathBuf>,
}

impl LodeBinary {
    /// `--lode`, else `lode` next to this executable, else on PATH, else /usr/sbin/lode
    /// (where the package puts it, not on every user's PATH).
    pub(crate) fn path(&self) -> anyhow::Result<PathBuf> {
        if let Some(p) = &self.given {
            if !p.is_file() {
                bail!("--lode {}: no such file", p.display());
            }
            return std::path::absolute(p).with_context(|| format!("--lode {}", p.display()));
        }
        let me = std::env::current_exe().context("finding the lode-bench binary")?;
        let beside = me.parent().map(|d| d.join("lode"));
        let on_path = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .unwrap_or_default();
        beside
            .into_iter()
            .chain(
                on_path
                    .iter()
                    .filter(|d| d.is_absolute())
                    .map(|d| d.join("lode")),
            )
            .chain([Path::new("/usr/sbin/lode").to_path_buf()])
            .find(|p| p.is_file())
            .context(
                "no lode binary next to lode-bench, on PATH or in /usr/sbin: build it with \
                 `cargo build --release --bin lode` or name one with --lode PATH",
            )
    }
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let lode = LodeBinary { given: cli.lode };
    let result = match cli.command {
        Command::Gen(a) => gen::run(a),
        Command::Bench(a) => bench::run(a, &lode),
        Command::Man(a) => man::run(a),
        Command::Run(a) => run::run(a, &lode),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lode-bench: error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
