//! Source prefixes: the address block a source is accounted under, and the
//! exempt list.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The address block a source is limited as (e.g. `192.0.2.0/24`), for logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Prefix {
    /// The first address of the block (host bits zero).
    pub addr: IpAddr,
    /// The prefix length in bits.
    pub len: u8,
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// An address as 128 bits plus its family (IPv4 in the low 32 bits);
/// IPv4-mapped IPv6 sources (`::ffff:a.b.c.d`, as a dual-stack socket
/// reports them) count as IPv4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Addr {
    pub(crate) v6: bool,
    pub(crate) bits: u128,
}

impl Addr {
    /// Normalises a source address.
    #[inline]
    pub(crate) fn of(ip: IpAddr) -> Addr {
        match ip {
            IpAddr::V4(a) => Addr {
                v6: false,
                bits: u128::from(u32::from(a)),
            },
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(v4) => Addr {
                    v6: false,
                    bits: u128::from(u32::from(v4)),
                },
                None => Addr {
                    v6: true,
                    bits: u128::from(a),
                },
            },
        }
    }

    /// The address with all but the first `len` bits cleared.
    #[inline]
    pub(crate) fn masked(self, len: u8) -> u128 {
        self.bits & mask(self.v6, len)
    }

    /// The block of `len` bits holding this address.
    pub(crate) fn prefix(self, len: u8) -> Prefix {
        let bits = self.masked(len);
        let addr = if self.v6 {
            IpAddr::V6(Ipv6Addr::from(bits))
        } else {
            // The masked IPv4 value has only its low 32 bits set.
            IpAddr::V4(Ipv4Addr::from(bits as u32))
        };
        Prefix { addr, len }
    }
}

/// The netmask of `len` bits for the family (`len` is checked by `Config`).
#[inline]
pub(crate) fn mask(v6: bool, len: u8) -> u128 {
    let width: u32 = if v6 { 128 } else { 32 };
    let len = u32::from(len).min(width);
    if len == 0 {
        0
    } else {
        let all = if v6 { u128::MAX } else { u128::from(u32::MAX) };
        all & !all.checked_shr(len).unwrap_or(0)
    }
}

/// One exempt block, normalised.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Exempt {
    v6: bool,
    net: u128,
    mask: u128,
}

impl Exempt {
    /// The block `addr/len` (`len` checked by the caller).
    pub(crate) fn new(addr: IpAddr, len: u8) -> Exempt {
        let a = Addr::of(addr);
        // An IPv4-mapped IPv6 block (::ffff:0:0/96 and longer) is an IPv4 block.
        let len = if !a.v6 && addr.is_ipv6() {
            len.saturating_sub(96)
        } else {
            len
        };
        let mask = mask(a.v6, len);
        Exempt {
            v6: a.v6,
            net: a.bits & mask,
            mask,
        }
    }

    /// Whether the block holds `a`.
    #[inline]
    pub(crate) fn contains(&self, a: Addr) -> bool {
        self.v6 == a.v6 && a.bits & self.mask == self.net
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks() {
        assert_eq!(mask(false, 24), 0xffff_ff00);
        assert_eq!(mask(false, 32), 0xffff_ffff);
        assert_eq!(mask(false, 0), 0);
        assert_eq!(mask(true, 56), u128::MAX << 72);
        assert_eq!(mask(true, 128), u128::MAX);
    }

    #[test]
    fn mapped_v4_is_v4() {
        let m: IpAddr = "::ffff:192.0.2.77".parse().unwrap();
        let v: IpAddr = "192.0.2.77".parse().unwrap();
        assert_eq!(Addr::of(m), Addr::of(v));
        assert_eq!(Addr::of(m).prefix(24).to_string(), "192.0.2.0/24");
        let e = Exempt::new("::ffff:192.0.2.0".parse().unwrap(), 120);
        assert!(e.contains(Addr::of(v)));
    }

    #[test]
    fn prefix_display() {
        let a = Addr::of("2001:db8:aa:bbcc::1".parse().unwrap());
        assert_eq!(a.prefix(56).to_string(), "2001:db8:aa:bb00::/56");
    }
}
