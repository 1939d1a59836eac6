//! `lode-bench encrypted`: DNS over TLS (and QUIC) side by side. Lode, NSD
//! and BIND 9 serve the same ENUM zone with the same certificate, one after
//! the other, each pinned to the server CPU with one worker; every client
//! runs on the tester CPU (this process pins itself there).
//!
//! ```text
//!  gen enum (1 zone) + openssl P-256 certificate
//!  per server (lode-peers, TLS listeners):
//!    dnsperf -m dot | -m tcp, CLIENTS persistent connections ─▶ answers/s, DoT ÷ TCP
//!    new DoT handshakes, one query each (16 workers) ─▶ handshakes/s, server CPU each
//!  Lode also:
//!    DoQ handshakes; DoQ answers/s (CLIENTS connections × 8 streams); IDLE idle DoQ
//!    connections ─▶ bytes each; AXFR over TCP and over TLS (3 rounds); a BIND secondary
//!    taking the zone over TLS, timed; IDLE idle DoT connections ─▶ bytes each;
//!    200 × kdig +quic
//!  ─▶ encrypted.md, encrypted.json
//! ```
//!
//! Every run is bounded (dnsperf -l, the clients' deadlines, waits with a
//! limit); servers are stopped by their PID.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lode_peers::{self as peers, Acl, Action, Content, Logging, Ready, Server, Spec, Tls, Zone};
use lode_wire::Rtype;
use serde_json::{json, Value};

use super::{doq_hold, doq_rate, dot_client, dot_hold, handshakes, idle_line, Secure, Tally};
use crate::compare::servers::Kind;
use crate::compare::sys::{pid_cpu, TICKS};
use crate::fleet::probe::{axfr_medians, axfr_rounds, axfr_summary, AxfrRound};
use crate::gen::enumset::{generate, EnumSetSpec};
use crate::provenance::Provenance;
use crate::query::QuerySet;
use crate::server_cost::{status_bytes, CostError};
use crate::zones::probe;

/// Workers of the handshake runs.
pub const HANDSHAKE_WORKERS: usize = 16;
/// Streams in flight per DoQ connection.
pub const DOQ_INFLIGHT: usize = 8;
/// AXFR rounds per transport (the median is reported).
pub const AXFR_ROUNDS: u32 = 3;
/// kdig +quic runs, each a handshake and a query.
pub const KDIG_RUNS: usize = 200;
/// TCP (and TLS) connections every server accepts at once.
const TCP_CLIENTS: u32 = 10_000;
/// Longest wait for the BIND secondary (its start included).
const SECONDARY_LIMIT: Duration = Duration::from_secs(600);

/// Settings of `lode-bench encrypted`.
#[derive(Debug, Clone)]
pub struct EncryptedConfig {
    /// Report folder.
    pub out: PathBuf,
    /// Scratch folder: the set, the certificate, the servers' folders.
    pub work: PathBuf,
    /// The lode binary measured.
    pub lode: PathBuf,
    /// Servers, in run order (lode, nsd, bind).
    pub servers: Vec<Kind>,
    /// ENUM numbers in the one zone.
    pub records: u64,
    /// Seconds of each dnsperf, handshake and DoQ run.
    pub duration: u64,
    /// dnsperf's connections (`-c`) and DoQ connections.
    pub clients: usize,
    /// Idle connections held for the memory per connection.
    pub idle: usize,
    /// TSIG key of the transfers.
    pub key: lode_tsig::Key,
    /// CPU the server is pinned to.
    pub server_cpu: usize,
    /// CPU the clients (and the BIND secondary) are pinned to.
    pub tester_cpu: usize,
    /// Plain port on 127.0.0.1; TLS the next, QUIC the one after, the BIND
    /// secondary the third.
    pub port: u16,
    /// Longest wait for a server to serve the zone.
    pub load_limit: Duration,
}

impl EncryptedConfig {
    fn addr(&self, offset: u16) -> SocketAddr {
        ([127, 0, 0, 1], self.port + offset).into()
    }
}

/// A client run and the server's CPU seconds over it.
#[derive(Debug, Clone, Copy)]
pub struct Timed {
    /// What the clients did.
    pub tally: Tally,
    /// Server CPU seconds (utime + stime of its processes, 10 ms ticks).
    pub cpu: f64,
}

/// Idle connections held: how many, and the server's resident KiB before and with them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Idle {
    /// Connections held open.
    pub held: usize,
    /// VmRSS before, KiB.
    pub before_kib: u64,
    /// VmRSS with them open, KiB.
    pub peak_kib: u64,
}

impl Idle {
    /// Bytes of server memory per idle connection.
    pub fn bytes_each(&self) -> f64 {
        match self.held {
            0 => 0.0,
            n => self.peak_kib.saturating_sub(self.before_kib) as f64 * 1024.0 / n as f64,
        }
    }
}

/// What only Lode is measured on (no peer here serves DoQ; the secondary is BIND).
#[derive(Debug, Clone, Default)]
pub struct LodeOnly {
    /// New DoQ connections, a query each.
    pub doq_handshakes: Option<Timed>,
    /// DoQ answers over persistent connections.
    pub doq: Option<Timed>,
    /// Idle DoQ connections.
    pub doq_idle: Option<Idle>,
    /// AXFR over plain TCP, each round.
    pub axfr_tcp: Vec<AxfrRound>,
    /// AXFR over TLS, each round.
    pub axfr_tls: Vec<AxfrRound>,
    /// Seconds until a BIND secondary served the zone taken over TLS (its start included).
    pub secondary_secs: Option<f64>,
    /// Idle DoT connections.
    pub dot_idle: Option<Idle>,
    /// Handshakes per second of opening the idle DoT connections from one client.
    pub dot_idle_rate: f64,
    /// kdig +quic runs answered, and the seconds all took.
    pub kdig_quic: Option<(usize, f64)>,
}

/// One server's figures.
#[derive(Debug, Clone)]
pub struct ServerFigures {
    /// Which server.
    pub kind: Kind,
    /// DoT answers/s (dnsperf -m dot).
    pub dot: f64,
    /// Plain TCP answers/s (dnsperf -m tcp).
    pub tcp: f64,
    /// New DoT connections, a query each.
    pub handshakes: Option<Timed>,
    /// Lode's own figures.
    pub lode: Option<LodeOnly>,
}

impl ServerFigures {
    /// DoT ÷ TCP.
    pub fn ratio(&self) -> f64 {
        if self.tcp > 0.0 {
            self.dot / self.tcp
        } else {
            0.0
        }
    }
}

/// What `lode-bench encrypted` measured.
#[derive(Debug, Clone, Default)]
pub struct EncryptedResult {
    /// The zone.
    pub zone: String,
    /// One entry per server, in run order.
    pub servers: Vec<ServerFigures>,
    /// Every line printed, as printed.
    pub lines: Vec<String>,
    /// What failed beside the figures.
    pub notes: Vec<String>,
    /// Seconds in all.
    pub wall_secs: f64,
    /// The Markdown report.
    pub report: PathBuf,
}

/// `name` padded as the shell benchmark's first column.
fn col(kind: Kind) -> String {
    format!("{:<6} ", kind.name())
}

/// Runs the benchmark; `say` gets each figure line as it is measured.
pub fn run(cfg: &EncryptedConfig, say: &mut dyn FnMut(&str)) -> Result<EncryptedResult, CostError> {
    if let Some(k) = cfg
        .servers
        .iter()
        .find(|k| !matches!(k, Kind::Lode | Kind::Nsd | Kind::Bind))
    {
        return Err(CostError(format!(
            "servers: lode, nsd, bind (not {})",
            k.name()
        )));
    }
    if cfg.servers.is_empty() || cfg.duration == 0 || cfg.clients == 0 {
        return Err(CostError(
            "servers, duration and clients: at least one each".into(),
        ));
    }
    let started = Instant::now();
    crate::compare::pin_self(cfg.tester_cpu).map_err(|e| CostError(e.to_string()))?;
    let programs: Vec<String> = ["nsd", "named", "dnsperf", "kdig"]
        .into_iter()
        .map(|p| peers::program(p).map_or(p.to_string(), |f| f.display().to_string()))
        .collect();
    let names: Vec<&str> = programs.iter().map(String::as_str).collect();
    let provenance = Provenance::collect(Some(&cfg.lode), &names);

    crate::compare::say(&format!("==> data: {} numbers in one zone", cfg.records));
    let data = cfg.work.join("data");
    let _ = std::fs::remove_dir_all(&data);
    let set = generate(&EnumSetSpec::new(cfg.records, 1), &data)
        .map_err(|e| CostError(format!("gen enum: {e}")))?;
    let (zone, zone_file) = set.zone_files[0].clone();
    let queries_file = set.query_files[0].clone();
    let queries = QuerySet::read_file(&queries_file, usize::MAX, true)
        .map_err(|e| CostError(format!("{}: {e}", queries_file.display())))?;
    let (cert, key) = certificate(&cfg.work)?;
    let tls = Tls {
        port: cfg.port + 1,
        quic_port: None,
        cert,
        key,
    };
    let run = Runner {
        cfg,
        zone: &zone,
        queries_file: &queries_file,
        queries: &queries,
    };
    let mut r = EncryptedResult {
        zone: zone.clone(),
        ..EncryptedResult::default()
    };
    let mut out = |line: String, r: &mut EncryptedResult| {
        say(&line);
        r.lines.push(line);
    };
    for &kind in &cfg.servers {
        let spec = run.spec(kind, &zone_file, &tls)?;
        let mut server = Server::start(&spec).map_err(|e| CostError(e.to_string()))?;
        let (dot, tcp) = (run.dnsperf(kind, "dot", 1)?, run.dnsperf(kind, "tcp", 0)?);
        let mut f = ServerFigures {
            kind,
            dot,
            tcp,
            handshakes: None,
            lode: None,
        };
        out(
            format!(
                "{}DoT {dot:8.0} answers/s   TCP {tcp:8.0} answers/s   DoT/TCP {:.2}",
                col(kind),
                f.ratio()
            ),
            &mut r,
        );
        match run.timed(&server, || {
            handshakes(
                cfg.addr(1),
                Secure::Tls,
                &queries,
                HANDSHAKE_WORKERS,
                run.secs(),
            )
        }) {
            Ok(t) => {
                out(
                    format!(
                        "{}{}",
                        col(kind),
                        t.tally.line("DoT", t.tally.handshakes, Some(t.cpu))
                    ),
                    &mut r,
                );
                f.handshakes = Some(t);
            }
            Err(e) => r
                .notes
                .push(format!("{}: DoT handshakes: {e}", kind.name())),
        }
        if kind == Kind::Lode {
            let mut lines = Vec::new();
            f.lode = Some(run.lode_only(&server, &mut lines, &mut r.notes));
            for l in lines {
                out(format!("{}{l}", col(kind)), &mut r);
            }
        }
        server.stop();
        r.servers.push(f);
    }
    for n in &r.notes {
        say(&format!("note: {n}"));
    }
    r.wall_secs = started.elapsed().as_secs_f64();
    let md = to_markdown(cfg, &r);
    r.report = crate::server_cost::write_report(
        &cfg.out,
        "encrypted",
        &md,
        to_json(cfg, &r),
        &provenance,
    )?;
    Ok(r)
}

/// The certificate and key every server uses (`lode_peers::self_signed_certificate`), in `dir`.
fn certificate(dir: &Path) -> Result<(PathBuf, PathBuf), CostError> {
    std::fs::create_dir_all(dir).map_err(|e| CostError(format!("{}: {e}", dir.display())))?;
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    peers::self_signed_certificate(&cert, &key).map_err(|e| CostError(e.to_string()))?;
    Ok((cert, key))
}

/// What every step needs.
struct Runner<'a> {
    cfg: &'a EncryptedConfig,
    zone: &'a str,
    queries_file: &'a Path,
    queries: &'a QuerySet,
}

impl Runner<'_> {
    fn secs(&self) -> Duration {
        Duration::from_secs(self.cfg.duration)
    }

    /// The description of `kind` serving the zone with TLS (Lode: QUIC
    /// too, transfers allowed for the key), one worker pinned to the server
    /// CPU, 10,000 TCP clients.
    fn spec(&self, kind: Kind, zone_file: &Path, tls: &Tls) -> Result<Spec, CostError> {
        let cfg = self.cfg;
        let pk = match kind {
            Kind::Lode => peers::Kind::Lode,
            Kind::Nsd => peers::Kind::Nsd,
            _ => peers::Kind::Bind,
        };
        let dir = cfg.work.join(kind.name());
        let _ = std::fs::remove_dir_all(&dir);
        let mut s = Spec::new(pk, cfg.port).stop_with_parent();
        s.dir = Some(dir);
        s.label = Some(kind.name().into());
        s.logging = Logging::Plain;
        s.ready = Ready::Zones;
        s.ready_timeout = cfg.load_limit;
        s.cpus = vec![cfg.server_cpu];
        s.workers = Some(1);
        s.stop_grace = Duration::from_secs(30);
        let mut zone =
            Zone::primary(self.zone, Content::File(zone_file.to_path_buf())).journal(false);
        let mut tls = tls.clone();
        match kind {
            Kind::Lode => {
                s.program = Some(cfg.lode.clone());
                s.server_extra = format!("tcp-max-clients = {TCP_CLIENTS}\n");
                tls.quic_port = Some(cfg.port + 2);
                let key = key(&cfg.key);
                s = s
                    .acl(Acl::new("xfr", &[Action::Transfer]).key(&key.name))
                    .key(key);
                zone = zone.acls(&["xfr"]);
            }
            Kind::Nsd => s.server_extra = format!("    tcp-count: {TCP_CLIENTS}\n"),
            _ => s.server_extra = format!("  tcp-clients {TCP_CLIENTS};\n"),
        }
        Ok(s.tls(tls).zone(zone))
    }

    /// dnsperf's answers per second over `mode` (`dot`, `tcp`) to the port
    /// at `offset`, its output in `dnsperf-KIND-MODE.txt` of the report folder.
    fn dnsperf(&self, kind: Kind, mode: &str, offset: u16) -> Result<f64, CostError> {
        let cfg = self.cfg;
        let argv: Vec<String> = [
            "taskset",
            "-c",
            &cfg.tester_cpu.to_string(),
            "dnsperf",
            "-m",
            mode,
            "-s",
            "127.0.0.1",
            "-p",
            &(cfg.port + offset).to_string(),
            "-d",
            &self.queries_file.display().to_string(),
            "-c",
            &cfg.clients.to_string(),
            "-l",
            &cfg.duration.to_string(),
            "-q",
            "500",
        ]
        .map(String::from)
        .to_vec();
        std::fs::create_dir_all(&cfg.out).map_err(|e| CostError(e.to_string()))?;
        let log = cfg.out.join(format!("dnsperf-{}-{mode}.txt", kind.name()));
        let text =
            crate::xdp::load::run_bounded(&argv, &log, self.secs() + Duration::from_secs(60))
                .map_err(CostError)?;
        crate::compare::parse_dnsperf(&text)
            .map(|(_, _, qps)| qps.floor())
            .ok_or_else(|| CostError(format!("dnsperf output not understood: {}", log.display())))
    }

    /// `client` run with the server's CPU time (its processes') read around it.
    fn timed(
        &self,
        server: &Server,
        client: impl FnOnce() -> Result<Tally, String>,
    ) -> Result<Timed, String> {
        let ticks = || server.pids().into_iter().map(pid_cpu).sum::<u64>();
        let before = ticks();
        let tally = client()?;
        Ok(Timed {
            tally,
            cpu: ticks().saturating_sub(before) as f64 / TICKS,
        })
    }

    /// Lode's own steps, in the shell benchmark's order; each line into
    /// `lines`, each failure into `notes`.
    fn lode_only(
        &self,
        server: &Server,
        lines: &mut Vec<String>,
        notes: &mut Vec<String>,
    ) -> LodeOnly {
        let (cfg, q) = (self.cfg, self.queries);
        let quic = cfg.addr(2);
        let mut l = LodeOnly::default();
        let mut note = |what: &str, e: String| notes.push(format!("lode: {what}: {e}"));
        match self.timed(server, || {
            handshakes(quic, Secure::Quic, q, HANDSHAKE_WORKERS, self.secs())
        }) {
            Ok(t) => {
                lines.push(t.tally.line("DoQ", t.tally.handshakes, Some(t.cpu)));
                l.doq_handshakes = Some(t);
            }
            Err(e) => note("DoQ handshakes", e),
        }
        match self.timed(server, || {
            doq_rate(quic, q, cfg.clients, DOQ_INFLIGHT, self.secs())
        }) {
            Ok(t) => {
                lines.push(t.tally.line("DoQ", t.tally.answers, Some(t.cpu)));
                l.doq = Some(t);
            }
            Err(e) => note("DoQ answers", e),
        }
        let pid = server.pid();
        let rss = || status_bytes(pid, "VmRSS") / 1024;
        let before = rss();
        let mut peak = 0;
        match doq_hold(quic, q, cfg.idle, |_| peak = rss()) {
            Ok(held) => {
                lines.push(idle_line("DoQ", held, Some((before, peak))));
                l.doq_idle = Some(Idle {
                    held,
                    before_kib: before,
                    peak_kib: peak,
                });
            }
            Err(e) => note("idle DoQ connections", e),
        }
        let limit = Duration::from_secs(600);
        for (how, offset) in [("tcp", 0), ("tls", 1)] {
            let client = match how {
                "tls" => match dot_client() {
                    Ok(c) => Some(c),
                    Err(e) => {
                        note("AXFR over tls", e);
                        continue;
                    }
                },
                _ => None,
            };
            let rounds = axfr_rounds(
                cfg.addr(offset),
                self.zone,
                &cfg.key,
                limit,
                client.as_ref(),
                AXFR_ROUNDS,
                Some(pid),
                |_, _| {},
            );
            match rounds {
                Ok(rounds) => {
                    lines.push(format!("AXFR over {how}: {}", axfr_summary(&rounds)));
                    match how {
                        "tls" => l.axfr_tls = rounds,
                        _ => l.axfr_tcp = rounds,
                    }
                }
                Err(e) => note(&format!("AXFR over {how}"), e.to_string()),
            }
        }
        match self.secondary() {
            Ok(took) => {
                l.secondary_secs = took;
                let limit = SECONDARY_LIMIT.as_secs();
                lines.push(format!(
                    "-> BIND 9.18 secondary over TLS: {} s (named start included)",
                    took.map_or(format!("not done in {limit}"), |s| format!("{s:.1}"))
                ));
            }
            Err(e) => note("BIND secondary", e),
        }
        let before = rss();
        let mut after = 0;
        match dot_hold(cfg.addr(1), cfg.idle, |_| after = rss()) {
            Ok((held, rate)) => {
                let idle = Idle {
                    held,
                    before_kib: before,
                    peak_kib: after,
                };
                lines.push(format!(
                    "{} idle DoT connections: {:.0} bytes each (RSS {before} -> {after} KiB); \
                     {rate:.0} handshakes/s from one client",
                    held,
                    idle.bytes_each()
                ));
                l.dot_idle = Some(idle);
                l.dot_idle_rate = rate;
            }
            Err(e) => note("idle DoT connections", e),
        }
        match kdig_quic(quic, self.zone) {
            Ok((answered, secs)) => {
                lines.push(format!(
                    "DoQ: {KDIG_RUNS} kdig +quic runs (a handshake and a query each) in {secs:.2} s, \
                     {answered} answered"
                ));
                l.kdig_quic = Some((answered, secs));
            }
            Err(e) => note("kdig +quic", e),
        }
        l
    }

    /// A BIND secondary on the tester CPU taking the zone from Lode over TLS
    /// (XoT, signed with the key): seconds from its start until it answers
    /// the zone's SOA (None: not within [`SECONDARY_LIMIT`]).
    fn secondary(&self) -> Result<Option<f64>, String> {
        let cfg = self.cfg;
        let dir = cfg.work.join("bind-secondary");
        let _ = std::fs::remove_dir_all(&dir);
        let k = key(&cfg.key);
        let mut s = Spec::new(peers::Kind::Bind, cfg.port + 3)
            .stop_with_parent()
            .zone(
                Zone::secondary(self.zone, &[cfg.addr(1)])
                    .key(&k.name)
                    .primaries_tls(),
            )
            .key(k);
        s.dir = Some(dir);
        s.label = Some("bind-secondary".into());
        s.logging = Logging::Plain;
        s.ready = Ready::Started;
        s.cpus = vec![cfg.tester_cpu];
        s.workers = Some(1);
        let mut server = Server::start(&s).map_err(|e| e.to_string())?;
        let (addr, zone) = (
            server.addr(),
            probe::name(self.zone).map_err(|e| e.to_string())?,
        );
        let took = server.wait_until(self.zone, SECONDARY_LIMIT, || {
            let ok = probe::ask(addr, &zone, Rtype::SOA, false, Duration::from_secs(1))
                .is_some_and(|a| a.has(Rtype::SOA));
            if !ok {
                std::thread::sleep(Duration::from_millis(200));
            }
            ok
        });
        server.stop();
        match took {
            Ok(t) => Ok(Some(t.as_secs_f64())),
            Err(peers::Error::NotReady { .. }) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// The TSIG key as lode-peers writes it (its name without the final dot).
fn key(k: &lode_tsig::Key) -> peers::Key {
    let name = k.name().to_string();
    peers::Key::new(
        name.trim_end_matches('.'),
        k.algorithm().name(),
        &k.secret_base64(),
    )
}

/// [`KDIG_RUNS`] × `kdig +quic +short ZONE SOA` against `addr`, one after
/// the other: how many printed an answer, and the seconds all took.
fn kdig_quic(addr: SocketAddr, zone: &str) -> Result<(usize, f64), String> {
    let kdig =
        peers::program("kdig").ok_or("kdig is not installed (Debian package knot-dnsutils)")?;
    let started = Instant::now();
    let mut answered = 0;
    for _ in 0..KDIG_RUNS {
        let out = Command::new("timeout")
            .args(["10"])
            .arg(&kdig)
            .arg(format!("@{}", addr.ip()))
            .args([
                "-p",
                &addr.port().to_string(),
                "+quic",
                "+short",
                zone,
                "SOA",
            ])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("kdig: {e}"))?;
        if out.status.success() && !out.stdout.iter().all(u8::is_ascii_whitespace) {
            answered += 1;
        }
    }
    Ok((answered, started.elapsed().as_secs_f64()))
}

/// The per-handshake (or per-answer) CPU in µs of a timed run.
fn us_each(t: &Timed, per: u64) -> f64 {
    if per == 0 {
        0.0
    } else {
        t.cpu * 1e6 / per as f64
    }
}

/// encrypted.md: the settings, the table of the three servers, Lode's own
/// figures, the lines as printed.
fn to_markdown(cfg: &EncryptedConfig, r: &EncryptedResult) -> String {
    let mut m = format!(
        "# DNS over TLS and QUIC: Lode, NSD and BIND side by side\n\n\
         One ENUM zone `{}` of {} numbers, the same P-256 certificate; each server alone on \
         127.0.0.1 (plain {}, TLS {}, Lode's QUIC {}) with one worker pinned to CPU {}, every \
         client on CPU {}; dnsperf with {} connections for {} s; {:.0} s in all.\n\n\
         | server | DoT answers/s | TCP answers/s | DoT ÷ TCP | new DoT handshakes/s | server CPU per handshake µs |\n\
         |---|---|---|---|---|---|\n",
        r.zone,
        cfg.records,
        cfg.port,
        cfg.port + 1,
        cfg.port + 2,
        cfg.server_cpu,
        cfg.tester_cpu,
        cfg.clients,
        cfg.duration,
        r.wall_secs
    );
    for s in &r.servers {
        let (rate, each) = s.handshakes.as_ref().map_or(("–".into(), "–".into()), |t| {
            (
                format!("{:.0}", t.tally.handshakes as f64 / t.tally.secs),
                format!("{:.1}", us_each(t, t.tally.handshakes)),
            )
        });
        m.push_str(&format!(
            "| {} | {:.0} | {:.0} | {:.2} | {rate} | {each} |\n",
            s.kind.name(),
            s.dot,
            s.tcp,
            s.ratio()
        ));
    }
    m.push_str("\nEvery line as printed:\n\n```text\n");
    for l in &r.lines {
        m.push_str(l);
        m.push('\n');
    }
    m.push_str("```\n");
    if !r.notes.is_empty() {
        m.push_str("\nNotes:\n\n");
        for n in &r.notes {
            m.push_str(&format!("- {}\n", n.replace('\n', " ")));
        }
    }
    m
}

/// A timed run as JSON: counts, rates, CPU.
fn timed_json(t: Option<&Timed>, per_answer: bool) -> Value {
    let Some(t) = t else {
        return Value::Null;
    };
    let x = &t.tally;
    let per = if per_answer { x.answers } else { x.handshakes };
    json!({
        "handshakes": x.handshakes,
        "answers": x.answers,
        "failures": x.failures,
        "secs": x.secs,
        "handshakes_per_sec": x.handshakes as f64 / x.secs,
        "answers_per_sec": x.answers as f64 / x.secs,
        "server_cpu_secs": t.cpu,
        "server_cpu_us_each": us_each(t, per),
    })
}

fn idle_json(i: Option<Idle>) -> Value {
    i.map_or(Value::Null, |i| {
        json!({
            "held": i.held,
            "rss_before_kib": i.before_kib,
            "rss_with_kib": i.peak_kib,
            "bytes_each": i.bytes_each(),
        })
    })
}

fn axfr_json(rounds: &[AxfrRound]) -> Value {
    if rounds.is_empty() {
        return Value::Null;
    }
    let (rate, per_cpu) = axfr_medians(rounds);
    json!({
        "records": rounds[0].drained.records,
        "records_per_sec_median": rate,
        "records_per_cpu_sec_median": per_cpu,
        "secs": rounds.iter().map(|r| r.drained.secs).collect::<Vec<_>>(),
    })
}

/// encrypted.json: settings and one object per server, numbers as numbers.
fn to_json(cfg: &EncryptedConfig, r: &EncryptedResult) -> Value {
    let servers: Vec<Value> = r
        .servers
        .iter()
        .map(|s| {
            let mut v = json!({
                "server": s.kind.name(),
                "dot_answers_per_sec": s.dot,
                "tcp_answers_per_sec": s.tcp,
                "dot_per_tcp": s.ratio(),
                "dot_handshakes": timed_json(s.handshakes.as_ref(), false),
            });
            if let Some(l) = &s.lode {
                v["doq_handshakes"] = timed_json(l.doq_handshakes.as_ref(), false);
                v["doq"] = timed_json(l.doq.as_ref(), true);
                v["doq_idle"] = idle_json(l.doq_idle);
                v["dot_idle"] = idle_json(l.dot_idle);
                v["dot_idle_handshakes_per_sec"] = json!(l.dot_idle_rate);
                v["axfr_tcp"] = axfr_json(&l.axfr_tcp);
                v["axfr_tls"] = axfr_json(&l.axfr_tls);
                v["bind_secondary_over_tls_secs"] = json!(l.secondary_secs);
                v["kdig_quic"] = l.kdig_quic.map_or(Value::Null, |(answered, secs)| {
                    json!({"runs": KDIG_RUNS, "answered": answered, "secs": secs})
                });
            }
            v
        })
        .collect();
    json!({
        "benchmark": "encrypted",
        "settings": {
            "zone": r.zone,
            "records": cfg.records,
            "duration_secs": cfg.duration,
            "clients": cfg.clients,
            "idle": cfg.idle,
            "handshake_workers": HANDSHAKE_WORKERS,
            "doq_inflight": DOQ_INFLIGHT,
            "axfr_rounds": AXFR_ROUNDS,
            "server_cpu": cfg.server_cpu,
            "tester_cpu": cfg.tester_cpu,
            "port": cfg.port,
            "servers": cfg.servers.iter().map(|k| k.name()).collect::<Vec<_>>(),
        },
        "servers": servers,
        "notes": r.notes,
        "wall_secs": r.wall_secs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> EncryptedConfig {
        EncryptedConfig {
            out: "/nonexistent".into(),
            work: std::env::temp_dir().join(format!("lode-bench-enc-{}", std::process::id())),
            lode: "/bin/lode".into(),
            servers: vec![Kind::Lode, Kind::Nsd, Kind::Bind],
            records: 500_000,
            duration: 10,
            clients: 20,
            idle: 2000,
            key: lode_tsig::Key::parse_spec(
                "hmac-sha256:lode-bench-update.:bG9kZS1iZW5jaC11cGRhdGUta2V5LTMyLWJ5dGVzISE=",
            )
            .expect("key"),
            server_cpu: 0,
            tester_cpu: 1,
            port: 17100,
            load_limit: Duration::from_secs(300),
        }
    }

    #[test]
    fn specs_per_server() {
        let c = cfg();
        let set = QuerySet::default();
        let run = Runner {
            cfg: &c,
            zone: "1.2.1.2.1.e164.arpa.",
            queries_file: Path::new("/q"),
            queries: &set,
        };
        let tls = Tls {
            port: 17101,
            quic_port: None,
            cert: "/c".into(),
            key: "/k".into(),
        };
        let lode = run.spec(Kind::Lode, Path::new("/z"), &tls).expect("lode");
        assert_eq!(lode.tls.as_ref().and_then(|t| t.quic_port), Some(17102));
        assert_eq!(lode.keys[0].name, "lode-bench-update");
        assert_eq!(lode.zones[0].acls, ["xfr"]);
        let nsd = run.spec(Kind::Nsd, Path::new("/z"), &tls).expect("nsd");
        assert!(nsd.tls.as_ref().is_some_and(|t| t.quic_port.is_none()));
        assert!(nsd.keys.is_empty() && nsd.server_extra.contains("tcp-count: 10000"));
        assert_eq!(nsd.cpus, vec![0]);
        let _ = std::fs::remove_dir_all(&c.work);
    }

    #[test]
    fn figures_report_and_json() {
        let tally = Tally {
            handshakes: 3000,
            answers: 3000,
            failures: 0,
            secs: 10.0,
        };
        let timed = Timed { tally, cpu: 0.9 };
        let lode = ServerFigures {
            kind: Kind::Lode,
            dot: 140_000.0,
            tcp: 200_000.0,
            handshakes: Some(timed),
            lode: Some(LodeOnly {
                doq_idle: Some(Idle {
                    held: 2000,
                    before_kib: 10_000,
                    peak_kib: 60_000,
                }),
                kdig_quic: Some((200, 3.5)),
                ..LodeOnly::default()
            }),
        };
        assert!((lode.ratio() - 0.7).abs() < 1e-9);
        let r = EncryptedResult {
            zone: "1.2.1.2.1.e164.arpa.".into(),
            servers: vec![lode],
            lines: vec!["lode   DoT ...".into()],
            notes: vec![],
            wall_secs: 100.0,
            report: PathBuf::new(),
        };
        let md = to_markdown(&cfg(), &r);
        assert!(
            md.contains("| lode | 140000 | 200000 | 0.70 | 300 | 300.0 |"),
            "{md}"
        );
        let j = to_json(&cfg(), &r);
        assert_eq!(j["servers"][0]["doq_idle"]["bytes_each"], 25_600.0);
        assert_eq!(
            j["servers"][0]["dot_handshakes"]["server_cpu_us_each"],
            300.0
        );
        assert!(j["servers"][0]["axfr_tls"].is_null());
        assert!(crate::provenance::numeric_strings(&j).is_empty(), "{j}");
    }
}
