//! What the control socket answers: the status text and the command table.

use std::sync::mpsc;
use std::sync::Arc;

use arc_swap::ArcSwap;
use lode_io::{TcpCounters, UdpCounters};
use lode_zonedb::{Zone, ZoneSet};

use lode_wire::Name;

use crate::flush::Flushed;
use crate::reload::{request_reload, resident_kib, ReloadRequest};
use crate::update::{FlushError, Updates};
use crate::{control, Reply};

pub(crate) fn reloader_zone_count(published: &ArcSwap<ZoneSet>) -> usize {
    published.load().len()
}

pub(crate) fn status_text(
    published: &ArcSwap<ZoneSet>,
    udp: &UdpCounters,
    tcp: &TcpCounters,
) -> String {
    let set = published.load_full();
    let mut zones: Vec<&Arc<Zone>> = set.iter().collect();
    zones.sort_by_key(|z| z.origin().to_name());
    let mut s = String::new();
    for z in zones {
        s.push_str(&format!(
            "zone {} serial {} records {} names {}\n",
            z.origin(),
            z.serial(),
            z.record_count(),
            z.node_count()
        ));
    }
    let u = udp.read();
    s.push_str(&format!(
        "udp queries {} responses {} dropped {}\n",
        u.queries, u.responses, u.dropped
    ));
    let t = tcp.read();
    s.push_str(&format!(
        "tcp connections {} refused {} open {} queries {} responses {} dropped {}\n",
        t.connections, t.refused, t.open, t.queries, t.responses, t.dropped
    ));
    if let Some(kib) = resident_kib() {
        s.push_str(&format!("memory resident {kib} KiB\n"));
    }
    s
}

/// The answer to `zone-flush` (every zone that takes updates) or
/// `zone-flush NAME`.
pub(crate) fn zone_flush(updates: &Updates, published: &ArcSwap<ZoneSet>, arg: &str) -> Reply {
    let line = |name: &Name, r: &Result<Flushed, FlushError>| match r {
        Ok(f) => format!(
            "zone {name}: {} records, serial {}, written to {}\n",
            f.records,
            f.serial,
            f.path.display()
        ),
        Err(e) => format!("zone {name}: {e}\n"),
    };
    if arg.is_empty() {
        let mut text = String::new();
        let mut ok = true;
        for (name, takes_updates) in updates.zone_names() {
            if !takes_updates {
                text.push_str(&format!(
                    "zone {name}: does not take updates, its zone file is its source\n"
                ));
                continue;
            }
            let r = updates.flush(&name);
            ok &= r.is_ok();
            text.push_str(&line(&name, &r));
        }
        return Reply { ok, text };
    }
    let name: Name = match arg.parse() {
        Ok(n) => n,
        Err(e) => {
            return Reply {
                ok: false,
                text: format!("zone-flush: {arg:?} is not a zone name: {e}"),
            }
        }
    };
    let mut r = updates.flush(&name);
    // A zone added by a reload since the start is served, without updates.
    if r == Err(FlushError::NoZone) && published.load().get(name.as_ref()).is_some() {
        r = Err(FlushError::Static);
    }
    let text = match &r {
        Err(FlushError::NoZone) => format!("zone {name}: no such zone is served\n"),
        _ => line(&name, &r),
    };
    Reply {
        ok: r.is_ok(),
        text,
    }
}

pub(crate) fn make_dispatch(
    reload_tx: mpsc::Sender<ReloadRequest>,
    published: Arc<ArcSwap<ZoneSet>>,
    updates: Arc<Updates>,
    udp: UdpCounters,
    tcp: TcpCounters,
) -> control::Dispatch {
    Arc::new(move |command: &str| match command {
        c if c == "zone-flush" || c.starts_with("zone-flush ") => Some(zone_flush(
            &updates,
            &published,
            c["zone-flush".len()..].trim(),
        )),
        "reload" => Some(match request_reload(Some(&reload_tx), true) {
            Some(report) => Reply {
                ok: report.is_ok(),
                text: report.to_text(),
            },
            None => Reply {
                ok: false,
                text: "the server is stopping".into(),
            },
        }),
        "status" => Some(Reply {
            ok: true,
            text: status_text(&published, &udp, &tcp),
        }),
        _ => None,
    })
}
