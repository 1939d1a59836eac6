//! The configuration of replication: remotes (primaries and secondaries),
//! templates of catalog members, bounds on a secondary's SOA timers, and
//! the generated catalogs' members — resolved and checked.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use lode_wire::Name;
use serde::Deserialize;

use super::{
    parse_listen, parse_origin, CatalogMembers, ConfigError, ConfigFile, ZoneOptions, ZonefileSync,
};

/// One `[[template]]` table: what the members of a consumed catalog get
/// (Knot's `catalog-template`); a member's group names its template.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TemplateEntry {
    /// The template's name (the catalog group it serves).
    pub id: String,
    /// The members' primaries (remote ids).
    #[serde(default, alias = "primary")]
    pub master: Vec<String>,
    /// The members' ACL rules by id.
    #[serde(default)]
    pub acl: Vec<String>,
    /// Remotes the members NOTIFY.
    #[serde(default)]
    pub notify: Vec<String>,
    /// Bounds on a secondary's SOA refresh, retry and expire (seconds;
    /// Knot's names and defaults).
    pub refresh_min_interval: Option<u32>,
    /// See `refresh_min_interval`.
    pub refresh_max_interval: Option<u32>,
    /// See `refresh_min_interval`.
    pub retry_min_interval: Option<u32>,
    /// See `refresh_min_interval`.
    pub retry_max_interval: Option<u32>,
    /// See `refresh_min_interval`.
    pub expire_min_interval: Option<u32>,
    /// See `refresh_min_interval`.
    pub expire_max_interval: Option<u32>,
    /// The members are signed here (as a zone's `dnssec-signing`).
    pub dnssec_signing: Option<bool>,
    /// The `[[policy]]` they are signed by.
    pub dnssec_policy: Option<String>,
    /// Each new version of a member (signed elsewhere) checked first.
    pub dnssec_validation: Option<bool>,
    /// The members' ZONEMD (as a zone's `zonemd-generate`).
    pub zonemd_generate: Option<String>,
    /// Transfers of a member whose ZONEMD is missing or wrong are refused.
    pub zonemd_verify: Option<bool>,
}

/// One `[[remote]]` table: another server, as Knot's `remote`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RemoteEntry {
    /// The remote's name, referred to by zones.
    pub id: String,
    /// Its addresses: "ADDR@PORT", "ADDR:PORT", "[V6]:PORT" or "ADDR" (port 53).
    pub address: Vec<String>,
    /// The TSIG key for messages to it.
    pub key: Option<String>,
    /// Transfers (and SOA queries) to it over TLS (RFC 9103; Knot's `tls`).
    #[serde(default)]
    pub tls: bool,
    /// Pins of its certificate's public key (Knot's `cert-key`: Base64 of
    /// the SHA-256 of the SPKI); given, TLS is used and one must match.
    #[serde(default, rename = "cert-key")]
    pub cert_key: Vec<String>,
    /// Host names one of which its certificate must name, checked against
    /// the CAs of `ca-file` (Knot's `cert-hostname`); given, TLS is used.
    #[serde(default, rename = "cert-hostname")]
    pub cert_hostname: Vec<String>,
    /// Local addresses to send from (Knot's `via`, without its optional
    /// port); the first of the remote address's family is used.
    #[serde(default)]
    pub via: Vec<String>,
}

/// How the transfers from a remote are protected by TLS.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RemoteTls {
    /// Pins one of which the remote's certificate must have.
    pub pins: Vec<String>,
    /// Host names one of which its certificate (issued by a CA of
    /// `ca_files`) must name. Neither pins nor names: opportunistic
    /// (encrypted, the remote not authenticated).
    pub hostnames: Vec<String>,
    /// The CA certificates (PEM files, Knot's `ca-file`) names are checked with.
    pub ca_files: Vec<std::path::PathBuf>,
}

/// Another server, as the zones that name it see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    /// Its id in the configuration.
    pub id: String,
    /// Its addresses.
    pub addresses: Vec<SocketAddr>,
    /// The TSIG key (its name) for messages to it.
    pub key: Option<Name>,
    /// Transfers from it over TLS, and how its certificate is checked.
    pub tls: Option<RemoteTls>,
    /// Local addresses transfers, SOA queries, NOTIFY and forwarded
    /// UPDATEs to it leave from (Knot's `via`; port 0: one per request).
    pub via: Vec<SocketAddr>,
}

impl Remote {
    /// The local address to send to `to` from: the first `via` of its
    /// family (None: the system's choice).
    pub fn via_for(&self, to: SocketAddr) -> Option<SocketAddr> {
        self.via
            .iter()
            .copied()
            .find(|v| v.is_ipv4() == to.is_ipv4())
    }
}

/// Bounds on the SOA refresh, retry and expire a secondary follows, in
/// seconds (Knot's `refresh-min-interval` … `expire-max-interval`): a
/// primary's SOA can neither make its secondaries poll every second nor
/// never.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerBounds {
    /// Least and most refresh.
    pub refresh: (u32, u32),
    /// Least and most retry.
    pub retry: (u32, u32),
    /// Least and most expire.
    pub expire: (u32, u32),
}

impl Default for TimerBounds {
    fn default() -> Self {
        TimerBounds {
            refresh: (2, 7 * 86400),
            retry: (2, 7 * 86400),
            expire: (3, 28 * 86400),
        }
    }
}

impl TimerBounds {
    /// The bounds from the six optional settings (defaults where absent).
    pub(super) fn from_settings(
        owner: &str,
        v: [Option<u32>; 6],
    ) -> Result<TimerBounds, ConfigError> {
        let d = TimerBounds::default();
        let pair = |lo: Option<u32>, hi: Option<u32>, def: (u32, u32), what: &str| {
            let p = (lo.unwrap_or(def.0), hi.unwrap_or(def.1));
            if p.0 == 0 || p.0 > p.1 {
                return Err(ConfigError::Value(format!(
                    "{owner}: {what}-min-interval = {} and {what}-max-interval = {}: need 1 ≤ min ≤ max",
                    p.0, p.1
                )));
            }
            Ok(p)
        };
        Ok(TimerBounds {
            refresh: pair(v[0], v[1], d.refresh, "refresh")?,
            retry: pair(v[2], v[3], d.retry, "retry")?,
            expire: pair(v[4], v[5], d.expire, "expire")?,
        })
    }

    /// A SOA's (refresh, retry, expire) within the bounds.
    pub fn apply(&self, refresh: u32, retry: u32, expire: u32) -> (u32, u32, u32) {
        (
            refresh.clamp(self.refresh.0, self.refresh.1),
            retry.clamp(self.retry.0, self.retry.1),
            expire.clamp(self.expire.0, self.expire.1),
        )
    }
}

/// The generated catalogs and their members (each member's group), checked:
/// a member names a zone configured with `catalog-role = "generate"`.
pub(super) fn resolve_catalogs(
    file: &ConfigFile,
) -> Result<Vec<(String, CatalogMembers)>, ConfigError> {
    let mut catalogs: Vec<(String, CatalogMembers)> = file
        .zones
        .iter()
        .filter(|z| z.catalog_role.as_deref() == Some("generate"))
        .map(|z| (z.name.clone(), Vec::new()))
        .collect();
    for z in &file.zones {
        let Some(cat) = &z.catalog_zone else {
            if z.catalog_group.is_some() {
                return Err(ConfigError::Value(format!(
                    "zone {}: catalog-group without catalog-zone",
                    z.name
                )));
            }
            continue;
        };
        let cat_name = parse_origin(cat)?;
        let Some((_, members)) = catalogs
            .iter_mut()
            .find(|(n, _)| parse_origin(n).ok().as_ref() == Some(&cat_name))
        else {
            return Err(ConfigError::Value(format!(
                "zone {}: catalog-zone {cat:?} is not a zone with catalog-role = \"generate\"",
                z.name
            )));
        };
        if let Some(g) = &z.catalog_group {
            if g.is_empty() || g.len() > 255 {
                return Err(ConfigError::Value(format!(
                    "zone {}: catalog-group must be 1 to 255 characters",
                    z.name
                )));
            }
        }
        members.push((parse_origin(&z.name)?, z.catalog_group.clone()));
    }
    Ok(catalogs)
}

/// The items of `list` named by `ids`, in order; an unknown id is an error
/// naming `owner` and `what` it should have been.
fn pick<T: Clone>(
    ids: &[String],
    list: &[T],
    id_of: impl Fn(&T) -> &str,
    owner: &str,
    what: &str,
) -> Result<Vec<T>, ConfigError> {
    ids.iter()
        .map(|id| {
            list.iter()
                .find(|t| id_of(t) == id)
                .cloned()
                .ok_or_else(|| ConfigError::Value(format!("{owner}: {what} {id:?} is not defined")))
        })
        .collect()
}

/// The `[[template]]` tables as the options their member zones get.
pub(super) fn resolve_templates(
    file: &ConfigFile,
    acls: &[crate::acl::Rule],
    remotes: &[Remote],
    policies: &[super::Signing],
) -> Result<Vec<(String, ZoneOptions)>, ConfigError> {
    let mut out: Vec<(String, ZoneOptions)> = Vec::new();
    for t in &file.templates {
        let owner = format!("template {:?}", t.id);
        if out.iter().any(|(id, _)| *id == t.id) {
            return Err(ConfigError::Value(format!("{owner}: defined twice")));
        }
        let masters = pick(&t.master, remotes, |r| &r.id, &owner, "master")?;
        if masters.is_empty() {
            return Err(ConfigError::Value(format!(
                "{owner}: master = [\"…\"] is required (catalog members are secondaries)"
            )));
        }
        let (signing, validation) = super::dnssec::zone_signing(
            &owner,
            [t.dnssec_signing, t.dnssec_validation],
            t.dnssec_policy.as_deref(),
            policies,
            file.journal_dir.is_some(),
        )?;
        out.push((
            t.id.clone(),
            ZoneOptions {
                acl: pick(&t.acl, acls, |r| &r.id, &owner, "acl")?.into(),
                serial_policy: "increment".into(),
                zonefile_sync: ZonefileSync::Never,
                notify: pick(&t.notify, remotes, |r| &r.id, &owner, "notify")?,
                notify_delay: Duration::ZERO,
                masters,
                catalog: false,
                interpret: Vec::new(),
                signing,
                validation,
                zonemd_generate: super::zone_options::zonemd_generate(
                    &owner,
                    t.zonemd_generate.as_deref(),
                    file.journal_dir.is_some(),
                )?,
                zonemd_verify: t.zonemd_verify.unwrap_or(false),
                timers: TimerBounds::from_settings(
                    &owner,
                    [
                        t.refresh_min_interval,
                        t.refresh_max_interval,
                        t.retry_min_interval,
                        t.retry_max_interval,
                        t.expire_min_interval,
                        t.expire_max_interval,
                    ],
                )?,
            },
        ));
    }
    Ok(out)
}

/// The `[[remote]]` tables (addresses parsed, key names checked against `[[key]]`).
pub(super) fn resolve_remotes(
    file: &ConfigFile,
    base: &std::path::Path,
) -> Result<Vec<Remote>, ConfigError> {
    let mut remotes: Vec<Remote> = Vec::new();
    for r in &file.remotes {
        let bad = |why: String| ConfigError::Value(format!("remote {:?}: {why}", r.id));
        if remotes.iter().any(|o| o.id == r.id) {
            return Err(bad("defined twice".into()));
        }
        if r.address.is_empty() {
            return Err(bad("no address".into()));
        }
        let addresses = r
            .address
            .iter()
            .map(|a| parse_remote_address(a).map_err(|e| bad(e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        let key = match &r.key {
            Some(k) => {
                let name = parse_origin(k).map_err(|e| bad(e.to_string()))?;
                if !file
                    .keys
                    .iter()
                    .any(|d| parse_origin(&d.id).ok().as_ref() == Some(&name))
                {
                    return Err(bad(format!("key {k:?} is not defined in a [[key]] table")));
                }
                Some(name.to_lowercase())
            }
            None => None,
        };
        for pin in &r.cert_key {
            if !lode_io::tls::is_pin(pin) {
                return Err(bad(format!(
                    "cert-key {pin:?} is not a pin (Base64 of a SHA-256: 44 characters)"
                )));
            }
        }
        if !r.cert_hostname.is_empty() && file.ca_file.is_empty() {
            return Err(bad(
                "cert-hostname needs ca-file (the CA certificates the names are checked with)"
                    .into(),
            ));
        }
        if !r.cert_key.is_empty() && !r.cert_hostname.is_empty() {
            return Err(bad("give cert-key or cert-hostname, not both".into()));
        }
        let tls =
            (r.tls || !r.cert_key.is_empty() || !r.cert_hostname.is_empty()).then(|| RemoteTls {
                pins: r.cert_key.clone(),
                hostnames: r.cert_hostname.clone(),
                ca_files: file.ca_file.iter().map(|f| base.join(f)).collect(),
            });
        // The CA files and names are read now: a bad one refuses the
        // configuration (never a transfer in clear instead).
        if let Some(t) = tls.as_ref().filter(|t| !t.hostnames.is_empty()) {
            let auth = lode_io::tls::ServerAuth::Names {
                ca_files: t.ca_files.clone(),
                names: t.hostnames.clone(),
            };
            lode_io::tls::TlsClient::new(auth, &[], None).map_err(bad)?;
        }
        let via = r
            .via
            .iter()
            .map(|v| {
                // An address only: a fixed port would make concurrent
                // requests to the remote fail to bind.
                v.parse::<IpAddr>()
                    .map(|ip| SocketAddr::new(ip, 0))
                    .map_err(|_| bad(format!("via {v:?}: an address (no port: one per request)")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(a) = addresses
            .iter()
            .find(|a| !via.is_empty() && !via.iter().any(|v| v.is_ipv4() == a.is_ipv4()))
        {
            return Err(bad(format!("via has no address of {a}'s family")));
        }
        remotes.push(Remote {
            via,
            id: r.id.clone(),
            addresses,
            key,
            tls,
        });
    }
    Ok(remotes)
}

/// Parses a remote's address: "ADDR@PORT" (Knot's form) or what
/// [`parse_listen`] takes.
pub fn parse_remote_address(s: &str) -> Result<SocketAddr, ConfigError> {
    match s.split_once('@') {
        Some((addr, port)) => {
            let ip: IpAddr = addr
                .parse()
                .map_err(|_| ConfigError::Value(format!("{s:?}: {addr:?} is not an address")))?;
            let port: u16 = port
                .parse()
                .map_err(|_| ConfigError::Value(format!("{s:?}: {port:?} is not a port")))?;
            Ok(SocketAddr::new(ip, port))
        }
        None => parse_listen(s),
    }
}
