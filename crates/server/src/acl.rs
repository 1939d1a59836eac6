//! Access control lists as Knot DNS has them: ordered rules of addresses,
//! TSIG keys and actions; the first rule that matches decides; nothing
//! matches: denied.

use std::fmt;
use std::net::IpAddr;

use lode_io::Protocol;
use lode_wire::Name;

/// What a rule allows (or denies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// RFC 2136 dynamic updates.
    Update,
    /// Zone transfers out (AXFR, IXFR).
    Transfer,
    /// NOTIFY messages in.
    Notify,
}

/// A value of an ACL's configuration that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AclError {
    /// An `action` other than update, transfer or notify.
    #[error("unknown acl action {0:?} (update, transfer or notify)")]
    UnknownAction(String),
    /// An `address` that is neither an address nor a prefix.
    #[error("{0:?} is not an address or a prefix (e.g. 192.0.2.0/24, ::1)")]
    BadPrefix(String),
    /// A `protocol` other than udp, tcp, tls or quic.
    #[error("unknown acl protocol {0:?} (udp, tcp, tls or quic)")]
    UnknownProtocol(String),
}

impl std::str::FromStr for Action {
    type Err = AclError;
    fn from_str(s: &str) -> Result<Self, AclError> {
        match s {
            "update" => Ok(Action::Update),
            "transfer" => Ok(Action::Transfer),
            "notify" => Ok(Action::Notify),
            _ => Err(AclError::UnknownAction(s.into())),
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Action::Update => "update",
            Action::Transfer => "transfer",
            Action::Notify => "notify",
        })
    }
}

/// An address prefix: "192.0.2.0/24", "2001:db8::/32" or one address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    addr: IpAddr,
    len: u8,
}

impl std::str::FromStr for Prefix {
    type Err = AclError;
    fn from_str(s: &str) -> Result<Self, AclError> {
        let bad = || AclError::BadPrefix(s.into());
        let (a, len) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l.parse::<u8>().map_err(|_| bad())?)),
            None => (s, None),
        };
        let addr: IpAddr = a.parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = len.unwrap_or(max);
        if len > max {
            return Err(bad());
        }
        Ok(Prefix { addr, len })
    }
}

impl Prefix {
    /// The address and the prefix length.
    pub fn parts(&self) -> (IpAddr, u8) {
        (self.addr, self.len)
    }

    /// True if `ip` lies in the prefix (an IPv4-mapped IPv6 address counts as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        let (a, b, bits) = match (self.addr, ip) {
            (IpAddr::V4(p), IpAddr::V4(i)) => (
                u128::from(u32::from(p)) << 96,
                u128::from(u32::from(i)) << 96,
                self.len,
            ),
            (IpAddr::V6(p), IpAddr::V6(i)) => (u128::from(p), u128::from(i), self.len),
            _ => return false,
        };
        if bits == 0 {
            return true;
        }
        let mask = u128::MAX << (128 - u32::from(bits));
        a & mask == b & mask
    }
}

/// One rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The rule's name in the configuration.
    pub id: String,
    /// Sources it applies to; empty: any.
    pub addresses: Vec<Prefix>,
    /// TSIG keys (lower-case names) one of which must sign the request;
    /// empty: the request must not be signed (as Knot: "transaction
    /// security is not used").
    pub keys: Vec<Name>,
    /// Actions it applies to.
    pub actions: Vec<Action>,
    /// Protocols it applies to (Knot's `protocol`); empty: any.
    pub protocols: Vec<Protocol>,
    /// Pins of client certificates it applies to (Knot's `cert-key`): one
    /// must be the key of the certificate the client presented over TLS;
    /// empty: any client.
    pub cert_keys: Vec<String>,
    /// True: a match denies.
    pub deny: bool,
}

/// Parses an ACL's `protocol` value (Knot's: udp, tcp, tls, quic).
pub fn parse_protocol(s: &str) -> Result<Protocol, AclError> {
    match s {
        "udp" => Ok(Protocol::Udp),
        "tcp" => Ok(Protocol::Tcp),
        "tls" => Ok(Protocol::Tls),
        "quic" => Ok(Protocol::Quic),
        _ => Err(AclError::UnknownProtocol(s.into())),
    }
}

/// Who sent a request, as the rules see it.
#[derive(Debug, Clone, Copy)]
pub struct Requester<'a> {
    /// Its address.
    pub ip: IpAddr,
    /// The TSIG key it names, if any (lower case).
    pub key: Option<&'a Name>,
    /// The protocol it came over.
    pub protocol: Protocol,
    /// The pin of the certificate it presented over TLS, if any.
    pub pin: Option<&'a str>,
}

impl Rule {
    fn matches(&self, action: Action, who: &Requester<'_>) -> bool {
        let (ip, key) = (who.ip, who.key);
        self.actions.contains(&action)
            && (self.protocols.is_empty() || self.protocols.contains(&who.protocol))
            && (self.cert_keys.is_empty()
                || who
                    .pin
                    .is_some_and(|p| self.cert_keys.iter().any(|k| k == p)))
            && (self.addresses.is_empty() || self.addresses.iter().any(|p| p.contains(ip)))
            && match key {
                None => self.keys.is_empty(),
                Some(k) => self.keys.iter().any(|r| r == k),
            }
    }
}

/// The first rule of `rules` that matches decides; none: denied.
pub fn allows(rules: &[Rule], action: Action, who: &Requester<'_>) -> bool {
    rules
        .iter()
        .find(|r| r.matches(action, who))
        .is_some_and(|r| !r.deny)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(addresses: &[&str], keys: &[&str], deny: bool) -> Rule {
        Rule {
            id: "r".into(),
            addresses: addresses.iter().map(|a| a.parse().unwrap()).collect(),
            keys: keys.iter().map(|k| k.parse().unwrap()).collect(),
            actions: vec![Action::Update],
            protocols: Vec::new(),
            cert_keys: Vec::new(),
            deny,
        }
    }

    fn allows(rules: &[Rule], action: Action, ip: IpAddr, key: Option<&Name>) -> bool {
        allows_over(rules, action, ip, key, Protocol::Udp)
    }

    fn allows_over(
        rules: &[Rule],
        action: Action,
        ip: IpAddr,
        key: Option<&Name>,
        protocol: Protocol,
    ) -> bool {
        super::allows(
            rules,
            action,
            &Requester {
                ip,
                key,
                protocol,
                pin: None,
            },
        )
    }

    #[test]
    fn protocols_narrow_a_rule() {
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let mut tls_only = rule(&[], &[], false);
        tls_only.protocols = vec![Protocol::Tls];
        let rules = vec![tls_only];
        assert!(allows_over(&rules, Action::Update, ip, None, Protocol::Tls));
        assert!(!allows_over(
            &rules,
            Action::Update,
            ip,
            None,
            Protocol::Tcp
        ));
        assert!(!allows_over(
            &rules,
            Action::Update,
            ip,
            None,
            Protocol::Udp
        ));
        assert_eq!(parse_protocol("tls"), Ok(Protocol::Tls));
        let mut pinned = rule(&[], &[], false);
        pinned.cert_keys = vec!["PIN".into()];
        let who = |pin| Requester {
            ip,
            key: None,
            protocol: Protocol::Tls,
            pin,
        };
        assert!(super::allows(
            &[pinned.clone()],
            Action::Update,
            &who(Some("PIN"))
        ));
        assert!(!super::allows(
            &[pinned.clone()],
            Action::Update,
            &who(Some("OTHER"))
        ));
        assert!(!super::allows(&[pinned], Action::Update, &who(None)));
        assert!(parse_protocol("https").is_err());
    }

    #[test]
    fn first_match_decides_default_deny() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let key: Name = "k.".parse().unwrap();
        let rules = vec![
            rule(&["192.0.2.7"], &[], true),
            rule(&["192.0.2.0/24", "::1"], &[], false),
            rule(&[], &["k."], false),
        ];
        assert!(!allows(&rules, Action::Update, ip("192.0.2.7"), None));
        assert!(allows(&rules, Action::Update, ip("192.0.2.8"), None));
        assert!(allows(&rules, Action::Update, ip("::ffff:192.0.2.8"), None));
        assert!(allows(&rules, Action::Update, ip("::1"), None));
        assert!(!allows(&rules, Action::Update, ip("198.51.100.1"), None));
        assert!(allows(
            &rules,
            Action::Update,
            ip("198.51.100.1"),
            Some(&key)
        ));
        assert!(!allows(&rules, Action::Transfer, ip("192.0.2.8"), None));
        assert!(!allows(&[], Action::Update, ip("127.0.0.1"), None));
        let other: Name = "other.".parse().unwrap();
        assert!(!allows(
            &rules,
            Action::Update,
            ip("198.51.100.1"),
            Some(&other)
        ));
    }

    #[test]
    fn prefixes() {
        let p: Prefix = "10.0.0.0/8".parse().unwrap();
        assert!(p.contains("10.1.2.3".parse().unwrap()));
        assert!(!p.contains("11.0.0.1".parse().unwrap()));
        let any: Prefix = "::/0".parse().unwrap();
        assert!(any.contains("2001:db8::1".parse().unwrap()));
        assert!("10.0.0.0/33".parse::<Prefix>().is_err());
        assert!("nonsense".parse::<Prefix>().is_err());
    }
}
