//! A started server: its process, directory and log; readiness, sampling
//! and the stop by PID.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::{conf, probe, sample, Error, Kind, Ready, Role, Sample, Spec};

/// `name` from PATH, else from /usr/sbin or /sbin (not on every user's PATH).
pub fn program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// How to run a configured server: its command line, configuration file
/// and own log file.
#[derive(Clone, Debug)]
pub(crate) struct Launch {
    /// Arguments after the program.
    pub args: Vec<OsString>,
    /// The file it logs to besides its stdout and stderr, if any.
    pub log: Option<PathBuf>,
    /// Its configuration file.
    pub conf: PathBuf,
}

/// A server process the harness started; stopped by its PID (SIGTERM, then
/// SIGKILL after 5 s) when dropped, its temporary directory removed.
#[derive(Debug)]
pub struct Server {
    spec: Spec,
    label: String,
    addr: SocketAddr,
    program: PathBuf,
    launch: Launch,
    dir: PathBuf,
    /// Where its stdout and stderr go.
    stdio: PathBuf,
    temporary: bool,
    child: Child,
    /// When the process was started.
    started: Instant,
    /// Set once reaped: its PID may belong to another process then.
    stopped: bool,
}

static NEXT_DIR: AtomicU32 = AtomicU32::new(0);

/// A fresh directory under the system's temporary one.
fn temp_dir(kind: Kind) -> Result<PathBuf, Error> {
    let n = NEXT_DIR.fetch_add(1, Ordering::SeqCst);
    let p = std::env::temp_dir().join(format!("lode-peers-{kind}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).map_err(|e| Error::Io(format!("mkdir {}: {e}", p.display())))?;
    Ok(p)
}

impl Server {
    /// Writes `spec`'s configuration, starts the server and waits until it
    /// is ready ([`Spec::ready`], at most [`Spec::ready_timeout`]).
    pub fn start(spec: &Spec) -> Result<Server, Error> {
        let program = match (&spec.program, spec.kind) {
            (Some(p), _) => p.clone(),
            (None, Kind::Lode | Kind::Program) => {
                return Err(Error::Config(format!(
                    "{} needs Spec::program (its binary)",
                    spec.label()
                )))
            }
            (None, kind) => program(kind.program()).ok_or_else(|| Error::NotInstalled {
                program: kind.program().into(),
                package: kind.package().into(),
            })?,
        };
        let (dir, temporary) = match &spec.dir {
            Some(d) => {
                std::fs::create_dir_all(d)
                    .map_err(|e| Error::Io(format!("mkdir {}: {e}", d.display())))?;
                (d.clone(), false)
            }
            None => (temp_dir(spec.kind)?, true),
        };
        let launch = match conf::write(spec, &dir) {
            Ok(l) => l,
            Err(e) => {
                if temporary {
                    let _ = std::fs::remove_dir_all(&dir);
                }
                return Err(e);
            }
        };
        let stdio = spec.stdio.clone().unwrap_or_else(|| dir.join("stdio.log"));
        let child = spawn(spec, &program, &launch, &dir, &stdio)?;
        let mut server = Server {
            label: spec.label(),
            addr: SocketAddr::new(spec.addresses[0], spec.port),
            spec: spec.clone(),
            program,
            launch,
            dir,
            stdio,
            temporary,
            child,
            started: Instant::now(),
            stopped: false,
        };
        server.wait_ready()?;
        Ok(server)
    }

    /// Stops it (if running) and starts the same program on the same
    /// directory and configuration again (its state as it was left; its
    /// stdout and stderr log starts afresh), then waits until it is ready.
    pub fn restart(&mut self) -> Result<(), Error> {
        self.stop();
        self.child = spawn(
            &self.spec,
            &self.program,
            &self.launch,
            &self.dir,
            &self.stdio,
        )?;
        self.started = Instant::now();
        self.stopped = false;
        self.wait_ready()
    }

    /// Polls until ready (see [`Ready`]), the process exits, or
    /// [`Spec::ready_timeout`] since the start passes.
    pub fn wait_ready(&mut self) -> Result<(), Error> {
        let zones = &self.spec.zones;
        // Each zone's name, and whether it must be loaded (not just answered).
        let mut pending: Vec<(String, bool)> = match self.spec.ready {
            Ready::Started => return Ok(()),
            Ready::Answering if zones.is_empty() => vec![(".".into(), false)],
            Ready::Answering => zones.iter().map(|z| (z.name.clone(), false)).collect(),
            Ready::Zones => zones
                .iter()
                .map(|z| (z.name.clone(), matches!(z.role, Role::Primary(_))))
                .collect(),
        };
        let names = |p: &[(String, bool)]| {
            let v: Vec<&str> = p.iter().map(|(z, _)| z.as_str()).collect();
            v.join(" ")
        };
        let what = names(&pending);
        let addrs: Vec<SocketAddr> = self
            .spec
            .addresses
            .iter()
            .map(|a| SocketAddr::new(*a, self.spec.port))
            .collect();
        let mut first = true;
        let waited = self.wait_until(&what, self.spec.ready_timeout, || {
            if !std::mem::take(&mut first) {
                std::thread::sleep(Duration::from_millis(100));
            }
            pending.retain(|(zone, loaded)| {
                !addrs.iter().all(|a| {
                    probe::soa_query(*a, zone, Duration::from_millis(300))
                        .is_some_and(|r| !loaded || r.serves_zone())
                })
            });
            pending.is_empty()
        });
        match waited {
            // Name only the zones still pending.
            Err(Error::NotReady {
                label,
                waited,
                log_tail,
                ..
            }) => Err(Error::NotReady {
                label,
                pending: names(&pending),
                waited,
                log_tail,
            }),
            other => other.map(|_| ()),
        }
    }

    /// Polls `done` until it returns true, the process exits, or `limit`
    /// since the start passes; the time from the start to readiness. `done`
    /// paces the polling itself (e.g. waits for a probe's reply); `what`
    /// names what is waited for in the error.
    pub fn wait_until(
        &mut self,
        what: &str,
        limit: Duration,
        mut done: impl FnMut() -> bool,
    ) -> Result<Duration, Error> {
        loop {
            self.check_alive()?;
            if self.started.elapsed() > limit {
                return Err(self.not_ready(what.into(), limit));
            }
            if done() {
                return Ok(self.started.elapsed());
            }
        }
    }

    /// [`Error::Exited`] once the process has exited.
    fn check_alive(&mut self) -> Result<(), Error> {
        if alive(&mut self.child) {
            Ok(())
        } else {
            Err(Error::Exited {
                label: self.label.clone(),
                log_tail: self.log_tail(30),
            })
        }
    }

    fn not_ready(&self, pending: String, waited: Duration) -> Error {
        Error::NotReady {
            label: self.label.clone(),
            pending,
            waited,
            log_tail: self.log_tail(30),
        }
    }

    /// When the process was (last) started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Its processes: the server's and those it forked (NSD's), from the
    /// parent PIDs in `/proc`.
    pub fn pids(&self) -> Vec<u32> {
        if self.stopped {
            return Vec::new();
        }
        process_tree(self.pid())
    }

    /// Its label, e.g. `knot@15300`.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Its first address (UDP and TCP).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The description it was started from.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The process ID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its directory (configuration, zone copies, state, logs; knotd's
    /// control socket `knot.sock`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        !self.stopped && alive(&mut self.child)
    }

    /// Its own log, then what it wrote on stdout and stderr.
    pub fn log(&self) -> String {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        match &self.launch.log {
            Some(log) => read(log) + &read(&self.stdio),
            None => read(&self.stdio),
        }
    }

    /// The last `n` lines of [`Server::log`].
    pub fn log_tail(&self, n: usize) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// Waits until the log holds `needle`; the log's tail in the error after `timeout`.
    pub fn wait_log(&self, needle: &str, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        while !self.log().contains(needle) {
            if Instant::now() > deadline {
                return Err(format!(
                    "{}: no {needle:?} in its log within {timeout:?}:\n{}",
                    self.label,
                    self.log_tail(20)
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// CPU time, memory, threads and open files now (None once it exited).
    pub fn sample(&mut self) -> Option<Sample> {
        if !self.alive() {
            return None;
        }
        sample::read(self.pid())
    }

    /// Runs `knotc` on this knotd's control socket; its output.
    pub fn knotc(&self, args: &[&str]) -> Result<String, String> {
        let knotc = program("knotc").ok_or("knotc is not installed (Debian package knot)")?;
        let out = Command::new(knotc)
            .arg("-s")
            .arg(self.dir.join("knot.sock"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("knotc: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            Ok(text)
        } else {
            Err(format!("knotc {args:?}: {}: {text}", out.status))
        }
    }

    /// SIGKILL (by PID) and reap: no chance to clean up.
    pub fn kill9(&mut self) {
        if !self.stopped {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.stopped = true;
        }
    }

    /// SIGTERM by PID to it and the processes it forked, SIGKILL to what
    /// is left of them after [`Spec::stop_grace`]; reaped. Dropping does the same.
    pub fn stop(&mut self) {
        if self.stopped {
            return;
        }
        if alive(&mut self.child) {
            let tree = self.pids();
            for &p in &tree {
                let _ = kill(Pid::from_raw(p as i32), Signal::SIGTERM);
            }
            let deadline = Instant::now() + self.spec.stop_grace;
            while alive(&mut self.child) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            // Forked children still there (the main process is reaped below).
            for &p in tree.iter().filter(|&&p| p != self.child.id()) {
                if Path::new(&format!("/proc/{p}")).exists() {
                    let _ = kill(Pid::from_raw(p as i32), Signal::SIGKILL);
                }
            }
        }
        self.kill9();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
        if self.temporary && std::env::var_os("LODE_KEEP_TMP").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// `pid` and all its descendants, from the parent PIDs in `/proc`.
pub fn process_tree(pid: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(ppid) = std::fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|t| sample::parent(&t))
        {
            parents.push((p, ppid));
        }
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    tree
}

/// Whether `child` still runs (not yet exited; it is reaped if it has).
fn alive(child: &mut Child) -> bool {
    matches!(child.try_wait(), Ok(None))
}

/// Starts `program` as `launch` says, in `dir`, pinned to the spec's CPUs
/// and under its [`Spec::exec_under`], its output in `stdio_path`.
fn spawn(
    spec: &Spec,
    program: &Path,
    launch: &Launch,
    dir: &Path,
    stdio_path: &Path,
) -> Result<Child, Error> {
    // Each start's output afresh (what a restarted server wrote is its own).
    let stdio = std::fs::File::create(stdio_path)
        .map_err(|e| Error::Io(format!("{}: {e}", stdio_path.display())))?;
    let stdio2 = stdio
        .try_clone()
        .map_err(|e| Error::Io(format!("{}: {e}", stdio_path.display())))?;
    // Each of these execs the next: the PID stays the server's.
    let mut line: Vec<OsString> = spec.exec_under.iter().map(OsString::from).collect();
    if !spec.cpus.is_empty() {
        let list: Vec<String> = spec.cpus.iter().map(|c| c.to_string()).collect();
        line.extend(["taskset".into(), "-c".into(), list.join(",").into()]);
    }
    line.push(program.into());
    let mut cmd = Command::new(&line[0]);
    cmd.args(&line[1..])
        .args(&launch.args)
        .args(&spec.args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(stdio)
        .stderr(stdio2)
        .spawn()
        .map_err(|e| Error::Io(format!("start {}: {e}", program.display())))
}
