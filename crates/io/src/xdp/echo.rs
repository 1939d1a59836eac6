//! The XDP echo: a program that turns every DNS query to one UDP port around
//! in the kernel, in the driver's receive path, and sends it back out of the
//! interface it came in on (XDP_TX). No socket, no user space: the cost of
//! this path alone, the floor under any server answering over XDP. Written,
//! loaded and attached like the server's program (bpf.rs).
//!
//! ```text
//!  frame ─▶ Ethernet IPv4 (no options, no fragment) or IPv6 (no extension header),
//!           UDP to the port, a DNS header with QR clear? ── no ──▶ XDP_PASS
//!              └ yes ─▶ QR set; IP addresses, UDP ports, MACs swapped;
//!                       UDP checksum: IPv4 0 (none), IPv6 updated (RFC 1624) ─▶ XDP_TX
//! ```
//!
//! Swapping addresses and ports leaves every checksum's sum as it was (the
//! IPv4 header's included); only the QR bit changes the UDP checksum, by
//! 0x8000 in the flags word, which IPv6 updates incrementally.
//!
//! On a veth, XDP_TX hands the frame to the peer's receive queue, which takes
//! it only while the peer has an XDP program of its own (GRO and threaded
//! NAPI do not do, on this kernel): [`XdpPass`] on the peer, when nothing
//! else (such as kxdpgun) holds it; otherwise the echoed frames vanish.

use std::os::fd::OwnedFd;

use super::bpf::net16;
use super::bpf::{self, Builder, Insn, Label};
use super::bpf::{
    ADD64_K, ADD64_X, AND64_K, EXIT, JA, JEQ_K, JGT_X, JNE_K, JSET_K, LDX_B, LDX_DW, LDX_H, LDX_W,
    MOV64_K, MOV64_X, OR64_K, R0, R1, R2, R3, R4, R5, RSH64_K, STX_B, STX_DW, STX_H, STX_W, ST_H,
    XDP_PASS, XDP_TX, XOR64_K,
};
use super::{ifindex, xdp_error};
use crate::IoError;

/// Offsets in the frame.
const ETH: i16 = 14;
/// IPv4: UDP header at 34, DNS header at 42.
const V4_UDP: i16 = ETH + 20;
/// IPv6: UDP header at 54, DNS header at 62.
const V6_UDP: i16 = ETH + 40;

/// Swaps the `size`-byte fields at `a` and `b` of the frame in r2 (r4, r5 scratch).
fn swap(b: &mut Builder, load: u8, store: u8, a: i16, c: i16) {
    b.op(load, R4, R2, a, 0);
    b.op(load, R5, R2, c, 0);
    b.op(store, R2, R5, a, 0);
    b.op(store, R2, R4, c, 0);
}

/// The echo program for UDP port `port`.
pub(super) fn program(port: u16) -> Vec<Insn> {
    let mut b = Builder::default();
    b.op(LDX_W, R2, R1, 0, 0); // r2 = ctx->data
    b.op(LDX_W, R3, R1, 4, 0); // r3 = ctx->data_end
    b.op(MOV64_X, R4, R2, 0, 0);
    b.op(ADD64_K, R4, 0, 0, i32::from(V4_UDP + 8 + 12));
    b.jump(JGT_X, R4, R3, 0, Label::Pass);
    b.op(LDX_H, R5, R2, 12, 0); // ethertype
    b.jump(JEQ_K, R5, 0, net16(0x86DD), Label::Ipv6);
    b.jump(JNE_K, R5, 0, net16(0x0800), Label::Pass);
    b.op(LDX_B, R5, R2, ETH, 0); // version 4, a 20-byte header
    b.jump(JNE_K, R5, 0, 0x45, Label::Pass);
    b.op(LDX_B, R5, R2, ETH + 9, 0); // protocol UDP
    b.jump(JNE_K, R5, 0, 17, Label::Pass);
    b.op(LDX_H, R5, R2, ETH + 6, 0); // no fragment
    b.op(AND64_K, R5, 0, 0, net16(0x3FFF));
    b.jump(JNE_K, R5, 0, 0, Label::Pass);
    b.op(LDX_H, R5, R2, V4_UDP + 2, 0); // destination port
    b.jump(JNE_K, R5, 0, net16(port), Label::Pass);
    b.op(LDX_B, R5, R2, V4_UDP + 8 + 2, 0); // QR clear: a query
    b.jump(JSET_K, R5, 0, 0x80, Label::Pass);
    b.op(OR64_K, R5, 0, 0, 0x80);
    b.op(STX_B, R2, R5, V4_UDP + 8 + 2, 0);
    swap(&mut b, LDX_W, STX_W, ETH + 12, ETH + 16); // addresses
    swap(&mut b, LDX_H, STX_H, V4_UDP, V4_UDP + 2); // ports
    b.op(ST_H, R2, 0, V4_UDP + 6, 0); // no UDP checksum
    b.jump(JA, 0, 0, 0, Label::Tx);

    b.label(Label::Ipv6);
    b.op(ADD64_K, R4, 0, 0, 20); // a 40-byte header
    b.jump(JGT_X, R4, R3, 0, Label::Pass);
    b.op(LDX_B, R5, R2, ETH + 6, 0); // next header UDP
    b.jump(JNE_K, R5, 0, 17, Label::Pass);
    b.op(LDX_H, R5, R2, V6_UDP + 2, 0);
    b.jump(JNE_K, R5, 0, net16(port), Label::Pass);
    b.op(LDX_B, R5, R2, V6_UDP + 8 + 2, 0);
    b.jump(JSET_K, R5, 0, 0x80, Label::Pass);
    b.op(OR64_K, R5, 0, 0, 0x80);
    b.op(STX_B, R2, R5, V6_UDP + 8 + 2, 0);
    swap(&mut b, LDX_DW, STX_DW, ETH + 8, ETH + 24); // addresses, 8 bytes at a time
    swap(&mut b, LDX_DW, STX_DW, ETH + 16, ETH + 32);
    swap(&mut b, LDX_H, STX_H, V6_UDP, V6_UDP + 2);
    // RFC 1624 eqn. 3, HC' = ~(~HC + ~m + m'), with m' = m + 0x8000: the
    // sum as the little-endian loads see it (ones' complement sums do not
    // care about byte order: 0x8000 in network order reads as 0x0080).
    b.op(LDX_H, R4, R2, V6_UDP + 6, 0);
    b.op(XOR64_K, R4, 0, 0, 0xFFFF);
    b.op(ADD64_K, R4, 0, 0, net16(0x8000));
    b.op(MOV64_X, R5, R4, 0, 0); // end-around carry (one at most)
    b.op(RSH64_K, R5, 0, 0, 16);
    b.op(AND64_K, R4, 0, 0, 0xFFFF);
    b.op(ADD64_X, R4, R5, 0, 0);
    b.op(XOR64_K, R4, 0, 0, 0xFFFF);
    // A computed 0 is sent as 0xFFFF (RFC 768; 0 means none, which IPv6 forbids).
    b.op(JNE_K, R4, 0, 1, 0);
    b.op(MOV64_K, R4, 0, 0, 0xFFFF);
    b.op(STX_H, R2, R4, V6_UDP + 6, 0);

    b.label(Label::Tx);
    swap(&mut b, LDX_W, STX_W, 0, 6); // MACs: 4 bytes, then 2
    swap(&mut b, LDX_H, STX_H, 4, 10);
    b.op(MOV64_K, R0, 0, 0, XDP_TX);
    b.op(EXIT, 0, 0, 0, 0);
    b.label(Label::Pass);
    b.op(MOV64_K, R0, 0, 0, XDP_PASS);
    b.op(EXIT, 0, 0, 0, 0);
    b.finish()
}

/// The XDP echo attached to an interface: every DNS query (QR clear) to the
/// UDP port, over IPv4 or IPv6, goes back where it came from with QR set,
/// turned around in the kernel; all other traffic passes. Detached when
/// dropped, or when the process ends however it ends (a BPF link).
///
/// Needs root (or CAP_NET_ADMIN with CAP_BPF or CAP_SYS_ADMIN). On a veth the
/// peer needs an XDP program of its own to receive the echoes ([`XdpPass`]).
#[derive(Debug)]
pub struct Echo {
    iface: String,
    port: u16,
    /// Closing it detaches the program.
    _link: OwnedFd,
    _program: bpf::Program,
}

impl Echo {
    /// Loads the echo for `port` and attaches it to `iface` (native mode
    /// where the driver has it, else generic).
    pub fn attach(iface: &str, port: u16) -> Result<Echo, IoError> {
        let index = ifindex(iface).map_err(|e| xdp_error(iface, "interface", e))?;
        let program = bpf::Program::load(&program(port), "lode_echo")
            .map_err(|e| xdp_error(iface, "program", e))?;
        let link = program
            .attach(index)
            .map_err(|e| xdp_error(iface, "attach", e))?;
        Ok(Echo {
            iface: iface.to_string(),
            port,
            _link: link,
            _program: program,
        })
    }

    /// The interface it is attached to.
    pub fn iface(&self) -> &str {
        &self.iface
    }

    /// The UDP port it answers on.
    pub fn port(&self) -> u16 {
        self.port
    }
}

/// An XDP program that passes every frame on to the kernel, attached to an
/// interface: on a veth, it is what lets the end receive frames its peer's
/// program sends with XDP_TX (as [`Echo`] does). Detached when dropped, or
/// when the process ends.
#[derive(Debug)]
pub struct XdpPass {
    iface: String,
    _link: OwnedFd,
    _program: bpf::Program,
}

impl XdpPass {
    /// Loads the program and attaches it to `iface`.
    pub fn attach(iface: &str) -> Result<XdpPass, IoError> {
        let index = ifindex(iface).map_err(|e| xdp_error(iface, "interface", e))?;
        let mut b = Builder::default();
        b.op(MOV64_K, R0, 0, 0, XDP_PASS);
        b.op(EXIT, 0, 0, 0, 0);
        let program = bpf::Program::load(&b.finish(), "lode_pass")
            .map_err(|e| xdp_error(iface, "program", e))?;
        let link = program
            .attach(index)
            .map_err(|e| xdp_error(iface, "attach", e))?;
        Ok(XdpPass {
            iface: iface.to_string(),
            _link: link,
            _program: program,
        })
    }

    /// The interface it is attached to.
    pub fn iface(&self) -> &str {
        &self.iface
    }
}

#[cfg(test)]
#[path = "echo_tests.rs"]
mod tests;
