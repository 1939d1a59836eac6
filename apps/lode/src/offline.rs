//! `lode dnssec pregenerate | generate-ksr | sign-ksr | import-skr |
//! validate-skr | show-offline`: an offline KSK, as Knot 3.2's keymgr
//! commands of the same names and in their file format (see
//! `lode_dnssec::offline`), so that either side may be Knot.

use std::path::Path;

use anyhow::{anyhow, bail, Context as _};
use lode_dnssec::offline::{self, Kind, Period};
use lode_dnssec::{Role, SigningKey, Ttls, KSK_FLAGS, ZSK_FLAGS};
use lode_server::config::Signing;
use lode_wire::Name;

use crate::dnssec::key_dir;

/// `println!` that stops quietly when the reader has gone (`| head`).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// Text to standard output (a reader gone is no error).
fn out(text: &str) {
    use std::io::Write as _;
    let _ = std::io::stdout().write_all(text.as_bytes());
}

/// A time as keymgr takes it: Unix seconds, `YYYYMMDDHHmmSS` (UTC), `now`,
/// or `+N`/`-N` from now with a unit (s, mi, h, d, w, mo = 30 d, y = 365 d;
/// seconds without one).
pub(crate) fn parse_time(text: &str, now: u64) -> anyhow::Result<u64> {
    let bad = || {
        anyhow!(
            "time {text:?}: Unix seconds, YYYYMMDDHHmmSS, now, or +N/-N with s, mi, h, d, w, mo, y"
        )
    };
    if text == "now" {
        return Ok(now);
    }
    if let Some((sign, rest)) = text
        .strip_prefix('+')
        .map(|r| (1i64, r))
        .or_else(|| text.strip_prefix('-').map(|r| (-1, r)))
    {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let n: i64 = rest[..digits].parse().map_err(|_| bad())?;
        let unit = match &rest[digits..] {
            "" | "s" => 1,
            "mi" => 60,
            "h" => 3600,
            "d" => 86_400,
            "w" => 7 * 86_400,
            "mo" => 30 * 86_400,
            "y" => 365 * 86_400,
            _ => return Err(bad()),
        };
        let t = now as i64 + sign * n.checked_mul(unit).ok_or_else(bad)?;
        return u64::try_from(t).map_err(|_| bad());
    }
    lode_zonefile::parse_timestamp(text)
        .map(u64::from)
        .ok_or_else(bad)
}

/// The zone's signing settings in the configuration `conf`, if it names
/// one and signs the zone there.
fn zone_signing(conf: Option<&Path>, zone: &Name) -> anyhow::Result<Option<Signing>> {
    let Some(conf) = conf else { return Ok(None) };
    let file = lode_server::ConfigFile::read(conf)?;
    let base = conf.parent().unwrap_or(Path::new("."));
    let config = lode_server::Config::merge(&file, base, &lode_server::Options::default())?;
    Ok(config.zone_options(zone).signing.clone())
}

/// The ZSK side's settings: a signed zone whose policy has an offline KSK.
fn zsk_side(conf: Option<&Path>, zone: &Name) -> anyhow::Result<Signing> {
    let Some(path) = conf else {
        bail!("the zone's policy is needed: --config FILE");
    };
    let signing = zone_signing(conf, zone)?.ok_or_else(|| {
        anyhow!(
            "{}: zone {zone} is not signed (dnssec-signing)",
            path.display()
        )
    })?;
    if !signing.keys.offline_ksk {
        bail!(
            "{}: the policy {:?} of zone {zone} has no offline-ksk = true",
            path.display(),
            signing.policy_id
        );
    }
    Ok(signing)
}

/// Where a command works: the key folder, the configuration (if given),
/// the time now.
pub(crate) struct Target<'a> {
    pub kasp_db: &'a Path,
    pub conf: Option<&'a Path>,
    pub now: u64,
}

impl Target<'_> {
    /// `pregenerate [FROM] TO`: the ZSKs and their rollovers up to TO made
    /// ahead and written to the key folder.
    pub(crate) fn pregenerate(&self, zone: &Name, times: &[String]) -> anyhow::Result<()> {
        let (kasp_db, conf, now) = (self.kasp_db, self.conf, self.now);
        let signing = zsk_side(conf, zone)?;
        let (from, to) = span(times, now, now)?;
        let (Some(dnskey), Some(max)) = (signing.policy.dnskey_ttl, signing.zone_max_ttl) else {
            bail!(
            "pregenerate: the policy {:?} needs dnskey-ttl and zone-max-ttl (the timers are made before the zone is)",
            signing.policy_id
        );
        };
        let ttls = Ttls {
            dnskey: u64::from(dnskey),
            max: u64::from(max),
        };
        let dir = key_dir(kasp_db, zone);
        let mut keys = SigningKey::read_all(&dir, zone.as_ref())?;
        let p = &signing.keys;
        let token = signing
            .keystore
            .as_ref()
            .map(lode_dnssec::hsm::open)
            .transpose()?;
        let mut gen = |role: Role| {
            let (flags, bits) = if role.is_ksk() {
                (KSK_FLAGS, p.ksk_size)
            } else {
                (ZSK_FLAGS, p.zsk_size)
            };
            match &token {
                Some(t) => SigningKey::generate_in(t, zone, p.algorithm, flags, bits, now),
                None => SigningKey::generate_sized(zone, p.algorithm, flags, bits, now),
            }
        };
        let plan = lode_dnssec::rollover::pregenerate(&mut keys, p, ttls, from, to, &mut gen)?;
        for &i in &plan.changed {
            keys[i].write(&dir)?;
        }
        for line in &plan.log {
            outln!("{zone}: {line}");
        }
        outln!(
            "{zone}: {} ZSKs with timers up to {} in {}",
            keys.iter().filter(|k| k.role == Role::Zsk).count(),
            lode_zonefile::utc_text(to),
            dir.display()
        );
        Ok(())
    }

    /// `generate-ksr [FROM] TO`: the key signing request of the ZSKs made
    /// ahead, to standard output (FROM: the last period imported, else now).
    pub(crate) fn generate_ksr(&self, zone: &Name, times: &[String]) -> anyhow::Result<()> {
        let (kasp_db, conf, now) = (self.kasp_db, self.conf, self.now);
        let signing = zsk_side(conf, zone)?;
        let last = imported(kasp_db, zone)?.last().map_or(now, |p| p.at);
        let (from, to) = span(times, last, now)?;
        let ttl = signing.policy.dnskey_ttl.ok_or_else(|| {
            anyhow!(
                "generate-ksr: the policy {:?} needs dnskey-ttl",
                signing.policy_id
            )
        })?;
        let dir = key_dir(kasp_db, zone);
        let keys = SigningKey::read_all(&dir, zone.as_ref())?;
        let zsks: Vec<SigningKey> = keys.into_iter().filter(|k| k.role == Role::Zsk).collect();
        let request = offline::request(&zsks, zone, ttl, from, to);
        if request.is_empty() {
            bail!(
                "{zone}: no ZSK is published from {} to {} (lode dnssec pregenerate first)",
                lode_zonefile::utc_text(from),
                lode_zonefile::utc_text(to)
            );
        }
        out(&offline::write(&request, Kind::Request, now));
        Ok(())
    }

    /// `sign-ksr FILE` (the KSK side): the signed key response to a request,
    /// by the zone's KSKs in the key folder, to standard output.
    pub(crate) fn sign_ksr(&self, zone: &Name, file: &Path) -> anyhow::Result<()> {
        let (kasp_db, conf, now) = (self.kasp_db, self.conf, self.now);
        let request = read(file, zone, Kind::Request)?;
        // The policy's signature lifetime, refresh and CDS; Knot's defaults
        // without a configuration.
        let policy =
            zone_signing(conf, zone)?.map_or_else(lode_dnssec::Policy::default, |s| s.policy);
        let dir = key_dir(kasp_db, zone);
        let ksks: Vec<SigningKey> = SigningKey::read_all(&dir, zone.as_ref())?
            .into_iter()
            .filter(|k| k.role.is_ksk())
            .collect();
        if ksks.is_empty() {
            bail!(
                "{zone}: no KSK in {} (lode dnssec generate {zone})",
                dir.display()
            );
        }
        let response = offline::sign_request(&request, &ksks, &policy, zone).map_err(|e| {
            anyhow!("{zone}: {e} (is a KSK active from the request's first period on?)")
        })?;
        out(&offline::write(&response, Kind::Response, now));
        Ok(())
    }

    /// `import-skr FILE` (the ZSK side): a signed key response checked and
    /// kept in the key folder, replacing what was imported for its span and
    /// after; the server takes it in at its next key event or `lode
    /// zone-keys-load`.
    pub(crate) fn import_skr(&self, zone: &Name, file: &Path) -> anyhow::Result<()> {
        let (kasp_db, conf, now) = (self.kasp_db, self.conf, self.now);
        if conf.is_some() {
            zsk_side(conf, zone)?;
        }
        let response = read(file, zone, Kind::Response)?;
        let dir = key_dir(kasp_db, zone);
        let keys = SigningKey::read_all(&dir, zone.as_ref())?;
        if !keys.iter().any(|k| k.role == Role::Zsk) {
            bail!(
            "{zone}: no ZSK in {} (lode dnssec pregenerate, then generate-ksr: the response answers that request)",
            dir.display()
        );
        }
        check(&response, zone, Some(&keys))?;
        let (first, last) = match (response.first(), response.last()) {
            (Some(f), Some(l)) => (f.at, l.at),
            _ => bail!("{}: no period", file.display()),
        };
        let count = response.len();
        let all = offline::merge(imported(kasp_db, zone)?, response);
        lode_dnssec::key::write_private(
            &dir,
            lode_server::OFFLINE_FILE,
            &offline::write(&all, Kind::Response, now),
        )?;
        outln!(
        "{zone}: {count} periods imported ({} to {}), {} in {}; the server takes them in at its next key event or `lode zone-keys-load {zone}`",
        lode_zonefile::utc_text(first),
        lode_zonefile::utc_text(last),
        all.len(),
        dir.join(lode_server::OFFLINE_FILE).display()
    );
        Ok(())
    }

    /// `validate-skr FILE`: each period's signatures checked (and, when the
    /// key folder has the zone's ZSKs, that they are in it).
    pub(crate) fn validate_skr(&self, zone: &Name, file: &Path) -> anyhow::Result<()> {
        let kasp_db = self.kasp_db;
        let response = read(file, zone, Kind::Response)?;
        let keys = SigningKey::read_all(&key_dir(kasp_db, zone), zone.as_ref())?;
        let zsks = keys
            .iter()
            .any(|k| k.role == Role::Zsk)
            .then_some(&keys[..]);
        check(&response, zone, zsks)?;
        outln!(
            "{zone}: {} periods, each signed by a key of its DNSKEY RRset with the SEP flag{}",
            response.len(),
            if zsks.is_some() {
                ", with the ZSKs published then"
            } else {
                ""
            }
        );
        Ok(())
    }

    /// `show-offline [FROM] [TO]`: the imported periods of that span.
    pub(crate) fn show_offline(&self, zone: &Name, times: &[String]) -> anyhow::Result<()> {
        let (kasp_db, now) = (self.kasp_db, self.now);
        let all = imported(kasp_db, zone)?;
        let from = match times.first() {
            Some(t) => parse_time(t, now)?,
            None => 0,
        };
        let to = match times.get(1) {
            Some(t) => parse_time(t, now)?,
            None => u64::MAX,
        };
        // The period in force at FROM, and those beginning up to TO.
        let start = all.iter().rposition(|p| p.at <= from).unwrap_or(0);
        let shown: Vec<Period> = all
            .into_iter()
            .skip(start)
            .take_while(|p| p.at <= to)
            .collect();
        if shown.is_empty() {
            bail!("{zone}: no signed key response imported for that span");
        }
        out(&offline::write(&shown, Kind::Response, now));
        Ok(())
    }
}

/// FROM and TO of `[FROM] TO` (FROM: `from` when left out).
fn span(times: &[String], from: u64, now: u64) -> anyhow::Result<(u64, u64)> {
    let (from, to) = match times {
        [to] => (from, parse_time(to, now)?),
        [f, to] => (parse_time(f, now)?, parse_time(to, now)?),
        _ => bail!("expected [FROM] TO"),
    };
    if to <= from {
        bail!(
            "TO ({}) is not after FROM ({})",
            lode_zonefile::utc_text(to),
            lode_zonefile::utc_text(from)
        );
    }
    Ok((from, to))
}

/// The periods imported so far (the key folder's file).
fn imported(kasp_db: &Path, zone: &Name) -> anyhow::Result<Vec<Period>> {
    lode_server::read_offline(&key_dir(kasp_db, zone), zone).map_err(|e| anyhow!(e))
}

/// Reads a KSR or SKR file.
fn read(file: &Path, zone: &Name, kind: Kind) -> anyhow::Result<Vec<Period>> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    offline::parse(&text, &file.display().to_string(), zone, kind).map_err(|e| anyhow!(e))
}

/// Checks each period of a response (signatures; with `zsks`, the ZSK
/// side's keys published then in it).
fn check(periods: &[Period], zone: &Name, zsks: Option<&[SigningKey]>) -> anyhow::Result<()> {
    for p in periods {
        let want = zsks
            .map(|k| offline::published_zsks(k, p.at))
            .unwrap_or_default();
        offline::verify(p, zone, &want).map_err(|e| anyhow!("{zone}: {e}"))?;
    }
    Ok(())
}
