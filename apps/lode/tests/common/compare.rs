//! The comparison of the differential suites (tests/differential.rs,
//! tests/tld_differential.rs): a query written as a line of
//! `tests/differential/queries.txt` ([`Case`]), sent to Knot and to the
//! server under test over UDP and TCP, both answers parsed with the tests'
//! own parser and compared aspect by aspect ([`differing`]); differences
//! accepted on purpose come from a list ([`Accepted`]), the rest are printed
//! with both answers and counted ([`Tally`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use super::{
    class_from_str, tcp_exchange, type_from_str, udp_exchange, Edns, Message, Query, Server,
};

/// How long a server may take to answer one query.
pub const ANSWER_TIMEOUT: Duration = Duration::from_millis(1500);

/// One query line (the syntax of queries.txt: `NAME TYPE [CLASS] [+option…]`).
#[derive(Debug)]
pub struct Case {
    /// The line as written (whitespace normalised), used as its identity.
    pub text: String,
    /// Where the line comes from, for messages (`queries.txt:12`).
    pub at: String,
    /// The query.
    pub query: Query,
    /// Sent over UDP.
    pub udp: bool,
    /// Sent over TCP.
    pub tcp: bool,
}

/// The query's OPT record, added (payload 1232) if missing.
fn edns(q: &mut Query) -> &mut Edns {
    q.edns.get_or_insert(Edns {
        size: 1232,
        ..Edns::default()
    })
}

impl Case {
    /// Reads one query line; `id` becomes the message ID.
    pub fn parse(text: &str, at: String, id: u16) -> Result<Case, String> {
        let mut words = text.split_whitespace();
        let qname = words.next().ok_or("empty line")?;
        let qtype_s = words.next().ok_or("missing qtype")?;
        let qtype = type_from_str(qtype_s).ok_or_else(|| format!("unknown qtype {qtype_s}"))?;
        let mut q = Query::new(qname, qtype, 1);
        q.id = id;
        let (mut udp, mut tcp) = (true, true);
        let mut transport_given = false;
        for w in words {
            if let Some(opt) = w.strip_prefix('+') {
                let (key, val) = match opt.split_once('=') {
                    Some((k, v)) => (k, Some(v)),
                    None => (opt, None),
                };
                let num = |v: Option<&str>| -> Result<u32, String> {
                    let v = v.ok_or_else(|| format!("+{key} needs a value"))?;
                    let r = match v.strip_prefix("0x") {
                        Some(h) => u32::from_str_radix(h, 16),
                        None => v.parse(),
                    };
                    r.map_err(|e| format!("+{key}={v}: {e}"))
                };
                match key {
                    "udp" | "tcp" => {
                        if !transport_given {
                            udp = false;
                            tcp = false;
                            transport_given = true;
                        }
                        if key == "udp" {
                            udp = true;
                        } else {
                            tcp = true;
                        }
                    }
                    "qr" => q.flags |= 0x8000,
                    "aa" => q.flags |= 0x0400,
                    "tc" => q.flags |= 0x0200,
                    "rd" => q.flags |= 0x0100,
                    "ra" => q.flags |= 0x0080,
                    "z" => q.flags |= 0x0040,
                    "ad" => q.flags |= 0x0020,
                    "cd" => q.flags |= 0x0010,
                    "opcode" => q.opcode = num(val)? as u8,
                    "edns" => {
                        let size = match val {
                            Some(_) => num(val)? as u16,
                            None => 1232,
                        };
                        edns(&mut q).size = size;
                    }
                    "do" => edns(&mut q).flags |= 0x8000,
                    "ednsver" => edns(&mut q).version = num(val)? as u8,
                    "ednsflags" => edns(&mut q).flags |= num(val)? as u16,
                    "ednsopt" => {
                        let v = val.ok_or("+ednsopt needs CODE[:HEX]")?;
                        let (code, data) = v.split_once(':').unwrap_or((v, ""));
                        let code: u16 = code.parse().map_err(|e| format!("+ednsopt code: {e}"))?;
                        let data = (0..data.len() / 2)
                            .map(|i| u8::from_str_radix(&data[2 * i..2 * i + 2], 16))
                            .collect::<Result<Vec<u8>, _>>()
                            .map_err(|e| format!("+ednsopt data: {e}"))?;
                        edns(&mut q).options.push((code, data));
                    }
                    _ => return Err(format!("unknown option {w}")),
                }
            } else if let Some(c) = class_from_str(w) {
                q.qclass = c;
            } else {
                return Err(format!("unknown word {w}"));
            }
        }
        Ok(Case {
            text: text.split_whitespace().collect::<Vec<_>>().join(" "),
            at,
            query: q,
            udp,
            tcp,
        })
    }
}

/// One accepted difference: a query line, the aspects allowed to differ
/// (optionally `udp:`/`tcp:`-qualified), and why.
#[derive(Debug)]
pub struct Accepted {
    /// The query line (whitespace normalised).
    pub query: String,
    /// The aspects that may differ (`answer`, `udp:flags`, `*`, …).
    pub aspects: Vec<String>,
    /// Line number in the list.
    pub line: usize,
}

/// The lines `query | aspects | reason` of an accepted-differences list
/// (none when the file does not exist).
pub fn load_accepted(path: &Path) -> Vec<Accepted> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut v = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parts: Vec<&str> = line.splitn(3, '|').map(str::trim).collect();
        assert!(
            parts.len() == 3 && !parts[2].is_empty(),
            "{name}:{}: want `query | aspects | reason`",
            i + 1
        );
        v.push(Accepted {
            query: parts[0].split_whitespace().collect::<Vec<_>>().join(" "),
            aspects: parts[1].split(',').map(|s| s.trim().to_string()).collect(),
            line: i + 1,
        });
    }
    v
}

/// The aspects in which two responses differ ("response" when one of them is missing).
pub fn differing(a: &Option<Vec<u8>>, b: &Option<Vec<u8>>) -> Vec<&'static str> {
    match (a, b) {
        (None, None) => vec![],
        (Some(_), None) | (None, Some(_)) => vec!["response"],
        (Some(a), Some(b)) => {
            let (ma, mb) = (Message::parse(a), Message::parse(b));
            ma.aspects()
                .into_iter()
                .zip(mb.aspects())
                .filter(|(x, y)| x.1 != y.1)
                .map(|(x, _)| x.0)
                .collect()
        }
    }
}

/// For each differing aspect, the lines only Knot gave (`-`) and only the
/// other server gave (`+`), so that the cause is visible at a glance.
pub fn line_diff(a: &Option<Vec<u8>>, b: &Option<Vec<u8>>, aspects: &[&str]) -> String {
    let (Some(a), Some(b)) = (a, b) else {
        return String::new();
    };
    let (ma, mb) = (Message::parse(a), Message::parse(b));
    let mut out = String::new();
    for ((name, ta), (_, tb)) in ma.aspects().into_iter().zip(mb.aspects()) {
        if !aspects.contains(&name) {
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
        out.push_str(&format!("  {name}:\n"));
        for l in only_a {
            out.push_str(&format!("  - {l}\n"));
        }
        for l in only_b {
            out.push_str(&format!("  + {l}\n"));
        }
    }
    out
}

/// A response as dig-like text under a label.
pub fn show(label: &str, r: &Option<Vec<u8>>) -> String {
    match r {
        None => format!("--- {label}: no response\n"),
        Some(b) => format!("--- {label}:\n{}", Message::parse(b).to_text()),
    }
}

/// Sends `wire` to `addr` over `transport` (`udp` or `tcp`), one answer back.
pub fn exchange(addr: std::net::SocketAddr, transport: &str, wire: &[u8]) -> Option<Vec<u8>> {
    if transport == "udp" {
        udp_exchange(addr, wire, ANSWER_TIMEOUT)
    } else {
        tcp_exchange(addr, wire, ANSWER_TIMEOUT)
    }
}

/// The results of a run of comparisons.
#[derive(Debug)]
pub struct Tally {
    /// Identical answers.
    pub passes: usize,
    /// Differences covered by an accepted entry.
    pub expected: usize,
    /// Differences not accepted.
    pub failures: usize,
    /// Failures by differing aspect.
    pub by_aspect: BTreeMap<String, usize>,
    /// Lines of the accepted list that covered a difference.
    pub used_accepts: BTreeSet<usize>,
    /// Print Knot's answer to every query.
    pub verbose: bool,
    /// Mismatches printed in full at most (the others are only counted).
    pub show_at_most: usize,
}

impl Tally {
    /// An empty tally that prints every mismatch.
    pub fn new(verbose: bool) -> Tally {
        Tally {
            passes: 0,
            expected: 0,
            failures: 0,
            by_aspect: BTreeMap::new(),
            used_accepts: BTreeSet::new(),
            verbose,
            show_at_most: usize::MAX,
        }
    }

    /// Sends `case` to `knot` and `other` over each transport it asks for
    /// and compares the answers; returns how many transports gave a
    /// difference that `accepted` does not cover (printed with both answers).
    pub fn compare(
        &mut self,
        knot: &Server,
        other: &Server,
        case: &Case,
        accepted: &[Accepted],
    ) -> usize {
        let wire = case.query.to_wire();
        let mut failed = 0;
        for (transport, on) in [("udp", case.udp), ("tcp", case.tcp)] {
            if !on {
                continue;
            }
            let a = exchange(knot.addr, transport, &wire);
            let b = exchange(other.addr, transport, &wire);
            let diff = differing(&a, &b);
            if self.verbose {
                eprintln!(
                    "\n=== {} [{transport}] `{}`\n{}",
                    case.at,
                    case.text,
                    show(&knot.label, &a)
                );
            }
            if diff.is_empty() {
                self.passes += 1;
                continue;
            }
            let acc: Vec<&Accepted> = accepted.iter().filter(|x| x.query == case.text).collect();
            let covered = diff.iter().all(|d| {
                acc.iter().any(|x| {
                    x.aspects.iter().any(|s| {
                        s == d
                            || s == "*"
                            || *s == format!("{transport}:{d}")
                            || *s == format!("{transport}:*")
                    })
                })
            });
            if covered {
                self.expected += 1;
                for x in acc {
                    self.used_accepts.insert(x.line);
                }
                continue;
            }
            failed += 1;
            self.failures += 1;
            for d in &diff {
                *self.by_aspect.entry(d.to_string()).or_default() += 1;
            }
            if self.failures <= self.show_at_most {
                eprintln!(
                    "\n=== MISMATCH {} [{transport}] `{}` differs in: {}\n{}{}{}",
                    case.at,
                    case.text,
                    diff.join(", "),
                    line_diff(&a, &b, &diff),
                    show(&knot.label, &a),
                    show(&other.label, &b)
                );
            }
        }
        failed
    }

    /// Notes the entries of `accepted` for queries that were `asked` but
    /// no longer cover any difference.
    pub fn note_unused(&self, accepted: &[Accepted], asked: impl Fn(&str) -> bool, list: &str) {
        for a in accepted {
            if !self.used_accepts.contains(&a.line) && asked(&a.query) {
                eprintln!(
                    "note: {list}:{} no longer differs (`{}`): remove it",
                    a.line, a.query
                );
            }
        }
    }

    /// One line: identical, accepted, mismatches, by aspect.
    pub fn summary(&self) -> String {
        format!(
            "{} identical, {} accepted differences, {} mismatches; by aspect: {:?}",
            self.passes, self.expected, self.failures, self.by_aspect
        )
    }
}
