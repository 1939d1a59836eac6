//! `bench update` against a real Knot DNS (127.0.0.1:15850): a TSIG-signed UPDATE
//! stream while queries run, then the zone is checked name by name: the added name
//! answers, the deleted one is gone, the changed one holds the new record. An
//! unsigned update must be refused (NOTAUTH). Skipped when knotd is not installed.

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;
use common::{start_knot, Scratch};
use lode_peers::{installed_or_skip, Acl, Action, Kind, Server, Spec};

use lode_bench::gen::enumset::{generate, EnumSetSpec, EnumSetSummary};
use lode_bench::query::{check_reply, Expect, QuerySet, Verdict};
use lode_bench::rate::{RateConfig, Tester};
use lode_bench::update::{during_updates, run_stream, UpdateConfig, UpdateOp, UpdatePlan};
use lode_tsig::Key;
use lode_wire::{Name, Rtype};

const PORT: u16 = 15850;
const SECRET: &str = "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0";

fn start_update_knot(set: &EnumSetSummary) -> Server {
    let spec = Spec::new(Kind::Knot, PORT)
        .key(lode_peers::Key::new("upd.key", "hmac-sha256", SECRET))
        .acl(
            Acl::new("upd", &[Action::Update])
                .from("127.0.0.1")
                .key("upd.key"),
        );
    start_knot(spec, set, |z| z.acls(&["upd"]))
}

/// Asks `name`/`rtype` once (retrying for up to 5 s) and returns the reply.
fn ask(server: SocketAddr, name: &Name, rtype: Rtype) -> Vec<u8> {
    let mut set = QuerySet::default();
    set.push(name, rtype, false);
    let sock = UdpSocket::bind("127.0.0.1:0").expect("socket");
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        let _ = sock.send_to(set.get(0), server);
        if let Ok((n, _)) = sock.recv_from(&mut buf) {
            if check_reply(&buf[..n], set.question(0), Expect::Any) == Verdict::Valid {
                return buf[..n].to_vec();
            }
        }
    }
    panic!("no reply for {name}");
}

fn rcode(reply: &[u8]) -> u8 {
    reply[3] & 0x0F
}

fn ancount(reply: &[u8]) -> u16 {
    u16::from_be_bytes([reply[6], reply[7]])
}

#[test]
fn signed_updates_under_query_load_against_knot() {
    if installed_or_skip(Kind::Knot).is_none() {
        return;
    }
    let scratch = Scratch::new("upd");
    let dir = &scratch.0;
    let mut spec = EnumSetSpec::new(600, 2);
    spec.threads = Some(1);
    let set = generate(&spec, &dir.join("zones")).expect("generate");
    let knot = start_update_knot(&set);
    let server: SocketAddr = ([127, 0, 0, 1], PORT).into();

    let zones: Vec<(Name, PathBuf)> = set
        .zone_files
        .iter()
        .map(|(apex, f)| (apex.parse().expect("apex"), f.clone()))
        .collect();
    let refs: Vec<(Name, &Path)> = zones
        .iter()
        .map(|(n, f)| (n.clone(), f.as_path()))
        .collect();
    let mut plan = UpdatePlan::from_files(&refs, 60).expect("plan");
    let queries = plan.queries(usize::MAX, false);
    // Wait until knotd answers.
    let first =
        Name::from_wire(&queries.question(0)[..queries.question(0).len() - 4]).expect("name");
    assert_eq!(
        ancount(&ask(server, &first, Rtype::NAPTR)),
        1,
        "knotd ready"
    );

    let key = Key::parse_spec(&format!("hmac-sha256:upd.key:{SECRET}")).expect("key");
    let mut cfg = UpdateConfig {
        server,
        rate: 100.0,
        count: 1,
        first: 0,
        timeout: Duration::from_secs(3),
        key: None,
    };
    // Unsigned: refused.
    let never = std::sync::atomic::AtomicBool::new(false);
    let unsigned = run_stream(&cfg, &mut plan, &never, Duration::from_secs(5)).expect("probe");
    assert_eq!(unsigned.rcodes[9], 1, "NOTAUTH: {unsigned:?}");
    assert!(unsigned.refusal().expect("refused").contains("NOTAUTH"));

    // Signed: 30 updates at 100/s while 0.5 s of queries run.
    cfg.key = Some(key);
    cfg.count = 30;
    let mut rcfg = RateConfig::new(server);
    rcfg.ports = 16;
    rcfg.duration = Duration::from_millis(500);
    rcfg.max_behind = 1.0;
    let mut tester = Tester::new(rcfg, Arc::new(queries)).expect("tester");
    let (step, updates) = during_updates(&cfg, &mut plan, Duration::from_secs(10), || {
        tester.step(1000)
    });
    let step = step.expect("query step");
    let updates = updates.expect("update stream");
    eprintln!("{step:?}\n{updates:?}");
    assert_eq!(step.wrong, 0, "untouched names keep their answers");
    assert!(step.valid > 0);
    assert!(
        updates.sent > 0 && updates.ok() == updates.sent,
        "{updates:?}"
    );
    assert!(updates.latency_us[0] <= updates.latency_us[1]);

    // The zone changed exactly as planned (updates 0, 1, 2: add, delete, change).
    let Some((_, UpdateOp::Add { owner: added, .. })) = plan.op(0) else {
        panic!("op 0 is an add")
    };
    let r = ask(server, &added, Rtype::NAPTR);
    assert_eq!((rcode(&r), ancount(&r)), (0, 1), "{added} added");
    let Some((_, UpdateOp::Delete { owner: deleted })) = plan.op(1) else {
        panic!("op 1 is a delete")
    };
    assert_eq!(
        rcode(&ask(server, &deleted, Rtype::NAPTR)),
        3,
        "{deleted} deleted"
    );
    let Some((_, UpdateOp::Change { owner: changed, .. })) = plan.op(2) else {
        panic!("op 2 is a change")
    };
    let r = ask(server, &changed, Rtype::NAPTR);
    assert_eq!(ancount(&r), 1);
    assert!(
        r.windows(b"sip:update2@".len())
            .any(|w| w == b"sip:update2@"),
        "{changed} holds the new NAPTR"
    );
    drop(knot);
}
