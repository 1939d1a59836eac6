//! `lode-bench reload-zones`: zones added and removed by `lode reload` (a
//! hosting company's daily work). Lode starts with one zone; N more (each
//! taking TSIG updates; signed: keys made at the reload) are added by one
//! reload, one of them takes an update, then all are removed by another
//! reload. Each reload's wall time and the server's memory, threads and open
//! files after it; cycles repeat adding, updating and removing, to see
//! whether memory comes back each time.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lode_peers::{self as peers, Acl, Action, Content, Key, Logging, Server, Signing, Spec, Zone};
use lode_wire::Rtype;
use serde_json::{json, Value};

use super::probe::{self, name};
use super::{cpus, io, write_report, write_zone_files, State, ZonesError};
use crate::provenance::Provenance;

/// The TSIG key of the zones' updates (loopback only).
const SECRET: &str = "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI=";

/// Settings of `lode-bench reload-zones`.
#[derive(Debug, Clone)]
pub struct ReloadConfig {
    /// Report folder.
    pub out: PathBuf,
    /// Scratch folder: zone files and the server's folder.
    pub work: PathBuf,
    /// The lode binary.
    pub lode: PathBuf,
    /// Zones added by the reload.
    pub zones: u64,
    /// Each added zone signed by the server.
    pub signed: bool,
    /// Rounds of adding, updating, removing.
    pub cycles: u32,
    /// How long to wait after the removal before the last reading.
    pub settle: Duration,
    /// The server's port on 127.0.0.1.
    pub port: u16,
}

/// One round of adding, updating and removing.
#[derive(Debug, Clone, PartialEq)]
pub struct Cycle {
    /// Seconds of the reload adding the zones.
    pub add_secs: f64,
    /// The server after it.
    pub added: State,
    /// The last zone served signed (DNSKEY answered; None: not signed).
    pub signed: Option<bool>,
    /// RCODE of the update to the last zone.
    pub update_rcode: u8,
    /// What the updated name answers afterwards.
    pub update_answer: String,
    /// Seconds of the reload removing them.
    pub remove_secs: f64,
    /// The server after it.
    pub removed: State,
    /// RCODE of the last zone's SOA query afterwards (REFUSED: gone).
    pub status: Option<u8>,
    /// The server `settle` later.
    pub settled: State,
}

/// What `reload-zones` measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ReloadResult {
    /// The server started with one zone.
    pub start: State,
    /// Each cycle.
    pub cycles: Vec<Cycle>,
}

/// The server's description: one zone (`z0.test.`) or all of them.
fn spec(cfg: &ReloadConfig, dir: &Path, zones: u64) -> Spec {
    let mut s = Spec::new(peers::Kind::Lode, cfg.port).stop_with_parent();
    s.dir = Some(dir.into());
    s.program = Some(cfg.lode.clone());
    s.workers = Some(cpus());
    s.logging = Logging::Plain;
    s.server_extra = "zonefile-sync = -1\n".into();
    s = s
        .key(Key::new("k", "hmac-sha256", SECRET))
        .acl(Acl::new("up", &[Action::Update, Action::Transfer]).key("k"));
    s.zones = (0..=zones)
        .map(|i| {
            let z = Zone::primary(
                &format!("z{i}.test."),
                Content::File(cfg.work.join("zones").join(format!("z{i}.test.zone"))),
            )
            .acls(&["up"]);
            match (i, cfg.signed) {
                (1.., true) => z.signed(Signing::default()),
                _ => z,
            }
        })
        .collect();
    s
}

/// Runs the benchmark; `say` gets each line as it is measured.
pub fn run(cfg: &ReloadConfig, say: &mut dyn FnMut(&str)) -> Result<ReloadResult, ZonesError> {
    if cfg.zones == 0 || cfg.cycles == 0 {
        return Err(ZonesError("--zones and --cycles must be positive".into()));
    }
    let started = Instant::now();
    let provenance = Provenance::collect(Some(&cfg.lode), &[]);
    write_zone_files(&cfg.work.join("zones"), 0..cfg.zones + 1, |i| {
        (
            format!("z{i}.test.zone"),
            format!(
                "$ORIGIN z{i}.test.\n$TTL 300\n@ SOA ns hm 1 3600 600 86400 300\n@ NS ns\n\
                 ns A 192.0.2.1\nwww A 192.0.2.2\n"
            ),
        )
    })?;
    // Both configurations written by lode-peers, then swapped in before each reload.
    let dir = cfg.work.join("lode");
    let _ = std::fs::remove_dir_all(&dir);
    let conf = spec(cfg, &dir, cfg.zones).write_config()?;
    let full = dir.join("full.toml");
    std::fs::rename(&conf, &full).map_err(io(full.display()))?;
    let mut base = spec(cfg, &dir, 0);
    base.write_config()?;
    let one = dir.join("base.toml");
    std::fs::copy(&conf, &one).map_err(io(one.display()))?;
    base.config_file = Some(conf.clone());
    let mut server = Server::start(&base)?;
    let start = State::of(&server);
    say(&format!("started with 1 zone: {}", start.line()));
    let key = lode_tsig::Key::parse_spec(&format!("hmac-sha256:k:{SECRET}"))
        .map_err(|e| ZonesError(format!("key: {e:?}")))?;
    let last = name(&format!("z{}.test.", cfg.zones))?;
    let owner = name(&format!("x.{last}"))?;
    let mut cycles = Vec::new();
    for n in 1..=cfg.cycles {
        if cfg.cycles > 1 {
            say(&format!("cycle {n}:"));
        }
        let add_secs = reload(cfg, &server, &full, &conf)?;
        let added = State::of(&server);
        say(&format!(
            "reload adding {} zones{}: {add_secs:.2} s; {}",
            cfg.zones,
            if cfg.signed { " (signed)" } else { "" },
            added.line()
        ));
        let addr = server.addr();
        let signed = cfg.signed.then(|| {
            probe::ask(addr, &last, Rtype::DNSKEY, true, Duration::from_secs(2))
                .is_some_and(|a| a.has(Rtype::DNSKEY))
        });
        if signed == Some(false) {
            say(&format!("warning: {last} not signed"));
        }
        let update_rcode = probe::add_address(addr, &last, &owner, [192, 0, 2, 9], &key)?;
        let update_answer = probe::ask(addr, &owner, Rtype::A, false, Duration::from_secs(2))
            .and_then(|a| {
                a.records
                    .iter()
                    .find(|(t, r)| *t == Rtype::A && r.len() == 4)
                    .map(|(_, r)| format!("{}.{}.{}.{}", r[0], r[1], r[2], r[3]))
            })
            .unwrap_or_default();
        say(&format!(
            "update to {last}: {update_answer}{}",
            match update_rcode {
                0 => String::new(),
                r => format!(" (update {})", lode_wire::rcode::name(r.into())),
            }
        ));
        let remove_secs = reload(cfg, &server, &one, &conf)?;
        let removed = State::of(&server);
        say(&format!(
            "reload removing them: {remove_secs:.2} s; {}",
            removed.line()
        ));
        let status =
            probe::ask(addr, &last, Rtype::SOA, false, Duration::from_secs(2)).map(|a| a.rcode);
        say(&format!(
            "status: {}",
            status.map_or("no reply".into(), |r| lode_wire::rcode::name(r.into())
                .to_string())
        ));
        std::thread::sleep(cfg.settle);
        let settled = State::of(&server);
        say(&format!(
            "{} s later: {}",
            cfg.settle.as_secs_f64(),
            settled.line()
        ));
        cycles.push(Cycle {
            add_secs,
            added,
            signed,
            update_rcode,
            update_answer,
            remove_secs,
            removed,
            status,
            settled,
        });
    }
    server.stop();
    let r = ReloadResult { start, cycles };
    write_report(
        &cfg.out,
        "reload-zones",
        &to_markdown(cfg, &r, started.elapsed()),
        to_json(cfg, &r, started.elapsed()),
        &provenance,
    )?;
    Ok(r)
}

/// Puts `config` in place of the server's `conf` and times `lode reload`.
fn reload(
    cfg: &ReloadConfig,
    server: &Server,
    config: &Path,
    conf: &Path,
) -> Result<f64, ZonesError> {
    std::fs::copy(config, conf).map_err(io(conf.display()))?;
    let start = Instant::now();
    let out = Command::new(&cfg.lode)
        .arg("reload")
        .arg("--control")
        .arg(server.dir().join("ctl.sock"))
        .stdin(Stdio::null())
        .output()
        .map_err(io(format!("{} reload", cfg.lode.display())))?;
    let secs = start.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(ZonesError(format!(
            "lode reload: {}: {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(secs)
}

/// reload-zones.md: a table of the cycles.
fn to_markdown(cfg: &ReloadConfig, r: &ReloadResult, elapsed: Duration) -> String {
    let mut m = format!(
        "# Zones added and removed by reload\n\n\
         Lode started with 1 zone; {} zones{} added by one `lode reload`, an update to \
         the last of them, then all removed by another; {} cycle(s), the last reading \
         {} s after the removal; {:.0} s in all.\n\n\
         Started with 1 zone: {} MiB, {} threads, {} open files.\n\n\
         | cycle | adding | resident after | update | removing | resident after | status | {} s later |\n\
         |---|---|---|---|---|---|---|---|\n",
        cfg.zones,
        if cfg.signed {
            " (each signed, keys made at the reload)"
        } else {
            ""
        },
        cfg.cycles,
        cfg.settle.as_secs_f64(),
        elapsed.as_secs_f64(),
        r.start.mib(),
        r.start.threads,
        r.start.fds,
        cfg.settle.as_secs_f64()
    );
    for (i, c) in r.cycles.iter().enumerate() {
        m.push_str(&format!(
            "| {} | {:.2} s | {} MiB | {} | {:.2} s | {} MiB | {} | {} MiB |\n",
            i + 1,
            c.add_secs,
            c.added.mib(),
            match c.update_answer.as_str() {
                "" => "not answered",
                a => a,
            },
            c.remove_secs,
            c.removed.mib(),
            c.status
                .map_or("no reply".into(), |s| lode_wire::rcode::name(s.into())),
            c.settled.mib()
        ));
    }
    m
}

/// reload-zones.json: settings and the cycles, numbers as numbers.
fn to_json(cfg: &ReloadConfig, r: &ReloadResult, elapsed: Duration) -> Value {
    let cycles: Vec<Value> = r
        .cycles
        .iter()
        .map(|c| {
            json!({
                "add_secs": c.add_secs,
                "after_adding": c.added.to_json(),
                "last_zone_signed": c.signed,
                "update_rcode": c.update_rcode,
                "update_answer": c.update_answer,
                "remove_secs": c.remove_secs,
                "after_removing": c.removed.to_json(),
                "status_rcode": c.status,
                "settled": c.settled.to_json(),
            })
        })
        .collect();
    json!({
        "benchmark": "reload-zones",
        "settings": {
            "zones": cfg.zones,
            "signed": cfg.signed,
            "cycles": cfg.cycles,
            "settle_secs": cfg.settle.as_secs_f64(),
            "port": cfg.port,
        },
        "start": r.start.to_json(),
        "cycles": cycles,
        "wall_secs": elapsed.as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_and_report() {
        let cfg = ReloadConfig {
            out: "/nonexistent".into(),
            work: "/w".into(),
            lode: "/bin/lode".into(),
            zones: 2,
            signed: true,
            cycles: 1,
            settle: Duration::from_secs(3),
            port: 26000,
        };
        let full = spec(&cfg, Path::new("/w/lode"), 2);
        assert_eq!(full.zones.len(), 3);
        assert!(full.zones[0].signing.is_none() && full.zones[2].signing.is_some());
        assert_eq!(spec(&cfg, Path::new("/w/lode"), 0).zones.len(), 1);
        let s = State::test(65, 5, 20);
        let r = ReloadResult {
            start: s,
            cycles: vec![Cycle {
                add_secs: 1.1,
                added: s,
                signed: Some(true),
                update_rcode: 0,
                update_answer: "192.0.2.9".into(),
                remove_secs: 0.81,
                removed: s,
                status: Some(5),
                settled: s,
            }],
        };
        let m = to_markdown(&cfg, &r, Duration::from_secs(9));
        assert!(
            m.contains("| 1 | 1.10 s | 65 MiB | 192.0.2.9 | 0.81 s | 65 MiB | REFUSED | 65 MiB |"),
            "{m}"
        );
        let j = to_json(&cfg, &r, Duration::from_secs(9));
        assert_eq!(j["cycles"][0]["status_rcode"], 5);
        assert!(crate::provenance::numeric_strings(&j).is_empty(), "{j}");
    }
}
