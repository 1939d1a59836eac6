//! The experiment files of `experiments/` and `lode-bench run`: every file
//! is read and planned under each of its variants and its command lines
//! pass `lode-bench`'s own parser (a misspelt option fails here, not after
//! an hour of measuring); a small experiment is performed for real, and one
//! that outlives its limit is stopped and recorded as stopped.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use lode_bench::experiment::Experiment;

fn lode_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lode-bench"))
        .args(args)
        .output()
        .expect("lode-bench runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("lode-bench-exp-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch");
    dir
}

fn experiments() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
    let mut v: Vec<PathBuf> = fs::read_dir(&dir)
        .expect("experiments/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_experiment_and_variant_plans_to_command_lines_lode_bench_accepts() {
    let files = experiments();
    assert!(files.len() >= 4, "experiments/: {files:?}");
    let readme = fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/README.md"),
    )
    .expect("experiments/README.md");
    for f in &files {
        let e = Experiment::read(f).unwrap_or_else(|err| panic!("{err}"));
        assert!(
            !e.about.trim().is_empty() && !e.produces.is_empty(),
            "{}",
            f.display()
        );
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            readme.contains(&format!("]({name})")),
            "experiments/README.md lists {name}"
        );
        let mut variants: Vec<Vec<String>> = vec![vec![]];
        variants.extend(e.variants.iter().map(|v| vec![v.name.clone()]));
        for v in variants {
            let mut args = vec!["run", "--dry-run", f.to_str().unwrap()];
            for name in &v {
                args.extend(["--variant", name.as_str()]);
            }
            let out = lode_bench(&args);
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{args:?}: {}{}",
                text,
                String::from_utf8_lossy(&out.stderr)
            );
            let commands = text
                .lines()
                .filter(|l| l.starts_with("lode-bench "))
                .count();
            assert_eq!(commands, e.runs.len(), "{args:?}: {text}");
        }
    }
}

#[test]
fn a_misspelt_option_is_refused_before_anything_runs() {
    let dir = scratch("misspelt");
    let f = dir.join("bad.toml");
    fs::write(
        &f,
        "about = \"x\"\nproduces = [\"nothing\"]\nlimit = 60\nneeds = { exclusive = false }\n\
         [[run]]\ncommand = \"compare\"\nargs = { servres = \"lode\" }\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let out = lode_bench(&[
        "run",
        f.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--servres"), "{err}");
    assert!(!out_dir.exists(), "nothing ran, nothing was written");
    let unknown = lode_bench(&["run", "--dry-run", f.to_str().unwrap(), "--variant", "fast"]);
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no variant \"fast\""));
}

#[test]
fn an_experiment_runs_and_records_what_ran() {
    let dir = scratch("runs");
    let f = dir.join("tiny.toml");
    fs::write(
        &f,
        "about = \"A tiny ENUM set, twice.\"\nproduces = [\"nothing\"]\nlimit = 120\n\
         needs = { exclusive = false }\n\
         [[run]]\nname = \"one\"\ncommand = \"gen enum\"\nargs = { records = 1000, zones = 1 }\n\
         [[run]]\nname = \"two\"\ncommand = \"gen enum\"\nargs = { records = 2000, zones = 2 }\n\
         variant.small = { records = 500 }\n\
         [variant.small]\nabout = \"fewer\"\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let out = lode_bench(&[
        "run",
        f.to_str().unwrap(),
        "--variant",
        "small",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each run wrote its data set into its own folder.
    let one = fs::read_to_string(out_dir.join("one/queries-existing.txt")).expect("run one");
    let two = fs::read_to_string(out_dir.join("two/queries-existing.txt")).expect("run two");
    assert_eq!(one.lines().count(), 1000);
    assert_eq!(
        two.lines().count(),
        500,
        "the variant's argument replaced the run's"
    );
    let j: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out_dir.join("experiment.json")).unwrap())
            .unwrap();
    assert_eq!(j["complete"], true);
    assert_eq!(j["runs"][1]["command"][1], "gen");
    assert_eq!(j["runs"][1]["exit_code"], 0);
    assert!(j["provenance"]["kernel"].is_string(), "{}", j["provenance"]);
    assert!(j["experiment"]["text"]
        .as_str()
        .unwrap()
        .contains("A tiny ENUM set"));
    let md = fs::read_to_string(out_dir.join("experiment.md")).unwrap();
    assert!(md.contains("--variant small"), "{md}");
}

#[test]
fn a_run_past_the_limit_is_stopped_and_recorded_as_stopped() {
    let dir = scratch("limit");
    let f = dir.join("slow.toml");
    fs::write(
        &f,
        "about = \"An echo server that would run for a minute.\"\nproduces = [\"nothing\"]\n\
         limit = 2\nneeds = { exclusive = false }\n\
         [[run]]\ncommand = \"echo\"\nargs = { listen = \"127.0.0.1:0\", duration = 60 }\n\
         [[run]]\nname = \"after\"\ncommand = \"gen enum\"\nargs = { records = 10, zones = 1 }\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let started = std::time::Instant::now();
    let out = lode_bench(&[
        "run",
        f.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(!out.status.success(), "a stopped experiment is a failure");
    assert!(
        started.elapsed().as_secs() < 40,
        "stopped at its limit, not after the minute"
    );
    let j: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out_dir.join("experiment.json")).unwrap())
            .unwrap();
    assert_eq!(j["complete"], false);
    assert_eq!(j["runs"][0]["timed_out"], true);
    assert_eq!(
        j["runs"].as_array().unwrap().len(),
        1,
        "nothing runs after a stopped run"
    );
    let md = fs::read_to_string(out_dir.join("experiment.md")).unwrap();
    assert!(
        md.contains("stopped at the time limit") && md.contains("not run"),
        "{md}"
    );
}
