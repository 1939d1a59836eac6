//! `$GENERATE start-stop[/step] lhs [ttl] [class] type rhs` as BIND has it.
//!
//! In `lhs` and `rhs`, `$` is replaced by the iterator, `${offset[,width[,base]]}`
//! by the iterator plus `offset`, zero-padded to `width`, in base `d` (default),
//! `o`, `x`, `X`, or `n`/`N` (reversed nibbles separated by dots, for
//! ip6.arpa; `width` counts the output characters, dots included, as BIND
//! does). `\$` is a literal `$`: a backslash and the character after it are
//! copied as they are, for the name or RDATA parser to decode. `$$` is a
//! literal `$` too (checked against BIND 9.18 `named-compilezone`). Unlike BIND,
//! an rhs of several tokens is accepted (BIND takes one token, quoted if it
//! holds spaces).

use std::fmt::Write;

use crate::text::{parse_uint, show};

/// Most records one `$GENERATE` may produce (guards memory on hostile input).
pub(crate) const MAX_GENERATED: u64 = 10_000_000;

/// A parsed `start-stop[/step]` range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range {
    /// First value.
    pub start: u32,
    /// Last value (inclusive).
    pub stop: u32,
    /// Increment, at least 1.
    pub step: u32,
}

impl Range {
    /// The values of the range.
    pub(crate) fn values(self) -> impl Iterator<Item = u32> {
        (self.start..=self.stop).step_by(self.step as usize)
    }
}

/// Parses `start-stop[/step]`.
pub(crate) fn parse_range(s: &[u8]) -> Result<Range, String> {
    let bad = || {
        format!(
            "$GENERATE: expected range start-stop[/step], got \"{}\"",
            show(s)
        )
    };
    let (range, step) = match s.iter().position(|&c| c == b'/') {
        Some(p) => (
            &s[..p],
            parse_uint(&s[p + 1..], u32::MAX as u64).ok_or_else(bad)? as u32,
        ),
        None => (s, 1),
    };
    let dash = range.iter().position(|&c| c == b'-').ok_or_else(bad)?;
    let start = parse_uint(&range[..dash], u32::MAX as u64).ok_or_else(bad)? as u32;
    let stop = parse_uint(&range[dash + 1..], u32::MAX as u64).ok_or_else(bad)? as u32;
    if step == 0 || start > stop {
        return Err(format!(
            "$GENERATE: range \"{}\" is empty or has step 0",
            show(s)
        ));
    }
    if (stop - start) as u64 / step as u64 + 1 > MAX_GENERATED {
        return Err(format!(
            "$GENERATE: range \"{}\" makes more than {MAX_GENERATED} records",
            show(s)
        ));
    }
    Ok(Range { start, stop, step })
}

/// Appends `template` with every `$` substitution done for iterator value `value`.
pub(crate) fn expand(template: &[u8], value: u32, out: &mut Vec<u8>) -> Result<(), String> {
    let mut i = 0;
    let mut num = String::new();
    while i < template.len() {
        match template[i] {
            b'\\' => {
                out.push(b'\\');
                if let Some(&n) = template.get(i + 1) {
                    out.push(n);
                }
                i += 2;
            }
            b'$' if template.get(i + 1) == Some(&b'$') => {
                // `$$` is a literal `$` (BIND); kept escaped for the parser after us.
                out.extend_from_slice(b"\\$");
                i += 2;
            }
            b'$' => {
                let (offset, width, base, used) = if template.get(i + 1) == Some(&b'{') {
                    let close = template[i..]
                        .iter()
                        .position(|&c| c == b'}')
                        .ok_or_else(|| {
                            format!("$GENERATE: missing '}}' in \"{}\"", show(template))
                        })?;
                    let inner = &template[i + 2..i + close];
                    let (o, w, b) = parse_modifier(inner)?;
                    (o, w, b, close + 1)
                } else {
                    (0, 0, b'd', 1)
                };
                let v = value as i64 + offset;
                num.clear();
                format_value(v, width, base, &mut num)?;
                out.extend_from_slice(num.as_bytes());
                i += used;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(())
}

/// Parses `offset[,width[,base]]`.
fn parse_modifier(inner: &[u8]) -> Result<(i64, usize, u8), String> {
    let bad = || format!("$GENERATE: bad modifier \"${{{}}}\"", show(inner));
    let mut parts = inner.split(|&c| c == b',');
    let off = parts.next().ok_or_else(bad)?;
    let (neg, digits) = match off.split_first() {
        Some((b'-', r)) => (true, r),
        Some((b'+', r)) => (false, r),
        _ => (false, off),
    };
    let mag = parse_uint(digits, u32::MAX as u64).ok_or_else(bad)? as i64;
    let offset = if neg { -mag } else { mag };
    let width = match parts.next() {
        Some(w) => parse_uint(w, 255).ok_or_else(bad)? as usize,
        None => 0,
    };
    let base = match parts.next() {
        Some([b]) if b"doxXnN".contains(b) => *b,
        Some(_) => return Err(bad()),
        None => b'd',
    };
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok((offset, width, base))
}

/// Writes one substituted value.
fn format_value(v: i64, width: usize, base: u8, out: &mut String) -> Result<(), String> {
    if v < 0 && base != b'd' {
        return Err(format!(
            "$GENERATE: negative value {v} cannot be written in base {}",
            base as char
        ));
    }
    match base {
        b'o' => write!(out, "{v:0width$o}"),
        b'x' => write!(out, "{v:0width$x}"),
        b'X' => write!(out, "{v:0width$X}"),
        b'n' | b'N' => {
            let digits: &[u8; 16] = if base == b'n' {
                b"0123456789abcdef"
            } else {
                b"0123456789ABCDEF"
            };
            let mut v = v as u64;
            let mut width = width;
            loop {
                out.push(digits[(v & 15) as usize] as char);
                v >>= 4;
                width = width.saturating_sub(1);
                if width > 0 || v != 0 {
                    out.push('.');
                    width = width.saturating_sub(1);
                }
                if v == 0 && width == 0 {
                    break;
                }
            }
            Ok(())
        }
        _ => write!(out, "{v:0width$}"),
    }
    .map_err(|_| "$GENERATE: formatting failed".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(t: &str, v: u32) -> String {
        let mut out = Vec::new();
        expand(t.as_bytes(), v, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn substitutions() {
        assert_eq!(ex("host-$", 7), "host-7");
        assert_eq!(ex("$.0.0.10.in-addr.arpa.", 12), "12.0.0.10.in-addr.arpa.");
        assert_eq!(ex("${0,3,d}", 5), "005");
        assert_eq!(ex("${-1}", 5), "4");
        assert_eq!(ex("${+10,4,x}", 5), "000f");
        assert_eq!(ex("${0,2,X}", 255), "FF");
        assert_eq!(ex("${0,0,o}", 8), "10");
        assert_eq!(ex("a\\$b$", 1), "a\\$b1");
        assert_eq!(ex("$$", 3), "\\$");
        assert_eq!(ex("a$$$", 3), "a\\$3");
        // BIND's nibble mode: width counts characters, dots included.
        assert_eq!(ex("${0,0,n}", 0x1a), "a.1");
        assert_eq!(ex("${0,3,n}", 0x1a), "a.1");
        assert_eq!(ex("${0,4,n}", 0x1a), "a.1.");
        assert_eq!(ex("${0,7,N}", 0xab), "B.A.0.0");
        let mut out = Vec::new();
        assert!(expand(b"${0,2,q}", 1, &mut out).is_err());
        assert!(expand(b"${-5,0,x}", 1, &mut out).is_err());
        assert!(expand(b"${1", 1, &mut out).is_err());
    }

    #[test]
    fn ranges() {
        assert_eq!(
            parse_range(b"1-10").unwrap(),
            Range {
                start: 1,
                stop: 10,
                step: 1
            }
        );
        assert_eq!(
            parse_range(b"0-10/5").unwrap().values().collect::<Vec<_>>(),
            [0, 5, 10]
        );
        assert!(parse_range(b"10-1").is_err());
        assert!(parse_range(b"1-10/0").is_err());
        assert!(parse_range(b"0-4294967295").is_err());
        assert!(parse_range(b"x").is_err());
    }
}
