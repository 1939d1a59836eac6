//! `lode import-config knot.conf`: a Knot DNS configuration as a
//! `lode.toml`, with every item that could not be carried over named (file,
//! line, why) on stderr and at the top of the file written.
//!
//! ```text
//!  knot.conf ──knotconf.rs──▶ sections, blocks, items (file:line, used?)
//!     │ server.rs  server, control, database, log, mod-rrl/-cookies/-dnstap
//!     │ access.rs  key, remote(s), acl, submission, keystore, policy
//!     │ zones.rs   zone (+ its template), catalog templates
//!     ▼
//!  emit.rs: lode.toml ◀── report: not imported / note / as in Lode
//!           (every item no step used: "no such setting in Lode")
//! ```
//!
//! The reader is written by hand rather than with a YAML crate: knot.conf
//! is Knot's own restricted YAML (an item written on several lines adds
//! values, which YAML calls a duplicate key), and the report needs the line
//! of every item.

mod access;
mod convert;
mod emit;
mod knotconf;
mod server;
mod zones;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context};

use convert::{Import, Kind};
use knotconf::KnotConf;

/// The help after the options.
const HELP: &str = "\
Examples:
  lode import-config /etc/knot/knot.conf --out /etc/lode/lode.toml
  lode check --config /etc/lode/lode.toml
  lode import-config knot.conf | less

What is converted: server (listen, listen-tls, listen-quic, workers, identity, version, nsid, \
user, TCP and QUIC limits, certificates), control (rundir + listen as `control`), database \
(journal-db as journal-dir, kasp-db), log (the level), key, remote (via, several addresses), \
remotes (groups, expanded where named), acl (address ranges as prefixes, remote as its \
addresses and key, deny), submission, keystore (PKCS #11), policy, template (written into each \
zone that uses it; catalog templates as [[template]]), zone (file with its %s, %c, %l \
formatters, master, notify, acl, serial-policy, zonefile-sync, signing, validation, ZONEMD, catalogs, \
timers), mod-rrl, mod-cookies and mod-dnstap named by the default template's global-module.

Paths are written absolute: zone files under the zone's storage (Knot's default \
/var/lib/knot), journal-dir and kasp-db under the database's, relative storage and rundir \
from the current folder (as knotd takes them from the folder it starts in).

Every item that could not be converted is listed as `not imported: FILE:LINE: ITEM: why` on \
stderr and as a comment at the top of the output; `note:` lines say what to do by hand (signing \
keys, journals), `as in Lode:` lines (output only) what needs no setting.

Exit status: 0 if everything was converted, 1 if some item was not (the output is still \
written), 2 if the file cannot be read or is not a knot.conf (FILE:LINE: reason).";

/// Arguments of `lode import-config`.
#[derive(clap::Args, Debug)]
#[command(after_help = HELP)]
pub struct ImportConfigArgs {
    /// The Knot DNS configuration (`include`s are read too).
    #[arg(value_name = "KNOT.CONF")]
    pub knot_conf: PathBuf,
    /// Write the Lode configuration here (default: standard output).
    #[arg(long, short = 'o', value_name = "LODE.TOML")]
    pub out: Option<PathBuf>,
}

/// Runs the command.
pub fn run(args: ImportConfigArgs) -> anyhow::Result<ExitCode> {
    let conf = KnotConf::read(&args.knot_conf).map_err(|e| anyhow!(e))?;
    let conf_dir = args
        .knot_conf
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let start_dir = std::env::current_dir().context("the current folder")?;
    let conf_dir = absolute_dir(&start_dir, &conf_dir);
    let mut im = Import::new(&conf, conf_dir, start_dir);
    convert_all(&mut im);
    let text = render(&im, &args.knot_conf);
    // What is written must be a configuration Lode reads; a failure here is
    // a bug of the conversion, said as such.
    lode_server::ConfigFile::parse(&text).map_err(|e| {
        anyhow!("internal error: the converted configuration is not read back: {e}")
    })?;
    for e in im.report.iter().filter(|e| e.kind != Kind::Same) {
        eprintln!("{}", e.line());
    }
    match &args.out {
        Some(path) => {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?
        }
        None => std::io::stdout()
            .write_all(text.as_bytes())
            .context("writing to standard output")?,
    }
    Ok(if im.incomplete() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `dir` made absolute (from `start`).
fn absolute_dir(start: &Path, dir: &Path) -> PathBuf {
    if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        start.join(dir)
    }
}

/// Every step, in an order that lets each find what it refers to.
fn convert_all(im: &mut Import) {
    server::convert(im);
    access::convert(im);
    zones::convert(im);
    im.report_leftovers();
    im.report
        .sort_by(|a, b| (a.kind, &a.at.file, a.at.line).cmp(&(b.kind, &b.at.file, b.at.line)));
}

/// The output: a header naming the source and the report, then the tables.
fn render(im: &Import, source: &Path) -> String {
    let mut head = vec![
        format!(
            "Converted from {} by `lode import-config` (lode {}).",
            source.display(),
            env!("CARGO_PKG_VERSION")
        ),
        "Check it with `lode check --config FILE` before `lode serve --config FILE`.".to_owned(),
    ];
    if !im.report.is_empty() {
        head.push(String::new());
    }
    head.extend(im.report.iter().map(convert::Entry::line));
    im.doc.render(&head)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Converts `text` (as knot.conf in /k) and returns the TOML and the report lines.
    fn convert_text(text: &str) -> (String, Vec<String>) {
        let conf = KnotConf::parse(text, "knot.conf", Path::new("/k")).expect("parses");
        let mut im = Import::new(&conf, PathBuf::from("/k"), PathBuf::from("/start"));
        convert_all(&mut im);
        let toml = im.doc.render(&[]);
        lode_server::ConfigFile::parse(&toml).expect("Lode reads it");
        (toml, im.report.iter().map(convert::Entry::line).collect())
    }

    #[test]
    fn templates_storage_and_formatters_give_absolute_files() {
        let (toml, report) = convert_text(
            "template:\n  - id: default\n    storage: /srv/zones\n    file: \"%l[0]/%s.db\"\n  - id: rel\n    storage: zones\n\
             zone:\n  - domain: Example.COM\n  - domain: b.org\n    template: rel\n  - domain: c.net\n    file: /x/c\n",
        );
        assert!(
            toml.contains("name = \"example.com.\"\nfile = \"/srv/zones/com/example.com.db\""),
            "{toml}"
        );
        assert!(
            toml.contains("name = \"b.org.\"\nfile = \"/start/zones/b.org.zone\""),
            "{toml}"
        );
        assert!(
            toml.contains("name = \"c.net.\"\nfile = \"/x/c\""),
            "{toml}"
        );
        assert!(
            report.iter().all(|l| !l.starts_with("not imported")),
            "{report:?}"
        );
    }

    #[test]
    fn zonemd_options_go_to_zones_and_catalog_templates() {
        let (toml, report) = convert_text(
            "remote:\n  - id: p\n    address: 10.0.0.1\n\
             template:\n  - id: member\n    master: p\n    zonemd-verify: on\n    zonemd-generate: zonemd-sha384\n    zonefile-sync: -1\n\
             zone:\n  - domain: e.\n    zonemd-generate: zonemd-sha512\n\
             \x20 - domain: cat.\n    master: p\n    catalog-role: interpret\n    catalog-template: member\n",
        );
        assert!(
            toml.contains("name = \"e.\"\nfile = \"/var/lib/knot/e.zone\"\nzonemd-generate = \"zonemd-sha512\""),
            "{toml}"
        );
        let template = &toml[toml.find("[[template]]").expect(&toml)..];
        assert!(
            template.contains("zonemd-generate = \"zonemd-sha384\"\nzonemd-verify = true"),
            "{toml}"
        );
        assert!(report.iter().all(|l| !l.contains("zonemd")), "{report:?}");
    }

    #[test]
    fn unknown_items_are_reported_with_their_line() {
        let (_, report) = convert_text("server:\n    tcp-fastopen: on\n    udp-workers: 2\n");
        assert!(
            report.contains(&"not imported: knot.conf:2: server.tcp-fastopen: on: Lode does not use TCP Fast Open".to_owned()),
            "{report:?}"
        );
    }

    #[test]
    fn acl_remotes_split_by_key_and_zones_follow() {
        let (toml, _) = convert_text(
            "key:\n  - id: k1\n    algorithm: hmac-sha256\n    secret: AAAA\n  - id: k2\n    algorithm: hmac-sha256\n    secret: BBBB\n\
             remote:\n  - id: a\n    address: [10.0.0.1@5353, 10.0.0.2]\n    key: k1\n  - id: b\n    address: 10.0.0.3\n    key: k2\n\
             remotes:\n  - id: both\n    remote: [a, b]\n\
             acl:\n  - id: xfr\n    remote: both\n    action: transfer\n\
             zone:\n  - domain: e.\n    acl: xfr\n    notify: both\n",
        );
        assert!(
            toml.contains("id = \"xfr-1\"\naddress = [\"10.0.0.1\", \"10.0.0.2\"]"),
            "{toml}"
        );
        assert!(toml.contains("key = [\"k2\"]"), "{toml}");
        assert!(toml.contains("acl = [\"xfr-1\", \"xfr-2\"]"), "{toml}");
        assert!(toml.contains("notify = [\"a\", \"b\"]"), "{toml}");
    }

    #[test]
    fn update_type_never_widens_a_rule() {
        let (toml, report) = convert_text(
            "acl:\n  - id: upd\n    action: [update, transfer]\n    update-type: [A, AAAA]\n\
             \x20 - id: only\n    action: update\n    update-owner: key\nzone:\n  - domain: e.\n    acl: [upd, only]\n",
        );
        assert!(toml.contains("action = [\"transfer\"]"), "{toml}");
        assert!(toml.contains("acl = [\"upd\"]"), "{toml}");
        assert!(
            report
                .iter()
                .any(|l| l.contains("knot.conf:4: acl[upd].update-type")),
            "{report:?}"
        );
    }
}
