//! Experiments as data: a TOML file names what a measurement needs (root,
//! packages, a time limit), the `lode-bench` runs it is made of with their
//! arguments, and named variants (`quick`, `smoke`, `all`) that change them.
//! This module reads a file and plans the runs — pure, so every experiment
//! file of the repository is checked by a test; `lode-bench run` performs
//! the plan.
//!
//! ```toml
//! about = "What it measures, in a sentence or two."
//! produces = ["BENCHMARKING.md: the figure it reproduces"]
//! limit = 2100                        # seconds for the whole experiment
//! needs = { root = true, packages = ["knot", "nsd", "dnsperf"] }
//!
//! [[run]]
//! name = "compare"                    # its sub-folder when there are several runs
//! command = "compare"                 # a lode-bench command
//! args = { servers = "echo,lode,knot", records = 500000, no-clients = true }
//! variant.quick = { runs = 1 }        # this run's arguments under --variant quick
//!
//! [variant.quick]
//! about = "One round of 1 s steps."
//! limit = 180
//! args = { step = 1 }                 # every run's arguments under --variant quick
//! ```
//!
//! An argument `key = value` becomes `--key value`; `true` a bare `--key`,
//! `false` nothing; an array a comma-separated list. A variant's argument
//! replaces the run's own of the same key.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::{Table, Value};

pub mod perform;

/// A file that is not a valid experiment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExperimentError(String);

impl fmt::Display for ExperimentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ExperimentError {}

fn err<T>(msg: impl Into<String>) -> Result<T, ExperimentError> {
    Err(ExperimentError(msg.into()))
}

/// What an experiment needs from the machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    /// Must run as root (network namespaces, pinning, sysctls).
    pub root: bool,
    /// Debian packages installed first when missing.
    pub packages: Vec<String>,
    /// No other `lode-bench` may run meanwhile (default true: two
    /// measurements on one machine spoil each other).
    pub exclusive: bool,
}

/// One `lode-bench` invocation of an experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Its name (the sub-folder of the output when there are several).
    pub name: String,
    /// The `lode-bench` command (`compare`, `attack`, `fleet`, `gen enum`, …).
    pub command: String,
    /// Its arguments, by name (TOML tables keep no order).
    pub args: Vec<(String, Value)>,
    /// This run's arguments per variant.
    pub variants: Vec<(String, Vec<(String, Value)>)>,
}

/// A named variant of the whole experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// Its name (`--variant NAME`).
    pub name: String,
    /// What it changes, for `--help`-like listings.
    pub about: String,
    /// Its time limit, replacing the experiment's.
    pub limit: Option<Duration>,
    /// Arguments for every run.
    pub args: Vec<(String, Value)>,
}

/// An experiment file, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    /// What it measures.
    pub about: String,
    /// The published figures it reproduces.
    pub produces: Vec<String>,
    /// The time limit of the whole experiment.
    pub limit: Duration,
    /// What it needs.
    pub needs: Needs,
    /// Its runs, in order.
    pub runs: Vec<Run>,
    /// Its variants.
    pub variants: Vec<Variant>,
}

/// One planned invocation: `lode-bench ARGV…` writing into `out`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The run's name.
    pub name: String,
    /// The arguments after `lode-bench` (command first).
    pub argv: Vec<String>,
    /// The run's output folder.
    pub out: PathBuf,
}

/// What `lode-bench run` performs.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The invocations, in order.
    pub steps: Vec<Step>,
    /// The limit for all of them together.
    pub limit: Duration,
}

fn string(v: &Value, what: &str) -> Result<String, ExperimentError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        _ => err(format!("{what}: a string is expected")),
    }
}

fn seconds(v: &Value, what: &str) -> Result<Duration, ExperimentError> {
    match v {
        Value::Integer(n) if *n > 0 => Ok(Duration::from_secs(*n as u64)),
        _ => err(format!("{what}: a positive number of seconds is expected")),
    }
}

fn args_of(v: Option<&Value>, what: &str) -> Result<Vec<(String, Value)>, ExperimentError> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    let Value::Table(t) = v else {
        return err(format!("{what}: a table of arguments is expected"));
    };
    t.iter()
        .map(|(k, v)| {
            render(v).map_err(|e| ExperimentError(format!("{what}.{k}: {e}")))?;
            Ok((k.clone(), v.clone()))
        })
        .collect()
}

fn only_keys(t: &Table, allowed: &[&str], what: &str) -> Result<(), ExperimentError> {
    match t.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => err(format!(
            "{what}: unknown key `{k}` (known: {})",
            allowed.join(", ")
        )),
        None => Ok(()),
    }
}

/// The command-line text of one argument value; None for `false` (no argument).
fn render(v: &Value) -> Result<Option<String>, ExperimentError> {
    Ok(Some(match v {
        Value::Boolean(false) => return Ok(None),
        Value::Boolean(true) => String::new(),
        Value::String(s) => s.clone(),
        Value::Integer(n) => n.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Array(a) => {
            let parts: Result<Vec<String>, ExperimentError> = a
                .iter()
                .map(|x| match render(x)? {
                    Some(s) if !matches!(x, Value::Boolean(_) | Value::Array(_)) => Ok(s),
                    _ => err("arrays hold strings and numbers"),
                })
                .collect();
            parts?.join(",")
        }
        _ => return err("a string, number, boolean or array is expected"),
    }))
}

impl Experiment {
    /// Reads an experiment from its TOML text.
    pub fn parse(text: &str) -> Result<Experiment, ExperimentError> {
        let t: Table = text
            .parse()
            .map_err(|e: toml::de::Error| ExperimentError(e.to_string()))?;
        only_keys(
            &t,
            &["about", "produces", "limit", "needs", "run", "variant"],
            "experiment",
        )?;
        let about = string(
            t.get("about")
                .ok_or(ExperimentError("`about` is missing".into()))?,
            "about",
        )?;
        let produces = match t.get("produces") {
            None => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| string(v, "produces"))
                .collect::<Result<_, _>>()?,
            Some(_) => return err("produces: an array of strings is expected"),
        };
        let limit = seconds(
            t.get("limit")
                .ok_or(ExperimentError("`limit` is missing".into()))?,
            "limit",
        )?;
        let mut needs = Needs {
            exclusive: true,
            ..Needs::default()
        };
        if let Some(n) = t.get("needs") {
            let Value::Table(n) = n else {
                return err("needs: a table is expected");
            };
            only_keys(n, &["root", "packages", "exclusive"], "needs")?;
            for (k, v) in n {
                match (k.as_str(), v) {
                    ("root", Value::Boolean(b)) => needs.root = *b,
                    ("exclusive", Value::Boolean(b)) => needs.exclusive = *b,
                    ("packages", Value::Array(a)) => {
                        needs.packages = a
                            .iter()
                            .map(|v| string(v, "needs.packages"))
                            .collect::<Result<_, _>>()?
                    }
                    _ => return err(format!("needs.{k}: wrong type")),
                }
            }
        }
        let Some(Value::Array(runs)) = t.get("run") else {
            return err("no [[run]]: an experiment runs lode-bench at least once");
        };
        let mut out = Vec::new();
        for (i, r) in runs.iter().enumerate() {
            let Value::Table(r) = r else {
                return err(format!("run {}: a table is expected", i + 1));
            };
            only_keys(r, &["name", "command", "args", "variant"], "run")?;
            let command = string(
                r.get("command").ok_or(ExperimentError(format!(
                    "run {}: `command` is missing",
                    i + 1
                )))?,
                "run.command",
            )?;
            if command.split_whitespace().next().is_none() {
                return err(format!("run {}: `command` is empty", i + 1));
            }
            let name = match r.get("name") {
                Some(v) => string(v, "run.name")?,
                None => command.split_whitespace().collect::<Vec<_>>().join("-"),
            };
            if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
                return err(format!("run {name:?}: a name is a plain folder name"));
            }
            if out.iter().any(|o: &Run| o.name == name) {
                return err(format!("two runs named {name:?}: name them apart"));
            }
            let what = format!("run {name}");
            let args = args_of(r.get("args"), &format!("{what}.args"))?;
            let mut variants = Vec::new();
            if let Some(v) = r.get("variant") {
                let Value::Table(v) = v else {
                    return err(format!("{what}.variant: a table is expected"));
                };
                for (vn, va) in v {
                    variants.push((
                        vn.clone(),
                        args_of(Some(va), &format!("{what}.variant.{vn}"))?,
                    ));
                }
            }
            out.push(Run {
                name,
                command,
                args,
                variants,
            });
        }
        let mut variants = Vec::new();
        if let Some(v) = t.get("variant") {
            let Value::Table(v) = v else {
                return err("variant: a table is expected");
            };
            for (name, body) in v {
                let Value::Table(b) = body else {
                    return err(format!("variant.{name}: a table is expected"));
                };
                only_keys(b, &["about", "limit", "args"], &format!("variant.{name}"))?;
                variants.push(Variant {
                    name: name.clone(),
                    about: match b.get("about") {
                        Some(a) => string(a, "variant.about")?,
                        None => String::new(),
                    },
                    limit: b
                        .get("limit")
                        .map(|l| seconds(l, "variant.limit"))
                        .transpose()?,
                    args: args_of(b.get("args"), &format!("variant.{name}.args"))?,
                });
            }
        }
        for r in &out {
            for (vn, _) in &r.variants {
                if !variants.iter().any(|v| &v.name == vn) {
                    return err(format!(
                        "run {}: variant {vn:?} is not declared ([variant.{vn}])",
                        r.name
                    ));
                }
            }
        }
        Ok(Experiment {
            about,
            produces,
            limit,
            needs,
            runs: out,
            variants,
        })
    }

    /// Reads an experiment file.
    pub fn read(path: &Path) -> Result<Experiment, ExperimentError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ExperimentError(format!("{}: {e}", path.display())))?;
        Experiment::parse(&text).map_err(|e| ExperimentError(format!("{}: {e}", path.display())))
    }

    /// The invocations under `variants` (applied in order), writing into
    /// `out` (one sub-folder per run when there are several) with scratch
    /// space under `work`. `out_arg`/`work_arg` say whether a command takes
    /// `--out`/`--work` (a question for the command-line parser).
    pub fn plan(
        &self,
        variants: &[String],
        out: &Path,
        work: &Path,
        takes: impl Fn(&str, &str) -> bool,
    ) -> Result<Plan, ExperimentError> {
        let mut limit = self.limit;
        let mut chosen = Vec::new();
        for name in variants {
            let Some(v) = self.variants.iter().find(|v| &v.name == name) else {
                let known: Vec<&str> = self.variants.iter().map(|v| v.name.as_str()).collect();
                return err(format!(
                    "no variant {name:?} (this experiment has: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ));
            };
            if let Some(l) = v.limit {
                limit = l;
            }
            chosen.push(v);
        }
        let several = self.runs.len() > 1;
        let mut steps = Vec::new();
        for r in &self.runs {
            let mut args = r.args.clone();
            let mut set = |more: &[(String, Value)]| {
                for (k, v) in more {
                    match args.iter_mut().find(|(a, _)| a == k) {
                        Some(slot) => slot.1 = v.clone(),
                        None => args.push((k.clone(), v.clone())),
                    }
                }
            };
            for v in &chosen {
                set(&v.args);
                if let Some((_, own)) = r.variants.iter().find(|(n, _)| n == &v.name) {
                    set(own);
                }
            }
            let run_out = if several {
                out.join(&r.name)
            } else {
                out.to_path_buf()
            };
            let mut argv: Vec<String> = r.command.split_whitespace().map(String::from).collect();
            for (k, v) in &args {
                if k == "out" || k == "work" {
                    return err(format!(
                        "run {}: `{k}` is the runner's (lode-bench run --out)",
                        r.name
                    ));
                }
                if let Some(text) = render(v)? {
                    argv.push(format!("--{k}"));
                    if !matches!(v, Value::Boolean(true)) {
                        argv.push(text);
                    }
                }
            }
            if takes(&r.command, "out") {
                argv.extend(["--out".to_string(), run_out.display().to_string()]);
            }
            if takes(&r.command, "work") {
                let w = if several {
                    work.join(&r.name)
                } else {
                    work.to_path_buf()
                };
                argv.extend(["--work".to_string(), w.display().to_string()]);
            }
            steps.push(Step {
                name: r.name.clone(),
                argv,
                out: run_out,
            });
        }
        Ok(Plan { steps, limit })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
about = "Peers side by side."
produces = ["BENCHMARKING.md: CPU per answer"]
limit = 2100
needs = { root = true, packages = ["knot", "nsd"] }

[[run]]
name = "a"
command = "compare"
args = { servers = ["echo", "lode"], records = 500000, no-clients = true, quiet = false }
variant.quick = { records = 1000 }

[[run]]
name = "b"
command = "fleet"
args = { rates = "10,1000" }

[variant.quick]
about = "small"
limit = 60
args = { step = 1, rates = "10" }
"#;

    fn takes(cmd: &str, arg: &str) -> bool {
        cmd == "compare" || arg == "out"
    }

    #[test]
    fn a_file_becomes_command_lines() {
        let e = Experiment::parse(FILE).unwrap();
        assert!(e.needs.root && e.needs.exclusive);
        assert_eq!(e.needs.packages, ["knot", "nsd"]);
        let p = e
            .plan(&[], Path::new("/o"), Path::new("/w"), takes)
            .unwrap();
        assert_eq!(p.limit, Duration::from_secs(2100));
        assert_eq!(
            p.steps[0].argv,
            [
                "compare",
                "--no-clients",
                "--records",
                "500000",
                "--servers",
                "echo,lode",
                "--out",
                "/o/a",
                "--work",
                "/w/a"
            ]
        );
        assert_eq!(
            p.steps[1].argv,
            ["fleet", "--rates", "10,1000", "--out", "/o/b"]
        );
    }

    #[test]
    fn a_variant_replaces_arguments_and_the_limit() {
        let e = Experiment::parse(FILE).unwrap();
        let p = e
            .plan(&["quick".into()], Path::new("/o"), Path::new("/w"), takes)
            .unwrap();
        assert_eq!(p.limit, Duration::from_secs(60));
        let a = &p.steps[0].argv;
        let at = a.iter().position(|x| x == "--records").unwrap();
        assert_eq!(a[at + 1], "1000", "the run's own variant arguments win");
        assert!(a.windows(2).any(|w| w == ["--step", "1"]));
        assert!(p.steps[1].argv.windows(2).any(|w| w == ["--rates", "10"]));
        let e2 = e.plan(&["full".into()], Path::new("/o"), Path::new("/w"), takes);
        assert!(
            e2.unwrap_err().0.contains("quick"),
            "names the variants there are"
        );
    }

    #[test]
    fn mistakes_are_named() {
        let bad = [
            ("limit = 1\n[[run]]\ncommand = \"x\"", "about"),
            ("about = \"\"\nlimit = 1", "[[run]]"),
            (
                "about = \"\"\nlimit = 1\ncolour = 1\n[[run]]\ncommand = \"x\"",
                "colour",
            ),
            ("about = \"\"\nlimit = 0\n[[run]]\ncommand = \"x\"", "limit"),
            (
                "about = \"\"\nlimit = 1\n[[run]]\ncommand = \"x\"\nvariant.q = {}",
                "not declared",
            ),
            (
                "about = \"\"\nlimit = 1\n[[run]]\ncommand = \"x\"\nargs = { a = { b = 1 } }",
                "run x.args.a",
            ),
            (
                "about = \"\"\nlimit = 1\n[[run]]\ncommand = \"x\"\n[[run]]\ncommand = \"x\"",
                "two runs",
            ),
        ];
        for (text, says) in bad {
            let e = Experiment::parse(text).unwrap_err();
            assert!(e.0.contains(says), "{text:?}: {e}");
        }
        let e = Experiment::parse(
            "about = \"\"\nlimit = 1\n[[run]]\ncommand = \"x\"\nargs = { out = \"/x\" }",
        )
        .unwrap()
        .plan(&[], Path::new("/o"), Path::new("/w"), takes);
        assert!(e.unwrap_err().0.contains("runner"));
    }
}
