//! The zones of `tests/data/` (the ones the golden responses were captured
//! from), loaded once per test binary.

use std::path::Path;
use std::sync::Arc;

use lode_engine::ZoneSet;
use lode_wire::Name;
use lode_zonedb::ZoneBuilder;

/// Parses and builds every zone of `tests/data/`; panics naming the zone on any error.
pub fn load_zones() -> ZoneSet {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut set = ZoneSet::new();
    for origin in [
        "example.com.",
        "example.net.",
        "child.example.com.",
        "signed.test.",
        "signed3.example.",
    ] {
        let name: Name = origin.parse().unwrap();
        let file = dir.join(format!("{origin}zone"));
        let text = std::fs::read_to_string(&file).unwrap();
        let parsed = lode_zonefile::parse_str(&text, &file.display().to_string(), &name)
            .unwrap_or_else(|e| panic!("{origin}: {e:?}"));
        let mut b = ZoneBuilder::new(name);
        for (i, r) in parsed.records.into_iter().enumerate() {
            b.add(r, i as u32);
        }
        let (zone, _warnings) = b.build().unwrap_or_else(|e| panic!("{origin}: {e:?}"));
        set.insert(Arc::new(zone));
    }
    set
}
