//! Worker threads that loop until a shared stop flag is set (the UDP and XDP
//! transports' workers): started one by one, stopped and joined together.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::IoError;

/// Threads sharing a stop flag; stopped and joined on [`Workers::stop`] or drop.
#[derive(Debug)]
pub(crate) struct Workers {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    /// What they are, for the log of a panic ("UDP", "XDP").
    what: &'static str,
}

impl Workers {
    pub(crate) fn new(what: &'static str) -> Workers {
        Workers {
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
            what,
        }
    }

    /// The flag each worker checks between its batches.
    pub(crate) fn flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// Starts thread `name` running `work`.
    pub(crate) fn spawn(
        &mut self,
        name: String,
        work: impl FnOnce() + Send + 'static,
    ) -> Result<(), IoError> {
        let t = std::thread::Builder::new()
            .name(name)
            .spawn(work)
            .map_err(|e| IoError::Thread(e.to_string()))?;
        self.threads.push(t);
        Ok(())
    }

    /// Sets the stop flag and waits for every thread (each returns within
    /// its poll interval).
    pub(crate) fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            if t.join().is_err() {
                tracing::error!("a {} worker panicked", self.what);
            }
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.stop();
    }
}
