//! The `lode.toml` being written: top-level keys, then tables in a fixed
//! order, each key in the order it was set, with comments where the
//! conversion has something to say.

use std::fmt::Write;

/// A value of a key.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A list of strings.
    List(Vec<String>),
}

/// One table (`[[zone]]`, `[rrl]`, …) or the top level.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// `[[zone]]`, `[rrl]`; "" for the top level.
    pub header: &'static str,
    /// Comment lines written above it.
    pub comments: Vec<String>,
    /// Its keys in order.
    pub entries: Vec<(String, Value)>,
}

impl Table {
    /// An empty table with this header.
    pub fn new(header: &'static str) -> Table {
        Table {
            header,
            ..Table::default()
        }
    }

    /// Sets `key` (replacing an earlier value).
    pub fn set(&mut self, key: &str, value: Value) {
        match self.entries.iter_mut().find(|(k, _)| k == key) {
            Some(e) => e.1 = value,
            None => self.entries.push((key.to_owned(), value)),
        }
    }

    /// Sets a string.
    pub fn str(&mut self, key: &str, value: impl Into<String>) {
        self.set(key, Value::Str(value.into()));
    }

    /// Sets an integer.
    pub fn int(&mut self, key: &str, value: i64) {
        self.set(key, Value::Int(value));
    }

    /// Sets a list of strings.
    pub fn list(&mut self, key: &str, values: Vec<String>) {
        self.set(key, Value::List(values));
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Appends the table as TOML.
    fn write(&self, out: &mut String) {
        for c in &self.comments {
            let _ = writeln!(out, "# {c}");
        }
        if !self.header.is_empty() {
            let _ = writeln!(out, "{}", self.header);
        }
        for (k, v) in &self.entries {
            let _ = writeln!(out, "{k} = {}", value_text(v));
        }
    }
}

/// A value in TOML.
fn value_text(v: &Value) -> String {
    match v {
        Value::Str(s) => quote(s),
        Value::Int(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::List(items) => format!(
            "[{}]",
            items
                .iter()
                .map(|s| quote(s))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A TOML basic string.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The whole file: header comments, top-level keys, tables.
#[derive(Debug, Default)]
pub struct Doc {
    /// The top-level keys.
    pub top: Table,
    /// The tables, in the order written.
    pub tables: Vec<Table>,
}

impl Doc {
    /// The tables with this header.
    pub fn tables_of<'a>(&'a self, header: &'a str) -> impl Iterator<Item = &'a Table> + 'a {
        self.tables.iter().filter(move |t| t.header == header)
    }

    /// The TOML text, `head` (comment lines) first; tables grouped by
    /// header in the order of [`ORDER`].
    pub fn render(&self, head: &[String]) -> String {
        let mut out = String::new();
        for line in head {
            if line.is_empty() {
                out.push_str("#\n");
            } else {
                let _ = writeln!(out, "# {line}");
            }
        }
        out.push('\n');
        self.top.write(&mut out);
        for header in ORDER {
            for t in self.tables_of(header) {
                out.push('\n');
                t.write(&mut out);
            }
        }
        out
    }
}

/// The order tables are written in: what is referred to before what refers to it.
const ORDER: [&str; 11] = [
    "[[key]]",
    "[[remote]]",
    "[[acl]]",
    "[[submission]]",
    "[[keystore]]",
    "[[policy]]",
    "[[template]]",
    "[[zone]]",
    "[rrl]",
    "[cookies]",
    "[dnstap]",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_in_order_and_strings_escaped() {
        let mut d = Doc::default();
        d.top.str("identity", "a \"b\"\\");
        let mut z = Table::new("[[zone]]");
        z.str("name", "example.");
        z.list("acl", vec!["a".into(), "b".into()]);
        d.tables.push(z);
        let mut k = Table::new("[[key]]");
        k.int("n", 3);
        k.comments.push("a key".into());
        d.tables.push(k);
        let text = d.render(&["head".into()]);
        assert_eq!(
            text,
            "# head\n\nidentity = \"a \\\"b\\\"\\\\\"\n\n# a key\n[[key]]\nn = 3\n\n[[zone]]\nname = \"example.\"\nacl = [\"a\", \"b\"]\n"
        );
    }
}
