//! `lode dnssec`: the signing keys of zones Lode signs (as Knot's `keymgr`):
//! list them, make one, import BIND or PEM keys, print DNSKEY/DS/CDS.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context};
use lode_dnssec::{import, Algorithm, SigningKey, KSK_FLAGS, ZSK_FLAGS};
use lode_wire::Name;

/// `println!` that stops quietly when the reader has gone (`| head`).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout(), $($arg)*).is_err() {
            return Ok(ExitCode::SUCCESS);
        }
    }};
}

/// Arguments of `lode dnssec`.
#[derive(clap::Args, Debug)]
#[command(after_long_help = HELP)]
pub struct DnssecArgs {
    #[command(subcommand)]
    command: DnssecCommand,
    /// The key folder (the configuration's `kasp-db`).
    #[arg(long, global = true, value_name = "DIR")]
    kasp_db: Option<PathBuf>,
    /// Take the key folder from this configuration file (`kasp-db`, else
    /// `keys` in its `journal-dir`).
    #[arg(long, short = 'c', global = true, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(clap::Subcommand, Debug)]
enum DnssecCommand {
    /// List a zone's keys: tag, algorithm, role, state now, its timers, file.
    List {
        /// The zone.
        zone: String,
    },
    /// Make a key for a zone.
    Generate {
        /// The zone.
        zone: String,
        /// ecdsap256sha256 (13), ecdsap384sha384 (14), ed25519 (15) or rsasha256 (8).
        #[arg(long, short = 'a', default_value = "ecdsap256sha256")]
        algorithm: String,
        /// Key size in bits (RSA: 2048, the default, to 4096; the curve fixes the others').
        #[arg(long, short = 'b')]
        size: Option<u32>,
        /// A zone signing key (default: a key signing key, the KSK).
        #[arg(long)]
        zsk: bool,
        /// Make it in this `[[keystore]]` of the configuration (a PKCS #11
        /// token; default: a key file holding the private key).
        #[arg(long, value_name = "ID", requires = "config")]
        keystore: Option<String>,
    },
    /// Publish another signer's key (multi-signer, RFC 8901 model 2): the
    /// DNSKEY records in FILE (a BIND .key file, zone text, or `-` for
    /// standard input) join the zone's DNSKEY RRset; they never sign here.
    /// Taken in at the next start or `lode zone-sign`.
    ImportPub {
        /// The zone.
        zone: String,
        /// The file with the DNSKEY record(s).
        file: PathBuf,
    },
    /// Stop publishing another signer's key (by its tag).
    RemovePub {
        /// The zone.
        zone: String,
        /// The key's tag.
        tag: u16,
    },
    /// Import a BIND key pair (the .private file; its .key file next to it).
    ImportBind {
        /// The zone.
        zone: String,
        /// `K<zone>+<alg>+<tag>.private` (or its .key).
        file: PathBuf,
    },
    /// Import a PKCS #8 private key in PEM.
    ImportPem {
        /// The zone.
        zone: String,
        /// The PEM file (`-----BEGIN PRIVATE KEY-----`).
        file: PathBuf,
        /// Its algorithm.
        #[arg(long, short = 'a', default_value = "ecdsap256sha256")]
        algorithm: String,
        /// A zone signing key (default: a KSK).
        #[arg(long)]
        zsk: bool,
    },
    /// Offline KSK, the ZSK side: make the ZSKs and their rollovers from
    /// FROM (default: now) to TO ahead, with every timer (as keymgr
    /// pregenerate; the policy needs offline-ksk, dnskey-ttl, zone-max-ttl).
    Pregenerate {
        /// The zone.
        zone: String,
        /// [FROM] TO: Unix seconds, YYYYMMDDHHmmSS, now, +N/-N with s, mi, h, d, w, mo, y.
        #[arg(num_args = 1..=2, required = true, value_name = "TIME")]
        times: Vec<String>,
    },
    /// Offline KSK, the ZSK side: print the key signing request of the ZSKs
    /// from FROM (default: the last period imported, else now) to TO, for
    /// the KSK side to sign (Knot 3.2's format; keymgr generate-ksr).
    GenerateKsr {
        /// The zone.
        zone: String,
        /// [FROM] TO (as for pregenerate).
        #[arg(num_args = 1..=2, required = true, value_name = "TIME")]
        times: Vec<String>,
    },
    /// Offline KSK, the KSK side: sign a key signing request with the
    /// zone's KSKs here and print the signed key response (keymgr sign-ksr;
    /// signature lifetime, refresh and CDS from the zone's policy with
    /// --config, else Knot's defaults).
    SignKsr {
        /// The zone.
        zone: String,
        /// The KSR file.
        file: PathBuf,
    },
    /// Offline KSK, the ZSK side: check a signed key response and keep it
    /// (keymgr import-skr); the server publishes each period's key records
    /// and signatures when it begins (now: `lode zone-keys-load ZONE`).
    ImportSkr {
        /// The zone.
        zone: String,
        /// The SKR file.
        file: PathBuf,
    },
    /// Check the signatures of a signed key response (keymgr validate-skr).
    ValidateSkr {
        /// The zone.
        zone: String,
        /// The SKR file.
        file: PathBuf,
    },
    /// Print the imported signed key response's periods from FROM (default:
    /// the first) to TO (keymgr show-offline).
    ShowOffline {
        /// The zone.
        zone: String,
        /// [FROM] [TO] (as for pregenerate).
        #[arg(num_args = 0..=2, value_name = "TIME")]
        times: Vec<String>,
    },
    /// Print the zone's DNSKEY records, and the DS, CDS and CDNSKEY of its KSKs.
    Ds {
        /// The zone.
        zone: String,
    },
}

const HELP: &str = "\
A zone with `dnssec-signing = true` is signed with the keys in its folder of
the key folder (`kasp-db`), split as BIND splits them:
KASP_DB/<zone>/K<zone>+<alg>+<tag>.private, the private key with its role and
timers, mode 0600 (format: crates/dnssec/src/key.rs), and beside it
K<zone>+<alg>+<tag>.key, the public key (its DNSKEY record, as a BIND .key
file: to publish or hand to another signer). A folder of an older version,
whose .key files held the private keys, is read and split when first read. When a signed zone first loads and has no keys, the server
makes them by its policy: a KSK and a ZSK (or one CSK with
single-type-signing); the KSK is \"ready\" (its CDS published, its DS in the
log) until `lode zone-ksk-submitted`. The server then rolls keys by the
policy's timers (zsk-lifetime, ksk-lifetime, algorithm; `lode
zone-key-rollover` starts one now) and writes their files; `list` shows
each key's state and timers. Keys added or removed here (made active at
once) are taken in when the server next starts: the DNSKEY RRset is changed
and signatures by keys that no longer sign are replaced a batch at a time.

With a policy's `keystore` naming a `[[keystore]]` (a PKCS #11 token, e.g.
an HSM or SoftHSM2), keys are made in the token and never leave it; their
files name the token and the key's id instead of holding the private key.
`list` says where each key is.

Two signers of one zone (multi-signer, RFC 8901 model 2): `import-pub` the
other signer's ZSK (its DNSKEY record), then `lode zone-sign ZONE`: it joins
the DNSKEY RRset and never signs here.

An offline KSK (Knot 3.2's KSR/SKR, either side may be Knot's keymgr): on
the signer, a policy with `offline-ksk = true` (and dnskey-ttl,
zone-max-ttl); `pregenerate` the ZSKs ahead, `generate-ksr` a request for
the KSK side, which answers it with `sign-ksr` (keymgr sign-ksr); then
`import-skr` the response. The signer has no KSK: it publishes each
period's DNSKEY/CDS/CDNSKEY RRsets and their signatures from the response
and signs the rest with its ZSKs, a new ZSK signing the zone whole.

Examples:
  lode dnssec list example.com -c /etc/lode/lode.toml
  lode dnssec generate example.com -c /etc/lode/lode.toml --keystore hsm
  lode dnssec ds example.com -c /etc/lode/lode.toml       # give the DS to the parent
  lode dnssec generate example.com --kasp-db keys -a ed25519
  lode dnssec import-bind example.com Kexample.com.+013+12345.private -c lode.toml
  lode dnssec import-pub example.com other-signer-zsk.key -c lode.toml
  lode dnssec pregenerate example.com +1y -c lode.toml    # offline KSK, ZSK side
  lode dnssec generate-ksr example.com +0 +1y -c lode.toml > example.com.ksr
  lode dnssec sign-ksr example.com example.com.ksr --kasp-db ksk-keys > example.com.skr
  lode dnssec import-skr example.com example.com.skr -c lode.toml";

/// Runs the command.
pub fn run(args: DnssecArgs) -> anyhow::Result<ExitCode> {
    let kasp_db = kasp_db(&args)?;
    // Keys in a token are read (and made) there: the configuration's
    // keystores opened first.
    let keystores = match &args.config {
        Some(conf) => open_keystores(conf)?,
        None => Vec::new(),
    };
    let now = lode_io::clock::unix_now();
    let offline = crate::offline::Target {
        kasp_db: &kasp_db,
        conf: args.config.as_deref(),
        now,
    };
    match args.command {
        DnssecCommand::List { zone } => {
            let zone = zone_name(&zone)?;
            let dir = key_dir(&kasp_db, &zone);
            let keys = SigningKey::read_all(&dir, zone.as_ref())?;
            if keys.is_empty() {
                outln!("{zone}: no keys in {}", dir.display());
            }
            for r in lode_server::read_foreign(&dir).map_err(|e| anyhow!(e))? {
                outln!(
                    "{zone} other signer's key, tag {:5}, published, not signing here\n    {}\n    {}",
                    lode_dnssec::key::key_tag(&r),
                    lode_dnssec::key::dnskey_to_text(&r),
                    dir.join(lode_server::FOREIGN_FILE).display()
                );
            }
            for k in &keys {
                let timers: Vec<String> = k
                    .timing
                    .fields()
                    .into_iter()
                    .filter_map(|(name, at)| {
                        at.map(|t| format!("{name} {}", lode_zonefile::utc_text(t)))
                    })
                    .collect();
                let place = match k.token_key() {
                    Some(t) => format!(
                        "{} (in PKCS #11 token {:?}, id {})",
                        dir.join(k.file_name()).display(),
                        t.token.label(),
                        t.id.iter().map(|b| format!("{b:02x}")).collect::<String>()
                    ),
                    None => dir.join(k.file_name()).display().to_string(),
                };
                outln!(
                    "{zone} tag {:5} {} ({:2}) {} {} created {}\n    {}\n    {place}",
                    k.tag(),
                    k.algorithm,
                    k.algorithm.number(),
                    k.role,
                    k.timing.state(now),
                    lode_zonefile::utc_text(k.created),
                    timers.join(", "),
                );
            }
        }
        DnssecCommand::Generate {
            zone,
            algorithm,
            size,
            zsk,
            keystore,
        } => {
            let zone = zone_name(&zone)?;
            let algorithm = parse_algorithm(&algorithm)?;
            let flags = if zsk { ZSK_FLAGS } else { KSK_FLAGS };
            let key = match keystore {
                Some(id) => {
                    let token = keystores
                        .iter()
                        .find(|(k, _)| *k == id)
                        .map(|(_, t)| t)
                        .ok_or_else(|| anyhow!("keystore {id:?} is not a [[keystore]] id"))?;
                    SigningKey::generate_in(token, &zone, algorithm, flags, size, now)?
                }
                None => SigningKey::generate_sized(&zone, algorithm, flags, size, now)?,
            };
            save(&kasp_db, &zone, &key)?;
        }
        DnssecCommand::ImportPub { zone, file } => {
            let zone = zone_name(&zone)?;
            let text = if file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin()).context("reading standard input")?
            } else {
                std::fs::read_to_string(&file)
                    .with_context(|| format!("reading {}", file.display()))?
            };
            let mut added = Vec::new();
            for (i, line) in text.lines().enumerate() {
                let line = line.split(';').next().unwrap_or("");
                let words: Vec<&str> = line.split_whitespace().collect();
                let Some(at) = words.iter().position(|w| w.eq_ignore_ascii_case("DNSKEY")) else {
                    continue;
                };
                let rdata = lode_dnssec::key::dnskey_from_text(&words[at + 1..].join(" "))
                    .map_err(|e| anyhow!("{}:{}: {e}", file.display(), i + 1))?;
                added.push(rdata);
            }
            if added.is_empty() {
                bail!("{}: no DNSKEY record", file.display());
            }
            let dir = key_dir(&kasp_db, &zone);
            let mut all = lode_server::read_foreign(&dir).map_err(|e| anyhow!(e))?;
            for r in added {
                let tag = lode_dnssec::key::key_tag(&r);
                if all.contains(&r) {
                    outln!("{zone}: tag {tag} is published already");
                } else {
                    outln!("{zone}: tag {tag} ({}) will be published (next start or `lode zone-sign {zone}`)", lode_dnssec::key::dnskey_to_text(&r));
                    all.push(r);
                }
            }
            write_foreign(&dir, &all)?;
        }
        DnssecCommand::RemovePub { zone, tag } => {
            let zone = zone_name(&zone)?;
            let dir = key_dir(&kasp_db, &zone);
            let mut all = lode_server::read_foreign(&dir).map_err(|e| anyhow!(e))?;
            let before = all.len();
            all.retain(|r| lode_dnssec::key::key_tag(r) != tag);
            if all.len() == before {
                bail!("{zone}: no other signer's key with tag {tag}");
            }
            write_foreign(&dir, &all)?;
            outln!("{zone}: tag {tag} no longer published (next start or `lode zone-sign {zone}`)");
        }
        DnssecCommand::ImportBind { zone, file } => {
            let zone = zone_name(&zone)?;
            let private = file.with_extension("private");
            let public = file.with_extension("key");
            let read = |p: &Path| {
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))
            };
            let key = import::from_bind(&zone, &read(&public)?, &read(&private)?, now)?;
            save(&kasp_db, &zone, &key)?;
        }
        DnssecCommand::ImportPem {
            zone,
            file,
            algorithm,
            zsk,
        } => {
            let zone = zone_name(&zone)?;
            let pem = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let flags = if zsk { ZSK_FLAGS } else { KSK_FLAGS };
            let key = import::from_pem(&zone, parse_algorithm(&algorithm)?, flags, &pem, now)?;
            save(&kasp_db, &zone, &key)?;
        }
        DnssecCommand::Pregenerate { zone, times } => {
            offline.pregenerate(&zone_name(&zone)?, &times)?
        }
        DnssecCommand::GenerateKsr { zone, times } => {
            offline.generate_ksr(&zone_name(&zone)?, &times)?
        }
        DnssecCommand::SignKsr { zone, file } => offline.sign_ksr(&zone_name(&zone)?, &file)?,
        DnssecCommand::ImportSkr { zone, file } => offline.import_skr(&zone_name(&zone)?, &file)?,
        DnssecCommand::ValidateSkr { zone, file } => {
            offline.validate_skr(&zone_name(&zone)?, &file)?
        }
        DnssecCommand::ShowOffline { zone, times } => {
            offline.show_offline(&zone_name(&zone)?, &times)?
        }
        DnssecCommand::Ds { zone } => {
            let zone = zone_name(&zone)?;
            let dir = key_dir(&kasp_db, &zone);
            let keys = SigningKey::read_all(&dir, zone.as_ref())?;
            if keys.is_empty() {
                bail!("{zone}: no keys in {}", dir.display());
            }
            for k in &keys {
                outln!("{zone} DNSKEY {}", k.dnskey_text());
            }
            for k in keys.iter().filter(|k| k.is_ksk()) {
                let ds = k.ds_text();
                outln!("{zone} DS {ds}");
                outln!("{zone} CDS {ds}");
                outln!("{zone} CDNSKEY {}", k.dnskey_text());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes a key and says so.
fn save(kasp_db: &Path, zone: &Name, key: &SigningKey) -> anyhow::Result<()> {
    use std::io::Write as _;
    let path = key.write(&key_dir(kasp_db, zone))?;
    let _ = writeln!(
        std::io::stdout(),
        "{zone}: {} tag {} ({}) written to {}",
        if key.is_ksk() { "KSK" } else { "ZSK" },
        key.tag(),
        key.algorithm,
        path.display()
    );
    if key.is_ksk() {
        let _ = writeln!(std::io::stdout(), "{zone} DS {}", key.ds_text());
    }
    Ok(())
}

fn parse_algorithm(text: &str) -> anyhow::Result<Algorithm> {
    Algorithm::parse(text).ok_or_else(|| {
        anyhow!("algorithm {text:?}: ecdsap256sha256 (13), ecdsap384sha384 (14), ed25519 (15) or rsasha256 (8)")
    })
}

fn zone_name(text: &str) -> anyhow::Result<Name> {
    Name::parse(text, Some(&Name::root()))
        .map(|n| n.to_lowercase())
        .map_err(|e| anyhow!("zone {text:?}: {e}"))
}

/// The key folder of a zone (as the server names it).
pub(crate) fn key_dir(kasp_db: &Path, zone: &Name) -> PathBuf {
    lode_server::key_dir(kasp_db, zone)
}

/// Writes a zone's file of other signers' keys whole (mode 0600, synced).
fn write_foreign(dir: &Path, keys: &[Vec<u8>]) -> anyhow::Result<()> {
    let mut text =
        String::from("# Other signers' keys this zone publishes (lode dnssec import-pub)\n");
    for r in keys {
        text.push_str(&format!(
            "{} ; tag {}\n",
            lode_dnssec::key::dnskey_to_text(r),
            lode_dnssec::key::key_tag(r)
        ));
    }
    lode_dnssec::key::write_private(dir, lode_server::FOREIGN_FILE, &text)?;
    Ok(())
}

/// The `[[keystore]]`s of the configuration file `conf`, opened (by id).
fn open_keystores(
    conf: &Path,
) -> anyhow::Result<Vec<(String, std::sync::Arc<lode_dnssec::hsm::Token>)>> {
    let file = lode_server::config::ConfigFile::read(conf)?;
    file.keystores
        .iter()
        .map(|k| {
            if k.backend.as_deref() != Some("pkcs11") {
                bail!(
                    "keystore {:?}: backend = \"pkcs11\" is the one Lode has",
                    k.id
                );
            }
            let config = lode_dnssec::hsm::TokenConfig::parse(&k.config)
                .map_err(|e| anyhow!("keystore {:?}: {e}", k.id))?;
            let token =
                lode_dnssec::hsm::open(&config).with_context(|| format!("keystore {:?}", k.id))?;
            Ok((k.id.clone(), token))
        })
        .collect()
}

/// The key folder from the options.
fn kasp_db(args: &DnssecArgs) -> anyhow::Result<PathBuf> {
    if let Some(d) = &args.kasp_db {
        return Ok(d.clone());
    }
    let Some(conf) = &args.config else {
        bail!("say where the keys are: --kasp-db DIR or --config FILE");
    };
    let file = lode_server::config::ConfigFile::read(conf)?;
    let base = conf.parent().unwrap_or(Path::new("."));
    if let Some(d) = &file.kasp_db {
        return Ok(base.join(d));
    }
    match &file.journal_dir {
        Some(j) => Ok(base.join(j).join("keys")),
        None => bail!(
            "{}: neither kasp-db nor journal-dir is set (signed zones need journal-dir)",
            conf.display()
        ),
    }
}
