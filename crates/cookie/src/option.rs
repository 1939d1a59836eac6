//! The COOKIE option's data (RFC 7873 §4), as a query carries it.

/// The EDNS option code of COOKIE (RFC 7873 §4).
pub const OPTION_CODE: u16 = 10;
/// Length of a client cookie.
pub const CLIENT_LEN: usize = 8;
/// Shortest server cookie RFC 7873 §4 allows.
pub const SERVER_MIN_LEN: usize = 8;
/// Longest server cookie RFC 7873 §4 allows.
pub const SERVER_MAX_LEN: usize = 32;
/// Length of an RFC 9018 version 1 server cookie, the only kind we issue and accept.
pub const SERVER_LEN: usize = 16;
/// Length of the COOKIE option data we answer with: client 8 + server 16.
pub const RESPONSE_LEN: usize = CLIENT_LEN + SERVER_LEN;

/// A query's COOKIE option data, split as RFC 7873 §4 lays it out.
///
/// Lengths as Knot 3.2's `knot_edns_cookie_parse` (src/libknot/rrtype/opt.c)
/// takes them: 8 is a client cookie alone; 16..=40 is a client cookie and a
/// server cookie of 8..=32 bytes (any content, checked later); 0..=7, 9..=15
/// and 41 and more are malformed, which Knot's mod-cookies answers FORMERR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// Only a client cookie: the client has no server cookie from us yet.
    ClientOnly([u8; CLIENT_LEN]),
    /// A client cookie and a server cookie of 8..=32 bytes.
    Full {
        /// The client cookie.
        client: [u8; CLIENT_LEN],
        /// The server cookie as received (8..=32 bytes, not yet checked).
        server: &'a [u8],
    },
    /// A length RFC 7873 forbids: FORMERR.
    Malformed,
}

impl Parsed<'_> {
    /// The client cookie, unless the option was malformed.
    pub fn client(&self) -> Option<&[u8; CLIENT_LEN]> {
        match self {
            Parsed::ClientOnly(client) | Parsed::Full { client, .. } => Some(client),
            Parsed::Malformed => None,
        }
    }
}

/// Splits a COOKIE option's data (the bytes after its code and length).
pub fn parse(option_data: &[u8]) -> Parsed<'_> {
    let (Some(client), server) = (
        option_data
            .get(..CLIENT_LEN)
            .and_then(|c| <[u8; CLIENT_LEN]>::try_from(c).ok()),
        option_data.get(CLIENT_LEN..).unwrap_or(&[]),
    ) else {
        return Parsed::Malformed;
    };
    match server.len() {
        0 => Parsed::ClientOnly(client),
        SERVER_MIN_LEN..=SERVER_MAX_LEN => Parsed::Full { client, server },
        _ => Parsed::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_as_knot() {
        for len in 0..64usize {
            let data: Vec<u8> = (0..len as u8).collect();
            let parsed = parse(&data);
            match len {
                8 => assert_eq!(parsed, Parsed::ClientOnly([0, 1, 2, 3, 4, 5, 6, 7])),
                16..=40 => match parsed {
                    Parsed::Full { client, server } => {
                        assert_eq!(client, [0, 1, 2, 3, 4, 5, 6, 7]);
                        assert_eq!(server, &data[8..]);
                    }
                    other => panic!("{len}: {other:?}"),
                },
                _ => assert_eq!(parsed, Parsed::Malformed, "{len}"),
            }
        }
    }

    #[test]
    fn client_accessor() {
        assert_eq!(parse(&[7; 8]).client(), Some(&[7; 8]));
        assert_eq!(parse(&[7; 24]).client(), Some(&[7; 8]));
        assert_eq!(parse(&[7; 9]).client(), None);
    }
}
