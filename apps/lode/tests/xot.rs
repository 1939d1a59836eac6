//! Zone transfers over TLS (RFC 9103), Lode as the primary: a BIND 9.18
//! secondary transfers over TLS from an ACL that takes transfers over TLS
//! only; the same request over plain TCP is refused.
//!
//! ```text
//!  lode serve (TCP 16960-16969, TLS 16970-16979; acl: transfer, protocol tls)
//!     ◀── AXFR/IXFR over TLS ── named (16980-16989, `primaries { … tls opportunistic; }`)
//!     ──▶ NOTIFY (UDP) after the zone file changed and SIGHUP
//!     ◀── AXFR over plain TCP: NOTAUTH
//! ```

mod common;

use common::peers::{sbin, soa_serial, wait_serial};
use common::*;
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

const ZONE: &str = "xot.example.";

fn zone_text(serial: u32, extra: &str) -> String {
    format!(
        "$ORIGIN xot.example.\n$TTL 300\n@ SOA ns hostmaster {serial} 60 10 600 60\n@ NS ns\n\
         ns A 192.0.2.1\nwww A 192.0.2.80\n{extra}"
    )
}

/// Starts named on `b/named.conf` (one worker, IPv4, in the foreground;
/// its log in `b/named.log`) and waits until it answers for [`ZONE`];
/// stopped when dropped.
fn start_named(b: &std::path::Path, port: u16) -> Server {
    let mut spec =
        server_spec(lode_peers::Kind::Bind, port).zone(lode_peers::Zone::secondary(ZONE, &[]));
    spec.label = Some("named".into());
    spec.config_file = Some(b.join("named.conf"));
    spec.dir = Some(b.into());
    spec.stdio = Some(b.join("stderr"));
    spec.ready = lode_peers::Ready::Answering;
    Server::start(spec).unwrap_or_else(|e| panic!("{e}"))
}

fn bind_present() -> bool {
    let ok = sbin("named").is_file() && Command::new("kdig").arg("-V").output().is_ok();
    if !ok {
        assert!(
            std::env::var("LODE_REQUIRE_XFR_PEERS").as_deref() != Ok("1"),
            "named or kdig missing but LODE_REQUIRE_XFR_PEERS=1"
        );
        eprintln!("SKIP xot: named or kdig missing");
    }
    ok
}

#[test]
fn bind_secondary_transfers_over_tls_only() {
    if !bind_present() {
        return;
    }
    let dir = TempDir::new("xot");
    let d = &dir.0;
    let port = pick_port_in(16960, 16969);
    let tls_port = pick_port_in(16970, 16979);
    let bind_port = pick_port_in(16980, 16989);
    std::fs::write(d.join("xot.zone"), zone_text(1, "")).unwrap();
    std::fs::write(
        d.join("lode.toml"),
        format!(
            "listen-tls = [\"127.0.0.1@{tls_port}\"]\njournal-dir = \"journal\"\ncontrol = \"\"\n\
             [[acl]]\nid = \"xot\"\naction = [\"transfer\"]\nprotocol = [\"tls\"]\n\
             [[remote]]\nid = \"bind\"\naddress = [\"127.0.0.1@{bind_port}\"]\n\
             [[zone]]\nname = \"{ZONE}\"\nfile = \"xot.zone\"\nacl = [\"xot\"]\nnotify = [\"bind\"]\n"
        ),
    )
    .unwrap();
    let lode = start_lode_config(&d.join("lode.toml"), port, &d.join("lode.log"), &[ZONE])
        .unwrap_or_else(|e| panic!("{e}"));

    let b = d.join("bind");
    std::fs::create_dir_all(&b).unwrap();
    let bd = b.display();
    std::fs::write(
        b.join("named.conf"),
        format!(
            "options {{ directory \"{bd}\"; pid-file \"{bd}/named.pid\"; \
             session-keyfile \"{bd}/s.key\"; managed-keys-directory \"{bd}\";\n\
             listen-on port {bind_port} {{ 127.0.0.1; }}; listen-on-v6 {{ none; }};\n\
             recursion no; notify no; dnssec-validation no; min-refresh-time 1; min-retry-time 1; }};\n\
             controls {{ }};\ntls opportunistic {{ }};\n\
             logging {{ channel f {{ file \"{bd}/named.log\"; severity debug 3; print-time yes; }};\n\
             category default {{ f; }}; category xfer-in {{ f; }}; category notify {{ f; }}; }};\n\
             zone \"xot.example\" {{ type secondary; file \"sec.db\";\n\
             primaries {{ 127.0.0.1 port {tls_port} tls opportunistic; }}; }};\n"
        ),
    )
    .unwrap();
    let named = start_named(&b, bind_port);
    let bind_addr = SocketAddr::from(([127, 0, 0, 1], bind_port));
    let log = || std::fs::read_to_string(b.join("named.log")).unwrap_or_default();
    wait_serial(bind_addr, ZONE, 1, Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}\n{}\n{}", log(), lode.log_tail(20)));
    assert!(
        log().contains(&format!(
            "from 127.0.0.1#{tls_port}: Transfer status: success"
        )),
        "{}",
        log()
    );

    // The same AXFR over plain TCP: refused (NOTAUTH), and logged.
    let mut q = Query::new(ZONE, 252, 1);
    q.id = 7;
    let answer = tcp_exchange(lode.addr, &q.to_wire(), Duration::from_secs(5)).expect("answer");
    assert_eq!(
        Message::parse(&answer).rcode(),
        9,
        "plain-TCP AXFR not refused"
    );
    assert!(lode.log().contains("over tcp: denied by the zone's acl"));

    // A change: NOTIFY over UDP, the transfer over TLS again.
    std::fs::write(d.join("xot.zone"), zone_text(2, "new A 192.0.2.2\n")).unwrap();
    assert!(Command::new("kill")
        .args(["-HUP", &lode.pid().to_string()])
        .status()
        .unwrap()
        .success());
    wait_serial(bind_addr, ZONE, 2, Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}\n{}\n{}", log(), lode.log_tail(20)));
    assert_eq!(soa_serial(lode.addr, ZONE), Some(2));
    drop(named);
}

/// Starts a Lode secondary of [`ZONE`] transferring from `remote` (TOML lines
/// of its `[[remote]]` table, id "primary") on `port`, `top` added to its
/// configuration's top level.
fn lode_secondary(dir: &std::path::Path, port: u16, top: &str, remote: &str) -> Server {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("lode.toml"),
        format!(
            "{top}journal-dir = \"journal\"\ncontrol = \"{}\"\n[[remote]]\nid = \"primary\"\n{remote}\n\
             [[zone]]\nname = \"{ZONE}\"\nmaster = [\"primary\"]\n",
            dir.join("ctl.sock").display()
        ),
    )
    .unwrap();
    // Not waiting for the zone: a secondary answers SERVFAIL until it has it.
    start_lode_config(&dir.join("lode.toml"), port, &dir.join("lode.log"), &[])
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Lode → Lode over mutual TLS: a secondary that pins the primary's
/// certificate and presents the one the primary's ACL pins transfers (first
/// AXFR, then IXFR after a change); one with a wrong pin gets nothing and
/// says why; one presenting another certificate is refused by the ACL.
#[test]
fn lode_secondary_pins_its_primary() {
    let dir = TempDir::new("xot-pin");
    let d = &dir.0;
    let pin = write_certificate(d, "cert.pem", "key.pem");
    std::fs::create_dir_all(d.join("good")).unwrap();
    let client_pin = write_certificate(&d.join("good"), "cert.pem", "key.pem");
    let port = pick_port_in(16960, 16969);
    let tls_port = pick_port_in(16970, 16979);
    std::fs::write(d.join("xot.zone"), zone_text(1, "")).unwrap();
    std::fs::write(
        d.join("lode.toml"),
        format!(
            "listen-tls = [\"127.0.0.1@{tls_port}\"]\ncert-file = \"cert.pem\"\nkey-file = \"key.pem\"\n\
             journal-dir = \"journal\"\ncontrol = \"\"\n\
             [[acl]]\nid = \"xot\"\naction = [\"transfer\"]\nprotocol = [\"tls\"]\n\
             cert-key = [\"{client_pin}\"]\n\
             [[zone]]\nname = \"{ZONE}\"\nfile = \"xot.zone\"\nacl = [\"xot\"]\n"
        ),
    )
    .unwrap();
    let primary = start_lode_config(&d.join("lode.toml"), port, &d.join("lode.log"), &[ZONE])
        .unwrap_or_else(|e| panic!("{e}"));

    let good_port = pick_port_in(16980, 16989);
    let good = lode_secondary(
        &d.join("good"),
        good_port,
        "cert-file = \"cert.pem\"\nkey-file = \"key.pem\"\n",
        &format!("address = [\"127.0.0.1@{tls_port}\"]\ncert-key = [\"{pin}\"]"),
    );
    wait_serial(good.addr, ZONE, 1, Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}\n{}\n{}", good.log_tail(20), primary.log_tail(20)));

    let wrong = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    let bad_port = pick_port_in(16980, 16989);
    let bad = lode_secondary(
        &d.join("bad"),
        bad_port,
        "",
        &format!("address = [\"127.0.0.1@{tls_port}\"]\ncert-key = [\"{wrong}\"]"),
    );

    // A change on the primary reaches the pinned secondary (SOA over TLS,
    // then IXFR over TLS; no NOTIFY configured: the secondary's refresh).
    std::fs::write(d.join("xot.zone"), zone_text(2, "new A 192.0.2.2\n")).unwrap();
    assert!(Command::new("kill")
        .args(["-HUP", &primary.pid().to_string()])
        .status()
        .unwrap()
        .success());
    let lode = env!("CARGO_BIN_EXE_lode");
    let refresh = |dir: &std::path::Path| {
        let _ = Command::new(lode)
            .args(["zone-refresh", ZONE, "--config"])
            .arg(dir.join("lode.toml"))
            .output();
    };
    wait_serial(primary.addr, ZONE, 2, Duration::from_secs(20)).unwrap();
    refresh(&d.join("good"));
    wait_serial(good.addr, ZONE, 2, Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}\n{}", good.log_tail(20)));
    // Restarted, the secondary shows the refresh times it kept.
    drop(good);
    let good = lode_secondary(
        &d.join("good"),
        good_port,
        "cert-file = \"cert.pem\"\nkey-file = \"key.pem\"\n",
        &format!("address = [\"127.0.0.1@{tls_port}\"]\ncert-key = [\"{pin}\"]"),
    );
    wait_serial(good.addr, ZONE, 2, Duration::from_secs(30)).unwrap();
    let status = Command::new(lode)
        .args(["zone-status", ZONE, "--control"])
        .arg(d.join("good").join("ctl.sock"))
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(
        status.contains("next refresh in ")
            && !status.contains("last refresh -")
            && !status.contains("last refresh in"),
        "times not restored: {status}"
    );

    // The wrongly pinned secondary has nothing, and its log says why.
    bad.wait_log("TLS handshake", "no TLS failure logged");
    assert_eq!(soa_serial(bad.addr, ZONE), None);
    // Nothing went to the primary in clear: its only transfers were over TLS.
    assert!(
        !primary.log().contains("over tcp: denied"),
        "{}",
        primary.log()
    );
}

/// BIND 9.18 primary → Lode secondary over TLS (BIND's `listen-on … tls`).
#[test]
fn lode_secondary_of_a_bind_primary_over_tls() {
    if !bind_present() {
        return;
    }
    let dir = TempDir::new("xot-bind");
    let d = &dir.0;
    let b = d.join("bind");
    std::fs::create_dir_all(&b).unwrap();
    let pin = write_certificate(&b, "cert.pem", "key.pem");
    std::fs::write(b.join("xot.zone"), zone_text(5, "")).unwrap();
    let bind_port = pick_port_in(16980, 16989);
    let bind_tls = pick_port_in(16970, 16979);
    let bd = b.display();
    std::fs::write(
        b.join("named.conf"),
        format!(
            "options {{ directory \"{bd}\"; pid-file \"{bd}/named.pid\"; \
             session-keyfile \"{bd}/s.key\"; managed-keys-directory \"{bd}\";\n\
             listen-on port {bind_port} {{ 127.0.0.1; }};\n\
             listen-on port {bind_tls} tls local {{ 127.0.0.1; }}; listen-on-v6 {{ none; }};\n\
             recursion no; notify no; dnssec-validation no; }};\n\
             controls {{ }};\n\
             tls local {{ key-file \"{bd}/key.pem\"; cert-file \"{bd}/cert.pem\"; }};\n\
             logging {{ channel f {{ file \"{bd}/named.log\"; severity debug 3; print-time yes; }};\n\
             category default {{ f; }}; category xfer-out {{ f; }}; }};\n\
             zone \"xot.example\" {{ type primary; file \"xot.zone\"; allow-transfer {{ any; }}; }};\n"
        ),
    )
    .unwrap();
    let named = start_named(&b, bind_port);
    wait_serial(named.addr, ZONE, 5, Duration::from_secs(20)).unwrap_or_else(|e| {
        panic!(
            "{e}\n{}",
            std::fs::read_to_string(b.join("stderr")).unwrap_or_default()
        )
    });
    let port = pick_port_in(16960, 16969);
    let secondary = lode_secondary(
        &d.join("lode"),
        port,
        "",
        &format!("address = [\"127.0.0.1@{bind_tls}\"]\ncert-key = [\"{pin}\"]"),
    );
    wait_serial(secondary.addr, ZONE, 5, Duration::from_secs(30)).unwrap_or_else(|e| {
        panic!(
            "{e}\n{}\n{}",
            secondary.log_tail(20),
            std::fs::read_to_string(b.join("named.log")).unwrap_or_default()
        )
    });
    let log = std::fs::read_to_string(b.join("named.log")).unwrap_or_default();
    assert!(log.contains("transfer of 'xot.example/IN'"), "{log}");
}

/// Writes a CA (`ca.pem`) and a certificate it issued for `ns.example`
/// (`cert.pem`, `key.pem`) in `dir`, with openssl.
fn write_ca_and_certificate(dir: &std::path::Path) {
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    run(&[
        &["req", "-x509"][..],
        &ec,
        &["-days", "2", "-subj", "/CN=Test CA"],
        &[
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign",
        ],
        &["-keyout", "ca.key", "-out", "ca.pem"],
    ]
    .concat());
    run(&[
        &["req"][..],
        &ec,
        &[
            "-subj",
            "/CN=ns.example",
            "-keyout",
            "key.pem",
            "-out",
            "leaf.csr",
        ],
    ]
    .concat());
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=DNS:ns.example\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "leaf.ext",
        "-out",
        "cert.pem",
    ]);
}

/// A primary authenticated by a CA and a name (Knot's `ca-file` and
/// `cert-hostname`): the right name transfers, another gets nothing.
#[test]
fn lode_secondary_checks_its_primary_by_ca_and_name() {
    let dir = TempDir::new("xot-ca");
    let d = &dir.0;
    write_ca_and_certificate(d);
    let port = pick_port_in(16960, 16969);
    let tls_port = pick_port_in(16970, 16979);
    std::fs::write(d.join("xot.zone"), zone_text(1, "")).unwrap();
    std::fs::write(
        d.join("lode.toml"),
        format!(
            "listen-tls = [\"127.0.0.1@{tls_port}\"]\ncert-file = \"cert.pem\"\nkey-file = \"key.pem\"\n\
             control = \"\"\n\
             [[acl]]\nid = \"xot\"\naction = [\"transfer\"]\nprotocol = [\"tls\"]\n\
             [[zone]]\nname = \"{ZONE}\"\nfile = \"xot.zone\"\nacl = [\"xot\"]\n"
        ),
    )
    .unwrap();
    let primary = start_lode_config(&d.join("lode.toml"), port, &d.join("lode.log"), &[ZONE])
        .unwrap_or_else(|e| panic!("{e}"));
    let ca = format!("ca-file = [\"{}\"]\n", d.join("ca.pem").display());
    let good = lode_secondary(
        &d.join("good"),
        pick_port_in(16980, 16989),
        &ca,
        &format!("address = [\"127.0.0.1@{tls_port}\"]\ncert-hostname = [\"ns.example\"]"),
    );
    wait_serial(good.addr, ZONE, 1, Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}\n{}\n{}", good.log_tail(20), primary.log_tail(20)));
    let bad = lode_secondary(
        &d.join("bad"),
        pick_port_in(16980, 16989),
        &ca,
        &format!("address = [\"127.0.0.1@{tls_port}\"]\ncert-hostname = [\"other.example\"]"),
    );
    bad.wait_log("TLS handshake", "no TLS failure logged");
    assert_eq!(soa_serial(bad.addr, ZONE), None);
}
