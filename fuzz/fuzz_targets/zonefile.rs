//! Fuzz target: the zone-file reader and the zone builder on arbitrary text.
//! Whatever the input, `parse_bytes` returns records or errors (never
//! panics), and records it returns build into a zone or give problems.
//!
//! Run: `cd fuzz && cargo +nightly fuzz run zonefile`. Without nightly the same
//! body runs in apps/lode/tests/fuzz_smoke.rs.
#![no_main]

mod zonefile_body;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    zonefile_body::check(data);
});
