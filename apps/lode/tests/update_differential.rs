//! UPDATE differential suite: the same RFC 2136 updates sent to Knot DNS 3.2
//! and to Lode, each result compared, then the zones' contents compared
//! through queries.
//!
//! ```text
//! tests/update/zones/*.zone ─┬─▶ knotd (127.0.0.1:15440-15449, acl + TSIG key) ─┐
//!                            └─▶ lode serve --config (15450-15459) ─────────────┤
//! tests/update/scenario.txt ─▶ UPDATE / query messages ─▶ both ─▶ independent parser
//!                                     and TSIG check ─▶ compare ◀─ tests/update/accepted.txt
//! ```
//!
//! The messages are built here (RDATA text to wire through `lode_zonefile`,
//! which only prepares input identical for both servers); replies are read
//! by the independent parser of `common` and TSIG is signed and verified by
//! this file's own HMAC-SHA256 code, never Lode's. Nothing expects a given
//! rcode: Knot's reply is the expectation.
//!
//! Environment: `LODE_DIFF_PEER=knot` runs Knot against a second Knot (must
//! be clean); `LODE_UPD_VERBOSE=1` prints Knot's reply to every step;
//! `LODE_UPD_SCENARIO=FILE` runs another scenario file (the 200-message
//! minimum is then not enforced);
//! `LODE_REQUIRE_KNOT=1` turns a missing knotd into a failure.

mod common;

use common::*;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::net::{TcpListener, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The key that may update `upd.example.`.
const UPD_KEY: &str = "upd-key.";
const UPD_SECRET: &[u8] = b"update-key-secret-for-the-tests!";
/// A key both servers know but no ACL names.
const OTHER_KEY: &str = "other-key.";
const OTHER_SECRET: &[u8] = b"other-key-secret-for-the-tests!!";
/// A key neither server knows.
const UNKNOWN_KEY: &str = "no-such-key.";
const ALGORITHM: &str = "hmac-sha256.";
const FUDGE: u16 = 300;
/// The zones, each with its ACL: (origin, acl id, key required).
const ZONES: [(&str, &str, bool); 2] = [
    ("upd.example.", "update-signed", true),
    ("open.example.", "update-open", false),
];
const KNOT_PORTS: std::ops::Range<u16> = 15440..15450;
const PEER_PORTS: std::ops::Range<u16> = 15450..15460;

// ---------------------------------------------------------------------------
// Scenario

/// How an UPDATE is signed.
#[derive(Clone, Debug, PartialEq)]
enum Sign {
    /// No TSIG.
    Unsigned,
    /// Correctly signed with this key.
    Key(String),
    /// Signed with a key neither server knows.
    BadKey,
    /// Signed with `upd-key.`, then one MAC octet flipped.
    BadSig,
    /// Signed with `upd-key.` at a time an hour ago (fudge 300 s).
    BadTime,
}

/// One record of the prerequisite or update section.
#[derive(Clone, Debug)]
struct Rec {
    owner: String,
    rtype: u16,
    class: u16,
    ttl: u32,
    rdata: Vec<u8>,
}

/// An UPDATE message to build.
#[derive(Clone, Debug)]
struct Update {
    tcp: bool,
    sign: Sign,
    zone: String,
    zcount: u16,
    ztype: u16,
    zclass: u16,
    prereq: Vec<Rec>,
    update: Vec<Rec>,
}

#[derive(Debug)]
enum Action {
    Update(Update),
    Raw {
        tcp: bool,
        msg: Vec<u8>,
    },
    Query {
        name: String,
        qtype: u16,
        dnssec: bool,
        tcp: bool,
    },
    Check,
}

/// One step: an action with where it was written and its identity (for
/// reports and accepted.txt).
#[derive(Debug)]
struct Step {
    line: usize,
    ident: String,
    action: Action,
}

/// A name as written: `@` is the origin, names without a final dot are
/// relative to it.
fn absolute(name: &str, origin: &str) -> String {
    if name == "@" {
        origin.to_string()
    } else if name.ends_with('.') {
        name.to_string()
    } else if origin == "." {
        format!("{name}.")
    } else {
        format!("{name}.{origin}")
    }
}

/// Splits `n` words off `text`; the rest (trimmed) is returned as it is.
fn words_and_rest(text: &str, n: usize) -> Result<(Vec<&str>, &str), String> {
    let mut words = Vec::new();
    let mut rest = text.trim_start();
    for _ in 0..n {
        if rest.is_empty() {
            return Err(format!("want {n} words before the RDATA in `{text}`"));
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        words.push(&rest[..end]);
        rest = rest[end..].trim_start();
    }
    Ok((words, rest.trim_end()))
}

fn rtype(s: &str) -> Result<u16, String> {
    type_from_str(s).ok_or_else(|| format!("unknown type {s}"))
}

fn number<T: std::str::FromStr>(s: &str) -> Result<T, String> {
    s.parse().map_err(|_| format!("bad number {s}"))
}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err("odd number of hex digits".into());
    }
    digits
        .chunks(2)
        .map(|p| {
            std::str::from_utf8(p)
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad hex {}", String::from_utf8_lossy(p)))
        })
        .collect()
}

/// RDATA text to wire: `-` is empty, `hex:…` raw octets, otherwise the
/// presentation form of `rtype` (names relative to `origin`).
fn rdata(rtype: u16, text: &str, origin: &str) -> Result<Vec<u8>, String> {
    if text == "-" {
        return Ok(Vec::new());
    }
    if let Some(h) = text.strip_prefix("hex:") {
        return unhex(h);
    }
    let origin = lode_wire::Name::parse(origin, None).map_err(|e| format!("{origin}: {e:?}"))?;
    lode_zonefile::parse_rdata(lode_wire::Rtype(rtype), text, &origin)
        .map_err(|e| format!("RDATA `{text}`: {e}"))
}

/// Parses one record line of an update block into the section it goes to
/// (true: prerequisite) and the record.
fn parse_record(text: &str, origin: &str) -> Result<(bool, Rec), String> {
    let (head, rest) = words_and_rest(text, 1)?;
    let rec = |owner: &str, rtype: u16, class: u16, ttl: u32, rdata: Vec<u8>| Rec {
        owner: absolute(owner, origin),
        rtype,
        class,
        ttl,
        rdata,
    };
    match head[0] {
        "prereq" => {
            let (w, rest) = words_and_rest(rest, 2)?;
            let name = w[1];
            let r = match w[0] {
                "yxdomain" if rest.is_empty() => rec(name, 255, 255, 0, vec![]),
                "nxdomain" if rest.is_empty() => rec(name, 255, 254, 0, vec![]),
                "yxrrset" | "nxrrset" => {
                    let (t, rd) = words_and_rest(rest, 1)?;
                    let t = rtype(t[0])?;
                    match (w[0], rd.is_empty()) {
                        ("yxrrset", true) => rec(name, t, 255, 0, vec![]),
                        ("yxrrset", false) => rec(name, t, 1, 0, rdata(t, rd, origin)?),
                        ("nxrrset", true) => rec(name, t, 254, 0, vec![]),
                        _ => return Err("nxrrset takes no RDATA".into()),
                    }
                }
                other => return Err(format!("unknown prerequisite `{other}` or extra words")),
            };
            Ok((true, r))
        }
        "add" => {
            let (w, rd) = words_and_rest(rest, 3)?;
            let t = rtype(w[2])?;
            Ok((false, rec(w[0], t, 1, number(w[1])?, rdata(t, rd, origin)?)))
        }
        "del" => {
            let (w, rd) = words_and_rest(rest, 2)?;
            let t = rtype(w[1])?;
            Ok((false, rec(w[0], t, 254, 0, rdata(t, rd, origin)?)))
        }
        "delrrset" => {
            let (w, rd) = words_and_rest(rest, 2)?;
            if !rd.is_empty() {
                return Err("delrrset takes NAME TYPE".into());
            }
            Ok((false, rec(w[0], rtype(w[1])?, 255, 0, vec![])))
        }
        "delname" => {
            let (w, rd) = words_and_rest(rest, 1)?;
            if !rd.is_empty() {
                return Err("delname takes NAME".into());
            }
            Ok((false, rec(w[0], 255, 255, 0, vec![])))
        }
        "rr" => {
            let (w, rd) = words_and_rest(rest, 5)?;
            let prereq = match w[0] {
                "prereq" => true,
                "update" => false,
                s => return Err(format!("rr section must be prereq or update, not {s}")),
            };
            let class = class_from_str(w[3]).ok_or_else(|| format!("unknown class {}", w[3]))?;
            let t = rtype(w[4])?;
            let rd = if rd.is_empty() { "-" } else { rd };
            Ok((
                prereq,
                rec(w[1], t, class, number(w[2])?, rdata(t, rd, origin)?),
            ))
        }
        other => Err(format!("unknown record line `{other}`")),
    }
}

/// Parses the `update` line's options.
fn parse_update_head(words: &[&str], origin: &str) -> Result<(Update, Option<String>), String> {
    let mut u = Update {
        tcp: false,
        sign: Sign::Unsigned,
        zone: origin.to_string(),
        zcount: 1,
        ztype: 6,
        zclass: 1,
        prereq: Vec::new(),
        update: Vec::new(),
    };
    let mut tag = None;
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        match w {
            "udp" => u.tcp = false,
            "tcp" => u.tcp = true,
            "unsigned" => u.sign = Sign::Unsigned,
            "badkey" => u.sign = Sign::BadKey,
            "badsig" => u.sign = Sign::BadSig,
            "badtime" => u.sign = Sign::BadTime,
            "zone" => {
                i += 1;
                let z = words.get(i).ok_or("zone needs a name")?;
                u.zone = absolute(z, origin);
            }
            _ => {
                let (k, v) = w
                    .split_once('=')
                    .ok_or_else(|| format!("unknown word {w}"))?;
                match k {
                    "key" => u.sign = Sign::Key(v.to_string()),
                    "zcount" => u.zcount = number(v)?,
                    "ztype" => u.ztype = rtype(v)?,
                    "zclass" => u.zclass = class_from_str(v).ok_or("bad zclass")?,
                    "tag" => tag = Some(format!("@{v}")),
                    _ => return Err(format!("unknown option {w}")),
                }
            }
        }
        i += 1;
    }
    Ok((u, tag))
}

/// Removes a `#` comment (not inside double quotes).
fn strip_comment(line: &str) -> &str {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            '#' if !quoted => return &line[..i],
            _ => {}
        }
    }
    line
}

fn normalise(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn parse_scenario(text: &str) -> Result<Vec<Step>, Vec<String>> {
    let mut steps = Vec::new();
    let mut errors = Vec::new();
    let mut origin = "upd.example.".to_string();
    let mut defaults: Vec<String> = Vec::new();
    // The open update block: (its line, its tag, the update, its lines).
    let mut open: Option<(usize, Option<String>, Update, Vec<String>)> = None;
    let mut tags = BTreeSet::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = strip_comment(raw).trim();
        if line.is_empty() {
            continue;
        }
        let (first, rest) = match words_and_rest(line, 1) {
            Ok((w, r)) => (w[0], r),
            Err(e) => {
                errors.push(format!("scenario.txt:{n}: {e}"));
                continue;
            }
        };
        if let Some((start, tag, u, lines)) = open.as_mut() {
            let r = match first {
                "end" => {
                    let ident = tag.clone().unwrap_or_else(|| lines.join(" ; "));
                    let u = u.clone();
                    steps.push(Step {
                        line: *start,
                        ident,
                        action: Action::Update(u),
                    });
                    open = None;
                    continue;
                }
                "gen" => words_and_rest(rest, 1).and_then(|(w, body)| {
                    let count: usize = number(w[0])?;
                    for k in 0..count {
                        let (pre, rec) = parse_record(&body.replace('$', &k.to_string()), &u.zone)?;
                        if pre { &mut u.prereq } else { &mut u.update }.push(rec);
                    }
                    Ok(())
                }),
                _ => parse_record(line, &u.zone).map(|(pre, rec)| {
                    if pre { &mut u.prereq } else { &mut u.update }.push(rec);
                }),
            };
            match r {
                Ok(()) => lines.push(normalise(line)),
                Err(e) => errors.push(format!("scenario.txt:{n}: {e}")),
            }
            continue;
        }
        let words: Vec<&str> = rest.split_whitespace().collect();
        let r: Result<(), String> = match first {
            "origin" => match words.as_slice() {
                [o] => {
                    origin = absolute(o, ".");
                    Ok(())
                }
                _ => Err("origin takes one name".into()),
            },
            "defaults" => {
                defaults = words.iter().map(|w| w.to_string()).collect();
                Ok(())
            }
            "update" => {
                let all: Vec<&str> = defaults
                    .iter()
                    .map(String::as_str)
                    .chain(words.iter().copied())
                    .collect();
                parse_update_head(&all, &origin)
            }
            .and_then(|(u, tag)| {
                if let Some(t) = &tag {
                    if !tags.insert(t.clone()) {
                        return Err(format!("tag {t} used twice"));
                    }
                }
                open = Some((n, tag, u, vec![normalise(line)]));
                Ok(())
            }),
            "raw" => match words.split_first() {
                Some((&t @ ("udp" | "tcp"), hex)) => unhex(&hex.concat()).map(|msg| {
                    steps.push(Step {
                        line: n,
                        ident: normalise(line),
                        action: Action::Raw {
                            tcp: t == "tcp",
                            msg,
                        },
                    })
                }),
                _ => Err("raw takes udp|tcp HEX".into()),
            },
            "query" => match words.as_slice() {
                [name, t, opts @ ..] => rtype(t).and_then(|qtype| {
                    let mut dnssec = false;
                    let mut tcp = false;
                    for o in opts {
                        match *o {
                            "dnssec" => dnssec = true,
                            "tcp" => tcp = true,
                            "udp" => tcp = false,
                            _ => return Err(format!("unknown query option {o}")),
                        }
                    }
                    steps.push(Step {
                        line: n,
                        ident: normalise(line),
                        action: Action::Query {
                            name: absolute(name, &origin),
                            qtype,
                            dnssec,
                            tcp,
                        },
                    });
                    Ok(())
                }),
                _ => Err("query takes NAME TYPE [dnssec] [tcp]".into()),
            },
            "check" => {
                steps.push(Step {
                    line: n,
                    ident: format!("check (line {n})"),
                    action: Action::Check,
                });
                Ok(())
            }
            other => Err(format!("unknown line `{other}`")),
        };
        if let Err(e) = r {
            errors.push(format!("scenario.txt:{n}: {e}"));
        }
    }
    if let Some((start, ..)) = open {
        errors.push(format!("scenario.txt:{start}: update block without `end`"));
    }
    if errors.is_empty() {
        Ok(steps)
    } else {
        Err(errors)
    }
}

// ---------------------------------------------------------------------------
// Messages and TSIG (RFC 2136, RFC 8945)

fn wire(name: &str) -> Vec<u8> {
    name_to_wire(name).unwrap_or_else(|e| panic!("bad name {name}: {e}"))
}

/// A name in the canonical form TSIG digests use (uncompressed, lower case;
/// length octets are at most 63, below b'A', so they are left alone).
fn canonical(name: &str) -> Vec<u8> {
    wire(name).to_ascii_lowercase()
}

fn put_record(m: &mut Vec<u8>, r: &Rec) {
    m.extend_from_slice(&wire(&r.owner));
    m.extend_from_slice(&r.rtype.to_be_bytes());
    m.extend_from_slice(&r.class.to_be_bytes());
    m.extend_from_slice(&r.ttl.to_be_bytes());
    m.extend_from_slice(&(r.rdata.len() as u16).to_be_bytes());
    m.extend_from_slice(&r.rdata);
}

fn build_update(u: &Update, id: u16) -> Vec<u8> {
    let mut m = Vec::with_capacity(512);
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&(5u16 << 11).to_be_bytes());
    for c in [u.zcount, u.prereq.len() as u16, u.update.len() as u16, 0] {
        m.extend_from_slice(&c.to_be_bytes());
    }
    for _ in 0..u.zcount {
        m.extend_from_slice(&wire(&u.zone));
        m.extend_from_slice(&u.ztype.to_be_bytes());
        m.extend_from_slice(&u.zclass.to_be_bytes());
    }
    for r in u.prereq.iter().chain(&u.update) {
        put_record(&mut m, r);
    }
    m
}

fn hmac_sha256(secret: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key");
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().to_vec()
}

fn secret_of(key: &str) -> Option<&'static [u8]> {
    match key.to_ascii_lowercase().as_str() {
        UPD_KEY => Some(UPD_SECRET),
        OTHER_KEY => Some(OTHER_SECRET),
        _ => None,
    }
}

/// The TSIG variables of RFC 8945 section 4.3.3.
fn tsig_variables(t: &Tsig) -> Vec<u8> {
    let mut v = canonical(&t.name);
    v.extend_from_slice(&t.class.to_be_bytes());
    v.extend_from_slice(&t.ttl.to_be_bytes());
    v.extend_from_slice(&canonical(&t.algorithm));
    v.extend_from_slice(&t.time.to_be_bytes()[2..]);
    v.extend_from_slice(&t.fudge.to_be_bytes());
    v.extend_from_slice(&t.error.to_be_bytes());
    v.extend_from_slice(&(t.other.len() as u16).to_be_bytes());
    v.extend_from_slice(&t.other);
    v
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Signs `msg` (appends the TSIG record) and returns what was sent.
fn sign(msg: &mut Vec<u8>, how: &Sign) -> Sent {
    let id = u16::from_be_bytes([msg[0], msg[1]]);
    let (key, time) = match how {
        Sign::Unsigned => {
            return Sent {
                id,
                mac: Vec::new(),
                time: None,
            }
        }
        Sign::Key(k) => (k.as_str(), now()),
        Sign::BadKey => (UNKNOWN_KEY, now()),
        Sign::BadSig => (UPD_KEY, now()),
        Sign::BadTime => (UPD_KEY, now() - 3600),
    };
    let mut t = Tsig {
        name: key.to_string(),
        class: 255,
        ttl: 0,
        algorithm: ALGORITHM.to_string(),
        time,
        fudge: FUDGE,
        mac: Vec::new(),
        orig_id: id,
        error: 0,
        other: Vec::new(),
    };
    t.mac = hmac_sha256(
        secret_of(key).unwrap_or(UPD_SECRET),
        &[msg, &tsig_variables(&t)],
    );
    if *how == Sign::BadSig {
        t.mac[7] ^= 0x5a;
    }
    let mut rd = wire(ALGORITHM);
    rd.extend_from_slice(&time.to_be_bytes()[2..]);
    rd.extend_from_slice(&FUDGE.to_be_bytes());
    rd.extend_from_slice(&(t.mac.len() as u16).to_be_bytes());
    rd.extend_from_slice(&t.mac);
    rd.extend_from_slice(&t.orig_id.to_be_bytes());
    rd.extend_from_slice(&[0, 0, 0, 0]);
    put_record(
        msg,
        &Rec {
            owner: key.to_string(),
            rtype: 250,
            class: 255,
            ttl: 0,
            rdata: rd,
        },
    );
    let ar = u16::from_be_bytes([msg[10], msg[11]]) + 1;
    msg[10..12].copy_from_slice(&ar.to_be_bytes());
    Sent {
        id,
        mac: t.mac,
        time: Some(time),
    }
}

/// A TSIG record as read from a reply.
#[derive(Debug)]
struct Tsig {
    name: String,
    class: u16,
    ttl: u32,
    algorithm: String,
    time: u64,
    fudge: u16,
    mac: Vec<u8>,
    orig_id: u16,
    error: u16,
    other: Vec<u8>,
}

/// When the last record of `msg` is a TSIG: the message without it (ARCOUNT
/// decremented) and the record.
fn split_tsig(msg: &[u8]) -> Result<Option<(Vec<u8>, Tsig)>, String> {
    let u16at = |i: usize| -> Result<u16, String> {
        msg.get(i..i + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "truncated".to_string())
    };
    let mut counts = [0u16; 4];
    for (k, c) in counts.iter_mut().enumerate() {
        *c = u16at(4 + 2 * k)?;
    }
    if counts[3] == 0 {
        return Ok(None);
    }
    let mut pos = 12;
    for _ in 0..counts[0] {
        pos = read_name(msg, pos)?.1 + 4;
    }
    let records = usize::from(counts[1]) + usize::from(counts[2]) + usize::from(counts[3]);
    let mut last = (0, String::new(), 0, 0);
    for _ in 0..records {
        let (owner, next) = read_name(msg, pos)?;
        let rdlen = usize::from(u16at(next + 8)?);
        last = (pos, owner, next, rdlen);
        pos = next + 10 + rdlen;
    }
    let (start, owner, next, rdlen) = last;
    if u16at(next)? != 250 {
        return Ok(None);
    }
    let end = next + 10 + rdlen;
    if end > msg.len() {
        return Err("TSIG RDATA beyond the message".into());
    }
    let rd = next + 10;
    let (algorithm, p) = read_name(&msg[..end], rd)?;
    let get = |from: usize, n: usize| -> Result<&[u8], String> {
        msg.get(from..from + n)
            .filter(|_| from + n <= end)
            .ok_or_else(|| "TSIG RDATA too short".to_string())
    };
    let time = get(p, 6)?
        .iter()
        .fold(0u64, |a, &b| (a << 8) | u64::from(b));
    let fudge = u16at(p + 6)?;
    let maclen = usize::from(u16at(p + 8)?);
    let mac = get(p + 10, maclen)?.to_vec();
    let q = p + 10 + maclen;
    let orig_id = u16at(q)?;
    let error = u16at(q + 2)?;
    let otherlen = usize::from(u16at(q + 4)?);
    let other = get(q + 6, otherlen)?.to_vec();
    if q + 6 + otherlen != end {
        return Err("TSIG RDATA has extra octets".into());
    }
    let ttl = u32::from_be_bytes([msg[next + 4], msg[next + 5], msg[next + 6], msg[next + 7]]);
    let mut stripped = msg[..start].to_vec();
    stripped[10..12].copy_from_slice(&(counts[3] - 1).to_be_bytes());
    stripped[2..4].copy_from_slice(&msg[2..4]);
    Ok(Some((
        stripped,
        Tsig {
            name: owner,
            class: u16at(next + 2)?,
            ttl,
            algorithm,
            time,
            fudge,
            mac,
            orig_id,
            error,
            other,
        },
    )))
}

/// What a request sent looked like (to judge the reply's TSIG).
struct Sent {
    id: u16,
    mac: Vec<u8>,
    time: Option<u64>,
}

/// The reply's TSIG described in terms that do not depend on the server's
/// clock: key, algorithm, error, whether the MAC verifies (with the request
/// MAC, RFC 8945 section 4.3.1), original ID, time relative to the request.
fn tsig_aspect(stripped: &[u8], t: &Tsig, sent: &Sent) -> String {
    let mac = if t.mac.is_empty() {
        "empty".to_string()
    } else {
        match secret_of(&t.name) {
            None => "from an unknown key".to_string(),
            Some(secret) => {
                let mut body = stripped.to_vec();
                body[0..2].copy_from_slice(&t.orig_id.to_be_bytes());
                let prefix = if sent.mac.is_empty() {
                    Vec::new()
                } else {
                    let mut p = (sent.mac.len() as u16).to_be_bytes().to_vec();
                    p.extend_from_slice(&sent.mac);
                    p
                };
                let want = hmac_sha256(secret, &[&prefix, &body, &tsig_variables(t)]);
                if want == t.mac {
                    "valid".to_string()
                } else {
                    format!("INVALID ({} octets)", t.mac.len())
                }
            }
        }
    };
    // Servers sign with their own clock: only "within the fudge of now" is
    // comparable, or else an echo of the request's (distant) time.
    let time = if t.time.abs_diff(now()) <= u64::from(FUDGE) {
        "now"
    } else if Some(t.time) == sent.time {
        "request's"
    } else {
        "other"
    };
    format!(
        "key={} class={} ttl={} algorithm={} fudge={} error={} mac={mac} orig-id={} time={time} other-len={}",
        t.name.to_ascii_lowercase(),
        class_to_string(t.class),
        t.ttl,
        t.algorithm.to_ascii_lowercase(),
        t.fudge,
        tsig_error(t.error),
        if t.orig_id == sent.id { "request's" } else { "OTHER" },
        t.other.len()
    )
}

fn tsig_error(e: u16) -> String {
    match e {
        16 => "BADSIG".into(),
        17 => "BADKEY".into(),
        18 => "BADTIME".into(),
        22 => "BADTRUNC".into(),
        _ => rcode_to_string(e),
    }
}

// ---------------------------------------------------------------------------
// Comparison

/// A reply reduced to comparable aspects, and its text for reports.
struct Judged {
    aspects: Vec<(&'static str, String)>,
    text: String,
}

fn judge_query(reply: &Option<Vec<u8>>) -> Option<Judged> {
    let r = reply.as_ref()?;
    let m = Message::parse(r);
    Some(Judged {
        aspects: m.aspects(),
        text: m.to_text(),
    })
}

fn judge_update(reply: &Option<Vec<u8>>, sent: &Sent) -> Option<Judged> {
    let r = reply.as_ref()?;
    let (m, tsig) = match split_tsig(r) {
        Ok(Some((stripped, t))) => (Message::parse(&stripped), tsig_aspect(&stripped, &t, sent)),
        Ok(None) => (Message::parse(r), "none".to_string()),
        Err(e) => (Message::parse(r), format!("unreadable: {e}")),
    };
    let mut aspects = m.aspects();
    aspects.push(("tsig", tsig.clone()));
    let echoed = if m.id == sent.id { "echoed" } else { "OTHER" };
    aspects.push(("id", echoed.to_string()));
    Some(Judged {
        text: format!("{};; TSIG: {tsig}\n;; ID: {echoed}\n", m.to_text()),
        aspects,
    })
}

/// The aspects that differ ("response" when one server gave none).
fn differing(a: &Option<Judged>, b: &Option<Judged>) -> Vec<&'static str> {
    match (a, b) {
        (None, None) => vec![],
        (Some(_), None) | (None, Some(_)) => vec!["response"],
        (Some(a), Some(b)) => a
            .aspects
            .iter()
            .zip(&b.aspects)
            .filter(|(x, y)| x.1 != y.1)
            .map(|(x, _)| x.0)
            .collect(),
    }
}

/// For each differing aspect, the lines only Knot gave (`-`) and only the
/// other server gave (`+`).
fn line_diff(a: &Option<Judged>, b: &Option<Judged>, aspects: &[&str]) -> String {
    let (Some(a), Some(b)) = (a, b) else {
        return String::new();
    };
    let mut out = String::new();
    for ((name, ta), (_, tb)) in a.aspects.iter().zip(&b.aspects) {
        if !aspects.contains(name) {
            continue;
        }
        let mut only_b: Vec<&str> = tb.lines().collect();
        let mut only_a = Vec::new();
        for l in ta.lines() {
            match only_b.iter().position(|x| *x == l) {
                Some(i) => {
                    only_b.remove(i);
                }
                None => only_a.push(l),
            }
        }
        let _ = writeln!(out, "  {name}:");
        for l in only_a {
            let _ = writeln!(out, "  - {l}");
        }
        for l in only_b {
            let _ = writeln!(out, "  + {l}");
        }
    }
    out
}

fn show(label: &str, j: &Option<Judged>) -> String {
    match j {
        None => format!("--- {label}: no response\n"),
        Some(j) => format!("--- {label}:\n{}", j.text),
    }
}

fn rcode_of(j: &Option<Judged>) -> String {
    j.as_ref()
        .and_then(|j| j.aspects.iter().find(|a| a.0 == "rcode"))
        .map_or("no response".to_string(), |a| a.1.clone())
}

/// One accepted difference: a step identity, the aspects allowed to differ, why.
struct Accepted {
    ident: String,
    aspects: Vec<String>,
    line: usize,
}

fn load_accepted() -> Vec<Accepted> {
    let path = repo_root().join("tests/update/accepted.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let mut v = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parts: Vec<&str> = line.rsplitn(3, '|').map(str::trim).collect();
        assert!(
            parts.len() == 3 && !parts[0].is_empty(),
            "accepted.txt:{}: want `STEP | ASPECTS | REASON`",
            i + 1
        );
        v.push(Accepted {
            ident: normalise(parts[2]),
            aspects: parts[1].split(',').map(|s| s.trim().to_string()).collect(),
            line: i + 1,
        });
    }
    v
}

// ---------------------------------------------------------------------------
// Servers

fn b64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for k in 0..4 {
            if k <= c.len() {
                s.push(A[(n >> (18 - 6 * k)) as usize & 63] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// A free port in `range` (both UDP and TCP on 127.0.0.1).
fn free_port(range: std::ops::Range<u16>) -> u16 {
    let n = range.len();
    let start = std::process::id() as usize;
    for i in 0..n {
        let p = range.start + ((start + i) % n) as u16;
        if UdpSocket::bind(("127.0.0.1", p)).is_ok() && TcpListener::bind(("127.0.0.1", p)).is_ok()
        {
            return p;
        }
    }
    panic!("no free port in {range:?}");
}

fn knot_update_config(dir: &Path, port: u16, zones: &[ZoneSpec]) -> String {
    let d = dir.display();
    let mut c = format!(
        "server:\n    rundir: \"{d}\"\n    listen: 127.0.0.1@{port}\n    identity: \"\"\n    version: \"\"\n    nsid: \"\"\n    udp-max-payload: 1232\n    udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n    tcp-idle-timeout: 10\n    answer-rotation: off\n\
         database:\n    storage: \"{d}\"\n    journal-db: \"{d}/journal\"\n    journal-db-max-size: 64M\n\
         control:\n    listen: \"{d}/knot.sock\"\n\
         log:\n  - target: stderr\n    any: info\n\
         key:\n  - id: {UPD_KEY}\n    algorithm: hmac-sha256\n    secret: {}\n  - id: {OTHER_KEY}\n    algorithm: hmac-sha256\n    secret: {}\n\
         acl:\n  - id: update-signed\n    address: 127.0.0.1\n    key: {UPD_KEY}\n    action: update\n  - id: update-open\n    address: 127.0.0.1\n    action: update\n\
         template:\n  - id: default\n    storage: \"{d}\"\n    semantic-checks: on\n    zonefile-load: whole\n    journal-content: changes\n    dnssec-signing: off\n    zonefile-sync: -1\n    serial-policy: increment\n\
         zone:\n",
        b64(UPD_SECRET),
        b64(OTHER_SECRET)
    );
    for z in zones {
        let acl = ZONES.iter().find(|x| x.0 == z.origin).map_or("", |x| x.1);
        let _ = writeln!(
            c,
            "  - domain: \"{}\"\n    file: \"{}\"\n    acl: {acl}",
            z.origin,
            z.file.display()
        );
    }
    c
}

fn lode_update_config(dir: &Path, port: u16, zones: &[ZoneSpec]) -> String {
    let d = dir.display();
    let mut c = format!(
        "listen = [\"127.0.0.1:{port}\"]\njournal-dir = \"{d}/journal\"\ncontrol = \"{d}/lode.sock\"\n\
         # as Knot's zonefile-sync: -1 above; the zone files are the repository's\n\
         zonefile-sync = -1\n\n"
    );
    for (id, secret) in [(UPD_KEY, UPD_SECRET), (OTHER_KEY, OTHER_SECRET)] {
        let _ = writeln!(
            c,
            "[[key]]\nid = \"{id}\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{}\"\n",
            b64(secret)
        );
    }
    for (_, acl, keyed) in ZONES {
        let key = if keyed {
            format!("key = [\"{UPD_KEY}\"]\n")
        } else {
            String::new()
        };
        let _ = writeln!(
            c,
            "[[acl]]\nid = \"{acl}\"\naddress = [\"127.0.0.1\"]\n{key}action = [\"update\"]\n"
        );
    }
    for z in zones {
        let acl = ZONES.iter().find(|x| x.0 == z.origin).map_or("", |x| x.1);
        let _ = writeln!(
            c,
            "[[zone]]\nname = \"{}\"\nfile = \"{}\"\nacl = [\"{acl}\"]\n",
            z.origin,
            z.file.display()
        );
    }
    c
}

/// A server with its scratch directory (config, journal, log).
struct Running {
    server: Server,
    _dir: TempDir,
}

fn start(peer: Peer, zones: &[ZoneSpec], ports: std::ops::Range<u16>) -> Result<Running, String> {
    let port = free_port(ports);
    let dir = TempDir::new(match peer {
        Peer::Knot => "upd-knot",
        Peer::Lode => "upd-lode",
    });
    let (mut spec, config) = match peer {
        Peer::Knot => (
            server_spec(lode_peers::Kind::Knot, port),
            knot_update_config(&dir.0, port, zones),
        ),
        Peer::Lode => {
            let mut s = server_spec(lode_peers::Kind::Lode, port);
            s.workers = Some(2);
            (s, lode_update_config(&dir.0, port, zones))
        }
    };
    spec.config = Some(config);
    spec.dir = Some(dir.0.clone());
    // Ready when every zone's SOA is answered with NOERROR, AA and an answer.
    spec.zones = zones
        .iter()
        .map(|z| lode_peers::Zone::primary(&z.origin, lode_peers::Content::Storage))
        .collect();
    let server = Server::start(spec)?;
    Ok(Running { server, _dir: dir })
}

fn exchange(
    addr: std::net::SocketAddr,
    msg: &[u8],
    tcp: bool,
    timeout: Duration,
) -> Option<Vec<u8>> {
    if tcp {
        tcp_exchange(addr, msg, timeout)
    } else {
        udp_exchange(addr, msg, timeout)
    }
}

// ---------------------------------------------------------------------------
// The run

/// The (name, type) pairs touched so far; type 255 means "every type seen".
#[derive(Default)]
struct Touched {
    pairs: BTreeMap<String, BTreeSet<u16>>,
    types: BTreeSet<u16>,
}

impl Touched {
    fn note(&mut self, name: &str, t: u16) {
        let t = if (128..=255).contains(&t) || t == 41 || t == 250 {
            255
        } else {
            t
        };
        if t != 255 {
            self.types.insert(t);
        }
        self.pairs
            .entry(name.to_ascii_lowercase())
            .or_default()
            .insert(t);
    }

    /// Every query the check asks: each touched type at each name, plus A
    /// (existence) and, for names touched by type ANY, every type seen.
    fn queries(&self) -> Vec<(String, u16)> {
        let mut v = Vec::new();
        for (name, ts) in &self.pairs {
            let mut want: BTreeSet<u16> = ts.iter().copied().filter(|&t| t != 255).collect();
            want.insert(1);
            if ts.contains(&255) {
                want.extend(&self.types);
            }
            for t in want {
                v.push((name.clone(), t));
            }
        }
        v
    }
}

/// The two servers' labels and addresses.
struct Pair {
    label: String,
    addr: std::net::SocketAddr,
}

struct Run<'a> {
    knot: Pair,
    other: Pair,
    accepted: &'a [Accepted],
    used: BTreeSet<usize>,
    verbose: bool,
    compared: usize,
    identical: usize,
    expected: usize,
    failures: usize,
    kinds: BTreeMap<String, usize>,
}

impl Run<'_> {
    /// Compares two judged replies of step `no`; reports and counts.
    fn compare(
        &mut self,
        no: usize,
        step: &Step,
        what: &str,
        a: Option<Judged>,
        b: Option<Judged>,
    ) {
        self.compared += 1;
        if self.verbose {
            eprintln!(
                "\n=== step {no} (scenario.txt:{}) {what} `{}`\n{}",
                step.line,
                step.ident,
                show(&self.knot.label, &a)
            );
        }
        let diff = differing(&a, &b);
        if diff.is_empty() {
            self.identical += 1;
            return;
        }
        let ident = if what.starts_with("query") && !matches!(step.action, Action::Query { .. }) {
            normalise(what)
        } else {
            step.ident.clone()
        };
        let acc: Vec<&Accepted> = self.accepted.iter().filter(|x| x.ident == ident).collect();
        if diff.iter().all(|d| {
            acc.iter()
                .any(|x| x.aspects.iter().any(|s| s == d || s == "*"))
        }) {
            self.expected += 1;
            self.used.extend(acc.iter().map(|x| x.line));
            return;
        }
        self.failures += 1;
        for d in &diff {
            *self.kinds.entry(d.to_string()).or_default() += 1;
        }
        eprintln!(
            "\n=== MISMATCH step {no} (scenario.txt:{}) {what}\n    `{}`\n    rcode: {} {} / {} {}; differs in: {}\n{}{}{}",
            step.line,
            step.ident,
            self.knot.label,
            rcode_of(&a),
            self.other.label,
            rcode_of(&b),
            diff.join(", "),
            line_diff(&a, &b, &diff),
            show(&self.knot.label, &a),
            show(&self.other.label, &b)
        );
    }

    fn query(&mut self, no: usize, step: &Step, name: &str, qtype: u16, dnssec: bool, tcp: bool) {
        let mut q = Query::new(name, qtype, 1);
        q.id = (no as u16).wrapping_mul(7919) ^ qtype;
        if dnssec {
            q.edns = Some(Edns {
                size: 1232,
                flags: 0x8000,
                ..Edns::default()
            });
        }
        let w = q.to_wire();
        let t = Duration::from_millis(1500);
        let a = exchange(self.knot.addr, &w, tcp, t);
        let b = exchange(self.other.addr, &w, tcp, t);
        let what = format!(
            "query {name} {}{}{}",
            type_to_string(qtype),
            if dnssec { " dnssec" } else { "" },
            if tcp { " tcp" } else { "" }
        );
        self.compare(no, step, &what, judge_query(&a), judge_query(&b));
    }
}

#[test]
fn knot_and_lode_apply_updates_alike() {
    if !knot_available() {
        return;
    }
    let peer = peer_from_env();
    let dir = repo_root().join("tests/update");
    let zones = zones_in(&dir.join("zones"));
    let path = std::env::var_os("LODE_UPD_SCENARIO")
        .map_or_else(|| dir.join("scenario.txt"), std::path::PathBuf::from);
    let scenario =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let steps = parse_scenario(&scenario).unwrap_or_else(|e| panic!("{}", e.join("\n")));
    let updates = steps
        .iter()
        .filter(|s| matches!(s.action, Action::Update(_) | Action::Raw { .. }))
        .count();
    let accepted = load_accepted();
    let mut knot = start(Peer::Knot, &zones, KNOT_PORTS).unwrap_or_else(|e| panic!("{e}"));
    let mut other = start(peer, &zones, PEER_PORTS).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "update differential: {} steps ({updates} UPDATE messages), {} against {}",
        steps.len(),
        knot.server.label,
        other.server.label
    );
    let started = Instant::now();
    let mut run = Run {
        knot: Pair {
            label: knot.server.label.clone(),
            addr: knot.server.addr,
        },
        other: Pair {
            label: other.server.label.clone(),
            addr: other.server.addr,
        },
        accepted: &accepted,
        used: BTreeSet::new(),
        verbose: std::env::var_os("LODE_UPD_VERBOSE").is_some(),
        compared: 0,
        identical: 0,
        expected: 0,
        failures: 0,
        kinds: BTreeMap::new(),
    };
    let mut touched = Touched::default();
    for (i, step) in steps.iter().enumerate() {
        let no = i + 1;
        match &step.action {
            Action::Update(u) => {
                let id = (no as u16).wrapping_mul(40503);
                let mut msg = build_update(u, id);
                let sent = sign(&mut msg, &u.sign);
                // Knot applies even the 1,000-record update in well under a
                // second; a message it drops costs this twice.
                let t = Duration::from_millis(if u.tcp { 3000 } else { 1500 });
                let a = exchange(run.knot.addr, &msg, u.tcp, t);
                let b = exchange(run.other.addr, &msg, u.tcp, t);
                let what = format!("update ({} octets)", msg.len());
                run.compare(
                    no,
                    step,
                    &what,
                    judge_update(&a, &sent),
                    judge_update(&b, &sent),
                );
                // Then the zone's SOA and each (name, type) the message named
                // (at most 8: the bulk updates are left to the final check).
                let mut asked = BTreeSet::new();
                if ZONES.iter().any(|z| z.0.eq_ignore_ascii_case(&u.zone)) {
                    asked.insert((u.zone.to_ascii_lowercase(), 6));
                }
                for r in u.prereq.iter().chain(&u.update) {
                    touched.note(&r.owner, r.rtype);
                    let t = if r.rtype >= 128 || r.rtype == 41 {
                        1
                    } else {
                        r.rtype
                    };
                    if asked.len() < 8 {
                        asked.insert((r.owner.to_ascii_lowercase(), t));
                    }
                }
                for (name, t) in asked {
                    run.query(no, step, &name, t, false, false);
                }
            }
            Action::Raw { tcp, msg } => {
                let t = Duration::from_millis(1500);
                let a = exchange(run.knot.addr, msg, *tcp, t);
                let b = exchange(run.other.addr, msg, *tcp, t);
                let sent = Sent {
                    id: msg.get(..2).map_or(0, |b| u16::from_be_bytes([b[0], b[1]])),
                    mac: Vec::new(),
                    time: None,
                };
                run.compare(
                    no,
                    step,
                    "raw",
                    judge_update(&a, &sent),
                    judge_update(&b, &sent),
                );
            }
            Action::Query {
                name,
                qtype,
                dnssec,
                tcp,
            } => run.query(no, step, name, *qtype, *dnssec, *tcp),
            Action::Check => {
                for (name, t) in touched.queries() {
                    run.query(no, step, &name, t, false, false);
                }
            }
        }
        // A server that died makes every later step a timeout: stop here.
        for s in [&mut knot.server, &mut other.server] {
            assert!(
                s.alive(),
                "{} died at step {no} (scenario.txt:{}) `{}`:\n{}",
                s.label,
                step.line,
                step.ident,
                s.log_tail(10)
            );
        }
    }
    // The end state: every zone's SOA (serial), then every touched (name, type).
    let final_step = Step {
        line: 0,
        ident: "final check".into(),
        action: Action::Check,
    };
    let no = steps.len() + 1;
    for (z, ..) in ZONES {
        run.query(no, &final_step, z, 6, false, false);
        run.query(no, &final_step, z, 2, false, true);
    }
    for (name, t) in touched.queries() {
        run.query(no, &final_step, &name, t, false, false);
    }
    for a in &accepted {
        if !run.used.contains(&a.line) {
            eprintln!(
                "note: accepted.txt:{} no longer differs (`{}`): remove it",
                a.line, a.ident
            );
        }
    }
    let (failures, compared, identical, expected) =
        (run.failures, run.compared, run.identical, run.expected);
    eprintln!(
        "\nupdate differential summary: {compared} replies compared in {:.1} s: {identical} identical, {expected} accepted differences, {failures} mismatches; by aspect: {:?}",
        started.elapsed().as_secs_f64(),
        run.kinds
    );
    assert!(
        other.server.alive(),
        "{} died during the run:\n{}",
        other.server.label,
        other.server.log_tail(30)
    );
    assert!(
        updates >= 200 || std::env::var_os("LODE_UPD_SCENARIO").is_some(),
        "the scenario should hold at least 200 UPDATE messages ({updates})"
    );
    assert_eq!(
        failures, 0,
        "{failures} replies differ from Knot's (see above)"
    );
}

/// The harness's own pieces, checked without servers: the TSIG signer
/// against RFC 4231 test case 2 and a round trip through `split_tsig`, the
/// base64 encoder, and the scenario reader.
#[test]
fn harness_pieces_work() {
    // RFC 4231 section 4.3.
    let mac = hmac_sha256(b"Jefe", &[b"what do ya want ", b"for nothing?"]);
    assert_eq!(
        hex(&mac),
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
    assert_eq!(
        b64(UPD_SECRET),
        "dXBkYXRlLWtleS1zZWNyZXQtZm9yLXRoZS10ZXN0cyE="
    );
    assert_eq!(b64(b"ab"), "YWI=");
    assert_eq!(b64(b"a"), "YQ==");

    let steps = parse_scenario(
        "update tcp key=upd-key. zone upd.example. tag=t1\n  prereq yxrrset www A 192.0.2.80 # c\n  add new 300 TXT \"a # b\"\n  delname @\nend\nquery new TXT dnssec\n",
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(steps.len(), 2);
    let Action::Update(u) = &steps[0].action else {
        panic!("not an update")
    };
    assert_eq!(steps[0].ident, "@t1");
    assert!(u.tcp && u.sign == Sign::Key(UPD_KEY.into()));
    assert_eq!(u.prereq[0].owner, "www.upd.example.");
    assert_eq!(
        (u.prereq[0].class, u.prereq[0].rdata.clone()),
        (1, vec![192, 0, 2, 80])
    );
    assert_eq!(u.update[0].rdata, b"\x05a # b".to_vec());
    assert_eq!(
        (u.update[1].owner.as_str(), u.update[1].class),
        ("upd.example.", 255)
    );

    // A message signed here verifies as a "reply" to an unsigned request.
    let mut msg = build_update(u, 77);
    let signed = sign(&mut msg, &u.sign);
    let (stripped, t) = split_tsig(&msg).expect("readable").expect("has TSIG");
    assert_eq!(t.mac, signed.mac);
    assert_eq!(Some(t.time), signed.time);
    assert_eq!(stripped, build_update(u, 77));
    // As a reply to an unsigned request.
    let sent = Sent {
        mac: Vec::new(),
        ..signed
    };
    let aspect = tsig_aspect(&stripped, &t, &sent);
    assert!(
        aspect.contains("mac=valid") && aspect.contains("time=now"),
        "{aspect}"
    );
    let mut bad = msg.clone();
    let last = bad.len() - 10;
    bad[last] ^= 1; // inside the MAC
    let (s2, t2) = split_tsig(&bad).expect("readable").expect("has TSIG");
    assert!(tsig_aspect(&s2, &t2, &sent).contains("INVALID"));
}
