//! The RFC 9018 server cookie: making one, checking one, and the COOKIE
//! option data of a response.

use std::hash::Hasher;
use std::net::IpAddr;

use siphasher::sip::SipHasher24;

use crate::option::{Parsed, CLIENT_LEN, RESPONSE_LEN, SERVER_LEN};
use crate::secret::{Secrets, SECRET_LEN};

/// The server cookie version RFC 9018 defines (SipHash-2-4).
pub const VERSION: u8 = 1;
/// A cookie may be this many seconds old and still verify (RFC 9018 §4.3; Knot's `lifetime_before`).
pub const LIFETIME_PAST: u32 = 3600;
/// A cookie may be this many seconds in the future and still verify (RFC 9018 §4.3; Knot's `lifetime_after`).
pub const LIFETIME_FUTURE: u32 = 300;
/// RFC 9018 §4.3: a server should make a new cookie once the one received is older than this.
pub const RFC_REFRESH_AFTER: u32 = 1800;

/// What a query's COOKIE option amounts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The query had no COOKIE option (or no OPT record): cookies play no part.
    NoCookie,
    /// The option's length is one RFC 7873 forbids.
    Malformed,
    /// A client cookie alone.
    ClientOnly,
    /// A server cookie we made, recent enough.
    Valid {
        /// Made with the previous secret (so a fresh one is due).
        previous_secret: bool,
    },
    /// A server cookie that is not ours: wrong length or version, wrong hash, or out of its time window.
    Invalid,
}

impl Check {
    /// The client presented a valid server cookie (Knot then skips RRL for it).
    pub fn is_valid(self) -> bool {
        matches!(self, Check::Valid { .. })
    }
}

/// When a valid cookie received is answered with a fresh one rather than echoed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Refresh {
    /// Echo every valid cookie made with the current secret, as Knot 3.2 does.
    #[default]
    Never,
    /// Make a fresh one once the received one is older than this many
    /// seconds ([`RFC_REFRESH_AFTER`] is RFC 9018 §4.3's half hour).
    After(u32),
}

/// The client IP address as it enters the hash: 4 bytes for IPv4, 16 for
/// IPv6; an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, a dual-stack
/// socket's view of an IPv4 client) counts as the IPv4 address, so a client
/// gets the same cookie whichever socket kind its query came in on.
fn ip_bytes(ip: IpAddr, buf: &mut [u8; 16]) -> usize {
    match ip.to_canonical() {
        IpAddr::V4(v4) => {
            buf[..4].copy_from_slice(&v4.octets());
            4
        }
        IpAddr::V6(v6) => {
            *buf = v6.octets();
            16
        }
    }
}

/// SipHash-2-4(client | version | reserved | timestamp | client IP) under `secret`.
fn hash(secret: &[u8; SECRET_LEN], client: &[u8; CLIENT_LEN], head: &[u8], ip: IpAddr) -> [u8; 8] {
    let mut ip_buf = [0u8; 16];
    let ip_len = ip_bytes(ip, &mut ip_buf);
    let mut h = SipHasher24::new_with_key(secret);
    h.write(client);
    h.write(head);
    h.write(&ip_buf[..ip_len]);
    h.finish().to_le_bytes()
}

/// The RFC 9018 §4 server cookie for `client` from `client_ip` at `now`
/// (unix seconds): version 1, reserved 0, timestamp `now`, hash.
pub fn server_cookie(
    secret: &[u8; SECRET_LEN],
    client: &[u8; CLIENT_LEN],
    client_ip: IpAddr,
    now: u32,
) -> [u8; SERVER_LEN] {
    let mut cookie = [0u8; SERVER_LEN];
    cookie[0] = VERSION;
    cookie[4..8].copy_from_slice(&now.to_be_bytes());
    let h = hash(secret, client, &cookie[..8], client_ip);
    cookie[8..].copy_from_slice(&h);
    cookie
}

/// The cookie's age in seconds (negative: from the future), in RFC 1982
/// serial arithmetic so it holds across the u32 wrap in 2106.
fn age(server: &[u8], now: u32) -> Option<i32> {
    let ts = u32::from_be_bytes(server.get(4..8)?.try_into().ok()?);
    Some(now.wrapping_sub(ts) as i32)
}

/// Equal without an early exit on the first differing byte.
fn same(a: &[u8; 8], b: &[u8]) -> bool {
    b.len() == 8 && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Checks a query's COOKIE option against `secrets` at `now` (unix seconds).
///
/// As Knot 3.2's `knot_edns_cookie_server_check`: the server cookie must be
/// 16 bytes, version 1 (the reserved bytes are not checked, they enter the
/// hash as received, RFC 9018 A.3), its timestamp within
/// `[now - 3600, now + 300]` (both ends included) and its hash right under
/// the current secret or, unlike Knot 3.2, the previous one.
pub fn check(secrets: &Secrets, parsed: &Parsed, client_ip: IpAddr, now: u32) -> Check {
    let (client, server) = match parsed {
        Parsed::Malformed => return Check::Malformed,
        Parsed::ClientOnly(_) => return Check::ClientOnly,
        Parsed::Full { client, server } => (client, *server),
    };
    if server.len() != SERVER_LEN || server[0] != VERSION {
        return Check::Invalid;
    }
    match age(server, now) {
        Some(a) if (-(LIFETIME_FUTURE as i32)..=LIFETIME_PAST as i32).contains(&a) => {}
        _ => return Check::Invalid,
    }
    let (head, mac) = server.split_at(8);
    if same(&hash(secrets.current(), client, head, client_ip), mac) {
        return Check::Valid {
            previous_secret: false,
        };
    }
    match secrets.previous() {
        Some(prev) if same(&hash(prev, client, head, client_ip), mac) => Check::Valid {
            previous_secret: true,
        },
        _ => Check::Invalid,
    }
}

/// Writes the COOKIE option data for the response into `out` and returns
/// its length: 0 (no COOKIE option) for [`Check::NoCookie`] and
/// [`Check::Malformed`], else 24, the client cookie followed by the
/// received server cookie when it is valid, made with the current secret
/// and not due for a refresh, or by a fresh one made with the current secret.
///
/// `check` must be what [`check`] said of this `parsed`.
pub fn response_option(
    secrets: &Secrets,
    refresh: Refresh,
    parsed: &Parsed,
    check: Check,
    client_ip: IpAddr,
    now: u32,
    out: &mut [u8; RESPONSE_LEN],
) -> usize {
    let Some(client) = parsed.client() else {
        return 0;
    };
    if matches!(check, Check::NoCookie | Check::Malformed) {
        return 0;
    }
    out[..CLIENT_LEN].copy_from_slice(client);
    let echo = match (check, parsed) {
        (
            Check::Valid {
                previous_secret: false,
            },
            Parsed::Full { server, .. },
        ) if server.len() == SERVER_LEN => match refresh {
            Refresh::Never => Some(*server),
            Refresh::After(limit) => match age(server, now) {
                Some(a) if a <= limit as i32 => Some(*server),
                _ => None,
            },
        },
        _ => None,
    };
    match echo {
        Some(server) => out[CLIENT_LEN..].copy_from_slice(server),
        None => out[CLIENT_LEN..].copy_from_slice(&server_cookie(
            secrets.current(),
            client,
            client_ip,
            now,
        )),
    }
    RESPONSE_LEN
}
