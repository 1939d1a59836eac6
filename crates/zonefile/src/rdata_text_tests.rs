//! The presentation table against the wire descriptor table
//! (`lode_wire::rdata`): every name a type's text fields place, the wire
//! reads, writes and compares at the same place.

use super::*;
use lode_wire::rdata::{descriptor, Block};

/// One element of an RDATA's shape up to its last name.
#[derive(Debug, PartialEq, Eq)]
enum Shape {
    Octets(usize),
    Str,
    Name,
}

/// `shape` with adjacent octets merged and everything after the last name cut.
fn normal(shape: Vec<Shape>) -> Vec<Shape> {
    let mut out: Vec<Shape> = Vec::new();
    for s in shape {
        match (out.last_mut(), s) {
            (Some(Shape::Octets(a)), Shape::Octets(b)) => *a += b,
            (_, s) => out.push(s),
        }
    }
    let last = out
        .iter()
        .rposition(|s| *s == Shape::Name)
        .map_or(0, |i| i + 1);
    out.truncate(last);
    out
}

/// The shape the text fields give (up to the first field of no fixed form).
fn text_shape(fields: &[Field]) -> Vec<Shape> {
    let mut shape = Vec::new();
    for f in fields {
        shape.push(match *f {
            U8(_) | Alg => Shape::Octets(1),
            U16(_) | Type | CertType => Shape::Octets(2),
            U32(_) | Ttl(_) | Time(_) | Ipv4 => Shape::Octets(4),
            Ipv6 => Shape::Octets(16),
            Eui(n) => Shape::Octets(n),
            Locator64(_) => Shape::Octets(8),
            Str(_) | Tag | Salt | NextHash => Shape::Str,
            Name(_) => Shape::Name,
            _ => break,
        });
    }
    normal(shape)
}

/// The shape the wire descriptor gives.
fn wire_shape(blocks: &[Block]) -> Vec<Shape> {
    let mut shape = Vec::new();
    for b in blocks {
        match *b {
            Block::Fixed(n) => shape.push(Shape::Octets(n)),
            Block::Name => shape.push(Shape::Name),
            Block::NaptrHeader => {
                shape.push(Shape::Octets(4));
                shape.extend([Shape::Str, Shape::Str, Shape::Str]);
            }
            Block::Remainder => break,
        }
    }
    normal(shape)
}

#[test]
fn text_fields_put_names_where_the_wire_table_does() {
    let mut checked = 0;
    for t in 0..=u16::MAX {
        let Some(fields) = fields(Rtype(t)) else {
            continue;
        };
        let text = text_shape(fields);
        let wire = wire_shape(descriptor(Rtype(t)).blocks);
        assert_eq!(text, wire, "type {t}: text {fields:?}");
        checked += usize::from(!text.is_empty());
    }
    // NS, CNAME, SOA, MX, SRV, NAPTR, RRSIG, NSEC, DNAME … have names.
    assert!(checked >= 20, "{checked} types with names");
}
