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
mod parser;
pub mod peers;
mod servers;
pub mod tap;
mod xfr_tools;
pub mod zonemd;

pub use parser::*;
pub use servers::*;

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
    lode_peers::self_signed_certificate(&dir.join(cert_name), &dir.join(key_name))
        .expect("openssl");
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
