//! The Lode daemon: configuration, zone lifecycle, publication, updates, control.
//!
//! ```text
//!  Config (TOML + command line) ──▶ control/reload.rs ── load each zone (loading/: zone file
//!                                      │          or snapshot → Zone); a zone that takes updates:
//!                                      │          its file's difference goes to its writer
//!                                      ▼  publish.rs: one atomic pointer swap (writers serialised)
//!                        ArcSwap<ZoneSet> ◀── read per datagram / TCP message by
//!                                      ▲       UDP workers and TCP tasks (lode-io):
//!                                      │       serving/handler.rs: classify ─ query ─▶ lode_engine::answer
//!                                      │                ├ UPDATE ─▶ update/admit.rs (zone, TSIG, ACL)
//!                                      │                │  (a secondary's: forwarded to its primary)
//!                                      │                ├ AXFR/IXFR ─▶ transfer thread (update/xfrout.rs)
//!                                      │                ├ NOTIFY ─▶ replication/secondary.rs: refresh now
//!                                      │                └ signed query ─▶ serving/signed.rs
//!                                      │                              │ reply deferred
//!  writer pool (update/pool.rs) ───────┘   ◀── each zone's queue ────┘
//!    group: the zone-update stage (lode-zones) ─ journal append + fdatasync ─ publish ─ replies
//!    compaction, state snapshots, zone files written back in the background (update/background.rs)
//!    a changed serial ─▶ replication/notify.rs: NOTIFY out, retried
//!  replication/secondary.rs: SOA timers ─▶ fetch.rs (SOA, IXFR/AXFR in) ─▶ the zone's writer
//!  SIGHUP ─┐
//!  control ┴──▶ reload request ─▶ reload thread: re-read the config, re-load changed
//!  socket        (with reply)      zones in the background, swap in the new set
//! ```
//!
//! Readers never lock: a query holds the `ZoneSet` it started with until it is
//! answered, and an old set is freed when its last reader leaves. Reloads are
//! serialised on one thread; the zones of one (re)load are read in parallel,
//! one zone per thread, up to one thread per CPU. During a reload the old and
//! the new version of a changed zone are both in memory. A zone that fails to
//! load at start is not served (the others are); a zone that fails to reload
//! keeps its old version. Start fails only when zones were configured and none
//! loaded, or a socket cannot be bound. Zones that take updates start from
//! their state snapshot and journal (`update/`) before any socket is bound.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// The wings, each using only the modules declared before it (held by
// `tests/wings.rs`):
// - shared pieces, leaves first: ACLs, catalog zones' format, clocks, log
//   rates, user switch, progress, systemd notification;
pub mod acl;
mod catalog;
mod clock;
mod lograte;
pub mod privdrop;
pub mod progress;
pub mod sdnotify;
// - then access checks, the configuration, the DNS client that asks other
//   servers (`fetch`) and TLS, which use them;
mod access;
pub mod config;
mod fetch;
mod tls;
// - counters and their exposition formats;
pub mod metrics;
// - where the zone versions replaced are freed (off the query path);
mod reclaim;
// - where zones' buffers are collapsed into huge pages (off the paths that wait);
mod huge_pages;

// - publication: the versions served, and who is told of a new one;
mod publish;
// - loading: zone files, load reports, snapshots, zone files written back;
mod loading;
// - updates: admission, the writer pool, signing, transfers out;
mod update;
// - replication: secondaries, NOTIFY out, catalog members;
mod replication;
// - serving queries: the handler and its policies (RRL, cookies, dnstap);
mod serving;
// - control: the control socket's commands, reload, status, stats.
pub mod control;

use control::{reload, status};
use loading::loads;
pub use loading::{file_builder, snapshot, zones};
use replication::{consumer, notify, secondary};
pub use serving::guard;
use serving::handler;
pub use update::signing::{
    key_dir, read_foreign, read_offline, KeysError, FOREIGN_FILE, OFFLINE_FILE,
};

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

use arc_swap::ArcSwap;
use lode_engine::Transport;
use lode_io::{Client, StreamReply, TcpConfig, TcpServer, UdpConfig, UdpServer};
use lode_wire::rcode;
use lode_zonedb::ZoneSet;

pub use config::{Config, ConfigError, ConfigFile, Options, ZoneSource, ZoneSpec};
pub use control::{on_log_level_change, Reply};
pub use metrics::process::resident_kib;
pub use reload::{ReloadReport, ZoneFailure};

use reload::{request_reload, Asked, ReloadRequest, Reloader};
use status::{make_dispatch, reloader_zone_count, status_text, Facts};

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
    /// Switching to the configured `user` failed, or its folders are not
    /// writable by it.
    User(privdrop::UserError),
    /// The configuration does not pass the checks made before any zone is
    /// loaded, or what it names cannot be started.
    Check(CheckError),
}

/// Why a resolved configuration cannot be used: the checks a server makes
/// before it loads a zone (`lode check --config` too), and what it starts
/// from them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// The configuration file and command line.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A TSIG key.
    #[error(transparent)]
    Key(#[from] update::TsigKeyError),
    /// The certificate files (lode-io's words).
    #[error("tls: {0}")]
    Tls(String),
    /// A PKCS #11 keystore.
    #[error(transparent)]
    Keystore(#[from] update::signing::KeystoreError),
    /// The rate limiter, the cookies or dnstap.
    #[error(transparent)]
    Guard(#[from] guard::GuardError),
    /// The updates' admission and writers.
    #[error(transparent)]
    Updates(#[from] update::UpdatesError),
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerError::Config(e) => write!(f, "configuration: {e}"),
            ServerError::NoZone => f.write_str("no zone could be loaded (errors above)"),
            ServerError::Io(e) => e.fmt(f),
            ServerError::User(e) => e.fmt(f),
            ServerError::Check(e) => write!(f, "configuration: {e}"),
        }
    }
}

impl std::error::Error for ServerError {}

/// A running server: transports, reloader and control socket. Stops on
/// [`Server::stop`] or drop.
#[derive(Debug)]
pub struct Server {
    config: Arc<Config>,
    published: Arc<ArcSwap<ZoneSet>>,
    udp: Option<UdpServer>,
    /// UDP over AF_XDP, when `listen-xdp` is set.
    xdp: Option<lode_io::xdp::XdpServer>,
    tcp: Option<TcpServer>,
    /// DNS over TLS, when `listen-tls` is set.
    dot: Option<TcpServer>,
    /// DNS over QUIC, when `listen-quic` is set.
    doq: Option<lode_io::QuicServer>,
    reload_tx: Option<mpsc::Sender<ReloadRequest>>,
    reloader: Option<JoinHandle<()>>,
    /// Admission of updates, and the writer pool behind it.
    updates: Arc<update::Updates>,
    control: Option<control::ControlServer>,
    /// The query policy: cookies, rate limiting, dnstap (for the status
    /// counters, and to end the dnstap stream at stop).
    guard: Arc<ArcSwap<guard::Guard>>,
    /// The Prometheus endpoint, when `metrics-listen` is set.
    metrics_server: Option<metrics::http::MetricsServer>,
    /// Start time, addresses, zone loads (for `status` and `zone-status`).
    facts: Arc<Facts>,
    /// Lets the control command `stop` end [`Server::run_until_signal`].
    stopper: Arc<control::Stopper>,
}

impl Server {
    /// Resolves the configuration, loads the zones, binds the sockets and starts serving.
    pub fn start(options: Options) -> Result<Server, ServerError> {
        Server::start_read(options, None)
    }

    /// [`Server::start`] with the configuration file `options` names
    /// already parsed (not read again).
    pub fn start_read(options: Options, file: Option<ConfigFile>) -> Result<Server, ServerError> {
        lode_io::mem::tune_allocator();
        lode_io::ignore_file_size_signal();
        let started = std::time::Instant::now();
        // One copy of the configuration, shared by the server and its reloader
        // (a copy holds every zone's options: 10^5 zones make it large).
        let config = Arc::new(Config::resolve_read(&options, file).map_err(ServerError::Config)?);
        validate(&config).map_err(ServerError::Check)?;
        raise_open_files(&config);
        // A second server on a configured control socket would run without
        // control: it does not start.
        if let (Some(path), true) = (&config.control, config.control_configured) {
            if control::in_use(path) {
                return Err(ServerError::Config(ConfigError::Value(format!(
                    "control socket {} is in use by another running server: stop that one \
                     (lode stop --control {}) or give this one another `control`",
                    path.display(),
                    path.display()
                ))));
            }
        }
        if config.demo {
            tracing::info!("no zone configured: serving the built-in demo zones");
        } else if config.zones.is_empty() {
            tracing::warn!(
                "no zone configured in {}: serving nothing (add [[zone]] tables and reload)",
                options
                    .config
                    .as_deref()
                    .map_or("the configuration".into(), |p| p.display().to_string())
            );
        }
        // Started as root with `user`: act as that user while zones,
        // journals and snapshots are read and written (see privdrop.rs).
        let writable: Vec<(&str, &std::path::Path)> = [
            ("journal-dir", config.journal_dir.as_deref()),
            ("snapshot-dir", config.snapshot_dir.as_deref()),
            ("kasp-db", config.kasp_db.as_deref().filter(|d| d.exists())),
        ]
        .into_iter()
        .filter_map(|(what, dir)| Some((what, dir?)))
        .collect();
        let pending =
            privdrop::begin(config.user.as_ref(), &writable).map_err(ServerError::User)?;
        // What can refuse the configuration comes before any zone is loaded.
        // TLS credentials (read as the service user, as a reload reads them
        // again): the DNS-over-TLS certificate, also presented to primaries
        // asked over TLS that want a client certificate.
        let tls_client = tls_client(&config);
        let tls_error =
            |e: tls::TlsError| ServerError::Config(ConfigError::Value(format!("tls: {e}")));
        let tls_creds = if !config.tls.serves() && !tls_client {
            None
        } else {
            let creds = tls::credentials(&config.tls).map_err(tls_error)?;
            tls::log_credentials(&creds);
            if tls_client {
                tls::set_client_credentials(creds.clone());
            }
            Some(creds)
        };
        update::signing::open_keystores(&config).map_err(|e| ServerError::Check(e.into()))?;
        let guard = guard::Guard::new(&config).map_err(|e| ServerError::Check(e.into()))?;
        let published = Arc::new(ArcSwap::from_pointee(ZoneSet::new()));
        let publisher = Arc::new(publish::Publisher::new(published.clone()));
        let loads = Arc::new(loads::ZoneLoads::default());
        let mut reloader = Reloader {
            options,
            running: config.clone(),
            served: Vec::new(),
            publisher: publisher.clone(),
            live: Vec::new(),
            validating: std::collections::HashSet::new(),
            verifying: std::collections::HashSet::new(),
            updates: None,
            notifies: None,
            secondaries: None,
            loads: loads.clone(),
            loaded: None,
            tls: Vec::new(),
            guard: None,
            limits: None,
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

        // Journals replayed onto the loaded zones before any socket opens.
        // This server's counters and its limit of refusal lines, apart
        // from any other server's in the process.
        let events = Arc::new(metrics::Events::default());
        let updates = update::Updates::new(&config, events.clone(), guard.refusals().clone())
            .map_err(|e| ServerError::Check(e.into()))?;
        update::start_writers(&updates, &config, &publisher);
        let notifies = notify::start(&config, &updates.keys(), &publisher, events.clone());
        let secondaries = secondary::start(
            &config,
            &updates.keys(),
            &updates.writers(),
            &publisher,
            events,
        )
        .map(Arc::new);
        if let Some(s) = &secondaries {
            updates.set_secondaries(s.clone());
        }
        reloader.live = config
            .zones
            .iter()
            .filter(|z| updates.has_writer(&z.name))
            .map(|z| z.name.clone())
            .collect();
        let updates = Arc::new(updates);
        reloader.updates = Some(updates.clone());
        reloader.notifies = notifies.clone();
        reloader.secondaries = secondaries.clone();
        publisher.mark_catalogs(&config);
        // Catalog members become zones before the sockets open.
        consumer::start(
            &config,
            &updates,
            secondaries.clone(),
            &publisher,
            notifies.clone(),
        );

        // TCP first: its bind fails when another server holds the port, before
        // UDP (SO_REUSEPORT) could share the port with it.
        let tcp_config = config::tcp_config(&config);
        let server_guard = Arc::new(ArcSwap::from_pointee(guard));
        reloader.guard = Some(server_guard.clone());
        let metrics = metrics::Metrics::with_counting(config.query_counters);
        let handler = Arc::new(handler::Handler {
            zones: published.clone(),
            updates: updates.clone(),
            guard: server_guard.clone(),
            metrics: metrics.clone(),
        });
        let pinned_clients = config
            .zone_options
            .values()
            .any(|o| o.acl.iter().any(|r| !r.cert_keys.is_empty()));
        let dot_tls = match tls_creds.as_ref().filter(|_| !config.tls.listen.is_empty()) {
            None => None,
            Some(creds) => Some(
                tls::server(&config.tls, creds, lode_io::tls::ALPN_DOT, pinned_clients)
                    .map_err(tls_error)?,
            ),
        };
        let doq_tls = match tls_creds
            .as_ref()
            .filter(|_| !config.tls.listen_quic.is_empty())
        {
            None => None,
            Some(creds) => Some(
                tls::server(&config.tls, creds, lode_io::quic::ALPN_DOQ, pinned_clients)
                    .map_err(tls_error)?,
            ),
        };
        let for_tcp = handler.clone();
        let tcp_handler = move |q: &[u8], out: &mut [u8], client: &mut Client<'_>| {
            let len = for_tcp.handle(q, out, client, Transport::Tcp);
            // As Knot DNS: after a message that could not be parsed (dropped,
            // or answered FORMERR) the stream is not trusted any further.
            let close = (len == 0 && !client.is_deferred())
                || (len >= 4 && out[3] & 0x0F == rcode::FORMERR as u8);
            StreamReply { len, close }
        };
        privdrop::regain(&pending).map_err(ServerError::User)?;
        reloader.tls = dot_tls.iter().chain(&doq_tls).cloned().collect();
        let doq = match doq_tls {
            Some(tls) => {
                let quic_config = lode_io::QuicConfig {
                    max_clients: config.tls.quic_max_clients,
                    max_streams: 100,
                    idle_timeout: config.tls.quic_idle_timeout,
                    io_timeout: config
                        .tcp_io_timeout
                        .max(std::time::Duration::from_millis(500)),
                    threads: config.workers.div_ceil(2),
                    tls,
                };
                Some(
                    lode_io::QuicServer::start(
                        &config.tls.listen_quic,
                        &quic_config,
                        tcp_handler.clone(),
                    )
                    .map_err(ServerError::Io)?,
                )
            }
            None => None,
        };
        let dot = match dot_tls {
            Some(tls) => {
                let dot_config = TcpConfig {
                    tls: Some(tls),
                    ..config::dot_config(&config)
                };
                Some(
                    TcpServer::start(&config.tls.listen, &dot_config, tcp_handler.clone())
                        .map_err(ServerError::Io)?,
                )
            }
            None => None,
        };
        let tcp =
            TcpServer::start(&config.listen, &tcp_config, tcp_handler).map_err(ServerError::Io)?;
        let udp_config = UdpConfig {
            workers: config.workers,
            max_response: usize::from(config.max_udp_payload).max(512),
            recv_buffer: config.udp_receive_buffer,
            ..UdpConfig::default()
        };
        let udp_handler = move |q: &[u8], out: &mut [u8], client: &mut Client<'_>| {
            handler.handle(q, out, client, Transport::Udp)
        };
        let udp = UdpServer::start(tcp.local_addrs(), &udp_config, udp_handler.clone())
            .map_err(ServerError::Io)?;
        let xdp = start_xdp(&config, udp_handler)?;
        reloader.limits = Some(reload::Limits {
            tcp: tcp.limits(),
            dot: dot.as_ref().map(TcpServer::limits),
        });
        let (reload_tx, reload_rx) = mpsc::channel::<ReloadRequest>();
        let reload_addrs = udp.local_addrs().to_vec();
        let reload_set = published.clone();
        let reloader = std::thread::Builder::new()
            .name("lode-reload".into())
            .spawn(move || {
                // Queries come first on a busy CPU, as for the writers; the
                // threads a large zone's load starts (reading, merging)
                // inherit this.
                lode_io::lower_thread_priority(5);
                for req in reload_rx {
                    sdnotify::reloading();
                    let report = match &req.what {
                        Asked::Zone(zone) => reloader.reload_zone(zone),
                        Asked::All => reloader.reload(),
                        Asked::Purge(zones) => reloader.purge(zones),
                        Asked::Backup(dir, zones) => reloader.backup(dir, zones),
                        Asked::Restore(dir, zones) => reloader.restore(dir, zones),
                    };
                    sdnotify::notify(&format!(
                        "READY=1\nSTATUS={}",
                        status::serving_status(&reload_set.load(), &reload_addrs)
                    ));
                    if let Some(reply) = req.reply {
                        let _ = reply.send(report);
                    }
                }
            })
            .map_err(|e| ServerError::Io(lode_io::IoError::Thread(e.to_string())))?;

        let scrape = control::scrape::Scrape {
            metrics,
            published: published.clone(),
            udp: udp.counters(),
            tcp: tcp.counters(),
            tls: dot.as_ref().map(TcpServer::counters),
            quic: doq.as_ref().map(lode_io::QuicServer::counters),
            xdp: xdp.as_ref().map(lode_io::xdp::XdpServer::counters),
            guard: server_guard.clone(),
            loads: loads.clone(),
            updates: updates.clone(),
        };
        // Bound before the privileges are dropped (a port below 1024 is allowed).
        // DNS is served even when the endpoint cannot be: the failure is
        // logged as an error and shown by `lode status`.
        let (metrics_server, metrics_error) = match config.metrics_listen {
            Some(addr) => match metrics::http::MetricsServer::start(addr, Arc::new(scrape.clone()))
            {
                Ok(m) => (Some(m), None),
                Err(e) => {
                    tracing::error!("{e}; serving DNS without the metrics endpoint");
                    (None, Some(e))
                }
            },
            None => (None, None),
        };
        let facts = Arc::new(Facts {
            started,
            addrs: udp.local_addrs().to_vec(),
            loads,
            metrics: metrics_server
                .as_ref()
                .map(metrics::http::MetricsServer::local_addr),
            metrics_error,
            xdp: xdp.as_ref().map(lode_io::xdp::XdpServer::counters),
        });
        let stopper = Arc::new(control::Stopper::default());
        let control = match &config.control {
            Some(path) => {
                let dispatch = make_dispatch(
                    reload_tx.clone(),
                    published.clone(),
                    updates.clone(),
                    secondaries.clone(),
                    notifies.clone(),
                    scrape.clone(),
                    facts.clone(),
                );
                match control::ControlServer::start(path, dispatch, stopper.clone()) {
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
        privdrop::finish(pending, control.as_ref().and(config.control.as_deref()))
            .map_err(ServerError::User)?;
        tracing::info!(
            zones = reloader_zone_count(&published),
            "{}",
            status::serving_status(&published.load(), udp.local_addrs())
        );
        if let Some(d) = &dot {
            let addrs: Vec<String> = d.local_addrs().iter().map(ToString::to_string).collect();
            tracing::info!("DNS over TLS on {}", addrs.join(", "));
        }
        if let Some(q) = &doq {
            let addrs: Vec<String> = q.local_addrs().iter().map(ToString::to_string).collect();
            tracing::info!("DNS over QUIC on {}", addrs.join(", "));
        }
        Ok(Server {
            config,
            published,
            udp: Some(udp),
            xdp,
            tcp: Some(tcp),
            dot,
            doq,
            reload_tx: Some(reload_tx),
            reloader: Some(reloader),
            updates: updates.clone(),
            control,
            guard: server_guard,
            metrics_server,
            facts,
            stopper,
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
            (Some(u), Some(t)) => status_text(
                &self.published,
                &u.counters(),
                &t.counters(),
                &self.guard.load(),
                &self.facts,
            ),
            _ => String::new(),
        }
    }

    /// Serves until SIGTERM, SIGINT or the control command `stop`; SIGHUP
    /// reloads in the background.
    /// Tells systemd (`$NOTIFY_SOCKET`, see [`sdnotify`]) it is ready once
    /// the signal handlers are in place, and that it stops.
    pub fn run_until_signal(self) -> std::io::Result<()> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGHUP, SIGINT, SIGTERM])?;
        // `stop` closes the loop below, as SIGTERM breaks it.
        self.stopper.arm(signals.handle());
        sdnotify::notify(&format!(
            "READY=1\nSTATUS={}\nMAINPID={}",
            status::serving_status(&self.published.load(), &self.local_addrs()),
            std::process::id()
        ));
        for sig in signals.forever() {
            if sig == SIGHUP {
                tracing::info!("SIGHUP received");
                self.reload_in_background();
            } else {
                tracing::info!("signal {sig} received, stopping");
                break;
            }
        }
        sdnotify::notify("STOPPING=1\nSTATUS=stopping");
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
        drop(self.metrics_server.take());
        if let Some(u) = self.udp.take() {
            u.stop();
        }
        if let Some(x) = self.xdp.take() {
            x.stop();
        }
        if let Some(t) = self.tcp.take() {
            t.stop();
        }
        if let Some(t) = self.dot.take() {
            t.stop();
        }
        if let Some(q) = self.doq.take() {
            q.stop();
        }
        // The queries answered are in the dnstap stream before it ends.
        if let Some(tap) = self.guard.load().dnstap() {
            tap.close();
        }
        drop(self.reload_tx.take());
        // Not joined: a reload in progress (possibly minutes for a huge zone)
        // finishes in the background and its result is discarded; the thread
        // then ends as its channel is closed.
        drop(self.reloader.take());
        // The writer pool is not joined either: its threads end once the
        // zones ready now have run.
        self.updates.stop_writers();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The default control socket path (see [`config::default_control_path`]).
pub fn default_control_path() -> PathBuf {
    config::default_control_path()
}

/// Checks a configuration as [`Server::start`] would take it, without
/// binding, loading or writing anything (`lode check --config`): the file
/// and command line merged ([`Config::resolve`]: syntax, keys, ACLs,
/// remotes, policies, templates, zones), then every check a server makes
/// before it loads a zone ([`validate`]) and the PKCS #11 keystores opened.
/// Zone files are not read here.
pub fn check_config(options: &Options) -> Result<Config, CheckError> {
    let config = Config::resolve(options)?;
    validate(&config)?;
    update::signing::open_keystores(&config)?;
    Ok(config)
}

/// UDP over AF_XDP on the interfaces of `listen-xdp` (none: `None`), with
/// the UDP handler. Where it cannot start, the server does not either,
/// unless `xdp-fallback` lets it serve over its sockets alone.
fn start_xdp<H: lode_io::Handler>(
    config: &Config,
    handler: H,
) -> Result<Option<lode_io::xdp::XdpServer>, ServerError> {
    if config.listen_xdp.is_empty() {
        return Ok(None);
    }
    let xdp_config = lode_io::xdp::XdpConfig {
        max_response: usize::from(config.max_udp_payload).max(512),
        route_check: config.xdp_route_check,
        busy_poll: config.xdp_busy_poll,
        ..lode_io::xdp::XdpConfig::default()
    };
    match lode_io::xdp::XdpServer::start(&config.listen_xdp, &xdp_config, handler) {
        Ok(x) => {
            for line in x.summary() {
                tracing::info!("UDP over XDP on {line}");
            }
            Ok(Some(x))
        }
        Err(e) if config.xdp_fallback => {
            tracing::error!("{e}; serving over the sockets alone (xdp-fallback)");
            Ok(None)
        }
        Err(e) => Err(ServerError::Io(e)),
    }
}

/// The checks of a resolved configuration that [`Config::resolve`] leaves
/// to a starting server, made before any zone is loaded (a refusal after
/// minutes of loading helps nobody): the TSIG keys' algorithms and secrets,
/// the response-rate limiter's table, and the certificate files when TLS
/// is served or asked of a primary (a one-time certificate's key is not
/// made here).
fn validate(config: &Config) -> Result<(), CheckError> {
    update::keys_of(config)?;
    if let Some(rrl) = config.rrl.as_ref().filter(|c| c.rate > 0) {
        lode_rrl::Limiter::new(rrl).map_err(guard::GuardError::Rrl)?;
    }
    if let config::TlsCertificate::Files { cert, key } = &config.tls.certificate {
        if config.tls.serves() || tls_client(config) {
            lode_io::tls::Credentials::from_pem_files(cert, key).map_err(CheckError::Tls)?;
        }
    }
    Ok(())
}

/// Files a server holds open besides its TCP and TLS clients: listeners,
/// worker sockets, zone files and journals being read, a large load's
/// sorted runs (a few hundred for 160 M delegations).
const FILES_BESIDE_CLIENTS: usize = 1024;

/// Raises the soft open-file limit to the hard one (see
/// `lode_io::limits`), and warns when even that is below what the
/// configuration may hold open at once.
fn raise_open_files(config: &Config) {
    let tls = if config.tls.serves() {
        config.tls.max_clients
    } else {
        0
    };
    let need = config.tcp_max_clients + tls + FILES_BESIDE_CLIENTS;
    match lode_io::limits::raise_open_files() {
        Ok(f) => {
            if f.now > f.before {
                tracing::info!(
                    "open-file limit raised from {} to {} (the hard limit)",
                    f.before,
                    f.now
                );
            }
            if f.now < need as u64 {
                tracing::warn!(
                    "open-file limit {} is below the {need} this configuration may hold open at \
                     once (tcp-max-clients {}, tls-max-clients {tls}, {FILES_BESIDE_CLIENTS} for \
                     listeners, zone files and loads): raise the hard limit (systemd \
                     LimitNOFILE=, ulimit -Hn) or lower tcp-max-clients",
                    f.now,
                    config.tcp_max_clients,
                );
            }
        }
        Err(e) => tracing::warn!("open-file limit not read or raised: {e}"),
    }
}

/// Whether a primary is asked over TLS (its certificate may be presented).
fn tls_client(config: &Config) -> bool {
    config
        .zone_options
        .values()
        .any(|o| o.masters.iter().any(|m| m.tls.is_some()))
}
