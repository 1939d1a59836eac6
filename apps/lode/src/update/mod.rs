//! `lode update`: bulk provisioning by RFC 2136 UPDATE, against any server
//! (Lode, Knot DNS, BIND).
//!
//! ```text
//!  input (file/stdin) ──input.rs──▶ messages (each with its input lines)
//!                                       │
//!                      send.rs: TCP × C, window W, TSIG, rate ──▶ server
//!                                       │
//!  progress on stderr ◀── counters ── Tracker ──▶ summary, or the last
//!                                                  acknowledged line to resume after
//! ```

pub(crate) mod input;
mod send;

use std::io::{IsTerminal, Read};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use lode_wire::Name;

use input::{BulkOptions, Format, Resume};

/// Arguments of `lode update`.
#[derive(clap::Args, Debug)]
#[command(after_long_help = HELP)]
pub struct UpdateArgs {
    /// The input file; `-` or none: standard input.
    input: Option<PathBuf>,
    /// Input format; by default chosen by the file's extension (.csv: enum-csv;
    /// .zone, .db, .rr, or --add/--delete given: zone; otherwise nsupdate).
    #[arg(long, short = 'f', value_enum)]
    format: Option<Format>,
    /// The server, ADDR[:PORT] or HOST[:PORT] (port 53 by default); overrides
    /// an nsupdate `server` line.
    #[arg(long, short = 's', value_name = "ADDR[:PORT]")]
    server: Option<String>,
    /// TSIG key `[alg:]name:base64secret` (as `lode keygen` prints it); the
    /// algorithm defaults to hmac-sha256.
    #[arg(
        long,
        short = 'y',
        value_name = "[ALG:]NAME:SECRET",
        conflicts_with = "key_file"
    )]
    key: Option<String>,
    /// A file holding the key in the -y form (keeps the secret out of `ps`).
    #[arg(long = "key-file", short = 'k', value_name = "FILE")]
    key_file: Option<PathBuf>,
    /// The zone updated (zone and enum-csv input; a default for nsupdate input).
    /// enum-csv default: the ENUM apex.
    #[arg(long, short = 'z', value_name = "ZONE")]
    zone: Option<String>,
    /// Zone input: add its records (the default).
    #[arg(long, conflicts_with = "delete")]
    add: bool,
    /// Zone and enum-csv input: delete these exact records instead.
    #[arg(long)]
    delete: bool,
    /// Origin of relative names in zone input (default: the zone).
    #[arg(long, value_name = "NAME")]
    origin: Option<String>,
    /// TTL of added records that have none: zone and enum-csv input (default
    /// 3600, as `lode-bench gen`); nsupdate input (like its `ttl` line; no default).
    #[arg(long, value_name = "SECONDS")]
    ttl: Option<u32>,
    /// ENUM apex below which CSV numbers are written.
    #[arg(long, value_name = "NAME", default_value = "e164.arpa")]
    enum_apex: String,
    /// Most records per UPDATE message (each message is applied atomically);
    /// a message is also cut before it would pass 64 KB, the TCP limit.
    #[arg(long, short = 'b', value_name = "N", default_value_t = 500)]
    batch: usize,
    /// Messages in flight per connection (pipelining).
    #[arg(long, short = 'w', value_name = "W", default_value_t = 16)]
    window: usize,
    /// TCP connections. More than one may apply messages out of input order:
    /// keep 1 when later messages depend on earlier ones.
    #[arg(long, short = 'c', value_name = "C", default_value_t = 1)]
    connections: usize,
    /// Highest rate, records per second (default: as fast as the server answers).
    #[arg(long, short = 'r', value_name = "RECORDS/S")]
    rate: Option<f64>,
    /// Seconds to wait for each reply.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    timeout: f64,
    /// Continue after this input line (what a failed run printed).
    #[arg(long, value_name = "LINE", conflicts_with = "skip")]
    resume_after: Option<u64>,
    /// Skip the first N records (zone, enum-csv) or messages (nsupdate).
    #[arg(long, value_name = "N")]
    skip: Option<u64>,
    /// No progress lines (the summary and errors are still printed).
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// What `lode update --help` adds after the options.
const HELP: &str = "\
Sends RFC 2136 dynamic updates in bulk, TSIG-signed, over TCP with several
messages in flight, and checks the signature and RCODE of every reply. It works
against any RFC 2136 server: Lode, Knot DNS, BIND.

Input formats:
  nsupdate   nsupdate batch commands: server, zone, origin, ttl, class IN, key,
             update add|delete (or add, del), prereq nxdomain|yxdomain|nxrrset|
             yxrrset, send (a blank line sends too), show/answer (ignored);
             ; and # start comments. Each `send` is one message.
  zone       zone-file records ($ORIGIN, $TTL, relative names), added (--add) or
             deleted (--delete) --batch at a time.
  enum-csv   +E.164 number, URI[, order, preference, service] → one NAPTR at
             the number's ENUM name, as `lode-bench gen enum` writes them:
             100 10 \"u\" \"E2U+sip\" \"!^.*$!URI!\" .  (a header line is skipped)

Each message is applied atomically by the server. When one fails (an RCODE
other than NOERROR, a bad TSIG, a lost connection, no reply) no more are sent,
and the run prints the last input line up to which every message was
acknowledged; --resume-after LINE continues from there. Messages after that
line may have been applied too (pipelining): re-sending adds and deletes is
harmless (RFC 2136 ignores duplicates), a prerequisite may fail the second time.

Progress: a status line on stderr when it is a terminal, a log line every 5 s
otherwise; a summary at the end. Exit status: 0 done, 1 an update failed,
2 bad input or options.

Examples:
  # 1 million ENUM numbers, 1000 per message, 32 in flight:
  lode update -s 192.0.2.53 -y hmac-sha256:prov.:SECRET --batch 1000 -w 32 numbers.csv
  # add the records of a zone fragment; delete others:
  lode update -s ns1:53 -k prov.key --zone example.com --add new.zone
  lode update -s ns1:53 -k prov.key --zone example.com --delete --format zone old.txt
  # an nsupdate script (its `server` and `key` lines are used):
  lode update changes.nsupdate
  # a run that stopped at a failure, continued:
  lode update -s ns1 -k prov.key numbers.csv --resume-after 48500
  # at most 2000 records/s, read from a pipe:
  psql -Atc \"select '+'||e164||','||uri from numbers\" | lode update -f enum-csv -r 2000 -s ns1 -k prov.key";

/// Runs the command.
pub fn run(args: UpdateArgs) -> anyhow::Result<ExitCode> {
    match run_inner(args) {
        Ok(code) => Ok(code),
        Err(e) => {
            eprintln!("lode update: error: {e:#}");
            Ok(ExitCode::from(2))
        }
    }
}

fn run_inner(args: UpdateArgs) -> anyhow::Result<ExitCode> {
    if args.batch == 0 || args.window == 0 || args.connections == 0 {
        bail!("--batch, --window and --connections must be at least 1");
    }
    if args.rate.is_some_and(|r| r.is_nan() || r <= 0.0) {
        bail!("--rate must be a positive number of records per second");
    }
    if !(args.timeout > 0.0 && args.timeout.is_finite()) {
        bail!("--timeout must be a positive number of seconds");
    }
    let from_stdin = args.input.as_ref().is_none_or(|p| p.as_os_str() == "-");
    let mut text = Vec::new();
    let source = if from_stdin {
        std::io::stdin()
            .read_to_end(&mut text)
            .context("reading standard input")?;
        "standard input".to_owned()
    } else {
        let p = args
            .input
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        text = std::fs::read(args.input.as_ref().ok_or_else(|| anyhow!("no input"))?)
            .with_context(|| format!("reading {p}"))?;
        p
    };
    let format = args.format.unwrap_or_else(|| {
        let ext = args
            .input
            .as_ref()
            .and_then(|p| p.extension())
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        match ext.as_deref() {
            Some("csv") => Format::EnumCsv,
            Some("zone" | "db" | "rr") => Format::Zone,
            _ if args.add || args.delete => Format::Zone,
            _ => Format::Nsupdate,
        }
    });
    let resume = match (args.resume_after, args.skip) {
        (Some(l), _) => Resume::AfterLine(l),
        (_, Some(n)) => Resume::Skip(n),
        _ => Resume::Start,
    };
    let abs = |s: &str, what: &str| {
        Name::parse(s, Some(&Name::root())).map_err(|e| anyhow!("{what} {s:?}: {e}"))
    };
    let zone = args.zone.as_deref().map(|z| abs(z, "zone")).transpose()?;
    let plan = match format {
        Format::Nsupdate => {
            let text = std::str::from_utf8(&text).context("nsupdate input is not UTF-8")?;
            input::nsupdate(text, zone, args.ttl, resume)
        }
        Format::Zone | Format::EnumCsv => {
            let zone = match (zone, format) {
                (Some(z), _) => z,
                (None, Format::EnumCsv) => {
                    let apex = abs(&args.enum_apex, "ENUM apex")?;
                    eprintln!(
                        "lode update: no --zone: updating zone {apex} (the ENUM apex; give --zone \
                         for a zone below it, e.g. --zone 1.{apex} for +1 numbers)"
                    );
                    apex
                }
                (None, _) => bail!("zone input needs --zone"),
            };
            let opts = BulkOptions {
                origin: match &args.origin {
                    Some(o) => abs(o, "origin")?,
                    None => zone.clone(),
                },
                zone,
                ttl: args.ttl.unwrap_or(3600),
                delete: args.delete,
                batch: args.batch,
                enum_apex: args.enum_apex.clone(),
            };
            if format == Format::Zone {
                input::zone_fragment(&text, &opts, resume)
            } else {
                let text = std::str::from_utf8(&text).context("CSV input is not UTF-8")?;
                input::enum_csv(text, &opts, resume)
            }
        }
    }
    .map_err(|e| anyhow!("{source}: {e}"))?;

    let key = match (&args.key, &args.key_file, &plan.key) {
        (Some(spec), _, _) => Some(lode_tsig::Key::parse_spec(spec.trim()).context("-y")?),
        (_, Some(file), _) => {
            let spec = std::fs::read_to_string(file)
                .with_context(|| format!("reading {}", file.display()))?;
            Some(
                lode_tsig::Key::parse_spec(spec.trim())
                    .with_context(|| format!("{}: expected [alg:]name:secret", file.display()))?,
            )
        }
        (_, _, Some((k, _))) => Some(k.clone()),
        _ => None,
    };
    let server = match (&args.server, &plan.server) {
        (Some(s), _) => resolve(s, 53)?,
        (None, Some((h, p, line))) => {
            resolve(&format!("{}:{p}", bracket(h)), *p).with_context(|| format!("line {line}"))?
        }
        (None, None) => bail!("no server: give --server ADDR[:PORT] (or a `server` line)"),
    };
    if key.is_none() {
        eprintln!("lode update: warning: no TSIG key (-y, -k): updates go unsigned");
    }
    let total_records: u64 = plan.messages.iter().map(|m| m.updates.len() as u64).sum();
    let total_messages = plan.messages.len();
    if plan.skipped_units > 0 {
        eprintln!(
            "lode update: resuming after line {}: {} {} skipped",
            plan.resumed_after,
            plan.skipped_units,
            if format == Format::Nsupdate {
                "messages"
            } else {
                "records"
            },
        );
    }
    if total_messages == 0 {
        eprintln!("lode update: nothing to send");
        return Ok(ExitCode::SUCCESS);
    }
    let cfg = send::SendConfig {
        server,
        key,
        connections: args.connections,
        window: args.window,
        rate: args.rate,
        timeout: Duration::from_secs_f64(args.timeout),
    };
    let progress = send::Progress::default();
    let done = AtomicBool::new(false);
    let start = Instant::now();
    let tracker = std::thread::scope(|s| {
        if !args.quiet {
            s.spawn(|| show_progress(&progress, &done, total_records, start));
        }
        let r = send::run(&cfg, &plan.messages, &progress);
        done.store(true, Ordering::Release);
        r
    })
    .with_context(|| format!("connecting to {server}"))?;
    let secs = start.elapsed().as_secs_f64();
    let prefix = tracker.prefix();
    let records: u64 = progress.records.load(Ordering::Relaxed);
    let messages = progress.messages.load(Ordering::Relaxed);
    let rate = records as f64 / secs.max(1e-9);
    eprintln!(
        "lode update: {records} record{} in {messages} message{} acknowledged, {secs:.2} s, {rate:.0} records/s ({server})",
        if records == 1 { "" } else { "s" },
        if messages == 1 { "" } else { "s" }
    );
    let Some((i, why)) = tracker.first_failure() else {
        if prefix == total_messages {
            return Ok(ExitCode::SUCCESS);
        }
        eprintln!(
            "lode update: stopped with {} messages unanswered",
            total_messages - prefix
        );
        report_resume(&plan, prefix, format);
        return Ok(ExitCode::from(1));
    };
    let m = &plan.messages[i];
    eprintln!(
        "lode update: FAILED: the message of input lines {}-{} ({} records, zone {}) got {why}",
        m.first_line,
        m.last_line,
        m.updates.len(),
        m.zone
    );
    let beyond = tracker.acked_beyond_prefix();
    if beyond > 0 {
        eprintln!(
            "lode update: {beyond} later message(s) in flight were acknowledged too (already applied; re-sending them is harmless for adds and deletes)"
        );
    }
    report_resume(&plan, prefix, format);
    Ok(ExitCode::from(1))
}

/// Prints the last acknowledged line and how to continue.
fn report_resume(plan: &input::Plan, prefix: usize, format: Format) {
    let units: u64 =
        plan.messages[..prefix].iter().map(|m| m.units).sum::<u64>() + plan.skipped_units;
    let line = if prefix == 0 {
        plan.resumed_after
    } else {
        plan.messages[prefix - 1].last_line
    };
    let what = if format == Format::Nsupdate {
        "messages"
    } else {
        "records"
    };
    eprintln!(
        "lode update: last acknowledged input line: {line} (every message up to it got NOERROR; {units} {what} done)"
    );
    eprintln!(
        "lode update: to continue: the same command with --resume-after {line} (or --skip {units})"
    );
}

/// Puts an IPv6 address in brackets for `host:port`.
fn bracket(h: &str) -> String {
    if h.contains(':') && !h.starts_with('[') {
        format!("[{h}]")
    } else {
        h.to_owned()
    }
}

/// ADDR[:PORT] or HOST[:PORT] to a socket address.
fn resolve(s: &str, default_port: u16) -> anyhow::Result<SocketAddr> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    if let Ok(ip) = s
        .trim_matches(|c| c == '[' || c == ']')
        .parse::<std::net::IpAddr>()
    {
        return Ok(SocketAddr::new(ip, default_port));
    }
    let with_port = if s
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        s.to_owned()
    } else {
        format!("{s}:{default_port}")
    };
    with_port
        .to_socket_addrs()
        .with_context(|| format!("server {s:?}"))?
        .next()
        .ok_or_else(|| anyhow!("server {s:?}: no address"))
}

/// Prints progress until `done`: a status line on a terminal, a log line every 5 s otherwise.
fn show_progress(p: &send::Progress, done: &AtomicBool, total: u64, start: Instant) {
    let tty = std::io::stderr().is_terminal();
    let every = if tty {
        Duration::from_millis(500)
    } else {
        Duration::from_secs(5)
    };
    let mut next = start + every;
    let mut shown = false;
    while !done.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(50));
        if Instant::now() < next {
            continue;
        }
        next += every;
        let secs = start.elapsed().as_secs_f64();
        let acked = p.records.load(Ordering::Relaxed);
        let rate = acked as f64 / secs.max(1e-9);
        let eta = if rate > 0.0 {
            format!("{:.0} s", (total - acked.min(total)) as f64 / rate)
        } else {
            "?".into()
        };
        let pct = 100.0 * acked as f64 / total.max(1) as f64;
        let text = format!(
            "{acked}/{total} records acknowledged ({pct:.1}%), {rate:.0} records/s, ETA {eta}"
        );
        if tty {
            eprint!("\r\x1b[2K{text}");
            shown = true;
        } else {
            eprintln!("lode update: {:.0} s: {text}", secs);
        }
    }
    if shown {
        eprint!("\r\x1b[2K");
    }
}
