//! `lode check`: read zone files, run the zone checks, print a summary per
//! file or the problems with `file:line`.
//!
//! ```text
//!  FILES ──largest first, one thread per CPU──▶ per file:
//!     lode_zonefile::parse_file_each ──▶ each record into the FileBuilder (+ its position) ──▶ Zone
//!             │ syntax errors                                  │ problems (tag = record index)
//!             ▼                                                ▼
//!        file:line: reason                        file:line: error|warning: reason
//!  reports printed in the order the files were given; progress on stderr meanwhile
//! ```
//!
//! The builder is `lode serve`'s (`lode_server::loading::file_builder`):
//! records sorted in runs of 64 MiB, the runs written to `TMPDIR` and
//! merged, so that a TLD's file is checked in about its served size.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use lode_server::file_builder::FileBuilder;
use lode_server::progress::{Display, LoadProgress};
use lode_server::zones::largest_first;
use lode_wire::{Name, Rtype};
use lode_zonedb::Severity;
use lode_zonefile::ParseCounters;

/// Arguments of `lode check`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Exit status: 0 if every zone is valid (warnings allowed), 1 if one has errors, \
    2 if the command itself failed.\n\nWithout --origin the origin is the file name with a trailing \
    `.zone` or `.db` (or a leading `db.`) removed: `example.com.zone` and `db.example.com` are both \
    checked as `example.com.`.\n\nSeveral files are read in parallel (largest first) and reported \
    in the order given, followed by a total. On a terminal, a load that takes more than 2 s shows \
    a progress line on stderr."
)]
pub struct CheckArgs {
    /// The zone files to check.
    #[arg(required_unless_present = "config", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Check a whole configuration instead (as `knotc conf-check` / `named-checkconf -z`):
    /// every setting, key, ACL, policy and certificate it names, then every zone file of its
    /// primary zones, without starting a server. Zone files given beside it are checked too.
    #[arg(long, short = 'c', value_name = "CONFIG", conflicts_with = "origin")]
    pub config: Option<PathBuf>,
    /// The zone's origin (apex), e.g. `example.com.`, for a single file; default: from the
    /// file name (see below).
    #[arg(long, short = 'o')]
    pub origin: Option<String>,
    /// TTL of records without one when no `$TTL` precedes them: Knot's `default-ttl`
    /// (Knot never inherits the previous record's TTL). Give 0 for BIND's rule instead:
    /// the last explicit TTL, else the SOA MINIMUM.
    #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
    pub default_ttl: u32,
    /// Print only errors: no summary, no warnings, no progress.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Only read the files (syntax and RDATA): do not build the zones nor run the zone checks.
    #[arg(long)]
    pub syntax_only: bool,
    /// Files read at the same time (default: one per CPU).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

/// The origin implied by a file name: `example.com.zone`, `example.com.db`,
/// `db.example.com` and `example.com` all give `example.com.`.
fn origin_from_file_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let name = name
        .strip_suffix(".zone")
        .or_else(|| name.strip_suffix(".db"))
        .or_else(|| name.strip_prefix("db."))
        .unwrap_or(name);
    if name.is_empty() {
        return None;
    }
    Some(if name.ends_with('.') {
        name.to_string()
    } else {
        format!("{name}.")
    })
}

/// What checking one file gave: the text to print and the figures.
#[derive(Debug, Default)]
struct Outcome {
    /// For stdout (the summary).
    out: String,
    /// For stderr (errors, warnings).
    err: String,
    /// No errors.
    ok: bool,
    bytes: u64,
    records: usize,
    parse: Duration,
    build: Duration,
}

/// Runs the command.
pub fn run(mut args: CheckArgs) -> anyhow::Result<ExitCode> {
    if let Some(path) = args.config.clone() {
        return run_config(&path, &mut args);
    }
    if args.origin.is_some() && args.files.len() > 1 {
        anyhow::bail!(
            "--origin applies to one file; with several, each origin comes from its file name"
        );
    }
    let mut origins = Vec::with_capacity(args.files.len());
    for file in &args.files {
        let origin_text = match &args.origin {
            Some(o) => o.clone(),
            None => origin_from_file_name(file).with_context(|| {
                format!(
                    "cannot derive an origin from {}; give --origin",
                    file.display()
                )
            })?,
        };
        let origin = Name::parse(&origin_text, Some(&Name::root()))
            .map_err(|e| anyhow::anyhow!("bad origin {origin_text:?}: {e}"))?;
        origins.push(origin);
    }
    check_files(&args, &origins)
}

/// `lode check --config FILE`: the configuration as `lode serve` would take it
/// (without binding, loading or writing anything), then the zone files it names.
fn run_config(path: &Path, args: &mut CheckArgs) -> anyhow::Result<ExitCode> {
    let options = lode_server::Options {
        config: Some(path.to_owned()),
        ..lode_server::Options::default()
    };
    let config = match lode_server::check_config(&options) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            eprintln!("{}: configuration refused", path.display());
            return Ok(ExitCode::from(1));
        }
    };
    let mut origins: Vec<Name> = Vec::new();
    let mut files: Vec<PathBuf> = Vec::new();
    let (mut secondaries, mut generated) = (0usize, 0usize);
    for z in &config.zones {
        match &z.source {
            lode_server::ZoneSource::File(f) => {
                files.push(f.to_path_buf());
                origins.push(z.name.clone());
            }
            lode_server::ZoneSource::Transfer => secondaries += 1,
            _ => generated += 1,
        }
    }
    if !args.quiet {
        println!(
            "{}: configuration OK: {} zone(s) ({} from zone files, {secondaries} by transfer, \
             {generated} generated), {} TSIG key(s), listening on {}",
            path.display(),
            config.zones.len(),
            files.len(),
            config.keys.len(),
            config
                .listen
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    // Zone files given on the command line too: origins from their names.
    for f in std::mem::take(&mut args.files) {
        let origin_text = origin_from_file_name(&f)
            .with_context(|| format!("cannot derive an origin from {}", f.display()))?;
        let origin = Name::parse(&origin_text, Some(&Name::root()))
            .map_err(|e| anyhow::anyhow!("bad origin {origin_text:?}: {e}"))?;
        files.push(f);
        origins.push(origin);
    }
    if files.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    args.files = files;
    check_files(args, &origins)
}

/// Checks `args.files` (each as the zone of the same index in `origins`) and reports.
fn check_files(args: &CheckArgs, origins: &[Name]) -> anyhow::Result<ExitCode> {
    let sizes: Vec<u64> = args
        .files
        .iter()
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .collect();
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let display = if args.quiet {
        Display::Off
    } else {
        Display::for_stderr()
    };
    let what = if args.syntax_only {
        "reading"
    } else {
        "checking"
    };
    let start = Instant::now();
    let progress = LoadProgress::start(what, sizes.iter().sum(), args.files.len(), display);
    let outcomes = largest_first(&sizes, threads, |i| {
        let o = check_one(
            args,
            &args.files[i],
            &origins[i],
            sizes[i],
            progress.counters(),
        );
        progress.zone_done(sizes[i]);
        o
    });
    drop(progress);
    let wall = start.elapsed();

    let mut all_ok = true;
    let mut total = Outcome::default();
    for (file, o) in args.files.iter().zip(outcomes) {
        let o = o.unwrap_or_else(|| Outcome {
            err: format!("{}: internal error: the check panicked\n", file.display()),
            ..Outcome::default()
        });
        eprint!("{}", o.err);
        print!("{}", o.out);
        all_ok &= o.ok;
        total.bytes += o.bytes;
        total.records += o.records;
        total.parse += o.parse;
        total.build += o.build;
    }
    if args.files.len() > 1 && !args.quiet {
        let secs = wall.as_secs_f64();
        println!(
            "{} files, {} records, {:.1} MB in {:.3} s ({:.0} MB/s) on {} thread(s); \
             time summed over files: parse {:.3} s, checks {:.3} s",
            args.files.len(),
            total.records,
            total.bytes as f64 / 1e6,
            secs,
            if secs > 0.0 {
                total.bytes as f64 / secs / 1e6
            } else {
                0.0
            },
            threads.clamp(1, args.files.len()),
            total.parse.as_secs_f64(),
            total.build.as_secs_f64(),
        );
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// After errors: when the file's first `$ORIGIN` names another zone than
/// `origin`, says so and how to check it under that origin.
fn origin_hint(o: &mut Outcome, file: &Path, origin: &Name) {
    let Some(set) = first_origin_directive(file) else {
        return;
    };
    if set != *origin {
        let _ = writeln!(
            o.err,
            "hint: {} sets $ORIGIN {set} but was checked as zone {origin}; \
             if {set} is the zone, run: lode check --origin {set} {}",
            file.display(),
            file.display()
        );
    }
}

/// The absolute name of the first `$ORIGIN` line in the first 64 KiB of a file.
fn first_origin_directive(file: &Path) -> Option<Name> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(file)
        .ok()?
        .take(64 << 10)
        .read_to_end(&mut head)
        .ok()?;
    let text = String::from_utf8_lossy(&head);
    let line = text
        .lines()
        .map(str::trim_start)
        .find(|l| l.len() > 7 && l[..7].eq_ignore_ascii_case("$ORIGIN"))?;
    let name = line[7..].split_whitespace().next()?;
    if !name.ends_with('.') {
        return None;
    }
    Name::parse(name, None).ok()
}

/// What the reading of one zone file keeps: counts by type and, unless
/// only the syntax is checked, the builder the records went into with
/// where each was written.
#[derive(Default)]
struct Seen {
    per_type: BTreeMap<Rtype, u64>,
    builder: Option<FileBuilder>,
    positions: lode_zonefile::Positions,
}

/// Reads, builds and checks one zone file; all its output goes in the [`Outcome`].
fn check_one(
    args: &CheckArgs,
    file: &Path,
    origin: &Name,
    size: u64,
    counters: &ParseCounters,
) -> Outcome {
    let mut o = Outcome {
        bytes: size,
        ..Outcome::default()
    };
    // Writing to a String cannot fail: the results of writeln! are ignored below.
    let t0 = Instant::now();
    // The records go into the builder as they are read (as `lode serve`
    // reads a zone): never all held as records.
    let build = !args.syntax_only;
    let seen = std::cell::RefCell::new(Seen::default());
    let parsed = lode_zonefile::parse_file_each(
        file,
        origin,
        (args.default_ttl > 0).then_some(args.default_ttl),
        Some(counters),
        &mut |record, at| {
            let mut seen = seen.borrow_mut();
            *seen.per_type.entry(record.rtype).or_insert(0) += 1;
            if build {
                let tag = seen.positions.push(at);
                let class = record.class;
                seen.builder
                    .get_or_insert_with(|| FileBuilder::new(origin, class, true, None))
                    .add(record, tag);
            }
        },
        &mut || *seen.borrow_mut() = Seen::default(),
    );
    match parsed {
        Ok(()) => {}
        Err(errors) => {
            for e in &errors {
                let _ = writeln!(o.err, "{e}");
            }
            let _ = writeln!(
                o.err,
                "{}: {} error(s) in zone {origin}",
                file.display(),
                errors.len()
            );
            origin_hint(&mut o, file, origin);
            return o;
        }
    }
    o.parse = t0.elapsed();

    let Seen {
        per_type,
        builder,
        positions,
    } = seen.into_inner();
    o.records = per_type.values().sum::<u64>() as usize;
    let types: Vec<String> = per_type.iter().map(|(t, n)| format!("{t} {n}")).collect();
    let secs = o.parse.as_secs_f64();
    let rate = if secs > 0.0 {
        size as f64 / secs / 1e6
    } else {
        0.0
    };
    if args.syntax_only {
        o.ok = true;
        if !args.quiet {
            let _ = writeln!(o.out, "{}: zone {origin} read, syntax OK", file.display());
            let _ = writeln!(o.out, "  records   {}", o.records);
            let _ = writeln!(o.out, "  types     {}", types.join(", "));
            let _ = writeln!(o.out, "  time      parse {secs:.3} s ({rate:.0} MB/s)");
        }
        return o;
    }

    let t1 = Instant::now();
    // (No record: a zone of class IN without its SOA, which the build says.)
    let builder =
        builder.unwrap_or_else(|| FileBuilder::new(origin, lode_wire::Class::IN, true, None));
    let where_ = |tag: Option<u32>| -> String {
        match tag.and_then(|t| positions.get(t as usize)) {
            Some(p) => p.to_string(),
            None => file.display().to_string(),
        }
    };
    let (zone, warnings) = match builder.build(None) {
        Ok(ok) => ok,
        Err(problems) => {
            let mut errors = 0;
            for p in &problems {
                if p.severity == Severity::Error {
                    errors += 1;
                } else if args.quiet {
                    continue;
                }
                let _ = writeln!(o.err, "{}: {p}", where_(p.tag));
            }
            let _ = writeln!(
                o.err,
                "{}: {errors} error(s) in zone {origin}",
                file.display()
            );
            origin_hint(&mut o, file, origin);
            return o;
        }
    };
    o.build = t1.elapsed();
    o.ok = true;
    if args.quiet {
        return o;
    }
    for p in &warnings {
        let _ = writeln!(o.err, "{}: {p}", where_(p.tag));
    }
    let names = zone
        .node_ids()
        .filter(|&id| !zone.node(id).is_empty_nonterminal())
        .count();
    let nodes = zone.node_count();
    let rrsets = zone.rrset_count();
    let _ = writeln!(o.out, "{}: zone {origin} OK", file.display());
    let _ = writeln!(o.out, "  records   {}", o.records);
    let _ = writeln!(
        o.out,
        "  names     {names} (distinct owners; {nodes} counting empty non-terminals, as `lode serve` logs)"
    );
    let _ = writeln!(o.out, "  RRsets    {rrsets}");
    let _ = writeln!(o.out, "  types     {}", types.join(", "));
    let _ = writeln!(o.out, "  serial    {}", zone.serial());
    let _ = writeln!(
        o.out,
        "  time      parse {secs:.3} s ({rate:.0} MB/s), checks {:.3} s",
        o.build.as_secs_f64()
    );
    if !warnings.is_empty() {
        let _ = writeln!(o.out, "  warnings  {}", warnings.len());
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_from_names() {
        let o = |s: &str| origin_from_file_name(Path::new(s));
        assert_eq!(o("zones/example.com.zone").as_deref(), Some("example.com."));
        assert_eq!(o("example.com.db").as_deref(), Some("example.com."));
        assert_eq!(o("db.example.com").as_deref(), Some("example.com."));
        assert_eq!(o("e164.arpa").as_deref(), Some("e164.arpa."));
        assert_eq!(o(".zone"), None);
    }
}
