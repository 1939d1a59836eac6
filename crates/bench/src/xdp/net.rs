//! The XDP benchmark's wire: two network namespaces of this run joined by a
//! veth pair, made with `ip` and removed when dropped (and on the way out of
//! an error or Ctrl-C; a run killed with SIGKILL leaves them, and the next
//! run removes those whose process is gone).
//!
//! ```text
//!  lodexdp-PID-s: server on CPU 0, xbsPID 10.53.0.1 ══ veth ══ xbcPID 10.53.0.2 :lodexdp-PID-c, loader on CPU 1
//!                 napi/xbsPID-* thread on CPU 0               napi/xbcPID-* thread on CPU 1
//! ```
//!
//! Both ends poll with threaded NAPI (GRO on, `threaded` 1), each thread
//! pinned to its side's CPU: the server's receive path (its XDP program,
//! or the kernel's UDP stack) runs on CPU 0, in a thread whose time can be
//! read, and not on the CPU that happened to send the frame, as a veth does
//! by default. The client's checksums are computed in full (`tx off`): the
//! XDP servers check them.

use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

/// The prefix of this benchmark's namespace names.
pub const NS_PREFIX: &str = "lodexdp-";
/// The server's address.
pub const SERVER: Ipv4Addr = Ipv4Addr::new(10, 53, 0, 1);
/// The client's address.
pub const CLIENT: Ipv4Addr = Ipv4Addr::new(10, 53, 0, 2);

/// The names of one run's namespaces and interfaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// The server's namespace.
    pub server_ns: String,
    /// The client's namespace.
    pub client_ns: String,
    /// The server's end of the veth pair.
    pub server_if: String,
    /// The client's end.
    pub client_if: String,
}

impl Names {
    /// The names for process `pid` (interface names stay within 15 bytes).
    pub fn of(pid: u32) -> Names {
        Names {
            server_ns: format!("{NS_PREFIX}{pid}-s"),
            client_ns: format!("{NS_PREFIX}{pid}-c"),
            server_if: format!("xbs{pid}"),
            client_if: format!("xbc{pid}"),
        }
    }

    /// The commands that make the pair: `ip` argument lists, then
    /// commands run in a namespace (`ip netns exec NS …`).
    pub fn setup_commands(&self) -> Vec<Vec<String>> {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let (sn, cn, si, ci) = (
            self.server_ns.as_str(),
            self.client_ns.as_str(),
            self.server_if.as_str(),
            self.client_if.as_str(),
        );
        let mut c = vec![
            s(&["ip", "netns", "add", sn]),
            s(&["ip", "netns", "add", cn]),
            s(&[
                "ip", "link", "add", si, "netns", sn, "type", "veth", "peer", "name", ci, "netns",
                cn,
            ]),
        ];
        for (ns, dev, addr) in [(sn, si, SERVER), (cn, ci, CLIENT)] {
            c.push(s(&["ip", "-n", ns, "link", "set", "lo", "up"]));
            c.push(s(&[
                "ip",
                "-n",
                ns,
                "addr",
                "add",
                &format!("{addr}/24"),
                "dev",
                dev,
            ]));
            c.push(s(&["ip", "-n", ns, "link", "set", dev, "up"]));
            c.push(s(&[
                "ip", "netns", "exec", ns, "ethtool", "-K", dev, "gro", "on",
            ]));
            let threaded = format!("echo 1 > /sys/class/net/{dev}/threaded");
            c.push(s(&["ip", "netns", "exec", ns, "sh", "-c", &threaded]));
        }
        c.push(s(&[
            "ip", "netns", "exec", cn, "ethtool", "-K", ci, "tx", "off",
        ]));
        c
    }
}

/// Runs `args` (program first); the error names the command and what it said.
pub(super) fn run(args: &[String]) -> Result<String, String> {
    let out = Command::new(&args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!(
            "{}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The PID in a namespace name of this benchmark (`lodexdp-PID-s`).
pub fn owner(ns: &str) -> Option<u32> {
    ns.strip_prefix(NS_PREFIX)?.split_once('-')?.0.parse().ok()
}

/// Removes namespaces of earlier runs whose process is gone.
fn remove_leftovers() {
    let Ok(list) = run(&["ip".into(), "netns".into(), "list".into()]) else {
        return;
    };
    for ns in list.lines().filter_map(|l| l.split_whitespace().next()) {
        if let Some(pid) = owner(ns) {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                super::say(&format!("removing namespace {ns} of an earlier run"));
                let _ = run(&["ip".into(), "netns".into(), "del".into(), ns.into()]);
            }
        }
    }
}

/// The pair, made; removed with its namespaces when dropped.
#[derive(Debug)]
pub struct Pair {
    /// What was made.
    pub names: Names,
}

impl Pair {
    /// Makes the namespaces and the pair of this process.
    pub fn create() -> Result<Pair, String> {
        remove_leftovers();
        // The guard exists before the first command: a failure half way is cleaned up.
        let pair = Pair {
            names: Names::of(std::process::id()),
        };
        for c in pair.names.setup_commands() {
            run(&c)?;
        }
        Ok(pair)
    }

    /// `cmd` run in namespace `ns` (`ip netns exec NS cmd…`).
    pub fn exec_in(ns: &str, cmd: &[String]) -> Vec<String> {
        let mut v: Vec<String> = ["ip", "netns", "exec", ns].map(String::from).to_vec();
        v.extend(cmd.iter().cloned());
        v
    }

    /// The NAPI threads of interface `iface` (`napi/IFACE-N`).
    pub fn napi_threads(iface: &str) -> Vec<u32> {
        let prefix = format!("napi/{iface}-");
        let mut v = Vec::new();
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if std::fs::read_to_string(e.path().join("comm"))
                .is_ok_and(|c| c.trim_end().starts_with(&prefix))
            {
                v.push(pid);
            }
        }
        v
    }

    /// Places the NAPI threads as `at` says (they may be made anew when an
    /// XDP program is attached: placed again before each measurement).
    pub fn pin_napi(&self, at: NapiPlacement) -> Result<(), String> {
        pin_napi(&self.names, at)
    }
}

/// Where the pair's NAPI threads run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NapiPlacement {
    /// The server end's CPU (the server's).
    pub server_cpu: usize,
    /// The client end's CPU (the loaders').
    pub client_cpu: usize,
    /// The server end's nice value (0: as the kernel makes it; 19: the
    /// server's threads before its receive thread, as a NIC that drops in
    /// hardware when its ring is full).
    pub server_nice: i32,
}

/// [`Pair::pin_napi`] by names (for a thread that does not own the pair).
pub fn pin_napi(names: &Names, at: NapiPlacement) -> Result<(), String> {
    for (iface, cpu, nice) in [
        (&names.server_if, at.server_cpu, at.server_nice),
        (&names.client_if, at.client_cpu, 0),
    ] {
        for pid in Pair::napi_threads(iface) {
            run(&[
                "taskset".into(),
                "-pc".into(),
                cpu.to_string(),
                pid.to_string(),
            ])?;
            if nice != 0 {
                run(&[
                    "renice".into(),
                    "-n".into(),
                    nice.to_string(),
                    "-p".into(),
                    pid.to_string(),
                ])?;
            }
        }
    }
    Ok(())
}

impl Pair {
    /// Removes XDP programs left attached through netlink to the server's
    /// end (Knot's stays after its process) or the client's (kxdpgun's);
    /// whether there was one. Programs held by a BPF link stay.
    pub fn clear_xdp(&self, server: bool, client: bool) -> bool {
        let n = &self.names;
        let mut found = false;
        for (on, ns, dev) in [
            (server, &n.server_ns, &n.server_if),
            (client, &n.client_ns, &n.client_if),
        ] {
            let ip = |args: &[&str]| {
                let mut v: Vec<String> = vec!["ip".into(), "-n".into(), ns.clone()];
                v.extend(args.iter().map(|a| a.to_string()));
                v.push(dev.clone());
                run(&v)
            };
            if on && ip(&["link", "show", "dev"]).is_ok_and(|t| t.contains("prog/xdp")) {
                found = true;
                let v = ["ip", "-n", ns, "link", "set", "dev", dev, "xdp", "off"].map(String::from);
                let _ = run(&v);
            }
        }
        found
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        // Deleting a namespace deletes its end of the pair, and the pair with it.
        for ns in [&self.names.server_ns, &self.names.client_ns] {
            let _ = run(&["ip".into(), "netns".into(), "del".into(), ns.clone()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_this_runs_and_short() {
        let n = Names::of(4_194_304);
        assert_eq!(n.server_ns, "lodexdp-4194304-s");
        assert!(n.server_if.len() <= 15 && n.client_if.len() <= 15);
        assert_eq!(owner(&n.client_ns), Some(4_194_304));
        assert_eq!(owner("lodefl-p"), None);
        let cmds = n.setup_commands();
        // Every command names one of this run's namespaces or interfaces.
        for c in &cmds {
            assert!(
                c.iter()
                    .any(|a| a.contains("4194304") || a.contains(&n.server_if)),
                "{c:?}"
            );
        }
        let joined: Vec<String> = cmds.iter().map(|c| c.join(" ")).collect();
        assert!(joined.contains(&format!(
            "ip netns exec lodexdp-4194304-c ethtool -K {} tx off",
            n.client_if
        )));
        assert!(joined
            .iter()
            .any(|c| c.ends_with("echo 1 > /sys/class/net/xbs4194304/threaded")));
    }
}
