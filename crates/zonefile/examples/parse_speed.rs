//! Measures parsing speed: reads a zone file into memory once, parses it
//! `ROUNDS` times and prints MB/s and records/s.
//! Usage: `cargo run --release -p lode-zonefile --example parse_speed -- FILE ORIGIN [ROUNDS]`.

use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(file), Some(origin)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: parse_speed FILE ORIGIN [ROUNDS]");
        return ExitCode::from(2);
    };
    let rounds: u32 = args.get(3).and_then(|r| r.parse().ok()).unwrap_or(3);
    let (Ok(origin), Ok(data)) = (origin.parse::<lode_wire::Name>(), std::fs::read(file)) else {
        eprintln!("bad origin or unreadable file");
        return ExitCode::from(2);
    };
    for _ in 0..rounds {
        let t = Instant::now();
        match lode_zonefile::parse_bytes(&data, file, &origin, None) {
            Ok(z) => {
                let s = t.elapsed().as_secs_f64();
                println!(
                    "{} records, {:.3} s, {:.0} MB/s, {:.2} M records/s",
                    z.records.len(),
                    s,
                    data.len() as f64 / s / 1e6,
                    z.records.len() as f64 / s / 1e6
                );
            }
            Err(e) => {
                eprintln!("{} errors, first: {}", e.len(), e[0]);
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
