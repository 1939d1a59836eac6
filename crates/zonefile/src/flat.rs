//! Records as the reader keeps them: back to back in one buffer (owner,
//! type, class, TTL, RDATA), with their lines and the file of each run of
//! them — nothing allocated per record. A block's records go from the
//! reading thread to the building one as one such buffer, and come back to
//! be filled again.
//!
//! ```text
//!  bytes: [owner len u8][owner wire][type u16][class u16][ttl u32][rdata len u16][rdata] …
//!  lines: one per record          files: (first record, file) of each run
//! ```

use std::path::Path;
use std::sync::Arc;

use lode_wire::{Class, NameRef, Record, RecordRef, Rtype};

use crate::positions::FileRuns;
use crate::SourcePos;

/// Where a record handed on was written, borrowed (the file is cloned only
/// by whoever keeps it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PosRef<'a> {
    /// The file (as given, or as resolved for `$INCLUDE`).
    pub file: &'a Arc<Path>,
    /// The line (1-based).
    pub line: u32,
}

impl PosRef<'_> {
    /// The position owned.
    pub fn to_pos(&self) -> SourcePos {
        SourcePos {
            file: self.file.clone(),
            line: self.line,
        }
    }
}

impl SourcePos {
    /// The position borrowed.
    pub fn as_pos_ref(&self) -> PosRef<'_> {
        PosRef {
            file: &self.file,
            line: self.line,
        }
    }
}

/// Records read and not handed on yet (see the module's notes).
#[derive(Debug, Default)]
pub(crate) struct Flat {
    bytes: Vec<u8>,
    lines: Vec<u32>,
    files: FileRuns,
}

/// Bytes of a record's type, class, TTL and RDATA length.
const FIXED: usize = 10;

impl Flat {
    /// Records held.
    pub(crate) fn len(&self) -> usize {
        self.lines.len()
    }

    /// Drops the records, keeping the buffers.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.lines.clear();
        self.files.clear();
    }

    /// Keeps a record (`rdata` at most 65,535 bytes: the reader refuses
    /// longer) written at `file`:`line`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push(
        &mut self,
        owner: NameRef<'_>,
        class: Class,
        rtype: Rtype,
        ttl: u32,
        rdata: &[u8],
        file: &Arc<Path>,
        line: u32,
    ) {
        self.files.note(self.lines.len(), file);
        self.lines.push(line);
        let owner = owner.as_wire();
        let b = &mut self.bytes;
        b.push(owner.len() as u8);
        b.extend_from_slice(owner);
        b.extend_from_slice(&rtype.0.to_ne_bytes());
        b.extend_from_slice(&class.0.to_ne_bytes());
        b.extend_from_slice(&ttl.to_ne_bytes());
        b.extend_from_slice(&(rdata.len() as u16).to_ne_bytes());
        b.extend_from_slice(rdata);
    }

    /// Hands each record, in the order read, with its position.
    pub(crate) fn each(&self, f: &mut dyn FnMut(RecordRef<'_>, PosRef<'_>)) {
        let mut at = 0;
        for (i, &line) in self.lines.iter().enumerate() {
            let (record, len) = record_at(&self.bytes[at..]);
            at += len;
            // Every record noted its file: a run is never missing.
            if let Some(file) = self.files.of(i) {
                f(record, PosRef { file, line });
            }
        }
    }

    /// The records and their positions owned.
    pub(crate) fn into_owned(self) -> (Vec<Record>, Vec<SourcePos>) {
        let mut records = Vec::with_capacity(self.len());
        let mut positions = Vec::with_capacity(self.len());
        self.each(&mut |r, p| {
            records.push(r.to_record());
            positions.push(p.to_pos());
        });
        (records, positions)
    }
}

/// The record at the start of `b` (as [`Flat::push`] wrote it) and its length.
fn record_at(b: &[u8]) -> (RecordRef<'_>, usize) {
    let o = 1 + usize::from(b[0]);
    let owner = NameRef::from_spelled(&b[1..o]);
    let fixed = &b[o..o + FIXED];
    let u16_at = |i: usize| u16::from_ne_bytes([fixed[i], fixed[i + 1]]);
    let ttl = u32::from_ne_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]);
    let rdata_len = usize::from(u16_at(8));
    let end = o + FIXED + rdata_len;
    let record = RecordRef {
        owner,
        class: Class(u16_at(2)),
        rtype: Rtype(u16_at(0)),
        ttl,
        rdata: &b[o + FIXED..end],
    };
    (record, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_as_pushed_with_their_files_and_lines() {
        let (a, b): (Arc<Path>, Arc<Path>) = (
            Arc::from(Path::new("a.zone")),
            Arc::from(Path::new("b.zone")),
        );
        let name = |s: &str| s.parse::<lode_wire::Name>().unwrap();
        let long = vec![7u8; 65_535];
        let pushed = [
            (name("example."), Rtype::SOA, 3600, &[1u8, 2, 3][..], &a, 1),
            (
                name("Www.Example."),
                Rtype::A,
                0,
                &[192, 0, 2, 1][..],
                &a,
                9,
            ),
            (name("x.example."), Rtype::TXT, u32::MAX, &[][..], &b, 2),
            (name("y.example."), Rtype(65_000), 7, &long[..], &a, 10),
        ];
        let mut flat = Flat::default();
        for round in 0..2 {
            for (owner, rtype, ttl, rdata, file, line) in &pushed {
                flat.push(owner.as_ref(), Class::IN, *rtype, *ttl, rdata, file, *line);
            }
            assert_eq!(flat.len(), pushed.len());
            let mut seen = Vec::new();
            flat.each(&mut |r, p| seen.push((r.to_record(), p.to_pos())));
            for ((r, p), (owner, rtype, ttl, rdata, file, line)) in seen.iter().zip(&pushed) {
                assert_eq!(r.owner.as_wire(), owner.as_wire(), "round {round}");
                assert_eq!((r.rtype, r.ttl, r.class), (*rtype, *ttl, Class::IN));
                assert_eq!(&r.rdata[..], *rdata);
                assert!(Arc::ptr_eq(&p.file, file));
                assert_eq!(p.line, *line);
            }
            assert_eq!(seen.len(), pushed.len());
            assert_eq!(flat.files.files().count(), 3, "one entry a run of one file");
            flat.clear();
            assert_eq!(flat.len(), 0);
        }
    }
}
