//! `lode-bench axfr-in`: a Lode secondary taking a whole zone by AXFR — its
//! peak memory while it takes the zone against its resident size once it
//! serves it, and the time from its start until it serves the primary's serial.
//!
//! ```text
//!  gen enum (1 zone, N numbers; cached in --work) ─▶ Lode primary (transfers allowed)
//!    ─▶ its serial ─▶ Lode secondary (--secondary-lode) started, asks for the zone at once
//!    ─▶ SOA serial polled every 0.1 s until it is the primary's ─▶ VmHWM, VmRSS
//!  ─▶ axfr-in.md, axfr-in.json
//! ```

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use lode_peers::{Acl, Action, Content, Ready, Server, Zone};
use serde_json::json;

use super::{div, enum_set, fail, lode_spec, mib, status_bytes, write_report, CostError};
use crate::compare::say;
use crate::fleet::probe::soa_serial_from;
use crate::gen::enumset::EnumSetSpec;
use crate::provenance::Provenance;

/// Settings of `lode-bench axfr-in`.
#[derive(Debug, Clone)]
pub struct AxfrInConfig {
    /// Report folder.
    pub out: PathBuf,
    /// Scratch folder: the set (kept for the next run), the servers' folders.
    pub work: PathBuf,
    /// The primary's lode binary.
    pub lode: PathBuf,
    /// The secondary's lode binary (the one measured).
    pub secondary: PathBuf,
    /// NAPTR records of the zone.
    pub records: u64,
    /// Leading digits of its numbers.
    pub prefix: String,
    /// The primary's port on 127.0.0.1; the secondary's is the next.
    pub port: u16,
    /// CPUs both servers are pinned to (empty: not pinned).
    pub cpus: Vec<usize>,
    /// Longest wait for the primary to serve the zone.
    pub load_limit: Duration,
    /// Longest wait for the secondary to serve the primary's serial.
    pub transfer_limit: Duration,
}

/// What was measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AxfrInResult {
    /// The zone.
    pub zone: String,
    /// The primary's serial, served by the secondary at the end.
    pub serial: u32,
    /// Seconds from the secondary's start until it served that serial.
    pub secs: f64,
    /// The secondary's peak resident memory (VmHWM), bytes.
    pub peak: u64,
    /// Its resident memory then (VmRSS), bytes.
    pub resident: u64,
    /// Its log line of the transfer (`AXFR (whole zone) from …`), if any.
    pub transfer_line: Option<String>,
    /// The Markdown report written.
    pub report: PathBuf,
}

impl AxfrInResult {
    /// Peak ÷ resident.
    pub fn ratio(&self) -> f64 {
        div(self.peak as f64, self.resident as f64)
    }

    /// The figures as the script printed them.
    pub fn lines(&self, secondary: &std::path::Path) -> Vec<String> {
        let mut v = vec![format!(
            "secondary {}: serving serial {} after {:.1} s; peak {:.0} MiB, resident {:.0} MiB, \
             peak / resident {:.2}",
            secondary.display(),
            self.serial,
            self.secs,
            mib(self.peak),
            mib(self.resident),
            self.ratio()
        )];
        v.extend(self.transfer_line.clone());
        v
    }
}

/// Runs the measurement; the report in `cfg.out`.
pub fn run(cfg: &AxfrInConfig) -> Result<AxfrInResult, CostError> {
    let provenance = Provenance::collect(Some(&cfg.secondary), &[]);
    let mut spec = EnumSetSpec::new(cfg.records, 1);
    spec.prefix = Some(cfg.prefix.clone());
    let set_dir = cfg.work.join(format!("set-{}-{}", cfg.records, cfg.prefix));
    let (_, zones) = enum_set(&spec, &set_dir, true)?;
    let (zone, file) = zones[0].clone();
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);

    let mut p = lode_spec(
        &cfg.lode,
        cfg.port,
        &cfg.work.join("primary"),
        cfg.load_limit,
    )?;
    p.cpus.clone_from(&cfg.cpus);
    p = p.acl(Acl::new("xfr", &[Action::Transfer])).zone(
        Zone::primary(&zone, Content::File(file))
            .acls(&["xfr"])
            .journal(false),
    );
    say(&format!(
        "primary: loading {zone} ({} records)",
        cfg.records
    ));
    let primary = Server::start(&p).map_err(|e| CostError(format!("primary: {e}")))?;
    let serial = (0..10).find_map(|_| {
        soa_serial_from(loopback, primary.addr(), &zone).or_else(|| {
            std::thread::sleep(Duration::from_millis(200));
            None
        })
    });
    let Some(serial) = serial else {
        return fail(format!("the primary did not serve {zone}"));
    };
    say(&format!(
        "primary: {zone} serial {serial} ({} records)",
        cfg.records
    ));

    let sport = cfg.port.wrapping_add(1);
    let mut s = lode_spec(
        &cfg.secondary,
        sport,
        &cfg.work.join("secondary"),
        cfg.transfer_limit,
    )?;
    s.cpus.clone_from(&cfg.cpus);
    s.ready = Ready::Started;
    s = s.zone(Zone::secondary(&zone, &[primary.addr()]));
    let mut secondary = Server::start(&s).map_err(|e| CostError(format!("secondary: {e}")))?;
    let saddr = SocketAddr::new(loopback, sport);
    let mut first = true;
    let took = secondary
        .wait_until(&format!("serial {serial}"), cfg.transfer_limit, || {
            if !std::mem::take(&mut first) {
                std::thread::sleep(Duration::from_millis(100));
            }
            soa_serial_from(loopback, saddr, &zone) == Some(serial)
        })
        .map_err(|e| CostError(format!("the secondary did not take serial {serial}: {e}")))?;
    let pid = secondary.pid();
    let mut r = AxfrInResult {
        zone,
        serial,
        secs: took.as_secs_f64(),
        peak: status_bytes(pid, "VmHWM"),
        resident: status_bytes(pid, "VmRSS"),
        transfer_line: secondary
            .log()
            .lines()
            .find(|l| l.contains("whole zone"))
            // Without its time stamp.
            .map(|l| {
                let text = l.split_once(' ').map_or(l, |(_, t)| t).trim_start();
                text.chars().take(200).collect()
            }),
        ..AxfrInResult::default()
    };
    secondary.stop();
    drop(primary);
    let md = format!(
        "# AXFR in: a Lode secondary's peak memory\n\n{} NAPTR records in {} (prefix {}), \
         from a Lode primary on 127.0.0.1:{}; both servers with one worker{}.\n\n{}\n",
        cfg.records,
        r.zone,
        cfg.prefix,
        cfg.port,
        if cfg.cpus.is_empty() {
            String::new()
        } else {
            let cpus: Vec<String> = cfg.cpus.iter().map(|c| c.to_string()).collect();
            format!(", pinned to CPU {}", cpus.join(","))
        },
        r.lines(&cfg.secondary).join("\n\n")
    );
    let js = json!({
        "settings": {
            "records": cfg.records,
            "prefix": cfg.prefix,
            "cpus": cfg.cpus,
            "secondary": cfg.secondary.display().to_string(),
        },
        "zone": r.zone,
        "serial": r.serial,
        "serving_after_secs": r.secs,
        "peak_bytes": r.peak,
        "resident_bytes": r.resident,
        "peak_per_resident": r.ratio(),
        "transfer_log": r.transfer_line,
    });
    r.report = write_report(&cfg.out, "axfr-in", &md, js, &provenance)?;
    Ok(r)
}
