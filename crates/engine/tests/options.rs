//! EDNS options and the CH identity: NSID (RFC 5001), padding (RFC 7830),
//! the server's extra options and errors (cookies), the RRL slip, and CH TXT
//! `id.server`/`version.bind` (RFC 4892) — each checked on the wire.

mod common;
use common::load_zones;

use lode_engine::{answer, answer_with, slip, Extra, Settings, Transport};

/// A query for `name` (dotted, absolute) of `qtype`/`qclass`, with an OPT
/// record carrying `options` (whole, wire form) when `edns`.
fn query(name: &str, qtype: u16, qclass: u16, edns: bool, options: &[u8]) -> Vec<u8> {
    let mut q = vec![0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, u8::from(edns)];
    for label in name.trim_end_matches('.').split('.') {
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.push(0);
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&qclass.to_be_bytes());
    if edns {
        q.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0]);
        q.extend_from_slice(&(options.len() as u16).to_be_bytes());
        q.extend_from_slice(options);
    }
    q
}

/// A record of a response: (type, class, ttl, rdata).
type Rr = (u16, u16, u32, Vec<u8>);

/// Header flags byte 2–3, RCODE, and the records of every section in order.
struct Reply {
    flags: u16,
    counts: [u16; 4],
    records: Vec<Rr>,
}

fn skip_name(m: &[u8], mut pos: usize) -> usize {
    loop {
        let l = m[pos] as usize;
        if l == 0 {
            return pos + 1;
        }
        if l & 0xc0 == 0xc0 {
            return pos + 2;
        }
        pos += 1 + l;
    }
}

fn decode(m: &[u8]) -> Reply {
    let c = |i: usize| u16::from_be_bytes([m[4 + 2 * i], m[5 + 2 * i]]);
    let counts = [c(0), c(1), c(2), c(3)];
    let mut pos = 12;
    for _ in 0..counts[0] {
        pos = skip_name(m, pos) + 4;
    }
    let mut records = Vec::new();
    for _ in 0..counts[1] + counts[2] + counts[3] {
        pos = skip_name(m, pos);
        let f = |i: usize| u16::from_be_bytes([m[pos + i], m[pos + i + 1]]);
        let (t, cl, len) = (f(0), f(2), f(8) as usize);
        let ttl = u32::from_be_bytes([m[pos + 4], m[pos + 5], m[pos + 6], m[pos + 7]]);
        records.push((t, cl, ttl, m[pos + 10..pos + 10 + len].to_vec()));
        pos += 10 + len;
    }
    assert_eq!(pos, m.len(), "the message ends after its records");
    Reply {
        flags: u16::from_be_bytes([m[2], m[3]]),
        counts,
        records,
    }
}

impl Reply {
    fn rcode(&self) -> u16 {
        self.flags & 0xf
    }
    fn opt(&self) -> &Rr {
        self.records
            .iter()
            .find(|r| r.0 == 41)
            .expect("an OPT record")
    }
    /// The OPT's options as (code, data).
    fn options(&self) -> Vec<(u16, Vec<u8>)> {
        let rd = &self.opt().3;
        let mut out = Vec::new();
        let mut p = 0;
        while p < rd.len() {
            let code = u16::from_be_bytes([rd[p], rd[p + 1]]);
            let len = u16::from_be_bytes([rd[p + 2], rd[p + 3]]) as usize;
            out.push((code, rd[p + 4..p + 4 + len].to_vec()));
            p += 4 + len;
        }
        out
    }
}

fn settings() -> Settings {
    Settings {
        nsid: Some(b"ns-test".as_slice().into()),
        identity: Some("id-test".into()),
        version: Some("v-test".into()),
        padding: true,
        ..Settings::default()
    }
}

fn ask(q: &[u8], t: Transport, s: &Settings) -> Reply {
    let zones = load_zones();
    let mut out = vec![0u8; 65535];
    let n = answer(&zones, q, &mut out, t, s).len;
    assert!(n > 0, "answered");
    decode(&out[..n])
}

const NSID_ASK: &[u8] = &[0, 3, 0, 0];

#[test]
fn nsid_only_when_asked_and_configured() {
    let s = settings();
    let r = ask(
        &query("www.example.com.", 1, 1, true, NSID_ASK),
        Transport::Udp,
        &s,
    );
    assert_eq!(r.options(), vec![(3, b"ns-test".to_vec())]);
    let r = ask(
        &query("www.example.com.", 1, 1, true, &[]),
        Transport::Udp,
        &s,
    );
    assert!(r.options().is_empty(), "not asked");
    let r = ask(
        &query("www.example.com.", 1, 1, true, NSID_ASK),
        Transport::Udp,
        &Settings::default(),
    );
    assert!(r.options().is_empty(), "none configured");
    // Errors carry it too, before the EDE of a REFUSED answer (Knot's order).
    let r = ask(
        &query("elsewhere.org.", 1, 1, true, NSID_ASK),
        Transport::Udp,
        &s,
    );
    assert_eq!(r.rcode(), 5);
    let codes: Vec<u16> = r.options().iter().map(|o| o.0).collect();
    assert_eq!(codes, vec![3, 15]);
}

#[test]
fn chaos_identity_and_version() {
    let s = settings();
    for (name, text) in [
        ("id.server.", "id-test"),
        ("HOSTNAME.bind.", "id-test"),
        ("version.server.", "v-test"),
        ("version.BIND.", "v-test"),
    ] {
        let r = ask(&query(name, 16, 3, false, &[]), Transport::Udp, &s);
        assert_eq!(r.rcode(), 0, "{name}");
        assert_eq!(r.flags & 0x0400, 0, "no AA");
        assert_eq!(r.counts[1], 1);
        let mut rdata = vec![text.len() as u8];
        rdata.extend_from_slice(text.as_bytes());
        assert_eq!(r.records[0], (16, 3, 0, rdata), "{name}");
    }
    // Other types and names, and names whose text is off: REFUSED.
    for (name, qtype) in [("id.server.", 1), ("fortune.", 16), ("x.id.server.", 16)] {
        let r = ask(&query(name, qtype, 3, false, &[]), Transport::Udp, &s);
        assert_eq!(r.rcode(), 5, "{name} {qtype}");
    }
    let r = ask(
        &query("id.server.", 16, 3, false, &[]),
        Transport::Udp,
        &Settings::default(),
    );
    assert_eq!(r.rcode(), 5);
    // With EDNS and NSID asked: the OPT follows, with the NSID.
    let r = ask(
        &query("id.server.", 16, 3, true, NSID_ASK),
        Transport::Tcp,
        &s,
    );
    assert_eq!(r.options()[0], (3, b"ns-test".to_vec()));
    // A long identity is cut to one 255-octet string.
    let long = Settings {
        identity: Some("x".repeat(300).into()),
        ..settings()
    };
    let r = ask(
        &query("id.server.", 16, 3, false, &[]),
        Transport::Tcp,
        &long,
    );
    assert_eq!(r.records[0].3.len(), 256);
}

#[test]
fn padding_over_tcp_for_padded_queries() {
    let zones = load_zones();
    let s = settings();
    let mut out = vec![0u8; 65535];
    let padded = query("www.example.com.", 1, 1, true, &[0, 12, 0, 3, 0, 0, 0]);
    let n = answer(&zones, &padded, &mut out, Transport::Tcp, &s).len;
    assert_eq!(n % 468, 0, "a multiple of the block: {n}");
    let r = decode(&out[..n]);
    let pad = r
        .options()
        .into_iter()
        .find(|o| o.0 == 12)
        .expect("padding");
    assert!(pad.1.iter().all(|&b| b == 0));
    // Not over UDP, not for unpadded queries, not when switched off.
    for (q, t, s) in [
        (&padded, Transport::Udp, settings()),
        (
            &query("www.example.com.", 1, 1, true, &[]),
            Transport::Tcp,
            settings(),
        ),
        (
            &padded,
            Transport::Tcp,
            Settings {
                padding: false,
                ..settings()
            },
        ),
    ] {
        let r = ask(q, t, &s);
        assert!(r.options().iter().all(|o| o.0 != 12), "{t:?}");
    }
}

#[test]
fn extra_options_and_errors_from_the_server() {
    let zones = load_zones();
    let s = settings();
    let mut out = vec![0u8; 65535];
    let cookie = [0u8, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8];
    let q = query("www.example.com.", 1, 1, true, NSID_ASK);
    let mut seen = false;
    let a = answer_with(&zones, &q, &mut out, Transport::Udp, &s, |parsed| {
        seen = parsed.edns.is_some();
        Extra {
            options: &cookie,
            ..Extra::default()
        }
    });
    assert!(seen, "the policy sees the parsed query");
    let r = decode(&out[..a.len]);
    assert_eq!(r.counts[1], 1, "answered");
    assert_eq!(
        r.options(),
        vec![(3, b"ns-test".to_vec()), (10, cookie[4..].to_vec())]
    );
    // BADCOOKIE (23): RCODE 7 in the header, 1 in the OPT's extended bits.
    let a = answer_with(&zones, &q, &mut out, Transport::Udp, &s, |_| Extra {
        options: &cookie,
        error: Some(23),
        ..Extra::default()
    });
    let r = decode(&out[..a.len]);
    assert_eq!((r.rcode(), r.counts[1]), (7, 0));
    assert_eq!(r.opt().2 >> 24, 1, "extended RCODE bits");
    assert_eq!(r.options()[1].0, 10);
    // BADVERS is answered before the policy runs, without its options.
    let mut v1 = q.clone();
    let opt_ttl = v1.len() - 4 - 4 - 2;
    v1[opt_ttl + 1] = 1;
    let a = answer_with(&zones, &v1, &mut out, Transport::Udp, &s, |_| {
        panic!("policy asked for a BADVERS query")
    });
    let r = decode(&out[..a.len]);
    assert!(r.options().iter().all(|o| o.0 != 10));
    // A drop sends nothing.
    let a = answer_with(&zones, &q, &mut out, Transport::Udp, &s, |_| Extra {
        drop: true,
        ..Extra::default()
    });
    assert_eq!(a.len, 0);
}

#[test]
fn slip_is_an_empty_truncated_answer() {
    let s = settings();
    let mut out = vec![0u8; 1232];
    let q = query("nothing.example.com.", 1, 1, true, NSID_ASK);
    let n = slip(&q, &mut out, 3, &s, &Extra::default());
    let r = decode(&out[..n]);
    assert_eq!(r.flags & 0x8000, 0x8000, "QR");
    assert_eq!(r.flags & 0x0600, 0x0600, "AA and TC");
    assert_eq!(r.rcode(), 3, "the answer's RCODE kept");
    assert_eq!(r.counts, [1, 0, 0, 1]);
    assert_eq!(r.options()[0].0, 3);
    assert_eq!(slip(&[1, 2, 3], &mut out, 0, &s, &Extra::default()), 0);
}
