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

/// True if serial `a` comes before serial `b` (RFC 1982 §3.2). Two serials
/// exactly 2³¹ apart are unordered: neither is before the other.
pub fn serial_lt(a: u32, b: u32) -> bool {
    serial_cmp(a, b) == SerialOrder::Lower
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

#[cfg(test)]
mod tests {
    use super::serial_lt;

    #[test]
    fn rfc1982_order() {
        assert!(serial_lt(1, 2));
        assert!(!serial_lt(2, 1));
        assert!(!serial_lt(5, 5));
        assert!(serial_lt(u32::MAX, 0));
        assert!(serial_lt(0xFFFF_FFF0, 5));
        assert!(!serial_lt(5, 0xFFFF_FFF0));
        assert!(serial_lt(0, 0x7FFF_FFFF));
        assert!(!serial_lt(0, 0x8000_0000));
        assert!(!serial_lt(0x8000_0000, 0));
    }
}
