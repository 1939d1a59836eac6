//! Tests of the public API: per-type round trips, known wire bytes, directives,
//! error messages with lines, `$GENERATE`, robustness on random input, size.

use super::*;
use lode_wire::Class;

fn origin() -> Name {
    "example.".parse().unwrap()
}

fn zone(text: &str) -> ParsedZone {
    match parse_str(text, "t.zone", &origin()) {
        Ok(z) => z,
        Err(e) => panic!(
            "unexpected errors: {:?}",
            e.iter().map(|e| e.to_string()).collect::<Vec<_>>()
        ),
    }
}

fn errors(text: &str) -> Vec<String> {
    match parse_str(text, "t.zone", &origin()) {
        Ok(z) => panic!("expected errors, got {} records", z.records.len()),
        Err(e) => e.iter().map(|e| e.to_string()).collect(),
    }
}

fn rd(t: Rtype, text: &str) -> Vec<u8> {
    parse_rdata(t, text, &origin()).unwrap_or_else(|e| panic!("{t} {text}: {e}"))
}

/// (type, input text, expected print) — the prints are what `kdig` showed for the
/// same records served by Knot 3.2.6 (see the crate docs for the spacing rule).
const SAMPLES: &[(&str, &str, &str)] = &[
    ("A", "192.0.2.1", "192.0.2.1"),
    ("AAAA", "2001:DB8::1", "2001:db8::1"),
    ("NS", "ns1", "ns1.example."),
    ("CNAME", "Www.Example.NET.", "Www.Example.NET."),
    ("DNAME", "example.net.", "example.net."),
    ("PTR", "@", "example."),
    ("SOA", "ns1 hostmaster 2024010101 2h 1h 2w 300", "ns1.example. hostmaster.example. 2024010101 7200 3600 1209600 300"),
    ("MX", "10 mail.example.net.", "10 mail.example.net."),
    ("TXT", r#""hello world" "a\"b\\c" "\001\255x" """#, r#""hello world" "a\"b\\c" "\001\255x" """#),
    ("TXT", "plain", "\"plain\""),
    ("TXT", "a\\032b \"c d\"", "\"a b\" \"c d\""),
    ("SPF", "\"v=spf1 -all\"", "\"v=spf1 -all\""),
    ("HINFO", "\"PC\" \"Linux os\"", "\"PC\" \"Linux os\""),
    ("RP", "admin t", "admin.example. t.example."),
    ("SRV", "10 20 5060 sip", "10 20 5060 sip.example."),
    (
        "NAPTR",
        r#"100 10 "u" "E2U+sip" "!^.*$!sip:info@example.com!" ."#,
        r#"100 10 "u" "E2U+sip" "!^.*$!sip:info@example.com!" ."#,
    ),
    ("NAPTR", r#"100 10 "S" "SIP+D2U" "" _sip._udp"#, r#"100 10 "S" "SIP+D2U" "" _sip._udp.example."#),
    ("CAA", "0 issue \"ca.example.net; account=1\"", "0 issue \"ca.example.net; account=1\""),
    ("CAA", "128 iodef \"mailto:a@b\"", "128 iodef \"mailto:a@b\""),
    ("SSHFP", "1 1 dd465c09cfa51fb45020cc83316fff21b9ec74ac", "1 1 DD465C09CFA51FB45020CC83316FFF21B9EC74AC"),
    ("TLSA", "3 1 1 0C72AC70B745AC19 998811B1", "3 1 1 0C72AC70B745AC19998811B1"),
    ("LOC", "52 22 23.000 N 4 53 32.000 E -2.00m 0.00m 10000m 10m", "52 22 23 N 4 53 32 E -2m 0m 10000m 10m"),
    ("LOC", "52 N 4 E 10m", "52 0 0 N 4 0 0 E 10m 1m 10000m 10m"),
    ("LOC", "42 21 54 S 71 06 18 W -24m 30m", "42 21 54 S 71 6 18 W -24m 30m 10000m 10m"),
    ("LOC", "52 22 23.5 N 4 53 32.123 E -2.5m 1.5m 200m 0.1m", "52 22 23.500 N 4 53 32.123 E -2.50m 1m 200m 0.10m"),
    ("LOC", "0 0 0.001 S 180 W 42849672.95m 90000000m 1m 0m", "0 0 0.001 S 180 0 0 W 42849672.95m 90000000m 1m 0m"),
    ("DS", "60485 5 1 2BB183AF5F22588179A53B0A 98631FAD1A292118", "60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118"),
    ("CDS", "60485 RSASHA256 2 2bb183af", "60485 8 2 2BB183AF"),
    ("DNSKEY", "256 3 8 AwEAAcw5QLr0 LuTMHvEi8bT3DY5g", "256 3 8 AwEAAcw5QLr0LuTMHvEi8bT3DY5g"),
    ("CDNSKEY", "0 3 0 AA==", "0 3 0 AA=="),
    (
        "RRSIG",
        "A 8 2 3600 20240101000000 20231201000000 12345 example. AwEAAcw5QLr0",
        "A 8 2 3600 20240101000000 20231201000000 12345 example. AwEAAcw5QLr0",
    ),
    (
        "RRSIG",
        "TYPE65000 13 3 1h 1704067200 0 1 @ AA==",
        "TYPE65000 13 3 3600 20240101000000 19700101000000 1 example. AA==",
    ),
    (
        "NSEC",
        "next.example. A NS SOA MX TXT AAAA RRSIG NSEC DNSKEY TYPE1234 CAA",
        "next.example. A NS SOA MX TXT AAAA RRSIG NSEC DNSKEY CAA TYPE1234",
    ),
    ("NSEC", "next", "next.example."),
    (
        "NSEC3",
        "1 1 12 aabbccdd 2T7B4G4VSA5SMI47K61MV5BV1A22BOJR A RRSIG",
        "1 1 12 AABBCCDD 2t7b4g4vsa5smi47k61mv5bv1a22bojr A RRSIG",
    ),
    ("NSEC3", "1 0 0 - 2t7b4g4vsa5smi47k61mv5bv1a22bojr", "1 0 0 - 2t7b4g4vsa5smi47k61mv5bv1a22bojr"),
    ("NSEC3PARAM", "1 0 10 D399EAAB", "1 0 10 D399EAAB"),
    ("NSEC3PARAM", "1 0 0 -", "1 0 0 -"),
    (
        "SVCB",
        "1 . alpn=h2,h3 port=8443 ipv4hint=192.0.2.1,192.0.2.2 ipv6hint=2001:db8::1 mandatory=alpn,port \
         key65000=foo ech=AEj+DQBE",
        "1 . mandatory=alpn,port alpn=h2,h3 port=8443 ipv4hint=192.0.2.1,192.0.2.2 ech=AEj+DQBE \
         ipv6hint=2001:db8::1 key65000=\"foo\"",
    ),
    ("SVCB", "0 foo.example.", "0 foo.example."),
    ("HTTPS", r#"1 . alpn="h\\,2,h3" no-default-alpn"#, r#"1 . alpn=h\\,2,h3 no-default-alpn"#),
    (
        "HTTPS",
        r#"1 foo alpn=h2 key7="/q{?dns}" key9 port=53 ipv6hint=::1,2001:db8::2"#,
        r#"1 foo.example. alpn=h2 port=53 ipv6hint=::1,2001:db8::2 key7="/q{?dns}" key9"#,
    ),
    ("HTTPS", "1 . alpn= \"h2\" dohpath=/x", "1 . alpn=h2 key7=\"/x\""),
    (
        "ZONEMD",
        "2018031500 1 1 FEBE3D4CE2EC2FFA4BA99D46CD69D6D29711E55217057BEE",
        "2018031500 1 1 FEBE3D4CE2EC2FFA4BA99D46CD69D6D29711E55217057BEE",
    ),
    ("TYPE65000", "\\# 4 0a000001", "\\# 4 0A000001"),
    ("TYPE65001", "\\# 0", "\\# 0"),
    ("A", "\\# 4 0a000002", "10.0.0.2"),
    ("URI", "10 1 \"ftp://ftp1.example.com/public\"", "10 1 \"ftp://ftp1.example.com/public\""),
    ("CSYNC", "66 3 A NS AAAA", "66 3 A NS AAAA"),
    ("OPENPGPKEY", "AAEC AwQF", "AAECAwQF"),
    ("EUI48", "00-00-5e-00-53-2a", "00-00-5E-00-53-2A"),
    ("EUI64", "00-00-5e-ef-10-00-00-2a", "00-00-5E-EF-10-00-00-2A"),
    ("AAAA", "::ffff:1.2.3.4", "::ffff:1.2.3.4"),
    ("AAAA", "2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
    (
        "TXT",
        r#""caf\195\169" "tab\009" "semi;colon" "(paren)" "dollar$ at@""#,
        r#""caf\195\169" "tab\009" "semi;colon" "(paren)" "dollar$ at@""#,
    ),
    ("NAPTR", r#"10 20 "" "" "" sip\.x\@y"#, r#"10 20 "" "" "" sip\.x\@y.example."#),
    ("SVCB", "1 t mandatory=ipv4hint ipv4hint=10.0.0.1 ech=\"AEj+DQBE\"", "1 t.example. mandatory=ipv4hint ipv4hint=10.0.0.1 ech=AEj+DQBE"),
    ("CAA", "0 tbs \"quote\\\"s\"", "0 tbs \"quote\\\"s\""),
    ("HINFO", "\"\" \"\"", "\"\" \"\""),
    ("MINFO", "a b", "a.example. b.example."),
    ("AFSDB", "1 db", "1 db.example."),
    ("KX", "10 kx", "10 kx.example."),
    ("SMIMEA", "3 1 1 0c72ac70", "3 1 1 0C72AC70"),
    ("KEY", "256 3 8 AwEAAQ==", "256 3 8 AwEAAQ=="),
    ("DHCID", "AAIBY2/AuCccgoJbsaxcQc9TUapptP69lOjxfNuVAA2kjEA=", "AAIBY2/AuCccgoJbsaxcQc9TUapptP69lOjxfNuVAA2kjEA="),
    ("CERT", "PGP 0 0 dGVzdA==", "3 0 0 dGVzdA=="),
    ("CERT", "1 12345 8 ( MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A MIIBCgKCAQEA )", "1 12345 8 MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA"),
    ("CERT", "pkix 1 RSASHA256 AAAA", "1 1 8 AAAA"),
    ("CERT", "SPKI 2 ECDSAP256SHA256 AAAB", "2 2 13 AAAB"),
    ("CERT", "IPKIX 3 0 AAAC", "4 3 0 AAAC"),
    ("CERT", "ISPKI 4 0 AAAD", "5 4 0 AAAD"),
    ("CERT", "IPGP 5 0 AAAE", "6 5 0 AAAE"),
    ("CERT", "ACPKIX 6 0 AAAF", "7 6 0 AAAF"),
    ("CERT", "IACPKIX 7 0 AAAG", "8 7 0 AAAG"),
    ("CERT", "URI 8 0 AAAH", "253 8 0 AAAH"),
    ("CERT", "OID 9 0 AAAI", "254 9 0 AAAI"),
    ("CERT", "65535 11 254 AAAK", "65535 11 254 AAAK"),
    // Knot decodes each padded base64 quantum on its own.
    ("CERT", "1 2 3 AA== BB==", "1 2 3 AAQ="),
    ("IPSECKEY", "10 1 2 1.2.3.4 AA==BB==", "10 1 2 1.2.3.4 AAQ="),
    ("APL", "1:192.0.2.0/24 !2:2001:db8::/32", "1:192.0.2.0/24 !2:2001:db8::/32"),
    ("APL", "1:192.168.32.0/21 !1:192.168.38.0/28", "1:192.168.32.0/21 !1:192.168.38.0/28"),
    ("APL", "", ""),
    ("APL", "( 1:0.0.0.0/0\n 2:::/0 )", "1:0.0.0.0/0 2:::/0"),
    (
        "APL",
        "1:224.0.0.0/4 2:FF00:0:0:0:0:0:0:0/8 !1:192.0.2.1/24 1:10.0.0.1/32 2:2001:db8::1/128",
        "1:224.0.0.0/4 2:ff00::/8 !1:192.0.2.1/24 1:10.0.0.1/32 2:2001:db8::1/128",
    ),
    (
        "APL",
        "2:::1.2.3.4/128 2:::/128 2:::1/128 2:1::/16 1:0.0.0.0/32 1:10.0.0.0/08",
        "2:::102:304/128 2:::/128 2:::1/128 2:1::/16 1:0.0.0.0/32 1:10.0.0.0/8",
    ),
    (
        "IPSECKEY",
        "10 1 2 192.0.2.38 AQNRU3mG7TVTO2BkR47usntb102uFJtugbo6BSGvgqt4AQ==",
        "10 1 2 192.0.2.38 AQNRU3mG7TVTO2BkR47usntb102uFJtugbo6BSGvgqt4AQ==",
    ),
    ("IPSECKEY", "10 3 2 gateway.example.net. AQNRU3mG", "10 3 2 gateway.example.net. AQNRU3mG"),
    ("IPSECKEY", "10 0 0 .", "10 0 0 ."),
    ("IPSECKEY", "10 2 2 2001:db8::1 AQNRU3mG", "10 2 2 2001:db8::1 AQNRU3mG"),
    ("IPSECKEY", "10 0 2 . AQNRU3mG", "10 0 2 . AQNRU3mG"),
    ("IPSECKEY", "10 3 1 gw AQNRU3mG", "10 3 1 gw.example. AQNRU3mG"),
    ("IPSECKEY", "255 1 0 10.0.0.1", "255 1 0 10.0.0.1"),
    ("IPSECKEY", "1 2 0 ::1.2.3.4", "1 2 0 ::102:304"),
    ("IPSECKEY", "10 3 2 . AA==", "10 3 2 . AA=="),
    ("L32", "10 10.1.2.0", "10 10.1.2.0"),
    ("L64", "10 2001:0db8:0000:0000", "10 2001:0DB8:0000:0000"),
    ("NID", "10 0014:4fff:ff20:ee64", "10 0014:4FFF:FF20:EE64"),
    ("NID", "30 ABCD:EF01:2345:6789", "30 ABCD:EF01:2345:6789"),
    // BIND prints node IDs without leading zeros (Knot refuses that form).
    ("NID", "20 14:4fff:ff20:1", "20 0014:4FFF:FF20:0001"),
    ("LP", "10 l64.example.", "10 l64.example."),
    ("LP", "20 l64-subnet1", "20 l64-subnet1.example."),
    // Knot 3.2 has no WKS text form (it prints `\#`); these prints are BIND 9.18's.
    ("WKS", "192.0.2.1 TCP smtp ftp 25 80 domain", "192.0.2.1 6 21 25 53 80"),
    ("WKS", "192.0.2.2 17 domain 53 0", "192.0.2.2 17 0 53"),
    ("WKS", "192.0.2.3 udp", "192.0.2.3 17"),
];

#[test]
fn round_trip_every_sample() {
    for (t, input, want) in SAMPLES {
        let t = Rtype::from_mnemonic(t).unwrap();
        let wire = rd(t, input);
        let printed = format_rdata(t, &wire);
        assert_eq!(&printed, want, "{t} {input}");
        assert_eq!(rd(t, &printed), wire, "{t} reparse of {printed}");
        // The generic form of the same bytes gives the same bytes.
        let mut generic = String::new();
        rdata_text::format_generic(&wire, &mut generic);
        assert_eq!(rd(t, &generic), wire, "{t} {generic}");
    }
}

#[test]
fn every_listed_type_has_a_sample() {
    for t in [
        "SOA",
        "NS",
        "A",
        "AAAA",
        "CNAME",
        "DNAME",
        "MX",
        "TXT",
        "SPF",
        "PTR",
        "SRV",
        "NAPTR",
        "CAA",
        "SSHFP",
        "TLSA",
        "HINFO",
        "RP",
        "LOC",
        "DS",
        "CDS",
        "DNSKEY",
        "CDNSKEY",
        "RRSIG",
        "NSEC",
        "NSEC3",
        "NSEC3PARAM",
        "SVCB",
        "HTTPS",
        "ZONEMD",
        "CERT",
        "APL",
        "IPSECKEY",
        "L32",
        "L64",
        "NID",
        "LP",
        "WKS",
    ] {
        assert!(SAMPLES.iter().any(|s| s.0 == t), "no sample for {t}");
        assert!(is_known_type(Rtype::from_mnemonic(t).unwrap()));
    }
}

#[test]
fn known_wire_bytes() {
    assert_eq!(rd(Rtype::A, "10.1.2.3"), [10, 1, 2, 3]);
    assert_eq!(rd(Rtype::MX, "10 mx"), b"\x00\x0a\x02mx\x07example\x00");
    // RFC 3403 §6.2 style NAPTR.
    assert_eq!(
        rd(Rtype::NAPTR, r#"100 10 "u" "E2U+sip" "!^.*$!sip:a@b!" ."#),
        b"\x00\x64\x00\x0a\x01u\x07E2U+sip\x0e!^.*$!sip:a@b!\x00"
    );
    assert_eq!(rd(Rtype::TXT, "\"a\" b"), b"\x01a\x01b");
    // RFC 4034 §4.3: NSEC bitmap for A MX RRSIG NSEC TYPE1234.
    assert_eq!(
        rd(Rtype::NSEC, "host.example.com. A MX RRSIG NSEC TYPE1234"),
        b"\x04host\x07example\x03com\x00\
          \x00\x06\x40\x01\x00\x00\x00\x03\
          \x04\x1b"
            .iter()
            .chain([0u8; 26].iter())
            .chain([0x20].iter())
            .copied()
            .collect::<Vec<u8>>()
    );
    // RFC 1876: the default precisions are 0x12 (1m), 0x16 (10km), 0x13 (10m).
    let loc = rd(Rtype::LOC, "0 N 0 E 0m");
    assert_eq!(&loc[..4], [0, 0x12, 0x16, 0x13]);
    assert_eq!(&loc[4..8], 0x8000_0000u32.to_be_bytes());
    assert_eq!(&loc[12..16], 10_000_000u32.to_be_bytes());
    // SVCB: keys sorted on the wire (RFC 9460 §2.2).
    assert_eq!(
        rd(Rtype::SVCB, "1 . port=53 alpn=h2"),
        b"\x00\x01\x00\x00\x01\x00\x03\x02h2\x00\x03\x00\x02\x00\x35"
    );
    // CAA (RFC 8659 §4.1.1).
    assert_eq!(rd(Rtype::CAA, "0 issue \"ca.net\""), b"\x00\x05issueca.net");
    // The next ones are Knot 3.2.6's bytes for the same text (`kdig +generic`).
    assert_eq!(
        rd(Rtype::CERT, "PGP 0 0 dGVzdA=="),
        b"\x00\x03\x00\x00\x00test"
    );
    // APL: address parts lose their trailing zero octets (RFC 3123 §4).
    assert_eq!(
        rd(Rtype::APL, "1:192.0.2.0/24 !2:2001:db8::/32"),
        b"\x00\x01\x18\x03\xc0\x00\x02\x00\x02\x20\x84\x20\x01\x0d\xb8"
    );
    assert_eq!(
        rd(Rtype::APL, "1:192.168.32.0/21 !1:192.168.38.0/28"),
        b"\x00\x01\x15\x03\xc0\xa8\x20\x00\x01\x1c\x83\xc0\xa8\x26"
    );
    assert_eq!(
        rd(Rtype::APL, "1:0.0.0.0/0 2:::/0"),
        b"\x00\x01\x00\x00\x00\x02\x00\x00"
    );
    assert_eq!(rd(Rtype::APL, ""), b"");
    // IPSECKEY: no gateway octets for type 0, an uncompressed name for type 3.
    assert_eq!(rd(Rtype::IPSECKEY, "10 0 0 ."), b"\x0a\x00\x00");
    assert_eq!(
        rd(Rtype::IPSECKEY, "10 3 1 gw AQNRU3mG"),
        b"\x0a\x03\x01\x02gw\x07example\x00\x01\x03\x51\x53\x79\x86"
    );
    assert_eq!(
        rd(Rtype::NID, "10 0014:4fff:ff20:ee64"),
        b"\x00\x0a\x00\x14\x4f\xff\xff\x20\xee\x64"
    );
    // WKS (RFC 1035 §3.4.2): bit n of the bitmap is port n.
    assert_eq!(
        rd(Rtype::WKS, "192.0.2.1 tcp 25"),
        b"\xc0\x00\x02\x01\x06\x00\x00\x00\x40"
    );
}

#[test]
fn long_txt_is_split_in_255_octet_strings() {
    let long = "a".repeat(300);
    let wire = rd(Rtype::TXT, &long);
    assert_eq!(wire.len(), 302);
    assert_eq!(wire[0], 255);
    assert_eq!(wire[256], 45);
    assert!(parse_rdata(Rtype::HINFO, &format!("{long} x"), &origin()).is_err());
}

#[test]
fn malformed_wire_prints_as_generic() {
    assert_eq!(format_rdata(Rtype::A, &[1, 2, 3]), "\\# 3 010203");
    assert_eq!(format_rdata(Rtype::MX, &[0, 1, 5, b'a']), "\\# 4 00010561");
    assert_eq!(format_rdata(Rtype::TXT, &[]), "\\# 0");
    assert!(parse_rdata(Rtype::A, "\\# 3 010203", &origin()).is_err());
    assert!(parse_rdata(Rtype::A, "\\# 4 0102", &origin()).is_err());
}

#[test]
fn directives_and_defaults() {
    let z = zone(
        "$ORIGIN example.\n\
         $TTL 1h\n\
         @ IN SOA ns1 host ( 1 ; serial\n  2 3 4 5 )\n\
         \tNS ns1\n\
         www 300 IN A 192.0.2.1\n\
         \tIN 600 AAAA ::1 ; TTL after class\n\
         $ORIGIN sub\n\
         x A 192.0.2.2\n\
         y 1h30m TXT \"t\"\n",
    );
    let lines: Vec<String> = z.records.iter().map(format_record).collect();
    assert_eq!(
        lines,
        [
            "example. 3600 IN SOA ns1.example. host.example. 1 2 3 4 5",
            "example. 3600 IN NS ns1.example.",
            "www.example. 300 IN A 192.0.2.1",
            "www.example. 600 IN AAAA ::1",
            "x.sub.example. 3600 IN A 192.0.2.2",
            "y.sub.example. 5400 IN TXT \"t\"",
        ]
    );
    let lines: Vec<u32> = z.positions.iter().map(|p| p.line).collect();
    assert_eq!(lines, [3, 5, 6, 7, 9, 10]);
    assert_eq!(z.positions[0].to_string(), "t.zone:3");
}

#[test]
fn ttl_without_ttl_directive() {
    // Last explicit TTL is inherited (RFC 1035); an SOA without any TTL takes its MINIMUM,
    // which then acts as $TTL (BIND).
    let z = zone("@ SOA ns host 1 2 3 4 77\na A 1.2.3.4\nb 10 A 1.2.3.4\nc A 1.2.3.4\n");
    let ttls: Vec<u32> = z.records.iter().map(|r| r.ttl).collect();
    assert_eq!(ttls, [77, 77, 10, 77]); // as named-compilezone 9.18 gives
    let z = zone("@ 5 SOA ns host 1 2 3 4 77\na A 1.2.3.4\nb 10 A 1.2.3.4\nc A 1.2.3.4\n");
    let ttls: Vec<u32> = z.records.iter().map(|r| r.ttl).collect();
    assert_eq!(ttls, [5, 5, 10, 10]);
    let e = errors("a A 1.2.3.4\n");
    assert_eq!(
        e,
        ["t.zone:1: no TTL: give one, or a $TTL before this record"]
    );
    // A default TTL given by the caller acts as $TTL.
    let z = parse_bytes(b"a A 1.2.3.4\n", "x", &origin(), Some(99)).unwrap();
    assert_eq!(z.records[0].ttl, 99);
}

#[test]
fn classes() {
    let z = zone("$TTL 1\na CH TXT x\nb CLASS3 TXT y\n");
    assert!(z.records.iter().all(|r| r.class == Class::CH));
    let e = errors("$TTL 1\na IN A 1.2.3.4\nb CH TXT y\n");
    assert_eq!(e, ["t.zone:3: class CH differs from the zone's class IN"]);
}

#[test]
fn names_keep_case_and_escapes() {
    let z = zone("$TTL 1\nMiXeD.a\\.b A 1.2.3.4\nx CNAME Target.Example.COM.\n");
    assert_eq!(
        z.records[0].owner.as_wire(),
        b"\x05MiXeD\x03a.b\x07example\x00"
    );
    assert_eq!(
        format_record(&z.records[1]),
        "x.example. 1 IN CNAME Target.Example.COM."
    );
}

#[test]
fn error_messages_name_file_and_line() {
    let e = errors("$TTL 1\n\na MX abc mail\nb A 300.1.1.1\nc FOO x\nd A 1.2.3.4 5\n\"e\nf TXT \"x\ng NAPTR 1 2 u\n$FOO\n");
    assert_eq!(
        e,
        [
            "t.zone:3: MX: expected preference (0-65535), got \"abc\"",
            "t.zone:4: A: expected an IPv4 address, got \"300.1.1.1\"",
            "t.zone:5: unknown record type \"FOO\"",
            "t.zone:6: A: unexpected extra data \"5\"",
            "t.zone:7: unterminated quoted string",
            "t.zone:8: unterminated quoted string",
            "t.zone:9: NAPTR: missing services",
            "t.zone:10: unknown directive \"$FOO\"",
        ]
    );
    let e = errors("$TTL 1\na TXT ( x\n\nb A 1.2.3.4\n");
    assert_eq!(
        e,
        ["t.zone:2: unbalanced '(': no closing ')' before end of file"]
    );
    // In a record spanning lines, the error names the line of the bad token.
    let e = errors("$TTL 1\n@ SOA ns host (\n  1 ; serial\n  2h\n  x ; retry\n  4 5 )\n");
    assert_eq!(
        e,
        ["t.zone:5: SOA: expected retry (seconds or 1w2d3h4m5s), got \"x\""]
    );
    let e = errors("$TTL 1\nk DNSKEY 256 3 8 (\n AwEAAQ==\n )\nm MX (\n 10\n)\n");
    assert_eq!(e, ["t.zone:6: MX: missing exchange"]);
    let e = errors(" A 1.2.3.4\n");
    assert_eq!(
        e,
        ["t.zone:1: no owner name, and no previous record to take it from"]
    );
}

/// Inputs Knot 3.2.6 refuses (checked one zone each with knotd) are refused here too.
#[test]
fn refused_like_knot() {
    for (text, want) in [
        ("e TXT foo\"bar\"", "TXT: a '\"' inside an unquoted string"),
        ("e TXT ((a) b)", "nested '(' inside parentheses"),
        (
            "e NAPTR 1 2 \"a\" \"b\" \"c\" \"d\"",
            "NAPTR: replacement must be a domain name",
        ),
        ("e NSEC3PARAM 1 0 0 \"\"", "NSEC3PARAM: expected salt"),
        ("e NSEC3 1 0 0 - 00 A", "NSEC3: expected next hashed owner"),
        ("e A 01.2.3.4", "A: expected an IPv4 address"),
        (
            "e RRSIG A 8 2 3600 2024010100000 20231201000000 1 . AA==",
            "RRSIG: expected expiration",
        ),
        ("e IN IN A 1.2.3.4", "unknown record type \"IN\""),
        (
            "e HTTPS 1 . port=",
            "HTTPS: parameter \"port\" needs a value",
        ),
    ] {
        let e = errors(&format!("$TTL 1\n{text}\nok A 1.2.3.4\n"));
        assert_eq!(e.len(), 1, "{text}: {e:?}");
        assert!(
            e[0].starts_with(&format!("t.zone:2: {want}")),
            "{text}: {}",
            e[0]
        );
    }
    // After a nested parenthesis the reader goes on after the group.
    let e = errors("$TTL 1\na TXT ( (x)\n y )\nb A 1.2.3.4\nc A x\n");
    assert_eq!(
        e,
        [
            "t.zone:2: nested '(' inside parentheses",
            "t.zone:5: A: expected an IPv4 address, got \"x\""
        ]
    );
}

/// RDATA of the RFC 4398, 3123, 4025 and 6742 types that Knot 3.2.6 refuses (checked
/// one zone each with `knotc zone-check`) is refused here too.
#[test]
fn rare_types_refused_like_knot() {
    for (text, want) in [
        ("CERT 1 2 3", "CERT: missing certificate"),
        ("CERT FOO 2 1 AA==", "CERT: expected certificate type"),
        ("CERT 65536 2 1 AA==", "CERT: expected certificate type"),
        ("CERT 1 2 256 AA==", "CERT: expected algorithm"),
        ("APL 1:192.0.2.0/33", "APL: expected [!]1:"),
        ("APL 3:192.0.2.0/8", "APL: expected [!]1:"),
        ("APL 1:192.0.2.0", "APL: expected [!]1:"),
        ("APL 2:2001:db8::/129", "APL: expected [!]1:"),
        ("APL 01:10.0.0.0/8", "APL: expected [!]1:"),
        ("APL !!1:10.0.0.0/8", "APL: expected [!]1:"),
        ("APL 1:10/8", "APL: expected [!]1:"),
        ("APL 1:10.0.0.0/ 8", "APL: expected [!]1:"),
        ("APL 1:192.0.2.0/24 !", "APL: expected [!]1:"),
        (
            "IPSECKEY 10 0 2 foo AA==",
            "IPSECKEY: gateway type 0 needs \".\"",
        ),
        (
            "IPSECKEY 10 4 2 . AA==",
            "IPSECKEY: expected gateway type (0-3)",
        ),
        (
            "IPSECKEY 10 1 2 . AA==",
            "IPSECKEY: expected an IPv4 address",
        ),
        (
            "IPSECKEY 10 1 2 2001:db8::1 AA==",
            "IPSECKEY: expected an IPv4 address",
        ),
        (
            "IPSECKEY 10 2 2 1.2.3.4 AA==",
            "IPSECKEY: expected an IPv6 address",
        ),
        (
            "IPSECKEY 256 1 2 1.2.3.4 AA==",
            "IPSECKEY: expected precedence",
        ),
        (
            "IPSECKEY 10 1 RSASHA256 1.2.3.4 AA==",
            "IPSECKEY: expected algorithm",
        ),
        ("IPSECKEY 10 0", "IPSECKEY: missing algorithm"),
        ("IPSECKEY 10 0 0", "IPSECKEY: missing gateway"),
        ("NID 10 0014:4fff:ff20", "NID: expected node ID"),
        ("NID 10 0014:4fff:ff20:ee64:0000", "NID: expected node ID"),
        ("NID 10 00144fffff20ee64", "NID: expected node ID"),
        ("NID 65536 0014:4fff:ff20:ee64", "NID: expected preference"),
        ("L32 10 10.1.2", "L32: expected an IPv4 address"),
        ("L32 10 ::1", "L32: expected an IPv4 address"),
        ("L64 10 2001:db8::", "L64: expected locator"),
        ("LP 10 \"foo\"", "LP: pointer must be a domain name"),
    ] {
        let e = errors(&format!("$TTL 1\ne {text}\nok A 1.2.3.4\n"));
        assert_eq!(e.len(), 1, "{text}: {e:?}");
        assert!(
            e[0].starts_with(&format!("t.zone:2: {want}")),
            "{text}: {}",
            e[0]
        );
    }
}

/// Wire forms Knot's `kdig` cannot print (it warns) print as `\#` here; the two
/// odd forms it does print are printed the same way.
#[test]
fn rare_types_malformed_wire() {
    for (t, hex) in [
        (Rtype::IPSECKEY, "0A0400"),         // gateway type 4
        (Rtype::IPSECKEY, "0A010001"),       // IPv4 gateway cut short
        (Rtype::IPSECKEY, "0A04000102FFFF"), // gateway type 4
        (Rtype::APL, "00030000"),            // family 3
        (Rtype::APL, "0001200501020304FF"),  // 5 octets of IPv4
        (Rtype::APL, "0001200401"),          // address part cut short
        (Rtype::L64, "000A01020304050607"),  // locator cut short
        (Rtype::CERT, "000100"),             // no algorithm
        (Rtype::WKS, "C0000201"),            // no protocol
    ] {
        let mut wire = Vec::new();
        let mut pending = None;
        assert!(text::hex_into(hex.as_bytes(), &mut wire, &mut pending));
        let printed = format_rdata(t, &wire);
        assert_eq!(printed, format!("\\# {} {hex}", wire.len()), "{t}");
        assert!(parse_rdata(t, &printed, &origin()).is_err(), "{t} {hex}");
    }
    // A prefix longer than the address and trailing zero octets kept: as kdig prints.
    assert_eq!(
        format_rdata(Rtype::APL, &[0, 1, 33, 4, 1, 2, 3, 4]),
        "1:1.2.3.4/33"
    );
    assert_eq!(
        format_rdata(Rtype::APL, &[0, 1, 24, 4, 1, 2, 3, 0]),
        "1:1.2.3.0/24"
    );
}

#[test]
fn errors_are_capped() {
    let text = "x MX bad x\n".repeat(1000);
    let e = errors(&text);
    assert_eq!(e.len(), MAX_ERRORS + 1);
    assert!(e.last().unwrap().contains("too many errors"));
}

#[test]
fn includes() {
    let dir = std::env::temp_dir().join(format!("lode-zonefile-inc-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(
        dir.join("main.zone"),
        "$TTL 60\n@ SOA ns host 1 2 3 4 5\n$INCLUDE sub/part.zone sub.example.\nafter A 192.0.2.9\n\t TXT \"same owner\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("sub/part.zone"),
        "x A 192.0.2.1\n$INCLUDE deeper.zone\n",
    )
    .unwrap();
    std::fs::write(dir.join("sub/deeper.zone"), "y A 192.0.2.2\n").unwrap();
    let z = parse_file(&dir.join("main.zone"), &origin(), None).unwrap();
    let owners: Vec<String> = z.records.iter().map(|r| r.owner.to_string()).collect();
    assert_eq!(
        owners,
        [
            "example.",
            "x.sub.example.",
            "y.sub.example.",
            "after.example.",
            "after.example."
        ]
    );
    assert!(z.positions[2].file.ends_with("sub/deeper.zone"));
    assert_eq!(z.positions[2].line, 1);

    // A loop is reported, not followed.
    std::fs::write(
        dir.join("loop.zone"),
        "$TTL 1\na A 1.2.3.4\n$INCLUDE loop.zone\n",
    )
    .unwrap();
    let e = parse_file(&dir.join("loop.zone"), &origin(), None).unwrap_err();
    assert_eq!(e.len(), 1);
    assert!(
        e[0].to_string().contains("loop.zone:3: $INCLUDE loop"),
        "{}",
        e[0]
    );
    // A missing file names the including line.
    std::fs::write(dir.join("missing.zone"), "$TTL 1\n$INCLUDE nothere.zone\n").unwrap();
    let e = parse_file(&dir.join("missing.zone"), &origin(), None).unwrap_err();
    assert!(
        e[0].to_string().contains("missing.zone:2: cannot read"),
        "{}",
        e[0]
    );
    let e = parse_file(&dir.join("absent.zone"), &origin(), None).unwrap_err();
    assert!(
        e[0].to_string().contains("absent.zone: cannot read")
            && e[0].to_string().contains("No such file"),
        "{}",
        e[0]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn generate_bind_arm_example() {
    // The example of the BIND 9 ARM ($GENERATE), output as named-compilezone 9.18 gives it.
    let origin: Name = "0.0.192.in-addr.arpa.".parse().unwrap();
    let text = "$TTL 1h\n$ORIGIN 0.0.192.IN-ADDR.ARPA.\n$GENERATE 1-2 @ NS SERVER$.EXAMPLE.\n\
                $GENERATE 1-127 $ CNAME $.0\n";
    let z = parse_str(text, "arm", &origin).unwrap();
    assert_eq!(z.records.len(), 129);
    let lines: Vec<String> = z.records.iter().map(format_record).collect();
    assert_eq!(
        lines[0],
        "0.0.192.IN-ADDR.ARPA. 3600 IN NS SERVER1.EXAMPLE."
    );
    assert_eq!(
        lines[1],
        "0.0.192.IN-ADDR.ARPA. 3600 IN NS SERVER2.EXAMPLE."
    );
    assert_eq!(
        lines[2],
        "1.0.0.192.IN-ADDR.ARPA. 3600 IN CNAME 1.0.0.0.192.IN-ADDR.ARPA."
    );
    assert_eq!(
        lines[128],
        "127.0.0.192.IN-ADDR.ARPA. 3600 IN CNAME 127.0.0.0.192.IN-ADDR.ARPA."
    );
    assert!(z.positions.iter().skip(2).all(|p| p.line == 4));
}

#[test]
fn generate_directive() {
    // From the BIND ARM: reverse zone PTRs and forward A records.
    let z = zone("$TTL 1\n$GENERATE 1-3 $.0 PTR host-$.example.\n$GENERATE 1-2/1 host-${10,3,d} A 10.0.0.$\n");
    let lines: Vec<String> = z.records.iter().map(format_record).collect();
    assert_eq!(
        lines,
        [
            "1.0.example. 1 IN PTR host-1.example.",
            "2.0.example. 1 IN PTR host-2.example.",
            "3.0.example. 1 IN PTR host-3.example.",
            "host-011.example. 1 IN A 10.0.0.1",
            "host-012.example. 1 IN A 10.0.0.2",
        ]
    );
    // TTL and class in the directive, multi-token rhs, nibbles, an escaped dollar.
    let z = zone("$GENERATE 10-11 ${0,3,n} 300 IN MX 10 mx$.example.\n$GENERATE 1-1 a\\$ 5 TXT \"cost \\$$\"\n");
    let lines: Vec<String> = z.records.iter().map(format_record).collect();
    assert_eq!(
        lines,
        [
            "a.0.example. 300 IN MX 10 mx10.example.",
            "b.0.example. 300 IN MX 10 mx11.example.",
            // One quoted rhs is re-read as RDATA text, so it gives two strings (BIND).
            "a\\$.example. 5 IN TXT \"cost\" \"$1\"",
        ]
    );
    // One quoted rhs is the RDATA text (BIND): a NAPTR per number.
    let z = zone("$TTL 1\n$GENERATE 0-1 $.1.e164 NAPTR \"100 10 \\\"u\\\" \\\"E2U+sip\\\" \\\"!^.*\\$!sip:$@x!\\\" .\"\n");
    assert_eq!(
        format_rdata(Rtype::NAPTR, &z.records[1].rdata),
        r#"100 10 "u" "E2U+sip" "!^.*$!sip:1@x!" ."#
    );
    let e = errors("$TTL 1\n$GENERATE 1-2 a$ A 10.0.0.${300}\n");
    assert_eq!(e.len(), 1);
    assert!(
        e[0].starts_with("t.zone:2: $GENERATE: A: expected an IPv4 address"),
        "{}",
        e[0]
    );
    assert!(errors("$GENERATE 5-1 a A 1.2.3.4\n")[0].contains("empty"));
}

/// A small deterministic generator (xorshift), so the robustness test needs no crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn never_panics_on_random_or_mutated_input() {
    let base = SAMPLES
        .iter()
        .map(|(t, i, _)| format!("n{} 300 IN {t} {i}\n", t.len()))
        .collect::<String>()
        + "$GENERATE 1-3 g$ A 10.0.0.${0,1,x}\n$ORIGIN sub\n$TTL 5\n( a ) TXT x\n";
    if let Err(e) = parse_str(&base, "fuzz", &origin()) {
        panic!("{e:?}");
    }
    let alphabet = b" \t\n\\\"();$@.0123456789abcdefxyzABC#=,-";
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let base = base.into_bytes();
    // LODE_FUZZ_ROUNDS=1000000 for a longer run.
    let rounds: usize = std::env::var("LODE_FUZZ_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3000);
    for round in 0..rounds {
        let mut data = if round % 3 == 0 {
            (0..rng.next() % 400)
                .map(|_| rng.next() as u8)
                .collect::<Vec<u8>>()
        } else {
            base.clone()
        };
        let edits = 1 + rng.next() % 8;
        for _ in 0..edits {
            if data.is_empty() {
                break;
            }
            let at = (rng.next() as usize) % data.len();
            match rng.next() % 4 {
                0 => data[at] = alphabet[(rng.next() as usize) % alphabet.len()],
                1 => {
                    data.remove(at);
                }
                2 => data.insert(at, alphabet[(rng.next() as usize) % alphabet.len()]),
                _ => data[at] = rng.next() as u8,
            }
        }
        let _ = parse_bytes(&data, "fuzz", &origin(), Some(1));
        // Every type's RDATA parser and printer on random text and random bytes.
        let (t, _, _) = SAMPLES[round % SAMPLES.len()];
        let t = Rtype::from_mnemonic(t).unwrap();
        let text = String::from_utf8_lossy(&data[..data.len().min(80)]).into_owned();
        let _ = parse_rdata(t, &text, &origin());
        let _ = format_rdata(t, &data[..data.len().min(64)]);
    }
}

#[test]
fn printed_records_parse_back() {
    let text: String = SAMPLES
        .iter()
        .map(|(t, i, _)| format!("n 300 IN {t} {i}\n"))
        .collect();
    let z = zone(&text);
    let printed: String = z.records.iter().map(|r| format_record(r) + "\n").collect();
    let again = zone(&printed);
    assert_eq!(z.records, again.records);
}

#[test]
fn large_naptr_zone() {
    let mut text = String::from(
        "$ORIGIN 1.e164.arpa.\n$TTL 3600\n@ SOA ns host 1 2 3 4 5\n@ NS ns.example.\n",
    );
    for i in 0..100_000u32 {
        let digits: String = format!("{i:05}")
            .chars()
            .rev()
            .flat_map(|c| [c, '.'])
            .collect();
        text.push_str(&format!(
            "{}5.5 NAPTR 100 10 \"u\" \"E2U+sip\" \"!^.*$!sip:+155{i:05}@example.com!\" .\n",
            digits
        ));
    }
    let origin: Name = "1.e164.arpa.".parse().unwrap();
    let z = parse_str(&text, "big.zone", &origin).unwrap();
    assert_eq!(z.records.len(), 100_002);
    assert_eq!(z.positions.len(), z.records.len());
    let last = z.records.last().unwrap();
    assert_eq!(last.owner.to_string(), "9.9.9.9.9.5.5.1.e164.arpa.");
    assert_eq!(z.positions.last().unwrap().line, 100_004);
}

#[test]
fn base64_for_secrets() {
    use crate::decode_base64;
    assert_eq!(decode_base64("aGVsbG8=").as_deref(), Some(&b"hello"[..]));
    assert_eq!(decode_base64("aGVsbG8").as_deref(), Some(&b"hello"[..]));
    assert_eq!(decode_base64("aGVs bG8=").as_deref(), Some(&b"hello"[..]));
    assert_eq!(decode_base64("").as_deref(), Some(&[][..]));
    assert!(decode_base64("a*b").is_none());
    assert!(decode_base64("a").is_none());
}

#[test]
fn counters_cover_every_byte_and_record() {
    let dir = std::env::temp_dir().join(format!("lode-zonefile-count-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Large enough for several intermediate updates, with an include.
    let mut main = String::from("$TTL 60\n@ SOA ns host 1 2 3 4 5\n$INCLUDE part.zone\n");
    for i in 0..20_000 {
        main.push_str(&format!(
            "n{i} NAPTR 100 10 \"u\" \"E2U+sip\" \"!^.*$!sip:{i}@x!\" .\n"
        ));
    }
    let part = "p A 192.0.2.1\nq A 192.0.2.2\n";
    std::fs::write(dir.join("main.zone"), &main).unwrap();
    std::fs::write(dir.join("part.zone"), part).unwrap();
    let counters = ParseCounters::default();
    let z = parse_file_counted(&dir.join("main.zone"), &origin(), None, Some(&counters)).unwrap();
    assert_eq!(counters.records(), z.records.len() as u64);
    assert_eq!(counters.records(), 20_003);
    assert_eq!(counters.bytes(), (main.len() + part.len()) as u64);
    // A file with errors still counts whole (reading stops at the cap).
    std::fs::write(dir.join("bad.zone"), "x MX bad x\n".repeat(1000)).unwrap();
    let counters = ParseCounters::default();
    assert!(parse_file_counted(&dir.join("bad.zone"), &origin(), None, Some(&counters)).is_err());
    assert_eq!(counters.bytes(), 11_000);
    assert_eq!(counters.records(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Zone text with what a cut between blocks must not break: blank owners, records in
/// parentheses over several lines, comments, quotes holding `(` and `;`,
/// escapes, relative and absolute names.
fn text_with_cut_hazards(records: usize) -> String {
    let mut t = String::from(
        "; header\n$ORIGIN example.\n$TTL 300\n@ SOA ns host ( 1 2\n 3 4 5 )\n NS ns\nns A 192.0.2.1\n",
    );
    for i in 0..records {
        match i % 7 {
            0 => t.push_str(&format!(
                "{i}.n NAPTR 100 10 \"u\" \"E2U+sip\" \"!^(.*)$!sip:{i}@x;y!\" .\n"
            )),
            1 => t.push_str(&format!("\t60 TXT \"a ( b\" c\\; \"{i}\"\n")),
            2 => t.push_str(&format!("m{i} MX ( 10\n   mail{i} ) ; comment (\n")),
            3 => t.push_str(&format!("e\\.{i} CNAME target.example.\n\n")),
            4 => t.push_str(&format!("t{i} IN TXT \"x\" (\n \"y\"\n \"z\" )\n")),
            5 => t.push_str("; only a comment\n   \n"),
            _ => t.push_str(&format!("a{i} 1h A 10.0.{}.{}\n", i % 256, i / 256 % 256)),
        }
    }
    t
}

/// Reads `text` from a file in blocks of `block` bytes and in one piece;
/// when the blocks give a result it must be the one-piece result. Returns
/// true when the blocks gave one.
fn blocks_match_one_piece(text: &[u8], block: usize, default_ttl: Option<u32>) -> bool {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static FILES: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!(
        "lode-zonefile-blocks-{}-{}.zone",
        std::process::id(),
        FILES.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&path, text).unwrap();
    let one = parse_file(&path, &origin(), default_ttl);
    let counters = ParseCounters::default();
    let blocks =
        crate::stream::read_in_blocks(&path, &origin(), default_ttl, Some(&counters), block, None);
    // Handed over block by block: the same records, the same counts.
    let mut handed = (Vec::new(), Vec::new());
    let handed_counters = ParseCounters::default();
    let mut each = |records: &mut crate::flat::Flat| {
        records.each(&mut |r, p| {
            handed.0.push(r.to_record());
            handed.1.push(p.to_pos());
        })
    };
    let streamed = crate::stream::read_in_blocks(
        &path,
        &origin(),
        default_ttl,
        Some(&handed_counters),
        block,
        Some(&mut each),
    );
    std::fs::remove_file(&path).unwrap();
    assert_eq!(blocks.is_some(), streamed.is_some());
    match blocks {
        Some(b) => {
            let one = one.unwrap_or_else(|e| panic!("blocks read, one piece failed: {e:?}"));
            assert_eq!(b.records, one.records);
            assert_eq!(b.positions, one.positions);
            assert_eq!(counters.bytes(), text.len() as u64);
            assert_eq!(counters.records(), one.records.len() as u64);
            assert!(streamed.is_some_and(|z| z.records.is_empty()));
            assert_eq!(handed.0, one.records);
            assert_eq!(handed.1, one.positions);
            assert_eq!(handed_counters.records(), one.records.len() as u64);
            true
        }
        None => {
            assert_eq!((counters.bytes(), counters.records()), (0, 0));
            false
        }
    }
}

#[test]
fn blocks_give_the_one_piece_records() {
    let text = text_with_cut_hazards(2000);
    for block in [7, 64, 1000, 10_000] {
        for ttl in [None, Some(3600)] {
            assert!(
                blocks_match_one_piece(text.as_bytes(), block, ttl),
                "{block}"
            );
        }
    }
    // Directives anywhere are fine: one reader goes through the blocks in order.
    let mid = text.len() / 2;
    let cut = mid + text[mid..].find('\n').unwrap() + 1;
    let t = format!("{}$ORIGIN sub\n$TTL 5\n{}", &text[..cut], &text[cut..]);
    assert!(blocks_match_one_piece(t.as_bytes(), 100, None));
    // An error: read again in one piece.
    let t = format!("{}bad A 1.2.3\n{}", &text[..cut], &text[cut..]);
    assert!(!blocks_match_one_piece(t.as_bytes(), 100, None));
    // Parentheses open across many blocks: given up, not misread.
    let t = format!("{}x TXT ( \"a\"\n{}\n)\n", &text[..cut], &text[cut..]);
    assert!(!blocks_match_one_piece(t.as_bytes(), 100, Some(1)));
}

#[test]
fn blocks_match_one_piece_on_mutated_text() {
    let base = text_with_cut_hazards(300).into_bytes();
    let alphabet = b" \t\n\\\"();$@.0123456789abcxyz";
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut read_in_blocks = 0;
    for _ in 0..400 {
        let mut data = base.clone();
        for _ in 0..1 + rng.next() % 4 {
            let at = (rng.next() as usize) % data.len();
            match rng.next() % 3 {
                0 => data[at] = alphabet[(rng.next() as usize) % alphabet.len()],
                1 => {
                    data.remove(at);
                }
                _ => data.insert(at, alphabet[(rng.next() as usize) % alphabet.len()]),
            }
        }
        let block = 1 + (rng.next() % 300) as usize;
        if blocks_match_one_piece(&data, block, Some(3600)) {
            read_in_blocks += 1;
        }
    }
    assert!(read_in_blocks > 50, "{read_in_blocks}");
}

#[test]
fn written_zone_parses_back() {
    let mut text = String::from("$TTL 300\n@ SOA ns host 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n");
    text.push_str("a\\.b.sub 60 TXT \"dot in a label\"\n\\@ 60 TXT \"at sign\"\n");
    text.push_str("\\$x 60 TXT \"dollar\"\nsp\\032ace 60 A 192.0.2.3\n");
    text.push_str("outside.other. 60 A 192.0.2.4\n");
    for (t, i, _) in SAMPLES {
        text.push_str(&format!("n 300 IN {t} {i}\n"));
    }
    let z = zone(&text);
    let mut out = Vec::new();
    let n = write_zone(&mut out, &origin(), z.records.iter().cloned()).unwrap();
    assert_eq!(n as usize, z.records.len());
    let printed = String::from_utf8(out).unwrap();
    let mut lines = printed.lines();
    assert_eq!(lines.next(), Some("$ORIGIN example."));
    assert_eq!(
        lines.next(),
        Some("@ 300 SOA ns.example. host.example. 1 2 3 4 5")
    );
    assert!(printed.contains("\nns 300 A 192.0.2.1\n"), "{printed}");
    assert!(printed.contains("\na\\.b.sub 60 TXT"), "{printed}");
    assert!(printed.contains("\noutside.other. 60 A"), "{printed}");
    // Read back under another origin: the $ORIGIN line decides.
    let other: Name = "elsewhere.".parse().unwrap();
    let again = parse_str(&printed, "w.zone", &other).unwrap();
    assert_eq!(z.records, again.records);
    // The root zone: owners relative to ".".
    let root = Name::root();
    let r = parse_str(
        "@ 60 NS a.root-servers.net.\ncom 60 NS a.gtld.net.\n",
        "r",
        &root,
    )
    .unwrap();
    let mut out = Vec::new();
    write_zone(&mut out, &root, r.records.iter().cloned()).unwrap();
    let printed = String::from_utf8(out).unwrap();
    assert!(printed.contains("\ncom 60 NS"), "{printed}");
    assert_eq!(parse_str(&printed, "r", &other).unwrap().records, r.records);
}

/// A file handed record by record (`parse_file_each`), read on a thread of
/// its own or not: the records and positions of the one-piece read; with an
/// error in a late block, the handed records are taken back (`restart`) and
/// the error comes with its line.
#[test]
fn records_handed_from_a_reading_thread_are_the_one_piece_read() {
    let mut good = String::from("$TTL 300\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n");
    for i in 0..3000 {
        good.push_str(&format!("n{i} A 192.0.2.{}\nn{i} TXT \"{i}\"\n", i % 250));
    }
    let bad = format!("{good}late A 999.0.0.1\n");
    for (text, pipeline_from) in [(&good, 0), (&good, u64::MAX), (&bad, 0), (&bad, u64::MAX)] {
        let path = std::env::temp_dir().join(format!(
            "lode-zonefile-each-{}-{pipeline_from}-{}.zone",
            std::process::id(),
            text.len()
        ));
        std::fs::write(&path, text).unwrap();
        let one = parse_file(&path, &origin(), None);
        let handed = std::cell::RefCell::new((Vec::new(), Vec::new()));
        let mut restarts = 0;
        let counters = ParseCounters::default();
        let out = crate::parse_file_each_in(
            (&path, &origin(), None, Some(&counters)),
            &mut |r, p| {
                let mut h = handed.borrow_mut();
                h.0.push(r.to_record());
                h.1.push(p.to_pos());
            },
            &mut || {
                *handed.borrow_mut() = (Vec::new(), Vec::new());
                restarts += 1;
            },
            4096,
            pipeline_from,
        );
        let (records, positions) = handed.into_inner();
        std::fs::remove_file(&path).unwrap();
        match one {
            Ok(one) => {
                assert!(out.is_ok());
                assert_eq!(records, one.records);
                assert_eq!(positions, one.positions);
                assert_eq!(restarts, 0);
                assert_eq!(counters.records(), one.records.len() as u64);
            }
            Err(errors) => {
                let got = out.expect_err("the bad file fails");
                assert_eq!(got, errors);
                assert!(got[0].to_string().contains(":6005"), "{}", got[0]);
                // Blocks before the error were handed, then taken back.
                assert_eq!(restarts, 1);
            }
        }
    }
}
