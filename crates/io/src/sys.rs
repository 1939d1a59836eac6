//! The system calls the standard library lacks: `recvmmsg`/`sendmmsg` over
//! batches allocated once, socket-address conversion, `SO_RCVBUFFORCE`, and
//! the credential calls (`setgroups`, `setresgid`, `setresuid`) of `creds.rs`.
//! All of the crate's `unsafe` lives in this file.

use std::io;
use std::mem;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::RawFd;

/// Bytes of control data per slot: room for one `in6_pktinfo` (the larger
/// of the two packet-info messages) with its header, and more.
const CTRL_WORDS: usize = 16;
const CTRL_BYTES: usize = CTRL_WORDS * 8;

/// The local address a datagram was sent to (from `IP_PKTINFO` /
/// `IPV6_PKTINFO`), used as the source of the answer.
#[derive(Clone, Copy)]
enum LocalDst {
    /// Not known (packet info off, or not delivered).
    Unknown,
    /// IPv4: the local address to answer from.
    V4(libc::in_addr),
    /// IPv6: the destination address and the interface it came in on.
    V6(libc::in6_addr, u32),
}

/// A batch of datagram slots for one `recvmmsg` or `sendmmsg` call: payload
/// buffers, peer addresses, packet info and the kernel's message headers,
/// allocated once.
pub(crate) struct MsgBatch {
    /// `slots * slot_size` bytes of payload.
    bufs: Vec<u8>,
    slot_size: usize,
    /// Payload length per slot (for sending: what to send).
    lens: Vec<usize>,
    addrs: Vec<libc::sockaddr_storage>,
    addr_lens: Vec<libc::socklen_t>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    /// Whether packet info is received (and used when sending).
    pktinfo: bool,
    /// `CTRL_WORDS` u64 per slot (u64 keeps cmsghdr alignment).
    ctrl: Vec<u64>,
    local: Vec<LocalDst>,
}

impl MsgBatch {
    /// A batch of `slots` datagrams of at most `slot_size` bytes each;
    /// `pktinfo` when the socket delivers packet info (wildcard binds).
    pub(crate) fn new(slots: usize, slot_size: usize, pktinfo: bool) -> Self {
        let slots = slots.max(1);
        // SAFETY: sockaddr_storage, iovec and mmsghdr are plain C structs of
        // integers and raw pointers, for which all-zero bytes are a valid value.
        let (addr, iov, hdr) = unsafe {
            (
                mem::zeroed::<libc::sockaddr_storage>(),
                mem::zeroed::<libc::iovec>(),
                mem::zeroed::<libc::mmsghdr>(),
            )
        };
        MsgBatch {
            bufs: vec![0; slots * slot_size],
            slot_size,
            lens: vec![0; slots],
            addrs: vec![addr; slots],
            addr_lens: vec![0; slots],
            iovs: vec![iov; slots],
            hdrs: vec![hdr; slots],
            pktinfo,
            ctrl: if pktinfo {
                vec![0; slots * CTRL_WORDS]
            } else {
                Vec::new()
            },
            local: vec![LocalDst::Unknown; slots],
        }
    }

    /// Number of slots.
    pub(crate) fn slots(&self) -> usize {
        self.lens.len()
    }

    /// Points the first `count` headers at their buffers and addresses; the
    /// `recv` flag selects full-slot lengths and full address capacity.
    fn prepare(&mut self, count: usize, recv: bool) {
        let base = self.bufs.as_mut_ptr();
        for i in 0..count {
            let len = if recv { self.slot_size } else { self.lens[i] };
            self.iovs[i] = libc::iovec {
                // SAFETY: i < slots, so i * slot_size is within (or one past
                // the end of, when slot_size is 0) the `bufs` allocation.
                iov_base: unsafe { base.add(i * self.slot_size) }.cast(),
                iov_len: len,
            };
            let h = &mut self.hdrs[i];
            h.msg_len = 0;
            h.msg_hdr.msg_name = (&mut self.addrs[i] as *mut libc::sockaddr_storage).cast();
            h.msg_hdr.msg_namelen = if recv {
                mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t
            } else {
                self.addr_lens[i]
            };
            h.msg_hdr.msg_iov = &mut self.iovs[i];
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_control = std::ptr::null_mut();
            h.msg_hdr.msg_controllen = 0;
            h.msg_hdr.msg_flags = 0;
            if !self.pktinfo {
                continue;
            }
            // SAFETY: i < slots, so the slot's CTRL_WORDS words lie inside `ctrl`.
            let ctrl = unsafe { self.ctrl.as_mut_ptr().add(i * CTRL_WORDS) };
            h.msg_hdr.msg_control = ctrl.cast();
            h.msg_hdr.msg_controllen = CTRL_BYTES;
            if !recv {
                // SAFETY: msg_control points to CTRL_BYTES writable, 8-aligned
                // bytes owned by `self`, enough for one packet-info message.
                h.msg_hdr.msg_controllen = unsafe { write_pktinfo(&mut h.msg_hdr, self.local[i]) };
                if h.msg_hdr.msg_controllen == 0 {
                    h.msg_hdr.msg_control = std::ptr::null_mut();
                }
            }
        }
    }

    /// Receives up to `slots()` datagrams, blocking for the first one only
    /// (`MSG_WAITFORONE`; the socket's read timeout bounds the wait).
    /// Returns how many slots were filled.
    pub(crate) fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        let n = self.slots();
        self.prepare(n, true);
        // SAFETY: `hdrs` holds `n` initialised headers whose name and iovec
        // pointers were just set to live, correctly sized fields of `self`
        // (no reference to them is held during the call); the timeout pointer
        // may be null.
        let r = unsafe {
            libc::recvmmsg(
                fd,
                self.hdrs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let got = r as usize;
        for i in 0..got {
            self.lens[i] = (self.hdrs[i].msg_len as usize).min(self.slot_size);
            self.addr_lens[i] = self.hdrs[i].msg_hdr.msg_namelen;
            self.local[i] = if self.pktinfo {
                // SAFETY: the header's control pointer and the length the
                // kernel wrote describe initialised bytes inside `ctrl`.
                unsafe { read_pktinfo(&self.hdrs[i].msg_hdr) }
            } else {
                LocalDst::Unknown
            };
        }
        Ok(got)
    }

    /// The datagram received in slot `i`, and whether the kernel cut it short.
    pub(crate) fn received(&self, i: usize) -> (&[u8], bool) {
        let start = i * self.slot_size;
        let truncated = self.hdrs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        (&self.bufs[start..start + self.lens[i]], truncated)
    }

    /// The peer address of slot `i`.
    pub(crate) fn peer(&self, i: usize) -> Option<SocketAddr> {
        sockaddr_to_std(&self.addrs[i], self.addr_lens[i])
    }

    /// The local address slot `i` was sent to, from its packet info (when
    /// asked for and given).
    pub(crate) fn local_ip(&self, i: usize) -> Option<std::net::IpAddr> {
        match self.local[i] {
            LocalDst::V4(a) => Some(std::net::Ipv4Addr::from(u32::from_be(a.s_addr)).into()),
            LocalDst::V6(a, _) => Some(std::net::Ipv6Addr::from(a.s6_addr).into()),
            LocalDst::Unknown => None,
        }
    }

    /// The whole payload buffer of slot `i`, to be filled before `commit`.
    pub(crate) fn slot_mut(&mut self, i: usize) -> &mut [u8] {
        let start = i * self.slot_size;
        &mut self.bufs[start..start + self.slot_size]
    }

    /// Marks slot `i` as holding `len` bytes for the peer of slot `from` of `rx`.
    pub(crate) fn commit(&mut self, i: usize, len: usize, rx: &MsgBatch, from: usize) {
        self.lens[i] = len.min(self.slot_size);
        self.addrs[i] = rx.addrs[from];
        self.addr_lens[i] = rx.addr_lens[from];
        self.local[i] = rx.local[from];
    }

    /// Sends slots `start..end`; returns how many were sent (at least one,
    /// or an error about slot `start`).
    pub(crate) fn send(&mut self, fd: RawFd, start: usize, end: usize) -> io::Result<usize> {
        self.prepare(end, false);
        // SAFETY: headers start..end were just initialised with pointers to
        // live fields of `self`, and start < end <= slots.
        let r = unsafe {
            libc::sendmmsg(
                fd,
                self.hdrs.as_mut_ptr().add(start),
                (end - start) as libc::c_uint,
                0,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(r as usize)
    }
}

/// Converts a kernel socket address to a std one (None for other families).
fn sockaddr_to_std(ss: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET if len as usize >= mem::size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family is AF_INET and the kernel wrote at least a
            // sockaddr_in, which is smaller and no more aligned than sockaddr_storage.
            let sin =
                unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)),
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 if len as usize >= mem::size_of::<libc::sockaddr_in6>() => {
            // SAFETY: the family is AF_INET6 and the kernel wrote at least a
            // sockaddr_in6, which is smaller and no more aligned than sockaddr_storage.
            let sin6 =
                unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Asks for a receive buffer of `bytes` with `SO_RCVBUFFORCE`, which may
/// exceed `net.core.rmem_max` (needs CAP_NET_ADMIN). Returns false when refused.
pub(crate) fn force_recv_buffer(fd: RawFd, bytes: usize) -> bool {
    let value = bytes.min(i32::MAX as usize) as libc::c_int;
    // SAFETY: the option value points to a live c_int and its size is passed.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&value as *const libc::c_int).cast(),
            mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

/// Reads the packet-info control message of a received datagram.
///
/// # Safety
/// `hdr.msg_control` must point to `hdr.msg_controllen` initialised bytes
/// (as left by `recvmmsg`), aligned for `cmsghdr`.
unsafe fn read_pktinfo(hdr: &libc::msghdr) -> LocalDst {
    if hdr.msg_control.is_null() || hdr.msg_flags & libc::MSG_CTRUNC != 0 {
        return LocalDst::Unknown;
    }
    let v4_len = mem::size_of::<libc::in_pktinfo>() as u32;
    let v6_len = mem::size_of::<libc::in6_pktinfo>() as u32;
    // SAFETY: CMSG_FIRSTHDR/CMSG_NXTHDR only return headers lying inside
    // msg_control[..msg_controllen] (or null), which the caller guarantees
    // initialised; a header of the packet-info level and type whose length
    // covers the struct is followed by that struct, read unaligned.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(hdr);
        while !cmsg.is_null() {
            let c = &*cmsg;
            let data = libc::CMSG_DATA(cmsg);
            let len = c.cmsg_len as usize;
            if c.cmsg_level == libc::IPPROTO_IP
                && c.cmsg_type == libc::IP_PKTINFO
                && len >= libc::CMSG_LEN(v4_len) as usize
            {
                let info = std::ptr::read_unaligned(data.cast::<libc::in_pktinfo>());
                return LocalDst::V4(info.ipi_spec_dst);
            }
            if c.cmsg_level == libc::IPPROTO_IPV6
                && c.cmsg_type == libc::IPV6_PKTINFO
                && len >= libc::CMSG_LEN(v6_len) as usize
            {
                let info = std::ptr::read_unaligned(data.cast::<libc::in6_pktinfo>());
                return LocalDst::V6(info.ipi6_addr, info.ipi6_ifindex);
            }
            cmsg = libc::CMSG_NXTHDR(hdr, cmsg);
        }
    }
    LocalDst::Unknown
}

/// Writes a packet-info control message choosing the answer's source
/// address; returns the control length to send (0: none).
///
/// # Safety
/// `hdr.msg_control` must point to `CTRL_BYTES` writable bytes aligned for
/// `cmsghdr`, and `hdr.msg_controllen` must be `CTRL_BYTES`.
unsafe fn write_pktinfo(hdr: &mut libc::msghdr, local: LocalDst) -> usize {
    let (level, kind, size) = match local {
        LocalDst::Unknown => return 0,
        LocalDst::V4(_) => (
            libc::IPPROTO_IP,
            libc::IP_PKTINFO,
            mem::size_of::<libc::in_pktinfo>(),
        ),
        LocalDst::V6(..) => (
            libc::IPPROTO_IPV6,
            libc::IPV6_PKTINFO,
            mem::size_of::<libc::in6_pktinfo>(),
        ),
    };
    // SAFETY: CTRL_BYTES exceeds CMSG_SPACE of either struct, so the first
    // header and its data fit in the buffer; writes of the data are unaligned.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(hdr);
        if cmsg.is_null() {
            return 0;
        }
        (*cmsg).cmsg_level = level;
        (*cmsg).cmsg_type = kind;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size as u32) as _;
        let data = libc::CMSG_DATA(cmsg);
        match local {
            LocalDst::V4(addr) => std::ptr::write_unaligned(
                data.cast::<libc::in_pktinfo>(),
                libc::in_pktinfo {
                    ipi_ifindex: 0,
                    ipi_spec_dst: addr,
                    ipi_addr: libc::in_addr { s_addr: 0 },
                },
            ),
            LocalDst::V6(addr, ifindex) => std::ptr::write_unaligned(
                data.cast::<libc::in6_pktinfo>(),
                libc::in6_pktinfo {
                    ipi6_addr: addr,
                    ipi6_ifindex: ifindex,
                },
            ),
            LocalDst::Unknown => {}
        }
        libc::CMSG_SPACE(size as u32) as usize
    }
}

/// Asks the kernel for the destination address of each datagram
/// (`IP_PKTINFO` or `IPV6_RECVPKTINFO`).
pub(crate) fn enable_pktinfo(fd: RawFd, ipv6: bool) -> io::Result<()> {
    let (level, option) = if ipv6 {
        (libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO)
    } else {
        (libc::IPPROTO_IP, libc::IP_PKTINFO)
    };
    let on: libc::c_int = 1;
    // SAFETY: the option value points to a live c_int and its size is passed.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            option,
            (&on as *const libc::c_int).cast(),
            mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Datagrams the kernel dropped on this socket (its receive buffer full, or
/// a filter): `SO_MEMINFO`'s `SK_MEMINFO_DROPS`, the drops column of
/// /proc/net/udp without walking the host's whole UDP table.
pub(crate) fn socket_drops(fd: RawFd) -> io::Result<u32> {
    // SK_MEMINFO_VARS and SK_MEMINFO_DROPS of <linux/sock_diag.h>.
    const VARS: usize = 9;
    const DROPS: usize = 8;
    let mut info = [0u32; VARS];
    let mut len = mem::size_of_val(&info) as libc::socklen_t;
    // SAFETY: the option value points to a live array of `len` bytes, and
    // the kernel writes at most `len` bytes and updates `len`.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_MEMINFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    if (len as usize) < (DROPS + 1) * mem::size_of::<u32>() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "SO_MEMINFO without a drops field",
        ));
    }
    Ok(info[DROPS])
}

/// `u32::MAX` as an id: "leave this one as it is" for `setresuid`/`setresgid`.
pub(crate) const KEEP_ID: u32 = u32::MAX;

/// Sets the supplementary groups to exactly `gids` (needs CAP_SETGID).
pub(crate) fn set_groups(gids: &[u32]) -> io::Result<()> {
    // SAFETY: the pointer and length describe a live slice of gid_t (u32 on
    // Linux); the kernel only reads it. glibc applies it to every thread.
    let r = unsafe { libc::setgroups(gids.len(), gids.as_ptr()) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets the real, effective and saved group ids ([`KEEP_ID`]: unchanged).
pub(crate) fn set_resgid(real: u32, effective: u32, saved: u32) -> io::Result<()> {
    // SAFETY: plain integer arguments; glibc applies the change to every
    // thread of the process (its setxid broadcast), as POSIX requires.
    let r = unsafe { libc::setresgid(real, effective, saved) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets the real, effective and saved user ids ([`KEEP_ID`]: unchanged).
pub(crate) fn set_resuid(real: u32, effective: u32, saved: u32) -> io::Result<()> {
    // SAFETY: plain integer arguments; applied to every thread by glibc.
    let r = unsafe { libc::setresuid(real, effective, saved) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The real, effective and saved user ids.
pub(crate) fn get_resuid() -> (u32, u32, u32) {
    let (mut r, mut e, mut s) = (0, 0, 0);
    // SAFETY: the three pointers are to live, writable u32 locals.
    unsafe { libc::getresuid(&mut r, &mut e, &mut s) };
    (r, e, s)
}

/// The real, effective and saved group ids.
pub(crate) fn get_resgid() -> (u32, u32, u32) {
    let (mut r, mut e, mut s) = (0, 0, 0);
    // SAFETY: the three pointers are to live, writable u32 locals.
    unsafe { libc::getresgid(&mut r, &mut e, &mut s) };
    (r, e, s)
}

/// The open-file limit: (soft, hard), `RLIM_INFINITY` as `u64::MAX`.
pub(crate) fn open_files_limit() -> io::Result<(u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: the pointer is to a live, writable rlimit local.
    let r = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    if r == 0 {
        Ok((lim.rlim_cur, lim.rlim_max))
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets the open-file limit's soft value (at most the hard one, which
/// stays; no privilege needed).
pub(crate) fn set_open_files_soft(soft: u64, hard: u64) -> io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: the pointer is to a live rlimit local; the kernel only reads it.
    let r = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    /// Receives one datagram on a socket with packet info on; returns what was read.
    fn local_of(server: &str, client: &str) -> Option<(LocalDst, Vec<u8>)> {
        let s = UdpSocket::bind(server).ok()?;
        enable_pktinfo(s.as_raw_fd(), s.local_addr().ok()?.is_ipv6()).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let c = UdpSocket::bind(client).unwrap();
        c.send_to(b"hello", s.local_addr().unwrap()).unwrap();
        let mut batch = MsgBatch::new(4, 512, true);
        let got = batch.recv(s.as_raw_fd()).unwrap();
        assert_eq!(got, 1);
        assert_eq!(batch.received(0).0, b"hello");
        assert_eq!(batch.peer(0), Some(c.local_addr().unwrap()));
        Some((batch.local[0], batch.received(0).0.to_vec()))
    }

    #[test]
    fn packet_info_gives_the_local_address_ipv4() {
        let (local, _) = local_of("127.0.0.1:15412", "127.0.0.1:0").unwrap();
        match local {
            LocalDst::V4(a) => assert_eq!(u32::from_be(a.s_addr), 0x7f00_0001),
            _ => panic!("no IPv4 packet info"),
        }
    }

    #[test]
    fn packet_info_gives_the_local_address_ipv6() {
        let Some((local, _)) = local_of("[::1]:15412", "[::1]:0") else {
            return; // no IPv6 loopback here
        };
        match local {
            LocalDst::V6(a, ifindex) => {
                assert_eq!(Ipv6Addr::from(a.s6_addr), Ipv6Addr::LOCALHOST);
                assert!(ifindex > 0);
            }
            _ => panic!("no IPv6 packet info"),
        }
    }

    #[test]
    fn packet_info_round_trips_into_a_send() {
        let mut hdr: libc::msghdr = unsafe_zeroed_msghdr();
        let mut ctrl = [0u64; CTRL_WORDS];
        hdr.msg_control = ctrl.as_mut_ptr().cast();
        hdr.msg_controllen = CTRL_BYTES;
        let addr = libc::in_addr {
            s_addr: u32::to_be(0xc000_0201),
        };
        // SAFETY: msg_control points to CTRL_BYTES of aligned, writable bytes.
        let len = unsafe { write_pktinfo(&mut hdr, LocalDst::V4(addr)) };
        assert!(len > 0);
        hdr.msg_controllen = len;
        // SAFETY: the control bytes were just written by write_pktinfo.
        match unsafe { read_pktinfo(&hdr) } {
            LocalDst::V4(a) => assert_eq!(u32::from_be(a.s_addr), 0xc000_0201),
            _ => panic!("not read back"),
        }
    }

    fn unsafe_zeroed_msghdr() -> libc::msghdr {
        // SAFETY: msghdr is a plain C struct for which all-zero bytes are valid.
        unsafe { mem::zeroed() }
    }
}
