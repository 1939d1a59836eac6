//! `lode-bench hsm`, `lode-bench rollover` and `lode-bench signing`
//! (crates/bench/src/signing):
//! their arguments.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use lode_bench::signing::{hsm, rollover};

use super::server_cost::print;
use super::Folders;
use super::{scratch_dropped, secs};

/// Arguments of `lode-bench hsm`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "One ENUM zone of --records NAPTR records (`lode-bench gen enum --zones 1 \
--prefix P`, kept in --work) is signed whole with NSEC by ECDSA P-256 keys with --threads \
signing threads, by each signer once with key files and once with the keys made in a fresh \
SoftHSM2 token (label bench, in --work; --module is the PKCS #11 module). Lode: `lode serve` \
on 127.0.0.1:--port (one worker), the seconds of its \"signed whole in S s\" log line (the \
signing alone) and the signatures counted by AXFR; its keystore reads the PIN from a file. \
Knot: `kzonesign` on the configuration lode-peers writes, its wall time (it also reads and \
writes the zone) and the signatures in the zone it writes; its keystore takes the PIN in its \
configuration. Prints the table (signer, seconds, signatures, signatures/s) and Lode's \
signatures/s ÷ Knot's per key store; hsm.md and hsm.json in --out. Needs softhsm2, knot and \
knot-dnssecutils. Another build of Lode: `lode-bench --lode PATH hsm …`. Example: \
lode-bench hsm --records 100000"
)]
pub(crate) struct HsmArgs {
    #[command(flatten)]
    folders: Folders,
    /// NAPTR records of the zone.
    #[arg(long, default_value_t = 20_000)]
    records: u64,
    /// Leading digits (E.164 prefix) of the generated numbers.
    #[arg(long, default_value = "16461")]
    prefix: String,
    /// Signing threads of every signer (the policy's signing-threads).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// The PKCS #11 module of the token.
    #[arg(long, default_value = "/usr/lib/softhsm/libsofthsm2.so")]
    module: PathBuf,
    /// Lode alone: no kzonesign.
    #[arg(long)]
    no_knot: bool,
    /// Lode's port on 127.0.0.1.
    #[arg(long, default_value_t = 15394)]
    port: u16,
    /// Seconds one signing may take.
    #[arg(long, default_value_t = 3600.0)]
    limit: f64,
}

pub(super) fn run_hsm(a: HsmArgs, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    if a.threads == 0 {
        bail!("--threads must be positive");
    }
    let (out, work, temp) = a.folders.dirs("hsm", false);
    let cfg = hsm::HsmConfig {
        out,
        work: work.clone(),
        lode: lode.path()?,
        records: a.records,
        prefix: a.prefix,
        threads: a.threads,
        module: a.module,
        knot: !a.no_knot,
        port: a.port,
        limit: secs(a.limit, "--limit")?,
    };
    let r = scratch_dropped(temp, &work, hsm::run(&cfg))?;
    print(&r.lines(&cfg), &r.report)?;
    Ok(match r.notes.is_empty() {
        true => ExitCode::SUCCESS,
        false => ExitCode::from(1),
    })
}

/// Arguments of `lode-bench rollover`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "One ENUM zone of --records NAPTR records (`lode-bench gen enum --zones 1 \
--prefix P`, kept in --work), ECDSA P-256, NSEC. Each server in turn on 127.0.0.1:--port, \
pinned to --server-cpu (Lode one worker; Knot one UDP and one TCP worker, two background \
workers, --knot-journal as journal-max-usage and --knot-journal-db as journal-db-max-size: a \
whole re-signing is one changeset), policy \
with 2 signing threads, propagation-delay 1, dnskey-ttl 1, zsk-lifetime 0: it signs the zone \
at start (at most --sign-limit), its KSK is marked submitted, 5 s later a --step-second step \
of queries for existing names at --rate q/s (the rate tester on --tester-cpu, timeout 1 s) \
gives the static latency; then `zone-key-rollover ZONE zsk`: the new ZSK takes over 2 s \
later and every signature is made again; a second step starts at once (during). Timed from \
the rollover until every signature is by the new key (Lode: its log line \"every signature \
is by the keys of the moment\"; Knot: the second \"DNSSEC, successfully signed\" after it, \
the first being the new key's publication), with the server's CPU seconds (utime + stime) \
over that time, the step's queries included. Prints per server the answered share and p50 / \
p99 / p99.9 latency of both steps, the rollover's wall and CPU seconds and p99.9 during ÷ \
static; rollover.md and rollover.json in --out. Another build of Lode: `lode-bench --lode \
PATH rollover …`. Example: lode-bench rollover --records 100000 --rate 10000"
)]
pub(crate) struct RolloverArgs {
    #[command(flatten)]
    folders: Folders,
    /// Servers, in run order: lode, knot (Knot is skipped when not installed).
    #[arg(long, value_delimiter = ',', default_value = "lode,knot")]
    servers: Vec<String>,
    /// NAPTR records of the zone.
    #[arg(long, default_value_t = 500_000)]
    records: u64,
    /// Leading digits (E.164 prefix) of the generated numbers (1646 for 5 M records in one zone).
    #[arg(long, default_value = "16461")]
    prefix: String,
    /// Queries per second of each step.
    #[arg(long, default_value_t = 20_000)]
    rate: u64,
    /// Seconds of each step (static, during).
    #[arg(long, default_value_t = 30.0)]
    step: f64,
    /// Knot's journal-max-usage (5 M records need more than the default 8G).
    #[arg(long, default_value = "8G")]
    knot_journal: String,
    /// Knot's journal-db-max-size (the journal database's bound).
    #[arg(long, default_value = "20G")]
    knot_journal_db: String,
    /// CPU the server is pinned to.
    #[arg(long, default_value_t = 0)]
    server_cpu: usize,
    /// CPU the rate tester is pinned to.
    #[arg(long, default_value_t = 1)]
    tester_cpu: usize,
    /// Port of the server on 127.0.0.1.
    #[arg(long, default_value_t = 15394)]
    port: u16,
    /// Seconds the first signing may take.
    #[arg(long, default_value_t = 900.0)]
    sign_limit: f64,
    /// Seconds from the rollover until every signature must be by the new key.
    #[arg(long, default_value_t = 3600.0)]
    resign_limit: f64,
}

pub(super) fn run_rollover(a: RolloverArgs, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    let mut servers = Vec::new();
    for s in a.servers.iter().map(|s| s.trim()) {
        let k = match s {
            "lode" => lode_bench::signing::Kind::Lode,
            "knot" => lode_bench::signing::Kind::Knot,
            _ => bail!("--servers: lode, knot (not {s:?})"),
        };
        if !servers.contains(&k) {
            servers.push(k);
        }
    }
    if a.rate == 0 {
        bail!("--rate must be positive");
    }
    let (out, work, temp) = a.folders.dirs("rollover", false);
    let cfg = rollover::RolloverConfig {
        out,
        work: work.clone(),
        lode: lode.path()?,
        servers,
        records: a.records,
        prefix: a.prefix,
        rate: a.rate,
        step: secs(a.step, "--step")?,
        knot_journal: a.knot_journal,
        knot_journal_db: a.knot_journal_db,
        server_cpu: a.server_cpu,
        tester_cpu: a.tester_cpu,
        port: a.port,
        sign_limit: secs(a.sign_limit, "--sign-limit")?,
        resign_limit: secs(a.resign_limit, "--resign-limit")?,
    };
    let r = scratch_dropped(temp, &work, rollover::run(&cfg))?;
    print(&r.lines(&cfg), &r.report)?;
    Ok(ExitCode::SUCCESS)
}

/// A part of `lode-bench signing`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum PartArg {
    /// The zone signed whole by Lode, Knot's kzonesign, BIND and ldns.
    #[value(alias = "1")]
    Whole,
    /// Memory of the NSEC3-signed zone served pre-signed by Lode and Knot.
    #[value(alias = "4")]
    Memory,
    /// Server CPU per DO=1 answer on it, Lode, Knot and NSD.
    #[value(alias = "5")]
    Answers,
}

/// Arguments of `lode-bench signing`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "One ENUM zone of --records NAPTR records (`lode-bench gen enum --zones 1 \
--prefix P`, kept in --work with the signed zone the last two parts share), ECDSA P-256.

whole: the machine's crypto ceiling (`openssl speed -multi THREADS -seconds 3 ecdsap256`), \
then for each of --chains Lode (`lode serve` on 127.0.0.1:--port, one worker, --threads \
signing threads): the time from its start to its \"signed whole\" line, the signatures \
counted by AXFR, its peak memory (VmHWM) and the signing alone from that line; Knot's \
kzonesign (--threads signing threads), then BIND's dnssec-signzone -n THREADS and \
ldns-signzone (one thread), NSEC only: wall time, peak memory (`/usr/bin/time`) and the \
signatures in the zone each writes. Prints the table (signer, wall s, signatures, sig/s, \
peak MiB) and the names of the zone file.

memory: the zone signed by Lode with NSEC3 and taken by AXFR into signed.zone beside the \
set (the closing SOA left out), loaded pre-signed by Lode and by Knot (one worker, no journal): \
resident memory (VmRSS) a second after it answers, less that of an empty zone, per record.

answers: each of --servers pinned to --server-cpu with one worker serving the signed zone, \
then the unsigned one; `dnsperf -D` (DO=1) at --rate q/s for --secs s with 4 clients on \
--tester-cpu, --names existing names (NAPTR owners spread over the zone) then the same \
with `nx-` before them (NXDOMAIN, with the NSEC3 proof when signed); server CPU (utime + \
stime over its processes, NSD's summed) per answer and the kernel's part of it; medians \
over --rounds.

Durable signed updates (64 TCP clients, TSIG, the 500k set in 10 zones) are \
`lode-bench update-cpu --signed --servers lode,bind,knot`, unsigned Lode beside them \
`lode-bench update-cpu --servers lode`. Writes signing.md and signing.json to --out. \
Another build of Lode: `lode-bench --lode PATH signing …`. Example: lode-bench signing \
--part whole --records 100000 --no-slow"
)]
pub(crate) struct SigningArgs {
    #[command(flatten)]
    folders: Folders,
    /// Parts, in run order: whole (1), memory (4), answers (5).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "whole")]
    part: Vec<PartArg>,
    /// NAPTR records of the zone.
    #[arg(long, default_value_t = 500_000)]
    records: u64,
    /// Leading digits (E.164 prefix) of the generated numbers (1646 for 5 M records in one zone).
    #[arg(long, default_value = "16461")]
    prefix: String,
    /// whole: signing threads of Lode, Knot and BIND; openssl's processes.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// whole: the chains signed by Lode and Knot: nsec, nsec3.
    #[arg(long, value_delimiter = ',', default_value = "nsec,nsec3")]
    chains: Vec<String>,
    /// whole: the peers alone (Lode does not sign).
    #[arg(long)]
    no_lode: bool,
    /// whole: Lode's signatures not counted by AXFR (20 M records take minutes to transfer).
    #[arg(long)]
    no_count: bool,
    /// whole: Lode alone, without the peers and the crypto ceiling.
    #[arg(long)]
    no_peers: bool,
    /// whole: without BIND and ldns (10–25 minutes each on 5 M records).
    #[arg(long)]
    no_slow: bool,
    /// answers: servers, in run order: lode, knot, nsd.
    #[arg(long, value_delimiter = ',', default_value = "lode,knot,nsd")]
    servers: Vec<String>,
    /// answers: dnsperf's queries per second.
    #[arg(long, default_value_t = 20_000)]
    rate: u64,
    /// answers: seconds of each dnsperf run.
    #[arg(long, default_value_t = 10)]
    secs: u64,
    /// answers: names asked.
    #[arg(long, default_value_t = 20_000)]
    names: usize,
    /// answers: rounds of every run (medians printed).
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// answers: CPU the server is pinned to.
    #[arg(long, default_value_t = 0)]
    server_cpu: usize,
    /// answers: CPU dnsperf is pinned to.
    #[arg(long, default_value_t = 1)]
    tester_cpu: usize,
    /// Port of the server (one at a time) on 127.0.0.1.
    #[arg(long, default_value_t = 15393)]
    port: u16,
    /// Seconds a signing or a load may take.
    #[arg(long, default_value_t = 10_800.0)]
    limit: f64,
}

pub(super) fn run_signing(a: SigningArgs, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    use lode_bench::signing::parts::{self, Part};
    let mut chains = Vec::new();
    for c in a.chains.iter().map(|c| c.trim()) {
        match c {
            "nsec" => chains.push(false),
            "nsec3" => chains.push(true),
            _ => bail!("--chains: nsec, nsec3 (not {c:?})"),
        }
    }
    let mut servers = Vec::new();
    for s in a.servers.iter().map(|s| s.trim()) {
        servers.push(match s {
            "lode" => lode_bench::signing::Kind::Lode,
            "knot" => lode_bench::signing::Kind::Knot,
            "nsd" => lode_bench::signing::Kind::Nsd,
            _ => bail!("--servers: lode, knot, nsd (not {s:?})"),
        });
    }
    if a.threads == 0 || a.rate == 0 || a.secs == 0 || a.names == 0 {
        bail!("--threads, --rate, --secs and --names must be positive");
    }
    let (out, work, temp) = a.folders.dirs("signing", false);
    let cfg = parts::SigningConfig {
        out,
        work: work.clone(),
        lode: lode.path()?,
        parts: a
            .part
            .iter()
            .map(|p| match p {
                PartArg::Whole => Part::Whole,
                PartArg::Memory => Part::Memory,
                PartArg::Answers => Part::Answers,
            })
            .collect(),
        records: a.records,
        prefix: a.prefix,
        threads: a.threads,
        chains,
        lode_signs: !a.no_lode,
        count: !a.no_count,
        peers: !a.no_peers,
        slow: !a.no_slow,
        answers: lode_bench::signing::served::AnswersConfig {
            servers,
            rate: a.rate,
            secs: a.secs,
            names: a.names,
            server_cpu: a.server_cpu,
            tester_cpu: a.tester_cpu,
        },
        rounds: a.rounds,
        port: a.port,
        limit: secs(a.limit, "--limit")?,
    };
    let r = scratch_dropped(temp, &work, parts::run(&cfg))?;
    print(&r.lines, &r.report)?;
    Ok(ExitCode::SUCCESS)
}
