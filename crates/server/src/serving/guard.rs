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
use std::time::Instant;

use lode_engine::{AnswerKind, Answered, Extra, Settings, Transport, ZoneSet};
use lode_wire::message::edns_option;

use crate::config::{Config, CookieSettings};
use crate::lograte::LogLimit;
use crate::serving::signed::Checked;

/// The COOKIE option as written in a response: code, length, 24 bytes.
const COOKIE_OPTION_LEN: usize = 4 + lode_cookie::RESPONSE_LEN;

/// The policy plain queries are answered under — the answer settings
/// (identity, NSID, padding), cookies, rate limiting and dnstap — shared by
/// every worker and replaced whole by a reload (see [`Guard::next`]).
#[derive(Debug)]
pub struct Guard {
    /// What the engine writes into answers.
    settings: Settings,
    /// The same for encrypted transports: responses to padded queries are
    /// padded (RFC 8467 §4.1), whatever `edns-padding` says for plain TCP.
    tls_settings: Settings,
    cookies: Option<Arc<CookieState>>,
    rrl: Option<Arc<Rrl>>,
    /// dnstap query logging (see dnstap.rs), when on.
    dnstap: Option<Arc<Tap>>,
    /// The server's limit of the lines about refused requests (a signed
    /// query whose TSIG fails here; updates, transfers and NOTIFY through
    /// the same limit): made with the first policy, kept by the next.
    refusals: Arc<LogLimit>,
}

/// The cookie checker with the settings it was made from; dropping the
/// last holder stops the secret rotation thread.
#[derive(Debug)]
struct CookieState {
    settings: CookieSettings,
    cookies: Arc<lode_cookie::Cookies>,
    _rotation: Option<mpsc::Sender<()>>,
}

/// The rate limiter with its configuration and clock.
#[derive(Debug)]
struct Rrl {
    config: lode_rrl::Config,
    limiter: lode_rrl::Limiter,
    /// Start of the limiter's monotonic milliseconds.
    epoch: Instant,
}

/// A running dnstap logger with its configuration.
#[derive(Debug)]
struct Tap {
    config: lode_dnstap::Config,
    tap: lode_dnstap::Dnstap,
}

/// Why a policy could not be started: the part that failed, with its
/// crate's error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GuardError {
    /// The response-rate limiter's settings.
    #[error("[rrl] {0}")]
    Rrl(#[source] lode_rrl::ConfigError),
    /// No random cookie secret could be had from the system.
    #[error("cookie secret: {0}")]
    CookieSecret(#[source] lode_cookie::RandomError),
    /// The thread that rotates a random cookie secret did not start.
    #[error("cookie rotation thread: {0}")]
    CookieThread(#[source] std::io::Error),
    /// The dnstap stream could not be opened.
    #[error(transparent)]
    Dnstap(#[from] lode_dnstap::DnstapError),
}

impl Guard {
    /// The policy `config` asks for at start.
    pub fn new(config: &Config) -> Result<Guard, GuardError> {
        Guard::next(None, config)
    }

    /// The policy `config` asks for, keeping from `prev` (the running one)
    /// what it does not change: the cookie secrets, the limiter's buckets
    /// and the dnstap stream go on when their settings are the same. The
    /// largest UDP payload stays `prev`'s (the UDP buffers are sized for it
    /// at start). Nothing of `prev` is stopped here but a dnstap stream to
    /// the same file, which a new one would overwrite; see [`Guard::retire`].
    pub fn next(prev: Option<&Guard>, config: &Config) -> Result<Guard, GuardError> {
        let settings = Settings {
            max_udp_payload: prev.map_or(config.max_udp_payload, |p| p.settings.max_udp_payload),
            nsid: config.identity.nsid.clone(),
            identity: config.identity.identity.clone(),
            version: config.identity.version.clone(),
            padding: config.identity.padding,
        };
        let tls_settings = Settings {
            padding: true,
            ..settings.clone()
        };
        let cookies = match (&config.cookies, prev.and_then(|p| p.cookies.as_ref())) {
            (None, _) => None,
            (Some(c), Some(old)) if old.settings == *c => Some(old.clone()),
            (Some(c), _) => Some(Arc::new(start_cookies(c)?)),
        };
        let rrl = match (config.rrl.as_ref(), prev.and_then(|p| p.rrl.as_ref())) {
            (Some(c), _) if c.rate == 0 => None,
            (None, _) => None,
            (Some(c), Some(old)) if old.config == *c => Some(old.clone()),
            (Some(c), _) => Some(Arc::new(start_rrl(c)?)),
        };
        let dnstap = match (&config.dnstap, prev.and_then(|p| p.dnstap.as_ref())) {
            (None, _) => None,
            (Some(c), Some(old)) if old.config == *c => Some(old.clone()),
            (Some(c), old) => {
                // A new stream to the file the running one writes: that one
                // ends first (what is queued is written), then the file is
                // made anew.
                if let Some(old) = old.filter(|o| o.config.sink == c.sink) {
                    old.tap.close();
                }
                Some(Arc::new(Tap {
                    config: c.clone(),
                    tap: crate::serving::dnstap::start(c)?,
                }))
            }
        };
        Ok(Guard {
            settings,
            tls_settings,
            cookies,
            rrl,
            dnstap,
            refusals: prev.map_or_else(Arc::default, |p| p.refusals.clone()),
        })
    }

    /// A policy of these cookie and rate-limit settings alone (`None`:
    /// off), with default answer settings and no dnstap (the fuzz targets').
    pub fn from_parts(
        cookies: Option<&CookieSettings>,
        rrl: Option<&lode_rrl::Config>,
    ) -> Result<Arc<Guard>, GuardError> {
        let settings = Settings::default();
        Ok(Arc::new(Guard {
            tls_settings: Settings {
                padding: true,
                ..settings.clone()
            },
            settings,
            cookies: cookies.map(start_cookies).transpose()?.map(Arc::new),
            rrl: rrl
                .filter(|c| c.rate > 0)
                .map(start_rrl)
                .transpose()?
                .map(Arc::new),
            dnstap: None,
            refusals: Arc::default(),
        }))
    }

    /// Ends what the running policy `self` has that its successor `next`
    /// does not share (a dnstap stream replaced or turned off: what is
    /// queued is written and the stream ends), once `next` is in place.
    pub fn retire(&self, next: &Guard) {
        if let Some(old) = &self.dnstap {
            if !next.dnstap.as_ref().is_some_and(|n| Arc::ptr_eq(n, old)) {
                old.tap.close();
            }
        }
    }

    /// The names of the parts `next` changes (for the reload's log line).
    pub fn changes(&self, next: &Guard) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.settings != next.settings {
            v.push("identity/version/nsid/edns-padding");
        }
        if !same(self.cookies.as_ref(), next.cookies.as_ref()) {
            v.push("[cookies]");
        }
        if !same(self.rrl.as_ref(), next.rrl.as_ref()) {
            v.push("[rrl]");
        }
        if !same(self.dnstap.as_ref(), next.dnstap.as_ref()) {
            v.push("[dnstap]");
        }
        v
    }

    /// The answer settings for plain (`false`) or encrypted transports.
    pub fn settings(&self, encrypted: bool) -> &Settings {
        if encrypted {
            &self.tls_settings
        } else {
            &self.settings
        }
    }

    /// The limit of the lines about refused requests this policy and its
    /// successors log through (to share with the admission of updates).
    pub(crate) fn refusals(&self) -> &Arc<LogLimit> {
        &self.refusals
    }

    /// The dnstap logger, when query logging is on.
    pub fn dnstap(&self) -> Option<&lode_dnstap::Dnstap> {
        self.dnstap.as_deref().map(|t| &t.tap)
    }

    /// The dnstap counters, when query logging is on.
    pub fn dnstap_stats(&self) -> Option<lode_dnstap::Stats> {
        self.dnstap().map(lode_dnstap::Dnstap::stats)
    }

    /// The rate limiter's counters, when it is on.
    pub fn rrl_stats(&self) -> Option<lode_rrl::Stats> {
        self.rrl.as_deref().map(|r| r.limiter.stats())
    }

    /// Answers a plain query from `peer` under the policy: the engine's
    /// answer, a cookie error, a slipped (TC) answer or nothing (length 0),
    /// and what the cookie check made of the query's COOKIE option (for the
    /// counters). A query's TSIG record is checked in the engine's policy
    /// hook with the configured `keys` (asked for only then; `None`: none
    /// configured) and a good one's answer signed (signed.rs); such an
    /// answer is not rate-limited (its client holds the key: no spoofed
    /// source to protect).
    #[allow(clippy::too_many_arguments)]
    pub fn answer<'z, 'k>(
        &self,
        set: &'z ZoneSet,
        q: &[u8],
        out: &mut [u8],
        transport: Transport,
        settings: &Settings,
        peer: IpAddr,
        keys: &dyn Fn() -> Option<&'k lode_tsig::Keys>,
    ) -> (Answered<'z>, CookieSeen) {
        let mut option = [0u8; COOKIE_OPTION_LEN];
        let mut option_len = 0usize;
        let mut seen = CookieSeen::Absent;
        let mut tsig: Option<Checked<'k>> = None;
        let cookies = self.cookies.as_deref().map(|c| &*c.cookies);
        let (buf, len, what, checked) = (&mut option, &mut option_len, &mut seen, &mut tsig);
        let mut answered = lode_engine::answer_with(set, q, out, transport, settings, |query| {
            let mut extra = match cookies {
                Some(cookies) => {
                    let (extra, n, w) = cookie_policy(cookies, query, q, transport, peer, buf);
                    *len = n;
                    *what = w;
                    extra
                }
                None => Extra::default(),
            };
            if let (Some(_), Some(keys)) = (query.tsig.as_ref(), keys()) {
                let c = Checked::new(q, keys);
                extra.signed_room = c.room();
                *checked = Some(c);
            }
            // The clock is read only for a query asking EDNS EXPIRE.
            let expire = query
                .edns
                .is_some_and(|e| e.options_len > 0 && e.option(q, edns_option::EXPIRE).is_some());
            if expire {
                extra.now = crate::clock::unix_now();
            }
            extra
        });
        if let Some(c) = &tsig {
            answered.len = c.finish(&answered, q, out, settings, &self.refusals);
            if answered.sign {
                return (answered, seen);
            }
        }
        let valid = seen == CookieSeen::Valid;
        if let (Some(rrl), Transport::Udp, false) = (self.rrl.as_deref(), transport, valid) {
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
        rrl: &Rrl,
        answered: &Answered<'_>,
        q: &[u8],
        out: &mut [u8],
        settings: &Settings,
        peer: IpAddr,
        extra: &Extra<'_>,
    ) -> usize {
        let len = answered.len;
        let mut name = [0u8; 255];
        let (qname_len, qtype) = question_of(&out[..len], answered.asked, &mut name);
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
        let now = rrl.epoch.elapsed().as_millis() as u64;
        let verdict = rrl.limiter.check(peer, class, key, now);
        if verdict == lode_rrl::Verdict::Send {
            return len;
        }
        if let Some(prefix) = rrl.limiter.log_due(peer, now) {
            let what = match verdict {
                lode_rrl::Verdict::WouldLimit => "would be limited (log-only)",
                _ => "limited",
            };
            tracing::info!(
                "rrl: answers to {prefix} {what} ({} answers, {} per second)",
                class.as_str(),
                rrl.config.rate
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
/// type; (0, 0) when it has no question. `asked` (what the engine read of
/// the query, whose question the response echoes) spares the name's walk.
fn question_of(
    msg: &[u8],
    asked: Option<lode_engine::Asked>,
    name: &mut [u8; 255],
) -> (usize, u16) {
    if msg.len() < 12 || msg[4..6] == [0, 0] {
        return (0, 0);
    }
    // A response's question name is written uncompressed right after the header.
    let known = asked
        .map(|a| (12 + usize::from(a.qname_len), a.qtype))
        .filter(|&(end, _)| end > 12 && end <= msg.len());
    let (end, qtype) = match known {
        Some(k) => k,
        None => {
            let Some(end) = lode_wire::message::first_qname_end(msg) else {
                return (0, 0);
            };
            let qtype = msg
                .get(end..end + 2)
                .map_or(0, |t| u16::from_be_bytes([t[0], t[1]]));
            (end, qtype)
        }
    };
    let wire = &msg[12..end];
    let n = wire.len().min(name.len());
    name[..n].copy_from_slice(&wire[..n]);
    name[..n].make_ascii_lowercase();
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
    crate::clock::unix_now() as u32
}

/// True when both are none or both the same shared value.
fn same<T>(a: Option<&Arc<T>>, b: Option<&Arc<T>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    }
}

/// The rate limiter of `c` (its rate above 0), logged.
fn start_rrl(c: &lode_rrl::Config) -> Result<Rrl, GuardError> {
    let limiter = lode_rrl::Limiter::new(c).map_err(GuardError::Rrl)?;
    tracing::info!(
        "response-rate limiting on: {} answers/s per /{} (IPv4) or /{} (IPv6) and answer, slip {}{}, {} KiB table",
        c.rate,
        c.ipv4_prefix,
        c.ipv6_prefix,
        c.slip,
        if c.log_only { ", log only" } else { "" },
        limiter.memory() >> 10
    );
    Ok(Rrl {
        config: c.clone(),
        limiter,
        epoch: Instant::now(),
    })
}

/// The cookie checker, and with a random secret the thread that rotates it
/// every `secret-lifetime` (keeping the previous one, so cookies in flight
/// stay valid: RFC 9018 §4.4).
fn start_cookies(c: &CookieSettings) -> Result<CookieState, GuardError> {
    let secrets = match c.secret {
        Some(s) => lode_cookie::Secrets::new(s),
        None => lode_cookie::Secrets::random().map_err(GuardError::CookieSecret)?,
    };
    let cookies = Arc::new(lode_cookie::Cookies::new(
        secrets,
        lode_cookie::Refresh::After(lode_cookie::RFC_REFRESH_AFTER),
        c.badcookie_slip,
    ));
    if c.secret.is_some() {
        tracing::info!("DNS cookies on (configured secret)");
        return Ok(CookieState {
            settings: c.clone(),
            cookies,
            _rotation: None,
        });
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
        .map_err(GuardError::CookieThread)?;
    tracing::info!(
        "DNS cookies on (random secret, rotated every {} s)",
        lifetime.as_secs()
    );
    Ok(CookieState {
        settings: c.clone(),
        cookies,
        _rotation: Some(tx),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A response's question read with what the engine saw of the query
    /// is the one read by walking the name.
    #[test]
    fn question_of_with_the_engines_reading_as_by_the_walk() {
        let mut msg = vec![0x12, 0x34, 0x84, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        msg.extend_from_slice(b"\x03WwW\x07Example\x03com\x00");
        msg.extend_from_slice(&[0, 35, 0, 1]);
        let asked = lode_engine::Asked {
            qtype: 35,
            qname_len: 17,
            edns: false,
            dnssec_ok: false,
        };
        let (mut a, mut b) = ([0u8; 255], [0u8; 255]);
        let walked = question_of(&msg, None, &mut a);
        assert_eq!(walked, (17, 35));
        assert_eq!(&a[..17], b"\x03www\x07example\x03com\x00");
        assert_eq!(question_of(&msg, Some(asked), &mut b), walked);
        assert_eq!(a, b);
        // A reading that does not fit the message falls back to the walk.
        let wrong = lode_engine::Asked {
            qname_len: 200,
            ..asked
        };
        assert_eq!(question_of(&msg, Some(wrong), &mut b), walked);
        // No question: nothing.
        msg[5] = 0;
        assert_eq!(question_of(&msg, Some(asked), &mut b), (0, 0));
    }
}
