//! The examples of RFC 8976 Appendix A are the test vectors: each zone
//! carries the digest the RFC gives for it.

use super::*;
use lode_zonedb::ZoneBuilder;

fn zone(origin: &str, text: &str) -> Zone {
    let origin: lode_wire::Name = origin.parse().unwrap();
    let parsed = lode_zonefile::parse_str(text, "test", &origin).expect("zone text");
    let mut b = ZoneBuilder::new(origin);
    for r in parsed.records {
        b.add(r, 0);
    }
    b.build().expect("zone").0
}

/// RFC 8976 A.1: the simple example zone.
const SIMPLE: &str = "\
example.      86400  IN  SOA     ns1 admin 2018031900 (
                                 1800 900 604800 86400 )
              86400  IN  NS      ns1
              86400  IN  NS      ns2
              86400  IN  ZONEMD  2018031900 1 1 (
                                 c68090d90a7aed71
                                 6bc459f9340e3d7c
                                 1370d4d24b7e2fc3
                                 a1ddc0b9a87153b9
                                 a9713b3c9ae5cc27
                                 777f98b8e730044c )
ns1           3600   IN  A       203.0.113.63
ns2           3600   IN  AAAA    2001:db8::63
";

/// RFC 8976 A.2: the complex example zone (its out-of-zone record left
/// out: a zone here never holds one).
const COMPLEX: &str = r#"
example.      86400  IN  SOA     ns1 admin 2018031900 (
                                 1800 900 604800 86400 )
              86400  IN  NS      ns1
              86400  IN  NS      ns2
              86400  IN  ZONEMD  2018031900 1 1 (
                                 a3b69bad980a3504
                                 e1cffcb0fd6397f9
                                 3848071c93151f55
                                 2ae2f6b1711d4bd2
                                 d8b39808226d7b9d
                                 b71e34b72077f8fe )
ns1           3600   IN  A       203.0.113.63
NS2           3600   IN  AAAA    2001:db8::63
occluded.sub  7200   IN  TXT     "I'm occluded but must be digested"
sub           7200   IN  NS      ns1
duplicate     300    IN  TXT     "I must be digested just once"
duplicate     300    IN  TXT     "I must be digested just once"
UPPERCASE     3600   IN  TXT     "canonicalize uppercase owner names"
*             777    IN  PTR     dont-forget-about-wildcards
mail          3600   IN  MX      20 MAIL1
mail          3600   IN  MX      10 Mail2.Example.
sortme        3600   IN  AAAA    2001:db8::5:61
sortme        3600   IN  AAAA    2001:db8::3:62
sortme        3600   IN  AAAA    2001:db8::4:63
sortme        3600   IN  AAAA    2001:db8::1:65
sortme        3600   IN  AAAA    2001:db8::2:64
non-apex      900    IN  ZONEMD  2018031900 1 1 (
                                 616c6c6f77656420
                                 6275742069676e6f
                                 7265642e20616c6c
                                 6f77656420627574
                                 2069676e6f726564
                                 2e20616c6c6f7765 )
"#;

/// RFC 8976 A.3: several digests, two of them of unknown kinds.
const MULTIPLE: &str = r#"
example.      86400  IN  SOA     ns1 admin 2018031900 (
                                 1800 900 604800 86400 )
example.      86400  IN  NS      ns1.example.
example.      86400  IN  NS      ns2.example.
example.      86400  IN  ZONEMD  2018031900 1 1 (
                                 62e6cf51b02e54b9
                                 b5f967d547ce4313
                                 6792901f9f88e637
                                 493daaf401c92c27
                                 9dd10f0edb1c56f8
                                 080211f8480ee306 )
example.      86400  IN  ZONEMD  2018031900 1 2 (
                                 08cfa1115c7b948c
                                 4163a901270395ea
                                 226a930cd2cbcf2f
                                 a9a5e6eb85f37c8a
                                 4e114d884e66f176
                                 eab121cb02db7d65
                                 2e0cc4827e7a3204
                                 f166b47e5613fd27 )
example.      86400  IN  ZONEMD  2018031900 1 240 (
                                 e2d523f654b9422a
                                 96c5a8f44607bbee )
example.      86400  IN  ZONEMD  2018031900 241 1 (
                                 e1846540e33a9e41
                                 89792d18d5d131f6
                                 05fc283e )
ns1.example.  3600   IN  A       203.0.113.63
ns2.example.  86400  IN  TXT     "This example has multiple digests"
NS2.EXAMPLE.  3600   IN  AAAA    2001:db8::63
"#;

/// RFC 8976 A.4: the uri.arpa zone, signed (NSEC), its ZONEMD signed.
const URI_ARPA: &str = r#"
uri.arpa.	3600 IN SOA	sns.dns.icann.org. noc.dns.icann.org. 2018100702 10800 3600 1209600 3600
uri.arpa.	3600 IN RRSIG	SOA 8 2 3600 20210217232440 20210120232440 37444 uri.arpa. GzQw+QzwLDJr13REPGVmpEChjD1D2XlX0ie1DnWHpgaEw1E/dhs3lCN3 +BmHd4Kx3tffTRgiyq65HxR6feQ5v7VmAifjyXUYB1DZur1eP5q0Ms2y gCB3byoeMgCNsFS1oKZ2LdzNBRpy3oace8xQn1SpmHGfyrsgg+WbHKCT 1dY=
uri.arpa.	86400 IN NS	a.iana-servers.net.
uri.arpa.	86400 IN NS	b.iana-servers.net.
uri.arpa.	86400 IN NS	c.iana-servers.net.
uri.arpa.	86400 IN NS	ns2.lacnic.net.
uri.arpa.	86400 IN NS	sec3.apnic.net.
uri.arpa.	86400 IN RRSIG	NS 8 2 86400 20210217232440 20210120232440 37444 uri.arpa. M+Iei2lcewWGaMtkPlrhM9FpUAHXFkCHTVpeyrjxjEONeNgKtHZor5e4 V4qJBOzNqo8go/qJpWlFBm+T5Hn3asaBZVstFIYky38/C8UeRLPKq1hT THARYUlFrexr5fMtSUAVOgOQPSBfH3xBq/BgSccTdRb9clD+HE7djpqr LS4=
uri.arpa.	600 IN MX	10 pechora.icann.org.
uri.arpa.	600 IN RRSIG	MX 8 2 600 20210217232440 20210120232440 37444 uri.arpa. kQAJQivmv6A5hqYBK8h6Z13ESY69gmosXwKI6WE09I8RFetfrxr24ecd nYd0lpnDtgNNSoHkYRSOoB+C4+zuJsoyAAzGo9uoWMWj97/2xeGhf3PT C9meQ9Ohi6hul9By7OR76XYmGhdWX8PBi60RUmZ1guslFBfQ8izwPqzu phs=
uri.arpa.	3600 IN NSEC	ftp.uri.arpa. NS SOA MX RRSIG NSEC DNSKEY ZONEMD
uri.arpa.	3600 IN RRSIG	NSEC 8 2 3600 20210217232440 20210120232440 37444 uri.arpa. dU/rXLM/naWd1+1PiWiYVaNJyCkiuyZJSccr91pJI673T8r3685B4ODM YFafZRboVgwnl3ZrXddY6xOhZL3n9V9nxXZwjLJ2HJUojFoKcXTlpnUy YUYvVQ2kj4GHAo6fcGCEp5QFJ2KbCpeJoS+PhKGRRx28icCiNT4/uXQv O2E=
uri.arpa.	3600 IN DNSKEY	256 3 8 AwEAAbMxuFuLeVDuOwIMzYOTD/bTREjLflo7wOi6ieIJhqltEzgjNzmW Jf9kGwwDmzxU7kbthMEhBNBZNn84zmcyRSCMzuStWveL7xmqqUlE3swL 8kLOvdZvc75XnmpHrk3ndTyEb6eZM7slh2C63Oh6K8VR5VkiZAkEGg0u ZIT3NjsF
uri.arpa.	3600 IN DNSKEY	257 3 8 AwEAAdkTaWkZtZuRh7/OobBUFxM+ytTst+bCu0r9w+rEwXD7GbDs0pIM hMenrZzoAvmv1fQxw2MGs6Ri6yPKfNULcFOSt9l8i6BVBLI+SKTY6XXe DUQpSEmSaxohHeRPMQFzpysfjxINp/L2rGtZ7yPmxY/XRiFPSO0myqwG Ja9r06Zw9CHM5UDHKWV/E+zxPFq/I7CfPbrrzbUotBX7Z6Vh3Sarllbe 8cGUB2UFNaTRgwB0TwDBPRD5ER3w2Dzbry9NhbElTr7vVfhaGWeOGuqA UXwlXEg6CrNkmJXJ2F1Rzr9WHUzhp7uWxhAbmJREGfi2dEyPAbUAyCjB qhFaqglknvc=
uri.arpa.	3600 IN DNSKEY	257 3 8 AwEAAenQaBoFmDmvRT+/H5oNbm0Tr5FmNRNDEun0Jpj/ELkzeUrTWhNp QmZeIMC8I0kZ185tEvOnRvn8OvV39B17QIdrvvKGIh2HlgeDRCLolhao jfn2QM0DStjF/WWHpxJOmE6CIuvhqYEU37yoJscGAPpPVPzNvnL1HhYT aao1VRYWQ/maMrJ+bfHg+YX1N6M/8MnRjIKBif1FWjbCKvsn6dnuGGL9 oCWYUFJ3DwofXuhgPyZMkzPc88YkJj5EMvbMH4wtelbCwC+ivx732l0w /rXJn0ciQSOgoeVvDio8dIJmWQITWQAuP+q/ZHFEFHPlrP3gvQh5mcVS 48eLX71Bq7c=
uri.arpa.	3600 IN RRSIG	DNSKEY 8 2 3600 20210217232440 20210120232440 12670 uri.arpa. DBE2gkKAoxJCfz47KKxzoImN/0AKArhIVHE7TyTwy0DdRPo44V5R+vL6 thUxlQ1CJi2Rw0jwAXymx5Y3Q873pOEllH+4bJoIT4dmoBmPXfYWW7Cl vw9UPKHRP0igKHmCVwIeBYDTU3gfLcMTbR4nEWPDN0GxlL1Mf7ITaC2I oabo79Ip3M/MR8I3Vx/xZ4ZKKPHtLn3xUuJluPNanqJrED2gTslL2xWZ 1tqjsAjJv7JnJo2HJ8XVRB5zBto0IaJ2oBlqcjdcQ/0VlyoM8uOy1pDw HQ2BJl7322gNMHBP9HSiUPIOaIDNUCwW8eUcW6DIUk+s9u3GN1uTqwWz sYB/rA==
uri.arpa.	3600 IN RRSIG	DNSKEY 8 2 3600 20210217232440 20210120232440 30577 uri.arpa. Kx6HwP4UlkGc1UZ7SERXtQjPajOF4iUvkwDj7MEG1xbQFB1KoJiEb/ei W0qmSWdIhMDv8myhgauejRLyJxwxz8HDRV4xOeHWnRGfWBk4XGYwkejV zOHzoIArVdUVRbr2JKigcTOoyFN+uu52cNB7hRYu7dH5y1hlc6UbOnzR pMtGxcgVyKQ+/ARbIqGG3pegdEOvV49wTPWEiyY65P2urqhvnRg5ok/j zwAdMx4XGshiib7Ojq0sRVl2ZIzj4rFgY/qsSO8SEXEhMo2VuSkoJNio fVzYoqpxEeGnANkIT7Tx2xJL1BWyJxyc7E8Wr2QSgCcc+rYL6IkHDtJG Hy7TaQ==
uri.arpa.	3600 IN ZONEMD	2018100702 1 1 0DBC3C4DBFD75777C12CA19C337854B1577799901307C482E9D91D5D 15CD934D16319D98E30C4201CF25A1D5A0254960
uri.arpa.	3600 IN RRSIG	ZONEMD 8 2 3600 20210217232440 20210120232440 37444 uri.arpa. QDo4XZcL3HMyn8aAHyCUsu/Tqj4Gkth8xY1EqByOb8XOTwVtA4ZNQORE 1siqNqjtJUbeJPtJSbLNqCL7rCq0CzNNnBscv6IIf4gnqJZjlGtHO30o hXtKvEc4z7SU3IASsi6bB3nLmEAyERdYSeU6UBfx8vatQDIRhkgEnnWU Th4=
ftp.uri.arpa.	604800 IN	NAPTR	0 0 "" "" "!^ftp://([^:/?#]*).*$!\\1!i" .
ftp.uri.arpa.	604800 IN	RRSIG	NAPTR 8 3 604800 20210217232440 20210120232440 37444 uri.arpa. EygekDgl+Lyyq4NMSEpPyOrOywYf9Y3FAB4v1DT44J3R5QGidaH8l7ZF jHoYFI8sY64iYOCV4sBnX/dh6C1L5NgpY+8l5065Xu3vvjyzbtuJ2k6Y YwJrrCbvl5DDn53zAhhO2hL9uLgyLraZGi9i7TFGd0sm3zNyUF/EVL0C cxU=
ftp.uri.arpa.	3600 IN NSEC	http.uri.arpa. NAPTR RRSIG NSEC
ftp.uri.arpa.	3600 IN RRSIG	NSEC 8 3 3600 20210217232440 20210120232440 37444 uri.arpa. pbP4KxevPXCu/bDqcvXiuBppXyFEmtHyiy0eAN5gS7mi6mp9Z9bWFjx/ LdH9+6oFGYa5vGmJ5itu/4EDMe8iQeZbI8yrpM4TquB7RR/MGfBnTd8S +sjyQtlRYG7yqEu77Vd78Fme22BKPJ+MVqjS0JHMUE/YUGomPkAjLJJw wGw=
http.uri.arpa.	604800 IN	NAPTR	0 0 "" "" "!^http://([^:/?#]*).*$!\\1!i" .
http.uri.arpa.	604800 IN	RRSIG	NAPTR 8 3 604800 20210217232440 20210120232440 37444 uri.arpa. eTqbWvt1GvTeXozuvm4ebaAfkXFQKrtdu0cEiExto80sHIiCbO0WL8UD a/J3cDivtQca7LgUbOb6c17NESsrsVkc6zNPx5RK2tG7ZQYmhYmtqtfg 1oU5BRdHZ5TyqIXcHlw9Blo2pir1Y9IQgshhD7UOGkbkEmvB1Lrd0aHh AAg=
http.uri.arpa.	3600 IN NSEC	mailto.uri.arpa. NAPTR RRSIG NSEC
http.uri.arpa.	3600 IN RRSIG	NSEC 8 3 3600 20210217232440 20210120232440 37444 uri.arpa. R9rlNzw1CVz2N08q6DhULzcsuUm0UKcPaGAWEU40tr81jEDHsFHNM+kh CdOI8nDstzA42aee4rwCEgijxJpRCcY9hrO1Ysrrr2fdqNz60JikMdar vU5O0p0VXeaaJDfJQT44+o+YXaBwI7Qod3FTMx7aRib8i7istvPm1Rr7 ixA=
mailto.uri.arpa. 604800 IN	NAPTR	0 0 "" "" "!^mailto:(.*)@(.*)$!\\2!i" .
mailto.uri.arpa. 604800 IN	RRSIG	NAPTR 8 3 604800 20210217232440 20210120232440 37444 uri.arpa. Ch2zTG2F1plEvQPyIH4Yd80XXLjXOPvMbiqDjpJBcnCJsV8QF7kr0wTL nUT3dB+asQudOjPyzaHGwFlMzmrrAsszN4XAMJ6htDtFJdsgTMP/NkHh YRSmVv6rLeAhd+mVfObY12M//b/GGVTjeUI/gJaLW0fLVZxr1Fp5U5CR jyw=
mailto.uri.arpa. 3600 IN NSEC	urn.uri.arpa. NAPTR RRSIG NSEC
mailto.uri.arpa. 3600 IN RRSIG	NSEC 8 3 3600 20210217232440 20210120232440 37444 uri.arpa. fQUbSIE6E7JDi2rosah4SpCOTrKufeszFyj5YEavbQuYlQ5cNFvtm8Ku E2xXMRgRI4RGvM2leVqcoDw5hS3m2pOJLxH8l2WE72YjYvWhvnwc5Rof e/8yB/vaSK9WCnqN8y2q6Vmy73AGP0fuiwmuBra7LlkOiqmyx3amSFiz wms=
urn.uri.arpa.	604800 IN	NAPTR	0 0 "" "" "/urn:([^:]+)/\\1/i" .
urn.uri.arpa.	604800 IN	RRSIG	NAPTR 8 3 604800 20210217232440 20210120232440 37444 uri.arpa. CVt2Tgz0e5ZmaSXqRfNys/8OtVCk9nfP0zhezhN8Bo6MDt6yyKZ2kEEW JPjkN7PCYHjO8fGjnUn0AHZI2qBNv7PKHcpR42VY03q927q85a65weOO 1YE0vPYMzACpua9TOtfNnynM2Ws0uN9URxUyvYkXBdqOC81N3sx1dVEL cwc=
urn.uri.arpa.	3600 IN NSEC	uri.arpa. NAPTR RRSIG NSEC
urn.uri.arpa.	3600 IN RRSIG	NSEC 8 3 3600 20210217232440 20210120232440 37444 uri.arpa. JuKkMiC3/j9iM3V8/izcouXWAVGnSZjkOgEgFPhutMqoylQNRcSkbEZQ zFK8B/PIVdzZF0Y5xkO6zaKQjOzz6OkSaNPIo1a7Vyyl3wDY/uLCRRAH RJfpknuY7O+AUNXvVVIEYJqZggd4kl/Rjh1GTzPYZTRrVi5eQidI1LqC Oeg=
"#;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn the_simple_example_zone_has_the_rfc_digest() {
    let z = zone("example.", SIMPLE);
    let want = hex("c68090d90a7aed716bc459f9340e3d7c1370d4d24b7e2fc3a1ddc0b9a87153b9a9713b3c9ae5cc27777f98b8e730044c");
    assert_eq!(digest(&z, SHA384).unwrap(), want);
    assert_eq!(verify(&z), Ok(()));
    // The record as it is made: the SOA's serial and TTL.
    let r = record(&z, SHA384).unwrap();
    assert_eq!(r.ttl, 86400);
    assert_eq!(&*r.rdata, &*rdata(2018031900, SHA384, &want));
    assert!(in_place(&z, Generate::Sha384));
    assert!(!in_place(&z, Generate::Sha512));
}

#[test]
fn the_complex_example_zone_has_the_rfc_digest() {
    let z = zone("example.", COMPLEX);
    let want = hex("a3b69bad980a3504e1cffcb0fd6397f93848071c93151f552ae2f6b1711d4bd2d8b39808226d7b9db71e34b72077f8fe");
    assert_eq!(digest(&z, SHA384).unwrap(), want);
    assert_eq!(verify(&z), Ok(()));
}

#[test]
fn the_multiple_digests_example_verifies_by_each_supported_digest() {
    let z = zone("example.", MULTIPLE);
    assert_eq!(
        digest(&z, SHA384).unwrap(),
        hex("62e6cf51b02e54b9b5f967d547ce43136792901f9f88e637493daaf401c92c279dd10f0edb1c56f8080211f8480ee306")
    );
    assert_eq!(
        digest(&z, SHA512).unwrap(),
        hex("08cfa1115c7b948c4163a901270395ea226a930cd2cbcf2fa9a5e6eb85f37c8a4e114d884e66f176eab121cb02db7d652e0cc4827e7a3204f166b47e5613fd27")
    );
    assert_eq!(verify(&z), Ok(()));
    assert_eq!(digest(&z, 240), None);
}

#[test]
fn the_signed_uri_arpa_example_has_the_rfc_digest() {
    let z = zone("uri.arpa.", URI_ARPA);
    let want = hex("0DBC3C4DBFD75777C12CA19C337854B1577799901307C482E9D91D5D15CD934D16319D98E30C4201CF25A1D5A0254960");
    assert_eq!(digest(&z, SHA384).unwrap(), want);
    assert_eq!(verify(&z), Ok(()));
}

/// The canonical form made on a thread of its own (in batches of a few
/// bytes, so that the examples cross many) gives the digests of the one
/// made on the hashing thread: the RFC's examples, by each hash.
#[test]
fn digests_made_beside_are_the_digests_made_in_line() {
    for (origin, text) in [
        ("example.", SIMPLE),
        ("example.", COMPLEX),
        ("example.", MULTIPLE),
        ("uri.arpa.", URI_ARPA),
    ] {
        let z = zone(origin, text);
        for alg in [SHA384, SHA512] {
            let in_line = super::digest_in(&z, alg, (usize::MAX, 0)).unwrap();
            let beside = super::digest_in(&z, alg, (0, 64)).unwrap();
            assert_eq!(beside, in_line, "{origin}");
            assert_eq!(digest(&z, alg).unwrap(), in_line, "{origin}");
        }
    }
}

#[test]
fn a_zone_that_does_not_match_its_digest_is_refused_with_the_reason() {
    let tampered = SIMPLE.replace("203.0.113.63", "203.0.113.64");
    assert_eq!(
        verify(&zone("example.", &tampered)),
        Err(VerifyError::Mismatch { algorithm: SHA384 })
    );
    let no_zonemd = zone(
        "example.",
        "example. 86400 IN SOA ns1 admin 2018031900 1800 900 604800 86400\nexample. 86400 IN NS ns1\nns1 3600 IN A 203.0.113.63\n",
    );
    assert_eq!(verify(&no_zonemd), Err(VerifyError::Missing));
    let wrong_serial = zone(
        "example.",
        &SIMPLE.replace("ZONEMD  2018031900", "ZONEMD  2018031901"),
    );
    assert_eq!(
        verify(&wrong_serial),
        Err(VerifyError::Unsupported { serial: 2018031900 })
    );
    let twice = format!(
        "{SIMPLE}example. 86400 IN ZONEMD 2018031900 1 1 {}\n",
        "00".repeat(48)
    );
    assert_eq!(
        verify(&zone("example.", &twice)),
        Err(VerifyError::Duplicate {
            scheme: 1,
            algorithm: 1
        })
    );
}

/// The digest's cost on a zone file (`LODE_ZONEMD_FILE`, its origin in
/// `LODE_ZONEMD_ORIGIN`): run by hand in release, e.g. on `lode-bench gen
/// tld --delegations 1000000` (see BENCHMARKING.md).
#[test]
#[ignore]
fn digest_timing_of_a_zone_file() {
    let (Some(path), Some(origin)) = (
        std::env::var_os("LODE_ZONEMD_FILE"),
        std::env::var("LODE_ZONEMD_ORIGIN").ok(),
    ) else {
        eprintln!("set LODE_ZONEMD_FILE and LODE_ZONEMD_ORIGIN");
        return;
    };
    let origin: lode_wire::Name = origin.parse().unwrap();
    let mut b = ZoneBuilder::new(origin.clone());
    lode_zonefile::parse_file_each(
        std::path::Path::new(&path),
        &origin,
        None,
        None,
        &mut |r, _| b.add(r.to_record(), 0),
        &mut || panic!("read in one piece"),
    )
    .expect("zone file");
    let z = b.build().expect("zone").0;
    eprintln!(
        "{} records, {} names, {} RRsets",
        z.record_count(),
        z.node_count(),
        z.rrset_count()
    );
    for (alg, name) in [(SHA384, "SHA-384"), (SHA512, "SHA-512")] {
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let d = digest(&z, alg).unwrap();
            eprintln!(
                "{name}: {:.3} s ({:02x?}…)",
                t.elapsed().as_secs_f64(),
                &d[..4]
            );
        }
    }
    // What is hashed, and the hash alone over as many bytes: the floor of
    // one ordered hash, however the canonical form is made.
    let bytes: u64 = z
        .records()
        .map(|r| (r.owner.as_ref().as_wire().len() + 10 + r.rdata.len()) as u64)
        .sum();
    let block = vec![0x5au8; 1 << 26];
    let t = std::time::Instant::now();
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA384);
    for _ in 0..bytes.div_ceil(block.len() as u64) {
        ctx.update(&block);
    }
    ctx.finish();
    eprintln!(
        "canonical form ~{:.0} MB; SHA-384 alone over it: {:.3} s",
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
}
