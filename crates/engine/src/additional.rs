//! The additional section: A and AAAA records of the names that NS, MX, SRV,
//! SVCB and HTTPS records in the answer and authority sections point to, when
//! those names are in the same zone (exact node, occluded glue included, or a
//! wildcard match) — what Knot DNS does. No CNAME is followed (RFC 2181
//! §10.3). What does not fit is left out, except glue under a referral's cut,
//! whose absence sets TC (RFC 1034 §4.3.2 step 3b, RFC 9471).

use lode_wire::message::{flags, Section};
use lode_wire::{rdata, NameRef, Rtype};
use lode_zonedb::{Lookup, NodeId};

use crate::answer::Responder;

impl<'z> Responder<'z, '_> {
    /// The node answering for `target` in this zone, if any, and whether it
    /// is a wildcard (then the owner written is `target`).
    fn additional_node(&self, target: NameRef<'_>) -> Option<(NodeId, bool)> {
        let zone = self.zone;
        if !target.ends_with(&zone.origin()) {
            return None;
        }
        match zone.lookup(target) {
            Lookup::Found(id) => Some((id, false)),
            Lookup::NotFound {
                closest_encloser, ..
            } => zone.wildcard_child(closest_encloser).map(|w| (w, true)),
        }
    }

    /// Fills the additional section.
    pub(crate) fn additional_section(&mut self) {
        let zone = self.zone;
        for s in 0..self.nsources {
            let Some(src) = self.sources[s] else {
                continue;
            };
            let src_node = zone.node(src.node);
            let Some(rrset) = src_node.rrset(src.rtype) else {
                continue;
            };
            // The cut's node and owner, decoded only once a target is found
            // (most of a TLD's referrals point out of the zone).
            let mut cut_node = None;
            for (i, rd) in rrset.rdatas().enumerate() {
                let Some(target) = rdata::target(src.rtype, rd) else {
                    continue;
                };
                // Knot keeps SVCB/HTTPS targets as written and looks them up
                // as such: a target in upper case finds nothing.
                let verbatim = matches!(src.rtype, Rtype::SVCB | Rtype::HTTPS);
                if verbatim && target.as_wire().iter().any(|b| b.is_ascii_uppercase()) {
                    continue;
                }
                let Some((id, synthesized)) = self.additional_node(target) else {
                    continue;
                };
                let node = zone.node(id);
                let owner = if synthesized { target } else { node.owner() };
                // The owner points at the target in RDATA; AAAA at the A's owner.
                let mut hint = src.hints.rdata.get(i).copied().unwrap_or(0);
                let mandatory = src.cut.is_some_and(|c| {
                    let cut = cut_node.get_or_insert_with(|| zone.node(c));
                    target.ends_with(&cut.owner())
                });
                for t in [Rtype::A, Rtype::AAAA] {
                    let Some(set) = node.rrset(t) else {
                        continue;
                    };
                    match self.put_rrset(
                        Section::Additional,
                        &node,
                        owner,
                        hint,
                        set,
                        set.ttl(),
                        None,
                    ) {
                        Ok(h) => hint = h.owner,
                        Err(_) if mandatory => self.w.set_flags(flags::TC),
                        Err(_) => {}
                    }
                }
            }
        }
    }
}
