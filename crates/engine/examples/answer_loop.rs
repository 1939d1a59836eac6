//! Answers N queries of one kind over the benchmark ENUM zone (100,000 NAPTR
//! records, see `benches/common/mod.rs`), for instruction counts:
//!
//! ```text
//! answer_loop <existing|nxdomain|outside> <N> [edns|dnssec]
//! ```
//!
//! `dnssec`: the zone signed with NSEC3 (`load_signed_zones`) and queries
//! with the DO bit, so NXDOMAIN answers carry the NSEC3 proof.
//!
//! The setup (zone and all 100,000 queries of the kind) is the same whatever
//! N is, so under `valgrind --tool=callgrind` the difference between N and 0
//! divided by N is the cost of one `answer()` call. `scripts/instructions.sh`
//! does that for each kind.

use std::hint::black_box;
use std::process::ExitCode;

use lode_engine::{answer, Settings, Transport};

#[allow(dead_code)] // shared with benches/answer.rs, which uses the rest
#[path = "../benches/common/mod.rs"]
mod common;
use common::Kind;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kind = args.first().and_then(|k| Kind::parse(k));
    let count = args.get(1).and_then(|n| n.parse::<u64>().ok());
    let mode = match args.get(2).map(String::as_str) {
        None => Some(""),
        Some("edns") => Some(", edns"),
        Some("dnssec") => Some(", dnssec"),
        Some(_) => None,
    };
    let (Some(kind), Some(count), Some(mode), true) = (kind, count, mode, args.len() <= 3) else {
        eprintln!("usage: answer_loop <existing|nxdomain|outside> <N> [edns|dnssec]");
        return ExitCode::from(2);
    };
    let (zones, queries) = if mode == ", dnssec" {
        (common::load_signed_zones(), common::dnssec_queries(kind))
    } else {
        (
            common::load_zones(),
            common::queries(kind, mode == ", edns"),
        )
    };
    let settings = Settings::default();
    let mut out = vec![0u8; 65535];
    let (mut answered, mut expected) = (0u64, 0u64);
    for i in 0..count {
        let q = &queries[(i % queries.len() as u64) as usize];
        let n = answer(&zones, black_box(q), &mut out, Transport::Udp, &settings).len;
        answered += u64::from(n > 0);
        expected += u64::from(common::rcode(&out[..n]) == Some(kind.expected_rcode()));
    }
    println!(
        "{} queries ({}{mode}): {answered} answered, {expected} with the expected rcode",
        count,
        kind.label(),
    );
    if expected == count {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
