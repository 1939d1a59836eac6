//! Zones, with their template's values (the `default` template's when they
//! name none) written into each `[[zone]]`, and the templates of catalog
//! members as `[[template]]`.
//!
//! ```text
//!  zone:  - domain: a.        ──┐ zone's own value, else its template's
//!  template: - id: default  ────┴──▶ [[zone]] name = "a." file = "/var/lib/knot/a.zone" …
//!  zone: catalog-template: m ──────▶ [[template]] id = "m" (members' primaries, ACL, signing)
//! ```

use super::convert::{absolute, owner, Conv, Import, Kind, KNOT_STORAGE};
use super::emit::{Table, Value};
use super::knotconf::{Block, Pos};

/// A zone's items: its own, else its template's.
struct View<'a> {
    zone: &'a Block,
    template: Option<&'a Block>,
    /// `zone[example.com.]` in the report.
    owner: String,
}

impl<'a> View<'a> {
    /// The block that holds `key`: the zone's, else the template's.
    fn source(&self, key: &str) -> Option<&'a Block> {
        if self.zone.has(key) {
            Some(self.zone)
        } else {
            self.template.filter(|t| t.has(key))
        }
    }

    fn values(&self, key: &str) -> Option<(Pos, Vec<String>)> {
        self.source(key)?.values(key)
    }

    fn one(&self, key: &str) -> Option<(Pos, String)> {
        self.source(key)?.one(key)
    }

    fn peek(&self, key: &str) -> Option<&'a str> {
        self.source(key)?.peek(key)
    }

    /// Reports `key` (wherever it is written) with `kind`.
    fn tell(&self, im: &mut Import, key: &str, kind: Kind, why: &str) {
        if let Some(b) = self.source(key) {
            let o = if std::ptr::eq(b, self.zone) {
                self.owner.clone()
            } else {
                owner("template", b)
            };
            im.tell_key(b, &o, key, kind, why);
        }
    }
}

/// Zone items with a Lode key of the same name and meaning.
const ZONE_KEYS: [(&str, Conv); 15] = [
    ("serial-policy", Conv::Str),
    ("zonefile-sync", Conv::Time),
    ("notify-delay", Conv::Time),
    ("refresh-min-interval", Conv::Time),
    ("refresh-max-interval", Conv::Time),
    ("retry-min-interval", Conv::Time),
    ("retry-max-interval", Conv::Time),
    ("expire-min-interval", Conv::Time),
    ("expire-max-interval", Conv::Time),
    ("dnssec-signing", Conv::Bool),
    ("dnssec-validation", Conv::Bool),
    ("zonemd-generate", Conv::Str),
    ("zonemd-verify", Conv::Bool),
    ("catalog-zone", Conv::Str),
    ("catalog-group", Conv::Str),
];

/// Zone items whose Knot value is Lode's behaviour: (key, value, why).
const ZONE_SAME: [(&str, &str, &str); 4] = [
    ("provide-ixfr", "on", "IXFR is answered from the journal"),
    (
        "semantic-checks",
        "off",
        "a zone is refused for what Knot's mandatory checks refuse",
    ),
    ("ixfr-by-one", "off", "changesets are sent as kept"),
    ("catalog-role", "none", "not a catalog"),
];

/// Converts every zone, then the catalog templates, then reports the
/// template items no zone used.
pub fn convert(im: &mut Import) {
    let conf = im.conf;
    let mut journal = JournalBounds::default();
    let mut catalog_templates: Vec<(String, Vec<String>, Pos)> = Vec::new();
    for block in conf.blocks("zone") {
        let Some(view) = view(im, block) else {
            continue;
        };
        let (t, cat) = zone(im, &view, &mut journal);
        if let Some((ids, at)) = cat {
            let masters = match t.get("master") {
                Some(Value::List(m)) => m.clone(),
                _ => Vec::new(),
            };
            for id in ids {
                if !catalog_templates.iter().any(|(i, _, _)| *i == id) {
                    catalog_templates.push((id, masters.clone(), at.clone()));
                }
            }
        }
        im.doc.tables.push(t);
    }
    journal.apply(im);
    for (id, masters, at) in catalog_templates {
        catalog_template(im, &id, &masters, &at);
    }
    unused_templates(im);
}

/// The zone's view (its template found), or None when it has no domain.
fn view<'a>(im: &mut Import<'a>, block: &'a Block) -> Option<View<'a>> {
    let conf = im.conf;
    let name = block.one("domain")?.1;
    let owner = format!("zone[{name}]");
    let template = match block.one("template") {
        Some((at, id)) => {
            let t = conf.block("template", &id);
            if t.is_none() {
                im.tell(
                    Kind::NotImported,
                    &at,
                    &format!("{owner}.template"),
                    format!("{id}: no such template"),
                );
            }
            t
        }
        None => conf.block("template", "default"),
    };
    Some(View {
        zone: block,
        template,
        owner,
    })
}

/// One zone as `[[zone]]`, and the catalog templates it names (ids, where).
fn zone(
    im: &mut Import,
    v: &View,
    journal: &mut JournalBounds,
) -> (Table, Option<(Vec<String>, Pos)>) {
    let mut t = Table::new("[[zone]]");
    let name = zone_name(v.zone.id());
    t.str("name", name.clone());
    let role = v.one("catalog-role").map(|(_, r)| r);
    if let Some(file) = zone_file(im, v, &name, role.as_deref()) {
        t.str("file", file);
    }
    for (knot, lode) in [
        ("master", "master"),
        ("notify", "notify"),
        ("ds-push", "ds-push"),
    ] {
        if let Some((_, ids)) = v.values(knot) {
            t.list(lode, im.expand_remotes(&ids));
        }
    }
    acl(im, v, &mut t);
    for (key, conv) in ZONE_KEYS {
        if let Some(b) = v.source(key) {
            let o = if std::ptr::eq(b, v.zone) {
                v.owner.clone()
            } else {
                owner("template", b)
            };
            im.copy(b, &o, &mut t, (key, key, conv));
        }
    }
    if let Some((_, p)) = v.one("dnssec-policy") {
        let id = im.policies.get(&p).cloned().unwrap_or(p);
        t.str("dnssec-policy", id);
    }
    same_and_notes(im, v, &t);
    journal.note(v);
    let catalogs = catalog(im, v, &mut t, role.as_deref());
    (t, catalogs)
}

/// A zone name as Lode writes it: lower case, with the final dot (Knot
/// lower-cases zone names too).
fn zone_name(domain: &str) -> String {
    let lower = domain.to_ascii_lowercase();
    if lower.ends_with('.') {
        lower
    } else {
        format!("{lower}.")
    }
}

/// The zone file, absolute: Knot's `file` (default `%s.zone`) with its
/// formatters expanded, relative to the zone's `storage`. A generated
/// catalog has none in Lode.
fn zone_file(im: &mut Import, v: &View, name: &str, role: Option<&str>) -> Option<String> {
    if role == Some("generate") {
        if v.zone.has("file") {
            v.tell(
                im,
                "file",
                Kind::NotImported,
                "Lode keeps a generated catalog in journal-dir, without a zone file",
            );
        }
        return None;
    }
    let storage = v
        .one("storage")
        .map_or_else(|| KNOT_STORAGE.to_owned(), |(_, s)| s);
    let storage = absolute(&im.start_dir, &storage);
    let (at, pattern) = v
        .one("file")
        .unwrap_or_else(|| (v.zone.at.clone(), "%s.zone".to_owned()));
    match expand_file(&pattern, name) {
        Ok(f) => Some(absolute(&storage, &f).display().to_string()),
        Err(e) => {
            im.tell(Kind::NotImported, &at, &format!("{}.file", v.owner), e);
            None
        }
    }
}

/// Knot's file formatters for zone `name` (absolute, lower case): `%s`
/// the name without its final dot, `%c[N]`/`%c[N-M]` characters of the
/// name with it, `%l[N]` the Nth label from the right, `%%` a `%`.
pub fn expand_file(pattern: &str, name: &str) -> Result<String, String> {
    let bare = name.strip_suffix('.').unwrap_or(name).replace('/', "_");
    let mut out = String::new();
    let mut rest = pattern;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let spec = &rest[i + 1..];
        let (text, used) = match spec.chars().next() {
            Some('%') => ("%".to_owned(), 1),
            Some('s') => (bare.clone(), 1),
            Some('c') => {
                let (a, b, used) = indexes(spec, pattern)?;
                let chars: Vec<char> = name.chars().collect();
                let end = (b + 1).min(chars.len());
                let text: String = chars
                    .get(a..end)
                    .map(|c| c.iter().collect())
                    .unwrap_or_default();
                (text.replace('/', "_"), used)
            }
            Some('l') => {
                let (a, _, used) = indexes(spec, pattern)?;
                let labels: Vec<&str> = bare.split('.').filter(|l| !l.is_empty()).collect();
                let label = labels.len().checked_sub(a + 1).map_or("", |i| labels[i]);
                (label.to_owned(), used)
            }
            _ => return Err(format!("{pattern}: unknown formatter after `%`")),
        };
        out.push_str(&text);
        rest = &spec[used..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `c[N]` or `c[N-M]` (after the `%`): (N, M or N, characters used).
fn indexes(spec: &str, pattern: &str) -> Result<(usize, usize, usize), String> {
    let bad = || format!("{pattern}: `%{}` needs [N] or [N-M]", &spec[..1]);
    let inner = spec[1..].strip_prefix('[').ok_or_else(bad)?;
    let close = inner.find(']').ok_or_else(bad)?;
    let body = &inner[..close];
    let (a, b) = match body.split_once('-') {
        Some((a, b)) => (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?),
        None => {
            let n: usize = body.parse().map_err(|_| bad())?;
            (n, n)
        }
    };
    if b < a {
        return Err(bad());
    }
    Ok((a, b, close + 3))
}

/// The zone's ACLs as the Lode rules they became; with Knot's
/// `automatic-acl` on, a transfer rule for each NOTIFY target first.
fn acl(im: &mut Import, v: &View, t: &mut Table) {
    let mut ids = automatic_rules(im, t);
    if let Some((at, list)) = v.values("acl") {
        for id in list {
            match im.acls.get(&id) {
                Some(rules) => ids.extend(rules.iter().cloned()),
                None => im.tell(
                    Kind::NotImported,
                    &at,
                    &format!("{}.acl", v.owner),
                    format!("{id}: no such acl"),
                ),
            }
        }
    }
    if !ids.is_empty() {
        t.list("acl", ids);
    }
}

/// Knot's automatic ACL (server and remote `automatic-acl` on): transfers
/// allowed to the zone's NOTIFY targets (NOTIFY from its primaries Lode
/// allows anyway). The rules are made once per remote.
fn automatic_rules(im: &mut Import, t: &Table) -> Vec<String> {
    let conf = im.conf;
    let on = |s: Option<&str>| s.is_some_and(|v| v == "on" || v == "true");
    if !on(conf
        .blocks("server")
        .filter_map(|b| b.peek("automatic-acl"))
        .last())
    {
        return Vec::new();
    }
    let Some(Value::List(targets)) = t.get("notify") else {
        return Vec::new();
    };
    let mut ids = Vec::new();
    for r in targets {
        let Some(remote) = conf.block("remote", r) else {
            continue;
        };
        if remote.peek("automatic-acl").is_some_and(|v| !on(Some(v))) {
            continue;
        }
        let id = format!("automatic-transfer-{r}");
        if !im
            .doc
            .tables_of("[[acl]]")
            .any(|a| a.get("id") == Some(&Value::Str(id.clone())))
        {
            let mut a = Table::new("[[acl]]");
            a.comments.push(format!(
                "server.automatic-acl: transfers to the NOTIFY target {r}"
            ));
            a.str("id", id.clone());
            let addrs = remote
                .items
                .iter()
                .filter(|i| i.key == "address")
                .flat_map(|i| i.values.iter());
            a.list(
                "address",
                addrs
                    .filter_map(|x| x.split('@').next())
                    .map(str::to_owned)
                    .collect(),
            );
            if let Some(k) = remote.peek("key") {
                a.list("key", vec![k.to_owned()]);
            }
            a.list("action", vec!["transfer".into()]);
            im.doc.tables.push(a);
        }
        ids.push(id);
    }
    ids
}

/// Items Lode does as Knot does with the value given, and items it does
/// its own way (notes); signed zones get a note on their keys.
fn same_and_notes(im: &mut Import, v: &View, t: &Table) {
    for (key, value, why) in ZONE_SAME {
        if v.peek(key).is_some_and(|x| {
            x == value || (value == "off" && x == "false") || (value == "on" && x == "true")
        }) {
            v.tell(im, key, Kind::Same, why);
        }
    }
    let secondary = t.get("master").is_some();
    match v.peek("zonefile-load") {
        Some("none") if secondary => v.tell(im, "zonefile-load", Kind::Same, "a secondary's file is written, never read"),
        Some("none") => v.tell(im, "zonefile-load", Kind::NotImported, "Lode always reads a primary's zone file"),
        Some(_) => v.tell(im, "zonefile-load", Kind::Note, "Lode reads the file whole at start; an edit read at `lode reload` is applied as its difference from the served zone (as difference)"),
        None => {}
    }
    if v.peek("journal-content").is_some() {
        v.tell(im, "journal-content", Kind::Note, "Lode keeps a journal and the state of every zone that changes (updates, transfers, signing, NOTIFY out), as `all`");
    }
    match v.peek("semantic-checks") {
        Some("on" | "true") => v.tell(
            im,
            "semantic-checks",
            Kind::Note,
            "Lode makes the extra checks in `lode check --config`, not when it loads",
        ),
        Some("soft") => v.tell(
            im,
            "semantic-checks",
            Kind::NotImported,
            "Lode refuses a zone with errors",
        ),
        _ => {}
    }
    if v.values("module").is_some() {
        v.tell(
            im,
            "module",
            Kind::NotImported,
            "Lode's modules ([rrl], [cookies], [dnstap]) apply to every zone, never to one",
        );
    }
    if t.get("dnssec-signing") == Some(&Value::Bool(true)) {
        if let Some(b) = v.source("dnssec-signing") {
            let at = b
                .items
                .iter()
                .find(|i| i.key == "dnssec-signing")
                .map_or_else(|| b.at.clone(), |i| i.at.clone());
            im.tell(Kind::Note, &at, &format!("{}.dnssec-signing", v.owner), "Lode does not read Knot's KASP database: import the zone's keys before the first start (keymgr ZONE list; `lode dnssec import-pem ZONE FILE` with the PEM files of kasp-db/keys), or Lode makes new ones and the parent's DS must change");
        }
    }
}

/// `catalog-role` and `catalog-template`; returns the templates named.
fn catalog(
    im: &mut Import,
    v: &View,
    t: &mut Table,
    role: Option<&str>,
) -> Option<(Vec<String>, Pos)> {
    match role {
        Some("generate") | Some("interpret") => t.str("catalog-role", role.unwrap_or_default()),
        Some("member") => v.tell(
            im,
            "catalog-role",
            Kind::Same,
            "a member is a zone with catalog-zone",
        ),
        _ => {}
    }
    let (at, ids) = v.values("catalog-template")?;
    t.list("catalog-template", ids.clone());
    Some((ids, at))
}

/// Per-zone journal bounds: Lode has one `journal-max-usage` and one
/// `journal-max-depth` for all zones.
#[derive(Default)]
struct JournalBounds {
    zones: usize,
    usage: Vec<(Pos, String)>,
    depth: Vec<(Pos, String)>,
}

impl JournalBounds {
    /// Takes note of one zone's bounds.
    fn note(&mut self, v: &View) {
        self.zones += 1;
        if let Some(u) = v.one("journal-max-usage") {
            self.usage.push(u);
        }
        if let Some(d) = v.one("journal-max-depth") {
            self.depth.push(d);
        }
    }

    /// One value for every zone (or Knot's default for the others) becomes
    /// the global key; differing ones are reported.
    fn apply(&self, im: &mut Import) {
        let mut top = std::mem::take(&mut im.doc.top);
        let specs = [
            (&self.usage, "journal-max-usage", Conv::Size, 100 << 20),
            (&self.depth, "journal-max-depth", Conv::Int, 20),
        ];
        for (seen, key, conv, default) in specs {
            let values: Vec<Option<Value>> = seen
                .iter()
                .map(|(_, s)| conv.apply(std::slice::from_ref(s)).ok())
                .collect();
            let first = values.first().cloned().flatten();
            let alike = values.iter().all(|x| *x == first);
            let everywhere = seen.len() == self.zones || first == Some(Value::Int(default));
            match first {
                Some(v) if alike && everywhere => top.set(key, v),
                _ => {
                    for (at, s) in seen {
                        im.tell(
                            Kind::NotImported,
                            at,
                            &format!("zone.{key}"),
                            format!("{s}: Lode has one {key} for all zones"),
                        );
                    }
                }
            }
        }
        im.doc.top = top;
    }
}

/// A template named by `catalog-template` as `[[template]]`: what catalog
/// members get (they are secondaries, kept in journal-dir without files).
fn catalog_template(im: &mut Import, id: &str, catalog_masters: &[String], at: &Pos) {
    let conf = im.conf;
    let Some(block) = conf.block("template", id) else {
        im.tell(
            Kind::NotImported,
            at,
            "zone.catalog-template",
            format!("{id}: no such template"),
        );
        return;
    };
    let o = owner("template", block);
    let mut t = Table::new("[[template]]");
    t.str("id", id);
    for (knot, lode) in [("master", "master"), ("notify", "notify")] {
        if let Some((_, ids)) = block.values(knot) {
            t.list(lode, im.expand_remotes(&ids));
        }
    }
    if t.get("master").is_none() {
        im.tell(Kind::NotImported, &block.at, &o, "no master: Lode's catalog members are secondaries; the catalog's primaries are written instead");
        t.list("master", catalog_masters.to_vec());
    }
    if let Some((_, list)) = block.values("acl") {
        let ids = list
            .iter()
            .flat_map(|a| im.acls.get(a).cloned().unwrap_or_default())
            .collect();
        t.list("acl", ids);
    }
    for (key, conv) in ZONE_KEYS.iter().filter(|(k, _)| {
        k.contains("interval") || k.starts_with("dnssec-") || k.starts_with("zonemd-")
    }) {
        im.copy(block, &o, &mut t, (key, key, *conv));
    }
    if let Some((_, p)) = block.one("dnssec-policy") {
        t.str("dnssec-policy", im.policies.get(&p).cloned().unwrap_or(p));
    }
    member_files(im, block, &o);
    im.doc.tables.push(t);
}

/// Catalog members' files: Lode never writes them (Knot does unless
/// `zonefile-sync: -1`).
fn member_files(im: &mut Import, block: &Block, o: &str) {
    let never = block.peek("zonefile-sync") == Some("-1");
    let why = "Lode keeps catalog members in journal-dir and never writes their zone files";
    let kind = if never { Kind::Same } else { Kind::NotImported };
    for key in ["storage", "file", "zonefile-sync"] {
        im.tell_key(block, o, key, kind, why);
    }
    if !never && !block.has("zonefile-sync") {
        im.tell(
            Kind::NotImported,
            &block.at,
            &format!("{o}.zonefile-sync"),
            format!("0 (Knot's default): {why}"),
        );
    }
    im.tell_key(
        block,
        o,
        "zonefile-load",
        Kind::Same,
        "members are never read from files",
    );
    im.tell_key(
        block,
        o,
        "journal-content",
        Kind::Note,
        "Lode keeps members' journals and state, as `all`",
    );
}

/// Template items no zone took: overridden everywhere, or a template no
/// zone uses (no effect in Knot either).
fn unused_templates(im: &mut Import) {
    let conf = im.conf;
    for block in conf.blocks("template") {
        let o = owner("template", block);
        for item in block
            .items
            .iter()
            .filter(|i| !i.is_used() && i.key != "comment")
        {
            if item.key == "id" {
                item.mark();
                continue;
            }
            let name = format!("{o}.{}", item.key);
            item.mark();
            im.tell(Kind::Same, &item.at, &name, format!("{}: applies to no zone (every zone using the template sets its own, or none uses it)", item.text()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_formatters() {
        assert_eq!(
            expand_file("%s.zone", "example.com."),
            Ok("example.com.zone".into())
        );
        assert_eq!(
            expand_file("%l[0]/%l[1]/%s", "example.com."),
            Ok("com/example/example.com".into())
        );
        assert_eq!(
            expand_file("%c[0]/%c[0-2]/%s", "example.com."),
            Ok("e/exa/example.com".into())
        );
        assert_eq!(expand_file("%c[10-20]", "ab."), Ok(String::new()));
        assert_eq!(expand_file("100%%", "ab."), Ok("100%".into()));
        assert_eq!(expand_file("%s.zone", "."), Ok(".zone".into()));
        assert!(expand_file("%x", "ab.").is_err());
        assert!(expand_file("%c[2-1]", "ab.").is_err());
    }

    #[test]
    fn names() {
        assert_eq!(zone_name("Example.COM"), "example.com.");
        assert_eq!(zone_name("."), ".");
    }
}
