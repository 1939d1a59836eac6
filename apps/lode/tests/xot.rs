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
use std::process::{Command, Stdio};
use std::time::Duration;

const ZONE: &str = "xot.example.";

fn zone_text(serial: u32, extra: &str) -> String {
    format!(
        "$ORIGIN xot.example.\n$TTL 300\n@ SOA ns hostmaster {serial} 60 10 600 60\n@ NS ns\n\
         ns A 192.0.2.1\nwww A 192.0.2.80\n{extra}"
    )
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
            "listen-tls = [\"127.0.0.1@{tls_port}\"]\njournal-dir = \"journal\"\n\
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
    let named = Command::new(sbin("named"))
        .args(["-f", "-4", "-n", "1", "-c"])
        .arg(b.join("named.conf"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(b.join("stderr")).unwrap())
        .spawn()
        .expect("start named");
    let named = Server::adopt("named".into(), bind_port, named, b.join("named.log"));
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
