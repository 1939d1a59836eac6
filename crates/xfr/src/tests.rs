//! Round trips writer → reader, condensing against applying one by one, and
//! what the reader rejects.

use lode_wire::message::{parse_query, MessageWriter, Question, Section};
use lode_wire::{Class, Name, NameBuf, Record, Rtype};
use lode_zonedb::{Changeset, Zone, ZoneBuilder};

use super::*;

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

fn soa(serial: u32) -> Record {
    let mut r = name("ns.example.").as_wire().to_vec();
    r.extend_from_slice(name("host.example.").as_wire());
    for v in [serial, 3600, 600, 86400, 300] {
        r.extend_from_slice(&v.to_be_bytes());
    }
    rec("example.", Rtype::SOA, 3600, r)
}

fn ns() -> Record {
    rec(
        "example.",
        Rtype::NS,
        3600,
        name("ns.example.").as_wire().to_vec(),
    )
}

fn a(owner: &str, last: u8, ttl: u32) -> Record {
    rec(owner, Rtype::A, ttl, vec![10, 0, 0, last])
}

fn build(records: impl IntoIterator<Item = Record>) -> Zone {
    let mut b = ZoneBuilder::new(name("example."));
    for r in records {
        b.add(r, 0);
    }
    b.build().map(|(z, _)| z).expect("valid zone")
}

/// A zone with several RRsets per node, a large TXT RRset, a delegation with
/// glue and an NSEC3-only node.
fn sample() -> Zone {
    let mut v = vec![soa(1), ns(), a("ns.example.", 1, 3600)];
    v.push(a("Www.Example.", 2, 300));
    v.push(rec("www.example.", Rtype::TXT, 300, b"\x05hello".to_vec()));
    for i in 0..40u8 {
        let mut t = vec![99u8];
        t.extend(std::iter::repeat_n(b'a' + i % 26, 99));
        t[1] = i;
        v.push(rec("big.example.", Rtype::TXT, 60, t));
    }
    v.push(rec(
        "sub.example.",
        Rtype::NS,
        3600,
        name("ns.sub.example.").as_wire().to_vec(),
    ));
    v.push(a("ns.sub.example.", 9, 3600));
    let mut nsec3 = vec![1, 0, 0, 0, 0, 20];
    nsec3.extend([7u8; 20]);
    nsec3.extend([0, 1, 0x40]);
    v.push(rec("0abc.example.", Rtype::NSEC3, 300, nsec3));
    for i in 0..50 {
        v.push(a(&format!("h{i}.example."), i as u8, 600));
    }
    v.extend((0..30).map(rrsig));
    build(v)
}

/// The `i`th of 30 RRSIGs at `www.example.`, read in with TTL 7: they cover
/// A, TXT and NSEC, with original TTLs that change from one to the next in
/// places (two runs per covered type), ~120 bytes each.
fn rrsig(i: u8) -> Record {
    let covered = [Rtype::A, Rtype::TXT, Rtype::NSEC][usize::from(i / 10)];
    let original = 100 + u32::from(i / 5) * 10;
    let mut rdata = covered.0.to_be_bytes().to_vec();
    rdata.extend([13, 2]);
    rdata.extend(original.to_be_bytes());
    rdata.extend([0, 0, 0, 2, 0, 0, 0, 1, 0, i]);
    rdata.extend(name("example.").as_wire());
    rdata.extend([i; 100]);
    rec("www.example.", Rtype::RRSIG, 7, rdata)
}

#[test]
fn rrsigs_go_out_with_their_original_ttls() {
    let zone = sample();
    for limit in [512, 1000, 65535] {
        let (msgs, t) = axfr_round_trip(&zone, limit);
        let sigs: Vec<Record> = msgs
            .iter()
            .flat_map(|m| parse_query_answers(m))
            .filter(|r| r.rtype == Rtype::RRSIG)
            .collect();
        assert_eq!(sigs.len(), 30, "limit {limit}");
        for r in &sigs {
            let original = lode_wire::rdata::rrsig_original_ttl(&r.rdata).unwrap();
            assert_eq!(r.ttl, original, "limit {limit}: {r:?}");
        }
        check_full(&zone, t);
    }
    // The zone's records (zone files, differences) say the same.
    for r in zone.records().filter(|r| r.rtype == Rtype::RRSIG) {
        assert_eq!(Some(r.ttl), lode_wire::rdata::rrsig_original_ttl(&r.rdata));
    }
}

fn question(qtype: Rtype) -> Question {
    let mut qname = NameBuf::new();
    qname.set(name("example.").as_ref());
    Question {
        qname,
        qtype,
        qclass: Class::IN,
    }
}

fn request(qtype: Rtype) -> Request {
    Request {
        id: 0x1234,
        flags: 0x0100,
        question: question(qtype),
        opt: None,
    }
}

fn sorted(mut v: Vec<Record>) -> Vec<Record> {
    v.sort_by_cached_key(|r| (r.owner.key(), r.rtype, r.rdata.clone(), r.ttl));
    v
}

/// Every message of an AXFR of `zone` within `limit`, fed to a reader.
fn axfr_round_trip(zone: &Zone, limit: usize) -> (Vec<Vec<u8>>, Transfer) {
    let mut w = AxfrWriter::new(zone, request(Rtype::AXFR));
    let mut r = XfrReader::axfr(name("example."), 0x1234);
    let mut buf = vec![0u8; 65535];
    let mut msgs = Vec::new();
    let mut done = None;
    while let Some(n) = w.next_message(&mut buf, limit) {
        assert!(n <= limit, "message of {n} bytes over the limit {limit}");
        assert!(done.is_none(), "messages after the reader's end");
        if let Progress::Done(t) = r.feed(&buf[..n]).unwrap() {
            done = Some(t);
        }
        msgs.push(buf[..n].to_vec());
    }
    assert!(w.is_complete());
    assert_eq!(w.records_sent(), zone.record_count() + 1);
    (msgs, done.expect("reader saw the end"))
}

fn check_full(zone: &Zone, t: Transfer) {
    let Transfer::Full { soa, records } = t else {
        panic!("not a full transfer: {t:?}");
    };
    assert_eq!(lode_zonedb::soa_serial(&soa), zone.serial());
    assert_eq!(sorted(records), sorted(zone.records().collect()));
}

#[test]
fn axfr_round_trips() {
    let zone = sample();
    let (msgs, t) = axfr_round_trip(&zone, 65535);
    assert_eq!(msgs.len(), 1);
    // Header: ID, QR, RD echoed, no AA (Knot 3.2), one question.
    assert_eq!(&msgs[0][..6], &[0x12, 0x34, 0x81, 0x00, 0, 1]);
    check_full(&zone, t);
}

#[test]
fn nsec3_nodes_come_last_and_soa_first_and_last() {
    let zone = sample();
    let (msgs, _) = axfr_round_trip(&zone, 65535);
    let m = parse_query_answers(&msgs[0]);
    assert_eq!(m.first().unwrap().rtype, Rtype::SOA);
    assert_eq!(m.last().unwrap().rtype, Rtype::SOA);
    assert_eq!(m[m.len() - 2].rtype, Rtype::NSEC3);
    assert_eq!(m.iter().filter(|r| r.rtype == Rtype::SOA).count(), 2);
}

/// The answer records of one message.
fn parse_query_answers(msg: &[u8]) -> Vec<Record> {
    let p = crate::reader::parse(msg).unwrap();
    let mut pos = p.answer_at;
    (0..p.answers)
        .map(|_| {
            let (r, next) = lode_wire::record::read_record(msg, pos).unwrap();
            pos = next;
            r
        })
        .collect()
}

#[test]
fn small_limits_split_messages_and_rrsets() {
    let zone = sample();
    for limit in [300, 512, 1000, 4096] {
        let (msgs, t) = axfr_round_trip(&zone, limit);
        assert!(msgs.len() > 1);
        // Every message repeats the question.
        for m in &msgs {
            assert_eq!(&m[4..6], &[0, 1]);
        }
        check_full(&zone, t);
    }
    // The 40-record TXT RRset (4 KB) cannot fit in 512 bytes: it is split.
    let (msgs, _) = axfr_round_trip(&zone, 512);
    let txt_msgs = msgs
        .iter()
        .filter(|m| {
            parse_query_answers(m)
                .iter()
                .any(|r| r.owner == name("big.example."))
        })
        .count();
    assert!(txt_msgs > 1);
}

#[test]
fn limit_too_small_fails_without_panic() {
    let zone = sample();
    let mut w = AxfrWriter::new(&zone, request(Rtype::AXFR));
    let mut buf = vec![0u8; 100];
    assert_eq!(w.next_message(&mut buf, 40), None);
    assert!(!w.is_complete());
}

#[test]
fn axfr_of_a_zone_with_a_delta() {
    let zone = sample();
    let cs = Changeset {
        soa_from: soa(1),
        soa_to: soa(2),
        removed: vec![a("h3.example.", 3, 600), a("Www.Example.", 2, 300)],
        added: vec![a("new.example.", 77, 60), a("h3.example.", 3, 900)],
    };
    let next = zone.apply(&cs).unwrap();
    let (_, t) = axfr_round_trip(&next, 1200);
    check_full(&next, t);
}

#[test]
fn axfr_of_100k_records_streams() {
    let mut v = vec![soa(7), ns(), a("ns.example.", 1, 3600)];
    for i in 0..100_000u32 {
        let b = i.to_be_bytes();
        v.push(rec(&format!("n{i}.example."), Rtype::A, 300, b.to_vec()));
    }
    let zone = build(v);
    let mut w = AxfrWriter::new(&zone, request(Rtype::AXFR));
    let mut r = XfrReader::axfr(name("example."), 0x1234).with_limit(200_000);
    let mut buf = vec![0u8; 65535];
    let mut count = 0u64;
    let mut end = None;
    while let Some(n) = w.next_message(&mut buf, 65535 - 100) {
        // Knot's 16 KiB rule: no message much beyond 16383 bytes.
        assert!(n < 16384 + 100);
        if let Progress::Done(t) = r.feed_with(&buf[..n], &mut |_| count += 1).unwrap() {
            end = Some(t);
        }
    }
    assert_eq!(count, zone.record_count());
    assert!(matches!(end, Some(Transfer::Full { records, .. }) if records.is_empty()));
    // The record limit is enforced.
    let mut w = AxfrWriter::new(&zone, request(Rtype::AXFR));
    let mut r = XfrReader::axfr(name("example."), 0x1234).with_limit(1000);
    let mut err = None;
    while let Some(n) = w.next_message(&mut buf, 65535) {
        if let Err(e) = r.feed_with(&buf[..n], &mut |_| {}) {
            err = Some(e);
            break;
        }
    }
    assert_eq!(err, Some(XfrError::TooManyRecords(1000)));
}

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random sequence of valid changesets from `start` (one A per owner,
/// TTL changes, re-additions of removed records).
fn random_changes(rng: &mut Rng, start: &[Record], steps: u32) -> Vec<Changeset> {
    let mut cur: Vec<Record> = start.to_vec();
    let mut out = Vec::new();
    for s in 0..steps {
        let mut removed = Vec::new();
        let mut added = Vec::new();
        for _ in 0..rng.below(4) {
            if cur.is_empty() {
                break;
            }
            let i = rng.below(cur.len() as u64) as usize;
            removed.push(cur.swap_remove(i));
        }
        for _ in 0..rng.below(4) {
            let owner = format!("n{}.example.", rng.below(12));
            if cur
                .iter()
                .chain(&added)
                .any(|r: &Record| r.owner == name(&owner))
            {
                continue;
            }
            let ttl = [300, 600][rng.below(2) as usize];
            added.push(a(&owner, rng.below(3) as u8, ttl));
        }
        cur.extend(added.iter().cloned());
        out.push(Changeset {
            soa_from: soa(10 + s),
            soa_to: soa(11 + s),
            removed,
            added,
        });
    }
    out
}

fn start_records() -> Vec<Record> {
    (0..6)
        .map(|i| a(&format!("n{i}.example."), 0, 300))
        .collect()
}

fn start_zone() -> Zone {
    let mut v = vec![soa(10), ns(), a("ns.example.", 1, 3600)];
    v.extend(start_records());
    build(v)
}

#[test]
fn condensed_equals_one_by_one() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..200 {
        let zone = start_zone();
        let steps = 1 + rng.below(8) as u32;
        let changes = random_changes(&mut rng, &start_records(), steps);
        let mut z = zone.clone();
        for c in &changes {
            z = z.apply(c).expect("generated changeset applies");
        }
        let one = condense(&changes).unwrap();
        assert_eq!(one.serial_from(), 10);
        assert_eq!(one.serial_to(), 10 + changes.len() as u32);
        let y = zone.apply(&one).expect("condensed changeset applies");
        assert_eq!(sorted(y.records().collect()), sorted(z.records().collect()));
        assert!(ixfr_size(&one) <= changes.iter().map(ixfr_size).sum::<u64>());
    }
    assert_eq!(condense(&[]), None);
}

#[test]
fn condense_keeps_ttl_changes_and_drops_round_trips() {
    let c1 = Changeset {
        soa_from: soa(1),
        soa_to: soa(2),
        removed: vec![a("x.example.", 1, 300), a("y.example.", 1, 300)],
        added: vec![a("x.example.", 1, 600), a("z.example.", 1, 300)],
    };
    let c2 = Changeset {
        soa_from: soa(2),
        soa_to: soa(3),
        removed: vec![a("z.example.", 1, 300)],
        added: vec![a("y.example.", 1, 300)],
    };
    let one = condense(&[c1, c2]).unwrap();
    assert_eq!(one.removed, vec![a("x.example.", 1, 300)]);
    assert_eq!(one.added, vec![a("x.example.", 1, 600)]);
}

fn ixfr_messages(changes: &[Changeset], limit: usize) -> Vec<Vec<u8>> {
    let new_soa = changes.last().unwrap().soa_to.clone();
    let mut w = IxfrWriter::new(request(Rtype::IXFR), &new_soa, changes);
    let mut buf = vec![0u8; 65535];
    let mut msgs = Vec::new();
    while let Some(n) = w.next_message(&mut buf, limit) {
        assert!(n <= limit);
        msgs.push(buf[..n].to_vec());
    }
    assert!(w.is_complete());
    let expect: u64 = changes.iter().map(|c| ixfr_size(c) - 2).sum::<u64>() + 2;
    assert_eq!(w.records_sent(), expect);
    msgs
}

fn read_all(r: &mut XfrReader, msgs: &[Vec<u8>]) -> Result<Transfer, XfrError> {
    for (i, m) in msgs.iter().enumerate() {
        if let Progress::Done(t) = r.feed(m)? {
            assert_eq!(i + 1, msgs.len(), "done before the last message");
            return Ok(t);
        }
    }
    panic!("reader wants more");
}

#[test]
fn ixfr_round_trips() {
    let mut rng = Rng(42);
    for limit in [65535, 200] {
        for _ in 0..30 {
            let steps = 1 + rng.below(5) as u32;
            let changes = random_changes(&mut rng, &start_records(), steps);
            let msgs = ixfr_messages(&changes, limit);
            let mut r = XfrReader::ixfr(name("example."), 0x1234, 10);
            assert_eq!(
                read_all(&mut r, &msgs),
                Ok(Transfer::Incremental(changes.clone()))
            );
            let one = condense(&changes).unwrap();
            let msgs = ixfr_messages(std::slice::from_ref(&one), limit);
            let mut r = XfrReader::ixfr(name("example."), 0x1234, 10);
            assert_eq!(
                read_all(&mut r, &msgs),
                Ok(Transfer::Incremental(vec![one]))
            );
        }
    }
}

#[test]
fn ixfr_chain_is_checked() {
    let c1 = Changeset {
        soa_from: soa(5),
        soa_to: soa(6),
        removed: vec![],
        added: vec![a("x.example.", 1, 300)],
    };
    let c2 = Changeset {
        soa_from: soa(7),
        soa_to: soa(8),
        removed: vec![],
        added: vec![a("y.example.", 1, 300)],
    };
    let msgs = ixfr_messages(&[c1.clone(), c2], 65535);
    let mut r = XfrReader::ixfr(name("example."), 0x1234, 5);
    let e = read_all(&mut r, &msgs).unwrap_err();
    assert_eq!(
        e.to_string(),
        "IXFR: difference 2 starts at serial 7, expected 6"
    );
    // Starting elsewhere than our serial.
    let msgs = ixfr_messages(&[c1], 65535);
    let mut r = XfrReader::ixfr(name("example."), 0x1234, 4);
    assert!(matches!(
        read_all(&mut r, &msgs),
        Err(XfrError::Chain {
            index: 1,
            from: 5,
            expected: 4
        })
    ));
}

#[test]
fn up_to_date_and_axfr_style_answers() {
    let zone = sample();
    let mut buf = vec![0u8; 1024];
    let n = soa_only(&zone, &request(Rtype::IXFR), &mut buf, 512).unwrap();
    for ours in [1, 2, 1000] {
        let mut r = XfrReader::ixfr(name("example."), 0x1234, ours);
        assert!(matches!(
            r.feed(&buf[..n]),
            Ok(Progress::Done(Transfer::UpToDate(s))) if s == soa(1)
        ));
        assert_eq!(r.feed(&buf[..n]), Err(XfrError::AfterEnd));
    }
    // A lone newer SOA waits; then an AXFR-style answer.
    let mut r = XfrReader::ixfr(name("example."), 0x1234, 0);
    assert_eq!(r.feed(&buf[..n]), Ok(Progress::More));
    let mut w = MessageWriter::new(&mut buf, 512).unwrap();
    w.set_header(0x1234, 0x8000);
    w.put_question(&question(Rtype::IXFR)).unwrap();
    for x in [a("q.example.", 1, 5), soa(1)] {
        put(&mut w, &x);
    }
    let m = w.finish();
    match r.feed(&buf[..m]).unwrap() {
        Progress::Done(Transfer::Full { soa: s, records }) => {
            assert_eq!(s, soa(1));
            assert_eq!(records, vec![soa(1), a("q.example.", 1, 5)]);
        }
        other => panic!("{other:?}"),
    }
    // AXFR-style in one stream (Knot answers IXFR with AXFR when history is short).
    let mut w = AxfrWriter::new(&zone, request(Rtype::IXFR));
    let mut r = XfrReader::ixfr(name("example."), 0x1234, 0);
    let mut big = vec![0u8; 65535];
    let mut t = None;
    while let Some(n) = w.next_message(&mut big, 700) {
        if let Progress::Done(x) = r.feed(&big[..n]).unwrap() {
            t = Some(x);
        }
    }
    check_full(&zone, t.unwrap());
}

fn put(w: &mut MessageWriter<'_>, r: &Record) {
    w.put_rrset(
        Section::Answer,
        r.owner.as_ref(),
        0,
        r.rtype,
        r.class,
        r.ttl,
        std::iter::once(&*r.rdata),
    )
    .unwrap();
}

fn message(id: u16, flags: u16, qtype: Rtype, records: &[Record]) -> Vec<u8> {
    let mut buf = vec![0u8; 4096];
    let mut w = MessageWriter::new(&mut buf, 4096).unwrap();
    w.set_header(id, flags);
    w.put_question(&question(qtype)).unwrap();
    for r in records {
        put(&mut w, r);
    }
    let n = w.finish();
    buf.truncate(n);
    buf
}

#[test]
fn reader_rejects() {
    let ok = [soa(3), a("x.example.", 1, 5), soa(3)];
    let fresh = || XfrReader::axfr(name("example."), 7);
    assert!(matches!(
        fresh().feed(&message(7, 0x8000, Rtype::AXFR, &ok)),
        Ok(Progress::Done(_))
    ));
    assert_eq!(
        fresh().feed(&message(8, 0x8000, Rtype::AXFR, &ok)),
        Err(XfrError::WrongId {
            got: 8,
            expected: 7
        })
    );
    let e = fresh()
        .feed(&message(7, 0x8005, Rtype::AXFR, &[]))
        .unwrap_err();
    assert_eq!(e, XfrError::Rcode(5));
    assert_eq!(e.to_string(), "server responded with REFUSED");
    assert_eq!(
        fresh().feed(&message(7, 0x0000, Rtype::AXFR, &ok)),
        Err(XfrError::NotResponse)
    );
    assert!(matches!(
        fresh().feed(&message(7, 0x8000, Rtype::IXFR, &ok)),
        Err(XfrError::WrongQuestion(_))
    ));
    let out = [soa(3), a("x.example.org.", 1, 5), soa(3)];
    assert_eq!(
        fresh().feed(&message(7, 0x8000, Rtype::AXFR, &out)),
        Err(XfrError::OutOfZone(name("x.example.org.")))
    );
    let mut ch = a("x.example.", 1, 5);
    ch.class = Class::CH;
    assert!(matches!(
        fresh().feed(&message(7, 0x8000, Rtype::AXFR, &[soa(3), ch])),
        Err(XfrError::WrongClass { .. })
    ));
    assert!(matches!(
        fresh().feed(&message(7, 0x8000, Rtype::AXFR, &[a("x.example.", 1, 5)])),
        Err(XfrError::Sequence(_))
    ));
    assert!(matches!(
        fresh().feed(&message(7, 0x8000, Rtype::AXFR, &[soa(3), soa(4)])),
        Err(XfrError::Sequence(_))
    ));
    // Every truncation of a good message is an error, never a panic.
    let m = message(7, 0x8000, Rtype::AXFR, &ok);
    for cut in 0..m.len() {
        assert!(fresh().feed(&m[..cut]).is_err(), "cut at {cut}");
    }
}

#[test]
fn garbage_never_panics() {
    let mut rng = Rng(0xDEAD_BEEF);
    let good = message(7, 0x8000, Rtype::IXFR, &[soa(3), soa(2), soa(3), soa(3)]);
    for i in 0..20_000 {
        let mut m = if i % 2 == 0 {
            good.clone()
        } else {
            let len = rng.below(120) as usize;
            (0..len).map(|_| rng.next() as u8).collect()
        };
        if i % 2 == 0 {
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(m.len() as u64) as usize;
                m[at] = rng.next() as u8;
            }
        }
        let mut r = XfrReader::ixfr(name("example."), 7, 2);
        let _ = r.feed(&m);
        let _ = r.feed(&m);
        let _ = parse_notify(&m);
    }
}

#[test]
fn requests_and_notify() {
    let mut buf = [0u8; 1024];
    let zone = name("example.");
    let n = soa_query(&mut buf, 0xabcd, zone.as_ref(), None);
    assert_eq!(
        &buf[..n],
        b"\xab\xcd\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x00\x00\x06\x00\x01"
    );
    let edns = Some(QueryEdns {
        udp_size: 1232,
        expire: true,
    });
    let n = axfr_query(&mut buf, 1, zone.as_ref(), edns);
    let q = parse_query(&buf[..n]).unwrap();
    assert_eq!(q.question.unwrap().qtype, Rtype::AXFR);
    assert_eq!(q.edns.unwrap().udp_size, 1232);
    assert_eq!(&buf[n - 4..n], &[0, 9, 0, 0]);
    let n = ixfr_query(&mut buf, 2, zone.as_ref(), &soa(41), None);
    let q = parse_query(&buf[..n]).unwrap();
    assert_eq!(q.question.unwrap().qtype, Rtype::IXFR);
    assert_eq!(&buf[8..10], &[0, 1]); // NSCOUNT
    assert_eq!(&buf[25..27], &[0xc0, 12]); // the SOA owner points at the question
    let n = notify(&mut buf, 3, zone.as_ref(), Some(&soa(42)), None);
    assert_eq!(&buf[2..4], &[0x24, 0x00]); // OPCODE NOTIFY, AA
    let got = parse_notify(&buf[..n]).unwrap();
    assert_eq!(
        got,
        Notify {
            id: 3,
            zone: zone.clone(),
            serial: Some(42)
        }
    );
    let n = notify(&mut buf, 4, zone.as_ref(), None, edns);
    assert_eq!(parse_notify(&buf[..n]).unwrap().serial, None);
    let n = soa_query(&mut buf, 5, zone.as_ref(), None);
    assert!(matches!(
        parse_notify(&buf[..n]),
        Err(XfrError::WrongOpcode(0))
    ));
    assert_eq!(soa_query(&mut buf[..10], 5, zone.as_ref(), None), 0);
}

/// Messages of a TCP stream (2-byte length prefixes).
fn tcp_messages(stream: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = stream;
    while let [hi, lo, tail @ ..] = rest {
        let len = u16::from_be_bytes([*hi, *lo]) as usize;
        out.push(&tail[..len]);
        rest = &tail[len..];
    }
    out
}

fn read_stream(mut r: XfrReader, msgs: &[&[u8]]) -> Transfer {
    for (i, m) in msgs.iter().enumerate() {
        if let Progress::Done(t) = r.feed(m).unwrap() {
            assert_eq!(i + 1, msgs.len());
            return t;
        }
    }
    panic!("stream ended early");
}

/// Knot 3.2.6's AXFR (testdata/README.md), read, the zone built, and
/// written again: the same bytes, message by message.
#[test]
fn axfr_bytes_match_knot() {
    let knot = tcp_messages(include_bytes!("../testdata/knot-axfr.bin"));
    assert_eq!(knot.len(), 2);
    let t = read_stream(XfrReader::axfr(name("example."), 0x1234), &knot);
    let Transfer::Full { records, .. } = t else {
        panic!("not a full transfer");
    };
    let zone = build(records);
    let mut w = AxfrWriter::new(&zone, request(Rtype::AXFR));
    let mut buf = vec![0u8; 65535];
    for k in &knot {
        let n = w.next_message(&mut buf, 65535).unwrap();
        assert_eq!(&buf[..n], *k);
    }
    assert_eq!(w.next_message(&mut buf, 65535), None);
    // The up-to-date answer of the same zone.
    let up = include_bytes!("../testdata/knot-uptodate.bin");
    let n = soa_only(&zone, &request(Rtype::IXFR), &mut buf, 65535).unwrap();
    assert_eq!(&buf[..n], &up[..]);
}

/// Knot 3.2.6's IXFR of four journal changesets, read and written again.
#[test]
fn ixfr_bytes_match_knot() {
    let knot = tcp_messages(include_bytes!("../testdata/knot-ixfr.bin"));
    let t = read_stream(XfrReader::ixfr(name("example."), 0x1234, 1), &knot);
    let Transfer::Incremental(changes) = t else {
        panic!("not incremental");
    };
    assert_eq!(changes.len(), 4);
    let new_soa = changes[3].soa_to.clone();
    let mut w = IxfrWriter::new(request(Rtype::IXFR), &new_soa, &changes);
    let mut buf = vec![0u8; 65535];
    for k in &knot {
        let n = w.next_message(&mut buf, 65535).unwrap();
        assert_eq!(&buf[..n], *k);
    }
    assert_eq!(w.next_message(&mut buf, 65535), None);
    // Condensed: `new` added, removed, added back is one addition; the TTL
    // change stays a removal and an addition.
    let one = condense(&changes).unwrap();
    let new = rec("new.example.", Rtype::A, 300, vec![10, 5, 5, 5]);
    assert!(one.added.contains(&new));
    assert!(one.removed.iter().all(|r| r.owner != name("new.example.")));
    let h7 = |v: &[Record]| {
        v.iter()
            .filter(|r| r.owner == name("h7.example."))
            .map(|r| r.ttl)
            .collect::<Vec<_>>()
    };
    assert_eq!((h7(&one.removed), h7(&one.added)), (vec![300], vec![900]));
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// A NOTIFY and an AXFR request as knotd 3.2.6 sent them (captured).
#[test]
fn requests_match_knot() {
    let edns = |expire| {
        Some(QueryEdns {
            udp_size: 1232,
            expire,
        })
    };
    let mut buf = [0u8; 512];
    let n = notify(
        &mut buf,
        0xe8d9,
        name("example.").as_ref(),
        Some(&soa(5)),
        edns(false),
    );
    let knot = hex(
        "e8d924000001000100000001076578616d706c650000060001c00c0006000100000e100020026e73c00c\
         04686f7374c00c0000000500000e1000000258000151800000012c00002904d0000000000000",
    );
    assert_eq!(&buf[..n], &knot[..]);
    let n = axfr_query(&mut buf, 0x9712, name("other.").as_ref(), edns(true));
    let knot = hex("971200000001000000000001056f746865720000fc000100002904d000000000000400090000");
    assert_eq!(&buf[..n], &knot[..]);
}
