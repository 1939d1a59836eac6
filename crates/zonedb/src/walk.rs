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
}
