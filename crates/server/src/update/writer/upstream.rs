//! A transfer taken in, and the secondaries signed here (Knot's signing of
//! a transferred zone): they number their versions themselves, so the
//! primary's serial the served version stands for is kept — marked on the
//! journaled changeset, in the state's tag (`upstream N`) and with the
//! publisher, which the refresh asks (SOA checks, IXFR requests, NOTIFY).
//!
//! ```text
//!  IXFR in ─ follows the primary serial kept? ─▶ stage (one signed changeset, our serial) ─▶ journal (marked)
//!  AXFR in ─ a zone with contents ─▶ stage: its difference, signed ─▶ journal (marked)
//!          ─ nothing served yet ───▶ stage: signed whole (the primary's serial) ─▶ state (tagged)
//! ```

use std::sync::Arc;

use lode_zonedb::{Changeset, Zone};
use lode_zones::Change;

use super::Writer;
use crate::update::WriterError;

impl Writer {
    /// A whole zone transferred in (AXFR): for a secondary signed here
    /// that has contents, its difference as one signed change; otherwise a
    /// new version that starts the history afresh.
    pub(super) fn take_whole(&mut self, zone: Arc<Zone>) -> Result<u32, WriterError> {
        let placeholder = self
            .current()
            .is_none_or(|z| crate::publish::is_placeholder(&z));
        let upstream = Some(zone.serial()).filter(|_| self.signs_transfers);
        if self.signs_transfers && !placeholder {
            return self.run_stage(Change::Transfer(zone), upstream);
        }
        let serial = self.replace(zone, upstream)?;
        if !self.signs_transfers {
            // The primary's zone as it is: its serial is ours again (a
            // signing turned off asked for this transfer).
            self.publisher.forget_upstream(&self.origin);
        }
        Ok(serial)
    }

    pub(super) fn apply_incremental(&mut self, changes: &[Changeset]) -> Result<u32, WriterError> {
        if !self.signs_transfers {
            return self.run_stage(Change::Changesets(changes), None);
        }
        // The primary's changesets must follow the primary serial the
        // served version stands for, and one another.
        let mut at = self.upstream();
        for cs in changes {
            if at != Some(cs.serial_from()) {
                return Err(WriterError::Unfollowed {
                    from: cs.serial_from(),
                    at,
                });
            }
            at = Some(cs.serial_to());
        }
        self.run_stage(Change::Changesets(changes), at)
    }

    /// The primary's serial the served version stands for (a secondary
    /// signed here), kept in the state's tag.
    fn upstream(&self) -> Option<u32> {
        parse_upstream_tag(&self.file_tag)
    }

    /// Notes the primary's serial the served version stands for.
    pub(super) fn set_upstream(&mut self, serial: u32) {
        self.file_tag = upstream_tag(serial);
        self.publisher.set_upstream(&self.origin, Some(serial));
    }
}

/// The state's tag of a secondary signed here: the primary's serial its
/// version stands for (a secondary has no zone file to name).
pub(super) fn upstream_tag(serial: u32) -> Vec<u8> {
    format!("upstream {serial}").into_bytes()
}

/// The primary's serial in a tag made by [`upstream_tag`].
pub(super) fn parse_upstream_tag(tag: &[u8]) -> Option<u32> {
    std::str::from_utf8(tag.strip_prefix(b"upstream ")?)
        .ok()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_primary_serial_survives_the_state_tag_and_nothing_else_reads_as_one() {
        for s in [0, 1, 2026112601, u32::MAX] {
            assert_eq!(parse_upstream_tag(&upstream_tag(s)), Some(s));
        }
        // A zone file's tag, an empty one, a damaged one.
        assert_eq!(
            parse_upstream_tag(b"/etc/lode/zones/example.zone@1700000000"),
            None
        );
        assert_eq!(parse_upstream_tag(b""), None);
        assert_eq!(parse_upstream_tag(b"upstream 12x"), None);
        assert_eq!(parse_upstream_tag(b"upstream 4294967296"), None);
    }
}
