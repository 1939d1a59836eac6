//! Real interfaces for the tests of UDP over XDP: two network namespaces
//! joined by a veth pair, with IPv4 and IPv6 addresses, made with `ip` and
//! removed (with their interfaces) when dropped. A client inside the client
//! namespace is this test binary run again there (`ip netns exec`), doing the
//! exchanges of a job file: tests stay free of `setns` and `unsafe`.
//!
//! ```text
//!  namespace …-s: lode serve, SERVER_IF 10.53.0.1/24 fd53::1/64 ─ veth ─ CLIENT_IF 10.53.0.2/24 fd53::2/64 :namespace …-c
//!                                                                         └ the test binary again (NETNS_CLIENT_TEST), a job file in, answers out
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::*;

/// The test a binary using [`VethPair::exchange`] must define, calling
/// [`serve_client_job`] (it does nothing when run as a test).
pub const NETNS_CLIENT_TEST: &str = "netns_client";
const JOB_ENV: &str = "LODE_NETNS_CLIENT_JOB";

/// The server's addresses in its namespace (namespaces have their own
/// addresses and routes: fixed ones clash with nothing).
pub const SERVER_V4: Ipv4Addr = Ipv4Addr::new(10, 53, 0, 1);
/// The client's IPv4 address.
pub const CLIENT_V4: Ipv4Addr = Ipv4Addr::new(10, 53, 0, 2);
/// The server's IPv6 address.
pub const SERVER_V6: Ipv6Addr = Ipv6Addr::new(0xfd53, 0, 0, 0, 0, 0, 0, 1);
/// The client's IPv6 address.
pub const CLIENT_V6: Ipv6Addr = Ipv6Addr::new(0xfd53, 0, 0, 0, 0, 0, 0, 2);

/// Two namespaces and a veth pair between them; removed when dropped.
#[derive(Debug)]
pub struct VethPair {
    /// The server's namespace.
    pub server_ns: String,
    /// The client's namespace.
    pub client_ns: String,
    /// The server's end of the pair.
    pub server_if: String,
    /// The client's end.
    pub client_if: String,
}

fn run(args: &[&str]) -> Result<String, String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

static NEXT_PAIR: AtomicU32 = AtomicU32::new(0);

impl VethPair {
    /// Makes the pair; `Err` (why) where that cannot be done here: not
    /// root, no `ip`, no namespaces. The caller skips with that reason.
    pub fn new() -> Result<VethPair, String> {
        let n = NEXT_PAIR.fetch_add(1, Ordering::SeqCst);
        let id = format!("{}{n}", std::process::id() % 100_000);
        let pair = VethPair {
            server_ns: format!("lode-xdp-{id}-s"),
            client_ns: format!("lode-xdp-{id}-c"),
            server_if: format!("lxs{id}"),
            client_if: format!("lxc{id}"),
        };
        run(&["netns", "add", &pair.server_ns])?;
        // From here on, dropping the pair removes what was made.
        run(&["netns", "add", &pair.client_ns])?;
        let (s, c) = (&pair.server_ns, &pair.client_ns);
        let (si, ci) = (&pair.server_if, &pair.client_if);
        run(&[
            "link", "add", si, "netns", s, "type", "veth", "peer", "name", ci, "netns", c,
        ])?;
        for (ns, dev, v4, v6) in [(s, si, SERVER_V4, SERVER_V6), (c, ci, CLIENT_V4, CLIENT_V6)] {
            run(&["-n", ns, "link", "set", "lo", "up"])?;
            run(&["-n", ns, "addr", "add", &format!("{v4}/24"), "dev", dev])?;
            run(&[
                "-n",
                ns,
                "addr",
                "add",
                &format!("{v6}/64"),
                "dev",
                dev,
                "nodad",
            ])?;
            run(&["-n", ns, "link", "set", dev, "up"])?;
        }
        // The client's UDP checksums computed in full, not left to an
        // offload the veth never does: the XDP worker checks them.
        let ethtool = Command::new("ip")
            .args(["netns", "exec", c, "ethtool", "-K", ci, "tx", "off"])
            .output()
            .map_err(|e| format!("ethtool: {e}"))?;
        if !ethtool.status.success() {
            return Err(format!(
                "ethtool -K {ci} tx off: {}",
                String::from_utf8_lossy(&ethtool.stderr).trim()
            ));
        }
        Ok(pair)
    }

    /// `ip -n NS ARGS`.
    pub fn ip(&self, ns: &str, args: &[&str]) -> Result<String, String> {
        let mut all = vec!["-n", ns];
        all.extend_from_slice(args);
        run(&all)
    }

    /// A command run inside `ns` (`ip netns exec NS PROGRAM`).
    pub fn command(&self, ns: &str, program: &Path) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns]).arg(program);
        c
    }

    /// What `ip link show` says of the server's end (an attached XDP
    /// program shows as `xdp` with its id).
    pub fn server_link(&self) -> String {
        self.ip(&self.server_ns, &["link", "show", "dev", &self.server_if])
            .unwrap_or_else(|e| e)
    }

    /// Sends each `(job line kind, to, bytes)` from the client namespace,
    /// one after another, and returns each answer (`None`: none within
    /// `timeout`). Kinds: `udp` (a UDP socket; the answer is read back) and
    /// `raw` (`bytes` are a UDP header and payload sent as they are, bad
    /// checksum included, from a raw socket; nothing is read back).
    pub fn exchange(
        &self,
        jobs: &[(&str, SocketAddr, Vec<u8>)],
        timeout: Duration,
    ) -> Vec<Option<Vec<u8>>> {
        let dir = TempDir::new("netns-job");
        let job = dir.0.join("job");
        let mut text = format!("{}\n", timeout.as_millis());
        for (kind, to, bytes) in jobs {
            text.push_str(&format!("{kind} {to} {}\n", hex_of(bytes)));
        }
        std::fs::write(&job, text).expect("write the job");
        let exe = std::env::current_exe().expect("this test binary");
        let out = self
            .command(&self.client_ns, &exe)
            .args([
                "--exact",
                NETNS_CLIENT_TEST,
                "--nocapture",
                "--test-threads=1",
            ])
            .env(JOB_ENV, &job)
            .stdin(Stdio::null())
            .output()
            .expect("run the client in its namespace");
        let answers = std::fs::read_to_string(dir.0.join("answers")).unwrap_or_else(|e| {
            panic!(
                "the client in {} left no answers ({e}):\n{}{}",
                self.client_ns,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        let v: Vec<Option<Vec<u8>>> = answers
            .lines()
            .map(|l| (l != "-").then(|| bytes_of(l)))
            .collect();
        assert_eq!(v.len(), jobs.len(), "one answer line per job line");
        v
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        // Deleting a namespace deletes its interfaces, and the pair with them.
        let _ = run(&["netns", "del", &self.server_ns]);
        let _ = run(&["netns", "del", &self.client_ns]);
    }
}

fn hex_of(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn bytes_of(h: &str) -> Vec<u8> {
    (0..h.len() / 2)
        .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

/// The client side, in the client namespace: when this binary was started
/// by [`VethPair::exchange`], does the job and writes the answers beside it.
pub fn serve_client_job() {
    let Some(job) = std::env::var_os(JOB_ENV) else {
        return;
    };
    let job = PathBuf::from(job);
    let text = std::fs::read_to_string(&job).expect("read the job");
    let mut lines = text.lines();
    let timeout = Duration::from_millis(lines.next().and_then(|l| l.parse().ok()).unwrap_or(500));
    let mut answers = String::new();
    for line in lines {
        let mut w = line.split_whitespace();
        let (kind, to, bytes) = (w.next().unwrap(), w.next().unwrap(), w.next().unwrap_or(""));
        let to: SocketAddr = to.parse().expect("an address");
        let bytes = bytes_of(bytes);
        let answer = match kind {
            "udp" => udp_ask(to, &bytes, timeout),
            "raw" => {
                raw_send(to, &bytes);
                None
            }
            k => panic!("unknown job kind {k}"),
        };
        answers.push_str(&answer.map_or("-".to_string(), |a| hex_of(&a)));
        answers.push('\n');
    }
    std::fs::write(job.with_file_name("answers"), answers).expect("write the answers");
}

/// One datagram to `to` from a fresh socket; the first answer from `to`.
fn udp_ask(to: SocketAddr, msg: &[u8], timeout: Duration) -> Option<Vec<u8>> {
    let any: IpAddr = match to {
        SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let s = UdpSocket::bind((any, 0)).ok()?;
    s.send_to(msg, to).ok()?;
    let deadline = Instant::now() + timeout;
    let mut buf = vec![0u8; 65535];
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .ok()?;
        match s.recv_from(&mut buf) {
            Ok((n, from)) if from == to => return Some(buf[..n].to_vec()),
            Ok(_) => continue,
            Err(_) => return None,
        }
    }
}

/// A UDP header and payload sent as given (a raw socket: the kernel adds
/// only the IP header).
fn raw_send(to: SocketAddr, segment: &[u8]) {
    use socket2::{Domain, Protocol, SockAddr, Socket, Type};
    let domain = if to.is_ipv4() {
        Domain::IPV4
    } else {
        Domain::IPV6
    };
    let s = Socket::new(domain, Type::RAW, Some(Protocol::UDP)).expect("a raw socket");
    // The port is in the UDP header; raw sockets take none.
    let to = SocketAddr::new(to.ip(), 0);
    s.send_to(segment, &SockAddr::from(to)).expect("send raw");
    std::thread::sleep(Duration::from_millis(50));
}
