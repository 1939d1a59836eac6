//! The answer section: RFC 1034 §4.3.2 inside one zone, with RFC 4592
//! wildcards, CNAME chains and RFC 6672 DNAME substitution followed inside
//! the zone only (Knot DNS does not continue into another zone it serves).

use lode_wire::message::{Full, Section};
use lode_wire::{rdata, NameBuf, NameRef, Rtype};
use lode_zonedb::{Lookup, NodeFlags, NodeId};

use crate::answer::{Outcome, Responder, WildcardProof, MAX_VISITED, MAX_WILDCARDS, QNAME_POS};

/// CNAMEs (real or synthesized from a DNAME) followed at most, as Knot DNS:
/// the sixth is not put and the answer ends there.
const CNAME_CHAIN_LIMIT: usize = 5;

/// The parent of an NSEC3 node (the apex, for a well-formed chain).
fn nsec3_parent(zone: &lode_zonedb::Zone, id: NodeId) -> NodeId {
    zone.node(id)
        .owner()
        .parent()
        .and_then(|p| zone.find(p))
        .unwrap_or(zone.apex_id())
}

/// The owner to write for `node`, found for `name`: the name itself when
/// synthesized from a wildcard, or when a hint makes the writer put a pointer
/// to a name equal to it (ignoring case) — then the node's own spelling need
/// not be made; else the node's owner as written in the zone.
fn owner_to_write<'a>(
    node: &'a lode_zonedb::Node<'_>,
    name: NameRef<'a>,
    synthesized: bool,
    hint: u16,
) -> NameRef<'a> {
    if synthesized || hint != 0 {
        name
    } else {
        node.owner()
    }
}

/// What one name leads to inside the zone.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// A zone cut at or above the name (not for DS at the cut itself).
    Cut(NodeId),
    /// A DNAME owned by a strict ancestor.
    Dname(NodeId),
    /// A node answers: the name's own, or a wildcard (`synthesized`).
    Node { id: NodeId, synthesized: bool },
    /// Nothing matches.
    Missing {
        closest_encloser: NodeId,
        predecessor: NodeId,
    },
}

impl<'z> Responder<'z, '_> {
    /// Classifies `name`.
    fn classify(&mut self, name: NameRef<'_>) -> Step {
        let zone = self.zone;
        let above = |s: NodeId| {
            if zone.info(s).0.contains(NodeFlags::DELEGATION) {
                Step::Cut(s)
            } else {
                Step::Dname(s)
            }
        };
        // Knot keeps NSEC3 records in a tree of their own: their owners are
        // not names of the zone. Seen from them, the parent encloses.
        let (ce, predecessor) = match zone.lookup(name) {
            Lookup::Found(id) => {
                let (flags, shadow) = zone.info(id);
                if !flags.contains(NodeFlags::NSEC3_ONLY) {
                    if let Some(s) = shadow {
                        return above(s);
                    }
                    if flags.contains(NodeFlags::DELEGATION) && self.question.qtype != Rtype::DS {
                        return Step::Cut(id);
                    }
                    return Step::Node {
                        id,
                        synthesized: false,
                    };
                }
                (nsec3_parent(zone, id), id)
            }
            Lookup::NotFound {
                closest_encloser,
                predecessor,
            } => (closest_encloser, predecessor),
        };
        let (mut flags, mut shadow) = zone.info(ce);
        let ce = if flags.contains(NodeFlags::NSEC3_ONLY) {
            let parent = nsec3_parent(zone, ce);
            (flags, shadow) = zone.info(parent);
            parent
        } else {
            ce
        };
        if let Some(s) = shadow {
            return above(s);
        }
        if flags.contains(NodeFlags::DELEGATION) {
            return Step::Cut(ce);
        }
        if flags.contains(NodeFlags::DNAME) {
            return Step::Dname(ce);
        }
        if !flags.contains(NodeFlags::WILDCARD_CHILD) {
            return Step::Missing {
                closest_encloser: ce,
                predecessor,
            };
        }
        match zone.wildcard_child(ce) {
            // A wildcard that is a zone cut delegates what it covers (Knot
            // answers with a referral to the wildcard's NS, owner as written),
            // except DS, answered from the parent side as at any cut.
            Some(w)
                if zone.info(w).0.contains(NodeFlags::DELEGATION)
                    && self.question.qtype != Rtype::DS =>
            {
                Step::Cut(w)
            }
            Some(w) => {
                let n = zone.node(ce);
                self.note_wildcard(predecessor, name, n.owner().label_count());
                Step::Node {
                    id: w,
                    synthesized: true,
                }
            }
            None => Step::Missing {
                closest_encloser: ce,
                predecessor,
            },
        }
    }

    /// Remembers the predecessor of a name answered by a wildcard: its NSEC
    /// proves that no closer match exists (RFC 4035 §3.1.3.3).
    fn note_wildcard(&mut self, predecessor: NodeId, name: NameRef<'_>, ce_labels: usize) {
        if self.nwildcards < MAX_WILDCARDS {
            let mut buf = NameBuf::new();
            buf.set(name);
            self.wildcards[self.nwildcards] = WildcardProof {
                predecessor,
                name: buf,
                ce_labels: ce_labels as u8,
            };
            self.nwildcards += 1;
        }
    }

    fn was_visited(&self, id: NodeId) -> bool {
        self.visited[..self.nvisited].contains(&id)
    }

    /// Marks a CNAME/DNAME node as followed; false when the list is full.
    fn visit(&mut self, id: NodeId) -> bool {
        if self.nvisited == MAX_VISITED {
            return false;
        }
        self.visited[self.nvisited] = id;
        self.nvisited += 1;
        true
    }

    /// Fills the answer section, following CNAMEs and DNAMEs inside the zone.
    pub(crate) fn answer_section(&mut self) -> Result<Outcome, Full> {
        let zone = self.zone;
        // Knot works on the lower-cased QNAME: it shows in DNAME substitutions.
        let mut name: NameBuf = NameBuf::lowered(self.question.qname.as_ref());

        let mut chain = 0usize;
        // Owner of the next RRset: the QNAME, then the CNAME target in RDATA.
        let mut hint = QNAME_POS;
        self.w.set_flags(lode_wire::message::flags::AA);
        loop {
            match self.classify(name.as_ref()) {
                Step::Cut(cut) => {
                    if chain == 0 {
                        self.w.clear_flags(lode_wire::message::flags::AA);
                    }
                    return Ok(Outcome::Referral { cut });
                }
                Step::Missing {
                    closest_encloser,
                    predecessor,
                } => {
                    return Ok(Outcome::NxDomain {
                        closest_encloser,
                        predecessor,
                        name,
                    })
                }
                Step::Dname(d) => {
                    let node = zone.node(d);
                    let Some(dname) = node.rrset(Rtype::DNAME) else {
                        return Ok(Outcome::Stop);
                    };
                    if chain == CNAME_CHAIN_LIMIT {
                        return Ok(Outcome::Stop);
                    }
                    chain += 1;
                    // The synthesized owner points at the QNAME on the first
                    // step, else at the previous record's RDATA when that
                    // record is the CNAME leading here (Knot's hints).
                    let first_step = hint == QNAME_POS;
                    // A DNAME met again is not repeated; its CNAME still is.
                    if !self.was_visited(d) {
                        hint = 0;
                        self.put_rrset(
                            Section::Answer,
                            &node,
                            node.owner(),
                            0,
                            dname,
                            dname.ttl(),
                            None,
                        )?;
                        let _ = self.visit(d);
                    }
                    let Some(target) = rdata::single_name(dname.first()) else {
                        return Ok(Outcome::Stop);
                    };
                    let mut next = name;
                    if next.replace_suffix(node.owner(), target).is_err() {
                        return Ok(Outcome::YxDomain);
                    }
                    let own = if first_step { QNAME_POS } else { hint };
                    hint = self.synthesize_cname(name.as_ref(), own, dname.ttl(), next.as_ref())?;
                    if self.question.qtype == Rtype::CNAME {
                        // The synthesized CNAME is the answer: not followed.
                        return Ok(Outcome::Answered);
                    }
                    name = next;
                }
                Step::Node { id, synthesized } => {
                    let node = zone.node(id);
                    let qtype = self.question.qtype;
                    // Knot answers CNAME, ANY, RRSIG and NSEC from the node itself.
                    let follow = !matches!(
                        qtype,
                        Rtype::CNAME | Rtype::ANY | Rtype::RRSIG | Rtype::NSEC
                    );
                    let cname = node.rrset(Rtype::CNAME).filter(|_| follow);
                    let Some(cname) = cname else {
                        return self.answer_node(&node, synthesized, name.as_ref(), hint);
                    };
                    if chain == CNAME_CHAIN_LIMIT || (!synthesized && self.was_visited(id)) {
                        return Ok(Outcome::Stop);
                    }
                    chain += 1;
                    let owner = owner_to_write(&node, name.as_ref(), synthesized, hint);
                    let h = self.put_rrset(
                        Section::Answer,
                        &node,
                        owner,
                        hint,
                        cname,
                        cname.ttl(),
                        None,
                    )?;
                    hint = h.rdata[0];
                    if (synthesized && self.was_visited(id)) || !self.visit(id) {
                        return Ok(Outcome::Stop);
                    }
                    let Some(target) = rdata::single_name(cname.first()) else {
                        return Ok(Outcome::Stop);
                    };
                    name.set(target);
                }
            }

            if !name.as_ref().ends_with(&zone.origin()) {
                return Ok(Outcome::Stop);
            }
        }
    }

    /// The CNAME synthesized from a DNAME (RFC 6672 §3.2): owner the name
    /// being resolved, TTL the DNAME's, unsigned.
    fn synthesize_cname(
        &mut self,
        owner: NameRef<'_>,
        hint: u16,
        ttl: u32,
        target: NameRef<'_>,
    ) -> Result<u16, Full> {
        self.w
            .put_rrset(
                Section::Answer,
                owner,
                hint,
                Rtype::CNAME,
                lode_wire::Class::IN,
                ttl,
                core::iter::once(target.as_wire()),
            )
            .map(|h| h.rdata[0])
    }

    /// The data of one node for the query type: ANY gives the first RRset
    /// (RFC 8482 minimal answer, Knot picks the lowest type), RRSIG the first
    /// signature; nothing means NODATA.
    fn answer_node(
        &mut self,
        node: &lode_zonedb::Node<'_>,
        synthesized: bool,
        name: NameRef<'_>,
        hint: u16,
    ) -> Result<Outcome, Full> {
        let id = node.id();
        let owner = owner_to_write(node, name, synthesized, hint);
        let qtype = self.question.qtype;
        let rrset = match qtype {
            Rtype::ANY => node.rrsets().next(),
            t => node.rrset(t),
        };
        let Some(rrset) = rrset else {
            return Ok(Outcome::NoData {
                node: id,
                synthesized,
            });
        };
        if qtype == Rtype::RRSIG {
            self.w.put_rrset(
                Section::Answer,
                owner,
                hint,
                Rtype::RRSIG,
                lode_wire::Class::IN,
                rrset.record_ttl(rrset.first()),
                rrset.rdatas().take(1),
            )?;
        } else {
            self.put_rrset(Section::Answer, node, owner, hint, rrset, rrset.ttl(), None)?;
        }
        Ok(Outcome::Answered)
    }

    /// A referral: the cut's NS RRset, and with DNSSEC its DS RRset or the
    /// NSEC proving there is none; glue follows in the additional section.
    pub(crate) fn answer_delegation(&mut self, cut: NodeId) -> Result<(), Full> {
        let zone = self.zone;
        let node = zone.node(cut);
        let Some(ns) = node.rrset(Rtype::NS) else {
            return Ok(());
        };
        self.put_rrset(
            Section::Authority,
            &node,
            node.owner(),
            0,
            ns,
            ns.ttl(),
            Some(cut),
        )?;
        if self.dnssec {
            match node.rrset(Rtype::DS) {
                Some(ds) => {
                    self.put_rrset(
                        Section::Authority,
                        &node,
                        node.owner(),
                        0,
                        ds,
                        ds.ttl(),
                        None,
                    )?;
                }
                None if self.nsec => self.put_nsec(cut)?,
                None if self.nsec3.is_some() => self.nsec3_no_ds(cut)?,
                None => {}
            }
        }
        Ok(())
    }
}
