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
//! A member listed by two catalogs belongs to the first that took it,
//! unless that catalog's entry names the other in `coo` (change of
//! ownership): then it moves, and starts afresh with the new catalog's
//! template. A member that is also configured as a `[[zone]]` is left to
//! the configuration. Other zones are never touched.

use std::collections::HashMap;
use std::sync::{mpsc, Arc};

use lode_wire::Name;

use crate::catalog::{read_members, Member};
use crate::config::{Config, ZoneOptions};
use crate::update::{Publisher, Updates};

/// Starts the consumer for the configured catalogs (None if none).
pub(crate) fn start(
    config: &Config,
    updates: &Arc<Updates>,
    publisher: &Arc<Publisher>,
    notifies: Option<crate::notify::Notifies>,
) {
    let catalogs: HashMap<Name, Vec<(String, ZoneOptions)>> = config
        .zones
        .iter()
        .filter_map(|spec| {
            let o = config.zone_options(&spec.name);
            (!o.interpret.is_empty()).then(|| (spec.name.to_lowercase(), o.interpret))
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
        owned: HashMap::new(),
        updates: updates.clone(),
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

struct Consumer {
    config: Config,
    /// Each consumed catalog and its templates.
    catalogs: HashMap<Name, Vec<(String, ZoneOptions)>>,
    /// Member zones here: their catalog and their entry in it.
    owned: HashMap<Name, (Name, Member)>,
    updates: Arc<Updates>,
    publisher: Arc<Publisher>,
    notifies: Option<crate::notify::Notifies>,
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
        let configured: Vec<Name> = self
            .config
            .zones
            .iter()
            .map(|z| z.name.to_lowercase())
            .collect();
        // Gone from this catalog: removed.
        let gone: Vec<Name> = self
            .owned
            .iter()
            .filter(|(n, (c, _))| {
                c == catalog && !members.iter().any(|m| m.name.to_lowercase() == **n)
            })
            .map(|(n, _)| n.clone())
            .collect();
        for n in gone {
            self.remove(&n);
        }
        for m in members {
            let name = m.name.to_lowercase();
            if configured.contains(&name) {
                tracing::warn!(
                    "catalog {catalog}: member {name} is configured here already; left alone"
                );
                continue;
            }
            match self.owned.get(&name) {
                Some((c, _)) if c == catalog => continue,
                Some((c, entry)) => {
                    if entry.coo.as_ref().map(Name::to_lowercase).as_ref() == Some(catalog) {
                        tracing::info!(
                            "catalog {catalog}: member {name} moves here from {c} (coo)"
                        );
                        self.remove(&name);
                    } else {
                        tracing::warn!(
                            "catalog {catalog}: member {name} belongs to catalog {c} (no coo there names this one); left alone"
                        );
                        continue;
                    }
                }
                None => {}
            }
            self.add(catalog, m);
        }
    }

    fn add(&mut self, catalog: &Name, m: Member) {
        let name = m.name.to_lowercase();
        let Some(templates) = self.catalogs.get(catalog) else {
            return;
        };
        let options = m
            .group
            .as_ref()
            .and_then(|g| templates.iter().find(|(id, _)| id == g))
            .or_else(|| templates.first())
            .map(|(_, o)| o.clone());
        let Some(options) = options else {
            return;
        };
        self.updates.insert_door(&name, &options);
        let spec = crate::ZoneSpec {
            name: name.clone(),
            source: crate::ZoneSource::Transfer,
        };
        let started = crate::update::start_writer(
            &self.updates,
            &self.config,
            &spec,
            &options,
            &self.publisher,
        );
        let writer = self.updates.writer(&name);
        match (started, writer, self.updates.secondaries()) {
            (true, Some(w), Some(s)) => {
                s.add(&name, &options, self.updates.keys(), w, &self.publisher);
                if let Some(n) = &self.notifies {
                    n.set(&name, &options, self.updates.keys());
                }
                tracing::info!(
                    "catalog {catalog}: member {name} added{}",
                    m.group
                        .as_ref()
                        .map_or(String::new(), |g| format!(" (group {g})"))
                );
                self.owned.insert(name, (catalog.clone(), m));
            }
            _ => {
                tracing::error!(
                    "catalog {catalog}: member {name} could not be started (see above)"
                );
                self.updates.remove_door(&name);
            }
        }
    }

    fn remove(&mut self, name: &Name) {
        let Some((catalog, _)) = self.owned.remove(name) else {
            return;
        };
        if let Some(s) = self.updates.secondaries() {
            s.remove(name);
        }
        if let Some(n) = &self.notifies {
            n.set(name, &ZoneOptions::default(), self.updates.keys());
        }
        // Its writer ends once its queue's last sender (the door) is gone.
        self.updates.remove_door(name);
        self.publisher.update(|set| {
            set.remove(name);
        });
        if let Some(dir) = &self.config.journal_dir {
            let jnl = crate::update::journal_path(dir, name);
            for ext in ["jnl", "state", "flushed", "timers"] {
                let _ = std::fs::remove_file(jnl.with_extension(ext));
            }
        }
        tracing::info!("catalog {catalog}: member {name} removed (its data purged)");
    }
}
