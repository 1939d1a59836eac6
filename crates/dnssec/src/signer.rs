//! Signing a zone: whole (a first load, a new key set, signatures due) and
//! one changeset at a time (what the zone-update stage calls for every
//! change of a signed zone).

use std::sync::Arc;

use lode_wire::{Name, Record, Rtype};
use lode_zonedb::{ApplyError, Zone};

use crate::key::SigningKey;
use crate::nsec3::{Nsec3, Nsec3Policy};
use crate::offline::Period;
use crate::rrsig::{rrsig_info, sign_rdata, RRsetRef, Validity};
use crate::timing::Role;
use crate::timing::{usage, Usage};

/// Signatures start this long before they are made (clocks of validators
/// running behind; Knot's 90 minutes).
pub const INCEPTION_OFFSET: u64 = 90 * 60;

/// How a zone is signed (Knot's `policy` section, the part this signer uses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// DNSKEY TTL; None: the SOA's TTL (Knot's default).
    pub dnskey_ttl: Option<u32>,
    /// Signature validity, seconds (Knot's default 14 days).
    pub rrsig_lifetime: u32,
    /// A signature is made again this long before it expires (Knot's 7 days).
    pub rrsig_refresh: u32,
    /// Threads for whole-zone signing.
    pub signing_threads: usize,
    /// NSEC3 instead of NSEC (None: NSEC).
    pub nsec3: Option<Nsec3Policy>,
    /// ECDSA signatures with RFC 6979 nonces: the same data signed again
    /// gives the same signature (Knot's reproducible-signing; slower).
    pub reproducible_signing: bool,
    /// Which CDS and CDNSKEY records the apex carries (Knot's
    /// `cds-cdnskey-publish`).
    pub cds: CdsPublish,
    /// The CDS digest type: 2 (SHA-256, Knot's default) or 4 (SHA-384).
    pub cds_digest: u8,
}

/// Knot's `cds-cdnskey-publish`: when the apex carries CDS and CDNSKEY
/// records (RFC 7344, RFC 8078) for the parent to take the DS from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CdsPublish {
    /// Never.
    None,
    /// The records that ask the parent to remove the DS (RFC 8078 §4).
    DeleteDnssec,
    /// For a KSK waiting for its DS (a rollover's submission; the default).
    #[default]
    Rollover,
    /// For the ready KSK, else the active one.
    Always,
    /// For the ready and the active KSK.
    DoubleDs,
}

impl CdsPublish {
    /// Parses Knot's names.
    pub fn parse(text: &str) -> Option<CdsPublish> {
        Some(match text {
            "none" => CdsPublish::None,
            "delete-dnssec" => CdsPublish::DeleteDnssec,
            "rollover" => CdsPublish::Rollover,
            "always" => CdsPublish::Always,
            "double-ds" => CdsPublish::DoubleDs,
            _ => return None,
        })
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            dnskey_ttl: None,
            rrsig_lifetime: 14 * 86400,
            rrsig_refresh: 7 * 86400,
            signing_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            nsec3: None,
            reproducible_signing: false,
            cds: CdsPublish::default(),
            cds_digest: 2,
        }
    }
}

/// Why a zone could not be signed.
#[derive(Debug)]
#[non_exhaustive]
pub enum SignError {
    /// The signer has no key to sign with.
    NoKeys,
    /// The signed changes do not apply (a bug, or a change that did not
    /// apply in the first place).
    Apply(ApplyError),
    /// A key cannot be used as the policy asks.
    Key(crate::KeyError),
}

impl std::fmt::Display for SignError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SignError::NoKeys => f.write_str("no signing keys"),
            SignError::Apply(e) => write!(f, "signed changes do not apply: {e}"),
            SignError::Key(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SignError {}

impl From<ApplyError> for SignError {
    fn from(e: ApplyError) -> Self {
        SignError::Apply(e)
    }
}

/// The keys that do something at `now` (published or signing; removed
/// keys left out), each with what it does then.
fn in_use(keys: Vec<SigningKey>, now: u64) -> (Vec<SigningKey>, Vec<Usage>) {
    let facts: Vec<_> = keys
        .iter()
        .map(|k| (k.role, k.algorithm.number(), k.timing))
        .collect();
    keys.into_iter()
        .zip(usage(&facts, now))
        .filter(|(_, u)| u.public || u.signs_keys || u.signs_zone)
        .unzip()
}

/// The key records at the apex, signed by the key signing keys.
pub(crate) fn is_key_type(t: Rtype) -> bool {
    matches!(t, Rtype::DNSKEY | Rtype::CDS | Rtype::CDNSKEY)
}

/// Types the signer owns: taken out of what comes in, made by it.
pub fn is_signer_type(t: Rtype) -> bool {
    matches!(
        t,
        Rtype::RRSIG | Rtype::NSEC | Rtype::NSEC3 | Rtype::NSEC3PARAM | Rtype::DNSKEY
    )
}

/// One RRset to sign, owned.
#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) owner: Name,
    pub(crate) rtype: Rtype,
    pub(crate) ttl: u32,
    pub(crate) rdatas: Vec<Box<[u8]>>,
}

/// A signer's counters, read from other threads (status, progress lines,
/// metrics): how far a whole-zone signing is while [`Signer::sign_zone`]
/// runs, the signatures made, and the re-signing schedule its owner sets.
#[derive(Debug, Default)]
pub struct Progress {
    running: std::sync::atomic::AtomicBool,
    /// Names and chain records to sign.
    total: std::sync::atomic::AtomicU64,
    /// Of them, signed.
    done: std::sync::atomic::AtomicU64,
    /// Signatures made (whole signings, changes, refreshes).
    made: std::sync::atomic::AtomicU64,
    /// When signatures are next made again (Unix seconds; 0: not known).
    next_refresh: std::sync::atomic::AtomicU64,
    /// The earliest expiry seen by the last pass over every signature
    /// (Unix seconds; 0: no such pass yet).
    earliest_expiry: std::sync::atomic::AtomicU64,
    /// The keys' side, as their owner last planned it.
    keys: std::sync::Mutex<KeyFacts>,
}

/// A signed zone's key facts for status and metrics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyFacts {
    /// The next key action: (when, Unix seconds; what).
    pub next: Option<(u64, String)>,
    /// The tag of a KSK waiting for its DS at the parent.
    pub waiting_ds: Option<u16>,
    /// Key events done since start (keys made, published, replaced, removed…).
    pub events: u64,
}

/// Signatures made by every signer counting into it (a server's, all its
/// zones, for its metrics; see [`Signer::counting_into`]).
#[derive(Debug, Default)]
pub struct SignatureCount(std::sync::atomic::AtomicU64);

impl SignatureCount {
    /// The signatures counted so far.
    pub fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Items signed between two updates of [`Progress::done`].
pub(crate) const PROGRESS_STEP: u64 = 4096;

impl Progress {
    /// (signed, to sign) of the whole-zone signing under way, if one is.
    pub fn get(&self) -> Option<(u64, u64)> {
        use std::sync::atomic::Ordering::Relaxed;
        self.running
            .load(Relaxed)
            .then(|| (self.done.load(Relaxed), self.total.load(Relaxed)))
    }
    /// (signed, to sign) of the last whole-zone signing, running or not.
    pub fn counts(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.done.load(Relaxed), self.total.load(Relaxed))
    }
    /// Signatures this signer made.
    pub fn made(&self) -> u64 {
        self.made.load(std::sync::atomic::Ordering::Relaxed)
    }
    /// (when signatures are next made again, the earliest signature expiry
    /// the last pass over the whole zone found), in Unix seconds. The
    /// expiry is a lower bound until the next such pass: signatures made
    /// since only expire later.
    pub fn schedule(&self) -> (Option<u64>, Option<u64>) {
        use std::sync::atomic::Ordering::Relaxed;
        let some = |v: u64| (v != 0).then_some(v);
        (
            some(self.next_refresh.load(Relaxed)),
            some(self.earliest_expiry.load(Relaxed)),
        )
    }
    /// Sets the schedule from a [`crate::Due`]: its next time, and its
    /// earliest expiry when it read every signature (kept otherwise).
    pub fn set_schedule(&self, due: &crate::Due) {
        use std::sync::atomic::Ordering::Relaxed;
        self.next_refresh.store(due.next.unwrap_or(0), Relaxed);
        if let Some(e) = due.earliest_expiry {
            self.earliest_expiry.store(e, Relaxed);
        }
    }
    /// Sets the key facts: the next action, the KSK waiting for its DS,
    /// and `events` more done.
    pub fn set_keys(&self, next: Option<(u64, String)>, waiting_ds: Option<u16>, events: u64) {
        let mut k = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        k.next = next;
        k.waiting_ds = waiting_ds;
        k.events += events;
    }
    /// The key facts.
    pub fn keys(&self) -> KeyFacts {
        self.keys.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    pub(crate) fn start(&self, total: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.done.store(0, Relaxed);
        self.total.store(total, Relaxed);
        self.running.store(true, Relaxed);
    }
    pub(crate) fn add(&self, n: u64) {
        self.done.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }
    pub(crate) fn stop(&self) {
        self.running
            .store(false, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A zone's signer: its keys, what each does, and the policy.
#[derive(Debug)]
pub struct Signer {
    pub(crate) origin: Name,
    keys: Vec<Arc<SigningKey>>,
    /// What each key does (same order as `keys`).
    usage: Vec<Usage>,
    /// (tag, algorithm) of the keys signing the key RRsets, and the rest.
    key_signers: Vec<(u16, u8)>,
    zone_signers: Vec<(u16, u8)>,
    policy: Policy,
    pub(crate) progress: Arc<Progress>,
    /// Where the signatures it makes are counted too, if anywhere.
    count: Option<Arc<SignatureCount>>,
    /// DNSKEY RDATA of other signers' keys (multi-signer, RFC 8901 model
    /// 2): published in the DNSKEY RRset, never signing here.
    foreign: Vec<Vec<u8>>,
    /// Offline KSK: the key records of the moment and their signatures,
    /// made elsewhere (a signed key response); the keys here sign the rest.
    offline: Option<Arc<Period>>,
}

impl Signer {
    /// The signer of `origin` with these keys (at least one), each doing
    /// what its role says whatever its timers (keys made by hand, tests).
    pub fn new(origin: &Name, keys: Vec<SigningKey>, policy: Policy) -> Result<Signer, SignError> {
        let usage = keys
            .iter()
            .map(|k| Usage {
                public: true,
                signs_keys: k.role.is_ksk(),
                signs_zone: k.role.is_zsk(),
                ready: false,
                active_ksk: k.role.is_ksk(),
            })
            .collect();
        Signer::with_usage(origin, keys, usage, policy, None)
    }

    /// The signer of `origin` at `now`: each key doing what its timers
    /// say then (see [`crate::timing`]); removed keys left out.
    pub fn at(
        origin: &Name,
        keys: Vec<SigningKey>,
        policy: Policy,
        now: u64,
    ) -> Result<Signer, SignError> {
        let (keys, usage) = in_use(keys, now);
        Signer::with_usage(origin, keys, usage, policy, None)
    }

    /// The signer of `origin` at `now` with an offline KSK: the zone
    /// signing keys here (by their timers), the key records (DNSKEY, CDS,
    /// CDNSKEY) and their signatures as `period` of a signed key response
    /// has them (see `offline.rs`). Key signing keys here are left out.
    pub fn at_offline(
        origin: &Name,
        keys: Vec<SigningKey>,
        policy: Policy,
        now: u64,
        period: Period,
    ) -> Result<Signer, SignError> {
        let zsks = keys.into_iter().filter(|k| k.role == Role::Zsk).collect();
        let (keys, usage) = in_use(zsks, now);
        Signer::with_usage(origin, keys, usage, policy, Some(Arc::new(period)))
    }

    fn with_usage(
        origin: &Name,
        keys: Vec<SigningKey>,
        mut usage: Vec<Usage>,
        policy: Policy,
        offline: Option<Arc<Period>>,
    ) -> Result<Signer, SignError> {
        if keys.is_empty() {
            return Err(SignError::NoKeys);
        }
        // Keys from before roles: a lone key signing key signs it all.
        if !keys.iter().any(|k| k.role.is_zsk()) {
            for u in usage.iter_mut() {
                u.signs_zone = u.signs_keys;
            }
        }
        let tags = |f: fn(&Usage) -> bool| -> Vec<(u16, u8)> {
            keys.iter()
                .zip(&usage)
                .filter(|(_, u)| f(u))
                .map(|(k, _)| (k.tag(), k.algorithm.number()))
                .collect()
        };
        let key_signers = match &offline {
            Some(p) => p.signer_tags(),
            None => tags(|u| u.signs_keys),
        };
        let zone_signers = tags(|u| u.signs_zone);
        if key_signers.is_empty() || zone_signers.is_empty() {
            return Err(SignError::NoKeys);
        }
        let keys = if policy.reproducible_signing {
            keys.into_iter()
                .map(SigningKey::reproducible)
                .collect::<Result<Vec<_>, _>>()
                .map_err(SignError::Key)?
        } else {
            keys
        };
        Ok(Signer {
            origin: origin.to_lowercase(),
            keys: keys.into_iter().map(Arc::new).collect(),
            usage,
            key_signers,
            zone_signers,
            policy,
            progress: Arc::default(),
            count: None,
            foreign: Vec::new(),
            offline,
        })
    }

    /// The signed key response's period this signer publishes (offline
    /// KSK), if any.
    pub fn offline(&self) -> Option<&Period> {
        self.offline.as_deref()
    }

    /// True when `rtype`'s signatures come from the signed key response
    /// (offline KSK: the key records').
    pub(crate) fn is_offline_type(&self, rtype: Rtype) -> bool {
        self.offline.is_some() && is_key_type(rtype)
    }

    /// The same signer publishing other signers' keys too (DNSKEY RDATA;
    /// multi-signer, RFC 8901 model 2: each signer's DNSKEY RRset holds the
    /// other's ZSK, so that answers from either validate with the DNSKEY
    /// RRset of either). Keys of this signer among them are left out.
    pub fn with_foreign(mut self, mut foreign: Vec<Vec<u8>>) -> Signer {
        let own: Vec<Vec<u8>> = self.keys.iter().map(|k| k.dnskey_rdata()).collect();
        foreign.retain(|f| !own.contains(f));
        foreign.sort();
        foreign.dedup();
        self.foreign = foreign;
        self
    }

    /// Other signers' keys this signer publishes (see [`Signer::with_foreign`]).
    pub fn foreign(&self) -> &[Vec<u8>] {
        &self.foreign
    }

    /// The same keys and usage with another progress record (a signer
    /// rebuilt keeps the zone's counters).
    pub fn with_progress(mut self, progress: Arc<Progress>) -> Signer {
        self.progress = progress;
        self
    }

    /// The same signer counting the signatures it makes into `count` too
    /// (besides its [`Progress`]).
    pub fn counting_into(mut self, count: Arc<SignatureCount>) -> Signer {
        self.count = Some(count);
        self
    }

    /// The progress of its whole-zone signing (see [`Progress`]).
    pub fn progress(&self) -> Arc<Progress> {
        self.progress.clone()
    }

    /// The keys (published, signing, or both).
    pub fn keys(&self) -> &[Arc<SigningKey>] {
        &self.keys
    }

    /// Each key and what it does.
    pub fn keys_and_usage(&self) -> impl Iterator<Item = (&SigningKey, &Usage)> {
        self.keys.iter().map(|k| &**k).zip(&self.usage)
    }

    /// The keys in the DNSKEY RRset.
    pub fn published(&self) -> impl Iterator<Item = &SigningKey> {
        self.keys
            .iter()
            .zip(&self.usage)
            .filter(|(_, u)| u.public)
            .map(|(k, _)| &**k)
    }

    /// The keys that sign `rtype` (see [`Signer::keys_for`]).
    pub fn signers_of(&self, rtype: Rtype) -> impl Iterator<Item = &SigningKey> {
        self.keys_for(rtype)
    }

    /// (tag, algorithm) of the keys that sign `rtype`.
    pub(crate) fn signer_tags(&self, rtype: Rtype) -> &[(u16, u8)] {
        if is_key_type(rtype) {
            &self.key_signers
        } else {
            &self.zone_signers
        }
    }

    /// True when `other` signs every RRset with the same keys (a signer
    /// rebuilt after a key event that changed no signer).
    pub fn signs_like(&self, other: &Signer) -> bool {
        let sorted = |v: &[(u16, u8)]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v
        };
        sorted(&self.key_signers) == sorted(&other.key_signers) && self.signs_zone_like(other)
    }

    /// True when `other` signs every RRset but the key records with the
    /// same keys.
    pub fn signs_zone_like(&self, other: &Signer) -> bool {
        let sorted = |v: &[(u16, u8)]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v
        };
        sorted(&self.zone_signers) == sorted(&other.zone_signers)
    }

    /// True when the signatures `sigs` (RRSIG RDATA of one owner) of
    /// `rtype` are what this signer makes: one by each of its keys for the
    /// type, none by another, none due at `now`.
    pub(crate) fn sigs_fit<'a>(
        &self,
        sigs: impl Iterator<Item = &'a [u8]>,
        rtype: Rtype,
        now: u64,
    ) -> bool {
        if let Some(p) = self.offline.as_ref().filter(|_| is_key_type(rtype)) {
            // Exactly the signed key response's.
            let want: Vec<&[u8]> = p.sigs_covering(rtype).collect();
            let have: Vec<&[u8]> = sigs
                .filter(|s| rrsig_info(s).is_some_and(|i| i.covered == rtype))
                .collect();
            return have.len() == want.len() && have.iter().all(|h| want.contains(h));
        }
        let want = self.signer_tags(rtype);
        let mut seen = 0;
        for i in sigs.filter_map(rrsig_info).filter(|i| i.covered == rtype) {
            if self.is_due(i.expiration, now) || !want.contains(&(i.key_tag, i.algorithm)) {
                return false;
            }
            seen += 1;
        }
        seen == want.len()
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The keys that sign `rtype`: the DNSKEY (and CDS/CDNSKEY) RRset by
    /// the key signing keys of the moment, the rest by the zone signing
    /// keys (a CSK is both).
    pub(crate) fn keys_for(&self, rtype: Rtype) -> impl Iterator<Item = &SigningKey> {
        let by_ksk = is_key_type(rtype);
        self.keys
            .iter()
            .zip(&self.usage)
            .filter(move |(_, u)| if by_ksk { u.signs_keys } else { u.signs_zone })
            .map(|(k, _)| &**k)
    }

    pub(crate) fn validity(&self, now: u64) -> Validity {
        Validity {
            inception: now.saturating_sub(INCEPTION_OFFSET) as u32,
            expiration: (now + u64::from(self.policy.rrsig_lifetime)) as u32,
        }
    }

    /// The DNSKEY TTL of `zone` (offline KSK: the signed key response's).
    pub fn dnskey_ttl(&self, zone: &Zone) -> u32 {
        if let Some(ttl) = self.offline.as_ref().and_then(|p| p.ttl(Rtype::DNSKEY)) {
            return ttl;
        }
        self.policy.dnskey_ttl.unwrap_or(zone.soa().ttl())
    }

    /// True when `zone` is signed by this signer as of `now`: its DNSKEY
    /// RRset is this signer's, its SOA is signed, and no signature expires
    /// within a quarter of the refresh window (those due sooner are made
    /// again in batches; see `refresh.rs`). A zone that is not gets signed
    /// whole.
    pub fn is_current(&self, zone: &Zone, now: u64) -> bool {
        // Signed by one of these keys before: what differs in the key
        // records is mended by a change ([`Signer::rekey`]), signatures by
        // other keys replaced in batches (refresh).
        let ours: Vec<Vec<u8>> = self.keys.iter().map(|k| k.dnskey_rdata()).collect();
        let known = zone
            .apex_rrset(Rtype::DNSKEY)
            .is_some_and(|s| s.rdatas().any(|r| ours.iter().any(|o| o[..] == *r)));
        if !known {
            return false;
        }
        // The chain the policy asks for (NSEC3: its iterations and salt
        // length, and opt-out).
        let chain_fits = match (&self.policy.nsec3, Nsec3::of_zone(zone)) {
            (None, None) => true,
            (Some(p), Some(z)) => {
                z.iterations == p.iterations
                    && z.salt.len() == usize::from(p.salt_length)
                    && p.salt.as_ref().is_none_or(|s| *s == z.salt)
                    && z.opt_out == p.opt_out
            }
            _ => false,
        };
        if !chain_fits {
            return false;
        }
        let node = zone.node(zone.apex_id());
        let signed = node.rrset(Rtype::RRSIG).is_some_and(|s| {
            s.rdatas()
                .filter_map(rrsig_info)
                .any(|i| i.covered == Rtype::SOA)
        });
        // Offline KSK: the ZSKs' timers were made ahead, counting on the
        // zone being signed by a new ZSK at once; one that came while the
        // server was down (the SOA signed by another) is signed whole.
        let by_zsks = self.offline.is_none()
            || node.rrset(Rtype::RRSIG).is_some_and(|s| {
                let mut tags: Vec<(u16, u8)> = s
                    .rdatas()
                    .filter_map(rrsig_info)
                    .filter(|i| i.covered == Rtype::SOA)
                    .map(|i| (i.key_tag, i.algorithm))
                    .collect();
                tags.sort_unstable();
                tags.dedup();
                let mut want = self.zone_signers.clone();
                want.sort_unstable();
                tags == want
            });
        if !by_zsks {
            return false;
        }
        let margin = now + u64::from(self.policy.rrsig_refresh) / 4;
        // (Those of a signed key response are replaced by its periods.)
        signed
            && self
                .earliest_of(zone, |t| !self.is_offline_type(t))
                .is_none_or(|e| u64::from(e) > margin)
    }

    /// Signatures the keys' stores failed to make so far (PKCS #11 tokens;
    /// keys in files never fail).
    pub(crate) fn key_failures(&self) -> u64 {
        self.keys.iter().map(|k| k.failures()).sum()
    }

    /// An error when a key's store failed to sign since `before` (a count
    /// of [`Signer::key_failures`]): what was signed then holds empty
    /// signatures and is refused, never published.
    pub(crate) fn keys_did_not_fail(&self, before: u64) -> Result<(), SignError> {
        if self.key_failures() == before {
            return Ok(());
        }
        let why = self
            .keys
            .iter()
            .find_map(|k| k.token_key().map(|t| t.token.last_failure()))
            .unwrap_or_default();
        Err(SignError::Key(crate::KeyError::BadKey(format!(
            "signing in the key store failed: {why}"
        ))))
    }

    /// The signatures of one RRset made apart from a change (Knot's
    /// `knot_zone_sign_apex_rr`: the apex ZONEMD, made after the rest of
    /// the version is signed), by each key of its role: `records` are the
    /// whole RRset (one owner, type and TTL).
    pub fn sign_records(&self, records: &[Record], now: u64) -> Result<Vec<Record>, SignError> {
        let Some(first) = records.first() else {
            return Ok(Vec::new());
        };
        let failed = self.key_failures();
        let job = Job {
            owner: first.owner.clone(),
            rtype: first.rtype,
            ttl: first.ttl,
            rdatas: records.iter().map(|r| r.rdata.clone()).collect(),
        };
        let mut out = Vec::new();
        self.sign_job(
            &job,
            first.class,
            self.validity(now),
            &mut Vec::new(),
            &mut out,
        );
        self.keys_did_not_fail(failed)?;
        Ok(out)
    }

    /// True when a signature expiring at `expiration` is to be made again.
    pub(crate) fn is_due(&self, expiration: u32, now: u64) -> bool {
        u64::from(expiration) < now + u64::from(self.policy.rrsig_refresh)
    }

    /// The earliest expiration of the zone's signatures (a scan).
    pub fn earliest_expiry(&self, zone: &Zone) -> Option<u32> {
        self.earliest_of(zone, |_| true)
    }

    /// The earliest expiration of the zone's signatures of types `of`.
    fn earliest_of(&self, zone: &Zone, of: impl Fn(Rtype) -> bool) -> Option<u32> {
        zone.node_ids()
            .filter_map(|id| {
                let node = zone.node(id);
                let sigs = node.rrset(Rtype::RRSIG)?;
                sigs.rdatas()
                    .filter_map(rrsig_info)
                    .filter(|i| of(i.covered))
                    .map(|i| i.expiration)
                    .min()
            })
            .min()
    }

    /// The signatures of one RRset, by each key of its role, into `out`.
    fn sign_set(
        &self,
        set: &RRsetRef<'_>,
        rdatas: &[&[u8]],
        validity: Validity,
        scratch: &mut Vec<u8>,
        out: &mut Vec<Record>,
    ) {
        let mut made = Vec::new();
        self.sign_rdatas(set, rdatas, validity, scratch, &mut made);
        out.extend(made.into_iter().map(|rdata| Record {
            owner: set.owner.to_name(),
            class: set.class,
            rtype: Rtype::RRSIG,
            ttl: set.ttl,
            rdata: rdata.into(),
        }));
    }

    /// The RDATAs of one RRset's signatures, by each key of its role, into `out`.
    pub(crate) fn sign_rdatas(
        &self,
        set: &RRsetRef<'_>,
        rdatas: &[&[u8]],
        validity: Validity,
        scratch: &mut Vec<u8>,
        out: &mut Vec<Vec<u8>>,
    ) {
        if let Some(p) = self.offline.as_ref().filter(|_| is_key_type(set.rtype)) {
            // Offline KSK: the signatures made elsewhere, over the records
            // the signed key response has (which the key records are).
            out.extend(p.sigs_covering(set.rtype).map(<[u8]>::to_vec));
            return;
        }
        for key in self.keys_for(set.rtype) {
            use std::sync::atomic::Ordering::Relaxed;
            self.progress.made.fetch_add(1, Relaxed);
            if let Some(c) = &self.count {
                c.0.fetch_add(1, Relaxed);
            }
            out.push(sign_rdata(
                set,
                rdatas.iter().copied(),
                key,
                self.origin.as_ref(),
                validity,
                scratch,
            ));
        }
    }

    /// The signatures of one owned RRset, by each key of its role, into `out`.
    pub(crate) fn sign_job(
        &self,
        job: &Job,
        class: lode_wire::Class,
        validity: Validity,
        scratch: &mut Vec<u8>,
        out: &mut Vec<Record>,
    ) {
        let set = RRsetRef {
            owner: job.owner.as_ref(),
            rtype: job.rtype,
            class,
            ttl: job.ttl,
        };
        let rdatas: Vec<&[u8]> = job.rdatas.iter().map(|r| &**r).collect();
        self.sign_set(&set, &rdatas, validity, scratch, out);
    }
}
