//! Per-type RDATA text codecs: presentation tokens → uncompressed wire, and wire →
//! the presentation form Knot DNS prints (single spaces between fields).
//!
//! Most types are a sequence of [`Field`]s described by one table ([`fields`]);
//! the same table drives parsing and printing. Its names stand where the wire
//! descriptor table (`lode_wire::rdata`) reads, writes and compares them (a
//! test holds the two together). LOC and SVCB/HTTPS have their own
//! code (here and in `svcb.rs`). Any type can be written as `\# len hex`
//! (RFC 3597); for a known type the bytes are checked against its layout.

use std::fmt::Write;
use std::net::{Ipv4Addr, Ipv6Addr};

use lode_wire::{Name, NameRef, Rtype};

use crate::lexer::Token;
use crate::svcb;
use crate::text::{
    base32hex_into, escape_quoted, hex_into, name_into, parse_time, parse_ttl, parse_uint,
    push_base32hex, push_base64, push_hex, push_time, show, unescape_into, Base64,
};

/// One RDATA field; the string is its description for error messages.
#[derive(Clone, Copy, Debug)]
enum Field {
    /// 8-bit number.
    U8(&'static str),
    /// 16-bit number.
    U16(&'static str),
    /// 32-bit number.
    U32(&'static str),
    /// 32-bit number of seconds, TTL units allowed (`1h`).
    Ttl(&'static str),
    /// DNSSEC algorithm: number or mnemonic.
    Alg,
    /// A domain name (uncompressed, case kept).
    Name(&'static str),
    /// An IPv4 address.
    Ipv4,
    /// An IPv6 address.
    Ipv6,
    /// One character string (≤ 255 octets, length-prefixed).
    Str(&'static str),
    /// One or more character strings; longer ones are split in 255-octet pieces (TXT).
    Strs,
    /// The rest of the RDATA as one string without a length octet (CAA value, URI target).
    RawStr(&'static str),
    /// CAA tag: 1-255 letters and digits, length-prefixed.
    Tag,
    /// Hex for the rest of the RDATA (white space allowed).
    Hex(&'static str),
    /// Base64 for the rest of the RDATA (white space allowed).
    B64(&'static str),
    /// Length-prefixed hex, `-` for empty (NSEC3 salt).
    Salt,
    /// Length-prefixed base32hex (NSEC3 next hashed owner).
    NextHash,
    /// A type mnemonic (RRSIG type covered).
    Type,
    /// An RRSIG time.
    Time(&'static str),
    /// A type bitmap for the rest of the RDATA (RFC 4034 §4.1.2).
    Bitmap,
    /// An EUI-48 or EUI-64 address of this many octets, `xx-xx-...` (RFC 7043).
    Eui(usize),
    /// CERT certificate type: number or mnemonic (RFC 4398 §2.1); printed as a number.
    CertType,
    /// IPSECKEY gateway type, algorithm and gateway (RFC 4025 §2.3-2.5), three tokens.
    Gateway,
    /// Base64 for the rest of the RDATA, which may be absent (IPSECKEY public key).
    OptB64(&'static str),
    /// APL items for the rest of the RDATA, possibly none (RFC 3123 §4).
    Apl,
    /// A 64-bit locator or node ID, `xxxx:xxxx:xxxx:xxxx` (RFC 6742 §2.1.1).
    Locator64(&'static str),
    /// WKS protocol and service bitmap for the rest of the RDATA (RFC 1035 §3.4.2).
    Services,
}

use Field::*;

/// The field layout of a type handled by the table, or `None`.
fn fields(t: Rtype) -> Option<&'static [Field]> {
    const NAME: &[Field] = &[Name("name")];
    const DS: &[Field] = &[U16("key tag"), Alg, U8("digest type"), Hex("digest")];
    const DNSKEY: &[Field] = &[U16("flags"), U8("protocol"), Alg, B64("public key")];
    const RRSIG: &[Field] = &[
        Type,
        Alg,
        U8("labels"),
        Ttl("original TTL"),
        Time("expiration"),
        Time("inception"),
        U16("key tag"),
        Name("signer"),
        B64("signature"),
    ];
    Some(match t {
        Rtype::A => &[Ipv4],
        Rtype::AAAA => &[Ipv6],
        Rtype::NS
        | Rtype::CNAME
        | Rtype::DNAME
        | Rtype::PTR
        | Rtype::MD
        | Rtype::MF
        | Rtype::MB => NAME,
        Rtype::MG | Rtype::MR => NAME,
        Rtype::SOA => &[
            Name("primary server"),
            Name("mailbox"),
            U32("serial"),
            Ttl("refresh"),
            Ttl("retry"),
            Ttl("expire"),
            Ttl("minimum"),
        ],
        Rtype::MX | Rtype::KX | Rtype::RT | Rtype::AFSDB => &[U16("preference"), Name("exchange")],
        Rtype::TXT | Rtype::SPF => &[Strs],
        Rtype::HINFO => &[Str("cpu"), Str("os")],
        Rtype::MINFO | Rtype::RP => &[Name("mailbox"), Name("text name")],
        Rtype::SRV => &[U16("priority"), U16("weight"), U16("port"), Name("target")],
        Rtype::NAPTR => &[
            U16("order"),
            U16("preference"),
            Str("flags"),
            Str("services"),
            Str("regexp"),
            Name("replacement"),
        ],
        Rtype::CAA => &[U8("flags"), Tag, RawStr("value")],
        Rtype::URI => &[U16("priority"), U16("weight"), RawStr("target")],
        Rtype::SSHFP => &[U8("algorithm"), U8("fingerprint type"), Hex("fingerprint")],
        Rtype::TLSA | Rtype::SMIMEA => &[
            U8("certificate usage"),
            U8("selector"),
            U8("matching type"),
            Hex("certificate data"),
        ],
        Rtype::DS | Rtype::CDS | Rtype::DLV => DS,
        Rtype::DNSKEY | Rtype::CDNSKEY | Rtype::KEY => DNSKEY,
        Rtype::RRSIG | Rtype::SIG => RRSIG,
        Rtype::NSEC => &[Name("next name"), Bitmap],
        Rtype::NSEC3 => &[
            U8("hash algorithm"),
            U8("flags"),
            U16("iterations"),
            Salt,
            NextHash,
            Bitmap,
        ],
        Rtype::NSEC3PARAM => &[U8("hash algorithm"), U8("flags"), U16("iterations"), Salt],
        Rtype::CSYNC => &[U32("serial"), U16("flags"), Bitmap],
        Rtype::ZONEMD => &[
            U32("serial"),
            U8("scheme"),
            U8("hash algorithm"),
            Hex("digest"),
        ],
        Rtype::OPENPGPKEY => &[B64("key")],
        Rtype::DHCID => &[B64("data")],
        Rtype::EUI48 => &[Eui(6)],
        Rtype::EUI64 => &[Eui(8)],
        Rtype::CERT => &[CertType, U16("key tag"), Alg, B64("certificate")],
        Rtype::APL => &[Apl],
        Rtype::IPSECKEY => &[U8("precedence"), Gateway, OptB64("public key")],
        Rtype::NID => &[U16("preference"), Locator64("node ID")],
        Rtype::L32 => &[U16("preference"), Ipv4],
        Rtype::L64 => &[U16("preference"), Locator64("locator")],
        Rtype::LP => &[U16("preference"), Name("pointer")],
        Rtype::WKS => &[Ipv4, Services],
        _ => return None,
    })
}

/// True if the type has a presentation format of its own (not only `\#`).
pub(crate) fn is_known(t: Rtype) -> bool {
    fields(t).is_some() || matches!(t, Rtype::LOC | Rtype::SVCB | Rtype::HTTPS)
}

/// DNSSEC algorithm mnemonics (RFC 8624 registry).
const ALGORITHMS: &[(&str, u8)] = &[
    ("RSAMD5", 1),
    ("DH", 2),
    ("DSA", 3),
    ("RSASHA1", 5),
    ("DSA-NSEC3-SHA1", 6),
    ("RSASHA1-NSEC3-SHA1", 7),
    ("RSASHA256", 8),
    ("RSASHA512", 10),
    ("ECC-GOST", 12),
    ("ECDSAP256SHA256", 13),
    ("ECDSAP384SHA384", 14),
    ("ED25519", 15),
    ("ED448", 16),
    ("INDIRECT", 252),
    ("PRIVATEDNS", 253),
    ("PRIVATEOID", 254),
];

/// CERT certificate type mnemonics (RFC 4398 §2.1).
const CERT_TYPES: &[(&str, u16)] = &[
    ("PKIX", 1),
    ("SPKI", 2),
    ("PGP", 3),
    ("IPKIX", 4),
    ("ISPKI", 5),
    ("IPGP", 6),
    ("ACPKIX", 7),
    ("IACPKIX", 8),
    ("URI", 253),
    ("OID", 254),
];

/// Parses the RDATA tokens of one record of type `t`, appending wire form to `out`.
/// An error comes with the index of the token it concerns (clamped to the last).
pub(crate) fn parse_tokens(
    t: Rtype,
    toks: &[Token<'_>],
    origin: &Name,
    out: &mut Vec<u8>,
) -> Result<(), (usize, String)> {
    let at0 = |e: String| (0, e);
    if toks.first().is_some_and(|k| k.is("\\#")) {
        return parse_generic(t, &toks[1..], out).map_err(at0);
    }
    match t {
        Rtype::LOC => return parse_loc(toks, out).map_err(at0),
        Rtype::SVCB | Rtype::HTTPS => return svcb::parse(t, toks, origin, out).map_err(at0),
        _ => {}
    }
    let Some(layout) = fields(t) else {
        return Err(at0(format!(
            "{t}: no presentation format known for this type; write the RDATA as \\# length hex (RFC 3597)"
        )));
    };
    let mut i = 0;
    for f in layout {
        let last = toks.len().saturating_sub(1);
        i += parse_field(t, *f, &toks[i.min(toks.len())..], origin, out)
            .map_err(|e| (i.min(last), e))?;
    }
    if let Some(extra) = toks.get(i) {
        return Err((
            i,
            format!("{t}: unexpected extra data \"{}\"", show(extra.text)),
        ));
    }
    Ok(())
}

/// `\# len hex...` for any type; for known types the bytes must fit the layout.
fn parse_generic(t: Rtype, toks: &[Token<'_>], out: &mut Vec<u8>) -> Result<(), String> {
    let Some(len_tok) = toks.first() else {
        return Err(format!("{t}: \\# needs the RDATA length"));
    };
    let len = parse_uint(len_tok.text, 65_535).ok_or_else(|| {
        format!(
            "{t}: expected RDATA length (0-65535) after \\#, got \"{}\"",
            show(len_tok.text)
        )
    })? as usize;
    let start = out.len();
    let mut pending = None;
    for tok in &toks[1..] {
        if !hex_into(tok.text, out, &mut pending) {
            return Err(format!("{t}: bad hex \"{}\" in \\# RDATA", show(tok.text)));
        }
    }
    if pending.is_some() {
        return Err(format!("{t}: odd number of hex digits in \\# RDATA"));
    }
    let got = out.len() - start;
    if got != len {
        return Err(format!(
            "{t}: \\# length says {len} octets but the hex gives {got}"
        ));
    }
    if is_known(t) {
        let mut s = String::new();
        if !format_known(t, &out[start..], &mut s) {
            return Err(format!("{t}: the \\# RDATA is not valid for this type"));
        }
    }
    Ok(())
}

/// Error text for a missing field.
fn missing(t: Rtype, what: &str) -> String {
    format!("{t}: missing {what}")
}

/// Parses one field from the front of `toks`; returns the number of tokens used.
fn parse_field(
    t: Rtype,
    f: Field,
    toks: &[Token<'_>],
    origin: &Name,
    out: &mut Vec<u8>,
) -> Result<usize, String> {
    let first = toks.first();
    let need = |what: &str| first.ok_or_else(|| missing(t, what));
    let bad = |what: &str, range: &str, tok: &Token<'_>| {
        format!("{t}: expected {what} ({range}), got \"{}\"", show(tok.text))
    };
    match f {
        U8(what) => {
            let k = need(what)?;
            out.push(parse_uint(k.text, 255).ok_or_else(|| bad(what, "0-255", k))? as u8);
            Ok(1)
        }
        U16(what) => {
            let k = need(what)?;
            let v = parse_uint(k.text, 65_535).ok_or_else(|| bad(what, "0-65535", k))? as u16;
            out.extend_from_slice(&v.to_be_bytes());
            Ok(1)
        }
        U32(what) => {
            let k = need(what)?;
            let v = parse_uint(k.text, u32::MAX as u64)
                .ok_or_else(|| bad(what, "0-4294967295", k))? as u32;
            out.extend_from_slice(&v.to_be_bytes());
            Ok(1)
        }
        Ttl(what) => {
            let k = need(what)?;
            let v = parse_ttl(k.text).ok_or_else(|| bad(what, "seconds or 1w2d3h4m5s", k))?;
            out.extend_from_slice(&v.to_be_bytes());
            Ok(1)
        }
        Alg => {
            let k = need("algorithm")?;
            let v = parse_uint(k.text, 255).map(|v| v as u8).or_else(|| {
                ALGORITHMS
                    .iter()
                    .find(|(n, _)| k.text.eq_ignore_ascii_case(n.as_bytes()))
                    .map(|a| a.1)
            });
            out.push(v.ok_or_else(|| bad("algorithm", "0-255 or a mnemonic", k))?);
            Ok(1)
        }
        Name(what) => {
            let k = need(what)?;
            if k.quoted {
                return Err(format!(
                    "{t}: {what} must be a domain name, not a quoted string"
                ));
            }
            name_into(k.text, origin, out).map_err(|e| format!("{t}: bad {what}: {e}"))?;
            Ok(1)
        }
        Ipv4 => {
            let k = need("IPv4 address")?;
            let a: Ipv4Addr = std::str::from_utf8(k.text)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| {
                    format!("{t}: expected an IPv4 address, got \"{}\"", show(k.text))
                })?;
            out.extend_from_slice(&a.octets());
            Ok(1)
        }
        Ipv6 => {
            let k = need("IPv6 address")?;
            let a: Ipv6Addr = std::str::from_utf8(k.text)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| {
                    format!("{t}: expected an IPv6 address, got \"{}\"", show(k.text))
                })?;
            out.extend_from_slice(&a.octets());
            Ok(1)
        }
        Str(what) => {
            let k = need(what)?;
            char_string(t, k, out, false)?;
            Ok(1)
        }
        Strs => {
            need("text")?;
            for k in toks {
                char_string(t, k, out, true)?;
            }
            Ok(toks.len())
        }
        RawStr(what) => {
            let k = need(what)?;
            unescape_into(k.text, out).map_err(|e| format!("{t}: {what}: {e}"))?;
            Ok(1)
        }
        Tag => {
            let k = need("tag")?;
            if k.text.is_empty()
                || k.text.len() > 255
                || !k.text.iter().all(u8::is_ascii_alphanumeric)
            {
                return Err(bad("tag", "1-255 letters and digits", k));
            }
            out.push(k.text.len() as u8);
            out.extend_from_slice(k.text);
            Ok(1)
        }
        Hex(what) => {
            need(what)?;
            let mut pending = None;
            for k in toks {
                if !hex_into(k.text, out, &mut pending) {
                    return Err(format!("{t}: bad hex in {what}: \"{}\"", show(k.text)));
                }
            }
            if pending.is_some() {
                return Err(format!("{t}: odd number of hex digits in {what}"));
            }
            Ok(toks.len())
        }
        B64(what) => {
            need(what)?;
            let mut dec = Base64::default();
            for k in toks {
                if !dec.feed(k.text, out) {
                    return Err(format!("{t}: bad base64 in {what}: \"{}\"", show(k.text)));
                }
            }
            if !dec.finish() {
                return Err(format!("{t}: truncated base64 in {what}"));
            }
            Ok(toks.len())
        }
        Salt => {
            let k = need("salt")?;
            if k.text.is_empty() {
                return Err(bad("salt", "hex or -", k));
            }
            let at = out.len();
            out.push(0);
            if k.text != b"-" {
                let mut pending = None;
                if !hex_into(k.text, out, &mut pending) || pending.is_some() {
                    return Err(bad("salt", "hex or -", k));
                }
            }
            let len = out.len() - at - 1;
            if len > 255 {
                return Err(format!("{t}: salt longer than 255 octets"));
            }
            out[at] = len as u8;
            Ok(1)
        }
        NextHash => {
            let k = need("next hashed owner")?;
            let at = out.len();
            out.push(0);
            // Whole 8-character groups only, as Knot requires (a hash is 32 characters).
            if k.text.len() % 8 != 0 || !base32hex_into(k.text, out) {
                return Err(bad("next hashed owner", "base32hex", k));
            }
            let len = out.len() - at - 1;
            if len == 0 || len > 255 {
                return Err(bad("next hashed owner", "1-255 octets", k));
            }
            out[at] = len as u8;
            Ok(1)
        }
        Type => {
            let k = need("type covered")?;
            let v = type_code(k.text)
                .ok_or_else(|| bad("type covered", "a type mnemonic or TYPEnnn", k))?;
            out.extend_from_slice(&v.0.to_be_bytes());
            Ok(1)
        }
        Time(what) => {
            let k = need(what)?;
            let v = parse_time(k.text).ok_or_else(|| bad(what, "YYYYMMDDHHmmSS or seconds", k))?;
            out.extend_from_slice(&v.to_be_bytes());
            Ok(1)
        }
        Bitmap => {
            let mut types = Vec::with_capacity(toks.len());
            for k in toks {
                types.push(
                    type_code(k.text)
                        .ok_or_else(|| {
                            format!("{t}: unknown type \"{}\" in type bitmap", show(k.text))
                        })?
                        .0,
                );
            }
            write_bitmap(&mut types, out);
            Ok(toks.len())
        }
        CertType => {
            let k = need("certificate type")?;
            let v = parse_uint(k.text, 65_535)
                .map(|v| v as u16)
                .or_else(|| {
                    CERT_TYPES
                        .iter()
                        .find(|(n, _)| k.text.eq_ignore_ascii_case(n.as_bytes()))
                        .map(|c| c.1)
                })
                .ok_or_else(|| bad("certificate type", "0-65535 or a mnemonic", k))?;
            out.extend_from_slice(&v.to_be_bytes());
            Ok(1)
        }
        Gateway => parse_gateway(t, toks, origin, out),
        OptB64(what) => {
            if toks.is_empty() {
                return Ok(0);
            }
            parse_field(t, B64(what), toks, origin, out)
        }
        Apl => {
            for k in toks {
                apl_item(k.text, out).ok_or_else(|| {
                    format!(
                        "{t}: expected [!]1:IPv4/0-32 or [!]2:IPv6/0-128, got \"{}\"",
                        show(k.text)
                    )
                })?;
            }
            Ok(toks.len())
        }
        Locator64(what) => {
            let k = need(what)?;
            // Knot wants four digits per group; BIND prints leading zeros dropped.
            let mut n = 0;
            for g in k.text.split(|&c| c == b':') {
                let v = std::str::from_utf8(g)
                    .ok()
                    .filter(|g| (1..=4).contains(&g.len()) && !g.starts_with('+'))
                    .and_then(|g| u16::from_str_radix(g, 16).ok())
                    .filter(|_| n < 4)
                    .ok_or_else(|| bad(what, "xxxx:xxxx:xxxx:xxxx", k))?;
                out.extend_from_slice(&v.to_be_bytes());
                n += 1;
            }
            if n != 4 {
                return Err(bad(what, "xxxx:xxxx:xxxx:xxxx", k));
            }
            Ok(1)
        }
        Services => parse_services(t, toks, out),
        Eui(n) => {
            let k = need("address")?;
            let groups: Vec<&[u8]> = k.text.split(|&c| c == b'-').collect();
            let mut pending = None;
            if groups.len() != n
                || groups
                    .iter()
                    .any(|g| g.len() != 2 || !hex_into(g, out, &mut pending))
            {
                return Err(bad(
                    "address",
                    if n == 6 {
                        "xx-xx-xx-xx-xx-xx"
                    } else {
                        "xx-xx-xx-xx-xx-xx-xx-xx"
                    },
                    k,
                ));
            }
            Ok(1)
        }
    }
}

/// A type mnemonic or `TYPEnnn`.
pub(crate) fn type_code(s: &[u8]) -> Option<Rtype> {
    // The types of large zones first, before the full table.
    const COMMON: [(&[u8], Rtype); 6] = [
        (b"NAPTR", Rtype::NAPTR),
        (b"A", Rtype::A),
        (b"AAAA", Rtype::AAAA),
        (b"NS", Rtype::NS),
        (b"CNAME", Rtype::CNAME),
        (b"TXT", Rtype::TXT),
    ];
    if let Some((_, t)) = COMMON.iter().find(|(n, _)| n.eq_ignore_ascii_case(s)) {
        return Some(*t);
    }
    std::str::from_utf8(s).ok().and_then(Rtype::from_mnemonic)
}

/// Appends one character string (length-prefixed); `split` cuts long text in 255-octet pieces.
fn char_string(t: Rtype, tok: &Token<'_>, out: &mut Vec<u8>, split: bool) -> Result<(), String> {
    let text = tok.text;
    if !tok.quoted && has_bare_quote(text) {
        return Err(format!(
            "{t}: a '\"' inside an unquoted string: \"{}\"",
            show(text)
        ));
    }
    let at = out.len();
    out.push(0);
    if tok.escaped {
        unescape_into(text, out).map_err(|e| format!("{t}: {e}"))?;
    } else {
        out.extend_from_slice(text);
    }
    let len = out.len() - at - 1;
    if len <= 255 {
        out[at] = len as u8;
        return Ok(());
    }
    if !split {
        return Err(format!("{t}: character string longer than 255 octets"));
    }
    // Re-chunk: move the bytes out and write 255-octet pieces.
    let data = out.split_off(at + 1);
    out.truncate(at);
    for chunk in data.chunks(255) {
        out.push(chunk.len() as u8);
        out.extend_from_slice(chunk);
    }
    Ok(())
}

/// True if `text` holds a `"` that is not escaped.
fn has_bare_quote(text: &[u8]) -> bool {
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'\\' => i += 2,
            b'"' => return true,
            _ => i += 1,
        }
    }
    false
}

/// Writes a type bitmap for `types` (sorted and de-duplicated here).
fn write_bitmap(types: &mut [u16], out: &mut Vec<u8>) {
    types.sort_unstable();
    let mut i = 0;
    while i < types.len() {
        let window = types[i] >> 8;
        let mut bits = [0u8; 32];
        let mut used = 0;
        while i < types.len() && types[i] >> 8 == window {
            let low = (types[i] & 0xFF) as usize;
            bits[low / 8] |= 0x80 >> (low % 8);
            used = low / 8 + 1;
            i += 1;
        }
        out.push(window as u8);
        out.push(used as u8);
        out.extend_from_slice(&bits[..used]);
    }
}

/// Formats RDATA of any type: the type's own form, or `\# len hex` if the type has
/// none or the bytes do not fit its layout.
pub(crate) fn format(t: Rtype, rdata: &[u8], out: &mut String) {
    let start = out.len();
    if is_known(t) && format_known(t, rdata, out) {
        return;
    }
    out.truncate(start);
    format_generic(rdata, out);
}

/// `\# len HEX` (RFC 3597 §5).
pub(crate) fn format_generic(rdata: &[u8], out: &mut String) {
    let _ = write!(out, "\\# {}", rdata.len());
    if !rdata.is_empty() {
        out.push(' ');
        push_hex(rdata, out);
    }
}

/// Formats a known type; false if the bytes do not fit its layout.
fn format_known(t: Rtype, rdata: &[u8], out: &mut String) -> bool {
    match t {
        Rtype::LOC => return format_loc(rdata, out),
        Rtype::SVCB | Rtype::HTTPS => return svcb::format(rdata, out),
        _ => {}
    }
    let Some(layout) = fields(t) else {
        return false;
    };
    let mut rest = rdata;
    for (n, f) in layout.iter().enumerate() {
        let before = out.len();
        if n > 0 {
            out.push(' ');
        }
        let Some(r) = format_field(*f, rest, out) else {
            return false;
        };
        if out.len() == before + 1 && n > 0 {
            out.pop(); // an empty trailing field (bitmap, digest): no separator
        }
        rest = r;
    }
    rest.is_empty()
}

/// Formats one field from the front of `d`; returns the remaining bytes.
fn format_field<'a>(f: Field, d: &'a [u8], out: &mut String) -> Option<&'a [u8]> {
    fn take<const N: usize>(d: &[u8]) -> Option<([u8; N], &[u8])> {
        let (a, b) = d.split_first_chunk::<N>()?;
        Some((*a, b))
    }
    match f {
        U8(_) | Alg => {
            let (v, r) = take::<1>(d)?;
            let _ = write!(out, "{}", v[0]);
            Some(r)
        }
        U16(_) => {
            let (v, r) = take::<2>(d)?;
            let _ = write!(out, "{}", u16::from_be_bytes(v));
            Some(r)
        }
        U32(_) | Ttl(_) => {
            let (v, r) = take::<4>(d)?;
            let _ = write!(out, "{}", u32::from_be_bytes(v));
            Some(r)
        }
        Time(_) => {
            let (v, r) = take::<4>(d)?;
            push_time(u32::from_be_bytes(v), out);
            Some(r)
        }
        Type => {
            let (v, r) = take::<2>(d)?;
            let _ = write!(out, "{}", Rtype(u16::from_be_bytes(v)));
            Some(r)
        }
        Name(_) => {
            let (n, r) = NameRef::split_from(d).ok()?;
            let _ = write!(out, "{n}");
            Some(r)
        }
        Ipv4 => {
            let (v, r) = take::<4>(d)?;
            let _ = write!(out, "{}", Ipv4Addr::from(v));
            Some(r)
        }
        Ipv6 => {
            let (v, r) = take::<16>(d)?;
            let _ = write!(out, "{}", Ipv6Addr::from(v));
            Some(r)
        }
        Str(_) => {
            let (&len, r) = d.split_first()?;
            let s = r.get(..len as usize)?;
            out.push('"');
            escape_quoted(s, out);
            out.push('"');
            Some(&r[len as usize..])
        }
        Strs => {
            let mut r = d;
            if r.is_empty() {
                return None;
            }
            let mut first = true;
            while !r.is_empty() {
                if !first {
                    out.push(' ');
                }
                first = false;
                r = format_field(Str(""), r, out)?;
            }
            Some(r)
        }
        RawStr(_) => {
            out.push('"');
            escape_quoted(d, out);
            out.push('"');
            Some(&[])
        }
        Tag => {
            let (&len, r) = d.split_first()?;
            let s = r.get(..len as usize).filter(|s| !s.is_empty())?;
            escape_quoted(s, out);
            Some(&r[len as usize..])
        }
        Hex(_) => {
            push_hex(d, out);
            Some(&[])
        }
        B64(_) => {
            push_base64(d, out);
            Some(&[])
        }
        Salt => {
            let (&len, r) = d.split_first()?;
            let s = r.get(..len as usize)?;
            if s.is_empty() {
                out.push('-');
            } else {
                push_hex(s, out);
            }
            Some(&r[len as usize..])
        }
        NextHash => {
            let (&len, r) = d.split_first()?;
            let s = r.get(..len as usize).filter(|s| !s.is_empty())?;
            push_base32hex(s, out);
            Some(&r[len as usize..])
        }
        Bitmap => {
            let mut r = d;
            let mut first = true;
            let mut last_window: i32 = -1;
            while !r.is_empty() {
                let (&[window, len], rest) = r.split_first_chunk::<2>()?;
                if (window as i32) <= last_window || len == 0 || len > 32 {
                    return None;
                }
                last_window = window as i32;
                let bits = rest.get(..len as usize)?;
                for (i, &byte) in bits.iter().enumerate() {
                    for b in 0..8 {
                        if byte & (0x80 >> b) != 0 {
                            if !first {
                                out.push(' ');
                            }
                            first = false;
                            let _ =
                                write!(out, "{}", Rtype((window as u16) << 8 | (i * 8 + b) as u16));
                        }
                    }
                }
                r = &rest[len as usize..];
            }
            Some(r)
        }
        CertType => {
            let (v, r) = take::<2>(d)?;
            let _ = write!(out, "{}", u16::from_be_bytes(v));
            Some(r)
        }
        Gateway => format_gateway(d, out),
        OptB64(_) => {
            push_base64(d, out);
            Some(&[])
        }
        Apl => format_apl(d, out),
        Locator64(_) => {
            let a = d.get(..8)?;
            for (i, pair) in a.chunks(2).enumerate() {
                if i > 0 {
                    out.push(':');
                }
                push_hex(pair, out);
            }
            Some(&d[8..])
        }
        Services => format_services(d, out),
        Eui(n) => {
            let a = d.get(..n)?;
            for (i, b) in a.iter().enumerate() {
                let _ = write!(out, "{}{b:02X}", if i > 0 { "-" } else { "" });
            }
            Some(&d[n..])
        }
    }
}

// ------------------------------------------------------- IPSECKEY (RFC 4025)

/// Parses `gateway-type algorithm gateway`; the gateway's form follows its type:
/// 0 `.`, 1 IPv4, 2 IPv6, 3 a domain name. Returns the number of tokens used (3).
fn parse_gateway(
    t: Rtype,
    toks: &[Token<'_>],
    origin: &Name,
    out: &mut Vec<u8>,
) -> Result<usize, String> {
    parse_field(t, U8("gateway type"), toks, origin, out)?;
    let kind = out[out.len() - 1]; // just pushed by the U8 field
    if kind > 3 {
        return Err(format!(
            "{t}: expected gateway type (0-3), got \"{}\"",
            show(toks[0].text) // present: the U8 field consumed it
        ));
    }
    parse_field(t, U8("algorithm"), &toks[1..], origin, out)?;
    let rest = &toks[2.min(toks.len())..];
    let Some(gw) = rest.first() else {
        return Err(missing(t, "gateway"));
    };
    match kind {
        0 if gw.text == b"." && !gw.quoted => {}
        0 => {
            return Err(format!(
                "{t}: gateway type 0 needs \".\" as gateway, got \"{}\"",
                show(gw.text)
            ))
        }
        1 => {
            parse_field(t, Ipv4, rest, origin, out)?;
        }
        2 => {
            parse_field(t, Ipv6, rest, origin, out)?;
        }
        _ => {
            parse_field(t, Name("gateway"), rest, origin, out)?;
        }
    }
    Ok(3)
}

/// Formats `gateway-type algorithm gateway`; `None` for an unknown gateway type.
fn format_gateway<'a>(d: &'a [u8], out: &mut String) -> Option<&'a [u8]> {
    let (&[kind, alg], r) = d.split_first_chunk::<2>()?;
    let _ = write!(out, "{kind} {alg} ");
    match kind {
        0 => {
            out.push('.');
            Some(r)
        }
        1 => format_field(Ipv4, r, out),
        2 => format_field(Ipv6, r, out),
        3 => format_field(Name(""), r, out),
        _ => None,
    }
}

// ------------------------------------------------------------ APL (RFC 3123)

/// Appends one APL item `[!]family:address/prefix` (family 1 IPv4 or 2 IPv6), with
/// the address's trailing zero octets left out (RFC 3123 §4); `None` if malformed.
fn apl_item(s: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let (negated, s) = match s.strip_prefix(b"!") {
        Some(r) => (true, r),
        None => (false, s),
    };
    let colon = s.iter().position(|&c| c == b':')?;
    let (family, rest) = (&s[..colon], &s[colon + 1..]);
    let slash = rest.iter().rposition(|&c| c == b'/')?;
    let addr = std::str::from_utf8(&rest[..slash]).ok()?;
    let mut a = [0u8; 16];
    let (family, len, max) = match family {
        b"1" => {
            a[..4].copy_from_slice(&addr.parse::<Ipv4Addr>().ok()?.octets());
            (1u16, 4, 32)
        }
        b"2" => {
            a = addr.parse::<Ipv6Addr>().ok()?.octets();
            (2u16, 16, 128)
        }
        _ => return None,
    };
    let prefix = parse_uint(&rest[slash + 1..], max)? as u8;
    let used = a[..len].iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
    out.extend_from_slice(&family.to_be_bytes());
    out.push(prefix);
    out.push(u8::from(negated) << 7 | used as u8);
    out.extend_from_slice(&a[..used]);
    Some(())
}

/// Formats APL items separated by spaces (nothing for none). Like Knot, a prefix
/// longer than the address is printed as it is; an unknown family or an address
/// part longer than the family's address makes the RDATA malformed.
fn format_apl<'a>(d: &'a [u8], out: &mut String) -> Option<&'a [u8]> {
    let mut r = d;
    while !r.is_empty() {
        let (&[f0, f1, prefix, nlen], rest) = r.split_first_chunk::<4>()?;
        let len = (nlen & 0x7F) as usize;
        let part = rest.get(..len)?;
        if r.len() != d.len() {
            out.push(' ');
        }
        if nlen & 0x80 != 0 {
            out.push('!');
        }
        let mut a = [0u8; 16];
        match u16::from_be_bytes([f0, f1]) {
            1 if len <= 4 => {
                a[..len].copy_from_slice(part);
                let v4 = Ipv4Addr::new(a[0], a[1], a[2], a[3]);
                let _ = write!(out, "1:{v4}/{prefix}");
            }
            2 if len <= 16 => {
                a[..len].copy_from_slice(part);
                let _ = write!(out, "2:{}/{prefix}", Ipv6Addr::from(a));
            }
            _ => return None,
        }
        r = &rest[len..];
    }
    Some(r)
}

// ------------------------------------------------------------ WKS (RFC 1035)

/// Service names known in WKS records (the common entries of `/etc/services`;
/// the same port for TCP and UDP).
const SERVICES: &[(&str, u16)] = &[
    ("echo", 7),
    ("discard", 9),
    ("daytime", 13),
    ("qotd", 17),
    ("chargen", 19),
    ("ftp-data", 20),
    ("ftp", 21),
    ("ssh", 22),
    ("telnet", 23),
    ("smtp", 25),
    ("time", 37),
    ("whois", 43),
    ("nicname", 43),
    ("domain", 53),
    ("bootps", 67),
    ("bootpc", 68),
    ("tftp", 69),
    ("gopher", 70),
    ("finger", 79),
    ("http", 80),
    ("www", 80),
    ("kerberos", 88),
    ("pop3", 110),
    ("sunrpc", 111),
    ("auth", 113),
    ("nntp", 119),
    ("ntp", 123),
    ("imap", 143),
    ("snmp", 161),
    ("ldap", 389),
    ("https", 443),
    ("submission", 587),
    ("ldaps", 636),
    ("imaps", 993),
    ("pop3s", 995),
];

/// Parses `protocol service...` (protocol `tcp`, `udp` or 0-255; services by
/// number or name) into the protocol octet and the port bitmap.
fn parse_services(t: Rtype, toks: &[Token<'_>], out: &mut Vec<u8>) -> Result<usize, String> {
    let Some(proto) = toks.first() else {
        return Err(missing(t, "protocol"));
    };
    let p = if proto.text.eq_ignore_ascii_case(b"tcp") {
        Some(6)
    } else if proto.text.eq_ignore_ascii_case(b"udp") {
        Some(17)
    } else {
        parse_uint(proto.text, 255).map(|v| v as u8)
    };
    out.push(p.ok_or_else(|| {
        format!(
            "{t}: expected protocol (tcp, udp or 0-255), got \"{}\"",
            show(proto.text)
        )
    })?);
    let start = out.len();
    for k in &toks[1..] {
        let port = parse_uint(k.text, 65_535)
            .map(|v| v as usize)
            .or_else(|| {
                SERVICES
                    .iter()
                    .find(|(n, _)| k.text.eq_ignore_ascii_case(n.as_bytes()))
                    .map(|s| s.1 as usize)
            })
            .ok_or_else(|| {
                format!(
                    "{t}: expected service (0-65535 or a name), got \"{}\"",
                    show(k.text)
                )
            })?;
        if out.len() - start <= port / 8 {
            out.resize(start + port / 8 + 1, 0);
        }
        out[start + port / 8] |= 0x80 >> (port % 8);
    }
    Ok(toks.len())
}

/// Formats `protocol port...` as numbers (as BIND prints WKS; Knot 3.2 knows no
/// presentation form for WKS and prints `\#`).
fn format_services<'a>(d: &'a [u8], out: &mut String) -> Option<&'a [u8]> {
    let (&proto, bits) = d.split_first()?;
    if bits.len() > 8192 {
        return None;
    }
    let _ = write!(out, "{proto}");
    for (i, &byte) in bits.iter().enumerate() {
        for b in 0..8 {
            if byte & (0x80 >> b) != 0 {
                let _ = write!(out, " {}", i * 8 + b);
            }
        }
    }
    Some(&[])
}

// ---------------------------------------------------------------- LOC (RFC 1876)

/// Parses `[-]int[.frac]` with at most `decimals` fraction digits, scaled by 10^decimals.
fn parse_fixed(s: &[u8], decimals: u32) -> Option<i64> {
    let (neg, s) = match s.split_first() {
        Some((b'-', r)) => (true, r),
        _ => (false, s),
    };
    let (int, frac) = match s.iter().position(|&c| c == b'.') {
        Some(p) => (&s[..p], &s[p + 1..]),
        None => (s, &[][..]),
    };
    if (int.is_empty() && frac.is_empty()) || frac.len() > decimals as usize || int.len() > 12 {
        return None;
    }
    let i = if int.is_empty() {
        0
    } else {
        parse_uint(int, 999_999_999_999)? as i64
    };
    let mut f = if frac.is_empty() {
        0
    } else {
        parse_uint(frac, 999_999)? as i64
    };
    for _ in frac.len()..decimals as usize {
        f *= 10;
    }
    let v = i * 10i64.pow(decimals) + f;
    Some(if neg { -v } else { v })
}

/// A length in metres (optional `m`) as centimetres.
fn parse_metres(s: &[u8]) -> Option<i64> {
    let s = s
        .strip_suffix(b"m")
        .or_else(|| s.strip_suffix(b"M"))
        .unwrap_or(s);
    parse_fixed(s, 2)
}

/// Encodes centimetres as the RFC 1876 mantissa/exponent byte (truncating).
fn precision_byte(mut cm: i64) -> u8 {
    let mut e = 0u8;
    while cm >= 10 && e < 9 {
        cm /= 10;
        e += 1;
    }
    (cm.min(9) as u8) << 4 | e
}

/// Parses LOC: `d [m [s]] N|S d [m [s]] E|W alt[m] [siz[m] [hp[m] [vp[m]]]]`.
fn parse_loc(toks: &[Token<'_>], out: &mut Vec<u8>) -> Result<(), String> {
    let mut i = 0;
    let mut coord = |hemis: [u8; 2], max_deg: i64, what: &str| -> Result<u32, String> {
        let mut parts = [0i64; 3];
        let mut n = 0;
        loop {
            let k = toks.get(i).ok_or_else(|| format!("LOC: missing {what}"))?;
            let c = k.text.first().map(u8::to_ascii_uppercase);
            if k.text.len() == 1 && (c == Some(hemis[0]) || c == Some(hemis[1])) && n > 0 {
                i += 1;
                let ms = parts[0] * 3_600_000 + parts[1] * 60_000 + parts[2];
                if ms > max_deg * 3_600_000 {
                    return Err(format!("LOC: {what} beyond {max_deg} degrees"));
                }
                let v = if c == Some(hemis[0]) {
                    (1i64 << 31) + ms
                } else {
                    (1i64 << 31) - ms
                };
                return Ok(v as u32);
            }
            let (v, limit, range) = match n {
                0 => (
                    parse_uint(k.text, max_deg as u64).map(|v| v as i64),
                    max_deg,
                    "degrees",
                ),
                1 => (parse_uint(k.text, 59).map(|v| v as i64), 59, "minutes"),
                2 => (
                    parse_fixed(k.text, 3).filter(|v| (0..60_000).contains(v)),
                    59,
                    "seconds",
                ),
                _ => {
                    return Err(format!(
                        "LOC: expected {} or {} after the {what}, got \"{}\"",
                        hemis[0] as char,
                        hemis[1] as char,
                        show(k.text)
                    ))
                }
            };
            parts[n] = v.ok_or_else(|| {
                format!(
                    "LOC: expected {what} {range} (0-{limit}), got \"{}\"",
                    show(k.text)
                )
            })?;
            n += 1;
            i += 1;
        }
    };
    let lat = coord([b'N', b'S'], 90, "latitude")?;
    let lon = coord([b'E', b'W'], 180, "longitude")?;
    let alt_tok = toks.get(i).ok_or("LOC: missing altitude")?;
    let alt = parse_metres(alt_tok.text)
        .filter(|v| (-10_000_000..=4_284_967_295).contains(v))
        .ok_or_else(|| {
            format!(
                "LOC: expected altitude (-100000.00m to 42849672.95m), got \"{}\"",
                show(alt_tok.text)
            )
        })?;
    i += 1;
    let mut prec = [100i64, 1_000_000, 1_000]; // size 1m, horizontal 10000m, vertical 10m
    for (n, what) in ["size", "horizontal precision", "vertical precision"]
        .iter()
        .enumerate()
    {
        if let Some(k) = toks.get(i + n) {
            prec[n] = parse_metres(k.text)
                .filter(|v| (0..=9_000_000_000).contains(v))
                .ok_or_else(|| {
                    format!(
                        "LOC: expected {what} (0-90000000.00m), got \"{}\"",
                        show(k.text)
                    )
                })?;
        }
    }
    if let Some(extra) = toks.get(i + 3) {
        return Err(format!(
            "LOC: unexpected extra data \"{}\"",
            show(extra.text)
        ));
    }
    out.push(0);
    out.extend(prec.iter().map(|&p| precision_byte(p)));
    out.extend_from_slice(&lat.to_be_bytes());
    out.extend_from_slice(&lon.to_be_bytes());
    out.extend_from_slice(&((alt + 10_000_000) as u32).to_be_bytes());
    Ok(())
}

/// Appends centimetres as metres: `12m` or `12.34m`.
fn push_metres(cm: i64, out: &mut String) {
    let sign = if cm < 0 { "-" } else { "" };
    let a = cm.abs();
    if a % 100 == 0 {
        let _ = write!(out, "{sign}{}m", a / 100);
    } else {
        let _ = write!(out, "{sign}{}.{:02}m", a / 100, a % 100);
    }
}

/// Formats LOC as Knot does (seconds with 3 decimals only when needed).
fn format_loc(d: &[u8], out: &mut String) -> bool {
    let Ok(d) = <&[u8; 16]>::try_from(d) else {
        return false;
    };
    if d[0] != 0 {
        return false;
    }
    let mut prec = [0i64; 3];
    for (p, &b) in prec.iter_mut().zip(&d[1..4]) {
        let (m, e) = (b >> 4, b & 15);
        if m > 9 || e > 9 {
            return false;
        }
        *p = m as i64 * 10i64.pow(e as u32);
    }
    let u = |a: usize| u32::from_be_bytes([d[a], d[a + 1], d[a + 2], d[a + 3]]) as i64;
    for (v, hemis, max) in [(u(4), ['N', 'S'], 90), (u(8), ['E', 'W'], 180)] {
        let off = v - (1 << 31);
        let ms = off.abs();
        if ms > max * 3_600_000 {
            return false;
        }
        let h = if off >= 0 { hemis[0] } else { hemis[1] };
        let _ = write!(
            out,
            "{} {} {}",
            ms / 3_600_000,
            ms / 60_000 % 60,
            ms / 1000 % 60
        );
        if ms % 1000 != 0 {
            let _ = write!(out, ".{:03}", ms % 1000);
        }
        let _ = write!(out, " {h} ");
    }
    push_metres(u(12) - 10_000_000, out);
    for p in prec {
        out.push(' ');
        push_metres(p, out);
    }
    true
}

#[cfg(test)]
#[path = "rdata_text_tests.rs"]
mod tests;
