//! Building a zone from its nodes given in canonical order, each encoded as
//! it comes and laid out in the store as soon as nothing can change it any
//! more: no record is held and no second copy of the zone, so the peak is
//! about the store itself (a secondary taking a 20 M-record
//! AXFR peaked at 4.5 × the zone's size when every node was kept until the
//! end). Whole signing makes its zones this way too (a zone from another
//! zone's nodes and the signatures).
//!
//! A node written is final once closed, except that a wildcard child
//! (`*.parent`) sets a flag on its parent. In canonical order the `*` child
//! comes before every sibling whose label sorts after `*`, so a parent is
//! settled as soon as a child sorting after `*` (or the `*` child itself)
//! is written, or when a node outside it comes; nodes wait in a small window
//! until then, and go to the store in order.
//!
//! The result is the zone [`ZoneBuilder::changed`](crate::ZoneBuilder::changed)
//! would build from the same records: empty non-terminals are made, flags and
//! shadows set, and only the structure is checked (owners in the zone, one
//! SOA at the apex, NS there).

use lode_wire::name::KeyBuf;
use lode_wire::{Class, Name, NameBuf, NameRef, Rtype};

use crate::blob::{self, put_varint};
use crate::build::{Problem, Severity};
use crate::store::StoreBuilder;
use crate::{NodeFlags, RRset, Zone};

/// A node written and still an ancestor of the nodes to come (or the last one).
struct Ancestor {
    index: u32,
    /// Its key is the last key's first `key_len` bytes.
    key_len: usize,
    /// Where its blob starts in the nodes written (an offset from the
    /// first node, not from the window's start).
    blob_at: usize,
    flags: NodeFlags,
    /// No wildcard child can come any more (see the module's notes).
    settled: bool,
}

/// The node being written.
struct Open {
    /// Where its blob's length goes (4 bytes before the blob).
    len_at: usize,
    apex: bool,
    last_type: Option<u16>,
    holds_ns: bool,
    holds_dname: bool,
    holds_nsec3: bool,
    /// Only NSEC3 and RRSIG so far.
    only_nsec3: bool,
}

/// Builds a [`Zone`] from nodes in canonical order: [`OrderedBuilder::node`],
/// then its RRsets by [`OrderedBuilder::rrset`] in type order; a node given
/// no RRset is not made (its empty non-terminal ancestors are made for the
/// nodes below them).
pub struct OrderedBuilder {
    origin: Name,
    class: Class,
    origin_key: Box<[u8]>,
    /// The nodes written and not yet in the store:
    /// `key_len:varint key blob_len:u32le blob`, keys relative to the origin.
    entries: Vec<u8>,
    /// How many bytes of nodes were written before `entries[0]`.
    entries_base: usize,
    /// The nodes in `entries`: where each starts (as `blob_at`) and its index.
    waiting: std::collections::VecDeque<(usize, u32)>,
    /// The store, laid out as the nodes settle.
    store: StoreBuilder,
    nodes: u32,
    /// The last node written and its ancestors, root-most first.
    stack: Vec<Ancestor>,
    /// The last node's key.
    last: KeyBuf,
    /// The owner given to `node` and not written yet (no RRset came).
    pending: Option<NameBuf>,
    /// Its key when `node_keyed` gave it (else computed when written).
    pending_key: KeyBuf,
    pending_keyed: bool,
    open: Option<Open>,
    records: u64,
    rrsets: u64,
    /// Serial and negative TTL of the apex SOA.
    soa: Option<(u32, u32)>,
    apex_ns: bool,
    head: Vec<u8>,
}

impl OrderedBuilder {
    /// A builder for the zone at `origin` of class `class`.
    pub fn new(origin: Name, class: Class) -> OrderedBuilder {
        OrderedBuilder {
            origin_key: origin.key(),
            origin,
            class,
            entries: Vec::new(),
            entries_base: 0,
            waiting: std::collections::VecDeque::new(),
            store: StoreBuilder::learning(),
            nodes: 0,
            stack: Vec::new(),
            last: KeyBuf::new(),
            pending: None,
            pending_key: KeyBuf::new(),
            pending_keyed: false,
            open: None,
            records: 0,
            rrsets: 0,
            soa: None,
            apex_ns: false,
            head: Vec::new(),
        }
    }

    /// Starts the node `owner`: after the previous one in canonical order.
    pub fn node(&mut self, owner: NameRef<'_>) {
        self.close();
        let mut name = NameBuf::new();
        name.set(owner);
        self.pending = Some(name);
        self.pending_keyed = false;
    }

    /// [`OrderedBuilder::node`] with the owner's canonical key
    /// ([`NameRef::write_key`]'s) given, not computed again.
    pub fn node_keyed(&mut self, owner: NameRef<'_>, key: &[u8]) {
        self.node(owner);
        self.pending_keyed = self.pending_key.set(key);
    }

    /// Adds an RRset to the node started last: types in increasing order.
    /// RDATAs not in canonical order are sorted, duplicates dropped.
    pub fn rrset<'r, I>(&mut self, rtype: Rtype, ttl: u32, rdatas: I) -> Result<(), Problem>
    where
        I: IntoIterator<Item = &'r [u8]>,
        I::IntoIter: Clone,
    {
        let apex = self.begin_rrset(rtype)?;
        let rdatas = rdatas.into_iter();
        let mut it = rdatas.clone();
        let Some(first) = it.next() else {
            return Err(problem(format!("{rtype}: an RRset without records")));
        };
        let mut prev = first;
        let canonical = it.all(|r| {
            let ok = prev < r;
            prev = r;
            ok
        });
        let count = if canonical {
            blob::put_rrset(&mut self.entries, rtype, ttl, rdatas.clone());
            rdatas.clone().count()
        } else {
            let mut sorted: Vec<&[u8]> = rdatas.clone().collect();
            sorted.sort_unstable();
            sorted.dedup();
            blob::put_rrset(&mut self.entries, rtype, ttl, sorted.iter().copied());
            sorted.len()
        };
        let first_len = first.len();
        self.records += count as u64;
        self.rrsets += 1;
        match (rtype, apex) {
            (Rtype::SOA, true) if self.soa.is_none() && count == 1 && first_len >= 20 => {
                let fixed = &first[first.len() - 20..];
                let serial = u32::from_be_bytes([fixed[0], fixed[1], fixed[2], fixed[3]]);
                let minimum = u32::from_be_bytes([fixed[16], fixed[17], fixed[18], fixed[19]]);
                self.soa = Some((serial, ttl.min(minimum)));
            }
            (Rtype::SOA, true) if count > 1 => {
                return Err(problem(format!(
                    "{}: more than one SOA record at the zone apex",
                    self.origin
                )))
            }
            (Rtype::SOA, true) => {
                return Err(problem(format!("{}: malformed SOA RDATA", self.origin)))
            }
            (Rtype::SOA, false) => {
                return Err(problem(format!(
                    "{} SOA: SOA record outside the zone apex",
                    self.owner_of_open()
                )))
            }
            (Rtype::NS, true) => self.apex_ns = true,
            _ => {}
        }
        Ok(())
    }

    /// [`OrderedBuilder::rrset`] with an RRset of a zone (canonical, no
    /// duplicates, never empty): copied as it is stored, not encoded again.
    pub fn rrset_stored(&mut self, set: RRset<'_>) -> Result<(), Problem> {
        let rtype = set.rtype();
        if rtype == Rtype::SOA || set.is_empty() {
            // Checked and read as given.
            return self.rrset(rtype, set.ttl(), set.rdatas());
        }
        let apex = self.begin_rrset(rtype)?;
        blob::put_stored_rrset(&mut self.entries, &set);
        self.records += set.len() as u64;
        self.rrsets += 1;
        self.apex_ns |= apex && rtype == Rtype::NS;
        Ok(())
    }

    /// Opens the node started last if it is not open yet and checks the
    /// type order: whether the node is the apex.
    fn begin_rrset(&mut self, rtype: Rtype) -> Result<bool, Problem> {
        if let Some(owner) = self.pending.take() {
            let mut key = KeyBuf::new();
            if self.pending_keyed {
                key.set(self.pending_key.as_slice());
            } else {
                owner.as_ref().write_key(&mut key);
            }
            self.open_node(owner.as_ref(), key.as_slice())?;
        }
        let Some(open) = self.open.as_mut() else {
            return Err(problem(format!("{rtype}: an RRset before any node")));
        };
        if open.last_type.is_some_and(|t| t >= rtype.0) {
            return Err(problem(format!(
                "{rtype}: RRsets of a node out of type order"
            )));
        }
        open.last_type = Some(rtype.0);
        open.holds_ns |= rtype == Rtype::NS;
        open.holds_dname |= rtype == Rtype::DNAME;
        open.holds_nsec3 |= rtype == Rtype::NSEC3;
        open.only_nsec3 &= matches!(rtype, Rtype::NSEC3 | Rtype::RRSIG);
        Ok(open.apex)
    }

    /// The zone: its SOA and NS at the apex are checked.
    pub fn finish(self) -> Result<Zone, Problem> {
        let Some(_) = self.soa else {
            return Err(problem(format!(
                "{}: no SOA record at the zone apex",
                self.origin
            )));
        };
        if !self.apex_ns {
            return Err(problem(format!(
                "{}: no NS records at the zone apex",
                self.origin
            )));
        }
        Ok(self.finish_unchecked())
    }

    /// The zone, its apex not checked (serial and negative TTL 0 without
    /// an SOA): for the checks that still need a zone whose problems are
    /// already known.
    pub(crate) fn finish_unchecked(mut self) -> Zone {
        self.close();
        let (serial, negative_ttl) = self.soa.unwrap_or((0, 0));
        self.settle(true);
        let store =
            std::mem::replace(&mut self.store, StoreBuilder::new(std::iter::empty())).finish();
        Zone {
            origin: self.origin,
            class: self.class,
            origin_key: self.origin_key,
            store: std::sync::Arc::new(store),
            delta: crate::delta::Delta::default(),
            negative_ttl,
            serial,
            records: self.records,
            rrsets: self.rrsets,
            expired: false,
            expire_at: None,
            apex: crate::ApexFacts::default(),
        }
        .settled()
    }

    /// True when the apex has its SOA and NS (what [`OrderedBuilder::finish`] checks).
    pub fn is_complete(&self) -> bool {
        self.soa.is_some() && self.apex_ns
    }

    /// The records written so far, in canonical order (the node being
    /// written included): to go on with a [`crate::ZoneBuilder`] when the
    /// rest does not come in order.
    pub fn into_records(mut self) -> Vec<lode_wire::Record> {
        self.close();
        // The nodes already in the store, then those still waiting.
        let laid =
            std::mem::replace(&mut self.store, StoreBuilder::new(std::iter::empty())).finish();
        let laid = Zone {
            origin: self.origin.clone(),
            class: self.class,
            origin_key: self.origin_key.clone(),
            store: std::sync::Arc::new(laid),
            delta: crate::delta::Delta::default(),
            negative_ttl: 0,
            serial: 0,
            records: 0,
            rrsets: 0,
            expired: false,
            expire_at: None,
            apex: crate::ApexFacts::default(),
        };
        let mut out = laid_records(&laid);
        drop(laid);
        let mut owner = NameBuf::new();
        for (key, blob) in (Entries {
            data: &self.entries,
        }) {
            node_records(&mut out, &mut owner, (&self.origin, self.class), key, blob);
        }
        out
    }

    /// The owner of the node written last (for messages).
    fn owner_of_open(&self) -> Name {
        let mut owner = NameBuf::new();
        let rel = &self.last.as_slice()[self.origin_key.len()..];
        if owner.set_from_key(rel, self.origin.as_ref()).is_err() {
            return self.origin.clone();
        }
        owner.as_ref().to_name()
    }

    /// Writes the node `owner` and the empty non-terminals above it.
    fn open_node(&mut self, owner: NameRef<'_>, key: &[u8]) -> Result<(), Problem> {
        if !owner.ends_with(&self.origin.as_ref()) {
            return Err(problem(format!(
                "{owner}: owner is outside the zone {}",
                self.origin
            )));
        }
        if self.nodes > 0 && key <= self.last.as_slice() {
            return Err(problem(format!("{owner}: not after the previous node")));
        }
        if self.nodes == 0 && *key != *self.origin_key {
            // The apex comes first, empty when the zone does not start with it.
            let origin = self.origin.clone();
            self.write_node(&origin.key(), origin.as_ref());
            self.close();
        }
        // Ancestors already written stay on the stack; the rest go.
        let last = self.last.as_slice();
        while let Some(top) = self.stack.last() {
            if key.starts_with(&last[..top.key_len]) {
                break;
            }
            self.stack.pop();
        }
        let from = self.stack.last().map_or(key.len(), |a| a.key_len);
        let labels = owner.label_count();
        let mut seen = lode_wire::name::key_label_count(&key[..from]);
        for end in from + 1..key.len() {
            if key[end - 1] != 0 {
                continue;
            }
            seen += 1;
            let ent = owner.suffix(seen).unwrap_or(owner);
            debug_assert!(seen < labels);
            self.write_node(&key[..end], ent);
            self.close();
        }
        self.write_node(key, owner);
        Ok(())
    }

    /// Writes the head of one node (the stack holds its ancestors).
    fn write_node(&mut self, key: &[u8], owner: NameRef<'_>) {
        let index = self.nodes;
        self.nodes += 1;
        if let Some(parent) = self.stack.last_mut() {
            if owner.is_wildcard() {
                parent.flags.insert(NodeFlags::WILDCARD_CHILD);
                self.entries[parent.blob_at - self.entries_base] |= NodeFlags::WILDCARD_CHILD.0;
            }
            // The child's label (with its key's terminating 0) sorts at or
            // after `*`: no wildcard child can come after it.
            let label = key.get(parent.key_len..).unwrap_or(&[]);
            if label >= &[b'*', 0][..] {
                parent.settled = true;
            }
        }
        let shadow = self
            .stack
            .iter()
            .find(|a| a.flags.contains(NodeFlags::DNAME) || a.flags.contains(NodeFlags::DELEGATION))
            .map_or(0, |a| index - a.index);
        let rel = &key[self.origin_key.len()..];
        let spelled = spelled_below(owner, self.origin.as_ref());
        self.waiting
            .push_back((self.entries_base + self.entries.len(), index));
        put_varint(&mut self.entries, rel.len() as u64);
        self.entries.extend_from_slice(rel);
        let len_at = self.entries.len();
        self.entries.extend_from_slice(&[0; 4]);
        let blob_at = self.entries_base + self.entries.len();
        blob::encode_head(
            &mut self.head,
            NodeFlags::default(),
            shadow,
            (!spelled).then_some(owner),
        );
        self.entries.extend_from_slice(&self.head);
        self.last.set(key);
        self.stack.push(Ancestor {
            index,
            key_len: key.len(),
            blob_at,
            flags: NodeFlags::default(),
            settled: false,
        });
        self.open = Some(Open {
            len_at,
            apex: index == 0,
            last_type: None,
            holds_ns: false,
            holds_dname: false,
            holds_nsec3: false,
            only_nsec3: true,
        });
    }

    /// Ends the node being written: its length and flags.
    fn close(&mut self) {
        let Some(open) = self.open.take() else {
            return;
        };
        let blob_at = open.len_at + 4;
        let len = (self.entries.len() - blob_at) as u32;
        self.entries[open.len_at..blob_at].copy_from_slice(&len.to_le_bytes());
        let mut flags = NodeFlags::default();
        if open.holds_dname {
            flags.insert(NodeFlags::DNAME);
        }
        if open.holds_ns && !open.apex {
            flags.insert(NodeFlags::DELEGATION);
        }
        if open.holds_nsec3 && open.only_nsec3 {
            flags.insert(NodeFlags::NSEC3_ONLY);
        }
        self.entries[blob_at] |= flags.0;
        if let Some(top) = self.stack.last_mut() {
            top.flags.insert(flags);
        }
        self.settle(false);
    }

    /// Lays the settled nodes at the front of the window out in the store
    /// (all of them with `all`: no node is to come).
    fn settle(&mut self, all: bool) {
        while let Some(&(at, index)) = self.waiting.front() {
            let open = self.open.is_some() && index + 1 == self.nodes;
            let waits = self.stack.iter().any(|a| a.index == index && !a.settled);
            if !all && (open || waits) {
                break;
            }
            let from = at - self.entries_base;
            let Some((key, blob)) = (Entries {
                data: &self.entries[from..],
            })
            .next() else {
                break;
            };
            self.store.push(key, blob);
            self.waiting.pop_front();
        }
        // Drop what went to the store now and then (not a move per node).
        let done = self
            .waiting
            .front()
            .map_or(self.entries.len(), |&(at, _)| at - self.entries_base);
        if done == self.entries.len() || done >= WINDOW_TRIM {
            self.entries.drain(..done);
            self.entries_base += done;
        }
    }
}

/// The records of a zone built here, in canonical order, each with its
/// RRset's TTL: built again, they make the same RRsets.
pub(crate) fn laid_records(zone: &Zone) -> Vec<lode_wire::Record> {
    let mut out = Vec::new();
    let mut owner = NameBuf::new();
    let mut buf = [0u8; lode_wire::name::MAX_KEY_LEN];
    let origin = zone.origin().to_name();
    for id in zone.node_ids() {
        let key = zone.key_of(id, &mut buf);
        let node = zone.node(id);
        node_records(
            &mut out,
            &mut owner,
            (&origin, zone.class()),
            key,
            node.blob.bytes(),
        );
    }
    out
}

/// Adds the records of the node `key` (relative to the zone's origin) with
/// its `blob`; `owner` is a buffer for the owner spelled from the key.
fn node_records(
    out: &mut Vec<lode_wire::Record>,
    owner: &mut NameBuf,
    (origin, class): (&Name, Class),
    key: &[u8],
    blob: &[u8],
) {
    let Some(head) = blob::head(blob) else {
        return;
    };
    match head.owner {
        Some(o) => owner.set(o),
        None => {
            if owner.set_from_key(key, origin.as_ref()).is_err() {
                return;
            }
        }
    }
    let name = owner.as_ref().to_name();
    for set in blob::RRsets::new(head.rrsets) {
        out.extend(set.rdatas().map(|rdata| lode_wire::Record {
            owner: name.clone(),
            class,
            rtype: set.rtype(),
            ttl: set.ttl(),
            rdata: rdata.into(),
        }));
    }
}

/// Bytes of nodes laid out in the store after which the window's front is
/// cut off.
const WINDOW_TRIM: usize = 64 * 1024;

/// The nodes written, as `(key, blob)`.
#[derive(Clone)]
struct Entries<'a> {
    data: &'a [u8],
}

impl<'a> Iterator for Entries<'a> {
    type Item = (&'a [u8], &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        let mut pos = 0;
        let key_len = usize::try_from(blob::get_varint(self.data, &mut pos)?).ok()?;
        let key = self.data.get(pos..pos + key_len)?;
        pos += key_len;
        let len = self.data.get(pos..pos + 4)?;
        let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        pos += 4;
        let blob = self.data.get(pos..pos + len)?;
        self.data = &self.data[pos + len..];
        Some((key, blob))
    }
}

fn problem(message: String) -> Problem {
    Problem {
        tag: None,
        severity: Severity::Error,
        message,
    }
}

impl std::fmt::Debug for OrderedBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrderedBuilder")
            .field("origin", &self.origin)
            .field("nodes", &self.nodes)
            .field("bytes", &self.entries.len())
            .finish()
    }
}

/// Whether `owner` (at or below `origin`) is the name its key spells
/// below `origin` (`NameBuf::set_from_key(rel, origin)`): its labels above
/// the origin lower-case, the origin's octets as the origin has them.
fn spelled_below(owner: NameRef<'_>, origin: NameRef<'_>) -> bool {
    let (w, o) = (owner.as_wire(), origin.as_wire());
    let Some(cut) = w.len().checked_sub(o.len()) else {
        return false;
    };
    w[cut..] == *o && !w[..cut].iter().any(u8::is_ascii_uppercase)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::{NodeId, ZoneBuilder};
    use lode_wire::Record;

    fn name(s: &str) -> Name {
        s.parse().unwrap()
    }

    /// Random zones with cuts, DNAMEs, occluded names, wildcards (one
    /// whose parent has a child sorting before `*`, one that is an empty
    /// non-terminal), NSEC3-only owners, mixed case and multi-record sets.
    fn random_zone(seed: u64) -> Zone {
        let mut st = seed;
        let mut next = move || {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            st
        };
        let origin = name("Example.");
        let mut b = ZoneBuilder::new(origin.clone()).changed();
        let rec = |owner: &str, rtype: Rtype, rdata: Vec<u8>| Record {
            owner: name(owner),
            class: Class::IN,
            rtype,
            ttl: 300,
            rdata: rdata.into(),
        };
        let mut soa = name("ns.example.").as_wire().to_vec();
        soa.extend_from_slice(name("h.example.").as_wire());
        for v in [7u32, 3600, 600, 86400, 120] {
            soa.extend_from_slice(&v.to_be_bytes());
        }
        b.add(rec("example.", Rtype::SOA, soa), 0);
        b.add(
            rec(
                "example.",
                Rtype::NS,
                name("ns.example.").as_wire().to_vec(),
            ),
            0,
        );
        let labels = [
            "a",
            "B",
            "c",
            "*",
            "!x",
            "d-e",
            "0123456789abcdefghijklmnopqrstuv",
        ];
        for _ in 0..200 {
            let depth = 1 + next() % 4;
            let owner: String = (0..depth)
                .map(|_| labels[(next() % labels.len() as u64) as usize].to_string() + ".")
                .collect::<String>()
                + "example.";
            let (rtype, rdata) = match next() % 8 {
                0 => (Rtype::NS, name("ns.other.").as_wire().to_vec()),
                1 => (Rtype::DNAME, name("target.other.").as_wire().to_vec()),
                2 => (Rtype::NSEC3, vec![1, 0, 0, 0, 0, 20, (next() % 7) as u8]),
                3 => (Rtype::RRSIG, vec![0, 1, (next() % 5) as u8]),
                4 => (Rtype::TXT, vec![1, (next() % 3) as u8]),
                _ => (Rtype::A, vec![10, 0, 0, (next() % 4) as u8]),
            };
            b.add(rec(&owner, rtype, rdata), 0);
        }
        b.build().unwrap().0
    }

    /// `zone` made again by the ordered builder (its empty non-terminals
    /// left out when `skip_empty`).
    fn again(zone: &Zone, skip_empty: bool) -> Zone {
        let mut b = OrderedBuilder::new(zone.origin().to_name(), zone.class());
        for id in zone.node_ids() {
            let node = zone.node(id);
            if skip_empty && node.is_empty_nonterminal() {
                continue;
            }
            b.node(node.owner());
            for set in node.rrsets() {
                match set.len() % 2 {
                    // Copied as stored, and encoded again: the same zone.
                    0 => b.rrset_stored(set).unwrap(),
                    _ => b.rrset(set.rtype(), set.ttl(), set.rdatas()).unwrap(),
                }
            }
        }
        b.finish().unwrap()
    }

    /// The same zone, node by node (owners, flags, RRsets, counters), laid
    /// out in the same blocks.
    pub(crate) fn assert_same(a: &Zone, b: &Zone) {
        assert_eq!(a.node_count(), b.node_count());
        assert_eq!(
            (a.serial(), a.negative_ttl()),
            (b.serial(), b.negative_ttl())
        );
        assert_eq!(
            (a.record_count(), a.rrset_count()),
            (b.record_count(), b.rrset_count())
        );
        for (x, y) in a.node_ids().zip(b.node_ids()) {
            let (nx, ny) = (a.node(x), b.node(y));
            assert_eq!(nx.owner().as_wire(), ny.owner().as_wire());
            assert_eq!(a.info(x), b.info(y), "{}", nx.owner());
            let sets = |n: &crate::Node<'_>| -> Vec<(Rtype, u32, Vec<Vec<u8>>)> {
                n.rrsets()
                    .map(|s| (s.rtype(), s.ttl(), s.rdatas().map(<[u8]>::to_vec).collect()))
                    .collect()
            };
            assert_eq!(sets(&nx), sets(&ny), "{}", nx.owner());
        }
        // The same keys in the same blocks; the blobs' bytes may differ
        // where sharing was learned as the nodes came (a repeated blob's
        // first occurrence keeps its own copy).
        assert_eq!(a.store.heads, b.store.heads);
        assert_eq!(a.store.len, b.store.len);
    }

    #[test]
    fn a_nodes_relative_key_is_its_owners_key_below_the_origin() {
        for seed in [1u64, 7, 99] {
            let zone = random_zone(seed);
            // A version with a delta too: its nodes' keys come from there.
            let mut soa = zone.soa_record();
            crate::set_soa_serial(&mut soa, 8);
            let changed = zone
                .apply(&crate::Changeset {
                    soa_from: zone.soa_record(),
                    soa_to: soa,
                    removed: vec![],
                    added: vec![Record {
                        owner: name("New.B.example."),
                        class: Class::IN,
                        rtype: Rtype::A,
                        ttl: 60,
                        rdata: vec![192, 0, 2, 1].into(),
                    }],
                })
                .unwrap();
            for z in [&zone, &changed] {
                let mut origin = lode_wire::name::KeyBuf::new();
                z.origin().write_key(&mut origin);
                let mut full = lode_wire::name::KeyBuf::new();
                let mut rel = [0u8; lode_wire::name::MAX_KEY_LEN];
                for id in z.node_ids() {
                    let node = z.node(id);
                    node.owner().write_key(&mut full);
                    let n = node.relative_key(&mut rel);
                    let below = &full.as_slice()[origin.as_slice().len()..];
                    assert_eq!(&rel[..n], below, "{}", node.owner());
                }
            }
        }
    }

    #[test]
    fn nodes_wait_only_until_they_settle() {
        let origin = name("example.");
        let mut b = OrderedBuilder::new(origin.clone(), Class::IN);
        b.node(origin.as_ref());
        let mut soa = name("ns.example.").as_wire().to_vec();
        soa.extend_from_slice(name("h.example.").as_wire());
        soa.extend_from_slice(&[0; 20]);
        b.rrset(Rtype::NS, 60, [name("ns.example.").as_wire()])
            .unwrap();
        b.rrset(Rtype::SOA, 60, [&soa[..]]).unwrap();
        // Three levels of digits below the apex: each parent settles as
        // its first child comes (a digit sorts after `*`).
        let mut owners: Vec<Name> = (0..50_000u32)
            .map(|i| {
                name(&format!(
                    "{}.{}.{}.example.",
                    i % 10,
                    (i / 10) % 10,
                    i / 100
                ))
            })
            .collect();
        owners.sort_by_key(|n| n.key());
        let mut most = 0;
        for owner in &owners {
            b.node(owner.as_ref());
            b.rrset(Rtype::TXT, 60, [&[4, b't', b'e', b'x', b't'][..]])
                .unwrap();
            most = most.max(b.entries.len());
        }
        assert!(most < 2 * WINDOW_TRIM, "the window held {most} bytes");
        let z = b.finish().unwrap();
        assert!(z.node_count() > 50_000);
    }

    #[test]
    fn builds_what_the_zone_builder_builds() {
        let mut wildcard_flags = 0;
        for seed in 1..40u64 {
            let z = random_zone(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            wildcard_flags += z
                .node_ids()
                .filter(|&id| z.node(id).flags().contains(NodeFlags::WILDCARD_CHILD))
                .count();
            assert_same(&z, &again(&z, false));
            assert_same(&z, &again(&z, true));
        }
        assert!(wildcard_flags > 0);
    }

    #[test]
    fn sorts_rdatas_and_refuses_disorder() {
        let origin = name("example.");
        let mut b = OrderedBuilder::new(origin.clone(), Class::IN);
        b.node(origin.as_ref());
        let mut soa = vec![0u8; 2];
        soa.extend_from_slice(&[0; 20]);
        let (x, y): (&[u8], &[u8]) = (b"\x02", b"\x01");
        b.rrset(Rtype::NS, 60, [x, y, x]).unwrap();
        b.rrset(Rtype::SOA, 60, [&soa[..]]).unwrap();
        assert!(
            b.rrset(Rtype::A, 60, [&[1, 2, 3, 4][..]]).is_err(),
            "type order"
        );
        b.node(name("b.example.").as_ref());
        b.rrset(Rtype::A, 60, [&[1, 2, 3, 4][..]]).unwrap();
        b.node(name("a.example.").as_ref());
        assert!(
            b.rrset(Rtype::A, 60, [&[1, 2, 3, 4][..]]).is_err(),
            "name order"
        );
        b.node(name("other.").as_ref());
        assert!(
            b.rrset(Rtype::A, 60, [&[1, 2, 3, 4][..]]).is_err(),
            "outside"
        );
        let z = b.finish().unwrap();
        let ns: Vec<&[u8]> = z.apex_rrset(Rtype::NS).unwrap().rdatas().collect();
        assert_eq!(ns, [y, x]);
        assert_eq!(z.node_count(), 2);
        assert_eq!(z.find(name("B.example.").as_ref()), Some(NodeId(1)));

        let mut b = OrderedBuilder::new(origin.clone(), Class::IN);
        b.node(name("a.example.").as_ref());
        b.rrset(Rtype::A, 60, [&[1, 2, 3, 4][..]]).unwrap();
        assert!(b.finish().unwrap_err().message.contains("no SOA"));
    }
}
