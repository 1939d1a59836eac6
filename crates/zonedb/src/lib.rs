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
//! Storage is compact (`store.rs`): keys front-coded in blocks of 32 with a
//! dense array of block heads for the binary search, and each node's data
//! (flags, RRsets) serialised into one byte string (`blob.rs`) that is either
//! shared with identical nodes or stored as a difference from the first node
//! of its block. [`Zone::node`] returns a [`Node`] view, rebuilt on the stack
//! when it was stored as a difference; nothing on the lookup path allocates.
//! A built zone is written to disk and read back as it is (`snapshot.rs`):
//! the store's flat arrays, checksummed and checked entry by entry on reading.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod apex;
mod blob;
mod build;
mod changeset;
mod cowmap;
mod cursor;
mod delta;
mod mix;
mod nsec3;
mod ordered;
mod snapshot;
mod sorted;
mod sorted_feed;
mod store;
mod stream;
mod walk;
mod zoneset;

pub use apex::{ApexFacts, Nsec3Hashing};
pub use blob::{RRset, RRsets, Rdatas};
pub use build::{Problem, Severity, ZoneBuilder};
pub use changeset::{set_soa_serial, soa_serial, ApplyError, Changeset};
pub use cursor::NodeCursor;
pub use nsec3::{nsec3_key, Nsec3Key};
pub use ordered::OrderedBuilder;
pub use snapshot::SnapshotError;
pub use sorted::{SortedBuilder, DEFAULT_RUN_BUDGET};
pub use stream::StreamBuilder;
pub use zoneset::{ZoneGuard, ZoneSet, ZoneSlot};

use lode_wire::name::KeyBuf;
use lode_wire::{Class, Name, NameBuf, NameRef, Rtype};

use std::cell::OnceCell;

use store::{BlobRef, EntryKey, Search, Store};

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
    /// The node holds an NSEC3 RRset and nothing else but signatures.
    pub const NSEC3_ONLY: NodeFlags = NodeFlags(8);

    /// True if every flag in `other` is set.
    pub fn contains(self, other: NodeFlags) -> bool {
        self.0 & other.0 == other.0
    }
    fn insert(&mut self, other: NodeFlags) {
        self.0 |= other.0;
    }
}

/// A name in the zone with its RRsets (none for an empty non-terminal): a
/// view decoded from the store.
pub struct Node<'z> {
    id: NodeId,
    /// The key relative to the origin, and the origin.
    key: EntryKey<'z>,
    origin: NameRef<'z>,
    /// The owner spelled from the key, made on first use.
    owner: OnceCell<NameBuf>,
    blob: BlobRef<'z>,
}

impl Node<'_> {
    fn head(&self) -> blob::Head<'_> {
        blob::head(self.blob.bytes()).unwrap_or(blob::Head {
            flags: NodeFlags::default(),
            owner: None,
            rrsets: &[],
        })
    }
    /// The node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }
    /// The owner name as first written in the zone.
    pub fn owner(&self) -> NameRef<'_> {
        if let Some(o) = self.head().owner {
            return o;
        }
        self.owner
            .get_or_init(|| {
                let mut key = [0u8; lode_wire::name::MAX_KEY_LEN];
                let mut owner = NameBuf::new();
                let ok = self
                    .key
                    .write(&mut key)
                    .is_some_and(|n| owner.set_from_key(&key[..n], self.origin).is_ok());
                if !ok {
                    owner.set(self.origin);
                }
                owner
            })
            .as_ref()
    }
    /// The owner's canonical key below the origin (its key without the
    /// origin's: empty at the apex) written into `out`: its length. As
    /// the owner's `write_key` would give it, without spelling the owner.
    pub fn relative_key(&self, out: &mut [u8; lode_wire::name::MAX_KEY_LEN]) -> usize {
        self.key.write(out).unwrap_or(0)
    }
    /// The RRset of type `rtype`, if present.
    pub fn rrset(&self, rtype: Rtype) -> Option<RRset<'_>> {
        self.rrsets().find(|s| s.rtype() == rtype)
    }
    /// All RRsets, sorted by type.
    pub fn rrsets(&self) -> RRsets<'_> {
        RRsets::new(self.head().rrsets)
    }
    /// True for an empty non-terminal.
    pub fn is_empty_nonterminal(&self) -> bool {
        self.head().rrsets.is_empty()
    }
    /// Precomputed flags.
    pub fn flags(&self) -> NodeFlags {
        self.head().flags
    }
    /// True if this node is a zone cut (NS below the apex).
    pub fn is_delegation(&self) -> bool {
        self.flags().contains(NodeFlags::DELEGATION)
    }
    /// True when a zone cut or a DNAME above the node occludes it (glue):
    /// [`Zone::shadow`] is some, read from the node in hand.
    pub fn is_shadowed(&self) -> bool {
        blob::flags_and_shadow(self.blob.bytes()).is_some_and(|(_, d)| d != 0)
    }
}

impl std::fmt::Debug for Node<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("id", &self.id)
            .field("owner", &self.owner())
            .field("flags", &self.flags())
            .finish()
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

impl NodeId {
    /// Ids at or above this bit name entries of the version's delta.
    pub(crate) const DELTA: u32 = 1 << 31;
}

impl NodeId {
    /// The apex's id, in every zone.
    pub const APEX: NodeId = NodeId(0);
}

/// A zone's base buffers, kept (see [`Zone::base_memory`]).
#[derive(Clone)]
pub struct BaseMemory(std::sync::Arc<Store>);

impl BaseMemory {
    /// Where the buffers lie, as (address, length in bytes).
    pub fn regions(&self) -> [(usize, usize); 4] {
        let s = &self.0;
        [
            (s.heads.as_ptr() as usize, s.heads.len() * 16),
            (s.offs.as_ptr() as usize, s.offs.len() * 8),
            (s.data.as_ptr() as usize, s.data.len()),
            (s.raw.as_ptr() as usize, s.raw.len()),
        ]
    }
}

impl std::fmt::Debug for BaseMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BaseMemory")
            .field("bytes", &self.0.heap_bytes())
            .finish()
    }
}

/// One immutable version of a zone. A clone shares the base and the delta.
#[derive(Debug, Clone)]
pub struct Zone {
    origin: Name,
    class: Class,
    /// The origin's canonical key (stored keys are relative to it).
    origin_key: Box<[u8]>,
    /// The compact base, shared by every version built on it.
    store: std::sync::Arc<Store>,
    /// Changes since the base was built (empty for a freshly built zone).
    delta: delta::Delta,
    /// SOA TTL bounded by SOA MINIMUM (RFC 2308 §5).
    negative_ttl: u32,
    serial: u32,
    records: u64,
    rrsets: u64,
    /// Not to be answered from (a secondary's zone past its expiry, or not
    /// transferred yet): queries get SERVFAIL, as Knot answers them.
    expired: bool,
    /// A secondary's zone: when it expires without a refresh (Unix
    /// seconds). None for a primary's.
    expire_at: Option<u64>,
    /// What answers read of the apex, found when the version was made.
    apex: ApexFacts,
}

impl Zone {
    /// This version marked expired (or not): see [`Zone::is_expired`].
    pub fn with_expired(&self, expired: bool) -> Zone {
        Zone {
            expired,
            ..self.clone()
        }
    }
    /// This version with `at` as the time it expires without a refresh
    /// (Unix seconds; None: a primary's zone): see [`Zone::expire_at`].
    pub fn with_expire_at(&self, at: Option<u64>) -> Zone {
        Zone {
            expire_at: at,
            ..self.clone()
        }
    }
    /// When a secondary's zone expires without a refresh (Unix seconds),
    /// as the EDNS EXPIRE option tells (RFC 7314); None for a primary's
    /// (the SOA EXPIRE is told).
    pub fn expire_at(&self) -> Option<u64> {
        self.expire_at
    }
    /// True when the zone is not to be answered from: a secondary's zone
    /// whose expire timer ran out, or that was never transferred.
    pub fn is_expired(&self) -> bool {
        self.expired
    }
    /// What answers read of the apex (signed, NSEC3 hashing, the apex's
    /// NSEC3 proofs), found when this version was made.
    pub fn apex_facts(&self) -> &ApexFacts {
        &self.apex
    }
    /// This version with its apex facts found (every constructor ends so).
    pub(crate) fn settled(mut self) -> Zone {
        self.apex = ApexFacts::of(&self);
        self
    }
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
    /// An RRset of the apex, borrowed from the zone (the apex is the first
    /// entry of its block, so it is always stored whole).
    pub fn apex_rrset(&self, rtype: Rtype) -> Option<RRset<'_>> {
        if let Some((_, blob)) = self.delta.apex() {
            let sets = blob::head(blob).map_or(&[][..], |h| h.rrsets);
            return RRsets::new(sets).find(|s| s.rtype() == rtype);
        }
        let sets = match self.store.entry(0) {
            Some((_, BlobRef::Stored(b))) => blob::head(b).map_or(&[][..], |h| h.rrsets),
            _ => &[],
        };
        RRsets::new(sets).find(|s| s.rtype() == rtype)
    }
    /// The apex SOA RRset (a built zone always has one, checked in build
    /// and when a snapshot is read; an empty set otherwise).
    pub fn soa(&self) -> RRset<'_> {
        self.apex_rrset(Rtype::SOA).unwrap_or(RRset::EMPTY)
    }
    /// The apex SOA as one record (for NOTIFY, IXFR and transfer requests).
    pub fn soa_record(&self) -> lode_wire::Record {
        let soa = self.soa();
        lode_wire::Record {
            owner: self.origin.clone(),
            class: self.class,
            rtype: Rtype::SOA,
            ttl: soa.ttl(),
            rdata: soa.rdatas().next().unwrap_or_default().into(),
        }
    }
    /// Number of nodes (names, including empty non-terminals).
    pub fn node_count(&self) -> usize {
        (i64::from(self.store.len) + self.delta.node_diff()) as usize
    }
    /// Number of records.
    pub fn record_count(&self) -> u64 {
        self.records
    }
    /// Number of RRsets.
    pub fn rrset_count(&self) -> u64 {
        self.rrsets
    }
    /// Bytes of memory the zone's index and data take (kept as the delta
    /// changes: no walk).
    pub fn heap_bytes(&self) -> usize {
        self.store.heap_bytes() + self.delta.heap_bytes()
    }
    /// A hold on the zone's large buffers (its base's), for a caller that
    /// gives memory hints (e.g. huge pages) to the system: they stay where
    /// they are while it is kept, whatever becomes of the zone.
    pub fn base_memory(&self) -> BaseMemory {
        BaseMemory(self.store.clone())
    }
    /// All node ids in canonical order.
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.ids_from(&[])
    }
    /// The node ids after `id`, in canonical order.
    pub fn node_ids_after(&self, id: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        let mut key = [0u8; lode_wire::name::MAX_KEY_LEN];
        let n = self.node(id).key.write(&mut key).unwrap_or(0);
        self.ids_from(&key[..n]).skip_while(move |&i| i == id)
    }
    /// The node with this id (an empty node if the id is out of range).
    #[inline]
    pub fn node(&self, id: NodeId) -> Node<'_> {
        if let Some((key, blob)) = self.delta_entry(id) {
            return Node {
                id,
                key: EntryKey::whole(key),
                origin: self.origin.as_ref(),
                owner: OnceCell::new(),
                blob: BlobRef::Stored(blob),
            };
        }
        let (key, blob) = self
            .store
            .entry(id.0)
            .unwrap_or((EntryKey::default(), BlobRef::Stored(&[])));
        Node {
            id,
            key,
            origin: self.origin.as_ref(),
            owner: OnceCell::new(),
            blob,
        }
    }
    /// The apex's id.
    pub fn apex_id(&self) -> NodeId {
        NodeId(0)
    }
    /// The topmost strict ancestor of `id` that is a zone cut or a DNAME owner:
    /// when present, the node is occluded (RFC 2181 §6, RFC 6672 §2.4).
    pub fn shadow(&self, id: NodeId) -> Option<NodeId> {
        self.info(id).1
    }

    /// A node's flags and shadow (see [`Zone::shadow`]), read without
    /// decoding the node.
    #[inline]
    pub fn info(&self, id: NodeId) -> (NodeFlags, Option<NodeId>) {
        if !self.delta.is_empty() {
            return self.merged_info(id);
        }
        let Some((prefix, n)) = self.store.blob_prefix(id.0) else {
            return (NodeFlags::default(), None);
        };
        match blob::flags_and_shadow(&prefix[..n]) {
            Some((f, d)) => (f, (d != 0).then(|| NodeId(id.0.saturating_sub(d)))),
            None => (NodeFlags::default(), None),
        }
    }

    /// The key relative to the origin, if `key` is at or below it.
    fn relative<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        key.strip_prefix(&*self.origin_key)
    }

    /// Finds the node with exactly this canonical key.
    pub fn find_key(&self, key: &[u8]) -> Option<NodeId> {
        if !self.delta.is_empty() {
            return self.find_rel(self.relative(key)?);
        }
        match self.store.search(self.relative(key)?) {
            Search::Found(id) => Some(NodeId(id)),
            Search::Missing { .. } => None,
        }
    }

    /// Finds the node of exactly this name.
    pub fn find(&self, name: NameRef<'_>) -> Option<NodeId> {
        let mut key = KeyBuf::new();
        name.write_key(&mut key);
        self.find_key(key.as_slice())
    }

    /// Looks up `qname`, which must be at or below the origin (otherwise the
    /// apex is returned as closest encloser and predecessor).
    #[inline]
    pub fn lookup(&self, qname: NameRef<'_>) -> Lookup {
        let apex = Lookup::NotFound {
            closest_encloser: NodeId(0),
            predecessor: NodeId(0),
        };
        if qname.wire_len() < self.origin.as_wire().len() {
            return apex;
        }
        let mut key = KeyBuf::new();
        qname.write_key(&mut key);
        // The origin's labels come first in the key; only their length is
        // checked here (callers pass names below the origin).
        let Some(rel) = key.as_slice().get(self.origin_key.len()..) else {
            return apex;
        };
        if !self.delta.is_empty() {
            return self.merged_lookup(rel);
        }
        match self.store.search(rel) {
            Search::Found(id) => Lookup::Found(NodeId(id)),
            Search::Missing { pred, common } => {
                let ce = match self.store.search(&rel[..common]) {
                    Search::Found(id) => id,
                    Search::Missing { .. } => 0,
                };
                Lookup::NotFound {
                    closest_encloser: NodeId(ce),
                    predecessor: NodeId(pred),
                }
            }
        }
    }

    /// The `*` child of `parent`, if it exists.
    pub fn wildcard_child(&self, parent: NodeId) -> Option<NodeId> {
        if !self.delta.is_empty() {
            return self.merged_wildcard_child(parent);
        }
        let (key, blob) = self.store.entry(parent.0)?;
        if !blob::head(blob.bytes())?
            .flags
            .contains(NodeFlags::WILDCARD_CHILD)
        {
            return None;
        }
        let mut buf = [0u8; lode_wire::name::MAX_KEY_LEN + 2];
        let n = key.write(&mut buf)?;
        buf[n..n + 2].copy_from_slice(b"*\0");
        match self.store.search(&buf[..n + 2]) {
            Search::Found(id) => Some(NodeId(id)),
            Search::Missing { .. } => None,
        }
    }
}

#[cfg(test)]
mod delta_tests;
#[cfg(test)]
mod tests;
