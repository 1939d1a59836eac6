//! `zone-freeze [NAME…]` and `zone-thaw [NAME…]` (as knotc's; no name: every
//! zone served): what a frozen zone does and does not do is
//! `crate::update::frozen`'s note. Freezing waits until each zone's writer
//! has done the work queued before (a zone-file write or signing running
//! ends first); thawing runs what was postponed — the writer's overdue
//! upkeep, a secondary's refresh that fell due, a file a reload left.

use std::sync::mpsc;

use arc_swap::ArcSwap;
use lode_wire::Name;
use lode_zonedb::ZoneSet;

use super::reload::{request_zone_reload, ReloadRequest};
use super::Reply;
use crate::replication::secondary::Secondaries;
use crate::update::Updates;

/// Freezes (`frozen`) or thaws the zones `args` names (every zone served
/// when none).
pub(super) fn zone_freeze(
    updates: &Updates,
    secondaries: Option<&Secondaries>,
    published: &ArcSwap<ZoneSet>,
    reload_tx: &mpsc::Sender<ReloadRequest>,
    args: &str,
    frozen: bool,
) -> Reply {
    let set = published.load();
    let mut zones: Vec<Name> = Vec::new();
    for word in args.split_whitespace() {
        let Ok(name) = word.parse::<Name>() else {
            return fail(format!("{word:?} is not a zone name\n"));
        };
        let name = name.to_lowercase();
        if set.get(name.as_ref()).is_none() {
            return fail(format!("zone {name}: no such zone is served\n"));
        }
        zones.push(name);
    }
    let every = zones.is_empty();
    if every {
        zones = updates.zone_names().into_iter().map(|(n, _)| n).collect();
        zones.retain(|n| set.get(n.as_ref()).is_some());
    }
    drop(set);
    let changed = updates.frozen.set(&zones, frozen);
    updates.freeze_writers(&changed, frozen);
    if let Some(s) = secondaries {
        s.freeze(&changed, frozen);
    }
    let mut text = String::new();
    let mut ok = true;
    for zone in &zones {
        let now_so = changed.contains(zone);
        if now_so && changed.len() <= LOG_EACH_UP_TO {
            tracing::info!(
                "zone {zone}: {}",
                if frozen {
                    "frozen (zone-freeze)"
                } else {
                    "thawed (zone-thaw)"
                }
            );
        }
        if every && !now_so {
            continue;
        }
        text.push_str(&match (frozen, now_so) {
            (true, true) => format!(
                "zone {zone}: frozen: updates REFUSED; zone-file writes, signing, refreshes \
                 and reloads wait for `lode zone-thaw {zone}`\n"
            ),
            (true, false) => format!("zone {zone}: already frozen\n"),
            (false, true) => format!("zone {zone}: thawed\n"),
            (false, false) => format!("zone {zone}: not frozen\n"),
        });
        // A file a reload left while frozen is read now.
        if now_so && !frozen && updates.frozen.take_missed_reload(zone) {
            match request_zone_reload(reload_tx, zone.clone()) {
                Some(report) => {
                    ok &= report.is_ok();
                    text.push_str(&report.to_text());
                }
                None => return fail(format!("{text}the server is stopping\n")),
            }
        }
    }
    if changed.len() > LOG_EACH_UP_TO {
        tracing::info!(
            "{} zones {}",
            changed.len(),
            if frozen {
                "frozen (zone-freeze)"
            } else {
                "thawed (zone-thaw)"
            }
        );
    }
    if every && changed.is_empty() {
        text.push_str(if frozen {
            "every zone served was frozen already\n"
        } else {
            "no zone was frozen\n"
        });
    }
    Reply { ok, text }
}

/// Up to how many zones frozen or thawed at once each gets a log line.
const LOG_EACH_UP_TO: usize = 100;

fn fail(text: String) -> Reply {
    Reply { ok: false, text }
}
