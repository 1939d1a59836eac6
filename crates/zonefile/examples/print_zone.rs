//! Prints every record of a zone file, one per line, as `format_record` writes it.
//! Usage: `cargo run -p lode-zonefile --example print_zone -- FILE ORIGIN`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(file), Some(origin)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: print_zone FILE ORIGIN");
        return ExitCode::from(2);
    };
    let Ok(origin) = origin.parse::<lode_wire::Name>() else {
        eprintln!("bad origin");
        return ExitCode::from(2);
    };
    match lode_zonefile::parse_file(std::path::Path::new(file), &origin, None) {
        Ok(z) => {
            for r in &z.records {
                println!("{}", lode_zonefile::format_record(r));
            }
            ExitCode::SUCCESS
        }
        Err(errs) => {
            for e in errs {
                eprintln!("{e}");
            }
            ExitCode::FAILURE
        }
    }
}
