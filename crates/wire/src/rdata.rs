//! The RDATA descriptor table: for each type, one row saying how its RDATA
//! is laid out and what is done with the names in it — read from messages
//! (decompressed, layout checked, as Knot DNS's packet parser), written to
//! messages (which names may be compressed, RFC 3597 §4; which are
//! lower-cased; which the additional section and later glue point at), and
//! compared (the canonical form, RFC 4034 §6.2 as amended by RFC 6840 §5.1:
//! NSEC's next name keeps its case, as Knot DNS stores it).
//!
//! ```text
//!  descriptor(rtype) ──▶ blocks   Fixed(n) | Name | NaptrHeader | Remainder   (reading, canonical form)
//!                        known    Knot knows the type (empty RDATA refused in class IN)
//!                        lower    names lower-cased (stored, compared, written)
//!                        compress names may be compressed on output (RFC 1035 types)
//!                        written  how the message writer sees the names:
//!                                 the blocks' | none (verbatim) | the SVCB/HTTPS target
//!  layout(rtype)    ──▶ the writer's fields, derived from the row
//! ```
//!
//! The presentation form of each type (zone files, `dig`-style output) is
//! `lode-zonefile`'s `rdata_text`, which names its fields for messages.

use crate::name::NameRef;
use crate::Rtype;

/// One block of a type's RDATA, as Knot's descriptors describe it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    /// Bytes of a fixed length.
    Fixed(usize),
    /// A domain name (decompressed when read).
    Name,
    /// NAPTR's order, preference and three character strings.
    NaptrHeader,
    /// Whatever is left (the layout is not checked past it).
    Remainder,
}

/// How the message writer sees a type's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    /// The names of the blocks, up to the last one.
    Names,
    /// None: the RDATA is written verbatim (types whose names Knot neither
    /// compresses nor lower-cases on output: NSEC, NXT, LP, TKEY, TSIG).
    Verbatim,
    /// SVCB/HTTPS: the target after the priority, never compressed nor
    /// lower-cased, and no later name points into it (RFC 9460 §2.2).
    SvcbTarget,
}

/// One row of the table (see the module note).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptor {
    /// The layout, for reading and the canonical form.
    pub blocks: &'static [Block],
    /// Knot knows the type: empty RDATA is refused in class IN.
    pub known: bool,
    /// Its names are lower-cased in the canonical form (and so stored and
    /// written lower-cased, as Knot DNS does).
    pub lower: bool,
    /// Its names may be compressed on output (RFC 3597 §4: the RFC 1035 types).
    pub compress: bool,
    written: Written,
}

const fn row(
    blocks: &'static [Block],
    lower: bool,
    compress: bool,
    written: Written,
) -> Descriptor {
    Descriptor {
        blocks,
        known: true,
        lower,
        compress,
        written,
    }
}

const fn names(blocks: &'static [Block], compress: bool) -> Descriptor {
    row(blocks, true, compress, Written::Names)
}

const fn opaque(blocks: &'static [Block]) -> Descriptor {
    row(blocks, false, false, Written::Verbatim)
}

/// The row of `rtype`.
pub const fn descriptor(rtype: Rtype) -> Descriptor {
    use Block::{Fixed, Name as N, NaptrHeader, Remainder};
    const REM: &[Block] = &[Remainder];
    const ONE: &[Block] = &[N];
    const TWO: &[Block] = &[N, N];
    const PREF: &[Block] = &[Fixed(2), N];
    const NAME_REM: &[Block] = &[N, Remainder];
    match rtype.0 {
        // NS CNAME PTR MD MF MB MG MR: RFC 1035, compressed.
        2 | 5 | 12 | 3 | 4 | 7 | 8 | 9 => names(ONE, true),
        6 => names(&[N, N, Fixed(20)], true),  // SOA
        14 => names(TWO, true),                // MINFO
        15 => names(PREF, true),               // MX
        17 => names(TWO, false),               // RP
        18 | 21 | 36 => names(PREF, false),    // AFSDB RT KX
        26 => names(&[Fixed(2), N, N], false), // PX
        33 => names(&[Fixed(6), N], false),    // SRV
        35 => names(&[NaptrHeader, N], false), // NAPTR
        39 => names(ONE, false),               // DNAME
        24 | 46 => names(&[Fixed(18), N, Remainder], false), // SIG RRSIG
        30 => row(NAME_REM, true, false, Written::Verbatim), // NXT
        47 | 249 | 250 => opaque(NAME_REM),    // NSEC TKEY TSIG
        107 => opaque(PREF),                   // LP
        64 | 65 => row(REM, false, false, Written::SvcbTarget), // SVCB HTTPS
        1 => opaque(&[Fixed(4)]),              // A
        28 | 29 => opaque(&[Fixed(16)]),       // AAAA LOC
        104 | 106 => opaque(&[Fixed(10)]),     // NID L64
        105 | 108 => opaque(&[Fixed(6)]),      // L32 EUI48
        109 => opaque(&[Fixed(8)]),            // EUI64
        10 | 13 | 16 | 25 | 37 | 41 | 42 | 43 | 44 | 45 | 48 | 49 | 50 | 51 | 52 | 53 | 59 | 60
        | 61 | 62 | 63 | 99 | 251 | 252 | 255 | 256 | 257 => opaque(REM),
        _ => Descriptor {
            known: false,
            ..opaque(REM)
        },
    }
}

/// One field of the message writer's layout of a type.
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

/// The message writer's layout of one type's RDATA: the fields up to its
/// last name (the rest is written verbatim). Empty for types whose names
/// the writer does not touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    fields: [Field; 4],
    len: usize,
}

impl Layout {
    const OPAQUE: Layout = Layout {
        fields: [Field::Fixed(0); 4],
        len: 0,
    };

    /// The leading fields.
    pub fn fields(&self) -> &[Field] {
        &self.fields[..self.len]
    }

    /// True if the RDATA is written verbatim.
    pub fn is_opaque(&self) -> bool {
        self.len == 0
    }

    /// True if a name in it may be compressed.
    pub fn compresses(&self) -> bool {
        self.fields()
            .iter()
            .any(|f| matches!(f, Field::Name { compress: true, .. }))
    }

    const fn push(&mut self, f: Field) {
        self.fields[self.len] = f;
        self.len += 1;
    }
}

/// The message writer's layout of `rtype`'s RDATA, from its row: made when
/// the server is compiled for the types below 256 (every type with names the
/// writer touches), so the query path only indexes a table.
pub fn layout(rtype: Rtype) -> Layout {
    static LAYOUTS: [Layout; 256] = {
        let mut all = [Layout::OPAQUE; 256];
        let mut t = 0;
        while t < 256 {
            all[t] = derive(descriptor(Rtype(t as u16)));
            t += 1;
        }
        all
    };
    match LAYOUTS.get(rtype.0 as usize) {
        Some(l) => *l,
        None => derive(descriptor(rtype)),
    }
}

/// The writer's layout a row calls for (see [`layout`]).
const fn derive(d: Descriptor) -> Layout {
    let mut l = Layout::OPAQUE;
    match d.written {
        Written::Verbatim => {}
        Written::SvcbTarget => {
            l.push(Field::Fixed(2));
            l.push(Field::Name {
                compress: false,
                lower: false,
                hint: false,
            });
        }
        Written::Names => {
            // Up to the last name: the rest is written verbatim.
            let mut end = d.blocks.len();
            while end > 0 && !matches!(d.blocks[end - 1], Block::Name) {
                end -= 1;
            }
            let mut i = 0;
            while i < end {
                match d.blocks[i] {
                    Block::Fixed(n) => l.push(Field::Fixed(n)),
                    Block::NaptrHeader => {
                        l.push(Field::Fixed(4));
                        l.push(Field::Strings(3));
                    }
                    Block::Name => l.push(Field::Name {
                        compress: d.compress,
                        lower: d.lower,
                        hint: true,
                    }),
                    Block::Remainder => {}
                }
                i += 1;
            }
        }
    }
    l
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
    for f in layout(rtype).fields() {
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

/// The original TTL of an RRSIG RDATA (bytes 4 to 8).
pub fn rrsig_original_ttl(rdata: &[u8]) -> Option<u32> {
    let b = rdata.get(4..8)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
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
        let plain = Field::Name {
            compress: false,
            lower: true,
            hint: true,
        };
        assert_eq!(layout(Rtype::DNAME).fields(), &[plain]);
        assert_eq!(rrsig_type_covered(&[0, 28, 13]), Some(Rtype::AAAA));
    }

    #[test]
    fn rows_where_reading_writing_and_comparing_differ() {
        use Block::{Fixed, Name as N, Remainder};
        // NXT: read with its name, lower-cased when compared, written verbatim.
        let nxt = descriptor(Rtype(30));
        assert_eq!(nxt.blocks, &[N, Remainder]);
        assert!(nxt.lower && layout(Rtype(30)).is_opaque());
        // NSEC (RFC 6840 §5.1) and LP: names kept as they are, written verbatim.
        assert!(!descriptor(Rtype::NSEC).lower && layout(Rtype::NSEC).is_opaque());
        assert_eq!(descriptor(Rtype(107)).blocks, &[Fixed(2), N]);
        assert!(layout(Rtype(107)).is_opaque());
        // SVCB: opaque to the reader, its target known to the writer.
        assert_eq!(descriptor(Rtype::SVCB).blocks, &[Remainder]);
        assert_eq!(
            layout(Rtype::HTTPS).fields(),
            &[
                Field::Fixed(2),
                Field::Name {
                    compress: false,
                    lower: false,
                    hint: false
                }
            ]
        );
        // Compression only for the RFC 1035 types; the writer stops at the
        // last name (SOA's 20 octets are written verbatim).
        assert!(layout(Rtype::SOA).compresses() && !layout(Rtype::SRV).compresses());
        assert_eq!(layout(Rtype::SOA).fields().len(), 2);
        assert_eq!(
            layout(Rtype::NAPTR).fields()[..2],
            [Field::Fixed(4), Field::Strings(3)]
        );
        // Types Knot does not know (WKS among them) take empty RDATA.
        assert!(!descriptor(Rtype(11)).known && descriptor(Rtype::A).known);
    }
}
