//! One harness for the DNS servers that tests and instruments run next to
//! Lode: Knot DNS, NSD, BIND 9, PowerDNS and Lode itself.
//!
//! A [`Spec`] describes the server under test (implementation, loopback
//! port, zones with their role, remotes, NOTIFY targets, ACLs and TSIG
//! keys, optional signing, CPU pinning, socket buffers, workers);
//! [`Server::start`] writes that implementation's configuration into a
//! directory of its own, starts the process, waits (bounded) until every
//! zone answers, and stops it by its PID (SIGTERM, then SIGKILL) when
//! dropped. [`Server::sample`] reads its CPU time, memory, threads and open
//! files from `/proc`.
//!
//! A program that is not installed is [`Error::NotInstalled`]: each test
//! decides whether that skips or fails it ([`installed_or_skip`] is the
//! usual choice: skip loudly, or fail under `LODE_REQUIRE_KNOT=1`).

#![deny(missing_docs)]

mod certificate;
mod conf;
mod presign;
mod probe;
mod process;
mod sample;

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

pub use certificate::self_signed_certificate;
pub use presign::presign;
pub use probe::{soa_query, Answer};
pub use process::{process_tree, program, Server};
pub use sample::Sample;

/// A DNS server implementation the harness can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Knot DNS (`knotd`).
    Knot,
    /// NSD (`nsd`).
    Nsd,
    /// BIND 9 (`named`).
    Bind,
    /// PowerDNS Authoritative with the bind back end (`pdns_server`).
    PowerDns,
    /// Lode (`lode serve`; its binary is given by [`Spec::program`]).
    Lode,
    /// Another program (e.g. a benchmark's own responder), run with
    /// [`Spec::program`] and [`Spec::args`] only: nothing is configured;
    /// its zones, if any, only tell readiness what to ask. Not in [`Kind::ALL`].
    Program,
}

impl Kind {
    /// Every implementation.
    pub const ALL: [Kind; 5] = [
        Kind::Knot,
        Kind::Nsd,
        Kind::Bind,
        Kind::PowerDns,
        Kind::Lode,
    ];

    /// A short name for labels and messages.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Knot => "knot",
            Kind::Nsd => "nsd",
            Kind::Bind => "bind",
            Kind::PowerDns => "powerdns",
            Kind::Lode => "lode",
            Kind::Program => "program",
        }
    }

    /// The server program.
    pub fn program(self) -> &'static str {
        match self {
            Kind::Knot => "knotd",
            Kind::Nsd => "nsd",
            Kind::Bind => "named",
            Kind::PowerDns => "pdns_server",
            Kind::Lode => "lode",
            Kind::Program => "",
        }
    }

    /// The Debian package(s) that install [`Kind::program`].
    pub fn package(self) -> &'static str {
        match self {
            Kind::Knot => "knot",
            Kind::Nsd => "nsd",
            Kind::Bind => "bind9",
            Kind::PowerDns => "pdns-server pdns-backend-bind",
            Kind::Lode => "lode",
            Kind::Program => "",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A TSIG key (RFC 8945) as the configurations spell it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    /// Key name, without the final dot (every implementation accepts that form).
    pub name: String,
    /// Algorithm mnemonic, e.g. `hmac-sha256`.
    pub algorithm: String,
    /// The secret in Base64.
    pub secret: String,
}

impl Key {
    /// A key from its three parts.
    pub fn new(name: &str, algorithm: &str, secret: &str) -> Key {
        Key {
            name: name.into(),
            algorithm: algorithm.into(),
            secret: secret.into(),
        }
    }
}

/// What an [`Acl`] allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Queries (Knot's `action: query`; Knot only).
    Query,
    /// Zone transfers out (AXFR, IXFR).
    Transfer,
    /// RFC 2136 UPDATE.
    Update,
    /// NOTIFY in (a secondary's primaries).
    Notify,
}

impl Action {
    /// The name Knot and Lode use.
    pub fn name(self) -> &'static str {
        match self {
            Action::Query => "query",
            Action::Transfer => "transfer",
            Action::Update => "update",
            Action::Notify => "notify",
        }
    }
}

/// An access rule: requests from `address` (any when None) signed with one
/// of `keys` (unsigned when empty) may do `actions`. Zones refer to it by `id`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acl {
    /// The rule's name.
    pub id: String,
    /// The source address or prefix, e.g. `127.0.0.1` or `127.0.0.0/8`.
    pub address: Option<String>,
    /// Key names (of [`Spec::keys`]); any one of them.
    pub keys: Vec<String>,
    /// What is allowed.
    pub actions: Vec<Action>,
}

impl Acl {
    /// A rule named `id` allowing `actions`.
    pub fn new(id: &str, actions: &[Action]) -> Acl {
        Acl {
            id: id.into(),
            address: None,
            keys: Vec::new(),
            actions: actions.to_vec(),
        }
    }

    /// The same rule only for requests from `address`.
    pub fn from(mut self, address: &str) -> Acl {
        self.address = Some(address.into());
        self
    }

    /// The same rule only for requests signed with `key`.
    pub fn key(mut self, key: &str) -> Acl {
        self.keys.push(key.into());
        self
    }
}

/// Where a primary zone's records come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Content {
    /// An existing zone file, read in place.
    File(PathBuf),
    /// An existing zone file, copied into the server's directory first
    /// (a server that writes its zone back then changes only its copy).
    Copy(PathBuf),
    /// Zone text, written into the server's directory.
    Text(String),
    /// Knot's default: `<zone>.zone` in the server's storage directory, which
    /// the test has written there (Knot only).
    Storage,
}

/// A zone's role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// Loaded from its content.
    Primary(Content),
    /// Transferred from these primaries (with [`Zone::key`]).
    Secondary(Vec<SocketAddr>),
}

/// A zone's part in a catalog (RFC 9432; Knot and Lode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Catalog {
    /// The catalog zone, made from its members (`catalog-role: generate`;
    /// a primary with [`Content::Storage`]).
    Generate,
    /// A member of the catalog zone named here (`catalog-role: member`).
    Member(String),
    /// A catalog zone read for its members (`catalog-role: interpret`; a
    /// secondary): each becomes a zone with the catalog's primaries, key,
    /// ACLs and journal.
    Interpret,
}

/// Automatic DNSSEC signing of a zone: Knot's `dnssec-signing: on` with a
/// policy; Lode's `dnssec-signing = true`, with a `[[policy]]` unless this is
/// the default; BIND's `dnssec-policy default` (the default only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signing {
    /// Algorithm mnemonic, e.g. `ecdsap256sha256`.
    pub algorithm: String,
    /// NSEC3 instead of NSEC (0 iterations, no salt).
    pub nsec3: bool,
    /// NSEC3 opt-out.
    pub opt_out: bool,
    /// Manual key management (keys imported by the test, no rollovers).
    pub manual: bool,
    /// Threads of a whole-zone signing (`signing-threads`; None: the server's own).
    pub threads: Option<usize>,
    /// The keys made and kept in a PKCS #11 token instead of files.
    pub keystore: Option<Pkcs11>,
    /// Rollover timing instead of the server's own.
    pub rollover: Option<Rollover>,
}

impl Default for Signing {
    fn default() -> Signing {
        Signing {
            algorithm: "ecdsap256sha256".into(),
            nsec3: false,
            opt_out: false,
            manual: false,
            threads: None,
            keystore: None,
            rollover: None,
        }
    }
}

/// DNS over TLS (RFC 7858) beside the plain listeners, on the same
/// addresses (Lode, NSD, BIND); Lode also DNS over QUIC (RFC 9250).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tls {
    /// The TLS port.
    pub port: u16,
    /// The QUIC port (Lode only).
    pub quic_port: Option<u16>,
    /// The certificate chain (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
}

/// A PKCS #11 token keys are made in and sign in (a `keystore` of backend
/// `pkcs11`). Knot takes the PIN in its configuration (`pin-value`); Lode
/// from a file written beside its configuration (`pin-source`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pkcs11 {
    /// The token's label.
    pub token: String,
    /// The user PIN.
    pub pin: String,
    /// The module (e.g. `/usr/lib/softhsm/libsofthsm2.so`).
    pub module: PathBuf,
}

/// Key rollover timing of a policy, seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rollover {
    /// `propagation-delay`: added to each rollover step.
    pub propagation_delay: u32,
    /// `dnskey-ttl`: the DNSKEY RRset's TTL.
    pub dnskey_ttl: u32,
    /// `zsk-lifetime`: from a ZSK's activation to its automatic rollover (0: never).
    pub zsk_lifetime: u32,
}

/// One zone of a [`Spec`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zone {
    /// The apex, absolute (with the final dot).
    pub name: String,
    /// Primary (and its content) or secondary (and its primaries).
    pub role: Role,
    /// Sent NOTIFY after each change (with [`Zone::key`]).
    pub notify: Vec<SocketAddr>,
    /// Ids of [`Spec::acls`] that apply to the zone.
    pub acls: Vec<String>,
    /// The key (a name of [`Spec::keys`]) of transfers from the primaries
    /// and of NOTIFYs sent.
    pub key: Option<String>,
    /// Keep a journal of changes (Knot's `journal-content: changes`, so that
    /// IXFR can be served); on by default.
    pub journal: bool,
    /// Automatic DNSSEC signing.
    pub signing: Option<Signing>,
    /// Its part in a catalog.
    pub catalog: Option<Catalog>,
    /// Transfers from the primaries over TLS (XoT, RFC 9103), the primary
    /// not authenticated (BIND only).
    pub primaries_tls: bool,
    /// Lines in the implementation's own syntax added to the zone's entry
    /// (Knot: YAML lines indented four spaces; Lode: TOML lines; BIND:
    /// statements), for what the typed description does not name.
    pub extra: String,
}

impl Zone {
    fn new(name: &str, role: Role) -> Zone {
        Zone {
            name: format!("{}.", name.trim_end_matches('.')),
            role,
            notify: Vec::new(),
            acls: Vec::new(),
            key: None,
            journal: true,
            signing: None,
            catalog: None,
            primaries_tls: false,
            extra: String::new(),
        }
    }

    /// A primary zone `name` with `content`.
    pub fn primary(name: &str, content: Content) -> Zone {
        Zone::new(name, Role::Primary(content))
    }

    /// A secondary zone `name` transferred from `primaries`.
    pub fn secondary(name: &str, primaries: &[SocketAddr]) -> Zone {
        Zone::new(name, Role::Secondary(primaries.to_vec()))
    }

    /// The same zone with these ACL ids.
    pub fn acls(mut self, ids: &[&str]) -> Zone {
        self.acls = ids.iter().map(|s| s.to_string()).collect();
        self
    }

    /// The same zone using `key` with its primaries and NOTIFY targets.
    pub fn key(mut self, key: &str) -> Zone {
        self.key = Some(key.into());
        self
    }

    /// The same zone sending NOTIFY to `targets`.
    pub fn notify(mut self, targets: &[SocketAddr]) -> Zone {
        self.notify = targets.to_vec();
        self
    }

    /// The same zone with `extra` lines (see [`Zone::extra`]).
    pub fn extra(mut self, extra: &str) -> Zone {
        self.extra.push_str(extra);
        self
    }

    /// The same zone with (`true`) or without a journal of changes.
    pub fn journal(mut self, on: bool) -> Zone {
        self.journal = on;
        self
    }

    /// The same zone with this part in a catalog.
    pub fn catalog(mut self, catalog: Catalog) -> Zone {
        self.catalog = Some(catalog);
        self
    }

    /// The same zone signed with `signing`.
    pub fn signed(mut self, signing: Signing) -> Zone {
        self.signing = Some(signing);
        self
    }

    /// The same zone transferred from its primaries over TLS.
    pub fn primaries_tls(mut self) -> Zone {
        self.primaries_tls = true;
        self
    }
}

/// When [`Server::start`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ready {
    /// Every primary zone answers its SOA query NOERROR, authoritative,
    /// with an answer; every secondary zone's SOA query gets a reply (it may
    /// not have the zone yet).
    Zones,
    /// Every zone's SOA query gets a reply, whatever it says (the root's
    /// when there are no zones): it listens; a zone it answers wrongly
    /// still counts.
    Answering,
    /// As soon as the process is started.
    Started,
}

/// How much a server logs, and where.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Logging {
    /// What tests read: every transfer and NOTIFY, in the server's own log
    /// file where it has one (Knot `knot.log` at info, NSD `nsd.log` at
    /// verbosity 2, BIND `named.log` at debug 3, PowerDNS loglevel 6).
    #[default]
    Verbose,
    /// What a measurement runs with: the ordinary level, on stderr (into
    /// [`Spec::stdio`]): Knot info, NSD verbosity 1, BIND `-g` (info),
    /// PowerDNS loglevel 4. Lode logs to stderr either way (its level is
    /// its own option).
    Plain,
}

/// The description of one server under test.
#[derive(Clone, Debug)]
pub struct Spec {
    /// Which implementation.
    pub kind: Kind,
    /// The program; None: [`Kind::program`] found in PATH, /usr/sbin or
    /// /sbin (Lode has none: give its binary).
    pub program: Option<PathBuf>,
    /// A label for messages (default `kind@port`).
    pub label: Option<String>,
    /// Its UDP and TCP port.
    pub port: u16,
    /// Addresses it listens on with [`Spec::port`] (default 127.0.0.1).
    pub addresses: Vec<IpAddr>,
    /// TSIG keys.
    pub keys: Vec<Key>,
    /// Access rules the zones refer to.
    pub acls: Vec<Acl>,
    /// The zones.
    pub zones: Vec<Zone>,
    /// Worker threads (UDP workers, NSD's server processes, BIND's `-n`,
    /// PowerDNS' receiver threads); None: 1 (Lode: 1).
    pub workers: Option<usize>,
    /// Knot's `tcp-workers` (None: as many as [`Spec::workers`]); elsewhere unsupported.
    pub tcp_workers: Option<usize>,
    /// Knot's `background-workers` (None: 1); elsewhere unsupported.
    pub background_workers: Option<usize>,
    /// CPUs it is pinned to (with `taskset -c`, which execs it: its PID is the server's).
    pub cpus: Vec<usize>,
    /// UDP receive and send buffer in bytes as asked of the kernel (which
    /// doubles it): NSD's `so-rcvbuf`/`so-sndbuf`, BIND's
    /// `udp-receive-buffer`/`udp-send-buffer`, Lode's `udp-receive-buffer`
    /// (it has no send key); elsewhere unsupported.
    pub socket_buffer: Option<usize>,
    /// Response-rate limiting: answers per second per bucket (Lode's
    /// `[rrl] rate-limit`, Knot's global `mod-rrl`); elsewhere unsupported.
    pub rrl_rate: Option<u32>,
    /// DNS cookies (RFC 7873, 9018) with this server secret (Lode's
    /// `[cookies] secret`, Knot's global `mod-cookies`); elsewhere unsupported.
    pub cookie_secret: Option<[u8; 16]>,
    /// DNS over TLS (and for Lode QUIC) listeners (Lode, NSD, BIND).
    pub tls: Option<Tls>,
    /// How much it logs, and where.
    pub logging: Logging,
    /// Its directory: None: a fresh temporary one, removed when the server
    /// is dropped (kept with `LODE_KEEP_TMP` set); Some: created if need be,
    /// never removed (a test can start a server again on the same state).
    pub dir: Option<PathBuf>,
    /// Configuration in the implementation's own syntax for what the
    /// typed description does not name. Knot: lines of the `server:`
    /// section, indented four spaces; Lode: top-level TOML keys; NSD: lines
    /// of `server:`; BIND: statements inside `options { }`; PowerDNS:
    /// `pdns.conf` lines.
    pub server_extra: String,
    /// Whole sections (Knot: e.g. `policy:`, `mod-*`, templates; Lode:
    /// tables; BIND: statements) added before the zones.
    pub sections: String,
    /// Lines of Knot's default template (indented four spaces).
    pub template_extra: String,
    /// When [`Server::start`] returns.
    pub ready: Ready,
    /// How long readiness may take (default 30 s: a loaded 2-core machine
    /// and large zones need it).
    pub ready_timeout: Duration,
    /// Extra command-line arguments for the server program.
    pub args: Vec<String>,
    /// A command the server is run under that execs it (its PID stays the
    /// server's), e.g. `ip netns exec NS`; readiness probes still go from
    /// here (use [`Ready::Started`] when they cannot reach it).
    pub exec_under: Vec<String>,
    /// The file its stdout and stderr go to, created afresh at each start
    /// (default `stdio.log` in [`Spec::dir`]; servers sharing a directory
    /// need their own).
    pub stdio: Option<PathBuf>,
    /// The whole configuration file, written instead of the one the
    /// description makes (its zones are still what readiness waits for):
    /// for what the typed description cannot say. Paths in it should be
    /// absolute, in [`Spec::dir`].
    pub config: Option<String>,
    /// An existing configuration file, used where it is (nothing written):
    /// the test may change it and have the server reload it. PowerDNS
    /// reads `pdns.conf` of its directory. Its zones are still what
    /// readiness waits for.
    pub config_file: Option<PathBuf>,
    /// How long [`Server::stop`] waits after SIGTERM before SIGKILL (default 5 s).
    pub stop_grace: Duration,
}

impl Spec {
    /// A `kind` server on 127.0.0.1:`port` with no zones yet.
    pub fn new(kind: Kind, port: u16) -> Spec {
        Spec {
            kind,
            program: None,
            label: None,
            port,
            addresses: vec![IpAddr::from([127, 0, 0, 1])],
            keys: Vec::new(),
            acls: Vec::new(),
            zones: Vec::new(),
            workers: None,
            tcp_workers: None,
            background_workers: None,
            cpus: Vec::new(),
            socket_buffer: None,
            rrl_rate: None,
            cookie_secret: None,
            tls: None,
            logging: Logging::Verbose,
            dir: None,
            server_extra: String::new(),
            sections: String::new(),
            template_extra: String::new(),
            ready: Ready::Zones,
            ready_timeout: Duration::from_secs(30),
            args: Vec::new(),
            exec_under: Vec::new(),
            stdio: None,
            config: None,
            config_file: None,
            stop_grace: Duration::from_secs(5),
        }
    }

    /// The same server run under `setpriv --pdeathsig TERM` (the kernel
    /// stops it if the process that started it dies without stopping it)
    /// and `env --default-signal=INT,TERM,HUP` (a starter whose threads
    /// block those signals, to wait for them in one thread, would
    /// otherwise pass the mask on): both exec, its PID stays the server's.
    pub fn stop_with_parent(mut self) -> Spec {
        self.exec_under.extend(
            [
                "setpriv",
                "--pdeathsig",
                "TERM",
                "--",
                "env",
                "--default-signal=INT,TERM,HUP",
            ]
            .map(String::from),
        );
        self
    }

    /// The same server also listening on [::1].
    pub fn with_v6(mut self) -> Spec {
        self.addresses
            .push(IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1]));
        self
    }

    /// The same server with `zone` added.
    pub fn zone(mut self, zone: Zone) -> Spec {
        self.zones.push(zone);
        self
    }

    /// The same server with `key` added.
    pub fn key(mut self, key: Key) -> Spec {
        self.keys.push(key);
        self
    }

    /// The same server with `acl` added.
    pub fn acl(mut self, acl: Acl) -> Spec {
        self.acls.push(acl);
        self
    }

    /// The same server with TLS listeners.
    pub fn tls(mut self, tls: Tls) -> Spec {
        self.tls = Some(tls);
        self
    }

    /// Writes the configuration into [`Spec::dir`] (which must be set)
    /// without starting the server, for a tool that reads it first (Knot's
    /// `keymgr`); the configuration file. [`Server::start`] writes it again.
    pub fn write_config(&self) -> Result<PathBuf, Error> {
        let dir = self
            .dir
            .as_ref()
            .ok_or_else(|| Error::Config("write_config needs Spec::dir".into()))?;
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::Io(format!("mkdir {}: {e}", dir.display())))?;
        Ok(conf::write(self, dir)?.conf)
    }

    /// The label for messages.
    pub fn label(&self) -> String {
        self.label
            .clone()
            .unwrap_or_else(|| format!("{}@{}", self.kind, self.port))
    }

    /// The key named `name`, if declared.
    fn find_key(&self, name: &str) -> Option<&Key> {
        self.keys.iter().find(|k| k.name == name)
    }

    /// The ACL with id `id`, if declared.
    fn find_acl(&self, id: &str) -> Result<&Acl, Error> {
        self.acls
            .iter()
            .find(|a| a.id == id)
            .ok_or_else(|| Error::Config(format!("zone refers to unknown ACL {id:?}")))
    }

    /// The worker count (1 unless set).
    fn workers(&self) -> usize {
        self.workers.unwrap_or(1).max(1)
    }
}

/// Why a server could not be started.
#[derive(Debug)]
pub enum Error {
    /// Its program is not installed.
    NotInstalled {
        /// The program looked for.
        program: String,
        /// The Debian package(s) that install it.
        package: String,
    },
    /// The description asks for something this implementation cannot do
    /// (or the harness does not write for it).
    Unsupported {
        /// Which implementation.
        kind: Kind,
        /// What.
        what: String,
    },
    /// The description is inconsistent (e.g. an unknown ACL id).
    Config(String),
    /// Writing its files or starting it failed.
    Io(String),
    /// It exited before it was ready.
    Exited {
        /// Its label.
        label: String,
        /// The end of its log.
        log_tail: String,
    },
    /// It did not become ready in time.
    NotReady {
        /// Its label.
        label: String,
        /// What did not answer.
        pending: String,
        /// The bound.
        waited: Duration,
        /// The end of its log.
        log_tail: String,
    },
}

impl Error {
    /// True when the server could not bind its port (taken by another
    /// process between the choice of the port and the start): the caller
    /// may try another port.
    pub fn port_taken(&self) -> bool {
        let text = self.to_string().to_lowercase();
        text.contains("address already in use") || text.contains("address in use")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotInstalled { program, package } => {
                write!(f, "{program} is not installed (Debian package {package})")
            }
            Error::Unsupported { kind, what } => write!(f, "{kind}: {what} is not supported"),
            Error::Config(what) => write!(f, "configuration: {what}"),
            Error::Io(what) => f.write_str(what),
            Error::Exited { label, log_tail } => {
                write!(f, "{label} exited during start-up:\n{log_tail}")
            }
            Error::NotReady {
                label,
                pending,
                waited,
                log_tail,
            } => write!(
                f,
                "{label} did not serve {pending} within {} s:\n{log_tail}",
                waited.as_secs()
            ),
        }
    }
}

impl std::error::Error for Error {}

/// The program of `kind` if it is installed; otherwise None after a loud
/// "SKIPPED" line, or a panic when `LODE_REQUIRE_KNOT=1` (scripts/test.sh
/// sets it: there a missing server is a failure).
pub fn installed_or_skip(kind: Kind) -> Option<PathBuf> {
    match program(kind.program()) {
        Some(p) => Some(p),
        None => {
            let what = format!(
                "{} (Debian package `{}`) is not installed",
                kind.program(),
                kind.package()
            );
            if std::env::var("LODE_REQUIRE_KNOT").as_deref() == Ok("1") {
                panic!("{what} but LODE_REQUIRE_KNOT=1");
            }
            eprintln!("SKIPPED: {what}");
            None
        }
    }
}
