//! Each server counts its own events: two servers in one process (as these
//! tests and the simulator run them) share no counter, and each one's
//! `stats` (the control socket's view of the metrics) shows its own.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{ask_tcp, query, rcode, zone_text, Scratch};
use lode_server::control::request;
use lode_server::{Options, Server};

/// The value of `series` in the `stats` of the server on `control`.
fn stat(control: &Path, series: &str) -> Option<f64> {
    let reply = request(control, "stats", Duration::from_secs(5)).expect("stats");
    assert!(reply.ok, "{}", reply.text);
    reply.text.lines().find_map(|l| {
        let (name, value) = l.rsplit_once(' ')?;
        (name == series).then(|| value.parse().ok())?
    })
}

#[test]
fn two_servers_in_one_process_count_apart() {
    let scratch = Scratch::new("events-apart");
    let zone = scratch.write("a.zone", &zone_text("a.test.", 1, "192.0.2.1"));
    let start = |name: &str| {
        Server::start(Options {
            listen: vec!["127.0.0.1:0".into()],
            zones: vec![("a.test.".into(), zone.clone())],
            workers: Some(1),
            control: Some(scratch.path(&format!("{name}.sock"))),
            ..Options::default()
        })
        .expect("server starts")
    };
    let (one, two) = (start("one"), start("two"));
    // An AXFR no ACL allows: refused (NOTAUTH), and counted by the server
    // that refused it.
    let mut axfr = query(7, "a.test.");
    let qtype = axfr.len() - 4;
    axfr[qtype..qtype + 2].copy_from_slice(&252u16.to_be_bytes());
    for _ in 0..2 {
        let response = ask_tcp(one.local_addrs()[0], &axfr);
        assert_eq!(rcode(&response), 9, "NOTAUTH");
    }
    let refused = "lode_transfers_out_total{type=\"refused\"}";
    assert_eq!(stat(&scratch.path("one.sock"), refused), Some(2.0));
    assert_eq!(stat(&scratch.path("two.sock"), refused), Some(0.0));
    one.stop();
    two.stop();
}
