//! Prerequisites and updates applied to a working copy of the names an
//! UPDATE touches, then the difference as a [`Changeset`].

use std::collections::BTreeMap;

use lode_wire::{rcode, Class, Name, NameRef, Record, Rtype};
use lode_zonedb::{soa_serial, Changeset, Lookup, Zone};

use super::parse::canonical_rdata;
use super::{serial_cmp, SerialOrder, SerialPolicy, UpdateError, UpdateRequest};

/// Knot's meta types (`knot_rrtype_is_metatype`).
fn is_meta(t: Rtype) -> bool {
    matches!(
        t,
        Rtype::SIG
            | Rtype::OPT
            | Rtype::TKEY
            | Rtype::TSIG
            | Rtype::IXFR
            | Rtype::AXFR
            | Rtype::ANY
    )
}

/// One RRset of a working node.
#[derive(Debug, Clone)]
struct Set {
    rtype: Rtype,
    ttl: u32,
    rdatas: Vec<Box<[u8]>>,
}

impl Set {
    /// The position of the RDATA equal to `rdata` in canonical form.
    fn position(&self, rdata: &[u8]) -> Option<usize> {
        let want = canonical_rdata(self.rtype, rdata);
        self.rdatas
            .iter()
            .position(|r| canonical_rdata(self.rtype, r) == want)
    }
    /// The RDATAs in canonical form, sorted, without duplicates.
    fn canonical(&self) -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = self
            .rdatas
            .iter()
            .map(|r| canonical_rdata(self.rtype, r).into_owned())
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

/// A name of the zone as the update has left it so far.
#[derive(Debug)]
struct WorkNode {
    owner: Name,
    /// The records the zone had: (type, TTL, RDATA as stored).
    orig: Vec<(Rtype, u32, Box<[u8]>)>,
    /// The RRsets now, sorted by type.
    sets: Vec<Set>,
}

impl WorkNode {
    fn set(&self, t: Rtype) -> Option<&Set> {
        self.sets.iter().find(|s| s.rtype == t)
    }
    fn has(&self, t: Rtype) -> bool {
        self.set(t).is_some()
    }
    fn remove_set(&mut self, t: Rtype) {
        self.sets.retain(|s| s.rtype != t);
    }
    /// Adds one record; the RRset takes the record's TTL (Knot: "TTL
    /// mismatch ... TTL set to").
    fn add(&mut self, rr: &Record) {
        match self.sets.iter_mut().find(|s| s.rtype == rr.rtype) {
            Some(s) => {
                s.ttl = rr.ttl;
                s.rdatas.push(rr.rdata.clone());
            }
            None => {
                let at = self.sets.partition_point(|s| s.rtype < rr.rtype);
                self.sets.insert(
                    at,
                    Set {
                        rtype: rr.rtype,
                        ttl: rr.ttl,
                        rdatas: vec![rr.rdata.clone()],
                    },
                );
            }
        }
    }
    /// The records now: (type, TTL, RDATA).
    fn current(&self) -> Vec<(Rtype, u32, Box<[u8]>)> {
        let mut v: Vec<_> = self
            .sets
            .iter()
            .flat_map(|s| s.rdatas.iter().map(move |r| (s.rtype, s.ttl, r.clone())))
            .collect();
        v.sort();
        v
    }
}

/// The zone seen through the update's changes so far.
struct Work<'z> {
    zone: &'z Zone,
    /// Touched names by canonical key (so in canonical order).
    nodes: BTreeMap<Box<[u8]>, WorkNode>,
}

impl<'z> Work<'z> {
    fn new(zone: &'z Zone) -> Self {
        Work {
            zone,
            nodes: BTreeMap::new(),
        }
    }

    /// The working node of `owner`, read from the zone on first use (empty
    /// when the name does not exist).
    fn node(&mut self, owner: NameRef<'_>) -> &mut WorkNode {
        let zone = self.zone;
        self.nodes.entry(owner.key()).or_insert_with(|| {
            let Some(id) = zone.find(owner) else {
                return WorkNode {
                    owner: owner.to_name(),
                    orig: Vec::new(),
                    sets: Vec::new(),
                };
            };
            let node = zone.node(id);
            let sets: Vec<Set> = node
                .rrsets()
                .map(|s| Set {
                    rtype: s.rtype(),
                    ttl: s.ttl(),
                    rdatas: s.rdatas().map(Box::from).collect(),
                })
                .collect();
            let mut orig: Vec<_> = sets
                .iter()
                .flat_map(|s| s.rdatas.iter().map(move |r| (s.rtype, s.ttl, r.clone())))
                .collect();
            orig.sort();
            WorkNode {
                owner: node.owner().to_name(),
                orig,
                sets,
            }
        })
    }

    /// True if `owner` holds an RRset of `rtype` now: its working node when
    /// the update touched it, else the zone (no working node made for a
    /// name only looked at, such as each ancestor of an added name).
    fn has_type(&self, owner: NameRef<'_>, rtype: Rtype) -> bool {
        let mut key = lode_wire::name::KeyBuf::new();
        owner.write_key(&mut key);
        match self.nodes.get(key.as_slice()) {
            Some(n) => n.has(rtype),
            None => self
                .zone
                .find(owner)
                .is_some_and(|id| self.zone.node(id).rrset(rtype).is_some()),
        }
    }

    /// True if some name strictly below `owner` holds data now.
    fn has_descendants(&mut self, owner: NameRef<'_>) -> bool {
        let key = owner.key();
        let below = |k: &[u8]| k.len() > key.len() && k.starts_with(&key);
        if self
            .nodes
            .range(key.clone()..)
            .take_while(|(k, _)| k.starts_with(&key))
            .any(|(k, n)| below(k) && !n.sets.is_empty())
        {
            return true;
        }
        let zone = self.zone;
        let start = match zone.lookup(owner) {
            Lookup::Found(id) => id,
            Lookup::NotFound { predecessor, .. } => predecessor,
        };
        zone.node_ids_after(start)
            .map(|id| zone.node(id))
            .take_while(|n| n.owner().is_strictly_below(&owner))
            .any(|n| !self.nodes.contains_key(&n.owner().key()) && !n.is_empty_nonterminal())
    }
}

fn formerr(reason: impl Into<String>) -> UpdateError {
    UpdateError::update(rcode::FORMERR, reason)
}

/// RFC 2136 §3.2, as Knot's `ddns_process_prereqs`.
fn prerequisites(w: &mut Work<'_>, req: &UpdateRequest) -> Result<(), UpdateError> {
    let origin = w.zone.origin().to_name();
    // Value-dependent prerequisites, merged per owner and type.
    let mut sets: Vec<(Name, Rtype, Vec<Vec<u8>>)> = Vec::new();
    for rr in &req.prerequisites {
        let what = || format!("prerequisite {} {} {}", rr.owner, rr.class, rr.rtype);
        if rr.ttl != 0 {
            return Err(formerr(format!("{}: TTL is not 0", what())));
        }
        if !rr.owner.as_ref().ends_with(&origin.as_ref()) {
            return Err(UpdateError::update(
                rcode::NOTZONE,
                format!("{}: outside the zone", what()),
            ));
        }
        match rr.class {
            Class::ANY | Class::NONE if !rr.rdata.is_empty() => {
                return Err(formerr(format!("{}: RDATA is not empty", what())))
            }
            Class::ANY => {
                let node = w.node(rr.owner.as_ref());
                if rr.rtype == Rtype::ANY {
                    if node.sets.is_empty() {
                        return Err(UpdateError::update(
                            rcode::NXDOMAIN,
                            format!("{}: name not in use", what()),
                        ));
                    }
                } else if !node.has(rr.rtype) {
                    return Err(UpdateError::update(
                        rcode::NXRRSET,
                        format!("{}: RRset does not exist", what()),
                    ));
                }
            }
            Class::NONE => {
                let node = w.node(rr.owner.as_ref());
                if rr.rtype == Rtype::ANY {
                    if !node.sets.is_empty() {
                        return Err(UpdateError::update(
                            rcode::YXDOMAIN,
                            format!("{}: name in use", what()),
                        ));
                    }
                } else if node.has(rr.rtype) {
                    return Err(UpdateError::update(
                        rcode::YXRRSET,
                        format!("{}: RRset exists", what()),
                    ));
                }
            }
            c if c == req.zone_class => {
                let rd = canonical_rdata(rr.rtype, &rr.rdata).into_owned();
                match sets
                    .iter_mut()
                    .find(|(o, t, _)| *t == rr.rtype && o == &rr.owner)
                {
                    Some((_, _, v)) => {
                        if !v.contains(&rd) {
                            v.push(rd);
                        }
                    }
                    None => sets.push((rr.owner.clone(), rr.rtype, vec![rd])),
                }
            }
            _ => return Err(formerr(format!("{}: bad class", what()))),
        }
    }
    for (owner, rtype, mut rdatas) in sets {
        rdatas.sort();
        let node = w.node(owner.as_ref());
        if node.set(rtype).map(Set::canonical) != Some(rdatas) {
            return Err(UpdateError::update(
                rcode::NXRRSET,
                format!("prerequisite {owner} {rtype}: the RRset differs"),
            ));
        }
    }
    Ok(())
}

/// RFC 2136 §3.4.1, as Knot's `check_update`.
fn check_update(rr: &Record, req: &UpdateRequest) -> Result<(), UpdateError> {
    let what = || format!("update {} {} {}", rr.owner, rr.class, rr.rtype);
    if !rr.owner.as_ref().ends_with(&req.zone.as_ref()) {
        return Err(UpdateError::update(
            rcode::NOTZONE,
            format!("{}: outside the zone", what()),
        ));
    }
    let bad = if rr.class == req.zone_class {
        is_meta(rr.rtype)
    } else if rr.class == Class::ANY {
        !rr.rdata.is_empty() || (is_meta(rr.rtype) && rr.rtype != Rtype::ANY)
    } else if rr.class == Class::NONE {
        rr.ttl != 0 || is_meta(rr.rtype)
    } else {
        true
    };
    if bad {
        return Err(formerr(format!(
            "{}: class, type, TTL or RDATA not allowed",
            what()
        )));
    }
    Ok(())
}

/// SOA deletions, and SOA additions whose serial is not greater than the
/// zone's before the update, are ignored (Knot's `skip_soa`).
fn skip_soa(rr: &Record, serial_before: u32) -> bool {
    rr.rtype == Rtype::SOA
        && (rr.class == Class::NONE
            || rr.class == Class::ANY
            || serial_cmp(soa_serial(rr), serial_before) != SerialOrder::Greater)
}

/// Applies one addition (Knot's `process_add` and `sem_check`).
fn add(w: &mut Work<'_>, rr: &Record) -> Result<(), UpdateError> {
    let node = w.node(rr.owner.as_ref());
    match rr.rtype {
        Rtype::CNAME => match node.set(Rtype::CNAME) {
            Some(c) => {
                let same =
                    c.ttl == rr.ttl && c.rdatas.len() == 1 && c.position(&rr.rdata).is_some();
                if !same {
                    node.remove_set(Rtype::CNAME);
                    node.add(rr);
                }
            }
            None if !node.sets.is_empty() => {} // other data: ignored
            None => node.add(rr),
        },
        Rtype::SOA => {
            if let Some(s) = node.set(Rtype::SOA) {
                let same = s.ttl == rr.ttl && s.position(&rr.rdata).is_some();
                if !same {
                    node.remove_set(Rtype::SOA);
                    node.add(rr);
                }
            }
            // An SOA for another name is ignored.
        }
        Rtype::NSEC3PARAM => {
            if !node.has(Rtype::SOA) {
                return Err(UpdateError::update(
                    rcode::REFUSED,
                    format!("update {} NSEC3PARAM: not at the apex", rr.owner),
                ));
            }
            if !node.has(Rtype::NSEC3PARAM) {
                node.add(rr);
            }
        }
        t => {
            let exists = node.set(t).is_some_and(|s| s.position(&rr.rdata).is_some());
            if node.has(Rtype::CNAME) || exists {
                // Data added to a CNAME's name, or a record already there: ignored.
            } else if t == Rtype::DNAME && node.has(Rtype::DNAME) {
                // Knot's singleton replacement removes the old DNAME and
                // skips the addition.
                node.remove_set(Rtype::DNAME);
            } else {
                node.add(rr);
            }
        }
    }
    sem_check(w, rr)
}

/// No data below a DNAME, no DNAME above data (Knot's `sem_check`).
fn sem_check(w: &mut Work<'_>, rr: &Record) -> Result<(), UpdateError> {
    let zone = w.zone;
    let origin = zone.origin();
    let mut name = rr.owner.as_ref();
    while name != origin {
        let Some(parent) = name.parent() else { break };
        name = parent;
        if w.has_type(name, Rtype::DNAME) {
            return Err(UpdateError::update(
                rcode::REFUSED,
                format!(
                    "update {} {}: below the DNAME at {}",
                    rr.owner, rr.rtype, name
                ),
            ));
        }
    }
    if rr.rtype == Rtype::DNAME && w.has_descendants(rr.owner.as_ref()) {
        return Err(UpdateError::update(
            rcode::REFUSED,
            format!("update {} DNAME: the name has names below it", rr.owner),
        ));
    }
    Ok(())
}

/// Deletes one RRset (Knot's `process_rem_rrset`): never the apex NS, and
/// never the SOA.
fn remove_rrset(node: &mut WorkNode, t: Rtype) {
    if t == Rtype::SOA || (t == Rtype::NS && node.has(Rtype::SOA)) {
        return;
    }
    node.remove_set(t);
}

/// Applies one deletion (Knot's `process_remove`).
fn remove(w: &mut Work<'_>, rr: &Record) {
    let node = w.node(rr.owner.as_ref());
    if rr.class == Class::NONE {
        // One RR; never the last NS of the apex.
        if rr.rtype == Rtype::NS && node.has(Rtype::SOA) {
            match node.set(Rtype::NS) {
                Some(s) if s.rdatas.len() > 1 => {}
                _ => return,
            }
        }
        let Some(i) = node.set(rr.rtype).and_then(|s| s.position(&rr.rdata)) else {
            return;
        };
        if let Some(s) = node.sets.iter_mut().find(|s| s.rtype == rr.rtype) {
            s.rdatas.remove(i);
            if s.rdatas.is_empty() {
                node.remove_set(rr.rtype);
            }
        }
    } else if rr.rtype != Rtype::ANY {
        remove_rrset(node, rr.rtype);
    } else {
        let types: Vec<Rtype> = node.sets.iter().rev().map(|s| s.rtype).collect();
        for t in types {
            remove_rrset(node, t);
        }
    }
}

fn record(owner: &Name, class: Class, (rtype, ttl, rdata): (Rtype, u32, Box<[u8]>)) -> Record {
    Record {
        owner: owner.clone(),
        class,
        rtype,
        ttl,
        rdata,
    }
}

pub(crate) fn process(
    zone: &Zone,
    req: &UpdateRequest,
    policy: SerialPolicy,
    now: u64,
) -> Result<Option<Changeset>, UpdateError> {
    if req.zone.as_ref() != zone.origin() {
        return Err(UpdateError::update(
            rcode::NOTAUTH,
            format!("the update is for {}, not {}", req.zone, zone.origin()),
        ));
    }
    let mut w = Work::new(zone);
    prerequisites(&mut w, req)?;
    let serial_before = zone.serial();
    for rr in &req.updates {
        check_update(rr, req)?;
        if skip_soa(rr, serial_before) {
            continue;
        }
        if rr.class == Class::IN {
            add(&mut w, rr)?;
        } else if rr.class == Class::NONE || rr.class == Class::ANY {
            remove(&mut w, rr);
        } else {
            return Err(formerr(format!(
                "update {} {} {}: neither an addition nor a deletion",
                rr.owner, rr.class, rr.rtype
            )));
        }
    }

    // The difference, name by name in canonical order.
    let class = zone.class();
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    let mut new_soa = None;
    for node in w.nodes.into_values() {
        let now_recs = node.current();
        for r in node.orig.iter().filter(|r| !now_recs.contains(r)) {
            if r.0 != Rtype::SOA {
                removed.push(record(&node.owner, class, r.clone()));
            }
        }
        for r in now_recs.into_iter().filter(|r| !node.orig.contains(r)) {
            if r.0 == Rtype::SOA {
                new_soa = Some(record(&zone.origin().to_name(), class, r));
            } else {
                added.push(record(&node.owner, class, r));
            }
        }
    }
    if removed.is_empty() && added.is_empty() && new_soa.is_none() {
        return Ok(None);
    }
    let soa = zone.soa();
    let soa_from = Record {
        owner: zone.origin().to_name(),
        class,
        rtype: Rtype::SOA,
        ttl: soa.ttl(),
        rdata: soa.first().into(),
    };
    let soa_to = match new_soa {
        Some(s) => s,
        None => {
            let next = policy.next(zone.serial(), now);
            let mut rdata = soa_from.rdata.to_vec();
            let at = rdata.len().saturating_sub(20);
            if rdata.len() >= 20 {
                rdata[at..at + 4].copy_from_slice(&next.to_be_bytes());
            }
            Record {
                rdata: rdata.into(),
                ..soa_from.clone()
            }
        }
    };
    Ok(Some(Changeset {
        soa_from,
        soa_to,
        removed,
        added,
    }))
}
