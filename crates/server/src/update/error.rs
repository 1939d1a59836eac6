//! Why a zone's writer did not do what it was asked, or why the work did
//! not reach it. The lower layers' errors are kept as they are (the
//! stage's refusal with its rcode, the journal's with its file, the commit
//! of a version another one overtook), so that a caller tells them apart by
//! variant; each variant reads as the text the operator always saw.

use std::path::PathBuf;
use std::time::Duration;

use lode_journal::JournalError;
use lode_zonedb::ApplyError;
use lode_zones::StageError;

use super::signing::KeysError;
use crate::publish::commit::CommitError;

/// Why a zone's writer did not do what it was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum WriterError {
    /// No zone of that name has a door (admission's map of zones).
    #[error("no such zone is served")]
    NoSuchZone,
    /// The zone has no writer (it takes no changes, or its journal failed
    /// at start).
    #[error("the zone has no writer")]
    NoWriter,
    /// The writer's queue is closed, or it dropped the reply.
    #[error("the zone's writer stopped")]
    Stopped,
    /// The writer's queue is full (the work is answered at once).
    #[error("busy")]
    Busy,
    /// No version of the zone is published.
    #[error("the zone is not served")]
    NotServed,
    /// A built-in zone: no zone file to write.
    #[error("the zone is built in: it has no zone file")]
    BuiltIn,
    /// Signing work for a zone that has no keys here.
    #[error("the zone is not signed here (no dnssec-signing)")]
    NotSigned,
    /// Signing turned off for a zone that was not signed here.
    #[error("the zone is not signed here")]
    SigningNotOn,
    /// `zone-backup` of a secondary's placeholder or expired version.
    #[error("expired or not transferred yet: nothing to back up")]
    NothingToBackUp,
    /// `zone-restore` of a secondary signed here.
    #[error("a secondary signed here: its primary has its records (`lode zone-retransfer`)")]
    SignedSecondary,
    /// A primary's changeset (IXFR in, a secondary signed here) that does
    /// not start at the primary serial the served version stands for.
    #[error(
        "the changeset from the primary's serial {from} does not follow {}",
        .at.map_or("an unknown serial".into(), |s| format!("serial {s}"))
    )]
    Unfollowed {
        /// The changeset's first serial.
        from: u32,
        /// The primary's serial the served version stands for, if known.
        at: Option<u32>,
    },
    /// At start: the journal's changesets do not continue the version loaded.
    #[error(
        "the journal holds serials {first} to {last} and does not continue the loaded serial {loaded}"
    )]
    JournalGap { first: u32, last: u32, loaded: u32 },
    /// The zone-update stage refused or could not make the change (an
    /// update's refusal carries its rcode).
    #[error(transparent)]
    Stage(#[from] StageError),
    /// The commit failed: state, journal, or another version published
    /// meanwhile.
    #[error(transparent)]
    Commit(#[from] CommitError),
    /// The journal could not be read or trimmed.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The commit log could not make a group durable (its write or
    /// fdatasync failed; the group was taken back out of the journal).
    #[error(transparent)]
    CommitLog(#[from] lode_journal::wal::WalError),
    /// The published version could not be compacted for its state.
    #[error(transparent)]
    Compact(#[from] ApplyError),
    /// A file written or copied by the writer: the zone file, the state
    /// snapshot, the key folder's files.
    #[error("{}: {source}", .path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A background zone-file write ended without a word (its thread died).
    #[error("the zone-file writer stopped")]
    FileWriterStopped,
    /// The key folder or the key planner failed; the event is tried again
    /// after `retry`.
    #[error("{why}; tried again in {} s", .retry.as_secs())]
    Keys {
        #[source]
        why: KeysError,
        retry: Duration,
    },
    /// The key planner refused what was asked (a rollover that cannot start
    /// now, a DS confirmed for no key waiting for it).
    #[error("{0}")]
    KeysRefused(String),
    /// A zone file's difference refused by the stage (its rcode).
    #[error("not applied ({})", lode_wire::rcode::name(*.0))]
    NotApplied(u16),
    /// The group the work was in did not commit (the journal write failed):
    /// what was not done.
    #[error("{0}")]
    NotCommitted(&'static str),
}

impl WriterError {
    /// A file's I/O error, with the file.
    pub(crate) fn file(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> WriterError {
        let path = path.into();
        move |source| WriterError::File { path, source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_as_the_texts_operators_see() {
        let e = WriterError::Unfollowed { from: 7, at: None };
        assert_eq!(
            e.to_string(),
            "the changeset from the primary's serial 7 does not follow an unknown serial"
        );
        let e = WriterError::Unfollowed {
            from: 7,
            at: Some(5),
        };
        assert_eq!(
            e.to_string(),
            "the changeset from the primary's serial 7 does not follow serial 5"
        );
        let e = WriterError::Keys {
            why: KeysError::NoResponse(0),
            retry: Duration::from_secs(60),
        };
        assert_eq!(
            e.to_string(),
            "offline KSK: no signed key response covers 1970-01-01 00:00:00 UTC (import one: \
             lode dnssec generate-ksr, sign it with the KSK, lode dnssec import-skr); \
             tried again in 60 s"
        );
        let e = WriterError::NotApplied(lode_wire::rcode::REFUSED);
        assert_eq!(e.to_string(), "not applied (REFUSED)");
        let e = WriterError::file("/z/example.state")(std::io::Error::other("disk full"));
        assert_eq!(e.to_string(), "/z/example.state: disk full");
        assert!(std::error::Error::source(&e).is_some());
        let e = WriterError::JournalGap {
            first: 1,
            last: 4,
            loaded: 9,
        };
        assert_eq!(
            e.to_string(),
            "the journal holds serials 1 to 4 and does not continue the loaded serial 9"
        );
    }
}
