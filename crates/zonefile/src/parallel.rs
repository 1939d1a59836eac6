//! Reading one large zone file on several threads.
//!
//! ```text
//!  file text: [ first part ][ part 1 ][ part 2 ] ... [ part n ]
//!               │ read first, alone: directives, SOA, the zone's class
//!               ▼ origin, $TTL, class handed over
//!             part readers, one thread each ──▶ records appended in order
//!  any error, any directive in a part, no $TTL or class known ──▶ the whole file is read again in one piece
//! ```
//!
//! Why the result is the one-piece result: a part starts at a line whose
//! first byte begins an owner name (not white space, `;`, `$`, `(`, `)` or
//! `"`), so no record takes its owner from before the cut. If the cut fell
//! inside parentheses, the part before it ends with an open `(`, which is an
//! error there; quoted strings never span lines. So when no part has an error,
//! every part began at the start of an entry, as in the one-piece read. What
//! a record's meaning depends on besides its own text — origin, default TTL,
//! class — is fixed by the first part and, since the later parts hold no
//! directive (they refuse them), stays fixed: with a default TTL known, the
//! last explicit TTL and the SOA MINIMUM play no part. Line numbers are
//! counted up to each cut. Errors are not merged from parts: any error sends
//! the file to the one-piece reader, which reports them as always.

use std::path::Path;
use std::sync::Arc;

use lode_wire::Name;

use crate::zone::Reader;
use crate::{ParseCounters, ParsedZone, ZoneFileError};

/// Parts smaller than this are not worth a thread.
pub(crate) const MIN_PART: usize = 4 << 20;

/// Size of the first part, read before the others start (the header of a
/// zone: directives, SOA, NS), unless a quarter of a part is smaller.
const FIRST_PART: usize = 64 << 10;

/// Lines looked at past a wanted cut for one where a part may start.
const MAX_LINES_TO_CUT: usize = 10_000;

/// Reads the file at `path` on up to `threads` threads (parts of at least
/// `min_part` bytes), or on this thread (block by block, `stream.rs`) when
/// it is small or when the parts cannot be proved to give the one-piece result.
pub(crate) fn parse_file(
    path: &Path,
    origin: &Name,
    default_ttl: Option<u32>,
    counters: Option<&ParseCounters>,
    threads: usize,
    min_part: usize,
) -> Result<ParsedZone, Vec<ZoneFileError>> {
    if threads > 1 && std::fs::metadata(path).is_ok_and(|m| m.len() >= 2 * min_part as u64) {
        if let Ok(data) = std::fs::read(path) {
            let parts = read_in_parts(
                &data,
                path,
                origin,
                default_ttl,
                counters,
                threads,
                min_part,
            );
            if let Some(z) = parts {
                return Ok(z);
            }
        }
    }
    crate::stream::parse_file(path, origin, default_ttl, counters, crate::stream::BLOCK)
}

/// The parallel read of `data` (the text of `path`); `None` when it must be
/// read in one piece (the counters are then as before the call).
pub(crate) fn read_in_parts(
    data: &[u8],
    path: &Path,
    origin: &Name,
    default_ttl: Option<u32>,
    counters: Option<&ParseCounters>,
    threads: usize,
    min_part: usize,
) -> Option<ParsedZone> {
    let parts = threads.min(data.len() / min_part.max(1));
    if parts < 2 {
        return None;
    }
    let first_end = cut_at_or_after(data, FIRST_PART.min(data.len() / parts / 4))?;
    let mut cuts = vec![first_end];
    let rest = data.len() - first_end;
    for k in 1..parts {
        let want = first_end + rest * k / parts;
        let last = *cuts.last()?;
        match cut_at_or_after(data, want.max(last + 1)) {
            Some(c) => cuts.push(c),
            None => break,
        }
    }
    cuts.push(data.len());
    // (start, end, first line) of each later part.
    let mut spans = Vec::with_capacity(cuts.len() - 1);
    let mut line = 1 + count_lines(&data[..first_end]);
    for w in cuts.windows(2) {
        spans.push((w[0], w[1], u32::try_from(line).ok()?));
        line += count_lines(&data[w[0]..w[1]]);
    }

    let shown: Arc<Path> = Arc::from(path);
    let mut first = Reader::new(default_ttl, counters);
    let origin = first.read_top_level_text(path, &shown, &data[..first_end], origin.clone(), 1);
    if !first.can_hand_over() {
        first.uncount();
        return None;
    }
    let readers: Vec<Option<Reader<'_>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = spans
            .iter()
            .map(|&(start, end, line)| {
                let mut r = first.part_reader();
                let (shown, origin) = (&shown, origin.clone());
                scope.spawn(move || {
                    r.read_buffer_from(&data[start..end], shown, origin, line);
                    r
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().ok()).collect()
    });
    let complete = readers
        .iter()
        .all(|r| r.as_ref().is_some_and(|r| !r.has_errors()));
    if !complete {
        first.uncount();
        for r in readers.iter().flatten() {
            r.uncount();
        }
        return None;
    }
    for r in readers.into_iter().flatten() {
        first.append(r);
    }
    first.finish().ok()
}

/// The bytes that may not begin a part: white space and line ends (the
/// owner would be the previous record's), comments, directives, parentheses
/// and quotes.
fn cannot_start_part(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t' | b'\r' | b'\n' | b';' | b'$' | b'(' | b')' | b'"'
    )
}

/// The start of the first line at or after `at` where a part may begin, if
/// one is found within [`MAX_LINES_TO_CUT`] lines and before the end.
pub(crate) fn cut_at_or_after(data: &[u8], at: usize) -> Option<usize> {
    // A line starts at 0 or after a line end.
    let mut from = at.checked_sub(1)?;
    for _ in 0..MAX_LINES_TO_CUT {
        let start = from + data.get(from..)?.iter().position(|&b| b == b'\n')? + 1;
        let &b = data.get(start)?;
        if !cannot_start_part(b) {
            return Some(start);
        }
        from = start;
    }
    None
}

/// Line ends in `text`.
pub(crate) fn count_lines(text: &[u8]) -> usize {
    text.iter().filter(|&&b| b == b'\n').count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_fall_on_lines_that_begin_an_owner() {
        let text = b"$TTL 1\n@ SOA a b 1 2 3 4 5\n\tNS x\n; c\n(\n)\nb A 1.2.3.4\n";
        // From anywhere before "b A", the cut is at "b A" (line 7).
        let b_at = text.len() - b"b A 1.2.3.4\n".len();
        for at in 8..=b_at {
            assert_eq!(cut_at_or_after(text, at), Some(b_at), "from {at}");
        }
        assert_eq!(cut_at_or_after(text, b_at + 1), None);
        assert_eq!(cut_at_or_after(text, 0), None);
        assert_eq!(cut_at_or_after(text, 1), Some(7));
    }
}
