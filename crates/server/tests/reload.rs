//! The daemon in-process: serving, reloading through the control socket,
//! broken zones, configuration reloads.

mod common;

use std::net::SocketAddr;
use std::path::PathBuf;

use common::*;
use lode_server::control::request;
use lode_server::{Options, Server, ServerError};

fn options(scratch: &Scratch, port: u16) -> Options {
    Options {
        listen: vec![format!("127.0.0.1:{port}")],
        workers: Some(1),
        control: Some(scratch.path("control.sock")),
        ..Options::default()
    }
}

fn reload(scratch: &Scratch) -> lode_server::Reply {
    request(
        &scratch.path("control.sock"),
        "reload",
        std::time::Duration::from_secs(30),
    )
    .expect("control socket answers")
}

/// Rewrites a file so that its stamp surely changes (size differs).
fn rewrite(path: &PathBuf, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn control_reload_swaps_in_changed_zones_and_keeps_old_on_errors() {
    let scratch = Scratch::new("control-reload");
    let file = scratch.write(
        "example.test.zone",
        &zone_text("example.test.", 1, "192.0.2.1"),
    );
    let mut o = options(&scratch, 15420);
    o.zones = vec![("example.test.".into(), file.clone())];
    let server = Server::start(o).expect("server starts");
    let addr: SocketAddr = "127.0.0.1:15420".parse().unwrap();
    assert_eq!(server.local_addrs(), vec![addr]);
    assert_eq!(
        a_records(&server.zones(), "www.example.test."),
        ["192.0.2.1"]
    );

    // Both transports answer from the zone.
    let q = query(0x4c4f, "www.example.test.");
    for r in [ask_udp(addr, &q), ask_tcp(addr, &q)] {
        assert!(r.len() >= 12);
        assert_eq!(&r[..2], &[0x4c, 0x4f]);
        assert_ne!(r[2] & 0x80, 0, "QR bit");
        assert_eq!(rcode(&r), 0);
        assert!(answers_address(&r, [192, 0, 2, 1]), "{r:?}");
    }

    // Unchanged file: not re-read.
    let r = reload(&scratch);
    assert!(r.ok, "{}", r.text);
    assert!(
        r.text.contains("zone example.test.: unchanged"),
        "{}",
        r.text
    );

    // Changed file: the new data is published.
    rewrite(&file, &zone_text("example.test.", 2, "192.0.2.222"));
    let r = reload(&scratch);
    assert!(r.ok, "{}", r.text);
    assert!(
        r.text.contains("zone example.test.: reloaded"),
        "{}",
        r.text
    );
    assert_eq!(
        a_records(&server.zones(), "www.example.test."),
        ["192.0.2.222"]
    );
    assert_eq!(serial(&server.zones(), "example.test."), Some(2));
    assert!(answers_address(&ask_udp(addr, &q), [192, 0, 2, 222]));
    assert!(answers_address(&ask_tcp(addr, &q), [192, 0, 2, 222]));

    // Broken file: error with file:line, the previous version stays.
    let broken = zone_text("example.test.", 3, "192.0.2.3") + "bad A 300.1.2.3\n";
    rewrite(&file, &broken);
    let r = reload(&scratch);
    assert!(!r.ok, "{}", r.text);
    assert!(
        r.text.contains("previous version still served"),
        "{}",
        r.text
    );
    let line = format!("{}:7:", file.display());
    assert!(r.text.contains(&line), "no {line} in {}", r.text);
    assert_eq!(
        a_records(&server.zones(), "www.example.test."),
        ["192.0.2.222"]
    );

    assert!(answers_address(&ask_udp(addr, &q), [192, 0, 2, 222]));

    // A zone-check error (CNAME beside other data) also keeps the old version.
    let bad_check = zone_text("example.test.", 4, "192.0.2.4") + "www CNAME ns1\n";
    rewrite(&file, &bad_check);
    let r = reload(&scratch);
    assert!(!r.ok, "{}", r.text);
    assert!(r.text.contains("CNAME"), "{}", r.text);
    assert_eq!(serial(&server.zones(), "example.test."), Some(2));

    // Fixed: reloads again.
    rewrite(&file, &zone_text("example.test.", 5, "192.0.2.55"));
    let r = reload(&scratch);
    assert!(r.ok, "{}", r.text);
    assert_eq!(
        a_records(&server.zones(), "www.example.test."),
        ["192.0.2.55"]
    );

    // Status lists the zone and counts the queries above.
    let s = request(
        &scratch.path("control.sock"),
        "status",
        std::time::Duration::from_secs(5),
    )
    .unwrap();
    assert!(s.ok);
    assert!(s.text.contains("zone example.test. serial 5"), "{}", s.text);
    assert!(s.text.contains("tcp connections 2"), "{}", s.text);
    let unknown = request(
        &scratch.path("control.sock"),
        "explode",
        std::time::Duration::from_secs(5),
    )
    .unwrap();
    assert!(!unknown.ok);

    server.stop();
    assert!(
        !exists(&scratch.path("control.sock")),
        "control socket left behind"
    );
}

#[test]
fn reload_in_process_reads_the_configuration_file_again() {
    let scratch = Scratch::new("config-reload");
    scratch.write("a.zone", &zone_text("a.test.", 1, "192.0.2.1"));
    scratch.write("b.zone", &zone_text("b.test.", 1, "192.0.2.2"));
    let control = scratch.path("control.sock");
    let cfg = |zones: &str| {
        format!(
            "listen = [\"127.0.0.1:15422\"]\nworkers = 1\ncontrol = \"{}\"\n{zones}",
            control.display()
        )
    };
    let a = "[[zone]]\nname = \"a.test\"\nfile = \"a.zone\"\n";
    let b = "[[zone]]\nname = \"b.test\"\nfile = \"b.zone\"\n";
    let config = scratch.write("lode.toml", &cfg(a));
    let server = Server::start(Options {
        config: Some(config.clone()),
        ..Options::default()
    })
    .expect("server starts");
    assert_eq!(serial(&server.zones(), "a.test."), Some(1));
    assert_eq!(serial(&server.zones(), "b.test."), None);

    // Add b: loaded; a unchanged.
    std::fs::write(&config, cfg(&format!("{a}{b}"))).unwrap();
    let r = server.reload();
    assert!(r.is_ok(), "{}", r.to_text());
    assert_eq!(r.loaded, ["b.test."]);
    assert_eq!(r.unchanged, ["a.test."]);
    assert_eq!(a_records(&server.zones(), "www.b.test."), ["192.0.2.2"]);

    // Remove a.
    std::fs::write(&config, cfg(b)).unwrap();
    let r = server.reload();
    assert_eq!(r.removed, ["a.test."]);
    assert_eq!(serial(&server.zones(), "a.test."), None);

    // A broken configuration changes nothing.
    std::fs::write(&config, "listen = [\n").unwrap();
    let r = server.reload();
    assert!(!r.is_ok());
    let e = r.config_error.clone().unwrap();
    assert!(e.contains("lode.toml"), "{e}");
    assert_eq!(serial(&server.zones(), "b.test."), Some(1));
    server.stop();
}

#[test]
fn a_broken_zone_at_start_is_not_served_but_the_others_are() {
    let scratch = Scratch::new("broken-at-start");
    let good = scratch.write("good.zone", &zone_text("good.test.", 7, "192.0.2.7"));
    let bad = scratch.write("bad.zone", "$ORIGIN bad.test.\n@ SOA ns1 hm 1 2 3 4 5\n");
    let mut o = options(&scratch, 15421);
    o.zones = vec![("good.test".into(), good), ("bad.test".into(), bad.clone())];
    let server = Server::start(o).expect("starts with one good zone");
    assert_eq!(serial(&server.zones(), "good.test."), Some(7));
    assert_eq!(serial(&server.zones(), "bad.test."), None);
    // Fixing the broken zone and reloading brings it in.
    std::fs::write(&bad, zone_text("bad.test.", 8, "192.0.2.8")).unwrap();
    let r = server.reload();
    assert!(r.is_ok(), "{}", r.to_text());
    assert_eq!(serial(&server.zones(), "bad.test."), Some(8));
    server.stop();
}

#[test]
fn start_fails_when_no_configured_zone_loads_or_the_port_is_taken() {
    let scratch = Scratch::new("start-fails");
    let mut o = options(&scratch, 15423);
    o.zones = vec![("missing.test".into(), scratch.path("nonexistent.zone"))];
    match Server::start(o) {
        Err(ServerError::NoZone) => {}
        other => panic!("expected NoZone, got {other:?}"),
    }
    let _taken = std::net::UdpSocket::bind("127.0.0.1:15424").unwrap();
    let mut o = options(&scratch, 15424);
    o.zones = vec![(
        "a.test".into(),
        scratch.write("a.zone", &zone_text("a.test.", 1, "192.0.2.1")),
    )];
    match Server::start(o) {
        Err(ServerError::Io(e)) => assert!(e.to_string().contains("15424"), "{e}"),
        other => panic!("expected a bind error, got {other:?}"),
    }
}

#[test]
fn demo_zones_are_served_when_none_is_configured() {
    let scratch = Scratch::new("demo");
    let server = Server::start(options(&scratch, 15425)).expect("demo starts");
    assert!(server.config().demo);
    let zones = server.zones();
    assert_eq!(serial(&zones, "1.e164.arpa."), Some(2026112201));
    assert_eq!(a_records(&zones, "ns1.example.com."), ["192.0.2.1"]);
    server.stop();
}

#[test]
fn a_changed_include_file_is_reloaded_though_the_zone_file_is_not() {
    let scratch = Scratch::new("include");
    scratch.write("hosts.inc", "www A 192.0.2.1\n");
    let main = scratch.write(
        "inc.zone",
        &format!(
            "$ORIGIN inc.test.\n$TTL 300\n@ SOA ns1 hm 1 3600 600 86400 300\n@ NS ns1\nns1 A 192.0.2.53\n$INCLUDE {}\n",
            scratch.path("hosts.inc").display()
        ),
    );
    let mut o = options(&scratch, 15427);
    o.zones = vec![("inc.test.".into(), main)];
    let server = Server::start(o).expect("server starts");
    assert_eq!(a_records(&server.zones(), "www.inc.test."), ["192.0.2.1"]);
    let r = server.reload();
    assert_eq!(r.unchanged, ["inc.test."]);
    scratch.write("hosts.inc", "www A 192.0.2.100\n");
    let r = server.reload();
    assert!(r.is_ok(), "{}", r.to_text());
    assert_eq!(r.loaded, ["inc.test."]);
    assert_eq!(a_records(&server.zones(), "www.inc.test."), ["192.0.2.100"]);
    server.stop();
}

#[test]
fn no_query_is_lost_while_reloading() {
    let scratch = Scratch::new("no-loss");
    let file = scratch.write("n.zone", &zone_text("n.test.", 1, "192.0.2.1"));
    let mut o = options(&scratch, 15428);
    o.zones = vec![("n.test.".into(), file.clone())];
    o.workers = Some(2);
    let server = Server::start(o).expect("server starts");
    let addr: SocketAddr = "127.0.0.1:15428".parse().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let client = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            s.set_read_timeout(Some(std::time::Duration::from_secs(2)))
                .unwrap();
            let mut buf = [0u8; 1024];
            let (mut asked, mut good) = (0u32, 0u32);
            // Bounded: at most 20000 queries.
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && asked < 20_000 {
                let id = asked as u16;
                s.send_to(&query(id, "www.n.test."), addr).unwrap();
                asked += 1;
                if let Ok((n, _)) = s.recv_from(&mut buf) {
                    let r = &buf[..n];
                    let ok = r[..2] == id.to_be_bytes()
                        && rcode(r) == 0
                        && (1..=20u8).any(|i| answers_address(r, [192, 0, 2, i]));
                    good += u32::from(ok);
                }
            }
            (asked, good)
        })
    };
    for serial in 2..=20u32 {
        // The address grows one digit at 10: the size (and so the stamp) changes.
        std::fs::write(
            &file,
            zone_text("n.test.", serial, &format!("192.0.2.{serial}")),
        )
        .unwrap();
        let r = server.reload();
        assert!(r.is_ok(), "{}", r.to_text());
        assert_eq!(r.loaded, ["n.test."], "serial {serial}");
        // Let queries flow between swaps too.
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (asked, good) = client.join().unwrap();
    assert!(asked > 19, "only {asked} queries");
    assert_eq!(good, asked, "queries lost or wrong during reloads");
    assert_eq!(a_records(&server.zones(), "www.n.test."), ["192.0.2.20"]);
    server.stop();
}

#[test]
fn stop_is_refused_by_a_server_not_run_until_a_signal() {
    // A server used as a library (not `run_until_signal`) is its program's
    // to stop: `stop` on its control socket must not end the process.
    let scratch = Scratch::new("control-stop");
    let file = scratch.write(
        "example.test.zone",
        &zone_text("example.test.", 1, "192.0.2.1"),
    );
    let mut o = options(&scratch, 16722);
    o.zones = vec![("example.test.".into(), file)];
    let server = Server::start(o).expect("server starts");
    let r = request(
        &scratch.path("control.sock"),
        "stop",
        std::time::Duration::from_secs(10),
    )
    .expect("control socket answers");
    assert!(!r.ok, "{}", r.text);
    assert!(r.text.contains("not run as a daemon"), "{}", r.text);
    let status = request(
        &scratch.path("control.sock"),
        "status",
        std::time::Duration::from_secs(10),
    )
    .expect("still answering");
    assert!(status.text.starts_with("lode "), "{}", status.text);
    server.stop();
}
