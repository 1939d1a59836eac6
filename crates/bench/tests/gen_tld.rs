//! A generated 20,000-delegation TLD zone passes the zone checkers of Knot DNS
//! (kzonecheck), BIND (named-checkzone) and NSD (nsd-checkzone), and loads in
//! Lode with the checks of `lode check`. Each outside tool is skipped, with a
//! message, when it is not installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use lode_bench::gen::tld::{generate, TldSpec};
use lode_wire::Name;
use lode_zonedb::ZoneBuilder;

/// An installed program: on PATH or in the usual sbin directories.
fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Runs a checker; returns its combined output, failing the test if it fails.
fn run(cmd: &Path, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", cmd.display()));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{} {args:?} failed: {text}",
        cmd.display()
    );
    text
}

#[test]
fn generated_tld_zone_passes_the_checkers_and_loads_in_lode() {
    let dir = std::env::temp_dir().join(format!("lode-bench-gen-tld-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut spec = TldSpec::new("com.", 20_000);
    spec.queries = 100;
    spec.updates = 300;
    spec.threads = Some(2);
    let set = generate(&spec, &dir).expect("generate");
    let zone = set.zone_file.to_str().expect("utf-8 path").to_owned();

    match tool("kzonecheck") {
        Some(k) => {
            run(&k, &["-o", "com.", &zone]);
        }
        None => eprintln!("kzonecheck not installed: skipped"),
    }
    match tool("named-checkzone") {
        // -i local: no lookups of the providers' servers (out of zone) through the resolver.
        Some(b) => {
            let text = run(
                &b,
                &["-i", "local", "-k", "fail", "-n", "fail", "com.", &zone],
            );
            let remarks: Vec<&str> = text
                .lines()
                .filter(|l| *l != "OK" && !l.contains("loaded serial"))
                .collect();
            assert!(remarks.is_empty(), "named-checkzone remarks: {remarks:?}");
        }
        None => eprintln!("named-checkzone not installed: skipped"),
    }
    match tool("nsd-checkzone") {
        Some(n) => {
            run(&n, &["com.", &zone]);
        }
        None => eprintln!("nsd-checkzone not installed: skipped"),
    }

    // Lode: read and build as `lode check` does (strict checks), no warnings.
    let origin = Name::parse("com.", None).expect("origin");
    let parsed = lode_zonefile::parse_file(&set.zone_file, &origin, Some(3600))
        .unwrap_or_else(|e| panic!("Lode cannot read the zone: {:?}", &e[..e.len().min(5)]));
    assert_eq!(parsed.records.len() as u64, set.zone.records);
    let mut builder = ZoneBuilder::new(origin).strict();
    for (i, r) in parsed.records.into_iter().enumerate() {
        builder.add(r, i as u32);
    }
    let (_zone, warnings) = builder
        .build()
        .unwrap_or_else(|p| panic!("Lode refuses the zone: {:?}", &p[..p.len().min(5)]));
    assert!(
        warnings.is_empty(),
        "Lode warns: {:?}",
        &warnings[..warnings.len().min(5)]
    );

    // The lode binary too, when the workspace has built one.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map(Path::to_owned);
    let lode = target.and_then(|t| {
        ["release", "debug"]
            .iter()
            .map(|p| t.join(p).join("lode"))
            .find(|p| p.is_file())
    });
    match lode {
        Some(l) => {
            run(&l, &["check", &zone, "--origin", "com."]);
        }
        None => eprintln!("no lode binary built in the target directory: `lode check` skipped"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}
