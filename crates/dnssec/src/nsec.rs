//! The NSEC chain (RFC 4034 §4, RFC 4035 §2.3): which names own an NSEC
//! record, their type bitmaps and the next name.

use lode_wire::{Record, Rtype};
use lode_zonedb::{Node, NodeId, Zone};

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
    if rtype == Rtype::RRSIG || zone.shadow(id).is_some() {
        return false;
    }
    if id != zone.apex_id() && zone.node(id).is_delegation() {
        return matches!(rtype, Rtype::DS | Rtype::NSEC);
    }
    true
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
    let node = zone.node(id);
    let next_name = zone.node(next).owner().to_name().to_lowercase();
    let mut rdata = next_name.as_wire().to_vec();
    rdata.extend_from_slice(&type_bitmap(zone, id));
    Record {
        owner: node.owner().to_name(),
        class: zone.class(),
        rtype: Rtype::NSEC,
        ttl: zone.negative_ttl(),
        rdata: rdata.into(),
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
