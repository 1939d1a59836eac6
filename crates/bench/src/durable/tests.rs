use super::*;
use std::net::TcpListener;

fn cfg(zones: &[&str]) -> DurableConfig {
    DurableConfig {
        server: SocketAddr::from(([127, 0, 0, 1], 0)),
        zones: zones.iter().map(|z| z.parse().expect("zone")).collect(),
        clients: 2,
        batch: 3,
        window: 1,
        duration: Duration::from_millis(200),
        timeout: Duration::from_secs(2),
        key: None,
        first: 500_000,
        digits: 6,
        end: None,
    }
}

#[test]
fn owners_are_enum_names() {
    let apex: Name = "0.2.1.2.1.e164.arpa.".parse().expect("apex");
    let o = owner_of(&apex, 6, 500_123).expect("fits");
    assert_eq!(o.to_string(), "3.2.1.0.0.5.0.2.1.2.1.e164.arpa.");
    assert_eq!(
        owner_of(&apex, 3, 7).map(|n| n.to_string()),
        Some("7.0.0.0.2.1.2.1.e164.arpa.".into())
    );
    assert!(owner_of(&apex, 6, 1_000_000).is_none(), "seven digits");
    assert!(owner_of(&apex, 0, 0).is_none());
}

#[test]
fn messages_cover_disjoint_numbers_per_zone() {
    // Two zones, batch 3: message m → zone m mod 2, numbers first + (m / 2) × 3 ...
    assert_eq!(message_span(2, 3, 500_000, 0), (0, 500_000));
    assert_eq!(message_span(2, 3, 500_000, 1), (1, 500_000));
    assert_eq!(message_span(2, 3, 500_000, 2), (0, 500_003));
    assert_eq!(message_span(2, 3, 500_000, 5), (1, 500_006));
    assert_eq!(message_span(1, 1, 7, 9), (0, 16));
    let c = cfg(&["0.1.e164.arpa.", "1.1.e164.arpa."]);
    let m = batch_message(&c, 0x1234, 3).expect("message");
    assert_eq!(&m[..2], &[0x12, 0x34]);
    assert_eq!(m[2] >> 3, 5, "opcode UPDATE");
    assert_eq!(u16::from_be_bytes([m[4], m[5]]), 1, "one zone");
    assert_eq!(u16::from_be_bytes([m[8], m[9]]), 3, "three records");
    let text = String::from_utf8_lossy(&m).into_owned();
    assert!(text.contains("sip:new500005@"), "last number of message 3");
    // The numbers run out: 10^6 - 999_998 = 2 left per zone, a batch of 3 does not fit.
    let mut tight = cfg(&["0.1.e164.arpa."]);
    tight.first = 999_998;
    assert!(batch_message(&tight, 0, 0).is_none());
    assert_eq!(tight.capacity(), 2);
    let mut capped = cfg(&["0.1.e164.arpa."]);
    capped.end = Some(500_005);
    assert!(batch_message(&capped, 0, 0).is_some(), "500000..500002");
    assert!(
        batch_message(&capped, 0, 1).is_none(),
        "500003..500005 passes the end"
    );
    assert_eq!(capped.capacity(), 5);
}

#[test]
fn settings_are_checked() {
    assert!(cfg(&["x."]).check().is_ok());
    let bad = |f: &dyn Fn(&mut DurableConfig)| {
        let mut c = cfg(&["x."]);
        f(&mut c);
        c.check().is_err()
    };
    assert!(bad(&|c| c.zones.clear()));
    assert!(bad(&|c| c.clients = 0));
    assert!(bad(&|c| c.clients = MAX_CLIENTS + 1));
    assert!(bad(&|c| c.batch = 0));
    assert!(bad(&|c| c.batch = MAX_BATCH + 1));
    assert!(bad(&|c| c.window = 0));
    assert!(bad(&|c| c.duration = Duration::ZERO));
    assert!(bad(&|c| c.digits = 16));
    assert!(bad(&|c| c.first = 1_000_000));
}

#[test]
fn rates_and_ratios() {
    let p = FsyncProbe {
        syncs: 9000,
        secs: 3.0,
    };
    assert!((p.per_sec() - 3000.0).abs() < 1e-9);
    assert!((p.mean_us() - 333.333).abs() < 0.01);
    assert_eq!(FsyncProbe::default().per_sec(), 0.0);
    assert_eq!(FsyncProbe::default().mean_us(), 0.0);
    assert_eq!(ratio(45_000.0, 3000.0), Some(15.0));
    assert_eq!(ratio(1.0, 0.0), None);
    let r = DurableResult {
        acked: 500,
        acked_rrs: 1500,
        secs: 2.0,
        ..DurableResult::default()
    };
    assert_eq!(r.updates_per_sec(), 250.0);
    assert_eq!(r.rrs_per_sec(), 750.0);
    let mut rcodes = [0; 16];
    rcodes[0] = 500;
    rcodes[5] = 2;
    let [counts, rate] = DurableResult {
        sent: 502,
        rcodes,
        ..r.clone()
    }
    .summary();
    assert!(
        counts.starts_with(
            "sent 502  acknowledged 500 (1500 records)  replies NOERROR 500, REFUSED 2"
        ),
        "{counts}"
    );
    assert!(
        rate.starts_with("durable updates: 250/s (750 records/s) in 2.00 s"),
        "{rate}"
    );
    assert_eq!(
        r.fsync_line(&p),
        "durable updates/s ÷ fdatasync/s = 250 ÷ 3000 = 0.08"
    );
    assert_eq!(
        r.fsync_line(&FsyncProbe::default()),
        "no fdatasync rate measured"
    );
}

#[test]
fn fsync_probe_counts_and_cleans_up() {
    let dir = std::env::temp_dir().join(format!("lode-fsync-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let p = fsync_probe(&dir, Duration::from_millis(50)).expect("probe");
    assert!(p.syncs > 0 && p.secs >= 0.05, "{p}");
    assert_eq!(
        std::fs::read_dir(&dir).expect("dir").count(),
        0,
        "file removed"
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(fsync_probe(Path::new("/nonexistent/lode"), Duration::from_millis(5)).is_err());
}

/// An in-process TCP responder answering every message NOERROR (unsigned): without
/// a key every update is acknowledged; with one, every reply fails its TSIG check.
#[test]
fn closed_loop_against_a_local_responder() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let stop = AtomicBool::new(false);
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut conn = conn;
                let mut len = [0u8; 2];
                let mut buf = vec![0u8; 65535];
                while conn.read_exact(&mut len).is_ok() {
                    let l = usize::from(u16::from_be_bytes(len));
                    if conn.read_exact(&mut buf[..l]).is_err() || l < 12 {
                        return;
                    }
                    let mut reply = buf[..12].to_vec();
                    reply[2] |= 0x80;
                    reply[3] = 0;
                    reply[6..12].fill(0);
                    reply[4..6].fill(0);
                    let mut framed = (reply.len() as u16).to_be_bytes().to_vec();
                    framed.extend_from_slice(&reply);
                    if conn.write_all(&framed).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let mut c = cfg(&["0.1.e164.arpa.", "1.1.e164.arpa."]);
    c.server = addr;
    c.window = 2;
    let r = run(&c, &stop).expect("run");
    assert!(r.acked > 0, "{r:?}");
    assert_eq!(r.acked, r.sent, "{r:?}");
    assert_eq!(r.acked_rrs, 3 * r.acked);
    assert_eq!(r.conn_errors, 0, "{r:?}");
    assert!(r.latency_us[0] <= r.latency_us[3]);

    c.key = Some(lode_tsig::Key::parse_spec("k.:c2VjcmV0").expect("key"));
    c.duration = Duration::from_millis(50);
    let r = run(&c, &stop).expect("run");
    assert_eq!(r.acked, 0, "unsigned replies are not acknowledged");
    assert!(r.bad_tsig > 0 && r.bad_tsig == r.rcodes[0], "{r:?}");
}
