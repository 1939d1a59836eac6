//! An AF_XDP socket: its UMEM (one anonymous mapping cut into frames) and its
//! four rings shared with the kernel, set up with `setsockopt`, `mmap` and
//! `bind`. Receive frames and transmit frames are separate pools; a frame is
//! only ever looked at as a slice while the socket owns it (popped from the
//! receive ring, or free for transmit), never while the kernel may write it.
//!
//! ```text
//!  UMEM: │ receive frames 0 … R-1 │ transmit frames R … R+T-1 │
//!  fill ring ──▶ kernel writes a frame ──▶ rx ring ──▶ serve(): answer into a free
//!      ▲ frame returned at once                     transmit frame ──▶ tx ring ──▶ sendto kick
//!      └──────────────────────────────────────────────────  completion ring ◀─┘ frame free again
//! ```

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Sizes of one socket's memory and rings (powers of two).
#[derive(Debug, Clone, Copy)]
pub struct XskConfig {
    /// Bytes per frame (4096: a page, what zero-copy drivers want).
    pub frame_size: u32,
    /// Frames for receiving (also the fill and receive rings' size).
    pub rx_frames: u32,
    /// Frames for transmitting (also the transmit and completion rings' size).
    pub tx_frames: u32,
}

impl Default for XskConfig {
    fn default() -> Self {
        XskConfig {
            frame_size: 4096,
            rx_frames: 1024,
            tx_frames: 1024,
        }
    }
}

/// A private mapping, unmapped when dropped.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by one socket, which one worker thread uses;
// moving it to that thread moves nothing the kernel ties to a thread.
unsafe impl Send for Mapping {}

impl Mapping {
    fn new(len: usize, fd: RawFd, offset: libc::off_t) -> io::Result<Mapping> {
        let (flags, fd) = if fd < 0 {
            (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)
        } else {
            (libc::MAP_SHARED | libc::MAP_POPULATE, fd)
        };
        // SAFETY: a new mapping at an address of the kernel's choice: it
        // aliases nothing of ours.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once; no slice of it outlives
        // the socket that owns it.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// One ring shared with the kernel: a producer and a consumer index and a
/// power-of-two array of descriptors (`u64` frame addresses, or `xdp_desc`).
struct Ring {
    /// Kept for its unmapping on drop.
    _map: Mapping,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    descs: *mut u8,
    mask: u32,
    /// Our side's index (the consumer's on rx and completion rings, the
    /// producer's on fill and transmit rings), published by release/submit.
    local: u32,
}

// SAFETY: see Mapping; the pointers point into `map`, owned by the ring.
unsafe impl Send for Ring {}

impl Ring {
    fn new(
        fd: RawFd,
        off: &libc::xdp_ring_offset,
        size: u32,
        desc: usize,
        pgoff: u64,
    ) -> io::Result<Ring> {
        let len = off.desc as usize + size as usize * desc;
        let map = Mapping::new(len, fd, pgoff as libc::off_t)?;
        // SAFETY: the offsets are the kernel's (XDP_MMAP_OFFSETS), inside
        // the `len` bytes mapped; the indices are 4-byte aligned u32s that
        // the kernel reads and writes atomically.
        let (producer, consumer, descs) = unsafe {
            (
                map.ptr.add(off.producer as usize) as *const AtomicU32,
                map.ptr.add(off.consumer as usize) as *const AtomicU32,
                map.ptr.add(off.desc as usize),
            )
        };
        Ok(Ring {
            _map: map,
            producer,
            consumer,
            descs,
            mask: size - 1,
            local: 0,
        })
    }
    fn producer(&self) -> &AtomicU32 {
        // SAFETY: points into the live mapping (see new).
        unsafe { &*self.producer }
    }
    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as above.
        unsafe { &*self.consumer }
    }
    /// Entries ready to consume (rx, completion).
    fn ready(&self) -> u32 {
        self.producer()
            .load(Ordering::Acquire)
            .wrapping_sub(self.local)
    }
    /// Entries free to produce into (fill, transmit).
    fn room(&self) -> u32 {
        (self.mask + 1).wrapping_sub(
            self.local
                .wrapping_sub(self.consumer().load(Ordering::Acquire)),
        )
    }
    /// Entries produced and not yet consumed by the kernel (transmit).
    fn outstanding(&self) -> u32 {
        self.local
            .wrapping_sub(self.consumer().load(Ordering::Acquire))
    }
    /// Marks `n` entries consumed.
    fn release(&mut self, n: u32) {
        self.local = self.local.wrapping_add(n);
        self.consumer().store(self.local, Ordering::Release);
    }
    /// Publishes `n` entries produced.
    fn submit(&mut self, n: u32) {
        self.local = self.local.wrapping_add(n);
        self.producer().store(self.local, Ordering::Release);
    }
    fn addr_at(&self, i: u32) -> u64 {
        let slot = (self.local.wrapping_add(i) & self.mask) as usize;
        // SAFETY: slot <= mask: inside the descriptor array of u64s; the
        // entry is ours to read (between our index and the producer's).
        unsafe { (self.descs as *const u64).add(slot).read_volatile() }
    }
    fn set_addr_at(&mut self, i: u32, addr: u64) {
        let slot = (self.local.wrapping_add(i) & self.mask) as usize;
        // SAFETY: as addr_at; the entry is ours to write (room() said so).
        unsafe { (self.descs as *mut u64).add(slot).write_volatile(addr) }
    }
    fn desc_at(&self, i: u32) -> libc::xdp_desc {
        let slot = (self.local.wrapping_add(i) & self.mask) as usize;
        // SAFETY: as addr_at, over xdp_desc entries.
        unsafe {
            (self.descs as *const libc::xdp_desc)
                .add(slot)
                .read_volatile()
        }
    }
    fn set_desc_at(&mut self, i: u32, d: libc::xdp_desc) {
        let slot = (self.local.wrapping_add(i) & self.mask) as usize;
        // SAFETY: as set_addr_at, over xdp_desc entries.
        unsafe {
            (self.descs as *mut libc::xdp_desc)
                .add(slot)
                .write_volatile(d)
        }
    }
}

/// What one [`XskSocket::serve`] call did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Served {
    /// Frames received.
    pub received: u32,
    /// Answers queued for sending.
    pub answered: u32,
    /// Frames received that could not be answered: no transmit frame free
    /// (the link is slower than the queries), or a descriptor out of bounds.
    pub no_frame: u32,
}

/// An AF_XDP socket bound to one queue of one interface, with its UMEM.
pub struct XskSocket {
    // Field order is drop order: the rings and UMEM are unmapped, then the
    // socket is closed.
    fill: Ring,
    comp: Ring,
    rx: Ring,
    tx: Ring,
    umem: Mapping,
    fd: OwnedFd,
    config: XskConfig,
    /// Transmit frames free (their UMEM offsets).
    free_tx: Vec<u64>,
    zero_copy: bool,
}

impl std::fmt::Debug for XskSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XskSocket")
            .field("fd", &self.fd)
            .field("zero_copy", &self.zero_copy)
            .finish_non_exhaustive()
    }
}

fn setsockopt<T>(fd: RawFd, opt: libc::c_int, value: &T) -> io::Result<()> {
    setsockopt_at(fd, libc::SOL_XDP, opt, value)
}

/// `setsockopt` at any level (`SOL_SOCKET` for busy polling).
fn setsockopt_at<T>(fd: RawFd, level: libc::c_int, opt: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` is a live T whose size is passed with it.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            value as *const T as *const libc::c_void,
            size_of::<T>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn getsockopt<T>(fd: RawFd, opt: libc::c_int, value: &mut T) -> io::Result<usize> {
    getsockopt_at(fd, libc::SOL_XDP, opt, value)
}

/// `getsockopt` at any level.
fn getsockopt_at<T>(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    value: &mut T,
) -> io::Result<usize> {
    let mut len = size_of::<T>() as libc::socklen_t;
    // SAFETY: `value` is a live, writable T of the size passed.
    let r = unsafe {
        libc::getsockopt(
            fd,
            level,
            opt,
            value as *mut T as *mut libc::c_void,
            &mut len,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(len as usize)
}

/// The error with the step that failed, and what it likely means (the
/// system's error code is not kept past this).
fn with_context(what: &str) -> impl Fn(io::Error) -> io::Error + '_ {
    move |e| io::Error::new(e.kind(), format!("{what}: {e}{}", super::hint(what, &e)))
}

impl XskSocket {
    /// Opens an AF_XDP socket on queue `queue` of interface `ifindex`, in
    /// zero-copy mode where the driver has it, else in copy mode (`copy`
    /// forces copy mode).
    pub fn open(ifindex: u32, queue: u32, config: XskConfig, copy: bool) -> io::Result<XskSocket> {
        let pow2 = |n: u32| n.is_power_of_two();
        if !(pow2(config.frame_size) && pow2(config.rx_frames) && pow2(config.tx_frames))
            || config.frame_size < 2048
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "AF_XDP frame size and counts must be powers of two (frames of 2048 bytes or more)",
            ));
        }
        // SAFETY: socket(2) with constant arguments; a new descriptor.
        let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(with_context("AF_XDP socket")(io::Error::last_os_error()));
        }
        // SAFETY: just created, owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let raw = fd.as_raw_fd();
        let frames = (config.rx_frames + config.tx_frames) as usize;
        let umem = Mapping::new(frames * config.frame_size as usize, -1, 0)
            .map_err(with_context("UMEM mapping"))?;
        let reg = libc::xdp_umem_reg {
            addr: umem.ptr as u64,
            len: umem.len as u64,
            chunk_size: config.frame_size,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        setsockopt(raw, libc::XDP_UMEM_REG, &reg).map_err(with_context("XDP_UMEM_REG"))?;
        let sizes = [
            (libc::XDP_UMEM_FILL_RING, config.rx_frames),
            (libc::XDP_UMEM_COMPLETION_RING, config.tx_frames),
            (libc::XDP_RX_RING, config.rx_frames),
            (libc::XDP_TX_RING, config.tx_frames),
        ];
        for (opt, n) in sizes {
            setsockopt(raw, opt, &(n as libc::c_int)).map_err(with_context("AF_XDP ring size"))?;
        }
        // SAFETY: plain integers: all-zero is a valid value.
        let mut off: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
        let got = getsockopt(raw, libc::XDP_MMAP_OFFSETS, &mut off)
            .map_err(with_context("XDP_MMAP_OFFSETS"))?;
        if got != size_of::<libc::xdp_mmap_offsets>() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "XDP_MMAP_OFFSETS: the kernel is too old (before 5.4)",
            ));
        }
        let desc = size_of::<libc::xdp_desc>();
        let mut fill = Ring::new(
            raw,
            &off.fr,
            config.rx_frames,
            8,
            libc::XDP_UMEM_PGOFF_FILL_RING,
        )
        .map_err(with_context("fill ring mapping"))?;
        let comp = Ring::new(
            raw,
            &off.cr,
            config.tx_frames,
            8,
            libc::XDP_UMEM_PGOFF_COMPLETION_RING,
        )
        .map_err(with_context("completion ring mapping"))?;
        let rx = Ring::new(
            raw,
            &off.rx,
            config.rx_frames,
            desc,
            libc::XDP_PGOFF_RX_RING as u64,
        )
        .map_err(with_context("rx ring mapping"))?;
        let tx = Ring::new(
            raw,
            &off.tx,
            config.tx_frames,
            desc,
            libc::XDP_PGOFF_TX_RING as u64,
        )
        .map_err(with_context("tx ring mapping"))?;
        // Every receive frame goes to the kernel.
        for i in 0..config.rx_frames {
            fill.set_addr_at(i, u64::from(i) * u64::from(config.frame_size));
        }
        fill.submit(config.rx_frames);
        let free_tx = (config.rx_frames..config.rx_frames + config.tx_frames)
            .rev()
            .map(|i| u64::from(i) * u64::from(config.frame_size))
            .collect();
        let addr = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: if copy { libc::XDP_COPY } else { 0 },
            sxdp_ifindex: ifindex,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: 0,
        };
        // SAFETY: a live sockaddr_xdp and its size.
        let r = unsafe {
            libc::bind(
                raw,
                &addr as *const libc::sockaddr_xdp as *const libc::sockaddr,
                size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(with_context("AF_XDP bind")(io::Error::last_os_error()));
        }
        let mut opts = libc::xdp_options { flags: 0 };
        let zero_copy = getsockopt(raw, libc::XDP_OPTIONS, &mut opts).is_ok()
            && opts.flags & libc::XDP_OPTIONS_ZEROCOPY != 0;
        Ok(XskSocket {
            fill,
            comp,
            rx,
            tx,
            umem,
            fd,
            config,
            free_tx,
            zero_copy,
        })
    }

    /// Turns on preferred busy polling (Knot's `xdp.busypoll-budget` and
    /// `busypoll-timeout`): the worker's own system calls (`poll`, the
    /// transmit kick) run the device's receive processing for up to `budget`
    /// frames, busy-waiting at most `timeout_us` µs, and while they keep
    /// coming the kernel leaves that processing to them instead of its own
    /// NAPI thread or softirq. Then a flood costs the server only the frames
    /// its worker takes; the rest is dropped where it arrives. The device
    /// needs `napi_defer_hard_irqs` and `gro_flush_timeout` set for the
    /// kernel to hold back.
    pub fn busy_poll(&mut self, timeout_us: u32, budget: u16) -> io::Result<()> {
        let fd = self.fd.as_raw_fd();
        let int = |v: u32| v.min(i32::MAX as u32) as libc::c_int;
        setsockopt_at(fd, libc::SOL_SOCKET, libc::SO_PREFER_BUSY_POLL, &int(1))
            .map_err(with_context("SO_PREFER_BUSY_POLL"))?;
        setsockopt_at(fd, libc::SOL_SOCKET, libc::SO_BUSY_POLL, &int(timeout_us))
            .map_err(with_context("SO_BUSY_POLL"))?;
        setsockopt_at(
            fd,
            libc::SOL_SOCKET,
            libc::SO_BUSY_POLL_BUDGET,
            &int(u32::from(budget)),
        )
        .map_err(with_context("SO_BUSY_POLL_BUDGET"))?;
        Ok(())
    }

    /// The NAPI instance the kernel ties the socket to once it has received
    /// (`SO_INCOMING_NAPI_ID`), which busy polling drives; None where the
    /// driver gives it none (veth in copy mode, for one): there busy polling
    /// does nothing.
    pub fn napi_id(&self) -> Option<u32> {
        let mut id: libc::c_uint = 0;
        getsockopt_at(
            self.fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_INCOMING_NAPI_ID,
            &mut id,
        )
        .ok()
        .and_then(|_| (id != 0).then_some(id))
    }

    /// The socket's descriptor (for the XSKMAP).
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Whether the kernel bound the socket in zero-copy mode.
    pub fn zero_copy(&self) -> bool {
        self.zero_copy
    }

    /// Waits at most `timeout` for a frame to receive; true when one is there.
    pub fn wait(&mut self, timeout: Duration) -> io::Result<bool> {
        if self.rx.ready() > 0 {
            return Ok(true);
        }
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: one live pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                return Ok(false);
            }
            return Err(e);
        }
        Ok(self.rx.ready() > 0)
    }

    /// Takes back the transmit frames the kernel has sent.
    fn reclaim(&mut self) {
        let n = self.comp.ready();
        for i in 0..n {
            let addr = self.comp.addr_at(i);
            let frame = u64::from(self.config.frame_size);
            let base = addr - addr % frame;
            if base >= u64::from(self.config.rx_frames) * frame && base < self.umem.len as u64 {
                self.free_tx.push(base);
            }
        }
        self.comp.release(n);
    }

    /// Serves at most `max` received frames: `f(frame, out)` gets each
    /// frame and a free transmit frame to write its answer in, and returns
    /// the answer's length (0: none). Answers are queued and the kernel told
    /// to send them; the received frames go back to the kernel.
    pub fn serve<F>(&mut self, max: u32, mut f: F) -> Served
    where
        F: FnMut(&[u8], &mut [u8]) -> usize,
    {
        self.reclaim();
        let frame = u64::from(self.config.frame_size);
        let rx_end = u64::from(self.config.rx_frames) * frame;
        // The fill ring holds every receive frame: always room for those received.
        let n = self.rx.ready().min(max).min(self.fill.room());
        let mut done = Served {
            received: n,
            ..Served::default()
        };
        let mut queued = 0;
        let mut filled = 0;
        for i in 0..n {
            let d = self.rx.desc_at(i);
            let base = d.addr - d.addr % frame;
            if base >= rx_end || d.addr + u64::from(d.len) > base + frame {
                done.no_frame += 1;
                continue;
            }
            match self.free_tx.pop() {
                Some(out_at) if self.tx.room() > queued => {
                    // SAFETY: the received frame [d.addr, +len) lies within
                    // one receive frame (checked above) that the kernel
                    // handed to us in the rx ring and gets back only through
                    // the fill ring below; the transmit frame is free (not in
                    // the tx or completion ring). The two are distinct
                    // frames of the live UMEM, so the slices do not overlap
                    // and nothing else reads or writes them meanwhile.
                    let (query, out) = unsafe {
                        (
                            std::slice::from_raw_parts(
                                self.umem.ptr.add(d.addr as usize),
                                d.len as usize,
                            ),
                            std::slice::from_raw_parts_mut(
                                self.umem.ptr.add(out_at as usize),
                                frame as usize,
                            ),
                        )
                    };
                    let len = f(query, out).min(frame as usize);
                    if len > 0 {
                        self.tx.set_desc_at(
                            queued,
                            libc::xdp_desc {
                                addr: out_at,
                                len: len as u32,
                                options: 0,
                            },
                        );
                        queued += 1;
                    } else {
                        self.free_tx.push(out_at);
                    }
                }
                Some(out_at) => {
                    self.free_tx.push(out_at);
                    done.no_frame += 1;
                }
                None => done.no_frame += 1,
            }
            self.fill.set_addr_at(filled, base);
            filled += 1;
        }
        self.rx.release(n);
        self.fill.submit(filled);
        if queued > 0 {
            self.tx.submit(queued);
            done.answered = queued;
        }
        self.kick();
        done
    }

    /// Takes back sent frames and sends what the transmit ring still holds
    /// (frames the kernel could not take with their batch): for idle times.
    pub fn flush(&mut self) {
        self.reclaim();
        self.kick();
    }

    /// Tells the kernel to send what the transmit ring holds. In copy mode
    /// one call sends a limited batch (32 frames): it is repeated while
    /// frames remain and the kernel takes them. Frames it could not take
    /// now go with the next batch's call.
    fn kick(&mut self) {
        // Zero-copy drivers send on their own once woken: one call.
        let tries = if self.zero_copy { 1 } else { 64 };
        for _ in 0..tries {
            if self.tx.outstanding() == 0 {
                return;
            }
            // SAFETY: sendto with no buffer and no address: only a wake-up.
            let r = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    std::ptr::null(),
                    0,
                    libc::MSG_DONTWAIT,
                    std::ptr::null(),
                    0,
                )
            };
            if r < 0 {
                match io::Error::last_os_error().raw_os_error() {
                    // More to send (copy mode), or the device is busy: again.
                    Some(libc::EAGAIN) | Some(libc::EBUSY) | Some(libc::ENOBUFS) => {
                        self.reclaim();
                    }
                    _ => return,
                }
            }
        }
    }

    /// Frames the kernel dropped for this socket (rx ring full, no frame in
    /// the fill ring, invalid descriptors).
    pub fn kernel_drops(&self) -> u64 {
        // SAFETY: plain integers: all-zero is a valid value.
        let mut s: libc::xdp_statistics = unsafe { std::mem::zeroed() };
        match getsockopt(self.fd.as_raw_fd(), libc::XDP_STATISTICS, &mut s) {
            Ok(_) => s.rx_dropped + s.rx_ring_full + s.rx_invalid_descs,
            Err(_) => 0,
        }
    }
}
