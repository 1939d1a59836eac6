//! Reading `lode update` input into UPDATE messages, each remembering the
//! input lines it came from (pure: text in, messages out, no I/O).
//!
//! ```text
//!  nsupdate batch ──▶ one message per `send` (or blank line); lines = the commands'
//!  zone fragment  ─┐
//!  ENUM CSV       ─┴▶ units (one RR each, with its line) ──skip──▶ batches of N RRs
//! ```
//!
//! Resuming (`--resume-after LINE`, `--skip N`) drops whole units: RRs for
//! the bulk formats, messages for nsupdate batches (whose directives before
//! the cut still apply).

use std::fmt;

use lode_wire::e164::E164;
use lode_wire::{Class, Name, Record, Rtype};

/// Largest UPDATE we build: the TCP limit less room for a TSIG record.
pub const MAX_MESSAGE: usize = 65_535 - 512;

/// The input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// nsupdate batch commands (`zone`, `update add|delete`, `prereq`, `send`, …).
    Nsupdate,
    /// Zone-file records, all added (`--add`) or all deleted (`--delete`).
    Zone,
    /// ENUM CSV: `+E.164 number, URI[, order, preference, service]` → NAPTR.
    EnumCsv,
}

/// A problem with the input, naming its line (0: the input as a whole).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InputError {
    /// The input line (1-based).
    pub line: u64,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for InputError {}

fn err<T>(line: u64, message: impl Into<String>) -> Result<T, InputError> {
    Err(InputError {
        line,
        message: message.into(),
    })
}

/// One UPDATE message to send, and where in the input it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The zone section.
    pub zone: Name,
    /// The prerequisite section.
    pub prereqs: Vec<Record>,
    /// The update section.
    pub updates: Vec<Record>,
    /// The first input line of the message.
    pub first_line: u64,
    /// The last input line of the message (its `send`, or its last RR).
    pub last_line: u64,
    /// Units (`--skip` counts these): RRs for bulk input, 1 for an nsupdate message.
    pub units: u64,
}

impl Message {
    /// The message without TSIG, ID `id`.
    pub fn encode(&self, id: u16) -> Vec<u8> {
        lode_zones::encode_update(id, &self.zone, &self.prereqs, &self.updates)
    }
}

/// What the input says besides its messages (nsupdate `server` and `key`).
#[derive(Debug, Default)]
pub struct Plan {
    /// The messages still to send, in order.
    pub messages: Vec<Message>,
    /// The `server` directive (host, port), if any.
    pub server: Option<(String, u16, u64)>,
    /// The `key` directive, if any, with its line.
    pub key: Option<(lode_tsig::Key, u64)>,
    /// Units dropped by `--resume-after` or `--skip`.
    pub skipped_units: u64,
    /// The line after which the run resumes (0: from the start).
    pub resumed_after: u64,
}

/// Where to start again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Resume {
    /// From the start.
    #[default]
    Start,
    /// After this input line.
    AfterLine(u64),
    /// After this many units.
    Skip(u64),
}

/// Settings of the bulk formats.
#[derive(Debug, Clone)]
pub struct BulkOptions {
    /// The zone updated.
    pub zone: Name,
    /// Origin of relative names (zone fragments).
    pub origin: Name,
    /// TTL of added records without one.
    pub ttl: u32,
    /// Delete the records instead of adding them.
    pub delete: bool,
    /// Most RRs per message.
    pub batch: usize,
    /// ENUM apex (CSV).
    pub enum_apex: String,
}

/// One RR of bulk input.
#[derive(Debug, Clone)]
struct Unit {
    line: u64,
    record: Record,
}

/// Reads a zone fragment.
pub fn zone_fragment(text: &[u8], opts: &BulkOptions, resume: Resume) -> Result<Plan, InputError> {
    let parsed = lode_zonefile::parse_bytes(text, "input", &opts.origin, Some(opts.ttl)).map_err(
        |errs| {
            let first = errs.first();
            InputError {
                line: first.map_or(0, |e| u64::from(e.pos.line)),
                message: format!(
                    "{}{}",
                    first.map_or(String::new(), |e| e.message.clone()),
                    if errs.len() > 1 {
                        format!(" (and {} more errors)", errs.len() - 1)
                    } else {
                        String::new()
                    }
                ),
            }
        },
    )?;
    let units = parsed
        .records
        .into_iter()
        .zip(parsed.positions)
        .map(|(record, pos)| Unit {
            line: u64::from(pos.line),
            record,
        })
        .collect();
    batch(units, opts, resume)
}

/// Reads ENUM CSV: `+number, URI[, order, preference, service]` per line;
/// blank lines, `#` comments and a first line that is not a number (a header) are skipped.
pub fn enum_csv(text: &str, opts: &BulkOptions, resume: Resume) -> Result<Plan, InputError> {
    let mut units = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i as u64 + 1;
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let fields = split_csv(t).ok_or(InputError {
            line,
            message: "unterminated quoted field".into(),
        })?;
        let number = fields[0].as_str();
        if line == 1
            && !number.starts_with('+')
            && !number.starts_with(|c: char| c.is_ascii_digit())
        {
            continue; // a header
        }
        if !(2..=5).contains(&fields.len()) {
            return err(
                line,
                format!(
                    "{} fields; expected +number, URI[, order, preference, service]",
                    fields.len()
                ),
            );
        }
        let e164 = E164::parse(number).or_else(|e| err(line, format!("number {number:?}: {e}")))?;
        let uri = fields[1].as_str();
        if uri.is_empty() {
            return err(line, "empty URI");
        }
        let num = |k: usize, default: u16, what: &str| -> Result<u16, InputError> {
            match fields.get(k).map(|s| s.as_str()).filter(|s| !s.is_empty()) {
                None => Ok(default),
                Some(s) => s
                    .parse()
                    .or_else(|_| err(line, format!("{what} {s:?} is not 0-65535"))),
            }
        };
        let order = num(2, 100, "order")?;
        let preference = num(3, 10, "preference")?;
        let service = fields
            .get(4)
            .map(|s| s.as_str())
            .filter(|s| !s.is_empty())
            .unwrap_or("E2U+sip");
        let regexp = format!("!^.*$!{uri}!");
        if service.len() > 255 || regexp.len() > 255 {
            return err(
                line,
                "service or URI longer than a NAPTR field (255 octets)",
            );
        }
        let owner = Name::parse(&e164.enum_name(&opts.enum_apex), None)
            .or_else(|e| err(line, format!("ENUM name of {number}: {e}")))?;
        units.push(Unit {
            line,
            record: Record {
                owner,
                class: Class::IN,
                rtype: Rtype::NAPTR,
                ttl: opts.ttl,
                rdata: naptr(order, preference, "u", service, &regexp).into(),
            },
        });
    }
    batch(units, opts, resume)
}

/// NAPTR RDATA (RFC 3403) with the root as replacement.
pub fn naptr(order: u16, preference: u16, flags: &str, service: &str, regexp: &str) -> Vec<u8> {
    let mut r = Vec::with_capacity(8 + flags.len() + service.len() + regexp.len());
    r.extend_from_slice(&order.to_be_bytes());
    r.extend_from_slice(&preference.to_be_bytes());
    for s in [flags, service, regexp] {
        r.push(s.len() as u8);
        r.extend_from_slice(s.as_bytes());
    }
    r.push(0);
    r
}

/// Splits a CSV line on commas outside double quotes (`""` is a quote), trimming fields.
fn split_csv(line: &str) -> Option<Vec<String>> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let cur = fields.last_mut()?;
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(String::new()),
            c => cur.push(c),
        }
    }
    if quoted {
        return None;
    }
    Some(fields.into_iter().map(|f| f.trim().to_owned()).collect())
}

/// The wire size of a record in an UPDATE (uncompressed).
fn wire_size(r: &Record) -> usize {
    r.owner.as_wire().len() + 10 + r.rdata.len()
}

/// Drops resumed units, checks zones, and cuts the rest into messages of at
/// most `opts.batch` RRs (and [`MAX_MESSAGE`] bytes).
fn batch(units: Vec<Unit>, opts: &BulkOptions, resume: Resume) -> Result<Plan, InputError> {
    let mut plan = Plan::default();
    let zone_ref = opts.zone.as_ref();
    let head = opts.zone.as_wire().len() + 16;
    let mut cur: Option<Message> = None;
    let mut size = head;
    for (k, mut u) in units.into_iter().enumerate() {
        let skip = match resume {
            Resume::Start => false,
            Resume::AfterLine(l) => u.line <= l,
            Resume::Skip(n) => (k as u64) < n,
        };
        if skip {
            plan.skipped_units += 1;
            plan.resumed_after = plan.resumed_after.max(u.line);
            continue;
        }
        if !u.record.owner.as_ref().ends_with(&zone_ref) {
            return err(
                u.line,
                format!("{} is not in zone {}", u.record.owner, opts.zone),
            );
        }
        if opts.delete {
            // Delete this RR (RFC 2136 §2.5.4): class NONE, TTL 0.
            u.record.class = Class::NONE;
            u.record.ttl = 0;
        }
        let sz = wire_size(&u.record);
        let full = cur
            .as_ref()
            .is_some_and(|m| m.updates.len() >= opts.batch || size + sz > MAX_MESSAGE);
        if full {
            plan.messages.extend(cur.take());
        }
        let m = cur.get_or_insert_with(|| {
            size = head;
            Message {
                zone: opts.zone.clone(),
                prereqs: Vec::new(),
                updates: Vec::new(),
                first_line: u.line,
                last_line: u.line,
                units: 0,
            }
        });
        size += sz;
        m.last_line = u.line;
        m.units += 1;
        m.updates.push(u.record);
    }
    plan.messages.extend(cur);
    if let Resume::AfterLine(l) = resume {
        plan.resumed_after = l;
    }
    Ok(plan)
}

/// State of the nsupdate reader.
struct Ns {
    zone: Option<Name>,
    origin: Name,
    ttl: Option<u32>,
    cur: Option<Message>,
    plan: Plan,
    msg_index: u64,
    resume: Resume,
}

/// Reads nsupdate batch commands. `zone` and `ttl` are defaults that the
/// file's `zone` and `ttl` directives override.
pub fn nsupdate(
    text: &str,
    zone: Option<Name>,
    ttl: Option<u32>,
    resume: Resume,
) -> Result<Plan, InputError> {
    let mut ns = Ns {
        zone,
        origin: Name::root(),
        ttl,
        cur: None,
        plan: Plan::default(),
        msg_index: 0,
        resume,
    };
    let mut last = 0;
    for (i, raw) in text.lines().enumerate() {
        let line = i as u64 + 1;
        last = line;
        ns.command(raw, line)?;
    }
    if ns.cur.is_some() {
        // nsupdate sends what is pending at the end of its input.
        ns.send(last)?;
    }
    if let Resume::AfterLine(l) = ns.resume {
        ns.plan.resumed_after = l;
    }
    Ok(ns.plan)
}

/// The next whitespace-separated token of `s` and the rest (trimmed).
fn token(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], s[i..].trim_start()),
        None => (s, ""),
    }
}

impl Ns {
    fn command(&mut self, raw: &str, line: u64) -> Result<(), InputError> {
        let t = raw.trim();
        if t.starts_with(';') || t.starts_with('#') {
            return Ok(());
        }
        if t.is_empty() {
            // A blank line sends, as in nsupdate.
            return if self.cur.is_some() {
                self.send(line)
            } else {
                Ok(())
            };
        }
        let (cmd, rest) = token(t);
        match cmd.to_ascii_lowercase().as_str() {
            "send" => self.send(line),
            "zone" => {
                if self.cur.is_some() {
                    return err(line, "`zone` inside a message: `send` first");
                }
                self.zone = Some(self.name(token(rest).0, line, &Name::root())?);
                Ok(())
            }
            "origin" => {
                self.origin = self.name(token(rest).0, line, &Name::root())?;
                Ok(())
            }
            "ttl" => {
                let v = token(rest).0;
                self.ttl = Some(
                    v.parse()
                        .or_else(|_| err(line, format!("ttl {v:?} is not a number of seconds")))?,
                );
                Ok(())
            }
            "class" => match token(rest).0.to_ascii_uppercase().as_str() {
                "IN" => Ok(()),
                c => err(line, format!("class {c}: only IN is supported")),
            },
            "server" => {
                let (host, rest) = token(rest);
                let port = match token(rest).0 {
                    "" => 53,
                    p => p
                        .parse()
                        .or_else(|_| err(line, format!("port {p:?} is not 1-65535")))?,
                };
                if host.is_empty() {
                    return err(line, "server needs an address");
                }
                match &self.plan.server {
                    Some((h, p, l)) if (h.as_str(), *p) != (host, port) => err(
                        line,
                        format!("a second server ({host} after {h} on line {l}): one run talks to one server"),
                    ),
                    _ => {
                        self.plan.server = Some((host.to_owned(), port, line));
                        Ok(())
                    }
                }
            }
            "key" => {
                let (a, rest) = token(rest);
                let secret = token(rest).0;
                if secret.is_empty() {
                    return err(line, "key needs [hmac:]name secret");
                }
                let spec = format!("{a}:{secret}");
                let key = lode_tsig::Key::parse_spec(&spec)
                    .or_else(|e| err(line, format!("key: {e}")))?;
                if let Some((_, l)) = &self.plan.key {
                    if self.plan.key.as_ref().is_some_and(|(k, _)| k != &key) {
                        return err(
                            line,
                            format!("a second key (after line {l}): one key per run"),
                        );
                    }
                }
                self.plan.key = Some((key, line));
                Ok(())
            }
            "update" => {
                let (op, rest) = token(rest);
                self.update(&op.to_ascii_lowercase(), rest, line)
            }
            "add" | "del" | "delete" => self.update(&cmd.to_ascii_lowercase(), rest, line),
            "prereq" => self.prereq(rest, line),
            "show" | "answer" | "debug" | "quit" => {
                if cmd.eq_ignore_ascii_case("quit") {
                    // Nothing after `quit` is read by nsupdate; the caller stops at the end anyway.
                }
                Ok(())
            }
            other => err(
                line,
                format!(
                    "`{other}` is not supported (supported: server, zone, origin, ttl, class, key, \
                     update add|delete, prereq, send, show, answer)"
                ),
            ),
        }
    }

    fn name(&self, text: &str, line: u64, origin: &Name) -> Result<Name, InputError> {
        if text.is_empty() {
            return err(line, "a domain name is missing");
        }
        Name::parse(text, Some(origin)).or_else(|e| err(line, format!("name {text:?}: {e}")))
    }

    /// The message being built, started at `line` if none.
    fn current(&mut self, line: u64) -> Result<&mut Message, InputError> {
        let Some(zone) = self.zone.clone() else {
            return err(
                line,
                "no zone: write `zone NAME` before the first update (or pass --zone); \
                 this client does not look zones up",
            );
        };
        Ok(self.cur.get_or_insert_with(|| Message {
            zone,
            prereqs: Vec::new(),
            updates: Vec::new(),
            first_line: line,
            last_line: line,
            units: 1,
        }))
    }

    fn push(&mut self, prereq: bool, r: Record, line: u64) -> Result<(), InputError> {
        let m = self.current(line)?;
        if !r.owner.as_ref().ends_with(&m.zone.as_ref()) {
            return err(line, format!("{} is not in zone {}", r.owner, m.zone));
        }
        m.last_line = line;
        if prereq {
            m.prereqs.push(r);
        } else {
            m.updates.push(r);
        }
        Ok(())
    }

    fn update(&mut self, op: &str, rest: &str, line: u64) -> Result<(), InputError> {
        let add = match op {
            "add" => true,
            "del" | "delete" => false,
            o => return err(line, format!("update {o}: expected add or delete")),
        };
        let (owner_text, mut rest) = token(rest);
        let owner = self.name(owner_text, line, &self.origin.clone())?;
        let (t, r) = token(rest);
        let mut ttl = None;
        if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            ttl = Some(
                t.parse::<u32>()
                    .or_else(|_| err(line, format!("ttl {t} too large")))?,
            );
            rest = r;
        }
        let (t, r) = token(rest);
        if t.eq_ignore_ascii_case("IN") {
            rest = r;
        } else if Class::from_mnemonic(t).is_some() && Rtype::from_mnemonic(t).is_none() {
            return err(line, format!("class {t}: only IN is supported"));
        }
        let (type_text, rdata_text) = token(rest);
        let record = if add {
            let rtype = self.rtype(type_text, line)?;
            let Some(ttl) = ttl.or(self.ttl) else {
                return err(
                    line,
                    "no TTL: give one (update add NAME TTL TYPE DATA) or a `ttl` line",
                );
            };
            Record {
                owner,
                class: Class::IN,
                rtype,
                ttl,
                rdata: self.rdata(rtype, rdata_text, line)?.into(),
            }
        } else if type_text.is_empty() {
            // Delete every RRset of the name.
            Record {
                owner,
                class: Class::ANY,
                rtype: Rtype::ANY,
                ttl: 0,
                rdata: Box::new([]),
            }
        } else {
            let rtype = self.rtype(type_text, line)?;
            let (class, rdata) = if rdata_text.is_empty() {
                (Class::ANY, Vec::new())
            } else {
                (Class::NONE, self.rdata(rtype, rdata_text, line)?)
            };
            Record {
                owner,
                class,
                rtype,
                ttl: 0,
                rdata: rdata.into(),
            }
        };
        self.push(false, record, line)
    }

    fn prereq(&mut self, rest: &str, line: u64) -> Result<(), InputError> {
        let (kind, rest) = token(rest);
        let (owner_text, rest) = token(rest);
        let owner = self.name(owner_text, line, &self.origin.clone())?;
        let (mut t, mut rest) = token(rest);
        if t.eq_ignore_ascii_case("IN") {
            (t, rest) = token(rest);
        }
        let (class, rtype, rdata) = match kind.to_ascii_lowercase().as_str() {
            "nxdomain" => (Class::NONE, Rtype::ANY, Vec::new()),
            "yxdomain" => (Class::ANY, Rtype::ANY, Vec::new()),
            "nxrrset" => (Class::NONE, self.rtype(t, line)?, Vec::new()),
            "yxrrset" => {
                let rtype = self.rtype(t, line)?;
                if rest.is_empty() {
                    (Class::ANY, rtype, Vec::new())
                } else {
                    (Class::IN, rtype, self.rdata(rtype, rest, line)?)
                }
            }
            k => {
                return err(
                    line,
                    format!("prereq {k}: expected nxdomain, yxdomain, nxrrset or yxrrset"),
                )
            }
        };
        let r = Record {
            owner,
            class,
            rtype,
            ttl: 0,
            rdata: rdata.into(),
        };
        self.push(true, r, line)
    }

    fn rtype(&self, t: &str, line: u64) -> Result<Rtype, InputError> {
        if t.is_empty() {
            return err(line, "a record type is missing");
        }
        Rtype::from_mnemonic(t).ok_or(InputError {
            line,
            message: format!("unknown record type {t:?}"),
        })
    }

    fn rdata(&self, rtype: Rtype, text: &str, line: u64) -> Result<Vec<u8>, InputError> {
        if text.is_empty() {
            return err(line, format!("{rtype}: the record data is missing"));
        }
        lode_zonefile::parse_rdata(rtype, text, &self.origin)
            .or_else(|e| err(line, format!("{rtype}: {e}")))
    }

    fn send(&mut self, line: u64) -> Result<(), InputError> {
        let Some(mut m) = self.cur.take() else {
            return Ok(());
        };
        m.last_line = m.last_line.max(line);
        let k = self.msg_index;
        self.msg_index += 1;
        let size = m.encode(0).len();
        if size > MAX_MESSAGE {
            return err(
                line,
                format!("the message of lines {}-{line} is {size} octets: more than fits in one TCP message", m.first_line),
            );
        }
        let skip = match self.resume {
            Resume::Start => false,
            Resume::Skip(n) => k < n,
            Resume::AfterLine(l) => {
                if m.last_line <= l {
                    true
                } else if m.first_line <= l {
                    return err(
                        l,
                        format!(
                            "--resume-after {l} falls inside the message of lines {}-{}: \
                             resume after line {} or {}",
                            m.first_line,
                            m.last_line,
                            m.first_line - 1,
                            m.last_line
                        ),
                    );
                } else {
                    false
                }
            }
        };
        if skip {
            self.plan.skipped_units += 1;
            self.plan.resumed_after = m.last_line;
        } else {
            self.plan.messages.push(m);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(batch: usize) -> BulkOptions {
        let zone = Name::parse("e164.arpa.", None).unwrap();
        BulkOptions {
            origin: zone.clone(),
            zone,
            ttl: 3600,
            delete: false,
            batch,
            enum_apex: "e164.arpa".into(),
        }
    }

    #[test]
    fn csv_to_naptr_like_lode_gen() {
        let text = "number,uri\n+1-212-939-1234, sip:+12129391234@example.net\n\n+44 20 7946 0000,\"sip:a,b@x\",50,20,E2U+pstn:tel\n";
        let p = enum_csv(text, &opts(1), Resume::Start).unwrap();
        assert_eq!(p.messages.len(), 2);
        let r = &p.messages[0].updates[0];
        assert_eq!(r.owner.to_string(), "4.3.2.1.9.3.9.2.1.2.1.e164.arpa.");
        assert_eq!(
            lode_zonefile::format_rdata(Rtype::NAPTR, &r.rdata),
            "100 10 \"u\" \"E2U+sip\" \"!^.*$!sip:+12129391234@example.net!\" ."
        );
        assert_eq!(r.ttl, 3600);
        assert_eq!(p.messages[0].last_line, 2);
        assert_eq!(p.messages[1].last_line, 4);
        let r = &p.messages[1].updates[0];
        assert_eq!(
            lode_zonefile::format_rdata(Rtype::NAPTR, &r.rdata),
            "50 20 \"u\" \"E2U+pstn:tel\" \"!^.*$!sip:a,b@x!\" ."
        );
    }

    #[test]
    fn csv_errors_name_the_line() {
        let e = enum_csv("+1,sip:a\n12x,sip:b\n", &opts(10), Resume::Start).unwrap_err();
        assert_eq!(e.line, 2);
        let e = enum_csv("+1,sip:a,99999\n", &opts(10), Resume::Start).unwrap_err();
        assert_eq!(e.line, 1);
    }

    #[test]
    fn batches_and_resume() {
        let text: String = (0..10).map(|i| format!("+3100{i},sip:{i}@x\n")).collect();
        let p = enum_csv(&text, &opts(4), Resume::Start).unwrap();
        let sizes: Vec<usize> = p.messages.iter().map(|m| m.updates.len()).collect();
        assert_eq!(sizes, [4, 4, 2]);
        assert_eq!(p.messages[1].first_line, 5);
        assert_eq!(p.messages[1].last_line, 8);
        let p = enum_csv(&text, &opts(4), Resume::AfterLine(6)).unwrap();
        assert_eq!(p.skipped_units, 6);
        assert_eq!(p.messages[0].first_line, 7);
        let q = enum_csv(&text, &opts(4), Resume::Skip(6)).unwrap();
        assert_eq!(p.messages, q.messages);
    }

    #[test]
    fn zone_fragment_delete() {
        let mut o = opts(100);
        o.delete = true;
        let p = zone_fragment(
            b"$ORIGIN 1.e164.arpa.\n2 NAPTR 100 10 \"u\" \"E2U+sip\" \"!^.*$!sip:x!\" .\n3 300 TXT hi\n",
            &o,
            Resume::Start,
        )
        .unwrap();
        let m = &p.messages[0];
        assert_eq!(m.updates.len(), 2);
        assert!(m
            .updates
            .iter()
            .all(|r| r.class == Class::NONE && r.ttl == 0));
        assert_eq!((m.first_line, m.last_line), (2, 3));
        let e = zone_fragment(b"x.example. A 1.2.3.4\n", &opts(1), Resume::Start).unwrap_err();
        assert_eq!(e.line, 1);
    }

    #[test]
    fn nsupdate_batch() {
        let text = "\
; provisioning
server 127.0.0.1 5300
key hmac-sha256:k. c2VjcmV0
zone example.com
ttl 300
prereq nxdomain new.example.com
update add new.example.com A 192.0.2.1
update add new.example.com 60 IN TXT \"two words\"
send
update delete old.example.com
del old2.example.com. A
del old3.example.com. A 192.0.2.9
prereq yxrrset x.example.com A
prereq yxrrset x.example.com A 192.0.2.7

origin example.com
add rel 10 AAAA ::1
";
        let p = nsupdate(text, None, None, Resume::Start).unwrap();
        assert_eq!(p.server, Some(("127.0.0.1".into(), 5300, 2)));
        assert!(p.key.is_some());
        assert_eq!(p.messages.len(), 3);
        let m = &p.messages[0];
        assert_eq!((m.first_line, m.last_line), (6, 9));
        assert_eq!(m.prereqs[0].class, Class::NONE);
        assert_eq!(m.updates[0].ttl, 300);
        assert_eq!(m.updates[1].ttl, 60);
        let m = &p.messages[1];
        assert_eq!((m.first_line, m.last_line), (10, 15));
        let classes: Vec<Class> = m.updates.iter().map(|r| r.class).collect();
        assert_eq!(classes, [Class::ANY, Class::ANY, Class::NONE]);
        assert_eq!(m.prereqs[0].class, Class::ANY);
        assert_eq!(m.prereqs[1].class, Class::IN);
        assert_eq!(
            p.messages[2].updates[0].owner.to_string(),
            "rel.example.com."
        );

        let r = nsupdate(text, None, None, Resume::AfterLine(9)).unwrap();
        assert_eq!(r.messages.len(), 2);
        assert_eq!(r.skipped_units, 1);
        let e = nsupdate(text, None, None, Resume::AfterLine(11)).unwrap_err();
        assert!(e.message.contains("inside the message"), "{e}");
        let r = nsupdate(text, None, None, Resume::Skip(2)).unwrap();
        assert_eq!(r.messages.len(), 1);
    }

    #[test]
    fn nsupdate_errors_name_the_line() {
        let e = nsupdate(
            "zone a.\nupdate add b.a. A 1.2.3.4\n",
            None,
            None,
            Resume::Start,
        )
        .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("TTL"));
        let e = nsupdate("zone a.\ngsstsig\n", None, None, Resume::Start).unwrap_err();
        assert_eq!(e.line, 2);
        let e = nsupdate("update add b.a. 1 A 1.2.3.4\n", None, None, Resume::Start).unwrap_err();
        assert!(e.message.contains("no zone"));
        let e = nsupdate(
            "zone a.\nadd b.other. 1 A 1.2.3.4\n",
            None,
            None,
            Resume::Start,
        )
        .unwrap_err();
        assert!(e.message.contains("not in zone"));
    }
}
