//! Requests as a client writes them — a query, an UPDATE — and a reply's
//! header read back: for tools and tests (the load generators of
//! `lode-bench`, the simulator, `lode update`), not for the query path.

use crate::message::HEADER_LEN;
use crate::{opcode, Class, Name, Record, Rtype};

/// A query for `name` `rtype` class IN with `id`: RD clear, no EDNS.
pub fn query(id: u16, name: &Name, rtype: Rtype) -> Vec<u8> {
    let mut m = Vec::with_capacity(HEADER_LEN + name.as_wire().len() + 4);
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    m.extend_from_slice(name.as_wire());
    m.extend_from_slice(&rtype.0.to_be_bytes());
    m.extend_from_slice(&Class::IN.0.to_be_bytes());
    m
}

/// An UPDATE message (RFC 2136) for `zone` (class IN) with these
/// prerequisites and updates, names uncompressed, no additional section.
pub fn update(id: u16, zone: &Name, prerequisites: &[Record], updates: &[Record]) -> Vec<u8> {
    let mut m = Vec::with_capacity(512);
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&(u16::from(opcode::UPDATE) << 11).to_be_bytes());
    for c in [1, prerequisites.len(), updates.len(), 0] {
        m.extend_from_slice(&(c as u16).to_be_bytes());
    }
    m.extend_from_slice(zone.as_wire());
    m.extend_from_slice(&Rtype::SOA.0.to_be_bytes());
    m.extend_from_slice(&Class::IN.0.to_be_bytes());
    for r in prerequisites.iter().chain(updates) {
        r.put_uncompressed(&mut m);
    }
    m
}

/// The header of a reply, read from its first 12 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// The message ID.
    pub id: u16,
    /// The OPCODE.
    pub opcode: u8,
    /// The RCODE (the header's 4 bits; extended RCODEs are in the OPT).
    pub rcode: u8,
    /// Authoritative answer.
    pub aa: bool,
    /// Truncated.
    pub tc: bool,
    /// Question count.
    pub qdcount: u16,
    /// Answer count.
    pub ancount: u16,
    /// Authority count.
    pub nscount: u16,
    /// Additional count.
    pub arcount: u16,
}

impl Reply {
    /// The header of `msg` if it is a reply (QR set) at least 12 bytes long.
    pub fn of(msg: &[u8]) -> Option<Reply> {
        let h = msg.get(..HEADER_LEN)?;
        if h[2] & 0x80 == 0 {
            return None;
        }
        let count = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
        Some(Reply {
            id: count(0),
            opcode: (h[2] >> 3) & 0x0F,
            rcode: h[3] & 0x0F,
            aa: h[2] & 0x04 != 0,
            tc: h[2] & 0x02 != 0,
            qdcount: count(4),
            ancount: count(6),
            nscount: count(8),
            arcount: count(10),
        })
    }
}

/// The offset after the (possibly compressed) name at `pos`, without
/// reading it: None when it runs past `msg` or has a bad label type.
pub fn skip_name(msg: &[u8], mut pos: usize) -> Option<usize> {
    loop {
        let len = *msg.get(pos)?;
        match len {
            0 => return Some(pos + 1),
            l if l & 0xC0 == 0xC0 => return pos.checked_add(2).filter(|&e| e <= msg.len()),
            l if l & 0xC0 == 0 => pos += 1 + usize::from(l),
            _ => return None,
        }
    }
}

/// One record of a reply, not decoded: where its owner name starts, its type
/// and where its RDATA lies in the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skimmed {
    /// Offset of the record's owner name (possibly compressed).
    pub owner: usize,
    /// The record's type.
    pub rtype: Rtype,
    /// The range of its RDATA in the message.
    pub rdata: std::ops::Range<usize>,
}

/// The first `count` records after the question section, skimmed (owner
/// names skipped, nothing decompressed or allocated). Ends at the first
/// record that runs past the message.
pub fn records(msg: &[u8], count: usize) -> impl Iterator<Item = Skimmed> + '_ {
    let mut pos = Reply::of(msg)
        .and_then(|h| (0..h.qdcount).try_fold(HEADER_LEN, |p, _| skip_name(msg, p).map(|e| e + 4)));
    (0..count).map_while(move |_| {
        let owner = pos?;
        let at = skip_name(msg, owner)?;
        let fixed = msg.get(at..at + 10)?;
        let rtype = Rtype(u16::from_be_bytes([fixed[0], fixed[1]]));
        let start = at + 10;
        let end = start + usize::from(u16::from_be_bytes([fixed[8], fixed[9]]));
        if end > msg.len() {
            pos = None;
            return None;
        }
        pos = Some(end);
        Some(Skimmed {
            owner,
            rtype,
            rdata: start..end,
        })
    })
}

/// One record of a reply's answer section, not decoded: its type and where
/// its RDATA lies in the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The record's type.
    pub rtype: Rtype,
    /// The range of its RDATA in the message.
    pub rdata: std::ops::Range<usize>,
}

/// The records of a reply's answer section, skimmed (owner names skipped,
/// nothing decompressed or allocated): what a load generator needs to find
/// an SOA or the end of a transfer. Ends at the first record that runs past
/// the message.
pub fn answers(msg: &[u8]) -> impl Iterator<Item = Answer> + '_ {
    let count = Reply::of(msg).map_or(0, |h| usize::from(h.ancount));
    records(msg, count).map(|r| Answer {
        rtype: r.rtype,
        rdata: r.rdata,
    })
}

/// The serial of the first SOA in a NOERROR reply's answer section.
pub fn answer_soa_serial(msg: &[u8]) -> Option<u32> {
    if Reply::of(msg)?.rcode != 0 {
        return None;
    }
    let soa = answers(msg).find(|a| a.rtype == Rtype::SOA)?;
    // The serial follows the two names of the RDATA.
    let p = skip_name(msg, skip_name(msg, soa.rdata.start)?)?;
    let s = msg.get(p..p + 4).filter(|_| p + 4 <= soa.rdata.end)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::parse_query;

    fn name(s: &str) -> Name {
        Name::parse(s, Some(&Name::root())).unwrap()
    }

    #[test]
    fn a_query_parses_back_as_written() {
        let q = query(0x1234, &name("www.example."), Rtype::AAAA);
        let p = parse_query(&q).unwrap();
        assert_eq!(p.id, 0x1234);
        let question = p.question.unwrap();
        assert_eq!(question.qtype, Rtype::AAAA);
        assert_eq!(question.qclass, Class::IN);
        assert!(Reply::of(&q).is_none(), "a query is not a reply");
    }

    #[test]
    fn an_update_carries_its_sections_and_a_reply_header_reads_back() {
        let zone = name("example.");
        let rec = Record {
            owner: name("a.example."),
            class: Class::IN,
            rtype: Rtype::A,
            ttl: 300,
            rdata: vec![192, 0, 2, 1].into(),
        };
        let mut m = update(7, &zone, &[], &[rec.clone(), rec]);
        assert_eq!(crate::message::opcode(&m), opcode::UPDATE);
        m[2] |= 0x80 | 0x04;
        m[3] |= 5;
        let r = Reply::of(&m).unwrap();
        assert_eq!(
            (r.id, r.opcode, r.rcode, r.aa, r.tc),
            (7, opcode::UPDATE, 5, true, false)
        );
        assert_eq!((r.qdcount, r.ancount, r.nscount, r.arcount), (1, 0, 2, 0));
        assert!(Reply::of(&m[..11]).is_none());
    }

    #[test]
    fn answers_are_skimmed_through_compression_to_the_soa_serial() {
        // A reply to "example. SOA": the answer's owner and the SOA's MNAME
        // point at the question's name.
        let mut m = query(9, &name("example."), Rtype::SOA);
        m[2] = 0x84;
        m[7] = 2;
        let mut rr = |rtype: Rtype, rdata: &[u8]| {
            m.extend_from_slice(&[0xC0, 12]);
            m.extend_from_slice(&rtype.0.to_be_bytes());
            m.extend_from_slice(&[0, 1, 0, 0, 0, 60]);
            m.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
            m.extend_from_slice(rdata);
        };
        rr(Rtype::TXT, b"\x02hi");
        let mut soa = vec![0xC0, 12, 1, b'h', 0xC0, 12];
        soa.extend_from_slice(&2_026_112_901_u32.to_be_bytes());
        soa.extend_from_slice(&[0; 16]);
        rr(Rtype::SOA, &soa);
        let types: Vec<Rtype> = answers(&m).map(|a| a.rtype).collect();
        assert_eq!(types, [Rtype::TXT, Rtype::SOA]);
        assert_eq!(answer_soa_serial(&m), Some(2_026_112_901));
        // Cut inside the SOA's RDATA: the TXT is read, the SOA is not.
        let cut = &m[..m.len() - 3];
        assert_eq!(answers(cut).count(), 1);
        assert_eq!(answer_soa_serial(cut), None);
    }
}
