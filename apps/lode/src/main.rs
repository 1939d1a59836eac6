//! `lode`: the server binary — serve zones, check zone files, reload, update and
//! control a running server. The measuring tools are the lode-bench binary
//! (apps/lode-bench); `lode bench` and `lode gen` hand over to it.
#![forbid(unsafe_code)]

mod check;
mod dnssec;
mod enumcmd;
mod handover;
mod import_config;
mod keygen;
mod man;
mod manpages;
mod offline;
mod reload;
mod serve;
mod snapshot;
mod stats;
mod update;
mod zonebackup;
mod zonectl;
mod zoneflush;
mod zonefreeze;
mod zonepurge;

use clap::{Parser, Subcommand};

/// Lode: an authoritative-only DNS server for very large zones (ENUM, TLDs).
///
/// Start with `lode serve`: with no arguments it serves an embedded demo
/// (a small ENUM zone and example.com) on 127.0.0.1:5300, so that
///   dig @127.0.0.1 -p 5300 4.3.2.1.9.3.9.2.1.2.1.e164.arpa NAPTR
/// answers at once.
#[derive(Parser, Debug)]
#[command(name = "lode", version, about, long_about, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve zones over UDP and TCP (with no arguments: the embedded demo on 127.0.0.1:5300).
    Serve(serve::ServeArgs),
    /// Validate a zone file and print a summary, or its errors with file:line.
    Check(check::CheckArgs),
    /// Convert a Knot DNS knot.conf into a lode.toml, naming what cannot be converted (file:line).
    ImportConfig(import_config::ImportConfigArgs),
    /// Write binary snapshots of zones, from which `lode serve --snapshot-dir` starts fast.
    Snapshot(snapshot::SnapshotArgs),
    /// Ask a running server to reload its configuration and zones (as `knotc reload`).
    Reload(reload::ReloadArgs),
    /// Show a running server's version, PID, uptime, addresses, zones and counters (as `knotc status`).
    Status(zonectl::StatusArgs),
    /// Stop a running server, as SIGTERM does, and wait until it has stopped (as `knotc stop`).
    Stop(zonectl::StopArgs),
    /// Generate benchmark data sets: runs `lode-bench gen …` (the measuring tools' binary).
    Gen(handover::HandOverArgs),
    /// Convert an E.164 number to its ENUM domain name (RFC 6116), or back.
    Enum(enumcmd::EnumArgs),
    /// Measure DNS servers: runs `lode-bench …` (the measuring tools' binary).
    Bench(handover::HandOverArgs),
    /// The signing keys of zones Lode signs: list, generate, import (BIND, PEM), print DS (as keymgr).
    Dnssec(dnssec::DnssecArgs),
    /// Make a TSIG key and print it for Lode, for nsupdate/knsupdate/kdig -y, and for Knot/BIND.
    Keygen(keygen::KeygenArgs),
    /// Provision records in bulk by RFC 2136 UPDATE (nsupdate scripts, zone fragments, ENUM CSV).
    Update(update::UpdateArgs),
    /// Write zones that take updates to their zone files now (as `knotc zone-flush`).
    ZoneFlush(zoneflush::ZoneFlushArgs),
    /// Print the running server's counters (as its Prometheus endpoint; --json for scripts).
    Stats(stats::StatsArgs),
    /// Read one zone's file again now, even if unchanged (as `knotc zone-reload`).
    ZoneReload(zonectl::ZoneReloadArgs),
    /// Show each zone's serial, size, source, last load and, for a secondary, its transfer state (as `knotc zone-status`).
    ZoneStatus(zonectl::ZoneStatusArgs),
    /// Sign a signed zone whole again now, with the next serial (as `knotc zone-sign`).
    ZoneSign(zonectl::ZoneSignArgs),
    /// Read a signed zone's key folder again and run its key events now (as `knotc zone-keys-load`).
    ZoneKeysLoad(zonectl::ZoneKeysLoadArgs),
    /// Start a KSK or ZSK rollover of a signed zone now (as `knotc zone-key-rollover`).
    ZoneKeyRollover(zonectl::ZoneKeyRolloverArgs),
    /// Confirm that the parent serves the ready KSK's DS (as `knotc zone-ksk-submitted`).
    ZoneKskSubmitted(zonectl::ZoneKskSubmittedArgs),
    /// Make a secondary zone check its primaries now and transfer what is new (as `knotc zone-refresh`).
    ZoneRefresh(zonectl::ZoneRefreshArgs),
    /// Send NOTIFY of a zone's serial to its notify targets now (as `knotc zone-notify`).
    ZoneNotify(zonectl::ZoneNotifyArgs),
    /// Print a zone's records as the running server serves them, of one owner or type (as `knotc zone-read`).
    ZoneRead(zonectl::ZoneReadArgs),
    /// Make a secondary zone transfer the whole zone again (AXFR, as `knotc zone-retransfer`).
    ZoneRetransfer(zonectl::ZoneRefreshArgs),
    /// Hold zones still: updates REFUSED, no zone-file writes, signing, refreshes or reloads (as `knotc zone-freeze`).
    ZoneFreeze(zonefreeze::ZoneFreezeArgs),
    /// Let frozen zones change again, running what was postponed (as `knotc zone-thaw`).
    ZoneThaw(zonefreeze::ZoneFreezeArgs),
    /// Write zones' served versions and keys into a folder while serving (as `knotc zone-backup`).
    ZoneBackup(zonebackup::ZoneBackupArgs),
    /// Serve zones' versions and keys from a zone-backup folder again (as `knotc zone-restore`).
    ZoneRestore(zonebackup::ZoneBackupArgs),
    /// Remove for good the journal, state, timers and keys of zones no longer configured (as `knotc zone-purge +orphan`).
    ZonePurge(zonepurge::ZonePurgeArgs),
    /// Write the manual pages (lode.8, lode-serve.8, …) to a folder (for packaging, or to read with `man -l`).
    Man(manpages::ManArgs),
}

/// The global allocator of an allocator trial build (glibc's otherwise).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
#[cfg(all(feature = "jemalloc", not(feature = "mimalloc")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(a) => serve::run(a),
        Command::Check(a) => check::run(a),
        Command::ImportConfig(a) => import_config::run(a),
        Command::Snapshot(a) => snapshot::run(a),
        Command::Reload(a) => reload::run(a),
        Command::Status(a) => zonectl::server_status(a),
        Command::Stop(a) => zonectl::stop(a),
        Command::ZoneReload(a) => zonectl::zone_reload(a),
        Command::Gen(a) => handover::run(&["gen"], a),
        Command::Enum(a) => enumcmd::run(a),
        Command::Bench(a) => handover::run(&[], a),
        Command::Keygen(a) => keygen::run(a),
        Command::Dnssec(a) => dnssec::run(a),
        Command::Update(a) => update::run(a),
        Command::ZoneFlush(a) => zoneflush::run(a),
        Command::Stats(a) => stats::run(a),
        Command::ZoneStatus(a) => zonectl::status(a),
        Command::ZoneSign(a) => zonectl::zone_sign(a),
        Command::ZoneKeysLoad(a) => zonectl::keys_load(a),
        Command::ZoneKeyRollover(a) => zonectl::key_rollover(a),
        Command::ZoneKskSubmitted(a) => zonectl::ksk_submitted(a),
        Command::ZoneRefresh(a) => zonectl::refresh(a, false),
        Command::ZoneNotify(a) => zonectl::notify(a),
        Command::ZoneRead(a) => zonectl::read(a),
        Command::ZoneRetransfer(a) => zonectl::refresh(a, true),
        Command::ZoneFreeze(a) => zonefreeze::run(a, true),
        Command::ZoneThaw(a) => zonefreeze::run(a, false),
        Command::ZonePurge(a) => zonepurge::run(a),
        Command::ZoneBackup(a) => zonebackup::run(a, false),
        Command::ZoneRestore(a) => zonebackup::run(a, true),
        Command::Man(a) => man::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lode: error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
