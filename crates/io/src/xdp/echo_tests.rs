//! The echo program checked without privilege: its jumps, and its effect
//! on frames, run by a small interpreter of the instructions it uses; with
//! privilege, the kernel's verifier takes it.

use std::net::SocketAddr;

use super::*;
use crate::xdp::bpf::{Insn, XskMap};
use crate::xdp::frame;

/// Where the interpreter puts the frame in its address space (the context
/// is address 0: `data` at +0, `data_end` at +4).
const BASE: u64 = 0x1000_0000;

/// Runs `prog` on `frame` (changed in place); the XDP action it returns.
/// Panics on an instruction it does not know or an access outside the
/// frame (which the verifier would have refused).
fn run(prog: &[Insn], frame: &mut [u8]) -> i32 {
    let mut r = [0u64; 11];
    let len = frame.len() as u64;
    let at = |addr: u64, size: u64| -> usize {
        assert!(
            addr >= BASE && addr + size <= BASE + len,
            "access of {size} bytes at frame offset {} (frame {len})",
            addr as i64 - BASE as i64
        );
        (addr - BASE) as usize
    };
    let mut pc = 0usize;
    for _ in 0..10_000 {
        let i = prog[pc];
        let (dst, src) = (usize::from(i.regs & 0xF), usize::from(i.regs >> 4));
        let addr = |base: u64| base.wrapping_add(i.off as i64 as u64);
        let imm = i.imm as i64 as u64;
        pc += 1;
        match i.code {
            LDX_W if src == 1 => r[dst] = if i.off == 0 { BASE } else { BASE + len },
            LDX_B | LDX_H | LDX_W | LDX_DW => {
                let size = match i.code {
                    LDX_B => 1,
                    LDX_H => 2,
                    LDX_W => 4,
                    _ => 8,
                };
                let p = at(addr(r[src]), size);
                let mut b = [0u8; 8];
                b[..size as usize].copy_from_slice(&frame[p..p + size as usize]);
                r[dst] = u64::from_le_bytes(b);
            }
            STX_B | STX_H | STX_W | STX_DW | ST_H => {
                let size = match i.code {
                    STX_B => 1,
                    STX_H | ST_H => 2,
                    STX_W => 4,
                    _ => 8,
                };
                let v = if i.code == ST_H { imm } else { r[src] };
                let p = at(addr(r[dst]), size);
                frame[p..p + size as usize].copy_from_slice(&v.to_le_bytes()[..size as usize]);
            }
            MOV64_X => r[dst] = r[src],
            MOV64_K => r[dst] = imm,
            ADD64_X => r[dst] = r[dst].wrapping_add(r[src]),
            ADD64_K => r[dst] = r[dst].wrapping_add(imm),
            AND64_K => r[dst] &= imm,
            OR64_K => r[dst] |= imm,
            XOR64_K => r[dst] ^= imm,
            RSH64_K => r[dst] >>= imm,
            JA | JEQ_K | JNE_K | JGT_X | JSET_K => {
                let taken = match i.code {
                    JA => true,
                    JEQ_K => r[dst] == imm,
                    JNE_K => r[dst] != imm,
                    JGT_X => r[dst] > r[src],
                    _ => r[dst] & imm != 0,
                };
                if taken {
                    pc = (pc as i64 + i64::from(i.off)) as usize;
                }
            }
            EXIT => return r[0] as i32,
            c => panic!("the interpreter does not know opcode {c:#x}"),
        }
    }
    panic!("no exit");
}

/// A query frame with right checksums, from `peer` to `local`.
fn query(peer: &str, local: &str, payload: &[u8]) -> Vec<u8> {
    let peer: SocketAddr = peer.parse().unwrap();
    let local: SocketAddr = local.parse().unwrap();
    let v6 = peer.is_ipv6();
    let hdr = frame::headers(v6);
    let mut f = vec![0u8; hdr + payload.len()];
    f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    match (peer.ip(), local.ip()) {
        (std::net::IpAddr::V4(s), std::net::IpAddr::V4(d)) => {
            f[12..14].copy_from_slice(&[0x08, 0x00]);
            f[ETH as usize] = 0x45;
            f[ETH as usize + 8] = 64;
            f[ETH as usize + 9] = 17;
            f[26..30].copy_from_slice(&s.octets());
            f[30..34].copy_from_slice(&d.octets());
        }
        (std::net::IpAddr::V6(s), std::net::IpAddr::V6(d)) => {
            f[12..14].copy_from_slice(&[0x86, 0xDD]);
            f[ETH as usize] = 0x60;
            f[ETH as usize + 6] = 17;
            f[ETH as usize + 7] = 64;
            f[22..38].copy_from_slice(&s.octets());
            f[38..54].copy_from_slice(&d.octets());
        }
        _ => panic!("one family"),
    }
    let udp = hdr - 8;
    f[udp..udp + 2].copy_from_slice(&peer.port().to_be_bytes());
    f[udp + 2..udp + 4].copy_from_slice(&local.port().to_be_bytes());
    f[hdr..].copy_from_slice(payload);
    let q = frame::Query {
        payload: hdr..hdr + payload.len(),
        peer,
        local,
    };
    // The answer writer fills lengths and checksums of a frame laid out so.
    let n = frame::finish(&mut f, &q, payload.len());
    assert_eq!(n, f.len());
    frame::parse(&f).expect("a well-formed query frame");
    f
}

/// A DNS query for `example.com. A` with ID `id` and flags byte `flags`.
fn dns(id: u16, flags: u8) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend_from_slice(&[flags, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    m.extend_from_slice(b"\x07example\x03com\x00\x00\x01\x00\x01");
    m
}

#[test]
fn queries_come_back_with_qr_set_and_right_checksums() {
    let p = program(53);
    for (peer, local) in [
        ("10.53.0.2:40000", "10.53.0.1:53"),
        ("[fd53::2]:40000", "[fd53::1]:53"),
    ] {
        // IDs and flags that exercise the checksum's carries.
        for (id, flags) in [
            (0x1234, 0x01),
            (0xFFFF, 0x00),
            (0x0000, 0x79),
            (0x7F7F, 0x10),
        ] {
            let q = query(peer, local, &dns(id, flags));
            let mut f = q.clone();
            assert_eq!(run(&p, &mut f), XDP_TX, "{peer} id {id:#x}");
            assert_eq!(&f[0..6], &q[6..12]);
            assert_eq!(&f[6..12], &q[0..6]);
            let a = frame::parse(&f).unwrap_or_else(|e| panic!("{peer} id {id:#x}: {e:?}"));
            assert_eq!(a.peer, local.parse().unwrap());
            assert_eq!(a.local, peer.parse().unwrap());
            let mut expect = dns(id, flags | 0x80);
            assert_eq!(&f[a.payload.clone()], &expect[..]);
            expect[2] &= 0x7F;
            assert_eq!(&q[a.payload], &expect[..]);
            if peer.starts_with('[') {
                assert_ne!(&f[60..62], &[0, 0], "IPv6 keeps a checksum");
            } else {
                assert_eq!(&f[40..42], &[0, 0], "IPv4: none");
            }
        }
    }
}

#[test]
fn everything_else_passes_untouched() {
    let p = program(53);
    let mut cases = vec![
        // Another port; an answer (QR set: no ping-pong between two echoes).
        query("10.53.0.2:40000", "10.53.0.1:54", &dns(1, 0)),
        query("10.53.0.2:40000", "10.53.0.1:53", &dns(1, 0x80)),
        query("[fd53::2]:40000", "[fd53::1]:53", &dns(1, 0x84)),
        // Shorter than a DNS header.
        query("10.53.0.2:40000", "10.53.0.1:53", &[0u8; 11]),
        query("[fd53::2]:40000", "[fd53::1]:53", &[0u8; 11]),
    ];
    let mut frag = query("10.53.0.2:40000", "10.53.0.1:53", &dns(1, 0));
    frag[20] = 0x20; // more fragments
    cases.push(frag);
    let mut tcp = query("10.53.0.2:40000", "10.53.0.1:53", &dns(1, 0));
    tcp[23] = 6;
    cases.push(tcp);
    let mut arp = query("10.53.0.2:40000", "10.53.0.1:53", &dns(1, 0));
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    cases.push(arp);
    cases.push(vec![0u8; 20]);
    for (n, c) in cases.into_iter().enumerate() {
        let mut f = c.clone();
        assert_eq!(run(&p, &mut f), XDP_PASS, "case {n}");
        assert_eq!(f, c, "case {n} untouched");
    }
}

#[test]
fn jumps_stay_inside_and_checks_lead_to_pass() {
    let p = program(5353);
    assert!(p.len() < 200, "{} instructions", p.len());
    let pass = p.len() - 2;
    assert_eq!(p[pass].imm, XDP_PASS);
    assert_eq!(p[p.len() - 1].code, EXIT);
    for (i, insn) in p.iter().enumerate() {
        if matches!(insn.code, JA | JEQ_K | JNE_K | JGT_X | JSET_K) {
            let to = (i as i64 + 1 + i64::from(insn.off)) as usize;
            assert!(to > i && to < p.len(), "jump {i} lands at {to}");
            if matches!(insn.code, JGT_X | JSET_K) {
                assert_eq!(to, pass, "a failed check at {i} passes the frame");
            }
        }
    }
    assert_eq!(p.iter().filter(|i| i.code == EXIT).count(), 2);
}

#[test]
fn the_verifier_takes_the_echo() {
    if let Err(e) = XskMap::new(1) {
        eprintln!("SKIP the_verifier_takes_the_echo: cannot make a BPF map here ({e})");
        return;
    }
    for port in [53, 5353, 65535] {
        if let Err(e) = bpf::Program::load(&program(port), "lode_echo") {
            panic!("{e}");
        }
    }
}
