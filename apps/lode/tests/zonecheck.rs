//! `lode check`: good zone files pass with exit status 0; broken ones fail
//! with a message that names the file and the offending line; and every
//! file's verdict is that of the zone checkers operators know: refused when
//! Knot DNS's kzonecheck or BIND's named-checkzone refuses it, accepted when
//! both accept it, but for the differences listed with their reasons in
//! tests/zonecheck/accepted.txt (both checkers are run on each file).
//!
//! Files: tests/zonecheck/{good,bad}/*.zone (origin `example.com.`), and
//! for the checkers' verdicts every zone of the differential suite too.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

fn check(file: &Path, origin: &str) -> (bool, String) {
    check_with(file, origin, &[])
}

/// `lode check FILE --origin ORIGIN` with `env` set.
fn check_with(file: &Path, origin: &str, env: &[(&str, &str)]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .arg("check")
        .arg(file)
        .arg("--origin")
        .arg(origin)
        .envs(env.iter().copied())
        .output()
        .expect("run lode check");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn zone_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "zone"))
        .collect();
    v.sort();
    v
}

#[test]
fn good_zones_pass() {
    let mut failures = Vec::new();
    // (The differential suite's zones are judged as the checkers judge
    // them: see verdicts_match_kzonecheck_and_named_checkzone.)
    let files: Vec<(std::path::PathBuf, String)> =
        zone_files(&repo_root().join("tests/zonecheck/good"))
            .into_iter()
            .map(|p| (p, "example.com.".to_string()))
            .collect();
    assert!(files.len() > 5);
    for (file, origin) in &files {
        let (ok, text) = check(file, origin);
        if !ok {
            failures.push(format!("{} ({origin}) rejected:\n{text}", file.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The differences of tests/zonecheck/accepted.txt: file (relative to
/// tests/zonecheck) → whether `lode check` accepts it.
fn accepted_differences() -> Vec<(String, bool)> {
    let path = repo_root().join("tests/zonecheck/accepted.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut f = l.split_whitespace();
            let file = f.next().unwrap_or_default().to_owned();
            let verdict = match f.next() {
                Some("accepts") => true,
                Some("refuses") => false,
                other => panic!("accepted.txt: {l:?}: expected accepts or refuses, got {other:?}"),
            };
            assert!(f.next().is_some(), "accepted.txt: {l:?} gives no reason");
            (file, verdict)
        })
        .collect()
}

/// Whether `program args… file` exits 0, and what it printed.
fn tool_verdict(program: &str, args: &[&str], file: &Path) -> Option<(bool, String)> {
    let out = Command::new(program).args(args).arg(file).output().ok()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some((out.status.success(), text))
}

/// Every file of tests/zonecheck gets the checkers' verdict (refused when
/// either refuses), but for the listed differences, which must still be
/// differences.
#[test]
fn verdicts_match_kzonecheck_and_named_checkzone() {
    let root = repo_root().join("tests/zonecheck");
    let missing: Vec<&str> = ["kzonecheck", "named-checkzone"]
        .into_iter()
        .filter(|p| Command::new(p).arg("-h").output().is_err())
        .collect();
    if !missing.is_empty() {
        let msg = format!("missing: {}", missing.join(", "));
        if std::env::var("LODE_REQUIRE_DNSSEC_TOOLS").as_deref() == Ok("1") {
            panic!("{msg} but LODE_REQUIRE_DNSSEC_TOOLS=1");
        }
        eprintln!("SKIP verdicts_match_kzonecheck_and_named_checkzone: {msg}");
        return;
    }
    let accepted = accepted_differences();
    let mut failures = Vec::new();
    let mut counted = 0;
    let mut files: Vec<(String, std::path::PathBuf, String)> = Vec::new();
    for dir in ["bad", "good"] {
        for file in zone_files(&root.join(dir)) {
            let rel = format!(
                "{dir}/{}",
                file.file_name().unwrap_or_default().to_string_lossy()
            );
            files.push((rel, file, "example.com.".into()));
        }
    }
    // The differential suite's zones, which Knot DNS serves: some hold
    // data BIND refuses on purpose (their differences are listed too).
    for z in zones_in(&repo_root().join("tests/differential/zones")) {
        let rel = format!(
            "differential/{}",
            z.file.file_name().unwrap_or_default().to_string_lossy()
        );
        files.push((rel, z.file, z.origin));
    }
    for (rel, file, origin) in &files {
        let (file, origin) = (file.as_path(), origin.as_str());
        let (knot, knot_text) =
            tool_verdict("kzonecheck", &["-o", origin], file).expect("run kzonecheck");
        let (bind, bind_text) =
            tool_verdict("named-checkzone", &[origin], file).expect("run named-checkzone");
        let (lode, lode_text) = check(file, origin);
        let checkers = knot && bind;
        let listed = accepted.iter().find(|(f, _)| f == rel).map(|(_, v)| *v);
        let want = listed.unwrap_or(checkers);
        counted += 1;
        if listed.is_some() && want == checkers {
            failures.push(format!(
                "{rel}: listed in accepted.txt, but the checkers now agree with Lode; remove the line"
            ));
        } else if lode != want {
            failures.push(format!(
                "{rel}: lode check {} it; kzonecheck {}, named-checkzone {}\n\
                 --- lode check:\n{lode_text}--- kzonecheck:\n{knot_text}--- named-checkzone:\n{bind_text}",
                if lode { "accepts" } else { "refuses" },
                if knot { "accepts" } else { "refuses" },
                if bind { "accepts" } else { "refuses" },
            ));
        }
    }
    eprintln!("{counted} zone files checked by lode check, kzonecheck and named-checkzone");
    assert!(counted >= 60, "the corpus shrank to {counted} files");
    for (f, _) in &accepted {
        assert!(
            files.iter().any(|(rel, _, _)| rel == f),
            "accepted.txt names {f}, which is not there"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A file that cannot be read is named without a line (it used to read
/// `FILE:0`).
#[test]
fn a_missing_file_is_named_alone() {
    let file = repo_root().join("tests/zonecheck/no-such-file.zone");
    let (ok, text) = check(&file, "example.com.");
    assert!(!ok, "{text}");
    assert!(
        text.contains("no-such-file.zone: cannot read") && !text.contains(".zone:0"),
        "{text}"
    );
}

#[test]
fn bad_zones_fail_with_file_and_line() {
    let accepted = accepted_differences();
    let files: Vec<_> = zone_files(&repo_root().join("tests/zonecheck/bad"))
        .into_iter()
        .filter(|f| {
            let name = f.file_name().unwrap_or_default().to_string_lossy();
            !accepted.iter().any(|(a, _)| *a == format!("bad/{name}"))
        })
        .collect();
    assert!(files.len() >= 6);
    let mut failures = Vec::new();
    for file in &files {
        let content = std::fs::read_to_string(file).expect("read zone");
        let marked: Vec<usize> = content
            .lines()
            .enumerate()
            .filter(|(_, l)| l.contains("; ERROR"))
            .map(|(i, _)| i + 1)
            .collect();
        let (ok, text) = check(file, "example.com.");
        let name = file
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if ok {
            failures.push(format!("{name}: accepted (exit 0):\n{text}"));
            continue;
        }
        if !text.contains(&name) {
            failures.push(format!(
                "{name}: the message does not name the file:\n{text}"
            ));
            continue;
        }
        if !marked.is_empty() && !marked.iter().any(|l| text.contains(&format!("{name}:{l}"))) {
            failures.push(format!(
                "{name}: the message names none of lines {marked:?} as `{name}:LINE`:\n{text}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A file whose `$ORIGIN` names another zone than the one checked fails,
/// and the output says which origin the file sets and how to check it so.
#[test]
fn a_disagreeing_origin_is_pointed_out() {
    let dir = TempDir::new("zonecheck-origin");
    let file = dir.0.join("example.test.zone");
    std::fs::write(
        &file,
        "$ORIGIN other.test.\n$TTL 300\n@ SOA ns1 host 1 3600 900 604800 300\n@ NS ns1\nns1 A 192.0.2.1\n",
    )
    .unwrap();
    let (ok, text) = check(&file, "example.test.");
    assert!(!ok, "{text}");
    assert!(
        text.contains("sets $ORIGIN other.test.") && text.contains("--origin other.test."),
        "{text}"
    );
    let (ok, text) = check(&file, "other.test.");
    assert!(ok, "{text}");
    assert!(!text.contains("hint:"), "{text}");
}

fn check_config(config: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .arg("check")
        .arg("--config")
        .arg(config)
        .output()
        .expect("run lode check --config");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// `lode check --config`: the packaged configuration passes (it tells the
/// operator to run exactly this); a configuration's zone files are checked
/// with their configured origins; an unknown key and a broken zone file are
/// refused with file:line.
#[test]
fn a_whole_configuration_is_checked() {
    let (code, text) = check_config(&repo_root().join("apps/lode/debian/lode.toml"));
    assert_eq!(code, 0, "packaged configuration refused:\n{text}");
    assert!(text.contains("configuration OK"), "{text}");

    let dir = std::env::temp_dir().join(format!("lode-check-config-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // The origin comes from the configuration, not the file name.
    let zone = dir.join("zone.txt");
    std::fs::write(
        &zone,
        "$TTL 300\n@ SOA ns hm 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n",
    )
    .unwrap();
    let config = dir.join("lode.toml");
    std::fs::write(
        &config,
        "listen = [\"127.0.0.1:53\"]\n[[zone]]\nname = \"example.net.\"\nfile = \"zone.txt\"\n",
    )
    .unwrap();
    let (code, text) = check_config(&config);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("zone example.net. OK"), "{text}");

    std::fs::write(
        &zone,
        "$TTL 300\n@ SOA ns hm 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\nbad A 1.2.3\n",
    )
    .unwrap();
    let (code, text) = check_config(&config);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("zone.txt:5:"), "{text}");

    // A key secret that is not base64: refused by the check, and by serve
    // before it reads a zone (it used to load every zone, then exit 1).
    std::fs::write(
        &zone,
        "$TTL 300\n@ SOA ns hm 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n",
    )
    .unwrap();
    std::fs::write(
        &config,
        "listen = [\"127.0.0.1:0\"]\ncontrol = \"\"\n\
         [[key]]\nid = \"k1\"\nalgorithm = \"hmac-sha256\"\nsecret = \"not base64!!\"\n\
         [[zone]]\nname = \"example.net.\"\nfile = \"zone.txt\"\n",
    )
    .unwrap();
    let (code, text) = check_config(&config);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("key k1"), "{text}");
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["serve", "--workers", "1", "--config"])
        .arg(&config)
        .output()
        .expect("run lode serve");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("key k1"), "{text}");
    assert!(
        !text.contains("example.net"),
        "a zone was loaded first:\n{text}"
    );

    std::fs::write(&config, "listen = [\"127.0.0.1:53\"]\nbogus = 1\n").unwrap();
    let (code, text) = check_config(&config);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("line 2") && text.contains("bogus"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `lode check`'s report with the records held (`LODE_ZONE_RUNS=off`) or
/// sorted in runs of `budget` bytes, but for its timings.
fn report(file: &Path, origin: &str, budget: &str) -> (bool, String) {
    let (ok, text) = check_with(file, origin, &[("LODE_ZONE_RUNS", budget)]);
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("time "))
        .collect();
    (ok, kept.join("\n"))
}

/// Records sorted in runs of a few records each, written and merged, give
/// the report of records held and sorted at once (the same problems, in the
/// same order, with the same file:line), for every file of the corpora and
/// a zone whose records, shuffled, come from `$INCLUDE`d files.
#[test]
fn sorted_runs_report_what_held_records_report() {
    let root = repo_root();
    let mut files: Vec<(std::path::PathBuf, String)> = Vec::new();
    for dir in ["tests/zonecheck/bad", "tests/zonecheck/good"] {
        for file in zone_files(&root.join(dir)) {
            files.push((file, "example.com.".into()));
        }
    }
    for z in zones_in(&root.join("tests/differential/zones")) {
        files.push((z.file, z.origin));
    }
    files.push((
        root.join("crates/zonefile/tests/data/reference.zone"),
        "example.com.".into(),
    ));
    let dir = std::env::temp_dir().join(format!("lode-zonecheck-runs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let included = [
        "www 300 IN A 192.0.2.1\nsub 300 IN NS ns.sub\nalias 300 IN CNAME www\nalias 300 IN A 192.0.2.9\n",
        "b 300 IN NS ns.elsewhere.b\nwww 60 IN A 192.0.2.2\n* 300 IN TXT \"w\"\nns.sub 300 IN A 192.0.2.3\n",
        "out.example.org. 300 IN A 192.0.2.4\nwww 300 IN A 192.0.2.1\nd 300 IN DNAME x.example.org.\n",
        "below.d 300 IN A 192.0.2.5\nsub 300 IN NS ns2.sub\nc 300 IN NS ns.c.example.org.\n",
    ];
    let mut main = String::from(
        "$ORIGIN example.com.\n$TTL 300\n\
         @ IN SOA ns hostmaster 1 3600 600 86400 300\n@ IN NS ns\n",
    );
    for (i, text) in included.iter().enumerate() {
        let name = format!("part{i}.inc");
        std::fs::write(dir.join(&name), text).unwrap();
        main += &format!("$INCLUDE {name}\nz{i} IN TXT \"{i}\"\n");
    }
    main += "ns IN A 192.0.2.53\n";
    std::fs::write(dir.join("main.zone"), &main).unwrap();
    // Without the errors too: a zone that is served.
    std::fs::write(
        dir.join("good.inc"),
        "sub 300 IN NS ns.sub\nwww 60 IN A 192.0.2.2\nout.example.org. 300 IN A 192.0.2.4\n\
         * 300 IN TXT \"w\"\nns.sub 300 IN A 192.0.2.3\nwww 300 IN A 192.0.2.1\n",
    )
    .unwrap();
    let good = main
        .split("$INCLUDE")
        .next()
        .unwrap_or_default()
        .to_string()
        + "$INCLUDE good.inc\nns IN A 192.0.2.53\n";
    std::fs::write(dir.join("good.zone"), good).unwrap();
    for f in ["main.zone", "good.zone"] {
        files.push((dir.join(f), "example.com.".into()));
    }
    let mut failures = Vec::new();
    for (file, origin) in &files {
        let held = report(file, origin, "off");
        let sorted = report(file, origin, "100");
        if held != sorted {
            failures.push(format!(
                "{}:\n--- held:\n{}\n--- sorted:\n{}",
                file.display(),
                held.1,
                sorted.1
            ));
        }
    }
    let (ok, text) = report(&dir.join("main.zone"), "example.com.", "100");
    let (good_ok, _) = report(&dir.join("good.zone"), "example.com.", "100");
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(
        !ok && text.contains("part0.inc:4") && text.contains("part3.inc:1"),
        "{text}"
    );
    assert!(good_ok);
    assert!(files.len() > 60);
}
