//! `lode zone-freeze` and `lode zone-thaw` (as `knotc zone-freeze` /
//! `zone-thaw`).

use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `lode zone-freeze` and `lode zone-thaw`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "A frozen zone answers queries and transfers out as before, but:\n\
    - an UPDATE to it is answered REFUSED (with EDE 14, Not Ready, as Knot);\n\
    - its zone file is not written (zonefile-sync), its signatures are not made again and \
    its key events wait;\n\
    - a secondary is not refreshed by its SOA timers or a NOTIFY (it still expires);\n\
    - `lode reload` leaves its changed zone file unread.\n\
    What you ask for by name still runs: zone-reload, zone-flush, zone-sign, zone-refresh, \
    zone-retransfer. Freezing waits until the work queued before it is done (updates taken, a \
    zone-file write or signing running ends). Thawing runs what was postponed at once: the \
    overdue zone-file write and signatures, a refresh that fell due, a file the reload left \
    (its result is printed). A restart thaws every zone, as with Knot.\n\n\
    Use it to hold a zone still while you edit its file by hand, copy its journal or keys, or \
    investigate: `lode zone-freeze example.com`, edit, `lode zone-thaw example.com`.\n\n\
    Exit status: 0 when done, 1 when a zone is not served (nothing changed) or a file read at \
    the thaw failed, 2 when no server answers on the control socket."
)]
pub struct ZoneFreezeArgs {
    /// The zones; without any, every zone served.
    #[arg(value_name = "NAME")]
    zones: Vec<String>,
    #[command(flatten)]
    control: crate::zonectl::ControlArgs,
    /// Seconds to wait for the zones' queued work (and, at a thaw, for a
    /// file left by a reload to be read).
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    timeout: u64,
}

/// Runs `lode zone-freeze` (`frozen`) or `lode zone-thaw`.
pub fn run(args: ZoneFreezeArgs, frozen: bool) -> anyhow::Result<ExitCode> {
    let mut command = String::from(if frozen { "zone-freeze" } else { "zone-thaw" });
    for z in &args.zones {
        command.push(' ');
        command.push_str(z.trim());
    }
    crate::zonectl::send(&args.control, &command, Duration::from_secs(args.timeout))
}
