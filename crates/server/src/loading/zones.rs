//! Loading zones: text → records → checked, immutable [`Zone`]; many zones on
//! one thread per CPU, largest first, with a progress display.
//!
//! ```text
//!  specs ──sizes──▶ queue, largest first ──▶ thread 1: load(spec) ──┐
//!                                       └──▶ thread n: load(spec) ──┴─▶ results in spec order
//!                        ParseCounters, zone_done ──▶ progress::LoadProgress (terminal line / log)
//! ```
//!
//! A large zone file is read in 1 MiB blocks (`lode_zonefile::parse_file_each`), its records going into the builder as
//! each block is read; the builder ([`crate::loading::file_builder`]) holds
//! at most a run of them, sorting the rest in runs on disk.

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lode_zonedb::{Severity, Zone};
use lode_zonefile::{ParseCounters, ParsedZone, PosRef, Positions};

use crate::config::{ZoneSource, ZoneSpec};
use crate::loading::file_builder::FileBuilder;
use crate::loading::snapshot;
use crate::progress::{Display, LoadProgress};

/// TTL of records that have none and come before any `$TTL` (Knot's `default-ttl`).
pub const DEFAULT_TTL: u32 = 3600;

pub use crate::config::stamp::FileStamp;

/// A zone built from its source.
#[derive(Debug)]
pub struct LoadedZone {
    /// The zone.
    pub zone: Arc<Zone>,
    /// The files read (the zone file first, then its `$INCLUDE`s that hold
    /// records) with their stamps; the zone file's is taken before reading
    /// it. Empty for a built-in zone.
    pub files: Vec<(Arc<Path>, Option<FileStamp>)>,
    /// Warnings, each `file:line: warning: reason`.
    pub warnings: Vec<String>,
    /// Time spent reading and building.
    pub elapsed: Duration,
    /// True when the zone was read from its snapshot, not its text.
    pub from_snapshot: bool,
}

/// The result of loading one zone: the zone, or every problem as `file:line: reason`.
pub type LoadResult = Result<LoadedZone, Vec<String>>;

/// Loads every zone of `specs` on up to one thread per CPU, largest text
/// first, showing progress on stderr when it takes a while; results in the
/// order of `specs`. A zone that fails (or whose loader panics) does not stop
/// the others.
///
/// With `snapshot_dir`, a zone whose file has not changed since its snapshot
/// was written is read from the snapshot, and a zone read from text gets a
/// new snapshot (see [`crate::loading::snapshot`]).
pub fn load_all(specs: &[&ZoneSpec], snapshot_dir: Option<&Path>) -> Vec<LoadResult> {
    let sizes: Vec<u64> = specs.iter().map(|s| source_size(&s.source)).collect();
    let progress = LoadProgress::start(
        "loading zones",
        sizes.iter().sum(),
        specs.len(),
        Display::for_stderr(),
    );
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let start = Instant::now();
    let results = largest_first(&sizes, threads, |i| {
        let r = load_with(specs[i], Some(progress.counters()), snapshot_dir);
        progress.zone_done(sizes[i]);
        r
    });
    drop(progress);
    let secs = start.elapsed().as_secs_f64();
    if !specs.is_empty() {
        let records: u64 = results
            .iter()
            .flatten()
            .flatten()
            .map(|l| l.zone.record_count())
            .sum();
        // Text bytes of the zones read from text (snapshots are not text).
        let mut snapshots = 0;
        let mut text = 0u64;
        for (r, size) in results.iter().zip(&sizes) {
            match r {
                Some(Ok(l)) if l.from_snapshot => snapshots += 1,
                _ => text += size,
            }
        }
        let mb = text as f64 / 1e6;
        let built = results.iter().filter(|r| matches!(r, Some(Ok(_)))).count();
        let failed = specs.len() - built;
        let failed = if failed > 0 {
            format!(" ({failed} failed: the errors follow)")
        } else {
            String::new()
        };
        let from = if snapshots > 0 {
            format!(" and {snapshots} snapshot(s)")
        } else {
            String::new()
        };
        tracing::info!(
            "{built} zone(s) read and built{failed}: {mb:.1} MB of text{from}, {records} records loaded in {secs:.2} s ({:.0} MB/s of text) on {} thread(s)",
            if secs > 0.0 { mb / secs } else { 0.0 },
            threads.min(specs.len())
        );
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(vec!["internal error: the loader panicked".into()])))
        .collect()
}

/// Bytes of zone text a source holds (0 if the file cannot be read; includes not counted).
pub fn source_size(source: &ZoneSource) -> u64 {
    match source {
        ZoneSource::File(path) => std::fs::metadata(path).map_or(0, |m| m.len()),
        ZoneSource::Embedded { text, .. } => text.len() as u64,
        ZoneSource::Transfer => 0,
        ZoneSource::Catalog(m) => 64 * m.len() as u64,
    }
}

/// Runs `work(i)` for each index of `sizes` on up to `threads` threads (one
/// shared queue, largest size first, so that a big item does not start last);
/// results in index order, `None` where `work` panicked.
pub fn largest_first<T: Send>(
    sizes: &[u64],
    threads: usize,
    work: impl Fn(usize) -> T + Sync,
) -> Vec<Option<T>> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    // Stable: equal sizes keep their given order.
    order.sort_by_key(|&i| std::cmp::Reverse(sizes[i]));
    // A panic in `work` loses only its own item (the hook has reported it).
    let run = |i: usize| std::panic::catch_unwind(AssertUnwindSafe(|| work(i))).ok();
    let threads = threads.clamp(1, sizes.len().max(1));
    if threads == 1 {
        let mut out: Vec<Option<T>> = (0..sizes.len()).map(|_| None).collect();
        for i in order {
            out[i] = run(i);
        }
        return out;
    }
    let next = AtomicUsize::new(0);
    // Each result is stored as soon as it is ready.
    let slots: Mutex<Vec<Option<T>>> = Mutex::new((0..sizes.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| loop {
                    let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        return;
                    };
                    let r = run(i);
                    // Poisoned only if a thread panicked holding the lock, which
                    // the one-line store below cannot do; keep the data anyway.
                    let mut s = slots.lock().unwrap_or_else(|e| e.into_inner());
                    s[i] = r;
                })
            })
            .collect();
        for h in handles {
            if h.join().is_err() {
                tracing::error!("a zone loading thread panicked");
            }
        }
    });
    slots.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Reads, checks and builds the zone; on failure returns every problem as
/// `file:line: reason` (or `file: reason` when no record is concerned).
pub fn load(spec: &ZoneSpec) -> Result<LoadedZone, Vec<String>> {
    load_counted(spec, None)
}

/// As [`load`], advancing `counters` while the zone text is read.
pub fn load_counted(
    spec: &ZoneSpec,
    counters: Option<&ParseCounters>,
) -> Result<LoadedZone, Vec<String>> {
    load_with(spec, counters, None)
}

/// As [`load_counted`], using and refreshing snapshots in `snapshot_dir`.
pub fn load_with(
    spec: &ZoneSpec,
    counters: Option<&ParseCounters>,
    snapshot_dir: Option<&Path>,
) -> Result<LoadedZone, Vec<String>> {
    let start = Instant::now();
    let snap = match (&spec.source, snapshot_dir) {
        (ZoneSource::File(path), Some(dir)) => Some((path, snapshot::path_for(dir, &spec.name))),
        _ => None,
    };
    if let Some((path, snap)) = &snap {
        let stamp = FileStamp::of(path);
        match snapshot::read_fresh(snap, path, &spec.name) {
            Ok(zone) => {
                tracing::info!(
                    "zone {}: read from snapshot {} ({} records)",
                    spec.name,
                    snap.display(),
                    zone.record_count()
                );
                return Ok(LoadedZone {
                    zone: Arc::new(zone),
                    files: vec![(Arc::clone(path), stamp)],
                    warnings: Vec::new(),
                    elapsed: start.elapsed(),
                    from_snapshot: true,
                });
            }
            Err(snapshot::Unused::Absent) => {}
            Err(snapshot::Unused::Bad(why)) => {
                tracing::warn!(
                    "zone {}: snapshot not used, reading the zone file: {why}",
                    spec.name
                )
            }
        }
    }
    // Sorted runs go beside the snapshots when there are (a configured
    // place, not a `/tmp` that may be held in memory).
    let loaded = load_text(spec, counters, start, snapshot_dir)?;
    if let Some((path, snap)) = &snap {
        if loaded.files.len() == 1 {
            if let Err(e) = snapshot::write(snap, &loaded.zone, path) {
                tracing::warn!(
                    "zone {}: snapshot {} not written: {e}",
                    spec.name,
                    snap.display()
                );
            }
        }
    }
    Ok(loaded)
}

/// What the records of a zone being read go into.
struct Sink<'a> {
    builder: FileBuilder,
    positions: Positions,
    origin: lode_wire::Name,
    run_dir: Option<&'a Path>,
}

impl<'a> Sink<'a> {
    fn new(origin: &lode_wire::Name, run_dir: Option<&'a Path>) -> Sink<'a> {
        Sink {
            builder: FileBuilder::new(origin, lode_wire::Class::IN, false, run_dir),
            positions: Positions::default(),
            origin: origin.clone(),
            run_dir,
        }
    }

    fn add(&mut self, record: lode_wire::RecordRef<'_>, at: PosRef<'_>) {
        let tag = self.positions.push(at);
        self.builder.add(record, tag);
    }

    /// Everything handed so far dropped (the file is read again).
    fn restart(&mut self) {
        *self = Sink::new(&self.origin, self.run_dir);
    }
}

/// Reads the zone text, checks and builds. A zone file's records go into
/// the builder as they are read, block by block: the text's records are
/// never all held twice (read, then added).
fn load_text(
    spec: &ZoneSpec,
    counters: Option<&ParseCounters>,
    start: Instant,
    run_dir: Option<&Path>,
) -> Result<LoadedZone, Vec<String>> {
    let sink = std::cell::RefCell::new(Sink::new(&spec.name, run_dir));
    let add_all = |parsed: ParsedZone| {
        let mut sink = sink.borrow_mut();
        for (record, at) in parsed.records.into_iter().zip(parsed.positions) {
            sink.add(record.as_record_ref(), at.as_pos_ref());
        }
    };
    let (parsed, mut files, label) = match &spec.source {
        ZoneSource::File(path) => {
            let stamp = FileStamp::of(path);
            let parsed = lode_zonefile::parse_file_each(
                path,
                &spec.name,
                Some(DEFAULT_TTL),
                counters,
                &mut |record, at| sink.borrow_mut().add(record, at),
                &mut || sink.borrow_mut().restart(),
            );
            (
                parsed,
                vec![(path.clone(), stamp)],
                path.display().to_string(),
            )
        }
        ZoneSource::Embedded { label, text } => (
            lode_zonefile::parse_bytes(text.as_bytes(), label, &spec.name, Some(DEFAULT_TTL))
                .map(add_all),
            Vec::new(),
            label.to_string(),
        ),
        ZoneSource::Catalog(members) => {
            let text = crate::catalog::generate(&spec.name, members);
            (
                lode_zonefile::parse_bytes(
                    text.as_bytes(),
                    "catalog",
                    &spec.name,
                    Some(DEFAULT_TTL),
                )
                .map(add_all),
                Vec::new(),
                format!("the catalog of {} members", members.len()),
            )
        }
        ZoneSource::Transfer => {
            return Err(vec![format!(
                "zone {}: a secondary has no file to read: it is transferred",
                spec.name
            )])
        }
    };
    parsed.map_err(|errors| errors.iter().map(|e| e.to_string()).collect::<Vec<_>>())?;
    let Sink {
        builder, positions, ..
    } = sink.into_inner();
    // Problem tags are indexes into `positions`, so errors name file:line.
    if !files.is_empty() {
        // Included files, in order of first appearance.
        for p in positions.files() {
            if !files.iter().any(|(f, _)| **f == **p) {
                files.push((p.clone(), FileStamp::of(p)));
            }
        }
    }
    let at = |tag: Option<u32>| -> String {
        match tag.and_then(|t| positions.get(t as usize)) {
            Some(p) => p.to_string(),
            None => label.clone(),
        }
    };
    let describe = |p: &lode_zonedb::Problem| match p.severity {
        Severity::Error => format!("{}: {}", at(p.tag), p.message),
        Severity::Warning => format!("{}: warning: {}", at(p.tag), p.message),
    };
    match builder.build(counters) {
        Ok((zone, warnings)) => Ok(LoadedZone {
            zone: Arc::new(zone),
            files,
            warnings: warnings.iter().map(describe).collect(),
            elapsed: start.elapsed(),
            from_snapshot: false,
        }),
        // The zone's own problems (no SOA at the apex, …) first: a file
        // read under the wrong origin fails every record, and the cause is
        // the one line without a position.
        Err(mut problems) => {
            problems.sort_by_key(|p| p.tag.is_some());
            Err(problems.iter().map(describe).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file read under the wrong origin: the cause comes first, not after
    /// one error per record.
    #[test]
    fn a_wrong_origin_leads_with_the_missing_soa() {
        let dir = std::env::temp_dir().join(format!("lode-zones-origin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("z.zone");
        let mut text =
            String::from("$ORIGIN right.example.\n$TTL 60\n@ SOA ns hm 1 60 60 600 60\n@ NS ns\n");
        for i in 0..50 {
            text.push_str(&format!("h{i} A 192.0.2.1\n"));
        }
        std::fs::write(&file, text).unwrap();
        let spec = ZoneSpec {
            name: "wrong.example.".parse().unwrap(),
            source: ZoneSource::File(file.into()),
        };
        let errors = match load_text(&spec, None, Instant::now(), None) {
            Ok(_) => panic!("loaded under the wrong origin"),
            Err(e) => e,
        };
        assert!(errors.len() > 50, "{}", errors.len());
        assert!(errors[0].contains("SOA"), "first: {}", errors[0]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn largest_first_keeps_index_order_and_starts_big() {
        let sizes = [5, 50, 1, 50, 20];
        let started = Mutex::new(Vec::new());
        let out = largest_first(&sizes, 1, |i| {
            started.lock().unwrap().push(i);
            sizes[i] * 2
        });
        assert_eq!(out, [Some(10), Some(100), Some(2), Some(100), Some(40)]);
        assert_eq!(*started.lock().unwrap(), [1, 3, 4, 0, 2]);
        let out = largest_first(&sizes, 3, |i| sizes[i] + 1);
        assert_eq!(out, [Some(6), Some(51), Some(2), Some(51), Some(21)]);
        assert!(largest_first(&[], 4, |i| i).is_empty());
    }

    #[test]
    fn a_panic_loses_only_its_own_item() {
        for threads in [1, 2] {
            let out = largest_first(&[3, 2, 1], threads, |i| {
                assert_ne!(i, 1, "item 1 fails (expected in this test)");
                i
            });
            assert_eq!(out, [Some(0), None, Some(2)], "{threads} threads");
        }
    }
}
