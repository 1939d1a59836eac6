//! What the control socket answers: the status text and the command table.

use std::sync::mpsc;
use std::sync::Arc;

use arc_swap::ArcSwap;
use lode_io::{TcpCounters, UdpCounters};
use lode_zonedb::{Zone, ZoneSet};

use crate::reload::{request_reload, resident_kib, ReloadRequest};
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

pub(crate) fn make_dispatch(
    reload_tx: mpsc::Sender<ReloadRequest>,
    published: Arc<ArcSwap<ZoneSet>>,
    udp: UdpCounters,
    tcp: TcpCounters,
) -> control::Dispatch {
    Arc::new(move |command: &str| match command {
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
