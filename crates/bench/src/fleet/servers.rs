//! The fleet's servers: a primary (Lode or Knot DNS) that takes signed UPDATEs,
//! keeps its history for IXFR and NOTIFYs every secondary; secondaries (Lode,
//! Knot DNS, NSD, BIND 9) that transfer from it with the same TSIG key. Each is
//! a lode-peers [`Spec`] (its configuration written by lode-peers) run in its
//! own namespace (`ip netns exec`), pinned with `taskset`, stopped by PID (its
//! process tree) when its guard is dropped.

use std::fs;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lode_peers::{self as peers, Acl, Action, Content, Logging, Ready, Server, Spec, Zone};

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

impl Role {
    /// Whether this is the primary.
    pub fn is_primary(&self) -> bool {
        self.zone_file.is_some()
    }

    /// The lode-peers description of this server: in its namespace, pinned to its
    /// CPU, stopped with this process, returned by [`Server::start`] as soon as
    /// started ([`Node::wait_listening`] then probes it from the bridge).
    pub fn spec(&self) -> Result<Spec, FleetError> {
        let kind = match (self.kind, self.is_primary()) {
            (Kind::Lode, _) => peers::Kind::Lode,
            (Kind::Knot, _) => peers::Kind::Knot,
            (Kind::Nsd, false) => peers::Kind::Nsd,
            (Kind::Bind, false) => peers::Kind::Bind,
            (k, _) => {
                return Err(FleetError::Config(format!(
                    "{k} cannot be a fleet {} (primaries: lode, knot; secondaries: lode, knot, nsd, bind)",
                    if self.is_primary() { "primary" } else { "secondary" }
                )))
            }
        };
        let mut spec = Spec::new(kind, self.port);
        spec.exec_under = Net::exec_in(&self.host, &[]);
        spec = spec.stop_with_parent();
        spec.label = Some(self.label());
        spec.addresses = vec![self.host.addr.into()];
        spec.dir = Some(self.dir.clone());
        spec.cpus = vec![self.cpu];
        spec.workers = Some(self.workers.max(1));
        spec.ready = Ready::Started;
        spec.stop_grace = Duration::from_secs(10);
        // Knot's own log file is read for its outgoing transfers (`full_transfers`).
        spec.logging = match self.kind {
            Kind::Knot => Logging::Verbose,
            _ => Logging::Plain,
        };
        let k = &self.key;
        // NSD and BIND were given the key's name without the final dot.
        let name = match self.kind {
            Kind::Nsd | Kind::Bind => k.name().to_string().trim_end_matches('.').to_string(),
            _ => k.name().to_string(),
        };
        spec = spec.key(peers::Key::new(
            &name,
            k.algorithm().name(),
            &k.secret_base64(),
        ));
        let net = format!(
            "{}.{}.{}.0/24",
            super::net::NET[0],
            super::net::NET[1],
            super::net::NET[2]
        );
        // Who may do what: the fleet's /24 with the key.
        let fleet = |actions: &[Action]| Acl::new("fleet", actions).from(&net).key(&name);
        let mut acls = vec!["fleet"];
        spec = spec.acl(match self.kind {
            Kind::Lode => fleet(&[Action::Transfer, Action::Update]),
            Kind::Knot => fleet(&[Action::Transfer, Action::Update, Action::Notify]),
            Kind::Nsd => fleet(&[Action::Transfer]),
            _ => fleet(&[Action::Transfer, Action::Notify]),
        });
        let mut zone = match &self.zone_file {
            Some(f) => Zone::primary(&self.zone, Content::File(f.clone())).notify(&self.peers),
            None => Zone::secondary(&self.zone, &self.peers),
        };
        match self.kind {
            Kind::Lode => {
                // LODE_FLEET_LOG=debug: the Lode servers' NOTIFY and transfer decisions.
                let log_level = std::env::var("LODE_FLEET_LOG").unwrap_or_else(|_| "info".into());
                spec.program = Some(self.lode.clone());
                spec.server_extra = format!(
                    "journal-max-depth = {JOURNAL_DEPTH}\nlog-level = \"{log_level}\"\n\
                     zonefile-sync = -1\n"
                );
                if self.is_primary() {
                    zone = zone.extra("notify-delay = 0\n");
                }
            }
            Kind::Knot => {
                spec.tcp_workers = Some(2);
                spec.background_workers = Some(2);
                zone = zone.extra(&format!(
                    "    journal-max-depth: {JOURNAL_DEPTH}\n    journal-max-usage: 4G\n    \
                     semantic-checks: off\n"
                ));
                if self.is_primary() {
                    zone = zone.extra("    zonefile-load: whole\n    serial-policy: increment\n");
                }
            }
            Kind::Nsd => {
                // NOTIFY only from the primary.
                let primary = self.peers.first().ok_or_else(|| {
                    FleetError::Config("an NSD secondary needs its primary".into())
                })?;
                let ip = primary.ip().to_string();
                spec = spec.acl(Acl::new("notify", &[Action::Notify]).from(&ip).key(&name));
                acls.push("notify");
            }
            _ => {}
        }
        Ok(spec.zone(zone.key(&name).acls(&acls)))
    }

    /// e.g. `secondary knot 10.53.0.12`.
    fn label(&self) -> String {
        let role = if self.is_primary() {
            "primary"
        } else {
            "secondary"
        };
        format!("{role} {} {}", self.kind, self.host.addr)
    }

    /// Starts the server in its namespace, pinned to its CPU.
    pub fn start(&self) -> Result<Node, FleetError> {
        let spec = self.spec()?;
        let server = Server::start(&spec)
            .map_err(|e| FleetError::Server(format!("{}: cannot start: {e}", self.label())))?;
        Ok(Node {
            kind: self.kind,
            addr: SocketAddr::from((self.host.addr, self.port)),
            label: self.label(),
            started: server.started(),
            dir: self.dir.clone(),
            server,
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
    /// When it was started.
    pub started: Instant,
    /// Its folder.
    pub dir: PathBuf,
    server: Server,
}

impl Node {
    /// The server's PID.
    pub fn pid(&self) -> u32 {
        self.server.pid()
    }

    /// Its processes (NSD forks).
    pub fn pids(&self) -> Vec<u32> {
        self.server.pids()
    }

    /// Waits until it answers a query for the zone's SOA (any RCODE), asked from
    /// the bridge's address; fails if it exits or `limit` passes.
    pub fn wait_listening(&mut self, zone: &str, limit: Duration) -> Result<(), FleetError> {
        let q = super::probe::query(zone, lode_wire::Rtype::SOA, 1)?;
        let sock = UdpSocket::bind((super::net::PROBER, 0))
            .map_err(|e| FleetError::io(Path::new("udp"), e))?;
        sock.set_read_timeout(Some(Duration::from_millis(100)))
            .map_err(|e| FleetError::io(Path::new("udp"), e))?;
        let mut buf = [0u8; 4096];
        let addr = self.addr;
        let answered = || {
            let _ = sock.send_to(&q, addr);
            if let Ok((n, _)) = sock.recv_from(&mut buf) {
                if n >= 12 && buf[..2] == q[..2] && buf[2] & 0x80 != 0 {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
            false
        };
        let dir = self.dir.display();
        self.server
            .wait_until(zone, limit, answered)
            .map(|_| ())
            .map_err(|e| {
                FleetError::Server(match e {
                    peers::Error::Exited { label, .. } => format!("{label} exited; see {dir}"),
                    peers::Error::NotReady { label, .. } => {
                        format!("{label} did not answer within {limit:?}; see {dir}")
                    }
                    e => e.to_string(),
                })
            })
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
        self.server.alive()
    }

    /// Stops it: SIGTERM to its processes, up to 10 s, then SIGKILL.
    pub fn stop(&mut self) {
        self.server.stop();
    }
}

/// The host part of a fleet address, for messages (`.11`).
pub fn short(addr: Ipv4Addr) -> String {
    format!(".{}", addr.octets()[3])
}
