//! The documentation's cross-references resolve: every relative link of
//! the README, BENCHMARKING.md, benchmarks/HISTORY.md and docs/*.md names a file of the
//! repository, and every `lode…(N)` a manual page names is one that `lode
//! man` writes (lode-bench's own pages come from `lode-bench man`); every
//! command's page points back to lode(8) and lode.toml(5).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{repo_root, TempDir};

/// The relative link targets of a Markdown text: `](target)`, without
/// web addresses, mail, in-page anchors and the `#anchor` part.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let Some(end) = rest.find(')') else {
            break;
        };
        let target = rest[..end].split('#').next().unwrap_or_default().trim();
        let web = target.contains("://") || target.starts_with("mailto:");
        if !target.is_empty() && !web && !target.contains(' ') {
            out.push(target.to_owned());
        }
        rest = &rest[end..];
    }
    out
}

#[test]
fn markdown_links_resolve() {
    let root = repo_root();
    let mut files: Vec<PathBuf> = vec![
        root.join("README.md"),
        root.join("BENCHMARKING.md"),
        root.join("benchmarks/HISTORY.md"),
    ];
    let docs = std::fs::read_dir(root.join("docs")).expect("docs/");
    files.extend(
        docs.flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md")),
    );
    assert!(files.len() >= 4, "{files:?}");
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read");
        let dir = file.parent().unwrap_or(Path::new("."));
        for target in links(&text) {
            checked += 1;
            if !dir.join(&target).exists() {
                broken.push(format!("{}: {target}", file.display()));
            }
        }
    }
    assert!(checked > 10, "only {checked} links found");
    assert!(
        broken.is_empty(),
        "links to nothing:\n{}",
        broken.join("\n")
    );
}

#[test]
fn manual_pages_name_pages_that_exist() {
    let dir = TempDir::new("docs-man");
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["man", "--out"])
        .arg(&dir.0)
        .output()
        .expect("run lode man");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pages: Vec<String> = std::fs::read_dir(&dir.0)
        .expect("the pages")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(pages.contains(&"lode.8".to_string()) && pages.contains(&"lode.toml.5".to_string()));
    let mut wrong = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(dir.0.join(page))
            .expect("read a page")
            .replace("\\-", "-");
        // Every lode…(N) named.
        let mut rest = text.as_str();
        while let Some(i) = rest.find("lode") {
            let tail = &rest[i..];
            let name_len = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '.'))
                .unwrap_or(tail.len());
            let (name, after) = tail.split_at(name_len);
            let name = name.trim_end_matches('.');
            if let Some(section) = after
                .strip_prefix('(')
                .and_then(|a| a.get(..2))
                .and_then(|s| s.strip_suffix(')'))
            {
                let file = format!("{name}.{section}");
                let elsewhere = name.starts_with("lode-bench") && section == "1";
                if !elsewhere && !pages.contains(&file) {
                    wrong.push(format!(
                        "{page}: names {name}({section}), which is not written"
                    ));
                }
            }
            rest = &rest[i + 4..];
        }
        if page != "lode.8" && page != "lode.toml.5" {
            let see_also = text.split(".SH \"SEE ALSO\"").nth(1).unwrap_or_default();
            if !see_also.contains("lode(8)") || !see_also.contains("lode.toml(5)") {
                wrong.push(format!(
                    "{page}: its SEE ALSO does not name lode(8) and lode.toml(5)"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
