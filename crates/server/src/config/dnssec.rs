//! Signing settings: `[[policy]]` tables (Knot DNS's `policy` section: its
//! names and defaults), `dnssec-signing`/`dnssec-policy` per zone, and the
//! key folder `kasp-db`.
//!
//! ```toml
//! kasp-db = "/var/lib/lode/keys"          # default: "keys" in journal-dir
//!
//! [[policy]]
//! id = "default"
//! algorithm = "ecdsap256sha256"           # or 13, 14 ecdsap384sha384, 15 ed25519
//! single-type-signing = false             # true: one key (CSK) signs everything
//! dnskey-ttl = 3600                       # default: the SOA's TTL
//! rrsig-lifetime = 1209600                # 14 days
//! rrsig-refresh = 604800                  # 7 days before expiry, signed again
//! signing-threads = 2                     # whole-zone signing; default: one per CPU
//! nsec3 = false                           # true: NSEC3 (RFC 5155) instead of NSEC
//! nsec3-iterations = 0                    # extra hash iterations (RFC 9276: 0)
//! nsec3-salt-length = 0                   # bytes of random salt
//! nsec3-salt-lifetime = 2592000           # a new salt (the chain made anew) after 30 days; 0: never
//! nsec3-opt-out = false                   # insecure delegations get no NSEC3
//! manual = false                          # true: keys are left as they are (no rollovers)
//! offline-ksk = false                     # true: no KSK here; ZSKs made ahead (lode dnssec
//!                                         # pregenerate), key records from a signed key
//!                                         # response (lode dnssec import-skr)
//! zsk-lifetime = 2592000                  # 30 days from a ZSK's activation to its rollover (0: never)
//! ksk-lifetime = 0                        # from a KSK's creation to its rollover (0: never)
//! propagation-delay = 3600                # added to each rollover step
//! zone-max-ttl = 86400                    # default: the largest TTL in the zone
//! delete-delay = 0                        # a removed key's file is deleted this long after
//! cds-cdnskey-publish = "rollover"        # none, delete-dnssec, rollover, always, double-ds
//! cds-digest-type = "sha256"              # or sha384
//! ksk-submission = "parent"               # a [[submission]]: the parent is asked for the DS
//! ds-push = ["parent-primary"]            # [[remote]] ids: the DS set sent to the parent's
//!                                         # primary by UPDATE (TSIG: the remote's key) when
//!                                         # the CDS changes (per zone too: [[zone]] ds-push)
//!
//! keystore = "hsm"                        # a [[keystore]]: keys made and kept in an HSM
//!                                         # (default: key files in kasp-db)
//!
//! [[keystore]]
//! id = "hsm"
//! backend = "pkcs11"                      # Knot's; keys in files need no keystore
//! config = "pkcs11:token=lode;pin-source=/etc/lode/hsm-pin /usr/lib/softhsm/libsofthsm2.so"
//!                                         # the token (PKCS #11 URI, RFC 7512) and the module;
//!                                         # the PIN from a file or pin-source=env:VARIABLE,
//!                                         # never written here (pin-value is refused)
//!
//! [[submission]]
//! id = "parent"
//! parent = ["parent-ns"]                  # [[remote]] ids: the parent's servers
//! check-interval = 3600                   # how often they are asked while a KSK waits
//! timeout = 0                             # the KSK becomes active after this anyway (0: never)
//! parent-delay = 0                        # waited after every parent serves the DS
//! reproducible-signing = false            # RFC 6979 ECDSA: the same data, the same signature
//!
//! [[zone]]
//! name = "example."
//! dnssec-signing = true
//! dnssec-policy = "default"               # default: Knot's default policy
//!
//! [[zone]]
//! name = "signed-elsewhere."
//! dnssec-validation = true                # each new version checked before it is
//!                                         # served (not with dnssec-signing)
//! ```

use serde::Deserialize;

use super::ConfigError;

/// One `[[policy]]` table.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PolicyEntry {
    /// The policy's name, referred to by zones.
    pub id: String,
    /// Signing algorithm (name or number).
    pub algorithm: Option<String>,
    /// KSK size in bits (RSA; the curve fixes it for the others).
    pub ksk_size: Option<u32>,
    /// ZSK size in bits.
    pub zsk_size: Option<u32>,
    /// One combined signing key.
    pub single_type_signing: Option<bool>,
    /// DNSKEY TTL.
    pub dnskey_ttl: Option<u32>,
    /// The largest TTL in the zone (rollover timing; default: computed).
    pub zone_max_ttl: Option<u32>,
    /// Propagation delay (rollover timing).
    pub propagation_delay: Option<u32>,
    /// Signature validity, seconds.
    pub rrsig_lifetime: Option<u32>,
    /// Seconds before expiry when a signature is made again.
    pub rrsig_refresh: Option<u32>,
    /// Knot's rrsig-pre-refresh (accepted; signatures are refreshed in batches anyway).
    pub rrsig_pre_refresh: Option<u32>,
    /// NSEC3 instead of NSEC.
    pub nsec3: Option<bool>,
    /// NSEC3 iterations.
    pub nsec3_iterations: Option<u16>,
    /// NSEC3 salt length.
    pub nsec3_salt_length: Option<u8>,
    /// NSEC3 opt-out.
    pub nsec3_opt_out: Option<bool>,
    /// Seconds a salt is used before it is replaced (0: never; Knot's 30 days).
    pub nsec3_salt_lifetime: Option<i64>,
    /// Threads for whole-zone signing.
    pub signing_threads: Option<usize>,
    /// Keys are managed by hand (no automatic key events).
    pub manual: Option<bool>,
    /// Offline KSK: ZSKs made ahead, key records from a signed key response.
    pub offline_ksk: Option<bool>,
    /// From a ZSK's activation to its rollover (0: never).
    pub zsk_lifetime: Option<u64>,
    /// From a KSK's creation to its rollover (0: never).
    pub ksk_lifetime: Option<u64>,
    /// A removed key's file is deleted this long after.
    pub delete_delay: Option<u64>,
    /// When CDS/CDNSKEY are published.
    pub cds_cdnskey_publish: Option<String>,
    /// CDS digest: sha256 or sha384.
    pub cds_digest_type: Option<String>,
    /// ECDSA signatures with RFC 6979 nonces (the same data, the same signature).
    pub reproducible_signing: Option<bool>,
    /// The `[[submission]]` whose parents are asked for a ready KSK's DS.
    pub ksk_submission: Option<String>,
    /// `[[remote]]` ids of the parent's primary: the DS set is sent to it by
    /// UPDATE whenever the zone's CDS changes (Knot's `ds-push`).
    #[serde(default)]
    pub ds_push: Vec<String>,
    /// The `[[keystore]]` new keys are made in (default: key files).
    pub keystore: Option<String>,
}

/// One `[[keystore]]` table (Knot's `keystore` section).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct KeystoreEntry {
    /// Its name, referred to by policies.
    pub id: String,
    /// `pkcs11` (Knot's `pem`, key files, is what no keystore means).
    pub backend: Option<String>,
    /// The token's PKCS #11 URI and the module's path.
    pub config: String,
}

/// One `[[submission]]` table (Knot's `submission` section).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SubmissionEntry {
    /// Its name, referred to by policies.
    pub id: String,
    /// `[[remote]]` ids of the parent's servers.
    #[serde(default)]
    pub parent: Vec<String>,
    /// Seconds between two rounds of DS queries (Knot's default 1 hour).
    pub check_interval: Option<u64>,
    /// A ready KSK becomes active this long after anyway (0: only when confirmed).
    pub timeout: Option<u64>,
    /// Seconds waited after every parent serves the DS.
    pub parent_delay: Option<u64>,
}

/// A KSK submission check: the parent's servers asked for the DS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submission {
    /// The parent's servers.
    pub parents: Vec<super::Remote>,
    /// Between two rounds of queries.
    pub check_interval: u64,
    /// Waited after every parent serves the DS (on top of the DS TTL).
    pub parent_delay: u64,
}

/// How one zone is signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signing {
    /// The policy's id ("default" for Knot's built-in one).
    pub policy_id: String,
    /// The keys: their algorithm, sizes, scheme and rollover timers.
    pub keys: lode_dnssec::KeyPolicy,
    /// The largest TTL in the zone for rollover timing (None: computed).
    pub zone_max_ttl: Option<u32>,
    /// The parent's servers asked for a ready KSK's DS (`ksk-submission`).
    pub submission: Option<Submission>,
    /// The parent's primaries the DS set is sent to by UPDATE (`ds-push`).
    pub ds_push: Vec<super::Remote>,
    /// The signer's settings.
    pub policy: lode_dnssec::Policy,
    /// The PKCS #11 token new keys are made in (None: key files).
    pub keystore: Option<lode_dnssec::hsm::TokenConfig>,
}

/// The policies by id, checked; Knot's `default` is there unless redefined.
pub(super) fn resolve_policies(
    entries: &[PolicyEntry],
    submissions: &[SubmissionEntry],
    keystores: &[KeystoreEntry],
    remotes: &[super::Remote],
) -> Result<Vec<Signing>, ConfigError> {
    let mut out: Vec<Signing> = Vec::new();
    for p in entries {
        if out.iter().any(|s| s.policy_id == p.id) {
            return Err(ConfigError::Value(format!(
                "policy {:?} is defined twice",
                p.id
            )));
        }
        out.push(resolve(p, submissions, keystores, remotes)?);
    }
    if !out.iter().any(|s| s.policy_id == "default") {
        out.push(resolve(
            &PolicyEntry {
                id: "default".into(),
                ..PolicyEntry::default()
            },
            submissions,
            keystores,
            remotes,
        )?);
    }
    Ok(out)
}

/// Why a policy's (or a zone's) reference to another table of the
/// configuration does not resolve; each reads as the text operators saw.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ReferenceError {
    /// `ksk-submission` names no `[[submission]]`.
    #[error("ksk-submission {0:?} is not a [[submission]] id")]
    NoSubmission(String),
    /// A `[[submission]]` without parents.
    #[error("submission {0:?}: no parent ([[remote]] ids)")]
    NoParent(String),
    /// A submission's parent names no `[[remote]]`.
    #[error("submission {submission:?}: parent {parent:?} is not a [[remote]] id")]
    UnknownParent { submission: String, parent: String },
    /// A submission checked every 0 seconds.
    #[error("submission {0:?}: check-interval = 0: at least 1")]
    NoCheckInterval(String),
    /// `keystore` names no `[[keystore]]`.
    #[error("keystore {0:?} is not a [[keystore]] id")]
    NoKeystore(String),
    /// A keystore's backend other than pkcs11.
    #[error("keystore {id:?}: backend {backend:?}: pkcs11 (keys in files need no keystore)")]
    Backend { id: String, backend: String },
    /// A keystore without a backend.
    #[error("keystore {0:?}: no backend (backend = \"pkcs11\")")]
    NoBackend(String),
    /// A keystore's `config` that is not a token's (`lode_dnssec::hsm`'s words).
    #[error("keystore {id:?}: {reason}")]
    Token { id: String, reason: String },
    /// `ds-push` with no CDS records to take the DS set from.
    #[error("ds-push needs CDS records: cds-cdnskey-publish is none")]
    DsPushWithoutCds,
    /// A `ds-push` entry names no `[[remote]]`.
    #[error("ds-push {0:?} is not a [[remote]] id")]
    NoDsPushRemote(String),
}

/// The `[[submission]]` named `id`, its parents resolved.
fn resolve_submission(
    id: &str,
    submissions: &[SubmissionEntry],
    remotes: &[super::Remote],
) -> Result<(Submission, u64), ReferenceError> {
    let s = submissions
        .iter()
        .find(|s| s.id == id)
        .ok_or_else(|| ReferenceError::NoSubmission(id.into()))?;
    if s.parent.is_empty() {
        return Err(ReferenceError::NoParent(id.into()));
    }
    let parents = s
        .parent
        .iter()
        .map(|r| {
            remotes.iter().find(|x| x.id == *r).cloned().ok_or_else(|| {
                ReferenceError::UnknownParent {
                    submission: id.into(),
                    parent: r.clone(),
                }
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let check_interval = s.check_interval.unwrap_or(3600);
    if check_interval == 0 {
        return Err(ReferenceError::NoCheckInterval(id.into()));
    }
    Ok((
        Submission {
            parents,
            check_interval,
            parent_delay: s.parent_delay.unwrap_or(0),
        },
        s.timeout.unwrap_or(0),
    ))
}

/// The token of the `[[keystore]]` named `id`.
fn resolve_keystore(
    id: &str,
    keystores: &[KeystoreEntry],
) -> Result<lode_dnssec::hsm::TokenConfig, ReferenceError> {
    let k = keystores
        .iter()
        .find(|k| k.id == id)
        .ok_or_else(|| ReferenceError::NoKeystore(id.into()))?;
    match k.backend.as_deref() {
        Some("pkcs11") => {}
        Some(b) => {
            return Err(ReferenceError::Backend {
                id: id.into(),
                backend: b.into(),
            })
        }
        None => return Err(ReferenceError::NoBackend(id.into())),
    }
    lode_dnssec::hsm::TokenConfig::parse(&k.config).map_err(|reason| ReferenceError::Token {
        id: id.into(),
        reason,
    })
}

fn resolve(
    p: &PolicyEntry,
    submissions: &[SubmissionEntry],
    keystores: &[KeystoreEntry],
    remotes: &[super::Remote],
) -> Result<Signing, ConfigError> {
    let bad = |what: String| ConfigError::Value(format!("policy {:?}: {what}", p.id));
    let unresolved = |e: ReferenceError| bad(e.to_string());
    let algorithm = match &p.algorithm {
        None => lode_dnssec::Algorithm::EcdsaP256,
        Some(a) => lode_dnssec::Algorithm::parse(a).ok_or_else(|| {
            bad(format!(
                "algorithm {a:?}: ecdsap256sha256 (13), ecdsap384sha384 (14), ed25519 (15) or rsasha256 (8)"
            ))
        })?,
    };
    for (what, bits) in [("ksk-size", p.ksk_size), ("zsk-size", p.zsk_size)] {
        if bits.is_some() {
            algorithm
                .key_bits(bits)
                .map_err(|e| bad(format!("{what}: {e}")))?;
        }
    }
    let salt_lifetime = match p.nsec3_salt_lifetime {
        None => 30 * 86400,
        Some(l) if l >= 0 => l as u64,
        Some(l) => {
            return Err(bad(format!(
                "nsec3-salt-lifetime = {l}: seconds (0: never replaced); re-salting at every \
                 signing (Knot's -1) is not done"
            )))
        }
    };
    let nsec3 = (p.nsec3 == Some(true)).then(|| lode_dnssec::Nsec3Policy {
        iterations: p.nsec3_iterations.unwrap_or(0),
        salt_length: p.nsec3_salt_length.unwrap_or(0),
        opt_out: p.nsec3_opt_out.unwrap_or(false),
        salt_lifetime,
        salt: None,
    });
    if nsec3.is_none()
        && (p.nsec3_iterations.is_some()
            || p.nsec3_salt_length.is_some()
            || p.nsec3_salt_lifetime.is_some()
            || p.nsec3_opt_out.is_some())
    {
        tracing::warn!(
            "policy {:?}: nsec3-* settings without nsec3 = true: the zone is signed with NSEC",
            p.id
        );
    }
    if nsec3.as_ref().is_some_and(|n| n.iterations > 500) {
        return Err(bad(
            "nsec3-iterations above 500: validators treat such zones as insecure (RFC 9276 recommends 0)"
                .into(),
        ));
    }
    let cds = match p.cds_cdnskey_publish.as_deref() {
        None => lode_dnssec::CdsPublish::default(),
        Some(c) => lode_dnssec::CdsPublish::parse(c).ok_or_else(|| {
            bad(format!(
                "cds-cdnskey-publish {c:?}: none, delete-dnssec, rollover, always or double-ds"
            ))
        })?,
    };
    let cds_digest = match p.cds_digest_type.as_deref() {
        None | Some("sha256") => 2,
        Some("sha384") => 4,
        Some(d) => return Err(bad(format!("cds-digest-type {d:?}: sha256 or sha384"))),
    };
    let mut policy = lode_dnssec::Policy {
        dnskey_ttl: p.dnskey_ttl,
        nsec3,
        reproducible_signing: p.reproducible_signing.unwrap_or(false),
        cds,
        cds_digest,
        ..lode_dnssec::Policy::default()
    };
    if let Some(l) = p.rrsig_lifetime {
        policy.rrsig_lifetime = l;
    }
    if let Some(r) = p.rrsig_refresh {
        policy.rrsig_refresh = r;
    }
    if policy.rrsig_refresh >= policy.rrsig_lifetime {
        return Err(bad(format!(
            "rrsig-refresh ({}) must be shorter than rrsig-lifetime ({})",
            policy.rrsig_refresh, policy.rrsig_lifetime
        )));
    }
    if policy.rrsig_lifetime < 10 {
        return Err(bad(format!(
            "rrsig-lifetime = {}: at least 10 seconds",
            policy.rrsig_lifetime
        )));
    }
    if let Some(t) = p.signing_threads {
        if t == 0 {
            return Err(bad("signing-threads = 0: at least 1".into()));
        }
        policy.signing_threads = t;
    }
    let defaults = lode_dnssec::KeyPolicy::default();
    let keys = lode_dnssec::KeyPolicy {
        manual: p.manual.unwrap_or(false),
        single_type: p.single_type_signing.unwrap_or(false),
        algorithm,
        ksk_size: p.ksk_size,
        zsk_size: p.zsk_size,
        propagation_delay: p
            .propagation_delay
            .map_or(defaults.propagation_delay, u64::from),
        zsk_lifetime: p.zsk_lifetime.unwrap_or(defaults.zsk_lifetime),
        ksk_lifetime: p.ksk_lifetime.unwrap_or(defaults.ksk_lifetime),
        delete_delay: p.delete_delay.unwrap_or(defaults.delete_delay),
        submission_timeout: 0,
        offline_ksk: p.offline_ksk.unwrap_or(false),
    };
    if keys.offline_ksk && keys.single_type {
        return Err(bad(
            "offline-ksk with single-type-signing: the KSK is kept elsewhere, a CSK cannot be"
                .into(),
        ));
    }
    let mut keys = keys;
    let submission = match &p.ksk_submission {
        None => None,
        Some(id) => {
            let (s, timeout) = resolve_submission(id, submissions, remotes).map_err(unresolved)?;
            keys.submission_timeout = timeout;
            Some(s)
        }
    };
    let ds_push = ds_push_remotes(&p.ds_push, remotes, &policy).map_err(unresolved)?;
    let keystore = match &p.keystore {
        None => None,
        Some(id) => Some(resolve_keystore(id, keystores).map_err(unresolved)?),
    };
    if keystore.is_some() && policy.reproducible_signing {
        return Err(bad(
            "reproducible-signing with a keystore: the token makes the signatures".into(),
        ));
    }
    Ok(Signing {
        policy_id: p.id.clone(),
        keys,
        zone_max_ttl: p.zone_max_ttl,
        submission,
        ds_push,
        policy,
        keystore,
    })
}

/// The `[[remote]]`s of a `ds-push` list (a policy's or a zone's).
pub(super) fn ds_push_remotes(
    ids: &[String],
    remotes: &[super::Remote],
    policy: &lode_dnssec::Policy,
) -> Result<Vec<super::Remote>, ReferenceError> {
    if !ids.is_empty() && policy.cds == lode_dnssec::CdsPublish::None {
        return Err(ReferenceError::DsPushWithoutCds);
    }
    ids.iter()
        .map(|id| {
            remotes
                .iter()
                .find(|r| r.id == *id)
                .cloned()
                .ok_or_else(|| ReferenceError::NoDsPushRemote(id.clone()))
        })
        .collect()
}

/// How a zone (or a template's members) is signed, from its
/// `[dnssec-signing, dnssec-validation]`, `dnssec-policy` and whether a
/// journal folder is configured; `owner` names it in errors.
pub(super) fn zone_signing(
    owner: &str,
    [signing, validation]: [Option<bool>; 2],
    policy: Option<&str>,
    policies: &[Signing],
    journal_dir: bool,
) -> Result<(Option<Signing>, bool), ConfigError> {
    let signing = match signing {
        Some(true) => {
            let id = policy.unwrap_or("default");
            let p = policies.iter().find(|p| p.policy_id == id).ok_or_else(|| {
                ConfigError::Value(format!(
                    "{owner}: dnssec-policy {id:?} is not a [[policy]] id"
                ))
            })?;
            if !journal_dir {
                return Err(ConfigError::Value(format!(
                    "{owner}: dnssec-signing needs journal-dir (the signed zone and its changes live there)"
                )));
            }
            Some(p.clone())
        }
        _ => {
            if let Some(id) = policy {
                tracing::warn!(
                    "{owner}: dnssec-policy {id:?} without dnssec-signing = true: not signed"
                );
            }
            None
        }
    };
    let validation = validation.unwrap_or(false);
    if validation && signing.is_some() {
        return Err(ConfigError::Value(format!(
            "{owner}: dnssec-validation checks a zone signed elsewhere; with dnssec-signing \
             the zone is signed here (as Knot, the two do not go together)"
        )));
    }
    Ok((signing, validation))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_names_its_keystore() {
        let ks = |backend: Option<&str>, config: &str| KeystoreEntry {
            id: "hsm".into(),
            backend: backend.map(str::to_string),
            config: config.into(),
        };
        let entry = PolicyEntry {
            id: "p".into(),
            keystore: Some("hsm".into()),
            ..PolicyEntry::default()
        };
        let good = ks(Some("pkcs11"), "pkcs11:token=lode;pin-source=/p /m.so");
        let all = resolve_policies(
            std::slice::from_ref(&entry),
            &[],
            std::slice::from_ref(&good),
            &[],
        )
        .unwrap();
        let t = all[0].keystore.as_ref().unwrap();
        assert_eq!(t.label, "lode");
        // Unknown id, another backend, a PIN in clear: refused with the reason.
        let err = |k: &[KeystoreEntry]| {
            resolve_policies(std::slice::from_ref(&entry), &[], k, &[])
                .unwrap_err()
                .to_string()
        };
        assert!(err(&[]).contains("not a [[keystore]] id"));
        assert!(err(&[ks(Some("pem"), "x")]).contains("backend"));
        assert!(
            err(&[ks(Some("pkcs11"), "pkcs11:token=l;pin-value=1 /m.so")]).contains("in clear")
        );
    }

    #[test]
    fn knots_default_policy_is_there_and_checks_are_made() {
        let all = resolve_policies(&[], &[], &[], &[]).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].keys.algorithm, lode_dnssec::Algorithm::EcdsaP256);
        assert_eq!(all[0].keys.zsk_lifetime, 30 * 86400);
        assert_eq!(all[0].policy.cds, lode_dnssec::CdsPublish::Rollover);
        assert_eq!(all[0].policy.rrsig_lifetime, 14 * 86400);
        let p = |f: fn(&mut PolicyEntry)| {
            let mut e = PolicyEntry {
                id: "p".into(),
                ..PolicyEntry::default()
            };
            f(&mut e);
            resolve_policies(&[e], &[], &[], &[])
        };
        assert!(p(|e| e.algorithm = Some("ed25519".into())).is_ok());
        assert!(p(|e| e.algorithm = Some("rsasha1".into())).is_err());
        assert!(p(|e| e.cds_cdnskey_publish = Some("sometimes".into())).is_err());
        // ksk-submission names a [[submission]] whose parents are remotes.
        assert!(p(|e| e.ksk_submission = Some("nope".into())).is_err());
        let remote = crate::config::Remote {
            id: "parent-ns".into(),
            addresses: vec!["127.0.0.1:53".parse().unwrap()],
            key: None,
            tls: None,
            via: Vec::new(),
        };
        let sub = |parent: &str| SubmissionEntry {
            id: "parent".into(),
            parent: vec![parent.into()],
            timeout: Some(600),
            ..SubmissionEntry::default()
        };
        let entry = PolicyEntry {
            id: "p".into(),
            ksk_submission: Some("parent".into()),
            ..PolicyEntry::default()
        };
        let all = resolve_policies(
            std::slice::from_ref(&entry),
            &[sub("parent-ns")],
            &[],
            std::slice::from_ref(&remote),
        )
        .unwrap();
        let s = all[0].submission.as_ref().unwrap();
        assert_eq!((s.parents.len(), s.check_interval), (1, 3600));
        assert_eq!(all[0].keys.submission_timeout, 600);
        assert!(resolve_policies(
            &[entry],
            &[sub("unknown")],
            &[],
            std::slice::from_ref(&remote)
        )
        .is_err());
        // ds-push names remotes, and needs CDS published.
        let push = |ids: &[&str], cds: Option<&str>| PolicyEntry {
            id: "p".into(),
            ds_push: ids.iter().map(|s| s.to_string()).collect(),
            cds_cdnskey_publish: cds.map(str::to_string),
            ..PolicyEntry::default()
        };
        let all = resolve_policies(
            &[push(&["parent-ns"], None)],
            &[],
            &[],
            std::slice::from_ref(&remote),
        )
        .unwrap();
        assert_eq!(all[0].ds_push, vec![remote.clone()]);
        assert!(resolve_policies(
            &[push(&["nope"], None)],
            &[],
            &[],
            std::slice::from_ref(&remote)
        )
        .is_err());
        let none = resolve_policies(&[push(&["parent-ns"], Some("none"))], &[], &[], &[remote]);
        assert!(none.is_err_and(|e| e.to_string().contains("cds-cdnskey-publish")));
        assert!(p(|e| e.cds_digest_type = Some("sha384".into())).is_ok());
        assert!(p(|e| e.rrsig_refresh = Some(20 * 86400)).is_err());
        // Key sizes: RSA 2048 to 4096; the curve's own for the others.
        assert!(p(|e| {
            e.algorithm = Some("rsasha256".into());
            e.zsk_size = Some(4096);
        })
        .is_ok());
        assert!(p(|e| {
            e.algorithm = Some("rsasha256".into());
            e.zsk_size = Some(1024);
        })
        .is_err());
        assert!(p(|e| e.ksk_size = Some(2048)).is_err());
        assert!(p(|e| e.ksk_size = Some(256)).is_ok());
        let n = p(|e| {
            e.nsec3 = Some(true);
            e.nsec3_opt_out = Some(true);
        })
        .unwrap();
        assert!(n
            .iter()
            .any(|s| s.policy.nsec3.as_ref().is_some_and(|n| n.opt_out)));
        assert!(p(|e| {
            e.nsec3 = Some(true);
            e.nsec3_iterations = Some(2500);
        })
        .is_err());
    }
}
