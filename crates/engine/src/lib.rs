//! The answer engine: `answer()` turns a query packet into a response packet
//! over an immutable [`ZoneSet`]. No sockets, no clocks, no threads, no
//! allocation, no locks: it can be unit-tested, fuzzed and benchmarked alone;
//! transports only move bytes.
//!
//! (Design note to be completed by the engine: pipeline parse → zone → lookup
//! → sections → EDNS/truncation.)
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use lode_zonedb::ZoneSet;

/// How the query arrived; decides size limits and truncation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// UDP: responses limited to 512 bytes, or the EDNS buffer size capped by
    /// [`Settings::max_udp_payload`]; TC=1 when an answer does not fit.
    Udp,
    /// TCP (RFC 7766): responses up to 65535 bytes.
    Tcp,
}

/// Server-wide answer settings.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Largest UDP response with EDNS (default 1232, never below 512).
    pub max_udp_payload: u16,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_udp_payload: 1232,
        }
    }
}

/// Answers one query. `out` must be at least 65535 bytes for TCP and at least
/// `settings.max_udp_payload` (and 512) for UDP. Returns the response length,
/// or 0 when the query must be dropped (e.g. it is itself a response, or too
/// short to carry an ID).
pub fn answer(
    zones: &ZoneSet,
    query: &[u8],
    out: &mut [u8],
    transport: Transport,
    settings: &Settings,
) -> usize {
    let _ = (zones, transport, settings);
    // Placeholder until the engine lands: REFUSED with the query's header and question.
    if query.len() < 12 || query[2] & 0x80 != 0 {
        return 0;
    }
    let n = query.len().min(out.len());
    out[..n].copy_from_slice(&query[..n]);
    out[2] |= 0x80;
    out[3] = (out[3] & 0xF0) | 5;
    n
}
