//! The wall clock, one reading for the whole server.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since 1970 (TSIG times, serial policies).
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
