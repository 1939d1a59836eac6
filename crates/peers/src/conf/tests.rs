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
    // Each call its own directory: tests run in parallel.
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = scratch(&format!("{}-{n}", kind.name()));
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

/// A primary of `example.` from a file, with a measurement's options.
fn measured(kind: Kind) -> Spec {
    let mut s = Spec::new(kind, 5300).zone(Zone::primary(
        "example",
        Content::File("/z/example.zone".into()),
    ));
    s.logging = crate::Logging::Plain;
    s.workers = Some(3);
    s
}

#[test]
fn knot_worker_counts_and_guard() {
    let mut s = measured(Kind::Knot);
    s.tcp_workers = Some(1);
    s.background_workers = Some(2);
    s.rrl_rate = Some(500);
    s.cookie_secret = Some([0xab; 16]);
    let c = conf(Kind::Knot, &s, "knot.conf");
    assert!(
        c.contains("udp-workers: 3\n    tcp-workers: 1\n    background-workers: 2\n"),
        "{c}"
    );
    assert!(c.contains("  - target: stderr\n"), "{c}");
    assert!(
        c.contains("mod-rrl:\n  - id: peers\n    rate-limit: 500\n"),
        "{c}"
    );
    assert!(
        c.contains(&format!("    secret: 0x{}\n", "ab".repeat(16))),
        "{c}"
    );
    assert!(
        c.contains("    global-module: [ mod-cookies/peers, mod-rrl/peers ]\n"),
        "{c}"
    );
    assert!(c.find("mod-rrl:") < c.find("template:"), "{c}");
    // By default: as many TCP workers as UDP ones, one background worker, a log file.
    let c = conf(Kind::Knot, &secondary(Kind::Knot), "knot.conf");
    assert!(
        c.contains("tcp-workers: 1\n    background-workers: 1\n"),
        "{c}"
    );
    assert!(
        c.contains("knot.log") && !c.contains("global-module"),
        "{c}"
    );
}

#[test]
fn lode_buffer_guard_and_journal() {
    let mut s = measured(Kind::Lode).zone(Zone::primary("other", Content::File("/z/o".into())));
    s.socket_buffer = Some(1 << 20);
    s.rrl_rate = Some(500);
    s.cookie_secret = Some([1; 16]);
    s.server_extra = "zonefile-sync = -1\n".into();
    s.zones.iter_mut().for_each(|z| z.journal = false);
    let c = conf(Kind::Lode, &s, "lode.toml");
    let top = c.split("\n[").next().unwrap_or_default();
    assert!(top.contains("udp-receive-buffer = 1048576\n"), "{c}");
    assert!(top.contains("zonefile-sync = -1\n"), "{c}");
    assert!(!c.contains("journal-dir"), "no zone keeps a journal: {c}");
    assert!(c.contains("[rrl]\nrate-limit = 500\n"), "{c}");
    assert!(
        c.contains(&format!("[cookies]\nsecret = \"{}\"\n", "01".repeat(16))),
        "{c}"
    );
    assert!(c.find("[cookies]") < c.find("[[zone]]"), "{c}");
    s.zones[1].journal = true;
    assert!(conf(Kind::Lode, &s, "lode.toml").starts_with("journal-dir = \"journal\"\n"));
}

#[test]
fn plain_logging() {
    let c = conf(Kind::Nsd, &measured(Kind::Nsd), "nsd.conf");
    assert!(
        c.contains("    verbosity: 1\n") && !c.contains("logfile"),
        "{c}"
    );
    let c = conf(Kind::PowerDns, &measured(Kind::PowerDns), "pdns.conf");
    assert!(c.contains("loglevel=4\n"), "{c}");
    let s = measured(Kind::Bind);
    let c = conf(Kind::Bind, &s, "named.conf");
    assert!(
        c.contains("logging { category update { null; }; };\n"),
        "{c}"
    );
    assert!(!c.contains("named.log"), "{c}");
    let dir = scratch("bind-plain");
    let args = write(&s, &dir).expect("written").args;
    let _ = std::fs::remove_dir_all(&dir);
    let args: Vec<String> = args.iter().map(|a| a.to_string_lossy().into()).collect();
    assert_eq!(args[..4], ["-g", "-4", "-n", "3"], "{args:?}");
    assert!(!args.contains(&"-d".to_string()), "{args:?}");
}

#[test]
fn options_without_a_line_are_refused() {
    let dir = scratch("refused");
    let refused = |kind: Kind, set: &dyn Fn(&mut Spec)| {
        let mut s = measured(kind);
        set(&mut s);
        matches!(write(&s, &dir), Err(Error::Unsupported { .. }))
    };
    assert!(refused(Kind::Nsd, &|s| s.tcp_workers = Some(1)));
    assert!(refused(Kind::Bind, &|s| s.background_workers = Some(1)));
    assert!(refused(Kind::Knot, &|s| s.socket_buffer = Some(1)));
    assert!(refused(Kind::PowerDns, &|s| s.socket_buffer = Some(1)));
    assert!(refused(Kind::Nsd, &|s| s.rrl_rate = Some(1)));
    assert!(refused(Kind::Bind, &|s| s.cookie_secret = Some([0; 16])));
    assert!(refused(Kind::Program, &|s| s.rrl_rate = Some(1)));
    assert!(!refused(Kind::Lode, &|s| s.socket_buffer = Some(1)));
    // Another program: nothing written, no arguments of its own.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let launch = write(&Spec::new(Kind::Program, 5300), &dir).expect("program");
    assert!(launch.args.is_empty() && launch.log.is_none());
    assert_eq!(std::fs::read_dir(&dir).map(|d| d.count()).ok(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn lode_catalogs() {
    let mut consumer = secondary(Kind::Lode);
    consumer.zones[0] = consumer.zones[0].clone().catalog(crate::Catalog::Interpret);
    let c = conf(Kind::Lode, &consumer, "lode.toml");
    assert!(
        c.contains(
            "[[template]]\nid = \"z0-members\"\nmaster = [\"z0-primary0\"]\n\
             acl = [\"notify-in\", \"xfr-out\"]\n"
        ),
        "{c}"
    );
    assert!(
        c.contains("catalog-role = \"interpret\"\ncatalog-template = [\"z0-members\"]\n"),
        "{c}"
    );
    assert!(c.find("[[template]]") < c.find("[[zone]]"), "{c}");
    let producer = Spec::new(Kind::Lode, 5300)
        .zone(Zone::primary("cat", Content::Storage).catalog(crate::Catalog::Generate))
        .zone(
            Zone::primary("m.example", Content::Text("@ SOA . . 1 1 1 1 1\n".into()))
                .catalog(crate::Catalog::Member("cat.".into())),
        );
    let c = conf(Kind::Lode, &producer, "lode.toml");
    assert!(
        c.contains("[[zone]]\nname = \"cat.\"\ncatalog-role = \"generate\"\n"),
        "{c}"
    );
    assert!(c.contains("catalog-zone = \"cat.\"\n"), "{c}");
}

#[test]
fn knot_zones_signed_alike_share_a_policy() {
    let signed = |name: &str, nsec3: bool| {
        Zone::primary(name, Content::File("/z/f".into())).signed(Signing {
            nsec3,
            ..Signing::default()
        })
    };
    let spec = Spec::new(Kind::Knot, 5300)
        .zone(signed("a", false))
        .zone(Zone::primary("b", Content::File("/z/f".into())))
        .zone(signed("c", false))
        .zone(signed("d", true));
    let c = conf(Kind::Knot, &spec, "knot.conf");
    assert_eq!(c.matches("  - id: z").count(), 2, "two policies: {c}");
    assert!(
        c.contains("  - id: z0-policy\n") && c.contains("  - id: z3-policy\n"),
        "{c}"
    );
    assert_eq!(c.matches("dnssec-policy: z0-policy\n").count(), 2, "{c}");
    assert_eq!(c.matches("dnssec-policy: z3-policy\n").count(), 1, "{c}");
}

#[test]
fn presign_configuration_for_kzonesign() {
    let dir = scratch("presign");
    let zone = Zone::primary("com", Content::File("/z/com.zone".into())).signed(Signing {
        nsec3: true,
        opt_out: true,
        ..Signing::default()
    });
    let spec = crate::presign::spec(&zone, &dir).expect("a signed primary");
    let c = conf(Kind::Knot, &spec, "knot.conf");
    assert!(
        c.contains("    nsec3: on\n    nsec3-iterations: 0\n    nsec3-salt-length: 0\n    nsec3-opt-out: on\n"),
        "{c}"
    );
    assert!(c.contains("    algorithm: ecdsap256sha256\n"), "{c}");
    assert!(
        c.contains("  - domain: \"com.\"\n    file: \"/z/com.zone\"\n"),
        "{c}"
    );
    assert!(c.contains("    journal-content: none\n"), "{c}");
    assert!(c.contains("    dnssec-signing: on\n"), "{c}");
    let unsigned = Zone::primary("com", Content::File("/z/com.zone".into()));
    assert!(crate::presign::spec(&unsigned, &dir).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

fn tls(quic: Option<u16>) -> crate::Tls {
    crate::Tls {
        port: 5853,
        quic_port: quic,
        cert: "/c/cert.pem".into(),
        key: "/c/key.pem".into(),
    }
}

#[test]
fn tls_listeners() {
    let primary = |kind: Kind, quic: Option<u16>| {
        Spec::new(kind, 5300)
            .tls(tls(quic))
            .zone(Zone::primary("example", Content::File("/z/f".into())))
    };
    let c = conf(Kind::Lode, &primary(Kind::Lode, Some(5854)), "lode.toml");
    assert!(
        c.contains(
            "listen-tls = [\"127.0.0.1@5853\"]\nlisten-quic = [\"127.0.0.1@5854\"]\n\
             cert-file = \"/c/cert.pem\"\nkey-file = \"/c/key.pem\"\n"
        ),
        "{c}"
    );
    let c = conf(Kind::Nsd, &primary(Kind::Nsd, None), "nsd.conf");
    assert!(
        c.contains("    ip-address: 127.0.0.1@5300\n")
            && c.contains(
                "    ip-address: 127.0.0.1@5853\n    tls-port: 5853\n    \
                 tls-service-key: \"/c/key.pem\"\n    tls-service-pem: \"/c/cert.pem\"\n"
            ),
        "{c}"
    );
    let c = conf(Kind::Bind, &primary(Kind::Bind, None), "named.conf");
    assert!(
        c.contains("  listen-on port 5853 tls peers-tls { 127.0.0.1; };\n"),
        "{c}"
    );
    assert!(
        c.contains("tls peers-tls { key-file \"/c/key.pem\"; cert-file \"/c/cert.pem\"; };\n"),
        "{c}"
    );
    let dir = scratch("tls-refused");
    for (kind, quic) in [
        (Kind::Knot, None),
        (Kind::Nsd, Some(5854)),
        (Kind::Bind, Some(1)),
    ] {
        assert!(
            matches!(
                write(&primary(kind, quic), &dir),
                Err(Error::Unsupported { .. })
            ),
            "{kind}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bind_secondary_over_tls() {
    let spec = Spec::new(Kind::Bind, 5300)
        .key(Key::new("k", "hmac-sha256", "c2VjcmV0"))
        .zone(
            Zone::secondary("example", &[([127, 0, 0, 1], 5853).into()])
                .key("k")
                .primaries_tls(),
        );
    let c = conf(Kind::Bind, &spec, "named.conf");
    assert!(
        c.contains("  primaries { 127.0.0.1 port 5853 key \"k\" tls opportunistic; };\n"),
        "{c}"
    );
    assert!(c.contains("tls opportunistic { };\n"), "{c}");
    let dir = scratch("xot-refused");
    let mut knot = spec.clone();
    knot.kind = Kind::Knot;
    assert!(matches!(write(&knot, &dir), Err(Error::Unsupported { .. })));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn self_signed_certificate_in_pem() {
    if crate::program("openssl").is_none() {
        eprintln!("SKIPPED: openssl is not installed");
        return;
    }
    let dir = scratch("certificate");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    crate::self_signed_certificate(&cert, &key).expect("made");
    let text = |p: &Path| std::fs::read_to_string(p).expect("written");
    assert!(text(&cert).starts_with("-----BEGIN CERTIFICATE-----"));
    assert!(text(&key).contains("PRIVATE KEY-----"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Signing threads, rollover timing and a PKCS #11 keystore: Knot's policy
/// and keystore (PIN in the configuration), Lode's `[[policy]]` and
/// `[[keystore]]` (PIN in a file); Lode's default signing has no policy;
/// BIND signs with its default policy only.
#[test]
fn signing_policies_keystores_and_rollover_timing() {
    let signing = Signing {
        nsec3: true,
        threads: Some(2),
        keystore: Some(crate::Pkcs11 {
            token: "bench".into(),
            pin: "1234".into(),
            module: "/usr/lib/softhsm/libsofthsm2.so".into(),
        }),
        rollover: Some(crate::Rollover {
            propagation_delay: 1,
            dnskey_ttl: 1,
            zsk_lifetime: 0,
        }),
        ..Signing::default()
    };
    let spec = |kind: Kind, s: &Signing| {
        Spec::new(kind, 5300)
            .zone(Zone::primary("a", Content::File("/z/f".into())).signed(s.clone()))
            .zone(Zone::primary("b", Content::File("/z/f".into())).signed(Signing::default()))
    };
    let k = conf(Kind::Knot, &spec(Kind::Knot, &signing), "knot.conf");
    assert!(
        k.contains(
            "keystore:\n  - id: z0-keystore\n    backend: pkcs11\n    config: \
             \"pkcs11:token=bench;pin-value=1234 /usr/lib/softhsm/libsofthsm2.so\"\npolicy:\n"
        ),
        "{k}"
    );
    assert!(
        k.contains(
            "    signing-threads: 2\n    propagation-delay: 1\n    dnskey-ttl: 1\n    \
             zsk-lifetime: 0\n    keystore: z0-keystore\n  - id: z1-policy\n"
        ),
        "{k}"
    );

    let dir = scratch("lode-policy");
    write(&spec(Kind::Lode, &signing), &dir).expect("written");
    let l = std::fs::read_to_string(dir.join("lode.toml")).expect("conf");
    let pin = dir.join("z0-keystore.pin");
    assert_eq!(
        std::fs::read_to_string(&pin).ok().as_deref(),
        Some("1234\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        l.contains(&format!(
            "[[keystore]]\nid = \"z0-keystore\"\nbackend = \"pkcs11\"\nconfig = \
             \"pkcs11:token=bench;pin-source={} /usr/lib/softhsm/libsofthsm2.so\"\n",
            pin.display()
        )),
        "{l}"
    );
    assert!(
        l.contains(
            "[[policy]]\nid = \"z0-policy\"\nalgorithm = \"ecdsap256sha256\"\nnsec3 = true\n\
             signing-threads = 2\npropagation-delay = 1\ndnskey-ttl = 1\nzsk-lifetime = 0\n\
             keystore = \"z0-keystore\"\n"
        ),
        "{l}"
    );
    assert_eq!(l.matches("[[policy]]").count(), 1, "{l}");
    assert!(
        l.contains("dnssec-signing = true\ndnssec-policy = \"z0-policy\"\n"),
        "{l}"
    );
    assert_eq!(l.matches("dnssec-signing = true\n").count(), 2, "{l}");

    let b = conf(
        Kind::Bind,
        &spec(Kind::Bind, &Signing::default()),
        "named.conf",
    );
    assert_eq!(
        b.matches("  dnssec-policy default; inline-signing yes;\n")
            .count(),
        2,
        "{b}"
    );
    let dir = scratch("bind-policy");
    assert!(matches!(
        write(&spec(Kind::Bind, &signing), &dir),
        Err(Error::Unsupported { .. })
    ));
    let _ = std::fs::remove_dir_all(&dir);
}
