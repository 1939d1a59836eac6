//! Every secondary zone's timers in one file of the journal folder,
//! `secondary-timers`: a line per change, appended,
//!
//! ```text
//!  <origin> <next refresh> <expiry> <last refresh> <serial>   (Unix seconds, 0: none;
//!                                                               the serial then served)
//!  <origin> -                                          (the zone is no longer a secondary)
//! ```
//!
//! read back at start (the last line of a zone wins) and rewritten whole
//! when it holds four times as many lines as zones. A file per zone cost an
//! inode made per zone (10^5 catalog members: 10^5 files created, a fifth of
//! the consumer's time). Timers are advice, not data: a line lost to a crash
//! or a torn write makes its zone refresh at once, as with no timers at all,
//! so appends are not synced; and a zone whose state does not hold the
//! serial its timers name (a state written since and lost, see
//! `Durability::Cached`) is refreshed at once too. The name has no dot, so no zone's own files
//! (`<zone>.jnl`, `<zone>.state`) can take it. A zone's timers file of an
//! older version (`<zone>.timers`) is read once and removed.
//!
//! The same kind of file ([`LineLog`]) keeps the serial of each zone that
//! was delivered to every NOTIFY target (`notified-serials`, lines
//! `<origin> <serial>`, written by the NOTIFY thread): a zone whose served
//! serial is another when the server starts is notified then.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use lode_wire::Name;

/// A zone's saved timers (Unix seconds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Timers {
    /// The next refresh.
    pub(crate) next: Option<u64>,
    /// When the zone expires without a refresh.
    pub(crate) expire: Option<u64>,
    /// The last successful refresh.
    pub(crate) last: Option<u64>,
    /// The serial served when they were saved (None in an older version's
    /// files).
    pub(crate) serial: Option<u32>,
}

/// What a [`LineLog`] keeps per zone: written as the words after the
/// zone's name on its line.
pub(crate) trait Entry: Copy + PartialEq + std::fmt::Debug {
    /// The words (no newline).
    fn write(&self) -> String;
    /// Parses the words; None when they do not parse (a torn line).
    fn read(words: &str) -> Option<Self>;
}

/// A value per zone in one file of the journal folder, a line appended per
/// change (the last line of a zone wins), rewritten whole when it holds
/// four times as many lines as zones; advice, not data (not synced; a
/// torn last line is cut off). The secondaries' timers ([`TimerLog`]) and
/// the serials the primary delivered to every NOTIFY target
/// (`notified-serials`) are kept so.
#[derive(Debug)]
pub(crate) struct LineLog<V> {
    inner: Mutex<Inner<V>>,
}

/// The timers of every secondary zone, and their file.
pub(crate) type TimerLog = LineLog<Timers>;

#[derive(Debug)]
struct Inner<V> {
    /// What is kept, for the warning when it cannot be.
    what: &'static str,
    path: PathBuf,
    /// Open for appending (None: nothing written yet, or not writable —
    /// timers are then kept in memory only, a warning logged once).
    file: Option<File>,
    live: HashMap<Name, V>,
    /// Lines in the file.
    lines: usize,
    warned: bool,
}

/// The file's name in the journal folder.
const FILE: &str = "secondary-timers";

impl TimerLog {
    /// Reads the timers saved in `dir`.
    pub(crate) fn open(dir: &Path) -> TimerLog {
        LineLog::open_file(
            dir.join(FILE),
            "secondary zones' timers not saved; after a restart they refresh at once",
        )
    }

    /// The timers saved for `origin` (from its own file of an older
    /// version, `old`, if the log has none; that file is then removed).
    pub(crate) fn get(&self, origin: &Name, old: &Path) -> Timers {
        if let Some(t) = self.value(origin) {
            return t;
        }
        let Ok(text) = std::fs::read_to_string(old) else {
            return Timers::default();
        };
        let mut it = text.split_whitespace().map(|w| w.parse::<u64>().ok());
        let t = Timers {
            next: it.next().flatten(),
            expire: it.next().flatten().filter(|&e| e > 0),
            last: it.next().flatten().filter(|&l| l > 0),
            serial: None,
        };
        self.set(origin, t);
        let _ = std::fs::remove_file(old);
        t
    }
}

impl<V: Entry> LineLog<V> {
    /// Reads the log at `path` (`what`: the warning when it cannot be written).
    pub(crate) fn open_file(path: PathBuf, what: &'static str) -> LineLog<V> {
        let mut live = HashMap::new();
        let mut lines = 0;
        if let Ok(text) = std::fs::read_to_string(&path) {
            // A torn last line is cut off, so the next append starts a line.
            if !text.is_empty() && !text.ends_with('\n') {
                let whole = text.rfind('\n').map_or(0, |i| i + 1);
                let cut = OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .and_then(|f| f.set_len(whole as u64));
                if let Err(e) = cut {
                    tracing::warn!("{}: torn line not cut off: {e}", path.display());
                }
            }
            for line in text.lines() {
                lines += 1;
                if let Some((origin, t)) = parse::<V>(line) {
                    match t {
                        Some(t) => live.insert(origin, t),
                        None => live.remove(&origin),
                    };
                }
            }
        }
        // Opened for appending at the first line written: a server with no
        // secondary zone writes no file.
        let inner = Inner {
            what,
            path,
            file: None,
            live,
            lines,
            warned: false,
        };
        LineLog {
            inner: Mutex::new(inner),
        }
    }

    /// The value kept for `origin`.
    pub(crate) fn value(&self, origin: &Name) -> Option<V> {
        self.lock().live.get(origin).copied()
    }

    /// Keeps `v` for `origin`.
    pub(crate) fn set(&self, origin: &Name, v: V) {
        self.lock().set(origin, v);
    }

    /// The zones it keeps a value for.
    pub(crate) fn names(&self) -> Vec<Name> {
        self.lock().live.keys().cloned().collect()
    }

    /// Forgets `origin` (no longer a secondary here).
    pub(crate) fn remove(&self, origin: &Name) {
        let mut inner = self.lock();
        if inner.live.remove(origin).is_some() {
            let line = format!("{origin} -\n");
            inner.append(&line);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<V>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl<V: Entry> Inner<V> {
    fn set(&mut self, origin: &Name, t: V) {
        if self.live.get(origin) == Some(&t) {
            return;
        }
        self.live.insert(origin.clone(), t);
        let line = line(origin, &t);
        self.append(&line);
    }

    fn append(&mut self, line: &str) {
        if self.lines >= 1024 && self.lines >= 4 * self.live.len() {
            self.rewrite();
            return; // the rewrite holds every zone's timers now
        }
        if self.file.is_none() {
            self.reopen();
        }
        let written = match &mut self.file {
            Some(f) => f.write_all(line.as_bytes()),
            None => return, // reopen warned
        };
        match written {
            Ok(()) => self.lines += 1,
            Err(e) => self.warn(&e),
        }
    }

    /// Writes the live timers to a new file and puts it in place.
    fn rewrite(&mut self) {
        let tmp = self.path.with_extension("tmp");
        let mut text = String::with_capacity(self.live.len() * 64);
        for (origin, t) in &self.live {
            text.push_str(&line(origin, t));
        }
        let done = std::fs::write(&tmp, &text).and_then(|()| std::fs::rename(&tmp, &self.path));
        match done {
            Ok(()) => {
                self.lines = self.live.len();
                self.reopen();
            }
            Err(e) => self.warn(&e),
        }
    }

    fn reopen(&mut self) {
        match OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
        {
            Ok(f) => self.file = Some(f),
            Err(e) => {
                self.file = None;
                self.warn(&e);
            }
        }
    }

    fn warn(&mut self, e: &std::io::Error) {
        if !self.warned {
            self.warned = true;
            tracing::warn!("{}: {} ({e})", self.path.display(), self.what);
        }
    }
}

fn line<V: Entry>(origin: &Name, v: &V) -> String {
    format!("{origin} {}\n", v.write())
}

/// A line: the zone and its value, or None for a zone removed. A line
/// that does not parse (torn) is skipped.
fn parse<V: Entry>(line: &str) -> Option<(Name, Option<V>)> {
    let (origin, rest) = line.split_once(' ')?;
    let origin: Name = origin.parse().ok()?;
    let origin = origin.to_lowercase();
    if rest == "-" {
        return Some((origin, None));
    }
    Some((origin, Some(V::read(rest)?)))
}

impl Entry for Timers {
    fn write(&self) -> String {
        let serial = self.serial.map_or("-".to_string(), |s| s.to_string());
        format!(
            "{} {} {} {serial}",
            self.next.unwrap_or(0),
            self.expire.unwrap_or(0),
            self.last.unwrap_or(0)
        )
    }

    fn read(words: &str) -> Option<Timers> {
        let mut words = words.split(' ');
        let mut num = || -> Option<Option<u64>> {
            let n: u64 = words.next()?.parse().ok()?;
            Some((n > 0).then_some(n))
        };
        let next = num()?;
        let expire = num()?;
        let last = num()?;
        let serial = match words.next()? {
            "-" => None,
            s => Some(s.parse().ok()?),
        };
        if words.next().is_some() {
            return None;
        }
        Some(Timers {
            next,
            expire,
            last,
            serial,
        })
    }
}

/// A zone's serial delivered to every NOTIFY target.
impl Entry for u32 {
    fn write(&self) -> String {
        self.to_string()
    }

    fn read(words: &str) -> Option<u32> {
        words.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("lode-timers-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn timers_read_back_after_a_restart() {
        let dir = temp("back");
        let a: Name = "a.example.".parse().unwrap();
        let b: Name = "b.example.".parse().unwrap();
        let t1 = Timers {
            next: Some(1_800_000_000),
            expire: Some(1_900_000_000),
            last: None,
            serial: Some(4_000_000_000),
        };
        let t2 = Timers {
            next: Some(5),
            expire: None,
            last: Some(7),
            serial: None,
        };
        {
            let log = TimerLog::open(&dir);
            assert!(!dir.join(FILE).exists(), "no file before a line");
            log.set(&a, t1);
            log.set(&b, t1);
            log.set(&a, t2);
            log.remove(&b);
        }
        let log = TimerLog::open(&dir);
        assert_eq!(log.get(&a, &dir.join("a.timers")), t2);
        assert_eq!(log.get(&b, &dir.join("b.timers")), Timers::default());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_torn_line_is_skipped_and_an_old_file_taken_over() {
        let dir = temp("torn");
        let a: Name = "a.example.".parse().unwrap();
        let c: Name = "c.example.".parse().unwrap();
        std::fs::write(
            dir.join(FILE),
            "a.example. 10 20 30 -\nc.example. 1 2 3 9\na.example. 11 2",
        )
        .unwrap();
        // A zone's own file, as an older version wrote it.
        let old = dir.join("d.example.timers");
        std::fs::write(&old, format!("{:020} {:020} {:020}\n", 40, 50, 0)).unwrap();
        let log = TimerLog::open(&dir);
        let want = |n, e, l, serial| Timers {
            next: Some(n),
            expire: Some(e),
            last: Some(l),
            serial,
        };
        assert_eq!(log.get(&a, &dir.join("x")), want(10, 20, 30, None));
        assert_eq!(log.get(&c, &dir.join("x")), want(1, 2, 3, Some(9)));
        let d: Name = "d.example.".parse().unwrap();
        let got = log.get(&d, &old);
        assert_eq!((got.next, got.expire, got.last), (Some(40), Some(50), None));
        assert!(!old.exists(), "the old file is taken over");
        drop(log);
        let log = TimerLog::open(&dir);
        assert_eq!(log.get(&d, &old).next, Some(40));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_file_is_rewritten_when_mostly_old_lines() {
        let dir = temp("rewrite");
        let log = TimerLog::open(&dir);
        let zones: Vec<Name> = (0..10)
            .map(|i| format!("z{i}.example.").parse().unwrap())
            .collect();
        for round in 1..=500u64 {
            for z in &zones {
                log.set(
                    z,
                    Timers {
                        next: Some(round),
                        expire: None,
                        last: None,
                        serial: Some(1),
                    },
                );
            }
        }
        let lines = std::fs::read_to_string(dir.join(FILE))
            .unwrap()
            .lines()
            .count();
        assert!(lines < 1100, "{lines} lines for 10 zones");
        drop(log);
        let log = TimerLog::open(&dir);
        for z in &zones {
            assert_eq!(log.get(z, &dir.join("x")).next, Some(500));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
