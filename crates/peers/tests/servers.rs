//! Real servers from one description each: a Knot DNS primary and a Knot,
//! NSD and BIND secondary of it (TSIG-signed transfers and NOTIFY), each
//! found ready, sampled and stopped. Ports 16300-16309 on 127.0.0.1. A
//! missing server is skipped (or fails under LODE_REQUIRE_KNOT=1).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use lode_peers::{
    installed_or_skip, soa_query, Acl, Action, Content, Error, Key, Kind, Server, Spec, Zone,
};

const ZONE: &str = "peers.test.";

fn key() -> Key {
    Key::new(
        "xfr-key",
        "hmac-sha256",
        "8+5gjWLaa1vXm1Z8Ah8HPj7mK6pTgfj0n6YJ7Ja4wGU=",
    )
}

fn zone_text() -> String {
    format!(
        "$ORIGIN {ZONE}\n$TTL 300\n@ SOA ns1 hostmaster 7 1 1 86400 300\n@ NS ns1\n\
         ns1 A 192.0.2.1\nwww A 192.0.2.2\n"
    )
}

fn addr(port: u16) -> SocketAddr {
    ([127, 0, 0, 1], port).into()
}

/// A secondary of `kind` on `port` transferring [`ZONE`] from `primary`.
fn secondary(kind: Kind, port: u16, primary: SocketAddr) -> Spec {
    Spec::new(kind, port)
        .key(key())
        .acl(
            Acl::new("notify-in", &[Action::Notify])
                .from("127.0.0.1")
                .key("xfr-key"),
        )
        .acl(Acl::new("xfr-out", &[Action::Transfer]).key("xfr-key"))
        .zone(
            Zone::secondary(ZONE, &[primary])
                .key("xfr-key")
                .acls(&["notify-in", "xfr-out"]),
        )
}

#[test]
fn knot_primary_with_knot_nsd_and_bind_secondaries() {
    if installed_or_skip(Kind::Knot).is_none() {
        return;
    }
    let kinds: Vec<(Kind, u16)> = [(Kind::Knot, 16301), (Kind::Nsd, 16302), (Kind::Bind, 16303)]
        .into_iter()
        .filter(|(k, _)| lode_peers::program(k.program()).is_some())
        .collect();
    let targets: Vec<SocketAddr> = kinds.iter().map(|(_, p)| addr(*p)).collect();
    let mut primary = Server::start(
        &Spec::new(Kind::Knot, 16300)
            .key(key())
            .acl(
                Acl::new("xfr", &[Action::Transfer])
                    .from("127.0.0.1")
                    .key("xfr-key"),
            )
            .zone(
                Zone::primary(ZONE, Content::Text(zone_text()))
                    .key("xfr-key")
                    .acls(&["xfr"])
                    .notify(&targets),
            ),
    )
    .expect("knot primary");
    let sample = primary.sample().expect("running");
    assert!(
        sample.rss > 0 && sample.threads >= 1 && sample.fds > 0,
        "{sample:?}"
    );

    for (kind, port) in kinds {
        let mut s = Server::start(&secondary(kind, port, primary.addr())).expect("secondary");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !soa_query(s.addr(), ZONE, Duration::from_millis(300))
            .is_some_and(|a| a.serves_zone())
        {
            assert!(
                Instant::now() < deadline,
                "{} did not transfer the zone:\n{}",
                s.label(),
                s.log_tail(30)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("{} transferred {ZONE}", s.label());
        assert!(s.sample().is_some());
        s.stop();
        assert!(!s.alive() && s.sample().is_none());
    }
    primary.restart().expect("restart on the same state");
    assert!(
        soa_query(primary.addr(), ZONE, Duration::from_secs(1)).is_some_and(|a| a.serves_zone())
    );
}

#[test]
fn a_broken_configuration_fails_fast_with_the_log() {
    if installed_or_skip(Kind::Knot).is_none() {
        return;
    }
    let mut spec =
        Spec::new(Kind::Knot, 16304).zone(Zone::primary(ZONE, Content::Text(zone_text())));
    spec.server_extra = "    no-such-option: 1\n".into();
    let started = Instant::now();
    match Server::start(&spec) {
        Err(Error::Exited { log_tail, .. }) => {
            assert!(log_tail.contains("no-such-option"), "{log_tail}")
        }
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_zone_that_never_loads_is_a_bounded_wait() {
    if installed_or_skip(Kind::Knot).is_none() {
        return;
    }
    let mut spec = Spec::new(Kind::Knot, 16305).zone(Zone::primary(
        ZONE,
        Content::Text("$ORIGIN peers.test.\n@ A 192.0.2.1\n".into()),
    ));
    spec.ready_timeout = Duration::from_secs(3);
    match Server::start(&spec) {
        Err(e @ Error::NotReady { .. }) => assert!(e.to_string().contains(ZONE), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn lode_needs_its_binary() {
    assert!(lode_peers::program("surely-no-such-dns-server").is_none());
    let lode = Spec::new(Kind::Lode, 16306);
    assert!(matches!(Server::start(&lode), Err(Error::Config(_))));
}
