//! What the control socket answers: the status text and the command table.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;

use arc_swap::ArcSwap;
use lode_io::{TcpCounters, UdpCounters};
use lode_zonedb::{Zone, ZoneSet};

use lode_wire::Name;

use crate::control::reload::{request_reload, request_zone_reload, ReloadRequest};
use crate::control::{self, Reply};
use crate::loading::flush::Flushed;
use crate::loading::loads::{ago, LoadSource, ZoneLoads};
use crate::metrics::process::resident_kib;
use crate::metrics::Families as _;
use crate::replication::secondary::Secondaries;
use crate::update::{FlushError, Updates};

pub(crate) fn reloader_zone_count(published: &ArcSwap<ZoneSet>) -> usize {
    published.load().len()
}

/// What the control commands tell besides the zones and the counters.
#[derive(Debug)]
pub(crate) struct Facts {
    /// When the server started.
    pub(crate) started: Instant,
    /// The bound addresses.
    pub(crate) addrs: Vec<SocketAddr>,
    /// Each zone's last load.
    pub(crate) loads: Arc<ZoneLoads>,
    /// The Prometheus endpoint's address, when on.
    pub(crate) metrics: Option<SocketAddr>,
    /// Why the configured endpoint is not there.
    pub(crate) metrics_error: Option<crate::metrics::http::MetricsError>,
    /// The counters of UDP over XDP, when it runs.
    pub(crate) xdp: Option<lode_io::xdp::XdpCounters>,
}

/// "lode 0.1.0, pid N, up 3 h 2 min, serving 3 zones on 127.0.0.1:53 (UDP and TCP)".
pub(crate) fn summary(set: &ZoneSet, facts: &Facts) -> String {
    format!(
        "lode {}, pid {}, up {}, {}",
        env!("CARGO_PKG_VERSION"),
        std::process::id(),
        ago(facts.started.elapsed().as_secs()),
        serving_status(set, &facts.addrs)
    )
}

pub(crate) fn status_text(
    published: &ArcSwap<ZoneSet>,
    udp: &UdpCounters,
    tcp: &TcpCounters,
    guard: &crate::serving::guard::Guard,
    facts: &Facts,
) -> String {
    let set = published.load_full();
    let mut zones: Vec<Arc<Zone>> = set.iter().collect();
    zones.sort_by_key(|z| z.origin().to_name());
    let mut s = summary(&set, facts);
    s.push('\n');
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
    if let Some(x) = &facts.xdp {
        let x = x.read();
        s.push_str(&format!(
            "xdp queries {} responses {} dropped {} bad-frames {} kernel-drops {}\n",
            x.queries, x.responses, x.dropped, x.bad_frames, x.kernel_drops
        ));
    }
    let t = tcp.read();
    s.push_str(&format!(
        "tcp connections {} refused {} open {} queries {} responses {} dropped {}\n",
        t.connections, t.refused, t.open, t.queries, t.responses, t.dropped
    ));
    s.push_str(&format!(
        "tcp closed idle-for-new {} idle-same-source {} idle-crowded {} idle-timeout {} io-timeout {} write-timeout {} refused-per-source {} (stalled writes {})\n",
        t.closed_idle_for_new,
        t.closed_idle_same_source,
        t.closed_idle_pressure,
        t.idle_timeout,
        t.io_timeout,
        t.write_timeout,
        t.refused_per_source,
        t.write_stalled
    ));
    if let Some(r) = guard.rrl_stats() {
        s.push_str(&format!(
            "rrl slipped {} dropped {} would-limit {}\n",
            r.slipped, r.dropped, r.would_limit
        ));
    }
    if let Some(d) = guard.dnstap_stats() {
        s.push_str(&format!(
            "dnstap logged {} dropped-queue-full {} dropped-no-reader {} write-errors {}\n",
            d.logged, d.dropped_queue_full, d.dropped_no_reader, d.write_errors
        ));
    }
    if let Some(kib) = resident_kib() {
        s.push_str(&format!("memory resident {kib} KiB\n"));
    }
    if let Some(a) = facts.metrics {
        s.push_str(&format!(
            "metrics http://{a}/metrics (lode stats shows the same)\n"
        ));
    }
    if let Some(e) = &facts.metrics_error {
        s.push_str(&format!("metrics NOT served: {e}\n"));
    }
    s
}

/// A size as people write it: 616 B, 9.5 KiB, 412.3 MiB, 2.2 GiB.
fn bytes(n: usize) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
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
    if matches!(r, Err(FlushError::NoZone)) && published.load().get(name.as_ref()).is_some() {
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
    secondaries: Option<Arc<Secondaries>>,
    notifies: Option<crate::replication::notify::Notifies>,
    scrape: crate::control::scrape::Scrape,
    facts: Arc<Facts>,
) -> control::Dispatch {
    Arc::new(move |command: &str| match command {
        "stats" => Some(Reply {
            ok: true,
            text: crate::metrics::to_text(&scrape.families()),
        }),
        "stats --json" => Some(Reply {
            ok: true,
            text: crate::metrics::to_json(&scrape.families()),
        }),
        c if c.starts_with("zone-sign ")
            || c.starts_with("zone-keys-load ")
            || c.starts_with("zone-key-rollover ")
            || c.starts_with("zone-ksk-submitted ") =>
        {
            Some(sign_command(&updates, c))
        }
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
            text: status_text(
                &published,
                &scrape.udp,
                &scrape.tcp,
                &scrape.guard.load(),
                &facts,
            ),
        }),
        c if c == "zone-status" || c.starts_with("zone-status ") => Some(zone_status(
            &updates,
            secondaries.as_deref(),
            &published,
            &facts.loads,
            c["zone-status".len()..].trim(),
        )),
        c if c == "zone-reload" || c.starts_with("zone-reload ") => {
            Some(zone_reload(&reload_tx, c["zone-reload".len()..].trim()))
        }
        c if c == "zone-read" || c.starts_with("zone-read ") => {
            Some(zone_read(&published, c["zone-read".len()..].trim()))
        }
        c if c == "zone-notify" || c.starts_with("zone-notify ") => Some(zone_notify(
            notifies.as_ref(),
            &published,
            c["zone-notify".len()..].trim(),
        )),
        c if c == "zone-freeze"
            || c.starts_with("zone-freeze ")
            || c == "zone-thaw"
            || c.starts_with("zone-thaw ") =>
        {
            let (cmd, args) = c.split_once(' ').unwrap_or((c, ""));
            Some(super::freeze::zone_freeze(
                &updates,
                secondaries.as_deref(),
                &published,
                &reload_tx,
                args,
                cmd == "zone-freeze",
            ))
        }
        c if ["zone-purge", "zone-backup", "zone-restore"]
            .iter()
            .any(|k| c == *k || c.starts_with(&format!("{k} "))) =>
        {
            Some(super::zonedata::command(&reload_tx, c))
        }
        c if c.starts_with("zone-refresh ") || c.starts_with("zone-retransfer ") => {
            let (cmd, zone) = c.split_once(' ').unwrap_or((c, ""));
            Some(zone_refresh(
                secondaries.as_deref(),
                zone.trim(),
                cmd == "zone-retransfer",
            ))
        }
        _ => None,
    })
}

/// `zone-sign NAME`, `zone-keys-load NAME`, `zone-key-rollover NAME ksk|zsk`, `zone-ksk-submitted
/// NAME [DS-TTL]`: through the zone's writer; what was done.
fn sign_command(updates: &Updates, command: &str) -> Reply {
    use crate::update::SignWork;
    let fail = |text: String| Reply { ok: false, text };
    let mut words = command.split_whitespace();
    let cmd = words.next().unwrap_or_default();
    let Some(arg) = words.next() else {
        return fail(format!("{cmd}: which zone?\n"));
    };
    let name = match arg.parse::<Name>() {
        Ok(n) => n,
        Err(e) => return fail(format!("{cmd}: {arg:?} is not a zone name: {e}\n")),
    };
    let rest = words.next();
    let what = match (cmd, rest) {
        ("zone-sign", None) => SignWork::Whole,
        ("zone-keys-load", None) => SignWork::Keys,
        ("zone-key-rollover", Some(kind)) => match kind.to_ascii_lowercase().as_str() {
            "ksk" => SignWork::Roll(lode_dnssec::Role::Ksk),
            "zsk" => SignWork::Roll(lode_dnssec::Role::Zsk),
            _ => return fail(format!("{cmd} {name}: {kind:?}: ksk or zsk\n")),
        },
        ("zone-key-rollover", None) => {
            return fail(format!("{cmd} {name}: which key, ksk or zsk?\n"))
        }
        ("zone-ksk-submitted", None) => SignWork::Submitted(0),
        ("zone-ksk-submitted", Some(ttl)) => match ttl.parse::<u64>() {
            Ok(t) => SignWork::Submitted(t),
            Err(_) => {
                return fail(format!(
                    "{cmd} {name}: {ttl:?}: the parent's DS TTL in seconds\n"
                ))
            }
        },
        _ => {
            return fail(format!(
                "{cmd}: unexpected {:?}\n",
                rest.unwrap_or_default()
            ))
        }
    };
    match updates.sign(&name, what) {
        Ok(text) => Reply {
            ok: true,
            text: format!("zone {name}: {text}\n"),
        },
        Err(e) => fail(format!("zone {name}: {e}\n")),
    }
}

/// `zone-reload NAME`: that zone read again now, on the reloader thread.
fn zone_reload(reload_tx: &mpsc::Sender<ReloadRequest>, zone: &str) -> Reply {
    let fail = |text: String| Reply { ok: false, text };
    if zone.is_empty() {
        return fail("zone-reload: which zone? (zone-reload NAME; `reload` reloads all)\n".into());
    }
    let name = match zone.parse::<lode_wire::Name>() {
        Ok(n) => n.to_lowercase(),
        Err(e) => return fail(format!("{zone:?} is not a zone name: {e}\n")),
    };
    match request_zone_reload(reload_tx, name) {
        Some(report) => Reply {
            ok: report.is_ok(),
            text: report.to_text(),
        },
        None => fail("the server is stopping\n".into()),
    }
}

/// The most records `zone-read` returns in one reply.
const ZONE_READ_MAX: usize = 1_000_000;

/// `zone-read ZONE [OWNER|- [TYPE]]`: the served records of a zone (of
/// one owner, of one type), as zone-file lines with absolute owners (as
/// `knotc zone-read`), at most [`ZONE_READ_MAX`].
fn zone_read(published: &ArcSwap<ZoneSet>, args: &str) -> Reply {
    let fail = |text: String| Reply { ok: false, text };
    let mut words = args.split_whitespace();
    let Some(zone) = words.next() else {
        return fail("zone-read: which zone? (zone-read ZONE [OWNER|- [TYPE]])\n".into());
    };
    let Ok(name) = zone.parse::<lode_wire::Name>() else {
        return fail(format!("{zone:?} is not a zone name\n"));
    };
    let name = name.to_lowercase();
    let owner = match words.next().filter(|w| *w != "-") {
        None => None,
        Some("@") => Some(name.clone()),
        Some(o) => match lode_wire::Name::parse(o, Some(&name)) {
            Ok(n) => Some(n),
            Err(e) => return fail(format!("{o:?} is not a name: {e}\n")),
        },
    };
    let rtype = match words.next() {
        None => None,
        Some(t) => match lode_wire::Rtype::from_mnemonic(t) {
            Some(r) => Some(r),
            None => return fail(format!("{t:?} is not a record type\n")),
        },
    };
    let set = published.load();
    let Some(version) = set.get(name.as_ref()) else {
        return fail(format!("zone {name}: no such zone is served\n"));
    };
    let zone: &lode_zonedb::Zone = &version;
    if let Some(o) = &owner {
        if !o.as_ref().ends_with(&zone.origin()) {
            return fail(format!("{o} is not in zone {name}\n"));
        }
    }
    let mut text = String::new();
    let mut n = 0usize;
    let mut more = 0u64;
    let records: Box<dyn Iterator<Item = lode_wire::Record>> = match &owner {
        // One owner: its node alone, not a walk over the zone.
        Some(o) => Box::new(
            zone.records_of(o.as_ref())
                .into_iter()
                .filter(|r| rtype.is_none_or(|t| r.rtype == t)),
        ),
        None => Box::new(
            zone.records()
                .filter(move |r| rtype.is_none_or(|t| r.rtype == t)),
        ),
    };
    for r in records {
        if n == ZONE_READ_MAX {
            more += 1;
            continue;
        }
        text.push_str(&lode_zonefile::format_record(&r));
        text.push('\n');
        n += 1;
    }
    if more > 0 {
        text.push_str(&format!(
            ";; {more} more records not shown: name an owner or a type, or transfer the zone (AXFR) or write it (lode zone-flush)\n"
        ));
    }
    if n == 0 {
        text.push_str(&format!(
            ";; no such records in zone {name} (serial {})\n",
            zone.serial()
        ));
    }
    Reply { ok: true, text }
}

/// `zone-notify NAME`: the zone's NOTIFY targets told of its serial now.
fn zone_notify(
    notifies: Option<&crate::replication::notify::Notifies>,
    published: &ArcSwap<ZoneSet>,
    zone: &str,
) -> Reply {
    let fail = |text: String| Reply { ok: false, text };
    if zone.is_empty() {
        return fail("zone-notify: which zone? (zone-notify NAME)\n".into());
    }
    let Ok(name) = zone.parse::<lode_wire::Name>() else {
        return fail(format!("{zone:?} is not a zone name\n"));
    };
    let name = name.to_lowercase();
    let set = published.load();
    let Some(version) = set.get(name.as_ref()) else {
        return fail(format!("zone {name}: no such zone is served\n"));
    };
    if version.is_expired() {
        return fail(format!(
            "zone {name}: not served now (expired or not transferred yet)\n"
        ));
    }
    let Some(notifies) = notifies else {
        return fail("the NOTIFY thread is not running (see the log at start)\n".into());
    };
    match notifies.notify_now(&name, version.soa_record()) {
        Ok(n) => Reply {
            ok: true,
            text: format!(
                "zone {name}: NOTIFY of serial {} to {n} target(s) sent (answers in the log)\n",
                version.serial()
            ),
        },
        Err(e) => fail(format!("{e}\n")),
    }
}

/// `zone-refresh NAME` / `zone-retransfer NAME`: a secondary's refresh now.
fn zone_refresh(secondaries: Option<&Secondaries>, zone: &str, axfr: bool) -> Reply {
    let fail = |text: String| Reply { ok: false, text };
    let Ok(name) = zone.parse::<lode_wire::Name>() else {
        return fail(format!("{zone:?} is not a zone name\n"));
    };
    let Some(s) = secondaries else {
        return fail("no zone is a secondary here (master = … in its [[zone]])\n".into());
    };
    match s.refresh(&name, axfr) {
        Ok(()) => Reply {
            ok: true,
            text: format!(
                "{}: {} started (see `lode zone-status {}` and the log)\n",
                name.to_lowercase(),
                if axfr { "AXFR" } else { "refresh" },
                name.to_lowercase()
            ),
        },
        Err(e) => fail(format!("{e}\n")),
    }
}

/// A signed zone's DNSSEC facts, read from its apex: its keys (tags and
/// roles), its chain, when its SOA signature expires.
fn dnssec_line(zone: &lode_zonedb::Zone, now: u64) -> Option<String> {
    use lode_wire::Rtype;
    let keys = zone.apex_rrset(Rtype::DNSKEY)?;
    let sigs = zone.apex_rrset(Rtype::RRSIG)?;
    let tags: Vec<String> = keys
        .rdatas()
        .map(|r| {
            let role = if r.get(1).is_some_and(|f| f & 1 == 1) {
                "KSK"
            } else {
                "ZSK"
            };
            let alg = r.get(3).copied().unwrap_or(0);
            format!("{role} {} alg {alg}", lode_dnssec::key::key_tag(r))
        })
        .collect();
    let chain = match zone
        .apex_rrset(Rtype::NSEC3PARAM)
        .and_then(|p| lode_wire::nsec3::Nsec3Params::parse(p.first()))
    {
        Some(p) => format!(
            "NSEC3 (iterations {}, salt length {})",
            p.iterations,
            p.salt.len()
        ),
        None => "NSEC".into(),
    };
    let soa_expires = sigs
        .rdatas()
        .filter_map(lode_dnssec::rrsig::rrsig_info)
        .filter(|i| i.covered == Rtype::SOA)
        .map(|i| u64::from(i.expiration))
        .max();
    let expires = match soa_expires {
        Some(t) if t >= now => format!("in {} s", t - now),
        Some(t) => format!("{} s ago (EXPIRED)", now - t),
        None => "-".into(),
    };
    Some(format!(
        "\n  dnssec: signed, {chain}, keys {}; SOA signature expires {expires}",
        tags.join(", ")
    ))
}

/// `zone-status [NAME]`: serial, records, memory, source, last load (and
/// the errors of a failed one), and a secondary's transfer state, per zone.
fn zone_status(
    updates: &Updates,
    secondaries: Option<&Secondaries>,
    published: &ArcSwap<ZoneSet>,
    loads: &ZoneLoads,
    zone: &str,
) -> Reply {
    let set = published.load();
    let wanted = if zone.is_empty() {
        None
    } else {
        match zone.parse::<lode_wire::Name>() {
            Ok(n) => Some(n.to_lowercase()),
            Err(_) => {
                return Reply {
                    ok: false,
                    text: format!("{zone:?} is not a zone name\n"),
                }
            }
        }
    };
    let transfer = secondaries.map(|s| s.status()).unwrap_or_default();
    let now = crate::clock::unix_now();
    // Times to come read "in N s" (due this second: "in 0 s"); a time
    // past (a last refresh, even of this second) "N s ago".
    let when = |t: Option<u64>| match t {
        Some(t) if t >= now => format!("in {} s", t - now),
        Some(t) => format!("{} s ago", now - t),
        None => "-".into(),
    };
    let ago = |t: Option<u64>| match t {
        Some(t) => format!("{} s ago", now.saturating_sub(t)),
        None => "-".into(),
    };
    let mut text = String::new();
    let mut found = false;
    for (name, takes_updates) in updates.zone_names() {
        if wanted.as_ref().is_some_and(|w| *w != name) {
            continue;
        }
        found = true;
        let z = set.get(name.as_ref());
        let _ = write!(text, "{name}");
        match z.clone() {
            Some(z) if crate::publish::is_placeholder(&z) => {
                let _ = write!(text, " no contents yet (SERVFAIL)");
            }
            Some(z) => {
                let _ = write!(
                    text,
                    " serial {} records {} memory {}{}",
                    z.serial(),
                    z.record_count(),
                    bytes(z.heap_bytes()),
                    if z.is_expired() {
                        " EXPIRED (SERVFAIL)"
                    } else {
                        ""
                    }
                );
                if updates.frozen.contains(&name) {
                    let _ = write!(text, " FROZEN (lode zone-thaw {name})");
                }
            }
            None => {
                let _ = write!(text, " not served");
            }
        }
        let record = loads.get(&name);
        let _ = write!(text, "\n  source ");
        match (record.as_ref().map(|r| &r.source), transfer.get(&name)) {
            (Some(LoadSource::Transfer), Some(t)) => {
                let _ = write!(text, "transfer from {}", t.primaries);
            }
            // Not configured, transferred: a catalog's member.
            (None, Some(t)) => {
                let _ = write!(text, "catalog member, transfer from {}", t.primaries);
            }
            (Some(s), _) => {
                let _ = write!(text, "{s}");
            }
            (None, None) => {
                let _ = write!(text, "unknown");
            }
        }
        if takes_updates {
            let _ = write!(text, ", and its journal (it takes updates)");
        }
        if let Some(r) = &record {
            text.push_str(&r.to_lines(now));
        }
        if let Some((done, total)) = updates.signings().progress(&name) {
            let _ = write!(
                text,
                "\n  dnssec: signing whole, {} ({done} of {total} names and chain records)",
                crate::update::signing::percent(done, total)
            );
        } else if let Some(line) = z.as_deref().and_then(|z| dnssec_line(z, now)) {
            text.push_str(&line);
            if let Some(s) = updates.signings().schedule(&name) {
                let _ = write!(
                    text,
                    "\n  dnssec: {} signatures made since start; next made again {}; earliest expiry {}",
                    s.made,
                    when(s.next_refresh),
                    when(s.earliest_expiry)
                );
                let next = match &s.keys.next {
                    Some((t, what)) => format!("{what} {}", when(Some(*t))),
                    None => "none planned".into(),
                };
                let _ = write!(text, "\n  dnssec: next key event: {next}");
                if let Some(tag) = s.keys.waiting_ds {
                    let _ = write!(
                        text,
                        "; KSK {tag} waits for its DS at the parent (lode zone-ksk-submitted)"
                    );
                }
            }
        }
        if let Some(t) = transfer.get(&name) {
            let _ = write!(
                text,
                "\n  secondary of {}; last refresh {}, next refresh {}, expires {}",
                t.primaries,
                ago(t.last_refresh),
                when(t.next_refresh),
                when(t.expires)
            );
            if let Some(x) = &t.last_transfer {
                let _ = write!(text, "\n  last transfer: {x}");
            }
            if let Some(e) = &t.last_error {
                let _ = write!(text, "\n  last error: {e}");
            }
        }
        text.push('\n');
    }
    // No name given and no zone: nothing to list (as knotc), not an error.
    if !found && wanted.is_some() {
        return Reply {
            ok: false,
            text: format!("{zone}: no such zone\n"),
        };
    }
    Reply { ok: true, text }
}

/// "serving N zones on ADDR, … (UDP and TCP)": the start line and systemd's STATUS.
pub(crate) fn serving_status(set: &ZoneSet, addrs: &[SocketAddr]) -> String {
    let addrs: Vec<String> = addrs.iter().map(|a| a.to_string()).collect();
    format!(
        "serving {} on {} (UDP and TCP)",
        match set.len() {
            1 => "1 zone".to_string(),
            n => format!("{n} zones"),
        },
        addrs.join(", ")
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(super::bytes(616), "616 B");
        assert_eq!(super::bytes(9728), "9.5 KiB");
        assert_eq!(super::bytes(432_328_704), "412.3 MiB");
        assert_eq!(super::bytes(2_362_232_013), "2.2 GiB");
    }
}
