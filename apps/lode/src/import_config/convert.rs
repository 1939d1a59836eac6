//! What the conversion shares: the knot.conf read, the lode.toml being
//! written, the report of what could not be converted, path resolution and
//! the conversion of values (Knot's TIME, SIZE, BOOL) to TOML's.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::emit::{Doc, Table, Value};
use super::knotconf::{self, Block, Item, KnotConf, Pos};

/// Knot's default `storage` (`--with-storage`, Debian's).
pub const KNOT_STORAGE: &str = "/var/lib/knot";

/// What a report line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Not imported: the result behaves otherwise (exit status 1).
    NotImported,
    /// Imported, but something to do or know (keys, journals, defaults).
    Note,
    /// Nothing to write: Lode behaves so anyway.
    Same,
}

/// One report line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its kind.
    pub kind: Kind,
    /// Where the item was written.
    pub at: Pos,
    /// `section.key`, `zone[example.com].key`, …
    pub item: String,
    /// Why, in a sentence.
    pub why: String,
}

impl Entry {
    /// The line as printed: `not imported: knot.conf:12: server.x: why`.
    pub fn line(&self) -> String {
        let label = match self.kind {
            Kind::NotImported => "not imported",
            Kind::Note => "note",
            Kind::Same => "as in Lode",
        };
        format!("{label}: {}: {}: {}", self.at, self.item, self.why)
    }
}

/// The conversion in progress.
pub struct Import<'a> {
    /// The configuration read.
    pub conf: &'a KnotConf,
    /// What is being written.
    pub doc: Doc,
    /// What could not be converted, and notes.
    pub report: Vec<Entry>,
    /// The knot.conf's folder (Knot's `cert-file` and `key-file` are relative to it).
    pub conf_dir: PathBuf,
    /// The folder relative `storage` and `rundir` are taken from (knotd's
    /// start folder: the one the conversion runs in).
    pub start_dir: PathBuf,
    /// `remotes` groups: id → remote ids.
    pub groups: HashMap<String, Vec<String>>,
    /// Knot ACL id → the Lode ACL ids it became (none: not imported).
    pub acls: HashMap<String, Vec<String>>,
    /// Knot policy id → its Lode id (Knot's configured "default" is renamed).
    pub policies: HashMap<String, String>,
}

impl<'a> Import<'a> {
    /// A conversion of `conf`, read from a file in `conf_dir`.
    pub fn new(conf: &'a KnotConf, conf_dir: PathBuf, start_dir: PathBuf) -> Import<'a> {
        Import {
            conf,
            doc: Doc::default(),
            report: Vec::new(),
            conf_dir,
            start_dir,
            groups: HashMap::new(),
            acls: HashMap::new(),
            policies: HashMap::new(),
        }
    }

    /// Adds a report line (once per place, item and kind).
    pub fn tell(&mut self, kind: Kind, at: &Pos, item: &str, why: impl Into<String>) {
        let entry = Entry {
            kind,
            at: at.clone(),
            item: item.to_owned(),
            why: why.into(),
        };
        if !self.report.contains(&entry) {
            self.report.push(entry);
        }
    }

    /// Reports an item that could not be converted (and marks it used).
    pub fn skip(&mut self, item: &Item, name: &str, why: impl Into<String>) {
        item.mark();
        self.tell(Kind::NotImported, &item.at, name, why);
    }

    /// Reports every line of `key` in `block` with `kind` (marking them used).
    pub fn tell_key(&mut self, block: &Block, owner: &str, key: &str, kind: Kind, why: &str) {
        for item in block.items.iter().filter(|i| i.key == key) {
            item.mark();
            let name = format!("{owner}.{key}");
            self.tell(kind, &item.at, &name, format!("{}: {why}", item.text()));
        }
    }

    /// Copies `key` of `block` into `table` as `lode_key`, converted by
    /// `conv`; a value that does not convert is reported.
    pub fn copy(
        &mut self,
        block: &Block,
        owner: &str,
        table: &mut Table,
        (key, lode_key, conv): (&str, &str, Conv),
    ) {
        let Some((at, values)) = block.values(key) else {
            return;
        };
        match conv.apply(&values) {
            Ok(v) => table.set(lode_key, v),
            Err(why) => self.tell(Kind::NotImported, &at, &format!("{owner}.{key}"), why),
        }
    }

    /// The remote ids `ids` stand for, `remotes` groups expanded.
    pub fn expand_remotes(&self, ids: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for id in ids {
            match self.groups.get(id) {
                Some(members) => out.extend(members.iter().cloned()),
                None => out.push(id.clone()),
            }
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|id| seen.insert(id.clone()));
        out
    }

    /// The database's `storage`, absolute.
    pub fn storage(&self) -> PathBuf {
        let db = self.conf.blocks("database").next();
        let s = db
            .and_then(|b| b.items.iter().rev().find(|i| i.key == "storage"))
            .and_then(|i| i.values.first().cloned())
            .unwrap_or_else(|| KNOT_STORAGE.to_owned());
        absolute(&self.start_dir, &s)
    }

    /// Marks every item of the blocks of section `name` reported as not
    /// imported for `why`, one line per block.
    pub fn skip_section(&mut self, name: &str, why: &str) {
        let conf = self.conf;
        for block in conf.blocks(name) {
            for i in &block.items {
                i.mark();
            }
            let owner = owner(name, block);
            self.tell(Kind::NotImported, &block.at, &owner, why);
        }
    }

    /// Reports every item no step of the conversion took: Lode has no such setting.
    pub fn report_leftovers(&mut self) {
        let conf = self.conf;
        for s in &conf.sections {
            for b in &s.blocks {
                let owner = owner(&s.name, b);
                for i in b.items.iter().filter(|i| !i.is_used()) {
                    if i.key == "comment" {
                        continue;
                    }
                    let name = format!("{owner}.{}", i.key);
                    let reason = reason(&s.name, &i.key).unwrap_or("no such setting in Lode");
                    let why = format!("{}: {reason}", i.text());
                    self.skip(i, &name, why);
                }
            }
        }
    }

    /// True when some line says the result differs from Knot's behaviour.
    pub fn incomplete(&self) -> bool {
        self.report.iter().any(|e| e.kind == Kind::NotImported)
    }
}

/// Why Lode has no counterpart of a Knot item, where more can be said
/// than "no such setting": (section, key, why); zone items are templates' too.
const REASONS: [(&str, &str, &str); 24] = [
    (
        "server",
        "tcp-workers",
        "Lode's TCP threads are half of `workers`",
    ),
    ("server", "tcp-fastopen", "Lode does not use TCP Fast Open"),
    (
        "server",
        "tcp-reuseport",
        "Lode's UDP workers always share the port (SO_REUSEPORT)",
    ),
    (
        "server",
        "tcp-remote-io-timeout",
        "Lode's outgoing requests have fixed timeouts",
    ),
    (
        "server",
        "remote-pool-limit",
        "Lode keeps no pool of outgoing connections",
    ),
    (
        "server",
        "remote-pool-timeout",
        "Lode keeps no pool of outgoing connections",
    ),
    (
        "server",
        "remote-retry-delay",
        "Lode retries a remote by its SOA timers",
    ),
    (
        "server",
        "socket-affinity",
        "Lode's workers are not pinned (run it under taskset)",
    ),
    (
        "server",
        "edns-client-subnet",
        "Lode answers without EDNS Client Subnet",
    ),
    (
        "server",
        "answer-rotation",
        "Lode answers records in a fixed order",
    ),
    (
        "server",
        "proxy-allowlist",
        "Lode does not take the PROXY protocol",
    ),
    (
        "server",
        "dbus-event",
        "Lode tells systemd (sd_notify), not D-Bus",
    ),
    (
        "server",
        "dbus-init-delay",
        "Lode tells systemd (sd_notify), not D-Bus",
    ),
    ("server", "async-start", "a zone answers once it is loaded"),
    ("server", "rundir", "used for the control socket only"),
    (
        "remote",
        "block-notify-after-transfer",
        "Lode notifies after every change",
    ),
    ("remote", "no-edns", "Lode always sends EDNS"),
    (
        "zone",
        "ddns-master",
        "Lode forwards updates to the zone's primaries in order",
    ),
    ("zone", "adjust-threads", "Lode needs no such setting"),
    ("zone", "zone-max-size", "Lode has no zone size limit"),
    ("zone", "provide-ixfr", "Lode answers IXFR from its journal"),
    ("zone", "ixfr-by-one", "Lode sends changesets as kept"),
    ("policy", "ksk-shared", "each zone has its own KSK"),
    (
        "keystore",
        "key-label",
        "PKCS #11 keys are labelled by Lode",
    ),
];

/// The reason [`REASONS`] gives for `key` of `section`.
fn reason(section: &str, key: &str) -> Option<&'static str> {
    let section = if section == "template" {
        "zone"
    } else {
        section
    };
    REASONS
        .iter()
        .find(|(s, k, _)| *s == section && *k == key)
        .map(|(_, _, why)| *why)
}

/// How a block is named in the report: `server`, `zone[example.com]`.
pub fn owner(section: &str, block: &Block) -> String {
    match block.id() {
        "" => section.to_owned(),
        id => format!("{section}[{id}]"),
    }
}

/// A path of the configuration, absolute: relative ones taken from `base`.
pub fn absolute(base: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// How a Knot value becomes a TOML one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conv {
    /// A string, as written.
    Str,
    /// on/off → true/false.
    Bool,
    /// TIME → seconds.
    Time,
    /// An integer.
    Int,
    /// SIZE → bytes.
    Size,
    /// Several strings.
    List,
}

impl Conv {
    /// The value of the lines' `values` (the last one for a single value).
    pub fn apply(self, values: &[String]) -> Result<Value, String> {
        let last = values.last().map_or("", String::as_str);
        Ok(match self {
            Conv::Str => Value::Str(last.to_owned()),
            Conv::Bool => Value::Bool(knotconf::boolean(last)?),
            Conv::Time => Value::Int(knotconf::seconds(last)?),
            Conv::Size => Value::Int(knotconf::bytes(last)?),
            Conv::Int => Value::Int(
                last.parse()
                    .map_err(|_| format!("{last:?} is not an integer"))?,
            ),
            Conv::List => Value::List(values.to_vec()),
        })
    }
}
