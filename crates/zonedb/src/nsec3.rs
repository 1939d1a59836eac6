//! The NSEC3 index: a zone's hashed owners (the apex's children that hold
//! NSEC3) in hash order, so the answer engine finds the NSEC3 that matches
//! or covers a hash with one search of a dense array. In the name index
//! the hashed owners lie among the apex's other children and their
//! subtrees, so the covering NSEC3 was a search plus a walk back over them.
//!
//! ```text
//!  base:  Store::nsec3 (none without hashed owners):
//!         entries  [(u32, u32, u32)]  per hashed owner, ascending: the first 12
//!                         base32hex digits of its key (60 bits, high and low word)
//!                         and its node id, side by side: one cache line gives a
//!                         search both      (12 bytes per NSEC3 owner, collected
//!                                  as a store is built, or as a snapshot's is checked on
//!                                  reading: not in snapshots)
//!         buckets  [u32]  where the prefixes with each value of their top bits
//!                                  start (one per ~4 entries): a search reads a bucket and
//!                                  a cache line of prefixes, not log2(n) far-apart ones
//!  delta: Delta::nsec3      keys of the delta's NSEC3 owners (kept by `Zone::apply`)
//!  at or before(key) = max(base entry ≤ key that the delta neither removed nor changed,
//!                          delta entry ≤ key)
//! ```
//!
//! Keys are relative keys: the owner's label (base32hex, lower case, as
//! stored) and its end. Entries whose first 12 digits tie are told apart by
//! their whole keys. Nothing here allocates.

use lode_wire::name::MAX_KEY_LEN;

use crate::store::Store;
use crate::{NodeFlags, NodeId, Zone};

/// Bits of an index prefix (12 base32hex digits).
const PREFIX_BITS: u32 = 60;

/// Characters of a hashed owner's label (SHA-1: 160 bits in base32hex).
const LABEL: usize = 32;

/// A hashed owner's key relative to the origin: its label and the label end.
pub type Nsec3Key = [u8; LABEL + 1];

/// The key of the hashed owner of `hash` (see [`Zone::nsec3_covering`]).
pub fn nsec3_key(hash: &[u8; 20]) -> Nsec3Key {
    let mut k = [0u8; LABEL + 1];
    k[..LABEL].copy_from_slice(&lode_wire::nsec3::base32hex(hash));
    k
}

/// The greatest key a hashed owner can have.
const LAST_KEY: Nsec3Key = {
    let mut k = [b'v'; LABEL + 1];
    k[LABEL] = 0;
    k
};

/// The value of a base32hex digit (lower case).
fn digit(c: u8) -> Option<u64> {
    match c {
        b'0'..=b'9' => Some(u64::from(c - b'0')),
        b'a'..=b'v' => Some(u64::from(c - b'a' + 10)),
        _ => None,
    }
}

/// The hash a relative key spells if it is a hashed owner's key (one
/// label of 32 base32hex digits, lower case): the inverse of [`nsec3_key`].
pub(crate) fn key_hash(key: &[u8]) -> Option<[u8; 20]> {
    if key.len() != LABEL + 1 || key[LABEL] != 0 {
        return None;
    }
    // Each octet's digit value, 32 where it is none.
    const VALUE: [u8; 256] = {
        let mut t = [32u8; 256];
        let mut c = 0;
        while c < 32 {
            t[if c < 10 { b'0' + c } else { b'a' + c - 10 } as usize] = c;
            c += 1;
        }
        t
    };
    let mut out = [0u8; 20];
    let mut bad = 0;
    // Eight digits are five octets.
    for (digits, octets) in key[..LABEL].chunks_exact(8).zip(out.chunks_exact_mut(5)) {
        let mut v = 0u64;
        for &c in digits {
            let d = VALUE[usize::from(c)];
            bad |= d;
            v = v << 5 | u64::from(d & 31);
        }
        octets.copy_from_slice(&v.to_be_bytes()[3..]);
    }
    (bad & 32 == 0).then_some(out)
}

/// The index prefix of a relative key if it is a hashed owner's (one label
/// of 32 base32hex digits): its first 12 digits, 60 bits in key order.
pub(crate) fn key_prefix(key: &[u8]) -> Option<u64> {
    if key.len() != LABEL + 1 || key[LABEL] != 0 {
        return None;
    }
    let mut p = 0u64;
    for (i, &c) in key[..LABEL].iter().enumerate() {
        let v = digit(c)?;
        if i < 12 {
            p = p << 5 | v;
        }
    }
    Some(p)
}

/// An index entry: a hashed owner's key prefix (high and low word) and
/// its node id, 12 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry([u32; 3]);

impl Entry {
    #[inline]
    fn prefix(self) -> u64 {
        u64::from(self.0[0]) << 32 | u64::from(self.0[1])
    }
    #[inline]
    fn id(self) -> u32 {
        self.0[2]
    }
}

/// A base's NSEC3 index (see the module note); a store without hashed
/// owners has none (a pointer's worth per zone).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Nsec3Index {
    /// The entries, ascending.
    entries: Vec<Entry>,
    /// Where the entries with each value of the prefixes' top bits start.
    buckets: Vec<u32>,
    /// The shift that leaves those bits.
    shift: u32,
}

impl Nsec3Index {
    /// The index of these entries (ascending), buckets made; none when
    /// there are none.
    pub(crate) fn new(prefixes: Vec<u64>, ids: Vec<u32>) -> Option<Box<Nsec3Index>> {
        if prefixes.is_empty() {
            return None;
        }
        let entries: Vec<Entry> = prefixes
            .iter()
            .zip(&ids)
            .map(|(&p, &id)| Entry([(p >> 32) as u32, p as u32, id]))
            .collect();
        drop((prefixes, ids));
        // Buckets by the prefixes' top bits, about four entries each.
        let bits = (usize::BITS - (entries.len() / 4).leading_zeros()).min(30);
        let shift = PREFIX_BITS - bits;
        let mut buckets = Vec::with_capacity((1 << bits) + 1);
        let mut at = 0;
        for b in 0..=(1u64 << bits) {
            while at < entries.len() && entries[at].prefix() >> shift < b {
                at += 1;
            }
            buckets.push(at as u32);
        }
        Some(Box::new(Nsec3Index {
            entries,
            buckets,
            shift,
        }))
    }

    /// Bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.entries.capacity() * std::mem::size_of::<Entry>()
            + self.buckets.capacity() * 4
    }

    /// The number of entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The number of entries whose prefix is ≤ `prefix`: the entries whose
    /// prefixes share its top bits are the bucket's (SHA-1 hashes spread
    /// evenly: a cache line or two), those before it are less.
    fn count_le(&self, prefix: u64) -> usize {
        let b = (prefix >> self.shift) as usize;
        let (Some(&lo), Some(&hi)) = (self.buckets.get(b), self.buckets.get(b + 1)) else {
            return 0;
        };
        let (lo, hi) = (lo as usize, hi as usize);
        lo + self.entries[lo..hi].partition_point(|e| e.prefix() <= prefix)
    }
}

impl Store {
    /// The node id of the last hashed owner in the index whose key is ≤
    /// `key` (a hashed owner's key with index prefix `prefix`), and the
    /// ids before it, nearest first.
    fn nsec3_at_or_before(&self, key: &[u8], prefix: u64) -> impl Iterator<Item = u32> + '_ {
        let entries = self.nsec3.as_deref().map_or(&[][..], |x| &x.entries[..]);
        let mut j = self.nsec3.as_deref().map_or(0, |x| x.count_le(prefix));
        let mut buf = [0u8; MAX_KEY_LEN];
        while j > 0 && entries[j - 1].prefix() == prefix {
            let n = self
                .entry_key(entries[j - 1].id())
                .and_then(|k| k.write(&mut buf))
                .unwrap_or(0);
            if &buf[..n] <= key {
                break;
            }
            j -= 1;
        }
        entries[..j].iter().rev().map(|e| e.id())
    }
}

impl Zone {
    /// The hashed owner whose key is `key`, if the zone has one (the NSEC3
    /// that matches a hash).
    pub fn nsec3_match(&self, key: &Nsec3Key) -> Option<NodeId> {
        let id = self.nsec3_at_or_before_key(key)?;
        let mut buf = [0u8; MAX_KEY_LEN];
        (self.key_of(id, &mut buf) == key).then_some(id)
    }

    /// [`Zone::nsec3_match`] and [`Zone::nsec3_covering`] of one key with
    /// one search: (the node matching it, the node covering or matching it).
    pub fn nsec3_lookup(&self, key: &Nsec3Key) -> (Option<NodeId>, Option<NodeId>) {
        match self.nsec3_at_or_before_key(key) {
            Some(id) => {
                let mut buf = [0u8; MAX_KEY_LEN];
                let exact = (self.key_of(id, &mut buf) == key).then_some(id);
                (exact, Some(id))
            }
            None => (None, self.nsec3_at_or_before_key(&LAST_KEY)),
        }
    }

    /// The hashed owner that matches or covers `key`: the last one at or
    /// before it in hash order, or the last of all when none is (the chain
    /// wraps around); None when the zone has no NSEC3.
    pub fn nsec3_covering(&self, key: &Nsec3Key) -> Option<NodeId> {
        self.nsec3_at_or_before_key(key)
            .or_else(|| self.nsec3_at_or_before_key(&LAST_KEY))
    }

    /// The last hashed owner at or before `key`, in the merged view.
    fn nsec3_at_or_before_key(&self, key: &Nsec3Key) -> Option<NodeId> {
        let prefix = key_prefix(key)?;
        let mut base = self.store.nsec3_at_or_before(key, prefix);
        if self.delta.is_empty() {
            return base.next().map(NodeId);
        }
        // The delta's last hashed owner at or before `key`; a base entry
        // after it counts when the delta neither removed nor changed it (a
        // changed one that still holds NSEC3 is a delta entry).
        let delta = self.delta.nsec3_at_or_before(key);
        let mut buf = [0u8; MAX_KEY_LEN];
        for id in base {
            let bk = self.base_key(id, &mut buf);
            if delta.is_some_and(|d| d >= bk) {
                break;
            }
            if self.base_current(id) {
                return Some(NodeId(id));
            }
        }
        self.find_rel(delta?)
    }
}

/// The index prefix of a node of relative key `rel` whose blob starts
/// with `blob` when it is a hashed owner (one 32-digit label, NSEC3 and
/// signatures only).
pub(crate) fn nsec3_entry(rel: &[u8], blob: &[u8]) -> Option<u64> {
    if rel.len() != LABEL + 1 {
        return None;
    }
    let p = key_prefix(rel)?;
    crate::blob::flags_and_shadow(blob)
        .is_some_and(|(f, _)| f.contains(NodeFlags::NSEC3_ONLY))
        .then_some(p)
}

/// True when a delta node of `rel` with `blob` is a hashed owner.
pub(crate) fn is_hashed_owner(rel: &[u8], blob: &[u8]) -> bool {
    nsec3_entry(rel, blob).is_some()
}

/// The hashed owners of `zone` by a walk of every node, as (key, id): what
/// the tests hold the index to (see [`walk_nsec3`]).
#[cfg(test)]
pub(crate) fn walked_owners(zone: &Zone) -> Vec<(Vec<u8>, NodeId)> {
    let mut buf = [0u8; MAX_KEY_LEN];
    zone.node_ids()
        .map(|id| (zone.key_of(id, &mut buf).to_vec(), id))
        .filter(|(k, id)| {
            key_prefix(k).is_some() && zone.info(*id).0.contains(NodeFlags::NSEC3_ONLY)
        })
        .collect()
}

/// What a match and a cover of `key` give among `hashed` (in key order).
#[cfg(test)]
pub(crate) fn walk_nsec3(
    hashed: &[(Vec<u8>, NodeId)],
    key: &Nsec3Key,
) -> (Option<NodeId>, Option<NodeId>) {
    let exact = hashed.iter().find(|(k, _)| k == key).map(|x| x.1);
    let cover = hashed
        .iter()
        .rev()
        .find(|(k, _)| k.as_slice() <= key.as_slice())
        .or(hashed.last())
        .map(|x| x.1);
    (exact, cover)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lode_wire::{Class, Name, Record, Rtype};

    fn rec(owner: &Name, rtype: Rtype, rdata: Vec<u8>) -> Record {
        Record {
            owner: owner.clone(),
            class: Class::IN,
            rtype,
            ttl: 300,
            rdata: rdata.into(),
        }
    }

    /// A hashed owner's key read back as its hash; keys that are not
    /// hashed owners' are not.
    #[test]
    fn keys_spell_hashes() {
        let mut x = 0x51ED_2701_u64;
        for _ in 0..1000 {
            let mut h = [0u8; 20];
            for b in h.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            let key = nsec3_key(&h);
            assert_eq!(key_hash(&key), Some(h));
            for bad in [b'w', b'A', b'/', b':', b'`', 0] {
                let mut k = key;
                k[(x % 32) as usize] = bad;
                assert_eq!(key_hash(&k), None, "{}", bad as char);
            }
            assert_eq!(key_hash(&key[..32]), None);
        }
        assert_eq!(key_hash(&LAST_KEY), Some([0xff; 20]));
        assert_eq!(key_hash(&nsec3_key(&[0; 20])), Some([0; 20]));
    }

    /// Hashed owners in numbers that fill many 64-entry steps of the
    /// search, some sharing their 12-digit prefix, among other children of
    /// the apex: every match and cover as a walk of all of them finds it.
    #[test]
    fn index_finds_what_a_walk_finds() {
        let origin: Name = "example.".parse().unwrap();
        let mut b = crate::ZoneBuilder::new(origin.clone());
        let mut soa = Name::from_wire(b"\x02ns\x07example\x00")
            .unwrap()
            .as_wire()
            .to_vec();
        soa.extend_from_slice(soa.clone().as_slice());
        soa.extend_from_slice(&[0; 20]);
        b.add(rec(&origin, Rtype::SOA, soa), 0);
        let ns: Name = "ns.example.".parse().unwrap();
        b.add(rec(&origin, Rtype::NS, ns.as_wire().to_vec()), 0);
        b.add(rec(&ns, Rtype::A, vec![192, 0, 2, 1]), 0);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut labels: Vec<[u8; 32]> = Vec::new();
        for i in 0..1500 {
            let mut h = [0u8; 20];
            for c in h.chunks_mut(8) {
                let v = next().to_be_bytes();
                c.copy_from_slice(&v[..c.len()]);
            }
            if i % 10 == 1 {
                // The previous owner's first 12 digits (60 bits).
                let prev = labels[labels.len() - 1];
                let mut l = lode_wire::nsec3::base32hex(&h);
                l[..12].copy_from_slice(&prev[..12]);
                labels.push(l);
            } else {
                labels.push(lode_wire::nsec3::base32hex(&h));
            }
        }
        for (i, l) in labels.iter().enumerate() {
            let owner: Name = format!("{}.example.", std::str::from_utf8(l).unwrap())
                .parse()
                .unwrap();
            let mut rdata = vec![1, 0, 0, 0, 0, 20];
            rdata.extend_from_slice(&[0; 20]);
            // Every 7th one holds more than NSEC3: not a hashed owner.
            b.add(rec(&owner, Rtype::NSEC3, rdata), 0);
            if i % 7 == 3 {
                b.add(rec(&owner, Rtype::A, vec![192, 0, 2, 2]), 0);
            }
            // Other children of the apex with subtrees, between them.
            if i % 5 == 0 {
                let other: Name = format!("x.{}.example.", &std::str::from_utf8(l).unwrap()[..5])
                    .parse()
                    .unwrap();
                b.add(rec(&other, Rtype::A, vec![192, 0, 2, 3]), 0);
            }
        }
        let (zone, _) = b.build().unwrap();
        let mut probes: Vec<Nsec3Key> = Vec::new();
        let mut buf = [0u8; MAX_KEY_LEN];
        for id in zone.node_ids() {
            if let Ok(k) = zone.key_of(id, &mut buf).try_into() {
                probes.push(k);
            }
        }
        let n = zone.store.nsec3.as_ref().map_or(0, |x| x.len());
        assert!(n > 1200, "{n} hashed owners");
        for _ in 0..3000 {
            let mut h = [0u8; 20];
            for c in h.chunks_mut(8) {
                let v = next().to_be_bytes();
                c.copy_from_slice(&v[..c.len()]);
            }
            probes.push(nsec3_key(&h));
        }
        probes.push(nsec3_key(&[0; 20]));
        probes.push(LAST_KEY);
        // Read back from a snapshot, the index is derived again alike.
        let mut snap = Vec::new();
        zone.write_snapshot(b"t", &mut snap).unwrap();
        let (read, _) = Zone::read_snapshot(&mut snap.as_slice(), snap.len() as u64).unwrap();
        assert_eq!(read.store.nsec3, zone.store.nsec3);
        let check = |z: &Zone, probes: &[Nsec3Key]| {
            let hashed = walked_owners(z);
            for p in probes {
                let (exact, cover) = walk_nsec3(&hashed, p);
                assert_eq!(z.nsec3_covering(p), cover);
                assert_eq!(z.nsec3_match(p), exact);
            }
        };
        check(&zone, &probes);
        // A delta over that base: hashed owners removed (runs of them, so a
        // search steps back over several), made more than NSEC3 (no longer
        // hashed owners), and new ones.
        let soa_from = zone.soa_record();
        let mut soa_to = soa_from.clone();
        crate::set_soa_serial(&mut soa_to, 1);
        let mut change = crate::Changeset {
            soa_from,
            soa_to,
            removed: Vec::new(),
            added: Vec::new(),
        };
        let nsec3s: Vec<Record> = zone.records().filter(|r| r.rtype == Rtype::NSEC3).collect();
        for (i, r) in nsec3s.iter().enumerate() {
            match i % 10 {
                0..=2 => change.removed.push(r.clone()),
                3 => change.added.push(rec(&r.owner, Rtype::TXT, vec![1, b'x'])),
                _ => {}
            }
        }
        for _ in 0..200 {
            let mut h = [0u8; 20];
            for c in h.chunks_mut(8) {
                let v = next().to_be_bytes();
                c.copy_from_slice(&v[..c.len()]);
            }
            let owner: Name = format!(
                "{}.example.",
                std::str::from_utf8(&lode_wire::nsec3::base32hex(&h)).unwrap()
            )
            .parse()
            .unwrap();
            let mut rdata = vec![1, 0, 0, 0, 0, 20];
            rdata.extend_from_slice(&[0; 20]);
            change.added.push(rec(&owner, Rtype::NSEC3, rdata));
            probes.push(nsec3_key(&h));
        }
        let changed = zone.apply(&change).unwrap();
        assert!(changed.delta_len() > 0);
        check(&changed, &probes);
        check(&changed.compact().unwrap(), &probes);
    }
}
