//! The echo responder: every query comes back with QR set and nothing else done.
//! It runs on Lode's own UDP transport, so its rate is the ceiling any server on
//! this machine's stack can reach (the SIDN measurements, §2: the "echo daemon").

use std::net::SocketAddr;

use lode_io::{IoError, UdpConfig, UdpServer};

/// Copies the query into `out` and sets QR; ignores datagrams shorter than a
/// header, responses (no loops between two echoes) and anything larger than `out`.
pub fn echo(query: &[u8], out: &mut [u8], _client: &mut lode_io::Client<'_>) -> usize {
    if query.len() < crate::query::HEADER_LEN || query[2] & 0x80 != 0 || query.len() > out.len() {
        return 0;
    }
    out[..query.len()].copy_from_slice(query);
    out[2] |= 0x80;
    query.len()
}

/// Starts the echo responder on `addrs` with `workers` sockets per address.
pub fn start(addrs: &[SocketAddr], workers: usize) -> Result<UdpServer, IoError> {
    start_sized(addrs, workers, UdpConfig::default().recv_buffer)
}

/// [`start`] asking `recv_buffer` bytes of receive buffer per socket (0: none asked,
/// the kernel's `net.core.rmem_default` applies; the kernel doubles a request).
pub fn start_sized(
    addrs: &[SocketAddr],
    workers: usize,
    recv_buffer: usize,
) -> Result<UdpServer, IoError> {
    let config = UdpConfig {
        workers: workers.max(1),
        recv_buffer,
        ..UdpConfig::default()
    };
    UdpServer::start(addrs, &config, echo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::time::Duration;

    #[test]
    fn echo_sets_qr_only() {
        let peer: SocketAddr = "127.0.0.1:1".parse().expect("addr");
        let q = [
            0xAB, 0xCD, 0x01, 0x20, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1,
        ];
        let mut out = [0u8; 64];
        assert_eq!(
            echo(&q, &mut out, &mut lode_io::Client::detached(peer)),
            q.len()
        );
        assert_eq!(out[2], 0x81);
        assert_eq!(&out[3..q.len()], &q[3..]);
        assert_eq!(&out[..2], &q[..2]);
        let response = out;
        assert_eq!(
            echo(
                &response[..q.len()],
                &mut out,
                &mut lode_io::Client::detached(peer)
            ),
            0,
            "responses dropped"
        );
        assert_eq!(
            echo(&q[..11], &mut out, &mut lode_io::Client::detached(peer)),
            0,
            "short datagrams dropped"
        );
        assert_eq!(
            echo(&q, &mut [0u8; 8], &mut lode_io::Client::detached(peer)),
            0
        );
    }

    #[test]
    fn echo_over_udp() {
        let server = start(&["127.0.0.1:0".parse().expect("addr")], 1).expect("bind");
        let addr = server.local_addrs()[0];
        let sock = UdpSocket::bind("127.0.0.1:0").expect("client");
        sock.set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let q = [0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1];
        sock.send_to(&q, addr).expect("send");
        let mut buf = [0u8; 512];
        let (n, _) = sock.recv_from(&mut buf).expect("echo reply");
        assert_eq!(n, q.len());
        assert_eq!(buf[2], 0x80);
        server.stop();
    }
}
