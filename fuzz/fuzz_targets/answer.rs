//! Fuzz target: `lode_engine::answer` on arbitrary bytes, over UDP and TCP,
//! against the zones of the differential suite (built once); then the same
//! bytes through the server's policy (DNS cookies, response-rate limiting).
//!
//! Run: `cd fuzz && cargo +nightly fuzz run answer`. Without nightly the same
//! body runs as apps/lode/tests/fuzz_smoke.rs over a deterministic corpus.
#![no_main]

mod answer_body;

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

static ZONES: OnceLock<lode_zonedb::ZoneSet> = OnceLock::new();
static GUARD: OnceLock<std::sync::Arc<lode_server::guard::Guard>> = OnceLock::new();

thread_local! {
    /// Output buffers made once (two 64 KiB buffers per input cost more than the answers).
    static SCRATCH: std::cell::RefCell<answer_body::Scratch> =
        std::cell::RefCell::new(answer_body::Scratch::new());
}

fuzz_target!(|data: &[u8]| {
    let zones = ZONES.get_or_init(|| {
        answer_body::zone_set(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/differential/zones"
        )))
    });
    let guard = GUARD.get_or_init(answer_body::guard);
    SCRATCH.with(|s| {
        let scratch = &mut s.borrow_mut();
        if let Err(e) = answer_body::check(zones, data, scratch) {
            panic!("{e}");
        }
        if let Err(e) = answer_body::check_guarded(zones, guard, data, scratch) {
            panic!("guarded: {e}");
        }
    });
});
