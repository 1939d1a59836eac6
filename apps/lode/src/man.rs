//! `lode man --out DIR`: writes the server's manual pages, generated
//! from the command-line definitions (src/manpages.rs).
//!
//! `lode.8` lists every subcommand, and `lode-serve.8`, `lode-update.8`, … give
//! each one's options and help in full. The packaging runs this on the binary
//! it packages, so the pages cannot drift from the CLI (a build script could
//! not: the CLI lives in this binary crate, not in a library a build script can
//! link). `lode bench` and `lode gen` only hand over to the lode-bench binary:
//! they get no page here (lode-bench(1) and its pages come from `lode-bench man`).

use std::process::ExitCode;

use clap::CommandFactory;

use crate::manpages::{self, ManArgs, Manual};

/// Runs the command.
pub fn run(args: ManArgs) -> anyhow::Result<ExitCode> {
    let manual = Manual {
        // System administration commands, as knotd(8), nsd(8).
        section: "8",
        title: "Lode DNS server",
        skip: &crate::handover::COMMANDS,
        skip_page: "lode-bench(1)",
        files: &FILES,
        see_also: "lode.toml(5), lode-bench(1), knotd(8), knotc(8), nsd(8), dig(1), kdig(1), systemd.service(5)",
        page_see_also: "lode(8), lode.toml(5)",
    };
    // lode.toml(5): every configuration key, from the table the parser is
    // tested against (lode_server::config::reference).
    std::fs::create_dir_all(&args.out)?;
    let page = args.out.join("lode.toml.5");
    std::fs::write(
        &page,
        lode_server::config::reference::manual_page(env!("CARGO_PKG_VERSION")),
    )?;
    println!("{}", page.display());
    manpages::run(crate::Cli::command(), &manual, args)
}

/// FILES of `lode(8)`: where the package puts things.
const FILES: [(&str, &str); 4] = [
    (
        "/etc/lode/lode.toml",
        "The configuration (TOML; lode.toml(5) gives every key, `lode check --config` checks it). The packaged one serves nothing until [[zone]] tables are added.",
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
];
