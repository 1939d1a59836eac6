//! The wall clock, one reading for the whole server (`lode_io::clock`), and
//! durations as the log shows them.

use std::time::Duration;

pub(crate) use lode_io::clock::unix_now;

/// A duration for a log line: seconds to 0.01 s from one second up, else
/// milliseconds to 0.001 ms.
pub(crate) fn format_duration(d: Duration) -> String {
    if d.as_secs() >= 1 {
        format!("{:.2} s", d.as_secs_f64())
    } else {
        format!("{:.3} ms", d.as_secs_f64() * 1000.0)
    }
}

/// A duration in milliseconds, to 0.1 ms (the `duration_ms` log field).
pub(crate) fn millis(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 10_000.0).round() / 10.0
}
