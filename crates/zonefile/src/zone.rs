//! The zone-file reader: entries from the lexer → directives and records.
//!
//! State kept across entries: the origin and previous owner (per file, restored
//! after `$INCLUDE`), `$TTL`, the last explicit TTL and the class.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lode_wire::{Class, Name, NameRef, Rtype};

use crate::flat::Flat;
use crate::generate;
use crate::lexer::{Lexer, Token};
use crate::rdata_text::{parse_tokens, type_code};
use crate::text::{name_into, parse_ttl, show};
use crate::{ParseCounters, ParsedZone, SourcePos, ZoneFileError};

/// Errors collected before the reader gives up.
pub const MAX_ERRORS: usize = 100;
/// Deepest `$INCLUDE` nesting.
pub const MAX_INCLUDE_DEPTH: usize = 16;

/// An error with the line of the token it concerns, if known (else the entry's line).
struct LineErr(Option<u32>, String);

impl From<String> for LineErr {
    fn from(s: String) -> Self {
        LineErr(None, s)
    }
}

impl From<&str> for LineErr {
    fn from(s: &str) -> Self {
        LineErr(None, s.to_string())
    }
}

/// Per-file state (restored when an included file ends, RFC 1035 §5.1).
struct FileState {
    origin: Name,
    /// Wire form of the previous owner (empty: none yet).
    last_owner: Vec<u8>,
}

/// Bytes of text read between two updates of the [`ParseCounters`].
const COUNT_EVERY: usize = 256 * 1024;

/// The reader of one zone (its files and their includes).
pub(crate) struct Reader<'c> {
    /// The records read and not handed on yet.
    flat: Flat,
    errors: Vec<ZoneFileError>,
    default_ttl: Option<u32>,
    last_ttl: Option<u32>,
    zone_class: Option<Class>,
    /// Canonical paths of the files being read (include loop detection).
    stack: Vec<PathBuf>,
    rdata: Vec<u8>,
    name: Vec<u8>,
    gen_text: Vec<u8>,
    /// Where progress is reported, if anywhere.
    counters: Option<&'c ParseCounters>,
    /// Records already added to `counters`.
    records_counted: usize,
    /// Records read and handed on already (see [`Reader::drain`]).
    drained: usize,
    /// Bytes already added to `counters`.
    bytes_counted: u64,
}

/// A class mnemonic allowed in a zone file (not NONE or ANY).
fn class_code(s: &[u8]) -> Option<Class> {
    if s.eq_ignore_ascii_case(b"IN") {
        return Some(Class::IN);
    }
    if s.len() != 2 && !s.get(..5).is_some_and(|p| p.eq_ignore_ascii_case(b"CLASS")) {
        return None;
    }
    let c = std::str::from_utf8(s).ok().and_then(Class::from_mnemonic)?;
    (c != Class::NONE && c != Class::ANY).then_some(c)
}

impl<'c> Reader<'c> {
    /// A reader with an optional initial default TTL (as if `$TTL` were given),
    /// reporting progress to `counters` if given.
    pub(crate) fn new(default_ttl: Option<u32>, counters: Option<&'c ParseCounters>) -> Self {
        Reader {
            flat: Flat::default(),
            errors: Vec::new(),
            default_ttl,
            last_ttl: None,
            zone_class: None,
            stack: Vec::new(),
            rdata: Vec::with_capacity(512),
            name: Vec::with_capacity(256),
            gen_text: Vec::new(),
            counters,
            records_counted: 0,
            drained: 0,
            bytes_counted: 0,
        }
    }

    /// Hands the records read so far, with their positions, to `each`,
    /// which may keep them (swapping in other buffers to fill): a large
    /// zone is then never held as records.
    pub(crate) fn drain(&mut self, each: &mut dyn FnMut(&mut Flat)) {
        self.drained += self.flat.len();
        each(&mut self.flat);
        self.flat.clear();
    }

    /// True when an error was found.
    pub(crate) fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }

    /// Takes back from the counters what this reader added to them.
    pub(crate) fn uncount(&self) {
        if let Some(c) = self.counters {
            c.sub(self.bytes_counted, self.records_counted as u64);
        }
    }

    /// Adds the bytes consumed and the records read since the last call to the counters.
    fn count(&mut self, bytes: usize) {
        if let Some(c) = self.counters {
            let total = self.drained + self.flat.len();
            c.add(bytes as u64, (total - self.records_counted) as u64);
            self.records_counted = total;
            self.bytes_counted += bytes as u64;
        }
    }

    /// Ends reading: the records, or the errors.
    pub(crate) fn finish(self) -> Result<ParsedZone, Vec<ZoneFileError>> {
        let (records, positions) = self.finish_flat()?.into_owned();
        Ok(ParsedZone { records, positions })
    }

    /// Ends reading: the records as read, or the errors.
    pub(crate) fn finish_flat(self) -> Result<Flat, Vec<ZoneFileError>> {
        match self.errors.is_empty() {
            true => Ok(self.flat),
            false => Err(self.errors),
        }
    }

    /// True once the error cap is reached.
    fn full(&self) -> bool {
        self.errors.len() >= MAX_ERRORS
    }

    /// Records an error (the last one allowed says that reading stops).
    fn error(&mut self, file: &Arc<Path>, line: u32, message: String) {
        if self.full() {
            return;
        }
        self.errors.push(ZoneFileError {
            pos: SourcePos {
                file: file.clone(),
                line,
            },
            message,
        });
        if self.full() {
            self.errors.push(ZoneFileError {
                pos: SourcePos {
                    file: file.clone(),
                    line,
                },
                message: format!("too many errors ({MAX_ERRORS}), stopped reading"),
            });
        }
    }

    /// Reads a file from disk (the top-level file or an include).
    pub(crate) fn read_file(&mut self, path: &Path, origin: Name, from: Option<(&Arc<Path>, u32)>) {
        let shown: Arc<Path> = Arc::from(path);
        let (err_file, err_line) = match from {
            Some((f, l)) => (f.clone(), l),
            None => (shown.clone(), 0),
        };
        if self.stack.len() >= MAX_INCLUDE_DEPTH {
            let msg = format!(
                "$INCLUDE nested deeper than {MAX_INCLUDE_DEPTH} files at {}",
                path.display()
            );
            self.error(&err_file, err_line, msg);
            return;
        }
        let canonical = crate::canonical(path).unwrap_or_else(|_| path.to_path_buf());
        if self.stack.contains(&canonical) {
            self.error(
                &err_file,
                err_line,
                format!("$INCLUDE loop: {} is already being read", path.display()),
            );
            return;
        }
        let data = match std::fs::read(path) {
            Ok(d) => d,
            Err(e) => {
                self.error(
                    &err_file,
                    err_line,
                    format!("cannot read {}: {e}", path.display()),
                );
                return;
            }
        };
        self.stack.push(canonical);
        self.read_buffer(&data, &shown, origin);
        self.stack.pop();
    }

    /// Reads one block of the top-level file whose canonical path is
    /// `canonical` as [`Reader::read_file`] would, the block starting at line
    /// `first_line`; returns the origin in force at its end and the line after it.
    pub(crate) fn read_top_level_block(
        &mut self,
        canonical: &Path,
        shown: &Arc<Path>,
        buf: &[u8],
        origin: Name,
        first_line: u32,
    ) -> (Name, u32) {
        self.stack.push(canonical.to_path_buf());
        let end = self.read_buffer_from(buf, shown, origin, first_line);
        self.stack.pop();
        end
    }

    /// Reads zone text from a buffer; `file` names it in errors and anchors relative includes.
    pub(crate) fn read_buffer(&mut self, buf: &[u8], file: &Arc<Path>, origin: Name) {
        self.read_buffer_from(buf, file, origin, 1);
    }

    /// As [`Reader::read_buffer`], for text whose first line is line
    /// `first_line` of `file`; returns the origin in force at the end and the
    /// lexer's line there (the line after the text if it ends with a line end
    /// and had no error).
    pub(crate) fn read_buffer_from(
        &mut self,
        buf: &[u8],
        file: &Arc<Path>,
        origin: Name,
        first_line: u32,
    ) -> (Name, u32) {
        let mut st = FileState {
            origin,
            last_owner: Vec::new(),
        };
        let mut lexer = Lexer::starting_at(buf, first_line);
        let mut toks: Vec<Token<'_>> = Vec::with_capacity(16);
        let mut counted = 0;
        while !self.full() {
            if self.counters.is_some() && lexer.offset() - counted >= COUNT_EVERY {
                self.count(lexer.offset() - counted);
                counted = lexer.offset();
            }
            let entry = match lexer.next_entry(&mut toks) {
                Ok(Some(e)) => e,
                Ok(None) => break,
                Err((line, msg)) => {
                    self.error(file, line, msg);
                    continue;
                }
            };
            let line = entry.line;
            let first = toks[0];
            let result = if !entry.blank_owner && !first.quoted && first.text.first() == Some(&b'$')
            {
                self.directive(&toks, file, line, &mut st)
            } else {
                self.record(&toks, entry.blank_owner, file, line, &mut st)
            };
            if let Err(LineErr(at, msg)) = result {
                self.error(file, at.unwrap_or(line), msg);
            }
        }
        // The whole buffer counts as consumed, even when the error cap stopped reading.
        self.count(buf.len() - counted);
        (st.origin, lexer.line())
    }

    /// Handles `$ORIGIN`, `$TTL`, `$INCLUDE` and `$GENERATE`.
    fn directive(
        &mut self,
        toks: &[Token<'_>],
        file: &Arc<Path>,
        line: u32,
        st: &mut FileState,
    ) -> Result<(), LineErr> {
        let d = toks[0];
        if d.is("$ORIGIN") {
            let [_, name] = toks else {
                return Err("$ORIGIN needs exactly one domain name".into());
            };
            st.origin = self
                .make_name(name.text, &st.origin)
                .map_err(|e| format!("$ORIGIN: {e}"))?;
            Ok(())
        } else if d.is("$TTL") {
            let [_, ttl] = toks else {
                return Err("$TTL needs exactly one TTL".into());
            };
            let v = parse_ttl(ttl.text).ok_or_else(|| {
                format!(
                    "$TTL: expected a TTL (seconds or 1w2d3h4m5s), got \"{}\"",
                    show(ttl.text)
                )
            })?;
            self.default_ttl = Some(v);
            Ok(())
        } else if d.is("$INCLUDE") {
            let (path_tok, origin) = match toks {
                [_, p] => (p, st.origin.clone()),
                [_, p, o] => (
                    p,
                    self.make_name(o.text, &st.origin)
                        .map_err(|e| format!("$INCLUDE origin: {e}"))?,
                ),
                _ => return Err("$INCLUDE needs a file name and an optional origin".into()),
            };
            let mut raw = Vec::new();
            crate::text::unescape_into(path_tok.text, &mut raw)
                .map_err(|e| format!("$INCLUDE: {e}"))?;
            let rel = PathBuf::from(String::from_utf8_lossy(&raw).into_owned());
            let path = if rel.is_absolute() {
                rel
            } else {
                file.parent().map_or(rel.clone(), |dir| dir.join(&rel))
            };
            self.read_file(&path, origin, Some((file, line)));
            Ok(())
        } else if d.is("$GENERATE") {
            Ok(self.generate(toks, file, line, st)?)
        } else {
            Err(format!("unknown directive \"{}\"", show(d.text)).into())
        }
    }

    /// Parses a name relative to `origin` into an owned name.
    fn make_name(&mut self, text: &[u8], origin: &Name) -> Result<Name, String> {
        self.name.clear();
        name_into(text, origin, &mut self.name)?;
        Name::from_wire(&self.name).map_err(|e| e.to_string())
    }

    /// Reads `[ttl] [class] type` (either order) starting at `toks[i]`; returns
    /// (ttl, class, type, index of the first RDATA token).
    fn ttl_class_type(
        &self,
        toks: &[Token<'_>],
        mut i: usize,
    ) -> Result<(Option<u32>, Option<Class>, Rtype, usize), String> {
        let mut ttl = None;
        let mut class = None;
        loop {
            let Some(t) = toks.get(i) else {
                return Err("missing record type".into());
            };
            i += 1;
            if t.text.first().is_some_and(u8::is_ascii_digit) && !t.quoted {
                if ttl.is_some() {
                    return Err(format!(
                        "expected class or type, got a second TTL \"{}\"",
                        show(t.text)
                    ));
                }
                ttl = Some(parse_ttl(t.text).ok_or_else(|| {
                    format!(
                        "expected TTL (seconds or 1w2d3h4m5s, at most 4294967295), got \"{}\"",
                        show(t.text)
                    )
                })?);
            } else if let Some(c) = class_code(t.text).filter(|_| class.is_none()) {
                class = Some(c);
            } else {
                let rtype = type_code(t.text)
                    .ok_or_else(|| format!("unknown record type \"{}\"", show(t.text)))?;
                if rtype.is_meta() {
                    return Err(format!("type {rtype} cannot appear in a zone file"));
                }
                return Ok((ttl, class, rtype, i));
            }
        }
    }

    /// Picks the TTL of a record: explicit, else `$TTL`, else the last explicit
    /// TTL, else for an SOA its MINIMUM, which becomes the default (BIND's rule).
    fn resolve_ttl(&mut self, explicit: Option<u32>, rtype: Rtype) -> Result<u32, String> {
        if let Some(t) = explicit {
            self.last_ttl = Some(t);
            return Ok(t);
        }
        if let Some(t) = self.default_ttl.or(self.last_ttl) {
            return Ok(t);
        }
        if rtype == Rtype::SOA && self.rdata.len() >= 4 {
            let m = &self.rdata[self.rdata.len() - 4..];
            let t = u32::from_be_bytes([m[0], m[1], m[2], m[3]]);
            // BIND then treats it as the zone's default TTL (like a $TTL).
            self.default_ttl = Some(t);
            return Ok(t);
        }
        Err("no TTL: give one, or a $TTL before this record".into())
    }

    /// Checks the class against the zone's (the first record's) class.
    fn resolve_class(&mut self, class: Option<Class>) -> Result<Class, String> {
        let zone = *self.zone_class.get_or_insert(class.unwrap_or(Class::IN));
        match class {
            Some(c) if c != zone => Err(format!("class {c} differs from the zone's class {zone}")),
            _ => Ok(zone),
        }
    }

    /// Handles one record entry.
    fn record(
        &mut self,
        toks: &[Token<'_>],
        blank_owner: bool,
        file: &Arc<Path>,
        line: u32,
        st: &mut FileState,
    ) -> Result<(), LineErr> {
        let mut i = 0;
        if !blank_owner {
            st.last_owner.clear();
            if let Err(e) = name_into(toks[0].text, &st.origin, &mut st.last_owner) {
                return Err(format!("bad owner name: {e}").into());
            }
            i = 1;
        } else if st.last_owner.is_empty() {
            return Err("no owner name, and no previous record to take it from".into());
        }
        let (ttl, class, rtype, i) = self.ttl_class_type(toks, i)?;
        self.rdata.clear();
        parse_tokens(rtype, &toks[i..], &st.origin, &mut self.rdata).map_err(|(k, e)| {
            let at = toks[i..].get(k).or(toks.last()).map(|t| t.line);
            LineErr(at, e)
        })?;
        if self.rdata.len() > 65_535 {
            return Err(format!("{rtype}: RDATA longer than 65535 octets").into());
        }
        let ttl = self.resolve_ttl(ttl, rtype)?;
        let class = self.resolve_class(class)?;
        self.push_record(&st.last_owner, class, rtype, ttl, file, line)?;
        Ok(())
    }

    /// Keeps the record just read (RDATA in `self.rdata`) with its position.
    fn push_record(
        &mut self,
        owner: &[u8],
        class: Class,
        rtype: Rtype,
        ttl: u32,
        file: &Arc<Path>,
        line: u32,
    ) -> Result<(), String> {
        let owner = NameRef::from_wire(owner).map_err(|e| format!("bad owner name: {e}"))?;
        let rdata = self.rdata.as_slice();
        self.flat.push(owner, class, rtype, ttl, rdata, file, line);
        Ok(())
    }

    /// Expands `$GENERATE range lhs [ttl] [class] type rhs`.
    fn generate(
        &mut self,
        toks: &[Token<'_>],
        file: &Arc<Path>,
        line: u32,
        st: &mut FileState,
    ) -> Result<(), String> {
        let (Some(range), Some(lhs)) = (toks.get(1), toks.get(2)) else {
            return Err("$GENERATE needs: range lhs [ttl] [class] type rhs".into());
        };
        let range = generate::parse_range(range.text)?;
        let (ttl, class, rtype, i) = self
            .ttl_class_type(toks, 3)
            .map_err(|e| format!("$GENERATE: {e}"))?;
        let rhs = &toks[i..];
        if rhs.is_empty() {
            return Err("$GENERATE: missing rhs".into());
        }
        // The rhs template: one quoted token is used as its inside (BIND), with
        // `\"` made a plain `"` so that quoted fields can be written inside;
        // else the tokens joined by spaces, quoted ones quoted again.
        let mut template = Vec::new();
        if let [one] = rhs {
            let mut k = 0;
            while k < one.text.len() {
                if one.text[k] == b'\\' && one.text.get(k + 1) == Some(&b'"') {
                    k += 1;
                }
                template.push(one.text[k]);
                k += 1;
            }
        } else {
            for (n, t) in rhs.iter().enumerate() {
                if n > 0 {
                    template.push(b' ');
                }
                if t.quoted {
                    template.push(b'"');
                }
                template.extend_from_slice(t.text);
                if t.quoted {
                    template.push(b'"');
                }
            }
        }
        let class = self.resolve_class(class)?;
        let mut text = std::mem::take(&mut self.gen_text);
        let mut owner_text = Vec::new();
        let mut result = Ok(());
        for v in range.values() {
            owner_text.clear();
            text.clear();
            let step = generate::expand(lhs.text, v, &mut owner_text)
                .and_then(|_| generate::expand(&template, v, &mut text))
                .and_then(|_| {
                    st.last_owner.clear();
                    name_into(&owner_text, &st.origin, &mut st.last_owner)
                        .map_err(|e| format!("$GENERATE: bad owner name: {e}"))
                })
                .and_then(|_| {
                    let mut lx = Lexer::new(&text);
                    let mut toks2: Vec<Token<'_>> = Vec::new();
                    let mut all: Vec<Token<'_>> = Vec::new();
                    loop {
                        match lx.next_entry(&mut toks2) {
                            Ok(Some(_)) => all.extend_from_slice(&toks2),
                            Ok(None) => break,
                            Err((_, m)) => return Err(format!("$GENERATE: {m}")),
                        }
                    }
                    self.rdata.clear();
                    parse_tokens(rtype, &all, &st.origin, &mut self.rdata)
                        .map_err(|e| format!("$GENERATE: {}", e.1))?;
                    Ok(())
                })
                .and_then(|_| {
                    let ttl = self.resolve_ttl(ttl, rtype)?;
                    self.push_record(&st.last_owner, class, rtype, ttl, file, line)
                });
            if let Err(e) = step {
                result = Err(format!("{e} (iteration {v})"));
                break;
            }
        }
        self.gen_text = text;
        result
    }
}
