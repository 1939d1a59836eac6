use std::collections::HashSet;

use super::*;
use crate::gen::Scratch;

fn name_of(layout: &EnumLayout, k: u64) -> String {
    let (z, s) = layout.locate(k);
    let mut v = Vec::new();
    layout.name(z, s, &mut v);
    String::from_utf8(v).expect("ascii")
}

#[test]
fn seed_000_table_1_and_2_layouts() {
    // 5M: ten zones 0.2.1.2.1 … 9.2.1.2.1, default prefix.
    let l = EnumLayout::new(&EnumSetSpec::new(5_000_000, 10)).expect("5M layout");
    assert_eq!(l.prefix(), "1212");
    assert_eq!(l.zone_apex(0), "0.2.1.2.1.e164.arpa.");
    assert_eq!(l.zone_apex(9), "9.2.1.2.1.e164.arpa.");
    assert_eq!(name_of(&l, 0), "0.0.0.0.0.0.0.2.1.2.1.e164.arpa");
    assert_eq!(name_of(&l, 499_999), "9.9.9.9.9.4.0.2.1.2.1.e164.arpa");
    assert_eq!(name_of(&l, 4_999_999), "9.9.9.9.9.4.9.2.1.2.1.e164.arpa");

    // 500k with prefix 16461.
    let mut spec = EnumSetSpec::new(500_000, 10);
    spec.prefix = Some("16461".into());
    let l = EnumLayout::new(&spec).expect("500k layout");
    assert_eq!(l.zone_apex(0), "0.1.6.4.6.1.e164.arpa.");
    assert_eq!(l.zone_apex(9), "9.1.6.4.6.1.e164.arpa.");
    assert_eq!(name_of(&l, 0), "0.0.0.0.0.0.1.6.4.6.1.e164.arpa");
    assert_eq!(name_of(&l, 499_999), "9.9.9.9.4.9.1.6.4.6.1.e164.arpa");

    // 20M in four zones with prefix 131.
    let mut spec = EnumSetSpec::new(20_000_000, 4);
    spec.prefix = Some("131".into());
    let l = EnumLayout::new(&spec).expect("20M layout");
    assert_eq!(l.zone_apex(0), "0.1.3.1.e164.arpa.");
    assert_eq!(l.zone_apex(3), "3.1.3.1.e164.arpa.");
    assert_eq!(name_of(&l, 0), "0.0.0.0.0.0.0.0.1.3.1.e164.arpa");
    assert_eq!(name_of(&l, 19_999_999), "9.9.9.9.9.9.4.3.1.3.1.e164.arpa");
}

#[test]
fn bad_layouts_are_refused() {
    assert!(EnumLayout::new(&EnumSetSpec::new(5, 10)).is_err());
    assert!(EnumLayout::new(&EnumSetSpec::new(5, 0)).is_err());
    let mut spec = EnumSetSpec::new(5_000_000, 10);
    spec.prefix = Some("12129".into()); // leaves 5 digits for 500k per zone
    assert!(EnumLayout::new(&spec).is_err());
    spec.prefix = Some("0212".into());
    assert!(EnumLayout::new(&spec).is_err());
    spec.prefix = Some("12a".into());
    assert!(EnumLayout::new(&spec).is_err());
    let mut spec = EnumSetSpec::new(1_000_000_000_000, 1);
    spec.digits = 11;
    assert!(EnumLayout::new(&spec).is_err());
}

/// Reads a generated zone file: (apex, owners of NAPTR lines, distinct NAPTR RDATA, SOA/NS/A seen).
fn read_zone(path: &Path) -> (String, Vec<String>, HashSet<String>, [usize; 3]) {
    let text = std::fs::read_to_string(path).expect("zone file");
    let mut origin = String::new();
    let mut owners = Vec::new();
    let mut rdatas = HashSet::new();
    let mut other = [0; 3];
    for line in text.lines() {
        if line.starts_with(';') {
            continue;
        } else if let Some(o) = line.strip_prefix("$ORIGIN ") {
            origin = o.to_owned();
        } else if let Some((owner, rest)) = line.split_once(" NAPTR ") {
            owners.push(format!("{owner}.{}", origin.trim_end_matches('.')));
            rdatas.insert(rest.to_owned());
        } else if line.contains(" SOA ") {
            other[0] += 1;
        } else if line.contains(" NS ") {
            other[1] += 1;
        } else if line.contains(" A ") {
            other[2] += 1;
        }
    }
    (origin, owners, rdatas, other)
}

fn read_queries(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("query file");
    text.lines()
        .map(|l| l.strip_suffix(" NAPTR").expect("name NAPTR").to_owned())
        .collect()
}

#[test]
fn generated_set_is_exact() {
    let dir = Scratch::new("enumset");
    let mut spec = EnumSetSpec::new(1003, 4);
    spec.threads = Some(2);
    let sum = generate(&spec, &dir.0).expect("generate");
    let l = &sum.layout;
    assert_eq!(sum.zone_files.len(), 4);

    let mut all = Vec::new();
    for (z, (apex, file)) in sum.zone_files.iter().enumerate() {
        let (origin, owners, rdatas, other) = read_zone(file);
        assert_eq!(&origin, apex);
        assert_eq!(other, [1, 2, 2], "SOA, two NS, two A in {apex}");
        assert_eq!(owners.len() as u64, l.zone_records(z as u64));
        assert_eq!(rdatas.len(), owners.len(), "one distinct NAPTR per number");
        for o in &owners {
            assert!(o.ends_with(apex.trim_end_matches('.')));
            // The regexp names the number of the owner.
            let digits: String = o.split('.').take(11).collect::<Vec<_>>().concat();
            let number: String = digits.chars().rev().collect();
            assert!(rdatas
                .iter()
                .any(|r| r.contains(&format!("sip:+{number}@example.net!"))));
        }
        all.extend(owners);
    }
    assert_eq!(all.len(), 1003);
    let expected: Vec<String> = (0..1003).map(|k| name_of(l, k)).collect();
    assert_eq!(all, expected, "zone files hold the numbers in order");
    let existing: HashSet<String> = all.into_iter().collect();
    assert_eq!(existing.len(), 1003);
    // Owner names are 11 single-digit labels below e164.arpa.
    assert!(existing.iter().all(|n| n.split('.').count() == 13));

    let apexes: Vec<String> = sum
        .zone_files
        .iter()
        .map(|(a, _)| format!(".{}", a.trim_end_matches('.')))
        .collect();
    let q: Vec<Vec<String>> = sum.query_files.iter().map(|p| read_queries(p)).collect();
    assert!(q.iter().all(|f| f.len() == 1003));
    // Every existing name once, in a scattered order.
    assert_eq!(q[0].iter().cloned().collect::<HashSet<_>>(), existing);
    assert_ne!(q[0], expected);
    // Non-existing names: inside a zone, never an existing name, all distinct here.
    for n in &q[1] {
        assert!(!existing.contains(n), "{n} exists");
        assert!(
            apexes.iter().any(|a| n.ends_with(a.as_str())),
            "{n} outside"
        );
    }
    assert_eq!(q[1].iter().collect::<HashSet<_>>().len(), 1003);
    // Outside names: below no zone.
    for n in &q[2] {
        assert!(
            apexes.iter().all(|a| !n.ends_with(a.as_str())),
            "{n} inside"
        );
        assert!(n.ends_with(".e164.arpa"));
    }

    let conf = std::fs::read_to_string(&sum.knot_conf).expect("knot conf");
    assert_eq!(conf.matches("- domain: ").count(), 4);
}

#[test]
fn shared_naptr_rrsets() {
    let dir = Scratch::new("shared");
    let mut spec = EnumSetSpec::new(100, 3);
    spec.shared_naptr = Some(7);
    spec.queries = Some(10);
    let sum = generate(&spec, &dir.0).expect("generate");
    let mut rdatas = HashSet::new();
    let mut owners = 0;
    for (_, file) in &sum.zone_files {
        let (_, o, r, _) = read_zone(file);
        owners += o.len();
        rdatas.extend(r);
    }
    assert_eq!(owners, 100);
    assert_eq!(rdatas.len(), 7);
    assert!(rdatas.iter().all(|r| r.contains("!^(.*)$!sip:\\\\1@gw")));
    assert_eq!(read_queries(&sum.query_files[0]).len(), 10);
}

#[test]
fn full_zone_uses_deeper_nx_names() {
    let mut spec = EnumSetSpec::new(20, 2);
    spec.prefix = Some("1212939123".into()); // 1 zone digit, 0 left... too few
    assert!(EnumLayout::new(&spec).is_err());
    spec.digits = 12; // one suffix digit: 10 numbers fill each zone
    let l = EnumLayout::new(&spec).expect("layout");
    let mut v = Vec::new();
    l.nx_name(1, 3, &mut v);
    assert_eq!(
        String::from_utf8(v).expect("ascii"),
        "x.3.1.3.2.1.9.3.9.2.1.2.1.e164.arpa"
    );
}
