//! `[[zone]]` tables into each zone's options: ACL rules (shared between
//! zones that name the same ones), serial policy, zone-file sync, NOTIFY
//! targets, primaries, catalog roles, signing, SOA timer bounds.

use std::collections::HashMap;
use std::time::Duration;

use lode_wire::Name;

use super::dnssec::Signing;
use super::{
    parse_origin, ConfigError, ConfigFile, Remote, TimerBounds, ZoneOptions, ZonefileSync,
};

/// Every zone's options, by origin.
pub(super) fn resolve_zone_options(
    file: &ConfigFile,
    acls: &[crate::acl::Rule],
    remotes: &[Remote],
    templates: &[(String, ZoneOptions)],
    policies: &[Signing],
    global_sync: ZonefileSync,
) -> Result<HashMap<Name, std::sync::Arc<ZoneOptions>>, ConfigError> {
    let mut zone_options = std::collections::HashMap::new();
    // Zones with the same options share one copy (a hosting server's 10^5
    // zones hold a few, not 10^5): the last few distinct ones are looked
    // at, which finds zones configured alike, written one after the other.
    let mut recent: std::collections::VecDeque<std::sync::Arc<ZoneOptions>> =
        std::collections::VecDeque::new();
    let mut shared_rules: std::collections::HashMap<
        Vec<String>,
        std::sync::Arc<[crate::acl::Rule]>,
    > = std::collections::HashMap::new();
    for z in &file.zones {
        let rules = match shared_rules.get(&z.acl) {
            Some(r) => std::sync::Arc::clone(r),
            None => {
                let mut rules = Vec::new();
                for id in &z.acl {
                    let rule = acls.iter().find(|r| r.id == *id).ok_or_else(|| {
                        ConfigError::Value(format!("zone {}: acl {id:?} is not defined", z.name))
                    })?;
                    rules.push(rule.clone());
                }
                let rules: std::sync::Arc<[crate::acl::Rule]> = rules.into();
                shared_rules.insert(z.acl.clone(), rules.clone());
                rules
            }
        };
        let serial_policy = z
            .serial_policy
            .clone()
            .unwrap_or_else(|| "increment".into());
        if !["increment", "unixtime", "dateserial"].contains(&serial_policy.as_str()) {
            return Err(ConfigError::Value(format!(
                "zone {}: serial-policy {serial_policy:?}: must be increment, unixtime or dateserial",
                z.name
            )));
        }
        let takes_updates = rules
            .iter()
            .any(|r| r.actions.contains(&crate::acl::Action::Update));
        if takes_updates && file.journal_dir.is_none() {
            return Err(ConfigError::Value(format!(
                "zone {}: its acl allows updates, so journal-dir must be set (updates are journaled before they are answered)",
                z.name
            )));
        }
        let zonefile_sync = match z.zonefile_sync {
            Some(s) => ZonefileSync::from_seconds(s)
                .map_err(|e| ConfigError::Value(format!("zone {}: {e}", z.name)))?,
            None => global_sync,
        };
        let mut notify = Vec::new();
        for id in &z.notify {
            let remote = remotes.iter().find(|r| r.id == *id).ok_or_else(|| {
                ConfigError::Value(format!(
                    "zone {}: notify {id:?} is not a [[remote]] id",
                    z.name
                ))
            })?;
            notify.push(remote.clone());
        }
        let mut masters = Vec::new();
        for id in &z.master {
            let remote = remotes.iter().find(|r| r.id == *id).ok_or_else(|| {
                ConfigError::Value(format!(
                    "zone {}: master {id:?} is not a [[remote]] id",
                    z.name
                ))
            })?;
            masters.push(remote.clone());
        }
        if !masters.is_empty() && file.journal_dir.is_none() {
            return Err(ConfigError::Value(format!(
                "zone {}: a secondary (master = …) needs journal-dir: its transferred contents and history live there",
                z.name
            )));
        }
        let generates = z.catalog_role.as_deref() == Some("generate");
        let mut interpret = Vec::new();
        match z.catalog_role.as_deref() {
            None | Some("generate") => {}
            Some("interpret") => {
                if z.catalog_template.is_empty() {
                    return Err(ConfigError::Value(format!(
                        "zone {}: catalog-role = \"interpret\" needs catalog-template = [\"…\"] (a [[template]] id)",
                        z.name
                    )));
                }
                if file.journal_dir.is_none() {
                    return Err(ConfigError::Value(format!(
                        "zone {}: a consumed catalog needs journal-dir (its member zones live there)",
                        z.name
                    )));
                }
                for id in &z.catalog_template {
                    let t = templates.iter().find(|(tid, _)| tid == id).ok_or_else(|| {
                        ConfigError::Value(format!(
                            "zone {}: catalog-template {id:?} is not a [[template]] id",
                            z.name
                        ))
                    })?;
                    interpret.push(t.clone());
                }
            }
            Some(other) => {
                return Err(ConfigError::Value(format!(
                    "zone {}: catalog-role = {other:?}: \"generate\" or \"interpret\"",
                    z.name
                )))
            }
        }
        if generates && (z.file.is_some() || !masters.is_empty()) {
            return Err(ConfigError::Value(format!(
                "zone {}: a generated catalog has neither `file` nor `master`",
                z.name
            )));
        }
        if generates && file.journal_dir.is_none() {
            return Err(ConfigError::Value(format!(
                "zone {}: a generated catalog needs journal-dir (its changes reach the consumers as IXFR)",
                z.name
            )));
        }
        if z.file.is_none() && masters.is_empty() && !generates {
            return Err(ConfigError::Value(format!(
                "zone {}: no file (only a secondary, with master = […], has none)",
                z.name
            )));
        }
        if z.file.is_some() && !masters.is_empty() && file.journal_dir.is_none() {
            return Err(ConfigError::Value(format!(
                "zone {}: a secondary's `file` is written from its journal: set journal-dir",
                z.name
            )));
        }
        let (mut signing, validation) = super::dnssec::zone_signing(
            &format!("zone {}", z.name),
            [z.dnssec_signing, z.dnssec_validation],
            z.dnssec_policy.as_deref(),
            policies,
            file.journal_dir.is_some(),
        )?;
        if !z.ds_push.is_empty() {
            let Some(s) = signing.as_mut() else {
                return Err(ConfigError::Value(format!(
                    "zone {}: ds-push without dnssec-signing",
                    z.name
                )));
            };
            s.ds_push = super::dnssec::ds_push_remotes(&z.ds_push, remotes, &s.policy)
                .map_err(|e| ConfigError::Value(format!("zone {}: {e}", z.name)))?;
        }
        let zonemd_generate = zonemd_generate(
            &format!("zone {}", z.name),
            z.zonemd_generate.as_deref(),
            file.journal_dir.is_some(),
        )?;
        let notify_delay = z.notify_delay.unwrap_or(0);
        if notify_delay > 3600 {
            return Err(ConfigError::Value(format!(
                "zone {}: notify-delay = {notify_delay}: at most 3600 seconds",
                z.name
            )));
        }
        let options = ZoneOptions {
            acl: rules,
            serial_policy,
            zonefile_sync,
            notify,
            notify_delay: Duration::from_secs(notify_delay),
            masters,
            catalog: generates,
            interpret,
            signing,
            validation,
            zonemd_generate,
            zonemd_verify: z.zonemd_verify.unwrap_or(false),
            timers: TimerBounds::from_settings(
                &format!("zone {}", z.name),
                [
                    z.refresh_min_interval,
                    z.refresh_max_interval,
                    z.retry_min_interval,
                    z.retry_max_interval,
                    z.expire_min_interval,
                    z.expire_max_interval,
                ],
            )?,
        };
        let shared = match recent.iter().position(|o| **o == options) {
            Some(i) => recent[i].clone(),
            None => {
                let o = std::sync::Arc::new(options);
                if recent.len() == 8 {
                    recent.pop_back();
                }
                recent.push_front(o.clone());
                o
            }
        };
        zone_options.insert(parse_origin(&z.name)?, shared);
    }
    Ok(zone_options)
}

/// `zonemd-generate` of a zone or template (`owner` in the messages): what
/// each new version gets; it changes the zone, so it needs journal-dir.
pub(super) fn zonemd_generate(
    owner: &str,
    value: Option<&str>,
    has_journal: bool,
) -> Result<lode_zones::zonemd::Generate, ConfigError> {
    let generate = match value {
        Some(g) => g
            .parse()
            .map_err(|e| ConfigError::Value(format!("{owner}: zonemd-generate {e}")))?,
        None => lode_zones::zonemd::Generate::None,
    };
    if generate != lode_zones::zonemd::Generate::None && !has_journal {
        return Err(ConfigError::Value(format!(
            "{owner}: zonemd-generate changes the zone (each version gets its ZONEMD): set journal-dir"
        )));
    }
    Ok(generate)
}
