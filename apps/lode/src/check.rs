//! `lode check`: read a zone file, run the zone checks, print a summary or the
//! problems with `file:line`.
//!
//! ```text
//!  FILE ──lode_zonefile::parse_file──▶ records + positions ──ZoneBuilder──▶ Zone
//!             │ syntax errors                                  │ problems (tag = record index)
//!             ▼                                                ▼
//!        file:line: reason                        file:line: error|warning: reason
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use lode_wire::{Name, Rtype};
use lode_zonedb::{Severity, ZoneBuilder};
use lode_zonefile::ParsedZone;

/// Arguments of `lode check`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Exit status: 0 if the zone is valid (warnings allowed), 1 if it has errors, \
    2 if the command itself failed.\n\nWithout --origin the origin is the file name with a trailing \
    `.zone` or `.db` (or a leading `db.`) removed: `example.com.zone` and `db.example.com` are both \
    checked as `example.com.`."
)]
pub struct CheckArgs {
    /// The zone file to check.
    pub file: PathBuf,
    /// The zone's origin (apex), e.g. `example.com.`; default: from the file name (see below).
    #[arg(long, short = 'o')]
    pub origin: Option<String>,
    /// TTL of records without one when no `$TTL` precedes them: Knot's `default-ttl`
    /// (Knot never inherits the previous record's TTL). Give 0 for BIND's rule instead:
    /// the last explicit TTL, else the SOA MINIMUM.
    #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
    pub default_ttl: u32,
    /// Print only errors: no summary, no warnings.
    #[arg(long, short = 'q')]
    pub quiet: bool,
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

/// Runs the command.
pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let origin_text = match &args.origin {
        Some(o) => o.clone(),
        None => origin_from_file_name(&args.file).with_context(|| {
            format!(
                "cannot derive an origin from {}; give --origin",
                args.file.display()
            )
        })?,
    };
    let origin = Name::parse(&origin_text, Some(&Name::root()))
        .map_err(|e| anyhow::anyhow!("bad origin {origin_text:?}: {e}"))?;
    let size = std::fs::metadata(&args.file).map(|m| m.len()).unwrap_or(0);

    let t0 = Instant::now();
    let parsed = match lode_zonefile::parse_file(
        &args.file,
        &origin,
        (args.default_ttl > 0).then_some(args.default_ttl),
    ) {
        Ok(p) => p,
        Err(errors) => {
            for e in &errors {
                eprintln!("{e}");
            }
            eprintln!(
                "{}: {} error(s) in zone {origin}",
                args.file.display(),
                errors.len()
            );
            return Ok(ExitCode::from(1));
        }
    };
    let parse_time = t0.elapsed();

    let ParsedZone { records, positions } = parsed;
    let record_count = records.len();
    let mut per_type: BTreeMap<Rtype, u64> = BTreeMap::new();
    for r in &records {
        *per_type.entry(r.rtype).or_insert(0) += 1;
    }
    let t1 = Instant::now();
    let class = records
        .first()
        .map(|r| r.class)
        .unwrap_or(lode_wire::Class::IN);
    let mut builder = ZoneBuilder::new(origin.clone()).class(class);
    for (i, r) in records.into_iter().enumerate() {
        // Tags are record indices; more than u32::MAX records cannot be built anyway.
        builder.add(r, u32::try_from(i).unwrap_or(u32::MAX));
    }
    let where_ = |tag: Option<u32>| -> String {
        match tag.and_then(|t| positions.get(t as usize)) {
            Some(p) => p.to_string(),
            None => args.file.display().to_string(),
        }
    };
    let (zone, warnings) = match builder.build() {
        Ok(ok) => ok,
        Err(problems) => {
            let mut errors = 0;
            for p in &problems {
                if p.severity == Severity::Error {
                    errors += 1;
                } else if args.quiet {
                    continue;
                }
                eprintln!("{}: {p}", where_(p.tag));
            }
            eprintln!(
                "{}: {errors} error(s) in zone {origin}",
                args.file.display()
            );
            return Ok(ExitCode::from(1));
        }
    };
    let check_time = t1.elapsed();
    if args.quiet {
        return Ok(ExitCode::SUCCESS);
    }
    for p in &warnings {
        eprintln!("{}: {p}", where_(p.tag));
    }
    let names = zone
        .nodes()
        .iter()
        .filter(|n| !n.is_empty_nonterminal())
        .count();
    let rrsets: usize = zone.nodes().iter().map(|n| n.rrsets().len()).sum();
    let secs = parse_time.as_secs_f64();
    let rate = if secs > 0.0 {
        size as f64 / secs / 1e6
    } else {
        0.0
    };
    println!("{}: zone {origin} OK", args.file.display());
    println!("  records   {record_count}");
    println!("  names     {names} (distinct owners)");
    println!("  RRsets    {rrsets}");
    let types: Vec<String> = per_type.iter().map(|(t, n)| format!("{t} {n}")).collect();
    println!("  types     {}", types.join(", "));
    println!("  serial    {}", zone.serial());
    println!(
        "  time      parse {:.3} s ({:.0} MB/s), checks {:.3} s",
        secs,
        rate,
        check_time.as_secs_f64()
    );
    if !warnings.is_empty() {
        println!("  warnings  {}", warnings.len());
    }
    Ok(ExitCode::SUCCESS)
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
