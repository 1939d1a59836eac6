//! A reader of Knot DNS's `knot.conf`: its restricted YAML (Knot's
//! `yparser` grammar, read from its documentation and schema), kept with the
//! file and line of every item so that what cannot be converted is named
//! where it was written.
//!
//! ```text
//!  server:                      ← section (a key at column 0, no value)
//!      listen: 0.0.0.0@53       ← item of the section's one block
//!  zone:
//!    - domain: example.com      ← a block begins ("- key: value")
//!      file: "%s.zone"          ← item of that block
//!      acl: [ a, b ]            ← a list; the same key on two lines adds up
//!  include: more/*.conf         ← another file read here (a glob in its name)
//! ```
//!
//! Every item remembers whether the conversion used it: what is left unused
//! at the end is reported, so nothing is dropped silently.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where an item was written: file and line (1-based), as zone files say it.
pub use lode_zonefile::SourcePos as Pos;

/// One `key: value` line.
#[derive(Debug)]
pub struct Item {
    /// The key.
    pub key: String,
    /// Its values: one for a scalar, several for a `[a, b]` list.
    pub values: Vec<String>,
    /// Where it was written.
    pub at: Pos,
    /// The conversion has taken (or reported) it.
    used: Cell<bool>,
}

impl Item {
    /// Marks the item as taken care of.
    pub fn mark(&self) {
        self.used.set(true);
    }

    /// True once taken care of.
    pub fn is_used(&self) -> bool {
        self.used.get()
    }

    /// The values as written, `[a, b]` for several.
    pub fn text(&self) -> String {
        match self.values.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        }
    }
}

/// One block of a section: a `- id: …` entry, or the items of a section
/// without entries (`server:`).
#[derive(Debug)]
pub struct Block {
    /// Where it begins.
    pub at: Pos,
    /// Its items in order (the first is the `- key:` of an entry).
    pub items: Vec<Item>,
}

impl Block {
    /// The values of every line of `key`, in order, with the first line's
    /// position; the lines are marked used.
    pub fn values(&self, key: &str) -> Option<(Pos, Vec<String>)> {
        let mut found: Option<(Pos, Vec<String>)> = None;
        for item in self.items.iter().filter(|i| i.key == key) {
            item.mark();
            match &mut found {
                Some((_, v)) => v.extend(item.values.iter().cloned()),
                None => found = Some((item.at.clone(), item.values.clone())),
            }
        }
        found
    }

    /// The value of `key` (the last line's when written twice), marked used.
    pub fn one(&self, key: &str) -> Option<(Pos, String)> {
        let (at, values) = self.values(key)?;
        Some((at, values.last().cloned().unwrap_or_default()))
    }

    /// The last value of `key`, without marking it used.
    pub fn peek(&self, key: &str) -> Option<&str> {
        let item = self.items.iter().rev().find(|i| i.key == key)?;
        item.values.last().map(String::as_str)
    }

    /// True when `key` is written in the block (nothing is marked).
    pub fn has(&self, key: &str) -> bool {
        self.items.iter().any(|i| i.key == key)
    }

    /// The block's identifier: the value of its first item (`id`, `domain`,
    /// `target`), or "" for a section without entries.
    pub fn id(&self) -> &str {
        self.items
            .first()
            .filter(|_| self.is_entry())
            .and_then(|i| i.values.first())
            .map_or("", String::as_str)
    }

    /// True for a `- key: …` entry.
    fn is_entry(&self) -> bool {
        self.items.first().is_some_and(|i| i.at == self.at)
    }
}

/// A section: its name and blocks.
#[derive(Debug)]
pub struct Section {
    /// `server`, `zone`, `mod-rrl`, …
    pub name: String,
    /// Where it begins.
    pub at: Pos,
    /// Its blocks.
    pub blocks: Vec<Block>,
}

/// A whole configuration, its includes read in place.
#[derive(Debug, Default)]
pub struct KnotConf {
    /// The sections in the order written (a section written twice appears twice).
    pub sections: Vec<Section>,
    /// `include:` items (each read in place).
    pub includes: Vec<Pos>,
}

impl KnotConf {
    /// Reads `path` and the files it includes.
    pub fn read(path: &Path) -> Result<KnotConf, String> {
        let mut conf = KnotConf::default();
        read_into(&mut conf, path, &path.display().to_string(), 0)?;
        Ok(conf)
    }

    /// Parses configuration text (`name` in messages; includes relative to `dir`).
    #[cfg(test)]
    pub fn parse(text: &str, name: &str, dir: &Path) -> Result<KnotConf, String> {
        let mut conf = KnotConf::default();
        parse_into(&mut conf, text, name, dir, 0)?;
        Ok(conf)
    }

    /// Every block of the sections named `name`.
    pub fn blocks<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a Block> + 'a {
        let name = name.to_owned();
        self.sections
            .iter()
            .filter(move |s| s.name == name)
            .flat_map(|s| s.blocks.iter())
    }

    /// The block of section `name` whose identifier is `id`.
    pub fn block(&self, name: &str, id: &str) -> Option<&Block> {
        self.blocks(name).find(|b| b.id() == id)
    }
}

/// Includes nested deeper than this are refused (a file including itself).
const MAX_INCLUDE_DEPTH: usize = 10;

fn read_into(conf: &mut KnotConf, path: &Path, name: &str, depth: usize) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    parse_into(conf, &text, name, dir, depth)
}

/// One line, split.
#[derive(Debug, PartialEq)]
enum Line {
    /// Blank or a comment.
    Blank,
    /// `key:` or `key: value` at column 0.
    Top(String, Option<Vec<String>>),
    /// `    key: value` (indented).
    Item(usize, String, Option<Vec<String>>),
    /// `  - key: value`: a new block; (dash column, key column).
    Entry(usize, usize, String, Vec<String>),
}

fn parse_into(
    conf: &mut KnotConf,
    text: &str,
    name: &str,
    dir: &Path,
    depth: usize,
) -> Result<(), String> {
    let file: Arc<Path> = Arc::from(Path::new(name));
    let mut indent: Option<usize> = None;
    for (n, raw) in text.lines().enumerate() {
        let at = Pos {
            file: file.clone(),
            line: u32::try_from(n + 1).unwrap_or(u32::MAX),
        };
        let bad = |why: String| format!("{at}: {why}");
        match split_line(raw).map_err(bad)? {
            Line::Blank => {}
            Line::Top(key, Some(values)) if key == "include" => {
                conf.includes.push(at.clone());
                for pattern in values {
                    include(conf, dir, &pattern, depth).map_err(|e| format!("{at}: {e}"))?;
                }
                indent = None;
            }
            Line::Top(key, Some(_)) => {
                return Err(bad(format!(
                    "{key}: a section takes no value (its items go on the next lines)"
                )))
            }
            Line::Top(key, None) => {
                conf.sections.push(Section {
                    name: key,
                    at,
                    blocks: Vec::new(),
                });
                indent = None;
            }
            Line::Entry(_, col, key, values) => {
                let section = conf
                    .sections
                    .last_mut()
                    .ok_or_else(|| bad("an entry outside a section".into()))?;
                check_indent(&mut indent, col).map_err(bad)?;
                section.blocks.push(Block {
                    at: at.clone(),
                    items: vec![item(key, values, at)],
                });
            }
            Line::Item(col, key, values) => {
                let section = conf
                    .sections
                    .last_mut()
                    .ok_or_else(|| bad("an item outside a section".into()))?;
                check_indent(&mut indent, col).map_err(bad)?;
                if section.blocks.is_empty() {
                    section.blocks.push(Block {
                        at: section.at.clone(),
                        items: Vec::new(),
                    });
                }
                let values = values.ok_or_else(|| bad(format!("{key}: no value")))?;
                if let Some(block) = section.blocks.last_mut() {
                    block.items.push(item(key, values, at));
                }
            }
        }
    }
    Ok(())
}

fn item(key: String, values: Vec<String>, at: Pos) -> Item {
    Item {
        key,
        values,
        at,
        used: Cell::new(false),
    }
}

/// Items of one section are indented alike (Knot refuses otherwise).
fn check_indent(indent: &mut Option<usize>, col: usize) -> Result<(), String> {
    match *indent {
        Some(i) if i != col => Err(format!(
            "indented by {col} spaces where the items above are by {i}"
        )),
        _ => {
            *indent = Some(col);
            Ok(())
        }
    }
}

/// Reads the files an `include` names: a path, or a glob in its last
/// component (`dir/*.conf`), relative to the including file's folder;
/// matching files are read in sorted order.
fn include(conf: &mut KnotConf, dir: &Path, pattern: &str, depth: usize) -> Result<(), String> {
    if depth >= MAX_INCLUDE_DEPTH {
        return Err(format!(
            "include {pattern}: nested more than {MAX_INCLUDE_DEPTH} deep"
        ));
    }
    let path = dir.join(pattern);
    let glob = path
        .file_name()
        .and_then(|f| f.to_str())
        .filter(|f| f.contains(['*', '?']))
        .map(str::to_owned);
    let files: Vec<PathBuf> = match glob {
        None => vec![path],
        Some(glob) => {
            let folder = path.parent().unwrap_or(Path::new("."));
            let list = std::fs::read_dir(folder)
                .map_err(|e| format!("include {pattern}: {}: {e}", folder.display()))?;
            let mut files: Vec<PathBuf> = list
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|f| f.to_str())
                        .is_some_and(|f| glob_match(&glob, f))
                })
                .collect();
            files.sort();
            files
        }
    };
    for f in files {
        read_into(conf, &f, &f.display().to_string(), depth + 1)?;
    }
    Ok(())
}

/// `*` and `?` of a shell glob against a file name.
fn glob_match(glob: &str, name: &str) -> bool {
    fn go(g: &[char], n: &[char]) -> bool {
        match g.split_first() {
            None => n.is_empty(),
            Some(('*', rest)) => (0..=n.len()).any(|i| go(rest, &n[i..])),
            Some(('?', rest)) => !n.is_empty() && go(rest, &n[1..]),
            Some((c, rest)) => n.first() == Some(c) && go(rest, &n[1..]),
        }
    }
    let g: Vec<char> = glob.chars().collect();
    let n: Vec<char> = name.chars().collect();
    go(&g, &n)
}

/// Splits one line by Knot's grammar.
fn split_line(raw: &str) -> Result<Line, String> {
    if raw.contains('\t') {
        return Err("a tab (indent with spaces)".into());
    }
    let line = raw.trim_end_matches('\r');
    let body = line.trim_start_matches(' ');
    if body.is_empty() || body.starts_with('#') {
        return Ok(Line::Blank);
    }
    let col = line.len() - body.len();
    if let Some(rest) = body.strip_prefix("- ") {
        let rest_trim = rest.trim_start_matches(' ');
        let key_col = col + 2 + (rest.len() - rest_trim.len());
        let (key, values) = key_and_value(rest_trim)?;
        let values = values.ok_or_else(|| format!("{key}: an entry needs a value"))?;
        return Ok(Line::Entry(col, key_col, key, values));
    }
    let (key, values) = key_and_value(body)?;
    Ok(if col == 0 {
        Line::Top(key, values)
    } else {
        Line::Item(col, key, values)
    })
}

/// `key: value`, `key: [a, b]` or `key:` (and a comment after).
fn key_and_value(text: &str) -> Result<(String, Option<Vec<String>>), String> {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || "\\/._*-".contains(c)))
        .unwrap_or(text.len());
    let (key, rest) = text.split_at(end);
    if key.is_empty() || key.starts_with('-') {
        return Err(format!("{text:?}: not `key: value`"));
    }
    let rest = rest
        .trim_start_matches(' ')
        .strip_prefix(':')
        .ok_or_else(|| format!("{key}: no `:` after the key"))?;
    let value = rest.trim_start_matches(' ');
    if value.is_empty() || value.starts_with('#') {
        return Ok((key.to_owned(), None));
    }
    if !rest.starts_with(' ') {
        return Err(format!("{key}: a space is needed after `:`"));
    }
    let (values, tail) = if let Some(list) = value.strip_prefix('[') {
        list_values(list)?
    } else {
        let (v, tail) = scalar(value)?;
        (vec![v], tail)
    };
    let tail = tail.trim_start_matches(' ');
    if !(tail.is_empty() || tail.starts_with('#')) {
        return Err(format!("{key}: {tail:?} after the value"));
    }
    Ok((key.to_owned(), Some(values)))
}

/// The values of `a, b ]…` (after the `[`) and what follows the `]`.
fn list_values(mut text: &str) -> Result<(Vec<String>, &str), String> {
    let mut values = Vec::new();
    loop {
        text = text.trim_start_matches(' ');
        let (v, rest) = scalar(text)?;
        values.push(v);
        let rest = rest.trim_start_matches(' ');
        if let Some(r) = rest.strip_prefix(',') {
            text = r;
        } else if let Some(r) = rest.strip_prefix(']') {
            return Ok((values, r));
        } else {
            return Err("a list not closed by `]`".into());
        }
    }
}

/// One value, quoted or not, and the text after it.
fn scalar(text: &str) -> Result<(String, &str), String> {
    if let Some(quoted) = text.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => return Ok((out, &quoted[i + 1..])),
                // `\"` is a quote; any other backslash is kept (Knot's rule).
                '\\' => match chars.next() {
                    Some((_, '"')) => out.push('"'),
                    Some((_, other)) => {
                        out.push('\\');
                        out.push(other);
                    }
                    None => out.push('\\'),
                },
                c => out.push(c),
            }
        }
        return Err("a quoted value without its closing `\"`".into());
    }
    let end = text
        .find([' ', '#', ',', '[', ']', '"'])
        .unwrap_or(text.len());
    if end == 0 {
        return Err(format!("{text:?}: a value was expected"));
    }
    Ok((text[..end].to_owned(), &text[end..]))
}

/// Knot's BOOL: `on`/`off`, `true`/`false`.
pub fn boolean(text: &str) -> Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        _ => Err(format!("{text:?} is not on, off, true or false")),
    }
}

/// Knot's TIME: seconds, with an optional `s`, `m`, `h` or `d`.
pub fn seconds(text: &str) -> Result<i64, String> {
    with_unit(text, &[('s', 1), ('m', 60), ('h', 3600), ('d', 86400)])
        .ok_or_else(|| format!("{text:?} is not a time (seconds, or N with s, m, h, d)"))
}

/// Knot's SIZE: bytes, with an optional `B`, `K`, `M` or `G`.
pub fn bytes(text: &str) -> Result<i64, String> {
    with_unit(
        text,
        &[('B', 1), ('K', 1 << 10), ('M', 1 << 20), ('G', 1 << 30)],
    )
    .ok_or_else(|| format!("{text:?} is not a size (bytes, or N with B, K, M, G)"))
}

fn with_unit(text: &str, units: &[(char, i64)]) -> Option<i64> {
    let (digits, factor) = match text.chars().last() {
        Some(c) if !c.is_ascii_digit() => {
            let f = units.iter().find(|(u, _)| *u == c)?.1;
            (&text[..text.len() - c.len_utf8()], f)
        }
        _ => (text, 1),
    };
    digits.parse::<i64>().ok()?.checked_mul(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> KnotConf {
        KnotConf::parse(text, "knot.conf", Path::new("/nonexistent")).expect("parses")
    }

    #[test]
    fn sections_entries_lists_and_lines() {
        let c = parse(
            "# a comment\nserver:\n    listen: [ 127.0.0.1@53, ::1@53 ] # both\n    identity: \"a b\"\n\
             zone:\n  - domain: example.com\n    acl: a\n    acl: b\n  - domain: \"other.\"\n",
        );
        let server = c.blocks("server").next().expect("server");
        let (at, listen) = server.values("listen").expect("listen");
        assert_eq!(at.line, 3);
        assert_eq!(listen, ["127.0.0.1@53", "::1@53"]);
        assert_eq!(server.one("identity").expect("identity").1, "a b");
        let zones: Vec<&Block> = c.blocks("zone").collect();
        assert_eq!(zones.len(), 2);
        assert_eq!(zones[0].id(), "example.com");
        assert_eq!(zones[0].values("acl").expect("acl").1, ["a", "b"]);
        assert_eq!(zones[1].id(), "other.");
        assert_eq!(zones[1].at.line, 9);
        assert_eq!(server.id(), "");
    }

    #[test]
    fn quoted_values_keep_what_knot_keeps() {
        let c = parse("server:\n    version: \"say \\\"hi\\\" # not a comment\"\n");
        let v = c.blocks("server").next().and_then(|b| b.one("version"));
        assert_eq!(v.expect("version").1, "say \"hi\" # not a comment");
    }

    #[test]
    fn errors_name_the_line() {
        let bad = |text: &str| {
            KnotConf::parse(text, "k.conf", Path::new("/nonexistent")).expect_err("refused")
        };
        assert!(bad("server:\n\tlisten: 1.2.3.4\n").starts_with("k.conf:2: "));
        assert!(bad("server:\n    listen 1.2.3.4\n").starts_with("k.conf:2: "));
        assert!(bad("zone:\n  - domain: a\n     file: b\n    acl: c\n").starts_with("k.conf:3:"));
        assert!(bad("    listen: 1.2.3.4\n").starts_with("k.conf:1: "));
        assert!(bad("server:\n    identity: \"open\n").contains("closing"));
        assert!(bad("acl:\n  - id: a\n    action: [a, b\n").contains("not closed"));
    }

    #[test]
    fn units() {
        assert_eq!(seconds("2d"), Ok(172_800));
        assert_eq!(seconds("90"), Ok(90));
        assert_eq!(seconds("-1"), Ok(-1));
        assert!(seconds("1w").is_err());
        assert_eq!(bytes("64M"), Ok(64 << 20));
        assert_eq!(boolean("on"), Ok(true));
        assert!(boolean("yes").is_err());
    }

    #[test]
    fn globs() {
        assert!(glob_match("*.conf", "a.conf"));
        assert!(!glob_match("*.conf", "a.conf~"));
        assert!(glob_match("zone-?.conf", "zone-1.conf"));
    }
}
