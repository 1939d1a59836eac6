//! dnstap query logging around the answer (lode-dnstap does the work):
//! starting the logger from the configuration, and handing each request
//! and what was sent back to it.
//!
//! ```text
//!  handle(): tap off ─▶ respond()                       (one branch)
//!            tap on  ─▶ now ─ respond() ─ now ─▶ Dnstap::log (query, answer or none, peer, UDP/TCP)
//! ```

use std::time::SystemTime;

use lode_dnstap::{Dnstap, Event, Protocol};
use lode_engine::Transport;
use lode_io::Client;

/// The logger of `c`, started.
pub(crate) fn start(c: &lode_dnstap::Config) -> Result<Dnstap, lode_dnstap::DnstapError> {
    let tap = Dnstap::start(c)?;
    let what = match (c.log_queries, c.log_responses) {
        (true, true) => "queries and responses",
        (true, false) => "queries",
        (false, true) => "responses",
        (false, false) => "nothing (log-queries and log-responses are off)",
    };
    tracing::info!("dnstap: logging {what} to {}, 1 in {}", c.sink, c.sample);
    Ok(tap)
}

/// Answers with `respond` and logs the request and its answer (none when
/// `respond` returns 0: dropped, or answered later).
pub(crate) fn logged(
    tap: &Dnstap,
    q: &[u8],
    out: &mut [u8],
    client: &mut Client<'_>,
    transport: Transport,
    respond: impl FnOnce(&mut [u8], &mut Client<'_>) -> usize,
) -> usize {
    let query_time = SystemTime::now();
    let len = respond(out, client);
    tap.log(&Event {
        query: q,
        response: (len > 0).then(|| out.get(..len)).flatten(),
        peer: client.addr(),
        local: client.local(),
        protocol: match transport {
            Transport::Udp => Protocol::Udp,
            Transport::Tcp if client.protocol() == lode_io::Protocol::Quic => Protocol::Doq,
            Transport::Tcp if client.is_encrypted() => Protocol::Dot,
            Transport::Tcp => Protocol::Tcp,
        },
        query_time,
        response_time: SystemTime::now(),
    });
    len
}
