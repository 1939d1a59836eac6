//! Zone transfers out (AXFR, RFC 5936; IXFR, RFC 1995): admitted on the
//! transport's thread (zone, TSIG, ACL action `transfer`, the limit of
//! concurrent transfers), then streamed from a thread of their own.
//!
//! ```text
//!  TCP task / UDP worker                 transfer thread (one per transfer)
//!  ─────────────────────                 ──────────────────────────────────────────────
//!  zone? TSIG? ACL? limit? ──defer──▶    IXFR: the writer gives the published version and
//!                                          the journal since the client's serial (one swap
//!                                          pins it); condensed, or the whole zone when the
//!                                          history does not reach back or is larger
//!                                        AXFR: the published version, pinned
//!                                        messages up to 64 KiB, each TSIG-signed,
//!                                          pushed to the connection (waits while 1 MiB is
//!                                          queued: memory flat whatever the zone's size)
//! ```
//!
//! A version pinned by a transfer stays in memory until the transfer ends,
//! while updates go on and newer versions are published beside it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;

use lode_engine::Transport;
use lode_tsig::{Key, MacBuf};
use lode_wire::{rcode, Name, Rtype};
use lode_zonedb::{Zone, ZoneSet};
use lode_zones::update::{self as ddns, SerialOrder, UpdateError};

use crate::access::{self, Access};
use crate::acl::Action;

use super::{Admission, History, Updates, Work};
use crate::clock::unix_now;

/// Outgoing transfers running now, and the most allowed.
#[derive(Debug)]
pub(crate) struct TransferSlots {
    running: AtomicUsize,
    limit: usize,
}

impl TransferSlots {
    /// At most `limit` transfers at once.
    pub(crate) fn new(limit: usize) -> TransferSlots {
        TransferSlots {
            running: AtomicUsize::new(0),
            limit,
        }
    }
    fn take(self: &Arc<Self>) -> Option<Slot> {
        let mut n = self.running.load(Ordering::Relaxed);
        loop {
            if n >= self.limit {
                return None;
            }
            match self
                .running
                .compare_exchange(n, n + 1, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return Some(Slot(self.clone())),
                Err(m) => n = m,
            }
        }
    }
}

/// A running transfer's place, given back when it ends.
struct Slot(Arc<TransferSlots>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What kind of transfer a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Axfr,
    Ixfr,
}

impl Updates {
    /// Admits an AXFR or IXFR request (see the module note).
    pub(crate) fn admit_transfer(
        &self,
        msg: &[u8],
        zones: &ZoneSet,
        out: &mut [u8],
        client: &mut lode_io::Client<'_>,
        transport: Transport,
        udp_size: u16,
    ) -> Admission {
        let Ok(q) = lode_wire::message::parse_query(msg) else {
            return Admission::Engine;
        };
        // What the engine answers for any request comes first: EDNS
        // version, class, AXFR over UDP (NOTIMP), a zone not ours (NOTAUTH).
        let Some(question) = &q.question else {
            return Admission::Engine;
        };
        if q.edns.is_some_and(|e| e.version > 0)
            || !matches!(
                question.qclass,
                lode_wire::Class::IN | lode_wire::Class::ANY
            )
        {
            return Admission::Engine;
        }
        let kind = match question.qtype {
            Rtype::AXFR if transport == Transport::Tcp => Kind::Axfr,
            Rtype::IXFR => Kind::Ixfr,
            _ => return Admission::Engine,
        };
        let origin = question.qname.as_ref().to_name().to_lowercase();
        let Some(mut request) = lode_xfr::Request::from_query(&q) else {
            return Admission::Engine;
        };
        // Every message carries the server's OPT when the request had one
        // (the DO bit echoed), as Knot answers.
        request.opt = q.edns.map(|e| lode_wire::message::Edns {
            udp_size,
            ext_rcode: 0,
            version: 0,
            flags: e.flags & lode_wire::message::EDNS_DO,
            options_at: 0,
            options_len: 0,
        });
        let doors = self.zones.load();
        let (Some(door), Some(zone)) = (doors.get(&origin), zones.get(origin.as_ref())) else {
            return Admission::Engine;
        };
        let peer = client.addr();
        let now = unix_now();
        let what = format_args!("{} of {origin}", kind_name(kind));
        let query_error = |code: u16, out: &mut [u8]| {
            let e = UpdateError::Query {
                rcode: code,
                reason: String::new(),
            };
            ddns::write_error(msg, &e, udp_size, out).unwrap_or(0)
        };
        let keys = self.keys.load();
        let signed = match access::check(
            &keys,
            &door.acl,
            Action::Transfer,
            msg,
            access::Peer::of(client),
            now,
            self.logged(&what),
        ) {
            Access::Allowed(signed) => signed,
            Access::FormErr => return Admission::Answer(query_error(rcode::FORMERR, out)),
            Access::Refused(failure) => {
                let n = query_error(rcode::NOTAUTH, out);
                return Admission::Answer(access::finish_refusal(out, n, failure.as_ref(), now));
            }
        };
        let since = match kind {
            Kind::Axfr => None,
            Kind::Ixfr => {
                match ixfr_client_serial(msg) {
                    Some(s) => Some(s),
                    None => {
                        tracing::info!("IXFR of {origin} from {peer}: no SOA in the authority section, FORMERR");
                        let n = query_error(rcode::FORMERR, out);
                        return Admission::Answer(sign(out, n, signed.as_ref(), now));
                    }
                }
            }
        };
        // Up to date, or any IXFR over UDP: the SOA alone, answered now
        // (Knot never sends differences over UDP; the client comes back
        // over TCP).
        if let Some(serial) = since {
            let up_to_date = matches!(
                lode_zones::update::serial_cmp(serial, zone.serial()),
                SerialOrder::Equal | SerialOrder::Greater
            );
            if up_to_date || transport == Transport::Udp {
                let room = signed
                    .as_ref()
                    .map_or(0, |(k, _)| lode_tsig::max_tsig_len(k));
                let limit =
                    udp_size_for(transport, q.edns.map_or(512, |e| e.udp_size.min(udp_size)))
                        .saturating_sub(room);
                let n = lode_xfr::soa_only(&zone, &request, out, limit).unwrap_or(0);
                return Admission::Answer(sign(out, n, signed.as_ref(), now));
            }
        }
        let Some(slot) = self.transfers.take() else {
            if self.shared.refusals.allow(now) {
                tracing::warn!(
                    "{} of {origin} to {peer}: {} transfers running already, REFUSED",
                    kind_name(kind),
                    self.transfers.limit
                );
            }
            let n = query_error(rcode::REFUSED, out);
            return Admission::Answer(sign(out, n, signed.as_ref(), now));
        };
        let job = Transfer {
            request,
            origin,
            kind,
            since,
            peer,
            signed,
            pinned: zone.clone(),
            writer: door.writer.clone(),
            later: client.defer(),
            events: self.shared.events.clone(),
            _slot: slot,
        };
        let spawned = std::thread::Builder::new()
            .name("lode-xfr-out".into())
            .spawn(move || {
                lode_io::lower_thread_priority(5);
                job.run()
            });
        match spawned {
            Ok(_) => Admission::Queued,
            Err(e) => {
                tracing::error!("cannot start a transfer thread: {e}");
                Admission::Queued
            }
        }
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Axfr => "AXFR",
        Kind::Ixfr => "IXFR",
    }
}

/// The largest answer for the transport (UDP: the request's EDNS size,
/// within the configured bound).
fn udp_size_for(transport: Transport, udp_size: u16) -> usize {
    match transport {
        Transport::Tcp => 65535,
        Transport::Udp => usize::from(udp_size).max(512),
    }
}

/// Signs the one-message response in `out[..n]`.
fn sign(out: &mut [u8], n: usize, signed: Option<&(Key, MacBuf)>, now: u64) -> usize {
    match signed {
        Some((key, request_mac)) if n > 0 => {
            lode_tsig::sign_response(out, n, key, request_mac.as_slice(), now, 0)
                .map_or(n, |a| a.len)
        }
        _ => n,
    }
}

/// The serial of the SOA in an IXFR request's authority section.
fn ixfr_client_serial(msg: &[u8]) -> Option<u32> {
    let count = |i: usize| u16::from_be_bytes([msg[4 + 2 * i], msg[5 + 2 * i]]);
    if msg.len() < 12 || count(0) != 1 || count(2) == 0 {
        return None;
    }
    // After the question's name, type and class.
    let mut pos = lode_wire::message::first_qname_end(msg)? + 4;
    for _ in 0..count(1) {
        let (_, next) = lode_zones::read_record(msg, pos).ok()?;
        pos = next;
    }
    let (soa, _) = lode_zones::read_record(msg, pos).ok()?;
    (soa.rtype == Rtype::SOA).then(|| lode_zonedb::soa_serial(&soa))
}

/// One admitted transfer, run on its own thread.
struct Transfer {
    request: lode_xfr::Request,
    origin: Name,
    kind: Kind,
    /// IXFR: the client's serial.
    since: Option<u32>,
    peer: SocketAddr,
    signed: Option<(Key, MacBuf)>,
    /// The version published when the request came.
    pinned: Arc<Zone>,
    writer: Option<crate::update::WriterQueue>,
    later: lode_io::Later,
    /// The server's counters (transfers out).
    events: Arc<crate::metrics::Events>,
    _slot: Slot,
}

/// What a transfer sends.
enum Plan {
    Whole(Arc<Zone>),
    /// The zone and one condensed changeset leading to it.
    Changes(Arc<Zone>, Vec<lode_zonedb::Changeset>),
}

impl Transfer {
    fn run(mut self) {
        let started = Instant::now();
        let plan = self.plan();
        let (what, zone) = match &plan {
            Plan::Whole(z) if self.kind == Kind::Ixfr => ("IXFR (whole zone)", z.clone()),
            Plan::Whole(z) => ("AXFR", z.clone()),
            Plan::Changes(z, _) => ("IXFR", z.clone()),
        };
        let room = self
            .signed
            .as_ref()
            .map_or(0, |(k, _)| lode_tsig::max_tsig_len(k));
        let limit = 65535 - room;
        let mut buf = vec![0u8; 65535];
        let mut prior: Option<MacBuf> = None;
        let mut messages = 0u64;
        let soa;
        let mut producer = match &plan {
            Plan::Whole(z) => Producer::Axfr(lode_xfr::AxfrWriter::new(z, self.request)),
            Plan::Changes(z, cs) => {
                soa = z.soa_record();
                Producer::Ixfr(lode_xfr::IxfrWriter::new(self.request, &soa, cs))
            }
        };
        while let Some(n) = producer.next_message(&mut buf, limit) {
            let now = unix_now();
            let n = match &self.signed {
                Some((key, request_mac)) => {
                    let signed = match &prior {
                        None => lode_tsig::sign_response(
                            &mut buf,
                            n,
                            key,
                            request_mac.as_slice(),
                            now,
                            0,
                        ),
                        Some(mac) => lode_tsig::sign_next(&mut buf, n, key, mac.as_slice(), now),
                    };
                    match signed {
                        Ok(a) => {
                            prior = Some(a.mac);
                            a.len
                        }
                        Err(e) => {
                            tracing::error!(
                                "{what} of {} to {}: cannot sign ({e:?}), stopped",
                                self.origin,
                                self.peer
                            );
                            return;
                        }
                    }
                }
                None => n,
            };
            if !self.later.push(&buf[..n]) {
                tracing::info!(
                    "{what} of {} serial {} to {}: the client went away after {messages} messages",
                    self.origin,
                    zone.serial(),
                    self.peer
                );
                return;
            }
            messages += 1;
        }
        if !producer.is_complete() {
            tracing::error!(
                "{what} of {} serial {} to {}: a record did not fit in a message, transfer cut",
                self.origin,
                zone.serial(),
                self.peer
            );
            return;
        }
        let took = started.elapsed();
        let records = producer.records_sent();
        match self.kind {
            Kind::Axfr => self.events.axfr_out.bump(),
            Kind::Ixfr => self.events.ixfr_out.bump(),
        }
        tracing::info!(
            zone = %self.origin,
            serial = zone.serial(),
            peer = %self.peer,
            records,
            messages,
            duration_ms = crate::clock::millis(took),
            "{what} of {} serial {}{} to {}: {records} record{} in {messages} message{}, {:.3} s ({:.0} records/s){}",
            self.origin,
            self.since.map_or(String::new(), |s| format!("{s} → ")),
            zone.serial(),
            self.peer,
            if records == 1 { "" } else { "s" },
            if messages == 1 { "" } else { "s" },
            took.as_secs_f64(),
            records as f64 / took.as_secs_f64().max(1e-6),
            if self.signed.is_some() { ", TSIG" } else { "" }
        );
    }

    /// The version to send and, for IXFR, the condensed changes since the
    /// client's serial — or the whole zone when the journal does not reach
    /// back that far, or the changes would be larger than the zone.
    fn plan(&self) -> Plan {
        let Some(since) = self.since else {
            return Plan::Whole(self.pinned.clone());
        };
        let Some(writer) = &self.writer else {
            return Plan::Whole(self.pinned.clone());
        };
        let (done, result) = mpsc::channel();
        if writer.send(Work::History { since, done }).is_err() {
            return Plan::Whole(self.pinned.clone());
        }
        let Ok(History { zone, changes }) = result.recv() else {
            return Plan::Whole(self.pinned.clone());
        };
        match changes {
            Some(c) if !c.is_empty() => {
                let Some(condensed) = lode_xfr::condense(&c) else {
                    return Plan::Whole(zone);
                };
                if lode_xfr::ixfr_size(&condensed) > zone.record_count() + 1 {
                    Plan::Whole(zone)
                } else {
                    Plan::Changes(zone, vec![condensed])
                }
            }
            _ => Plan::Whole(zone),
        }
    }
}

/// The message writer of a transfer.
// One per transfer, on its thread's stack: the AXFR walk's buffers (~1.6 KB)
// need no allocation of their own.
#[allow(clippy::large_enum_variant)]
enum Producer<'a> {
    Axfr(lode_xfr::AxfrWriter<'a>),
    Ixfr(lode_xfr::IxfrWriter<'a>),
}

impl Producer<'_> {
    fn next_message(&mut self, buf: &mut [u8], limit: usize) -> Option<usize> {
        match self {
            Producer::Axfr(w) => w.next_message(buf, limit),
            Producer::Ixfr(w) => w.next_message(buf, limit),
        }
    }
    fn records_sent(&self) -> u64 {
        match self {
            Producer::Axfr(w) => w.records_sent(),
            Producer::Ixfr(w) => w.records_sent(),
        }
    }
    fn is_complete(&self) -> bool {
        match self {
            Producer::Axfr(w) => w.is_complete(),
            Producer::Ixfr(w) => w.is_complete(),
        }
    }
}
