//! `lode-bench axfr`: a primary's AXFR send rate against a client that only
//! drains (crates/bench/src/fleet/probe.rs `axfr_drain`), and the server CPU it took.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;

use super::{secs, BENCH_KEY};

/// Arguments of `lode-bench axfr`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Each round opens one TCP connection, sends a TSIG-signed AXFR and counts the records up to the closing SOA without parsing them further. With --pid (the server's main PID, e.g. `pgrep -x knotd`), the server's CPU time over the round is read from /proc/PID/stat (utime + stime, threads that ended included; 10 ms ticks): records per server CPU-second is the figure a shared, noisy machine moves least. Example: lode-bench axfr --server 127.0.0.1:5300 --zone 2.1.2.1.e164.arpa. --rounds 5 --pid $(pgrep -x knotd)"
)]
pub(crate) struct AxfrArgs {
    /// The primary, ADDR:PORT.
    #[arg(long)]
    server: SocketAddr,
    /// The zone to transfer.
    #[arg(long)]
    zone: String,
    /// TSIG key `[alg:]name:base64secret` (default: lode-bench's fixed hmac-sha256 key).
    #[arg(long)]
    tsig: Option<String>,
    /// Transfers, one after the other.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// The server's PID, to count its CPU time per round.
    #[arg(long)]
    pid: Option<u32>,
    /// Seconds one transfer may take.
    #[arg(long, default_value_t = 600.0)]
    limit: f64,
    /// Over TLS (RFC 9103 XoT; the server not authenticated): --server is then
    /// the server's TLS port.
    #[arg(long)]
    tls: bool,
}

pub(crate) fn run(a: AxfrArgs) -> anyhow::Result<ExitCode> {
    let key =
        lode_tsig::Key::parse_spec(a.tsig.as_deref().unwrap_or(BENCH_KEY)).context("--tsig")?;
    let limit: Duration = secs(a.limit, "--limit")?;
    let tls = match a.tls {
        true => Some(lode_bench::encrypted::dot_client().map_err(anyhow::Error::msg)?),
        false => None,
    };
    use lode_bench::fleet::probe::{axfr_rounds, axfr_summary};
    let rounds = axfr_rounds(
        a.server,
        &a.zone,
        &key,
        limit,
        tls.as_ref(),
        a.rounds,
        a.pid,
        |round, r| {
            use std::io::Write as _;
            let _ = writeln!(std::io::stdout().lock(), "round {round}: {}", r.line());
        },
    )?;
    out!("{}", axfr_summary(&rounds));
    Ok(ExitCode::SUCCESS)
}
