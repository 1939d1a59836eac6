//! RFC 9018 Appendix A vectors, Knot 3.2's lifetime checks
//! (tests/libknot/test_cookies.c) and its decision table.

use std::net::IpAddr;

use crate::*;

fn hex<const N: usize>(s: &str) -> [u8; N] {
    let mut out = [0u8; N];
    assert_eq!(s.len(), 2 * N, "{s}");
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
    }
    out
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

const SECRET_A: &str = "e5e973e5a6b2a43f48e7dc849e37bfcf";
const SECRET_OLD6: &str = "dd3bdf9344b678b185a6f5cb60fca715";
const SECRET_NEW6: &str = "445536bcd2513298075a5d379663c962";

fn option(client: &[u8; 8], server: &[u8]) -> Vec<u8> {
    [client.as_slice(), server].concat()
}

fn respond(secrets: &Secrets, refresh: Refresh, data: &[u8], at: &str, now: u32) -> Vec<u8> {
    let parsed = parse(data);
    let c = check(secrets, &parsed, ip(at), now);
    let mut out = [0u8; RESPONSE_LEN];
    let n = response_option(secrets, refresh, &parsed, c, ip(at), now, &mut out);
    out[..n].to_vec()
}

/// A.1: learning a new server cookie (IPv4).
#[test]
fn rfc9018_a1() {
    let secret = hex::<16>(SECRET_A);
    let client = hex::<8>("2464c4abcf10c957");
    let want = hex::<16>("010000005cf79f111f8130c3eee29480");
    assert_eq!(
        server_cookie(&secret, &client, ip("198.51.100.100"), 1559731985),
        want
    );
    let secrets = Secrets::new(secret);
    let got = respond(
        &secrets,
        Refresh::Never,
        &client,
        "198.51.100.100",
        1559731985,
    );
    assert_eq!(got, option(&client, &want));
    let full = option(&client, &want);
    assert_eq!(
        check(&secrets, &parse(&full), ip("198.51.100.100"), 1559731985),
        Check::Valid {
            previous_secret: false
        }
    );
}

/// A.2: the same client, 40 minutes later, gets a renewed cookie (RFC
/// refresh) or its own back (Knot).
#[test]
fn rfc9018_a2() {
    let secrets = Secrets::new(hex(SECRET_A));
    let client = hex::<8>("2464c4abcf10c957");
    let sent = option(&client, &hex::<16>("010000005cf79f111f8130c3eee29480"));
    let now = 1559734385;
    assert_eq!(
        check(&secrets, &parse(&sent), ip("198.51.100.100"), now),
        Check::Valid {
            previous_secret: false
        }
    );
    let renewed = option(&client, &hex::<16>("010000005cf7a871d4a564a1442aca77"));
    let rfc = Refresh::After(RFC_REFRESH_AFTER);
    assert_eq!(
        respond(&secrets, rfc, &sent, "198.51.100.100", now),
        renewed
    );
    assert_eq!(
        respond(&secrets, Refresh::Never, &sent, "198.51.100.100", now),
        sent
    );
}

/// A.3: reserved bytes set, still valid (they are hashed as received); the
/// renewed cookie has them zero.
#[test]
fn rfc9018_a3() {
    let secrets = Secrets::new(hex(SECRET_A));
    let client = hex::<8>("fc93fc62807ddb86");
    let sent = option(&client, &hex::<16>("01abcdef5cf78f71a314227b6679ebf5"));
    let at = "203.0.113.203";
    // Valid when made (Knot's test checks it there) …
    assert!(check(&secrets, &parse(&sent), ip(at), 1559727985).is_valid());
    // … but at the RFC's reply time it is 6715 s old, beyond the hour.
    assert_eq!(
        check(&secrets, &parse(&sent), ip(at), 1559734700),
        Check::Invalid
    );
    let renewed = option(&client, &hex::<16>("010000005cf7a9acf73a7810aca2381e"));
    assert_eq!(
        respond(&secrets, Refresh::Never, &sent, at, 1559734700),
        renewed
    );
    // Knot's version check: the same cookie with version 10 is not ours.
    let mut v10 = sent.clone();
    v10[8] = 10;
    assert_eq!(
        check(&secrets, &parse(&v10), ip(at), 1559727985),
        Check::Invalid
    );
}

/// A.4: IPv6, a cookie made with the previous secret verifies after a
/// rotation and is answered with one made with the new secret.
#[test]
fn rfc9018_a4() {
    let client = hex::<8>("22681ab97d52c298");
    let at = "2001:db8:220:1:59de:d0f4:8769:82b8";
    let old = hex::<16>("010000005cf7c57926556bd0934c72f8");
    assert_eq!(
        server_cookie(&hex(SECRET_OLD6), &client, ip(at), 1559741817),
        old
    );
    let mut secrets = Secrets::new(hex(SECRET_OLD6));
    secrets.rotate(hex(SECRET_NEW6));
    let sent = option(&client, &old);
    let now = 1559741961;
    assert_eq!(
        check(&secrets, &parse(&sent), ip(at), now),
        Check::Valid {
            previous_secret: true
        }
    );
    let renewed = option(&client, &hex::<16>("010000005cf7c609a6bb79d16625507a"));
    // Made fresh with the current secret, whatever the refresh policy.
    assert_eq!(respond(&secrets, Refresh::Never, &sent, at, now), renewed);
    // Knot 3.2 keeps no previous secret: after its rollover the cookie is bad.
    let mut knot = secrets;
    knot.replace(hex(SECRET_NEW6));
    assert_eq!(check(&knot, &parse(&sent), ip(at), now), Check::Invalid);
}

/// Knot's lifetime checks: exactly 3600 s old and 300 s ahead still verify.
#[test]
fn time_window_edges() {
    let secrets = Secrets::new(hex(SECRET_NEW6));
    let client = hex::<8>("22681ab97d52c298");
    let at = ip("2001:db8:220:1:59de:d0f4:8769:82b8");
    let made = 1559741961;
    let sent = option(
        &client,
        &server_cookie(secrets.current(), &client, at, made),
    );
    let parsed = parse(&sent);
    let at_time = |now| check(&secrets, &parsed, at, now);
    assert!(at_time(made + 3600).is_valid(), "last old");
    assert_eq!(at_time(made + 3601), Check::Invalid, "too old");
    assert!(at_time(made - 300).is_valid(), "last new");
    assert_eq!(at_time(made - 301), Check::Invalid, "too new");
}

#[test]
fn window_holds_across_u32_wrap() {
    let secrets = Secrets::new([9; 16]);
    let client = [1; 8];
    let at = ip("192.0.2.1");
    let made = u32::MAX - 100;
    let sent = option(
        &client,
        &server_cookie(secrets.current(), &client, at, made),
    );
    assert!(check(&secrets, &parse(&sent), at, made.wrapping_add(3000)).is_valid());
    assert_eq!(
        check(&secrets, &parse(&sent), at, made.wrapping_add(3601)),
        Check::Invalid
    );
}

#[test]
fn refresh_after_half_an_hour() {
    let secrets = Secrets::new([5; 16]);
    let client = [2; 8];
    let at = "198.51.100.7";
    let made = 1_700_000_000;
    let sent = option(
        &client,
        &server_cookie(secrets.current(), &client, ip(at), made),
    );
    let rfc = Refresh::After(RFC_REFRESH_AFTER);
    assert_eq!(respond(&secrets, rfc, &sent, at, made + 1800), sent);
    let fresh = respond(&secrets, rfc, &sent, at, made + 1801);
    assert_ne!(fresh, sent);
    assert_eq!(fresh[..8], client);
    assert_eq!(&fresh[12..16], &(made + 1801).to_be_bytes());
    assert_eq!(
        respond(&secrets, Refresh::Never, &sent, at, made + 3600),
        sent
    );
}

#[test]
fn round_trip_and_wrong_inputs() {
    let secrets = Secrets::new([3; 16]);
    let client = [4; 8];
    let now = 1_600_000_000;
    let first = respond(&secrets, Refresh::Never, &client, "192.0.2.9", now);
    assert_eq!(first.len(), RESPONSE_LEN);
    assert!(check(&secrets, &parse(&first), ip("192.0.2.9"), now + 10).is_valid());
    // Another address, another client cookie, another secret: not ours.
    assert_eq!(
        check(&secrets, &parse(&first), ip("192.0.2.10"), now),
        Check::Invalid
    );
    let mut other_client = first.clone();
    other_client[0] ^= 1;
    assert_eq!(
        check(&secrets, &parse(&other_client), ip("192.0.2.9"), now),
        Check::Invalid
    );
    let mut flipped = first.clone();
    flipped[23] ^= 0x80;
    assert_eq!(
        check(&secrets, &parse(&flipped), ip("192.0.2.9"), now),
        Check::Invalid
    );
    assert_eq!(
        check(&Secrets::new([8; 16]), &parse(&first), ip("192.0.2.9"), now),
        Check::Invalid
    );
    // Server cookies of legal length but not 16 bytes are invalid, not malformed.
    for len in [8, 15, 17, 32] {
        let data = option(&client, &vec![1; len]);
        assert_eq!(
            check(&secrets, &parse(&data), ip("192.0.2.9"), now),
            Check::Invalid
        );
        // Answered with a fresh cookie.
        assert_eq!(
            respond(&secrets, Refresh::Never, &data, "192.0.2.9", now).len(),
            24
        );
    }
}

#[test]
fn previous_secret_then_two_rotations() {
    let mut secrets = Secrets::new([1; 16]);
    let client = [6; 8];
    let at = ip("2001:db8::1");
    let now = 1_650_000_000;
    let sent = option(&client, &server_cookie(secrets.current(), &client, at, now));
    secrets.rotate([2; 16]);
    assert_eq!(
        check(&secrets, &parse(&sent), at, now + 5),
        Check::Valid {
            previous_secret: true
        }
    );
    secrets.rotate([3; 16]);
    assert_eq!(check(&secrets, &parse(&sent), at, now + 5), Check::Invalid);
}

#[test]
fn ipv4_mapped_is_ipv4() {
    let secret = [7; 16];
    let client = [8; 8];
    let v4 = server_cookie(&secret, &client, ip("198.51.100.100"), 1);
    assert_eq!(
        server_cookie(&secret, &client, ip("::ffff:198.51.100.100"), 1),
        v4
    );
    // A v4-compatible (deprecated, not mapped) address is IPv6.
    assert_ne!(
        server_cookie(&secret, &client, ip("::198.51.100.100"), 1),
        v4
    );
    let sent = option(&client, &v4);
    let secrets = Secrets::new(secret);
    assert!(check(&secrets, &parse(&sent), ip("::ffff:198.51.100.100"), 1).is_valid());
}

#[test]
fn malformed_gets_no_option() {
    let secrets = Secrets::new([1; 16]);
    for len in [0usize, 1, 7, 9, 15, 41, 100] {
        let data = vec![0xAA; len];
        let parsed = parse(&data);
        assert_eq!(parsed, Parsed::Malformed, "{len}");
        assert_eq!(
            check(&secrets, &parsed, ip("192.0.2.1"), 0),
            Check::Malformed
        );
        assert!(respond(&secrets, Refresh::Never, &data, "192.0.2.1", 0).is_empty());
    }
}

// ---- Knot 3.2's decision table (src/knot/modules/cookies/cookies.c) ----

fn cookies() -> Cookies {
    Cookies::new(Secrets::new([0x11; 16]), Refresh::Never, 1)
}

fn run(c: &Cookies, opt: Option<&[u8]>, t: Transport, now: u32) -> (Outcome, Vec<u8>) {
    let mut out = [0u8; RESPONSE_LEN];
    let o = c.process(opt, ip("192.0.2.77"), t, now, &mut out);
    (o, out[..o.option_len].to_vec())
}

#[test]
fn knot_table_no_cookie_and_malformed() {
    let c = cookies();
    for t in [Transport::Udp, Transport::Stream] {
        let (o, _) = run(&c, None, t, 100);
        assert_eq!(
            (o.action, o.option_len, o.valid),
            (Action::Answer, 0, false)
        );
        let (o, _) = run(&c, Some(&[1; 12]), t, 100);
        assert_eq!(
            (o.action, o.option_len, o.valid),
            (Action::FormErr, 0, false)
        );
    }
}

#[test]
fn knot_table_client_only() {
    let c = cookies();
    let (o, udp) = run(&c, Some(&[5; 8]), Transport::Udp, 1000);
    assert_eq!((o.action, o.valid), (Action::BadCookie, false));
    assert_eq!(udp.len(), 24);
    let (o, tcp) = run(&c, Some(&[5; 8]), Transport::Stream, 1000);
    assert_eq!((o.action, o.valid), (Action::Answer, false));
    assert_eq!(tcp, udp);
    // The cookie learned then works.
    let (o, echoed) = run(&c, Some(&udp), Transport::Udp, 1010);
    assert_eq!((o.action, o.valid), (Action::Answer, true));
    assert_eq!(echoed, udp);
}

#[test]
fn knot_table_invalid_and_rollover() {
    let c = cookies();
    let (_, learned) = run(&c, Some(&[5; 8]), Transport::Udp, 1000);
    c.secrets().replace([0x22; 16]);
    let (o, fresh) = run(&c, Some(&learned), Transport::Udp, 1001);
    assert_eq!((o.action, o.valid), (Action::BadCookie, false));
    assert_ne!(fresh, learned);
    let (o, _) = run(&c, Some(&learned), Transport::Stream, 1001);
    assert_eq!((o.action, o.valid), (Action::Answer, false));
    let (o, _) = run(&c, Some(&fresh), Transport::Udp, 1002);
    assert_eq!((o.action, o.valid), (Action::Answer, true));
    // With a rotation instead, the old cookie still counts, answered fresh.
    c.secrets().rotate([0x33; 16]);
    let (o, newer) = run(&c, Some(&fresh), Transport::Udp, 1003);
    assert_eq!((o.action, o.valid), (Action::Answer, true));
    assert_ne!(newer, fresh);
}

/// Knot's tests-extra: with slip 4, BADCOOKIE, three drops, BADCOOKIE.
#[test]
fn knot_slip() {
    let c = Cookies::new(Secrets::new([1; 16]), Refresh::Never, 4);
    let actions: Vec<Action> = (0..9)
        .map(|_| run(&c, Some(&[5; 8]), Transport::Udp, 1).0.action)
        .collect();
    use Action::{BadCookie as B, Drop as D};
    assert_eq!(actions, [B, D, D, D, B, D, D, D, B]);
    // Streams and valid cookies do not count.
    let (o, _) = run(&c, Some(&[5; 8]), Transport::Stream, 1);
    assert_eq!(o.action, Action::Answer);
    let (o, _) = run(&c, Some(&[5; 8]), Transport::Udp, 1);
    assert_eq!(o.action, Action::Drop);
    let d = Slip::new(0);
    assert!((0..5).all(|_| d.answer()));
}

#[test]
fn knot_defaults() {
    assert_eq!(KNOT_SECRET_LIFETIME, 93_600);
    assert_eq!(KNOT_BADCOOKIE_SLIP, 1);
    assert_eq!(Refresh::default(), Refresh::Never);
}

/// Cookies knotd 3.2.6 (mod-cookies, `secret: 0xe5e973e5a6b2a43f48e7dc849e37bfcf`)
/// handed to clients on 127.0.0.1 (UDP, BADCOOKIE to a client cookie alone) and ::1 (TCP).
#[test]
fn matches_knotd() {
    let secret = hex::<16>(SECRET_A);
    for (client, ts, want) in [
        (
            "2464c4abcf10c957",
            0x6b04_f268,
            "010000006b04f2682301de8f025a9c02",
        ),
        (
            "0001020304050607",
            0x6b04_f270,
            "010000006b04f2700213a2039fe5afc3",
        ),
    ] {
        assert_eq!(
            server_cookie(&secret, &hex(client), ip("127.0.0.1"), ts),
            hex::<16>(want)
        );
    }
    // Over TCP from ::1.
    assert_eq!(
        server_cookie(&secret, &hex("2464c4abcf10c957"), ip("::1"), 0x6b04_f27b),
        hex::<16>("010000006b04f27bce386be772647382")
    );
}
