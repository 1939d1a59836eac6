use super::*;

const ZONE: &str = "$ORIGIN 0.1.e164.arpa.\n$TTL 60\n\
@ SOA ns hostmaster 1 3600 600 86400 60\n\
@ NS ns\n\
ns A 192.0.2.1\n";

/// A zone with `n` numbers `d.0.1.e164.arpa`, `1.d.0.1…` (one NAPTR each).
fn zone(n: usize) -> (Name, Vec<Record>) {
    let apex: Name = "0.1.e164.arpa.".parse().expect("apex");
    let mut text = ZONE.to_owned();
    for i in 0..n {
        text.push_str(&format!(
            "{}.{} NAPTR 100 10 \"u\" \"E2U+sip\" \"!^.*$!sip:{i}@x!\" .\n",
            i % 10,
            i / 10
        ));
    }
    let parsed = lode_zonefile::parse_str(&text, "test.zone", &apex).expect("zone");
    (apex, parsed.records)
}

#[test]
fn mix_is_one_third_each_with_exact_names() {
    let (apex, records) = zone(60);
    let owners: HashSet<Name> = records.iter().map(|r| r.owner.to_lowercase()).collect();
    let mut plan = UpdatePlan::from_records(vec![(apex.clone(), records)], 30).expect("plan");
    assert_eq!(
        plan.untouched_len(),
        60 - 20,
        "20 names reserved for 30 updates"
    );
    let (mut adds, mut dels, mut changes) = (0, 0, 0);
    let mut touched = HashSet::new();
    let mut added = HashSet::new();
    for i in 0..30 {
        let (z, op) = plan.op(i).expect("op");
        assert_eq!(z, 0);
        match op {
            UpdateOp::Add { owner, rtype, .. } => {
                assert_eq!(i % 3, 0);
                adds += 1;
                assert_eq!(rtype, Rtype::NAPTR);
                assert!(!owners.contains(&owner.to_lowercase()), "{owner} exists");
                assert!(owner.as_ref().is_strictly_below(&apex.as_ref()));
                assert!(added.insert(owner.to_lowercase()), "{owner} added twice");
            }
            UpdateOp::Delete { owner } => {
                assert_eq!(i % 3, 1);
                dels += 1;
                assert!(owners.contains(&owner.to_lowercase()));
                assert!(touched.insert(owner.to_lowercase()));
            }
            UpdateOp::Change { owner, rtype, .. } => {
                assert_eq!(i % 3, 2);
                changes += 1;
                assert_eq!(rtype, Rtype::NAPTR);
                assert!(owners.contains(&owner.to_lowercase()));
                assert!(touched.insert(owner.to_lowercase()));
            }
        }
    }
    assert_eq!((adds, dels, changes), (10, 10, 10));
    // Neither the apex nor the NS target is ever deleted or changed, nor queried.
    for o in &touched {
        assert_ne!(o, &apex);
        assert_ne!(o.to_string(), "ns.0.1.e164.arpa.");
    }
    // Queries cover exactly the untouched names.
    let q = plan.queries(usize::MAX, false);
    assert_eq!(q.len(), 40);
    for i in 0..q.len() {
        let qname = Name::from_wire(&q.question(i)[..q.question(i).len() - 4]).expect("name");
        assert!(!touched.contains(&qname.to_lowercase()));
        assert!(owners.contains(&qname.to_lowercase()));
    }
    // The first add is a digit sibling of an existing name, ENUM-like.
    let (_, first) = plan.op(0).expect("op 0 again");
    let UpdateOp::Add { owner, .. } = first else {
        panic!("op 0 is an add")
    };
    assert_eq!(
        owner.as_ref().label_count(),
        6,
        "a digit sibling, not a new label"
    );
}

#[test]
fn too_many_updates_for_the_zone() {
    let (apex, records) = zone(10);
    assert!(matches!(
        UpdatePlan::from_records(vec![(apex, records)], 30),
        Err(UpdateError::Config(_))
    ));
}

#[test]
fn update_messages() {
    let zone: Name = "0.1.e164.arpa.".parse().expect("zone");
    let owner: Name = "5.0.1.e164.arpa.".parse().expect("owner");
    let m = update_message(
        0x1234,
        &zone,
        &UpdateOp::Delete {
            owner: owner.clone(),
        },
    );
    let mut want = vec![0x12, 0x34, 0x28, 0, 0, 1, 0, 0, 0, 1, 0, 0];
    want.extend_from_slice(zone.as_wire());
    want.extend_from_slice(&[0, 6, 0, 1]);
    want.extend_from_slice(owner.as_wire());
    want.extend_from_slice(&[0, 255, 0, 255, 0, 0, 0, 0, 0, 0]);
    assert_eq!(m, want);
    let m = update_message(
        1,
        &zone,
        &UpdateOp::Change {
            owner: owner.clone(),
            rtype: Rtype::A,
            rdata: vec![10, 0, 0, 1],
        },
    );
    assert_eq!(&m[8..10], &[0, 2], "UPCOUNT 2: delete RRset + add");
    assert!(m.ends_with(&[0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 10, 0, 0, 1]));
}

/// An UPDATE signed the way `run_stream` signs it passes the server-side check
/// (the TSIG layout and MAC are tested in lode-tsig).
#[test]
fn signed_update_verifies() {
    let key = lode_tsig::Key::parse_spec("hmac-sha512:upd.key:c2VjcmV0").expect("key");
    let zone: Name = "example.".parse().expect("zone");
    let mut m = update_message(
        7,
        &zone,
        &UpdateOp::Delete {
            owner: "a.example.".parse().expect("owner"),
        },
    );
    lode_tsig::sign_request_vec(&mut m, &key, 1_700_000_000).expect("sign");
    let mut keys = lode_tsig::Keys::new();
    keys.insert(key).expect("ring");
    assert!(matches!(
        lode_tsig::verify_request(&m, &keys, 1_700_000_000),
        lode_tsig::Verified::Signed(_)
    ));
}

#[test]
fn refusal_is_reported() {
    let mut r = UpdateResult {
        sent: 10,
        ..UpdateResult::default()
    };
    r.rcodes[4] = 10;
    assert!(r.refusal().expect("refused").contains("NOTIMP"));
    r.rcodes[0] = 1;
    assert!(r.refusal().is_none());
    let silent = UpdateResult {
        sent: 3,
        timeouts: 3,
        ..UpdateResult::default()
    };
    assert!(silent.refusal().expect("silent").contains("no reply"));
}

#[test]
fn stream_against_a_server_that_says_notimp() {
    // A tiny responder answering NOTIMP to everything, as Lode does today.
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
    sock.set_read_timeout(Some(Duration::from_millis(50)))
        .expect("timeout");
    let addr = sock.local_addr().expect("addr");
    let stop = AtomicBool::new(false);
    let (apex, records) = zone(200);
    let mut plan = UpdatePlan::from_records(vec![(apex, records)], 60).expect("plan");
    let cfg = UpdateConfig {
        server: addr,
        rate: 500.0,
        count: 60,
        first: 0,
        timeout: Duration::from_millis(500),
        key: None,
    };
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            let mut buf = [0u8; 512];
            while !stop.load(Ordering::Relaxed) {
                if let Ok((n, peer)) = sock.recv_from(&mut buf) {
                    buf[2] |= 0x80;
                    buf[3] = (buf[3] & 0xF0) | 4;
                    let _ = sock.send_to(&buf[..n], peer);
                }
            }
        });
        let never = AtomicBool::new(false);
        let r = run_stream(&cfg, &mut plan, &never, Duration::from_secs(5));
        stop.store(true, Ordering::Relaxed);
        r
    })
    .expect("stream");
    assert!(r.refused_early, "{r:?}");
    assert!(r.sent < 60, "stopped early: {r:?}");
    assert!(r.rcodes[4] >= 10);
    assert!(r.refusal().expect("refusal").contains("NOTIMP"));
}
