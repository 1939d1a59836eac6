//! Transfers in through a zone's writer: a changeset that does not apply
//! leaves the served version and the journal as they were; one that
//! applies is journaled (the IXFR history) and published; a whole new
//! version (AXFR) drops the history and is published.

use std::path::PathBuf;
use std::sync::{mpsc, Arc};

use arc_swap::ArcSwap;
use lode_wire::{Class, Name, Record, Rtype};
use lode_zonedb::{Changeset, ZoneBuilder, ZoneSet};

use super::{start_writer, History, Updates, Work};
use crate::config::{Config, ConfigFile, Options};
use crate::publish::Publisher;

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lode-xfr-writer-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const ZONE: &str = "t.test.";

fn zone_text(serial: u32, extra: &str) -> String {
    format!("$ORIGIN {ZONE}\n$TTL 300\n@ SOA ns hostmaster {serial} 60 60 600 60\n@ NS ns\nns A 192.0.2.1\n{extra}")
}

fn build(text: &str) -> lode_zonedb::Zone {
    let origin: Name = ZONE.parse().unwrap();
    let parsed = lode_zonefile::parse_bytes(text.as_bytes(), "test", &origin, Some(300)).unwrap();
    let mut b = ZoneBuilder::new(origin);
    for r in parsed.records {
        b.add(r, 0);
    }
    b.build().unwrap().0
}

fn soa(serial: u32) -> Record {
    let z = build(&zone_text(serial, ""));
    z.soa_record()
}

fn a_record(owner: &str, last: u8) -> Record {
    Record {
        owner: format!("{owner}.{ZONE}").parse().unwrap(),
        class: Class::IN,
        rtype: Rtype::A,
        ttl: 300,
        rdata: vec![192, 0, 2, last].into(),
    }
}

fn submit(
    writer: &crate::update::WriterQueue,
    make: impl FnOnce(mpsc::Sender<Result<u32, crate::update::WriterError>>) -> Work,
) -> Result<u32, crate::update::WriterError> {
    let (done, rx) = mpsc::channel();
    writer.send(make(done)).unwrap();
    rx.recv().unwrap()
}

fn history(writer: &crate::update::WriterQueue, since: u32) -> History {
    let (done, rx) = mpsc::channel();
    writer.send(Work::History { since, done }).unwrap();
    rx.recv().unwrap()
}

#[test]
fn transfers_in_apply_whole_or_not_at_all() {
    let dir = scratch("apply");
    std::fs::write(dir.join("t.zone"), zone_text(1, "www A 192.0.2.10\n")).unwrap();
    let text = format!(
        "journal-dir = \"journal\"\ncontrol = \"\"\n[[acl]]\nid = \"x\"\naction = [\"transfer\"]\n[[zone]]\nname = \"{ZONE}\"\nfile = \"t.zone\"\nacl = [\"x\"]\n"
    );
    let config = Config::merge(
        &ConfigFile::parse(&text).unwrap(),
        &dir,
        &Options::default(),
    )
    .unwrap();
    let publisher = Arc::new(Publisher::new(Arc::new(ArcSwap::from_pointee(
        ZoneSet::new(),
    ))));
    let loaded = Arc::new(build(&zone_text(1, "www A 192.0.2.10\n")));
    publisher.update(|set| {
        set.insert(loaded);
    });
    let updates = Updates::new(&config, Arc::default(), Arc::default()).unwrap();
    let spec = &config.zones[0];
    let options = config.zone_options(&spec.name);
    assert!(
        start_writer(&updates, &config, spec, &options, &publisher),
        "writer started"
    );
    let writer = updates
        .writers()
        .remove(&spec.name.to_lowercase())
        .expect("its queue");
    let served = || publisher.set.load().get(spec.name.as_ref()).unwrap();

    // Removing a record the zone does not have: refused, nothing changes.
    let bad = Changeset {
        soa_from: soa(1),
        soa_to: soa(2),
        removed: vec![a_record("nothere", 1)],
        added: vec![a_record("new", 2)],
    };
    let err = submit(&writer, |done| Work::Incremental {
        changes: vec![bad],
        done,
    });
    assert!(err.is_err(), "{err:?}");
    assert_eq!(served().serial(), 1);
    assert!(
        history(&writer, 1).changes.is_none_or(|c| c.is_empty()),
        "nothing journaled"
    );

    // Two good ones chaining: journaled and published.
    let good = vec![
        Changeset {
            soa_from: soa(1),
            soa_to: soa(2),
            removed: vec![a_record("www", 10)],
            added: vec![a_record("new", 2)],
        },
        Changeset {
            soa_from: soa(2),
            soa_to: soa(3),
            removed: vec![],
            added: vec![a_record("newer", 3)],
        },
    ];
    assert_eq!(
        submit(&writer, |done| Work::Incremental {
            changes: good,
            done
        })
        .map_err(|e| e.to_string()),
        Ok(3)
    );
    assert_eq!(served().serial(), 3);
    let h = history(&writer, 1);
    assert_eq!(
        h.changes.map(|c| c.len()),
        Some(2),
        "the IXFR history holds both"
    );

    // A chain that breaks in its second changeset: none of it is taken.
    let broken = vec![
        Changeset {
            soa_from: soa(3),
            soa_to: soa(4),
            removed: vec![],
            added: vec![a_record("x", 4)],
        },
        Changeset {
            soa_from: soa(4),
            soa_to: soa(5),
            removed: vec![a_record("never", 5)],
            added: vec![],
        },
    ];
    assert!(submit(&writer, |done| Work::Incremental {
        changes: broken,
        done
    })
    .is_err());
    assert_eq!(served().serial(), 3, "a half-applied chain is not served");

    // A whole new version: served, the history starts afresh.
    let fresh = Arc::new(build(&zone_text(100, "other A 192.0.2.99\n")));
    assert_eq!(
        submit(&writer, |done| Work::Replace { zone: fresh, done }).map_err(|e| e.to_string()),
        Ok(100)
    );
    assert_eq!(served().serial(), 100);
    assert!(
        history(&writer, 3).changes.is_none(),
        "no history from before the AXFR"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
