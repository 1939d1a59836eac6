//! The dnstap protobuf schema (dnstap.proto of github.com/dnstap/dnstap.pb),
//! the part an authoritative server writes, as prost structs written by hand:
//! the field numbers are the schema's, so any dnstap reader decodes them.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// `Dnstap`: the top-level message (identity, version, one `Message`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Dnstap {
    /// The server's identity (as in NSID or `id.server`).
    #[prost(bytes = "vec", optional, tag = "1")]
    pub identity: Option<Vec<u8>>,
    /// The server's version (as in `version.bind`).
    #[prost(bytes = "vec", optional, tag = "2")]
    pub version: Option<Vec<u8>>,
    /// Free annotation (not written by Lode).
    #[prost(bytes = "vec", optional, tag = "3")]
    pub extra: Option<Vec<u8>>,
    /// Which payload is filled in: always [`DnstapType::Message`].
    #[prost(enumeration = "DnstapType", required, tag = "15")]
    pub r#type: i32,
    /// The payload.
    #[prost(message, optional, tag = "14")]
    pub message: Option<Message>,
}

/// `Dnstap.Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum DnstapType {
    /// The payload is a `Message`.
    Message = 1,
}

/// `SocketFamily`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum SocketFamily {
    /// IPv4.
    Inet = 1,
    /// IPv6.
    Inet6 = 2,
}

/// `SocketProtocol` (the values a UDP/TCP server uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum SocketProtocol {
    /// DNS over UDP.
    Udp = 1,
    /// DNS over TCP.
    Tcp = 2,
    /// DNS over TLS (RFC 7858).
    Dot = 3,
    /// DNS over QUIC (RFC 9250).
    Doq = 7,
}

/// `Message.Type` (the two an authoritative server writes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum MessageType {
    /// A query received by an authoritative server.
    AuthQuery = 1,
    /// A response sent by an authoritative server.
    AuthResponse = 2,
}

/// `Message`: one DNS message and where and when it went.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Message {
    /// AUTH_QUERY or AUTH_RESPONSE.
    #[prost(enumeration = "MessageType", required, tag = "1")]
    pub r#type: i32,
    /// INET or INET6.
    #[prost(enumeration = "SocketFamily", optional, tag = "2")]
    pub socket_family: Option<i32>,
    /// UDP or TCP.
    #[prost(enumeration = "SocketProtocol", optional, tag = "3")]
    pub socket_protocol: Option<i32>,
    /// The client's address (4 or 16 bytes).
    #[prost(bytes = "vec", optional, tag = "4")]
    pub query_address: Option<Vec<u8>>,
    /// The server's address (4 or 16 bytes), when known.
    #[prost(bytes = "vec", optional, tag = "5")]
    pub response_address: Option<Vec<u8>>,
    /// The client's port.
    #[prost(uint32, optional, tag = "6")]
    pub query_port: Option<u32>,
    /// The server's port, when known.
    #[prost(uint32, optional, tag = "7")]
    pub response_port: Option<u32>,
    /// When the query arrived: seconds since the epoch.
    #[prost(uint64, optional, tag = "8")]
    pub query_time_sec: Option<u64>,
    /// When the query arrived: nanoseconds.
    #[prost(fixed32, optional, tag = "9")]
    pub query_time_nsec: Option<u32>,
    /// The query, verbatim (AUTH_QUERY).
    #[prost(bytes = "vec", optional, tag = "10")]
    pub query_message: Option<Vec<u8>>,
    /// The zone of the query (not written by Lode).
    #[prost(bytes = "vec", optional, tag = "11")]
    pub query_zone: Option<Vec<u8>>,
    /// When the response was sent: seconds since the epoch.
    #[prost(uint64, optional, tag = "12")]
    pub response_time_sec: Option<u64>,
    /// When the response was sent: nanoseconds.
    #[prost(fixed32, optional, tag = "13")]
    pub response_time_nsec: Option<u32>,
    /// The response, verbatim (AUTH_RESPONSE).
    #[prost(bytes = "vec", optional, tag = "14")]
    pub response_message: Option<Vec<u8>>,
}

/// Sets `slot` to `bytes`, reusing its buffer.
fn put(slot: &mut Option<Vec<u8>>, bytes: &[u8]) {
    let v = slot.get_or_insert_with(Vec::new);
    v.clear();
    v.extend_from_slice(bytes);
}

/// Fills the address fields of `m` for the client `peer` (and the server
/// `local`, when known).
pub(crate) fn set_addresses(m: &mut Message, peer: SocketAddr, local: Option<SocketAddr>) {
    let family = match peer.ip() {
        IpAddr::V4(_) => SocketFamily::Inet,
        IpAddr::V6(_) => SocketFamily::Inet6,
    };
    m.socket_family = Some(family as i32);
    match peer.ip() {
        IpAddr::V4(a) => put(&mut m.query_address, &a.octets()),
        IpAddr::V6(a) => put(&mut m.query_address, &a.octets()),
    }
    m.query_port = Some(u32::from(peer.port()));
    match local {
        Some(l) => {
            match l.ip() {
                IpAddr::V4(a) => put(&mut m.response_address, &a.octets()),
                IpAddr::V6(a) => put(&mut m.response_address, &a.octets()),
            }
            m.response_port = Some(u32::from(l.port()));
        }
        None => {
            m.response_address = None;
            m.response_port = None;
        }
    }
}

/// Sets (seconds, nanoseconds) fields from a time since the epoch.
pub(crate) fn split_time(t: Duration) -> (Option<u64>, Option<u32>) {
    (Some(t.as_secs()), Some(t.subsec_nanos()))
}

/// Sets the message fields of an AUTH_QUERY (`response` None) or an
/// AUTH_RESPONSE, reusing the buffers of `m`.
pub(crate) fn set_payload(
    m: &mut Message,
    query: &[u8],
    query_time: Duration,
    response: Option<(&[u8], Duration)>,
) {
    (m.query_time_sec, m.query_time_nsec) = split_time(query_time);
    match response {
        None => {
            m.r#type = MessageType::AuthQuery as i32;
            put(&mut m.query_message, query);
            m.response_message = None;
            m.response_time_sec = None;
            m.response_time_nsec = None;
        }
        Some((r, t)) => {
            m.r#type = MessageType::AuthResponse as i32;
            m.query_message = None;
            put(&mut m.response_message, r);
            (m.response_time_sec, m.response_time_nsec) = split_time(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;

    #[test]
    fn encodes_and_decodes_a_query_and_a_response() {
        let peer: SocketAddr = "192.0.2.7:5353".parse().unwrap();
        let mut m = Message {
            socket_protocol: Some(SocketProtocol::Udp as i32),
            ..Default::default()
        };
        set_addresses(&mut m, peer, None);
        set_payload(&mut m, b"query", Duration::new(1_700_000_000, 5), None);
        let d = Dnstap {
            identity: Some(b"ns1".to_vec()),
            version: Some(b"Lode".to_vec()),
            extra: None,
            r#type: DnstapType::Message as i32,
            message: Some(m.clone()),
        };
        let bytes = d.encode_to_vec();
        let back = Dnstap::decode(&bytes[..]).unwrap();
        assert_eq!(back, d);
        let bm = back.message.unwrap();
        assert_eq!(bm.r#type, MessageType::AuthQuery as i32);
        assert_eq!(bm.query_address.as_deref(), Some(&[192, 0, 2, 7][..]));
        assert_eq!(bm.query_port, Some(5353));
        assert_eq!(bm.socket_family, Some(SocketFamily::Inet as i32));
        assert_eq!(bm.query_message.as_deref(), Some(&b"query"[..]));
        assert_eq!(bm.query_time_nsec, Some(5));
        assert_eq!(bm.response_message, None);
        // The wire: field 15 (type) = 1 is key 0x78, value 0x01.
        assert!(bytes.windows(2).any(|w| w == [0x78, 0x01]));
        // query_time_nsec is fixed32 (wire type 5): key 9 << 3 | 5 = 0x4d.
        assert!(bytes.windows(5).any(|w| w == [0x4d, 5, 0, 0, 0]));

        let local: SocketAddr = "[2001:db8::1]:53".parse().unwrap();
        let peer6: SocketAddr = "[2001:db8::2]:4000".parse().unwrap();
        set_addresses(&mut m, peer6, Some(local));
        set_payload(
            &mut m,
            b"query",
            Duration::new(1, 0),
            Some((b"answer", Duration::new(2, 3))),
        );
        let back = Message::decode(&m.encode_to_vec()[..]).unwrap();
        assert_eq!(back.r#type, MessageType::AuthResponse as i32);
        assert_eq!(back.socket_family, Some(SocketFamily::Inet6 as i32));
        assert_eq!(back.query_address.as_ref().map(Vec::len), Some(16));
        assert_eq!(back.response_port, Some(53));
        assert_eq!(back.response_message.as_deref(), Some(&b"answer"[..]));
        assert_eq!(back.query_message, None);
        assert_eq!(
            (back.response_time_sec, back.response_time_nsec),
            (Some(2), Some(3))
        );
    }
}
