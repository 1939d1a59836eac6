//! The control commands as `knotc` has them: `lode status`,
//! `lode zone-reload NAME`, `lode zone-status`, `lode stop`, and the errors
//! every control command gives when no server answers on the socket.
//!
//! Ports 16720-16729.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{udp_exchange, wait_exit, Message, Query, TempDir};

/// A zone whose www has address `www` (same length for every `www` of
/// the form 192.0.2.N with one digit: an edit keeps the file's size).
fn zone(www: &str) -> String {
    format!(
        "$ORIGIN c.test.\n$TTL 300\n@ SOA ns1 hm 7 3600 600 86400 300\n@ NS ns1\nns1 A 192.0.2.53\nwww A {www}\n"
    )
}

/// The addresses `www.c.test. A` answers with (None: no answer).
fn www(addr: SocketAddr) -> Option<Vec<String>> {
    let q = Query::new("www.c.test.", 1, 1).to_wire();
    let a = udp_exchange(addr, &q, Duration::from_millis(300))?;
    Some(
        Message::parse(&a)
            .answer
            .iter()
            .filter(|r| r.rtype == 1)
            .map(|r| r.rdata.clone())
            .collect(),
    )
}

fn lode(args: &[&str], control: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(args)
        .arg("--control")
        .arg(control)
        .output()
        .expect("run lode")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}stderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Starts `lode serve` with `args` and waits until `www.c.test.` answers.
fn serve(args: &[&str], control: &Path, port: u16) -> Child {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    if UdpSocket::bind(addr).is_err() {
        panic!("port {port} is taken");
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["serve", "--workers", "1", "--listen"])
        .arg(addr.to_string())
        .arg("--control")
        .arg(control)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start lode serve");
    let deadline = Instant::now() + Duration::from_secs(60);
    while www(addr).is_none_or(|a| a.is_empty()) {
        if let Ok(Some(s)) = child.try_wait() {
            panic!("lode serve exited: {s}");
        }
        assert!(Instant::now() < deadline, "lode serve does not answer");
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

/// Writes `text` to `path` and gives it back the modification time it had.
fn edit_keeping_mtime(path: &Path, text: &str) {
    let before = std::fs::metadata(path).unwrap().modified().unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(before)
        .unwrap();
}

#[test]
fn status_zone_reload_zone_status_and_stop() {
    let dir = TempDir::new("control");
    let file = dir.0.join("c.zone");
    std::fs::write(&file, zone("192.0.2.1")).unwrap();
    let control = dir.0.join("ctl.sock");
    let port = 16720;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    // b.test. fails to load at start (a zone file not there yet).
    let late = dir.0.join("b.zone");
    let mut child = serve(
        &[
            "--zone",
            &format!("c.test.={}", file.display()),
            "--zone",
            &format!("b.test.={}", late.display()),
        ],
        &control,
        port,
    );
    let stop_on_panic = KillOnDrop(child.id());

    // The socket: mode 0660, the server's user's.
    let meta = std::fs::metadata(&control).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o660);
    assert_eq!(meta.uid(), std::fs::metadata("/proc/self").unwrap().uid());

    // A second server on the same (configured) control socket does not
    // start: it would run without control.
    let second = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["serve", "--workers", "1", "--listen", "127.0.0.1:16729"])
        .arg("--control")
        .arg(&control)
        .args(["--zone", &format!("c.test.={}", file.display())])
        .stdin(Stdio::null())
        .output()
        .expect("run a second lode serve");
    let said = text(&second);
    assert_eq!(second.status.code(), Some(1), "{said}");
    assert!(
        said.contains("is in use by another running server"),
        "{said}"
    );

    // zone-read: the served records, of one owner and type.
    let o = lode(&["zone-read", "c.test."], &control);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains("c.test. 300 IN SOA") && out.contains("www.c.test. 300 IN A 192.0.2.1"),
        "{out}"
    );
    assert_eq!(out.lines().count(), 4, "{out}");
    let o = lode(
        &["zone-read", "c.test.", "--owner", "www", "--type", "A"],
        &control,
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "www.c.test. 300 IN A 192.0.2.1",
        "{}",
        text(&o)
    );
    let o = lode(&["zone-read", "c.test.", "--type", "MX"], &control);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("no such records"),
        "{}",
        text(&o)
    );
    let o = lode(&["zone-read", "nosuch.test."], &control);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));

    // status leads with the summary line.
    let o = lode(&["status"], &control);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let first = out.lines().next().unwrap_or_default();
    let want = format!(
        "lode {}, pid {}, up ",
        env!("CARGO_PKG_VERSION"),
        child.id()
    );
    assert!(first.starts_with(&want), "{first}");
    assert!(
        first.ends_with(", serving 1 zone on 127.0.0.1:16720 (UDP and TCP)"),
        "{first}"
    );
    assert!(out.contains("zone c.test. serial 7"), "{out}");

    // An edit that keeps size and modification time: `reload` does not see
    // it, `zone-reload` reads the file all the same.
    edit_keeping_mtime(&file, &zone("192.0.2.2"));
    let o = lode(&["reload"], &control);
    assert!(text(&o).contains("zone c.test.: unchanged"), "{}", text(&o));
    assert_eq!(www(addr).unwrap(), ["192.0.2.1"]);
    let o = lode(&["zone-reload", "c.test."], &control);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("zone c.test.: reloaded, serial 7, 4 records"),
        "{}",
        text(&o)
    );
    assert_eq!(www(addr).unwrap(), ["192.0.2.2"]);
    let o = lode(&["zone-status", "c.test."], &control);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!("  source file {}\n", file.display())),
        "{out}"
    );
    assert!(
        out.contains("  last load 0 s ago, took ") || out.contains("  last load 1 s ago, took "),
        "{out}"
    );

    // A broken edit: file:line, the old data still answered, and said so.
    std::fs::write(&file, zone("192.0.2.3") + "bad A 300.1.2.3\n").unwrap();
    let o = lode(&["zone-reload", "c.test."], &control);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let line = format!("{}:7: ", file.display());
    assert!(
        err.contains("zone c.test.: failed, previous version still served") && err.contains(&line),
        "{}",
        text(&o)
    );
    assert_eq!(www(addr).unwrap(), ["192.0.2.2"]);
    let o = lode(&["zone-status"], &control);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("(1 error), the previous version is still served:") && out.contains(&line),
        "{out}"
    );

    // An unknown zone.
    let o = lode(&["zone-reload", "nothere.test."], &control);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("zone nothere.test.: no such zone"),
        "{}",
        text(&o)
    );

    // The zone that failed at start: said so, then served once its file
    // is there and it is reloaded.
    let o = lode(&["zone-status", "b.test."], &control);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.starts_with("b.test. not served\n") && out.contains("(1 error), not served:"),
        "{out}"
    );
    std::fs::write(&late, zone("192.0.2.5").replace("c.test.", "b.test.")).unwrap();
    let o = lode(&["zone-reload", "b.test."], &control);
    assert!(o.status.success(), "{}", text(&o));
    let q = Query::new("www.b.test.", 1, 1).to_wire();
    let a = udp_exchange(addr, &q, Duration::from_secs(1)).expect("an answer");
    let m = Message::parse(&a);
    assert_eq!(
        m.answer.first().map(|r| r.rdata.as_str()),
        Some("192.0.2.5")
    );
    let o = lode(&["status"], &control);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("serving 2 zones on 127.0.0.1:16720"),
        "{}",
        text(&o)
    );

    // stop: "stopped" once the process has ended, exit 0, no socket left.
    let started = Instant::now();
    let o = lode(&["stop"], &control);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "stopped\n");
    let status = wait_exit(&mut child, Duration::from_secs(5)).expect("lode serve exits");
    assert!(status.success(), "{status:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(!control.exists());
    std::mem::forget(stop_on_panic);

    // Now nothing runs there.
    let o = lode(&["status"], &control);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("no Lode server is running with control socket"),
        "{}",
        text(&o)
    );
}

#[test]
fn zone_reload_of_an_updated_zone_goes_through_its_journal_and_a_secondary_is_refused() {
    let dir = TempDir::new("control-journal");
    let file = dir.0.join("c.zone");
    std::fs::write(&file, zone("192.0.2.1")).unwrap();
    let control = dir.0.join("ctl.sock");
    let port = 16721;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let config = dir.0.join("lode.toml");
    std::fs::write(
        &config,
        format!(
            r#"journal-dir = "{journal}"

[[remote]]
id = "nowhere"
address = ["127.0.0.1@16729"]

[[acl]]
id = "local"
address = ["127.0.0.1"]
action = ["update"]

[[zone]]
name = "c.test."
file = "{file}"
acl = ["local"]

[[zone]]
name = "s.test."
master = ["nowhere"]
"#,
            journal = dir.0.join("journal").display(),
            file = file.display()
        ),
    )
    .unwrap();
    let mut child = serve(&["--config", &config.display().to_string()], &control, port);
    let stop_on_panic = KillOnDrop(child.id());

    edit_keeping_mtime(&file, &zone("192.0.2.2"));
    let o = lode(&["zone-reload", "c.test."], &control);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("zone c.test.: reloaded, applied as a change through its journal: 1 records removed, 1 added"),
        "{out}"
    );
    assert_eq!(www(addr).unwrap(), ["192.0.2.2"]);
    let o = lode(&["zone-status", "c.test."], &control);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("and its journal (it takes updates)"), "{out}");

    let o = lode(&["zone-reload", "s.test."], &control);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("use `lode zone-refresh s.test.`"),
        "{}",
        text(&o)
    );
    let o = lode(&["zone-status", "s.test."], &control);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("  source transfer from "), "{out}");
    let o = lode(&["zone-flush", "s.test."], &control);
    assert!(
        text(&o).contains("a secondary has no zone file to write"),
        "{}",
        text(&o)
    );

    // A zone added by `lode reload` can be reloaded alone too.
    let added = dir.0.join("a.zone");
    std::fs::write(&added, zone("192.0.2.4").replace("c.test.", "a.test.")).unwrap();
    let mut conf = std::fs::read_to_string(&config).unwrap();
    conf.push_str(&format!(
        "\n[[zone]]\nname = \"a.test.\"\nfile = \"{}\"\n",
        added.display()
    ));
    std::fs::write(&config, conf).unwrap();
    let o = lode(&["reload"], &control);
    assert!(o.status.success(), "{}", text(&o));
    let o = lode(&["zone-reload", "a.test."], &control);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("zone a.test.: reloaded, serial 7, 4 records"),
        "{}",
        text(&o)
    );

    let o = lode(&["stop"], &control);
    assert!(o.status.success(), "{}", text(&o));
    assert!(wait_exit(&mut child, Duration::from_secs(5)).is_some_and(|s| s.success()));
    std::mem::forget(stop_on_panic);
}

/// Every control command: exit 2 and a sentence saying why.
#[test]
fn without_a_server_every_control_command_says_why() {
    let dir = TempDir::new("control-none");
    let commands: [&[&str]; 8] = [
        &["status"],
        &["stop"],
        &["reload"],
        &["zone-status"],
        &["zone-reload", "c.test."],
        &["zone-flush"],
        &["zone-refresh", "c.test."],
        &["zone-retransfer", "c.test."],
    ];

    // No socket file.
    let missing = dir.0.join("missing.sock");
    for c in commands {
        let o = lode(c, &missing);
        assert_eq!(o.status.code(), Some(2), "{c:?}: {}", text(&o));
        let want = format!(
            "no Lode server is running with control socket {} (is it started? is --control/--config right?)",
            missing.display()
        );
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(&want),
            "{c:?}: {}",
            text(&o)
        );
    }

    // A socket file nobody listens on (a server killed with -9).
    let stale = dir.0.join("stale.sock");
    drop(UnixListener::bind(&stale).unwrap());
    for c in commands {
        let o = lode(c, &stale);
        assert_eq!(o.status.code(), Some(2), "{c:?}: {}", text(&o));
        let want = format!(
            "{} is a stale socket: no server is listening on it",
            stale.display()
        );
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(&want),
            "{c:?}: {}",
            text(&o)
        );
    }

    // A socket this user may not use: as root, one of root's tried by
    // nobody (mode 0660, then 0000); as another user, a mode 0000 one of
    // its own.
    let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    let locked = dir.0.join("locked.sock");
    let _listening = UnixListener::bind(&locked).unwrap();
    let modes: &[u32] = if root { &[0o660, 0o000] } else { &[0o000] };
    for &mode in modes {
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(mode)).unwrap();
        let mut cmd = if root {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--", env!("CARGO_BIN_EXE_lode")]);
            c
        } else {
            Command::new(env!("CARGO_BIN_EXE_lode"))
        };
        let o = cmd
            .args(["status", "--control"])
            .arg(&locked)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "mode {mode:o}: {}", text(&o));
        let want = format!(
            "permission denied on {}: run as the server's user (lode) or a member of its group; the socket is mode 0660",
            locked.display()
        );
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(&want),
            "mode {mode:o}: {}",
            text(&o)
        );
    }
}

/// Kills a `lode serve` left running by a failed assertion.
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-9", &self.0.to_string()])
            .status();
    }
}

/// Runs `lode ARGS` and checks that its output says `needle`.
fn says(control: &Path, args: &[&str], needle: &str) -> String {
    let o = lode(args, control);
    let t = text(&o);
    assert!(t.contains(needle), "{t}");
    t
}

/// An UPDATE adding `x.c.test. A 192.0.2.9`, with an OPT (EDNS, 1232).
fn update_with_edns(id: u16) -> Vec<u8> {
    let mut m = common::update_message(
        id,
        "c.test.",
        &[],
        &[common::RawRr::new("x.c.test.", 1, 300, &[192, 0, 2, 9])],
    );
    m[11] = 1;
    m.extend_from_slice(&[0, 0, 41, 4, 0xd0, 0, 0, 0, 0, 0, 0]);
    m
}

/// `zone-freeze` / `zone-thaw` as knotc's: a frozen zone refuses updates
/// with Knot's very answer (REFUSED, EDE 14), `zone-status` says so, a
/// reload leaves its changed file; the thaw reads that file and updates
/// are taken again.
#[test]
fn zone_freeze_refuses_updates_as_knot_and_thaw_reads_what_a_reload_left() {
    let dir = TempDir::new("control-freeze");
    let file = dir.0.join("c.zone");
    std::fs::write(&file, zone("192.0.2.1")).unwrap();
    let other = dir.0.join("d.zone");
    std::fs::write(&other, zone("192.0.2.1").replace("c.test.", "d.test.")).unwrap();
    let control = dir.0.join("ctl.sock");
    let port = 16722;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let config = dir.0.join("lode.toml");
    std::fs::write(
        &config,
        format!(
            "journal-dir = \"{journal}\"\n\n[[acl]]\nid = \"local\"\naddress = [\"127.0.0.1\"]\n\
             action = [\"update\"]\n\n[[zone]]\nname = \"c.test.\"\nfile = \"{file}\"\nacl = [\"local\"]\n\n\
             [[zone]]\nname = \"d.test.\"\nfile = \"{other}\"\n",
            journal = dir.0.join("journal").display(),
            file = file.display(),
            other = other.display()
        ),
    )
    .unwrap();
    let mut child = serve(&["--config", &config.display().to_string()], &control, port);
    let stop_on_panic = KillOnDrop(child.id());
    let rcode = |m: &[u8]| m[3] & 0x0f;

    says(
        &control,
        &["zone-freeze", "c.test."],
        "zone c.test.: frozen: updates REFUSED",
    );
    says(
        &control,
        &["zone-freeze", "c.test."],
        "zone c.test.: already frozen",
    );
    let refused =
        udp_exchange(addr, &update_with_edns(0x1234), Duration::from_secs(2)).expect("an answer");
    assert_eq!(rcode(&refused), 5, "REFUSED");
    says(
        &control,
        &["zone-status", "c.test."],
        "FROZEN (lode zone-thaw c.test.)",
    );
    // Knot answers the same bytes for a zone it froze.
    if common::knot_available() {
        let zones = [common::ZoneSpec {
            origin: "c.test.".into(),
            file: file.clone(),
        }];
        let acl = "acl:\n  - id: upd\n    address: 127.0.0.1\n    action: update\n";
        let knot = common::start_knot_with(&zones, common::pick_port(16730), acl, "    acl: upd\n")
            .expect("knotd starts");
        let knotc = Command::new(common::knot_tool("knotc"))
            .arg("-s")
            .arg(knot.dir().join("knot.sock"))
            .args(["zone-freeze", "c.test."])
            .output()
            .expect("knotc");
        assert!(knotc.status.success(), "{}", text(&knotc));
        let deadline = Instant::now() + Duration::from_secs(10);
        let knots = loop {
            let a = udp_exchange(knot.addr, &update_with_edns(0x1234), Duration::from_secs(2));
            // The freeze is an event of Knot's: done a moment later.
            if a.as_ref().is_some_and(|a| rcode(a) == 5) || Instant::now() > deadline {
                break a.expect("knotd answers");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(
            common::hex(&refused),
            common::hex(&knots),
            "Lode's answer, then Knot's"
        );
    }

    // Every zone frozen; a reload leaves the changed file of d.test.
    let out = says(&control, &["zone-freeze"], "zone d.test.: frozen");
    assert!(!out.contains("zone c.test."), "{out}");
    let d_www = |addr| {
        let q = Query::new("www.d.test.", 1, 1).to_wire();
        let a = udp_exchange(addr, &q, Duration::from_millis(500)).expect("an answer");
        Message::parse(&a)
            .answer
            .iter()
            .map(|r| r.rdata.clone())
            .collect::<Vec<_>>()
    };
    std::fs::write(
        &other,
        zone("192.0.2.2").replace("c.test.", "d.test.") + "; edited\n",
    )
    .unwrap();
    says(
        &control,
        &["reload"],
        "zone d.test.: frozen, its changed file is read at `lode zone-thaw d.test.`",
    );
    assert_eq!(d_www(addr), ["192.0.2.1"]);

    let out = says(&control, &["zone-thaw"], "exit Some(0)");
    for needle in [
        "zone c.test.: thawed",
        "zone d.test.: thawed",
        "zone d.test.: reloaded",
    ] {
        assert!(out.contains(needle), "{out}");
    }
    assert_eq!(d_www(addr), ["192.0.2.2"]);
    let taken =
        udp_exchange(addr, &update_with_edns(0x1235), Duration::from_secs(5)).expect("an answer");
    assert_eq!(rcode(&taken), 0, "taken again once thawed");
    says(
        &control,
        &["zone-thaw", "c.test."],
        "zone c.test.: not frozen",
    );

    let o = lode(&["stop"], &control);
    assert!(o.status.success(), "{}", text(&o));
    assert!(wait_exit(&mut child, Duration::from_secs(5)).is_some_and(|s| s.success()));
    std::mem::forget(stop_on_panic);
}

/// `zone-purge`: refused without --force and for a zone still configured;
/// the journal and state a zone taken out of the configuration left are
/// removed, and then there is nothing left to purge.
#[test]
fn zone_purge_removes_what_a_zone_taken_out_left() {
    let dir = TempDir::new("control-purge");
    let file = dir.0.join("c.zone");
    std::fs::write(&file, zone("192.0.2.1")).unwrap();
    let other = dir.0.join("d.zone");
    std::fs::write(&other, zone("192.0.2.1").replace("c.test.", "d.test.")).unwrap();
    let control = dir.0.join("ctl.sock");
    let port = 16723;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let journal = dir.0.join("journal");
    let config = dir.0.join("lode.toml");
    let head = format!(
        "journal-dir = \"{}\"\n\n[[acl]]\nid = \"local\"\naddress = [\"127.0.0.1\"]\n\
         action = [\"update\"]\n\n[[zone]]\nname = \"d.test.\"\nfile = \"{}\"\n",
        journal.display(),
        other.display()
    );
    let c_zone = format!(
        "\n[[zone]]\nname = \"c.test.\"\nfile = \"{}\"\nacl = [\"local\"]\n",
        file.display()
    );
    std::fs::write(&config, format!("{head}{c_zone}")).unwrap();
    let mut child = serve(&["--config", &config.display().to_string()], &control, port);
    let stop_on_panic = KillOnDrop(child.id());
    let taken = udp_exchange(addr, &update_with_edns(7), Duration::from_secs(5)).expect("answer");
    assert_eq!(taken[3] & 0x0f, 0, "the update is taken");
    says(&control, &["zone-flush", "c.test."], "written");
    let jnl = journal.join("c.test.jnl");
    assert!(jnl.exists(), "a journal to purge");

    let o = lode(&["zone-purge", "c.test."], &control);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("add --force"), "{}", text(&o));
    let o = lode(&["zone-purge", "--force", "c.test."], &control);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("zone c.test.: configured here, not purged"),
        "{}",
        text(&o)
    );
    assert!(jnl.exists(), "a configured zone keeps its journal");

    std::fs::write(&config, &head).unwrap();
    says(&control, &["reload"], "zone c.test.: removed");
    assert!(jnl.exists(), "a zone taken out keeps its data until purged");
    let out = says(
        &control,
        &["zone-purge", "-f"],
        "zone c.test.: purged: journal",
    );
    assert!(out.contains("exit Some(0)"), "{out}");
    assert!(!out.contains("d.test."), "{out}");
    assert!(!jnl.exists(), "{out}");
    says(
        &control,
        &["zone-purge", "-f"],
        "no zone that is not configured has data here",
    );
    says(
        &control,
        &["zone-purge", "-f", "c.test."],
        "zone c.test.: nothing to purge",
    );

    let o = lode(&["stop"], &control);
    assert!(o.status.success(), "{}", text(&o));
    assert!(wait_exit(&mut child, Duration::from_secs(5)).is_some_and(|s| s.success()));
    std::mem::forget(stop_on_panic);
}

/// `zone-backup` / `zone-restore` while serving: a zone that takes
/// updates, one read from its file and one signed here are backed up (the
/// signed one with its keys); changes made since are undone by the
/// restore, and what cannot be done is refused with the reason.
#[test]
fn zone_backup_and_restore_bring_back_versions_and_keys() {
    let dir = TempDir::new("control-backup");
    let mut specs = String::new();
    for (name, extra) in [
        ("c.test.", "acl = [\"local\"]\n"),
        ("d.test.", ""),
        ("s.test.", "dnssec-signing = true\n"),
    ] {
        let file = dir.0.join(format!("{name}zone"));
        std::fs::write(&file, zone("192.0.2.1").replace("c.test.", name)).unwrap();
        specs.push_str(&format!(
            "\n[[zone]]\nname = \"{name}\"\nfile = \"{}\"\n{extra}",
            file.display()
        ));
    }
    let control = dir.0.join("ctl.sock");
    let port = 16724;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let config = dir.0.join("lode.toml");
    std::fs::write(
        &config,
        format!(
            "journal-dir = \"{}\"\n\n[[acl]]\nid = \"local\"\naddress = [\"127.0.0.1\"]\n\
             action = [\"update\"]\n{specs}",
            dir.0.join("journal").display()
        ),
    )
    .unwrap();
    let mut child = serve(&["--config", &config.display().to_string()], &control, port);
    let stop_on_panic = KillOnDrop(child.id());
    let backup = dir.0.join("backup");
    let b = format!("--dir={}", backup.display());
    let b = b.split_once('=').map(|(k, v)| [k, v]).unwrap();

    let out = says(&control, &["zone-backup", b[0], b[1]], "exit Some(0)");
    for z in ["c.test.", "d.test.", "s.test."] {
        assert!(
            out.contains(&format!("zone {z}: backed up: serial ")),
            "{out}"
        );
    }
    assert!(out.contains(" key files"), "the signed zone's keys: {out}");
    let manifest = std::fs::read_to_string(backup.join("lode-backup.txt")).unwrap();
    assert_eq!(
        manifest.lines().filter(|l| !l.starts_with('#')).count(),
        3,
        "{manifest}"
    );
    let keys = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('K'))
            .collect();
        v.sort();
        v
    };
    let key_dir = dir.0.join("journal/keys/s.test");
    assert_eq!(keys(&backup.join("keys/s.test")), keys(&key_dir));
    says(
        &control,
        &["zone-backup", b[0], b[1]],
        "not empty: back up into a new folder",
    );

    // Changes after the backup: an update, an edited file.
    let x = |addr| {
        let q = Query::new("x.c.test.", 1, 1).to_wire();
        Message::parse(&udp_exchange(addr, &q, Duration::from_secs(2)).unwrap()).rcode()
    };
    let taken = udp_exchange(addr, &update_with_edns(9), Duration::from_secs(5)).unwrap();
    assert_eq!(taken[3] & 0x0f, 0);
    assert_eq!(x(addr), 0, "x.c.test. added");
    let d_file = dir.0.join("d.test.zone");
    std::fs::write(&d_file, zone("192.0.2.7").replace("c.test.", "d.test.")).unwrap();
    says(&control, &["zone-reload", "d.test."], "reloaded");

    let out = says(&control, &["zone-restore", b[0], b[1]], "exit Some(0)");
    assert!(
        out.contains("zone c.test.: restored, serial 7 (the serial went back from 8"),
        "{out}"
    );
    assert!(out.contains("zone d.test.: restored: "), "{out}");
    assert!(out.contains("zone s.test.: restored, serial "), "{out}");
    assert_eq!(x(addr), 3, "x.c.test. gone again (NXDOMAIN)");
    assert!(std::fs::read_to_string(&d_file)
        .unwrap()
        .contains("192.0.2.1"));
    assert_eq!(keys(&backup.join("keys/s.test")), keys(&key_dir));
    says(
        &control,
        &["zone-restore", "e.test.", b[0], b[1]],
        "not in this backup",
    );

    let o = lode(&["stop"], &control);
    assert!(o.status.success(), "{}", text(&o));
    assert!(wait_exit(&mut child, Duration::from_secs(5)).is_some_and(|s| s.success()));
    std::mem::forget(stop_on_panic);
}
