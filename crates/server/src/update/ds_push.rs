//! `ds-push` (Knot DNS's): a signed zone's DS set sent to its parent's
//! primary by RFC 2136 UPDATE, so that a KSK rollover (or a first signing)
//! needs no one to carry the DS to the parent.
//!
//! When the apex's CDS RRset changes (a KSK became ready: its CDS is
//! published), the writer waits `propagation-delay` and then, on a thread
//! of its own, for each `ds-push` remote (its addresses in turn until one
//! takes it):
//!
//! ```text
//!  SOA query for the zone's parent, its parent, … until one is answered
//!      with an SOA in the answer section: the parent zone's apex
//!  UPDATE zone=<parent apex> IN SOA
//!      delete: <zone> ANY DS                 every DS the parent has for it
//!      add:    <zone> <DNSKEY TTL> IN DS …   the CDS records, as DS
//!      (the "delete DNSSEC" CDS, RFC 8078: the delete alone)
//!      TSIG-signed with the remote's key; NOERROR is success
//! ```
//!
//! A push that fails is tried again every [`RETRY`] (Knot's 600 s) until
//! one is taken. With `ksk-submission`, the parent's servers then serve the
//! DS and the KSK becomes active as if `zone-ksk-submitted` had been run.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lode_wire::{Class, Name, Record, Rtype};
use lode_zonedb::Zone;

use crate::fetch::{FetchError, Source};

/// How long after a failed push it is tried again (Knot's `DS_PUSH_RETRY`;
/// decided in the control core).
use lode_control::parent::RETRY;
/// How long one query or UPDATE may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Threads asking or telling parents (DS checks and pushes) at once, all
/// zones together: 10^5 zones whose first KSKs become ready together wait
/// their turn (a second each) instead of starting 10^5 threads.
const MAX_PARENT_THREADS: usize = 16;

/// A place among the [`MAX_PARENT_THREADS`] of one server's count (its
/// writers' `Shared`), given back when dropped (the thread it moved into
/// ended).
pub(crate) struct ParentSlot(std::sync::Arc<AtomicUsize>);

impl ParentSlot {
    /// A place, if one of `threads` is free.
    pub(crate) fn take(threads: &std::sync::Arc<AtomicUsize>) -> Option<ParentSlot> {
        threads
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_PARENT_THREADS).then_some(n + 1)
            })
            .ok()
            .map(|_| ParentSlot(threads.clone()))
    }
}

impl Drop for ParentSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A signed zone's parent's servers.
#[derive(Debug, Clone, Default)]
pub(crate) struct Parents {
    /// Asked for a ready KSK's DS (`ksk-submission`), each address.
    pub(crate) asked: Vec<Source>,
    /// Sent the DS set (`ds-push`): each remote's addresses, tried in turn.
    pub(crate) pushed: Vec<Vec<Source>>,
}

/// The RDATAs of the apex's CDS RRset (empty when there is none).
pub(crate) fn cds_of(zone: &Zone) -> Vec<Vec<u8>> {
    zone.apex_rrset(Rtype::CDS)
        .map(|s| s.rdatas().map(<[u8]>::to_vec).collect())
        .unwrap_or_default()
}

/// Pushes `zone`'s DS set (`cds`, as DS records of TTL `ttl`) to every
/// remote of `pushed`; true when each took it (the outcome logged).
pub(crate) fn push(zone: &Name, pushed: &[Vec<Source>], cds: &[Vec<u8>], ttl: u32) -> bool {
    let mut all = true;
    for addresses in pushed {
        let mut taken = false;
        for src in addresses {
            match push_to(src, zone, cds, ttl) {
                Ok(parent) => {
                    tracing::info!(
                        "zone {zone}: DNSSEC, DS push to {} (zone {parent}): success, {} DS",
                        src.addr,
                        if is_delete(cds) { 0 } else { cds.len() }
                    );
                    taken = true;
                    break;
                }
                Err(e) => tracing::warn!("zone {zone}: DNSSEC, {e}"),
            }
        }
        all &= taken;
    }
    if !all {
        tracing::warn!(
            "zone {zone}: DNSSEC, DS push not taken; tried again in {} s",
            RETRY.as_secs()
        );
    }
    all
}

/// The "delete DNSSEC" CDS (RFC 8078 §4: algorithm 0, digest 0x00).
fn is_delete(cds: &[Vec<u8>]) -> bool {
    cds.len() == 1 && cds[0] == [0, 0, 0, 0, 0]
}

/// One push to one address: the parent zone's apex, or why it failed.
fn push_to(src: &Source, zone: &Name, cds: &[Vec<u8>], ttl: u32) -> Result<Name, PushError> {
    let parent = parent_apex(src, zone)?;
    let mut updates = vec![Record {
        owner: zone.clone(),
        class: Class::ANY,
        rtype: Rtype::DS,
        ttl: 0,
        rdata: Box::default(),
    }];
    if !is_delete(cds) {
        updates.extend(cds.iter().map(|r| Record {
            owner: zone.clone(),
            class: Class::IN,
            rtype: Rtype::DS,
            ttl,
            rdata: r.clone().into_boxed_slice(),
        }));
    }
    let write = |buf: &mut [u8], id: u16| {
        let msg = lode_zones::update::encode_update(id, &parent, &[], &updates);
        match buf.get_mut(..msg.len()) {
            Some(b) => {
                b.copy_from_slice(&msg);
                msg.len()
            }
            None => 0,
        }
    };
    crate::fetch::send_update(src, write, TIMEOUT)?;
    Ok(parent)
}

/// Why a DS push to one address was not taken.
#[derive(Debug, thiserror::Error)]
enum PushError {
    /// No ancestor of the zone answered its SOA there: the last failure.
    #[error(
        "DS push to {peer}: no parent zone of {zone} found there ({})",
        .last.as_ref().map_or(String::new(), ToString::to_string)
    )]
    NoParent {
        peer: std::net::SocketAddr,
        zone: Box<Name>,
        #[source]
        last: Option<FetchError>,
    },
    /// The UPDATE failed (the parent's address and the cause).
    #[error(transparent)]
    Update(#[from] FetchError),
}

/// The apex of the zone above `zone` at `src`: its nearest ancestor whose
/// SOA `src` answers (Knot asks the same way).
fn parent_apex(src: &Source, zone: &Name) -> Result<Name, PushError> {
    let mut name = zone.as_ref().parent();
    let mut last = None;
    while let Some(n) = name {
        let owner = n.to_name();
        match crate::fetch::query_soa(src, &owner, TIMEOUT) {
            Ok(_) => return Ok(owner),
            Err(e) => last = Some(e),
        }
        name = n.parent();
    }
    Err(PushError::NoParent {
        peer: src.addr,
        zone: Box::new(zone.clone()),
        last,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_threads_are_bounded() {
        let threads = std::sync::Arc::new(AtomicUsize::new(0));
        let mut held = Vec::new();
        while let Some(s) = ParentSlot::take(&threads) {
            held.push(s);
            assert!(held.len() <= MAX_PARENT_THREADS);
        }
        assert_eq!(held.len(), MAX_PARENT_THREADS);
        assert!(ParentSlot::take(&threads).is_none());
        held.pop();
        assert!(
            ParentSlot::take(&threads).is_some(),
            "a place given back is taken again"
        );
        let other = std::sync::Arc::new(AtomicUsize::new(0));
        assert!(ParentSlot::take(&other).is_some(), "another server's count");
    }

    #[test]
    fn delete_cds_deletes_alone() {
        assert!(is_delete(&[vec![0, 0, 0, 0, 0]]));
        assert!(!is_delete(&[vec![0x12, 0x34, 13, 2, 0xab]]));
        assert!(!is_delete(&[]));
    }
}
