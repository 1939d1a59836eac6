//! The servers compared: which options each is given (minimally, on 127.0.0.1,
//! in its own directory) as a lode-peers [`Spec`], whose writers make its
//! configuration and whose [`Server`] starts it (pinned to a CPU with `taskset`,
//! as root, in the foreground) and stops it by PID — also on errors, by a guard;
//! the load time is measured here, with a query of the data set.

use std::fmt;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lode_peers::{self as peers, Acl, Action, Content, Logging, Ready, Server, Spec, Zone};

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
/// `[cookies]` tables, Knot DNS's `mod-rrl` and `mod-cookies` as global modules
/// (written by lode-peers; other servers refuse them).
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
}

impl Launch {
    /// The lode-peers description of this server: pinned to its CPU, stopped with
    /// this process, logging at its ordinary level into [`Launch::log`], returned
    /// by [`Server::start`] as soon as started ([`Running::wait_ready`] then
    /// measures the load).
    pub fn spec(&self) -> Result<Spec, CompareError> {
        if !self.metrics.is_default() && self.kind != Kind::Lode {
            return Err(CompareError::Config(format!(
                "{}: query counters and metrics-listen are Lode's",
                self.kind
            )));
        }
        let w = self.workers.max(1);
        let kind = match self.kind {
            Kind::Echo => peers::Kind::Program,
            Kind::Lode => peers::Kind::Lode,
            Kind::Knot => peers::Kind::Knot,
            Kind::Nsd => peers::Kind::Nsd,
            Kind::Bind => peers::Kind::Bind,
            Kind::Pdns => peers::Kind::PowerDns,
        };
        let mut spec = Spec::new(kind, self.port).stop_with_parent();
        spec.label = Some(self.kind.name().into());
        spec.dir = Some(self.dir.clone());
        spec.stdio = Some(self.log.clone());
        spec.cpus = vec![self.cpu];
        spec.workers = Some(w);
        spec.ready = Ready::Started;
        spec.logging = Logging::Plain;
        spec.stop_grace = Duration::from_secs(10);
        spec.rrl_rate = self.guard.rrl_rate;
        spec.cookie_secret = self.guard.cookie_secret;
        // Half the kernel's size to the servers that take one (the kernel doubles it).
        if matches!(self.kind, Kind::Lode | Kind::Bind) {
            spec.socket_buffer = self.socket_buffer.map(|b| b as usize / 2);
        }
        if let Some(k) = &self.update_key {
            let name = k.name().to_string();
            spec = spec
                .key(peers::Key::new(
                    &name,
                    k.algorithm().name(),
                    &k.secret_base64(),
                ))
                .acl(Acl::new("update", &[Action::Update]).key(&name));
        }
        let updates = self.update_key.is_some();
        for (apex, file) in &self.zones {
            // BIND writes updated zones back to their files: its own copies.
            let content = match self.kind {
                Kind::Bind if updates => Content::Copy(file.clone()),
                _ => Content::File(file.clone()),
            };
            let mut zone = Zone::primary(apex, content).journal(updates);
            if updates {
                zone = zone.acls(&["update"]);
                if self.kind == Kind::Knot {
                    zone = zone.extra("    journal-max-usage: 4G\n");
                }
            }
            spec = spec.zone(zone);
        }
        match self.kind {
            Kind::Echo => {
                spec.program = Some(self.lode.clone());
                spec.zones.clear();
                spec.args = vec![
                    "echo".into(),
                    "--listen".into(),
                    format!("127.0.0.1:{}", self.port),
                    "--workers".into(),
                    w.to_string(),
                ];
                if let Some(b) = self.socket_buffer {
                    spec.args.extend(["--socket-buffer".into(), b.to_string()]);
                }
            }
            Kind::Lode => {
                spec.program = Some(self.lode.clone());
                // Info: the per-zone "loaded in" lines (read for the load-time table).
                spec.args = vec!["--log-level".into(), "info".into()];
                spec.server_extra = self.metrics.lode_toml();
                if updates {
                    // As Knot's zonefile-sync: -1: the zone file is not written back.
                    spec.server_extra.push_str("zonefile-sync = -1\n");
                }
            }
            Kind::Knot => spec.tcp_workers = Some(1),
            Kind::Nsd => spec.server_extra = "    tcp-count: 10\n".into(),
            Kind::Bind | Kind::Pdns => {}
        }
        Ok(spec)
    }

    /// Starts the server pinned to its CPU; stopped when the guard is dropped.
    pub fn start(&self) -> Result<Running, CompareError> {
        let spec = self.spec()?;
        check_port_free(self.port)?;
        let server = Server::start(&spec)
            .map_err(|e| CompareError::Server(format!("{}: cannot start: {e}", self.kind)))?;
        Ok(Running {
            kind: self.kind,
            addr: SocketAddr::from(([127, 0, 0, 1], self.port)),
            log: self.log.clone(),
            server,
        })
    }
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
    /// Its log file.
    pub log: PathBuf,
    server: Server,
}

impl Running {
    /// The PID of the server's main process (taskset and setpriv exec the server).
    pub fn pid(&self) -> u32 {
        self.server.pid()
    }

    /// The server's processes (the main one and any it forked).
    pub fn pids(&self) -> Vec<u32> {
        self.server.pids()
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
        let addr = self.addr;
        let answered = || {
            id = id.wrapping_add(1);
            let mut q = probe.get(0).to_vec();
            q[..2].copy_from_slice(&id.to_be_bytes());
            let _ = sock.send_to(&q, addr);
            let until = Instant::now() + Duration::from_millis(50);
            while Instant::now() < until {
                let Ok((n, _)) = sock.recv_from(&mut buf) else {
                    break;
                };
                if buf[..n].starts_with(&id.to_be_bytes())
                    && check_reply(&buf[..n], probe.question(0), expect) == Verdict::Valid
                {
                    return true;
                }
            }
            false
        };
        let (kind, log) = (self.kind, self.log.display());
        self.server
            .wait_until("the probe", limit, answered)
            .map_err(|e| {
                CompareError::Server(match e {
                    peers::Error::Exited { .. } => {
                        format!("{kind} exited before answering; see {log}")
                    }
                    peers::Error::NotReady { waited, .. } => format!(
                        "{kind} did not answer within {:.0} s; see {log}",
                        waited.as_secs_f64()
                    ),
                    e => format!("{kind}: {e}"),
                })
            })
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
        self.server.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::process::Command;

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

    /// The configuration files `l` makes (lode-peers writes them), concatenated.
    fn written(l: &Launch) -> Result<String, String> {
        let spec = l.spec().map_err(|e| e.to_string())?;
        spec.write_config().map_err(|e| e.to_string())?;
        let mut files: Vec<PathBuf> = fs::read_dir(&l.dir)
            .expect("dir")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        Ok(files
            .iter()
            .map(|p| fs::read_to_string(p).unwrap_or_default())
            .collect())
    }

    #[test]
    fn configurations_are_written() {
        let dir = std::env::temp_dir().join(format!("lode-bench-conf-{}", std::process::id()));
        for kind in Kind::SERVERS {
            let l = Launch {
                workers: 2,
                ..test_launch(&dir, kind, 15899)
            };
            let text = written(&l).expect("written");
            // Lode's port is on its command line.
            assert!(
                kind == Kind::Lode || text.contains("15899"),
                "{kind}: port in {text}"
            );
            assert!(text.contains("/z/1.zone"), "{kind}: zone file in {text}");
            assert!(!text.contains("0.0.0.0"), "{kind}: loopback only");
            let spec = l.spec().expect("spec");
            assert_eq!(spec.cpus, vec![0]);
            assert_eq!(spec.workers, Some(2));
        }
        let nsd = fs::read_to_string(dir.join("nsd/nsd.conf")).expect("nsd.conf");
        assert!(nsd.contains("rrl-ratelimit: 0") && nsd.contains("tcp-count: 10"));
        let knot = fs::read_to_string(dir.join("knot/knot.conf")).expect("knot.conf");
        assert!(knot.contains("tcp-workers: 1\n") && knot.contains("journal-content: none"));
        let _ = fs::remove_dir_all(&dir);
    }

    /// A launch of the tests: one zone, fake paths, in `dir`.
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
        let conf = written(&launch(Kind::Lode)).expect("lode");
        let t: toml::Table = conf.parse().expect("TOML");
        assert_eq!(t["udp-receive-buffer"].as_integer(), Some(2 << 20));
        let bind = written(&launch(Kind::Bind)).expect("bind");
        assert!(
            bind.contains("udp-receive-buffer 2097152;\n  udp-send-buffer 2097152;"),
            "{bind}"
        );
        let echo = launch(Kind::Echo).spec().expect("echo").args.join(" ");
        assert!(echo.ends_with("--socket-buffer 4194304"), "{echo}");
        let knot = written(&launch(Kind::Knot)).expect("knot");
        assert!(!knot.contains("buffer"), "{knot}");
        let nsd = written(&launch(Kind::Nsd)).expect("nsd");
        assert!(!nsd.contains("so-rcvbuf"), "NSD forces its own: {nsd}");
        let _ = fs::remove_dir_all(&dir);
    }

    /// RRL and cookies: Lode gets `[rrl]` and `[cookies]` tables (also with an
    /// update key), Knot the modules in its default template; NSD refuses.
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
        let conf = written(&launch(Kind::Lode, None)).expect("lode");
        let t: toml::Table = conf.parse().expect("TOML");
        assert_eq!(t["rrl"]["rate-limit"].as_integer(), Some(10_000_000));
        assert_eq!(
            t["cookies"]["secret"].as_str(),
            Some("ab".repeat(16).as_str())
        );
        let key = lode_tsig::Key::parse_spec("hmac-sha256:upd.:c2VjcmV0").expect("key");
        let conf = written(&launch(Kind::Lode, Some(key))).expect("lode");
        let t: toml::Table = conf.parse().expect("TOML");
        assert!(t.contains_key("rrl") && t.contains_key("zone"), "{conf}");
        let knot = written(&launch(Kind::Knot, None)).expect("knot");
        assert!(knot.contains("mod-rrl:\n  - id: peers\n    rate-limit: 10000000\n"));
        assert!(knot.contains(&format!("secret: 0x{}", "ab".repeat(16))));
        assert!(knot.contains("global-module: [ mod-cookies/peers, mod-rrl/peers ]"));
        assert!(knot.find("mod-rrl:") < knot.find("template:"), "{knot}");
        assert!(written(&launch(Kind::Nsd, None)).is_err());
        assert!(Guard::default().is_off());
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
        let conf = |l: &Launch| -> toml::Table { written(l).expect("lode").parse().expect("TOML") };
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
        // Lode's defaults: no such keys, no journal.
        let plain = conf(&launch(Kind::Lode, LodeMetrics::default(), None, false));
        assert!(!plain.contains_key("query-counters") && !plain.contains_key("journal-dir"));
        assert!(LodeMetrics::default().lode_toml().is_empty());
        assert!(launch(Kind::Knot, LodeMetrics::off(), None, false)
            .spec()
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
            written(&Launch {
                port: 15898,
                zones: vec![("1.e164.arpa.".to_owned(), zone.clone())],
                update_key: Some(key.clone()),
                ..test_launch(&dir, kind, 15898)
            })
            .expect("written")
        };
        let lode = text(Kind::Lode);
        let parsed: toml::Table = lode.parse().expect("TOML");
        assert!(parsed.get("journal-dir").is_some(), "{lode}");
        assert!(parsed.get("zonefile-sync").is_some(), "{lode}");
        assert!(lode.contains("acl = [\"update\"]"), "{lode}");
        assert!(lode.contains("secret = \"c2VjcmV0\""), "{lode}");
        let knot = text(Kind::Knot);
        assert!(knot.contains("action: [ update ]") && knot.contains("journal-content: changes"));
        assert!(knot.contains("zonefile-sync: -1") && knot.contains("journal-max-usage: 4G"));
        let bind = text(Kind::Bind);
        assert!(bind.contains("allow-update { key \"upd.\"; }"), "{bind}");
        assert!(bind.contains("zone0.jnl"), "{bind}");
        assert!(bind.contains("category update { null; }"), "{bind}");
        assert!(
            dir.join("bind/1.e164.arpa.zone").exists(),
            "BIND's own copy"
        );
        let _ = fs::remove_dir_all(&dir);
    }
}
