//! Configuration: the TOML file, command-line overrides, and the merged result.
//!
//! Every key, its value, default and meaning: [`reference::KEYS`], written
//! as `lode.toml(5)` by `lode man` and tested against this parser. A small
//! example:
//!
//! ```toml
//! listen = ["127.0.0.1:53", "[::1]:53"]
//! journal-dir = "/var/lib/lode/journal"
//!
//! [[key]]
//! id = "update-key."
//! algorithm = "hmac-sha256"
//! secret = "BASE64"
//!
//! [[acl]]
//! id = "updaters"
//! address = ["10.0.0.0/8"]
//! key = ["update-key."]
//! action = ["update"]
//!
//! [[zone]]
//! name = "e164.arpa."
//! file = "zones/e164.arpa.zone"
//! acl = ["updaters"]
//! ```

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use lode_wire::Name;
use serde::Deserialize;

pub mod demo;
mod dnssec;
mod dnstap;
mod guard;
mod metrics;
pub mod reference;
mod replication;
pub mod stamp;
mod tls;
mod transport;
mod zone_options;

pub use dnssec::{PolicyEntry, Signing};
pub use dnstap::DnstapEntry;
pub use guard::{default_version, host_name, CookieSettings, CookiesEntry, Identity, RrlEntry};
use metrics::metrics_listen;
pub use metrics::DEFAULT_METRICS_PORT;

pub use replication::{
    parse_remote_address, Remote, RemoteEntry, RemoteTls, TemplateEntry, TimerBounds,
};
use replication::{resolve_catalogs, resolve_remotes, resolve_templates};
pub use tls::{TlsCertificate, TlsSettings};
pub(crate) use transport::{dot_config, tcp_config};

/// Default TCP idle timeout (RFC 7766 §6.2.3 suggests seconds, not minutes).
pub const DEFAULT_TCP_IDLE_SECS: u64 = 10;
/// Default time for a TCP query to arrive whole once begun (Knot's `tcp-io-timeout`).
pub const DEFAULT_TCP_IO_TIMEOUT_MS: u64 = 500;
/// Default limit of concurrent TCP clients.
pub const DEFAULT_TCP_MAX_CLIENTS: usize = 1000;
/// Default largest UDP answer with EDNS (the DNS Flag Day 2020 value).
pub const DEFAULT_MAX_UDP_PAYLOAD: u16 = 1232;
/// The accepted log levels.
pub const LOG_LEVELS: [&str; 5] = ["error", "warn", "info", "debug", "trace"];
/// The accepted log formats: human-readable lines, or one JSON object per line.
pub const LOG_FORMATS: [&str; 2] = ["text", "json"];
/// Port of the default listen addresses (unprivileged, so a demo runs as anyone).
pub const DEFAULT_PORT: u16 = 5300;

/// The configuration file as written (every key optional).
#[derive(Debug, Default, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ConfigFile {
    /// Listen addresses, "ADDR:PORT" or a bare address (port 53).
    #[serde(default)]
    pub listen: Vec<String>,
    /// UDP worker threads per listen address.
    pub workers: Option<usize>,
    /// Threads of the writer pool (Knot's `background-workers`).
    pub background_workers: Option<usize>,
    /// Largest UDP answer with EDNS.
    pub max_udp_payload: Option<u16>,
    /// Receive buffer asked for each UDP socket, bytes (0: the kernel's default).
    pub udp_receive_buffer: Option<usize>,
    /// TCP idle timeout, seconds.
    pub tcp_idle_timeout: Option<u64>,
    /// Concurrent TCP clients.
    pub tcp_max_clients: Option<usize>,
    /// Concurrent TCP clients from one address (IPv6: /64).
    pub tcp_max_clients_per_source: Option<usize>,
    /// Time for a TCP query to arrive whole, milliseconds (Knot's tcp-io-timeout).
    pub tcp_io_timeout: Option<u64>,
    /// DNS over TLS listen addresses (config/tls.rs).
    #[serde(default)]
    pub listen_tls: Vec<String>,
    /// TLS certificate chain, PEM (Knot's name).
    #[serde(alias = "tls-cert")]
    pub cert_file: Option<PathBuf>,
    /// TLS private key, PEM (Knot's name).
    #[serde(alias = "tls-key")]
    pub key_file: Option<PathBuf>,
    /// Lowest TLS version: "1.3" or "1.2".
    pub tls_min_version: Option<String>,
    /// Time for a TLS handshake, milliseconds.
    pub tls_handshake_timeout: Option<u64>,
    /// Concurrent TLS clients (default: tcp-max-clients).
    pub tls_max_clients: Option<usize>,
    /// CA certificates (PEM files) remotes' `cert-hostname` are checked with (Knot's name).
    #[serde(default)]
    pub ca_file: Vec<PathBuf>,
    /// DNS over QUIC listen addresses (config/tls.rs).
    #[serde(default)]
    pub listen_quic: Vec<String>,
    /// UDP over AF_XDP: "IFACE@PORT" (Knot's `xdp.listen`).
    #[serde(default)]
    pub listen_xdp: Vec<String>,
    /// Serve over the sockets alone when XDP cannot start (default false:
    /// the server does not start).
    pub xdp_fallback: Option<bool>,
    /// Ask the routing table for each XDP answer's way back (Knot's
    /// `xdp.route-check`; default false).
    pub xdp_route_check: Option<bool>,
    /// Preferred busy polling of the XDP sockets, frames per poll (Knot's
    /// `xdp.busypoll-budget`; default 0: off).
    pub xdp_busypoll_budget: Option<u16>,
    /// How long one busy poll may wait, µs (Knot's `xdp.busypoll-timeout`;
    /// default 20).
    pub xdp_busypoll_timeout: Option<u16>,
    /// Concurrent QUIC clients (Knot's name).
    pub quic_max_clients: Option<usize>,
    /// Idle time before a QUIC connection is closed, seconds (Knot's name).
    pub quic_idle_close_timeout: Option<u64>,
    /// Control socket path.
    pub control: Option<PathBuf>,
    /// The Prometheus endpoint's address ("ADDR:PORT", or ADDR for port 9153; "" none).
    pub metrics_listen: Option<String>,
    /// Count each request by transport, kind, type, RCODE and zone (default true).
    pub query_counters: Option<bool>,
    /// Log level.
    pub log_level: Option<String>,
    /// Log format: "text" or "json".
    pub log_format: Option<String>,
    /// The user to run as after binding the sockets (when started as root).
    pub user: Option<String>,
    /// Folder of zone snapshots.
    pub snapshot_dir: Option<PathBuf>,
    /// Zones.
    #[serde(default, rename = "zone")]
    pub zones: Vec<ZoneEntry>,
    /// Folder of the zones' journals.
    pub journal_dir: Option<PathBuf>,
    /// Largest journal per zone, bytes.
    pub journal_max_usage: Option<u64>,
    /// Most changesets per zone journal.
    pub journal_max_depth: Option<usize>,
    /// When zones that take updates write their zone files (seconds, -1 never).
    pub zonefile_sync: Option<i64>,
    /// TSIG keys.
    #[serde(default, rename = "key")]
    pub keys: Vec<KeyEntry>,
    /// Access control rules.
    #[serde(default, rename = "acl")]
    pub acls: Vec<AclEntry>,
    /// Other servers (secondaries to notify).
    #[serde(default, rename = "remote")]
    pub remotes: Vec<RemoteEntry>,
    /// Concurrent outgoing zone transfers.
    pub transfers_out: Option<usize>,
    /// Settings for zones made from a catalog (RFC 9432 members).
    #[serde(default, rename = "template")]
    pub templates: Vec<TemplateEntry>,
    /// CH TXT id.server / hostname.bind ("" = none; default: host name).
    pub identity: Option<String>,
    /// CH TXT version.server / version.bind ("" = none).
    pub version: Option<String>,
    /// NSID (RFC 5001), text or 0x-hex ("" = none; default: host name).
    pub nsid: Option<String>,
    /// Pad TCP answers to padded queries (RFC 7830).
    pub edns_padding: Option<bool>,
    /// DNS cookies (absent: off).
    pub cookies: Option<CookiesEntry>,
    /// Response-rate limiting (absent: off).
    pub rrl: Option<RrlEntry>,
    /// dnstap query logging (absent: off).
    pub dnstap: Option<DnstapEntry>,
    /// Folder of the signing keys (Knot's name; default: `keys` in journal-dir).
    pub kasp_db: Option<PathBuf>,
    /// Signing policies (Knot's `policy` section).
    #[serde(default, rename = "policy")]
    pub policies: Vec<PolicyEntry>,
    /// KSK submission checks (Knot's `submission` section).
    #[serde(default, rename = "submission")]
    pub submissions: Vec<dnssec::SubmissionEntry>,
    /// Key stores (Knot's `keystore` section): PKCS #11 tokens.
    #[serde(default, rename = "keystore")]
    pub keystores: Vec<dnssec::KeystoreEntry>,
}

/// One `[[key]]` table: a TSIG key.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct KeyEntry {
    /// The key's name.
    pub id: String,
    /// The HMAC algorithm, e.g. "hmac-sha256".
    pub algorithm: String,
    /// The secret, base64.
    pub secret: String,
}

/// One `[[acl]]` table.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AclEntry {
    /// The rule's name, referred to by zones.
    pub id: String,
    /// Addresses or prefixes.
    #[serde(default)]
    pub address: Vec<String>,
    /// Key names.
    #[serde(default)]
    pub key: Vec<String>,
    /// Actions: update, transfer, notify.
    #[serde(default)]
    pub action: Vec<String>,
    /// Protocols: udp, tcp, tls, quic (Knot's); absent: any.
    #[serde(default)]
    pub protocol: Vec<String>,
    /// Pins of the client certificates it takes (Knot's `cert-key`).
    #[serde(default, rename = "cert-key")]
    pub cert_key: Vec<String>,
    /// A match denies.
    #[serde(default)]
    pub deny: bool,
}

/// One `[[zone]]` table.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ZoneEntry {
    /// The zone's origin.
    pub name: String,
    /// Its zone file (none for a secondary: it is transferred).
    pub file: Option<PathBuf>,
    /// The primaries (remote ids) of a secondary zone.
    #[serde(default, alias = "primary")]
    pub master: Vec<String>,
    /// "generate": a catalog zone (RFC 9432) made from the zones that name it
    /// in `catalog-zone`.
    pub catalog_role: Option<String>,
    /// The catalog zone this zone is a member of (its role: generate).
    pub catalog_zone: Option<String>,
    /// The member's group in that catalog.
    pub catalog_group: Option<String>,
    /// Templates for the members of a consumed catalog (catalog-role =
    /// interpret): a member's group picks the template of that id, else the first.
    #[serde(default)]
    pub catalog_template: Vec<String>,
    /// Bounds on a secondary's SOA refresh, retry and expire (seconds;
    /// Knot's names and defaults).
    pub refresh_min_interval: Option<u32>,
    /// See `refresh_min_interval`.
    pub refresh_max_interval: Option<u32>,
    /// See `refresh_min_interval`.
    pub retry_min_interval: Option<u32>,
    /// See `refresh_min_interval`.
    pub retry_max_interval: Option<u32>,
    /// See `refresh_min_interval`.
    pub expire_min_interval: Option<u32>,
    /// See `refresh_min_interval`.
    pub expire_max_interval: Option<u32>,
    /// ACL rules by id, in order.
    #[serde(default)]
    pub acl: Vec<String>,
    /// How the SOA serial moves on a change.
    pub serial_policy: Option<String>,
    /// When the zone file is written after updates (seconds, -1 never).
    pub zonefile_sync: Option<i64>,
    /// Remotes (by id) to send NOTIFY to after each change.
    #[serde(default)]
    pub notify: Vec<String>,
    /// Seconds to wait before notifying (changes meanwhile share one NOTIFY).
    pub notify_delay: Option<u64>,
    /// Sign the zone (Knot's automatic signing).
    pub dnssec_signing: Option<bool>,
    /// The `[[policy]]` it is signed by (default: Knot's default policy).
    pub dnssec_policy: Option<String>,
    /// Knot's `dnssec-validation`: every new version of the zone (signed
    /// elsewhere) is checked before it is served.
    pub dnssec_validation: Option<bool>,
    /// Knot's `zonemd-generate`: none, zonemd-sha384, zonemd-sha512 or remove.
    pub zonemd_generate: Option<String>,
    /// Knot's `zonemd-verify`: a zone file or transfer whose ZONEMD is
    /// missing or wrong is refused.
    pub zonemd_verify: Option<bool>,
    /// `[[remote]]` ids the DS set is pushed to (the policy's `ds-push`
    /// for this zone alone).
    #[serde(default)]
    pub ds_push: Vec<String>,
}

impl ConfigFile {
    /// Parses the text of a configuration file.
    ///
    /// The parser runs on a thread of its own: its many short-lived pieces
    /// (10^5 zones make a configuration of megabytes) then stay in that
    /// thread's heap, given back whole, instead of being scattered among
    /// the long-lived allocations of the thread that starts the server
    /// (measured on 100,000 zones: 475 MiB resident after the start with
    /// the parse on the main thread, 340 MiB with it apart).
    pub fn parse(text: &str) -> Result<ConfigFile, ConfigError> {
        let parsed = std::thread::scope(|s| {
            std::thread::Builder::new()
                .name("lode-config".into())
                .spawn_scoped(s, || toml::from_str(text))
                .map(|h| h.join())
        });
        match parsed {
            Ok(Ok(r)) => r.map_err(|e| ConfigError::Syntax(e.to_string())),
            // No thread to be had, or the parser panicked: parse here.
            _ => toml::from_str(text).map_err(|e| ConfigError::Syntax(e.to_string())),
        }
    }

    /// Reads and parses a configuration file.
    pub fn read(path: &Path) -> Result<ConfigFile, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        ConfigFile::parse(&text).map_err(|e| match e {
            ConfigError::Syntax(s) => ConfigError::File {
                path: path.to_owned(),
                reason: s,
            },
            other => other,
        })
    }
}

/// Command-line options of `lode serve` (each overrides or adds to the file).
#[derive(Debug, Default, Clone)]
pub struct Options {
    /// The configuration file, re-read on every reload.
    pub config: Option<PathBuf>,
    /// Listen addresses; when given they replace the file's.
    pub listen: Vec<String>,
    /// Zones as (name, file); added to the file's, replacing one of the same name.
    pub zones: Vec<(String, PathBuf)>,
    /// UDP workers per address.
    pub workers: Option<usize>,
    /// Control socket path.
    pub control: Option<PathBuf>,
    /// The Prometheus endpoint (overrides the file's `metrics-listen`; "" none).
    pub metrics_listen: Option<String>,
    /// Log level.
    pub log_level: Option<String>,
    /// The user to run as after binding (overrides the file's `user`).
    pub user: Option<String>,
    /// Folder of zone snapshots.
    pub snapshot_dir: Option<PathBuf>,
    /// dnstap sink (turns query logging on, replaces the file's sink).
    pub dnstap: Option<String>,
}

/// The members of a generated catalog: (member, group), in configuration order.
pub type CatalogMembers = Vec<(Name, Option<String>)>;

/// Where a zone's text comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZoneSource {
    /// A zone file on disk (the path shared by whatever names it).
    File(std::sync::Arc<Path>),
    /// No file: a secondary zone, transferred from its primaries (its state
    /// lives in the journal folder).
    Transfer,
    /// A catalog zone (RFC 9432) generated from the zones configured as its
    /// members.
    Catalog(CatalogMembers),
    /// A zone built into the binary (the demo).
    Embedded {
        /// Name used in messages, e.g. `demo/example.com.zone`.
        label: &'static str,
        /// The zone file text.
        text: &'static str,
    },
}

impl ZoneSource {
    /// What identifies this version of the source (see
    /// `config::stamp::source_tag`): the state snapshot records it, so an edit
    /// made while the server was down is seen at the next start.
    pub fn tag(&self) -> Vec<u8> {
        match self {
            ZoneSource::File(p) => stamp::source_tag(p).unwrap_or_default(),
            ZoneSource::Embedded { label, .. } => label.as_bytes().to_vec(),
            ZoneSource::Transfer => Vec::new(),
            ZoneSource::Catalog(members) => crate::catalog::members_tag(members),
        }
    }
}

impl fmt::Display for ZoneSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZoneSource::File(p) => write!(f, "{}", p.display()),
            ZoneSource::Transfer => f.write_str("transfers from its primaries"),
            ZoneSource::Catalog(m) => write!(f, "the catalog of {} member zones", m.len()),
            ZoneSource::Embedded { label, .. } => write!(f, "{label} (built in)"),
        }
    }
}

/// A zone to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneSpec {
    /// Its origin.
    pub name: Name,
    /// Its text.
    pub source: ZoneSource,
}

/// The merged configuration the server runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Addresses to listen on (UDP and TCP).
    pub listen: Vec<SocketAddr>,
    /// Zones to serve.
    pub zones: Vec<std::sync::Arc<ZoneSpec>>,
    /// True when no zone was configured and the built-in demo zones are served.
    pub demo: bool,
    /// UDP worker threads per address.
    pub workers: usize,
    /// Threads of the writer pool that applies every zone's changes
    /// (`None`: one per CPU).
    pub background_workers: Option<usize>,
    /// Largest UDP answer with EDNS.
    pub max_udp_payload: u16,
    /// Receive buffer asked for each UDP socket, bytes (0: the kernel's default).
    pub udp_receive_buffer: usize,
    /// TCP idle timeout.
    pub tcp_idle_timeout: Duration,
    /// Concurrent TCP clients.
    pub tcp_max_clients: usize,
    /// Concurrent TCP clients from one source (`None`: a tenth of the
    /// limit, at least 128).
    pub tcp_max_clients_per_source: Option<usize>,
    /// Time for a TCP query to arrive whole (zero: no limit).
    pub tcp_io_timeout: Duration,
    /// DNS over TLS.
    pub tls: TlsSettings,
    /// UDP over AF_XDP: interfaces and ports.
    pub listen_xdp: Vec<lode_io::xdp::XdpListen>,
    /// When XDP cannot start: serve over the sockets alone (true), or do
    /// not start (false).
    pub xdp_fallback: bool,
    /// XDP answers follow the routing table (see lode_io's XdpConfig).
    pub xdp_route_check: bool,
    /// Preferred busy polling of the XDP sockets (None: off).
    pub xdp_busy_poll: Option<lode_io::xdp::BusyPoll>,
    /// Control socket path (`None`: no control socket).
    pub control: Option<PathBuf>,
    /// The control socket was given (`control` or `--control`), not the
    /// default: a server that finds it in use by another does not start.
    pub control_configured: bool,
    /// Where the Prometheus endpoint listens (`None`: no endpoint).
    pub metrics_listen: Option<SocketAddr>,
    /// Count each request (by transport, kind, type, RCODE, zone).
    pub query_counters: bool,
    /// Log level.
    pub log_level: String,
    /// Log format: "text" or "json" (the binary installs the subscriber).
    pub log_format: String,
    /// The user to run as once the sockets are bound (`None`: stay as started).
    pub user: Option<crate::privdrop::RunAs>,
    /// Folder of zone snapshots (`None`: zones are always read from text).
    pub snapshot_dir: Option<PathBuf>,
    /// Folder of the zones' journals (`None`: no zone takes updates).
    pub journal_dir: Option<PathBuf>,
    /// Journal bounds per zone.
    pub journal_max_usage: u64,
    /// `journal-max-usage` was given: reaching it flushes the journal even
    /// when it holds less than the zone's size (see the writer's
    /// `worth_flushing`).
    pub journal_max_usage_set: bool,
    /// Journal bounds per zone: changesets.
    pub journal_max_depth: usize,
    /// TSIG keys.
    pub keys: Vec<KeyEntry>,
    /// Per-zone update settings, for zones that have any.
    /// Shared between zones configured alike.
    pub zone_options: std::collections::HashMap<Name, std::sync::Arc<ZoneOptions>>,
    /// The global `zonefile-sync` (zones without their own).
    pub zonefile_sync: ZonefileSync,
    /// The zone files of secondary zones that name one: written from what
    /// they transferred, per `zonefile-sync` (as Knot's), never read (the
    /// secondary restarts from its state and journal).
    pub secondary_files: std::collections::HashMap<Name, PathBuf>,
    /// Concurrent outgoing zone transfers.
    pub transfers_out: usize,
    /// Identity, version, NSID and padding.
    pub identity: Identity,
    /// DNS cookies (`None`: off, Knot's default).
    pub cookies: Option<CookieSettings>,
    /// Response-rate limiting (`None`: off, Knot's default).
    pub rrl: Option<lode_rrl::Config>,
    /// dnstap query logging (`None`: off).
    pub dnstap: Option<lode_dnstap::Config>,
    /// Folder of the signing keys (a folder per zone in it).
    pub kasp_db: Option<PathBuf>,
}

/// Default limit of concurrent outgoing transfers (BIND's `transfers-out`).
pub const DEFAULT_TRANSFERS_OUT: usize = 10;

/// Knot DNS's default journal-max-usage (100 MiB).
pub const DEFAULT_JOURNAL_MAX_USAGE: u64 = 100 << 20;
/// Knot DNS's default journal-max-depth.
pub const DEFAULT_JOURNAL_MAX_DEPTH: usize = 20;

/// What a zone allows and how it changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ZoneOptions {
    /// Its ACL rules, in order.
    /// Shared by every zone that names the same ACLs (a hosting server's
    /// 10^5 zones hold one list, not 10^5 copies).
    pub acl: std::sync::Arc<[crate::acl::Rule]>,
    /// "increment" (the default, as Knot), "unixtime" or "dateserial".
    pub serial_policy: String,
    /// When its zone file is written after updates.
    pub zonefile_sync: ZonefileSync,
    /// Secondaries to notify after each change.
    pub notify: Vec<Remote>,
    /// The primaries of a secondary zone (empty: not a secondary).
    pub masters: Vec<Remote>,
    /// How long to wait before notifying.
    pub notify_delay: Duration,
    /// A catalog zone generated from its members.
    pub catalog: bool,
    /// A catalog zone read for its members (catalog-role = interpret): the
    /// templates (id, options) its members are made with, the first the default.
    pub interpret: Vec<(String, ZoneOptions)>,
    /// Bounds on a secondary's SOA timers.
    pub timers: TimerBounds,
    /// How the zone is signed (`None`: not signed here).
    pub signing: Option<Signing>,
    /// `dnssec-validation`: each new version (signed elsewhere) checked
    /// before it is served.
    pub validation: bool,
    /// `zonemd-generate`: the apex ZONEMD every new version gets.
    pub zonemd_generate: lode_zones::zonemd::Generate,
    /// `zonemd-verify`: a zone file or transfer in must carry a ZONEMD
    /// that verifies.
    pub zonemd_verify: bool,
}

impl ZoneOptions {
    /// True when the zone's ACL allows `action` to anyone.
    pub fn allows(&self, action: crate::acl::Action) -> bool {
        self.acl
            .iter()
            .any(|r| !r.deny && r.actions.contains(&action))
    }
    /// True when the zone changes through a writer with a journal (given a
    /// journal folder): it takes updates, or it is transferred or notified
    /// out (its journal is then the IXFR history, as Knot keeps one).
    pub fn is_live(&self) -> bool {
        use crate::acl::Action;
        self.allows(Action::Update)
            || self.allows(Action::Transfer)
            || !self.notify.is_empty()
            || !self.masters.is_empty()
            || self.catalog
            || self.signing.is_some()
            || self.zonemd_generate != lode_zones::zonemd::Generate::None
    }
}

/// Zones with more records than this do not write their zone file unless
/// `zonefile-sync` says so: for them the file is not the state (the state
/// snapshot and the journal are), and writing millions of records after
/// every change would cost more than the changes.
pub const ZONEFILE_SYNC_MAX_RECORDS: u64 = 100_000;

/// When a zone that takes updates writes its zone file (Knot's
/// `zonefile-sync`): never, right after each change, or at most every so
/// many seconds after a change. `lode zone-flush` writes it whatever this says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ZonefileSync {
    /// Not configured: right after each change (Knot's default, 0) for zones
    /// of up to [`ZONEFILE_SYNC_MAX_RECORDS`] records, never above.
    #[default]
    Default,
    /// `-1`: never.
    Never,
    /// `N` seconds, 0 included: at most every N seconds after a change.
    After(Duration),
}

/// A `zonefile-sync` that is none of -1, 0 or a number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("zonefile-sync = {0}: must be -1 (never), 0 (after each change) or seconds")]
pub struct ZonefileSyncError(pub i64);

impl ZonefileSync {
    /// The configured number (-1, 0 or more seconds).
    pub fn from_seconds(secs: i64) -> Result<ZonefileSync, ZonefileSyncError> {
        match secs {
            -1 => Ok(ZonefileSync::Never),
            0.. => Ok(ZonefileSync::After(Duration::from_secs(
                secs.unsigned_abs(),
            ))),
            _ => Err(ZonefileSyncError(secs)),
        }
    }

    /// How long after the last write a change is written, for a zone of
    /// `records` records; `None`: it is not written.
    pub fn interval(self, records: u64) -> Option<Duration> {
        match self {
            ZonefileSync::Default if records > ZONEFILE_SYNC_MAX_RECORDS => None,
            ZonefileSync::Default => Some(Duration::ZERO),
            ZonefileSync::Never => None,
            ZonefileSync::After(d) => Some(d),
        }
    }
}

impl fmt::Display for ZonefileSync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZonefileSync::Default => write!(
                f,
                "0 up to {ZONEFILE_SYNC_MAX_RECORDS} records, -1 above (the default)"
            ),
            ZonefileSync::Never => f.write_str("-1"),
            ZonefileSync::After(d) => write!(f, "{}", d.as_secs()),
        }
    }
}

impl Config {
    /// A zone's options (defaults when it has none configured).
    pub fn zone_options(&self, zone: &Name) -> std::sync::Arc<ZoneOptions> {
        self.zone_options.get(zone).cloned().unwrap_or_else(|| {
            std::sync::Arc::new(ZoneOptions {
                acl: Vec::new().into(),
                serial_policy: "increment".into(),
                zonefile_sync: self.zonefile_sync,
                notify: Vec::new(),
                notify_delay: Duration::ZERO,
                masters: Vec::new(),
                catalog: false,
                interpret: Vec::new(),
                timers: TimerBounds::default(),
                signing: None,
                validation: false,
                zonemd_generate: lode_zones::zonemd::Generate::None,
                zonemd_verify: false,
            })
        })
    }
}

/// A configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file cannot be read.
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The file is not valid TOML or has unknown keys.
    File {
        /// The file.
        path: PathBuf,
        /// The parser's message (with line and column).
        reason: String,
    },
    /// Configuration text that is not valid (no file name known).
    Syntax(String),
    /// A value is out of range or malformed.
    Value(String),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Read { path, reason } => write!(f, "{}: {reason}", path.display()),
            ConfigError::File { path, reason } => {
                write!(f, "{}: {}", path.display(), reason.trim_end())
            }
            ConfigError::Syntax(s) => f.write_str(s.trim_end()),
            ConfigError::Value(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Parses "ADDR:PORT", "[V6]:PORT" or a bare address (port 53).
pub fn parse_listen(s: &str) -> Result<SocketAddr, ConfigError> {
    let s = s.trim();
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    if let Ok(ip) = s
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        return Ok(SocketAddr::new(ip, 53));
    }
    Err(ConfigError::Value(format!(
        "listen address {s:?} is not ADDR:PORT (e.g. 127.0.0.1:53 or [::1]:53)"
    )))
}

/// Parses a zone origin (a final dot is implied).
fn parse_origin(s: &str) -> Result<Name, ConfigError> {
    let text = if s.ends_with('.') {
        s.to_owned()
    } else {
        format!("{s}.")
    };
    Name::parse(&text, None).map_err(|e| ConfigError::Value(format!("zone name {s:?}: {e}")))
}

/// A configuration file's `control` (relative: in `base`, the file's
/// folder); `""` stays empty (no control socket).
pub fn control_path(base: &Path, control: &Path) -> PathBuf {
    if control.as_os_str().is_empty() || control.is_absolute() {
        control.to_path_buf()
    } else {
        base.join(control)
    }
}

/// The default control socket: `/run/lode/lode.sock` for root and for the
/// owner of /run/lode (the packaged `lode` user, whose unit makes that
/// folder), otherwise `/tmp/lode-<uid>.sock` (a user cannot create folders
/// in /run).
pub fn default_control_path() -> PathBuf {
    let uid = std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(0);
    let owns_run_lode = std::fs::metadata("/run/lode").is_ok_and(|m| m.is_dir() && m.uid() == uid);
    if uid == 0 || owns_run_lode {
        PathBuf::from("/run/lode/lode.sock")
    } else {
        PathBuf::from(format!("/tmp/lode-{uid}.sock"))
    }
}

/// True when the IPv6 loopback can be bound here.
fn ipv6_loopback_available() -> bool {
    std::net::UdpSocket::bind("[::1]:0").is_ok()
}

impl Config {
    /// Merges the configuration file (if any) and the command line.
    pub fn resolve(options: &Options) -> Result<Config, ConfigError> {
        Config::resolve_read(options, None)
    }

    /// [`Config::resolve`] with the file `options` names already read and
    /// parsed (`lode serve` reads it first for its log settings; a file of
    /// 10^5 zones takes a second to parse).
    pub fn resolve_read(
        options: &Options,
        read: Option<ConfigFile>,
    ) -> Result<Config, ConfigError> {
        let (file, base) = match &options.config {
            Some(path) => (
                match read {
                    Some(file) => file,
                    None => ConfigFile::read(path)?,
                },
                path.parent().map(Path::to_owned).unwrap_or_default(),
            ),
            None => (ConfigFile::default(), PathBuf::new()),
        };
        Config::merge(&file, &base, options)
    }

    /// Merges a parsed file (relative zone paths taken from `base`) and the command line.
    pub fn merge(file: &ConfigFile, base: &Path, options: &Options) -> Result<Config, ConfigError> {
        let listen_text = if options.listen.is_empty() {
            &file.listen
        } else {
            &options.listen
        };
        let mut listen = listen_text
            .iter()
            .map(|s| parse_listen(s))
            .collect::<Result<Vec<_>, _>>()?;
        if listen.is_empty() {
            listen.push(SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)));
            if ipv6_loopback_available() {
                listen.push(SocketAddr::from((
                    std::net::Ipv6Addr::LOCALHOST,
                    DEFAULT_PORT,
                )));
            }
        }
        let acls = resolve_acls(file)?;
        let remotes = resolve_remotes(file, base)?;
        let policies =
            dnssec::resolve_policies(&file.policies, &file.submissions, &file.keystores, &remotes)?;
        let templates = resolve_templates(file, &acls, &remotes, &policies)?;
        let global_sync = match file.zonefile_sync {
            Some(s) => {
                ZonefileSync::from_seconds(s).map_err(|e| ConfigError::Value(e.to_string()))?
            }
            None => ZonefileSync::Default,
        };
        let zone_options = zone_options::resolve_zone_options(
            file,
            &acls,
            &remotes,
            &templates,
            &policies,
            global_sync,
        )?;
        for k in &file.keys {
            parse_origin(&k.id).map_err(|e| ConfigError::Value(format!("key {:?}: {e}", k.id)))?;
        }
        let mut zones: Vec<ZoneSpec> = Vec::new();
        let catalogs = resolve_catalogs(file)?;
        let mut secondary_files = std::collections::HashMap::new();
        let secondary = |name: &str| {
            parse_origin(name)
                .ok()
                .and_then(|n| zone_options.get(&n))
                .is_some_and(|o| !o.masters.is_empty())
        };
        for z in &file.zones {
            if let (Some(f), true) = (&z.file, secondary(&z.name)) {
                secondary_files.insert(parse_origin(&z.name)?, base.join(f));
            }
        }
        let entries = file
            .zones
            .iter()
            .map(|z| {
                let catalog = catalogs.iter().find(|(n, _)| n.as_str() == z.name);
                let source = match (&z.file, catalog) {
                    (_, Some((_, members))) => ZoneSource::Catalog(members.clone()),
                    (Some(_), None) if secondary(&z.name) => ZoneSource::Transfer,
                    (Some(f), None) => ZoneSource::File(base.join(f).into()),
                    (None, None) => ZoneSource::Transfer,
                };
                (z.name.as_str(), source)
            })
            .chain(
                options
                    .zones
                    .iter()
                    .map(|(n, f)| (n.as_str(), ZoneSource::File(f.as_path().into()))),
            );
        // A zone named twice: the later entry (the command line's) wins.
        let mut index: std::collections::HashMap<Name, usize> = std::collections::HashMap::new();
        for (name, source) in entries {
            let spec = ZoneSpec {
                name: parse_origin(name)?,
                source,
            };
            match index.get(&spec.name) {
                Some(&i) => zones[i] = spec,
                None => {
                    index.insert(spec.name.clone(), zones.len());
                    zones.push(spec);
                }
            }
        }
        // The demo is for `lode serve` with nothing else: a configuration
        // file without zones (the packaged one) serves nothing.
        let demo = zones.is_empty() && options.config.is_none();
        if demo {
            zones = demo::zones();
        }
        let workers = options
            .workers
            .or(file.workers)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        if workers == 0 || workers > 1024 {
            return Err(ConfigError::Value(format!(
                "workers = {workers}: must be between 1 and 1024"
            )));
        }
        if let Some(n) = file.background_workers.filter(|n| !(1..=1024).contains(n)) {
            return Err(ConfigError::Value(format!(
                "background-workers = {n}: must be between 1 and 1024"
            )));
        }
        let max_udp_payload = file.max_udp_payload.unwrap_or(DEFAULT_MAX_UDP_PAYLOAD);
        if !(512..=4096).contains(&max_udp_payload) {
            return Err(ConfigError::Value(format!(
                "max-udp-payload = {max_udp_payload}: must be between 512 and 4096"
            )));
        }
        let udp_receive_buffer = file.udp_receive_buffer.unwrap_or(4 << 20);
        if udp_receive_buffer > 1 << 30 {
            return Err(ConfigError::Value(format!(
                "udp-receive-buffer = {udp_receive_buffer}: must be at most 1 GiB"
            )));
        }
        let idle = file.tcp_idle_timeout.unwrap_or(DEFAULT_TCP_IDLE_SECS);
        if idle == 0 || idle > 3600 {
            return Err(ConfigError::Value(format!(
                "tcp-idle-timeout = {idle}: must be between 1 and 3600 seconds"
            )));
        }
        let tcp_max_clients = file.tcp_max_clients.unwrap_or(DEFAULT_TCP_MAX_CLIENTS);
        if tcp_max_clients == 0 {
            return Err(ConfigError::Value(
                "tcp-max-clients = 0: must be at least 1".into(),
            ));
        }
        let log_level = options
            .log_level
            .clone()
            .or_else(|| file.log_level.clone())
            .unwrap_or_else(|| "info".into());
        if !LOG_LEVELS.contains(&log_level.as_str()) {
            return Err(ConfigError::Value(format!(
                "log-level = {log_level:?}: must be error, warn, info, debug or trace"
            )));
        }
        let log_format = file.log_format.clone().unwrap_or_else(|| "text".into());
        if !LOG_FORMATS.contains(&log_format.as_str()) {
            return Err(ConfigError::Value(format!(
                "log-format = {log_format:?}: must be text or json"
            )));
        }
        let user = match options.user.as_ref().or(file.user.as_ref()) {
            Some(name) => Some(
                crate::privdrop::RunAs::lookup(name)
                    .map_err(|e| ConfigError::Value(e.to_string()))?,
            ),
            None => None,
        };
        // A relative `control` of the file is in the file's folder, as its
        // zone files and journal-dir are (and as `lode … -c FILE` finds it).
        let control = options
            .control
            .clone()
            .or_else(|| file.control.as_ref().map(|p| control_path(base, p)))
            .unwrap_or_else(default_control_path);
        let identity = Identity::resolve(
            file.identity.as_deref(),
            file.version.as_deref(),
            file.nsid.as_deref(),
            file.edns_padding,
        )?;
        let kasp_db = file
            .kasp_db
            .as_ref()
            .map(|d| base.join(d))
            .or_else(|| file.journal_dir.as_ref().map(|d| base.join(d).join("keys")));
        let tls = tls::resolve_tls(file, base, kasp_db.as_deref(), tcp_max_clients)?;
        Ok(Config {
            listen,
            zones: zones.into_iter().map(std::sync::Arc::new).collect(),
            demo,
            workers,
            background_workers: file.background_workers,
            max_udp_payload,
            udp_receive_buffer,
            tcp_idle_timeout: Duration::from_secs(idle),
            tcp_max_clients,
            listen_xdp: file
                .listen_xdp
                .iter()
                .map(|s| lode_io::xdp::XdpListen::parse(s))
                .collect::<Result<Vec<_>, _>>()
                .map_err(ConfigError::Value)?,
            xdp_fallback: file.xdp_fallback.unwrap_or(false),
            xdp_route_check: file.xdp_route_check.unwrap_or(false),
            xdp_busy_poll: match (file.xdp_busypoll_budget, file.xdp_busypoll_timeout) {
                (None | Some(0), _) => None,
                (Some(_), Some(0)) => {
                    return Err(ConfigError::Value(
                        "xdp-busypoll-timeout = 0: must be at least 1 µs (Knot's range 1-65535)"
                            .into(),
                    ))
                }
                (Some(budget), timeout) => Some(lode_io::xdp::BusyPoll {
                    budget,
                    timeout_us: u32::from(timeout.unwrap_or(20)),
                }),
            },
            tcp_max_clients_per_source: match file.tcp_max_clients_per_source {
                Some(0) => {
                    return Err(ConfigError::Value(
                        "tcp-max-clients-per-source = 0: must be at least 1".into(),
                    ))
                }
                n => n,
            },
            tcp_io_timeout: Duration::from_millis(
                file.tcp_io_timeout.unwrap_or(DEFAULT_TCP_IO_TIMEOUT_MS),
            ),
            tls,
            control: Some(control).filter(|p| !p.as_os_str().is_empty()),
            control_configured: options.control.is_some() || file.control.is_some(),
            metrics_listen: metrics_listen(
                options
                    .metrics_listen
                    .as_deref()
                    .or(file.metrics_listen.as_deref()),
            )?,
            query_counters: file.query_counters.unwrap_or(true),
            log_level,
            log_format,
            user,
            snapshot_dir: options
                .snapshot_dir
                .clone()
                .or_else(|| file.snapshot_dir.as_ref().map(|d| base.join(d))),
            journal_dir: file.journal_dir.as_ref().map(|d| base.join(d)),
            kasp_db,
            journal_max_usage: file.journal_max_usage.unwrap_or(DEFAULT_JOURNAL_MAX_USAGE),
            journal_max_usage_set: file.journal_max_usage.is_some(),
            journal_max_depth: file.journal_max_depth.unwrap_or(DEFAULT_JOURNAL_MAX_DEPTH),
            keys: file.keys.clone(),
            zone_options,
            zonefile_sync: global_sync,
            secondary_files,
            transfers_out: match file.transfers_out {
                Some(0) => {
                    return Err(ConfigError::Value(
                        "transfers-out = 0: must be at least 1".into(),
                    ))
                }
                Some(n) => n,
                None => DEFAULT_TRANSFERS_OUT,
            },
            dnstap: dnstap::resolve_dnstap(
                file.dnstap.as_ref(),
                options.dnstap.as_deref(),
                &identity,
            )?,
            identity,
            cookies: file
                .cookies
                .as_ref()
                .map(CookiesEntry::resolve)
                .transpose()?,
            rrl: file.rrl.as_ref().map(RrlEntry::resolve).transpose()?,
        })
    }
}

/// The `[[acl]]` tables as rules (key names checked against `[[key]]`).
fn resolve_acls(file: &ConfigFile) -> Result<Vec<crate::acl::Rule>, ConfigError> {
    let mut rules = Vec::new();
    for a in &file.acls {
        let bad = |why: String| ConfigError::Value(format!("acl {:?}: {why}", a.id));
        let addresses = a
            .address
            .iter()
            .map(|s| s.parse())
            .collect::<Result<Vec<_>, crate::acl::AclError>>()
            .map_err(|e| bad(e.to_string()))?;
        let mut keys = Vec::new();
        for k in &a.key {
            let name = parse_origin(k).map_err(|e| bad(e.to_string()))?;
            if !file
                .keys
                .iter()
                .any(|d| parse_origin(&d.id).ok().as_ref() == Some(&name))
            {
                return Err(bad(format!("key {k:?} is not defined in a [[key]] table")));
            }
            keys.push(name.to_lowercase());
        }
        let actions = a
            .action
            .iter()
            .map(|s| s.parse())
            .collect::<Result<Vec<_>, crate::acl::AclError>>()
            .map_err(|e| bad(e.to_string()))?;
        let protocols = a
            .protocol
            .iter()
            .map(|s| crate::acl::parse_protocol(s))
            .collect::<Result<Vec<_>, crate::acl::AclError>>()
            .map_err(|e| bad(e.to_string()))?;
        if let Some(p) = a.cert_key.iter().find(|p| !lode_io::tls::is_pin(p)) {
            return Err(bad(format!(
                "cert-key {p:?} is not a pin (Base64 of a SHA-256: 44 characters)"
            )));
        }
        rules.push(crate::acl::Rule {
            id: a.id.clone(),
            addresses,
            keys,
            actions,
            protocols,
            cert_keys: a.cert_key.clone(),
            deny: a.deny,
        });
    }
    Ok(rules)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod update_tests;
