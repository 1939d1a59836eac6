//! The pipeline: parse, refuse what is not a plain query for our zones,
//! answer, then EDNS and truncation.

use lode_wire::message::{
    self, flags, Edns, Full, MessageWriter, ParseError, Query, Question, Section,
};
use lode_wire::{opcode, rcode, Class, NameRef, Rtype};
use lode_zonedb::{Node, NodeId, RRset, Zone, ZoneSet, ZoneSlot};

use crate::dnssec::SigQueue;
use crate::edns::OptPlan;
use crate::{AnswerKind, Answered, Asked, Extra, Settings, Transport};

/// Offset of QNAME in every response (right after the header).
pub(crate) const QNAME_POS: u16 = 12;

/// Extended DNS Error "Not Authoritative" (RFC 8914 §4.21), which Knot DNS
/// adds to REFUSED answers for names outside its zones.
const EDE_NOT_AUTHORITATIVE: [u8; 6] = [0, 15, 0, 2, 0, 20];

/// Answer/authority RRsets whose targets get additional records.
pub(crate) const MAX_ADDITIONAL_SOURCES: usize = 32;
/// CNAME/DNAME nodes remembered to stop loops.
pub(crate) const MAX_VISITED: usize = 64;
/// Wildcard expansions remembered for their NSEC proofs.
pub(crate) const MAX_WILDCARDS: usize = 8;
/// NSEC RRsets already in the authority section.
pub(crate) const MAX_NSECS: usize = 16;

/// An RRset written in the answer or authority section whose targets need
/// additional processing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AdditionalSource {
    /// The node and type of the RRset (read again from the zone).
    pub node: NodeId,
    pub rtype: Rtype,
    pub hints: message::RrsetHints,
    /// The zone cut when this is the NS RRset of a referral (its in-bailiwick
    /// glue is mandatory: TC when it does not fit).
    pub cut: Option<NodeId>,
}

/// A wildcard expansion whose non-existence proof goes in the authority section.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WildcardProof {
    /// Canonical predecessor of the name (NSEC).
    pub predecessor: NodeId,
    /// The name expanded (NSEC3 next closer name).
    pub name: lode_wire::NameBuf,
    /// Labels of the closest encloser.
    pub ce_labels: u8,
}

/// An unused wildcard list (a constant: one copy, not one per element).
const NO_WILDCARD: WildcardProof = WildcardProof {
    predecessor: NodeId::APEX,
    name: lode_wire::NameBuf::new(),
    ce_labels: 0,
};
const NO_WILDCARDS: [WildcardProof; MAX_WILDCARDS] = [NO_WILDCARD; MAX_WILDCARDS];

/// How the answer section ended.
// A stack value on the query path: boxing the name would allocate.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy)]
pub(crate) enum Outcome {
    /// Data was put in the answer section.
    Answered,
    /// The name exists (or a wildcard matched it), the type does not.
    NoData { node: NodeId, synthesized: bool },
    /// The name does not exist.
    NxDomain {
        closest_encloser: NodeId,
        predecessor: NodeId,
        /// The name found missing (the QNAME or a CNAME target).
        name: lode_wire::NameBuf,
    },
    /// A zone cut above (or at) the name.
    Referral { cut: NodeId },
    /// A DNAME substitution overflowed (RFC 6672 §2.2).
    YxDomain,
    /// A CNAME/DNAME chain left the zone or looped.
    Stop,
}

/// The state of one answer inside one zone.
pub(crate) struct Responder<'z, 'b> {
    pub zone: &'z Zone,
    pub w: MessageWriter<'b>,
    pub question: &'b Question,
    /// DO bit set and the zone signed: RRSIGs and NSEC proofs go in.
    pub dnssec: bool,
    /// NSEC proofs possible (signed, not NSEC3).
    pub nsec: bool,
    /// NSEC3 parameters when the zone is signed with NSEC3.
    pub nsec3: Option<lode_wire::nsec3::Nsec3Params<'z>>,
    pub sigs: SigQueue,
    pub sources: [Option<AdditionalSource>; MAX_ADDITIONAL_SOURCES],
    pub nsources: usize,
    pub visited: [NodeId; MAX_VISITED],
    pub nvisited: usize,
    pub wildcards: [WildcardProof; MAX_WILDCARDS],
    pub nwildcards: usize,
    pub nsecs: [NodeId; MAX_NSECS],
    pub nnsecs: usize,
    /// The kind of answer, known once the answer section is written.
    pub kind: AnswerKind,
}

/// A response's header flags: QR, the query's OPCODE, RD and CD (RFC
/// 4035 §3.1.6: the name server MUST copy CD into the response; Knot DNS
/// and NSD clear it, an accepted difference of the suite).
pub(crate) fn response_flags(query_flags: u16) -> u16 {
    flags::QR | (query_flags & (0x7800 | flags::RD | flags::CD))
}

/// The size limit for a response.
fn size_limit(transport: Transport, edns: Option<Edns>, settings: &Settings, out: usize) -> usize {
    let limit = match transport {
        Transport::Tcp => u16::MAX as usize,
        Transport::Udp => match edns {
            Some(e) => {
                let max = settings.max_udp_payload.max(512);
                e.udp_size.clamp(512, max) as usize
            }
            None => 512,
        },
    };
    limit.min(out)
}

/// Answers one query (see [`crate::answer_with`]).
pub(crate) fn respond<'z, 'e>(
    zones: &'z ZoneSet,
    query: &[u8],
    out: &mut [u8],
    transport: Transport,
    settings: &'e Settings,
    policy: impl FnOnce(&Query) -> Extra<'e>,
) -> Answered<'z> {
    let q = match message::parse_query(query) {
        Ok(q) => q,
        Err(ParseError::FormErr {
            id,
            flags,
            question,
        }) => {
            let limit = out.len().min(512);
            let e = Errors {
                id,
                flags,
                question: question.as_ref(),
                opt: None,
            };
            return error(
                e.respond(out, limit, rcode::FORMERR, &[], None),
                rcode::FORMERR,
            );
        }
        Err(_) => return Answered::DROP,
    };
    let mut answered = respond_to(zones, &q, query, out, transport, settings, policy);
    if answered.len > 0 {
        answered.asked = Some(Asked {
            qtype: q.question.as_ref().map_or(0, |x| x.qtype.0),
            qname_len: q
                .question
                .as_ref()
                .map_or(0, |x| x.qname.as_ref().as_wire().len() as u8),
            edns: q.edns.is_some(),
            dnssec_ok: q.edns.is_some_and(|e| e.dnssec_ok()),
        });
    }
    answered
}

/// [`respond`] once the query is parsed as `q`.
fn respond_to<'z, 'e>(
    zones: &'z ZoneSet,
    q: &Query,
    query: &[u8],
    out: &mut [u8],
    transport: Transport,
    settings: &'e Settings,
    policy: impl FnOnce(&Query) -> Extra<'e>,
) -> Answered<'z> {
    let limit = size_limit(transport, q.edns, settings, out.len());
    // Errors found before the server's policy runs carry no extra options
    // (as Knot's modules do not run for them).
    let plain_opt = |extra: &Extra<'e>| {
        q.edns
            .map(|edns| OptPlan::new(query, edns, transport, settings, extra))
    };
    let early = Errors {
        id: q.id,
        flags: q.flags,
        question: q.question.as_ref(),
        opt: plain_opt(&Extra::default()),
    };
    if let Some(edns) = q.edns {
        if edns.version > 0 {
            let code = rcode::BADVERS;
            return error(early.respond(out, limit, code, &[], None), code);
        }
    }
    let known_opcode = matches!(q.opcode(), opcode::QUERY | opcode::NOTIFY | opcode::UPDATE);
    let Some(question) = q.question.as_ref() else {
        let code = if known_opcode {
            rcode::FORMERR
        } else {
            rcode::NOTIMP
        };
        return error(early.respond(out, limit, code, &[], None), code);
    };
    let extra = policy(q);
    // Room for the TSIG record the server appends to a signed answer.
    let limit = extra.signed_room.map_or(limit, |room| {
        limit.saturating_sub(room).max(message::HEADER_LEN)
    });
    let opt = plain_opt(&extra);
    let e = Errors { opt, ..early };
    let err = |out: &mut [u8], code: u16, opts: &[u8]| {
        error(e.respond(out, limit, code, opts, None), code)
    };
    // A TSIG we cannot check (no keys are configured) is answered NOTAUTH,
    // with a BADKEY TSIG when a zone of ours is concerned (as Knot does).
    let badkey = |out: &mut [u8], zone_known: bool| {
        let tsig = q.tsig.as_ref().filter(|_| zone_known);
        error(
            e.respond(out, limit, rcode::NOTAUTH, &[], tsig),
            rcode::NOTAUTH,
        )
    };
    // The server's own verdict (BADCOOKIE, FORMERR for a bad cookie).
    if extra.drop {
        return Answered::DROP;
    }
    if let Some(code) = extra.error {
        return err(out, code, &[]);
    }
    // Classes first: CH is the server's identity class (RFC 4892: plain TXT
    // queries for its names, the rest REFUSED; NOTIMP for other OPCODEs and
    // transfers); others but IN and ANY: REFUSED.
    match question.qclass {
        Class::IN | Class::ANY => {}
        Class::CH => {
            let plain = q.opcode() == opcode::QUERY
                && !matches!(question.qtype, Rtype(0) | Rtype::AXFR | Rtype::IXFR);
            if !plain {
                return err(out, rcode::NOTIMP, &[]);
            }
            let Some(text) = crate::chaos::text(question, settings) else {
                return err(out, rcode::REFUSED, &[]);
            };
            return crate::chaos::answer(q, question, text, out, limit, opt.as_ref());
        }
        _ => return err(out, rcode::REFUSED, &[]),
    }
    let apex_known = || zones.slot(question.qname.as_ref()).is_some();
    match q.opcode() {
        opcode::QUERY => {}
        opcode::NOTIFY => return badkey(out, apex_known()),
        opcode::UPDATE if question.qtype == Rtype::SOA => return badkey(out, apex_known()),
        opcode::UPDATE => return err(out, rcode::FORMERR, &[]),
        _ => return err(out, rcode::NOTIMP, &[]),
    }
    match (question.qtype, transport) {
        (Rtype(0), _) | (Rtype::AXFR, Transport::Udp) => return err(out, rcode::NOTIMP, &[]),
        (Rtype::AXFR, Transport::Tcp) | (Rtype::IXFR, _) => return badkey(out, apex_known()),
        _ => {}
    }
    let Some(slot) = find_zone(zones, question) else {
        return err(out, rcode::REFUSED, &EDE_NOT_AUTHORITATIVE);
    };
    // The zone's current version, held while this query is answered.
    let version = slot.load();
    let zone: &Zone = &version;
    // A secondary's zone past its expiry (or never transferred): SERVFAIL,
    // as Knot answers for a zone without contents.
    if zone.is_expired() {
        let mut a = err(out, rcode::SERVFAIL, &[]);
        a.zone = Some(slot);
        return a;
    }
    let sign = q.tsig.is_some();
    if sign && extra.signed_room.is_none() {
        let mut a = badkey(out, true);
        if a.len > 0 {
            a.kind = AnswerKind::Signed;
        }
        return a;
    }
    let opt = opt.map(|o| o.with_expire(slot, zone, extra.now));
    let (len, kind, wildcard) = answer_zone(zone, q, question, out, limit, opt.as_ref());
    // Nothing may be cut from a TCP answer: when it does not fit in 65535
    // octets, Knot DNS answers SERVFAIL.
    if transport == Transport::Tcp && len >= 4 && out[2] & 0x02 != 0 {
        let mut a = err(out, rcode::SERVFAIL, &[]);
        a.zone = Some(slot);
        a.sign = sign && a.len > 0;
        return a;
    }
    // Zone answers' RCODEs fit the header: no extended bits in the OPT.
    let rcode = if len < 4 { 0 } else { u16::from(out[3] & 0x0f) };
    Answered {
        len,
        rcode,
        kind: if len == 0 { AnswerKind::Dropped } else { kind },
        zone: Some(slot),
        wildcard,
        asked: None,
        sign: sign && len > 0,
    }
}

/// The outcome of an error response of `len` bytes with RCODE `code`.
fn error<'z>(len: usize, code: u16) -> Answered<'z> {
    if len == 0 {
        return Answered::DROP;
    }
    Answered {
        len,
        rcode: code,
        kind: AnswerKind::Error,
        zone: None,
        wildcard: false,
        asked: None,
        sign: false,
    }
}

/// The zone that answers: the most specific one, except that DS is answered
/// from the parent side of a cut, so the zone of the parent name comes first.
fn find_zone<'a>(zones: &'a ZoneSet, question: &Question) -> Option<&'a ZoneSlot> {
    let qname = question.qname.as_ref();
    if question.qtype == Rtype::DS {
        if let Some(parent) = qname.parent() {
            if let Some(z) = zones.find_zone(parent) {
                return Some(z);
            }
        }
    }
    zones.find_zone(qname)
}

/// What an error response echoes from the query.
struct Errors<'a, 'q> {
    id: u16,
    flags: u16,
    question: Option<&'q Question>,
    /// The OPT record to add (the query had one).
    opt: Option<OptPlan<'a>>,
}

impl Errors<'_, '_> {
    /// Writes a response without records: header, question, OPT when the
    /// query had one (with `options`), then a TSIG error record if given.
    fn respond(
        &self,
        out: &mut [u8],
        limit: usize,
        code: u16,
        options: &[u8],
        tsig: Option<&message::Tsig>,
    ) -> usize {
        let Ok(mut w) = MessageWriter::new(out, limit) else {
            return 0;
        };
        w.set_header(self.id, response_flags(self.flags));
        w.set_rcode(code);
        let opt = self.opt.map_or(0, |o| o.reserve(options));
        let reserve = opt + tsig.map_or(0, message::tsig_error_len);
        w.set_limit(limit.saturating_sub(reserve));
        if let Some(q) = self.question {
            let _ = w.put_question(q);
        }
        w.set_limit(limit);
        if let Some(o) = self.opt {
            let _ = o.put(&mut w, code, options);
        }
        if let Some(t) = tsig {
            // Knot echoes the time signed, with its own fudge (300 s) and
            // the message ID as original ID.
            let mut time_and_fudge = t.time_and_fudge;
            time_and_fudge[6..].copy_from_slice(&300u16.to_be_bytes());
            let t = message::Tsig {
                original_id: self.id,
                time_and_fudge,
                ..*t
            };
            let _ = w.put_tsig_error(&t, message::TSIG_BADKEY);
        }
        w.finish()
    }
}

/// Answers a query for a name in `zone`.
fn answer_zone(
    zone: &Zone,
    q: &Query,
    question: &Question,
    out: &mut [u8],
    limit: usize,
    opt: Option<&OptPlan<'_>>,
) -> (usize, AnswerKind, bool) {
    let Ok(mut w) = MessageWriter::new(out, limit) else {
        return (0, AnswerKind::Dropped, false);
    };
    let mut kind = AnswerKind::Positive;
    let mut wildcard = false;
    w.set_header(q.id, response_flags(q.flags));
    let reserve = opt.map_or(0, |o| o.reserve(&[]));
    w.set_limit(limit.saturating_sub(reserve));
    if w.put_question(question).is_err() {
        w.set_flags(flags::TC);
    } else {
        // What the apex says (signed: its SOA has an RRSIG, Knot's test;
        // NSEC3), found when the version was made.
        let facts = zone.apex_facts();
        let dnssec = q.edns.is_some_and(|e| e.dnssec_ok()) && facts.signed;
        let nsec3 = facts.nsec3.as_ref().filter(|_| dnssec).map(|h| h.params());
        let nsec = dnssec && !facts.has_nsec3param;
        let mut r = Responder {
            zone,
            w,
            question,
            dnssec,
            nsec,
            nsec3,
            sigs: SigQueue::new(),
            sources: [None; MAX_ADDITIONAL_SOURCES],
            nsources: 0,
            visited: [zone.apex_id(); MAX_VISITED],
            nvisited: 0,
            wildcards: NO_WILDCARDS,
            nwildcards: 0,
            nsecs: [zone.apex_id(); MAX_NSECS],
            nnsecs: 0,
            kind: AnswerKind::Positive,
        };
        if r.sections().is_err() {
            r.w.set_flags(flags::TC);
        }
        kind = r.kind;
        wildcard = r.nwildcards > 0;
        w = r.w;
    }
    w.set_limit(limit);
    if let Some(o) = opt {
        // Every RCODE of a zone answer fits the header: no extended bits.
        let _ = o.put(&mut w, 0, &[]);
    }
    (w.finish(), kind, wildcard)
}

impl<'z> Responder<'z, '_> {
    /// Answer, authority and additional sections; Err when answer or
    /// authority overflowed (the caller sets TC).
    fn sections(&mut self) -> Result<(), Full> {
        let outcome = self.answer_section()?;
        self.kind = match outcome {
            Outcome::Answered | Outcome::Stop => AnswerKind::Positive,
            Outcome::NoData { .. } => AnswerKind::NoData,
            Outcome::NxDomain { .. } => AnswerKind::NxDomain,
            Outcome::Referral { .. } => AnswerKind::Referral,
            Outcome::YxDomain => AnswerKind::Error,
        };
        self.sigs.flush(self.zone, &mut self.w, Section::Answer)?;
        self.authority_section(outcome)?;
        self.sigs
            .flush(self.zone, &mut self.w, Section::Authority)?;
        self.additional_section();
        let _ = self.sigs.flush(self.zone, &mut self.w, Section::Additional);
        Ok(())
    }

    /// Writes an RRset of node `node` into `section`, queueing its RRSIGs and
    /// remembering it for additional processing.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn put_rrset(
        &mut self,
        section: Section,
        node: &Node<'_>,
        owner: NameRef<'_>,
        owner_hint: u16,
        rrset: RRset<'_>,
        ttl: u32,
        cut: Option<NodeId>,
    ) -> Result<message::RrsetHints, Full> {
        let sigs = if self.dnssec {
            node.rrset(Rtype::RRSIG)
        } else {
            None
        };
        self.put_rrset_with(section, node.id(), sigs, owner, owner_hint, rrset, ttl, cut)
    }

    /// [`Responder::put_rrset`] with the node's RRSIG RRset given (none
    /// without DNSSEC): for a caller without the node decoded.
    #[allow(clippy::too_many_arguments)]
    fn put_rrset_with(
        &mut self,
        section: Section,
        id: NodeId,
        sigs: Option<RRset<'_>>,
        owner: NameRef<'_>,
        owner_hint: u16,
        rrset: RRset<'_>,
        ttl: u32,
        cut: Option<NodeId>,
    ) -> Result<message::RrsetHints, Full> {
        let hints = self.w.put_rrset(
            section,
            owner,
            owner_hint,
            rrset.rtype(),
            Class::IN,
            ttl,
            rrset.rdatas(),
        )?;
        if let Some(sigs) = sigs.filter(|_| rrset.rtype() != Rtype::RRSIG) {
            self.sigs.push(id, sigs, rrset.rtype(), ttl, hints);
        }
        if section != Section::Additional
            && lode_wire::rdata::needs_additional(rrset.rtype())
            && self.nsources < MAX_ADDITIONAL_SOURCES
        {
            self.sources[self.nsources] = Some(AdditionalSource {
                node: id,
                rtype: rrset.rtype(),
                hints,
                cut,
            });
            self.nsources += 1;
        }
        Ok(hints)
    }

    /// The negative-answer SOA (TTL per RFC 2308 §5) in the authority section.
    pub(crate) fn put_negative_soa(&mut self) -> Result<(), Full> {
        let zone = self.zone;
        let ttl = zone.negative_ttl();
        // The apex's signatures without decoding the apex (every negative
        // answer comes here, with DNSSEC or not).
        let sigs = if self.dnssec {
            zone.apex_rrset(Rtype::RRSIG)
        } else {
            None
        };
        self.put_rrset_with(
            Section::Authority,
            zone.apex_id(),
            sigs,
            zone.origin(),
            0,
            zone.soa(),
            ttl,
            None,
        )
        .map(|_| ())
    }

    /// The authority section for the outcome of the answer section.
    fn authority_section(&mut self, outcome: Outcome) -> Result<(), Full> {
        match outcome {
            Outcome::Referral { cut } => self.answer_delegation(cut),
            Outcome::NoData { node, synthesized } => {
                self.put_negative_soa()?;
                if self.nsec {
                    self.prove_nodata(node)?;
                } else if self.nsec3.is_some() {
                    self.nsec3_nodata(node, synthesized)?;
                }
                self.prove_wildcards()
            }
            Outcome::NxDomain {
                closest_encloser,
                predecessor,
                name,
            } => {
                self.w.set_rcode(rcode::NXDOMAIN);
                self.put_negative_soa()?;
                if self.nsec {
                    self.prove_nxdomain(closest_encloser, predecessor)?;
                } else if self.nsec3.is_some() {
                    self.nsec3_nxdomain(closest_encloser, name.as_ref())?;
                }
                self.prove_wildcards()
            }
            Outcome::YxDomain => {
                self.w.set_rcode(rcode::YXDOMAIN);
                Ok(())
            }
            Outcome::Answered | Outcome::Stop => self.prove_wildcards(),
        }
    }
}

/// The truncated answer of an RRL slip (see [`crate::slip`]).
pub(crate) fn slip(
    query: &[u8],
    out: &mut [u8],
    rcode: u16,
    settings: &Settings,
    extra: &Extra<'_>,
) -> usize {
    let Ok(q) = message::parse_query(query) else {
        return 0;
    };
    let limit = size_limit(Transport::Udp, q.edns, settings, out.len());
    let opt = q
        .edns
        .map(|edns| OptPlan::new(query, edns, Transport::Udp, settings, extra));
    let e = Errors {
        id: q.id,
        flags: q.flags,
        question: q.question.as_ref(),
        opt,
    };
    let len = e.respond(out, limit, rcode, &[], None);
    if len >= message::HEADER_LEN {
        out[2] |= ((flags::AA | flags::TC) >> 8) as u8;
    }
    len
}
