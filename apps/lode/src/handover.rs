//! `lode bench …` and `lode gen …`: the measuring tools are not in the server.
//! They live in the lode-bench binary (apps/lode-bench), and these two commands
//! hand over to it: `lode bench ARGS` runs `lode-bench ARGS` and `lode gen ARGS`
//! runs `lode-bench gen ARGS`, found next to this executable, else on PATH.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use anyhow::{bail, Context};

/// The binary that holds the measuring tools.
pub const BINARY: &str = "lode-bench";

/// The subcommands that hand over (they get no manual page of the server's).
pub const COMMANDS: [&str; 2] = ["bench", "gen"];

/// Arguments of `lode bench` and `lode gen`: everything goes to lode-bench,
/// `--help` included (so `lode bench rate --help` shows lode-bench's help).
#[derive(clap::Args, Debug)]
#[command(disable_help_flag = true, disable_version_flag = true)]
pub struct HandOverArgs {
    /// Arguments for lode-bench (`lode-bench --help` lists its commands).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    args: Vec<OsString>,
}

/// Replaces this process with lode-bench, `prefix` and the arguments; returns
/// only when lode-bench could not be started.
pub fn run(prefix: &[&str], args: HandOverArgs) -> anyhow::Result<ExitCode> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|me| Some(me.parent()?.join(BINARY)))
        .filter(|p| p.is_file());
    let program = beside.unwrap_or_else(|| PathBuf::from(BINARY));
    let err = Command::new(&program).args(prefix).args(&args.args).exec();
    if err.kind() == std::io::ErrorKind::NotFound {
        bail!(
            "the measuring tools (`lode bench`, `lode gen`) are in the {BINARY} binary, \
             which is neither next to this lode nor on PATH: build it with \
             `cargo build --release --bin {BINARY}` (target/release/{BINARY}) and run it \
             or put it beside lode"
        );
    }
    Err(err).with_context(|| format!("running {}", program.display()))
}
