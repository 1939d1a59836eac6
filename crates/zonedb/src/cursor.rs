//! A walk over every node of a zone version in canonical order that decodes
//! each node into buffers of its own, for whole-zone readers (AXFR out).
//!
//! [`Zone::node`] makes a fresh view per id: the entry is decoded again, a
//! blob stored as a difference is rebuilt into a value returned on the
//! stack, and the owner is spelled from its key from scratch. Walking 20 M
//! nodes that way copies kilobytes per node. The cursor keeps one blob
//! buffer and spells each owner right-aligned in one name buffer: the labels
//! a node shares with the one before it (in canonical order, a shared key
//! prefix is a shared name suffix) are already in place, and only the others
//! are written.

use lode_wire::name::{MAX_KEY_LEN, MAX_LABEL_LEN, MAX_NAME_LEN};
use lode_wire::short::{common_prefix, copy};
use lode_wire::{NameBuf, NameRef};

use crate::blob::{self, RRsets};
use crate::delta::NodeIds;
use crate::store::{Blob, BlockAt, EntryKey, HASHED_KEY, INLINE};
use crate::{NodeFlags, NodeId, Zone};

/// Where the current node's blob is.
#[derive(Clone, Copy)]
enum Src<'z> {
    /// In the store or the delta.
    Stored(&'z [u8]),
    /// Rebuilt into the cursor's buffer, this long.
    Built(usize),
}

/// See the module note. Made by [`Zone::cursor`].
pub struct NodeCursor<'z> {
    zone: &'z Zone,
    ids: NodeIds<'z>,
    id: Option<NodeId>,
    src: Src<'z>,
    buf: [u8; INLINE],
    /// The store's block the last node came from.
    block: Option<BlockAt<'z>>,
    /// The current blob's head: flags, the owner's range if it holds one,
    /// where its RRsets start.
    flags: NodeFlags,
    owner: Option<(usize, usize)>,
    rrsets: usize,
    /// The current node's key, relative to the origin.
    key: [u8; MAX_KEY_LEN],
    /// The owner spelled from the key, in `name[start..]` (origin included).
    name: [u8; MAX_NAME_LEN],
    start: usize,
    /// The length of the key prefix whose labels `name` holds in place (0
    /// after a key that needed escapes decoded: nothing is reused then).
    spelled: usize,
    /// The current node's key is `key[..key_len]`.
    key_len: usize,
}

impl std::fmt::Debug for NodeCursor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeCursor")
            .field("zone", &self.zone.origin())
            .field("id", &self.id)
            .finish()
    }
}

impl Zone {
    /// A cursor before the first node (the apex).
    pub fn cursor(&self) -> NodeCursor<'_> {
        let origin = self.origin.as_ref().as_wire();
        let mut name = [0u8; MAX_NAME_LEN];
        let start = MAX_NAME_LEN - origin.len();
        name[start..].copy_from_slice(origin);
        NodeCursor {
            zone: self,
            ids: self.ids_from(&[]),
            id: None,
            src: Src::Stored(&[]),
            buf: [0; INLINE],
            block: None,
            flags: NodeFlags::default(),
            owner: None,
            rrsets: 0,
            key: [0; MAX_KEY_LEN],
            name,
            start,
            spelled: 0,
            key_len: 0,
        }
    }
}

impl<'z> NodeCursor<'z> {
    /// Moves to the next node whose flags `want` accepts; its id, or None
    /// once every node was passed.
    pub fn advance(&mut self, mut want: impl FnMut(NodeFlags) -> bool) -> Option<NodeId> {
        self.id = None;
        while let Some(id) = self.ids.next() {
            let Some(key) = self.load(id) else {
                continue;
            };
            if want(self.flags) {
                self.spell(key);
                self.id = Some(id);
                return Some(id);
            }
        }
        None
    }

    /// Back before the first node (the spelled labels stay for reuse).
    pub fn restart(&mut self) {
        self.ids = self.zone.ids_from(&[]);
        self.id = None;
    }

    /// The current node's id (None before the first `advance` and after the last).
    pub fn id(&self) -> Option<NodeId> {
        self.id
    }

    fn bytes(&self) -> &[u8] {
        match self.src {
            Src::Stored(b) => b,
            Src::Built(n) => &self.buf[..n],
        }
    }

    /// Reads the head of the blob just loaded (an unreadable one reads as
    /// an empty node, as [`crate::Node`] does).
    fn parse_head(&mut self) {
        let bytes = self.bytes();
        let (flags, owner, rrsets) = match blob::head(bytes) {
            Some(h) => {
                let rrsets = bytes.len() - h.rrsets.len();
                let owner = h.owner.map(|o| (rrsets - o.wire_len(), rrsets));
                (h.flags, owner, rrsets)
            }
            None => (NodeFlags::default(), None, bytes.len()),
        };
        (self.flags, self.owner, self.rrsets) = (flags, owner, rrsets);
    }

    /// The current node's flags.
    pub fn flags(&self) -> NodeFlags {
        self.flags
    }

    /// The current node's owner as first written in the zone (as
    /// [`crate::Node::owner`]).
    pub fn owner(&self) -> NameRef<'_> {
        match self.owner {
            Some((from, to)) => NameRef::from_spelled(&self.bytes()[from..to]),
            None => NameRef::from_spelled(&self.name[self.start..]),
        }
    }

    /// The current node's RRsets, sorted by type.
    pub fn rrsets(&self) -> RRsets<'_> {
        RRsets::new(&self.bytes()[self.rrsets..])
    }

    /// The current node's key (relative to the origin) and its blob's
    /// head, for a compaction, which writes both again; None when the
    /// blob is unreadable.
    pub(crate) fn key_and_head(&self) -> Option<(&[u8], blob::Head<'_>)> {
        Some((&self.key[..self.key_len], blob::head(self.bytes())?))
    }

    /// Decodes node `id`'s blob; its key.
    fn load(&mut self, id: NodeId) -> Option<EntryKey<'z>> {
        let zone: &'z Zone = self.zone;
        if let Some((key, b)) = zone.delta_entry(id) {
            self.src = Src::Stored(b);
            self.parse_head();
            return Some(EntryKey::whole(key));
        }
        let (key, blob) = zone
            .store
            .entry_into(id.0, &mut self.block, &mut self.buf)?;
        self.src = match blob {
            Blob::Stored(b) => Src::Stored(b),
            Blob::Built(n) => Src::Built(n),
        };
        self.parse_head();
        Some(key)
    }

    /// Spells the owner of `key` into `name`, reusing the labels it shares
    /// with the key spelled before.
    fn spell(&mut self, key: EntryKey<'_>) {
        let n = key.len();
        let origin = MAX_NAME_LEN - self.zone.origin.as_ref().wire_len();
        // The shared prefix, back to a label's end.
        let mut common = lcp_parts(&self.key[..self.spelled], key);
        while common > 0 && self.key[common - 1] != 0 {
            common -= 1;
        }
        if n > MAX_KEY_LEN {
            self.key_len = 0;
            self.fallback(0);
            return;
        }
        self.key_len = n;
        // Only the bytes after the shared prefix change.
        let mut buf = [0u8; HASHED_KEY];
        let (p, s) = (key.prefix, key.suffix.bytes(&mut buf));
        if common < p.len() {
            copy(&mut self.key[common..], &p[common..]);
            copy(&mut self.key[p.len()..], s);
        } else {
            copy(&mut self.key[common..], &s[common - p.len()..]);
        }
        let rel = &self.key[..n];
        let mut plain = n <= origin && rel.last().is_none_or(|&b| b == 0);
        // Each key label `bytes 0` is the wire label `len bytes`, the same
        // length: key[..k] spells name[origin - k..origin].
        let mut from = common;
        for (i, &b) in rel.iter().enumerate().skip(common) {
            if !plain {
                break;
            }
            if b != 0 {
                // 1 starts an escaped octet: spelled the general way.
                plain &= b != 1;
                continue;
            }
            let len = i - from;
            if len == 0 || len > MAX_LABEL_LEN {
                plain = false;
                break;
            }
            let at = origin - i - 1;
            self.name[at] = len as u8;
            copy(&mut self.name[at + 1..], &rel[from..i]);
            from = i + 1;
        }
        if plain {
            self.start = origin - n;
            self.spelled = n;
        } else {
            self.fallback(n);
        }
    }

    /// Spells the owner of `key[..n]` the general way (escaped octets).
    fn fallback(&mut self, n: usize) {
        let mut owner = NameBuf::new();
        let origin = self.zone.origin.as_ref();
        if owner.set_from_key(&self.key[..n], origin).is_err() {
            owner.set(origin);
        }
        let w = owner.as_ref().as_wire();
        self.start = MAX_NAME_LEN - w.len();
        self.name[self.start..].copy_from_slice(w);
        self.spelled = 0;
    }
}

/// The length of the common prefix of `a` and the key in two parts.
fn lcp_parts(a: &[u8], key: EntryKey<'_>) -> usize {
    let c = common_prefix(a, key.prefix);
    if c < key.prefix.len() {
        return c;
    }
    let mut buf = [0u8; HASHED_KEY];
    c + common_prefix(&a[c..], key.suffix.bytes(&mut buf))
}
