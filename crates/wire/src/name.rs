//! Domain names: wire form, presentation form and canonical lookup keys.
//!
//! A [`Name`] owns an absolute, uncompressed wire-format name with the case it was
//! written in. A [`NameRef`] borrows one (from a [`Name`], a [`NameBuf`] or a
//! packet after decompression). Equality, hashing and ordering ignore ASCII case;
//! ordering is the DNSSEC canonical order of RFC 4034 §6.1.
//!
//! A canonical key ([`NameRef::write_key`]) is the name with its labels reversed
//! and lower-cased, each label followed by a 0 byte (bytes 0 and 1 inside a label
//! are escaped as `1,1` and `1,2`). Comparing keys bytewise gives the canonical
//! order, and an ancestor's key is a prefix of its descendants' keys, so one
//! ordered index answers exact, predecessor and closest-encloser lookups.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

/// Longest name in wire form, root label included (RFC 1035 §3.1).
pub const MAX_NAME_LEN: usize = 255;
/// Longest label (RFC 1035 §3.1).
pub const MAX_LABEL_LEN: usize = 63;
/// Size of the DNS message header: no compression pointer may point into it.
const HEADER_LEN: usize = 12;
/// Longest canonical key: every byte of a 255-byte name escaped.
pub const MAX_KEY_LEN: usize = 2 * MAX_NAME_LEN;

/// Why a name could not be read or built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameError {
    /// A label longer than 63 octets.
    LabelTooLong,
    /// A name longer than 255 octets in wire form.
    NameTooLong,
    /// The name ends before its root label.
    Truncated,
    /// A compression pointer that points forward, at itself, or loops.
    BadPointer,
    /// A label type other than a plain label or a pointer (RFC 6891 §5).
    BadLabelType,
    /// An empty label inside a name in presentation form (`a..b`).
    EmptyLabel,
    /// A bad `\` escape in presentation form.
    BadEscape,
    /// A relative name where no origin is known.
    Relative,
    /// An empty string.
    Empty,
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            NameError::LabelTooLong => "label longer than 63 octets",
            NameError::NameTooLong => "name longer than 255 octets",
            NameError::Truncated => "name truncated",
            NameError::BadPointer => "bad compression pointer",
            NameError::BadLabelType => "unknown label type",
            NameError::EmptyLabel => "empty label",
            NameError::BadEscape => "bad escape sequence",
            NameError::Relative => "relative name without an origin",
            NameError::Empty => "empty name",
        };
        f.write_str(s)
    }
}

impl std::error::Error for NameError {}

/// A borrowed absolute name in uncompressed wire form (always valid).
#[derive(Clone, Copy)]
pub struct NameRef<'a> {
    wire: &'a [u8],
}

/// An owned absolute name in uncompressed wire form, case preserved.
#[derive(Clone)]
pub struct Name {
    wire: Box<[u8]>,
}

/// A name held in a fixed buffer, for the query path (no allocation).
#[derive(Clone, Copy)]
pub struct NameBuf {
    buf: [u8; MAX_NAME_LEN],
    len: u8,
}

/// A canonical key held in a fixed buffer (no allocation).
#[derive(Clone, Copy)]
pub struct KeyBuf {
    buf: [u8; MAX_KEY_LEN],
    len: u16,
}

/// Iterator over the labels of a name, leftmost first, root label excluded.
#[derive(Debug, Clone)]
pub struct Labels<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Labels<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let len = *self.rest.first()? as usize;
        if len == 0 {
            return None;
        }
        let label = &self.rest[1..1 + len];
        self.rest = &self.rest[1 + len..];
        Some(label)
    }
}

/// Checks that `wire` is exactly one absolute uncompressed name.
fn validate_wire(wire: &[u8]) -> Result<(), NameError> {
    if wire.len() > MAX_NAME_LEN {
        return Err(NameError::NameTooLong);
    }
    let mut pos = 0;
    loop {
        let len = *wire.get(pos).ok_or(NameError::Truncated)? as usize;
        if len & 0xC0 != 0 {
            return Err(NameError::BadLabelType);
        }
        if len == 0 {
            return if pos + 1 == wire.len() {
                Ok(())
            } else {
                Err(NameError::Truncated)
            };
        }
        pos += 1 + len;
        if pos >= wire.len() {
            return Err(NameError::Truncated);
        }
    }
}

impl<'a> NameRef<'a> {
    /// Borrows `wire` as a name, checking that it is one uncompressed absolute name.
    pub fn from_wire(wire: &'a [u8]) -> Result<Self, NameError> {
        validate_wire(wire)?;
        Ok(NameRef { wire })
    }

    /// Borrows `wire` as a name without checking it again: for bytes the
    /// caller spelled itself as one uncompressed absolute name (checked in
    /// debug builds). Other bytes give wrong results, never undefined
    /// behaviour.
    pub fn from_spelled(wire: &'a [u8]) -> Self {
        debug_assert!(validate_wire(wire).is_ok(), "not a name: {wire:?}");
        NameRef { wire }
    }

    /// Reads an uncompressed name at the start of `data`; returns it and the bytes after it.
    pub fn split_from(data: &'a [u8]) -> Result<(Self, &'a [u8]), NameError> {
        let mut pos = 0;
        loop {
            let len = *data.get(pos).ok_or(NameError::Truncated)? as usize;
            if len & 0xC0 != 0 {
                return Err(NameError::BadLabelType);
            }
            pos += 1 + len;
            if pos > MAX_NAME_LEN {
                return Err(NameError::NameTooLong);
            }
            if len == 0 {
                return Ok((NameRef { wire: &data[..pos] }, &data[pos..]));
            }
        }
    }

    /// The root name `.`.
    pub const fn root() -> NameRef<'static> {
        NameRef { wire: &[0] }
    }

    /// The wire form, root label included.
    pub fn as_wire(&self) -> &'a [u8] {
        self.wire
    }

    /// Length of the wire form.
    pub fn wire_len(&self) -> usize {
        self.wire.len()
    }

    /// True for the root name.
    pub fn is_root(&self) -> bool {
        self.wire.len() == 1
    }

    /// Labels, leftmost first, root label excluded.
    pub fn labels(&self) -> Labels<'a> {
        Labels { rest: self.wire }
    }

    /// Number of labels, root label excluded.
    pub fn label_count(&self) -> usize {
        self.labels().count()
    }

    /// True when no label holds an ASCII capital: the name its canonical
    /// key spells ([`NameBuf::set_from_key`] of [`NameRef::write_key`]'s key
    /// gives these very octets back). Length octets (at most 63) are never
    /// capitals, so the whole wire form is scanned.
    pub fn is_lowercase(&self) -> bool {
        !self.wire.iter().any(u8::is_ascii_uppercase)
    }

    /// True when the first label is `*`.
    pub fn is_wildcard(&self) -> bool {
        self.wire.len() >= 2 && self.wire[0] == 1 && self.wire[1] == b'*'
    }

    /// The name without its first label; `None` for the root.
    pub fn parent(&self) -> Option<NameRef<'a>> {
        if self.is_root() {
            return None;
        }
        let len = self.wire[0] as usize;
        Some(NameRef {
            wire: &self.wire[1 + len..],
        })
    }

    /// The suffix of this name with `n` labels (root excluded); `None` if it has fewer.
    pub fn suffix(&self, n: usize) -> Option<NameRef<'a>> {
        let count = self.label_count();
        if n > count {
            return None;
        }
        let mut name = *self;
        for _ in 0..count - n {
            name = name.parent()?;
        }
        Some(name)
    }

    /// True when this name equals `other` or lies below it (ASCII case ignored).
    pub fn ends_with(&self, other: &NameRef<'_>) -> bool {
        let (a, b) = (self.wire, other.wire);
        if b.len() > a.len() {
            return false;
        }
        // Walk label boundaries of self until the remaining length equals other's.
        let mut pos = 0;
        while a.len() - pos > b.len() {
            pos += 1 + a[pos] as usize;
        }
        a.len() - pos == b.len() && a[pos..].eq_ignore_ascii_case(b)
    }

    /// True when this name lies strictly below `other`.
    pub fn is_strictly_below(&self, other: &NameRef<'_>) -> bool {
        self.wire.len() > other.wire.len() && self.ends_with(other)
    }

    /// Writes the canonical key (see the module note) into `out`.
    pub fn write_key(&self, out: &mut KeyBuf) {
        out.len = 0;
        // Collect label start offsets (at most 127 labels in 255 octets).
        let mut starts = [0u8; 128];
        let mut n = 0;
        let mut pos = 0;
        while self.wire[pos] != 0 {
            starts[n] = pos as u8;
            n += 1;
            pos += 1 + self.wire[pos] as usize;
        }
        let mut len = 0usize;
        for i in (0..n).rev() {
            let start = starts[i] as usize;
            let label = &self.wire[start + 1..start + 1 + self.wire[start] as usize];
            for &b in label {
                let b = b.to_ascii_lowercase();
                if b <= 1 {
                    out.buf[len] = 1;
                    out.buf[len + 1] = b + 1;
                    len += 2;
                } else {
                    out.buf[len] = b;
                    len += 1;
                }
            }
            out.buf[len] = 0;
            len += 1;
        }
        out.len = len as u16;
    }

    /// The canonical key as an owned byte vector.
    pub fn key(&self) -> Box<[u8]> {
        let mut k = KeyBuf::new();
        self.write_key(&mut k);
        k.as_slice().into()
    }

    /// An owned copy.
    pub fn to_name(&self) -> Name {
        Name {
            wire: self.wire.into(),
        }
    }

    /// Canonical comparison (RFC 4034 §6.1).
    pub fn canonical_cmp(&self, other: &NameRef<'_>) -> Ordering {
        let mut a = KeyBuf::new();
        let mut b = KeyBuf::new();
        self.write_key(&mut a);
        other.write_key(&mut b);
        a.as_slice().cmp(b.as_slice())
    }
}

impl PartialEq for NameRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.wire.eq_ignore_ascii_case(other.wire)
    }
}
impl Eq for NameRef<'_> {}

impl Hash for NameRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // The lower-cased name in one write (a wire name ends with its root
        // octet: no length needed). A write per octet was a hasher call
        // each: at 10^6 zones, seconds of a start spent in the name maps.
        state.write(NameBuf::lowered(*self).as_ref().as_wire());
    }
}

impl PartialOrd for NameRef<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for NameRef<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.canonical_cmp(other)
    }
}

/// Writes one label in presentation form, escaping as RFC 1035 §5.1 allows.
pub fn write_label(f: &mut impl fmt::Write, label: &[u8]) -> fmt::Result {
    for &b in label {
        match b {
            b'.' | b'\\' | b'"' | b'(' | b')' | b';' | b'@' | b'$' => {
                f.write_char('\\')?;
                f.write_char(b as char)?;
            }
            0x21..=0x7E => f.write_char(b as char)?,
            _ => write!(f, "\\{:03}", b)?,
        }
    }
    Ok(())
}

impl fmt::Display for NameRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_root() {
            return f.write_str(".");
        }
        for label in self.labels() {
            write_label(f, label)?;
            f.write_str(".")?;
        }
        Ok(())
    }
}

impl fmt::Debug for NameRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Name({})", self)
    }
}

impl Name {
    /// The root name `.`.
    pub fn root() -> Name {
        Name {
            wire: Box::new([0]),
        }
    }

    /// Takes an uncompressed absolute wire-form name, checking it.
    pub fn from_wire(wire: &[u8]) -> Result<Name, NameError> {
        validate_wire(wire)?;
        Ok(Name { wire: wire.into() })
    }

    /// Parses a name in presentation form (RFC 1035 §5.1): `\X` and `\DDD` escapes;
    /// a name without a final dot is relative to `origin`. `@` is not special here.
    pub fn parse(text: &str, origin: Option<&Name>) -> Result<Name, NameError> {
        Self::parse_bytes(text.as_bytes(), origin)
    }

    /// As [`Name::parse`], for bytes.
    pub fn parse_bytes(text: &[u8], origin: Option<&Name>) -> Result<Name, NameError> {
        if text.is_empty() {
            return Err(NameError::Empty);
        }
        if text == b"." {
            return Ok(Name::root());
        }
        let mut wire = Vec::with_capacity(text.len() + 2);
        let mut label_start = 0;
        wire.push(0);
        let mut i = 0;
        let mut absolute = false;
        while i < text.len() {
            let c = text[i];
            match c {
                b'.' => {
                    let len = wire.len() - label_start - 1;
                    if len == 0 {
                        return Err(NameError::EmptyLabel);
                    }
                    wire[label_start] = len as u8;
                    if i + 1 == text.len() {
                        absolute = true;
                    } else {
                        label_start = wire.len();
                        wire.push(0);
                    }
                    i += 1;
                    continue;
                }
                b'\\' => {
                    let next = *text.get(i + 1).ok_or(NameError::BadEscape)?;
                    if next.is_ascii_digit() {
                        let d = text.get(i + 1..i + 4).ok_or(NameError::BadEscape)?;
                        if !d.iter().all(u8::is_ascii_digit) {
                            return Err(NameError::BadEscape);
                        }
                        let v = (d[0] - b'0') as u32 * 100
                            + (d[1] - b'0') as u32 * 10
                            + (d[2] - b'0') as u32;
                        if v > 255 {
                            return Err(NameError::BadEscape);
                        }
                        wire.push(v as u8);
                        i += 4;
                    } else {
                        wire.push(next);
                        i += 2;
                    }
                }
                _ => {
                    wire.push(c);
                    i += 1;
                }
            }
            if wire.len() - label_start - 1 > MAX_LABEL_LEN {
                return Err(NameError::LabelTooLong);
            }
        }
        if absolute {
            wire.push(0);
        } else {
            let len = wire.len() - label_start - 1;
            if len == 0 {
                return Err(NameError::EmptyLabel);
            }
            wire[label_start] = len as u8;
            let origin = origin.ok_or(NameError::Relative)?;
            wire.extend_from_slice(&origin.wire);
        }
        if wire.len() > MAX_NAME_LEN {
            return Err(NameError::NameTooLong);
        }
        Ok(Name { wire: wire.into() })
    }

    /// Borrows this name.
    pub fn as_ref(&self) -> NameRef<'_> {
        NameRef { wire: &self.wire }
    }

    /// The wire form, root label included.
    pub fn as_wire(&self) -> &[u8] {
        &self.wire
    }

    /// `label` prepended to this name (e.g. `*` for a wildcard).
    pub fn prepend(&self, label: &[u8]) -> Result<Name, NameError> {
        if label.is_empty() {
            return Err(NameError::EmptyLabel);
        }
        if label.len() > MAX_LABEL_LEN {
            return Err(NameError::LabelTooLong);
        }
        if self.wire.len() + 1 + label.len() > MAX_NAME_LEN {
            return Err(NameError::NameTooLong);
        }
        let mut wire = Vec::with_capacity(self.wire.len() + 1 + label.len());
        wire.push(label.len() as u8);
        wire.extend_from_slice(label);
        wire.extend_from_slice(&self.wire);
        Ok(Name { wire: wire.into() })
    }

    /// A lower-cased copy.
    pub fn to_lowercase(&self) -> Name {
        Name {
            wire: self.wire.to_ascii_lowercase().into(),
        }
    }

    /// The canonical key.
    pub fn key(&self) -> Box<[u8]> {
        self.as_ref().key()
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Self) -> bool {
        self.as_ref() == other.as_ref()
    }
}
impl Eq for Name {}
impl Hash for Name {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_ref().hash(state)
    }
}
impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Name {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_ref().cmp(&other.as_ref())
    }
}
impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_ref().fmt(f)
    }
}
impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_ref().fmt(f)
    }
}
impl std::str::FromStr for Name {
    type Err = NameError;
    /// Parses an absolute name; a missing final dot is accepted (relative to the root).
    fn from_str(s: &str) -> Result<Name, NameError> {
        Name::parse(s, Some(&Name::root()))
    }
}

impl Default for NameBuf {
    fn default() -> Self {
        Self::new()
    }
}

impl NameBuf {
    /// An empty buffer holding the root name.
    pub const fn new() -> Self {
        NameBuf {
            buf: [0; MAX_NAME_LEN],
            len: 1,
        }
    }

    /// Reads a possibly compressed name from `msg` (a whole DNS message) at
    /// `pos` into this buffer. Returns the offset just after the name as it
    /// sits at `pos` (after the first pointer, if any). Pointers must point
    /// strictly backwards, which also rules out loops, and not into the header.
    pub fn read_compressed(&mut self, msg: &[u8], pos: usize) -> Result<usize, NameError> {
        let mut len = 0usize;
        let mut cur = pos;
        let mut end = None;
        // Lowest offset reached so far: every pointer must go below it.
        let mut floor = pos;
        loop {
            let b = *msg.get(cur).ok_or(NameError::Truncated)? as usize;
            match b & 0xC0 {
                0x00 => {
                    if b == 0 {
                        if len + 1 > MAX_NAME_LEN {
                            return Err(NameError::NameTooLong);
                        }
                        self.buf[len] = 0;
                        len += 1;
                        self.len = len as u8;
                        return Ok(end.unwrap_or(cur + 1));
                    }
                    let label = msg.get(cur + 1..cur + 1 + b).ok_or(NameError::Truncated)?;
                    if len + 1 + b + 1 > MAX_NAME_LEN {
                        return Err(NameError::NameTooLong);
                    }
                    self.buf[len] = b as u8;
                    self.buf[len + 1..len + 1 + b].copy_from_slice(label);
                    len += 1 + b;
                    cur += 1 + b;
                }
                0xC0 => {
                    let lo = *msg.get(cur + 1).ok_or(NameError::Truncated)? as usize;
                    let target = ((b & 0x3F) << 8) | lo;
                    if end.is_none() {
                        end = Some(cur + 2);
                    }
                    // Into the header, forward, at itself or looping: refused
                    // (Knot DNS refuses pointers below the 12-octet header too).
                    if target < HEADER_LEN || target >= floor {
                        return Err(NameError::BadPointer);
                    }
                    floor = target;
                    cur = target;
                }
                _ => return Err(NameError::BadLabelType),
            }
        }
    }

    /// `name` lower-cased, its canonical form for comparing and hashing
    /// (RFC 4034 §6.2, RFC 4343: ASCII letters only; length octets are
    /// below 64 and stay as they are). The one lower-casing of a name that
    /// does not allocate; [`Name::to_lowercase`] is the owned one.
    pub fn lowered(name: NameRef<'_>) -> NameBuf {
        let mut b = NameBuf::new();
        b.set(name);
        b.buf[..b.len as usize].make_ascii_lowercase();
        b
    }

    /// Copies a name in.
    pub fn set(&mut self, name: NameRef<'_>) {
        let w = name.as_wire();
        self.buf[..w.len()].copy_from_slice(w);
        self.len = w.len() as u8;
    }

    /// The name held.
    pub fn as_ref(&self) -> NameRef<'_> {
        NameRef {
            wire: &self.buf[..self.len as usize],
        }
    }

    /// Sets the name whose canonical key is `rel_key` (labels of a key, see
    /// the module note) followed by `suffix`: the inverse of
    /// [`NameRef::write_key`] for the labels below `suffix`, lower-cased.
    /// Fails on a malformed key or a name longer than 255 octets.
    pub fn set_from_key(&mut self, rel_key: &[u8], suffix: NameRef<'_>) -> Result<(), NameError> {
        // Label ends (the 0 terminators) in key order, i.e. last label first.
        let mut ends = [0u16; 128];
        let mut n = 0;
        for (i, &b) in rel_key.iter().enumerate() {
            if b == 0 {
                if n == ends.len() {
                    return Err(NameError::NameTooLong);
                }
                ends[n] = i as u16;
                n += 1;
            }
        }
        if rel_key.last().is_some_and(|&b| b != 0) {
            return Err(NameError::Truncated);
        }
        let mut len = 0usize;
        for j in (0..n).rev() {
            let start = if j == 0 { 0 } else { ends[j - 1] as usize + 1 };
            let label = &rel_key[start..ends[j] as usize];
            let at = len;
            len += 1;
            if !label.contains(&1) {
                // No escaped octet (the common case): the label as it is.
                let end = len + label.len();
                if end > MAX_NAME_LEN {
                    return Err(NameError::NameTooLong);
                }
                if label.is_empty() || label.len() > MAX_LABEL_LEN {
                    return Err(NameError::LabelTooLong);
                }
                self.buf[len..end].copy_from_slice(label);
                self.buf[at] = label.len() as u8;
                len = end;
                continue;
            }
            let mut i = 0;
            while i < label.len() {
                let mut b = label[i];
                if b == 1 {
                    b = match label.get(i + 1) {
                        Some(&e @ (1 | 2)) => e - 1,
                        _ => return Err(NameError::BadLabelType),
                    };
                    i += 1;
                }
                i += 1;
                if len >= MAX_NAME_LEN {
                    return Err(NameError::NameTooLong);
                }
                self.buf[len] = b;
                len += 1;
            }
            let l = len - at - 1;
            if l == 0 || l > MAX_LABEL_LEN {
                return Err(NameError::LabelTooLong);
            }
            self.buf[at] = l as u8;
        }
        let w = suffix.as_wire();
        if len + w.len() > MAX_NAME_LEN {
            return Err(NameError::NameTooLong);
        }
        self.buf[len..len + w.len()].copy_from_slice(w);
        self.len = (len + w.len()) as u8;
        Ok(())
    }

    /// Replaces the suffix `old` (which this name must end with) by `new`
    /// (DNAME substitution, RFC 6672 §2.2). Fails with `NameTooLong`.
    pub fn replace_suffix(&mut self, old: NameRef<'_>, new: NameRef<'_>) -> Result<(), NameError> {
        let keep = self.len as usize - old.wire_len();
        let total = keep + new.wire_len();
        if total > MAX_NAME_LEN {
            return Err(NameError::NameTooLong);
        }
        self.buf[keep..total].copy_from_slice(new.as_wire());
        self.len = total as u8;
        Ok(())
    }
}

impl fmt::Debug for NameBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_ref().fmt(f)
    }
}

impl Default for KeyBuf {
    fn default() -> Self {
        Self::new()
    }
}

impl KeyBuf {
    /// An empty key (the root's key).
    pub const fn new() -> Self {
        KeyBuf {
            buf: [0; MAX_KEY_LEN],
            len: 0,
        }
    }

    /// The key bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }

    /// Makes the key `key` (a name's canonical key, as
    /// [`NameRef::write_key`] writes it); false, the key unchanged, when it
    /// is longer than [`MAX_KEY_LEN`].
    pub fn set(&mut self, key: &[u8]) -> bool {
        let Some(dst) = self.buf.get_mut(..key.len()) else {
            return false;
        };
        dst.copy_from_slice(key);
        self.len = key.len() as u16;
        true
    }
}

impl fmt::Debug for KeyBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyBuf({:?})", self.as_slice())
    }
}

/// Number of labels (root excluded) encoded in a canonical key.
pub fn key_label_count(key: &[u8]) -> usize {
    key.iter().filter(|&&b| b == 0).count()
}

/// True when the (possibly compressed) name at `pos` in `msg` is, byte for
/// byte, `name` — without decoding it into a buffer. Pointers follow the
/// rules of [`NameBuf::read_compressed`]; anything malformed is "not equal".
pub fn equals_at(msg: &[u8], pos: usize, name: NameRef<'_>) -> bool {
    let want = name.as_wire();
    let (mut cur, mut at, mut floor) = (pos, 0usize, pos);
    loop {
        let Some(&b) = msg.get(cur) else {
            return false;
        };
        match b & 0xC0 {
            0x00 => {
                let n = usize::from(b) + 1;
                match (msg.get(cur..cur + n), want.get(at..at + n)) {
                    (Some(have), Some(w)) if crate::short::common_prefix(have, w) == n => {}
                    _ => return false,
                }
                if b == 0 {
                    return at + 1 == want.len();
                }
                at += n;
                cur += n;
            }
            0xC0 => {
                let Some(&lo) = msg.get(cur + 1) else {
                    return false;
                };
                let target = (usize::from(b & 0x3F) << 8) | usize::from(lo);
                if target < HEADER_LEN || target >= floor {
                    return false;
                }
                floor = target;
                cur = target;
            }
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn equals_at_follows_pointers_and_compares_bytes() {
        // Header, then "www.example." at 12, then "mail" + pointer to "example." (16).
        let mut msg = vec![0u8; 12];
        msg.extend_from_slice(b"\x03www\x07example\x00");
        let mail = msg.len();
        msg.extend_from_slice(b"\x04mail\xc0\x10");
        let n = |s: &str| s.parse::<Name>().unwrap();
        assert!(equals_at(&msg, 12, n("www.example.").as_ref()));
        assert!(equals_at(&msg, mail, n("mail.example.").as_ref()));
        assert!(!equals_at(&msg, mail, n("mail.example.net.").as_ref()));
        assert!(!equals_at(&msg, mail, n("mail.").as_ref()));
        assert!(
            !equals_at(&msg, 12, n("WWW.example.").as_ref()),
            "byte for byte"
        );
        // A pointer forward or into the header: not a name.
        let mut bad = msg.clone();
        bad.extend_from_slice(b"\xc0\x05");
        assert!(!equals_at(&bad, bad.len() - 2, n("x.").as_ref()));
        assert!(!equals_at(&msg, msg.len(), n(".").as_ref()), "past the end");
    }

    use super::*;

    fn n(s: &str) -> Name {
        s.parse().unwrap()
    }

    #[test]
    fn lowered_is_to_lowercase_without_allocating() {
        // ASCII letters only: an escaped 0xC1 ('Á' in Latin-1) and '@'/'['
        // (around 'A'..'Z') stay; a 63-octet label's length octet too.
        for text in [
            "WwW.ExAmPlE.",
            ".",
            "\\193\\064\\091Z.a.",
            &format!("{}.COM.", "Q".repeat(63)),
        ] {
            let name = n(text);
            let low = NameBuf::lowered(name.as_ref());
            assert_eq!(low.as_ref().as_wire(), &*name.to_lowercase().wire, "{text}");
            assert!(low.as_ref() == name.as_ref(), "equal ignoring case: {text}");
        }
        let low = NameBuf::lowered(n("\\193\\064\\091Z.").as_ref());
        assert_eq!(low.as_ref().as_wire(), b"\x04\xc1@[z\x00");
    }

    #[test]
    fn lowercase_names_are_the_ones_their_keys_spell() {
        for s in [
            "a.b.example.",
            "A.b.example.",
            "a.B.",
            "\\000\\001x.y.",
            "\\065.",
            "\\193\\064\\091.",
            "*.w.",
            ".",
        ] {
            let name = n(s);
            let mut spelled = NameBuf::new();
            spelled.set_from_key(&name.key(), NameRef::root()).unwrap();
            let same = spelled.as_ref().as_wire() == name.as_wire();
            assert_eq!(name.as_ref().is_lowercase(), same, "{s}");
        }
        let mut k = KeyBuf::new();
        assert!(k.set(b"com\0example\0"));
        assert_eq!(k.as_slice(), b"com\0example\0");
        assert!(!k.set(&[b'a'; MAX_KEY_LEN + 1]));
        assert_eq!(k.as_slice(), b"com\0example\0");
    }

    #[test]
    fn key_round_trip() {
        let origin = n("Example.");
        for s in [
            "a.b.example.",
            "\\000\\001x.y.example.",
            "example.",
            "*.w.example.",
        ] {
            let name = n(s);
            let full = name.key();
            let okey = origin.key();
            let mut buf = NameBuf::new();
            buf.set_from_key(&full[okey.len()..], origin.as_ref())
                .unwrap();
            assert_eq!(buf.as_ref(), name.as_ref(), "{s}");
            assert_eq!(buf.as_ref().key(), full);
        }
        let mut buf = NameBuf::new();
        assert!(buf.set_from_key(b"a", NameRef::root()).is_err());
        assert!(buf.set_from_key(b"x\0", NameRef::root()).is_ok());
        assert_eq!(buf.as_ref(), n("x.").as_ref());
        assert!(buf.set_from_key(&[0], NameRef::root()).is_err());
        assert!(buf.set_from_key(&[1, 7, 0], NameRef::root()).is_err());
        // Labels of 63 octets fit, 64 do not; nor do names past 255 octets.
        let mut key = vec![b'a'; 63];
        key.push(0);
        assert!(buf.set_from_key(&key, NameRef::root()).is_ok());
        key.insert(0, b'a');
        assert!(buf.set_from_key(&key, NameRef::root()).is_err());
        let long: Vec<u8> = (0..5)
            .flat_map(|_| [b'b'; 60].into_iter().chain([0]))
            .collect();
        assert!(buf.set_from_key(&long[..61 * 4], NameRef::root()).is_ok());
        assert!(buf.set_from_key(&long, NameRef::root()).is_err());
    }

    #[test]
    fn parse_and_print() {
        assert_eq!(n("www.Example.com.").to_string(), "www.Example.com.");
        assert_eq!(n(".").to_string(), ".");
        assert_eq!(
            n("a\\.b.c.").labels_for_test(),
            vec![b"a.b".to_vec(), b"c".to_vec()]
        );
        assert_eq!(n("\\065\\000.x.").to_string(), "A\\000.x.");
        let origin = n("example.com.");
        assert_eq!(
            Name::parse("www", Some(&origin)).unwrap().to_string(),
            "www.example.com."
        );
        assert_eq!(Name::parse("www", None), Err(NameError::Relative));
        assert_eq!(Name::parse("a..b.", None), Err(NameError::EmptyLabel));
        assert_eq!(Name::parse("a\\25", None), Err(NameError::BadEscape));
        assert_eq!(Name::parse("a\\256.", None), Err(NameError::BadEscape));
        let long = "a".repeat(64) + ".";
        assert_eq!(Name::parse(&long, None), Err(NameError::LabelTooLong));
        let too_long = "abcdefghi.".repeat(26);
        assert_eq!(Name::parse(&too_long, None), Err(NameError::NameTooLong));
    }

    impl Name {
        fn labels_for_test(&self) -> Vec<Vec<u8>> {
            self.as_ref().labels().map(|l| l.to_vec()).collect()
        }
    }

    #[test]
    fn canonical_order_rfc4034() {
        // The example list of RFC 4034 §6.1, in order.
        let names = [
            "example.",
            "a.example.",
            "yljkjljk.a.example.",
            "Z.a.example.",
            "zABC.a.EXAMPLE.",
            "z.example.",
            "\\001.z.example.",
            "*.z.example.",
            "\\200.z.example.",
        ];
        let parsed: Vec<Name> = names.iter().map(|s| n(s)).collect();
        for w in parsed.windows(2) {
            assert_eq!(w[0].cmp(&w[1]), Ordering::Less, "{} < {}", w[0], w[1]);
            assert!(w[0].key() < w[1].key());
        }
    }

    #[test]
    fn keys_are_prefixes_of_descendants() {
        let a = n("example.com.").key();
        let b = n("x.y.EXAMPLE.com.").key();
        assert!(b.starts_with(&a));
        assert_eq!(key_label_count(&b), 4);
        assert_eq!(&*n(".").key(), b"");
    }

    #[test]
    fn relations() {
        let a = n("www.example.com.");
        let b = n("EXAMPLE.com.");
        assert!(a.as_ref().ends_with(&b.as_ref()));
        assert!(a.as_ref().is_strictly_below(&b.as_ref()));
        assert!(!b.as_ref().ends_with(&a.as_ref()));
        assert!(!n("xexample.com.").as_ref().ends_with(&b.as_ref()));
        assert_eq!(a.as_ref().parent().unwrap(), n("example.com.").as_ref());
        assert_eq!(a.as_ref().suffix(1).unwrap(), n("com.").as_ref());
        assert_eq!(a.as_ref().label_count(), 3);
        assert!(n("*.x.").as_ref().is_wildcard());
        assert_eq!(n("A.b."), n("a.B."));
    }

    #[test]
    fn decompress() {
        // A 12-octet header, "example.com." at 12, then "www" + pointer to 12.
        let mut msg = vec![0u8; 12];
        msg.push(7);
        msg.extend_from_slice(b"example");
        msg.push(3);
        msg.extend_from_slice(b"com");
        msg.push(0);
        let www = msg.len();
        msg.extend_from_slice(&[3, b'w', b'w', b'w', 0xC0, 12]);
        let mut buf = NameBuf::new();
        let end = buf.read_compressed(&msg, www).unwrap();
        assert_eq!(end, msg.len());
        assert_eq!(buf.as_ref().to_string(), "www.example.com.");
        // Pointers to itself, forward or into the header are refused.
        let mut looped = vec![0u8; 12];
        looped.extend_from_slice(&[0xC0, 12]);
        assert_eq!(buf.read_compressed(&looped, 12), Err(NameError::BadPointer));
        let mut fwd = vec![0u8; 12];
        fwd.extend_from_slice(&[0xC0, 14, 0]);
        assert_eq!(buf.read_compressed(&fwd, 12), Err(NameError::BadPointer));
        let mut header = vec![0u8; 12];
        header.extend_from_slice(&[0xC0, 2]);
        assert_eq!(buf.read_compressed(&header, 12), Err(NameError::BadPointer));
        assert_eq!(
            buf.read_compressed(&[0x40], 0),
            Err(NameError::BadLabelType)
        );
        assert_eq!(
            buf.read_compressed(&[3, b'a'], 0),
            Err(NameError::Truncated)
        );
    }

    #[test]
    fn dname_substitution() {
        let mut buf = NameBuf::new();
        buf.set(n("a.b.old.example.").as_ref());
        buf.replace_suffix(n("old.example.").as_ref(), n("new.test.").as_ref())
            .unwrap();
        assert_eq!(buf.as_ref().to_string(), "a.b.new.test.");
    }
}
