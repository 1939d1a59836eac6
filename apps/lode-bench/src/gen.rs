//! `lode-bench gen`: benchmark data sets — ENUM zones (seed 000 §3.4) and the
//! dns64perf namespace (RFC 8219 self-test) — with query files in dnsperf format.

/// Prints a line to stdout; a closed pipe (`| head`) ends the command with an error, not a panic.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)?
    }};
}

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use lode_bench::gen::dns64perf::{self, AddrType, Ipv4Net};
use lode_bench::gen::enumset::{self, EnumSetSpec};

/// Arguments of `lode-bench gen`.
#[derive(clap::Args, Debug)]
pub struct GenArgs {
    #[command(subcommand)]
    what: GenWhat,
}

/// The data sets.
#[derive(clap::Subcommand, Debug)]
enum GenWhat {
    /// ENUM zones: SOA, two NS and their addresses, one NAPTR per number; plus query
    /// files of existing names, non-existing names inside the zones and names outside.
    Enum(EnumArgs),
    /// The dns64perf namespace of an IPv4 network: one A (or AAAA) per address.
    Dns64perf(Dns64perfArgs),
}

/// Arguments of `lode-bench gen enum`.
#[derive(clap::Args, Debug)]
struct EnumArgs {
    /// Numbers (one NAPTR each).
    #[arg(long)]
    records: u64,
    /// Zones the numbers are split into (10 for the 500k and 5M sets of seed 000, 4 for 20M).
    #[arg(long, default_value_t = 10)]
    zones: u64,
    /// Output directory (created).
    #[arg(long)]
    out: PathBuf,
    /// Numbers share this many distinct NAPTR RRsets (carrier ENUM) instead of one each.
    #[arg(long, value_name = "K")]
    shared_naptr: Option<u64>,
    /// Leading digits of every number (default: from 1212…; 16461 and 131 give seed 000's
    /// 500k and 20M sets).
    #[arg(long)]
    prefix: Option<String>,
    /// Digits in every number, country code included.
    #[arg(long, default_value_t = 11)]
    digits: usize,
    /// The ENUM apex.
    #[arg(long, default_value = "e164.arpa")]
    apex: String,
    /// Domain of the SIP URIs in the NAPTR regexps.
    #[arg(long, default_value = "example.net")]
    sip_domain: String,
    /// Lines in each query file (default: one per number).
    #[arg(long)]
    queries: Option<u64>,
    /// Writer threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
}

/// Arguments of `lode-bench gen dns64perf`.
#[derive(clap::Args, Debug)]
struct Dns64perfArgs {
    /// The IPv4 network, `A.B.C.D/N`; `/N` alone means `10.0.0.0/N`.
    #[arg(long)]
    prefix: String,
    /// Output directory (created).
    #[arg(long)]
    out: PathBuf,
    /// Give each name an AAAA (64:ff9b::/96 + address) instead of an A.
    #[arg(long)]
    aaaa: bool,
    /// Lines in the query file (default: one per name).
    #[arg(long)]
    queries: Option<u64>,
}

/// Runs the command.
pub fn run(args: GenArgs) -> anyhow::Result<ExitCode> {
    let start = Instant::now();
    match args.what {
        GenWhat::Enum(a) => {
            let spec = EnumSetSpec {
                records: a.records,
                zones: a.zones,
                digits: a.digits,
                prefix: a.prefix,
                apex: a.apex,
                sip_domain: a.sip_domain,
                shared_naptr: a.shared_naptr,
                queries: a.queries,
                threads: a.threads,
            };
            let sum = enumset::generate(&spec, &a.out)?;
            let secs = start.elapsed().as_secs_f64();
            let l = &sum.layout;
            out!(
                "{} NAPTR records in {} zones ({} to {}), prefix {}, {} queries per file, in {:.2} s",
                l.records(),
                l.zones(),
                sum.zone_files.first().map_or("", |z| z.0.as_str()),
                sum.zone_files.last().map_or("", |z| z.0.as_str()),
                l.prefix(),
                sum.queries,
                secs,
            );
            for f in &sum.query_files {
                out!("queries: {}", f.display());
            }
            out!("knot zones: {}", sum.knot_conf.display());
            out!(
                "lode config: {0} (serve it: lode serve --config {0})",
                sum.lode_conf.display()
            );
        }
        GenWhat::Dns64perf(a) => {
            let net = Ipv4Net::parse(&a.prefix)?;
            let rtype = if a.aaaa { AddrType::Aaaa } else { AddrType::A };
            let sum = dns64perf::generate(net, rtype, a.queries, &a.out)?;
            out!(
                "{} names in {} ({}), {} queries ({}), in {:.2} s",
                sum.records,
                dns64perf::ZONE,
                sum.zone_file.display(),
                sum.queries,
                sum.query_file.display(),
                start.elapsed().as_secs_f64()
            );
            out!("knot zones: {}", sum.knot_conf.display());
            out!(
                "lode config: {0} (serve it: lode serve --config {0})",
                sum.lode_conf.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
