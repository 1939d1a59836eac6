//! Byte-for-byte comparison with Knot DNS 3.2.6: `tests/data/golden.txt`
//! holds queries and the responses a `knotd` serving the zones of
//! `tests/data/` sent back (captured with a small script against a running
//! knotd). Every response of `answer()` must be identical, compression
//! pointers included, or the query must be dropped when Knot dropped it.

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
        let expected = words.next().unwrap();
        total += 1;
        let n = answer(&zones, &query, &mut out, transport, &settings).len;
        let got = if n == 0 {
            "DROP".to_string()
        } else {
            hex(&out[..n])
        };
        if got != expected {
            failures.push(format!(
                "{transport:?} {}\n  knot {expected}\n  lode {got}",
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
