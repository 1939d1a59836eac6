//! Walking a zone in canonical order, for NSEC proofs in the answer engine.

use crate::{Node, NodeId, Zone};

impl Zone {
    /// The nearest node at or before `id` in canonical order for which `f`
    /// holds (e.g. the NSEC owner covering a name, skipping empty
    /// non-terminals and glue).
    pub fn rfind_from(&self, id: NodeId, f: impl Fn(&Node<'_>) -> bool) -> Option<NodeId> {
        let start = id.0.min(self.last_id().0);
        (0..=start).rev().map(NodeId).find(|&i| f(&self.node(i)))
    }

    /// The last node in canonical order.
    pub fn last_id(&self) -> NodeId {
        NodeId(self.store.len.saturating_sub(1))
    }
}
