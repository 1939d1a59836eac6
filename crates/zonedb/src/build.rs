//! Building a zone version from records, with the checks of `named-checkzone`
//! and `knotc zone-check`.

use std::fmt;

use lode_wire::{Class, Name, NameRef, Record, Rtype};

use crate::blob::{self, RRsetIn};
use crate::store::{fingerprint, Store, StoreBuilder};
use crate::{ApexFacts, NodeFlags, Zone};

/// No shadowing ancestor.
const NONE: u32 = u32::MAX;

/// An RRset while building (its RDATAs in the builder's arena).
struct PlainSet<'a> {
    rtype: Rtype,
    ttl: u32,
    rdatas: Rdatas<'a>,
}

/// The RDATAs of a set: most sets hold one, kept without a list.
enum Rdatas<'a> {
    One(&'a [u8]),
    Many(Vec<&'a [u8]>),
}

impl<'a> Rdatas<'a> {
    fn as_slice(&self) -> &[&'a [u8]] {
        match self {
            Rdatas::One(r) => std::slice::from_ref(r),
            Rdatas::Many(v) => v,
        }
    }
    fn push(&mut self, rdata: &'a [u8]) {
        let list = match std::mem::replace(self, Rdatas::Many(Vec::new())) {
            Rdatas::One(first) => vec![first, rdata],
            Rdatas::Many(mut v) => {
                v.push(rdata);
                v
            }
        };
        *self = Rdatas::Many(list);
    }
    /// Canonical order, duplicates removed.
    fn normalize(&mut self) {
        if let Rdatas::Many(v) = self {
            v.sort_unstable();
            v.dedup();
        }
    }
}

impl<'a> PlainSet<'a> {
    fn len(&self) -> usize {
        self.rdatas.as_slice().len()
    }
    fn first(&self) -> &'a [u8] {
        self.rdatas.as_slice()[0]
    }
    fn rdatas(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        self.rdatas.as_slice().iter().copied()
    }
}

/// A node while building (its key and owner in the builder's arena).
struct Node<'a> {
    key: &'a [u8],
    owner: NameRef<'a>,
    /// Its RRsets: a range of the builder's one list of sets (no list per node).
    sets: std::ops::Range<u32>,
    flags: NodeFlags,
    /// Index of the topmost strict ancestor that is a cut or owns a DNAME.
    shadow: u32,
}

impl<'a> Node<'a> {
    fn new(key: &'a [u8], owner: NameRef<'a>, at: usize) -> Node<'a> {
        Node {
            key,
            owner,
            sets: at as u32..at as u32,
            flags: NodeFlags::default(),
            shadow: NONE,
        }
    }
    fn rrsets<'s>(&self, sets: &'s [PlainSet<'a>]) -> &'s [PlainSet<'a>] {
        &sets[self.sets.start as usize..self.sets.end as usize]
    }
    fn rrset<'s>(&self, sets: &'s [PlainSet<'a>], rtype: Rtype) -> Option<&'s PlainSet<'a>> {
        self.rrsets(sets).iter().find(|s| s.rtype == rtype)
    }
}

/// How serious a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// The zone is not served.
    Error,
    /// Reported; the zone is served.
    Warning,
}

/// A problem found while building a zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The tag of the record concerned (as given to [`ZoneBuilder::add`]), if one.
    pub tag: Option<u32>,
    /// Error or warning.
    pub severity: Severity,
    /// What is wrong, naming the owner and type.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{s}: {}", self.message)
    }
}

/// Collects records and builds an immutable [`Zone`].
#[derive(Debug)]
pub struct ZoneBuilder {
    origin: Name,
    class: Class,
    /// The records as added, in one arena (see [`Rec`]): no allocation
    /// per record, so that a zone read from text is not held as 10^8
    /// small objects.
    arena: Vec<u8>,
    /// Each record's start in the arena, with its tag (sorted at the
    /// build, in place).
    index: Vec<(u64, u32)>,
    /// The records are a zone that changed through an update: only the
    /// checks that keep the store consistent apply (see [`ZoneBuilder::changed`]).
    changed: bool,
    /// The checkers' extra checks too (see [`ZoneBuilder::strict`]).
    strict: bool,
}

/// A record in the builder's arena, laid out as
/// `[key length][key][owner length][owner, wire form][type][class][TTL][RDATA length][RDATA]`
/// (numbers big-endian; the key is the owner's canonical sort key).
#[derive(Debug, Clone, Copy)]
struct Rec<'a> {
    key: &'a [u8],
    owner: NameRef<'a>,
    rtype: Rtype,
    class: Class,
    ttl: u32,
    rdata: &'a [u8],
}

impl<'a> Rec<'a> {
    /// Appends `record` (its key in `key`) to `arena`.
    fn write(arena: &mut Vec<u8>, record: &Record, key: &[u8]) {
        let owner = record.owner.as_wire();
        // Keys and owners are at most 255 octets; RDATA at most 65535.
        arena.push(key.len() as u8);
        arena.extend_from_slice(key);
        arena.push(owner.len() as u8);
        arena.extend_from_slice(owner);
        arena.extend_from_slice(&record.rtype.0.to_be_bytes());
        arena.extend_from_slice(&record.class.0.to_be_bytes());
        arena.extend_from_slice(&record.ttl.to_be_bytes());
        arena.extend_from_slice(&(record.rdata.len() as u16).to_be_bytes());
        arena.extend_from_slice(&record.rdata);
    }

    /// The key and type of the record at `at` (for sorting: the owner is
    /// not read).
    fn key_and_type(arena: &'a [u8], at: u64) -> (&'a [u8], u16) {
        let p = at as usize;
        let klen = usize::from(arena[p]);
        let key = &arena[p + 1..p + 1 + klen];
        let o = p + 1 + klen;
        let t = o + 1 + usize::from(arena[o]);
        (key, u16::from_be_bytes([arena[t], arena[t + 1]]))
    }

    /// The record at `at` in `arena` (as [`Rec::write`] laid it out).
    fn at(arena: &'a [u8], at: u64) -> Rec<'a> {
        let mut p = at as usize;
        let mut take = |n: usize| {
            let s = &arena[p..p + n];
            p += n;
            s
        };
        let klen = usize::from(take(1)[0]);
        let key = take(klen);
        let olen = usize::from(take(1)[0]);
        let owner = NameRef::from_wire(take(olen)).unwrap_or(NameRef::root());
        let n16 = |b: &[u8]| u16::from_be_bytes([b[0], b[1]]);
        let rtype = Rtype(n16(take(2)));
        let class = Class(n16(take(2)));
        let t = take(4);
        let ttl = u32::from_be_bytes([t[0], t[1], t[2], t[3]]);
        let rdlen = usize::from(n16(take(2)));
        let rdata = take(rdlen);
        Rec {
            key,
            owner,
            rtype,
            class,
            ttl,
            rdata,
        }
    }
}

impl ZoneBuilder {
    /// A builder for the zone at `origin`, class IN.
    pub fn new(origin: Name) -> Self {
        ZoneBuilder {
            origin,
            class: Class::IN,
            arena: Vec::new(),
            index: Vec::new(),
            changed: false,
            strict: false,
        }
    }

    /// Marks the records as a zone changed by an update (RFC 2136, IXFR):
    /// the update processing already decided what may change, as Knot DNS
    /// does without its zone-file semantic checks — missing glue, CNAME
    /// beside other data, data below a DNAME and types Knot does not count
    /// as meta types are then not errors. Structure (apex SOA and NS, owners
    /// inside the zone, one class) is still checked.
    pub fn changed(mut self) -> Self {
        self.changed = true;
        self
    }

    /// Adds the checks that zone checkers (Knot's kzonecheck, BIND's
    /// named-checkzone) make and a server loading the zone does not, as
    /// `lode check` does: a DS digest of the wrong length for its digest
    /// type, a DS at the apex (it belongs in the parent), NS records at a
    /// wildcard (RFC 4592 §4.2).
    pub fn strict(mut self) -> Self {
        self.strict = true;
        self
    }

    /// Sets the zone's class (default IN).
    pub fn class(mut self, class: Class) -> Self {
        self.class = class;
        self
    }

    /// Adds a record; `tag` is echoed in problems about it (e.g. an index of source positions).
    pub fn add(&mut self, record: Record, tag: u32) {
        let mut key = lode_wire::name::KeyBuf::new();
        record.owner.as_ref().write_key(&mut key);
        self.index.push((self.arena.len() as u64, tag));
        Rec::write(&mut self.arena, &record, key.as_slice());
    }

    /// Checks the records and builds the zone. On success returns the zone and
    /// its warnings; on failure every problem found (errors and warnings).
    pub fn build(self) -> Result<(Zone, Vec<Problem>), Vec<Problem>> {
        let mut problems = Vec::new();
        let origin = self.origin;
        let origin_key = origin.key();
        let err = |problems: &mut Vec<Problem>, tag: Option<u32>, message: String| {
            problems.push(Problem {
                tag,
                severity: Severity::Error,
                message,
            })
        };

        // 1. Per-record checks; keep in-zone records with their keys.
        let (arena, mut sorted) = (self.arena, self.index);
        let mut soa_tags = Vec::new();
        let (changed, strict, class) = (self.changed, self.strict, self.class);
        sorted.retain(|&(at, tag)| {
            let r = Rec::at(&arena, at);
            let keep = screen(
                Screened {
                    owner: r.owner,
                    rtype: r.rtype,
                    class: r.class,
                    rdata: r.rdata,
                    tag,
                },
                &origin,
                class,
                changed,
                strict,
                &mut problems,
            );
            if keep && r.rtype == Rtype::SOA {
                soa_tags.push(tag);
            }
            keep
        });
        // Stable: records of one RRset stay in file order (the last TTL wins).
        sorted.sort_by(|a, b| Rec::key_and_type(&arena, a.0).cmp(&Rec::key_and_type(&arena, b.0)));

        // 2. Group into nodes and RRsets, adding empty non-terminals.
        let mut nodes: Vec<Node> = Vec::new();
        let mut sets: Vec<PlainSet> = Vec::with_capacity(sorted.len());
        let mut first_tags: Vec<u32> = Vec::new(); // per node: tag of its first record
        if sorted.first().map(|s| Rec::at(&arena, s.0).key) != Some(&*origin_key) {
            nodes.push(Node::new(&origin_key, origin.as_ref(), 0));
            first_tags.push(u32::MAX);
        }
        for (at, tag) in sorted {
            let s = Rec::at(&arena, at);
            let new_node = nodes.last().map(|n| n.key != s.key).unwrap_or(true);
            if new_node {
                // Empty non-terminals between the previous node and this one.
                let prev = nodes.last().map(|n| n.key).unwrap_or(&[]);
                let mut common = 0;
                for (j, (a, b)) in s.key.iter().zip(prev.iter()).enumerate() {
                    if a != b {
                        break;
                    }
                    if *a == 0 {
                        common = j + 1;
                    }
                }
                let mut labels_at = origin.as_ref().label_count();
                let mut end = 0;
                let mut labels = 0;
                for (j, &b) in s.key.iter().enumerate() {
                    if b != 0 {
                        continue;
                    }
                    end = j + 1;
                    labels += 1;
                    if end > common && end < s.key.len() && labels > labels_at {
                        labels_at = labels;
                        let owner = s.owner.suffix(labels).unwrap_or(NameRef::root());
                        nodes.push(Node::new(&s.key[..end], owner, sets.len()));
                        first_tags.push(tag);
                    }
                }
                debug_assert_eq!(end, s.key.len());
            }
            let (rtype, ttl) = (s.rtype, s.ttl);
            let rdata = s.rdata;
            if new_node {
                nodes.push(Node::new(s.key, s.owner, sets.len()));
                first_tags.push(tag);
            }
            let node = nodes.last_mut().expect("a node was just pushed or matched");
            // The last set is this node's when the node's range reaches it.
            let current = (node.sets.start < node.sets.end)
                .then(|| sets.last_mut())
                .flatten();
            match current {
                Some(set) if set.rtype == rtype => {
                    if set.ttl != ttl && rtype != Rtype::RRSIG {
                        // Knot DNS gives the RRset the TTL of its last record.
                        problems.push(Problem {
                            tag: Some(tag),
                            severity: Severity::Warning,
                            message: format!(
                                "{} {}: TTL {} differs from the RRset's TTL {}; the RRset takes {} (the last one written)",
                                node.owner, rtype, ttl, set.ttl, ttl
                            ),
                        });
                        set.ttl = ttl;
                    }
                    set.rdatas.push(rdata);
                }
                _ => {
                    sets.push(PlainSet {
                        rtype,
                        ttl,
                        rdatas: Rdatas::One(rdata),
                    });
                    node.sets.end = sets.len() as u32;
                }
            }
        }
        // Canonical RDATA order; duplicate records are ignored, as Knot and BIND do.
        for set in sets.iter_mut() {
            set.rdatas.normalize();
        }

        // 3. Apex checks.
        let apex = &nodes[0];
        apex_checks(
            &origin,
            apex.rrset(&sets, Rtype::SOA)
                .map(|s| (s.len(), s.first().len())),
            apex.rrset(&sets, Rtype::NS).is_some(),
            &soa_tags,
            &mut problems,
        );

        // 4. Per-node flags and checks.
        let apex_key_len = nodes[0].key.len();
        let semantic = !self.changed;
        for (i, node) in nodes.iter_mut().enumerate() {
            let tag = Some(first_tags[i]).filter(|t| *t != u32::MAX);
            let is_apex = node.key.len() == apex_key_len;
            let types = node.rrsets(&sets).iter().map(|s| (s.rtype, s.len()));
            node.flags.insert(node_checks(
                node.owner,
                types,
                is_apex,
                semantic,
                tag,
                &mut problems,
            ));
            if node.rrset(&sets, Rtype::NSEC3).is_some()
                && node
                    .rrsets(&sets)
                    .iter()
                    .all(|s| matches!(s.rtype, Rtype::NSEC3 | Rtype::RRSIG))
            {
                node.flags.insert(NodeFlags::NSEC3_ONLY);
            }
        }

        // 5. Shadows (occlusion) and wildcard children, with a stack of ancestors.
        let mut stack: Vec<usize> = Vec::new();
        for i in 0..nodes.len() {
            while let Some(&top) = stack.last() {
                if nodes[i].key.starts_with(nodes[top].key) {
                    break;
                }
                stack.pop();
            }
            let shadow = stack
                .iter()
                .copied()
                .find(|&a| {
                    let f = nodes[a].flags;
                    f.contains(NodeFlags::DNAME) || f.contains(NodeFlags::DELEGATION)
                })
                .map(|a| a as u32)
                .unwrap_or(NONE);
            nodes[i].shadow = shadow;
            // RFC 6672 §2.3: no data below a DNAME (Knot DNS refuses such zones).
            if semantic && !nodes[i].sets.is_empty() {
                let dname = stack
                    .iter()
                    .find(|&&a| nodes[a].flags.contains(NodeFlags::DNAME));
                if let Some(&d) = dname {
                    err(
                        &mut problems,
                        Some(first_tags[i]).filter(|t| *t != u32::MAX),
                        format!(
                            "{}: data below the DNAME at {}",
                            nodes[i].owner, nodes[d].owner
                        ),
                    );
                }
            }
            if nodes[i].owner.is_wildcard() {
                if let Some(&parent) = stack.last() {
                    nodes[parent].flags.insert(NodeFlags::WILDCARD_CHILD);
                }
            }
            stack.push(i);
        }

        // 6. Glue: in-zone NS targets need an address.
        let find = |name: lode_wire::NameRef<'_>| {
            let key = name.key();
            nodes.binary_search_by(|n| (*n.key).cmp(&key)).ok()
        };
        for (i, node) in nodes.iter().enumerate() {
            let Some(ns) = node.rrset(&sets, Rtype::NS).filter(|_| semantic) else {
                continue;
            };
            if node.shadow != NONE {
                continue; // NS below a cut is occluded data, not a delegation
            }
            let addressed = |t: usize| {
                let t = &nodes[t];
                t.rrset(&sets, Rtype::A).is_some() || t.rrset(&sets, Rtype::AAAA).is_some()
            };
            let cut = |e: usize| {
                nodes[e].flags.contains(NodeFlags::DELEGATION) || nodes[e].shadow != NONE
            };
            for rdata in ns.rdatas() {
                let Ok((target, _)) = lode_wire::NameRef::split_from(rdata) else {
                    continue;
                };
                if !target.ends_with(&origin.as_ref()) {
                    continue;
                }
                let has_address = has_address(target, origin.as_ref(), i, find, addressed, cut);
                if !has_address {
                    err(
                        &mut problems,
                        Some(first_tags[i]).filter(|t| *t != u32::MAX),
                        format!(
                            "{} NS: in-zone name server {} has no address (A or AAAA) records (missing glue)",
                            node.owner, target
                        ),
                    );
                }
            }
        }

        if problems.iter().any(|p| p.severity == Severity::Error) {
            return Err(problems);
        }
        // SOA presence and size were checked above.
        let soa = nodes[0].rrset(&sets, Rtype::SOA).expect("checked");
        let rdata = soa.first();
        let fixed = &rdata[rdata.len() - 20..];
        let serial = u32::from_be_bytes([fixed[0], fixed[1], fixed[2], fixed[3]]);
        let minimum = u32::from_be_bytes([fixed[16], fixed[17], fixed[18], fixed[19]]);
        let negative_ttl = soa.ttl.min(minimum);
        let zone = compact(
            origin.clone(),
            self.class,
            nodes,
            &sets,
            serial,
            negative_ttl,
        );
        Ok((zone, problems))
    }
}

/// A record as the per-record checks see it.
pub(crate) struct Screened<'a> {
    pub owner: NameRef<'a>,
    pub rtype: Rtype,
    pub class: Class,
    pub rdata: &'a [u8],
    pub tag: u32,
}

/// The per-record checks (the build's first step): whether the record is
/// kept, its problems pushed.
pub(crate) fn screen(
    record: Screened<'_>,
    origin: &Name,
    class: Class,
    changed: bool,
    strict: bool,
    problems: &mut Vec<Problem>,
) -> bool {
    let Screened {
        owner, rtype, tag, ..
    } = record;
    let mut err = |message: String| {
        problems.push(Problem {
            tag: Some(tag),
            severity: Severity::Error,
            message,
        })
    };
    if !owner.ends_with(&origin.as_ref()) {
        // A zone file's out-of-zone records are ignored with a
        // warning, as Knot DNS and BIND load such files; a changed
        // zone cannot hold one (its change was refused before).
        problems.push(Problem {
            tag: Some(tag),
            severity: if changed {
                Severity::Error
            } else {
                Severity::Warning
            },
            message: format!(
                "{owner} {rtype}: owner is outside the zone {origin}{}",
                if changed { "" } else { ", ignored" }
            ),
        });
        return false;
    }
    if record.class != class {
        err(format!(
            "{owner} {rtype}: class {} differs from the zone's class {class}",
            record.class
        ));
        return false;
    }
    if rtype.is_meta() && (!changed || knot_meta(rtype)) {
        err(format!(
            "{owner} {rtype}: a meta type cannot be stored in a zone"
        ));
        return false;
    }
    if rtype == Rtype::SOA && owner != origin.as_ref() {
        err(format!("{owner} SOA: SOA record outside the zone apex"));
        return false;
    }
    if strict {
        if let Some(message) = strict_record_check(owner, rtype, record.rdata, origin) {
            err(message);
        }
    }
    true
}

/// The apex's checks: its SOA set (`(records, first RDATA's length)`),
/// whether it has NS; `soa_tags` are the SOA records' tags in the order added.
pub(crate) fn apex_checks(
    origin: &Name,
    soa: Option<(usize, usize)>,
    ns: bool,
    soa_tags: &[u32],
    problems: &mut Vec<Problem>,
) {
    let mut err = |tag: Option<u32>, message: String| {
        problems.push(Problem {
            tag,
            severity: Severity::Error,
            message,
        })
    };
    match soa {
        None => err(None, format!("{origin}: no SOA record at the zone apex")),
        Some((n, _)) if n > 1 => err(
            soa_tags.get(1).copied(),
            format!("{origin}: more than one SOA record at the zone apex"),
        ),
        Some((_, len)) if len < 20 => err(
            soa_tags.first().copied(),
            format!("{origin}: malformed SOA RDATA"),
        ),
        _ => {}
    }
    if !ns {
        err(None, format!("{origin}: no NS records at the zone apex"));
    }
}

/// A node's own checks (CNAME and DNAME) given its RRsets' types and sizes
/// (duplicates removed); the DNAME and DELEGATION flags it takes.
pub(crate) fn node_checks(
    owner: NameRef<'_>,
    types: impl Iterator<Item = (Rtype, usize)> + Clone,
    is_apex: bool,
    semantic: bool,
    tag: Option<u32>,
    problems: &mut Vec<Problem>,
) -> NodeFlags {
    let mut flags = NodeFlags::default();
    let mut err = |message: String| {
        problems.push(Problem {
            tag,
            severity: Severity::Error,
            message,
        })
    };
    let find = |t: Rtype| types.clone().find(|s| s.0 == t).map(|s| s.1);
    if let Some(n) = find(Rtype::CNAME) {
        if semantic && n > 1 {
            err(format!("{owner} CNAME: more than one CNAME record"));
        }
        let others = types
            .clone()
            .any(|(t, _)| !matches!(t, Rtype::CNAME | Rtype::RRSIG | Rtype::NSEC | Rtype::KEY));
        if semantic && (others || is_apex) {
            err(format!("{owner} CNAME: CNAME beside other data"));
        }
    }
    if let Some(n) = find(Rtype::DNAME) {
        if semantic && n > 1 {
            err(format!("{owner} DNAME: more than one DNAME record"));
        }
        flags.insert(NodeFlags::DNAME);
    }
    if !is_apex && find(Rtype::NS).is_some() {
        flags.insert(NodeFlags::DELEGATION);
    }
    flags
}

/// Whether the in-zone name server `target` of the NS set at node `this`
/// has an address: its node has A or AAAA, or it is not in the zone and
/// lies below another cut (served by that cut's servers) or under a
/// wildcard with an address. `find` gives a name's node, `cut` whether a
/// node is a delegation or occluded.
pub(crate) fn has_address<I: Copy + PartialEq>(
    target: NameRef<'_>,
    origin: NameRef<'_>,
    this: I,
    find: impl Fn(NameRef<'_>) -> Option<I>,
    addressed: impl Fn(I) -> bool,
    cut: impl Fn(I) -> bool,
) -> bool {
    if let Some(t) = find(target) {
        return addressed(t);
    }
    let top = origin.label_count();
    let encloser = (top..target.label_count())
        .rev()
        .filter_map(|n| Some((n, find(target.suffix(n)?)?)))
        .next();
    encloser.is_some_and(|(n, e)| {
        (e != this && cut(e))
            || target
                .suffix(n)
                .and_then(|enc| enc.to_name().prepend(b"*").ok())
                .and_then(|w| find(w.as_ref()))
                .is_some_and(addressed)
    })
}

/// What a zone checker finds wrong in one record that a loading server
/// lets pass (see [`ZoneBuilder::strict`]).
fn strict_record_check(
    owner: NameRef<'_>,
    rtype: Rtype,
    rdata: &[u8],
    origin: &Name,
) -> Option<String> {
    match rtype {
        Rtype::DS if owner == origin.as_ref() => Some(format!(
            "{owner} DS: a DS record at the zone apex (it belongs in the parent zone)"
        )),
        Rtype::DS | Rtype::CDS => {
            let r = rdata;
            // Key tag (2), algorithm (1), digest type (1), digest.
            let digest_type = *r.get(3)?;
            let want = match digest_type {
                1 => 20, // SHA-1 (RFC 3658)
                2 => 32, // SHA-256 (RFC 4509)
                3 => 32, // GOST R 34.11-94 (RFC 5933)
                4 => 48, // SHA-384 (RFC 6605)
                // Others, and a CDS of type 0 (a delete request, RFC 8078).
                _ => return None,
            };
            let got = r.len() - 4;
            (got != want).then(|| {
                format!(
                    "{owner} {rtype}: a digest of {got} octets, digest type {digest_type} has {want}"
                )
            })
        }
        Rtype::NS if owner.is_wildcard() => Some(format!(
            "{owner} NS: NS records at a wildcard (RFC 4592 §4.2: their meaning is undefined)"
        )),
        _ => None,
    }
}

/// Knot DNS's meta types (the ones an update cannot add): SIG, OPT, TKEY,
/// TSIG, IXFR, AXFR, ANY. The builder's own test is wider (128–255).
pub(crate) fn knot_meta(t: Rtype) -> bool {
    matches!(t.0, 24 | 41 | 249 | 250 | 251 | 252 | 255)
}

/// Serialises the nodes into the compact store.
fn compact(
    origin: Name,
    class: Class,
    nodes: Vec<Node>,
    all_sets: &[PlainSet],
    serial: u32,
    negative_ttl: u32,
) -> Zone {
    let origin_key_len = nodes[0].key.len();
    let mut records = 0u64;
    let mut rrset_count = 0u64;
    // Every node's blob, then the store laid out from them.
    let mut blobs: Vec<u8> = Vec::new();
    let mut ends: Vec<usize> = Vec::with_capacity(nodes.len());
    let mut one = Vec::new();
    let mut implied = lode_wire::NameBuf::new();
    let mut sets: Vec<RRsetIn<'_, &[u8]>> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        sets.clear();
        sets.extend(n.rrsets(all_sets).iter().map(|s| RRsetIn {
            rtype: s.rtype,
            ttl: s.ttl,
            rdatas: s.rdatas.as_slice(),
        }));
        records += n
            .rrsets(all_sets)
            .iter()
            .map(|s| s.len() as u64)
            .sum::<u64>();
        rrset_count += n.sets.len() as u64;
        let shadow_distance = if n.shadow == NONE {
            0
        } else {
            i as u32 - n.shadow
        };
        // The owner is kept only when the key and the origin do not spell it.
        let spelled = implied
            .set_from_key(&n.key[origin_key_len..], origin.as_ref())
            .is_ok()
            && implied.as_ref().as_wire() == n.owner.as_wire();
        let owner = (!spelled).then_some(n.owner);
        blob::encode(&mut one, n.flags, shadow_distance, owner, &sets);
        blobs.extend_from_slice(&one);
        ends.push(blobs.len());
    }
    let entries = nodes.iter().enumerate().map(|(i, n)| {
        let start = if i == 0 { 0 } else { ends[i - 1] };
        (&n.key[origin_key_len..], &blobs[start..ends[i]])
    });
    let store = lay_out(entries, nodes.len());
    let nodes_origin_key: Box<[u8]> = nodes[0].key.into();
    drop(nodes);
    Zone {
        origin,
        class,
        origin_key: nodes_origin_key,
        store: std::sync::Arc::new(store),
        delta: crate::delta::Delta::default(),
        negative_ttl,
        serial,
        records,
        rrsets: rrset_count,
        expired: false,
        expire_at: None,
        apex: ApexFacts::default(),
    }
    .settled()
}

/// Lays out the store of a zone's nodes (`(key relative to the origin,
/// blob)` in canonical order; `count` of them), a blob that occurs more
/// than once stored once.
pub(crate) fn lay_out<'a>(
    entries: impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone,
    count: usize,
) -> Store {
    let mut sb = StoreBuilder::new(repeated(entries.clone().map(|(_, blob)| blob), count));
    for (key, blob) in entries {
        sb.push(key, blob);
    }
    sb.finish()
}

/// The fingerprints of the blobs (`count` of them) that occur more than
/// once: sorting is kinder to caches than a hash table of every blob, most
/// of which are unique.
pub(crate) fn repeated<'a>(blobs: impl Iterator<Item = &'a [u8]>, count: usize) -> Vec<u64> {
    let mut fingerprints: Vec<u64> = Vec::with_capacity(count);
    fingerprints.extend(blobs.map(fingerprint));
    repeats(fingerprints)
}

/// The fingerprints that occur more than once among `fingerprints`.
pub(crate) fn repeats(mut fingerprints: Vec<u64>) -> Vec<u64> {
    fingerprints.sort_unstable();
    let mut repeated: Vec<u64> = fingerprints
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0])
        .collect();
    repeated.dedup();
    repeated
}
