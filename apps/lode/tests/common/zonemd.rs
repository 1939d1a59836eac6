//! ZONEMD checks shared by the tests: a TLD-shaped zone, Knot configured
//! with `zonemd-generate`, a zone taken by AXFR, its ZONEMD record, and
//! ldns's verifier of it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::{udp_exchange, Message, Query};

/// A small TLD-shaped zone `origin` at `serial`: delegations with DS and
/// glue, an upper-case owner, a wildcard, several RDATAs to sort, a TXT
/// with spaces.
pub fn tld_zone(origin: &str, serial: u32) -> String {
    format!(
        "$ORIGIN {origin}\n$TTL 3600\n\
         @ 86400 SOA ns1.nic host.nic {serial} 1800 900 604800 86400\n\
         @ 86400 NS ns1.nic\n@ 86400 NS ns2.nic\n\
         ns1.nic A 192.0.2.1\nns2.nic AAAA 2001:db8::2\n\
         nic MX 20 MAIL.nic\nnic MX 10 mail2.nic\n\
         Domain1 NS ns.domain1\nns.domain1 A 198.51.100.1\n\
         domain1 DS 12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF\n\
         domain2 NS ns1.example.net.\ndomain2 NS NS2.Example.Net.\n\
         sortme AAAA 2001:db8::5:61\nsortme AAAA 2001:db8::3:62\nsortme AAAA 2001:db8::1:65\n\
         * TXT \"a wildcard, digested too\"\n"
    )
}

/// knotd serving `zones` (origin, file, its `zonemd-generate`) on `port`:
/// the differential tests' base, each zone with its setting.
pub fn knot_zonemd_spec(port: u16, zones: &[(&str, PathBuf, &str)]) -> lode_peers::Spec {
    let specs: Vec<super::ZoneSpec> = zones
        .iter()
        .map(|(o, f, _)| super::ZoneSpec {
            origin: o.to_string(),
            file: f.clone(),
        })
        .collect();
    let mut s = super::knot_spec(&specs, port, false);
    for (z, (_, _, generate)) in s.zones.iter_mut().zip(zones) {
        z.extra = format!("    zonemd-generate: {generate}\n    serial-policy: increment\n");
    }
    s
}

/// The zone's apex ZONEMD records as served at `addr` (sorted lines).
pub fn zonemd_at(addr: SocketAddr, origin: &str) -> Vec<String> {
    let Some(r) = udp_exchange(
        addr,
        &Query::new(origin, 63, 1).to_wire(),
        Duration::from_millis(500),
    ) else {
        return Vec::new();
    };
    let mut v: Vec<String> = Message::parse(&r)
        .answer
        .iter()
        .filter(|rr| rr.rtype == 63)
        .map(|rr| rr.line())
        .collect();
    v.sort();
    v
}

/// The zone `origin` by AXFR from `addr` (kdig) into `path`.
pub fn axfr_to(addr: SocketAddr, origin: &str, path: &Path) -> String {
    let out = Command::new("kdig")
        .arg(format!("@{}", addr.ip()))
        .args([
            "-p",
            &addr.port().to_string(),
            origin,
            "AXFR",
            "+nocomments",
        ])
        .output()
        .expect("kdig");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    std::fs::write(path, &text).unwrap();
    text
}

/// `ldns-verify-zone` on `path`, a valid ZONEMD required (`-Z`; signed:
/// `-ZZ`, the zone validly signed as well): its output on failure.
pub fn ldns_verify(path: &Path, signed: bool) -> Result<String, String> {
    let out = Command::new("ldns-verify-zone")
        .arg(if signed { "-ZZ" } else { "-Z" })
        .arg(path)
        .output()
        .expect("ldns-verify-zone");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    match out.status.success() {
        true => Ok(text),
        false => Err(text),
    }
}

/// True when kdig and ldns-verify-zone are installed (else the test is
/// skipped, loudly, unless `LODE_REQUIRE_DNSSEC_TOOLS` asks for them).
pub fn tools_present() -> bool {
    let have = |t: &str| Command::new(t).arg("-h").output().is_ok();
    let all = have("kdig") && have("ldns-verify-zone") && have("knsupdate");
    if !all {
        assert!(
            std::env::var_os("LODE_REQUIRE_DNSSEC_TOOLS").is_none(),
            "kdig, knsupdate and ldns-verify-zone are required (LODE_REQUIRE_DNSSEC_TOOLS)"
        );
        eprintln!("SKIP: install knot-dnsutils and ldnsutils");
    }
    all
}
