use std::collections::{HashMap, HashSet};

use super::labels::fill;
use super::*;
use crate::gen::Scratch;

fn small_spec(n: u64) -> TldSpec {
    let mut spec = TldSpec::new("test.", n);
    spec.queries = 2000;
    spec.updates = 900;
    spec.threads = Some(2);
    spec
}

fn label_of(m: &TldModel, i: u64) -> String {
    let mut v = Vec::new();
    m.push_label(i, &mut v);
    String::from_utf8(v).expect("ascii label")
}

#[test]
fn fill_is_injective_and_in_range() {
    // Every rank of a small full space (3 letters) gives a different string.
    let radix = [26u8; 3];
    let mut seen = HashSet::new();
    for r in 0..26u64.pow(3) {
        let mut out = [0u8; 3];
        fill(&radix, &mut out, r, 26u64.pow(3), r * 7);
        assert!(out.iter().all(u8::is_ascii_lowercase), "{out:?}");
        assert!(seen.insert(out), "rank {r} repeats {out:?}");
    }
    // A sparse bucket of a long label: distinct whatever the filler.
    let radix = [26u8; 30];
    let mut seen = HashSet::new();
    for r in 0..5000u64 {
        let mut out = [0u8; 30];
        fill(&radix, &mut out, r, 1 << 31, mix64(r));
        assert!(seen.insert(out), "rank {r} repeats");
    }
}

#[test]
fn labels_are_unique_and_follow_the_rules() {
    let m = TldModel::new(&small_spec(200_000)).expect("model");
    let mut seen = HashSet::with_capacity(220_000);
    let mut lengths = HashMap::new();
    let (mut idn, mut hyphen, mut digits) = (0u64, 0u64, 0u64);
    let n = 200_000u64;
    for i in 0..n {
        let l = label_of(&m, i);
        let b = l.as_bytes();
        assert!((4..=63).contains(&b.len()), "{l}: length");
        assert!(
            b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-'),
            "{l}: characters"
        );
        assert!(
            !l.starts_with('-') && !l.ends_with('-'),
            "{l}: hyphen at an end"
        );
        assert!(b[0].is_ascii_lowercase(), "{l}: starts with a letter");
        if let Some(tail) = l.strip_prefix("xn--") {
            idn += 1;
            assert!(!tail.contains('-'), "{l}");
        } else {
            assert!(!l.contains("--"), "{l}: reserved double hyphen");
            hyphen += u64::from(l.contains('-'));
            digits += u64::from(b.iter().any(u8::is_ascii_digit));
        }
        *lengths.entry(b.len()).or_insert(0u64) += 1;
        assert!(seen.insert(l.clone()), "{l} ({i}) twice");
    }
    // Names of additions and non-existing names are distinct from the zone's.
    for k in 0..20_000 {
        let add = label_of(&m, n + k);
        assert!(seen.insert(add.clone()), "addition {add} is in the zone");
        let nx = label_of(&m, m.nx_index(mix64(k)));
        assert!(!seen.contains(&nx), "non-existing {nx} is in the zone");
    }
    let share = |v: u64| v as f64 / n as f64;
    assert!(
        (0.015..0.04).contains(&share(idn)),
        "xn-- share {}",
        share(idn)
    );
    assert!(
        (0.05..0.11).contains(&share(hyphen)),
        "hyphen share {}",
        share(hyphen)
    );
    assert!(
        (0.04..0.10).contains(&share(digits)),
        "digit share {}",
        share(digits)
    );
    let mid: u64 = (6..=15)
        .map(|l| lengths.get(&l).copied().unwrap_or(0))
        .sum();
    assert!(share(mid) > 0.75, "6-15 characters: {}", share(mid));
    let mean = lengths
        .iter()
        .map(|(l, c)| *l as f64 * *c as f64)
        .sum::<f64>()
        / n as f64;
    assert!((9.0..13.0).contains(&mean), "mean length {mean}");
    assert!(lengths.keys().any(|&l| l > 30), "no long tail");
}

#[test]
fn shares_of_glue_ds_and_ns_counts() {
    let mut spec = small_spec(200_000);
    spec.glue_share = 0.03;
    spec.ds_share = 0.05;
    let m = TldModel::new(&spec).expect("model");
    let n = 200_000u64;
    let (mut glue, mut ds, mut two, mut alg13) = (0u64, 0u64, 0u64, 0u64);
    for i in 0..n {
        let d = m.delegation(i);
        assert!((2..=4).contains(&d.ns_count));
        glue += u64::from(matches!(d.servers, Servers::InBailiwick { .. }));
        two += u64::from(d.ns_count == 2);
        if let Some(x) = d.ds {
            ds += 1;
            alg13 += u64::from(x.algorithm == 13);
            assert!(x.algorithm == 13 || x.algorithm == 8);
        }
    }
    let share = |v: u64| v as f64 / n as f64;
    assert!(
        (0.027..0.033).contains(&share(glue)),
        "glue {}",
        share(glue)
    );
    assert!((0.046..0.054).contains(&share(ds)), "DS {}", share(ds));
    assert!((0.77..0.83).contains(&share(two)), "two NS {}", share(two));
    assert!(alg13 * 10 > ds * 7, "algorithm 13 is the common one");
    // Shares are honoured at their ends too.
    spec.glue_share = 0.0;
    spec.ds_share = 1.0;
    let m = TldModel::new(&spec).expect("model");
    for i in 0..1000 {
        let d = m.delegation(i);
        assert!(matches!(d.servers, Servers::Provider(_)) && d.ds.is_some());
    }
}

#[test]
fn ns_sets_are_shared_zipf_like() {
    let m = TldModel::new(&small_spec(200_000)).expect("model");
    assert_eq!(m.providers(), 1000);
    let mut per_rank = vec![0u64; 1001];
    let mut sets = HashSet::new();
    let n = 200_000u64;
    for i in 0..n {
        let d = m.delegation(i);
        if let Servers::Provider(rank) = d.servers {
            per_rank[rank as usize] += 1;
            sets.insert((rank, d.ns_count));
        }
    }
    let provider_delegations: u64 = per_rank.iter().sum();
    // Far fewer NS sets than delegations: most delegations share a popular set.
    assert!(sets.len() < (n / 50) as usize, "{} NS sets", sets.len());
    // Zipf(1.1) over 1000 ranks: rank 1 holds 1/H(1000, 1.1) ≈ 17.7 %, the top 10 ≈ 48 %.
    let h: f64 = (1..=1000).map(|k| (k as f64).powf(-1.1)).sum();
    let top1 = per_rank[1] as f64 / provider_delegations as f64;
    assert!(
        (top1 - 1.0 / h).abs() < 0.01,
        "rank 1: {top1}, expected {}",
        1.0 / h
    );
    let top10: u64 = per_rank[1..=10].iter().sum();
    assert!(top10 as f64 / provider_delegations as f64 > 0.4);
    assert!(
        per_rank[1] > per_rank[2] && per_rank[2] > per_rank[10] && per_rank[10] > per_rank[500]
    );
    // A smaller exponent flattens the popularity.
    let mut spec = small_spec(200_000);
    spec.zipf = 0.8;
    let flat = TldModel::new(&spec).expect("model");
    let top = (0..20_000u64)
        .filter(|&i| flat.delegation(i).servers == Servers::Provider(1))
        .count();
    assert!(
        (top as f64 / 20_000.0) < top1 / 2.0,
        "s = 0.8: rank 1 {top}"
    );
}

#[test]
fn same_seed_same_bytes_other_seed_other_zone() {
    let a = Scratch::new("tld-det-a");
    let b = Scratch::new("tld-det-b");
    let c = Scratch::new("tld-det-c");
    let spec = small_spec(3000);
    let sa = generate(&spec, &a.0).expect("generate a");
    let sb = generate(&spec, &b.0).expect("generate b");
    let mut files: Vec<&str> = QUERY_FILES.to_vec();
    files.extend(["test.zone", "updates-low.txt", "updates-medium.txt"]);
    for f in &files {
        let x = std::fs::read(a.0.join(f)).expect(f);
        let y = std::fs::read(b.0.join(f)).expect(f);
        assert!(!x.is_empty(), "{f} is empty");
        assert!(x == y, "{f} differs between two runs of the same seed");
    }
    assert_eq!(sa.zone, sb.zone);
    let mut other = spec.clone();
    other.seed = 2;
    generate(&other, &c.0).expect("generate c");
    let x = std::fs::read(a.0.join("test.zone")).expect("zone");
    let y = std::fs::read(c.0.join("test.zone")).expect("zone");
    assert!(x != y, "another seed gives the same zone");
}

/// The delegations and glue names of a generated zone file, and its records by type.
fn read_zone(path: &Path, tld: &str) -> (HashSet<String>, HashSet<String>, HashMap<String, u64>) {
    let text = std::fs::read_to_string(path).expect("zone file");
    let mut delegations = HashSet::new();
    let mut glue = HashSet::new();
    let mut types = HashMap::new();
    for l in text.lines() {
        if l.starts_with(';') || l.starts_with('$') || l.starts_with('@') || l.is_empty() {
            continue;
        }
        let mut f = l.split_whitespace();
        let owner = f.next().expect("owner");
        let mut t = f.next().expect("type");
        if t.bytes().all(|b| b.is_ascii_digit()) {
            t = f.next().expect("type after TTL");
        }
        *types.entry(t.to_owned()).or_insert(0) += 1;
        let fqdn = format!("{owner}.{tld}.");
        match t {
            "NS" | "DS" => {
                delegations.insert(fqdn);
            }
            "A" | "AAAA" if !owner.ends_with(".nic") => {
                glue.insert(fqdn);
            }
            _ => {}
        }
    }
    (delegations, glue, types)
}

/// A generated 20,000-delegation set (2000 queries per file) in a scratch directory.
fn set_of_20k(tag: &str) -> (Scratch, TldSpec, TldSummary) {
    let dir = Scratch::new(tag);
    let spec = small_spec(20_000);
    let s = generate(&spec, &dir.0).expect("generate");
    (dir, spec, s)
}

#[test]
fn zone_counts_match_the_file() {
    let (_dir, spec, s) = set_of_20k("tld-counts");
    let (delegations, glue, types) = read_zone(&s.zone_file, "test");
    let z = &s.zone;
    assert_eq!(delegations.len() as u64, z.delegations);
    assert_eq!(types["NS"], z.ns_records);
    assert_eq!(types["DS"], z.ds);
    assert_eq!(types["A"], z.glue_a + 13);
    assert_eq!(types["AAAA"], z.glue_aaaa + 13);
    assert_eq!(
        z.records,
        types.values().sum::<u64>() + 14,
        "records (SOA and apex NS are written at @)"
    );
    assert!(glue.len() as u64 >= 2 * z.glue_delegations);
    assert!(z.ns_sets < z.delegations / 5, "{} NS sets", z.ns_sets);
    assert!(z.ns_sets > 100);
    for f in &s.query_files {
        let text = std::fs::read_to_string(f).expect("query file");
        assert_eq!(text.lines().count() as u64, spec.queries);
    }
    let readme = std::fs::read_to_string(&s.readme).expect("README");
    assert!(readme.contains(&format!("delegations:  {}", z.delegations)));
    assert!(readme.contains("dnsperf -D"));
}

#[test]
fn query_files_ask_what_they_say() {
    let (_dir, _spec, s) = set_of_20k("tld-queries");
    let (delegations, _, _) = read_zone(&s.zone_file, "test");
    let signed: HashSet<String> = std::fs::read_to_string(&s.zone_file)
        .expect("zone")
        .lines()
        .filter(|l| l.contains(" DS "))
        .map(|l| format!("{}.test.", l.split_whitespace().next().unwrap_or_default()))
        .collect();
    // The delegation a query name falls in, if any.
    let cut = |name: &str| -> Option<String> {
        let labels: Vec<&str> = name.split('.').collect();
        let n = labels.len();
        (n >= 2).then(|| format!("{}.test.", labels[n - 2]))
    };
    let read = |k: usize| -> Vec<(String, String)> {
        std::fs::read_to_string(&s.query_files[k])
            .expect("queries")
            .lines()
            .map(|l| {
                let (n, t) = l.split_once(' ').expect("name TYPE");
                assert!(n.ends_with(".test") || n == "test", "{l}");
                (n.to_owned(), t.to_owned())
            })
            .collect()
    };
    for (name, t) in read(0) {
        let d = cut(&name).expect("below the apex");
        assert!(
            delegations.contains(&d),
            "referral {name} outside the zone's delegations"
        );
        assert!(["A", "AAAA", "NS"].contains(&t.as_str()));
    }
    for (name, _) in read(1) {
        let d = cut(&name).expect("below the apex");
        assert!(!delegations.contains(&d), "NXDOMAIN query {name} exists");
    }
    let (mut with, mut without, mut missing) = (0, 0, 0);
    for (name, t) in read(2) {
        assert_eq!(t, "DS");
        let d = format!("{name}.");
        if signed.contains(&d) {
            with += 1;
        } else if delegations.contains(&d) {
            without += 1;
        } else {
            missing += 1;
        }
    }
    assert!(
        with > 700 && without > 600 && missing > 200,
        "{with} {without} {missing}"
    );
    let mix = read(3);
    let nx = mix
        .iter()
        .filter(|(n, _)| cut(n).is_some_and(|d| !delegations.contains(&d) && d != "nic.test."))
        .count();
    let apex = mix.iter().filter(|(n, _)| n == "test").count();
    assert!((20..=110).contains(&nx), "mix NXDOMAIN {nx} of 2000");
    assert!(apex > 20, "mix apex {apex}");
    let spam = read(4);
    let spam_nx = spam
        .iter()
        .filter(|(n, _)| cut(n).is_some_and(|d| !delegations.contains(&d) && d != "nic.test."))
        .count();
    // One good query in five, the rest NXDOMAIN.
    assert!(
        (1560..=1640).contains(&spam_nx),
        "spamrun NXDOMAIN {spam_nx} of 2000"
    );
}

/// Applies an update stream to the set of delegations and glue names, checking that
/// each update fits the zone as it stands; returns (changes, additions, deletions).
fn apply_updates(
    text: &str,
    delegations: &mut HashSet<String>,
    glue: &mut HashSet<String>,
) -> (u64, u64, u64) {
    let origin = lode_wire::Name::parse("test.", None).expect("origin");
    let mut counts = (0, 0, 0);
    let mut msg: Vec<&str> = Vec::new();
    let mut changed_or_added = HashSet::new();
    let mut deleted = HashSet::new();
    for l in text.lines() {
        if l.starts_with(';') || l.starts_with("zone ") {
            continue;
        }
        if l != "send" {
            msg.push(l);
            continue;
        }
        let words: Vec<Vec<&str>> = msg.iter().map(|l| l.split_whitespace().collect()).collect();
        let updates: Vec<&Vec<&str>> = words.iter().filter(|w| w[0] == "update").collect();
        let first = updates.first().expect("an update");
        let name = first[2].to_owned();
        for w in &updates {
            if w[1] == "add" {
                let rtype = lode_wire::Rtype::from_mnemonic(w[4]).expect("type");
                lode_zonefile::parse_rdata(rtype, &w[5..].join(" "), &origin)
                    .unwrap_or_else(|e| panic!("{}: {e}", w.join(" ")));
            }
        }
        match (first[1], first.len()) {
            ("delete", 4) => {
                // NS set replaced: the delegation exists.
                assert!(delegations.contains(&name), "change of missing {name}");
                assert!(!deleted.contains(&name));
                changed_or_added.insert(name.clone());
                for w in &updates[1..] {
                    if w[1] == "delete" {
                        assert!(glue.remove(w[2]), "glue {} of {name} missing", w[2]);
                        assert!(w[2].ends_with(&name));
                    } else {
                        assert_eq!((w[2], w[4]), (name.as_str(), "NS"));
                        assert!(!w[5].ends_with(&name), "new servers are a provider's");
                    }
                }
                counts.0 += 1;
            }
            ("add", _) => {
                assert!(
                    delegations.insert(name.clone()),
                    "addition of existing {name}"
                );
                changed_or_added.insert(name.clone());
                for w in &updates {
                    if w[2] != name {
                        assert!(w[2].ends_with(&format!(".{name}")), "{w:?}");
                        glue.insert(w[2].to_owned());
                    }
                }
                counts.1 += 1;
            }
            ("delete", 3) => {
                assert!(delegations.remove(&name), "deletion of missing {name}");
                assert!(
                    !changed_or_added.contains(&name),
                    "{name} deleted after a change in the same stream"
                );
                deleted.insert(name.clone());
                for w in &updates[1..] {
                    assert!(glue.remove(w[2]), "glue {} of {name} missing", w[2]);
                }
                counts.2 += 1;
            }
            _ => panic!("unexpected message {msg:?}"),
        }
        msg.clear();
    }
    assert!(msg.is_empty(), "a message without send");
    counts
}

#[test]
fn update_stream_fits_the_zone_in_order() {
    let dir = Scratch::new("tld-updates");
    let mut spec = small_spec(20_000);
    spec.updates = 9_001;
    spec.glue_share = 0.2; // more in-bailiwick delegations to change and delete
    let s = generate(&spec, &dir.0).expect("generate");
    let (mut delegations, mut glue, _) = read_zone(&s.zone_file, "test");
    let before = delegations.len();
    let text = std::fs::read_to_string(&s.update_files[0]).expect("updates");
    let (c, a, d) = apply_updates(&text, &mut delegations, &mut glue);
    assert_eq!((c, a, d), (3001, 3000, 3000));
    assert_eq!(
        (c, a, d),
        (s.updates.changes, s.updates.additions, s.updates.deletions)
    );
    assert_eq!(delegations.len(), before + 3000 - 3000);
    assert!(text.contains("-r "), "pace in the header");
    // The medium stream is the same updates.
    let medium = std::fs::read_to_string(&s.update_files[1]).expect("updates");
    let body = |t: &str| {
        t.lines()
            .filter(|l| !l.starts_with(';'))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(body(&text), body(&medium));

    // With prerequisites: each message asserts what it relies on.
    let dir2 = Scratch::new("tld-prereqs");
    spec.prereqs = true;
    spec.updates = 30;
    let s = generate(&spec, &dir2.0).expect("generate");
    let text = std::fs::read_to_string(&s.update_files[0]).expect("updates");
    assert_eq!(text.matches("prereq yxrrset ").count(), 10);
    assert_eq!(text.matches("prereq nxdomain ").count(), 10);
    assert_eq!(text.matches("prereq yxdomain ").count(), 10);
}

#[test]
fn impossible_specs_are_refused() {
    let mut spec = small_spec(100);
    spec.updates = 1000;
    assert!(
        TldModel::new(&spec).is_err(),
        "more deletions than delegations"
    );
    for tld in [".", "", "-bad.", "a b.", "é."] {
        assert!(TldModel::new(&TldSpec::new(tld, 10)).is_err(), "{tld:?}");
    }
    let mut spec = small_spec(100);
    spec.ds_share = 1.5;
    assert!(TldModel::new(&spec).is_err());
    let spec = TldSpec::new("Example.COM", 10);
    assert_eq!(
        TldModel::new(&spec).expect("two labels").tld(),
        "example.com"
    );
}

#[test]
fn a_com_sized_zone_is_possible() {
    // 160 M delegations: the model sets up, and labels at the end of the zone and past it
    // are distinct from each other.
    let m = TldModel::new(&TldSpec::new("com.", 160_000_000)).expect("160 M");
    assert_eq!(m.providers(), 800_000);
    let mut seen = HashSet::new();
    for i in (159_990_000..160_010_000).chain([m.nx_index(u64::MAX)]) {
        assert!(seen.insert(label_of(&m, i)), "label {i} repeats");
        let d = m.delegation(i);
        if let Servers::Provider(rank) = d.servers {
            assert!((1..=800_000).contains(&rank));
        }
    }
}

#[test]
fn provider_servers_stay_outside_the_zone() {
    for tld in ["net.", "com.", "org."] {
        let m = TldModel::new(&TldSpec::new(tld, 10_000)).expect("model");
        let mut out = Vec::new();
        for i in 0..2000 {
            let d = m.delegation(i);
            if let Servers::Provider(_) = d.servers {
                out.clear();
                m.push_server(i, &d, 1, &mut out);
                let s = String::from_utf8(out.clone()).expect("ascii");
                assert!(!s.ends_with(&format!(".{tld}")), "{s} inside {tld}");
            }
        }
    }
}
