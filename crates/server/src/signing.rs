//! A signed zone's keys: read from its folder in `kasp-db`, made by the
//! policy when there are none yet (as Knot does when a signed zone first
//! loads), and the zone's signer built from them.
//!
//! ```text
//!  kasp-db/
//!    example.com/                    one folder per zone (the root zone: "root")
//!      Kexample.com+013+12345.key    one file per key, mode 0600 (format: lode_dnssec::key)
//! ```

use std::path::{Path, PathBuf};

use lode_dnssec::{Signer, SigningKey, KSK_FLAGS, ZSK_FLAGS};
use lode_wire::Name;

use crate::config::Signing;

/// The folder of a zone's keys.
pub fn key_dir(kasp_db: &Path, zone: &Name) -> PathBuf {
    let name = zone.to_lowercase().to_string();
    let name = name.trim_end_matches('.');
    kasp_db.join(if name.is_empty() { "root" } else { name })
}

/// The signer of `zone`: its keys, made first when it has none.
pub(crate) fn signer(
    kasp_db: &Path,
    zone: &Name,
    signing: &Signing,
    now: u64,
) -> Result<Signer, String> {
    let dir = key_dir(kasp_db, zone);
    let mut keys = SigningKey::read_all(&dir, zone.as_ref()).map_err(|e| e.to_string())?;
    if keys.is_empty() {
        let roles: &[u16] = if signing.single_type {
            &[KSK_FLAGS]
        } else {
            &[KSK_FLAGS, ZSK_FLAGS]
        };
        for &flags in roles {
            let bits = if flags == KSK_FLAGS {
                signing.ksk_size
            } else {
                signing.zsk_size
            };
            let key = SigningKey::generate_sized(zone, signing.algorithm, flags, bits, now)
                .map_err(|e| e.to_string())?;
            let path = key.write(&dir).map_err(|e| e.to_string())?;
            let role = match (flags, signing.single_type) {
                (_, true) => "CSK",
                (KSK_FLAGS, _) => "KSK",
                _ => "ZSK",
            };
            tracing::info!(
                "zone {zone}: DNSSEC, new {role}, tag {}, algorithm {}, in {}",
                key.tag(),
                signing.algorithm,
                path.display()
            );
            if key.is_ksk() {
                tracing::info!(
                    "zone {zone}: DNSSEC, DS for the parent: {zone} DS {}",
                    key.ds_text()
                );
            }
            keys.push(key);
        }
    }
    let tags: Vec<String> = keys
        .iter()
        .map(|k| format!("{} {}", if k.is_ksk() { "KSK" } else { "ZSK" }, k.tag()))
        .collect();
    tracing::debug!("zone {zone}: DNSSEC, keys {}", tags.join(", "));
    Signer::new(zone, keys, signing.policy.clone()).map_err(|e| e.to_string())
}

/// The whole-zone signing progress of each signed zone (by origin), for
/// `zone-status` and the progress lines (see [`watch`]): one entry per
/// signed zone, looked up by name (10^5 zones start in linear time).
type Watched = std::collections::HashMap<Name, std::sync::Arc<lode_dnssec::Progress>>;
static PROGRESS: std::sync::Mutex<Option<Watched>> = std::sync::Mutex::new(None);

/// How long a whole signing runs before its progress is logged, and how
/// often after that.
const PROGRESS_AFTER: std::time::Duration = std::time::Duration::from_secs(5);
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Watches the whole signings of `zone`'s signer: `zone-status` shows how
/// far one is, and one running longer than 5 s is logged every 10 s
/// ("signing whole: 45 % …") by one reporter thread for all zones.
pub(crate) fn watch(zone: &Name, signer: &Signer) {
    PROGRESS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(Watched::new)
        .insert(zone.clone(), signer.progress());
    static REPORTER: std::sync::Once = std::sync::Once::new();
    REPORTER.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("lode-sign-progress".into())
            .spawn(report);
        if let Err(e) = spawned {
            tracing::warn!("DNSSEC signing progress will not be logged: {e}");
        }
    });
}

/// (signed, to sign) of `zone`'s whole signing under way, if one is.
pub(crate) fn progress(zone: &Name) -> Option<(u64, u64)> {
    let all = PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
    all.as_ref()?.get(zone)?.get()
}

/// A signed zone's counters for metrics and `zone-status`: signatures
/// made, when the next are made again, the earliest expiry (see
/// [`lode_dnssec::Progress::schedule`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schedule {
    pub made: u64,
    pub next_refresh: Option<u64>,
    pub earliest_expiry: Option<u64>,
}

fn schedule_of(p: &lode_dnssec::Progress) -> Schedule {
    let (next_refresh, earliest_expiry) = p.schedule();
    Schedule {
        made: p.made(),
        next_refresh,
        earliest_expiry,
    }
}

/// The schedule of `zone`, if it is signed here.
pub(crate) fn schedule(zone: &Name) -> Option<Schedule> {
    let all = PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
    all.as_ref()?.get(zone).map(|p| schedule_of(p))
}

/// The schedules of every zone signed here (one pass under the lock).
pub(crate) fn schedules() -> std::collections::HashMap<Name, Schedule> {
    let all = PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
    all.iter()
        .flatten()
        .map(|(n, p)| (n.clone(), schedule_of(p)))
        .collect()
}

/// The reporter: once a second, a line for each whole signing due one
/// (a pass over the atomics of every signed zone; names are copied only
/// for the signings running).
fn report() {
    use std::time::Instant;
    // Zone → (seen running since, last logged).
    let mut running: std::collections::HashMap<Name, (Instant, Option<Instant>)> =
        std::collections::HashMap::new();
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
        let now = Instant::now();
        let busy: Vec<(Name, (u64, u64))> = {
            let all = PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
            all.iter()
                .flatten()
                .filter_map(|(n, p)| Some((n.clone(), p.get()?)))
                .collect()
        };
        running.retain(|zone, _| busy.iter().any(|(n, _)| n == zone));
        for (zone, (done, total)) in busy {
            let (since, last) = running.entry(zone.clone()).or_insert((now, None));
            let due = now.duration_since(*since) >= PROGRESS_AFTER
                && last.is_none_or(|l| now.duration_since(l) >= PROGRESS_EVERY);
            if due {
                *last = Some(now);
                tracing::info!(
                    "zone {zone}: DNSSEC, signing whole: {} ({done} of {total} names and chain records), {} s",
                    percent(done, total),
                    now.duration_since(*since).as_secs()
                );
            }
        }
    }
}

/// `done` of `total` as a percentage, for people.
pub(crate) fn percent(done: u64, total: u64) -> String {
    format!("{:.0} %", done as f64 * 100.0 / total.max(1) as f64)
}
