//! IXFR out (RFC 1995): changesets condensed and written as difference
//! sequences; the one-SOA answer.

use std::collections::HashMap;

use lode_wire::message::{MessageWriter, Section};
use lode_wire::{Record, Rtype};
use lode_zonedb::{Changeset, Zone};

use crate::response::{owner_hint, Request, PTR_MAX};

/// A record's identity: owner (case-insensitive key), type, class, RDATA.
type Identity = (Box<[u8]>, Rtype, u16, Box<[u8]>);

fn identity(r: &Record) -> Identity {
    (r.owner.key(), r.rtype, r.class.0, r.rdata.clone())
}

/// One record's fate across the changesets: present at the start (and
/// removed), present at the end (added).
#[derive(Default)]
struct Fate {
    removed: Option<Record>,
    added: Option<Record>,
}

/// The net difference of `changes` (consecutive changesets) from the first
/// `soa_from` to the last `soa_to`: a record added then removed disappears,
/// one removed then added back with the same TTL too; a TTL change stays a
/// removal plus an addition. Records come out in canonical order (owner,
/// type, class, TTL, RDATA), so RRsets are contiguous. None for no changesets.
///
/// Knot DNS 3.2 sends its journal's changesets as stored (ixfr.c
/// `ixfr_put_chg_part`), merged only when the journal merges them to save
/// room; [`IxfrWriter`] takes either.
pub fn condense(changes: &[Changeset]) -> Option<Changeset> {
    let (first, last) = (changes.first()?, changes.last()?);
    let mut fates: HashMap<Identity, Fate> = HashMap::new();
    for cs in changes {
        for r in &cs.removed {
            let fate = fates.entry(identity(r)).or_default();
            if fate.added.take().is_none() {
                fate.removed = Some(r.clone());
            }
        }
        for r in &cs.added {
            fates.entry(identity(r)).or_default().added = Some(r.clone());
        }
    }
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    for fate in fates.into_values() {
        match (fate.removed, fate.added) {
            (Some(a), Some(b)) if a.ttl == b.ttl && a.owner.as_wire() == b.owner.as_wire() => {}
            (a, b) => {
                removed.extend(a);
                added.extend(b);
            }
        }
    }
    sort(&mut removed);
    sort(&mut added);
    Some(Changeset {
        soa_from: first.soa_from.clone(),
        soa_to: last.soa_to.clone(),
        removed,
        added,
    })
}

fn sort(records: &mut [Record]) {
    records.sort_by_cached_key(|r| (r.owner.key(), r.rtype, r.class, r.ttl, r.rdata.clone()));
}

/// Records in the IXFR stream of `change` (both SOAs of the difference and
/// the new SOA twice included): compare with `zone.record_count() + 1`, the
/// records of an AXFR, to choose the AXFR-style answer when it is smaller.
pub fn ixfr_size(change: &Changeset) -> u64 {
    change.removed.len() as u64 + change.added.len() as u64 + 4
}

/// The answer holding only the zone's SOA, written as Knot's ixfr.c
/// `ixfr_answer_soa` writes it (question echoed, no AA in Knot 3.2): the IXFR
/// answer to a client whose serial is not older than ours (`KNOT_EUPTODATE`
/// in `ixfr_process_query`), and the answer to every IXFR over UDP (Knot
/// never sends differences over UDP, whatever their size). None if the
/// message cannot hold it.
pub fn soa_only(zone: &Zone, request: &Request, buf: &mut [u8], limit: usize) -> Option<usize> {
    let mut w = request.begin(buf, limit)?;
    let apex = zone.node(zone.apex_id());
    let soa = zone.soa();
    let hint = owner_hint(&w, apex.owner());
    w.put_rrset(
        Section::Answer,
        apex.owner(),
        hint,
        Rtype::SOA,
        zone.class(),
        soa.ttl(),
        soa.rdatas(),
    )
    .ok()?;
    Some(request.end(w, limit))
}

/// A part of a difference sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    From,
    Removed,
    To,
    Added,
}

/// Where the writer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// The opening SOA (the new one).
    Head,
    /// Record `idx` of `part` of changeset `cs`.
    Diff {
        cs: usize,
        part: Part,
        idx: usize,
    },
    /// The closing SOA.
    Tail,
    Done,
    Failed,
}

/// Writes an IXFR answer, one message per call: the current SOA, then each
/// changeset as `SOA(from) removed… SOA(to) added…`, then the current SOA
/// again (RFC 1995 §4), as Knot's ixfr.c `ixfr_process_journal` and xfr.c
/// `xfr_process_list` do. Messages end when the next RRset does not fit or
/// once longer than 16383 bytes; consecutive records of one owner, type,
/// class and TTL go out as one RRset; an RRset too large for an empty
/// message is split (Knot would fail the transfer).
#[derive(Debug)]
pub struct IxfrWriter<'c> {
    request: Request,
    soa: &'c Record,
    changes: &'c [Changeset],
    stage: Stage,
    sent: u64,
}

impl<'c> IxfrWriter<'c> {
    /// A writer answering `request` with `changes` (consecutive, e.g. one
    /// from [`condense`]) leading to the zone whose SOA is `soa`.
    pub fn new(request: Request, soa: &'c Record, changes: &'c [Changeset]) -> Self {
        IxfrWriter {
            request,
            soa,
            changes,
            stage: Stage::Head,
            sent: 0,
        }
    }

    /// Writes the next message into `buf`, at most `limit` bytes; None when
    /// the transfer is over (see [`IxfrWriter::is_complete`]).
    pub fn next_message(&mut self, buf: &mut [u8], limit: usize) -> Option<usize> {
        if matches!(self.stage, Stage::Done | Stage::Failed) {
            return None;
        }
        let Some(mut w) = self.request.begin(buf, limit) else {
            self.stage = Stage::Failed;
            return None;
        };
        self.fill(&mut w);
        if self.stage == Stage::Failed {
            return None;
        }
        Some(self.request.end(w, limit))
    }

    /// Records written so far (SOAs included).
    pub fn records_sent(&self) -> u64 {
        self.sent
    }

    /// True once the closing SOA was written; false after `next_message`
    /// returned None means a record could not fit in an empty message.
    pub fn is_complete(&self) -> bool {
        self.stage == Stage::Done
    }

    /// The records of the current stage still to write, as one run of one
    /// RRset (None when the stage is exhausted).
    fn run(&self) -> Option<&'c [Record]> {
        let one = std::slice::from_ref;
        match self.stage {
            Stage::Head | Stage::Tail => Some(one(self.soa)),
            Stage::Diff { cs, part, idx } => {
                let c = self.changes.get(cs)?;
                let list = match part {
                    Part::From => return (idx == 0).then(|| one(&c.soa_from)),
                    Part::To => return (idx == 0).then(|| one(&c.soa_to)),
                    Part::Removed => &c.removed,
                    Part::Added => &c.added,
                };
                let rest = list.get(idx..).filter(|r| !r.is_empty())?;
                let head = &rest[0];
                let same = rest
                    .iter()
                    .take_while(|r| {
                        r.rtype == head.rtype
                            && r.class == head.class
                            && r.ttl == head.ttl
                            && r.owner == head.owner
                    })
                    .count();
                Some(&rest[..same])
            }
            Stage::Done | Stage::Failed => None,
        }
    }

    /// Moves past `n` records of the current stage (to the next stage when
    /// `exhausted`).
    fn advance(&mut self, n: usize) {
        self.stage = match self.stage {
            Stage::Head => self.first_diff(),
            Stage::Diff { cs, part, idx } => Stage::Diff {
                cs,
                part,
                idx: idx + n,
            },
            Stage::Tail => Stage::Done,
            s => s,
        };
    }

    fn first_diff(&self) -> Stage {
        if self.changes.is_empty() {
            Stage::Tail
        } else {
            Stage::Diff {
                cs: 0,
                part: Part::From,
                idx: 0,
            }
        }
    }

    /// The stage after an exhausted one.
    fn next_stage(&self) -> Stage {
        match self.stage {
            Stage::Diff { cs, part, .. } => {
                let part = match part {
                    Part::From => Part::Removed,
                    Part::Removed => Part::To,
                    Part::To => Part::Added,
                    Part::Added if cs + 1 < self.changes.len() => {
                        return Stage::Diff {
                            cs: cs + 1,
                            part: Part::From,
                            idx: 0,
                        }
                    }
                    Part::Added => return Stage::Tail,
                };
                Stage::Diff { cs, part, idx: 0 }
            }
            s => s,
        }
    }

    fn fill(&mut self, w: &mut MessageWriter<'_>) {
        loop {
            if matches!(self.stage, Stage::Done | Stage::Failed) {
                return;
            }
            let Some(run) = self.run() else {
                self.stage = self.next_stage();
                continue;
            };
            if self.stage != Stage::Head && w.len() > PTR_MAX {
                return;
            }
            let put = |w: &mut MessageWriter<'_>, run: &[Record]| {
                let r = &run[0];
                let hint = owner_hint(w, r.owner.as_ref());
                w.put_rrset(
                    Section::Answer,
                    r.owner.as_ref(),
                    hint,
                    r.rtype,
                    r.class,
                    r.ttl,
                    run.iter().map(|r| &*r.rdata),
                )
                .is_ok()
            };
            if put(w, run) {
                self.sent += run.len() as u64;
                self.advance(run.len());
                continue;
            }
            if w.count(Section::Answer) > 0 {
                return;
            }
            let mut n = 0;
            while n < run.len() && put(w, &run[n..n + 1]) {
                n += 1;
            }
            if n == 0 {
                self.stage = Stage::Failed;
                return;
            }
            self.sent += n as u64;
            self.advance(n);
            return;
        }
    }
}
