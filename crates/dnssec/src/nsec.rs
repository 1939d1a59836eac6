//! The NSEC chain (RFC 4034 §4, RFC 4035 §2.3): which names own an NSEC
//! record, their type bitmaps and the next name.

use std::collections::BTreeMap;

use lode_wire::{Name, Record, Rtype};
use lode_zonedb::{Lookup, Node, NodeId, Zone};

/// True if the node owns an NSEC in a signed zone: it is authoritative or a
/// delegation point (not occluded: glue, or below a DNAME) and owns data
/// (empty non-terminals own none).
pub fn has_nsec(zone: &Zone, id: NodeId) -> bool {
    if zone.shadow(id).is_some() {
        return false;
    }
    owns_data(&zone.node(id))
}

fn owns_data(node: &Node<'_>) -> bool {
    node.rrsets()
        .any(|s| !matches!(s.rtype(), Rtype::RRSIG | Rtype::NSEC))
}

/// True if the RRset of `rtype` at the node is signed: everything
/// authoritative but RRSIG; at a delegation point only DS and NSEC.
pub fn is_signed(zone: &Zone, id: NodeId, rtype: Rtype) -> bool {
    if zone.shadow(id).is_some() {
        return false;
    }
    is_signed_at(id != zone.apex_id() && zone.node(id).is_delegation(), rtype)
}

/// [`is_signed`] for a node that is not occluded, `cut` telling whether
/// it is a delegation point (for a walk that has read the node already).
pub fn is_signed_at(cut: bool, rtype: Rtype) -> bool {
    rtype != Rtype::RRSIG && (!cut || matches!(rtype, Rtype::DS | Rtype::NSEC))
}

/// The NSEC type bitmap of a node (RFC 4034 §4.1.2): its types, NSEC and
/// RRSIG; at a delegation point only NS and DS of its own types.
pub fn type_bitmap(zone: &Zone, id: NodeId) -> Vec<u8> {
    let node = zone.node(id);
    let deleg = id != zone.apex_id() && node.is_delegation();
    let mut types: Vec<u16> = node
        .rrsets()
        .map(|s| s.rtype())
        .filter(|t| !matches!(*t, Rtype::RRSIG | Rtype::NSEC))
        .filter(|t| !deleg || matches!(*t, Rtype::NS | Rtype::DS))
        .map(|t| t.0)
        .collect();
    types.extend([Rtype::NSEC.0, Rtype::RRSIG.0]);
    encode_bitmap(&mut types)
}

/// The type bitmap field of a set of types (sorted and deduplicated here).
pub fn encode_bitmap(types: &mut Vec<u16>) -> Vec<u8> {
    types.sort_unstable();
    types.dedup();
    let mut out = Vec::new();
    let mut i = 0;
    while i < types.len() {
        let window = (types[i] >> 8) as u8;
        let mut bits = [0u8; 32];
        let mut len = 0;
        while i < types.len() && (types[i] >> 8) as u8 == window {
            let b = (types[i] & 0xff) as usize;
            bits[b / 8] |= 0x80 >> (b % 8);
            len = b / 8 + 1;
            i += 1;
        }
        out.push(window);
        out.push(len as u8);
        out.extend_from_slice(&bits[..len]);
    }
    out
}

/// The next NSEC owner after `id` in canonical order (the apex after the last).
pub fn next_owner(zone: &Zone, id: NodeId) -> NodeId {
    zone.node_ids_after(id)
        .find(|&n| has_nsec(zone, n))
        .unwrap_or(zone.apex_id())
}

/// The NSEC owner before `id` in canonical order (the last one before the
/// apex wraps around).
pub fn prev_owner(zone: &Zone, id: NodeId) -> NodeId {
    let before = zone
        .node_before(id)
        .and_then(|b| zone.rfind_from(b, |n| has_nsec(zone, n.id())));
    match before {
        Some(p) => p,
        None => zone
            .rfind_from(zone.last_id(), |n| has_nsec(zone, n.id()))
            .unwrap_or(zone.apex_id()),
    }
}

/// The NSEC record the node owns in `zone`, given the next owner; its TTL is
/// the zone's negative TTL (RFC 9077: min(SOA TTL, SOA MINIMUM)). The next
/// name is written in lower case, as Knot stores names.
pub fn nsec_record(zone: &Zone, id: NodeId, next: NodeId) -> Record {
    Record {
        owner: zone.node(id).owner().to_name(),
        class: zone.class(),
        rtype: Rtype::NSEC,
        ttl: zone.negative_ttl(),
        rdata: nsec_rdata(zone, id, next).into(),
    }
}

/// The RDATA of the NSEC record [`nsec_record`] makes.
pub fn nsec_rdata(zone: &Zone, id: NodeId, next: NodeId) -> Vec<u8> {
    let next_name = zone.node(next).owner().to_name().to_lowercase();
    let mut rdata = next_name.as_wire().to_vec();
    rdata.extend_from_slice(&type_bitmap(zone, id));
    rdata
}

/// The records of type `rtype` at node `id`, one `Record` each.
pub(crate) fn records_of(zone: &Zone, id: NodeId, rtype: Rtype) -> Vec<Record> {
    let node = zone.node(id);
    let Some(set) = node.rrset(rtype) else {
        return Vec::new();
    };
    set.rdatas()
        .map(|r| Record {
            owner: node.owner().to_name(),
            class: zone.class(),
            rtype,
            ttl: set.ttl(),
            rdata: r.into(),
        })
        .collect()
}

/// Mends the NSEC chain of `zone` (a version with the change applied and
/// the old chain still in) at the names in `names` and at the NSEC owner
/// before each (whose next name may change): records to remove and to add
/// pushed onto `removed` and `added`.
pub fn mend(
    zone: &Zone,
    names: &BTreeMap<Box<[u8]>, Name>,
    removed: &mut Vec<Record>,
    added: &mut Vec<Record>,
) {
    let mut at: BTreeMap<Box<[u8]>, Name> = BTreeMap::new();
    for (key, owner) in names {
        at.insert(key.clone(), owner.clone());
        let before = match zone.find(owner.as_ref()) {
            Some(id) => prev_owner(zone, id),
            None => match zone.lookup(owner.as_ref()) {
                Lookup::NotFound { predecessor, .. } => zone
                    .rfind_from(predecessor, |n| has_nsec(zone, n.id()))
                    .unwrap_or(zone.apex_id()),
                Lookup::Found(id) => id,
            },
        };
        let p = zone.node(before).owner().to_name();
        at.insert(p.key(), p);
    }
    for owner in at.values() {
        let id = zone.find(owner.as_ref());
        let old = id.map_or_else(Vec::new, |id| records_of(zone, id, Rtype::NSEC));
        let new = id
            .filter(|&id| has_nsec(zone, id))
            .map(|id| nsec_record(zone, id, next_owner(zone, id)));
        let same = match &new {
            Some(n) => old.len() == 1 && old[0].rdata == n.rdata && old[0].ttl == n.ttl,
            None => old.is_empty(),
        };
        if !same {
            removed.extend(old);
            added.extend(new);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmaps_are_windows_of_bits() {
        // RFC 4034 §4.3's example: A MX RRSIG NSEC TYPE1234.
        let mut t = vec![1, 15, 46, 47, 1234];
        let b = encode_bitmap(&mut t);
        let mut want = vec![0x00, 0x06, 0x40, 0x01, 0x00, 0x00, 0x00, 0x03];
        // Window 4, 27 octets: type 1234 is bit 210 of the window.
        want.extend([0x04, 0x1b]);
        want.extend([0u8; 26]);
        want.push(0x20);
        assert_eq!(b, want);
    }
}
