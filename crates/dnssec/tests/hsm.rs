//! Keys in a PKCS #11 token, with SoftHSM2 (Debian `softhsm2`, which the
//! test command installs): made in the token for each algorithm, a zone
//! signed whole with them and checked with their public keys, their key
//! files naming the token and the key (no private key on disk) and read
//! back to the same DNSKEY, a key deleted from the token, and a token that
//! fails to sign making the signer refuse the version instead of
//! publishing empty signatures.
//!
//! One test function: SoftHSM2 reads its configuration (SOFTHSM2_CONF)
//! when the module is first initialised, once per process.

use std::path::{Path, PathBuf};
use std::process::Command;

use lode_dnssec::hsm::{self, TokenConfig};
use lode_dnssec::{Algorithm, Policy, Signer, SigningKey, KSK_FLAGS, ZSK_FLAGS};
use lode_wire::{Name, Rtype};
use lode_zonedb::ZoneBuilder;

const MODULE: &str = "/usr/lib/softhsm/libsofthsm2.so";

/// A fresh SoftHSM2 token `label` in `dir`, its PIN in `dir`/pin; None
/// (the test skipped) without SoftHSM2 unless LODE_REQUIRE_SOFTHSM is set.
fn token_in(dir: &Path, label: &str) -> Option<TokenConfig> {
    if !Path::new(MODULE).is_file()
        || Command::new("softhsm2-util")
            .arg("--version")
            .output()
            .is_err()
    {
        assert!(
            std::env::var_os("LODE_REQUIRE_SOFTHSM").is_none(),
            "SoftHSM2 missing (apt-get install softhsm2)"
        );
        eprintln!("SKIP: SoftHSM2 missing");
        return None;
    }
    std::fs::create_dir_all(dir.join("tokens")).unwrap();
    let conf = dir.join("softhsm2.conf");
    std::fs::write(
        &conf,
        format!(
            "directories.tokendir = {}\nobjectstore.backend = file\nlog.level = ERROR\n",
            dir.join("tokens").display()
        ),
    )
    .unwrap();
    // Read by the module when it is initialised (below, in `hsm::open`).
    std::env::set_var("SOFTHSM2_CONF", &conf);
    let out = Command::new("softhsm2-util")
        .env("SOFTHSM2_CONF", &conf)
        .args(["--init-token", "--free", "--label", label])
        .args(["--pin", "1234", "--so-pin", "5678"])
        .output()
        .expect("softhsm2-util");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(dir.join("pin"), "1234\n").unwrap();
    Some(
        TokenConfig::parse(&format!(
            "pkcs11:token={};pin-source={} {MODULE}",
            hsm::label_text(label),
            dir.join("pin").display()
        ))
        .unwrap(),
    )
}

fn zone() -> lode_zonedb::Zone {
    let origin: Name = "example.".parse().unwrap();
    let text = "$TTL 300\n@ SOA ns host 1 3600 600 86400 60\n@ NS ns\nns A 192.0.2.1\n\
                www A 192.0.2.80\nsub NS ns.sub\nns.sub A 192.0.2.53\n* TXT wild\n";
    let parsed = lode_zonefile::parse_str(text, "test", &origin).unwrap();
    let mut b = ZoneBuilder::new(origin);
    for r in parsed.records {
        b.add(r, 0);
    }
    b.build().unwrap().0
}

#[test]
fn keys_made_in_a_token_sign_and_stay_there() {
    let dir = std::env::temp_dir().join(format!("lode-hsm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let Some(config) = token_in(&dir, "lode test") else {
        return;
    };
    let token = hsm::open(&config).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        std::sync::Arc::ptr_eq(&token, &hsm::open(&config).unwrap()),
        "opened once"
    );
    let origin: Name = "example.".parse().unwrap();
    let now = 1_764_000_000;
    let keys_dir = dir.join("keys");
    for alg in [
        Algorithm::EcdsaP256,
        Algorithm::EcdsaP384,
        Algorithm::Ed25519,
        Algorithm::RsaSha256,
    ] {
        let ksk = SigningKey::generate_in(&token, &origin, alg, KSK_FLAGS, None, now)
            .unwrap_or_else(|e| panic!("{alg}: {e}"));
        let zsk = SigningKey::generate_in(&token, &origin, alg, ZSK_FLAGS, None, now).unwrap();
        assert!(ksk.token_key().is_some());
        // The key file: the token and the key's id, no private key.
        let path: PathBuf = ksk.write(&keys_dir).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("pkcs11: lode%20test "), "{text}");
        assert!(!text.contains("pkcs8"), "{text}");
        let back = SigningKey::read(&path).unwrap_or_else(|e| panic!("{alg}: {e}"));
        assert_eq!(back.dnskey_rdata(), ksk.dnskey_rdata(), "{alg}");
        assert_eq!(back.tag(), ksk.tag());
        // A zone signed whole by the token and checked with the public keys
        // (RSA signatures: present, not verified by `check`).
        let signer = Signer::new(
            &origin,
            vec![back, zsk.try_clone().unwrap()],
            Policy::default(),
        )
        .unwrap();
        let signed = signer
            .sign_zone(&zone(), None, now)
            .unwrap_or_else(|e| panic!("{alg}: {e}"));
        lode_dnssec::check::verify(&signed, &signer, now).unwrap_or_else(|e| panic!("{alg}: {e}"));
        let sigs = signed
            .apex_rrset(Rtype::RRSIG)
            .map_or(0, |s| s.rdatas().count());
        assert!(sigs >= 3, "{alg}: {sigs} signatures at the apex");
        // Deleted by its policy: gone from the token too.
        zsk.token_key().unwrap().destroy().unwrap();
        let id = zsk.token_key().unwrap().id.clone();
        assert!(
            SigningKey::in_token(&token, &origin, alg, ZSK_FLAGS, now, &id).is_err(),
            "{alg}: destroyed"
        );
        std::fs::remove_file(&path).unwrap();
    }

    // A key whose private half the token no longer has: the signer
    // refuses what it signed (no empty signature is published).
    let ksk = SigningKey::generate_in(&token, &origin, Algorithm::EcdsaP256, KSK_FLAGS, None, now)
        .unwrap();
    let lost = ksk.try_clone().unwrap();
    ksk.token_key().unwrap().destroy().unwrap();
    let signer = Signer::new(&origin, vec![lost], Policy::default()).unwrap();
    let e = signer
        .sign_zone(&zone(), None, now)
        .unwrap_err()
        .to_string();
    assert!(e.contains("signing in the key store failed"), "{e}");

    // A key file naming a token no keystore opened.
    std::fs::create_dir_all(&keys_dir).unwrap();
    let other = keys_dir.join("Kexample.+013+00001.key");
    std::fs::write(
        &other,
        "zone: example.\nalgorithm: 13\nflags: 257\ncreated: 1\npkcs11: elsewhere 0102\n",
    )
    .unwrap();
    let e = SigningKey::read(&other).unwrap_err().to_string();
    assert!(e.contains("no keystore of the configuration opens"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
