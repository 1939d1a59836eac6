//! The instruments of `lode-bench`: the echo ceiling, the RFC 8219 rate search,
//! closed-loop client ramps and the side-by-side comparisons.

/// Prints a line to stdout; a closed pipe (`| head`) ends the command with an error, not a panic.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)?
    }};
}

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use lode_bench::clients::{self, ClientsConfig};
use lode_bench::gen::dns64perf::Ipv4Net;
use lode_bench::query::{Expect, QuerySet};
use lode_bench::rate::{RateConfig, Tester};
use lode_wire::Rtype;
use rate::print_step;

mod attack;
mod axfr;
mod big;
mod buffers;
mod com;
mod encrypted;
mod fleet;
mod folders;
mod rate;
mod server_cost;
mod signing;
mod tld;
mod updates;
mod xdp;
mod zones;

use folders::{run_dirs, scratch_dropped, Folders};

/// The instruments: the top-level commands of `lode-bench` besides `gen`.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum BenchWhat {
    /// A UDP responder that returns every query with QR set: the machine's ceiling.
    Echo(EchoArgs),
    /// RFC 8219 §9: constant-rate steps and a binary search for the highest rate with
    /// every query answered validly within the timeout, repeated; median, p1, p99.
    Rate(rate::RateArgs),
    /// Closed-loop clients added step by step (enumperf): throughput and latency per step.
    Clients(ClientsArgs),
    /// Query load under RFC 2136 updates: a constant-rate UPDATE stream derived from the
    /// zones (adds, deletes, changes: a third each), optionally TSIG-signed, while the
    /// rate tester runs; query rate without and with updates, update latency.
    Update(UpdateArgs),
    /// Side by side: Knot DNS, NSD, BIND 9, PowerDNS and Lode on the same generated
    /// zones, the same tests, interleaved; a report (Markdown, JSON, PNG) in a folder.
    Compare(Box<CompareArgs>),
    /// Updates side by side: Lode, Knot DNS and BIND 9 with the same key and
    /// zones: durable update rate vs the disk's fdatasync rate, query rate under update
    /// rates, `lode update` bulk load with query latency; updates.md and updates.json.
    CompareUpdates(Box<updates::CompareUpdatesArgs>),
    /// The disk's durable-write rate: 4 KiB write + fdatasync in a loop in a folder.
    Fsync(FsyncArgs),
    /// A primary and N secondaries (Lode, Knot DNS, NSD, BIND), each in its own network
    /// namespace on one bridge (10.53.0.0/24, made and removed here; needs root):
    /// update propagation, query rate of a secondary under IXFR, AXFR of a large zone.
    Fleet(Box<fleet::FleetArgs>),
    /// Under attack: Lode, Knot DNS and NSD side by side — answered rate
    /// under 1.5 and 2 × the zero-loss rate with random NXDOMAIN mixes, CPU per answer
    /// with RRL and cookies, UDP rate under a TCP abuse mix; attack.md and attack.json.
    Attack(Box<attack::AttackArgs>),
    /// A primary's AXFR send rate: TSIG-signed AXFRs drained by a client that only
    /// counts the records; records/s and, with --pid, records per server CPU-second.
    Axfr(axfr::AxfrArgs),
    /// New DNS-over-TLS (or QUIC) connections per second, a full handshake and one
    /// query each; with --pid, the server's CPU per handshake.
    Handshakes(encrypted::HandshakesArgs),
    /// DNS-over-QUIC answers per second over persistent connections, a stream per query.
    Doq(encrypted::DoqArgs),
    /// Encrypted transports side by side: Lode, NSD and BIND 9 serving one zone over DoT
    /// and TCP (dnsperf), new handshakes and their CPU; for Lode DoQ, idle connections'
    /// memory, AXFR over TLS, a BIND secondary over TLS; encrypted.md.
    Encrypted(Box<encrypted::EncryptedArgs>),
    /// CPU per durable update: Lode, then Knot DNS, on the 500k ENUM set in 10 zones taking
    /// TSIG-signed single-NAPTR updates over TCP from closed-loop clients; server CPU
    /// seconds per acknowledged update, updates/s ÷ the journal disk's fdatasync/s.
    UpdateCpu(Box<server_cost::UpdateCpuArgs>),
    /// Lode's memory after records/5 changes (adds, deletions, changes) to a 5M-record
    /// zone and their compactions, against a fresh load of the same contents; its peak.
    UpdateMemory(Box<server_cost::UpdateMemoryArgs>),
    /// AXFR in: a Lode secondary taking a zone of N records from a Lode primary; its
    /// peak memory against its resident size once it serves the zone, and the time.
    AxfrIn(Box<server_cost::AxfrInArgs>),
    /// DNS over XDP on a veth pair: Lode and Knot DNS over XDP and over sockets, NSD and
    /// an in-kernel XDP echo; CPU per answer, answers/s at saturation, overload; needs root.
    Xdp(Box<xdp::XdpArgs>),
    /// Many small updatable zones beside Knot DNS and NSD: seconds until every zone
    /// answers, memory, threads, files, durable updates/s; catalog members; many-zones.md.
    ManyZones(Box<zones::ManyZonesArgs>),
    /// Zones added, then removed, by `lode reload`: each reload's time, Lode's memory,
    /// threads and files after it; reload-zones.md.
    ReloadZones(zones::ReloadZonesArgs),
    /// A TLD-shaped zone (`gen tld`) served by Lode, Knot DNS and NSD, unsigned and signed
    /// by kzonesign (NSEC3 opt-out): server CPU per referral, DO=1 referral and DO=1
    /// NXDOMAIN at a fixed rate, memory, time to the first answer; tld.md.
    Tld(Box<tld::TldArgs>),
    /// The large sets: 100 M records served by Lode (start, memory, zero-loss rates), the
    /// zone-text parse rate on every core and the start of a 20 M set from snapshots.
    BigSets(Box<big::BigSetsArgs>),
    /// Today's .com on one machine: 160 M delegations generated, loaded, started from a
    /// snapshot, signed by Lode (NSEC3 opt-out), updated with a Lode secondary, queried;
    /// each step's time and memory against the goals; com.md.
    Com(Box<com::ComArgs>),
    /// Signing through a PKCS #11 token (SoftHSM2) against key files, Lode beside Knot's
    /// kzonesign: signatures/s of a whole-zone signing; hsm.md.
    Hsm(Box<signing::HsmArgs>),
    /// A ZSK rollover of a large signed zone, Lode and Knot DNS: time and server CPU until
    /// every signature is by the new key, query latency during it against static; rollover.md.
    Rollover(Box<signing::RolloverArgs>),
    /// Signing: a zone signed whole by Lode, Knot, BIND and ldns (time, signatures/s, peak
    /// memory); an NSEC3-signed zone's memory and the server CPU per DO=1 answer; signing.md.
    Signing(Box<signing::SigningArgs>),
}

/// Arguments of `lode-bench fsync`.
#[derive(clap::Args, Debug)]
pub(crate) struct FsyncArgs {
    /// The folder (on the journal's disk).
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Seconds.
    #[arg(long, default_value_t = 3.0)]
    secs: f64,
}

/// The key used when none is given (a test key; the servers listen on loopback only).
const BENCH_KEY: &str =
    "hmac-sha256:lode-bench-update.:bG9kZS1iZW5jaC11cGRhdGUta2V5LTMyLWJ5dGVzISE=";

fn fsync(a: FsyncArgs) -> anyhow::Result<ExitCode> {
    let p = lode_bench::durable::fsync_probe(&a.dir, secs(a.secs, "--secs")?)?;
    out!("{}: {p}", a.dir.display());
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `lode-bench compare`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Installs missing packages (knot nsd bind9 pdns-server \
pdns-backend-bind dnsperf fonts-dejavu-core) with apt-get unless --no-install. Servers listen on \
127.0.0.1 ports from --base-port (echo) upward, run as root in their own directories under \
--work, and are stopped by PID when done or on errors. --quick: 1 s steps, two rounds, clients \
1 2 4.

CPU per answer, flatness, memory: every round runs the echo beside the servers; per server and query kind (existing, \
NXDOMAIN, outside every zone) one step at --cpu-rate measures server CPU per answer; \
--flat-records 20000000 adds Lode on a 20M set to the rounds (flatness); --memory-records \
5000000 adds load time and memory of --memory-servers on a 5M set; --shared-naptr K adds Lode's \
memory on that set with K shared NAPTR RRsets. `lode-bench run experiments/queries.toml` runs the whole set.

The cost of the metrics: --metrics-overhead adds, after the other tests, rounds of Lode alone with its \
metrics off (query-counters = false, no endpoint) and on (counters, metrics-listen on \
127.0.0.1:<--base-port + 6>, GET /metrics scraped every second), alternated off, on, off, on; \
each run: start, warm-up step, one --cpu-step step per query kind at --cpu-rate. report.md gets \
a section with the medians of server CPU per answer, on ÷ off and PASS (≤ 1.02) or MISS. \
Example: --servers lode --quick --no-dnsperf --metrics-overhead --metrics-runs 8 \
--cpu-step 5 --cpu-rate 20000.")]
pub(crate) struct CompareArgs {
    #[command(flatten)]
    folders: Folders,
    /// A short comparison (a few minutes on the 500k set).
    #[arg(long)]
    quick: bool,
    /// Servers, in run order (echo, lode, knot, nsd, bind, powerdns).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "echo,lode,knot,nsd,bind,powerdns"
    )]
    servers: Vec<String>,
    /// ENUM records (default 500000, Shen & Schulzrinne's 500k set).
    #[arg(long, default_value_t = 500_000)]
    records: u64,
    /// Zones the records are split into (default: Shen & Schulzrinne's layout for 500k, 5M and 20M
    /// records, else 10).
    #[arg(long)]
    zones: Option<u64>,
    /// Leading digits of the numbers (default: Shen & Schulzrinne's for 500k (16461) and 20M (131)).
    #[arg(long)]
    prefix: Option<String>,
    /// Rounds over all servers (default 3; --quick 2).
    #[arg(long)]
    runs: Option<usize>,
    /// Seconds per rate step (default 5; --quick 1).
    #[arg(long)]
    step: Option<f64>,
    /// Upper bound of the rate searches (q/s; the echo's search goes to twice this).
    #[arg(long, default_value_t = 200_000)]
    high: u64,
    /// Resolution of the rate searches (default high/100; --quick high/25).
    #[arg(long)]
    resolution: Option<u64>,
    /// Milliseconds after which a reply no longer counts.
    #[arg(long, default_value_t = 250)]
    timeout: u64,
    /// Client counts of the closed-loop ramp (default 1,2,4,8,16; --quick 1,2,4).
    #[arg(long, value_delimiter = ',')]
    clients: Vec<usize>,
    /// No closed-loop client ramp.
    #[arg(long, conflicts_with = "clients")]
    no_clients: bool,
    /// Seconds per client step (default 5; --quick 1).
    #[arg(long)]
    client_step: Option<f64>,
    /// Offered rate (q/s) of the fixed-rate CPU steps, one per query kind; below every
    /// fast server's zero-loss rate; 0: none.
    #[arg(long, default_value_t = 50_000)]
    cpu_rate: u64,
    /// Seconds per fixed-rate CPU step (default: --step).
    #[arg(long)]
    cpu_step: Option<f64>,
    /// Also run --flat-servers on a set of this many records (flatness: 20000000).
    #[arg(long)]
    flat_records: Option<u64>,
    /// Servers run on the --flat-records set (Knot and NSD need ~8 GB each on 20M).
    #[arg(long, value_delimiter = ',', default_value = "lode")]
    flat_servers: Vec<String>,
    /// Also measure load time and memory of --memory-servers on a set of this many
    /// records (the memory target: 5000000).
    #[arg(long)]
    memory_records: Option<u64>,
    /// Servers measured on the --memory-records set.
    #[arg(long, value_delimiter = ',', default_value = "lode,knot,nsd")]
    memory_servers: Vec<String>,
    /// Also measure Lode's memory on the --memory-records set (or --records) generated
    /// with this many shared NAPTR RRsets (`lode-bench gen enum --shared-naptr`).
    #[arg(long, value_name = "K")]
    shared_naptr: Option<u64>,
    /// Worker threads (processes for NSD) of every server.
    #[arg(long, default_value_t = 1)]
    server_workers: usize,
    /// Sender/receiver pairs of the tester.
    #[arg(long, default_value_t = 1)]
    tester_threads: usize,
    /// Source ports per tester thread.
    #[arg(long, default_value_t = 1000)]
    ports: usize,
    /// CPU the server under test is pinned to.
    #[arg(long, default_value_t = 0)]
    server_cpu: usize,
    /// CPU the tester is pinned to.
    #[arg(long, default_value_t = 1)]
    tester_cpu: usize,
    /// First port: the echo; servers use the next five (and --metrics-overhead's
    /// metrics endpoint the one after).
    #[arg(long, default_value_t = 15800)]
    base_port: u16,
    /// Seconds to wait for a server's first answer.
    #[arg(long, default_value_t = 300.0)]
    load_limit: f64,
    /// Other load (fraction of the machine) above which a run is redone (`20%`).
    #[arg(long, default_value = "20%")]
    max_other_load: String,
    /// CPU steal above which a run is redone (`5%`).
    #[arg(long, default_value = "5%")]
    max_steal: String,
    /// Redos of a disturbed run.
    #[arg(long, default_value_t = 1)]
    redo: usize,
    /// No dnsperf search against the echo (the tester's ceiling).
    #[arg(long)]
    no_dnsperf: bool,
    /// Do not install missing packages.
    #[arg(long)]
    no_install: bool,
    /// Also measure the CPU cost of Lode's metrics: rounds of Lode with metrics off and
    /// on, alternated (see below).
    #[arg(long)]
    metrics_overhead: bool,
    /// Rounds (one run off, one on) of --metrics-overhead (default: --runs).
    #[arg(long, value_name = "N", requires = "metrics_overhead")]
    metrics_runs: Option<usize>,
    #[command(flatten)]
    buffers: buffers::SocketBufferArg,
}

/// Parses a comma list of server names (`echo` allowed only if `echo_ok`).
fn parse_servers(
    list: &[String],
    echo_ok: bool,
) -> anyhow::Result<Vec<lode_bench::compare::servers::Kind>> {
    use lode_bench::compare::servers::Kind;
    let mut servers = Vec::new();
    for s in list.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        let k = Kind::parse(s)
            .filter(|k| echo_ok || *k != Kind::Echo)
            .with_context(|| {
                format!(
                    "unknown server {s:?} (lode, knot, nsd, bind, powerdns{})",
                    if echo_ok { ", echo" } else { "" }
                )
            })?;
        if !servers.contains(&k) {
            servers.push(k);
        }
    }
    Ok(servers)
}

fn compare(a: CompareArgs, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    use lode_bench::compare::{self, seed_layout, CompareConfig};
    let servers = parse_servers(&a.servers, true)?;
    if servers.is_empty() {
        bail!("--servers: name at least one");
    }
    let q = a.quick;
    let step = secs(a.step.unwrap_or(if q { 1.0 } else { 5.0 }), "--step")?;
    let cpu_step = match a.cpu_step {
        Some(s) => secs(s, "--cpu-step")?,
        None => step,
    };
    let client_step = secs(
        a.client_step.unwrap_or(if q { 1.0 } else { 5.0 }),
        "--client-step",
    )?;
    let clients = if a.no_clients {
        Vec::new()
    } else if a.clients.is_empty() {
        if q {
            vec![1, 2, 4]
        } else {
            vec![1, 2, 4, 8, 16]
        }
    } else {
        a.clients.clone()
    };
    if clients.contains(&0) || clients.iter().any(|&c| c > 1000) {
        bail!("--clients: counts between 1 and 1000");
    }
    if a.high == 0 {
        bail!("--high must be positive");
    }
    for (what, n) in [
        ("--records", Some(a.records)),
        ("--flat-records", a.flat_records),
        ("--memory-records", a.memory_records),
    ] {
        if n == Some(0) {
            bail!("{what} must be positive");
        }
    }
    if a.shared_naptr == Some(0) {
        bail!("--shared-naptr needs at least 1");
    }
    let runs = a.runs.unwrap_or(if q { 2 } else { 3 });
    let metrics_runs = match (a.metrics_overhead, a.metrics_runs) {
        (false, _) => 0,
        (true, None) => runs,
        (true, Some(0)) => bail!("--metrics-runs needs at least 1"),
        (true, Some(n)) => n,
    };
    if metrics_runs > 0 && a.cpu_rate == 0 {
        bail!("--metrics-overhead measures at --cpu-rate: it must not be 0");
    }
    let (seed_zones, seed_prefix) = seed_layout(a.records);
    let (out, work, temp) = a.folders.dirs("compare", q);
    let cfg = CompareConfig {
        out: out.clone(),
        work: work.clone(),
        lode: lode.path()?,
        bench: std::env::current_exe().context("finding the lode-bench binary")?,
        servers,
        records: a.records,
        zones: a.zones.unwrap_or(seed_zones),
        prefix: match &a.prefix {
            Some(p) => Some(p.clone()).filter(|p| !p.is_empty()),
            None => seed_prefix,
        },
        runs,
        step,
        high: a.high,
        resolution: a
            .resolution
            .unwrap_or(a.high / if q { 25 } else { 100 })
            .max(1),
        timeout: Duration::from_millis(a.timeout.max(1)),
        clients,
        client_step,
        server_workers: a.server_workers.max(1),
        tester_threads: a.tester_threads.max(1),
        ports: a.ports,
        server_cpu: a.server_cpu,
        tester_cpu: a.tester_cpu,
        base_port: a.base_port,
        load_limit: secs(a.load_limit, "--load-limit")?,
        max_other_load: parse_fraction(&a.max_other_load)?,
        max_steal: parse_fraction(&a.max_steal)?,
        redo: a.redo,
        install: !a.no_install,
        cpu_rate: a.cpu_rate,
        cpu_step,
        flat_records: a.flat_records,
        flat_servers: parse_servers(&a.flat_servers, false)?,
        memory_records: a.memory_records,
        memory_servers: parse_servers(&a.memory_servers, false)?,
        shared_naptr: a.shared_naptr,
        dnsperf: !a.no_dnsperf,
        metrics_runs,
        socket_buffer: a.buffers.size(),
    };
    let result = scratch_dropped(temp, &work, compare::run(&cfg))?;
    print_report(
        &out.join("report.md"),
        result.runs.len(),
        result.wall_secs,
        &result.notes,
    )?;
    if let Some(m) = compare::metrics::summarize(&result.metrics) {
        match (m.ratio, m.pass()) {
            (Some(r), Some(pass)) => out!(
                "metrics overhead: {:.3} µs/answer off, {:.3} on: on ÷ off = {r:.3}, {} (≤ {})",
                m.off_us,
                m.on_us,
                if pass { "PASS" } else { "MISS" },
                compare::metrics::LIMIT
            ),
            _ => out!("metrics overhead: not measured (no answers)"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `lode-bench update`.
#[derive(clap::Args, Debug)]
pub(crate) struct UpdateArgs {
    /// The server under test.
    #[arg(long)]
    server: SocketAddr,
    /// Zone NAME=FILE the updates are derived from (repeatable; the server must serve
    /// them); with --clients the NAME alone is enough.
    #[arg(long, required = true, value_name = "NAME=FILE")]
    zone: Vec<String>,
    /// Updates per second.
    #[arg(long, default_value_t = 100.0)]
    update_rate: f64,
    /// TSIG key `[alg:]name:base64secret` to sign every update with (alg: hmac-md5,
    /// hmac-sha1, hmac-sha224, hmac-sha256 (default), hmac-sha384, hmac-sha512).
    #[arg(long, value_name = "KEY")]
    tsig: Option<String>,
    /// Milliseconds to wait for an update's reply.
    #[arg(long, default_value_t = 2000)]
    update_timeout: u64,
    /// Query rate of single steps (default: a binary search up to --high).
    #[arg(long)]
    rate: Option<u64>,
    /// Upper bound of the query-rate search.
    #[arg(long, default_value_t = 100_000)]
    high: u64,
    /// Resolution of the search (default: high / 100).
    #[arg(long)]
    resolution: Option<u64>,
    /// Seconds per query step.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Milliseconds after which a query reply no longer counts.
    #[arg(long, default_value_t = 250)]
    timeout: u64,
    /// Queries allowed to go unanswered (`0`, `0.01%`).
    #[arg(long, default_value = "0")]
    loss: String,
    /// Sender/receiver thread pairs of the query load.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Source ports per query thread.
    #[arg(long, default_value_t = 1000)]
    ports: usize,
    /// Add an EDNS OPT record to every query.
    #[arg(long)]
    edns: bool,
    /// Closed-loop durable-update mode (the durable-update target) instead of the query search:
    /// this many clients, each its own TCP connection, adding new NAPTRs (owners:
    /// numbers from --first, reversed below each --zone NAME; no zone file needed).
    #[arg(long)]
    clients: Option<usize>,
    /// Closed-loop mode: records per UPDATE message.
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// Closed-loop mode: messages in flight per connection (1: closed loop).
    #[arg(long, default_value_t = 1)]
    window: usize,
    /// Closed-loop mode: first number below each zone.
    #[arg(long, default_value_t = 500_000)]
    first: u64,
    /// Closed-loop mode: digits of the numbers below each zone.
    #[arg(long, default_value_t = 6)]
    digits: usize,
    /// Closed-loop mode: also measure the fdatasync rate in this folder (the journal's)
    /// and print durable updates/s ÷ fdatasync/s.
    #[arg(long, value_name = "DIR")]
    fsync_dir: Option<PathBuf>,
}

/// Arguments of `lode-bench echo`.
#[derive(clap::Args, Debug)]
pub(crate) struct EchoArgs {
    /// Address to listen on (repeatable).
    #[arg(long, required = true)]
    listen: Vec<SocketAddr>,
    /// Sockets (worker threads) per address, bound with SO_REUSEPORT.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Stop after this many seconds (default: run until killed).
    #[arg(long)]
    duration: Option<f64>,
    /// Receive buffer of each socket, bytes as the kernel accounts them (half of it is
    /// asked: the kernel doubles a request); 0: the kernel's net.core.rmem_default
    /// (default: 4 MiB asked, as Lode's own default).
    #[arg(long, value_name = "BYTES")]
    socket_buffer: Option<u64>,
}

/// Where queries come from (shared by `rate` and `clients`).
#[derive(clap::Args, Debug)]
struct QuerySource {
    /// Query file in dnsperf format (`name TYPE` per line), e.g. from `lode-bench gen`.
    #[arg(long, conflicts_with = "dns64perf")]
    queries: Option<PathBuf>,
    /// Generate the dns64perf namespace of this IPv4 network instead (`10.0.0.0/16`, `/16`).
    #[arg(long)]
    dns64perf: Option<String>,
    /// Query type for --dns64perf.
    #[arg(long, default_value = "A")]
    qtype: String,
    /// Add an EDNS OPT record (UDP size 1232) to every query.
    #[arg(long)]
    edns: bool,
    /// Valid replies: answer (NOERROR with records), noerror, nxdomain, refused, any.
    #[arg(long, default_value = "answer")]
    expect: String,
}

impl QuerySource {
    /// Loads or generates at most `limit` queries.
    fn load(&self, limit: usize) -> anyhow::Result<QuerySet> {
        match (&self.queries, &self.dns64perf) {
            (Some(path), _) => QuerySet::read_file(path, limit, self.edns)
                .with_context(|| format!("reading {}", path.display())),
            (None, Some(net)) => {
                let net = Ipv4Net::parse(net)?;
                let rtype = Rtype::from_mnemonic(&self.qtype.to_ascii_uppercase())
                    .with_context(|| format!("unknown type {}", self.qtype))?;
                Ok(QuerySet::dns64perf(net, rtype, limit, self.edns))
            }
            (None, None) => bail!("give --queries FILE or --dns64perf CIDR"),
        }
    }

    fn expect(&self) -> anyhow::Result<Expect> {
        Expect::parse(&self.expect).with_context(|| format!("unknown --expect {}", self.expect))
    }
}

/// Arguments of `lode-bench clients`.
#[derive(clap::Args, Debug)]
pub(crate) struct ClientsArgs {
    /// The server under test.
    #[arg(long)]
    server: SocketAddr,
    #[command(flatten)]
    source: QuerySource,
    /// Clients in the first step.
    #[arg(long, default_value_t = 1)]
    from: usize,
    /// Clients in the last step.
    #[arg(long, default_value_t = 8)]
    to: usize,
    /// Clients added per step.
    #[arg(long, default_value_t = 1)]
    step: usize,
    /// Seconds per step.
    #[arg(long, default_value_t = 10.0)]
    step_secs: f64,
    /// Milliseconds a client waits for a reply.
    #[arg(long, default_value_t = 250)]
    timeout: u64,
}

/// Runs the command; `lode` is the server binary the comparisons start (`--lode`).
pub(crate) fn run(what: BenchWhat, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    match what {
        BenchWhat::Echo(a) => echo(a),
        BenchWhat::Rate(a) => rate::run(a),
        BenchWhat::Clients(a) => clients(a),
        BenchWhat::Update(a) => update(a),
        BenchWhat::Compare(a) => compare(*a, lode),
        BenchWhat::CompareUpdates(a) => updates::run(*a, lode),
        BenchWhat::Fsync(a) => fsync(a),
        BenchWhat::Fleet(a) => fleet::run(*a, lode),
        BenchWhat::Attack(a) => attack::run(*a, lode),
        BenchWhat::Axfr(a) => axfr::run(a),
        BenchWhat::Handshakes(a) => encrypted::handshakes(a),
        BenchWhat::Doq(a) => encrypted::doq(a),
        BenchWhat::Encrypted(a) => encrypted::encrypted(*a, lode),
        BenchWhat::Xdp(a) => xdp::run(*a, lode),
        BenchWhat::UpdateCpu(a) => server_cost::update_cpu(*a, lode),
        BenchWhat::UpdateMemory(a) => server_cost::update_memory(*a, lode),
        BenchWhat::AxfrIn(a) => server_cost::axfr_in(*a, lode),
        BenchWhat::ManyZones(a) => zones::run_many(*a, lode),
        BenchWhat::ReloadZones(a) => zones::run_reload(a, lode),
        BenchWhat::Tld(a) => tld::run(*a, lode),
        BenchWhat::BigSets(a) => big::run(*a, lode),
        BenchWhat::Com(a) => com::run(*a, lode),
        BenchWhat::Hsm(a) => signing::run_hsm(*a, lode),
        BenchWhat::Rollover(a) => signing::run_rollover(*a, lode),
        BenchWhat::Signing(a) => signing::run_signing(*a, lode),
    }
}

fn echo(a: EchoArgs) -> anyhow::Result<ExitCode> {
    let server = match a.socket_buffer {
        Some(b) => lode_bench::echo::start_sized(&a.listen, a.workers, (b / 2) as usize)?,
        None => lode_bench::echo::start(&a.listen, a.workers)?,
    };
    for addr in server.local_addrs() {
        out!("echo listening on {addr} ({} workers)", a.workers.max(1));
    }
    let start = Instant::now();
    let mut last = server.stats();
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let now = server.stats();
        if now.queries != last.queries {
            out!(
                "{:>6.1} s  {} q/s  (total {} in, {} out)",
                start.elapsed().as_secs_f64(),
                now.queries - last.queries,
                now.queries,
                now.responses
            );
        }
        last = now;
        if a.duration
            .is_some_and(|d| start.elapsed().as_secs_f64() >= d)
        {
            break;
        }
    }
    server.stop();
    Ok(ExitCode::SUCCESS)
}

/// Seconds as "1 h 05 min", "3 min 20 s" or "45 s".
fn human_duration(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

/// Parses `0.01%` (percent) or `0.0001` (fraction).
/// Says where a comparison's report went, and its notes.
fn print_report(
    path: &std::path::Path,
    runs: usize,
    wall_secs: f64,
    notes: &[String],
) -> anyhow::Result<()> {
    out!("report: {} ({runs} runs, {wall_secs:.0} s)", path.display());
    for n in notes {
        out!("note: {n}");
    }
    Ok(())
}

fn parse_fraction(s: &str) -> anyhow::Result<f64> {
    let v = match s.trim().strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => s.trim().parse::<f64>(),
    }
    .with_context(|| format!("not a fraction or percentage: {s}"))?;
    if !(0.0..=1.0).contains(&v) {
        bail!("{s} is not between 0 and 100 %");
    }
    Ok(v)
}

fn secs(v: f64, what: &str) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(v)
        .ok()
        .filter(|d| !d.is_zero())
        .with_context(|| format!("bad {what}: {v}"))
}

fn clients(a: ClientsArgs) -> anyhow::Result<ExitCode> {
    if a.from == 0 || a.to < a.from || a.step == 0 {
        bail!("need 1 ≤ --from ≤ --to and --step ≥ 1");
    }
    let step_duration = secs(a.step_secs, "--step-secs")?;
    // Enough distinct queries for a fast server; they cycle if the list is shorter.
    let queries = Arc::new(a.source.load(10_000_000)?);
    let cfg = ClientsConfig {
        server: a.server,
        step_duration,
        timeout: Duration::from_millis(a.timeout.max(1)),
        expect: a.source.expect()?,
    };
    out!(
        "server {}  {} queries  {:.1} s per step  timeout {} ms",
        a.server,
        queries.len(),
        step_duration.as_secs_f64(),
        a.timeout
    );
    out!("clients        q/s   answered  timeouts  wrong    p50 µs    p90 µs    p99 µs    max µs");
    let mut cursor = 0u64;
    let mut n = a.from;
    while n <= a.to {
        let s = clients::run_step(&cfg, &queries, n, cursor)?;
        cursor = cursor.wrapping_add(s.answered + s.timeouts + s.wrong);
        out!(
            "{:>7} {:>10.0} {:>10} {:>9} {:>6} {:>9.0} {:>9.0} {:>9.0} {:>9.0}",
            s.clients,
            s.qps,
            s.answered,
            s.timeouts,
            s.wrong,
            s.latency_us[0],
            s.latency_us[1],
            s.latency_us[2],
            s.latency_us[3]
        );
        n += a.step;
    }
    Ok(ExitCode::SUCCESS)
}

fn update(a: UpdateArgs) -> anyhow::Result<ExitCode> {
    use lode_bench::update::{during_updates, run_stream, UpdateConfig, UpdatePlan, UpdateResult};
    use lode_wire::Name;
    let duration = secs(a.duration, "--duration")?;
    if a.clients.is_some() {
        return closed_loop(&a, duration);
    }
    if !(a.update_rate > 0.0 && a.update_rate <= 1_000_000.0) {
        bail!("--update-rate must be between 0 and 1000000");
    }
    let mut zones = Vec::new();
    for z in &a.zone {
        let (name, file) = z
            .split_once('=')
            .filter(|(n, f)| !n.is_empty() && !f.is_empty())
            .with_context(|| format!("--zone {z:?}: expected NAME=FILE"))?;
        let apex = Name::parse(name, Some(&Name::root()))
            .map_err(|e| anyhow::anyhow!("--zone {z:?}: {e}"))?;
        zones.push((apex, PathBuf::from(file)));
    }
    let key = a
        .tsig
        .as_deref()
        .map(|s| lode_tsig::Key::parse_spec(s).with_context(|| format!("--tsig {s:?}")))
        .transpose()?;
    let resolution = a.resolution.unwrap_or((a.high / 100).max(1));
    // Steps of one phase: one per rate, or a whole binary search.
    let steps = if a.rate.is_some() {
        1
    } else {
        2 + (a.high / resolution).max(1).ilog2() as u64 + 1
    };
    let phase =
        duration.mul_f64(steps as f64) + Duration::from_millis(a.timeout + 100) * steps as u32;
    let count = (a.update_rate * phase.as_secs_f64()).ceil() as u64 + 1;
    let zone_refs: Vec<(Name, &std::path::Path)> = zones
        .iter()
        .map(|(n, f)| (n.clone(), f.as_path()))
        .collect();
    let mut plan = UpdatePlan::from_files(&zone_refs, count + 1)?;
    let mut ucfg = UpdateConfig {
        server: a.server,
        rate: a.update_rate,
        count: 1,
        first: 0,
        timeout: Duration::from_millis(a.update_timeout.max(1)),
        key,
    };
    out!(
        "server {}  {} zone(s)  {} names queried  updates {}/s{}  query steps {:.1} s",
        a.server,
        zones.len(),
        plan.untouched_len(),
        a.update_rate,
        match &ucfg.key {
            Some(k) => format!(" TSIG {}", k.algorithm()),
            None => String::new(),
        },
        duration.as_secs_f64()
    );
    // One update first: a server that refuses updates is reported at once.
    let never = std::sync::atomic::AtomicBool::new(false);
    let probe = run_stream(
        &ucfg,
        &mut plan,
        &never,
        ucfg.timeout + Duration::from_secs(1),
    )?;
    if probe.ok() == 0 {
        let why = probe
            .refusal()
            .unwrap_or_else(|| "the first update was not accepted".into());
        out!("UPDATE not accepted by {}: {why}", a.server);
        return Ok(ExitCode::from(1));
    }
    out!("probe update: NOERROR in {} µs", probe.latency_us[0]);
    ucfg.first = 1;
    ucfg.count = count;

    let needed = (a.rate.unwrap_or(a.high) as f64 * duration.as_secs_f64()).ceil() as usize + 1;
    let queries = plan.queries(needed, a.edns);
    if queries.is_empty() {
        bail!("no names left to query");
    }
    let mut cfg = RateConfig::new(a.server);
    cfg.threads = a.threads;
    cfg.ports = a.ports;
    cfg.duration = duration;
    cfg.timeout = Duration::from_millis(a.timeout);
    cfg.expect = Expect::Answer;
    cfg.loss = parse_fraction(&a.loss)?;
    let (loss, max_behind) = (cfg.loss, cfg.max_behind);
    let mut tester = Tester::new(cfg, Arc::new(queries))?;
    let measure = |tester: &mut Tester, label: &str| -> anyhow::Result<u64> {
        match a.rate {
            Some(r) => {
                let s = tester.step(r)?;
                let ok = s.passed(loss, max_behind);
                print_step(&s, ok, s.tester_ok(max_behind))?;
                out!(
                    "{label}: {} of {} queries answered at {r} q/s",
                    s.valid,
                    s.sent
                );
                Ok(s.valid)
            }
            None => {
                let res = tester.search(0, a.high, resolution, |r, ok| {
                    let _ = print_step(r, ok, r.tester_ok(max_behind));
                })?;
                out!("{label}: zero-loss rate {} q/s", res.rate);
                Ok(res.rate)
            }
        }
    };
    out!("queries without updates:");
    let without = measure(&mut tester, "without updates")?;
    out!("queries with {} updates/s:", a.update_rate);
    let (with, updates) = during_updates(&ucfg, &mut plan, phase + Duration::from_secs(1), || {
        measure(&mut tester, "with updates")
    });
    let with = with?;
    let u: UpdateResult = updates?;
    out!(
        "updates: sent {} in {:.1} s ({:.1}/s), replies: {}, timeouts {}, unmatched {}; \
         latency of accepted updates p50 {} µs, p99 {} µs, max {} µs",
        u.sent,
        u.secs,
        u.sent as f64 / u.secs.max(1e-9),
        lode_bench::durable::rcode_counts(&u.rcodes),
        u.timeouts,
        u.unmatched,
        u.latency_us[0],
        u.latency_us[1],
        u.latency_us[2]
    );
    let unit = if a.rate.is_some() {
        "valid replies"
    } else {
        "q/s"
    };
    out!(
        "query {unit} without updates {without}, with updates {with} ({:+.1}%)",
        if without > 0 {
            (with as f64 / without as f64 - 1.0) * 100.0
        } else {
            0.0
        }
    );
    if let Some(why) = u.refusal() {
        out!("UPDATE not accepted: {why}");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The zone names of `--zone NAME[=FILE]` arguments.
fn zone_names(args: &[String]) -> anyhow::Result<Vec<lode_wire::Name>> {
    args.iter()
        .map(|z| {
            let name = z.split_once('=').map_or(z.as_str(), |(n, _)| n);
            lode_wire::Name::parse(name, Some(&lode_wire::Name::root()))
                .map_err(|e| anyhow::anyhow!("--zone {z:?}: {e}"))
        })
        .collect()
}

/// `lode-bench update --clients N`: closed-loop TSIG updates over TCP for --duration.
fn closed_loop(a: &UpdateArgs, duration: Duration) -> anyhow::Result<ExitCode> {
    use lode_bench::durable::{self, DurableConfig};
    let key = a
        .tsig
        .as_deref()
        .map(|s| lode_tsig::Key::parse_spec(s).with_context(|| format!("--tsig {s:?}")))
        .transpose()?;
    let cfg = DurableConfig {
        server: a.server,
        zones: zone_names(&a.zone)?,
        clients: a.clients.unwrap_or(1),
        batch: a.batch,
        window: a.window,
        duration,
        timeout: Duration::from_millis(a.update_timeout.max(1)),
        key,
        first: a.first,
        digits: a.digits,
        end: None,
    };
    cfg.check()?;
    let probe = match &a.fsync_dir {
        Some(d) => {
            let p = durable::fsync_probe(d, Duration::from_secs(3))?;
            out!("fsync probe {}: {p}", d.display());
            Some(p)
        }
        None => None,
    };
    out!(
        "server {} (TCP)  {} zone(s)  {} clients × {} in flight  {} record(s) per update{}  {:.1} s",
        a.server,
        cfg.zones.len(),
        cfg.clients,
        cfg.window,
        cfg.batch,
        match &cfg.key {
            Some(k) => format!("  TSIG {}", k.algorithm()),
            None => "  unsigned".into(),
        },
        duration.as_secs_f64()
    );
    let r = durable::run(&cfg, &std::sync::atomic::AtomicBool::new(false))?;
    for line in r.summary() {
        out!("{line}");
    }
    if let Some(p) = probe {
        out!("{}", r.fsync_line(&p));
    }
    if let Some(e) = &r.first_error {
        out!("first error: {e}");
    }
    Ok(if r.acked > 0 && r.acked == r.sent {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests;
