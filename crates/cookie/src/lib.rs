//! DNS Cookies (RFC 7873) for the query path, with the interoperable server
//! cookie of RFC 9018 (version 1, SipHash-2-4), deciding as Knot DNS 3.2's
//! `mod-cookies` does.
//!
//! ```text
//!  query's COOKIE option data ─▶ parse ─▶ Parsed ─▶ check(secrets, ip, now) ─▶ Check
//!                                                                  │
//!        decide(Check, Transport, Slip) ─▶ Action ◀────────────────┤
//!        response_option(…) ─▶ 24 bytes: client | echoed or fresh server cookie
//!  Cookies::process does all three; SharedSecrets::load() per query, rotate() elsewhere.
//! ```
//!
//! A pure library: no sockets, threads or clock (the caller passes `now`,
//! unix seconds), no allocation on the per-query calls.
//!
//! # Server cookie (RFC 9018 §4)
//!
//! `Version (1) | Reserved (3 × 0) | Timestamp (u32, big endian) | Hash (8)`,
//! Hash = SipHash-2-4 keyed with the 16-byte secret over
//! `Client Cookie | Version | Reserved | Timestamp | Client IP` (4 bytes for
//! IPv4, 16 for IPv6), the 64-bit result in little-endian byte order. An
//! IPv4-mapped IPv6 client address is hashed as the IPv4 address (Knot binds
//! IPv6 sockets v6-only, so it only ever sees IPv4 clients as IPv4; a
//! dual-stack Lode socket must not give them other cookies).
//!
//! # Knot 3.2's decision (src/knot/modules/cookies/cookies.c, `cookies_process`)
//!
//! The module runs at `KNOTD_STAGE_BEGIN`, after `prepare_answer`
//! (src/knot/nameserver/process_query.c), so FORMERR for a missing question
//! and BADVERS come first. The COOKIE option used is the last one in the
//! OPT record (`knot_edns_get_options` keeps the last of each code).
//!
//! | query's COOKIE option | UDP | TCP / TLS / QUIC |
//! |---|---|---|
//! | none, or no OPT | answer, no COOKIE option | same |
//! | length 0–7, 9–15, ≥ 41 (`knot_edns_cookie_parse` → `KNOT_EMALF`) | FORMERR, no COOKIE option | same |
//! | client cookie only (8) | BADCOOKIE with a fresh cookie, or dropped (slip) | answer with a fresh cookie |
//! | server cookie ≠ 16 bytes, version ≠ 1, timestamp out of `[now-3600, now+300]`, or wrong hash (`knot_edns_cookie_server_check`) | BADCOOKIE with a fresh cookie, or dropped (slip) | answer with a fresh cookie |
//! | valid | answer, the received cookie echoed, query flagged `KNOTD_QUERY_FLAG_COOKIE` (RRL skips it: src/knot/modules/rrl/rrl.c) | same |
//!
//! BADCOOKIE goes out through `process_query_err`: the question copied, no
//! records, the OPT record with the COOKIE option, RCODE 23 split between
//! the header and the OPT's extended RCODE. Slip (`badcookie-slip`, default
//! 1): of the UDP queries in the BADCOOKIE rows, the 1st, (N+1)th, … get
//! BADCOOKIE and the others no answer, one counter for the whole server.
//!
//! Knot 3.2 defaults: the module is off unless loaded (`global-module:
//! mod-cookies`); off, a COOKIE option is ignored and the answer has none
//! (`answer_edns_init` copies only NSID, EDNS Client Subnet, EXPIRE,
//! padding). On: one random 16-byte secret at load, whose first 8 bytes are
//! replaced by random ones at once and every `secret-lifetime` (default
//! 26 h, 1 s – 36 d) with no previous secret kept, so cookies made before a
//! rollover get BADCOOKIE over UDP; a configured `secret` (16 bytes) is used
//! as is and never rolled. A valid cookie is always echoed, never refreshed.
//!
//! Seen on knotd 3.2.6 (the `matches_knotd` test holds its cookies):
//! FORMERR for lengths 0, 7, 9, 15, 41 carries an OPT record without COOKIE;
//! BADCOOKIE is header RCODE 7 with OPT extended RCODE 1; with the module
//! off, every one of those lengths gets a normal answer without COOKIE.
//!
//! # Where Lode may differ (chosen by the caller)
//!
//! - [`Refresh::After`]`(`[`RFC_REFRESH_AFTER`]`)` makes a fresh cookie for
//!   a valid one older than half an hour (RFC 9018 §4.3); [`Refresh::Never`]
//!   echoes it (Knot). A cookie valid only under the previous secret is
//!   always answered with a fresh one.
//! - [`Secrets::rotate`] keeps the previous secret, so cookies in flight
//!   stay valid (RFC 9018 §4.4); [`Secrets::replace`] forgets it (Knot).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod decide;
mod option;
mod secret;
mod server;

pub use decide::{decide, Action, Cookies, Outcome, Slip, Transport, KNOT_BADCOOKIE_SLIP};
pub use option::{
    parse, Parsed, CLIENT_LEN, OPTION_CODE, RESPONSE_LEN, SERVER_LEN, SERVER_MAX_LEN,
    SERVER_MIN_LEN,
};
pub use secret::{random_secret, RandomError, Secrets, SharedSecrets, SECRET_LEN};
pub use server::{
    check, response_option, server_cookie, Check, Refresh, LIFETIME_FUTURE, LIFETIME_PAST,
    RFC_REFRESH_AFTER, VERSION,
};

/// Knot 3.2's default `secret-lifetime`: the secret rolls over every 26 hours.
pub const KNOT_SECRET_LIFETIME: u32 = 26 * 3600;
/// The longest `secret-lifetime` Knot accepts (RFC 7873 §7.1): 36 days.
pub const MAX_SECRET_LIFETIME: u32 = 36 * 24 * 3600;

#[cfg(test)]
mod tests;
