//! Unit tests: round trips, torn tails, damage, bounds, injected I/O faults.

use super::*;
use lode_wire::{Class, Record, Rtype};
use std::fs::File;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A fresh empty folder for one test.
pub(crate) fn tempdir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "lode-journal-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn origin() -> Name {
    Name::parse("example.com.", None).unwrap()
}

fn rec(owner: &str, rtype: Rtype, ttl: u32, rdata: &[u8]) -> Record {
    Record {
        owner: Name::parse(owner, Some(&origin())).unwrap(),
        class: Class::IN,
        rtype,
        ttl,
        rdata: rdata.into(),
    }
}

fn soa(serial: u32) -> Record {
    let mut r = Vec::new();
    r.extend_from_slice(b"\x02ns\x07example\x03com\x00");
    r.extend_from_slice(b"\x05admin\x07example\x03com\x00");
    r.extend_from_slice(&serial.to_be_bytes());
    for v in [3600u32, 600, 86400, 300] {
        r.extend_from_slice(&v.to_be_bytes());
    }
    rec("@", Rtype::SOA, 3600, &r)
}

/// A small changeset from `from` to `to` adding one A record.
fn cs(from: u32, to: u32) -> Changeset {
    Changeset {
        soa_from: soa(from),
        soa_to: soa(to),
        removed: vec![],
        added: vec![rec(&format!("h{to}"), Rtype::A, 300, &to.to_be_bytes())],
    }
}

/// Changesets 1→2, 2→3, …, n→n+1.
fn chain(n: u32) -> Vec<Changeset> {
    (1..=n).map(|s| cs(s, s + 1)).collect()
}

fn open(path: &Path) -> (Journal, Recovery) {
    Journal::open(path, &origin(), Settings::default()).unwrap()
}

/// Injected faults and counts of calls.
#[derive(Debug, Default)]
struct Plan {
    /// The next write stores this many bytes, then fails with ENOSPC.
    write_fail_after: Option<usize>,
    /// The next fdatasync fails with EIO.
    fail_sync: bool,
    /// Every ftruncate fails with EIO.
    fail_set_len: bool,
    writes: usize,
    syncs: usize,
}

#[derive(Debug)]
struct Faulty {
    f: File,
    plan: Arc<Mutex<Plan>>,
}

impl Backing for Faulty {
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut p = self.plan.lock().unwrap();
        p.writes += 1;
        if let Some(n) = p.write_fail_after.take() {
            let n = n.min(buf.len());
            std::os::unix::fs::FileExt::write_all_at(&self.f, &buf[..n], offset)?;
            return Err(io::Error::from_raw_os_error(28)); // ENOSPC
        }
        std::os::unix::fs::FileExt::write_all_at(&self.f, buf, offset)
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(&self.f, buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        let mut p = self.plan.lock().unwrap();
        p.syncs += 1;
        if std::mem::take(&mut p.fail_sync) {
            return Err(io::Error::from_raw_os_error(5)); // EIO
        }
        self.f.sync_data()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.f.sync_all()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        if self.plan.lock().unwrap().fail_set_len {
            return Err(io::Error::from_raw_os_error(5));
        }
        self.f.set_len(len)
    }
}

fn open_faulty(path: &Path) -> (Journal, Arc<Mutex<Plan>>) {
    let plan = Arc::new(Mutex::new(Plan::default()));
    let p = plan.clone();
    let wrap: Wrap = Arc::new(move |f| Box::new(Faulty { f, plan: p.clone() }));
    let (j, _) = Journal::open_with(path, &origin(), Settings::default(), wrap).unwrap();
    (j, plan)
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

#[test]
fn creates_missing_file_and_folder_at_the_first_append() {
    let d = tempdir("create");
    let path = d.join("sub/dir/example.com.journal");
    let (mut j, rec) = open(&path);
    assert!(rec.created);
    assert!(rec.changesets.is_empty());
    assert_eq!(j.depth(), 0);
    assert_eq!(j.first_serial(), None);
    // Nothing written until something is to be kept.
    assert!(!path.exists() && !d.join("sub").exists());
    assert_eq!(j.changes_since(1).unwrap(), None);
    j.clear().unwrap();
    assert!(!path.exists());
    j.append(&chain(1)).unwrap();
    assert_eq!(j.usage_bytes(), file_len(&path));
    let (_, rec) = open(&path);
    assert!(!rec.created && rec.torn_tail.is_none() && rec.damage.is_none());
    assert_eq!(rec.changesets.len(), 1);
}

#[test]
fn a_released_journal_opens_its_file_again_when_needed() {
    let d = tempdir("release");
    let path = d.join("example.com.journal");
    let (mut j, _) = open(&path);
    j.append(&chain(2)).unwrap();
    j.release();
    assert_eq!(j.changes_since(1).unwrap().map(|c| c.len()), Some(2));
    j.release();
    j.append(&[cs(3, 4)]).unwrap();
    j.release();
    j.flushed_through(2).unwrap();
    j.release();
    assert_eq!(j.changes_since(2).unwrap().map(|c| c.len()), Some(2));
    let (_, rec) = open(&path);
    assert_eq!(rec.changesets.len(), 2);
}

#[test]
fn the_newest_upstream_mark_is_found_again_and_served_history_has_none() {
    let d = tempdir("mark");
    let path = d.join("example.com.journal");
    let (mut j, _) = open(&path);
    j.append_marked(&chain(2), Some(1000)).unwrap();
    // A change made here (signatures due) carries no mark.
    j.append(&[cs(3, 4)]).unwrap();
    let (mut j, rec) = open(&path);
    assert_eq!(rec.upstream_serial, Some(1000));
    assert_eq!(rec.changesets, chain(3));
    // The history served by IXFR is the changesets as they were.
    assert_eq!(j.changes_since(1).unwrap(), Some(chain(3)));
    j.append_marked(&[cs(4, 5)], Some(1007)).unwrap();
    j.flushed_through(4).unwrap();
    let (_, rec) = open(&path);
    assert_eq!(rec.upstream_serial, Some(1007));
    assert_eq!(rec.changesets.len(), 1);
}

#[test]
fn round_trip_every_kind_of_record() {
    let d = tempdir("roundtrip");
    let path = d.join("j");
    let long_label = "x".repeat(63);
    let long_name = format!("{long_label}.{long_label}.{long_label}.a");
    let mut all = Vec::new();
    let mut serial = 0xFFFF_FFF0u32; // the chain wraps around 2^32
    for i in 0..300u32 {
        let next = serial.wrapping_add(1 + i % 3);
        let mut c = Changeset {
            soa_from: soa(serial),
            soa_to: soa(next),
            removed: vec![],
            added: vec![],
        };
        let kinds: Vec<Record> = vec![
            rec("a", Rtype::A, i, &[10, 0, 0, i as u8]),
            rec(
                "aaaa",
                Rtype::AAAA,
                60,
                &[0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            ),
            rec("@", Rtype::NS, 86400, b"\x02ns\x07example\x03com\x00"),
            rec(
                "mx",
                Rtype::MX,
                1,
                b"\x00\x0a\x04mail\x07example\x03com\x00",
            ),
            rec("t", Rtype::TXT, 0, b"\x05hello\x00\xffbytes"),
            rec(
                "*.w",
                Rtype::CNAME,
                u32::MAX,
                b"\x01a\x07example\x03com\x00",
            ),
            rec("e", Rtype::NULL, 5, &[]),
            rec("unknown", Rtype(65280), 5, &[0, 1, 2, 255]),
            rec(&long_name, Rtype::TXT, 7, &[0xAB; 255]),
            Record {
                class: Class::CH,
                ..rec("ch", Rtype::TXT, 1, b"\x01x")
            },
            rec("MiXeD.Case", Rtype::A, 9, &[1, 2, 3, 4]),
        ];
        for (k, r) in kinds.into_iter().enumerate() {
            if (k + i as usize) & 1 == 0 {
                c.added.push(r);
            } else {
                c.removed.push(r);
            }
        }
        if i % 50 == 0 {
            c.added.push(rec("big", Rtype::NULL, 1, &vec![0x5A; 65535]));
        }
        if i % 7 == 0 {
            c.removed.clear();
            c.added.clear();
        }
        all.push(c);
        serial = next;
    }
    let (mut j, _) = open(&path);
    for batch in all.chunks(37) {
        j.append(batch).unwrap();
    }
    assert_eq!(j.depth(), all.len());
    assert_eq!(j.usage_bytes(), file_len(&path));
    assert_eq!(j.first_serial(), Some(0xFFFF_FFF0));
    assert_eq!(j.last_serial(), Some(serial));
    assert_eq!(j.changes_since(0xFFFF_FFF0).unwrap().unwrap(), all);
    let mid = all[120].serial_from();
    assert_eq!(j.changes_since(mid).unwrap().unwrap(), all[120..]);
    assert_eq!(j.changes_since(serial).unwrap(), Some(vec![]));
    assert_eq!(j.changes_since(0x1234_5678).unwrap(), None);
    drop(j);

    let (j, rec) = open(&path);
    assert!(rec.torn_tail.is_none() && rec.damage.is_none() && !rec.created);
    assert_eq!(rec.changesets, all);
    // Owner case is kept byte for byte.
    let mixed = rec.changesets[1]
        .added
        .iter()
        .chain(&rec.changesets[1].removed)
        .find(|r| r.owner.as_wire().starts_with(b"\x05MiXeD"));
    assert!(mixed.is_some());
    assert_eq!(j.depth(), all.len());
}

#[test]
fn append_checks_serials_and_sizes() {
    let d = tempdir("checks");
    let (mut j, _) = open(&d.join("j"));
    j.append(&[cs(1, 2)]).unwrap();
    let len = j.usage_bytes();
    assert!(matches!(
        j.append(&[cs(3, 4)]),
        Err(JournalError::Discontinuous {
            expected: 2,
            found: 3
        })
    ));
    assert!(matches!(
        j.append(&[cs(2, 3), cs(4, 5)]),
        Err(JournalError::Discontinuous { .. })
    ));
    assert!(matches!(
        j.append(&[cs(2, 2)]),
        Err(JournalError::SerialNotAdvancing { .. })
    ));
    assert!(matches!(
        j.append(&[cs(2, 1)]),
        Err(JournalError::SerialNotAdvancing { .. })
    ));
    let mut huge = cs(3, 4);
    huge.added.push(rec("x", Rtype::NULL, 1, &vec![0; 65536]));
    assert!(matches!(
        j.append(&[cs(2, 3), huge]),
        Err(JournalError::TooLarge { .. })
    ));
    assert_eq!(j.usage_bytes(), len);
    assert_eq!(j.depth(), 1);
    j.append(&[]).unwrap();
    j.append(&[cs(2, 3)]).unwrap();
    assert_eq!(open(&d.join("j")).1.changesets, chain(2));
}

#[test]
fn wrong_origin_version_and_magic_are_clear_errors() {
    let d = tempdir("header");
    let path = d.join("j");
    open(&path).0.append(&chain(1)).unwrap();
    let other = Name::parse("example.net.", None).unwrap();
    let e = Journal::open(&path, &other, Settings::default()).unwrap_err();
    assert!(matches!(e, JournalError::WrongOrigin { .. }), "{e}");
    assert!(e.to_string().contains("example.com"));
    // Origins compare without case.
    let upper = Name::parse("EXAMPLE.com.", None).unwrap();
    assert!(Journal::open(&path, &upper, Settings::default()).is_ok());

    let mut data = std::fs::read(&path).unwrap();
    data[8] = 3;
    std::fs::write(&path, &data).unwrap();
    let e = Journal::open(&path, &origin(), Settings::default()).unwrap_err();
    assert!(
        matches!(e, JournalError::UnsupportedVersion { version: 3, .. }),
        "{e}"
    );
    std::fs::write(&path, b"$ORIGIN example.com.\n").unwrap();
    let e = Journal::open(&path, &origin(), Settings::default()).unwrap_err();
    assert!(matches!(e, JournalError::NotAJournal { .. }), "{e}");
    std::fs::write(&path, b"LODE").unwrap();
    let e = Journal::open(&path, &origin(), Settings::default()).unwrap_err();
    assert!(matches!(e, JournalError::BadHeader { .. }), "{e}");
}

/// Every cut inside the last record is a torn tail: cut off, reported, and
/// the journal appends fine afterwards.
#[test]
fn torn_tail_at_every_offset_of_the_last_record() {
    let d = tempdir("torn");
    let path = d.join("j");
    let all = chain(4);
    let (mut j, _) = open(&path);
    j.append(&all[..3]).unwrap();
    let start = j.usage_bytes();
    j.append(&all[3..]).unwrap();
    drop(j);
    let full = std::fs::read(&path).unwrap();
    for cut in start as usize..full.len() {
        std::fs::write(&path, &full[..cut]).unwrap();
        let (mut j, rec) = open(&path);
        assert_eq!(rec.changesets, all[..3], "cut at {cut}");
        assert!(rec.damage.is_none(), "cut at {cut}");
        if cut == start as usize {
            assert!(rec.torn_tail.is_none());
        } else {
            assert_eq!(
                rec.torn_tail,
                Some(TornTail {
                    offset: start,
                    bytes: cut as u64 - start
                }),
                "cut at {cut}"
            );
        }
        assert_eq!(file_len(&path), start);
        j.append(&all[3..]).unwrap();
        drop(j);
        assert_eq!(std::fs::read(&path).unwrap(), full);
    }
}

/// Zeros after the end (a crash after the size grew but before the data
/// reached the disk) are a torn tail too.
#[test]
fn zeroed_tail_is_torn() {
    let d = tempdir("zeros");
    let path = d.join("j");
    open(&path).0.append(&chain(2)).unwrap();
    let len = file_len(&path);
    let mut data = std::fs::read(&path).unwrap();
    data.extend_from_slice(&[0; 4096]);
    std::fs::write(&path, &data).unwrap();
    let (_, rec) = open(&path);
    assert_eq!(rec.changesets, chain(2));
    assert_eq!(rec.torn_tail.unwrap().bytes, 4096);
    assert_eq!(file_len(&path), len);
}

/// A bad checksum on the last record (running to the end of the file) is a
/// torn tail, not damage.
#[test]
fn bad_last_record_is_torn() {
    let d = tempdir("badlast");
    let path = d.join("j");
    let (mut j, _) = open(&path);
    j.append(&chain(2)[..1]).unwrap();
    let start = j.usage_bytes() as usize;
    j.append(&chain(2)[1..]).unwrap();
    drop(j);
    let mut data = std::fs::read(&path).unwrap();
    let at = start + (data.len() - start) / 2;
    data[at] ^= 0x04;
    std::fs::write(&path, &data).unwrap();
    let (_, rec) = open(&path);
    assert_eq!(rec.changesets, chain(1));
    assert_eq!(rec.torn_tail.unwrap().offset, start as u64);
    assert!(rec.damage.is_none());
}

/// A flipped bit anywhere in a middle record stops the replay there: the
/// prefix is kept in a new file, the damaged one is kept aside, and the
/// journal appends fine after the repair.
#[test]
fn bit_flip_in_the_middle_keeps_the_prefix() {
    let d = tempdir("flip");
    let path = d.join("example.com.journal");
    let all = chain(5);
    let (mut j, _) = open(&path);
    j.append(&all[..2]).unwrap();
    let start = j.usage_bytes() as usize;
    j.append(&all[2..3]).unwrap();
    let end = j.usage_bytes() as usize;
    j.append(&all[3..]).unwrap();
    drop(j);
    let full = std::fs::read(&path).unwrap();
    for at in start..end {
        let mut data = full.clone();
        data[at] ^= 1 << (at % 8);
        std::fs::write(&path, &data).unwrap();
        let (mut j, rec) = open(&path);
        assert_eq!(rec.changesets, all[..2], "flip at {at}");
        assert!(rec.torn_tail.is_none());
        let damage = rec.damage.expect("damage reported");
        assert_eq!(damage.offset, start as u64);
        assert_eq!(damage.file, path);
        assert_eq!(damage.dropped_bytes, (full.len() - start) as u64);
        assert!(damage.to_string().contains(&format!("byte {start}")));
        assert_eq!(
            std::fs::read(&damage.kept_as).unwrap(),
            data,
            "flip at {at}"
        );
        assert_eq!(file_len(&path), start as u64);
        assert_eq!(j.last_serial(), Some(3));
        j.append(&all[2..]).unwrap();
        drop(j);
        let (_, rec) = open(&path);
        assert_eq!(rec.changesets, all);
        assert!(rec.damage.is_none() && rec.torn_tail.is_none());
        std::fs::remove_file(&damage.kept_as).unwrap();
    }
    // No temporary files are left behind.
    let names: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
    assert_eq!(names.len(), 1);
}

/// A record whose serial does not continue the chain is reported like damage.
#[test]
fn continuity_break_is_damage() {
    let d = tempdir("continuity");
    let path = d.join("j");
    let (mut j, _) = open(&path);
    j.append(&chain(2)).unwrap();
    let len = j.usage_bytes();
    drop(j);
    let mut data = std::fs::read(&path).unwrap();
    format::encode_frame(&cs(7, 8), &mut data).unwrap();
    format::encode_frame(&cs(8, 9), &mut data).unwrap();
    std::fs::write(&path, &data).unwrap();
    let (j, rec) = open(&path);
    assert_eq!(rec.changesets, chain(2));
    let damage = rec.damage.unwrap();
    assert_eq!(damage.offset, len);
    assert_eq!(
        damage.reason,
        DamageReason::ContinuityBreak {
            expected: 3,
            found: 7
        }
    );
    assert_eq!(j.last_serial(), Some(3));
    assert_eq!(file_len(&path), len);
}

#[test]
fn bounds_and_flush() {
    let d = tempdir("flush");
    let path = d.join("j");
    let settings = Settings {
        max_usage: u64::MAX,
        max_depth: 3,
    };
    let (mut j, _) = Journal::open(&path, &origin(), settings).unwrap();
    let all = chain(5);
    j.append(&all[..3]).unwrap();
    assert!(!j.needs_flush());
    j.append(&all[3..]).unwrap(); // over the bound: still accepted
    assert!(j.needs_flush());
    assert!(matches!(
        j.flushed_through(42),
        Err(JournalError::SerialNotInHistory { serial: 42 })
    ));
    j.flushed_through(1).unwrap(); // nothing before serial 1
    assert_eq!(j.depth(), 5);
    j.flushed_through(4).unwrap();
    assert!(!j.needs_flush());
    assert_eq!(j.depth(), 2);
    assert_eq!(j.first_serial(), Some(4));
    assert_eq!(j.last_serial(), Some(6));
    assert_eq!(j.usage_bytes(), file_len(&path));
    assert_eq!(j.changes_since(2).unwrap(), None);
    assert_eq!(j.changes_since(4).unwrap().unwrap(), all[3..]);
    j.append(&[cs(6, 7)]).unwrap();
    assert_eq!(j.changes_since(5).unwrap().unwrap(), [cs(5, 6), cs(6, 7)]);
    drop(j);
    let (mut j, rec) = Journal::open(&path, &origin(), settings).unwrap();
    assert_eq!(rec.changesets, [cs(4, 5), cs(5, 6), cs(6, 7)]);
    j.flushed_through(7).unwrap();
    assert_eq!(j.depth(), 0);
    assert_eq!(j.last_serial(), None);
    j.append(&[cs(7, 8)]).unwrap();
    drop(j);
    assert_eq!(open(&path).1.changesets, [cs(7, 8)]);

    // The size bound.
    let path = d.join("k");
    let settings = Settings {
        max_usage: 2000,
        max_depth: 1000,
    };
    let (mut j, _) = Journal::open(&path, &origin(), settings).unwrap();
    let mut s = 1;
    while !j.needs_flush() {
        j.append(&[cs(s, s + 1)]).unwrap();
        s += 1;
    }
    assert!(j.usage_bytes() > 2000);
    j.flushed_through(s).unwrap();
    assert!(!j.needs_flush());
    let names: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
    assert_eq!(names.len(), 2, "no temporary files left");
}

#[test]
fn default_bounds_are_knots() {
    let s = Settings::default();
    assert_eq!(s.max_usage, 100 << 20);
    assert_eq!(s.max_depth, 20);
}

/// A batch of 1,000 changesets is one write and one fdatasync.
#[test]
fn group_commit_is_one_write_and_one_sync() {
    let d = tempdir("group");
    let path = d.join("j");
    open(&path);
    let (mut j, plan) = open_faulty(&path);
    j.append(&chain(1000)).unwrap();
    let p = plan.lock().unwrap();
    assert_eq!((p.writes, p.syncs), (1, 1));
    drop(p);
    assert_eq!(j.depth(), 1000);
    drop(j);
    assert_eq!(open(&path).1.changesets.len(), 1000);
}

/// A write that fails after any number of bytes leaves the file as it was,
/// and the next append works.
#[test]
fn failed_write_is_rolled_back() {
    let d = tempdir("failwrite");
    let path = d.join("j");
    open(&path);
    let (mut j, plan) = open_faulty(&path);
    j.append(&chain(2)).unwrap();
    let good = std::fs::read(&path).unwrap();
    let batch = [cs(3, 4), cs(4, 5)];
    let mut probe = Vec::new();
    for c in &batch {
        format::encode_frame(c, &mut probe).unwrap();
    }
    for n in 0..probe.len() {
        plan.lock().unwrap().write_fail_after = Some(n);
        let e = j.append(&batch).unwrap_err();
        assert_eq!(e.io_error().unwrap().raw_os_error(), Some(28));
        assert!(!j.is_broken());
        assert_eq!(std::fs::read(&path).unwrap(), good, "failed after {n}");
        assert_eq!(j.last_serial(), Some(3));
        assert_eq!(j.usage_bytes(), good.len() as u64);
    }
    j.append(&batch).unwrap();
    drop(j);
    assert_eq!(open(&path).1.changesets, chain(4));
}

/// A failed fdatasync is an error too, rolled back the same way.
#[test]
fn failed_sync_is_rolled_back() {
    let d = tempdir("failsync");
    let path = d.join("j");
    open(&path);
    let (mut j, plan) = open_faulty(&path);
    j.append(&chain(1)).unwrap();
    let len = file_len(&path);
    plan.lock().unwrap().fail_sync = true;
    let e = j.append(&[cs(2, 3)]).unwrap_err();
    assert_eq!(e.io_error().unwrap().raw_os_error(), Some(5));
    assert_eq!(file_len(&path), len);
    assert_eq!(j.depth(), 1);
    j.append(&[cs(2, 3)]).unwrap();
    assert_eq!(j.depth(), 2);
}

/// When even the rollback fails, the journal refuses every later write
/// while the cut cannot be made, and heals itself at the first write once
/// the disk works again: the garbage cut off first, so that a shorter
/// batch after it leaves none of it behind. Reopened while broken, it cuts
/// the garbage off as a torn tail.
#[test]
fn failed_rollback_breaks_the_journal_until_the_cut_is_made() {
    let d = tempdir("broken");
    let path = d.join("j");
    open(&path);
    let (mut j, plan) = open_faulty(&path);
    j.append(&chain(1)).unwrap();
    // A long batch torn well into its frames, and no roll-back.
    let long: Vec<Changeset> = (2..12).map(|s| cs(s, s + 1)).collect();
    {
        let mut p = plan.lock().unwrap();
        p.write_fail_after = Some(200);
        p.fail_set_len = true;
    }
    assert!(j.append(&long).unwrap_err().io_error().is_some());
    assert!(j.is_broken());
    // The disk still fails: refused, nothing written.
    assert!(matches!(
        j.append(&[cs(2, 3)]),
        Err(JournalError::Broken { .. })
    ));
    assert!(matches!(
        j.flushed_through(2),
        Err(JournalError::Broken { .. })
    ));
    // Reopened now, the garbage is a torn tail.
    let (_, rec) = Journal::open(&path, &origin(), Settings::default()).unwrap();
    assert_eq!(rec.changesets, chain(1));
    assert_eq!(rec.torn_tail.unwrap().bytes, 200);
    // The disk works again: the next write heals it.
    plan.lock().unwrap().fail_set_len = false;
    j.append(&[cs(2, 3)]).unwrap();
    assert!(!j.is_broken());
    drop(j);
    let (mut j, rec) = open(&path);
    let mut want = chain(1);
    want.push(cs(2, 3));
    assert_eq!(rec.changesets, want);
    assert!(rec.torn_tail.is_none(), "{:?}", rec.torn_tail);
    assert!(rec.damage.is_none(), "{:?}", rec.damage);
    j.append(&[cs(3, 4)]).unwrap();
}

#[test]
fn clear_drops_everything_and_stale_temps_are_told_apart() {
    let d = tempdir("clear");
    let path = d.join("j");
    let (mut j, _) = open(&path);
    j.append(&chain(3)).unwrap();
    j.clear().unwrap();
    assert_eq!((j.depth(), j.last_serial()), (0, None));
    j.append(&[cs(100, 101)]).unwrap();
    drop(j);
    // A crash in the middle of a rewrite leaves a temporary file behind.
    std::fs::write(d.join("j.tmp.12345"), b"half a journal").unwrap();
    // This process's own temporary files are writes under way: kept.
    let ours = d.join(format!("j.tmp.{}", std::process::id()));
    std::fs::write(&ours, b"being written").unwrap();
    let stale = |name: &str| crate::is_stale_temp(std::ffi::OsStr::new(name));
    assert!(stale("j.tmp.12345"));
    assert!(!stale(&format!("j.tmp.{}", std::process::id())));
    assert!(!stale("j.tmp.") && !stale("j.tmp.12a") && !stale("j"));
    std::fs::remove_file(d.join("j.tmp.12345")).unwrap();
    std::fs::remove_file(&ours).unwrap();
    let (_, rec) = open(&path);
    assert_eq!(rec.changesets, [cs(100, 101)]);
    let names: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
    assert_eq!(names.len(), 1);
}
