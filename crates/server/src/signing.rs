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
