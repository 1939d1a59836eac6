//! The Lode daemon: configuration, zone lifecycle, publication, control.
//!
//! ```text
//!  Config (TOML + command line) ──▶ Reloader ── load each zone (zonefile → ZoneBuilder → Zone)
//!                                      │
//!                                      ▼  one atomic pointer swap
//!                        ArcSwap<ZoneSet> ◀── read per datagram / TCP message by
//!                                      │       UDP workers and TCP tasks (lode-io),
//!                                      │       which call lode_engine::answer
//!  SIGHUP ─┐                           │
//!  control ┴──▶ reload request ─▶ Reloader thread: re-read the config, re-load changed
//!  socket        (with reply)      zones in the background, swap in the new set
//! ```
//!
//! Readers never lock: a query holds the `ZoneSet` it started with until it is
//! answered, and an old set is freed when its last reader leaves. Reloads are
//! serialised on one thread; the zones of one (re)load are read in parallel,
//! one zone per thread, up to one thread per CPU. During a reload the old and
//! the new version of a changed zone are both in memory. A zone that fails to load at start is not served
//! (the others are); a zone that fails to reload keeps its old version. Start
//! fails only when zones were configured and none loaded, or a socket cannot
//! be bound.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod control;
pub mod demo;
pub mod progress;
pub mod snapshot;
pub mod zones;

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use arc_swap::ArcSwap;
use lode_engine::{Settings, Transport};
use lode_io::{
    Client, StreamReply, TcpConfig, TcpCounters, TcpServer, UdpConfig, UdpCounters, UdpServer,
};
use lode_wire::rcode;
use lode_zonedb::{Zone, ZoneSet};

pub use config::{Config, ConfigError, ConfigFile, Options, ZoneSource, ZoneSpec};
pub use control::Reply;

/// Why the server did not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServerError {
    /// The configuration is not usable.
    Config(ConfigError),
    /// Zones were configured and none could be loaded.
    NoZone,
    /// A socket could not be bound or a thread started.
    Io(lode_io::IoError),
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerError::Config(e) => write!(f, "configuration: {e}"),
            ServerError::NoZone => f.write_str("no zone could be loaded (errors above)"),
            ServerError::Io(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ServerError {}

/// A zone being served, with what it was loaded from.
#[derive(Debug, Clone)]
struct Served {
    spec: ZoneSpec,
    files: Vec<(PathBuf, Option<zones::FileStamp>)>,
    zone: Arc<Zone>,
}

/// A zone that could not be (re)loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneFailure {
    /// The zone's origin.
    pub zone: String,
    /// True when its previous version is still served.
    pub kept_old: bool,
    /// Every problem, `file:line: reason`.
    pub errors: Vec<String>,
}

/// What a reload did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadReport {
    /// Zones read again (changed, new or forced).
    pub loaded: Vec<String>,
    /// Zones whose files (zone file and includes) were unchanged (same
    /// modification time and size), not read again.
    pub unchanged: Vec<String>,
    /// Zones no longer configured, now not served.
    pub removed: Vec<String>,
    /// Zones that failed.
    pub failed: Vec<ZoneFailure>,
    /// The configuration could not be read: nothing was changed.
    pub config_error: Option<String>,
}

impl ReloadReport {
    /// True when everything configured is served at its newest version.
    pub fn is_ok(&self) -> bool {
        self.failed.is_empty() && self.config_error.is_none()
    }

    /// The report as lines of text (for `lode reload`).
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        if let Some(e) = &self.config_error {
            s.push_str(&format!("configuration not reloaded: {e}\n"));
        }
        for z in &self.loaded {
            s.push_str(&format!("zone {z}: reloaded\n"));
        }
        for z in &self.unchanged {
            s.push_str(&format!("zone {z}: unchanged\n"));
        }
        for z in &self.removed {
            s.push_str(&format!("zone {z}: removed\n"));
        }
        for f in &self.failed {
            let what = if f.kept_old {
                "failed, previous version still served"
            } else {
                "failed, not served"
            };
            s.push_str(&format!("zone {}: {what}\n", f.zone));
            for e in &f.errors {
                s.push_str(&format!("  {e}\n"));
            }
        }
        s
    }
}

/// A request to the reloader thread; the report goes to `reply` if any.
struct ReloadRequest {
    reply: Option<mpsc::Sender<ReloadReport>>,
}

/// Owns the served zones and the options; runs every (re)load.
struct Reloader {
    options: Options,
    running: Config,
    served: Vec<Served>,
    published: Arc<ArcSwap<ZoneSet>>,
}

impl Reloader {
    /// Loads the configured zones, reusing unchanged ones, and publishes the set.
    fn load(&mut self, config: &Config, initial: bool) -> ReloadReport {
        let mut report = ReloadReport::default();
        let mut next: Vec<Served> = Vec::with_capacity(config.zones.len());
        let olds: Vec<Option<&Served>> = config
            .zones
            .iter()
            .map(|spec| self.served.iter().find(|s| s.spec.name == spec.name))
            .collect();
        let to_load: Vec<&ZoneSpec> = config
            .zones
            .iter()
            .zip(&olds)
            .filter(|(spec, old)| !old.is_some_and(|o| unchanged(o, spec)))
            .map(|(spec, _)| spec)
            .collect();
        let mut results = zones::load_all(&to_load, config.snapshot_dir.as_deref()).into_iter();
        for (spec, old) in config.zones.iter().zip(olds) {
            let name = spec.name.to_string();
            if let Some(old) = old.filter(|o| unchanged(o, spec)) {
                report.unchanged.push(name);
                next.push(old.clone());
                continue;
            }
            // One result per zone to load, in order.
            let Some(result) = results.next() else {
                continue;
            };
            match result {
                Ok(l) => {
                    let z = &l.zone;
                    tracing::info!(
                        "zone {name}: {} records, {} names, serial {}, loaded in {} from {}",
                        z.record_count(),
                        z.node_count(),
                        z.serial(),
                        format_duration(l.elapsed),
                        spec.source
                    );
                    for w in &l.warnings {
                        tracing::warn!("{w}");
                    }
                    report.loaded.push(name);
                    // Random lookups over a large index: fewer TLB misses
                    // on huge pages.
                    for (addr, len) in l.zone.memory_regions() {
                        lode_io::mem::prefer_huge_pages(addr, len);
                    }
                    next.push(Served {
                        spec: spec.clone(),
                        files: l.files,
                        zone: l.zone,
                    });
                }
                Err(errors) => {
                    let kept_old = old.is_some();
                    if kept_old {
                        tracing::error!(
                            "zone {name}: reload failed ({}), previous version still served",
                            count_errors(errors.len())
                        );
                    } else {
                        tracing::error!(
                            "zone {name}: load failed ({}), not served",
                            count_errors(errors.len())
                        );
                    }
                    for e in &errors {
                        tracing::error!("{e}");
                    }
                    if let Some(old) = old {
                        next.push(old.clone());
                    }
                    report.failed.push(ZoneFailure {
                        zone: name,
                        kept_old,
                        errors,
                    });
                }
            }
        }
        for old in &self.served {
            if !next.iter().any(|n| n.spec.name == old.spec.name) {
                tracing::info!("zone {}: no longer configured, removed", old.spec.name);
                report.removed.push(old.spec.name.to_string());
            }
        }
        let mut set = ZoneSet::new();
        for s in &next {
            set.insert(s.zone.clone());
        }
        self.published.store(Arc::new(set));
        self.served = next;
        if !initial {
            tracing::info!(
                "reload done: {} reloaded, {} unchanged, {} removed, {} failed",
                report.loaded.len(),
                report.unchanged.len(),
                report.removed.len(),
                report.failed.len()
            );
        }
        log_memory();
        report
    }

    /// Re-reads the configuration and reloads the zones.
    fn reload(&mut self) -> ReloadReport {
        tracing::info!("reloading");
        let config = match Config::resolve(&self.options) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!("reload: configuration: {e}; nothing changed");
                return ReloadReport {
                    config_error: Some(e.to_string()),
                    ..ReloadReport::default()
                };
            }
        };
        let r = &self.running;
        if config.listen != r.listen
            || config.workers != r.workers
            || config.max_udp_payload != r.max_udp_payload
            || config.tcp_idle_timeout != r.tcp_idle_timeout
            || config.tcp_max_clients != r.tcp_max_clients
            || config.control != r.control
            || config.log_level != r.log_level
        {
            tracing::warn!(
                "reload: listen, workers, max-udp-payload, tcp-*, control and log-level changes take effect at restart"
            );
        }
        self.load(&config, false)
    }
}

/// True when `old` was loaded from the same source, unchanged since.
fn unchanged(old: &Served, spec: &ZoneSpec) -> bool {
    if old.spec.source != spec.source {
        return false;
    }
    match &spec.source {
        ZoneSource::Embedded { .. } => true,
        // Every file read (zone file and includes) has the same stamp as then.
        ZoneSource::File(_) => {
            !old.files.is_empty()
                && old
                    .files
                    .iter()
                    .all(|(p, s)| s.is_some() && *s == zones::FileStamp::of(p))
        }
    }
}

fn count_errors(n: usize) -> String {
    if n == 1 {
        "1 error".into()
    } else {
        format!("{n} errors")
    }
}

fn format_duration(d: Duration) -> String {
    if d.as_secs() >= 1 {
        format!("{:.2} s", d.as_secs_f64())
    } else {
        format!("{:.3} ms", d.as_secs_f64() * 1000.0)
    }
}

/// The process's resident memory in KiB (VmRSS), if known.
pub fn resident_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn log_memory() {
    // Parsing leaves freed blocks in the allocator's heaps: give them back
    // before measuring, so the figure is what the zones hold.
    lode_io::mem::trim_heap();
    if let Some(kib) = resident_kib() {
        tracing::info!("resident memory: {:.1} MiB", kib as f64 / 1024.0);
    }
}

/// A running server: transports, reloader and control socket. Stops on
/// [`Server::stop`] or drop.
#[derive(Debug)]
pub struct Server {
    config: Config,
    published: Arc<ArcSwap<ZoneSet>>,
    udp: Option<UdpServer>,
    tcp: Option<TcpServer>,
    reload_tx: Option<mpsc::Sender<ReloadRequest>>,
    reloader: Option<JoinHandle<()>>,
    control: Option<control::ControlServer>,
}

impl fmt::Debug for ReloadRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ReloadRequest")
    }
}

impl Server {
    /// Resolves the configuration, loads the zones, binds the sockets and starts serving.
    pub fn start(options: Options) -> Result<Server, ServerError> {
        lode_io::mem::tune_allocator();
        let config = Config::resolve(&options).map_err(ServerError::Config)?;
        if config.demo {
            tracing::info!("no zone configured: serving the built-in demo zones");
        }
        let published = Arc::new(ArcSwap::from_pointee(ZoneSet::new()));
        let mut reloader = Reloader {
            options,
            running: config.clone(),
            served: Vec::new(),
            published: published.clone(),
        };
        let report = reloader.load(&config, true);
        if reloader.served.is_empty() && !config.zones.is_empty() {
            return Err(ServerError::NoZone);
        }
        if !report.failed.is_empty() {
            tracing::warn!(
                "{} of {} zones not loaded; serving the others",
                report.failed.len(),
                config.zones.len()
            );
        }

        let settings = Settings {
            max_udp_payload: config.max_udp_payload,
        };
        // TCP first: its bind fails when another server holds the port, before
        // UDP (SO_REUSEPORT) could share the port with it.
        let tcp_config = TcpConfig {
            idle_timeout: config.tcp_idle_timeout,
            max_clients: config.tcp_max_clients,
            threads: config.workers.div_ceil(2),
            ..TcpConfig::default()
        };
        let zs = published.clone();
        let tcp_handler = move |q: &[u8], out: &mut [u8], _client: &mut Client<'_>| {
            let len = lode_engine::answer(&zs.load(), q, out, Transport::Tcp, &settings).len;
            // As Knot DNS: after a message that could not be parsed (dropped,
            // or answered FORMERR) the stream is not trusted any further.
            let close = len == 0 || (len >= 4 && out[3] & 0x0F == rcode::FORMERR as u8);
            StreamReply { len, close }
        };
        let tcp =
            TcpServer::start(&config.listen, &tcp_config, tcp_handler).map_err(ServerError::Io)?;
        let udp_config = UdpConfig {
            workers: config.workers,
            max_response: usize::from(config.max_udp_payload).max(512),
            ..UdpConfig::default()
        };
        let zs = published.clone();
        let udp_handler = move |q: &[u8], out: &mut [u8], _client: &mut Client<'_>| {
            lode_engine::answer(&zs.load(), q, out, Transport::Udp, &settings).len
        };
        let udp = UdpServer::start(tcp.local_addrs(), &udp_config, udp_handler)
            .map_err(ServerError::Io)?;
        let (reload_tx, reload_rx) = mpsc::channel::<ReloadRequest>();
        let reloader = std::thread::Builder::new()
            .name("lode-reload".into())
            .spawn(move || {
                for req in reload_rx {
                    let report = reloader.reload();
                    if let Some(reply) = req.reply {
                        let _ = reply.send(report);
                    }
                }
            })
            .map_err(|e| ServerError::Io(lode_io::IoError::Thread(e.to_string())))?;

        let control = match &config.control {
            Some(path) => {
                let dispatch = make_dispatch(
                    reload_tx.clone(),
                    published.clone(),
                    udp.counters(),
                    tcp.counters(),
                );
                match control::ControlServer::start(path, dispatch) {
                    Ok(c) => {
                        tracing::info!("control socket {}", path.display());
                        Some(c)
                    }
                    Err(e) => {
                        tracing::warn!("control socket not available ({e}); SIGHUP still reloads");
                        None
                    }
                }
            }
            None => None,
        };
        let addrs: Vec<String> = udp.local_addrs().iter().map(|a| a.to_string()).collect();
        tracing::info!(
            "serving {} zones on {} (UDP and TCP)",
            reloader_zone_count(&published),
            addrs.join(", ")
        );
        Ok(Server {
            config,
            published,
            udp: Some(udp),
            tcp: Some(tcp),
            reload_tx: Some(reload_tx),
            reloader: Some(reloader),
            control,
        })
    }

    /// The configuration the server started with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The bound addresses (ports resolved).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.udp
            .as_ref()
            .map(|u| u.local_addrs().to_vec())
            .unwrap_or_default()
    }

    /// The zone set published now.
    pub fn zones(&self) -> Arc<ZoneSet> {
        self.published.load_full()
    }

    /// Reloads (configuration and changed zones) and waits for the report.
    pub fn reload(&self) -> ReloadReport {
        request_reload(self.reload_tx.as_ref(), true).unwrap_or_default()
    }

    /// Starts a reload without waiting (what SIGHUP does).
    pub fn reload_in_background(&self) {
        let _ = request_reload(self.reload_tx.as_ref(), false);
    }

    /// The status text of the control command `status`.
    pub fn status(&self) -> String {
        match (&self.udp, &self.tcp) {
            (Some(u), Some(t)) => status_text(&self.published, &u.counters(), &t.counters()),
            _ => String::new(),
        }
    }

    /// Serves until SIGTERM or SIGINT; SIGHUP reloads in the background.
    pub fn run_until_signal(self) -> std::io::Result<()> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGHUP, SIGINT, SIGTERM])?;
        for sig in signals.forever() {
            if sig == SIGHUP {
                tracing::info!("SIGHUP received");
                self.reload_in_background();
            } else {
                tracing::info!("signal {sig} received, stopping");
                break;
            }
        }
        self.stop();
        Ok(())
    }

    /// Stops serving: control socket, then transports; a reload in progress
    /// is abandoned.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(mut c) = self.control.take() {
            c.stop();
        }
        if let Some(u) = self.udp.take() {
            u.stop();
        }
        if let Some(t) = self.tcp.take() {
            t.stop();
        }
        drop(self.reload_tx.take());
        // Not joined: a reload in progress (possibly minutes for a huge zone)
        // finishes in the background and its result is discarded; the thread
        // then ends as its channel is closed.
        drop(self.reloader.take());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn reloader_zone_count(published: &ArcSwap<ZoneSet>) -> usize {
    published.load().len()
}

fn request_reload(tx: Option<&mpsc::Sender<ReloadRequest>>, wait: bool) -> Option<ReloadReport> {
    let tx = tx?;
    if !wait {
        tx.send(ReloadRequest { reply: None }).ok()?;
        return None;
    }
    let (reply_tx, reply_rx) = mpsc::channel();
    tx.send(ReloadRequest {
        reply: Some(reply_tx),
    })
    .ok()?;
    reply_rx.recv().ok()
}

fn status_text(published: &ArcSwap<ZoneSet>, udp: &UdpCounters, tcp: &TcpCounters) -> String {
    let set = published.load_full();
    let mut zones: Vec<&Arc<Zone>> = set.iter().collect();
    zones.sort_by_key(|z| z.origin().to_name());
    let mut s = String::new();
    for z in zones {
        s.push_str(&format!(
            "zone {} serial {} records {} names {}\n",
            z.origin(),
            z.serial(),
            z.record_count(),
            z.node_count()
        ));
    }
    let u = udp.read();
    s.push_str(&format!(
        "udp queries {} responses {} dropped {}\n",
        u.queries, u.responses, u.dropped
    ));
    let t = tcp.read();
    s.push_str(&format!(
        "tcp connections {} refused {} open {} queries {} responses {} dropped {}\n",
        t.connections, t.refused, t.open, t.queries, t.responses, t.dropped
    ));
    if let Some(kib) = resident_kib() {
        s.push_str(&format!("memory resident {kib} KiB\n"));
    }
    s
}

fn make_dispatch(
    reload_tx: mpsc::Sender<ReloadRequest>,
    published: Arc<ArcSwap<ZoneSet>>,
    udp: UdpCounters,
    tcp: TcpCounters,
) -> control::Dispatch {
    Arc::new(move |command: &str| match command {
        "reload" => Some(match request_reload(Some(&reload_tx), true) {
            Some(report) => Reply {
                ok: report.is_ok(),
                text: report.to_text(),
            },
            None => Reply {
                ok: false,
                text: "the server is stopping".into(),
            },
        }),
        "status" => Some(Reply {
            ok: true,
            text: status_text(&published, &udp, &tcp),
        }),
        _ => None,
    })
}

/// The default control socket path (see [`config::default_control_path`]).
pub fn default_control_path() -> PathBuf {
    config::default_control_path()
}
