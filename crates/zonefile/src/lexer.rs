//! The zone-file lexer: splits one in-memory buffer into entries (logical lines,
//! parentheses joined) of tokens that borrow the buffer. Comments are dropped;
//! quoted strings keep their escapes for the RDATA codecs to decode.

/// One token of an entry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Token<'a> {
    /// The text: for a quoted string, its inside (escapes not decoded).
    pub text: &'a [u8],
    /// Whether the token was a quoted string.
    pub quoted: bool,
    /// Whether the text holds a backslash (else escapes need no decoding).
    pub escaped: bool,
    /// The line the token starts on.
    pub line: u32,
}

impl Token<'_> {
    /// True for an unquoted token equal to `s` (ASCII case ignored).
    pub(crate) fn is(&self, s: &str) -> bool {
        !self.quoted && self.text.eq_ignore_ascii_case(s.as_bytes())
    }
}

/// Facts about one entry besides its tokens.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    /// The line the entry starts on.
    pub line: u32,
    /// The entry began with white space (owner omitted).
    pub blank_owner: bool,
}

/// Bytes that end or change the scan of an unquoted token: white space, line
/// end, comment, parentheses, backslash and quote.
static TOKEN_SPECIAL: [bool; 256] = byte_set(b" \t\r\n;()\\\"");

/// Bytes that end or change the scan of a quoted string.
static QUOTED_SPECIAL: [bool; 256] = byte_set(b"\"\\\n");

/// A 256-entry table, true for the bytes of `set`.
const fn byte_set(set: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0;
    while i < set.len() {
        t[set[i] as usize] = true;
        i += 1;
    }
    t
}

/// `0x0101...01` times `b`: the byte `b` in every lane of a word.
const fn lanes(b: u8) -> u64 {
    0x0101_0101_0101_0101 * b as u64
}

/// High bit set in the lanes of `v` that are zero. Only the lowest set lane is
/// exact (a borrow can mark lanes above a zero lane), which is all the
/// scanners below use.
fn zero_lanes(v: u64) -> u64 {
    v.wrapping_sub(lanes(1)) & !v & lanes(0x80)
}

/// The index of the first byte at or after `i` that ends or changes an
/// unquoted token ([`TOKEN_SPECIAL`]), or `buf.len()`. Eight bytes at a time:
/// bytes below `#` (white space, line end, `"` and other control characters),
/// `(`, `)`, `;` and `\` are candidates, then the table decides.
fn find_token_special(buf: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = buf.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        // Lanes below 0x23 (exact for the lowest lane, as in `zero_lanes`).
        let low = x.wrapping_sub(lanes(0x23)) & !x & lanes(0x80);
        let m = low
            | zero_lanes((x & lanes(0xFE)) ^ lanes(b'('))
            | zero_lanes(x ^ lanes(b';'))
            | zero_lanes(x ^ lanes(b'\\'));
        if m == 0 {
            i += 8;
            continue;
        }
        let at = i + (m.trailing_zeros() / 8) as usize;
        if TOKEN_SPECIAL[buf[at] as usize] {
            return at;
        }
        // A control character or `!`: not special, go on after it.
        i = at + 1;
    }
    i + buf[i..]
        .iter()
        .position(|&b| TOKEN_SPECIAL[b as usize])
        .unwrap_or(buf.len() - i)
}

/// The index of the first `"`, `\` or line end at or after `i` (inside a
/// quoted string), or `buf.len()`; eight bytes at a time.
fn find_quoted_special(buf: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = buf.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        let m = zero_lanes(x ^ lanes(b'"'))
            | zero_lanes(x ^ lanes(b'\\'))
            | zero_lanes(x ^ lanes(b'\n'));
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + buf[i..]
        .iter()
        .position(|&b| QUOTED_SPECIAL[b as usize])
        .unwrap_or(buf.len() - i)
}

/// A lexer error: the line and the reason.
pub(crate) type LexError = (u32, String);

/// Reads entries from one buffer.
#[derive(Debug)]
pub(crate) struct Lexer<'a> {
    buf: &'a [u8],
    pos: usize,
    line: u32,
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `buf`, line 1.
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Lexer {
            buf,
            pos: 0,
            line: 1,
        }
    }

    /// A lexer at the start of `buf`, which is line `line` of its file.
    pub(crate) fn starting_at(buf: &'a [u8], line: u32) -> Self {
        Lexer { buf, pos: 0, line }
    }

    /// The line the lexer is on.
    pub(crate) fn line(&self) -> u32 {
        self.line
    }

    /// How many bytes of the buffer have been consumed.
    pub(crate) fn offset(&self) -> usize {
        self.pos
    }

    /// Skips the rest of the current physical line (error recovery).
    fn skip_line(&mut self) {
        match self.buf[self.pos.min(self.buf.len())..]
            .iter()
            .position(|&b| b == b'\n')
        {
            Some(p) => {
                self.pos += p + 1;
                self.line += 1;
            }
            None => self.pos = self.buf.len(),
        }
    }

    /// Error recovery inside parentheses: skips past the `)` that closes `depth`
    /// open ones (quotes and comments ignored), or to the end.
    fn skip_group(&mut self, mut depth: u32) {
        self.pos += 1;
        while let Some(&c) = self.buf.get(self.pos) {
            self.pos += 1;
            match c {
                b'\n' => self.line += 1,
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
        self.skip_line();
    }

    /// Reads the next non-empty entry into `toks`. `Ok(None)` at the end of input.
    /// After an error the lexer has moved past the bad line, so lexing can go on.
    pub(crate) fn next_entry(
        &mut self,
        toks: &mut Vec<Token<'a>>,
    ) -> Result<Option<Entry>, LexError> {
        let buf = self.buf;
        // Position and line are kept in locals and stored back on every exit.
        let mut pos = self.pos;
        let mut line = self.line;
        loop {
            toks.clear();
            if pos >= buf.len() {
                self.pos = pos;
                self.line = line;
                return Ok(None);
            }
            let entry = Entry {
                line,
                blank_owner: matches!(buf[pos], b' ' | b'\t'),
            };
            let mut depth = 0u32;
            let mut open_line = 0;
            loop {
                while let Some(b' ' | b'\t' | b'\r') = buf.get(pos) {
                    pos += 1;
                }
                let Some(&c) = buf.get(pos) else {
                    self.pos = pos;
                    self.line = line;
                    if depth > 0 {
                        return Err((
                            open_line,
                            "unbalanced '(': no closing ')' before end of file".into(),
                        ));
                    }
                    break;
                };
                match c {
                    b'\n' => {
                        pos += 1;
                        line += 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    b';' => {
                        let rest = &buf[pos..];
                        pos += rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
                    }
                    b'(' => {
                        if depth > 0 {
                            // Nested parentheses (Knot refuses them too): skip the group.
                            self.pos = pos;
                            self.line = line;
                            self.skip_group(depth + 1);
                            return Err((line, "nested '(' inside parentheses".into()));
                        }
                        open_line = line;
                        depth = 1;
                        pos += 1;
                    }
                    b')' => {
                        if depth == 0 {
                            self.pos = pos;
                            self.line = line;
                            self.skip_line();
                            return Err((line, "')' without an opening '('".into()));
                        }
                        depth -= 1;
                        pos += 1;
                    }
                    b'"' => {
                        let start = pos + 1;
                        let mut i = start;
                        let mut escaped = false;
                        loop {
                            // Skip to the next byte that matters inside quotes.
                            i = find_quoted_special(buf, i);
                            match buf.get(i) {
                                None | Some(b'\n') => {
                                    self.pos = i;
                                    self.line = line;
                                    self.skip_line();
                                    return Err((line, "unterminated quoted string".into()));
                                }
                                Some(b'"') => break,
                                Some(_) => {
                                    // A backslash.
                                    escaped = true;
                                    if buf.get(i + 1).is_some_and(|&n| n != b'\n') {
                                        i += 2;
                                    } else {
                                        i += 1;
                                    }
                                }
                            }
                        }
                        toks.push(Token {
                            text: &buf[start..i],
                            quoted: true,
                            escaped,
                            line,
                        });
                        pos = i + 1;
                    }
                    _ => {
                        let start = pos;
                        let mut i = start;
                        let mut escaped = false;
                        loop {
                            // Skip the plain bytes of the token.
                            i = find_token_special(buf, i);
                            match buf.get(i) {
                                None | Some(b' ' | b'\t' | b'\r' | b'\n' | b';' | b'(' | b')') => {
                                    break
                                }
                                Some(b'\\') => {
                                    escaped = true;
                                    if buf.get(i + 1).is_some_and(|&n| n != b'\n') {
                                        i += 2;
                                    } else {
                                        i += 1;
                                    }
                                }
                                Some(_) => {
                                    // `key="value with spaces"` (SVCB): the quoted part stays in the token.
                                    i += 1;
                                    while let Some(&q) = buf.get(i) {
                                        match q {
                                            b'"' | b'\n' => break,
                                            b'\\'
                                                if buf.get(i + 1).is_some_and(|&n| n != b'\n') =>
                                            {
                                                escaped = true;
                                                i += 2
                                            }
                                            b'\\' => {
                                                escaped = true;
                                                i += 1
                                            }
                                            _ => i += 1,
                                        }
                                    }
                                    if buf.get(i) == Some(&b'"') {
                                        i += 1;
                                    }
                                }
                            }
                        }
                        toks.push(Token {
                            text: &buf[start..i],
                            quoted: false,
                            escaped,
                            line,
                        });
                        pos = i;
                    }
                }
            }
            if !toks.is_empty() {
                self.pos = pos;
                self.line = line;
                return Ok(Some(entry));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (line, blank owner, tokens as (text, quoted)) per entry.
    type Lexed = Vec<(u32, bool, Vec<(String, bool)>)>;

    fn lex(s: &str) -> Lexed {
        let mut lx = Lexer::new(s.as_bytes());
        let mut toks = Vec::new();
        let mut out = Vec::new();
        while let Some(e) = lx.next_entry(&mut toks).unwrap() {
            let t = toks
                .iter()
                .map(|t| (String::from_utf8_lossy(t.text).into_owned(), t.quoted))
                .collect();
            out.push((e.line, e.blank_owner, t));
        }
        out
    }

    #[test]
    fn entries() {
        let r = lex("a 1 IN A 1.2.3.4 ; c\n\n  ; only comment\n\tTXT \"x y\" ( \"z\"\n  w ) q\nb\\ c \\; d\n");
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].0, 1);
        assert!(!r[0].1);
        assert_eq!(r[0].2.len(), 5);
        assert_eq!(r[1].0, 4);
        assert!(r[1].1);
        let t: Vec<&str> = r[1].2.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(t, ["TXT", "x y", "z", "w", "q"]);
        assert!(r[1].2[1].1);
        assert_eq!(r[2].0, 6);
        let t: Vec<&str> = r[2].2.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(t, ["b\\ c", "\\;", "d"]);
    }

    #[test]
    fn errors_recover() {
        let mut lx = Lexer::new(b"a TXT \"open\nb A 1.2.3.4\nc ) x\nd A (\n");
        let mut toks = Vec::new();
        assert_eq!(lx.next_entry(&mut toks).unwrap_err().0, 1);
        assert_eq!(lx.next_entry(&mut toks).unwrap().unwrap().line, 2);
        assert_eq!(lx.next_entry(&mut toks).unwrap_err().0, 3);
        assert_eq!(lx.next_entry(&mut toks).unwrap_err().0, 4);
        assert!(lx.next_entry(&mut toks).unwrap().is_none());
    }

    #[test]
    fn word_scanners_as_byte_scans() {
        // Every byte value at every offset of a 20-byte buffer, among plain bytes.
        for special in 0..=255u8 {
            for at in 0..20 {
                let mut buf = vec![b'a'; 20];
                buf[at] = special;
                for from in 0..=at {
                    let byte_scan = |table: &[bool; 256]| {
                        from + buf[from..]
                            .iter()
                            .position(|&b| table[b as usize])
                            .unwrap_or(buf.len() - from)
                    };
                    assert_eq!(
                        find_token_special(&buf, from),
                        byte_scan(&TOKEN_SPECIAL),
                        "{special} at {at} from {from}"
                    );
                    assert_eq!(
                        find_quoted_special(&buf, from),
                        byte_scan(&QUOTED_SPECIAL),
                        "{special} at {at} from {from}"
                    );
                }
            }
        }
    }

    #[test]
    fn line_after_the_end_counts_every_line_end() {
        let mut lx = Lexer::starting_at(b"a A 1.2.3.4\n\n ; c\n  \n", 10);
        let mut toks = Vec::new();
        while lx.next_entry(&mut toks).unwrap().is_some() {}
        assert_eq!(lx.line(), 14);
    }

    #[test]
    fn escaped_flag() {
        let mut lx = Lexer::new(b"a\\.b \"q\\\"\" plain \"plain\" k=\"v\\ w\"\n");
        let mut toks = Vec::new();
        lx.next_entry(&mut toks).unwrap().unwrap();
        let flags: Vec<bool> = toks.iter().map(|t| t.escaped).collect();
        assert_eq!(flags, [true, true, false, false, true]);
    }

    #[test]
    fn svcb_quoted_value_stays_in_token() {
        let r = lex("x SVCB 1 . alpn=\"h2, h3\" port=1\n");
        let t: Vec<&str> = r[0].2.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(t, ["x", "SVCB", "1", ".", "alpn=\"h2, h3\"", "port=1"]);
    }
}
