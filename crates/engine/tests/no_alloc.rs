//! `answer()` allocates nothing: a counting global allocator watches every
//! query of the golden set (answers, referrals, negative answers with NSEC
//! proofs, truncation, errors, drops) over UDP and TCP.

mod common;
use common::load_zones;

use lode_engine::{answer, Settings};

#[global_allocator]
static GLOBAL: lode_testalloc::Counting = lode_testalloc::Counting;

#[test]
fn answer_does_not_allocate() {
    let zones = load_zones();
    let queries = common::golden_queries();
    assert!(queries.len() > 150);
    let settings = Settings::default();
    let mut out = vec![0u8; 65535];
    let mut answered = 0;
    lode_testalloc::assert_installed();
    // The zones as loaded, and the same zones with a non-empty delta (the
    // changed versions are made before watching: only answering counts).
    let (changed, _) = common::changed_zones(&zones);
    for (which, set) in [("loaded", &zones), ("changed", &changed)] {
        for (i, (t, q)) in queries.iter().enumerate() {
            let (n, allocs) = lode_testalloc::count(|| answer(set, q, &mut out, *t, &settings).len);
            assert_eq!(
                allocs, 0,
                "answer() allocated: {which} zones, query {i} ({t:?})"
            );
            answered += usize::from(n > 0);
        }
    }
    assert!(answered > 200);
}
