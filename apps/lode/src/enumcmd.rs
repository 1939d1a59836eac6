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
pub struct EnumArgs {
    /// Numbers (`+1-212-939-1234`) or ENUM names (`4.3.2.1.9.3.9.2.1.2.1.e164.arpa`);
    /// a name below the apex is converted back to its number.
    #[arg(required = true)]
    pub inputs: Vec<String>,
    /// The ENUM apex (another one for infrastructure or private ENUM).
    #[arg(long, default_value = E164_ARPA)]
    pub apex: String,
}

/// Runs the command: one line of output per input; exit code 1 if any input was bad.
pub fn run(args: EnumArgs) -> anyhow::Result<ExitCode> {
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
