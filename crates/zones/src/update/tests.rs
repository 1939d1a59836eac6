use super::*;
use lode_wire::{rcode, Class, Name, Record, Rtype};
use lode_zonedb::{Changeset, Zone, ZoneBuilder};

const BASE: &str = "$ORIGIN example.com.
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
";

/// 2026-11-23T21:00:00Z.
const NOW: u64 = 1_795_467_600;

fn name(s: &str) -> Name {
    s.parse().unwrap()
}

fn zone(text: &str) -> Zone {
    let origin = name("example.com.");
    let parsed = lode_zonefile::parse_str(text, "test", &origin).unwrap();
    let mut b = ZoneBuilder::new(origin);
    for r in parsed.records {
        b.add(r, 0);
    }
    b.build().unwrap().0
}

fn base() -> Zone {
    zone(BASE)
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

fn rrs(lines: &[&str]) -> Vec<Record> {
    lines.iter().map(|l| rr(l)).collect()
}

fn run_with(
    z: &Zone,
    pre: &[&str],
    upd: &[&str],
    policy: SerialPolicy,
) -> Result<Option<Changeset>, UpdateError> {
    let msg = encode_update(1, &name("example.com."), &rrs(pre), &rrs(upd));
    let req = parse_update(&msg)?;
    process(z, &req, policy, NOW)
}

fn run(z: &Zone, pre: &[&str], upd: &[&str]) -> Result<Option<Changeset>, UpdateError> {
    run_with(z, pre, upd, SerialPolicy::Increment)
}

/// Runs an update that must succeed and change the zone; returns the new zone.
fn apply(z: &Zone, pre: &[&str], upd: &[&str]) -> Zone {
    let cs = run(z, pre, upd).unwrap().expect("a change");
    z.apply_rebuild(&cs).unwrap()
}

fn rc(r: Result<Option<Changeset>, UpdateError>) -> u16 {
    match r {
        Ok(_) => rcode::NOERROR,
        Err(e) => e.rcode().unwrap(),
    }
}

/// The zone as sorted zone-file lines, without the SOA.
fn dump(z: &Zone) -> Vec<String> {
    let mut v: Vec<String> = z
        .records()
        .filter(|r| r.rtype != Rtype::SOA)
        .map(|r| lode_zonefile::format_record(&r))
        .collect();
    v.sort();
    v
}

fn has(z: &Zone, line: &str) -> bool {
    dump(z).iter().any(|l| l == line)
}

// ---- parsing ----

#[test]
fn parse_decompresses_and_lowercases() {
    let mut m = encode_update(7, &name("example.com."), &[], &[]);
    m[9] = 1; // one update
              // Mx.Example.com. 300 IN MX 10 <pointer to the zone name>
    m.extend_from_slice(b"\x02Mx\xc0\x0c");
    m.extend_from_slice(&[0, 15, 0, 1, 0, 0, 1, 44, 0, 4, 0, 10, 0xc0, 0x0c]);
    let req = parse_update(&m).unwrap();
    assert_eq!(req.id, 7);
    let r = &req.updates[0];
    assert_eq!(r.owner.as_wire(), name("mx.example.com.").as_wire());
    assert_eq!(&r.rdata[2..], name("example.com.").as_wire());
    // RDATA names of MX are lower-cased, NSEC's are not.
    let mx = rr("a.example.com. 1 IN MX 1 MAIL.example.com.");
    let nsec = rr("a.example.com. 1 IN NSEC B.example.com. A");
    let req = parse_update(&encode_update(1, &name("example.com."), &[], &[mx, nsec])).unwrap();
    assert_eq!(
        &req.updates[0].rdata[2..],
        name("mail.example.com.").as_wire()
    );
    assert_eq!(&req.updates[1].rdata[..3], b"\x01B\x07");
}

#[test]
fn parse_errors_as_knot() {
    let zone = name("example.com.");
    let ok = encode_update(1, &zone, &[], &[rr("x.example.com. 300 IN A 1.2.3.4")]);
    // RDATA not fitting the type: FORMERR without OPT.
    let mut bad = ok.clone();
    let n = bad.len();
    bad[n - 5] = 5; // rdlength 5
    bad.push(0);
    assert!(matches!(
        parse_update(&bad),
        Err(UpdateError::Malformed { .. })
    ));
    // Empty RDATA in class IN.
    let empty = encode_update(1, &zone, &[], &[rr("x.example.com. 300 IN A")]);
    assert!(matches!(
        parse_update(&empty),
        Err(UpdateError::Malformed { .. })
    ));
    // ... but fine for NONE, ANY and unknown types.
    let fine = rrs(&[
        "x.example.com. 0 NONE A",
        "x.example.com. 0 ANY A",
        "x.example.com. 1 IN TYPE65000",
    ]);
    assert!(parse_update(&encode_update(1, &zone, &[], &fine)).is_ok());
    // Trailing bytes.
    let mut t = ok.clone();
    t.push(0);
    assert!(matches!(
        parse_update(&t),
        Err(UpdateError::Malformed { .. })
    ));
    // Truncated.
    assert!(matches!(
        parse_update(&ok[..ok.len() - 2]),
        Err(UpdateError::Malformed { .. })
    ));
    // Zone section: none → FORMERR, two → dropped, not SOA → FORMERR.
    let mut none = ok[..12].to_vec();
    none[5] = 0;
    none[9] = 0;
    assert_eq!(
        parse_update(&none).unwrap_err().rcode(),
        Some(rcode::FORMERR)
    );
    let mut two = ok.clone();
    two[5] = 2;
    assert!(matches!(parse_update(&two), Err(UpdateError::Drop { .. })));
    let mut a = ok.clone();
    a[12 + 13] = 1; // ZTYPE A
    assert!(matches!(
        parse_update(&a),
        Err(UpdateError::Query {
            rcode: rcode::FORMERR,
            ..
        })
    ));
    // OPT outside the additional section.
    let opt = Record {
        owner: Name::root(),
        class: Class(1232),
        rtype: Rtype::OPT,
        ttl: 0,
        rdata: Box::new([]),
    };
    let m = encode_update(1, &zone, &[], &[opt]);
    assert!(matches!(
        parse_update(&m),
        Err(UpdateError::Malformed { .. })
    ));
}

#[test]
fn parse_notes_opt_and_tsig() {
    let mut m = encode_update(1, &name("example.com."), &[], &[]);
    m[11] = 2;
    m.extend_from_slice(&[0, 0, 41, 4, 0xd0, 0, 0, 0, 0, 0, 0]);
    // A TSIG record (key k., hmac-sha256., no MAC).
    m.extend_from_slice(b"\x01k\x00\x00\xfa\x00\xff\x00\x00\x00\x00");
    let alg = name("hmac-sha256.");
    let mut rd = alg.as_wire().to_vec();
    rd.extend_from_slice(&[0, 0, 0, 0, 0, 1, 1, 44, 0, 0, 0, 1, 0, 0, 0, 0]);
    m.extend_from_slice(&(rd.len() as u16).to_be_bytes());
    m.extend_from_slice(&rd);
    let req = parse_update(&m).unwrap();
    assert!(req.has_opt && req.has_tsig);
    assert!(req.updates.is_empty());
}

// ---- responses ----

#[test]
fn response_as_knot_sends_it() {
    // Request flags RD, CD, AD, AA, RA: Knot keeps RD and CD.
    let mut m = encode_update(0x1234, &name("ExAmple.COM."), &[], &[]);
    m[2] |= 0x05;
    m[3] = 0xb0;
    let mut out = [0u8; 512];
    let n = write_response(&m, rcode::NOTZONE, &mut out);
    let want = "1234a91a0001000000000000074578416d706c6503434f4d0000060001";
    let got: String = out[..n].iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(got, want);
    // No zone section: header only; with an OPT for a Query error.
    let mut none = m[..12].to_vec();
    none[2] = 0x28;
    none[3] = 0;
    none[5] = 0;
    none[11] = 1;
    none.extend_from_slice(&[0, 0, 41, 4, 0xd0, 0, 0, 0, 0, 0, 0]);
    let err = parse_update(&none).unwrap_err();
    let n = write_error(&none, &err, 1232, &mut out).unwrap();
    let got: String = out[..n].iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(got, "1234a801000000000000000100002904d0000000000000");
}

// ---- serials ----

#[test]
fn serial_policies() {
    assert_eq!("increment".parse(), Ok(SerialPolicy::Increment));
    assert_eq!("unixtime".parse(), Ok(SerialPolicy::UnixTime));
    assert_eq!("dateserial".parse(), Ok(SerialPolicy::DateSerial));
    assert!("Increment".parse::<SerialPolicy>().is_err());
    assert_eq!(date_serial(NOW), 2026112300);
    assert_eq!(date_serial(951_782_400), 2000022900); // 2000-02-29
    assert_eq!(SerialPolicy::Increment.next(u32::MAX, NOW), 0);
    assert_eq!(SerialPolicy::UnixTime.next(100, NOW), NOW as u32);
    assert_eq!(
        SerialPolicy::UnixTime.next(NOW as u32 + 5, NOW),
        NOW as u32 + 6
    );
    assert_eq!(SerialPolicy::DateSerial.next(2026112300, NOW), 2026112301);
    assert_eq!(SerialPolicy::DateSerial.next(2026112205, NOW), 2026112300);
    assert_eq!(serial_cmp(1, u32::MAX), SerialOrder::Greater);
    assert_eq!(serial_cmp(0, 0x8000_0000), SerialOrder::Incomparable);
    let z = base();
    let upd = ["new.example.com. 300 IN A 1.2.3.4"];
    let cs = run_with(&z, &[], &upd, SerialPolicy::UnixTime)
        .unwrap()
        .unwrap();
    assert_eq!((cs.serial_from(), cs.serial_to()), (100, NOW as u32));
    let cs = run_with(&z, &[], &upd, SerialPolicy::DateSerial)
        .unwrap()
        .unwrap();
    assert_eq!(cs.serial_to(), 2026112300);
}

// ---- additions ----

#[test]
fn add_records() {
    let z = base();
    let cs = run(&z, &[], &["new.example.com. 300 IN A 1.2.3.4"])
        .unwrap()
        .unwrap();
    assert_eq!((cs.serial_from(), cs.serial_to()), (100, 101));
    assert_eq!(cs.removed, vec![]);
    assert_eq!(cs.added, rrs(&["new.example.com. 300 IN A 1.2.3.4"]));
    let z2 = z.apply_rebuild(&cs).unwrap();
    assert_eq!(z2.serial(), 101);
    assert!(has(&z2, "new.example.com. 300 IN A 1.2.3.4"));
    // A record already there (TTL aside) and an empty update change nothing.
    assert_eq!(
        run(&z, &[], &["www.example.com. 3600 IN A 192.0.2.10"]),
        Ok(None)
    );
    assert_eq!(run(&z, &[], &[]), Ok(None));
    // Added and deleted again in one update: nothing.
    let upd = [
        "n.example.com. 1 IN A 1.1.1.1",
        "n.example.com. 0 NONE A 1.1.1.1",
    ];
    assert_eq!(run(&z, &[], &upd), Ok(None));
}

#[test]
fn ttl_of_added_record_becomes_the_rrsets() {
    let z = base();
    let cs = run(&z, &[], &["www.example.com. 60 IN A 192.0.2.12"])
        .unwrap()
        .unwrap();
    assert_eq!(cs.removed.len(), 2);
    assert_eq!(cs.added.len(), 3);
    let z2 = z.apply_rebuild(&cs).unwrap();
    for ip in [10, 11, 12] {
        assert!(has(&z2, &format!("www.example.com. 60 IN A 192.0.2.{ip}")));
    }
    // The same RDATA with another TTL is a duplicate: ignored.
    assert_eq!(
        run(&z, &[], &["www.example.com. 60 IN A 192.0.2.10"]),
        Ok(None)
    );
    // RRSIG sets take the new TTL too.
    let sig = "www.example.com. 300 IN RRSIG A 13 3 3600 20300101000000 20200101000000 1 example.com. AAAA";
    let z3 = apply(&z, &[], &[sig]);
    let sig2 = "www.example.com. 100 IN RRSIG AAAA 13 3 3600 20300101000000 20200101000000 1 example.com. AAAA";
    let z4 = apply(&z3, &[], &[sig2]);
    // (The stored set's TTL: each RRSIG is written with its original TTL.)
    let www: lode_wire::Name = "www.example.com.".parse().unwrap();
    let node = z4.node(z4.find(www.as_ref()).unwrap());
    let sigs = node.rrset(Rtype::RRSIG).unwrap();
    assert_eq!((sigs.len(), sigs.ttl()), (2, 100));
    let written: Vec<u32> = z4
        .records()
        .filter(|r| r.rtype == Rtype::RRSIG)
        .map(|r| r.ttl)
        .collect();
    assert_eq!(written, vec![3600, 3600]);
}

#[test]
fn cname_rules() {
    let z = base();
    // Data beside a CNAME, and a CNAME beside data: ignored.
    assert_eq!(
        run(&z, &[], &["alias.example.com. 300 IN A 1.2.3.4"]),
        Ok(None)
    );
    assert_eq!(
        run(&z, &[], &["www.example.com. 300 IN CNAME ns1"]),
        Ok(None)
    );
    assert_eq!(run(&z, &[], &["example.com. 300 IN CNAME ns1"]), Ok(None));
    // The same CNAME: ignored; another target or TTL: replaced.
    assert_eq!(
        run(&z, &[], &["alias.example.com. 3600 IN CNAME www"]),
        Ok(None)
    );
    let z2 = apply(&z, &[], &["alias.example.com. 300 IN CNAME ns1"]);
    assert!(has(&z2, "alias.example.com. 300 IN CNAME ns1.example.com."));
    assert_eq!(dump(&z2).iter().filter(|l| l.contains("CNAME")).count(), 1);
    let z3 = apply(&z, &[], &["alias.example.com. 60 IN CNAME www"]);
    assert!(has(&z3, "alias.example.com. 60 IN CNAME www.example.com."));
    // A CNAME at a new name and at an empty non-terminal.
    let z4 = apply(
        &z,
        &[],
        &[
            "c.example.com. 1 IN CNAME www",
            "deep.example.com. 1 IN CNAME www",
        ],
    );
    assert!(has(&z4, "deep.example.com. 1 IN CNAME www.example.com."));
    // Deleting the CNAME then adding data in one update works.
    let z5 = apply(
        &z,
        &[],
        &[
            "alias.example.com. 0 ANY CNAME",
            "alias.example.com. 5 IN A 1.1.1.1",
        ],
    );
    assert!(has(&z5, "alias.example.com. 5 IN A 1.1.1.1"));
}

#[test]
fn dname_rules() {
    let z = base();
    let z2 = apply(
        &z,
        &[],
        &[
            "d.example.com. 300 IN DNAME target.example.net.",
            "d.example.com. 300 IN TXT \"a\"",
        ],
    );
    assert!(has(&z2, "d.example.com. 300 IN DNAME target.example.net."));
    // Another DNAME at the same name removes the old one and adds nothing.
    let z3 = apply(
        &z2,
        &[],
        &["d.example.com. 300 IN DNAME other.example.net."],
    );
    assert!(!dump(&z3).iter().any(|l| l.contains("DNAME")));
    assert!(has(&z3, "d.example.com. 300 IN TXT \"a\""));
    // Below a DNAME, or a DNAME above names: REFUSED.
    assert_eq!(
        rc(run(&z2, &[], &["x.d.example.com. 300 IN A 1.1.1.1"])),
        rcode::REFUSED
    );
    assert_eq!(
        rc(run(&z, &[], &["deep.example.com. 300 IN DNAME x.net."])),
        rcode::REFUSED
    );
    assert_eq!(
        rc(run(&z, &[], &["example.com. 300 IN DNAME x.net."])),
        rcode::REFUSED
    );
    // Once the name below is gone, the DNAME may be added.
    let z4 = apply(
        &z,
        &[],
        &[
            "sub.deep.example.com. 0 ANY ANY",
            "deep.example.com. 300 IN DNAME x.net.",
        ],
    );
    assert!(has(&z4, "deep.example.com. 300 IN DNAME x.net."));
    // The update's own changes count: a DNAME added earlier in it stops
    // data below; one removed earlier in it no longer does.
    let upd = [
        "dn.example.com. 300 IN DNAME x.net.",
        "y.dn.example.com. 300 IN A 1.1.1.1",
    ];
    assert_eq!(rc(run(&z, &[], &upd)), rcode::REFUSED);
    let z5 = apply(
        &z2,
        &[],
        &[
            "d.example.com. 0 ANY DNAME",
            "x.d.example.com. 300 IN A 1.1.1.1",
        ],
    );
    assert!(has(&z5, "x.d.example.com. 300 IN A 1.1.1.1"));
    // REFUSED is returned before a later FORMERR, as Knot checks one by one.
    let upd = [
        "x.d.example.com. 300 IN A 1.1.1.1",
        "x.example.com. 300 NONE A 1.1.1.1",
    ];
    assert_eq!(rc(run(&z2, &[], &upd)), rcode::REFUSED);
}

#[test]
fn nsec3param_soa_and_dnssec_types() {
    let z = base();
    let p = "example.com. 0 IN NSEC3PARAM 1 0 0 -";
    let z2 = apply(&z, &[], &[p]);
    assert!(has(&z2, "example.com. 0 IN NSEC3PARAM 1 0 0 -"));
    assert_eq!(
        run(&z2, &[], &["example.com. 0 IN NSEC3PARAM 1 0 5 -"]),
        Ok(None)
    );
    assert_eq!(
        rc(run(&z, &[], &["www.example.com. 0 IN NSEC3PARAM 1 0 0 -"])),
        rcode::REFUSED
    );
    // NSEC and NSEC3 are ordinary records in an unsigned zone.
    let z3 = apply(
        &z,
        &[],
        &["www.example.com. 300 IN NSEC zz.example.com. A RRSIG NSEC"],
    );
    assert!(has(
        &z3,
        "www.example.com. 300 IN NSEC zz.example.com. A RRSIG NSEC"
    ));
}

#[test]
fn soa_rules() {
    let z = base();
    let soa = |ttl: u32, serial: u32| {
        format!("example.com. {ttl} IN SOA ns2 hostmaster {serial} 3600 900 604800 300")
    };
    // Not greater: ignored.
    assert_eq!(run(&z, &[], &[&soa(3600, 99)]), Ok(None));
    assert_eq!(run(&z, &[], &[&soa(3600, 100)]), Ok(None));
    // Greater: taken as it is, TTL too, without the serial policy.
    let cs = run(&z, &[], &[&soa(1800, 200), "a.example.com. 1 IN A 1.1.1.1"])
        .unwrap()
        .unwrap();
    assert_eq!(cs.serial_to(), 200);
    assert_eq!(cs.soa_to.ttl, 1800);
    let z2 = z.apply_rebuild(&cs).unwrap();
    assert_eq!(z2.serial(), 200);
    // Several: the last one.
    let cs = run(&z, &[], &[&soa(1800, 300), &soa(1800, 250)])
        .unwrap()
        .unwrap();
    assert_eq!(cs.serial_to(), 250);
    assert!(cs.is_empty());
    // Deletions and SOAs at other names: ignored.
    let upd = [
        "example.com. 0 ANY SOA",
        "example.com. 0 NONE SOA ns1 hostmaster 100 3600 900 604800 300",
    ];
    assert_eq!(run(&z, &[], &upd), Ok(None));
    assert_eq!(
        run(&z, &[], &["www.example.com. 1 IN SOA ns1 h 500 1 1 1 1"]),
        Ok(None)
    );
    assert_eq!(
        run(
            &z,
            &[],
            &["nowhere.example.com. 1 IN SOA ns1 h 500 1 1 1 1"]
        ),
        Ok(None)
    );
}

// ---- deletions ----

#[test]
fn delete_forms() {
    let z = base();
    // One RR (stored RDATA matched case-insensitively for names).
    let z2 = apply(&z, &[], &["www.example.com. 0 NONE A 192.0.2.10"]);
    assert!(!has(&z2, "www.example.com. 3600 IN A 192.0.2.10"));
    assert!(has(&z2, "www.example.com. 3600 IN A 192.0.2.11"));
    let z3 = apply(
        &z,
        &[],
        &["alias.example.com. 0 NONE CNAME WWW.example.com."],
    );
    assert!(!dump(&z3).iter().any(|l| l.starts_with("alias")));
    // An RRset; with a TTL other than 0 too (Knot applies it).
    let z4 = apply(&z, &[], &["www.example.com. 60 ANY A"]);
    assert!(!dump(&z4).iter().any(|l| l.starts_with("www")));
    // A name.
    let z5 = apply(&z, &[], &["sub.deep.example.com. 0 ANY ANY"]);
    assert!(!dump(&z5).iter().any(|l| l.contains("deep")));
    // Nothing to delete: no change.
    let upd = [
        "nx.example.com. 0 ANY ANY",
        "www.example.com. 0 ANY TXT",
        "www.example.com. 0 NONE A 10.0.0.1",
        "nx.example.com. 0 NONE A 10.0.0.1",
    ];
    assert_eq!(run(&z, &[], &upd), Ok(None));
}

#[test]
fn apex_keeps_soa_and_ns() {
    let z = base();
    let z1 = apply(&z, &[], &["example.com. 300 IN TXT \"t\""]);
    let z2 = apply(&z1, &[], &["example.com. 0 ANY ANY"]);
    assert_eq!(z2.apex_rrset(Rtype::NS).unwrap().len(), 2);
    assert!(z2.apex_rrset(Rtype::TXT).is_none());
    assert_eq!(run(&z, &[], &["example.com. 0 ANY NS"]), Ok(None));
    // One of two NS goes; the last one stays.
    let upd = ["example.com. 0 NONE NS ns1", "example.com. 0 NONE NS ns2"];
    let z3 = apply(&z, &[], &upd);
    assert_eq!(z3.apex_rrset(Rtype::NS).unwrap().len(), 1);
    assert!(has(&z3, "example.com. 3600 IN NS ns2.example.com."));
}

// ---- checks of the update section ----

#[test]
fn update_section_checks() {
    let z = base();
    let cases: &[(&str, u16)] = &[
        ("www.example.org. 300 IN A 1.1.1.1", rcode::NOTZONE),
        ("example.com.au. 0 ANY ANY", rcode::NOTZONE),
        ("x.example.com. 300 IN AXFR", rcode::FORMERR), // empty RDATA: at parsing
        ("x.example.com. 300 IN AXFR \\# 1 00", rcode::FORMERR),
        (
            "x.example.com. 300 IN TYPE24 \\# 19 00000000000000000000000000000000000000",
            rcode::FORMERR,
        ), // SIG
        ("x.example.com. 0 ANY AXFR", rcode::FORMERR),
        ("x.example.com. 0 ANY A 1.1.1.1", rcode::FORMERR),
        ("x.example.com. 300 NONE A 1.1.1.1", rcode::FORMERR),
        ("x.example.com. 0 NONE ANY", rcode::FORMERR),
        ("x.example.com. 300 CH A 1.1.1.1", rcode::FORMERR),
        ("x.example.com. 300 IN MAILA \\# 0", rcode::NOERROR),
    ];
    for (line, want) in cases {
        assert_eq!(rc(run(&z, &[], &[line])), *want, "{line}");
    }
    // A failure anywhere leaves the zone unchanged (no changeset).
    let upd = [
        "ok.example.com. 1 IN A 1.1.1.1",
        "x.example.org. 1 IN A 1.1.1.1",
    ];
    assert_eq!(rc(run(&z, &[], &upd)), rcode::NOTZONE);
}

// ---- prerequisites ----

#[test]
fn prerequisite_forms() {
    let z = base();
    let add = ["p.example.com. 1 IN A 1.1.1.1"];
    let cases: &[(&[&str], u16)] = &[
        // yxrrset, value-independent
        (&["www.example.com. 0 ANY A"], rcode::NOERROR),
        (&["www.example.com. 0 ANY TXT"], rcode::NXRRSET),
        // yxrrset, value-dependent: the whole RRset
        (
            &[
                "www.example.com. 0 IN A 192.0.2.10",
                "www.example.com. 0 IN A 192.0.2.11",
            ],
            rcode::NOERROR,
        ),
        (
            &[
                "www.example.com. 0 IN A 192.0.2.11",
                "www.example.com. 0 IN A 192.0.2.10",
                "www.example.com. 0 IN A 192.0.2.10",
            ],
            rcode::NOERROR,
        ),
        (&["www.example.com. 0 IN A 192.0.2.10"], rcode::NXRRSET),
        (&["nx.example.com. 0 IN A 192.0.2.10"], rcode::NXRRSET),
        (
            &["alias.example.com. 0 IN CNAME WWW.example.com."],
            rcode::NOERROR,
        ),
        // nxrrset
        (&["www.example.com. 0 NONE TXT"], rcode::NOERROR),
        (&["www.example.com. 0 NONE A"], rcode::YXRRSET),
        // yxdomain
        (&["www.example.com. 0 ANY ANY"], rcode::NOERROR),
        (&["deep.example.com. 0 ANY ANY"], rcode::NXDOMAIN),
        (&["nx.example.com. 0 ANY ANY"], rcode::NXDOMAIN),
        // nxdomain
        (&["nx.example.com. 0 NONE ANY"], rcode::NOERROR),
        (&["deep.example.com. 0 NONE ANY"], rcode::NOERROR),
        (&["www.example.com. 0 NONE ANY"], rcode::YXDOMAIN),
        // malformed
        (&["www.example.com. 1 ANY A"], rcode::FORMERR),
        (&["www.example.com. 0 ANY A 1.1.1.1"], rcode::FORMERR),
        (&["www.example.com. 0 NONE A 1.1.1.1"], rcode::FORMERR),
        (&["www.example.com. 0 CH A 1.1.1.1"], rcode::FORMERR),
        (&["www.example.org. 0 ANY A"], rcode::NOTZONE),
        (&["www.example.org. 1 ANY A"], rcode::FORMERR),
        // value-dependent ones are checked after the others
        (
            &[
                "www.example.com. 0 IN A 10.0.0.1",
                "www.example.com. 0 NONE ANY",
            ],
            rcode::YXDOMAIN,
        ),
    ];
    for (pre, want) in cases {
        let got = rc(run(&z, pre, &add));
        assert_eq!(got, *want, "{pre:?}");
        if *want != rcode::NOERROR {
            continue;
        }
        assert!(run(&z, pre, &add).unwrap().is_some());
    }
}

/// Regressions found by the malformed-UPDATE system test against Knot 3.2
/// (apps/lode/tests/malformed.rs): the zone class, the EDNS version, and
/// the messages without a zone section that Knot ignores.
#[test]
fn parse_zone_class_edns_version_and_knot_drops() {
    let zone = name("example.com.");
    let ok = encode_update(1, &zone, &[], &[rr("x.example.com. 300 IN A 1.2.3.4")]);
    let class_at = 12 + 13 + 2;
    let with_class = |c: u16| {
        let mut m = ok.clone();
        m[class_at..class_at + 2].copy_from_slice(&c.to_be_bytes());
        m
    };
    let code = |m: &[u8]| parse_update(m).err().and_then(|e| e.rcode());
    assert_eq!(code(&with_class(3)), Some(rcode::NOTIMP));
    assert_eq!(code(&with_class(254)), Some(rcode::REFUSED));
    assert_eq!(code(&with_class(0xc03b)), Some(rcode::REFUSED));
    assert!(parse_update(&with_class(255)).is_ok());
    // The class is judged before the zone type.
    let mut both = with_class(4);
    both[class_at - 1] = 1;
    assert_eq!(code(&both), Some(rcode::REFUSED));
    // OPT version 1: BADVERS, answered with an OPT holding the upper bits.
    let mut v1 = ok.clone();
    v1[11] = 1;
    v1.extend_from_slice(&[0, 0, 41, 4, 0xd0, 0, 1, 0, 0, 0, 0]);
    let e = parse_update(&v1).unwrap_err();
    assert_eq!(e.rcode(), Some(rcode::BADVERS));
    let mut out = [0u8; 512];
    let n = write_error(&v1, &e, 1232, &mut out).unwrap();
    assert_eq!(out[3] & 15, 0);
    assert_eq!(&out[n - 11..n - 6], &[0, 0, 41, 4, 0xd0]);
    assert_eq!(out[n - 6], 1, "extended RCODE upper bits");
    // No zone section: a first record Knot cannot read past its owner or
    // fixed fields, too many records, or bytes after nothing: dropped.
    let mut none = ok.clone();
    none.drain(12..12 + 13 + 4);
    none[5] = 0;
    assert_eq!(code(&none), Some(rcode::FORMERR));
    let mut bad_owner = none.clone();
    bad_owner[12] = 0x80;
    assert!(matches!(
        parse_update(&bad_owner),
        Err(UpdateError::Drop { .. })
    ));
    let mut cut = none.clone();
    cut.truncate(none.len() - 2);
    assert!(matches!(parse_update(&cut), Err(UpdateError::Drop { .. })));
    let mut trailing = ok[..12].to_vec();
    trailing[5] = 0;
    trailing[9] = 0;
    trailing.push(0);
    assert!(matches!(
        parse_update(&trailing),
        Err(UpdateError::Drop { .. })
    ));
    // ... but RDATA that does not fit is FORMERR (Knot read the header).
    let mut bad_rdata = none.clone();
    let n = bad_rdata.len();
    bad_rdata[n - 5] = 3;
    bad_rdata.pop();
    assert!(matches!(
        parse_update(&bad_rdata),
        Err(UpdateError::Malformed { .. })
    ));
}
