//! DNSSEC checks shared by the signing tests: the verifiers and tools
//! they need, and a zone taken by AXFR and verified whole.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};

/// True when the verifiers and tools are installed (else the test is
/// skipped, unless `LODE_REQUIRE_DNSSEC_TOOLS` asks for them).
pub fn tools_present() -> bool {
    let have = |t: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {t}"))
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let all = [
        "ldns-verify-zone",
        "dnssec-verify",
        "unbound",
        "knsupdate",
        "kdig",
    ]
    .iter()
    .all(|t| have(t));
    if !all {
        assert!(
            std::env::var_os("LODE_REQUIRE_DNSSEC_TOOLS").is_none(),
            "ldns-verify-zone, dnssec-verify, kzonecheck, unbound, kdig and knsupdate are required (LODE_REQUIRE_DNSSEC_TOOLS)"
        );
        eprintln!("SKIP: install ldnsutils bind9-utils knot-dnssecutils unbound knot-dnsutils");
    }
    all
}

/// The zone `zone` by AXFR from `addr` (TSIG `tsig`, kdig's `-y`, if
/// given) into `dir/axfr.txt`, checked whole by `ldns-verify-zone`, BIND's
/// `dnssec-verify` and Knot's `kzonecheck --dnssec on`; its serial.
pub fn verify_axfr(
    dir: &Path,
    addr: SocketAddr,
    zone: &str,
    tsig: Option<&str>,
    when: &str,
) -> u32 {
    let mut kdig = Command::new("kdig");
    kdig.arg(format!("@{}", addr.ip()))
        .args(["-p", &addr.port().to_string()]);
    if let Some(y) = tsig {
        kdig.args(["-y", y]);
    }
    let out = kdig
        .args([zone, "AXFR", "+nocomments"])
        .output()
        .expect("kdig");
    // The zone's records only (a signed transfer ends with its TSIG).
    let text: String = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.split_whitespace().nth(3) != Some("TSIG"))
        .map(|l| format!("{l}\n"))
        .collect();
    let path = dir.join("axfr.txt");
    std::fs::write(&path, &text).unwrap();
    let verifiers: [(&str, Vec<&str>); 3] = [
        ("ldns-verify-zone", vec![]),
        ("dnssec-verify", vec!["-q", "-o", zone]),
        ("kzonecheck", vec!["-o", zone, "-d", "on"]),
    ];
    for (tool, args) in verifiers {
        let out = Command::new(tool).args(args).arg(&path).output().unwrap();
        assert!(
            out.status.success(),
            "{when}: {tool}: {}{}\n{text}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let soa = text
        .lines()
        .find(|l| l.split_whitespace().nth(3) == Some("SOA"))
        .expect("an SOA in the transfer");
    soa.split_whitespace().nth(6).unwrap().parse().unwrap()
}
