//! `lode-bench many-zones`: N small zones (6 records each, a TSIG update
//! ACL each) served by Lode, then Knot DNS, then NSD, one after the other on
//! the same port: seconds from the start until every zone answers its SOA,
//! memory, threads and open files then, and durable updates/s of
//! single-record updates to 1,000 zones spread over the set (16 clients, 10 s).
//!
//! With a catalog (RFC 9432) the zones are members instead: a Lode producer
//! (not measured) serves them and generates the catalog; Lode and Knot are
//! started as consumers with only the catalog zone configured and timed
//! until 200 members spread over the set and the last one answer.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use lode_peers::{
    self as peers, Acl, Action, Catalog, Content, Key, Logging, Ready, Server, Signing, Spec, Zone,
};
use lode_wire::{Name, Rtype};
use serde_json::{json, Value};

use super::probe::{self, name};
use super::{cpus, lode_label, write_report, write_zone_files, State, ZonesError};
use crate::durable::{self, DurableConfig};
use crate::provenance::{first_line, version_args, Provenance};

/// The TSIG key of updates and transfers (loopback only).
pub const KEY: &str = "hmac-sha256:many-zones.:bG9kZS1tYW55LXpvbmVzLWtleS0zMi1ieXRlcyEhISE=";
/// The catalog zone of `--catalog`.
pub const CATALOG: &str = "catalog.many.test.";
/// Zones spread over the set that must answer too (not timed).
pub const SAMPLE: u64 = 200;
/// Closed-loop update clients.
pub const UPDATE_CLIENTS: usize = 16;
/// Seconds of updates.
pub const UPDATE_SECS: u64 = 10;
/// Zones spread over the set that the updates go to.
pub const UPDATE_ZONES: u64 = 1000;
/// DNSSEC algorithm of the signed zones (ECDSA P-256, Knot's default).
const ALGORITHM: u8 = 13;

/// The servers measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// Lode.
    Lode,
    /// Knot DNS.
    Knot,
    /// NSD (no updates, no signing).
    Nsd,
}

impl Peer {
    /// Its name in the JSON and its folder.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Lode => "lode",
            Peer::Knot => "knot",
            Peer::Nsd => "nsd",
        }
    }
}

/// Settings of `lode-bench many-zones`.
#[derive(Debug, Clone)]
pub struct ManyConfig {
    /// Report folder.
    pub out: PathBuf,
    /// Scratch folder: zone files and the servers' folders.
    pub work: PathBuf,
    /// The lode binary.
    pub lode: PathBuf,
    /// Zones (members with a catalog).
    pub zones: u64,
    /// The zones as catalog members, Lode and Knot consumers of the catalog.
    pub catalog: bool,
    /// Every zone signed by the server (not NSD).
    pub signed: bool,
    /// Knot DNS too.
    pub knot: bool,
    /// NSD too.
    pub nsd: bool,
    /// How long a server may take until every zone answers.
    pub limit: Duration,
    /// The servers' port on 127.0.0.1 (the producer's is the next).
    pub port: u16,
}

impl ManyConfig {
    /// The apex of zone `i`.
    pub fn zone(i: u64) -> String {
        format!("z{i}.many.test.")
    }

    /// The zones that must answer besides the last (every zones/200-th).
    pub fn sample(&self) -> impl Iterator<Item = u64> {
        (0..self.zones).step_by((self.zones / SAMPLE).max(1) as usize)
    }

    /// The zones updated (every zones/1000-th).
    pub fn update_zones(&self) -> Vec<u64> {
        (0..self.zones)
            .step_by((self.zones / UPDATE_ZONES).max(1) as usize)
            .collect()
    }

    fn zone_file(&self, i: u64) -> PathBuf {
        self.work.join("zones").join(format!("z{i}.zone"))
    }
}

/// One server's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Which server.
    pub peer: Peer,
    /// `Lode abc1234`, `Knot 3.2.6`, `NSD 4.6.1`.
    pub label: String,
    /// Seconds until every zone answered (None: it did not, see `failure`).
    pub secs: Option<f64>,
    /// Why not: `timeout`, a silent zone.
    pub failure: Option<String>,
    /// Memory, threads, files once all answered.
    pub state: State,
    /// Durable updates/s (None: not measured).
    pub updates: Option<f64>,
    /// Why there is no update figure.
    pub no_updates: Option<&'static str>,
}

/// What `many-zones` measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ManyResult {
    /// One row per server, in run order.
    pub rows: Vec<Row>,
    /// With a catalog: seconds until the producer served the catalog.
    pub producer_secs: Option<f64>,
    /// Zones the updates went to.
    pub update_zones: usize,
    /// What was not run, and errors beside the table.
    pub notes: Vec<String>,
}

/// The header of the table.
pub fn header(update_zones: usize) -> [String; 2] {
    [
        format!(
            "| server | zones | all answering after | resident | threads | open files | \
             durable updates/s ({UPDATE_CLIENTS} clients, {update_zones} zones) |"
        ),
        "|---|---|---|---|---|---|---|".into(),
    ]
}

impl Row {
    /// The row as the shell benchmark printed it.
    pub fn line(&self, zones: u64, catalog: bool) -> String {
        let took = match (self.secs, &self.failure) {
            (_, Some(f)) => f.clone(),
            (Some(s), None) => format!("{s:.1}"),
            (None, None) => "–".into(),
        };
        let s = &self.state;
        let (label, memory) = match (self.peer, catalog) {
            (Peer::Nsd, _) => (
                self.label.clone(),
                format!("{} MiB (PSS, {} processes)", s.mib(), s.processes),
            ),
            (_, true) => (
                format!("{} (catalog consumer)", self.label),
                format!("{} MiB", s.mib()),
            ),
            _ => (self.label.clone(), format!("{} MiB", s.mib())),
        };
        let updates = match (self.updates, self.no_updates) {
            (_, Some(why)) => format!("– ({why})"),
            (Some(u), None) => format!("{u:.0}"),
            (None, None) => "-".into(),
        };
        format!(
            "| {label} | {zones} | {took} s | {memory} | {} | {} | {updates} |",
            s.threads, s.fds
        )
    }
}

/// Runs the benchmark; `say` gets each line of the table as it is measured.
pub fn run(cfg: &ManyConfig, say: &mut dyn FnMut(&str)) -> Result<ManyResult, ZonesError> {
    if cfg.zones == 0 {
        return Err(ZonesError("--zones must be positive".into()));
    }
    let started = Instant::now();
    let mut programs = Vec::new();
    for (on, p) in [(cfg.knot, "knotd"), (cfg.nsd, "nsd")] {
        if on {
            programs.push(peers::program(p).map_or(p.to_string(), |p| p.display().to_string()));
        }
    }
    let programs: Vec<&str> = programs.iter().map(String::as_str).collect();
    let provenance = Provenance::collect(Some(&cfg.lode), &programs);
    write_zone_files(&cfg.work.join("zones"), 0..cfg.zones, |i| {
        (
            format!("z{i}.zone"),
            format!(
                "$ORIGIN {}\n$TTL 3600\n@ SOA ns1 host 1 3600 600 86400 300\n@ NS ns1\n@ NS ns2\n\
                 ns1 A 192.0.2.1\nns2 A 192.0.2.2\nwww A 192.0.2.80\n",
                ManyConfig::zone(i)
            ),
        )
    })?;
    let key = lode_tsig::Key::parse_spec(KEY).map_err(|e| ZonesError(format!("key: {e:?}")))?;
    let mut result = ManyResult {
        rows: Vec::new(),
        producer_secs: None,
        update_zones: cfg.update_zones().len(),
        notes: Vec::new(),
    };
    if cfg.signed {
        say("Every zone signed by the server (--signed).");
    }
    // The producer stays up while the consumers are measured.
    let _producer = match cfg.catalog {
        true => {
            let (server, secs) = producer(cfg, &key)?;
            say(&format!(
                "Producer (Lode, port {}) serving {} zones and their catalog after {secs:.0} s.",
                cfg.port + 1,
                cfg.zones
            ));
            result.producer_secs = Some(secs);
            Some(server)
        }
        false => None,
    };
    for line in header(result.update_zones) {
        say(&line);
    }
    let mut order = vec![Peer::Lode];
    if cfg.knot {
        order.push(Peer::Knot);
    }
    match (cfg.nsd, cfg.signed) {
        (true, true) => result
            .notes
            .push("NSD not run: it does not sign zones (--signed)".into()),
        (true, false) => order.push(Peer::Nsd),
        _ => {}
    }
    for peer in order {
        let label = label(peer, &provenance);
        let spec = spec(cfg, peer, &label);
        let mut server = match Server::start(&spec) {
            Ok(s) => s,
            Err(e @ peers::Error::NotInstalled { .. }) if peer == Peer::Nsd => {
                result.notes.push(format!("NSD not run: {e}"));
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        drop(spec);
        let row = measure(cfg, peer, label, &mut server, &key, &mut result.notes);
        say(&row.line(cfg.zones, cfg.catalog));
        result.rows.push(row);
        server.stop();
    }
    for n in &result.notes {
        say(&format!("note: {n}"));
    }
    let markdown = to_markdown(cfg, &result, started.elapsed());
    write_report(
        &cfg.out,
        "many-zones",
        &markdown,
        to_json(cfg, &result, started.elapsed()),
        &provenance,
    )?;
    Ok(result)
}

/// `Lode abc1234`, `Knot 3.2.6`, `NSD 4.6.1`: the last word of the version line.
fn label(peer: Peer, provenance: &Provenance) -> String {
    let (program, name) = match peer {
        Peer::Lode => return lode_label(provenance),
        Peer::Knot => ("knotd", "Knot"),
        Peer::Nsd => ("nsd", "NSD"),
    };
    let version = peers::program(program)
        .and_then(|p| first_line(&p, version_args(program)))
        .and_then(|l| l.split_whitespace().last().map(str::to_owned))
        .unwrap_or_default();
    format!("{name} {version}").trim_end().to_owned()
}

/// The description of `peer` serving the zones (or consuming the catalog):
/// returned as soon as started (the benchmark times the zones itself), the
/// worker counts its own defaults (one per CPU; Knot: TCP at least 10,
/// background at most 10), in a fresh folder.
fn spec(cfg: &ManyConfig, peer: Peer, label: &str) -> Spec {
    let kind = match peer {
        Peer::Lode => peers::Kind::Lode,
        Peer::Knot => peers::Kind::Knot,
        Peer::Nsd => peers::Kind::Nsd,
    };
    let mut s = Spec::new(kind, cfg.port).stop_with_parent();
    let dir = cfg.work.join(peer.name());
    let _ = std::fs::remove_dir_all(&dir);
    s.dir = Some(dir);
    s.label = Some(label.into());
    s.logging = Logging::Plain;
    s.ready = Ready::Started;
    s.stop_grace = Duration::from_secs(30);
    let n = cpus();
    match peer {
        Peer::Lode => {
            s.program = Some(cfg.lode.clone());
            s.workers = Some(n);
            s.server_extra = "zonefile-sync = -1\n".into();
        }
        Peer::Knot => {
            s.workers = Some(n);
            s.tcp_workers = Some(n.max(10));
            s.background_workers = Some(n.min(10));
        }
        Peer::Nsd => {}
    }
    if peer == Peer::Nsd {
        s.zones = (0..cfg.zones).map(|i| primary(cfg, i)).collect();
        return s;
    }
    s = s.key(key());
    if cfg.catalog {
        let producer = ([127, 0, 0, 1], cfg.port + 1).into();
        return s.zone(
            Zone::secondary(CATALOG, &[producer])
                .key(&key().name)
                .catalog(Catalog::Interpret),
        );
    }
    s = s.acl(Acl::new("upd", &[Action::Update]).key(&key().name));
    s.zones = (0..cfg.zones)
        .map(|i| {
            let z = primary(cfg, i).acls(&["upd"]);
            match cfg.signed {
                true => z.signed(Signing::default()),
                false => z,
            }
        })
        .collect();
    s
}

/// [`KEY`] as lode-peers writes it.
fn key() -> Key {
    let mut parts = KEY.splitn(3, ':');
    let (alg, name, secret) = (parts.next(), parts.next(), parts.next());
    Key::new(
        name.unwrap_or_default().trim_end_matches('.'),
        alg.unwrap_or_default(),
        secret.unwrap_or_default(),
    )
}

/// Zone `i` from its file.
fn primary(cfg: &ManyConfig, i: u64) -> Zone {
    Zone::primary(&ManyConfig::zone(i), Content::File(cfg.zone_file(i)))
}

/// The catalog's producer: Lode on the next port with every zone and the
/// catalog; the seconds until the catalog answers (only over TCP, signed by
/// a key allowed to transfer it).
fn producer(cfg: &ManyConfig, key: &lode_tsig::Key) -> Result<(Server, f64), ZonesError> {
    let mut s = Spec::new(peers::Kind::Lode, cfg.port + 1).stop_with_parent();
    let dir = cfg.work.join("producer");
    let _ = std::fs::remove_dir_all(&dir);
    s.dir = Some(dir);
    s.label = Some("producer".into());
    s.program = Some(cfg.lode.clone());
    s.workers = Some(cpus());
    s.logging = Logging::Plain;
    s.ready = Ready::Started;
    s.stop_grace = Duration::from_secs(30);
    s = s
        .key(self::key())
        .acl(Acl::new("xfr", &[Action::Transfer]).key(&self::key().name))
        .zone(
            Zone::primary(CATALOG, Content::Storage)
                .catalog(Catalog::Generate)
                .acls(&["xfr"]),
        );
    s.zones.extend((0..cfg.zones).map(|i| {
        primary(cfg, i)
            .acls(&["xfr"])
            .catalog(Catalog::Member(CATALOG.into()))
    }));
    let mut server = Server::start(&s)?;
    drop(s);
    let catalog = name(CATALOG)?;
    let addr = server.addr();
    let took = server.wait_until(CATALOG, cfg.limit, || {
        let ok = probe::ask_tcp_signed(addr, &catalog, Rtype::SOA, key, Duration::from_secs(1))
            .is_some_and(|a| a.has(Rtype::SOA));
        if !ok {
            std::thread::sleep(Duration::from_millis(200));
        }
        ok
    })?;
    Ok((server, took.as_secs_f64()))
}

/// Times a started server, reads its state, runs the updates.
fn measure(
    cfg: &ManyConfig,
    peer: Peer,
    label: String,
    server: &mut Server,
    key: &lode_tsig::Key,
    notes: &mut Vec<String>,
) -> Row {
    let waited = match cfg.catalog {
        true => wait_members(cfg, server),
        false => wait_all(cfg, server),
    };
    let (secs, failure) = match waited {
        Ok(s) => (Some(s), None),
        Err((short, long)) => {
            // lode-peers' errors name the server already.
            notes.push(match long.starts_with(&label) {
                true => long,
                false => format!("{label}: {long}"),
            });
            (None, Some(short))
        }
    };
    let state = State::of(server);
    let no_updates = match (peer, cfg.catalog) {
        (Peer::Nsd, _) => Some("takes no updates"),
        (_, true) => Some("secondaries"),
        _ => None,
    };
    let updates = match no_updates {
        Some(_) => None,
        None => updates(cfg, server, key)
            .map_err(|e| notes.push(format!("{label}: updates: {e}")))
            .ok(),
    };
    Row {
        peer,
        label,
        secs,
        failure,
        state,
        updates,
        no_updates,
    }
}

/// A failure: what the table says, what the notes say.
type Failure = (String, String);

/// Seconds until the last zone configured answers its SOA (every server
/// answers only once every zone is loaded); then the sample spread over the
/// set must answer too (signed: with the SOA's RRSIG), not timed.
fn wait_all(cfg: &ManyConfig, server: &mut Server) -> Result<f64, Failure> {
    let addr = server.addr();
    let last = zone_name(cfg.zones - 1)?;
    let took = server
        .wait_until(&last.to_string(), cfg.limit, || {
            let ok = probe::ask(addr, &last, Rtype::SOA, false, Duration::from_secs(1))
                .is_some_and(|a| a.has(Rtype::SOA));
            if !ok {
                std::thread::sleep(Duration::from_millis(50));
            }
            ok
        })
        .map_err(|e| ("timeout".to_string(), e.to_string()))?;
    for i in cfg.sample() {
        let zone = zone_name(i)?;
        let answers = (0..3).any(|_| {
            probe::ask(addr, &zone, Rtype::SOA, true, Duration::from_secs(2)).is_some_and(|a| {
                match cfg.signed {
                    true => a.signed(Rtype::SOA, ALGORITHM),
                    false => a.has(Rtype::SOA),
                }
            })
        });
        if !answers {
            let what = format!(
                "{zone} silent{}",
                if cfg.signed { " or unsigned" } else { "" }
            );
            return Err((what.clone(), what));
        }
    }
    Ok(took.as_secs_f64())
}

/// Catalog members arrive one transfer at a time: seconds until the last
/// member and the sample spread over the set all answer (those still silent
/// asked again every 0.1 s).
fn wait_members(cfg: &ManyConfig, server: &mut Server) -> Result<f64, Failure> {
    let addr = server.addr();
    let mut pending = Vec::new();
    for i in cfg.sample().chain([cfg.zones - 1]) {
        let z = zone_name(i)?;
        if !pending.contains(&z) {
            pending.push(z);
        }
    }
    let total = pending.len();
    let took = server.wait_until("the members", cfg.limit, || {
        pending.retain(|z| {
            !probe::ask(addr, z, Rtype::SOA, false, Duration::from_secs(1))
                .is_some_and(|a| a.has(Rtype::SOA))
        });
        if !pending.is_empty() {
            std::thread::sleep(Duration::from_millis(100));
        }
        pending.is_empty()
    });
    match took {
        Ok(t) => Ok(t.as_secs_f64()),
        Err(e) => Err((
            format!("timeout ({} of {total} silent)", pending.len()),
            e.to_string(),
        )),
    }
}

/// The name of zone `i`, or the failure that it cannot be written.
fn zone_name(i: u64) -> Result<Name, Failure> {
    name(&ManyConfig::zone(i)).map_err(|e| (e.to_string(), e.to_string()))
}

/// Durable updates/s: closed-loop TSIG-signed single-record updates to the
/// update zones, [`UPDATE_CLIENTS`] clients for [`UPDATE_SECS`].
fn updates(cfg: &ManyConfig, server: &Server, key: &lode_tsig::Key) -> Result<f64, ZonesError> {
    let zones = cfg
        .update_zones()
        .into_iter()
        .map(|i| name(&ManyConfig::zone(i)))
        .collect::<Result<Vec<_>, _>>()?;
    let d = DurableConfig {
        server: server.addr(),
        zones,
        clients: UPDATE_CLIENTS,
        batch: 1,
        window: 1,
        duration: Duration::from_secs(UPDATE_SECS),
        timeout: Duration::from_secs(2),
        key: Some(key.clone()),
        first: 100_000,
        digits: 6,
        end: None,
    };
    let r = durable::run(&d, &AtomicBool::new(false)).map_err(|e| ZonesError(e.to_string()))?;
    Ok(r.updates_per_sec())
}

/// many-zones.md: the settings, the table, the notes.
fn to_markdown(cfg: &ManyConfig, r: &ManyResult, elapsed: Duration) -> String {
    let mut m = format!(
        "# Many zones\n\n{} zones of 6 records{}{}, each server alone on 127.0.0.1:{}; \
         {:.0} s in all.\n\n",
        cfg.zones,
        match cfg.catalog {
            true => ", members of a catalog served by a Lode producer",
            false => " with a TSIG update ACL",
        },
        match cfg.signed {
            true => ", every zone signed by the server (ECDSA P-256, NSEC)",
            false => "",
        },
        cfg.port,
        elapsed.as_secs_f64()
    );
    if let Some(p) = r.producer_secs {
        m.push_str(&format!(
            "The producer served the zones and their catalog after {p:.0} s.\n\n"
        ));
    }
    m.push_str(&format!(
        "All answering: seconds from the start until the last zone {} answers its SOA \
         (then {SAMPLE} zones spread over the set must answer{}). Resident: VmRSS, NSD's \
         PSS summed over its processes. Updates: closed loop, {UPDATE_SECS} s.\n\n",
        match cfg.catalog {
            true => "and every sampled member",
            false => "configured",
        },
        match cfg.signed {
            true => " with the SOA's RRSIG",
            false => "",
        }
    ));
    for line in header(r.update_zones) {
        m.push_str(&line);
        m.push('\n');
    }
    for row in &r.rows {
        m.push_str(&row.line(cfg.zones, cfg.catalog));
        m.push('\n');
    }
    if !r.notes.is_empty() {
        m.push_str("\nNotes:\n\n");
        for n in &r.notes {
            m.push_str(&format!("- {}\n", n.replace('\n', " ")));
        }
    }
    m
}

/// many-zones.json: settings and one object per server, numbers as numbers.
fn to_json(cfg: &ManyConfig, r: &ManyResult, elapsed: Duration) -> Value {
    let servers: Vec<Value> = r
        .rows
        .iter()
        .map(|x| {
            let mut v = json!({
                "server": x.peer.name(),
                "label": x.label,
                "zones": cfg.zones,
                "all_answering_secs": x.secs,
                "failure": x.failure,
                "durable_updates_per_sec": x.updates,
            });
            if let (Some(o), Value::Object(s)) = (v.as_object_mut(), x.state.to_json()) {
                o.extend(s);
            }
            v
        })
        .collect();
    json!({
        "benchmark": "many-zones",
        "settings": {
            "zones": cfg.zones,
            "catalog": cfg.catalog,
            "signed": cfg.signed,
            "limit_secs": cfg.limit.as_secs_f64(),
            "port": cfg.port,
            "sample": SAMPLE,
            "update_clients": UPDATE_CLIENTS,
            "update_secs": UPDATE_SECS,
            "update_zones": r.update_zones,
        },
        "producer_secs": r.producer_secs,
        "servers": servers,
        "notes": r.notes,
        "wall_secs": elapsed.as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(zones: u64) -> ManyConfig {
        ManyConfig {
            out: "/nonexistent".into(),
            work: "/w".into(),
            lode: "/bin/lode".into(),
            zones,
            catalog: false,
            signed: true,
            knot: true,
            nsd: false,
            limit: Duration::from_secs(600),
            port: 26000,
        }
    }

    #[test]
    fn samples_and_update_zones() {
        let c = cfg(20_000);
        assert_eq!(c.sample().count(), 200);
        assert_eq!(c.sample().nth(1), Some(100));
        assert_eq!(c.update_zones().len(), 1000);
        let small = cfg(150);
        assert_eq!(small.sample().count(), 150);
        assert_eq!(small.update_zones().len(), 150);
        assert_eq!(ManyConfig::zone(7), "z7.many.test.");
    }

    #[test]
    fn specs_per_server() {
        let c = cfg(3);
        let knot = spec(&c, Peer::Knot, "Knot 3.2.6");
        assert_eq!(knot.zones.len(), 3);
        assert!(knot
            .zones
            .iter()
            .all(|z| z.signing.is_some() && z.acls == ["upd"]));
        assert_eq!(knot.tcp_workers, Some(cpus().max(10)));
        assert_eq!(key().name, "many-zones");
        let nsd = spec(&c, Peer::Nsd, "NSD");
        assert!(nsd
            .zones
            .iter()
            .all(|z| z.acls.is_empty() && z.signing.is_none()));
        let consumer = spec(
            &ManyConfig {
                catalog: true,
                ..c.clone()
            },
            Peer::Lode,
            "Lode",
        );
        assert_eq!(consumer.zones.len(), 1);
        assert_eq!(consumer.zones[0].catalog, Some(Catalog::Interpret));
    }

    #[test]
    fn rows_and_json() {
        let state = State::test(300, 11, 17);
        let row = Row {
            peer: Peer::Lode,
            label: "Lode abc1234".into(),
            secs: Some(6.24),
            failure: None,
            state,
            updates: Some(4271.4),
            no_updates: None,
        };
        assert_eq!(
            row.line(100_000, false),
            "| Lode abc1234 | 100000 | 6.2 s | 300 MiB | 11 | 17 | 4271 |"
        );
        let nsd = Row {
            peer: Peer::Nsd,
            label: "NSD 4.6.1".into(),
            secs: None,
            failure: Some("timeout".into()),
            state: State {
                processes: 3,
                ..state
            },
            updates: None,
            no_updates: Some("takes no updates"),
        };
        assert_eq!(
            nsd.line(5, false),
            "| NSD 4.6.1 | 5 | timeout s | 300 MiB (PSS, 3 processes) | 11 | 17 | – (takes no updates) |"
        );
        let r = ManyResult {
            rows: vec![row, nsd],
            producer_secs: None,
            update_zones: 1000,
            notes: vec![],
        };
        let j = to_json(&cfg(100_000), &r, Duration::from_secs(3));
        assert_eq!(j["servers"][0]["memory_bytes"], 300u64 << 20);
        assert_eq!(j["servers"][0]["all_answering_secs"], 6.24);
        assert!(j["servers"][1]["all_answering_secs"].is_null());
        assert!(crate::provenance::numeric_strings(&j).is_empty(), "{j}");
        assert!(to_markdown(&cfg(100_000), &r, Duration::from_secs(3)).contains("| 4271 |"));
    }
}
