//! The demo zones built into the binary: served when no zone is configured.

use crate::config::{ZoneSource, ZoneSpec};

/// (origin, label, text) of each demo zone.
const DEMO: &[(&str, &str, &str)] = &[
    (
        "1.e164.arpa.",
        "demo/1.e164.arpa.zone",
        include_str!("../../demo/1.e164.arpa.zone"),
    ),
    (
        "example.com.",
        "demo/example.com.zone",
        include_str!("../../demo/example.com.zone"),
    ),
];

/// The demo zones: an ENUM zone for +1 and example.com.
pub fn zones() -> Vec<ZoneSpec> {
    DEMO.iter()
        .filter_map(|(origin, label, text)| {
            Some(ZoneSpec {
                // The origins above are valid constants; a failure would drop the zone, not panic.
                name: origin.parse().ok()?,
                source: ZoneSource::Embedded { label, text },
            })
        })
        .collect()
}
