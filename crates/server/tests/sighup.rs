//! SIGHUP reloads and SIGTERM stops `run_until_signal` (own test binary, as
//! signal dispositions are process-wide).

mod common;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use lode_server::control::request;
use lode_server::{Options, Server};
use signal_hook::consts::{SIGHUP, SIGTERM};

#[test]
fn sighup_reloads_and_sigterm_stops() {
    // Replace the default dispositions first (which terminate the process), so
    // a signal raised before the server's handler is installed is harmless.
    let seen = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(SIGHUP, seen.clone()).unwrap();
    signal_hook::flag::register(SIGTERM, seen.clone()).unwrap();

    let scratch = Scratch::new("sighup");
    let file = scratch.write("s.zone", &zone_text("s.test.", 1, "192.0.2.1"));
    let control = scratch.path("control.sock");
    let server = Server::start(Options {
        listen: vec!["127.0.0.1:15426".into()],
        zones: vec![("s.test.".into(), file.clone())],
        workers: Some(1),
        control: Some(control.clone()),
        ..Options::default()
    })
    .expect("server starts");
    let runner = std::thread::spawn(move || server.run_until_signal());
    std::fs::write(&file, zone_text("s.test.", 2, "192.0.2.22")).unwrap();
    let status = || {
        request(&control, "status", Duration::from_secs(5))
            .map(|r| r.text)
            .unwrap_or_default()
    };
    eventually("the SIGHUP reload", || {
        signal_hook::low_level::raise(SIGHUP).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        status().contains("zone s.test. serial 2")
    });
    eventually("the SIGTERM stop", || {
        signal_hook::low_level::raise(SIGTERM).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        runner.is_finished()
    });
    runner.join().unwrap().unwrap();
    assert!(!control.exists(), "control socket left behind");
}
