//! `lode enum`: E.164 number ⇄ ENUM domain name (RFC 6116 §2.4).

/// Prints a line to stdout; a closed pipe (`| head`) ends the command with an error, not a panic.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)?
    }};
}

use std::process::ExitCode;

use lode_wire::e164::{E164, E164_ARPA};

/// Arguments of `lode enum`.
#[derive(clap::Args, Debug)]
#[command(after_long_help = HELP)]
pub struct EnumArgs {
    /// Numbers (`+1-212-939-1234`) or ENUM names (`4.3.2.1.9.3.9.2.1.2.1.e164.arpa`);
    /// a name below the apex is converted back to its number.
    #[arg(required_unless_present = "csv")]
    pub inputs: Vec<String>,
    /// The ENUM apex (another one for infrastructure or private ENUM).
    #[arg(long, default_value = E164_ARPA)]
    pub apex: String,
    /// A CSV of numbers (`+E.164 number, URI[, order, preference, service]`,
    /// as `lode update` reads it; `-`: standard input): one NAPTR record each,
    /// written as zone-file lines.
    #[arg(long, value_name = "FILE", conflicts_with = "inputs")]
    pub csv: Option<std::path::PathBuf>,
    /// With --csv: write an nsupdate script instead (for nsupdate, knsupdate
    /// or `lode update`), one message per --batch numbers, to --zone.
    #[arg(long, requires = "csv")]
    pub nsupdate: bool,
    /// With --nsupdate: the zone updated (default: the apex).
    #[arg(long, value_name = "ZONE", requires = "nsupdate")]
    pub zone: Option<String>,
    /// With --nsupdate: numbers per message.
    #[arg(long, default_value_t = 500, requires = "nsupdate")]
    pub batch: usize,
    /// With --csv: the records' TTL.
    #[arg(long, default_value_t = 3600, requires = "csv")]
    pub ttl: u32,
}

/// What `lode enum --help` adds after the options.
const HELP: &str = "\
Examples:
  lode enum +1-212-939-1234                 # 4.3.2.1.9.3.9.2.1.2.1.e164.arpa.
  lode enum 4.3.2.1.9.3.9.2.1.2.1.e164.arpa # +12129391234
  lode enum --csv numbers.csv >> 1.e164.arpa.zone
  lode enum --csv numbers.csv --nsupdate --zone 1.e164.arpa. | nsupdate -y KEY

A CSV line: +E.164 number, URI[, order, preference, service] (a header line is
skipped); its NAPTR: ORDER PREF \"u\" \"SERVICE\" \"!^.*$!URI!\" . (defaults 100, 10,
E2U+sip), as `lode update -f enum-csv` makes it.";

/// Runs the command: one line of output per input; exit code 1 if any input was bad.
pub fn run(args: EnumArgs) -> anyhow::Result<ExitCode> {
    if let Some(path) = &args.csv {
        return csv(&args, path);
    }
    let mut failed = false;
    for input in &args.inputs {
        let converted = if looks_like_name(input) {
            E164::from_enum_name(input, &args.apex).map(|n| n.to_string())
        } else {
            E164::parse(input).map(|n| n.enum_name(&args.apex))
        };
        match converted {
            Ok(out) => out!("{out}"),
            Err(e) => {
                eprintln!("lode enum: {input:?}: {e}");
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `lode enum --csv`: the CSV's NAPTR records as zone-file lines, or as an
/// nsupdate script; bad lines are reported with their line number (exit 1).
fn csv(args: &EnumArgs, path: &std::path::Path) -> anyhow::Result<ExitCode> {
    use crate::update::input::{enum_csv, BulkOptions, Resume};
    use anyhow::Context;
    let text = if path.as_os_str() == "-" {
        let mut t = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut t).context("standard input")?;
        t
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
    };
    let root = lode_wire::Name::root();
    let abs =
        |s: &str| lode_wire::Name::parse(s, Some(&root)).map_err(|e| anyhow::anyhow!("{s:?}: {e}"));
    let apex = abs(&args.apex)?;
    let zone = match &args.zone {
        Some(z) => abs(z)?,
        None => apex.clone(),
    };
    let opts = BulkOptions {
        origin: zone.clone(),
        zone,
        ttl: args.ttl,
        delete: false,
        batch: args.batch.max(1),
        enum_apex: args.apex.clone(),
    };
    let plan = enum_csv(&text, &opts, Resume::Start)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    for m in &plan.messages {
        if args.nsupdate {
            out!("zone {}", m.zone);
        }
        for r in &m.updates {
            let line = lode_zonefile::format_record(r);
            if args.nsupdate {
                out!("update add {line}");
            } else {
                out!("{line}");
            }
        }
        if args.nsupdate {
            out!("send");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A domain name is anything that does not start with `+` and contains a letter.
fn looks_like_name(input: &str) -> bool {
    let input = input.trim();
    !input.starts_with('+') && input.bytes().any(|b| b.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::looks_like_name;

    #[test]
    fn direction() {
        assert!(looks_like_name("4.3.2.1.e164.arpa"));
        assert!(looks_like_name("1.2.example.com"));
        assert!(!looks_like_name("+1-212-939-1234"));
        assert!(!looks_like_name("12129391234"));
    }
}
