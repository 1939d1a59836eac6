//! Readable scenarios: a zone in text, a query, the sections expected (as
//! Knot DNS 3.2 answers; the byte-exact comparison is in `golden.rs`).

use std::sync::Arc;

use lode_engine::{answer, Settings, Transport, ZoneSet};
use lode_wire::{Name, NameBuf, Rtype};
use lode_zonedb::ZoneBuilder;

const PARENT: &str = "
$ORIGIN example.
$TTL 3600
@        SOA  ns hostmaster 1 7200 3600 1209600 300
@        NS   ns
ns       A    192.0.2.1
www      A    192.0.2.2
a.b.c    TXT  \"deep\"
*.wild   A    192.0.2.3
*.cw     CNAME www
alias    CNAME www
out      CNAME www.elsewhere.
tochild  CNAME host.child
dn       DNAME example.net.
long     DNAME aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc.
child    NS   ns.child
child    DS   1 13 2 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
ns.child A    192.0.2.4
mx       MX   10 www
mx       MX   20 mail.elsewhere.
";

const CHILD: &str = "
$ORIGIN child.example.
$TTL 600
@    SOA ns hostmaster 1 7200 3600 1209600 60
@    NS  ns
ns   A   192.0.2.4
host A   192.0.2.5
";

fn zones() -> ZoneSet {
    let mut set = ZoneSet::new();
    for (origin, text) in [("example.", PARENT), ("child.example.", CHILD)] {
        let name: Name = origin.parse().unwrap();
        let parsed = lode_zonefile::parse_str(text, origin, &name).unwrap();
        let mut b = ZoneBuilder::new(name);
        for (i, r) in parsed.records.into_iter().enumerate() {
            b.add(r, i as u32);
        }
        set.insert(Arc::new(b.build().unwrap().0));
    }
    set
}

fn query(name: &str, qtype: Rtype, edns: Option<(u16, u8, bool)>) -> Vec<u8> {
    let n: Name = name.parse().unwrap();
    let mut q = vec![
        0xAB,
        0xCD,
        0x01,
        0x00,
        0,
        1,
        0,
        0,
        0,
        0,
        0,
        u8::from(edns.is_some()),
    ];
    q.extend_from_slice(n.as_wire());
    q.extend_from_slice(&qtype.0.to_be_bytes());
    q.extend_from_slice(&[0, 1]);
    if let Some((size, version, dnssec)) = edns {
        q.extend_from_slice(&[0, 0, 41]);
        q.extend_from_slice(&size.to_be_bytes());
        q.extend_from_slice(&[0, version, if dnssec { 0x80 } else { 0 }, 0, 0, 0]);
    }
    q
}

/// A decoded response: rcode (with extended bits), flags, and per section
/// "owner TYPE ttl" lines.
#[derive(Debug)]
struct Reply {
    rcode: u16,
    aa: bool,
    tc: bool,
    sections: [Vec<String>; 3],
    opt: Option<(u16, u8, u16)>,
}

fn decode(m: &[u8]) -> Reply {
    let count = |i: usize| u16::from_be_bytes([m[4 + 2 * i], m[5 + 2 * i]]) as usize;
    let mut pos = 12;
    let mut name = NameBuf::new();
    for _ in 0..count(0) {
        pos = name.read_compressed(m, pos).unwrap() + 4;
    }
    let mut sections: [Vec<String>; 3] = Default::default();
    let mut opt = None;
    let mut rcode = (m[3] & 0xF) as u16;
    for (s, sec) in sections.iter_mut().enumerate() {
        for _ in 0..count(s + 1) {
            pos = name.read_compressed(m, pos).unwrap();
            let t = Rtype(u16::from_be_bytes([m[pos], m[pos + 1]]));
            let class = u16::from_be_bytes([m[pos + 2], m[pos + 3]]);
            let ttl = u32::from_be_bytes([m[pos + 4], m[pos + 5], m[pos + 6], m[pos + 7]]);
            let len = u16::from_be_bytes([m[pos + 8], m[pos + 9]]) as usize;
            pos += 10 + len;
            if t == Rtype::OPT {
                rcode |= ((ttl >> 24) as u16) << 4;
                opt = Some((class, (ttl >> 16) as u8, ttl as u16));
                continue;
            }
            sec.push(format!("{} {t} {ttl}", name.as_ref()));
        }
    }
    assert_eq!(pos, m.len(), "trailing bytes");
    Reply {
        rcode,
        aa: m[2] & 0x04 != 0,
        tc: m[2] & 0x02 != 0,
        sections,
        opt,
    }
}

fn ask(zones: &ZoneSet, name: &str, qtype: Rtype) -> Reply {
    ask_with(zones, &query(name, qtype, None), Transport::Udp)
}

fn ask_with(zones: &ZoneSet, q: &[u8], t: Transport) -> Reply {
    let mut out = vec![0u8; 65535];
    let n = answer(zones, q, &mut out, t, &Settings::default()).len;
    assert!(n >= 12, "no answer");
    assert_eq!(out[..2], q[..2]);
    decode(&out[..n])
}

#[test]
fn exact_nodata_nxdomain_and_empty_non_terminal() {
    let z = zones();
    let r = ask(&z, "WWW.example.", Rtype::A);
    assert_eq!((r.rcode, r.aa), (0, true));
    assert_eq!(r.sections[0], ["WWW.example. A 3600"]);
    let r = ask(&z, "www.example.", Rtype::TXT);
    assert_eq!(r.rcode, 0);
    assert_eq!(
        r.sections[1],
        ["example. SOA 300"],
        "negative TTL = min(SOA TTL, MINIMUM)"
    );
    let r = ask(&z, "nope.example.", Rtype::A);
    assert_eq!((r.rcode, r.aa), (3, true));
    assert_eq!(r.sections[1], ["example. SOA 300"]);
    let r = ask(&z, "b.c.example.", Rtype::A);
    assert_eq!(r.rcode, 0, "an empty non-terminal exists");
    assert_eq!(r.sections[1], ["example. SOA 300"]);
}

#[test]
fn wildcards_answer_with_the_query_name() {
    let z = zones();
    let r = ask(&z, "x.y.wild.example.", Rtype::A);
    assert_eq!(r.sections[0], ["x.y.wild.example. A 3600"]);
    let r = ask(&z, "x.wild.example.", Rtype::MX);
    assert_eq!(
        (r.rcode, r.sections[0].len()),
        (0, 0),
        "NODATA at a wildcard"
    );
    let r = ask(&z, "q.cw.example.", Rtype::A);
    assert_eq!(
        r.sections[0],
        ["q.cw.example. CNAME 3600", "www.example. A 3600"]
    );
}

#[test]
fn cname_chains_stay_in_the_zone() {
    let z = zones();
    let r = ask(&z, "alias.example.", Rtype::A);
    assert_eq!(
        r.sections[0],
        ["alias.example. CNAME 3600", "www.example. A 3600"]
    );
    let r = ask(&z, "out.example.", Rtype::A);
    assert_eq!(r.sections[0], ["out.example. CNAME 3600"]);
    // A target below a cut of this zone: a referral in the authority
    // section, even though the child zone is loaded too (Knot does this).
    let r = ask(&z, "tochild.example.", Rtype::A);
    assert!(r.aa);
    assert_eq!(r.sections[0], ["tochild.example. CNAME 3600"]);
    assert_eq!(r.sections[1], ["child.example. NS 3600"]);
    assert_eq!(r.sections[2], ["ns.child.example. A 3600"]);
}

#[test]
fn dname_synthesis_and_overflow() {
    let z = zones();
    let r = ask(&z, "a.b.dn.example.", Rtype::A);
    assert_eq!(
        r.sections[0],
        ["dn.example. DNAME 3600", "a.b.dn.example. CNAME 3600"]
    );
    let long = format!("{}.{}.long.example.", "x".repeat(63), "y".repeat(60));
    let r = ask(&z, &long, Rtype::A);
    assert_eq!(r.rcode, 6, "YXDOMAIN");
    assert_eq!(r.sections[0], ["long.example. DNAME 3600"]);
}

#[test]
fn referrals_and_ds_from_the_parent() {
    let z = zones();
    let r = ask(&z, "www.sub.child.example.", Rtype::A);
    // The child zone is loaded: it answers for names in it.
    assert_eq!((r.rcode, r.aa), (3, true));
    let r = ask(&z, "child.example.", Rtype::DS);
    assert!(r.aa);
    assert_eq!(
        r.sections[0],
        ["child.example. DS 3600"],
        "DS from the parent side"
    );
    let r = ask(&z, "host.child.example.", Rtype::A);
    assert_eq!(r.sections[0], ["host.child.example. A 600"]);
    let r = ask(&z, "mx.example.", Rtype::MX);
    assert_eq!(
        r.sections[2],
        ["www.example. A 3600"],
        "in-zone targets only"
    );
}

#[test]
fn refused_errors_and_edns() {
    let z = zones();
    let r = ask(&z, "www.example.org.", Rtype::A);
    assert_eq!((r.rcode, r.aa), (5, false));
    let r = ask_with(
        &z,
        &query("www.example.", Rtype::A, Some((4096, 0, true))),
        Transport::Udp,
    );
    assert_eq!(
        r.opt,
        Some((1232, 0, 0x8000)),
        "our size, version 0, DO echoed"
    );
    let r = ask_with(
        &z,
        &query("www.example.", Rtype::A, Some((4096, 1, false))),
        Transport::Udp,
    );
    assert_eq!((r.rcode, r.aa), (16, false), "BADVERS");
    let mut q = query("www.example.", Rtype::A, None);
    q[2] |= 0x80;
    let mut out = [0u8; 512];
    assert_eq!(
        answer(&z, &q, &mut out, Transport::Udp, &Settings::default()).len,
        0
    );
    let mut q = query("www.example.", Rtype::A, None);
    q[2] = 0x08; // IQUERY
    assert_eq!(ask_with(&z, &q, Transport::Udp).rcode, 4);
    let r = ask_with(&z, &query("example.", Rtype::AXFR, None), Transport::Tcp);
    assert_eq!(r.rcode, 9, "NOTAUTH: no transfer allowed");
}

#[test]
fn truncation_keeps_whole_rrsets() {
    let mut text = String::from(PARENT);
    for i in 0..60 {
        text.push_str(&format!("big A 10.0.0.{i}\n"));
    }
    text.push_str("tobig CNAME big\n");
    let name: Name = "example.".parse().unwrap();
    let parsed = lode_zonefile::parse_str(&text, "t", &name).unwrap();
    let mut b = ZoneBuilder::new(name);
    for (i, r) in parsed.records.into_iter().enumerate() {
        b.add(r, i as u32);
    }
    let mut z = ZoneSet::new();
    z.insert(Arc::new(b.build().unwrap().0));
    let r = ask(&z, "tobig.example.", Rtype::A);
    assert!(r.tc);
    assert_eq!(r.sections[0], ["tobig.example. CNAME 3600"]);
    let r = ask_with(&z, &query("tobig.example.", Rtype::A, None), Transport::Tcp);
    assert!(!r.tc);
    assert_eq!(r.sections[0].len(), 61);
    let r = ask_with(
        &z,
        &query("tobig.example.", Rtype::A, Some((4096, 0, false))),
        Transport::Udp,
    );
    assert!(!r.tc, "60 A records fit in 1232 bytes");
}
