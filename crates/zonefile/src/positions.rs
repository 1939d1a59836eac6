//! Where each record of a zone being read was written, kept for as long as
//! the zone is built (its problems name `file:line`), compactly: a record's
//! line as its distance from the previous record's (one byte for most),
//! with the line and place of every 64th record to find one quickly, and
//! the file of each run of records. About 1.1 bytes a record where a line
//! number is 4 and a [`SourcePos`] 24: at 390 M records (a 160 M-delegation
//! TLD), 440 MB rather than 1.6 GB held through the load.

use std::path::Path;
use std::sync::Arc;

use crate::{PosRef, SourcePos};

/// Records between two marks.
const MARK_EVERY: usize = 64;

/// Where each record of a zone being read was written (see the module's
/// notes); record `i`'s position is asked for by its index, the builder's
/// tag.
#[derive(Debug, Default)]
pub struct Positions {
    /// Each record's line less the previous record's, zigzag varints.
    steps: Vec<u8>,
    /// For records 0, 64, 128, …: the line before it and where its step
    /// starts in `steps`.
    marks: Vec<(u32, u32)>,
    /// Records noted.
    count: usize,
    /// The last record's line.
    last: u32,
    files: FileRuns,
}

/// The file of each run of records read from one file: (first record,
/// file), a new run when a record's file is not the previous one's.
#[derive(Debug, Default)]
pub(crate) struct FileRuns(Vec<(usize, Arc<Path>)>);

impl FileRuns {
    /// Notes that record `i` (after those noted) comes from `file`.
    pub(crate) fn note(&mut self, i: usize, file: &Arc<Path>) {
        if self.0.last().is_none_or(|(_, f)| !Arc::ptr_eq(f, file)) {
            self.0.push((i, file.clone()));
        }
    }

    /// The file of record `i`.
    pub(crate) fn of(&self, i: usize) -> Option<&Arc<Path>> {
        let run = self.0.partition_point(|(first, _)| *first <= i);
        self.0.get(run.checked_sub(1)?).map(|(_, f)| f)
    }

    /// The runs' files, in order.
    pub(crate) fn files(&self) -> impl Iterator<Item = &Arc<Path>> {
        self.0.iter().map(|(_, f)| f)
    }

    /// Forgets every run.
    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }
}

impl Positions {
    /// Notes the next record's position; its index (the builder's tag).
    pub fn push(&mut self, p: PosRef<'_>) -> u32 {
        let i = self.count;
        self.files.note(i, p.file);
        if i.is_multiple_of(MARK_EVERY) {
            self.marks.push((self.last, self.steps.len() as u32));
        }
        let step = i64::from(p.line) - i64::from(self.last);
        let mut zigzag = ((step << 1) ^ (step >> 63)) as u64;
        while zigzag >= 0x80 {
            self.steps.push(zigzag as u8 | 0x80);
            zigzag >>= 7;
        }
        self.steps.push(zigzag as u8);
        self.last = p.line;
        self.count += 1;
        i as u32
    }

    /// Where record `i` was written.
    pub fn get(&self, i: usize) -> Option<SourcePos> {
        if i >= self.count {
            return None;
        }
        let &(mut line, at) = self.marks.get(i / MARK_EVERY)?;
        let mut steps = self.steps.get(at as usize..)?.iter();
        for _ in 0..=i % MARK_EVERY {
            let (mut zigzag, mut shift) = (0u64, 0);
            for &b in steps.by_ref() {
                zigzag |= u64::from(b & 0x7F) << shift;
                shift += 7;
                if b < 0x80 {
                    break;
                }
            }
            let step = (zigzag >> 1) as i64 ^ -((zigzag & 1) as i64);
            line = (i64::from(line) + step) as u32;
        }
        Some(SourcePos {
            file: self.files.of(i)?.clone(),
            line,
        })
    }

    /// The files read, in order of first appearance (a file included
    /// twice, or read again after an include, comes again).
    pub fn files(&self) -> impl Iterator<Item = &Arc<Path>> {
        self.files.files()
    }

    /// Records noted.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether none is noted.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_records_line_and_file_comes_back() {
        let (a, b): (Arc<Path>, Arc<Path>) = (
            Arc::from(Path::new("a.zone")),
            Arc::from(Path::new("b.zone")),
        );
        // Lines one apart, several on one line, far apart, back to the
        // start (an include's end), the largest.
        let mut written = Vec::new();
        let mut line = 1u32;
        for i in 0..1000u32 {
            line = match i % 97 {
                0 => 1,
                13 => line + 100_000,
                50 => u32::MAX,
                51 => 7,
                n if n % 3 == 0 => line,
                _ => line + 1,
            };
            let file = if (i / 150) % 2 == 0 { &a } else { &b };
            written.push((file.clone(), line));
        }
        let mut p = Positions::default();
        for (i, (file, line)) in written.iter().enumerate() {
            let at = PosRef { file, line: *line };
            assert_eq!(p.push(at), i as u32);
        }
        assert_eq!(p.len(), written.len());
        for (i, (file, line)) in written.iter().enumerate() {
            let got = p.get(i).unwrap_or_else(|| panic!("record {i}"));
            assert_eq!(got.line, *line, "record {i}");
            assert!(Arc::ptr_eq(&got.file, file), "record {i}");
        }
        assert_eq!(p.get(written.len()), None);
        assert_eq!(p.files().count(), 7, "one entry a run of one file");
        // Mostly a byte a record.
        assert!(p.steps.len() < 2 * written.len(), "{}", p.steps.len());
    }
}
