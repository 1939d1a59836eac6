//! SOA serial number arithmetic (RFC 1982).

/// The result of comparing two serials (RFC 1982).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SerialOrder {
    /// The same serial.
    Equal,
    /// The first is greater.
    Greater,
    /// The first is lower.
    Lower,
    /// They are 2^31 apart.
    Incomparable,
}

/// Compares serials `a` and `b` in serial number arithmetic (RFC 1982).
pub fn serial_cmp(a: u32, b: u32) -> SerialOrder {
    let diff = a.wrapping_sub(b);
    match diff {
        0 => SerialOrder::Equal,
        0x8000_0000 => SerialOrder::Incomparable,
        d if d < 0x8000_0000 => SerialOrder::Greater,
        _ => SerialOrder::Lower,
    }
}
