//! The fleet's servers: a primary (Lode or Knot DNS) that takes signed UPDATEs,
//! keeps its history for IXFR and NOTIFYs every secondary; secondaries (Lode,
//! Knot DNS, NSD, BIND 9) that transfer from it with the same TSIG key. Each runs
//! in its own namespace (`ip netns exec`), pinned with `taskset`, stopped by PID
//! (its process tree) when its guard is dropped.

use std::fmt::Write as _;
use std::fs;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::net::{Host, Net};
use super::FleetError;
use crate::compare::servers::Kind;
use crate::compare::sys;

/// IXFR history kept by the primary (changesets): enough that a secondary a few
/// seconds behind at 1,000 updates/s still gets IXFR (both servers default to 20).
pub const JOURNAL_DEPTH: u32 = 100_000;

/// What one server is asked to be.
#[derive(Debug, Clone)]
pub struct Role {
    /// Which server.
    pub kind: Kind,
    /// Its namespace and address.
    pub host: Host,
    /// Its port (in its namespace).
    pub port: u16,
    /// UDP workers it is asked for.
    pub workers: usize,
    /// CPU it is pinned to.
    pub cpu: usize,
    /// Its folder (configuration, journal, logs).
    pub dir: PathBuf,
    /// The zone's apex (absolute).
    pub zone: String,
    /// Primary: the zone file. None for a secondary.
    pub zone_file: Option<PathBuf>,
    /// Primary: the secondaries to NOTIFY. Secondary: its primary (one entry).
    pub peers: Vec<SocketAddr>,
    /// The TSIG key of updates, transfers and NOTIFYs.
    pub key: lode_tsig::Key,
    /// The lode binary.
    pub lode: PathBuf,
}

/// A TOML basic string's contents.
fn q(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

impl Role {
    /// Whether this is the primary.
    pub fn is_primary(&self) -> bool {
        self.zone_file.is_some()
    }

    /// Writes the configuration into `dir`; returns the server's command line.
    pub fn command(&self) -> Result<Vec<String>, FleetError> {
        let d = &self.dir;
        fs::create_dir_all(d).map_err(|e| FleetError::io(d, e))?;
        let ds = d.display().to_string();
        let write = |name: &str, text: &str| -> Result<String, FleetError> {
            let p = d.join(name);
            fs::write(&p, text).map_err(|e| FleetError::io(&p, e))?;
            Ok(p.display().to_string())
        };
        let (addr, port, w) = (self.host.addr, self.port, self.workers.max(1));
        let k = &self.key;
        let kname = k.name().to_string();
        let kbare = kname.trim_end_matches('.').to_string();
        let (alg, secret) = (k.algorithm().name(), k.secret_base64());
        let zone = &self.zone;
        let net = format!(
            "{}.{}.{}.0/24",
            super::net::NET[0],
            super::net::NET[1],
            super::net::NET[2]
        );
        // LODE_FLEET_LOG=debug: the Lode servers' NOTIFY and transfer decisions.
        let log_level = std::env::var("LODE_FLEET_LOG").unwrap_or_else(|_| "info".into());
        Ok(match (self.kind, &self.zone_file) {
            (Kind::Lode, file) => {
                let mut c = format!(
                    "journal-dir = \"{}\"\njournal-max-depth = {JOURNAL_DEPTH}\ncontrol = \"{}\"\n\
                     log-level = \"{log_level}\"\nzonefile-sync = -1\n\n\
                     [[key]]\nid = \"{kname}\"\nalgorithm = \"{alg}\"\nsecret = \"{secret}\"\n\n\
                     [[acl]]\nid = \"fleet\"\naddress = [\"{net}\"]\nkey = [\"{kname}\"]\n\
                     action = [\"transfer\", \"update\"]\n\n",
                    q(&format!("{ds}/journal")),
                    q(&format!("{ds}/lode.sock")),
                );
                let mut ids = Vec::new();
                for (i, p) in self.peers.iter().enumerate() {
                    let id = if file.is_some() {
                        format!("secondary{i}")
                    } else {
                        "primary".to_string()
                    };
                    let _ = write!(
                        c,
                        "[[remote]]\nid = \"{id}\"\naddress = [\"{}@{}\"]\nkey = \"{kname}\"\n\n",
                        p.ip(),
                        p.port()
                    );
                    ids.push(format!("\"{id}\""));
                }
                let _ = write!(c, "[[zone]]\nname = \"{}\"\nacl = [\"fleet\"]\n", q(zone));
                match file {
                    Some(f) => {
                        let _ = write!(
                            c,
                            "file = \"{}\"\nnotify = [{}]\nnotify-delay = 0\n",
                            q(&f.display().to_string()),
                            ids.join(", ")
                        );
                    }
                    None => {
                        let _ = writeln!(c, "master = [{}]", ids.join(", "));
                    }
                }
                let p = write("lode.toml", &c)?;
                vec![
                    self.lode.display().to_string(),
                    "serve".into(),
                    "--config".into(),
                    p,
                    "--listen".into(),
                    format!("{addr}:{port}"),
                    "--workers".into(),
                    w.to_string(),
                ]
            }
            (Kind::Knot, file) => {
                fs::create_dir_all(d.join("db")).map_err(|e| FleetError::io(d, e))?;
                let mut c = format!(
                    "server:\n    rundir: \"{ds}\"\n    pidfile: \"{ds}/knot.pid\"\n    \
                     listen: {addr}@{port}\n    udp-workers: {w}\n    tcp-workers: 2\n    \
                     background-workers: 2\n\
                     log:\n  - target: \"{ds}/knot.log\"\n    any: info\n\
                     database:\n    storage: \"{ds}/db\"\n\
                     control:\n    listen: \"{ds}/knot.sock\"\n\
                     key:\n  - id: {kname}\n    algorithm: {alg}\n    secret: {secret}\n"
                );
                let mut ids = Vec::new();
                if !self.peers.is_empty() {
                    c.push_str("remote:\n");
                    for (i, p) in self.peers.iter().enumerate() {
                        let id = if file.is_some() {
                            format!("secondary{i}")
                        } else {
                            "primary".to_string()
                        };
                        let _ = write!(
                            c,
                            "  - id: {id}\n    address: {}@{}\n    key: {kname}\n",
                            p.ip(),
                            p.port()
                        );
                        ids.push(id);
                    }
                }
                let _ = write!(
                    c,
                    "acl:\n  - id: fleet\n    address: {net}\n    key: {kname}\n    \
                     action: [ transfer, update, notify ]\n\
                     zone:\n  - domain: \"{zone}\"\n    storage: \"{ds}\"\n    acl: fleet\n    \
                     journal-content: changes\n    journal-max-depth: {JOURNAL_DEPTH}\n    \
                     journal-max-usage: 4G\n    zonefile-sync: -1\n"
                );
                match file {
                    Some(f) => {
                        let _ = write!(
                            c,
                            "    file: \"{}\"\n    zonefile-load: whole\n    \
                             serial-policy: increment\n    semantic-checks: off\n",
                            f.display()
                        );
                        if !ids.is_empty() {
                            let _ = writeln!(c, "    notify: [ {} ]", ids.join(", "));
                        }
                    }
                    None => {
                        let _ = write!(
                            c,
                            "    file: \"{ds}/secondary.zone\"\n    master: primary\n    \
                             zonefile-load: none\n    semantic-checks: off\n"
                        );
                    }
                }
                let p = write("knot.conf", &c)?;
                vec!["/usr/sbin/knotd".into(), "-c".into(), p]
            }
            (Kind::Nsd, None) => {
                let p = self.peers.first().ok_or_else(|| {
                    FleetError::Config("an NSD secondary needs its primary".into())
                })?;
                // rrl-ratelimit 0: Debian's NSD limits answers per source otherwise (the
                // prober is one address); xfrd-reload-timeout 0: serve a transfer at once.
                let c = format!(
                    "server:\n    ip-address: {addr}@{port}\n    port: {port}\n    do-ip6: no\n    \
                     server-count: {w}\n    username: \"\"\n    chroot: \"\"\n    zonesdir: \"{ds}\"\n    \
                     database: \"\"\n    zonelistfile: \"{ds}/zone.list\"\n    xfrdfile: \"{ds}/xfrd.state\"\n    \
                     xfrdir: \"{ds}\"\n    pidfile: \"{ds}/nsd.pid\"\n    logfile: \"{ds}/nsd.log\"\n    \
                     verbosity: 1\n    rrl-ratelimit: 0\n    xfrd-reload-timeout: 0\n\
                     remote-control:\n    control-enable: no\n\
                     key:\n    name: \"{kbare}\"\n    algorithm: {alg}\n    secret: \"{secret}\"\n\
                     zone:\n    name: \"{}\"\n    zonefile: \"secondary.zone\"\n    \
                     allow-notify: {} {kbare}\n    request-xfr: {}@{} {kbare}\n    \
                     provide-xfr: {net} {kbare}\n",
                    zone.trim_end_matches('.'),
                    p.ip(),
                    p.ip(),
                    p.port(),
                );
                let p = write("nsd.conf", &c)?;
                vec!["/usr/sbin/nsd".into(), "-d".into(), "-c".into(), p]
            }
            (Kind::Bind, None) => {
                let p = self.peers.first().ok_or_else(|| {
                    FleetError::Config("a BIND secondary needs its primary".into())
                })?;
                let c = format!(
                    "options {{\n  directory \"{ds}\";\n  pid-file \"{ds}/named.pid\";\n  \
                     session-keyfile \"{ds}/session.key\";\n  managed-keys-directory \"{ds}\";\n  \
                     listen-on port {port} {{ {addr}; }};\n  listen-on-v6 {{ none; }};\n  \
                     recursion no;\n  notify no;\n  dnssec-validation no;\n  \
                     allow-transfer {{ key \"{kbare}\"; }};\n  \
                     min-refresh-time 1;\n  min-retry-time 1;\n}};\n\
                     controls {{ }};\n\
                     key \"{kbare}\" {{ algorithm {alg}; secret \"{secret}\"; }};\n\
                     logging {{ channel f {{ file \"{ds}/named.log\"; severity info; print-time yes; }};\n  \
                     category default {{ f; }};\n}};\n\
                     zone \"{}\" {{\n  type secondary;\n  file \"secondary.db\";\n  \
                     primaries {{ {} port {} key \"{kbare}\"; }};\n  allow-notify {{ key \"{kbare}\"; }};\n}};\n",
                    zone.trim_end_matches('.'),
                    p.ip(),
                    p.port(),
                );
                let p = write("named.conf", &c)?;
                vec![
                    "/usr/sbin/named".into(),
                    "-f".into(),
                    "-4".into(),
                    "-n".into(),
                    w.to_string(),
                    "-c".into(),
                    p,
                ]
            }
            (k, _) => {
                return Err(FleetError::Config(format!(
                    "{k} cannot be a fleet {} (primaries: lode, knot; secondaries: lode, knot, nsd, bind)",
                    if self.is_primary() { "primary" } else { "secondary" }
                )))
            }
        })
    }

    /// Starts the server in its namespace, pinned to its CPU.
    pub fn start(&self) -> Result<Node, FleetError> {
        let cmd = self.command()?;
        let log = self.dir.join("stdio.log");
        let f = fs::File::create(&log).map_err(|e| FleetError::io(&log, e))?;
        let f2 = f.try_clone().map_err(|e| FleetError::io(&log, e))?;
        // ip netns exec, taskset, setpriv and env all exec: the child's PID is the
        // server's. setpriv makes the kernel stop the server if we die unannounced.
        let mut inner = vec![
            "taskset".to_string(),
            "-c".into(),
            self.cpu.to_string(),
            "setpriv".into(),
            "--pdeathsig".into(),
            "TERM".into(),
            "--".into(),
            // Our threads block SIGINT, SIGTERM and SIGHUP (a thread waits for them)
            // and a child inherits that mask: coreutils env unblocks them again.
            "env".into(),
            "--default-signal=INT,TERM,HUP".into(),
        ];
        inner.extend(cmd);
        let full = Net::exec_in(&self.host, &inner);
        let child = Command::new(&full[0])
            .args(&full[1..])
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(f)
            .stderr(f2)
            .spawn()
            .map_err(|e| {
                FleetError::Server(format!("{}: cannot start {full:?}: {e}", self.kind))
            })?;
        Ok(Node {
            kind: self.kind,
            addr: SocketAddr::from((self.host.addr, self.port)),
            label: format!(
                "{} {} {}",
                if self.is_primary() {
                    "primary"
                } else {
                    "secondary"
                },
                self.kind,
                self.host.addr
            ),
            child,
            started: Instant::now(),
            dir: self.dir.clone(),
            stopped: false,
        })
    }
}

/// A started server, stopped (SIGTERM to its tree, SIGKILL after 10 s) on drop.
#[derive(Debug)]
pub struct Node {
    /// Which server.
    pub kind: Kind,
    /// Its address in its namespace.
    pub addr: SocketAddr,
    /// e.g. `secondary knot 10.53.0.12`.
    pub label: String,
    child: Child,
    /// When it was started.
    pub started: Instant,
    /// Its folder.
    pub dir: PathBuf,
    stopped: bool,
}

impl Node {
    /// The server's PID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its processes (NSD forks).
    pub fn pids(&self) -> Vec<u32> {
        sys::process_tree(self.pid())
    }

    /// Waits until it answers a query for the zone's SOA (any RCODE); fails if it
    /// exits or `limit` passes.
    pub fn wait_listening(&mut self, zone: &str, limit: Duration) -> Result<(), FleetError> {
        let q = super::probe::query(zone, lode_wire::Rtype::SOA, 1)?;
        let sock = UdpSocket::bind((super::net::PROBER, 0))
            .map_err(|e| FleetError::io(Path::new("udp"), e))?;
        sock.set_read_timeout(Some(Duration::from_millis(100)))
            .map_err(|e| FleetError::io(Path::new("udp"), e))?;
        let mut buf = [0u8; 4096];
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Err(FleetError::Server(format!(
                    "{} exited ({st}); see {}",
                    self.label,
                    self.dir.display()
                )));
            }
            if self.started.elapsed() > limit {
                return Err(FleetError::Server(format!(
                    "{} did not answer within {limit:?}; see {}",
                    self.label,
                    self.dir.display()
                )));
            }
            let _ = sock.send_to(&q, self.addr);
            if let Ok((n, _)) = sock.recv_from(&mut buf) {
                if n >= 12 && buf[..2] == q[..2] && buf[2] & 0x80 != 0 {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The SOA serial it serves for `zone` (authoritative NOERROR), if any.
    pub fn serial(&self, zone: &str) -> Option<u32> {
        super::probe::soa_serial(self.addr, zone)
    }

    /// Moves every thread of every process of the server to `cpu` (`taskset -a -p`).
    pub fn pin(&self, cpu: usize) -> Result<(), FleetError> {
        for pid in self.pids() {
            let st = Command::new("taskset")
                .args(["-a", "-p", "-c", &cpu.to_string(), &pid.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map_err(|e| FleetError::Server(format!("taskset: {e}")))?;
            if !st.success() && Path::new(&format!("/proc/{pid}")).exists() {
                return Err(FleetError::Server(format!(
                    "taskset -a -p -c {cpu} {pid} failed ({st})"
                )));
            }
        }
        Ok(())
    }

    /// Resident memory now (RSS, PSS summed when it has several processes), bytes.
    pub fn rss(&self) -> u64 {
        sys::memory(&self.pids()).resident()
    }

    /// Peak resident memory of its processes (VmHWM summed), bytes.
    pub fn hwm(&self) -> u64 {
        self.pids()
            .iter()
            .filter_map(|p| fs::read_to_string(format!("/proc/{p}/status")).ok())
            .filter_map(|t| sys::parse_kb(&t, "VmHWM"))
            .sum()
    }

    /// Whether it still runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Stops it: SIGTERM to its processes, up to 10 s, then SIGKILL.
    pub fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let tree = self.pids();
        crate::compare::servers::stop_tree(&mut self.child, &tree);
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The host part of a fleet address, for messages (`.11`).
pub fn short(addr: Ipv4Addr) -> String {
    format!(".{}", addr.octets()[3])
}
