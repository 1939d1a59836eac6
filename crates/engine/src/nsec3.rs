//! NSEC3 proofs (RFC 5155 §7.2) for zones signed with NSEC3, in the order
//! Knot DNS 3.2 writes them. Owner names are hashed on the query path with
//! the zone's NSEC3PARAM (SHA-1, iterations, salt; `lode_wire::nsec3`),
//! and found in the zone's NSEC3 index (hash order), without allocation.

use lode_wire::message::Full;
use lode_wire::{NameBuf, NameRef, Rtype};
use lode_zonedb::{nsec3_key, NodeId, Nsec3Key};

use crate::answer::Responder;

/// `name` cut down to its last `labels` labels.
fn suffix_of(name: NameRef<'_>, labels: usize) -> Option<NameBuf> {
    let s = name.suffix(labels)?;
    let mut b = NameBuf::new();
    b.set(s);
    Some(b)
}

impl<'z> Responder<'z, '_> {
    /// The key of the hashed owner of `name`.
    fn nsec3_key(&self, name: NameRef<'_>) -> Option<Nsec3Key> {
        Some(nsec3_key(&self.nsec3?.hash(name)))
    }

    /// The NSEC3 node whose owner hashes `name`, if the zone has it.
    fn nsec3_match(&self, name: NameRef<'_>) -> Option<NodeId> {
        self.zone.nsec3_match(&self.nsec3_key(name)?)
    }

    /// [`Responder::nsec3_match`] of `name`, an ancestor of the query
    /// name (or itself) with `labels` labels: the apex's is known.
    fn nsec3_match_in_zone(&self, name: NameRef<'_>, labels: usize) -> Option<NodeId> {
        if labels == self.origin_labels() {
            return self.zone.apex_facts().nsec3_apex;
        }
        self.nsec3_match(name)
    }

    fn origin_labels(&self) -> usize {
        self.zone.origin().label_count()
    }

    /// The NSEC3 node covering the hash of `name` (wrapping around), or
    /// matching it: one search of the zone's NSEC3 index.
    fn nsec3_cover(&self, name: NameRef<'_>) -> Option<NodeId> {
        self.zone.nsec3_covering(&self.nsec3_key(name)?)
    }

    /// Puts the NSEC3 RRset of `id` in the authority section, once.
    fn put_nsec3(&mut self, id: Option<NodeId>) -> Result<(), Full> {
        let Some(id) = id else {
            return Ok(());
        };
        if self.nsecs[..self.nnsecs].contains(&id) {
            return Ok(());
        }
        let node = self.zone.node(id);
        let Some(set) = node.rrset(Rtype::NSEC3) else {
            return Ok(());
        };
        self.put_rrset(
            lode_wire::message::Section::Authority,
            &node,
            node.owner(),
            0,
            set,
            set.ttl(),
            None,
        )?;
        if self.nnsecs < self.nsecs.len() {
            self.nsecs[self.nnsecs] = id;
            self.nnsecs += 1;
        }
        Ok(())
    }

    /// The next closer name of `name` below the encloser with `ce_labels` labels.
    fn next_closer(name: NameRef<'_>, ce_labels: usize) -> Option<NameBuf> {
        if name.label_count() <= ce_labels {
            return None;
        }
        suffix_of(name, ce_labels + 1)
    }

    /// Closest provable encloser proof for `name` (RFC 5155 §7.2.1): the
    /// NSEC3 matching the nearest ancestor that has one, and the NSEC3
    /// covering the next closer name (`name_cover`: the one covering
    /// `name` itself, already found).
    fn nsec3_closest_provable(
        &mut self,
        name: NameRef<'_>,
        name_cover: Option<NodeId>,
    ) -> Result<(), Full> {
        let origin_labels = self.origin_labels();
        let count = name.label_count();
        let mut labels = count;
        while labels > origin_labels {
            labels -= 1;
            let m = if labels == origin_labels {
                self.zone.apex_facts().nsec3_apex
            } else {
                let Some(anc) = suffix_of(name, labels) else {
                    return Ok(());
                };
                self.nsec3_match(anc.as_ref())
            };
            if let Some(m) = m {
                self.put_nsec3(Some(m))?;
                if labels + 1 == count {
                    self.put_nsec3(name_cover)?;
                } else if let Some(nc) = Self::next_closer(name, labels) {
                    let c = self.nsec3_cover(nc.as_ref());
                    self.put_nsec3(c)?;
                }
                return Ok(());
            }
        }
        Ok(())
    }

    /// NODATA: the NSEC3 matching the node, or a closest provable encloser
    /// proof (opt-out); at a wildcard, then the closest encloser's too.
    /// The node's hash is searched once: its match, or the cover that
    /// proof needs.
    pub(crate) fn nsec3_nodata(&mut self, node: NodeId, synthesized: bool) -> Result<(), Full> {
        let node_view = self.zone.node(node);
        let owner = node_view.owner();
        let labels = owner.label_count();
        if labels == self.origin_labels() {
            let m = self.zone.apex_facts().nsec3_apex;
            self.put_nsec3(m)?;
        } else if let Some(key) = self.nsec3_key(owner) {
            match self.zone.nsec3_lookup(&key) {
                (Some(m), _) => self.put_nsec3(Some(m))?,
                (None, cover) => self.nsec3_closest_provable(owner, cover)?,
            }
        }
        if synthesized {
            if let Some(ce) = owner.parent() {
                let m = self.nsec3_match_in_zone(ce, labels - 1);
                self.put_nsec3(m)?;
            }
        }
        Ok(())
    }

    /// NXDOMAIN: closest encloser match, next closer cover, wildcard cover.
    /// A closest encloser without an NSEC3 (an empty non-terminal above
    /// nothing but insecure delegations, left out of an opt-out chain) is
    /// replaced by the closest provable encloser, the nearest ancestor
    /// with one (RFC 5155 §7.2.1; the proof then shows only that no
    /// signed name is there). At the apex, the match and the wildcard's
    /// cover are the zone's own (found once per version).
    pub(crate) fn nsec3_nxdomain(
        &mut self,
        closest_encloser: NodeId,
        name: NameRef<'_>,
    ) -> Result<(), Full> {
        let ce_node = self.zone.node(closest_encloser);
        let mut ce_labels = ce_node.owner().label_count();
        let mut m = self.nsec3_match_in_zone(ce_node.owner(), ce_labels);
        let origin_labels = self.origin_labels();
        let mut provable = None;
        while m.is_none() && ce_labels > origin_labels {
            ce_labels -= 1;
            provable = suffix_of(name, ce_labels);
            m = provable
                .as_ref()
                .and_then(|p| self.nsec3_match_in_zone(p.as_ref(), ce_labels));
        }
        self.put_nsec3(m)?;
        if let Some(nc) = Self::next_closer(name, ce_labels) {
            let c = self.nsec3_cover(nc.as_ref());
            self.put_nsec3(c)?;
        }
        if ce_labels == origin_labels {
            let c = self.zone.apex_facts().nsec3_apex_wildcard;
            self.put_nsec3(c)?;
        } else {
            let ce = provable.as_ref().map_or(ce_node.owner(), |p| p.as_ref());
            if let Some(star) = crate::dnssec::prepend_star(ce) {
                let c = self.nsec3_cover(star.as_ref());
                self.put_nsec3(c)?;
            }
        }
        Ok(())
    }

    /// A referral without DS: the cut's NSEC3, or the opt-out proof.
    pub(crate) fn nsec3_no_ds(&mut self, cut: NodeId) -> Result<(), Full> {
        self.nsec3_nodata(cut, false)
    }

    /// For a wildcard expansion of `name` below `ce_labels` labels: the NSEC3
    /// covering the next closer name.
    pub(crate) fn nsec3_wildcard(
        &mut self,
        name: NameRef<'_>,
        ce_labels: usize,
    ) -> Result<(), Full> {
        if let Some(nc) = Self::next_closer(name, ce_labels) {
            let c = self.nsec3_cover(nc.as_ref());
            self.put_nsec3(c)?;
        }
        Ok(())
    }
}
