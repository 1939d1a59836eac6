//! The system calls the standard library lacks: `recvmmsg`/`sendmmsg` over
//! batches allocated once, socket-address conversion, and `SO_RCVBUFFORCE`.
//! All of the crate's `unsafe` lives in this file.

use std::io;
use std::mem;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::RawFd;

/// A batch of datagram slots for one `recvmmsg` or `sendmmsg` call: payload
/// buffers, peer addresses and the kernel's message headers, allocated once.
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
}

impl MsgBatch {
    /// A batch of `slots` datagrams of at most `slot_size` bytes each.
    pub(crate) fn new(slots: usize, slot_size: usize) -> Self {
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
