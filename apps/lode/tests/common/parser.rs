//! The independent DNS message parser of the system tests (RFC 1035
//! section 4, RFC 6891), with a dig-like printer: it shares no code with
//! Lode, whose bytes it judges.

use std::fmt::Write as _;

use super::{class_to_string, rcode_to_string, type_to_string};

/// One resource record as read from a message, RDATA already rendered in
/// a canonical text form (names decompressed, case kept).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rr {
    /// Owner name, presentation form, case kept.
    pub owner: String,
    /// TYPE.
    pub rtype: u16,
    /// CLASS.
    pub class: u16,
    /// TTL.
    pub ttl: u32,
    /// RDATA rendered (see [`render_rdata`]).
    pub rdata: String,
}

impl Rr {
    /// dig-like line.
    pub fn line(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}\t{}",
            self.owner,
            self.ttl,
            class_to_string(self.class),
            type_to_string(self.rtype),
            self.rdata
        )
    }
}

/// The OPT pseudo-record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opt {
    /// Owner (must be root).
    pub owner: String,
    /// UDP payload size (the CLASS field).
    pub udp: u16,
    /// Upper 8 bits of the extended rcode.
    pub ext_rcode: u8,
    /// Version.
    pub version: u8,
    /// Flags (DO = 0x8000).
    pub flags: u16,
    /// Options (code, data).
    pub options: Vec<(u16, Vec<u8>)>,
}

/// A parsed message. Parsing never fails: problems go to `error`, and
/// whatever was read before is kept.
#[derive(Clone, Debug, Default)]
pub struct Message {
    /// ID.
    pub id: u16,
    /// QR.
    pub qr: bool,
    /// OPCODE.
    pub opcode: u8,
    /// AA.
    pub aa: bool,
    /// TC.
    pub tc: bool,
    /// RD.
    pub rd: bool,
    /// RA.
    pub ra: bool,
    /// Z (the reserved bit).
    pub z: bool,
    /// AD.
    pub ad: bool,
    /// CD.
    pub cd: bool,
    /// The 4 header rcode bits.
    pub rcode_low: u8,
    /// Header counts.
    pub counts: [u16; 4],
    /// Question entries (name text, type, class).
    pub question: Vec<(String, u16, u16)>,
    /// Answer section.
    pub answer: Vec<Rr>,
    /// Authority section.
    pub authority: Vec<Rr>,
    /// Additional section without OPT.
    pub additional: Vec<Rr>,
    /// OPT records found (more than one is an error worth seeing).
    pub opts: Vec<Opt>,
    /// Octets after the last counted record.
    pub trailing: usize,
    /// First parse problem.
    pub error: Option<String>,
    /// Size on the wire.
    pub size: usize,
}

impl Message {
    /// Full rcode (with the OPT extension when present).
    pub fn rcode(&self) -> u16 {
        let hi = self.opts.first().map_or(0, |o| u16::from(o.ext_rcode));
        (hi << 4) | u16::from(self.rcode_low)
    }

    /// Parses `msg` (never panics).
    pub fn parse(msg: &[u8]) -> Message {
        let mut m = Message {
            size: msg.len(),
            ..Message::default()
        };
        if let Err(e) = m.parse_into(msg) {
            m.error = Some(e);
        }
        m
    }

    fn parse_into(&mut self, msg: &[u8]) -> Result<(), String> {
        if msg.len() < 12 {
            return Err(format!("short header ({} octets)", msg.len()));
        }
        let u16at = |i: usize| u16::from_be_bytes([msg[i], msg[i + 1]]);
        self.id = u16at(0);
        let f = u16at(2);
        self.qr = f & 0x8000 != 0;
        self.opcode = ((f >> 11) & 15) as u8;
        self.aa = f & 0x0400 != 0;
        self.tc = f & 0x0200 != 0;
        self.rd = f & 0x0100 != 0;
        self.ra = f & 0x0080 != 0;
        self.z = f & 0x0040 != 0;
        self.ad = f & 0x0020 != 0;
        self.cd = f & 0x0010 != 0;
        self.rcode_low = (f & 15) as u8;
        for i in 0..4 {
            self.counts[i] = u16at(4 + 2 * i);
        }
        let mut pos = 12;
        for _ in 0..self.counts[0] {
            let (name, next) = read_name(msg, pos)?;
            if next + 4 > msg.len() {
                return Err("question truncated".into());
            }
            self.question.push((name, u16at(next), u16at(next + 2)));
            pos = next + 4;
        }
        for sec in 1..4 {
            for _ in 0..self.counts[sec] {
                let (owner, next) = read_name(msg, pos)?;
                if next + 10 > msg.len() {
                    return Err(format!("record header truncated in section {sec}"));
                }
                let rtype = u16at(next);
                let class = u16at(next + 2);
                let ttl = u32::from_be_bytes([
                    msg[next + 4],
                    msg[next + 5],
                    msg[next + 6],
                    msg[next + 7],
                ]);
                let rdlen = usize::from(u16at(next + 8));
                let start = next + 10;
                let end = start + rdlen;
                if end > msg.len() {
                    return Err(format!(
                        "RDATA beyond the message ({owner} {})",
                        type_to_string(rtype)
                    ));
                }
                pos = end;
                if rtype == 41 {
                    let mut options = Vec::new();
                    let mut p = start;
                    while p < end {
                        if p + 4 > end {
                            return Err("OPT option header truncated".into());
                        }
                        let code = u16at(p);
                        let len = usize::from(u16at(p + 2));
                        if p + 4 + len > end {
                            return Err("OPT option data truncated".into());
                        }
                        options.push((code, msg[p + 4..p + 4 + len].to_vec()));
                        p += 4 + len;
                    }
                    if sec != 3 {
                        return Err(format!("OPT in section {sec}"));
                    }
                    self.opts.push(Opt {
                        owner,
                        udp: class,
                        ext_rcode: (ttl >> 24) as u8,
                        version: (ttl >> 16) as u8,
                        flags: ttl as u16,
                        options,
                    });
                    continue;
                }
                let rdata = render_rdata(msg, rtype, start, end)?;
                let rr = Rr {
                    owner,
                    rtype,
                    class,
                    ttl,
                    rdata,
                };
                match sec {
                    1 => self.answer.push(rr),
                    2 => self.authority.push(rr),
                    _ => self.additional.push(rr),
                }
            }
        }
        self.trailing = msg.len() - pos;
        Ok(())
    }

    /// The header flags as dig prints them.
    pub fn flags_text(&self) -> String {
        let mut v = Vec::new();
        for (on, s) in [
            (self.qr, "qr"),
            (self.aa, "aa"),
            (self.tc, "tc"),
            (self.rd, "rd"),
            (self.ra, "ra"),
            (self.z, "z"),
            (self.ad, "ad"),
            (self.cd, "cd"),
        ] {
            if on {
                v.push(s);
            }
        }
        v.join(" ")
    }

    /// The OPT record as one comparable line.
    pub fn opt_text(&self) -> String {
        if self.opts.is_empty() {
            return "none".into();
        }
        self.opts
            .iter()
            .map(|o| {
                let opts: Vec<String> = o
                    .options
                    .iter()
                    .map(|(c, d)| format!("{c}:{}", hex(d)))
                    .collect();
                format!(
                    "owner={} version={} do={} flags={:#06x} udp={} options=[{}]",
                    o.owner,
                    o.version,
                    u8::from(o.flags & 0x8000 != 0),
                    o.flags & 0x7fff,
                    o.udp,
                    opts.join(" ")
                )
            })
            .collect::<Vec<_>>()
            .join(" | ")
    }

    /// The comparable aspects of the message, each as (name, text). Record
    /// sections are sorted multisets; the ID is left out.
    pub fn aspects(&self) -> Vec<(&'static str, String)> {
        let sorted = |v: &[Rr]| {
            let mut s: Vec<String> = v.iter().map(Rr::line).collect();
            s.sort();
            s.join("\n")
        };
        vec![
            ("opcode", self.opcode.to_string()),
            ("flags", self.flags_text()),
            ("rcode", rcode_to_string(self.rcode())),
            (
                "question",
                self.question
                    .iter()
                    .map(|(n, t, c)| format!("{n} {} {}", class_to_string(*c), type_to_string(*t)))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            ("answer", sorted(&self.answer)),
            ("authority", sorted(&self.authority)),
            ("additional", sorted(&self.additional)),
            ("opt", self.opt_text()),
            (
                "format",
                format!(
                    "trailing={} error={}",
                    self.trailing,
                    self.error.as_deref().unwrap_or("-")
                ),
            ),
        ]
    }

    /// dig-like text.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            ";; opcode: {}, status: {}, id: {}, size: {}",
            self.opcode,
            rcode_to_string(self.rcode()),
            self.id,
            self.size
        );
        let _ = writeln!(
            s,
            ";; flags: {}; QUERY: {}, ANSWER: {}, AUTHORITY: {}, ADDITIONAL: {}",
            self.flags_text(),
            self.counts[0],
            self.counts[1],
            self.counts[2],
            self.counts[3]
        );
        if !self.opts.is_empty() {
            let _ = writeln!(s, ";; OPT: {}", self.opt_text());
        }
        if let Some(e) = &self.error {
            let _ = writeln!(s, ";; PARSE ERROR: {e}");
        }
        if self.trailing > 0 {
            let _ = writeln!(s, ";; {} trailing octets", self.trailing);
        }
        let _ = writeln!(s, ";; QUESTION:");
        for (n, t, c) in &self.question {
            let _ = writeln!(s, ";{n}\t{}\t{}", class_to_string(*c), type_to_string(*t));
        }
        for (title, v) in [
            ("ANSWER", &self.answer),
            ("AUTHORITY", &self.authority),
            ("ADDITIONAL", &self.additional),
        ] {
            if !v.is_empty() {
                let _ = writeln!(s, ";; {title}:");
                for r in v {
                    let _ = writeln!(s, "{}", r.line());
                }
            }
        }
        s
    }
}

/// Lower-case hex.
pub fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads a possibly compressed name at `pos`; returns its presentation
/// form (case kept) and the position after it in the original stream.
/// Only backward pointers are followed, so loops cannot happen.
pub fn read_name(msg: &[u8], mut pos: usize) -> Result<(String, usize), String> {
    let mut text = String::new();
    let mut wire_len = 1usize;
    let mut after: Option<usize> = None;
    let mut limit = pos; // pointers must go strictly before this
    loop {
        let len = *msg.get(pos).ok_or("name runs past the end")?;
        match len & 0xc0 {
            0x00 => {
                if len == 0 {
                    if text.is_empty() {
                        text.push('.');
                    }
                    return Ok((text, after.unwrap_or(pos + 1)));
                }
                let l = usize::from(len);
                let label = msg
                    .get(pos + 1..pos + 1 + l)
                    .ok_or("label runs past the end")?;
                wire_len += l + 1;
                if wire_len > 255 {
                    return Err("name longer than 255 octets".into());
                }
                for &c in label {
                    match c {
                        b'.' | b'\\' | b'"' | b'(' | b')' | b';' | b'@' | b'$' => {
                            text.push('\\');
                            text.push(c as char);
                        }
                        0x21..=0x7e => text.push(c as char),
                        _ => {
                            let _ = write!(text, "\\{c:03}");
                        }
                    }
                }
                text.push('.');
                pos += 1 + l;
            }
            0xc0 => {
                let b2 = *msg.get(pos + 1).ok_or("pointer runs past the end")?;
                let target = (usize::from(len & 0x3f) << 8) | usize::from(b2);
                if after.is_none() {
                    after = Some(pos + 2);
                }
                if target >= limit {
                    return Err("forward or looping compression pointer".into());
                }
                limit = target;
                pos = target;
            }
            _ => return Err(format!("label type {len:#04x}")),
        }
    }
}

/// Renders RDATA `msg[start..end]` of type `rtype` in a canonical text:
/// names decompressed (case kept), numbers in decimal, strings quoted,
/// everything else as hex. Errors if a field does not fit.
pub fn render_rdata(msg: &[u8], rtype: u16, start: usize, end: usize) -> Result<String, String> {
    #[derive(Clone, Copy)]
    enum F {
        Name,
        U8,
        U16,
        U32,
        Str,
        Strs,
        Hex,
        V4,
        V6,
    }
    use F::*;
    let layout: &[F] = match rtype {
        1 => &[V4],
        28 => &[V6],
        2 | 3 | 4 | 5 | 7 | 8 | 9 | 12 | 39 => &[Name],
        6 => &[Name, Name, U32, U32, U32, U32, U32],
        14 | 17 => &[Name, Name],
        15 | 18 | 21 | 36 => &[U16, Name],
        26 => &[U16, Name, Name],
        33 => &[U16, U16, U16, Name],
        35 => &[U16, U16, Str, Str, Str, Name],
        13 | 16 | 99 => &[Strs],
        46 | 24 => &[U16, U8, U8, U32, U32, U32, U16, Name, Hex],
        47 => &[Name, Hex],
        _ => &[Hex],
    };
    let mut out: Vec<String> = Vec::new();
    let mut p = start;
    let need = |p: usize, n: usize| -> Result<(), String> {
        if p + n > end {
            Err(format!("{} RDATA too short", type_to_string(rtype)))
        } else {
            Ok(())
        }
    };
    for f in layout {
        match f {
            Name => {
                let (n, next) = read_name(&msg[..end], p)?;
                out.push(n);
                p = next;
            }
            U8 => {
                need(p, 1)?;
                out.push(msg[p].to_string());
                p += 1;
            }
            U16 => {
                need(p, 2)?;
                out.push(u16::from_be_bytes([msg[p], msg[p + 1]]).to_string());
                p += 2;
            }
            U32 => {
                need(p, 4)?;
                out.push(
                    u32::from_be_bytes([msg[p], msg[p + 1], msg[p + 2], msg[p + 3]]).to_string(),
                );
                p += 4;
            }
            Str => {
                need(p, 1)?;
                let l = usize::from(msg[p]);
                need(p + 1, l)?;
                out.push(quote(&msg[p + 1..p + 1 + l]));
                p += 1 + l;
            }
            Strs => {
                while p < end {
                    let l = usize::from(msg[p]);
                    need(p + 1, l)?;
                    out.push(quote(&msg[p + 1..p + 1 + l]));
                    p += 1 + l;
                }
            }
            Hex => {
                out.push(format!("\\# {} {}", end - p, hex(&msg[p..end])));
                p = end;
            }
            V4 => {
                need(p, 4)?;
                out.push(format!(
                    "{}.{}.{}.{}",
                    msg[p],
                    msg[p + 1],
                    msg[p + 2],
                    msg[p + 3]
                ));
                p += 4;
            }
            V6 => {
                need(p, 16)?;
                let mut a = [0u8; 16];
                a.copy_from_slice(&msg[p..p + 16]);
                out.push(std::net::Ipv6Addr::from(a).to_string());
                p += 16;
            }
        }
    }
    if p != end {
        return Err(format!(
            "{} RDATA has {} extra octets",
            type_to_string(rtype),
            end - p
        ));
    }
    Ok(out.join(" "))
}

fn quote(s: &[u8]) -> String {
    let mut t = String::from("\"");
    for &c in s {
        match c {
            b'"' | b'\\' => {
                t.push('\\');
                t.push(c as char);
            }
            0x20..=0x7e => t.push(c as char),
            _ => {
                let _ = write!(t, "\\{c:03}");
            }
        }
    }
    t.push('"');
    t
}
