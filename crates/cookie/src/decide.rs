//! What the server does with a query given its cookie: Knot 3.2's
//! mod-cookies decision (`cookies_process` in src/knot/modules/cookies/cookies.c).

use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::option::{parse, RESPONSE_LEN};
use crate::secret::{Secrets, SharedSecrets};
use crate::server::{check, response_option, Check, Refresh};

/// How the query came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// UDP: the source address is unproven, so a bad cookie gets BADCOOKIE (or nothing).
    Udp,
    /// TCP, TLS or QUIC: an established connection proves the address, so
    /// Knot answers normally (with a fresh cookie) whatever the cookie.
    Stream,
}

/// What to do with the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Answer as usual (with the COOKIE option, if any was written).
    Answer,
    /// Answer RCODE BADCOOKIE (23, extended: needs the OPT record) with the
    /// fresh COOKIE option and no records, as Knot's error path does.
    BadCookie,
    /// Send nothing (badcookie-slip).
    Drop,
    /// Answer FORMERR, without a COOKIE option.
    FormErr,
}

/// Knot's `badcookie-slip`: of the UDP queries with a missing or bad
/// server cookie, one in `every` gets BADCOOKIE, the others are dropped;
/// the count is shared by all clients and threads, as Knot's counter is.
#[derive(Debug)]
pub struct Slip {
    every: u32,
    count: AtomicU32,
}

/// Knot 3.2's default `badcookie-slip`: BADCOOKIE to every such query.
pub const KNOT_BADCOOKIE_SLIP: u32 = 1;

impl Slip {
    /// One in `every` (at least 1; 0 counts as 1) gets BADCOOKIE, the first one included.
    pub fn new(every: u32) -> Self {
        Slip {
            every: every.max(1),
            count: AtomicU32::new(0),
        }
    }

    /// Whether this query is the one in `every` that gets an answer.
    pub fn answer(&self) -> bool {
        if self.every == 1 {
            return true;
        }
        let every = self.every;
        let prior = self
            .count
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                Some(if c + 1 >= every { 0 } else { c + 1 })
            })
            .unwrap_or(0);
        prior == 0
    }
}

impl Default for Slip {
    fn default() -> Self {
        Slip::new(KNOT_BADCOOKIE_SLIP)
    }
}

/// Knot 3.2's decision given what the cookie check found and the transport
/// (see the table in the crate documentation).
pub fn decide(check: Check, transport: Transport, slip: &Slip) -> Action {
    match (check, transport) {
        (Check::NoCookie | Check::Valid { .. }, _) => Action::Answer,
        (Check::Malformed, _) => Action::FormErr,
        (Check::ClientOnly | Check::Invalid, Transport::Stream) => Action::Answer,
        (Check::ClientOnly | Check::Invalid, Transport::Udp) => {
            if slip.answer() {
                Action::BadCookie
            } else {
                Action::Drop
            }
        }
    }
}

/// The outcome of [`Cookies::process`] for one query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// What to do with the query.
    pub action: Action,
    /// Length of the COOKIE option data written to `out` (0: add no COOKIE option).
    pub option_len: usize,
    /// The client presented a valid server cookie: exempt it from rate limiting, as Knot's RRL does.
    pub valid: bool,
}

/// The cookie state of a server: its shared secrets, its refresh policy and
/// its BADCOOKIE slip counter. One per server, shared by every worker.
#[derive(Debug)]
pub struct Cookies {
    secrets: SharedSecrets,
    refresh: Refresh,
    slip: Slip,
}

impl Cookies {
    /// Cookie handling with `secrets`, `refresh` and one BADCOOKIE in `badcookie_slip`.
    pub fn new(secrets: Secrets, refresh: Refresh, badcookie_slip: u32) -> Self {
        Cookies {
            secrets: SharedSecrets::new(secrets),
            refresh,
            slip: Slip::new(badcookie_slip),
        }
    }

    /// The secrets, to rotate them.
    pub fn secrets(&self) -> &SharedSecrets {
        &self.secrets
    }

    /// Decides on a query: `option` is its COOKIE option data (None: no
    /// COOKIE option, or no OPT record), `now` unix seconds. Writes the
    /// response's COOKIE option data into `out[..option_len]`. No allocation.
    pub fn process(
        &self,
        option: Option<&[u8]>,
        client_ip: IpAddr,
        transport: Transport,
        now: u32,
        out: &mut [u8; RESPONSE_LEN],
    ) -> Outcome {
        let Some(data) = option else {
            return Outcome {
                action: Action::Answer,
                option_len: 0,
                valid: false,
            };
        };
        let secrets = self.secrets.load();
        let parsed = parse(data);
        let checked = check(&secrets, &parsed, client_ip, now);
        let action = decide(checked, transport, &self.slip);
        let option_len = match action {
            Action::Drop | Action::FormErr => 0,
            Action::Answer | Action::BadCookie => response_option(
                &secrets,
                self.refresh,
                &parsed,
                checked,
                client_ip,
                now,
                out,
            ),
        };
        Outcome {
            action,
            option_len,
            valid: checked.is_valid(),
        }
    }
}
