//! The server crate's wings form no import circle: `src/lib.rs` declares its
//! top-level modules in order, and each module (a file, or a wing's folder)
//! may use only the modules declared before it. Read from the sources, so a
//! new `crate::…` path that points upward fails here with the file and the
//! path.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The top-level modules in the order `lib.rs` declares them.
fn declared(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("mod "))
                .or_else(|| l.strip_prefix("pub(crate) mod "))?;
            rest.strip_suffix(';').map(str::to_owned)
        })
        .collect()
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The text without comments, cut where a test module starts (tests may
/// reach anywhere).
fn code(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") {
            break;
        }
        let line = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The first segment of each path `crate::…` in `code` reaches: a plain
/// path's, or each item's of a group `crate::{a, b::c}`.
fn reached(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item = String::new();
            let mut items = Vec::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
                if c == ',' && depth == 1 {
                    items.push(std::mem::take(&mut item));
                } else {
                    item.push(c);
                }
            }
            items.push(item);
            out.extend(items.iter().filter_map(|it| first_segment(it.trim())));
        } else if let Some(s) = first_segment(rest) {
            out.push(s);
        }
    }
    out
}

fn first_segment(path: &str) -> Option<String> {
    let s: String = path
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!s.is_empty()).then_some(s)
}

#[test]
fn each_module_uses_only_those_declared_before_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs");
    let order = declared(&lib);
    assert!(
        order.len() > 10,
        "lib.rs declares too few modules: {order:?}"
    );
    let rank: HashMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i))
        .collect();
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut checked = 0;
    let mut wrong = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap_or(file);
        // The module a file belongs to: its first path component.
        let first = rel
            .components()
            .next()
            .map(|c| {
                c.as_os_str()
                    .to_string_lossy()
                    .trim_end_matches(".rs")
                    .to_owned()
            })
            .unwrap_or_default();
        if first == "lib" {
            continue; // the root wires every wing together
        }
        let name = rel.file_name().map(|n| n.to_string_lossy().into_owned());
        if name.is_some_and(|n| n.ends_with("tests.rs")) {
            continue;
        }
        let Some(&own) = rank.get(first.as_str()) else {
            panic!("{}: in no module lib.rs declares", rel.display());
        };
        checked += 1;
        let text = std::fs::read_to_string(file).expect("readable source");
        for target in reached(&code(&text)) {
            if target == first || target == "self" {
                continue;
            }
            match rank.get(target.as_str()) {
                Some(&t) if t < own => {}
                Some(_) => wrong.push(format!(
                    "{}: uses crate::{target}, declared after `{first}` in lib.rs",
                    rel.display()
                )),
                None => wrong.push(format!(
                    "{}: uses crate::{target}, not a module: name the module that owns it",
                    rel.display()
                )),
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} files read under {}",
        src.display()
    );
    assert!(wrong.is_empty(), "import circles:\n{}", wrong.join("\n"));
}

#[test]
fn a_path_upward_is_found() {
    let code = code("use crate::{config::Config, update};\nfn f() { crate::serving::x(); }\n// crate::control\n#[cfg(test)]\nmod tests { use crate::control; }\n");
    assert_eq!(reached(&code), ["config", "update", "serving"]);
}
