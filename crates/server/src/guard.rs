//! The policy around `answer()` for plain queries: DNS cookies (RFC 7873,
//! RFC 9018, decided as Knot's mod-cookies) before the answer, and
//! response-rate limiting after it (UDP only; clients with a valid server
//! cookie exempt, as Knot's RRL does).
//!
//! ```text
//!  query ─▶ engine parses ─▶ policy: COOKIE option ─▶ Cookies::process ─▶ Extra { option, BADCOOKIE / FORMERR / drop }
//!                                   └─ valid cookie? ─────────────────────────┐
//!        ─▶ answer (NSID, COOKIE, EDE in the OPT) ─▶ UDP and not valid: RRL ─▶ send / slip (TC) / drop
//! ```
//!
//! Nothing here allocates or locks per query: the cookie secrets are an
//! `ArcSwap` load, the limiter a fixed table of atomics.

use std::net::IpAddr;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use lode_engine::{AnswerKind, Answered, Extra, Settings, Transport, ZoneSet};
use lode_wire::message::edns_option;

use crate::config::{Config, CookieSettings};

/// The COOKIE option as written in a response: code, length, 24 bytes.
const COOKIE_OPTION_LEN: usize = 4 + lode_cookie::RESPONSE_LEN;

/// Cookies and rate limiting for one server; shared by every worker.
#[derive(Debug)]
pub struct Guard {
    cookies: Option<Arc<lode_cookie::Cookies>>,
    rrl: Option<lode_rrl::Limiter>,
    /// The limiter's rate (for its log lines).
    rate: u32,
    /// Start of the limiter's monotonic milliseconds.
    epoch: Instant,
    /// Dropping it stops the secret rotation thread.
    _rotation: Option<mpsc::Sender<()>>,
    /// dnstap query logging (see dnstap.rs), when on.
    dnstap: Option<lode_dnstap::Dnstap>,
}

impl Guard {
    /// The policy `config` asks for (nothing: answers go out as the engine
    /// writes them).
    pub fn new(config: &Config) -> Result<Arc<Guard>, String> {
        let mut guard = Guard::build(config.cookies.as_ref(), config.rrl.as_ref())?;
        guard.dnstap = crate::dnstap::start(config)?;
        Ok(Arc::new(guard))
    }

    /// The policy of these cookie and rate-limit settings (`None`: off).
    pub fn from_parts(
        cookies: Option<&CookieSettings>,
        rrl: Option<&lode_rrl::Config>,
    ) -> Result<Arc<Guard>, String> {
        Guard::build(cookies, rrl).map(Arc::new)
    }

    fn build(
        cookies: Option<&CookieSettings>,
        rrl: Option<&lode_rrl::Config>,
    ) -> Result<Guard, String> {
        let (cookies, rotation) = match cookies {
            Some(c) => {
                let (cookies, rotation) = start_cookies(c)?;
                (Some(cookies), rotation)
            }
            None => (None, None),
        };
        let rate = rrl.map_or(0, |c| c.rate);
        let rrl = match rrl {
            Some(c) if c.rate > 0 => {
                let l = lode_rrl::Limiter::new(c).map_err(|e| format!("[rrl] {e}"))?;
                tracing::info!(
                    "response-rate limiting on: {} answers/s per /{} (IPv4) or /{} (IPv6) and answer, slip {}{}, {} KiB table",
                    c.rate,
                    c.ipv4_prefix,
                    c.ipv6_prefix,
                    c.slip,
                    if c.log_only { ", log only" } else { "" },
                    l.memory() >> 10
                );
                Some(l)
            }
            _ => None,
        };
        Ok(Guard {
            cookies,
            rrl,
            rate,
            epoch: Instant::now(),
            _rotation: rotation,
            dnstap: None,
        })
    }

    /// The dnstap logger, when query logging is on.
    pub fn dnstap(&self) -> Option<&lode_dnstap::Dnstap> {
        self.dnstap.as_ref()
    }

    /// The dnstap counters, when query logging is on.
    pub fn dnstap_stats(&self) -> Option<lode_dnstap::Stats> {
        self.dnstap.as_ref().map(lode_dnstap::Dnstap::stats)
    }

    /// The rate limiter's counters, when it is on.
    pub fn rrl_stats(&self) -> Option<lode_rrl::Stats> {
        self.rrl.as_ref().map(lode_rrl::Limiter::stats)
    }

    /// Answers a plain query from `peer` under the policy: the engine's
    /// answer, a cookie error, a slipped (TC) answer or nothing (length 0),
    /// and what the cookie check made of the query's COOKIE option (for the
    /// counters).
    pub fn answer<'z>(
        &self,
        set: &'z ZoneSet,
        q: &[u8],
        out: &mut [u8],
        transport: Transport,
        settings: &Settings,
        peer: IpAddr,
    ) -> (Answered<'z>, CookieSeen) {
        let mut option = [0u8; COOKIE_OPTION_LEN];
        let mut option_len = 0usize;
        let mut seen = CookieSeen::Absent;
        let mut answered = match &self.cookies {
            None => lode_engine::answer(set, q, out, transport, settings),
            Some(cookies) => {
                let (buf, len, what) = (&mut option, &mut option_len, &mut seen);
                lode_engine::answer_with(set, q, out, transport, settings, move |query| {
                    let (extra, n, w) = cookie_policy(cookies, query, q, transport, peer, buf);
                    *len = n;
                    *what = w;
                    extra
                })
            }
        };
        let valid = seen == CookieSeen::Valid;
        if let (Some(rrl), Transport::Udp, false) = (&self.rrl, transport, valid) {
            if answered.len > 0 {
                let extra = Extra {
                    options: &option[..option_len],
                    ..Extra::default()
                };
                answered.len = self.limit(rrl, &answered, q, out, settings, peer, &extra);
            }
        }
        (answered, seen)
    }

    /// True when DNS cookies are on.
    pub fn cookies_on(&self) -> bool {
        self.cookies.is_some()
    }

    /// Rate-limits one UDP answer of `answered.len` bytes in `out`: its
    /// length as is, a slipped answer's, or 0.
    #[allow(clippy::too_many_arguments)]
    fn limit(
        &self,
        rrl: &lode_rrl::Limiter,
        answered: &Answered<'_>,
        q: &[u8],
        out: &mut [u8],
        settings: &Settings,
        peer: IpAddr,
        extra: &Extra<'_>,
    ) -> usize {
        let len = answered.len;
        let mut name = [0u8; 255];
        let (qname_len, qtype) = question_of(&out[..len], &mut name);
        let ancount = u16::from_be_bytes([out[6], out[7]]);
        let class = lode_rrl::Class::classify(
            answered.rcode,
            qtype,
            answered.wildcard,
            answered.kind == AnswerKind::Referral,
            ancount,
            len,
        );
        // NXDOMAIN, errors and wildcards are keyed on the zone, so that a
        // random-subdomain flood is one bucket (Knot: the zone, else the root).
        let key: &[u8] = if class.keys_zone() {
            match answered.zone {
                Some(z) => {
                    let apex = z.origin().as_wire();
                    let n = apex.len().min(name.len());
                    name[..n].copy_from_slice(&apex[..n]);
                    name[..n].make_ascii_lowercase();
                    &name[..n]
                }
                None => b"\0",
            }
        } else {
            &name[..qname_len]
        };
        let now = self.epoch.elapsed().as_millis() as u64;
        let verdict = rrl.check(peer, class, key, now);
        if verdict == lode_rrl::Verdict::Send {
            return len;
        }
        if let Some(prefix) = rrl.log_due(peer, now) {
            let what = match verdict {
                lode_rrl::Verdict::WouldLimit => "would be limited (log-only)",
                _ => "limited",
            };
            tracing::info!(
                "rrl: answers to {prefix} {what} ({} answers, {} per second)",
                class.as_str(),
                self.rate
            );
        }
        match verdict {
            lode_rrl::Verdict::Slip => lode_engine::slip(q, out, answered.rcode, settings, extra),
            lode_rrl::Verdict::Drop => 0,
            _ => len,
        }
    }
}

/// The lower-cased question name of a response (into `name`) and its
/// type; (0, 0) when it has no question.
fn question_of(msg: &[u8], name: &mut [u8; 255]) -> (usize, u16) {
    if msg.len() < 12 || msg[4..6] == [0, 0] {
        return (0, 0);
    }
    let Some(end) = lode_wire::message::first_qname_end(msg) else {
        return (0, 0);
    };
    // A response's question name is written uncompressed right after the header.
    let wire = &msg[12..end];
    let n = wire.len().min(name.len());
    name[..n].copy_from_slice(&wire[..n]);
    name[..n].make_ascii_lowercase();
    let qtype = msg
        .get(end..end + 2)
        .map_or(0, |t| u16::from_be_bytes([t[0], t[1]]));
    (n, qtype)
}

/// Knot's mod-cookies decision for one query, as the engine's policy:
/// what to add or answer instead, the COOKIE option's length in `option`,
/// and whether the client presented a valid server cookie.
fn cookie_policy<'o>(
    cookies: &lode_cookie::Cookies,
    query: &lode_engine::Query,
    q: &[u8],
    transport: Transport,
    peer: IpAddr,
    option: &'o mut [u8; COOKIE_OPTION_LEN],
) -> (Extra<'o>, usize, CookieSeen) {
    // Knot reads the last COOKIE option of the OPT record.
    let data = query.edns.and_then(|e| e.option(q, edns_option::COOKIE));
    let Some(data) = data else {
        return (Extra::default(), 0, CookieSeen::Absent);
    };
    let mut written = [0u8; lode_cookie::RESPONSE_LEN];
    let how = match transport {
        Transport::Udp => lode_cookie::Transport::Udp,
        Transport::Tcp => lode_cookie::Transport::Stream,
    };
    let outcome = cookies.process(Some(data), peer, how, unix_now(), &mut written);
    let n = outcome.option_len;
    option[..2].copy_from_slice(&edns_option::COOKIE.to_be_bytes());
    option[2..4].copy_from_slice(&(n as u16).to_be_bytes());
    option[4..4 + n].copy_from_slice(&written[..n]);
    let len = if n > 0 { 4 + n } else { 0 };
    let option: &'o [u8; COOKIE_OPTION_LEN] = option;
    let options = &option[..len];
    let extra = match outcome.action {
        lode_cookie::Action::Answer => Extra {
            options,
            ..Extra::default()
        },
        lode_cookie::Action::BadCookie => Extra {
            options,
            error: Some(BADCOOKIE),
            ..Extra::default()
        },
        lode_cookie::Action::FormErr => Extra {
            error: Some(lode_wire::rcode::FORMERR),
            ..Extra::default()
        },
        _ => Extra {
            drop: true,
            ..Extra::default()
        },
    };
    let seen = match outcome.action {
        _ if outcome.valid => CookieSeen::Valid,
        lode_cookie::Action::Answer => CookieSeen::Fresh,
        lode_cookie::Action::BadCookie => CookieSeen::BadCookie,
        lode_cookie::Action::FormErr => CookieSeen::FormErr,
        _ => CookieSeen::Dropped,
    };
    (extra, len, seen)
}

/// What the cookie check made of a query (RFC 7873, RFC 9018).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CookieSeen {
    /// No COOKIE option (or cookies off).
    #[default]
    Absent,
    /// A valid server cookie: answered, exempt from rate limiting.
    Valid,
    /// A client cookie alone, or an old or another server's cookie over
    /// TCP: answered with a fresh server cookie.
    Fresh,
    /// Answered BADCOOKIE with a fresh cookie (UDP).
    BadCookie,
    /// A malformed COOKIE option: FORMERR.
    FormErr,
    /// Not answered.
    Dropped,
}

impl CookieSeen {
    /// Names in the metrics, in [`CookieSeen::index`] order.
    pub const NAMES: [&'static str; 6] = [
        "absent",
        "valid",
        "fresh",
        "badcookie",
        "formerr",
        "dropped",
    ];

    /// Its index in [`CookieSeen::NAMES`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// RCODE BADCOOKIE (RFC 7873 §8).
const BADCOOKIE: u16 = 23;

/// Seconds since the epoch (cookie timestamps are 32-bit, RFC 9018 §4.3).
fn unix_now() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as u32)
}

/// The cookie checker, and with a random secret the thread that rotates it
/// every `secret-lifetime` (keeping the previous one, so cookies in flight
/// stay valid: RFC 9018 §4.4).
fn start_cookies(
    c: &CookieSettings,
) -> Result<(Arc<lode_cookie::Cookies>, Option<mpsc::Sender<()>>), String> {
    let secrets = match c.secret {
        Some(s) => lode_cookie::Secrets::new(s),
        None => lode_cookie::Secrets::random().map_err(|e| format!("cookie secret: {e}"))?,
    };
    let cookies = Arc::new(lode_cookie::Cookies::new(
        secrets,
        lode_cookie::Refresh::After(lode_cookie::RFC_REFRESH_AFTER),
        c.badcookie_slip,
    ));
    if c.secret.is_some() {
        tracing::info!("DNS cookies on (configured secret)");
        return Ok((cookies, None));
    }
    let (tx, rx) = mpsc::channel::<()>();
    let shared = cookies.clone();
    let lifetime = c.secret_lifetime;
    std::thread::Builder::new()
        .name("lode-cookies".into())
        .spawn(move || {
            while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(lifetime) {
                match shared.secrets().rotate_random() {
                    Ok(()) => tracing::info!("DNS cookies: secret rotated"),
                    Err(e) => tracing::warn!("DNS cookies: secret not rotated: {e}"),
                }
            }
        })
        .map_err(|e| format!("cookie rotation thread: {e}"))?;
    tracing::info!(
        "DNS cookies on (random secret, rotated every {} s)",
        lifetime.as_secs()
    );
    Ok((cookies, Some(tx)))
}
