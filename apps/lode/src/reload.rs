//! `lode reload`: asks a running server to reload, through its control socket.

use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `lode reload`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "The server re-reads its configuration file and reloads the zones \
    whose files changed (modification time or size; `lode zone-reload NAME` reads one zone \
    whatever its file's stamp); this prints what it did and, for a zone that failed, every error \
    as file:line: reason (the old version of that zone stays served).\n\n\
    Exit status: 0 when everything reloaded, 1 when something failed, 2 when no server answers \
    on the control socket."
)]
pub struct ReloadArgs {
    #[command(flatten)]
    control: crate::zonectl::ControlArgs,
    /// Seconds to wait for the reload to finish.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    timeout: u64,
    /// Print the server's status (zones, counters, memory) instead of reloading.
    #[arg(long)]
    status: bool,
}

/// Runs the command.
pub fn run(args: ReloadArgs) -> anyhow::Result<ExitCode> {
    let path = args.control.path()?;
    let command = if args.status { "status" } else { "reload" };
    let reply = crate::zonectl::request(&path, command, Duration::from_secs(args.timeout))?;
    if reply.ok {
        print!("{}", reply.text);
        if !args.status {
            println!("OK");
        }
        Ok(ExitCode::SUCCESS)
    } else {
        eprint!("{}", reply.text);
        eprintln!("reload: not everything was reloaded");
        Ok(ExitCode::FAILURE)
    }
}
