//! SVCB and HTTPS RDATA (RFC 9460): `priority target key[=value]...`.
//!
//! Values are character strings (quoted or not); list values (mandatory, alpn,
//! ipv4hint, ipv6hint) are split on commas after the character-string escapes
//! are decoded, with `\,` and `\\` as the second-level escapes (RFC 9460 App. A.1).
//! Parameters are stored sorted by key, as the wire form requires.

use std::fmt::Write;
use std::net::{Ipv4Addr, Ipv6Addr};

use lode_wire::{Name, NameRef, Rtype};

use crate::lexer::Token;
use crate::text::{name_into, parse_uint, push_base64, push_ddd, show, unescape_into, Base64};

/// Names of the keys Knot 3.2 knows (key 7 `dohpath` is read but printed as `key7`).
const KEYS: &[&str] = &[
    "mandatory",
    "alpn",
    "no-default-alpn",
    "port",
    "ipv4hint",
    "ech",
    "ipv6hint",
];

/// A key name (`alpn`, `key65000`, `dohpath`) to its number.
fn key_code(s: &[u8]) -> Option<u16> {
    if let Some(k) = KEYS
        .iter()
        .position(|k| s.eq_ignore_ascii_case(k.as_bytes()))
    {
        return Some(k as u16);
    }
    if s.eq_ignore_ascii_case(b"dohpath") {
        return Some(7);
    }
    let digits = s.strip_prefix(b"key")?;
    if digits.len() > 1 && digits[0] == b'0' {
        return None;
    }
    parse_uint(digits, 65_535).map(|v| v as u16)
}

/// Appends the key's presentation name.
fn push_key(k: u16, out: &mut String) {
    match KEYS.get(k as usize) {
        Some(n) => out.push_str(n),
        None => {
            let _ = write!(out, "key{k}");
        }
    }
}

/// Splits a decoded value list on unescaped commas (`\,` and `\\` escape).
fn split_list(v: &[u8]) -> Vec<Vec<u8>> {
    let mut items = vec![Vec::new()];
    let mut i = 0;
    while i < v.len() {
        match v[i] {
            b'\\' if i + 1 < v.len() => {
                if let Some(last) = items.last_mut() {
                    last.push(v[i + 1]);
                }
                i += 2;
            }
            b',' => {
                items.push(Vec::new());
                i += 1;
            }
            c => {
                if let Some(last) = items.last_mut() {
                    last.push(c);
                }
                i += 1;
            }
        }
    }
    items
}

/// Parses SVCB/HTTPS RDATA tokens into wire form.
pub(crate) fn parse(
    t: Rtype,
    toks: &[Token<'_>],
    origin: &Name,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let prio = toks
        .first()
        .ok_or_else(|| format!("{t}: missing priority"))?;
    let p = parse_uint(prio.text, 65_535).ok_or_else(|| {
        format!(
            "{t}: expected priority (0-65535), got \"{}\"",
            show(prio.text)
        )
    })?;
    out.extend_from_slice(&(p as u16).to_be_bytes());
    let target = toks
        .get(1)
        .ok_or_else(|| format!("{t}: missing target name"))?;
    name_into(target.text, origin, out).map_err(|e| format!("{t}: bad target name: {e}"))?;
    let mut params: Vec<(u16, Vec<u8>)> = Vec::new();
    let mut i = 2;
    while let Some(k) = toks.get(i) {
        i += 1;
        let (key_text, raw_value) = match k.text.iter().position(|&c| c == b'=') {
            Some(p) => {
                let mut v = &k.text[p + 1..];
                if v.is_empty() {
                    // `key= "value"`: the value is the next (quoted) token.
                    if let Some(n) = toks.get(i).filter(|n| n.quoted) {
                        v = n.text;
                        i += 1;
                    }
                } else if v.len() >= 2 && v[0] == b'"' && v[v.len() - 1] == b'"' {
                    v = &v[1..v.len() - 1];
                }
                (&k.text[..p], Some(v))
            }
            None => (k.text, None),
        };
        let key = key_code(key_text)
            .ok_or_else(|| format!("{t}: unknown parameter key \"{}\"", show(key_text)))?;
        if params.iter().any(|p| p.0 == key) {
            return Err(format!("{t}: parameter \"{}\" given twice", show(key_text)));
        }
        let mut value = Vec::new();
        if let Some(v) = raw_value {
            unescape_into(v, &mut value).map_err(|e| format!("{t}: {}: {e}", show(key_text)))?;
        }
        let needs_value = matches!(key, 0 | 1 | 3 | 4 | 5 | 6);
        if needs_value && value.is_empty() {
            return Err(format!(
                "{t}: parameter \"{}\" needs a value",
                show(key_text)
            ));
        }
        let bad = |what: &str, item: &[u8]| {
            format!("{t}: {}: bad {what} \"{}\"", show(key_text), show(item))
        };
        let wire = match key {
            0 => {
                let mut keys = Vec::new();
                for item in split_list(&value) {
                    keys.push(key_code(&item).ok_or_else(|| bad("key", &item))?);
                }
                keys.sort_unstable();
                if keys.windows(2).any(|w| w[0] == w[1]) || keys.contains(&0) {
                    return Err(format!(
                        "{t}: mandatory: keys repeated or listing mandatory itself"
                    ));
                }
                keys.iter().flat_map(|k| k.to_be_bytes()).collect()
            }
            1 => {
                let mut w = Vec::new();
                for item in split_list(&value) {
                    if item.is_empty() || item.len() > 255 {
                        return Err(bad("protocol id (1-255 octets)", &item));
                    }
                    w.push(item.len() as u8);
                    w.extend_from_slice(&item);
                }
                w
            }
            2 => {
                if raw_value.is_some() {
                    return Err(format!("{t}: no-default-alpn takes no value"));
                }
                Vec::new()
            }
            3 => {
                let port =
                    parse_uint(&value, 65_535).ok_or_else(|| bad("port (0-65535)", &value))?;
                (port as u16).to_be_bytes().to_vec()
            }
            4 => {
                let mut w = Vec::new();
                for item in split_list(&value) {
                    let a: Ipv4Addr = std::str::from_utf8(&item)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(|| bad("IPv4 address", &item))?;
                    w.extend_from_slice(&a.octets());
                }
                w
            }
            5 => {
                let mut w = Vec::new();
                let mut dec = Base64::default();
                if !dec.feed(&value, &mut w) || !dec.finish() {
                    return Err(bad("base64", &value));
                }
                w
            }
            6 => {
                let mut w = Vec::new();
                for item in split_list(&value) {
                    let a: Ipv6Addr = std::str::from_utf8(&item)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(|| bad("IPv6 address", &item))?;
                    w.extend_from_slice(&a.octets());
                }
                w
            }
            _ => value,
        };
        if wire.len() > 65_535 {
            return Err(format!("{t}: parameter value too long"));
        }
        params.push((key, wire));
    }
    params.sort_unstable_by_key(|p| p.0);
    if let Some(m) = params.iter().find(|p| p.0 == 0) {
        for k in m.1.chunks(2) {
            let k = u16::from_be_bytes([k[0], k[1]]);
            if !params.iter().any(|p| p.0 == k) {
                let mut name = String::new();
                push_key(k, &mut name);
                return Err(format!("{t}: mandatory key \"{name}\" is missing"));
            }
        }
    }
    for (k, v) in params {
        out.extend_from_slice(&k.to_be_bytes());
        out.extend_from_slice(&(v.len() as u16).to_be_bytes());
        out.extend_from_slice(&v);
    }
    Ok(())
}

/// Appends bytes as an unquoted presentation token (specials escaped).
fn escape_bare(data: &[u8], out: &mut String) {
    for &b in data {
        match b {
            b'"' | b'\\' | b';' | b'(' | b')' => {
                out.push('\\');
                out.push(b as char);
            }
            0x21..=0x7E => out.push(b as char),
            _ => push_ddd(b, out),
        }
    }
}

/// Appends a character string, quoted only if it holds a space.
fn push_value(data: &[u8], out: &mut String) {
    if data.contains(&b' ') {
        out.push('"');
        crate::text::escape_quoted(data, out);
        out.push('"');
    } else {
        escape_bare(data, out);
    }
}

/// Formats SVCB/HTTPS RDATA; false if the bytes are malformed.
pub(crate) fn format(d: &[u8], out: &mut String) -> bool {
    let Some((prio, rest)) = d.split_first_chunk::<2>() else {
        return false;
    };
    let Ok((target, mut rest)) = NameRef::split_from(rest) else {
        return false;
    };
    let _ = write!(out, "{} {target}", u16::from_be_bytes(*prio));
    let mut last: i32 = -1;
    while !rest.is_empty() {
        let Some((head, r)) = rest.split_first_chunk::<4>() else {
            return false;
        };
        let key = u16::from_be_bytes([head[0], head[1]]);
        let len = u16::from_be_bytes([head[2], head[3]]) as usize;
        let Some(v) = r.get(..len) else { return false };
        if key as i32 <= last {
            return false;
        }
        last = key as i32;
        rest = &r[len..];
        out.push(' ');
        push_key(key, out);
        let ok = match key {
            0 => {
                if v.is_empty() || v.len() % 2 != 0 {
                    return false;
                }
                out.push('=');
                for (n, k) in v.chunks(2).enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    push_key(u16::from_be_bytes([k[0], k[1]]), out);
                }
                true
            }
            1 => {
                let mut list = Vec::new();
                let mut r = v;
                while let Some((&l, t)) = r.split_first() {
                    let Some(item) = t.get(..l as usize).filter(|i| !i.is_empty()) else {
                        return false;
                    };
                    if !list.is_empty() {
                        list.push(b',');
                    }
                    for &b in item {
                        if b == b',' || b == b'\\' {
                            list.push(b'\\');
                        }
                        list.push(b);
                    }
                    r = &t[l as usize..];
                }
                out.push('=');
                push_value(&list, out);
                !v.is_empty()
            }
            2 => v.is_empty(),
            3 => match <[u8; 2]>::try_from(v) {
                Ok(p) => {
                    let _ = write!(out, "={}", u16::from_be_bytes(p));
                    true
                }
                Err(_) => false,
            },
            4 => {
                out.push('=');
                for (n, a) in v.chunks(4).enumerate() {
                    let Ok(a) = <[u8; 4]>::try_from(a) else {
                        return false;
                    };
                    let _ = write!(out, "{}{}", if n > 0 { "," } else { "" }, Ipv4Addr::from(a));
                }
                !v.is_empty()
            }
            5 => {
                out.push('=');
                push_base64(v, out);
                !v.is_empty()
            }
            6 => {
                out.push('=');
                for (n, a) in v.chunks(16).enumerate() {
                    let Ok(a) = <[u8; 16]>::try_from(a) else {
                        return false;
                    };
                    let _ = write!(out, "{}{}", if n > 0 { "," } else { "" }, Ipv6Addr::from(a));
                }
                !v.is_empty()
            }
            _ => {
                if !v.is_empty() {
                    out.push_str("=\"");
                    crate::text::escape_quoted(v, out);
                    out.push('"');
                }
                true
            }
        };
        if !ok {
            return false;
        }
    }
    true
}
