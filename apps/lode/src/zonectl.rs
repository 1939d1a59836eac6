//! Zone control commands sent to a running server's control socket, as
//! `knotc` has them: `zone-status`, `zone-refresh`, `zone-retransfer`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;

/// Arguments of `lode zone-status`.
///
/// Prints, per zone: serial, records and memory, or "no contents yet" for a
/// secondary that has not transferred its zone; for a secondary also its
/// primaries, when it last refreshed, when it refreshes next, when it
/// expires, its last transfer and its last error.
#[derive(clap::Args, Debug)]
pub struct ZoneStatusArgs {
    /// The zone; without it, every zone.
    #[arg(value_name = "NAME")]
    zone: Option<String>,
    #[command(flatten)]
    control: ControlArgs,
}

/// Arguments of `lode zone-refresh` and `lode zone-retransfer`.
///
/// zone-refresh: the secondary asks its primaries for their SOA now and
/// transfers (IXFR, or AXFR if it has nothing) when their serial is newer.
/// zone-retransfer: a whole new AXFR now, whatever the serials. Both return
/// once the refresh has started; `lode zone-status NAME` and the log tell
/// how it ended.
#[derive(clap::Args, Debug)]
pub struct ZoneRefreshArgs {
    /// The secondary zone.
    #[arg(value_name = "NAME")]
    zone: String,
    #[command(flatten)]
    control: ControlArgs,
}

/// Where the server's control socket is.
#[derive(clap::Args, Debug)]
pub struct ControlArgs {
    /// Control socket of the server (default: the `control` of --config, else
    /// /run/lode/lode.sock for root, else /tmp/lode-<uid>.sock).
    #[arg(long, value_name = "PATH")]
    control: Option<PathBuf>,
    /// The server's configuration file, to find its control socket.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

impl ControlArgs {
    /// The control socket: --control, else the configuration's, else the default.
    pub fn path(&self) -> anyhow::Result<PathBuf> {
        if let Some(p) = &self.control {
            return Ok(p.clone());
        }
        if let Some(file) = &self.config {
            let c = lode_server::ConfigFile::read(file)?;
            return match c.control {
                Some(p) if p.as_os_str().is_empty() => anyhow::bail!(
                    "{}: control = \"\": the server has no control socket",
                    file.display()
                ),
                Some(p) => Ok(p),
                None => Ok(lode_server::default_control_path()),
            };
        }
        Ok(lode_server::default_control_path())
    }
}

/// Sends `command` and prints the reply: exit 0 if the server says it went
/// well, 1 if not, an error (exit 2) if the server cannot be reached.
pub fn send(control: &ControlArgs, command: &str, timeout: Duration) -> anyhow::Result<ExitCode> {
    let path = control.path()?;
    let reply = lode_server::control::request(&path, command, timeout)
        .with_context(|| format!("cannot reach the server at {}", path.display()))?;
    if reply.ok {
        print!("{}", reply.text);
        Ok(ExitCode::SUCCESS)
    } else {
        eprint!("{}", reply.text);
        Ok(ExitCode::FAILURE)
    }
}

/// Runs `lode zone-status`.
pub fn status(args: ZoneStatusArgs) -> anyhow::Result<ExitCode> {
    let command = match &args.zone {
        Some(z) => format!("zone-status {}", z.trim()),
        None => "zone-status".into(),
    };
    send(&args.control, &command, Duration::from_secs(10))
}

/// Runs `lode zone-refresh` (`axfr`: `lode zone-retransfer`).
pub fn refresh(args: ZoneRefreshArgs, axfr: bool) -> anyhow::Result<ExitCode> {
    let verb = if axfr {
        "zone-retransfer"
    } else {
        "zone-refresh"
    };
    send(
        &args.control,
        &format!("{verb} {}", args.zone.trim()),
        Duration::from_secs(10),
    )
}
