//! The body shared by fuzz/fuzz_targets/zonefile.rs and the smoke test in
//! apps/lode/tests/fuzz_smoke.rs: read `data` as a zone file for
//! `example.com.`, then build the records into a zone. Any panic is a bug.
#![allow(dead_code)]

/// Reads and builds; returns the number of records read (0 on errors).
pub fn check(data: &[u8]) -> usize {
    let origin: lode_wire::Name = match "example.com.".parse() {
        Ok(o) => o,
        Err(_) => return 0,
    };
    let Ok(parsed) = lode_zonefile::parse_bytes(data, "fuzz.zone", &origin, Some(3600)) else {
        return 0;
    };
    let n = parsed.records.len();
    let mut b = lode_zonedb::ZoneBuilder::new(origin);
    for (i, r) in parsed.records.into_iter().enumerate() {
        b.add(r, i as u32);
    }
    let _ = b.build();
    n
}
