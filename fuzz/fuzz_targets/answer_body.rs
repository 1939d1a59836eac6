//! The body shared by the fuzz target (fuzz/fuzz_targets/answer.rs) and the
//! deterministic smoke test (apps/lode/tests/fuzz_smoke.rs): build a ZoneSet
//! from zone files, run `answer` on bytes over UDP and TCP, and check what
//! must hold for any input:
//!
//! - no panic; the length returned fits the buffer;
//! - a response (length > 0) has a header, echoes the ID, has QR set, fits
//!   the UDP limit over UDP, and is a well-formed message (every counted
//!   question and record present, RDATA inside the message, nothing after);
//! - the same input gives the same bytes twice (no state leaks between queries);
//! - through the server's policy (DNS cookies and response-rate limiting on,
//!   the source address taken from the input), every response is still a
//!   well-formed message with the query's ID (or nothing is sent).
#![allow(dead_code)]

use lode_engine::{answer, Settings, Transport, ZoneSet};
use lode_server::guard::Guard;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::sync::Arc;

/// Answer settings with every option on: NSID, CH identity and version,
/// padding (so their paths are fuzzed too).
pub fn settings() -> Settings {
    Settings {
        nsid: Some(b"fuzz-nsid".as_slice().into()),
        identity: Some("fuzz-identity".into()),
        version: Some("fuzz-version".into()),
        padding: true,
        ..Settings::default()
    }
}

/// Cookies (a fixed secret) and response-rate limiting (a low rate, slip 2,
/// so limiting and slipping happen within a run) as the server runs them.
pub fn guard() -> Arc<Guard> {
    let cookies = lode_server::config::CookiesEntry {
        secret: Some("000102030405060708090a0b0c0d0e0f".into()),
        ..Default::default()
    }
    .resolve()
    .expect("cookie settings");
    let rrl = lode_server::config::RrlEntry {
        rate_limit: 5,
        slip: Some(2),
        table_size: Some(4096),
        ..Default::default()
    }
    .resolve()
    .expect("rrl settings");
    Guard::from_parts(Some(&cookies), Some(&rrl)).expect("guard")
}

/// Runs `data` through the server's policy over both transports, from a
/// source address chosen by its last octets; checks the invariants that
/// hold whatever the policy decided.
pub fn check_guarded(
    zones: &ZoneSet,
    guard: &Guard,
    data: &[u8],
    s: &mut Scratch,
) -> Result<(), String> {
    let settings = settings();
    let tail = |i: usize| data.len().checked_sub(i).map_or(0, |j| data[j]);
    let peer = if tail(1) & 1 == 0 {
        IpAddr::V4(Ipv4Addr::new(127, 0, tail(2), tail(3)))
    } else {
        IpAddr::V6(Ipv6Addr::new(
            0x2001,
            0xdb8,
            u16::from(tail(2)),
            0,
            0,
            0,
            0,
            1,
        ))
    };
    for transport in [Transport::Udp, Transport::Tcp] {
        let n = guard
            .answer(zones, data, &mut s.out, transport, &settings, peer, &|| {
                None
            })
            .0
            .len;
        if n == 0 {
            continue;
        }
        check_response(data, &s.out, n, transport, &settings)?;
    }
    Ok(())
}

/// What every response must be: inside the buffer, a header with the ID
/// echoed and QR set, within the UDP limit, a well-formed message.
fn check_response(
    data: &[u8],
    out: &[u8],
    n: usize,
    transport: Transport,
    settings: &Settings,
) -> Result<bool, String> {
    if n > out.len() {
        return Err(format!("{transport:?}: length {n} beyond the buffer"));
    }
    let resp = &out[..n];
    if n < 12 {
        return Err(format!("{transport:?}: {n}-octet response"));
    }
    if data.len() < 2 || resp[..2] != data[..2] {
        return Err(format!("{transport:?}: ID not echoed"));
    }
    if resp[2] & 0x80 == 0 {
        return Err(format!("{transport:?}: QR clear in a response"));
    }
    if transport == Transport::Udp && n > usize::from(settings.max_udp_payload.max(512)) {
        return Err(format!("UDP response of {n} octets"));
    }
    let has_opt =
        well_formed(resp).map_err(|e| format!("{transport:?}: malformed response: {e}"))?;
    if transport == Transport::Udp && !has_opt && n > 512 {
        return Err(format!(
            "UDP response of {n} octets without OPT (RFC 1035: 512)"
        ));
    }
    Ok(has_opt)
}

/// Builds a ZoneSet from every `<origin>zone` file in `dir` that Lode can load.
pub fn zone_set(dir: &Path) -> ZoneSet {
    let mut set = ZoneSet::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "zone"))
        .collect();
    files.sort();
    for path in files {
        let stem = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let origin: lode_wire::Name = format!("{stem}.")
            .parse()
            .unwrap_or_else(|e| panic!("origin of {}: {e:?}", path.display()));
        // A zone Lode cannot read is skipped here (the differential suite and
        // lode check report it); the others still give the fuzzer something to find.
        let parsed = match lode_zonefile::parse_file(&path, &origin, None) {
            Ok(p) => p,
            Err(e) => {
                eprintln!(
                    "fuzz body: skipping {}: {} error(s)",
                    path.display(),
                    e.len()
                );
                continue;
            }
        };
        let mut b = lode_zonedb::ZoneBuilder::new(origin);
        for (i, r) in parsed.records.into_iter().enumerate() {
            b.add(r, i as u32);
        }
        let Ok((zone, _warnings)) = b.build() else {
            eprintln!("fuzz body: skipping {}: zone checks failed", path.display());
            continue;
        };
        set.insert(Arc::new(zone));
    }
    set
}

/// Output buffers reused across inputs.
#[derive(Debug)]
pub struct Scratch {
    out: Vec<u8>,
    again: Vec<u8>,
}

impl Scratch {
    /// Buffers of 65535 octets (the TCP maximum).
    pub fn new() -> Scratch {
        Scratch {
            out: vec![0; 65535],
            again: vec![0; 65535],
        }
    }
}

/// Runs `answer` on `data` over both transports and checks the invariants;
/// returns the UDP answer's header rcode (None when dropped).
pub fn check(zones: &ZoneSet, data: &[u8], s: &mut Scratch) -> Result<Option<u8>, String> {
    let settings = settings();
    let mut udp_rcode = None;
    for transport in [Transport::Udp, Transport::Tcp] {
        let n = answer(zones, data, &mut s.out, transport, &settings).len;
        if n == 0 {
            continue;
        }
        check_response(data, &s.out, n, transport, &settings)?;
        let m = answer(zones, data, &mut s.again, transport, &settings).len;
        if s.again[..m] != s.out[..n] {
            return Err(format!("{transport:?}: a second run gave other bytes"));
        }
        if transport == Transport::Udp {
            udp_rcode = Some(s.out[3] & 15);
        }
    }
    Ok(udp_rcode)
}

/// Skips a (possibly compressed) name; pointers must point backwards.
fn skip_name(m: &[u8], mut pos: usize) -> Result<usize, String> {
    let start = pos;
    let mut len = 0usize;
    loop {
        let b = *m.get(pos).ok_or("name past the end")?;
        match b & 0xc0 {
            0 if b == 0 => return Ok(pos + 1),
            0 => {
                len += usize::from(b) + 1;
                if len > 254 {
                    return Err("name over 255 octets".into());
                }
                pos += usize::from(b) + 1;
            }
            0xc0 => {
                let t = (usize::from(b & 0x3f) << 8)
                    | usize::from(*m.get(pos + 1).ok_or("pointer cut")?);
                if t >= start {
                    return Err("pointer not backwards".into());
                }
                return Ok(pos + 2);
            }
            _ => return Err(format!("label type {b:#x}")),
        }
    }
}

/// Walks header, questions and records as counted; nothing may be missing or
/// left over. Returns whether an OPT record is present (at most one may be).
fn well_formed(m: &[u8]) -> Result<bool, String> {
    let count = |i: usize| usize::from(u16::from_be_bytes([m[4 + 2 * i], m[5 + 2 * i]]));
    let mut pos = 12;
    for _ in 0..count(0) {
        pos = skip_name(m, pos)? + 4;
        if pos > m.len() {
            return Err("question cut".into());
        }
    }
    let mut opts = 0;
    for i in 0..count(1) + count(2) + count(3) {
        let owner_at = pos;
        pos = skip_name(m, pos)?;
        if pos + 10 > m.len() {
            return Err("record header cut".into());
        }
        if m[pos] == 0 && m[pos + 1] == 41 {
            opts += 1;
            if i < count(1) + count(2) || opts > 1 || pos - owner_at != 1 {
                return Err("OPT misplaced, repeated or not owned by the root".into());
            }
        }
        let rdlen = usize::from(u16::from_be_bytes([m[pos + 8], m[pos + 9]]));
        pos += 10 + rdlen;
        if pos > m.len() {
            return Err("RDATA cut".into());
        }
    }
    if pos != m.len() {
        return Err(format!("{} octets after the last record", m.len() - pos));
    }
    Ok(opts == 1)
}
