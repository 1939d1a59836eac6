//! The XDP program and its loading, with the bpf(2) system call alone: no
//! C toolchain, no prebuilt object, no BPF library. The program is a few
//! dozen eBPF instructions written below with a tiny instruction builder;
//! the kernel's verifier checks it at load (its log is in the error when it
//! refuses). It is attached with a BPF link, which the kernel detaches when
//! the last descriptor of the link closes: at exit, `kill -9` included.
//!
//! ```text
//!  frame ─▶ Ethernet IPv4/IPv6 (no options, no fragment) UDP to a listened port,
//!           DNS header with opcode QUERY? ── no ──▶ XDP_PASS (the kernel's stack)
//!              └ yes ─▶ [route check] ─▶ bpf_redirect_map(xskmap, rx queue, XDP_PASS) ─▶ that queue's AF_XDP socket
//!                                                      (no socket on it: XDP_PASS)
//! ```
//!
//! The route check (`xdp-route-check`, Knot's `xdp.route-check`) asks the
//! kernel's routing table for the answer's way back (bpf_fib_lookup): an
//! answer that would leave by another interface, or whose next hop's address
//! is not resolved yet, goes to the kernel's stack (the socket path); one to
//! a blackholed, unreachable or prohibited address is dropped; otherwise the
//! next hop's MAC address is written where the answer takes its destination
//! from (the query's source MAC). The lookup needs forwarding on the
//! loopback interface (the server checks it at start).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
/// `enum bpf_attach_type`'s BPF_XDP.
const BPF_XDP: u32 = 37;
const BPF_FUNC_REDIRECT_MAP: i32 = 51;
const BPF_FUNC_FIB_LOOKUP: i32 = 69;
/// bpf_fib_lookup's flag: the table of the device, no policy rules.
const BPF_FIB_LOOKUP_DIRECT: i32 = 1;
// Its results (enum in linux/bpf.h) that are not a drop.
const BPF_FIB_LKUP_RET_SUCCESS: i32 = 0;
const BPF_FIB_LKUP_RET_FWD_DISABLED: i32 = 5;
const BPF_FIB_LKUP_RET_NO_NEIGH: i32 = 7;
/// `struct bpf_fib_lookup`'s size and the offsets of its fields used here.
const FIB_SIZE: i16 = 64;
const FIB_IFINDEX: i16 = 8;
const FIB_SRC: i16 = 16;
const FIB_DST: i16 = 32;
const FIB_SMAC: i16 = 52;
const FIB_DMAC: i16 = 58;
pub(super) const XDP_ABORTED: i32 = 0;
pub(super) const XDP_DROP: i32 = 1;
const BPF_PSEUDO_MAP_FD: u8 = 1;
pub(super) const XDP_PASS: i32 = 2;
pub(super) const XDP_TX: i32 = 3;

// The parts of `union bpf_attr` each command reads (linux/bpf.h); the kernel
// takes a shorter attribute than its own and treats the rest as zero.

#[repr(C)]
struct MapCreateAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
}

#[repr(C)]
struct MapElemAttr {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

#[repr(C)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

#[repr(C)]
struct LinkCreateAttr {
    prog_fd: u32,
    target_ifindex: u32,
    attach_type: u32,
    flags: u32,
}

/// bpf(2) with `attr`; the kernel's non-negative result.
fn bpf<T>(cmd: libc::c_long, attr: &mut T) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a live, initialised #[repr(C)] prefix of `union
    // bpf_attr` for `cmd`, and its size is passed with it; pointers inside it
    // (instructions, license, log, key and value) point to buffers the
    // caller keeps alive for the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut T as *mut libc::c_void,
            std::mem::size_of::<T>() as libc::c_uint,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r)
}

/// bpf(2) for a command that makes an object: its new descriptor.
fn bpf_fd<T>(cmd: libc::c_long, attr: &mut T) -> io::Result<OwnedFd> {
    let fd = bpf(cmd, attr)?;
    // SAFETY: BPF_MAP_CREATE, BPF_PROG_LOAD and BPF_LINK_CREATE return a
    // new descriptor, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

fn name16(s: &str) -> [u8; 16] {
    let mut n = [0u8; 16];
    for (d, b) in n.iter_mut().zip(s.bytes().take(15)) {
        *d = b;
    }
    n
}

/// An XSKMAP: queue index → AF_XDP socket.
#[derive(Debug)]
pub(crate) struct XskMap {
    fd: OwnedFd,
}

impl XskMap {
    pub(crate) fn new(entries: u32) -> io::Result<XskMap> {
        let mut attr = MapCreateAttr {
            map_type: BPF_MAP_TYPE_XSKMAP,
            key_size: 4,
            value_size: 4,
            max_entries: entries.max(1),
            map_flags: 0,
            inner_map_fd: 0,
            numa_node: 0,
            map_name: name16("lode_xsks"),
        };
        Ok(XskMap {
            fd: bpf_fd(BPF_MAP_CREATE, &mut attr)?,
        })
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Points queue `queue` at the AF_XDP socket `xsk`.
    pub(crate) fn set(&self, queue: u32, xsk: RawFd) -> io::Result<()> {
        let key = queue;
        let value = xsk as u32;
        let mut attr = MapElemAttr {
            map_fd: self.fd.as_raw_fd() as u32,
            _pad: 0,
            key: &key as *const u32 as u64,
            value: &value as *const u32 as u64,
            flags: 0,
        };
        bpf(BPF_MAP_UPDATE_ELEM, &mut attr).map(drop)
    }
}

/// One eBPF instruction (`struct bpf_insn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct Insn {
    pub(super) code: u8,
    /// dst_reg in the low nibble, src_reg in the high one.
    pub(super) regs: u8,
    pub(super) off: i16,
    pub(super) imm: i32,
}

// Opcodes (linux/bpf_common.h, linux/bpf.h).
pub(super) const LDX_W: u8 = 0x61; // BPF_LDX | BPF_MEM | BPF_W
pub(super) const LDX_H: u8 = 0x69; // … BPF_H
pub(super) const LDX_B: u8 = 0x71; // … BPF_B
pub(super) const MOV64_X: u8 = 0xbf; // BPF_ALU64 | BPF_MOV | BPF_X
pub(super) const MOV64_K: u8 = 0xb7; // BPF_ALU64 | BPF_MOV | BPF_K
pub(super) const ADD64_K: u8 = 0x07; // BPF_ALU64 | BPF_ADD | BPF_K
pub(super) const AND64_K: u8 = 0x57; // BPF_ALU64 | BPF_AND | BPF_K
pub(super) const JA: u8 = 0x05; // BPF_JMP | BPF_JA
pub(super) const JEQ_K: u8 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
pub(super) const JNE_K: u8 = 0x55; // BPF_JMP | BPF_JNE | BPF_K
pub(super) const JGT_X: u8 = 0x2d; // BPF_JMP | BPF_JGT | BPF_X
const JNE_X: u8 = 0x5d; // BPF_JMP | BPF_JNE | BPF_X
const ST_W: u8 = 0x62; // BPF_ST | BPF_MEM | BPF_W (an immediate)
const ST_DW: u8 = 0x7a; // BPF_ST | BPF_MEM | BPF_DW (an immediate)
const CALL: u8 = 0x85; // BPF_JMP | BPF_CALL
pub(super) const EXIT: u8 = 0x95; // BPF_JMP | BPF_EXIT
const LD_IMM64: u8 = 0x18; // BPF_LD | BPF_DW | BPF_IMM
                           // Those the echo program (echo.rs) uses besides the above.
pub(super) const LDX_DW: u8 = 0x79; // BPF_LDX | BPF_MEM | BPF_DW
pub(super) const STX_W: u8 = 0x63; // BPF_STX | BPF_MEM | BPF_W
pub(super) const STX_H: u8 = 0x6b; // … BPF_H
pub(super) const STX_B: u8 = 0x73; // … BPF_B
pub(super) const STX_DW: u8 = 0x7b; // … BPF_DW
pub(super) const ST_H: u8 = 0x6a; // BPF_ST | BPF_MEM | BPF_H (an immediate)
pub(super) const ADD64_X: u8 = 0x0f; // BPF_ALU64 | BPF_ADD | BPF_X
pub(super) const OR64_K: u8 = 0x47; // BPF_ALU64 | BPF_OR | BPF_K
pub(super) const XOR64_K: u8 = 0xa7; // BPF_ALU64 | BPF_XOR | BPF_K
pub(super) const RSH64_K: u8 = 0x77; // BPF_ALU64 | BPF_RSH | BPF_K
pub(super) const JSET_K: u8 = 0x45; // BPF_JMP | BPF_JSET | BPF_K

/// Registers: r0 return value, r1-r5 arguments, r6-r9 kept across calls.
pub(super) const R0: u8 = 0;
pub(super) const R1: u8 = 1;
pub(super) const R2: u8 = 2;
pub(super) const R3: u8 = 3;
pub(super) const R4: u8 = 4;
pub(super) const R5: u8 = 5;
pub(super) const R6: u8 = 6;
const R7: u8 = 7;
/// The frame pointer (read-only): the stack is below it.
const R10: u8 = 10;

/// Jump targets, resolved when the program is complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Label {
    Pass,
    Ipv6,
    Port,
    Redirect,
    /// The echo's common tail: swap the MACs, transmit.
    Tx,
    /// The route check's IPv6 addresses.
    RouteV6,
    /// The route check's lookup.
    Route,
    /// The route check's lookup answered other than "forwarding disabled".
    Routed,
    /// Drop the frame.
    Drop,
}

/// An instruction list with forward jumps to labels.
#[derive(Debug, Default)]
pub(super) struct Builder {
    insns: Vec<Insn>,
    /// (instruction index, label) of jumps to patch.
    jumps: Vec<(usize, Label)>,
    labels: Vec<(Label, usize)>,
}

impl Builder {
    pub(super) fn op(&mut self, code: u8, dst: u8, src: u8, off: i16, imm: i32) {
        self.insns.push(Insn {
            code,
            regs: dst | (src << 4),
            off,
            imm,
        });
    }
    pub(super) fn jump(&mut self, code: u8, dst: u8, src: u8, imm: i32, to: Label) {
        self.jumps.push((self.insns.len(), to));
        self.op(code, dst, src, 0, imm);
    }
    pub(super) fn label(&mut self, l: Label) {
        self.labels.push((l, self.insns.len()));
    }
    pub(super) fn finish(mut self) -> Vec<Insn> {
        for &(at, to) in &self.jumps {
            let target = self
                .labels
                .iter()
                .find(|(l, _)| *l == to)
                .map(|&(_, i)| i)
                .expect("every jump's label is placed");
            // Offsets count from the instruction after the jump.
            self.insns[at].off = (target as i64 - at as i64 - 1) as i16;
        }
        self.insns
    }
}

/// A 16-bit constant as a `ldx h` from the packet reads it: the packet's
/// network (big-endian) order read by a little-endian machine.
pub(super) fn net16(v: u16) -> i32 {
    i32::from(u16::from_ne_bytes(v.to_be_bytes()))
}

/// The XDP program for `ports`; `map_fd` is the XSKMAP's descriptor;
/// `route_check` adds the routing table's say (see the module's comment).
pub(crate) fn program(ports: &[u16], map_fd: RawFd, route_check: bool) -> Vec<Insn> {
    const ETH: i16 = 14;
    const DNS_HDR: i64 = 12;
    let mut b = Builder::default();
    b.op(MOV64_X, R6, R1, 0, 0); // r6 = ctx
    b.op(LDX_W, R2, R1, 0, 0); // r2 = ctx->data
    b.op(LDX_W, R3, R1, 4, 0); // r3 = ctx->data_end
                               // IPv4: Ethernet + 20-byte header + UDP + the DNS header in the frame?
    b.op(MOV64_X, R4, R2, 0, 0);
    b.op(ADD64_K, R4, 0, 0, (14 + 20 + 8 + DNS_HDR) as i32);
    // (Shorter frames are neither: IPv6 ones are longer still, checked below.)
    b.jump(JGT_X, R4, R3, 0, Label::Pass);
    b.op(LDX_H, R5, R2, 12, 0); // ethertype
    b.jump(JEQ_K, R5, 0, net16(0x86DD), Label::Ipv6);
    b.jump(JNE_K, R5, 0, net16(0x0800), Label::Pass);
    b.op(LDX_B, R5, R2, ETH, 0); // version and header length
    b.jump(JNE_K, R5, 0, 0x45, Label::Pass);
    b.op(LDX_B, R5, R2, ETH + 9, 0); // protocol
    b.jump(JNE_K, R5, 0, 17, Label::Pass);
    b.op(LDX_H, R5, R2, ETH + 6, 0); // flags and fragment offset
    b.op(AND64_K, R5, 0, 0, net16(0x3FFF)); // more fragments, offset
    b.jump(JNE_K, R5, 0, 0, Label::Pass);
    b.op(LDX_B, R4, R2, ETH + 20 + 8 + 2, 0); // DNS flags: QR, opcode
    b.op(LDX_H, R5, R2, ETH + 20 + 2, 0); // UDP destination port
    if route_check {
        b.op(MOV64_K, R7, 0, 0, libc::AF_INET);
    }
    b.jump(JA, 0, 0, 0, Label::Port);
    b.label(Label::Ipv6);
    b.op(ADD64_K, R4, 0, 0, 20); // a 40-byte header
    b.jump(JGT_X, R4, R3, 0, Label::Pass);
    b.op(LDX_B, R5, R2, ETH + 6, 0); // next header: UDP, no extension
    b.jump(JNE_K, R5, 0, 17, Label::Pass);
    b.op(LDX_B, R4, R2, ETH + 40 + 8 + 2, 0);
    b.op(LDX_H, R5, R2, ETH + 40 + 2, 0);
    if route_check {
        b.op(MOV64_K, R7, 0, 0, libc::AF_INET6);
    }
    b.label(Label::Port);
    // Only queries (QR clear) with opcode QUERY: NOTIFY and UPDATE, which
    // may be answered later, take the socket path.
    b.op(AND64_K, R4, 0, 0, 0xF8);
    b.jump(JNE_K, R4, 0, 0, Label::Pass);
    for &p in ports {
        b.jump(JEQ_K, R5, 0, net16(p), Label::Redirect);
    }
    b.jump(JA, 0, 0, 0, Label::Pass);
    b.label(Label::Redirect);
    if route_check {
        route(&mut b);
    }
    b.op(LDX_W, R2, R6, 16, 0); // r2 = ctx->rx_queue_index
    b.op(LD_IMM64, R1, BPF_PSEUDO_MAP_FD, 0, map_fd);
    b.op(0, 0, 0, 0, 0); // the upper half of the 64-bit immediate
    b.op(MOV64_K, R3, 0, 0, XDP_PASS); // no socket on the queue: pass
    b.op(CALL, 0, 0, 0, BPF_FUNC_REDIRECT_MAP);
    b.op(EXIT, 0, 0, 0, 0);
    b.label(Label::Pass);
    b.op(MOV64_K, R0, 0, 0, XDP_PASS);
    b.op(EXIT, 0, 0, 0, 0);
    if route_check {
        b.label(Label::Drop);
        b.op(MOV64_K, R0, 0, 0, XDP_DROP);
        b.op(EXIT, 0, 0, 0, 0);
    }
    b.finish()
}

/// The route check, as Knot's program does it: with r2/r3 the frame's
/// bounds (checked up to the DNS header), r6 the context and r7 the address
/// family, a `struct bpf_fib_lookup` on the stack for the way back (from the
/// query's destination to its source) looked up from the loopback interface;
/// falls through to the redirect with the next hop's MAC as the frame's
/// source, or ends the program (pass, drop, aborted).
fn route(b: &mut Builder) {
    const ETH: i16 = 14;
    const FIB: i16 = -FIB_SIZE; // from the frame pointer
    for off in (0..FIB_SIZE).step_by(8) {
        b.op(ST_DW, R10, 0, FIB + off, 0);
    }
    b.op(STX_B, R10, R7, FIB, 0); // family
    b.op(ST_W, R10, 0, FIB + FIB_IFINDEX, 1); // the loopback interface
    b.jump(JEQ_K, R7, 0, libc::AF_INET6, Label::RouteV6);
    // IPv4: source = the query's destination, destination = its source.
    b.op(LDX_W, R4, R2, ETH + 16, 0);
    b.op(STX_W, R10, R4, FIB + FIB_SRC, 0);
    b.op(LDX_W, R4, R2, ETH + 12, 0);
    b.op(STX_W, R10, R4, FIB + FIB_DST, 0);
    b.jump(JA, 0, 0, 0, Label::Route);
    b.label(Label::RouteV6);
    for word in 0..4 {
        b.op(LDX_W, R4, R2, ETH + 24 + 4 * word, 0);
        b.op(STX_W, R10, R4, FIB + FIB_SRC + 4 * word, 0);
        b.op(LDX_W, R4, R2, ETH + 8 + 4 * word, 0);
        b.op(STX_W, R10, R4, FIB + FIB_DST + 4 * word, 0);
    }
    b.label(Label::Route);
    b.op(MOV64_X, R1, R6, 0, 0);
    b.op(MOV64_X, R2, R10, 0, 0);
    b.op(ADD64_K, R2, 0, 0, i32::from(FIB));
    b.op(MOV64_K, R3, 0, 0, i32::from(FIB_SIZE));
    b.op(MOV64_K, R4, 0, 0, BPF_FIB_LOOKUP_DIRECT);
    b.op(CALL, 0, 0, 0, BPF_FUNC_FIB_LOOKUP);
    // No neighbour entry yet: the kernel's stack resolves it.
    b.jump(JEQ_K, R0, 0, BPF_FIB_LKUP_RET_NO_NEIGH, Label::Pass);
    // Forwarding off on the loopback interface: XDP_ABORTED, as Knot (a
    // trace event; the server refuses to start so).
    b.jump(JNE_K, R0, 0, BPF_FIB_LKUP_RET_FWD_DISABLED, Label::Routed);
    b.op(MOV64_K, R0, 0, 0, XDP_ABORTED);
    b.op(EXIT, 0, 0, 0, 0);
    b.label(Label::Routed);
    // Blackhole, unreachable, prohibited, not forwarded, …: dropped.
    b.jump(JNE_K, R0, 0, BPF_FIB_LKUP_RET_SUCCESS, Label::Drop);
    // The helper call ended the packet pointers' validity: read them again.
    b.op(LDX_W, R2, R6, 0, 0);
    b.op(LDX_W, R3, R6, 4, 0);
    b.op(MOV64_X, R4, R2, 0, 0);
    b.op(ADD64_K, R4, 0, 0, i32::from(ETH));
    b.jump(JGT_X, R4, R3, 0, Label::Pass);
    // Another interface's MAC (the way back leaves elsewhere): the stack.
    b.op(LDX_W, R4, R2, 0, 0);
    b.op(LDX_W, R5, R10, FIB + FIB_SMAC, 0);
    b.jump(JNE_X, R4, R5, 0, Label::Pass);
    b.op(LDX_H, R4, R2, 4, 0);
    b.op(LDX_H, R5, R10, FIB + FIB_SMAC + 4, 0);
    b.jump(JNE_X, R4, R5, 0, Label::Pass);
    // The next hop's MAC where the answer takes its destination from.
    b.op(LDX_H, R4, R10, FIB + FIB_DMAC, 0);
    b.op(STX_H, R2, R4, 6, 0);
    b.op(LDX_W, R4, R10, FIB + FIB_DMAC + 2, 0);
    b.op(STX_W, R2, R4, 8, 0);
}

/// A loaded XDP program.
#[derive(Debug)]
pub(crate) struct Program {
    fd: OwnedFd,
}

impl Program {
    /// Loads `insns` as program `name` (at most 15 bytes kept); a refusal
    /// carries the verifier's log.
    pub(crate) fn load(insns: &[Insn], name: &str) -> io::Result<Program> {
        // Lode's MPL-2.0 permits the GNU GPL as a secondary licence, and the
        // kernel lets programs so declared call its GPL-only helpers
        // (bpf_fib_lookup, for the route check).
        let license = CString::new("Dual MPL/GPL").expect("no NUL");
        let mut log = vec![0u8; 1 << 16];
        let mut attr = ProgLoadAttr {
            prog_type: BPF_PROG_TYPE_XDP,
            insn_cnt: insns.len() as u32,
            insns: insns.as_ptr() as u64,
            license: license.as_ptr() as u64,
            log_level: 1,
            log_size: log.len() as u32,
            log_buf: log.as_mut_ptr() as u64,
            kern_version: 0,
            prog_flags: 0,
            prog_name: name16(name),
            prog_ifindex: 0,
            expected_attach_type: BPF_XDP,
        };
        match bpf_fd(BPF_PROG_LOAD, &mut attr) {
            Ok(fd) => Ok(Program { fd }),
            Err(e) => {
                let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
                let text = String::from_utf8_lossy(&log[..end]);
                Err(io::Error::new(
                    e.kind(),
                    format!("the kernel refused the XDP program ({e}); verifier log:\n{text}"),
                ))
            }
        }
    }

    /// Attaches the program to interface `ifindex` with a BPF link (native
    /// mode where the driver has it, else generic); it stays attached as
    /// long as the link's descriptor is open.
    pub(crate) fn attach(&self, ifindex: u32) -> io::Result<OwnedFd> {
        let mut attr = LinkCreateAttr {
            prog_fd: self.fd.as_raw_fd() as u32,
            target_ifindex: ifindex,
            attach_type: BPF_XDP,
            flags: 0,
        };
        bpf_fd(BPF_LINK_CREATE, &mut attr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loading needs privilege (CAP_BPF or root): elsewhere these skip.
    fn privileged(test: &str) -> bool {
        match XskMap::new(1) {
            Ok(_) => true,
            Err(e) => {
                eprintln!("SKIP {test}: cannot make a BPF map here ({e})");
                false
            }
        }
    }

    #[test]
    fn the_verifier_takes_the_program() {
        if !privileged("the_verifier_takes_the_program") {
            return;
        }
        let map = XskMap::new(4).unwrap();
        for ports in [&[53][..], &[53, 5353, 8053]] {
            for route_check in [false, true] {
                if let Err(e) =
                    Program::load(&program(ports, map.raw_fd(), route_check), "lode_dns")
                {
                    panic!("route check {route_check}: {e}");
                }
            }
        }
    }

    #[test]
    fn a_refusal_carries_the_verifier_log() {
        if !privileged("a_refusal_carries_the_verifier_log") {
            return;
        }
        // A packet byte read without checking the frame is that long.
        let mut b = Builder::default();
        b.op(LDX_W, R2, R1, 0, 0);
        b.op(LDX_B, R0, R2, 0, 0);
        b.op(EXIT, 0, 0, 0, 0);
        let e = Program::load(&b.finish(), "lode_bad").expect_err("the verifier refuses");
        let text = e.to_string();
        assert!(text.contains("verifier log:"), "{text}");
        assert!(text.contains("invalid access to packet"), "{text}");
    }

    #[test]
    fn jumps_land_on_their_labels() {
        let p = program(&[53, 5353], 7, false);
        let exits: Vec<usize> = (0..p.len()).filter(|&i| p[i].code == EXIT).collect();
        assert_eq!(exits.len(), 2);
        let pass = exits[0] + 1;
        for (i, insn) in p.iter().enumerate() {
            if matches!(insn.code, JA | JEQ_K | JNE_K | JGT_X) {
                let to = (i as i64 + 1 + i64::from(insn.off)) as usize;
                assert!(to > i && to < p.len(), "jump {i} lands at {to}");
                if insn.code == JNE_K {
                    assert_eq!(to, pass, "a failed check at {i} passes the frame");
                }
            }
        }
        // The map load is a 16-byte instruction with the map's descriptor.
        let ld = p.iter().position(|i| i.code == LD_IMM64).unwrap();
        assert_eq!(p[ld].imm, 7);
        assert_eq!(p[ld].regs >> 4, BPF_PSEUDO_MAP_FD);
        assert_eq!(
            p[ld + 1],
            Insn {
                code: 0,
                regs: 0,
                off: 0,
                imm: 0
            }
        );
        assert_eq!(
            net16(0x0800),
            if cfg!(target_endian = "little") {
                0x0008
            } else {
                0x0800
            }
        );
    }
}
