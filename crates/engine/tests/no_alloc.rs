//! `answer()` allocates nothing: a counting global allocator watches every
//! query of the golden set (answers, referrals, negative answers with NSEC
//! proofs, truncation, errors, drops) over UDP and TCP.
#![allow(unsafe_code)] // a GlobalAlloc impl is unsafe by definition; test only

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

mod common;
use common::load_zones;

use lode_engine::{answer, Settings};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static WATCHING: Cell<bool> = const { Cell::new(false) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if WATCHING.with(|w| w.get()) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if WATCHING.with(|w| w.get()) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn answer_does_not_allocate() {
    let zones = load_zones();
    let queries = common::golden_queries();
    assert!(queries.len() > 150);
    let settings = Settings::default();
    let mut out = vec![0u8; 65535];
    let mut answered = 0;
    // Sanity check of the counter itself: it must see this allocation.
    WATCHING.with(|w| w.set(true));
    let probe = std::hint::black_box(vec![1u8; 16]);
    WATCHING.with(|w| w.set(false));
    assert!(
        ALLOCATIONS.swap(0, Ordering::SeqCst) >= 1,
        "counter is blind"
    );
    drop(probe);
    // The zones as loaded, and the same zones with a non-empty delta (the
    // changed versions are made before watching: only answering counts).
    let (changed, _) = common::changed_zones(&zones);
    for set in [&zones, &changed] {
        for (t, q) in &queries {
            WATCHING.with(|w| w.set(true));
            let n = answer(set, q, &mut out, *t, &settings).len;
            WATCHING.with(|w| w.set(false));
            answered += usize::from(n > 0);
        }
    }
    assert!(answered > 200);
    assert_eq!(ALLOCATIONS.load(Ordering::SeqCst), 0, "answer() allocated");
}
