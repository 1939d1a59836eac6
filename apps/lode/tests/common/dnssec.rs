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

/// SoftHSM2's PKCS #11 module (Debian `softhsm2`).
pub const SOFTHSM_MODULE: &str = "/usr/lib/softhsm/libsofthsm2.so";

/// A fresh SoftHSM2 token `label` (user PIN in `dir`/pin) in `dir`/tokens,
/// SoftHSM2's configuration (SOFTHSM2_CONF) put in this process's
/// environment, which the servers started after inherit (one token folder
/// per test binary: the variable is the process's). Returns the
/// `[[keystore]]` `config` value for it; None (the test skipped) when
/// SoftHSM2 is missing and LODE_REQUIRE_SOFTHSM is not set.
pub fn softhsm_token(dir: &Path, label: &str) -> Option<String> {
    let util = Command::new("softhsm2-util").arg("--version").output();
    if !Path::new(SOFTHSM_MODULE).is_file() || util.is_err() {
        assert!(
            std::env::var_os("LODE_REQUIRE_SOFTHSM").is_none(),
            "SoftHSM2 missing (apt-get install softhsm2)"
        );
        eprintln!("SKIP: SoftHSM2 missing");
        return None;
    }
    std::fs::create_dir_all(dir.join("tokens")).unwrap();
    let conf = dir.join("softhsm2.conf");
    std::fs::write(
        &conf,
        format!(
            "directories.tokendir = {}\nobjectstore.backend = file\nlog.level = ERROR\n",
            dir.join("tokens").display()
        ),
    )
    .unwrap();
    std::env::set_var("SOFTHSM2_CONF", &conf);
    let out = Command::new("softhsm2-util")
        .args(["--init-token", "--free", "--label", label])
        .args(["--pin", "4321", "--so-pin", "8765"])
        .output()
        .expect("softhsm2-util");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(dir.join("pin"), "4321\n").unwrap();
    let encoded: String = label
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    Some(format!(
        "pkcs11:token={encoded};pin-source={} {SOFTHSM_MODULE}",
        dir.join("pin").display()
    ))
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
    // A zone signed by CSKs alone (no DNSKEY without the SEP flag):
    // dnssec-verify is told to ignore the flag (else "Missing ZSK").
    let csk_only = !text.lines().any(|l| {
        l.split_whitespace().nth(3) == Some("DNSKEY") && l.split_whitespace().nth(4) == Some("256")
    });
    let mut bind_args = vec!["-q", "-o", zone];
    if csk_only {
        bind_args.push("-z");
    }
    let verifiers: [(&str, Vec<&str>); 3] = [
        ("ldns-verify-zone", vec![]),
        ("dnssec-verify", bind_args),
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

/// A validating unbound started by a test; killed (by its PID) when dropped.
pub struct Unbound {
    child: std::process::Child,
    /// Where it answers on 127.0.0.1.
    pub port: u16,
}

impl Drop for Unbound {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts unbound in `dir` on a free port of `ports` (inclusive) — its
/// queries leave from ports above 32767, never from the tests' (it takes
/// random ones, which once took a port a test had just found free) — its
/// trust anchor `anchor` (a DS record's text), each of `stubs` (zone, port
/// on 127.0.0.1) asked directly (special-use names such as `test.` let
/// through); waits up to 10 s until `ready(port)`, else panics with its log.
pub fn start_unbound(
    dir: &Path,
    ports: (u16, u16),
    anchor: &str,
    stubs: &[(&str, u16)],
    ready: impl Fn(u16) -> bool,
) -> Unbound {
    let port = super::pick_port_in(ports.0, ports.1);
    let mut conf = format!(
        "server:\n  interface: 127.0.0.1\n  port: {port}\n  do-not-query-localhost: no\n\
         \x20 username: \"\"\n  chroot: \"\"\n  directory: \"{d}\"\n  pidfile: \"{d}/unbound.pid\"\n\
         \x20 use-syslog: no\n  logfile: \"{d}/unbound.log\"\n  verbosity: 1\n\
         \x20 module-config: \"validator iterator\"\n  trust-anchor: \"{anchor}\"\n\
         \x20 val-log-level: 2\n  harden-dnssec-stripped: yes\n\
         \x20 outgoing-port-avoid: \"0-32767\"\n",
        d = dir.display()
    );
    // A zone named twice is asked at both addresses.
    let mut zones: Vec<&str> = stubs.iter().map(|(z, _)| *z).collect();
    zones.dedup();
    for zone in &zones {
        conf.push_str(&format!("  local-zone: \"{zone}\" nodefault\n"));
    }
    for zone in &zones {
        conf.push_str(&format!("stub-zone:\n  name: \"{zone}\"\n"));
        for (_, at) in stubs.iter().filter(|(z, _)| z == zone) {
            conf.push_str(&format!("  stub-addr: 127.0.0.1@{at}\n"));
        }
    }
    let path = dir.join("unbound.conf");
    std::fs::write(&path, conf).unwrap();
    let child = Command::new("unbound")
        .args(["-d", "-c"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("unbound");
    let u = Unbound { child, port };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if ready(port) {
            return u;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!(
        "unbound did not answer as expected: {}",
        std::fs::read_to_string(dir.join("unbound.log")).unwrap_or_default()
    );
}

/// `kdig +dnssec` of `name` `rtype` to a resolver on 127.0.0.1:`port`: the
/// printed answer.
pub fn ask(port: u16, name: &str, rtype: &str) -> String {
    let out = Command::new("kdig")
        .args([
            "@127.0.0.1",
            "-p",
            &port.to_string(),
            name,
            rtype,
            "+dnssec",
        ])
        .args(["+timeout=3", "+retry=1"])
        .output()
        .expect("kdig");
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// True when `answer` (as [`ask`] prints it) has `status` and AD.
pub fn validated_as(answer: &str, status: &str) -> bool {
    let header = answer
        .lines()
        .filter(|l| l.contains("status:") || l.contains("Flags:"))
        .collect::<Vec<_>>()
        .join(" ");
    header.contains(&format!("status: {status}")) && header.contains(" ad")
}

/// One RFC 2136 update by `knsupdate -y tsig` to 127.0.0.1:`port`: the
/// lines between `zone` and `send`; Err with its complaint when refused.
pub fn knsupdate(port: u16, tsig: &str, zone: &str, lines: &str) -> Result<(), String> {
    knsupdate_as(port, Some(tsig), zone, lines)
}

/// [`knsupdate`], with TSIG or without.
pub fn knsupdate_as(port: u16, tsig: Option<&str>, zone: &str, lines: &str) -> Result<(), String> {
    use std::io::Write as _;
    let mut cmd = Command::new("knsupdate");
    if let Some(y) = tsig {
        cmd.args(["-y", y]);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("knsupdate");
    let script = format!("server 127.0.0.1 {port}\nzone {zone}\n{lines}\nsend\nquit\n");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).to_string())
    }
}

/// The parent zone `test.` of the key tests, delegating `example.test.` (TTLs 3).
pub const PARENT_ZONE: &str = "$TTL 3
@ SOA ns host 1 3600 600 86400 3
@ NS ns
ns A 127.0.0.1
example NS ns.example
ns.example A 127.0.0.1
";

/// The child zone `example.test.` of the key tests (TTLs 3).
pub const CHILD_ZONE: &str = "$TTL 3
@ SOA ns host 1 3600 600 86400 3
@ NS ns
ns A 127.0.0.1
www A 192.0.2.80
www AAAA 2001:db8::80
mail MX 10 www
";
