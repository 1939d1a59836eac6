//! Interop with real Knot DNS tools, for every algorithm:
//!
//! * a `knotd` (127.0.0.1:15420) with one key per algorithm answers queries
//!   signed by `sign_request` NOERROR, and `verify_response` accepts its
//!   signed replies; its TSIG record is byte for byte what `sign_response`
//!   writes over the same reply at the same time;
//! * its BADKEY, BADSIG and BADTIME replies are byte for byte what
//!   `append_error` writes after `verify_request` reported the same failure;
//! * what `kdig -y alg:name:secret` sends (received on 127.0.0.1:15421) passes
//!   `verify_request`, and kdig accepts the reply `sign_response` signs.
//!
//! Skipped loudly when knotd or kdig is missing, unless `LODE_REQUIRE_KNOT=1`.

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lode_peers::{installed_or_skip, Acl, Action, Content, Kind, Server, Spec, Zone};

use lode_tsig::{
    append_error, sign_request_vec, sign_response, verify_request, verify_response, Algorithm, Key,
    Keys, TsigError, Verified, VerifyError,
};

const KNOT_PORT: u16 = 15420;
const KDIG_PORT: u16 = 15421;

/// A program from PATH, else from Debian's /usr/sbin (not on every PATH).
fn program(name: &str) -> String {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()));
    if on_path || !Path::new("/usr/sbin").join(name).is_file() {
        name.to_string()
    } else {
        format!("/usr/sbin/{name}")
    }
}

/// True when `tool` runs; otherwise skip loudly, or fail under LODE_REQUIRE_KNOT=1.
fn available(tool: &str, package: &str) -> bool {
    let ok = Command::new(program(tool))
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        if std::env::var("LODE_REQUIRE_KNOT").as_deref() == Ok("1") {
            panic!("{tool} is not installed but LODE_REQUIRE_KNOT=1");
        }
        eprintln!("SKIPPED: {tool} (Debian package `{package}`) is not installed");
    }
    ok
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A secret per algorithm (the digest size, as `lode keygen` makes them).
fn key(alg: Algorithm) -> Key {
    let secret: Vec<u8> = (0..alg.digest_len() as u8)
        .map(|i| i.wrapping_mul(37) ^ 0x5A)
        .collect();
    let name = format!("{}.key.", alg.name());
    Key::new(&name.parse().expect("name"), alg, &secret).expect("key")
}

/// knotd on 127.0.0.1:[`KNOT_PORT`] serving `example.` to queries signed
/// with any of the keys (and unsigned ones); stopped by PID when dropped.
fn start_knot() -> Server {
    let mut spec = Spec::new(Kind::Knot, KNOT_PORT);
    let mut signed = Acl::new("signed", &[Action::Query]).from("127.0.0.1");
    for alg in Algorithm::ALL {
        let k = key(alg);
        let name = k.name().to_string();
        spec = spec.key(lode_peers::Key::new(
            &name,
            &alg.to_string(),
            &k.secret_base64(),
        ));
        signed = signed.key(&name);
    }
    let zone = "$ORIGIN example.\n$TTL 3600\n\
                @ SOA ns.example. host.example. 1 3600 900 604800 300\n\
                @ NS ns.example.\nns A 192.0.2.1\nwww A 192.0.2.2\n";
    let spec = spec.acl(signed).zone(
        Zone::primary("example.", Content::Text(zone.into()))
            .acls(&["signed"])
            .journal(false),
    );
    Server::start(&spec).unwrap_or_else(|e| panic!("{e}"))
}

/// A query for `example. SOA` with ID `id`, RD, OPT when `edns`.
fn query(id: u16, edns: bool) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, u8::from(edns)]);
    m.extend_from_slice(b"\x07example\x00\x00\x06\x00\x01");
    if edns {
        m.extend_from_slice(&[0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0]);
    }
    m
}

/// Sends `q` to knotd over UDP and returns the reply (None after 500 ms).
fn exchange(q: &[u8]) -> Option<Vec<u8>> {
    let sock = UdpSocket::bind("127.0.0.1:0").expect("socket");
    sock.set_read_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    sock.send_to(q, ("127.0.0.1", KNOT_PORT)).ok()?;
    let mut buf = [0u8; 4096];
    let (n, _) = sock.recv_from(&mut buf).ok()?;
    Some(buf[..n].to_vec())
}

/// The fields of the TSIG record that ends `msg`, written uncompressed with
/// owner `owner` and algorithm `alg`: (offset of the record, time signed, MAC, other data).
fn tsig_at_end<'m>(msg: &'m [u8], owner: &[u8], alg: &[u8]) -> (usize, u64, &'m [u8], &'m [u8]) {
    let be16 = |b: &[u8]| usize::from(u16::from_be_bytes([b[0], b[1]]));
    for start in (12..msg.len().saturating_sub(owner.len() + 10)).rev() {
        let rr = &msg[start..];
        let fixed = &rr[owner.len()..];
        if !rr.starts_with(owner) || !fixed.starts_with(&[0, 250, 0, 255, 0, 0, 0, 0]) {
            continue;
        }
        let rdata = &fixed[10..];
        if be16(&fixed[8..]) != rdata.len() || !rdata.starts_with(alg) {
            continue;
        }
        let t = &rdata[alg.len()..];
        let time = t[..6].iter().fold(0u64, |a, &b| (a << 8) | u64::from(b));
        let mac_len = be16(&t[8..]);
        let mac = &t[10..10 + mac_len];
        let other = &t[10 + mac_len + 6..];
        return (start, time, mac, other);
    }
    panic!("no TSIG record at the end of {msg:02x?}");
}

/// `reply` without its final TSIG record at `start`, ARCOUNT one less.
fn without_tsig(reply: &[u8], start: usize) -> Vec<u8> {
    let mut body = reply[..start].to_vec();
    let ar = u16::from_be_bytes([body[10], body[11]]) - 1;
    body[10..12].copy_from_slice(&ar.to_be_bytes());
    body
}

#[test]
fn knotd_accepts_our_requests_and_we_check_its_replies() {
    if installed_or_skip(Kind::Knot).is_none() {
        return;
    }
    let _knot = start_knot();
    let keys: Keys = Algorithm::ALL
        .into_iter()
        .map(key)
        .collect::<Result<_, _>>()
        .expect("ring");
    for (i, alg) in Algorithm::ALL.into_iter().enumerate() {
        let k = key(alg);
        let owner = k.name().as_wire();
        let alg_wire = alg.wire_name();
        for edns in [true, false] {
            // Signed: NOERROR, a reply we verify, and the very TSIG we would write.
            let mut q = query(0x100 + i as u16, edns);
            let mac = sign_request_vec(&mut q, &k, now()).expect("sign");
            let r = exchange(&q).expect("reply");
            assert_eq!(r[3] & 0x0F, 0, "{alg}: NOERROR");
            assert_eq!(u16::from_be_bytes([r[6], r[7]]), 1, "{alg}: the SOA");
            let t = verify_response(&r, &k, mac.as_slice(), now())
                .unwrap_or_else(|e| panic!("{alg}: {e}"));
            let (start, time, _, _) = tsig_at_end(&r, owner, alg_wire);
            assert_eq!(t.time_signed, time);
            let mut buf = without_tsig(&r, start);
            let body_len = buf.len();
            buf.resize(r.len(), 0);
            let a = sign_response(&mut buf, body_len, &k, mac.as_slice(), time, 0).expect("sign");
            assert_eq!(&buf[..a.len], &r[..], "{alg}: our TSIG = knotd's");
        }

        // Another secret: NOTAUTH, BADSIG, unsigned; the same bytes from append_error.
        let wrong = Key::new(k.name(), alg, b"not the secret").expect("key");
        let mut q = query(0x200 + i as u16, true);
        let mac = sign_request_vec(&mut q, &wrong, now()).expect("sign");
        let r = exchange(&q).expect("reply");
        assert_eq!(r[3] & 0x0F, 9, "{alg}: NOTAUTH");
        assert_eq!(
            verify_response(&r, &wrong, mac.as_slice(), now()).map(|_| ()),
            Err(VerifyError::Rejected {
                error: 16,
                server_time: None
            }),
            "{alg}"
        );
        same_error_reply(&q, &r, &keys, now(), TsigError::BadSig, owner, alg_wire);

        // Time signed 1000 s ago: BADTIME, signed with the key over our MAC.
        let mut q = query(0x300 + i as u16, true);
        let mac = sign_request_vec(&mut q, &k, now() - 1000).expect("sign");
        let r = exchange(&q).expect("reply");
        assert_eq!(r[3] & 0x0F, 9, "{alg}: NOTAUTH");
        let (_, _, _, other) = tsig_at_end(&r, owner, alg_wire);
        let server_time = other.iter().fold(0u64, |a, &b| (a << 8) | u64::from(b));
        assert_eq!(
            verify_response(&r, &k, mac.as_slice(), now()).map(|_| ()),
            Err(VerifyError::Rejected {
                error: 18,
                server_time: Some(server_time)
            }),
            "{alg}"
        );
        same_error_reply(
            &q,
            &r,
            &keys,
            server_time,
            TsigError::BadTime,
            owner,
            alg_wire,
        );
    }

    // An unknown key name and the algorithm name in mixed case: BADKEY,
    // the key name echoed in lower case (Knot lower-cases owners on parse),
    // the algorithm name as sent.
    let unknown = Key::from_text("No.Such.Key", Algorithm::HmacSha256, "c2VjcmV0").expect("key");
    let mut q = query(0x400, true);
    sign_request_vec(&mut q, &unknown, now()).expect("sign");
    let at = query(0x400, true).len();
    q[at + 1] = b'N';
    q[at + 4] = b'S';
    let alg_at = at + unknown.name().as_wire().len() + 10;
    q[alg_at + 1..alg_at + 5].copy_from_slice(b"HMAC");
    let r = exchange(&q).expect("reply");
    assert_eq!(r[3] & 0x0F, 9, "NOTAUTH");
    same_error_reply(
        &q,
        &r,
        &keys,
        now(),
        TsigError::BadKey,
        b"\x02no\x04such\x03key\x00",
        b"\x0bHMAC-sha256\x00",
    );
}

/// Checks that `verify_request` finds `error` in `q` and that `append_error`
/// on knotd's reply `r` minus its TSIG record gives `r` back.
fn same_error_reply(
    q: &[u8],
    r: &[u8],
    keys: &Keys,
    now: u64,
    error: TsigError,
    owner: &[u8],
    alg: &[u8],
) {
    let Verified::Failed(f) = verify_request(q, keys, now) else {
        panic!("{error}: verify_request did not fail");
    };
    assert_eq!(f.error, error);
    let (start, _, _, _) = tsig_at_end(r, owner, alg);
    let mut buf = without_tsig(r, start);
    // Our RCODE: append_error sets it.
    buf[3] &= 0xF0;
    let body_len = buf.len();
    buf.resize(r.len() + 64, 0);
    let len = append_error(&mut buf, body_len, &f, now).expect("append");
    assert_eq!(&buf[..len], r, "{error}: our error TSIG = knotd's");
}

#[test]
fn kdig_requests_verify_and_kdig_accepts_our_replies() {
    if !available("kdig", "knot-dnsutils") {
        return;
    }
    let sock = UdpSocket::bind(("127.0.0.1", KDIG_PORT)).expect("bind the capture socket");
    sock.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    for alg in Algorithm::ALL {
        let k = key(alg);
        let keys: Keys = [k.clone()]
            .into_iter()
            .collect::<Result<_, _>>()
            .expect("ring");
        let spec = format!("{}:{}:{}", alg, k.name(), k.secret_base64());
        assert_eq!(spec.parse::<Key>().as_ref(), Ok(&k), "the -y spec parses");
        let kdig = Command::new(program("kdig"))
            .args(["@127.0.0.1", "-p", &KDIG_PORT.to_string(), "-y", &spec])
            .args(["+notcp", "+retry=0", "+timeout=3", "example.", "SOA"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run kdig");
        let mut buf = [0u8; 4096];
        let (n, from): (usize, SocketAddr) = sock.recv_from(&mut buf).expect("kdig's query");
        let q = buf[..n].to_vec();
        let Verified::Signed(s) = verify_request(&q, &keys, now()) else {
            panic!(
                "{alg}: kdig's query did not verify: {:?}",
                verify_request(&q, &keys, now())
            );
        };
        // Reply: the question echoed, QR+AA, NOERROR, no records, signed.
        let qlen = 12 + 9 + 4;
        let mut reply = vec![0u8; 1024];
        reply[..qlen].copy_from_slice(&q[..qlen]);
        reply[2] |= 0x84;
        reply[10..12].copy_from_slice(&[0, 0]);
        let a = sign_response(&mut reply, qlen, s.key, s.request_mac.as_slice(), now(), 0)
            .expect("sign");
        sock.send_to(&reply[..a.len], from).expect("send");
        let out = kdig.wait_with_output().expect("kdig output");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("NOERROR"), "{alg}: {text}");
        assert!(
            !text.contains("verification"),
            "{alg}: kdig rejected our reply: {text}"
        );
    }
}
