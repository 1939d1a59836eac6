//! The six servers of the XDP benchmark, each started in the server
//! namespace pinned to CPU 0 with one worker: Lode and Knot DNS over XDP
//! and over UDP sockets, NSD over UDP sockets, and the in-kernel XDP echo
//! (`lode_io::xdp::Echo`, held by `lode-bench xdp --hold-echo` there).
//! Lode, Knot and NSD go through `lode-peers`; every process is stopped by
//! its PID when dropped.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lode_peers::{Content, Kind as PeerKind, Ready, Spec, Zone};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::net::{Pair, SERVER};
use super::Server;

/// What a server needs to start.
#[derive(Debug, Clone)]
pub struct Start<'a> {
    /// The pair it serves on.
    pub pair: &'a Pair,
    /// Zones: apex and file.
    pub zones: &'a [(String, PathBuf)],
    /// The lode binary.
    pub lode: &'a Path,
    /// The lode-bench binary (the echo's holder).
    pub bench: &'a Path,
    /// Its directory.
    pub dir: PathBuf,
    /// The CPU it runs on.
    pub cpu: usize,
    /// Its nice value (0: as started).
    pub nice: i32,
    /// A name that exists, to ask until it answers.
    pub probe: String,
    /// How long loading may take.
    pub load_limit: Duration,
}

/// A started server.
#[derive(Debug)]
pub enum Running {
    /// Lode, Knot or NSD.
    Peer(Box<lode_peers::Server>),
    /// The echo's holder (the program goes when it exits), and while
    /// dnsperf or kdig ask it, a pass-through program's holder on the
    /// client's end: a veth end receives XDP_TX'd frames only while it has
    /// an XDP program (kxdpgun brings its own).
    Echo {
        /// Holds the echo on the server's end (None once stopped).
        echo: Option<Child>,
        /// Holds the pass-through program on the client's end.
        pass: Option<Child>,
        /// `ip netns exec NS lode-bench xdp --hold-pass IFACE`.
        pass_argv: Vec<String>,
    },
}

impl Running {
    /// Its PID (the process whose threads are the server's).
    pub fn pid(&self) -> u32 {
        match self {
            Running::Peer(s) => s.pid(),
            Running::Echo { echo, .. } => echo.as_ref().map_or(0, Child::id),
        }
    }

    /// For the echo: holds (`on`) or lets go of the pass-through program on
    /// the client's end; nothing for the others.
    pub fn client_pass(&mut self, on: bool) -> Result<(), String> {
        if let Running::Echo {
            pass, pass_argv, ..
        } = self
        {
            match (on, pass.take()) {
                (true, None) => *pass = Some(start_holder(pass_argv)?),
                (true, Some(p)) => *pass = Some(p),
                (false, Some(p)) => stop_holder(p),
                (false, None) => return Ok(()),
            }
            // The end's receive queues are set up anew: let them settle.
            std::thread::sleep(Duration::from_millis(500));
        }
        Ok(())
    }

    /// The end of its log, for errors.
    pub fn log_tail(&self) -> String {
        match self {
            Running::Peer(s) => s.log_tail(15),
            Running::Echo { .. } => String::new(),
        }
    }
}

/// Stops a holder: SIGTERM by its PID, SIGKILL after 5 s; reaped.
fn stop_holder(mut c: Child) {
    let _ = kill(Pid::from_raw(c.id() as i32), Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(5);
    while matches!(c.try_wait(), Ok(None)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = c.kill();
    let _ = c.wait();
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Running::Echo { echo, pass, .. } = self {
            if let Some(p) = pass.take() {
                stop_holder(p);
            }
            if let Some(e) = echo.take() {
                stop_holder(e);
            }
        }
        // A peer stops itself when dropped (SIGTERM by PID, then SIGKILL).
    }
}

/// The lode-peers description of `server` (not the echo).
pub fn spec(server: Server, s: &Start) -> Spec {
    let n = &s.pair.names;
    let kind = match server {
        Server::LodeXdp | Server::LodeUdp => PeerKind::Lode,
        Server::KnotXdp | Server::KnotUdp => PeerKind::Knot,
        _ => PeerKind::Nsd,
    };
    let mut spec = Spec::new(kind, 53);
    spec.label = Some(server.name().into());
    spec.addresses = vec![SERVER.into()];
    spec.workers = Some(1);
    spec.cpus = vec![s.cpu];
    spec.dir = Some(s.dir.clone());
    if s.nice != 0 {
        spec.exec_under = vec!["nice".into(), "-n".into(), s.nice.to_string()];
    }
    spec.exec_under
        .extend(["ip", "netns", "exec", &n.server_ns].map(String::from));
    // Its sockets are in the namespace: readiness is asked from there.
    spec.ready = Ready::Started;
    spec.ready_timeout = s.load_limit;
    for (apex, file) in s.zones {
        spec.zones
            .push(Zone::primary(apex, Content::File(file.clone())));
    }
    match server {
        Server::LodeXdp => {
            spec.program = Some(s.lode.to_owned());
            spec.server_extra = format!("listen-xdp = [\"{}@53\"]\n", n.server_if);
        }
        Server::LodeUdp => spec.program = Some(s.lode.to_owned()),
        Server::KnotXdp => {
            spec.sections = format!("xdp:\n    listen: {}@53\n    udp: on\n", n.server_if);
        }
        _ => {}
    }
    spec
}

/// Starts `server` and waits until a query from the client namespace for
/// [`Start::probe`] is answered (or the load limit passes).
pub fn start(server: Server, s: &Start) -> Result<Running, String> {
    std::fs::create_dir_all(&s.dir).map_err(|e| format!("{}: {e}", s.dir.display()))?;
    let mut running = if server == Server::EchoXdp {
        let n = &s.pair.names;
        let holder = |ns: &str, args: &[String]| {
            let mut cmd = vec![s.bench.display().to_string(), "xdp".into()];
            cmd.extend(args.iter().cloned());
            Pair::exec_in(ns, &cmd)
        };
        let echo = start_holder(&holder(
            &n.server_ns,
            &["--hold-echo".into(), format!("{}@53", n.server_if)],
        ))?;
        let mut r = Running::Echo {
            echo: Some(echo),
            pass: None,
            pass_argv: holder(&n.client_ns, &["--hold-pass".into(), n.client_if.clone()]),
        };
        r.client_pass(true)?;
        r
    } else {
        let spec = spec(server, s);
        Running::Peer(Box::new(
            lode_peers::Server::start(&spec).map_err(|e| e.to_string())?,
        ))
    };
    let deadline = Instant::now() + s.load_limit;
    loop {
        if answers(s) {
            return Ok(running);
        }
        let alive = match &mut running {
            Running::Peer(p) => p.alive(),
            Running::Echo { .. } => true,
        };
        if !alive || Instant::now() > deadline {
            return Err(format!(
                "{} did not answer {} within {:?}:\n{}",
                server.name(),
                s.probe,
                s.load_limit,
                running.log_tail()
            ));
        }
        if super::stopping() {
            return Err("interrupted".into());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Whether the server answers the probe, asked with kdig from the client side.
fn answers(s: &Start) -> bool {
    let argv = Pair::exec_in(
        &s.pair.names.client_ns,
        &[
            "kdig".into(),
            format!("@{SERVER}"),
            s.probe.clone(),
            "NAPTR".into(),
            "+retry=0".into(),
            "+timeout=1".into(),
            "+noedns".into(),
        ],
    );
    Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("status: NOERROR"))
}

/// Starts a holder (`argv`: `ip netns exec NS lode-bench xdp --hold-…`);
/// returns once it says its program is attached.
fn start_holder(argv: &[String]) -> Result<Child, String> {
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        // Its stdin is a pipe from here: it ends when this process does.
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("{}: {e}", argv.join(" ")))?;
    let out = child.stdout.take().ok_or("no stdout")?;
    let mut line = String::new();
    let _ = BufReader::new(out).read_line(&mut line);
    if !line.starts_with("attached") {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!(
            "{}: no program attached: {}",
            argv.join(" "),
            line.trim()
        ));
    }
    Ok(child)
}

/// The holder's side: attaches the echo to `at` (`IFACE@PORT`), says
/// `attached`, and holds it until its standard input closes (the benchmark
/// ended) or a signal ends the process.
pub fn hold_echo(at: &str) -> Result<(), String> {
    let (iface, port) = at
        .rsplit_once('@')
        .ok_or_else(|| format!("{at}: IFACE@PORT"))?;
    let port: u16 = port.parse().map_err(|_| format!("{at}: bad port"))?;
    let echo = lode_io::xdp::Echo::attach(iface, port).map_err(|e| e.to_string())?;
    hold(&format!("{}@{}", echo.iface(), echo.port()));
    drop(echo);
    Ok(())
}

/// The same for the pass-through program on `iface`.
pub fn hold_pass(iface: &str) -> Result<(), String> {
    let pass = lode_io::xdp::XdpPass::attach(iface).map_err(|e| e.to_string())?;
    hold(pass.iface());
    drop(pass);
    Ok(())
}

/// Says `attached WHAT` and waits until standard input closes.
fn hold(what: &str) {
    use std::io::{Read as _, Write as _};
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "attached {what}");
    let _ = out.flush();
    drop(out);
    let mut sink = [0u8; 64];
    while matches!(std::io::stdin().read(&mut sink), Ok(n) if n > 0) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_pin_and_listen_as_asked() {
        let pair = Pair {
            names: super::super::net::Names::of(77),
        };
        let zones = vec![("0.2.1.2.1.e164.arpa.".to_string(), PathBuf::from("/z"))];
        let s = Start {
            pair: &pair,
            zones: &zones,
            lode: Path::new("/bin/lode"),
            bench: Path::new("/bin/lode-bench"),
            dir: "/tmp/x".into(),
            cpu: 0,
            nice: 0,
            probe: "x".into(),
            load_limit: Duration::from_secs(5),
        };
        let l = spec(Server::LodeXdp, &s);
        assert_eq!(l.server_extra, "listen-xdp = [\"xbs77@53\"]\n");
        assert_eq!(l.cpus, vec![0]);
        assert_eq!(l.workers, Some(1));
        assert_eq!(l.exec_under.join(" "), "ip netns exec lodexdp-77-s");
        assert!(spec(Server::LodeUdp, &s).server_extra.is_empty());
        assert!(spec(Server::KnotXdp, &s)
            .sections
            .contains("xdp:\n    listen: xbs77@53\n"));
        assert!(spec(Server::KnotUdp, &s).sections.is_empty());
        // NSD 4.6 has no so-rcvbuf: the kernel's defaults, set for the run, apply.
        assert_eq!(spec(Server::Nsd, &s).socket_buffer, None);
        let niced = Start { nice: -10, ..s };
        assert_eq!(
            spec(Server::KnotXdp, &niced).exec_under.join(" "),
            "nice -n -10 ip netns exec lodexdp-77-s"
        );
        // Drop of the pair would run `ip netns del`: names only here.
        std::mem::forget(pair);
    }
}
