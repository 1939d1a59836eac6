//! Key rollovers run by themselves from the policy, watched by a
//! validating resolver that must never see SERVFAIL or a bogus answer.
//!
//! A parent zone `test.` (a Lode signing it, its KSK the resolver's trust
//! anchor) delegates `example.test.` to a second Lode that signs it with
//! timers shortened to seconds (propagation-delay 2, TTLs 3). The test plays
//! the parent's operator: when the child logs a KSK waiting for its DS, the
//! DS goes into the parent by RFC 2136 UPDATE, and the child finds it there
//! (`ksk-submission`, asking the parent every second) or is told (`lode
//! zone-ksk-submitted`). unbound (cache on, TTLs honoured) asks for a
//! name, a name that does not exist and the DNSKEY RRset several times a
//! second through:
//!
//! - a ZSK rollover (pre-publish), the child killed with `kill -9` in the
//!   middle of it and started again: the rollover goes on where it was;
//! - a KSK rollover (double signature) with the parent's DS replaced;
//! - a CSK rollover, then an algorithm rollover (13 → 15) started by a
//!   policy changed by `lode reload`, then NSEC → NSEC3 by another reload
//!   and back to NSEC by a third.
//!
//! After each rollover the child zone, taken by AXFR, passes
//! `ldns-verify-zone`, `dnssec-verify` and `kzonecheck`; a Knot secondary
//! with `dnssec-validation: on`, told of each change by NOTIFY, follows the
//! child by IXFR through the ZSK and KSK rollovers and refuses no version
//! (not through CSK rollovers: see `Setup::start`).

mod common;

use common::dnssec::{
    ask, tools_present, validated_as, verify_axfr, Unbound, CHILD_ZONE, PARENT_ZONE,
};
use common::peers::{distinct_ports, missing_programs, wait_serial, Peer, SecondaryKind, TsigKey};
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const KEY: &str = "hmac-sha256:roll-key.:cm9sbG92ZXItdGVzdC1rZXktMzItYnl0ZXMtLS0tLQ==";

struct Setup {
    dir: TempDir,
    parent: Server,
    child: Server,
    child_port: u16,
    child_starts: usize,
    /// The child checks the parent for its DS itself.
    auto: bool,
    child_extra: String,
    /// Knot 3.2 with `dnssec-validation: on`, the child's secondary (when
    /// knotd is here).
    knot: Option<Peer>,
}

/// The configuration (and at first the zone file) of one side: `name`
/// ("parent" or "child") in its folder;
/// `policy` lines go into its `[[policy]]`, `extra` tables at the end.
fn write_side(
    dir: &Path,
    name: &str,
    origin: &str,
    zone: &str,
    policy: &str,
    extra: &str,
) -> PathBuf {
    let side = dir.join(name);
    std::fs::create_dir_all(&side).unwrap();
    // Written once: later calls change the configuration alone.
    if !side.join("zone.db").exists() {
        std::fs::write(side.join("zone.db"), zone).unwrap();
    }
    let secret = KEY.rsplit(':').next().unwrap();
    // Rollovers by command unless the policy lines set a ZSK lifetime.
    let zsk_lifetime = if policy.contains("zsk-lifetime") {
        ""
    } else {
        "zsk-lifetime = 0\n"
    };
    let conf = format!(
        "journal-dir = \"journal\"\ncontrol = \"{control}\"\n\
         [[key]]\nid = \"roll-key.\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{secret}\"\n\
         [[acl]]\nid = \"upd\"\nkey = [\"roll-key.\"]\naction = [\"update\"]\n\
         [[acl]]\nid = \"xfr\"\naction = [\"transfer\"]\n\
         [[acl]]\nid = \"xfr-key\"\nkey = [\"roll-key.\"]\naction = [\"transfer\"]\n\
         [[policy]]\nid = \"quick\"\npropagation-delay = 2\ndnskey-ttl = 3\n{zsk_lifetime}\
         rrsig-lifetime = 7200\nrrsig-refresh = 3600\n{policy}\n\
         [[zone]]\nname = \"{origin}\"\nfile = \"zone.db\"\nacl = [\"upd\", \"xfr\", \"xfr-key\"]\n\
         dnssec-signing = true\ndnssec-policy = \"quick\"\n{extra}",
        control = side.join("lode.sock").display()
    );
    let path = side.join("lode.toml");
    std::fs::write(&path, conf).unwrap();
    path
}

impl Setup {
    /// The parent and the child; with `auto`, the child asks the parent
    /// for its KSKs' DS itself (`ksk-submission`, every second) instead of
    /// being told (`zone-ksk-submitted`).
    fn start(tag: &str, ports: (u16, u16), child_policy: &str, auto: bool) -> Setup {
        Setup::start_in(
            TempDir::new(&format!("rollover-{tag}")),
            ports,
            child_policy,
            auto,
            "",
        )
    }

    /// [`Setup::start`] in `dir`, `tables` added to the child's configuration.
    fn start_in(
        dir: TempDir,
        ports: (u16, u16),
        child_policy: &str,
        auto: bool,
        tables: &str,
    ) -> Setup {
        let parent_port = pick_port_in(ports.0, ports.0 + 4);
        let child_port = pick_port_in(ports.0 + 5, ports.1);
        let (policy, mut extra) = if auto {
            (
                format!("{child_policy}ksk-submission = \"parent\"\n"),
                format!(
                    "[[remote]]\nid = \"parent\"\naddress = [\"127.0.0.1@{parent_port}\"]\n\
                     [[submission]]\nid = \"parent\"\nparent = [\"parent\"]\ncheck-interval = 1\n"
                ),
            )
        } else {
            (child_policy.to_string(), String::new())
        };
        // The Knot secondary: NOTIFY to it (signed), transfers by it signed
        // with the same key. Not for CSKs: Knot 3.2's validator takes two
        // keys of flags 257 as two KSKs and no ZSK, and refuses every
        // version of a CSK rollover (Knot's own too; fixed in Knot 3.4.0,
        // "dnssec/validation: fix validation of two CSKs", 4647ac1f5).
        let csk = child_policy.contains("single-type-signing = true");
        let knot_port = (!csk && missing_programs(&[SecondaryKind::Knot]).is_empty())
            .then(|| distinct_ports(1, &[])[0]);
        if let Some(kp) = knot_port {
            extra = format!(
                "notify = [\"knot\"]\n\
                 [[remote]]\nid = \"knot\"\naddress = [\"127.0.0.1@{kp}\"]\nkey = \"roll-key.\"\n{extra}"
            );
        }
        extra.push_str(tables);
        let pconf = write_side(&dir.0, "parent", "test.", PARENT_ZONE, "", "");
        let cconf = write_side(
            &dir.0,
            "child",
            "example.test.",
            CHILD_ZONE,
            &policy,
            &extra,
        );
        let parent = start_lode_config(&pconf, parent_port, &dir.0.join("parent.log"), &["test."])
            .unwrap_or_else(|e| panic!("parent: {e}"));
        let child = start_lode_config(
            &cconf,
            child_port,
            &dir.0.join("child-0.log"),
            &["example.test."],
        )
        .unwrap_or_else(|e| panic!("child: {e}"));
        let knot = knot_port.map(|kp| {
            let child_addr = std::net::SocketAddr::from(([127, 0, 0, 1], child_port));
            Peer::start_knot_with(
                "example.test.",
                child_addr,
                &roll_key(),
                kp,
                "    dnssec-validation: on\n",
            )
            .unwrap_or_else(|e| panic!("Knot secondary: {e}"))
        });
        let s = Setup {
            dir,
            parent,
            child,
            child_port,
            child_starts: 1,
            auto,
            child_extra: extra,
            knot,
        };
        // The child's first KSK waits for its DS: the parent gets it.
        let ds = s.wait_ds(1);
        let status = s.control(&["zone-status", "example.test."]);
        assert!(
            status.contains("waits for its DS") && status.contains("next key event"),
            "{status}"
        );
        let stats = s.control(&["stats"]);
        assert!(
            stats.contains("lode_zone_dnssec_ksk_waiting_for_ds{zone=\"example.test.\"} 1"),
            "{stats}"
        );
        s.parent_update(&format!("update add {ds}"));
        s.confirm(3, 1);
        let stats = s.control(&["stats"]);
        assert!(
            stats.contains("lode_zone_dnssec_ksk_waiting_for_ds{zone=\"example.test.\"} 0"),
            "{stats}"
        );
        s
    }

    /// Starts the child again (after a kill or a stop), with `policy`
    /// replacing the child's policy lines when given.
    fn restart_child(&mut self, policy: Option<&str>) {
        if let Some(p) = policy {
            write_side(
                &self.dir.0,
                "child",
                "example.test.",
                CHILD_ZONE,
                p,
                &self.child_extra,
            );
        }
        let log = self.dir.0.join(format!("child-{}.log", self.child_starts));
        self.child_starts += 1;
        let conf = self.dir.0.join("child/lode.toml");
        self.child = start_lode_config(&conf, self.child_port, &log, &["example.test."])
            .unwrap_or_else(|e| panic!("child again: {e}"));
    }

    /// The child's policy lines replaced, and `lode reload`: the running
    /// child takes the new policy.
    fn reload_child(&self, policy: &str) {
        write_side(
            &self.dir.0,
            "child",
            "example.test.",
            CHILD_ZONE,
            policy,
            &self.child_extra,
        );
        let text = self.control(&["reload"]);
        assert!(
            text.contains("zone example.test.: new signing policy handed to its writer"),
            "{text}"
        );
    }

    /// Every child log so far.
    /// The child's policy changed by reload to one with another chain:
    /// waits up to 30 s for its `nth` whole signing "(policy changed)",
    /// then 6 s, verifies the zone (`what`) and returns its AXFR text.
    fn resign_by_reload(&self, policy: &str, nth: usize, what: &str) -> String {
        self.reload_child(policy);
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child_log().matches("(policy changed)").count() < nth {
            assert!(
                Instant::now() < deadline,
                "{what}: not signed whole:\n{}",
                self.child_log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_secs(6));
        self.verify(what);
        std::fs::read_to_string(self.dir.0.join("axfr.txt")).unwrap()
    }

    fn child_log(&self) -> String {
        (0..self.child_starts)
            .map(|i| {
                std::fs::read_to_string(self.dir.0.join(format!("child-{i}.log")))
                    .unwrap_or_default()
            })
            .collect()
    }

    /// The DS the child logged `nth` (1: the first) as waiting for the
    /// parent, once it has.
    fn wait_ds(&self, nth: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let log = self.child_log();
            let all: Vec<String> = log
                .lines()
                .filter_map(|l| l.split("DS for the parent: ").nth(1))
                .map(|d| d.trim().to_string())
                .collect();
            if let Some(ds) = all.get(nth - 1) {
                // "example.test. DS …" with the TTL an update needs.
                let (owner, rest) = ds.split_once(' ').unwrap();
                return format!("{owner} 3 {rest}");
            }
            assert!(
                Instant::now() < deadline,
                "no KSK #{nth} waiting for its DS:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// One update of the parent zone (knsupdate lines).
    fn parent_update(&self, lines: &str) {
        common::dnssec::knsupdate(self.parent.addr.port(), KEY, "test.", lines)
            .unwrap_or_else(|e| panic!("parent update {lines:?}: {e}"));
    }

    /// `lode ARGS… --control child/lode.sock`: its output (must succeed).
    fn control(&self, args: &[&str]) -> String {
        let (ok, text) = self.try_control(args);
        assert!(ok, "lode {args:?}: {text}");
        text
    }

    /// `lode ARGS… --control child/lode.sock`: (succeeded, output).
    fn try_control(&self, args: &[&str]) -> (bool, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_lode"))
            .args(args)
            .arg("--control")
            .arg(self.dir.0.join("child/lode.sock"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    }

    /// `zone-ksk-submitted` with the parent's DS TTL.
    fn submitted(&self, ds_ttl: u64) {
        let ttl = ds_ttl.to_string();
        self.control(&["zone-ksk-submitted", "example.test.", "--ds-ttl", &ttl]);
    }

    /// The `nth` KSK's DS is at the parent: the child is told, or (auto)
    /// finds it by itself.
    fn confirm(&self, ds_ttl: u64, nth: usize) {
        if !self.auto {
            return self.submitted(ds_ttl);
        }
        let needle = "every parent's server serves the DS";
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child_log().matches(needle).count() < nth {
            assert!(
                Instant::now() < deadline,
                "the child did not find its DS #{nth} at the parent:\n{}",
                self.child_log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        // The confirmation reaches the writer just after the log line.
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child_log().matches("KSK submission of tag").count() < nth {
            assert!(
                Instant::now() < deadline,
                "not confirmed:\n{}",
                self.child_log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The child's keys as `lode dnssec list` prints them: (role, state, tag).
    fn keys(&self) -> Vec<(String, String, String)> {
        let out = Command::new(env!("CARGO_BIN_EXE_lode"))
            .args(["dnssec", "list", "example.test.", "-c"])
            .arg(self.dir.0.join("child/lode.toml"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("example.test. tag"))
            .map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                // example.test. tag TAG ALG (N) ROLE STATE created …
                (w[5].to_string(), w[6].to_string(), w[2].to_string())
            })
            .collect()
    }

    /// Waits (up to a minute) until the child's keys are `want`
    /// (role, state) pairs, in any order.
    fn wait_keys(&self, want: &[(&str, &str)], what: &str) -> Vec<(String, String, String)> {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let keys = self.keys();
            let mut have: Vec<(String, String)> = keys
                .iter()
                .map(|(r, s, _)| (r.clone(), s.clone()))
                .collect();
            let mut want: Vec<(String, String)> = want
                .iter()
                .map(|(r, s)| (r.to_string(), s.to_string()))
                .collect();
            have.sort();
            want.sort();
            if have == want {
                return keys;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: keys {have:?}, expected {want:?}\n{}",
                self.child_log()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn verify(&self, when: &str) -> u32 {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], self.child_port));
        let serial = verify_axfr(&self.dir.0, addr, "example.test.", None, when);
        // The validating Knot secondary has (or gets) this version: it
        // validated it.
        if let Some(k) = &self.knot {
            wait_serial(k.addr, "example.test.", serial, Duration::from_secs(30)).unwrap_or_else(
                |e| {
                    panic!(
                        "{when}: the validating Knot secondary: {e}\n{}",
                        k.log_tail(30)
                    )
                },
            );
            // And it refused no version on the way.
            let log = k.log_tail(100_000);
            assert!(
                !log.contains("validation failed"),
                "{when}: the Knot secondary refused a version:\n{log}"
            );
        }
        serial
    }
}

/// The TSIG key of the test (the child's updates, NOTIFY to Knot, Knot's
/// transfers).
fn roll_key() -> TsigKey {
    let mut parts = KEY.splitn(3, ':');
    TsigKey {
        algorithm: parts.next().unwrap().into(),
        name: parts.next().unwrap().into(),
        secret: parts.next().unwrap().into(),
    }
}

/// unbound with the parent's KSK as its trust anchor, both zones as stubs.
fn start_unbound(s: &Setup, ports: (u16, u16)) -> Unbound {
    let anchor = std::fs::read_to_string(s.dir.0.join("parent.log"))
        .unwrap()
        .lines()
        .find_map(|l| l.split("DS for the parent: ").nth(1))
        .expect("the parent's DS in its log")
        .trim()
        .to_string();
    let d = s.dir.0.join("unbound");
    std::fs::create_dir_all(&d).unwrap();
    let stubs = [
        ("test.", s.parent.addr.port()),
        ("example.test.", s.child_port),
    ];
    common::dnssec::start_unbound(&d, ports, &anchor, &stubs, |port| {
        check(port, "www.example.test.", "A", "NOERROR").is_ok()
    })
}

/// One question to the resolver: Ok when the answer has `status` and AD.
fn check(port: u16, name: &str, rtype: &str, status: &str) -> Result<(), String> {
    let text = ask(port, name, rtype);
    if validated_as(&text, status) {
        Ok(())
    } else {
        Err(format!("{name} {rtype}: {status} with AD expected\n{text}"))
    }
}

/// Asks the resolver four questions every 300 ms until stopped; every
/// answer that is not validated is kept.
struct Watcher {
    stop: Arc<AtomicBool>,
    failures: Arc<Mutex<Vec<String>>>,
    asked: Arc<std::sync::atomic::AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watcher {
    fn start(port: u16) -> Watcher {
        let stop = Arc::new(AtomicBool::new(false));
        let failures = Arc::new(Mutex::new(Vec::new()));
        let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (s, f, a) = (stop.clone(), failures.clone(), asked.clone());
        let started = Instant::now();
        let thread = std::thread::spawn(move || {
            // Bounded: at most 20 minutes of questions.
            while !s.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(1200) {
                for (name, rtype, status) in [
                    ("www.example.test.", "A", "NOERROR"),
                    ("nothing.example.test.", "A", "NXDOMAIN"),
                    ("example.test.", "DNSKEY", "NOERROR"),
                    ("mail.example.test.", "TXT", "NOERROR"),
                ] {
                    a.fetch_add(1, Ordering::Relaxed);
                    if let Err(e) = check(port, name, rtype, status) {
                        f.lock()
                            .unwrap()
                            .push(format!("+{:.1} s: {e}", started.elapsed().as_secs_f64()));
                    }
                }
                std::thread::sleep(Duration::from_millis(300));
            }
        });
        Watcher {
            stop,
            failures,
            asked,
            thread: Some(thread),
        }
    }

    /// Stops it; (questions asked, failures).
    fn finish(mut self) -> (usize, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let f = self.failures.lock().unwrap().clone();
        (self.asked.load(Ordering::Relaxed), f)
    }
}

fn assert_watched(w: Watcher, s: &Setup, what: &str) {
    let (asked, failures) = w.finish();
    assert!(asked > 40, "{what}: only {asked} questions asked");
    assert!(
        failures.is_empty(),
        "{what}: {} of {asked} answers not validated:\n{}\n--- child log:\n{}",
        failures.len(),
        failures
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n"),
        s.child_log()
    );
}

#[test]
fn zsk_and_ksk_rollovers_with_kill9_validate_throughout() {
    if !tools_present() {
        return;
    }
    let s = Setup::start("zk", (17100, 17109), "", true);
    zsk_and_ksk_rollovers(s, (17120, 17124));
}

/// No command starts anything: the policy's `zsk-lifetime` (12 s) and
/// `ksk-lifetime` (40 s) roll the keys by themselves — ZSKs one after the
/// other, a KSK whose DS the child finds at the parent, never two
/// rollovers at once — with unbound validating throughout.
#[test]
fn rollovers_start_by_themselves_from_the_policys_lifetimes() {
    if !tools_present() {
        return;
    }
    let s = Setup::start(
        "timers",
        (17340, 17349),
        "zsk-lifetime = 12\nksk-lifetime = 40\n",
        true,
    );
    let first = s.keys();
    let tags = |role: &str, keys: &[(String, String, String)]| -> Vec<String> {
        keys.iter()
            .filter(|k| k.0 == role)
            .map(|k| k.2.clone())
            .collect()
    };
    let unbound = start_unbound(&s, (17350, 17354));
    let watcher = Watcher::start(unbound.port);
    let (mut zsks, mut ksks) = (tags("ZSK", &first), tags("KSK", &first));
    // The KSK's lifetime runs out: a new one waits for its DS, which the
    // parent gets (as its operator would); the child finds it there.
    let old_ds = s.wait_ds(1);
    let new_ds = s.wait_ds(2);
    assert_ne!(old_ds, new_ds);
    s.parent_update(&format!("update add {new_ds}"));
    s.confirm(4, 2);
    s.parent_update(&format!("update delete {old_ds}"));
    // ZSKs and KSKs seen over the next half minute.
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let keys = s.keys();
        for (all, role) in [(&mut zsks, "ZSK"), (&mut ksks, "KSK")] {
            for t in tags(role, &keys) {
                if !all.contains(&t) {
                    all.push(t);
                }
            }
        }
        // A key between two steps of a rollover (Knot's running_rollover).
        let running = keys
            .iter()
            .filter(|k| {
                [
                    "published",
                    "ready",
                    "retire-active",
                    "pre-active",
                    "post-active",
                ]
                .contains(&k.1.as_str())
            })
            .count();
        assert!(running <= 1, "one rollover at a time: {keys:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
    std::thread::sleep(Duration::from_secs(6)); // caches of the old records
    s.verify("after rollovers by the policy's timers");
    assert_watched(watcher, &s, "rollovers by timers");
    assert!(zsks.len() >= 3, "ZSKs rolled by zsk-lifetime: {zsks:?}");
    assert!(ksks.len() >= 2, "the KSK rolled by ksk-lifetime: {ksks:?}");
    let log = s.child_log();
    assert!(
        !log.contains("zone-key-rollover") && log.matches("ZSK rollover started").count() >= 2,
        "started by the timers alone:\n{log}"
    );
}

/// The same with the child's keys in a PKCS #11 token (SoftHSM2): each new
/// key made there, no private key in a file.
#[test]
fn zsk_and_ksk_rollovers_with_keys_in_a_token() {
    if !tools_present() {
        return;
    }
    let dir = TempDir::new("rollover-hsm");
    let Some(token) = common::dnssec::softhsm_token(&dir.0, "rollover") else {
        return;
    };
    let tables =
        format!("[[keystore]]\nid = \"hsm\"\nbackend = \"pkcs11\"\nconfig = \"{token}\"\n");
    let s = Setup::start_in(dir, (17150, 17159), "keystore = \"hsm\"\n", true, &tables);
    let s = zsk_and_ksk_rollovers(s, (17160, 17164));
    let keys = s.dir.0.join("child/journal/keys/example.test");
    let files: Vec<String> = std::fs::read_dir(&keys)
        .unwrap()
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "private"))
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    assert!(files.len() >= 2, "{files:?}");
    for f in files {
        assert!(
            f.contains("pkcs11: rollover ") && !f.contains("pkcs8"),
            "{f}"
        );
    }
}

/// A ZSK rollover with a `kill -9` in the middle, then a KSK rollover
/// whose DS the child finds at the parent, unbound validating throughout;
/// returns the setup (its folder) for more checks.
fn zsk_and_ksk_rollovers(mut s: Setup, unbound_ports: (u16, u16)) -> Setup {
    let keys = s.wait_keys(&[("KSK", "active"), ("ZSK", "active")], "first keys");
    let old_zsk = keys.iter().find(|k| k.0 == "ZSK").unwrap().2.clone();
    let unbound = start_unbound(&s, unbound_ports);
    let watcher = Watcher::start(unbound.port);
    std::thread::sleep(Duration::from_secs(2));

    // ZSK: a new one published; killed before it signs; it goes on.
    let out = s.control(&["zone-key-rollover", "example.test.", "zsk"]);
    assert!(out.contains("ZSK rollover started"), "{out}");
    let (ok, out) = s.try_control(&["zone-key-rollover", "example.test.", "ksk"]);
    assert!(
        !ok && out.contains("under way"),
        "one rollover at a time: {out}"
    );
    std::thread::sleep(Duration::from_secs(2));
    s.child.kill9();
    s.restart_child(None);
    let keys = s.wait_keys(&[("KSK", "active"), ("ZSK", "active")], "ZSK rollover");
    let new_zsk = keys.iter().find(|k| k.0 == "ZSK").unwrap().2.clone();
    assert_ne!(old_zsk, new_zsk, "the ZSK was replaced");
    s.verify("after the ZSK rollover");

    // KSK: published (signs the DNSKEY RRset), ready, its DS to the
    // parent, which the child finds there itself (ksk-submission); the
    // old one goes after the DS TTL.
    let old_ds = s.wait_ds(1);
    s.control(&["zone-key-rollover", "example.test.", "ksk"]);
    let new_ds = s.wait_ds(2);
    assert_ne!(old_ds, new_ds);
    s.parent_update(&format!("update add {new_ds}"));
    s.confirm(4, 2);
    s.parent_update(&format!("update delete {old_ds}"));
    s.wait_keys(&[("KSK", "active"), ("ZSK", "active")], "KSK rollover");
    std::thread::sleep(Duration::from_secs(6)); // caches of the old records
    s.verify("after the KSK rollover");
    assert_watched(watcher, &s, "ZSK and KSK rollovers");
    let log = s.child_log();
    assert!(
        log.contains("next key action") && log.contains("deleted"),
        "each step logged:\n{log}"
    );
    s
}

#[test]
fn csk_and_algorithm_rollovers_validate_throughout() {
    if !tools_present() {
        return;
    }
    let s = Setup::start("csk", (17110, 17119), "single-type-signing = true\n", false);
    s.wait_keys(&[("CSK", "active")], "first CSK");
    let unbound = start_unbound(&s, (17125, 17129));
    let watcher = Watcher::start(unbound.port);
    std::thread::sleep(Duration::from_secs(2));

    // CSK rollover.
    let old_ds = s.wait_ds(1);
    s.control(&["zone-key-rollover", "example.test.", "ksk"]);
    let new_ds = s.wait_ds(2);
    s.parent_update(&format!("update add {new_ds}"));
    std::thread::sleep(Duration::from_secs(4));
    s.submitted(4);
    s.parent_update(&format!("update delete {old_ds}"));
    s.wait_keys(&[("CSK", "active")], "CSK rollover");
    s.verify("after the CSK rollover");

    // Algorithm rollover: the policy says Ed25519 now (by reload).
    s.reload_child("single-type-signing = true\nalgorithm = \"ed25519\"\n");
    let ed_ds = s.wait_ds(3);
    assert!(ed_ds.contains(" 15 2 "), "an Ed25519 KSK's DS: {ed_ds}");
    s.parent_update(&format!("update add {ed_ds}"));
    std::thread::sleep(Duration::from_secs(4));
    s.submitted(4);
    s.parent_update(&format!("update delete {new_ds}"));
    s.wait_keys(&[("CSK", "active")], "algorithm rollover");
    std::thread::sleep(Duration::from_secs(6));
    let axfr_serial = s.verify("after the algorithm rollover");
    assert!(axfr_serial > 2);
    let axfr = std::fs::read_to_string(s.dir.0.join("axfr.txt")).unwrap();
    // owner TTL IN RRSIG covered algorithm …
    let algorithms: Vec<&str> = axfr
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.get(3) == Some(&"RRSIG") || w.get(3) == Some(&"DNSKEY"))
        .filter_map(|w| w.get(if w[3] == "RRSIG" { 5 } else { 6 }).copied())
        .collect();
    assert!(!algorithms.is_empty());
    assert!(
        algorithms.iter().all(|&a| a == "15"),
        "only algorithm 15 left: {algorithms:?}\n{axfr}"
    );

    // NSEC → NSEC3 (by reload): the zone is signed whole with the new
    // chain in one version; the resolver keeps validating.
    let axfr = s.resign_by_reload(
        "single-type-signing = true\nalgorithm = \"ed25519\"\nnsec3 = true\n",
        1,
        "after NSEC → NSEC3",
    );
    assert!(
        axfr.contains("NSEC3PARAM") && !axfr.contains("\tNSEC\t"),
        "{axfr}"
    );

    // And back, NSEC3 → NSEC (by reload), the resolver still validating.
    let axfr = s.resign_by_reload(
        "single-type-signing = true\nalgorithm = \"ed25519\"\n",
        2,
        "after NSEC3 → NSEC",
    );
    assert!(
        !axfr.contains("NSEC3") && axfr.contains("\tNSEC\t"),
        "{axfr}"
    );
    assert_watched(
        watcher,
        &s,
        "CSK and algorithm rollovers, NSEC → NSEC3 → NSEC",
    );
}
