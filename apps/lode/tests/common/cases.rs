//! The queries of the differential suite (tests/differential/queries.txt):
//! one query per line, QNAME QTYPE [CLASS] [+OPTION …], read into [`Case`]s
//! (apps/lode/tests/differential.rs; tests/xdp.rs sends them over XDP).

use super::*;

/// One line of queries.txt.
#[derive(Debug)]
pub struct Case {
    /// The line as written (whitespace normalised), used as its identity.
    pub text: String,
    /// Line number in queries.txt.
    pub line: usize,
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

/// Reads one line (comments already cut) into a case.
pub fn parse_case(text: &str, line: usize) -> Result<Case, String> {
    let mut words = text.split_whitespace();
    let qname = words.next().ok_or("empty line")?;
    let qtype_s = words.next().ok_or("missing qtype")?;
    let qtype = type_from_str(qtype_s).ok_or_else(|| format!("unknown qtype {qtype_s}"))?;
    let mut q = Query::new(qname, qtype, 1);
    q.id = (line as u16).wrapping_mul(7919);
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
        line,
        query: q,
        udp,
        tcp,
    })
}

/// Every case of queries.txt (only those whose line holds
/// `LODE_DIFF_FILTER`, when it is set).
pub fn load_cases() -> Vec<Case> {
    let path = repo_root().join("tests/differential/queries.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let filter = std::env::var("LODE_DIFF_FILTER").ok();
    let mut cases = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(f) = &filter {
            if !line.contains(f.as_str()) {
                continue;
            }
        }
        match parse_case(line, i + 1) {
            Ok(c) => cases.push(c),
            Err(e) => errors.push(format!("queries.txt:{}: {e}", i + 1)),
        }
    }
    assert!(errors.is_empty(), "bad query lines:\n{}", errors.join("\n"));
    cases
}
