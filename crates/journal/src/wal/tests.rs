//! The commit log: records made durable in groups, written back at
//! recovery into the journals that lost them, skipped for rewritten files.

use super::*;
use crate::tests::tempdir;
use crate::{Journal, Settings};
use lode_wire::{Class, Name, Record as Rr, Rtype};
use lode_zonedb::Changeset;

fn origin(n: usize) -> Name {
    Name::parse(&format!("z{n}.example."), None).unwrap()
}

fn soa(o: &Name, serial: u32) -> Rr {
    let mut r = Vec::new();
    r.extend_from_slice(b"\x02ns\x00\x05admin\x00");
    r.extend_from_slice(&serial.to_be_bytes());
    for v in [3600u32, 600, 86400, 300] {
        r.extend_from_slice(&v.to_be_bytes());
    }
    Rr {
        owner: o.clone(),
        class: Class::IN,
        rtype: Rtype::SOA,
        ttl: 3600,
        rdata: r.into(),
    }
}

fn cs(o: &Name, from: u32) -> Changeset {
    Changeset {
        soa_from: soa(o, from),
        soa_to: soa(o, from + 1),
        removed: vec![],
        added: vec![Rr {
            owner: Name::parse(&format!("h{from}"), Some(o)).unwrap(),
            class: Class::IN,
            rtype: Rtype::A,
            ttl: 300,
            rdata: from.to_be_bytes().to_vec().into(),
        }],
    }
}

/// Submits `record` and waits for its outcome.
fn commit(log: &CommitLog, record: Record) -> Result<(), WalError> {
    let (tx, rx) = mpsc::channel();
    log.submit(record, Box::new(move |r| drop(tx.send(r))));
    rx.recv().unwrap()
}

fn serials(path: &Path, o: &Name) -> Vec<u32> {
    let (_, rec) = Journal::open(path, o, Settings::default()).unwrap();
    rec.changesets.iter().map(|c| c.serial_to()).collect()
}

#[test]
fn records_lost_from_journals_are_written_back_at_recovery() {
    let dir = tempdir("recover");
    let log = CommitLog::start(&dir, recover(&dir).unwrap(), None).unwrap();
    let mut journals = Vec::new();
    for z in 0..3 {
        let o = origin(z);
        let path = dir.join(format!("z{z}.jnl"));
        let (mut j, _) = Journal::open(&path, &o, Settings::default()).unwrap();
        for s in 1..=4 {
            let d = j.append_deferred(&[cs(&o, s)], None).unwrap().unwrap();
            commit(&log, d.record).unwrap();
        }
        journals.push((path, o, j.header_len));
    }
    drop(log);
    // The crash: every journal loses what was written after its header
    // (never synced), as a file system may leave it.
    for (path, _, header_len) in &journals {
        let f = file::open_rw(path).unwrap();
        f.set_len(*header_len).unwrap();
    }
    let rec = recover(&dir).unwrap();
    assert_eq!((rec.applied, rec.skipped, rec.torn_bytes), (12, 0, 0));
    for (path, o, _) in &journals {
        assert_eq!(serials(path, o), vec![2, 3, 4, 5]);
    }
    // The old segments go; a new one is begun by the first record.
    let before = segments(&dir).unwrap();
    let log = CommitLog::start(&dir, rec, None).unwrap();
    assert!(segments(&dir).unwrap().is_empty());
    let (path, o, _) = &journals[0];
    let (mut j, _) = Journal::open(path, o, Settings::default()).unwrap();
    let d = j.append_deferred(&[cs(o, 5)], None).unwrap().unwrap();
    commit(&log, d.record).unwrap();
    let after = segments(&dir).unwrap();
    assert_eq!(after.len(), 1);
    assert!(after[0].0 > before.last().unwrap().0);
}

#[test]
fn a_rewritten_journal_is_not_written_over_and_a_torn_tail_is_ignored() {
    let dir = tempdir("rewritten");
    let log = CommitLog::start(&dir, recover(&dir).unwrap(), None).unwrap();
    let o = origin(1);
    let path = dir.join("z1.jnl");
    let (mut j, _) = Journal::open(&path, &o, Settings::default()).unwrap();
    for s in 1..=3 {
        let d = j.append_deferred(&[cs(&o, s)], None).unwrap().unwrap();
        commit(&log, d.record).unwrap();
    }
    // A flush rewrites the file (a new id): the records of the old one
    // must not land in it.
    j.flushed_through(3).unwrap();
    let d = j.append_deferred(&[cs(&o, 4)], None).unwrap().unwrap();
    commit(&log, d.record).unwrap();
    drop(log);
    drop(j);
    // A write cut short at the end of the segment.
    let (_, seg) = segments(&dir).unwrap().pop().unwrap();
    let mut data = std::fs::read(&seg).unwrap();
    data.extend_from_slice(&[7; 40]);
    std::fs::write(&seg, &data).unwrap();
    let rec = recover(&dir).unwrap();
    assert_eq!((rec.applied, rec.skipped, rec.torn_bytes), (1, 3, 40));
    assert_eq!(serials(&path, &o), vec![4, 5]);
}

#[test]
fn a_version_1_journal_gets_an_id_before_its_first_deferred_append() {
    let dir = tempdir("v1");
    let o = origin(2);
    let path = dir.join("z2.jnl");
    // A journal as an earlier build wrote it: version 1, no file id.
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"LODEJRNL");
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.push(o.as_wire().len() as u8);
    bytes.extend_from_slice(o.as_wire());
    let c = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&c.to_le_bytes());
    let header_len = bytes.len();
    format::encode_frame(&cs(&o, 1), &mut bytes).unwrap();
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(serials(&path, &o), vec![2]);

    let log = CommitLog::start(&dir, recover(&dir).unwrap(), None).unwrap();
    let (mut j, _) = Journal::open(&path, &o, Settings::default()).unwrap();
    let d = j.append_deferred(&[cs(&o, 2)], None).unwrap().unwrap();
    assert_ne!(d.record.id, 0);
    commit(&log, d.record).unwrap();
    drop(log);
    let new_header = j.header_len;
    assert_eq!(new_header, header_len as u64 + 8);
    drop(j);
    // Lose the unsynced append: recovery brings it back.
    let first_frame =
        std::fs::read(&path).unwrap()[..new_header as usize + bytes.len() - header_len].to_vec();
    std::fs::write(&path, &first_frame).unwrap();
    assert_eq!(serials(&path, &o), vec![2]);
    let rec = recover(&dir).unwrap();
    assert_eq!(rec.applied, 1);
    assert_eq!(serials(&path, &o), vec![2, 3]);
}

#[test]
fn an_undone_append_leaves_the_journal_as_before() {
    let dir = tempdir("undo");
    let o = origin(3);
    let path = dir.join("z3.jnl");
    let (mut j, _) = Journal::open(&path, &o, Settings::default()).unwrap();
    j.append(&[cs(&o, 1)]).unwrap();
    let d = j
        .append_deferred(&[cs(&o, 2), cs(&o, 3)], None)
        .unwrap()
        .unwrap();
    assert_eq!(j.last_serial(), Some(4));
    j.undo(d.undo);
    assert_eq!(j.last_serial(), Some(2));
    // The journal goes on from where it was.
    let d = j.append_deferred(&[cs(&o, 2)], None).unwrap().unwrap();
    let log = CommitLog::start(&dir, recover(&dir).unwrap(), None).unwrap();
    commit(&log, d.record).unwrap();
    drop(j);
    assert_eq!(serials(&path, &o), vec![2, 3]);
}

#[test]
fn full_segments_are_checkpointed_and_removed() {
    let dir = tempdir("rotate");
    let log = CommitLog::start_with(
        &dir,
        recover(&dir).unwrap(),
        (512, std::time::Duration::from_secs(600)),
        None,
    )
    .unwrap();
    let o = origin(4);
    let path = dir.join("z4.jnl");
    let (mut j, _) = Journal::open(&path, &o, Settings::default()).unwrap();
    for s in 1..=40 {
        let d = j.append_deferred(&[cs(&o, s)], None).unwrap().unwrap();
        commit(&log, d.record).unwrap();
    }
    // Each segment holds a few records; the closed ones go once the
    // journal is synced (in the background: wait a little).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while segments(&dir).unwrap().len() > 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(segments(&dir).unwrap().len(), 1);
    drop(log);
    drop(j);
    assert_eq!(serials(&path, &o), (2..=41).collect::<Vec<_>>());
}

#[test]
fn a_quiet_log_is_closed_and_leaves_nothing_to_read_back() {
    let dir = tempdir("idle");
    let log = CommitLog::start_with(
        &dir,
        recover(&dir).unwrap(),
        (SEGMENT_BYTES, std::time::Duration::from_millis(100)),
        None,
    )
    .unwrap();
    let o = origin(5);
    let path = dir.join("z5.jnl");
    let (mut j, _) = Journal::open(&path, &o, Settings::default()).unwrap();
    let d = j.append_deferred(&[cs(&o, 1)], None).unwrap().unwrap();
    commit(&log, d.record).unwrap();
    assert_eq!(segments(&dir).unwrap().len(), 1);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !segments(&dir).unwrap().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        segments(&dir).unwrap().is_empty(),
        "the quiet segment stayed"
    );
    // The next record begins a new one.
    let d = j.append_deferred(&[cs(&o, 2)], None).unwrap().unwrap();
    commit(&log, d.record).unwrap();
    assert_eq!(segments(&dir).unwrap().len(), 1);
    drop(log);
    drop(j);
    assert_eq!(serials(&path, &o), vec![2, 3]);
}

#[test]
fn each_commit_log_counts_its_own_syncs() {
    let (a_dir, b_dir) = (tempdir("syncs-a"), tempdir("syncs-b"));
    let a = CommitLog::start(&a_dir, recover(&a_dir).unwrap(), None).unwrap();
    let b = CommitLog::start(&b_dir, recover(&b_dir).unwrap(), None).unwrap();
    let o = origin(6);
    let (mut j, _) = Journal::open(a_dir.join("z6.jnl"), &o, Settings::default()).unwrap();
    for s in 1..=3 {
        let d = j.append_deferred(&[cs(&o, s)], None).unwrap().unwrap();
        commit(&a, d.record).unwrap();
    }
    assert_eq!((a.syncs(), b.syncs()), (3, 0));
}

#[test]
fn a_folder_that_cannot_hold_a_segment_is_a_typed_error() {
    let dir = tempdir("no-segment");
    // A file where the commit log's folder should be.
    let blocked = dir.join("not-a-folder");
    std::fs::write(&blocked, b"").unwrap();
    let log = CommitLog::start(&blocked, Recovered::default(), None).unwrap();
    let record = Record {
        path: dir.join("z7.jnl"),
        id: 1,
        offset: 0,
        frames: vec![0; 8],
    };
    let e = commit(&log, record).unwrap_err();
    assert!(matches!(e, WalError::NoSegment { .. }), "{e:?}");
    assert!(
        e.to_string().starts_with(&format!(
            "commit log: no segment could be begun in {} (",
            blocked.display()
        )),
        "{e}"
    );
    assert!(std::error::Error::source(&e).is_some());
    assert_eq!(log.syncs(), 0);
}
