//! `lode keygen`: makes a TSIG key and prints it for Lode, the update tools,
//! and Knot DNS / BIND.

use std::io::Read;
use std::process::ExitCode;

use anyhow::Context;
use lode_tsig::{Algorithm, Key};

/// Arguments of `lode keygen`.
#[derive(clap::Args, Debug)]
#[command(after_long_help = HELP)]
pub struct KeygenArgs {
    /// The key's name, a domain name (e.g. `update.example.com`); both ends
    /// must use the same name. A final dot is added when missing.
    name: String,
    /// HMAC algorithm: hmac-sha256 (the default), hmac-sha384, hmac-sha512,
    /// hmac-sha224, hmac-sha1, hmac-md5 (the last two only for old peers).
    #[arg(long, short = 'a', value_name = "ALG", default_value = "hmac-sha256")]
    algorithm: String,
}

/// What `lode keygen --help` adds after the options.
const HELP: &str = "\
A TSIG key (RFC 8945) is a name, an HMAC algorithm and a shared secret; the
secret made here is random (/dev/urandom) and as long as the algorithm's digest.
Both ends of a signed exchange must hold the same key. The output has one form
for each place a key goes:

  [[key]] block     Lode's configuration file
  alg:name:secret   the client's -y option: knsupdate -y, nsupdate -y, kdig -y,
                    lode-bench update --tsig; alone in a file, knsupdate -k, kdig -k
  key \"name\" {...}  BIND's named.conf, and a key file for BIND's nsupdate -k
  key: - id: ...    Knot DNS's knot.conf (commented out)

The secret is a password: keep it out of logs and shell history, and keep files
that hold it readable by their owner only.

Examples:
  lode keygen update.example.com
  lode keygen xfr.example.com --algorithm hmac-sha512 > xfr.key
  knsupdate -y hmac-sha256:update.example.com.:SECRET";

/// Runs the command.
pub fn run(args: KeygenArgs) -> anyhow::Result<ExitCode> {
    let algorithm: Algorithm = args.algorithm.parse()?;
    let mut secret = vec![0u8; algorithm.digest_len()];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut secret))
        .context("reading /dev/urandom")?;
    let name = lode_wire::Name::parse(&args.name, Some(&lode_wire::Name::root()))
        .map_err(|e| anyhow::anyhow!("key name {:?}: {e}", args.name))?;
    let key = Key::new(&name, algorithm, &secret)?;
    print!("{}", render(&key));
    Ok(ExitCode::SUCCESS)
}

/// The three forms of `key`.
fn render(key: &Key) -> String {
    let (name, alg, secret) = (key.name(), key.algorithm(), key.secret_base64());
    format!(
        "# Lode configuration:\n\
         [[key]]\n\
         id = \"{name}\"\n\
         algorithm = \"{alg}\"\n\
         secret = \"{secret}\"\n\
         \n\
         # Clients (knsupdate -y, nsupdate -y, kdig -y, lode-bench update --tsig;\n\
         # alone in a file: knsupdate -k, kdig -k):\n\
         # {alg}:{name}:{secret}\n\
         \n\
         # BIND (named.conf; alone in a file: nsupdate -k):\n\
         key \"{name}\" {{ algorithm {alg}; secret \"{secret}\"; }};\n\
         \n\
         # Knot DNS (knot.conf):\n\
         # key:\n\
         #   - id: {name}\n\
         #     algorithm: {alg}\n\
         #     secret: {secret}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_forms() {
        let key = Key::parse_spec("hmac-sha384:Upd.Example:c2VjcmV0").expect("key");
        let text = render(&key);
        assert!(text.contains(
            "[[key]]\nid = \"upd.example.\"\nalgorithm = \"hmac-sha384\"\nsecret = \"c2VjcmV0\"\n"
        ));
        assert!(text.contains("\n# hmac-sha384:upd.example.:c2VjcmV0\n"));
        assert!(
            text.contains("key \"upd.example.\" { algorithm hmac-sha384; secret \"c2VjcmV0\"; };")
        );
        // The -y line parses back to the same key.
        let spec = text
            .lines()
            .find(|l| l.starts_with("# hmac"))
            .and_then(|l| l.strip_prefix("# "))
            .expect("spec line");
        assert_eq!(spec.parse::<Key>(), Ok(key));
    }
}
