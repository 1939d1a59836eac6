//! DNSSEC as data: RRSIGs of the RRsets written (queued per section and
//! written at its end, as Knot DNS does) and NSEC proofs for negative and
//! wildcard answers (RFC 4035 §3.1.3). The zone is not signed by us: RRSIG
//! and NSEC records are served as loaded. NSEC3 proofs are not produced.

use lode_wire::message::{Full, MessageWriter, RrsetHints, Section};
use lode_wire::{rdata, Class, NameBuf, Rtype};
use lode_zonedb::{Lookup, NodeId, RRset, Zone};

use crate::answer::{Responder, MAX_NSECS};

/// RRSIG RRsets waiting for the end of their section.
pub(crate) const MAX_PENDING_SIGS: usize = 48;

/// One covered RRset whose signatures are still to be written.
#[derive(Debug, Clone, Copy)]
struct PendingSig {
    /// The node whose RRSIG RRset holds the signatures.
    node: NodeId,
    covered: Rtype,
    ttl: u32,
    hints: RrsetHints,
}

/// The signatures of one section, written when the section ends.
#[derive(Debug)]
pub(crate) struct SigQueue {
    items: [Option<PendingSig>; MAX_PENDING_SIGS],
    len: usize,
}

impl SigQueue {
    /// An empty queue.
    pub(crate) fn new() -> Self {
        SigQueue {
            items: [None; MAX_PENDING_SIGS],
            len: 0,
        }
    }

    /// Queues the RRSIGs in `sigs` covering `covered`, owned like the RRset
    /// written at `hints`, with the TTL it was written with.
    pub(crate) fn push(
        &mut self,
        node: NodeId,
        sigs: RRset<'_>,
        covered: Rtype,
        ttl: u32,
        hints: RrsetHints,
    ) {
        let any = sigs
            .rdatas()
            .any(|r| rdata::rrsig_type_covered(r) == Some(covered));
        if any && self.len < MAX_PENDING_SIGS {
            self.items[self.len] = Some(PendingSig {
                node,
                covered,
                ttl,
                hints,
            });
            self.len += 1;
        }
    }

    /// Writes the queued RRSIGs into `section`. In the additional section a
    /// signature that does not fit is left out; elsewhere it is an error.
    pub(crate) fn flush(
        &mut self,
        zone: &Zone,
        w: &mut MessageWriter<'_>,
        section: Section,
    ) -> Result<(), Full> {
        if self.len == 0 {
            return Ok(());
        }
        let items = self.items;
        let len = self.len;
        self.len = 0;
        for p in items[..len].iter().flatten() {
            let mut owner = NameBuf::new();
            if owner
                .read_compressed(w.written(), p.hints.owner_at)
                .is_err()
            {
                continue;
            }
            let covered = p.covered;
            let node = zone.node(p.node);
            let Some(sigs) = node.rrset(Rtype::RRSIG) else {
                continue;
            };
            let r = w.put_rrset(
                section,
                owner.as_ref(),
                p.hints.owner,
                Rtype::RRSIG,
                Class::IN,
                p.ttl,
                sigs.rdatas()
                    .filter(move |r| rdata::rrsig_type_covered(r) == Some(covered)),
            );
            if r.is_err() && section != Section::Additional {
                return Err(Full);
            }
        }
        Ok(())
    }
}

impl<'z> Responder<'z, '_> {
    /// Puts the NSEC RRset of `id` in the authority section, once.
    pub(crate) fn put_nsec(&mut self, id: NodeId) -> Result<(), Full> {
        if self.nsecs[..self.nnsecs].contains(&id) {
            return Ok(());
        }
        let node = self.zone.node(id);
        let Some(nsec) = node.rrset(Rtype::NSEC) else {
            return Ok(());
        };
        self.put_rrset(
            Section::Authority,
            &node,
            node.owner(),
            0,
            nsec,
            nsec.ttl(),
            None,
        )?;
        if self.nnsecs < MAX_NSECS {
            self.nsecs[self.nnsecs] = id;
            self.nnsecs += 1;
        }
        Ok(())
    }

    /// The NSEC covering a name whose canonical predecessor is `id`: the
    /// nearest node at or before it that has one (empty non-terminals and
    /// glue have none).
    fn covering_nsec(&self, id: NodeId) -> Option<NodeId> {
        self.zone.rfind_from(id, |n| n.rrset(Rtype::NSEC).is_some())
    }

    /// NODATA: the node's own NSEC (its bitmap lacks the type), or for an
    /// empty non-terminal the NSEC that covers it.
    pub(crate) fn prove_nodata(&mut self, node: NodeId) -> Result<(), Full> {
        if let Some(c) = self.covering_nsec(node) {
            self.put_nsec(c)?;
        }
        Ok(())
    }

    /// NXDOMAIN: the NSEC covering the name, then the one covering the
    /// wildcard at the closest encloser.
    pub(crate) fn prove_nxdomain(
        &mut self,
        closest_encloser: NodeId,
        predecessor: NodeId,
    ) -> Result<(), Full> {
        if let Some(c) = self.covering_nsec(predecessor) {
            self.put_nsec(c)?;
        }
        let zone = self.zone;
        let ce_node = zone.node(closest_encloser);
        let ce = ce_node.owner();
        let Some(wild) = prepend_star(ce) else {
            return Ok(());
        };
        if let Lookup::NotFound { predecessor, .. } = zone.lookup(wild.as_ref()) {
            if let Some(c) = self.covering_nsec(predecessor) {
                self.put_nsec(c)?;
            }
        }
        Ok(())
    }

    /// For each wildcard expansion: the NSEC (or NSEC3 of the next closer
    /// name) proving the name itself absent.
    pub(crate) fn prove_wildcards(&mut self) -> Result<(), Full> {
        for i in 0..self.nwildcards {
            let w = self.wildcards[i];
            if self.nsec {
                if let Some(c) = self.covering_nsec(w.predecessor) {
                    self.put_nsec(c)?;
                }
            } else if self.nsec3.is_some() {
                self.nsec3_wildcard(w.name.as_ref(), w.ce_labels as usize)?;
            }
        }
        Ok(())
    }
}

/// `*.name`, if it is not too long.
pub(crate) fn prepend_star(name: lode_wire::NameRef<'_>) -> Option<NameBuf> {
    let w = name.as_wire();
    if w.len() + 2 > lode_wire::name::MAX_NAME_LEN {
        return None;
    }
    let mut bytes = [0u8; lode_wire::name::MAX_NAME_LEN];
    bytes[0] = 1;
    bytes[1] = b'*';
    bytes[2..2 + w.len()].copy_from_slice(w);
    let wire = &bytes[..2 + w.len()];
    let r = lode_wire::NameRef::from_wire(wire).ok()?;
    let mut buf = NameBuf::new();
    buf.set(r);
    Some(buf)
}
