//! Fuzz target: random changes through the signer never make a version that
//! fails verification (see signer_body.rs; the signing issue's fuzz target).
//!
//! Run: `cd fuzz && cargo +nightly fuzz run signer`. Without nightly the same
//! body runs as apps/lode/tests/fuzz_smoke.rs over a deterministic corpus.
#![no_main]

mod signer_body;

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

static SIGNED: OnceLock<Vec<(lode_dnssec::Signer, lode_zonedb::Zone)>> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let signed = SIGNED.get_or_init(signer_body::signed);
    if let Err(e) = signer_body::check(signed, data) {
        panic!("{e}");
    }
});
