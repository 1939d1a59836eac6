//! Zone files (RFC 1035 §5, RFC 3597, BIND extensions) to records in wire form,
//! and RDATA back to presentation text.
//!
//! ```text
//!  file bytes (read whole) ──lexer──▶ entries of tokens (slices, no copies)
//!      │                                   │
//!      │        $ORIGIN $TTL $INCLUDE $GENERATE (zone.rs, generate.rs)
//!      ▼                                   ▼
//!  owner / ttl / class / type ──rdata_text.rs, svcb.rs──▶ Record { rdata: wire }
//! ```
//!
//! Design choices:
//! - The whole file is read into memory and lexed as bytes; tokens borrow the
//!   buffer. Records are kept back to back in one buffer (`flat.rs`) and
//!   [`parse_file_each`] hands them borrowed: nothing is allocated per record
//!   (a [`ParsedZone`]'s owned records are made from that buffer at the end).
//!   Tokens are scanned eight bytes at a time and know whether they hold a
//!   backslash, so strings and names without escapes are copied as they are.
//!   [`parse_file_counted`] reads a large file in 1 MiB blocks instead
//!   (`stream.rs`), cut only where that provably changes nothing.
//! - [`ParseCounters`] let another thread show how far a long read has got.
//! - Errors never stop the reader at the first one: up to 100 are collected, each
//!   naming `file:line`. No input makes the reader panic.
//! - TTL of a record without one: `$TTL` (or the `default_ttl` given to
//!   [`parse_file`], like Knot's `default-ttl`), else the last explicit TTL (RFC
//!   1035), else for an SOA its MINIMUM field, which then acts as `$TTL` (what
//!   BIND 9.18's `named-checkzone` does); else an error. Knot DNS 3.2 never
//!   inherits the last explicit TTL nor uses the SOA MINIMUM: it uses `$TTL`, else
//!   its `default-ttl` (3600 unless configured), so passing `Some(3600)` gives
//!   exactly Knot's TTLs (checked with knotd 3.2.6), and `None` gives BIND's.
//! - Printing follows Knot DNS (`kdig`): hex in upper case, base64 unbroken,
//!   NSEC3 next hash in lower-case base32hex, RRSIG times as `YYYYMMDDHHmmSS`,
//!   unknown types as `\# len HEX`; fields are separated by one space (Knot pads
//!   some LOC fields with two and leaves a trailing space after CAA and empty
//!   NSEC3 bitmaps; we do not).
//! - TXT/SPF strings longer than 255 octets are split into 255-octet strings, as
//!   Knot does; other character strings longer than 255 octets are errors.
//! - WKS, which Knot 3.2 reads and prints only as `\#`, is read with protocol
//!   and service names or numbers and printed as BIND prints it (numbers). NID and
//!   L64 groups may have 1-4 hex digits (BIND drops leading zeros; Knot wants 4).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod canonical;
mod flat;
mod generate;
mod lexer;
mod positions;
mod rdata_text;
mod stream;
mod svcb;
mod text;
mod zone;

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use lode_wire::{Name, Record, RecordRef, Rtype};

pub use canonical::{canonical, forget_folders};
pub use flat::PosRef;
pub use positions::Positions;
pub use text::utc_text;
pub use zone::{MAX_ERRORS, MAX_INCLUDE_DEPTH};

/// Where a record or an error comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourcePos {
    /// The file (as given, or as resolved for `$INCLUDE`).
    pub file: Arc<Path>,
    /// The line (1-based; 0 for the file as a whole).
    pub line: u32,
}

impl fmt::Display for SourcePos {
    /// `FILE:LINE`, or `FILE` alone for the file as a whole.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}", self.file.display()),
            line => write!(f, "{}:{line}", self.file.display()),
        }
    }
}

/// The records of a zone file, in file order, with where each came from.
#[derive(Clone, Debug, Default)]
pub struct ParsedZone {
    /// The records.
    pub records: Vec<Record>,
    /// `positions[i]` is where `records[i]` was written.
    pub positions: Vec<SourcePos>,
}

/// One problem in a zone file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneFileError {
    /// Where.
    pub pos: SourcePos,
    /// What, e.g. `MX: expected preference (0-65535), got "abc"`.
    pub message: String,
}

impl fmt::Display for ZoneFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.pos, self.message)
    }
}

impl std::error::Error for ZoneFileError {}

/// How far readers have got, for a progress display on another thread: bytes
/// of zone text consumed and records read, advanced about every 256 KiB and at
/// the end of each file; and records laid out by the builders of zones still
/// being built (a zone sorted in runs builds after its text is read). One set
/// of counters may be shared by readers on several threads.
#[derive(Debug, Default)]
pub struct ParseCounters {
    bytes: AtomicU64,
    records: AtomicU64,
    laid_out: AtomicU64,
}

impl ParseCounters {
    /// Bytes of zone text consumed (a file read to its end counts whole, even
    /// when reading stopped at the error cap).
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Records read so far.
    pub fn records(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }

    /// Records laid out by the builders of zones not finished yet.
    pub fn laid_out(&self) -> u64 {
        self.laid_out.load(Ordering::Relaxed)
    }

    /// Counts `records` more laid out by a builder (added) or those of a
    /// zone now finished (taken back: the zone counts as done instead).
    pub fn lay_out(&self, records: u64, finished: bool) {
        if finished {
            self.laid_out.fetch_sub(records, Ordering::Relaxed);
        } else {
            self.laid_out.fetch_add(records, Ordering::Relaxed);
        }
    }

    /// Takes back bytes and records added by a read that is done again.
    fn sub(&self, bytes: u64, records: u64) {
        self.bytes.fetch_sub(bytes, Ordering::Relaxed);
        self.records.fetch_sub(records, Ordering::Relaxed);
    }

    /// Adds consumed bytes and records read.
    fn add(&self, bytes: u64, records: u64) {
        if bytes > 0 {
            self.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
        if records > 0 {
            self.records.fetch_add(records, Ordering::Relaxed);
        }
    }
}

/// Reads a zone file (and its `$INCLUDE`s, relative to the including file's
/// directory). `default_ttl` acts as a `$TTL` at the top of the file.
pub fn parse_file(
    path: &Path,
    origin: &Name,
    default_ttl: Option<u32>,
) -> Result<ParsedZone, Vec<ZoneFileError>> {
    let mut r = zone::Reader::new(default_ttl, None);
    r.read_file(path, origin.clone(), None);
    r.finish()
}

/// As [`parse_file`], advancing `counters` if given (see [`ParseCounters`]);
/// a large file is read 1 MiB at a time through one buffer (fewer page
/// faults, the text not held whole), which gives the same records,
/// positions and errors.
pub fn parse_file_counted(
    path: &Path,
    origin: &Name,
    default_ttl: Option<u32>,
    counters: Option<&ParseCounters>,
) -> Result<ParsedZone, Vec<ZoneFileError>> {
    stream::parse_file(path, origin, default_ttl, counters, stream::BLOCK)
}

/// Files from this size on are read on a thread of their own by
/// [`parse_file_each`] (a thread costs more than it brings below).
const PIPELINE_FROM: u64 = 16 << 20;
/// Blocks of records read ahead at most.
const PIPELINE_BATCHES: usize = 4;

/// As [`parse_file_counted`], handing each record with its position to
/// `each` as it is read, block by block, so that a large zone is never held
/// as records (nor allocated record by record: `each` borrows them). When
/// the file has to be read again in one piece after records were handed (a
/// block with an error, a block with no place to cut), `restart` is called
/// and every record is handed again. On errors (`Err`), the records handed
/// are to be dropped.
pub fn parse_file_each(
    path: &Path,
    origin: &Name,
    default_ttl: Option<u32>,
    counters: Option<&ParseCounters>,
    each: &mut dyn FnMut(RecordRef<'_>, PosRef<'_>),
    restart: &mut dyn FnMut(),
) -> Result<(), Vec<ZoneFileError>> {
    let files = (path, origin, default_ttl, counters);
    parse_file_each_in(files, each, restart, stream::BLOCK, PIPELINE_FROM)
}

/// [`parse_file_each`] in blocks of `block` bytes, on a reading thread of
/// its own from `pipeline_from` bytes of file on.
pub(crate) fn parse_file_each_in(
    (path, origin, default_ttl, counters): (&Path, &Name, Option<u32>, Option<&ParseCounters>),
    each: &mut dyn FnMut(RecordRef<'_>, PosRef<'_>),
    restart: &mut dyn FnMut(),
    block: usize,
    pipeline_from: u64,
) -> Result<(), Vec<ZoneFileError>> {
    let mut handed = false;
    let large = std::fs::metadata(path).is_ok_and(|m| m.len() >= pipeline_from);
    // Large files are read on a thread of their own, each block's records
    // handed here as one buffer (and sent back to be filled again):
    // reading and what `each` does with them (sorting, building) go side
    // by side, and no record is allocated on one thread to be freed on the
    // other. None: read here.
    let piped = large.then(|| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<flat::Flat>(PIPELINE_BATCHES);
        let (back, emptied) = std::sync::mpsc::channel::<flat::Flat>();
        std::thread::scope(|s| {
            let reading = std::thread::Builder::new()
                .name("lode-read".into())
                .spawn_scoped(s, move || {
                    let mut send = |records: &mut flat::Flat| {
                        if records.len() == 0 {
                            return;
                        }
                        let next = emptied.try_recv().unwrap_or_default();
                        // The receiver is gone only if `each` panicked.
                        let _ = tx.send(std::mem::replace(records, next));
                    };
                    let read = stream::read_in_blocks(
                        path,
                        origin,
                        default_ttl,
                        counters,
                        block,
                        Some(&mut send),
                    );
                    read.is_some()
                })
                .ok()?;
            for mut records in rx {
                handed |= records.len() > 0;
                records.each(each);
                records.clear();
                let _ = back.send(records);
            }
            Some(
                reading
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e)),
            )
        })
    });
    let read = match piped.flatten() {
        Some(read) => read,
        None => {
            let mut counted = |records: &mut flat::Flat| {
                handed |= records.len() > 0;
                records.each(each);
            };
            stream::read_in_blocks(
                path,
                origin,
                default_ttl,
                counters,
                block,
                Some(&mut counted),
            )
            .is_some()
        }
    };
    if read {
        return Ok(());
    }
    if handed {
        restart();
    }
    let mut r = zone::Reader::new(default_ttl, counters);
    r.read_file(path, origin.clone(), None);
    r.finish_flat()?.each(each);
    Ok(())
}

/// Reads zone text held in memory; `name_for_errors` names it in errors (and its
/// directory anchors relative `$INCLUDE`s).
pub fn parse_str(
    text: &str,
    name_for_errors: &str,
    origin: &Name,
) -> Result<ParsedZone, Vec<ZoneFileError>> {
    parse_bytes(text.as_bytes(), name_for_errors, origin, None)
}

/// As [`parse_str`], for bytes, with an optional initial default TTL.
pub fn parse_bytes(
    text: &[u8],
    name_for_errors: &str,
    origin: &Name,
    default_ttl: Option<u32>,
) -> Result<ParsedZone, Vec<ZoneFileError>> {
    let mut r = zone::Reader::new(default_ttl, None);
    let file: Arc<Path> = Arc::from(Path::new(name_for_errors));
    r.read_buffer(text, &file, origin.clone());
    r.finish()
}

/// Parses the presentation form of one RDATA of type `rtype` (parentheses and
/// `\# len hex` allowed) into uncompressed wire form.
pub fn parse_rdata(rtype: Rtype, text: &str, origin: &Name) -> Result<Vec<u8>, String> {
    let mut lx = lexer::Lexer::new(text.as_bytes());
    let mut toks = Vec::new();
    let mut all = Vec::new();
    while let Some(_entry) = lx.next_entry(&mut toks).map_err(|(_, m)| m)? {
        all.extend_from_slice(&toks);
    }
    let mut out = Vec::new();
    rdata_text::parse_tokens(rtype, &all, origin, &mut out).map_err(|e| e.1)?;
    if out.len() > 65_535 {
        return Err(format!("{rtype}: RDATA longer than 65535 octets"));
    }
    Ok(out)
}

/// The presentation form of one RDATA (as Knot prints it; `\# len HEX` for types
/// without one and for bytes that do not fit the type's layout).
pub fn format_rdata(rtype: Rtype, rdata: &[u8]) -> String {
    let mut s = String::with_capacity(rdata.len() * 2 + 8);
    rdata_text::format(rtype, rdata, &mut s);
    s
}

/// Parses a time as RRSIG records write it: `YYYYMMDDHHmmSS` (UTC) or
/// Unix seconds.
pub fn parse_timestamp(text: &str) -> Option<u32> {
    text::parse_time(text.as_bytes())
}

/// Decodes base64 text as zone files write it (RFC 4648; spaces between
/// quanta allowed, padding optional on the last one), e.g. a TSIG secret.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut b64 = text::Base64::default();
    for token in text.split_ascii_whitespace() {
        if !b64.feed(token.as_bytes(), &mut out) {
            return None;
        }
    }
    b64.finish().then_some(out)
}

/// True if `rtype` has a presentation format of its own here (others use `\#`).
pub fn is_known_type(rtype: Rtype) -> bool {
    rdata_text::is_known(rtype)
}

/// One record as a zone-file line: `owner ttl class type rdata`.
pub fn format_record(r: &Record) -> String {
    let mut s = format!("{} {} {} {} ", r.owner, r.ttl, r.class, r.rtype);
    rdata_text::format(r.rtype, &r.rdata, &mut s);
    s
}

/// Writes `records` as zone-file text: `$ORIGIN origin`, then one record per
/// line — owner relative to the origin (`@` for the apex, absolute for a name
/// outside it), TTL, class only when not IN, type, RDATA as [`format_rdata`]
/// prints it. The records are written in the order given (a zone dump gives
/// the SOA first, then canonical order). Returns how many were written; what
/// it writes parses back (with [`parse_file`]) to the same records.
pub fn write_zone<W: std::io::Write>(
    out: &mut W,
    origin: &Name,
    records: impl IntoIterator<Item = Record>,
) -> std::io::Result<u64> {
    writeln!(out, "$ORIGIN {origin}")?;
    let base = origin.as_ref().label_count();
    let mut line = String::with_capacity(256);
    let mut n = 0u64;
    for r in records {
        line.clear();
        let owner = r.owner.as_ref();
        if owner.ends_with(&origin.as_ref()) {
            let own = owner.label_count() - base;
            if own == 0 {
                line.push('@');
            }
            for (i, label) in owner.labels().take(own).enumerate() {
                if i > 0 {
                    line.push('.');
                }
                // Writing to a String cannot fail.
                let _ = lode_wire::name::write_label(&mut line, label);
            }
        } else {
            use std::fmt::Write as _;
            let _ = write!(line, "{owner}");
        }
        {
            use std::fmt::Write as _;
            let _ = write!(line, " {}", r.ttl);
            if r.class != lode_wire::Class::IN {
                let _ = write!(line, " {}", r.class);
            }
            let _ = write!(line, " {} ", r.rtype);
        }
        rdata_text::format(r.rtype, &r.rdata, &mut line);
        line.push('\n');
        out.write_all(line.as_bytes())?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests;
