//! Times `answer()` alone over a zone file and a query file of any size
//! (what `lode-bench gen enum` writes), so the user-space cost of an answer
//! on a large zone — mostly memory latency there — can be measured without
//! the kernel's share:
//!
//! ```text
//! answer_file ZONEFILE ORIGIN QUERIES [PASSES] [edns]
//! cargo run --release -p lode-engine --example answer_file -- \
//!     set/6.4.6.1.e164.arpa.zone 6.4.6.1.e164.arpa. set/queries-existing.txt 3
//! ```
//!
//! QUERIES holds `name TYPE` per line (dnsperf's format). Each pass answers
//! every query once in the file's order; the time per answer of each pass
//! and the RCODEs seen are printed.

use std::hint::black_box;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use lode_engine::{answer, Settings, Transport};
use lode_wire::{Name, Rtype};
use lode_zonedb::{ZoneBuilder, ZoneSet};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 || args.len() > 5 {
        eprintln!("usage: answer_file ZONEFILE ORIGIN QUERIES [PASSES] [edns]");
        return ExitCode::from(2);
    }
    let passes: u32 = args.get(3).and_then(|p| p.parse().ok()).unwrap_or(3);
    let edns = args.get(4).map(String::as_str) == Some("edns");
    let origin: Name = match args[1].parse() {
        Ok(n) => n,
        Err(e) => {
            eprintln!("origin {}: {e:?}", args[1]);
            return ExitCode::from(2);
        }
    };
    let started = Instant::now();
    let parsed = match lode_zonefile::parse_file_counted(args[0].as_ref(), &origin, None, None) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{}: {:?}", args[0], e.first());
            return ExitCode::FAILURE;
        }
    };
    let mut b = ZoneBuilder::new(origin);
    for (i, r) in parsed.records.into_iter().enumerate() {
        b.add(r, i as u32);
    }
    let zone = match b.build() {
        Ok((z, _)) => z,
        Err(e) => {
            eprintln!("{}: {e:?}", args[0]);
            return ExitCode::FAILURE;
        }
    };
    let mut set = ZoneSet::new();
    set.insert(Arc::new(zone));
    let queries = match read_queries(&args[2], edns) {
        Ok(q) => q,
        Err(e) => {
            eprintln!("{}: {e}", args[2]);
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "zone and {} queries ready in {:.1} s",
        queries.len(),
        started.elapsed().as_secs_f64()
    );
    let settings = Settings::default();
    let mut out = vec![0u8; 65535];
    for pass in 1..=passes {
        let mut rcodes = [0u64; 16];
        let t = Instant::now();
        for q in &queries {
            let n = answer(&set, black_box(q), &mut out, Transport::Udp, &settings).len;
            if n >= 4 {
                rcodes[usize::from(out[3] & 0x0f)] += 1;
            }
        }
        let ns = t.elapsed().as_nanos() as f64 / queries.len().max(1) as f64;
        println!(
            "pass {pass}: {ns:.0} ns per answer (NOERROR {}, NXDOMAIN {}, REFUSED {}, other {})",
            rcodes[0],
            rcodes[3],
            rcodes[5],
            queries.len() as u64 - rcodes[0] - rcodes[3] - rcodes[5]
        );
    }
    ExitCode::SUCCESS
}

/// The queries of a dnsperf file as wire messages.
fn read_queries(path: &str, edns: bool) -> Result<Vec<Vec<u8>>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut parts = line.split_whitespace();
        let (Some(name), Some(rtype)) = (parts.next(), parts.next()) else {
            continue;
        };
        let name: Name = name.parse().map_err(|e| format!("line {}: {e:?}", i + 1))?;
        let rtype = Rtype::from_mnemonic(rtype).ok_or(format!("line {}: type {rtype}", i + 1))?;
        let mut q = vec![0x12, 0x34, 0x00, 0x00, 0, 1, 0, 0, 0, 0, 0, u8::from(edns)];
        q.extend_from_slice(name.as_wire());
        q.extend_from_slice(&rtype.0.to_be_bytes());
        q.extend_from_slice(&[0, 1]);
        if edns {
            q.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0]);
        }
        out.push(q);
    }
    Ok(out)
}
