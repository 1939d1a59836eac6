//! Reading a large zone file in blocks through one reused buffer.
//!
//! ```text
//!  file ──read──▶ buffer (about one block) ──cut at a line that begins an owner──▶ reader
//!                   ▲   the text after the cut moves to the front   │ origin, line carried on
//!                   └──────────────────────────────────────────────┘
//!  any error ──▶ the whole file is read again in one piece
//! ```
//!
//! Reading the whole file into memory first costs a fresh page (a page fault)
//! for every 4 KiB of text, about a third of all the faults of a load, and
//! holds the whole text until the end. Here one buffer is reused. One reader
//! goes through the blocks in order, so `$TTL`, the last TTL and the class
//! carry over as in the one-piece read, and the origin is handed from block
//! to block. A block ends at a cut: a line whose first byte begins an owner
//! name (not white space, `;`, `$`, `(`, `)` or `"`), so no record takes its
//! owner from before the cut; a cut inside parentheses leaves an open `(` at
//! the end of the block, an error, and quoted strings never span lines. So when no block has an error, the blocks give the one-piece
//! records; with any error the file is read again in one piece, which
//! reports the errors as always.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use lode_wire::Name;

use crate::flat::Flat;
use crate::zone::Reader;
use crate::{ParseCounters, ParsedZone, ZoneFileError};

/// Bytes read at a time.
pub(crate) const BLOCK: usize = 1 << 20;

/// Lines looked at past a wanted cut for one where a block may end.
const MAX_LINES_TO_CUT: usize = 10_000;

/// A block grows (by `block` bytes at a time) to at most this many blocks
/// while no cut is found in it; beyond, the file is read in one piece.
const MAX_BLOCKS_WITHOUT_CUT: usize = 64;

/// Reads the file at `path` in blocks of about `block` bytes, or in one
/// piece when it is smaller than two blocks or a block has an error.
pub(crate) fn parse_file(
    path: &Path,
    origin: &Name,
    default_ttl: Option<u32>,
    counters: Option<&ParseCounters>,
    block: usize,
) -> Result<ParsedZone, Vec<ZoneFileError>> {
    if let Some(z) = read_in_blocks(path, origin, default_ttl, counters, block, None) {
        return Ok(z);
    }
    let mut r = Reader::new(default_ttl, counters);
    r.read_file(path, origin.clone(), None);
    r.finish()
}

/// The block-by-block read; `None` when the file must be read in one piece
/// (the counters are then as before the call). With `each`, every block's
/// records are handed to it as the block is read, to read through or to
/// keep (the zone returned holds none).
pub(crate) fn read_in_blocks(
    path: &Path,
    origin: &Name,
    default_ttl: Option<u32>,
    counters: Option<&ParseCounters>,
    block: usize,
    mut each: Option<&mut dyn FnMut(&mut Flat)>,
) -> Option<ParsedZone> {
    let block = block.max(1);
    let mut file = File::open(path).ok()?;
    if file.metadata().ok()?.len() < 2 * block as u64 {
        return None;
    }
    let shown: Arc<Path> = Arc::from(path);
    let canonical = crate::canonical(path).unwrap_or_else(|_| path.to_path_buf());
    let mut reader = Reader::new(default_ttl, counters);
    let mut origin = origin.clone();
    let mut line: u32 = 1;
    let mut buf: Vec<u8> = Vec::with_capacity(2 * block);
    let mut want = block;
    let mut eof = false;
    let done = loop {
        if !eof && buf.len() < want {
            let more = want - buf.len();
            let Ok(n) = (&mut file).take(more as u64).read_to_end(&mut buf) else {
                break false;
            };
            eof = n < more;
        }
        let cut = if eof {
            buf.len()
        } else {
            // A cut near the end of the buffer: little text is left to move.
            match cut_at_or_after(&buf, buf.len() - buf.len() / 16) {
                Some(c) => c,
                None if buf.len() < MAX_BLOCKS_WITHOUT_CUT * block => {
                    want = buf.len() + block;
                    continue;
                }
                None => break false,
            }
        };
        let (o, next) = reader.read_top_level_block(&canonical, &shown, &buf[..cut], origin, line);
        if reader.has_errors() {
            break false;
        }
        if let Some(each) = each.as_deref_mut() {
            reader.drain(each);
        }
        if eof {
            break true;
        }
        // Without an error, the block ended with a line end: `next` is the cut's line.
        (origin, line) = (o, next);
        buf.drain(..cut);
        want = block;
    };
    if done {
        reader.finish().ok()
    } else {
        reader.uncount();
        None
    }
}

/// The bytes that may not begin a block: white space and line ends (the
/// owner would be the previous record's), comments, directives, parentheses
/// and quotes.
fn cannot_start_block(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t' | b'\r' | b'\n' | b';' | b'$' | b'(' | b')' | b'"'
    )
}

/// The start of the first line at or after `at` where a block may begin, if
/// one is found within [`MAX_LINES_TO_CUT`] lines and before the end.
pub(crate) fn cut_at_or_after(data: &[u8], at: usize) -> Option<usize> {
    // A line starts at 0 or after a line end.
    let mut from = at.checked_sub(1)?;
    for _ in 0..MAX_LINES_TO_CUT {
        let start = from + data.get(from..)?.iter().position(|&b| b == b'\n')? + 1;
        let &b = data.get(start)?;
        if !cannot_start_block(b) {
            return Some(start);
        }
        from = start;
    }
    None
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
