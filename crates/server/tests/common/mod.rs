//! Helpers shared by the server tests: scratch folders, zone texts, queries.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use lode_wire::{Name, Rtype};
use lode_zonedb::ZoneSet;

/// A scratch folder removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("lode-server-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A small zone `origin` whose www has address `www` and SOA serial `serial`.
pub fn zone_text(origin: &str, serial: u32, www: &str) -> String {
    format!(
        "$ORIGIN {origin}\n$TTL 300\n@ SOA ns1 hostmaster {serial} 3600 600 86400 300\n@ NS ns1\nns1 A 192.0.2.53\nwww A {www}\n"
    )
}

/// The addresses of `name`'s A RRset in the published set, as text.
pub fn a_records(zones: &ZoneSet, name: &str) -> Vec<String> {
    let name: Name = name.parse().unwrap();
    let Some(slot) = zones.find_zone(name.as_ref()) else {
        return Vec::new();
    };
    let zone = slot.load();
    let Some(id) = zone.find(name.as_ref()) else {
        return Vec::new();
    };
    match zone.node(id).rrset(Rtype::A) {
        Some(set) => set
            .rdatas()
            .map(|r| format!("{}.{}.{}.{}", r[0], r[1], r[2], r[3]))
            .collect(),
        None => Vec::new(),
    }
}

/// The serial of the zone at `origin`, if served.
pub fn serial(zones: &Arc<ZoneSet>, origin: &str) -> Option<u32> {
    let name: Name = origin.parse().unwrap();
    zones.get(name.as_ref()).map(|z| z.serial())
}

/// A query for (name, A) with this ID, in wire form.
pub fn query(id: u16, name: &str) -> Vec<u8> {
    let name: Name = name.parse().unwrap();
    let mut q = id.to_be_bytes().to_vec();
    q.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    q.extend_from_slice(name.as_wire());
    q.extend_from_slice(&[0, 1, 0, 1]);
    q
}

/// Sends a query over UDP; returns the response.
pub fn ask_udp(addr: SocketAddr, q: &[u8]) -> Vec<u8> {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.send_to(q, addr).unwrap();
    let mut buf = vec![0u8; 65535];
    let (n, _) = s.recv_from(&mut buf).expect("a UDP response within 5 s");
    buf.truncate(n);
    buf
}

/// Sends a query over TCP; returns the response.
pub fn ask_tcp(addr: SocketAddr, q: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut framed = (q.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(q);
    s.write_all(&framed).unwrap();
    let mut len = [0u8; 2];
    s.read_exact(&mut len).unwrap();
    let mut r = vec![0u8; u16::from_be_bytes(len) as usize];
    s.read_exact(&mut r).unwrap();
    r
}

/// Waits (bounded) until `cond` holds.
pub fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..100 {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}");
}

/// True when `path` exists.
pub fn exists(path: &Path) -> bool {
    path.exists()
}

/// True when the response has an answer and an A record with this address
/// (RDLENGTH 4 followed by the address).
pub fn answers_address(response: &[u8], address: [u8; 4]) -> bool {
    let ancount = u16::from_be_bytes([response[6], response[7]]);
    let mut pattern = vec![0u8, 4];
    pattern.extend_from_slice(&address);
    ancount > 0 && response.windows(6).any(|w| w == &pattern[..])
}

/// The RCODE of a response.
pub fn rcode(response: &[u8]) -> u8 {
    response[3] & 0x0f
}
