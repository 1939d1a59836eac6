//! The writer pool: a few threads serve the writers of every zone.
//!
//! ```text
//!  door (transports, reloader, secondaries)      pool threads (a few, shared by all zones)
//!  ────────────────────────────────────────      ─────────────────────────────────────────
//!  queue.push(work) ─ first in an idle queue? ─▶ ready ─▶ take the zone's whole queue (a group)
//!                                                         writer.step(group) → next wake
//!                     timers (per zone, the latest) ─▶ ready ─▶ writer.step([])  (a tick)
//! ```
//!
//! A zone is in the ready list at most once (`scheduled`), so one thread at a
//! time runs its writer and its changes stay in order; a zone with nothing
//! queued and no timer costs no thread, only its [`Task`] (its writer's state
//! and an empty queue). A zone whose queue is still not empty after its step
//! goes to the back of the ready list: a busy zone does not starve the others.

use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Instant;

use super::{Work, WriterError};

/// Most units of work taken into one step (one group commit).
pub(super) const MAX_GROUP: usize = 4096;
/// Updates waiting for a zone's writer before new ones get SERVFAIL.
const QUEUE_LEN: usize = 65536;

/// What a zone's writer does on the pool.
pub(super) trait Step: Send {
    /// Does `group` (empty: a timer's tick) and returns when to be woken
    /// next without work (None: only by work). `me` queues work for this
    /// same zone later (what a step waits for, e.g. the commit log).
    fn step(&mut self, group: Vec<Work>, out: &mut [u8], me: &WeakQueue) -> Option<Instant>;

    /// The commit log's word on the group the writer waits for (called on
    /// the commit log's thread, see [`WeakQueue::committed`]); returns when
    /// the writer wants its next step (now: work waited meanwhile).
    fn committed(
        &mut self,
        result: Result<(), WriterError>,
        queued: Vec<Work>,
        out: &mut [u8],
        me: &WeakQueue,
    ) -> Option<Instant> {
        let _ = (result, queued, out, me);
        None
    }

    /// True while the writer waits for the commit log: new work stays in
    /// the zone's queue (no step, no pool thread woken for it) and is
    /// handed to [`Step::committed`].
    fn parked(&self) -> bool {
        false
    }
}

/// A zone's queue as its own writer holds it: it does not keep the zone
/// on the pool (the writer would never go).
#[derive(Debug, Clone)]
pub(crate) struct WeakQueue {
    task: Weak<Task>,
}

impl WeakQueue {
    /// Queues `work` for the zone's writer (from a thread of its own, such
    /// as a DS check); dropped when the zone is gone.
    pub(crate) fn send(&self, work: Work) {
        if let Some(task) = self.task.upgrade() {
            lock(&task.queue).push_back(work);
            task.schedule();
        }
    }

    /// Hands the commit log's word on the zone's pending group to its
    /// writer, on the calling thread (no pool step, no wake-up: the
    /// group is published and answered at once), then puts the zone on the
    /// ready list if work waited meanwhile.
    pub(crate) fn committed(&self, result: Result<(), WriterError>) {
        let Some(task) = self.task.upgrade() else {
            return;
        };
        thread_local! {
            static OUT: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; 65535]);
        }
        let (wake, parked) = OUT.with(|out| {
            let mut out = out.borrow_mut();
            let mut writer = lock(&task.writer);
            // What came while the writer was parked goes to it now.
            let queued: Vec<Work> = Vec::from(std::mem::take(&mut *lock(&task.queue)));
            let wake = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                writer.committed(result, queued, &mut out, self)
            }))
            .unwrap_or_else(|_| {
                tracing::error!("zone {}: its writer panicked; work dropped", task.name);
                None
            });
            // Set under the writer's lock, as `Task::run` sets it.
            let parked = writer.parked();
            task.parked.store(parked, Ordering::SeqCst);
            (wake, parked)
        });
        if parked {
            return; // the next word from the commit log goes on
        }
        // Work queued between the drain and the flag found the zone parked.
        if !lock(&task.queue).is_empty() {
            task.schedule();
        }
        match wake {
            Some(at) if at <= Instant::now() => task.schedule(),
            Some(at) => {
                if let Some(pool) = task.pool.upgrade() {
                    task.wake_by(&pool, at);
                }
            }
            None => {}
        }
    }
}

/// The pool's threads and the zones ready to run.
#[derive(Debug)]
pub(crate) struct WriterPool {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<PoolState>,
    wake: Condvar,
    /// Steps running now.
    running: std::sync::atomic::AtomicUsize,
    /// Called when the last running step ends (the commit log's nudge).
    idle: std::sync::OnceLock<Box<dyn Fn() + Send + Sync>>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct PoolState {
    ready: VecDeque<Arc<Task>>,
    timers: BinaryHeap<Timer>,
    /// The heap's length at which the timers of zones gone are taken out.
    purge_at: usize,
    /// Ties between timers of the same instant, oldest first.
    seq: u64,
    stopping: bool,
    /// Pool threads waiting on `wake` (a notification to none is a system
    /// call for nothing: one per update otherwise).
    sleepers: usize,
}

/// The fewest timers [`PoolState::purge`] looks through.
const PURGE_MIN: usize = 1024;

impl PoolState {
    /// Takes out the timers of zones gone when the heap has doubled since
    /// the last time. A zone removed (by a reload) leaves its timer behind
    /// until it is due, days ahead for a signed zone's next re-signing, and
    /// the timer's weak reference keeps the zone's `Task` allocated:
    /// without this, adding and removing thousands of signed zones again
    /// and again kept them all (and the memory around them). Amortised:
    /// one look at each timer per doubling.
    fn purge(&mut self) {
        if self.timers.len() < self.purge_at.max(PURGE_MIN) {
            return;
        }
        // A dead task's weak reference is only dropped here: no writer is
        // dropped under the pool's lock.
        self.timers.retain(|t| t.task.strong_count() > 0);
        self.purge_at = 2 * self.timers.len();
    }

    /// Wakes one sleeping pool thread, if any sleeps.
    fn notify(&self, pool: &Inner) {
        if self.sleepers > 0 {
            pool.wake.notify_one();
        }
    }
}

/// A zone's wake-up; stale when the zone has set another since.
struct Timer {
    at: Instant,
    seq: u64,
    task: Weak<Task>,
}

impl PartialEq for Timer {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Timer {}
impl PartialOrd for Timer {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timer {
    /// Reversed: the heap's top is the earliest.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// One zone on the pool: its queue and its writer.
pub(super) struct Task {
    name: String,
    queue: Mutex<VecDeque<Work>>,
    /// In the ready list or running.
    scheduled: AtomicBool,
    /// Its writer waits for the commit log (see [`Step::parked`]).
    parked: AtomicBool,
    /// The wake-up that counts (older timers in the heap are stale).
    wake_at: Mutex<Option<Instant>>,
    writer: Mutex<Box<dyn Step>>,
    pool: Weak<Inner>,
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A zone writer's queue, as its door holds it: cloned freely; the writer
/// goes when the last one does (and its running step, if any, is done).
#[derive(Debug, Clone)]
pub(crate) struct WriterQueue {
    task: Arc<Task>,
}

/// Locks `m`, going on after a panic elsewhere (the data stays whole: every
/// critical section here only moves items in and out).
fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl WriterQueue {
    /// Queues `work` unless the queue is full.
    pub(crate) fn try_send(&self, work: Work) -> Result<(), mpsc::TrySendError<Work>> {
        {
            let mut q = lock(&self.task.queue);
            if q.len() >= QUEUE_LEN {
                return Err(mpsc::TrySendError::Full(work));
            }
            q.push_back(work);
        }
        self.task.schedule();
        Ok(())
    }
    /// Queues `work` (control work: not bounded by the queue's length).
    pub(crate) fn send(&self, work: Work) -> Result<(), mpsc::SendError<Work>> {
        if self.task.pool.strong_count() == 0 {
            return Err(mpsc::SendError(work));
        }
        lock(&self.task.queue).push_back(work);
        self.task.schedule();
        Ok(())
    }
}

impl Task {
    /// Sets the zone's wake-up (the latest one counts).
    fn set_wake(self: &Arc<Task>, pool: &Inner, wake: Option<Instant>) {
        let mut st = lock(&pool.state);
        self.set_wake_locked(&mut st, pool, wake);
    }

    /// [`Task::set_wake`] with the pool's state locked.
    fn set_wake_locked(self: &Arc<Task>, st: &mut PoolState, pool: &Inner, wake: Option<Instant>) {
        let mut current = lock(&self.wake_at);
        if wake != *current {
            *current = wake;
            if let Some(at) = wake {
                st.seq += 1;
                let seq = st.seq;
                // A sleeping thread wakes by itself for a timer later than
                // the earliest one it waits for.
                let earlier = st.timers.peek().is_none_or(|t| at < t.at);
                st.purge();
                st.timers.push(Timer {
                    at,
                    seq,
                    task: Arc::downgrade(self),
                });
                if earlier {
                    st.notify(pool);
                }
            }
        }
    }

    /// Sets the zone's wake-up to `at` unless one at or before it is set
    /// (that step sets the next): a stream of commits does not push a
    /// timer (and wake a pool thread) for each.
    fn wake_by(self: &Arc<Task>, pool: &Inner, at: Instant) {
        let current = *lock(&self.wake_at);
        if current.is_none_or(|c| c > at) {
            self.set_wake(pool, Some(at));
        }
    }

    /// Puts the zone in the ready list unless it is there or running.
    fn schedule(self: &Arc<Self>) {
        if self.parked.load(Ordering::SeqCst) || self.scheduled.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(pool) = self.pool.upgrade() {
            let mut st = lock(&pool.state);
            st.ready.push_back(self.clone());
            st.notify(&pool);
        }
    }
    /// Runs one step of the zone's writer, then reschedules it if work came
    /// meanwhile and sets its timer.
    fn run(self: &Arc<Self>, pool: &Inner, out: &mut [u8]) {
        let group: Vec<Work> = {
            let mut q = lock(&self.queue);
            if q.len() <= MAX_GROUP {
                // The queue's buffer goes with the group (Vec::from reuses
                // it): an idle zone's queue holds no memory (~190 bytes a
                // zone kept at 10^5 catalog members), at no extra allocation.
                Vec::from(std::mem::take(&mut *q))
            } else {
                q.drain(..MAX_GROUP).collect()
            }
        };
        let me = WeakQueue {
            task: Arc::downgrade(self),
        };
        let (wake, parked) = {
            let mut writer = lock(&self.writer);
            // A panic in one zone's writer must not take the pool thread
            // (and every other zone) with it: the zone's work is dropped
            // (its replies are never sent) and the zone goes on.
            let wake = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                writer.step(group, out, &me)
            })) {
                Ok(w) => w,
                Err(_) => {
                    tracing::error!("zone {}: its writer panicked; work dropped", self.name);
                    None
                }
            };
            let parked = writer.parked();
            self.parked.store(parked, Ordering::SeqCst);
            (wake, parked)
        };
        // The wake-up is set and the zone let go under the pool's lock, which
        // timers fire under: a wake-up due at once (or soon) fires after the
        // zone is let go, and schedules it again. (Set first and let go
        // after, a timer firing in between found the zone still running
        // and was lost: the zone slept until new work came.)
        let mut st = lock(&pool.state);
        self.set_wake_locked(&mut st, pool, wake);
        if parked {
            // Its queue waits for the commit log's word (`WeakQueue::
            // committed`), which may have come already and found the zone
            // still scheduled: then it is scheduled again here.
            self.scheduled.store(false, Ordering::SeqCst);
            drop(st);
            if !self.parked.load(Ordering::SeqCst) {
                self.schedule();
            }
            return;
        }
        // More work came while the step ran: back of the line. Else the
        // zone leaves the ready list — and comes back at once if work
        // slipped in between the check and the flag.
        if !lock(&self.queue).is_empty() {
            st.ready.push_back(self.clone());
            st.notify(pool);
            return;
        }
        self.scheduled.store(false, Ordering::SeqCst);
        drop(st);
        if !lock(&self.queue).is_empty() {
            self.schedule();
        }
    }
}

impl WriterPool {
    /// Starts `threads` pool threads (at least one).
    pub(crate) fn start(threads: usize) -> std::io::Result<WriterPool> {
        let inner = Arc::new(Inner {
            state: Mutex::new(PoolState::default()),
            wake: Condvar::new(),
            running: std::sync::atomic::AtomicUsize::new(0),
            idle: std::sync::OnceLock::new(),
        });
        for i in 0..threads.max(1) {
            let inner = inner.clone();
            std::thread::Builder::new()
                .name(format!("lode-writer-{i}"))
                .spawn(move || {
                    // Queries come first on a busy CPU; updates wait a little.
                    lode_io::lower_thread_priority(5);
                    work(&inner);
                })?;
        }
        Ok(WriterPool { inner })
    }
    /// Adds a zone's writer, to be woken at `first` (if any); its queue
    /// is its way in.
    pub(super) fn add(
        &self,
        name: String,
        writer: Box<dyn Step>,
        first: Option<Instant>,
    ) -> WriterQueue {
        let task = Arc::new(Task {
            name,
            queue: Mutex::new(VecDeque::new()),
            scheduled: AtomicBool::new(false),
            parked: AtomicBool::new(false),
            wake_at: Mutex::new(None),
            writer: Mutex::new(writer),
            pool: Arc::downgrade(&self.inner),
        });
        if first.is_some() {
            task.set_wake(&self.inner, first);
        }
        WriterQueue { task }
    }
    /// A probe that tells whether zones are being run or are ready to run
    /// (their groups may soon go to the commit log, which then waits a
    /// little for them: one fdatasync for more groups).
    pub(crate) fn busy_probe(&self) -> impl Fn() -> bool + Send + 'static {
        let inner = Arc::downgrade(&self.inner);
        move || {
            inner.upgrade().is_some_and(|p| {
                p.running.load(Ordering::Acquire) > 0
                    || p.state.try_lock().map_or(true, |st| !st.ready.is_empty())
            })
        }
    }

    /// Sets what is called when the pool's last running step ends (once).
    pub(crate) fn on_idle(&self, f: impl Fn() + Send + Sync + 'static) {
        let _ = self.inner.idle.set(Box::new(f));
    }

    /// Asks the threads to stop once the zones ready now have run.
    pub(crate) fn stop(&self) {
        lock(&self.inner.state).stopping = true;
        self.inner.wake.notify_all();
    }
}

/// A pool thread: runs ready zones, fires due timers, sleeps until the next.
fn work(pool: &Inner) {
    let mut out = vec![0u8; 65535];
    loop {
        let task = {
            let mut st = lock(&pool.state);
            loop {
                let now = Instant::now();
                while st.timers.peek().is_some_and(|t| t.at <= now) {
                    let Some(t) = st.timers.pop() else { break };
                    let Some(task) = t.task.upgrade() else {
                        continue;
                    };
                    let mut wake = lock(&task.wake_at);
                    if *wake != Some(t.at) {
                        continue; // stale: the zone set another since
                    }
                    *wake = None;
                    drop(wake);
                    // A zone running now set its next wake-up under this
                    // lock after its step (see `Task::run`): this timer is
                    // one its running step has served.
                    if !task.scheduled.swap(true, Ordering::AcqRel) {
                        st.ready.push_back(task);
                    }
                }
                if let Some(task) = st.ready.pop_front() {
                    break task;
                }
                if st.stopping {
                    return;
                }
                st.sleepers += 1;
                st = match st.timers.peek().map(|t| t.at) {
                    Some(at) => {
                        pool.wake
                            .wait_timeout(st, at.saturating_duration_since(now))
                            .unwrap_or_else(PoisonError::into_inner)
                            .0
                    }
                    None => pool.wake.wait(st).unwrap_or_else(PoisonError::into_inner),
                };
                st.sleepers -= 1;
            }
        };
        pool.running.fetch_add(1, Ordering::AcqRel);
        task.run(pool, &mut out);
        if pool.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            if let Some(idle) = pool.idle.get() {
                idle();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    /// Counts the work it gets and checks that two steps never overlap.
    struct Counter {
        seen: Arc<AtomicUsize>,
        running: Arc<AtomicBool>,
        ticks: Arc<AtomicUsize>,
        /// Asked for in every step until a tick came (a step states
        /// its writer's next wake-up whole).
        wake_once: Option<Instant>,
    }

    impl Step for Counter {
        fn step(&mut self, group: Vec<Work>, _: &mut [u8], _: &WeakQueue) -> Option<Instant> {
            assert!(!self.running.swap(true, Ordering::SeqCst), "steps overlap");
            if group.is_empty() {
                self.ticks.fetch_add(1, Ordering::SeqCst);
                self.wake_once = None;
            }
            self.seen.fetch_add(group.len(), Ordering::SeqCst);
            std::thread::sleep(Duration::from_micros(50));
            self.running.store(false, Ordering::SeqCst);
            self.wake_once
        }
    }

    fn flush_work() -> Work {
        let (done, _) = mpsc::channel();
        Work::Flush { done }
    }

    #[test]
    fn every_zone_gets_all_its_work_one_step_at_a_time() {
        let pool = WriterPool::start(3).unwrap();
        let mut zones = Vec::new();
        for i in 0..50 {
            let seen = Arc::new(AtomicUsize::new(0));
            let ticks = Arc::new(AtomicUsize::new(0));
            let q = pool.add(
                format!("z{i}"),
                Box::new(Counter {
                    seen: seen.clone(),
                    running: Arc::default(),
                    ticks: ticks.clone(),
                    wake_once: Some(Instant::now() + Duration::from_millis(20)),
                }),
                None,
            );
            zones.push((q, seen, ticks));
        }
        std::thread::scope(|s| {
            for t in 0..4 {
                let zones = &zones;
                s.spawn(move || {
                    for n in 0..200 {
                        let (q, _, _) = &zones[(n * 7 + t) % zones.len()];
                        q.try_send(flush_work()).unwrap();
                    }
                });
            }
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let total: usize = zones.iter().map(|z| z.1.load(Ordering::SeqCst)).sum();
            let ticked = zones.iter().all(|z| z.2.load(Ordering::SeqCst) >= 1);
            if total == 800 && ticked {
                break;
            }
            assert!(Instant::now() < deadline, "only {total} of 800 done");
            std::thread::sleep(Duration::from_millis(5));
        }
        pool.stop();
    }

    #[test]
    fn a_writer_added_with_a_first_wake_is_ticked_without_work() {
        let pool = WriterPool::start(1).unwrap();
        let ticks = Arc::new(AtomicUsize::new(0));
        let _q = pool.add(
            "z".into(),
            Box::new(Counter {
                seen: Arc::default(),
                running: Arc::default(),
                ticks: ticks.clone(),
                wake_once: None,
            }),
            Some(Instant::now() + Duration::from_millis(10)),
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while ticks.load(Ordering::SeqCst) == 0 {
            assert!(Instant::now() < deadline, "never ticked");
            std::thread::sleep(Duration::from_millis(5));
        }
        pool.stop();
    }

    #[test]
    fn a_writer_goes_with_its_last_queue() {
        let pool = WriterPool::start(1).unwrap();
        let seen = Arc::new(AtomicUsize::new(0));
        let q = pool.add(
            "z".into(),
            Box::new(Counter {
                seen: seen.clone(),
                running: Arc::default(),
                ticks: Arc::default(),
                wake_once: None,
            }),
            None,
        );
        let weak = Arc::downgrade(&q.task);
        q.send(flush_work()).unwrap();
        drop(q);
        let deadline = Instant::now() + Duration::from_secs(10);
        while weak.strong_count() > 0 {
            assert!(Instant::now() < deadline, "the writer stayed");
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(seen.load(Ordering::SeqCst), 1);
        pool.stop();
    }

    #[test]
    fn the_timers_of_zones_gone_do_not_stay() {
        // Zones with a far wake-up (a signed zone's next re-signing),
        // removed and added again and again (reloads of a hosting company):
        // their timers, and the tasks they point to, must not pile up.
        let pool = WriterPool::start(1).unwrap();
        let far = Instant::now() + Duration::from_secs(86_400);
        for round in 0..10 {
            let queues: Vec<_> = (0..1000)
                .map(|i| {
                    pool.add(
                        format!("z{round}-{i}"),
                        Box::new(Counter {
                            seen: Arc::default(),
                            running: Arc::default(),
                            ticks: Arc::default(),
                            wake_once: None,
                        }),
                        Some(far),
                    )
                })
                .collect();
            drop(queues);
        }
        // Each timer kept holds its task's allocation.
        let timers = lock(&pool.inner.state).timers.len();
        assert!(timers <= 2 * PURGE_MIN, "{timers} timers for 0 zones");
        pool.stop();
    }

    /// Asks to be woken at once, `left` more times.
    struct Eager {
        left: usize,
        steps: Arc<AtomicUsize>,
    }

    impl Step for Eager {
        fn step(&mut self, _: Vec<Work>, _: &mut [u8], _: &WeakQueue) -> Option<Instant> {
            self.steps.fetch_add(1, Ordering::SeqCst);
            self.left = self.left.saturating_sub(1);
            (self.left > 0).then(Instant::now)
        }
    }

    #[test]
    fn a_wake_up_due_before_its_step_ends_is_not_lost() {
        // Each zone's step asks for the next at once: the timer is due as
        // soon as it is set, and another pool thread fires it while the
        // zone is still running; that must lead to a step all the same.
        let pool = WriterPool::start(4).unwrap();
        let zones: Vec<_> = (0..100)
            .map(|i| {
                let steps = Arc::new(AtomicUsize::new(0));
                let q = pool.add(
                    format!("z{i}"),
                    Box::new(Eager {
                        left: 200,
                        steps: steps.clone(),
                    }),
                    Some(Instant::now()),
                );
                (q, steps)
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let done = zones
                .iter()
                .filter(|z| z.1.load(Ordering::SeqCst) >= 200)
                .count();
            if done == zones.len() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{done} of {} zones got every step",
                zones.len()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        pool.stop();
    }
}
