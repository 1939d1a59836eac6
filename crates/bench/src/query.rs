//! Queries prepared in wire form before a run, and the checks a reply must pass.
//!
//! A [`QuerySet`] holds every query of a run back to back in one arena; the ID
//! (the first two bytes) is left zero and stamped at send time. A reply is valid
//! (RFC 8219 §9) when it has QR set, the same ID, the same question, the
//! expected RCODE, and an answer where one is expected.

use std::fmt;
use std::path::Path;

use lode_wire::request::Reply;
use lode_wire::{Class, Name, Rtype};

use crate::gen::dns64perf::{owner_label, Ipv4Net};
use crate::gen::Scatter;

/// Size of the DNS header.
pub const HEADER_LEN: usize = 12;

/// Why a query list could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum QueryError {
    /// Reading the file failed.
    Io(std::io::Error),
    /// A line that is not `name TYPE`.
    BadLine {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// No query at all.
    Empty,
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::Io(e) => write!(f, "{e}"),
            QueryError::BadLine { line, why } => write!(f, "line {line}: {why}"),
            QueryError::Empty => f.write_str("no queries"),
        }
    }
}

impl std::error::Error for QueryError {}

/// Which replies count as valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// NOERROR with at least one answer record.
    Answer,
    /// NOERROR, any number of answers (also what an echo responder returns).
    NoError,
    /// NXDOMAIN (authoritative denial inside a zone).
    NxDomain,
    /// REFUSED (a name outside every zone).
    Refused,
    /// Any RCODE.
    Any,
}

impl Expect {
    /// Parses `answer`, `noerror`, `nxdomain`, `refused` or `any`.
    pub fn parse(s: &str) -> Option<Expect> {
        Some(match s.to_ascii_lowercase().as_str() {
            "answer" => Expect::Answer,
            "noerror" => Expect::NoError,
            "nxdomain" => Expect::NxDomain,
            "refused" => Expect::Refused,
            "any" => Expect::Any,
            _ => return None,
        })
    }
}

/// What a reply turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Valid.
    Valid,
    /// Not a DNS response (short, QR clear, not one question).
    Malformed,
    /// The question differs from the query's.
    WrongQuestion,
    /// An unexpected RCODE, or no answer where one was expected.
    WrongAnswer,
}

/// Queries in wire form, ID zero, stored back to back.
#[derive(Debug, Clone, Default)]
pub struct QuerySet {
    arena: Vec<u8>,
    ends: Vec<u32>,
    question_ends: Vec<u32>,
    /// Per-query expectations (mixed sets); empty when no query has its own.
    expects: Vec<Option<Expect>>,
}

impl QuerySet {
    /// Number of queries.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True if there is no query.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Query `i` in wire form (ID zero).
    pub fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.arena[start..self.ends[i] as usize]
    }

    /// The question section of query `i`.
    pub fn question(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.arena[start + HEADER_LEN..self.question_ends[i] as usize]
    }

    /// The reply query `i` must get, if it has its own expectation (mixed sets);
    /// None: the tester's.
    pub fn expect(&self, i: usize) -> Option<Expect> {
        self.expects.get(i).copied().flatten()
    }

    /// Appends a query for `name`/`rtype`/IN; with `edns`, an OPT record (UDP size 1232, DO clear).
    pub fn push(&mut self, name: &Name, rtype: Rtype, edns: bool) {
        self.push_with(name, rtype, edns.then_some(&[]), None);
    }

    /// Appends a query for `name`/`rtype`/IN with, if `opt` is given, an OPT record
    /// (UDP size 1232, DO clear) whose RDATA is `opt` (EDNS options, each code,
    /// length, data; at most 65535 bytes), and its own expected reply if `expect`.
    pub fn push_with(
        &mut self,
        name: &Name,
        rtype: Rtype,
        opt: Option<&[u8]>,
        expect: Option<Expect>,
    ) {
        let opt = opt.map(|o| &o[..o.len().min(usize::from(u16::MAX))]);
        if expect.is_some() || !self.expects.is_empty() {
            self.expects.resize(self.ends.len(), None);
            self.expects.push(expect);
        }
        let arcount: u8 = u8::from(opt.is_some());
        // ID 0, flags 0 (no RD: the server is authoritative), QDCOUNT 1, ARCOUNT 0/1.
        self.arena
            .extend_from_slice(&[0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, arcount]);
        self.arena.extend_from_slice(name.as_wire());
        self.arena.extend_from_slice(&rtype.0.to_be_bytes());
        self.arena.extend_from_slice(&Class::IN.0.to_be_bytes());
        self.question_ends.push(self.arena.len() as u32);
        if let Some(opt) = opt {
            // Root owner, type OPT (41), class = UDP payload 1232, TTL 0, RDLENGTH.
            self.arena
                .extend_from_slice(&[0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0]);
            self.arena
                .extend_from_slice(&(opt.len() as u16).to_be_bytes());
            self.arena.extend_from_slice(opt);
        }
        self.ends.push(self.arena.len() as u32);
    }

    /// Parses a dnsperf query list (`name TYPE` per line; `#`/`;` comments and blank
    /// lines skipped; names absolute with or without the final dot), up to `limit` queries.
    pub fn parse_list(text: &str, limit: usize, edns: bool) -> Result<QuerySet, QueryError> {
        let mut set = QuerySet::default();
        for (i, line) in text.lines().enumerate() {
            if set.len() >= limit {
                break;
            }
            set.push_line(line, i + 1, edns)?;
        }
        set.finish()
    }

    /// Reads a dnsperf query list from a file, line by line, stopping after `limit` queries.
    pub fn read_file(path: &Path, limit: usize, edns: bool) -> Result<QuerySet, QueryError> {
        use std::io::BufRead;
        let file = std::fs::File::open(path).map_err(QueryError::Io)?;
        let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
        let mut set = QuerySet::default();
        let mut line = String::new();
        let mut number = 0;
        while set.len() < limit {
            line.clear();
            number += 1;
            if reader.read_line(&mut line).map_err(QueryError::Io)? == 0 {
                break;
            }
            set.push_line(&line, number, edns)?;
        }
        set.finish()
    }

    /// Adds the query of one list line (nothing for blank and comment lines).
    fn push_line(&mut self, line: &str, number: usize, edns: bool) -> Result<(), QueryError> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            return Ok(());
        }
        let bad = |why: String| QueryError::BadLine { line: number, why };
        let mut fields = line.split_whitespace();
        let name = fields.next().unwrap_or_default();
        let rtype = fields.next().unwrap_or("A");
        if fields.next().is_some() {
            return Err(bad("expected `name TYPE`".into()));
        }
        let name =
            Name::parse(name, Some(&Name::root())).map_err(|e| bad(format!("{name}: {e}")))?;
        let rtype = Rtype::from_mnemonic(&rtype.to_ascii_uppercase())
            .ok_or_else(|| bad(format!("unknown type {rtype}")))?;
        self.push(&name, rtype, edns);
        Ok(())
    }

    /// The set, or an error if it is empty.
    fn finish(self) -> Result<QuerySet, QueryError> {
        if self.is_empty() {
            Err(QueryError::Empty)
        } else {
            Ok(self)
        }
    }

    /// The dnsperf namespace of `net`, scattered, at most `limit` names.
    pub fn dns64perf(net: Ipv4Net, rtype: Rtype, limit: usize, edns: bool) -> QuerySet {
        let mut set = QuerySet::default();
        let n = net.size().min(limit as u64);
        let scatter = Scatter::new(net.size(), 11);
        let mut label = [0u8; 15];
        for i in 0..n {
            owner_label(net.base.wrapping_add(scatter.map(i) as u32), &mut label);
            let mut wire = Vec::with_capacity(32);
            wire.push(15);
            wire.extend_from_slice(&label);
            wire.extend_from_slice(b"\x09dns64perf\x04test\x00");
            // Built from a 15-byte label and two fixed labels: always a valid name.
            if let Ok(name) = Name::from_wire(&wire) {
                set.push(&name, rtype, edns);
            }
        }
        set
    }
}

/// The ID of a message (0 if it is shorter than two bytes).
pub use lode_wire::message::id as message_id;

/// Checks a reply against the question it should answer (the ID is matched by the caller).
pub fn check_reply(reply: &[u8], question: &[u8], expect: Expect) -> Verdict {
    let Some(header) = Reply::of(reply).filter(|h| h.qdcount == 1) else {
        return Verdict::Malformed;
    };
    match reply.get(HEADER_LEN..HEADER_LEN + question.len()) {
        Some(q) if q == question => {}
        _ => return Verdict::WrongQuestion,
    }
    let (rcode, ancount) = (header.rcode, header.ancount);
    let ok = match expect {
        Expect::Answer => rcode == 0 && ancount > 0,
        Expect::NoError => rcode == 0,
        Expect::NxDomain => rcode == 3,
        Expect::Refused => rcode == 5,
        Expect::Any => true,
    };
    if ok {
        Verdict::Valid
    } else {
        Verdict::WrongAnswer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(q: &[u8], rcode: u8, ancount: u16) -> Vec<u8> {
        let mut r = q.to_vec();
        r[2] |= 0x80;
        r[3] = (r[3] & 0xF0) | rcode;
        r[6..8].copy_from_slice(&ancount.to_be_bytes());
        r
    }

    #[test]
    fn parse_query_list() {
        let text = "# comment\n4.3.2.1.e164.arpa NAPTR\n\nexample.com. a\n  www.example.com\n";
        let set = QuerySet::parse_list(text, 10, false).expect("valid list");
        assert_eq!(set.len(), 3);
        let q = set.get(0);
        assert_eq!(&q[..12], &[0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            &q[12..],
            b"\x014\x013\x012\x011\x04e164\x04arpa\x00\x00\x23\x00\x01"
        );
        assert_eq!(set.question(0), &q[12..]);
        assert_eq!(&set.get(1)[set.get(1).len() - 4..], &[0, 1, 0, 1]);
        assert_eq!(
            &set.get(2)[set.get(2).len() - 4..],
            &[0, 1, 0, 1],
            "default type A"
        );
        assert_eq!(
            QuerySet::parse_list(text, 2, false).expect("limit").len(),
            2
        );
        let with_edns = QuerySet::parse_list(text, 1, true).expect("edns");
        assert_eq!(with_edns.get(0).len(), q.len() + 11);
        assert_eq!(with_edns.get(0)[11], 1, "ARCOUNT 1");
        assert_eq!(with_edns.question(0), set.question(0));
    }

    #[test]
    fn read_file_stops_at_the_limit() {
        let path = std::env::temp_dir().join(format!("lode-bench-{}-q.txt", std::process::id()));
        std::fs::write(&path, "; c\na.test A\nb.test AAAA\nc.test\n").expect("write");
        let set = QuerySet::read_file(&path, 2, false).expect("read");
        assert_eq!(set.len(), 2);
        assert_eq!(
            &set.question(1)[set.question(1).len() - 4..],
            &[0, 28, 0, 1]
        );
        std::fs::write(&path, "a.test A\nb..test A\n").expect("write");
        assert!(matches!(
            QuerySet::read_file(&path, 10, false),
            Err(QueryError::BadLine { line: 2, .. })
        ));
        let _ = std::fs::remove_file(&path);
        assert!(matches!(
            QuerySet::read_file(&path, 10, false),
            Err(QueryError::Io(_))
        ));
    }

    #[test]
    fn bad_query_lists() {
        assert!(matches!(
            QuerySet::parse_list("", 10, false),
            Err(QueryError::Empty)
        ));
        assert!(matches!(
            QuerySet::parse_list("a.example BOGUS\n", 10, false),
            Err(QueryError::BadLine { line: 1, .. })
        ));
        assert!(matches!(
            QuerySet::parse_list("ok A\na..b A\n", 10, false),
            Err(QueryError::BadLine { line: 2, .. })
        ));
        assert!(QuerySet::parse_list("a A extra\n", 10, false).is_err());
    }

    #[test]
    fn options_and_own_expectations() {
        let name: Name = "a.test.".parse().expect("name");
        let mut set = QuerySet::default();
        set.push(&name, Rtype::A, false);
        assert_eq!(set.expect(0), None);
        let cookie = [0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8];
        set.push_with(&name, Rtype::A, Some(&cookie), Some(Expect::NxDomain));
        set.push(&name, Rtype::A, true);
        assert_eq!(set.len(), 3);
        assert_eq!(set.expect(0), None, "earlier queries keep the tester's");
        assert_eq!(set.expect(1), Some(Expect::NxDomain));
        assert_eq!(set.expect(2), None);
        assert_eq!(set.expect(9), None);
        let q = set.get(1);
        assert_eq!(q[11], 1, "ARCOUNT 1");
        assert!(q.ends_with(&[
            0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 12, 0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8
        ]));
        assert_eq!(set.question(1), set.question(0));
        assert_eq!(
            set.get(2).len(),
            set.get(0).len() + 11,
            "empty OPT as before"
        );
    }

    #[test]
    fn reply_checks() {
        let set =
            QuerySet::parse_list("4.3.2.1.e164.arpa NAPTR\nx.test A\n", 10, false).expect("valid");
        let (q, question) = (set.get(0), set.question(0));
        assert_eq!(
            check_reply(&reply(q, 0, 1), question, Expect::Answer),
            Verdict::Valid
        );
        assert_eq!(
            check_reply(&reply(q, 0, 0), question, Expect::Answer),
            Verdict::WrongAnswer
        );
        assert_eq!(
            check_reply(&reply(q, 0, 0), question, Expect::NoError),
            Verdict::Valid
        );
        assert_eq!(
            check_reply(&reply(q, 3, 0), question, Expect::NxDomain),
            Verdict::Valid
        );
        assert_eq!(
            check_reply(&reply(q, 3, 0), question, Expect::Answer),
            Verdict::WrongAnswer
        );
        assert_eq!(
            check_reply(&reply(q, 5, 0), question, Expect::Refused),
            Verdict::Valid
        );
        assert_eq!(
            check_reply(&reply(q, 2, 0), question, Expect::Any),
            Verdict::Valid
        );
        assert_eq!(
            check_reply(q, question, Expect::Any),
            Verdict::Malformed,
            "QR clear"
        );
        assert_eq!(
            check_reply(&q[..8], question, Expect::Any),
            Verdict::Malformed
        );
        assert_eq!(
            check_reply(&reply(q, 0, 1), set.question(1), Expect::Answer),
            Verdict::WrongQuestion
        );
        assert_eq!(
            check_reply(&reply(q, 0, 1)[..20], question, Expect::Answer),
            Verdict::WrongQuestion
        );
        assert_eq!(message_id(&[0x12, 0x34, 0]), 0x1234);
        assert_eq!(message_id(&[1]), 0);
    }

    #[test]
    fn dns64perf_queries() {
        let net = Ipv4Net::parse("10.0.0.0/24").expect("cidr");
        let set = QuerySet::dns64perf(net, Rtype::A, 1000, false);
        assert_eq!(set.len(), 256);
        let mut names: Vec<&[u8]> = (0..256).map(|i| set.question(i)).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 256);
        assert!(set.question(0).starts_with(b"\x0f010-000-000-"));
        assert!(set
            .question(0)
            .ends_with(b"\x09dns64perf\x04test\x00\x00\x01\x00\x01"));
        assert_eq!(QuerySet::dns64perf(net, Rtype::A, 10, false).len(), 10);
    }
}
