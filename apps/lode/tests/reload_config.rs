//! A configuration that reloads whole: a TSIG key rotated (same name, new
//! secret) and ACLs changed take effect at once for UPDATE and AXFR on
//! `lode reload`; a configuration with a bad key is refused whole and the
//! running keys stay.
//!
//! ```text
//!  lode serve (16990-16999) ◀── knsupdate -y / kdig -y AXFR, before and after `lode reload`
//! ```

mod common;

use common::peers::{nsupdate, TsigKey};
use common::*;
use std::path::Path;
use std::process::Command;

const ZONE: &str = "reload.example.";
const OLD: &str = "8+5gjWLaa1vXm1Z8Ah8HPj7mK6pTgfj0n6YJ7Ja4wGU=";
const NEW: &str = "kv2Xz6Ykz0hxbYp3xv1m3FJ0m3Cq1c1QG3mJxC2y5oA=";

fn config(dir: &Path, port: u16, secret: &str, transfer: bool) -> String {
    let actions = if transfer {
        "[\"update\", \"transfer\"]"
    } else {
        "[\"update\"]"
    };
    format!(
        "listen = [\"127.0.0.1:{port}\"]\njournal-dir = \"journal\"\ncontrol = \"{}\"\n\
         [[key]]\nid = \"rot\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{secret}\"\n\
         [[acl]]\nid = \"ops\"\nkey = [\"rot\"]\naction = {actions}\n\
         [[zone]]\nname = \"{ZONE}\"\nfile = \"zone\"\nacl = [\"ops\"]\n",
        dir.join("ctl.sock").display()
    )
}

fn reload(dir: &Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .arg("reload")
        .arg("--control")
        .arg(dir.join("ctl.sock"))
        .output()
        .expect("lode reload");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The rcode kdig reports for an AXFR signed with `key` ("NOERROR" when the
/// zone came), from its status line or its error.
fn axfr(addr: std::net::SocketAddr, key: &TsigKey) -> String {
    let out = Command::new("kdig")
        .arg(format!("@{}", addr.ip()))
        .arg("-p")
        .arg(addr.port().to_string())
        .arg("-y")
        .arg(key.y_arg())
        .args([ZONE, "AXFR"])
        .output()
        .expect("kdig");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let soas = text.lines().filter(|l| l.contains("\tSOA\t")).count();
    if soas == 2 && !text.contains(";; ERROR") {
        "NOERROR".into()
    } else {
        text
    }
}

#[test]
fn keys_and_acls_change_by_reload() {
    if Command::new("kdig").arg("-V").output().is_err() {
        assert!(
            std::env::var_os("LODE_REQUIRE_KNOT").is_none(),
            "kdig missing"
        );
        return;
    }
    let dir = TempDir::new("reload-config");
    let d = &dir.0;
    let port = pick_port_in(16990, 16999);
    std::fs::write(
        d.join("zone"),
        format!("$ORIGIN {ZONE}\n$TTL 300\n@ SOA ns hm 1 60 10 600 60\n@ NS ns\nns A 192.0.2.1\n"),
    )
    .unwrap();
    std::fs::write(d.join("lode.toml"), config(d, port, OLD, true)).unwrap();
    let server = start_lode_config(&d.join("lode.toml"), port, &d.join("lode.log"), &[ZONE])
        .unwrap_or_else(|e| panic!("{e}"));
    let old = TsigKey {
        name: "rot".into(),
        algorithm: "hmac-sha256".into(),
        secret: OLD.into(),
    };
    let new = old.with_secret(NEW);
    nsupdate(server.addr, ZONE, &old, "update add a 300 A 192.0.2.10\n").unwrap();
    assert!(nsupdate(server.addr, ZONE, &new, "update add b 300 A 192.0.2.11\n").is_err());
    assert_eq!(axfr(server.addr, &old), "NOERROR");

    // Rotation: the new secret, and transfers no longer allowed.
    std::fs::write(d.join("lode.toml"), config(d, port, NEW, false)).unwrap();
    let (ok, text) = reload(d);
    assert!(ok, "{text}\n{}", server.log_tail(20));
    nsupdate(server.addr, ZONE, &new, "update add c 300 A 192.0.2.12\n")
        .unwrap_or_else(|e| panic!("{e}\n{}", server.log_tail(20)));
    assert!(nsupdate(server.addr, ZONE, &old, "update add d 300 A 192.0.2.13\n").is_err());
    assert_ne!(axfr(server.addr, &new), "NOERROR", "transfer still allowed");

    // A key that cannot be used: the reload is refused, the running keys stay.
    std::fs::write(d.join("lode.toml"), config(d, port, "not base64!", true)).unwrap();
    let (ok, text) = reload(d);
    assert!(!ok, "a bad key was taken:\n{text}");
    nsupdate(server.addr, ZONE, &new, "update add e 300 A 192.0.2.14\n")
        .unwrap_or_else(|e| panic!("{e}\n{}", server.log_tail(20)));
    assert_ne!(axfr(server.addr, &new), "NOERROR");

    // Transfers allowed again by a good configuration; a setting that needs a
    // restart is named in the report.
    let mut conf = config(d, port, NEW, true);
    conf.push_str("[rrl]\nrate-limit = 20\n");
    std::fs::write(d.join("lode.toml"), conf).unwrap();
    let (ok, text) = reload(d);
    assert!(ok, "{text}");
    assert!(
        text.contains("take effect at restart (not now): [rrl]"),
        "{text}"
    );
    assert_eq!(axfr(server.addr, &new), "NOERROR");
}
