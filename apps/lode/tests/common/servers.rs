//! The servers the system tests start (`knotd`, `lode serve`, and the
//! configurations tests write themselves), all through lode-peers: a
//! typed [`Spec`], bounded readiness by SOA queries, the log's tail in
//! errors, stop by PID when dropped.

use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lode_peers::{Content, Kind, Ready, Spec, Zone};

use super::{pick_port, repo_root, zones_in, ZoneSpec};

/// One of Knot's tools (`keymgr`, `knotc`): Debian's in /usr/sbin, else
/// from PATH.
pub fn knot_tool(name: &str) -> String {
    let sbin = format!("/usr/sbin/{name}");
    if Path::new(&sbin).exists() {
        sbin
    } else {
        name.to_string()
    }
}

/// True when `knotd` is installed; the suites that need it skip (loudly)
/// without it, unless `LODE_REQUIRE_KNOT=1` (set by scripts/test.sh) makes
/// its absence a failure.
pub fn knot_available() -> bool {
    lode_peers::installed_or_skip(Kind::Knot).is_some()
}

/// True when Knot's program `program` (called `name`, from the Debian
/// package `package`) runs; like [`knot_available`], its absence skips
/// loudly, or fails under `LODE_REQUIRE_KNOT=1`.
pub fn knot_program_available(program: &str, name: &str, package: &str) -> bool {
    let ok = std::process::Command::new(program)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        if std::env::var("LODE_REQUIRE_KNOT").as_deref() == Ok("1") {
            panic!("{name} is not installed but LODE_REQUIRE_KNOT=1");
        }
        eprintln!("SKIPPED: {name} (Debian package `{package}`) is not installed");
    }
    ok
}

/// Which server a test talks to as "the server under test".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// `lode serve` (the default).
    Lode,
    /// A second knotd: proves the harness itself (knot against knot must be clean).
    Knot,
}

/// The peer chosen by `LODE_DIFF_PEER` (`knot` or `lode`, default `lode`).
pub fn peer_from_env() -> Peer {
    match std::env::var("LODE_DIFF_PEER").as_deref() {
        Ok("knot") => Peer::Knot,
        _ => Peer::Lode,
    }
}

/// A server a test started through lode-peers (its methods: `pid`, `log`,
/// `log_tail`, `alive`, `kill9`, `restart`, `dir`, `knotc`, …); stopped
/// by its PID when dropped.
#[derive(Debug)]
pub struct Server {
    /// What runs, e.g. `knotd@15300`.
    pub label: String,
    /// Where it listens (UDP and TCP).
    pub addr: SocketAddr,
    inner: lode_peers::Server,
}

impl Server {
    /// Starts `spec` and waits until it is ready (see [`server_spec`]).
    pub fn start(spec: Spec) -> Result<Server, String> {
        let inner = lode_peers::Server::start(&spec).map_err(|e| e.to_string())?;
        Ok(Server {
            label: inner.label().to_string(),
            addr: inner.addr(),
            inner,
        })
    }

    /// Waits until the log holds `needle` (panics with `what` and the
    /// log's tail after 20 s).
    pub fn wait_log(&self, needle: &str, what: &str) {
        if let Err(e) = self.inner.wait_log(needle, Duration::from_secs(20)) {
            panic!("{what}: {e}");
        }
    }
}

impl Deref for Server {
    type Target = lode_peers::Server;

    fn deref(&self) -> &lode_peers::Server {
        &self.inner
    }
}

impl DerefMut for Server {
    fn deref_mut(&mut self) -> &mut lode_peers::Server {
        &mut self.inner
    }
}

static START_TIMEOUT_SECS: AtomicU64 = AtomicU64::new(30);

/// How long the servers described after this call may take to serve their
/// zones (30 s unless set: large zones take longer).
pub fn set_start_timeout(t: Duration) {
    START_TIMEOUT_SECS.store(t.as_secs().max(1), Ordering::SeqCst);
}

/// A `kind` server on 127.0.0.1:`port` labelled `knotd@PORT` or
/// `lode@PORT` (Lode: this build's), ready within the start timeout (see
/// [`set_start_timeout`]).
pub fn server_spec(kind: Kind, port: u16) -> Spec {
    let mut s = Spec::new(kind, port);
    if kind == Kind::Lode {
        s.program = Some(env!("CARGO_BIN_EXE_lode").into());
    }
    s.label = Some(format!("{}@{port}", kind.program()));
    s.ready_timeout = Duration::from_secs(START_TIMEOUT_SECS.load(Ordering::SeqCst));
    s
}

/// knotd started on the configuration file `conf` the test wrote (it
/// listens on 127.0.0.1:`port`; its directory is `conf`'s), once it
/// answers; the test waits for its zones itself.
pub fn spawn_knotd(conf: &Path, port: u16) -> Server {
    let mut s = server_spec(Kind::Knot, port);
    s.config_file = Some(conf.into());
    s.dir = conf.parent().map(Path::to_path_buf);
    s.ready = Ready::Answering;
    Server::start(s).unwrap_or_else(|e| panic!("{e}"))
}

/// `lode serve --config CONF` (a file the test wrote, used in place so that
/// a reload rereads it) on 127.0.0.1:`port`, two UDP workers, its output in
/// `log`; waits until every origin of `origins` answers NOERROR, AA, with
/// its SOA. Nothing is removed when it is dropped: a test can start a
/// server again on the same configuration (and journal).
pub fn start_lode_config(
    conf: &Path,
    port: u16,
    log: &Path,
    origins: &[&str],
) -> Result<Server, String> {
    let mut s = server_spec(Kind::Lode, port);
    s.config_file = Some(conf.into());
    s.dir = conf.parent().map(Path::to_path_buf);
    s.stdio = Some(log.into());
    s.workers = Some(2);
    s.zones = origins
        .iter()
        .map(|o| Zone::primary(o, Content::Storage))
        .collect();
    Server::start(s)
}

/// The CH TXT `id.server` answer of both servers in the comparisons.
pub const IDENTITY: &str = "diff-identity";
/// The CH TXT `version.bind` answer of both servers in the comparisons.
pub const VERSION: &str = "diff-version";
/// The NSID of both servers in the comparisons.
pub const NSID: &str = "diff-nsid";

/// The knotd of the comparisons: it mirrors Lode's defaults.
///
/// Knot 3.2's own defaults already match most of them (udp-max-payload 1232,
/// no RRL module, answer-rotation off, zonefile-load whole); identity,
/// version and NSID are set to [`IDENTITY`], [`VERSION`] and [`NSID`] in
/// both servers (their defaults name the software and the host). Also on
/// [::1] when `v6`.
pub fn knot_spec(zones: &[ZoneSpec], port: u16, v6: bool) -> Spec {
    let mut s = server_spec(Kind::Knot, port);
    if v6 {
        s = s.with_v6();
    }
    s.workers = Some(2);
    s.server_extra = format!(
        "    identity: \"{IDENTITY}\"\n    version: \"{VERSION}\"\n    nsid: \"{NSID}\"\n    \
         udp-max-payload: 1232\n    tcp-idle-timeout: 10\n    answer-rotation: off\n"
    );
    s.template_extra =
        "    semantic-checks: on\n    zonefile-load: whole\n    dnssec-signing: off\n".into();
    s.zones = zones
        .iter()
        .map(|z| Zone::primary(&z.origin, Content::File(z.file.clone())).journal(false))
        .collect();
    s
}

/// Starts knotd on 127.0.0.1:`port` serving `zones`, and waits until it answers.
pub fn start_knot(zones: &[ZoneSpec], port: u16) -> Result<Server, String> {
    start_knot_on(zones, port, false)
}

/// Starts knotd on 127.0.0.1:`port`, and also on [::1]:`port` when `v6`.
pub fn start_knot_on(zones: &[ZoneSpec], port: u16, v6: bool) -> Result<Server, String> {
    retry_if_port_taken(port, |p| Server::start(knot_spec(zones, p, v6)))
}

/// Runs `start` on `port`; when the server could not bind because the port
/// was taken between [`pick_port`] and its start, tries again (twice at
/// most) on another port of the same range.
fn retry_if_port_taken(
    port: u16,
    start: impl Fn(u16) -> Result<Server, String>,
) -> Result<Server, String> {
    let base = port - (port - 15300) % 50;
    let mut port = port;
    for attempt in 0.. {
        match start(port) {
            Err(e) if attempt < 2 && e.to_lowercase().contains("address already in use") => {
                eprintln!("port {port} was taken, trying another one");
                port = pick_port(base);
            }
            other => return other,
        }
    }
    unreachable!("the loop returns on its third attempt")
}

/// Starts knotd on 127.0.0.1:`port` serving `zones` as [`knot_spec`] says
/// plus `top` (whole sections, e.g. an `acl:` list, placed before the
/// template) and `per_zone` (lines added to every zone entry, e.g.
/// `    acl: upd`).
pub fn start_knot_with(
    zones: &[ZoneSpec],
    port: u16,
    top: &str,
    per_zone: &str,
) -> Result<Server, String> {
    let mut s = knot_spec(zones, port, false);
    s.sections = top.into();
    s.zones = s.zones.into_iter().map(|z| z.extra(per_zone)).collect();
    Server::start(s)
}

/// Starts `lode serve` on 127.0.0.1:`port` serving `zones`, and waits until it answers.
pub fn start_lode(zones: &[ZoneSpec], port: u16) -> Result<Server, String> {
    start_lode_on(zones, port, false)
}

/// Starts `lode serve` on 127.0.0.1:`port`, and also on [::1]:`port` when
/// `v6`; two UDP workers, its own control socket in its scratch directory;
/// ready once every zone gets a reply (one it answers wrongly is still
/// compared).
pub fn start_lode_on(zones: &[ZoneSpec], port: u16, v6: bool) -> Result<Server, String> {
    retry_if_port_taken(port, |p| {
        let mut s = server_spec(Kind::Lode, p);
        if v6 {
            s = s.with_v6();
        }
        s.workers = Some(2);
        s.server_extra = suite_identity();
        s.zones = zones
            .iter()
            .map(|z| Zone::primary(&z.origin, Content::File(z.file.clone())))
            .collect();
        s.ready = Ready::Answering;
        Server::start(s)
    })
}

/// Lode's `identity`, `version` and `nsid` of the comparisons.
fn suite_identity() -> String {
    format!("identity = \"{IDENTITY}\"\nversion = \"{VERSION}\"\nnsid = \"{NSID}\"\n")
}

/// Starts the server under test (see [`peer_from_env`]).
pub fn start_peer(peer: Peer, zones: &[ZoneSpec], port: u16) -> Result<Server, String> {
    start_peer_on(peer, zones, port, false)
}

/// Starts the server under test, also on [::1] when `v6`.
pub fn start_peer_on(
    peer: Peer,
    zones: &[ZoneSpec],
    port: u16,
    v6: bool,
) -> Result<Server, String> {
    match peer {
        Peer::Lode => start_lode_on(zones, port, v6),
        Peer::Knot => start_knot_on(zones, port, v6),
    }
}

/// Starts `lode serve` on 127.0.0.1:`port` with the differential suite's
/// zones (tests/differential/zones) and the suite's identity, `top` added to
/// the configuration's top level (e.g. `listen-tls`), all in `dir` (its
/// output in `lode.log` there); waits until every zone answers.
pub fn start_lode_with_suite(dir: &Path, port: u16, top: &str) -> Server {
    let zones = zones_in(&repo_root().join("tests/differential/zones"));
    let mut s = server_spec(Kind::Lode, port);
    s.dir = Some(dir.into());
    s.stdio = Some(dir.join("lode.log"));
    s.workers = Some(2);
    s.server_extra = format!("{top}\n{}", suite_identity());
    s.zones = zones
        .iter()
        .map(|z| Zone::primary(&z.origin, Content::File(z.file.clone())))
        .collect();
    Server::start(s).unwrap_or_else(|e| panic!("{e}"))
}
