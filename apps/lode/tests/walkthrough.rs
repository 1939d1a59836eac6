//! The README's first-zone walkthrough, run as written: the fenced `sh`
//! blocks between `<!-- walkthrough: begin -->` and `<!-- walkthrough:
//! end -->` make one bash script (`set -euo pipefail`), run in an empty
//! folder with the built `lode` first on PATH. A line ending in `#=> text`
//! must print `text` (its output is shown either way). Servers the script
//! starts in the background are stopped at its end (by its own `lode stop`
//! lines, else killed).
//!
//! Needs dig, nsupdate (dnsutils) and kdig (knot-dnsutils), which the
//! README's test command installs; without them it says SKIP, unless
//! `LODE_REQUIRE_KNOT=1`. Ports 5301, 5302 and 8531 on 127.0.0.1. About 5 s.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{repo_root, wait_exit, TempDir};

/// The walkthrough's blocks, as one script.
fn script(readme: &str) -> String {
    let begin = readme
        .find("<!-- walkthrough: begin -->")
        .expect("the README's walkthrough begin marker");
    let end = readme
        .find("<!-- walkthrough: end -->")
        .expect("the README's walkthrough end marker");
    let mut out =
        String::from("set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n");
    let mut in_block = false;
    for line in readme[begin..end].lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block && line.trim() == "```sh";
            continue;
        }
        if !in_block {
            continue;
        }
        match line.split_once(" #=> ") {
            Some((cmd, want)) => {
                let want = want.replace('\'', r"'\''");
                out.push_str(&format!(
                    "out=$({cmd} 2>&1); printf '%s\\n' \"$out\"\n\
                     grep -qF -- '{want}' <<<\"$out\" || {{ echo 'walkthrough: expected: {want}' >&2; exit 1; }}\n"
                ));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

fn present(program: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {program}"))
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_readme_walkthrough_runs_as_written() {
    let missing: Vec<&str> = ["dig", "nsupdate", "kdig"]
        .into_iter()
        .filter(|p| !present(p))
        .collect();
    if !missing.is_empty() {
        let msg = format!("missing: {}", missing.join(", "));
        if std::env::var("LODE_REQUIRE_KNOT").as_deref() == Ok("1") {
            panic!("{msg} but LODE_REQUIRE_KNOT=1");
        }
        eprintln!("SKIP walkthrough: {msg}");
        return;
    }
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let text = script(&readme);
    assert!(
        text.matches("#=>").count() == 0 && text.contains("lode serve"),
        "the walkthrough was not read:\n{text}"
    );
    let dir = TempDir::new("walkthrough");
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_lode"))
        .parent()
        .expect("the binary's folder")
        .to_path_buf();
    let path = format!(
        "{}:{}:/usr/sbin:/sbin",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    std::fs::write(dir.0.join("walkthrough.sh"), &text).expect("write the script");
    let started = Instant::now();
    let output = std::fs::File::create(dir.0.join("walkthrough.out")).expect("output file");
    let mut child = Command::new("bash")
        .arg("walkthrough.sh")
        .current_dir(&dir.0)
        .env("PATH", path)
        .stdout(output.try_clone().expect("output file"))
        .stderr(output)
        .spawn()
        .expect("run bash");
    let status = wait_exit(&mut child, Duration::from_secs(180));
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let log = |name: &str| std::fs::read_to_string(dir.0.join(name)).unwrap_or_default();
    let shown = log("walkthrough.out");
    assert!(
        status.is_some_and(|s| s.success()),
        "the walkthrough failed ({status:?}) after {:.1} s:\n{shown}\n--- lode.log:\n{}\n--- secondary.log:\n{}",
        started.elapsed().as_secs_f64(),
        log("lode.log"),
        log("secondary.log")
    );
    eprintln!(
        "walkthrough: {:.1} s\n{shown}",
        started.elapsed().as_secs_f64()
    );
}
