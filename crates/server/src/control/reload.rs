//! (Re)loading zones: the configured zones are read (unchanged files are
//! kept), the set is published with one atomic swap, and a report says what
//! happened to each zone.

use std::fmt;

mod report;
pub(crate) use report::{more_errors, SHOWN_ERRORS};
pub use report::{ReloadReport, ZoneFailure};
use std::sync::mpsc;
use std::sync::Arc;

use lode_zonedb::Zone;

use super::changes::{
    is_catalog, policy_changes, restart_needed, settings_changes, signing_started, signing_stopped,
};
use crate::clock::{format_duration, millis};
use crate::config::{Config, Options, ZoneSource, ZoneSpec};
use crate::loading::loads::{count_errors, ZoneLoads};
use crate::loading::zones;

/// A zone being served, with what it was loaded from.
#[derive(Debug, Clone)]
pub(crate) struct Served {
    /// The zone's entry in the configuration (shared with it).
    pub(crate) spec: Arc<ZoneSpec>,
    pub(crate) files: Vec<(
        Arc<std::path::Path>,
        Option<crate::config::stamp::FileStamp>,
    )>,
    /// The version just loaded, until it is published; then none (the
    /// published set holds the served version, which updates replace: a
    /// version kept here would keep its whole base in memory).
    pub(crate) zone: Option<Arc<Zone>>,
}

/// A request to the reloader thread; the report goes to `reply` if any.
pub(crate) struct ReloadRequest {
    pub(crate) reply: Option<mpsc::Sender<ReloadReport>>,
    pub(crate) what: Asked,
}

/// What the reloader thread is asked for.
#[derive(Debug, Clone)]
pub(crate) enum Asked {
    /// The configuration and every changed zone (`reload`).
    All,
    /// One zone read again whatever its stamp (`zone-reload`).
    Zone(lode_wire::Name),
    /// The data of zones no longer configured removed (`zone-purge`; no
    /// name: every such zone's).
    Purge(Vec<lode_wire::Name>),
    /// Zones backed up into a folder (`zone-backup`; no name: every zone).
    Backup(std::path::PathBuf, Vec<lode_wire::Name>),
    /// Zones restored from a backup folder (`zone-restore`; no name: every
    /// zone in it).
    Restore(std::path::PathBuf, Vec<lode_wire::Name>),
}

/// Owns the served zones and the options; runs every (re)load.
pub(crate) struct Reloader {
    pub(crate) options: Options,
    pub(crate) running: Arc<Config>,
    pub(crate) served: Vec<Served>,
    pub(crate) publisher: Arc<crate::publish::Publisher>,
    /// Zones changed by updates (they have a journal): their served version
    /// is newer than their file, so an edited file is not read over it.
    pub(crate) live: Vec<lode_wire::Name>,
    /// Zones with `dnssec-validation`: each version loaded is checked.
    pub(crate) validating: std::collections::HashSet<lode_wire::Name>,
    /// Zones with `zonemd-verify`: each zone file read is checked by its
    /// ZONEMD (a zone with a writer: as its writer applies it).
    pub(crate) verifying: std::collections::HashSet<lode_wire::Name>,
    /// The zone writers, for zones in `live`.
    pub(crate) updates: Option<Arc<crate::update::Updates>>,
    /// The zones' NOTIFY targets (a reload may add and change them).
    pub(crate) notifies: Option<crate::replication::notify::Notifies>,
    /// The secondary zones' scheduler, if any zone is a secondary.
    pub(crate) secondaries: Option<Arc<crate::replication::secondary::Secondaries>>,
    /// Each zone's last load, for `zone-status`.
    pub(crate) loads: Arc<ZoneLoads>,
    /// The configuration of the last (re)load (`running` stays the one
    /// started with): where `zone-reload` finds its zone.
    pub(crate) loaded: Option<Arc<Config>>,
    /// The DNS-over-TLS server side, whose certificate a reload replaces.
    pub(crate) tls: Vec<lode_io::tls::TlsServer>,
    /// The query policy (identity, cookies, RRL, dnstap) a reload replaces;
    /// none until the server has made it.
    pub(crate) guard: Option<Arc<arc_swap::ArcSwap<crate::serving::guard::Guard>>>,
    /// The TCP and DoT transports' limits a reload changes; none until
    /// they run.
    pub(crate) limits: Option<Limits>,
}

/// Up to how many zones read by one load or reload each gets its "zone
/// loaded" line at info (more: at debug, with the load's summary line).
const LOG_EACH_ZONE_UP_TO: usize = 1000;

/// Handles on the running transports' limits.
#[derive(Debug)]
pub(crate) struct Limits {
    pub(crate) tcp: lode_io::TcpLimits,
    pub(crate) dot: Option<lode_io::TcpLimits>,
}

impl Reloader {
    /// Loads the configured zones, reusing unchanged ones, and publishes the set.
    pub(crate) fn load(&mut self, config: &Config, initial: bool) -> ReloadReport {
        let mut report = ReloadReport::default();
        self.validating = config
            .zone_options
            .iter()
            .filter(|(_, o)| o.validation)
            .map(|(name, _)| name.clone())
            .collect();
        self.verifying = config
            .zone_options
            .iter()
            .filter(|(_, o)| o.zonemd_verify)
            .map(|(name, _)| name.clone())
            .collect();
        let mut next: Vec<Served> = Vec::with_capacity(config.zones.len());
        let served: std::collections::HashMap<&lode_wire::Name, &Served> =
            self.served.iter().map(|s| (&s.spec.name, s)).collect();
        let olds: Vec<Option<&Served>> = config
            .zones
            .iter()
            .map(|spec| served.get(&spec.name).copied())
            .collect();
        // A frozen zone's changed file is left for its thaw.
        let frozen: std::collections::HashSet<&lode_wire::Name> = config
            .zones
            .iter()
            .zip(&olds)
            .filter(|(spec, old)| {
                // The frozen flag first: `keeps` looks at the files (a
                // stat each), which 10^5 unfrozen zones need not pay twice.
                let Some(u) = self
                    .updates
                    .as_ref()
                    .filter(|u| u.frozen.contains(&spec.name))
                else {
                    return false;
                };
                spec.source != ZoneSource::Transfer
                    && old.is_some_and(|o| !self.keeps(o, spec))
                    && u.frozen.leave_reload(&spec.name)
            })
            .map(|(spec, _)| &spec.name)
            .collect();
        let to_load: Vec<&ZoneSpec> = config
            .zones
            .iter()
            .zip(&olds)
            .filter(|(spec, old)| {
                spec.source != ZoneSource::Transfer
                    && !old.is_some_and(|o| self.keeps(o, spec))
                    && !frozen.contains(&spec.name)
            })
            .map(|(spec, _)| &**spec)
            .collect();
        let mut through_writer: std::collections::HashSet<lode_wire::Name> =
            std::collections::HashSet::new();
        let quiet = to_load.len() > LOG_EACH_ZONE_UP_TO;
        let mut results = zones::load_all(&to_load, config.snapshot_dir.as_deref()).into_iter();
        for (spec, old) in config.zones.iter().zip(olds) {
            let name = spec.name.to_string();
            if let Some(old) = old.filter(|o| self.keeps(o, spec)) {
                report.unchanged.push(name);
                next.push(old.clone());
                continue;
            }
            if let Some(old) = old.filter(|_| frozen.contains(&spec.name)) {
                report.frozen.push(name);
                next.push(old.clone());
                continue;
            }
            // A secondary: its zone writer starts it from its state and its
            // primaries keep it current; nothing to read here.
            if spec.source == ZoneSource::Transfer {
                self.loads.transfer(&spec.name);
                next.push(Served {
                    spec: spec.clone(),
                    files: Vec::new(),
                    zone: None,
                });
                continue;
            }
            // One result per zone to load, in order.
            let Some(result) = results.next() else {
                continue;
            };
            let snapshot_dir = config.snapshot_dir.as_deref();
            let settled = self.settle(spec, old, result, snapshot_dir, &mut report, quiet);
            if let Some((served, via_writer)) = settled {
                if via_writer {
                    through_writer.insert(spec.name.clone());
                }
                next.push(served);
            }
        }
        let kept: std::collections::HashSet<&lode_wire::Name> =
            next.iter().map(|n| &n.spec.name).collect();
        for old in &self.served {
            if !kept.contains(&old.spec.name) {
                tracing::info!("zone {}: no longer configured, removed", old.spec.name);
                self.loads.remove(&old.spec.name);
                report.removed.push(old.spec.name.to_string());
            }
        }
        // New zones get their ACL (transfers out) before they are served,
        // and every zone the NOTIFY targets the configuration now gives it.
        if let Some(u) = &self.updates {
            u.refresh_doors(config);
            if let Some(n) = &self.notifies {
                let keys = u.keys();
                for spec in &config.zones {
                    n.set(&spec.name, &config.zone_options(&spec.name), &keys);
                }
            }
        }
        // Zones kept as they were stay as published (updates may have
        // changed them since they were loaded); only loaded zones and
        // removed ones change in the set.
        let loaded: std::collections::HashSet<&str> =
            report.loaded.iter().map(String::as_str).collect();
        // A new version of a zone served already goes through the one
        // commit; zones new to the set join it with their first version.
        let mut joining = Vec::new();
        for s in &next {
            if loaded.contains(s.spec.name.to_string().as_str())
                && !through_writer.contains(&s.spec.name)
            {
                if let Some(z) = &s.zone {
                    if self.publisher.get(&s.spec.name).is_some() {
                        self.publish_static(z.clone());
                    } else {
                        joining.push(z.clone());
                    }
                }
            }
        }
        self.publisher.update(|set| {
            for z in joining {
                set.insert(z);
            }
            for name in &report.removed {
                if let Ok(origin) = name.parse::<lode_wire::Name>() {
                    set.remove(&origin);
                }
            }
        });
        for s in &mut next {
            s.zone = None;
        }
        self.served = next;
        self.loaded = Some(if initial {
            self.running.clone()
        } else {
            Arc::new(config.clone())
        });
        if !initial {
            tracing::info!(
                reloaded = report.loaded.len(),
                unchanged = report.unchanged.len(),
                frozen = report.frozen.len(),
                removed = report.removed.len(),
                failed = report.failed.len(),
                "reload done"
            );
        }
        log_memory();
        report
    }

    /// Re-reads the configuration and reloads the zones.
    pub(crate) fn reload(&mut self) -> ReloadReport {
        tracing::info!("reloading");
        lode_zonefile::forget_folders();
        let config = match Config::resolve(&self.options) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!("reload: configuration: {e}; nothing changed");
                return ReloadReport {
                    config_error: Some(e.to_string()),
                    ..ReloadReport::default()
                };
            }
        };
        // Keys in a token a reload names: the token opened first, or the
        // reload refused whole.
        if let Err(e) = crate::update::signing::open_keystores(&config) {
            return refused(e.to_string());
        }
        let mut restart = restart_needed(&self.running, &config);
        // The log level, when the binary lets it change.
        let previous_level = self
            .loaded
            .as_ref()
            .unwrap_or(&self.running)
            .log_level
            .clone();
        if config.log_level != previous_level {
            match crate::control::change_log_level(&config.log_level) {
                Ok(true) => tracing::info!("reload: log level {}", config.log_level),
                Ok(false) => {}
                Err(e) => tracing::warn!("reload: log level not changed: {e}"),
            }
        }
        if crate::control::change_log_level_possible() {
            restart.retain(|s| s != "log-level");
        }
        if !restart.is_empty() {
            tracing::warn!(
                "reload: these changes take effect at restart: {}",
                restart.join(", ")
            );
        }
        // What can fail is read before anything changes: a certificate that
        // cannot be read or a key that cannot be used refuses the whole
        // reload, and the running configuration stays.
        let creds = if self.tls.is_empty() {
            None
        } else {
            match crate::tls::credentials(&config.tls) {
                Ok(c) => Some(c),
                Err(e) => return refused(format!("tls: {e}")),
            }
        };
        let keys = match crate::update::keys_of(&config) {
            Ok(k) => k,
            Err(e) => return refused(e.to_string()),
        };
        // Last of what can fail: a new dnstap stream or rate limiter.
        let guard = match &self.guard {
            Some(g) => match crate::serving::guard::Guard::next(Some(&g.load()), &config) {
                Ok(next) => Some((g, next)),
                Err(e) => return refused(e.to_string()),
            },
            None => None,
        };
        if let Some((shared, next)) = guard {
            let changed = shared.load().changes(&next);
            let old = shared.swap(Arc::new(next));
            old.retire(&shared.load());
            if !changed.is_empty() {
                tracing::info!("reload: applied {}", changed.join(", "));
            }
        }
        if let Some(creds) = &creds {
            for server in &self.tls {
                server.replace(creds);
            }
            crate::tls::log_credentials(creds);
        }
        // TSIG keys: requests from now on are checked against the new ones,
        // and secondary zones ask their primaries as now configured.
        if let Some(u) = &self.updates {
            u.set_keys(keys);
            if let Some(s) = &self.secondaries {
                let options_of = |z: &lode_wire::Name| {
                    config
                        .zone_options
                        .contains_key(z)
                        .then(|| (*config.zone_options(z)).clone())
                };
                s.reconfigure(options_of, &u.keys());
            }
        }
        let previous = self.loaded.clone().unwrap_or_else(|| self.running.clone());
        // TCP and DoT limits and timeouts, for connections from now on.
        if let Some(l) = &self.limits {
            let same = |a: &lode_io::TcpConfig, b: &lode_io::TcpConfig| {
                (
                    a.idle_timeout,
                    a.io_timeout,
                    a.max_clients,
                    a.per_source_limit(),
                ) == (
                    b.idle_timeout,
                    b.io_timeout,
                    b.max_clients,
                    b.per_source_limit(),
                ) && a.handshake_timeout == b.handshake_timeout
            };
            let (tcp, was) = (
                crate::config::tcp_config(&config),
                crate::config::tcp_config(&previous),
            );
            if !same(&tcp, &was) {
                l.tcp.set(&tcp);
            }
            let (dot, was) = (
                crate::config::dot_config(&config),
                crate::config::dot_config(&previous),
            );
            if let Some(d) = l.dot.as_ref().filter(|_| !same(&dot, &was)) {
                d.set(&dot);
            }
        }
        let mut report = self.load(&config, false);
        report.restart_needed = restart;
        // Zones that need a writer and have none (added by this reload, or
        // given updates, transfers, NOTIFY, signing or primaries by it):
        // started as at a start; their settings and signing are the
        // configuration's already.
        let started_now = self.start_writers(&config, &mut report);
        self.publisher.mark_catalogs(&config);
        self.retire(&report.removed);
        if started_now.len() + report.removed.len() > 1000 {
            // Thousands of zones added or removed build and drop maps and
            // writers: the freed pages go back to the system.
            lode_io::mem::trim_heap();
        }
        // Zones with a writer whose serial policy, zonefile-sync or
        // validation changed: their writers take the new settings.
        if let Some(u) = &self.updates {
            for (name, settings) in settings_changes(&previous, &config) {
                if u.has_writer(&name) {
                    let work = crate::update::Work::Settings(Box::new(settings));
                    if let Err(e) = u.to_writer(&name, work) {
                        tracing::warn!("zone {name}: new settings not applied: {e}");
                    }
                }
            }
        }
        // Signed zones whose policy changed: their writers take the new one
        // (the planner at once; a chain changed is signed whole there, in
        // the background, logged when done).
        if let Some(u) = &self.updates {
            for (name, signing) in policy_changes(&previous, &config) {
                if started_now.contains(&name) {
                    continue;
                }
                let parents = crate::update::parent_sources(&signing, u);
                let what = crate::update::SignWork::Policy(Box::new((signing, parents)));
                let note = match u.sign_work(&name, what) {
                    Ok(_) => "new signing policy handed to its writer (its log says what it did)",
                    Err(e) => {
                        tracing::warn!("zone {name}: new signing policy not applied: {e}");
                        "new signing policy not applied (see the log)"
                    }
                };
                report.policies.push((name.to_string(), note.to_string()));
            }
            // Zones signed here until now and not from now on: their
            // writers put their keys away; a secondary's primary zone is
            // transferred whole again.
            for (name, secondary) in signing_stopped(&previous, &config) {
                if started_now.contains(&name) {
                    continue;
                }
                let note = match u.sign_work(&name, crate::update::SignWork::Stop) {
                    Ok(_) if secondary => {
                        let refresh = self
                            .secondaries
                            .as_ref()
                            .ok_or(crate::replication::secondary::RefreshError::NoSecondaries)
                            .and_then(|s| s.refresh(&name, true));
                        match refresh {
                            Ok(()) => "signing turned off: the primary's zone is transferred whole",
                            Err(e) => {
                                tracing::warn!("zone {name}: not transferred again yet: {e}");
                                "signing turned off: the primary's zone is transferred whole at the next refresh"
                            }
                        }
                    }
                    Ok(_) => {
                        "signing turned off: its DNSSEC records are kept as they are, changes are no longer signed"
                    }
                    Err(e) => {
                        tracing::warn!("zone {name}: signing not turned off: {e}");
                        "signing not turned off (see the log)"
                    }
                };
                report.policies.push((name.to_string(), note.to_string()));
            }
            // Zones served unsigned that are signed from now on: their
            // writers make or read the keys and sign them whole.
            for (name, signing) in signing_started(&previous, &config) {
                if started_now.contains(&name) {
                    continue;
                }
                let Some(kasp_db) = config.kasp_db.clone() else {
                    continue;
                };
                let parents = crate::update::parent_sources(&signing, u);
                let what = crate::update::SignWork::Start(Box::new((signing, parents, kasp_db)));
                let note = match u.sign_work(&name, what) {
                    Ok(_) => {
                        "signing turned on: handed to its writer (its log says when it is signed)"
                    }
                    Err(e) => {
                        tracing::warn!("zone {name}: signing not turned on: {e}");
                        "signing not turned on (see the log)"
                    }
                };
                report.policies.push((name.to_string(), note.to_string()));
            }
        }
        report
    }
}

impl Reloader {
    /// Starts the writers of the zones of `config` that need one (see
    /// [`crate::config::ZoneOptions::is_live`]) and have none: journal,
    /// state and signing as at a start (a signed zone is signed whole
    /// there), a secondary's refresh put on the scheduler (started now if
    /// no zone was a secondary before). A catalog (generated or read)
    /// waits for a restart. Returns the zones whose writer started.
    fn start_writers(
        &mut self,
        config: &Config,
        report: &mut ReloadReport,
    ) -> std::collections::HashSet<lode_wire::Name> {
        let Some(u) = self.updates.clone() else {
            return Default::default();
        };
        let zones: Vec<(Arc<ZoneSpec>, Arc<crate::config::ZoneOptions>)> = config
            .zones
            .iter()
            .filter(|spec| !u.has_writer(&spec.name))
            .map(|spec| (spec.clone(), config.zone_options(&spec.name)))
            .filter(|(_, o)| o.is_live() && !is_catalog(o))
            .collect();
        if zones.is_empty() {
            return Default::default();
        }
        let started = crate::update::start_writers_for(&u, config, &zones, &self.publisher);
        let mut secondaries = Vec::new();
        for (spec, options) in &zones {
            let name = spec.name.to_lowercase();
            match u.writer(&name).filter(|_| started.contains(&name)) {
                Some(w) => {
                    self.live.push(spec.name.clone());
                    if !options.masters.is_empty() {
                        report.policies.push((
                            name.to_string(),
                            "a secondary added: transferred from its primaries now".to_string(),
                        ));
                        secondaries.push((name, (**options).clone(), w));
                    }
                }
                None => report.policies.push((
                    name.to_string(),
                    "takes no updates, transfers or signing: its writer did not start (see the log)"
                        .to_string(),
                )),
            }
        }
        if !secondaries.is_empty() {
            match &self.secondaries {
                Some(s) => s.add_many(secondaries, &u.keys(), &self.publisher),
                None => {
                    let writers = secondaries.into_iter().map(|(n, _, w)| (n, w)).collect();
                    let s = crate::replication::secondary::start(
                        config,
                        &u.keys(),
                        &writers,
                        &self.publisher,
                        u.events().clone(),
                    );
                    if let Some(s) = s.map(Arc::new) {
                        u.set_secondaries(s.clone());
                        self.secondaries = Some(s);
                    }
                }
            }
        }
        started
    }
}

impl Reloader {
    /// Zones no longer configured (already taken out of the published
    /// set): their refresh, NOTIFY targets, signing schedule and writers
    /// end. Their journal, state and keys stay on disk (Knot's: a zone
    /// configured again goes on from them).
    fn retire(&mut self, removed: &[String]) {
        let names: Vec<lode_wire::Name> = removed
            .iter()
            .filter_map(|n| n.parse::<lode_wire::Name>().ok())
            .map(|n| n.to_lowercase())
            .collect();
        if names.is_empty() {
            return;
        }
        if let Some(s) = &self.secondaries {
            s.remove_many(&names);
        }
        if let Some(u) = &self.updates {
            if let Some(n) = &self.notifies {
                let keys = u.keys();
                for name in &names {
                    n.set(name, &crate::config::ZoneOptions::default(), &keys);
                }
            }
            // Each writer ends once its queue's last sender (the door) is gone.
            u.remove_doors(&names);
            for name in &names {
                u.signings().unwatch(name);
            }
        }
        self.live.retain(|n| !names.contains(&n.to_lowercase()));
    }
}

/// A reload refused whole: logged, reported, nothing changed.
fn refused(reason: String) -> ReloadReport {
    tracing::error!("reload: {reason}; nothing changed");
    ReloadReport {
        config_error: Some(reason),
        ..ReloadReport::default()
    }
}

impl Reloader {
    /// Takes one zone's load result: logs it, records it for `zone-status`,
    /// hands a zone that takes updates its file through its writer. Returns
    /// what is served now (the new or the old version; None: nothing) and
    /// whether the writer published it (else the caller publishes it).
    fn settle(
        &self,
        spec: &Arc<ZoneSpec>,
        old: Option<&Served>,
        result: zones::LoadResult,
        snapshot_dir: Option<&std::path::Path>,
        report: &mut ReloadReport,
        quiet: bool,
    ) -> Option<(Served, bool)> {
        let name = spec.name.to_string();
        let l = match result {
            Ok(l) => l,
            Err(errors) => {
                self.failed(spec, old, errors, report);
                return old.map(|o| (o.clone(), false));
            }
        };
        // dnssec-validation, zonemd-verify: a version that fails is not
        // served (the previous one stays, as Knot). The stage's checks, as
        // every change's seal runs them; a zone with a writer has its file
        // checked by its ZONEMD as the writer applies it.
        let validate = self.validating.contains(&spec.name);
        let zonemd_verify = self.verifying.contains(&spec.name) && !self.live.contains(&spec.name);
        if validate || zonemd_verify {
            let stage = lode_zones::Stage {
                validate,
                zonemd_verify,
                ..lode_zones::Stage::default()
            };
            let now = crate::clock::unix_now();
            let replace = lode_zones::Change::Replace(l.zone.clone());
            if let Err(e) = stage.run(&l.zone, replace, now) {
                let e = format!("{}: {e}", spec.source);
                self.failed(spec, old, vec![e], report);
                return old.map(|o| (o.clone(), false));
            }
        }
        let z = &l.zone;
        macro_rules! loaded {
            ($level:expr) => {
                tracing::event!(
                    $level,
                    zone = %name,
                    serial = z.serial(),
                    records = z.record_count(),
                    names = z.node_count(),
                    duration_ms = millis(l.elapsed),
                    source = %spec.source,
                    "zone loaded in {}",
                    format_duration(l.elapsed),
                )
            };
        }
        // Many zones at once (a hosting company's start: 10^6 lines, a
        // second of logging per 10^5): each at debug, the load's summary
        // line says how many.
        if quiet {
            loaded!(tracing::Level::DEBUG);
        } else {
            loaded!(tracing::Level::INFO);
        }
        for w in &l.warnings {
            tracing::warn!("{w}");
        }
        let mut note = format!(
            "serial {}, {} records, read in {}{}",
            z.serial(),
            z.record_count(),
            format_duration(l.elapsed),
            if l.from_snapshot {
                " from its snapshot"
            } else {
                ""
            }
        );
        // A zone that takes updates changes through its writer: the file's
        // difference from the served version is journaled and published
        // like an update.
        let mut via_writer = false;
        if let (Some(u), true, Some(old)) = (&self.updates, self.live.contains(&spec.name), old) {
            match u.submit_file(&spec.name, l.zone.clone(), spec.source.tag()) {
                Ok(what) => {
                    tracing::info!("zone {name}: zone file applied as a change: {what}");
                    note = format!("applied as a change through its journal: {what}");
                    via_writer = true;
                }
                Err(e) => {
                    let e = format!("{}: {e}", spec.source);
                    tracing::error!("zone {name}: zone file not applied: {e}");
                    self.failed(spec, Some(old), vec![e.to_string()], report);
                    return Some((old.clone(), false));
                }
            }
        }
        self.loads.loaded(spec, &l, snapshot_dir);
        report.notes.push((name.clone(), note));
        report.loaded.push(name);
        // Random lookups over a large index: fewer TLB misses on huge pages
        // (collapsed meanwhile: the zone is served at once).
        crate::huge_pages::collapse_later(&l.zone);
        Some((
            Served {
                spec: spec.clone(),
                files: l.files,
                zone: Some(l.zone),
            },
            via_writer,
        ))
    }

    /// Logs, records and reports a zone that could not be (re)loaded.
    fn failed(
        &self,
        spec: &ZoneSpec,
        old: Option<&Served>,
        errors: Vec<String>,
        report: &mut ReloadReport,
    ) {
        let name = spec.name.to_string();
        let kept_old = old.is_some();
        if kept_old {
            tracing::error!(
                zone = %name,
                errors = errors.len(),
                "zone {name}: reload failed ({}), previous version still served",
                count_errors(errors.len())
            );
        } else {
            tracing::error!(
                zone = %name,
                errors = errors.len(),
                "zone {name}: load failed ({}), not served",
                count_errors(errors.len())
            );
        }
        for e in errors.iter().take(SHOWN_ERRORS) {
            tracing::error!("{e}");
        }
        if let Some(more) = more_errors(errors.len()) {
            tracing::error!("{more}");
        }
        self.loads.failed(spec, &errors, kept_old);
        report.failed.push(ZoneFailure {
            zone: name,
            kept_old,
            errors,
        });
    }

    /// `zone-reload NAME`: reads that zone's file again now, even when its
    /// stamp is unchanged (as `knotc zone-reload`), with the configuration
    /// the server runs with; the other zones are not touched.
    pub(crate) fn reload_zone(&mut self, name: &lode_wire::Name) -> ReloadReport {
        let refuse = |why: String| ReloadReport {
            refused: Some(why),
            ..ReloadReport::default()
        };
        let config: &Config = self.loaded.as_deref().unwrap_or(&self.running);
        let snapshot_dir = config.snapshot_dir.clone();
        let Some(spec) = config.zones.iter().find(|s| s.name == *name).cloned() else {
            let member = self
                .updates
                .as_ref()
                .is_some_and(|u| u.zone_names().iter().any(|(n, _)| n == name));
            return refuse(if member {
                format!(
                    "zone {name}: a catalog member, transferred from its primaries: \
                     use `lode zone-refresh {name}` or `lode zone-retransfer {name}`"
                )
            } else {
                format!("zone {name}: no such zone is configured")
            });
        };
        match &spec.source {
            ZoneSource::Transfer => {
                return refuse(format!(
                    "zone {name}: a secondary, it has no zone file to read: \
                     use `lode zone-refresh {name}` or `lode zone-retransfer {name}`"
                ))
            }
            ZoneSource::Catalog(_) => {
                return refuse(format!(
                    "zone {name}: a catalog generated from its member zones, it has no zone file \
                     (it follows the configuration: `lode reload`)"
                ))
            }
            ZoneSource::File(_) | ZoneSource::Embedded { .. } => {}
        }
        tracing::info!("zone {name}: reloading (zone-reload)");
        // Read from the text: a snapshot of a file changed within its
        // modification time would be taken for it.
        if let (ZoneSource::File(_), Some(dir)) = (&spec.source, &snapshot_dir) {
            let _ = std::fs::remove_file(crate::loading::snapshot::path_for(dir, &spec.name));
        }
        let result = zones::load_all(&[&*spec], snapshot_dir.as_deref())
            .pop()
            .unwrap_or_else(|| Err(vec![format!("zone {name}: not loaded")]));
        let mut report = ReloadReport::default();
        let index = self.served.iter().position(|s| s.spec.name == *name);
        let old = index.map(|i| &self.served[i]);
        let settled = self.settle(
            &spec,
            old,
            result,
            snapshot_dir.as_deref(),
            &mut report,
            false,
        );
        let Some((mut served, via_writer)) = settled else {
            return report;
        };
        if !via_writer {
            if let Some(z) = &served.zone {
                self.publish_static(z.clone());
            }
        }
        served.zone = None;
        match index {
            Some(i) => self.served[i] = served,
            None => self.served.push(served),
        }
        log_memory();
        report
    }

    /// Publishes a zone that takes no changes (no writer, no journal) as
    /// read again: a whole new version through the one commit.
    fn publish_static(&self, zone: Arc<Zone>) {
        let base = self
            .publisher
            .get(&zone.origin().to_name())
            .unwrap_or_else(|| zone.clone());
        let stage = lode_zones::Stage::default();
        let committed = stage
            .run(
                &base,
                lode_zones::Change::Replace(zone),
                crate::clock::unix_now(),
            )
            .map_err(|e| e.to_string())
            .and_then(|sealed| {
                crate::publish::commit::commit(
                    &self.publisher,
                    &sealed,
                    crate::publish::commit::Journaling::None,
                )
                .map_err(|e| e.to_string())
            });
        if let Err(e) = committed {
            tracing::error!("zone {}: not published: {e}", base.origin());
        }
    }

    /// True when the served `old` version stays: its source is unchanged.
    /// A zone file its writer wrote (zonefile-sync, zone-flush) holds a
    /// version already served: it is not read again.
    fn keeps(&self, old: &Served, spec: &ZoneSpec) -> bool {
        if unchanged(old, spec) {
            return true;
        }
        match (&spec.source, &self.updates) {
            (ZoneSource::File(path), Some(u)) if old.spec.source == spec.source => {
                u.written.is_current(&spec.name, path)
            }
            _ => false,
        }
    }
}

/// True when `old` was loaded from the same source, unchanged since.
fn unchanged(old: &Served, spec: &ZoneSpec) -> bool {
    if old.spec.source != spec.source {
        return false;
    }
    match &spec.source {
        // A secondary's contents come from its primaries, never from a reload.
        ZoneSource::Embedded { .. } | ZoneSource::Transfer | ZoneSource::Catalog(_) => true,
        // Every file read (zone file and includes) has the same stamp as then.
        ZoneSource::File(_) => {
            !old.files.is_empty()
                && old
                    .files
                    .iter()
                    .all(|(p, s)| s.is_some() && *s == crate::config::stamp::FileStamp::of(p))
        }
    }
}

pub(crate) fn log_memory() {
    // Parsing leaves freed blocks in the allocator's heaps: give them back
    // before measuring, so the figure is what the zones hold.
    lode_io::mem::trim_heap();
    if let Some(kib) = crate::metrics::process::resident_kib() {
        tracing::info!("resident memory: {:.1} MiB", kib as f64 / 1024.0);
    }
}

impl fmt::Debug for ReloadRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ReloadRequest")
    }
}

pub(crate) fn request_reload(
    tx: Option<&mpsc::Sender<ReloadRequest>>,
    wait: bool,
) -> Option<ReloadReport> {
    request(tx, wait, Asked::All)
}

/// `zone-reload NAME` on the reloader thread; waits for its report (None:
/// the server is stopping).
pub(crate) fn request_zone_reload(
    tx: &mpsc::Sender<ReloadRequest>,
    zone: lode_wire::Name,
) -> Option<ReloadReport> {
    request(Some(tx), true, Asked::Zone(zone))
}

/// A zone command (`zone-purge`, `zone-backup`, `zone-restore`) on the
/// reloader thread; waits for its report (None: the server is stopping).
pub(crate) fn request_asked(tx: &mpsc::Sender<ReloadRequest>, what: Asked) -> Option<ReloadReport> {
    request(Some(tx), true, what)
}

fn request(
    tx: Option<&mpsc::Sender<ReloadRequest>>,
    wait: bool,
    what: Asked,
) -> Option<ReloadReport> {
    let tx = tx?;
    if !wait {
        tx.send(ReloadRequest { reply: None, what }).ok()?;
        return None;
    }
    let (reply_tx, reply_rx) = mpsc::channel();
    tx.send(ReloadRequest {
        reply: Some(reply_tx),
        what,
    })
    .ok()?;
    reply_rx.recv().ok()
}
