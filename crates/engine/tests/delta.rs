//! Answers from a zone version with a delta are byte for byte those of the
//! same contents built anew: for every golden query and for queries at and
//! around the changed names.

mod common;

use lode_engine::{answer, Settings, Transport};

fn query(name: &str, qtype: u16, dnssec: bool) -> Vec<u8> {
    let mut q = vec![
        0x12,
        0x34,
        0x00,
        0x00,
        0,
        1,
        0,
        0,
        0,
        0,
        0,
        u8::from(dnssec),
    ];
    for label in name.trim_end_matches('.').split('.') {
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.push(0);
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&1u16.to_be_bytes());
    if dnssec {
        q.extend_from_slice(&[0, 0, 41, 4, 208, 0, 0, 0x80, 0, 0, 0]);
    }
    q
}

#[test]
fn delta_answers_like_a_fresh_build() {
    let zones = common::load_zones();
    let (delta, rebuilt) = common::changed_zones(&zones);
    let mut queries: Vec<Vec<u8>> = common::golden_queries()
        .into_iter()
        .map(|(_, q)| q)
        .collect();
    for z in zones.iter() {
        let o = z.origin().to_string();
        for l in [
            "",
            "new1.",
            "deep.",
            "b.deep.",
            "a.b.deep.",
            "x.a.b.deep.",
            "new2.b.deep.",
            "wild.",
            "x.wild.",
            "y.x.wild.",
            "cut.",
            "ns.cut.",
            "www.cut.",
            "zz.",
            "www.",
            "a.",
            "ns1.",
        ] {
            for (t, dnssec) in [
                (1, false),
                (16, true),
                (28, false),
                (2, false),
                (6, true),
                (43, true),
            ] {
                queries.push(query(&format!("{l}{o}"), t, dnssec));
            }
        }
    }
    let settings = Settings::default();
    let (mut a, mut b) = (vec![0u8; 65535], vec![0u8; 65535]);
    let mut compared = 0;
    for q in &queries {
        for t in [Transport::Udp, Transport::Tcp] {
            let na = answer(&delta, q, &mut a, t, &settings).len;
            let nb = answer(&rebuilt, q, &mut b, t, &settings).len;
            assert_eq!(a[..na], b[..nb], "query {q:02x?} over {t:?}");
            compared += 1;
        }
    }
    assert!(compared > 1000, "{compared}");
}
