//! Control commands sent to a running server's control socket, as `knotc`
//! has them: `status`, `stop`, `zone-status`, `zone-reload`, `zone-refresh`,
//! `zone-retransfer`, `zone-notify`, `zone-read` (`zone-freeze`/`zone-thaw`: `zonefreeze.rs`);
//! and the errors every control command gives when the server cannot be reached.

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Arguments of `lode status`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Prints a one-line summary (\"lode 0.1.0, pid N, up 3 h 2 min, \
    serving 3 zones on 127.0.0.1:53 (UDP and TCP)\"), then each zone's serial and size, the UDP \
    and TCP counters, the rate limiter's and the resident memory (as `knotc status`, with more).\n\n\
    Exit status: 0, or 2 when no server answers on the control socket (none there, a stale \
    socket, or permission denied: run as the server's user or a member of its group)."
)]
pub struct StatusArgs {
    #[command(flatten)]
    control: ControlArgs,
}

/// Arguments of `lode stop`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "The server answers \"stopping\", then stops as on SIGTERM: it \
    removes its control socket, stops answering and exits. This waits until the socket is gone \
    and the process has ended (as `knotc stop`), then prints \"stopped\". Only a server run by \
    `lode serve` takes it.\n\n\
    Exit status: 0 once stopped, 1 when the server refused or did not stop within --timeout, 2 \
    when no server answers on the control socket (not running)."
)]
pub struct StopArgs {
    #[command(flatten)]
    control: ControlArgs,
    /// Seconds to wait for the server to stop.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    timeout: u64,
}

/// Arguments of `lode zone-reload`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "The server reads that zone's file again now, even when its \
    modification time is unchanged (as `knotc zone-reload`), without re-reading its configuration \
    or touching other zones, and prints the new serial and size, or every error as \
    file:line: reason while the previous version stays served.\n\n\
    A zone that takes updates gets the file's difference from its served version through its \
    journal, as `lode reload` does (updates not in the file are undone). A secondary has no file: \
    use `lode zone-refresh` or `lode zone-retransfer`.\n\n\
    Exit status: 0 when reloaded, 1 when not, 2 when no server answers on the control socket."
)]
pub struct ZoneReloadArgs {
    /// The zone.
    #[arg(value_name = "NAME")]
    zone: String,
    #[command(flatten)]
    control: ControlArgs,
    /// Seconds to wait for the zone to load.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    timeout: u64,
}

/// Arguments of `lode zone-sign`.
///
/// The zone's writer signs the zone whole again with its keys (after the
/// updates queued before): every signature made anew, the serial raised
/// by the zone's serial-policy, the journal's history before it dropped
/// (secondaries asking IXFR from older serials get AXFR). As `knotc
/// zone-sign`. Exit status: 0 when signed, 1 when not (unknown zone, not
/// signed here), 2 when the server could not be reached.
#[derive(clap::Args, Debug)]
pub struct ZoneSignArgs {
    /// The zone.
    #[arg(value_name = "NAME")]
    zone: String,
    #[command(flatten)]
    control: ControlArgs,
    /// Seconds to wait for the signing.
    #[arg(long, value_name = "SECS", default_value_t = 3600)]
    timeout: u64,
}

/// Runs `lode zone-sign`.
pub fn zone_sign(args: ZoneSignArgs) -> anyhow::Result<ExitCode> {
    send(
        &args.control,
        &format!("zone-sign {}", args.zone.trim()),
        Duration::from_secs(args.timeout),
    )
}

/// Arguments of `lode zone-keys-load`.
///
/// The zone's writer reads its key folder again — keys made or imported
/// by hand, other signers' keys, signed key responses imported for an
/// offline KSK — runs the key events due and brings the apex's key
/// records to them (one change, signed; no whole signing). As `knotc
/// zone-keys-load`. Exit status: 0 when done, 1 when not, 2 when the
/// server could not be reached.
#[derive(clap::Args, Debug)]
pub struct ZoneKeysLoadArgs {
    /// The zone.
    #[arg(value_name = "NAME")]
    zone: String,
    #[command(flatten)]
    control: ControlArgs,
}

/// Runs `lode zone-keys-load`.
pub fn keys_load(args: ZoneKeysLoadArgs) -> anyhow::Result<ExitCode> {
    send(
        &args.control,
        &format!("zone-keys-load {}", args.zone.trim()),
        Duration::from_secs(600),
    )
}

/// Arguments of `lode zone-key-rollover`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Starts a rollover of the zone's KSK or ZSK now, whatever the \
    policy's lifetimes say (as `knotc zone-key-rollover`); a single-type-signing policy rolls \
    its CSK either way. The rollover then runs by the policy's timers: a new ZSK is published, \
    signs after propagation-delay + the DNSKEY TTL, and the old one leaves once every signature \
    is replaced (a batch a second, 1,000 to 2,500 names a second: 10 minutes for 600,000 names) + propagation-delay + the \
    largest TTL. A new KSK is published and signs the DNSKEY RRset at once; after \
    propagation-delay + the DNSKEY TTL it is ready: its CDS/CDNSKEY are published and the log \
    gives its DS for the parent; it becomes active at `lode zone-ksk-submitted`. Refused while \
    another rollover of the zone runs. Each step is logged with the next one's time.\n\n\
    Exit status: 0 when started, 1 when not, 2 when no server answers on the control socket."
)]
pub struct ZoneKeyRolloverArgs {
    /// The zone.
    #[arg(value_name = "NAME")]
    zone: String,
    /// Which key: ksk or zsk.
    #[arg(value_name = "KIND", value_parser = ["ksk", "zsk"])]
    kind: String,
    #[command(flatten)]
    control: ControlArgs,
}

/// Runs `lode zone-key-rollover`.
pub fn key_rollover(args: ZoneKeyRolloverArgs) -> anyhow::Result<ExitCode> {
    send(
        &args.control,
        &format!("zone-key-rollover {} {}", args.zone.trim(), args.kind),
        Duration::from_secs(600),
    )
}

/// Arguments of `lode zone-ksk-submitted`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Tells the server that the parent serves the DS of the zone's ready KSK \
    (the one the log and `lode dnssec list` show as ready, whose CDS is published): it becomes \
    the active KSK, and the old one leaves the DNSKEY RRset after --ds-ttl seconds (the TTL of the \
    parent's old DS, so that resolvers holding it still find its key). As `knotc \
    zone-ksk-submitted`.\n\n\
    Exit status: 0 when confirmed, 1 when no KSK is ready or the zone is unknown, 2 when no \
    server answers on the control socket."
)]
pub struct ZoneKskSubmittedArgs {
    /// The zone.
    #[arg(value_name = "NAME")]
    zone: String,
    /// The TTL of the parent's DS RRset: the old KSK stays published this long.
    #[arg(long, value_name = "SECS", default_value_t = 0)]
    ds_ttl: u64,
    #[command(flatten)]
    control: ControlArgs,
}

/// Runs `lode zone-ksk-submitted`.
pub fn ksk_submitted(args: ZoneKskSubmittedArgs) -> anyhow::Result<ExitCode> {
    send(
        &args.control,
        &format!("zone-ksk-submitted {} {}", args.zone.trim(), args.ds_ttl),
        Duration::from_secs(600),
    )
}

/// Arguments of `lode zone-status`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Prints, per zone: serial, records and memory, or \"no contents \
    yet\" for a secondary that has not transferred its zone; its source (file PATH, snapshot \
    PATH of file PATH, transfer from PRIMARIES, catalog member; and the journal of a zone that \
    takes updates); how long ago it was last loaded and how long that took; when its last load \
    failed, the first errors (file:line) and whether the previous version is still served; for a \
    secondary also its primaries, when it last refreshed, when it refreshes next, when it \
    expires, its last transfer and its last error.\n\n\
    Exit status: 0, 1 for an unknown zone, 2 when no server answers on the control socket."
)]
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

/// Arguments of `lode zone-notify`.
///
/// The zone's `notify` targets are sent a NOTIFY of the serial it serves
/// now, as after a change (retried until they answer, as any NOTIFY); the
/// answers are in the server's log.
#[derive(clap::Args, Debug)]
pub struct ZoneNotifyArgs {
    /// The zone.
    #[arg(value_name = "NAME")]
    zone: String,
    #[command(flatten)]
    control: ControlArgs,
}

/// Arguments of `lode zone-read`.
///
/// The records the running server serves now (its published version, with
/// every update applied), one per line with absolute owners, as zone-file
/// text; at most 1,000,000 of them (a bigger zone: name an owner or a
/// type, or use AXFR or `lode zone-flush`).
#[derive(clap::Args, Debug)]
pub struct ZoneReadArgs {
    /// The zone.
    #[arg(value_name = "ZONE")]
    zone: String,
    /// Only this owner (relative to the zone, or absolute; `@` is the apex).
    #[arg(long, value_name = "NAME")]
    owner: Option<String>,
    /// Only records of this type (a mnemonic or TYPEnnn).
    #[arg(long = "type", short = 't', value_name = "TYPE")]
    rtype: Option<String>,
    #[command(flatten)]
    control: ControlArgs,
}

/// Where the server's control socket is.
#[derive(clap::Args, Debug)]
pub struct ControlArgs {
    /// Control socket of the server (default: the `control` of --config, else
    /// /run/lode/lode.sock for root, else /tmp/lode-<uid>.sock); `-s` as knotc's.
    #[arg(long, short = 's', value_name = "PATH")]
    control: Option<PathBuf>,
    /// The server's configuration file, to find its control socket; `-c` as knotc's.
    #[arg(long, short = 'c', value_name = "FILE")]
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
                Some(p) => {
                    let base = file.parent().unwrap_or(Path::new(""));
                    Ok(lode_server::config::control_path(base, &p))
                }
                None => Ok(lode_server::default_control_path()),
            };
        }
        Ok(lode_server::default_control_path())
    }
}

/// Sends `command` to the socket at `path` and returns the reply; an error
/// that says why when the server cannot be reached.
pub fn request(
    path: &Path,
    command: &str,
    timeout: Duration,
) -> anyhow::Result<lode_server::Reply> {
    lode_server::control::request(path, command, timeout)
        .map_err(|e| anyhow::anyhow!(unreachable(path, &e)))
}

/// Why the control socket at `path` did not answer, in words.
pub fn unreachable(path: &Path, e: &io::Error) -> String {
    let p = path.display();
    match e.kind() {
        io::ErrorKind::NotFound => format!(
            "no Lode server is running with control socket {p} (is it started? is --control/--config right?)"
        ),
        io::ErrorKind::ConnectionRefused => {
            format!("{p} is a stale socket: no server is listening on it")
        }
        io::ErrorKind::PermissionDenied => format!(
            "permission denied on {p}: run as the server's user (lode) or a member of its group; the socket is mode 0660"
        ),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            format!("the server at {p} did not answer in time: {e}")
        }
        _ => format!("cannot reach the server at {p}: {e}"),
    }
}

/// Sends `command` and prints the reply: exit 0 if the server says it went
/// well, 1 if not, an error (exit 2) if the server cannot be reached.
pub fn send(control: &ControlArgs, command: &str, timeout: Duration) -> anyhow::Result<ExitCode> {
    let path = control.path()?;
    let reply = request(&path, command, timeout)?;
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

/// Runs `lode zone-read`.
pub fn read(args: ZoneReadArgs) -> anyhow::Result<ExitCode> {
    let mut command = format!("zone-read {}", args.zone.trim());
    match (&args.owner, &args.rtype) {
        (None, None) => {}
        (owner, rtype) => {
            command.push(' ');
            command.push_str(owner.as_deref().unwrap_or("-").trim());
            if let Some(t) = rtype {
                command.push(' ');
                command.push_str(t.trim());
            }
        }
    }
    send(&args.control, &command, Duration::from_secs(600))
}

/// Runs `lode zone-notify`.
pub fn notify(args: ZoneNotifyArgs) -> anyhow::Result<ExitCode> {
    send(
        &args.control,
        &format!("zone-notify {}", args.zone.trim()),
        Duration::from_secs(10),
    )
}

/// Runs `lode status`.
pub fn server_status(args: StatusArgs) -> anyhow::Result<ExitCode> {
    send(&args.control, "status", Duration::from_secs(10))
}

/// Runs `lode zone-reload`.
pub fn zone_reload(args: ZoneReloadArgs) -> anyhow::Result<ExitCode> {
    send(
        &args.control,
        &format!("zone-reload {}", args.zone.trim()),
        Duration::from_secs(args.timeout),
    )
}

/// Runs `lode stop`: asks, then waits for the socket to go and the process
/// to end.
pub fn stop(args: StopArgs) -> anyhow::Result<ExitCode> {
    let path = args.control.path()?;
    let reply = request(&path, "stop", Duration::from_secs(10))?;
    if !reply.ok {
        eprint!("{}", reply.text);
        return Ok(ExitCode::FAILURE);
    }
    let deadline = Instant::now() + Duration::from_secs(args.timeout);
    let pid = reply
        .text
        .split("pid ")
        .nth(1)
        .and_then(|t| t.trim_end_matches([')', '\n']).parse::<u32>().ok());
    let gone = || !path.exists() && !pid.is_some_and(running);
    while !gone() {
        if Instant::now() >= deadline {
            eprintln!(
                "the server was asked to stop but is still running after {} s ({} {})",
                args.timeout,
                path.display(),
                if path.exists() {
                    "is still there"
                } else {
                    "is gone"
                }
            );
            return Ok(ExitCode::FAILURE);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    println!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// True while `pid` is a live `lode` process (not a zombie) in our /proc
/// (a server in another PID namespace is not waited for).
fn running(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // "PID (COMM) STATE …": COMM may hold spaces and parentheses.
    let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
        return false;
    };
    let comm = &stat[open + 1..close];
    let state = stat[close + 1..].split_whitespace().next();
    comm == "lode" && !matches!(state, Some("Z" | "X"))
}
