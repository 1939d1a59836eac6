//! Work a zone's writer hands to a thread of its own so that commits,
//! publications and transfers never wait for it (compaction, writing the
//! zone file back), and the zone-file write itself.

use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use std::time::Instant;

use lode_wire::Name;
use lode_zonedb::Zone;

use super::WriterError;
use crate::loading::flush::{Flushed, Written};

/// Work running on a low-priority thread of its own (or already done),
/// polled by the writer's next steps.
pub(super) struct Background<T> {
    result: mpsc::Receiver<T>,
}

impl<T: Send + 'static> Background<T> {
    /// Runs `work` on a thread named `name` at the lowest priority: it runs
    /// when queries and updates leave room.
    pub(super) fn spawn(
        name: String,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> std::io::Result<Background<T>> {
        let (tx, result) = mpsc::channel();
        std::thread::Builder::new().name(name).spawn(move || {
            lode_io::lower_thread_priority(19);
            let _ = tx.send(work());
        })?;
        Ok(Background { result })
    }
    /// Work done already (small enough for the writer's own thread).
    pub(super) fn done(value: T) -> Background<T> {
        let (tx, result) = mpsc::channel();
        let _ = tx.send(value);
        Background { result }
    }
    /// None while it runs; then its result, or None inside when its thread
    /// ended without one (it panicked).
    pub(super) fn poll(&self) -> Option<Option<T>> {
        match self.result.try_recv() {
            Ok(v) => Some(Some(v)),
            Err(mpsc::TryRecvError::Empty) => None,
            Err(mpsc::TryRecvError::Disconnected) => Some(None),
        }
    }
    /// Waits for its result (None: its thread ended without one).
    pub(super) fn wait(self) -> Option<T> {
        self.result.recv().ok()
    }
}

/// Writing one version to the zone file, with what the writer's note of
/// written files needs.
pub(super) struct FileJob {
    pub(super) path: PathBuf,
    pub(super) zone: Arc<Zone>,
    pub(super) flushed: PathBuf,
    pub(super) file_tag: Vec<u8>,
    pub(super) written: Arc<Written>,
    pub(super) origin: Name,
}

/// How a zone-file write went.
pub(super) struct FileDone {
    pub(super) result: Result<Flushed, WriterError>,
    /// The new file's tag (once it is in place).
    pub(super) tag: Option<Vec<u8>>,
    pub(super) took: std::time::Duration,
}

impl FileDone {
    /// A background write that ended without a word (its thread died).
    pub(super) fn lost() -> FileDone {
        FileDone {
            result: Err(WriterError::FileWriterStopped),
            tag: None,
            took: std::time::Duration::ZERO,
        }
    }
}

impl FileJob {
    /// Writes the file; before the rename, the note and the reloader learn
    /// the new file (and keep the one in place): a crash or a reload on
    /// either side of the rename finds a file the writer knows.
    pub(super) fn run(self) -> FileDone {
        let started = Instant::now();
        let mut tag = None;
        let result =
            crate::loading::flush::write_zone_file(&self.path, &self.zone, |stamp, new| {
                crate::loading::flush::write_flushed_tags(
                    &self.flushed,
                    &[self.file_tag.clone(), new.clone()],
                )
                .map_err(|e| std::io::Error::other(format!("{}: {e}", self.flushed.display())))?;
                self.written.add(&self.origin, stamp);
                tag = Some(new);
                Ok(())
            })
            .map_err(WriterError::file(&self.path));
        let took = started.elapsed();
        if let Ok(f) = &result {
            tracing::info!(
                zone = %self.origin,
                serial = f.serial,
                records = f.records,
                file = %self.path.display(),
                "zone {}: zone file written, {} records, serial {}, to {} in {:.1} ms",
                self.origin,
                f.records,
                f.serial,
                self.path.display(),
                took.as_secs_f64() * 1000.0
            );
        }
        FileDone { result, tag, took }
    }
}
