//! `lode bench …` and `lode gen …` hand over to the lode-bench binary
//! (src/handover.rs), and the server's manual pages leave the measuring tools out.
//!
//! The hand-over is tested with a stand-in lode-bench (a script that prints its
//! arguments) beside a hard link of the lode under test, so that it needs no
//! build of lode-bench; without one, lode says where the tools are.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh folder under the target's temp dir (the same file system as the
/// binary, for the hard link).
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("handover-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// `lode` in `dir`: a hard link (its current_exe() is then in `dir`), else a copy.
fn lode_in(dir: &Path) -> PathBuf {
    let lode = dir.join("lode");
    if fs::hard_link(env!("CARGO_BIN_EXE_lode"), &lode).is_err() {
        fs::copy(env!("CARGO_BIN_EXE_lode"), &lode).expect("copy of lode");
    }
    lode
}

/// Runs `lode ARGS` with PATH set to `path` only.
fn run(lode: &Path, path: &Path, args: &[&str]) -> Output {
    let mut tries = 0;
    loop {
        let out = Command::new(lode)
            .args(args)
            .env("PATH", path)
            .output()
            .expect("lode runs");
        // The stand-in was just written: a process another test forked meanwhile may
        // hold its file open for a moment (ETXTBSY); that is the test's, not lode's.
        tries += 1;
        if tries < 10 && String::from_utf8_lossy(&out.stderr).contains("Text file busy") {
            std::thread::sleep(std::time::Duration::from_millis(50));
            continue;
        }
        return out;
    }
}

#[test]
fn bench_and_gen_hand_over_to_lode_bench() {
    let dir = scratch("beside");
    let lode = lode_in(&dir);
    let empty = dir.join("empty");
    fs::create_dir_all(&empty).expect("empty dir");
    let stand_in = dir.join("lode-bench");
    fs::write(
        &stand_in,
        "#!/bin/sh\nfor a; do printf '%s\\n' \"$a\"; done\nexit 7\n",
    )
    .expect("stand-in");
    fs::set_permissions(&stand_in, fs::Permissions::from_mode(0o755)).expect("chmod");

    for (args, expect) in [
        (&["bench", "rate", "--help"][..], "rate\n--help\n"),
        (&["bench", "--help"][..], "--help\n"),
        (&["bench", "-V"][..], "-V\n"),
        (
            &["bench", "--lode", "/x/lode", "compare", "--quick"][..],
            "--lode\n/x/lode\ncompare\n--quick\n",
        ),
        (
            &["gen", "enum", "--records", "5", "--out", "a b"][..],
            "gen\nenum\n--records\n5\n--out\na b\n",
        ),
        (&["gen"][..], "gen\n"),
        (&["bench"][..], ""),
    ] {
        let out = run(&lode, &empty, args);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            expect,
            "lode {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The stand-in's own exit status: lode was replaced by it.
        assert_eq!(out.status.code(), Some(7), "lode {args:?}");
    }

    // Not beside lode but on PATH.
    let elsewhere = scratch("path");
    let lode = lode_in(&elsewhere);
    let out = run(&lode, &dir, &["bench", "rate"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "rate\n");
    let _ = fs::remove_dir_all(&dir);
    let _ = fs::remove_dir_all(&elsewhere);
}

#[test]
fn without_lode_bench_lode_says_where_the_tools_are() {
    let dir = scratch("none");
    let lode = lode_in(&dir);
    for args in [&["bench", "rate", "--help"][..], &["gen", "enum"][..]] {
        let out = run(&lode, &dir, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "lode {args:?}: {err}");
        assert!(
            err.contains("lode-bench binary")
                && err.contains("cargo build --release --bin lode-bench"),
            "lode {args:?}: {err}"
        );
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn server_manual_pages_leave_the_measuring_tools_out() {
    let dir = scratch("man");
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["man", "--out"])
        .arg(&dir)
        .output()
        .expect("lode man");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pages: Vec<String> = fs::read_dir(&dir)
        .expect("pages")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for page in ["lode.8", "lode-serve.8", "lode-update.8"] {
        assert!(pages.iter().any(|p| p == page), "{page} in {pages:?}");
    }
    assert!(
        !pages
            .iter()
            .any(|p| p.starts_with("lode-bench") || p.starts_with("lode-gen")),
        "{pages:?}"
    );
    let top = fs::read_to_string(dir.join("lode.8")).expect("lode.8");
    assert!(top.contains("/etc/lode/lode.toml") && top.contains("lode\\-bench(1)"));
    let _ = fs::remove_dir_all(&dir);
}
