//! Shared machinery of the system tests: loopback ports and scratch
//! directories, the servers they start (`servers`, through lode-peers),
//! building queries, sending them over UDP and TCP, and an independent DNS
//! message parser with a dig-like printer.
//!
//! The parser here deliberately shares no code with Lode (not even
//! `lode-wire`): the tests judge Lode's bytes, so they must not trust Lode's
//! own reading of them. It follows RFC 1035 section 4 and RFC 6891 only.
#![allow(dead_code)] // each test binary uses a different part of this module

pub mod cases;
pub mod compare;
pub mod dnssec;
pub mod netns;
pub mod peers;
mod servers;
pub mod tap;
pub mod zonemd;

pub use servers::*;

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU16, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The repository root (two levels above this package).
pub fn repo_root() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    p.canonicalize().unwrap_or(p)
}

static NEXT_PORT: AtomicU16 = AtomicU16::new(0);

/// A port in `base..base+50` that is free for UDP and TCP on 127.0.0.1 right
/// now (a server started on it later may still lose a race: see
/// `retry_if_port_taken`).
pub fn pick_port(base: u16) -> u16 {
    for _ in 0..50 {
        // Start from the process ID so that concurrent runs (two people
        // testing on one machine) rarely probe the same ports.
        let n = u32::from(NEXT_PORT.fetch_add(1, Ordering::SeqCst)) + std::process::id();
        let port = base + (n % 50) as u16;
        let udp = UdpSocket::bind(("127.0.0.1", port));
        let tcp = TcpListener::bind(("127.0.0.1", port));
        if udp.is_ok() && tcp.is_ok() {
            return port;
        }
    }
    panic!("no free port in {base}..{}", base + 50);
}

/// Waits for `child` to exit (None after `timeout`).
pub fn wait_exit(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// A scratch directory removed when dropped.
#[derive(Debug)]
pub struct TempDir(pub PathBuf);

static NEXT_DIR: AtomicU32 = AtomicU32::new(0);

impl TempDir {
    /// Creates a fresh directory under the system temp dir.
    pub fn new(tag: &str) -> TempDir {
        let n = NEXT_DIR.fetch_add(1, Ordering::SeqCst);
        let p = std::env::temp_dir().join(format!("lode-test-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("LODE_KEEP_TMP").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// One zone to serve: its origin (absolute, with the final dot) and its file.
#[derive(Clone, Debug)]
pub struct ZoneSpec {
    /// Origin, e.g. `example.com.`.
    pub origin: String,
    /// Absolute path of the zone file.
    pub file: PathBuf,
}

/// The zones in a directory: every `<origin>zone` file (e.g. `example.com.zone`).
pub fn zones_in(dir: &Path) -> Vec<ZoneSpec> {
    let mut v: Vec<ZoneSpec> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "zone"))
        .map(|p| {
            let stem = p
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            ZoneSpec {
                origin: format!("{stem}."),
                file: p.canonicalize().unwrap_or(p),
            }
        })
        .collect();
    v.sort_by(|a, b| a.origin.cmp(&b.origin));
    v
}

/// A port in `lo..=hi` free for UDP and TCP on 127.0.0.1 right now.
pub fn pick_port_in(lo: u16, hi: u16) -> u16 {
    let span = u32::from(hi - lo) + 1;
    for _ in 0..span * 2 {
        let n = u32::from(NEXT_PORT.fetch_add(1, Ordering::SeqCst)) + std::process::id();
        let port = lo + (n % span) as u16;
        let udp = UdpSocket::bind(("127.0.0.1", port));
        let tcp = TcpListener::bind(("127.0.0.1", port));
        if udp.is_ok() && tcp.is_ok() {
            return port;
        }
    }
    panic!("no free port in {lo}..={hi}");
}

/// Whether [::1] can be bound here (containers often have no IPv6).
pub fn ipv6_loopback_available() -> bool {
    UdpSocket::bind("[::1]:0").is_ok()
}

// ---------------------------------------------------------------------------
// Queries

/// EDNS(0) parameters of a query.
#[derive(Clone, Debug, Default)]
pub struct Edns {
    /// Requestor's UDP payload size.
    pub size: u16,
    /// EDNS version.
    pub version: u8,
    /// The 16 flag bits (DO is 0x8000).
    pub flags: u16,
    /// Options (code, data).
    pub options: Vec<(u16, Vec<u8>)>,
}

/// A query to build.
#[derive(Clone, Debug)]
pub struct Query {
    /// Question name in wire form (case kept).
    pub qname: Vec<u8>,
    /// QTYPE.
    pub qtype: u16,
    /// QCLASS.
    pub qclass: u16,
    /// Message ID.
    pub id: u16,
    /// Header flags word without opcode and rcode (QR AA TC RD RA Z AD CD bits).
    pub flags: u16,
    /// OPCODE.
    pub opcode: u8,
    /// OPT record, if any.
    pub edns: Option<Edns>,
}

impl Query {
    /// A plain query (no RD, no EDNS).
    pub fn new(qname: &str, qtype: u16, qclass: u16) -> Query {
        Query {
            qname: name_to_wire(qname).unwrap_or_else(|e| panic!("bad name {qname}: {e}")),
            qtype,
            qclass,
            id: 0x1234,
            flags: 0,
            opcode: 0,
            edns: None,
        }
    }

    /// Wire form.
    pub fn to_wire(&self) -> Vec<u8> {
        let mut m = Vec::with_capacity(64);
        m.extend_from_slice(&self.id.to_be_bytes());
        let word = self.flags | (u16::from(self.opcode & 15) << 11);
        m.extend_from_slice(&word.to_be_bytes());
        let arcount: u16 = if self.edns.is_some() { 1 } else { 0 };
        for c in [1u16, 0, 0, arcount] {
            m.extend_from_slice(&c.to_be_bytes());
        }
        m.extend_from_slice(&self.qname);
        m.extend_from_slice(&self.qtype.to_be_bytes());
        m.extend_from_slice(&self.qclass.to_be_bytes());
        if let Some(e) = &self.edns {
            m.push(0);
            m.extend_from_slice(&41u16.to_be_bytes());
            m.extend_from_slice(&e.size.to_be_bytes());
            m.push(0);
            m.push(e.version);
            m.extend_from_slice(&e.flags.to_be_bytes());
            let rdlen: usize = e.options.iter().map(|(_, d)| 4 + d.len()).sum();
            m.extend_from_slice(&(rdlen as u16).to_be_bytes());
            for (code, data) in &e.options {
                m.extend_from_slice(&code.to_be_bytes());
                m.extend_from_slice(&(data.len() as u16).to_be_bytes());
                m.extend_from_slice(data);
            }
        }
        m
    }
}

/// Presentation name (absolute or not; `\.` and `\DDD` escapes) to wire form.
pub fn name_to_wire(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    if text == "." {
        out.push(0);
        return Ok(out);
    }
    let b = text.as_bytes();
    let mut label: Vec<u8> = Vec::new();
    let mut i = 0;
    let push = |label: &mut Vec<u8>, out: &mut Vec<u8>| -> Result<(), String> {
        if label.is_empty() || label.len() > 63 {
            return Err("bad label length".into());
        }
        out.push(label.len() as u8);
        out.append(label);
        Ok(())
    };
    while i < b.len() {
        match b[i] {
            b'\\' => {
                if i + 3 < b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
                    let v: u32 = std::str::from_utf8(&b[i + 1..i + 4])
                        .map_err(|e| e.to_string())?
                        .parse()
                        .map_err(|e: std::num::ParseIntError| e.to_string())?;
                    label.push(u8::try_from(v).map_err(|e| e.to_string())?);
                    i += 4;
                } else if i + 1 < b.len() {
                    label.push(b[i + 1]);
                    i += 2;
                } else {
                    return Err("dangling backslash".into());
                }
            }
            b'.' => {
                push(&mut label, &mut out)?;
                i += 1;
            }
            c => {
                label.push(c);
                i += 1;
            }
        }
    }
    if !label.is_empty() {
        push(&mut label, &mut out)?;
    }
    out.push(0);
    if out.len() > 255 {
        return Err("name longer than 255 octets".into());
    }
    Ok(out)
}

/// Record type mnemonics known to the tests (both directions).
pub const TYPES: &[(&str, u16)] = &[
    ("A", 1),
    ("NS", 2),
    ("MD", 3),
    ("MF", 4),
    ("CNAME", 5),
    ("SOA", 6),
    ("MB", 7),
    ("MG", 8),
    ("MR", 9),
    ("NULL", 10),
    ("WKS", 11),
    ("PTR", 12),
    ("HINFO", 13),
    ("MINFO", 14),
    ("MX", 15),
    ("TXT", 16),
    ("RP", 17),
    ("AFSDB", 18),
    ("RT", 21),
    ("SIG", 24),
    ("KEY", 25),
    ("PX", 26),
    ("AAAA", 28),
    ("LOC", 29),
    ("NXT", 30),
    ("SRV", 33),
    ("NAPTR", 35),
    ("KX", 36),
    ("CERT", 37),
    ("A6", 38),
    ("DNAME", 39),
    ("OPT", 41),
    ("APL", 42),
    ("DS", 43),
    ("SSHFP", 44),
    ("IPSECKEY", 45),
    ("RRSIG", 46),
    ("NSEC", 47),
    ("DNSKEY", 48),
    ("DHCID", 49),
    ("NSEC3", 50),
    ("NSEC3PARAM", 51),
    ("TLSA", 52),
    ("SMIMEA", 53),
    ("CDS", 59),
    ("CDNSKEY", 60),
    ("OPENPGPKEY", 61),
    ("CSYNC", 62),
    ("ZONEMD", 63),
    ("SVCB", 64),
    ("HTTPS", 65),
    ("SPF", 99),
    ("TKEY", 249),
    ("TSIG", 250),
    ("IXFR", 251),
    ("AXFR", 252),
    ("MAILB", 253),
    ("MAILA", 254),
    ("ANY", 255),
    ("URI", 256),
    ("CAA", 257),
];

/// Mnemonic or `TYPEn` to number.
pub fn type_from_str(s: &str) -> Option<u16> {
    let up = s.to_ascii_uppercase();
    if let Some(n) = up.strip_prefix("TYPE") {
        return n.parse().ok();
    }
    TYPES.iter().find(|(m, _)| *m == up).map(|&(_, v)| v)
}

/// Number to mnemonic or `TYPEn`.
pub fn type_to_string(t: u16) -> String {
    TYPES
        .iter()
        .find(|&&(_, v)| v == t)
        .map(|(m, _)| m.to_string())
        .unwrap_or_else(|| format!("TYPE{t}"))
}

/// Class mnemonic or `CLASSn` to number.
pub fn class_from_str(s: &str) -> Option<u16> {
    let up = s.to_ascii_uppercase();
    match up.as_str() {
        "IN" => Some(1),
        "CH" => Some(3),
        "HS" => Some(4),
        "NONE" => Some(254),
        "ANY" => Some(255),
        _ => up.strip_prefix("CLASS").and_then(|n| n.parse().ok()),
    }
}

/// Number to class mnemonic or `CLASSn`.
pub fn class_to_string(c: u16) -> String {
    match c {
        1 => "IN".into(),
        3 => "CH".into(),
        4 => "HS".into(),
        254 => "NONE".into(),
        255 => "ANY".into(),
        _ => format!("CLASS{c}"),
    }
}

/// Rcode number (extended included) to mnemonic.
pub fn rcode_to_string(r: u16) -> String {
    let s = match r {
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
        _ => return format!("RCODE{r}"),
    };
    s.into()
}

// ---------------------------------------------------------------------------
// Transport

/// Sends one datagram from a fresh socket and waits for one answer.
pub fn udp_exchange(addr: SocketAddr, msg: &[u8], timeout: Duration) -> Option<Vec<u8>> {
    let local = if addr.is_ipv6() {
        "[::1]:0"
    } else {
        "127.0.0.1:0"
    };
    let sock = UdpSocket::bind(local).ok()?;
    sock.set_read_timeout(Some(timeout)).ok()?;
    sock.send_to(msg, addr).ok()?;
    let mut buf = vec![0u8; 65535];
    let deadline = Instant::now() + timeout;
    loop {
        match sock.recv_from(&mut buf) {
            Ok((n, from)) if from == addr => return Some(buf[..n].to_vec()),
            Ok(_) => {}
            Err(_) => return None,
        }
        if Instant::now() > deadline {
            return None;
        }
    }
}

/// Sends one length-prefixed message over a fresh TCP connection and reads
/// one length-prefixed answer (None on EOF, reset or timeout).
pub fn tcp_exchange(addr: SocketAddr, msg: &[u8], timeout: Duration) -> Option<Vec<u8>> {
    let mut s = TcpStream::connect_timeout(&addr, timeout).ok()?;
    s.set_read_timeout(Some(timeout)).ok()?;
    s.set_write_timeout(Some(timeout)).ok()?;
    let mut framed = (msg.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(msg);
    s.write_all(&framed).ok()?;
    tcp_read_message(&mut s)
}

/// Reads one length-prefixed message from a TCP stream.
pub fn tcp_read_message(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 2];
    s.read_exact(&mut len).ok()?;
    let mut body = vec![0u8; usize::from(u16::from_be_bytes(len))];
    s.read_exact(&mut body).ok()?;
    Some(body)
}

// ---------------------------------------------------------------------------
// Independent parser

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

// ---------------------------------------------------------------------------
// Deterministic randomness

/// xorshift64*: a tiny, fixed-seed PRNG so corpora are the same on every run.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// Seeded generator (seed 0 is replaced).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// Random byte.
    pub fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }
}

// ---------------------------------------------------------------------------
// UPDATE messages (RFC 2136), built independently of Lode

/// One record of an UPDATE's prerequisite or update section.
#[derive(Clone, Debug)]
pub struct RawRr {
    /// Owner in presentation form.
    pub owner: String,
    /// TYPE.
    pub rtype: u16,
    /// CLASS (1, 254 NONE or 255 ANY).
    pub class: u16,
    /// TTL.
    pub ttl: u32,
    /// RDATA in wire form.
    pub rdata: Vec<u8>,
}

impl RawRr {
    /// A record of class IN.
    pub fn new(owner: &str, rtype: u16, ttl: u32, rdata: &[u8]) -> RawRr {
        RawRr {
            owner: owner.to_string(),
            rtype,
            class: 1,
            ttl,
            rdata: rdata.to_vec(),
        }
    }

    /// Wire form (owner uncompressed).
    pub fn to_wire(&self) -> Vec<u8> {
        let mut m = name_to_wire(&self.owner).unwrap_or_else(|e| panic!("{}: {e}", self.owner));
        m.extend_from_slice(&self.rtype.to_be_bytes());
        m.extend_from_slice(&self.class.to_be_bytes());
        m.extend_from_slice(&self.ttl.to_be_bytes());
        m.extend_from_slice(&(self.rdata.len() as u16).to_be_bytes());
        m.extend_from_slice(&self.rdata);
        m
    }
}

/// TXT RDATA of one character-string (up to 255 octets).
pub fn txt_rdata(text: &str) -> Vec<u8> {
    let mut v = vec![text.len().min(255) as u8];
    v.extend_from_slice(&text.as_bytes()[..text.len().min(255)]);
    v
}

/// An UPDATE message: one zone entry (`zone` SOA IN), the prerequisite and
/// update sections, no additional section.
pub fn update_message(id: u16, zone: &str, prereq: &[RawRr], updates: &[RawRr]) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend_from_slice(&(5u16 << 11).to_be_bytes());
    for c in [1, prereq.len(), updates.len(), 0] {
        m.extend_from_slice(&(c as u16).to_be_bytes());
    }
    m.extend_from_slice(&name_to_wire(zone).unwrap_or_else(|e| panic!("{zone}: {e}")));
    m.extend_from_slice(&[0, 6, 0, 1]);
    for r in prereq.iter().chain(updates) {
        m.extend_from_slice(&r.to_wire());
    }
    m
}

/// The SOA serial in a response's answer section (from the rendered RDATA).
pub fn soa_serial_of(m: &Message) -> Option<u32> {
    m.answer
        .iter()
        .find(|r| r.rtype == 6)
        .and_then(|r| r.rdata.split_whitespace().nth(2))
        .and_then(|s| s.parse().ok())
}

/// Asks `addr` for `zone`'s SOA over UDP and returns its serial.
pub fn query_serial(addr: SocketAddr, zone: &str) -> Option<u32> {
    let r = udp_exchange(
        addr,
        &Query::new(zone, 6, 1).to_wire(),
        Duration::from_secs(2),
    )?;
    soa_serial_of(&Message::parse(&r))
}

/// A length-prefixed exchange on an open TCP connection.
pub fn tcp_send_recv(s: &mut TcpStream, msg: &[u8]) -> Option<Vec<u8>> {
    let mut framed = (msg.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(msg);
    s.write_all(&framed).ok()?;
    tcp_read_message(s)
}

/// Writes a certificate for `ns.example` and its key to `dir/{cert,key}.pem`;
/// returns the key's pin.
pub fn write_certificate(dir: &Path, cert_name: &str, key_name: &str) -> String {
    let out = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=ns.example"])
        .arg("-keyout")
        .arg(dir.join(key_name))
        .arg("-out")
        .arg(dir.join(cert_name))
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    lode_io::tls::Credentials::from_pem_files(&dir.join(cert_name), &dir.join(key_name))
        .unwrap()
        .pin()
        .to_string()
}

/// The records kdig prints for the questions `args` (NAME TYPE pairs) asked
/// of 127.0.0.1:`port` over one connection with `extra` options (+tcp,
/// +tls-pin=…, +quic …), without comments, ids or times; and its stderr.
pub fn kdig_answers(port: u16, extra: &[String], args: &[String]) -> (String, String) {
    let out = Command::new("kdig")
        .arg("@127.0.0.1")
        .arg("-p")
        .arg(port.to_string())
        .args(extra)
        .args([
            "+keepopen",
            "+nocomments",
            "+noquestion",
            "+nostats",
            "+noedns",
        ])
        .args(args)
        .output()
        .expect("kdig");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let kept = text
        .lines()
        .filter(|l| !l.starts_with(";;") && !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    (kept, String::from_utf8_lossy(&out.stderr).to_string())
}
