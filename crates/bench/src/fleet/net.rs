//! The fleet's network: one bridge, one network namespace per server, a veth pair
//! from each namespace to the bridge; the bridge itself holds the prober's address
//! in the root namespace. Traffic stays on the bridge (no route, no NAT out).
//!
//! ```text
//!   root ns: lodefl0 (bridge, 10.53.0.200/24) ── prober, update sender, rate tester
//!      ├── lodefl-p  ══ eth0 10.53.0.1   in ns lodefl-p   (primary)
//!      ├── lodefl-s1 ══ eth0 10.53.0.11  in ns lodefl-s1  (secondary 1)
//!      └── lodefl-s2 ══ eth0 10.53.0.12  in ns lodefl-s2  (secondary 2) …
//! ```
//!
//! [`Plan`] is pure (names and addresses); [`Net`] makes it with `ip` and removes
//! everything it made when dropped, whatever happened meanwhile.

use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

use super::FleetError;

/// The bridge's name.
pub const BRIDGE: &str = "lodefl0";
/// The prefix every namespace and root-side veth name starts with.
pub const NS_PREFIX: &str = "lodefl-";
/// The fleet's /24: 10.53.0.0/24.
pub const NET: [u8; 3] = [10, 53, 0];
/// The prober's address (on the bridge, root namespace).
pub const PROBER: Ipv4Addr = Ipv4Addr::new(10, 53, 0, 200);
/// The primary's address.
pub const PRIMARY: Ipv4Addr = Ipv4Addr::new(10, 53, 0, 1);
/// Host part of the first secondary's address (10.53.0.11, .12, …).
pub const FIRST_SECONDARY: u8 = 11;
/// The PID of the fleet that owns the namespaces (a second run refuses to start).
pub const LOCK: &str = "/run/lode-bench-fleet.pid";
/// Most secondaries: addresses 11..=199 (200 is the prober's).
pub const MAX_SECONDARIES: usize = 189;

/// One host of the plan: a namespace, its address, the veth end on the bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// Namespace name (also the root-side veth's name; ≤ 15 characters).
    pub ns: String,
    /// Its address on the bridge's /24.
    pub addr: Ipv4Addr,
}

/// Names and addresses of a primary and `n` secondaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The primary's host.
    pub primary: Host,
    /// The secondaries' hosts, in order.
    pub secondaries: Vec<Host>,
}

impl Plan {
    /// The plan for `n` secondaries: primary `lodefl-p` at 10.53.0.1, secondary i
    /// (from 1) `lodefl-si` at 10.53.0.(10+i).
    pub fn new(n: usize) -> Result<Plan, FleetError> {
        if n > MAX_SECONDARIES {
            return Err(FleetError::Config(format!(
                "{n} secondaries: at most {MAX_SECONDARIES} fit in 10.53.0.11-199"
            )));
        }
        let secondaries = (0..n)
            .map(|i| Host {
                ns: format!("{NS_PREFIX}s{}", i + 1),
                addr: Ipv4Addr::new(NET[0], NET[1], NET[2], FIRST_SECONDARY + i as u8),
            })
            .collect();
        Ok(Plan {
            primary: Host {
                ns: format!("{NS_PREFIX}p"),
                addr: PRIMARY,
            },
            secondaries,
        })
    }

    /// Every host, the primary first.
    pub fn hosts(&self) -> impl Iterator<Item = &Host> {
        std::iter::once(&self.primary).chain(&self.secondaries)
    }

    /// The `ip` commands that make the plan (each an argument list, in order).
    pub fn setup_commands(&self) -> Vec<Vec<String>> {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let mut c = vec![
            s(&["link", "add", BRIDGE, "type", "bridge"]),
            s(&["addr", "add", &format!("{PROBER}/24"), "dev", BRIDGE]),
            s(&["link", "set", BRIDGE, "up"]),
        ];
        for h in self.hosts() {
            let ns = h.ns.as_str();
            c.push(s(&["netns", "add", ns]));
            c.push(s(&[
                "link", "add", ns, "type", "veth", "peer", "name", "eth0", "netns", ns,
            ]));
            c.push(s(&["link", "set", ns, "master", BRIDGE]));
            c.push(s(&["link", "set", ns, "up"]));
            c.push(s(&[
                "-n",
                ns,
                "addr",
                "add",
                &format!("{}/24", h.addr),
                "dev",
                "eth0",
            ]));
            c.push(s(&["-n", ns, "link", "set", "eth0", "up"]));
            c.push(s(&["-n", ns, "link", "set", "lo", "up"]));
        }
        c
    }
}

/// Runs `ip ARGS`; the error names the command and what `ip` said.
fn ip(args: &[String]) -> Result<(), FleetError> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| FleetError::Net(format!("ip {}: {e}", args.join(" "))))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(FleetError::Net(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Namespaces whose name starts with [`NS_PREFIX`] (left over from a run that was
/// killed with SIGKILL, or made now).
pub fn our_namespaces() -> Vec<String> {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(NS_PREFIX))
        .map(String::from)
        .collect()
}

/// Whether a link named `name` exists in the root namespace.
fn link_exists(name: &str) -> bool {
    Command::new("ip")
        .args(["link", "show", "dev", name])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Removes the bridge and every `lodefl-*` namespace (their veth pairs go with
/// them); nothing else is touched. Errors are ignored: this also runs on the way
/// out of a failed setup.
pub fn remove_all() {
    for ns in our_namespaces() {
        let _ = ip(&["netns".into(), "del".into(), ns.clone()]);
        // A root-side veth whose namespace end was already gone.
        if link_exists(&ns) {
            let _ = ip(&["link".into(), "del".into(), ns]);
        }
    }
    if link_exists(BRIDGE) {
        let _ = ip(&["link".into(), "del".into(), BRIDGE.into()]);
    }
}

/// The fleet's network, made; removed (namespaces, veths, bridge) when dropped.
#[derive(Debug)]
pub struct Net {
    /// What was made.
    pub plan: Plan,
}

impl Net {
    /// Makes `plan` (after removing leftovers of an earlier run that were not
    /// cleaned up, which only a SIGKILL leaves).
    pub fn create(plan: Plan) -> Result<Net, FleetError> {
        // One fleet at a time: another live run's namespaces are not leftovers.
        let me = std::process::id();
        if let Some(pid) = std::fs::read_to_string(LOCK)
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
        {
            if pid != me && std::path::Path::new(&format!("/proc/{pid}")).exists() {
                return Err(FleetError::Net(format!(
                    "another fleet (PID {pid}, {LOCK}) is running: one at a time"
                )));
            }
        }
        std::fs::write(LOCK, me.to_string())
            .map_err(|e| FleetError::io(std::path::Path::new(LOCK), e))?;
        if !our_namespaces().is_empty() || link_exists(BRIDGE) {
            super::say("removing a previous fleet's namespaces and bridge");
            remove_all();
        }
        // The guard exists before the first command: a failure half way is cleaned up.
        let net = Net { plan };
        for c in net.plan.setup_commands() {
            ip(&c)?;
        }
        Ok(net)
    }

    /// The argument list that runs `cmd` in `host`'s namespace.
    pub fn exec_in(host: &Host, cmd: &[String]) -> Vec<String> {
        let mut v = vec![
            "ip".to_string(),
            "netns".into(),
            "exec".into(),
            host.ns.clone(),
        ];
        v.extend(cmd.iter().cloned());
        v
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        remove_all();
        let _ = std::fs::remove_file(LOCK);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_names_and_addresses() {
        let p = Plan::new(3).expect("plan");
        assert_eq!(p.primary.ns, "lodefl-p");
        assert_eq!(p.primary.addr, Ipv4Addr::new(10, 53, 0, 1));
        let s: Vec<(&str, Ipv4Addr)> = p
            .secondaries
            .iter()
            .map(|h| (h.ns.as_str(), h.addr))
            .collect();
        assert_eq!(
            s,
            [
                ("lodefl-s1", Ipv4Addr::new(10, 53, 0, 11)),
                ("lodefl-s2", Ipv4Addr::new(10, 53, 0, 12)),
                ("lodefl-s3", Ipv4Addr::new(10, 53, 0, 13)),
            ]
        );
        assert_eq!(p.hosts().count(), 4);
    }

    #[test]
    fn plan_limits() {
        let p = Plan::new(MAX_SECONDARIES).expect("largest plan");
        let last = p.secondaries.last().expect("one");
        assert_eq!(last.addr, Ipv4Addr::new(10, 53, 0, 199));
        assert_ne!(last.addr, PROBER);
        // Interface names are at most 15 characters (IFNAMSIZ - 1).
        assert!(p
            .hosts()
            .all(|h| h.ns.len() <= 15 && h.ns.starts_with(NS_PREFIX)));
        assert!(Plan::new(MAX_SECONDARIES + 1).is_err());
    }

    #[test]
    fn setup_touches_only_our_names() {
        let p = Plan::new(2).expect("plan");
        let cmds = p.setup_commands();
        assert_eq!(cmds.len(), 3 + 3 * 7);
        for c in &cmds {
            // Every command names the bridge or one of our namespaces / veths.
            assert!(
                c.iter().any(|a| a == BRIDGE || a.starts_with(NS_PREFIX)),
                "{c:?}"
            );
        }
        assert!(cmds
            .iter()
            .any(|c| c.join(" ") == "addr add 10.53.0.200/24 dev lodefl0"));
        assert!(cmds
            .iter()
            .any(|c| c.join(" ") == "-n lodefl-s2 addr add 10.53.0.12/24 dev eth0"));
        let e = Net::exec_in(&p.primary, &["knotd".into()]);
        assert_eq!(e.join(" "), "ip netns exec lodefl-p knotd");
    }
}
