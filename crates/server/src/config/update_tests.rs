//! The configuration of zones that change: keys, ACLs, zone options, signing.

use super::*;

/// The configuration `text` (folder "/"), which must be good.
fn merged(text: &str) -> Config {
    Config::merge(
        &ConfigFile::parse(text).unwrap(),
        Path::new("/"),
        &Options::default(),
    )
    .unwrap()
}

#[test]
fn keys_acls_and_zone_options() {
    let text = r#"
        journal-dir = "journal"
        [[key]]
        id = "k1."
        algorithm = "hmac-sha256"
        secret = "AAAA"
        [[acl]]
        id = "up"
        address = ["127.0.0.0/8"]
        key = ["K1"]
        action = ["update"]
        [[zone]]
        name = "example."
        file = "example.zone"
        acl = ["up"]
        serial-policy = "unixtime"
    "#;
    let file = ConfigFile::parse(text).unwrap();
    let c = Config::merge(&file, Path::new("/etc/lode"), &Options::default()).unwrap();
    assert_eq!(c.journal_dir, Some(PathBuf::from("/etc/lode/journal")));
    let o = c.zone_options(&"example.".parse().unwrap());
    assert_eq!(o.serial_policy, "unixtime");
    assert_eq!(o.acl.len(), 1);
    assert_eq!(o.acl[0].keys, vec!["k1.".parse::<Name>().unwrap()]);
    // Updates need a journal; ACLs must exist; keys must be defined.
    let no_journal = text.replace("journal-dir = \"journal\"", "");
    let f = ConfigFile::parse(&no_journal).unwrap();
    let e = Config::merge(&f, Path::new("/"), &Options::default()).unwrap_err();
    assert!(e.to_string().contains("journal-dir"), "{e}");
    let f = ConfigFile::parse(&text.replace("acl = [\"up\"]", "acl = [\"nope\"]")).unwrap();
    let e = Config::merge(&f, Path::new("/"), &Options::default()).unwrap_err();
    assert!(e.to_string().contains("nope"), "{e}");
    let f = ConfigFile::parse(&text.replace("key = [\"K1\"]", "key = [\"k2\"]")).unwrap();
    let e = Config::merge(&f, Path::new("/"), &Options::default()).unwrap_err();
    assert!(e.to_string().contains("k2"), "{e}");
    // zonefile-sync: the default depends on the zone's size; the global
    // value applies to zones without their own.
    assert_eq!(o.zonefile_sync, ZonefileSync::Default);
    assert_eq!(o.zonefile_sync.interval(10), Some(Duration::ZERO));
    assert_eq!(
        o.zonefile_sync.interval(ZONEFILE_SYNC_MAX_RECORDS + 1),
        None
    );
    let t = format!("zonefile-sync = -1\n{text}");
    let c = merged(&t);
    let o = c.zone_options(&"example.".parse().unwrap());
    assert_eq!(o.zonefile_sync.interval(10), None);
    let other = c.zone_options(&"other.".parse().unwrap());
    assert_eq!(other.zonefile_sync, ZonefileSync::Never);
    let t = format!(
        "zonefile-sync = -1\n{}",
        text.replace("serial-policy", "zonefile-sync = 30\nserial-policy")
    );
    let c = merged(&t);
    let o = c.zone_options(&"example.".parse().unwrap());
    assert_eq!(
        o.zonefile_sync.interval(1 << 40),
        Some(Duration::from_secs(30))
    );
    for bad in ["zonefile-sync = -2\n", "zonefile-sync = \"0\"\n"] {
        let f = ConfigFile::parse(&format!("{bad}{text}"));
        let e = f.and_then(|f| Config::merge(&f, Path::new("/"), &Options::default()));
        assert!(
            e.unwrap_err().to_string().contains("zonefile-sync"),
            "{bad}"
        );
    }
}
