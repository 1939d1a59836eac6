//! Stopping a long benchmark cleanly: SIGINT, SIGTERM and SIGHUP are blocked
//! in the calling thread (and the threads it starts later; servers get a
//! clean mask from `Command`) and a thread waits for them and sets a flag the
//! benchmark checks between steps, so that its servers (and namespaces) are
//! stopped by their guards instead of being left behind.

use std::sync::atomic::{AtomicBool, Ordering};

/// Blocks the three signals and starts thread `name`, which sets `stop` on
/// the first one and prints `what` ("stopping after this step …") to stderr.
/// Call before starting any other thread.
pub(crate) fn catch(
    stop: &'static AtomicBool,
    name: &str,
    what: &'static str,
) -> Result<(), String> {
    on_signal(name, move |sig| {
        if !stop.swap(true, Ordering::SeqCst) {
            crate::compare::say(&format!("{sig}: {what}"));
        }
    })
}

/// Blocks the three signals and starts thread `name`, which calls `action` on
/// each one (it may end the process). Call before starting any other thread.
pub(crate) fn on_signal(
    name: &str,
    action: impl Fn(nix::sys::signal::Signal) + Send + 'static,
) -> Result<(), String> {
    use nix::sys::signal::{SigSet, Signal};
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    set.add(Signal::SIGHUP);
    set.thread_block()
        .map_err(|e| format!("blocking signals: {e}"))?;
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            while let Ok(sig) = set.wait() {
                action(sig);
            }
        })
        .map_err(|e| format!("signal thread: {e}"))?;
    Ok(())
}
