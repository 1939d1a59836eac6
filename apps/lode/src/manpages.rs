//! Manual pages generated from a clap command with clap_mangen, one page per
//! command as git has them: `NAME.N` lists every subcommand, and `NAME-SUB.N`
//! gives each one's options and help in full.
//!
//! Shared by the two binaries: `lode man` (the server's pages, section 8) and
//! `lode-bench man` (the measuring tools', section 1), which includes this file
//! with `#[path]` (both are binary crates: there is no library to put it in).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap_mangen::roff::{bold, roman, Roff};

/// Arguments of `lode man` and `lode-bench man`.
#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// Folder to write the pages to (created if needed).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// Runs `man`: writes the pages of `cmd` and prints their paths.
pub fn run(cmd: clap::Command, manual: &Manual, args: ManArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    for path in write(&cmd, &args.out, manual)? {
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// What every page of one binary shares.
#[derive(Debug)]
pub struct Manual<'a> {
    /// The section: "8" for the server, "1" for the measuring tools.
    pub section: &'static str,
    /// The manual's title in the page headers.
    pub title: &'static str,
    /// Subcommands that get no page of their own (hidden ones never do).
    pub skip: &'a [&'a str],
    /// The page the top page names for them instead (they hand over to
    /// another program), e.g. `lode-bench(1)`.
    pub skip_page: &'a str,
    /// FILES entries of the top page: path and what it is.
    pub files: &'a [(&'a str, &'a str)],
    /// SEE ALSO of the top page.
    pub see_also: &'a str,
    /// SEE ALSO of every other page (the top page, the configuration's).
    pub page_see_also: &'a str,
}

/// Writes the pages of `cmd` (built, its help subcommand disabled) to `out`,
/// created if needed; returns the paths written.
fn write(cmd: &clap::Command, out: &Path, manual: &Manual) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut written = Vec::new();
    write_pages(cmd, out, manual, true, &mut written)?;
    Ok(written)
}

/// Writes the page of `cmd` and, recursively, of its subcommands that get one.
fn write_pages(
    cmd: &clap::Command,
    out: &Path,
    manual: &Manual,
    top: bool,
    written: &mut Vec<PathBuf>,
) -> anyhow::Result<()> {
    for sub in cmd.get_subcommands() {
        let skipped = top && manual.skip.contains(&sub.get_name());
        if !sub.is_hide_set() && !skipped {
            write_pages(sub, out, manual, false, written)?;
        }
    }
    let man = clap_mangen::Man::new(cmd.clone())
        .section(manual.section)
        .manual(manual.title)
        .source(format!("lode {}", env!("CARGO_PKG_VERSION")));
    let path = out.join(man.get_filename());
    let mut page = Vec::new();
    man.render(&mut page)?;
    if top {
        // A skipped subcommand is listed as the page of the program it
        // hands over to, not as a page of its own that does not exist.
        let mut text = String::from_utf8_lossy(&page).into_owned();
        for s in manual.skip {
            let own = format!("{}\\-{s}({})", cmd.get_name(), manual.section);
            text = text.replace(&own, &manual.skip_page.replace('-', "\\-"));
        }
        page = text.into_bytes();
        page.extend_from_slice(files_section(manual).as_bytes());
    } else {
        let mut r = Roff::default();
        r.control("SH", ["SEE ALSO"]);
        r.text([roman(manual.page_see_also)]);
        page.extend_from_slice(r.to_roff().as_bytes());
    }
    std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))?;
    written.push(path);
    Ok(())
}

/// FILES (when there are any) and SEE ALSO of the top page.
fn files_section(manual: &Manual) -> String {
    let mut r = Roff::default();
    if !manual.files.is_empty() {
        r.control("SH", ["FILES"]);
        for (path, what) in manual.files {
            r.control("TP", []);
            r.text([bold(*path)]);
            r.text([roman(*what)]);
        }
    }
    r.control("SH", ["SEE ALSO"]);
    r.text([roman(manual.see_also)]);
    r.to_roff()
}
