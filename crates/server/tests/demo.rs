//! The built-in demo zones pass the zone checks and hold what the help promises.

use lode_server::config::demo;
use lode_server::zones;
use lode_wire::{Name, Rtype};

#[test]
fn demo_zones_load_without_errors_or_warnings() {
    let specs = demo::zones();
    assert_eq!(specs.len(), 2);
    for spec in &specs {
        let loaded = zones::load(spec).unwrap_or_else(|e| panic!("{}: {e:?}", spec.name));
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    }
}

#[test]
fn demo_enum_zone_has_the_documented_naptr() {
    let spec = demo::zones()
        .into_iter()
        .find(|s| s.name.to_string() == "1.e164.arpa.")
        .expect("the ENUM demo zone");
    let zone = zones::load(&spec).unwrap().zone;
    let name: Name = "4.3.2.1.9.3.9.2.1.2.1.e164.arpa.".parse().unwrap();
    let node = zone.node(zone.find(name.as_ref()).expect("the +1-212-939-1234 name"));
    let naptr = node.rrset(Rtype::NAPTR).expect("a NAPTR RRset");
    assert_eq!(naptr.len(), 1);
    let rdata = naptr.first();
    // order 100, preference 10, then "u" "E2U+sip" and the regexp.
    assert_eq!(&rdata[..4], &[0, 100, 0, 10]);
    let text = String::from_utf8_lossy(rdata);
    assert!(text.contains("E2U+sip"), "{text}");
    assert!(
        text.contains("!^.*$!sip:+12129391234@example.com!"),
        "{text}"
    );
}

#[test]
fn demo_example_zone_has_the_usual_records() {
    let spec = demo::zones()
        .into_iter()
        .find(|s| s.name.to_string() == "example.com.")
        .expect("the example.com demo zone");
    let zone = zones::load(&spec).unwrap().zone;
    let has = |name: &str, t: Rtype| {
        let n: Name = name.parse().unwrap();
        zone.find(n.as_ref())
            .map(|id| zone.node(id).rrset(t).is_some())
            .unwrap_or(false)
    };
    for (name, t) in [
        ("example.com.", Rtype::SOA),
        ("example.com.", Rtype::NS),
        ("example.com.", Rtype::A),
        ("example.com.", Rtype::AAAA),
        ("example.com.", Rtype::MX),
        ("example.com.", Rtype::TXT),
        ("www.example.com.", Rtype::CNAME),
        ("*.apps.example.com.", Rtype::A),
        ("sub.example.com.", Rtype::NS),
        ("ns1.sub.example.com.", Rtype::A),
    ] {
        assert!(has(name, t), "{name} {t}");
    }
    let sub: Name = "sub.example.com.".parse().unwrap();
    assert!(zone.node(zone.find(sub.as_ref()).unwrap()).is_delegation());
}

#[test]
fn example_configuration_is_valid_and_names_the_demo_files() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/lode.example.toml");
    let config = lode_server::Config::resolve(&lode_server::Options {
        config: Some(path),
        ..Default::default()
    })
    .expect("the example configuration is valid");
    assert!(!config.demo);
    assert_eq!(config.zones.len(), 2);
    for spec in &config.zones {
        let loaded = zones::load(spec).unwrap_or_else(|e| panic!("{}: {e:?}", spec.name));
        assert!(loaded.warnings.is_empty());
    }
    assert_eq!(config.workers, 2);
}
