//! Byte-for-byte comparison with Knot DNS 3.2.6: `tests/data/golden.txt`
//! holds queries and the responses a `knotd` serving the zones of
//! `tests/data/` sent back (captured with a small script against a running
//! knotd). Every response of `answer()` must be identical, compression
//! pointers included, or the query must be dropped when Knot dropped it —
//! but where Lode follows an RFC that Knot breaks (see [`lode_differs`]).

use std::path::Path;

mod common;
use common::load_zones;

use lode_engine::{answer, Settings, Transport};

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Where Lode answers otherwise on purpose (the differential suite lists
/// the same in tests/differential/accepted.txt): Knot's `expected` bytes
/// made into Lode's, or None when the query is judged apart (`Some(rcode)`
/// of the answer it must get instead).
fn lode_differs(query: &[u8], expected: &mut [u8]) -> Option<u16> {
    // RFC 6891 §6.1.2: an OPT owner other than the root is a FORMERR (as
    // NSD answers); Knot takes it.
    if opt_owner_not_root(query) {
        return Some(1);
    }
    // RFC 4035 §3.1.6: CD copied from the query (Knot clears it).
    if query.len() > 3 && query[3] & 0x10 != 0 && expected.len() > 3 {
        expected[3] |= 0x10;
    }
    None
}

/// Whether the query's additional section holds an OPT record whose owner
/// is not the root.
fn opt_owner_not_root(query: &[u8]) -> bool {
    let count = |i: usize| u16::from_be_bytes([query[4 + 2 * i], query[5 + 2 * i]]) as usize;
    if query.len() < 12 || count(0) != 1 || count(1) != 0 || count(2) != 0 {
        return false;
    }
    let mut name = lode_wire::NameBuf::new();
    let Ok(mut pos) = name.read_compressed(query, 12) else {
        return false;
    };
    pos += 4;
    for _ in 0..count(3) {
        let Ok(end) = name.read_compressed(query, pos) else {
            return false;
        };
        let Some(rtype) = query.get(end..end + 2) else {
            return false;
        };
        if rtype == [0, 41] && !name.as_ref().is_root() {
            return true;
        }
        let Some(rdlen) = query.get(end + 8..end + 10) else {
            return false;
        };
        pos = end + 10 + usize::from(u16::from_be_bytes([rdlen[0], rdlen[1]]));
    }
    false
}

#[test]
fn responses_match_knot_byte_for_byte() {
    let zones = load_zones();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden.txt");
    let text = std::fs::read_to_string(golden).unwrap();
    let settings = Settings::default();
    let mut out = vec![0u8; 65535];
    let (mut total, mut failures) = (0, Vec::new());
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (data, desc) = line.split_once('#').unwrap_or((line, ""));
        let mut words = data.split_whitespace();
        let transport = match words.next().unwrap() {
            "udp" => Transport::Udp,
            "tcp" => Transport::Tcp,
            t => panic!("bad transport {t}"),
        };
        let query = unhex(words.next().unwrap());
        let knot = words.next().unwrap();
        total += 1;
        let n = answer(&zones, &query, &mut out, transport, &settings).len;
        let got = if n == 0 {
            "DROP".to_string()
        } else {
            hex(&out[..n])
        };
        let mut lode = if knot == "DROP" {
            Vec::new()
        } else {
            unhex(knot)
        };
        if let Some(rcode) = lode_differs(&query, &mut lode) {
            if n < 4 || u16::from(out[3] & 0x0f) != rcode || out[..2] != query[..2] {
                failures.push(format!(
                    "{transport:?} {}: RCODE {rcode} expected\n  lode {got}",
                    desc.trim()
                ));
            }
            continue;
        }
        let expected = if knot == "DROP" {
            knot.to_string()
        } else {
            hex(&lode)
        };
        if got != expected {
            failures.push(format!(
                "{transport:?} {}\n  want {expected}\n  lode {got}",
                desc.trim()
            ));
        }
    }
    assert!(total > 150, "golden file too short: {total}");
    assert!(
        failures.is_empty(),
        "{} of {total} responses differ from Knot:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
