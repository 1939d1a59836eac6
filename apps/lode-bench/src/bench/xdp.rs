//! `lode-bench xdp`: DNS over XDP side by side (crates/bench/src/xdp/), its
//! arguments and their checks; and `--hold-echo`, the XDP echo's holder the
//! benchmark starts in the server namespace.

use std::process::ExitCode;

use anyhow::Context;
use lode_bench::xdp::{self, Server, XdpConfig};

use super::{buffers::SocketBufferArg, scratch_dropped, secs, Folders};

/// Arguments of `lode-bench xdp`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Needs root, kxdpgun and kdig (knot-dnsutils), dnsperf, ethtool, and knot and nsd for their servers. Makes namespaces lodexdp-PID-s (server, 10.53.0.1) and lodexdp-PID-c (loaders, 10.53.0.2) joined by veth xbsPID ═ xbcPID, both ends polled by threaded NAPI; removed at the end, on errors and on Ctrl-C (after the current measurement; a run killed with SIGKILL leaves them and the next run removes them). Each server runs in turn pinned to --server-cpu with one worker; kxdpgun and dnsperf run on --client-cpu. Per round and server: CPU per answer at --cpu-rate for existing names and NXDOMAIN (kxdpgun, and dnsperf unless --no-dnsperf), then the peak answers/s (kxdpgun at rising rates — doubled from --cpu-rate while the answers/s grow by 5 %, then raised by 15 % from the doubled rate below the best — until the answers/s stop growing: answers/s at saturation) and a flood (kxdpgun at --flood-rate, as fast as it sends: a server that collapses when offered more than it answers shows here). --overload adds the capacity (the highest rate with ≥ 99 % answered, bisected between the peak search's bounds) and the answers/s at 2× and 5× capacity. --quick: 20000 records, one round, 2 s runs (about 5 minutes for the six servers)."
)]
pub(crate) struct XdpArgs {
    #[command(flatten)]
    folders: Folders,
    /// A short run: 20000 records, one round, 2 s runs.
    #[arg(long)]
    quick: bool,
    /// Servers, in run order (lode-xdp, knot-xdp, lode-udp, knot-udp, nsd, echo-xdp).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "lode-xdp,knot-xdp,lode-udp,knot-udp,nsd,echo-xdp"
    )]
    servers: Vec<String>,
    /// ENUM records (default 5000000, the 5M set; --quick 20000).
    #[arg(long)]
    records: Option<u64>,
    /// Zones the records are split into.
    #[arg(long, default_value_t = 10)]
    zones: u64,
    /// Rounds; medians over them (default 3; --quick 1).
    #[arg(long)]
    rounds: Option<usize>,
    /// Offered q/s of the CPU-per-answer runs: below every server's capacity.
    #[arg(long, default_value_t = 20_000)]
    cpu_rate: u64,
    /// Seconds of each CPU-per-answer run (default 10; --quick 2).
    #[arg(long)]
    cpu_secs: Option<u64>,
    /// Offered q/s of the flood runs (more than kxdpgun sends: flat out).
    #[arg(long, default_value_t = 10_000_000)]
    flood_rate: u64,
    /// Seconds of each step of the peak search, of each flood and of each
    /// overload run (default 5; --quick 2).
    #[arg(long)]
    step_secs: Option<u64>,
    /// Leave dnsperf out (kxdpgun only).
    #[arg(long)]
    no_dnsperf: bool,
    /// Also the capacity search and 2× and 5× overload.
    #[arg(long)]
    overload: bool,
    /// Bisection steps of the capacity search, between the peak search's
    /// bounds (default 4; --quick 2).
    #[arg(long)]
    search_steps: Option<usize>,
    /// The server's CPU.
    #[arg(long, default_value_t = 0)]
    server_cpu: usize,
    /// The loaders' CPU.
    #[arg(long, default_value_t = 1)]
    client_cpu: usize,
    /// Nice value of the server end's NAPI thread, which receives on the
    /// server's CPU (0: as the kernel makes it). 19 puts the server's threads
    /// before it, as a NIC that drops in hardware when its ring is full: a
    /// flood then costs the sender, not the server's CPU.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    napi_nice: i32,
    /// Nice value of the servers' processes (0: as lode-bench runs). Below
    /// 0 puts the server's threads before the NAPI thread that shares their
    /// CPU, as systemd's Nice= would; measured on veth it does not keep a
    /// flood from taking CPU 0 from the answers (--napi-nice 19 does).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    server_nice: i32,
    /// Seconds a server may take to load the zones.
    #[arg(long, default_value_t = 600.0)]
    load_limit: f64,
    #[command(flatten)]
    buffers: SocketBufferArg,
    /// Internal: attach the XDP echo to IFACE@PORT and hold it until standard
    /// input closes (what the benchmark runs in the server namespace).
    #[arg(long, hide = true, value_name = "IFACE@PORT")]
    hold_echo: Option<String>,
    /// Internal: attach a pass-through XDP program to IFACE and hold it until
    /// standard input closes (on the client's end while the echo is asked by
    /// dnsperf or kdig).
    #[arg(long, hide = true, value_name = "IFACE")]
    hold_pass: Option<String>,
}

pub(super) fn run(a: XdpArgs, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    if let Some(at) = &a.hold_echo {
        xdp::servers::hold_echo(at).map_err(|e| anyhow::anyhow!("--hold-echo {at}: {e}"))?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(iface) = &a.hold_pass {
        xdp::servers::hold_pass(iface).map_err(|e| anyhow::anyhow!("--hold-pass {iface}: {e}"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let servers = a
        .servers
        .iter()
        .map(|s| {
            Server::parse(s).with_context(|| {
                format!("--servers {s}: lode-xdp, knot-xdp, lode-udp, knot-udp, nsd or echo-xdp")
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    anyhow::ensure!(!servers.is_empty(), "--servers: at least one");
    anyhow::ensure!(
        a.server_cpu != a.client_cpu,
        "--server-cpu and --client-cpu differ"
    );
    let q = a.quick;
    let (out, work, temp) = a.folders.dirs("xdp", q);
    let cfg = XdpConfig {
        servers,
        records: a
            .records
            .unwrap_or(if q { 20_000 } else { 5_000_000 })
            .max(1),
        zones: a.zones.max(1),
        out,
        work: work.clone(),
        lode: if a.servers.iter().any(|s| s.starts_with("lode")) {
            lode.path()?
        } else {
            lode.path().unwrap_or_default()
        },
        bench: std::env::current_exe().context("finding the lode-bench binary")?,
        rounds: a.rounds.unwrap_or(if q { 1 } else { 3 }).max(1),
        cpu_rate: a.cpu_rate.max(1),
        cpu_secs: a.cpu_secs.unwrap_or(if q { 2 } else { 10 }).max(1),
        flood_rate: a.flood_rate.max(1),
        step_secs: a.step_secs.unwrap_or(if q { 2 } else { 5 }).max(1),
        dnsperf: !a.no_dnsperf,
        overload: a.overload,
        search_steps: a.search_steps.unwrap_or(if q { 2 } else { 4 }),
        socket_buffer: a.buffers.size(),
        load_limit: secs(a.load_limit, "--load-limit")?,
        server_cpu: a.server_cpu,
        client_cpu: a.client_cpu,
        napi_nice: a.napi_nice.clamp(-20, 19),
        server_nice: a.server_nice.clamp(-20, 19),
    };
    scratch_dropped(temp, &work, xdp::run(&cfg).map_err(|e| anyhow::anyhow!(e)))?;
    Ok(ExitCode::SUCCESS)
}
