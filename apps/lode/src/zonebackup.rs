//! `lode zone-backup` and `lode zone-restore` (as knotc's).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `lode zone-backup` and `lode zone-restore`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "zone-backup writes, while the server serves and takes updates, into a new \
    (or empty) folder:\n  DIR/lode-backup.txt       the zones, one a line, with the serial and records written\n  \
    DIR/zones/<zone>.zone     each zone's served version, as a zone file (lode check reads it)\n  \
    DIR/keys/<zone>/          a zone signed here: its key folder (.private and .key files)\n\
    Each zone's version and keys are taken together by its writer: no change or key event comes \
    between them. Without NAME, every zone served.\n\n\
    zone-restore serves each zone's backed-up version again (the key folder put back first for \
    a zone signed here): as a whole new version, through the journal, so a zone that takes \
    updates keeps it across restarts; its journal's history restarts (secondaries take an AXFR), \
    and a serial lower than the one served is reported (secondaries keep theirs until the serial \
    passes it: raise it with an update). A zone read from its file alone gets the file written \
    back and read. A secondary is not restored (its primaries have its records: `lode \
    zone-retransfer`). Without NAME, every zone of the backup.\n\n\
    Not kept: the journal's history, a secondary's refresh timers (it refreshes when next due).\n\n\
    Examples:\n  lode zone-backup --dir /var/backups/lode/2026-11-29 -c /etc/lode/lode.toml\n  \
    lode zone-restore example.com. --dir /var/backups/lode/2026-11-29 -c /etc/lode/lode.toml\n\n\
    Exit status: 0 when every zone was done, 1 when one was not (the others are), 2 when no \
    server answers on the control socket."
)]
pub struct ZoneBackupArgs {
    /// The zones; without any, every zone served (backup) or in the backup (restore).
    #[arg(value_name = "NAME")]
    zones: Vec<String>,
    /// The backup folder (made by zone-backup, which wants it new or empty).
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    #[command(flatten)]
    control: crate::zonectl::ControlArgs,
    /// Seconds to wait for the zones to be written or read.
    #[arg(long, value_name = "SECS", default_value_t = 3600)]
    timeout: u64,
}

/// Runs `lode zone-backup` (`restore` false) or `lode zone-restore`.
pub fn run(args: ZoneBackupArgs, restore: bool) -> anyhow::Result<ExitCode> {
    // The server resolves no relative path: it may run in another folder.
    let dir = std::path::absolute(&args.dir)?;
    let mut command = String::from(if restore {
        "zone-restore"
    } else {
        "zone-backup"
    });
    for z in &args.zones {
        command.push(' ');
        command.push_str(z.trim());
    }
    command.push_str(" --dir=");
    command.push_str(&dir.to_string_lossy());
    crate::zonectl::send(&args.control, &command, Duration::from_secs(args.timeout))
}
