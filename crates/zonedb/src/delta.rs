//! A zone version's changes since its compact base: the delta, merged at
//! lookup, and applying a [`Changeset`] to make the next version.
//!
//! ```text
//!  Zone = base (Arc<Store>, shared, immutable)  +  delta (shared chunks, copied on write)
//!                                                   nodes: rel key → blob   (new or changed names)
//!                                                   gone:  rel key          (base names removed)
//!  lookup(key):  delta.nodes ─ hit ─▶ delta node
//!                delta.gone  ─ hit ─▶ missing
//!                base        ─────────▶ base node
//!  predecessor:  max(base predecessor not gone nor overridden, delta predecessor)
//! ```
//!
//! Invariants kept by [`Zone::apply`], so readers need no more than the above:
//! the merged tree holds every ancestor of every name (empty non-terminals
//! appear and disappear with their descendants); a base node whose flags or
//! shadow would change is rewritten into the delta, so a base node read
//! through the merged view is always current; and a delta blob stores its
//! shadow as the shadowing ancestor's label count plus one (a base blob
//! stores an id distance, meaningless across versions). The apex is always
//! `NodeId(0)`, wherever its current data lives. Node ids are valid within
//! one version only. Nothing here allocates on the reading side.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use lode_wire::name::MAX_KEY_LEN;
use lode_wire::{NameBuf, Record, Rtype};

use crate::blob::{self, RRsetIn};
use crate::cowmap::{CowMap, Pos};
use crate::store::Search;
use crate::{ApplyError, Changeset, Lookup, Node, NodeFlags, NodeId, Problem, Severity, Zone};

/// The changes of a version since its base (see the module note).
#[derive(Debug, Clone, Default)]
pub(crate) struct Delta {
    nodes: CowMap<Arc<[u8]>>,
    gone: CowMap<()>,
    /// The keys of the hashed owners among `nodes` (`nsec3.rs`); made by
    /// the first (an empty map allocates: none for most zones).
    nsec3: Option<CowMap<()>>,
    /// Names added minus names removed, against the base.
    node_diff: i64,
    /// The bytes of the blobs in `nodes`, kept as they change.
    blob_bytes: usize,
}

impl Delta {
    /// True when the version is its base.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.gone.is_empty()
    }
    /// The apex's blob when the apex changed.
    pub fn apex(&self) -> Option<(Pos, &[u8])> {
        let p = self.nodes.first()?;
        let (k, b) = self.nodes.at(p)?;
        k.is_empty().then_some((p, &**b))
    }
    /// Names added minus names removed.
    pub fn node_diff(&self) -> i64 {
        self.node_diff
    }
    /// Entries held (changed names and removed ones).
    pub fn len(&self) -> usize {
        self.nodes.len() + self.gone.len()
    }
    /// Bytes of memory the delta holds.
    pub fn heap_bytes(&self) -> usize {
        self.nodes.heap_bytes()
            + self.blob_bytes
            + self.gone.heap_bytes()
            + self.nsec3.as_ref().map_or(0, |m| m.heap_bytes())
    }
    /// The blob bytes as kept, and as a walk over the delta finds them.
    #[cfg(test)]
    pub fn blob_bytes_kept_and_walked(&self) -> (usize, usize) {
        let walked = self.nodes.iter().map(|(_, b)| b.len()).sum();
        (self.blob_bytes, walked)
    }
    /// The key of the last hashed owner at or before `key`.
    pub fn nsec3_at_or_before(&self, key: &[u8]) -> Option<&[u8]> {
        let map = self.nsec3.as_ref()?;
        let p = match map.get(key) {
            Some((p, _)) => p,
            None => map.before(key)?,
        };
        map.at(p).map(|(k, _)| k)
    }
}

fn pos_id(p: Pos) -> NodeId {
    NodeId(NodeId::DELTA | (p.chunk << 8) | p.at)
}

fn id_pos(id: NodeId) -> Pos {
    let v = id.0 & !NodeId::DELTA;
    Pos {
        chunk: v >> 8,
        at: v & 0xFF,
    }
}

/// Length of the longest run of whole labels `a` and `b` share.
fn common_labels(a: &[u8], b: &[u8]) -> usize {
    let mut common = 0;
    for (j, (x, y)) in a.iter().zip(b).enumerate() {
        if x != y {
            break;
        }
        if *x == 0 {
            common = j + 1;
        }
    }
    common
}

/// The key of the first `labels` labels of `key`.
fn label_prefix(key: &[u8], labels: usize) -> &[u8] {
    if labels == 0 {
        return &[];
    }
    let mut seen = 0;
    for (j, &b) in key.iter().enumerate() {
        if b == 0 {
            seen += 1;
            if seen == labels {
                return &key[..=j];
            }
        }
    }
    key
}

/// The proper ancestors of `key` (the apex, `[]`, first).
fn ancestors(key: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::once(&key[..0]).chain(
        key.iter()
            .enumerate()
            .filter(move |&(j, &b)| b == 0 && j + 1 < key.len())
            .map(move |(j, _)| &key[..=j]),
    )
}

impl Zone {
    /// The delta entry an id names: a delta id, or the apex when it changed.
    #[inline]
    pub(crate) fn delta_entry(&self, id: NodeId) -> Option<(&[u8], &[u8])> {
        if id.0 & NodeId::DELTA != 0 {
            let (k, b) = self.delta.nodes.at(id_pos(id))?;
            return Some((k, &**b));
        }
        if id.0 == 0 {
            return self.delta.apex().map(|(_, b)| (&[][..], b));
        }
        None
    }

    /// The id of a delta position (the apex is always 0).
    fn delta_id(&self, p: Pos) -> NodeId {
        match self.delta.nodes.at(p) {
            Some((&[], _)) => NodeId(0),
            _ => pos_id(p),
        }
    }

    /// A base node's key, written into `buf`.
    pub(crate) fn base_key<'b>(&self, id: u32, buf: &'b mut [u8; MAX_KEY_LEN]) -> &'b [u8] {
        let n = self
            .store
            .entry_key(id)
            .and_then(|k| k.write(&mut buf[..]))
            .unwrap_or(0);
        &buf[..n]
    }

    /// Any node's key (relative), written into `buf`.
    pub(crate) fn key_of<'b>(&self, id: NodeId, buf: &'b mut [u8; MAX_KEY_LEN]) -> &'b [u8] {
        match self.delta_entry(id) {
            Some((k, _)) => {
                let n = k.len().min(MAX_KEY_LEN);
                buf[..n].copy_from_slice(&k[..n]);
                &buf[..n]
            }
            None => self.base_key(id.0, buf),
        }
    }

    /// True when the base node `id` is neither removed nor changed.
    pub(crate) fn base_current(&self, id: u32) -> bool {
        let mut buf = [0u8; MAX_KEY_LEN];
        let k = self.base_key(id, &mut buf);
        self.delta.gone.get(k).is_none() && self.delta.nodes.get(k).is_none()
    }

    /// The current node for the base node `id`: itself, its changed version,
    /// or none when it was removed.
    fn resolve_base(&self, id: u32) -> Option<NodeId> {
        let mut buf = [0u8; MAX_KEY_LEN];
        let k = self.base_key(id, &mut buf);
        if let Some((p, _)) = self.delta.nodes.get(k) {
            return Some(self.delta_id(p));
        }
        if self.delta.gone.get(k).is_some() {
            return None;
        }
        Some(NodeId(id))
    }

    /// The node with exactly this relative key, in the merged view.
    pub(crate) fn find_rel(&self, rel: &[u8]) -> Option<NodeId> {
        if let Some((p, _)) = self.delta.nodes.get(rel) {
            return Some(self.delta_id(p));
        }
        if self.delta.gone.get(rel).is_some() {
            return None;
        }
        match self.store.search(rel) {
            Search::Found(id) => Some(NodeId(id)),
            Search::Missing { .. } => None,
        }
    }

    /// The last node whose key sorts before `rel`, in the merged view.
    fn pred_rel(&self, rel: &[u8]) -> Option<NodeId> {
        let mut base = match self.store.search(rel) {
            Search::Found(id) => id.checked_sub(1),
            Search::Missing { pred, .. } => Some(pred),
        };
        while let Some(b) = base {
            if self.base_current(b) {
                break;
            }
            base = b.checked_sub(1);
        }
        let delta = self.delta.nodes.before(rel);
        match (base, delta) {
            (None, None) => None,
            (Some(b), None) => Some(NodeId(b)),
            (None, Some(p)) => Some(self.delta_id(p)),
            (Some(b), Some(p)) => {
                let mut buf = [0u8; MAX_KEY_LEN];
                let bk = self.base_key(b, &mut buf);
                let dk = self.delta.nodes.at(p).map_or(&[][..], |(k, _)| k);
                if dk >= bk {
                    Some(self.delta_id(p))
                } else {
                    Some(NodeId(b))
                }
            }
        }
    }

    /// The first node whose key sorts after `rel`, in the merged view.
    fn succ_rel(&self, rel: &[u8]) -> Option<NodeId> {
        let mut base = match self.store.search(rel) {
            Search::Found(id) => id + 1,
            Search::Missing { pred, .. } => pred + 1,
        };
        while base < self.store.len && !self.base_current(base) {
            base += 1;
        }
        let base = (base < self.store.len).then_some(base);
        let delta = self.delta.nodes.after(rel);
        match (base, delta) {
            (None, None) => None,
            (Some(b), None) => Some(NodeId(b)),
            (None, Some(p)) => Some(self.delta_id(p)),
            (Some(b), Some(p)) => {
                let mut buf = [0u8; MAX_KEY_LEN];
                let bk = self.base_key(b, &mut buf);
                let dk = self.delta.nodes.at(p).map_or(&[][..], |(k, _)| k);
                if dk <= bk {
                    Some(self.delta_id(p))
                } else {
                    Some(NodeId(b))
                }
            }
        }
    }

    /// [`Zone::lookup`] with a delta.
    pub(crate) fn merged_lookup(&self, rel: &[u8]) -> Lookup {
        if let Some(id) = self.find_rel(rel) {
            return Lookup::Found(id);
        }
        let pred = self.pred_rel(rel).unwrap_or(NodeId(0));
        let mut buf = [0u8; MAX_KEY_LEN];
        let pk = self.key_of(pred, &mut buf);
        let common = common_labels(rel, pk);
        let ce = self.find_rel(&rel[..common]).unwrap_or(NodeId(0));
        Lookup::NotFound {
            closest_encloser: ce,
            predecessor: pred,
        }
    }

    /// [`Zone::info`] with a delta.
    pub(crate) fn merged_info(&self, id: NodeId) -> (NodeFlags, Option<NodeId>) {
        if let Some((key, blob)) = self.delta_entry(id) {
            let Some((f, d)) = blob::flags_and_shadow(blob) else {
                return (NodeFlags::default(), None);
            };
            let shadow = (d != 0)
                .then(|| self.find_rel(label_prefix(key, d as usize - 1)))
                .flatten();
            return (f, shadow);
        }
        let Some((prefix, n)) = self.store.blob_prefix(id.0) else {
            return (NodeFlags::default(), None);
        };
        match blob::flags_and_shadow(&prefix[..n]) {
            Some((f, 0)) => (f, None),
            Some((f, d)) => (f, self.resolve_base(id.0.saturating_sub(d))),
            None => (NodeFlags::default(), None),
        }
    }

    /// [`Zone::wildcard_child`] with a delta.
    pub(crate) fn merged_wildcard_child(&self, parent: NodeId) -> Option<NodeId> {
        if !self
            .merged_info(parent)
            .0
            .contains(NodeFlags::WILDCARD_CHILD)
        {
            return None;
        }
        let mut buf = [0u8; MAX_KEY_LEN];
        let n = self.key_of(parent, &mut buf).len();
        let mut child = [0u8; MAX_KEY_LEN + 2];
        child[..n].copy_from_slice(&buf[..n]);
        child[n..n + 2].copy_from_slice(b"*\0");
        self.find_rel(&child[..n + 2])
    }

    /// The node before `id` in canonical order.
    pub(crate) fn prev_id(&self, id: NodeId) -> Option<NodeId> {
        let mut buf = [0u8; MAX_KEY_LEN];
        let n = self.key_of(id, &mut buf).len();
        let key = buf;
        self.pred_rel(&key[..n])
    }

    /// The last node in canonical order, with a delta.
    pub(crate) fn merged_last(&self) -> NodeId {
        let mut base = self.store.len.checked_sub(1);
        while let Some(b) = base {
            if self.base_current(b) {
                break;
            }
            base = b.checked_sub(1);
        }
        let delta = self.delta.nodes.last();
        match (base, delta) {
            (Some(b), Some(p)) => {
                let mut buf = [0u8; MAX_KEY_LEN];
                let bk = self.base_key(b, &mut buf);
                let dk = self.delta.nodes.at(p).map_or(&[][..], |(k, _)| k);
                if dk >= bk {
                    self.delta_id(p)
                } else {
                    NodeId(b)
                }
            }
            (Some(b), None) => NodeId(b),
            (None, Some(p)) => self.delta_id(p),
            (None, None) => NodeId(0),
        }
    }

    /// Node ids in canonical order from the first key ≥ `start`.
    pub(crate) fn ids_from(&self, start: &[u8]) -> NodeIds<'_> {
        let base = match self.store.search(start) {
            Search::Found(id) => id,
            Search::Missing { pred, .. } => {
                if start.is_empty() {
                    0
                } else {
                    pred + 1
                }
            }
        };
        NodeIds {
            zone: self,
            base,
            delta: self.delta.nodes.at_or_after(start),
            gone: self.delta.gone.at_or_after(start),
        }
    }

    /// Entries in the delta (changed and removed names): what compaction
    /// would fold into a new base.
    pub fn delta_len(&self) -> usize {
        self.delta.len()
    }

    /// The version's contents in a new compact base, with an empty delta
    /// (the same store a fresh build of these records makes). Streams the
    /// merged nodes in order twice: first for the fingerprints of their
    /// blobs (which repeat), then into the new store. Each blob keeps its
    /// encoded RRsets and gets its shadow as an id distance again; nothing
    /// is decoded into records and no blob is held beyond the one being
    /// written, so the peak is this version, the new store and 8 bytes a
    /// name of fingerprints.
    pub fn compact(&self) -> Result<Zone, ApplyError> {
        if self.delta.is_empty() {
            return Ok(self.clone());
        }
        self.relaid(None).ok_or(ApplyError::Invalid(Vec::new()))
    }

    /// This zone with the nodes of `children` laid in, in one compact base
    /// as [`Zone::compact`] lays one out: `children` holds names one label
    /// below the apex that are not in this zone, none of them `*` (its
    /// apex, empty, is left out), so the flags of this zone's nodes stay
    /// as they are and the walk finds the shadows. A secondary's NSEC3 chain sent after all other names is built
    /// apart and laid in so (`stream.rs`). None when a name of `children`
    /// is not such a name.
    pub(crate) fn with_apex_children(&self, children: &Zone) -> Option<Zone> {
        self.relaid(Some(children))
    }

    /// The new compact base of [`Zone::compact`] and
    /// [`Zone::with_apex_children`].
    fn relaid(&self, children: Option<&Zone>) -> Option<Zone> {
        // (Nodes: at most those of the base, the delta's entries and the
        // children.)
        let more = children.map_or(0, Zone::node_count);
        let mut fingerprints =
            Vec::with_capacity(self.store.len as usize + self.delta.len() + more);
        self.each_blob(children, |_, blob| {
            fingerprints.push(crate::store::fingerprint(blob))
        })?;
        let mut sb = crate::store::StoreBuilder::new(crate::build::repeats(fingerprints));
        self.each_blob(children, |key, blob| sb.push(key, blob))?;
        let (records, rrsets) = children.map_or((0, 0), |c| (c.records, c.rrsets));
        Some(
            Zone {
                origin: self.origin.clone(),
                class: self.class,
                origin_key: self.origin_key.clone(),
                store: Arc::new(sb.finish()),
                delta: Delta::default(),
                negative_ttl: self.negative_ttl,
                serial: self.serial,
                records: self.records + records,
                rrsets: self.rrsets + rrsets,
                expired: self.expired,
                expire_at: self.expire_at,
                apex: crate::ApexFacts::default(),
            }
            .settled(),
        )
    }

    /// Calls `f` with each node's key and its blob as a compact base holds
    /// it (the shadow an id distance to the delegation or DNAME above), in
    /// canonical order: this zone's nodes and those of `children` but its
    /// apex (see [`Zone::with_apex_children`]). Walks with a
    /// [`crate::NodeCursor`] per zone: each store block's keys are decoded
    /// once, not once per node. None when a node cannot be read or a child
    /// is not one.
    fn each_blob(&self, children: Option<&Zone>, mut f: impl FnMut(&[u8], &[u8])) -> Option<()> {
        let cut = |f: NodeFlags| f.contains(NodeFlags::DELEGATION) || f.contains(NodeFlags::DNAME);
        let mut one = Vec::new();
        // The nodes before the current one whose keys prefix the previous
        // node's key (`prev`), by key length: position, cut or DNAME.
        let mut stack: Vec<(usize, u32, bool)> = Vec::new();
        let mut prev: Vec<u8> = Vec::new();
        let mut cursor = self.cursor();
        let mut on = cursor.advance(|_| true).is_some();
        let mut other = children.map(Zone::cursor);
        let mut other_on = false;
        if let Some(c) = &mut other {
            // Its apex, empty, is this zone's.
            c.advance(|_| true)?;
            if !c.key_and_head()?.1.rrsets.is_empty() {
                return None;
            }
            other_on = c.advance(|_| true).is_some();
        }
        let mut i = 0u32;
        while on || other_on {
            let from_other = match (&other, on) {
                (Some(c), true) if other_on => {
                    let (child, _) = c.key_and_head()?;
                    let (key, _) = cursor.key_and_head()?;
                    if child == key {
                        return None;
                    }
                    child < key
                }
                _ => !on,
            };
            let c = match (&mut other, from_other) {
                (Some(c), true) => c,
                _ => &mut cursor,
            };
            let (key, head) = c.key_and_head()?;
            if from_other && (lode_wire::name::key_label_count(key) != 1 || key == b"*\0") {
                return None;
            }
            while stack
                .last()
                .is_some_and(|&(len, _, _)| !key.starts_with(&prev[..len]))
            {
                stack.pop();
            }
            let shadow = stack
                .iter()
                .find(|(_, _, c)| *c)
                .map_or(0, |(_, p, _)| i - p);
            blob::encode_raw(&mut one, head.flags, shadow, head.owner, head.rrsets);
            f(key, &one);
            stack.push((key.len(), i, cut(head.flags)));
            prev.clear();
            prev.extend_from_slice(key);
            i += 1;
            if from_other {
                other_on = c.advance(|_| true).is_some();
            } else {
                on = c.advance(|_| true).is_some();
            }
        }
        // (The cursor passes over a node it cannot read: none may be lost.)
        let children = children.map_or(0, |c| c.node_count() - 1);
        (i as usize == self.node_count() + children).then_some(())
    }

    /// [`Zone::compact`] the slow way, through records and a fresh build
    /// (what the tests hold the streaming one to).
    #[cfg(test)]
    pub(crate) fn compact_rebuild(&self) -> Result<Zone, ApplyError> {
        let mut b = crate::ZoneBuilder::new(self.origin().to_name())
            .class(self.class())
            .changed();
        for r in self.records() {
            b.add(r, 0);
        }
        b.build().map(|(z, _)| z).map_err(ApplyError::Invalid)
    }

    /// The next version: this one with `changes` applied, sharing the base
    /// and all untouched parts of the delta (see the module note).
    pub fn apply(&self, changes: &Changeset) -> Result<Zone, ApplyError> {
        let mut z = self.clone();
        z.apply_mut(changes)?;
        Ok(z)
    }

    /// [`Zone::apply`] to this version itself: the delta's chunks it holds
    /// alone are changed where they are (a group of updates copies each
    /// chunk it touches once, not once per update). On error the version
    /// is as it was: every check is made before the first change.
    pub fn apply_mut(&mut self, changes: &Changeset) -> Result<(), ApplyError> {
        if changes.serial_from() != self.serial() {
            return Err(ApplyError::SerialMismatch {
                zone: self.serial(),
                changeset: changes.serial_from(),
            });
        }
        let invalid = |m: String| {
            ApplyError::Invalid(vec![Problem {
                tag: None,
                severity: Severity::Error,
                message: m,
            }])
        };
        // 1. The changes by owner, in canonical order (ancestors first).
        type Group<'c> = (Vec<&'c Record>, Vec<&'c Record>);
        let mut groups: BTreeMap<Vec<u8>, Group<'_>> = BTreeMap::new();
        let removed = std::iter::once(&changes.soa_from).chain(&changes.removed);
        let added = std::iter::once(&changes.soa_to).chain(&changes.added);
        for (r, is_add) in removed.map(|r| (r, false)).chain(added.map(|r| (r, true))) {
            let key = r.owner.key();
            let Some(rel) = self.relative(&key) else {
                return Err(invalid(format!(
                    "{} {}: outside the zone {}",
                    r.owner, r.rtype, self.origin
                )));
            };
            if r.class != self.class {
                return Err(invalid(format!(
                    "{} {}: class {} is not the zone's",
                    r.owner, r.rtype, r.class
                )));
            }
            if (r.rtype == Rtype::SOA && !rel.is_empty()) || crate::build::knot_meta(r.rtype) {
                return Err(invalid(format!(
                    "{} {}: cannot be stored here",
                    r.owner, r.rtype
                )));
            }
            let g = groups.entry(rel.to_vec()).or_default();
            if is_add {
                g.1.push(r);
            } else {
                g.0.push(r);
            }
        }
        // 2. Each owner's new data, from the version as it is: an owner's
        // change can only add or remove its ancestors, which come before it
        // here, so what a later owner reads is what it would read after
        // the earlier ones were changed. Everything that can fail is here.
        let mut owners: Vec<Owned> = Vec::with_capacity(groups.len());
        for (rel, (rem, add)) in groups {
            let found = self.find_rel(&rel);
            let (mut sets, owner) = match found {
                Some(id) => {
                    let n = self.node(id);
                    (read_sets(&n), Some(n.owner().to_name()))
                }
                None => (Vec::new(), None),
            };
            let old_flags = own_flags(&rel, &sets);
            let old_count = (
                sets.len() as i64,
                sets.iter().map(|s| s.rdatas.len() as i64).sum::<i64>(),
            );
            for r in rem {
                let missing = || ApplyError::MissingRecord(format!("{} {}", r.owner, r.rtype));
                let si = sets
                    .iter()
                    .position(|s| s.rtype == r.rtype)
                    .ok_or_else(missing)?;
                let ri = sets[si]
                    .rdatas
                    .iter()
                    .position(|d| **d == *r.rdata)
                    .ok_or_else(missing)?;
                sets[si].rdatas.remove(ri);
                if sets[si].rdatas.is_empty() {
                    sets.remove(si);
                }
            }
            for r in &add {
                match sets.iter_mut().find(|s| s.rtype == r.rtype) {
                    Some(s) => {
                        if s.rdatas.iter().any(|d| **d == *r.rdata) {
                            return Err(ApplyError::ExistingRecord(format!(
                                "{} {}",
                                r.owner, r.rtype
                            )));
                        }
                        s.rdatas.push(r.rdata.clone());
                        // As the zone builder: the last TTL wins, except for RRSIG.
                        if r.rtype != Rtype::RRSIG {
                            s.ttl = r.ttl;
                        }
                    }
                    None => sets.push(Set {
                        rtype: r.rtype,
                        ttl: r.ttl,
                        rdatas: vec![r.rdata.clone()],
                    }),
                }
            }
            for s in &mut sets {
                s.rdatas.sort_unstable();
            }
            sets.sort_by_key(|s| s.rtype);
            if rel.is_empty() {
                let soa = sets.iter().find(|s| s.rtype == Rtype::SOA);
                if !soa.is_some_and(|s| s.rdatas.len() == 1 && s.rdatas[0].len() >= 22) {
                    return Err(invalid(format!(
                        "{}: the change leaves no single SOA at the apex",
                        self.origin
                    )));
                }
                if !sets.iter().any(|s| s.rtype == Rtype::NS) {
                    return Err(invalid(format!(
                        "{}: the change leaves no NS at the apex",
                        self.origin
                    )));
                }
            }
            let owner = owner.or_else(|| add.first().map(|r| r.owner.clone()));
            owners.push(Owned {
                rel,
                existed: found.is_some(),
                owner,
                sets,
                old_flags,
                old_count,
            });
        }
        // 3. The new data in; names appear and disappear with it.
        let z = self;
        let mut recompute: BTreeSet<Vec<u8>> = BTreeSet::new();
        let mut cut_changed: Vec<Vec<u8>> = Vec::new();
        let mut appeared_or_gone: Vec<Vec<u8>> = Vec::new();
        let cut = |f: NodeFlags| f.contains(NodeFlags::DELEGATION) || f.contains(NodeFlags::DNAME);
        for Owned {
            rel,
            existed,
            owner,
            sets,
            old_flags,
            old_count,
        } in owners
        {
            let new_count = (
                sets.len() as i64,
                sets.iter().map(|s| s.rdatas.len() as i64).sum::<i64>(),
            );
            z.rrsets = (z.rrsets as i64 + new_count.0 - old_count.0) as u64;
            z.records = (z.records as i64 + new_count.1 - old_count.1) as u64;
            if cut(old_flags) != cut(own_flags(&rel, &sets)) {
                cut_changed.push(rel.clone());
            }
            if !sets.is_empty() {
                let blob = encode_node(z, &rel, NodeFlags::default(), 0, owner.as_ref(), &sets);
                z.put(&rel, blob, existed);
                if !existed {
                    appeared_or_gone.push(rel.clone());
                }
                // Missing ancestors, nearest first: above the first one
                // that exists, all do (the tree holds every ancestor).
                let mut up: Vec<&[u8]> = ancestors(&rel).collect();
                up.reverse();
                for a in up {
                    if z.find_rel(a).is_some() {
                        break;
                    }
                    z.put(
                        a,
                        encode_node(z, a, NodeFlags::default(), 0, None, &[]),
                        false,
                    );
                    appeared_or_gone.push(a.to_vec());
                    recompute.insert(a.to_vec());
                }
                recompute.insert(rel);
            } else if existed {
                if rel.is_empty() || z.has_descendants(&rel) {
                    let blob = encode_node(z, &rel, NodeFlags::default(), 0, owner.as_ref(), &[]);
                    z.put(&rel, blob, true);
                    recompute.insert(rel);
                } else {
                    z.del(&rel);
                    appeared_or_gone.push(rel.clone());
                    // Empty non-terminals left without descendants go too.
                    let mut up: Vec<&[u8]> = ancestors(&rel).collect();
                    up.reverse();
                    for a in up {
                        if a.is_empty() || z.has_descendants(a) {
                            break;
                        }
                        let empty = z
                            .find_rel(a)
                            .is_some_and(|id| z.node(id).is_empty_nonterminal());
                        if !empty {
                            break;
                        }
                        z.del(a);
                        appeared_or_gone.push(a.to_vec());
                    }
                }
            }
        }
        // 4. Who else changes: parents of wildcards that came or went (their
        // flag), and everything below a cut or DNAME that came or went (its
        // shadow).
        for k in &appeared_or_gone {
            if k.len() >= 2 && k.ends_with(b"*\0") && (k.len() == 2 || k[k.len() - 3] == 0) {
                let parent = &k[..k.len() - 2];
                if z.find_rel(parent).is_some() {
                    recompute.insert(parent.to_vec());
                }
            }
        }
        for c in &cut_changed {
            let below: Vec<NodeId> = z
                .ids_from(c)
                .take_while(|&id| {
                    let mut buf = [0u8; MAX_KEY_LEN];
                    z.key_of(id, &mut buf).starts_with(c)
                })
                .collect();
            for id in below {
                let mut buf = [0u8; MAX_KEY_LEN];
                recompute.insert(z.key_of(id, &mut buf).to_vec());
            }
        }
        // 5. Flags and shadows, ancestors first (their flags are then current).
        for k in &recompute {
            let Some(id) = z.find_rel(k) else {
                continue;
            };
            let node = z.node(id);
            let sets = read_sets(&node);
            let owner = node.owner().to_name();
            let mut flags = own_flags(k, &sets);
            let mut child = k.clone();
            child.extend_from_slice(b"*\0");
            if z.find_rel(&child).is_some() {
                flags.insert(NodeFlags::WILDCARD_CHILD);
            }
            // The topmost cut or DNAME above: the parent's, or the parent
            // itself (ancestors come first here, so the parent is current).
            let mut shadow = 0;
            if let Some(parent) = ancestors(k).last().filter(|_| !k.is_empty()) {
                if let Some(pid) = z.find_rel(parent) {
                    let (pf, ps) = z.info(pid);
                    shadow = match ps {
                        Some(s) => {
                            let mut buf = [0u8; MAX_KEY_LEN];
                            lode_wire::name::key_label_count(z.key_of(s, &mut buf)) as u32 + 1
                        }
                        None if cut(pf) => lode_wire::name::key_label_count(parent) as u32 + 1,
                        None => 0,
                    };
                }
            }
            let blob = encode_node(z, k, flags, shadow, Some(&owner), &sets);
            z.put(k, blob, true);
        }
        // 6. The version's figures (the apex was checked in step 2).
        let soa = z.apex_rrset(Rtype::SOA).map(|s| (s.ttl(), s.first()));
        if let Some((ttl, soa)) = soa.filter(|(_, d)| d.len() >= 22) {
            let f = &soa[soa.len() - 20..];
            let serial = u32::from_be_bytes([f[0], f[1], f[2], f[3]]);
            let minimum = u32::from_be_bytes([f[16], f[17], f[18], f[19]]);
            z.negative_ttl = ttl.min(minimum);
            z.serial = serial;
        }
        z.apex = crate::ApexFacts::of(z);
        Ok(())
    }

    /// Sets the node of `rel` in the delta (`existed`: the name was there).
    fn put(&mut self, rel: &[u8], blob: Vec<u8>, existed: bool) {
        // A removed base name may come back.
        if !self.delta.gone.is_empty() {
            self.delta.gone.remove(rel);
        }
        if crate::nsec3::is_hashed_owner(rel, &blob) {
            self.delta
                .nsec3
                .get_or_insert_with(CowMap::default)
                .insert(rel.into(), ());
        } else if let Some(m) = &mut self.delta.nsec3 {
            m.remove(rel);
        }
        self.delta.blob_bytes += blob.len();
        if let Some(old) = self.delta.nodes.insert(rel.into(), blob.into()) {
            self.delta.blob_bytes -= old.len();
        }
        if !existed {
            self.delta.node_diff += 1;
        }
    }

    /// Removes the node of `rel`.
    fn del(&mut self, rel: &[u8]) {
        if self.find_rel(rel).is_none() {
            return;
        }
        if let Some(old) = self.delta.nodes.remove(rel) {
            self.delta.blob_bytes -= old.len();
        }
        if let Some(m) = &mut self.delta.nsec3 {
            m.remove(rel);
        }
        if matches!(self.store.search(rel), Search::Found(_)) {
            self.delta.gone.insert(rel.into(), ());
        }
        self.delta.node_diff -= 1;
    }

    /// True when a name below `rel` exists.
    fn has_descendants(&self, rel: &[u8]) -> bool {
        let Some(next) = self.succ_rel(rel) else {
            return false;
        };
        let mut buf = [0u8; MAX_KEY_LEN];
        let k = self.key_of(next, &mut buf);
        k.len() > rel.len() && k.starts_with(rel)
    }
}

/// Node ids in canonical order over base and delta (see [`Zone::ids_from`]).
#[derive(Debug)]
pub(crate) struct NodeIds<'z> {
    zone: &'z Zone,
    base: u32,
    delta: Option<Pos>,
    /// The first removed name not yet passed (a merge walk: no lookups).
    gone: Option<Pos>,
}

impl Iterator for NodeIds<'_> {
    type Item = NodeId;
    fn next(&mut self) -> Option<NodeId> {
        let z = self.zone;
        if z.delta.is_empty() {
            let id = (self.base < z.store.len).then_some(NodeId(self.base))?;
            self.base += 1;
            return Some(id);
        }
        let mut buf = [0u8; MAX_KEY_LEN];
        let dk = self.delta.and_then(|p| z.delta.nodes.at(p)).map(|(k, _)| k);
        // The next base name that is neither removed nor changed.
        let mut base = None;
        let mut bk_len = 0;
        while self.base < z.store.len {
            let bk = z.base_key(self.base, &mut buf);
            bk_len = bk.len();
            while let Some(g) = self.gone {
                match z.delta.gone.at(g) {
                    Some((gk, _)) if gk < bk => self.gone = z.delta.gone.next(g),
                    _ => break,
                }
            }
            let removed = self
                .gone
                .and_then(|g| z.delta.gone.at(g))
                .is_some_and(|(gk, _)| gk == bk);
            // A changed name comes from the delta (dk == bk below).
            if removed {
                self.base += 1;
                continue;
            }
            base = Some(self.base);
            break;
        }
        let take_delta = match (base, dk) {
            (None, None) => return None,
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (Some(_), Some(dk)) => {
                let bk = &buf[..bk_len];
                if dk == bk {
                    // The delta holds this name's current version.
                    self.base += 1;
                }
                dk <= bk
            }
        };
        if take_delta {
            let p = self.delta?;
            self.delta = z.delta.nodes.next(p);
            Some(z.delta_id(p))
        } else {
            let b = base?;
            self.base += 1;
            Some(NodeId(b))
        }
    }
}

/// An RRset while applying changes.
/// One owner's change, checked, before it is made (`Zone::apply_mut`).
struct Owned {
    rel: Vec<u8>,
    existed: bool,
    owner: Option<lode_wire::Name>,
    sets: Vec<Set>,
    old_flags: NodeFlags,
    old_count: (i64, i64),
}

struct Set {
    rtype: Rtype,
    ttl: u32,
    rdatas: Vec<Box<[u8]>>,
}

fn read_sets(node: &Node<'_>) -> Vec<Set> {
    node.rrsets()
        .map(|s| Set {
            rtype: s.rtype(),
            ttl: s.ttl(),
            rdatas: s.rdatas().map(Box::from).collect(),
        })
        .collect()
}

/// The flags a node's own data gives it (all but WILDCARD_CHILD).
fn own_flags(rel: &[u8], sets: &[Set]) -> NodeFlags {
    let mut f = NodeFlags::default();
    let has = |t: Rtype| sets.iter().any(|s| s.rtype == t);
    if has(Rtype::DNAME) {
        f.insert(NodeFlags::DNAME);
    }
    if !rel.is_empty() && has(Rtype::NS) {
        f.insert(NodeFlags::DELEGATION);
    }
    if has(Rtype::NSEC3)
        && sets
            .iter()
            .all(|s| matches!(s.rtype, Rtype::NSEC3 | Rtype::RRSIG))
    {
        f.insert(NodeFlags::NSEC3_ONLY);
    }
    f
}

/// A delta blob: `shadow` is the shadowing ancestor's label count plus one
/// (0: none); the owner is kept only when the key does not spell it.
fn encode_node(
    z: &Zone,
    rel: &[u8],
    flags: NodeFlags,
    shadow: u32,
    owner: Option<&lode_wire::Name>,
    sets: &[Set],
) -> Vec<u8> {
    let mut implied = NameBuf::new();
    let spelled = owner.is_none_or(|o| {
        implied.set_from_key(rel, z.origin.as_ref()).is_ok()
            && implied.as_ref().as_wire() == o.as_wire()
    });
    let owner = owner.filter(|_| !spelled).map(|o| o.as_ref());
    let ins: Vec<RRsetIn<'_>> = sets
        .iter()
        .map(|s| RRsetIn {
            rtype: s.rtype,
            ttl: s.ttl,
            rdatas: &s.rdatas,
        })
        .collect();
    let mut out = Vec::new();
    blob::encode(&mut out, flags, shadow, owner, &ins);
    out
}
