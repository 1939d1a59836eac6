//! The body shared by the fuzz target (fuzz/fuzz_targets/update.rs) and the
//! deterministic smoke test (apps/lode/tests/fuzz_smoke.rs): an UPDATE
//! (RFC 2136) on arbitrary bytes through `parse_update`, `process` against a
//! small zone and `apply_rebuild`, checking what must hold for any input:
//!
//! - no panic;
//! - a parse error is answered (or dropped) with a reply that echoes the ID,
//!   sets QR and carries the error's RCODE, within the buffer;
//! - `process` is deterministic and its errors all have an RCODE;
//! - a changeset starts at the zone's serial, moves it forward, and applies
//!   (`apply_rebuild`) to a zone with the new serial — a changeset that does
//!   not apply would be answered SERVFAIL by the server's writer;
//! - the updated zone takes the same update again without a panic.
#![allow(dead_code)]

use lode_wire::Name;
use lode_zonedb::{Zone, ZoneBuilder};
use lode_zones::update::{
    parse_update, process, write_error, write_response, SerialPolicy, UpdateError,
};

/// The zone every input is applied to.
pub const ZONE_TEXT: &str = "$ORIGIN example.com.
$TTL 300
@ SOA ns hostmaster 2024010101 3600 600 86400 300
@ NS ns
@ NS ns.other.net.
@ MX 10 mail
@ TXT \"v=spf1 -all\"
ns A 192.0.2.1
ns AAAA 2001:db8::1
mail A 192.0.2.25
www A 192.0.2.80
www A 192.0.2.81
alias CNAME www
*.wild TXT \"wildcard\"
sub NS ns.sub
ns.sub A 192.0.2.53
dn DNAME example.net.
srv._tcp SRV 0 5 443 www
";

/// The origin of [`ZONE_TEXT`].
pub fn origin() -> Name {
    "example.com.".parse().expect("origin")
}

/// Builds the zone of [`ZONE_TEXT`].
pub fn zone() -> Zone {
    let origin = origin();
    let parsed = lode_zonefile::parse_str(ZONE_TEXT, "update-fuzz.zone", &origin)
        .unwrap_or_else(|e| panic!("fuzz zone: {} errors", e.len()));
    let mut b = ZoneBuilder::new(origin);
    for (i, r) in parsed.records.into_iter().enumerate() {
        b.add(r, i as u32);
    }
    match b.build() {
        Ok((z, _)) => z,
        Err(p) => panic!("fuzz zone: {p:?}"),
    }
}

/// A fixed clock, so that runs repeat.
const NOW: u64 = 1_700_000_000;

/// Runs one input; returns the RCODE it would be answered with (None when
/// dropped), or what went wrong.
pub fn check(zone: &Zone, data: &[u8], out: &mut [u8]) -> Result<Option<u16>, String> {
    let req = match parse_update(data) {
        Ok(r) => r,
        Err(e) => return check_error_reply(data, &e, out),
    };
    // The reply writer takes any RCODE and any request.
    let n = write_response(data, 0, out);
    if n > out.len() || (n > 0 && (out[0..2] != data[0..2] || out[2] & 0x80 == 0)) {
        return Err("write_response: bad reply header".into());
    }
    let mut code = None;
    for policy in [SerialPolicy::Increment, SerialPolicy::UnixTime] {
        let first = process(zone, &req, policy, NOW);
        let again = process(zone, &req, policy, NOW);
        if first != again {
            return Err(format!("process is not deterministic ({policy:?})"));
        }
        match first {
            Err(e) => {
                let Some(rc) = e.rcode() else {
                    return Err(format!("process dropped the update: {e}"));
                };
                code.get_or_insert(rc);
            }
            Ok(None) => {
                code.get_or_insert(0);
            }
            Ok(Some(cs)) => {
                code.get_or_insert(0);
                if cs.serial_from() != zone.serial() {
                    return Err(format!(
                        "changeset from serial {} on a zone at {}",
                        cs.serial_from(),
                        zone.serial()
                    ));
                }
                if cs.serial_to() == cs.serial_from() {
                    return Err("changeset does not move the serial".into());
                }
                let next = zone
                    .apply_rebuild(&cs)
                    .map_err(|e| format!("changeset does not apply ({policy:?}): {e:?}"))?;
                if next.serial() != cs.serial_to() {
                    return Err(format!(
                        "applied zone at serial {}, changeset says {}",
                        next.serial(),
                        cs.serial_to()
                    ));
                }
                // The same update on the new version: it must not panic, and
                // what it changes must apply too.
                if let Ok(Some(cs2)) = process(&next, &req, policy, NOW) {
                    next.apply_rebuild(&cs2)
                        .map_err(|e| format!("second changeset does not apply: {e:?}"))?;
                }
            }
        }
    }
    Ok(code)
}

/// The reply to a message that does not parse.
fn check_error_reply(data: &[u8], e: &UpdateError, out: &mut [u8]) -> Result<Option<u16>, String> {
    let Some(n) = write_error(data, e, 1232, out) else {
        if e.rcode().is_some() {
            return Err(format!("{e}: answered, but write_error gave nothing"));
        }
        return Ok(None);
    };
    let rc = e.rcode().ok_or("write_error answered a dropped message")?;
    if n == 0 {
        return Ok(Some(rc));
    }
    if n > out.len() || n < 12 {
        return Err(format!("{e}: reply of {n} octets"));
    }
    if out[0..2] != data[0..2] || out[2] & 0x80 == 0 {
        return Err(format!("{e}: reply without the ID or QR"));
    }
    if u16::from(out[3] & 15) != rc & 15 {
        return Err(format!("{e}: reply RCODE {} for {rc}", out[3] & 15));
    }
    Ok(Some(rc))
}
