//! `lode man --out DIR` (hidden): writes the manual pages, generated from the
//! command-line definitions with clap_mangen.
//!
//! One page per command as git has them: `lode.8` lists every subcommand,
//! and `lode-serve.8`, `lode-bench-rate.8`, … give each one's options and
//! help in full. The packaging runs this on the binary it packages, so the
//! pages cannot drift from the CLI (a build script could not: the CLI lives
//! in this binary crate, not in a library a build script can link).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::CommandFactory;
use clap_mangen::roff::{bold, roman, Roff};

/// Arguments of `lode man`.
#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// Folder to write the pages to (created if needed).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// The section of every page: system administration commands, as knotd(8), nsd(8).
const SECTION: &str = "8";

/// Runs the command.
pub fn run(args: ManArgs) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let mut cmd = crate::Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut written = Vec::new();
    write_pages(&cmd, &args.out, true, &mut written)?;
    for path in &written {
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the page of `cmd` and, recursively, of its visible subcommands.
fn write_pages(
    cmd: &clap::Command,
    out: &Path,
    top: bool,
    written: &mut Vec<PathBuf>,
) -> anyhow::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, out, false, written)?;
    }
    let man = clap_mangen::Man::new(cmd.clone())
        .section(SECTION)
        .manual("Lode DNS server")
        .source(format!("lode {}", env!("CARGO_PKG_VERSION")));
    let path = out.join(man.get_filename());
    let mut page = Vec::new();
    man.render(&mut page)?;
    if top {
        page.extend_from_slice(files_section().as_bytes());
    }
    std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))?;
    written.push(path);
    Ok(())
}

/// FILES and SEE ALSO of `lode(8)`: where the package puts things.
fn files_section() -> String {
    let mut r = Roff::default();
    r.control("SH", ["FILES"]);
    for (path, what) in [
        (
            "/etc/lode/lode.toml",
            "The configuration (TOML; `lode serve --help` lists its keys). The packaged one serves nothing until [[zone]] tables are added.",
        ),
        (
            "/var/lib/lode",
            "Snapshots, journals and zone state, owned by the lode user.",
        ),
        (
            "/run/lode/lode.sock",
            "The control socket (mode 0660) used by lode reload, lode zone-status and the other control commands.",
        ),
        (
            "/usr/lib/systemd/system/lode.service",
            "The systemd unit: systemctl start, reload, status lode; journalctl -u lode for the log (--log-format json for one JSON object per line).",
        ),
    ] {
        r.control("TP", []);
        r.text([bold(path)]);
        r.text([roman(what)]);
    }
    r.control("SH", ["SEE ALSO"]);
    r.text([roman(
        "knotd(8), knotc(8), nsd(8), dig(1), kdig(1), systemd.service(5)",
    )]);
    r.to_roff()
}
