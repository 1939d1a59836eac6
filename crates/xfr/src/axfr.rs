//! AXFR out (RFC 5936): a zone version written as a stream of messages.

use std::fmt;

use lode_wire::message::{MessageWriter, Section};
use lode_wire::Rtype;
use lode_zonedb::{NodeCursor, NodeFlags, Zone};

use crate::response::{owner_hint, Request, PTR_MAX};

/// Where the writer is in the transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The opening SOA is next.
    FirstSoa,
    /// Walking the nodes that are not NSEC3-only.
    Nodes,
    /// Walking the NSEC3-only nodes (Knot's separate NSEC3 tree, sent last).
    Nsec3,
    /// The closing SOA is next.
    LastSoa,
    /// Everything was written.
    Done,
    /// A record could not fit in an empty message: the transfer stops.
    Failed,
}

/// How writing one node ended.
enum NodeEnd {
    /// Every RRset of the node was written.
    Done,
    /// The message is full; the node continues in the next one.
    Full,
    /// One record is larger than an empty message.
    TooBig,
}

/// Writes the AXFR answer of one pinned zone version, one message per call.
///
/// Follows Knot DNS 3.2 (axfr.c `axfr_process_node_tree`, xfr.c
/// `xfr_process_list`): the apex SOA first (in the first message), every
/// RRset but the SOA node by node in canonical order — the nodes holding only
/// NSEC3 (and their signatures) after all others, as Knot keeps them in a
/// tree of their own — then the SOA again. A message is ended when the next
/// RRset does not fit or once it is longer than 16383 bytes. Where Knot fails
/// the transfer on an RRset larger than a whole message, Lode splits it over
/// messages (RFC 5936 §2.2 allows it).
///
/// Memory is O(1) in the zone size: a node cursor and two indexes.
pub struct AxfrWriter<'z> {
    zone: &'z Zone,
    request: Request,
    /// The walk; its current node is the one being written.
    cursor: NodeCursor<'z>,
    phase: Phase,
    /// A node is being written: its next RRset and next RDATA.
    in_node: bool,
    rrset: usize,
    rdata: usize,
    /// NSEC3-only nodes were skipped in the first walk.
    nsec3_seen: bool,
    sent: u64,
    messages: u64,
}

impl fmt::Debug for AxfrWriter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AxfrWriter")
            .field("zone", &self.zone.origin())
            .field("phase", &self.phase)
            .field("records_sent", &self.sent)
            .field("messages", &self.messages)
            .finish()
    }
}

impl<'z> AxfrWriter<'z> {
    /// A writer of `zone` answering `request` (an AXFR, or an IXFR answered
    /// AXFR-style: Knot's ixfr.c `ixfr_process_query` then runs
    /// `axfr_process_query` with the question, type IXFR, kept).
    pub fn new(zone: &'z Zone, request: Request) -> Self {
        AxfrWriter {
            zone,
            request,
            cursor: zone.cursor(),
            phase: Phase::FirstSoa,
            in_node: false,
            rrset: 0,
            rdata: 0,
            nsec3_seen: false,
            sent: 0,
            messages: 0,
        }
    }

    /// Writes the next message into `buf`, at most `limit` bytes (keep room
    /// for a TSIG); returns its length, or None when the transfer is over
    /// (see [`AxfrWriter::is_complete`] for how it ended).
    pub fn next_message(&mut self, buf: &mut [u8], limit: usize) -> Option<usize> {
        if matches!(self.phase, Phase::Done | Phase::Failed) {
            return None;
        }
        let Some(mut w) = self.request.begin(buf, limit) else {
            self.phase = Phase::Failed;
            return None;
        };
        self.fill(&mut w);
        if self.phase == Phase::Failed {
            return None;
        }
        self.messages += 1;
        Some(self.request.end(w, limit))
    }

    /// Records written so far (both SOAs counted).
    pub fn records_sent(&self) -> u64 {
        self.sent
    }

    /// Messages written so far.
    pub fn messages_sent(&self) -> u64 {
        self.messages
    }

    /// True once the closing SOA was written. False after `next_message`
    /// returned None means the transfer failed: the limit cannot hold the
    /// header, the question and one record.
    pub fn is_complete(&self) -> bool {
        self.phase == Phase::Done
    }

    fn fill(&mut self, w: &mut MessageWriter<'_>) {
        loop {
            match self.phase {
                Phase::FirstSoa | Phase::LastSoa => {
                    if !self.put_soa(w) {
                        if w.count(Section::Answer) == 0 {
                            self.phase = Phase::Failed;
                        }
                        return;
                    }
                    if self.phase == Phase::LastSoa {
                        self.phase = Phase::Done;
                        return;
                    }
                    self.phase = Phase::Nodes;
                }
                Phase::Nodes | Phase::Nsec3 => {
                    if !self.in_node {
                        if !self.next_node() {
                            continue;
                        }
                        self.in_node = true;
                        (self.rrset, self.rdata) = (0, 0);
                    }
                    match self.put_node(w) {
                        NodeEnd::Done => self.in_node = false,
                        NodeEnd::Full => return,
                        NodeEnd::TooBig => {
                            self.phase = Phase::Failed;
                            return;
                        }
                    }
                }
                Phase::Done | Phase::Failed => return,
            }
        }
    }

    /// Moves the cursor to the next node of the current walk (true), or to
    /// the next phase when the walk is over (false).
    fn next_node(&mut self) -> bool {
        let nsec3 = self.phase == Phase::Nsec3;
        let seen = &mut self.nsec3_seen;
        let found = self.cursor.advance(|f| {
            let only = f.contains(NodeFlags::NSEC3_ONLY);
            *seen |= only;
            only == nsec3
        });
        if found.is_some() {
            return true;
        }
        if self.phase == Phase::Nodes && self.nsec3_seen {
            self.phase = Phase::Nsec3;
            self.cursor.restart();
        } else {
            self.phase = Phase::LastSoa;
        }
        false
    }

    fn put_soa(&mut self, w: &mut MessageWriter<'_>) -> bool {
        let apex = self.zone.node(self.zone.apex_id());
        let soa = self.zone.soa();
        let hint = owner_hint(w, apex.owner());
        let ok = w
            .put_rrset(
                Section::Answer,
                apex.owner(),
                hint,
                Rtype::SOA,
                self.zone.class(),
                soa.ttl(),
                soa.rdatas(),
            )
            .is_ok();
        if ok {
            self.sent += soa.len() as u64;
        }
        ok
    }

    fn put_node(&mut self, w: &mut MessageWriter<'_>) -> NodeEnd {
        let owner = self.cursor.owner();
        let class = self.zone.class();
        for (i, set) in self.cursor.rrsets().enumerate().skip(self.rrset) {
            if set.rtype() == Rtype::SOA {
                self.rrset = i + 1;
                continue;
            }
            let put = |w: &mut MessageWriter<'_>, skip: usize, take: usize, ttl: u32| {
                let hint = owner_hint(w, owner);
                w.put_rrset(
                    Section::Answer,
                    owner,
                    hint,
                    set.rtype(),
                    class,
                    ttl,
                    set.rdatas().skip(skip).take(take),
                )
                .is_ok()
            };
            // Records that go out with one TTL: the whole set, or for RRSIGs
            // each run of one original TTL (as Knot writes them).
            loop {
                let left = set.len() - self.rdata;
                let (ttl, run) = if set.rtype() == Rtype::RRSIG {
                    let mut rest = set.rdatas().skip(self.rdata);
                    let ttl = rest.next().map_or(set.ttl(), |r| set.record_ttl(r));
                    (
                        ttl,
                        1 + rest.take_while(|r| set.record_ttl(r) == ttl).count(),
                    )
                } else {
                    (set.ttl(), left)
                };
                if put(w, self.rdata, run, ttl) {
                    self.sent += run as u64;
                    self.rdata += run;
                    let done = self.rdata >= set.len();
                    if done {
                        (self.rrset, self.rdata) = (i + 1, 0);
                    }
                    if w.len() > PTR_MAX {
                        return NodeEnd::Full;
                    }
                    if done {
                        break;
                    }
                    continue;
                }
                if w.count(Section::Answer) > 0 {
                    return NodeEnd::Full;
                }
                // Too large for an empty message: as many records as fit.
                let mut n = 0;
                while n < run && put(w, self.rdata + n, 1, ttl) {
                    n += 1;
                }
                if n == 0 {
                    return NodeEnd::TooBig;
                }
                self.rdata += n;
                self.sent += n as u64;
                return NodeEnd::Full;
            }
        }
        NodeEnd::Done
    }
}
