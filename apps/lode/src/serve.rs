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
    after_help = "With neither --config nor --zone, the built-in demo zones 1.e164.arpa. and \
example.com. are served (on the --listen addresses if given); a configuration file without \
[[zone]] serves nothing. With no listen \
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
  metrics-listen = \"127.0.0.1:9153\"  # Prometheus endpoint, GET /metrics (default: none)
  query-counters = true        # count requests by type, RCODE, zone (false: none)
  log-level = \"info\"
  log-format = \"text\"         # or \"json\": one JSON object per line
  user = \"lode\"               # started as root: run as this user once bound
  snapshot-dir = \"/var/lib/lode\"   # start from snapshots of unchanged zone files
  [dnstap]                     # query logging (docs/guide.md), off when absent
  sink = \"unix:/run/dnstap.sock\"   # or a file path
  [[zone]]
  name = \"e164.arpa.\"
  file = \"e164.arpa.zone\"     # relative to the configuration file's folder

Control socket default: /run/lode/lode.sock for root and the owner of /run/lode, else \
/tmp/lode-<uid>.sock. Under systemd (Type=notify) the server reports READY=1 once its zones are \
loaded and its sockets bound, RELOADING=1 around reloads and STOPPING=1."
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
    /// Serve Prometheus metrics on ADDR:PORT (GET /metrics; a bare ADDR
    /// means port 9153); "" for none. `lode stats` shows the same counters.
    #[arg(long, value_name = "ADDR:PORT")]
    metrics_listen: Option<String>,
    /// Log level: error, warn, info, debug or trace (default info).
    #[arg(long, value_name = "LEVEL")]
    log_level: Option<String>,
    /// Log format: text (human-readable, the default) or json (one JSON
    /// object per line, for log collectors).
    #[arg(long, value_name = "FORMAT", value_parser = ["text", "json"])]
    log_format: Option<String>,
    /// Started as root: bind the sockets, then run as USER (its journal and
    /// snapshot folders must be writable by it).
    #[arg(long, value_name = "USER")]
    user: Option<String>,
    /// Start zones from snapshots in DIR when their zone file is unchanged, and
    /// write a snapshot of every zone read from text (see `lode snapshot`).
    #[arg(long, value_name = "DIR")]
    snapshot_dir: Option<PathBuf>,
    /// Log queries and responses as dnstap to SINK: a file, or unix:/path (a
    /// reader such as fstrm_capture); overrides the [dnstap] table's sink.
    #[arg(long, value_name = "SINK")]
    dnstap: Option<String>,
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
    // The log level and format are needed before the configuration is merged.
    let file = args.config.as_deref().map(ConfigFile::read).transpose()?;
    let (file_level, file_format) = match &file {
        Some(file) => (file.log_level.clone(), file.log_format.clone()),
        None => (None, None),
    };
    let format = args
        .log_format
        .clone()
        .or(file_format)
        .unwrap_or_else(|| "text".into());
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
    // The filter can be replaced by a reload (`log-level` in the file; a
    // `--log-level` given on the command line stays).
    let (filter, handle) = tracing_subscriber::reload::Layer::new(filter);
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    match format.as_str() {
        "text" => tracing_subscriber::registry()
            .with(filter)
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_target(false)
                    .with_ansi(std::io::stderr().is_terminal()),
            )
            .init(),
        // One object per line: timestamp, level, fields (message included)
        // at the top level, for journald/Loki/jq.
        "json" => tracing_subscriber::registry()
            .with(filter)
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_current_span(false)
                    .with_span_list(false)
                    .with_writer(std::io::stderr)
                    .with_target(false),
            )
            .init(),
        other => anyhow::bail!("log format {other:?}: must be text or json"),
    }
    lode_server::on_log_level_change(move |level| {
        let filter = tracing_subscriber::EnvFilter::try_new(level)?;
        handle.reload(filter)?;
        Ok(())
    });
    let options = Options {
        config: args.config,
        listen: args.listen,
        zones,
        workers: args.workers,
        control: args.control,
        metrics_listen: args.metrics_listen,
        log_level: args.log_level,
        user: args.user,
        snapshot_dir: args.snapshot_dir,
        dnstap: args.dnstap,
    };
    let server = match Server::start_read(options, file) {
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
