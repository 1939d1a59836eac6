//! Serial number arithmetic (RFC 1982) for SOA serials.

/// True if serial `a` comes before serial `b` (RFC 1982 §3.2). Two serials
/// exactly 2³¹ apart are unordered: neither is before the other.
pub fn serial_lt(a: u32, b: u32) -> bool {
    let d = b.wrapping_sub(a);
    d != 0 && d < 0x8000_0000
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
