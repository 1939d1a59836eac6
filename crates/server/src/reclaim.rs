//! Replaced zone versions and sets are dropped on a thread of their own, a
//! moment after they were replaced. A query loads the published version
//! without a lock and holds it until its answer is written; when a writer
//! swaps in a new one meanwhile, that query's hold is made a full
//! reference, and were the writer to drop its own at once the query's
//! thread would free the version on its way out. After a compaction that
//! is the whole old base and delta — 10^8 bytes, a million small
//! allocations, tens of milliseconds on a core that answers queries. Here
//! the writer's reference waits [`GRACE`], far longer than any answer
//! takes, so the last holder is the reclaimer, at the lowest priority.

use std::collections::VecDeque;
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

/// How long a replaced value is kept before it is dropped.
pub(crate) const GRACE: Duration = Duration::from_millis(100);

/// The reclaiming thread's shortest sleep.
const TICK: Duration = Duration::from_millis(10);

/// Time spent dropping past which the heap is trimmed.
const TRIM_AFTER: Duration = Duration::from_millis(1);

type Retired = (Instant, Box<dyn Send>);

/// Drops what it is given [`GRACE`] after, in order, on a thread started
/// with the first value (and ended when the reclaimer is dropped).
#[derive(Debug)]
pub(crate) struct Reclaimer {
    grace: Duration,
    tx: OnceLock<Option<mpsc::Sender<Retired>>>,
}

impl Default for Reclaimer {
    fn default() -> Self {
        Reclaimer::new(GRACE)
    }
}

impl Reclaimer {
    pub(crate) fn new(grace: Duration) -> Reclaimer {
        Reclaimer {
            grace,
            tx: OnceLock::new(),
        }
    }

    /// Drops `value` a grace period from now, off the caller's thread (on
    /// it at once if no thread could be started).
    pub(crate) fn retire(&self, value: impl Send + 'static) {
        let tx = self.tx.get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Retired>();
            let grace = self.grace;
            let spawned = std::thread::Builder::new()
                .name("lode-reclaim".into())
                .spawn(move || {
                    lode_io::lower_thread_priority(19);
                    reclaim(&rx, grace);
                });
            match spawned {
                Ok(_) => Some(tx),
                Err(e) => {
                    tracing::warn!("cannot start the reclaiming thread ({e}): replaced zone versions are freed where they are dropped");
                    None
                }
            }
        });
        if let Some(tx) = tx {
            // (The thread only ends when `tx` goes: sending cannot fail.)
            let _ = tx.send((Instant::now(), Box::new(value)));
        }
    }
}

/// The reclaiming thread: holds what comes, in order, and drops each once
/// `grace` has passed since it came (then trims the heap if that took long) — waking at most every [`TICK`] under
/// a stream of publications, not at all when none come. Returns when the
/// reclaimer is gone and everything held is dropped.
fn reclaim(rx: &mpsc::Receiver<Retired>, grace: Duration) {
    let mut held: VecDeque<Retired> = VecDeque::new();
    loop {
        if held.is_empty() {
            match rx.recv() {
                Ok(v) => held.push_back(v),
                Err(_) => return,
            }
        }
        let due = held
            .front()
            .map_or_else(Instant::now, |(at, _)| *at + grace);
        std::thread::sleep(due.saturating_duration_since(Instant::now()).max(TICK));
        held.extend(rx.try_iter());
        let now = Instant::now();
        while held.front().is_some_and(|(at, _)| *at + grace <= now) {
            held.pop_front();
        }
        // Freeing that took a while (a version a compaction replaced) left
        // pages in the heap: they go back now.
        if now.elapsed() >= TRIM_AFTER {
            lode_io::mem::trim_heap();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Notes the name of the thread it is dropped on.
    struct Noted(Arc<Mutex<Option<String>>>);

    impl Drop for Noted {
        fn drop(&mut self) {
            let name = std::thread::current().name().map(str::to_string);
            *self.0.lock().unwrap() = Some(name.unwrap_or_default());
        }
    }

    #[test]
    fn a_reader_holding_a_replaced_value_never_frees_it() {
        let r = Reclaimer::new(Duration::from_millis(300));
        let dropped_on = Arc::new(Mutex::new(None));
        let value = Arc::new(Noted(dropped_on.clone()));
        let reader = value.clone();
        let started = Instant::now();
        r.retire(value);
        // The reader leaves first: its reference was not the last.
        drop(reader);
        assert!(dropped_on.lock().unwrap().is_none(), "freed by the reader");
        while dropped_on.lock().unwrap().is_none() {
            assert!(started.elapsed() < Duration::from_secs(10), "never freed");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            started.elapsed() >= Duration::from_millis(300),
            "freed before the grace period"
        );
        assert_eq!(dropped_on.lock().unwrap().as_deref(), Some("lode-reclaim"));
    }

    #[test]
    fn each_value_waits_its_own_grace() {
        let r = Reclaimer::new(Duration::from_millis(1000));
        let first = Arc::new(Mutex::new(None));
        let second = Arc::new(Mutex::new(None));
        r.retire(Noted(first.clone()));
        std::thread::sleep(Duration::from_millis(500));
        let retired = Instant::now();
        r.retire(Noted(second.clone()));
        while first.lock().unwrap().is_none() {
            assert!(retired.elapsed() < Duration::from_secs(10), "never freed");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            second.lock().unwrap().is_none(),
            "freed with the one before"
        );
        while second.lock().unwrap().is_none() {
            assert!(retired.elapsed() < Duration::from_secs(10), "never freed");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(retired.elapsed() >= Duration::from_millis(1000));
    }
}
