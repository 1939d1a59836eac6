//! What `GET /metrics` and `lode stats` read: the counters (`crate::metrics`)
//! and the state of the parts above them (zones served, load reports, RRL
//! and dnstap, signing schedules, the process), summed on each scrape.

use std::sync::Arc;

use arc_swap::ArcSwap;
use lode_io::{TcpCounters, UdpCounters};
use lode_zonedb::ZoneSet;

use std::sync::atomic::Ordering;

use crate::metrics::{events, process, worker, Families, Family, Kind, Metrics, Value, Worker};

/// The names and help of a stream transport's families.
struct StreamNames {
    connections: (&'static str, &'static str),
    open: (&'static str, &'static str),
    closed: (&'static str, &'static str),
    received: (&'static str, &'static str),
    sent: (&'static str, &'static str),
    unanswered: (&'static str, &'static str),
    stalled: (&'static str, &'static str),
}

const TCP_NAMES: StreamNames = StreamNames {
    connections: ("lode_tcp_connections", "TCP connections accepted."),
    open: ("lode_tcp_connections_open", "TCP connections open now."),
    closed: (
        "lode_tcp_connections_closed",
        "TCP connections closed by the server, by reason.",
    ),
    received: ("lode_tcp_received", "TCP messages received."),
    sent: ("lode_tcp_sent", "TCP messages sent."),
    stalled: (
        "lode_tcp_stalled",
        "Times a TCP connection's replies waited past tcp-io-timeout for the client to read them (nothing more is read from it meanwhile; it can be closed as idle).",
    ),
    unanswered: (
        "lode_tcp_unanswered",
        "TCP messages received and not answered.",
    ),
};

const TLS_NAMES: StreamNames = StreamNames {
    connections: (
        "lode_tls_connections",
        "DNS-over-TLS connections accepted (before their handshake).",
    ),
    open: (
        "lode_tls_connections_open",
        "DNS-over-TLS connections open now.",
    ),
    closed: (
        "lode_tls_connections_closed",
        "DNS-over-TLS connections closed by the server, by reason (handshakes that failed or timed out included).",
    ),
    received: ("lode_tls_received", "DNS-over-TLS messages received."),
    sent: ("lode_tls_sent", "DNS-over-TLS messages sent."),
    stalled: (
        "lode_tls_stalled",
        "Times a DNS-over-TLS connection's replies waited past tcp-io-timeout for the client to read them.",
    ),
    unanswered: (
        "lode_tls_unanswered",
        "DNS-over-TLS messages received and not answered.",
    ),
};

/// The families of a stream transport (TCP, or DNS over TLS).
fn stream_families(out: &mut Vec<Family>, n: &StreamNames, t: &lode_io::TcpStats) {
    let c = |(name, help): (&'static str, &'static str), v| {
        Family::new(name, help, Kind::Counter).with(&[], Value::Int(v))
    };
    out.push(c(n.connections, t.connections));
    out.push(Family::new(n.open.0, n.open.1, Kind::Gauge).with(&[], Value::Int(t.open)));
    let mut closed = Family::new(n.closed.0, n.closed.1, Kind::Counter);
    for (reason, v) in [
        ("refused-full", t.refused),
        ("refused-per-source", t.refused_per_source),
        ("idle-for-new", t.closed_idle_for_new),
        ("idle-same-source", t.closed_idle_same_source),
        ("idle-crowded", t.closed_idle_pressure),
        ("idle-timeout", t.idle_timeout),
        ("io-timeout", t.io_timeout),
        ("write-timeout", t.write_timeout),
    ] {
        closed.push(&[("reason", reason)], Value::Int(v));
    }
    if std::ptr::eq(n, &TLS_NAMES) {
        closed.push(
            &[("reason", "handshake-failed")],
            Value::Int(t.handshake_failed),
        );
        closed.push(
            &[("reason", "handshake-timeout")],
            Value::Int(t.handshake_timeout),
        );
    }
    out.push(closed);
    out.push(c(n.received, t.queries));
    out.push(c(n.sent, t.responses));
    out.push(c(n.unanswered, t.dropped));
    out.push(c(n.stalled, t.write_stalled));
}

/// The families of DNS over QUIC.
fn quic_families(out: &mut Vec<Family>, q: &lode_io::QuicStats) {
    let c = |name, help, v| Family::new(name, help, Kind::Counter).with(&[], Value::Int(v));
    out.push(c(
        "lode_quic_connections",
        "DNS-over-QUIC connections established.",
        q.connections,
    ));
    out.push(
        Family::new(
            "lode_quic_connections_open",
            "DNS-over-QUIC connections open now (handshakes included).",
            Kind::Gauge,
        )
        .with(&[], Value::Int(q.open)),
    );
    out.push(
        Family::new(
            "lode_quic_connections_closed",
            "DNS-over-QUIC connections refused or failed, by reason.",
            Kind::Counter,
        )
        .with(&[("reason", "refused-full")], Value::Int(q.refused))
        .with(&[("reason", "failed")], Value::Int(q.failed)),
    );
    out.push(c(
        "lode_quic_retries",
        "QUIC Retry packets sent (address validation while over half full).",
        q.retries,
    ));
    out.push(c(
        "lode_quic_received",
        "DNS-over-QUIC messages received.",
        q.queries,
    ));
    out.push(c(
        "lode_quic_sent",
        "DNS-over-QUIC messages sent.",
        q.responses,
    ));
    out.push(c(
        "lode_quic_unanswered",
        "DNS-over-QUIC messages received and not answered.",
        q.dropped,
    ));
}

/// Everything a scrape reads.
#[derive(Debug, Clone)]
pub struct Scrape {
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) published: Arc<ArcSwap<ZoneSet>>,
    pub(crate) udp: UdpCounters,
    pub(crate) tcp: TcpCounters,
    /// DNS over TLS, when listening.
    pub(crate) tls: Option<TcpCounters>,
    /// DNS over QUIC, when listening.
    pub(crate) quic: Option<lode_io::QuicCounters>,
    /// UDP over XDP, when it runs.
    pub(crate) xdp: Option<lode_io::xdp::XdpCounters>,
    pub(crate) guard: Arc<ArcSwap<crate::serving::guard::Guard>>,
    pub(crate) loads: Arc<crate::loading::loads::ZoneLoads>,
    /// The server's event counters, commit log and signing schedules.
    pub(crate) updates: Arc<crate::update::Updates>,
}

impl Families for Scrape {
    fn families(&self) -> Vec<Family> {
        let mut out = Vec::new();
        if self.metrics.enabled {
            self.requests(&mut out);
        }
        self.transports(&mut out);
        self.zones(&mut out);
        events::families(
            &mut out,
            self.updates.events(),
            self.updates.commit_log_syncs(),
        );
        let guard = self.guard.load();
        if let Some(r) = guard.rrl_stats() {
            out.push(
                Family::new(
                    "lode_rrl_responses",
                    "UDP answers the rate limiter acted on, by action (would-limit: log-only mode).",
                    Kind::Counter,
                )
                .with(&[("action", "slipped")], Value::Int(r.slipped))
                .with(&[("action", "dropped")], Value::Int(r.dropped))
                .with(&[("action", "would-limit")], Value::Int(r.would_limit)),
            );
        }
        if let Some(d) = guard.dnstap_stats() {
            out.push(
                Family::new(
                    "lode_dnstap_messages",
                    "dnstap messages (a query and its response are two), by outcome.",
                    Kind::Counter,
                )
                .with(&[("result", "logged")], Value::Int(d.logged))
                .with(
                    &[("result", "dropped-queue-full")],
                    Value::Int(d.dropped_queue_full),
                )
                .with(
                    &[("result", "dropped-no-reader")],
                    Value::Int(d.dropped_no_reader),
                )
                .with(&[("result", "write-error")], Value::Int(d.write_errors)),
            );
        }
        process::families(&mut out);
        out
    }
}

impl Scrape {
    fn requests(&self, out: &mut Vec<Family>) {
        use worker::{QTYPES, RCODES, REQUESTS, TRANSPORTS, ZONE_RCODES};
        let workers = self.metrics.workers();
        let sum = |f: &dyn Fn(&Worker) -> u64| workers.iter().map(|w| f(w)).sum::<u64>();
        let mut requests = Family::new(
            "lode_requests",
            "Requests received, by transport and kind (query, axfr, ixfr, update, notify, other).",
            Kind::Counter,
        );
        let mut qtypes = Family::new(
            "lode_query_types",
            "Requests by transport and question type (common types; the rest as other).",
            Kind::Counter,
        );
        let mut rcodes = Family::new(
            "lode_responses",
            "Responses sent at once, by transport and RCODE (extended RCODEs included).",
            Kind::Counter,
        );
        let mut edns = Family::new(
            "lode_requests_edns",
            "Requests with an EDNS OPT record, by transport.",
            Kind::Counter,
        );
        let mut dnssec_ok = Family::new(
            "lode_requests_dnssec_ok",
            "Requests with the DO bit, by transport.",
            Kind::Counter,
        );
        let mut truncated = Family::new(
            "lode_responses_truncated",
            "Responses with TC set, by transport.",
            Kind::Counter,
        );
        let mut unanswered = Family::new(
            "lode_requests_unanswered",
            "Requests with no response at once (malformed and dropped, rate-limited, or answered later: updates, transfers).",
            Kind::Counter,
        );
        for (t, transport) in TRANSPORTS.iter().enumerate() {
            for (k, kind) in REQUESTS.iter().enumerate() {
                requests.push(
                    &[("transport", transport), ("kind", kind)],
                    Value::Int(sum(&|w| w.requests[t][k].get())),
                );
            }
            for (i, name) in QTYPES.iter().map(|&(_, n)| n).chain(["other"]).enumerate() {
                let v = sum(&|w| w.qtypes[t][i].get());
                if v > 0 || i < QTYPES.len() {
                    qtypes.push(&[("transport", transport), ("qtype", name)], Value::Int(v));
                }
            }
            for (i, name) in RCODES.iter().copied().chain(["other"]).enumerate() {
                let v = sum(&|w| w.rcodes[t][i].get());
                if v > 0 || !matches!(i, 12..=15 | 24..) {
                    rcodes.push(&[("transport", transport), ("rcode", name)], Value::Int(v));
                }
            }
            edns.push(
                &[("transport", transport)],
                Value::Int(sum(&|w| w.edns[t].get())),
            );
            dnssec_ok.push(
                &[("transport", transport)],
                Value::Int(sum(&|w| w.dnssec_ok[t].get())),
            );
            truncated.push(
                &[("transport", transport)],
                Value::Int(sum(&|w| w.truncated[t].get())),
            );
            unanswered.push(
                &[("transport", transport)],
                Value::Int(sum(&|w| w.unanswered[t].get())),
            );
        }
        out.extend([
            requests, qtypes, rcodes, edns, dnssec_ok, truncated, unanswered,
        ]);

        // Per zone: the slots of every thread, matched to the zones served now.
        let set = self.published.load();
        let mut zones = Family::new(
            "lode_zone_responses",
            "Responses from each zone served now, by RCODE class (NOERROR, NXDOMAIN, SERVFAIL, other).",
            Kind::Counter,
        );
        // One pass over every thread's slots, then one lookup per zone (a
        // catalog may serve thousands).
        let mut by_key: std::collections::HashMap<u64, [u64; 4]> = std::collections::HashMap::new();
        for w in &workers {
            for slot in &w.zones {
                let key = slot.key.load(Ordering::Relaxed);
                if key != 0 {
                    let counts = by_key.entry(key).or_default();
                    for (c, cell) in counts.iter_mut().zip(&slot.rcodes) {
                        *c += cell.get();
                    }
                }
            }
        }
        for z in set.iter() {
            let counts = by_key
                .get(&worker::zone_key(z.origin().as_wire()))
                .copied()
                .unwrap_or_default();
            let name = z.origin().to_string();
            for (class, v) in ZONE_RCODES.iter().zip(counts) {
                zones.push(&[("zone", &name), ("rcode", class)], Value::Int(v));
            }
        }
        out.push(zones);
        if self.guard.load().cookies_on() {
            let mut cookies = Family::new(
                "lode_cookies",
                "Queries with a COOKIE option, by what the check made of them (fresh: answered with a new server cookie).",
                Kind::Counter,
            );
            // Queries without a COOKIE option (index 0) are not counted.
            for (i, name) in crate::serving::guard::CookieSeen::NAMES
                .iter()
                .enumerate()
                .skip(1)
            {
                cookies.push(
                    &[("result", name)],
                    Value::Int(sum(&|w| w.cookies[i].get())),
                );
            }
            out.push(cookies);
        }
        out.push(
            Family::new(
                "lode_zone_responses_uncounted",
                "Responses from zones past the per-thread table of 256 zones (in the totals only).",
                Kind::Counter,
            )
            .with(&[], Value::Int(sum(&|w| w.zone_overflow.get()))),
        );
    }

    fn transports(&self, out: &mut Vec<Family>) {
        let u = self.udp.read();
        let c = |name, help, v| Family::new(name, help, Kind::Counter).with(&[], Value::Int(v));
        out.push(c("lode_udp_received", "UDP datagrams received.", u.queries));
        out.push(c("lode_udp_sent", "UDP datagrams sent.", u.responses));
        out.push(c(
            "lode_udp_unanswered",
            "UDP datagrams received and not answered (dropped, rate-limited, send failed).",
            u.dropped,
        ));
        out.push(c(
            "lode_udp_socket_drops",
            "Datagrams the kernel dropped on Lode's UDP sockets (receive buffer full; SO_MEMINFO, read by each worker about once a second).",
            u.socket_drops,
        ));
        if let Some(e) = process::udp_receive_buffer_errors() {
            out.push(c(
                "lode_host_udp_receive_buffer_errors",
                "UDP receive-buffer errors of the whole host (RcvbufErrors in /proc/net/snmp and snmp6).",
                e,
            ));
        }
        if let Some(x) = &self.xdp {
            let x = x.read();
            out.push(c(
                "lode_xdp_received",
                "UDP queries received over XDP (frames that passed the checks).",
                x.queries,
            ));
            out.push(c(
                "lode_xdp_sent",
                "UDP answers sent over XDP.",
                x.responses,
            ));
            out.push(c(
                "lode_xdp_unanswered",
                "UDP queries received over XDP and not answered (dropped, rate-limited, no transmit frame free).",
                x.dropped,
            ));
            out.push(c(
                "lode_xdp_bad_frames",
                "Frames the XDP workers dropped for a wrong checksum or length.",
                x.bad_frames,
            ));
            out.push(c(
                "lode_xdp_kernel_drops",
                "Frames the kernel dropped on Lode's AF_XDP sockets (rings full; XDP_STATISTICS, read by each worker now and then, and when idle).",
                x.kernel_drops,
            ));
        }
        stream_families(out, &TCP_NAMES, &self.tcp.read());
        if let Some(tls) = &self.tls {
            stream_families(out, &TLS_NAMES, &tls.read());
        }
        if let Some(quic) = &self.quic {
            quic_families(out, &quic.read());
        }
    }

    fn zones(&self, out: &mut Vec<Family>) {
        let set = self.published.load();
        let mut zones: Vec<_> = set.iter().collect();
        zones.sort_by_key(|z| z.origin().to_name());
        let g = |name, help| Family::new(name, help, Kind::Gauge);
        let mut serial = g("lode_zone_serial", "The SOA serial served.");
        let mut records = g("lode_zone_records", "Records in the zone served.");
        let mut memory = g("lode_zone_memory_bytes", "Heap memory of the zone served.");
        let mut expired = g(
            "lode_zone_expired",
            "1 when the zone answers SERVFAIL (a secondary expired or not yet transferred).",
        );
        let mut load_secs = g(
            "lode_zone_load_duration_seconds",
            "How long the zone's last load from its file or snapshot took.",
        );
        let mut loaded_at = g(
            "lode_zone_last_load_timestamp_seconds",
            "When the zone was last loaded from its file or snapshot (Unix time).",
        );
        let mut failed = g(
            "lode_zone_load_failed",
            "1 when the zone's last (re)load failed (the previous version, if any, still served).",
        );
        let mut signatures = Family::new(
            "lode_zone_dnssec_signatures",
            "RRSIGs made for the zone since start (whole signings, changes, signatures made again before they expire).",
            Kind::Counter,
        );
        let mut next_refresh = g(
            "lode_zone_dnssec_next_refresh_timestamp_seconds",
            "When the zone's next signatures are made again before they expire (Unix time).",
        );
        let mut earliest_expiry = g(
            "lode_zone_dnssec_earliest_expiry_timestamp_seconds",
            "The earliest expiry of any of the zone's signatures, as the last pass over all of them found (Unix time; a lower bound until the next pass).",
        );
        let mut next_key_event = g(
            "lode_zone_dnssec_next_key_event_timestamp_seconds",
            "When the zone's next key action is due (Unix time; a KSK waiting for its DS has none until it is confirmed).",
        );
        let mut waiting_ds = g(
            "lode_zone_dnssec_ksk_waiting_for_ds",
            "1 while a KSK of the zone waits for its DS at the parent (CDS published; `lode zone-ksk-submitted`).",
        );
        let mut key_events = Family::new(
            "lode_zone_dnssec_key_events",
            "Key events of the zone since start (keys made, published, ready, replaced, retired, removed, deleted).",
            Kind::Counter,
        );
        let signed = self.updates.signings().schedules();
        for z in zones {
            let name = z.origin().to_string();
            let l = [("zone", name.as_str())];
            if let Some(s) = signed.get(&z.origin().to_name()) {
                signatures.push(&l, Value::Int(s.made));
                if let Some(t) = s.next_refresh {
                    next_refresh.push(&l, Value::Int(t));
                }
                if let Some(t) = s.earliest_expiry {
                    earliest_expiry.push(&l, Value::Int(t));
                }
                if let Some((t, _)) = &s.keys.next {
                    next_key_event.push(&l, Value::Int(*t));
                }
                waiting_ds.push(&l, Value::Int(u64::from(s.keys.waiting_ds.is_some())));
                key_events.push(&l, Value::Int(s.keys.events));
            }
            serial.push(&l, Value::Int(u64::from(z.serial())));
            records.push(&l, Value::Int(z.record_count()));
            memory.push(&l, Value::Int(z.heap_bytes() as u64));
            expired.push(&l, Value::Int(u64::from(z.is_expired())));
            if let Some(r) = self.loads.get(&z.origin().to_name()) {
                if let Some(last) = &r.loaded {
                    load_secs.push(&l, Value::Float(last.took.as_secs_f64()));
                    loaded_at.push(&l, Value::Int(last.at));
                }
                // A load that works clears the failure before it.
                failed.push(&l, Value::Int(u64::from(r.failure.is_some())));
            }
        }
        out.push(g("lode_zones", "Zones served.").with(&[], Value::Int(set.len() as u64)));
        out.extend([
            serial,
            records,
            memory,
            expired,
            load_secs,
            loaded_at,
            failed,
            signatures,
            next_refresh,
            earliest_expiry,
            next_key_event,
            waiting_ds,
            key_events,
        ]);
    }
}
