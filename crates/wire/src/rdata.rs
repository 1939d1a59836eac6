//! Where domain names sit inside RDATA, per type: which may be compressed on
//! output (only the RFC 1035 types, RFC 3597 §4) and which name is the target
//! of additional-section processing (NS, MX, SRV, SVCB, HTTPS — as Knot DNS).

use crate::name::NameRef;
use crate::Rtype;

/// The name layout of one type's RDATA, as the message writer needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Written verbatim (no compressible name, no additional target).
    Opaque,
    /// One name at `offset` (compressed on output if `compress`), followed
    /// by opaque bytes; the name is the additional-processing target.
    Target {
        /// Byte offset of the name in RDATA.
        offset: usize,
        /// RFC 3597 §4: compression allowed for this type.
        compress: bool,
    },
    /// `count` compressible names at the start (SOA, MINFO), then opaque bytes.
    Names {
        /// How many names.
        count: usize,
    },
}

/// The layout of `rtype`'s RDATA.
pub fn layout(rtype: Rtype) -> Layout {
    match rtype {
        Rtype::NS | Rtype::CNAME | Rtype::PTR | Rtype::MD | Rtype::MF | Rtype::MB
        | Rtype::MG | Rtype::MR => Layout::Target {
            offset: 0,
            compress: true,
        },
        Rtype::MX => Layout::Target {
            offset: 2,
            compress: true,
        },
        Rtype::SRV => Layout::Target {
            offset: 6,
            compress: false,
        },
        Rtype::SVCB | Rtype::HTTPS => Layout::Target {
            offset: 2,
            compress: false,
        },
        Rtype::SOA | Rtype::MINFO => Layout::Names { count: 2 },
        _ => Layout::Opaque,
    }
}

/// True if answer/authority RRsets of this type get A/AAAA records of their
/// target names in the additional section (Knot DNS: NS, MX, SRV, SVCB, HTTPS).
pub fn needs_additional(rtype: Rtype) -> bool {
    matches!(
        rtype,
        Rtype::NS | Rtype::MX | Rtype::SRV | Rtype::SVCB | Rtype::HTTPS
    )
}

/// The additional-processing target name in one RDATA of `rtype`, if any.
pub fn target(rtype: Rtype, rdata: &[u8]) -> Option<NameRef<'_>> {
    if !needs_additional(rtype) {
        return None;
    }
    match layout(rtype) {
        Layout::Target { offset, .. } => rdata
            .get(offset..)
            .and_then(|r| NameRef::split_from(r).ok())
            .map(|(n, _)| n),
        _ => None,
    }
}

/// The single name of a CNAME or DNAME RDATA.
pub fn single_name(rdata: &[u8]) -> Option<NameRef<'_>> {
    NameRef::split_from(rdata).ok().map(|(n, _)| n)
}

/// The type covered by an RRSIG RDATA (its first two bytes).
pub fn rrsig_type_covered(rdata: &[u8]) -> Option<Rtype> {
    match rdata {
        [a, b, ..] => Some(Rtype(u16::from_be_bytes([*a, *b]))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Name;

    #[test]
    fn targets() {
        let n: Name = "mail.example.".parse().unwrap();
        let mut mx = vec![0, 10];
        mx.extend_from_slice(n.as_wire());
        assert_eq!(target(Rtype::MX, &mx).unwrap(), n.as_ref());
        let mut srv = vec![0, 0, 0, 0, 0x13, 0xc4];
        srv.extend_from_slice(n.as_wire());
        assert_eq!(target(Rtype::SRV, &srv).unwrap(), n.as_ref());
        assert!(target(Rtype::CNAME, n.as_wire()).is_none());
        assert!(target(Rtype::MX, &[0]).is_none());
        assert_eq!(layout(Rtype::NAPTR), Layout::Opaque);
        assert_eq!(layout(Rtype::DNAME), Layout::Opaque);
        assert_eq!(rrsig_type_covered(&[0, 28, 13]), Some(Rtype::AAAA));
    }
}
