//! What DNSSEC signing costs, one set-up per command: signing through a
//! PKCS #11 token against key files (`lode-bench hsm`, Lode beside Knot's
//! `kzonesign`), a ZSK rollover of a large zone (`lode-bench rollover`: the
//! re-signing's time and CPU, query latency during it against static), and
//! `lode-bench signing`: a zone signed whole by Lode and its peers, the
//! memory of an NSEC3-signed zone, the server CPU per DO=1 answer on it.
//! Servers start through lode-peers; each command prints its figures and
//! writes a report (`NAME.md`, `NAME.json`) with the provenance.
//!
//! ```text
//!  gen enum (1 zone) ─▶ lode-peers Spec + Signing (threads, keystore, rollover timing)
//!    ├ Lode:  start ─▶ "signed whole in S s" in its log ─▶ AXFR: signatures counted
//!    └ Knot:  kzonesign on the configuration lode-peers writes ─▶ signatures in its output
//!  ─▶ NAME.md, NAME.json (numbers as numbers) with the provenance
//! ```

pub mod hsm;
pub mod parts;
pub mod rollover;
pub mod served;
pub mod whole;

/// The servers these commands start (lode-peers' names for them).
pub use lode_peers::Kind;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lode_peers::{Acl, Action, Content, Ready, Server, Signing, Spec, Zone};
use lode_wire::request::Reply;
use lode_wire::{Name, Rtype};

use crate::gen::enumset::EnumSetSpec;
use crate::server_cost::{enum_set, fail, fresh_dir, io, lode_spec, status_bytes, CostError};

/// The one zone of an ENUM set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OneZone {
    /// Its apex (absolute).
    pub apex: String,
    /// Its zone file.
    pub file: PathBuf,
    /// The set's folder (query files beside the zone file).
    pub dir: PathBuf,
}

/// One ENUM zone of `records` NAPTR records whose numbers start with
/// `prefix` (`lode-bench gen enum --zones 1`), kept in `work` for the next run.
pub fn one_zone(work: &Path, records: u64, prefix: &str) -> Result<OneZone, CostError> {
    let mut spec = EnumSetSpec::new(records, 1);
    spec.prefix = Some(prefix.to_string());
    let dir = work.join(format!("set-{records}-{prefix}"));
    let (_, zones) = enum_set(&spec, &dir, true)?;
    let (apex, file) = zones[0].clone();
    Ok(OneZone { apex, file, dir })
}

/// The seconds of Lode's "DNSSEC, signed whole in S s" log line (the signing alone).
pub fn signed_whole_secs(log: &str) -> Option<f64> {
    log.lines().find_map(|l| {
        let rest = &l[l.find("signed whole in ")? + "signed whole in ".len()..];
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// What Lode's signing of a zone at its start measured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LodeSigned {
    /// Seconds from the process's start to its "signed whole" line.
    pub wall_secs: f64,
    /// The seconds that line gives: the signing alone.
    pub signing_secs: Option<f64>,
    /// Signatures in the zone, counted by AXFR (None: not counted).
    pub signatures: Option<u64>,
    /// Peak resident memory (VmHWM), bytes.
    pub peak: u64,
}

/// How Lode is started to sign a zone.
#[derive(Debug, Clone)]
pub struct LodeSigner<'a> {
    /// The lode binary.
    pub lode: &'a Path,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Its folder (made afresh).
    pub dir: PathBuf,
    /// The policy.
    pub signing: Signing,
    /// Environment variables set for it (`NAME=value`).
    pub env: Vec<String>,
    /// Signatures counted by AXFR.
    pub count: bool,
    /// Longest wait for the signing.
    pub limit: Duration,
}

/// Lode on 127.0.0.1:`port` in `dir` (made afresh; one worker, a
/// journal, zone files not written back, transfers allowed) signing `zone`
/// with `signing`, `env` (`NAME=value`) set for it; returned by
/// [`Server::start`] as soon as started.
pub fn lode_sign_spec(
    lode: &Path,
    port: u16,
    dir: &Path,
    zone: &OneZone,
    signing: Signing,
    env: &[String],
    limit: Duration,
) -> Result<Spec, CostError> {
    let mut spec = lode_spec(lode, port, dir, limit)?;
    if !env.is_empty() {
        spec.exec_under.push("env".into());
        spec.exec_under.extend(env.iter().cloned());
    }
    spec.ready = Ready::Started;
    spec.server_extra = "zonefile-sync = -1\n".into();
    Ok(spec.acl(Acl::new("xfr", &[Action::Transfer])).zone(
        Zone::primary(&zone.apex, Content::File(zone.file.clone()))
            .acls(&["xfr"])
            .signed(signing),
    ))
}

/// Starts Lode as [`lode_sign_spec`] says; waits for its "signed whole"
/// line and for the zone to answer, counts the signatures by AXFR, reads
/// its peak memory, stops it.
pub fn lode_sign(s: &LodeSigner, zone: &OneZone) -> Result<LodeSigned, CostError> {
    let spec = lode_sign_spec(
        s.lode,
        s.port,
        &s.dir,
        zone,
        s.signing.clone(),
        &s.env,
        s.limit,
    )?;
    let mut server = Server::start(&spec).map_err(|e| CostError(format!("lode: {e}")))?;
    let took = |e: lode_peers::Error| CostError(format!("lode: {e}"));
    let wall = server
        .wait_until("its \"signed whole\" line", s.limit, || {
            std::thread::sleep(Duration::from_millis(50));
            server_log_has(&spec, "signed whole")
        })
        .map_err(took)?;
    // Served a moment after the line.
    wait_served(&mut server, &zone.apex, s.limit)?;
    let addr = server.addr();
    let peak = status_bytes(server.pid(), "VmHWM");
    let signatures = match s.count {
        true => Some(axfr(addr, &zone.apex, s.limit, None)?.signatures),
        false => None,
    };
    server.stop();
    Ok(LodeSigned {
        wall_secs: wall.as_secs_f64(),
        signing_secs: signed_whole_secs(&server.log()),
        signatures,
        peak,
    })
}

/// Waits until `server` answers `apex`'s SOA as its zone (at most `limit` from its start).
pub fn wait_served(server: &mut Server, apex: &str, limit: Duration) -> Result<(), CostError> {
    let addr = server.addr();
    server
        .wait_until(apex, limit, || {
            lode_peers::soa_query(addr, apex, Duration::from_millis(300))
                .is_some_and(|a| a.serves_zone())
        })
        .map(|_| ())
        .map_err(|e| CostError(format!("the server on {addr}: {e}")))
}

/// Whether the stdout and stderr log of a server started from `spec` holds `needle`.
fn server_log_has(spec: &Spec, needle: &str) -> bool {
    spec.stdio
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .is_some_and(|t| t.contains(needle))
}

/// What Knot's `kzonesign` measured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct KnotSigned {
    /// Wall seconds of the command (it also reads and writes the zone).
    pub wall_secs: f64,
    /// Signatures in the zone it wrote.
    pub signatures: u64,
    /// Its peak resident memory, bytes.
    pub peak: u64,
}

/// `kzonesign -c knot.conf -o DIR/out ZONE` on the configuration lode-peers
/// writes for a Knot signing `zone` with `signing`, in `dir` (made afresh),
/// with `env` (`NAME=value`) set: its time, signatures and peak.
pub fn kzonesign(
    dir: &Path,
    zone: &OneZone,
    signing: Signing,
    env: &[String],
) -> Result<KnotSigned, CostError> {
    fresh_dir(dir)?;
    // kzonesign binds nothing; Knot's configuration wants a port all the same.
    let mut spec = Spec::new(lode_peers::Kind::Knot, 53);
    spec.dir = Some(dir.to_path_buf());
    let spec =
        spec.zone(Zone::primary(&zone.apex, Content::File(zone.file.clone())).signed(signing));
    let conf = spec
        .write_config()
        .map_err(|e| CostError(format!("knot: {e}")))?;
    let out = dir.join("out");
    std::fs::create_dir_all(&out).map_err(|e| io(&out, e))?;
    let program = lode_peers::program("kzonesign").ok_or_else(|| {
        CostError("kzonesign is not installed (Debian package knot-dnssecutils)".into())
    })?;
    let mut cmd = Command::new(program);
    cmd.arg("-c").arg(&conf).arg("-o").arg(&out).arg(&zone.apex);
    for e in env {
        if let Some((k, v)) = e.split_once('=') {
            cmd.env(k, v);
        }
    }
    let (wall_secs, peak) = timed(cmd, &dir.join("kzonesign.log"))?;
    Ok(KnotSigned {
        wall_secs,
        signatures: signatures_in(&out)?,
        peak,
    })
}

/// Runs `cmd` under `/usr/bin/time -f %M`, its output into `log`: its wall
/// seconds and peak resident memory in bytes; the log's tail in the error
/// when it fails.
pub fn timed(cmd: Command, log: &Path) -> Result<(f64, u64), CostError> {
    let peak_file = log.with_extension("peak");
    let out = std::fs::File::create(log).map_err(|e| io(log, e))?;
    let err = out.try_clone().map_err(|e| io(log, e))?;
    let started = Instant::now();
    let status = Command::new("/usr/bin/time")
        .args(["-f", "%M", "-o"])
        .arg(&peak_file)
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| CostError(format!("/usr/bin/time (Debian package time): {e}")))?;
    let wall = started.elapsed().as_secs_f64();
    let name = cmd.get_program().to_string_lossy().into_owned();
    if !status.success() {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        return fail(format!(
            "{name} failed ({status}):\n{}",
            lines[lines.len().saturating_sub(5)..].join("\n")
        ));
    }
    let kib: u64 = std::fs::read_to_string(&peak_file)
        .ok()
        .and_then(|t| t.lines().last()?.trim().parse().ok())
        .unwrap_or(0);
    Ok((wall, kib * 1024))
}

/// Signature records in zone text: lines whose third or fourth field is
/// `RRSIG` (the type field with or without a TTL, not an NSEC bitmap's);
/// `path` a file or a folder of files.
pub fn signatures_in(path: &Path) -> Result<u64, CostError> {
    let files: Vec<PathBuf> = if path.is_dir() {
        let mut v: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| io(path, e))?
            .flatten()
            .map(|e| e.path())
            .collect();
        v.sort();
        v
    } else {
        vec![path.to_path_buf()]
    };
    let mut n = 0;
    for f in files {
        lines_of(&f, |line| {
            let mut fields = line.split_whitespace().skip(2);
            if fields.next() == Some("RRSIG") || fields.next() == Some("RRSIG") {
                n += 1;
            }
        })?;
    }
    Ok(n)
}

/// Calls `each` with every line of `path`; how many there were.
pub fn lines_of(path: &Path, mut each: impl FnMut(&str)) -> Result<u64, CostError> {
    let f = std::fs::File::open(path).map_err(|e| io(path, e))?;
    let mut n = 0;
    for line in std::io::BufReader::with_capacity(1 << 20, f).lines() {
        each(&line.map_err(|e| io(path, e))?);
        n += 1;
    }
    Ok(n)
}

/// Whether `server` answers `name`/`rtype` asked with DO=1 over UDP
/// (one try, 1 s) with a signature among the answers.
pub fn signed_answer(server: SocketAddr, name: &str, rtype: Rtype) -> bool {
    let Ok(n) = Name::parse(name, Some(&Name::root())) else {
        return false;
    };
    let mut q = lode_wire::request::query(0x5a5c, &n, rtype);
    // One OPT record: root owner, UDP size 1232, DO set.
    q[11] = 1;
    q.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0, 0, 0]);
    let Ok(sock) = std::net::UdpSocket::bind(("127.0.0.1", 0)) else {
        return false;
    };
    let mut buf = vec![0u8; 4096];
    let reply = sock
        .set_read_timeout(Some(Duration::from_secs(1)))
        .and_then(|_| sock.send_to(&q, server))
        .and_then(|_| sock.recv(&mut buf));
    let Ok(len) = reply else {
        return false;
    };
    let msg = &buf[..len];
    Reply::of(msg).is_some_and(|h| h.id == 0x5a5c && h.rcode == 0)
        && lode_wire::request::answers(msg).any(|a| a.rtype == Rtype::RRSIG)
}

/// What an AXFR held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Transfer {
    /// Records, the closing SOA left out.
    pub records: u64,
    /// RRSIG records among them.
    pub signatures: u64,
}

/// AXFRs `zone` from `server` over TCP (unsigned) within `limit`; with
/// `text`, writes each record to it as a zone-file line (absolute owners),
/// the closing SOA left out (NSD refuses a zone file with two).
pub fn axfr(
    server: SocketAddr,
    zone: &str,
    limit: Duration,
    mut text: Option<&mut dyn Write>,
) -> Result<Transfer, CostError> {
    let name = Name::parse(zone, Some(&Name::root()))
        .map_err(|e| CostError(format!("zone {zone}: {e}")))?;
    let q = lode_wire::request::query(0x5a5b, &name, Rtype::AXFR);
    let started = Instant::now();
    let what = |e: std::io::Error| CostError(format!("AXFR of {zone} from {server}: {e}"));
    let mut s = TcpStream::connect_timeout(&server, Duration::from_secs(5)).map_err(what)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(what)?;
    let mut framed = (q.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&q);
    s.write_all(&framed).map_err(what)?;
    let mut r = BufReader::with_capacity(1 << 20, s);
    let mut t = Transfer::default();
    let mut soas = 0;
    let mut buf = vec![0u8; 65535];
    while soas < 2 {
        if started.elapsed() > limit {
            return fail(format!(
                "AXFR of {zone} from {server}: not done within {limit:?}"
            ));
        }
        let mut len = [0u8; 2];
        r.read_exact(&mut len).map_err(what)?;
        let msg = &mut buf[..usize::from(u16::from_be_bytes(len))];
        r.read_exact(msg).map_err(what)?;
        let bad = || CostError(format!("AXFR of {zone} from {server}: a malformed message"));
        let h = Reply::of(msg).ok_or_else(bad)?;
        if h.rcode != 0 {
            return fail(format!("AXFR of {zone} from {server}: RCODE {}", h.rcode));
        }
        let mut pos = match h.qdcount {
            0 => lode_wire::message::HEADER_LEN,
            _ => lode_wire::message::first_qname_end(msg).ok_or_else(bad)? + 4,
        };
        for _ in 0..h.ancount {
            let (rec, next) = lode_wire::record::read_record(msg, pos).map_err(|_| bad())?;
            pos = next;
            if rec.rtype == Rtype::SOA {
                soas += 1;
                if soas == 2 {
                    break;
                }
            }
            t.records += 1;
            if rec.rtype == Rtype::RRSIG {
                t.signatures += 1;
            }
            if let Some(w) = text.as_deref_mut() {
                writeln!(w, "{}", lode_zonefile::format_record(&rec)).map_err(what)?;
            }
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests;
