//! A signed zone's keys: read from its folder in `kasp-db`, made by the
//! policy when there are none yet (as Knot does when a signed zone first
//! loads), and the zone's signer built from them.
//!
//! ```text
//!  kasp-db/
//!    example.com/                    one folder per zone (the root zone: "root")
//!      Kexample.com+013+12345.private  the private key, its role and timing, mode 0600
//!                                      (format: lode_dnssec::key)
//!      Kexample.com+013+12345.key      the public key, as BIND's: the DNSKEY record
//!  (a folder of an older version, whose .key files held the private keys, is
//!  split so when read)
//! ```

use std::path::{Path, PathBuf};

use lode_dnssec::{Role, Signer, SigningKey, Trigger, Ttls, KSK_FLAGS, ZSK_FLAGS};
use lode_wire::Name;
use lode_zonedb::Zone;

use crate::config::Signing;

/// The folder of a zone's keys.
pub fn key_dir(kasp_db: &Path, zone: &Name) -> PathBuf {
    let name = zone.to_lowercase().to_string();
    let name = name.trim_end_matches('.');
    kasp_db.join(if name.is_empty() { "root" } else { name })
}

/// What a zone's key events left: the signer of the moment and when the
/// next event is due.
pub(crate) struct KeyEvents {
    pub signer: Signer,
    /// When the keys next change (an action or a timer), Unix seconds.
    pub next: Option<u64>,
    /// The next key action: (when, what), for the log.
    pub action: Option<(u64, String)>,
    /// Why a command's trigger was not followed.
    pub refused: Option<String>,
    /// A KSK waiting for its DS: its DS RDATA (digest types 2 and 4).
    pub waiting_ds: Option<Vec<Vec<u8>>>,
    /// The NSEC3 salt was replaced now (`nsec3-salt-lifetime`): the
    /// signer's chain differs from the zone's, which is signed whole.
    pub resalted: bool,
}

/// What a zone's signer counts into: the zone's counters, kept across its
/// signers (None: new ones), and the server's count of signatures.
#[derive(Debug)]
pub(crate) struct Counters {
    pub zone: Option<std::sync::Arc<lode_dnssec::Progress>>,
    pub server: std::sync::Arc<lode_dnssec::SignatureCount>,
}

/// The file of other signers' keys a zone publishes (multi-signer, RFC
/// 8901 model 2), in its key folder: one DNSKEY RDATA a line in
/// presentation form (`256 3 13 BASE64`), `;` or `#` starting a comment;
/// written by `lode dnssec import-pub`.
pub const FOREIGN_FILE: &str = "dnskey-foreign";

/// Why a zone's key events could not run, or a file of its key folder
/// could not be read: the key files, the planner, the signed key
/// responses, the other signers' keys.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeysError {
    /// A key file read or written, or the planner (lode-dnssec's error).
    #[error(transparent)]
    Key(#[from] lode_dnssec::KeyError),
    /// A file of the key folder that could not be read.
    #[error("{}: {source}", .path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// A line of the other signers' keys that is not a DNSKEY (lode-dnssec's words).
    #[error("{}:{line}: {why}", .path.display())]
    Foreign {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// Why.
        why: String,
    },
    /// The signed key responses do not read (lode-dnssec's words, with the file).
    #[error("{0}")]
    Offline(String),
    /// Offline KSK: no period of the signed key responses covers `now`.
    #[error(
        "offline KSK: no signed key response covers {} (import one: \
         lode dnssec generate-ksr, sign it with the KSK, lode dnssec import-skr)",
        lode_zonefile::utc_text(*.0)
    )]
    NoResponse(u64),
    /// Offline KSK: the signer of the period in force could not be made.
    #[error(
        "offline KSK: {source} (the period from {} of the signed key response)",
        lode_zonefile::utc_text(*.from)
    )]
    Period {
        /// Why.
        source: lode_dnssec::SignError,
        /// When the period starts (Unix seconds).
        from: u64,
    },
    /// The signer of the moment could not be made.
    #[error(transparent)]
    Signer(#[from] lode_dnssec::SignError),
}

/// The DNSKEY RDATA of `dir`'s foreign-keys file (none without one).
pub fn read_foreign(dir: &Path) -> Result<Vec<Vec<u8>>, KeysError> {
    let path = dir.join(FOREIGN_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(KeysError::File { path, source }),
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split([';', '#']).next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        out.push(
            lode_dnssec::key::dnskey_from_text(line).map_err(|why| KeysError::Foreign {
                path: path.clone(),
                line: i + 1,
                why,
            })?,
        );
    }
    Ok(out)
}

/// The file of a zone's imported signed key responses (offline KSK), in
/// its key folder: the periods imported (`lode dnssec import-skr`), in
/// Knot's SKR text (see `lode_dnssec::offline`), each checked before it
/// was written.
pub const OFFLINE_FILE: &str = "offline-records";

/// The periods of `dir`'s signed key responses (none without the file).
pub fn read_offline(
    dir: &Path,
    zone: &Name,
) -> Result<Vec<lode_dnssec::offline::Period>, KeysError> {
    let path = dir.join(OFFLINE_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(KeysError::File { path, source }),
    };
    lode_dnssec::offline::parse(
        &text,
        &path.display().to_string(),
        zone,
        lode_dnssec::offline::Kind::Response,
    )
    .map_err(KeysError::Offline)
}

/// A zone's NSEC3 salt as `nsec3-salt-lifetime` keeps it, in its key
/// folder (`nsec3-salt`): the salt chosen last (empty: the zone's own, the
/// one it had when the file was first written) and when.
struct SaltState {
    salt: Vec<u8>,
    created: u64,
}

const SALT_FILE: &str = "nsec3-salt";

fn read_salt(dir: &Path) -> Option<SaltState> {
    let text = std::fs::read_to_string(dir.join(SALT_FILE)).ok()?;
    let (mut salt, mut created) = (None, None);
    for line in text.lines() {
        match line.split_once(':').map(|(k, v)| (k.trim(), v.trim())) {
            Some(("salt", v)) => salt = hex_bytes(v),
            Some(("created", v)) => created = v.parse().ok(),
            _ => {}
        }
    }
    Some(SaltState {
        salt: salt?,
        created: created?,
    })
}

fn hex_bytes(s: &str) -> Option<Vec<u8>> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Writes the salt state whole (mode 0600, synced) before any version
/// signed with it is.
fn write_salt(dir: &Path, state: &SaltState) -> Result<(), KeysError> {
    let hex: String = state.salt.iter().map(|b| format!("{b:02x}")).collect();
    let text = format!(
        "# Lode: the NSEC3 salt (nsec3-salt-lifetime); empty: the zone's own\nsalt: {hex}\ncreated: {}\n",
        state.created
    );
    lode_dnssec::key::write_private(dir, SALT_FILE, &text)?;
    Ok(())
}

/// The salt the signer of the moment uses under `nsec3-salt-lifetime`, in
/// `policy` (None: the zone's own), and when it is replaced next; a new
/// random salt when the last one is `lifetime` old (true: replaced now).
fn nsec3_salt(
    zone: &Name,
    dir: &Path,
    policy: &mut lode_dnssec::Policy,
    now: u64,
) -> Result<(Option<u64>, bool), KeysError> {
    let Some(n3) = policy
        .nsec3
        .as_mut()
        .filter(|n| n.salt_length > 0 && n.salt_lifetime > 0)
    else {
        return Ok((None, false));
    };
    let state =
        read_salt(dir).filter(|s| s.salt.is_empty() || s.salt.len() == usize::from(n3.salt_length));
    let (state, resalted) = match state {
        // First seen: the zone's salt (whatever it is) counts from now.
        None => {
            let s = SaltState {
                salt: Vec::new(),
                created: now,
            };
            write_salt(dir, &s)?;
            (s, false)
        }
        Some(s) if s.created.saturating_add(n3.salt_lifetime) <= now => {
            let s = SaltState {
                salt: lode_dnssec::nsec3::random_salt(n3.salt_length),
                created: now,
            };
            write_salt(dir, &s)?;
            tracing::info!(
                "zone {zone}: DNSSEC, NSEC3 salt replaced (nsec3-salt-lifetime {} s): the chain is made anew",
                n3.salt_lifetime
            );
            (s, true)
        }
        Some(s) => (s, false),
    };
    n3.salt = (!state.salt.is_empty()).then_some(state.salt);
    Ok((
        Some(state.created.saturating_add(n3.salt_lifetime)),
        resalted,
    ))
}

/// The TTLs a zone's rollover steps wait for: the DNSKEY TTL and the
/// largest TTL in the zone (the policy's `zone-max-ttl`, else the zone's).
pub(crate) fn ttls(signing: &Signing, zone: &Zone) -> Ttls {
    let soa = u64::from(zone.soa().ttl());
    let max = match signing.zone_max_ttl {
        Some(m) => u64::from(m),
        None => zone
            .node_ids()
            .filter_map(|id| zone.node(id).rrsets().map(|s| s.ttl()).max())
            .max()
            .map_or(soa, u64::from),
    };
    Ttls {
        dnskey: signing.policy.dnskey_ttl.map_or(soa, u64::from),
        max,
    }
}

/// Runs `zone`'s key events due at `now` (and what `trigger` asks for) on
/// the keys in its folder — the first keys made when there are none (as
/// Knot does when a signed zone first loads) — writes the keys that
/// changed before anything signed with them is, logs each event, and
/// builds the signer of the moment, counting into `counters`.
pub(crate) fn key_events(
    kasp_db: &Path,
    zone: &Name,
    signing: &Signing,
    ttls: Ttls,
    now: u64,
    trigger: Trigger,
    counters: Counters,
) -> Result<(KeyEvents, Vec<String>), KeysError> {
    let dir = key_dir(kasp_db, zone);
    let mut keys = SigningKey::read_all(&dir, zone.as_ref())?;
    let p = &signing.keys;
    let mut gen = |role: Role| {
        let (flags, bits) = if role.is_ksk() {
            (KSK_FLAGS, p.ksk_size)
        } else {
            (ZSK_FLAGS, p.zsk_size)
        };
        match &signing.keystore {
            // Made in the token (opened at start, or by the reload that
            // named it: this returns it).
            Some(token) => lode_dnssec::hsm::open(token)
                .and_then(|t| SigningKey::generate_in(&t, zone, p.algorithm, flags, bits, now)),
            None => SigningKey::generate_sized(zone, p.algorithm, flags, bits, now),
        }
    };
    let plan = lode_dnssec::rollover::plan(&mut keys, p, ttls, now, trigger, &mut gen)?;
    for &i in &plan.changed {
        let key = &keys[i];
        let path = key.write(&dir)?;
        tracing::debug!(
            "zone {zone}: DNSSEC, {} tag {} written to {}",
            key.role,
            key.tag(),
            path.display()
        );
    }
    for key in &plan.deleted {
        if let Err(e) = key.remove_files(&dir) {
            tracing::warn!("zone {zone}: DNSSEC, key files not deleted: {e}");
            continue;
        }
        // A key in a token goes from it too, after its file (a crash in
        // between leaves an unused key in the token, never a file naming
        // a key that is gone).
        if let Some(t) = key.token_key() {
            match t.destroy() {
                Ok(()) => tracing::info!(
                    "zone {zone}: DNSSEC, tag {} deleted from PKCS #11 token {:?}",
                    key.tag(),
                    t.token.label()
                ),
                Err(e) => tracing::warn!(
                    "zone {zone}: DNSSEC, tag {} not deleted from its token: {e}",
                    key.tag()
                ),
            }
        }
    }
    for line in &plan.log {
        tracing::info!("zone {zone}: DNSSEC, {line}");
    }
    let changed = !plan.changed.is_empty() || !plan.deleted.is_empty();
    if changed {
        if let Some(tag) = plan.waiting_ds {
            if let Some(k) = keys.iter().find(|k| k.tag() == tag) {
                tracing::info!(
                    "zone {zone}: DNSSEC, KSK submission, waiting for confirmation \
                     (`lode zone-ksk-submitted {zone}` once the parent serves it); \
                     DS for the parent: {zone} DS {}",
                    k.ds_text()
                );
            }
        }
    }
    let timers = keys.iter().filter_map(|k| k.timing.next_after(now)).min();
    let waiting_ds = plan
        .waiting_ds
        .and_then(|tag| keys.iter().find(|k| k.tag() == tag))
        .map(|k| vec![k.ds_rdata(2), k.ds_rdata(4)]);
    let mut policy = signing.policy.clone();
    let (resalt_at, resalted) = nsec3_salt(zone, &dir, &mut policy, now)?;
    let mut action = plan.next.clone();
    let mut next = [plan.next.as_ref().map(|n| n.0), timers, resalt_at]
        .into_iter()
        .flatten()
        .min();
    let signer = if p.offline_ksk {
        // The key records of the moment from the signed key response; its
        // next period is a key event.
        let periods = read_offline(&dir, zone)?;
        let Some((period, following)) = lode_dnssec::offline::current(&periods, now) else {
            return Err(KeysError::NoResponse(now));
        };
        if following.is_none() {
            tracing::warn!(
                "zone {zone}: DNSSEC, offline KSK: the last period of the signed key response \
                 is in force (from {}); its signatures expire {}: import the next one",
                lode_zonefile::utc_text(period.at),
                period
                    .expiry()
                    .map_or("-".into(), |e| lode_zonefile::utc_text(u64::from(e)))
            );
        }
        next = [next, following].into_iter().flatten().min();
        // The next event (the planner has none: the timers were made ahead).
        let events = [
            timers.map(|t| (t, "a ZSK timer made ahead".to_string())),
            following.map(|t| (t, "the next period of the signed key response".to_string())),
        ];
        action = events.into_iter().flatten().min_by_key(|e| e.0);
        Signer::at_offline(zone, keys, policy, now, period.clone()).map_err(|source| {
            KeysError::Period {
                source,
                from: period.at,
            }
        })?
    } else {
        Signer::at(zone, keys, policy, now)?.with_foreign(read_foreign(&dir)?)
    };
    let signer = match counters.zone {
        Some(p) => signer.with_progress(p),
        None => signer,
    }
    .counting_into(counters.server);
    signer
        .progress()
        .set_keys(action.clone(), plan.waiting_ds, plan.log.len() as u64);
    let tags: Vec<String> = signer
        .keys_and_usage()
        .map(|(k, u)| {
            format!(
                "{} {}{}{}",
                k.role,
                k.tag(),
                if u.public { "" } else { " (unpublished)" },
                if u.signs_keys || u.signs_zone {
                    ""
                } else {
                    " (not signing)"
                }
            )
        })
        .collect();
    tracing::debug!("zone {zone}: DNSSEC, keys {}", tags.join(", "));
    Ok((
        KeyEvents {
            signer,
            next,
            action,
            refused: plan.refused,
            waiting_ds,
            resalted,
        },
        plan.log,
    ))
}

/// A PKCS #11 token a signing policy names that could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("keystore (token {label:?}): {source}")]
pub struct KeystoreError {
    /// The token's label.
    pub label: String,
    /// Why.
    pub source: lode_dnssec::KeyError,
}

/// Opens the PKCS #11 tokens the signing policies of `config` keep keys
/// in (each once per process: a reload naming one already open takes it
/// as it is), so that their zones' key files can be read. Returns how many
/// tokens the configuration names.
pub(crate) fn open_keystores(config: &crate::config::Config) -> Result<usize, KeystoreError> {
    let mut tokens: Vec<&lode_dnssec::hsm::TokenConfig> = config
        .zone_options
        .values()
        .flat_map(|o| {
            std::iter::once(&**o)
                .chain(o.interpret.iter().map(|(_, t)| t))
                .filter_map(|o| o.signing.as_ref()?.keystore.as_ref())
        })
        .collect();
    tokens.sort_by(|a, b| a.label.cmp(&b.label));
    tokens.dedup();
    for t in &tokens {
        lode_dnssec::hsm::open(t).map_err(|source| KeystoreError {
            label: t.label.clone(),
            source,
        })?;
        tracing::info!(
            "DNSSEC keystore: PKCS #11 token {:?} open ({})",
            t.label,
            t.module.display()
        );
    }
    Ok(tokens.len())
}

/// Logs a zone's next key action (when it is not the one logged last,
/// `announced`, which it becomes); at debug level when `quiet` (a start:
/// one line per signed zone is too many with 10^5 zones).
pub(crate) fn announce(
    zone: &Name,
    action: Option<(u64, String)>,
    announced: &mut Option<(u64, String)>,
    quiet: bool,
) {
    if action == *announced {
        return;
    }
    if let Some((at, what)) = &action {
        let now = crate::clock::unix_now();
        let line = format!(
            "zone {zone}: DNSSEC, next key action, {what}, at {} (in {} s)",
            lode_zonefile::utc_text(*at),
            at.saturating_sub(now)
        );
        if quiet {
            tracing::debug!("{line}");
        } else {
            tracing::info!("{line}");
        }
    }
    *announced = action;
}

/// The whole-zone signing progress of each zone a server signs (by
/// origin), for `zone-status`, the metrics and the progress lines (see
/// [`Signings::watch`]): one entry per signed zone, looked up by name
/// (10^5 zones start in linear time). One per server, with its writers.
#[derive(Debug, Default)]
pub(crate) struct Signings {
    watched: std::sync::Mutex<Watched>,
    /// The reporter thread started (at the first zone watched).
    reporter: std::sync::OnceLock<()>,
}

type Watched = std::collections::HashMap<Name, std::sync::Arc<lode_dnssec::Progress>>;

/// How long a whole signing runs before its progress is logged, and how
/// often after that.
const PROGRESS_AFTER: std::time::Duration = std::time::Duration::from_secs(5);
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// A signed zone's counters for metrics and `zone-status`: signatures
/// made, when the next are made again, the earliest expiry (see
/// [`lode_dnssec::Progress::schedule`]).
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    pub made: u64,
    pub next_refresh: Option<u64>,
    pub earliest_expiry: Option<u64>,
    /// The next key action, the KSK waiting for its DS, key events done.
    pub keys: lode_dnssec::KeyFacts,
}

fn schedule_of(p: &lode_dnssec::Progress) -> Schedule {
    let (next_refresh, earliest_expiry) = p.schedule();
    Schedule {
        made: p.made(),
        next_refresh,
        earliest_expiry,
        keys: p.keys(),
    }
}

impl Signings {
    fn watched(&self) -> std::sync::MutexGuard<'_, Watched> {
        self.watched.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Watches the whole signings of `zone`'s signer: `zone-status` shows
    /// how far one is, and one running longer than 5 s is logged every
    /// 10 s ("signing whole: 45 % …") by one reporter thread for all the
    /// server's zones (it ends with the server's `Signings`).
    pub(crate) fn watch(self: &std::sync::Arc<Self>, zone: &Name, signer: &Signer) {
        self.watched().insert(zone.clone(), signer.progress());
        self.reporter.get_or_init(|| {
            let me = std::sync::Arc::downgrade(self);
            let spawned = std::thread::Builder::new()
                .name("lode-sign-progress".into())
                .spawn(move || report(&me));
            if let Err(e) = spawned {
                tracing::warn!("DNSSEC signing progress will not be logged: {e}");
            }
        });
    }

    /// `zone` is no longer signed here: `zone-status` and the metrics show
    /// no signing schedule for it.
    pub(crate) fn unwatch(&self, zone: &Name) {
        self.watched().remove(zone);
    }

    /// (signed, to sign) of `zone`'s whole signing under way, if one is.
    pub(crate) fn progress(&self, zone: &Name) -> Option<(u64, u64)> {
        self.watched().get(zone)?.get()
    }

    /// The schedule of `zone`, if it is signed here.
    pub(crate) fn schedule(&self, zone: &Name) -> Option<Schedule> {
        self.watched().get(zone).map(|p| schedule_of(p))
    }

    /// The schedules of every zone signed here (one pass under the lock).
    pub(crate) fn schedules(&self) -> std::collections::HashMap<Name, Schedule> {
        self.watched()
            .iter()
            .map(|(n, p)| (n.clone(), schedule_of(p)))
            .collect()
    }

    /// The whole signings running now: (zone, (signed, to sign)); names
    /// are copied only for them.
    fn running(&self) -> Vec<(Name, (u64, u64))> {
        self.watched()
            .iter()
            .filter_map(|(n, p)| Some((n.clone(), p.get()?)))
            .collect()
    }
}

/// The reporter: once a second, a line for each whole signing due one
/// (a pass over the atomics of every signed zone), until the server's
/// `Signings` are gone.
fn report(signings: &std::sync::Weak<Signings>) {
    use std::time::Instant;
    // Zone → (seen running since, last logged).
    let mut running: std::collections::HashMap<Name, (Instant, Option<Instant>)> =
        std::collections::HashMap::new();
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
        let now = Instant::now();
        let Some(busy) = signings.upgrade().map(|s| s.running()) else {
            return;
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
