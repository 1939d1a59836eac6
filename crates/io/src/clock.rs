//! The wall clock in Unix seconds: the one reading of it that the server,
//! the `lode` commands and the benchmarks share (TSIG times, cookie
//! timestamps, serial policies, refresh timers).

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since 1970 (0 if the clock is set before it).
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
