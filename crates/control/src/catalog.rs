//! Catalog membership (RFC 9432, Knot's `catalog-role: interpret`) as
//! decisions: which member zones a consumer adds, removes or moves when a
//! catalog's version is published, from the members it lists, the members
//! held now and the zones configured. The runtime (`lode-server`'s
//! consumer thread) reads the catalog with [`read_members`], asks
//! [`Membership::plan`], performs the plan (doors, writers, refreshes,
//! files) and tells back what it did ([`Membership::added`],
//! [`Membership::removed`]).
//!
//! ```text
//!  catalog version ─read_members─▶ listed ─┐
//!  members held (Membership) ──────────────┼─▶ plan ─▶ gone (removed, moved away), added, reports
//!  zones configured ───────────────────────┘
//! ```
//!
//! The rules, as Knot's: a member listed by two catalogs belongs to the
//! first that took it, unless that catalog's entry names the other in
//! `coo` (change of ownership, RFC 9432 §5.2.2): then it moves (removed,
//! then added afresh with the new catalog's template). A member also
//! configured as a zone is left to the configuration. A catalog whose
//! version cannot be read leaves its members as they are.

use std::collections::{HashMap, HashSet};

use lode_wire::Name;

/// A member zone as a catalog lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The member zone.
    pub name: Name,
    /// Its unique label in the catalog.
    pub id: String,
    /// Its group (the template it is made with).
    pub group: Option<String>,
    /// The catalog it may move to (RFC 9432 §5.2.2, change of ownership).
    pub coo: Option<Name>,
}

/// The members of a catalog zone version (RFC 9432: `version` TXT "2",
/// `<id>.zones` PTR, `group.<id>.zones` TXT, `coo.<id>.zones` PTR). A
/// catalog of another version, or an id with more than one PTR, is an error.
pub fn read_members(zone: &lode_zonedb::Zone) -> Result<Vec<Member>, String> {
    use lode_wire::{NameRef, Rtype};
    let origin = zone.origin().to_name();
    let base = origin.as_ref().label_count();
    let mut version_ok = false;
    let mut members: Vec<Member> = Vec::new();
    let mut groups: Vec<(String, String)> = Vec::new();
    let mut coos: Vec<(String, Name)> = Vec::new();
    for id in zone.node_ids() {
        let node = zone.node(id);
        let owner = node.owner();
        let rel: Vec<String> = owner
            .labels()
            .take(owner.label_count() - base)
            .map(|l| String::from_utf8_lossy(l).to_ascii_lowercase())
            .collect();
        let rel: Vec<&str> = rel.iter().map(String::as_str).collect();
        match rel.as_slice() {
            ["version"] => {
                if let Some(txt) = node.rrset(Rtype::TXT) {
                    version_ok = txt.rdatas().any(|r| r == b"\x012");
                }
            }
            [id, "zones"] => {
                let Some(ptr) = node.rrset(Rtype::PTR) else {
                    continue;
                };
                let targets: Vec<&[u8]> = ptr.rdatas().collect();
                if targets.len() != 1 {
                    return Err(format!(
                        "{id}.zones: {} PTR records (a member has exactly one)",
                        targets.len()
                    ));
                }
                let name = NameRef::from_wire(targets[0])
                    .map_err(|e| format!("{id}.zones: PTR target: {e}"))?
                    .to_name();
                members.push(Member {
                    name,
                    id: (*id).to_string(),
                    group: None,
                    coo: None,
                });
            }
            ["group", id, "zones"] => {
                if let Some(txt) = node.rrset(Rtype::TXT) {
                    if let Some(r) = txt.rdatas().next() {
                        // One character-string: length, then the text.
                        let text = r.get(1..).unwrap_or_default();
                        groups.push((
                            (*id).to_string(),
                            String::from_utf8_lossy(text).into_owned(),
                        ));
                    }
                }
            }
            ["coo", id, "zones"] => {
                if let Some(ptr) = node.rrset(Rtype::PTR) {
                    if let Some(Ok(n)) = ptr.rdatas().next().map(NameRef::from_wire) {
                        coos.push(((*id).to_string(), n.to_name()));
                    }
                }
            }
            _ => {}
        }
    }
    if !version_ok {
        return Err("no version.<catalog> TXT \"2\": not a version 2 catalog (RFC 9432)".into());
    }
    for m in &mut members {
        m.group = groups
            .iter()
            .find(|(id, _)| *id == m.id)
            .map(|(_, g)| g.clone());
        m.coo = coos
            .iter()
            .find(|(id, _)| *id == m.id)
            .map(|(_, c)| c.clone());
    }
    Ok(members)
}

/// Something for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// A member is configured here as a zone: left to the configuration.
    Configured {
        /// The catalog.
        catalog: Name,
        /// The member.
        member: Name,
    },
    /// A member moves here from `from`, whose entry names this catalog in
    /// `coo`.
    MovesHere {
        /// The catalog it moves to.
        catalog: Name,
        /// The member.
        member: Name,
        /// The catalog it leaves.
        from: Name,
    },
    /// A member held by another catalog, which names no change of
    /// ownership to this one: left there.
    BelongsElsewhere {
        /// The catalog that lists it too.
        catalog: Name,
        /// The member.
        member: Name,
        /// The catalog it belongs to.
        owner: Name,
    },
}

/// What to do for a catalog's new version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Members to remove (gone from the catalog, or moving to it from
    /// another: removed first, then added).
    pub gone: Vec<Name>,
    /// Members to add, with their entries.
    pub added: Vec<Member>,
    /// What to log.
    pub reports: Vec<Report>,
}

/// The members a consumer holds, each with its catalog and entry.
#[derive(Debug, Default)]
pub struct Membership {
    owned: HashMap<Name, (Name, Member)>,
}

impl Membership {
    /// No members.
    pub fn new() -> Membership {
        Membership::default()
    }

    /// Members held.
    pub fn len(&self) -> usize {
        self.owned.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.owned.is_empty()
    }

    /// The catalog `member` belongs to, if held.
    pub fn catalog_of(&self, member: &Name) -> Option<&Name> {
        self.owned.get(member).map(|(c, _)| c)
    }

    /// What `catalog`'s version listing `listed` asks, with `configured`
    /// the zones of the configuration (lowercase).
    pub fn plan(&self, catalog: &Name, listed: Vec<Member>, configured: &HashSet<Name>) -> Plan {
        let mut plan = Plan::default();
        let names: HashSet<Name> = listed.iter().map(|m| m.name.to_lowercase()).collect();
        // Gone from this catalog: removed.
        plan.gone = self
            .owned
            .iter()
            .filter(|(n, (c, _))| c == catalog && !names.contains(*n))
            .map(|(n, _)| n.clone())
            .collect();
        plan.gone.sort();
        for m in listed {
            let member = m.name.to_lowercase();
            if configured.contains(&member) {
                plan.reports.push(Report::Configured {
                    catalog: catalog.clone(),
                    member,
                });
                continue;
            }
            match self.owned.get(&member) {
                Some((c, _)) if c == catalog => continue,
                Some((c, entry)) => {
                    if entry.coo.as_ref().map(Name::to_lowercase).as_ref() != Some(catalog) {
                        plan.reports.push(Report::BelongsElsewhere {
                            catalog: catalog.clone(),
                            member,
                            owner: c.clone(),
                        });
                        continue;
                    }
                    plan.reports.push(Report::MovesHere {
                        catalog: catalog.clone(),
                        member: member.clone(),
                        from: c.clone(),
                    });
                    plan.gone.push(member);
                }
                None => {}
            }
            plan.added.push(m);
        }
        plan
    }

    /// `member` was started as `catalog`'s.
    pub fn added(&mut self, catalog: &Name, member: Member) {
        self.owned
            .insert(member.name.to_lowercase(), (catalog.clone(), member));
    }

    /// `member` was removed; the catalog it belonged to.
    pub fn removed(&mut self, member: &Name) -> Option<Name> {
        self.owned.remove(member).map(|(c, _)| c)
    }
}

#[cfg(test)]
mod tests;
