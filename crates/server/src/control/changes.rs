//! What a reload changes: the differences between the configuration the
//! server runs with (or loaded last) and the new one that decide what is
//! applied at once — signing turned on or off, a signed zone's new policy,
//! a writer's new settings — and what waits for a restart (sockets,
//! threads, a catalog added).
//!
//! ```text
//!  running / previous Config ─┐
//!  new Config ────────────────┴─▶ signing_started, signing_stopped, policy_changes,
//!                                 settings_changes ─▶ the reload applies them (reload.rs)
//!                                 restart_needed    ─▶ named in the reload's report
//! ```

use crate::config::Config;

/// A catalog zone, generated or read for its members.
pub(super) fn is_catalog(o: &crate::config::ZoneOptions) -> bool {
    o.catalog || !o.interpret.is_empty()
}

/// The zones served from a zone file or transferred from primaries,
/// unsigned under `r` and signed under `c`, with their signing settings:
/// turned on by a reload (a zone added signed waits for a restart).
pub(super) fn signing_started(
    r: &Config,
    c: &Config,
) -> Vec<(lode_wire::Name, crate::config::Signing)> {
    let mut v: Vec<_> = c
        .zones
        .iter()
        .filter(|spec| {
            matches!(
                spec.source,
                crate::config::ZoneSource::File(_) | crate::config::ZoneSource::Transfer
            )
        })
        .filter_map(|spec| {
            let name = spec.name.to_lowercase();
            let before = r.zone_options.get(&name)?;
            let after = c.zone_options.get(&name)?.signing.as_ref()?;
            (before.signing.is_none() && c.kasp_db.is_some()).then(|| (name, after.clone()))
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v.dedup_by(|a, b| a.0 == b.0);
    v
}

/// The zones signed under `r` and configured unsigned under `c`: turned
/// off by a reload. With each, whether it is a secondary (its primary's
/// zone is then transferred whole at once).
pub(super) fn signing_stopped(r: &Config, c: &Config) -> Vec<(lode_wire::Name, bool)> {
    let mut v: Vec<_> = c
        .zones
        .iter()
        .filter_map(|spec| {
            let name = spec.name.to_lowercase();
            let before = r.zone_options.get(&name)?.signing.as_ref();
            let after = c.zone_options.get(&name)?.signing.as_ref();
            let secondary = matches!(spec.source, crate::config::ZoneSource::Transfer);
            (before.is_some() && after.is_none()).then_some((name, secondary))
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v.dedup_by(|a, b| a.0 == b.0);
    v
}

/// The zones configured before and after whose writer settings differ,
/// with their new settings.
pub(super) fn settings_changes(
    r: &Config,
    c: &Config,
) -> Vec<(lode_wire::Name, crate::update::ZoneSettings)> {
    use crate::update::ZoneSettings;
    let mut v: Vec<_> = c
        .zone_options
        .iter()
        .filter_map(|(name, o)| {
            let before = ZoneSettings::of(r.zone_options.get(name)?);
            let after = ZoneSettings::of(o);
            (before != after).then(|| (name.clone(), after))
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// The zones signed before and after whose signing settings (`dnssec-policy`
/// or the policy's values) differ, with their new settings.
pub(super) fn policy_changes(
    r: &Config,
    c: &Config,
) -> Vec<(lode_wire::Name, crate::config::Signing)> {
    let mut v: Vec<_> = c
        .zone_options
        .iter()
        .filter_map(|(name, o)| {
            let before = r.zone_options.get(name)?.signing.as_ref()?;
            let after = o.signing.as_ref()?;
            (before != after).then(|| (name.clone(), after.clone()))
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// The settings of `config` that differ from those the server started with
/// (`running`) and take effect only at a restart: sockets, threads, the
/// query path's policies, signing set up at start.
pub(super) fn restart_needed(r: &Config, c: &Config) -> Vec<String> {
    let mut v: Vec<String> = [
        (c.listen != r.listen, "listen"),
        (c.workers != r.workers, "workers"),
        (
            c.background_workers != r.background_workers,
            "background-workers",
        ),
        (c.max_udp_payload != r.max_udp_payload, "max-udp-payload"),
        (
            c.udp_receive_buffer != r.udp_receive_buffer,
            "udp-receive-buffer",
        ),
        (c.control != r.control, "control"),
        (c.metrics_listen != r.metrics_listen, "metrics-listen"),
        (c.log_level != r.log_level, "log-level"),
        (c.log_format != r.log_format, "log-format"),
        (c.user != r.user, "user"),
        (c.journal_dir != r.journal_dir, "journal-dir"),
        (c.tls.listen != r.tls.listen, "listen-tls"),
        (c.tls.allow_tls12 != r.tls.allow_tls12, "tls-min-version"),
        (c.tls.listen_quic != r.tls.listen_quic, "listen-quic"),
        (c.listen_xdp != r.listen_xdp, "listen-xdp"),
        (c.xdp_fallback != r.xdp_fallback, "xdp-fallback"),
        (c.xdp_route_check != r.xdp_route_check, "xdp-route-check"),
        (c.xdp_busy_poll != r.xdp_busy_poll, "xdp-busypoll-budget"),
        (
            c.tls.quic_max_clients != r.tls.quic_max_clients,
            "quic-max-clients",
        ),
        (
            c.tls.quic_idle_timeout != r.tls.quic_idle_timeout,
            "quic-idle-close-timeout",
        ),
    ]
    .into_iter()
    .filter(|(changed, _)| *changed)
    .map(|(_, name)| name.to_string())
    .collect();
    // A zone signed now and not before is signed at once (see
    // `signing_started`), one signed before and not now is no longer
    // signed (see `signing_stopped`); a signed zone added takes effect at
    // restart (until then the zone is not served). A signed zone's policy
    // changed is applied now (see `policy_changes`).
    let started: Vec<lode_wire::Name> = signing_started(r, c)
        .into_iter()
        .map(|z| z.0)
        .chain(signing_stopped(r, c).into_iter().map(|z| z.0))
        .collect();
    let mut zones: Vec<_> = c.zone_options.iter().collect();
    zones.sort_by(|a, b| a.0.cmp(b.0));
    for (name, options) in zones {
        // A zone added is started signed by the reload (see `start_writers`).
        let Some(before) = r.zone_options.get(name).map(|o| &o.signing) else {
            continue;
        };
        if before.is_some() != options.signing.is_some() && !started.contains(name) {
            v.push(format!("zone {name}: dnssec-signing/dnssec-policy"));
        }
    }
    // A catalog added: its scheduler and members start with the server.
    let mut catalogs: Vec<&lode_wire::Name> = c
        .zone_options
        .iter()
        .filter(|(n, o)| is_catalog(o) && !r.zone_options.get(*n).is_some_and(|b| is_catalog(b)))
        .map(|(n, _)| n)
        .collect();
    catalogs.sort();
    for name in catalogs {
        v.push(format!("zone {name}: a catalog added"));
    }
    // A secondary's zone file is its writer's, set when the writer starts.
    let mut files: Vec<&lode_wire::Name> = c
        .secondary_files
        .keys()
        .chain(r.secondary_files.keys())
        .filter(|n| r.zone_options.contains_key(*n) && c.zone_options.contains_key(*n))
        .filter(|n| c.secondary_files.get(*n) != r.secondary_files.get(*n))
        .collect();
    files.sort();
    files.dedup();
    for name in files {
        v.push(format!("zone {name}: file (a secondary's)"));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConfigFile, Options};

    fn merged(text: &str) -> Config {
        let file = ConfigFile::parse(text).unwrap();
        Config::merge(&file, std::path::Path::new("/x"), &Options::default()).unwrap()
    }

    #[test]
    fn a_secondary_file_changed_takes_effect_at_restart() {
        let text = "journal-dir = \"j\"\n[[remote]]\nid = \"p\"\naddress = [\"192.0.2.1\"]\n\
                    [[zone]]\nname = \"s.example.\"\nmaster = [\"p\"]\n";
        let running = merged(text);
        let with_file = merged(&format!("{text}file = \"s.zone\"\n"));
        let want = vec!["zone s.example.: file (a secondary's)".to_string()];
        assert_eq!(restart_needed(&running, &with_file), want);
        assert_eq!(restart_needed(&with_file, &running), want);
        assert!(restart_needed(&with_file, &with_file).is_empty());
    }

    #[test]
    fn a_signed_zone_takes_a_new_policy_now_and_signing_turned_on_at_once() {
        let zone = |signing: &str, policy: &str| {
            merged(&format!(
                "journal-dir = \"j\"\n[[policy]]\nid = \"p\"\n{policy}\n\
                 [[zone]]\nname = \"s.example.\"\nfile = \"s.zone\"\n{signing}"
            ))
        };
        let signed = "dnssec-signing = true\ndnssec-policy = \"p\"\n";
        let unsigned = zone("", "");
        let p13 = zone(signed, "");
        let p15 = zone(signed, "algorithm = \"ed25519\"\n");
        let changes = policy_changes(&p13, &p15);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].0.to_string(), "s.example.");
        assert!(restart_needed(&p13, &p15).is_empty());
        assert!(policy_changes(&p13, &p13).is_empty());
        // Signed now and not before: at once (the zone has a file and
        // kasp-db is set: the journal folder's keys/); the other way round:
        // at restart.
        assert!(policy_changes(&unsigned, &p13).is_empty());
        let started = signing_started(&unsigned, &p13);
        assert_eq!(started.len(), 1);
        assert_eq!(started[0].0.to_string(), "s.example.");
        assert!(restart_needed(&unsigned, &p13).is_empty());
        assert!(signing_started(&p13, &unsigned).is_empty());
        assert!(signing_started(&p13, &p15).is_empty());
        // Signed before and not now: turned off at once too.
        let stopped = signing_stopped(&p13, &unsigned);
        assert_eq!(stopped.len(), 1);
        assert_eq!(stopped[0].0.to_string(), "s.example.");
        assert!(!stopped[0].1, "a primary");
        assert!(restart_needed(&p13, &unsigned).is_empty());
        assert!(signing_stopped(&unsigned, &p13).is_empty());
        assert!(signing_stopped(&p13, &p15).is_empty());
    }

    #[test]
    fn a_secondarys_signing_turned_on_and_off_at_once() {
        let zone = |signing: &str| {
            merged(&format!(
                "journal-dir = \"j\"\n[[remote]]\nid = \"p\"\naddress = [\"192.0.2.1\"]\n\
                 [[zone]]\nname = \"s.example.\"\nmaster = [\"p\"]\n{signing}"
            ))
        };
        let (unsigned, signed) = (zone(""), zone("dnssec-signing = true\n"));
        let started = signing_started(&unsigned, &signed);
        assert_eq!(started.len(), 1);
        assert!(signing_stopped(&signed, &unsigned)[0].1, "a secondary");
        assert!(restart_needed(&unsigned, &signed).is_empty());
        assert!(restart_needed(&signed, &unsigned).is_empty());
    }

    #[test]
    fn a_signed_zone_added_takes_effect_now() {
        let base = "journal-dir = \"j\"\n[[zone]]\nname = \"a.example.\"\nfile = \"a.zone\"\n";
        let before = merged(base);
        let after = merged(&format!(
            "{base}[[zone]]\nname = \"s.example.\"\nfile = \"s.zone\"\ndnssec-signing = true\n"
        ));
        // Not "turned on": started signed by the reload's `start_writers`.
        assert!(signing_started(&before, &after).is_empty());
        assert!(restart_needed(&before, &after).is_empty());
    }
}
