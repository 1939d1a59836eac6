//! Whether a NOTIFY's (or a primary's SOA's) serial asks a secondary for
//! anything (RFC 1996 §3.7, RFC 1982).

use lode_wire::serial::SerialOrder;

/// What a NOTIFY (or a primary's SOA) with serial `theirs` asks of a
/// secondary serving `ours`. Only the same serial is nothing to do (RFC
/// 1996 §3.7: an answer equal to the local data); an older one still
/// leads to an SOA query, the primary's serial may have gone backwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NotifyAsks {
    Nothing,
    Refresh,
    Older,
}

pub(super) fn notify_asks(theirs: u32, ours: u32) -> NotifyAsks {
    match lode_wire::serial::serial_cmp(theirs, ours) {
        SerialOrder::Equal => NotifyAsks::Nothing,
        SerialOrder::Greater => NotifyAsks::Refresh,
        // Lower, or exactly half the serial space away (RFC 1982: neither
        // is newer): not ours to follow without asking.
        _ => NotifyAsks::Older,
    }
}

#[cfg(test)]
mod tests {
    use super::{notify_asks, NotifyAsks};

    #[test]
    fn only_the_same_serial_is_nothing_to_do() {
        assert_eq!(notify_asks(7, 7), NotifyAsks::Nothing);
        assert_eq!(notify_asks(8, 7), NotifyAsks::Refresh);
        // Past the wrap (RFC 1982): 1 follows 4294967295.
        assert_eq!(notify_asks(1, u32::MAX), NotifyAsks::Refresh);
        assert_eq!(notify_asks(6, 7), NotifyAsks::Older);
        assert_eq!(notify_asks(u32::MAX, 1), NotifyAsks::Older);
        assert_eq!(notify_asks(0x8000_0007, 7), NotifyAsks::Older);
    }
}
