//! The fleet on TLD data (`--tld N`): the zone, query files and registry stream of
//! `lode-bench gen tld`, the stream's nsupdate messages read back into UPDATEs,
//! what shows each one on a secondary, and the referral queries it leaves valid.
//!
//! ```text
//!  updates-medium.txt ──parse──▶ StreamUpdate { UPDATE (no ID, no TSIG), witness }
//!     change    (delete X NS, add X NS t…)  ──▶ witness: X NS answered with t (referral)
//!     addition  (add X NS t…, glue, DS)     ──▶ witness: X NS answered with t
//!     deletion  (delete X, its glue)        ──▶ witness: X NS answered NXDOMAIN
//!  queries-referral.txt − names below deleted delegations ──▶ the rate tester's queries
//! ```
//!
//! Every update of the stream touches delegations no other update touches, so
//! an update lost or answered late invalidates none of the later ones, and the
//! order the primary applies them in does not matter.

use std::collections::HashSet;
use std::io::BufRead;
use std::ops::Range;
use std::path::Path;

use lode_wire::name::NameBuf;
use lode_wire::request::{records, Reply};
use lode_wire::{rcode, Class, Name, Record, Rtype};

use super::FleetError;
use crate::gen::tld::{Pace, PACES};
use crate::query::QuerySet;

/// What a registry update does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistryOp {
    /// A delegation's NS set replaced.
    Change,
    /// A delegation added.
    Addition,
    /// A delegation deleted.
    Deletion,
}

/// How a secondary shows that it has an update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Want {
    /// NOERROR with at least one answer record.
    Answer,
    /// NXDOMAIN.
    NxDomain,
    /// NOERROR with an NS record of the queried name whose target is this name
    /// (in the answer or, for a referral, the authority section).
    NsTarget(Name),
}

/// A query and the reply that shows an update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witness {
    /// The name asked for.
    pub name: Name,
    /// The type asked for.
    pub rtype: Rtype,
    /// The reply that shows the update.
    pub want: Want,
}

/// One update of a stream: its message and its witness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamUpdate {
    /// What it does.
    pub op: RegistryOp,
    /// The UPDATE message, ID 0, without TSIG (the sender stamps and signs it).
    pub message: Vec<u8>,
    /// How a secondary shows it.
    pub witness: Witness,
    /// The delegation it deletes (for [`referral_queries`]).
    pub deletes: Option<Name>,
}

/// Whether `reply` shows what `w` waits for (pure: bytes in, verdict out).
pub fn shows(reply: &[u8], w: &Witness) -> bool {
    let Some(h) = Reply::of(reply) else {
        return false;
    };
    match &w.want {
        Want::Answer => h.rcode == 0 && h.ancount > 0,
        Want::NxDomain => u16::from(h.rcode) == rcode::NXDOMAIN,
        Want::NsTarget(target) => {
            h.rcode == 0
                && records(reply, usize::from(h.ancount) + usize::from(h.nscount)).any(|r| {
                    r.rtype == Rtype::NS
                        && name_at(reply, r.owner).is_some_and(|n| n.as_ref() == w.name.as_ref())
                        && name_at(reply, r.rdata.start)
                            .is_some_and(|n| n.as_ref() == target.as_ref())
                })
        }
    }
}

/// The (possibly compressed) name at `pos` of `msg`.
fn name_at(msg: &[u8], pos: usize) -> Option<NameBuf> {
    let mut b = NameBuf::new();
    b.read_compressed(msg, pos).ok()?;
    Some(b)
}

/// What an update's records do and how a secondary shows it: the first NS
/// added names the witness (a change when the same message deletes that NS
/// set, else an addition); without one, the first name deleted whole (a
/// deletion, NXDOMAIN).
pub fn witness(updates: &[Record]) -> Option<(RegistryOp, Witness, Option<Name>)> {
    if let Some(add) = updates
        .iter()
        .find(|r| r.class == Class::IN && r.rtype == Rtype::NS)
    {
        let target = Name::from_wire(&add.rdata).ok()?;
        let replaced = updates
            .iter()
            .any(|r| r.class == Class::ANY && r.rtype == Rtype::NS && r.owner == add.owner);
        let op = if replaced {
            RegistryOp::Change
        } else {
            RegistryOp::Addition
        };
        let w = Witness {
            name: add.owner.clone(),
            rtype: Rtype::NS,
            want: Want::NsTarget(target),
        };
        return Some((op, w, None));
    }
    let gone = updates
        .iter()
        .find(|r| r.class == Class::ANY && r.rtype == Rtype::ANY)?;
    let w = Witness {
        name: gone.owner.clone(),
        rtype: Rtype::NS,
        want: Want::NxDomain,
    };
    Some((RegistryOp::Deletion, w, Some(gone.owner.clone())))
}

/// The reader of the nsupdate subset `lode-bench gen tld` writes: `zone`,
/// `prereq nxdomain|yxdomain|yxrrset`, `update add NAME TTL TYPE DATA`,
/// `update delete NAME [TYPE [DATA]]`, `send`; comments and blank lines.
#[derive(Debug, Default)]
pub struct StreamReader {
    zone: Option<Name>,
    prereqs: Vec<Record>,
    updates: Vec<Record>,
    first_line: u64,
}

impl StreamReader {
    /// Takes line `number` (1-based); returns the update a `send` completes.
    pub fn line(&mut self, text: &str, number: u64) -> Result<Option<StreamUpdate>, String> {
        let t = text.trim();
        if t.is_empty() || t.starts_with(';') || t.starts_with('#') {
            return Ok(None);
        }
        let bad = |m: String| format!("line {number}: {m}");
        let mut words = t.split_whitespace();
        let cmd = words.next().unwrap_or_default();
        let name = |w: Option<&str>| -> Result<Name, String> {
            let w = w.ok_or_else(|| bad("a name is missing".into()))?;
            Name::parse(w, Some(&Name::root())).map_err(|e| bad(format!("{w}: {e}")))
        };
        let rtype = |w: Option<&str>| -> Result<Rtype, String> {
            let w = w.ok_or_else(|| bad("a type is missing".into()))?;
            Rtype::from_mnemonic(&w.to_ascii_uppercase()).ok_or_else(|| bad(format!("type {w}")))
        };
        let rr = |owner: Name, class: Class, rtype: Rtype, ttl: u32, rdata: Vec<u8>| Record {
            owner,
            class,
            rtype,
            ttl,
            rdata: rdata.into(),
        };
        if self.prereqs.is_empty() && self.updates.is_empty() {
            self.first_line = number;
        }
        match cmd {
            "zone" => {
                if !self.updates.is_empty() || !self.prereqs.is_empty() {
                    return Err(bad("`zone` inside a message".into()));
                }
                self.zone = Some(name(words.next())?);
            }
            "prereq" => {
                let kind = words.next().unwrap_or_default();
                let owner = name(words.next())?;
                let r = match kind {
                    "nxdomain" => rr(owner, Class::NONE, Rtype::ANY, 0, Vec::new()),
                    "yxdomain" => rr(owner, Class::ANY, Rtype::ANY, 0, Vec::new()),
                    "yxrrset" => rr(owner, Class::ANY, rtype(words.next())?, 0, Vec::new()),
                    k => return Err(bad(format!("prereq {k:?}: nxdomain, yxdomain or yxrrset"))),
                };
                self.prereqs.push(r);
            }
            "update" => {
                let op = words.next().unwrap_or_default();
                let owner = name(words.next())?;
                let r = match op {
                    "add" => {
                        let ttl = words
                            .next()
                            .and_then(|w| w.parse::<u32>().ok())
                            .ok_or_else(|| bad("update add NAME TTL TYPE DATA".into()))?;
                        let rtype = rtype(words.next())?;
                        let data = words.collect::<Vec<_>>().join(" ");
                        let rdata = lode_zonefile::parse_rdata(rtype, &data, &Name::root())
                            .map_err(|e| bad(format!("{rtype}: {e}")))?;
                        rr(owner, Class::IN, rtype, ttl, rdata)
                    }
                    "delete" | "del" => match words.next() {
                        None => rr(owner, Class::ANY, Rtype::ANY, 0, Vec::new()),
                        Some(t) => {
                            let rtype = rtype(Some(t))?;
                            let data = words.collect::<Vec<_>>().join(" ");
                            if data.is_empty() {
                                rr(owner, Class::ANY, rtype, 0, Vec::new())
                            } else {
                                let rdata = lode_zonefile::parse_rdata(rtype, &data, &Name::root())
                                    .map_err(|e| bad(format!("{rtype}: {e}")))?;
                                rr(owner, Class::NONE, rtype, 0, rdata)
                            }
                        }
                    },
                    o => return Err(bad(format!("update {o:?}: add or delete"))),
                };
                self.updates.push(r);
            }
            "send" => {
                let zone = self
                    .zone
                    .clone()
                    .ok_or_else(|| bad("`send` before any `zone`".into()))?;
                let (op, witness, deletes) = witness(&self.updates).ok_or_else(|| {
                    format!(
                        "lines {}-{number}: the message neither adds an NS set nor deletes a name",
                        self.first_line
                    )
                })?;
                let message = lode_wire::request::update(0, &zone, &self.prereqs, &self.updates);
                self.prereqs.clear();
                self.updates.clear();
                return Ok(Some(StreamUpdate {
                    op,
                    message,
                    witness,
                    deletes,
                }));
            }
            c => return Err(bad(format!("`{c}`: not a command of the stream"))),
        }
        Ok(None)
    }
}

/// Reads the first `limit` updates of the stream file `path`.
pub fn read_stream(path: &Path, limit: usize) -> Result<Vec<StreamUpdate>, FleetError> {
    let file = std::fs::File::open(path).map_err(|e| FleetError::io(path, e))?;
    let mut r = std::io::BufReader::with_capacity(1 << 20, file);
    let mut reader = StreamReader::default();
    let mut out = Vec::new();
    let mut line = String::new();
    let mut number = 0u64;
    while out.len() < limit {
        line.clear();
        number += 1;
        if r.read_line(&mut line)
            .map_err(|e| FleetError::io(path, e))?
            == 0
        {
            break;
        }
        if let Some(u) = reader
            .line(&line, number)
            .map_err(|e| FleetError::Config(format!("{}: {e}", path.display())))?
        {
            out.push(u);
        }
    }
    if out.is_empty() {
        return Err(FleetError::Config(format!(
            "{}: no update in the stream",
            path.display()
        )));
    }
    Ok(out)
}

/// Whether a query for `name` stays a referral while the stream runs: not
/// at or below a delegation in `deleted` (keys lower-cased); `zone_labels`
/// is the apex's label count.
pub fn keeps_referral(name: &Name, zone_labels: usize, deleted: &HashSet<Name>) -> bool {
    match name.as_ref().suffix(zone_labels + 1) {
        Some(d) => !deleted.contains(&d.to_name()),
        None => true,
    }
}

/// The referral queries of the query file `path` (dnsperf `name TYPE`), at most
/// `limit`, without those for delegations the stream deletes.
pub fn referral_queries(
    path: &Path,
    zone: &Name,
    stream: &[StreamUpdate],
    limit: usize,
) -> Result<QuerySet, FleetError> {
    let deleted: HashSet<Name> = stream.iter().filter_map(|u| u.deletes.clone()).collect();
    let labels = zone.as_ref().label_count();
    let file = std::fs::File::open(path).map_err(|e| FleetError::io(path, e))?;
    let r = std::io::BufReader::with_capacity(1 << 20, file);
    let mut set = QuerySet::default();
    for (k, line) in r.lines().enumerate() {
        if set.len() >= limit {
            break;
        }
        let line = line.map_err(|e| FleetError::io(path, e))?;
        let mut words = line.split_whitespace();
        let (Some(n), Some(t)) = (words.next(), words.next()) else {
            continue;
        };
        let bad = |m: String| FleetError::Config(format!("{}:{}: {m}", path.display(), k + 1));
        let name = Name::parse(n, Some(&Name::root())).map_err(|e| bad(format!("{n}: {e}")))?;
        let rtype = Rtype::from_mnemonic(t).ok_or_else(|| bad(format!("type {t}")))?;
        if keeps_referral(&name, labels, &deleted) {
            set.push(&name, rtype, false);
        }
    }
    if set.is_empty() {
        return Err(FleetError::Config(format!(
            "{}: no referral query left",
            path.display()
        )));
    }
    Ok(set)
}

/// Which part of the stream goes next: each run takes the updates after
/// the previous run's, so that every update is sent once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    next: usize,
    len: usize,
}

impl Cursor {
    /// A cursor at the start of a stream of `len` updates.
    pub fn new(len: usize) -> Cursor {
        Cursor { next: 0, len }
    }

    /// Updates not handed out yet.
    pub fn left(&self) -> usize {
        self.len - self.next
    }

    /// The next `want` updates (fewer at the end of the stream).
    pub fn take(&mut self, want: u64) -> Range<usize> {
        let n = usize::try_from(want).unwrap_or(usize::MAX).min(self.left());
        let r = self.next..self.next + n;
        self.next += n;
        r
    }
}

/// Updates the stream needs (`updates` per propagation run; per ixfr-load cell,
/// twice what its search lasts at its rate, and [`FULL_SPEED_GUESS`] per second
/// for full speed), bounded by what a zone of `delegations` allows (every change
/// and deletion takes a distinct delegation) and [`MAX_STREAM`].
pub fn stream_length(delegations: u64, need: f64) -> u64 {
    let most = 3 * (delegations / 2);
    (need.ceil().max(1.0) as u64).min(most).min(MAX_STREAM)
}

/// Updates per second assumed of a primary at full speed, to size the stream.
pub const FULL_SPEED_GUESS: f64 = 5_000.0;
/// The longest stream generated (its messages are held in memory).
pub const MAX_STREAM: u64 = 1_000_000;

/// Updates for an ixfr-load cell at `rate` whose search lasts `secs`: twice
/// the estimate when paced; at full speed, the stream left after the later
/// paced cells' shares (`reserved`), split among the full-speed cells left.
pub fn cell_updates(rate: f64, secs: f64, left: usize, reserved: u64, full_left: usize) -> u64 {
    if rate.is_infinite() {
        let free = (left as u64).saturating_sub(reserved);
        free / full_left.max(1) as u64
    } else {
        (rate * 2.0 * secs).ceil() as u64 + 1
    }
}

/// Updates for ixfr-load cell `k` of `cells` (each cell's rate, in the order
/// they run; 0 = static, infinite = full speed) whose searches last `secs`,
/// with `left` updates of the stream not handed out yet.
pub fn cell_share(cells: &[f64], k: usize, secs: f64, left: usize) -> u64 {
    let Some(&rate) = cells.get(k) else {
        return 0;
    };
    if rate <= 0.0 {
        return 0;
    }
    let later = &cells[k + 1..];
    let reserved = later
        .iter()
        .filter(|r| r.is_finite() && **r > 0.0)
        .map(|&r| cell_updates(r, secs, 0, 0, 0))
        .sum();
    let full_left = cells[k..].iter().filter(|r| r.is_infinite()).count();
    cell_updates(rate, secs, left, reserved, full_left).min(left as u64)
}

/// The rate of `s`: a number (updates/s), `full` (as fast as the primary
/// acknowledges: infinity), or with `delegations` of a TLD zone, the name of a
/// pace of [`PACES`] (`low`, `medium`: that share of the zone a day).
pub fn parse_rate(s: &str, delegations: Option<u64>) -> Result<f64, String> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("full") || s.eq_ignore_ascii_case("max") {
        return Ok(f64::INFINITY);
    }
    if let Some(p) = PACES.iter().find(|p| p.name.eq_ignore_ascii_case(s)) {
        return match delegations {
            Some(d) => Ok(p.updates_per_second(d)),
            None => Err(format!("rate {s:?}: a pace of the TLD zone, needs --tld")),
        };
    }
    match s.parse::<f64>() {
        Ok(r) if r.is_finite() && r >= 0.0 => Ok(r),
        _ => Err(format!(
            "rate {s:?}: updates/s, `full`, or with --tld `low` or `medium`"
        )),
    }
}

/// How a rate reads in the tables: `full`, `medium (0.347/s)`, or the number.
pub fn rate_label(rate: f64, delegations: Option<u64>) -> String {
    if rate.is_infinite() {
        return "full".into();
    }
    let pace: Option<&Pace> =
        delegations.and_then(|d| PACES.iter().find(|p| p.updates_per_second(d) == rate));
    match pace {
        Some(p) => format!("{} ({rate:.4}/s)", p.name),
        None => format!("{rate}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Name {
        Name::parse(s, Some(&Name::root())).expect("name")
    }

    fn read(text: &str) -> Result<Vec<StreamUpdate>, String> {
        let mut r = StreamReader::default();
        let mut out = Vec::new();
        for (i, l) in text.lines().enumerate() {
            if let Some(u) = r.line(l, i as u64 + 1)? {
                out.push(u);
            }
        }
        Ok(out)
    }

    const STREAM: &str = "; header\nzone com.\n\
        update delete abcd.com. NS\n\
        update add abcd.com. 172800 NS ns1.prov.net.\n\
        update add abcd.com. 172800 NS ns2.prov.net.\n\
        update delete ns1.abcd.com.\n\
        send\n\
        update add newx.com. 172800 NS ns1.newx.com.\n\
        update add ns1.newx.com. 172800 A 198.18.0.1\n\
        update add newx.com. 86400 DS 12345 13 2 \
        0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n\
        send\n\
        prereq yxdomain gone.com.\n\
        update delete gone.com.\n\
        send\n";

    #[test]
    fn the_stream_reads_back_with_its_witnesses() {
        let s = read(STREAM).expect("stream");
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].op, RegistryOp::Change);
        assert_eq!(
            s[0].witness,
            Witness {
                name: n("abcd.com."),
                rtype: Rtype::NS,
                want: Want::NsTarget(n("ns1.prov.net."))
            }
        );
        let h = Reply::of(&{
            let mut m = s[0].message.clone();
            m[2] |= 0x80;
            m
        })
        .expect("header");
        assert_eq!((h.qdcount, h.ancount, h.nscount), (1, 0, 4));
        assert_eq!(s[1].op, RegistryOp::Addition);
        assert_eq!(s[1].witness.want, Want::NsTarget(n("ns1.newx.com.")));
        assert_eq!(s[1].deletes, None);
        assert_eq!(s[2].op, RegistryOp::Deletion);
        assert_eq!(s[2].witness.want, Want::NxDomain);
        assert_eq!(s[2].deletes, Some(n("gone.com.")));
        // One prerequisite in the last message.
        assert_eq!(u16::from_be_bytes([s[2].message[6], s[2].message[7]]), 1);
    }

    #[test]
    fn bad_lines_are_named() {
        let e = read("zone com.\nupdate add x.com. NS a.net.\nsend\n").unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
        assert!(read("update delete x.com.\nsend\n")
            .unwrap_err()
            .contains("before any `zone`"));
        let e = read("zone com.\nupdate add x.com. 60 A 192.0.2.1\nsend\n").unwrap_err();
        assert!(e.contains("lines 2-3"), "{e}");
        assert!(read("zone com.\nfrobnicate\n").is_err());
    }

    /// A reply to `q NS` with the given authority NS records (compressed owners).
    fn referral(q: &str, rcode: u8, ns: &[&str]) -> Vec<u8> {
        let mut m = lode_wire::request::query(7, &n(q), Rtype::NS);
        m[2] |= 0x80;
        m[3] |= rcode;
        m[8..10].copy_from_slice(&(ns.len() as u16).to_be_bytes());
        for t in ns {
            m.extend_from_slice(&[0xC0, 12]);
            m.extend_from_slice(&Rtype::NS.0.to_be_bytes());
            m.extend_from_slice(&[0, 1, 0, 2, 0xA3, 0]);
            let w = n(t);
            m.extend_from_slice(&(w.as_wire().len() as u16).to_be_bytes());
            m.extend_from_slice(w.as_wire());
        }
        m
    }

    #[test]
    fn a_reply_shows_the_update_or_not() {
        let w = Witness {
            name: n("abcd.com."),
            rtype: Rtype::NS,
            want: Want::NsTarget(n("ns1.prov.net.")),
        };
        assert!(shows(
            &referral("abcd.com.", 0, &["ns2.prov.net.", "NS1.Prov.net."]),
            &w
        ));
        assert!(!shows(&referral("abcd.com.", 0, &["ns1.old.org."]), &w));
        assert!(!shows(&referral("abcd.com.", 3, &[]), &w));
        // Truncated records show nothing.
        let r = referral("abcd.com.", 0, &["ns1.prov.net."]);
        assert!(!shows(&r[..r.len() - 3], &w));
        let gone = Witness {
            want: Want::NxDomain,
            ..w.clone()
        };
        assert!(shows(&referral("abcd.com.", 3, &[]), &gone));
        assert!(!shows(&referral("abcd.com.", 0, &["ns1.old.org."]), &gone));
        let answer = Witness {
            want: Want::Answer,
            ..w
        };
        assert!(!shows(&referral("abcd.com.", 0, &["x.net."]), &answer));
        assert!(!shows(b"short", &answer));
    }

    #[test]
    fn referrals_below_deleted_delegations_are_dropped() {
        let deleted: HashSet<Name> = [n("gone.com.")].into_iter().collect();
        assert!(!keeps_referral(&n("www.GONE.com."), 1, &deleted));
        assert!(!keeps_referral(&n("gone.com."), 1, &deleted));
        assert!(keeps_referral(&n("www.kept.com."), 1, &deleted));
        assert!(keeps_referral(&n("com."), 1, &deleted));
        assert!(!keeps_referral(
            &n("a.gone.co.uk."),
            2,
            &[n("gone.co.uk.")].into_iter().collect()
        ));
    }

    #[test]
    fn a_generated_stream_reads_back_whole() {
        let dir = crate::gen::Scratch::new("fleet-registry");
        let mut spec = crate::gen::tld::TldSpec::new("com", 2_000);
        spec.queries = 500;
        spec.updates = 300;
        spec.glue_share = 0.2;
        spec.prereqs = true;
        spec.threads = Some(2);
        let s = crate::gen::tld::generate(&spec, &dir.0).expect("generate");
        let stream = read_stream(&s.update_files[1], usize::MAX).expect("stream");
        assert_eq!(stream.len(), 300);
        let zone = std::fs::read_to_string(&s.zone_file).expect("zone");
        let in_zone = |w: &Witness| {
            let label = w.name.to_string();
            let label = label.split('.').next().unwrap_or_default().to_string();
            zone.lines().any(|l| l.starts_with(&format!("{label} ")))
        };
        let mut ops = [0; 3];
        for u in &stream {
            ops[u.op as usize] += 1;
            // Changes and deletions are of delegations in the zone, additions of new ones.
            assert_eq!(in_zone(&u.witness), u.op != RegistryOp::Addition, "{u:?}");
            assert_eq!(u.deletes.is_some(), u.op == RegistryOp::Deletion);
        }
        assert_eq!(ops, [100, 100, 100]);
        // 100 of the 2,000 delegations deleted: about 5 % of the referrals dropped.
        let apex = n("com.");
        let q = referral_queries(&s.query_files[0], &apex, &stream, 10_000).expect("queries");
        let all = referral_queries(&s.query_files[0], &apex, &[], 10_000).expect("queries");
        assert_eq!(all.len(), 500);
        assert!(q.len() < all.len() && q.len() > 400, "{} of 500", q.len());
        assert_eq!(
            referral_queries(&s.query_files[0], &apex, &[], 7)
                .expect("queries")
                .len(),
            7
        );
    }

    #[test]
    fn the_cursor_hands_out_each_update_once() {
        let mut c = Cursor::new(10);
        assert_eq!(c.take(4), 0..4);
        assert_eq!(c.take(4), 4..8);
        assert_eq!(c.take(4), 8..10);
        assert_eq!(c.take(4), 10..10);
        assert_eq!(c.left(), 0);
    }

    #[test]
    fn stream_sizes_and_shares() {
        // 20,000 delegations: at most 30,000 updates (10,000 changes and deletions each).
        assert_eq!(stream_length(20_000, 1e9), 30_000);
        assert_eq!(stream_length(20_000, 99.2), 100);
        assert_eq!(stream_length(u64::MAX / 4, 1e12), MAX_STREAM);
        assert_eq!(stream_length(10, 0.0), 1);
        // Paced: twice the search at the rate, plus one.
        assert_eq!(cell_updates(10.0, 30.0, 1000, 0, 0), 601);
        // Full speed: what the later paced cells leave, split.
        assert_eq!(cell_updates(f64::INFINITY, 30.0, 1000, 200, 2), 400);
        assert_eq!(cell_updates(f64::INFINITY, 30.0, 100, 200, 1), 0);
    }

    #[test]
    fn cells_share_the_stream() {
        let inf = f64::INFINITY;
        // Two secondaries: static, 10/s, full speed; searches of 30 s.
        let cells = [0.0, 0.0, 10.0, 10.0, inf, inf];
        assert_eq!(cell_share(&cells, 0, 30.0, 5000), 0);
        // 10/s: 601 each; the full-speed cells split what is left.
        assert_eq!(cell_share(&cells, 2, 30.0, 5000), 601);
        assert_eq!(cell_share(&cells, 4, 30.0, 5000 - 1202), (5000 - 1202) / 2);
        assert_eq!(cell_share(&cells, 5, 30.0, 1899), 1899);
        // A full-speed cell before a paced one leaves it its share.
        assert_eq!(cell_share(&[inf, 10.0], 0, 30.0, 1000), 399);
        // Never more than is left.
        assert_eq!(cell_share(&[10.0], 0, 30.0, 100), 100);
        assert_eq!(cell_share(&[10.0], 3, 30.0, 100), 0);
    }

    #[test]
    fn rates_parse_and_read() {
        let medium = PACES[1].updates_per_second(1_000_000);
        assert_eq!(parse_rate("medium", Some(1_000_000)), Ok(medium));
        assert!((medium - 0.3472).abs() < 1e-3);
        assert!(parse_rate("medium", None).is_err());
        assert_eq!(parse_rate("full", None), Ok(f64::INFINITY));
        assert_eq!(parse_rate(" 32 ", None), Ok(32.0));
        assert_eq!(parse_rate("0", None), Ok(0.0));
        assert!(parse_rate("-1", None).is_err());
        assert!(parse_rate("inf", None).is_err());
        assert_eq!(rate_label(f64::INFINITY, None), "full");
        assert_eq!(rate_label(medium, Some(1_000_000)), "medium (0.3472/s)");
        assert_eq!(rate_label(32.0, Some(1_000_000)), "32");
    }
}
