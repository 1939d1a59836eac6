//! `lode serve`: the authoritative server.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use lode_server::{ConfigFile, Options, Server};

/// Arguments of `lode serve` (the decisions on demo zones, listen defaults and
/// reloads are in the help text below).
#[derive(clap::Args, Debug)]
#[command(
    after_help = "With no zone (neither in --config nor --zone), the built-in demo zones \
1.e164.arpa. and example.com. are served (on the --listen addresses if given). With no listen \
address, Lode listens on 127.0.0.1:5300 and [::1]:5300.

SIGHUP or `lode reload` re-reads the configuration and reloads changed zones in the background; \
a zone that fails to reload keeps its old version. The server refuses to start only when zones \
are configured and none loads. SIGTERM or SIGINT stops it.

Configuration file (TOML), every key optional:
  listen = [\"127.0.0.1:53\", \"[::1]:53\"]
  workers = 4                  # UDP threads per address (default: one per CPU)
  max-udp-payload = 1232       # largest UDP answer with EDNS, 512..4096
  tcp-idle-timeout = 10        # seconds
  tcp-max-clients = 1000
  control = \"/run/lode/lode.sock\"   # \"\" for none
  log-level = \"info\"
  snapshot-dir = \"/var/lib/lode\"   # start from snapshots of unchanged zone files
  [[zone]]
  name = \"e164.arpa.\"
  file = \"e164.arpa.zone\"     # relative to the configuration file's folder

Control socket default: /run/lode/lode.sock for root, else /tmp/lode-<uid>.sock."
)]
pub struct ServeArgs {
    /// Configuration file (TOML); re-read on reload.
    #[arg(long, short = 'c', value_name = "FILE")]
    config: Option<PathBuf>,
    /// Listen on ADDR:PORT, UDP and TCP (repeatable; replaces the file's list).
    #[arg(long, short = 'l', value_name = "ADDR:PORT")]
    listen: Vec<String>,
    /// Serve zone NAME from FILE (repeatable; adds to the file's zones).
    #[arg(long, short = 'z', value_name = "NAME=FILE")]
    zone: Vec<String>,
    /// UDP worker threads per listen address (default: number of CPUs).
    #[arg(long, value_name = "N")]
    workers: Option<usize>,
    /// Control socket path (used by `lode reload` and the zone-* commands);
    /// "" for none.
    #[arg(long, value_name = "PATH", value_parser = any_path)]
    control: Option<PathBuf>,
    /// Log level: error, warn, info, debug or trace (default info).
    #[arg(long, value_name = "LEVEL")]
    log_level: Option<String>,
    /// Start zones from snapshots in DIR when their zone file is unchanged, and
    /// write a snapshot of every zone read from text (see `lode snapshot`).
    #[arg(long, value_name = "DIR")]
    snapshot_dir: Option<PathBuf>,
}

/// `--zone NAME=FILE` arguments as (name, file) pairs.
pub fn parse_zone_args(args: &[String]) -> anyhow::Result<Vec<(String, PathBuf)>> {
    args.iter()
        .map(|z| {
            let (name, file) = z
                .split_once('=')
                .filter(|(n, f)| !n.is_empty() && !f.is_empty())
                .with_context(|| format!("--zone {z:?}: expected NAME=FILE"))?;
            Ok((name.to_owned(), PathBuf::from(file)))
        })
        .collect()
}

/// Runs the command.
pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let zones = parse_zone_args(&args.zone)?;
    // The log level is needed before the configuration is merged.
    let file_level = match &args.config {
        Some(path) => ConfigFile::read(path)?.log_level,
        None => None,
    };
    let level = args
        .log_level
        .clone()
        .or(file_level)
        .unwrap_or_else(|| "info".into());
    if !lode_server::config::LOG_LEVELS.contains(&level.as_str()) {
        anyhow::bail!("log level {level:?}: must be error, warn, info, debug or trace");
    }
    let filter = tracing_subscriber::EnvFilter::try_new(&level)
        .with_context(|| format!("log level {level:?}"))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let options = Options {
        config: args.config,
        listen: args.listen,
        zones,
        workers: args.workers,
        control: args.control,
        log_level: args.log_level,
        snapshot_dir: args.snapshot_dir,
    };
    let server = match Server::start(options) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("not started: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    server.run_until_signal().context("signal handling")?;
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// A path as given, the empty one included (`--control ""`: no socket).
fn any_path(s: &str) -> Result<PathBuf, String> {
    Ok(PathBuf::from(s))
}
