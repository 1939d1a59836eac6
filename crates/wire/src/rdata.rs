//! Where domain names sit inside RDATA, per type: which may be compressed on
//! output (only the RFC 1035 types, RFC 3597 §4) and which name is the target
//! of additional-section processing (NS, MX, SRV, SVCB, HTTPS — as Knot DNS).

use crate::name::NameRef;
use crate::Rtype;

/// One field of an RDATA layout, as far as the message writer cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Opaque bytes of a fixed length.
    Fixed(usize),
    /// Character strings (a length byte each), this many.
    Strings(usize),
    /// A domain name: compressed on output if `compress` (RFC 3597 §4),
    /// lower-cased on output if `lower` (the RFC 4034 §6.2 types, which Knot
    /// DNS stores in canonical form).
    Name {
        /// Compression allowed.
        compress: bool,
        /// Written in lower case.
        lower: bool,
        /// Its position is remembered for later owners (glue) to point at;
        /// Knot does this for every name but the SVCB/HTTPS target.
        hint: bool,
    },
}

const fn name(compress: bool) -> Field {
    Field::Name {
        compress,
        lower: true,
        hint: true,
    }
}

/// The layout of one type's RDATA: the fields up to its last name (the rest
/// is opaque). Empty for types without names the writer must touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The leading fields.
    pub fields: &'static [Field],
}

impl Layout {
    /// True if the RDATA is written verbatim.
    pub fn is_opaque(&self) -> bool {
        self.fields.is_empty()
    }

    /// True if a name in it may be compressed.
    pub fn compresses(&self) -> bool {
        self.fields
            .iter()
            .any(|f| matches!(f, Field::Name { compress: true, .. }))
    }
}

/// The layout of `rtype`'s RDATA.
pub fn layout(rtype: Rtype) -> Layout {
    const ONE_C: &[Field] = &[name(true)];
    const ONE: &[Field] = &[name(false)];
    const TWO_C: &[Field] = &[name(true), name(true)];
    const TWO: &[Field] = &[name(false), name(false)];
    const MX: &[Field] = &[Field::Fixed(2), name(true)];
    const PREF: &[Field] = &[Field::Fixed(2), name(false)];
    const PX: &[Field] = &[Field::Fixed(2), name(false), name(false)];
    const SRV: &[Field] = &[Field::Fixed(6), name(false)];
    const NAPTR: &[Field] = &[Field::Fixed(4), Field::Strings(3), name(false)];
    const SIG: &[Field] = &[Field::Fixed(18), name(false)];
    const SVCB: &[Field] = &[
        Field::Fixed(2),
        Field::Name {
            compress: false,
            lower: false,
            hint: false,
        },
    ];
    let fields: &'static [Field] = match rtype {
        Rtype::NS
        | Rtype::CNAME
        | Rtype::PTR
        | Rtype::MD
        | Rtype::MF
        | Rtype::MB
        | Rtype::MG
        | Rtype::MR => ONE_C,
        Rtype::SOA | Rtype::MINFO => TWO_C,
        Rtype::MX => MX,
        Rtype::AFSDB | Rtype::RT | Rtype::KX => PREF,
        Rtype::RP => TWO,
        Rtype::PX => PX,
        Rtype::SRV => SRV,
        Rtype::NAPTR => NAPTR,
        Rtype::DNAME => ONE,
        Rtype::RRSIG | Rtype::SIG => SIG,
        Rtype::SVCB | Rtype::HTTPS => SVCB,
        _ => &[],
    };
    Layout { fields }
}

/// True if answer/authority RRsets of this type get A/AAAA records of their
/// target names in the additional section (Knot DNS: NS, MX, SRV, SVCB, HTTPS).
pub fn needs_additional(rtype: Rtype) -> bool {
    matches!(
        rtype,
        Rtype::NS | Rtype::MX | Rtype::SRV | Rtype::SVCB | Rtype::HTTPS
    )
}

/// The additional-processing target name in one RDATA of `rtype`, if any
/// (the first name of the RDATA).
pub fn target(rtype: Rtype, rdata: &[u8]) -> Option<NameRef<'_>> {
    if !needs_additional(rtype) {
        return None;
    }
    let mut pos = 0;
    for f in layout(rtype).fields {
        match *f {
            Field::Fixed(n) => pos += n,
            Field::Strings(_) => return None,
            Field::Name { .. } => {
                return rdata
                    .get(pos..)
                    .and_then(|r| NameRef::split_from(r).ok())
                    .map(|(n, _)| n)
            }
        }
    }
    None
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
        assert!(layout(Rtype::TXT).is_opaque());
        assert!(layout(Rtype::NSEC).is_opaque());
        assert_eq!(layout(Rtype::DNAME).fields, &[name(false)]);
        assert_eq!(rrsig_type_covered(&[0, 28, 13]), Some(Rtype::AAAA));
    }
}
