//! Ethernet frames of UDP datagrams: a query frame checked (lengths, IPv4
//! header checksum, UDP checksum) and its answer's headers written in place
//! in a transmit frame, addresses and ports swapped, lengths and checksums
//! filled in once the payload is there. Plain byte slices: no `unsafe`.
//!
//! ```text
//!  query frame  │ eth 14 │ IPv4 20 / IPv6 40 │ UDP 8 │ DNS … │
//!                  ▼ swap MACs, addresses, ports; new lengths, checksums
//!  answer frame │ eth 14 │ IPv4 20 / IPv6 40 │ UDP 8 │ answer written by the handler │
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::ops::Range;

/// Ethernet header (no VLAN tag: the XDP program passes tagged frames on).
pub(crate) const ETH: usize = 14;
const IPV4: usize = 20;
const IPV6: usize = 40;
const UDP: usize = 8;
const ETH_IPV4: u16 = 0x0800;
const ETH_IPV6: u16 = 0x86DD;
const PROTO_UDP: u8 = 17;
/// Hop limit of answers (Linux's default).
const TTL: u8 = 64;

/// Headers in front of an answer's payload: Ethernet, IPv4 or IPv6, UDP.
pub(crate) const fn headers(v6: bool) -> usize {
    ETH + if v6 { IPV6 } else { IPV4 } + UDP
}

/// A query frame that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Query {
    /// Where the DNS message is in the frame.
    pub(crate) payload: Range<usize>,
    /// The sender.
    pub(crate) peer: SocketAddr,
    /// The address and port it was sent to.
    pub(crate) local: SocketAddr,
}

impl Query {
    fn v6(&self) -> bool {
        self.peer.is_ipv6()
    }
}

/// Why a frame was not taken as a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reject {
    /// Not Ethernet + IPv4/IPv6 + UDP, a fragment, or IPv4 options.
    NotUdp,
    /// Lengths that do not fit the frame or each other.
    Length,
    /// A wrong IPv4 header checksum or UDP checksum (or none on IPv6).
    Checksum,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Checks a received frame and finds its UDP payload.
pub(crate) fn parse(frame: &[u8]) -> Result<Query, Reject> {
    if frame.len() < ETH + IPV4 + UDP {
        return Err(Reject::NotUdp);
    }
    match be16(frame, 12) {
        ETH_IPV4 => parse_v4(frame),
        ETH_IPV6 => parse_v6(frame),
        _ => Err(Reject::NotUdp),
    }
}

fn parse_v4(frame: &[u8]) -> Result<Query, Reject> {
    let ip = &frame[ETH..];
    // No options (the XDP program passes those to the kernel), no fragments.
    if ip[0] != 0x45 || ip[9] != PROTO_UDP || be16(ip, 6) & 0x3FFF != 0 {
        return Err(Reject::NotUdp);
    }
    let total = usize::from(be16(ip, 2));
    if total < IPV4 + UDP || total > ip.len() {
        return Err(Reject::Length);
    }
    if fold(sum(&ip[..IPV4], 0)) != 0xFFFF {
        return Err(Reject::Checksum);
    }
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let udp = &ip[IPV4..total];
    let udp_len = usize::from(be16(udp, 4));
    if udp_len < UDP || udp_len > udp.len() {
        return Err(Reject::Length);
    }
    let udp = &udp[..udp_len];
    // A zero checksum: none computed, allowed over IPv4 (RFC 768).
    if be16(udp, 6) != 0 && fold(sum(udp, pseudo_v4(src, dst, udp_len))) != 0xFFFF {
        return Err(Reject::Checksum);
    }
    let start = ETH + IPV4 + UDP;
    Ok(Query {
        payload: start..ETH + IPV4 + udp_len,
        peer: SocketAddr::new(IpAddr::V4(src), be16(udp, 0)),
        local: SocketAddr::new(IpAddr::V4(dst), be16(udp, 2)),
    })
}

fn parse_v6(frame: &[u8]) -> Result<Query, Reject> {
    if frame.len() < ETH + IPV6 + UDP {
        return Err(Reject::NotUdp);
    }
    let ip = &frame[ETH..];
    // No extension headers (the XDP program passes those to the kernel).
    if ip[0] >> 4 != 6 || ip[6] != PROTO_UDP {
        return Err(Reject::NotUdp);
    }
    let payload = usize::from(be16(ip, 4));
    if payload < UDP || IPV6 + payload > ip.len() {
        return Err(Reject::Length);
    }
    let src = addr6(&ip[8..24]);
    let dst = addr6(&ip[24..40]);
    let udp = &ip[IPV6..IPV6 + payload];
    let udp_len = usize::from(be16(udp, 4));
    if udp_len != payload {
        return Err(Reject::Length);
    }
    // Over IPv6 the UDP checksum is mandatory (RFC 8200 §8.1).
    if be16(udp, 6) == 0 || fold(sum(udp, pseudo_v6(&src, &dst, udp_len))) != 0xFFFF {
        return Err(Reject::Checksum);
    }
    Ok(Query {
        payload: ETH + IPV6 + UDP..ETH + IPV6 + udp_len,
        peer: SocketAddr::new(IpAddr::V6(src), be16(udp, 0)),
        local: SocketAddr::new(IpAddr::V6(dst), be16(udp, 2)),
    })
}

fn addr6(b: &[u8]) -> Ipv6Addr {
    let mut a = [0u8; 16];
    a.copy_from_slice(&b[..16]);
    Ipv6Addr::from(a)
}

/// Writes the answer's Ethernet, IP and UDP headers into `out` from the
/// query's (addresses and ports swapped); lengths and checksums come with
/// [`finish`]. Returns the offset of the answer's payload.
pub(crate) fn begin_answer(query_frame: &[u8], q: &Query, out: &mut [u8]) -> usize {
    // Ethernet: back to where it came from.
    out[0..6].copy_from_slice(&query_frame[6..12]);
    out[6..12].copy_from_slice(&query_frame[0..6]);
    let ip_in = &query_frame[ETH..];
    if q.v6() {
        out[12..14].copy_from_slice(&ETH_IPV6.to_be_bytes());
        let ip = &mut out[ETH..];
        // Version 6, the query's DSCP (not its ECN), no flow label.
        let tc = ((u32::from(ip_in[0] & 0x0F) << 4) | u32::from(ip_in[1] >> 4)) & 0xFC;
        let word = (6u32 << 28) | (tc << 20);
        ip[0..4].copy_from_slice(&word.to_be_bytes());
        ip[6] = PROTO_UDP;
        ip[7] = TTL;
        ip[8..24].copy_from_slice(&ip_in[24..40]);
        ip[24..40].copy_from_slice(&ip_in[8..24]);
        let udp = &mut ip[IPV6..];
        udp[0..2].copy_from_slice(&ip_in[IPV6 + 2..IPV6 + 4]);
        udp[2..4].copy_from_slice(&ip_in[IPV6..IPV6 + 2]);
        headers(true)
    } else {
        out[12..14].copy_from_slice(&ETH_IPV4.to_be_bytes());
        let ip = &mut out[ETH..];
        ip[0] = 0x45;
        ip[1] = ip_in[1] & 0xFC; // DSCP kept, ECN not
                                 // Identification 0 and don't-fragment: an answer is never fragmented here.
        ip[4..8].copy_from_slice(&[0, 0, 0x40, 0]);
        ip[8] = TTL;
        ip[9] = PROTO_UDP;
        ip[12..16].copy_from_slice(&ip_in[16..20]);
        ip[16..20].copy_from_slice(&ip_in[12..16]);
        let udp = &mut ip[IPV4..];
        udp[0..2].copy_from_slice(&ip_in[IPV4 + 2..IPV4 + 4]);
        udp[2..4].copy_from_slice(&ip_in[IPV4..IPV4 + 2]);
        headers(false)
    }
}

/// Fills in the lengths and checksums of an answer of `len` payload bytes
/// begun with [`begin_answer`]; returns the frame's length.
pub(crate) fn finish(out: &mut [u8], q: &Query, len: usize) -> usize {
    let v6 = q.v6();
    let hdr = headers(v6);
    let udp_len = UDP + len;
    let (ip_len, udp_at) = if v6 {
        (IPV6 + udp_len, ETH + IPV6)
    } else {
        (IPV4 + udp_len, ETH + IPV4)
    };
    {
        let udp = &mut out[udp_at..udp_at + udp_len];
        udp[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
        udp[6..8].copy_from_slice(&[0, 0]);
    }
    let pseudo = if v6 {
        let ip = &mut out[ETH..];
        ip[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
        pseudo_v6(&addr6(&ip[8..24]), &addr6(&ip[24..40]), udp_len)
    } else {
        let ip = &mut out[ETH..ETH + IPV4];
        ip[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
        ip[10..12].copy_from_slice(&[0, 0]);
        let c = !fold(sum(ip, 0));
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
        let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
        pseudo_v4(src, dst, udp_len)
    };
    let udp = &mut out[udp_at..udp_at + udp_len];
    let mut c = !fold(sum(udp, pseudo));
    // A computed zero is sent as all ones (zero means "none", RFC 768).
    if c == 0 {
        c = 0xFFFF;
    }
    udp[6..8].copy_from_slice(&c.to_be_bytes());
    debug_assert_eq!(hdr + len, ETH + ip_len);
    ETH + ip_len
}

/// The one's-complement sum of the IPv4 pseudo-header (RFC 768).
fn pseudo_v4(src: Ipv4Addr, dst: Ipv4Addr, udp_len: usize) -> u64 {
    let (s, d) = (src.octets(), dst.octets());
    u64::from(u16::from_be_bytes([s[0], s[1]]))
        + u64::from(u16::from_be_bytes([s[2], s[3]]))
        + u64::from(u16::from_be_bytes([d[0], d[1]]))
        + u64::from(u16::from_be_bytes([d[2], d[3]]))
        + u64::from(PROTO_UDP)
        + udp_len as u64
}

/// The one's-complement sum of the IPv6 pseudo-header (RFC 8200 §8.1).
fn pseudo_v6(src: &Ipv6Addr, dst: &Ipv6Addr, udp_len: usize) -> u64 {
    let words = src.segments().into_iter().chain(dst.segments());
    words.map(u64::from).sum::<u64>() + u64::from(PROTO_UDP) + udp_len as u64
}

/// Adds `data` as big-endian 16-bit words (an odd last byte padded with
/// zero) to `acc`, eight bytes at a time.
fn sum(data: &[u8], mut acc: u64) -> u64 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        // Two 32-bit halves: their sum of 16-bit words folds the same way.
        acc += (w >> 32) + (w & 0xFFFF_FFFF);
    }
    let rest = chunks.remainder();
    let mut pairs = rest.chunks_exact(2);
    for p in &mut pairs {
        acc += u64::from(u16::from_be_bytes([p[0], p[1]]));
    }
    if let [last] = pairs.remainder() {
        acc += u64::from(*last) << 8;
    }
    acc
}

/// Folds a sum to 16 bits with end-around carries.
fn fold(mut acc: u64) -> u16 {
    while acc > 0xFFFF {
        acc = (acc & 0xFFFF) + (acc >> 16);
    }
    acc as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A query frame as a kernel would send it (checksums right).
    fn frame(v6: bool, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; headers(v6) + payload.len()];
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        let q = if v6 {
            f[12..14].copy_from_slice(&ETH_IPV6.to_be_bytes());
            f[ETH] = 0x60;
            f[ETH + 6] = PROTO_UDP;
            f[ETH + 7] = 64;
            f[ETH + 8..ETH + 24].copy_from_slice(&"fd00::2".parse::<Ipv6Addr>().unwrap().octets());
            f[ETH + 24..ETH + 40].copy_from_slice(&"fd00::1".parse::<Ipv6Addr>().unwrap().octets());
            Query {
                payload: 0..0,
                peer: "[fd00::2]:4000".parse().unwrap(),
                local: "[fd00::1]:53".parse().unwrap(),
            }
        } else {
            f[12..14].copy_from_slice(&ETH_IPV4.to_be_bytes());
            f[ETH] = 0x45;
            f[ETH + 8] = 64;
            f[ETH + 9] = PROTO_UDP;
            f[ETH + 12..ETH + 16].copy_from_slice(&[10, 0, 0, 2]);
            f[ETH + 16..ETH + 20].copy_from_slice(&[10, 0, 0, 1]);
            Query {
                payload: 0..0,
                peer: "10.0.0.2:4000".parse().unwrap(),
                local: "10.0.0.1:53".parse().unwrap(),
            }
        };
        let at = headers(v6) - UDP;
        f[at..at + 2].copy_from_slice(&4000u16.to_be_bytes());
        f[at + 2..at + 4].copy_from_slice(&53u16.to_be_bytes());
        f[headers(v6)..].copy_from_slice(payload);
        // The sender's headers are the answer's with the roles swapped:
        // finish() computes them the same way.
        let swapped = Query {
            peer: q.local,
            local: q.peer,
            ..q
        };
        finish(&mut f, &swapped, payload.len());
        f
    }

    #[test]
    fn a_query_parses_and_its_answer_checks() {
        for v6 in [false, true] {
            for len in [12, 13, 33, 512] {
                let payload: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
                let f = frame(v6, &payload);
                let q = parse(&f).expect("parses");
                assert_eq!(&f[q.payload.clone()], &payload[..]);
                assert_eq!(q.peer.port(), 4000);
                assert_eq!(q.local.port(), 53);
                let mut out = vec![0u8; 2048];
                let at = begin_answer(&f, &q, &mut out);
                let answer = [0xAB; 101];
                out[at..at + answer.len()].copy_from_slice(&answer);
                let n = finish(&mut out, &q, answer.len());
                let a = parse(&out[..n]).expect("the answer checks");
                assert_eq!(a.peer, q.local);
                assert_eq!(a.local, q.peer);
                assert_eq!(&out[a.payload], &answer[..]);
                assert_eq!(&out[0..6], &f[6..12]);
            }
        }
    }

    #[test]
    fn bad_checksums_and_lengths_are_rejected() {
        for v6 in [false, true] {
            let f = frame(v6, &[1; 20]);
            let mut bad = f.clone();
            *bad.last_mut().unwrap() ^= 1;
            assert_eq!(parse(&bad), Err(Reject::Checksum));
            let mut short = f.clone();
            short.truncate(f.len() - 1);
            assert_eq!(parse(&short), Err(Reject::Length));
            let mut other = f.clone();
            other[ETH + if v6 { 6 } else { 9 }] = 6;
            assert_eq!(parse(&other), Err(Reject::NotUdp));
        }
        // IPv4: a bad header checksum; no UDP checksum is allowed.
        let mut f = frame(false, &[1; 20]);
        f[ETH + 8] = 63;
        assert_eq!(parse(&f), Err(Reject::Checksum));
        let mut f = frame(false, &[1; 20]);
        f[ETH + IPV4 + 6..ETH + IPV4 + 8].copy_from_slice(&[0, 0]);
        assert!(parse(&f).is_ok());
        // IPv6: none is not allowed.
        let mut f = frame(true, &[1; 20]);
        f[ETH + IPV6 + 6..ETH + IPV6 + 8].copy_from_slice(&[0, 0]);
        assert_eq!(parse(&f), Err(Reject::Checksum));
        // Padding after the IP packet (short Ethernet frames) is ignored.
        let mut f = frame(false, &[1; 4]);
        f.extend_from_slice(&[0; 10]);
        assert_eq!(parse(&f).unwrap().payload.len(), 4);
    }
}
