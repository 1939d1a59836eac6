//! The instruments against a real Knot DNS: a generated 1k-record ENUM set loaded
//! into a throwaway knotd (127.0.0.1:15650), a short rate search and a short client
//! ramp. Asserts only that everything runs and measures something (a noisy 2-core
//! machine must not fail it); skipped when knotd is not installed.

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;
use common::{start_knot, Scratch};
use lode_peers::{installed_or_skip, Kind, Server, Spec};

use lode_bench::clients::{run_step, ClientsConfig};
use lode_bench::gen::enumset::{generate, EnumSetSpec};
use lode_bench::query::{check_reply, Expect, QuerySet, Verdict};
use lode_bench::rate::{RateConfig, Tester};

const PORT: u16 = 15650;

fn start_enum_knot(dir: &Path) -> Server {
    let mut spec = EnumSetSpec::new(1000, 2);
    spec.threads = Some(1);
    let set = generate(&spec, &dir.join("zones")).expect("generate the ENUM set");
    start_knot(Spec::new(Kind::Knot, PORT), &set, |z| z.journal(false))
}

/// Waits until the server answers the first existing name (at most 15 s).
fn wait_ready(server: SocketAddr, queries: &QuerySet) -> bool {
    let sock = UdpSocket::bind("127.0.0.1:0").expect("probe socket");
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        let _ = sock.send_to(queries.get(0), server);
        if let Ok((n, _)) = sock.recv_from(&mut buf) {
            if check_reply(&buf[..n], queries.question(0), Expect::Answer) == Verdict::Valid {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
fn rate_search_and_client_ramp_against_knot() {
    if installed_or_skip(Kind::Knot).is_none() {
        return;
    }
    let scratch = Scratch::new("knot");
    let dir = &scratch.0;
    let knot = start_enum_knot(dir);
    let server: SocketAddr = ([127, 0, 0, 1], PORT).into();
    let queries = QuerySet::read_file(
        &dir.join("zones").join("queries-existing.txt"),
        usize::MAX,
        false,
    )
    .expect("query file");
    assert_eq!(queries.len(), 1000);
    assert!(wait_ready(server, &queries), "knotd did not answer");
    let queries = Arc::new(queries);

    // About two seconds of searching: 250 ms steps between 0 and 200k q/s.
    let mut cfg = RateConfig::new(server);
    cfg.ports = 64;
    cfg.duration = Duration::from_millis(250);
    cfg.timeout = Duration::from_millis(250);
    cfg.max_behind = 1.0;
    let mut tester = Tester::new(cfg, queries.clone()).expect("tester");
    let result = tester
        .search(0, 200_000, 25_000, |r, ok| eprintln!("{r:?} {ok}"))
        .expect("search");
    assert!(!result.trials.is_empty());
    assert!(
        result.trials.iter().any(|t| t.detail.valid > 0),
        "no valid reply in {:?}",
        result.trials
    );
    assert!(result.trials.iter().all(|t| t.detail.wrong == 0));

    let cfg = ClientsConfig {
        server,
        step_duration: Duration::from_millis(300),
        timeout: Duration::from_millis(250),
        expect: Expect::Answer,
    };
    for clients in 1..=2 {
        let step = run_step(&cfg, &queries, clients, 0).expect("client step");
        assert!(step.answered > 0 && step.qps > 0.0, "{step:?}");
        assert_eq!(step.wrong, 0);
    }
    drop(knot);
}
