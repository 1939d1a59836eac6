//! The transfer tests' tools around the servers: UPDATEs with
//! `knsupdate`, SOA serial probes and waits, a zone's contents by AXFR as a
//! multiset of normalised records.

use std::io::Write as _;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::peers::{absolute, sbin, TsigKey};
use super::{soa_serial_of, udp_exchange, Message, Query};

/// Sends UPDATEs to `addr` for `zone` with `knsupdate`, signed with `key`:
/// `commands` is knsupdate script text (`update add ...`, `update delete
/// ...`, one `send` per UPDATE message; a final `send` is added when the
/// text does not end with one). Fails unless every UPDATE got NOERROR.
pub fn nsupdate(addr: SocketAddr, zone: &str, key: &TsigKey, commands: &str) -> Result<(), String> {
    let mut script = knsupdate_header(addr, zone, key);
    script.push_str(commands);
    if !commands.trim_end().ends_with("send") {
        script.push_str("\nsend\n");
    }
    script.push_str("\nquit\n");
    let mut child = spawn_knsupdate()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(script.as_bytes())
            .map_err(|e| format!("knsupdate stdin: {e}"))?;
    }
    knsupdate_result(child, addr)
}

/// `knsupdate` with its stdin, stdout and stderr piped.
fn spawn_knsupdate() -> Result<Child, String> {
    Command::new(sbin("knsupdate"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn knsupdate: {e}"))
}

/// The `server`, `key`, `zone`, `origin` and `ttl` lines of a knsupdate script.
fn knsupdate_header(addr: SocketAddr, zone: &str, key: &TsigKey) -> String {
    format!(
        "server {} {}\nkey {}:{} {}\nzone {}\norigin {}\nttl 300\n",
        addr.ip(),
        addr.port(),
        key.algorithm,
        key.name,
        key.secret,
        absolute(zone),
        absolute(zone)
    )
}

/// Waits for a knsupdate fed its whole script; fails unless every UPDATE
/// got NOERROR.
fn knsupdate_result(child: Child, addr: SocketAddr) -> Result<(), String> {
    let out = child
        .wait_with_output()
        .map_err(|e| format!("knsupdate: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || stderr.contains("ERROR") || stdout.contains("ERROR") {
        return Err(format!(
            "knsupdate to {addr} failed ({}):\n{stdout}{stderr}",
            out.status
        ));
    }
    Ok(())
}

/// Sends one UPDATE per entry of `changes` (knsupdate script text without
/// the `send`) to `addr` through one `knsupdate`, starting one every `gap`
/// (back to back when zero; each waits for its answer); returns how long
/// they took. Fails unless every UPDATE got NOERROR.
pub fn paced_updates(
    addr: SocketAddr,
    zone: &str,
    key: &TsigKey,
    changes: &[String],
    gap: Duration,
) -> Result<Duration, String> {
    let mut child = spawn_knsupdate()?;
    let mut stdin = child.stdin.take().ok_or("knsupdate stdin")?;
    let header = knsupdate_header(addr, zone, key);
    let begun = Instant::now();
    let mut write = |text: &str| {
        stdin
            .write_all(text.as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("knsupdate stdin: {e}"))
    };
    write(&header)?;
    for (i, c) in changes.iter().enumerate() {
        let slot = begun + gap * i as u32;
        if let Some(wait) = slot.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        write(&format!("{}\nsend\n", c.trim_end()))?;
    }
    write("quit\n")?;
    drop(stdin);
    knsupdate_result(child, addr)?;
    Ok(begun.elapsed())
}

/// The SOA serial `addr` serves for `zone` (one UDP query, 300 ms), if it
/// answers with one.
pub fn soa_serial(addr: SocketAddr, zone: &str) -> Option<u32> {
    let r = udp_exchange(
        addr,
        &Query::new(&absolute(zone), 6, 1).to_wire(),
        Duration::from_millis(300),
    )?;
    let m = Message::parse(&r);
    if m.rcode() != 0 || !m.aa {
        return None;
    }
    soa_serial_of(&m)
}

/// Waits until `addr` serves `zone` with SOA serial `serial` (exactly),
/// polling every 50 ms; returns how long that took, or an error naming the
/// last serial seen once `timeout` has passed.
pub fn wait_serial(
    addr: SocketAddr,
    zone: &str,
    serial: u32,
    timeout: Duration,
) -> Result<Duration, String> {
    let start = Instant::now();
    let mut last = None;
    loop {
        last = soa_serial(addr, zone).or(last);
        if last == Some(serial) {
            return Ok(start.elapsed());
        }
        if start.elapsed() > timeout {
            return Err(format!(
                "{addr} did not reach serial {serial} of {zone} within {timeout:?} (last seen: {})",
                last.map_or("none".into(), |s| s.to_string())
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until `addr` serves `zone` with any SOA serial; returns it.
pub fn wait_any_serial(addr: SocketAddr, zone: &str, timeout: Duration) -> Result<u32, String> {
    let start = Instant::now();
    loop {
        if let Some(s) = soa_serial(addr, zone) {
            return Ok(s);
        }
        if start.elapsed() > timeout {
            return Err(format!("{addr} did not serve {zone} within {timeout:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The contents of `zone` at `addr` by AXFR (kdig over TCP, signed with
/// `key`), as a sorted multiset of normalised record lines (see
/// [`normalise_record`]), the closing SOA left out. Fails when the
/// transfer does (refused, bad TSIG, cut short: no closing SOA).
pub fn axfr_records(addr: SocketAddr, zone: &str, key: &TsigKey) -> Result<Vec<String>, String> {
    let out = Command::new(sbin("kdig"))
        .arg(format!("@{}", addr.ip()))
        .arg("-p")
        .arg(addr.port().to_string())
        .arg("-y")
        .arg(key.y_arg())
        .arg("+noall")
        .arg("+answer")
        .arg("+nocrypto")
        .arg("+time=5")
        .arg("+retry=0")
        .arg("AXFR")
        .arg(absolute(zone))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("kdig: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || stderr.contains("ERROR") || stdout.contains(";; ERROR") {
        return Err(format!(
            "AXFR of {zone} from {addr} failed ({}): {stdout}{stderr}",
            out.status
        ));
    }
    let mut lines: Vec<String> = stdout
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with(';'))
        .map(normalise_record)
        .collect();
    let soa = |l: &String| l.split(' ').nth(3) == Some("SOA");
    if lines.len() < 2 || !lines.first().is_some_and(soa) || lines.last() != lines.first() {
        return Err(format!(
            "AXFR of {zone} from {addr} is not framed by two equal SOAs:\n{stdout}{stderr}"
        ));
    }
    lines.pop();
    lines.sort();
    Ok(lines)
}

/// Types whose RDATA holds only names, numbers and addresses: their RDATA
/// is compared case-insensitively; any other RDATA (strings, base64) keeps
/// its case.
const CASELESS_RDATA: &[&str] = &[
    "A", "AAAA", "NS", "CNAME", "DNAME", "PTR", "MX", "SOA", "SRV", "KX", "AFSDB", "RT", "PX",
    "MINFO", "RP", "NSEC",
];

/// One record line of kdig or dig as `owner ttl class type rdata`, single
/// spaces between fields and between RDATA fields (quoted strings kept
/// as they are), owner, class and type upper/lower-cased the same way
/// whatever the server's spelling, RDATA lower-cased for [`CASELESS_RDATA`].
pub fn normalise_record(line: &str) -> String {
    // Split on whitespace outside double quotes (a backslash escapes).
    let mut fields: Vec<String> = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut escaped) = (false, false);
    for c in line.chars() {
        if escaped {
            cur.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => {
                cur.push(c);
                escaped = true;
            }
            '"' => {
                cur.push(c);
                quoted = !quoted;
            }
            c if c.is_whitespace() && !quoted => {
                if !cur.is_empty() {
                    fields.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        fields.push(cur);
    }
    if fields.len() < 4 {
        return fields.join(" ");
    }
    let owner = fields[0].to_ascii_lowercase();
    let ttl = fields[1].clone();
    let class = fields[2].to_ascii_uppercase();
    let rtype = fields[3].to_ascii_uppercase();
    let rdata = fields[4..].join(" ");
    let rdata = if CASELESS_RDATA.contains(&rtype.as_str()) {
        rdata.to_ascii_lowercase()
    } else {
        rdata
    };
    format!("{owner} {ttl} {class} {rtype} {rdata}")
}
