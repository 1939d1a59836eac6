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

/// Waits for the next message of `rx` for at most `wait` (None: as long as
/// it takes): `Ok(None)` when the wait ran out, `Err` when every sender is
/// gone. The runtimes of the control machines wait so for events until
/// their machine's next timeout.
pub(crate) fn recv_within<T>(
    rx: &std::sync::mpsc::Receiver<T>,
    wait: Option<Duration>,
) -> Result<Option<T>, std::sync::mpsc::RecvError> {
    use std::sync::mpsc::RecvTimeoutError;
    match wait {
        Some(w) => match rx.recv_timeout(w) {
            Ok(e) => Ok(Some(e)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(std::sync::mpsc::RecvError),
        },
        None => rx.recv().map(Some),
    }
}
