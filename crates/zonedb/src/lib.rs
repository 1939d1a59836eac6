//! Immutable zone versions: a canonical-order name index over wire-format RRsets.
//!
//! ```text
//!  Record, Record, …  ──ZoneBuilder::add──▶ ZoneBuilder ──build (checks)──▶ Zone (immutable)
//!                                                                       │
//!  ZoneSet { zones by origin } ◀────────────────────────────────────────┘
//!     find_zone(qname) → most specific Zone
//!     Zone::lookup(qname) → Found(node) | NotFound { closest encloser, predecessor }
//! ```
//!
//! Nodes are kept sorted by canonical key (see `lode_wire::name`), so the index
//! order is the DNSSEC canonical order. Every ancestor of an owner name between
//! it and the apex is present (empty non-terminals are nodes without RRsets), so
//! the closest encloser of a missing name is the longest common ancestor of the
//! name and its predecessor: the negative path is one ordered search plus one
//! exact search.
//!
//! Each node carries precomputed facts the answer engine needs: whether it is a
//! zone cut (NS below the apex) or owns a DNAME, whether a `*` child exists, and
//! the topmost strict ancestor that is a cut or a DNAME owner (the node is then
//! occluded: only reachable as glue).
//!
//! This is the plain representation: correct and simple. The compact store of
//! a later issue keeps the same lookups behind the same API.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod build;
mod walk;
mod zoneset;

pub use build::{Problem, Severity, ZoneBuilder};
pub use zoneset::ZoneSet;

use lode_wire::name::KeyBuf;
use lode_wire::{Class, Name, NameRef, Rtype};

/// No shadowing ancestor.
const NONE: u32 = u32::MAX;

/// One RRset: records with the same owner, class and type.
#[derive(Debug, Clone)]
pub struct RRset {
    rtype: Rtype,
    ttl: u32,
    /// RDATA in wire form (uncompressed), in canonical order, no duplicates.
    rdatas: Vec<Box<[u8]>>,
}

impl RRset {
    /// The type.
    pub fn rtype(&self) -> Rtype {
        self.rtype
    }
    /// The TTL.
    pub fn ttl(&self) -> u32 {
        self.ttl
    }
    /// Number of records.
    pub fn len(&self) -> usize {
        self.rdatas.len()
    }
    /// True if there are no records (never for a stored RRset).
    pub fn is_empty(&self) -> bool {
        self.rdatas.is_empty()
    }
    /// The RDATAs in wire form, canonical order.
    pub fn rdatas(&self) -> impl ExactSizeIterator<Item = &[u8]> + Clone {
        self.rdatas.iter().map(|r| &**r)
    }
    /// The first RDATA (SOA, CNAME and DNAME sets have exactly one).
    pub fn first(&self) -> &[u8] {
        &self.rdatas[0]
    }
}

/// Flags precomputed per node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeFlags(u8);

impl NodeFlags {
    /// The node is a zone cut: it has NS and is not the apex.
    pub const DELEGATION: NodeFlags = NodeFlags(1);
    /// The node owns a DNAME.
    pub const DNAME: NodeFlags = NodeFlags(2);
    /// A child named `*` exists.
    pub const WILDCARD_CHILD: NodeFlags = NodeFlags(4);

    /// True if every flag in `other` is set.
    pub fn contains(self, other: NodeFlags) -> bool {
        self.0 & other.0 == other.0
    }
    fn insert(&mut self, other: NodeFlags) {
        self.0 |= other.0;
    }
}

/// A name in the zone, with its RRsets (none for an empty non-terminal).
#[derive(Debug, Clone)]
pub struct Node {
    key: Box<[u8]>,
    owner: Name,
    rrsets: Vec<RRset>,
    flags: NodeFlags,
    /// Index of the topmost strict ancestor that is a cut or owns a DNAME.
    shadow: u32,
}

impl Node {
    /// The owner name as first written in the zone.
    pub fn owner(&self) -> NameRef<'_> {
        self.owner.as_ref()
    }
    /// The canonical key.
    pub fn key(&self) -> &[u8] {
        &self.key
    }
    /// The RRset of type `rtype`, if present.
    pub fn rrset(&self, rtype: Rtype) -> Option<&RRset> {
        self.rrsets.iter().find(|s| s.rtype == rtype)
    }
    /// All RRsets, sorted by type.
    pub fn rrsets(&self) -> &[RRset] {
        &self.rrsets
    }
    /// True for an empty non-terminal.
    pub fn is_empty_nonterminal(&self) -> bool {
        self.rrsets.is_empty()
    }
    /// Precomputed flags.
    pub fn flags(&self) -> NodeFlags {
        self.flags
    }
    /// True if this node is a zone cut (NS below the apex).
    pub fn is_delegation(&self) -> bool {
        self.flags.contains(NodeFlags::DELEGATION)
    }
}

/// The result of looking a name up in one zone.
#[derive(Debug, Clone, Copy)]
pub enum Lookup {
    /// The name exists (possibly as an empty non-terminal).
    Found(NodeId),
    /// The name does not exist.
    NotFound {
        /// The closest existing ancestor (RFC 4592 §3.3.1).
        closest_encloser: NodeId,
        /// The last existing name before it in canonical order (NSEC owner).
        predecessor: NodeId,
    },
}

/// Index of a node inside one zone version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct NodeId(u32);

/// One immutable version of a zone.
#[derive(Debug)]
pub struct Zone {
    origin: Name,
    class: Class,
    /// Sorted by key; index 0 is the apex.
    nodes: Vec<Node>,
    /// SOA TTL bounded by SOA MINIMUM (RFC 2308 §5).
    negative_ttl: u32,
    serial: u32,
}

impl Zone {
    /// The zone's origin (apex name).
    pub fn origin(&self) -> NameRef<'_> {
        self.origin.as_ref()
    }
    /// The class.
    pub fn class(&self) -> Class {
        self.class
    }
    /// The SOA serial.
    pub fn serial(&self) -> u32 {
        self.serial
    }
    /// TTL for negative answers: min(SOA TTL, SOA MINIMUM) (RFC 2308 §5).
    pub fn negative_ttl(&self) -> u32 {
        self.negative_ttl
    }
    /// The apex node.
    pub fn apex(&self) -> &Node {
        &self.nodes[0]
    }
    /// The apex SOA RRset (always present in a built zone).
    pub fn soa(&self) -> &RRset {
        // A built zone always has exactly one SOA at the apex (checked in build).
        self.nodes[0]
            .rrset(Rtype::SOA)
            .expect("built zones have an apex SOA")
    }
    /// Number of nodes (names, including empty non-terminals).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }
    /// Number of records.
    pub fn record_count(&self) -> usize {
        self.nodes
            .iter()
            .flat_map(|n| n.rrsets.iter())
            .map(|s| s.rdatas.len())
            .sum()
    }
    /// All nodes in canonical order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }
    /// The node with this id.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0 as usize]
    }
    /// The apex's id.
    pub fn apex_id(&self) -> NodeId {
        NodeId(0)
    }
    /// The topmost strict ancestor of `id` that is a zone cut or a DNAME owner:
    /// when present, the node is occluded (RFC 2181 §6, RFC 6672 §2.4).
    pub fn shadow(&self, id: NodeId) -> Option<NodeId> {
        let s = self.nodes[id.0 as usize].shadow;
        (s != NONE).then_some(NodeId(s))
    }

    fn search(&self, key: &[u8]) -> Result<usize, usize> {
        self.nodes.binary_search_by(|n| (*n.key).cmp(key))
    }

    /// Finds the node with exactly this canonical key.
    pub fn find_key(&self, key: &[u8]) -> Option<NodeId> {
        self.search(key).ok().map(|i| NodeId(i as u32))
    }

    /// Finds the node of exactly this name.
    pub fn find(&self, name: NameRef<'_>) -> Option<NodeId> {
        let mut key = KeyBuf::new();
        name.write_key(&mut key);
        self.find_key(key.as_slice())
    }

    /// Looks up `qname`, which must be at or below the origin.
    pub fn lookup(&self, qname: NameRef<'_>) -> Lookup {
        let mut key = KeyBuf::new();
        qname.write_key(&mut key);
        let key = key.as_slice();
        match self.search(key) {
            Ok(i) => Lookup::Found(NodeId(i as u32)),
            Err(i) => {
                // i > 0: the apex sorts before every name below it.
                let pred = i.saturating_sub(1);
                let pkey = &self.nodes[pred].key;
                // Longest common prefix of whole labels (each label ends with 0).
                let mut common = 0;
                for (j, (a, b)) in key.iter().zip(pkey.iter()).enumerate() {
                    if a != b {
                        break;
                    }
                    if *a == 0 {
                        common = j + 1;
                    }
                }
                let ce = self
                    .search(&key[..common])
                    .map(|c| NodeId(c as u32))
                    .unwrap_or(NodeId(0));
                Lookup::NotFound {
                    closest_encloser: ce,
                    predecessor: NodeId(pred as u32),
                }
            }
        }
    }

    /// The `*` child of `parent`, if it exists.
    pub fn wildcard_child(&self, parent: NodeId) -> Option<NodeId> {
        let p = &self.nodes[parent.0 as usize];
        if !p.flags.contains(NodeFlags::WILDCARD_CHILD) {
            return None;
        }
        let mut buf = [0u8; lode_wire::name::MAX_KEY_LEN + 2];
        let k = &p.key;
        buf[..k.len()].copy_from_slice(k);
        buf[k.len()] = b'*';
        buf[k.len() + 1] = 0;
        self.find_key(&buf[..k.len() + 2])
    }
}

#[cfg(test)]
mod tests;
