//! Low-level presentation codecs: numbers, TTLs, character strings, names,
//! hex, base64, base32hex and RRSIG times. All work on byte slices taken from
//! the input buffer and append to caller-owned buffers.

use lode_wire::Name;

/// Parses an unsigned decimal number no greater than `max`.
pub(crate) fn parse_uint(s: &[u8], max: u64) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    (v <= max).then_some(v)
}

/// Parses a TTL: plain seconds, or BIND-style units (`1w2d3h4m5s`, case ignored).
pub(crate) fn parse_ttl(s: &[u8]) -> Option<u32> {
    if s.is_empty() {
        return None;
    }
    if let Some(v) = parse_uint(s, u32::MAX as u64) {
        return Some(v as u32);
    }
    let mut total: u64 = 0;
    let mut cur: Option<u64> = None;
    for &c in s {
        if c.is_ascii_digit() {
            let v = cur
                .unwrap_or(0)
                .checked_mul(10)?
                .checked_add((c - b'0') as u64)?;
            if v > u32::MAX as u64 {
                return None;
            }
            cur = Some(v);
        } else {
            let mult = match c.to_ascii_lowercase() {
                b'w' => 604_800,
                b'd' => 86_400,
                b'h' => 3_600,
                b'm' => 60,
                b's' => 1,
                _ => return None,
            };
            total = total.checked_add(cur.take()?.checked_mul(mult)?)?;
        }
    }
    // A trailing number without a unit counts as seconds (BIND: `1h30`).
    total = total.checked_add(cur.unwrap_or(0))?;
    u32::try_from(total).ok()
}

/// Shows a token for an error message (lossy, shortened).
pub(crate) fn show(s: &[u8]) -> String {
    let t = String::from_utf8_lossy(s);
    if t.chars().count() > 60 {
        let mut short: String = t.chars().take(57).collect();
        short.push_str("...");
        short
    } else {
        t.into_owned()
    }
}

/// Decodes one presentation-form character string (quotes already removed):
/// `\DDD` and `\X` escapes; appends the bytes to `out`.
pub(crate) fn unescape_into(s: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c != b'\\' {
            // Copy the run up to the next backslash in one go.
            let end = s[i..]
                .iter()
                .position(|&b| b == b'\\')
                .map_or(s.len(), |p| i + p);
            out.extend_from_slice(&s[i..end]);
            i = end;
            continue;
        }
        let Some(&n) = s.get(i + 1) else {
            return Err("backslash at end of string".into());
        };
        if n.is_ascii_digit() {
            let d = s
                .get(i + 1..i + 4)
                .filter(|d| d.iter().all(u8::is_ascii_digit))
                .ok_or_else(|| "bad \\DDD escape (needs three digits)".to_string())?;
            let v = (d[0] - b'0') as u32 * 100 + (d[1] - b'0') as u32 * 10 + (d[2] - b'0') as u32;
            if v > 255 {
                return Err(format!("bad escape \\{} (above 255)", show(d)));
            }
            out.push(v as u8);
            i += 4;
        } else {
            out.push(n);
            i += 2;
        }
    }
    Ok(())
}

/// Appends `data` as the inside of a quoted character string (Knot style:
/// `"` and `\` escaped, bytes outside 0x20..0x7E as `\DDD`).
pub(crate) fn escape_quoted(data: &[u8], out: &mut String) {
    for &b in data {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7E => out.push(b as char),
            _ => push_ddd(b, out),
        }
    }
}

/// Appends `\DDD` for one byte.
pub(crate) fn push_ddd(b: u8, out: &mut String) {
    out.push('\\');
    out.push((b'0' + b / 100) as char);
    out.push((b'0' + (b / 10) % 10) as char);
    out.push((b'0' + b % 10) as char);
}

/// Encodes a name in presentation form (`@`, relative or absolute) and appends
/// its uncompressed wire form to `out`.
pub(crate) fn name_into(s: &[u8], origin: &Name, out: &mut Vec<u8>) -> Result<(), String> {
    if s == b"@" {
        out.extend_from_slice(origin.as_wire());
        return Ok(());
    }
    if s == b"." {
        out.push(0);
        return Ok(());
    }
    if s.is_empty() {
        return Err("empty name".into());
    }
    if let Some(r) = plain_name_into(s, origin, out) {
        return r;
    }
    general_name_into(s, origin, out)
}

/// [`name_into`] for any non-empty text other than `@` and `.`, escapes included.
fn general_name_into(s: &[u8], origin: &Name, out: &mut Vec<u8>) -> Result<(), String> {
    let start = out.len();
    let mut label_start = out.len();
    out.push(0);
    let mut i = 0;
    let mut absolute = false;
    while i < s.len() {
        let c = s[i];
        match c {
            b'.' => {
                let len = out.len() - label_start - 1;
                if len == 0 {
                    out.truncate(start);
                    return Err(format!("empty label in name \"{}\"", show(s)));
                }
                out[label_start] = len as u8;
                if i + 1 == s.len() {
                    absolute = true;
                } else {
                    label_start = out.len();
                    out.push(0);
                }
                i += 1;
                continue;
            }
            b'\\' => {
                let Some(&n) = s.get(i + 1) else {
                    out.truncate(start);
                    return Err(format!("bad escape in name \"{}\"", show(s)));
                };
                if n.is_ascii_digit() {
                    let v = s
                        .get(i + 1..i + 4)
                        .filter(|d| d.iter().all(u8::is_ascii_digit))
                        .map(|d| {
                            (d[0] - b'0') as u32 * 100
                                + (d[1] - b'0') as u32 * 10
                                + (d[2] - b'0') as u32
                        })
                        .filter(|&v| v <= 255);
                    let Some(v) = v else {
                        out.truncate(start);
                        return Err(format!("bad \\DDD escape in name \"{}\"", show(s)));
                    };
                    out.push(v as u8);
                    i += 4;
                } else {
                    out.push(n);
                    i += 2;
                }
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
        if out.len() - label_start - 1 > 63 {
            out.truncate(start);
            return Err(format!(
                "label longer than 63 octets in name \"{}\"",
                show(s)
            ));
        }
    }
    if absolute {
        out.push(0);
    } else {
        let len = out.len() - label_start - 1;
        out[label_start] = len as u8;
        out.extend_from_slice(origin.as_wire());
    }
    if out.len() - start > 255 {
        out.truncate(start);
        return Err(format!("name longer than 255 octets: \"{}\"", show(s)));
    }
    Ok(())
}

/// [`name_into`] for the common case of a name without escapes, shorter than
/// 255 octets: `None` when `s` holds a backslash (the caller then takes the
/// general path, which gives the same result for any input).
///
/// The text shifted by one octet is the wire form once each dot is replaced by
/// the length of the label after it: `ab.c` → `[2]ab[1]c`.
fn plain_name_into(s: &[u8], origin: &Name, out: &mut Vec<u8>) -> Option<Result<(), String>> {
    let n = s.len();
    if n >= 255 {
        return None;
    }
    let mut buf = [0u8; 256];
    buf[1..=n].copy_from_slice(s);
    // `len_at` is where the length of the current label goes: 0, or just after a dot.
    let mut len_at = 0;
    for (i, &c) in s.iter().enumerate() {
        if c == b'.' {
            let len = i - len_at;
            if len == 0 || len > 63 {
                return Some(Err(label_error(len, s)));
            }
            buf[len_at] = len as u8;
            len_at = i + 1;
        } else if c == b'\\' {
            return None;
        }
    }
    let absolute = len_at == n;
    let wire_len = if absolute {
        // The final dot's slot becomes the root label.
        buf[n] = 0;
        n + 1
    } else {
        let len = n - len_at;
        if len == 0 || len > 63 {
            return Some(Err(label_error(len, s)));
        }
        buf[len_at] = len as u8;
        n + 1 + origin.as_wire().len()
    };
    if wire_len > 255 {
        return Some(Err(format!("name longer than 255 octets: \"{}\"", show(s))));
    }
    out.extend_from_slice(&buf[..=n]);
    if !absolute {
        out.extend_from_slice(origin.as_wire());
    }
    Some(Ok(()))
}

/// The error for a label of `len` octets (0 or more than 63) in name `s`.
#[cold]
fn label_error(len: usize, s: &[u8]) -> String {
    if len == 0 {
        format!("empty label in name \"{}\"", show(s))
    } else {
        format!("label longer than 63 octets in name \"{}\"", show(s))
    }
}

/// Appends the hex digits of `s` (whitespace not allowed inside one token) as bytes.
/// Returns false on a bad digit. An odd count is completed by the next token via `pending`.
pub(crate) fn hex_into(s: &[u8], out: &mut Vec<u8>, pending: &mut Option<u8>) -> bool {
    for &c in s {
        let Some(v) = hex_val(c) else { return false };
        match pending.take() {
            Some(hi) => out.push(hi << 4 | v),
            None => *pending = Some(v),
        }
    }
    true
}

/// The value of one hex digit.
fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Appends `data` as upper-case hex.
pub(crate) fn push_hex(data: &[u8], out: &mut String) {
    const D: &[u8; 16] = b"0123456789ABCDEF";
    for &b in data {
        out.push(D[(b >> 4) as usize] as char);
        out.push(D[(b & 15) as usize] as char);
    }
}

/// Base64 decoder state spanning several tokens (`spaces allowed`).
#[derive(Default)]
pub(crate) struct Base64 {
    acc: u32,
    bits: u8,
    pad: u8,
}

impl Base64 {
    /// Feeds one token; false on a bad character.
    pub(crate) fn feed(&mut self, s: &[u8], out: &mut Vec<u8>) -> bool {
        for &c in s {
            if c == b'=' {
                self.pad += 1;
                if self.pad > 2 {
                    return false;
                }
                continue;
            }
            if self.pad > 0 {
                // Data after padding starts a new quantum (Knot reads `AA==BB==`)
                // if the padded one was complete.
                if !self.quantum_complete() {
                    return false;
                }
                *self = Base64::default();
            }
            let v = match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'+' => 62,
                b'/' => 63,
                _ => return false,
            };
            self.acc = (self.acc << 6) | v as u32;
            self.bits += 6;
            if self.bits >= 8 {
                self.bits -= 8;
                out.push((self.acc >> self.bits) as u8);
                self.acc &= (1 << self.bits) - 1;
            }
        }
        true
    }

    /// Checks the end of input: the quantum must be complete (padding optional
    /// when the count of characters says what it would be). Non-zero leftover
    /// bits (`AB==`) are ignored, as Knot and RFC 4648 §3.5 allow.
    pub(crate) fn finish(&self) -> bool {
        self.quantum_complete()
    }

    /// True if the current quantum is complete: fewer than 6 leftover bits, and
    /// 2 or 4 of them for 1 or 2 pad characters.
    fn quantum_complete(&self) -> bool {
        self.bits < 6 && (self.pad == 0 || self.bits == 2 * self.pad)
    }
}

/// Appends `data` in base64 with padding.
pub(crate) fn push_base64(data: &[u8], out: &mut String) {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let v = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(v >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
}

/// Decodes base32hex without padding (RFC 4648 §7, case ignored), appending to `out`.
pub(crate) fn base32hex_into(s: &[u8], out: &mut Vec<u8>) -> bool {
    let mut acc: u64 = 0;
    let mut bits = 0u32;
    for &c in s {
        if c == b'=' {
            break;
        }
        let v = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'v' => c - b'a' + 10,
            b'A'..=b'V' => c - b'A' + 10,
            _ => return false,
        };
        acc = (acc << 5) | v as u64;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    bits < 5 && acc == 0
}

/// Appends `data` as lower-case base32hex without padding (as Knot prints it).
pub(crate) fn push_base32hex(data: &[u8], out: &mut String) {
    const A: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &b in data {
        acc = (acc << 8) | b as u32;
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(A[(acc >> bits & 31) as usize] as char);
        }
        acc &= (1 << bits) - 1;
    }
    if bits > 0 {
        out.push(A[(acc << (5 - bits) & 31) as usize] as char);
    }
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A Unix time as a UTC date and time for people (`2026-11-27 03:10:00 UTC`).
pub fn utc_text(t: u64) -> String {
    let (y, m, d) = civil_from_days((t / 86_400) as i64);
    let s = t % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// Civil date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + if m <= 2 { 1 } else { 0 }, m, d)
}

/// Parses an RRSIG time: `YYYYMMDDHHmmSS` (mod 2^32, RFC 4034 §3.2) or seconds.
pub(crate) fn parse_time(s: &[u8]) -> Option<u32> {
    if s.len() == 14 && s.iter().all(u8::is_ascii_digit) {
        let n = |a: usize, b: usize| parse_uint(&s[a..b], u64::MAX).map(|v| v as i64);
        let (y, mo, d, h, mi, se) = (
            n(0, 4)?,
            n(4, 6)?,
            n(6, 8)?,
            n(8, 10)?,
            n(10, 12)?,
            n(12, 14)?,
        );
        if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
            return None;
        }
        let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se;
        return Some(secs.rem_euclid(1 << 32) as u32);
    }
    parse_uint(s, u32::MAX as u64).map(|v| v as u32)
}

/// Appends an RRSIG time as `YYYYMMDDHHmmSS` (the 32-bit value read as 1970..2106).
pub(crate) fn push_time(t: u32, out: &mut String) {
    use std::fmt::Write;
    let t = t as i64;
    let (y, m, d) = civil_from_days(t.div_euclid(86_400));
    let s = t.rem_euclid(86_400);
    // Writing to a String cannot fail.
    let _ = write!(
        out,
        "{y:04}{m:02}{d:02}{:02}{:02}{:02}",
        s / 3600,
        s / 60 % 60,
        s % 60
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls() {
        assert_eq!(parse_ttl(b"3600"), Some(3600));
        assert_eq!(parse_ttl(b"1h30m"), Some(5400));
        assert_eq!(parse_ttl(b"1W"), Some(604_800));
        assert_eq!(parse_ttl(b"1d2h3m4s"), Some(93_784));
        assert_eq!(parse_ttl(b"1h30"), Some(3630));
        assert_eq!(parse_ttl(b"4294967295"), Some(u32::MAX));
        assert_eq!(parse_ttl(b"4294967296"), None);
        assert_eq!(parse_ttl(b"h"), None);
        assert_eq!(parse_ttl(b"1x"), None);
        assert_eq!(parse_ttl(b"99999999w"), None);
    }

    #[test]
    fn base64_round_trip() {
        for len in 0..20u8 {
            let data: Vec<u8> = (0..len)
                .map(|i| i.wrapping_mul(37).wrapping_add(len))
                .collect();
            let mut s = String::new();
            push_base64(&data, &mut s);
            let mut dec = Base64::default();
            let mut out = Vec::new();
            // Split in two tokens to check that spaces are allowed.
            let (a, b) = s.as_bytes().split_at(s.len() / 2);
            assert!(
                dec.feed(a, &mut out) && dec.feed(b, &mut out) && dec.finish(),
                "{s}"
            );
            assert_eq!(out, data);
        }
        let mut out = Vec::new();
        let mut dec = Base64::default();
        assert!(dec.feed(b"AA==", &mut out) && dec.finish());
        assert_eq!(out, [0]);
        // Knot 3.2.6 reads these two (checked with `knotc zone-check`).
        let mut dec = Base64::default();
        out.clear();
        assert!(dec.feed(b"AB==", &mut out) && dec.finish(), "trailing bits");
        assert_eq!(out, [0]);
        let mut dec = Base64::default();
        out.clear();
        assert!(dec.feed(b"AA==", &mut out) && dec.feed(b"BB==AAA=", &mut out) && dec.finish());
        assert_eq!(out, [0, 4, 0, 0]);
        assert!(!Base64::default().feed(b"A*", &mut out));
        assert!(!Base64::default().feed(b"AA=B", &mut out));
        assert!(!Base64::default().feed(b"AAAA=B", &mut out));
        let mut dec = Base64::default();
        assert!(dec.feed(b"AAAA=", &mut out) && !dec.finish());
    }

    #[test]
    fn base32hex_round_trip() {
        for len in 0..25u8 {
            let data: Vec<u8> = (0..len)
                .map(|i| i.wrapping_mul(91).wrapping_add(3))
                .collect();
            let mut s = String::new();
            push_base32hex(&data, &mut s);
            let mut out = Vec::new();
            assert!(base32hex_into(s.to_uppercase().as_bytes(), &mut out), "{s}");
            assert_eq!(out, data);
        }
        // RFC 4648 §10 test vector.
        let mut s = String::new();
        push_base32hex(b"foobar", &mut s);
        assert_eq!(s, "cpnmuoj1e8");
    }

    #[test]
    fn times() {
        assert_eq!(parse_time(b"19700101000000"), Some(0));
        assert_eq!(parse_time(b"20240101000000"), Some(1_704_067_200));
        let mut s = String::new();
        push_time(1_704_067_200, &mut s);
        assert_eq!(s, "20240101000000");
        assert_eq!(parse_time(b"12345"), Some(12345));
        assert_eq!(parse_time(b"20241301000000"), None);
        let mut s = String::new();
        push_time(u32::MAX, &mut s);
        assert_eq!(s, "21060207062815");
        assert_eq!(parse_time(s.as_bytes()), Some(u32::MAX));
    }

    #[test]
    fn plain_names_as_general_path() {
        let origin: Name = "example.".parse().unwrap();
        let long_label = "x".repeat(64);
        let max_label = "y".repeat(63);
        let long_name = format!("{max_label}.{max_label}.{max_label}.{max_label}");
        let near_255 = format!("{max_label}.{max_label}.{max_label}.{}", "z".repeat(52));
        let cases = [
            "a",
            "a.b.c",
            "a.b.c.",
            "0.0.0.0.0.0",
            "a..b",
            ".a",
            "a..",
            "..",
            long_label.as_str(),
            max_label.as_str(),
            long_name.as_str(),
            near_255.as_str(),
            "*.wild",
            "MiXeD.Case.",
        ];
        for c in cases {
            for text in [c.to_string(), format!("{c}.")] {
                let mut plain = vec![9];
                let mut general = vec![9];
                let Some(p) = plain_name_into(text.as_bytes(), &origin, &mut plain) else {
                    // Left to the general path: long text only (no backslash here).
                    assert!(text.len() >= 255, "{text}");
                    continue;
                };
                let g = general_name_into(text.as_bytes(), &origin, &mut general);
                assert_eq!(p, g, "{text}");
                assert_eq!(plain, general, "{text}");
            }
        }
        let mut out = Vec::new();
        assert!(plain_name_into(b"a\\.b", &origin, &mut out).is_none());
        assert!(out.is_empty());
    }

    #[test]
    fn names() {
        let origin: Name = "example.".parse().unwrap();
        let mut out = Vec::new();
        name_into(b"a\\.b", &origin, &mut out).unwrap();
        assert_eq!(out, b"\x03a.b\x07example\x00");
        out.clear();
        name_into(b"@", &origin, &mut out).unwrap();
        assert_eq!(out, origin.as_wire());
        out.clear();
        assert!(name_into(b"a..b", &origin, &mut out).is_err());
        assert!(out.is_empty());
        assert!(name_into(&[b'x'; 64], &origin, &mut out).is_err());
        name_into(b"\\065.", &origin, &mut out).unwrap();
        assert_eq!(out, b"\x01A\x00");
    }
}
