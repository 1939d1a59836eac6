use std::net::SocketAddr;

use super::*;
use crate::{Key, Signing};

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lode-peers-conf-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("dir");
    d
}

fn primary_ip() -> SocketAddr {
    ([127, 0, 0, 1], 5301).into()
}

/// A secondary of `example.` with a key, NOTIFY in from its primary and transfers out.
fn secondary(kind: Kind) -> Spec {
    Spec::new(kind, 5300)
        .key(Key::new("k", "hmac-sha256", "c2VjcmV0"))
        .acl(
            Acl::new("notify-in", &[Action::Notify])
                .from("127.0.0.1")
                .key("k"),
        )
        .acl(Acl::new("xfr-out", &[Action::Transfer]).key("k"))
        .zone(
            Zone::secondary("example", &[primary_ip()])
                .key("k")
                .acls(&["notify-in", "xfr-out"]),
        )
}

fn conf(kind: Kind, spec: &Spec, file: &str) -> String {
    let dir = scratch(kind.name());
    write(spec, &dir).expect("written");
    let text = std::fs::read_to_string(dir.join(file)).expect("conf");
    let _ = std::fs::remove_dir_all(&dir);
    text
}

#[test]
fn knot_secondary() {
    let c = conf(Kind::Knot, &secondary(Kind::Knot), "knot.conf");
    assert!(c.contains("listen: 127.0.0.1@5300\n"), "{c}");
    assert!(
        c.contains("  - id: z0-remote0\n    address: 127.0.0.1@5301\n    key: k\n"),
        "{c}"
    );
    assert!(
        c.contains("    master: [ z0-remote0 ]\n    acl: [ notify-in, xfr-out ]\n"),
        "{c}"
    );
    assert!(c.contains("    zonefile-load: none\n"), "{c}");
    assert!(
        c.contains("    address: 127.0.0.1\n    key: [ k ]\n    action: [ notify ]\n"),
        "{c}"
    );
}

#[test]
fn knot_signed_primary_on_both_loopbacks() {
    let spec = Spec::new(Kind::Knot, 5300).with_v6().zone(
        Zone::primary("example.", Content::Text("x".into())).signed(Signing {
            nsec3: true,
            ..Signing::default()
        }),
    );
    let c = conf(Kind::Knot, &spec, "knot.conf");
    assert!(c.contains("listen: [ 127.0.0.1@5300, ::1@5300 ]"), "{c}");
    assert!(c.contains("dnssec-policy: z0-policy"), "{c}");
    assert!(c.contains("nsec3: on\n    nsec3-iterations: 0\n"), "{c}");
    assert!(c.contains("example.zone\""), "{c}");
}

#[test]
fn nsd_secondary() {
    let c = conf(Kind::Nsd, &secondary(Kind::Nsd), "nsd.conf");
    assert!(c.contains("    request-xfr: 127.0.0.1@5301 k\n"), "{c}");
    assert!(c.contains("    allow-notify: 127.0.0.1 k\n"), "{c}");
    assert!(
        c.contains("    provide-xfr: 0.0.0.0/0 k\n    provide-xfr: ::0/0 k\n"),
        "{c}"
    );
    assert!(c.contains("name: \"example\""), "{c}");
}

#[test]
fn bind_secondary() {
    let c = conf(Kind::Bind, &secondary(Kind::Bind), "named.conf");
    assert!(
        c.contains("primaries { 127.0.0.1 port 5301 key \"k\"; };"),
        "{c}"
    );
    assert!(c.contains("allow-notify { key \"k\"; };"), "{c}");
    assert!(c.contains("allow-transfer { key \"k\"; };"), "{c}");
    assert!(c.contains("listen-on-v6 port 5300 { none; };"), "{c}");
}

#[test]
fn lode_secondary() {
    let c = conf(Kind::Lode, &secondary(Kind::Lode), "lode.toml");
    assert!(
        c.contains(
            "[[remote]]\nid = \"z0-primary0\"\naddress = [\"127.0.0.1@5301\"]\nkey = \"k\"\n"
        ),
        "{c}"
    );
    assert!(
        c.contains("master = [\"z0-primary0\"]\nacl = [\"notify-in\", \"xfr-out\"]\n"),
        "{c}"
    );
}

#[test]
fn powerdns_primary_and_refusals() {
    let spec = Spec::new(Kind::PowerDns, 5300)
        .acl(Acl::new("xfr", &[Action::Transfer]).from("127.0.0.1"))
        .zone(Zone::primary("example.", Content::Text("x".into())).acls(&["xfr"]));
    let c = conf(Kind::PowerDns, &spec, "pdns.conf");
    assert!(
        c.contains("launch=bind\n") && c.contains("local-port=5300\n"),
        "{c}"
    );
    assert!(c.contains("allow-axfr-ips=127.0.0.1\n"), "{c}");
    let dir = scratch("refused");
    for kind in [Kind::PowerDns, Kind::Nsd] {
        let e = write(
            &secondary(kind)
                .acl(Acl::new("u", &[Action::Update]))
                .zone(Zone::primary("b.", Content::Text("x".into())).acls(&["u"])),
            &dir,
        );
        assert!(matches!(e, Err(Error::Unsupported { .. })), "{kind}: {e:?}");
    }
    let e = write(
        &Spec::new(Kind::Knot, 1).zone(Zone::primary("a.", Content::Storage).acls(&["nope"])),
        &dir,
    );
    assert!(matches!(e, Err(Error::Config(_))), "{e:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn knot_catalogs() {
    let mut consumer = secondary(Kind::Knot);
    consumer.zones[0] = consumer.zones[0].clone().catalog(crate::Catalog::Interpret);
    let c = conf(Kind::Knot, &consumer, "knot.conf");
    assert!(
        c.contains("  - id: z0-members\n")
            && c.contains("    master: [ z0-remote0 ]\n    journal-content: changes\n    acl: [ notify-in, xfr-out ]\n"),
        "{c}"
    );
    assert!(
        c.contains("    catalog-role: interpret\n    catalog-template: z0-members\n"),
        "{c}"
    );
    let producer = Spec::new(Kind::Knot, 5300)
        .zone(Zone::primary("cat", Content::Storage).catalog(crate::Catalog::Generate))
        .zone(
            Zone::primary("m.example", Content::Text("@ SOA . . 1 1 1 1 1\n".into()))
                .catalog(crate::Catalog::Member("cat.".into())),
        );
    let c = conf(Kind::Knot, &producer, "knot.conf");
    assert!(
        c.contains(
            "  - domain: \"cat.\"\n    journal-content: changes\n    catalog-role: generate\n"
        ),
        "{c}"
    );
    assert!(
        c.contains("    catalog-role: member\n    catalog-zone: \"cat.\"\n"),
        "{c}"
    );
    let dir = scratch("nsd-catalog");
    let nsd = Spec {
        kind: Kind::Nsd,
        ..producer
    };
    let refused = write(&nsd, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        matches!(refused, Err(Error::Unsupported { .. })),
        "{refused:?}"
    );
}
