//! ZONEMD (RFC 8976) as Knot's `zonemd-generate` and `zonemd-verify`:
//!
//! - the same unsigned zone served by knotd and by Lode, each with
//!   `zonemd-generate` (SHA-384 on one zone, SHA-512 on another): the same
//!   serial (both raise the file's by one, as Knot's load does) and the same
//!   ZONEMD record, and again after the same UPDATE to both;
//! - `ldns-verify-zone` takes Lode's zones by AXFR with their ZONEMD, an
//!   unsigned one (`-Z`) and one signed here (`-ZZ`), before and after a
//!   dynamic UPDATE (which gets a fresh ZONEMD);
//! - `zonemd-verify`: a zone file tampered with is refused at reload, the
//!   error names the file and the reason, the old version stays served; a
//!   secondary refuses a transfer whose ZONEMD is wrong, naming the primary.

mod common;

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use common::peers::soa_serial;
use common::zonemd::{axfr_to, knot_zonemd_spec, ldns_verify, tld_zone, tools_present, zonemd_at};
use common::{knot_available, start_lode_config, Server, TempDir};

const KEY: &str = "hmac-sha256:upd-key.:c2lnbmluZy10ZXN0LWtleS0zMi1ieXRlcy0tLS0tLQ==";

fn wait_for(what: &str, log: impl Fn() -> String, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ok() {
        assert!(Instant::now() < deadline, "{what}\n{}", log());
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn hup(pid: u32) {
    assert!(Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .unwrap()
        .success());
}

#[test]
fn knot_and_lode_make_the_same_zonemd() {
    if !knot_available() || !tools_present() {
        return;
    }
    let dir = TempDir::new("zonemd-knot");
    let d = &dir.0;
    let zones = [
        ("tld384.", d.join("tld384.zone"), "zonemd-sha384"),
        ("tld512.", d.join("tld512.zone"), "zonemd-sha512"),
    ];
    for (origin, file, _) in &zones {
        std::fs::write(file, tld_zone(origin, 2026010100)).unwrap();
    }
    let ports = common::peers::distinct_ports(2, &[]);
    // Both take unsigned updates from 127.0.0.1.
    let mut spec = knot_zonemd_spec(ports[0], &zones)
        .acl(lode_peers::Acl::new("upd", &[lode_peers::Action::Update]).from("127.0.0.1"));
    for z in &mut spec.zones {
        z.acls.push("upd".into());
    }
    let knot = Server::start(spec).unwrap_or_else(|e| panic!("knotd: {e}"));
    let conf: String = zones
        .iter()
        .map(|(o, f, g)| {
            format!(
                "[[zone]]\nname = \"{o}\"\nfile = \"{}\"\nacl = [\"xfr\", \"upd\"]\nzonemd-generate = \"{g}\"\n",
                f.display()
            )
        })
        .collect();
    std::fs::write(
        d.join("lode.toml"),
        format!(
            "journal-dir = \"journal\"\n[[acl]]\nid = \"xfr\"\naction = [\"transfer\"]\n\
             [[acl]]\nid = \"upd\"\naddress = [\"127.0.0.1\"]\naction = [\"update\"]\n{conf}"
        ),
    )
    .unwrap();
    let lode = start_lode_config(
        &d.join("lode.toml"),
        ports[1],
        &d.join("lode.log"),
        &["tld384.", "tld512."],
    )
    .unwrap_or_else(|e| panic!("lode: {e}"));
    let at = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
    for (origin, _, generate) in &zones {
        let want = 2026010101;
        wait_for(
            &format!("{origin} at serial {want} from both"),
            || format!("{}\n{}", knot.log(), lode.log()),
            || {
                soa_serial(at(ports[0]), origin) == Some(want)
                    && soa_serial(at(ports[1]), origin) == Some(want)
            },
        );
        let (k, l) = (
            zonemd_at(at(ports[0]), origin),
            zonemd_at(at(ports[1]), origin),
        );
        assert_eq!(k.len(), 1, "{origin}: Knot's ZONEMD ({generate})");
        assert_eq!(l, k, "{origin}: Lode's ZONEMD is Knot's ({generate})");
        let text = axfr_to(at(ports[1]), origin, &d.join(format!("{origin}axfr")));
        ldns_verify(&d.join(format!("{origin}axfr")), false)
            .unwrap_or_else(|e| panic!("{origin}: ldns-verify-zone: {e}\n{text}"));
        // The same UPDATE to both: the same next serial and ZONEMD.
        let change = format!("update add www.{origin} 300 A 192.0.2.80");
        for &port in &ports {
            common::dnssec::knsupdate_as(port, None, origin, &change)
                .unwrap_or_else(|e| panic!("{origin} update to {port}: {e}"));
        }
        wait_for(
            &format!("{origin}'s update served by both"),
            || format!("{}\n{}", knot.log(), lode.log()),
            || {
                soa_serial(at(ports[0]), origin) == Some(want + 1)
                    && soa_serial(at(ports[1]), origin) == Some(want + 1)
            },
        );
        let (k, l) = (
            zonemd_at(at(ports[0]), origin),
            zonemd_at(at(ports[1]), origin),
        );
        assert_eq!(l, k, "{origin}: after the update, Lode's ZONEMD is Knot's");
    }
}

/// Lode's configuration: `tld.` unsigned and `signed.` signed here, both
/// with `zonemd-generate`, both taking updates and giving transfers.
fn generating_config(d: &std::path::Path) -> std::path::PathBuf {
    for (origin, serial) in [("tld.", 1), ("signed.", 7)] {
        std::fs::write(d.join(format!("{origin}zone")), tld_zone(origin, serial)).unwrap();
    }
    let secret = KEY.rsplit(':').next().unwrap();
    let conf = format!(
        "journal-dir = \"journal\"\n\
         [[key]]\nid = \"upd-key.\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{secret}\"\n\
         [[acl]]\nid = \"upd\"\nkey = [\"upd-key.\"]\naction = [\"update\"]\n\
         [[acl]]\nid = \"xfr\"\naction = [\"transfer\"]\n\
         [[zone]]\nname = \"tld.\"\nfile = \"tld.zone\"\nacl = [\"upd\", \"xfr\"]\n\
         zonemd-generate = \"zonemd-sha384\"\n\
         [[zone]]\nname = \"signed.\"\nfile = \"signed.zone\"\nacl = [\"upd\", \"xfr\"]\n\
         zonemd-generate = \"zonemd-sha512\"\ndnssec-signing = true\n"
    );
    let path = d.join("lode.toml");
    std::fs::write(&path, conf).unwrap();
    path
}

#[test]
fn ldns_verify_zone_takes_lodes_zonemd_unsigned_signed_and_after_an_update() {
    if !tools_present() {
        return;
    }
    let dir = TempDir::new("zonemd-ldns");
    let d = &dir.0;
    let conf = generating_config(d);
    let port = common::pick_port_in(16870, 16889);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let lode = start_lode_config(&conf, port, &d.join("lode.log"), &["tld.", "signed."])
        .unwrap_or_else(|e| panic!("lode: {e}"));
    let check = |origin: &str, signed: bool, when: &str| {
        let path = d.join(format!("{origin}{when}.axfr"));
        let text = axfr_to(addr, origin, &path);
        assert!(text.contains("ZONEMD"), "{origin} {when}: a ZONEMD\n{text}");
        ldns_verify(&path, signed)
            .unwrap_or_else(|e| panic!("{origin} {when}: ldns-verify-zone: {e}\n{text}"));
    };
    wait_for(
        "tld. with its ZONEMD",
        || lode.log(),
        || !zonemd_at(addr, "tld.").is_empty() && !zonemd_at(addr, "signed.").is_empty(),
    );
    check("tld.", false, "loaded");
    check("signed.", true, "loaded");
    for origin in ["tld.", "signed."] {
        let before = soa_serial(addr, origin).unwrap();
        common::dnssec::knsupdate(
            port,
            KEY,
            origin,
            &format!("update add new.{origin} 300 A 192.0.2.77\nupdate delete sortme.{origin} AAAA 2001:db8::3:62"),
        )
        .unwrap_or_else(|e| panic!("{origin}: update: {e}\n{}", lode.log()));
        wait_for(
            &format!("{origin} past serial {before}"),
            || lode.log(),
            || soa_serial(addr, origin).is_some_and(|s| s > before),
        );
        let z = zonemd_at(addr, origin);
        assert_eq!(z.len(), 1, "{origin}: one ZONEMD after the update: {z:?}");
        check(origin, origin == "signed.", "updated");
    }
    // Started again on its journal: the same versions (the ZONEMD found
    // as asked, not made again), as Knot keeps its serial at a restart.
    let served = || {
        ["tld.", "signed."]
            .map(|o| (soa_serial(addr, o), zonemd_at(addr, o)))
            .to_vec()
    };
    let before = served();
    drop(lode);
    let lode = start_lode_config(&conf, port, &d.join("lode2.log"), &["tld.", "signed."])
        .unwrap_or_else(|e| panic!("lode again: {e}"));
    assert_eq!(served(), before, "{}", lode.log());
}

/// The records of a kdig AXFR as a zone file (the closing SOA left out),
/// each line passed through `edit` (its fields: owner, TTL, class, type,
/// RDATA fields).
fn as_file(axfr: &str, edit: impl Fn(&mut Vec<String>)) -> String {
    let mut soa = 0;
    let mut out = String::new();
    for l in axfr
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
    {
        let mut f: Vec<String> = l.split_whitespace().map(str::to_string).collect();
        if f.get(3).map(String::as_str) == Some("SOA") {
            soa += 1;
            if soa > 1 {
                continue;
            }
        }
        edit(&mut f);
        out.push_str(&f.join(" "));
        out.push('\n');
    }
    out
}

#[test]
fn zonemd_verify_refuses_a_tampered_file_or_transfer_and_keeps_serving() {
    if !tools_present() {
        return;
    }
    let dir = TempDir::new("zonemd-verify");
    let d = &dir.0;
    // A primary that makes the ZONEMD of good. and mine., and serves bad.
    // from its file as it is (a ZONEMD that does not fit).
    for origin in ["good.", "mine.", "bad."] {
        std::fs::write(d.join(format!("{origin}zone")), tld_zone(origin, 5)).unwrap();
    }
    let ports = common::peers::distinct_ports(2, &[]);
    let primary = d.join("primary.toml");
    std::fs::write(
        &primary,
        "journal-dir = \"pj\"\n[[acl]]\nid = \"xfr\"\naction = [\"transfer\"]\n\
         [[zone]]\nname = \"good.\"\nfile = \"good.zone\"\nacl = [\"xfr\"]\nzonemd-generate = \"zonemd-sha384\"\n\
         [[zone]]\nname = \"mine.\"\nfile = \"mine.zone\"\nacl = [\"xfr\"]\nzonemd-generate = \"zonemd-sha384\"\n\
         [[zone]]\nname = \"bad.\"\nfile = \"bad.zone\"\nacl = [\"xfr\"]\n",
    )
    .unwrap();
    let at = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
    let p = start_lode_config(
        &primary,
        ports[0],
        &d.join("primary.log"),
        &["good.", "mine.", "bad."],
    )
    .unwrap_or_else(|e| panic!("primary: {e}"));
    for origin in ["good.", "mine."] {
        wait_for(
            &format!("{origin} with its ZONEMD"),
            || p.log(),
            || !zonemd_at(at(ports[0]), origin).is_empty(),
        );
    }
    // bad.: the good zone's records and ZONEMD under another name, one
    // address changed.
    let good = axfr_to(at(ports[0]), "good.", &d.join("good.axfr"));
    let bad = as_file(&good, |_| {})
        .replace("good.", "bad.")
        .replace("198.51.100.1", "198.51.100.9");
    std::fs::write(d.join("bad.zone"), bad).unwrap();
    hup(p.pid());
    wait_for(
        "bad. reloaded",
        || p.log(),
        || zonemd_at(at(ports[0]), "bad.").len() == 1,
    );
    // mine.: its records and ZONEMD as the primary serves them, a file of
    // the secondary's own.
    let mine = axfr_to(at(ports[0]), "mine.", &d.join("mine.axfr"));
    std::fs::write(d.join("mine-s.zone"), as_file(&mine, |_| {})).unwrap();

    let secondary = d.join("secondary.toml");
    std::fs::write(
        &secondary,
        format!(
            "journal-dir = \"sj\"\n\
             [[remote]]\nid = \"p\"\naddress = [\"127.0.0.1@{}\"]\n\
             [[zone]]\nname = \"mine.\"\nfile = \"mine-s.zone\"\nzonemd-verify = true\n\
             [[zone]]\nname = \"good.\"\nmaster = [\"p\"]\nzonemd-verify = true\n\
             [[zone]]\nname = \"bad.\"\nmaster = [\"p\"]\nzonemd-verify = true\n",
            ports[0]
        ),
    )
    .unwrap();
    let s = start_lode_config(&secondary, ports[1], &d.join("secondary.log"), &["mine."])
        .unwrap_or_else(|e| panic!("secondary: {e}"));
    let serial = soa_serial(at(ports[1]), "mine.").unwrap();
    wait_for(
        "good. transferred and verified",
        || s.log(),
        || soa_serial(at(ports[1]), "good.").is_some(),
    );
    let from = format!("AXFR from 127.0.0.1:{}", ports[0]);
    wait_for(
        "bad.'s transfer refused, naming the primary and the reason",
        || s.log(),
        || {
            s.log().lines().any(|l| {
                l.contains(&from)
                    && l.contains("ZONEMD verification failed: the digest (hash algorithm 1) does not match the zone's contents")
            })
        },
    );
    assert_eq!(soa_serial(at(ports[1]), "bad."), None, "bad. is not served");

    // mine.zone edited without making its ZONEMD again (a new serial, an
    // address changed): the reload is refused, the old version stays.
    let next = (serial + 1).to_string();
    let tampered = as_file(&mine, |f| {
        match f.get(3).map(String::as_str) {
            Some("SOA") => f[6] = next.clone(),
            Some("ZONEMD") => f[4] = next.clone(),
            _ => {}
        }
        if f[0].starts_with("ns1.nic.") && f[3] == "A" {
            f[4] = "192.0.2.99".into();
        }
    });
    std::fs::write(d.join("mine-s.zone"), tampered).unwrap();
    hup(s.pid());
    wait_for(
        "the refused reload is logged",
        || s.log(),
        || s.log().contains("mine.: reload failed"),
    );
    let log = s.log();
    assert!(
        log.lines().any(|l| l.contains("mine-s.zone")
            && l.contains("ZONEMD verification failed: the digest (hash algorithm 1) does not match the zone's contents")),
        "the error names the file and the reason:\n{log}"
    );
    assert_eq!(
        soa_serial(at(ports[1]), "mine."),
        Some(serial),
        "the old version stays"
    );
}
