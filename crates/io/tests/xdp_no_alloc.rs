//! The XDP worker loop allocates nothing per frame: with a counting global
//! allocator, hundreds of queries are answered over AF_XDP while no thread
//! of this process allocates. The queries come from a network namespace at
//! the other end of a veth pair (this binary run again there); the
//! interface XDP serves has no address, so the host's own network sees
//! nothing of it. Needs root; skips (saying why) without it, unless
//! `LODE_REQUIRE_XDP=1`.
//!
//! ```text
//!  this process: XdpServer on lxaN (no address) ◀── veth ──▶ lxbN 10.53.0.2/24 in namespace lode-xdpa-N:
//!                                                              this binary again, 500 queries to 10.53.0.1:5301
//! ```

use std::io::{BufRead, BufReader, Read};
use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::Duration;

use lode_io::xdp::{XdpConfig, XdpListen, XdpServer};
use lode_io::Client;

#[global_allocator]
static GLOBAL: lode_testalloc::Counting = lode_testalloc::Counting;

const PORT: u16 = 5301;
const CLIENT_ENV: &str = "LODE_XDP_NO_ALLOC_CLIENT";
const QUERIES: usize = 500;

fn echo(query: &[u8], out: &mut [u8], _client: &mut Client<'_>) -> usize {
    out[..query.len()].copy_from_slice(query);
    query.len()
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// The namespace (deleted, with the veth pair, when dropped).
struct Namespace(String);

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.0]);
    }
}

/// The client's end: `server_if` in this namespace (no address), the client
/// end in a new namespace with a static neighbour entry for 10.53.0.1.
fn setup(id: &str) -> Result<(Namespace, String), String> {
    let ns = Namespace(format!("lode-xdpa-{id}"));
    let (server_if, client_if) = (format!("lxa{id}"), format!("lxb{id}"));
    ip(&["netns", "add", &ns.0])?;
    ip(&[
        "link", "add", &server_if, "type", "veth", "peer", "name", &client_if, "netns", &ns.0,
    ])?;
    ip(&["link", "set", &server_if, "up"])?;
    let mac = std::fs::read_to_string(format!("/sys/class/net/{server_if}/address"))
        .map_err(|e| format!("{server_if}'s address: {e}"))?;
    for args in [
        vec!["link", "set", "lo", "up"],
        vec!["addr", "add", "10.53.0.2/24", "dev", &client_if],
        vec!["link", "set", &client_if, "up"],
        vec![
            "neigh",
            "add",
            "10.53.0.1",
            "lladdr",
            mac.trim(),
            "dev",
            &client_if,
            "nud",
            "permanent",
        ],
    ] {
        let mut all = vec!["-n", ns.0.as_str()];
        all.extend(args.iter().copied());
        ip(&all)?;
    }
    // The UDP checksums of the queries computed in full, not left to an
    // offload the veth never does (the XDP worker checks them).
    let ethtool = Command::new("ip")
        .args([
            "netns", "exec", &ns.0, "ethtool", "-K", &client_if, "tx", "off",
        ])
        .output()
        .map_err(|e| format!("ethtool: {e}"))?;
    if !ethtool.status.success() {
        return Err(format!(
            "ethtool -K {client_if} tx off: {}",
            String::from_utf8_lossy(&ethtool.stderr).trim()
        ));
    }
    Ok((ns, server_if))
}

/// The client, in its namespace: warms up, says so, then sends the queries
/// one by one and says how many were answered.
#[test]
fn client() {
    if std::env::var_os(CLIENT_ENV).is_none() {
        return;
    }
    let s = UdpSocket::bind("10.53.0.2:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let to = ("10.53.0.1", PORT);
    let query = [7u8; 64];
    let mut buf = [0u8; 512];
    let mut ask = || {
        s.send_to(&query, to).unwrap();
        matches!(s.recv_from(&mut buf), Ok((n, _)) if buf[..n] == query[..])
    };
    let warm = (0..50).filter(|_| ask()).count();
    println!("warm {warm}");
    std::thread::sleep(Duration::from_millis(300));
    let answered = (0..QUERIES).filter(|_| ask()).count();
    println!("done {answered}");
}

#[test]
fn xdp_workers_do_not_allocate_per_frame() {
    let why = if is_root() {
        let id = format!("{}", std::process::id() % 100_000);
        match setup(&id) {
            Ok(s) => Ok(s),
            Err(e) => Err(format!("cannot set up the veth pair: {e}")),
        }
    } else {
        Err("not root (XDP and network namespaces need it)".to_string())
    };
    let (ns, iface) = match why {
        Ok(s) => s,
        Err(why) => {
            assert!(std::env::var_os("LODE_REQUIRE_XDP").is_none(), "{why}");
            eprintln!("SKIP xdp_workers_do_not_allocate_per_frame: {why}");
            return;
        }
    };
    let config = XdpConfig {
        poll_interval: Duration::from_millis(50),
        ..XdpConfig::default()
    };
    let listen = [XdpListen {
        iface: iface.clone(),
        port: PORT,
    }];
    let server = XdpServer::start(&listen, &config, echo).expect("XDP starts");
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new("ip")
        .args(["netns", "exec", &ns.0])
        .arg(&exe)
        .args(["--exact", "client", "--nocapture", "--test-threads=1"])
        .env(CLIENT_ENV, "1")
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .expect("start the client");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    // libtest writes "test client ... " before the client's own words.
    while !line.contains("warm ") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the client ended");
    }
    assert!(
        line.trim_end().ends_with("warm 50"),
        "warm-up answers: {line}"
    );
    std::thread::sleep(Duration::from_millis(100));
    lode_testalloc::assert_installed();
    // Every thread of this process is counted; the client is another process.
    let mut buf = [0u8; 256];
    let (got, allocs) = lode_testalloc::count_all(|| {
        let mut got = 0;
        let inner = out.get_mut();
        loop {
            let n = inner.read(&mut buf[got..]).unwrap();
            got += n;
            if n == 0 || buf[..got].windows(5).any(|w| w == b"done ") && buf[got - 1] == b'\n' {
                return got;
            }
        }
    });
    let text = String::from_utf8_lossy(&buf[..got]).into_owned();
    assert!(
        text.contains(&format!("done {QUERIES}")),
        "answered over XDP: {text:?}"
    );
    assert_eq!(
        allocs, 0,
        "allocations while answering {QUERIES} queries over XDP"
    );
    let _ = child.wait();
    let stats = server.stats();
    assert!(stats.responses >= QUERIES as u64, "{stats:?}");
    assert_eq!(stats.bad_frames, 0, "{stats:?}");
    server.stop();
}
