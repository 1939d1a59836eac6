//! The servers compared: how each is configured (minimally, on 127.0.0.1, in its
//! own directory), started (pinned to a CPU with `taskset`, as root, in the
//! foreground), found ready, and stopped by PID — also on errors, by a guard.

use std::fmt;
use std::fs;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::CompareError;
use crate::query::{check_reply, Expect, QuerySet, Verdict};

/// A server implementation under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Lode itself (`lode serve`).
    Lode,
    /// Knot DNS (`knotd`).
    Knot,
    /// NSD.
    Nsd,
    /// BIND 9 (`named`).
    Bind,
    /// PowerDNS Authoritative with the bind back end.
    Pdns,
    /// `lode-bench echo`: the machine's ceiling, not a DNS server.
    Echo,
}

impl Kind {
    /// Every DNS server, in run order.
    pub const SERVERS: [Kind; 5] = [Kind::Lode, Kind::Knot, Kind::Nsd, Kind::Bind, Kind::Pdns];

    /// Short name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Lode => "lode",
            Kind::Knot => "knot",
            Kind::Nsd => "nsd",
            Kind::Bind => "bind",
            Kind::Pdns => "powerdns",
            Kind::Echo => "echo",
        }
    }

    /// Parses a short name.
    pub fn parse(s: &str) -> Option<Kind> {
        Kind::SERVERS
            .into_iter()
            .chain([Kind::Echo])
            .find(|k| k.name().eq_ignore_ascii_case(s))
    }

    /// How the worker count is passed to it: its option or configuration key.
    pub fn workers_option(self) -> &'static str {
        match self {
            Kind::Lode | Kind::Echo => "--workers",
            Kind::Knot => "udp-workers",
            Kind::Nsd => "server-count",
            Kind::Bind => "-n",
            Kind::Pdns => "receiver-threads",
        }
    }

    /// Its own socket buffer option (set to the run's size), if it has one.
    pub fn buffer_option(self) -> Option<&'static str> {
        match self {
            Kind::Lode => Some("udp-receive-buffer"),
            Kind::Echo => Some("--socket-buffer"),
            Kind::Bind => Some("udp-receive-buffer, udp-send-buffer"),
            // NSD 4.6 forces 1 MiB (SO_RCVBUFFORCE) itself; Knot and PowerDNS take the
            // kernel's defaults.
            Kind::Knot | Kind::Nsd | Kind::Pdns => None,
        }
    }

    /// The program started and the Debian package it comes in (None for Lode's own).
    pub fn program(self) -> Option<(&'static str, &'static str)> {
        match self {
            Kind::Lode | Kind::Echo => None,
            Kind::Knot => Some(("/usr/sbin/knotd", "knot")),
            Kind::Nsd => Some(("/usr/sbin/nsd", "nsd")),
            Kind::Bind => Some(("/usr/sbin/named", "bind9")),
            Kind::Pdns => Some(("/usr/sbin/pdns_server", "pdns-server pdns-backend-bind")),
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How to start one server.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Which server.
    pub kind: Kind,
    /// Its UDP/TCP port on 127.0.0.1.
    pub port: u16,
    /// Worker threads (or processes) it is asked to use.
    pub workers: usize,
    /// Zones: apex (absolute) and file.
    pub zones: Vec<(String, PathBuf)>,
    /// Its working directory (created; configuration, pid and run files).
    pub dir: PathBuf,
    /// Where its output goes.
    pub log: PathBuf,
    /// CPU it is pinned to (`taskset -c`).
    pub cpu: usize,
    /// The lode binary (for Lode), or the lode-bench binary (for the echo).
    pub lode: PathBuf,
    /// Accept RFC 2136 updates signed with this key in every zone, journal in `dir`
    /// (Lode, Knot DNS and BIND 9; BIND gets copies of the zone files, which it rewrites).
    pub update_key: Option<lode_tsig::Key>,
    /// Response-rate limiting and DNS cookies (Lode and Knot DNS only; default off).
    pub guard: Guard,
    /// Lode's request counters and metrics endpoint (Lode only; default: Lode's own).
    pub metrics: LodeMetrics,
    /// Socket buffers as the kernel accounts them (`ss -m` rb/tb), asked of the
    /// servers that have an option for it (Lode, BIND, the echo: half of it, which
    /// the kernel doubles); None: each its own default.
    pub socket_buffer: Option<u64>,
}

/// Lode's request counters and Prometheus endpoint: the top-level `query-counters`
/// and `metrics-listen` keys of its `lode.toml`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LodeMetrics {
    /// `query-counters` (None: Lode's default, counting on).
    pub query_counters: Option<bool>,
    /// `metrics-listen` (None: no endpoint).
    pub listen: Option<SocketAddr>,
}

impl LodeMetrics {
    /// Counting off and no endpoint: the baseline of the metrics overhead.
    pub fn off() -> LodeMetrics {
        LodeMetrics {
            query_counters: Some(false),
            listen: None,
        }
    }

    /// Counting on and the endpoint on `listen`.
    pub fn on(listen: SocketAddr) -> LodeMetrics {
        LodeMetrics {
            query_counters: Some(true),
            listen: Some(listen),
        }
    }

    /// True when Lode is left with its defaults (nothing to write).
    pub fn is_default(&self) -> bool {
        *self == LodeMetrics::default()
    }

    /// The top-level keys (written before any table of `lode.toml`).
    pub fn lode_toml(&self) -> String {
        let mut t = String::new();
        if let Some(on) = self.query_counters {
            t.push_str(&format!("query-counters = {on}\n"));
        }
        if let Some(addr) = self.listen {
            t.push_str(&format!("metrics-listen = \"{addr}\"\n"));
        }
        t
    }
}

/// Response-rate limiting and DNS cookies asked of a server: Lode's `[rrl]` and
/// `[cookies]` tables, Knot DNS's `mod-rrl` and `mod-cookies` as global modules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Guard {
    /// RRL answers per second per bucket (None: off).
    pub rrl_rate: Option<u32>,
    /// DNS cookies with this fixed 16-byte server secret (None: off).
    pub cookie_secret: Option<[u8; 16]>,
}

impl Guard {
    /// True when neither is on.
    pub fn is_off(&self) -> bool {
        self.rrl_rate.is_none() && self.cookie_secret.is_none()
    }

    /// Lode's `[rrl]` and `[cookies]` tables.
    pub fn lode_toml(&self) -> String {
        let mut t = String::new();
        if let Some(r) = self.rrl_rate {
            t.push_str(&format!("\n[rrl]\nrate-limit = {r}\n"));
        }
        if let Some(s) = self.cookie_secret {
            t.push_str(&format!("\n[cookies]\nsecret = \"{}\"\n", hex(&s)));
        }
        t
    }

    /// Knot DNS's module sections (before `template:`) and the `global-module`
    /// line of the default template.
    pub fn knot_conf(&self) -> (String, String) {
        let mut sections = String::new();
        let mut modules = Vec::new();
        if let Some(s) = self.cookie_secret {
            sections.push_str(&format!(
                "mod-cookies:\n  - id: bench\n    secret: 0x{}\n",
                hex(&s)
            ));
            modules.push("mod-cookies/bench");
        }
        if let Some(r) = self.rrl_rate {
            sections.push_str(&format!("mod-rrl:\n  - id: bench\n    rate-limit: {r}\n"));
            modules.push("mod-rrl/bench");
        }
        let line = if modules.is_empty() {
            String::new()
        } else {
            format!("    global-module: [{}]\n", modules.join(", "))
        };
        (sections, line)
    }
}

/// Lower-case hex digits of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Launch {
    /// Writes the configuration and returns the command line (without taskset).
    pub fn command(&self) -> Result<Vec<String>, CompareError> {
        let d = &self.dir;
        fs::create_dir_all(d).map_err(|e| CompareError::io(d, e))?;
        let ds = d.display();
        let port = self.port;
        let w = self.workers.max(1);
        let write = |name: &str, text: String| -> Result<String, CompareError> {
            let p = d.join(name);
            fs::write(&p, text).map_err(|e| CompareError::io(&p, e))?;
            Ok(p.display().to_string())
        };
        let lode = self.lode.display().to_string();
        if !self.metrics.is_default() && self.kind != Kind::Lode {
            return Err(CompareError::Config(format!(
                "{}: query counters and metrics-listen are Lode's",
                self.kind
            )));
        }
        if !self.guard.is_off() && !matches!(self.kind, Kind::Lode | Kind::Knot) {
            return Err(CompareError::Config(format!(
                "{}: RRL and cookies are configured for lode and knot only",
                self.kind
            )));
        }
        Ok(match self.kind {
            Kind::Echo => {
                let mut c = vec![
                    lode,
                    "echo".into(),
                    "--listen".into(),
                    format!("127.0.0.1:{port}"),
                    "--workers".into(),
                    w.to_string(),
                ];
                if let Some(b) = self.socket_buffer {
                    c.extend(["--socket-buffer".into(), b.to_string()]);
                }
                c
            }
            Kind::Lode => {
                let mut c = vec![
                    lode,
                    "serve".into(),
                    "--listen".into(),
                    format!("127.0.0.1:{port}"),
                    "--workers".into(),
                    w.to_string(),
                    "--control".into(),
                    format!("{ds}/lode.sock"),
                    // Info: the per-zone "loaded in" lines (read for the load-time table).
                    "--log-level".into(),
                    "info".into(),
                ];
                match &self.update_key {
                    None => {
                        for (apex, file) in &self.zones {
                            c.push("--zone".into());
                            c.push(format!("{apex}={}", file.display()));
                        }
                        if !self.guard.is_off()
                            || !self.metrics.is_default()
                            || self.socket_buffer.is_some()
                        {
                            // Top-level keys before the tables.
                            let conf = format!(
                                "{}{}{}",
                                self.metrics.lode_toml(),
                                self.lode_buffer_toml(),
                                self.guard.lode_toml()
                            );
                            let p = write("lode.toml", conf)?;
                            c.push("--config".into());
                            c.push(p);
                        }
                    }
                    Some(key) => {
                        let j = d.join("journal");
                        fs::create_dir_all(&j).map_err(|e| CompareError::io(&j, e))?;
                        // Top-level keys first: after a table header they would be the
                        // table's (`[rrl]` after the `[[zone]]`s is a root table again).
                        let conf = format!(
                            "{}{}{}{}",
                            self.metrics.lode_toml(),
                            self.lode_buffer_toml(),
                            lode_update_conf(d, &self.zones, key),
                            self.guard.lode_toml()
                        );
                        let p = write("lode.toml", conf)?;
                        c.push("--config".into());
                        c.push(p);
                    }
                }
                c
            }
            Kind::Knot => {
                fs::create_dir_all(d.join("db")).map_err(|e| CompareError::io(d, e))?;
                let (keys, journal) = match &self.update_key {
                    None => (String::new(), "journal-content: none\n"),
                    Some(k) => (
                        format!(
                            "key:\n  - id: {}\n    algorithm: {}\n    secret: {}\n\
                             acl:\n  - id: update\n    key: {}\n    action: update\n",
                            k.name(),
                            k.algorithm().name(),
                            k.secret_base64(),
                            k.name()
                        ),
                        "journal-content: changes\n    journal-max-usage: 4G\n    \
                         acl: update\n",
                    ),
                };
                let (modules, global) = self.guard.knot_conf();
                let mut conf = format!(
                    "server:\n    rundir: \"{ds}\"\n    pidfile: \"{ds}/knot.pid\"\n    \
                     listen: 127.0.0.1@{port}\n    udp-workers: {w}\n    tcp-workers: 1\n    \
                     background-workers: 1\n\
                     log:\n  - target: stderr\n    any: info\n\
                     database:\n    storage: \"{ds}/db\"\n{keys}{modules}\
                     template:\n  - id: default\n    storage: \"{ds}\"\n{global}    \
                     zonefile-sync: -1\n    {journal}\
                     zone:\n"
                );
                for (apex, file) in &self.zones {
                    conf.push_str(&format!(
                        "  - domain: {apex}\n    file: \"{}\"\n",
                        file.display()
                    ));
                }
                let p = write("knot.conf", conf)?;
                vec!["/usr/sbin/knotd".into(), "-c".into(), p]
            }
            Kind::Nsd => {
                // Debian's NSD limits responses per second by default: rrl-ratelimit 0.
                let mut conf = format!(
                    "server:\n    ip-address: 127.0.0.1@{port}\n    server-count: {w}\n    \
                     username: \"\"\n    chroot: \"\"\n    zonesdir: \"{ds}\"\n    \
                     database: \"\"\n    pidfile: \"{ds}/nsd.pid\"\n    \
                     xfrdfile: \"{ds}/xfrd.state\"\n    zonelistfile: \"{ds}/zone.list\"\n    \
                     xfrdir: \"{ds}\"\n    verbosity: 1\n    rrl-ratelimit: 0\n    \
                     do-ip6: no\n    tcp-count: 10\n\
                     remote-control:\n    control-enable: no\n"
                );
                for (apex, file) in &self.zones {
                    conf.push_str(&format!(
                        "zone:\n    name: \"{apex}\"\n    zonefile: \"{}\"\n",
                        file.display()
                    ));
                }
                let p = write("nsd.conf", conf)?;
                vec!["/usr/sbin/nsd".into(), "-d".into(), "-c".into(), p]
            }
            Kind::Bind => {
                let mut conf = format!(
                    "options {{\n  directory \"{ds}\";\n  pid-file \"{ds}/named.pid\";\n  \
                     session-keyfile \"{ds}/session.key\";\n  managed-keys-directory \"{ds}\";\n  \
                     listen-on port {port} {{ 127.0.0.1; }};\n  listen-on-v6 {{ none; }};\n  \
                     recursion no;\n  dnssec-validation no;\n  notify no;\n{}}};\n\
                     controls {{ }};\n",
                    self.socket_buffer.map_or(String::new(), |b| format!(
                        "  udp-receive-buffer {0};\n  udp-send-buffer {0};\n",
                        b / 2
                    ))
                );
                if let Some(k) = &self.update_key {
                    // BIND logs every record an update adds (Knot and Lode one line per
                    // commit): not that cost in a rate measurement.
                    conf.push_str("logging { category update { null; }; };\n");
                    conf.push_str(&format!(
                        "key \"{}\" {{ algorithm {}; secret \"{}\"; }};\n",
                        k.name(),
                        k.algorithm().name(),
                        k.secret_base64()
                    ));
                }
                for (i, (apex, file)) in self.zones.iter().enumerate() {
                    match &self.update_key {
                        None => conf.push_str(&format!(
                            "zone \"{apex}\" {{ type primary; file \"{}\"; }};\n",
                            file.display()
                        )),
                        Some(k) => {
                            // BIND writes updated zones back to their files: its own copies.
                            let copy = d.join(format!("zone{i}.db"));
                            fs::copy(file, &copy).map_err(|e| CompareError::io(file, e))?;
                            conf.push_str(&format!(
                                "zone \"{apex}\" {{ type primary; file \"{}\"; \
                                 journal \"{ds}/zone{i}.db.jnl\"; \
                                 allow-update {{ key \"{}\"; }}; }};\n",
                                copy.display(),
                                k.name()
                            ));
                        }
                    }
                }
                let p = write("named.conf", conf)?;
                vec![
                    "/usr/sbin/named".into(),
                    "-g".into(),
                    "-4".into(),
                    "-n".into(),
                    w.to_string(),
                    "-c".into(),
                    p,
                ]
            }
            Kind::Pdns => {
                let mut zones = String::new();
                for (apex, file) in &self.zones {
                    zones.push_str(&format!(
                        "zone \"{apex}\" {{ type master; file \"{}\"; }};\n",
                        file.display()
                    ));
                }
                let zones = write("bind-zones.conf", zones)?;
                write(
                    "pdns.conf",
                    format!(
                        "launch=bind\nbind-config={zones}\nlocal-address=127.0.0.1\n\
                         local-port={port}\nsocket-dir={ds}\nguardian=no\ndaemon=no\n\
                         disable-syslog=yes\nreceiver-threads={w}\ndistributor-threads=1\n\
                         webserver=no\napi=no\nloglevel=4\n"
                    ),
                )?;
                vec![
                    "/usr/sbin/pdns_server".into(),
                    format!("--config-dir={ds}"),
                    "--daemon=no".into(),
                    "--guardian=no".into(),
                ]
            }
        })
    }

    /// Lode's `udp-receive-buffer` key: half the size, which the kernel doubles.
    fn lode_buffer_toml(&self) -> String {
        self.socket_buffer.map_or(String::new(), |b| {
            format!("udp-receive-buffer = {}\n", b / 2)
        })
    }

    /// Starts the server pinned to its CPU; stopped when the guard is dropped.
    pub fn start(&self) -> Result<Running, CompareError> {
        let cmd = self.command()?;
        check_port_free(self.port)?;
        let log = fs::File::create(&self.log).map_err(|e| CompareError::io(&self.log, e))?;
        let log2 = log
            .try_clone()
            .map_err(|e| CompareError::io(&self.log, e))?;
        let started = Instant::now();
        // taskset pins, setpriv makes the kernel stop the server if this process dies
        // without stopping it (killed by a signal); env unblocks SIGINT, SIGTERM and
        // SIGHUP, which a benchmark that waits for them in a thread (`compare` with
        // socket buffers to restore, `attack`) has blocked and a child inherits. All
        // three exec, so the PID is the server's.
        let child = Command::new("taskset")
            .arg("-c")
            .arg(self.cpu.to_string())
            .args(["setpriv", "--pdeathsig", "TERM", "--"])
            .args(["env", "--default-signal=INT,TERM,HUP"])
            .args(&cmd)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(|e| {
                CompareError::Server(format!("{}: cannot start {:?}: {e}", self.kind, cmd))
            })?;
        Ok(Running {
            kind: self.kind,
            addr: SocketAddr::from(([127, 0, 0, 1], self.port)),
            child,
            started,
            log: self.log.clone(),
            stopped: false,
        })
    }
}

/// Lode's configuration for zones taking updates signed with `key`: journal in
/// `dir/journal`, one ACL allowing updates with the key.
pub fn lode_update_conf(dir: &Path, zones: &[(String, PathBuf)], key: &lode_tsig::Key) -> String {
    // TOML basic strings: paths with quotes or backslashes escaped.
    let q = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let mut c = format!(
        "journal-dir = \"{}\"\n# as Knot's zonefile-sync: -1 in these runs: the zone file is not written back\nzonefile-sync = -1\n\n[[key]]\nid = \"{}\"\nalgorithm = \"{}\"\nsecret = \"{}\"\n\n\
         [[acl]]\nid = \"update\"\nkey = [\"{}\"]\naction = [\"update\"]\n",
        q(&dir.join("journal").display().to_string()),
        key.name(),
        key.algorithm().name(),
        key.secret_base64(),
        key.name()
    );
    for (apex, file) in zones {
        c.push_str(&format!(
            "\n[[zone]]\nname = \"{}\"\nfile = \"{}\"\nacl = [\"update\"]\n",
            q(apex),
            q(&file.display().to_string())
        ));
    }
    c
}

/// Fails if something still listens on UDP 127.0.0.1:`port` after 5 s (the
/// forked children of a server just stopped, NSD's, may hold it a moment longer).
fn check_port_free(port: u16) -> Result<(), CompareError> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match UdpSocket::bind(("127.0.0.1", port)) {
            Ok(_) => return Ok(()),
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => {
                return Err(CompareError::Server(format!(
                    "port {port} is busy ({e}); stop what uses it or choose another --base-port"
                )))
            }
        }
    }
}

/// A started server; stopped (SIGTERM, then SIGKILL, by PID, with its children) on drop.
#[derive(Debug)]
pub struct Running {
    /// Which server.
    pub kind: Kind,
    /// Its address.
    pub addr: SocketAddr,
    child: Child,
    /// When it was started.
    pub started: Instant,
    /// Its log file.
    pub log: PathBuf,
    /// Set once stopped (its PID may be reused afterwards: never signal it again).
    stopped: bool,
}

impl Running {
    /// The PID of the server's main process (taskset and setpriv exec the server).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's processes (the main one and any it forked).
    pub fn pids(&self) -> Vec<u32> {
        super::sys::process_tree(self.pid())
    }

    /// Waits until `probe` (a query for a name in the last zone) is answered validly;
    /// returns the time since the start. Fails if the process exits or `limit` passes.
    pub fn wait_ready(
        &mut self,
        probe: &QuerySet,
        expect: Expect,
        limit: Duration,
    ) -> Result<Duration, CompareError> {
        let sock =
            UdpSocket::bind("127.0.0.1:0").map_err(|e| CompareError::io(Path::new("udp"), e))?;
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .map_err(|e| CompareError::io(Path::new("udp"), e))?;
        let mut buf = [0u8; 4096];
        let mut id = 0u16;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(CompareError::Server(format!(
                    "{} exited ({status}) before answering; see {}",
                    self.kind,
                    self.log.display()
                )));
            }
            if self.started.elapsed() > limit {
                return Err(CompareError::Server(format!(
                    "{} did not answer within {:.0} s; see {}",
                    self.kind,
                    limit.as_secs_f64(),
                    self.log.display()
                )));
            }
            id = id.wrapping_add(1);
            let mut q = probe.get(0).to_vec();
            q[..2].copy_from_slice(&id.to_be_bytes());
            let _ = sock.send_to(&q, self.addr);
            let until = Instant::now() + Duration::from_millis(50);
            while Instant::now() < until {
                let Ok((n, _)) = sock.recv_from(&mut buf) else {
                    break;
                };
                if buf[..n].starts_with(&id.to_be_bytes())
                    && check_reply(&buf[..n], probe.question(0), expect) == Verdict::Valid
                {
                    return Ok(self.started.elapsed());
                }
            }
        }
    }

    /// The RCODE of the server's reply to `query` (a query in wire form, any ID), or
    /// None if no reply came within about a second (three tries).
    pub fn rcode_of(&self, query: &[u8]) -> Option<u16> {
        let sock = UdpSocket::bind("127.0.0.1:0").ok()?;
        sock.set_read_timeout(Some(Duration::from_millis(300)))
            .ok()?;
        let mut buf = [0u8; 4096];
        for id in [0x4c01u16, 0x4c02, 0x4c03] {
            let mut q = query.to_vec();
            if q.len() < 12 {
                return None;
            }
            q[..2].copy_from_slice(&id.to_be_bytes());
            sock.send_to(&q, self.addr).ok()?;
            let until = Instant::now() + Duration::from_millis(300);
            while Instant::now() < until {
                let Ok((n, _)) = sock.recv_from(&mut buf) else {
                    break;
                };
                if n >= 12 && buf[..2] == id.to_be_bytes() && buf[2] & 0x80 != 0 {
                    return Some(u16::from(buf[3] & 0x0F));
                }
            }
        }
        None
    }

    /// Stops the server and its children: SIGTERM, up to 10 s, then SIGKILL.
    pub fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let tree = self.pids();
        stop_tree(&mut self.child, &tree);
    }
}

/// Stops the process `child` and the rest of its process tree `tree`:
/// SIGTERM to all, up to 10 s for `child` to exit, then SIGKILL to what is
/// left; reaps `child`.
pub fn stop_tree(child: &mut Child, tree: &[u32]) {
    for &p in tree {
        let _ = kill(Pid::from_raw(p as i32), Signal::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Whatever is left of the tree (the main process, or forked children).
    for &p in tree {
        if Path::new(&format!("/proc/{p}")).exists() && p != child.id() {
            let _ = kill(Pid::from_raw(p as i32), Signal::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A "server" that never answers is given up after the limit and stopped by the
    /// guard; one that exits at once is reported as such. Neither hangs.
    #[test]
    fn silent_and_dying_servers() {
        let dir = std::env::temp_dir().join(format!("lode-bench-silent-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("dir");
        let mut probe = QuerySet::default();
        probe.push(
            &"x.test.".parse().expect("name"),
            lode_wire::Rtype::A,
            false,
        );
        let launch = |lode: &str, port: u16| Launch {
            kind: Kind::Echo,
            port,
            workers: 1,
            zones: Vec::new(),
            dir: dir.join(format!("s{port}")),
            log: dir.join(format!("s{port}.log")),
            cpu: 0,
            lode: PathBuf::from(lode),
            update_key: None,
            guard: Guard::default(),
            metrics: LodeMetrics::default(),
            socket_buffer: None,
        };
        // `/bin/sleep echo …` fails at once (bad arguments).
        let mut dying = launch("/bin/sleep", 15860).start().expect("start");
        let t = Instant::now();
        let e = dying
            .wait_ready(&probe, Expect::Any, Duration::from_secs(10))
            .expect_err("exits");
        assert!(e.to_string().contains("exited"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(10));

        // A script that sleeps and never answers.
        let script = dir.join("silent.sh");
        fs::write(&script, "#!/bin/sh\nexec sleep 30\n").expect("script");
        let status = Command::new("chmod").arg("+x").arg(&script).status();
        assert!(status.is_ok_and(|s| s.success()));
        let mut silent = launch(&script.display().to_string(), 15861)
            .start()
            .expect("start");
        let pid = silent.pid();
        let t = Instant::now();
        let e = silent
            .wait_ready(&probe, Expect::Any, Duration::from_millis(600))
            .expect_err("never answers");
        assert!(e.to_string().contains("did not answer"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5));
        drop(silent);
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "stopped by the guard"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn configurations_are_written() {
        let dir = std::env::temp_dir().join(format!("lode-bench-conf-{}", std::process::id()));
        let zones = vec![("1.e164.arpa.".to_owned(), PathBuf::from("/z/1.zone"))];
        for kind in Kind::SERVERS {
            let l = Launch {
                workers: 2,
                zones: zones.clone(),
                ..test_launch(&dir, kind, 15899)
            };
            let cmd = l.command().expect("command").join(" ");
            assert!(!cmd.is_empty());
            let conf: String = fs::read_dir(&l.dir)
                .expect("dir")
                .flatten()
                .filter(|e| e.path().is_file())
                .map(|e| fs::read_to_string(e.path()).unwrap_or_default())
                .collect();
            let text = format!("{cmd}\n{conf}");
            assert!(text.contains("15899"), "{kind}: port in {text}");
            assert!(text.contains("/z/1.zone"), "{kind}: zone file in {text}");
            assert!(!text.contains("0.0.0.0"), "{kind}: loopback only");
        }
        let nsd = fs::read_to_string(dir.join("nsd/nsd.conf")).expect("nsd.conf");
        assert!(nsd.contains("rrl-ratelimit: 0"));
        let _ = fs::remove_dir_all(&dir);
    }

    /// RRL and cookies: Lode gets a TOML file beside its --zone arguments (or before
    /// its zones with an update key), Knot the modules in its default template;
    /// other servers refuse.
    /// A Lode launch of the tests: one zone, fake paths, in `dir`.
    fn test_launch(dir: &Path, kind: Kind, port: u16) -> Launch {
        Launch {
            kind,
            port,
            workers: 1,
            zones: vec![("1.e164.arpa.".to_owned(), PathBuf::from("/z/1.zone"))],
            dir: dir.join(kind.name()),
            log: dir.join("x.log"),
            cpu: 0,
            lode: PathBuf::from("/usr/bin/lode"),
            update_key: None,
            guard: Guard::default(),
            metrics: LodeMetrics::default(),
            socket_buffer: None,
        }
    }

    /// One socket buffer size: Lode and BIND are asked half of it (the kernel
    /// doubles a request), the echo gets it on its command line, Knot nothing.
    #[test]
    fn socket_buffers_are_asked() {
        let dir = std::env::temp_dir().join(format!("lode-bench-sockbuf-{}", std::process::id()));
        let launch = |kind: Kind| Launch {
            socket_buffer: Some(4 << 20),
            ..test_launch(&dir, kind, 15895)
        };
        let cmd = launch(Kind::Lode).command().expect("lode").join(" ");
        assert!(
            cmd.contains("--zone 1.e164.arpa.=/z/1.zone --config"),
            "{cmd}"
        );
        let conf = fs::read_to_string(dir.join("lode/lode.toml")).expect("lode.toml");
        let t: toml::Table = conf.parse().expect("TOML");
        assert_eq!(t["udp-receive-buffer"].as_integer(), Some(2 << 20));
        launch(Kind::Bind).command().expect("bind");
        let bind = fs::read_to_string(dir.join("bind/named.conf")).expect("named.conf");
        assert!(
            bind.contains("udp-receive-buffer 2097152;\n  udp-send-buffer 2097152;"),
            "{bind}"
        );
        let echo = launch(Kind::Echo).command().expect("echo").join(" ");
        assert!(echo.ends_with("--socket-buffer 4194304"), "{echo}");
        launch(Kind::Knot).command().expect("knot");
        let knot = fs::read_to_string(dir.join("knot/knot.conf")).expect("knot.conf");
        assert!(!knot.contains("buffer"), "{knot}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn guard_configurations_are_written() {
        let dir = std::env::temp_dir().join(format!("lode-bench-guard-{}", std::process::id()));
        let guard = Guard {
            rrl_rate: Some(10_000_000),
            cookie_secret: Some([0xab; 16]),
        };
        let launch = |kind: Kind, key: Option<lode_tsig::Key>| Launch {
            update_key: key,
            guard,
            ..test_launch(&dir, kind, 15897)
        };
        let cmd = launch(Kind::Lode, None).command().expect("lode").join(" ");
        assert!(cmd.contains("--zone 1.e164.arpa.=/z/1.zone"), "{cmd}");
        assert!(cmd.contains("--config"), "{cmd}");
        let conf = fs::read_to_string(dir.join("lode/lode.toml")).expect("lode.toml");
        let t: toml::Table = conf.parse().expect("TOML");
        assert_eq!(t["rrl"]["rate-limit"].as_integer(), Some(10_000_000));
        assert_eq!(
            t["cookies"]["secret"].as_str(),
            Some("ab".repeat(16).as_str())
        );
        let key = lode_tsig::Key::parse_spec("hmac-sha256:upd.:c2VjcmV0").expect("key");
        launch(Kind::Lode, Some(key)).command().expect("lode");
        let conf = fs::read_to_string(dir.join("lode/lode.toml")).expect("lode.toml");
        let t: toml::Table = conf.parse().expect("TOML");
        assert!(t.contains_key("rrl") && t.contains_key("zone"), "{conf}");
        launch(Kind::Knot, None).command().expect("knot");
        let knot = fs::read_to_string(dir.join("knot/knot.conf")).expect("knot.conf");
        assert!(knot.contains("mod-rrl:\n  - id: bench\n    rate-limit: 10000000\n"));
        assert!(knot.contains(&format!("secret: 0x{}", "ab".repeat(16))));
        assert!(knot.contains("global-module: [mod-cookies/bench, mod-rrl/bench]"));
        assert!(knot.find("mod-rrl:") < knot.find("template:"), "{knot}");
        assert!(launch(Kind::Nsd, None).command().is_err());
        let off = Guard::default();
        assert!(off.is_off() && off.lode_toml().is_empty());
        assert_eq!(off.knot_conf(), (String::new(), String::new()));
        let _ = fs::remove_dir_all(&dir);
    }

    /// Metrics off and on: Lode's top-level keys come before every table (also with
    /// RRL, and with an update key's keys, ACLs and zones); other servers refuse them.
    #[test]
    fn metrics_configurations_are_written() {
        let dir = std::env::temp_dir().join(format!("lode-bench-metrics-{}", std::process::id()));
        let listen: SocketAddr = "127.0.0.1:16786".parse().expect("addr");
        let launch = |kind: Kind, metrics: LodeMetrics, rrl: Option<u32>, key: bool| Launch {
            update_key: key
                .then(|| lode_tsig::Key::parse_spec("hmac-sha256:upd.:c2VjcmV0").expect("key")),
            guard: Guard {
                rrl_rate: rrl,
                cookie_secret: None,
            },
            metrics,
            ..test_launch(&dir, kind, 15896)
        };
        let conf = |l: &Launch| -> toml::Table {
            let cmd = l.command().expect("lode").join(" ");
            assert!(cmd.contains("--config"), "{cmd}");
            let text = fs::read_to_string(dir.join("lode/lode.toml")).expect("lode.toml");
            text.parse().expect("TOML")
        };
        let off = conf(&launch(Kind::Lode, LodeMetrics::off(), None, false));
        assert_eq!(off["query-counters"].as_bool(), Some(false));
        assert!(!off.contains_key("metrics-listen"));
        let on = conf(&launch(
            Kind::Lode,
            LodeMetrics::on(listen),
            Some(1000),
            false,
        ));
        assert_eq!(on["query-counters"].as_bool(), Some(true));
        assert_eq!(on["metrics-listen"].as_str(), Some("127.0.0.1:16786"));
        assert_eq!(on["rrl"]["rate-limit"].as_integer(), Some(1000));
        let upd = conf(&launch(
            Kind::Lode,
            LodeMetrics::on(listen),
            Some(1000),
            true,
        ));
        assert_eq!(upd["metrics-listen"].as_str(), Some("127.0.0.1:16786"));
        assert!(
            upd.get("journal-dir").is_some_and(|v| v.is_str()),
            "{upd:?}"
        );
        assert_eq!(upd["rrl"]["rate-limit"].as_integer(), Some(1000));
        assert_eq!(upd["zone"].as_array().map(Vec::len), Some(1));
        // Lode's defaults: no file at all.
        let _ = fs::remove_dir_all(&dir);
        let plain = launch(Kind::Lode, LodeMetrics::default(), None, false);
        assert!(!plain.command().expect("lode").contains(&"--config".into()));
        assert!(LodeMetrics::default().lode_toml().is_empty());
        assert!(launch(Kind::Knot, LodeMetrics::off(), None, false)
            .command()
            .is_err());
        let _ = fs::remove_dir_all(&dir);
    }

    /// With an update key: Lode gets a TOML file with journal, key and ACL; Knot an
    /// ACL and a journal; BIND allow-update, a journal in its folder and a zone copy.
    #[test]
    fn update_configurations_are_written() {
        let dir = std::env::temp_dir().join(format!("lode-bench-upd-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("dir");
        let zone = dir.join("1.zone");
        fs::write(&zone, "; a zone\n").expect("zone");
        let key = lode_tsig::Key::parse_spec("hmac-sha256:upd.:c2VjcmV0").expect("key");
        let text = |kind: Kind| {
            let l = Launch {
                kind,
                port: 15898,
                workers: 1,
                zones: vec![("1.e164.arpa.".to_owned(), zone.clone())],
                dir: dir.join(kind.name()),
                log: dir.join("x.log"),
                cpu: 0,
                lode: PathBuf::from("/usr/bin/lode"),
                update_key: Some(key.clone()),
                guard: Guard::default(),
                metrics: LodeMetrics::default(),
                socket_buffer: None,
            };
            let cmd = l.command().expect("command").join(" ");
            let conf: String = fs::read_dir(&l.dir)
                .expect("dir")
                .flatten()
                .filter(|e| {
                    e.path()
                        .extension()
                        .is_some_and(|x| x == "conf" || x == "toml")
                })
                .map(|e| fs::read_to_string(e.path()).unwrap_or_default())
                .collect();
            format!("{cmd}\n{conf}")
        };
        let lode = text(Kind::Lode);
        let parsed: toml::Table = lode
            .split_once('\n')
            .map(|(_, c)| c)
            .unwrap_or_default()
            .parse()
            .expect("TOML");
        assert!(parsed.get("journal-dir").is_some(), "{lode}");
        assert!(
            lode.contains("--config") && lode.contains("acl = [\"update\"]"),
            "{lode}"
        );
        assert!(lode.contains("secret = \"c2VjcmV0\""), "{lode}");
        let knot = text(Kind::Knot);
        assert!(knot.contains("action: update") && knot.contains("journal-content: changes"));
        assert!(knot.contains("zonefile-sync: -1"), "{knot}");
        let bind = text(Kind::Bind);
        assert!(bind.contains("allow-update { key \"upd.\"; }"), "{bind}");
        assert!(bind.contains("zone0.db.jnl"), "{bind}");
        assert!(bind.contains("category update { null; }"), "{bind}");
        assert!(dir.join("bind/zone0.db").exists(), "BIND's own copy");
        let _ = fs::remove_dir_all(&dir);
    }
}
