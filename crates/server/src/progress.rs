//! Progress of a long zone load, shown while it runs.
//!
//! ```text
//!  loader threads ──ParseCounters (bytes, records)──┐
//!                 ──zone_done(bytes)────────────────┤  (atomics, no lock)
//!                                                   ▼
//!                             reporter thread, wakes every 250 ms
//!                 stderr a terminal: after 2 s, one line redrawn in place, erased at the end
//!                 otherwise: a log line every 10 s (tracing, or stderr if no subscriber)
//! ```
//!
//! Parsing a zone and building it take about the same time, so the fraction
//! done counts both halves: bytes parsed, and bytes of zones built.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lode_zonefile::ParseCounters;

/// When and how often the reporter shows the figures.
#[derive(Debug, Clone, Copy)]
struct Timing {
    /// How long a load runs before the terminal line appears.
    show_after: Duration,
    /// How often the terminal line is redrawn.
    redraw_every: Duration,
    /// How often a progress line is logged when stderr is not a terminal.
    log_every: Duration,
}

/// The timing of [`LoadProgress::start`].
const TIMING: Timing = Timing {
    show_after: Duration::from_secs(2),
    redraw_every: Duration::from_millis(250),
    log_every: Duration::from_secs(10),
};

/// Where progress goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Display {
    /// A line redrawn in place on stderr (a terminal).
    Terminal,
    /// A log line now and then.
    Log,
    /// Nothing (counters only).
    Off,
}

impl Display {
    /// [`Display::Terminal`] when stderr is a terminal, else [`Display::Log`].
    pub fn for_stderr() -> Display {
        if std::io::stderr().is_terminal() {
            Display::Terminal
        } else {
            Display::Log
        }
    }
}

/// The figures of a load, shared by the loaders and the reporter.
#[derive(Debug)]
struct Shared {
    what: String,
    total_bytes: u64,
    zones: u64,
    parse: ParseCounters,
    built_bytes: AtomicU64,
    zones_done: AtomicU64,
    start: Instant,
}

/// A load in progress: loaders advance [`LoadProgress::counters`] and call
/// [`LoadProgress::zone_done`]; a reporter thread shows the figures until the
/// value is dropped (which erases the terminal line).
#[derive(Debug)]
pub struct LoadProgress {
    shared: Arc<Shared>,
    stop: Option<mpsc::Sender<()>>,
    reporter: Option<JoinHandle<()>>,
}

impl LoadProgress {
    /// Starts showing the progress of loading `zones` zones of `total_bytes`
    /// bytes of text; `what` names the work (`loading zones`).
    pub fn start(what: &str, total_bytes: u64, zones: usize, display: Display) -> LoadProgress {
        Self::start_on(
            what,
            total_bytes,
            zones,
            display,
            TIMING,
            Box::new(std::io::stderr()),
        )
    }

    /// As [`LoadProgress::start`], writing the terminal line (or the log
    /// lines when no tracing subscriber is set) to `out`.
    fn start_on(
        what: &str,
        total_bytes: u64,
        zones: usize,
        display: Display,
        timing: Timing,
        mut out: Box<dyn Write + Send>,
    ) -> LoadProgress {
        let shared = Arc::new(Shared {
            what: what.to_string(),
            total_bytes,
            zones: zones as u64,
            parse: ParseCounters::default(),
            built_bytes: AtomicU64::new(0),
            zones_done: AtomicU64::new(0),
            start: Instant::now(),
        });
        let (stop, stopped) = mpsc::channel();
        let reporter = if display == Display::Off {
            None
        } else {
            let s = shared.clone();
            // Without the thread the load goes on, only unseen.
            std::thread::Builder::new()
                .name("lode-progress".into())
                .spawn(move || report(&s, display, timing, &stopped, &mut out))
                .ok()
        };
        LoadProgress {
            shared,
            stop: Some(stop),
            reporter,
        }
    }

    /// The counters the zone-file readers advance.
    pub fn counters(&self) -> &ParseCounters {
        &self.shared.parse
    }

    /// Marks one zone of `bytes` bytes of text as finished (built or failed).
    pub fn zone_done(&self, bytes: u64) {
        self.shared.built_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.shared.zones_done.fetch_add(1, Ordering::Relaxed);
    }

    /// The progress line as it would be shown now.
    pub fn line(&self) -> String {
        status_line(&self.shared.snapshot(), self.shared.start.elapsed())
    }
}

impl Drop for LoadProgress {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(r) = self.reporter.take() {
            // The reporter only formats and writes; if it panicked there is nothing to undo.
            let _ = r.join();
        }
    }
}

/// The figures at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Snapshot {
    total_bytes: u64,
    parsed_bytes: u64,
    built_bytes: u64,
    records: u64,
    /// Records laid out in zones still being built.
    laid_out: u64,
    zones: u64,
    zones_done: u64,
}

impl Shared {
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            total_bytes: self.total_bytes,
            // Included files can make the text read exceed the sizes known at the start.
            parsed_bytes: self.parse.bytes().min(self.total_bytes),
            built_bytes: self.built_bytes.load(Ordering::Relaxed),
            records: self.parse.records(),
            laid_out: self.parse.laid_out(),
            zones: self.zones,
            zones_done: self.zones_done.load(Ordering::Relaxed),
        }
    }
}

/// The reporter thread: shows the figures until `stopped` says the load is over.
fn report(
    shared: &Shared,
    display: Display,
    timing: Timing,
    stopped: &mpsc::Receiver<()>,
    err: &mut dyn Write,
) {
    let mut shown = false;
    let mut last_log = shared.start;
    let width = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<usize>().ok())
        .filter(|&w| w >= 20)
        .unwrap_or(80);
    // Until the sender is dropped (or, never, sends): the load is over.
    while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(timing.redraw_every) {
        let elapsed = shared.start.elapsed();
        let line = || {
            format!(
                "{}: {}",
                shared.what,
                status_line(&shared.snapshot(), elapsed)
            )
        };
        match display {
            Display::Terminal if elapsed >= timing.show_after => {
                // "\r" and erase-line: the line is redrawn in place; it must
                // not wrap, or the erase would leave its first part behind.
                let _ = write!(err, "\r\x1b[2K{}", fit(&line(), width));
                let _ = err.flush();
                shown = true;
            }
            Display::Log if last_log.elapsed() >= timing.log_every => {
                last_log = Instant::now();
                if tracing::dispatcher::has_been_set() {
                    tracing::info!("{}", line());
                } else {
                    let _ = writeln!(err, "lode: {}", line());
                }
            }
            _ => {}
        }
    }
    if shown {
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
    }
}

/// `212/395 MB (54%), 2.68 M records, 3/10 zones, 405 MB/s, ETA 4 s`: bytes
/// parsed, records read, zones done (parsed and built), parse rate, time
/// left; once the text is read, the records laid out in the zones being
/// built instead of the rate (`393.69 M records, 0/1 zones, 120.34 M laid
/// out, ETA 6 min 5 s`).
fn status_line(s: &Snapshot, elapsed: Duration) -> String {
    let mb = |b: u64| b as f64 / 1e6;
    let secs = elapsed.as_secs_f64();
    let mut line = format!("{:.0}/{:.0} MB", mb(s.parsed_bytes), mb(s.total_bytes));
    if s.total_bytes > 0 {
        line.push_str(&format!(
            " ({:.0}%)",
            100.0 * s.parsed_bytes as f64 / s.total_bytes as f64
        ));
    }
    line.push_str(&format!(
        ", {:.2} M records, {}/{} zones",
        s.records as f64 / 1e6,
        s.zones_done,
        s.zones
    ));
    let reading = s.parsed_bytes < s.total_bytes;
    if secs > 0.0 && reading {
        line.push_str(&format!(", {:.0} MB/s", mb(s.parsed_bytes) / secs));
    }
    if s.laid_out > 0 && !reading {
        line.push_str(&format!(", {:.2} M laid out", s.laid_out as f64 / 1e6));
    }
    // Parsing and building each count for half of the work; records laid
    // out count as the bytes of text they came from, on average.
    let laid_out_bytes = if s.records > 0 {
        (s.laid_out as f64 * s.parsed_bytes as f64 / s.records as f64) as u64
    } else {
        0
    };
    let built = (s.built_bytes + laid_out_bytes).min(s.total_bytes);
    let done = (s.parsed_bytes + built) as f64;
    let all = 2.0 * s.total_bytes as f64;
    if done > 0.0 && done < all && secs > 0.0 {
        let left = secs * (all - done) / done;
        line.push_str(&format!(", ETA {}", short_duration(left)));
    }
    line
}

/// `line` cut to less than `width` characters.
fn fit(line: &str, width: usize) -> &str {
    match line.char_indices().nth(width - 1) {
        Some((at, _)) => &line[..at],
        None => line,
    }
}

/// `42 s`, `3 min 5 s`.
fn short_duration(secs: f64) -> String {
    let s = secs.round() as u64;
    if s < 60 {
        format!("{s} s")
    } else {
        format!("{} min {} s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_shows_fraction_rate_and_time_left() {
        let s = Snapshot {
            total_bytes: 400_000_000,
            parsed_bytes: 200_000_000,
            built_bytes: 0,
            records: 2_500_000,
            laid_out: 0,
            zones: 10,
            zones_done: 0,
        };
        let line = status_line(&s, Duration::from_secs(1));
        // Half parsed, nothing built: a quarter of the work in 1 s, 3 s left.
        assert_eq!(
            line,
            "200/400 MB (50%), 2.50 M records, 0/10 zones, 200 MB/s, ETA 3 s"
        );
        let done = Snapshot {
            parsed_bytes: 400_000_000,
            built_bytes: 400_000_000,
            zones_done: 10,
            ..s
        };
        assert!(!status_line(&done, Duration::from_secs(2)).contains("ETA"));
        // All read in 1 s, one zone left whose build laid out a quarter of
        // its records 1 s later: 2.5 of 4 halves done in 2 s, 1.2 s left.
        let merging = Snapshot {
            parsed_bytes: 400_000_000,
            records: 4_000_000,
            laid_out: 1_000_000,
            zones: 1,
            ..s
        };
        assert_eq!(
            status_line(&merging, Duration::from_secs(2)),
            "400/400 MB (100%), 4.00 M records, 0/1 zones, 1.00 M laid out, ETA 1 s"
        );
        assert_eq!(fit("abcdef", 4), "abc");
        assert_eq!(fit("abc", 4), "abc");
        assert_eq!(short_duration(185.0), "3 min 5 s");
    }

    #[test]
    fn zone_done_feeds_the_line_and_drop_stops_the_reporter() {
        let p = LoadProgress::start("test", 1000, 2, Display::Log);
        p.zone_done(600);
        assert!(p.line().contains("1/2 zones"), "{}", p.line());
        // Joins the reporter, which wakes at least every `redraw_every`.
        drop(p);
    }

    /// What the reporter wrote, shared with the test.
    #[derive(Clone, Default)]
    struct Sink(Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Runs a load of 1000 bytes (half of it done at once) until what the
    /// reporter wrote satisfies `enough` (5 s at most); returns that and the time taken.
    fn shown(display: Display, enough: impl Fn(&str) -> bool) -> (String, Duration) {
        let sink = Sink::default();
        let timing = Timing {
            show_after: Duration::ZERO,
            redraw_every: Duration::from_millis(5),
            log_every: Duration::from_millis(20),
        };
        let start = Instant::now();
        let p = LoadProgress::start_on("test", 1000, 2, display, timing, Box::new(sink.clone()));
        let text = || String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        if display == Display::Terminal {
            // The first lines, before anything is done.
            while text().is_empty() && start.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        p.zone_done(500);
        while !enough(&text()) && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(p);
        (text(), start.elapsed())
    }

    #[test]
    fn terminal_line_is_redrawn_and_erased_at_the_end() {
        let (t, _) = shown(Display::Terminal, |t| t.contains("1/2 zones"));
        assert!(t.starts_with("\r\x1b[2Ktest: 0/0 MB (0%)"), "{t:?}");
        assert!(t.contains("1/2 zones"), "{t:?}");
        assert!(t.ends_with("\r\x1b[2K"), "{t:?}");
        assert!(!t.contains('\n'), "{t:?}");
    }

    #[test]
    fn log_lines_come_now_and_then() {
        if tracing::dispatcher::has_been_set() {
            return; // the lines would go to the subscriber
        }
        let (t, took) = shown(Display::Log, |t| t.lines().count() >= 3);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines.len() >= 3, "{t:?}");
        assert!(lines.iter().all(|l| l.starts_with("lode: test: ")), "{t:?}");
        assert!(lines.iter().any(|l| l.contains("1/2 zones")), "{t:?}");
        // One line per `log_every` (20 ms), not one per redraw (5 ms).
        let most = took.as_millis() as usize / 20 + 1;
        assert!(
            lines.len() <= most,
            "{} lines in {took:?}: {t:?}",
            lines.len()
        );
    }
}
