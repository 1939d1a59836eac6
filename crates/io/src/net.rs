//! Outgoing connections from a chosen local address (Knot's `via`: a
//! secondary's transfers and SOA queries, forwarded UPDATEs).

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

/// A TCP connection to `to` from the local address `from` (port 0: any),
/// within `timeout`.
pub fn connect_from(from: SocketAddr, to: SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    if from.is_ipv4() != to.is_ipv4() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("source {from} and destination {to} are of different families"),
        ));
    }
    let socket = Socket::new(Domain::for_address(to), Type::STREAM, Some(Protocol::TCP))?;
    socket.bind(&from.into())?;
    socket.connect_timeout(&to.into(), timeout)?;
    Ok(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn connects_from_the_address_given() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let to = listener.local_addr().unwrap();
        let from: SocketAddr = "127.0.0.2:0".parse().unwrap();
        let _c = connect_from(from, to, Duration::from_secs(2)).unwrap();
        let (_s, peer) = listener.accept().unwrap();
        assert_eq!(peer.ip(), from.ip());
        let v6: SocketAddr = "[::1]:0".parse().unwrap();
        assert!(connect_from(v6, to, Duration::from_secs(1)).is_err());
    }
}
