//! Cross-check against a real Knot DNS: a sequence of UPDATE messages is sent
//! to knotd (127.0.0.1:15431) and, after each one, Knot's reply (byte for
//! byte) and Knot's zone (by AXFR) are compared with what `parse_update`,
//! `process`, `Zone::apply_rebuild` and `write_response` make of the same
//! message on Lode's side.
//!
//! Skipped, loudly, when knotd is not installed, unless LODE_REQUIRE_KNOT=1.

use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::time::Duration;

use lode_peers::{installed_or_skip, Acl, Action, Content, Kind, Server, Spec, Zone as PeerZone};

use lode_wire::{rcode, Class, Name, Record, Rtype};
use lode_zonedb::{Zone, ZoneBuilder};
use lode_zones::update::write_error;
use lode_zones::{
    encode_update, parse_update, process, read_record, write_response, SerialPolicy, UpdateError,
};

const PORT: u16 = 15431;

const ZONE: &str = "$ORIGIN example.com.
$TTL 3600
@ SOA ns1 hostmaster 100 3600 900 604800 300
@ NS ns1
@ NS ns2
ns1 A 192.0.2.1
ns2 A 192.0.2.2
www A 192.0.2.10
www A 192.0.2.11
alias CNAME www
sub.deep TXT \"x\"
mail MX 10 www
";

fn name(s: &str) -> Name {
    s.parse().unwrap()
}

/// A record: `owner ttl class type rdata` (RDATA may be empty).
fn rr(text: &str) -> Record {
    let mut it = text.splitn(5, ' ');
    let owner = name(it.next().unwrap());
    let ttl = it.next().unwrap().parse().unwrap();
    let class = Class::from_mnemonic(it.next().unwrap()).unwrap();
    let rtype = Rtype::from_mnemonic(it.next().unwrap()).unwrap();
    let rdata = match it.next() {
        Some(t) if !t.is_empty() => {
            lode_zonefile::parse_rdata(rtype, t, &name("example.com.")).unwrap()
        }
        _ => Vec::new(),
    };
    Record {
        owner,
        class,
        rtype,
        ttl,
        rdata: rdata.into(),
    }
}

fn msg(id: u16, pre: &[&str], upd: &[&str]) -> Vec<u8> {
    let pre: Vec<Record> = pre.iter().map(|l| rr(l)).collect();
    let upd: Vec<Record> = upd.iter().map(|l| rr(l)).collect();
    encode_update(id, &name("example.com."), &pre, &upd)
}

/// knotd serving [`ZONE`] on 127.0.0.1:[`PORT`], updates and transfers
/// open to 127.0.0.1; stopped by PID when dropped. None (loudly) when knotd
/// is not installed, a failure under LODE_REQUIRE_KNOT=1.
fn start_knot() -> Option<Server> {
    installed_or_skip(Kind::Knot)?;
    let spec = Spec::new(Kind::Knot, PORT)
        .acl(Acl::new("local", &[Action::Update, Action::Transfer]).from("127.0.0.1"))
        .zone(PeerZone::primary("example.com.", Content::Text(ZONE.into())).acls(&["local"]));
    let knot = Server::start(&spec).unwrap_or_else(|e| panic!("{e}"));
    assert!(axfr().is_some(), "knotd did not serve the zone by AXFR");
    Some(knot)
}

/// Sends a message over UDP and returns Knot's reply (None: no reply).
fn send(m: &[u8]) -> Option<Vec<u8>> {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(1500)))
        .unwrap();
    s.send_to(m, ("127.0.0.1", PORT)).unwrap();
    let mut buf = [0u8; 65535];
    let n = s.recv(&mut buf).ok()?;
    Some(buf[..n].to_vec())
}

/// The zone by AXFR, as canonical records (SOA once), sorted.
fn axfr() -> Option<Vec<Record>> {
    let mut s = TcpStream::connect(("127.0.0.1", PORT)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut q = vec![0xab, 0xcd, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
    q.extend_from_slice(name("example.com.").as_wire());
    q.extend_from_slice(&[0, 252, 0, 1]);
    let mut framed = (q.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&q);
    s.write_all(&framed).ok()?;
    let mut out = Vec::new();
    let mut soas = 0;
    while soas < 2 {
        let mut len = [0u8; 2];
        s.read_exact(&mut len).ok()?;
        let mut m = vec![0u8; u16::from_be_bytes(len) as usize];
        s.read_exact(&mut m).ok()?;
        if m[3] & 0xF != 0 {
            return None;
        }
        let an = u16::from_be_bytes([m[6], m[7]]);
        let mut pos = 12;
        // The question.
        let mut qn = lode_wire::NameBuf::new();
        pos = qn.read_compressed(&m, pos).ok()? + 4;
        for _ in 0..an {
            let (r, next) = read_record(&m, pos).ok()?;
            pos = next;
            if r.rtype == Rtype::SOA {
                soas += 1;
                if soas == 2 {
                    break;
                }
            }
            out.push(r);
        }
    }
    out.sort_by(|a, b| (a.owner.key(), a.rtype, &a.rdata).cmp(&(b.owner.key(), b.rtype, &b.rdata)));
    Some(out)
}

/// Lode's zone as canonical records (through the same reader as the AXFR).
fn canonical(z: &Zone) -> Vec<Record> {
    let mut out: Vec<Record> = z
        .records()
        .map(|r| {
            let mut m = vec![0u8; 12];
            r.put_uncompressed(&mut m);
            read_record(&m, 12).unwrap().0
        })
        .collect();
    out.sort_by(|a, b| (a.owner.key(), a.rtype, &a.rdata).cmp(&(b.owner.key(), b.rtype, &b.rdata)));
    out
}

/// Zone-file lines; an RRSIG's TTL is shown as its original TTL field, as
/// Knot writes RRSIGs (in AXFR and answers alike), whatever the stored TTL.
fn lines(v: &[Record]) -> Vec<String> {
    v.iter()
        .map(|r| {
            let mut r = r.clone();
            if r.rtype == Rtype::RRSIG && r.rdata.len() >= 8 {
                r.ttl = u32::from_be_bytes([r.rdata[4], r.rdata[5], r.rdata[6], r.rdata[7]]);
            }
            lode_zonefile::format_record(&r)
        })
        .collect()
}

/// Lode's reply to `m` and its zone after it.
fn lode(z: &Zone, m: &[u8]) -> (Option<Vec<u8>>, Option<Zone>) {
    let mut out = [0u8; 4096];
    let result = parse_update(m).and_then(|req| process(z, &req, SerialPolicy::Increment, 0));
    match result {
        Ok(cs) => {
            let n = write_response(m, rcode::NOERROR, &mut out);
            let next = cs.map(|cs| z.apply_rebuild(&cs).expect("the changeset applies"));
            (Some(out[..n].to_vec()), next)
        }
        Err(e) => {
            let reply = write_error(m, &e, 1232, &mut out).map(|n| out[..n].to_vec());
            if let UpdateError::Update { .. } = e {
                eprintln!("    lode: {e}");
            }
            (reply, None)
        }
    }
}

fn hex(b: &Option<Vec<u8>>) -> String {
    match b {
        Some(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
        None => "(no reply)".into(),
    }
}

/// Raw messages (built byte by byte) that the record-line form cannot say.
fn raw_cases() -> Vec<(&'static str, Vec<u8>)> {
    let base = msg(0x5000, &[], &[]);
    let mut v = Vec::new();
    // A with 5 bytes of RDATA.
    let mut m = msg(0x5001, &[], &["x.example.com. 300 IN A 1.2.3.4"]);
    let n = m.len();
    m[n - 5] = 5;
    m.push(0);
    v.push(("A with 5 octets", m));
    // Zone section of type A, with an OPT.
    let mut m = base.clone();
    m[1] = 2;
    m[12 + 13] = 1;
    m[11] = 1;
    m.extend_from_slice(&[0, 0, 41, 4, 0xd0, 0, 0, 0, 0, 0, 0]);
    v.push(("zone section of type A", m));
    // No zone section, with an OPT.
    let mut m = base[..12].to_vec();
    m[1] = 3;
    m[5] = 0;
    m[11] = 1;
    m.extend_from_slice(&[0, 0, 41, 4, 0xd0, 0, 0, 0, 0, 0, 0]);
    v.push(("no zone section", m));
    // Two zone sections.
    let mut m = base.clone();
    m[1] = 4;
    m[5] = 2;
    m.extend_from_slice(&base[12..]);
    v.push(("two zone sections", m));
    // Compressed owner and MX exchange, flags RD and CD echoed, OPT dropped.
    let mut m = base.clone();
    m[1] = 5;
    m[2] |= 1;
    m[3] = 0x10;
    m[9] = 1;
    m[11] = 1;
    m.extend_from_slice(b"\x03Mx2\xc0\x0c");
    m.extend_from_slice(&[
        0, 15, 0, 1, 0, 0, 1, 44, 0, 7, 0, 10, 2, b'M', b'X', 0xc0, 0x0c,
    ]);
    m.extend_from_slice(&[0, 0, 41, 4, 0xd0, 0, 0, 0, 0, 0, 0]);
    v.push(("compressed names", m));
    // A TSIG-less update whose prerequisite has a bad class (CH).
    // No zone section and a record that cannot be read.
    let mut m = base[..12].to_vec();
    m[1] = 7;
    m[5] = 0;
    m[9] = 1;
    m.extend_from_slice(&[1, b'x', 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 5, 1, 2, 3, 4, 5]);
    v.push(("no zone section, bad record", m));
    // A zone name written as a pointer.
    let mut m = base[..12].to_vec();
    m[1] = 8;
    m.extend_from_slice(&[0xc0, 0x0c, 0, 6, 0, 1]);
    v.push(("compressed zone name", m));
    // A TSIG record in the update section.
    let mut m = base.clone();
    m[1] = 9;
    m[9] = 1;
    m.extend_from_slice(b"\x01k\x00\x00\xfa\x00\xff\x00\x00\x00\x00");
    let mut rd = name("hmac-sha256.").as_wire().to_vec();
    rd.extend_from_slice(&[0, 0, 0, 0, 0, 1, 1, 44, 0, 0, 0, 1, 0, 0, 0, 0]);
    m.extend_from_slice(&(rd.len() as u16).to_be_bytes());
    m.extend_from_slice(&rd);
    v.push(("TSIG in the update section", m));
    // An ordinary record in the additional section: ignored.
    let mut m = msg(0x500a, &[], &["add1.example.com. 1 IN A 1.1.1.1"]);
    m[11] = 1;
    m.extend_from_slice(
        b"\x04add2\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x01\x00\x04\x01\x01\x01\x01",
    );
    v.push(("record in the additional section", m));
    // More records announced than the message could hold.
    let mut m = base.clone();
    m[1] = 0xb;
    m[9] = 200;
    v.push(("too many records", m));
    v.push((
        "prerequisite of class CH",
        msg(0x5006, &["www.example.com. 0 CH A 1.1.1.1"], &[]),
    ));
    v
}

#[test]
fn updates_like_knot() {
    let Some(_knot) = start_knot() else {
        return;
    };
    let origin = name("example.com.");
    let parsed = lode_zonefile::parse_str(ZONE, "zone", &origin).unwrap();
    let mut b = ZoneBuilder::new(origin.clone());
    for r in parsed.records {
        b.add(r, 0);
    }
    let mut zone = b.build().unwrap().0;
    assert_eq!(lines(&canonical(&zone)), lines(&axfr().unwrap()));

    let sig = |t: &str, ttl: u32| {
        format!("www.example.com. {ttl} IN RRSIG {t} 13 3 3600 20300101000000 20200101000000 1 example.com. AAAA")
    };
    let sig_a = sig("A", 300);
    let sig_aaaa = sig("AAAA", 100);
    let soa = |ttl: u32, serial: u32| {
        format!("example.com. {ttl} IN SOA ns2 hostmaster {serial} 3600 900 604800 300")
    };
    let (soa_low, soa_high) = (soa(3600, 50), soa(1800, 1000));
    type Case<'a> = (&'a str, Vec<&'a str>, Vec<&'a str>);
    let cases: Vec<Case<'_>> = vec![
        // additions
        ("add", vec![], vec!["new.example.com. 300 IN A 1.2.3.4"]),
        (
            "duplicate",
            vec![],
            vec!["new.example.com. 60 IN A 1.2.3.4"],
        ),
        (
            "new TTL",
            vec![],
            vec!["www.example.com. 60 IN A 192.0.2.12"],
        ),
        (
            "case",
            vec![],
            vec!["UPPER.Example.COM. 60 IN NS NS.Elsewhere.NET."],
        ),
        ("empty update", vec![], vec![]),
        // CNAME
        (
            "data at CNAME",
            vec![],
            vec!["alias.example.com. 300 IN A 1.1.1.1"],
        ),
        (
            "CNAME at data",
            vec![],
            vec!["www.example.com. 300 IN CNAME ns1"],
        ),
        (
            "CNAME at apex",
            vec![],
            vec!["example.com. 300 IN CNAME ns1"],
        ),
        (
            "same CNAME",
            vec![],
            vec!["alias.example.com. 3600 IN CNAME www"],
        ),
        (
            "CNAME replaced",
            vec![],
            vec!["alias.example.com. 300 IN CNAME ns1"],
        ),
        (
            "CNAME at ENT",
            vec![],
            vec!["deep.example.com. 300 IN CNAME ns1"],
        ),
        (
            "CNAME away, data in",
            vec![],
            vec![
                "deep.example.com. 0 ANY CNAME",
                "deep.example.com. 5 IN TXT \"y\"",
            ],
        ),
        // DNAME
        (
            "DNAME",
            vec![],
            vec![
                "d.example.com. 300 IN DNAME t.example.net.",
                "d.example.com. 300 IN TXT \"a\"",
            ],
        ),
        (
            "below DNAME",
            vec![],
            vec!["x.d.example.com. 300 IN A 1.1.1.1"],
        ),
        (
            "second DNAME",
            vec![],
            vec!["d.example.com. 300 IN DNAME u.example.net."],
        ),
        (
            "DNAME above data",
            vec![],
            vec!["deep.example.com. 300 IN DNAME t.example.net."],
        ),
        (
            "REFUSED before FORMERR",
            vec![],
            vec![
                "deep.example.com. 300 IN DNAME t.example.net.",
                "x.example.com. 300 NONE A 1.1.1.1",
            ],
        ),
        // NSEC3PARAM, RRSIG, NSEC
        (
            "NSEC3PARAM below apex",
            vec![],
            vec!["www.example.com. 0 IN NSEC3PARAM 1 0 0 -"],
        ),
        (
            "NSEC3PARAM",
            vec![],
            vec!["example.com. 0 IN NSEC3PARAM 1 0 0 -"],
        ),
        (
            "second NSEC3PARAM",
            vec![],
            vec!["example.com. 0 IN NSEC3PARAM 1 0 5 AB"],
        ),
        ("RRSIG", vec![], vec![sig_a.as_str()]),
        ("RRSIG other TTL", vec![], vec![sig_aaaa.as_str()]),
        (
            "NSEC",
            vec![],
            vec!["www.example.com. 300 IN NSEC zz.example.com. A RRSIG NSEC"],
        ),
        // SOA
        ("SOA lower", vec![], vec![soa_low.as_str()]),
        (
            "SOA higher",
            vec![],
            vec![soa_high.as_str(), "s.example.com. 1 IN A 1.1.1.1"],
        ),
        (
            "SOA deleted",
            vec![],
            vec!["example.com. 0 ANY SOA", "example.com. 0 ANY ANY"],
        ),
        (
            "SOA elsewhere",
            vec![],
            vec!["www.example.com. 1 IN SOA ns1 h 5000 1 1 1 1"],
        ),
        // deletions
        (
            "delete RR",
            vec![],
            vec!["www.example.com. 0 NONE A 192.0.2.10"],
        ),
        (
            "delete RR by name case",
            vec![],
            vec!["mail.example.com. 0 NONE MX 10 WWW.example.com."],
        ),
        (
            "delete RRset with TTL",
            vec![],
            vec!["new.example.com. 60 ANY A"],
        ),
        (
            "delete name",
            vec![],
            vec!["sub.deep.example.com. 0 ANY ANY"],
        ),
        (
            "delete nothing",
            vec![],
            vec![
                "nx.example.com. 0 ANY ANY",
                "www.example.com. 0 NONE A 10.9.9.9",
            ],
        ),
        ("apex TXT", vec![], vec!["example.com. 300 IN TXT \"t\""]),
        ("apex ANY ANY", vec![], vec!["example.com. 0 ANY ANY"]),
        ("apex NS set", vec![], vec!["example.com. 0 ANY NS"]),
        (
            "apex NS both",
            vec![],
            vec!["example.com. 0 NONE NS ns1", "example.com. 0 NONE NS ns2"],
        ),
        ("apex NS add", vec![], vec!["example.com. 3600 IN NS ns1"]),
        // update section checks
        (
            "NOTZONE",
            vec![],
            vec![
                "ok.example.com. 1 IN A 1.1.1.1",
                "x.example.org. 1 IN A 1.1.1.1",
            ],
        ),
        (
            "meta type",
            vec![],
            vec!["x.example.com. 1 IN AXFR \\# 1 00"],
        ),
        (
            "ANY with RDATA",
            vec![],
            vec!["x.example.com. 0 ANY A 1.1.1.1"],
        ),
        (
            "ANY of meta type",
            vec![],
            vec!["x.example.com. 0 ANY AXFR"],
        ),
        (
            "NONE with TTL",
            vec![],
            vec!["x.example.com. 1 NONE A 1.1.1.1"],
        ),
        ("NONE ANY", vec![], vec!["x.example.com. 0 NONE ANY"]),
        ("class CH", vec![], vec!["x.example.com. 1 CH A 1.1.1.1"]),
        ("empty IN RDATA", vec![], vec!["x.example.com. 1 IN A"]),
        // prerequisites
        (
            "yxrrset",
            vec!["www.example.com. 0 ANY A"],
            vec!["p1.example.com. 1 IN A 1.1.1.1"],
        ),
        (
            "yxrrset fails",
            vec!["www.example.com. 0 ANY TXT"],
            vec!["p2.example.com. 1 IN A 1.1.1.1"],
        ),
        (
            "yxrrset value",
            vec![
                "www.example.com. 0 IN A 192.0.2.11",
                "www.example.com. 0 IN A 192.0.2.12",
            ],
            vec!["p3.example.com. 1 IN A 1.1.1.1"],
        ),
        (
            "yxrrset value fails",
            vec!["www.example.com. 0 IN A 192.0.2.11"],
            vec!["p4.example.com. 1 IN A 1.1.1.1"],
        ),
        (
            "nxrrset",
            vec!["www.example.com. 0 NONE TXT"],
            vec!["p5.example.com. 1 IN A 1.1.1.1"],
        ),
        (
            "nxrrset fails",
            vec!["www.example.com. 0 NONE A"],
            vec!["p6.example.com. 1 IN A 1.1.1.1"],
        ),
        (
            "yxdomain",
            vec!["www.example.com. 0 ANY ANY"],
            vec!["p7.example.com. 1 IN A 1.1.1.1"],
        ),
        (
            "yxdomain fails",
            vec!["nx.example.com. 0 ANY ANY"],
            vec!["p8.example.com. 1 IN A 1.1.1.1"],
        ),
        (
            "nxdomain",
            vec!["nx.example.com. 0 NONE ANY"],
            vec!["p9.example.com. 1 IN A 1.1.1.1"],
        ),
        (
            "nxdomain fails",
            vec!["www.example.com. 0 NONE ANY"],
            vec!["pa.example.com. 1 IN A 1.1.1.1"],
        ),
        ("prerequisite TTL", vec!["www.example.com. 1 ANY A"], vec![]),
        (
            "prerequisite RDATA",
            vec!["www.example.com. 0 ANY A 1.1.1.1"],
            vec![],
        ),
        (
            "prerequisite NOTZONE",
            vec!["www.example.org. 0 ANY A"],
            vec![],
        ),
        (
            "prerequisites in order",
            vec![
                "www.example.com. 0 IN A 10.0.0.1",
                "www.example.com. 0 NONE ANY",
            ],
            vec![],
        ),
    ];
    let mut failures = Vec::new();
    let mut id = 0x100;
    let mut all: Vec<(String, Vec<u8>)> = Vec::new();
    for (what, pre, upd) in &cases {
        id += 1;
        all.push((what.to_string(), msg(id, pre, upd)));
    }
    all.extend(raw_cases().into_iter().map(|(w, m)| (w.to_string(), m)));
    for (what, m) in &all {
        let knot_reply = send(m);
        let (lode_reply, next) = lode(&zone, m);
        if let Some(z) = next {
            zone = z;
        }
        let knot_zone = axfr().expect("AXFR from knotd");
        let rc = |r: &Option<Vec<u8>>| {
            r.as_ref()
                .map(|r| rcode::name((r[3] & 0xF) as u16).to_string())
        };
        eprintln!(
            "{what}: knot {:?}, lode {:?}",
            rc(&knot_reply),
            rc(&lode_reply)
        );
        if knot_reply != lode_reply {
            failures.push(format!(
                "{what}: reply\n  knot {}\n  lode {}",
                hex(&knot_reply),
                hex(&lode_reply)
            ));
        }
        let (k, l) = (lines(&knot_zone), lines(&canonical(&zone)));
        if k != l {
            let only_k: Vec<_> = k.iter().filter(|x| !l.contains(x)).collect();
            let only_l: Vec<_> = l.iter().filter(|x| !k.contains(x)).collect();
            failures.push(format!(
                "{what}: zones differ\n  only knot: {only_k:?}\n  only lode: {only_l:?}"
            ));
            // Go on from Knot's zone so that one difference is reported once.
            let mut b = ZoneBuilder::new(origin.clone());
            for r in knot_zone {
                b.add(r, 0);
            }
            zone = b.build().expect("Knot's zone builds").0;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
