//! A counting global allocator for the "allocates nothing" tests.
//!
//! ```text
//!  alloc / alloc_zeroed / realloc ─▶ Counting ─▶ System
//!                                      │
//!          this thread watched? ───────┼─▶ +1 on this thread's count   (count)
//!          any count_all running? ─────┴─▶ +1 on the process-wide count (count_all)
//! ```
//!
//! A test binary installs it with two lines:
//!
//! ```
//! #[global_allocator]
//! static GLOBAL: lode_testalloc::Counting = lode_testalloc::Counting;
//! # fn main() {
//! # lode_testalloc::assert_installed();
//! # let (sum, n) = lode_testalloc::count(|| std::hint::black_box(2) + 2);
//! # assert_eq!((sum, n), (4, 0));
//! # let (v, n) = lode_testalloc::count(|| vec![std::hint::black_box(1u8)]);
//! # assert_eq!((v.len(), n), (1, 1));
//! # }
//! ```
//!
//! then checks the counter can see ([`assert_installed`]) and measures the
//! code under test with [`count`] (allocations made on the calling thread
//! while it runs) or [`count_all`] (on every thread, for code whose work
//! happens on threads it does not own, like the UDP workers). Freeing is
//! never counted: only `alloc`, `alloc_zeroed` and `realloc` are.
//!
//! [`count`] is per thread, so tests of one binary running in parallel do
//! not see each other's allocations; [`count_all`] sees every thread, so a
//! test using it belongs in its own test binary (or alone in one).
//!
//! This is a test-only crate (`publish = false`, only ever a
//! dev-dependency); its one `unsafe` item is the [`GlobalAlloc`] impl,
//! which the trait requires.
#![allow(unsafe_code)]
#![warn(missing_docs)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The counting allocator: forwards every call to [`System`], counting
/// allocations for [`count`] and [`count_all`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Counting;

thread_local! {
    // Const-initialised and without destructors, so reading them from inside
    // the allocator never allocates and works during thread teardown.
    static WATCHED: Cell<bool> = const { Cell::new(false) };
    static THREAD_COUNT: Cell<usize> = const { Cell::new(0) };
}

/// How many `count_all` calls are running (in any thread).
static ALL_WATCHERS: AtomicUsize = AtomicUsize::new(0);
/// Allocations on any thread while `ALL_WATCHERS > 0`; only ever grows.
static ALL_COUNT: AtomicUsize = AtomicUsize::new(0);

impl Counting {
    /// Counts one allocation where someone is watching.
    #[inline]
    fn note(&self) {
        // `try_with`: a thread being torn down may still allocate; not counted.
        let _ = WATCHED.try_with(|w| {
            if w.get() {
                let _ = THREAD_COUNT.try_with(|c| c.set(c.get() + 1));
            }
        });
        if ALL_WATCHERS.load(Ordering::Relaxed) > 0 {
            ALL_COUNT.fetch_add(1, Ordering::Relaxed);
        }
    }
}

// SAFETY: every method forwards its arguments unchanged to `System`, which
// upholds the GlobalAlloc contract; the bookkeeping beside it only touches
// const-initialised thread-locals and atomics, so it never allocates (no
// recursion into the allocator) and is safe from any thread.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.note();
        // SAFETY: our caller's contract (non-zero-size layout) is System's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.note();
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` (every allocation here does) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.note();
        // SAFETY: `ptr` came from `System` with `layout`; the caller's
        // contract on `new_size` is System's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Restores this thread's watch state and count when a [`count`] ends,
/// even by a panic.
struct ThreadWatch {
    /// Whether the thread was already watched (an enclosing `count`).
    was_watched: bool,
    /// The enclosing `count`'s tally so far.
    outer: usize,
}

impl Drop for ThreadWatch {
    fn drop(&mut self) {
        let inner = THREAD_COUNT.get();
        // An enclosing count also sees what the inner one counted.
        THREAD_COUNT.set(self.outer + inner);
        WATCHED.set(self.was_watched);
    }
}

/// Runs `f` with this thread watched; returns its result and how many
/// allocations (`alloc`, `alloc_zeroed`, `realloc`) this thread made
/// meanwhile. Other threads are not counted. Nests.
pub fn count<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let watch = ThreadWatch {
        was_watched: WATCHED.replace(true),
        outer: THREAD_COUNT.replace(0),
    };
    let r = f();
    let n = THREAD_COUNT.get();
    drop(watch);
    (r, n)
}

/// Stops process-wide counting when a [`count_all`] ends, even by a panic.
struct AllWatch;

impl Drop for AllWatch {
    fn drop(&mut self) {
        ALL_WATCHERS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs `f` while counting the allocations of every thread of the process
/// (not only this one); returns its result and that count. Meant for code
/// that works on threads of its own; other tests running in the same binary
/// meanwhile are counted too.
pub fn count_all<R>(f: impl FnOnce() -> R) -> (R, usize) {
    ALL_WATCHERS.fetch_add(1, Ordering::SeqCst);
    let watch = AllWatch;
    let before = ALL_COUNT.load(Ordering::SeqCst);
    let r = f();
    let n = ALL_COUNT.load(Ordering::SeqCst) - before;
    drop(watch);
    (r, n)
}

/// Panics unless [`Counting`] is this binary's global allocator and sees an
/// allocation (the "counter is blind" check to run before trusting a zero).
pub fn assert_installed() {
    let ((), mine) = count(|| drop(std::hint::black_box(Vec::<u8>::with_capacity(16))));
    let ((), all) = count_all(|| drop(std::hint::black_box(Vec::<u8>::with_capacity(16))));
    assert!(
        mine >= 1 && all >= 1,
        "counter is blind ({mine} on this thread, {all} in all): the test binary needs \
         `#[global_allocator] static GLOBAL: lode_testalloc::Counting = lode_testalloc::Counting;`"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    #[test]
    fn counts_allocations_and_reallocations() {
        assert_installed();
        let (v, n) = count(|| {
            let mut v = std::hint::black_box(Vec::<u64>::with_capacity(1));
            v.extend(0..100); // grows: at least one realloc
            v
        });
        assert!(n >= 2, "{n}");
        drop(v);
        let ((), n) = count(|| drop(std::hint::black_box(vec![0u8; 4096])));
        assert!(n >= 1, "alloc_zeroed: {n}");
        let (x, n) = count(|| std::hint::black_box(1u32) + 1);
        assert_eq!((x, n), (2, 0));
    }

    #[test]
    fn nests_and_survives_panics() {
        let ((_, inner), outer) = count(|| {
            let a = std::hint::black_box(Box::new(1u8));
            let r = count(|| std::hint::black_box(Box::new(2u8)));
            drop(a);
            r
        });
        assert_eq!(
            (inner, outer),
            (1, 2),
            "the outer count includes the inner one"
        );
        let r = std::panic::catch_unwind(|| count(|| panic!("boom")));
        assert!(r.is_err());
        assert!(!WATCHED.get(), "the watch ended with the panic");
        assert_eq!(ALL_WATCHERS.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn count_all_sees_other_threads() {
        let ((), n) = count_all(|| {
            std::thread::scope(|s| {
                s.spawn(|| {
                    // This thread is not watched by `count`: 0 here, seen by `count_all`.
                    let ((), here) = count(|| ());
                    assert_eq!(here, 0);
                    drop(std::hint::black_box(vec![1u8; 64]));
                });
            })
        });
        assert!(n >= 1, "{n}");
    }
}
