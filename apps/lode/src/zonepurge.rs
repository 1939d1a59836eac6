//! `lode zone-purge` (as `knotc zone-purge +orphan`).

use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `lode zone-purge`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Taking a zone out of the configuration (and `lode reload`) stops \
    serving it but keeps what Lode holds for it in journal-dir and kasp-db, so that a zone \
    removed by mistake comes back as it was. This removes it for good: the journal, the state \
    snapshot, the zone-file note, the saved refresh timers, the serial last delivered to NOTIFY \
    targets and the signing keys (private keys included: export them first with `lode dnssec` \
    if you may need them). The zone file itself is left alone.\n\n\
    Without NAME, every zone not configured that has such data; a zone still configured (or a \
    catalog's member) is refused: to start a secondary afresh use `lode zone-retransfer`. A \
    catalog's removed members are purged when they leave it.\n\n\
    Examples:\n  lode zone-purge --force old.example.      # after removing it and `lode reload`\n  \
    lode zone-purge --force                   # every zone no longer configured\n\n\
    Exit status: 0 when done, 1 when a zone was refused (the others are purged) or --force is \
    missing, 2 when no server answers on the control socket."
)]
pub struct ZonePurgeArgs {
    /// The zones (no longer configured); without any, every such zone.
    #[arg(value_name = "NAME")]
    zones: Vec<String>,
    /// Required: the data is removed for good (as knotc's -f).
    #[arg(long, short = 'f')]
    force: bool,
    #[command(flatten)]
    control: crate::zonectl::ControlArgs,
}

/// Runs the command.
pub fn run(args: ZonePurgeArgs) -> anyhow::Result<ExitCode> {
    if !args.force {
        eprintln!(
            "lode zone-purge: removes journals, state and signing keys for good; \
             add --force (-f) to do it"
        );
        return Ok(ExitCode::from(1));
    }
    let mut command = String::from("zone-purge --force");
    for z in &args.zones {
        command.push(' ');
        command.push_str(z.trim());
    }
    crate::zonectl::send(&args.control, &command, Duration::from_secs(600))
}
