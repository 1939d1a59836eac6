//! Starting zone writers: a zone's state snapshot read, its journal
//! replayed through the zone-update stage, the version published, the
//! writer put on the pool and its queue handed to the zone's door — for
//! the configured zones at start (on every core) and for catalog members.

use std::sync::Arc;
use std::time::Instant;

use lode_journal::Journal;
use lode_wire::Name;
use lode_zonedb::{Changeset, Zone};
use lode_zones::{Change, Sealed, Stage};

use crate::publish::commit::{commit, Journaling};

use crate::config::Config;

use super::super::pool::WriterQueue;
use super::super::{flushed_path, journal_path, state_path, Updates, WriterError};
use super::{CommitLog, Writer};
use crate::clock::unix_now;
use crate::publish::Publisher;

/// Opens the journals of the zones that take updates, replays them onto the
/// published versions, and puts their writers on the pool.
pub(crate) fn start_writers(updates: &Updates, config: &Config, publisher: &Arc<Publisher>) {
    let live: Vec<(
        Arc<crate::config::ZoneSpec>,
        Arc<crate::config::ZoneOptions>,
    )> = config
        .zones
        .iter()
        .map(|spec| (spec.clone(), config.zone_options(&spec.name)))
        .filter(|(_, options)| options.is_live())
        .collect();
    start_writers_with(updates, config, &live, publisher, Sweep::StaleTemps);
}

/// Starts the writers of `zones` (opened on every core) and hands their
/// queues to the zones' doors in one go; returns the zones whose writer
/// started (the others' failures are logged). A zone not yet in the
/// published set (a secondary with nothing transferred) gets its
/// placeholder published first, all of them in one new set.
pub(crate) fn start_writers_for(
    updates: &Updates,
    config: &Config,
    zones: &Starting,
    publisher: &Arc<Publisher>,
) -> std::collections::HashSet<Name> {
    start_writers_with(updates, config, zones, publisher, Sweep::No)
}

/// Zones whose writers start together, with their options.
pub(crate) type Starting = [(
    Arc<crate::config::ZoneSpec>,
    Arc<crate::config::ZoneOptions>,
)];

/// Whether starting writers also clears the journal folder of what a crash
/// of the last run left half written (never renamed into place): at start,
/// in the same pass as the folder's listing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sweep {
    StaleTemps,
    No,
}

fn start_writers_with(
    updates: &Updates,
    config: &Config,
    zones: &Starting,
    publisher: &Arc<Publisher>,
    sweep: Sweep,
) -> std::collections::HashSet<Name> {
    let Some(dir) = config.journal_dir.as_deref().filter(|_| !zones.is_empty()) else {
        return std::collections::HashSet::new();
    };
    // The last run's commit log goes back into the journals before any is
    // opened (once: zones started later find it running).
    if !updates.start_commit_log(dir) {
        return std::collections::HashSet::new();
    }
    // Journals and states are created when first needed, but the folder is
    // there from the start (secondaries keep their timers in it).
    if let Err(e) = std::fs::create_dir_all(dir) {
        tracing::error!("journal-dir {}: {e}", dir.display());
    }
    let missing: Vec<Name> = {
        let set = publisher.set.load();
        zones
            .iter()
            .filter(|(spec, _)| spec.source == crate::config::ZoneSource::Transfer)
            .map(|(spec, _)| spec.name.to_lowercase())
            .filter(|n| set.slot(n.as_ref()).is_none())
            .collect()
    };
    if !missing.is_empty() {
        publisher.update(|set| {
            for n in &missing {
                set.insert(Arc::new(crate::publish::placeholder(n)));
            }
        });
    }
    let present = &Present::list(dir, zones.len(), sweep);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(zones.len());
    let chunk = zones.len().div_ceil(threads);
    let opened: Vec<(Name, WriterQueue)> = std::thread::scope(|s| {
        let handles: Vec<_> = zones
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .filter_map(|(spec, options)| {
                            let q =
                                open_writer(updates, config, spec, options, publisher, present)?;
                            Some((spec.name.to_lowercase(), q))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let started = opened.iter().map(|(n, _)| n.clone()).collect();
    updates.set_writers(opened);
    started
}

/// Starts one zone's writer (see [`start_writers_for`]); false when it
/// could not start (logged).
#[cfg(test)]
pub(crate) fn start_writer(
    updates: &Updates,
    config: &Config,
    spec: &crate::config::ZoneSpec,
    options: &crate::config::ZoneOptions,
    publisher: &Arc<Publisher>,
) -> bool {
    let zones = [(Arc::new(spec.clone()), Arc::new(options.clone()))];
    !start_writers_for(updates, config, &zones, publisher).is_empty()
}

/// Opens one zone's writer: its journal replayed onto its state (or the
/// loaded version, or, for a secondary with nothing yet, a placeholder),
/// published, the writer put on the pool. None when the zone cannot take
/// updates (why is logged).
fn open_writer(
    updates: &Updates,
    config: &Config,
    spec: &crate::config::ZoneSpec,
    options: &crate::config::ZoneOptions,
    publisher: &Arc<Publisher>,
    present: &Present,
) -> Option<WriterQueue> {
    let dir = config.journal_dir.as_ref()?;
    let origin = spec.name.to_lowercase();
    let secondary = spec.source == crate::config::ZoneSource::Transfer;
    let zone = match publisher.get(&origin) {
        Some(z) => z,
        // A secondary with nothing transferred yet: SERVFAIL until then.
        None if secondary => Arc::new(crate::publish::placeholder(&origin)),
        None => return None, // not loaded: its failure was logged
    };
    let path = journal_path(dir, &origin);
    let settings = lode_journal::Settings {
        max_usage: config.journal_max_usage,
        max_depth: config.journal_max_depth,
    };
    let opened = if present.may_hold(&path) {
        Journal::open(&path, &origin, settings)
    } else {
        Ok(Journal::absent(&path, &origin, settings))
    };
    let (journal, recovery) = match opened {
        Ok(j) => j,
        Err(e) => {
            tracing::error!(
                "zone {origin}: journal {}: {e}; updates to the zone get SERVFAIL",
                path.display()
            );
            return None;
        }
    };
    if let Some(t) = &recovery.torn_tail {
        tracing::warn!(
            "zone {origin}: journal {}: a torn record at the end ({t:?}) was cut off (never acknowledged)",
            path.display()
        );
    }
    if let Some(d) = &recovery.damage {
        tracing::error!(
            "zone {origin}: journal {} damaged ({d:?}): replay stops there, the zone serves the last good state",
            path.display()
        );
    }
    let serial_policy = options.serial_policy.parse().unwrap_or_default();
    let mut key_roll = None;
    let mut key_event_at = None;
    let stage = match (&options.signing, &config.kasp_db) {
        (Some(signing), Some(kasp_db)) => {
            let now = unix_now();
            let ttls = crate::update::signing::ttls(signing, &zone);
            let events = crate::update::signing::key_events(
                kasp_db,
                &origin,
                signing,
                ttls,
                now,
                lode_dnssec::Trigger::Timers,
                crate::update::signing::Counters {
                    zone: None,
                    server: updates.shared.events.signatures.clone(),
                },
            );
            match events {
                Ok((events, _)) => {
                    updates.shared.signings.watch(&origin, &events.signer);
                    let mut announced = None;
                    crate::update::signing::announce(&origin, events.action, &mut announced, true);
                    key_event_at = events.next.map(|t| super::keys::instant_of(t, now));
                    key_roll = Some(Box::new(super::keys::KeyRoll {
                        kasp_db: kasp_db.clone(),
                        signing: signing.clone(),
                        // The first refresh pass settles what waits for one.
                        rekeying: true,
                        announced,
                        parents: parent_sources(signing, updates),
                        parent: {
                            let mut p = lode_control::parent::Parent::new();
                            let waits = events.waiting_ds.is_some();
                            // A KSK waiting for its DS: its CDS is out (or
                            // comes with the first signing), the parent
                            // told after a propagation delay (again after a
                            // restart), and asked at once.
                            if waits && !signing.ds_push.is_empty() {
                                let delay = signing.keys.propagation_delay;
                                p.push_after(Instant::now(), std::time::Duration::from_secs(delay));
                            }
                            p.waiting_for_ds(waits && signing.submission.is_some(), Instant::now());
                            p
                        },
                        pushing: None,
                        waiting: events.waiting_ds,
                        checking: None,
                    }));
                    Stage::signed(serial_policy, Arc::new(events.signer))
                }
                Err(e) => {
                    tracing::error!(
                        "zone {origin}: DNSSEC keys: {e}; the zone is not signed and takes no changes"
                    );
                    return None;
                }
            }
        }
        _ => Stage::new(serial_policy),
    };
    let mut stage = stage;
    stage.validate = options.validation;
    stage.zonemd = options.zonemd_generate;
    stage.zonemd_verify = options.zonemd_verify;
    let file_tag = spec.source.tag();
    let state = state_path(dir, &origin);
    let flushed = flushed_path(dir, &origin);
    let mut writer = Writer {
        origin: origin.clone(),
        journal,
        publisher: publisher.clone(),
        stage,
        compaction: None,
        file_tag: file_tag.clone(),
        upkeep: lode_control::upkeep::Upkeep::new(zone.serial(), Instant::now()),
        max_usage: config
            .journal_max_usage_set
            .then_some(config.journal_max_usage),
        log: CommitLog::default(),
        zone_file: match &spec.source {
            crate::config::ZoneSource::File(p) => Some(p.clone()),
            crate::config::ZoneSource::Transfer => config
                .secondary_files
                .get(&origin)
                .map(|p| p.as_path().into()),
            crate::config::ZoneSource::Embedded { .. } | crate::config::ZoneSource::Catalog(_) => {
                None
            }
        },
        sync: options.zonefile_sync,
        written: updates.written.clone(),
        state_pending: false,
        holds_file: false,
        shared: updates.shared.clone(),
        file_write: None,
        resign_round: lode_dnssec::Round::default(),
        keys: key_roll,
        signs_transfers: false,
        refetchable: false,
        commit_log: updates.commit_log(),
        pending: None,
        waiting: Vec::new(),
    };
    writer.upkeep.schedule_key_event(key_event_at);
    // The zone's truth is its state snapshot plus the journal after it;
    // the zone file is the operator's input, applied as a difference
    // when it was edited since the state took it in.
    let read = if present.may_hold(&state) {
        crate::loading::snapshot::read_state(&state, &origin)
    } else {
        Ok(None)
    };
    // The journal continues a state that was read, not one discarded.
    let mut discard_state = false;
    let (base, state_tag) = match read {
        Ok(Some((s, tag))) => {
            tracing::info!(
                "zone {origin}: state at serial {} read from {}",
                s.serial(),
                state.display()
            );
            (Arc::new(s), Some(tag))
        }
        // First start with updates (or a journal from before states):
        // the journal continues the zone file.
        Ok(None) => (zone.clone(), None),
        // A secondary's state may be one written without a sync (see
        // `Durability::Cached`) and cut short by a power loss: its primaries
        // have the zone, so it starts with nothing and transfers it again.
        Err(e) if secondary => {
            tracing::warn!("zone {origin}: {e}; the zone is transferred again");
            discard_state = true;
            (zone.clone(), None)
        }
        Err(e) => {
            tracing::error!("zone {origin}: {e}; updates to the zone get SERVFAIL");
            return None;
        }
    };
    // A secondary signed here: the primary's serial its version stands
    // for, from the newest journal mark, else the state's tag (unknown:
    // the first refresh transfers the zone whole).
    writer.refetchable = secondary && writer.stage.signer.is_none();
    if secondary && writer.stage.signer.is_some() {
        writer.signs_transfers = true;
        let upstream = recovery
            .upstream_serial
            .filter(|_| !discard_state)
            .or_else(|| state_tag.as_deref().and_then(super::parse_upstream_tag));
        match upstream {
            Some(u) => writer.set_upstream(u),
            None => publisher.set_upstream(&origin, None),
        }
    }
    // A secondary signed here before and not now: its versions are
    // numbered here, not by its primary, so the first refresh transfers
    // the primary's zone whole (see `take_whole`).
    let signed_here_before = recovery.upstream_serial.is_some()
        || state_tag
            .as_deref()
            .and_then(super::parse_upstream_tag)
            .is_some();
    if secondary && writer.stage.signer.is_none() && signed_here_before && !discard_state {
        tracing::info!(
            "zone {origin}: signed here until now and no longer: its primary's zone is transferred whole"
        );
        publisher.set_upstream(&origin, None);
    }
    let changesets = if discard_state {
        &[][..]
    } else {
        &recovery.changesets[..]
    };
    let current = match replay(&writer.stage, &base, changesets) {
        Ok((sealed, n)) => {
            if n > 0 {
                tracing::info!(
                    "zone {origin}: {n} changesets replayed from {}, serial {} → {}",
                    path.display(),
                    base.serial(),
                    sealed.version.serial()
                );
            }
            sealed
        }
        Err(e) => {
            tracing::error!(
                "zone {origin}: journal {}: {e}; updates to the zone get SERVFAIL",
                path.display()
            );
            return None;
        }
    };
    // The writer takes the zone over: what start made of it is served.
    if let Err(e) = commit(publisher, &current, Journaling::Recovered) {
        tracing::error!("zone {origin}: not served as recovered: {e}");
        return None;
    }
    let current = current.version;
    // A signed zone not signed by its keys yet (a first load, keys
    // changed) or with signatures due is signed whole before it serves.
    let signed = writer.stage.signer.is_some();
    let signed_whole = !crate::publish::is_placeholder(&current)
        && writer
            .stage
            .signer
            .as_ref()
            .is_some_and(|s| !s.is_current(&current, unix_now()));
    if signed_whole {
        let started = Instant::now();
        // The signed version gets the serial policy's next, also at a
        // first load (Knot with its journal, `journal-content: changes`,
        // its default: "serial none -> 1 -> 2"): whatever holds the
        // unsigned version at the file's serial sees a newer one.
        match writer.replace(current.clone(), None) {
            Ok(serial) => tracing::info!(
                "zone {origin}: DNSSEC, signed whole in {:.1} s, serial {} → {serial}",
                started.elapsed().as_secs_f64(),
                current.serial()
            ),
            Err(e) => {
                tracing::error!(
                    "zone {origin}: DNSSEC, signing failed: {e}; the zone takes no changes"
                );
                return None;
            }
        }
    }
    // A signed zone's key records as its keys of the moment call for (a key
    // event while it was down, or a crash between a key file and the
    // journal).
    if signed && !signed_whole && !crate::publish::is_placeholder(&current) {
        if let Err(e) = writer.run_stage(Change::Rekey, None) {
            tracing::error!("zone {origin}: DNSSEC, key records not brought up to date: {e}");
        }
    }
    // A file the writer wrote itself (zonefile-sync, zone-flush) is not
    // an edit, though the state may have taken in an older one.
    let edited = !secondary
        && state_tag.as_ref().is_some_and(|t| *t != file_tag)
        && !(present.may_hold(&flushed)
            && crate::loading::flush::read_flushed_tags(&flushed).contains(&file_tag));
    if edited {
        tracing::info!("zone {origin}: the zone file changed since the zone's state took it in");
        if let Err(e) = writer.apply_file(&zone, unix_now()) {
            tracing::error!("zone {origin}: zone file not applied: {e}");
        }
    }
    // A zone's state is written when it is first needed: before its first
    // change is journaled (a secondary's: by its first transfer), so that
    // thousands of zones that take updates write nothing at start.
    if edited {
        if let Err(e) = writer.write_state_now(true) {
            tracing::error!(
                "zone {origin}: cannot write its state ({e}); updates to the zone get SERVFAIL"
            );
            return None;
        }
    } else if state_tag.is_none() && !secondary && !signed_whole {
        writer.state_pending = true;
    }
    // The ZONEMD as zonemd-generate asks (a first load: with the serial
    // policy's next, as Knot's load).
    writer.digest();
    // The journal was read whole: its file is opened again when needed.
    writer.journal.release();
    // A signed zone looks for due signatures at once (then when they fall due).
    let first = signed.then(Instant::now);
    writer.upkeep.schedule_resign(first);
    Some(updates.pool.add(
        origin.to_string().trim_end_matches('.').to_owned(),
        Box::new(writer),
        first,
    ))
}

/// The parent's servers of a policy: those its `ksk-submission` asks
/// (each address of each remote) and the primaries its `ds-push` sends the
/// DS set to (each remote's addresses, tried in turn), with their TSIG
/// keys and TLS.
pub(crate) fn parent_sources(
    signing: &crate::config::Signing,
    updates: &Updates,
) -> crate::update::ds_push::Parents {
    let keys = updates.keys();
    let sources = |r: &crate::config::Remote| -> Vec<crate::fetch::Source> {
        let tls = match &r.tls {
            Some(t) => match crate::tls::client(t) {
                Some(c) => Some(c),
                None => return Vec::new(), // never in clear instead; the reason is logged
            },
            None => None,
        };
        let key = r
            .key
            .as_ref()
            .and_then(|n| keys.find_shared(n.as_ref()).cloned());
        r.addresses
            .iter()
            .map(|a| crate::fetch::Source {
                addr: *a,
                key: key.clone(),
                tls: tls.clone(),
                via: r.via_for(*a),
            })
            .collect()
    };
    crate::update::ds_push::Parents {
        asked: signing
            .submission
            .iter()
            .flat_map(|s| &s.parents)
            .flat_map(sources)
            .collect(),
        pushed: signing.ds_push.iter().map(sources).collect(),
    }
}

/// Applies the journal's changesets that continue `zone`'s serial.
fn replay(
    stage: &Stage,
    zone: &Arc<Zone>,
    changesets: &[Changeset],
) -> Result<(Sealed, usize), WriterError> {
    let Some(start) = changesets
        .iter()
        .position(|c| c.serial_from() == zone.serial())
    else {
        return match changesets.last() {
            Some(last) if last.serial_to() != zone.serial() => Err(WriterError::JournalGap {
                first: changesets[0].serial_from(),
                last: last.serial_to(),
                loaded: zone.serial(),
            }),
            _ => Ok((stage.run(zone, Change::Journal(&[]), unix_now())?, 0)),
        };
    };
    let replayed = &changesets[start..];
    Ok((
        stage.run(zone, Change::Journal(replayed), unix_now())?,
        replayed.len(),
    ))
}

/// What `journal-dir` holds, listed once when many writers start together
/// (at 10^5 zones a probe per file costs three failing opens per zone;
/// most zones have no journal, state or note yet). Few writers: no list,
/// every file is probed. At start the same pass removes what a crash left
/// half written ([`Sweep`]; it was a second listing of the folder). The names are kept as 64-bit hashes (~16 bytes a
/// file, not a copy of each name: 10^6 zones with journals, states and
/// notes make 3·10^6 files); a hash shared by two names only costs a probe.
pub(crate) struct Present(Option<std::collections::HashSet<u64>>);

impl Present {
    /// Zones started together from which the folder is listed.
    const LIST_FROM: usize = 64;

    fn list(dir: &std::path::Path, zones: usize, sweep: Sweep) -> Present {
        let keep = zones >= Self::LIST_FROM;
        if !keep && sweep == Sweep::No {
            return Present(None);
        }
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            // Unreadable as a whole: each open says why.
            Err(_) => return Present(None),
        };
        let mut names = std::collections::HashSet::new();
        let mut removed = 0;
        for e in entries.flatten() {
            let name = e.file_name();
            if sweep == Sweep::StaleTemps && lode_journal::is_stale_temp(&name) {
                removed += usize::from(std::fs::remove_file(e.path()).is_ok());
            } else if keep {
                names.insert(Self::key(&name));
            }
        }
        if removed > 0 {
            tracing::info!(
                "journal-dir {}: {removed} temporary file(s) a crash left removed",
                dir.display()
            );
        }
        Present(keep.then_some(names))
    }

    /// False when `path` (in the folder) was not there when it was listed.
    fn may_hold(&self, path: &std::path::Path) -> bool {
        match (&self.0, path.file_name()) {
            (Some(names), Some(name)) => names.contains(&Self::key(name)),
            _ => true,
        }
    }

    /// A file name's hash (fixed keys: the same in every thread).
    fn key(name: &std::ffi::OsStr) -> u64 {
        use std::hash::{BuildHasher, BuildHasherDefault};
        BuildHasherDefault::<std::hash::DefaultHasher>::default().hash_one(name)
    }
}

#[cfg(test)]
mod tests {
    use super::{Present, Sweep};

    #[test]
    fn one_listing_sweeps_stale_temps_and_keeps_the_names() {
        let dir = std::env::temp_dir().join(format!("lode-present-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ours = format!("b.state.tmp.{}", std::process::id());
        for f in ["a.jnl", "a.jnl.tmp.1", ours.as_str()] {
            std::fs::write(dir.join(f), b"x").unwrap();
        }
        // Many zones: the names are kept, a crash's temporary file removed,
        // this process's own (a write under way) left.
        let p = Present::list(&dir, 1000, Sweep::StaleTemps);
        assert!(!dir.join("a.jnl.tmp.1").exists());
        assert!(dir.join(&ours).exists());
        assert!(p.may_hold(&dir.join("a.jnl")));
        assert!(!p.may_hold(&dir.join("a.state")));
        assert!(!p.may_hold(&dir.join("a.jnl.tmp.1")));
        // Few zones: nothing kept (every file probed), the sweep still made.
        std::fs::write(dir.join("c.jnl.tmp.2"), b"x").unwrap();
        let p = Present::list(&dir, 3, Sweep::StaleTemps);
        assert!(!dir.join("c.jnl.tmp.2").exists());
        assert!(p.may_hold(&dir.join("anything")));
        // Zones added later (catalog members): no sweep.
        std::fs::write(dir.join("d.jnl.tmp.3"), b"x").unwrap();
        let _ = Present::list(&dir, 1000, Sweep::No);
        assert!(dir.join("d.jnl.tmp.3").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
