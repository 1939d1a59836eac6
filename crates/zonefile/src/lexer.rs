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
        loop {
            toks.clear();
            if self.pos >= buf.len() {
                return Ok(None);
            }
            let entry = Entry {
                line: self.line,
                blank_owner: matches!(buf[self.pos], b' ' | b'\t'),
            };
            let mut depth = 0u32;
            let mut open_line = 0;
            loop {
                while self.pos < buf.len() && matches!(buf[self.pos], b' ' | b'\t' | b'\r') {
                    self.pos += 1;
                }
                let Some(&c) = buf.get(self.pos) else {
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
                        self.pos += 1;
                        self.line += 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    b';' => {
                        let rest = &buf[self.pos..];
                        self.pos += rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
                    }
                    b'(' => {
                        if depth > 0 {
                            // Nested parentheses (Knot refuses them too): skip the group.
                            let line = self.line;
                            self.skip_group(depth + 1);
                            return Err((line, "nested '(' inside parentheses".into()));
                        }
                        open_line = self.line;
                        depth = 1;
                        self.pos += 1;
                    }
                    b')' => {
                        if depth == 0 {
                            let line = self.line;
                            self.skip_line();
                            return Err((line, "')' without an opening '('".into()));
                        }
                        depth -= 1;
                        self.pos += 1;
                    }
                    b'"' => {
                        let start = self.pos + 1;
                        let mut i = start;
                        loop {
                            match buf.get(i) {
                                None | Some(b'\n') => {
                                    let line = self.line;
                                    self.pos = i;
                                    self.skip_line();
                                    return Err((line, "unterminated quoted string".into()));
                                }
                                Some(b'"') => break,
                                Some(b'\\') if buf.get(i + 1).is_some_and(|&n| n != b'\n') => {
                                    i += 2
                                }
                                Some(_) => i += 1,
                            }
                        }
                        toks.push(Token {
                            text: &buf[start..i],
                            quoted: true,
                            line: self.line,
                        });
                        self.pos = i + 1;
                    }
                    _ => {
                        let start = self.pos;
                        let mut i = start;
                        while let Some(&b) = buf.get(i) {
                            match b {
                                b' ' | b'\t' | b'\r' | b'\n' | b';' | b'(' | b')' => break,
                                b'\\' if buf.get(i + 1).is_some_and(|&n| n != b'\n') => i += 2,
                                b'"' => {
                                    // `key="value with spaces"` (SVCB): the quoted part stays in the token.
                                    i += 1;
                                    while let Some(&q) = buf.get(i) {
                                        match q {
                                            b'"' | b'\n' => break,
                                            b'\\'
                                                if buf.get(i + 1).is_some_and(|&n| n != b'\n') =>
                                            {
                                                i += 2
                                            }
                                            _ => i += 1,
                                        }
                                    }
                                    if buf.get(i) == Some(&b'"') {
                                        i += 1;
                                    }
                                }
                                _ => i += 1,
                            }
                        }
                        let i = i.min(buf.len());
                        toks.push(Token {
                            text: &buf[start..i],
                            quoted: false,
                            line: self.line,
                        });
                        self.pos = i;
                    }
                }
            }
            if !toks.is_empty() {
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
    fn svcb_quoted_value_stays_in_token() {
        let r = lex("x SVCB 1 . alpn=\"h2, h3\" port=1\n");
        let t: Vec<&str> = r[0].2.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(t, ["x", "SVCB", "1", ".", "alpn=\"h2, h3\"", "port=1"]);
    }
}
