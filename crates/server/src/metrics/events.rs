//! Counters of rare events (update batches, transfers, NOTIFY): plain
//! atomics owned by one server (two servers in one process count apart),
//! bumped once per batch or transfer, never per query.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{Family, Kind, Value};

/// One event counter.
#[derive(Debug, Default)]
pub struct Event(AtomicU64);

impl Event {
    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    /// Adds one.
    pub fn bump(&self) {
        self.add(1);
    }
    /// The count now.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A server's event counters: made once at its start and shared by the
/// parts that count (admission, writers, transfers, NOTIFY, refresh) and
/// the scrape that reads them.
#[derive(Debug, Default)]
pub struct Events {
    /// UPDATE messages refused before reaching a zone's writer (zone, TSIG, ACL).
    pub updates_refused: Event,
    /// UPDATE messages applied (NOERROR after the journal's fdatasync).
    pub updates_applied: Event,
    /// UPDATE messages answered with an error by the writer (prerequisites, bad records).
    pub updates_failed: Event,
    /// Groups of updates written to a journal with one fdatasync.
    pub journal_commits: Event,
    /// AXFR answered (transfers out).
    pub axfr_out: Event,
    /// IXFR answered (transfers out, incremental or falling back to AXFR).
    pub ixfr_out: Event,
    /// Transfer requests refused (ACL, TSIG, unknown zone).
    pub transfers_out_refused: Event,
    /// Transfers in (a secondary's AXFR or IXFR) that were applied.
    pub transfers_in: Event,
    /// Transfers in that failed.
    pub transfers_in_failed: Event,
    /// NOTIFY messages received and accepted.
    pub notify_received: Event,
    /// NOTIFY messages refused.
    pub notify_refused: Event,
    /// NOTIFY messages sent and acknowledged.
    pub notify_sent: Event,
    /// NOTIFY messages that got no acknowledgement after every retry.
    pub notify_failed: Event,
    /// Changes not notified at once to a secondary that was still taking
    /// the previous one (sent when it serves it: the pacing of notify.rs).
    pub notify_held: Event,
    /// RRSIGs made by the signers of the server's zones (each signer counts
    /// into it: `lode_dnssec::Signer::counting_into`).
    pub signatures: std::sync::Arc<lode_dnssec::SignatureCount>,
}

/// The families of `e`; `commit_log_syncs`: the fdatasyncs of the
/// server's commit log (its own count, `lode_journal::wal::CommitLog::syncs`).
pub(crate) fn families(out: &mut Vec<Family>, e: &Events, commit_log_syncs: u64) {
    let v = |e: &Event| Value::Int(e.get());
    out.push(
        Family::new(
            "lode_updates",
            "RFC 2136 UPDATE messages, by result (applied after fdatasync; failed: an error RCODE from the zone; refused: zone, TSIG or ACL).",
            Kind::Counter,
        )
        .with(&[("result", "applied")], v(&e.updates_applied))
        .with(&[("result", "failed")], v(&e.updates_failed))
        .with(&[("result", "refused")], v(&e.updates_refused)),
    );
    out.push(
        Family::new(
            "lode_dnssec_signatures",
            "RRSIGs made for the zones Lode signs (whole zones, changes, signatures made again before they expire).",
            Kind::Counter,
        )
        .with(&[], Value::Int(e.signatures.get())),
    );
    out.push(
        Family::new(
            "lode_journal_commits",
            "Groups of updates to one zone made durable (journaled, then synced on their own or by the commit log).",
            Kind::Counter,
        )
        .with(&[], v(&e.journal_commits)),
    );
    out.push(
        Family::new(
            "lode_commit_log_syncs",
            "fdatasyncs of the commit log shared by all zones' journals (each makes the groups written meanwhile durable, whatever their zones).",
            Kind::Counter,
        )
        .with(&[], Value::Int(commit_log_syncs)),
    );
    out.push(
        Family::new(
            "lode_transfers_out",
            "Zone transfers served, by type, and refused requests.",
            Kind::Counter,
        )
        .with(&[("type", "axfr")], v(&e.axfr_out))
        .with(&[("type", "ixfr")], v(&e.ixfr_out))
        .with(&[("type", "refused")], v(&e.transfers_out_refused)),
    );
    out.push(
        Family::new(
            "lode_transfers_in",
            "Zone transfers of secondary zones, by result.",
            Kind::Counter,
        )
        .with(&[("result", "applied")], v(&e.transfers_in))
        .with(&[("result", "failed")], v(&e.transfers_in_failed)),
    );
    out.push(
        Family::new(
            "lode_notify",
            "NOTIFY messages, by direction and result.",
            Kind::Counter,
        )
        .with(
            &[("direction", "in"), ("result", "accepted")],
            v(&e.notify_received),
        )
        .with(
            &[("direction", "in"), ("result", "refused")],
            v(&e.notify_refused),
        )
        .with(
            &[("direction", "out"), ("result", "acknowledged")],
            v(&e.notify_sent),
        )
        .with(
            &[("direction", "out"), ("result", "failed")],
            v(&e.notify_failed),
        )
        .with(
            &[("direction", "out"), ("result", "held")],
            v(&e.notify_held),
        ),
    );
}
