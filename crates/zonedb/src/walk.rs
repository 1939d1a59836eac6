//! Walking a zone in canonical order, for NSEC proofs in the answer engine
//! and the NSEC chain of the signer.

use crate::{Node, NodeId, Zone};

impl Zone {
    /// The nearest node at or before `id` in canonical order for which `f`
    /// holds (e.g. the NSEC owner covering a name, skipping empty
    /// non-terminals and glue).
    pub fn rfind_from(&self, id: NodeId, f: impl Fn(&Node<'_>) -> bool) -> Option<NodeId> {
        if !self.delta.is_empty() {
            let mut cur = Some(id);
            while let Some(i) = cur {
                if f(&self.node(i)) {
                    return Some(i);
                }
                cur = self.prev_id(i);
            }
            return None;
        }
        let start = id.0.min(self.last_id().0);
        (0..=start).rev().map(NodeId).find(|&i| f(&self.node(i)))
    }

    /// The node just before `id` in canonical order (none before the apex).
    pub fn node_before(&self, id: NodeId) -> Option<NodeId> {
        if !self.delta.is_empty() {
            return self.prev_id(id);
        }
        id.0.checked_sub(1).map(NodeId)
    }

    /// The last node in canonical order.
    pub fn last_id(&self) -> NodeId {
        if !self.delta.is_empty() {
            return self.merged_last();
        }
        NodeId(self.store.len.saturating_sub(1))
    }

    /// True when the node is an NSEC3 owner (it holds NSEC3 and signatures
    /// only): read from its flags, without decoding it.
    fn is_nsec3(&self, id: NodeId) -> bool {
        self.info(id).0.contains(crate::NodeFlags::NSEC3_ONLY)
    }

    /// The child of the apex that `id` lies at or below (None for the
    /// apex), found from the node's key: its first label after the origin.
    fn top(&self, id: NodeId) -> Option<NodeId> {
        let mut key = [0u8; lode_wire::name::MAX_KEY_LEN];
        let o = self.origin_key.len();
        key[..o].copy_from_slice(&self.origin_key);
        let n = self.node(id).key.write(&mut key[o..])?;
        // Relative keys are labels from the top, each ended by a zero byte.
        let end = key[o..o + n].iter().position(|&b| b == 0)?;
        if end + 1 == n {
            return Some(id);
        }
        self.find_key(&key[..o + end + 1])
    }

    /// The NSEC3 node at or before `id` in canonical order, wrapping
    /// around (None when there is none). NSEC3 owners are children of the
    /// apex, so the subtrees of its other children are stepped over whole:
    /// the walk costs the number of the apex's children passed, not of
    /// every name below them (an ENUM zone's millions of names under a few
    /// digits).
    pub fn nsec3_at_or_before(&self, id: NodeId) -> Option<NodeId> {
        // On the stack: the answer engine walks here for NSEC3 proofs.
        let mut start = lode_wire::NameBuf::new();
        start.set(self.node(id).owner());
        let mut c = id;
        let mut wrapped = false;
        loop {
            if wrapped && self.node(c).owner().canonical_cmp(&start.as_ref()).is_le() {
                return None;
            }
            if self.is_nsec3(c) {
                return Some(c);
            }
            // The child of the apex above `c`, then the node before it (the
            // last of the previous child's subtree, or that child).
            let top = self.top(c).unwrap_or(c);
            c = match self.node_before(top) {
                Some(p) => p,
                None if wrapped => return None,
                None => {
                    wrapped = true;
                    self.last_id()
                }
            };
        }
    }

    /// The NSEC3 node after `id` in canonical order, wrapping around (None
    /// when there is none but `id`); subtrees stepped over as in
    /// [`Zone::nsec3_at_or_before`].
    pub fn nsec3_after(&self, id: NodeId) -> Option<NodeId> {
        let origin_labels = self.origin.as_ref().label_count();
        let start = self.node(id).owner().to_name();
        let mut c = id;
        let mut wrapped = false;
        loop {
            let n = match self.node_ids_after(c).next() {
                Some(n) => n,
                None if wrapped => return None,
                None => {
                    wrapped = true;
                    c = NodeId::APEX;
                    continue;
                }
            };
            let node = self.node(n);
            let owner = node.owner();
            if wrapped && owner.canonical_cmp(&start.as_ref()).is_ge() {
                return None;
            }
            if self.is_nsec3(n) {
                return Some(n);
            }
            c = n;
            // Inside a child's subtree: on from the subtree's last name.
            if owner.label_count() > origin_labels + 1 {
                let label = owner
                    .suffix(origin_labels + 1)
                    .and_then(|t| t.labels().next());
                if let Some(last) = label.and_then(|l| self.after_subtree(l)) {
                    if self.node(last).owner().canonical_cmp(&owner).is_gt() {
                        c = last;
                    }
                }
            }
        }
    }

    /// The last node of the subtree of the apex's child `label` (found by
    /// looking up the name just after the subtree: `label` + a zero byte).
    fn after_subtree(&self, label: &[u8]) -> Option<NodeId> {
        if label.len() >= 63 {
            return None;
        }
        let mut next = label.to_vec();
        next.push(0);
        let name = self.origin.prepend(&next).ok()?;
        match self.lookup(name.as_ref()) {
            crate::Lookup::NotFound { predecessor, .. } => Some(predecessor),
            crate::Lookup::Found(id) => self.node_before(id),
        }
    }
}
