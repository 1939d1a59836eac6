//! The control commands on a zone's data, run on the reloader thread in
//! order with reloads: `zone-purge --force [NAME…]` (`purge.rs`),
//! `zone-backup [NAME…] --dir=PATH` and `zone-restore [NAME…] --dir=PATH`
//! (`backup.rs`). The folder is the rest of the line after `--dir=` (it may
//! hold spaces).

use std::sync::mpsc;

use lode_wire::Name;

use super::reload::{request_asked, Asked, ReloadRequest};
use super::Reply;

/// Runs `line` (one of the commands above).
pub(super) fn command(reload_tx: &mpsc::Sender<ReloadRequest>, line: &str) -> Reply {
    let fail = |text: String| Reply { ok: false, text };
    let (cmd, rest) = line.split_once(' ').unwrap_or((line, ""));
    let (words, dir) = match rest.split_once("--dir=") {
        Some((w, d)) => (w, Some(std::path::PathBuf::from(d.trim()))),
        None => (rest, None),
    };
    let mut words = words.split_whitespace().peekable();
    let force = words.next_if_eq(&"--force").is_some();
    let mut zones = Vec::new();
    for w in words {
        match w.parse::<Name>() {
            Ok(n) => zones.push(n.to_lowercase()),
            Err(e) => return fail(format!("{w:?} is not a zone name: {e}\n")),
        }
    }
    let asked = match (cmd, dir) {
        ("zone-purge", None) if force => Asked::Purge(zones),
        ("zone-purge", None) => {
            return fail(
                "zone-purge removes journals, state and signing keys for good: \
                 `zone-purge --force [NAME…]`\n"
                    .into(),
            )
        }
        ("zone-backup", Some(d)) if d.is_absolute() => Asked::Backup(d, zones),
        ("zone-restore", Some(d)) if d.is_absolute() => Asked::Restore(d, zones),
        _ => {
            return fail(format!(
                "{cmd}: expected `zone-purge --force [NAME…]`, `zone-backup [NAME…] --dir=/PATH` \
                 or `zone-restore [NAME…] --dir=/PATH` (an absolute folder)\n"
            ))
        }
    };
    match request_asked(reload_tx, asked) {
        Some(report) => Reply {
            ok: report.is_ok(),
            text: report.to_text(),
        },
        None => fail("the server is stopping\n".into()),
    }
}
