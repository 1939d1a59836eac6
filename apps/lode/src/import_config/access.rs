//! Keys, remotes (and `remotes` groups, expanded where they are named),
//! ACLs, KSK submissions, keystores and signing policies.

use std::net::IpAddr;

use super::convert::{owner, Conv, Import, Kind};
use super::emit::Table;
use super::knotconf::Block;
use super::server::listen_address;

/// Converts the sections zones refer to, in an order that lets each
/// resolve what it names.
pub fn convert(im: &mut Import) {
    groups(im);
    keys(im);
    remotes(im);
    acls(im);
    submissions(im);
    let pem = keystores(im);
    policies(im, &pem);
}

/// `remotes`: groups of remotes, expanded wherever they are named (Lode has no groups).
fn groups(im: &mut Import) {
    let conf = im.conf;
    for block in conf.blocks("remotes") {
        block.one("id");
        let members = block.values("remote").map(|(_, v)| v).unwrap_or_default();
        im.groups.insert(block.id().to_owned(), members);
        im.tell(
            Kind::Note,
            &block.at,
            &owner("remotes", block),
            "Lode has no remote groups: its remotes are listed wherever it is named",
        );
    }
}

/// `key` as `[[key]]`.
fn keys(im: &mut Import) {
    let conf = im.conf;
    for block in conf.blocks("key") {
        let mut t = Table::new("[[key]]");
        let o = owner("key", block);
        for spec in [
            ("id", "id", Conv::Str),
            ("algorithm", "algorithm", Conv::Str),
            ("secret", "secret", Conv::Str),
        ] {
            im.copy(block, &o, &mut t, spec);
        }
        im.doc.tables.push(t);
    }
}

/// `remote` as `[[remote]]`.
fn remotes(im: &mut Import) {
    let conf = im.conf;
    let automatic = conf
        .blocks("server")
        .filter_map(|b| b.peek("automatic-acl"))
        .last()
        .is_some_and(|v| v == "on" || v == "true");
    if automatic {
        // Taken into the zones' ACLs (zones.rs).
        for b in conf.blocks("server") {
            b.values("automatic-acl");
        }
    }
    for block in conf.blocks("remote") {
        let o = owner("remote", block);
        let mut t = Table::new("[[remote]]");
        for spec in [
            ("id", "id", Conv::Str),
            ("key", "key", Conv::Str),
            ("tls", "tls", Conv::Bool),
            ("cert-key", "cert-key", Conv::List),
        ] {
            im.copy(block, &o, &mut t, spec);
        }
        if let Some((at, addresses)) = block.values("address") {
            let bad: Vec<&String> = addresses
                .iter()
                .filter(|a| listen_address(a, 53).is_none())
                .collect();
            if !bad.is_empty() {
                im.tell(
                    Kind::NotImported,
                    &at,
                    &format!("{o}.address"),
                    format!("{bad:?}: not ADDR[@PORT]"),
                );
            }
            t.list("address", addresses);
        }
        via(im, block, &o, &mut t);
        if !automatic {
            im.tell_key(
                block,
                &o,
                "automatic-acl",
                Kind::Same,
                "no effect while server.automatic-acl is off",
            );
        } else {
            block.values("automatic-acl");
        }
        im.doc.tables.push(t);
    }
}

/// `via`: source addresses without their port (Lode picks one per request).
fn via(im: &mut Import, block: &Block, o: &str, t: &mut Table) {
    let Some((at, values)) = block.values("via") else {
        return;
    };
    let mut out = Vec::new();
    for v in values {
        let (addr, port) = v
            .split_once('@')
            .map_or((v.as_str(), None), |(a, p)| (a, Some(p)));
        if addr.parse::<IpAddr>().is_err() {
            im.tell(
                Kind::NotImported,
                &at,
                &format!("{o}.via"),
                format!("{v}: not an address"),
            );
            continue;
        }
        if let Some(p) = port {
            im.tell(
                Kind::NotImported,
                &at,
                &format!("{o}.via"),
                format!("{v}: port {p} left out: Lode takes a new source port per request"),
            );
        }
        out.push(addr.to_owned());
    }
    t.list("via", out);
}

/// `acl` as `[[acl]]` tables: one per Knot rule, or one per key of the
/// remotes a rule names (`remote:` matches a remote's address with its key).
fn acls(im: &mut Import) {
    let conf = im.conf;
    for block in conf.blocks("acl") {
        let o = owner("acl", block);
        block.one("id");
        let Some(actions) = acl_actions(im, block, &o) else {
            im.acls.insert(block.id().to_owned(), Vec::new());
            continue;
        };
        let mut base = Table::new("[[acl]]");
        base.str("id", block.id());
        if let Some((at, list)) = block.values("address") {
            base.list("address", prefixes(im, &at, &o, &list));
        }
        im.copy(block, &o, &mut base, ("key", "key", Conv::List));
        im.copy(block, &o, &mut base, ("protocol", "protocol", Conv::List));
        im.copy(block, &o, &mut base, ("cert-key", "cert-key", Conv::List));
        base.list("action", actions);
        im.copy(block, &o, &mut base, ("deny", "deny", Conv::Bool));
        let tables = match block.values("remote") {
            Some((_, ids)) => by_remote(im, &base, &ids),
            None => vec![base],
        };
        let ids = tables
            .iter()
            .filter_map(|t| match t.get("id") {
                Some(super::emit::Value::Str(s)) => Some(s.clone()),
                _ => None,
            })
            .collect();
        im.acls.insert(block.id().to_owned(), ids);
        im.doc.tables.extend(tables);
    }
}

/// The Lode actions of a rule (None: nothing of it can be imported).
/// Knot's `query` has no Lode counterpart (every query is answered);
/// `update-type`/`update-owner*` restrictions neither: an allowing rule
/// loses its `update` action (so it allows no more than in Knot), a
/// denying one denies every update.
fn acl_actions(im: &mut Import, block: &Block, o: &str) -> Option<Vec<String>> {
    let deny = block.peek("deny").is_some_and(|d| d == "on" || d == "true");
    let (at, mut actions) = block
        .values("action")
        .unwrap_or_else(|| (block.at.clone(), vec!["query".into()]));
    if deny && !block.has("action") {
        actions = vec!["notify".into(), "transfer".into(), "update".into()];
    }
    if actions.iter().any(|a| a == "query") {
        im.tell(
            Kind::NotImported,
            &at,
            &format!("{o}.action"),
            "query: Lode answers every query, signed or not (no rule for queries)",
        );
        actions.retain(|a| a != "query");
    }
    let restricted: Vec<String> = [
        "update-type",
        "update-owner",
        "update-owner-match",
        "update-owner-name",
    ]
    .into_iter()
    .filter(|k| block.has(k))
    .map(str::to_owned)
    .collect();
    for key in &restricted {
        let why = if deny {
            "Lode cannot restrict updates by type or owner: the rule denies every update"
        } else {
            "Lode cannot restrict updates by type or owner: the rule's update action is left out (such updates are refused unless another rule allows them)"
        };
        im.tell_key(block, o, key, Kind::NotImported, why);
    }
    if !restricted.is_empty() && !deny {
        actions.retain(|a| a != "update");
    }
    if actions.is_empty() {
        im.tell(
            Kind::NotImported,
            &block.at,
            o,
            "no action left that Lode has: the rule is left out (and from the zones that name it)",
        );
        for i in &block.items {
            i.mark();
        }
        return None;
    }
    Some(actions)
}

/// A rule naming remotes, as one table per TSIG key of those remotes
/// (their addresses, without ports): `ID`, or `ID-1`, `ID-2`… for several keys.
fn by_remote(im: &Import, base: &Table, ids: &[String]) -> Vec<Table> {
    let conf = im.conf;
    let mut groups: Vec<(Option<String>, Vec<String>)> = Vec::new();
    for id in im.expand_remotes(ids) {
        let Some(r) = conf.block("remote", &id) else {
            continue;
        };
        let key = r.peek("key").map(str::to_owned);
        let addrs = r
            .items
            .iter()
            .filter(|i| i.key == "address")
            .flat_map(|i| i.values.iter());
        let addrs: Vec<String> = addrs
            .filter_map(|a| a.split('@').next())
            .map(str::to_owned)
            .collect();
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, list)) => list.extend(addrs),
            None => groups.push((key, addrs)),
        }
    }
    let single = groups.len() == 1;
    groups
        .into_iter()
        .enumerate()
        .map(|(n, (key, addrs))| {
            let id = match base.get("id") {
                Some(super::emit::Value::Str(s)) if single => s.clone(),
                Some(super::emit::Value::Str(s)) => format!("{s}-{}", n + 1),
                _ => format!("acl-{}", n + 1),
            };
            let mut t = Table::new("[[acl]]");
            t.str("id", id);
            t.list("address", addrs);
            if let Some(k) = key {
                t.list("key", vec![k]);
            }
            for (k, v) in base
                .entries
                .iter()
                .filter(|(k, _)| !["id", "address", "key"].contains(&k.as_str()))
            {
                t.set(k, v.clone());
            }
            t
        })
        .collect()
}

/// ACL addresses: addresses and prefixes as written, `A-B` ranges as the
/// prefixes that cover them exactly.
fn prefixes(im: &mut Import, at: &super::knotconf::Pos, o: &str, list: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for item in list {
        match item.split_once('-') {
            None => out.push(item.clone()),
            Some((a, b)) => match range_prefixes(a, b) {
                Some(p) => out.extend(p),
                None => im.tell(
                    Kind::NotImported,
                    at,
                    &format!("{o}.address"),
                    format!("{item}: not an address range"),
                ),
            },
        }
    }
    out
}

/// The prefixes covering `from`..=`to` exactly (both of one family).
pub fn range_prefixes(from: &str, to: &str) -> Option<Vec<String>> {
    let (a, b): (IpAddr, IpAddr) = (from.parse().ok()?, to.parse().ok()?);
    let (start, end, bits) = match (a, b) {
        (IpAddr::V4(x), IpAddr::V4(y)) => {
            (u128::from(u32::from(x)), u128::from(u32::from(y)), 32u32)
        }
        (IpAddr::V6(x), IpAddr::V6(y)) => (u128::from(x), u128::from(y), 128u32),
        _ => return None,
    };
    if start > end {
        return None;
    }
    // The host bits of a block of 2^size addresses.
    let ones = |size: u32| u128::MAX.checked_shr(128 - size).unwrap_or(0);
    let mut out = Vec::new();
    let mut cur = start;
    loop {
        // The largest aligned block at `cur` that stays within `end`.
        let mut size = cur.trailing_zeros().min(bits);
        while size > 0 && (cur | ones(size)) > end {
            size -= 1;
        }
        let ip = if bits == 32 {
            IpAddr::from(std::net::Ipv4Addr::from(cur as u32))
        } else {
            IpAddr::from(std::net::Ipv6Addr::from(cur))
        };
        out.push(format!("{ip}/{}", bits - size));
        let last = cur | ones(size);
        if last >= end {
            return Some(out);
        }
        cur = last + 1;
    }
}

/// `submission` as `[[submission]]`.
fn submissions(im: &mut Import) {
    let conf = im.conf;
    for block in conf.blocks("submission") {
        let o = owner("submission", block);
        let mut t = Table::new("[[submission]]");
        im.copy(block, &o, &mut t, ("id", "id", Conv::Str));
        if let Some((_, parents)) = block.values("parent") {
            t.list("parent", im.expand_remotes(&parents));
        }
        for key in ["check-interval", "timeout", "parent-delay"] {
            im.copy(block, &o, &mut t, (key, key, Conv::Time));
        }
        im.doc.tables.push(t);
    }
}

/// `keystore`: PKCS #11 ones as `[[keystore]]`; the ids of PEM ones
/// (Lode's key files need no keystore) are returned.
fn keystores(im: &mut Import) -> Vec<String> {
    let conf = im.conf;
    let mut pem = Vec::new();
    for block in conf.blocks("keystore") {
        let o = owner("keystore", block);
        block.one("id");
        if block.peek("backend") != Some("pkcs11") {
            pem.push(block.id().to_owned());
            im.tell_key(
                block,
                &o,
                "backend",
                Kind::Same,
                "Lode keeps keys in files in kasp-db",
            );
            im.tell_key(
                block,
                &o,
                "config",
                Kind::NotImported,
                "Lode's key files are in kasp-db, one folder per zone",
            );
            continue;
        }
        let mut t = Table::new("[[keystore]]");
        t.str("id", block.id());
        im.copy(block, &o, &mut t, ("backend", "backend", Conv::Str));
        im.copy(block, &o, &mut t, ("config", "config", Conv::Str));
        im.doc.tables.push(t);
    }
    pem
}

/// `policy` items with a Lode key of the same name.
const POLICY_KEYS: [(&str, Conv); 24] = [
    ("manual", Conv::Bool),
    ("single-type-signing", Conv::Bool),
    ("ksk-size", Conv::Size),
    ("zsk-size", Conv::Size),
    ("dnskey-ttl", Conv::Time),
    ("zone-max-ttl", Conv::Time),
    ("ksk-lifetime", Conv::Time),
    ("zsk-lifetime", Conv::Time),
    ("delete-delay", Conv::Time),
    ("propagation-delay", Conv::Time),
    ("rrsig-lifetime", Conv::Time),
    ("rrsig-refresh", Conv::Time),
    ("rrsig-pre-refresh", Conv::Time),
    ("reproducible-signing", Conv::Bool),
    ("nsec3", Conv::Bool),
    ("nsec3-iterations", Conv::Int),
    ("nsec3-opt-out", Conv::Bool),
    ("nsec3-salt-length", Conv::Int),
    ("signing-threads", Conv::Int),
    ("ksk-submission", Conv::Str),
    ("cds-cdnskey-publish", Conv::Str),
    ("cds-digest-type", Conv::Str),
    ("offline-ksk", Conv::Bool),
    ("algorithm", Conv::Str),
];

/// `policy` items whose Knot value is Lode's behaviour: (key, value, why).
const POLICY_SAME: [(&str, &str, &str); 3] = [
    (
        "dnskey-management",
        "full",
        "the DNSKEY, CDS and CDNSKEY sets are the keys'",
    ),
    ("unsafe-operation", "none", "no check is turned off"),
    ("ksk-shared", "off", "each zone has its own KSK"),
];

/// The algorithms Lode signs with (names and numbers).
const ALGORITHMS: [&str; 8] = [
    "ecdsap256sha256",
    "ecdsap384sha384",
    "ed25519",
    "rsasha256",
    "13",
    "14",
    "15",
    "8",
];

/// `policy` as `[[policy]]`; Knot's configured `default` (used only where
/// named) is renamed, as Lode's `default` is what unnamed zones get.
fn policies(im: &mut Import, pem: &[String]) {
    let conf = im.conf;
    for block in conf.blocks("policy") {
        let o = owner("policy", block);
        block.one("id");
        let id = if block.id() == "default" {
            im.tell(Kind::Note, &block.at, &o, "renamed default-configured: in Knot a policy named default applies only where named, in Lode to every signed zone without dnssec-policy");
            "default-configured".to_owned()
        } else {
            block.id().to_owned()
        };
        im.policies.insert(block.id().to_owned(), id.clone());
        let mut t = Table::new("[[policy]]");
        t.str("id", id);
        for (key, conv) in POLICY_KEYS {
            im.copy(block, &o, &mut t, (key, key, conv));
        }
        for (key, value, why) in POLICY_SAME {
            if block.peek(key) == Some(value) {
                im.tell_key(block, &o, key, Kind::Same, why);
            }
        }
        policy_fixups(im, block, &o, &mut t, pem);
        im.doc.tables.push(t);
    }
}

/// What a policy's items need beyond a copy: Knot's NSEC3 salt length
/// default (8; Lode's is 0), salt lifetime, algorithm, keystore, ds-push.
fn policy_fixups(im: &mut Import, block: &Block, o: &str, t: &mut Table, pem: &[String]) {
    use super::emit::Value;
    if t.get("nsec3") == Some(&Value::Bool(true)) && t.get("nsec3-salt-length").is_none() {
        t.int("nsec3-salt-length", 8);
    }
    if let Some((at, v)) = block.one("nsec3-salt-lifetime") {
        match super::knotconf::seconds(&v) {
            Ok(-1) => im.tell(
                Kind::NotImported,
                &at,
                &format!("{o}.nsec3-salt-lifetime"),
                "-1: Lode does not re-salt at each ZSK change (the default 30 days is kept)",
            ),
            Ok(n) => t.int("nsec3-salt-lifetime", n),
            Err(e) => im.tell(
                Kind::NotImported,
                &at,
                &format!("{o}.nsec3-salt-lifetime"),
                e,
            ),
        }
    }
    if let Some(Value::Str(a)) = t.get("algorithm").cloned() {
        if !ALGORITHMS.contains(&a.to_ascii_lowercase().as_str()) {
            t.entries.retain(|(k, _)| k != "algorithm");
            if let Some((at, _)) = block.one("algorithm") {
                im.tell(Kind::NotImported, &at, &format!("{o}.algorithm"), format!("{a}: Lode signs with ecdsap256sha256, ecdsap384sha384, ed25519 or rsasha256 (its default, 13, is used)"));
            }
        }
    }
    if let Some((at, ks)) = block.one("keystore") {
        if pem.contains(&ks) {
            im.tell(
                Kind::Same,
                &at,
                &format!("{o}.keystore"),
                format!("{ks}: a PEM keystore: Lode's key files"),
            );
        } else {
            t.str("keystore", ks);
        }
    }
    if let Some((_, ids)) = block.values("ds-push") {
        t.list("ds-push", im.expand_remotes(&ids));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_become_prefixes() {
        assert_eq!(
            range_prefixes("10.0.0.1", "10.0.0.6"),
            Some(vec![
                "10.0.0.1/32".into(),
                "10.0.0.2/31".into(),
                "10.0.0.4/31".into(),
                "10.0.0.6/32".into()
            ])
        );
        assert_eq!(
            range_prefixes("10.0.0.0", "10.0.0.255"),
            Some(vec!["10.0.0.0/24".into()])
        );
        assert_eq!(
            range_prefixes("0.0.0.0", "255.255.255.255"),
            Some(vec!["0.0.0.0/0".into()])
        );
        assert_eq!(
            range_prefixes("2001:db8::", "2001:db8::1"),
            Some(vec!["2001:db8::/127".into()])
        );
        assert_eq!(range_prefixes("10.0.0.2", "10.0.0.1"), None);
        assert_eq!(range_prefixes("10.0.0.1", "::1"), None);
    }
}
