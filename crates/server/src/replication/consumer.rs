//! Catalog consumer (RFC 9432, Knot's `catalog-role: interpret`): the
//! members a catalog zone lists become secondary zones here, made with the
//! template their group names (else the catalog's first template), and
//! go away when the catalog drops them — their journal, state and timers
//! removed, as Knot purges a removed member.
//!
//! ```text
//!  catalog zone published (start, IXFR/AXFR in) ─▶ watch ─▶ consumer thread
//!     members read ─▶ new: door, writer (placeholder until transferred), refresh
//!                  ─▶ gone: refresh stopped, door and writer dropped, unpublished, files removed
//! ```
//!
//! Which members come, go or move is decided by `lode_control::catalog`
//! (a member listed by two catalogs belongs to the first that took it,
//! unless that catalog's entry names the other in `coo`; a member also
//! configured as a `[[zone]]` is left to the configuration); this thread
//! performs it. Other zones are never touched.

use std::collections::HashMap;
use std::sync::{mpsc, Arc};

use lode_wire::Name;

use lode_control::catalog::{read_members, Member, Membership, Report};

use crate::config::{Config, ZoneOptions};
use crate::publish::Publisher;
use crate::replication::secondary::Secondaries;
use crate::update::Updates;

/// Starts the consumer for the configured catalogs (None if none).
pub(crate) fn start(
    config: &Config,
    updates: &Arc<Updates>,
    secondaries: Option<Arc<Secondaries>>,
    publisher: &Arc<Publisher>,
    notifies: Option<crate::replication::notify::Notifies>,
) {
    let catalogs: HashMap<Name, Vec<(String, ZoneOptions)>> = config
        .zones
        .iter()
        .filter_map(|spec| {
            let o = config.zone_options(&spec.name);
            (!o.interpret.is_empty()).then(|| (spec.name.to_lowercase(), o.interpret.clone()))
        })
        .collect();
    if catalogs.is_empty() {
        return;
    }
    let (tx, rx) = mpsc::channel();
    publisher.watch(
        Arc::new(std::sync::Mutex::new(catalogs.keys().cloned().collect())),
        tx,
    );
    let mut consumer = Consumer {
        config: config.clone(),
        catalogs,
        owned: Membership::new(),
        updates: updates.clone(),
        secondaries,
        publisher: publisher.clone(),
        notifies,
    };
    let spawned = std::thread::Builder::new()
        .name("lode-catalog".into())
        .spawn(move || {
            // The catalogs as they were loaded at start (their members
            // start from their own states).
            let names: Vec<Name> = consumer.catalogs.keys().cloned().collect();
            for c in &names {
                consumer.sync(c);
            }
            for changed in rx {
                consumer.sync(&changed.zone);
            }
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start the catalog thread ({e}): catalogs are not read");
    }
}

/// Members added or removed at once past which the freed heap is trimmed.
const TRIM_AFTER: usize = 1000;

struct Consumer {
    config: Config,
    /// Each consumed catalog and its templates.
    catalogs: HashMap<Name, Vec<(String, ZoneOptions)>>,
    /// Member zones here: their catalog and their entry in it.
    owned: Membership,
    updates: Arc<Updates>,
    /// The secondaries' scheduler the members are refreshed by.
    secondaries: Option<Arc<Secondaries>>,
    publisher: Arc<Publisher>,
    notifies: Option<crate::replication::notify::Notifies>,
}

impl Consumer {
    /// Brings the members of `catalog` in line with its published version.
    fn sync(&mut self, catalog: &Name) {
        let Some(zone) = self.publisher.get(catalog) else {
            return;
        };
        if zone.is_expired() {
            return; // nothing transferred yet, or expired: members stay as they are
        }
        let members = match read_members(&zone) {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(
                    "catalog {catalog} serial {}: {e}; its members stay as they are",
                    zone.serial()
                );
                return;
            }
        };
        let configured: std::collections::HashSet<Name> = self
            .config
            .zones
            .iter()
            .map(|z| z.name.to_lowercase())
            .collect();
        let plan = self.owned.plan(catalog, members, &configured);
        for r in &plan.reports {
            match r {
                Report::Configured { catalog, member } => tracing::warn!(
                    "catalog {catalog}: member {member} is configured here already; left alone"
                ),
                Report::MovesHere {
                    catalog,
                    member,
                    from,
                } => tracing::info!("catalog {catalog}: member {member} moves here from {from} (coo)"),
                Report::BelongsElsewhere {
                    catalog,
                    member,
                    owner,
                } => tracing::warn!(
                    "catalog {catalog}: member {member} belongs to catalog {owner} (no coo there names this one); left alone"
                ),
            }
        }
        let (gone, added) = (plan.gone, plan.added);
        let many = gone.len() + added.len() >= TRIM_AFTER;
        self.remove(&gone);
        self.add(catalog, added);
        if many {
            // Adding 10^5 members at once builds each map and list anew
            // (hundreds of MB at the peak), freed since: give the pages back.
            lode_io::mem::trim_heap();
        }
    }

    /// Starts new members: doors, writers, refreshes and NOTIFY targets,
    /// each kind put in place for all of them at once (a catalog of 10^5
    /// members must not cost 10^5 copies of each map).
    fn add(&mut self, catalog: &Name, members: Vec<Member>) {
        let Some(templates) = self.catalogs.get(catalog) else {
            return;
        };
        let mut zones: Vec<(Arc<crate::config::ZoneSpec>, Arc<ZoneOptions>)> = Vec::new();
        let mut entries: Vec<Member> = Vec::new();
        for m in members {
            let options = m
                .group
                .as_ref()
                .and_then(|g| templates.iter().find(|(id, _)| id == g))
                .or_else(|| templates.first())
                .map(|(_, o)| o.clone());
            let Some(options) = options else {
                continue;
            };
            let spec = crate::config::ZoneSpec {
                name: m.name.to_lowercase(),
                source: crate::config::ZoneSource::Transfer,
            };
            zones.push((Arc::new(spec), Arc::new(options)));
            entries.push(m);
        }
        if zones.is_empty() {
            return;
        }
        let doors: Vec<(Name, ZoneOptions)> = zones
            .iter()
            .map(|(spec, o)| (spec.name.clone(), (**o).clone()))
            .collect();
        self.updates.insert_doors(&doors);
        let started =
            crate::update::start_writers_for(&self.updates, &self.config, &zones, &self.publisher);
        let Some(secondaries) = self.secondaries.as_deref() else {
            let names: Vec<Name> = doors.into_iter().map(|(n, _)| n).collect();
            tracing::error!(
                "catalog {catalog}: members cannot be refreshed (no secondaries' scheduler)"
            );
            self.updates.remove_doors(&names);
            return;
        };
        let mut refreshed = Vec::new();
        let mut failed = Vec::new();
        for ((spec, options), m) in zones.into_iter().zip(entries) {
            let name = spec.name.clone();
            match self
                .updates
                .writer(&name)
                .filter(|_| started.contains(&name))
            {
                Some(w) => {
                    if let Some(n) = &self.notifies {
                        n.set(&name, &options, &self.updates.keys());
                    }
                    tracing::info!(
                        "catalog {catalog}: member {name} added{}",
                        m.group
                            .as_ref()
                            .map_or(String::new(), |g| format!(" (group {g})"))
                    );
                    refreshed.push((name.clone(), Arc::unwrap_or_clone(options), w));
                    self.owned.added(catalog, m);
                }
                None => {
                    tracing::error!(
                        "catalog {catalog}: member {name} could not be started (see above)"
                    );
                    failed.push(name);
                }
            }
        }
        secondaries.add_many(refreshed, &self.updates.keys(), &self.publisher);
        self.updates.remove_doors(&failed);
    }

    /// Removes members: refreshes, NOTIFY targets, doors (their writers end
    /// with them), published versions and files.
    fn remove(&mut self, names: &[Name]) {
        let mut removed = Vec::new();
        for name in names {
            let Some(catalog) = self.owned.removed(name) else {
                continue;
            };
            if let Some(n) = &self.notifies {
                n.set(name, &ZoneOptions::default(), &self.updates.keys());
            }
            removed.push((name.clone(), catalog));
        }
        if removed.is_empty() {
            return;
        }
        let names: Vec<Name> = removed.iter().map(|(n, _)| n.clone()).collect();
        if let Some(s) = self.secondaries.as_deref() {
            s.remove_many(&names);
        }
        // Each writer ends once its queue's last sender (the door) is gone.
        self.updates.remove_doors(&names);
        self.publisher.update(|set| {
            for name in &names {
                set.remove(name);
            }
        });
        for (name, catalog) in removed {
            if let Some(dir) = &self.config.journal_dir {
                let jnl = crate::update::journal_path(dir, &name);
                for ext in ["jnl", "state", "flushed", "timers"] {
                    let _ = std::fs::remove_file(jnl.with_extension(ext));
                }
            }
            tracing::info!("catalog {catalog}: member {name} removed (its data purged)");
        }
    }
}
