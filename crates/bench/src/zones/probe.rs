//! The questions the zone benchmarks ask: one query over UDP (with the DO
//! bit when signatures are wanted) or over TCP signed with TSIG, and one
//! TSIG-signed UPDATE; the answer section skimmed with `lode_wire::request`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use lode_wire::request::{self, Reply};
use lode_wire::{Name, Rtype};

use super::ZonesError;
use crate::update::{update_message, UpdateOp};

/// RRSIG's type code.
const RRSIG: Rtype = Rtype(46);

/// A reply: its RCODE and its answer records (type, RDATA).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    /// The RCODE.
    pub rcode: u8,
    /// The answer section: each record's type and RDATA.
    pub records: Vec<(Rtype, Vec<u8>)>,
}

impl Answer {
    /// Reads a reply's RCODE and answer section.
    fn of(msg: &[u8]) -> Option<Answer> {
        let rcode = Reply::of(msg)?.rcode;
        let records = request::answers(msg)
            .map(|a| (a.rtype, msg[a.rdata].to_vec()))
            .collect();
        Some(Answer { rcode, records })
    }

    /// Whether the answer holds a record of `rtype`.
    pub fn has(&self, rtype: Rtype) -> bool {
        self.records.iter().any(|(t, _)| *t == rtype)
    }

    /// Whether the answer holds an RRSIG over `covered` made with `algorithm`
    /// (RDATA: type covered, then the algorithm octet).
    pub fn signed(&self, covered: Rtype, algorithm: u8) -> bool {
        let head = [
            covered.0.to_be_bytes()[0],
            covered.0.to_be_bytes()[1],
            algorithm,
        ];
        self.records
            .iter()
            .any(|(t, r)| *t == RRSIG && r.get(..3) == Some(&head[..]))
    }
}

/// A query for `name`/`rtype`; with `dnssec` an OPT record (1232 octets) with DO set.
pub fn query(name: &Name, rtype: Rtype, id: u16, dnssec: bool) -> Vec<u8> {
    let mut q = request::query(id, name, rtype);
    if dnssec {
        // ARCOUNT 1: root owner, OPT, 1232, extended RCODE and version 0, DO, no options.
        q[10..12].copy_from_slice(&1u16.to_be_bytes());
        q.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0, 0, 0]);
    }
    q
}

/// The name `text` (absolute).
pub fn name(text: &str) -> Result<Name, ZonesError> {
    Name::parse(text, Some(&Name::root())).map_err(|e| ZonesError(format!("name {text}: {e}")))
}

/// Sends `msg` (its ID at the start) over UDP to `server` and waits up to
/// `timeout` for the reply with that ID. The socket is connected, as dig's:
/// a port nobody listens on yet fails at once rather than after `timeout`.
fn exchange_udp(server: SocketAddr, msg: &[u8], timeout: Duration) -> Option<Vec<u8>> {
    let sock = UdpSocket::bind(("127.0.0.1", 0)).ok()?;
    sock.connect(server).ok()?;
    sock.send(msg).ok()?;
    let until = Instant::now() + timeout;
    let mut buf = vec![0u8; 65535];
    loop {
        let left = until.checked_duration_since(Instant::now())?;
        sock.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .ok()?;
        let n = sock.recv(&mut buf).ok()?;
        if Reply::of(&buf[..n]).is_some_and(|h| h.id.to_be_bytes() == msg[..2]) {
            return Some(buf[..n].to_vec());
        }
    }
}

/// Asks `server` for `name`/`rtype` over UDP once; None without a reply in `timeout`.
pub fn ask(
    server: SocketAddr,
    name: &Name,
    rtype: Rtype,
    dnssec: bool,
    timeout: Duration,
) -> Option<Answer> {
    let id = next_id();
    Answer::of(&exchange_udp(
        server,
        &query(name, rtype, id, dnssec),
        timeout,
    )?)
}

/// Asks `server` for `name`/`rtype` over TCP, the query signed with `key`
/// (the reply's TSIG is not checked).
pub fn ask_tcp_signed(
    server: SocketAddr,
    name: &Name,
    rtype: Rtype,
    key: &lode_tsig::Key,
    timeout: Duration,
) -> Option<Answer> {
    let mut q = query(name, rtype, next_id(), false);
    lode_tsig::sign_request_vec(&mut q, key, lode_io::clock::unix_now()).ok()?;
    let mut s = TcpStream::connect_timeout(&server, timeout).ok()?;
    s.set_read_timeout(Some(timeout)).ok()?;
    let mut framed = (q.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&q);
    s.write_all(&framed).ok()?;
    let mut len = [0u8; 2];
    s.read_exact(&mut len).ok()?;
    let mut msg = vec![0u8; usize::from(u16::from_be_bytes(len))];
    s.read_exact(&mut msg).ok()?;
    Answer::of(&msg)
}

/// Adds `owner` A `address` to `zone` by one UPDATE over UDP signed with
/// `key`; the RCODE of the reply.
pub fn add_address(
    server: SocketAddr,
    zone: &Name,
    owner: &Name,
    address: [u8; 4],
    key: &lode_tsig::Key,
) -> Result<u8, ZonesError> {
    let op = UpdateOp::Add {
        owner: owner.clone(),
        rtype: Rtype::A,
        rdata: address.to_vec(),
    };
    let mut msg = update_message(next_id(), zone, &op);
    lode_tsig::sign_request_vec(&mut msg, key, lode_io::clock::unix_now())
        .map_err(|e| ZonesError(format!("TSIG: {e:?}")))?;
    let reply = exchange_udp(server, &msg, Duration::from_secs(5))
        .ok_or_else(|| ZonesError(format!("no reply to the update of {zone} from {server}")))?;
    Ok(Reply::of(&reply).map_or(0, |h| h.rcode))
}

/// A query ID: a counter, so that a late reply to one probe is not taken
/// for the next one's.
fn next_id() -> u16 {
    static NEXT: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(0x4c00);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_and_answers() {
        let n = name("z1.many.test").expect("name");
        let plain = query(&n, Rtype::SOA, 7, false);
        let signed = query(&n, Rtype::SOA, 7, true);
        assert_eq!(signed.len(), plain.len() + 11);
        assert_eq!(&signed[10..12], &[0, 1]);
        assert_eq!(&signed[signed.len() - 4..signed.len() - 2], &[0x80, 0]);
        // A reply: QR AA, one SOA and its RRSIG (ECDSA P-256) in the answer.
        let mut r = plain.clone();
        r[2] = 0x84;
        r[7] = 2;
        for (t, rdata) in [(6u16, vec![0u8; 22]), (46, vec![0, 6, 13, 3])] {
            r.extend_from_slice(&[0xC0, 12]);
            r.extend_from_slice(&t.to_be_bytes());
            r.extend_from_slice(&[0, 1, 0, 0, 0, 60]);
            r.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
            r.extend_from_slice(&rdata);
        }
        let a = Answer::of(&r).expect("a reply");
        assert!(a.has(Rtype::SOA) && !a.has(Rtype::A));
        assert!(a.signed(Rtype::SOA, 13));
        assert!(!a.signed(Rtype::SOA, 8) && !a.signed(Rtype::DNSKEY, 13));
        assert_eq!(a.rcode, 0);
    }
}
