//! The zone checks of [`ZoneBuilder::build`](crate::ZoneBuilder::build) on
//! records given in its order (canonical key, type, the order added), each
//! node encoded by an [`OrderedBuilder`] as soon as the next begins: for
//! [`crate::SortedBuilder`]'s merge.
//!
//! ZoneBuilder finds its problems in steps over all nodes; each step's
//! problems are kept in their own list here, so that they come out in its
//! order: the per-record checks' (made as records are added), TTLs that
//! differ within a set (in record order), the apex's, each node's CNAME and
//! DNAME checks, data below a DNAME (with a stack of the cuts and DNAMEs
//! above), then missing glue. Glue needs names anywhere in the zone: it is
//! checked on the zone built, node by node as ZoneBuilder does, the tags of
//! the nodes to check kept from the merge.

use lode_wire::{Class, Name, NameBuf, NameRef, Rtype};

use crate::build::{apex_checks, has_address, node_checks, Problem, Severity};
use crate::{NodeFlags, NodeId, OrderedBuilder, Zone};

/// A record as the merge gives it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rec<'a> {
    pub key: &'a [u8],
    /// None: the lower-case name `key` spells (spelled out only for a
    /// node's first record).
    pub owner: Option<NameRef<'a>>,
    pub rtype: Rtype,
    pub ttl: u32,
    pub tag: u32,
    pub rdata: &'a [u8],
}

/// An RRset of the node being read: its RDATAs are `rdatas[range]`.
struct Set {
    rtype: Rtype,
    ttl: u32,
    rdatas: std::ops::Range<usize>,
}

/// A cut or DNAME above the nodes to come.
struct Above {
    key: Vec<u8>,
    owner: Name,
    dname: bool,
}

pub(crate) struct Feed {
    origin: Name,
    origin_key: Box<[u8]>,
    b: OrderedBuilder,
    /// The node being read: key, owner (its first record's), first tag.
    key: Vec<u8>,
    owner: NameBuf,
    first_tag: u32,
    sets: Vec<Set>,
    /// RDATA ranges in `data`.
    rdatas: Vec<(usize, usize)>,
    data: Vec<u8>,
    stack: Vec<Above>,
    /// The apex's SOA set (records, first RDATA's length) and NS.
    apex_soa: Option<(usize, usize)>,
    apex_ns: bool,
    ttl_warnings: Vec<Problem>,
    node_problems: Vec<Problem>,
    below_dname: Vec<Problem>,
    /// First tags of the nodes whose NS set the glue check reads, in order.
    glue_tags: Vec<u32>,
    /// Problems of the ordered builder: none expected.
    refused: Vec<Problem>,
}

impl Feed {
    pub(crate) fn new(origin: Name, class: Class) -> Feed {
        Feed {
            origin_key: origin.key(),
            b: OrderedBuilder::new(origin.clone(), class),
            origin,
            key: Vec::new(),
            owner: NameBuf::new(),
            first_tag: u32::MAX,
            sets: Vec::new(),
            rdatas: Vec::new(),
            data: Vec::new(),
            stack: Vec::new(),
            apex_soa: None,
            apex_ns: false,
            ttl_warnings: Vec::new(),
            node_problems: Vec::new(),
            below_dname: Vec::new(),
            glue_tags: Vec::new(),
            refused: Vec::new(),
        }
    }

    /// The next record, in ZoneBuilder's order.
    pub(crate) fn push(&mut self, r: Rec<'_>) {
        if r.key != self.key.as_slice() || self.sets.is_empty() {
            self.close();
            self.key.clear();
            self.key.extend_from_slice(r.key);
            match r.owner {
                Some(owner) => self.owner.set(owner),
                None => {
                    // Written from a key that spelled it: cannot fail.
                    let _ = self.owner.set_from_key(r.key, NameRef::root());
                }
            }
            self.first_tag = r.tag;
        }
        let at = self.data.len();
        self.data.extend_from_slice(r.rdata);
        self.rdatas.push((at, self.data.len()));
        let n = self.rdatas.len();
        match self.sets.last_mut() {
            Some(set) if set.rtype == r.rtype => {
                if set.ttl != r.ttl && r.rtype != Rtype::RRSIG {
                    // Knot DNS gives the RRset the TTL of its last record.
                    self.ttl_warnings.push(Problem {
                        tag: Some(r.tag),
                        severity: Severity::Warning,
                        message: format!(
                            "{} {}: TTL {} differs from the RRset's TTL {}; the RRset takes {} (the last one written)",
                            self.owner.as_ref(), r.rtype, r.ttl, set.ttl, r.ttl
                        ),
                    });
                    set.ttl = r.ttl;
                }
                set.rdatas.end = n;
            }
            _ => self.sets.push(Set {
                rtype: r.rtype,
                ttl: r.ttl,
                rdatas: n - 1..n,
            }),
        }
    }

    /// Checks and writes the node read.
    fn close(&mut self) {
        if self.sets.is_empty() {
            return;
        }
        let data = &self.data;
        let mut sets: Vec<(Rtype, u32, Vec<&[u8]>)> = self
            .sets
            .drain(..)
            .map(|s| {
                let mut v: Vec<&[u8]> = self.rdatas[s.rdatas]
                    .iter()
                    .map(|&(a, b)| &data[a..b])
                    .collect();
                v.sort_unstable();
                v.dedup();
                (s.rtype, s.ttl, v)
            })
            .collect();
        let owner = self.owner.as_ref();
        let is_apex = *self.key == *self.origin_key;
        let tag = Some(self.first_tag).filter(|t| *t != u32::MAX);
        let find = |t: Rtype| sets.iter().find(|s| s.0 == t);
        if is_apex {
            self.apex_soa = find(Rtype::SOA).map(|s| (s.2.len(), s.2[0].len()));
            self.apex_ns = find(Rtype::NS).is_some();
        }
        let types = sets.iter().map(|s| (s.0, s.2.len()));
        let flags = node_checks(owner, types, is_apex, true, tag, &mut self.node_problems);

        // Shadows: the cuts and DNAMEs above.
        while self
            .stack
            .last()
            .is_some_and(|a| !self.key.starts_with(&a.key))
        {
            self.stack.pop();
        }
        if let Some(d) = self.stack.iter().find(|a| a.dname) {
            // RFC 6672 §2.3: no data below a DNAME (Knot DNS refuses such zones).
            self.below_dname.push(Problem {
                tag,
                severity: Severity::Error,
                message: format!("{owner}: data below the DNAME at {}", d.owner),
            });
        }
        let shadowed = !self.stack.is_empty();
        if let Some((_, _, ns)) = find(Rtype::NS) {
            if !shadowed && ns.iter().any(|r| in_zone(r, &self.origin).is_some()) {
                self.glue_tags.push(self.first_tag);
            }
        }
        let dname = flags.contains(NodeFlags::DNAME);
        if dname || flags.contains(NodeFlags::DELEGATION) {
            self.stack.push(Above {
                key: self.key.clone(),
                owner: owner.to_name(),
                dname,
            });
        }

        // The node into the store; an SOA set the apex checks refuse is
        // left out (the zone is not served, only its glue is checked).
        self.b.node_keyed(owner, &self.key);
        for (rtype, ttl, v) in sets.iter_mut() {
            if *rtype == Rtype::SOA && (v.len() > 1 || v[0].len() < 20) {
                continue;
            }
            if let Err(p) = self.b.rrset(*rtype, *ttl, v.iter().copied()) {
                self.refused.push(p);
            }
        }
        self.rdatas.clear();
        self.data.clear();
    }

    /// The zone, or every problem; `early` are the per-record checks'
    /// problems, `soa_tags` the SOA records' tags in the order added.
    pub(crate) fn finish(
        mut self,
        early: Vec<Problem>,
        soa_tags: &[u32],
    ) -> Result<(Zone, Vec<Problem>), Vec<Problem>> {
        self.close();
        let mut problems = early;
        problems.append(&mut self.ttl_warnings);
        apex_checks(
            &self.origin,
            self.apex_soa,
            self.apex_ns,
            soa_tags,
            &mut problems,
        );
        problems.append(&mut self.node_problems);
        problems.append(&mut self.below_dname);
        let zone = self.b.finish_unchecked();
        glue(&zone, &self.origin, &self.glue_tags, &mut problems);
        problems.append(&mut self.refused);
        if problems.iter().any(|p| p.severity == Severity::Error) {
            return Err(problems);
        }
        Ok((zone, problems))
    }
}

/// The target of an NS RDATA, if it is in the zone.
fn in_zone<'a>(rdata: &'a [u8], origin: &Name) -> Option<NameRef<'a>> {
    let (target, _) = NameRef::split_from(rdata).ok()?;
    target.ends_with(&origin.as_ref()).then_some(target)
}

/// Missing glue, as ZoneBuilder finds it: every NS set not occluded, in
/// order, `tags` the first tags of those with an in-zone target.
fn glue(zone: &Zone, origin: &Name, tags: &[u32], problems: &mut Vec<Problem>) {
    let mut tags = tags.iter();
    let addressed = |t: NodeId| {
        let n = zone.node(t);
        n.rrset(Rtype::A).is_some() || n.rrset(Rtype::AAAA).is_some()
    };
    let cut = |e: NodeId| {
        let (flags, shadow) = zone.info(e);
        flags.contains(NodeFlags::DELEGATION) || shadow.is_some()
    };
    let find = |name: NameRef<'_>| zone.find(name);
    for id in zone.node_ids() {
        if zone.info(id).1.is_some() {
            continue;
        }
        let node = zone.node(id);
        let Some(ns) = node.rrset(Rtype::NS) else {
            continue;
        };
        if !ns.rdatas().any(|r| in_zone(r, origin).is_some()) {
            continue;
        }
        let tag = tags.next().copied().filter(|t| *t != u32::MAX);
        for rdata in ns.rdatas() {
            let Some(target) = in_zone(rdata, origin) else {
                continue;
            };
            if !has_address(target, origin.as_ref(), id, find, addressed, cut) {
                problems.push(Problem {
                    tag,
                    severity: Severity::Error,
                    message: format!(
                        "{} NS: in-zone name server {target} has no address (A or AAAA) records (missing glue)",
                        node.owner()
                    ),
                });
            }
        }
    }
}
