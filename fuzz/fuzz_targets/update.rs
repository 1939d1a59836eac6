//! Fuzz target: an UPDATE on arbitrary bytes through `parse_update`,
//! `process` against a small zone and `apply_rebuild` (see update_body.rs).
//!
//! Run: `cd fuzz && cargo +nightly fuzz run update`. Without nightly the same
//! body runs as apps/lode/tests/fuzz_smoke.rs over a deterministic corpus.
#![no_main]

mod update_body;

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

static ZONE: OnceLock<lode_zonedb::Zone> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let zone = ZONE.get_or_init(update_body::zone);
    let mut out = vec![0u8; 65535];
    if let Err(e) = update_body::check(zone, data, &mut out) {
        panic!("{e}");
    }
});
