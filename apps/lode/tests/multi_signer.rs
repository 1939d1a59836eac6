//! Two signers of one zone (multi-signer, RFC 8901 model 2):
//! two Lode servers — or Lode and Knot 3.2 — sign the same zone with keys
//! of their own; each
//! publishes the other's ZSK (`lode dnssec import-pub`, taken in by `lode
//! zone-sign`). Then every RRSIG either server makes validates with the
//! DNSKEY RRset either server serves — checked by ldns-verify-zone on each
//! zone with the other's DNSKEY RRset put in its place — and a validating
//! unbound that asks both servers at random (both KSKs' DS as trust
//! anchors) validates every answer.
//!
//! ```text
//!  lode A (keys A) ◀─┐                   ┌─▶ lode B (keys B)
//!   DNSKEY: KSK A, ZSK A, ZSK B           DNSKEY: KSK B, ZSK B, ZSK A  (zone example.)
//!                    └── unbound (stub: A and B; anchors: DS A, DS B)
//! ```

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::dnssec::{tools_present, validated_as, verify_axfr};
use common::*;
use lode_peers::{Acl, Action, Content, Kind, Signing, Zone};

const ZONE: &str = "example.";
const TEXT: &str = "$ORIGIN example.\n$TTL 300\n@ SOA ns hm 1 60 10 600 60\n@ NS ns\n\
                    ns A 192.0.2.1\nwww A 192.0.2.2\nmail A 192.0.2.3\n* TXT wild\n\
                    sub NS ns.sub\nns.sub A 192.0.2.4\na.b.c TXT ent\n";

struct Signer {
    dir: PathBuf,
    server: Server,
    /// Knot 3.2 (keys in its KASP database, `keymgr`, `knotc`) or Lode.
    knot: bool,
}

/// Knot 3.2 signing the zone with keys of its own (a policy of its
/// defaults: ECDSA P-256, NSEC, automatic), in `root`/`name`.
fn start_knot(root: &Path, name: &str, ports: (u16, u16)) -> Signer {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("zone"), TEXT).unwrap();
    let port = pick_port_in(ports.0, ports.1);
    let mut spec = server_spec(Kind::Knot, port)
        .acl(Acl::new("xfr", &[Action::Transfer]).from("127.0.0.0/8"))
        .zone(
            Zone::primary(ZONE, Content::File(dir.join("zone")))
                .acls(&["xfr"])
                .signed(Signing::default()),
        );
    spec.dir = Some(dir.clone());
    let server = Server::start(spec).unwrap_or_else(|e| panic!("{name}: {e}"));
    let s = Signer {
        dir,
        server,
        knot: true,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !s.axfr_text().contains("\tDNSKEY\t257") {
        assert!(
            Instant::now() < deadline,
            "Knot did not sign:\n{}",
            s.server.log_tail(20)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    s
}

fn start(root: &Path, name: &str, ports: (u16, u16)) -> Signer {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("zone"), TEXT).unwrap();
    let conf = format!(
        "journal-dir = \"journal\"\ncontrol = \"{}\"\n\
         [[acl]]\nid = \"xfr\"\naction = [\"transfer\"]\n\
         [[zone]]\nname = \"{ZONE}\"\nfile = \"zone\"\nacl = [\"xfr\"]\ndnssec-signing = true\n",
        dir.join("ctl.sock").display()
    );
    std::fs::write(dir.join("lode.toml"), conf).unwrap();
    let port = pick_port_in(ports.0, ports.1);
    let server = start_lode_config(&dir.join("lode.toml"), port, &dir.join("lode.log"), &[ZONE])
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    Signer {
        dir,
        server,
        knot: false,
    }
}

fn lode(args: &[&str], dir: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "lode {args:?}: {text}{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        dir.display()
    );
    text
}

impl Signer {
    /// The zone by AXFR, unverified.
    fn axfr_text(&self) -> String {
        let out = Command::new("kdig")
            .arg(format!("@{}", self.server.addr.ip()))
            .args(["-p", &self.server.addr.port().to_string(), ZONE, "AXFR"])
            .output()
            .expect("kdig");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The zone by AXFR, verified whole; its lines.
    fn axfr(&self, when: &str) -> Vec<String> {
        verify_axfr(&self.dir, self.server.addr, ZONE, None, when);
        std::fs::read_to_string(self.dir.join("axfr.txt"))
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
            .map(str::to_string)
            .collect()
    }

    /// Publishes the DNSKEY records in `file` (import-pub, zone-sign).
    fn import(&self, file: &Path) {
        if self.knot {
            // keymgr takes one BIND .key file a key.
            let conf = self.dir.join("knot.conf");
            let text = std::fs::read_to_string(file).unwrap();
            for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
                let one = self.dir.join(format!("Kimported{i}.key"));
                std::fs::write(&one, format!("{line}\n")).unwrap();
                let out = Command::new(knot_tool("keymgr"))
                    .arg("-c")
                    .arg(&conf)
                    .args([ZONE, "import-pub"])
                    .arg(&one)
                    .output()
                    .expect("keymgr");
                assert!(out.status.success(), "keymgr import-pub: {out:?}");
            }
            let out = Command::new(knot_tool("knotc"))
                .arg("-c")
                .arg(&conf)
                .args(["zone-sign", ZONE])
                .output()
                .expect("knotc");
            assert!(out.status.success(), "knotc zone-sign: {out:?}");
            return;
        }
        let conf = self.dir.join("lode.toml");
        let conf = conf.to_str().unwrap();
        let text = lode(
            &[
                "dnssec",
                "import-pub",
                ZONE,
                file.to_str().unwrap(),
                "-c",
                conf,
            ],
            &self.dir,
        );
        assert!(text.contains("will be published"), "{text}");
        lode(
            &[
                "zone-sign",
                ZONE,
                "--control",
                self.dir.join("ctl.sock").to_str().unwrap(),
            ],
            &self.dir,
        );
    }

    fn ds(&self) -> String {
        if self.knot {
            let out = Command::new(knot_tool("keymgr"))
                .arg("-c")
                .arg(self.dir.join("knot.conf"))
                .args([ZONE, "ds"])
                .output()
                .expect("keymgr");
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            // The SHA-256 DS of the KSK ("example. DS TAG 13 2 HEX").
            return text
                .lines()
                .find(|l| l.split_whitespace().nth(4) == Some("2"))
                .unwrap_or_else(|| panic!("keymgr ds: {text}"))
                .to_string();
        }
        self.server
            .log()
            .lines()
            .find_map(|l| l.split("DS for the parent: ").nth(1).map(str::to_string))
            .expect("the KSK's DS in the log")
    }
}

fn rtype(line: &str) -> &str {
    line.split_whitespace().nth(3).unwrap_or("")
}

fn covered(line: &str) -> &str {
    line.split_whitespace().nth(4).unwrap_or("")
}

#[test]
fn two_lode_signers_publish_each_others_zsk_and_both_validate() {
    if !tools_present() {
        return;
    }
    let root = TempDir::new("multi-signer");
    let a = start(&root.0, "a", (17170, 17174));
    let b = start(&root.0, "b", (17175, 17179));
    each_publishes_the_others_zsk(&root.0, &a, &b, (17180, 17184));
}

/// Lode and Knot 3.2 (`keymgr import-pub`, `knotc zone-sign`) as the two
/// signers.
#[test]
fn lode_and_knot_publish_each_others_zsk_and_both_validate() {
    if !tools_present() || !knot_available() {
        return;
    }
    let root = TempDir::new("multi-signer-knot");
    let a = start(&root.0, "a", (17185, 17189));
    let b = start_knot(&root.0, "b", (17190, 17194));
    each_publishes_the_others_zsk(&root.0, &a, &b, (17195, 17199));
}

fn each_publishes_the_others_zsk(root: &Path, a: &Signer, b: &Signer, unbound_ports: (u16, u16)) {
    let root = &root.to_path_buf();
    let (za, zb) = (a.axfr("A signed"), b.axfr("B signed"));
    let zsk = |lines: &[String]| -> String {
        lines
            .iter()
            .filter(|l| rtype(l) == "DNSKEY" && l.split_whitespace().nth(4) == Some("256"))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    std::fs::write(root.join("zsk-a"), zsk(&za)).unwrap();
    std::fs::write(root.join("zsk-b"), zsk(&zb)).unwrap();
    a.import(&root.join("zsk-b"));
    b.import(&root.join("zsk-a"));
    let deadline = Instant::now() + Duration::from_secs(20);
    let dnskeys = |s: &Signer| {
        s.axfr("after the import")
            .iter()
            .filter(|l| rtype(l) == "DNSKEY")
            .count()
    };
    while dnskeys(a) < 3 || dnskeys(b) < 3 {
        assert!(
            Instant::now() < deadline,
            "the other's ZSK not published:\n{}\n{}",
            a.server.log_tail(10),
            b.server.log_tail(10)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let listed = lode(
        &[
            "dnssec",
            "list",
            ZONE,
            "-c",
            a.dir.join("lode.toml").to_str().unwrap(),
        ],
        &a.dir,
    );
    assert!(listed.contains("other signer's key"), "{listed}");

    // Each zone with the other's DNSKEY RRset (and its signatures) in
    // place of its own: every RRSIG verifies with it.
    let (za, zb) = (a.axfr("A publishes B's ZSK"), b.axfr("B publishes A's ZSK"));
    let keyset = |z: &[String]| -> Vec<String> {
        z.iter()
            .filter(|l| rtype(l) == "DNSKEY" || (rtype(l) == "RRSIG" && covered(l) == "DNSKEY"))
            .cloned()
            .collect()
    };
    for (zone, other, name) in [
        (&za, &zb, "A with B's DNSKEY RRset"),
        (&zb, &za, "B with A's"),
    ] {
        // (CDS and CDNSKEY, signed by the KSKs as Knot signs them, are
        // each signer's own: the parent reads them with the same signer's
        // DNSKEY RRset. Left out here.)
        let keys_own = |l: &str| {
            matches!(rtype(l), "DNSKEY" | "CDS" | "CDNSKEY")
                || (rtype(l) == "RRSIG" && matches!(covered(l), "DNSKEY" | "CDS" | "CDNSKEY"))
        };
        let mut mixed: Vec<String> = zone.iter().filter(|l| !keys_own(l)).cloned().collect();
        mixed.extend(keyset(other));
        let path = root.join("mixed.zone");
        std::fs::write(&path, mixed.join("\n") + "\n").unwrap();
        let out = Command::new("ldns-verify-zone")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // A resolver asking both at random validates everything.
    let anchor = format!("{}\"\n  trust-anchor: \"{}", a.ds(), b.ds());
    let unbound = common::dnssec::start_unbound(
        root,
        unbound_ports,
        &anchor,
        &[(ZONE, a.server.addr.port()), (ZONE, b.server.addr.port())],
        |port| common::dnssec::ask(port, &format!("www.{ZONE}"), "A").contains("status"),
    );
    for i in 0..40 {
        let (name, t, status) = match i % 4 {
            0 => (format!("www.{ZONE}"), "A", "NOERROR"),
            1 => (format!("no{i}.b.c.{ZONE}"), "A", "NXDOMAIN"),
            2 => (format!("w{i}.{ZONE}"), "TXT", "NOERROR"),
            _ => (format!("mail.{ZONE}"), "AAAA", "NOERROR"),
        };
        let text = common::dnssec::ask(unbound.port, &name, t);
        assert!(
            validated_as(&text, status),
            "{name} {t}: {status} with AD expected\n{text}"
        );
    }
}
