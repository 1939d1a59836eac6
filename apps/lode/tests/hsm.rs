//! A zone signed with keys in an HSM, SoftHSM2 standing in
//! for it: a policy's `keystore` names a `[[keystore]]` (PKCS #11, PIN
//! from a file); the keys are made in the token when the zone first loads,
//! their files hold no private key, every version is verified whole by
//! three validators — after the first signing, an update, a ZSK rollover
//! (the new key made in the token too) and a `kill -9` — and `lode dnssec
//! list` says where each key is.
//!
//! ```text
//!  lode serve ── PKCS #11 ──▶ libsofthsm2.so (a token in this test's folder)
//!      ▲  knsupdate, zone-key-rollover, kill -9
//!      └─ kdig AXFR ─▶ ldns-verify-zone, dnssec-verify, kzonecheck
//! ```

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::dnssec::{tools_present, verify_axfr};
use common::peers::{nsupdate, TsigKey};
use common::*;

const ZONE: &str = "hsm.example.";
const SECRET: &str = "8+5gjWLaa1vXm1Z8Ah8HPj7mK6pTgfj0n6YJ7Ja4wGU=";

fn kdig(addr: std::net::SocketAddr, args: &[&str]) -> String {
    let out = Command::new("kdig")
        .arg(format!("@{}", addr.ip()))
        .args(["-p", &addr.port().to_string()])
        .args(args)
        .output()
        .expect("kdig");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The zone's private key files' texts.
fn key_files(dir: &Path) -> Vec<String> {
    let keys = dir.join("journal/keys").join(ZONE.trim_end_matches('.'));
    std::fs::read_dir(&keys)
        .unwrap_or_else(|e| panic!("{}: {e}", keys.display()))
        .filter_map(|e| {
            let p = e.ok()?.path();
            p.extension()
                .is_some_and(|x| x == "private")
                .then(|| std::fs::read_to_string(p).unwrap())
        })
        .collect()
}

#[test]
fn a_zone_signed_with_keys_in_a_token() {
    if !tools_present() {
        return;
    }
    let dir = TempDir::new("hsm");
    let d = &dir.0;
    let Some(token) = common::dnssec::softhsm_token(d, "lode hsm") else {
        return;
    };
    std::fs::write(
        d.join("zone"),
        format!(
            "$ORIGIN {ZONE}\n$TTL 300\n@ SOA ns hm 1 60 10 600 60\n@ NS ns\nns A 192.0.2.1\n\
             www A 192.0.2.2\nsub NS ns.sub\nns.sub A 192.0.2.3\n"
        ),
    )
    .unwrap();
    let port = pick_port_in(17140, 17149);
    let conf = format!(
        "journal-dir = \"journal\"\ncontrol = \"{ctl}\"\n\
         [[keystore]]\nid = \"hsm\"\nbackend = \"pkcs11\"\n\
         config = \"{token}\"\n\
         [[policy]]\nid = \"in-hsm\"\nkeystore = \"hsm\"\nnsec3 = true\n\
         [[key]]\nid = \"up\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{SECRET}\"\n\
         [[acl]]\nid = \"up\"\nkey = [\"up\"]\naction = [\"update\", \"transfer\"]\n\
         [[zone]]\nname = \"{ZONE}\"\nfile = \"zone\"\nacl = [\"up\"]\n\
         dnssec-signing = true\ndnssec-policy = \"in-hsm\"\n",
        ctl = d.join("ctl.sock").display(),
    );
    std::fs::write(d.join("lode.toml"), &conf).unwrap();
    let mut server = start_lode_config(&d.join("lode.toml"), port, &d.join("lode.log"), &[ZONE])
        .unwrap_or_else(|e| panic!("{e}"));
    let key = TsigKey {
        name: "up".into(),
        algorithm: "hmac-sha256".into(),
        secret: SECRET.into(),
    };
    let y = key.y_arg();
    let first = verify_axfr(d, server.addr, ZONE, Some(&y), "signed at first load");

    // The keys: made in the token, their files without a private key.
    let files = key_files(d);
    assert_eq!(files.len(), 2, "a KSK and a ZSK: {files:?}");
    for f in &files {
        assert!(f.contains("pkcs11: lode%20hsm "), "{f}");
        assert!(!f.contains("pkcs8"), "a private key on disk:\n{f}");
    }
    let list = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["dnssec", "list", ZONE, "-c"])
        .arg(d.join("lode.toml"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&list.stderr)
    );
    assert_eq!(
        text.matches("in PKCS #11 token \"lode hsm\"").count(),
        2,
        "{text}"
    );

    // An update, signed by the token before it is answered.
    nsupdate(server.addr, ZONE, &key, "update add new 300 A 192.0.2.9\n").unwrap();
    let a = kdig(server.addr, &["+dnssec", &format!("new.{ZONE}"), "A"]);
    assert!(a.contains("RRSIG\tA"), "{a}");
    let second = verify_axfr(d, server.addr, ZONE, Some(&y), "an update");
    assert!(second > first);

    // A ZSK rollover: the next ZSK made in the token too.
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["zone-key-rollover", ZONE, "zsk", "--control"])
        .arg(d.join("ctl.sock"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while key_files(d).len() < 3 {
        assert!(
            Instant::now() < deadline,
            "no new ZSK:\n{}",
            server.log_tail(20)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(key_files(d)
        .iter()
        .all(|f| f.contains("pkcs11:") && !f.contains("pkcs8")));
    let deadline = Instant::now() + Duration::from_secs(20);
    while kdig(server.addr, &[ZONE, "DNSKEY"])
        .matches("DNSKEY\t256")
        .count()
        < 2
    {
        assert!(
            Instant::now() < deadline,
            "the new ZSK not published:\n{}",
            server.log_tail(20)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let third = verify_axfr(d, server.addr, ZONE, Some(&y), "the new ZSK published");

    // kill -9: started again, the keys found in the token, nothing signed
    // again, the next update signed.
    server.kill9();
    let server = start_lode_config(&d.join("lode.toml"), port, &d.join("lode.log"), &[ZONE])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        verify_axfr(d, server.addr, ZONE, Some(&y), "after kill -9"),
        third
    );
    nsupdate(
        server.addr,
        ZONE,
        &key,
        "update add after 300 A 192.0.2.10\n",
    )
    .unwrap();
    let a = kdig(server.addr, &["+dnssec", &format!("after.{ZONE}"), "A"]);
    assert!(a.contains("RRSIG\tA"), "{a}\n{}", server.log_tail(20));
    verify_axfr(d, server.addr, ZONE, Some(&y), "an update after kill -9");
}
