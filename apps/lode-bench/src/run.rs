//! `lode-bench run EXPERIMENT.toml`: performs an experiment file of
//! `experiments/` — every run's arguments checked by this binary's own
//! parser before anything starts, the machine's needs checked, the runs
//! performed as child `lode-bench`s within the experiment's time limit, and
//! `experiment.md`/`experiment.json` (provenance, commands, outcomes) written
//! beside the runs' own reports.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{CommandFactory, Parser};
use lode_bench::experiment::perform::{self, Performance};
use lode_bench::experiment::Experiment;

/// Arguments of `lode-bench run`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Experiment files live in experiments/ (one per published figure; \
    `lode-bench run --list experiments/*.toml` says what each measures). A run's output \
    folder defaults to results/NAME[-VARIANT]-DATE, which git ignores; it holds each run's \
    reports, progress.log and experiment.md/.json (commit, versions, machine, sysctls, \
    the exact commands)."
)]
pub(crate) struct RunArgs {
    /// The experiment files (TOML; see experiments/README.md for the format).
    #[arg(required = true, value_name = "EXPERIMENT.toml")]
    files: Vec<PathBuf>,
    /// A variant of the experiment (its [variant.NAME]); repeat to combine.
    #[arg(long = "variant", value_name = "NAME")]
    variants: Vec<String>,
    /// Output folder (default results/NAME[-VARIANT…]-DATE).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Scratch folder for data sets and servers (default: a temporary folder under
    /// /var/tmp, removed at the end).
    #[arg(long, value_name = "DIR")]
    work: Option<PathBuf>,
    /// Print the commands and the limit, check them, run nothing.
    #[arg(long)]
    dry_run: bool,
    /// Say what each file measures and which variants it has; run nothing.
    #[arg(long)]
    list: bool,
}

/// Whether `lode-bench COMMAND` (words: `gen enum`) takes `--ARG`.
fn takes(command: &str, arg: &str) -> bool {
    let mut c = crate::Cli::command();
    for word in command.split_whitespace() {
        match c.find_subcommand(word) {
            Some(sub) => c = sub.clone(),
            None => return false,
        }
    }
    let found = c.get_arguments().any(|a| a.get_id() == arg);
    found
}

/// Each step's command line through this binary's parser: an experiment
/// with a misspelt option fails here, before anything starts.
pub(crate) fn check(plan: &lode_bench::experiment::Plan) -> anyhow::Result<()> {
    for s in &plan.steps {
        let argv = std::iter::once("lode-bench".to_string()).chain(s.argv.iter().cloned());
        if let Err(e) = crate::Cli::try_parse_from(argv) {
            bail!(
                "run {}: `lode-bench {}`:\n{}",
                s.name,
                s.argv.join(" "),
                e.render()
            );
        }
    }
    Ok(())
}

/// Runs the command.
pub(crate) fn run(args: RunArgs, lode: &crate::LodeBinary) -> anyhow::Result<ExitCode> {
    if args.list {
        for f in &args.files {
            let e = Experiment::read(f)?;
            println!(
                "{}  (at most {} s)\n  {}",
                f.display(),
                e.limit.as_secs(),
                e.about.trim()
            );
            for p in &e.produces {
                println!("  produces: {p}");
            }
            for v in &e.variants {
                println!("  --variant {}: {}", v.name, v.about);
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.files.len() > 1 && args.out.is_some() {
        bail!("--out names one folder: give one experiment file with it");
    }
    let mut failed = false;
    for file in &args.files {
        let e = Experiment::read(file)?;
        let now = lode_io::clock::unix_now();
        let out = args
            .out
            .clone()
            .unwrap_or_else(|| perform::default_out(file, &args.variants, now));
        let temp = args.work.is_none();
        let work = match &args.work {
            Some(w) => w.clone(),
            None => PathBuf::from(format!("/var/tmp/lode-run.{}.{now}", std::process::id())),
        };
        let plan = e.plan(&args.variants, &out, &work, takes)?;
        check(&plan)?;
        if args.dry_run {
            println!(
                "# {} (at most {} s) into {}",
                file.display(),
                plan.limit.as_secs(),
                out.display()
            );
            for s in &plan.steps {
                println!("lode-bench {}", s.argv.join(" "));
            }
            continue;
        }
        perform::prepare(&e)?;
        let bench = std::env::current_exe().context("finding the lode-bench binary")?;
        let lode_path = lode.path().ok();
        let p = Performance {
            file,
            experiment: &e,
            variants: &args.variants,
            plan: &plan,
            out: &out,
            bench: &bench,
            lode: lode_path.as_deref(),
        };
        let ended = perform::perform(&p);
        if temp {
            let _ = std::fs::remove_dir_all(&work);
        }
        let ended = ended?;
        let ok = ended.len() == plan.steps.len() && ended.iter().all(|x| x.code == Some(0));
        eprintln!(
            "{}: {} — {}",
            file.display(),
            if ok { "done" } else { "stopped" },
            out.join("experiment.md").display()
        );
        failed |= !ok;
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
