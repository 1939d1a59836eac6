//! `lode-bench gen`: benchmark data sets — ENUM zones (the ENUM study's 500 k, 5 M and 20 M sets), the
//! dns64perf namespace (RFC 8219 self-test) and a TLD-shaped zone with update
//! streams — with query files in dnsperf format.

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
use lode_bench::gen::tld::{self, TldSpec};

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
    /// A TLD-shaped zone (COM as the model): delegations with shared NS sets, glue and
    /// DS; query files of referrals, NXDOMAIN, DS, a TLD mix and a spamrun; update
    /// streams of NS changes, additions and deletions.
    #[command(after_help = TLD_HELP)]
    Tld(TldArgs),
}

/// What `lode-bench gen tld --help` adds after the options.
const TLD_HELP: &str = "\
Writes into DIR: <tld>zone (unsigned: sign it with Lode or kzonesign), the query
files queries-{referral,nxdomain,ds,mix,spamrun}.txt, the update streams
updates-{low,medium}.txt, knot-zones.conf, lode.toml and README.txt (the counts,
sizes, seed and command line). The same seed and options give the same bytes on
one platform (provider draws use the C library's exp and log). Memory does not
grow with the zone: every delegation is a function of its index.

Where the shapes come from (\"assumed\": a stated guess, not a measurement):
  update mix and paces   ISC's study of BIND 9.4 serving the COM zone of
      October 2007 (5.8 GB unsigned, 15 GB signed) under DDNS: updates one third
      NS changes, one third new delegations, one third deletions; \"low\" = 1 % of
      the zone changed per day, \"medium\" = 3 %, \"high\" = as fast as the server
      takes them. It measured COM changing at 2-4 updates/s (2006-2008); BIND
      committing 15-94 updates/s (with fsync); and answering 69,400 q/s with no
      updates, 67,400 q/s under 10 updates/s and 60,900 q/s under 32 (unsigned).
  label lengths   assumed: 4 to 63 characters, a bell around 9-11 (mean about
      11), 83 % within 6-15. No 3-character labels, so that `nic` stays free for
      the zone's servers; 4- and 5-character labels are rarer than in COM, which
      holds nearly all of them.
  label characters   assumed: letters (uniformly random, no English letter
      frequencies); 7 % end in 1-3 digits, 8 % hold one hyphen inside, 3 % of the
      labels of 8 characters or more are IDNs in xn-- form (2.7 % of all). Labels
      are a bijection of the index (a keyed permutation), so they never repeat.
  NS sets   assumed: 2 servers (80 %), 3 (8 %), 4 (12 %): ns1..nsK of a hosting
      provider (ns1.<label>.net., .com., .org., .info., never under the zone's
      own TLD) drawn with Zipf popularity (--zipf, 1.1) from --providers (one per
      200 delegations, i.e. N/50 server names): far fewer NS sets than
      delegations, most delegations on the sets of the top providers.
  in-bailiwick   --glue-share (3 %, assumed): ns1..nsK.<label>.<tld>. with glue
      A records (198.18.0.0/15) and, for 30 % of them, AAAA (2001:2::/48): the
      benchmarking ranges of RFC 2544 and RFC 5180.
  DS   --ds-share (5 %, assumed: about COM's signed share in the 2020s): one DS,
      digest type 2 (32 bytes), algorithm 13 (80 %) or 8, pseudo-random key tag
      and digest. (The SIDN study measured .nl with 0, 10 and 20 % signed.)
  apex   SOA, NS a.nic .. m.nic.<tld>. with A and AAAA (as a TLD's 13 servers).

Query files (--queries lines each, dnsperf `name TYPE`, scattered order):
  referral  existing delegations (uniform): 40 % the delegation, 45 % www.,
            15 % mail., m. or ns1.; A 65 %, AAAA 28 %, NS 7 % (assumed).
            Answer: a referral (lode-bench rate --expect noerror).
  nxdomain  labels of the same shapes that are neither in the zone nor added by
            the update streams; 30 % with www.; A, AAAA, MX. --expect nxdomain.
  ds        DS at the parent: 45 % signed delegations, 40 % unsigned (NODATA),
            15 % absent (NXDOMAIN) (assumed).
  mix       88 % referral, 3 % NXDOMAIN (the .nl trace of NLnet Labs' SIDN study
            had 2.9 %), 5 % DS, 4 % apex (SOA, NS, DNSKEY, a..m.nic) (assumed).
  spamrun   the SIDN study's spamrun: for each good query (a line of the mix),
            --spamrun-ratio NXDOMAIN queries (4: its first scenario, \"often
            seen\"; 24: its second). The study set the ratio in bandwidth; here it
            is counted in queries, which are of similar size.
DO bit: the SIDN trace had DO=1 on 50 % of queries. dnsperf sets DO for a whole
run, not per line, so each file serves both: run it once plain and once with
`dnsperf -D` (DO=1).

Update streams (--updates, default 100,000 or half the delegations; the same
updates in both files, paced differently): one nsupdate message (`send`) per
update, in turn an NS set replaced by another provider's (with the old glue
deleted), a new delegation (labels past the zone, the zone's shares of glue and
DS), a deletion (`update delete NAME` and its glue). Each is valid against the
zone as the previous ones left it: no delegation is deleted twice, and none
that is changed in the stream. --prereqs adds prerequisites (yxrrset NS,
nxdomain, yxdomain) so that the server refuses an update that does not fit.
The header of each file gives its pace for the zone's size, as updates/s and as
the records/s that `lode update -r` counts:
  low = N x 1 % / 86,400 s, medium = N x 3 % / 86,400 s:
  N = 1 M: 0.116 and 0.347 updates/s; 10 M: 1.16 and 3.47; 160 M: 18.5 and 55.6.
  lode update -s 127.0.0.1:5300 -k KEY -c 1 -r RECORDS/S DIR/updates-low.txt

Example: 1 M delegations (about 100 MB, a few seconds):
  lode-bench gen tld --tld com --delegations 1000000 --out /tmp/com1m
  lode serve --config /tmp/com1m/lode.toml &
  dnsperf -s 127.0.0.1 -p 5300 -d /tmp/com1m/queries-mix.txt -D";

/// Arguments of `lode-bench gen enum`.
#[derive(clap::Args, Debug)]
struct EnumArgs {
    /// Numbers (one NAPTR each).
    #[arg(long)]
    records: u64,
    /// Zones the numbers are split into (10 for the 500k and 5M sets of Shen & Schulzrinne, 4 for 20M).
    #[arg(long, default_value_t = 10)]
    zones: u64,
    /// Output directory (created).
    #[arg(long)]
    out: PathBuf,
    /// Numbers share this many distinct NAPTR RRsets (carrier ENUM) instead of one each.
    #[arg(long, value_name = "K")]
    shared_naptr: Option<u64>,
    /// Leading digits of every number (default: from 1212…; 16461 and 131 give Shen & Schulzrinne's
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

/// Arguments of `lode-bench gen tld`.
#[derive(clap::Args, Debug)]
struct TldArgs {
    /// Output directory (created).
    #[arg(long)]
    out: PathBuf,
    /// The zone's apex.
    #[arg(long, default_value = "com.", value_name = "NAME")]
    tld: String,
    /// Delegations in the zone (1 M to 160 M and more).
    #[arg(long, default_value_t = 1_000_000, value_name = "N")]
    delegations: u64,
    /// Seed of every pseudo-random choice (labels, NS sets, DS, queries, updates).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Hosting providers the NS sets are drawn from (default: one per 200 delegations, at least 10).
    #[arg(long, value_name = "P")]
    providers: Option<u64>,
    /// Exponent of the providers' Zipf popularity.
    #[arg(long, default_value_t = 1.1, value_name = "S")]
    zipf: f64,
    /// Percent of delegations with in-bailiwick servers and glue.
    #[arg(long, default_value_t = 3.0, value_name = "PERCENT")]
    glue_share: f64,
    /// Percent of delegations with a DS record.
    #[arg(long, default_value_t = 5.0, value_name = "PERCENT")]
    ds_share: f64,
    /// Lines in each query file.
    #[arg(long, default_value_t = 1_000_000, value_name = "Q")]
    queries: u64,
    /// Updates in each update stream (default: 100,000, at most half the delegations).
    #[arg(long, value_name = "U")]
    updates: Option<u64>,
    /// NXDOMAIN queries per good query in queries-spamrun.txt.
    #[arg(long, default_value_t = 4, value_name = "R")]
    spamrun_ratio: u64,
    /// Give each update a prerequisite (the delegation exists, or not).
    #[arg(long)]
    prereqs: bool,
    /// Writer threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
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
        GenWhat::Tld(a) => {
            let mut spec = TldSpec::new(&a.tld, a.delegations);
            spec.seed = a.seed;
            spec.providers = a.providers;
            spec.zipf = a.zipf;
            spec.glue_share = a.glue_share / 100.0;
            spec.ds_share = a.ds_share / 100.0;
            spec.queries = a.queries;
            if let Some(u) = a.updates {
                spec.updates = u;
            }
            spec.spamrun_ratio = a.spamrun_ratio;
            spec.prereqs = a.prereqs;
            spec.threads = a.threads;
            spec.command = std::env::args().collect::<Vec<_>>().join(" ");
            let sum = tld::generate(&spec, &a.out)?;
            let z = &sum.zone;
            out!(
                "{} delegations in {} ({}, {} bytes): {} NS sets from {} providers, {} in-bailiwick, \
                 {} DS, {} records, in {:.2} s",
                z.delegations,
                sum.apex,
                sum.zone_file.display(),
                std::fs::metadata(&sum.zone_file).map_or(0, |m| m.len()),
                z.ns_sets,
                sum.providers,
                z.glue_delegations,
                z.ds,
                z.records,
                start.elapsed().as_secs_f64()
            );
            for f in &sum.query_files {
                out!("queries: {} ({} lines)", f.display(), sum.queries);
            }
            for f in &sum.update_files {
                out!(
                    "updates: {} ({} updates)",
                    f.display(),
                    sum.updates.updates()
                );
            }
            out!("summary: {}", sum.readme.display());
            out!("knot zones: {}", sum.knot_conf.display());
            out!(
                "lode config: {0} (serve it: lode serve --config {0})",
                sum.lode_conf.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
