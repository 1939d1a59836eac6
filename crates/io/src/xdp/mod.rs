//! UDP over AF_XDP (Knot's `xdp.listen`): an XDP program on each listed
//! interface hands UDP datagrams to the listened ports, DNS queries only, to
//! an AF_XDP socket per receive queue; one worker per queue checks each
//! frame (lengths, checksums), calls the same handler as the UDP transport
//! and writes its answer into a transmit frame with the headers swapped.
//! Everything else goes on to the kernel's network stack.
//!
//! ```text
//!  NIC queue q ─▶ XDP program ─┬ DNS query to a listened port ─▶ XSKMAP[q] ─▶ worker q: parse ─▶ handler ─▶ answer frame ─▶ tx
//!                              └ anything else ─▶ kernel stack (ARP, NDP, TCP, UPDATE, NOTIFY, …)
//! ```
//!
//! The program is attached with a BPF link: the kernel detaches it when the
//! link's last descriptor closes, so it goes with the process however that
//! ends (`kill -9` included). Nothing is allocated, and no lock taken, per
//! frame: frames live in the sockets' UMEM, set up once.

mod bpf;
mod echo;
mod frame;
mod xsk;

use std::fmt;
use std::io;
use std::os::fd::OwnedFd;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use echo::{Echo, XdpPass};
pub use xsk::{Served, XskConfig, XskSocket};

use crate::workers::Workers;
use crate::{Client, Handler, IoError};

/// One `IFACE@PORT` of `listen-xdp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdpListen {
    /// The interface's name.
    pub iface: String,
    /// The UDP port answered on.
    pub port: u16,
}

impl XdpListen {
    /// Parses `IFACE@PORT` (a bare `IFACE` means port 53).
    pub fn parse(s: &str) -> Result<XdpListen, String> {
        let (iface, port) = match s.rsplit_once('@') {
            Some((i, p)) => (
                i,
                p.parse::<u16>()
                    .ok()
                    .filter(|&p| p != 0)
                    .ok_or_else(|| format!("listen-xdp {s:?}: {p:?} is not a port (1-65535)"))?,
            ),
            None => (s, 53),
        };
        if iface.is_empty() || iface.len() >= libc::IFNAMSIZ || iface.contains(['/', ' ']) {
            return Err(format!(
                "listen-xdp {s:?}: {iface:?} is not an interface name (IFACE@PORT, e.g. eth0@53)"
            ));
        }
        Ok(XdpListen {
            iface: iface.to_string(),
            port,
        })
    }
}

impl fmt::Display for XdpListen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.iface, self.port)
    }
}

/// Settings of the XDP transport.
#[derive(Debug, Clone)]
pub struct XdpConfig {
    /// Largest answer payload (the UDP answer size); also bounded by the
    /// interface's MTU and the frame size.
    pub max_response: usize,
    /// Frames served per wake-up.
    pub batch: u32,
    /// How long a worker waits for a frame before checking the stop flag.
    pub poll_interval: Duration,
    /// Each socket's frames and rings.
    pub xsk: XskConfig,
    /// Copy mode even where the driver could do zero-copy.
    pub force_copy: bool,
    /// Ask the routing table for each answer's way back (Knot's
    /// `xdp.route-check`): answers leaving by another interface take the
    /// socket path, those to unreachable addresses are dropped, the next
    /// hop's MAC address is the answer's destination.
    pub route_check: bool,
    /// Preferred busy polling of every socket (Knot's `xdp.busypoll-budget`
    /// and `busypoll-timeout`); None: the kernel receives on its own.
    pub busy_poll: Option<BusyPoll>,
}

/// Preferred busy polling: see [`XskSocket::busy_poll`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BusyPoll {
    /// Frames the device's receive processing may take per busy poll.
    pub budget: u16,
    /// How long one busy poll may wait for frames, µs.
    pub timeout_us: u32,
}

/// What the device needs for preferred busy polling to hold the kernel's
/// own receive processing back: `napi_defer_hard_irqs` and
/// `gro_flush_timeout` (ns) both above 0, as Knot's documentation of
/// `busypoll-budget` asks. None when they are; else the warning to log.
fn busy_poll_device_hint(iface: &str, defer: Option<u64>, flush_ns: Option<u64>) -> Option<String> {
    if defer.unwrap_or(0) > 0 && flush_ns.unwrap_or(0) > 0 {
        return None;
    }
    let show = |v: Option<u64>| v.map_or("unknown".to_string(), |v| v.to_string());
    Some(format!(
        "xdp-busypoll-budget: {iface} has napi_defer_hard_irqs {} and gro_flush_timeout {}: the \
         kernel keeps receiving on its own beside the workers; set both, e.g. `echo 2 > \
         /sys/class/net/{iface}/napi_defer_hard_irqs` and `echo 200000 > \
         /sys/class/net/{iface}/gro_flush_timeout`",
        show(defer),
        show(flush_ns)
    ))
}

/// Where the interface receives in kernel threads (threaded NAPI: its
/// `threaded` is 1), what an operator should know: a thread that shares a
/// CPU with a worker takes that CPU from the answers under a flood, half of
/// it as measured on veth, unless it runs after the workers or elsewhere.
/// None otherwise.
fn threaded_napi_hint(iface: &str, threaded: Option<u64>) -> Option<String> {
    (threaded? > 0).then(|| {
        format!(
            "{iface} receives in kernel threads (threaded NAPI, named napi/{iface}-N): one \
             that shares a CPU with an XDP worker takes that CPU from the answers under a \
             flood; give them other CPUs (taskset -pc) or nice 19 (renice 19 -p PID), and \
             a flood is dropped at receive instead"
        )
    })
}

/// A number in a file of /sys/class/net/IFACE/.
fn device_value(iface: &str, name: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/sys/class/net/{iface}/{name}"))
        .ok()
        .and_then(|t| t.trim().parse().ok())
}

impl Default for XdpConfig {
    fn default() -> Self {
        XdpConfig {
            max_response: 4096,
            batch: 64,
            poll_interval: Duration::from_millis(200),
            xsk: XskConfig::default(),
            force_copy: false,
            route_check: false,
            busy_poll: None,
        }
    }
}

/// The XDP program of one interface: an XSKMAP, the program redirecting to
/// it, and (once attached) the link holding it on the interface.
#[derive(Debug)]
pub struct XdpProgram {
    map: bpf::XskMap,
    prog: bpf::Program,
    link: Option<OwnedFd>,
}

impl XdpProgram {
    /// Loads a program sending DNS queries to `ports` to the sockets of
    /// queues `0..queues` (once [`XdpProgram::insert`]ed), asking the
    /// routing table first with `route_check`.
    pub fn load(ports: &[u16], queues: u32, route_check: bool) -> io::Result<XdpProgram> {
        let map = bpf::XskMap::new(queues)?;
        let insns = bpf::program(ports, map.raw_fd(), route_check);
        let prog = bpf::Program::load(&insns, "lode_dns")?;
        Ok(XdpProgram {
            map,
            prog,
            link: None,
        })
    }

    /// Sends queue `queue`'s frames to `socket`.
    pub fn insert(&self, queue: u32, socket: &XskSocket) -> io::Result<()> {
        self.map.set(queue, socket.raw_fd())
    }

    /// Attaches the program to interface `ifindex` (detached when this is
    /// dropped, or when the process ends).
    pub fn attach(&mut self, ifindex: u32) -> io::Result<()> {
        self.link = Some(self.prog.attach(ifindex)?);
        Ok(())
    }
}

/// Counters of one worker, alone in its cache line; written only by it.
#[derive(Debug, Default)]
#[repr(align(64))]
struct WorkerCounters {
    queries: AtomicU64,
    responses: AtomicU64,
    dropped: AtomicU64,
    bad_frames: AtomicU64,
    kernel_drops: AtomicU64,
}

/// Totals over all XDP workers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XdpStats {
    /// Queries received (frames that passed the checks).
    pub queries: u64,
    /// Answers sent.
    pub responses: u64,
    /// Queries not answered (handler returned 0, no transmit frame free).
    pub dropped: u64,
    /// Frames dropped for a wrong checksum or length (not counted as queries).
    pub bad_frames: u64,
    /// Frames the kernel dropped on the sockets (rings full), as each
    /// worker last read it: every 4096 batches, and when idle.
    pub kernel_drops: u64,
}

/// A shared, read-only view of the workers' counters.
#[derive(Debug, Clone)]
pub struct XdpCounters(Arc<[WorkerCounters]>);

impl XdpCounters {
    /// Sums the per-worker counters.
    pub fn read(&self) -> XdpStats {
        let mut s = XdpStats::default();
        for c in self.0.iter() {
            s.queries += c.queries.load(Ordering::Relaxed);
            s.responses += c.responses.load(Ordering::Relaxed);
            s.dropped += c.dropped.load(Ordering::Relaxed);
            s.bad_frames += c.bad_frames.load(Ordering::Relaxed);
            s.kernel_drops += c.kernel_drops.load(Ordering::Relaxed);
        }
        s
    }
}

/// A running XDP transport: stops its workers and detaches its programs on
/// [`XdpServer::stop`] or drop.
#[derive(Debug)]
pub struct XdpServer {
    workers: Workers,
    counters: Arc<[WorkerCounters]>,
    /// Dropped after the workers stopped: the links close, the programs go.
    programs: Vec<XdpProgram>,
    /// What runs, for the log: `iface@port: N queues, copy|zero-copy`.
    summary: Vec<String>,
}

/// What an error of a step of the set-up likely means, for its message.
pub(crate) fn hint(what: &str, e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            " (needs root, or CAP_NET_ADMIN with CAP_BPF or CAP_SYS_ADMIN, and CAP_NET_RAW)"
        }
        Some(libc::ENOBUFS) | Some(libc::ENOMEM) => {
            " (the frames are locked memory, 8 MiB per queue: raise RLIMIT_MEMLOCK or grant CAP_IPC_LOCK)"
        }
        Some(libc::EBUSY) | Some(libc::EEXIST) => {
            " (another XDP program or AF_XDP socket holds the interface: another server?)"
        }
        Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) if what == "attach" => {
            " (the driver or the kernel does not support XDP here)"
        }
        _ => "",
    }
}

fn xdp_error(iface: &str, what: &str, e: io::Error) -> IoError {
    IoError::Xdp {
        iface: iface.to_string(),
        reason: format!("{what}: {e}{}", hint(what, &e)),
    }
}

/// The interface's index (`if_nametoindex`).
fn ifindex(iface: &str) -> io::Result<u32> {
    let name = std::ffi::CString::new(iface)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in the name"))?;
    // SAFETY: a NUL-terminated string that lives across the call.
    let i = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if i == 0 {
        return Err(io::Error::new(io::ErrorKind::NotFound, "no such interface"));
    }
    Ok(i)
}

/// An `ifreq` (linux/if.h) holding a pointer (SIOCETHTOOL).
#[repr(C)]
struct IfReqPtr {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 16],
}

/// An `ifreq` holding an int (SIOCGIFMTU).
#[repr(C)]
struct IfReqInt {
    name: [libc::c_char; libc::IFNAMSIZ],
    value: libc::c_int,
    _pad: [u8; 20],
}

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const SIOCGIFMTU: libc::c_ulong = 0x8921;
const ETHTOOL_GCHANNELS: u32 = 0x3c;

fn ifr_name(iface: &str) -> [libc::c_char; libc::IFNAMSIZ] {
    let mut name = [0 as libc::c_char; libc::IFNAMSIZ];
    for (d, b) in name.iter_mut().zip(iface.bytes().take(libc::IFNAMSIZ - 1)) {
        *d = b as libc::c_char;
    }
    name
}

/// `ioctl(fd, request, ifr)` on a datagram socket of our own (in the
/// process's network namespace, whatever /sys shows).
fn if_ioctl<T>(request: libc::c_ulong, ifr: &mut T) -> io::Result<()> {
    // SAFETY: socket(2) with constant arguments; a new descriptor.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: just created, owned by nobody else.
    let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    // SAFETY: `ifr` is a live #[repr(C)] struct ifreq (40 bytes, as the
    // kernel reads and writes it) for `request`; a pointer inside it
    // points to a buffer the caller keeps alive for the call.
    let r = unsafe {
        libc::ioctl(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            request as _,
            ifr as *mut T as *mut libc::c_void,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The interface's receive queues: the driver's channels (ETHTOOL_GCHANNELS,
/// the larger of its receive and combined counts), else those sysfs lists,
/// else 1.
fn rx_queues(iface: &str) -> u32 {
    // struct ethtool_channels: cmd, max_rx, max_tx, max_other,
    // max_combined, rx_count, tx_count, other_count, combined_count.
    let mut ch = [0u32; 9];
    ch[0] = ETHTOOL_GCHANNELS;
    let mut ifr = IfReqPtr {
        name: ifr_name(iface),
        data: ch.as_mut_ptr().cast(),
        _pad: [0; 16],
    };
    let by_driver = match if_ioctl(SIOCETHTOOL, &mut ifr) {
        Ok(()) => ch[5].max(ch[8]),
        Err(_) => 0,
    };
    if by_driver > 0 {
        return by_driver;
    }
    let dir = format!("/sys/class/net/{iface}/queues");
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
                .count() as u32
        })
        .unwrap_or(0)
        .max(1)
}

/// The route check's lookups start from the loopback interface, which must
/// forward (else every answer would be aborted): Ok, or what to set.
fn loopback_forwarding() -> Result<(), String> {
    let off: Vec<&str> = ["ipv4", "ipv6"]
        .into_iter()
        .filter(|family| {
            // A family the kernel does not have (IPv6 disabled) needs nothing.
            std::fs::read_to_string(format!("/proc/sys/net/{family}/conf/lo/forwarding"))
                .is_ok_and(|v| v.trim() != "1")
        })
        .collect();
    if off.is_empty() {
        return Ok(());
    }
    let sysctls: Vec<String> = off
        .iter()
        .map(|f| format!("net.{f}.conf.lo.forwarding=1"))
        .collect();
    Err(format!(
        "xdp-route-check needs forwarding on the loopback interface, as Knot's route-check \
         does (the routing lookups start there): sysctl -w {}",
        sysctls.join(" ")
    ))
}

/// The interface's MTU (SIOCGIFMTU; 1500 when it cannot be read).
fn mtu(iface: &str) -> usize {
    let mut ifr = IfReqInt {
        name: ifr_name(iface),
        value: 0,
        _pad: [0; 20],
    };
    match if_ioctl(SIOCGIFMTU, &mut ifr) {
        Ok(()) if ifr.value >= 576 => ifr.value as usize,
        _ => 1500,
    }
}

impl XdpServer {
    /// Loads and attaches a program on each interface of `listen`, opens a
    /// socket per receive queue and starts a worker per socket, each with
    /// its own clone of `handler`. Fails (with nothing left attached) when
    /// an interface is missing, XDP cannot attach, or a socket cannot be
    /// set up.
    pub fn start<H: Handler>(
        listen: &[XdpListen],
        config: &XdpConfig,
        handler: H,
    ) -> Result<XdpServer, IoError> {
        // Ports by interface, in the order given.
        let mut ifaces: Vec<(String, Vec<u16>)> = Vec::new();
        for l in listen {
            match ifaces.iter_mut().find(|(i, _)| *i == l.iface) {
                Some((_, ports)) if !ports.contains(&l.port) => ports.push(l.port),
                Some(_) => {}
                None => ifaces.push((l.iface.clone(), vec![l.port])),
            }
        }
        if config.route_check {
            if let Some((iface, _)) = ifaces.first() {
                loopback_forwarding().map_err(|reason| IoError::Xdp {
                    iface: iface.clone(),
                    reason,
                })?;
            }
        }
        let mut programs = Vec::new();
        let mut sockets = Vec::new();
        let mut summary = Vec::new();
        for (iface, ports) in &ifaces {
            let index = ifindex(iface).map_err(|e| xdp_error(iface, "interface", e))?;
            let queues = rx_queues(iface);
            let mut program = XdpProgram::load(ports, queues, config.route_check)
                .map_err(|e| xdp_error(iface, "program", e))?;
            let mtu = mtu(iface);
            let mut zero_copy = false;
            for q in 0..queues {
                let mut socket = XskSocket::open(index, q, config.xsk, config.force_copy)
                    .map_err(|e| xdp_error(iface, &format!("queue {q}"), e))?;
                if let Some(b) = config.busy_poll {
                    socket
                        .busy_poll(b.timeout_us, b.budget)
                        .map_err(|e| xdp_error(iface, &format!("queue {q}"), e))?;
                }
                program
                    .insert(q, &socket)
                    .map_err(|e| xdp_error(iface, "XSKMAP", e))?;
                zero_copy |= socket.zero_copy();
                sockets.push((iface.clone(), q, mtu, socket));
            }
            program
                .attach(index)
                .map_err(|e| xdp_error(iface, "attach", e))?;
            if let Some(hint) = threaded_napi_hint(iface, device_value(iface, "threaded")) {
                tracing::info!("{hint}");
            }
            if config.busy_poll.is_some() {
                let (defer, flush) = (
                    device_value(iface, "napi_defer_hard_irqs"),
                    device_value(iface, "gro_flush_timeout"),
                );
                if let Some(w) = busy_poll_device_hint(iface, defer, flush) {
                    tracing::warn!("{w}");
                }
            }
            programs.push(program);
            let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
            summary.push(format!(
                "{iface} port {}: {queues} queue{}, {}{}{}",
                ports.join(" "),
                if queues == 1 { "" } else { "s" },
                if zero_copy { "zero-copy" } else { "copy mode" },
                if config.route_check {
                    ", route check"
                } else {
                    ""
                },
                match config.busy_poll {
                    Some(b) => format!(", busy polling (budget {}, {} µs)", b.budget, b.timeout_us),
                    None => String::new(),
                }
            ));
        }
        let counters: Arc<[WorkerCounters]> = (0..sockets.len())
            .map(|_| WorkerCounters::default())
            .collect();
        // Dropped on an error: the workers already started stop.
        let mut threads = Workers::new("XDP");
        for (i, (iface, queue, mtu, socket)) in sockets.into_iter().enumerate() {
            let worker = Worker {
                socket,
                handler: handler.clone(),
                stop: threads.flag(),
                counters: counters.clone(),
                index: i,
                mtu,
                config: config.clone(),
            };
            threads.spawn(format!("lode-xdp-{iface}-{queue}"), move || worker.run())?;
        }
        Ok(XdpServer {
            workers: threads,
            counters,
            programs,
            summary,
        })
    }

    /// One line per interface: its ports, queues and mode.
    pub fn summary(&self) -> &[String] {
        &self.summary
    }

    /// Sums the per-worker counters.
    pub fn stats(&self) -> XdpStats {
        self.counters().read()
    }

    /// A handle on the counters that outlives borrows of the server.
    pub fn counters(&self) -> XdpCounters {
        XdpCounters(self.counters.clone())
    }

    /// Stops the workers, waits for them and detaches the programs.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.workers.stop();
        self.programs.clear();
    }
}

impl Drop for XdpServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Batches between two reads of the sockets' drop counts.
const DROPS_EVERY: u32 = 4096;

struct Worker<H> {
    socket: XskSocket,
    handler: H,
    stop: Arc<AtomicBool>,
    counters: Arc<[WorkerCounters]>,
    index: usize,
    mtu: usize,
    config: XdpConfig,
}

impl<H: Handler> Worker<H> {
    fn run(mut self) {
        let (mut queries, mut responses, mut dropped, mut bad) = (0u64, 0u64, 0u64, 0u64);
        let mut batches = 0u32;
        // Busy polling needs the NAPI id the first frames give the socket.
        let mut napi_checked = self.config.busy_poll.is_none();
        let c = &self.counters[self.index];
        while !self.stop.load(Ordering::Relaxed) {
            match self.socket.wait(self.config.poll_interval) {
                Ok(true) => {}
                Ok(false) => {
                    self.socket.flush();
                    c.kernel_drops
                        .store(self.socket.kernel_drops(), Ordering::Relaxed);
                    continue;
                }
                Err(e) => {
                    tracing::warn!("xdp worker {}: poll failed: {e}", self.index);
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            }
            let handler = &mut self.handler;
            let (max_response, mtu, index) = (self.config.max_response, self.mtu, self.index);
            let served = self.socket.serve(self.config.batch, |rx, out| {
                let q = match frame::parse(rx) {
                    Ok(q) => q,
                    Err(_) => {
                        bad += 1;
                        return 0;
                    }
                };
                queries += 1;
                let at = frame::begin_answer(rx, &q, out);
                // The answer fits the frame, the MTU and the UDP answer size.
                let room = (out.len() - at)
                    .min(mtu + frame::ETH - at)
                    .min(max_response);
                let mut client = Client::xdp(q.peer, Some(q.local));
                let query = &rx[q.payload.clone()];
                let payload = &mut out[at..at + room];
                // A panicking handler costs one query, not the worker.
                let n = match panic::catch_unwind(AssertUnwindSafe(|| {
                    handler(query, payload, &mut client)
                })) {
                    Ok(n) => n.min(room),
                    Err(_) => {
                        tracing::error!(
                            "xdp worker {index}: the handler panicked on a query from {}",
                            q.peer
                        );
                        0
                    }
                };
                if n == 0 {
                    dropped += 1;
                    return 0;
                }
                frame::finish(out, &q, n)
            });
            if !napi_checked && served.received > 0 {
                napi_checked = true;
                match self.socket.napi_id() {
                    Some(id) => {
                        tracing::debug!("xdp worker {}: busy polling NAPI {id}", self.index)
                    }
                    None => tracing::warn!(
                        "xdp worker {}: xdp-busypoll-budget has no effect here: the driver \
                         ties no NAPI instance to the AF_XDP socket for it to poll (veth does \
                         not), so the kernel keeps receiving on its own",
                        self.index
                    ),
                }
            }
            responses += u64::from(served.answered);
            dropped += u64::from(served.no_frame);
            c.queries.store(queries, Ordering::Relaxed);
            c.responses.store(responses, Ordering::Relaxed);
            c.dropped.store(dropped, Ordering::Relaxed);
            c.bad_frames.store(bad, Ordering::Relaxed);
            // One system call in DROPS_EVERY batches (and on every idle wake-up).
            batches = batches.wrapping_add(1);
            if batches.is_multiple_of(DROPS_EVERY) {
                c.kernel_drops
                    .store(self.socket.kernel_drops(), Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interfaces_are_asked_of_the_kernel() {
        assert_eq!(std::mem::size_of::<IfReqPtr>(), 40, "struct ifreq");
        assert_eq!(std::mem::size_of::<IfReqInt>(), 40, "struct ifreq");
        // Loopback: one queue (no channels: sysfs or the default), a large MTU.
        assert!(rx_queues("lo") >= 1);
        let mut ifr = IfReqInt {
            name: ifr_name("lo"),
            value: 0,
            _pad: [0; 20],
        };
        if_ioctl(SIOCGIFMTU, &mut ifr).expect("SIOCGIFMTU on lo");
        assert!(ifr.value >= 1500, "lo's MTU {}", ifr.value);
        assert_eq!(mtu("lode-nosuch0"), 1500);
    }

    #[test]
    fn busy_polling_asks_for_the_device_settings_it_needs() {
        assert_eq!(busy_poll_device_hint("eth0", Some(2), Some(200_000)), None);
        for (defer, flush) in [(Some(0), Some(200_000)), (Some(2), Some(0)), (None, None)] {
            let w = busy_poll_device_hint("eth0", defer, flush).expect("a warning");
            assert!(
                w.contains("/sys/class/net/eth0/napi_defer_hard_irqs"),
                "{w}"
            );
            assert!(w.contains("/sys/class/net/eth0/gro_flush_timeout"), "{w}");
        }
        let w = busy_poll_device_hint("eth0", None, Some(0)).expect("a warning");
        assert!(
            w.contains("napi_defer_hard_irqs unknown and gro_flush_timeout 0"),
            "{w}"
        );
    }

    #[test]
    fn threaded_receive_is_pointed_out() {
        assert_eq!(threaded_napi_hint("eth0", Some(0)), None);
        assert_eq!(threaded_napi_hint("eth0", None), None);
        let h = threaded_napi_hint("eth0", Some(1)).expect("a hint");
        assert!(h.contains("napi/eth0-N"), "{h}");
        assert!(h.contains("renice 19"), "{h}");
    }

    #[test]
    fn listen_entries_parse() {
        assert_eq!(
            XdpListen::parse("eth0@5300").unwrap(),
            XdpListen {
                iface: "eth0".into(),
                port: 5300
            }
        );
        assert_eq!(XdpListen::parse("eth0").unwrap().port, 53);
        assert!(XdpListen::parse("@53").is_err());
        assert!(XdpListen::parse("eth0@0").is_err());
        assert!(XdpListen::parse("eth0@x").is_err());
        assert!(XdpListen::parse("a-very-long-interface-name@53").is_err());
    }
}
