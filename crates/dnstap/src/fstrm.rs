//! Frame Streams (fstrm, the framing of dnstap): data frames are a 32-bit
//! big-endian length and the payload; a control frame is an escape (length
//! 0), its own length, its type and fields (CONTENT_TYPE). A file holds
//! START, data frames, STOP. A socket is bidirectional:
//!
//! ```text
//!  writer                      reader
//!    READY (content types) ─▶
//!                           ◀─ ACCEPT (content type)
//!    START (content type)  ─▶
//!    data frames …         ─▶
//!    STOP                  ─▶
//!                           ◀─ FINISH
//! ```

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The content type of dnstap payloads.
pub const CONTENT_TYPE: &[u8] = b"protobuf:dnstap.Dnstap";

/// Control frame types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Control {
    /// Reader to writer: the content type is accepted.
    Accept = 1,
    /// Writer: data frames follow.
    Start = 2,
    /// Writer: no more data frames.
    Stop = 3,
    /// Writer to reader: the content types offered.
    Ready = 4,
    /// Reader to writer: STOP received, closing.
    Finish = 5,
}

impl Control {
    /// The type of a control frame's type field.
    fn from_u32(v: u32) -> Option<Control> {
        Some(match v {
            1 => Control::Accept,
            2 => Control::Start,
            3 => Control::Stop,
            4 => Control::Ready,
            5 => Control::Finish,
            _ => return None,
        })
    }
}

/// Field type of a content type in a control frame.
const FIELD_CONTENT_TYPE: u32 = 1;
/// Largest control frame read (fstrm's own limit is 512 bytes).
const MAX_CONTROL: usize = 512;

/// A control frame with the escape: `kind` and, for ACCEPT, START and READY,
/// the content type.
pub fn control_frame(kind: Control) -> Vec<u8> {
    let with_type = matches!(kind, Control::Accept | Control::Start | Control::Ready);
    let mut body = (kind as u32).to_be_bytes().to_vec();
    if with_type {
        body.extend_from_slice(&FIELD_CONTENT_TYPE.to_be_bytes());
        body.extend_from_slice(&(CONTENT_TYPE.len() as u32).to_be_bytes());
        body.extend_from_slice(CONTENT_TYPE);
    }
    let mut frame = 0u32.to_be_bytes().to_vec();
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

/// A control frame read back: its type and content types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlFrame {
    /// Its type.
    pub kind: Control,
    /// The CONTENT_TYPE fields.
    pub content_types: Vec<Vec<u8>>,
}

/// Why a control frame could not be read.
fn bad(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("frame streams: {why}"))
}

/// Parses a control frame's body (after the escape and length).
pub fn parse_control(body: &[u8]) -> io::Result<ControlFrame> {
    let word = |at: usize| -> io::Result<u32> {
        body.get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| bad("short control frame"))
    };
    let kind = Control::from_u32(word(0)?).ok_or_else(|| bad("unknown control frame type"))?;
    let mut content_types = Vec::new();
    let mut at = 4;
    while at < body.len() {
        let field = word(at)?;
        let len = word(at + 4)? as usize;
        let value = body
            .get(at + 8..at + 8 + len)
            .ok_or_else(|| bad("control field past the frame"))?;
        if field == FIELD_CONTENT_TYPE {
            content_types.push(value.to_vec());
        }
        at += 8 + len;
    }
    Ok(ControlFrame {
        kind,
        content_types,
    })
}

/// Reads one control frame (escape, length, body) from `r`.
pub fn read_control(r: &mut impl Read) -> io::Result<ControlFrame> {
    let mut head = [0u8; 8];
    r.read_exact(&mut head)?;
    if head[..4] != [0, 0, 0, 0] {
        return Err(bad("a data frame where a control frame was expected"));
    }
    let len = u32::from_be_bytes([head[4], head[5], head[6], head[7]]) as usize;
    if len > MAX_CONTROL {
        return Err(bad("control frame too long"));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    parse_control(&body)
}

/// Where the writer thread sends frames.
pub(crate) trait Output: Send {
    /// True when a frame written now would reach a reader (a socket output
    /// reconnects here when its back-off is over).
    fn available(&mut self) -> bool;
    /// Writes one data frame (length prefix included).
    fn write_frame(&mut self, frame: &[u8]) -> io::Result<()>;
    /// Nothing queued: push buffered frames out.
    fn flush(&mut self);
    /// Ends the stream (STOP; FINISH awaited on a socket).
    fn close(&mut self);
}

/// A dnstap file: START, data frames, STOP.
pub(crate) struct FileOutput {
    out: BufWriter<File>,
}

impl FileOutput {
    /// Creates (truncates) `path` and writes the START frame.
    pub(crate) fn create(path: &Path) -> io::Result<FileOutput> {
        let mut out = BufWriter::with_capacity(64 << 10, File::create(path)?);
        out.write_all(&control_frame(Control::Start))?;
        out.flush()?;
        Ok(FileOutput { out })
    }
}

impl Output for FileOutput {
    fn available(&mut self) -> bool {
        true
    }
    fn write_frame(&mut self, frame: &[u8]) -> io::Result<()> {
        self.out.write_all(frame)
    }
    fn flush(&mut self) {
        let _ = self.out.flush();
    }
    fn close(&mut self) {
        let _ = self.out.write_all(&control_frame(Control::Stop));
        let _ = self.out.flush();
    }
}

/// How long a reader may take to answer the handshake or to take a frame.
const SOCKET_TIMEOUT: Duration = Duration::from_secs(2);
/// First and last wait before reconnecting to a reader that is gone.
const BACKOFF_MIN: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// At most one warning about a missing reader per this much time.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// A dnstap reader on a Unix socket, reconnected with back-off.
pub(crate) struct UnixOutput {
    path: PathBuf,
    stream: Option<BufWriter<UnixStream>>,
    next_try: Instant,
    backoff: Duration,
    last_warning: Option<Instant>,
}

impl UnixOutput {
    /// An output to the reader listening at `path` (connected on first use).
    pub(crate) fn new(path: PathBuf) -> UnixOutput {
        UnixOutput {
            path,
            stream: None,
            next_try: Instant::now(),
            backoff: BACKOFF_MIN,
            last_warning: None,
        }
    }

    /// Connects and runs READY / ACCEPT / START.
    fn handshake(&self) -> io::Result<BufWriter<UnixStream>> {
        let mut s = UnixStream::connect(&self.path)?;
        s.set_read_timeout(Some(SOCKET_TIMEOUT))?;
        s.set_write_timeout(Some(SOCKET_TIMEOUT))?;
        s.write_all(&control_frame(Control::Ready))?;
        let accept = read_control(&mut s)?;
        if accept.kind != Control::Accept {
            return Err(bad("the reader did not ACCEPT"));
        }
        if !accept.content_types.is_empty()
            && !accept.content_types.iter().any(|t| t == CONTENT_TYPE)
        {
            return Err(bad("the reader does not accept protobuf:dnstap.Dnstap"));
        }
        s.write_all(&control_frame(Control::Start))?;
        Ok(BufWriter::with_capacity(64 << 10, s))
    }

    /// The reader is gone (`why`): waits before trying again; warns at most
    /// once a minute.
    fn lost(&mut self, why: &io::Error) {
        self.stream = None;
        self.next_try = Instant::now() + self.backoff;
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
        let now = Instant::now();
        if self
            .last_warning
            .is_none_or(|t| now.duration_since(t) >= WARN_EVERY)
        {
            self.last_warning = Some(now);
            tracing::warn!(
                "dnstap: no reader at {} ({why}); messages are dropped until one is back",
                self.path.display()
            );
        }
    }
}

impl Output for UnixOutput {
    fn available(&mut self) -> bool {
        if self.stream.is_some() {
            return true;
        }
        if Instant::now() < self.next_try {
            return false;
        }
        match self.handshake() {
            Ok(s) => {
                tracing::info!("dnstap: connected to the reader at {}", self.path.display());
                self.stream = Some(s);
                self.backoff = BACKOFF_MIN;
                true
            }
            Err(e) => {
                self.lost(&e);
                false
            }
        }
    }

    fn write_frame(&mut self, frame: &[u8]) -> io::Result<()> {
        let Some(s) = self.stream.as_mut() else {
            return Err(io::ErrorKind::NotConnected.into());
        };
        let r = s.write_all(frame);
        if let Err(e) = &r {
            self.lost(e);
        }
        r
    }

    fn flush(&mut self) {
        if let Some(s) = self.stream.as_mut() {
            if let Err(e) = s.flush() {
                self.lost(&e);
            }
        }
    }

    fn close(&mut self) {
        if let Some(mut s) = self.stream.take() {
            let stopped = s
                .write_all(&control_frame(Control::Stop))
                .and_then(|()| s.flush());
            if stopped.is_ok() {
                // FINISH, or the reader's timeout: either way we close.
                let _ = read_control(s.get_mut());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_frames_round_trip() {
        let start = control_frame(Control::Start);
        // escape, length 34, START, CONTENT_TYPE, 22, the type.
        assert_eq!(&start[..4], &[0, 0, 0, 0]);
        assert_eq!(&start[4..8], &34u32.to_be_bytes());
        assert_eq!(&start[8..12], &2u32.to_be_bytes());
        assert_eq!(&start[12..16], &1u32.to_be_bytes());
        assert_eq!(&start[16..20], &22u32.to_be_bytes());
        assert_eq!(&start[20..], CONTENT_TYPE);
        let back = read_control(&mut &start[..]).unwrap();
        assert_eq!(back.kind, Control::Start);
        assert_eq!(back.content_types, vec![CONTENT_TYPE.to_vec()]);
        let stop = control_frame(Control::Stop);
        assert_eq!(stop, [0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 3]);
        assert_eq!(read_control(&mut &stop[..]).unwrap().kind, Control::Stop);
        // Bad input is an error, not a panic.
        for bad in [
            &[0u8, 0, 0, 1][..],
            &[0, 0, 0, 0, 0, 0, 0, 2, 0, 0],
            &[0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 9],
            &[0, 0, 0, 0, 0, 0, 0, 12, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 9],
            &[1, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 1],
            &[0, 0, 0, 0, 0xff, 0, 0, 4, 0, 0, 0, 1],
        ] {
            assert!(read_control(&mut &bad[..]).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_file_is_start_frames_stop() {
        let path = std::env::temp_dir().join(format!("lode-fstrm-{}.tap", std::process::id()));
        let mut f = FileOutput::create(&path).unwrap();
        assert!(f.available());
        f.write_frame(&[0, 0, 0, 3, b'a', b'b', b'c']).unwrap();
        f.close();
        let bytes = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let start = control_frame(Control::Start);
        let stop = control_frame(Control::Stop);
        assert_eq!(&bytes[..start.len()], &start[..]);
        assert_eq!(
            &bytes[start.len()..start.len() + 7],
            &[0, 0, 0, 3, b'a', b'b', b'c']
        );
        assert_eq!(&bytes[start.len() + 7..], &stop[..]);
    }
}
