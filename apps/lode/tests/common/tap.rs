//! A transfer tap: a tiny DNS proxy between a secondary and its primary
//! that forwards every message unchanged and classifies each zone transfer
//! it sees (incremental IXFR, or a full one: AXFR or AXFR-style IXFR). It is
//! how the harness tells that NSD got an IXFR (NSD 4.6 logs no transfer
//! kind), and it can cut connections after a number of reply messages (a
//! "cut connection" bad transfer).
//!
//! ```text
//!   secondary ──TCP/UDP──▶ tap (127.0.0.1:port) ──▶ primary
//!             ◀────────────  classifies replies  ◀──
//! ```
//!
//! Plain threads and blocking sockets with timeouts; stopped on drop.

use std::io::Write as _;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::{soa_serial_of, tcp_read_message, Message};

const AXFR: u16 = 252;
const IXFR: u16 = 251;
const SOA: u16 = 6;

/// What the tap has seen so far.
#[derive(Debug, Default)]
pub struct TapCounts {
    /// Incremental transfers (IXFR replies whose second record is an older SOA).
    pub incremental: AtomicUsize,
    /// Full transfers (AXFR, or an IXFR answered AXFR-style).
    pub full: AtomicUsize,
    /// Connections cut on purpose (see [`XfrTap::cut_after`]).
    pub cut: AtomicUsize,
    /// With a value n > 0: TCP connections are closed after n reply messages.
    cut_after: AtomicUsize,
}

/// A running tap; stopped (its threads joined) when dropped.
#[derive(Debug)]
pub struct XfrTap {
    /// Where the tap listens (point the secondary's primary address here).
    pub addr: SocketAddr,
    /// The primary it forwards to.
    pub upstream: SocketAddr,
    counts: Arc<TapCounts>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl XfrTap {
    /// Starts a tap on 127.0.0.1:`port` (UDP and TCP) forwarding to `upstream`.
    pub fn start(upstream: SocketAddr, port: u16) -> Result<XfrTap, String> {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let tcp = TcpListener::bind(addr).map_err(|e| format!("tap tcp {addr}: {e}"))?;
        tcp.set_nonblocking(true).map_err(|e| e.to_string())?;
        let udp = UdpSocket::bind(addr).map_err(|e| format!("tap udp {addr}: {e}"))?;
        udp.set_read_timeout(Some(Duration::from_millis(100)))
            .map_err(|e| e.to_string())?;
        let counts = Arc::new(TapCounts::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (counts.clone(), stop.clone());
        let tcp_thread = std::thread::spawn(move || accept_loop(tcp, upstream, c, s));
        let (c, s) = (counts.clone(), stop.clone());
        let udp_thread = std::thread::spawn(move || udp_loop(udp, upstream, c, s));
        Ok(XfrTap {
            addr,
            upstream,
            counts,
            stop,
            threads: vec![tcp_thread, udp_thread],
        })
    }

    /// How many incremental transfers went through.
    pub fn incremental(&self) -> usize {
        self.counts.incremental.load(Ordering::SeqCst)
    }

    /// How many full transfers (AXFR or AXFR-style IXFR) went through.
    pub fn full(&self) -> usize {
        self.counts.full.load(Ordering::SeqCst)
    }

    /// How many connections were cut on purpose.
    pub fn cuts(&self) -> usize {
        self.counts.cut.load(Ordering::SeqCst)
    }

    /// From now on, close each new TCP connection after `n` reply messages
    /// (`None`: forward everything, the default).
    pub fn cut_after(&self, n: Option<usize>) {
        self.counts
            .cut_after
            .store(n.unwrap_or(0), Ordering::SeqCst);
    }
}

impl Drop for XfrTap {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn accept_loop(
    listener: TcpListener,
    upstream: SocketAddr,
    counts: Arc<TapCounts>,
    stop: Arc<AtomicBool>,
) {
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((client, _)) => {
                let counts = counts.clone();
                // Detached: its sockets time out within 10 s of silence.
                std::thread::spawn(move || {
                    let _ = relay_tcp(client, upstream, &counts);
                });
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Forwards one TCP connection both ways; the replies are classified.
fn relay_tcp(client: TcpStream, upstream: SocketAddr, counts: &TapCounts) -> Option<()> {
    client.set_nonblocking(false).ok()?;
    let server = TcpStream::connect_timeout(&upstream, Duration::from_secs(5)).ok()?;
    for s in [&client, &server] {
        s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        s.set_write_timeout(Some(Duration::from_secs(10))).ok()?;
    }
    let (mut c_in, mut s_out) = (client.try_clone().ok()?, server.try_clone().ok()?);
    // Queries: client → server, unchanged.
    let up = std::thread::spawn(move || {
        while let Some(m) = tcp_read_message(&mut c_in) {
            if write_framed(&mut s_out, &m).is_none() {
                break;
            }
        }
        let _ = s_out.shutdown(Shutdown::Write);
    });
    let (mut s_in, mut c_out) = (server, client);
    let cut_after = counts.cut_after.load(Ordering::SeqCst);
    let mut transfer = Transfer::default();
    let mut sent = 0usize;
    while let Some(m) = tcp_read_message(&mut s_in) {
        transfer.observe(&m, counts);
        write_framed(&mut c_out, &m)?;
        sent += 1;
        if cut_after > 0 && sent >= cut_after {
            counts.cut.fetch_add(1, Ordering::SeqCst);
            break;
        }
    }
    let _ = c_out.shutdown(Shutdown::Both);
    let _ = s_in.shutdown(Shutdown::Both);
    let _ = up.join();
    Some(())
}

fn write_framed(s: &mut TcpStream, m: &[u8]) -> Option<()> {
    let len = u16::try_from(m.len()).ok()?;
    let mut framed = len.to_be_bytes().to_vec();
    framed.extend_from_slice(m);
    s.write_all(&framed).ok()
}

fn udp_loop(sock: UdpSocket, upstream: SocketAddr, counts: Arc<TapCounts>, stop: Arc<AtomicBool>) {
    let mut buf = vec![0u8; 65535];
    while !stop.load(Ordering::SeqCst) {
        let Ok((n, from)) = sock.recv_from(&mut buf) else {
            continue;
        };
        let Ok(out) = UdpSocket::bind("127.0.0.1:0") else {
            continue;
        };
        let _ = out.set_read_timeout(Some(Duration::from_secs(2)));
        if out.send_to(&buf[..n], upstream).is_err() {
            continue;
        }
        let mut reply = vec![0u8; 65535];
        if let Ok((m, _)) = out.recv_from(&mut reply) {
            Transfer::default().observe(&reply[..m], &counts);
            let _ = sock.send_to(&reply[..m], from);
        }
    }
}

/// The start of the transfer a connection is carrying, until classified.
#[derive(Debug, Default)]
struct Transfer {
    /// The question type and the first SOA serial of an unclassified transfer.
    open: Option<(u16, u32)>,
}

impl Transfer {
    /// Looks at one reply message; counts a transfer once its second
    /// record is known.
    fn observe(&mut self, msg: &[u8], counts: &TapCounts) {
        let m = Message::parse(msg);
        if m.rcode() != 0 || !m.qr {
            self.open = None;
            return;
        }
        let mut rrs = m.answer.iter();
        if let Some(&(_, qtype, _)) = m.question.first() {
            // A new reply to an AXFR or IXFR starts with the zone's SOA.
            self.open = None;
            if qtype != AXFR && qtype != IXFR {
                return;
            }
            let Some(first) = rrs.next() else { return };
            if first.rtype != SOA {
                return;
            }
            let Some(serial) = soa_serial_of(&Message {
                answer: vec![first.clone()],
                ..Message::default()
            }) else {
                return;
            };
            self.open = Some((qtype, serial));
        }
        let Some((qtype, serial)) = self.open else {
            return;
        };
        let Some(second) = rrs.next() else { return };
        let second_serial = soa_serial_of(&Message {
            answer: vec![second.clone()],
            ..Message::default()
        });
        let incremental =
            qtype == IXFR && second.rtype == SOA && second_serial.is_some_and(|s| s != serial);
        if incremental {
            counts.incremental.fetch_add(1, Ordering::SeqCst);
        } else {
            counts.full.fetch_add(1, Ordering::SeqCst);
        }
        self.open = None;
    }
}
