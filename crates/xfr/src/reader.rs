//! Reading transfer responses on the secondary side, one message at a time.

use lode_wire::message::{self, flags, HEADER_LEN};
use lode_wire::record::read_record;
use lode_wire::serial::{serial_cmp, SerialOrder};
use lode_wire::{opcode, Class, Name, NameBuf, Record, Rtype};
use lode_zonedb::{soa_serial, Changeset};

use crate::error::{question_text, XfrError};

/// What a transfer brought.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transfer {
    /// The server's serial is not newer than ours: its SOA.
    UpToDate(Record),
    /// A whole zone (AXFR, or an AXFR-style answer to IXFR): its SOA, and
    /// every record (the SOA once) unless they went to a sink.
    Full {
        /// The zone's SOA.
        soa: Record,
        /// The records, SOA included once (empty when streamed to a sink).
        records: Vec<Record>,
    },
    /// Differences from our serial to the server's, in order.
    Incremental(Vec<Changeset>),
}

/// The reader's answer to one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// More messages are needed.
    More,
    /// The transfer is complete.
    Done(Transfer),
}

/// The difference being read.
#[derive(Debug)]
struct Partial {
    soa_from: Record,
    soa_to: Option<Record>,
    removed: Vec<Record>,
    added: Vec<Record>,
}

#[derive(Debug)]
enum State {
    /// Nothing read yet.
    Start,
    /// IXFR: the first message held only an SOA newer than ours; the next
    /// message tells an IXFR from an AXFR-style answer.
    Pending(Record),
    /// Reading a whole zone opened by `soa`.
    Axfr { soa: Record },
    /// Reading differences towards `last`.
    Ixfr {
        last: Record,
        changes: Vec<Changeset>,
        cur: Option<Partial>,
    },
    /// Complete.
    Done,
}

/// Reads the messages of one AXFR or IXFR response, as Knot DNS 3.2's
/// refresh.c reads them (`ixfr_consume`, `determine_xfr_type`,
/// `ixfr_next_state`, `axfr_consume`): an IXFR answer whose first message
/// holds a lone SOA not newer than ours is "up to date"; a lone newer SOA
/// waits for the next message; an SOA followed by a non-SOA record is an
/// AXFR-style answer; otherwise differences are read until the opening SOA
/// comes again where a difference's additions may be.
///
/// Each message is checked: QR, the request's ID, OPCODE QUERY, no TC,
/// RCODE NOERROR (extended RCODE included), the question if present (it must
/// be in the first message), every answer record in the zone and its class,
/// the record limit; IXFR differences must chain from our serial to the
/// server's. Records in the authority and additional sections (OPT, a TSIG
/// the caller verified) are ignored, as Knot ignores them. Where Knot skips
/// out-of-zone records of an IXFR, Lode rejects the transfer.
#[derive(Debug)]
pub struct XfrReader {
    zone: Name,
    class: Class,
    id: u16,
    qtype: Rtype,
    serial: Option<u32>,
    limit: u64,
    count: u64,
    messages: u64,
    state: State,
    collected: Vec<Record>,
}

impl XfrReader {
    /// A reader of the answer to an AXFR request with ID `id` for `zone`.
    pub fn axfr(zone: Name, id: u16) -> Self {
        Self::new(zone, id, Rtype::AXFR, None)
    }

    /// A reader of the answer to an IXFR request with ID `id` for `zone`,
    /// which we hold at `serial`.
    pub fn ixfr(zone: Name, id: u16, serial: u32) -> Self {
        Self::new(zone, id, Rtype::IXFR, Some(serial))
    }

    fn new(zone: Name, id: u16, qtype: Rtype, serial: Option<u32>) -> Self {
        XfrReader {
            zone,
            class: Class::IN,
            id,
            qtype,
            serial,
            limit: u64::MAX,
            count: 0,
            messages: 0,
            state: State::Start,
            collected: Vec::new(),
        }
    }

    /// Sets the zone's class (default IN).
    pub fn with_class(mut self, class: Class) -> Self {
        self.class = class;
        self
    }

    /// Sets the most answer records the transfer may hold (default: no limit).
    pub fn with_limit(mut self, records: u64) -> Self {
        self.limit = records;
        self
    }

    /// Answer records read so far.
    pub fn records_read(&self) -> u64 {
        self.count
    }

    /// Reads one message, collecting a whole zone's records in memory
    /// (returned in [`Transfer::Full`]).
    pub fn feed(&mut self, msg: &[u8]) -> Result<Progress, XfrError> {
        let mut collected = std::mem::take(&mut self.collected);
        let r = self.feed_with(msg, &mut |r| collected.push(r));
        match r {
            Ok(Progress::Done(Transfer::Full { soa, .. })) => Ok(Progress::Done(Transfer::Full {
                soa,
                records: collected,
            })),
            other => {
                self.collected = collected;
                other
            }
        }
    }

    /// Reads one message, passing a whole zone's records (the SOA first,
    /// once) to `sink` as they come instead of keeping them: for a caller
    /// that feeds a `ZoneBuilder`. [`Transfer::Full`] then has no records.
    /// Differences are kept (they are returned whole).
    pub fn feed_with(
        &mut self,
        msg: &[u8],
        sink: &mut dyn FnMut(Record),
    ) -> Result<Progress, XfrError> {
        if matches!(self.state, State::Done) {
            return Err(XfrError::AfterEnd);
        }
        let m = parse(msg)?;
        if m.flags & flags::QR == 0 {
            return Err(XfrError::NotResponse);
        }
        if m.id != self.id {
            return Err(XfrError::WrongId {
                got: m.id,
                expected: self.id,
            });
        }
        let op = ((m.flags >> 11) & 0xF) as u8;
        if op != opcode::QUERY {
            return Err(XfrError::WrongOpcode(op));
        }
        if m.rcode != 0 {
            return Err(XfrError::Rcode(m.rcode));
        }
        if m.flags & flags::TC != 0 {
            return Err(XfrError::Truncated);
        }
        match &m.question {
            Some((name, t, c)) if *name != self.zone || *t != self.qtype || *c != self.class => {
                return Err(XfrError::WrongQuestion(format!(
                    "{}, asked {}",
                    question_text(name, *t, *c),
                    question_text(&self.zone, self.qtype, self.class)
                )));
            }
            None if self.messages == 0 => {
                return Err(XfrError::WrongQuestion(
                    "no question in the first message".into(),
                ))
            }
            _ => {}
        }
        self.messages += 1;
        let mut records = Vec::with_capacity(m.answers as usize);
        let mut pos = m.answer_at;
        for i in 0..m.answers {
            let (r, next) = read_record(msg, pos).map_err(|e| {
                XfrError::Malformed(format!(
                    "message {}, answer record {}: {e}",
                    self.messages,
                    i + 1
                ))
            })?;
            pos = next;
            if !r.owner.as_ref().ends_with(&self.zone.as_ref()) {
                return Err(XfrError::OutOfZone(r.owner));
            }
            if r.class != self.class {
                return Err(XfrError::WrongClass {
                    owner: r.owner,
                    class: r.class,
                });
            }
            self.count += 1;
            if self.count > self.limit {
                return Err(XfrError::TooManyRecords(self.limit));
            }
            records.push(r);
        }
        let mut records = records.into_iter().peekable();
        if matches!(self.state, State::Start | State::Pending(_)) {
            if let Some(done) = self.decide(&mut records, sink)? {
                self.state = State::Done;
                return Ok(Progress::Done(done));
            }
        }
        for r in records {
            if let Some(done) = self.step(r, sink)? {
                self.state = State::Done;
                return Ok(Progress::Done(done));
            }
        }
        Ok(Progress::More)
    }

    /// Tells the kind of answer from the first records (Knot's refresh.c
    /// `determine_xfr_type`) and sets the state; the records it takes are
    /// consumed.
    fn decide(
        &mut self,
        records: &mut std::iter::Peekable<std::vec::IntoIter<Record>>,
        sink: &mut dyn FnMut(Record),
    ) -> Result<Option<Transfer>, XfrError> {
        let pending = match std::mem::replace(&mut self.state, State::Start) {
            State::Pending(soa) => Some(soa),
            _ => None,
        };
        let (first, ixfr) = match pending {
            Some(soa) => {
                // The lone SOA of the first message opened the answer.
                let Some(next) = records.peek() else {
                    self.state = State::Pending(soa);
                    return Ok(None);
                };
                let axfr = next.rtype != Rtype::SOA || same_rr(next, &soa);
                (soa, !axfr)
            }
            None => {
                let Some(first) = records.next() else {
                    return Err(XfrError::Sequence(
                        "the first message has no answer records".into(),
                    ));
                };
                if first.rtype != Rtype::SOA {
                    return Err(XfrError::Sequence(format!(
                        "the first record is {} {}, not the zone's SOA",
                        first.owner, first.rtype
                    )));
                }
                if first.owner != self.zone {
                    return Err(XfrError::Sequence(format!(
                        "the first SOA is owned by {}, not the zone apex",
                        first.owner
                    )));
                }
                if self.qtype == Rtype::AXFR {
                    (first, false)
                } else {
                    match records.peek() {
                        None => {
                            let ours = self.serial.unwrap_or(0);
                            let theirs = soa_serial(&first);
                            if matches!(
                                serial_cmp(ours, theirs),
                                SerialOrder::Equal | SerialOrder::Greater
                            ) {
                                return Ok(Some(Transfer::UpToDate(first)));
                            }
                            self.state = State::Pending(first);
                            return Ok(None);
                        }
                        Some(next) => {
                            let ixfr = next.rtype == Rtype::SOA && !same_rr(next, &first);
                            (first, ixfr)
                        }
                    }
                }
            }
        };
        if ixfr {
            self.state = State::Ixfr {
                last: first,
                changes: Vec::new(),
                cur: None,
            };
        } else {
            sink(first.clone());
            self.state = State::Axfr { soa: first };
        }
        Ok(None)
    }

    /// Takes one record after the opening SOA.
    fn step(
        &mut self,
        r: Record,
        sink: &mut dyn FnMut(Record),
    ) -> Result<Option<Transfer>, XfrError> {
        match &mut self.state {
            State::Axfr { soa } => {
                if r.rtype != Rtype::SOA {
                    sink(r);
                    return Ok(None);
                }
                let (open, close) = (soa_serial(soa), soa_serial(&r));
                if open != close {
                    return Err(XfrError::Sequence(format!(
                        "AXFR: closing SOA serial {close} differs from the opening {open}"
                    )));
                }
                Ok(Some(Transfer::Full {
                    soa: soa.clone(),
                    records: Vec::new(),
                }))
            }
            State::Ixfr { last, changes, cur } => {
                let Some(p) = cur else {
                    if r.rtype != Rtype::SOA {
                        return Err(XfrError::Sequence(format!(
                            "IXFR: difference {} starts with {} {}, not an SOA",
                            changes.len() + 1,
                            r.owner,
                            r.rtype
                        )));
                    }
                    let expected = match changes.last() {
                        Some(c) => Some(c.serial_to()),
                        None => self.serial,
                    };
                    check_chain(changes.len() + 1, &r, expected)?;
                    *cur = Some(Partial {
                        soa_from: r,
                        soa_to: None,
                        removed: Vec::new(),
                        added: Vec::new(),
                    });
                    return Ok(None);
                };
                let Some(to) = &p.soa_to else {
                    if r.rtype == Rtype::SOA {
                        p.soa_to = Some(r);
                    } else {
                        p.removed.push(r);
                    }
                    return Ok(None);
                };
                if r.rtype != Rtype::SOA {
                    p.added.push(r);
                    return Ok(None);
                }
                let to_serial = soa_serial(to);
                let done = same_rr(&r, last);
                if let Some(p) = cur.take() {
                    changes.push(Changeset {
                        soa_from: p.soa_from,
                        soa_to: p.soa_to.unwrap_or_else(|| r.clone()),
                        removed: p.removed,
                        added: p.added,
                    });
                }
                if done {
                    let end = soa_serial(last);
                    if to_serial != end {
                        return Err(XfrError::Sequence(format!(
                            "IXFR: the last difference ends at serial {to_serial}, the transfer at {end}"
                        )));
                    }
                    return Ok(Some(Transfer::Incremental(std::mem::take(changes))));
                }
                check_chain(changes.len() + 1, &r, Some(to_serial))?;
                *cur = Some(Partial {
                    soa_from: r,
                    soa_to: None,
                    removed: Vec::new(),
                    added: Vec::new(),
                });
                Ok(None)
            }
            State::Start | State::Pending(_) | State::Done => Err(XfrError::AfterEnd),
        }
    }
}

/// The serial a difference starts at must be the expected one.
fn check_chain(index: usize, soa_from: &Record, expected: Option<u32>) -> Result<(), XfrError> {
    let from = soa_serial(soa_from);
    match expected {
        Some(e) if e != from => Err(XfrError::Chain {
            index,
            from,
            expected: e,
        }),
        _ => Ok(()),
    }
}

/// Knot's `knot_rrset_equal`: owner, type, class, RDATA and TTL.
fn same_rr(a: &Record, b: &Record) -> bool {
    a.owner == b.owner
        && a.rtype == b.rtype
        && a.class == b.class
        && a.rdata == b.rdata
        && a.ttl == b.ttl
}

/// The parts of a message the transfer code reads.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub id: u16,
    pub flags: u16,
    /// The full RCODE (the OPT's upper bits included).
    pub rcode: u16,
    pub question: Option<(Name, Rtype, Class)>,
    /// Offset of the first answer record and their number.
    pub answer_at: usize,
    pub answers: u16,
}

/// Reads the header and the question and walks every record (bounds checked,
/// the OPT's extended RCODE noted); the answer records are read afterwards.
pub(crate) fn parse(msg: &[u8]) -> Result<Parsed, XfrError> {
    let bad = |what: &str| XfrError::Malformed(what.to_string());
    if msg.len() < HEADER_LEN {
        return Err(bad("shorter than a header"));
    }
    let count = |i: usize| u16::from_be_bytes([msg[4 + 2 * i], msg[5 + 2 * i]]);
    let (qd, an, ns, ar) = (count(0), count(1), count(2), count(3));
    if qd > 1 {
        return Err(bad("more than one question"));
    }
    let mut pos = HEADER_LEN;
    let mut name = NameBuf::new();
    let mut question = None;
    if qd == 1 {
        pos = name
            .read_compressed(msg, pos)
            .map_err(|_| bad("question name unreadable"))?;
        let tc = msg
            .get(pos..pos + 4)
            .ok_or_else(|| bad("question truncated"))?;
        question = Some((
            name.as_ref().to_name(),
            Rtype(u16::from_be_bytes([tc[0], tc[1]])),
            Class(u16::from_be_bytes([tc[2], tc[3]])),
        ));
        pos += 4;
    }
    let answer_at = pos;
    let total = an as usize + ns as usize + ar as usize;
    if total > msg.len() / 11 {
        return Err(bad("more records than the message can hold"));
    }
    let mut rcode = message::header_flags(msg) & 0xF;
    for i in 0..total {
        pos = name
            .read_compressed(msg, pos)
            .map_err(|_| bad(&format!("record {}: owner unreadable", i + 1)))?;
        let fixed = msg
            .get(pos..pos + 10)
            .ok_or_else(|| bad(&format!("record {}: truncated", i + 1)))?;
        let rtype = u16::from_be_bytes([fixed[0], fixed[1]]);
        let rdlen = u16::from_be_bytes([fixed[8], fixed[9]]) as usize;
        if rtype == Rtype::OPT.0 && i >= an as usize + ns as usize {
            rcode |= u16::from(fixed[4]) << 4;
        }
        pos += 10 + rdlen;
        if pos > msg.len() {
            return Err(bad(&format!("record {}: RDATA truncated", i + 1)));
        }
    }
    if pos != msg.len() {
        return Err(bad("bytes after the last record"));
    }
    Ok(Parsed {
        id: message::id(msg),
        flags: message::header_flags(msg),
        rcode,
        question,
        answer_at,
        answers: an,
    })
}
