//! The NSEC3 index: a zone's hashed owners (the apex's children that hold
//! NSEC3) in hash order, so the answer engine finds the NSEC3 that matches
//! or covers a hash with one search of a dense array. In the name index
//! the hashed owners lie among the apex's other children and their
//! subtrees, so the covering NSEC3 was a search plus a walk back over them.
//!
//! ```text
//!  base:  Store::nsec3      [u64]  first 12 base32hex digits of each hashed owner, ascending
//!         Store::nsec3_ids  [u32]  the owner's node id      (12 bytes per NSEC3 owner, derived
//!                                  from the store when it is built or read: not in snapshots)
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

impl Store {
    /// Derives the NSEC3 index from the entries (after building or reading).
    pub(crate) fn index_nsec3(&mut self) {
        let (mut prefixes, mut ids) = (Vec::new(), Vec::new());
        let mut buf = [0u8; MAX_KEY_LEN];
        for id in 0..self.len {
            let Some(k) = self.entry_key(id) else {
                continue;
            };
            if k.len() != LABEL + 1 {
                continue;
            }
            let n = k.write(&mut buf).unwrap_or(0);
            let Some(p) = key_prefix(&buf[..n]) else {
                continue;
            };
            let nsec3 = self
                .blob_prefix(id)
                .and_then(|(b, n)| crate::blob::flags_and_shadow(&b[..n]))
                .is_some_and(|(f, _)| f.contains(NodeFlags::NSEC3_ONLY));
            if nsec3 {
                prefixes.push(p);
                ids.push(id);
            }
        }
        prefixes.shrink_to_fit();
        ids.shrink_to_fit();
        self.nsec3 = prefixes;
        self.nsec3_ids = ids;
    }

    /// The position in the NSEC3 index of the last hashed owner whose key
    /// is ≤ `key` (a hashed owner's key with index prefix `prefix`).
    fn nsec3_at_or_before(&self, key: &[u8], prefix: u64) -> Option<usize> {
        let mut j = self.nsec3.partition_point(|&p| p <= prefix);
        let mut buf = [0u8; MAX_KEY_LEN];
        while j > 0 && self.nsec3[j - 1] == prefix {
            let n = self
                .entry_key(self.nsec3_ids[j - 1])
                .and_then(|k| k.write(&mut buf))
                .unwrap_or(0);
            if &buf[..n] <= key {
                break;
            }
            j -= 1;
        }
        j.checked_sub(1)
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
            return base.map(|j| NodeId(self.store.nsec3_ids[j]));
        }
        // The delta's last hashed owner at or before `key`; a base entry
        // after it counts when the delta neither removed nor changed it (a
        // changed one that still holds NSEC3 is a delta entry).
        let delta = self.delta.nsec3_at_or_before(key);
        let mut buf = [0u8; MAX_KEY_LEN];
        while let Some(j) = base {
            let id = self.store.nsec3_ids[j];
            let bk = self.base_key(id, &mut buf);
            if delta.is_some_and(|d| d >= bk) {
                break;
            }
            if self.base_current(id) {
                return Some(NodeId(id));
            }
            base = j.checked_sub(1);
        }
        self.find_rel(delta?)
    }
}

/// True when a delta node of `rel` with `blob` is a hashed owner.
pub(crate) fn is_hashed_owner(rel: &[u8], blob: &[u8]) -> bool {
    key_prefix(rel).is_some()
        && crate::blob::flags_and_shadow(blob)
            .is_some_and(|(f, _)| f.contains(NodeFlags::NSEC3_ONLY))
}
