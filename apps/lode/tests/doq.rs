//! DNS over QUIC (RFC 9250) end to end: `lode serve` with `listen-quic`,
//! asked by `kdig +quic` (Knot's client, as an operator would).
//!
//! ```text
//!  tests/differential/{zones,queries.txt} ─▶ lode serve (UDP/TCP 17000-17019, QUIC 17020-17039)
//!     kdig +quic (one connection, many streams) ─▶ the answers kdig +tcp gets
//!     kdig +quic with a wrong pin ─▶ no answer (+tls-pin must come before +quic)
//! ```

mod common;

use common::*;
use std::process::Command;

fn kdig_present() -> bool {
    let ok = Command::new("kdig")
        .arg("-h")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("+[no]quic"));
    if !ok {
        assert!(
            std::env::var_os("LODE_REQUIRE_KNOT").is_none(),
            "kdig with +quic missing"
        );
        eprintln!("skipped: kdig with +quic missing");
    }
    ok
}

#[test]
fn quic_answers_are_the_tcp_answers() {
    if !kdig_present() {
        return;
    }
    let dir = TempDir::new("doq");
    let pin = write_certificate(&dir.0, "cert.pem", "key.pem");
    let port = pick_port_in(17000, 17019);
    let quic_port = pick_port_in(17020, 17039);
    let server = start_lode_with_suite(
        &dir.0,
        port,
        &format!("listen-quic = [\"127.0.0.1@{quic_port}\"]\ncert-file = \"cert.pem\"\nkey-file = \"key.pem\""),
    );

    let text = std::fs::read_to_string(repo_root().join("tests/differential/queries.txt")).unwrap();
    let mut args: Vec<String> = Vec::new();
    for line in text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .step_by(7)
    {
        let mut w = line.split_whitespace();
        let (Some(name), Some(qtype)) = (w.next(), w.next()) else {
            continue;
        };
        if type_from_str(qtype).is_none() || qtype == "AXFR" || qtype == "IXFR" {
            continue;
        }
        args.push(name.to_string());
        args.push(qtype.to_string());
    }
    let answers = |extra: &[String], port: u16| kdig_answers(port, extra, &args);
    let (over_tcp, _) = answers(&["+tcp".into()], server.addr.port());
    let (over_quic, err) = answers(&[format!("+tls-pin={pin}"), "+quic".into()], quic_port);
    assert!(over_tcp.lines().count() > 50, "{over_tcp}");
    assert_eq!(
        over_tcp,
        over_quic,
        "kdig +quic differs from kdig +tcp\n{err}\n{}",
        server.log_tail(10)
    );

    // A wrong pin: no answer at all.
    let wrong = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    let out = Command::new("kdig")
        .arg("@127.0.0.1")
        .arg("-p")
        .arg(quic_port.to_string())
        .args([
            &format!("+tls-pin={wrong}"),
            "+quic",
            "+short",
            "example.com.",
            "SOA",
        ])
        .output()
        .expect("kdig");
    assert!(
        String::from_utf8_lossy(&out.stdout).trim().is_empty(),
        "answered despite a wrong pin: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}
