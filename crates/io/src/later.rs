//! Replies that leave after the handler returned: an UPDATE answered once its
//! journal record is on stable storage, or a stream of messages (a zone
//! transfer). The handler calls [`Client::defer`] and hands the [`Later`] to
//! whoever finishes the work, on any thread.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

/// Bytes a stream may have queued for one connection before
/// [`Later::push`] waits for the connection to write them out: a transfer
/// of a huge zone takes memory in this bound, not in the zone's size.
pub const STREAM_QUEUE_BYTES: usize = 1 << 20;

/// A connection's queue of late messages and the bytes waiting in it.
#[derive(Debug, Clone)]
pub(crate) struct LateQueue {
    pub(crate) tx: UnboundedSender<Late>,
    pub(crate) queued: Arc<AtomicUsize>,
}

/// The protocol a message came over (what an ACL's `protocol` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// Plain UDP.
    Udp,
    /// Plain TCP.
    Tcp,
    /// TLS over TCP (DNS over TLS, zone transfers over TLS).
    Tls,
    /// QUIC.
    Quic,
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Protocol::Udp => "udp",
            Protocol::Tcp => "tcp",
            Protocol::Tls => "tls",
            Protocol::Quic => "quic",
        })
    }
}

/// What a transport tells a handler about the message's sender, and the way
/// to answer it later.
#[derive(Debug)]
pub struct Client<'a> {
    addr: SocketAddr,
    /// The address the message came in on, when known.
    local: Option<SocketAddr>,
    via: Via<'a>,
    deferred: bool,
    /// Came over TLS or QUIC.
    encrypted: bool,
    /// Came over QUIC.
    quic: bool,
    /// The pin of the client's TLS certificate, when it gave one.
    pin: Option<&'a str>,
}

#[derive(Debug)]
enum Via<'a> {
    /// The worker's socket (a duplicate of its descriptor).
    Udp(&'a Arc<UdpSocket>),
    /// The connection's queue of late messages.
    Tcp(&'a LateQueue),
    /// UDP over AF_XDP: answered now or not at all (the XDP program leaves
    /// NOTIFY and UPDATE, which may be answered later, to the socket path).
    Xdp,
    /// No way to answer later (tests, benchmarks).
    None,
}

/// One message for a stream connection, or the end of a deferred reply.
#[derive(Debug)]
pub(crate) enum Late {
    /// A whole DNS message after its 2-octet length prefix (RFC 1035
    /// §4.2.2; RFC 9250 §4.2 frames DoQ the same way): written as it is.
    Framed(Vec<u8>),
    /// The deferred reply is complete (sent or abandoned).
    Done,
}

impl<'a> Client<'a> {
    pub(crate) fn udp(
        addr: SocketAddr,
        local: Option<SocketAddr>,
        socket: &'a Arc<UdpSocket>,
    ) -> Self {
        Client {
            addr,
            local,
            via: Via::Udp(socket),
            deferred: false,
            encrypted: false,
            quic: false,
            pin: None,
        }
    }
    pub(crate) fn tcp(
        addr: SocketAddr,
        local: Option<SocketAddr>,
        queue: &'a LateQueue,
        tls: Option<Option<&'a str>>,
    ) -> Self {
        Client {
            addr,
            local,
            via: Via::Tcp(queue),
            deferred: false,
            encrypted: tls.is_some(),
            quic: false,
            pin: tls.flatten(),
        }
    }
    pub(crate) fn quic(addr: SocketAddr, local: Option<SocketAddr>, queue: &'a LateQueue) -> Self {
        Client {
            addr,
            local,
            via: Via::Tcp(queue),
            deferred: false,
            encrypted: true,
            quic: true,
            pin: None,
        }
    }
    /// A client whose UDP query came over AF_XDP: [`Client::defer`] gives a
    /// [`Later`] that sends nothing.
    pub(crate) fn xdp(addr: SocketAddr, local: Option<SocketAddr>) -> Client<'static> {
        Client {
            addr,
            local,
            via: Via::Xdp,
            deferred: false,
            encrypted: false,
            quic: false,
            pin: None,
        }
    }
    /// A client that cannot be answered later ([`Client::defer`] gives a
    /// [`Later`] that sends nothing): for tests and tools calling handlers.
    pub fn detached(addr: SocketAddr) -> Client<'static> {
        Client {
            addr,
            local: None,
            via: Via::None,
            deferred: false,
            encrypted: false,
            quic: false,
            pin: None,
        }
    }
    /// The sender's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
    /// The server's address the message came in on: the bound address, or
    /// on a wildcard bind the datagram's destination (packet info); `None`
    /// when unknown.
    pub fn local(&self) -> Option<SocketAddr> {
        self.local
    }
    /// True when the message came over an encrypted transport (TLS).
    pub fn is_encrypted(&self) -> bool {
        self.encrypted
    }
    /// The pin of the certificate the client presented over TLS (see
    /// [`crate::tls::certificate_pin`]), when the server asked for one and
    /// the client gave it.
    pub fn certificate_pin(&self) -> Option<&'a str> {
        self.pin
    }
    /// The protocol the message came over (a detached client: TCP).
    pub fn protocol(&self) -> Protocol {
        match (&self.via, self.encrypted) {
            _ if self.quic => Protocol::Quic,
            (Via::Udp(_) | Via::Xdp, _) => Protocol::Udp,
            (_, true) => Protocol::Tls,
            _ => Protocol::Tcp,
        }
    }
    /// Promises a reply later: the handler then returns 0 (nothing now) and
    /// the transport keeps a stream connection open until the [`Later`] is
    /// sent or dropped.
    pub fn defer(&mut self) -> Later {
        self.deferred = true;
        let to = match self.via {
            Via::Udp(s) => To::Udp(s.clone(), self.addr),
            Via::Tcp(q) => To::Tcp(q.clone()),
            Via::Xdp | Via::None => To::Nowhere,
        };
        Later { to: Some(to) }
    }
    /// True once [`Client::defer`] was called.
    pub fn is_deferred(&self) -> bool {
        self.deferred
    }
}

/// A reply (or a stream of messages) to send after the handler returned.
/// Dropping it unsent sends nothing; a stream connection then goes on.
#[derive(Debug)]
pub struct Later {
    to: Option<To>,
}

#[derive(Debug)]
enum To {
    Udp(Arc<UdpSocket>, SocketAddr),
    Tcp(LateQueue),
    Nowhere,
}

impl Later {
    /// Sends one more message of a stream (each a datagram over UDP); false
    /// when the client is gone. Over TCP it waits (blocking the calling
    /// thread, which must not be a transport's) while more than
    /// [`STREAM_QUEUE_BYTES`] wait to be written to the connection.
    pub fn push(&mut self, msg: &[u8]) -> bool {
        if !self.enqueue(msg) {
            return false;
        }
        if let Some(To::Tcp(q)) = &self.to {
            let mut pause = Duration::from_micros(50);
            while q.queued.load(Ordering::Acquire) > STREAM_QUEUE_BYTES {
                if q.tx.is_closed() {
                    return false;
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(5));
            }
        }
        true
    }
    /// Sends the reply and ends it, without waiting; false when the client
    /// is gone.
    pub fn send(mut self, msg: &[u8]) -> bool {
        self.enqueue(msg)
    }
    fn enqueue(&mut self, msg: &[u8]) -> bool {
        match &self.to {
            Some(To::Udp(s, peer)) => s.send_to(msg, peer).is_ok(),
            Some(To::Tcp(q)) => {
                let mut framed = Vec::with_capacity(msg.len() + 2);
                framed.extend_from_slice(&(msg.len() as u16).to_be_bytes());
                framed.extend_from_slice(msg);
                q.queued.fetch_add(msg.len(), Ordering::AcqRel);
                q.tx.send(Late::Framed(framed)).is_ok()
            }
            Some(To::Nowhere) | None => false,
        }
    }
}

impl Drop for Later {
    fn drop(&mut self) {
        if let Some(To::Tcp(q)) = self.to.take() {
            let _ = q.tx.send(Late::Done);
        }
    }
}
