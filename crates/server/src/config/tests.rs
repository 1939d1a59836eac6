//! The configuration: parsing and merging.

use super::*;

fn opts() -> Options {
    Options::default()
}

#[test]
fn secondaries_take_their_primaries_and_timer_bounds() {
    let text = r#"
        journal-dir = "j"
        [[remote]]
        id = "p"
        address = ["192.0.2.1@5353", "2001:db8::1"]
        [[zone]]
        name = "s.example."
        master = ["p"]
        refresh-min-interval = 10
        expire-max-interval = 100
    "#;
    let c = Config::merge(&ConfigFile::parse(text).unwrap(), Path::new("/x"), &opts()).unwrap();
    let o = c.zone_options(&"s.example.".parse().unwrap());
    assert_eq!(o.masters[0].addresses[0], "192.0.2.1:5353".parse().unwrap());
    assert_eq!(
        o.masters[0].addresses[1],
        "[2001:db8::1]:53".parse().unwrap()
    );
    assert_eq!(o.timers.apply(1, 1, 1_000_000), (10, 2, 100));
    assert_eq!(c.zones[0].source, ZoneSource::Transfer);
    assert!(c.secondary_files.is_empty());
    // A secondary's file is written, not read: it stays a transfer.
    let with_file = text.replace("master = [\"p\"]", "master = [\"p\"]\nfile = \"z\"");
    let c = Config::merge(
        &ConfigFile::parse(&with_file).unwrap(),
        Path::new("/x"),
        &opts(),
    )
    .unwrap();
    assert_eq!(c.zones[0].source, ZoneSource::Transfer);
    assert_eq!(
        c.secondary_files.get(&"s.example.".parse().unwrap()),
        Some(&PathBuf::from("/x/z"))
    );
    // Bounds that contradict each other, no journal, an unknown primary.
    for bad in [
        text.replace(
            "refresh-min-interval = 10",
            "refresh-min-interval = 10\nrefresh-max-interval = 5",
        ),
        text.replace("journal-dir = \"j\"", ""),
        text.replace("master = [\"p\"]", "master = [\"q\"]"),
    ] {
        let f = ConfigFile::parse(&bad).unwrap();
        assert!(
            Config::merge(&f, Path::new("/x"), &opts()).is_err(),
            "accepted: {bad}"
        );
    }
}

#[test]
fn full_file_parses() {
    let text = r#"
        listen = ["127.0.0.1:15430", "[::1]:15430", "192.0.2.1", "::1", "[2001:db8::1]"]
        workers = 3
        max-udp-payload = 1400
        udp-receive-buffer = 0
        tcp-idle-timeout = 5
        tcp-max-clients = 50
        control = "/tmp/x.sock"
        log-level = "debug"

        [[zone]]
        name = "e164.arpa"
        file = "e164.zone"

        [[zone]]
        name = "Example.COM."
        file = "/abs/example.zone"
    "#;
    let file = ConfigFile::parse(text).unwrap();
    let c = Config::merge(&file, Path::new("/etc/lode"), &opts()).unwrap();
    assert_eq!(
        c.listen,
        vec![
            "127.0.0.1:15430".parse().unwrap(),
            "[::1]:15430".parse().unwrap(),
            "192.0.2.1:53".parse().unwrap(),
            "[::1]:53".parse().unwrap(),
            "[2001:db8::1]:53".parse().unwrap(),
        ]
    );
    assert_eq!(c.workers, 3);
    assert_eq!(c.max_udp_payload, 1400);
    assert_eq!(c.udp_receive_buffer, 0);
    assert_eq!(c.tcp_idle_timeout, Duration::from_secs(5));
    assert_eq!(c.tcp_max_clients, 50);
    assert_eq!(c.control, Some(PathBuf::from("/tmp/x.sock")));
    assert_eq!(c.log_level, "debug");
    assert!(!c.demo);
    assert_eq!(c.zones.len(), 2);
    assert_eq!(c.zones[0].name, "e164.arpa.".parse::<Name>().unwrap());
    assert_eq!(
        c.zones[0].source,
        ZoneSource::File(Path::new("/etc/lode/e164.zone").into())
    );
    assert_eq!(
        c.zones[1].source,
        ZoneSource::File(Path::new("/abs/example.zone").into())
    );
}

#[test]
fn a_file_without_zones_serves_nothing_not_the_demo() {
    let o = Options {
        config: Some("/etc/lode/lode.toml".into()),
        ..Options::default()
    };
    let c = Config::merge(&ConfigFile::default(), Path::new("/etc/lode"), &o).unwrap();
    assert!(!c.demo);
    assert!(c.zones.is_empty());
    let file = ConfigFile::parse("log-format = \"json\"\nuser = \"0\"\n").unwrap();
    let c = Config::merge(&file, Path::new("/etc/lode"), &o).unwrap();
    assert_eq!(c.log_format, "json");
    assert_eq!(c.user.map(|u| u.uid), Some(0));
    let file = ConfigFile::parse("log-format = \"xml\"\n").unwrap();
    assert!(Config::merge(&file, Path::new(""), &o).is_err());
}

#[test]
fn empty_file_gives_demo_defaults() {
    let c = Config::merge(&ConfigFile::default(), Path::new(""), &opts()).unwrap();
    assert!(c.demo);
    assert_eq!(c.zones.len(), crate::config::demo::zones().len());
    assert_eq!(c.listen[0], "127.0.0.1:5300".parse().unwrap());
    assert_eq!(c.max_udp_payload, DEFAULT_MAX_UDP_PAYLOAD);
    assert_eq!(c.udp_receive_buffer, 4 << 20);
    assert_eq!(
        c.tcp_idle_timeout,
        Duration::from_secs(DEFAULT_TCP_IDLE_SECS)
    );
    assert_eq!(c.tcp_max_clients, DEFAULT_TCP_MAX_CLIENTS);
    assert!(c.workers >= 1);
    assert_eq!(c.control, Some(default_control_path()));
    let none = ConfigFile::parse("control = \"\"").unwrap();
    let c = Config::merge(&none, Path::new(""), &opts()).unwrap();
    assert_eq!(c.control, None);
}

#[test]
fn command_line_overrides_and_adds() {
    let file = ConfigFile::parse(
        "listen = [\"127.0.0.1:1\"]\nworkers = 2\n[[zone]]\nname = \"a.\"\nfile = \"a.zone\"\n[[zone]]\nname = \"b.\"\nfile = \"b.zone\"\n",
    )
    .unwrap();
    let o = Options {
        listen: vec!["127.0.0.1:15431".into()],
        zones: vec![
            ("B".into(), "/new/b.zone".into()),
            ("c.".into(), "c.zone".into()),
        ],
        workers: Some(5),
        control: Some("/tmp/c.sock".into()),
        ..Options::default()
    };
    let c = Config::merge(&file, Path::new("/cfg"), &o).unwrap();
    assert_eq!(c.listen, vec!["127.0.0.1:15431".parse().unwrap()]);
    assert_eq!(c.workers, 5);
    assert_eq!(c.control, Some(PathBuf::from("/tmp/c.sock")));
    let z: Vec<String> = c
        .zones
        .iter()
        .map(|z| format!("{} {}", z.name, z.source))
        .collect();
    assert_eq!(z, vec!["a. /cfg/a.zone", "B. /new/b.zone", "c. c.zone"]);
}

#[test]
fn bad_values_are_refused_with_their_key() {
    for (text, key) in [
        ("workers = 0", "workers"),
        ("max-udp-payload = 100", "max-udp-payload"),
        ("max-udp-payload = 65000", "max-udp-payload"),
        ("tcp-idle-timeout = 0", "tcp-idle-timeout"),
        ("tcp-max-clients = 0", "tcp-max-clients"),
        ("log-level = \"loud\"", "log-level"),
        ("listen = [\"localhost:53\"]", "localhost:53"),
        ("listen = [\"127.0.0.1:99999\"]", "127.0.0.1:99999"),
        ("[[zone]]\nname = \"a..b\"\nfile = \"x\"", "a..b"),
        (
            "xdp-busypoll-budget = 64\nxdp-busypoll-timeout = 0",
            "xdp-busypoll-timeout",
        ),
    ] {
        let file = ConfigFile::parse(text).unwrap();
        let e = Config::merge(&file, Path::new(""), &opts()).unwrap_err();
        assert!(e.to_string().contains(key), "{text}: {e}");
    }
}

#[test]
fn xdp_busy_polling_is_off_unless_a_budget_is_given() {
    let merged = |text: &str| {
        let file = ConfigFile::parse(text).unwrap();
        Config::merge(&file, Path::new(""), &opts())
            .unwrap()
            .xdp_busy_poll
    };
    assert_eq!(merged(""), None);
    assert_eq!(
        merged("xdp-busypoll-budget = 0\nxdp-busypoll-timeout = 50"),
        None
    );
    assert_eq!(
        merged("xdp-busypoll-budget = 64"),
        Some(lode_io::xdp::BusyPoll {
            budget: 64,
            timeout_us: 20
        })
    );
    assert_eq!(
        merged("xdp-busypoll-budget = 8\nxdp-busypoll-timeout = 50"),
        Some(lode_io::xdp::BusyPoll {
            budget: 8,
            timeout_us: 50
        })
    );
}

#[test]
fn unknown_keys_and_bad_syntax_are_refused() {
    let e = ConfigFile::parse("listne = [\"127.0.0.1:53\"]").unwrap_err();
    assert!(e.to_string().contains("listne"), "{e}");
    let e = ConfigFile::parse("[[zone]]\nname = \"a.\"\nfiel = \"x\"").unwrap_err();
    assert!(e.to_string().contains("fiel"), "{e}");
    let e = ConfigFile::parse("workers = ").unwrap_err();
    assert!(e.to_string().contains("line 1"), "{e}");
}

#[test]
fn missing_file_names_the_path() {
    let o = Options {
        config: Some("/nonexistent/lode.toml".into()),
        ..Options::default()
    };
    let e = Config::resolve(&o).unwrap_err();
    assert!(e.to_string().starts_with("/nonexistent/lode.toml: "), "{e}");
}

#[test]
fn a_remote_sends_from_its_via_of_the_same_family() {
    let text = r#"
        journal-dir = "j"
        [[remote]]
        id = "p"
        address = ["192.0.2.1@5353", "2001:db8::1"]
        via = ["2001:db8::9", "198.51.100.9", "198.51.100.10"]
        [[zone]]
        name = "s.example."
        master = ["p"]
    "#;
    let c = Config::merge(&ConfigFile::parse(text).unwrap(), Path::new("/x"), &opts()).unwrap();
    let o = c.zone_options(&"s.example.".parse().unwrap());
    let p = &o.masters[0];
    assert_eq!(
        p.via_for(p.addresses[0]),
        Some("198.51.100.9:0".parse().unwrap())
    );
    assert_eq!(
        p.via_for(p.addresses[1]),
        Some("[2001:db8::9]:0".parse().unwrap())
    );
    // No via of an address's family, not an address, a port: refused.
    for bad in [
        text.replace("via = [\"2001:db8::9\", ", "via = ["),
        text.replace("\"198.51.100.9\"", "\"host.example\""),
        text.replace("\"198.51.100.10\"", "\"198.51.100.10@5300\""),
    ] {
        let f = ConfigFile::parse(&bad).unwrap();
        assert!(
            Config::merge(&f, Path::new("/x"), &opts()).is_err(),
            "accepted: {bad}"
        );
    }
}

#[test]
fn a_relative_control_socket_is_in_the_files_folder() {
    use std::path::Path;
    let base = Path::new("/etc/lode");
    assert_eq!(
        super::control_path(base, Path::new("lode.sock")),
        Path::new("/etc/lode/lode.sock")
    );
    assert_eq!(
        super::control_path(base, Path::new("/run/lode/lode.sock")),
        Path::new("/run/lode/lode.sock")
    );
    assert_eq!(super::control_path(base, Path::new("")), Path::new(""));
}

#[test]
fn catalog_members_take_their_templates_zonemd_options() {
    let text = r#"
        journal-dir = "j"
        [[remote]]
        id = "p"
        address = ["192.0.2.1"]
        [[template]]
        id = "digested"
        master = ["p"]
        zonemd-generate = "zonemd-sha512"
        zonemd-verify = true
        [[template]]
        id = "plain"
        master = ["p"]
        [[zone]]
        name = "catalog.invalid."
        master = ["p"]
        catalog-role = "interpret"
        catalog-template = ["digested", "plain"]
    "#;
    let c = Config::merge(&ConfigFile::parse(text).unwrap(), Path::new("/x"), &opts()).unwrap();
    let o = c.zone_options(&"catalog.invalid.".parse().unwrap());
    let [(d, digested), (p, plain)] = &o.interpret[..] else {
        panic!("two templates: {:?}", o.interpret);
    };
    assert_eq!((d.as_str(), p.as_str()), ("digested", "plain"));
    assert_eq!(
        (digested.zonemd_generate, digested.zonemd_verify),
        (lode_zones::zonemd::Generate::Sha512, true)
    );
    assert_eq!(
        (plain.zonemd_generate, plain.zonemd_verify),
        (lode_zones::zonemd::Generate::None, false)
    );
    // As for a zone: a bad value, or generation without journal-dir.
    let bad = text.replace("zonemd-sha512", "zonemd-md5");
    let e = Config::merge(&ConfigFile::parse(&bad).unwrap(), Path::new("/x"), &opts()).unwrap_err();
    assert!(
        e.to_string()
            .contains("template \"digested\": zonemd-generate"),
        "{e}"
    );
}
