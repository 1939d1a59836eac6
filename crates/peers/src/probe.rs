//! The readiness probe: one SOA query over UDP and the three header fields
//! that tell whether the zone is served. Written here (a few lines of RFC
//! 1035) so that the harness depends on no crate of the server it judges.

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

/// What a server answered to an SOA query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The RCODE (low four bits).
    pub rcode: u8,
    /// The AA bit.
    pub authoritative: bool,
    /// ANCOUNT.
    pub answers: u16,
}

impl Answer {
    /// NOERROR, authoritative, with an answer: the zone is loaded.
    pub fn serves_zone(&self) -> bool {
        self.rcode == 0 && self.authoritative && self.answers > 0
    }
}

/// The wire form of `zone SOA IN` with ID `id`, no RD.
fn query(zone: &str, id: u16) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in zone
        .trim_end_matches('.')
        .split('.')
        .filter(|l| !l.is_empty())
    {
        m.push(label.len().min(63) as u8);
        m.extend_from_slice(&label.as_bytes()[..label.len().min(63)]);
    }
    m.extend_from_slice(&[0, 0, 6, 0, 1]);
    m
}

/// Asks `server` for `zone`'s SOA over UDP once; None when nothing (or
/// nothing with our ID) came back within `timeout`.
pub fn soa_query(server: SocketAddr, zone: &str, timeout: Duration) -> Option<Answer> {
    let local: SocketAddr = if server.is_ipv4() {
        ([127, 0, 0, 1], 0).into()
    } else {
        ([0u16, 0, 0, 0, 0, 0, 0, 1], 0).into()
    };
    let sock = UdpSocket::bind(local).ok()?;
    sock.set_read_timeout(Some(timeout)).ok()?;
    let id = (std::process::id() as u16) ^ 0x5a5a;
    sock.send_to(&query(zone, id), server).ok()?;
    let mut buf = [0u8; 4096];
    let n = sock.recv(&mut buf).ok()?;
    let m = &buf[..n];
    if n < 12 || u16::from_be_bytes([m[0], m[1]]) != id || m[2] & 0x80 == 0 {
        return None;
    }
    Some(Answer {
        rcode: m[3] & 0x0F,
        authoritative: m[2] & 0x04 != 0,
        answers: u16::from_be_bytes([m[6], m[7]]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_wire_form() {
        assert_eq!(
            query("example.com.", 7),
            b"\x00\x07\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x06\x00\x01"
        );
        assert_eq!(query(".", 1)[12..], [0, 0, 6, 0, 1]);
    }
}
