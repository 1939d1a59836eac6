//! Zone-transfer interop peers: real Knot DNS, NSD and BIND started as
//! SECONDARIES of a given primary, a Knot DNS PRIMARY that a test changes
//! with `knsupdate`, and the probes that judge them (SOA serial, AXFR
//! contents as a record multiset: `xfr_tools`, re-exported here; "did this
//! peer receive an IXFR").
//!
//! ```text
//!   knsupdate -y ──▶ primary (Knot today, Lode later) ──NOTIFY/IXFR──▶ Peer (knot | nsd | bind)
//!                        ▲                                               │
//!                        └──── kdig AXFR -y (axfr_records) ◀─────────────┘
//! ```
//!
//! Every process runs in its own [`TempDir`] with its own configuration,
//! pid and log files, listens on 127.0.0.1 only, and is stopped by its PID
//! when dropped (SIGTERM, then SIGKILL after 5 s: NSD forks helpers that
//! only a clean shutdown takes down). All transfers, NOTIFYs and updates are
//! signed with one hmac-sha256 key ([`TsigKey`]).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use lode_peers::{Acl, Action, Catalog, Content, Kind, Ready, Server, Spec, Zone};

use super::tap::XfrTap;
pub use super::xfr_tools::*;
use super::{pick_port_in, TempDir};

/// The loopback ports of the transfer interop tests (taps included).
pub const XFR_PORTS: (u16, u16) = (16100, 16199);

/// A TSIG key shared by a primary, its secondaries and the test's tools.
#[derive(Clone, Debug)]
pub struct TsigKey {
    /// Key name without the final dot (all three servers accept that form).
    pub name: String,
    /// Algorithm mnemonic as the configurations and `-y` spell it.
    pub algorithm: String,
    /// Base64 secret.
    pub secret: String,
}

impl TsigKey {
    /// The interop tests' key: `xfr-key`, hmac-sha256, a fixed 32-octet secret.
    pub fn test_key() -> TsigKey {
        TsigKey {
            name: "xfr-key".into(),
            algorithm: "hmac-sha256".into(),
            secret: "8+5gjWLaa1vXm1Z8Ah8HPj7mK6pTgfj0n6YJ7Ja4wGU=".into(),
        }
    }

    /// The same name and algorithm with another secret (a "wrong key").
    pub fn with_secret(&self, secret: &str) -> TsigKey {
        TsigKey {
            secret: secret.into(),
            ..self.clone()
        }
    }

    /// The `-y` argument of kdig and dig: `alg:name:secret`.
    pub fn y_arg(&self) -> String {
        format!("{}:{}:{}", self.algorithm, self.name, self.secret)
    }
}

/// The kinds of real servers the harness runs as secondaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecondaryKind {
    /// Knot DNS (`knotd`, Debian package `knot`).
    Knot,
    /// NSD (`nsd`, Debian package `nsd`).
    Nsd,
    /// BIND 9 (`named`, Debian package `bind9`).
    Bind,
    /// Lode itself (this build's `lode serve`); not in [`SecondaryKind::ALL`].
    Lode,
}

impl SecondaryKind {
    /// All three, in the order the tests start them.
    pub const ALL: [SecondaryKind; 3] =
        [SecondaryKind::Knot, SecondaryKind::Nsd, SecondaryKind::Bind];

    /// A short name for messages.
    pub fn label(self) -> &'static str {
        match self {
            SecondaryKind::Knot => "knot",
            SecondaryKind::Nsd => "nsd",
            SecondaryKind::Bind => "bind",
            SecondaryKind::Lode => "lode",
        }
    }

    /// The server program.
    pub fn program(self) -> &'static str {
        match self {
            SecondaryKind::Knot => "knotd",
            SecondaryKind::Nsd => "nsd",
            SecondaryKind::Bind => "named",
            SecondaryKind::Lode => "lode",
        }
    }

    /// The Debian package that holds [`Self::program`].
    pub fn package(self) -> &'static str {
        match self {
            SecondaryKind::Knot => "knot",
            SecondaryKind::Nsd => "nsd",
            SecondaryKind::Bind => "bind9",
            SecondaryKind::Lode => "lode",
        }
    }
}

/// `prog` from PATH, else from /usr/sbin or /sbin (not on every user's PATH).
pub fn sbin(prog: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(prog))
}

/// The programs the transfer tests need that are missing here (each with
/// its Debian package), among the servers of `kinds`, kdig and knsupdate.
pub fn missing_programs(kinds: &[SecondaryKind]) -> Vec<String> {
    let mut need: Vec<(&str, &str)> = kinds.iter().map(|k| (k.program(), k.package())).collect();
    need.push(("knotd", "knot"));
    need.push(("kdig", "knot-dnsutils"));
    need.push(("knsupdate", "knot-dnsutils"));
    let mut missing: Vec<String> = need
        .into_iter()
        .filter(|(prog, _)| !sbin(prog).is_file())
        .map(|(prog, pkg)| format!("{prog} (package {pkg})"))
        .collect();
    missing.dedup();
    missing
}

/// A server process of the harness, started by lode-peers in `dir` (its
/// state stays there until the daemon is dropped).
#[derive(Debug)]
struct Daemon {
    server: Server,
    dir: TempDir,
}

impl Daemon {
    /// Starts `spec` labelled `label` in `dir` and waits (20 s at most)
    /// until it answers for its zones.
    fn launch(label: String, mut spec: Spec, dir: TempDir) -> Result<Daemon, String> {
        spec.label = Some(label);
        spec.dir = Some(dir.0.clone());
        spec.ready_timeout = Duration::from_secs(20);
        if spec.kind == Kind::Lode {
            spec.program = Some(env!("CARGO_BIN_EXE_lode").into());
        }
        let server = Server::start(&spec).map_err(|e| e.to_string())?;
        Ok(Daemon { server, dir })
    }

    /// Starts `kind` with the whole configuration `config` (paths in
    /// `dir`), ready once it answers for `zone`.
    fn launch_text(
        label: String,
        kind: Kind,
        port: u16,
        config: String,
        dir: TempDir,
        zone: &str,
    ) -> Result<Daemon, String> {
        let mut spec = Spec::new(kind, port).zone(Zone::secondary(zone, &[]));
        spec.config = Some(config);
        spec.ready = Ready::Answering;
        Daemon::launch(label, spec, dir)
    }

    fn addr(&self) -> SocketAddr {
        self.server.addr()
    }
}

/// A real server running as a SECONDARY of one zone: it transfers from the
/// primary with the key, accepts NOTIFY signed with it from 127.0.0.1, and
/// serves AXFR to that key (so its contents can be dumped).
#[derive(Debug)]
pub struct Peer {
    /// Which server this is.
    pub kind: SecondaryKind,
    /// Where it listens (UDP and TCP).
    pub addr: SocketAddr,
    /// The zone (absolute, with the final dot).
    pub zone: String,
    /// The primary it transfers from.
    pub primary: SocketAddr,
    /// The tap between it and the primary (it is configured to transfer
    /// from the tap's address; NOTIFYs come straight from the primary).
    pub tap: XfrTap,
    daemon: Daemon,
}

impl Peer {
    /// Starts `kind` on 127.0.0.1:`port` as a secondary of `zone` from
    /// `primary` (through an [`XfrTap`] on another port of [`XFR_PORTS`]),
    /// and waits until it answers queries (not until it has the zone: use
    /// [`wait_serial`] for that).
    pub fn start(
        kind: SecondaryKind,
        zone: &str,
        primary: SocketAddr,
        key: &TsigKey,
        port: u16,
    ) -> Result<Peer, String> {
        let tap_port = distinct_ports(1, &[port, primary.port()])[0];
        Peer::start_with_tap(kind, zone, primary, key, port, tap_port)
    }

    /// [`Peer::start`] with its tap on 127.0.0.1:`tap_port`.
    pub fn start_with_tap(
        kind: SecondaryKind,
        zone: &str,
        primary: SocketAddr,
        key: &TsigKey,
        port: u16,
        tap_port: u16,
    ) -> Result<Peer, String> {
        Peer::start_kind(kind, zone, primary, key, port, tap_port, &[], "")
    }

    /// Starts a secondary of `kind` (its tap on `tap_port`), NOTIFYing
    /// `notify` (Lode only) and `extra` added to its configuration: a Lode
    /// zone's TOML lines (then whole tables, e.g. a `[[policy]]`), a Knot
    /// zone entry's YAML lines (indented four spaces).
    #[allow(clippy::too_many_arguments)]
    fn start_kind(
        kind: SecondaryKind,
        zone: &str,
        primary: SocketAddr,
        key: &TsigKey,
        port: u16,
        tap_port: u16,
        notify: &[SocketAddr],
        extra: &str,
    ) -> Result<Peer, String> {
        let zone = absolute(zone);
        let tap = XfrTap::start(primary, tap_port)?;
        let dir = TempDir::new(&format!("xfr-{}", kind.label()));
        let label = format!("{}@{port}", kind.label());
        let daemon = match kind {
            SecondaryKind::Lode => {
                let spec = lode_secondary(&zone, tap.addr, key, port, notify, extra);
                Daemon::launch(label, spec, dir)?
            }
            _ => {
                let spec = secondary_spec(kind, &zone, primary.ip(), tap.addr, key, port, extra);
                Daemon::launch(label, spec, dir)?
            }
        };
        Ok(Peer {
            kind,
            addr: daemon.addr(),
            zone,
            primary,
            tap,
            daemon,
        })
    }

    /// Starts `lode serve` as a secondary of `primary` (through a tap on
    /// `tap_port`), NOTIFYing `notify` after each change (a chain of
    /// secondaries), its state in its own directory.
    pub fn start_lode(
        zone: &str,
        primary: SocketAddr,
        key: &TsigKey,
        port: u16,
        tap_port: u16,
        notify: &[SocketAddr],
    ) -> Result<Peer, String> {
        Peer::start_lode_with(zone, primary, key, port, tap_port, notify, "")
    }

    /// [`Peer::start_lode`], `extra` added to the configuration (TOML lines
    /// of the zone's table, then whole tables, e.g. a `[[policy]]`).
    pub fn start_lode_with(
        zone: &str,
        primary: SocketAddr,
        key: &TsigKey,
        port: u16,
        tap_port: u16,
        notify: &[SocketAddr],
        extra: &str,
    ) -> Result<Peer, String> {
        let kind = SecondaryKind::Lode;
        Peer::start_kind(kind, zone, primary, key, port, tap_port, notify, extra)
    }

    /// Starts knotd as a secondary of `primary`, `extra` added to its zone
    /// entry (YAML lines indented four spaces, e.g.
    /// `    dnssec-validation: on\n`).
    pub fn start_knot_with(
        zone: &str,
        primary: SocketAddr,
        key: &TsigKey,
        port: u16,
        extra: &str,
    ) -> Result<Peer, String> {
        let tap_port = distinct_ports(1, &[port, primary.port()])[0];
        let kind = SecondaryKind::Knot;
        Peer::start_kind(kind, zone, primary, key, port, tap_port, &[], extra)
    }

    /// Starts knotd as a catalog consumer (RFC 9432, `catalog-role:
    /// interpret`) of `catalog` from `primary`: every member the catalog
    /// lists becomes a secondary zone of `primary` (Knot's catalog template).
    pub fn start_knot_catalog_consumer(
        catalog: &str,
        primary: SocketAddr,
        key: &TsigKey,
        port: u16,
        tap_port: u16,
    ) -> Result<Peer, String> {
        let zone = absolute(catalog);
        let tap = XfrTap::start(primary, tap_port)?;
        let dir = TempDir::new("xfr-knot-catalog");
        let mut spec = secondary_spec(
            SecondaryKind::Knot,
            &zone,
            primary.ip(),
            tap.addr,
            key,
            port,
            "",
        );
        spec.zones[0].catalog = Some(Catalog::Interpret);
        // (Its members answer once transferred: the catalog's reply is enough.)
        spec.ready = Ready::Answering;
        let daemon = Daemon::launch(format!("knot-catalog@{port}"), spec, dir)?;
        Ok(Peer {
            kind: SecondaryKind::Knot,
            addr: daemon.addr(),
            zone,
            primary,
            tap,
            daemon,
        })
    }

    /// Starts `lode serve` as a catalog consumer (`catalog-role =
    /// "interpret"`) of `catalog` from `primary`: its members become
    /// secondaries of `primary` (template "members").
    pub fn start_lode_catalog_consumer(
        catalog: &str,
        primary: SocketAddr,
        key: &TsigKey,
        port: u16,
        tap_port: u16,
    ) -> Result<Peer, String> {
        Peer::start_lode_catalog_consumer_with(catalog, primary, key, port, tap_port, "")
    }

    /// [`Peer::start_lode_catalog_consumer`], `template` added to the
    /// members' `[[template]]` (TOML lines, e.g. `dnssec-signing = true`).
    pub fn start_lode_catalog_consumer_with(
        catalog: &str,
        primary: SocketAddr,
        key: &TsigKey,
        port: u16,
        tap_port: u16,
        template: &str,
    ) -> Result<Peer, String> {
        let zone = absolute(catalog);
        let tap = XfrTap::start(primary, tap_port)?;
        let dir = TempDir::new("xfr-lode-catalog");
        let conf = format!(
            "journal-dir = \"journal\"\ncontrol = \"{}\"\nlog-level = \"debug\"\n\n\
             [[key]]\nid = \"{}\"\nalgorithm = \"{}\"\nsecret = \"{}\"\n\n\
             [[acl]]\nid = \"xfr-out\"\nkey = [\"{}\"]\naction = [\"transfer\"]\n\n\
             [[remote]]\nid = \"primary\"\naddress = [\"{}@{}\"]\nkey = \"{}\"\n\n\
             [[template]]\nid = \"members\"\nmaster = [\"primary\"]\nacl = [\"xfr-out\"]\n{template}\n\
             [[zone]]\nname = \"{zone}\"\nmaster = [\"primary\"]\nacl = [\"xfr-out\"]\ncatalog-role = \"interpret\"\ncatalog-template = [\"members\"]\n",
            dir.0.join("ctl.sock").display(),
            key.name,
            key.algorithm,
            key.secret,
            key.name,
            tap.addr.ip(),
            tap.addr.port(),
            key.name
        );
        let label = format!("lode-catalog@{port}");
        let daemon = Daemon::launch_text(label, Kind::Lode, port, conf, dir, &zone)?;
        Ok(Peer {
            kind: SecondaryKind::Lode,
            addr: daemon.addr(),
            zone,
            primary,
            tap,
            daemon,
        })
    }

    /// Starts the same server again in the same directory (after a stop or
    /// a kill): its state and timers are what it had.
    pub fn restart(&mut self) -> Result<(), String> {
        self.daemon.server.restart().map_err(|e| e.to_string())
    }

    /// Kills it with SIGKILL (no clean shutdown).
    pub fn kill9(&mut self) {
        self.daemon.server.kill9();
    }

    /// Runs `lode ARGS --control SOCKET` against a Lode peer's control socket.
    pub fn lode_control(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new(env!("CARGO_BIN_EXE_lode"))
            .args(args)
            .arg("--control")
            .arg(self.dir().join("ctl.sock"))
            .output()
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            Ok(text)
        } else {
            Err(text)
        }
    }

    /// A label for messages, e.g. `nsd@16101`.
    pub fn label(&self) -> &str {
        self.daemon.server.label()
    }

    /// The process ID.
    pub fn pid(&self) -> u32 {
        self.daemon.server.pid()
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        self.daemon.server.alive()
    }

    /// Its scratch directory (configuration, zone file, state, logs).
    pub fn dir(&self) -> &Path {
        &self.daemon.dir.0
    }

    /// Its whole log.
    pub fn log(&self) -> String {
        self.daemon.server.log()
    }

    /// The last `n` lines of its log.
    pub fn log_tail(&self, n: usize) -> String {
        self.daemon.server.log_tail(n)
    }

    /// Stops it now (SIGTERM by PID, then SIGKILL); dropping does the same.
    pub fn stop(&mut self) {
        self.daemon.server.stop();
    }
}

/// `n` distinct ports of [`XFR_PORTS`], free right now and not in `taken`.
pub fn distinct_ports(n: usize, taken: &[u16]) -> Vec<u16> {
    // Tests of one binary run in parallel: a port handed to one is never
    // handed to another, even before its server binds it.
    static HANDED: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut handed = HANDED.lock().unwrap_or_else(|e| e.into_inner());
    let mut v: Vec<u16> = Vec::with_capacity(n);
    for _ in 0..n * 10 + 100 {
        if v.len() == n {
            break;
        }
        let p = pick_port_in(XFR_PORTS.0, XFR_PORTS.1);
        if !taken.contains(&p) && !v.contains(&p) && !handed.contains(&p) {
            v.push(p);
        }
    }
    handed.extend_from_slice(&v);
    assert_eq!(v.len(), n, "not enough free ports in {XFR_PORTS:?}");
    v
}

/// `zone` with exactly one final dot.
pub(super) fn absolute(zone: &str) -> String {
    format!("{}.", zone.trim_end_matches('.'))
}

/// `zone` without the final dot (NSD and BIND configuration style).
fn relative(zone: &str) -> &str {
    zone.trim_end_matches('.')
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("write {}: {e}", path.display()))
}

/// `lode serve` as a secondary of `zone` on `port` (debug log),
/// transferring from `primary` with the key, allowing transfers and
/// updates to the key, NOTIFYing `notify`; `extra`: TOML lines of the
/// zone's table, then whole tables.
fn lode_secondary(
    zone: &str,
    primary: SocketAddr,
    key: &TsigKey,
    port: u16,
    notify: &[SocketAddr],
    extra: &str,
) -> Spec {
    let mut spec = Spec::new(Kind::Lode, port)
        .key(peer_key(key))
        .acl(Acl::new("xfr-out", &[Action::Transfer, Action::Update]).key(&key.name))
        .zone(
            Zone::secondary(zone, &[primary])
                .key(&key.name)
                .acls(&["xfr-out"])
                .notify(notify)
                .extra(extra),
        );
    spec.server_extra = "log-level = \"debug\"\n".into();
    spec
}

/// A Knot, NSD or BIND secondary of `zone` on `port`, transferring from
/// `source` with the key, taking NOTIFY signed with it from `notify_from`,
/// serving AXFR to the key; `extra` added to a Knot zone entry.
fn secondary_spec(
    kind: SecondaryKind,
    zone: &str,
    notify_from: IpAddr,
    source: SocketAddr,
    key: &TsigKey,
    port: u16,
    extra: &str,
) -> Spec {
    let kind = match kind {
        SecondaryKind::Knot => Kind::Knot,
        SecondaryKind::Nsd => Kind::Nsd,
        SecondaryKind::Bind => Kind::Bind,
        SecondaryKind::Lode => Kind::Lode,
    };
    let mut spec = Spec::new(kind, port)
        .key(peer_key(key))
        .acl(
            Acl::new("notify-in", &[Action::Notify])
                .from(&notify_from.to_string())
                .key(&key.name),
        )
        .acl(Acl::new("xfr-out", &[Action::Transfer]).key(&key.name))
        .zone(
            Zone::secondary(zone, &[source])
                .key(&key.name)
                .acls(&["notify-in", "xfr-out"])
                .extra(extra),
        );
    // Two TCP workers: transfers and probes at once.
    spec.workers = Some(if kind == Kind::Knot { 2 } else { 1 });
    spec
}

/// `key` as lode-peers spells it.
fn peer_key(key: &TsigKey) -> lode_peers::Key {
    lode_peers::Key::new(&key.name, &key.algorithm, &key.secret)
}

/// A `kind` primary of `zone` on `port` loaded from `file`, allowing
/// transfers and updates with the key from 127.0.0.1, NOTIFYing `notify`;
/// `extra` added to the zone's entry.
fn primary_spec(
    kind: Kind,
    zone: &str,
    file: PathBuf,
    key: &TsigKey,
    notify: &[SocketAddr],
    port: u16,
    extra: &str,
) -> Spec {
    let xfr_update = Acl::new("xfr-update", &[Action::Transfer, Action::Update]);
    Spec::new(kind, port)
        .key(peer_key(key))
        .acl(xfr_update.from("127.0.0.1").key(&key.name))
        .zone(
            Zone::primary(zone, Content::File(file))
                .key(&key.name)
                .acls(&["xfr-update"])
                .notify(notify)
                .extra(extra),
        )
}

/// Which server is the transfer PRIMARY of a test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrimaryKind {
    /// Knot DNS 3.2 (the reference).
    Knot,
    /// `lode serve` (once it can serve AXFR/IXFR and send NOTIFY).
    Lode,
}

/// A Knot DNS PRIMARY of one zone: loads the zone file, keeps a journal of
/// changes (so it serves IXFR), NOTIFYs the given secondaries, and allows
/// UPDATE and transfers to the key (change it with [`nsupdate`]).
#[derive(Debug)]
pub struct Primary {
    /// Which server this is.
    pub kind: PrimaryKind,
    /// Where it listens (UDP and TCP).
    pub addr: SocketAddr,
    /// The zone (absolute, with the final dot).
    pub zone: String,
    daemon: Daemon,
}

impl Primary {
    /// Starts knotd on 127.0.0.1:`port` as the primary of `zone` loaded
    /// from `zone_file` (copied into its directory), NOTIFYing `notify`,
    /// and waits until it serves the zone.
    pub fn start_knot(
        zone: &str,
        zone_file: &Path,
        key: &TsigKey,
        notify: &[SocketAddr],
        port: u16,
    ) -> Result<Primary, String> {
        let zone = absolute(zone);
        let dir = TempDir::new("xfr-knot-primary");
        let file = dir.0.join("primary.zone");
        std::fs::copy(zone_file, &file)
            .map_err(|e| format!("copy {}: {e}", zone_file.display()))?;
        let extra =
            "    zonefile-load: whole\n    semantic-checks: on\n    serial-policy: increment\n";
        let mut spec = primary_spec(Kind::Knot, &zone, file, key, notify, port, extra);
        spec.workers = Some(2);
        let daemon = Daemon::launch(format!("knot-primary@{port}"), spec, dir)?;
        let primary = Primary {
            kind: PrimaryKind::Knot,
            addr: daemon.addr(),
            zone,
            daemon,
        };
        if soa_serial(primary.addr, &primary.zone).is_none() {
            // Loaded a moment after it first answers: give it a second.
            wait_any_serial(primary.addr, &primary.zone, Duration::from_secs(10))
                .map_err(|e| format!("{e}\n{}", primary.log_tail(30)))?;
        }
        Ok(primary)
    }

    /// [`Primary::start_knot_catalog`] of members `names`, each zone file
    /// (`text` of the member's name) written into `dir` first.
    pub fn start_knot_catalog_of(
        dir: &Path,
        catalog: &str,
        names: &[&str],
        text: impl Fn(&str) -> String,
        key: &TsigKey,
        notify: SocketAddr,
        port: u16,
    ) -> Result<Primary, String> {
        let files: Vec<PathBuf> = names.iter().map(|m| dir.join(format!("{m}zone"))).collect();
        for (m, f) in names.iter().zip(&files) {
            write(f, &text(m))?;
        }
        let members: Vec<(&str, &Path)> = names
            .iter()
            .zip(&files)
            .map(|(n, f)| (*n, f.as_path()))
            .collect();
        Primary::start_knot_catalog(catalog, &members, key, notify, port)
    }

    /// Starts knotd as a catalog producer (`catalog-role: generate`) of
    /// `catalog` whose members are `members` (origin, zone file), each
    /// NOTIFYing `notify` and transferable with the key.
    pub fn start_knot_catalog(
        catalog: &str,
        members: &[(&str, &Path)],
        key: &TsigKey,
        notify: SocketAddr,
        port: u16,
    ) -> Result<Primary, String> {
        let zone = absolute(catalog);
        let dir = TempDir::new("xfr-knot-producer");
        let entry = |z: Zone| z.key(&key.name).acls(&["xfr"]).notify(&[notify]);
        let mut spec = Spec::new(Kind::Knot, port)
            .key(peer_key(key))
            .acl(Acl::new("xfr", &[Action::Transfer]).key(&key.name))
            .zone(entry(Zone::primary(&zone, Content::Storage)).catalog(Catalog::Generate));
        for (m, file) in members {
            let member = Zone::primary(m, Content::Copy(file.to_path_buf()));
            spec = spec.zone(entry(member).catalog(Catalog::Member(zone.clone())));
        }
        spec.workers = Some(2);
        // (Knot answers for a generated catalog only once a member has
        // made it: any reply will do; the consumer waits for the rest.)
        spec.ready = Ready::Answering;
        let daemon = Daemon::launch(format!("knot-producer@{port}"), spec, dir)?;
        let primary = Primary {
            kind: PrimaryKind::Knot,
            addr: daemon.addr(),
            zone,
            daemon,
        };
        Ok(primary)
    }

    /// Starts `lode serve` on 127.0.0.1:`port` as the primary of `zone`
    /// loaded from `zone_file` (copied into its directory): a journal, one
    /// ACL allowing update and transfer with the key, NOTIFY to `notify`.
    pub fn start_lode(
        zone: &str,
        zone_file: &Path,
        key: &TsigKey,
        notify: &[SocketAddr],
        port: u16,
    ) -> Result<Primary, String> {
        Primary::start_lode_with(zone, zone_file, key, notify, port, "")
    }

    /// [`Primary::start_lode`] with `global` (top-level TOML lines, e.g.
    /// `journal-max-depth = 1000`) in its configuration.
    pub fn start_lode_with(
        zone: &str,
        zone_file: &Path,
        key: &TsigKey,
        notify: &[SocketAddr],
        port: u16,
        global: &str,
    ) -> Result<Primary, String> {
        let zone = absolute(zone);
        let dir = TempDir::new("xfr-lode-primary");
        let file = dir.0.join("primary.zone");
        std::fs::copy(zone_file, &file)
            .map_err(|e| format!("copy {}: {e}", zone_file.display()))?;
        let extra = "zonefile-sync = -1\n";
        let mut spec = primary_spec(Kind::Lode, &zone, file, key, notify, port, extra);
        spec.server_extra = format!("log-level = \"debug\"\n{global}\n");
        let daemon = Daemon::launch(format!("lode-primary@{port}"), spec, dir)?;
        let primary = Primary {
            kind: PrimaryKind::Lode,
            addr: daemon.addr(),
            zone,
            daemon,
        };
        wait_any_serial(primary.addr, &primary.zone, Duration::from_secs(10))
            .map_err(|e| format!("{e}\n{}", primary.log_tail(30)))?;
        Ok(primary)
    }

    /// A label for messages.
    pub fn label(&self) -> &str {
        self.daemon.server.label()
    }

    /// Kills a Lode primary with SIGKILL and starts it again in the same
    /// directory (its journal and files as the kill left them); waits
    /// until it serves the zone.
    pub fn kill9_and_restart(&mut self) -> Result<(), String> {
        self.daemon.server.kill9();
        self.daemon.server.restart().map_err(|e| e.to_string())?;
        wait_any_serial(self.addr, &self.zone, Duration::from_secs(10))
            .map(|_| ())
            .map_err(|e| format!("{e}\n{}", self.log_tail(30)))
    }

    /// The process ID.
    pub fn pid(&self) -> u32 {
        self.daemon.server.pid()
    }

    /// Its whole log.
    pub fn log(&self) -> String {
        self.daemon.server.log()
    }

    /// The last `n` lines of its log.
    pub fn log_tail(&self, n: usize) -> String {
        self.daemon.server.log_tail(n)
    }

    /// Stops it now (SIGTERM by PID, then SIGKILL); dropping does the same.
    pub fn stop(&mut self) {
        self.daemon.server.stop();
    }

    /// Its own directory (configuration, zone file `primary.zone`, logs).
    pub fn dir(&self) -> &Path {
        &self.daemon.dir.0
    }

    /// Runs `knotc` on this knotd's control socket, e.g. `["zone-purge",
    /// "-f", "example.com.", "+journal"]` to drop its IXFR history (then
    /// secondaries must fall back to AXFR); returns its output.
    pub fn knotc(&self, args: &[&str]) -> Result<String, String> {
        self.daemon.server.knotc(args)
    }
}

/// Whether `peer` has received at least one incremental transfer (an IXFR
/// answered with changes, not AXFR-style), from its own log where the
/// server logs the kind of transfer it received:
/// - Knot 3.2: `[zone] IXFR, incoming, remote ..., finished, ...` (info);
/// - BIND 9.18: `transfer of 'zone/IN' from ...: got incremental response`
///   (xfer-in at debug 3, hence `-d 3` and `severity debug 3`);
/// - NSD 4.6 logs no transfer kind at any verbosity (only "received update
///   to serial N"), so for NSD the peer's [`XfrTap`] judges the replies.
pub fn received_ixfr(peer: &Peer) -> bool {
    ixfr_count(peer) > 0
}

/// How many incremental transfers `peer` received (see [`received_ixfr`]).
pub fn ixfr_count(peer: &Peer) -> usize {
    let log = peer.log();
    let lines = |f: &dyn Fn(&str) -> bool| log.lines().filter(|l| f(l)).count();
    match peer.kind {
        SecondaryKind::Knot => lines(&|l| l.contains("IXFR, incoming") && l.contains("finished")),
        SecondaryKind::Bind => lines(&|l| l.contains("got incremental response")),
        SecondaryKind::Nsd => peer.tap.incremental(),
        SecondaryKind::Lode => lines(&|l| l.contains(": IXFR from ") && l.contains("changesets")),
    }
}
