use super::*;
use lode_wire::Record;

fn name(s: &str) -> Name {
    s.parse().unwrap()
}

fn rec(owner: &str, rtype: Rtype, ttl: u32, rdata: Vec<u8>) -> Record {
    Record {
        owner: name(owner),
        class: Class::IN,
        rtype,
        ttl,
        rdata: rdata.into(),
    }
}

fn soa(minimum: u32) -> Vec<u8> {
    let mut r = name("ns.example.").as_wire().to_vec();
    r.extend_from_slice(name("host.example.").as_wire());
    for v in [1u32, 3600, 600, 86400, minimum] {
        r.extend_from_slice(&v.to_be_bytes());
    }
    r
}

fn ns(target: &str) -> Vec<u8> {
    name(target).as_wire().to_vec()
}

fn base() -> ZoneBuilder {
    let mut b = ZoneBuilder::new(name("example."));
    b.add(rec("example.", Rtype::SOA, 7200, soa(300)), 0);
    b.add(rec("example.", Rtype::NS, 3600, ns("ns.example.")), 1);
    b.add(rec("ns.example.", Rtype::A, 3600, vec![192, 0, 2, 1]), 2);
    b
}

#[test]
fn empty_nonterminals_and_lookup() {
    let mut b = base();
    b.add(rec("a.b.c.example.", Rtype::A, 60, vec![1, 2, 3, 4]), 3);
    b.add(rec("x.c.example.", Rtype::A, 60, vec![1, 2, 3, 4]), 4);
    let (z, warnings) = b.build().unwrap();
    assert!(warnings.is_empty());
    assert_eq!(z.negative_ttl(), 300);
    assert_eq!(z.serial(), 1);
    // apex, c (ENT), b.c (ENT), a.b.c, x.c, ns
    assert_eq!(z.node_count(), 6);
    let c = z.find(name("C.example.").as_ref()).unwrap();
    assert!(z.node(c).is_empty_nonterminal());
    assert!(z.find(name("b.c.example.").as_ref()).is_some());
    match z.lookup(name("q.b.c.example.").as_ref()) {
        Lookup::NotFound {
            closest_encloser, ..
        } => assert_eq!(
            z.node(closest_encloser).owner(),
            name("b.c.example.").as_ref()
        ),
        other => panic!("{other:?}"),
    }
    match z.lookup(name("zzz.example.").as_ref()) {
        Lookup::NotFound {
            closest_encloser,
            predecessor,
        } => {
            assert_eq!(closest_encloser, z.apex_id());
            assert_eq!(z.node(predecessor).owner(), name("ns.example.").as_ref());
        }
        other => panic!("{other:?}"),
    }
    match z.lookup(name("d.a.b.c.example.").as_ref()) {
        Lookup::NotFound {
            closest_encloser, ..
        } => assert_eq!(
            z.node(closest_encloser).owner(),
            name("a.b.c.example.").as_ref()
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn cuts_dnames_and_wildcards() {
    let mut b = base();
    b.add(rec("sub.example.", Rtype::NS, 60, ns("ns.sub.example.")), 3);
    b.add(rec("ns.sub.example.", Rtype::A, 60, vec![1, 2, 3, 4]), 4);
    b.add(rec("d.example.", Rtype::DNAME, 60, ns("other.")), 5);
    b.add(rec("*.w.example.", Rtype::A, 60, vec![1, 2, 3, 4]), 7);
    let (z, _) = b.build().unwrap();
    let sub = z.find(name("sub.example.").as_ref()).unwrap();
    assert!(z.node(sub).is_delegation());
    assert_eq!(z.shadow(sub), None);
    let glue = z.find(name("ns.sub.example.").as_ref()).unwrap();
    assert_eq!(z.shadow(glue), Some(sub));
    let d = z.find(name("d.example.").as_ref()).unwrap();
    assert!(z.node(d).flags().contains(NodeFlags::DNAME));
    let w = z.find(name("w.example.").as_ref()).unwrap();
    let star = z.wildcard_child(w).unwrap();
    assert_eq!(z.node(star).owner().to_string(), "*.w.example.");
    assert_eq!(z.wildcard_child(z.apex_id()), None);
}

#[test]
fn checks_report_errors() {
    let mut b = ZoneBuilder::new(name("example."));
    b.add(rec("example.", Rtype::NS, 3600, ns("ns.example.")), 0);
    b.add(rec("other.", Rtype::A, 3600, vec![1, 2, 3, 4]), 1);
    b.add(rec("c.example.", Rtype::CNAME, 3600, ns("x.")), 2);
    b.add(rec("c.example.", Rtype::A, 3600, vec![1, 2, 3, 4]), 3);
    b.add(rec("t.example.", Rtype::A, 60, vec![1, 2, 3, 4]), 4);
    b.add(rec("t.example.", Rtype::A, 120, vec![1, 2, 3, 5]), 5);
    let problems = b.build().unwrap_err();
    let text: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    let has = |s: &str| text.iter().any(|t| t.contains(s));
    assert!(has("no SOA"), "{text:?}");
    assert!(has("outside the zone"), "{text:?}");
    assert!(has("CNAME beside other data"), "{text:?}");
    assert!(has("missing glue"), "{text:?}");
    assert!(has("warning: t.example. A: TTL 120"), "{text:?}");
    let outside = problems
        .iter()
        .find(|p| p.message.contains("outside"))
        .unwrap();
    assert_eq!(outside.tag, Some(1));
}

#[test]
fn data_below_dname_is_refused() {
    let mut b = base();
    b.add(rec("d.example.", Rtype::DNAME, 60, ns("other.")), 3);
    b.add(rec("x.d.example.", Rtype::A, 60, vec![1, 2, 3, 4]), 4);
    let problems = b.build().unwrap_err();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].tag, Some(4));
    assert!(problems[0]
        .message
        .contains("below the DNAME at d.example."));
}

#[test]
fn last_ttl_wins_and_duplicates_go() {
    let mut b = base();
    b.add(rec("t.example.", Rtype::A, 300, vec![1, 2, 3, 9]), 3);
    b.add(rec("t.example.", Rtype::A, 100, vec![1, 2, 3, 4]), 4);
    b.add(rec("t.example.", Rtype::A, 100, vec![1, 2, 3, 4]), 5);
    let (z, warnings) = b.build().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].tag, Some(4));
    let t = z.node(z.find(name("t.example.").as_ref()).unwrap());
    let a = t.rrset(Rtype::A).unwrap();
    assert_eq!(a.ttl(), 100);
    let rdatas: Vec<&[u8]> = a.rdatas().collect();
    assert_eq!(rdatas, vec![&[1u8, 2, 3, 4][..], &[1, 2, 3, 9][..]]);
}

#[test]
fn second_soa_is_named() {
    let mut b = base();
    b.add(rec("example.", Rtype::SOA, 7200, soa(60)), 7);
    let problems = b.build().unwrap_err();
    let p = problems
        .iter()
        .find(|p| p.message.contains("more than one SOA"))
        .unwrap();
    assert_eq!(p.tag, Some(7));
}

#[test]
fn zoneset_most_specific() {
    let (parent, _) = base().build().unwrap();
    let mut b = ZoneBuilder::new(name("sub.example."));
    b.add(rec("sub.example.", Rtype::SOA, 60, soa(60)), 0);
    b.add(rec("sub.example.", Rtype::NS, 60, ns("ns.other.")), 1);
    let (child, _) = b.build().unwrap();
    let mut set = ZoneSet::new();
    set.insert(Arc::new(parent));
    set.insert(Arc::new(child));
    let find = |s: &str| {
        set.find_zone(name(s).as_ref())
            .map(|z| z.origin().to_string())
    };
    assert_eq!(find("a.SUB.example."), Some("sub.example.".into()));
    assert_eq!(find("sub.example."), Some("sub.example.".into()));
    assert_eq!(find("x.example."), Some("example.".into()));
    assert_eq!(find("example."), Some("example.".into()));
    assert_eq!(find("com."), None);
    assert_eq!(find("."), None);
}

use std::sync::Arc;
