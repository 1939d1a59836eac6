//! The queries of the differential suite (tests/differential/queries.txt):
//! one query per line, QNAME QTYPE [CLASS] [+OPTION …], read into
//! [`Case`]s (apps/lode/tests/differential.rs compares Knot's and Lode's
//! answers to them; tests/xdp.rs sends them over XDP and over the sockets).

use super::compare::Case;
use super::*;

/// Every case of queries.txt (only those whose line holds
/// `LODE_DIFF_FILTER`, when it is set).
pub fn load_cases() -> Vec<Case> {
    let path = repo_root().join("tests/differential/queries.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let filter = std::env::var("LODE_DIFF_FILTER").ok();
    let mut cases = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(f) = &filter {
            if !line.contains(f.as_str()) {
                continue;
            }
        }
        let id = ((i + 1) as u16).wrapping_mul(7919);
        match Case::parse(line, format!("queries.txt:{}", i + 1), id) {
            Ok(c) => cases.push(c),
            Err(e) => errors.push(format!("queries.txt:{}: {e}", i + 1)),
        }
    }
    assert!(errors.is_empty(), "bad query lines:\n{}", errors.join("\n"));
    cases
}
