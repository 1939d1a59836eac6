//! The one commit: every new version of a zone, whatever made it (an
//! UPDATE group, a zone file, IXFR or AXFR in, the journal at start,
//! re-signing, a key event, a compaction, a static zone reloaded, a
//! secondary's expiry), is published here, after the journal step its
//! history calls for, and only over the version its transaction began
//! from.
//!
//! ```text
//!  Sealed (lode-zones: base, version, history)
//!     ─▶ journal   Continues: append (synced here, or deferred to the commit log)
//!                  Restarts:  history cleared first
//!                  Unchanged: nothing (the same records laid out anew, or marked)
//!     ─▶ publish   one swap of the zone's slot, refused when another version
//!                  was published since the base (nothing lost: a stale commit
//!                  is an error, never a silent overwrite)
//!     ─▶ watchers  told of a new serial (NOTIFY out)
//! ```
//!
//! A zone's state snapshot (before its first change) and the replies to
//! the requests it answers are the writer's, around this
//! (`update/writer/commit.rs`).

use std::fmt;
use std::sync::Arc;

use lode_journal::{Deferred, Journal, JournalError};
use lode_zones::{History, Sealed};

use super::Publisher;

/// How a sealed transaction's history reaches the journal before it is
/// published.
pub(crate) enum Journaling<'a> {
    /// No journal: a zone that keeps none (a static zone: its file is its
    /// history), or a version whose records did not change.
    None,
    /// On stable storage already: a group the commit log has synced.
    Durable,
    /// The journal replayed at start (on stable storage already): the
    /// version replaces whatever was served before the writer took the
    /// zone over, whatever it began from.
    Recovered,
    /// Appended and synced here; `upstream`: the primary's serial the
    /// last changeset brings a zone signed here to (marked with it).
    Append {
        /// The zone's journal.
        journal: &'a mut Journal,
        /// The primary's serial, for a secondary signed here.
        upstream: Option<u32>,
    },
    /// Appended without the sync: the commit log shared by all zones makes
    /// it durable; published by a second commit (`Durable`) once it has.
    Deferred {
        /// The zone's journal.
        journal: &'a mut Journal,
    },
    /// A whole new version: the history before it is cleared first (a
    /// crash after this serves the old state, never the old history on a
    /// new base).
    Restart {
        /// The zone's journal.
        journal: &'a mut Journal,
    },
}

/// What a commit did.
#[derive(Debug)]
pub(crate) enum Committed {
    /// Nothing changed: nothing journaled nor published.
    Unchanged,
    /// The version is published.
    Published,
    /// Written to the journal, waiting for the commit log: not published.
    Deferred(Deferred),
}

/// Why a commit published nothing.
#[derive(Debug)]
pub(crate) enum CommitError {
    /// The zone's state snapshot, written before its first change or
    /// after a whole version, could not be written (the writer's error).
    State(Box<dyn std::error::Error + Send + Sync>),
    /// The journal step failed.
    Journal(JournalError),
    /// Another version was published since the transaction began: its
    /// serial (the transaction is to be made again over it).
    Moved(u32),
    /// The journal step given does not fit the history (a fault of the
    /// caller's: nothing is written).
    Mismatch(&'static str),
}

impl fmt::Display for CommitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommitError::State(e) => write!(f, "cannot write its state ({e})"),
            CommitError::Journal(e) => write!(f, "journal write failed: {e}"),
            CommitError::Moved(serial) => {
                write!(f, "serial {serial} was published while the change was made")
            }
            CommitError::Mismatch(what) => write!(f, "not committed: {what}"),
        }
    }
}

impl std::error::Error for CommitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CommitError::State(e) => Some(&**e),
            CommitError::Journal(e) => Some(e),
            CommitError::Moved(_) | CommitError::Mismatch(_) => None,
        }
    }
}

impl CommitError {
    /// The state snapshot not written, for `e`.
    pub(crate) fn state(e: impl std::error::Error + Send + Sync + 'static) -> CommitError {
        CommitError::State(Box::new(e))
    }
}

/// Commits `sealed`: its journal step, then its publication (see the
/// module's note).
pub(crate) fn commit(
    publisher: &Publisher,
    sealed: &Sealed,
    journaling: Journaling<'_>,
) -> Result<Committed, CommitError> {
    let recovered = matches!(journaling, Journaling::Recovered);
    if sealed.is_unchanged() && !recovered {
        return Ok(Committed::Unchanged);
    }
    // Nothing is journaled for a transaction whose base is no longer
    // served (checked again as it is published).
    let over = (!recovered).then_some(&sealed.base);
    if let (Some(over), Some(now)) = (over, publisher.set.load().get(sealed.base.origin())) {
        if !Arc::ptr_eq(over, &now) {
            return Err(CommitError::Moved(now.serial()));
        }
    }
    match (&sealed.history, journaling) {
        (History::Continues(changes), Journaling::Append { journal, upstream }) => journal
            .append_marked(changes, upstream)
            .map_err(CommitError::Journal)?,
        (History::Continues(changes), Journaling::Deferred { journal }) => {
            if let Some(d) = journal
                .append_deferred(changes, None)
                .map_err(CommitError::Journal)?
            {
                return Ok(Committed::Deferred(d));
            }
        }
        (History::Continues(_), Journaling::Durable | Journaling::Recovered) => {}
        (History::Restarts, Journaling::Restart { journal }) => {
            journal.clear().map_err(CommitError::Journal)?
        }
        // A zone with no journal (static) takes whole versions only.
        (History::Restarts, Journaling::None) => {}
        (History::Unchanged, _) => {}
        (History::Continues(_), _) => return Err(CommitError::Mismatch("changes not journaled")),
        (History::Restarts, _) => {
            return Err(CommitError::Mismatch(
                "a whole version appended to its history",
            ))
        }
    }
    publisher
        .publish_over(over, sealed.version.clone())
        .map_err(|now| CommitError::Moved(now.serial()))?;
    Ok(Committed::Published)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arc_swap::ArcSwap;
    use lode_journal::Journal;
    use lode_wire::Name;
    use lode_zonedb::{Zone, ZoneBuilder, ZoneSet};
    use lode_zones::{Change, Stage};

    use super::*;

    fn zone(serial: u32, extra: &str) -> Arc<Zone> {
        let origin: Name = "c.test.".parse().unwrap();
        let text = format!(
            "$TTL 300\n@ SOA ns host {serial} 60 60 600 60\n@ NS ns\nns A 192.0.2.1\n{extra}"
        );
        let parsed = lode_zonefile::parse_str(&text, "test", &origin).unwrap();
        let mut b = ZoneBuilder::new(origin);
        for r in parsed.records {
            b.add(r, 0);
        }
        Arc::new(b.build().unwrap().0)
    }

    fn journal(tag: &str) -> Journal {
        let dir = std::env::temp_dir().join(format!("lode-commit-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let origin: Name = "c.test.".parse().unwrap();
        Journal::open(dir.join("c.journal"), &origin, Default::default())
            .unwrap()
            .0
    }

    fn served(publisher: &Publisher) -> Arc<Zone> {
        publisher.get(&"c.test.".parse().unwrap()).unwrap()
    }

    /// Each history with its journal step: changes appended before they
    /// are served, a whole version after the history is cleared, a stale
    /// transaction or a step that does not fit refused with nothing
    /// written and the served version kept.
    #[test]
    fn the_journal_step_comes_first_and_a_stale_base_publishes_nothing() {
        let publisher = Publisher::new(Arc::new(ArcSwap::from_pointee(ZoneSet::new())));
        let mut journal = journal("steps");
        let v10 = zone(10, "");
        let stage = Stage::default();
        let first = stage.run(&v10, Change::Journal(&[]), 0).unwrap();
        commit(&publisher, &first, Journaling::Recovered).unwrap();
        assert!(Arc::ptr_eq(&served(&publisher), &v10));

        // A change: journaled, then served.
        let sealed = stage
            .run(&v10, Change::Difference(&zone(11, "www A 192.0.2.80\n")), 0)
            .unwrap();
        let step = Journaling::Append {
            journal: &mut journal,
            upstream: None,
        };
        assert!(matches!(
            commit(&publisher, &sealed, step),
            Ok(Committed::Published)
        ));
        assert_eq!(served(&publisher).serial(), 11);
        assert_eq!(journal.last_serial(), Some(11));

        // A transaction begun before it (over serial 10) is stale now.
        let stale = stage
            .run(&v10, Change::Difference(&zone(12, "ftp A 192.0.2.21\n")), 0)
            .unwrap();
        let step = Journaling::Append {
            journal: &mut journal,
            upstream: None,
        };
        assert!(matches!(
            commit(&publisher, &stale, step),
            Err(CommitError::Moved(11))
        ));
        assert_eq!(served(&publisher).serial(), 11);
        assert_eq!(journal.last_serial(), Some(11), "nothing journaled");

        // Changes with no journal: refused, nothing served.
        let v11 = served(&publisher);
        let unjournaled = stage
            .run(&v11, Change::Difference(&zone(12, "ftp A 192.0.2.21\n")), 0)
            .unwrap();
        assert!(matches!(
            commit(&publisher, &unjournaled, Journaling::None),
            Err(CommitError::Mismatch(_))
        ));
        assert_eq!(served(&publisher).serial(), 11);
        assert_eq!(journal.last_serial(), Some(11));

        // A whole new version: the history cleared, then served.
        let whole = stage.run(&v11, Change::Replace(zone(20, "")), 0).unwrap();
        let step = Journaling::Restart {
            journal: &mut journal,
        };
        assert!(matches!(
            commit(&publisher, &whole, step),
            Ok(Committed::Published)
        ));
        assert_eq!(served(&publisher).serial(), 20);
        assert_eq!(journal.last_serial(), None);

        // A mark: the same records, no journal step, served.
        let v20 = served(&publisher);
        let marked = stage.run(&v20, Change::Expired(true), 0).unwrap();
        assert!(!marked.is_unchanged());
        commit(&publisher, &marked, Journaling::None).unwrap();
        assert!(served(&publisher).is_expired());
        // The same mark again: nothing to publish.
        let again = stage
            .run(&served(&publisher), Change::Expired(true), 0)
            .unwrap();
        assert!(matches!(
            commit(&publisher, &again, Journaling::None),
            Ok(Committed::Unchanged)
        ));
    }
}
