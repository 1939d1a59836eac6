//! Round trips between the client and server halves, and every way a TSIG fails.

use super::*;
use lode_wire::Name;

const NOW: u64 = 1_700_000_000;

/// A query for `example. SOA`, ID 0xBEEF, RD, with an OPT record when `edns`.
fn query(edns: bool) -> Vec<u8> {
    let mut m = vec![0xBE, 0xEF, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, u8::from(edns)];
    m.extend_from_slice(b"\x07example\x00\x00\x06\x00\x01");
    if edns {
        m.extend_from_slice(&[0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0]);
    }
    m
}

fn key(alg: Algorithm) -> Key {
    Key::from_text("Test.Key", alg, "c2VjcmV0IHNlY3JldCBzZWNyZXQ=").expect("key")
}

fn ring(keys: &[Key]) -> Keys {
    keys.iter()
        .cloned()
        .collect::<Result<Keys, _>>()
        .expect("ring")
}

fn signed(k: &Key, time: u64) -> (Vec<u8>, MacBuf) {
    let mut m = query(true);
    let mac = sign_request_vec(&mut m, k, time).expect("sign");
    (m, mac)
}

/// The response to `q`: the question echoed, QR set, `answers` A records.
fn response(q: &[u8], answers: u16) -> Vec<u8> {
    let mut r = q[..12].to_vec();
    r[2] |= 0x84;
    r[6..8].copy_from_slice(&answers.to_be_bytes());
    r[10..12].copy_from_slice(&[0, 0]);
    r.extend_from_slice(b"\x07example\x00\x00\x06\x00\x01");
    for i in 0..answers {
        r.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2]);
        r.push(i as u8);
    }
    r
}

#[test]
fn round_trip_every_algorithm() {
    for alg in Algorithm::ALL {
        let k = key(alg);
        let keys = ring(std::slice::from_ref(&k));
        let (q, mac) = signed(&k, NOW);
        assert_eq!(mac.len(), alg.digest_len(), "{alg}");
        assert_eq!(&q[10..12], &[0, 2], "ARCOUNT counts the TSIG");
        let Verified::Signed(s) = verify_request(&q, &keys, NOW + 10) else {
            panic!("{alg}: not verified")
        };
        assert_eq!(s.key, &k);
        assert_eq!(s.request_mac, mac);
        assert_eq!(s.time, NOW);
        // The response, signed over the request MAC, checked by the client.
        let mut buf = [0u8; 1024];
        let r = response(&q, 1);
        buf[..r.len()].copy_from_slice(&r);
        let a = sign_response(
            &mut buf,
            r.len(),
            s.key,
            s.request_mac.as_slice(),
            NOW + 11,
            0,
        )
        .expect("sign response");
        let t = verify_response(&buf[..a.len], &k, mac.as_slice(), NOW + 12).expect("verify");
        assert_eq!(t.time_signed, NOW + 11);
        assert_eq!(t.mac, a.mac);
        // Another request MAC: the response does not verify.
        let other = [0u8; 64];
        assert_eq!(
            verify_response(&buf[..a.len], &k, &other[..alg.digest_len()], NOW).map(|_| ()),
            Err(VerifyError::BadSig),
            "{alg}"
        );
    }
}

#[test]
fn unsigned_and_key_case() {
    let k = key(Algorithm::HmacSha256);
    let keys = ring(std::slice::from_ref(&k));
    assert!(matches!(
        verify_request(&query(true), &keys, NOW),
        Verified::Unsigned
    ));
    assert!(matches!(
        verify_request(&query(false), &keys, NOW),
        Verified::Unsigned
    ));
    // The owner in upper case: names compare and digest case-insensitively.
    let (mut q, _) = signed(&k, NOW);
    let at = query(true).len();
    q[at + 1..at + 5].copy_from_slice(b"TEST");
    assert!(matches!(
        verify_request(&q, &keys, NOW),
        Verified::Signed(_)
    ));
}

fn failed(v: Verified<'_>) -> Failure<'_> {
    match v {
        Verified::Failed(f) => f,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn unknown_key_name_or_algorithm_is_badkey() {
    let k = key(Algorithm::HmacSha256);
    let (q, _) = signed(&k, NOW);
    let empty = Keys::new();
    let f = failed(verify_request(&q, &empty, NOW));
    assert_eq!(f.error, TsigError::BadKey);
    assert!(f.key.is_none());
    assert_eq!(f.key_name.as_ref().to_string(), "test.key.");
    assert_eq!(f.algorithm.as_ref().as_wire(), b"\x0bhmac-sha256\x00");
    // Same name, other algorithm.
    let keys = ring(&[key(Algorithm::HmacSha1)]);
    assert_eq!(
        failed(verify_request(&q, &keys, NOW)).error,
        TsigError::BadKey
    );
    // Unknown algorithm name.
    let keys = ring(std::slice::from_ref(&k));
    let mut q2 = q.clone();
    let p = q2
        .windows(11)
        .position(|w| w == b"hmac-sha256")
        .expect("alg");
    q2[p + 10] = b'9';
    assert_eq!(
        failed(verify_request(&q2, &keys, NOW)).error,
        TsigError::BadKey
    );
}

#[test]
fn tampered_message_or_mac_is_badsig() {
    let k = key(Algorithm::HmacSha384);
    let keys = ring(std::slice::from_ref(&k));
    let (q, _) = signed(&k, NOW);
    let mut bad = q.clone();
    bad[query(true).len() - 4] ^= 0x80; // the OPT's DO bit
    assert_eq!(
        failed(verify_request(&bad, &keys, NOW)).error,
        TsigError::BadSig
    );
    let mut bad = q.clone();
    let mac_at = q.len() - 6 - 48;
    bad[mac_at] ^= 0x80;
    let f = failed(verify_request(&bad, &keys, NOW));
    assert_eq!(f.error, TsigError::BadSig);
    assert!(f.key.is_none(), "BADSIG is answered unsigned");
    // Another secret.
    let other = Key::from_text("test.key", Algorithm::HmacSha384, "b3RoZXI=").expect("key");
    let (q, _) = signed(&other, NOW);
    assert_eq!(
        failed(verify_request(&q, &keys, NOW)).error,
        TsigError::BadSig
    );
    // The message ID changed in transit: the original ID restores it.
    let (mut q, _) = signed(&k, NOW);
    q[0] = 0x12;
    assert!(matches!(
        verify_request(&q, &keys, NOW),
        Verified::Signed(_)
    ));
}

#[test]
fn time_outside_fudge_is_badtime_and_signed() {
    let k = key(Algorithm::HmacSha256);
    let keys = ring(std::slice::from_ref(&k));
    let (q, mac) = signed(&k, NOW);
    for now in [NOW + 300, NOW - 300] {
        assert!(matches!(
            verify_request(&q, &keys, now),
            Verified::Signed(_)
        ));
    }
    for now in [NOW + 301, NOW - 301] {
        let f = failed(verify_request(&q, &keys, now));
        assert_eq!(f.error, TsigError::BadTime);
        assert_eq!(f.key, Some(&k));
        assert_eq!(f.request_mac, mac);
        assert_eq!(f.time_signed, NOW);
    }
    // Time signed 0 is BADTIME whatever the clock (Knot DNS 3.2).
    let (q0, _) = signed(&k, 0);
    assert_eq!(
        failed(verify_request(&q0, &keys, 0)).error,
        TsigError::BadTime
    );

    // The BADTIME response: NOTAUTH, signed, other data = our clock; the
    // client checks its MAC and reports the server time.
    let f = failed(verify_request(&q, &keys, NOW + 1000));
    let mut buf = [0u8; 1024];
    let r = response(&q, 0);
    buf[..r.len()].copy_from_slice(&r);
    let len = append_error(&mut buf, r.len(), &f, NOW + 1000).expect("append");
    assert_eq!(buf[3] & 0x0F, 9, "NOTAUTH");
    assert_eq!(
        verify_response(&buf[..len], &k, mac.as_slice(), NOW).map(|_| ()),
        Err(VerifyError::Rejected {
            error: 18,
            server_time: Some(NOW + 1000)
        })
    );
    let tail = &buf[len - 12..len];
    assert_eq!(&tail[..4], &[0xBE, 0xEF, 0, 18], "original ID, BADTIME");
    assert_eq!(&tail[4..6], &[0, 6], "other length");
}

#[test]
fn badkey_and_badsig_responses_are_unsigned() {
    let k = key(Algorithm::HmacSha1);
    let (q, mac) = signed(&k, NOW);
    let empty = Keys::new();
    let f = failed(verify_request(&q, &empty, NOW));
    let mut buf = [0u8; 512];
    let mut r = response(&q, 0);
    r[0] = 0x55; // a response ID unlike the request's: the original ID follows it
    buf[..r.len()].copy_from_slice(&r);
    let len = append_error(&mut buf, r.len(), &f, NOW).expect("append");
    assert_eq!(buf[3] & 0x0F, 9, "NOTAUTH");
    assert_eq!(&buf[10..12], &[0, 1]);
    let mut want = r.clone();
    want[3] |= 9;
    want[11] = 1;
    want.extend_from_slice(b"\x04test\x03key\x00\x00\xfa\x00\xff\x00\x00\x00\x00");
    let alg = b"\x09hmac-sha1\x00";
    want.extend_from_slice(&((alg.len() + 16) as u16).to_be_bytes());
    want.extend_from_slice(alg);
    want.extend_from_slice(&record::time48(NOW));
    want.extend_from_slice(&[1, 44, 0, 0, 0x55, 0xEF, 0, 17, 0, 0]);
    assert_eq!(&buf[..len], &want[..]);
    assert_eq!(
        verify_response(&buf[..len], &k, mac.as_slice(), NOW).map(|_| ()),
        Err(VerifyError::Rejected {
            error: 17,
            server_time: None
        })
    );
}

/// A copy of `q` whose MAC is cut to `n` octets (RDLENGTH adjusted).
fn truncate_mac(q: &[u8], k: &Key, n: usize) -> Vec<u8> {
    let d = k.algorithm().digest_len();
    let mac_at = q.len() - 6 - d;
    let mut t = q[..mac_at].to_vec();
    t[mac_at - 2..mac_at].copy_from_slice(&(n as u16).to_be_bytes());
    t.extend_from_slice(&q[mac_at..mac_at + n]);
    t.extend_from_slice(&q[mac_at + d..]);
    let rdlen_at = query(true).len() + k.name().as_wire().len() + 8;
    let rdlen = u16::from_be_bytes([t[rdlen_at], t[rdlen_at + 1]]) as usize - (d - n);
    t[rdlen_at..rdlen_at + 2].copy_from_slice(&(rdlen as u16).to_be_bytes());
    t
}

#[test]
fn truncated_mac() {
    let k = key(Algorithm::HmacSha256);
    let mut keys = ring(std::slice::from_ref(&k));
    let (q, _) = signed(&k, NOW);
    let t16 = truncate_mac(&q, &k, 16);
    // Knot DNS 3.2: only full-length MACs.
    assert_eq!(
        failed(verify_request(&t16, &keys, NOW)).error,
        TsigError::BadSig
    );
    // RFC 8945 §5.2.2.1.
    keys.set_truncation(Truncation::Allow { min_len: 16 });
    let Verified::Signed(s) = verify_request(&t16, &keys, NOW) else {
        panic!("16 of 32 octets is allowed")
    };
    assert_eq!(s.request_mac.len(), 16);
    assert!(matches!(
        verify_request(&truncate_mac(&q, &k, 15), &keys, NOW),
        Verified::FormErr
    ));
    let mut t = t16.clone();
    let mac_at = t.len() - 6 - 16;
    t[mac_at + 15] ^= 1;
    assert_eq!(
        failed(verify_request(&t, &keys, NOW)).error,
        TsigError::BadSig
    );
    // Allowed by the RFC, below the local minimum: BADTRUNC, after the time check.
    keys.set_truncation(Truncation::Allow { min_len: 20 });
    let t18 = truncate_mac(&q, &k, 18);
    let f = failed(verify_request(&t18, &keys, NOW));
    assert_eq!(f.error, TsigError::BadTrunc);
    assert_eq!(
        failed(verify_request(&t18, &keys, NOW + 999)).error,
        TsigError::BadTime
    );
    let mut buf = [0u8; 512];
    let r = response(&t18, 0);
    buf[..r.len()].copy_from_slice(&r);
    let len = append_error(&mut buf, r.len(), &f, NOW).expect("append");
    assert_eq!(
        verify_response(&buf[..len], &k, &q[q.len() - 38..q.len() - 20], NOW).map(|_| ()),
        Err(VerifyError::Rejected {
            error: 22,
            server_time: None
        }),
        "signed over the truncated request MAC"
    );
    // Longer than the digest.
    let mut long = q.clone();
    let d = 32;
    let mac_at = long.len() - 6 - d;
    long.insert(mac_at + d, 0);
    long[mac_at - 1] = 33;
    let rdlen_at = query(true).len() + k.name().as_wire().len() + 8;
    long[rdlen_at + 1] += 1;
    assert!(matches!(
        verify_request(&long, &keys, NOW),
        Verified::FormErr
    ));
}

#[test]
fn misplaced_or_malformed_tsig_is_formerr() {
    let k = key(Algorithm::HmacSha256);
    let keys = ring(std::slice::from_ref(&k));
    let (q, _) = signed(&k, NOW);
    let opt = [0u8, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0];
    // TSIG not last: an OPT after it.
    let mut m = q.clone();
    m.extend_from_slice(&opt);
    m[11] += 1;
    assert!(matches!(verify_request(&m, &keys, NOW), Verified::FormErr));
    // Two TSIGs.
    let tsig = &q[query(true).len()..];
    let mut m = q.clone();
    m.extend_from_slice(tsig);
    m[11] += 1;
    assert!(matches!(verify_request(&m, &keys, NOW), Verified::FormErr));
    // TSIG in the answer section.
    let mut m = query(false);
    m.extend_from_slice(tsig);
    m[7] = 1;
    m[11] = 1;
    m.extend_from_slice(&opt);
    assert!(matches!(verify_request(&m, &keys, NOW), Verified::FormErr));
    // RDATA with a byte too many, or cut short.
    let rdlen_at = query(true).len() + k.name().as_wire().len() + 8;
    let mut m = q.clone();
    m.push(0);
    m[rdlen_at + 1] += 1;
    assert!(matches!(verify_request(&m, &keys, NOW), Verified::FormErr));
    let mut m = q.clone();
    m.pop();
    m[rdlen_at + 1] -= 1;
    assert!(matches!(verify_request(&m, &keys, NOW), Verified::FormErr));
    // Trailing garbage, truncated message.
    let mut m = q.clone();
    m.push(0);
    assert!(matches!(verify_request(&m, &keys, NOW), Verified::FormErr));
    assert!(matches!(
        verify_request(&q[..q.len() - 1], &keys, NOW),
        Verified::FormErr
    ));
    assert!(matches!(
        verify_request(&q[..5], &keys, NOW),
        Verified::FormErr
    ));
}

#[test]
fn every_prefix_and_bit_flip_is_handled() {
    let k = key(Algorithm::HmacMd5);
    let keys = ring(std::slice::from_ref(&k));
    let (q, mac) = signed(&k, NOW);
    for n in 0..q.len() {
        let _ = verify_request(&q[..n], &keys, NOW);
        let _ = verify_response(&q[..n], &k, mac.as_slice(), NOW);
    }
    for i in 0..q.len() * 8 {
        let mut m = q.clone();
        m[i / 8] ^= 1 << (i % 8);
        if let Verified::Signed(_) = verify_request(&m, &keys, NOW) {
            // Only the ID (restored from original ID) and the case of a
            // name (names are digested in lower case) may change unnoticed.
            let case_only = m.eq_ignore_ascii_case(&q);
            assert!(i / 8 < 2 || case_only, "bit {i} flipped and still verified");
        }
    }
}

#[test]
fn stream_of_messages() {
    let k = key(Algorithm::HmacSha512);
    let keys = ring(std::slice::from_ref(&k));
    let (q, mac) = signed(&k, NOW);
    let Verified::Signed(s) = verify_request(&q, &keys, NOW) else {
        panic!("signed")
    };
    // Five messages: 1 signed in full, 2 with sign_next, 3 and 4 unsigned
    // (RFC 8945 §5.3.1 allows it; a verifier must cover them), 5 with a
    // digest over the MAC of 2 and messages 3, 4, 5. Our server signs every
    // message; the fifth is built by hand to test the verifier.
    let mut msgs = Vec::new();
    let mut buf = [0u8; 2048];
    let r = response(&q, 3);
    buf[..r.len()].copy_from_slice(&r);
    let a =
        sign_response(&mut buf, r.len(), s.key, s.request_mac.as_slice(), NOW, 0).expect("first");
    msgs.push(buf[..a.len].to_vec());
    let r2 = response(&q, 2);
    buf[..r2.len()].copy_from_slice(&r2);
    let a2 = sign_next(&mut buf, r2.len(), &k, a.mac.as_slice(), NOW + 1).expect("next");
    msgs.push(buf[..a2.len].to_vec());
    let (r3, r4, r5) = (response(&q, 1), response(&q, 4), response(&q, 5));
    msgs.push(r3.clone());
    msgs.push(r4.clone());
    let mut h = k.hmac();
    h.update(&(a2.mac.len() as u16).to_be_bytes());
    h.update(a2.mac.as_slice());
    h.update(&r3);
    h.update(&r4);
    h.update(&r5);
    record::update_timers(&mut h, NOW + 2, FUDGE);
    let m5 = h.finish();
    let mut last = r5.clone();
    last.extend_from_slice(b"\x04test\x03key\x00\x00\xfa\x00\xff\x00\x00\x00\x00");
    let alg = k.algorithm().wire_name();
    last.extend_from_slice(&((alg.len() + 16 + 64) as u16).to_be_bytes());
    last.extend_from_slice(alg);
    last.extend_from_slice(&record::time48(NOW + 2));
    last.extend_from_slice(&[1, 44, 0, 64]);
    last.extend_from_slice(m5.as_slice());
    last.extend_from_slice(&[0xBE, 0xEF, 0, 0, 0, 0]);
    last[11] = 1;
    msgs.push(last);

    let mut v = ResponseVerifier::new(&k, mac.as_slice());
    let got: Vec<bool> = msgs
        .iter()
        .map(|m| v.verify(m, NOW + 3).expect("verifies").is_some())
        .collect();
    assert_eq!(got, [true, true, false, false, true]);
    assert_eq!(v.finish(), Ok(()));

    // Tampering with an unsigned message is caught by the next signed one.
    let mut v = ResponseVerifier::new(&k, mac.as_slice());
    let mut bad = msgs.clone();
    let n = bad[3].len();
    bad[3][n - 1] ^= 1;
    for m in &bad[..4] {
        v.verify(m, NOW).expect("accepted so far");
    }
    assert_eq!(v.verify(&bad[4], NOW).map(|_| ()), Err(VerifyError::BadSig));
    // Out of order: message 2 first.
    let mut v = ResponseVerifier::new(&k, mac.as_slice());
    assert_eq!(
        v.verify(&msgs[1], NOW).map(|_| ()),
        Err(VerifyError::BadSig)
    );
    // Ending on unsigned messages.
    let mut v = ResponseVerifier::new(&k, mac.as_slice());
    for m in &msgs[..3] {
        v.verify(m, NOW).expect("ok");
    }
    assert_eq!(v.finish(), Err(VerifyError::TooManyUnsigned));
    // A first message without TSIG.
    let mut v = ResponseVerifier::new(&k, mac.as_slice());
    assert_eq!(v.verify(&r3, NOW).map(|_| ()), Err(VerifyError::Unsigned));
}

#[test]
fn response_checks() {
    let k = key(Algorithm::HmacSha224);
    let (q, mac) = signed(&k, NOW);
    let mut buf = [0u8; 512];
    let r = response(&q, 1);
    buf[..r.len()].copy_from_slice(&r);
    let a = sign_response(&mut buf, r.len(), &k, mac.as_slice(), NOW, 0).expect("sign");
    let resp = &buf[..a.len];
    assert!(verify_response(resp, &k, mac.as_slice(), NOW).is_ok());
    assert_eq!(
        verify_response(resp, &k, mac.as_slice(), NOW + 301).map(|_| ()),
        Err(VerifyError::BadTime)
    );
    let other = Key::from_text("other.key", Algorithm::HmacSha224, "c2VjcmV0").expect("key");
    assert_eq!(
        verify_response(resp, &other, mac.as_slice(), NOW).map(|_| ()),
        Err(VerifyError::WrongKey)
    );
    let alg = key(Algorithm::HmacSha256);
    assert_eq!(
        verify_response(resp, &alg, mac.as_slice(), NOW).map(|_| ()),
        Err(VerifyError::WrongKey)
    );
    assert_eq!(
        verify_response(&r, &k, mac.as_slice(), NOW).map(|_| ()),
        Err(VerifyError::Unsigned)
    );
}

#[test]
fn no_room() {
    let k = key(Algorithm::HmacSha256);
    let q = query(false);
    let mut buf = vec![0u8; q.len() + 20];
    buf[..q.len()].copy_from_slice(&q);
    assert_eq!(
        sign_request(&mut buf, q.len(), &k, NOW).map(|_| ()),
        Err(SignError::NoSpace)
    );
    assert_eq!(&buf[..q.len()], &q[..], "message untouched");
    assert_eq!(
        sign_request(&mut buf, 5, &k, NOW).map(|_| ()),
        Err(SignError::NotAMessage)
    );
    assert_eq!(
        sign_request(&mut buf, q.len() + 21, &k, NOW).map(|_| ()),
        Err(SignError::NotAMessage)
    );
    let mut v = q.clone();
    let mac = sign_request_vec(&mut v, &k, NOW).expect("sign");
    assert_eq!(v.len(), q.len() + max_tsig_len(&k) - 6);
    assert_eq!(mac.len(), 32);
}

#[test]
fn error_codes() {
    for e in [
        TsigError::BadSig,
        TsigError::BadKey,
        TsigError::BadTime,
        TsigError::BadTrunc,
    ] {
        assert_eq!(TsigError::from_code(e.code()), Some(e));
    }
    assert_eq!(TsigError::BadTrunc.to_string(), "BADTRUNC");
    assert_eq!(error_name(0), "NOERROR");
}

#[test]
fn request_layout() {
    // The TSIG record sign_request writes, field by field, and its MAC over
    // the RFC 8945 §4.3.3 digest input written out by hand.
    let k = Key::new(
        &"K.Example.".parse::<Name>().expect("name"),
        Algorithm::HmacSha256,
        b"Jefe",
    )
    .expect("key");
    let unsigned = query(false);
    let mut m = unsigned.clone();
    sign_request_vec(&mut m, &k, 0x0001_0203_0405).expect("sign");
    assert_eq!(&m[10..12], &[0, 1], "ARCOUNT 1");
    let rr = &m[unsigned.len()..];
    let owner = b"\x01k\x07example\x00";
    assert_eq!(
        &rr[..owner.len()],
        owner,
        "key name in canonical (lower) case"
    );
    let rest = &rr[owner.len()..];
    assert_eq!(&rest[..8], &[0, 250, 0, 255, 0, 0, 0, 0]);
    let rdata = &rest[10..];
    let alg = b"\x0bhmac-sha256\x00";
    assert_eq!(&rdata[..alg.len()], alg);
    let f = &rdata[alg.len()..];
    assert_eq!(
        &f[..10],
        &[0, 1, 2, 3, 4, 5, 1, 44, 0, 32],
        "time, fudge 300, MAC size"
    );
    assert_eq!(
        &f[42..],
        &[0xBE, 0xEF, 0, 0, 0, 0],
        "original ID, error, other length"
    );
    let mut input = unsigned.clone();
    input.extend_from_slice(owner);
    input.extend_from_slice(&[0, 255, 0, 0, 0, 0]);
    input.extend_from_slice(alg);
    input.extend_from_slice(&[0, 1, 2, 3, 4, 5, 1, 44, 0, 0, 0, 0]);
    let mut h = k.hmac();
    h.update(&input);
    assert_eq!(&f[10..42], h.finish().as_slice());
}

#[test]
fn strip_tsig_leaves_the_message_as_it_was_before_signing() {
    let key = Key::from_text(
        "k.",
        Algorithm::HmacSha256,
        "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0IQ==",
    )
    .unwrap();
    // A query: header with QDCOUNT 1, question "a. IN A".
    let plain: Vec<u8> = vec![
        0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, b'a', 0, 0, 1, 0, 1,
    ];
    let mut msg = plain.clone();
    sign_request_vec(&mut msg, &key, 1_700_000_000).unwrap();
    assert_ne!(msg, plain);
    assert!(strip_tsig(&mut msg));
    assert_eq!(msg, plain);
    assert!(!strip_tsig(&mut msg), "nothing left to strip");
}
