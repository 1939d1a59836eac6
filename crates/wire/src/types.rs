//! Record types, classes, opcodes and response codes.

use std::fmt;

macro_rules! code_type {
    (
        $(#[$meta:meta])* $ty:ident, $generic:literal;
        $( $(#[$cmeta:meta])* $name:ident = $val:literal ),* $(,)?
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $ty(pub u16);

        impl $ty {
            $( $(#[$cmeta])* #[doc = stringify!($name)] pub const $name: $ty = $ty($val); )*

            /// The mnemonic, if this value has one.
            pub fn mnemonic(self) -> Option<&'static str> {
                match self.0 {
                    $( $val => Some(stringify!($name)), )*
                    _ => None,
                }
            }

            /// Parses a mnemonic or the generic form (case ignored).
            pub fn from_mnemonic(s: &str) -> Option<$ty> {
                $( if s.eq_ignore_ascii_case(stringify!($name)) { return Some($ty($val)); } )*
                let rest = s.get(..$generic.len())
                    .filter(|p| p.eq_ignore_ascii_case($generic))
                    .and_then(|_| s.get($generic.len()..))?;
                if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                rest.parse::<u16>().ok().map($ty)
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.mnemonic() {
                    Some(m) => f.write_str(m),
                    None => write!(f, concat!($generic, "{}"), self.0),
                }
            }
        }

        impl fmt::Debug for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(self, f)
            }
        }
    };
}

code_type! {
    /// A resource record type (RFC 1035 §3.2.2 and later registrations).
    Rtype, "TYPE";
    A = 1, NS = 2, MD = 3, MF = 4, CNAME = 5, SOA = 6, MB = 7, MG = 8, MR = 9,
    NULL = 10, WKS = 11, PTR = 12, HINFO = 13, MINFO = 14, MX = 15, TXT = 16,
    RP = 17, AFSDB = 18, X25 = 19, ISDN = 20, RT = 21, NSAP = 22, SIG = 24,
    KEY = 25, PX = 26, GPOS = 27, AAAA = 28, LOC = 29, NXT = 30, SRV = 33,
    NAPTR = 35, KX = 36, CERT = 37, A6 = 38, DNAME = 39, OPT = 41, APL = 42,
    DS = 43, SSHFP = 44, IPSECKEY = 45, RRSIG = 46, NSEC = 47, DNSKEY = 48,
    DHCID = 49, NSEC3 = 50, NSEC3PARAM = 51, TLSA = 52, SMIMEA = 53, HIP = 55,
    CDS = 59, CDNSKEY = 60, OPENPGPKEY = 61, CSYNC = 62, ZONEMD = 63,
    SVCB = 64, HTTPS = 65, SPF = 99, NID = 104, L32 = 105, L64 = 106, LP = 107,
    EUI48 = 108, EUI64 = 109, TKEY = 249, TSIG = 250, IXFR = 251, AXFR = 252,
    MAILB = 253, MAILA = 254, ANY = 255, URI = 256, CAA = 257, DLV = 32769,
}

code_type! {
    /// A class (RFC 1035 §3.2.4).
    Class, "CLASS";
    IN = 1, CH = 3, HS = 4, NONE = 254, ANY = 255,
}

impl Rtype {
    /// Types that are only meaningful in a question or message (never stored in a zone).
    pub fn is_meta(self) -> bool {
        matches!(self.0, 41 | 128..=255)
    }
}

/// Header opcodes (RFC 1035 §4.1.1, RFC 1996, RFC 2136).
pub mod opcode {
    /// Standard query.
    pub const QUERY: u8 = 0;
    /// Inverse query (obsolete).
    pub const IQUERY: u8 = 1;
    /// Server status.
    pub const STATUS: u8 = 2;
    /// Zone change notification.
    pub const NOTIFY: u8 = 4;
    /// Dynamic update.
    pub const UPDATE: u8 = 5;
}

/// Response codes (RFC 1035 §4.1.1, RFC 6891).
pub mod rcode {
    /// No error.
    pub const NOERROR: u16 = 0;
    /// Format error.
    pub const FORMERR: u16 = 1;
    /// Server failure.
    pub const SERVFAIL: u16 = 2;
    /// Name does not exist.
    pub const NXDOMAIN: u16 = 3;
    /// Not implemented.
    pub const NOTIMP: u16 = 4;
    /// Refused.
    pub const REFUSED: u16 = 5;
    /// Name exists when it should not (also DNAME overflow, RFC 6672 §2.2).
    pub const YXDOMAIN: u16 = 6;
    /// An RRset exists when it should not (RFC 2136).
    pub const YXRRSET: u16 = 7;
    /// An RRset does not exist when it should (RFC 2136).
    pub const NXRRSET: u16 = 8;
    /// Not authoritative.
    pub const NOTAUTH: u16 = 9;
    /// A name is outside the zone of the update (RFC 2136).
    pub const NOTZONE: u16 = 10;
    /// Bad OPT version (extended rcode 16, RFC 6891).
    pub const BADVERS: u16 = 16;

    /// The mnemonic of an RCODE (extended codes included), `RCODEn` for others.
    pub fn name(code: u16) -> std::borrow::Cow<'static, str> {
        let s = match code {
            0 => "NOERROR",
            1 => "FORMERR",
            2 => "SERVFAIL",
            3 => "NXDOMAIN",
            4 => "NOTIMP",
            5 => "REFUSED",
            6 => "YXDOMAIN",
            7 => "YXRRSET",
            8 => "NXRRSET",
            9 => "NOTAUTH",
            10 => "NOTZONE",
            16 => "BADVERS",
            23 => "BADCOOKIE",
            _ => return format!("RCODE{code}").into(),
        };
        s.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mnemonics() {
        assert_eq!(Rtype::from_mnemonic("naptr"), Some(Rtype::NAPTR));
        assert_eq!(Rtype::from_mnemonic("TYPE35"), Some(Rtype::NAPTR));
        assert_eq!(Rtype::from_mnemonic("type65534"), Some(Rtype(65534)));
        assert_eq!(Rtype::from_mnemonic("TYPE"), None);
        assert_eq!(Rtype::from_mnemonic("TYPE70000"), None);
        assert_eq!(Rtype::from_mnemonic("FOO"), None);
        assert_eq!(Rtype(65534).to_string(), "TYPE65534");
        assert_eq!(Rtype::HTTPS.to_string(), "HTTPS");
        assert_eq!(Class::from_mnemonic("CLASS1"), Some(Class::IN));
        assert_eq!(Class::IN.to_string(), "IN");
        assert_eq!(Class(42).to_string(), "CLASS42");
        assert_eq!(rcode::name(rcode::NOTAUTH), "NOTAUTH");
        assert_eq!(rcode::name(12), "RCODE12");
    }
}
