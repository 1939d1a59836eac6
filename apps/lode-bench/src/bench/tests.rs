use super::{parse_fraction, parse_servers, zone_names};
use lode_bench::compare::servers::Kind;

#[test]
fn server_lists() {
    let l = |s: &str| s.split(',').map(String::from).collect::<Vec<_>>();
    assert_eq!(
        parse_servers(&l("echo, lode,knot,lode,"), true).ok(),
        Some(vec![Kind::Echo, Kind::Lode, Kind::Knot])
    );
    assert!(parse_servers(&l("echo,lode"), false).is_err());
    assert!(parse_servers(&l("unbound"), true).is_err());
    assert_eq!(
        parse_servers(&l("PowerDNS"), false).ok(),
        Some(vec![Kind::Pdns])
    );
}

#[test]
fn zone_arguments() {
    let z = |v: &[&str]| zone_names(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    let names = z(&["0.2.1.2.1.e164.arpa=/z/0.zone", "1.2.1.2.1.e164.arpa."]).expect("ok");
    assert_eq!(names[0].to_string(), "0.2.1.2.1.e164.arpa.");
    assert_eq!(names[1].to_string(), "1.2.1.2.1.e164.arpa.");
    assert!(z(&["bad..name=/x"]).is_err());
    assert!(lode_tsig::Key::parse_spec(super::BENCH_KEY).is_ok());
}

#[test]
fn fractions() {
    assert_eq!(parse_fraction("0").ok(), Some(0.0));
    assert!((parse_fraction("0.01%").unwrap_or(-1.0) - 0.0001).abs() < 1e-15);
    assert_eq!(parse_fraction("0.5").ok(), Some(0.5));
    assert!(parse_fraction("150%").is_err());
    assert!(parse_fraction("abc").is_err());
}
